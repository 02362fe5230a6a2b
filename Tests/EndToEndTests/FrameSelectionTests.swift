// Which picture a tick shows when a publisher's frames fall between the output ticks: the one
// nearest to the tick (as ffmpeg's fps filter rounds), so video is within half a frame of its
// audio either way. The publisher's frames carry their index in their brightness, and the
// stage places them 10 ms or 23 ms after the 30 fps ticks: 10 ms after, a tick shows the
// frame that is due next; 23 ms after, it shows the one already due. Showing only frames
// already due (video 0–1 frame late), or a whole frame ahead, fails one case or the other.

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
struct FrameSelectionTests {
    @Test("each tick shows the publisher's frame nearest to it", arguments: [
        // (frames' delay after the ticks in ms, frame index shown at tick n ≥ 1 minus n)
        (10, 0),
        (23, -1),
    ])
    func nearestFrame(delayMs: Int, expectedLag: Int) async throws {
        let media = try await numberedFrames(name: "numbered-frames", seconds: 2, luma: "8*mod(N,30)", keyframeInterval: 30)
        let directory = try makeNumberedStage(named: "frame-selection", media: media, durationMs: 1000, mediaOffsetMs: delayMs)
        let shown = try await onThread { try Self.frameIndexPerTick(stage: directory) }

        #expect(shown.count == 30)
        // Tick 0 shows the first picture at once (it is due within a frame).
        #expect(shown.first == 0, "tick 0 showed frame \(String(describing: shown.first))")
        let wrong = (1..<shown.count).filter { shown[$0] != $0 + expectedLag }
        #expect(wrong.isEmpty, "frames \(delayMs) ms after the ticks: tick n must show frame n\(expectedLag == 0 ? "" : "\(expectedLag)"); shown \(shown)")
    }

    /// Composes 1 s onto a 160x90 canvas filled by the one tile; the frame index each tick shows.
    static func frameIndexPerTick(stage directory: String) throws -> [Int] {
        var logger = Logger(label: "frame-selection")
        logger.logLevel = .error
        let source = try RecordedStageSource(stage: try RecordedStage.load(from: directory), logger: logger)
        let video = VideoEncoderSettings(width: 160, height: 90, frameRate: Rational(30, 1), bitrate: 200_000,
                                         keyframeInterval: 30, preset: "ultrafast")
        let layout = GridLayout(configuration: GridConfiguration(gridGap: 0))
        let settings = CompositionSettings(video: video, layout: layout, duration: .seconds(1))
        let probe = CanvasSampler { $0.yuv(atX: $0.width / 2, y: $0.height / 2).y }
        let session = try CompositionSession(source: source, settings: settings, sinks: [probe], logger: logger)
        var pacer = AsFastAsPossiblePacer()
        _ = try session.run(pacer: &pacer)
        return probe.values.map { Int((Double($0) / 8).rounded()) }
    }
}
