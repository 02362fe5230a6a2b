// Sequence numbers (RFC 3550 A.1) and RTP timestamps to 64 bits.
@testable import WebRTCMedia
import TestSupport
import Testing

struct SequenceUnwrapperTests {
    @Test("in-order numbers across 65535 → 0 keep counting up")
    func wrap() {
        var unwrapper = SequenceUnwrapper()
        let input: [UInt16] = [65533, 65534, 65535, 0, 1, 2]
        #expect(input.map { unwrapper.unwrap($0) } == (65533...65538).map { .advanced(extended: Int64($0)) })
        #expect(unwrapper.highestExtended == 65538)
    }

    @Test("late packets across the wrap belong to the previous cycle")
    func lateAcrossWrap() {
        var unwrapper = SequenceUnwrapper()
        _ = unwrapper.unwrap(65534)
        #expect(unwrapper.unwrap(1) == .advanced(extended: 65537))
        #expect(unwrapper.unwrap(65535) == .late(extended: 65535))
        #expect(unwrapper.unwrap(0) == .late(extended: 65536))
        #expect(unwrapper.unwrap(1) == .late(extended: 65537))  // duplicate
        #expect(unwrapper.highestExtended == 65537)
    }

    @Test("a gap below MAX_DROPOUT is accepted; a larger jump needs a second packet, then restarts")
    func jumps() {
        var unwrapper = SequenceUnwrapper(maxDropout: 3000, maxMisorder: 100)
        _ = unwrapper.unwrap(100)
        #expect(unwrapper.unwrap(3099) == .advanced(extended: 3099))
        #expect(unwrapper.unwrap(40000) == .rejected)
        #expect(unwrapper.unwrap(3100) == .advanced(extended: 3100))  // the old stream goes on
        #expect(unwrapper.unwrap(50000) == .rejected)
        // The next packet confirms the jump: the sender restarted. One cycle on, so the
        // extended values never go backwards and stay congruent to the 16-bit numbers.
        #expect(unwrapper.unwrap(50001) == .restarted(extended: 65536 + 50001))
        #expect(unwrapper.unwrap(50002) == .advanced(extended: 65536 + 50002))
    }

    @Test("a restart to a smaller number still moves forward")
    func restartBackwards() {
        var unwrapper = SequenceUnwrapper(maxDropout: 3000, maxMisorder: 100)
        _ = unwrapper.unwrap(30000)
        #expect(unwrapper.unwrap(10) == .rejected)
        #expect(unwrapper.unwrap(11) == .restarted(extended: 65536 + 11))
        #expect(SequenceUpdate.restarted(extended: 65547).extended == 65547)
        #expect(SequenceUpdate.rejected.extended == nil)
    }

    @Test("MAX_MISORDER: within it a packet is late, beyond it a jump")
    func misorder() {
        var unwrapper = SequenceUnwrapper(maxDropout: 3000, maxMisorder: 100)
        _ = unwrapper.unwrap(1000)
        #expect(unwrapper.unwrap(900) == .late(extended: 900))
        #expect(unwrapper.unwrap(899) == .rejected)
        // The default follows mediasoup: 1500 back is still late.
        var lenient = SequenceUnwrapper()
        _ = lenient.unwrap(2000)
        #expect(lenient.unwrap(500) == .late(extended: 500))
    }

    @Test("probation: a new source needs MIN_SEQUENTIAL packets in a row")
    func probation() {
        var unwrapper = SequenceUnwrapper(minSequential: 2)
        #expect(unwrapper.unwrap(10) == .probation)
        #expect(unwrapper.unwrap(12) == .probation)  // not in sequence: starts over
        #expect(unwrapper.unwrap(13) == .advanced(extended: 13))
        #expect(unwrapper.unwrap(14) == .advanced(extended: 14))
    }

    @Test("nearest places retransmissions from far back without touching the state")
    func nearest() {
        var unwrapper = SequenceUnwrapper()
        #expect(unwrapper.nearest(5) == nil)
        _ = unwrapper.unwrap(65000)
        _ = unwrapper.unwrap(2000)  // 2536 ahead, wrapped
        #expect(unwrapper.nearest(64000) == 64000)  // 4000 back: beyond MAX_MISORDER, still placed
        #expect(unwrapper.highestExtended == Int64(65536 + 2000))
        #expect(unwrapper.unwrap(2001) == .advanced(extended: 65536 + 2001))
    }

    @Test("a seeded random walk with reordering unwraps every number exactly")
    func randomWalk() {
        var generator = SeededGenerator(seed: 42)
        var unwrapper = SequenceUnwrapper()
        var truth: Int64 = 60_000
        var window: [Int64] = []
        for _ in 0..<20_000 {
            truth += Int64.random(in: 1...5, using: &generator)
            window.append(truth)
            if window.count > 8 || Bool.random(using: &generator) {
                let index = Int.random(in: 0..<window.count, using: &generator)
                let value = window.remove(at: index)
                #expect(unwrapper.unwrap(UInt16(truncatingIfNeeded: value)).extended == value)
            }
        }
    }
}

struct TimestampUnwrapperTests {
    @Test("timestamps across 2^32 keep increasing")
    func wrap() {
        var unwrapper = TimestampUnwrapper()
        #expect(unwrapper.unwrap(4_294_964_296) == 4_294_964_296)
        #expect(unwrapper.unwrap(0) == 4_294_967_296)
        #expect(unwrapper.unwrap(3000) == 4_294_970_296)
        #expect(unwrapper.lastUnwrapped == 4_294_970_296)
    }

    @Test("an earlier timestamp across the wrap unwraps backwards")
    func backwards() {
        var unwrapper = TimestampUnwrapper()
        _ = unwrapper.unwrap(100)
        #expect(unwrapper.unwrap(4_294_967_000) == -296)
        #expect(unwrapper.peek(200) == 200)
        #expect(unwrapper.lastUnwrapped == -296)
    }

    @Test("many wraps at 90 kHz stay exact")
    func manyWraps() {
        var unwrapper = TimestampUnwrapper()
        var truth: Int64 = 4_000_000_000
        for _ in 0..<10_000 {
            truth += 1_500_000_000 / 7
            #expect(unwrapper.unwrap(UInt32(truncatingIfNeeded: truth)) == truth)
        }
        #expect(truth > 4 * Int64(UInt32.max))
    }
}
