// What a composition counts of each live participant's media reaching it late: video frames
// shown after the tick they were due at, and sound missing. In virtual time, through the real
// pipeline (LiveCompositionTests' harness): a clean publisher, and one whose connection stalls
// for a moment (as TCP does under loss: what follows waits behind it).
import Foundation
@testable import LiveStage
import Pipeline
import Testing
import TestSupport

@Suite(.serialized)
struct LiveDeliveryTests {
    let base = LiveCompositionTests()

    /// A publisher 20 ms away whose packets sent from 1.5 s until `sentUntil` arrive together
    /// at `sentUntil` + 50 ms (what follows them waits behind them).
    func stalled(_ media: RecordedPublisherMedia, sentUntil: Int64) -> SimulatedPublisher {
        let publisher = SimulatedPublisher(media: media, id: "red", joinAt: 0)
        let items = media.items
        publisher.delay = { index in
            let dts = items[index].dts
            return (1_500_000..<sentUntil).contains(dts) ? sentUntil + 50_000 - dts : 20_000
        }
        return publisher
    }

    @Test("a clean publisher under a measured allowance started at its minimum: no late frame, no sound missing, no step beyond the 5 ms its packets are delivered in")
    func clean() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 3)
        let delivery = LiveCompositionTests.DeliveryRecord()
        let publisher = SimulatedPublisher(media: red, id: "red", joinAt: 0)
        _ = try await base.run(publishers: [publisher], seconds: 3, minimumLatency: 40_000, initialLatency: 40_000,
                               points: [(160, 90)], delivery: delivery)
        let counted = try #require(delivery.of("red"))
        #expect(counted.lateVideoFrames == 0 && counted.audioGapSeconds == 0, "\(counted)")
        let allowance = try #require(publisher.publisher?.allowance)
        #expect(allowance.steppedUp <= 5_000, "\(allowance)")
    }

    @Test("a 130 ms stall costs nothing under the fixed 200 ms, nor under the measured allowance starting at the maximum; started at its minimum, it steps up by the stall, and nothing arrives late")
    func stallWithinTheCap() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 3)
        for minimum in [nil, 40_000] as [Int64?] {
            let onTime = LiveCompositionTests.DeliveryRecord()
            let publisher = stalled(red, sentUntil: 1_600_000)
            _ = try await base.run(publishers: [publisher], seconds: 3, minimumLatency: minimum, points: [(160, 90)], delivery: onTime)
            let counted = try #require(onTime.of("red"))
            #expect(counted.lateVideoFrames == 0 && counted.audioGapSeconds == 0, "minimum \(String(describing: minimum)): \(counted)")
            #expect(publisher.publisher?.allowance.steps == 0)
        }

        let measured = LiveCompositionTests.DeliveryRecord()
        let publisher = stalled(red, sentUntil: 1_600_000)
        _ = try await base.run(publishers: [publisher], seconds: 3, minimumLatency: 40_000, initialLatency: 40_000,
                               points: [(160, 90)], delivery: measured)
        let stepped = try #require(measured.of("red"))
        // The first packet sent after 1.5 s arrives up to 130 ms behind the least-delayed ones,
        // beyond the 40 ms allowance: the allowance steps up (to its lateness + 40 ms) for it,
        // so it and everything after is on time, and the sound misses what the timeline moved
        // by (once).
        let allowance = try #require(publisher.publisher?.allowance)
        #expect(allowance.steps >= 1 && (110_000...131_000).contains(allowance.steppedUp), "\(allowance)")
        #expect(stepped.lateVideoFrames == 0, "\(stepped)")
        #expect(abs(stepped.audioGapSeconds - Double(allowance.steppedUp) / 1_000_000) <= 0.005, "\(stepped), \(allowance)")
    }

    @Test("a stall beyond the fixed allowance: the frames due before they arrive are counted late, and the sound they leave out")
    func stallBeyondTheCap() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 3)
        let fixed = LiveCompositionTests.DeliveryRecord()
        _ = try await base.run(publishers: [stalled(red, sentUntil: 1_800_000)], seconds: 3, points: [(160, 90)], delivery: fixed)
        let late = try #require(fixed.of("red"))
        // Sent from 1.5 s, due 220 ms later, all arrive at 1.85 s. The composition shows this
        // 30 fps picture 24 ms after that, on its ticks (its cadence): the frames of the ticks
        // 1.77 to 1.83 s are shown late; the next, of the tick at 1.87 s, made it.
        #expect(late.lateVideoFrames == 3, "\(late)")
        // Their sound (due 1.72 s on) is missing until it arrives at 1.85 s.
        #expect(abs(late.audioGapSeconds - 0.13) <= 0.03, "\(late)")
    }
}
