// End to end: the two-people fixture composed straight into moto through S3Storage, then
// every object of the recording downloaded back and the playlist read by ffprobe.
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
import Testing
import Composition

@Suite struct S3CompositionTests {
    @Test func composedRecordingLandsInS3AndPlays() async throws {
        let storage = try await MotoServer.storage(prefix: "recordings", open: true)
        let outcome = try await onThread { () throws -> (CompositionResult, String, String, String) in
            var logger = Logger(label: "s3-e2e")
            logger.logLevel = .error
            let stage = try RecordedStage.load(from: Paths.fixture("two-people"))
            let source = try RecordedStageSource(stage: stage, logger: logger)
            let plan = CompositionPlan(
                compositionId: "comp00000001", encoder: try EncoderSpec.parse("320x180@30:500k"), layout: .defaultGrid,
                recording: RecordingDestinationPlan(destinationId: "dest00000001", storage: storage,
                                                    encoderConfigurationId: "enc000000001",
                                                    targetSegmentDurationSeconds: 2))
            let runner = try CompositionRunner(plan: plan, source: source, logger: logger)
            var pacer = AsFastAsPossiblePacer()
            let result = try runner.session.run(pacer: &pacer)
            guard let sink = runner.recordingSink, let layout = runner.recordingLayout else {
                throw ToolFailure(description: "no recording sink")
            }
            return (result, layout.prefix, sink.mediaPlaylistKey, sink.multivariantPlaylistKey)
        }
        let (result, prefix, mediaPlaylistKey, multivariantKey) = outcome
        #expect(result.failedSinks.isEmpty, "\(result.failedSinks)")

        let keys = try await storage.list(prefix: prefix + "/")
        #expect(keys.contains(mediaPlaylistKey))
        #expect(keys.contains(multivariantKey))
        #expect(keys.contains(prefix + "/events/recording-started.json"))
        #expect(keys.contains(prefix + "/events/recording-ended.json"))
        let segments = keys.filter { $0.hasSuffix(".ts") }
        #expect(segments.count >= 3, "\(keys)")

        // Download the whole recording and let ffprobe read it as a player would.
        let folder = try Paths.makeScratch("recording")
        defer { try? FileManager.default.removeItem(at: folder) }
        for key in keys {
            let file = folder.appendingPathComponent(key)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try await storage.get(key: key).write(to: file)
        }
        let playlist = String(decoding: try await storage.get(key: mediaPlaylistKey), as: UTF8.self)
        #expect(playlist.contains("#EXT-X-PLAYLIST-TYPE:VOD"))
        #expect(playlist.contains("#EXT-X-ENDLIST"))

        let probe = try await runTool(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_name,width,height",
                                       "-of", "json", folder.appendingPathComponent(mediaPlaylistKey).path])
        struct Probe: Decodable {
            struct Stream: Decodable { var codec_name: String; var width: Int?; var height: Int? }
            struct Format: Decodable { var duration: String }
            var streams: [Stream]
            var format: Format
        }
        let info = try JSONDecoder().decode(Probe.self, from: probe)
        #expect(info.streams.contains { $0.codec_name == "h264" && $0.width == 320 && $0.height == 180 })
        #expect(info.streams.contains { $0.codec_name == "aac" })
        let duration = try #require(Double(info.format.duration))
        #expect(abs(duration - 6.0) < 0.3, "duration \(duration)")
    }
}
