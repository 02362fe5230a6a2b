// The IVS layout options, end to end: the featured participant, the PiP window and
// omitStoppedVideo as they come out of the decoded recording. The expectations here are
// written from the rules (which region of the canvas), not read back from the engine.
import Foundation
import Layout
import MediaCore
import Testing

@Suite("Layout configurations, end to end")
struct LayoutConfigurationTests {
    // four-grid: p0 red isFeatured, p1 green video stopped 3000–5000 ms, p2 blue isPip
    // (muted 2000–4000 ms), p3 yellow joins at 2000 ms.
    static let canvas = "640x360@30:800k"
    static let featured = ComposeRequest(stageDirectory: Paths.fixture("four-grid"), encoder: canvas,
                                         layout: LayoutConfiguration(grid: GridConfiguration(featuredParticipantAttribute: "isFeatured")))
    static let pipBottomRight = ComposeRequest(stageDirectory: Paths.fixture("four-grid"), encoder: canvas,
                                               layout: LayoutConfiguration(pip: PipConfiguration(pipParticipantAttribute: "isPip")))
    static let pipTopLeft = ComposeRequest(stageDirectory: Paths.fixture("four-grid"), encoder: canvas,
                                           layout: LayoutConfiguration(pip: PipConfiguration(pipParticipantAttribute: "isPip", pipPosition: .topLeft)))
    static let omitStopped = ComposeRequest(stageDirectory: Paths.fixture("four-grid"), encoder: canvas,
                                            layout: LayoutConfiguration(grid: GridConfiguration(omitStoppedVideo: true)))

    private func nearest(_ video: DecodedVideo, frame: Int, x: Double, y: Double) -> String {
        Palette.nearest(video.colour(frame: frame, x: Int(x * Double(video.width)), y: Int(y * Double(video.height))))
    }

    @Test("the featured participant fills the large upper slot; the others share the strip below")
    func featuredSlot() async throws {
        let recording = try await SharedOutputs.shared.recording(Self.featured)
        let video = try await SharedOutputs.shared.video(of: recording)
        // 2.5 s: all four publish, nobody's video is stopped.
        let frame = 75
        // The middle of the upper part of the canvas is the featured (red) picture.
        #expect(nearest(video, frame: frame, x: 0.5, y: 0.35) == "red")
        #expect(nearest(video, frame: frame, x: 0.4, y: 0.2) == "red")
        // The strip below holds the three others, left to right in arrival order.
        let strip = [0.25, 0.5, 0.75].map { nearest(video, frame: frame, x: $0, y: 0.87) }
        #expect(Set(strip) == ["green", "blue", "yellow"], "strip: \(strip)")
        // The featured slot is bigger than any strip tile.
        let tiles = recording.model.tiles(atMs: recording.milliseconds(ofFrame: frame))
        let featured = try #require(tiles.first { $0.participantId == "p0" })
        #expect(tiles.filter { $0.participantId != "p0" }.allSatisfy { $0.rect.area * 4 < featured.rect.area })
        #expect(featured.fillMode == .contain)
    }

    @Test("the PiP participant sits in its corner window over the others", arguments: [
        (pipBottomRight, 0.93, 0.90), (pipTopLeft, 0.07, 0.10),
    ])
    func pipWindow(request: ComposeRequest, x: Double, y: Double) async throws {
        let recording = try await SharedOutputs.shared.recording(request)
        let video = try await SharedOutputs.shared.video(of: recording)
        for frame in [15, 75, 200] {
            // Near the chosen corner: the PiP participant (blue).
            #expect(nearest(video, frame: frame, x: x, y: y) == "blue", "frame \(frame)")
            // The opposite corner region: somebody else, never the PiP participant.
            let other = nearest(video, frame: frame, x: 1 - x, y: 1 - y)
            #expect(other != "blue", "frame \(frame): opposite corner shows \(other)")
        }
        let tiles = recording.model.tiles(atMs: recording.milliseconds(ofFrame: 75))
        let window = try #require(tiles.first { $0.participantId == "p2" })
        #expect(window.zIndex > tiles.filter { $0.participantId != "p2" }.map(\.zIndex).max()!)
    }

    @Test("omitStoppedVideo: a stopped camera leaves the grid instead of showing camera-off")
    func omitStoppedVideo() async throws {
        let recording = try await SharedOutputs.shared.recording(Self.omitStopped)
        let video = try await SharedOutputs.shared.video(of: recording)
        let model = recording.model
        // 4 s: p1's video is stopped → three tiles, and nothing shows the camera-off grey.
        let frame = 120
        let tiles = model.tiles(atMs: recording.milliseconds(ofFrame: frame))
        #expect(Set(tiles.map(\.participantId)) == ["p0", "p2", "p3"])
        #expect(pixelMismatches(video: video, frame: frame, model: model, tiles: tiles).isEmpty)
        var colours = Set<String>()
        for y in stride(from: 0.1, to: 0.95, by: 0.1) {
            for x in stride(from: 0.1, to: 0.95, by: 0.1) { colours.insert(nearest(video, frame: frame, x: x, y: y)) }
        }
        #expect(!colours.contains("green"))
        #expect(colours.isSuperset(of: ["red", "blue", "yellow"]))
        // 6 s: p1's video is back → four tiles again, green among them.
        let after = 180
        let tilesAfter = model.tiles(atMs: recording.milliseconds(ofFrame: after))
        #expect(tilesAfter.count == 4)
        #expect(pixelMismatches(video: video, frame: after, model: model, tiles: tilesAfter).isEmpty)
    }
}
