// What a composition gives WebRTC viewers (#44) besides its encode: keyframes asked for, at
// most one a second, and the mix once more as Opus while a sink wants it.

import Foundation
@testable import FFmpeg
import Layout
import Logging
import MediaCore
import Pipeline
import Stages
import Testing
import TestSupport

/// Records the video packets' keyframes and the Opus packets; wants Opus over `opusTicks`,
/// asks the director for keyframes at `keyframeTicks`.
final class ViewerCapture: PacketSink, @unchecked Sendable {
    let name = "viewer capture"
    let director: CompositionDirector
    let opusTicks: Range<Int64>
    let keyframeTicks: Set<Int64>
    private var tick: Int64 = -1
    private(set) var keyframes: [Int64] = []
    private var videoPackets: Int64 = 0
    private(set) var opus: [(pts: Int64, duration: Int64, bytes: Int, tick: Int64)] = []

    init(director: CompositionDirector, opusTicks: Range<Int64>, keyframeTicks: Set<Int64>) {
        self.director = director
        self.opusTicks = opusTicks
        self.keyframeTicks = keyframeTicks
    }

    func start(video: Encoder, audio: Encoder) throws(PipelineError) {}
    func finish(failure: String?) throws(PipelineError) {}
    func composed(_ canvas: Frame, tick: Int64) throws(PipelineError) {
        self.tick = tick
        if keyframeTicks.contains(tick) { director.requestKeyframe() }
    }
    func write(_ packet: Packet, media: MediaType) throws(PipelineError) {
        guard media == .video else { return }
        if packet.isKeyframe { keyframes.append(videoPackets) }
        videoPackets += 1
    }
    var wantsViewerAudio: Bool { opusTicks.contains(tick) }
    func writeViewerAudio(_ packet: Packet) throws(PipelineError) {
        opus.append((packet.pointer.pointee.pts, packet.pointer.pointee.duration, Int(packet.pointer.pointee.size), tick))
    }
}

@Suite struct ViewerFeedTests {
    @Test("keyframes asked for come at the next frame, a second apart at least; Opus flows while wanted")
    func keyframesAndOpus() async throws {
        try await onThreadChecking { expect in
            let stage = try DirectedStage.makeStage(count: 1, seconds: 6)
            defer { try? FileManager.default.removeItem(at: stage) }
            var logger = Logger(label: "viewer")
            logger.logLevel = .critical
            let source = try RecordedStageSource(stage: try RecordedStage.load(from: stage.path), logger: logger)
            let video = VideoEncoderSettings(width: 128, height: 72, frameRate: DirectedStage.frameRate, bitrate: 100_000,
                                             keyframeInterval: 50, preset: "ultrafast")
            let director = CompositionDirector()
            let settings = CompositionSettings(video: video, layout: DirectionTests.grid.makeEngine(), duration: .seconds(6), director: director)
            // At 10 fps, regular keyframes at 0 and 50. Asked at 3: a second after 0 (10); at 25:
            // at once; at 27: a second after 25 (35); at 44: 45; at 49: the regular one at 50.
            let capture = ViewerCapture(director: director, opusTicks: 5..<25, keyframeTicks: [3, 25, 27, 44, 49])
            let session = try CompositionSession(source: source, settings: settings, sinks: [capture], logger: logger)
            var pacer = AsFastAsPossiblePacer()
            _ = try session.run(pacer: &pacer)
            expect.check(capture.keyframes == [0, 10, 25, 35, 45, 50], "keyframes at \(capture.keyframes)")
            let opus = capture.opus
            // 20 ms frames of 48 kHz, contiguous, from the tick after the first one wanted (6:
            // sample 28 800) on.
            expect.check(opus.count >= 90 && opus.count <= 100, "\(opus.count) Opus packets over 2 s")
            expect.check(opus.allSatisfy { $0.duration == 960 && $0.bytes > 0 }, "durations \(Set(opus.map(\.duration)))")
            expect.check(zip(opus, opus.dropFirst()).allSatisfy { $1.pts - $0.pts == 960 }, "not contiguous")
            if let first = opus.first {
                // The encoder's look-ahead stamps the first packet its padding early.
                expect.check(abs(first.pts - 28_800) <= 960, "first Opus pts \(first.pts)")
            }
            expect.check(opus.allSatisfy { (5..<25).contains($0.tick) }, "Opus outside the wanted ticks: \(Set(opus.map(\.tick)))")
        }
    }
}
