// STUN against the RFC 5769 test vectors: decode, integrity, fingerprint, and exact re-encoding;
// then hostile input: every truncation, bad lengths, bad cookie.
import Testing
@testable import WebRTCSignal
import TestSupport

enum RFC5769 {
    static let password = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)
    static let transactionID = STUNTransactionID(bytes: bytes(hex: "b7e7a701 bc34d686 fa87dfae"))!

    /// §2.1 Sample Request.
    static let request = bytes(hex: """
        00 01 00 58 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 10 53 54 55 4e 20 74 65 73 74 20 63 6c 69 65 6e 74
        00 24 00 04 6e 00 01 ff
        80 29 00 08 93 2f f9 b1 51 26 3b 36
        00 06 00 09 65 76 74 6a 3a 68 36 76 59 20 20 20
        00 08 00 14 9a ea a7 0c bf d8 cb 56 78 1e f2 b5 b2 d3 f2 49 c1 b5 71 a2
        80 28 00 04 e5 7a 3b cf
        """)

    /// §2.2 Sample IPv4 Response: 192.0.2.1 port 32853.
    static let ipv4Response = bytes(hex: """
        01 01 00 3c 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20
        00 20 00 08 00 01 a1 47 e1 12 a6 43
        00 08 00 14 2b 91 f5 99 fd 9e 90 c3 8c 74 89 f9 2a f9 ba 53 f0 6b e7 d7
        80 28 00 04 c0 7d 4c 96
        """)

    /// §2.3 Sample IPv6 Response: 2001:db8:1234:5678:11:2233:4455:6677 port 32853.
    static let ipv6Response = bytes(hex: """
        01 01 00 48 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20
        00 20 00 14 00 02 a1 47 01 13 a9 fa a5 d3 f1 79 bc 25 f4 b5 be d2 b9 d9
        00 08 00 14 a3 82 95 4e 4b e6 7b f1 17 84 c9 7c 82 92 c2 75 bf e3 ed 41
        80 28 00 04 c8 fb 0b 4c
        """)

    /// §2.4 Sample Request with Long-Term Authentication (MD5 key; decode only here).
    static let longTermRequest = bytes(hex: """
        00 01 00 60 21 12 a4 42 78 ad 34 33 c6 ad 72 c0 29 da 41 2e
        00 06 00 12 e3 83 9e e3 83 88 e3 83 aa e3 83 83 e3 82 af e3 82 b9 00 00
        00 15 00 1c 66 2f 2f 34 39 39 6b 39 35 34 64 36 4f 4c 33 34 6f 4c 39 46 53 54 76 79 36 34 73 41
        00 14 00 0b 65 78 61 6d 70 6c 65 2e 6f 72 67 00
        00 08 00 14 f6 70 24 65 6d d6 4a 3e 02 b8 e0 71 2e 85 c9 a2 8c a8 96 66
        """)

    static var integrityKey: STUNIntegrityKey { STUNIntegrityKey(key: password, hmacSHA1: testHMACSHA1) }
}

