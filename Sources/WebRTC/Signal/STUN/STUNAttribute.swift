// STUN attributes (RFC 8489 §14, RFC 8445 §16.1): a 16-bit type, a 16-bit length and a
// value padded to four bytes. Types below 0x8000 are comprehension-required: a server that
// does not understand one must refuse the request (420), so unknown ones are kept, not dropped.

/// One decoded attribute. Unknown types stay as `.other` with their raw value.
public enum STUNAttribute: Equatable, Sendable {
    case mappedAddress(TransportAddress)
    case xorMappedAddress(TransportAddress)
    case username(String)
    /// HMAC-SHA1 of the message up to this attribute (20 bytes).
    case messageIntegrity([UInt8])
    /// CRC-32 of the message up to this attribute, XOR 0x5354554E.
    case fingerprint(UInt32)
    case errorCode(STUNErrorCode)
    case unknownAttributes([UInt16])
    case software(String)
    /// ICE: the priority a peer-reflexive candidate learned from this check would get.
    case priority(UInt32)
    /// ICE: the controlling agent nominates this pair.
    case useCandidate
    /// ICE: the sender is controlled; the value is its tie-breaker.
    case iceControlled(UInt64)
    /// ICE: the sender is controlling; the value is its tie-breaker.
    case iceControlling(UInt64)
    case other(type: UInt16, value: [UInt8])

    public var type: UInt16 {
        switch self {
        case .mappedAddress: return STUNAttributeType.mappedAddress
        case .xorMappedAddress: return STUNAttributeType.xorMappedAddress
        case .username: return STUNAttributeType.username
        case .messageIntegrity: return STUNAttributeType.messageIntegrity
        case .fingerprint: return STUNAttributeType.fingerprint
        case .errorCode: return STUNAttributeType.errorCode
        case .unknownAttributes: return STUNAttributeType.unknownAttributes
        case .software: return STUNAttributeType.software
        case .priority: return STUNAttributeType.priority
        case .useCandidate: return STUNAttributeType.useCandidate
        case .iceControlled: return STUNAttributeType.iceControlled
        case .iceControlling: return STUNAttributeType.iceControlling
        case .other(let type, _): return type
        }
    }
}

/// Attribute type codes (IANA "STUN Attributes").
public enum STUNAttributeType {
    public static let mappedAddress: UInt16 = 0x0001
    public static let username: UInt16 = 0x0006
    public static let messageIntegrity: UInt16 = 0x0008
    public static let errorCode: UInt16 = 0x0009
    public static let unknownAttributes: UInt16 = 0x000A
    public static let realm: UInt16 = 0x0014
    public static let nonce: UInt16 = 0x0015
    public static let xorMappedAddress: UInt16 = 0x0020
    public static let priority: UInt16 = 0x0024
    public static let useCandidate: UInt16 = 0x0025
    public static let software: UInt16 = 0x8022
    public static let fingerprint: UInt16 = 0x8028
    public static let iceControlled: UInt16 = 0x8029
    public static let iceControlling: UInt16 = 0x802A

    /// Comprehension-required types occupy 0x0000–0x7FFF.
    public static func isComprehensionRequired(_ type: UInt16) -> Bool { type < 0x8000 }
}

/// ERROR-CODE: a class (3–6) and number (0–99) read as one code, plus a reason phrase.
public struct STUNErrorCode: Equatable, Sendable, CustomStringConvertible {
    public var code: Int
    public var reason: String

    public init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }

    public static let badRequest = STUNErrorCode(code: 400, reason: "Bad Request")
    public static let unauthorized = STUNErrorCode(code: 401, reason: "Unauthorized")
    public static let unknownAttribute = STUNErrorCode(code: 420, reason: "Unknown Attribute")
    public static let roleConflict = STUNErrorCode(code: 487, reason: "Role Conflict")

    public var description: String { "\(code) \(reason)" }
}

// MARK: - Values on the wire

extension STUNAttribute {
    /// The attribute's value bytes, unpadded. `transactionID` is needed for the XOR of IPv6 addresses.
    func encodedValue(transactionID: STUNTransactionID) -> [UInt8] {
        switch self {
        case .mappedAddress(let address):
            return Self.encodeAddress(address, xorWith: nil)
        case .xorMappedAddress(let address):
            return Self.encodeAddress(address, xorWith: transactionID)
        case .username(let text), .software(let text):
            return Array(text.utf8)
        case .messageIntegrity(let mac):
            return mac
        case .fingerprint(let value), .priority(let value):
            return STUNBytes.bigEndian(value)
        case .errorCode(let error):
            let code = max(300, min(699, error.code))
            return [0, 0, UInt8(code / 100), UInt8(code % 100)] + Array(error.reason.utf8)
        case .unknownAttributes(let types):
            return types.flatMap { STUNBytes.bigEndian($0) }
        case .useCandidate:
            return []
        case .iceControlled(let tieBreaker), .iceControlling(let tieBreaker):
            return STUNBytes.bigEndian(tieBreaker)
        case .other(_, let value):
            return value
        }
    }

