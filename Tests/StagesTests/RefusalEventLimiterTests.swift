// RefusalEventLimiter: a flood of refused publishes makes a handful of events, per participant
// and per address; a real publisher's first refusals still show; the table stays bounded.
// Checked against a simple model of two token buckets over generated sequences.
import Stages
import Testing
import TestSupport

struct RefusalEventLimiterTests {
    @Test("400 refusals in 2.3 s from one address make 3 events; the participant gets one more a minute")
    func flood() {
        var limiter = RefusalEventLimiter()
        var events = 0
        for index in 0..<400 {
            if limiter.admitEvent(participant: "stage/p", address: "10.0.0.1", at: Int64(index) * 5_750) { events += 1 }
        }
        #expect(events == 3)
        let halfAMinute = limiter.admitEvent(participant: "stage/p", address: "10.0.0.1", at: 30_000_000)
        #expect(!halfAMinute)
        let aMinute = limiter.admitEvent(participant: "stage/p", address: "10.0.0.1", at: 62_300_000)
        #expect(aMinute)
    }

    @Test("one address refused for many participants is held to its own rate")
    func oneAddressManyParticipants() {
        var limiter = RefusalEventLimiter()
        var events = 0
        for index in 0..<1_000 {
            if limiter.admitEvent(participant: "stage/p\(index)", address: "10.0.0.1", at: Int64(index) * 1_000) { events += 1 }
        }
        // 10 at once, then one each 10 s: the second is 1 s in.
        #expect(events == 10)
    }

    @Test("the host of a remote address, v4 and v6")
    func hosts() {
        #expect(RefusalEventLimiter.host(of: "127.0.0.1:5050") == "127.0.0.1")
        #expect(RefusalEventLimiter.host(of: "[::1]:5050") == "[::1]")
        #expect(RefusalEventLimiter.host(of: "::1") == "::1")
        #expect(RefusalEventLimiter.host(of: "") == "")
    }

    @Test("the buckets kept stay under the bound, whatever the keys")
    func bounded() {
        var limiter = RefusalEventLimiter(maxKeys: 64)
        for index in 0..<10_000 {
            _ = limiter.admitEvent(participant: "s/p\(index)", address: "a\(index % 300)", at: Int64(index))
            #expect(limiter.keyCount <= 64)
        }
    }

    /// Two token buckets, by the definition: tokens accrue one per interval up to the burst.
    struct Model {
        var tokens: [String: (count: Double, at: Int64)] = [:]
        mutating func admit(_ keys: [(String, RefusalEventLimiter.Rate)], at now: Int64) -> Bool {
            let current = keys.map { key, rate in
                let old = tokens[key] ?? (Double(rate.burst), now)
                return (key, min(Double(rate.burst), old.count + Double(now - old.at) / Double(rate.interval)))
            }
            let allowed = current.allSatisfy { $0.1 >= 1 - 1e-9 }
            for (key, count) in current { tokens[key] = (allowed ? count - 1 : count, now) }
            return allowed
        }
    }

    @Test("generated sequences of refusals: the same decisions as the model's buckets")
    func againstTheModel() {
        let participant = RefusalEventLimiter.Rate(burst: 3, interval: 1_000)
        let address = RefusalEventLimiter.Rate(burst: 5, interval: 700)
        for seed in UInt64(1)...200 {
            var generator = SeededGenerator(seed: seed)
            var limiter = RefusalEventLimiter(participant: participant, address: address, maxKeys: 10_000)
            var model = Model()
            var now: Int64 = 0
            for step in 0..<300 {
                now += Int64.random(in: 0...900, using: &generator)
                let p = "s/p\(Int.random(in: 0..<4, using: &generator))"
                let a: String? = Bool.random(using: &generator) ? "a\(Int.random(in: 0..<3, using: &generator))" : nil
                let expected = model.admit([("p:" + p, participant)] + (a.map { [("a:" + $0, address)] } ?? []), at: now)
                let got = limiter.admitEvent(participant: p, address: a, at: now)
                #expect(got == expected, "seed \(seed), step \(step): \(p) from \(a ?? "-") at \(now)")
                if got != expected { return }
            }
        }
    }
}
