/// Why an RTCP compound packet cannot be read or written. Parsing never traps.
public enum RTCPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the header or length field at `offset` promises.
    case truncated(offset: Int)
    /// The version bits of the packet at `offset` are not 2.
    case unsupportedVersion(UInt8, offset: Int)
    /// The padding count of the packet at `offset` is 0 or larger than its body.
    case invalidPadding(offset: Int)
    /// A known packet type whose body does not fit its count or format.
    case malformed(packetType: UInt8, offset: Int)
    /// A value too large for its field when writing (count above 31, SDES item above 255 bytes...).
    case unencodable(String)

    public var description: String {
        switch self {
        case .truncated(let offset): "RTCP truncated at byte \(offset)"
        case .unsupportedVersion(let version, let offset): "RTCP version \(version) at byte \(offset) (expected 2)"
        case .invalidPadding(let offset): "RTCP padding of the packet at byte \(offset) does not fit"
        case .malformed(let type, let offset): "malformed RTCP packet type \(type) at byte \(offset)"
        case .unencodable(let what): "cannot encode RTCP: \(what)"
        }
    }
}
