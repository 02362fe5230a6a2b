// The live media path without a network: real H.264/AAC packets (made by the ffmpeg CLI,
// read back with our demuxer) are pushed into LivePublishers on a virtual clock as if they
// arrived over RTMP, and a real composition (decoders, compositor, mixer, x264, AAC) runs
// against a LiveStageSource paced by the same clock. Deterministic: nothing waits on the
// wall clock.
import Foundation
@testable import FFmpeg
import Layout
@testable import LiveStage
import Logging
import MediaCore
import Pipeline
import Synchronization
import Testing
import TestSupport

/// One participant's media, demuxed once and kept in memory.
final class RecordedPublisherMedia: @unchecked Sendable {
    struct Item {
        var type: MediaType
        var data: [UInt8]
        var dts: Int64
        var pts: Int64
        var isKeyframe: Bool
    }

    let video: CodecConfiguration
    let audio: CodecConfiguration
    let items: [Item]
    /// The streams a publisher of this media announces.
    let announce: Set<MediaType>

    /// An FLV (H.264 + AAC) of a flat colour and a tone, `seconds` long, made by ffmpeg.
    static func make(colour: String, tone: Int, seconds: Int, size: String = "320x240", bframes: Int = 0,
                     audioRate: Int = 44_100) throws -> RecordedPublisherMedia {
        try make(videoSource: "color=c=\(colour):size=\(size):rate=30", audioSource: "sine=frequency=\(tone):sample_rate=\(audioRate)",
                 seconds: seconds, bframes: bframes)
    }

    /// An FLV (H.264 + AAC) of two lavfi sources, made by ffmpeg and demuxed into memory.
    static func make(videoSource: String, audioSource: String, seconds: Int, bframes: Int, gop: Int = 30) throws -> RecordedPublisherMedia {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("live-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("media.flv").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-hide_banner", "-loglevel", "error", "-y",
                             "-f", "lavfi", "-i", videoSource, "-f", "lavfi", "-i", audioSource,
                             "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-g", "\(gop)", "-bf", "\(bframes)",
                             "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "96k", "-f", "flv", file]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FFmpegError(kind: .other, operation: "ffmpeg", message: "exit \(process.terminationStatus)") }
        let source = try DemuxerMediaSource(url: file)
        guard let videoSetup = source.stream(.video), let audioSetup = source.stream(.audio) else {
            throw FFmpegError(kind: .other, operation: "demux", message: "missing stream")
        }
        let video = CodecConfiguration(codec: .h264, extradata: videoSetup.parameters.extradata,
                                       width: videoSetup.info.width, height: videoSetup.info.height)
        let audio = CodecConfiguration(codec: .aac, extradata: audioSetup.parameters.extradata,
                                       sampleRate: audioSetup.info.sampleRate, channelCount: audioSetup.info.channelCount)
        var items: [Item] = []
        let packet = Packet()
        while case .packet(let type) = try source.read(into: packet) {
            let info = type == .video ? videoSetup.info : audioSetup.info
            let dts = info.timeBase.rescale(packet.dts, to: MediaTime.microseconds)
            let pts = info.timeBase.rescale(packet.pts, to: MediaTime.microseconds)
            items.append(Item(type: type, data: packet.bytes, dts: dts, pts: pts, isKeyframe: packet.isKeyframe))
        }
        return RecordedPublisherMedia(video: video, audio: audio, items: items)
    }

    init(video: CodecConfiguration, audio: CodecConfiguration, items: [Item], announce: Set<MediaType> = [.video, .audio]) {
        self.video = video
        self.audio = audio
        self.items = items
        self.announce = announce
    }
}

/// Plays recorded media into a LivePublisher as the virtual clock passes each packet's
/// arrival time: `joinAt` + its timestamp (+ `delay(i)` of network delay).
final class SimulatedPublisher: @unchecked Sendable {
    let media: RecordedPublisherMedia
    let joinAt: Int64
    let leaveAt: Int64?
    let identity: LiveParticipantIdentity
    var delay: (Int) -> Int64 = { _ in 20_000 }
    /// Stop sending between these stage times (a stalled publisher).
    var stall: Range<Int64>?
    /// From `at` (stage time), the same connection goes on with other media (new sequence
    /// headers, timestamps continuing).
    var continuation: (at: Int64, media: RecordedPublisherMedia)?
    /// Announces its video with its first video packet, after joining with audio (as a WHIP
    /// publisher's video track is only known from its first keyframe).
    var announcesVideoLate = false
    private var videoAnnounced = false
    private var continued = false
    private var pendingContinuation: [RecordedPublisherMedia.Item] = []
    private(set) var publisher: LivePublisher?
    private var next = 0
    /// What the publisher's consumers asked of its picture, at each tick it was connected.
    private(set) var demands: [(at: Int64, demand: LiveVideoDemand)] = []
    /// A queue of its own, as a participant recording takes one, from `extraConsumerAt` on.
    var extraConsumerAt: Int64?
    private var extraConsumer: LiveMediaQueue?

