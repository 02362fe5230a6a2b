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
import Synchronization
import WHEP
import WebRTCMedia

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

/// A recorded stage of `count` publishers composed at 128x72 with a director, for viewers' tests.
enum ViewerStage {
    static func make(count: Int, seconds: Int, keyframeInterval: Int) throws
        -> (stage: URL, source: RecordedStageSource, settings: CompositionSettings, director: CompositionDirector, logger: Logger) {
        let stage = try DirectedStage.makeStage(count: count, seconds: seconds)
        var logger = Logger(label: "viewer")
        logger.logLevel = .critical
        let source = try RecordedStageSource(stage: try RecordedStage.load(from: stage.path), logger: logger)
        let video = VideoEncoderSettings(width: 128, height: 72, frameRate: DirectedStage.frameRate, bitrate: 100_000,
                                         keyframeInterval: keyframeInterval, preset: "ultrafast")
        let director = CompositionDirector()
        let settings = CompositionSettings(video: video, layout: DirectionTests.grid.makeEngine(), duration: .seconds(Int64(seconds)),
                                           director: director)
        return (stage, source, settings, director, logger)
    }
}

@Suite struct ViewerFeedTests {
    @Test("keyframes asked for come at the next frame, a second apart at least; Opus flows while wanted")
    func keyframesAndOpus() async throws {
        try await onThreadChecking { expect in
            let (stage, source, settings, director, logger) = try ViewerStage.make(count: 1, seconds: 6, keyframeInterval: 50)
            defer { try? FileManager.default.removeItem(at: stage) }
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

/// Drives a WHEP outlet from the composition thread as a transport would: the clock follows
/// the output frames, the viewer joins at `joinTick`, and what is due is drained each frame.
final class ViewerDriver: PacketSink, @unchecked Sendable {
    let name = "viewer driver"
    let feed: WHEPFeed
    let outlet: WHEPViewerOutlet
    let joinTick: Int64
    let clock: Clock
    private(set) var datagrams: [WHEPDatagram] = []

    /// The transport's clock (µs), shared with the feed.
    final class Clock: Sendable {
        let value = Atomic<Int64>(0)
        var now: Int64 { value.load(ordering: .relaxed) }
    }

    init(feed: WHEPFeed, outlet: WHEPViewerOutlet, joinTick: Int64, clock: Clock) {
        self.feed = feed
        self.outlet = outlet
        self.joinTick = joinTick
        self.clock = clock
    }

    func start(video: Encoder, audio: Encoder) throws(PipelineError) {}
    func write(_ packet: Packet, media: MediaType) throws(PipelineError) {}
    func finish(failure: String?) throws(PipelineError) { drain(at: clock.now + 2_000_000) }
    func composed(_ canvas: Frame, tick: Int64) throws(PipelineError) {
        clock.value.store(tick * 100_000, ordering: .relaxed)
        if tick == joinTick { try? feed.add(outlet) }
        drain(at: tick * 100_000)
    }

    func drain(at time: Int64) {
        var out: [WHEPDatagram] = []
        outlet.due(now: time, into: &out)
        datagrams += out
    }
}

@Suite struct WHEPFeedTests {
    @Test("a viewer joining mid-GOP gets RTP from a keyframe asked for then: whole, decodable pictures and 20 ms Opus")
    func viewerGetsDecodableRTP() async throws {
        try await onThreadChecking { expect in
            let (stage, source, settings, director, logger) = try ViewerStage.make(count: 2, seconds: 3, keyframeInterval: 100)
            defer { try? FileManager.default.removeItem(at: stage) }
            let clock = ViewerDriver.Clock()
            let feed = WHEPFeed(name: "whep", director: director) { clock.now }
            let outlet = try WHEPViewerOutlet(streams: WHEPViewerStreams(
                video: RTPSendStreamConfiguration(ssrc: 0x1111, payloadType: 102, clockRate: 90_000),
                audio: RTPSendStreamConfiguration(ssrc: 0x2222, payloadType: 111, clockRate: 48_000), cname: "viewer"),
                pacer: ViewerPacerConfiguration(feedbackTimeout: nil))
            let driver = ViewerDriver(feed: feed, outlet: outlet, joinTick: 12, clock: clock)
            let session = try CompositionSession(source: source, settings: settings, sinks: [driver, feed], logger: logger)
            var pacer = AsFastAsPossiblePacer()
            _ = try session.run(pacer: &pacer)
            let packets = driver.datagrams.filter { !$0.isRTCP }.compactMap { try? RTPPacket(parsing: $0.bytes) }
            expect.check(driver.datagrams.contains { $0.isRTCP }, "no sender report")
            // Video: reassembled by the receive side's depacketizer, from a keyframe, every frame whole.
            var depacketizer = H264Depacketizer()
            var frames: [EncodedFrame] = []
            var sequence: Int64 = 0
            var last: UInt16?
            for packet in packets where packet.ssrc == 0x1111 {
                // Sent in order, no loss: the 16-bit numbers extended by their steps.
                sequence += last.map { Int64(packet.sequenceNumber &- $0) } ?? 0
                last = packet.sequenceNumber
                let events = depacketizer.push(payload: packet.payload, sequence: sequence,
                                               timestamp: Int64(packet.timestamp), marker: packet.marker)
                for case .frame(let frame) in events { frames.append(frame) }
            }
            expect.check(frames.first?.isKeyframe == true, "the first picture is not a keyframe")
            expect.check(frames.allSatisfy(\.isComplete), "incomplete pictures")
            // Joined at frame 12 of 30: the keyframe asked for at the join is frame 12 itself.
            expect.check(frames.count == 18, "\(frames.count) pictures")
            let file = stage.appendingPathComponent("viewer.h264")
            try Data(frames.flatMap(\.data)).write(to: file)
            let decoded = try runTool("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                                  "stream=nb_read_frames,width,height", "-of", "csv=p=0", file.path], keeping: .standardOutput)
            expect.check(decoded.text.trimmingCharacters(in: .whitespacesAndNewlines) == "128,72,\(frames.count)", "ffprobe: \(decoded.text)")
            // Audio: 20 ms Opus frames, timestamps 960 apart.
            let opus = packets.filter { $0.ssrc == 0x2222 }
            expect.check(opus.count >= 80, "\(opus.count) Opus packets")
            expect.check(zip(opus, opus.dropFirst()).allSatisfy { $1.timestamp &- $0.timestamp == 960 }, "Opus timestamps not 960 apart")
        }
    }
}
