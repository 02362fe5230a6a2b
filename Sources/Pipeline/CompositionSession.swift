// Runs one composition: a fixed tick at the output frame rate drives everything.
//
//   for each output frame n (stage time n/fps):
//     stage state at t ─► VideoCompositor (layout → scale tiles into canvas) ─► H.264 ─┐
//                      └► AudioMixer (48 kHz stereo, limiter) ─► AAC ───────────────────┴► sinks
//
// Real-time or as fast as possible is only the Pacer; the code path is the same.

public import FFmpeg
public import Layout
public import MediaCore
public import Logging

/// How a composition does its work, never what it makes: switches the CLI offers for
/// comparisons (the daemon keeps the defaults). One value from the command line to the
/// compositor.
public struct CompositionTuning: Sendable, Equatable {
    /// Keep a tile's pixels while its picture and place are unchanged (off: redraw every
    /// tile every tick; the output is the same, which the tests check).
    public var reuseUnchangedTiles: Bool
    /// x264 threads (0: x264's own choice; nil: `EncoderSpec.defaultEncoderThreads`).
    public var encoderThreads: Int?
    /// Decode participants side by side (off: in turn; for comparisons).
    public var parallelDecoding: Bool
    /// Decode the video of participants who are not shown too (for comparisons; see
    /// `VideoCompositor.decodeHiddenVideo`).
    public var decodeHiddenVideo: Bool

    public init(reuseUnchangedTiles: Bool = true, encoderThreads: Int? = nil, parallelDecoding: Bool = true,
                decodeHiddenVideo: Bool = false) {
        self.reuseUnchangedTiles = reuseUnchangedTiles
        self.encoderThreads = encoderThreads
        self.parallelDecoding = parallelDecoding
        self.decodeHiddenVideo = decodeHiddenVideo
    }
}

public struct CompositionSettings {
    public var video: VideoEncoderSettings
    public var audio: AudioEncoderSettings
    public var layout: any LayoutEngine
    /// Stop after this much output. Nil: the source's duration, or until `shouldStop`.
    public var duration: MediaTime?
    public var tuning: CompositionTuning
    /// How long tiles glide and fade when the stage changes (the layout's `transitionMs`).
    public var stageChangeTransitionMs: Int
    /// Where a producer's changes come from while it runs (nil: the layout is fixed).
    public var director: CompositionDirector?
    /// Participants' gain and mute from the start.
    public var audioSettings: [String: ParticipantAudio]
    /// Follow the active speaker from the start (the layout's `featured: ACTIVE_SPEAKER`).
    public var activeSpeaker: ActiveSpeakerSettings?
    /// Keeps what the composition applied (for the recording's `events/directions.json`).
    public var directionLog: DirectionLog?
    /// The layout it starts with, as configured (the log's first entry).
    public var layoutConfiguration: LayoutConfiguration?
    /// The overlays it starts with (StartComposition's, `compose --overlays`), prepared.
    public var overlays: PreparedOverlays?

    public init(video: VideoEncoderSettings, audio: AudioEncoderSettings = AudioEncoderSettings(),
                layout: any LayoutEngine, duration: MediaTime? = nil, tuning: CompositionTuning = CompositionTuning(),
                stageChangeTransitionMs: Int = 0, director: CompositionDirector? = nil,
                audioSettings: [String: ParticipantAudio] = [:], activeSpeaker: ActiveSpeakerSettings? = nil) {
        self.activeSpeaker = activeSpeaker
        self.stageChangeTransitionMs = stageChangeTransitionMs
        self.director = director
        self.audioSettings = audioSettings
        self.video = video
        self.audio = audio
        self.layout = layout
        self.duration = duration
        self.tuning = tuning
    }
}

public struct CompositionProgress: Sendable, Equatable {
    public var frames: Int64
    public var composed: MediaTime
    /// Frames that were due before the previous one was done (real-time only): repeated.
    public var laggedFrames: Int64
    public var publishers: Int
}

public struct CompositionResult: Sendable, Equatable {
    public var frames: Int64
    public var audioSamples: Int64
    public var duration: MediaTime
    public var layoutChanges: Int
    public var laggedFrames: Int64
    /// Tiles scaled into the canvas, and tiles whose pixels were kept (unchanged picture).
    public var tilesScaled: Int64
    public var tilesReused: Int64
    /// Sinks that failed during the run, with the reason (the others went on).
    public var failedSinks: [String: String]

