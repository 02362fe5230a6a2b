// RFC 4588 RTX unwrapping.
@testable import WebRTCMedia
import TestSupport
import Testing

struct RTXTests {
    static let unwrapper = RTXUnwrapper(associations: RTXAssociations(payloadTypes: [97: 96, 99: 98], ssrcs: [0xBBBB: 0xAAAA]))

    @Test("an RTX packet becomes the original: OSN, media SSRC, associated payload type, same timestamp and marker")
    func unwrap() throws {
        // RTX seq 0x0100 on SSRC 0xBBBB, PT 97, OSN 0x1234, then the original payload.
        let bytes = hex("90 e1 01 00  00 01 e2 40  00 00 bb bb  be de 00 01  30 07 00 00  12 34  7c 85 aa bb")
        let result = try Self.unwrapper.unwrap(RTPPacket(parsing: bytes))
        let expected = RTPPacket(marker: true, payloadType: 96, sequenceNumber: 0x1234, timestamp: 123_456, ssrc: 0xAAAA,
                                 headerExtension: .oneByte([.init(id: 3, data: [7])]), payload: hex("7c 85 aa bb"))
        #expect(result == .retransmission(expected))
    }

    @Test("wrap then unwrap gives the original back, padding dropped")
    func roundTrip() throws {
        let original = RTPPacket(payloadType: 98, sequenceNumber: 65535, timestamp: 1, ssrc: 0xAAAA, payload: [1, 2, 3])
        var rtx = RTXUnwrapper.wrap(original, rtxSSRC: 0xBBBB, rtxPayloadType: 99, rtxSequenceNumber: 7)
        #expect(rtx.payload == [0xFF, 0xFF, 1, 2, 3])
        rtx.paddingCount = 4
        let parsed = try RTPPacket(parsing: rtx.serialized())
        #expect(try Self.unwrapper.unwrap(parsed) == .retransmission(original))
    }

    @Test("non-RTX packets pass through unchanged")
    func passThrough() throws {
        let media = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 0xAAAA, payload: [9])
        #expect(try Self.unwrapper.unwrap(media) == .media(media))
    }

    @Test("padding-only, truncated and unknown-SSRC RTX packets")
    func edgeCases() throws {
        let probe = try RTPPacket(parsing: hex("a0 61 00 05  00 00 00 01  00 00 bb bb") + [UInt8](repeating: 0, count: 254) + [0xFF])
        #expect(probe.payload.isEmpty)
        #expect(try Self.unwrapper.unwrap(probe) == .padding)
        let oneByte = RTPPacket(payloadType: 97, sequenceNumber: 1, timestamp: 1, ssrc: 0xBBBB, payload: [0x12])
        #expect(throws: RTPError.truncatedRTXPayload) { try Self.unwrapper.unwrap(oneByte) }
        let stranger = RTPPacket(payloadType: 97, sequenceNumber: 1, timestamp: 1, ssrc: 0xCCCC, payload: [0, 1, 2])
        #expect(try Self.unwrapper.unwrap(stranger) == .unknownSSRC(0xCCCC))
        // Only the OSN: a retransmission of an empty packet.
        let empty = RTPPacket(payloadType: 97, sequenceNumber: 1, timestamp: 1, ssrc: 0xBBBB, payload: [0, 9])
        #expect(try Self.unwrapper.unwrap(empty) == .retransmission(RTPPacket(payloadType: 96, sequenceNumber: 9, timestamp: 1, ssrc: 0xAAAA, payload: [])))
    }
}
