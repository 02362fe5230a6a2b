// The video of a participant who is not shown (video stopped, not yet published) is read on
// the stage clock but not decoded. These tests compose the same stage with and without
// decoding it, and require the same canvases tick by tick, with fewer frames decoded:
//   - the four-grid fixture, whose green publisher stops its video for 2 s (1 s keyframe
//     interval): shown again, it decodes from its latest keyframe up to the tick at once;
//   - a video-only publisher with a 12 s keyframe interval, hidden for 10.5 s: more packets
//     than the queue keeps, so they are dropped, and the picture returns at the next keyframe
//     (camera-off for the half second before it), on the stage clock although the gap is
//     longer than the timestamp mapper's 10 s jump limit;
//   - the same with a source that flags no keyframes: after 300 more packets it stops
//     waiting for a flag and the decoder shows the bitstream's next keyframe.

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
struct HiddenVideoTests {
    @Test("a stopped publisher's video is not decoded, and resumes from its latest keyframe with the same pictures")
    func stoppedVideoResumesFromTheLatestKeyframe() async throws {
        let stage = Paths.fixture("four-grid")
        let (skipping, decodingAll) = try await Self.composeBothWays(stage: stage, seconds: 8, width: 480, height: 270)
        #expect(skipping.canvases.count == 240)
        let differing = Self.differingTicks(skipping, decodingAll)
        #expect(differing.isEmpty, "canvases differ at ticks \(differing.prefix(10))")
        // p1 is stopped from 3 to 5 s (60 ticks); shown again at 5 s, it decodes from its
        // keyframe at 4.02 s, so about 30 frames are not decoded at all.
        let saved = (decodingAll.decoded["p1"] ?? 0) - (skipping.decoded["p1"] ?? 0)
        #expect(saved >= 25 && saved <= 60, "p1 decoded \(String(describing: skipping.decoded["p1"])) frames against \(String(describing: decodingAll.decoded["p1"]))")
        // The others are shown throughout (p3 from its first frame at 2 s).
        for id in ["p0", "p2", "p3"] {
            #expect(skipping.decoded[id] == decodingAll.decoded[id], "\(id): \(skipping.decoded) against \(decodingAll.decoded)")
        }
    }

    @Test("video hidden longer than the queue holds returns at the next keyframe, on the stage clock")
    func longGapReturnsAtTheNextKeyframe() async throws {
        // 13 s, frame k with luma 16 + k mod 200, keyframes at 0 and 12 s only.
        let media = try await numberedFrames(name: "long-gop-numbers", seconds: 13, luma: "16+mod(N,200)", keyframeInterval: 360)
        let directory = try makeNumberedStage(named: "hidden-video", media: media, durationMs: 13000, events: [
            #"{ "atMs": 1000, "event": "videoStopped" }"#, #"{ "atMs": 11500, "event": "videoStarted" }"#,
        ])
        let (skipping, decodingAll) = try await Self.composeBothWays(stage: directory, seconds: 13, width: 160, height: 90)
        #expect(skipping.canvases.count == 390)
        // Shown again at 11.5 s (tick 345) with no keyframe kept: camera-off until the
        // keyframe at 12 s (tick 360), then the same pictures as decoding all along.
        let differing = Self.differingTicks(skipping, decodingAll)
        #expect(differing == Array(345..<360), "canvases differ at ticks \(differing)")
        // Frame n is due at tick n, and frame k has luma 16 + k mod 200.
        let wrong = (360..<390).filter { skipping.canvases[$0].centreLuma != 16 + $0 % 200 }
        #expect(wrong.isEmpty, "ticks \(wrong) show \(wrong.map { skipping.canvases[$0].centreLuma })")
        // Decoded: the first second (30 frames, and the one decoded ahead) and 12 to 13 s.
        let decoded = skipping.decoded["numbers"] ?? 0
        #expect(decoded >= 60 && decoded <= 64, "decoded \(decoded) frames")
        #expect(decodingAll.decoded["numbers"] ?? 0 >= 390)
    }

