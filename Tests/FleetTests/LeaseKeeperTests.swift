// The lease keeper against generated heartbeat histories (seeded, shrunk, seed printed):
// renewals that succeed, fail, or are refused, answered after any latency, with time passing
// in between. A reference computed from the history alone says when the node may act as owner
// and when it may reap; the keeper must agree at every step.
import Fleet
import Testing
import TestSupport

@Suite struct LeaseKeeperTests {
    static let settings = LeaseKeeper.Settings(ttlMs: 10_000, heartbeatMs: 1_000, safetyMarginMs: 1_000)

    enum Step: CustomStringConvertible {
        case wait(Int64)
        case renewed(latency: Int64)
        case refused(latency: Int64)
        case failed(latency: Int64)

        var description: String {
            switch self {
            case .wait(let ms): "wait \(ms) ms"
            case .renewed(let latency): "renew ok after \(latency) ms"
            case .refused(let latency): "renew refused after \(latency) ms"
            case .failed(let latency): "renew failed after \(latency) ms"
            }
        }
    }

    static func generate(_ generator: inout SeededGenerator) -> [Step] {
        (0..<Int.random(in: 1...60, using: &generator)).map { _ in
            let latency = Int64.random(in: 0...12_000, using: &generator) / (Bool.random(using: &generator) ? 1 : 40)
            switch Int.random(in: 0..<20, using: &generator) {
            case 0..<6: return .wait(Int64.random(in: 0...6_000, using: &generator))
            case 6..<16: return .renewed(latency: latency)
            case 16: return .refused(latency: latency)
            default: return .failed(latency: latency)
            }
        }
    }

    /// Runs the steps from a registration at t = 0; nil when the keeper agreed with the
    /// reference throughout, else what differed.
    static func disagreement(_ steps: [Step]) -> String? {
        let ttl = settings.ttlMs, margin = settings.safetyMarginMs
        var keeper = LeaseKeeper(settings: settings)
        keeper.registered(sentAt: 0)
        var now: Int64 = 0
        var successes: [Int64] = [0]      // send times of renewals that succeeded before fencing
        var fenced = false
        var runStart: Int64? = 0          // first success since the last failure
        for (index, step) in steps.enumerated() {
            let sent = now
            switch step {
            case .wait(let ms): now += ms
            case .renewed(let latency):
                now += latency
                if !fenced && successes.contains(where: { now < $0 + ttl - margin }) {
                    successes.append(sent)
                    if runStart == nil { runStart = sent }
                }
                keeper.renewed(sentAt: sent, at: now)
            case .refused(let latency):
                now += latency
                if !fenced && successes.contains(where: { now < $0 + ttl - margin }) { fenced = true }
                keeper.renewalRefused()
            case .failed(let latency):
                now += latency
                runStart = nil
                keeper.renewalFailed()
            }
            // The reference: owner while some success, sent at s, still covers now.
            if !successes.contains(where: { now < $0 + ttl - margin }) { fenced = true }
            let active = keeper.check(at: now)
            if active != !fenced { return "step \(index) (\(step)) at \(now) ms: keeper active \(active), reference \(!fenced)" }
            if fenced { runStart = nil }
            let mayReap = keeper.mayReap(at: now)
            let shouldReap = !fenced && runStart.map { now - $0 >= ttl } == true
            if mayReap != shouldReap { return "step \(index) (\(step)) at \(now) ms: may reap \(mayReap), reference \(shouldReap)" }
            // Safety, independently of the reference: owner only inside a proven lease.
            if active, !successes.contains(where: { $0 <= now && now < $0 + ttl }) { return "step \(index): owner outside any lease" }
        }
        return nil
    }

    @Test("generated heartbeat histories: the keeper owns, fences and reaps exactly when the history allows")
    func generatedHistories() {
        let failure = PropertyCheck.check(seeds: PropertyCheck.seeds(count: 3_000, base: 0x1EA5E), generate: Self.generate,
                                          property: Self.disagreement)
        #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
    }

    @Test("renewing every heartbeat with answers fast enough never fences, and reaping opens after one TTL")
    func steadyHeartbeats() {
        for seed in PropertyCheck.seeds(count: 200, base: 77) {
            var generator = SeededGenerator(seed: seed)
            var keeper = LeaseKeeper(settings: Self.settings)
            keeper.registered(sentAt: 0)
            var now: Int64 = 0
            // Two answers and a heartbeat must fit in TTL minus the margin.
            let slowest = (Self.settings.ttlMs - Self.settings.heartbeatMs - Self.settings.safetyMarginMs) / 2 - 1
            for _ in 0..<200 {
                let sent = now
                now += Int64.random(in: 0...slowest, using: &generator)
                keeper.renewed(sentAt: sent, at: now)
                let owner = keeper.check(at: now)
                #expect(owner, "seed \(seed): fenced at \(now) ms")
                #expect(keeper.mayReap(at: now) == (now >= Self.settings.ttlMs), "seed \(seed) at \(now) ms")
                now += Self.settings.heartbeatMs
            }
        }
    }

    @Test("a database outage longer than the lease fences every node; a short one only delays reaping by a TTL")
    func outages() {
        var keeper = LeaseKeeper(settings: Self.settings)
        keeper.registered(sentAt: 0)
        keeper.renewed(sentAt: 1_000, at: 1_200)
        var owner = keeper.check(at: 5_000)
        #expect(owner)
        keeper.renewalFailed()                     // the database restarts
        owner = keeper.check(at: 6_000)
        #expect(owner && !keeper.mayReap(at: 6_000))
        keeper.renewed(sentAt: 7_000, at: 7_050)
        owner = keeper.check(at: 7_100)
        #expect(owner)
        #expect(!keeper.mayReap(at: 16_999) && keeper.mayReap(at: 17_000) == false)   // lease ends at 16 s without renewals
        keeper.renewed(sentAt: 15_000, at: 15_100)
        #expect(keeper.mayReap(at: 17_000))
        // No answer for longer than the lease: fenced, and a late success changes nothing.
        owner = keeper.check(at: 24_000)
        #expect(!owner)
        keeper.renewed(sentAt: 23_000, at: 24_100)
        owner = keeper.check(at: 24_200)
        #expect(!owner)
        guard case .fenced(let reason) = keeper.state else {
            Issue.record("not fenced: \(keeper.state)")
            return
        }
        #expect(reason.contains("within 10000 ms"))
    }

    @Test("settings that leave no room for a missed heartbeat are refused")
    func settingsProblems() {
        #expect(LeaseKeeper.Settings().problems.isEmpty)
        #expect(!LeaseKeeper.Settings(ttlMs: 1_000, heartbeatMs: 1_000, safetyMarginMs: 0).problems.isEmpty)
        #expect(!LeaseKeeper.Settings(ttlMs: 10_000, heartbeatMs: 0, safetyMarginMs: 0).problems.isEmpty)
    }
}
