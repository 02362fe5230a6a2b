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

/// The measured jitter allowance: between its bounds, as large as the lateness seen needs.
struct AdaptiveLatencyTests {
    /// A 50 packets/s publisher whose packet `i` is delayed by `delay(i)` µs beyond 30 ms of
    /// transit; returns, per packet, (arrival, presentation, the mapper's latency after it).
    static func run(_ mapper: inout LiveTimestampMapper, packets: Int, delay: (Int) -> Int64)
        -> [(arrival: Int64, presented: Int64, latency: Int64)] {
        (0..<packets).map { i in
            let media = Int64(i) * 20_000
            let arrival = 1_000_000 + media + 30_000 + delay(i)
            let presented = mapper.presentationTime(mediaTime: media, arrival: arrival)
            return (arrival, presented, mapper.latency)
        }
    }

    @Test("a clean publisher (2 ms of jitter) is shown the minimum after it arrives, not the maximum")
    func clean() {
        var mapper = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, initialLatency: 40_000, margin: 40_000)
        var random = SeededGenerator(seed: 1)
        let result = Self.run(&mapper, packets: 1_000) { _ in Int64.random(in: 0...2_000, using: &random) }
        #expect(result.last!.latency <= 42_000 && result.last!.latency >= 40_000)
        // Every packet waits at least the margin (never late) and, after the first second, at
        // most the margin plus the jitter.
        #expect(result.allSatisfy { $0.presented - $0.arrival >= 38_000 })
        #expect(result.dropFirst(50).allSatisfy { $0.presented - $0.arrival <= 44_000 })
    }

    @Test("a jittery publisher (0–120 ms) keeps the allowance its lateness needs: no packet is presented before it arrives")
    func jittery() {
        var mapper = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, initialLatency: 40_000, margin: 40_000)
        var random = SeededGenerator(seed: 2)
        let result = Self.run(&mapper, packets: 3_000) { _ in Int64.random(in: 0...120_000, using: &random) }
        #expect(result.allSatisfy { $0.presented >= $0.arrival + 40_000 - 1_000 }, "a packet arrived after its time")
        #expect(result.last!.latency >= 155_000 && result.last!.latency <= 160_000)
        // A fixed minimum latency would have presented many before they arrived.
        var fixed = LiveTimestampMapper(latency: 40_000)
        var again = SeededGenerator(seed: 2)
        let late = Self.run(&fixed, packets: 3_000) { _ in Int64.random(in: 0...120_000, using: &again) }
            .filter { $0.presented < $0.arrival }
        #expect(late.count > 1_000)
    }

    @Test("the allowance is capped by the maximum; a spike raises it at once; it comes down slowly (0.5 %), a frame at a time, when the network calms")
    func spikeThenCalm() {
        var mapper = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, initialLatency: 40_000, margin: 40_000,
                                         latenessWindow: 5_000_000)
        // Calm for 10 s, one packet 300 ms late at 10 s, calm again.
        let result = Self.run(&mapper, packets: 3_000) { $0 == 500 ? 300_000 : 0 }
        #expect(result[499].latency == 40_000)
        #expect(result[500].latency == 200_000, "raised at once, to the cap")
        #expect(result[500].presented < result[500].arrival, "beyond the cap it is late, as with a fixed 200 ms")
        // Held while the spike is within the last windows (5–10 s), then down by 0.5 % of the
        // time passing in steps of a frame (the last one to the minimum may be less): the
        // sound skips a frame's worth with the picture, it is never squeezed.
        var lastStep: Int64?
        for i in 501..<3_000 {
            let step = (result[i].presented - result[i].arrival) - (result[i - 1].presented - result[i - 1].arrival)
            #expect(result[i].latency <= result[i - 1].latency)
            guard step < -(20_000 * 1_000 / 1_000_000) - 1 else { continue }
            let toMinimum = result[i].latency == 40_000
            #expect(-step >= mapper.shrinkStep || toMinimum, "packet \(i) moved earlier by \(-step) µs")
            #expect(-step <= mapper.shrinkStep + 21, "packet \(i) moved earlier by \(-step) µs")
            if let lastStep { #expect(result[i].arrival - lastStep >= mapper.shrinkStep * 1_000_000 / 5_000 - 20_000 || toMinimum) }
            lastStep = result[i].arrival
        }
        #expect(result[2_999].latency == 40_000, "back to the minimum by 60 s")
        // The spike's window (from 11 s) becomes the previous one at 16 s and is forgotten at
        // 21 s; the first step down, a frame, comes 6.7 s later (0.5 %).
        #expect(result[1_300].latency == 200_000 && result[1_400].latency == 200_000 - mapper.shrinkStep)
    }

    @Test("a new publisher starts at the maximum and comes down by 0.5 % of the time passing to what its jitter needs: a clean one to the minimum, never stepping up by more than its jitter")
    func startsAtTheMaximum() {
        var mapper = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, margin: 40_000)
        var random = SeededGenerator(seed: 3)
        let result = Self.run(&mapper, packets: 2_000) { _ in Int64.random(in: 0...2_000, using: &random) }
        #expect(result[0].latency == 200_000)
        for i in 1..<result.count {
            // Down a frame at a time (the last step to what the jitter needs may be less), no
            // faster than 0.5 % of the time since it started.
            let shrunk = result[i - 1].latency - result[i].latency
            #expect(shrunk >= -2_000 && shrunk <= mapper.shrinkStep, "packet \(i): \(result[i - 1].latency) then \(result[i].latency)")
            #expect(200_000 - result[i].latency <= (result[i].arrival - result[0].arrival) * 5_000 / 1_000_000 + 2_000,
                    "packet \(i): \(result[i].latency)")
        }
        // 158 ms at 0.5 % of the time: about 32 s.
        #expect(result[1_500].latency > 42_000 && result[1_999].latency <= 42_000, "\(result[1_500].latency), \(result[1_999].latency)")
        // Once down, a packet a little later than all before steps it up by that little: 2 ms
        // of jitter, at most 2 ms in all (the sound's resampling absorbs it; no gap).
        #expect(mapper.steppedUp <= 2_000, "\(mapper.steps) steps, \(mapper.steppedUp) µs")
        #expect(result.allSatisfy { $0.presented - $0.arrival >= 38_000 })
    }

    @Test("lateness rising to 130 ms in a publisher's first 5 s (a host under load) is learned while the allowance is high: no step, every packet keeps the margin")
    func lateStartIsLearnedWithoutAStep() {
        var mapper = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, margin: 40_000)
        let result = Self.run(&mapper, packets: 1_500) { i in i < 250 ? Int64(i) * 520 : 0 }
        #expect(mapper.steps == 0 && mapper.steppedUp == 0)
        #expect(result.allSatisfy { $0.presented - $0.arrival >= 40_000 - 1_000 })
        // 5 s of its slow way down took it to 175 ms: the lateness + margin (170 ms) is held
        // while it is remembered (5–10 s).
        #expect(result[249].latency >= 170_000 - 1_000 && result[500].latency >= 170_000 - 1_000, "\(result[249].latency)")
        // Started at 40 ms instead, the same publisher steps up every time its lateness grows.
        var low = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, initialLatency: 40_000, margin: 40_000)
        _ = Self.run(&low, packets: 1_500) { i in i < 250 ? Int64(i) * 520 : 0 }
        #expect(low.steps > 100 && low.steppedUp >= 129_000, "\(low.steps) steps, \(low.steppedUp) µs")
    }

    @Test("started low, a packet with less than the margin to spare steps the allowance up at once, to its lateness + the margin, counted")
    func stepsAreCounted() {
        var mapper = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, initialLatency: 40_000, margin: 40_000)
        _ = Self.run(&mapper, packets: 500) { _ in 0 }
        #expect(mapper.steps == 0 && mapper.latency == 40_000)
        let before = mapper.latency
        let arrival: Int64 = 1_000_000 + 500 * 20_000 + 30_000 + 100_000
        let presented = mapper.presentationTime(mediaTime: 500 * 20_000, arrival: arrival)
        #expect(mapper.steps == 1 && mapper.steppedUp == mapper.latency - before && mapper.latency == 140_000)
        #expect(presented - arrival == 40_000, "the packet itself keeps the margin")
    }

    @Test("audio and video of one instant share the allowance across a step down, whichever arrives first")
    func streamsStepTogether() {
        var mapper = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, margin: 40_000)
        // Video (every 40 ms) arrives 50 ms after audio (every 20 ms) of the same instant.
        var presented: [Int64: (audio: Int64?, video: Int64?)] = [:]
        var events: [(arrival: Int64, media: Int64, video: Bool)] = []
        for i in 0..<1_500 { events.append((1_000_000 + Int64(i) * 20_000, Int64(i) * 20_000, false)) }
        for i in 0..<750 { events.append((1_050_000 + Int64(i) * 40_000, Int64(i) * 40_000, true)) }
        events.sort { $0.arrival < $1.arrival }
        var steps = 0
        var latency = mapper.latency
        for event in events {
            let time = mapper.presentationTime(mediaTime: event.media, arrival: event.arrival)
            if mapper.latency < latency { steps += 1; latency = mapper.latency }
            if event.video { presented[event.media, default: (nil, nil)].video = time } else { presented[event.media, default: (nil, nil)].audio = time }
        }
        #expect(steps >= 3, "the allowance came down \(steps) times")
        // Every video instant is an audio one too: the same placement, to the offset's slew.
        let shared = presented.values.compactMap { pair in pair.audio.flatMap { a in pair.video.map { a - $0 } } }
        #expect(shared.count == 750)
        #expect(shared.allSatisfy { abs($0) <= 100 }, "\(shared.filter { abs($0) > 100 })")
    }

    @Test("generated delay sequences: never presented before arrival + margin unless the lateness passes the cap, moved earlier beyond the offset's slew only by steps of a frame at most, no faster than 0.5 % (seed printed on failure)")
    func generatedDelays() {
        struct Burst: CustomStringConvertible {
            var packets: Int
            var base: Int64
            var jitter: Int64
            var description: String { "\(packets) packets at \(base / 1000)+0..\(jitter / 1000) ms" }
        }
        let failure = PropertyCheck.check(seeds: PropertyCheck.seeds(count: 120, base: 26_200_000), generate: { random in
            (0..<Int.random(in: 1...12, using: &random)).map { _ in
                Burst(packets: Int.random(in: 1...600, using: &random),
                      base: [0, 5_000, 50_000, 150_000].randomElement(using: &random)!,
                      jitter: [0, 2_000, 30_000, 250_000].randomElement(using: &random)!)
            }
        }, property: { bursts in
            var mapper = LiveTimestampMapper(latency: 200_000, minimumLatency: 40_000, margin: 40_000)
            var random = SeededGenerator(seed: UInt64(bursts.count))
            let delays = bursts.flatMap { burst in (0..<burst.packets).map { _ in burst.base + Int64.random(in: 0...burst.jitter, using: &random) } }
            let result = Self.run(&mapper, packets: delays.count) { delays[$0] }
            var latestArrival = Int64.min
            // Since the allowance last rose: when, and the steps down since.
            var walkStart = result.first?.arrival ?? 0
            var shrunk: Int64 = 0
            for (i, packet) in result.enumerated() {
                defer { latestArrival = max(latestArrival, packet.arrival) }
                // Lateness behind the least-delayed packet (30 ms of transit): the offset only
                // falls towards the least delay, so this bounds it from above.
                let late = delays[i] - (delays.min() ?? 0)
                let wait = packet.presented - packet.arrival
                if wait < min(40_000, 200_000 - late) - 1_000 {
                    return "packet \(i) (delay \(delays[i] / 1000) ms) waits \(wait / 1000) ms"
                }
                // The first 2 s (of arrival) settle at once.
                guard i > 0, packet.arrival - result[0].arrival >= mapper.settling else { continue }
                // How much earlier than its predecessor's placement this packet is placed: the
                // offset and the latency together, over the arrival time that passed.
                let step = wait - (result[i - 1].presented - result[i - 1].arrival) + (delays[i] - delays[i - 1])
                let elapsed = max(0, packet.arrival - latestArrival)
                let slew = elapsed * 1_000 / 1_000_000 + 2
                if -step > mapper.shrinkStep + slew {
                    return "packet \(i) presented \(-step) µs earlier than the one before: more than a step"
                }
                // (A step down taking effect with this packet, and the allowance rising for it.)
                if packet.latency > result[i - 1].latency { walkStart = packet.arrival; shrunk = 0; continue }
                guard step < -slew else { continue }
                shrunk += -step
                if shrunk > (packet.arrival - walkStart) * 6_000 / 1_000_000 + 2_000 {
                    return "packet \(i): \(shrunk) µs of steps down in \(packet.arrival - walkStart) µs"
                }
            }
            return nil
        })
        #expect(failure == nil, "\(failure.map(String.init(describing:)) ?? "")")
    }
}
