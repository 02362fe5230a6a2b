// One composition, resolved from a request (or the CLI) into a running pipeline: the stage
// source, the encoder settings, and one sink per destination. Shared by `compose` and the
// daemon so both run exactly the same code.

public import Destinations
import Foundation
public import HLS
public import Layout
public import MediaCore
public import Pipeline
public import Storage
public import Logging
public import FFmpeg

public struct RecordingDestinationPlan: Sendable {
    public var destinationId: String
    /// Where the sink's objects go: straight to storage, or through a spool.
    public var makeUploads: @Sendable (Logger) -> any RecordingUploads
    public var encoderConfigurationId: String
    public var targetSegmentDurationSeconds: Int
    public var thumbnails: ThumbnailPlan?

    /// Objects go straight to `storage` through a bounded in-memory queue.
    public init(destinationId: String, storage: any ObjectStorage, encoderConfigurationId: String,
                targetSegmentDurationSeconds: Int = 2, thumbnails: ThumbnailPlan? = ThumbnailPlan()) {
        self.init(destinationId: destinationId, uploads: { UploadQueue(storage: storage, logger: $0) },
                  encoderConfigurationId: encoderConfigurationId, targetSegmentDurationSeconds: targetSegmentDurationSeconds,
                  thumbnails: thumbnails)
    }

    public init(destinationId: String, uploads: @escaping @Sendable (Logger) -> any RecordingUploads, encoderConfigurationId: String,
                targetSegmentDurationSeconds: Int = 2, thumbnails: ThumbnailPlan? = ThumbnailPlan()) {
        self.destinationId = destinationId
        self.thumbnails = thumbnails
        self.makeUploads = uploads
        self.encoderConfigurationId = encoderConfigurationId
        self.targetSegmentDurationSeconds = targetSegmentDurationSeconds
    }
}

/// A channel destination: push the composition to an IVS channel (or any RTMP ingest).
public struct ChannelDestinationPlan: Sendable {
    public var destinationId: String
    public var configuration: ChannelDestinationConfiguration

    public init(destinationId: String, configuration: ChannelDestinationConfiguration) {
        self.destinationId = destinationId
        self.configuration = configuration
    }
}

public struct CompositionPlan: Sendable {
    public var compositionId: String
    public var encoder: EncoderSpec
    public var layout: LayoutConfiguration
    public var recording: RecordingDestinationPlan?
    public var channel: ChannelDestinationPlan?
    /// x264 preset (speed/quality); "veryfast" suits live composition on small machines.
    public var preset: String
    /// Live publishers: encode without lookahead, trading a little compression for hundreds
    /// of milliseconds of latency.
    public var lowLatency: Bool
    /// How the work is done (the CLI's comparison switches; the daemon keeps the defaults).
    public var tuning: CompositionTuning
    /// Participants' gain and mute from the start (StartComposition's `audio` extension).
    public var audio: [String: ParticipantAudio]
    /// What it draws itself from the start (StartComposition's `overlays`), files decoded.
    public var overlays: PreparedOverlays?

    public init(compositionId: String, encoder: EncoderSpec, layout: LayoutConfiguration,
                recording: RecordingDestinationPlan?, channel: ChannelDestinationPlan? = nil, preset: String = "veryfast",
                lowLatency: Bool = false, tuning: CompositionTuning = CompositionTuning(), audio: [String: ParticipantAudio] = [:],
                overlays: PreparedOverlays? = nil) {
        self.overlays = overlays
        self.tuning = tuning
        self.audio = audio
        self.lowLatency = lowLatency
        self.compositionId = compositionId
        self.encoder = encoder
        self.layout = layout
        self.recording = recording
        self.channel = channel
        self.preset = preset
    }

    /// Keyframes on every segment boundary, and at least every 2 s when a channel is fed
    /// (IVS ingest wants ≤ 2 s; the HLS recording then cuts 2 s segments).
    public var keyframeIntervalSeconds: Int {
        let segment = recording?.targetSegmentDurationSeconds ?? 2
        return channel == nil ? segment : min(segment, 2)
    }

