// Directing a running composition, through the real renderer (decoders, layout engines,
// compositor, mixer) on a recorded stage: a layout change is drawn from the next frame, a
// transition glides and ends exactly on the new layout, a participant's gain and mute
// ramp over one frame, sample for sample, and overlays reach the composition prepared.
import Foundation
@testable import FFmpeg
import Layout
import Logging
import MediaCore
import Pipeline
import Stages
import Testing
import TestSupport

/// One renderer over a recorded stage of `count` participants (a test pattern each, and a
/// tone at 300 + 150·i Hz), publishing from 0 to the end, at 10 fps on a 128×72 canvas.
final class DirectedStage {
    static let frameRate = Rational(10, 1)
    static let samplesPerTick = 4_800
    let renderer: StageRenderer
    let canvas: Frame
    private let audio: Encoder
    /// Every mixed sample so far (left channel), in order.
    private(set) var left: [Float] = []

    init(stage: URL, layout: LayoutConfiguration, size: PixelSize = PixelSize(width: 128, height: 72), reuse: Bool = true) throws {
        var logger = Logger(label: "direction")
        logger.logLevel = .critical
        let source = try RecordedStageSource(stage: try RecordedStage.load(from: stage.path), logger: logger)
        let video = try Encoder(video: VideoEncoderSettings(width: size.width, height: size.height, frameRate: Self.frameRate, bitrate: 100_000,
                                                            keyframeInterval: 10, preset: "ultrafast"))
        canvas = try video.makeInputFrame()
        try video.prepareForWriting(canvas)
        audio = try Encoder(audio: AudioEncoderSettings())
        let compositor = VideoCompositor(canvas: canvas, layout: layout.makeEngine(), logger: logger)
        compositor.parallelDecoding = false
        compositor.reuseUnchangedTiles = reuse
        compositor.frameLead = 50_000
        compositor.stageChangeTransition = Int64(layout.transitionMs ?? 0) * 1000
        let mixer = AudioMixer(sampleRate: 48_000, frameRate: Self.frameRate, encoderFrame: try audio.makeInputFrame(),
                               frameSize: audio.frameSize)
        renderer = StageRenderer(source: source, compositor: compositor, mixer: mixer, frameRate: Self.frameRate)
    }

    func render(tick: Int64) throws {
        renderer.render(tick: tick)
        while let frame = try renderer.mixer.nextEncoderFrame(encoder: audio) {
            let samples = UnsafeRawPointer(frame.pointer.pointee.extended_data[0]!).assumingMemoryBound(to: Float.self)
            left.append(contentsOf: UnsafeBufferPointer(start: samples, count: frame.sampleCount))
        }
    }

    /// The canvas's luma, row by row.
    var luma: [UInt8] {
        let planes = canvas.yuvPlanes
        return (0..<planes.height).flatMap { row in Array(UnsafeBufferPointer(start: planes.y + row * planes.yStride, count: planes.width)) }
    }

    /// Writes a stage directory: `count` participants publishing for `seconds`; `audio` gives
    /// a participant's sound as an ffmpeg filter after its tone (e.g. a volume gate).
    static func makeStage(count: Int, seconds: Int, audio: (Int) -> String? = { _ in nil },
                          directions: [[String: Any]]? = nil, publishAtMs: (Int) -> Int = { _ in 0 }) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("directed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var participants: [[String: Any]] = []
        for index in 0..<count {
            let run = try runTool("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y",
                                             "-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10",
                                             "-f", "lavfi", "-i", "sine=frequency=\(300 + 150 * index):sample_rate=48000"
                                                + (audio(index).map { "," + $0 } ?? ""),
                                             "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-bf", "0",
                                             "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k",
                                             directory.appendingPathComponent("p\(index).mp4").path], keeping: .standardError)
            guard run.status == 0 else { throw StageError(file: "p\(index).mp4", message: run.text) }
            // The last of three is the PiP window in a PiP layout.
            let attributes: [String: String] = index == 2 ? ["pip": "true"] : [:]
            participants.append(["participantId": "p\(index)", "userId": "u\(index)", "attributes": attributes,
                                 "media": "p\(index).mp4", "mediaOffsetMs": publishAtMs(index),
                                 "timeline": [["atMs": publishAtMs(index), "event": "publish"]]])
        }
        var manifest: [String: Any] = ["stageArn": "arn:aws:ivs:us-east-1:123456789012:stage/Directed",
                                       "durationMs": seconds * 1000, "participants": participants]
        if let directions { manifest["directions"] = directions }
        try JSONSerialization.data(withJSONObject: manifest).write(to: directory.appendingPathComponent("manifest.json"))
        return directory
    }
}

