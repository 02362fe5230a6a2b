// STUN messages (RFC 8489, formerly RFC 5389): a 20-byte header — type, length, magic
// cookie, 96-bit transaction ID — followed by attributes. Decoding never traps on hostile
// input; MESSAGE-INTEGRITY and FINGERPRINT are checked on the raw bytes, because both cover
// the exact bytes that came off the wire, not a re-encoding of them.

/// HMAC-SHA1(key, message), supplied by the owner (swift-crypto in the server, a small
/// implementation in the tests) so this module stays free of crypto.
public typealias HMACSHA1 = @Sendable (_ key: [UInt8], _ message: [UInt8]) -> [UInt8]

/// Constants and raw-byte checks.
public enum STUN {
    public static let magicCookie: UInt32 = 0x2112_A442
    public static let headerSize = 20
    /// FINGERPRINT is the CRC-32 XOR this ("STUN"), so it differs from CRCs of other protocols.
    static let fingerprintXOR: UInt32 = 0x5354_554E

    /// Result of checking MESSAGE-INTEGRITY or FINGERPRINT.
    public enum Check: Equatable, Sendable {
        case valid
        /// The attribute is not in the message.
        case absent
        /// Present but wrong, misplaced, or the message itself is malformed.
        case invalid
    }

    /// FINGERPRINT must be the last attribute and match the CRC-32 of everything before it.
    public static func checkFingerprint(_ bytes: [UInt8]) -> Check {
        guard let attributes = try? rawAttributes(bytes) else { return .invalid }
        guard let fingerprint = attributes.first(where: { $0.type == STUNAttributeType.fingerprint }) else { return .absent }
        guard fingerprint.value.count == 4, fingerprint.value.upperBound == bytes.count else { return .invalid }
        let expected = CRC32.checksum(bytes[..<fingerprint.headerOffset]) ^ fingerprintXOR
        return STUNBytes.uint32(bytes[...], at: fingerprint.value.lowerBound) == expected ? .valid : .invalid
    }

    /// Recomputes the HMAC over the message up to MESSAGE-INTEGRITY, with the header's length
    /// field set as if MESSAGE-INTEGRITY were the last attribute (RFC 8489 §14.5).
    public static func checkIntegrity(_ bytes: [UInt8], key: [UInt8], hmacSHA1: HMACSHA1) -> Check {
        guard let attributes = try? rawAttributes(bytes) else { return .invalid }
        guard let integrity = attributes.first(where: { $0.type == STUNAttributeType.messageIntegrity }) else { return .absent }
        guard integrity.value.count == 20 else { return .invalid }
        var covered = Array(bytes[..<integrity.headerOffset])
        let adjustedLength = UInt16(integrity.value.upperBound - headerSize)
        covered[2] = UInt8(adjustedLength >> 8)
        covered[3] = UInt8(adjustedLength & 0xFF)
        let mac = hmacSHA1(key, covered)
        guard mac.count == 20 else { return .invalid }
        // Compare every byte so the time taken says nothing about where they differ.
        var difference: UInt8 = 0
        for (index, byte) in bytes[integrity.value].enumerated() { difference |= byte ^ mac[index] }
        return difference == 0 ? .valid : .invalid
    }

    /// A cheap test before a full decode: header shape and magic cookie.
    public static func looksLikeSTUN(_ bytes: [UInt8]) -> Bool {
        (try? validateHeader(bytes)) != nil
    }

    /// Where one attribute sits in the message.
    struct RawAttribute {
        var type: UInt16
        /// Offset of the attribute's 4-byte header.
        var headerOffset: Int
        /// The value without padding.
        var value: Range<Int>
    }

    /// The message's declared attribute length, after the header checks.
    static func validateHeader(_ bytes: [UInt8]) throws(STUNError) -> Int {
        guard bytes.count >= headerSize else { throw .truncated(needed: headerSize, available: bytes.count) }
        guard bytes[0] & 0xC0 == 0 else { throw .notSTUN(firstByte: bytes[0]) }
        let length = Int(STUNBytes.uint16(bytes[...], at: 2))
        let cookie = STUNBytes.uint32(bytes[...], at: 4)
        guard cookie == magicCookie else { throw .badMagicCookie(cookie) }
        guard length % 4 == 0 else { throw .lengthNotMultipleOfFour(length) }
        guard bytes.count >= headerSize + length else { throw .truncated(needed: headerSize + length, available: bytes.count) }
        guard bytes.count == headerSize + length else { throw .trailingBytes(bytes.count - headerSize - length) }
        return length
    }

