// RTCP packets: exact byte vectors built from RFC 3550/4585/5104 and the REMB draft,
// compounds, reduced-size, unknown types kept, typed errors.
@testable import WebRTCMedia
import TestSupport
import Testing

struct RTCPTests {
    static let block = RTCPReportBlock(ssrc: 0x0102_0304, fractionLost: 0x40, cumulativeLost: 5,
                                       extendedHighestSequence: 0x0001_0010, jitter: 0x20,
                                       lastSenderReport: 0xAABB_CCDD, delaySinceLastSenderReport: 0x0001_0000)
    static let blockBytes = hex("01020304 40 000005 00010010 00000020 aabbccdd 00010000")

    @Test("SR: NTP time, RTP timestamp, counts and a report block")
    func senderReport() throws {
        let bytes = hex("81 c8 00 0c  11223344  e5 5c 1b 00 80 00 00 00  00 01 5f 90  00 00 00 64  00 00 27 10") + Self.blockBytes
        let packets = try RTCPPacket.parseCompound(bytes)
        let expected = RTCPSenderReport(ssrc: 0x1122_3344, ntpTime: 0xE55C_1B00_8000_0000, rtpTimestamp: 90_000,
                                        packetCount: 100, octetCount: 10_000, reportBlocks: [Self.block])
        #expect(packets == [.senderReport(expected)])
        #expect(expected.compactNTP == 0x1B00_8000)
        #expect(try RTCPPacket.serializeCompound(packets) == bytes)
        #expect(packets[0].wireSize == bytes.count)
    }

    @Test("RR with two report blocks, a negative cumulative loss sign-extended")
    func receiverReport() throws {
        var second = Self.block
        second.ssrc = 0x0506_0708
        second.cumulativeLost = -2
        let bytes = hex("82 c9 00 0d  99999999") + Self.blockBytes + hex("05060708 40 fffffe 00010010 00000020 aabbccdd 00010000")
        let packets = try RTCPPacket.parseCompound(bytes)
        #expect(packets == [.receiverReport(RTCPReceiverReport(ssrc: 0x9999_9999, reportBlocks: [Self.block, second]))])
        #expect(try RTCPPacket.serializeCompound(packets) == bytes)
    }

    @Test("cumulative loss beyond 24 bits is clamped on the wire")
    func clampedLoss() throws {
        var block = Self.block
        block.cumulativeLost = 10_000_000
        let bytes = try RTCPPacket.receiverReport(RTCPReceiverReport(ssrc: 1, reportBlocks: [block])).serialized()
        #expect(Array(bytes[13..<16]) == [0x7F, 0xFF, 0xFF])
        block.cumulativeLost = -10_000_000
        let negative = try RTCPPacket.receiverReport(RTCPReceiverReport(ssrc: 1, reportBlocks: [block])).serialized()
        #expect(Array(negative[13..<16]) == [0x80, 0x00, 0x00])
    }

    @Test("SDES CNAME: item, null terminator, word padding")
    func sourceDescription() throws {
        // "user@host" is 9 bytes: 4 + 2 + 9 + 1 = 16, no extra padding.
        let bytes = hex("81 ca 00 04  11223344  01 09") + Array("user@host".utf8) + [0]
        let packets = try RTCPPacket.parseCompound(bytes)
        #expect(packets == [.sourceDescription(.cname(ssrc: 0x1122_3344, "user@host"))])
        guard case .sourceDescription(let sdes) = packets[0] else { Issue.record("not SDES"); return }
        #expect(sdes.chunks[0].cname == "user@host")
        #expect(try RTCPPacket.serializeCompound(packets) == bytes)

        // 16-character CNAME (as browsers send): 4 + 2 + 16 + 1 = 23, padded to 24.
        let long = hex("81 ca 00 06  11223344  01 10") + Array("abcdefghijklmnop".utf8) + [0, 0]
        #expect(try RTCPPacket.sourceDescription(.cname(ssrc: 0x1122_3344, "abcdefghijklmnop")).serialized() == long)
        #expect(try RTCPPacket.parseCompound(long) == [.sourceDescription(.cname(ssrc: 0x1122_3344, "abcdefghijklmnop"))])
    }

