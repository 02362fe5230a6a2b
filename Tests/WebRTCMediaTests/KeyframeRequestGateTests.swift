// Many viewers' keyframe requests into at most one encoder request a second.
@testable import WebRTCMedia
import TestSupport
import Testing

struct KeyframeRequestGateTests {
    @Test("the first request goes at once; those within the interval wait for its end and go as one")
    func coalesces() {
        var gate = KeyframeRequestGate()
        #expect(gate.poll(now: 0) == false)
        #expect(gate.nextDeadline == nil)
        gate.request(.newViewer, now: 100)
        #expect(gate.nextDeadline == 100)
        #expect(gate.poll(now: 100) == true)
        #expect(gate.poll(now: 100) == false)
        gate.request(.pictureLoss, now: 300_000)
        gate.request(.fullIntraRequest, now: 400_000)
        gate.request(.pictureLoss, now: 900_000)
        #expect(gate.isPending)
        #expect(gate.nextDeadline == 1_000_100)
        #expect(gate.poll(now: 1_000_099) == false)
        #expect(gate.poll(now: 1_000_100) == true)
        #expect(!gate.isPending)
        #expect(gate.encoderRequests == 2)
        #expect(gate.requestsCoalesced == 2)
        #expect(gate.requestsReceived == 4)
        #expect((gate.pictureLossRequests, gate.fullIntraRequests, gate.newViewerRequests) == (2, 1, 1))
        // Long after: at once again.
        gate.request(.viewerBehind, now: 5_000_000)
        #expect(gate.poll(now: 5_000_000) == true)
        #expect(gate.viewerBehindRequests == 1)
    }

    @Test("a keyframe from the encoder (scheduled, or the answer to the last request) serves whoever waits")
    func keyframeServes() {
        var gate = KeyframeRequestGate(minInterval: 1_000_000)
        gate.request(.newViewer, now: 0)
        #expect(gate.poll(now: 0) == true)
        gate.request(.newViewer, now: 20_000)  // joined before the answer came out
        gate.keyframeProduced(now: 40_000)
        #expect(!gate.isPending)
        #expect(gate.nextDeadline == nil)
        #expect(gate.poll(now: 100_000) == false)
        #expect(gate.satisfiedByKeyframe == 1)
        // A request after that keyframe still waits for the interval since the last request...
        gate.request(.pictureLoss, now: 500_000)
        #expect(gate.nextDeadline == 1_000_000)
        #expect(gate.poll(now: 999_999) == false)
        // ... unless a scheduled keyframe comes first.
        gate.keyframeProduced(now: 600_000)
        #expect(gate.satisfiedByKeyframe == 2)
        #expect(gate.poll(now: 1_000_000) == false)
        // A keyframe with nobody waiting changes nothing.
        gate.keyframeProduced(now: 1_100_000)
        #expect(gate.satisfiedByKeyframe == 2)
        #expect(gate.encoderRequests == 1)
    }

    /// One event in a generated run.
    enum Step: CustomStringConvertible {
        case request(KeyframeRequestReason, after: Int64)
        case keyframe(after: Int64)
        var description: String {
            switch self {
            case .request(let reason, let after): "+\(after / 1000) ms \(reason)"
            case .keyframe(let after): "+\(after / 1000) ms keyframe"
            }
        }
    }

    @Test("generated request storms from many viewers: encoder requests at least a second apart, and every request answered by a request or a keyframe within a second (seed printed on failure)")
    func generated() {
        let failure = PropertyCheck.check(seeds: PropertyCheck.seeds(count: 200, base: 44_500_000), generate: { random in
            (0..<Int.random(in: 1...300, using: &random)).map { _ in
                let after = [Int64.random(in: 0...5_000, using: &random), Int64.random(in: 0...400_000, using: &random),
                             Int64.random(in: 0...3_000_000, using: &random)].randomElement(using: &random)!
                if Int.random(in: 0..<10, using: &random) == 0 { return Step.keyframe(after: after) }
                return Step.request(KeyframeRequestReason.allCases.randomElement(using: &random)!, after: after)
            }
        }, property: { steps in
            var gate = KeyframeRequestGate()
            var now: Int64 = 0
            var requests: [Int64] = []
            var keyframes: [Int64] = []
            var asked: [Int64] = []
            // Polled every 10 ms, as an owner's timer would, and at once after each event.
            func advance(to time: Int64) {
                while now < time {
                    now = min(time, now + 10_000)
                    if gate.poll(now: now) { requests.append(now) }
                }
            }
            for step in steps {
                switch step {
                case .request(let reason, let after):
                    advance(to: now + after)
                    gate.request(reason, now: now)
                    asked.append(now)
                case .keyframe(let after):
                    advance(to: now + after)
                    gate.keyframeProduced(now: now)
                    keyframes.append(now)
                }
                if gate.poll(now: now) { requests.append(now) }
            }
            advance(to: now + 1_100_000)
            for (earlier, later) in zip(requests, requests.dropFirst()) where later - earlier < 1_000_000 {
                return "encoder requests at \(earlier) and \(later)"
            }
            for time in asked {
                let answered = (requests + keyframes).contains { $0 >= time && $0 <= time + 1_000_000 + 10_000 }
                if !answered { return "request at \(time) unanswered for over a second" }
            }
            if Int64(asked.count) != gate.requestsReceived { return "counted \(gate.requestsReceived) of \(asked.count)" }
            return nil
        })
        if let failure { Issue.record("\(failure)") }
    }
}
