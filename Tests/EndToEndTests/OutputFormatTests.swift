// The recording as a player sees it: streams (ffprobe), frame timestamps, playlist rules and
// the JSON metadata files (the seed's "IVS Composite Recording").
import Foundation
import HLS
import MediaCore
import Pipeline
import Testing

/// The compositions whose format is checked: committed fixtures at several encoder settings.
let formatCases: [ComposeRequest] = [
    SharedOutputs.twoPeople,
    SharedOutputs.fourGrid,
    ComposeRequest(stageDirectory: Paths.fixture("ivs-hls"), encoder: "640x360@25:1M", segmentSeconds: 3),
    ComposeRequest(stageDirectory: Paths.fixture("two-people"), encoder: "320x180@29.97:400k", segmentSeconds: 2, durationMs: 3500),
]

extension ComposeRequest: CustomTestStringConvertible {
    var testDescription: String {
        "\(URL(fileURLWithPath: stageDirectory).lastPathComponent) \(encoder) seg \(segmentSeconds)s"
            + (durationMs.map { " for \($0) ms" } ?? "")
    }
}

extension ComposedRecording {
    /// ceil(duration × fps): the last frame starts before the end.
    func expectedFrames(durationMs: Int64) -> Int {
        let num = encoder.frameRate.numerator, den = encoder.frameRate.denominator
        return Int((durationMs * num + 1000 * den - 1) / (1000 * den))
    }

    /// One frame in the 90 kHz MPEG-TS clock.
    var frameTicks90k: Int64 { 90_000 * encoder.frameRate.denominator / encoder.frameRate.numerator }
}