/// Expectations made on another thread, recorded on the test's own (Swift Testing attributes
/// an issue to the test whose task records it).
final class Problems: @unchecked Sendable {
    private(set) var list: [String] = []
    func check(_ condition: Bool, _ message: @autoclosure () -> String, line: Int = #line) {
        if !condition { list.append("line \(line): \(message())") }
    }
}

/// Runs `body` on a thread of its own (a big stack for the codecs) and records what it found.
func onThreadChecking(_ body: @escaping @Sendable (Problems) throws -> Void) async throws {
    let problems = try await onThread { () -> [String] in
        let problems = Problems()
        try body(problems)
        return problems.list
    }
    for problem in problems { Issue.record(Comment(rawValue: problem)) }
}

@Suite struct DirectionTests {
    static let grid = LayoutConfiguration(grid: GridConfiguration(gridGap: 0))
    static let pip = LayoutConfiguration(pip: PipConfiguration(gridGap: 0, pipParticipantAttribute: "pip"))

    @Test("a layout change is drawn from the next frame: the same tiles and pixels as that layout from the start")
    func cutOnTheNextFrame() async throws {
        try await onThreadChecking { expect in
            let stage = try DirectedStage.makeStage(count: 3, seconds: 2)
            defer { try? FileManager.default.removeItem(at: stage) }
            let directed = try DirectedStage(stage: stage, layout: Self.grid)
            let reference = try DirectedStage(stage: stage, layout: Self.pip)
            for tick in Int64(0)..<12 {
                if tick == 5 { directed.renderer.direct(CompositionDirection(layout: Self.pip)) }
                try directed.render(tick: tick)
                try reference.render(tick: tick)
                let same = directed.renderer.compositor.tiles == reference.renderer.compositor.tiles
                expect.check(same == (tick >= 5), "tick \(tick): \(directed.renderer.compositor.tiles)")
                if tick >= 5 { expect.check(directed.luma == reference.luma, "tick \(tick): the picture differs from PiP's") }
                expect.check(directed.renderer.compositor.transition == nil, "")
            }
        }
    }

    @Test("a transition glides over its length and lands exactly on the new layout's picture")
    func transitionLandsOnTheNewLayout() async throws {
        try await onThreadChecking { expect in
            let stage = try DirectedStage.makeStage(count: 3, seconds: 2)
            defer { try? FileManager.default.removeItem(at: stage) }
            let directed = try DirectedStage(stage: stage, layout: Self.grid)
            let reference = try DirectedStage(stage: stage, layout: Self.pip)
            let before = try DirectedStage(stage: stage, layout: Self.grid)
            for tick in Int64(0)..<12 {
                // 300 ms at 10 fps: ticks 5 and 6 are between the layouts, 7 is the new one.
                if tick == 5 { directed.renderer.direct(CompositionDirection(layout: Self.pip, transitionMs: 300)) }
                try directed.render(tick: tick)
                try reference.render(tick: tick)
                try before.render(tick: tick)
                let gliding = directed.renderer.compositor.transition != nil
                expect.check(gliding == (tick == 5 || tick == 6), "tick \(tick)")
                if tick == 5 || tick == 6 {
                    expect.check(directed.luma != reference.luma && directed.luma != before.luma, "tick \(tick) shows an end, not the way between")
                } else if tick >= 7 {
                    expect.check(directed.luma == reference.luma, "tick \(tick): the transition did not land on PiP")
                } else {
                    expect.check(directed.luma == before.luma, "")
                }
            }
        }
    }

