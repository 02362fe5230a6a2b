// `stage-compositor compose` on bad input: a non-zero exit, one clear line naming the file or
// field at fault, no crash or stack trace, and no recording written. Runs the built binary
// (see Paths.cli: `swift test` builds the executable along with the tests).
import Foundation
import Layout
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

struct CLIRun: Sendable {
    var output: ProcessOutput
    var outDirectory: URL
}

/// Runs `compose` with `arguments` (plus --out and, unless given, a small --encoder).
func runCompose(_ arguments: [String]) async throws -> CLIRun {
    let out = try Paths.makeScratch("cli-out")
    var all = ["compose", "--out", out.path] + arguments
    if !arguments.contains("--encoder") { all += ["--encoder", "320x180@30:500k"] }
    return CLIRun(output: try await runProcess(Paths.cli, all), outDirectory: out)
}

/// Asserts a clean user-facing failure whose message contains every one of `mentions`.
func expectCleanFailure(_ run: CLIRun, mentions: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    let stderr = run.output.stderr
    #expect(!run.output.crashed, "crashed: \(stderr.prefix(400))", sourceLocation: sourceLocation)
    #expect(run.output.status != 0, "exit status 0 on bad input", sourceLocation: sourceLocation)
    for mention in mentions {
        #expect(stderr.contains(mention), "message does not name '\(mention)': \(stderr)", sourceLocation: sourceLocation)
    }
    for trace in ["Fatal error", "Backtrac", "Program crashed", "Stack dump", "Thread 0"] {
        #expect(!stderr.contains(trace), "stack trace on stderr: \(stderr.prefix(400))", sourceLocation: sourceLocation)
    }
    let lines = stderr.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    #expect(lines.count <= 2, "expected a short message, got \(lines.count) lines:\n\(stderr.prefix(600))", sourceLocation: sourceLocation)
    #expect(lines.first?.hasPrefix("error:") == true, "first line: \(lines.first ?? "")", sourceLocation: sourceLocation)
    #expect(run.output.stdout.isEmpty, "printed a playlist path on failure: \(run.output.stdoutText)", sourceLocation: sourceLocation)
    let written = (try? FileManager.default.subpathsOfDirectory(atPath: run.outDirectory.path)) ?? []
    #expect(written.isEmpty, "wrote \(written.prefix(5)) on bad input", sourceLocation: sourceLocation)
}

/// A copy of two-people (media linked) whose manifest and media can be broken at will.
func brokenTwoPeople(manifest transform: (String) -> String = { $0 }) throws -> URL {
    let original = try String(contentsOfFile: Paths.fixture("two-people") + "/manifest.json", encoding: .utf8)
    let path = try makeStage(named: "broken", manifest: transform(original), linkingMediaFrom: "two-people",
                             files: ["p0-red.mp4", "p1-green.mp4"])
    return URL(fileURLWithPath: path)
}

