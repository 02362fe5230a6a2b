// StartComposition, planned: the request and the configurations it names become one plan —
// the destinations as the API shows them, where the recording goes (prefix, rendition, size),
// the channel push, and the one encoder that feeds both. Pure: the caller looks up what the
// request names (`namedConfigurations`) and supplies the new IDs, so every rule here is a
// table test, and the same plan is what the manager stores, shows and runs.
public import APIModels
public import Destinations
import HLS
public import Layout
public import Logging
public import MediaCore
public import Persistence
public import Pipeline

public struct CompositionPlanner: Sendable {
    public var arnContext: ARNContext
    public var channels: [ConfiguredChannel]
    /// Bucket names this server writes, with their local directory when they have one.
    public var bucketDirectories: [String: String?]

    public init(arnContext: ARNContext, channels: [ConfiguredChannel], bucketDirectories: [String: String?]) {
        self.arnContext = arnContext
        self.channels = channels
        self.bucketDirectories = bucketDirectories
    }

    /// What the caller found for the ARNs the request names (absent: not found), and the
    /// channels active compositions hold.
    public struct Lookups: Sendable {
        public var encoders: [String: EncoderConfiguration] = [:]
        public var storages: [String: StorageConfiguration] = [:]
        public var channelsInUse: Set<String> = []
        public init(encoders: [String: EncoderConfiguration] = [:], storages: [String: StorageConfiguration] = [:],
                    channelsInUse: Set<String> = []) {
            self.encoders = encoders
            self.storages = storages
            self.channelsInUse = channelsInUse
        }
    }

    public struct Recording: Equatable, Sendable {
        public var stored: StoredRecording
        public var bucket: String
        public var encoderConfigurationId: String
        /// From the destination's thumbnailConfigurations (IVS's default without one: every
        /// 60 s, SEQUENTIAL); nil when its storage list is empty.
        public var thumbnails: ThumbnailPlan?

        public init(stored: StoredRecording, bucket: String, encoderConfigurationId: String, thumbnails: ThumbnailPlan?) {
            self.stored = stored
            self.bucket = bucket
            self.encoderConfigurationId = encoderConfigurationId
            self.thumbnails = thumbnails
        }
    }

    public struct Plan {
        /// In request order, STARTING, with their S3 detail.
        public var destinations: [Destination]
        public var layout: LayoutConfiguration
        public var recording: Recording?
        public var channel: ChannelDestinationPlan?
        /// The recording's encoder, else the channel's, else IVS's defaults.
        public var encoder: EncoderSpec
        /// Participants' gain and mute from the start (the `audio` extension field).
        public var audio: [String: ParticipantAudio] = [:]
        /// The `overlays` extension field, prepared (its files read) by the caller: planning
        /// reads no files.
        public var overlays: PreparedOverlays?
    }

    /// The encoder and storage configuration ARNs `request` names, to look up.
    public static func namedConfigurations(_ request: StartCompositionRequest) -> (encoders: [String], storages: [String]) {
        var encoders: [String] = []
        var storages: [String] = []
        for destination in request.destinations {
            if let arn = destination.channel?.encoderConfigurationArn { encoders.append(arn) }
            if let s3 = destination.s3 {
                storages.append(s3.storageConfigurationArn)
                if let first = s3.encoderConfigurationArns.first { encoders.append(first) }
            }
        }
        return (encoders, storages)
    }

