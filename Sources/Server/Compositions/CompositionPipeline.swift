// Runs a composition's media pipeline. CompositionSession.run is synchronous and CPU-heavy,
// so each composition gets its own dedicated Thread (never the Swift concurrency pool); it
// reports back through a callback that only enqueues (the manager's inbox), and stops when
// `requestStop()` flips a flag the session polls once per output frame.
import Foundation
import MediaCore
public import Pipeline
public import Destinations
import FFmpeg
public import Logging
public import LiveStage
import Stages
import Storage
import Synchronization
public import Composition
public import WHEP

/// Everything a pipeline needs: where the stage's media comes from and what to make of it
/// (CompositionPlanner's plan, as the runner takes it).
public struct PipelineJob: Sendable {
    /// The composition's stage ARN (the recording prefix uses its ID).
    public var stageArn: String
    /// Where the stage's publishers come from.
    public var source: StageMedia
    public var plan: CompositionPlan

    public var compositionId: String { plan.compositionId }
}

/// A stage's publishers: recorded (a stage directory, played in real time) or live (whoever
/// publishes on the stage through ingest).
public enum StageMedia: Sendable, Equatable {
    case recorded(path: String)
    case live
}

/// What a running pipeline tells its owner.
public enum PipelineReport: Sendable, Equatable {
    case session(SessionEvent)
    /// The channel destination's connection changed (from its sender thread).
    case channel(destinationId: String, ChannelEvent)
    /// The pipeline thread is done and every sink is finished (playlist final, metadata
    /// written). `failure` is nil after a requested stop.
    case finished(failure: String?)
}

public protocol PipelineHandle: Sendable {
    /// Asks the pipeline to stop after the current frame, flush and finish its outputs.
    func requestStop()
    /// Hands a producer's change to the pipeline, for its next output frame.
    func direct(_ change: CompositionDirection)
}

public protocol CompositionPipelineLauncher: Sendable {
    /// Starts the pipeline; `report` is called from the pipeline's own thread and must
    /// return quickly.
    func launch(_ job: PipelineJob, logger: Logger, report: @escaping @Sendable (PipelineReport) -> Void) -> any PipelineHandle
}

/// The real pipeline, one Foundation Thread per composition, paced in real time.
public struct ThreadedPipelineLauncher: CompositionPipelineLauncher {
    let metrics: ServerMetrics?
    let realTime: Bool
    /// Live stages' publishers.
    let hub: LiveStageHub?
    /// Each composition's WHEP viewers.
    let viewers: WHEPFeeds?

    /// - Parameter realTime: false composes as fast as possible (tests only).
    public init(metrics: ServerMetrics?, realTime: Bool = true, hub: LiveStageHub? = nil, viewers: WHEPFeeds? = nil) {
        self.metrics = metrics
        self.realTime = realTime
        self.hub = hub
        self.viewers = viewers
    }

    final class StopFlag: PipelineHandle {
        let flag = Atomic<Bool>(false)
        /// Changes wait here until the session takes them (also while a live composition
        /// waits for its first publisher).
        let director = CompositionDirector()
        func requestStop() { flag.store(true, ordering: .relaxed) }
        func direct(_ change: CompositionDirection) { director.post(change) }
        var isSet: Bool { flag.load(ordering: .relaxed) }
    }

    public func launch(_ job: PipelineJob, logger: Logger, report: @escaping @Sendable (PipelineReport) -> Void) -> any PipelineHandle {
        let stop = StopFlag()
        let metrics = self.metrics
        let realTime = self.realTime
        let hub = self.hub
        // Viewers may join while the composition waits for its first publisher.
        let feeds = viewers
        let feed = feeds?.makeFeed(compositionId: job.compositionId, director: stop.director)
        let thread = Thread {
            let failure = Self.run(job, logger: logger, stop: stop, metrics: metrics, realTime: realTime, hub: hub, viewers: feed,
                                   report: report)
            if let feed { feeds?.unregister(compositionId: job.compositionId, feed: feed) }
            report(.finished(failure: failure))
        }
        thread.name = "composition-\(job.compositionId)"
        thread.stackSize = 16 << 20
        thread.start()
        return stop
    }

