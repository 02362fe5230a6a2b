// Generated stage sequences against the model (TestSupport/StageModel): seeded, shrunk to a
// minimal failing sequence, seed printed. Each sequence runs through the real stage code on a
// virtual clock and the real renderer (decoders, layout, compositor, mixer) without encoders:
// - live: LiveStageHub + LiveStageSource, synthetic publishers pushing real tiny H.264;
// - recorded: the same kind of sequence written as a manifest, through RecordedStageSource.
// At every tick, who has a tile (picture or camera-off), in which order, and whose audio is
// mixed must agree with the model. `STAGE_SEQUENCE_SEED=N` replays one seed.
import Foundation
@testable import FFmpeg
import Layout
@testable import LiveStage
import Logging
import MediaCore
import Pipeline
import Stages
import Synchronization
import Testing
import TestSupport

/// Tiny real H.264 (two picture sizes, a keyframe every `gop` frames at 10 fps), made once.
final class SyntheticVideo: @unchecked Sendable {
    struct Clip {
        var configuration: CodecConfiguration
        var frames: [RecordedPublisherMedia.Item]
    }

    let clips: [Clip]
    let gop: Int

    static let shared: SyntheticVideo = {
        do { return try SyntheticVideo(gop: 10) } catch { fatalError("cannot make synthetic video: \(error)") }
    }()

    init(gop: Int) throws {
        self.gop = gop
        clips = try ["64x36", "48x48"].map { size in
            let media = try RecordedPublisherMedia.make(videoSource: "testsrc2=size=\(size):rate=10", audioSource: "anullsrc=r=48000",
                                                        seconds: 6, bframes: 0, gop: gop)
            return Clip(configuration: media.video, frames: media.items.filter { $0.type == .video })
        }
    }
}

/// One generated case: the layout, and who does what when.
struct StageSequence: Sendable {
    var layout: ModelLayout
    var durationMs: Int64
    var steps: [TimedStageStep]
}

enum StageSequenceGenerator {
    static func traits(_ random: inout SeededGenerator) -> ParticipantTraits {
        let orders: [String?] = [nil, nil, nil, "1", "2", "3", "10", "a", "b"]
        return ParticipantTraits(featured: Int.random(in: 0..<6, using: &random) == 0, pip: Int.random(in: 0..<6, using: &random) == 0,
                                 order: orders.randomElement(using: &random)!)
    }

    static func layout(_ random: inout SeededGenerator) -> ModelLayout {
        ModelLayout(kind: Bool.random(using: &random) ? .grid : .pip, featuredAttribute: Bool.random(using: &random),
                    orderAttribute: Bool.random(using: &random), omitStoppedVideo: Int.random(in: 0..<3, using: &random) == 0)
    }

    /// Steps at 10 ms resolution over `durationMs`; joins dominate so stages fill up.
    static func sequence(_ random: inout SeededGenerator, timing: StageModelTiming, maxParticipants: Int) -> StageSequence {
        let duration = Int64.random(in: 6_000...12_000, using: &random)
        let count = Int.random(in: 4...28, using: &random)
        let participants = Int.random(in: 2...maxParticipants, using: &random)
        // Recorded timelines cannot change a participant's attributes: each keeps one set.
        let fixed = (0..<participants).map { _ in traits(&random) }
        var steps: [TimedStageStep] = []
        for _ in 0..<count {
            let at = Int64.random(in: 0...(duration - 1_000) / 10, using: &random) * 10
            let p = Int.random(in: 0..<participants, using: &random)
            if timing.supportsDirection, Int.random(in: 0..<100, using: &random) < 15 {
                // A producer directs: a new layout, or new attributes for a participant. A
                // recorded stage's directions fall on frames (100 ms), where a frame's lead
                // (participants seen half a frame ahead, directions at their frame) agrees.
                let step: StageStep = Bool.random(using: &random) ? .relayout(layout(&random)) : .setTraits(p, traits(&random))
                steps.append(TimedStageStep(atMs: timing.frameLeadMs > 0 ? at / 100 * 100 : at, step: step))
                continue
            }
            let roll = Int.random(in: 0..<100, using: &random)
            let step: StageStep = switch roll {
            case 0..<34: .join(p, timing.supportsNewTraits ? traits(&random) : fixed[p])
            case 34..<50: .leave(p)
            case 50..<60: timing.supportsKill ? .kill(p, detectedAfterMs: Int64.random(in: 0...150, using: &random) * 10) : .leave(p)
            case 60..<72: .stopVideo(p)
            case 72..<84: .startVideo(p)
            case 84..<92: timing.supportsResize ? .resize(p) : (timing.supportsMute ? .mute(p) : .stopVideo(p))
            default: timing.supportsMute ? (Bool.random(using: &random) ? .mute(p) : .unmute(p)) : .join(p, fixed[p])
            }
            steps.append(TimedStageStep(atMs: at, step: step))
        }
        // Stable: steps at the same instant keep the order they were made in.
        steps = steps.enumerated().sorted { ($0.element.atMs, $0.offset) < ($1.element.atMs, $1.offset) }.map(\.element)
        return StageSequence(layout: layout(&random), durationMs: duration, steps: steps)
    }
}