    @Test("the featured tile follows the active speaker's turns within the hold + 100 ms, never a 200 ms blip")
    func activeSpeakerIsFeatured() async throws {
        // Seconds: turns p0 0.5–3.5, p1 3.5–7, p2 7–10, p0 10–12.5; blips (louder than the
        // speaker, past the hold, far from the blipper's own turns) p2 2.6, p0 5.6, p1 9.1.
        let turns: [(Int, Double, Double)] = [(0, 0.5, 3.5), (1, 3.5, 7.0), (2, 7.0, 10.0), (0, 10.0, 12.5)]
        let blips: [(Int, Double, Double)] = [(2, 2.6, 2.8), (0, 5.6, 5.8), (1, 9.1, 9.3)]
        try await onThreadChecking { expect in
            let stage = try DirectedStage.makeStage(count: 3, seconds: 13) { index in
                let spoken = turns.filter { $0.0 == index }.map { "between(t,\($0.1),\($0.2))" }.joined(separator: "+")
                let blipped = blips.filter { $0.0 == index }.map { "between(t,\($0.1),\($0.2))" }.joined(separator: "+")
                return "volume='if(\(blipped),1.6,if(\(spoken),1,0))':eval=frame"
            }
            defer { try? FileManager.default.removeItem(at: stage) }
            let layout = LayoutConfiguration(grid: GridConfiguration(gridGap: 0, featured: .activeSpeaker))
            let directed = try DirectedStage(stage: stage, layout: layout)
            directed.renderer.followSpeakers(layout.activeSpeaker)
            var switches: [(Double, String?)] = []
            for tick in Int64(0)..<128 {
                try directed.render(tick: tick)
                if directed.renderer.speakerSwitchedAt != nil {
                    directed.renderer.speakerSwitchedAt = nil
                    switches.append((Double(tick) / 10, directed.renderer.speakers?.speaker))
                }
                let t = Double(tick) / 10
                let tiles = directed.renderer.compositor.tiles
                let largest = tiles.max { $0.rect.area < $1.rect.area }
                let featured = tiles.filter { $0.rect.area == largest?.rect.area }.count == 1 ? largest?.participantId : nil
                guard let turn = turns.last(where: { $0.1 <= t }) else {
                    expect.check(featured == nil, "\(t) s: \(featured ?? "") featured before anyone spoke")
                    continue
                }
                let previous = turns.last { $0.2 <= turn.1 }
                if t >= turn.1 + 1.6 {
                    expect.check(featured == "p\(turn.0)", "\(t) s: \(featured ?? "nobody") featured, p\(turn.0) has spoken since \(turn.1) s")
                } else {
                    let allowed = [turn.0, previous?.0].compactMap { $0 }.map { "p\($0)" }
                    expect.check(featured == nil || allowed.contains(featured!), "\(t) s: \(featured!) featured during p\(turn.0)'s turn (a blip?)")
                }
            }
            expect.check(switches.map(\.1) == ["p0", "p1", "p2", "p0"], "switches: \(switches)")
        }
    }

    @Test("a recorded stage's directions (a layout at 0.5 s, attributes at 0.8 s) direct it as the calls did, frame for frame")
    func manifestDirections() async throws {
        try await onThreadChecking { expect in
            let plain = try DirectedStage.makeStage(count: 3, seconds: 2)
            defer { try? FileManager.default.removeItem(at: plain) }
            let directedStage = try DirectedStage.makeStage(count: 3, seconds: 2, directions: [
                ["atMs": 500, "layout": ["pip": ["gridGap": 0, "pipParticipantAttribute": "pip"]], "transitionMs": 200],
                ["atMs": 800, "attributes": ["p0": ["pip": "true"]]],
            ])
            defer { try? FileManager.default.removeItem(at: directedStage) }
            let called = try DirectedStage(stage: plain, layout: Self.grid)
            let scheduled = try DirectedStage(stage: directedStage, layout: Self.grid)
            let source = try #require(scheduled.renderer.source as? RecordedStageSource)
            expect.check(source.scheduledDirections.map(\.atMicroseconds) == [500_000], "\(source.scheduledDirections)")
            for tick in Int64(0)..<12 {
                if tick == 5 { called.renderer.direct(CompositionDirection(layout: Self.pip, transitionMs: 200)) }
                try called.render(tick: tick)
                try scheduled.render(tick: tick)
                expect.check(scheduled.renderer.appliedDirections.map(\.layout) == (tick == 5 ? [Self.pip] : []),
                             "tick \(tick): applied \(scheduled.renderer.appliedDirections)")
                let window = scheduled.renderer.compositor.tiles.max { $0.zIndex < $1.zIndex }
                if tick < 8 {
                    expect.check(scheduled.renderer.compositor.tiles == called.renderer.compositor.tiles, "tick \(tick): tiles differ")
                    expect.check(scheduled.luma == called.luma, "tick \(tick): pictures differ")
                } else {
                    // From 0.8 s p0 has the PiP attribute too, and the first in order with it is the window.
                    expect.check(window?.participantId == "p0", "tick \(tick): the window is \(window?.participantId ?? "none")")
                }
            }
        }
    }

