// AudioRing: samples by absolute position; gaps read as silence, overlaps overwrite, the
// capacity is never exceeded, mixing adds with gain and forgets what it read.
@testable import Pipeline
import Testing

/// Writes `values` (left) and their negation (right) at `position`.
private func write(_ ring: AudioRing, _ values: [Float], at position: Int64, crossfade: Bool = false, uncountedSilence: Int64 = 0) {
    let right = values.map { -$0 }
    values.withUnsafeBufferPointer { l in
        right.withUnsafeBufferPointer { r in
            ring.write(left: l.baseAddress!, right: r.baseAddress!, count: values.count, at: position, crossfade: crossfade,
                       uncountedSilence: uncountedSilence)
        }
    }
}

/// Mixes [from, from+count) with `gain` into zeroed (or given) buffers; returns left and right.
private func mix(_ ring: AudioRing, from: Int64, count: Int, gain: Float = 1, into initial: Float = 0) -> (left: [Float], right: [Float]) {
    var left = [Float](repeating: initial, count: count)
    var right = [Float](repeating: initial, count: count)
    left.withUnsafeMutableBufferPointer { l in
        right.withUnsafeMutableBufferPointer { r in
            _ = ring.mix(from: from, count: count, gain: gain, intoLeft: l.baseAddress!, right: r.baseAddress!)
        }
    }
    return (left, right)
}

private func ramp(_ count: Int, from start: Float = 1) -> [Float] { (0..<count).map { start + Float($0) } }

struct AudioRingTests {
    @Test("what is written is read back at the same positions")
    func roundTrip() {
        let ring = AudioRing(capacity: 1000)
        write(ring, ramp(100), at: 500)
        let out = mix(ring, from: 500, count: 100)
        #expect(out.left == ramp(100))
        #expect(out.right == ramp(100).map { -$0 })
    }

    @Test("positions before the first write and in gaps read as silence")
    func gapsAreSilence() {
        let ring = AudioRing(capacity: 1000)
        write(ring, ramp(10), at: 50)
        write(ring, ramp(10, from: 100), at: 80)
        let out = mix(ring, from: 40, count: 60)
        #expect(out.left[0..<10].allSatisfy { $0 == 0 }, "before the first write")
        #expect(Array(out.left[10..<20]) == ramp(10))
        #expect(out.left[20..<40].allSatisfy { $0 == 0 }, "the gap 60..<80")
        #expect(Array(out.left[40..<50]) == ramp(10, from: 100))
        #expect(out.left[50..<60].allSatisfy { $0 == 0 }, "after the end")
    }

    @Test("a gap after stale data reads as silence, not as old samples from the ring")
    func gapOverwritesStaleSlots() {
        let ring = AudioRing(capacity: 100)
        write(ring, [Float](repeating: 7, count: 60), at: 0)
        _ = mix(ring, from: 0, count: 30)
        // Positions 60..<120 reuse slots 60..<100 and 0..<20, the last of which hold stale 7s.
        write(ring, [Float](repeating: 1, count: 10), at: 120)
        #expect(ring.start == 30 && ring.end == 130 && ring.overflowedSamples == 0)
        let out = mix(ring, from: 30, count: 100)
        #expect(out.left[0..<30].allSatisfy { $0 == 7 })
        #expect(out.left[30..<90].allSatisfy { $0 == 0 }, "gap 60..<120 must be silent")
        #expect(out.left[90..<100].allSatisfy { $0 == 1 })
    }

    @Test("silence filled into a gap is counted until a late write fills it (a packet out of order)")
    func silenceFilled() {
        let ring = AudioRing(capacity: 1000)
        write(ring, ramp(10), at: 0)
        write(ring, ramp(10), at: 20)
        #expect(ring.silenceFilledSamples == 10)
        write(ring, ramp(3), at: 12)
        #expect(ring.silenceFilledSamples == 7, "split: 10..<12 and 15..<20 are still silence")
        write(ring, ramp(2), at: 10)
        #expect(ring.silenceFilledSamples == 5)
        write(ring, ramp(10), at: 40)
        write(ring, ramp(20), at: 30)
        #expect(ring.silenceFilledSamples == 5, "the gap 30..<40 was filled, and the write went on over real samples")
        write(ring, ramp(5), at: 15)
        #expect(ring.silenceFilledSamples == 0, "the older part of the split silence is remembered too")
    }