    /// The pipeline thread's body; returns the failure, nil after a clean stop.
    static func run(_ job: PipelineJob, logger: Logger, stop: StopFlag, metrics: ServerMetrics?, realTime: Bool,
                    hub: LiveStageHub?, viewers: WHEPFeed? = nil, report: @escaping @Sendable (PipelineReport) -> Void) -> String? {
        do {
            let source: any StageSource
            var live: LiveStageSource?
            switch job.source {
            case .recorded(let path):
                let stage = try RecordedStage.load(from: path)
                let recorded = try RecordedStageSource(stage: stage, logger: logger)
                source = LiveRecordedStageSource(wrapping: recorded, stageArn: job.stageArn)
            case .live:
                guard let hub else { return "live stages are not enabled on this server" }
                let liveSource = LiveStageSource(hub: hub, stageArn: job.stageArn, logger: logger)
                // As IVS does, a composition on an empty stage waits (STARTING) for its first
                // publisher; the lifecycle's idle timeout ends the wait.
                if !waitForFirstPublisher(hub: hub, stageArn: job.stageArn, stop: stop) { return nil }
                live = liveSource
                source = liveSource
            }
            let channelId = job.plan.channel?.destinationId ?? ""
            let runner = try CompositionRunner(plan: job.plan, source: source, duration: nil, logger: logger, director: stop.director,
                                               observer: { event in report(.session(event)) },
                                               channelEvents: { event in report(.channel(destinationId: channelId, event)) },
                                               viewers: viewers)
            var lastFrames: Int64 = 0
            var lastLagged: Int64 = 0
            var workStarted: Int64 = 0
            var lastUploaded: Int64 = 0
            var lastSent: Int64 = 0
            let countOutputBytes = {
                guard let metrics else { return }
                let uploaded = runner.recordingSink?.bytesUploaded ?? 0
                let sent = runner.channelSink?.bytesSent ?? 0
                metrics.outputBytes["s3"]?.increment(by: uploaded - lastUploaded)
                metrics.outputBytes["channel"]?.increment(by: sent - lastSent)
                lastUploaded = uploaded
                lastSent = sent
            }
            defer { countOutputBytes() }
            let compositionMetrics = metrics?.composition(job.compositionId)
            let liveStage = live
            defer { compositionMetrics?.destroy() }
            let progress: (CompositionProgress) -> Void = { progress in
                countOutputBytes()
                guard let metrics else { return }
                metrics.framesComposed.increment(by: progress.frames - lastFrames)
                metrics.framesDropped.increment(by: progress.laggedFrames - lastLagged)
                if progress.laggedFrames != lastLagged || progress.frames % 30 == 0 {
                    compositionMetrics?.record(laggedFrames: progress.laggedFrames)
                }
                if progress.frames % 30 == 0, let liveStage { compositionMetrics?.record(delivery: liveStage.delivery()) }
                lastFrames = progress.frames
                lastLagged = progress.laggedFrames
                metrics.frameWorkTime.recordNanoseconds(max(0, RealtimePacer.nowNanoseconds() - workStarted))
            }
            let result: CompositionResult
            if let live {
                // Time zero once the encoders and outputs are open, so the first frames are on time.
                live.startClock()
                var pacer = MeasuringPacer(base: live.makePacer()) { workStarted = $0 }
                result = try runner.session.run(pacer: &pacer, shouldStop: { stop.isSet }, progress: progress)
            } else if realTime {
                var pacer = MeasuringPacer(base: RealtimePacer()) { workStarted = $0 }
                result = try runner.session.run(pacer: &pacer, shouldStop: { stop.isSet }, progress: progress)
            } else {
                var pacer = MeasuringPacer(base: AsFastAsPossiblePacer()) { workStarted = $0 }
                result = try runner.session.run(pacer: &pacer, shouldStop: { stop.isSet }, progress: progress)
            }
            logger.notice("composition ended", metadata: Self.endMetadata(result, recordingPrefix: runner.recordingLayout?.prefix))
            return nil
        } catch {
            logger.error("composition pipeline failed", metadata: ["error": "\(error)"])
            return "\(error)"
        }
    }
}

extension ThreadedPipelineLauncher {
    /// One log line when a composition's media ends: where its recording is, how long it ran,
    /// how many frames it made and repeated, and which outputs failed on the way.
    static func endMetadata(_ result: CompositionResult, recordingPrefix: String?) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "duration_s": "\(String(format: "%.3f", Double(result.duration.microsecondsValue) / 1_000_000))",
            "frames": "\(result.frames)", "frames.lagged": "\(result.laggedFrames)", "audio.samples": "\(result.audioSamples)",
            "layout.changes": "\(result.layoutChanges)",
        ]
        if let recordingPrefix { metadata["recording.prefix"] = "\(recordingPrefix)" }
        if !result.failedSinks.isEmpty {
            metadata["outputs.failed"] = "\(result.failedSinks.keys.sorted().joined(separator: ", "))"
        }
        return metadata
    }
}

/// Blocks (on the pipeline's own thread) until someone publishes on the stage; false if the
/// composition was stopped first.
private func waitForFirstPublisher(hub: LiveStageHub, stageArn: String, stop: ThreadedPipelineLauncher.StopFlag) -> Bool {
    while hub.publishers(stageArn: stageArn).isEmpty {
        if stop.isSet { return false }
        var request = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        var left = timespec()
        _ = nanosleep(&request, &left)
    }
    return !stop.isSet
}

/// Notes when each frame's work starts (after the pacer's wait), for the encode-time metric.
struct MeasuringPacer<Base: Pacer>: Pacer {
    var base: Base
    let started: (Int64) -> Void

    mutating func wait(until stageTime: MediaTime) -> Int64 {
        let late = base.wait(until: stageTime)
        started(RealtimePacer.nowNanoseconds())
        return late
    }
}

extension RealtimePacer {
    static func nowNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// A recorded stage played as a live one: no end of its own (the daemon composes until
/// stopped), and once its recorded length has passed every participant has left, so the
/// idle timeout (60 s) ends the composition as it would on a real stage. It also carries
/// the composition's stage ARN, which names the recording's folder.
final class LiveRecordedStageSource: StageSource {
    private let recorded: any StageSource
    let stageArn: String
    private let endMs: Int64?

    init(wrapping recorded: any StageSource, stageArn: String) {
        self.recorded = recorded
        self.stageArn = stageArn
        endMs = recorded.duration?.millisecondsValue
    }

    func participants(at stageTime: MediaTime) -> [StageParticipantState] {
        let states = recorded.participants(at: stageTime)
        guard let endMs, stageTime.millisecondsValue >= endMs else { return states }
        return states.map { var state = $0; state.isPublished = false; return state }
    }

    func subscriber(for participantId: String) -> ParticipantSubscriber? { recorded.subscriber(for: participantId) }

    var duration: MediaTime? { nil }

    var scheduledDirections: [ScheduledDirection] { recorded.scheduledDirections }
}