    @Test("with the layout's transitionMs a join glides (tiles move, the newcomer fades in); without it, a cut")
    func joinsGlideWithTheLayoutsTransition() async throws {
        try await onThreadChecking { expect in
            // p2 joins at 0.5 s.
            let stage = try DirectedStage.makeStage(count: 3, seconds: 2, publishAtMs: { $0 == 2 ? 500 : 0 })
            defer { try? FileManager.default.removeItem(at: stage) }
            var gliding = LayoutConfiguration(grid: GridConfiguration(gridGap: 0))
            gliding.transitionMs = 300
            let glide = try DirectedStage(stage: stage, layout: gliding)
            let cut = try DirectedStage(stage: stage, layout: Self.grid)
            var glidingTicks: [Int64] = []
            for tick in Int64(0)..<12 {
                try glide.render(tick: tick)
                try cut.render(tick: tick)
                if glide.renderer.compositor.transition != nil { glidingTicks.append(tick) }
                expect.check(cut.renderer.compositor.transition == nil, "tick \(tick): a cut has no transition")
                expect.check(glide.renderer.compositor.tiles == cut.renderer.compositor.tiles, "tick \(tick): the tiles aimed at differ")
                if tick >= 8 { expect.check(glide.luma == cut.luma, "tick \(tick): the glide did not land on the cut's picture") }
            }
            // The join shows on the tick nearest it (0.5 s, frame lead half a frame): 5, then 6 and 7 glide.
            expect.check(glidingTicks.count == 2 && glidingTicks.allSatisfy { (4...7).contains($0) }, "gliding at ticks \(glidingTicks)")
        }
    }

    @Test("the direction log keeps the start, each change at its time and attribute changes as seen, bounded")
    func directionLog() throws {
        let log = DirectionLog(stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/Directed")
        log.startedAtMs = 1_800_000_000_000
        log.start(CompositionDirection(layout: Self.grid))
        func state(_ id: String, _ attributes: [String: String]) -> StageParticipantState {
            StageParticipantState(participantId: id, userId: id, attributes: attributes, isPublished: true, isVideoStopped: false,
                                  isAudioMuted: false, arrivalIndex: 0)
        }
        log.observe([state("a", [:]), state("b", ["k": "v"])], atMicroseconds: 33_333)
        log.observe([state("a", [:]), state("b", ["k": "v"])], atMicroseconds: 66_666)
        #expect(log.json() == nil, "the start and first attributes alone are no direction: no file")
        log.observe([state("a", ["featured": "true"]), state("b", ["k": "v"])], atMicroseconds: 99_999)
        log.record(CompositionDirection(layout: Self.pip, transitionMs: 300, audio: ["a": ParticipantAudio(gain: 0.5)]), atMicroseconds: 133_332)
        let record = try JSONDecoder().decode(DirectionsRecord.self, from: try #require(log.json()))
        #expect(record.directions == [
            StageDirection(atMs: 0, wallClockMs: 1_800_000_000_000, layout: Self.grid, transitionMs: 0),
            StageDirection(atMs: 33, wallClockMs: 1_800_000_000_033, attributes: ["b": ["k": "v"]]),
            StageDirection(atMs: 99, wallClockMs: 1_800_000_000_099, attributes: ["a": ["featured": "true"]]),
            StageDirection(atMs: 133, wallClockMs: 1_800_000_000_133, layout: Self.pip, transitionMs: 300, audio: ["a": ParticipantAudio(gain: 0.5)]),
        ])
        // On a stage that began 10 ms later, by wall-clock time.
        #expect(record.directions(onStageStartedAtMs: 1_800_000_000_010).map(\.atMs) == [-10, 23, 89, 123])
        for index in 0..<(DirectionLog.limit + 5) { log.record(CompositionDirection(audio: ["a": ParticipantAudio(gain: 1)]), atMicroseconds: Int64(index)) }
        #expect(log.directions.count == DirectionLog.limit && log.dropped == 9)
    }

    static let banner = OverlayConfiguration(banners: [BannerOverlay(id: "title", text: "Live")])
    static let logo = OverlayConfiguration(images: [ImageOverlay(file: "art/logo.png", position: .topRight)])

    /// A 2×2 PNG at `path` inside `directory`.
    static func writeLogo(in directory: URL, path: String = "art/logo.png") throws {
        let url = directory.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(PNGEncoder.encodeRGB(width: 2, height: 2, rgb: [UInt8](repeating: 90, count: 12))).write(to: url)
    }

