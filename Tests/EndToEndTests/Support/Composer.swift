// Runs a composition in-process exactly as `compose` does (RecordedStageSource +
// CompositionRunner + as-fast-as-possible pacing) into local storage in a temp folder, and
// describes what it wrote. Compositions are cached so several tests share one output.
import Destinations
import Foundation
import TestSupport
import HLS
import Layout
import Logging
import MediaCore
import Pipeline
import Stages
import Storage
import Synchronization
import Composition

/// One finished composite recording on disk.
struct ComposedRecording: Sendable {
    var stageDirectory: String
    var manifest: StageManifest
    var encoder: EncoderSpec
    var layout: LayoutConfiguration
    var segmentSeconds: Int
    var result: CompositionResult
    /// `<root>/<stageId>/<compositionId>/<destinationId>/composite`.
    var prefix: URL
    var multivariantPlaylist: URL
    var mediaPlaylist: URL
    var renditionName: String
    /// Every object put to storage, in order, with the text of playlists and JSON.
    var uploads: [RecordedUpload]

    var eventsFolder: URL { prefix.appendingPathComponent("events") }
    var renditionFolder: URL { mediaPlaylist.deletingLastPathComponent() }
    var frameDurationSeconds: Double { Double(encoder.frameRate.denominator) / Double(encoder.frameRate.numerator) }
    var canvas: PixelSize { PixelSize(width: encoder.width, height: encoder.height) }
}

struct RecordedUpload: Sendable {
    var key: String
    var text: String?
}

/// Local storage that also remembers the order of puts (to check EVENT → VOD transitions).
final class RecordingStorage: ObjectStorage {
    let base: LocalDirectoryStorage
    private let log = Mutex<[RecordedUpload]>([])

    init(root: URL) { base = LocalDirectoryStorage(root: root) }

    var uploads: [RecordedUpload] { log.withLock { $0 } }

    func put(_ data: Data, key: String, contentType: String?) async throws(StorageError) {
        try await base.put(data, key: key, contentType: contentType)
        let isText = key.hasSuffix(".m3u8") || key.hasSuffix(".json")
        log.withLock { $0.append(RecordedUpload(key: key, text: isText ? String(decoding: data, as: UTF8.self) : nil)) }
    }

    func get(key: String) async throws(StorageError) -> Data { try await base.get(key: key) }
    func exists(key: String) async -> Bool { await base.exists(key: key) }
    func list(prefix: String) async throws(StorageError) -> [String] { try await base.list(prefix: prefix) }
}

struct ComposeRequest: Hashable, Sendable {
    var stageDirectory: String
    var encoder: String = "320x180@30:500k"
    var layout: LayoutConfiguration = .defaultGrid
    var segmentSeconds: Int = 2
    var durationMs: Int64? = nil
}

enum Composer {
    /// Composes on a dedicated thread (the pipeline blocks; see Subprocess.swift).
    static func compose(_ request: ComposeRequest) async throws -> ComposedRecording {
        try await onThread { try composeBlocking(request) }
    }

    static func composeBlocking(_ request: ComposeRequest) throws -> ComposedRecording {
        var logger = Logger(label: "e2e")
        logger.logLevel = .error
        let spec = try EncoderSpec.parse(request.encoder)
        let stage = try RecordedStage.load(from: request.stageDirectory)
        let source = try RecordedStageSource(stage: stage, logger: logger)
        let root = try Paths.makeScratch("out-\(stage.manifest.stageId)")
        let storage = RecordingStorage(root: root)
        let plan = CompositionPlan(
            compositionId: "comp00000001", encoder: spec, layout: request.layout,
            recording: RecordingDestinationPlan(destinationId: "dest00000001", storage: storage,
                                                encoderConfigurationId: "enc000000001",
                                                targetSegmentDurationSeconds: request.segmentSeconds))
        let runner = try CompositionRunner(plan: plan, source: source,
                                           duration: request.durationMs.map { MediaTime.milliseconds($0) }, logger: logger)
        var pacer = AsFastAsPossiblePacer()
        let result = try runner.session.run(pacer: &pacer)
        guard let sink = runner.recordingSink, let layout = runner.recordingLayout else {
            throw SubprocessError(description: "no recording sink")
        }
        let mediaPlaylist = root.appendingPathComponent(sink.mediaPlaylistKey)
        return ComposedRecording(
            stageDirectory: request.stageDirectory, manifest: stage.manifest, encoder: spec, layout: request.layout,
            segmentSeconds: request.segmentSeconds, result: result,
            prefix: root.appendingPathComponent(layout.prefix),
            multivariantPlaylist: root.appendingPathComponent(sink.multivariantPlaylistKey),
            mediaPlaylist: mediaPlaylist,
            renditionName: mediaPlaylist.deletingLastPathComponent().lastPathComponent,
            uploads: storage.uploads)
    }
}

/// Compositions (and their decoded media) computed once per test process.
final class SharedOutputs: Sendable {
    static let shared = SharedOutputs()
    private let recordings = Mutex<[ComposeRequest: Task<ComposedRecording, any Error>]>([:])
    private let videos = Mutex<[String: Task<DecodedVideo, any Error>]>([:])
    private let audios = Mutex<[String: Task<DecodedAudio, any Error>]>([:])

    func recording(_ request: ComposeRequest) async throws -> ComposedRecording {
        let task = recordings.withLock { cache in
            if let task = cache[request] { return task }
            let task = Task { try await Composer.compose(request) }
            cache[request] = task
            return task
        }
        return try await task.value
    }

    func video(of recording: ComposedRecording) async throws -> DecodedVideo {
        let key = recording.mediaPlaylist.path
        let task = videos.withLock { cache in
            if let task = cache[key] { return task }
            let task = Task { try await MediaDecoder.video(of: recording) }
            cache[key] = task
            return task
        }
        return try await task.value
    }

    func audio(of recording: ComposedRecording) async throws -> DecodedAudio {
        let key = recording.mediaPlaylist.path
        let task = audios.withLock { cache in
            if let task = cache[key] { return task }
            let task = Task { try await MediaDecoder.audio(of: recording) }
            cache[key] = task
            return task
        }
        return try await task.value
    }

    // The shared stages.
    static let twoPeople = ComposeRequest(stageDirectory: Paths.fixture("two-people"))
    static let fourGrid = ComposeRequest(stageDirectory: Paths.fixture("four-grid"))
}
