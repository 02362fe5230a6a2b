// Overlays through the real compositor (decoders, tile reuse, transitions) on recorded
// stages, checked on the canvas the encoder takes: where a logo lands and how it blends,
// labels read back by OCR, the slate and banners within two frames, nothing accumulating
// over tiles the compositor keeps between frames.

import Foundation
@testable import FFmpeg
import Layout
import Logging
import MediaCore
import Pipeline
import Stages
import Testing
import TestSupport

/// A directed stage rendered at 1280×720 (10 fps), with overlays from its own folder.
final class OverlayStage {
    let directed: DirectedStage
    var renderer: StageRenderer { directed.renderer }
    var luma: [UInt8] { directed.luma }

    init(stage: URL, layout: LayoutConfiguration = LayoutConfiguration(grid: GridConfiguration(gridGap: 0)),
         overlays: OverlayConfiguration?, reuse: Bool = true) throws {
        directed = try DirectedStage(stage: stage, layout: layout, size: PixelSize(width: 1280, height: 720), reuse: reuse)
        if let overlays {
            renderer.direct(CompositionDirection(overlays: try OverlayAssets(directory: stage.path).prepare(overlays)))
        }
    }

    func render(_ tick: Int64) throws { try directed.render(tick: tick) }

    /// A recorded stage of `names.count` participants, each publishing `source` (an ffmpeg
    /// lavfi video at 64×36) with the attribute `name`, over `publish` ms (start, end).
    static func makeStage(names: [String], seconds: Int, source: (Int) -> String = { _ in "testsrc2=size=320x180:rate=10" },
                          publish: (Int) -> (Int, Int?) = { _ in (0, nil) }) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("overlay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var participants: [[String: Any]] = []
        for (index, name) in names.enumerated() {
            let run = try runTool("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", source(index),
                                             "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-bf", "0",
                                             "-pix_fmt", "yuv420p", directory.appendingPathComponent("p\(index).mp4").path],
                                  keeping: .standardError)
            guard run.status == 0 else { throw StageError(file: "p\(index).mp4", message: run.text) }
            let (start, end) = publish(index)
            var timeline: [[String: Any]] = [["atMs": start, "event": "publish"]]
            if let end { timeline.append(["atMs": end, "event": "unpublish"]) }
            participants.append(["participantId": "p\(index)", "userId": "u\(index)", "attributes": ["name": name],
                                 "media": "p\(index).mp4", "mediaOffsetMs": start, "timeline": timeline])
        }
        let manifest: [String: Any] = ["stageArn": "arn:aws:ivs:us-east-1:123456789012:stage/Overlays",
                                       "durationMs": seconds * 1000, "participants": participants]
        try JSONSerialization.data(withJSONObject: manifest).write(to: directory.appendingPathComponent("manifest.json"))
        return directory
    }

    /// A 200×80 PNG, orange, its alpha rising from 0 at the left to 255 at the right.
    static func writeGradientLogo(in directory: URL) throws {
        let png = TestPNG.rgba(width: 200, height: 80) { x, _ in [255, 128, 0, UInt8(x * 255 / 199)] }
        try Data(png).write(to: directory.appendingPathComponent("logo.png"))
    }
}

