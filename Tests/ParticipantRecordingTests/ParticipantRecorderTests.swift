// The individual recorder on real media: files made by the ffmpeg CLI, read through the same
// ParticipantMediaSource interface compositions use, recorded to a local directory through
// the upload queue, and checked with ffprobe/ffmpeg: a VOD fMP4 HLS playlist that plays for
// the media's duration, segments cut at keyframes, metadata files, thumbnails.
import Destinations
import FFmpeg
import Foundation
import HLS
import LiveStage
import Logging
import MediaCore
import ParticipantRecording
import Pipeline
import Storage
import Testing
import TestSupport

struct RecordedOutput {
    let root: URL
    let layout: ParticipantRecordingLayout

    func url(_ key: String) -> URL { root.appendingPathComponent(key) }
    func text(_ key: String) throws -> String { try String(contentsOf: url(key), encoding: .utf8) }
    func json(_ key: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url(key))) as? [String: Any])
    }
}

enum RecorderHarness {
    static let logger = Logger(label: "participant-recording-test")

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("participant-rec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func ffmpeg(_ arguments: [String]) throws {
        guard try runTool("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y"] + arguments).status == 0 else {
            throw CocoaError(.fileWriteUnknown)
        }
    }

    static func ffprobe(_ arguments: [String]) throws -> String { try runTool("ffprobe", ["-v", "error"] + arguments).text }

    /// `seconds` of red picture (GOP 1 s) and a 440 Hz tone: H.264 + AAC in FLV (as RTMP
    /// carries them), or H.264 + Opus in Matroska (as WHIP carries them).
    static func clip(seconds: Int, in directory: URL, opus: Bool = false, vp8: Bool = false) throws -> String {
        let path = directory.appendingPathComponent(opus || vp8 ? "clip.mkv" : "clip.flv").path
        let video = vp8 ? ["-c:v", "libvpx", "-deadline", "realtime", "-g", "30"]
            : ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-bf", "0"]
        try ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=320x240:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-t", "\(seconds)"] + video + ["-c:a", opus || vp8 ? "libopus" : "aac", "-b:a", "64k", path])
        return path
    }

    /// Records `url`'s media on a thread of its own (the upload queue blocks; never on the
    /// cooperative pool).
    static func record(file url: String, plan: @escaping @Sendable (ParticipantRecordingLayout) -> ParticipantRecordingPlan,
                       in directory: URL) async throws -> (RecordedOutput, ParticipantRecordingOutcome) {
        let result = try await onThread { () throws -> ResultBox in
            ResultBox(try record(try DemuxerMediaSource(url: url), plan: plan, in: directory))
        }
        return result.value
    }

    final class ResultBox: @unchecked Sendable {
        let value: (RecordedOutput, ParticipantRecordingOutcome)
        init(_ value: (RecordedOutput, ParticipantRecordingOutcome)) { self.value = value }
    }

    static func record(_ source: any ParticipantMediaSource, plan: (ParticipantRecordingLayout) -> ParticipantRecordingPlan,
                       in directory: URL) throws -> (RecordedOutput, ParticipantRecordingOutcome) {
        let layout = ParticipantRecordingLayout(stageId: "AbCdef1G2hij", sessionId: "st-ZyXwvu1T2sABC", participantId: "p1",
                                                startedAt: Date(timeIntervalSince1970: 1_704_110_455))
        let storage = directory.appendingPathComponent("bucket")
        let recorder = ParticipantRecorder(plan: plan(layout), uploads: UploadQueue(storage: LocalDirectoryStorage(root: storage), logger: logger),
                                           logger: logger)
        recorder.start()
        while try recorder.record(from: source) {}
        let outcome = recorder.finish()
        return (RecordedOutput(root: storage, layout: layout), outcome)
    }
}

