// CompositionPlanner as a table: each request (with what its ARNs resolve to) and the plan or
// the first problem it must give. The manager stores, shows and runs exactly this plan.
import APIModels
import Destinations
import Foundation
import Persistence
import MediaCore
import Pipeline
import Storage
@testable import Server
import Testing
import Composition

enum PlannerFixtures {
    static let account = "arn:aws:ivs:us-east-1:123456789012"
    static let channelArn = "\(account):channel/DemoChannel1"
    static let hd = "\(account):encoder-configuration/HDHDHDHDHDHD"
    static let small = "\(account):encoder-configuration/SMALLSMALL12"
    static let storage = "\(account):storage-configuration/STORSTORSTOR"
    static let elsewhere = "\(account):storage-configuration/ELSEWHERE123"

    static let planner = CompositionPlanner(
        arnContext: ARNContext(region: "us-east-1", account: "123456789012")!,
        channels: [ServerConfiguration.ChannelEntry(arn: channelArn, ingestEndpoint: "rtmps://ingest.example.com:443/app//",
                                                    streamKey: "sk_1", reconnect: .init(maxRetries: 0, baseIntervalSeconds: 1))],
        bucketDirectories: ["rec-bucket": "/srv/recordings", "s3-bucket": nil])

    static let lookups = CompositionPlanner.Lookups(
        encoders: [hd: EncoderConfiguration(arn: hd, name: "hd", video: Video(width: 1280, height: 720, framerate: 30, bitrate: 2_500_000).withDefaults(), tags: [:]),
                   small: EncoderConfiguration(arn: small, name: "small", video: Video(width: 640, height: 360, framerate: 15, bitrate: 600_000).withDefaults(), tags: [:])],
        storages: [storage: StorageConfiguration(arn: storage, name: "s", s3: S3StorageConfiguration(bucketName: "rec-bucket"), tags: [:]),
                   elsewhere: StorageConfiguration(arn: elsewhere, name: "x", s3: S3StorageConfiguration(bucketName: "not-here"), tags: [:])])

    static func s3(_ storage: String = storage, encoder: String = hd, segment: Int? = nil,
                   thumbnails: [CompositionThumbnailConfiguration]? = nil) -> DestinationConfiguration {
        DestinationConfiguration(s3: S3DestinationConfiguration(
            storageConfigurationArn: storage, encoderConfigurationArns: [encoder],
            recordingConfiguration: segment.map { RecordingConfiguration(hlsConfiguration: CompositionRecordingHlsConfiguration(targetSegmentDurationSeconds: $0)) },
            thumbnailConfigurations: thumbnails))
    }

    static func channel(_ arn: String = channelArn, encoder: String? = nil) -> DestinationConfiguration {
        DestinationConfiguration(channel: ChannelDestinationConfiguration(channelArn: arn, encoderConfigurationArn: encoder))
    }

    static func plan(_ destinations: [DestinationConfiguration], lookups: CompositionPlanner.Lookups = lookups) throws(APIError)
        -> CompositionPlanner.Plan {
        let request = StartCompositionRequest(stageArn: "\(account):stage/STAGESTAGE12", destinations: destinations)
        return try planner.plan(request, stageId: "STAGESTAGE12", compositionId: "COMPCOMPCOMP",
                                destinationIds: destinations.indices.map { "DEST\($0)" }, lookups: lookups)
    }
}

@Suite struct CompositionPlannerTests {
    typealias F = PlannerFixtures