    @Test("the direction log keeps the overlays a composition starts with and each whole description that replaced them")
    func directionLogKeepsOverlays() throws {
        let log = DirectionLog(stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/Directed")
        log.start(CompositionDirection(layout: Self.grid, overlays: PreparedOverlays(configuration: Self.banner, images: [:])))
        log.record(CompositionDirection(overlays: PreparedOverlays(configuration: OverlayConfiguration(), images: [:])), atMicroseconds: 2_500_000)
        let record = try JSONDecoder().decode(DirectionsRecord.self, from: try #require(log.json()))
        #expect(record.directions == [
            StageDirection(atMs: 0, layout: Self.grid, transitionMs: 0, overlays: Self.banner),
            StageDirection(atMs: 2500, overlays: OverlayConfiguration()),
        ])
        // The mailbox between the API and the composition keeps the latest whole description.
        let director = CompositionDirector()
        director.post(CompositionDirection(overlays: PreparedOverlays(configuration: Self.banner, images: [:])))
        director.post(CompositionDirection(audio: ["a": ParticipantAudio(muted: true)]))
        director.post(CompositionDirection(overlays: PreparedOverlays(configuration: OverlayConfiguration(), images: [:])))
        director.post(CompositionDirection(layout: Self.pip))
        let merged = try #require(director.take())
        #expect(merged.overlays?.configuration == OverlayConfiguration())
        #expect(merged.layout == Self.pip && merged.audio == ["a": ParticipantAudio(muted: true)])
    }

    @Test("a recorded stage's overlay directions are prepared when it is loaded, files from its folder; a missing one names the direction")
    func manifestOverlaysArePreparedAtLoad() async throws {
        try await onThreadChecking { expect in
            let directions: [[String: Any]] = [
                ["atMs": 300, "overlays": ["banners": [["id": "title", "text": "Live"]]]],
                ["atMs": 600, "overlays": ["images": [["file": "art/logo.png", "position": "TOP_RIGHT"]]]],
                ["atMs": 900, "attributes": ["p0": ["k": "v"]]],
            ]
            let stage = try DirectedStage.makeStage(count: 1, seconds: 1, directions: directions)
            defer { try? FileManager.default.removeItem(at: stage) }
            var logger = Logger(label: "direction")
            logger.logLevel = .critical
            do {
                _ = try RecordedStageSource(stage: try RecordedStage.load(from: stage.path), logger: logger)
                expect.check(false, "the logo is not there yet")
            } catch let error as PipelineError {
                expect.check(error.description.hasPrefix(stage.appendingPathComponent("manifest.json").standardizedFileURL.path
                                                         + ": directions[1].overlays.images[0].file: "), error.description)
            }
            try Self.writeLogo(in: stage)
            let source = try RecordedStageSource(stage: try RecordedStage.load(from: stage.path), logger: logger)
            expect.check(source.scheduledDirections.map(\.atMicroseconds) == [300_000, 600_000], "\(source.scheduledDirections.map(\.atMicroseconds))")
            expect.check(source.scheduledDirections.map(\.change.overlays?.configuration) == [Self.banner, Self.logo], "overlays")
            let image = source.scheduledDirections.last?.change.overlays?.images["art/logo.png"]
            expect.check(image?.width == 2 && image?.height == 2, "the logo is decoded: \(String(describing: image))")
        }
    }