    @Test("packets out of order two at a time (20 ms each, the second and fourth late): no silence is left counted")
    func silenceFilledOutOfOrder() {
        let ring = AudioRing(capacity: 48_000)
        let packet = 960
        // Arrival order 0, 2, 4, 1, 3, 5, 7, 6: two gaps open at once before either is filled.
        for index in [0, 2, 4, 1, 3, 5, 7, 6] {
            write(ring, ramp(packet), at: Int64(index * packet))
        }
        #expect(ring.silenceFilledSamples == 0)
        // A gap nothing fills stays counted.
        write(ring, ramp(packet), at: Int64(10 * packet))
        #expect(ring.silenceFilledSamples == Int64(2 * packet))
    }

    @Test("an overlapping write replaces the samples it covers")
    func overlap() {
        let ring = AudioRing(capacity: 1000)
        write(ring, [Float](repeating: 1, count: 20), at: 0)
        write(ring, [Float](repeating: 2, count: 10), at: 5)
        let out = mix(ring, from: 0, count: 20)
        #expect(out.left == [Float](repeating: 1, count: 5) + [Float](repeating: 2, count: 10) + [Float](repeating: 1, count: 5))
        #expect(ring.start == 20 && ring.end == 20, "mixing forgets what it read")
    }

    @Test("a step back with a crossfade blends from what the overlap held into the new samples, then goes on with them")
    func crossfadeStepBack() {
        let ring = AudioRing(capacity: 1000)
        write(ring, [Float](repeating: 1, count: 20), at: 0)
        // The timeline stepped back by 9 samples: the new write overlaps the last 9 held.
        write(ring, [Float](repeating: 11, count: 20), at: 11, crossfade: true)
        let out = mix(ring, from: 0, count: 31)
        #expect(Array(out.left[0..<11]) == [Float](repeating: 1, count: 11))
        // Across the overlap: 1 + 10 × k/10 for k = 1...9, strictly rising, never a jump to 11.
        #expect(Array(out.left[11..<20]) == (1...9).map { 1 + Float($0) })
        #expect(Array(out.left[20..<31]) == [Float](repeating: 11, count: 11))
        #expect(ring.silenceFilledSamples == 0)
    }

    @Test("silence opened on purpose (a delay the sound takes on) is not counted as sound missing; the rest of a gap is")
    func uncountedSilence() {
        let ring = AudioRing(capacity: 1000)
        write(ring, ramp(10), at: 0)
        write(ring, ramp(10), at: 25, uncountedSilence: 10)
        #expect(ring.silenceFilledSamples == 5)
        // A late write over the counted part takes it back; the uncounted part was never counted.
        write(ring, ramp(15), at: 10)
        #expect(ring.silenceFilledSamples == 0)
    }

    @Test("more than the capacity: the oldest samples are dropped and counted")
    func capacityOverflow() {
        let ring = AudioRing(capacity: 100)
        write(ring, ramp(150), at: 0)
        #expect(ring.overflowedSamples == 50)
        #expect(ring.start == 50 && ring.end == 150)
        let out = mix(ring, from: 0, count: 150)
        #expect(out.left[0..<50].allSatisfy { $0 == 0 }, "dropped samples read as silence")
        #expect(Array(out.left[50..<150]) == Array(ramp(150)[50..<150]))
    }

