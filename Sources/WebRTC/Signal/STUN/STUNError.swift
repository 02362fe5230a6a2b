/// Why bytes are not a well-formed STUN message. The ICE agent turns these into dropped
/// datagrams; nothing here is answered on the wire.
public enum STUNError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the 20-byte header, or than the header's length field promises.
    case truncated(needed: Int, available: Int)
    /// The two most significant bits are not zero (RFC 7983: some other protocol).
    case notSTUN(firstByte: UInt8)
    case badMagicCookie(UInt32)
    /// Attributes are padded to four bytes, so the length field always is a multiple of four.
    case lengthNotMultipleOfFour(Int)
    /// More bytes than the length field accounts for (a UDP datagram holds one message).
    case trailingBytes(Int)
    /// An attribute's value runs past the end of the message.
    case attributeOverrun(type: UInt16)
    case malformedAttribute(type: UInt16, reason: String)

    public var description: String {
        switch self {
        case .truncated(let needed, let available): return "truncated STUN message (\(available) of \(needed) bytes)"
        case .notSTUN(let byte): return "not a STUN message (first byte \(byte))"
        case .badMagicCookie(let cookie): return "bad STUN magic cookie 0x\(String(cookie, radix: 16))"
        case .lengthNotMultipleOfFour(let length): return "STUN length \(length) is not a multiple of 4"
        case .trailingBytes(let count): return "\(count) bytes after the STUN message"
        case .attributeOverrun(let type): return "STUN attribute 0x\(String(type, radix: 16)) runs past the message"
        case .malformedAttribute(let type, let reason): return "malformed STUN attribute 0x\(String(type, radix: 16)): \(reason)"
        }
    }
}
