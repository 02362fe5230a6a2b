import Foundation
import Testing
import TestSupport
@testable import Stages

/// The repository root, from this file's path (Tests/StagesTests/FixtureTests.swift).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// `ffprobe` fields of the first video and audio streams ("video.width", "audio.sample_rate",
/// "rotation", "duration").
func probe(_ path: String) throws -> [String: String] {
    let probed = try runTool("ffprobe", ["-v", "error", "-show_entries",
        "stream=codec_type,codec_name,width,height,sample_rate,channels:stream_side_data=rotation:format=duration", path])
    #expect(probed.status == 0, "ffprobe failed on \(path)")
    var fields: [String: String] = [:]
    var section: [String: String] = [:]
    for line in probed.text.split(separator: "\n").map(String.init) {
        if line == "[/STREAM]" {
            let type = section["codec_type"] ?? "unknown"
            for (key, value) in section where key != "codec_type" {
                let name = key == "rotation" ? key : "\(type).\(key)"
                if fields[name] == nil { fields[name] = value }
            }
            section = [:]
            continue
        }
        let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { continue }
        if parts[0] == "duration" { fields["duration"] = parts[1] } else { section[parts[0]] = parts[1] }
    }
    return fields
}

let ffmpegAvailable = (try? runTool("ffprobe", ["-version"]).status) == 0

@Suite(.enabled(if: ffmpegAvailable, "needs ffmpeg/ffprobe")) struct FixtureTests {
    @Test(arguments: ["two-people", "four-grid", "ivs-hls"])
    func committedFixturesLoadAndProbe(name: String) async throws {
        // ffprobe runs block: on a thread of their own, never on the concurrency pool.
        try await onThread { try Self.probeCommittedFixture(name) }
    }

    static func probeCommittedFixture(_ name: String) throws {
        let stage = try RecordedStage.load(from: repositoryRoot.appendingPathComponent("fixtures/\(name)").path)
        for participant in stage.manifest.participants {
            let path = try #require(stage.mediaPath(for: participant))
            let fields = try probe(path)
            #expect(fields["video.width"] == "320" && fields["video.height"] == "180", "\(path)")
            #expect(fields["audio.sample_rate"] == "48000", "\(path)")
        }
    }

    @Test func fourGridHasTheDocumentedTimeline() throws {
        let stage = try RecordedStage.load(from: repositoryRoot.appendingPathComponent("fixtures/four-grid").path)
        let byId = Dictionary(uniqueKeysWithValues: stage.manifest.participants.map { ($0.participantId, $0) })
        #expect(byId["p0"]?.attributes["isFeatured"] == "true")
        #expect(byId["p2"]?.attributes["isPip"] == "true")
        #expect(byId["p1"]?.state(atMs: 4000).isVideoStopped == true)
        #expect(byId["p1"]?.state(atMs: 5000).isVideoStopped == false)
        #expect(byId["p2"]?.state(atMs: 3000).isAudioMuted == true)
        #expect(byId["p3"]?.state(atMs: 1999).isPublished == false)
        #expect(byId["p3"]?.resolvedMediaOffsetMs == 2000)
        #expect(try probe(stage.mediaPath(for: byId["p2"]!)!)["video.codec_name"] == "vp8")
    }

    /// The generator's edge cases, generated into a temp dir (2 s clips).
    @Test func generatorEdgeCases() async throws {
        try await onThread { try Self.generateEdgeCases() }
    }

    static func generateEdgeCases() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-edges-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let script = repositoryRoot.appendingPathComponent("scripts/make-fixture.sh").path
        let generated = try runTool("bash", [script, "--out", out.path, "--duration", "2", "--participants", "1",
                                                 "--resolution-change", "--samplerate-change", "--corrupt", "--rotated",
                                                 "--odd-size", "--above-1080p"])
        try #require(generated.status == 0)
        let stage = try RecordedStage.load(from: out.path)
        #expect(stage.manifest.participants.map(\.participantId) == [
            "p0", "edge-resolution-change", "edge-samplerate-change", "edge-corrupt", "edge-rotated", "edge-odd-size", "edge-above-1080p",
        ])
        func media(_ id: String) -> String { stage.directory.appendingPathComponent("\(id).\(id == "edge-odd-size" ? "webm" : id.hasSuffix("change") ? "ts" : "mp4")").path }
        #expect(try probe(media("edge-rotated"))["rotation"] == "90")
        let odd = try probe(media("edge-odd-size"))
        #expect(odd["video.width"] == "317" && odd["video.height"] == "181")
        let big = try probe(media("edge-above-1080p"))
        #expect(big["video.width"] == "2560" && big["video.height"] == "1440")
        #expect(try probe(media("edge-corrupt"))["video.codec_name"] == "h264")
        // The switches happen inside the stream: count decoded frame sizes and audio rates.
        let sizes = try runTool("ffmpeg", ["-nostdin", "-i", media("edge-resolution-change"), "-vf", "showinfo", "-f", "null", "-"], keeping: .both).text
        #expect(Set(sizes.matches(of: /\ss:(\d+x\d+)\s/).map { String($0.1) }) == ["320x180", "480x270"])
        let rates = try runTool("ffmpeg", ["-nostdin", "-i", media("edge-samplerate-change"), "-af", "ashowinfo", "-f", "null", "-"], keeping: .both).text
        #expect(Set(rates.matches(of: /rate:(\d+)/).map { String($0.1) }) == ["48000", "44100"])
    }
}