    @Test("a huge gap does not overflow or wrap")
    func hugeGap() {
        let ring = AudioRing(capacity: 100)
        write(ring, [Float](repeating: 3, count: 10), at: 0)
        write(ring, [Float](repeating: 4, count: 10), at: 1_000_000)
        #expect(ring.end == 1_000_010)
        #expect(ring.end - ring.start <= 100)
        let out = mix(ring, from: 999_990, count: 20)
        #expect(out.left[0..<10].allSatisfy { $0 == 0 })
        #expect(out.left[10..<20].allSatisfy { $0 == 4 })
    }

    @Test("mix adds into the output with the gain; gain 0 still discards")
    func mixAddsWithGain() {
        let ring = AudioRing(capacity: 100)
        write(ring, [Float](repeating: 0.5, count: 40), at: 0)
        let half = mix(ring, from: 0, count: 20, gain: 0.5, into: 0.25)
        #expect(half.left.allSatisfy { $0 == 0.5 }, "0.25 + 0.5 × 0.5")
        #expect(half.right.allSatisfy { $0 == 0 }, "0.25 - 0.5 × 0.5")
        let muted = mix(ring, from: 20, count: 20, gain: 0)
        #expect(muted.left.allSatisfy { $0 == 0 })
        #expect(ring.isEmpty, "muted samples are consumed too")
    }

    @Test("writes in the already-mixed past never reach later mixes; partly past keep the rest")
    func writesInThePast() {
        let ring = AudioRing(capacity: 100)
        write(ring, [Float](repeating: 1, count: 10), at: 0)
        _ = mix(ring, from: 0, count: 10)
        write(ring, [Float](repeating: 9, count: 5), at: 2)
        write(ring, [Float](repeating: 2, count: 10), at: 5)
        #expect(ring.end == 15)
        // Whatever the ring keeps of the past, the mix from 10 on holds only the new samples.
        #expect(mix(ring, from: 10, count: 10).left == [Float](repeating: 2, count: 5) + [Float](repeating: 0, count: 5))
    }

    @Test("discard(before:) past the end empties the ring; the next write starts fresh")
    func discard() {
        let ring = AudioRing(capacity: 100)
        write(ring, ramp(10), at: 0)
        ring.discard(before: 5)
        #expect(ring.start == 5 && ring.end == 10)
        ring.discard(before: 50)
        #expect(ring.isEmpty)
        write(ring, ramp(5), at: 60)
        #expect(mix(ring, from: 50, count: 15).left == [Float](repeating: 0, count: 10) + ramp(5))
    }

    @Test("a ring that starts small and grows reads exactly like one allocated in full", arguments: [1, 7, 64, 999])
    func growingRingMatchesFullRing(initialCapacity: Int) {
        var random = SplitMix64(seed: UInt64(initialCapacity))
        let full = AudioRing(capacity: 1000)
        let growing = AudioRing(capacity: 1000, initialCapacity: initialCapacity)
        #expect(growing.allocated == initialCapacity)
        var position: Int64 = -300
        for step in 0..<2000 {
            // Writes ahead, behind (overlap), after a gap, and now and then far more than fits.
            let count = random.next() % 20 == 0 ? Int(random.next() % 1500) + 1 : Int(random.next() % 120) + 1
            let at = position + Int64(random.next() % 200) - 60
            let values = (0..<count).map { Float(step * 7 + $0) }
            write(full, values, at: at)
            write(growing, values, at: at)
            #expect(growing.allocated <= growing.capacity)
            #expect((growing.start, growing.end, growing.overflowedSamples) == (full.start, full.end, full.overflowedSamples))
            if random.next() % 3 == 0 {
                let from = position - Int64(random.next() % 50)
                let length = Int(random.next() % 300) + 1
                let a = mix(full, from: from, count: length)
                let b = mix(growing, from: from, count: length)
                #expect(a.left == b.left && a.right == b.right, "step \(step)")
                position = from + Int64(length)
            }
        }
        #expect(growing.allocated > initialCapacity || initialCapacity == 999)
    }
}

/// A small seeded generator (the tests must not depend on the system's random source).
private struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
