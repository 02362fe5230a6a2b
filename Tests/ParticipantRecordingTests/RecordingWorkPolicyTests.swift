// The bounds on one publisher's recording work, in-process and exact: when a configuration
// change may cost a new initialization section (ConfigurationChangePolicy) and when the
// playlist is written (PlaylistWriteSchedule), checked against scripted storms and a seeded
// model of what a player must be able to rely on.
import ParticipantRecording
import Testing
import TestSupport

struct ConfigurationChangePolicyTests {
    typealias Policy = ConfigurationChangePolicy

    /// A policy for audio and video, both configured and in their first run.
    static func running(budget: Policy.Budget = Policy.standardBudget) -> Policy {
        var policy = Policy(streams: [.video, .audio], budget: budget)
        _ = policy.configured(.video, .recordable(key: "v0"), at: 0)
        _ = policy.configured(.audio, .recordable(key: "a0"), at: 0)
        policy.firstRunStarted()
        #expect(policy.packet(.video, keyframe: true, at: 0) == .write)
        return policy
    }

    @Test("a new configuration every frame for 30 s costs at most the burst plus one run per interval; sound goes on")
    func everyFrameStorm() {
        var policy = Self.running()
        var runs = 0, audioWritten = 0, videoWritten = 0
        // 30 fps video, each frame a keyframe of a new configuration; AAC every 21.333 ms.
        var audioTime: Int64 = 0
        for frame in 1..<900 {
            let time = Int64(frame) * 1_000_000 / 30
            while audioTime <= time {
                if policy.packet(.audio, keyframe: true, at: audioTime) == .write { audioWritten += 1 }
                audioTime += 21_333
            }
            _ = policy.configured(.video, .recordable(key: "v\(frame)"), at: time)
            switch policy.packet(.video, keyframe: true, at: time) {
            case .startRun: runs += 1; videoWritten += 1
            case .write: videoWritten += 1
            case .drop, .deferChange: break
            }
        }
        // 4 at once, then one every 2 s of the 30: 4 + 14 (the last at 29.97 s is not due yet).
        #expect(runs <= 4 + 15 && runs >= 4 + 14, "\(runs) runs")
        #expect(videoWritten == runs)
        #expect(audioWritten == Int((audioTime + 21_332) / 21_333), "every audio packet is recorded")
        #expect(policy.runsForChanges == runs)
        #expect(policy.coalescedConfigurations == 899 - runs - 1 || policy.coalescedConfigurations == 899 - runs)
        #expect(policy.droppedPackets == 899 - runs)
    }

    @Test("a change back to the run's configuration costs no run; video resumes at its next keyframe")
    func changeBackCostsNothing() {
        var policy = Self.running(budget: Policy.Budget(burst: 1, interval: 10_000_000))
        _ = policy.configured(.video, .recordable(key: "v1"), at: 1_000_000)
        #expect(policy.packet(.video, keyframe: true, at: 1_000_000) == .startRun)
        // The budget is spent: the next change waits, and is reported once.
        _ = policy.configured(.video, .recordable(key: "v2"), at: 2_000_000)
        #expect(policy.packet(.video, keyframe: true, at: 2_000_000) == .deferChange(until: 11_000_000))
        #expect(policy.packet(.video, keyframe: false, at: 2_033_000) == .drop(.changeDeferred))
        #expect(policy.packet(.video, keyframe: true, at: 2_066_000) == .drop(.changeDeferred))
        #expect(policy.packet(.audio, keyframe: true, at: 2_070_000) == .write)
        #expect(policy.isSuspended(.video) && !policy.isSuspended(.audio))
        // Back to v1, the run's own: no new run; the P-frames after it wait for a keyframe.
        #expect(policy.configured(.video, .recordable(key: "v1"), at: 2_100_000) == .changed(discardHeld: false))
        #expect(policy.packet(.video, keyframe: false, at: 2_100_000) == .drop(.awaitingKeyframe))
        #expect(policy.packet(.video, keyframe: true, at: 2_133_000) == .write)
        #expect(policy.packet(.video, keyframe: false, at: 2_166_000) == .write)
        #expect(policy.coalescedConfigurations == 1 && policy.runsForChanges == 1)
        #expect(!policy.isSuspended(.video))
    }

