// From RTMP messages to a live publisher's streams: legacy FLV (AVC, AAC) and Enhanced RTMP
// (HEVC, AV1) built from real encoder output (the ffmpeg CLI), decoded back by the same
// ParticipantSubscriber compositions use; unsupported and malformed input is rejected with
// the model's error code.
import Foundation
@testable import FFmpeg
import IngestServer
import LiveStage
import Logging
import MediaCore
import Pipeline
import Layout
import RTMP
import Testing
import TestSupport

/// Encoded media read back with our demuxer: configuration records and packets.
struct EncodedClip: Sendable {
    var video: [UInt8]
    var audio: [UInt8]
    var packets: [(type: MediaType, data: [UInt8], dtsMs: Int64, ctsMs: Int32, key: Bool)]
    var width: Int
    var height: Int

    static func make(videoCodec: String, extra: [String] = [], container: String = "mp4", seconds: Double = 1,
                     size: String = "320x240") throws -> EncodedClip {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("forwarder-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("clip.\(container)").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=0x0000FF:size=\(size):rate=30",
                             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "\(seconds)",
                             "-c:v", videoCodec] + extra + ["-pix_fmt", "yuv420p", "-c:a", "aac", file]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FFmpegError(kind: .other, operation: "ffmpeg \(videoCodec)", message: "failed") }
        let source = try DemuxerMediaSource(url: file)
        guard let v = source.stream(.video), let a = source.stream(.audio) else { throw FFmpegError(kind: .other, operation: "demux", message: "streams") }
        var clip = EncodedClip(video: v.parameters.extradata, audio: a.parameters.extradata, packets: [], width: v.info.width, height: v.info.height)
        let packet = Packet()
        while case .packet(let type) = try source.read(into: packet) {
            let info = type == .video ? v.info : a.info
            let dts = info.timeBase.rescale(packet.dts, to: MediaTime.milliseconds)
            let pts = info.timeBase.rescale(packet.pts, to: MediaTime.milliseconds)
            clip.packets.append((type, packet.bytes, dts, Int32(pts - dts), packet.isKeyframe))
        }
        return clip
    }
}

/// FLV tag payloads as encoders send them.
enum Tags {
    static func legacyAVCConfig(_ record: [UInt8]) -> [UInt8] { [0x17, 0x00, 0, 0, 0] + record }
    static func legacyAVC(_ data: [UInt8], key: Bool, cts: Int32) -> [UInt8] {
        [key ? 0x17 : 0x27, 0x01] + si24(cts) + data
    }
    static func aacConfig(_ asc: [UInt8]) -> [UInt8] { [0xAF, 0x00] + asc }
    static func aac(_ data: [UInt8]) -> [UInt8] { [0xAF, 0x01] + data }

    /// Enhanced RTMP: IsExHeader | frame type << 4 | packet type, then the FourCC.
    static func exSequenceStart(_ fourCC: String, _ record: [UInt8]) -> [UInt8] {
        [0x80 | 0x10 | 0x00] + Array(fourCC.utf8) + record
    }
    static func exCodedFrames(_ fourCC: String, _ data: [UInt8], key: Bool, cts: Int32?) -> [UInt8] {
        let frameType: UInt8 = key ? 0x10 : 0x20
        if let cts { return [0x80 | frameType | 0x01] + Array(fourCC.utf8) + si24(cts) + data }
        return [0x80 | frameType | 0x03] + Array(fourCC.utf8) + data
    }

    /// E-RTMP v2 multitrack: one track in a message (OBS's form), or many, avc1.
    static func oneTrack(_ track: UInt8, packetType: UInt8, key: Bool, body: [UInt8]) -> [UInt8] {
        [0x80 | (key ? 0x10 : 0x20) | 0x06, 0x00 | packetType] + Array("avc1".utf8) + [track] + body
    }
    static func manyTracks(packetType: UInt8, key: Bool, _ tracks: [(UInt8, [UInt8])]) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | (key ? 0x10 : 0x20) | 0x06, 0x10 | packetType] + Array("avc1".utf8)
        for (track, body) in tracks {
            bytes += [track, UInt8((body.count >> 16) & 0xFF), UInt8((body.count >> 8) & 0xFF), UInt8(body.count & 0xFF)] + body
        }
        return bytes
    }

    static func si24(_ value: Int32) -> [UInt8] {
        let bits = UInt32(bitPattern: value)
        return [UInt8((bits >> 16) & 0xFF), UInt8((bits >> 8) & 0xFF), UInt8(bits & 0xFF)]
    }
}