    @Test("SDES with two chunks and several items")
    func sdesChunks() throws {
        let description = RTCPSourceDescription(chunks: [
            .init(ssrc: 1, items: [.cname("a"), .init(type: 6, value: Array("tool".utf8))]),
            .init(ssrc: 2, items: [.cname("bb")]),
        ])
        let bytes = try RTCPPacket.sourceDescription(description).serialized()
        #expect(bytes.count % 4 == 0)
        #expect(try RTCPPacket.parseCompound(bytes) == [.sourceDescription(description)])
        #expect(RTCPPacket.sourceDescription(description).wireSize == bytes.count)
    }

    @Test("BYE with and without a reason")
    func goodbye() throws {
        let plain = hex("81 cb 00 01  11223344")
        #expect(try RTCPPacket.parseCompound(plain) == [.goodbye(RTCPGoodbye(ssrcs: [0x1122_3344]))])
        let withReason = hex("82 cb 00 04  00000001 00000002  05 62 79 65 21 21 00 00")
        let bye = RTCPGoodbye(ssrcs: [1, 2], reason: Array("bye!!".utf8))
        #expect(try RTCPPacket.parseCompound(withReason) == [.goodbye(bye)])
        #expect(try RTCPPacket.goodbye(bye).serialized() == withReason)
        #expect(RTCPPacket.goodbye(bye).wireSize == withReason.count)
    }

    @Test("generic NACK: PID and BLP, as in RFC 4585 §6.2.1")
    func genericNack() throws {
        // PID 1000 lost, plus 1001 (bit 0) and 1016 (bit 15).
        let bytes = hex("81 cd 00 03  00000001  deadbeef  03 e8 80 01")
        let packets = try RTCPPacket.parseCompound(bytes)
        let nack = RTCPGenericNack(senderSSRC: 1, mediaSSRC: 0xDEAD_BEEF, pairs: [.init(packetID: 1000, lostBitmask: 0x8001)])
        #expect(packets == [.genericNack(nack)])
        #expect(nack.sequenceNumbers == [1000, 1001, 1016])
        #expect(try RTCPPacket.serializeCompound(packets) == bytes)
        #expect(RTCPGenericNack(senderSSRC: 1, mediaSSRC: 0xDEAD_BEEF, lost: [1016, 1000, 1001]) == nack)
    }