    /// The plan, or the first problem in request order (the field path in the message).
    /// `destinationIds` has one new ID per destination.
    public func plan(_ request: StartCompositionRequest, stageId: String, compositionId: String, destinationIds: [String],
              lookups: Lookups) throws(APIError) -> Plan {
        precondition(destinationIds.count == request.destinations.count, "one ID per destination")
        var recording: Recording?
        var recordingVideo: Video?
        var channel: ChannelDestinationPlan?
        var channelVideo: Video?
        var destinations: [Destination] = []
        for (index, destination) in request.destinations.enumerated() {
            let path = "destinations[\(index)]"
            let id = destinationIds[index]
            if let requested = destination.channel {
                guard let channelARN = IVSARN(parsing: requested.channelArn, expecting: .channel), arnContext.owns(channelARN),
                      let entry = channels.first(where: { $0.arn == requested.channelArn }) else {
                    throw .resourceNotFound("\(path).channel.channelArn: channel \(requested.channelArn) not found")
                }
                if let arn = requested.encoderConfigurationArn {
                    channelVideo = try encoder(arn, at: "\(path).channel.encoderConfigurationArn", lookups).video ?? Video()
                }
                // A channel belongs to the composition that asked for it until that composition ends.
                if lookups.channelsInUse.contains(requested.channelArn) {
                    throw .conflict("\(path).channel.channelArn: channel \(requested.channelArn) is already used by an active composition")
                }
                channel = ChannelDestinationPlan(destinationId: id, configuration: Self.channelConfiguration(entry))
            }
            var detail: DestinationDetail?
            if let s3 = destination.s3 {
                guard let storageARN = IVSARN(parsing: s3.storageConfigurationArn, expecting: .storageConfiguration),
                      arnContext.owns(storageARN), let storage = lookups.storages[s3.storageConfigurationArn] else {
                    throw .resourceNotFound("\(path).s3.storageConfigurationArn: storage configuration \(s3.storageConfigurationArn) not found")
                }
                guard let bucket = storage.s3?.bucketName, let directory = bucketDirectories[bucket] else {
                    throw .validation("\(path).s3.storageConfigurationArn: bucket \(storage.s3?.bucketName ?? "") is not configured on this server")
                }
                let encoderArn = s3.encoderConfigurationArns.first ?? ""
                let configuration = try encoder(encoderArn, at: "\(path).s3.encoderConfigurationArns[0]", lookups)
                let segment = s3.recordingConfiguration?.hlsConfiguration?.targetSegmentDurationSeconds
                    ?? CompositionRecordingHlsConfiguration.defaultTargetSegmentDurationSeconds
                let video = (configuration.video ?? Video()).withDefaults()
                let encoderId = IVSARN(parsing: configuration.arn)?.resourceID ?? "encoder"
                let prefix = RecordingLayout(stageId: stageId, compositionId: compositionId, destinationId: id).prefix
                detail = DestinationDetail(s3: S3Detail(recordingPrefix: prefix))
                let fps = Int(video.frameRate.rescale(1, to: Rational(1, 1)))
                let thumbnail = (s3.thumbnailConfigurations?.first ?? CompositionThumbnailConfiguration()).withDefaults()
                let kept = thumbnail.storage ?? CompositionThumbnailConfiguration.defaultStorage
                let thumbnails = kept.isEmpty ? nil : ThumbnailPlan(
                    intervalSeconds: thumbnail.targetIntervalSeconds ?? CompositionThumbnailConfiguration.defaultTargetIntervalSeconds,
                    sequential: kept.contains(.sequential), latest: kept.contains(.latest))
                recording = Recording(
                    stored: StoredRecording(
                        destinationId: id, storageRoot: directory ?? "", bucket: bucket, prefix: prefix,
                        renditionName: RecordingLayout.renditionName(height: video.height ?? 720, framesPerSecond: fps,
                                                                     encoderConfigurationId: encoderId),
                        width: video.width ?? 1280, height: video.height ?? 720, targetSegmentDurationSeconds: segment),
                    bucket: bucket, encoderConfigurationId: encoderId, thumbnails: thumbnails)
                recordingVideo = video
            }
            destinations.append(Destination(id: id, state: .starting, configuration: destination.withDefaults(), detail: detail))
        }
        let video = (recordingVideo ?? channelVideo ?? Video()).withDefaults()
        let encoder = EncoderSpec(width: video.width ?? 1280, height: video.height ?? 720, frameRate: video.frameRate,
                                  bitrate: video.bitrate ?? 2_500_000)
        return Plan(destinations: destinations, layout: request.layout ?? .defaultGrid, recording: recording, channel: channel,
                    encoder: encoder, audio: request.audio ?? [:])
    }

    /// What the runner builds: this plan's encoder, layout and outputs, the recording's
    /// objects going where `uploads` says (the daemon's bucket or spool, the CLI's directory).
    /// `lowLatency` for live publishers; the rest is the runner's tuning.
    public static func compositionPlan(_ plan: Plan, compositionId: String, uploads: (@Sendable (Logger) -> any RecordingUploads)?,
                                preset: String, lowLatency: Bool, tuning: CompositionTuning = CompositionTuning()) -> CompositionPlan {
        let recording = zip(plan.recording, uploads).map { recording, uploads in
            RecordingDestinationPlan(destinationId: recording.stored.destinationId, uploads: uploads,
                                     encoderConfigurationId: recording.encoderConfigurationId,
                                     targetSegmentDurationSeconds: recording.stored.targetSegmentDurationSeconds,
                                     thumbnails: recording.thumbnails)
        }
        return CompositionPlan(compositionId: compositionId, encoder: plan.encoder, layout: plan.layout, recording: recording,
                               channel: plan.channel, preset: preset, lowLatency: lowLatency, tuning: tuning, audio: plan.audio,
                               overlays: plan.overlays)
    }

    /// The push a channel entry describes (its reconnect policy with defaults).
    static func channelConfiguration(_ entry: ConfiguredChannel) -> Destinations.ChannelDestinationConfiguration {
        var ingest = entry.ingestEndpoint
        while ingest.hasSuffix("/") { ingest.removeLast() }
        let reconnect = entry.reconnect ?? ConfiguredChannel.Reconnect()
        let policy = ChannelReconnectPolicy(enabled: reconnect.maxRetries > 0, maxRetries: reconnect.maxRetries,
                                            baseInterval: .microseconds(Int64(reconnect.baseIntervalSeconds * 1_000_000)))
        return Destinations.ChannelDestinationConfiguration(ingestURL: ingest, streamKey: entry.streamKey, reconnect: policy,
                                                            verifyCertificate: entry.verifyCertificate ?? true, caFile: entry.caFile)
    }


    private func encoder(_ arn: String, at path: String, _ lookups: Lookups) throws(APIError) -> EncoderConfiguration {
        guard let found = lookups.encoders[arn] else { throw .resourceNotFound("\(path): encoder configuration \(arn) not found") }
        return found
    }
}

private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