extension ModelLayout {
    /// The same layout as the API's configuration.
    var configuration: LayoutConfiguration {
        let featured = featuredAttribute ? "featured" : nil
        let order = orderAttribute ? "order" : nil
        switch kind {
        case .grid:
            return LayoutConfiguration(grid: GridConfiguration(featuredParticipantAttribute: featured, omitStoppedVideo: omitStoppedVideo,
                                                               participantOrderAttribute: order))
        case .pip:
            return LayoutConfiguration(pip: PipConfiguration(featuredParticipantAttribute: featured, omitStoppedVideo: omitStoppedVideo,
                                                             pipParticipantAttribute: "pip", participantOrderAttribute: order))
        }
    }

    /// The same layout in the compositor's configuration.
    var engine: any LayoutEngine { configuration.makeEngine() }
}

/// Renders ticks without encoding: a small canvas, the real compositor and mixer (its
/// samples are taken off in encoder-sized frames and dropped).
final class TickObserver {
    static let frameRate = Rational(10, 1)
    let renderer: StageRenderer
    private let output: RenderTarget

    /// The canvas and audio frame a runner reuses for all its sequences.
    final class RenderTarget {
        let canvas: Frame
        let audio: Encoder

        init() throws {
            let settings = VideoEncoderSettings(width: 128, height: 72, frameRate: TickObserver.frameRate, bitrate: 100_000,
                                                keyframeInterval: 10, preset: "ultrafast")
            let video = try Encoder(video: settings)
            canvas = try video.makeInputFrame()
            try video.prepareForWriting(canvas)
            audio = try Encoder(audio: AudioEncoderSettings())
        }
    }

    /// Half a frame at 10 fps, as CompositionSession sets it.
    static let frameLeadMs: Int64 = 50

    init(source: any StageSource, layout: ModelLayout, output: RenderTarget, logger: Logger) throws {
        self.output = output
        let compositor = VideoCompositor(canvas: output.canvas, layout: layout.engine, logger: logger)
        compositor.parallelDecoding = false
        compositor.frameLead = Self.frameLeadMs * 1000
        let mixer = AudioMixer(sampleRate: 48_000, frameRate: Self.frameRate, encoderFrame: try output.audio.makeInputFrame(),
                               frameSize: output.audio.frameSize)
        renderer = StageRenderer(source: source, compositor: compositor, mixer: mixer, frameRate: Self.frameRate)
    }

    /// What tick `tick` shows and mixes.
    func view(tick: Int64) throws -> StageView {
        renderer.render(tick: tick)
        while try renderer.mixer.nextEncoderFrame(encoder: output.audio) != nil {}
        return StageView(tiles: renderer.compositor.tiles.map { StageView.Tile(participant: $0.participantId, picture: $0.content == .video) },
                         audible: Set(renderer.mixer.audibleParticipants))
    }
}

/// Runs sequences through a live stage: LiveStageHub, LiveStageSource, synthetic publishers.
struct LiveStageSequenceRunner {
    static let latencyMs: Int64 = 200
    static let videoStoppedAfterMs: Int64 = 1_000
    static let timing = StageModelTiming(pictureDelayMs: latencyMs, cameraOffAfterMs: latencyMs + videoStoppedAfterMs, settleMs: 260,
                                         supportsMute: false, supportsKill: true, supportsResize: true, supportsNewTraits: true,
                                         supportsDirection: true,
                                         // Joins happen when they happen (the hub cannot see ahead); a leaver's
                                         // queued media plays out for the latency, ending on the tick nearest it.
                                         leaveShownAfterMs: latencyMs - TickObserver.frameLeadMs)
    let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/Sequence"
    let video: SyntheticVideo
    let output: TickObserver.RenderTarget

    final class Publisher {
        var connection: LivePublisher
        var clip: Int
        var frame = 0
        var mediaTime: Int64 = 0
        var sending = true
        var nextSendMs: Int64
        var leaveAtMs: Int64?

        init(connection: LivePublisher, clip: Int, startMs: Int64) {
            self.connection = connection
            self.clip = clip
            nextSendMs = startMs
        }
    }

