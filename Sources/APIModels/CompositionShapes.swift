// Composition shapes of the ivs-realtime model, field for field. Optional members stay
// optional so that a request round-trips unchanged; `withDefaults()` fills in what IVS
// reports back (segment duration 2 s, thumbnails every 60 s SEQUENTIAL, format HLS).
// The composition and destination states are Lifecycle's own (CompositionState,
// DestinationState): one vocabulary from the API to the state machine and the sinks.
public import Layout
public import Lifecycle
public import MediaCore

public typealias Tags = [String: String]

public enum RecordingConfigurationFormat: String, Codable, Sendable, CaseIterable {
    case hls = "HLS"
}

public enum ThumbnailStorageType: String, Codable, Sendable, CaseIterable {
    case sequential = "SEQUENTIAL", latest = "LATEST"
}

public struct ChannelDestinationConfiguration: Codable, Hashable, Sendable {
    public var channelArn: String
    public var encoderConfigurationArn: String?

    public init(channelArn: String, encoderConfigurationArn: String? = nil) {
        self.channelArn = channelArn
        self.encoderConfigurationArn = encoderConfigurationArn
    }
}

public struct CompositionRecordingHlsConfiguration: Codable, Hashable, Sendable {
    public var targetSegmentDurationSeconds: Int?

    public static let defaultTargetSegmentDurationSeconds = 2

    public init(targetSegmentDurationSeconds: Int? = nil) {
        self.targetSegmentDurationSeconds = targetSegmentDurationSeconds
    }
}

public struct RecordingConfiguration: Codable, Hashable, Sendable {
    public var hlsConfiguration: CompositionRecordingHlsConfiguration?
    public var format: RecordingConfigurationFormat?

    public init(hlsConfiguration: CompositionRecordingHlsConfiguration? = nil, format: RecordingConfigurationFormat? = nil) {
        self.hlsConfiguration = hlsConfiguration
        self.format = format
    }

    public func withDefaults() -> RecordingConfiguration {
        RecordingConfiguration(
            hlsConfiguration: CompositionRecordingHlsConfiguration(
                targetSegmentDurationSeconds: hlsConfiguration?.targetSegmentDurationSeconds
                    ?? CompositionRecordingHlsConfiguration.defaultTargetSegmentDurationSeconds),
            format: format ?? .hls)
    }
}

public struct CompositionThumbnailConfiguration: Codable, Hashable, Sendable {
    public var targetIntervalSeconds: Int?
    public var storage: [ThumbnailStorageType]?

    public static let defaultTargetIntervalSeconds = 60
    public static let defaultStorage: [ThumbnailStorageType] = [.sequential]

    public init(targetIntervalSeconds: Int? = nil, storage: [ThumbnailStorageType]? = nil) {
        self.targetIntervalSeconds = targetIntervalSeconds
        self.storage = storage
    }

    public func withDefaults() -> CompositionThumbnailConfiguration {
        CompositionThumbnailConfiguration(
            targetIntervalSeconds: targetIntervalSeconds ?? Self.defaultTargetIntervalSeconds,
            storage: storage ?? Self.defaultStorage)
    }
}

public struct S3DestinationConfiguration: Codable, Hashable, Sendable {
    public var storageConfigurationArn: String
    public var encoderConfigurationArns: [String]
    public var recordingConfiguration: RecordingConfiguration?
    public var thumbnailConfigurations: [CompositionThumbnailConfiguration]?

    public init(storageConfigurationArn: String, encoderConfigurationArns: [String],
                recordingConfiguration: RecordingConfiguration? = nil,
                thumbnailConfigurations: [CompositionThumbnailConfiguration]? = nil) {
        self.storageConfigurationArn = storageConfigurationArn
        self.encoderConfigurationArns = encoderConfigurationArns
        self.recordingConfiguration = recordingConfiguration
        self.thumbnailConfigurations = thumbnailConfigurations
    }

