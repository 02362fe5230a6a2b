// Garbage in never traps: every parser over seeded random bytes, bit flips, and every
// truncation of valid packets; the state machines over random event streams keep their
// invariants. Deterministic: a failure names the seed and iteration that rebuild it.
@testable import WebRTCMedia
import TestSupport
import Testing

struct FuzzTests {
    static let rtpVectors: [[UInt8]] = [
        hex("80 e0 12 34  00 00 30 39  de ad be ef  01 02 03"),
        hex("90 6f 00 01  00 00 00 02  00 00 00 03  be de 00 02  10 aa 31 01  02 00 00 00  fe"),
        hex("90 60 00 01  00 00 00 02  00 00 00 03  10 05 00 02  01 00 20 03  aa bb cc 00  99"),
        hex("a2 60 00 01  00 00 00 02  00 00 00 03  00 00 00 04  00 00 00 05  11 22  00 00 03"),
    ]

    static let rtcpVectors: [[UInt8]] = [
        hex("81 c8 00 0c  11223344  e5 5c 1b 00 80 00 00 00  00 01 5f 90  00 00 00 64  00 00 27 10")
            + RTCPTests.blockBytes + hex("81 ca 00 04  11223344  01 09") + Array("user@host".utf8) + [0],
        hex("82 cb 00 04  00000001 00000002  05 62 79 65 21 21 00 00"),
        hex("81 cd 00 03  00000001  deadbeef  03 e8 80 01  81 ce 00 02  00000001  deadbeef"),
        hex("84 ce 00 04  00000001  00000000  deadbeef  07 00 00 00"),
        hex("8f ce 00 07  12345678  00000000  52 45 4d 42  03 07 fb 93  23456789 2345678a 2345678b"),
        hex("8f cd 00 05  00000001  12345678  0001 0001  000001 00  20 01 14 00  a0 cc 00 02  00000001  6e 61 00 02"),
    ]

