// The reorder buffer: in-order release, bounded waits, abandonment, overflow.
@testable import WebRTCMedia
import TestSupport
import Testing

struct ReorderBufferTests {
    typealias Buffer = ReorderBuffer<Int64>

    static func released(_ events: [ReorderEvent<Int64>]) -> [Int64] {
        events.compactMap { if case .packet(let sequence, _) = $0 { sequence } else { nil } }
    }

    @Test("in-order packets come straight out")
    func inOrder() {
        var buffer = Buffer()
        for seq in Int64(10)..<15 {
            #expect(buffer.insert(seq, sequence: seq, now: seq * 1000) == .accepted)
            #expect(buffer.poll(now: seq * 1000) == [.packet(sequence: seq, seq)])
        }
        #expect(buffer.nextDeadline == nil)
        #expect(buffer.packetsReleased == 5)
    }

    @Test("a reordered packet releases the ones held behind it, in order")
    func reorder() {
        var buffer = Buffer()
        _ = buffer.insert(1, sequence: 1, now: 0)
        _ = buffer.poll(now: 0)
        _ = buffer.insert(3, sequence: 3, now: 1000)
        _ = buffer.insert(4, sequence: 4, now: 2000)
        #expect(buffer.poll(now: 2000).isEmpty)
        #expect(buffer.nextDeadline == Int64(1000 + 150_000))
        #expect(buffer.heldCount == 3)
        _ = buffer.insert(2, sequence: 2, now: 3000)
        #expect(Self.released(buffer.poll(now: 3000)) == [2, 3, 4])
        #expect(buffer.packetsLost == 0)
    }

    @Test("a gap is waited for maxWait from when it was seen, then reported lost")
    func timeout() {
        var buffer = Buffer(configuration: .init(maxWait: 100_000, capacity: 64))
        _ = buffer.insert(1, sequence: 1, now: 0)
        _ = buffer.poll(now: 0)
        _ = buffer.insert(4, sequence: 4, now: 10_000)  // 2, 3 missing since 10 ms
        _ = buffer.insert(6, sequence: 6, now: 50_000)  // 5 missing since 50 ms
        #expect(buffer.poll(now: 109_999).isEmpty)
        #expect(buffer.poll(now: 110_000) == [.lost(2...3, reason: .timedOut), .packet(sequence: 4, 4)])
        #expect(buffer.nextDeadline == 150_000)
        // A late arrival of 5 in time is released normally.
        _ = buffer.insert(5, sequence: 5, now: 120_000)
        #expect(Self.released(buffer.poll(now: 120_000)) == [5, 6])
        // And 3, now behind, is too late.
        #expect(buffer.insert(3, sequence: 3, now: 130_000) == .tooLate)
        #expect(buffer.packetsTooLate == 1)
        #expect(buffer.packetsLost == 2)
    }

    @Test("an abandoned number (NACK gave up) is skipped at once")
    func abandoned() {
        var buffer = Buffer()
        _ = buffer.insert(1, sequence: 1, now: 0)
        _ = buffer.insert(3, sequence: 3, now: 0)
        #expect(Self.released(buffer.poll(now: 0)) == [1])
        buffer.abandon(2)
        buffer.abandon(99)  // unknown: ignored
        #expect(buffer.nextDeadline == 0)
        #expect(buffer.poll(now: 1) == [.lost(2...2, reason: .abandoned), .packet(sequence: 3, 3)])
    }

    @Test("duplicates are counted and dropped")
    func duplicates() {
        var buffer = Buffer()
        _ = buffer.insert(1, sequence: 1, now: 0)
        _ = buffer.insert(3, sequence: 3, now: 0)
        #expect(buffer.insert(3, sequence: 3, now: 1) == .duplicate)
        #expect(buffer.insert(1, sequence: 1, now: 1) == .duplicate)
        #expect(buffer.duplicates == 2)
    }

    @Test("a packet beyond capacity releases or loses the oldest to make room")
    func overflow() {
        var buffer = Buffer(configuration: .init(maxWait: 1_000_000, capacity: 8))
        _ = buffer.insert(0, sequence: 0, now: 0)
        _ = buffer.poll(now: 0)
        _ = buffer.insert(2, sequence: 2, now: 0)
        _ = buffer.insert(3, sequence: 3, now: 0)
        _ = buffer.insert(9, sequence: 9, now: 0)   // span 1...9 = 9 > 8: 1 goes
        #expect(buffer.poll(now: 0) == [.lost(1...1, reason: .overflow), .packet(sequence: 2, 2), .packet(sequence: 3, 3)])
        _ = buffer.insert(30, sequence: 30, now: 0)  // everything before 23 goes
        #expect(buffer.poll(now: 0) == [.lost(4...8, reason: .overflow), .packet(sequence: 9, 9), .lost(10...22, reason: .overflow)])
        #expect(buffer.heldCount == 8)  // 23...30
        #expect(buffer.packetsLost == 1 + 5 + 13)
        // The rest times out as usual.
        #expect(buffer.poll(now: 1_000_000) == [.lost(23...29, reason: .timedOut), .packet(sequence: 30, 30)])
    }