    public func withDefaults() -> S3DestinationConfiguration {
        var copy = self
        copy.recordingConfiguration = (recordingConfiguration ?? RecordingConfiguration()).withDefaults()
        copy.thumbnailConfigurations = thumbnailConfigurations.map { $0.map { $0.withDefaults() } }
        return copy
    }
}

/// One requested output: exactly one of `channel` or `s3`.
public struct DestinationConfiguration: Codable, Hashable, Sendable {
    public var name: String?
    public var channel: ChannelDestinationConfiguration?
    public var s3: S3DestinationConfiguration?

    public init(name: String? = nil, channel: ChannelDestinationConfiguration? = nil, s3: S3DestinationConfiguration? = nil) {
        self.name = name
        self.channel = channel
        self.s3 = s3
    }

    /// As IVS reports it back: `name` "" when not given, recording defaults filled in.
    public func withDefaults() -> DestinationConfiguration {
        DestinationConfiguration(name: name ?? "", channel: channel, s3: s3?.withDefaults())
    }
}

public struct S3Detail: Codable, Hashable, Sendable {
    public var recordingPrefix: String
    public init(recordingPrefix: String) { self.recordingPrefix = recordingPrefix }
}

public struct DestinationDetail: Codable, Hashable, Sendable {
    public var s3: S3Detail?
    public init(s3: S3Detail? = nil) { self.s3 = s3 }
}

public struct Destination: Codable, Hashable, Sendable {
    public var id: String
    public var state: DestinationState
    public var startTime: APITimestamp?
    public var endTime: APITimestamp?
    public var configuration: DestinationConfiguration
    public var detail: DestinationDetail?

    public init(id: String, state: DestinationState, startTime: APITimestamp? = nil, endTime: APITimestamp? = nil,
                configuration: DestinationConfiguration, detail: DestinationDetail? = nil) {
        self.id = id
        self.state = state
        self.startTime = startTime
        self.endTime = endTime
        self.configuration = configuration
        self.detail = detail
    }

    public var summary: DestinationSummary {
        DestinationSummary(id: id, state: state, startTime: startTime, endTime: endTime)
    }
}

public struct DestinationSummary: Codable, Hashable, Sendable {
    public var id: String
    public var state: DestinationState
    public var startTime: APITimestamp?
    public var endTime: APITimestamp?

    public init(id: String, state: DestinationState, startTime: APITimestamp? = nil, endTime: APITimestamp? = nil) {
        self.id = id
        self.state = state
        self.startTime = startTime
        self.endTime = endTime
    }
}

public struct Composition: Codable, Hashable, Sendable {
    public var arn: String
    public var stageArn: String
    public var state: CompositionState
    public var layout: LayoutConfiguration
    public var destinations: [Destination]
    public var tags: Tags?
    public var startTime: APITimestamp?
    public var endTime: APITimestamp?
    /// Extension (not in the IVS model): the overlays in force (StartComposition's, then each
    /// UpdateComposition's), as `layout` is the layout in force; absent when none were given.
    public var overlays: OverlayConfiguration?
    /// Extension: where a WHEP player POSTs its offer to watch the composition live
    /// (`…/whep/composition/<id>`), while it is STARTING or ACTIVE on a server with WHIP on.
    public var whepUrl: String?

    public init(arn: String, stageArn: String, state: CompositionState, layout: LayoutConfiguration,
                destinations: [Destination], tags: Tags? = nil, startTime: APITimestamp? = nil, endTime: APITimestamp? = nil,
                overlays: OverlayConfiguration? = nil) {
        self.arn = arn
        self.stageArn = stageArn
        self.state = state
        self.layout = layout
        self.destinations = destinations
        self.tags = tags
        self.startTime = startTime
        self.endTime = endTime
        self.overlays = overlays
    }

    public var summary: CompositionSummary {
        CompositionSummary(arn: arn, stageArn: stageArn, destinations: destinations.map(\.summary), state: state,
                           tags: tags, startTime: startTime, endTime: endTime)
    }
}

