// The compositor keeps a tile's pixels while its picture and place are unchanged. These
// tests compose the same stage with and without that, and require every output canvas to be
// identical byte for byte, on a stage built to exercise it: a 15 fps publisher beside 30 fps
// ones (its tile is kept every other tick), a PiP window over a tile that changes every tick
// (the window must be redrawn on top), a video stop (camera-off, drawn once), late joins and
// a leave (layout changes).

import Foundation
import FFmpeg
import Layout
import Logging
import MediaCore
import Pipeline
import Stages
import Testing
import TestSupport

@Suite(.serialized)
struct TileReuseTests {
    @Test("kept tiles give the same canvas as redrawing every tile, tick by tick", arguments: [
        ("grid", LayoutConfiguration.defaultGrid),
        // The window sits over the featured publisher's tile, which changes every tick.
        ("pip", LayoutConfiguration(pip: PipConfiguration(featuredParticipantAttribute: "isFeatured", pipParticipantAttribute: "isPip",
                                                          pipPosition: .topLeft, pipWidth: 160, pipHeight: 90))),
    ])
    func sameCanvas(name: String, layout: LayoutConfiguration) async throws {
        let stage = try await mixedRateStage()
        let (reused, reuseResult) = try await onThread { try Self.compose(stage: stage, layout: layout, reuse: true) }
        let (redrawn, redrawResult) = try await onThread { try Self.compose(stage: stage, layout: layout, reuse: false) }
        #expect(reused.count == 180)
        #expect(reused.count == redrawn.count)
        let differing = zip(reused, redrawn).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
        #expect(differing.isEmpty, "\(name): canvases differ at ticks \(differing.prefix(10))")
        // Redrawing every tile reuses none; keeping them skips the 15 fps publisher's repeats.
        #expect(redrawResult.tilesReused == 0)
        #expect(reuseResult.tilesReused > 0, "\(name): no tile was kept")
        #expect(reuseResult.tilesScaled < redrawResult.tilesScaled)
        #expect(reuseResult.tilesScaled + reuseResult.tilesReused <= redrawResult.tilesScaled)
    }

    /// Three four-grid publishers (30 fps, one with a video stop, one joining at 2 s) and a
    /// generated 15 fps publisher that is the PiP window and leaves at 5 s.
    private func mixedRateStage() async throws -> String {
        let generated = try await GeneratedStages.shared.stage(
            key: "reuse-15fps", arguments: ["--participants", "1", "--fps", "15", "--duration", "6", "--size", "320x180"])
        let slow = try #require(try FileManager.default.contentsOfDirectory(atPath: generated).first { $0.hasPrefix("p0") })
        let manifest = """
        {
          "stageArn": "arn:aws:ivs:us-east-1:123456789012:stage/tile-reuse",
          "durationMs": 6000,
          "participants": [
            { "participantId": "p0", "userId": "red", "attributes": { "isFeatured": "true" }, "media": "p0-red.mp4",
              "timeline": [{ "atMs": 0, "event": "publish" }] },
            { "participantId": "p1", "userId": "green", "attributes": {}, "media": "p1-green.mkv",
              "timeline": [{ "atMs": 0, "event": "publish" }, { "atMs": 3000, "event": "videoStopped" }] },
            { "participantId": "slow", "userId": "slow", "attributes": { "isPip": "true" }, "media": "slow-\(slow)",
              "timeline": [{ "atMs": 0, "event": "publish" }, { "atMs": 5000, "event": "unpublish" }] },
            { "participantId": "p3", "userId": "yellow", "attributes": {}, "media": "p3-yellow.flv",
              "timeline": [{ "atMs": 2000, "event": "publish" }] }
          ]
        }
        """
        let directory = try makeStage(named: "tile-reuse", manifest: manifest, linkingMediaFrom: "four-grid",
                                      files: ["p0-red.mp4", "p1-green.mkv", "p3-yellow.flv"])
        let link = URL(fileURLWithPath: directory).appendingPathComponent("slow-\(slow)").path
        if !FileManager.default.fileExists(atPath: link) {
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: generated + "/" + slow)
        }
        return directory
    }

    /// Composes 6 s at 30 fps; returns a digest of each output canvas.
    static func compose(stage directory: String, layout: LayoutConfiguration, reuse: Bool) throws -> ([CanvasDigest.Value], CompositionResult) {
        var logger = Logger(label: "tile-reuse")
        logger.logLevel = .error
        let source = try RecordedStageSource(stage: try RecordedStage.load(from: directory), logger: logger)
        let video = VideoEncoderSettings(width: 480, height: 270, frameRate: Rational(30, 1), bitrate: 500_000,
                                         keyframeInterval: 60, preset: "ultrafast")
        let settings = CompositionSettings(video: video, layout: layout.makeEngine(), duration: .seconds(6),
                                           tuning: CompositionTuning(reuseUnchangedTiles: reuse))
        let digest = CanvasSampler(CanvasDigest.of)
        let session = try CompositionSession(source: source, settings: settings, sinks: [digest], logger: logger)
        var pacer = AsFastAsPossiblePacer()
        let result = try session.run(pacer: &pacer)
        return (digest.values, result)
    }
}

/// A hash of every pixel of a composed canvas (Y, U and V planes, visible area only).
enum CanvasDigest {
    typealias Value = UInt64

    static func of(_ canvas: Frame) -> Value {
        let planes = canvas.yuvPlanes
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ base: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, height: Int) {
            for row in 0..<height {
                let line = base + row * stride
                for column in 0..<width {
                    hash = (hash ^ UInt64(line[column])) &* 0x100_0000_01b3
                }
            }
        }
        add(planes.y, stride: planes.yStride, width: planes.width, height: planes.height)
        add(planes.u, stride: planes.uStride, width: planes.width / 2, height: planes.height / 2)
        add(planes.v, stride: planes.vStride, width: planes.width / 2, height: planes.height / 2)
        return hash
    }
}