    init(media: RecordedPublisherMedia, id: String, joinAt: Int64, leaveAt: Int64? = nil) {
        self.media = media
        self.joinAt = joinAt
        self.leaveAt = leaveAt
        identity = LiveParticipantIdentity(participantId: id, userId: id, attributes: [:])
    }

    func advance(to now: Int64, hub: LiveStageHub, stageArn: String) {
        if let leaveAt, now >= leaveAt {
            publisher?.leave()
            publisher = nil
            next = media.items.count
            return
        }
        guard now >= joinAt else { return }
        if publisher == nil, next == 0 {
            let joined = hub.join(stageArn: stageArn, identity: identity)
            if media.announce.contains(.video), !announcesVideoLate { joined.announce(media.video); videoAnnounced = true }
            if media.announce.contains(.audio) { joined.announce(media.audio) }
            publisher = joined
        }
        guard let publisher else { return }
        if let continuation, !continued, now >= joinAt + continuation.at {
            // The rest of this media is dropped; the new one's timestamps follow on.
            continued = true
            publisher.announce(continuation.media.video)
            publisher.announce(continuation.media.audio)
            pendingContinuation = continuation.media.items
            next = media.items.count
        }
        while !pendingContinuation.isEmpty, let continuation {
            let item = pendingContinuation[0]
            let arrival = joinAt + continuation.at + item.dts + delay(0)
            guard arrival <= now else { break }
            publisher.push(item.type, data: item.data, timestamp: continuation.at + item.dts,
                           compositionOffset: item.pts - item.dts, isKeyframe: item.isKeyframe)
            pendingContinuation.removeFirst()
        }
        while next < media.items.count {
            let item = media.items[next]
            let arrival = joinAt + item.dts + delay(next)
            guard arrival <= now else { break }
            if let stall, stall.contains(arrival) { next += 1; continue }
            if item.type == .video, !videoAnnounced {
                publisher.announce(media.video)
                videoAnnounced = true
            }
            publisher.push(item.type, data: item.data, timestamp: item.dts, compositionOffset: item.pts - item.dts,
                           isKeyframe: item.isKeyframe)
            next += 1
        }
        if let at = extraConsumerAt, now >= at, extraConsumer == nil { extraConsumer = publisher.makeQueue() }
        demands.append((now, publisher.videoDemand))
    }
}

/// Paces the composition on the manual clock, delivering whatever "arrived" before each tick.
struct SimulationPacer: Pacer {
    var base: ClockPacer
    let clock: ManualMediaClock
    let deliver: (Int64) -> Void
    /// Says every tick is a second late (a composition that cannot keep up: after the first,
    /// every tick repeats the previous picture).
    var alwaysLate = false

    mutating func wait(until stageTime: MediaTime) -> Int64 {
        let deadline = base.origin + stageTime.microsecondsValue
        // Deliver in 5 ms steps so arrivals interleave with the clock as they would live.
        var t = clock.now().microsecondsValue
        while t < deadline {
            t = min(deadline, t + 5_000)
            clock.advance(to: .microseconds(t))
            deliver(t)
        }
        let late = base.wait(until: stageTime)
        return alwaysLate ? 1_000_000 : late
    }
}

/// Records the canvas colour at chosen points of each output frame, and audio packets.
final class CanvasProbe: PacketSink, @unchecked Sendable {
    let name = "probe"
    let points: [(x: Int, y: Int)]
    /// samples[tick][point] = (Y, U, V)
    private(set) var samples: [[(y: UInt8, u: UInt8, v: UInt8)]] = []
    private(set) var audioPackets = 0
    private(set) var videoPackets = 0