    static func rawAttributes(_ bytes: [UInt8]) throws(STUNError) -> [RawAttribute] {
        _ = try validateHeader(bytes)
        var attributes: [RawAttribute] = []
        var offset = headerSize
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { throw .truncated(needed: offset + 4, available: bytes.count) }
            let type = STUNBytes.uint16(bytes[...], at: offset)
            let length = Int(STUNBytes.uint16(bytes[...], at: offset + 2))
            let valueStart = offset + 4
            let paddedEnd = valueStart + (length + 3) / 4 * 4
            guard paddedEnd <= bytes.count else { throw .attributeOverrun(type: type) }
            attributes.append(RawAttribute(type: type, headerOffset: offset, value: valueStart..<valueStart + length))
            offset = paddedEnd
        }
        return attributes
    }
}

/// Method and class, packed into the 14 type bits as M11–M7 C1 M6–M4 C0 M3–M0.
public struct STUNMessageType: Hashable, Sendable, CustomStringConvertible {
    public enum Class: UInt16, Hashable, Sendable {
        case request = 0b00
        case indication = 0b01
        case successResponse = 0b10
        case errorResponse = 0b11
    }

    /// 12-bit method; ICE only uses Binding.
    public var method: UInt16
    public var messageClass: Class

    public static let bindingMethod: UInt16 = 0x001
    public static let bindingRequest = STUNMessageType(method: bindingMethod, messageClass: .request)
    public static let bindingSuccess = STUNMessageType(method: bindingMethod, messageClass: .successResponse)
    public static let bindingError = STUNMessageType(method: bindingMethod, messageClass: .errorResponse)
    public static let bindingIndication = STUNMessageType(method: bindingMethod, messageClass: .indication)

    public init(method: UInt16, messageClass: Class) {
        self.method = method & 0x0FFF
        self.messageClass = messageClass
    }

    public init(rawValue: UInt16) {
        method = (rawValue & 0x3E00) >> 2 | (rawValue & 0x00E0) >> 1 | (rawValue & 0x000F)
        // Both bits are extracted, so every value maps to a case.
        messageClass = Class(rawValue: (rawValue & 0x0100) >> 7 | (rawValue & 0x0010) >> 4)!
    }

    public var rawValue: UInt16 {
        (method & 0x0F80) << 2 | (method & 0x0070) << 1 | (method & 0x000F)
            | (messageClass.rawValue & 0b10) << 7 | (messageClass.rawValue & 0b01) << 4
    }

    public var description: String {
        let name = method == Self.bindingMethod ? "Binding" : "method 0x\(String(method, radix: 16))"
        return "\(name) \(messageClass)"
    }
}

/// The 96-bit transaction ID that pairs a response with its request.
public struct STUNTransactionID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Nil unless exactly 12 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 12 else { return nil }
        self.bytes = bytes
    }

    public static func random(using generator: inout some RandomNumberGenerator) -> STUNTransactionID {
        STUNTransactionID(bytes: (0..<12).map { _ in UInt8.random(in: .min ... .max, using: &generator) })!
    }

    public var description: String { bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined() }
}

/// The key and HMAC used to add MESSAGE-INTEGRITY when encoding. For ICE the key is the
/// UTF-8 of the password of the agent that answers (short-term credentials, RFC 8489 §9.1).
public struct STUNIntegrityKey: Sendable {
    public var key: [UInt8]
    public var hmacSHA1: HMACSHA1

    public init(key: [UInt8], hmacSHA1: @escaping HMACSHA1) {
        self.key = key
        self.hmacSHA1 = hmacSHA1
    }
}

/// One STUN message as a value.
public struct STUNMessage: Equatable, Sendable {
    public var type: STUNMessageType
    public var transactionID: STUNTransactionID
    /// In wire order. After decoding: attributes that follow MESSAGE-INTEGRITY (other than
    /// FINGERPRINT) and anything after FINGERPRINT are left out, as RFC 8489 §14.5 requires.
    public var attributes: [STUNAttribute]

    public init(type: STUNMessageType, transactionID: STUNTransactionID, attributes: [STUNAttribute] = []) {
        self.type = type
        self.transactionID = transactionID
        self.attributes = attributes
    }

