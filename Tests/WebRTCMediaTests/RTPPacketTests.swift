// RTP packets: exact bytes both ways, RFC 8285 extensions, padding, typed errors.
@testable import WebRTCMedia
import TestSupport
import Testing

struct RTPPacketTests {
    @Test("a minimal packet parses field by field and serializes to the same bytes")
    func minimal() throws {
        let bytes = hex("80 e0 12 34  00 00 30 39  de ad be ef  01 02 03")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.marker)
        #expect(packet.payloadType == 96)
        #expect(packet.sequenceNumber == 0x1234)
        #expect(packet.timestamp == 12345)
        #expect(packet.ssrc == 0xDEAD_BEEF)
        #expect(packet.csrcs.isEmpty)
        #expect(packet.headerExtension == nil)
        #expect(packet.payload == [1, 2, 3])
        #expect(packet.paddingCount == 0)
        #expect(try packet.serialized() == bytes)
    }

    @Test("CSRCs are read in order")
    func csrcs() throws {
        let bytes = hex("82 6f 00 01  00 00 00 02  00 00 00 03  11 11 11 11  22 22 22 22  ff")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.csrcs == [0x1111_1111, 0x2222_2222])
        #expect(!packet.marker)
        #expect(packet.payloadType == 111)
        #expect(packet.payload == [0xFF])
        #expect(try packet.serialized() == bytes)
    }

    @Test("one-byte header extensions (0xBEDE): elements by id, padding skipped")
    func oneByteExtension() throws {
        // id 1, 1 byte (audio level); id 3, 2 bytes (transport-cc seq); 3 padding bytes.
        let bytes = hex("90 6f 00 01  00 00 00 02  00 00 00 03  be de 00 02  10 aa 31 01  02 00 00 00  fe")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.headerExtension == .oneByte([.init(id: 1, data: [0xAA]), .init(id: 3, data: [1, 2])]))
        #expect(packet.extensionElement(id: 1) == [0xAA])
        #expect(packet.extensionElement(id: 3) == [1, 2])
        #expect(packet.extensionElement(id: 2) == nil)
        #expect(packet.payload == [0xFE])
        #expect(try packet.serialized() == bytes)
    }

    @Test("one-byte form: id 15 stops processing, padding between elements is skipped")
    func oneByteReserved() throws {
        let bytes = hex("90 6f 00 01  00 00 00 02  00 00 00 03  be de 00 02  10 aa 00 00  f0 31 01 02")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.headerExtension?.elements == [.init(id: 1, data: [0xAA])])
        #expect(packet.payload.isEmpty)
    }

    @Test("two-byte header extensions (0x100X): empty elements and ids above 14")
    func twoByteExtension() throws {
        let bytes = hex("90 60 00 01  00 00 00 02  00 00 00 03  10 05 00 02  01 00 20 03  aa bb cc 00  99")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.headerExtension == .twoByte(appBits: 5, [.init(id: 1, data: []), .init(id: 32, data: [0xAA, 0xBB, 0xCC])]))
        #expect(packet.extensionElement(id: 32) == [0xAA, 0xBB, 0xCC])
        #expect(try packet.serialized() == bytes)
    }

    @Test("an unknown extension profile is kept opaque and round-trips")
    func opaqueExtension() throws {
        let bytes = hex("90 60 00 01  00 00 00 02  00 00 00 03  ab cd 00 01  01 02 03 04  99")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.headerExtension == .opaque(profile: 0xABCD, data: [1, 2, 3, 4]))
        #expect(packet.extensionElement(id: 1) == nil)
        #expect(try packet.serialized() == bytes)
    }

    @Test("fitting picks one-byte form when it can, two-byte otherwise")
    func fitting() {
        #expect(RTPHeaderExtension.fitting([.init(id: 14, data: Array(repeating: 1, count: 16))]) ==
            .oneByte([.init(id: 14, data: Array(repeating: 1, count: 16))]))
        #expect(RTPHeaderExtension.fitting([.init(id: 15, data: [1])]) == .twoByte(appBits: 0, [.init(id: 15, data: [1])]))
        #expect(RTPHeaderExtension.fitting([.init(id: 1, data: Array(repeating: 1, count: 17))]) ==
            .twoByte(appBits: 0, [.init(id: 1, data: Array(repeating: 1, count: 17))]))
        #expect(RTPHeaderExtension.fitting([.init(id: 1, data: [])]) == .twoByte(appBits: 0, [.init(id: 1, data: [])]))
    }

    @Test("padding is excluded from the payload and recreated on serialize")
    func padding() throws {
        let bytes = hex("a0 60 00 01  00 00 00 02  00 00 00 03  11 22  00 00 03")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.payload == [0x11, 0x22])
        #expect(packet.paddingCount == 3)
        #expect(try packet.serialized() == bytes)
    }

    @Test("a padding-only packet has an empty payload")
    func paddingOnly() throws {
        let packet = try RTPPacket(parsing: hex("a0 61 00 01  00 00 00 02  00 00 00 03") + [UInt8](repeating: 0, count: 223) + [224])
        #expect(packet.payload.isEmpty)
        #expect(packet.paddingCount == 224)
    }

    @Test("malformed packets throw typed errors")
    func errors() {
        #expect(throws: RTPError.truncated(offset: 0)) { try RTPPacket(parsing: hex("80 60 00 01 00 00 00 02 00 00 00")) }
        #expect(throws: RTPError.unsupportedVersion(1)) { try RTPPacket(parsing: hex("40 60 00 01 00 00 00 02 00 00 00 03")) }
        #expect(throws: RTPError.truncated(offset: 12)) { try RTPPacket(parsing: hex("81 60 00 01 00 00 00 02 00 00 00 03 00 00")) }
        // Extension length says 2 words; only 1 present.
        #expect(throws: RTPError.truncated(offset: 12)) {
            try RTPPacket(parsing: hex("90 60 00 01 00 00 00 02 00 00 00 03 be de 00 02 10 aa 00 00"))
        }
        // One-byte element of 4 bytes in a 4-byte block.
        #expect(throws: RTPError.malformedHeaderExtension(offset: 16)) {
            try RTPPacket(parsing: hex("90 60 00 01 00 00 00 02 00 00 00 03 be de 00 01 13 01 02 03"))
        }
        // Two-byte element with its length byte cut off.
        #expect(throws: RTPError.malformedHeaderExtension(offset: 19)) {
            try RTPPacket(parsing: hex("90 60 00 01 00 00 00 02 00 00 00 03 10 00 00 01 01 00 00 05"))
        }
        #expect(throws: RTPError.invalidPadding(count: 0)) { try RTPPacket(parsing: hex("a0 60 00 01 00 00 00 02 00 00 00 03 11 00")) }
        #expect(throws: RTPError.invalidPadding(count: 9)) { try RTPPacket(parsing: hex("a0 60 00 01 00 00 00 02 00 00 00 03 11 09")) }
    }

    @Test("values that do not fit the wire are refused on serialize")
    func unencodable() {
        var packet = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, payload: [])
        packet.csrcs = Array(repeating: 1, count: 16)
        #expect(throws: RTPError.tooManyCSRCs(16)) { try packet.serialized() }
        packet.csrcs = []
        packet.headerExtension = .oneByte([.init(id: 15, data: [1])])
        #expect(throws: RTPError.unencodableHeaderExtension(id: 15, length: 1)) { try packet.serialized() }
        packet.headerExtension = .twoByte(appBits: 0, [.init(id: 1, data: Array(repeating: 0, count: 256))])
        #expect(throws: RTPError.unencodableHeaderExtension(id: 1, length: 256)) { try packet.serialized() }
    }

    @Test("RTCP on a muxed port is told apart by its second byte")
    func muxDetection() {
        #expect(RTPPacket.looksLikeRTCP(hex("81 c9 00 01")))
        #expect(RTPPacket.looksLikeRTCP(hex("80 c8 00 06")))
        #expect(!RTPPacket.looksLikeRTCP(hex("80 60 00 01")))
        #expect(!RTPPacket.looksLikeRTCP(hex("80 e0 00 01")))  // PT 96 with marker
    }

    @Test("random packets round-trip through serialize and parse", arguments: 0..<4)
    func roundTrip(seed: UInt64) throws {
        var generator = SeededGenerator(seed: 0xA11CE + seed)
        for _ in 0..<250 {
            var elements: [RTPHeaderExtensionElement] = []
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                elements.append(.init(id: UInt8.random(in: 1...14, using: &generator),
                                      data: randomBytes(Int.random(in: 1...16, using: &generator), using: &generator)))
            }
            let packet = RTPPacket(
                marker: Bool.random(using: &generator), payloadType: UInt8.random(in: 0...127, using: &generator),
                sequenceNumber: .random(in: 0...UInt16.max, using: &generator), timestamp: .random(in: 0...UInt32.max, using: &generator),
                ssrc: .random(in: 0...UInt32.max, using: &generator),
                csrcs: (0..<Int.random(in: 0...15, using: &generator)).map { _ in .random(in: 0...UInt32.max, using: &generator) },
                headerExtension: elements.isEmpty ? nil : .fitting(elements),
                payload: randomBytes(Int.random(in: 0...300, using: &generator), using: &generator),
                paddingCount: Bool.random(using: &generator) ? Int.random(in: 1...255, using: &generator) : 0)
            #expect(try RTPPacket(parsing: packet.serialized()) == packet)
        }
    }
}