    init(points: [(x: Int, y: Int)]) { self.points = points }

    func start(video: Encoder, audio: Encoder) throws(PipelineError) {}
    func write(_ packet: Packet, media: MediaType) throws(PipelineError) {
        if media == .audio { audioPackets += 1 } else { videoPackets += 1 }
    }
    func finish(failure: String?) throws(PipelineError) {}
    func composed(_ canvas: Frame, tick: Int64) throws(PipelineError) {
        samples.append(points.map { canvas.yuv(atX: $0.x, y: $0.y) })
    }
}

/// BT.601 limited-range YUV of the colours used below (what the canvas holds).
enum CanvasColour {
    static func isRed(_ p: (y: UInt8, u: UInt8, v: UInt8)) -> Bool { p.v > 200 && p.u < 120 }
    static func isBlue(_ p: (y: UInt8, u: UInt8, v: UInt8)) -> Bool { p.u > 200 && p.v < 140 }
    static func isGreen(_ p: (y: UInt8, u: UInt8, v: UInt8)) -> Bool { p.u < 80 && p.v < 80 && p.y > 100 }
    static func isBackground(_ p: (y: UInt8, u: UInt8, v: UInt8)) -> Bool { p.y < 40 && abs(Int(p.u) - 128) < 8 && abs(Int(p.v) - 128) < 8 }
}

/// Makes publisher media with the ffmpeg CLI, off the concurrency pool.
func media(colour: String, tone: Int, seconds: Int, bframes: Int = 0) async throws -> RecordedPublisherMedia {
    try await onThread { try RecordedPublisherMedia.make(colour: colour, tone: tone, seconds: seconds, bframes: bframes) }
}

@Suite(.serialized)
struct LiveCompositionTests {
    let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/LiveTest"

    /// Runs the composition on its own thread (never on the concurrency pool, see onThread).
    func run(publishers: [SimulatedPublisher], seconds: Int64, latency: Int64 = 200_000, minimumLatency: Int64? = nil,
             initialLatency: Int64? = nil,
             points: [(x: Int, y: Int)], audio: AudioCapture? = nil, alwaysLate: Bool = false,
             delivery: DeliveryRecord? = nil,
             observe: @escaping @Sendable (SessionEvent) -> Void = { _ in }) async throws
        -> (CanvasProbe, CompositionResult) {
        let stageArn = self.stageArn
        let points = points.map { Point(x: $0.x, y: $0.y) }
        return try await onThread {
            var pacing = Pacing()
            pacing.alwaysLate = alwaysLate
            return try Self.compose(stageArn: stageArn, publishers: publishers, seconds: seconds,
                                    settings: LiveMediaSettings(latency: latency, minimumLatency: minimumLatency,
                                                                initialLatency: initialLatency),
                                    points: points.map { ($0.x, $0.y) }, extraSinks: audio.map { [$0] } ?? [], pacing: pacing,
                                    delivery: delivery, observe: observe)
        }
    }

    /// How the simulated pacer says the composition keeps up.
    struct Pacing {
        var alwaysLate = false
    }

    /// The participants' delivery counters, read once the composition has run.
    final class DeliveryRecord: @unchecked Sendable {
        var entries: [LiveDelivery] = []
        func of(_ participantId: String) -> LiveDelivery? { entries.first { $0.participantId == participantId } }
    }

    struct Point: Sendable { var x: Int, y: Int }

