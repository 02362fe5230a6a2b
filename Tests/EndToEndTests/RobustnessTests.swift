// Broken or unusual publishers next to a healthy one (scripts/make-fixture.sh edge cases):
// the composition completes with every frame, the healthy participant is untouched, and the
// odd one is shown (or, above 1080p, rendered audio-only) with its tone.
import Foundation
import Layout
import Testing
import MediaCore

extension EdgeCase {
    /// Whether the edge participant's picture should show their colour throughout.
    var showsVideoThroughout: Bool {
        switch self {
        case .corrupt, .above1080p: return false
        default: return true
        }
    }

    /// The display size the layout should be told about (after rotation).
    var displaySize: PixelSize? {
        switch self {
        case .rotated: return PixelSize(width: 180, height: 320)
        case .oddSize: return PixelSize(width: 317, height: 181)
        case .resolutionChange: return nil // 320x180 then 480x270: same aspect
        default: return PixelSize(width: 320, height: 180)
        }
    }
}

@Suite("Robustness")
struct RobustnessTests {
    static func recording(_ edge: EdgeCase) async throws -> ComposedRecording {
        let stage = try await GeneratedStages.shared.edgeStage(edge)
        return try await SharedOutputs.shared.recording(ComposeRequest(stageDirectory: stage))
    }

    static func model(_ recording: ComposedRecording, _ edge: EdgeCase) -> StageModel {
        var model = recording.model
        if edge == .above1080p { model.audioOnly = [edge.participantId] }
        if let size = edge.displaySize { model.videoSize[edge.participantId] = size }
        return model
    }

    @Test("the composition completes with every frame, ended normally", arguments: EdgeCase.allCases)
    func completes(edge: EdgeCase) async throws {
        let recording = try await Self.recording(edge)
        let video = try await SharedOutputs.shared.video(of: recording)
        #expect(recording.result.frames == 120)
        #expect(recording.result.failedSinks.isEmpty)
        #expect(video.frameCount == 120, "decoded \(video.frameCount) frames")
        #expect(video.packetPTS.count == 120)
        let steps = Set(zip(video.packetPTS, video.packetPTS.dropFirst()).map { $1 - $0 })
        #expect(steps == [3000], "pts steps \(steps)")
        let ended = try readJSONObject(recording.eventsFolder.appendingPathComponent("recording-ended.json"))
        #expect(ended["recording_status"] as? String == "RECORDING_ENDED")
    }

    @Test("the healthy participant keeps its colour to the end", arguments: EdgeCase.allCases)
    func healthyParticipantUnaffected(edge: EdgeCase) async throws {
        let recording = try await Self.recording(edge)
        let video = try await SharedOutputs.shared.video(of: recording)
        let model = Self.model(recording, edge)
        var problems: [String] = []
        for frame in Array(stride(from: 0, to: video.frameCount, by: 5)) + [video.frameCount - 1] {
            let tiles = model.tiles(atMs: recording.milliseconds(ofFrame: frame))
            let healthy = tiles.filter { $0.participantId == "p0" }
            #expect(healthy.count == 1, "frame \(frame): p0 has \(healthy.count) tiles")
            problems += pixelMismatches(video: video, frame: frame, model: model, tiles: tiles).filter { $0.contains("p0") }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10).joined(separator: "\n"))")
    }

    @Test("the edge participant's tile: its colour, or camera-off above 1080p", arguments: EdgeCase.allCases)
    func edgeParticipantTile(edge: EdgeCase) async throws {
        let recording = try await Self.recording(edge)
        let video = try await SharedOutputs.shared.video(of: recording)
        let model = Self.model(recording, edge)
        // A corrupt file is only promised to show until the damage (the middle of the file).
        let frames = edge == .corrupt ? Array(0..<30) : Array(0..<video.frameCount)
        var problems: [String] = []
        for frame in frames {
            let tiles = model.tiles(atMs: recording.milliseconds(ofFrame: frame))
            let edgeTile = try #require(tiles.first { $0.participantId == edge.participantId })
            #expect(edgeTile.content == (edge == .above1080p ? .cameraOff : .video))
            problems += pixelMismatches(video: video, frame: frame, model: model, tiles: [edgeTile])
        }
        #expect(problems.isEmpty, "\(problems.count) frames wrong:\n\(problems.prefix(10).joined(separator: "\n"))")
    }

    @Test("both tones are heard (the edge participant's at its own pitch)", arguments: EdgeCase.allCases)
    func tones(edge: EdgeCase) async throws {
        let recording = try await Self.recording(edge)
        let audio = try await SharedOutputs.shared.audio(of: recording)
        let edgeUntil = edge == .corrupt ? 1.0 : 3.9
        var problems: [String] = []
        for start in stride(from: 0.1, to: 3.9, by: 0.2) {
            let healthy = audio.toneAmplitude(300, from: start, to: start + 0.1)
            if healthy < tonePresent { problems.append("p0 300 Hz at \(start) s: \(healthy)") }
            guard start + 0.1 <= edgeUntil else { continue }
            let edgeTone = audio.toneAmplitude(450, from: start, to: start + 0.1)
            if edgeTone < tonePresent { problems.append("\(edge.participantId) 450 Hz at \(start) s: \(edgeTone)") }
        }
        #expect(problems.isEmpty, "\(problems.prefix(12).joined(separator: "\n"))")
        if edge == .samplerateChange {
            // Mis-resampled 44.1 kHz audio would move the tone to 450·48/44.1 ≈ 490 Hz.
            let wrongPitch = audio.toneAmplitude(489.8, from: 2.2, to: 3.8)
            #expect(wrongPitch < toneAbsent, "tone shifted after the sample-rate change: \(wrongPitch) at 490 Hz")
        }
    }

    @Test("a rotated publisher is shown upright: its portrait picture fills the tile (COVER), name and pattern cropped away")
    func rotatedIsUpright() async throws {
        let recording = try await Self.recording(.rotated)
        let video = try await SharedOutputs.shared.video(of: recording)
        let model = Self.model(recording, .rotated)
        var wrong: [String] = []
        for frame in stride(from: 0, to: video.frameCount, by: 15) {
            let tiles = model.tiles(atMs: recording.milliseconds(ofFrame: frame))
            let tile = try #require(tiles.first { $0.participantId == EdgeCase.rotated.participantId })
            try #require(tile.fillMode == .cover, "this check assumes the default COVER fill")
            // Upright, a 180x320 picture COVERing a landscape tile shows only its solid middle.
            // Sideways (rotation ignored), the name text (top-left) and the moving pattern
            // (bottom edge) of the coded 320x180 picture are in view.
            for ry in [0.1, 0.5, 0.9] {
                for rx in stride(from: 0.1, through: 0.9, by: 0.1) {
                    let x = tile.rect.x + Int(Double(tile.rect.width) * rx), y = tile.rect.y + Int(Double(tile.rect.height) * ry)
                    let nearest = Palette.nearest(video.colour(frame: frame, x: x, y: y, radius: 1))
                    if nearest != "green" { wrong.append("frame \(frame) (\(x),\(y)): \(nearest)") }
                }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.count) points are not the participant's colour (picture sideways?):\n\(wrong.prefix(8).joined(separator: "\n"))")
    }
}