@Suite struct OverlayCompositionTests {
    @Test("a 200×80 logo lands top-right 24 px in, blended within 2 levels of the exact alpha blend")
    func logoPlacementAndBlend() async throws {
        try await onThreadChecking { expect in
            let stage = try OverlayStage.makeStage(names: ["A", "B", "C", "D"], seconds: 2)
            defer { try? FileManager.default.removeItem(at: stage) }
            try OverlayStage.writeGradientLogo(in: stage)
            let logo = OverlayConfiguration(images: [ImageOverlay(file: "logo.png", position: .topRight, margin: 24)])
            let withLogo = try OverlayStage(stage: stage, overlays: logo)
            let plain = try OverlayStage(stage: stage, overlays: nil)
            for tick in Int64(0)..<6 {
                try withLogo.render(tick)
                try plain.render(tick)
                let over = withLogo.luma, under = plain.luma
                // Every pixel that differs lies in the requested box: x 1056..<1256, y 24..<104.
                var box = (minX: Int.max, minY: Int.max, maxX: Int.min, maxY: Int.min)
                var worst = 0.0
                for row in 0..<720 {
                    for column in 0..<1280 {
                        let index = row * 1280 + column
                        let inside = (1056..<1256).contains(column) && (24..<104).contains(row)
                        if over[index] != under[index] {
                            box = (min(box.minX, column), min(box.minY, row), max(box.maxX, column), max(box.maxY, row))
                        }
                        guard inside else { continue }
                        let alpha = Double((column - 1056) * 255 / 199) / 255
                        let logoLuma = 16 + (65.481 * 255 + 128.553 * 128) / 255
                        let expected = logoLuma * alpha + Double(under[index]) * (1 - alpha)
                        worst = max(worst, abs(Double(over[index]) - expected))
                    }
                }
                expect.check(box.minX >= 1055 && box.maxX <= 1256 && box.minY >= 23 && box.maxY <= 104, "tick \(tick): changed \(box)")
                // The opaque right edge and the top and bottom rows are drawn (the box is whole).
                expect.check(box.maxX >= 1254 && box.minY <= 25 && box.maxY >= 102, "tick \(tick): changed only \(box)")
                expect.check(worst <= 2, "tick \(tick): luma off by \(worst)")
            }
        }
    }

    @Test("overlays over tiles the compositor keeps are drawn once per frame, never on top of the last")
    func overlaysDoNotAccumulate() async throws {
        try await onThreadChecking { expect in
            // Still pictures: after the first frame every tile is kept, not redrawn.
            let stage = try OverlayStage.makeStage(names: ["Alice", "Bob"], seconds: 2) { _ in "color=c=0x808080:size=320x180:rate=2" }
            defer { try? FileManager.default.removeItem(at: stage) }
            let overlays = OverlayConfiguration(labels: LabelOverlay(), banners: [BannerOverlay(id: "b", text: "Lower third")])
            let reused = try OverlayStage(stage: stage, overlays: overlays)
            let redrawn = try OverlayStage(stage: stage, overlays: overlays, reuse: false)
            for tick in Int64(0)..<8 {
                try reused.render(tick)
                try redrawn.render(tick)
                expect.check(reused.luma == redrawn.luma, "tick \(tick): kept tiles differ from redrawn ones")
            }
            expect.check(reused.renderer.compositor.tilesReused > 0, "no tile was kept: the test proves nothing")
        }
    }

    @Test("the slate shows within 2 frames of the last publisher leaving and goes when one publishes")
    func slateFollowsThePublishers() async throws {
        try await onThreadChecking { expect in
            // Both leave at 1.0 s; one comes back at 2.0 s.
            let stage = try OverlayStage.makeStage(names: ["A", "B"], seconds: 3, publish: { _ in (0, 1000) })
            defer { try? FileManager.default.removeItem(at: stage) }
            // A second stage file with p0 back at 2 s: a direction would do, a timeline is simpler.
            let manifestURL = stage.appendingPathComponent("manifest.json")
            var manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as! [String: Any]
            var participants = manifest["participants"] as! [[String: Any]]
            var timeline = participants[0]["timeline"] as! [[String: Any]]
            timeline.append(["atMs": 2000, "event": "publish"])
            participants[0]["timeline"] = timeline
            manifest["participants"] = participants
            try JSONSerialization.data(withJSONObject: manifest).write(to: manifestURL)
            let slate = OverlayConfiguration(slate: SlateOverlay(text: "We'll be right back", backgroundColor: "#2040A0"))
            let composed = try OverlayStage(stage: stage, overlays: slate)
            let slateLuma = YUVColor(red: 0x20, green: 0x40, blue: 0xA0).y
            var shown: [Int64] = []
            for tick in Int64(0)..<30 {
                try composed.render(tick)
                // A corner, away from the slate's text.
                if abs(Int(composed.luma[5 * 1280 + 5]) - Int(slateLuma)) <= 1 && composed.renderer.compositor.tiles.isEmpty { shown.append(tick) }
            }
            // Leaving at 1.0 s is tick 10 (frames stand for their nearest instant): the slate
            // from tick 10 or 11 until the return at tick 20 or 21.
            expect.check(shown.first.map { (9...11).contains($0) } == true, "slate from \(String(describing: shown.first))")
            expect.check(shown.last.map { (18...20).contains($0) } == true, "slate until \(String(describing: shown.last))")
            expect.check(shown.count >= 8, "slate shown at \(shown)")
        }
    }