    static func compose(stageArn: String, publishers: [SimulatedPublisher], seconds: Int64, settings liveSettings: LiveMediaSettings,
                        points: [(x: Int, y: Int)], extraSinks: [any PacketSink] = [], pacing: Pacing = Pacing(),
                        delivery: DeliveryRecord? = nil,
                        observe: @escaping (SessionEvent) -> Void) throws -> (CanvasProbe, CompositionResult) {
        let clock = ManualMediaClock(start: .seconds(100))
        let hub = LiveStageHub(clock: clock, settings: liveSettings)
        var logger = Logger(label: "live-test")
        logger.logLevel = .warning
        let source = LiveStageSource(hub: hub, stageArn: stageArn, logger: logger)
        let probe = CanvasProbe(points: points)
        let video = VideoEncoderSettings(width: 320, height: 180, frameRate: Rational(30, 1), bitrate: 500_000,
                                         keyframeInterval: 60, preset: "ultrafast")
        let settings = CompositionSettings(video: video, layout: GridLayout(configuration: GridConfiguration(gridGap: 0)),
                                           duration: .seconds(seconds))
        let session = try CompositionSession(source: source, settings: settings, sinks: [probe] + extraSinks, logger: logger,
                                             observer: observe)
        let origin = source.startClock()
        var pacer = SimulationPacer(base: source.makePacer(), clock: clock) { now in
            for publisher in publishers { publisher.advance(to: now - origin, hub: hub, stageArn: stageArn) }
        }
        pacer.alwaysLate = pacing.alwaysLate
        let result = try session.run(pacer: &pacer)
        delivery?.entries = source.delivery()
        return (probe, result)
    }

    @Test("a live publisher's colour fills the canvas once its media is due, and its audio is mixed")
    func onePublisher() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 3)
        let publisher = SimulatedPublisher(media: red, id: "red", joinAt: 0)
        let (probe, result) = try await run(publishers: [publisher], seconds: 3, points: [(160, 90)])
        #expect(result.frames == 90)
        // Before the first frame is due (latency 200 ms + 20 ms transit) the canvas is empty.
        #expect(CanvasColour.isBackground(probe.samples[0][0]))
        // From then on the publisher's colour fills it.
        let redFrames = probe.samples.indices.filter { CanvasColour.isRed(probe.samples[$0][0]) }
        #expect(redFrames.first.map { $0 <= 9 } ?? false, "first red frame \(String(describing: redFrames.first))")
        #expect(redFrames.count >= 80)
        #expect(probe.audioPackets > 100)
    }

    @Test("a publisher whose video is announced after its audio (WHIP) shows its first picture at the same frame as one announcing both")
    func videoAnnouncedAfterAudio() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 2)
        var firstRed: [Bool: Int] = [:]
        for late in [false, true] {
            let publisher = SimulatedPublisher(media: red, id: "red", joinAt: 0)
            publisher.announcesVideoLate = late
            let (probe, _) = try await run(publishers: [publisher], seconds: 1, points: [(160, 90)])
            firstRed[late] = probe.samples.indices.first { CanvasColour.isRed(probe.samples[$0][0]) }
        }
        #expect(firstRed[false] != nil && firstRed[true] == firstRed[false], "first red frame: announced together \(String(describing: firstRed[false])), video late \(String(describing: firstRed[true]))")
    }

    @Test("a publisher joining re-flows the tiles on the next frame; one leaving stays until what it sent has played (the latency)")
    func joinAndLeave() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 4)
        let blue = try await media(colour: "blue", tone: 880, seconds: 4)
        let first = SimulatedPublisher(media: red, id: "red", joinAt: 0)
        let second = SimulatedPublisher(media: blue, id: "blue", joinAt: 1_000_000, leaveAt: 2_500_000)
        let log = Mutex<[(Int, Int64)]>([])
        let (probe, _) = try await run(publishers: [first, second], seconds: 4, points: [(80, 90), (240, 90), (160, 90)]) { event in
            if case .publishersChanged(let count, let at) = event { log.withLock { $0.append((count, at.microsecondsValue)) } }
        }
        let changes = log.withLock { $0 }
        // Nobody at the first tick, then one publisher, then two (side by side), then one again.
        #expect(changes.map(\.0) == [0, 1, 2, 1])
        guard changes.count == 4 else { return }
        #expect(abs(changes[2].1 - 1_000_000) <= 34_000)
        // Its last packets (sent at 2.5 s) are due 200 ms later: the tile and voice go then.
        #expect(abs(changes[3].1 - 2_700_000) <= 34_000, "left the composite at \(changes[3].1) µs")
        // At 0.5 s red fills the canvas; at 2 s red is left and blue right; at 3.5 s red again.
        #expect(CanvasColour.isRed(probe.samples[15][2]))
        #expect(CanvasColour.isRed(probe.samples[60][0]) && CanvasColour.isBlue(probe.samples[60][1]))
        #expect(CanvasColour.isRed(probe.samples[105][0]) && CanvasColour.isRed(probe.samples[105][1]))
    }

    @Test("a stalled publisher freezes alone: the tick never waits, and the others keep moving")
    func stalledPublisher() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 4)
        let blue = try await media(colour: "blue", tone: 880, seconds: 4)
        let first = SimulatedPublisher(media: red, id: "red", joinAt: 0)
        first.stall = 1_000_000..<2_000_000
        let second = SimulatedPublisher(media: blue, id: "blue", joinAt: 0)
        let (probe, result) = try await run(publishers: [first, second], seconds: 4, points: [(80, 90), (240, 90)])
        #expect(result.frames == 120)
        #expect(result.laggedFrames == 0)
        // The stalled publisher keeps its last picture (red), the other its own.
        for tick in [45, 60, 75] {
            #expect(CanvasColour.isRed(probe.samples[tick][0]) && CanvasColour.isBlue(probe.samples[tick][1]))
        }
    }

    @Test("a publisher that stops sending video for longer than videoStoppedAfter shows as stopped video")
    func videoStops() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 7)
        let publisher = SimulatedPublisher(media: red, id: "red", joinAt: 0)
        publisher.stall = 1_000_000..<6_000_000
        let (probe, _) = try await run(publishers: [publisher], seconds: 7, points: [(160, 90)])
        // Red until the stall; frozen red for videoStoppedAfter (3 s); then camera-off (not red);
        // red again once media flows.
        #expect(CanvasColour.isRed(probe.samples[30][0]))
        #expect(CanvasColour.isRed(probe.samples[100][0]))
        #expect(!CanvasColour.isRed(probe.samples[150][0]))
        #expect(CanvasColour.isRed(probe.samples[200][0]))
    }

    @Test("B-frames are decoded in presentation order")
    func bFrames() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 3, bframes: 2)
        #expect(red.items.contains { $0.type == .video && $0.pts != $0.dts })
        let publisher = SimulatedPublisher(media: red, id: "red", joinAt: 0)
        let (probe, _) = try await run(publishers: [publisher], seconds: 3, points: [(160, 90)])
        #expect(probe.samples.indices.filter { CanvasColour.isRed(probe.samples[$0][0]) }.count >= 80)
    }
}