    @Test("a change costs its run only at its keyframe, and the run it starts takes every stream's latest configuration")
    func changeStartsAtKeyframe() {
        var policy = Self.running()
        _ = policy.configured(.video, .recordable(key: "v1"), at: 1_000_000)
        #expect(policy.packet(.video, keyframe: false, at: 1_000_000) == .drop(.changeDeferred))
        #expect(policy.packet(.audio, keyframe: true, at: 1_010_000) == .write)
        _ = policy.configured(.audio, .recordable(key: "a1"), at: 1_020_000)
        // Sound's change starts the run; video joins it at its next keyframe.
        #expect(policy.packet(.audio, keyframe: true, at: 1_020_000) == .startRun)
        #expect(policy.packet(.video, keyframe: false, at: 1_033_000) == .drop(.awaitingKeyframe))
        #expect(policy.packet(.video, keyframe: true, at: 1_066_000) == .write)
        #expect(policy.runsForChanges == 1)
    }

    @Test("a refused configuration drops its stream's media until a good one and a keyframe; the other stream is written")
    func refusedConfigurationIsSkipped() {
        var policy = Self.running()
        let wide = Policy.Configuration.refused(reason: "picture size 1048592x240 exceeds 16384 on a side")
        #expect(policy.configured(.video, wide, at: 3_000_000) == .refused(reason: "picture size 1048592x240 exceeds 16384 on a side",
                                                                           report: true, discardHeld: false))
        #expect(policy.packet(.video, keyframe: true, at: 3_000_000) == .drop(.refusedConfiguration))
        #expect(policy.packet(.audio, keyframe: true, at: 3_010_000) == .write)
        #expect(policy.isRefused(.video) && policy.isSuspended(.video))
        // Another refusal within the report interval is counted, not reported.
        _ = policy.configured(.video, .recordable(key: "v0"), at: 3_500_000)
        #expect(policy.configured(.video, .refused(reason: "x"), at: 3_600_000) == .refused(reason: "x", report: false, discardHeld: false))
        #expect(policy.configured(.video, .recordable(key: "v0"), at: 4_000_000) == .changed(discardHeld: false))
        #expect(policy.packet(.video, keyframe: false, at: 4_000_000) == .drop(.awaitingKeyframe))
        #expect(policy.packet(.video, keyframe: true, at: 4_033_000) == .write)
        #expect(policy.refusedConfigurations == 2 && policy.runsForChanges == 0)
        #expect(policy.configured(.video, .refused(reason: "y"), at: 13_600_000) == .refused(reason: "y", report: true, discardHeld: false))
    }

    @Test("before the first run a change discards the held media of its stream, and a refused stream does not hold the run back")
    func beforeTheFirstRun() {
        var policy = Policy(streams: [.video, .audio])
        #expect(policy.configured(.video, .recordable(key: "v0"), at: 0) == .changed(discardHeld: false))
        #expect(policy.packet(.video, keyframe: false, at: 0) == .drop(.awaitingKeyframe))
        #expect(policy.packet(.video, keyframe: true, at: 33_000) == .write)
        #expect(policy.configured(.video, .recordable(key: "v1"), at: 66_000) == .changed(discardHeld: true))
        #expect(!policy.everyStreamConfigured)
        #expect(policy.configured(.audio, .refused(reason: "no"), at: 70_000) == .refused(reason: "no", report: true, discardHeld: true))
        #expect(policy.everyStreamConfigured && policy.recordableStreams == [.video])
        #expect(policy.packet(.audio, keyframe: true, at: 80_000) == .drop(.refusedConfiguration))
        policy.firstRunStarted()
        #expect(policy.packet(.video, keyframe: true, at: 100_000) == .write)
        // Good sound later is a change: a run of its own, from the budget.
        _ = policy.configured(.audio, .recordable(key: "a0"), at: 200_000)
        #expect(policy.packet(.audio, keyframe: true, at: 200_000) == .startRun)
    }

    @Test("a run that cannot start refuses the configuration that changed, video's first; the rest goes on in the next run")
    func failedRunRefusesTheChange() {
        var policy = Self.running()
        _ = policy.configured(.video, .recordable(key: "v1"), at: 1_000_000)
        _ = policy.configured(.audio, .recordable(key: "a1"), at: 1_000_000)
        #expect(policy.packet(.video, keyframe: true, at: 1_000_000) == .startRun)
        policy.runFailed(carrying: [.video, .audio], reason: "write mp4 header: Invalid argument")
        #expect(policy.isRefused(.video) && !policy.isRefused(.audio))
        #expect(policy.packet(.video, keyframe: true, at: 1_033_000) == .drop(.refusedConfiguration))
        #expect(policy.packet(.audio, keyframe: true, at: 1_040_000) == .startRun)
        #expect(policy.packet(.audio, keyframe: true, at: 1_060_000) == .write)
    }

    @Test("a reconnect configures every stream again; the same configurations go on in the same run")
    func reconnect() {
        var policy = Self.running()
        policy.sourceReplaced()
        #expect(policy.packet(.audio, keyframe: true, at: 5_000_000) == .drop(.notConfigured))
        _ = policy.configured(.audio, .recordable(key: "a0"), at: 5_000_000)
        _ = policy.configured(.video, .recordable(key: "v0"), at: 5_000_000)
        #expect(policy.packet(.audio, keyframe: true, at: 5_010_000) == .write)
        #expect(policy.packet(.video, keyframe: false, at: 5_020_000) == .drop(.awaitingKeyframe))
        #expect(policy.packet(.video, keyframe: true, at: 5_053_000) == .write)
        #expect(policy.runsForChanges == 0)
    }

    // MARK: Model

    enum Step: CustomStringConvertible {
        case configure(RecordedStream, Int)  // key index; -1: refused
        case packet(RecordedStream, keyframe: Bool)
        case wait(Int64)
        case reconnect

        var description: String {
            switch self {
            case .configure(let stream, let key): "configure(\(stream), \(key < 0 ? "refused" : "k\(key)"))"
            case .packet(let stream, let keyframe): "packet(\(stream)\(keyframe ? ", key" : ""))"
            case .wait(let micros): "wait(\(micros))"
            case .reconnect: "reconnect"
            }
        }
    }

    @Test("seeded sequences: written media is always of the run's configuration, video starts runs at keyframes, runs stay within the budget")
    func modelCheck() throws {
        let budget = Policy.Budget(burst: 3, interval: 1_000_000)
        let failure = PropertyCheck.check(seeds: PropertyCheck.seeds(count: 300, base: 0x38_0004), generate: { random in
            (0..<Int.random(in: 20...300, using: &random)).map { _ in
                let stream: RecordedStream = Bool.random(using: &random) ? .video : .audio
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<15: return .configure(stream, Int.random(in: -1...3, using: &random))
                case 15..<80: return .packet(stream, keyframe: Int.random(in: 0..<4, using: &random) == 0)
                case 80..<97: return .wait(Int64.random(in: 0...700_000, using: &random))
                default: return .reconnect
                }
            }
        }, property: { steps in Self.runModel(steps, budget: budget) })
        if let failure { Issue.record("\(failure)") }
    }

    /// Runs `steps` against the policy as the recorder drives it; returns what broke, if anything.
    static func runModel(_ steps: [Step], budget: Policy.Budget) -> String? {
        var policy = Policy(streams: [.video, .audio], budget: budget)
        var time: Int64 = 0
        var latest: [RecordedStream: Int] = [:]  // -1 refused
        var runKeys: [RecordedStream: Int]? = nil
        var videoNeedsKeyframe = true
        var starts: [Int64] = []
        for (index, step) in steps.enumerated() {
            switch step {
            case .wait(let micros): time += micros
            case .reconnect:
                policy.sourceReplaced()
                latest = [:]
                videoNeedsKeyframe = true
            case .configure(let stream, let key):
                _ = policy.configured(stream, key < 0 ? .refused(reason: "bad") : .recordable(key: "k\(key)"), at: time)
                if latest[stream] != key, stream == .video { videoNeedsKeyframe = true }
                latest[stream] = key
                if runKeys == nil, latest.count == 2 {
                    policy.firstRunStarted()
                    runKeys = latest.filter { $0.value >= 0 }
                }
            case .packet(let stream, let keyframe):
                let action = policy.packet(stream, keyframe: stream == .audio || keyframe, at: time)
                let written: Bool
                switch action {
                case .startRun:
                    guard stream == .audio || keyframe else { return "step \(index): a run started at a video non-keyframe" }
                    guard runKeys != nil, (latest[stream] ?? -1) >= 0 else { return "step \(index): a run started without a good configuration" }
                    runKeys = latest.filter { $0.value >= 0 }
                    videoNeedsKeyframe = true
                    starts.append(time)
                    written = true
                case .write: written = true
                case .drop, .deferChange: written = false
                }
                guard written else {
                    // Liveness: a change of a good configuration at its keyframe, with the
                    // whole budget available, is not refused.
                    if let runKeys, let key = latest[stream], key >= 0, runKeys[stream] != key, stream == .audio || keyframe,
                       starts.last.map({ time - $0 >= Int64(budget.burst) * budget.interval }) ?? true {
                        return "step \(index): a change waited with the budget full (\(action))"
                    }
                    continue
                }
                guard let key = latest[stream], key >= 0 else { return "step \(index): media written without a good configuration" }
                if let runKeys, runKeys[stream] != key { return "step \(index): k\(key) written into a run of \(String(describing: runKeys[stream]))" }
                if stream == .video {
                    if videoNeedsKeyframe, !keyframe { return "step \(index): video written from a non-keyframe" }
                    videoNeedsKeyframe = false
                }
            }
        }
        // Within any window, no more runs than the burst and one per interval.
        for first in starts.indices {
            for last in starts.indices where last >= first {
                let allowed = budget.burst + Int((starts[last] - starts[first]) / budget.interval)
                if last - first + 1 > allowed { return "runs \(first)...\(last) within \(starts[last] - starts[first]) µs: \(last - first + 1) > \(allowed)" }
            }
        }
        return nil
    }
}