public struct CompositionSummary: Codable, Hashable, Sendable {
    public var arn: String
    public var stageArn: String
    public var destinations: [DestinationSummary]
    public var state: CompositionState
    public var tags: Tags?
    public var startTime: APITimestamp?
    public var endTime: APITimestamp?

    public init(arn: String, stageArn: String, destinations: [DestinationSummary], state: CompositionState,
                tags: Tags? = nil, startTime: APITimestamp? = nil, endTime: APITimestamp? = nil) {
        self.arn = arn
        self.stageArn = stageArn
        self.destinations = destinations
        self.state = state
        self.tags = tags
        self.startTime = startTime
        self.endTime = endTime
    }
}

// MARK: - Operations

public struct StartCompositionRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    public var idempotencyToken: String?
    public var layout: LayoutConfiguration?
    public var destinations: [DestinationConfiguration]
    public var tags: Tags?
    /// Extension (not in the IVS model): participants' gain and mute from the start, by
    /// participant ID.
    public var audio: [String: ParticipantAudio]?
    /// Extension (not in the IVS model): what the compositor draws itself (labels, images,
    /// background, slate, banners) from the start.
    public var overlays: OverlayConfiguration?

    public init(stageArn: String, idempotencyToken: String? = nil, layout: LayoutConfiguration? = nil,
                destinations: [DestinationConfiguration], tags: Tags? = nil, audio: [String: ParticipantAudio]? = nil,
                overlays: OverlayConfiguration? = nil) {
        self.audio = audio
        self.overlays = overlays
        self.stageArn = stageArn
        self.idempotencyToken = idempotencyToken
        self.layout = layout
        self.destinations = destinations
        self.tags = tags
    }
}

public struct StartCompositionResponse: Codable, Hashable, Sendable {
    public var composition: Composition?
    public init(composition: Composition?) { self.composition = composition }
}

/// Extension (not in the IVS model): directs a running composition. Absent parts are left
/// as they are: a new layout from the next output frame on (gliding over `transitionMs`),
/// participants' gain and mute merged over those in force, overlays replaced whole (an empty
/// `{}` removes them all).
public struct UpdateCompositionRequest: Codable, Hashable, Sendable {
    public var arn: String
    public var layout: LayoutConfiguration?
    public var transitionMs: Int?
    public var audio: [String: ParticipantAudio]?
    public var overlays: OverlayConfiguration?

    public init(arn: String, layout: LayoutConfiguration? = nil, transitionMs: Int? = nil, audio: [String: ParticipantAudio]? = nil,
                overlays: OverlayConfiguration? = nil) {
        self.arn = arn
        self.layout = layout
        self.transitionMs = transitionMs
        self.audio = audio
        self.overlays = overlays
    }
}

public struct UpdateCompositionResponse: Codable, Hashable, Sendable {
    public var composition: Composition?
    public init(composition: Composition?) { self.composition = composition }
}

public struct StopCompositionRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct StopCompositionResponse: Codable, Hashable, Sendable {
    public init() {}
}

public struct GetCompositionRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct GetCompositionResponse: Codable, Hashable, Sendable {
    public var composition: Composition?
    public init(composition: Composition?) { self.composition = composition }
}

public struct ListCompositionsRequest: Codable, Hashable, Sendable {
    public var filterByStageArn: String?
    public var filterByEncoderConfigurationArn: String?
    public var nextToken: String?
    public var maxResults: Int?

    public init(filterByStageArn: String? = nil, filterByEncoderConfigurationArn: String? = nil,
                nextToken: String? = nil, maxResults: Int? = nil) {
        self.filterByStageArn = filterByStageArn
        self.filterByEncoderConfigurationArn = filterByEncoderConfigurationArn
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListCompositionsResponse: Codable, Hashable, Sendable {
    public var compositions: [CompositionSummary]
    public var nextToken: String?
    public init(compositions: [CompositionSummary], nextToken: String? = nil) {
        self.compositions = compositions
        self.nextToken = nextToken
    }
}