    public init(frames: Int64, audioSamples: Int64, duration: MediaTime, layoutChanges: Int, laggedFrames: Int64,
                tilesScaled: Int64, tilesReused: Int64, failedSinks: [String: String]) {
        self.frames = frames
        self.audioSamples = audioSamples
        self.duration = duration
        self.layoutChanges = layoutChanges
        self.laggedFrames = laggedFrames
        self.tilesScaled = tilesScaled
        self.tilesReused = tilesReused
        self.failedSinks = failedSinks
    }
}

/// Things the owner (CLI or daemon) wants to know as they happen.
public enum SessionEvent: Sendable, Equatable {
    /// The first frame was encoded: media is flowing (composition ACTIVE).
    case mediaFlowing
    /// A sink accepted its first packet.
    case sinkActive(name: String, destinationId: String?)
    /// A sink failed and was dropped; the composition goes on if others remain.
    case sinkFailed(name: String, destinationId: String?, reason: String)
    /// Number of publishing participants changed.
    case publishersChanged(Int, at: MediaTime)
    /// A producer's change was applied from the output frame at this composition time on.
    case directed(CompositionDirection, at: MediaTime)
    /// The active speaker changed (nil: none), heard up to this composition time.
    case activeSpeaker(String?, at: MediaTime)
}

public final class CompositionSession {
    private let source: any StageSource
    private let settings: CompositionSettings
    private var sinks: [any PacketSink]
    private let logger: Logger
    private let videoEncoder: Encoder
    private let audioEncoder: Encoder
    private let renderer: StageRenderer
    private var compositor: VideoCompositor { renderer.compositor }
    private var mixer: AudioMixer { renderer.mixer }
    private let packet = Packet()
    private var failedSinks: [String: String] = [:]
    private var activeSinks: Set<String> = []
    /// The viewers' Opus encoder, its input frame and output packet, once a sink wanted them.
    private var viewerAudio: (Encoder, Frame, Packet)?
    private var viewerAudioFailed = false
    private let observer: (SessionEvent) -> Void

    public init(source: any StageSource, settings: CompositionSettings, sinks: [any PacketSink],
                logger: Logger, observer: @escaping (SessionEvent) -> Void = { _ in }) throws(PipelineError) {
        self.source = source
        self.settings = settings
        self.sinks = sinks
        self.logger = logger
        self.observer = observer
        do {
            videoEncoder = try Encoder(video: settings.video)
            audioEncoder = try Encoder(audio: settings.audio)
            let compositor = VideoCompositor(canvas: try videoEncoder.makeInputFrame(), layout: settings.layout, logger: logger)
            compositor.reuseUnchangedTiles = settings.tuning.reuseUnchangedTiles
            compositor.parallelDecoding = settings.tuning.parallelDecoding
            compositor.decodeHiddenVideo = settings.tuning.decodeHiddenVideo
            compositor.frameLead = settings.video.frameRate.inverted.rescale(1, to: MediaTime.microseconds) / 2
            compositor.stageChangeTransition = Int64(settings.stageChangeTransitionMs) * 1000
            let mixer = AudioMixer(sampleRate: settings.audio.sampleRate, frameRate: settings.video.frameRate,
                                   encoderFrame: try audioEncoder.makeInputFrame(), frameSize: audioEncoder.frameSize)
            mixer.setAudio(settings.audioSettings)
            renderer = StageRenderer(source: source, compositor: compositor, mixer: mixer, frameRate: settings.video.frameRate)
            renderer.followSpeakers(settings.activeSpeaker)
            // The initial overlays take the same path as a change, before the first frame.
            if let overlays = settings.overlays { renderer.direct(CompositionDirection(overlays: overlays)) }
        } catch {
            throw .encoder(error.description)
        }
    }