    @Test("a recording: its prefix, rendition, size and segment length, and the encoder that feeds it")
    func recording() throws {
        let plan = try F.plan([F.s3(segment: 4)])
        #expect(plan.destinations.map(\.id) == ["DEST0"])
        #expect(plan.destinations[0].state == .starting)
        #expect(plan.destinations[0].detail?.s3?.recordingPrefix == "STAGESTAGE12/COMPCOMPCOMP/DEST0/composite")
        #expect(plan.recording == CompositionPlanner.Recording(
            stored: StoredRecording(destinationId: "DEST0", storageRoot: "/srv/recordings", bucket: "rec-bucket",
                                    prefix: "STAGESTAGE12/COMPCOMPCOMP/DEST0/composite", renditionName: "720p30-HDHDHDHDHDHD",
                                    width: 1280, height: 720, targetSegmentDurationSeconds: 4),
            bucket: "rec-bucket", encoderConfigurationId: "HDHDHDHDHDHD",
            thumbnails: ThumbnailPlan(intervalSeconds: 60, sequential: true, latest: false)))
        #expect(plan.encoder == EncoderSpec(width: 1280, height: 720, frameRate: Rational(30, 1), bitrate: 2_500_000))
        #expect(plan.channel == nil)
        #expect(plan.layout == .defaultGrid)
    }

    @Test("a channel alone: its push (the endpoint without trailing slashes, its reconnect policy) and its own encoder, else the defaults",
          arguments: [(nil as String?, EncoderSpec.default), (F.small, EncoderSpec(width: 640, height: 360, frameRate: Rational(15, 1), bitrate: 600_000))])
    func channel(encoder: String?, expected: EncoderSpec) throws {
        let plan = try F.plan([F.channel(encoder: encoder)])
        #expect(plan.recording == nil)
        #expect(plan.channel?.destinationId == "DEST0")
        #expect(plan.channel?.configuration.ingestURL == "rtmps://ingest.example.com:443/app")
        #expect(plan.channel?.configuration.streamKey == "sk_1")
        #expect(plan.channel?.configuration.reconnect.enabled == false)
        #expect(plan.encoder == expected)
        #expect(plan.destinations[0].detail == nil)
    }

    @Test("a channel and a recording: one encoder, the recording's")
    func both() throws {
        let plan = try F.plan([F.channel(encoder: F.small), F.s3()])
        #expect(plan.encoder.width == 1280 && plan.recording?.stored.destinationId == "DEST1" && plan.channel?.destinationId == "DEST0")
        #expect(plan.recording?.stored.targetSegmentDurationSeconds == CompositionRecordingHlsConfiguration.defaultTargetSegmentDurationSeconds)
    }

    @Test("an S3-compatible bucket has no local directory")
    func remoteBucket() throws {
        var lookups = F.lookups
        lookups.storages[F.storage] = StorageConfiguration(arn: F.storage, name: "s", s3: S3StorageConfiguration(bucketName: "s3-bucket"), tags: [:])
        let plan = try F.plan([F.s3()], lookups: lookups)
        #expect(plan.recording?.stored.storageRoot == "" && plan.recording?.bucket == "s3-bucket")
    }

    @Test("the first problem in request order, with its field path", arguments: [
        ([F.channel("\(F.account):channel/Unknown")], "ResourceNotFoundException", "destinations[0].channel.channelArn: channel"),
        ([F.channel("arn:aws:ivs:eu-west-1:123456789012:channel/DemoChannel1")], "ResourceNotFoundException", "destinations[0].channel.channelArn"),
        ([F.channel(encoder: "\(F.account):encoder-configuration/NOPENOPENOPE")], "ResourceNotFoundException",
         "destinations[0].channel.encoderConfigurationArn: encoder configuration"),
        ([F.s3("\(F.account):storage-configuration/NOPENOPENOPE")], "ResourceNotFoundException", "destinations[0].s3.storageConfigurationArn: storage configuration"),
        ([F.s3(F.elsewhere)], "ValidationException", "bucket not-here is not configured on this server"),
        ([F.s3(encoder: "\(F.account):encoder-configuration/NOPENOPENOPE")], "ResourceNotFoundException", "destinations[0].s3.encoderConfigurationArns[0]"),
        ([F.channel(), F.s3(F.elsewhere), F.s3(encoder: "x")], "ValidationException", "destinations[1].s3.storageConfigurationArn"),
    ])
    func problems(destinations: [DestinationConfiguration], type: String, message: String) {
        do {
            _ = try F.plan(destinations)
            Issue.record("planned: \(destinations)")
        } catch {
            #expect(error.code.rawValue == type, "\(error)")
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test("a channel an active composition holds is a conflict")
    func channelInUse() {
        var lookups = F.lookups
        lookups.channelsInUse = [F.channelArn]
        #expect(throws: APIError.self) { try F.plan([F.channel()], lookups: lookups) }
    }

    @Test("the configurations a request names, to look up")
    func named() {
        let request = StartCompositionRequest(stageArn: "s", destinations: [F.channel(encoder: F.small), F.s3(), F.channel()])
        let named = CompositionPlanner.namedConfigurations(request)
        #expect(named.encoders == [F.small, F.hd])
        #expect(named.storages == [F.storage])
    }

    @Test("thumbnails as the destination asks: IVS's default without a configuration, none with an empty storage list", arguments: [
        (nil as [CompositionThumbnailConfiguration]?, ThumbnailPlan(intervalSeconds: 60, sequential: true, latest: false) as ThumbnailPlan?),
        ([CompositionThumbnailConfiguration(targetIntervalSeconds: 5, storage: [.latest])], ThumbnailPlan(intervalSeconds: 5, sequential: false, latest: true)),
        ([CompositionThumbnailConfiguration(targetIntervalSeconds: 10, storage: [.sequential, .latest])], ThumbnailPlan(intervalSeconds: 10, sequential: true, latest: true)),
        ([CompositionThumbnailConfiguration(storage: [.latest])], ThumbnailPlan(intervalSeconds: 60, sequential: false, latest: true)),
        ([CompositionThumbnailConfiguration(targetIntervalSeconds: 30)], ThumbnailPlan(intervalSeconds: 30, sequential: true, latest: false)),
        ([CompositionThumbnailConfiguration(targetIntervalSeconds: 30, storage: [])], nil),
    ])
    func thumbnails(configurations: [CompositionThumbnailConfiguration]?, expected: ThumbnailPlan?) throws {
        let plan = try F.plan([F.s3(thumbnails: configurations)])
        #expect(plan.recording?.thumbnails == expected)
        let runnable = CompositionPlanner.compositionPlan(plan, compositionId: "COMPCOMPCOMP",
                                                          uploads: { logger in UploadQueue(storage: LocalDirectoryStorage(rootPath: "/nonexistent"), logger: logger) },
                                                          preset: "veryfast", lowLatency: true)
        #expect(runnable.recording?.thumbnails == expected)
    }

    @Test("the runner's plan carries every output of the plan: the recording (with where its objects go), the channel, the encoder and layout")
    func runnable() throws {
        let plan = try F.plan([F.channel(encoder: F.small), F.s3(segment: 6)])
        let runnable = CompositionPlanner.compositionPlan(plan, compositionId: "COMPCOMPCOMP",
                                                          uploads: { logger in UploadQueue(storage: LocalDirectoryStorage(rootPath: "/nonexistent"), logger: logger) },
                                                          preset: "faster", lowLatency: true,
                                                          tuning: CompositionTuning(encoderThreads: 3, parallelDecoding: false))
        #expect(runnable.compositionId == "COMPCOMPCOMP" && runnable.preset == "faster" && runnable.lowLatency)
        #expect(runnable.encoder == plan.encoder && runnable.layout == plan.layout)
        #expect(runnable.recording?.destinationId == "DEST1" && runnable.recording?.targetSegmentDurationSeconds == 6)
        #expect(runnable.recording?.encoderConfigurationId == "HDHDHDHDHDHD")
        #expect(runnable.channel?.destinationId == "DEST0")
        #expect(runnable.encoderThreads == 3 && runnable.tuning == CompositionTuning(encoderThreads: 3, parallelDecoding: false))
        // Without somewhere to put the recording's objects there is no recording to run.
        #expect(CompositionPlanner.compositionPlan(plan, compositionId: "C", uploads: nil, preset: "veryfast", lowLatency: false).recording == nil)
    }
}
