// Pixels of the decoded recording against the layout engine's tiles: each participant's tile
// shows their colour, and joins/leaves/video-stops re-flow on the very next frame.
import Foundation
import Layout
import MediaCore
import Testing

extension ComposedRecording {
    var model: StageModel { StageModel(manifest: manifest, layout: layout, canvas: canvas) }
    var fps: (num: Int64, den: Int64) { (encoder.frameRate.numerator, encoder.frameRate.denominator) }
    func milliseconds(ofFrame index: Int) -> Int64 { StageModel.milliseconds(ofFrame: index, fps: fps) }
    /// The first frame at or after `ms` on the stage clock.
    func frame(atOrAfterMs ms: Int64) -> Int {
        Int((ms * fps.num + 1000 * fps.den - 1) / (1000 * fps.den))
    }
}

@Suite("Layout pixels")
struct LayoutPixelTests {
    @Test("each tile shows its participant's colour (camera-off tiles do not)",
          arguments: [SharedOutputs.twoPeople, SharedOutputs.fourGrid])
    func tilesShowParticipants(request: ComposeRequest) async throws {
        let recording = try await SharedOutputs.shared.recording(request)
        let video = try await SharedOutputs.shared.video(of: recording)
        let model = recording.model
        var problems: [String] = []
        var checkedTiles = 0
        // Every 10th frame and the last: covers every layout the stage goes through.
        for frame in Array(stride(from: 0, to: video.frameCount, by: 10)) + [video.frameCount - 1] {
            let tiles = model.tiles(atMs: recording.milliseconds(ofFrame: frame))
            checkedTiles += tiles.count
            problems += pixelMismatches(video: video, frame: frame, model: model, tiles: tiles)
        }
        #expect(checkedTiles > 0)
        #expect(problems.isEmpty, "\(problems.count) mismatches:\n\(problems.prefix(12).joined(separator: "\n"))")
    }

    @Test("two-people: p1 joins at 500 ms and leaves at 4000 ms; the grid re-flows on the next frame")
    func joinAndLeaveReflow() async throws {
        let recording = try await SharedOutputs.shared.recording(SharedOutputs.twoPeople)
        let video = try await SharedOutputs.shared.video(of: recording)
        let model = recording.model
        for eventMs: Int64 in [500, 4000] {
            let after = recording.frame(atOrAfterMs: eventMs)
            let before = after - 1
            let tilesBefore = model.tiles(atMs: recording.milliseconds(ofFrame: before))
            let tilesAfter = model.tiles(atMs: recording.milliseconds(ofFrame: after))
            #expect(tilesBefore != tilesAfter, "the layout must change at \(eventMs) ms")
            #expect(Set(tilesBefore.map(\.participantId)).symmetricDifference(tilesAfter.map(\.participantId)) == ["p1"])
            // Each frame matches its own layout, probed at the centres of both layouts' tiles.
            let problems = pixelMismatches(video: video, frame: before, model: model, tiles: tilesBefore, alsoAt: tilesAfter)
                + pixelMismatches(video: video, frame: after, model: model, tiles: tilesAfter, alsoAt: tilesBefore)
            #expect(problems.isEmpty, "at \(eventMs) ms (frames \(before)/\(after)):\n\(problems.joined(separator: "\n"))")
        }
        // Exactly: frame 119 has two tiles, frame 120 one (p0 alone).
        #expect(model.tiles(atMs: recording.milliseconds(ofFrame: 119)).count == 2)
        #expect(model.tiles(atMs: recording.milliseconds(ofFrame: 120)).map(\.participantId) == ["p0"])
    }

    @Test("four-grid: p3 joins at 2000 ms; p1's video stops 3000–5000 ms; tiles follow on the next frame")
    func fourGridChanges() async throws {
        let recording = try await SharedOutputs.shared.recording(SharedOutputs.fourGrid)
        let video = try await SharedOutputs.shared.video(of: recording)
        let model = recording.model
        for eventMs: Int64 in [2000, 3000, 5000] {
            let after = recording.frame(atOrAfterMs: eventMs)
            let before = after - 1
            let tilesBefore = model.tiles(atMs: recording.milliseconds(ofFrame: before))
            let tilesAfter = model.tiles(atMs: recording.milliseconds(ofFrame: after))
            #expect(tilesBefore != tilesAfter, "the layout must change at \(eventMs) ms")
            let problems = pixelMismatches(video: video, frame: before, model: model, tiles: tilesBefore, alsoAt: tilesAfter)
                + pixelMismatches(video: video, frame: after, model: model, tiles: tilesAfter, alsoAt: tilesBefore)
            #expect(problems.isEmpty, "at \(eventMs) ms (frames \(before)/\(after)):\n\(problems.joined(separator: "\n"))")
        }
        #expect(model.tiles(atMs: 1999).count == 3)
        #expect(model.tiles(atMs: 2000).count == 4)
        #expect(model.tiles(atMs: 3000).first { $0.participantId == "p1" }?.content == .cameraOff)
    }

    @Test("after everyone leaves, the canvas holds no participant's colour")
    func emptyStageIsBlank() async throws {
        let recording = try await SharedOutputs.shared.recording(AudioTests.everyoneLeaves)
        let video = try await SharedOutputs.shared.video(of: recording)
        let model = recording.model
        let first = recording.frame(atOrAfterMs: 3000)
        #expect(model.tiles(atMs: recording.milliseconds(ofFrame: first)).isEmpty)
        var problems: [String] = []
        for frame in [first, first + 1, video.frameCount - 1] {
            for x in stride(from: 20, to: video.width, by: 40) {
                for y in stride(from: 20, to: video.height, by: 40) {
                    let nearest = Palette.nearest(video.colour(frame: frame, x: x, y: y))
                    if !["black", "grey"].contains(nearest) { problems.append("frame \(frame) (\(x),\(y)): \(nearest)") }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10).joined(separator: "\n"))")
    }
}