struct ParticipantRecorderTests {
    @Test("an RTMP-like publisher (H.264 + AAC) is remuxed into a VOD fMP4 HLS recording that plays for its duration")
    func remuxesH264AndAAC() async throws {
        let directory = try RecorderHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clip = try RecorderHarness.clip(seconds: 7, in: directory)
        let (output, outcome) = try await RecorderHarness.record(file: clip, plan: { layout in
            ParticipantRecordingPlan(layout: layout, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij",
                                     targetSegmentDurationSeconds: 2,
                                     thumbnails: ThumbnailPlan(intervalSeconds: 2, sequential: true, latest: true))
        }, in: directory)
        #expect(outcome.status == .recordingEnded)
        #expect(outcome.segments >= 3)
        #expect(abs(outcome.durationMs - 7000) <= 100, "\(outcome)")
        let playlist = try output.text(output.layout.mediaPlaylistKey)
        #expect(playlist.contains("#EXT-X-PLAYLIST-TYPE:VOD") && playlist.contains("#EXT-X-ENDLIST"))
        #expect(playlist.contains("#EXT-X-MAP:URI=\"init.mp4\"") && playlist.contains("\n1.mp4\n"))
        let probe = try RecorderHarness.ffprobe(["-show_entries", "format=duration:stream=codec_name", "-of", "csv=p=0",
                                                 output.url(output.layout.multivariantPlaylistKey).path])
        #expect(probe.contains("h264") && probe.contains("aac"), "\(probe)")
        let duration = Double(probe.split(separator: "\n").last.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
        #expect(abs(duration - 7) < 0.2, "\(probe)")
        let ended = try output.json(output.layout.metadataKey(for: .recordingEnded))
        #expect(ended["recording_status"] as? String == "RECORDING_ENDED" && ended["participant_id"] as? String == "p1")
        #expect(((ended["media"] as? [String: Any])?["hls"] as? [String: Any])?["duration_ms"] as? Int == Int(outcome.durationMs))
        #expect(FileManager.default.fileExists(atPath: output.url(output.layout.metadataKey(for: .recordingStarted)).path))
        #expect(outcome.thumbnails >= 3)
        #expect(FileManager.default.fileExists(atPath: output.url(output.layout.thumbnailKey(number: 1)).path))
        #expect(FileManager.default.fileExists(atPath: output.url(output.layout.latestThumbnailKey).path))
        let multivariant = try output.text(output.layout.multivariantPlaylistKey)
        #expect(multivariant.contains("CODECS=\"avc1.") && multivariant.contains("mp4a.40.2") && multivariant.contains("high/playlist.m3u8"))
    }

    @Test("AUDIO_ONLY writes audio segments only; NONE writes thumbnails and no HLS media")
    func mediaTypes() async throws {
        let directory = try RecorderHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clip = try RecorderHarness.clip(seconds: 5, in: directory)
        let (audio, audioOutcome) = try await RecorderHarness.record(file: clip, plan: { layout in
            ParticipantRecordingPlan(layout: layout, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij",
                                     mediaTypes: .audioOnly, targetSegmentDurationSeconds: 2)
        }, in: directory.appendingPathComponent("audio"))
        #expect(audioOutcome.status == .recordingEnded && audioOutcome.segments >= 2)
        let streams = try RecorderHarness.ffprobe(["-show_entries", "stream=codec_name", "-of", "csv=p=0",
                                                   audio.url(audio.layout.mediaPlaylistKey).path])
        #expect(Set(streams.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }) == ["aac"], "\(streams)")

        let (none, noneOutcome) = try await RecorderHarness.record(file: clip, plan: { layout in
            ParticipantRecordingPlan(layout: layout, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij",
                                     mediaTypes: .none, thumbnails: ThumbnailPlan(intervalSeconds: 1, sequential: true, latest: false))
        }, in: directory.appendingPathComponent("none"))
        #expect(noneOutcome.status == .recordingEnded && noneOutcome.segments == 0 && noneOutcome.thumbnails >= 4)
        #expect(!FileManager.default.fileExists(atPath: none.url(none.layout.mediaPlaylistKey).path))
        let ended = try none.json(none.layout.metadataKey(for: .recordingEnded))
        #expect(Set(((ended["media"] as? [String: Any]) ?? [:]).keys) == ["hls", "thumbnails"])
    }

    @Test("VP8 (which fMP4 HLS cannot carry) is left out and said so; its Opus audio and thumbnails are recorded")
    func vp8IsLeftOutAndSaidSo() async throws {
        let directory = try RecorderHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clip = try RecorderHarness.clip(seconds: 4, in: directory, vp8: true)
        let (output, outcome) = try await RecorderHarness.record(file: clip, plan: { layout in
            ParticipantRecordingPlan(layout: layout, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij",
                                     targetSegmentDurationSeconds: 2, thumbnails: ThumbnailPlan(intervalSeconds: 1, sequential: true))
        }, in: directory)
        #expect(outcome.status == .recordingEnded && outcome.thumbnails >= 3, "\(outcome)")
        let streams = try RecorderHarness.ffprobe(["-show_entries", "stream=codec_name", "-of", "csv=p=0",
                                                   output.url(output.layout.mediaPlaylistKey).path])
        #expect(Set(streams.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }) == ["opus"], "\(streams)")
        let ended = try output.json(output.layout.metadataKey(for: .recordingEnded))
        #expect((ended["recording_status_message"] as? String)?.contains("VP8") == true, "\(ended)")
    }

    @Test("a reconnect continues the recording after a discontinuity: it starts at its keyframe, and its date and timestamps keep the gap")
    func reconnectKeepsTheGap() async throws {
        let directory = try RecorderHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["a", "b"] { try FileManager.default.createDirectory(at: directory.appendingPathComponent(name), withIntermediateDirectories: true) }
        let first = try RecorderHarness.clip(seconds: 4, in: directory.appendingPathComponent("a"))
        let second = try RecorderHarness.clip(seconds: 3, in: directory.appendingPathComponent("b"))
        let epoch: Int64 = 1_764_158_000_000
        let box = try await onThread { () throws -> RecorderHarness.ResultBox in
            let layout = ParticipantRecordingLayout(stageId: "AbCdef1G2hij", sessionId: "st-ZyXwvu1T2sABC", participantId: "p1",
                                                    startedAt: Date(timeIntervalSince1970: 1_764_158_000))
            let storage = directory.appendingPathComponent("bucket")
            let plan = ParticipantRecordingPlan(layout: layout, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij",
                                                targetSegmentDurationSeconds: 2, timestampEpochMs: epoch)
            let recorder = ParticipantRecorder(plan: plan, uploads: UploadQueue(storage: LocalDirectoryStorage(root: storage),
                                                                                logger: RecorderHarness.logger),
                                               logger: RecorderHarness.logger)
            recorder.start()
            // The first connection from stage time 0, the second from 6 s (after 2 s away).
            let connection = try DemuxerMediaSource(url: first)
            while try recorder.record(from: connection) {}
            recorder.sourceReplaced()
            let shifted = ShiftedMediaSource(base: try DemuxerMediaSource(url: second), shiftMicroseconds: 6_000_000)
            while try recorder.record(from: shifted) {}
            return RecorderHarness.ResultBox((RecordedOutput(root: storage, layout: layout), recorder.finish()))
        }
        let (output, outcome) = box.value
        #expect(outcome.status == .recordingEnded)
        let playlist = try MediaPlaylist.parse(try output.text(output.layout.mediaPlaylistKey))
        let breaks = playlist.segments.indices.filter { playlist.segments[$0].discontinuity }
        #expect(breaks.count == 1, "\(playlist.segments)")
        #expect(playlist.segments.first?.programDateTimeMs == epoch)
        if let index = breaks.first {
            #expect(playlist.segments[index].programDateTimeMs.map { abs($0 - (epoch + 6000)) <= 1 } == true, "\(playlist.segments[index])")
        }
        #expect(playlist.segments.filter { $0.programDateTimeMs != nil }.count == 2)
        // The video after the gap starts with a keyframe 6 s after the first connection's.
        let firstVideo = try RecorderHarness.ffprobe(["-select_streams", "v", "-show_entries", "packet=pts_time", "-of", "csv=p=0",
                                                      "-read_intervals", "%+#1", second])
        let videoStart = Double(firstVideo.split(separator: "\n").first.map(String.init) ?? "") ?? 0
        let packets = try RecorderHarness.ffprobe(["-select_streams", "v", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
                                                   output.url(output.layout.multivariantPlaylistKey).path])
        let rows = packets.split(separator: "\n").map { $0.split(separator: ",") }.filter { $0.count >= 2 }
        let afterGap = rows.first { (Double($0[0]) ?? 0) > 4.5 }
        #expect(afterGap.map { abs((Double($0[0]) ?? 0) - 6 - videoStart) < 0.002 && $0[1].hasPrefix("K") } == true,
                "first video after the gap: \(String(describing: afterGap)), expected a keyframe at \(6 + videoStart)")
        #expect(rows.filter { (Double($0[0]) ?? 0) > 4.05 && (Double($0[0]) ?? 0) < 5.95 }.isEmpty, "nothing in the gap")
    }
}

/// A source with its timestamps moved later (a reconnect's media on the stage clock).
final class ShiftedMediaSource: ParticipantMediaSource {
    let base: any ParticipantMediaSource
    let shiftMicroseconds: Int64

    init(base: any ParticipantMediaSource, shiftMicroseconds: Int64) {
        self.base = base
        self.shiftMicroseconds = shiftMicroseconds
    }

    func stream(_ type: MediaType) -> MediaStreamSetup? { base.stream(type) }

    func read(into packet: Packet) throws(FFmpegError) -> MediaSourceRead {
        let result = try base.read(into: packet)
        if case .packet(let type) = result, let setup = base.stream(type) {
            let shift = MediaTime.microseconds.rescale(shiftMicroseconds, to: setup.info.timeBase)
            if packet.hasPTS { packet.pts += shift }
            if packet.hasDTS { packet.dts += shift }
        }
        return result
    }

    var startTimeMicroseconds: Int64? { base.startTimeMicroseconds.map { $0 + shiftMicroseconds } }
    var durationMicroseconds: Int64? { base.durationMicroseconds }
    var isLive: Bool { false }
}
