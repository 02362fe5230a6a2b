/// Why an RTP packet (or an RTX packet inside it) cannot be used. Parsing never traps:
/// every malformed input ends here.
public enum RTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the field at `offset` needs.
    case truncated(offset: Int)
    /// The version bits are not 2.
    case unsupportedVersion(UInt8)
    /// The padding count is 0 or larger than what follows the header.
    case invalidPadding(count: Int)
    /// An RFC 8285 element runs past its extension block, or has an invalid id/length.
    case malformedHeaderExtension(offset: Int)
    /// An element cannot be written in the chosen form (id or length out of range).
    case unencodableHeaderExtension(id: UInt8, length: Int)
    /// More than 15 CSRCs.
    case tooManyCSRCs(Int)
    /// An RTX payload shorter than its 2-byte original sequence number.
    case truncatedRTXPayload

    public var description: String {
        switch self {
        case .truncated(let offset): "RTP packet truncated at byte \(offset)"
        case .unsupportedVersion(let version): "RTP version \(version) (expected 2)"
        case .invalidPadding(let count): "RTP padding count \(count) does not fit the packet"
        case .malformedHeaderExtension(let offset): "malformed RTP header extension at byte \(offset)"
        case .unencodableHeaderExtension(let id, let length): "header extension id \(id) with \(length) bytes cannot be encoded"
        case .tooManyCSRCs(let count): "\(count) CSRCs (at most 15)"
        case .truncatedRTXPayload: "RTX payload lacks its original sequence number"
        }
    }
}
