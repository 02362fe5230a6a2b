// A recording whose storage stops taking segments midway (a full disk): the recording ends
// FAILED with recording-failed.json, and its VOD playlist names only the segments stored, so
// it plays to its end; it never names a segment that is missing.
import Destinations
import Foundation
import HLS
import Logging
import MediaCore
import Pipeline
import Stages
import Storage
import Synchronization
import Testing
import TestSupport
import Composition

/// Local storage that refuses every segment from `firstRefused` on, as a disk that filled up
/// would (small files still fit: the refused segment's temporary file is gone).
final class FillingStorage: ObjectStorage {
    let base: LocalDirectoryStorage
    let firstRefused: Int

    init(root: URL, firstRefused: Int) {
        base = LocalDirectoryStorage(root: root)
        self.firstRefused = firstRefused
    }

    func put(_ data: Data, key: String, contentType: String?) async throws(StorageError) {
        let name = key.split(separator: "/").last.map(String.init) ?? key
        if name.hasSuffix(".ts"), let number = Int(name.dropLast(3)), number >= firstRefused {
            throw .ioFailure(key: key, message: "No space left on device")
        }
        try await base.put(data, key: key, contentType: contentType)
    }

    func get(key: String) async throws(StorageError) -> Data { try await base.get(key: key) }
    func exists(key: String) async -> Bool { await base.exists(key: key) }
    func list(prefix: String) async throws(StorageError) -> [String] { try await base.list(prefix: prefix) }
}

@Suite struct DiskFullTests {
    @Test("a full disk midway: recording-failed.json and a VOD playlist of exactly the segments stored")
    func diskFillsUp() async throws {
        let outcome = try await onThread { () -> (playlist: String, events: [String], segments: [String], error: String?) in
            var logger = Logger(label: "disk-full")
            logger.logLevel = .critical
            let stage = try RecordedStage.load(from: Paths.fixture("four-grid"))
            let source = try RecordedStageSource(stage: stage, logger: logger)
            let root = try Paths.makeScratch("disk-full")
            let plan = CompositionPlan(
                compositionId: "comp00000001", encoder: try EncoderSpec.parse("320x180@30:500k"), layout: .defaultGrid,
                recording: RecordingDestinationPlan(destinationId: "dest00000001", storage: FillingStorage(root: root, firstRefused: 2),
                                                    encoderConfigurationId: "enc000000001", targetSegmentDurationSeconds: 2))
            let runner = try CompositionRunner(plan: plan, source: source, duration: nil, logger: logger)
            var pacer = AsFastAsPossiblePacer()
            var failure: String?
            do {
                failure = try runner.session.run(pacer: &pacer).failedSinks.values.first
            } catch { failure = "\(error)" }
            let sink = try #require(runner.recordingSink)
            let playlist = root.appendingPathComponent(sink.mediaPlaylistKey)
            // <prefix>/media/hls/<rendition>/playlist.m3u8 → <prefix>/events
            let prefix = playlist.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let events = try FileManager.default.contentsOfDirectory(atPath: prefix.appendingPathComponent("events").path)
            let segments = try FileManager.default.contentsOfDirectory(atPath: playlist.deletingLastPathComponent().path)
                .filter { $0.hasSuffix(".ts") }
            return (try String(contentsOf: playlist, encoding: .utf8), events.sorted(), segments.sorted(), failure)
        }
        #expect(outcome.error?.contains("No space left on device") == true, "the composition reports the failed output: \(String(describing: outcome.error))")
        #expect(outcome.events == ["recording-failed.json", "recording-started.json"])
        #expect(outcome.segments == ["0.ts", "1.ts"])
        let named = outcome.playlist.split(separator: "\n").filter { $0.hasSuffix(".ts") }.map(String.init)
        #expect(named == ["0.ts", "1.ts"], "\(outcome.playlist)")
        #expect(outcome.playlist.contains("#EXT-X-PLAYLIST-TYPE:VOD"))
        #expect(outcome.playlist.hasSuffix("#EXT-X-ENDLIST\n"))
    }
}