    static func decode(type: UInt16, value: ArraySlice<UInt8>, transactionID: STUNTransactionID) throws(STUNError) -> STUNAttribute {
        func malformed(_ reason: String) -> STUNError { .malformedAttribute(type: type, reason: reason) }
        func exactly(_ count: Int) throws(STUNError) {
            guard value.count == count else { throw malformed("length \(value.count), expected \(count)") }
        }
        switch type {
        case STUNAttributeType.mappedAddress:
            return .mappedAddress(try decodeAddress(value, type: type, xorWith: nil))
        case STUNAttributeType.xorMappedAddress:
            return .xorMappedAddress(try decodeAddress(value, type: type, xorWith: transactionID))
        case STUNAttributeType.username:
            // Usernames are compared byte for byte with our ufrags; bytes that are not UTF-8 never match.
            guard let text = String(validating: value, as: UTF8.self) else { throw malformed("USERNAME is not UTF-8") }
            return .username(text)
        case STUNAttributeType.messageIntegrity:
            try exactly(20)
            return .messageIntegrity(Array(value))
        case STUNAttributeType.fingerprint:
            try exactly(4)
            return .fingerprint(STUNBytes.uint32(value, at: value.startIndex))
        case STUNAttributeType.errorCode:
            guard value.count >= 4 else { throw malformed("shorter than 4 bytes") }
            let errorClass = Int(value[value.startIndex + 2] & 0x07)
            let number = Int(value[value.startIndex + 3])
            guard (3...6).contains(errorClass), number < 100 else { throw malformed("code \(errorClass)\(number)") }
            let reason = String(decoding: value.dropFirst(4), as: UTF8.self)
            return .errorCode(STUNErrorCode(code: errorClass * 100 + number, reason: reason))
        case STUNAttributeType.unknownAttributes:
            guard value.count % 2 == 0 else { throw malformed("odd length") }
            return .unknownAttributes(stride(from: value.startIndex, to: value.endIndex, by: 2).map { STUNBytes.uint16(value, at: $0) })
        case STUNAttributeType.software:
            return .software(String(decoding: value, as: UTF8.self))
        case STUNAttributeType.priority:
            try exactly(4)
            return .priority(STUNBytes.uint32(value, at: value.startIndex))
        case STUNAttributeType.useCandidate:
            try exactly(0)
            return .useCandidate
        case STUNAttributeType.iceControlled:
            try exactly(8)
            return .iceControlled(STUNBytes.uint64(value, at: value.startIndex))
        case STUNAttributeType.iceControlling:
            try exactly(8)
            return .iceControlling(STUNBytes.uint64(value, at: value.startIndex))
        default:
            return .other(type: type, value: Array(value))
        }
    }

    /// Family byte, port, address; for XOR-MAPPED-ADDRESS the port is XORed with the cookie's
    /// top half and the address with the cookie (plus the transaction ID for IPv6), so NATs
    /// that rewrite addresses they see in payloads leave it alone.
    private static func encodeAddress(_ address: TransportAddress, xorWith transactionID: STUNTransactionID?) -> [UInt8] {
        let family: UInt8 = address.ip.family == .ipv4 ? 0x01 : 0x02
        var port = address.port
        var ip = address.ip.bytes
        if let transactionID {
            port ^= UInt16(STUN.magicCookie >> 16)
            let mask = STUNBytes.bigEndian(STUN.magicCookie) + transactionID.bytes
            for index in ip.indices { ip[index] ^= mask[index] }
        }
        return [0, family] + STUNBytes.bigEndian(port) + ip
    }

    private static func decodeAddress(_ value: ArraySlice<UInt8>, type: UInt16, xorWith transactionID: STUNTransactionID?) throws(STUNError) -> TransportAddress {
        guard value.count >= 4 else { throw .malformedAttribute(type: type, reason: "shorter than 4 bytes") }
        let start = value.startIndex
        let length: Int
        switch value[start + 1] {
        case 0x01: length = 4
        case 0x02: length = 16
        case let family: throw .malformedAttribute(type: type, reason: "address family \(family)")
        }
        guard value.count == 4 + length else {
            throw .malformedAttribute(type: type, reason: "length \(value.count) for a \(length)-byte address")
        }
        var port = STUNBytes.uint16(value, at: start + 2)
        var ip = Array(value[(start + 4)...])
        if let transactionID {
            port ^= UInt16(STUN.magicCookie >> 16)
            let mask = STUNBytes.bigEndian(STUN.magicCookie) + transactionID.bytes
            for index in ip.indices { ip[index] ^= mask[index] }
        }
        // Length was checked to be 4 or 16 just above.
        return TransportAddress(ip: IPAddress(bytes: ip)!, port: port)
    }
}

/// Big-endian helpers for this module's STUN code (named so they cannot clash with the
/// RTP module's byte helpers when both live in one target).
enum STUNBytes {
    /// Reads at absolute `offset` (slice indices, as Swift keeps them).
    static func uint16(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    static func uint32(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt32 {
        (offset..<offset + 4).reduce(0) { $0 << 8 | UInt32(bytes[$1]) }
    }

    static func uint64(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt64 {
        (offset..<offset + 8).reduce(0) { $0 << 8 | UInt64(bytes[$1]) }
    }

    static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    static func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }

    static func bigEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }
}