    /// Composes until the duration is reached or `shouldStop` says so, then flushes the
    /// encoders and finishes every sink. Throws only if no sink could be kept alive.
    public func run(pacer: inout some Pacer, shouldStop: () -> Bool = { false },
                    progress: (CompositionProgress) -> Void = { _ in }) throws(PipelineError) -> CompositionResult {
        let wallClockOrigin = source.wallClockOriginMs
        if let log = settings.directionLog {
            log.startedAtMs = wallClockOrigin
            if let layout = settings.layoutConfiguration {
                log.start(CompositionDirection(layout: layout, audio: settings.audioSettings, overlays: settings.overlays))
            }
        }
        for sink in sinks {
            do {
                if let wallClockOrigin { sink.anchor(wallClockOriginMs: wallClockOrigin) }
                try sink.start(video: videoEncoder, audio: audioEncoder)
            } catch {
                dropSink(sink, reason: error.description)
            }
        }
        guard !sinks.isEmpty else { throw .output(failedSinks.values.sorted().joined(separator: "; ")) }

        let frameDuration = settings.video.frameRate.inverted
        let limit = settings.duration ?? source.duration
        let totalFrames: Int64? = limit.map { MediaTime.microseconds.rescaleCeil($0.microsecondsValue, to: frameDuration) }
        var tick: Int64 = 0
        var lagged: Int64 = 0
        var publishers = -1
        var stopError: PipelineError?
        // Keyframes asked for (WHEP viewers): at the next frame, but a second apart at least.
        let keyframeSpacing = Int64((Double(settings.video.frameRate.numerator) / Double(max(1, settings.video.frameRate.denominator))).rounded(.up))
        var lastKeyframeTick = Int64.min / 2
        var keyframeWanted = false

        while totalFrames.map({ tick < $0 }) ?? true, !shouldStop() {
            let stageTime = MediaTime(ticks: tick, timeBase: frameDuration)
            let late = pacer.wait(until: stageTime)
            // Behind real time: repeat the previous picture instead of composing a new one.
            let lagging = late > frameDuration.rescale(1, to: MediaTime.microseconds) && tick > 0
            if lagging {
                lagged += 1
                logger.debug("behind the clock: repeating the previous picture",
                             metadata: ["tick": "\(tick)", "late.ms": "\(late / 1000)", "lagged": "\(lagged)"])
            } else {
                do { try videoEncoder.prepareForWriting(compositor.canvas) } catch { stopError = .encoder(error.description); break }
            }
            if let change = settings.director?.take() {
                renderer.direct(change)
                told(change, at: stageTime)
            }
            // (A recorded stage's own directions are applied by the renderer.)
            let participants = renderer.render(tick: tick, repeatPicture: lagging)
            for change in renderer.appliedDirections { told(change, at: stageTime) }
            settings.directionLog?.observe(participants, atMicroseconds: stageTime.microsecondsValue)
            if renderer.speakerSwitchedAt != nil {
                renderer.speakerSwitchedAt = nil
                let speaker = renderer.speakers?.speaker
                observer(.activeSpeaker(speaker, at: stageTime))
                logger.info("active speaker", metadata: ["participant.id": "\(speaker ?? "none")", "at.ms": "\(stageTime.millisecondsValue)"])
            }
            let publishing = participants.lazy.filter(\.isPublished).count
            if publishing != publishers {
                publishers = publishing
                observer(.publishersChanged(publishing, at: stageTime))
            }
            compositor.canvas.pts = tick
            for sink in sinks {
                do { try sink.composed(compositor.canvas, tick: tick) } catch { dropSink(sink, reason: error.description) }
            }
            do {
                // Media flows from the first frame on: say so before any packet reaches a sink
                // (an encoder without lookahead hands out the first packet at once, and a
                // sink's "active" must not come before the composition's).
                if tick == 0 { observer(.mediaFlowing) }
                if settings.director?.takeKeyframeRequest() == true { keyframeWanted = true }
                var forceKeyframe = tick % Int64(settings.video.keyframeInterval) == 0
                if keyframeWanted, tick - lastKeyframeTick >= keyframeSpacing { forceKeyframe = true }
                if forceKeyframe {
                    lastKeyframeTick = tick
                    keyframeWanted = false
                }
                try encode(videoEncoder, frame: compositor.canvas, forceKeyframe: forceKeyframe, media: .video)
                while let frame = try mixer.nextEncoderFrame(encoder: audioEncoder) {
                    try encode(audioEncoder, frame: frame, forceKeyframe: false, media: .audio)
                }
                encodeViewerAudio()
            } catch let error as PipelineError {
                stopError = error
                break
            } catch {
                stopError = .encoder("\(error)")
                break
            }
            tick += 1
            progress(CompositionProgress(frames: tick, composed: MediaTime(ticks: tick, timeBase: frameDuration),
                                         laggedFrames: lagged, publishers: publishing))
        }

        if stopError == nil {
            do {
                while let frame = try mixer.nextEncoderFrame(flush: true, encoder: audioEncoder) {
                    try encode(audioEncoder, frame: frame, forceKeyframe: false, media: .audio)
                }
                try encode(videoEncoder, frame: nil, forceKeyframe: false, media: .video)
                try encode(audioEncoder, frame: nil, forceKeyframe: false, media: .audio)
            } catch let error as PipelineError {
                stopError = error
            } catch {
                stopError = .encoder("\(error)")
            }
        }
        for sink in sinks {
            do {
                try sink.finish(failure: stopError?.description)
            } catch {
                failedSinks[sink.name] = error.description
                observer(.sinkFailed(name: sink.name, destinationId: sink.destinationId, reason: error.description))
            }
        }
        if let stopError { throw stopError }
        return CompositionResult(frames: tick, audioSamples: mixer.encodedSamples,
                                 duration: MediaTime(ticks: tick, timeBase: frameDuration),
                                 layoutChanges: compositor.layoutChanges, laggedFrames: lagged,
                                 tilesScaled: compositor.tilesScaled, tilesReused: compositor.tilesReused, failedSinks: failedSinks)
    }

