// Measuring decoded output: colours against the fixture palette, tones with a Goertzel
// filter, and the tiles the layout engine expects for a stage at an instant.
import Foundation
import Layout
import Stages
import MediaCore

struct RGB: Equatable, Sendable, CustomStringConvertible {
    var r: Int, g: Int, b: Int
    var description: String { "rgb(\(r),\(g),\(b))" }

    func distance(to other: RGB) -> Double {
        let dr = Double(r - other.r), dg = Double(g - other.g), db = Double(b - other.b)
        return (dr * dr + dg * dg + db * db).squareRoot()
    }
}

/// make-fixture.sh's palette (participant i has colour i), plus what the compositor draws
/// where no video is: the black canvas and the dark-grey camera-off fill.
enum Palette {
    static let participants: [(name: String, rgb: RGB)] = [
        ("red", RGB(r: 255, g: 0, b: 0)), ("green", RGB(r: 0, g: 255, b: 0)), ("blue", RGB(r: 0, g: 0, b: 255)),
        ("yellow", RGB(r: 255, g: 255, b: 0)), ("magenta", RGB(r: 255, g: 0, b: 255)), ("cyan", RGB(r: 0, g: 255, b: 255)),
        ("orange", RGB(r: 255, g: 128, b: 0)), ("purple", RGB(r: 128, g: 0, b: 255)), ("teal", RGB(r: 0, g: 128, b: 128)),
        ("pink", RGB(r: 255, g: 128, b: 192)), ("lime", RGB(r: 128, g: 255, b: 0)), ("brown", RGB(r: 128, g: 64, b: 0)),
    ]
    static let neutrals: [(name: String, rgb: RGB)] = [
        ("black", RGB(r: 0, g: 0, b: 0)), ("grey", RGB(r: 28, g: 28, b: 28)), ("white", RGB(r: 255, g: 255, b: 255)),
    ]

    /// Name of the nearest palette entry (participants and neutrals).
    static func nearest(_ colour: RGB) -> String {
        (participants + neutrals).min { $0.rgb.distance(to: colour) < $1.rgb.distance(to: colour) }!.name
    }
}

enum Goertzel {
    /// Amplitude (peak, 0...1 full scale) of the `hz` component of `samples`.
    static func amplitude(of hz: Double, in samples: ArraySlice<Float>, sampleRate: Int) -> Double {
        guard !samples.isEmpty else { return 0 }
        let coefficient = 2 * cos(2 * Double.pi * hz / Double(sampleRate))
        var s1 = 0.0, s2 = 0.0
        for sample in samples {
            let s0 = Double(sample) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return 2 * max(power, 0).squareRoot() / Double(samples.count)
    }
}

extension DecodedAudio {
    /// First stage time in [from, to) where the `hz` amplitude over a 10 ms window centred
    /// there crosses `threshold` (rising when `rising`, else falling). 1 ms steps.
    func crossing(of hz: Double, threshold: Double, rising: Bool, from: Double, to: Double) -> Double? {
        var t = from
        while t < to {
            let amplitude = toneAmplitude(hz, from: t - 0.005, to: t + 0.005)
            if rising ? amplitude >= threshold : amplitude < threshold { return t }
            t += 0.001
        }
        return nil
    }
}

/// What the layout engine should produce for a recorded stage at an instant: the same
/// engine the compositor uses, fed from the manifest's timeline.
struct StageModel {
    var manifest: StageManifest
    var layout: LayoutConfiguration
    var canvas: PixelSize
    /// Video size per participant when publishing (fixtures: 320x180); `.audioOnly` via
    /// `audioOnly`.
    var videoSize: [String: PixelSize] = [:]
    var audioOnly: Set<String> = []

    func colourName(of participantId: String) -> String? {
        manifest.participants.first { $0.participantId == participantId }?.attributes["color"]
    }

    func toneHz(of participantId: String) -> Double? {
        manifest.participants.first { $0.participantId == participantId }?.attributes["toneHz"].flatMap(Double.init)
    }

    /// Arrival order: first publish time, then manifest order (SPEC §5).
    private var arrival: [String: Int] {
        let ordered = manifest.participants.enumerated().sorted { a, b in
            let ta = a.element.timeline.first { $0.event == .publish }?.atMs ?? .max
            let tb = b.element.timeline.first { $0.event == .publish }?.atMs ?? .max
            return (ta, a.offset) < (tb, b.offset)
        }
        var result: [String: Int] = [:]
        for (rank, entry) in ordered.enumerated() { result[entry.element.participantId] = rank }
        return result
    }