    @Test("a banner shown and hidden live changes within 2 frames; with a transition it fades")
    func bannerShownAndHiddenLive() async throws {
        try await onThreadChecking { expect in
            let stage = try OverlayStage.makeStage(names: ["A"], seconds: 3) { _ in "color=c=0x606060:size=320x180:rate=10" }
            defer { try? FileManager.default.removeItem(at: stage) }
            let composed = try OverlayStage(stage: stage, overlays: nil)
            let assets = OverlayAssets(directory: stage.path)
            func banner(visible: Bool, transitionMs: Int = 0) throws -> CompositionDirection {
                CompositionDirection(overlays: try assets.prepare(OverlayConfiguration(banners: [
                    BannerOverlay(id: "news", text: "Breaking news", backgroundColor: "#000000FF", visible: visible, transitionMs: transitionMs)])))
            }
            // The banner's plate: bottom centre, 32 px up; its middle row.
            func plateLuma() -> Int { Int(composed.luma[(720 - 32 - 20) * 1280 + 640 - 150]) }
            var log: [(Int64, Int)] = []
            for tick in Int64(0)..<30 {
                if tick == 5 { composed.renderer.direct(try banner(visible: true)) }
                if tick == 10 { composed.renderer.direct(try banner(visible: false)) }
                if tick == 15 { composed.renderer.direct(try banner(visible: true, transitionMs: 1000)) }
                try composed.render(tick)
                log.append((tick, plateLuma()))
            }
            let grey = log[2].1
            let shown = log.first { $0.0 >= 5 && $0.1 < grey - 40 }?.0
            expect.check(shown.map { $0 <= 6 } == true, "shown at \(String(describing: shown)): \(log)")
            let hidden = log.first { $0.0 >= 10 && abs($0.1 - grey) <= 1 }?.0
            expect.check(hidden.map { $0 <= 11 } == true, "hidden at \(String(describing: hidden)): \(log)")
            // Fading in over 1 s from tick 15: half-way at about tick 20, whole by tick 26.
            let middle = log[20].1
            expect.check(middle < grey - 10 && middle > log[27].1 + 10, "no fade: \(log)")
            expect.check(log[27].1 < grey - 40, "not shown after its fade: \(log)")
        }
    }

    @Test("a background image without a fill mode is scaled as the layout fills its tiles")
    func backgroundFollowsTheLayoutsFillMode() async throws {
        try await onThreadChecking { expect in
            let stage = try OverlayStage.makeStage(names: ["A", "B"], seconds: 1)
            defer { try? FileManager.default.removeItem(at: stage) }
            // A square red background: COVER fills the canvas, CONTAIN leaves bars left and right.
            try Data(TestPNG.rgba(width: 100, height: 100) { _, _ in [255, 0, 0, 255] }).write(to: stage.appendingPathComponent("red.png"))
            let overlays = OverlayConfiguration(background: BackgroundOverlay(file: "red.png"))
            let red = Int(YUVColor(red: 255, green: 0, blue: 0).y)
            for (mode, cornerIsRed) in [(VideoFillMode.cover, true), (.contain, false)] {
                let layout = LayoutConfiguration(grid: GridConfiguration(videoFillMode: mode, gridGap: 200))
                let composed = try OverlayStage(stage: stage, layout: layout, overlays: overlays)
                try composed.render(0)
                try composed.render(1)
                // (10, 10) is background above the two tiles; (640, 10) is inside the square either way.
                let corner = Int(composed.luma[10 * 1280 + 10]), middle = Int(composed.luma[10 * 1280 + 640])
                expect.check(abs(middle - red) <= 2, "\(mode): middle \(middle)")
                expect.check((abs(corner - red) <= 2) == cornerIsRed, "\(mode): corner \(corner)")
            }
        }
    }