    /// Decodes one message that fills the whole datagram.
    public static func decode(_ bytes: [UInt8]) throws(STUNError) -> STUNMessage {
        let raw = try STUN.rawAttributes(bytes)
        let type = STUNMessageType(rawValue: STUNBytes.uint16(bytes[...], at: 0))
        // validateHeader guaranteed 20 bytes, so the slice has 12.
        let transactionID = STUNTransactionID(bytes: Array(bytes[8..<20]))!
        var attributes: [STUNAttribute] = []
        var afterIntegrity = false
        for attribute in raw {
            if attribute.type == STUNAttributeType.fingerprint {
                attributes.append(try STUNAttribute.decode(type: attribute.type, value: bytes[attribute.value], transactionID: transactionID))
                break
            }
            if afterIntegrity { continue }
            attributes.append(try STUNAttribute.decode(type: attribute.type, value: bytes[attribute.value], transactionID: transactionID))
            if attribute.type == STUNAttributeType.messageIntegrity { afterIntegrity = true }
        }
        return STUNMessage(type: type, transactionID: transactionID, attributes: attributes)
    }

    /// Encodes the header and attributes, then appends MESSAGE-INTEGRITY (when `integrity` is
    /// given) and FINGERPRINT (when `fingerprint` is true), each computed over what precedes it.
    /// `padding` fills the gaps after odd-length values; RFC 8489 allows any byte and the
    /// RFC 5769 test vectors use spaces.
    public func encode(integrity: STUNIntegrityKey? = nil, fingerprint: Bool = false, padding: UInt8 = 0) -> [UInt8] {
        var bytes = STUNBytes.bigEndian(type.rawValue) + [0, 0] + STUNBytes.bigEndian(STUN.magicCookie) + transactionID.bytes
        func append(type: UInt16, value: [UInt8]) {
            bytes += STUNBytes.bigEndian(type) + STUNBytes.bigEndian(UInt16(truncatingIfNeeded: value.count)) + value
            while bytes.count % 4 != 0 { bytes.append(padding) }
        }
        func setLength(_ length: Int) {
            bytes[2] = UInt8(truncatingIfNeeded: length >> 8)
            bytes[3] = UInt8(truncatingIfNeeded: length)
        }
        for attribute in attributes {
            append(type: attribute.type, value: attribute.encodedValue(transactionID: transactionID))
        }
        if let integrity {
            setLength(bytes.count - STUN.headerSize + 24)
            append(type: STUNAttributeType.messageIntegrity, value: integrity.hmacSHA1(integrity.key, bytes))
        }
        if fingerprint {
            setLength(bytes.count - STUN.headerSize + 8)
            append(type: STUNAttributeType.fingerprint, value: STUNBytes.bigEndian(CRC32.checksum(bytes) ^ STUN.fingerprintXOR))
        }
        setLength(bytes.count - STUN.headerSize)
        return bytes
    }

    // MARK: Attribute look-ups (the first occurrence wins)

    public var username: String? {
        attributes.lazy.compactMap { if case .username(let name) = $0 { name } else { nil } }.first
    }

    public var priority: UInt32? {
        attributes.lazy.compactMap { if case .priority(let value) = $0 { value } else { nil } }.first
    }

    public var useCandidate: Bool { attributes.contains(.useCandidate) }

    public var iceControlling: UInt64? {
        attributes.lazy.compactMap { if case .iceControlling(let value) = $0 { value } else { nil } }.first
    }

    public var iceControlled: UInt64? {
        attributes.lazy.compactMap { if case .iceControlled(let value) = $0 { value } else { nil } }.first
    }

    public var errorCode: STUNErrorCode? {
        attributes.lazy.compactMap { if case .errorCode(let value) = $0 { value } else { nil } }.first
    }

    public var xorMappedAddress: TransportAddress? {
        attributes.lazy.compactMap { if case .xorMappedAddress(let value) = $0 { value } else { nil } }.first
    }

    public var messageIntegrity: [UInt8]? {
        attributes.lazy.compactMap { if case .messageIntegrity(let value) = $0 { value } else { nil } }.first
    }

    public var fingerprint: UInt32? {
        attributes.lazy.compactMap { if case .fingerprint(let value) = $0 { value } else { nil } }.first
    }

    /// Comprehension-required attributes this module does not decode; a server answers a
    /// request carrying any with 420 and lists them in UNKNOWN-ATTRIBUTES.
    public var unknownComprehensionRequired: [UInt16] {
        attributes.compactMap {
            if case .other(let type, _) = $0, STUNAttributeType.isComprehensionRequired(type) { type } else { nil }
        }
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