@Suite(.serialized)
struct RTMPMediaForwarderTests {
    let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/Forwarder"

    /// Forwards `messages` into a live stage, then decodes what a composition would see and
    /// returns the picture (size, centre luma/chroma) and how many audio samples arrived.
    func decode(_ messages: [RTMPMediaMessage]) throws -> (outcomes: [ForwardOutcome], size: PixelSize?, centre: (y: UInt8, u: UInt8, v: UInt8)?, audio: Int64) {
        let clock = ManualMediaClock(start: .seconds(10))
        let hub = LiveStageHub(clock: clock, settings: LiveMediaSettings(latency: 0))
        var logger = Logger(label: "forwarder")
        logger.logLevel = .warning
        let source = LiveStageSource(hub: hub, stageArn: stageArn, logger: logger)
        let origin = source.startClock()
        let publisher = hub.join(stageArn: stageArn, identity: LiveParticipantIdentity(participantId: "p", userId: "p", attributes: [:]))
        _ = source.participants(at: .zero)
        let subscriber = source.subscriber(for: "p")
        var forwarder = RTMPMediaForwarder()
        var outcomes: [ForwardOutcome] = []
        for message in messages {
            clock.advance(to: .microseconds(max(clock.now().microsecondsValue, origin + message.timestamp * 1000)))
            outcomes.append(forwarder.forward(message, to: publisher))
        }
        publisher.leave()
        subscriber?.advanceAudio(to: 48_000 * 3)
        subscriber?.advanceVideo(to: 3_000_000)
        let size = subscriber?.currentVideoSize
        let centre = size.map { subscriber!.current.yuv(atX: $0.width / 2, y: $0.height / 2) }
        return (outcomes, size, centre, subscriber?.audio.end ?? 0)
    }

    func messages(_ clip: EncodedClip, videoConfig: [UInt8], video: (Int) -> [UInt8]) -> [RTMPMediaMessage] {
        var list = [RTMPMediaMessage(kind: .video, timestamp: 0, payload: videoConfig),
                    RTMPMediaMessage(kind: .audio, timestamp: 0, payload: Tags.aacConfig(clip.audio))]
        for (index, packet) in clip.packets.enumerated() {
            let payload = packet.type == .video ? video(index) : Tags.aac(packet.data)
            list.append(RTMPMediaMessage(kind: packet.type == .video ? .video : .audio, timestamp: packet.dtsMs, payload: payload))
        }
        return list
    }

    func isBlue(_ p: (y: UInt8, u: UInt8, v: UInt8)?) -> Bool { p.map { $0.u > 200 && $0.v < 140 } ?? false }

    @Test("legacy FLV: AVC with B-frames (composition times) and AAC")
    func legacyAVC() async throws {
        let clip = try await onThread { try EncodedClip.make(videoCodec: "libx264", extra: ["-bf", "2", "-preset", "ultrafast"]) }
        #expect(clip.packets.contains { $0.ctsMs != 0 })
        let list = messages(clip, videoConfig: Tags.legacyAVCConfig(clip.video)) { index in
            let p = clip.packets[index]
            return Tags.legacyAVC(p.data, key: p.key, cts: p.ctsMs)
        }
        let result = try decode(list)
        #expect(result.outcomes.allSatisfy { $0 == .forwarded })
        #expect(result.size == PixelSize(width: 320, height: 240))
        #expect(isBlue(result.centre))
        #expect(result.audio > 40_000)
    }

