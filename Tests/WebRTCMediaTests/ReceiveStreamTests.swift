// Receiver statistics: RFC 3550 A.3 (expected, lost, fraction) and A.8 (jitter) on known sequences.
@testable import WebRTCMedia
import Testing

/// The next report block, which must exist.
func report(_ stream: inout RTPReceiveStream, now: Int64) throws -> RTCPReportBlock {
    let block = stream.makeReportBlock(now: now)
    return try #require(block)
}

struct ReceiveStreamTests {
    /// Packet i is sent every 20 ms (1800 ticks at 90 kHz); odd ones arrive 5 ms late.
    static func feed(_ stream: inout RTPReceiveStream, _ seqs: [Int], base: UInt16 = 0, timestampBase: UInt32 = 0) {
        for i in seqs {
            let arrival = Int64(i) * 20_000 + (i % 2 == 1 ? 5000 : 0)
            _ = stream.received(sequenceNumber: base &+ UInt16(i), timestamp: timestampBase &+ UInt32(i * 1800),
                                payloadBytes: 100, now: arrival)
        }
    }

    @Test("fraction lost and cumulative lost over two intervals, duplicates counted as RFC 3550 does")
    func lossAccounting() throws {
        var stream = RTPReceiveStream(ssrc: 0xABCD, clockRate: 90_000)
        Self.feed(&stream, [0, 1, 2, 4, 5, 6, 8, 9])
        #expect(stream.packetsExpected == 10)
        #expect(stream.packetsReceived == 8)
        let first = try report(&stream, now: 200_000)
        #expect(first.ssrc == 0xABCD)
        #expect(first.fractionLost == 51)  // 2/10 × 256, truncated
        #expect(first.cumulativeLost == 2)
        #expect(first.extendedHighestSequence == 9)

        Self.feed(&stream, Array(10...19) + [15])
        let second = try report(&stream, now: 400_000)
        #expect(second.fractionLost == 0)  // 11 received for 10 expected
        #expect(second.cumulativeLost == 1)
        #expect(stream.payloadBytesReceived == 19 * 100)

        // A retransmission of 3 fills a loss.
        _ = stream.received(sequenceNumber: 3, timestamp: 3 * 1800, payloadBytes: 100, now: 410_000, isRetransmission: true)
        let third = try report(&stream, now: 420_000)
        #expect(third.cumulativeLost == 0)
        #expect(third.fractionLost == 0)
        #expect(stream.retransmissionsReceived == 1)
    }

    @Test("interarrival jitter follows A.8 exactly, in timestamp units")
    func jitter() throws {
        var stream = RTPReceiveStream(ssrc: 1, clockRate: 90_000)
        Self.feed(&stream, [0, 1, 2, 4, 5, 6, 8, 9])
        // Integer A.8: J·16 += |D| − round(J·16 / 16), |D| = 450 ticks per 5 ms step.
        #expect(stream.jitter == 115)
        // The floating-point form of A.8 agrees within a tick.
        var reference = 0.0
        var last: (Double, Double)?
        for i in [0, 1, 2, 4, 5, 6, 8, 9] {
            let arrival = Double(i) * 0.020 + (i % 2 == 1 ? 0.005 : 0)
            let timestamp = Double(i * 1800)
            if let last { reference += (abs((arrival - last.0) * 90_000 - (timestamp - last.1)) - reference) / 16 }
            last = (arrival, timestamp)
        }
        #expect(abs(Double(stream.jitter) - reference) <= 1)
        #expect(try report(&stream, now: 0).jitter == 115)
    }

    @Test("perfectly paced packets have zero jitter; retransmissions and late packets do not add any")
    func zeroJitter() {
        var stream = RTPReceiveStream(ssrc: 1, clockRate: 48_000)
        for i in 0..<100 where i != 50 {
            _ = stream.received(sequenceNumber: UInt16(i), timestamp: UInt32(i * 960), payloadBytes: 60, now: Int64(i) * 20_000)
        }
        _ = stream.received(sequenceNumber: 50, timestamp: 50 * 960, payloadBytes: 60, now: 3_000_000, isRetransmission: true)
        _ = stream.received(sequenceNumber: 60, timestamp: 60 * 960, payloadBytes: 60, now: 3_100_000)  // duplicate, late
        #expect(stream.jitter == 0)
        #expect(stream.cumulativeLost == -1)
    }