struct STUNMessageTests {
    @Test("RFC 5769 sample request decodes with every attribute")
    func sampleRequestDecodes() throws {
        let message = try STUNMessage.decode(RFC5769.request)
        #expect(message.type == .bindingRequest)
        #expect(message.transactionID == RFC5769.transactionID)
        #expect(message.attributes == [
            .software("STUN test client"),
            .priority(0x6E00_01FF),
            .iceControlled(0x932F_F9B1_5126_3B36),
            .username("evtj:h6vY"),
            .messageIntegrity(bytes(hex: "9aeaa70c bfd8cb56 781ef2b5 b2d3f249 c1b571a2")),
            .fingerprint(0xE57A_3BCF),
        ])
        #expect(message.username == "evtj:h6vY")
        #expect(message.priority == 0x6E00_01FF)
        #expect(message.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(message.iceControlling == nil)
        #expect(!message.useCandidate)
        #expect(message.unknownComprehensionRequired.isEmpty)
    }

    @Test("RFC 5769 vectors: integrity verifies with the password, fingerprint verifies")
    func vectorsVerify() {
        for vector in [RFC5769.request, RFC5769.ipv4Response, RFC5769.ipv6Response] {
            #expect(STUN.checkIntegrity(vector, key: RFC5769.password, hmacSHA1: testHMACSHA1) == .valid)
            #expect(STUN.checkIntegrity(vector, key: Array("wrong".utf8), hmacSHA1: testHMACSHA1) == .invalid)
            #expect(STUN.checkFingerprint(vector) == .valid)
        }
    }

    @Test("RFC 5769 responses decode XOR-MAPPED-ADDRESS for IPv4 and IPv6")
    func responsesDecodeAddresses() throws {
        let v4 = try STUNMessage.decode(RFC5769.ipv4Response)
        #expect(v4.type == .bindingSuccess)
        #expect(v4.xorMappedAddress == .v4(192, 0, 2, 1, port: 32853))
        #expect(v4.attributes.first == .software("test vector"))

        let v6 = try STUNMessage.decode(RFC5769.ipv6Response)
        #expect(v6.xorMappedAddress == TransportAddress(ip: IPAddress("2001:db8:1234:5678:11:2233:4455:6677")!, port: 32853))
        #expect(v6.xorMappedAddress?.description == "[2001:db8:1234:5678:11:2233:4455:6677]:32853")
    }

    @Test("encoding reproduces the RFC 5769 vectors byte for byte (space padding, integrity, fingerprint)")
    func encodingIsExact() {
        let request = STUNMessage(type: .bindingRequest, transactionID: RFC5769.transactionID, attributes: [
            .software("STUN test client"), .priority(0x6E00_01FF), .iceControlled(0x932F_F9B1_5126_3B36), .username("evtj:h6vY"),
        ])
        #expect(hex(request.encode(integrity: RFC5769.integrityKey, fingerprint: true, padding: 0x20)) == hex(RFC5769.request))

        let v4 = STUNMessage(type: .bindingSuccess, transactionID: RFC5769.transactionID, attributes: [
            .software("test vector"), .xorMappedAddress(.v4(192, 0, 2, 1, port: 32853)),
        ])
        #expect(hex(v4.encode(integrity: RFC5769.integrityKey, fingerprint: true, padding: 0x20)) == hex(RFC5769.ipv4Response))

        let v6 = STUNMessage(type: .bindingSuccess, transactionID: RFC5769.transactionID, attributes: [
            .software("test vector"),
            .xorMappedAddress(TransportAddress(ip: IPAddress("2001:db8:1234:5678:11:2233:4455:6677")!, port: 32853)),
        ])
        #expect(hex(v6.encode(integrity: RFC5769.integrityKey, fingerprint: true, padding: 0x20)) == hex(RFC5769.ipv6Response))
    }

    @Test("RFC 5769 long-term request: UTF-8 username, REALM and NONCE kept as unknown comprehension-required")
    func longTermRequest() throws {
        let message = try STUNMessage.decode(RFC5769.longTermRequest)
        #expect(message.username == "\u{30DE}\u{30C8}\u{30EA}\u{30C3}\u{30AF}\u{30B9}")
        #expect(message.unknownComprehensionRequired == [STUNAttributeType.nonce, STUNAttributeType.realm])
        #expect(message.attributes.contains(.other(type: STUNAttributeType.realm, value: Array("example.org".utf8))))
        #expect(STUN.checkFingerprint(RFC5769.longTermRequest) == .absent)
    }

    @Test("decode then encode round-trips a message with zero padding")
    func roundTrip() throws {
        let original = STUNMessage(type: .bindingError, transactionID: RFC5769.transactionID, attributes: [
            .errorCode(STUNErrorCode(code: 420, reason: "Unknown Attribute")),
            .unknownAttributes([0x0015, 0x7777, 0x0014]),
            .useCandidate,
            .iceControlling(42),
            .mappedAddress(.v4(10, 0, 0, 1, port: 9)),
            .other(type: 0xC057, value: [0, 1, 0, 10]),
        ])
        let encoded = original.encode(integrity: RFC5769.integrityKey, fingerprint: true)
        let decoded = try STUNMessage.decode(encoded)
        #expect(Array(decoded.attributes.prefix(original.attributes.count)) == original.attributes)
        #expect(decoded.errorCode?.code == 420)
        #expect(STUN.checkIntegrity(encoded, key: RFC5769.password, hmacSHA1: testHMACSHA1) == .valid)
        #expect(STUN.checkFingerprint(encoded) == .valid)
    }

    @Test("looksLikeSTUN accepts the vectors and refuses RTP, DTLS and short datagrams")
    func looksLikeSTUN() {
        #expect(STUN.looksLikeSTUN(RFC5769.request))
        #expect(!STUN.looksLikeSTUN([0x80, 0x60] + [UInt8](repeating: 0, count: 30)))
        #expect(!STUN.looksLikeSTUN([22, 254, 253] + [UInt8](repeating: 0, count: 30)))
        #expect(!STUN.looksLikeSTUN(Array(RFC5769.request.prefix(19))))
    }

    @Test("random transaction IDs come from the injected generator")
    func randomTransactionID() {
        var first = SeededGenerator(seed: 1), second = SeededGenerator(seed: 1)
        let id = STUNTransactionID.random(using: &first)
        #expect(id == STUNTransactionID.random(using: &second))
        #expect(id.bytes.count == 12 && id.description.count == 24)
        #expect(id != STUNTransactionID.random(using: &first))
        #expect(STUNTransactionID(bytes: [1, 2, 3]) == nil)
    }

    @Test("the message type packs method and class as RFC 8489 §5 draws it")
    func messageTypeBits() {
        #expect(STUNMessageType.bindingRequest.rawValue == 0x0001)
        #expect(STUNMessageType.bindingIndication.rawValue == 0x0011)
        #expect(STUNMessageType.bindingSuccess.rawValue == 0x0101)
        #expect(STUNMessageType.bindingError.rawValue == 0x0111)
        #expect((UInt16(0)...0x3FFF).allSatisfy { STUNMessageType(rawValue: $0).rawValue == $0 })
    }

    @Test("attributes after MESSAGE-INTEGRITY are ignored, except FINGERPRINT")
    func attributesAfterIntegrity() throws {
        var bytes = STUNMessage(type: .bindingRequest, transactionID: RFC5769.transactionID, attributes: [.username("a:b")])
            .encode(integrity: RFC5769.integrityKey)
        // Append PRIORITY after MESSAGE-INTEGRITY by hand, fixing the length.
        bytes += [0x00, 0x24, 0x00, 0x04, 0, 0, 0, 1]
        bytes[3] = UInt8(bytes.count - 20)
        let message = try STUNMessage.decode(bytes)
        #expect(message.priority == nil)
        #expect(message.username == "a:b")
        // Integrity still verifies: it only covers what precedes it.
        #expect(STUN.checkIntegrity(bytes, key: RFC5769.password, hmacSHA1: testHMACSHA1) == .valid)
    }

    @Test("every truncation of the vectors throws instead of crashing")
    func truncations() {
        for vector in [RFC5769.request, RFC5769.ipv4Response, RFC5769.ipv6Response, RFC5769.longTermRequest] {
            for count in 0..<vector.count {
                let prefix = Array(vector.prefix(count))
                #expect(throws: STUNError.self) { try STUNMessage.decode(prefix) }
                #expect(STUN.checkFingerprint(prefix) == .invalid)
                #expect(STUN.checkIntegrity(prefix, key: RFC5769.password, hmacSHA1: testHMACSHA1) == .invalid)
            }
        }
    }

    @Test("truncating at every byte while keeping the header length consistent never crashes")
    func consistentTruncations() {
        // The length field is rewritten to match, so the attribute walker itself meets the cut.
        for count in stride(from: 20, to: RFC5769.request.count, by: 1) {
            var prefix = Array(RFC5769.request.prefix(count))
            prefix[2] = 0
            prefix[3] = UInt8(count - 20)
            _ = try? STUNMessage.decode(prefix)
            _ = STUN.checkFingerprint(prefix)
            _ = STUN.checkIntegrity(prefix, key: RFC5769.password, hmacSHA1: testHMACSHA1)
        }
    }

    @Test("bad header fields are named")
    func badHeaders() {
        var cookie = RFC5769.request
        cookie[4] = 0x21 ^ 0xFF
        #expect(throws: STUNError.badMagicCookie(0xDE12_A442)) { try STUNMessage.decode(cookie) }

        var notSTUN = RFC5769.request
        notSTUN[0] = 0x80
        #expect(throws: STUNError.notSTUN(firstByte: 0x80)) { try STUNMessage.decode(notSTUN) }

        var oddLength = RFC5769.request
        oddLength[3] = 0x57
        #expect(throws: STUNError.lengthNotMultipleOfFour(0x57)) { try STUNMessage.decode(oddLength) }

        var shortLength = RFC5769.request
        shortLength[3] = 0x54
        #expect(throws: STUNError.trailingBytes(4)) { try STUNMessage.decode(shortLength) }

        var longLength = RFC5769.request
        longLength[3] = 0x5C
        #expect(throws: STUNError.truncated(needed: 0x5C + 20, available: RFC5769.request.count)) { try STUNMessage.decode(longLength) }
    }

    @Test("an attribute length past the end, and malformed values, are errors")
    func badAttributes() {
        var overrun = RFC5769.ipv4Response
        overrun[22] = 0x00
        overrun[23] = 0x40  // SOFTWARE claims 64 bytes
        #expect(throws: STUNError.attributeOverrun(type: 0x8022)) { try STUNMessage.decode(overrun) }

        func message(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
            STUNMessage(type: .bindingRequest, transactionID: RFC5769.transactionID, attributes: [.other(type: type, value: value)]).encode()
        }
        let cases: [(UInt16, [UInt8])] = [
            (STUNAttributeType.priority, [1, 2, 3]),
            (STUNAttributeType.useCandidate, [1]),
            (STUNAttributeType.iceControlling, [1, 2, 3, 4]),
            (STUNAttributeType.messageIntegrity, [UInt8](repeating: 0, count: 19)),
            (STUNAttributeType.fingerprint, [1, 2]),
            (STUNAttributeType.xorMappedAddress, [0, 3, 0, 1, 1, 2, 3, 4]),
            (STUNAttributeType.xorMappedAddress, [0, 1, 0, 1, 1, 2, 3]),
            (STUNAttributeType.xorMappedAddress, [0, 2, 0, 1, 1, 2, 3, 4]),
            (STUNAttributeType.errorCode, [0, 0, 2, 0]),
            (STUNAttributeType.errorCode, [0, 0, 4, 100]),
            (STUNAttributeType.unknownAttributes, [0, 1, 0]),
            (STUNAttributeType.username, [0xFF, 0xFE]),
        ]
        for (type, value) in cases {
            #expect(throws: STUNError.self, "type 0x\(String(type, radix: 16))") { try STUNMessage.decode(message(type, value)) }
        }
    }

    @Test("FINGERPRINT that is wrong or not last is invalid; a missing one is absent")
    func fingerprintPlacement() {
        var corrupted = RFC5769.request
        corrupted[corrupted.count - 1] ^= 1
        #expect(STUN.checkFingerprint(corrupted) == .invalid)

        var notLast = STUNMessage(type: .bindingRequest, transactionID: RFC5769.transactionID).encode(fingerprint: true)
        notLast += [0x80, 0x22, 0x00, 0x00]
        notLast[3] = UInt8(notLast.count - 20)
        #expect(STUN.checkFingerprint(notLast) == .invalid)

        let none = STUNMessage(type: .bindingRequest, transactionID: RFC5769.transactionID).encode()
        #expect(STUN.checkFingerprint(none) == .absent)
        #expect(STUN.checkIntegrity(none, key: RFC5769.password, hmacSHA1: testHMACSHA1) == .absent)
    }

    @Test("a corrupted byte anywhere before MESSAGE-INTEGRITY fails the integrity check")
    func integrityCoversEveryByte() {
        for index in 0..<(RFC5769.request.count - 32) where index != 2 && index != 3 {
            var corrupted = RFC5769.request
            corrupted[index] ^= 0x01
            #expect(STUN.checkIntegrity(corrupted, key: RFC5769.password, hmacSHA1: testHMACSHA1) != .valid, "byte \(index)")
        }
    }
}

struct CryptoSupportTests {
    @Test("CRC-32 of \"123456789\" is the catalogue check value 0xCBF43926")
    func crcCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
    }

}
