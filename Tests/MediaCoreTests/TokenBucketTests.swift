// TokenBucket: a burst, then one token per interval, never more than a full bucket, and a
// clock that steps back earns nothing. Checked against the definition over generated times.
import MediaCore
import Testing
import TestSupport

struct TokenBucketTests {
    @Test("a burst at once, then one per interval; a long pause refills no more than the burst")
    func burstThenRate() {
        var bucket = TokenBucket(rate: .init(burst: 3, interval: 1_000))
        let first = (0..<5).map { _ in bucket.take(at: 0) }
        #expect(first == [true, true, true, false, false])
        #expect(bucket.waitForToken == 1_000)
        let early = bucket.take(at: 999), due = bucket.take(at: 1_000), again = bucket.take(at: 1_500)
        #expect(!early && due && !again)
        let afterPause = (0..<5).map { _ in bucket.take(at: 1_000_000) }
        #expect(afterPause == [true, true, true, false, false])
        #expect(!bucket.isFull(at: 1_000_000) && bucket.isFull(at: 1_003_000))
    }

    @Test("a clock stepping back earns nothing, stepping forward again earns only once")
    func clockStepsBack() {
        var bucket = TokenBucket(rate: .init(burst: 1, interval: 1_000))
        let taken = [bucket.take(at: 10_000), bucket.take(at: 5_000), bucket.take(at: 10_500), bucket.take(at: 11_000)]
        #expect(taken == [true, false, false, true])
    }

    @Test("generated times: the same decisions as tokens counted by the definition")
    func againstTheDefinition() {
        for seed in UInt64(1)...300 {
            var generator = SeededGenerator(seed: seed)
            let rate = TokenBucket.Rate(burst: Int.random(in: 1...5, using: &generator), interval: Int64.random(in: 1...2_000, using: &generator))
            var bucket = TokenBucket(rate: rate)
            var tokens = Double(rate.burst), last: Int64 = 0, now: Int64 = 0
            for step in 0..<200 {
                now += Int64.random(in: 0...1_500, using: &generator)
                tokens = min(Double(rate.burst), tokens + Double(now - last) / Double(rate.interval))
                last = now
                let expected = tokens >= 1 - 1e-9
                if expected { tokens -= 1 }
                let got = bucket.take(at: now)
                #expect(got == expected, "seed \(seed), step \(step) at \(now)")
                if got != expected { return }
            }
        }
    }

    @Test("a rate whose full bucket overflows Int64 saturates")
    func saturates() {
        var bucket = TokenBucket(rate: .init(burst: Int.max, interval: .max))
        let taken = bucket.take(at: .max)
        #expect(bucket.rate.capacity == .max && taken)
    }
}