    @Test("reset forgets everything; the next packet starts afresh")
    func reset() {
        var buffer = Buffer()
        _ = buffer.insert(5, sequence: 5, now: 0)
        _ = buffer.insert(7, sequence: 7, now: 0)
        buffer.reset()
        #expect(buffer.nextDeadline == nil)
        #expect(buffer.insert(100_000, sequence: 100_000, now: 1) == .accepted)
        #expect(buffer.poll(now: 1) == [.packet(sequence: 100_000, 100_000)])
    }

    @Test("negative extended numbers (late packets before a wrap) index correctly")
    func negative() {
        var buffer = Buffer(configuration: .init(maxWait: 10, capacity: 4))
        _ = buffer.insert(-2, sequence: -2, now: 0)
        _ = buffer.insert(0, sequence: 0, now: 0)
        _ = buffer.insert(-1, sequence: -1, now: 0)
        #expect(Self.released(buffer.poll(now: 0)) == [-2, -1, 0])
    }

    @Test("seeded network jitter below maxWait: every packet out once, in order, none lost", arguments: 0..<3)
    func shuffled(seed: UInt64) {
        var generator = SeededGenerator(seed: 1000 + seed)
        var buffer = Buffer(configuration: .init(maxWait: 50_000, capacity: 256))
        // Sent every 1 ms, each delayed 0...30 ms: up to 30 places out of order.
        let arrivals = (Int64(1)..<2000).map { (seq: $0, at: $0 * 1000 + Int64.random(in: 0...30_000, using: &generator)) }
            .sorted { ($0.at, $0.seq) < ($1.at, $1.seq) }
        _ = buffer.insert(0, sequence: 0, now: 0)
        var out = Self.released(buffer.poll(now: 0))
        var reordered = 0
        for (index, arrival) in arrivals.enumerated() {
            if arrival.seq != Int64(index + 1) { reordered += 1 }
            _ = buffer.insert(arrival.seq, sequence: arrival.seq, now: arrival.at)
            out += Self.released(buffer.poll(now: arrival.at))
        }
        let inOrder = out.elementsEqual(0..<2000)
        #expect(inOrder)
        #expect(out.count == 2000)
        #expect(buffer.packetsLost == 0)
        #expect(reordered > 1000)  // the simulation really reorders
    }

    @Test("a retransmission of a packet already released is a duplicate; one in a skipped gap is too late")
    func lateDuplicateOrTooLate() {
        var buffer = Buffer(configuration: .init(maxWait: 100_000, capacity: 64))
        _ = buffer.insert(1, sequence: 1, now: 0)
        _ = buffer.insert(3, sequence: 3, now: 0)
        _ = buffer.insert(2, sequence: 2, now: 5_000)
        #expect(Self.released(buffer.poll(now: 5_000)) == [1, 2, 3])
        #expect(buffer.insert(2, sequence: 2, now: 6_000) == .duplicate)  // asked for, came anyway
        _ = buffer.insert(6, sequence: 6, now: 10_000)
        #expect(buffer.poll(now: 110_000) == [.lost(4...5, reason: .timedOut), .packet(sequence: 6, 6)])
        #expect(buffer.insert(5, sequence: 5, now: 120_000) == .tooLate)
        #expect(buffer.packetsTooLate == 1)
        #expect(buffer.duplicates == 1)
    }

    /// Packets every 20 ms (Opus), each delayed by 0...`jitter` µs of seeded network jitter;
    /// returns the packets lost and the buffer's wait at the end.
    static func opusThroughJitter(seed: UInt64, jitter: Int64, seconds: Int64,
                                  configuration: ReorderBufferConfiguration) -> (lost: Int64, tooLate: Int64, wait: Int64, out: [Int64]) {
        var generator = SeededGenerator(seed: seed)
        var buffer = Buffer(configuration: configuration)
        let count = seconds * 50
        // The first packet starts the sequence (in a session, what came before it is not awaited).
        let arrivals = (Int64(0)..<count).map { (seq: $0, at: $0 == 0 ? 0 : $0 * 20_000 + Int64.random(in: 0...jitter, using: &generator)) }
            .sorted { ($0.at, $0.seq) < ($1.at, $1.seq) }
        var out: [Int64] = []
        var now: Int64 = 0
        for arrival in arrivals {
            // Timers in between, as the receiver's poll at the buffer's deadline.
            while let deadline = buffer.nextDeadline, deadline > now, deadline < arrival.at {
                now = deadline
                out += Self.released(buffer.poll(now: now))
            }
            now = arrival.at
            _ = buffer.insert(arrival.seq, sequence: arrival.seq, now: now)
            out += Self.released(buffer.poll(now: now))
        }
        out += Self.released(buffer.poll(now: now + configuration.maxWait))
        return (buffer.packetsLost, buffer.packetsTooLate, buffer.wait, out)
    }