    @Test("a session draws its overlays from the first frame, logs them as its start, and applies a recorded stage's change at its time")
    func sessionStartsWithItsOverlays() async throws {
        try await onThreadChecking { expect in
            let stage = try DirectedStage.makeStage(count: 1, seconds: 1, directions: [["atMs": 500, "overlays": [String: Any]()]])
            defer { try? FileManager.default.removeItem(at: stage) }
            try Data(PNGEncoder.encodeRGB(width: 16, height: 16, rgb: Array([[UInt8]](repeating: [255, 0, 0], count: 256).joined())))
                .write(to: stage.appendingPathComponent("red.png"))
            let red = OverlayConfiguration(images: [ImageOverlay(file: "red.png", position: .topLeft, margin: 0)])
            func run(overlays: OverlayConfiguration?) throws -> (CanvasProbe, DirectionLog, [(OverlayConfiguration?, MediaTime)]) {
                var logger = Logger(label: "direction")
                logger.logLevel = .critical
                let source = try RecordedStageSource(stage: try RecordedStage.load(from: stage.path), logger: logger)
                let video = VideoEncoderSettings(width: 128, height: 72, frameRate: DirectedStage.frameRate, bitrate: 100_000,
                                                 keyframeInterval: 10, preset: "ultrafast")
                var settings = CompositionSettings(video: video, layout: Self.grid.makeEngine(), duration: .seconds(1),
                                                   director: CompositionDirector())
                settings.layoutConfiguration = Self.grid
                settings.overlays = try overlays.map { try OverlayAssets(directory: stage.path).prepare($0) }
                let log = DirectionLog(stageArn: source.stageArn)
                settings.directionLog = log
                let probe = CanvasProbe(points: [(4, 4)])
                var told: [(OverlayConfiguration?, MediaTime)] = []
                let session = try CompositionSession(source: source, settings: settings, sinks: [probe], logger: logger) { event in
                    if case .directed(let change, let at) = event { told.append((change.overlays?.configuration, at)) }
                }
                var pacer = AsFastAsPossiblePacer()
                _ = try session.run(pacer: &pacer)
                return (probe, log, told)
            }
            let (plain, _, _) = try run(overlays: nil)
            let (drawn, log, told) = try run(overlays: red)
            expect.check(drawn.samples.count == 10 && plain.samples.count == 10, "\(drawn.samples.count) frames")
            for tick in 0..<min(10, drawn.samples.count) {
                if tick < 5 {
                    expect.check(CanvasColour.isRed(drawn.samples[tick][0]), "tick \(tick): \(drawn.samples[tick][0]) is not the red logo")
                } else {
                    expect.check(drawn.samples[tick][0] == plain.samples[tick][0], "tick \(tick): the logo is still there after {} at 0.5 s")
                }
            }
            expect.check(log.directions.map(\.atMs) == [0, 500], "\(log.directions.map(\.atMs))")
            expect.check(log.directions.map(\.overlays) == [red, OverlayConfiguration()], "\(log.directions.map(\.overlays))")
            expect.check(log.directions.first?.layout == Self.grid, "the start keeps its layout")
            expect.check(told.map(\.0) == [OverlayConfiguration()] && told.map(\.1.millisecondsValue) == [500], "told \(told)")
        }
    }

    @Test("gain 0.5 and then mute ramp over one frame, sample for sample, with no step")
    func gainAndMuteRamp() async throws {
        try await onThreadChecking { expect in
            let stage = try DirectedStage.makeStage(count: 1, seconds: 2)
            defer { try? FileManager.default.removeItem(at: stage) }
            let directed = try DirectedStage(stage: stage, layout: Self.grid)
            let reference = try DirectedStage(stage: stage, layout: Self.grid)
            for tick in Int64(0)..<15 {
                if tick == 5 { directed.renderer.direct(CompositionDirection(audio: ["p0": ParticipantAudio(gain: 0.5)])) }
                if tick == 10 { directed.renderer.direct(CompositionDirection(audio: ["p0": ParticipantAudio(gain: 0.5, muted: true)])) }
                try directed.render(tick: tick)
                try reference.render(tick: tick)
            }
            let n = DirectedStage.samplesPerTick
            /// The gain the mix must have at sample `i`: 1, a ramp to 0.5 over tick 5, 0.5, a
            /// ramp to 0 over tick 10, 0.
            func gain(_ i: Int) -> Float {
                switch i {
                case ..<(5 * n): 1
                case ..<(6 * n): 1 - 0.5 * Float(i - 5 * n + 1) / Float(n)
                case ..<(10 * n): 0.5
                case ..<(11 * n): 0.5 - 0.5 * Float(i - 10 * n + 1) / Float(n)
                default: 0
                }
            }
            let count = min(directed.left.count, reference.left.count)
            expect.check(count >= 14 * n, "")
            let peak = reference.left.prefix(count).map(abs).max() ?? 0
            expect.check(peak > 0.05, "the tone is in the mix")
            var worst: Float = 0
            for i in 0..<count { worst = max(worst, abs(directed.left[i] - reference.left[i] * gain(i))) }
            expect.check(worst < 1e-5, "the mix departs from the ramped gain by \(worst)")
            // -6 dB once ramped, silence once muted.
            func rms(_ range: Range<Int>, _ samples: [Float]) -> Double {
                (samples[range].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(range.count)).squareRoot()
            }
            let db = 20 * log10(rms(6 * n..<10 * n, directed.left) / rms(6 * n..<10 * n, reference.left))
            expect.check(abs(db + 6.02) < 0.05, "\(db) dB")
            expect.check(directed.left[(11 * n)..<count].allSatisfy { $0 == 0 }, "")
        }
    }
}