struct PlaylistWriteScheduleTests {
    @Test("a segment every frame for 30 s writes the playlist at most once a second; the last change is flushed")
    func batchesWrites() {
        var schedule = PlaylistWriteSchedule(interval: 1_000_000)
        var writes: [Int64] = []
        for frame in 0..<900 {
            let time = Int64(frame) * 1_000_000 / 30
            if schedule.due(at: time) { writes.append(time) }
            if schedule.segmentAdded(at: time) { writes.append(time) }
        }
        #expect(writes.count == 30, "\(writes.count) writes")
        #expect(zip(writes, writes.dropFirst()).allSatisfy { $1 - $0 >= 1_000_000 })
        #expect(schedule.pending && schedule.flush() && !schedule.pending && !schedule.flush())
    }

    @Test("a segment after a quiet second is written at once; one put off goes out with the first packet a second after the last write")
    func putOffWriteGoesOutLater() {
        var schedule = PlaylistWriteSchedule(interval: 1_000_000)
        var writes: [Bool] = []
        writes.append(schedule.segmentAdded(at: 6_000_000))
        writes.append(schedule.segmentAdded(at: 6_500_000))
        writes.append(schedule.due(at: 6_900_000))
        writes.append(schedule.due(at: 7_000_000))
        writes.append(schedule.due(at: 9_000_000))  // nothing pending
        writes.append(schedule.segmentAdded(at: 12_000_000))
        // A timeline that steps back does not write early.
        writes.append(schedule.segmentAdded(at: 11_000_000))
        writes.append(schedule.due(at: 12_500_000))
        writes.append(schedule.due(at: 13_000_000))
        #expect(writes == [true, false, false, true, false, true, false, false, true])
    }
}