@Suite("CLI errors")
struct CLIErrorTests {
    @Test("a good run exits 0 and prints the multivariant playlist path")
    func goodRun() async throws {
        let run = try await runCompose(["--stage", Paths.fixture("two-people"), "--duration", "1"])
        #expect(run.output.status == 0, "stderr: \(run.output.stderr)")
        let path = run.output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(path.hasSuffix("/composite/media/hls/multivariant.m3u8"))
        #expect(path.hasPrefix(run.outDirectory.path))
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test("a run with overlays whose files are beside their description draws them from the first frame")
    func goodRunWithOverlays() async throws {
        let folder = try Paths.makeScratch("overlays-good")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("art"), withIntermediateDirectories: true)
        // Blue: the fixture's participants are red and green.
        let blue = Array([[UInt8]](repeating: [0, 0, 255], count: 32 * 32).joined())
        try Data(PNGEncoder.encodeRGB(width: 32, height: 32, rgb: blue)).write(to: folder.appendingPathComponent("art/logo.png"))
        try Data(#"{"images": [{"file": "art/logo.png", "position": "TOP_LEFT", "margin": 0}], "banners": [{"id": "t", "text": "Live"}]}"#.utf8)
            .write(to: folder.appendingPathComponent("overlays.json"))
        let run = try await runCompose(["--stage", Paths.fixture("two-people"), "--duration", "1", "--thumbnails", "1:sequential",
                                        "--overlays", folder.appendingPathComponent("overlays.json").path])
        #expect(run.output.status == 0, "stderr: \(run.output.stderr)")
        // The first thumbnail (the first frame) has the blue logo in its top-left corner.
        try Self.expectBlueCorner(in: run.outDirectory)
    }

    /// The first thumbnail under `folder` is blue at (12, 12) (a 32×32 blue logo at the top left).
    static func expectBlueCorner(in folder: URL) throws {
        let thumbnails = (FileManager.default.subpaths(atPath: folder.path) ?? []).filter { $0.hasSuffix(".jpg") }.sorted()
        let first = try #require(thumbnails.first, "no thumbnail in \(folder.path)")
        let pixels = try runTool("ffmpeg", ["-v", "error", "-i", folder.appendingPathComponent(first).path,
                                            "-vf", "crop=2:2:12:12", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        let rgb = [UInt8](pixels.output)
        #expect(rgb.count == 12 && rgb[0] < 60 && rgb[1] < 60 && rgb[2] > 200, "pixel (12, 12) of \(first): \(rgb)")
    }

    @Test("a re-render's overlays (from --directions) take their files from --overlay-directory")
    func directionsOverlaysFromTheirDirectory() async throws {
        let folder = try Paths.makeScratch("overlays-directions")
        let art = folder.appendingPathComponent("daemon-overlays")
        try FileManager.default.createDirectory(at: art, withIntermediateDirectories: true)
        let blue = Array([[UInt8]](repeating: [0, 0, 255], count: 32 * 32).joined())
        try Data(PNGEncoder.encodeRGB(width: 32, height: 32, rgb: blue)).write(to: art.appendingPathComponent("logo.png"))
        let directions = folder.appendingPathComponent("directions.json")
        try Data(#"{"stageArn": "arn:aws:ivs:us-east-1:123456789012:stage/x", "directions": [{"atMs": 0, "overlays": {"images": [{"file": "logo.png", "position": "TOP_LEFT", "margin": 0}]}}]}"#.utf8)
            .write(to: directions)
        let arguments = ["--stage", Paths.fixture("two-people"), "--duration", "1", "--thumbnails", "1:sequential", "--directions", directions.path]
        // Looked for in the stage's folder: not there.
        let missing = try await runCompose(arguments)
        #expect(missing.output.status != 0 && missing.output.stderr.contains("directions[0].overlays.images[0].file"), "\(missing.output.stderr)")
        let run = try await runCompose(arguments + ["--overlay-directory", art.path])
        #expect(run.output.status == 0, "stderr: \(run.output.stderr)")
        try Self.expectBlueCorner(in: run.outDirectory)
    }

    @Test("composition update --overlays: a bad description is refused before anything is sent, naming the file and the field")
    func updateWithBadOverlays() async throws {
        let folder = try Paths.makeScratch("overlays-update")
        let file = folder.appendingPathComponent("banner.json")
        try Data(#"{"banners": [{"id": "lower third", "text": "x"}]}"#.utf8).write(to: file)
        let output = try await runProcess(Paths.cli, ["composition", "update", "--endpoint", "http://127.0.0.1:9",
                                                      "--arn", "arn:aws:ivs:us-east-1:123456789012:composition/AbCdEfGhIjKl",
                                                      "--overlays", file.path])
        #expect(!output.crashed && output.status != 0)
        #expect(output.stderr.hasPrefix("error: --overlays: \(file.path): overlays.banners[0].id: 'lower third' must match"), "\(output.stderr)")
    }

    @Test("missing stage directory")
    func missingStageDirectory() async throws {
        let missing = Paths.scratch.appendingPathComponent("no-such-stage").path
        expectCleanFailure(try await runCompose(["--stage", missing]), mentions: [missing])
    }

    @Test("stage directory without manifest.json")
    func missingManifest() async throws {
        let empty = try Paths.makeScratch("empty-stage")
        expectCleanFailure(try await runCompose(["--stage", empty.path]), mentions: [empty.path + "/manifest.json"])
    }

    @Test("malformed JSON manifest")
    func malformedManifest() async throws {
        let stage = try brokenTwoPeople { String($0.prefix(120)) }
        expectCleanFailure(try await runCompose(["--stage", stage.path]), mentions: ["manifest.json"])
    }

    @Test("manifest missing a required field names the field", arguments: [
        ("stageArn", #""stageArn": "arn:aws:ivs:us-east-1:123456789012:stage/two-people","#, ""),
        ("participants", #""participants""#, #""people""#),
        ("participants[1].timeline",
         ",\n" + #"      "timeline": [{ "atMs": 500, "event": "publish" }, { "atMs": 4000, "event": "unpublish" }]"#, ""),
        ("participants[0].participantId", #""participantId": "p0","#, ""),
    ])
    func manifestMissingField(field: String, remove: String, replacement: String) async throws {
        let original = try String(contentsOfFile: Paths.fixture("two-people") + "/manifest.json", encoding: .utf8)
        try #require(original.contains(remove), "the fixture manifest changed; fix this test")
        let stage = try brokenTwoPeople { $0.replacingOccurrences(of: remove, with: replacement) }
        expectCleanFailure(try await runCompose(["--stage", stage.path]), mentions: ["manifest.json", field])
    }

    @Test("media file missing")
    func mediaMissing() async throws {
        let stage = try brokenTwoPeople { $0.replacingOccurrences(of: "p1-green.mp4", with: "p1-absent.mp4") }
        expectCleanFailure(try await runCompose(["--stage", stage.path]), mentions: ["p1-absent.mp4", "participants[1].media"])
    }

    /// Tests run as root here, and root reads a chmod 000 file; a directory where the media
    /// file should be is unreadable as media for everyone, so that stands in for it.
    @Test("media path that is a directory (unreadable as a file)")
    func mediaIsDirectory() async throws {
        let stage = try brokenTwoPeople()
        let media = stage.appendingPathComponent("p1-green.mp4")
        try FileManager.default.removeItem(at: media)
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: false)
        expectCleanFailure(try await runCompose(["--stage", stage.path]), mentions: [media.path])
    }

    @Test("media file without read permission", .enabled(if: getuid() != 0, "root can read a chmod 000 file"))
    func mediaUnreadable() async throws {
        let stage = try brokenTwoPeople()
        let media = stage.appendingPathComponent("p1-green.mp4")
        try FileManager.default.removeItem(at: media)
        try FileManager.default.copyItem(atPath: Paths.fixture("two-people") + "/p1-green.mp4", toPath: media.path)
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: media.path)
        expectCleanFailure(try await runCompose(["--stage", stage.path]), mentions: [media.path])
    }

    @Test("media file that is not media", arguments: ["garbage", "text"])
    func mediaNotMedia(kind: String) async throws {
        let stage = try brokenTwoPeople()
        let media = stage.appendingPathComponent("p1-green.mp4")
        try FileManager.default.removeItem(at: media)
        var bytes = [UInt8](repeating: 0, count: 150_000)
        if kind == "garbage" {
            var state: UInt32 = 0x1234_5678 // fixed seed: the same garbage on every run
            for i in bytes.indices { state = state &* 1_664_525 &+ 1_013_904_223; bytes[i] = UInt8(truncatingIfNeeded: state >> 24) }
        } else {
            bytes = Array(String(repeating: "this is not media\n", count: 5000).utf8)
        }
        try Data(bytes).write(to: media)
        expectCleanFailure(try await runCompose(["--stage", stage.path]), mentions: [media.path])
    }

    @Test("invalid encoder settings name the field", arguments: [
        ("321x180@30:1M", "width"),
        ("320x181@30:1M", "height"),
        ("4000x4000@30:1M", "width"),
        ("1920x1920@30:1M", "width*height"),
        ("320x180@0:1M", "--encoder"),
        ("320x180@61:1M", "framerate"),
        ("320x180@30:9000000", "bitrate"),
        ("320x180@30:0", "bitrate"),
        ("320x180", "--encoder"),
        ("banana", "--encoder"),
        ("320x180@30:1X", "--encoder"),
        // Overflowing numbers must be rejected, not trap.
        ("320x180@30:99999999999999999M", "--encoder"),
        ("320x180@30:9999999999999999k", "--encoder"),
        ("320x180@922337203685477580.5:1M", "--encoder"),
    ])
    func invalidEncoder(spec: String, field: String) async throws {
        let run = try await runCompose(["--stage", Paths.fixture("two-people"), "--encoder", spec])
        expectCleanFailure(run, mentions: ["--encoder", field])
    }

    @Test("bad --layout file", arguments: ["missing", "malformed", "wrong type"])
    func badLayout(kind: String) async throws {
        let folder = try Paths.makeScratch("layout")
        let file = folder.appendingPathComponent("layout.json")
        switch kind {
        case "malformed": try Data(#"{"grid": {"gridGap": 2"#.utf8).write(to: file)
        case "wrong type": try Data(#"{"grid": {"gridGap": "wide"}}"#.utf8).write(to: file)
        default: break
        }
        let run = try await runCompose(["--stage", Paths.fixture("two-people"), "--layout", file.path])
        expectCleanFailure(run, mentions: kind == "wrong type" ? ["--layout", file.path, "gridGap"] : ["--layout", file.path])
    }

    @Test("bad --overlays file: each problem names the option, the file and the field", arguments: [
        ("missing", "", "cannot read"),
        ("malformed", #"{"banners": ["#, "not valid JSON"),
        ("unknown field", #"{"images": [{"fil": "logo.png"}]}"#, "overlays.images[0].fil: unknown field"),
        ("wrong type", #"{"banners": [{"id": "t", "text": 5}]}"#, "overlays.banners[0].text: expected a string"),
        ("out of range", #"{"labels": {"fontScale": 0.5}}"#, "overlays.labels.fontScale: must be between 0.02 and 0.25"),
        ("outside its folder", #"{"images": [{"file": "../logo.png"}]}"#, "overlays.images[0].file: '../logo.png' must not contain a .. component"),
        ("image not there", #"{"background": {"file": "absent.png"}}"#, "overlays.background.file: "),
    ])
    func badOverlays(kind: String, text: String, mention: String) async throws {
        let folder = try Paths.makeScratch("overlays")
        let file = folder.appendingPathComponent("overlays.json")
        if kind != "missing" { try Data(text.utf8).write(to: file) }
        let run = try await runCompose(["--stage", Paths.fixture("two-people"), "--overlays", file.path])
        expectCleanFailure(run, mentions: ["--overlays", file.path, mention])
    }

    @Test("segment duration outside 2...10")
    func badSegmentDuration() async throws {
        let run = try await runCompose(["--stage", Paths.fixture("two-people"), "--segment-duration", "1"])
        expectCleanFailure(run, mentions: ["--segment-duration"])
    }

    @Test("thread counts out of range name the option", arguments: [
        ("--encoder-threads", "-1"), ("--encoder-threads", "17"), ("--decoder-threads", "0"), ("--decoder-threads", "17"),
    ])
    func badThreadCounts(option: String, value: String) async throws {
        let run = try await runCompose(["--stage", Paths.fixture("two-people"), "\(option)=\(value)"])
        expectCleanFailure(run, mentions: [option, value])
    }
}