    @Test("PLI and FIR")
    func keyframeRequests() throws {
        let pli = hex("81 ce 00 02  00000001  deadbeef")
        #expect(try RTCPPacket.parseCompound(pli) == [.pictureLossIndication(.init(senderSSRC: 1, mediaSSRC: 0xDEAD_BEEF))])
        #expect(try RTCPPacket.pictureLossIndication(.init(senderSSRC: 1, mediaSSRC: 0xDEAD_BEEF)).serialized() == pli)

        let fir = hex("84 ce 00 04  00000001  00000000  deadbeef  07 00 00 00")
        let request = RTCPFullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 0xDEAD_BEEF, sequenceNumber: 7)])
        #expect(try RTCPPacket.parseCompound(fir) == [.fullIntraRequest(request)])
        #expect(try RTCPPacket.fullIntraRequest(request).serialized() == fir)
    }

    @Test("REMB as libwebrtc writes it: 3 SSRCs, exponent 1, mantissa 0x3fb93")
    func rembVector() throws {
        let bytes = hex("8f ce 00 07  12345678  00000000  52 45 4d 42  03 07 fb 93  23456789 2345678a 2345678b")
        let remb = RTCPReceiverEstimatedMaxBitrate(senderSSRC: 0x1234_5678, bitrate: 0x3FB93 << 1,
                                                   ssrcs: [0x2345_6789, 0x2345_678A, 0x2345_678B])
        #expect(try RTCPPacket.parseCompound(bytes) == [.receiverEstimatedMaxBitrate(remb)])
        #expect(try RTCPPacket.receiverEstimatedMaxBitrate(remb).serialized() == bytes)
        #expect(remb.bitrate == 522_022)
    }

    @Test("REMB encoding: smallest exponent, mantissa truncated so the cap is never exceeded")
    func rembEncoding() throws {
        #expect(RTCPReceiverEstimatedMaxBitrate.encode(bitrate: 0) == (0, 0))
        #expect(RTCPReceiverEstimatedMaxBitrate.encode(bitrate: 262_143) == (0, 262_143))
        #expect(RTCPReceiverEstimatedMaxBitrate.encode(bitrate: 262_144) == (1, 131_072))
        // 8.5 Mbps: 8 500 000 >> 6 = 132 812 (.5 dropped) → 8 499 968.
        #expect(RTCPReceiverEstimatedMaxBitrate.encode(bitrate: 8_500_000) == (6, 132_812))
        let cap = RTCPReceiverEstimatedMaxBitrate(senderSSRC: 1, bitrate: 8_500_000, ssrcs: [2])
        #expect(cap.encodedBitrate == 8_499_968)
        let bytes = try RTCPPacket.receiverEstimatedMaxBitrate(cap).serialized()
        #expect(Array(bytes[16..<20]) == hex("01 1a 06 cc"))  // 1 SSRC, exp 6, mantissa 0x206cc
        #expect(try RTCPPacket.parseCompound(bytes) == [.receiverEstimatedMaxBitrate(.init(senderSSRC: 1, bitrate: 8_499_968, ssrcs: [2]))])
        // Every encoded value is ≤ the input and within one part in 2^17.
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2000 {
            let bitrate = UInt64.random(in: 0...(1 << 40), using: &generator)
            let encoded = RTCPReceiverEstimatedMaxBitrate(senderSSRC: 0, bitrate: bitrate, ssrcs: []).encodedBitrate
            #expect(encoded <= bitrate && bitrate - encoded <= bitrate >> 17)
        }
    }

    @Test("REMB with a huge exponent saturates instead of overflowing")
    func rembSaturates() throws {
        let bytes = hex("8f ce 00 05  00000001  00000000  52 45 4d 42  01 ff ff ff  00000002")
        guard case .receiverEstimatedMaxBitrate(let remb) = try RTCPPacket.parseCompound(bytes)[0] else {
            Issue.record("not REMB"); return
        }
        #expect(remb.bitrate == UInt64.max)
    }

    @Test("unknown types (transport-cc, APP, XR, other AFB) are kept byte for byte")
    func unknownKept() throws {
        let transportCC = hex("8f cd 00 05  00000001  12345678  0001 0001  000001 00  20 01 14 00")
        let app = hex("80 cc 00 02  00000001  6e 61 6d 65")
        let xr = hex("80 cf 00 04  00000001  04 00 00 02  e5 5c 1b 00 80 00 00 00")
        let otherAFB = hex("8f ce 00 03  00000001  00000000  47 4f 4f 47")
        let compound = transportCC + app + xr + otherAFB
        let packets = try RTCPPacket.parseCompound(compound)
        #expect(packets.count == 4)
        #expect(packets[0] == .unknown(.init(packetType: 205, count: 15, body: Array(transportCC[4...]))))
        #expect(packets[1] == .unknown(.init(packetType: 204, count: 0, body: Array(app[4...]))))
        #expect(packets[3] == .unknown(.init(packetType: 206, count: 15, body: Array(otherAFB[4...]))))
        #expect(try RTCPPacket.serializeCompound(packets) == compound)
    }

    @Test("padding on an unknown packet is removed and written back")
    func paddedUnknown() throws {
        let bytes = hex("a0 cc 00 02  00000001  6e 61 00 02")
        let packets = try RTCPPacket.parseCompound(bytes)
        #expect(packets == [.unknown(.init(packetType: 204, count: 0, body: hex("00000001 6e 61")))])
        #expect(try RTCPPacket.serializeCompound(packets) == bytes)
    }

    @Test("a browser compound: SR + SDES, then a reduced-size PLI alone")
    func compounds() throws {
        let sr = RTCPSenderReport(ssrc: 7, ntpTime: 1 << 32, rtpTimestamp: 3000, packetCount: 1, octetCount: 1000)
        let compound: [RTCPPacket] = [.senderReport(sr), .sourceDescription(.cname(ssrc: 7, "xyz"))]
        let bytes = try RTCPPacket.serializeCompound(compound)
        #expect(bytes.count == 28 + 16)
        #expect(try RTCPPacket.parseCompound(bytes) == compound)
        let reduced = try RTCPPacket.parseCompound(hex("81 ce 00 02  00000001  00000002"))
        #expect(reduced == [.pictureLossIndication(.init(senderSSRC: 1, mediaSSRC: 2))])
    }

    @Test("malformed compounds throw typed errors")
    func errors() {
        #expect(throws: RTCPError.truncated(offset: 0)) { try RTCPPacket.parseCompound([]) }
        #expect(throws: RTCPError.truncated(offset: 0)) { try RTCPPacket.parseCompound(hex("81 c9 00")) }
        #expect(throws: RTCPError.unsupportedVersion(1, offset: 0)) { try RTCPPacket.parseCompound(hex("41 c9 00 01 00 00 00 01")) }
        // Length field says 3 words after the header; 1 present.
        #expect(throws: RTCPError.truncated(offset: 8)) {
            try RTCPPacket.parseCompound(hex("80 c9 00 01 00 00 00 01  81 ce 00 03 00 00 00 01"))
        }
        // RR claims one block, carries none.
        #expect(throws: RTCPError.malformed(packetType: 201, offset: 0)) { try RTCPPacket.parseCompound(hex("81 c9 00 01 00 00 00 01")) }
        #expect(throws: RTCPError.invalidPadding(offset: 0)) { try RTCPPacket.parseCompound(hex("a0 c9 00 01 00 00 00 09")) }
        #expect(throws: RTCPError.invalidPadding(offset: 0)) { try RTCPPacket.parseCompound(hex("a0 c9 00 01 00 00 00 00")) }
        // NACK whose FCI is not a multiple of 4.
        #expect(throws: RTCPError.malformed(packetType: 205, offset: 0)) {
            try RTCPPacket.parseCompound(hex("a1 cd 00 03  00000001 00000002  03 e8 00 02"))
        }
        #expect(throws: RTCPError.malformed(packetType: 206, offset: 0)) { try RTCPPacket.parseCompound(hex("81 ce 00 01 00 00 00 01")) }
    }

    @Test("values too large for their fields are refused on serialize")
    func unencodable() {
        let blocks = Array(repeating: Self.block, count: 32)
        #expect(throws: RTCPError.self) { try RTCPPacket.receiverReport(RTCPReceiverReport(ssrc: 1, reportBlocks: blocks)).serialized() }
        let longItem = RTCPSourceDescription(chunks: [.init(ssrc: 1, items: [.init(type: 1, value: Array(repeating: 0x61, count: 256))])])
        #expect(throws: RTCPError.self) { try RTCPPacket.sourceDescription(longItem).serialized() }
    }
}

