// The mixer's peak limiter: never above the ceiling, transparent below it, recovers.
import Foundation
@testable import Pipeline
import Testing

private func process(_ limiter: inout Limiter, _ left: [Float], _ right: [Float]) -> (peak: Float, left: [Float], right: [Float]) {
    var l = left, r = right
    let peak = l.withUnsafeMutableBufferPointer { lp in
        r.withUnsafeMutableBufferPointer { rp in limiter.process(left: lp.baseAddress!, right: rp.baseAddress!, count: lp.count) }
    }
    return (peak, l, r)
}

struct LimiterTests {
    @Test("quiet input passes unchanged")
    func transparent() {
        var limiter = Limiter()
        let signal = (0..<4800).map { Float(0.5 * sin(Double($0) * 0.05)) }
        let out = process(&limiter, signal, signal.map { -$0 })
        #expect(out.left == signal)
        #expect(out.right == signal.map { -$0 })
        #expect(abs(out.peak - (signal.map(abs).max() ?? 0)) < 1e-6)
    }

    @Test("loud input never exceeds the ceiling, on either channel")
    func ceiling() {
        var limiter = Limiter()
        let loud = (0..<4800).map { Float(3 * sin(Double($0) * 0.05)) }
        let out = process(&limiter, loud, loud.map { $0 * 0.5 })
        #expect(out.peak > 2.9)
        #expect((out.left + out.right).allSatisfy { abs($0) <= limiter.ceiling + 1e-6 })
        // Stereo image kept: both channels get the same gain.
        for i in 0..<out.left.count where abs(loud[i]) > 0.01 {
            #expect(abs(out.right[i] / out.left[i] - 0.5) < 1e-4)
        }
    }

    @Test("gain recovers to unity after a peak (about 50 ms)")
    func release() {
        var limiter = Limiter()
        _ = process(&limiter, [4], [0])
        #expect(limiter.gain < 0.3)
        let quiet = [Float](repeating: 0.1, count: 4800) // 100 ms at 48 kHz
        let out = process(&limiter, quiet, quiet)
        #expect(limiter.gain == 1)
        #expect(out.left.last == 0.1)
        #expect(zip(out.left, out.left.dropFirst()).allSatisfy { $0 <= $1 }, "smooth, monotonic release")
    }

    @Test("state carries across calls: a peak at the end of one tick limits the next")
    func acrossCalls() {
        var limiter = Limiter()
        _ = process(&limiter, [0, 0, 2], [0, 0, 0])
        let next = process(&limiter, [0.9], [0])
        #expect(next.left[0] < 0.9)
    }
}