/// Publisher shapes and changes: what RTMP publishers do in the wild.
@Suite(.serialized)
struct LivePublisherShapesTests {
    let base = LiveCompositionTests()

    @Test("a publisher that changes resolution and sample rate (new sequence headers) goes on at its new settings")
    func resolutionChange() async throws {
        let small = try await media(colour: "red", tone: 440, seconds: 2)
        let large = try await onThread {
            try RecordedPublisherMedia.make(colour: "blue", tone: 440, seconds: 2, size: "640x360", audioRate: 48_000)
        }
        #expect(small.audio.sampleRate == 44_100 && large.audio.sampleRate == 48_000)
        // One connection: 2 s of 320x240 red, then a new AVC sequence header and 640x360 blue.
        let switched = RecordedPublisherMedia(video: small.video, audio: small.audio, items: small.items)
        let publisher = SimulatedPublisher(media: switched, id: "p", joinAt: 0)
        publisher.continuation = (at: 2_000_000, media: large)
        let capture = AudioCapture()
        let (probe, _) = try await base.run(publishers: [publisher], seconds: 4, points: [(160, 90)], audio: capture)
        #expect(CanvasColour.isRed(probe.samples[45][0]))
        #expect(CanvasColour.isBlue(probe.samples[100][0]))
        // The 440 Hz tone sounds before and after the switch from 44.1 to 48 kHz.
        for (from, to) in [(0.6, 1.8), (2.6, 3.6)] {
            let level = capture.tone(440, from: from, to: to)
            #expect(level > 0.05, "440 Hz between \(from) and \(to) s: \(level)")
        }
    }