struct NackPackerTests {
    @Test("consecutive numbers fill one pair; the 18th starts another")
    func runs() {
        #expect(NackPacker.pack(Array(100...116)) == [.init(packetID: 100, lostBitmask: 0xFFFF)])
        #expect(NackPacker.pack(Array(100...117)) == [.init(packetID: 100, lostBitmask: 0xFFFF), .init(packetID: 117, lostBitmask: 0)])
        #expect(NackPacker.pack([]) == [])
        #expect(NackPacker.pack([5]) == [.init(packetID: 5, lostBitmask: 0)])
    }

    @Test("scattered numbers: bit i means PID + i + 1")
    func scattered() {
        #expect(NackPacker.pack([10, 12, 26, 27, 60]) ==
            [.init(packetID: 10, lostBitmask: 0b10 | 1 << 15), .init(packetID: 27, lostBitmask: 0), .init(packetID: 60, lostBitmask: 0)])
    }

    @Test("a run across 65535 → 0 is one pair, whatever the input order")
    func wrap() {
        let pairs = NackPacker.pack([1, 65534, 0, 65535, 3])
        #expect(pairs == [.init(packetID: 65534, lostBitmask: 0b10111)])
        #expect(NackPacker.unpack(pairs) == [65534, 65535, 0, 1, 3])
    }

    @Test("pack then unpack gives back the set, in the fewest pairs", arguments: 0..<3)
    func roundTrip(seed: UInt64) {
        var generator = SeededGenerator(seed: 99 + seed)
        for _ in 0..<300 {
            let base = UInt16.random(in: 0...UInt16.max, using: &generator)
            let span = Int.random(in: 1...400, using: &generator)
            let seqs = (0..<Int.random(in: 1...60, using: &generator)).map { _ in base &+ UInt16(Int.random(in: 0..<span, using: &generator)) }
            let pairs = NackPacker.pack(seqs)
            #expect(Set(NackPacker.unpack(pairs)) == Set(seqs))
            // Greedy lower bound: sweep the sorted (unwrapped) offsets.
            let offsets = Set(seqs.map { Int($0 &- base) }).sorted()
            var minimal = 0, coveredUpTo = -1
            for offset in offsets where offset > coveredUpTo {
                minimal += 1
                coveredUpTo = offset + 16
            }
            #expect(pairs.count == minimal)
        }
    }
}