    /// The first tick that breaks the model, or nil.
    func run(_ sequence: StageSequence, mutation: Mutation = .none) -> String? {
        var model = StageModel(timing: Self.timing, layout: sequence.layout)
        let clock = ManualMediaClock(start: .seconds(100))
        let hub = LiveStageHub(clock: clock, settings: LiveMediaSettings(latency: Self.latencyMs * 1000,
                                                                         videoStoppedAfter: Self.videoStoppedAfterMs * 1000))
        var logger = Logger(label: "stage-sequence")
        logger.logLevel = .critical
        let source = LiveStageSource(hub: hub, stageArn: stageArn, logger: logger)
        let origin = source.startClock()
        guard let observer = try? TickObserver(source: source, layout: sequence.layout, output: output, logger: logger) else {
            return "cannot make the renderer"
        }
        var publishers: [Int: Publisher] = [:]
        var pending = sequence.steps[...]
        var views: [(Int64, StageView)] = []
        // A layout change the `layoutChangeOneFrameLate` mutation holds back for one tick.
        var heldBack: CompositionDirection?
        var t: Int64 = 0
        while t <= sequence.durationMs {
            clock.advance(to: .microseconds(origin + t * 1000))
            // Kills the server notices now.
            for (index, publisher) in publishers where publisher.leaveAtMs.map({ $0 <= t }) ?? false {
                publisher.connection.leave()
                publishers[index] = nil
            }
            while let next = pending.first, next.atMs <= t {
                pending.removeFirst()
                guard model.apply(TimedStageStep(atMs: t, step: next.step)) else { continue }
                if case .relayout(let layout) = next.step {
                    let change = CompositionDirection(layout: layout.configuration)
                    if mutation == .layoutChangeOneFrameLate { heldBack = change } else { observer.renderer.direct(change) }
                    continue
                }
                perform(next.step, at: t, hub: hub, publishers: &publishers, mutation: mutation)
            }
            for publisher in publishers.values where publisher.sending && publisher.nextSendMs <= t {
                let clip = video.clips[publisher.clip]
                let item = clip.frames[publisher.frame % clip.frames.count]
                publisher.connection.push(.video, data: item.data, timestamp: publisher.mediaTime, isKeyframe: item.isKeyframe)
                publisher.frame += 1
                publisher.mediaTime += 100_000
                publisher.nextSendMs += 100
            }
            if t % 100 == 0 {
                guard let view = try? observer.view(tick: t / 100) else { return "the renderer failed at \(t) ms" }
                views.append((t, view))
                if let change = heldBack {
                    observer.renderer.direct(change)
                    heldBack = nil
                }
            }
            t += 10
        }
        // The model is complete only now (every applied step is known): check every tick.
        for (at, view) in views {
            if let violation = model.violation(observed: view, atMs: at) { return violation }
        }
        return nil
    }

    /// Ways to break the stage code on purpose, to see the property fail.
    enum Mutation: Sendable { case none, leaveHidesLaterJoiners, layoutChangeOneFrameLate, attributeChangeIgnored }

    private func perform(_ step: StageStep, at t: Int64, hub: LiveStageHub, publishers: inout [Int: Publisher], mutation: Mutation) {
        let index = step.participant
        switch step {
        case .join(_, let traits):
            let identity = LiveParticipantIdentity(participantId: StageModel.id(index), userId: "u\(index)", attributes: traits.attributes)
            let connection = hub.join(stageArn: stageArn, identity: identity)
            connection.announce(video.clips[0].configuration)
            publishers[index] = Publisher(connection: connection, clip: 0, startMs: t)
        case .leave:
            publishers[index]?.connection.leave()
            publishers[index] = nil
            if mutation == .leaveHidesLaterJoiners {
                for (other, publisher) in publishers where other > index {
                    publisher.connection.leave()
                    publishers[other] = nil
                }
            }
        case .kill(_, let after):
            publishers[index]?.sending = false
            publishers[index]?.leaveAtMs = t + after
        case .stopVideo:
            publishers[index]?.sending = false
        case .startVideo:
            guard let publisher = publishers[index] else { return }
            // An encoder that starts sending again starts with a keyframe.
            publisher.frame = (publisher.frame + video.gop - 1) / video.gop * video.gop
            publisher.sending = true
            publisher.nextSendMs = t
        case .resize:
            guard let publisher = publishers[index] else { return }
            publisher.clip = 1 - publisher.clip
            publisher.connection.announce(video.clips[publisher.clip].configuration)
            publisher.frame = 0
        case .setTraits(_, let traits):
            guard mutation != .attributeChangeIgnored else { return }
            hub.updateAttributes(stageArn: stageArn, participantId: StageModel.id(index), attributes: traits.attributes)
        case .mute, .unmute, .relayout:
            break
        }
    }
}

