// The compose command's flags are a StartComposition request: an S3 destination (a storage
// configuration whose bucket is --out or --s3, an encoder configuration from --encoder, the
// segment length and thumbnails) and/or a channel destination (--rtmp). The daemon's
// CompositionPlanner (the Composition module; the CLI's compose needs nothing of the daemon) plans it, so a recording made here has the same paths, rendition,
// keyframes, thumbnails and channel push as one the daemon makes from the same request.
import APIModels
import Destinations
import Layout
import Logging
import Pipeline
import Composition

struct ComposePlanning {
    /// The configurations the flags stand for live in this account (never shown).
    static let arnContext = ARNContext(region: "us-east-1", account: "000000000000")!
    static let bucket = "compose-output"

    var stageArn: String
    var layout: LayoutConfiguration
    var encoder: EncoderSpec
    /// --segment-duration and --thumbnails when recording; nil with --no-record.
    var recording: (segmentSeconds: Int, thumbnails: ThumbnailPlan?)?
    var channel: Destinations.ChannelDestinationConfiguration?
    /// --overlays, prepared (its files read from the description's folder).
    var overlays: PreparedOverlays?

    /// The request the flags amount to, and what it names.
    func request() -> (StartCompositionRequest, CompositionPlanner.Lookups, [ConfiguredChannel]) {
        var destinations: [DestinationConfiguration] = []
        var lookups = CompositionPlanner.Lookups()
        var channels: [ConfiguredChannel] = []
        let encoderArn = Self.arnContext.arn(.encoderConfiguration, id: ResourceID.random()).description
        let frameRate = Double(encoder.frameRate.numerator) / Double(max(encoder.frameRate.denominator, 1))
        lookups.encoders[encoderArn] = EncoderConfiguration(
            arn: encoderArn, name: "compose",
            video: Video(width: encoder.width, height: encoder.height, framerate: Float(frameRate), bitrate: encoder.bitrate))
        if let channel {
            let channelArn = Self.arnContext.arn(.channel, id: ResourceID.random()).description
            channels.append(ConfiguredChannel(
                arn: channelArn, ingestEndpoint: channel.ingestURL, streamKey: channel.streamKey,
                reconnect: .init(maxRetries: channel.reconnect.enabled ? channel.reconnect.maxRetries : 0,
                                 baseIntervalSeconds: Double(channel.reconnect.baseInterval.microsecondsValue) / 1_000_000),
                caFile: channel.caFile, verifyCertificate: channel.verifyCertificate))
            destinations.append(DestinationConfiguration(channel: APIModels.ChannelDestinationConfiguration(
                channelArn: channelArn, encoderConfigurationArn: encoderArn)))
        }
        if let recording {
            let storageArn = Self.arnContext.arn(.storageConfiguration, id: ResourceID.random()).description
            lookups.storages[storageArn] = StorageConfiguration(arn: storageArn, name: "compose",
                                                                s3: S3StorageConfiguration(bucketName: Self.bucket))
            let thumbnails = recording.thumbnails.map { plan in
                CompositionThumbnailConfiguration(targetIntervalSeconds: plan.intervalSeconds,
                                                  storage: (plan.sequential ? [.sequential] : []) + (plan.latest ? [.latest] : []))
            } ?? CompositionThumbnailConfiguration(storage: [])
            destinations.append(DestinationConfiguration(s3: S3DestinationConfiguration(
                storageConfigurationArn: storageArn, encoderConfigurationArns: [encoderArn],
                recordingConfiguration: RecordingConfiguration(
                    hlsConfiguration: CompositionRecordingHlsConfiguration(targetSegmentDurationSeconds: recording.segmentSeconds)),
                thumbnailConfigurations: [thumbnails])))
        }
        return (StartCompositionRequest(stageArn: stageArn, layout: layout, destinations: destinations,
                                        overlays: overlays?.configuration), lookups, channels)
    }

    /// The runner's plan, the recording's objects going through `uploads`.
    func compositionPlan(compositionId: String, uploads: @escaping @Sendable (Logger) -> any RecordingUploads, preset: String,
                         tuning: CompositionTuning) throws -> CompositionPlan {
        let (request, lookups, channels) = request()
        do {
            try request.validate()
            let planner = CompositionPlanner(arnContext: Self.arnContext, channels: channels, bucketDirectories: [Self.bucket: nil])
            let stageId = String(stageArn.split(separator: "/").last ?? "stage")
            var plan = try planner.plan(request, stageId: stageId, compositionId: compositionId,
                                        destinationIds: request.destinations.map { _ in ResourceID.random().rawValue }, lookups: lookups)
            plan.overlays = overlays
            return CompositionPlanner.compositionPlan(plan, compositionId: compositionId, uploads: uploads, preset: preset,
                                                      lowLatency: false, tuning: tuning)
        } catch {
            throw CLIFailure("the composition cannot be planned: \(error.message)")
        }
    }
}