    @Test("video waiting for a keyframe its container never flags returns at the bitstream's next one")
    func unflaggedKeyframes() async throws {
        // 26 s, keyframes at 0, 12 and 24 s, none of them flagged by the source.
        let media = try await numberedFrames(name: "long-gop-numbers-26", seconds: 26, luma: "16+mod(N,200)", keyframeInterval: 360)
        let shown = try await onThread { () throws -> [Int?] in
            var logger = Logger(label: "hidden-video")
            logger.logLevel = .error
            let subscriber = try ParticipantSubscriber(participantId: "numbers", source: try UnflaggedKeyframes(url: media),
                                                       offset: .zero, logger: logger)
            // Hidden from 1 to 11.5 s: more packets than the queue keeps, so they are dropped.
            return (0..<780).map { tick -> Int? in
                subscriber.setVideoShown(tick < 30 || tick >= 345)
                subscriber.advanceVideo(to: Int64(tick) * 1_000_000 / 30 + 16_666)
                guard subscriber.isVideoShown, subscriber.currentVideoSize != nil else { return nil }
                return Int(subscriber.current.yuv(atX: 80, y: 45).y)
            }
        }
        // Shown again at 11.5 s, it waits for a flagged keyframe, gives up 300 packets later
        // (21.5 s), and the decoder shows its next keyframe, at 24 s, and the frames after it.
        let pictureless = (345..<645).filter { shown[$0] != nil }
        #expect(pictureless.isEmpty, "a picture while waiting for a keyframe at ticks \(pictureless.prefix(10))")
        let wrong = (720..<780).filter { shown[$0] != 16 + $0 % 200 }
        #expect(wrong.isEmpty, "ticks \(wrong.prefix(10)) show \(wrong.prefix(10).map { shown[$0] })")
    }

    struct Sample: Equatable {
        var digest: CanvasDigest.Value
        var centreLuma: Int
    }

    struct Composed {
        var canvases: [Sample]
        /// Video frames each participant's decoder produced.
        var decoded: [String: Int64]
    }

    static func differingTicks(_ a: Composed, _ b: Composed) -> [Int] {
        zip(a.canvases, b.canvases).enumerated().filter { $0.element.0.digest != $0.element.1.digest }.map(\.offset)
    }

    /// The stage composed as usual (hidden video not decoded), then decoding all video.
    static func composeBothWays(stage: String, seconds: Int64, width: Int, height: Int) async throws -> (Composed, Composed) {
        let skipping = try await onThread {
            try compose(stage: stage, seconds: seconds, width: width, height: height, decodeHiddenVideo: false)
        }
        let decodingAll = try await onThread {
            try compose(stage: stage, seconds: seconds, width: width, height: height, decodeHiddenVideo: true)
        }
        return (skipping, decodingAll)
    }

    static func compose(stage directory: String, seconds: Int64, width: Int, height: Int, decodeHiddenVideo: Bool) throws -> Composed {
        var logger = Logger(label: "hidden-video")
        logger.logLevel = .error
        let stage = try RecordedStage.load(from: directory)
        let source = try RecordedStageSource(stage: stage, logger: logger)
        let video = VideoEncoderSettings(width: width, height: height, frameRate: Rational(30, 1), bitrate: 300_000,
                                         keyframeInterval: 60, preset: "ultrafast")
        let layout = GridLayout(configuration: GridConfiguration(gridGap: 0))
        let settings = CompositionSettings(video: video, layout: layout, duration: .seconds(seconds),
                                           tuning: CompositionTuning(decodeHiddenVideo: decodeHiddenVideo))
        let sampler = CanvasSampler { canvas in
            Sample(digest: CanvasDigest.of(canvas), centreLuma: Int(canvas.yuv(atX: canvas.width / 2, y: canvas.height / 2).y))
        }
        let session = try CompositionSession(source: source, settings: settings, sinks: [sampler], logger: logger)
        var pacer = AsFastAsPossiblePacer()
        _ = try session.run(pacer: &pacer)
        var decoded: [String: Int64] = [:]
        for participant in stage.manifest.participants {
            decoded[participant.participantId] = source.subscriber(for: participant.participantId)?.decodedVideoFrames
        }
        return Composed(canvases: sampler.values, decoded: decoded)
    }
}

/// A file whose packets carry no keyframe flags (as some sources deliver them).
final class UnflaggedKeyframes: ParticipantMediaSource {
    private let file: DemuxerMediaSource

    init(url: String) throws { file = try DemuxerMediaSource(url: url) }

    func stream(_ type: MediaType) -> MediaStreamSetup? { file.stream(type) }

    func read(into packet: Packet) throws(FFmpegError) -> MediaSourceRead {
        let result = try file.read(into: packet)
        packet.isKeyframe = false
        return result
    }

    var startTimeMicroseconds: Int64? { file.startTimeMicroseconds }
    var durationMicroseconds: Int64? { file.durationMicroseconds }
    var isLive: Bool { false }
}