    @Test("Enhanced RTMP: HEVC (hvc1) with CodedFrames and CodedFramesX")
    func enhancedHEVC() async throws {
        let clip = try await onThread { try EncodedClip.make(videoCodec: "libx265", extra: ["-preset", "ultrafast", "-x265-params", "log-level=error:bframes=0"]) }
        let list = messages(clip, videoConfig: Tags.exSequenceStart("hvc1", clip.video)) { index in
            let p = clip.packets[index]
            // Alternate the two coded-frame packet types, as encoders may.
            return Tags.exCodedFrames("hvc1", p.data, key: p.key, cts: index % 2 == 0 ? p.ctsMs : nil)
        }
        let result = try decode(list)
        #expect(result.outcomes.allSatisfy { $0 == .forwarded }, "\(Set(result.outcomes.map { "\($0)" }))")
        #expect(result.size == PixelSize(width: 320, height: 240))
        #expect(isBlue(result.centre))
    }

    @Test("Enhanced RTMP: AV1 (av01)")
    func enhancedAV1() async throws {
        let clip = try await onThread {
            try EncodedClip.make(videoCodec: "libaom-av1", extra: ["-cpu-used", "8", "-usage", "realtime", "-g", "30"], seconds: 0.5)
        }
        let list = messages(clip, videoConfig: Tags.exSequenceStart("av01", clip.video)) { index in
            Tags.exCodedFrames("av01", clip.packets[index].data, key: clip.packets[index].key, cts: nil)
        }
        let result = try decode(list)
        #expect(result.outcomes.allSatisfy { $0 == .forwarded })
        #expect(result.size == PixelSize(width: 320, height: 240))
        #expect(isBlue(result.centre))
    }

    @Test("E-RTMP multitrack: the smallest track that covers the tiles, the largest for a recording or when none does")
    func multitrackTrackRule() {
        let tracks: [UInt8: CodecConfiguration] = [
            0: CodecConfiguration(codec: .h264, width: 1280, height: 720), 1: CodecConfiguration(codec: .h264, width: 640, height: 360),
            2: CodecConfiguration(codec: .h264, width: 320, height: 180)]
        let cases: [(LiveVideoDemand, Bool, UInt8?)] = [
            (.atLeast(width: 316, height: 178), true, 2), (.atLeast(width: 320, height: 180), true, 2),
            (.atLeast(width: 321, height: 100), true, 1), (.atLeast(width: 630, height: 400), true, 0),
            (.atLeast(width: 4000, height: 4000), true, 0), (.largest, true, 0), (.none, true, 2),
            (.atLeast(width: 100, height: 100), false, 0), (.none, false, 0)]
        for (demand, fits, expected) in cases {
            #expect(RTMPMediaForwarder.track(for: demand, among: tracks, fitsTiles: fits) == expected, "\(demand) fits \(fits)")
        }
        #expect(RTMPMediaForwarder.track(for: .largest, among: [:], fitsTiles: true) == nil)
    }