    @Test("a timestamp jump of seconds is not taken as jitter")
    func timestampJump() {
        var stream = RTPReceiveStream(ssrc: 1, clockRate: 90_000)
        _ = stream.received(sequenceNumber: 1, timestamp: 0, payloadBytes: 1, now: 0)
        _ = stream.received(sequenceNumber: 2, timestamp: 90_000 * 60, payloadBytes: 1, now: 20_000)
        #expect(stream.jitter == 0)
    }

    @Test("extended highest sequence carries the cycle count across 65535 → 0")
    func cycles() throws {
        var stream = RTPReceiveStream(ssrc: 1, clockRate: 90_000)
        Self.feed(&stream, Array(0...11), base: 65530, timestampBase: UInt32.max - 5000)
        let block = try report(&stream, now: 0)
        #expect(block.extendedHighestSequence == 0x0001_0005)
        #expect(block.cumulativeLost == 0)
        // 11 steps of |D| = 450 across the timestamp wrap: no step is mistaken for a 2^32 jump.
        #expect(stream.jitter == 228)
        #expect(stream.packetsExpected == 12)
    }

    @Test("LSR and DLSR echo the last sender report")
    func lastSenderReport() throws {
        var stream = RTPReceiveStream(ssrc: 1, clockRate: 90_000)
        _ = stream.received(sequenceNumber: 1, timestamp: 0, payloadBytes: 1, now: 0)
        #expect(try report(&stream, now: 1).lastSenderReport == 0)
        stream.senderReportReceived(ntpTime: 0xE55C_1B00_8000_0000, now: 1_000_000)
        let block = try report(&stream, now: 1_500_000)
        #expect(block.lastSenderReport == 0x1B00_8000)
        #expect(block.delaySinceLastSenderReport == 32_768)  // 0.5 s in 1/65536 s
    }

    @Test("no report block before the first packet; a restart resets the statistics")
    func restart() throws {
        var stream = RTPReceiveStream(ssrc: 1, clockRate: 90_000)
        #expect(stream.makeReportBlock(now: 0) == nil)
        Self.feed(&stream, [0, 1, 2, 4])
        #expect(stream.received(sequenceNumber: 40_000, timestamp: 0, payloadBytes: 1, now: 100_000) == .rejected)
        #expect(stream.received(sequenceNumber: 40_001, timestamp: 1800, payloadBytes: 1, now: 120_000) == .restarted(extended: 65536 + 40_001))
        #expect(stream.restarts == 1)
        #expect(stream.packetsRejected == 1)
        #expect(stream.packetsExpected == 1)
        #expect(stream.cumulativeLost == 0)
        let block = try report(&stream, now: 130_000)
        #expect(block.extendedHighestSequence == UInt32(65536 + 40_001))
        #expect(block.fractionLost == 0)
    }

    @Test("a retransmission from far behind is placed, not taken as a jump")
    func farRetransmission() {
        var stream = RTPReceiveStream(ssrc: 1, clockRate: 90_000)
        for seq in 0..<3000 where seq != 10 {
            _ = stream.received(sequenceNumber: UInt16(seq), timestamp: 0, payloadBytes: 1, now: Int64(seq))
        }
        #expect(stream.received(sequenceNumber: 10, timestamp: 0, payloadBytes: 1, now: 5000, isRetransmission: true) == .late(extended: 10))
        #expect(stream.received(sequenceNumber: 11, timestamp: 0, payloadBytes: 1, now: 5001, isRetransmission: true) == .late(extended: 11))
        #expect(stream.restarts == 0)
        #expect(stream.cumulativeLost == -1)
    }
}