    /// Parse; if it works, what it gives must survive its own serialize → parse.
    static func checkRTP(_ bytes: [UInt8]) {
        guard let packet = try? RTPPacket(parsing: bytes) else { return }
        #expect(packet.payload.count + packet.paddingCount <= bytes.count - 12)
        if let again = try? RTPPacket.init(parsing: packet.serialized()) { #expect(again == packet) }
        _ = try? RTXTests.unwrapper.unwrap(packet)
    }

    static func checkRTCP(_ bytes: [UInt8]) {
        guard let packets = try? RTCPPacket.parseCompound(bytes) else { return }
        if let serialized = try? RTCPPacket.serializeCompound(packets) {
            #expect((try? RTCPPacket.parseCompound(serialized)) == packets)
        }
    }

    @Test("every truncation and every single-bit flip of valid RTP and RTCP packets")
    func truncationsAndFlips() {
        for vector in Self.rtpVectors {
            for length in 0...vector.count { Self.checkRTP(Array(vector.prefix(length))) }
            for bit in 0..<(vector.count * 8) {
                var flipped = vector
                flipped[bit / 8] ^= 1 << (bit % 8)
                Self.checkRTP(flipped)
            }
        }
        for vector in Self.rtcpVectors {
            #expect((try? RTCPPacket.parseCompound(vector)) != nil)
            for length in 0..<vector.count {
                let prefix = Array(vector.prefix(length))
                Self.checkRTCP(prefix)
                // A prefix that cuts into a packet is refused, never half-read.
                if length % 4 != 0 { #expect((try? RTCPPacket.parseCompound(prefix)) == nil) }
            }
            for bit in 0..<(vector.count * 8) {
                var flipped = vector
                flipped[bit / 8] ^= 1 << (bit % 8)
                Self.checkRTCP(flipped)
            }
        }
    }

    @Test("random bytes through every parser", arguments: 0..<4)
    func randomBytes(shard: UInt64) {
        var generator = SeededGenerator(seed: 0xF0CC_0000 + shard)
        for _ in 0..<2500 {
            var bytes = WebRTCMediaTests.randomBytes(Int.random(in: 0...300, using: &generator), using: &generator)
            // Half the time look like version 2, so the parsers get past the first check.
            if !bytes.isEmpty, Bool.random(using: &generator) { bytes[0] = bytes[0] & 0x3F | 0x80 }
            Self.checkRTP(bytes)
            if bytes.count >= 4, Bool.random(using: &generator) {
                // A plausible length field too.
                let words = (bytes.count / 4) - 1
                bytes[1] = UInt8.random(in: 200...207, using: &generator)
                bytes[2] = UInt8(words >> 8)
                bytes[3] = UInt8(words & 0xFF)
            }
            Self.checkRTCP(bytes)
            _ = VP8PayloadDescriptor.parse(bytes)
        }
    }

    @Test("random payloads through the depacketizers: no trap, bounded frames", arguments: 0..<3)
    func depacketizers(shard: UInt64) {
        var generator = SeededGenerator(seed: 0xDE9A_0000 + shard)
        var h264 = H264Depacketizer(maxFrameSize: 4096)
        var vp8 = VP8Depacketizer(maxFrameSize: 4096)
        var opus = OpusDepacketizer()
        var sequence: Int64 = 0
        var timestamp: Int64 = 0
        var frameCount = 0
        for _ in 0..<3000 {
            sequence += Int64.random(in: 0...3, using: &generator)  // repeats, gaps
            if Int.random(in: 0..<4, using: &generator) == 0 { timestamp += 3000 }
            var payload = WebRTCMediaTests.randomBytes(Int.random(in: 0...400, using: &generator), using: &generator)
            // Steer the NAL type toward the interesting ones.
            if !payload.isEmpty, Bool.random(using: &generator) {
                payload[0] = payload[0] & 0xE0 | [1, 5, 7, 8, 24, 28, 25, 29][Int.random(in: 0..<8, using: &generator)]
            }
            let marker = Int.random(in: 0..<5, using: &generator) == 0
            for frame in frames(h264.push(payload: payload, sequence: sequence, timestamp: timestamp, marker: marker)
                                + vp8.push(payload: payload, sequence: sequence, timestamp: timestamp, marker: marker)
                                + opus.push(payload: payload, sequence: sequence, timestamp: timestamp)) {
                frameCount += 1
                #expect(frame.data.count <= 4096)
                #expect(frame.firstSequence <= frame.lastSequence)
            }
        }
        #expect(frameCount > 1000)
    }

    @Test("random arrivals into unwrapper, NACK generator and reorder buffer keep their invariants", arguments: 0..<3)
    func receivePipeline(shard: UInt64) {
        var generator = SeededGenerator(seed: 0x9E9E_0000 + shard)
        var stream = RTPReceiveStream(ssrc: 1, clockRate: 90_000)
        var nack = NackGenerator(configuration: .init(maxMissing: 200))
        var buffer = ReorderBuffer<Int>(configuration: .init(maxWait: 50_000, capacity: 300))
        var seq = UInt16.random(in: 0...UInt16.max, using: &generator)
        var now: Int64 = 0
        var lastReleased = Int64.min
        var accepted = 0
        for step in 0..<20_000 {
            now += Int64.random(in: 0...3000, using: &generator)
            switch Int.random(in: 0..<20, using: &generator) {
            case 0: seq &+= UInt16.random(in: 0...UInt16.max, using: &generator)  // wild jump
            case 1...3: seq &-= UInt16.random(in: 1...50, using: &generator)      // late
            default: seq &+= UInt16.random(in: 1...4, using: &generator)           // forward, small gaps
            }
            let update = stream.received(sequenceNumber: seq, timestamp: UInt32(truncatingIfNeeded: step * 1500), payloadBytes: 10,
                                         now: now, isRetransmission: Int.random(in: 0..<10, using: &generator) == 0)
            if case .restarted = update {
                nack.reset()
                buffer.reset()
                lastReleased = Int64.min
            }
            guard let extended = update.extended else { continue }
            #expect(Int64(UInt16(truncatingIfNeeded: extended)) == Int64(seq))
            _ = nack.received(seq: extended, now: now)
            _ = buffer.insert(step, sequence: extended, now: now)
            let output = nack.poll(now: now)
            for range in output.gaveUp { for lost in range where lost > range.upperBound - 300 { buffer.abandon(lost) } }
            for event in buffer.poll(now: now) {
                switch event {
                case .packet(let sequence, _):
                    #expect(sequence > lastReleased)
                    lastReleased = sequence
                case .lost(let range, _):
                    #expect(range.lowerBound > lastReleased)
                    lastReleased = range.upperBound
                }
            }
            #expect(nack.missingCount <= 200)
            #expect(buffer.heldCount <= 300)
            // After a poll nothing is left due.
            #expect((buffer.nextDeadline ?? Int64.max) > now)
            #expect((nack.nextDeadline ?? Int64.max) > now)
            accepted += 1
        }
        #expect(accepted > 10_000)
    }
}