    /// A producer's change applied from this frame on: told, logged, kept for the recording.
    private func told(_ change: CompositionDirection, at stageTime: MediaTime) {
        settings.directionLog?.record(change, atMicroseconds: stageTime.microsecondsValue)
        observer(.directed(change, at: stageTime))
        logger.info("composition directed", metadata: ["at.ms": "\(stageTime.millisecondsValue)",
                                                       "layout.changed": "\(change.layout != nil)",
                                                       "transition.ms": "\(change.transitionMs)",
                                                       "audio.participants": "\(change.audio.count)",
                                                       "overlays.changed": "\(change.overlays != nil)"])
    }

    /// Sends one frame (nil: flush) and hands every packet that comes out to the sinks.
    private func encode(_ encoder: Encoder, frame: Frame?, forceKeyframe: Bool, media: MediaType) throws {
        var result: SendResult
        do { result = try encoder.send(frame, forceKeyframe: forceKeyframe) } catch { throw PipelineError.encoder(error.description) }
        while true {
            let received: ReceiveResult
            do { received = try encoder.receive(into: packet) } catch { throw PipelineError.encoder(error.description) }
            guard received == .frame else {
                if result == .outputFull, let frame {
                    do { result = try encoder.send(frame, forceKeyframe: forceKeyframe) } catch { throw PipelineError.encoder(error.description) }
                    continue
                }
                return
            }
            deliver(packet, media: media)
        }
    }

    /// The mix once more as Opus while a sink wants it (WebRTC viewers): the encoder is made
    /// the first time, the tap queues from the next tick. A failure stops the viewers' audio,
    /// not the composition.
    private func encodeViewerAudio() {
        let wanted = !viewerAudioFailed && sinks.contains { $0.wantsViewerAudio }
        if mixer.tapEnabled != wanted { mixer.tapEnabled = wanted }
        guard wanted else { return }
        do {
            if viewerAudio == nil {
                let encoder = try Encoder(opusBitrate: 64_000)
                viewerAudio = (encoder, try encoder.makeInputFrame(), Packet())
            }
            guard let (encoder, frame, opusPacket) = viewerAudio else { return }
            while let input = try mixer.nextTapFrame(into: frame, size: encoder.frameSize, encoder: encoder) {
                _ = try encoder.send(input)
                while try encoder.receive(into: opusPacket) == .frame {
                    for sink in sinks where sink.wantsViewerAudio {
                        do { try sink.writeViewerAudio(opusPacket) } catch { logger.warning("viewer audio refused", metadata: ["sink": "\(sink.name)", "error": "\(error)"]) }
                    }
                }
            }
        } catch {
            viewerAudioFailed = true
            mixer.tapEnabled = false
            logger.error("viewer audio (Opus) stopped", metadata: ["error": "\(error)"])
        }
    }

    private func deliver(_ packet: Packet, media: MediaType) {
        var index = 0
        while index < sinks.count {
            let sink = sinks[index]
            do {
                try sink.write(packet, media: media)
                if activeSinks.insert(sink.name).inserted { observer(.sinkActive(name: sink.name, destinationId: sink.destinationId)) }
                index += 1
            } catch {
                dropSink(sink, reason: error.description)
            }
        }
        if sinks.isEmpty {
            // Nothing left to write to: the composition cannot go on.
            logger.error("every output failed", metadata: ["failures": "\(failedSinks)"])
        }
    }

    private func dropSink(_ sink: any PacketSink, reason: String) {
        logger.error("output failed; continuing without it", metadata: ["destination": "\(sink.name)", "reason": "\(reason)"])
        failedSinks[sink.name] = reason
        sinks.removeAll { $0 === sink }
        try? sink.finish(failure: reason)
        observer(.sinkFailed(name: sink.name, destinationId: sink.destinationId, reason: reason))
    }
}

extension Rational {
    /// ceil(value × self / target).
    func rescaleCeil(_ value: Int64, to target: Rational) -> Int64 {
        let down = rescaleDown(value, to: target)
        return target.rescaleDown(down, to: self) == value && rescale(value, to: target) == down ? down : down + 1
    }
}