    @Test("E-RTMP multitrack: one rendition reaches the stage, switched at the new track's keyframe when the tiles change")
    func multitrackFollowsTheTiles() async throws {
        let (large, small) = try await onThread {
            (try EncodedClip.make(videoCodec: "libx264", extra: ["-g", "10", "-bf", "0", "-preset", "ultrafast"]),
             try EncodedClip.make(videoCodec: "libx264", extra: ["-g", "10", "-bf", "0", "-preset", "ultrafast"], size: "160x120"))
        }
        let hub = LiveStageHub(clock: ManualMediaClock())
        let subscription = hub.subscribe(stageArn: stageArn)
        let publisher = hub.join(stageArn: stageArn, identity: LiveParticipantIdentity(participantId: "p", userId: "p", attributes: [:]))
        let queue = subscription.snapshot().entries[0].queue
        queue.videoDemand = .atLeast(width: 150, height: 100)
        var forwarder = RTMPMediaForwarder()
        #expect(forwarder.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: Tags.oneTrack(0, packetType: 0, key: true, body: large.video)),
                                  to: publisher) == .forwarded)
        #expect(forwarder.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: Tags.oneTrack(1, packetType: 0, key: true, body: small.video)),
                                  to: publisher) == .forwarded)
        let largeFrames = large.packets.filter { $0.type == .video }, smallFrames = small.packets.filter { $0.type == .video }
        var shown: [(index: Int, track: UInt8)] = []
        for index in 0..<min(largeFrames.count, smallFrames.count) {
            if index == 15 { queue.videoDemand = .atLeast(width: 300, height: 200) }
            let a = largeFrames[index], b = smallFrames[index]
            // Half as one message of both tracks, half as a message per track.
            let payloads: [[UInt8]] = index % 2 == 0
                ? [Tags.manyTracks(packetType: 1, key: a.key, [(0, Tags.si24(a.ctsMs) + a.data), (1, Tags.si24(b.ctsMs) + b.data)])]
                : [Tags.oneTrack(0, packetType: 1, key: a.key, body: Tags.si24(a.ctsMs) + a.data),
                   Tags.oneTrack(1, packetType: 3, key: b.key, body: b.data)]
            for payload in payloads {
                #expect(forwarder.forward(RTMPMediaMessage(kind: .video, timestamp: a.dtsMs, payload: payload), to: publisher).rejection == nil)
                if let change = forwarder.takeShownTrack() { shown.append((index, change.track)) }
            }
        }
        var sizes: [Int] = [], frames: [[UInt8]] = []
        while case .packet(let packet) = queue.pop() {
            switch packet.content {
            case .configuration(let setup): sizes.append(setup.width)
            case .data(let bytes): frames.append(bytes)
            }
        }
        // Track 0 was set up first, but the small track is wanted: it starts, from its first
        // keyframe; the large one again at its keyframe after the tiles grew.
        #expect(shown.map(\.track) == [1, 0] && shown.map(\.index) == [0, 20], "switched at keyframes: \(shown)")
        #expect(sizes == [320, 160, 320])
        #expect(frames == smallFrames[0..<20].map(\.data) + largeFrames[20...].map(\.data), "one track at a time, whole GOPs")
        // The shown (large) track stops while the small one goes on: after a second without
        // it, the small track is shown from its next keyframe, whatever the tiles want.
        let lastTime = largeFrames.last!.dtsMs
        for index in 0..<(2 * smallFrames.count) {
            let b = smallFrames[index % smallFrames.count]
            let time = lastTime + 33 * Int64(index + 1)
            _ = forwarder.forward(RTMPMediaMessage(kind: .video, timestamp: time,
                                                   payload: Tags.oneTrack(1, packetType: 3, key: b.key, body: b.data)), to: publisher)
            if let change = forwarder.takeShownTrack() { shown.append((index + 1000, change.track)) }
        }
        #expect(shown.last?.track == 1 && (shown.last?.index ?? 0) >= 1000 + 30 && (shown.last?.index ?? .max) <= 1000 + 40,
                "the small track after a second, at its next keyframe: \(shown)")
        // Without the rule: the largest, always.
        var largest = RTMPMediaForwarder()
        largest.fitsTiles = false
        let other = hub.join(stageArn: stageArn, identity: LiveParticipantIdentity(participantId: "q", userId: "q", attributes: [:]))
        _ = largest.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: Tags.oneTrack(1, packetType: 0, key: true, body: small.video)), to: other)
        _ = largest.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: Tags.oneTrack(0, packetType: 0, key: true, body: large.video)), to: other)
        _ = largest.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: Tags.oneTrack(0, packetType: 1, key: true,
                                                                                                body: Tags.si24(0) + largeFrames[0].data)), to: other)
        #expect(largest.shownTrack == 0)
        subscription.cancel()
    }

    @Test("E-RTMP multitrack: a ManyTracks message decodes as the largest track for a consumer that wants it; a ninth track is refused")
    func multitrackDecodesAndIsBounded() async throws {
        let clip = try await onThread { try EncodedClip.make(videoCodec: "libx264", extra: ["-bf", "0", "-preset", "ultrafast"]) }
        var list = [RTMPMediaMessage(kind: .video, timestamp: 0, payload: Tags.manyTracks(packetType: 0, key: true, [(3, clip.video)])),
                    RTMPMediaMessage(kind: .audio, timestamp: 0, payload: Tags.aacConfig(clip.audio))]
        for packet in clip.packets {
            list.append(packet.type == .video
                ? RTMPMediaMessage(kind: .video, timestamp: packet.dtsMs,
                                   payload: Tags.manyTracks(packetType: 1, key: packet.key, [(3, Tags.si24(packet.ctsMs) + packet.data)]))
                : RTMPMediaMessage(kind: .audio, timestamp: packet.dtsMs, payload: Tags.aac(packet.data)))
        }
        let result = try decode(list)
        #expect(result.outcomes.allSatisfy { $0 == .forwarded })
        #expect(result.size == PixelSize(width: 320, height: 240))
        #expect(isBlue(result.centre))

        let hub = LiveStageHub(clock: ManualMediaClock())
        let publisher = hub.join(stageArn: stageArn, identity: LiveParticipantIdentity(participantId: "p", userId: "p", attributes: [:]))
        var forwarder = RTMPMediaForwarder()
        let outcomes = (0..<9).map { track in
            forwarder.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: Tags.oneTrack(UInt8(track), packetType: 0, key: true,
                                                                                                  body: clip.video)), to: publisher)
        }
        #expect(outcomes.prefix(8).allSatisfy { $0 == .forwarded })
        #expect(outcomes[8].rejection == .invalidInput)
    }

    @Test("codecs we cannot decode and malformed tags are rejected with the model's error codes")
    func rejections() throws {
        let clock = ManualMediaClock()
        let hub = LiveStageHub(clock: clock)
        let publisher = hub.join(stageArn: stageArn, identity: LiveParticipantIdentity(participantId: "p", userId: "p", attributes: [:]))
        var forwarder = RTMPMediaForwarder()
        // Sorenson H.263 (FLV codec 2) and Speex (sound format 11).
        #expect(forwarder.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: [0x12, 0, 0, 0]), to: publisher)
                .rejection == .invalidVideoCodec)
        #expect(forwarder.forward(RTMPMediaMessage(kind: .audio, timestamp: 0, payload: [0xB6, 0, 0]), to: publisher)
                .rejection == .invalidAudioCodec)
        // An AVC header cut short.
        #expect(forwarder.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: [0x17]), to: publisher)
                .rejection == .invalidInput)
        // Frames before any sequence header are dropped, not fatal.
        #expect(forwarder.forward(RTMPMediaMessage(kind: .video, timestamp: 0, payload: Tags.legacyAVC([0, 0, 0, 1, 0x65], key: true, cts: 0)),
                                  to: publisher) == .ignored)
        #expect(forwarder.framesBeforeSetup == 1)
    }

    @Test("timestamps that keep jumping are rejected after ten jumps; no timestamp can make the forwarder trap")
    func hostileTimestamps() throws {
        let hub = LiveStageHub(clock: ManualMediaClock())
        let publisher = hub.join(stageArn: stageArn, identity: LiveParticipantIdentity(participantId: "p", userId: "p", attributes: [:]))
        var forwarder = RTMPMediaForwarder()
        let asc: [UInt8] = [0x11, 0x90]  // AAC-LC 48 kHz stereo
        #expect(forwarder.forward(RTMPMediaMessage(kind: .audio, timestamp: 0, payload: Tags.aacConfig(asc)), to: publisher) == .forwarded)
        var session = RTMPTimestampUnwrapper()
        var outcomes: [ForwardOutcome] = []
        for index in 0..<100 {
            let discontinuities = session.discontinuities
            let timestamp = session.unwrap(index % 2 == 0 ? 0 : 0x8000_0000)
            outcomes.append(forwarder.forward(RTMPMediaMessage(kind: .audio, timestamp: timestamp, payload: Tags.aac([0x21, 0x10]),
                                                               isDiscontinuity: session.discontinuities != discontinuities), to: publisher))
        }
        let rejected = try #require(outcomes.firstIndex { $0.rejection != nil })
        #expect(rejected == RTMPMediaForwarder.maxTimestampDiscontinuities + 1)
        #expect(outcomes[rejected].rejection == .invalidInput)
        // Extreme unwrapped values (from any other path) are refused, never multiplied into a trap.
        for extreme in [Int64.max, Int64.min, Int64.max / 999] {
            var fresh = RTMPMediaForwarder()
            _ = fresh.forward(RTMPMediaMessage(kind: .audio, timestamp: 0, payload: Tags.aacConfig(asc)), to: publisher)
            #expect(fresh.forward(RTMPMediaMessage(kind: .audio, timestamp: extreme, payload: Tags.aac([0x21, 0x10])), to: publisher)
                        .rejection == .invalidInput)
        }
    }

    @Test("message rate: a burst over 5,000 in one second, or over 1,000 a second for 5 s, disconnects; an encoder's rate does not")
    func messageRate() {
        var encoder = MessageRateLimit()
        for tick in 0..<600 { #expect(encoder.add(3, now: Int64(tick) * 16_666) == nil) }  // 60 fps video + audio, 10 s
        var burst = MessageRateLimit()
        #expect(burst.add(4_000, now: 0) == nil)
        #expect(burst.add(1_001, now: 500_000)?.contains("within one second") == true)
        var sustained = MessageRateLimit()
        var reasons: [String] = []
        for second in 0..<7 {
            for part in 0..<10 {
                if let reason = sustained.add(150, now: Int64(second) * 1_000_000 + Int64(part) * 100_000) { reasons.append(reason) }
            }
        }
        #expect(reasons.first?.contains("averaged over 5 s") == true, "\(reasons)")
    }

    @Test("connection caps: in all and per address; a closed connection gives its place back")
    func connectionLimiter() {
        let limiter = ConnectionLimiter(limits: ConnectionLimits(total: 5, perAddress: 3))
        #expect((0..<3).allSatisfy { _ in limiter.acquire("10.0.0.1") })
        #expect(!limiter.acquire("10.0.0.1"), "a fourth from one address")
        #expect(limiter.acquire("10.0.0.2") && limiter.acquire("10.0.0.3"))
        #expect(!limiter.acquire("10.0.0.4"), "a sixth in all")
        limiter.release("10.0.0.1")
        #expect(limiter.acquire("10.0.0.4"))
        limiter.release("unknown")
        #expect(limiter.counts.open == 5 && limiter.counts.refused == 2)
    }

    @Test("bitrate window: any clock value and any byte count are taken without a trap")
    func bitrateWindowExtremes() {
        for times in [[Int64.min, Int64.max], [-5_000_000, -1, 0, 4_000_000, 9_000_000], [Int64.max - 1, Int64.max],
                      [0, Int64.max], [Int64.min, -1_000_000, Int64.max]] {
            var window = BitrateWindow(seconds: 5)
            for now in times { _ = window.add(Int.max, now: now) }
        }
        // A negative clock still averages: seconds -7...-3 (a slot per second, never a negative index).
        var negative = BitrateWindow(seconds: 5)
        var rate: Int64?
        for second in -7...(-2) { rate = negative.add(1_000, now: Int64(second) * 1_000_000) }
        #expect(rate == 8_000, "\(String(describing: rate))")
    }

    @Test("bitrate window: averaged over whole seconds once a window has passed")
    func bitrateWindow() {
        var window = BitrateWindow(seconds: 5)
        var rate: Int64?
        // 1 MB/s for 6 seconds, one 100 kB message every 100 ms.
        for tick in 0..<60 { rate = window.add(100_000, now: Int64(tick) * 100_000) }
        #expect(rate == Int64(8_000_000), "\(String(describing: rate))")
        // A single 2 MB keyframe in an otherwise quiet window does not trip a 8.5 Mbit/s limit.
        var quiet = BitrateWindow(seconds: 5)
        var last: Int64?
        for second in 0..<6 { last = quiet.add(second == 3 ? 2_000_000 : 10_000, now: Int64(second) * 1_000_000) }
        #expect((last ?? .max) < 8_500_000)
        // Nothing is reported before a whole window has passed.
        var fresh = BitrateWindow(seconds: 5)
        #expect(fresh.add(10_000_000, now: 0) == nil)
    }
}

extension ForwardOutcome {
    var rejection: IngestPublishError? {
        if case .reject(let error, _) = self { return error }
        return nil
    }
}