    @Test("the composition tells each publisher how large its tile draws it; another consumer of the whole picture asks for the largest")
    func drawnSizeDemand() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 3)
        let blue = try await media(colour: "blue", tone: 880, seconds: 3)
        let first = SimulatedPublisher(media: red, id: "red", joinAt: 0)
        let second = SimulatedPublisher(media: blue, id: "blue", joinAt: 1_000_000)
        second.extraConsumerAt = 2_500_000
        _ = try await base.run(publishers: [first, second], seconds: 3, points: [(160, 90)])
        func demand(_ publisher: SimulatedPublisher, at time: Int64) -> LiveVideoDemand? {
            publisher.demands.last { $0.at <= time }?.demand
        }
        // Before its first picture the composition asks for nothing smaller than the largest.
        #expect(first.demands.first?.demand == .largest && second.demands.first?.demand == .largest)
        // Alone, the 320x240 picture covers the 320x180 canvas (COVER crops its height): all of it.
        #expect(demand(first, at: 800_000) == .atLeast(width: 320, height: 240))
        // Side by side in 160x90 tiles, cropped to their aspect: 160x120 of it is enough.
        #expect(demand(first, at: 2_000_000) == .atLeast(width: 160, height: 120))
        #expect(demand(second, at: 2_000_000) == .atLeast(width: 160, height: 120))
        // A recording of the second publisher wants its whole picture.
        #expect(demand(second, at: 2_900_000) == .largest)
    }

    @Test("a composition behind the clock (repeating its picture every tick) still tells publishers their tiles' sizes")
    func drawnSizeDemandWhileBehind() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 2)
        let blue = try await media(colour: "blue", tone: 880, seconds: 2)
        let first = SimulatedPublisher(media: red, id: "red", joinAt: 0)
        let second = SimulatedPublisher(media: blue, id: "blue", joinAt: 500_000)
        let (_, result) = try await base.run(publishers: [first, second], seconds: 2, points: [(160, 90)], alwaysLate: true)
        #expect(result.laggedFrames == 59, "every tick after the first repeated the picture")
        #expect(first.demands.last { $0.at <= 1_500_000 }?.demand == .atLeast(width: 160, height: 120))
        #expect(second.demands.last { $0.at <= 1_500_000 }?.demand == .atLeast(width: 160, height: 120))
    }

    @Test("an audio-only publisher gets a camera-off tile and is heard; a video-only one is seen")
    func audioOnlyAndVideoOnly() async throws {
        let red = try await media(colour: "red", tone: 440, seconds: 3)
        let blue = try await media(colour: "blue", tone: 880, seconds: 3)
        let audioOnly = SimulatedPublisher(media: red.only(.audio), id: "voice", joinAt: 0)
        let videoOnly = SimulatedPublisher(media: blue.only(.video), id: "picture", joinAt: 0)
        let (probe, result) = try await base.run(publishers: [audioOnly, videoOnly], seconds: 3, points: [(80, 90), (240, 90)])
        #expect(result.frames == 90)
        #expect(!CanvasColour.isRed(probe.samples[60][0]) && CanvasColour.isBlue(probe.samples[60][1]))
        #expect(probe.audioPackets > 100)
    }

    @Test("a publisher above 1080p is shown as audio-only, as IVS renders it")
    func above1080p() async throws {
        let huge = try await onThread { try RecordedPublisherMedia.make(colour: "red", tone: 440, seconds: 2, size: "2560x1440") }
        let publisher = SimulatedPublisher(media: huge, id: "huge", joinAt: 0)
        let (probe, _) = try await base.run(publishers: [publisher], seconds: 2, points: [(160, 90)])
        #expect(!probe.samples.contains { CanvasColour.isRed($0[0]) })
    }
}

extension RecordedPublisherMedia {
    /// The same media with one kind of stream only (the other never announced).
    func only(_ type: MediaType) -> RecordedPublisherMedia {
        RecordedPublisherMedia(video: video, audio: audio, items: items.filter { $0.type == type }, announce: [type])
    }
}