@Suite("Output format")
struct OutputFormatTests {
    @Test("multivariant playlist probes as H.264 (size, rate) + AAC 48 kHz stereo, lasting the stage", arguments: formatCases)
    func streamsAndDuration(request: ComposeRequest) async throws {
        let recording = try await SharedOutputs.shared.recording(request)
        let output = try await runChecked(Paths.ffprobe, ["-v", "error", "-show_streams", "-show_format", "-of", "json",
                                                          recording.multivariantPlaylist.path])
        let json = try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any])
        let streams = json["streams"] as? [[String: Any]] ?? []
        let video = try #require(streams.first { $0["codec_type"] as? String == "video" })
        let audio = try #require(streams.first { $0["codec_type"] as? String == "audio" })
        #expect(streams.count == 2)
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["width"] as? Int == recording.encoder.width)
        #expect(video["height"] as? Int == recording.encoder.height)
        #expect(video["pix_fmt"] as? String == "yuv420p")
        let rate = "\(recording.encoder.frameRate.numerator)/\(recording.encoder.frameRate.denominator)"
        #expect(video["r_frame_rate"] as? String == rate)
        #expect(audio["codec_name"] as? String == "aac")
        #expect(audio["profile"] as? String == "LC")
        #expect(audio["sample_rate"] as? String == "48000")
        #expect(audio["channels"] as? Int == 2)

        let format = try #require(json["format"] as? [String: Any])
        let duration = try #require((format["duration"] as? String).flatMap(Double.init))
        let expected = Double(request.durationMs ?? recording.manifest.durationMs ?? 0) / 1000
        #expect(abs(duration - expected) <= 0.2, "probed \(duration) s, stage \(expected) s")
    }

    @Test("every frame once: count = duration × fps, pts step exactly one frame", arguments: formatCases)
    func frameTimestamps(request: ComposeRequest) async throws {
        let recording = try await SharedOutputs.shared.recording(request)
        let video = try await SharedOutputs.shared.video(of: recording)
        let durationMs = request.durationMs ?? recording.manifest.durationMs ?? 0
        let expected = recording.expectedFrames(durationMs: durationMs)
        #expect(Int(recording.result.frames) == expected, "session reported \(recording.result.frames) frames")
        #expect(video.packetPTS.count == expected, "\(video.packetPTS.count) video packets, expected \(expected)")
        #expect(video.frameCount == expected, "decoded \(video.frameCount) frames, expected \(expected)")
        #expect(video.timeBaseDenominator == 90_000)
        // NTSC rates: 90000·1001/30000 = 3003 exactly, so the step is exact for every rate we use.
        let step = recording.frameTicks90k
        var problems: [String] = []
        for (index, pair) in zip(video.packetPTS, video.packetPTS.dropFirst()).enumerated() where pair.1 - pair.0 != step {
            problems.append("frame \(index + 1): pts \(pair.0) -> \(pair.1) (step \(pair.1 - pair.0), want \(step))")
        }
        #expect(problems.isEmpty, "\(problems.prefix(10).joined(separator: "\n"))")
    }

    @Test("media playlist: target duration, sequence, VOD + ENDLIST, segments in order and present", arguments: formatCases)
    func mediaPlaylistRules(request: ComposeRequest) async throws {
        let recording = try await SharedOutputs.shared.recording(request)
        let playlist = ParsedMediaPlaylist(try String(contentsOf: recording.mediaPlaylist, encoding: .utf8))
        #expect(playlist.lines.first == "#EXTM3U")
        let target = try #require(playlist.tag("EXT-X-TARGETDURATION").flatMap(Int.init))
        #expect(target == request.segmentSeconds)
        #expect(playlist.tag("EXT-X-MEDIA-SEQUENCE") == "0")
        #expect(playlist.tag("EXT-X-PLAYLIST-TYPE") == "VOD")
        #expect(playlist.lines.filter { $0 == "#EXT-X-ENDLIST" }.count == 1)
        #expect(playlist.lines.last(where: { !$0.isEmpty }) == "#EXT-X-ENDLIST")
        #expect(!playlist.segments.isEmpty)
        for (index, segment) in playlist.segments.enumerated() {
            #expect(segment.uri == "\(index).ts", "segment \(index) is named \(segment.uri)")
            #expect(Int(segment.duration.rounded()) <= target, "EXTINF \(segment.durationText) rounds above \(target)")
            #expect(segment.duration > 0)
            let file = recording.renditionFolder.appendingPathComponent(segment.uri)
            #expect(FileManager.default.fileExists(atPath: file.path), "\(segment.uri) is missing")
        }
        // Every segment but the last is the target duration to within a frame (keyframes on
        // the boundaries; 59.94 fps cannot hit 2 s exactly).
        for segment in playlist.segments.dropLast() {
            #expect(abs(segment.duration - Double(request.segmentSeconds)) < recording.frameDurationSeconds, "EXTINF \(segment.durationText)")
        }
        let durationMs = request.durationMs ?? recording.manifest.durationMs ?? 0
        let frames = Int64(recording.expectedFrames(durationMs: durationMs))
        let exactMs = frames * 1000 * recording.encoder.frameRate.denominator / recording.encoder.frameRate.numerator
        #expect(abs(playlist.totalMilliseconds - exactMs) <= Int64(playlist.segments.count), "EXTINF sum \(playlist.totalMilliseconds) ms")
        // No stray files: exactly the listed segments and the playlist.
        let files = try FileManager.default.contentsOfDirectory(atPath: recording.renditionFolder.path).sorted()
        #expect(files == (playlist.segments.map(\.uri) + ["playlist.m3u8"]).sorted())
    }

    @Test("each segment starts with a keyframe and plays on its own", arguments: [SharedOutputs.twoPeople, SharedOutputs.fourGrid])
    func segmentsStartOnKeyframes(request: ComposeRequest) async throws {
        let recording = try await SharedOutputs.shared.recording(request)
        let playlist = ParsedMediaPlaylist(try String(contentsOf: recording.mediaPlaylist, encoding: .utf8))
        for segment in playlist.segments {
            let path = recording.renditionFolder.appendingPathComponent(segment.uri).path
            let streams = try await MediaDecoder.probeStreams(path)
            let videoIndex = try #require(streams.first { $0.codecType == "video" }?.index)
            #expect(streams.contains { $0.codecType == "audio" }, "\(segment.uri) has no audio")
            let packets = try await MediaDecoder.probePackets(path).filter { $0.streamIndex == videoIndex }
            #expect(packets.first?.isKeyframe == true, "\(segment.uri) does not start with a keyframe")
            let frames = Double(packets.count) * recording.frameDurationSeconds
            #expect(abs(frames - segment.duration) < 0.002, "\(segment.uri): \(packets.count) frames vs EXTINF \(segment.durationText)")
        }
    }

    @Test("multivariant playlist points at the rendition with its resolution, rate and codecs")
    func multivariant() async throws {
        let recording = try await SharedOutputs.shared.recording(SharedOutputs.twoPeople)
        let text = try String(contentsOf: recording.multivariantPlaylist, encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "#EXTM3U")
        let inf = try #require(lines.first { $0.hasPrefix("#EXT-X-STREAM-INF:") })
        #expect(inf.contains("RESOLUTION=320x180"))
        #expect(inf.contains("FRAME-RATE=30.000"))
        #expect(inf.contains("CODECS=\"avc1."))
        #expect(inf.contains("mp4a.40.2"))
        let uri = try #require(lines.first { !$0.hasPrefix("#") })
        #expect(uri == "\(recording.renditionName)/playlist.m3u8")
        #expect(recording.renditionName.hasPrefix("180p30-"))
    }

    @Test("the playlist is EVENT without ENDLIST while recording, VOD + ENDLIST only at the end")
    func eventThenVod() async throws {
        let recording = try await SharedOutputs.shared.recording(SharedOutputs.fourGrid)
        let versions = recording.uploads.filter { $0.key.hasSuffix("/playlist.m3u8") }.compactMap(\.text)
        #expect(versions.count >= 2)
        for (index, text) in versions.dropLast().enumerated() {
            let playlist = ParsedMediaPlaylist(text)
            #expect(playlist.tag("EXT-X-PLAYLIST-TYPE") == "EVENT", "upload \(index) of the playlist")
            #expect(!playlist.has("#EXT-X-ENDLIST"), "upload \(index) of the playlist already has ENDLIST")
            #expect(playlist.segments.count == index + 1, "upload \(index) lists \(playlist.segments.count) segments")
        }
        let final = ParsedMediaPlaylist(try #require(versions.last))
        #expect(final.tag("EXT-X-PLAYLIST-TYPE") == "VOD")
        #expect(final.has("#EXT-X-ENDLIST"))
        // A segment is stored before the playlist that lists it.
        var stored = Set<String>()
        for upload in recording.uploads {
            let name = String(upload.key.split(separator: "/").last ?? "")
            if name.hasSuffix(".ts") { stored.insert(name) }
            if name == "playlist.m3u8", let text = upload.text {
                for segment in ParsedMediaPlaylist(text).segments {
                    #expect(stored.contains(segment.uri), "playlist listed \(segment.uri) before it was stored")
                }
            }
        }
        // recording-started.json comes first, recording-ended.json last.
        #expect(recording.uploads.first?.key.hasSuffix("events/recording-started.json") == true)
        #expect(recording.uploads.last?.key.hasSuffix("events/recording-ended.json") == true)
    }

    @Test("recording-started.json and recording-ended.json: the seed's fields and values", arguments: formatCases)
    func metadataFiles(request: ComposeRequest) async throws {
        let recording = try await SharedOutputs.shared.recording(request)
        let events = try FileManager.default.contentsOfDirectory(atPath: recording.eventsFolder.path).sorted()
        #expect(events == ["recording-ended.json", "recording-started.json"])
        let started = try readJSONObject(recording.eventsFolder.appendingPathComponent("recording-started.json"))
        let ended = try readJSONObject(recording.eventsFolder.appendingPathComponent("recording-ended.json"))
        let rfc3339 = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/#

        #expect(Set(started.keys) == ["version", "stage_arn", "recording_started_at", "recording_status", "media"])
        #expect(started["version"] as? String == "v1")
        #expect(started["stage_arn"] as? String == recording.manifest.stageArn)
        #expect(started["recording_status"] as? String == "RECORDING_STARTED")
        #expect((started["recording_started_at"] as? String)?.wholeMatch(of: rfc3339) != nil)

        #expect(Set(ended.keys).isSuperset(of: ["version", "stage_arn", "recording_started_at", "recording_ended_at", "recording_status", "media"]))
        #expect(Set(ended.keys).isSubset(of: ["version", "stage_arn", "recording_started_at", "recording_ended_at",
                                              "recording_status", "recording_status_message", "media"]))
        #expect(ended["version"] as? String == "v1")
        #expect(ended["stage_arn"] as? String == recording.manifest.stageArn)
        #expect(ended["recording_status"] as? String == "RECORDING_ENDED")
        #expect((ended["recording_ended_at"] as? String)?.wholeMatch(of: rfc3339) != nil)
        #expect(ended["recording_started_at"] as? String == started["recording_started_at"] as? String)
        if let startText = started["recording_started_at"] as? String, let endText = ended["recording_ended_at"] as? String {
            #expect(startText <= endText)
        }

        let playlist = ParsedMediaPlaylist(try String(contentsOf: recording.mediaPlaylist, encoding: .utf8))
        for (name, document) in [("started", started), ("ended", ended)] {
            let media = try #require(document["media"] as? [String: Any], "\(name): media")
            let hls = try #require(media["hls"] as? [String: Any], "\(name): media.hls")
            #expect(hls["path"] as? String == "media/hls")
            #expect(hls["playlist"] as? String == "multivariant.m3u8")
            let renditions = try #require(hls["renditions"] as? [[String: Any]])
            #expect(renditions.count == 1)
            let rendition = try #require(renditions.first)
            #expect(rendition["path"] as? String == recording.renditionName)
            #expect(rendition["playlist"] as? String == "playlist.m3u8")
            #expect(rendition["resolution_width"] as? Int == recording.encoder.width)
            #expect(rendition["resolution_height"] as? Int == recording.encoder.height)
            // The paths resolve to the files we wrote.
            let base = recording.prefix.appendingPathComponent(hls["path"] as? String ?? "")
            #expect(FileManager.default.fileExists(atPath: base.appendingPathComponent(hls["playlist"] as? String ?? "").path))
            #expect(FileManager.default.fileExists(atPath: base.appendingPathComponent("\(recording.renditionName)/playlist.m3u8").path))
            if name == "started" {
                #expect(hls["duration_ms"] == nil, "duration_ms only once the recording ended")
            } else {
                let durationMs = try #require((hls["duration_ms"] as? NSNumber)?.int64Value)
                #expect(abs(durationMs - playlist.totalMilliseconds) <= 1, "duration_ms \(durationMs) vs EXTINF sum \(playlist.totalMilliseconds)")
                #expect(abs(durationMs - recording.result.duration.millisecondsValue) <= 1)
            }
        }
    }
}