/// Runs sequences as recorded stages: each written as a manifest over one media file per
/// participant, composed through RecordedStageSource.
struct RecordedStageSequenceRunner {
    static let timing = StageModelTiming(pictureDelayMs: 0, cameraOffAfterMs: 0, settleMs: 60, supportsMute: true, supportsKill: false,
                                         supportsResize: false, supportsNewTraits: false, supportsDirection: true,
                                         frameLeadMs: TickObserver.frameLeadMs)
    static let maxDurationMs: Int64 = 12_000
    let mediaDirectory: URL
    let output: TickObserver.RenderTarget

    /// One media file per participant index (a test pattern and a tone, 10 fps), made once.
    static func makeMedia(count: Int) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stage-sequences-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for index in 0..<count {
            let run = try runTool("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y",
                                                      "-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10",
                                                      "-f", "lavfi", "-i", "sine=frequency=\(300 + 150 * index):sample_rate=48000",
                                                      "-t", "\(maxDurationMs / 1000 + 1)", "-c:v", "libx264", "-preset", "ultrafast",
                                                      "-g", "10", "-bf", "0", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "32k",
                                                      directory.appendingPathComponent("p\(index).mp4").path], keeping: .standardError)
            guard run.status == 0 else { throw StageError(file: "p\(index).mp4", message: run.text) }
        }
        return directory
    }

    func run(_ sequence: StageSequence) -> String? {
        var model = StageModel(timing: Self.timing, layout: sequence.layout)
        for step in sequence.steps { model.apply(step) }
        let stage = mediaDirectory.appendingPathComponent("stage-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: stage, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: stage) }
            try manifest(sequence, applied: model.applied, stage: stage).write(to: stage.appendingPathComponent("manifest.json"))
            var logger = Logger(label: "stage-sequence")
            logger.logLevel = .critical
            let recorded = try RecordedStage.load(from: stage.path)
            let source = try RecordedStageSource(stage: recorded, logger: logger)
            let observer = try TickObserver(source: source, layout: sequence.layout, output: output, logger: logger)
            var tick: Int64 = 0
            while tick * 100 <= sequence.durationMs {
                if let violation = model.violation(observed: try observer.view(tick: tick), atMs: tick * 100) { return violation }
                tick += 1
            }
            return nil
        } catch {
            return "the recorded stage could not be composed: \(error)"
        }
    }

    private func manifest(_ sequence: StageSequence, applied: [TimedStageStep], stage: URL) throws -> Data {
        var timelines: [Int: [[String: Any]]] = [:]
        var traits: [Int: ParticipantTraits] = [:]
        var directions: [[String: Any]] = []
        for step in applied {
            let event: String
            switch step.step {
            case .relayout(let layout):
                let json = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(layout.configuration))
                directions.append(["atMs": step.atMs, "layout": json])
                continue
            case .setTraits(let p, let t):
                directions.append(["atMs": step.atMs, "attributes": [StageModel.id(p): t.attributes]])
                continue
            case .join(let p, let t):
                event = "publish"
                traits[p] = t
            case .leave, .kill: event = "unpublish"
            case .stopVideo: event = "videoStopped"
            case .startVideo: event = "videoStarted"
            case .mute: event = "audioMuted"
            case .unmute: event = "audioUnmuted"
            case .resize: continue
            }
            timelines[step.step.participant, default: []].append(["atMs": step.atMs, "event": event])
        }
        // Listed in order of first publish: the manifest's order breaks ties of arrival.
        var listed: [Int] = []
        for step in applied where step.step.participant >= 0 && !listed.contains(step.step.participant) { listed.append(step.step.participant) }
        let participants: [[String: Any]] = try listed.map { index in
            // Media must lie inside the stage directory: a hard link costs nothing.
            try FileManager.default.linkItem(at: mediaDirectory.appendingPathComponent("p\(index).mp4"),
                                             to: stage.appendingPathComponent("p\(index).mp4"))
            return ["participantId": StageModel.id(index), "userId": "u\(index)", "attributes": traits[index]?.attributes ?? [:],
                    // The media starts when the participant first publishes, as a recording of it does.
                    "media": "p\(index).mp4", "mediaOffsetMs": timelines[index]?.first?["atMs"] ?? 0, "timeline": timelines[index] ?? []]
        }
        let object: [String: Any] = ["stageArn": "arn:aws:ivs:us-east-1:123456789012:stage/Recorded",
                                     "durationMs": sequence.durationMs, "participants": participants, "directions": directions]
        return try JSONSerialization.data(withJSONObject: object)
    }
}