    @Test("the audio wait follows the path's reordering: 0-100 ms of jitter loses nothing, where a 40 ms wait would",
          arguments: 0..<3)
    func adaptiveWait(seed: UInt64) {
        // Packets 20 ms apart, each delayed 0-100 ms: one comes up to 80 ms after the next.
        let adaptive = Self.opusThroughJitter(seed: 2000 + seed, jitter: 100_000, seconds: 120, configuration: .audio)
        #expect(adaptive.lost == 0, "seed \(2000 + seed)")
        let everyPacketInOrder = adaptive.out.elementsEqual(0..<6000)
        #expect(everyPacketInOrder, "seed \(2000 + seed): \(adaptive.out.count) packets out")
        // Learned from what it saw: up to 80 ms, plus a quarter.
        #expect(adaptive.wait > 70_000 && adaptive.wait <= 100_000, "seed \(2000 + seed): wait \(adaptive.wait)")
        // A fixed 40 ms wait, as before, drops some of the same packets.
        let fixed = Self.opusThroughJitter(seed: 2000 + seed, jitter: 100_000, seconds: 120,
                                           configuration: .init(maxWait: 40_000, capacity: 128))
        #expect(fixed.lost > 0 && fixed.tooLate > 0, "seed \(2000 + seed)")
    }

    @Test("a clean path's audio wait comes down to the minimum; reordering raises it at once, and it is forgotten after two windows")
    func adaptiveWaitFollows() {
        var buffer = Buffer(configuration: .audio)
        #expect(buffer.wait == 120_000)  // until a window has been seen
        var now: Int64 = 0
        var sequence: Int64 = 0
        func send(_ count: Int, reorderedBy delay: Int64? = nil) {
            for _ in 0..<count {
                if let delay {
                    // sequence + 1 first, then sequence `delay` later.
                    _ = buffer.insert(sequence + 1, sequence: sequence + 1, now: now)
                    _ = buffer.poll(now: now)
                    // The receiver polls at the gap's deadline.
                    if let deadline = buffer.nextDeadline, deadline < now + delay { _ = buffer.poll(now: deadline) }
                    _ = buffer.insert(sequence, sequence: sequence, now: now + delay)
                    _ = buffer.poll(now: now + delay)
                    sequence += 2
                    now += 40_000 + delay
                } else {
                    _ = buffer.insert(sequence, sequence: sequence, now: now)
                    _ = buffer.poll(now: now)
                    sequence += 1
                    now += 20_000
                }
            }
        }
        send(501)  // 10 s in order
        #expect(buffer.wait == 40_000)
        send(1, reorderedBy: 80_000)  // too late for 40 ms, and learned from
        #expect(buffer.packetsTooLate == 1)
        #expect(buffer.wait == 100_000)  // 80 ms + a quarter
        send(1, reorderedBy: 80_000)  // now in time
        #expect(buffer.packetsTooLate == 1)
        send(500)  // the next window: still remembered
        #expect(buffer.wait == 100_000)
        send(500)  // two windows without: forgotten
        #expect(buffer.wait == 40_000)
        send(1, reorderedBy: 200_000)  // beyond the maximum wait: lost, and the wait is the maximum
        #expect(buffer.packetsTooLate == 2)
        #expect(buffer.wait == 120_000)
    }

    @Test("a packet of a gap skipped long ago is too late, but teaches the wait nothing")
    func staleGapTeachesNothing() {
        var buffer = Buffer(configuration: .audio)
        var now: Int64 = 0
        _ = buffer.insert(0, sequence: 0, now: now)
        _ = buffer.insert(2, sequence: 2, now: now)  // 1 never comes in time
        _ = buffer.poll(now: 120_000)
        for sequence in Int64(3)..<1500 {  // 30 s in order
            now = sequence * 20_000
            _ = buffer.insert(sequence, sequence: sequence, now: now)
            _ = buffer.poll(now: now)
        }
        #expect(buffer.wait == 40_000)
        #expect(buffer.insert(1, sequence: 1, now: now) == .tooLate)  // a stray duplicate from the network
        #expect(buffer.wait == 40_000)
    }
}