    func layoutParticipants(atMs ms: Int64) -> [LayoutParticipant] {
        let arrival = self.arrival
        return manifest.participants.compactMap { participant in
            let state = participant.state(atMs: ms)
            guard state.isPublished else { return nil }
            let video: VideoState
            if audioOnly.contains(participant.participantId) { video = .audioOnly }
            else if state.isVideoStopped { video = .stopped }
            else { video = .publishing(videoSize[participant.participantId] ?? PixelSize(width: 320, height: 180)) }
            return LayoutParticipant(participantId: participant.participantId, userId: participant.userId,
                                     attributes: participant.attributes,
                                     arrivalIndex: arrival[participant.participantId] ?? 0, video: video)
        }
    }

    func tiles(atMs ms: Int64) -> [Tile] {
        layout.makeEngine().tiles(canvas: canvas, participants: layoutParticipants(atMs: ms))
    }

    /// Stage time of output frame `index`, rounded to the millisecond like the stage clock.
    static func milliseconds(ofFrame index: Int, fps: (num: Int64, den: Int64)) -> Int64 {
        (Int64(index) * 1000 * fps.den * 2 + fps.num) / (2 * fps.num)
    }

    /// What a point should show given the tiles: the topmost tile holding it, when the point
    /// lies in the central 60 % of that tile (the fixtures' pictures are solid there; their
    /// name text and moving box are near the edges). nil: no firm expectation.
    func expectation(at point: (x: Int, y: Int), tiles: [Tile]) -> PixelExpectation? {
        let holding = tiles.filter {
            point.x >= $0.rect.x && point.x < $0.rect.maxX && point.y >= $0.rect.y && point.y < $0.rect.maxY
        }
        guard let tile = holding.max(by: { $0.zIndex < $1.zIndex }) else { return nil }
        let rx = Double(point.x - tile.rect.x) / Double(tile.rect.width)
        let ry = Double(point.y - tile.rect.y) / Double(tile.rect.height)
        guard (0.2...0.8).contains(rx), (0.2...0.8).contains(ry), tile.rect.width >= 16, tile.rect.height >= 16 else { return nil }
        guard let name = colourName(of: tile.participantId) else { return nil }
        switch tile.content {
        case .video where tile.fillMode != .contain || (0.4...0.6).contains(rx) && (0.4...0.6).contains(ry):
            return .participant(tile.participantId, colour: name)
        case .video:
            return nil
        case .cameraOff:
            return .notParticipant(tile.participantId, colour: name)
        }
    }
}

enum PixelExpectation: Equatable, CustomStringConvertible {
    case participant(String, colour: String)
    case notParticipant(String, colour: String)

    func isMet(by nearest: String) -> Bool {
        switch self {
        case .participant(_, let colour): return nearest == colour
        case .notParticipant(_, let colour): return nearest != colour
        }
    }

    var description: String {
        switch self {
        case .participant(let id, let colour): return "\(id) (\(colour))"
        case .notParticipant(let id, let colour): return "\(id) camera-off (not \(colour))"
        }
    }
}

/// Checks every tile centre of `tiles` (and of `alsoAt`, e.g. the previous layout's) in one
/// decoded frame; returns a line per mismatch.
func pixelMismatches(video: DecodedVideo, frame: Int, model: StageModel, tiles: [Tile], alsoAt extra: [Tile] = []) -> [String] {
    var problems: [String] = []
    for probe in tiles + extra {
        let point = (x: probe.rect.x + probe.rect.width / 2, y: probe.rect.y + probe.rect.height / 2)
        guard let expected = model.expectation(at: point, tiles: tiles) else {
            if !extra.contains(probe) { problems.append("frame \(frame): no expectation at the centre of \(probe)") }
            continue
        }
        let colour = video.colour(frame: frame, x: point.x, y: point.y)
        let nearest = Palette.nearest(colour)
        if !expected.isMet(by: nearest) {
            problems.append("frame \(frame) at (\(point.x),\(point.y)): expected \(expected), got \(colour) ≈ \(nearest)")
        }
    }
    return problems
}