    /// x264 threads (0: x264's own choice, 1.5 per core; default: `EncoderSpec.defaultEncoderThreads`).
    public var encoderThreads: Int { tuning.encoderThreads ?? encoder.defaultEncoderThreads }

    public var videoSettings: VideoEncoderSettings {
        VideoEncoderSettings(width: encoder.width, height: encoder.height, frameRate: encoder.frameRate,
                             bitrate: encoder.bitrate,
                             keyframeInterval: encoder.framesPerSegment(seconds: keyframeIntervalSeconds),
                             preset: preset, threads: encoderThreads, lowLatency: lowLatency)
    }
}

/// A built composition, ready to run on the calling (media) thread.
public final class CompositionRunner {
    public let session: CompositionSession
    public let recordingSink: HLSRecordingSink?
    public let recordingLayout: RecordingLayout?
    public let channelSink: RTMPChannelSink?

    /// `channelEvents` receives the channel destination's events (on its sender thread);
    /// `clock` times its reconnect backoff; `director` brings a producer's changes while it runs;
    /// `viewers` is one more sink (WHEP playback).
    public init(plan: CompositionPlan, source: any StageSource, duration: MediaTime? = nil, logger: Logger,
                clock: any MediaClock = SystemMediaClock(), director: CompositionDirector? = nil,
                observer: @escaping (SessionEvent) -> Void = { _ in },
                channelEvents: @escaping @Sendable (ChannelEvent) -> Void = { _ in },
                viewers: (any PacketSink)? = nil) throws(PipelineError) {
        var sinks: [any PacketSink] = []
        let audio = AudioEncoderSettings()
        if let recording = plan.recording {
            let stageId = String(source.stageArn.split(separator: "/").last ?? "stage")
            let layout = RecordingLayout(stageId: stageId, compositionId: plan.compositionId, destinationId: recording.destinationId)
            let configuration = HLSRecordingConfiguration(
                layout: layout, stageArn: source.stageArn, encoderConfigurationId: recording.encoderConfigurationId,
                targetSegmentDurationSeconds: recording.targetSegmentDurationSeconds,
                video: plan.videoSettings, audioBitrate: audio.bitrate, thumbnails: recording.thumbnails)
            var sinkLogger = logger
            sinkLogger[metadataKey: "destination.id"] = "\(recording.destinationId)"
            let sink = HLSRecordingSink(name: "s3 destination \(recording.destinationId)", configuration: configuration,
                                        uploads: recording.makeUploads(sinkLogger), logger: sinkLogger)
            sinks.append(sink)
            recordingSink = sink
            recordingLayout = layout
        } else {
            recordingSink = nil
            recordingLayout = nil
        }
        if let channel = plan.channel {
            var sinkLogger = logger
            sinkLogger[metadataKey: "destination.id"] = "\(channel.destinationId)"
            let sink = RTMPChannelSink(name: "channel destination \(channel.destinationId)", configuration: channel.configuration,
                                       clock: clock, logger: sinkLogger, onEvent: channelEvents)
            sinks.append(sink)
            channelSink = sink
        } else {
            channelSink = nil
        }
        // Live viewers (WHEP) take the same encode.
        if let viewers { sinks.append(viewers) }
        var settings = CompositionSettings(video: plan.videoSettings, audio: audio,
                                           layout: plan.layout.makeEngine(), duration: duration, tuning: plan.tuning,
                                           stageChangeTransitionMs: plan.layout.transitionMs ?? 0, director: director,
                                           audioSettings: plan.audio, activeSpeaker: plan.layout.activeSpeaker)
        settings.overlays = plan.overlays
        if let recordingSink {
            // What it applies goes into the recording, for a re-render directed the same way.
            let log = DirectionLog(stageArn: source.stageArn)
            settings.directionLog = log
            settings.layoutConfiguration = plan.layout
            recordingSink.directions = { log.json() }
        }
        session = try CompositionSession(source: source, settings: settings, sinks: sinks, logger: logger, observer: observer)
    }
}
