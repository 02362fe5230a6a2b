// The outputs' timeline (issue 38): every packet of the HLS recording and of the channel is at
// or after 0, AAC's priming included (the encoder stamps its first packet 1024 samples before
// the first frame), and the audio starts that priming before the video, so the first frame's
// sound plays with the first picture. A live composition encodes without lookahead: its first
// video packet reaches the outputs before any audio, and the priming was written after it
// unshifted, wrapped in MPEG-TS to 2^33 - 1920 (a recording no player could seek in).

import Destinations
import FFmpeg
import Foundation
import HLS
import MediaCore
import Pipeline
import Stages
import Storage
import TestSupport
import Testing
import Composition

/// Every packet of a file as ffprobe reads it: media type, pts and dts in the stream's time base.
struct ProbedPacket {
    var media: String
    var pts: Int64
    var dts: Int64
}

func probePackets(_ path: String) throws -> [ProbedPacket] {
    let run = try runTool("ffprobe", ["-v", "error", "-show_entries", "packet=codec_type,pts,dts", "-of", "csv=p=0", path])
    #expect(run.status == 0, "ffprobe failed on \(path)")
    return run.text.split(separator: "\n").compactMap { line in
        let fields = line.split(separator: ",").map(String.init)
        guard fields.count == 3, let pts = Int64(fields[1]), let dts = Int64(fields[2]) else { return nil }
        return ProbedPacket(media: fields[0], pts: pts, dts: dts)
    }
}

@Suite(.serialized) struct OutputTimelineTests {
    init() { FFmpegLogging.setLevel(.quiet) }

    /// 3 s of fixtures/two-people, to a recording (2 s segments) and to nginx-rtmp: as a live
    /// stage composes (x264 without lookahead) and as `compose` does.
    @Test("no packet before 0 or wrapped; the audio starts its priming before the video", arguments: [true, false])
    func outputsStartAtZero(live: Bool) async throws {
        let nginx = try NginxRTMPServer()
        var pushTo = channel(port: nginx.port, key: "timeline")
        pushTo.queueCapacity = 2_048
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("timeline-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let stage = try RecordedStage.load(from: repositoryRoot.appendingPathComponent("fixtures/two-people").path)
        let plan = CompositionPlan(
            compositionId: "composition1", encoder: ComposedRun.spec, layout: .defaultGrid,
            recording: RecordingDestinationPlan(destinationId: "recording1", storage: LocalDirectoryStorage(root: root),
                                                encoderConfigurationId: "encoder1", targetSegmentDurationSeconds: 2),
            channel: ChannelDestinationPlan(destinationId: "channel1", configuration: pushTo), lowLatency: live)
        let runner = try CompositionRunner(plan: plan, source: try RecordedStageSource(stage: stage, logger: testLogger()),
                                           duration: .seconds(3), logger: testLogger())
        nonisolated(unsafe) let session = runner.session
        let result = try await onThread {
            var pacer = AsFastAsPossiblePacer()
            return try session.run(pacer: &pacer)
        }
        #expect(result.failedSinks.isEmpty)
        nginx.stop()

        // MPEG-TS: 90 kHz, 33 bits. The AAC priming is 1024 samples at 48 kHz: 1920 ticks.
        let playlist = root.appendingPathComponent(runner.recordingSink!.mediaPlaylistKey)
        let segments = try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n").filter { $0.hasSuffix(".ts") }
        #expect(segments.count == 2)
        var recorded: [ProbedPacket] = []
        for segment in segments {
            recorded += try probePackets(playlist.deletingLastPathComponent().appendingPathComponent(String(segment)).path)
        }
        let end90k: Int64 = 4 * 90_000
        let outside = recorded.filter { !(0..<end90k).contains($0.pts) || !(0..<end90k).contains($0.dts) }
        #expect(outside.isEmpty, "recording packets before 0 or wrapped (pts, dts): \(outside.prefix(5).map { "\($0.media) \($0.pts) \($0.dts)" })")
        let firstAudio = recorded.first { $0.media == "audio" }?.pts
        let firstVideo = recorded.first { $0.media == "video" }?.pts
        #expect(firstAudio == 0 && firstVideo == 1_920, "0.ts starts: audio at \(firstAudio ?? -1), video at \(firstVideo ?? -1)")

        // FLV: milliseconds. nginx-rtmp's recording starts at the first tag it got; the
        // priming packet reached it too (a decoder needs it for the first frame's sound), so
        // the video starts 21 ms (1024 samples, rounded) after the audio.
        let pushed = try probePackets(nginx.recording(streamKey: "timeline").path)
        let outsideFLV = pushed.filter { !(0..<4_000).contains($0.pts) || !(0..<4_000).contains($0.dts) }
        #expect(outsideFLV.isEmpty, "channel packets before 0 or wrapped: \(outsideFLV.prefix(5).map { "\($0.media) \($0.pts) \($0.dts)" })")
        let pushedAudio = pushed.first { $0.media == "audio" }?.pts
        let pushedVideo = pushed.first { $0.media == "video" }?.pts
        #expect(pushedAudio == 0 && pushedVideo == 21, "the channel starts: audio at \(pushedAudio ?? -1) ms, video at \(pushedVideo ?? -1) ms")
    }
}
