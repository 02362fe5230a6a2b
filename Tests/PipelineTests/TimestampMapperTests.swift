// TimestampMapper: source timestamps onto the stage clock, across jumps.
@testable import Pipeline
import Testing

struct TimestampMapperTests {
    let step: Int64 = 33_333

    @Test("steady timestamps map by the offset, no discontinuity")
    func monotonic() {
        var mapper = TimestampMapper(offset: 500_000)
        let mapped = (0..<100).map { mapper.map(Int64($0) * step, nominalStep: step) }
        #expect(mapped == (0..<100).map { 500_000 + Int64($0) * step })
        #expect(mapper.discontinuities == 0)
        #expect(zip(mapped, mapped.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test("a file starting at a non-zero timestamp with a negative offset")
    func negativeOffset() {
        var mapper = TimestampMapper(offset: -1_400_000)
        #expect(mapper.map(1_400_000, nominalStep: step) == 0)
        #expect(mapper.map(1_433_333, nominalStep: step) == step)
    }

    @Test("a jump backwards continues one step after the last timestamp")
    func backwardsJump() {
        var mapper = TimestampMapper(offset: 0)
        for i in 0..<60 { _ = mapper.map(Int64(i) * step, nominalStep: step) }
        let last = 59 * step
        // The source restarts at 0 (e.g. a concatenated file or a reconnect).
        #expect(mapper.map(0, nominalStep: step) == last + step)
        #expect(mapper.map(step, nominalStep: step) == last + 2 * step)
        #expect(mapper.discontinuities == 1)
    }

    @Test("small reordering backwards (< 0.5 s) is not a discontinuity")
    func smallBackwards() {
        var mapper = TimestampMapper(offset: 0)
        _ = mapper.map(1_000_000, nominalStep: step)
        #expect(mapper.map(900_000, nominalStep: step) == 900_000)
        #expect(mapper.discontinuities == 0)
    }

    @Test("a big forward jump is closed up; a gap within the limit is kept")
    func forwardJumps() {
        var mapper = TimestampMapper(offset: 0, maxForwardGap: 10_000_000)
        _ = mapper.map(0, nominalStep: step)
        // 5 s gap: real (the publisher sent nothing); kept.
        #expect(mapper.map(5_000_000, nominalStep: step) == 5_000_000)
        #expect(mapper.discontinuities == 0)
        // 1 hour jump: a broken timestamp; continue right after.
        #expect(mapper.map(3_605_000_000, nominalStep: step) == 5_000_000 + step)
        #expect(mapper.map(3_605_000_000 + step, nominalStep: step) == 5_000_000 + 2 * step)
        #expect(mapper.discontinuities == 1)
    }

    @Test("the output never runs backwards across several discontinuities")
    func manyJumps() {
        var mapper = TimestampMapper(offset: 0)
        var source: Int64 = 0
        var previous = Int64.min
        for i in 0..<300 {
            if i % 50 == 49 { source = i % 100 == 49 ? 0 : source + 60_000_000 } else { source += step }
            let stage = mapper.map(source, nominalStep: step)
            #expect(stage > previous, "step \(i): \(stage) after \(previous)")
            previous = stage
        }
        #expect(mapper.discontinuities == 6) // at i = 49, 99, ..., 299
    }
}