    @Test("a participant muted in the mix (UpdateComposition's audio) gets the muted badge, and loses it unmuted")
    func mutedInTheMixIsBadged() async throws {
        try await onThreadChecking { expect in
            let stage = try OverlayStage.makeStage(names: ["Alice", "Bob"], seconds: 2) { _ in "color=c=0x808080:size=320x180:rate=10" }
            defer { try? FileManager.default.removeItem(at: stage) }
            let composed = try OverlayStage(stage: stage, overlays: OverlayConfiguration(labels: LabelOverlay()))
            // The badge is the only saturated red on a grey stage.
            func badgePixels() -> Int {
                let planes = composed.directed.canvas.yuvPlanes
                var count = 0
                for row in 0..<(planes.height / 2) {
                    for column in 0..<(planes.width / 2) where planes.v[row * planes.vStride + column] > 190 { count += 1 }
                }
                return count
            }
            var counts: [Int] = []
            for tick in Int64(0)..<9 {
                if tick == 3 { composed.renderer.direct(CompositionDirection(audio: ["p1": ParticipantAudio(muted: true)])) }
                if tick == 6 { composed.renderer.direct(CompositionDirection(audio: ["p1": ParticipantAudio(muted: false)])) }
                try composed.render(tick)
                counts.append(badgePixels())
            }
            expect.check(counts[0..<3].allSatisfy { $0 == 0 } && counts[3..<6].allSatisfy { $0 > 20 } && counts[6...].allSatisfy { $0 == 0 },
                         "red chroma samples per frame: \(counts)")
        }
    }

    @Test("tesseract reads each participant's name from its tile")
    func labelsReadBack() async throws {
        try await onThreadChecking { expect in
            let names = ["Alice", "Bob", "Charlie", "Dana"]
            let stage = try OverlayStage.makeStage(names: names, seconds: 1)
            defer { if ProcessInfo.processInfo.environment["KEEP_OVERLAY_TILES"] == nil { try? FileManager.default.removeItem(at: stage) } }
            let composed = try OverlayStage(stage: stage, overlays: OverlayConfiguration(labels: LabelOverlay(fontScale: 0.08)))
            let plain = try OverlayStage(stage: stage, overlays: nil)
            for tick in Int64(0)..<3 {
                try composed.render(tick)
                try plain.render(tick)
            }
            let luma = composed.luma, under = plain.luma
            for (index, tile) in composed.renderer.compositor.tiles.enumerated() {
                // Where the composite differs from the same stage without overlays (the label),
                // with a margin, read as a grey PNG at twice its size.
                var box = (minX: Int.max, minY: Int.max, maxX: 0, maxY: 0)
                for row in tile.rect.y..<tile.rect.maxY {
                    for column in tile.rect.x..<tile.rect.maxX where luma[row * 1280 + column] != under[row * 1280 + column] {
                        box = (min(box.minX, column), min(box.minY, row), max(box.maxX, column), max(box.maxY, row))
                    }
                }
                guard box.minX <= box.maxX else {
                    expect.check(false, "tile \(tile.participantId): no label drawn")
                    continue
                }
                let rect = Rect(x: max(0, box.minX - 8), y: max(0, box.minY - 8), width: 0, height: 0)
                let width = min(1280, box.maxX + 9) - rect.x, height = min(720, box.maxY + 9) - rect.y
                var raw: [UInt8] = []
                for row in 0..<(height * 2) {
                    raw.append(0)
                    for column in 0..<(width * 2) { raw.append(luma[(rect.y + row / 2) * 1280 + rect.x + column / 2]) }
                }
                let file = stage.appendingPathComponent("tile\(index).png")
                try Data(TestPNG.encode(width: width * 2, height: height * 2, raw: raw, grey: true)).write(to: file)
                let run = try runTool("tesseract", [file.path, "stdout", "--psm", "7"])
                let read = run.text.trimmingCharacters(in: .whitespacesAndNewlines)
                let name = names[Int(tile.participantId.dropFirst())!]
                expect.check(read.contains(name), "tile \(tile.participantId): tesseract read '\(read)', not '\(name)'")
                // The label is inside its tile's bottom-left quarter.
                expect.check(box.minX < tile.rect.x + tile.rect.width / 4 && box.minY > tile.rect.y + tile.rect.height * 3 / 4,
                             "tile \(tile.participantId): label at \(box)")
            }
            expect.check(composed.renderer.compositor.tiles.count == 4, "tiles: \(composed.renderer.compositor.tiles)")
        }
    }
}
