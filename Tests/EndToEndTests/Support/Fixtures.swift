// Where things are (repo, fixtures, generator, the built CLI) and the recorded stages the
// tests make: generated with scripts/make-fixture.sh, or hand-written manifests that reuse
// committed fixture media with a different timeline.
import Foundation
import Synchronization

enum Paths {
    /// The package root: this file is Tests/EndToEndTests/Support/Fixtures.swift.
    static let repoRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func fixture(_ name: String) -> String { repoRoot.appendingPathComponent("fixtures/\(name)").path }

    static let generator = repoRoot.appendingPathComponent("scripts/make-fixture.sh").path
    static let ffmpeg = "/usr/bin/ffmpeg"
    static let ffprobe = "/usr/bin/ffprobe"

    /// The `stage-compositor` executable. `swift test` builds every target of the package,
    /// executables included, into the same folder as the test bundle, so it is next to the
    /// running test binary; `.build/debug` is the fallback for other runners.
    static let cli: String = {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent().appendingPathComponent("stage-compositor"))
        }
        candidates.append(repoRoot.appendingPathComponent(".build/debug/stage-compositor"))
        return (candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates.last!).path
    }()

    /// One scratch folder per test process, removed never (inspect failures); under /tmp.
    static let scratch: URL = {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("stage-compositor-e2e-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// A new, empty folder under the scratch folder.
    static func makeScratch(_ name: String) throws -> URL {
        let url = scratch.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The make-fixture.sh edge cases; each is generated next to one healthy participant (p0, red,
/// 300 Hz) so the edge participant is index 1 (green, 450 Hz).
enum EdgeCase: String, CaseIterable, Sendable, CustomStringConvertible {
    case resolutionChange = "resolution-change"
    case samplerateChange = "samplerate-change"
    case corrupt
    case rotated
    case oddSize = "odd-size"
    case above1080p = "above-1080p"

    var description: String { rawValue }
    var participantId: String { "edge-\(rawValue)" }
}

/// Stages generated once per test process and shared.
final class GeneratedStages: Sendable {
    static let shared = GeneratedStages()
    private let tasks = Mutex<[String: Task<String, any Error>]>([:])

    /// A 4 s stage: healthy p0 plus the edge case, generated on first use.
    func edgeStage(_ edge: EdgeCase) async throws -> String {
        try await stage(key: "edge-\(edge.rawValue)",
                        arguments: ["--participants", "1", "--duration", "4", "--\(edge.rawValue)"])
    }

    func stage(key: String, arguments: [String]) async throws -> String {
        let task = tasks.withLock { tasks in
            if let task = tasks[key] { return task }
            let task = Task<String, any Error> {
                let directory = Paths.scratch.appendingPathComponent("stages/\(key)").path
                _ = try await runChecked("/bin/bash", [Paths.generator, "--out", directory] + arguments)
                return directory
            }
            tasks[key] = task
            return task
        }
        return try await task.value
    }
}

/// Writes `manifest` into a new stage folder and links the named media files of a committed
/// fixture next to it, so a manifest can replay fixture media on another timeline.
func makeStage(named name: String, manifest: String, linkingMediaFrom fixture: String, files: [String]) throws -> String {
    let directory = try Paths.makeScratch(name)
    for file in files {
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent(file).path,
                                                   withDestinationPath: Paths.fixture(fixture) + "/" + file)
    }
    try Data(manifest.utf8).write(to: directory.appendingPathComponent("manifest.json"))
    return directory.path
}

/// A stage folder with one participant, "numbers", whose media is `media` (linked in as
/// numbers.mp4), published at 0 with `events` after it (JSON objects, as the manifest has them).
func makeNumberedStage(named name: String, media: String, durationMs: Int, mediaOffsetMs: Int = 0,
                       events: [String] = []) throws -> String {
    let timeline = ([#"{ "atMs": 0, "event": "publish" }"#] + events).joined(separator: ", ")
    let manifest = """
    {
      "stageArn": "arn:aws:ivs:us-east-1:123456789012:stage/\(name)",
      "durationMs": \(durationMs),
      "participants": [
        { "participantId": "numbers", "userId": "numbers", "attributes": {}, "media": "numbers.mp4",
          "mediaOffsetMs": \(mediaOffsetMs), "timeline": [\(timeline)] }
      ]
    }
    """
    let directory = try Paths.makeScratch(name)
    try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("numbers.mp4").path, withDestinationPath: media)
    try Data(manifest.utf8).write(to: directory.appendingPathComponent("manifest.json"))
    return directory.path
}

/// Video-only 160x90 at 30 fps whose frame k has luma `luma` (a geq expression of N, the frame
/// index), losslessly coded with a keyframe every `keyframeInterval` frames; made once.
func numberedFrames(name: String, seconds: Int, luma: String, keyframeInterval: Int) async throws -> String {
    let path = Paths.scratch.appendingPathComponent("\(name).mp4").path
    if FileManager.default.fileExists(atPath: path) { return path }
    let partial = path + ".partial.mp4"
    _ = try await runChecked(Paths.ffmpeg, [
        "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
        "-f", "lavfi", "-i", "color=c=black:s=160x90:r=30:d=\(seconds),format=yuv420p,geq=lum='\(luma)':cb=128:cr=128",
        "-c:v", "libx264", "-qp", "0", "-preset", "ultrafast", "-bf", "0",
        "-g", "\(keyframeInterval)", "-keyint_min", "\(keyframeInterval)", "-sc_threshold", "0", partial,
    ])
    try FileManager.default.moveItem(atPath: partial, toPath: path)
    return path
}