@Suite struct StageSequenceTests {
    /// 2,000 live sequences in four parallel batches.
    @Test("generated live stage sequences: every tile, its order and every voice agree with the model at every tick",
          arguments: 0..<4)
    func liveSequences(batch: UInt64) async throws {
        let failure = try await onThread { () -> String? in
            let runner = LiveStageSequenceRunner(video: SyntheticVideo.shared, output: try TickObserver.RenderTarget())
            let seeds = PropertyCheck.seeds(count: 500, base: 22_000_000 + batch * 1_000)
            return PropertyCheck.check(seeds: seeds, generate: { random in
                let sequence = StageSequenceGenerator.sequence(&random, timing: LiveStageSequenceRunner.timing, maxParticipants: 5)
                return [SequenceStep.layout(sequence.layout, sequence.durationMs)] + sequence.steps.map(SequenceStep.step)
            }, property: { steps in
                runner.run(StageSequence(steps))
            })?.description
        }
        if let failure { Issue.record("\(failure)") }
    }

    @Test("generated recorded stages (the same kind of sequence as a manifest) agree with the model at every tick")
    func recordedSequences() async throws {
        let failure = try await onThread { () -> String? in
            let media = try RecordedStageSequenceRunner.makeMedia(count: 5)
            defer { try? FileManager.default.removeItem(at: media) }
            let runner = RecordedStageSequenceRunner(mediaDirectory: media, output: try TickObserver.RenderTarget())
            let seeds = PropertyCheck.seeds(count: 50, base: 22_500_000)
            return PropertyCheck.check(seeds: seeds, generate: { random in
                let sequence = StageSequenceGenerator.sequence(&random, timing: RecordedStageSequenceRunner.timing, maxParticipants: 5)
                return [SequenceStep.layout(sequence.layout, sequence.durationMs)] + sequence.steps.map(SequenceStep.step)
            }, property: { steps in
                runner.run(StageSequence(steps))
            })?.description
        }
        if let failure { Issue.record("\(failure)") }
    }

    /// The property must catch the faults it is there for: a leave that takes later joiners'
    /// tiles with it (issue 22's symptom), a layout change shown one frame late, an attribute
    /// change ignored (each made here by the harness) fail within the seeds.
    @Test("the live property fails when a leave hides later joiners, a layout change is a frame late, an attribute change is lost",
          arguments: [LiveStageSequenceRunner.Mutation.leaveHidesLaterJoiners, .layoutChangeOneFrameLate, .attributeChangeIgnored])
    func mutationIsCaught(mutation: LiveStageSequenceRunner.Mutation) async throws {
        let failure = try await onThread { () -> PropertyFailure? in
            let runner = LiveStageSequenceRunner(video: SyntheticVideo.shared, output: try TickObserver.RenderTarget())
            return PropertyCheck.check(seeds: Array(22_000_000..<22_000_500), generate: { random in
                let sequence = StageSequenceGenerator.sequence(&random, timing: LiveStageSequenceRunner.timing, maxParticipants: 5)
                return [SequenceStep.layout(sequence.layout, sequence.durationMs)] + sequence.steps.map(SequenceStep.step)
            }, property: { steps in
                runner.run(StageSequence(steps), mutation: mutation)
            })
        }
        #expect(failure != nil, "\(mutation) went unnoticed")
        if let failure { print("\(mutation) caught: \(failure)") }
    }
}

/// A sequence as the shrinker sees it: the layout line (never removed: it is first and a
/// sequence without it keeps the default) and the steps.
enum SequenceStep: CustomStringConvertible {
    case layout(ModelLayout, Int64)
    case step(TimedStageStep)

    var description: String {
        switch self {
        case .layout(let layout, let duration): "layout \(layout), \(duration) ms"
        case .step(let step): step.description
        }
    }
}

extension StageSequence {
    init(_ steps: [SequenceStep]) {
        var layout = ModelLayout(kind: .grid, featuredAttribute: false, orderAttribute: false, omitStoppedVideo: false)
        var duration: Int64?
        var timed: [TimedStageStep] = []
        for step in steps {
            switch step {
            case .layout(let l, let d):
                layout = l
                duration = d
            case .step(let s): timed.append(s)
            }
        }
        // Without its layout line (shrunk away) the stage lasts past its last step.
        self.init(layout: layout, durationMs: duration ?? max(8_000, (timed.map(\.atMs).max() ?? 0) + 1_000), steps: timed)
    }
}
