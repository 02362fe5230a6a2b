// LiveTimestampMapper: arrival-anchored presentation times that absorb jitter and clock drift.
@testable import LiveStage
import Testing
import TestSupport

struct LiveTimestampMapperTests {
    @Test("a steady publisher is presented exactly latency after it arrives")
    func steady() {
        var mapper = LiveTimestampMapper(latency: 200_000)
        for i in 0..<1000 {
            let media = Int64(i) * 33_333
            let arrival = 5_000_000 + media
            #expect(mapper.presentationTime(mediaTime: media, arrival: arrival) == arrival + 200_000)
        }
        #expect(mapper.discontinuities == 0)
    }

    /// Simulates `hours` of a 50 packets/s publisher whose clock runs `ppm` fast (positive)
    /// or slow, with up to `jitter` µs of network delay on each packet; returns the range of
    /// (presentation - arrival) over the last hour, i.e. how long each packet waits.
    func simulate(ppm: Int64, jitter: Int64, hours: Int64, seed: UInt64, maxSlewPPM: Int64 = 5_000)
        -> (min: Int64, max: Int64, discontinuities: Int) {
        var mapper = LiveTimestampMapper(latency: 200_000, maxSlewPPM: maxSlewPPM)
        var rng = SeededGenerator(seed: seed)
        let step: Int64 = 20_000
        let total = hours * 3_600_000_000 / step
        var lowest = Int64.max
        var highest = Int64.min
        for i in 0..<total {
            let media = i * step
            // The publisher's clock runs at (1 + ppm): its media time m happens at our m / (1 + ppm).
            let sent = media - media * ppm / 1_000_000
            let delay = 30_000 + Int64.random(in: 0...jitter, using: &rng)
            let arrival = 1_000_000 + sent + delay
            let presented = mapper.presentationTime(mediaTime: media, arrival: arrival)
            if i > total - 3_600_000_000 / step {
                lowest = min(lowest, presented - arrival)
                highest = max(highest, presented - arrival)
            }
        }
        return (lowest, highest, mapper.discontinuities)
    }

    @Test("clock drift of ±500 ppm over 6 hours: packets never arrive late or wait much longer than the latency",
          arguments: [Int64(500), -500, 100, -100])
    func drift(ppm: Int64) {
        let result = simulate(ppm: ppm, jitter: 40_000, hours: 6, seed: 7)
        // With 40 ms of jitter each packet waits between latency - jitter and latency, give or
        // take how far the windowed minimum lags the drift: at most two 5 s windows of it.
        let lag = 2 * 5_000_000 * abs(ppm) / 1_000_000 + 1_000
        #expect(result.min >= 200_000 - 40_000 - lag)
        #expect(result.max <= 200_000 + lag)
        #expect(result.discontinuities == 0)
    }

    @Test("without drift correction the same publisher drifts by more than a second, then jumps")
    func withoutCorrection() {
        // 500 ppm is 10.8 s in 6 hours: media piles up (fast clock) or arrives ever later
        // (slow clock) until the mapper gives up and re-anchors with a jump.
        let fast = simulate(ppm: 500, jitter: 40_000, hours: 6, seed: 7, maxSlewPPM: 0)
        #expect(fast.max > 1_000_000 && fast.discontinuities > 0)
        let slow = simulate(ppm: -500, jitter: 40_000, hours: 6, seed: 7, maxSlewPPM: 0)
        #expect(slow.min < -900_000 && slow.discontinuities > 0)
    }

    @Test("late first packets: the offset drops to the least-delayed packet at once while the publisher settles")
    func lateFirstPacketsSettle() {
        var mapper = LiveTimestampMapper(latency: 200_000)
        // The first packets took 80 ms longer than every later one (handshake, encoder start).
        _ = mapper.presentationTime(mediaTime: 0, arrival: 1_080_000)
        _ = mapper.presentationTime(mediaTime: 20_000, arrival: 1_090_000)
        #expect(mapper.presentationTime(mediaTime: 40_000, arrival: 1_040_000) == 1_240_000)
        #expect(mapper.offset == 1_000_000)
    }

    @Test("after settling, a lower offset is approached at a bounded slew (0.1 %)")
    func slewAfterSettling() {
        var mapper = LiveTimestampMapper(latency: 200_000)
        for i in 0..<200 {
            let media = Int64(i) * 20_000
            _ = mapper.presentationTime(mediaTime: media, arrival: 1_080_000 + media)
        }
        // 4 s in, the network path gets 80 ms faster for good.
        var previous: Int64?
        for i in 200..<5_000 {
            let media = Int64(i) * 20_000
            let presented = mapper.presentationTime(mediaTime: media, arrival: 1_000_000 + media)
            if let previous {
                // Consecutive packets 20 ms apart are presented 20 ms ± 0.1 % apart.
                #expect(abs(presented - previous - 20_000) <= 20)
            }
            previous = presented
        }
        #expect(mapper.offset == 1_000_000)
        #expect(mapper.discontinuities == 0)
    }

    @Test("a jump of the publisher's timestamps re-anchors at once")
    func discontinuity() {
        var mapper = LiveTimestampMapper(latency: 200_000)
        for i in 0..<100 { _ = mapper.presentationTime(mediaTime: Int64(i) * 20_000, arrival: 1_000_000 + Int64(i) * 20_000) }
        // The encoder restarted: timestamps start again from 0, 2 s later in our time.
        let presented = mapper.presentationTime(mediaTime: 0, arrival: 5_000_000)
        #expect(presented == 5_200_000)
        #expect(mapper.discontinuities == 1)
        #expect(mapper.presentationTime(mediaTime: 20_000, arrival: 5_020_000) == 5_220_000)
    }
}
