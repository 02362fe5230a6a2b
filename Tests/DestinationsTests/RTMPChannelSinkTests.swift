// The channel destination against real receivers on loopback (nginx-rtmp, a stalling proxy,
// a publish hook) and a real composition of fixtures/two-people. Serialized: the real-time
// cases measure wall-clock behaviour and share two cores with everything else.

import Destinations
import FFmpeg
import Foundation
import HLS
import Layout
import Logging
import MediaCore
import Pipeline
import Stages
import Storage
import Synchronization
import TestSupport
import Testing
import Composition

/// Channel events with the wall-clock time they arrived, and a way to wait for one.
final class ChannelEventLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var entries: [(event: ChannelEvent, at: Date)] = []

    func record(_ event: ChannelEvent) {
        condition.lock()
        entries.append((event, Date()))
        condition.broadcast()
        condition.unlock()
    }

    var events: [ChannelEvent] {
        condition.lock()
        defer { condition.unlock() }
        return entries.map(\.event)
    }

    /// Waits until `count` events match `predicate`; returns the time of the last match.
    @discardableResult
    func wait(for count: Int = 1, timeout: TimeInterval, _ predicate: (ChannelEvent) -> Bool) -> Date? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            let matches = entries.filter { predicate($0.event) }
            if matches.count >= count { return matches[count - 1].at }
            if !condition.wait(until: deadline) { return nil }
        }
    }
}

extension ChannelEvent {
    var isActive: Bool { self == .active }
    var isReconnecting: Bool { if case .reconnecting = self { true } else { false } }
    var failure: ChannelFailure? { if case .failed(let failure) = self { failure } else { nil } }
    var isEnded: Bool { self == .ended }
    var reconnectingReason: ChannelFailure.Reason? { if case .reconnecting(let failure) = self { failure.reason } else { nil } }
}

/// ffprobe `key=value` lines for the streams and format of `path`, keyed "video.width",
/// "audio.codec_name", "format.duration" ...
func probe(_ path: String) throws -> [String: String] {
    let probed = try runTool("ffprobe", ["-v", "error", "-show_entries",
        "stream=codec_type,codec_name,width,height,avg_frame_rate,r_frame_rate,sample_rate,channels,start_time:format=duration,start_time",
        "-of", "flat=s=.", path])
    #expect(probed.status == 0, "ffprobe failed on \(path)")
    var fields: [String: String] = [:]
    var typeOfStream: [String: String] = [:]
    let lines = probed.text.split(separator: "\n").map(String.init)
    for line in lines {
        let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { continue }
        let value = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        if parts[0].hasSuffix(".codec_type") { typeOfStream[String(parts[0].dropLast(".codec_type".count))] = value }
        if parts[0].hasPrefix("format.") { fields[parts[0]] = value }
    }
    for line in lines {
        let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let dot = parts[0].lastIndex(of: ".") else { continue }
        let stream = String(parts[0][..<dot])
        guard let type = typeOfStream[stream] else { continue }
        let key = "\(type).\(parts[0][parts[0].index(after: dot)...])"
        if fields[key] == nil { fields[key] = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
    }
    return fields
}

/// Decodes the video frame at `seconds` as RGB24 and returns the pixel at each point.
func pixels(of path: String, at seconds: Double, width: Int, height: Int, points: [(Int, Int)]) throws -> [(UInt8, UInt8, UInt8)] {
    let decoded = try runTool("ffmpeg", ["-v", "error", "-ss", String(seconds), "-i", path, "-frames:v", "1",
                                         "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
    #expect(decoded.status == 0)
    let bytes = [UInt8](decoded.output)
    guard bytes.count == width * height * 3 else {
        Issue.record("decoded \(bytes.count) bytes, expected \(width * height * 3)")
        return []
    }
    return points.map { x, y in
        let index = (y * width + x) * 3
        return (bytes[index], bytes[index + 1], bytes[index + 2])
    }
}

func isRed(_ pixel: (UInt8, UInt8, UInt8)) -> Bool { pixel.0 > 180 && pixel.1 < 80 && pixel.2 < 80 }
func isGreen(_ pixel: (UInt8, UInt8, UInt8)) -> Bool { pixel.1 > 150 && pixel.0 < 80 && pixel.2 < 80 }

func testLogger() -> Logger {
    var logger = Logger(label: "destinations-tests")
    logger.logLevel = .error
    return logger
}

/// A composition of fixtures/two-people to a local recording and/or a channel.
struct ComposedRun {
    let runner: CompositionRunner
    let storageRoot: URL
    let events = ChannelEventLog()

    static let spec = EncoderSpec(width: 320, height: 180, frameRate: Rational(30, 1), bitrate: 500_000)

    init(channel: ChannelDestinationConfiguration?, record: Bool, duration: MediaTime? = nil) throws {
        storageRoot = FileManager.default.temporaryDirectory.appendingPathComponent("rtmp-tests-\(UUID().uuidString)")
        let stage = try RecordedStage.load(from: repositoryRoot.appendingPathComponent("fixtures/two-people").path)
        let source = try RecordedStageSource(stage: stage, logger: testLogger())
        let plan = CompositionPlan(
            compositionId: "composition1", encoder: ComposedRun.spec, layout: .defaultGrid,
            recording: record ? RecordingDestinationPlan(destinationId: "recording1", storage: LocalDirectoryStorage(root: storageRoot),
                                                         encoderConfigurationId: "encoder1") : nil,
            channel: channel.map { ChannelDestinationPlan(destinationId: "channel1", configuration: $0) })
        let events = self.events
        runner = try CompositionRunner(plan: plan, source: source, duration: duration, logger: testLogger(),
                                       channelEvents: { events.record($0) })
    }

    /// Runs in real time (or as fast as possible) on a thread of its own, never on the Swift
    /// concurrency pool (two threads here: a composition blocking one for seconds starves the
    /// async tests running beside it); returns the result and the wall time.
    func run(realtime: Bool) async throws -> (CompositionResult, TimeInterval) {
        nonisolated(unsafe) let composition = self
        let (result, elapsed) = try await onThread { try composition.runBlocking(realtime: realtime) }
        return (result, elapsed)
    }

    private func runBlocking(realtime: Bool) throws -> (CompositionResult, TimeInterval) {
        let started = Date()
        let result: CompositionResult
        if realtime {
            var pacer = RealtimePacer()
            result = try runner.session.run(pacer: &pacer)
        } else {
            var pacer = AsFastAsPossiblePacer()
            result = try runner.session.run(pacer: &pacer)
        }
        return (result, Date().timeIntervalSince(started))
    }

    /// What matters while a channel fails: the composition never waited for it. A channel write
    /// only enqueues; blocking on the socket would take the stall or connect timeout (1 s) or a
    /// reconnect backoff. 300 ms is far above scheduling noise on a loaded 2-core machine
    /// (measured: 3.8 and 4.7 ms idle, about 20 ms with the rest of the suite running) and far
    /// below a blocked send. The wall time is only a guard against a hang: with the rest of the
    /// suite in parallel on 2 cores (debug build) a 6 s composition measured up to 10.5 s, since
    /// every tick still encodes, so the bound is 4× the composition.
    func expectNeverWaitedForTheChannel(_ result: CompositionResult, elapsed: TimeInterval, seconds: Double) {
        let longestWrite = runner.channelSink?.longestWriteNanoseconds ?? .max
        #expect(longestWrite < 300_000_000, "a channel write took \(longestWrite / 1_000_000) ms")
        // Lagged frames come from CPU starvation (other tests share the 2 cores), not from the
        // channel: they are reported, not asserted.
        print("channel run: \(String(format: "%.1f", elapsed)) s for \(seconds) s of composition, "
              + "\(result.laggedFrames) lagged frames, longest channel write \(longestWrite / 1000) µs")
        #expect(elapsed < seconds * 4, "composition of \(seconds) s took \(elapsed) s")
    }

    var mediaPlaylist: String { storageRoot.appendingPathComponent(runner.recordingSink!.mediaPlaylistKey).path }

    func recordingMetadataExists(_ status: RecordingStatus) -> Bool {
        FileManager.default.fileExists(atPath: storageRoot.appendingPathComponent(runner.recordingLayout!.metadataKey(for: status)).path)
    }

    /// The HLS recording is complete and playable, about `seconds` long.
    func expectCompleteRecording(seconds: Double) throws {
        #expect(recordingMetadataExists(.recordingEnded))
        let playlist = try String(contentsOfFile: mediaPlaylist, encoding: .utf8)
        #expect(playlist.contains("#EXT-X-PLAYLIST-TYPE:VOD"))
        #expect(playlist.contains("#EXT-X-ENDLIST"))
        let fields = try probe(mediaPlaylist)
        #expect(fields["video.codec_name"] == "h264")
        #expect(fields["audio.codec_name"] == "aac")
        let duration = Double(fields["format.duration"] ?? "") ?? 0
        #expect(abs(duration - seconds) < 0.3, "recording lasts \(duration) s, expected ≈ \(seconds) s")
    }
}

func channel(port: Int, key: String, maxRetries: Int = 5, base: MediaTime = .milliseconds(250),
             stall: MediaTime = .seconds(1), sendBuffer: Int? = nil) -> ChannelDestinationConfiguration {
    ChannelDestinationConfiguration(
        ingestURL: "rtmp://127.0.0.1:\(port)/live", streamKey: key,
        reconnect: ChannelReconnectPolicy(maxRetries: maxRetries, baseInterval: base),
        stallTimeout: stall, connectTimeout: stall, socketSendBufferBytes: sendBuffer)
}

@Suite(.serialized) struct RTMPChannelSinkTests {
    init() { FFmpegLogging.setLevel(.quiet) }

    @Test func pushesTheCompositionToNginx() async throws {
        let hook = try PublishHookServer(rejectedKey: "rejected")
        let nginx = try NginxRTMPServer(publishHookPort: hook.port)
        // As fast as possible: a queue big enough for the whole run, so that a busy machine
        // (the sender thread starved while the composition races ahead) cannot overflow it.
        var configuration = channel(port: nginx.port, key: "stage1")
        configuration.queueCapacity = 2_048
        let composed = try ComposedRun(channel: configuration, record: true)
        let (result, _) = try await composed.run(realtime: false)
        #expect(result.failedSinks.isEmpty)
        #expect(composed.events.events == [.active, .ended])
        #expect(composed.runner.channelSink?.state == .stopped)
        #expect(composed.runner.channelSink?.droppedPackets == 0)  // the AAC priming packet included
        nginx.stop()

        let flv = nginx.recording(streamKey: "stage1").path
        let fields = try probe(flv)
        #expect(fields["video.codec_name"] == "h264")
        #expect(fields["video.width"] == "320")
        #expect(fields["video.height"] == "180")
        #expect(fields["video.r_frame_rate"] == "30/1")
        #expect(fields["audio.codec_name"] == "aac")
        #expect(fields["audio.sample_rate"] == "48000")
        let duration = Double(fields["format.duration"] ?? "") ?? 0
        #expect(abs(duration - 6) < 0.2, "channel stream lasts \(duration) s")
        // p0 (red) on the left, p1 (green, publishing 0.5–4 s) on the right.
        let samples = try pixels(of: flv, at: 2, width: 320, height: 180, points: [(80, 90), (240, 90)])
        #expect(samples.count == 2 && isRed(samples[0]) && isGreen(samples[1]), "tile colours \(samples)")
        try composed.expectCompleteRecording(seconds: 6)
    }

    @Test func reconnectsWhenNginxComesBack() async throws {
        let nginx = try NginxRTMPServer()
        // With IVS stream takeover: the key carries ?priority=N, one more per connection.
        var configuration = channel(port: nginx.port, key: "stage2")
        configuration.reconnect.streamTakeover = true
        let composed = try ComposedRun(channel: configuration, record: false)
        let events = composed.events
        let outage = Thread { [nginx] in
            // Generous waits: on a loaded machine the first connection can take seconds (if
            // they expire, the events below are wrong and the test fails).
            guard events.wait(timeout: 20, \.isActive) != nil else { return }
            Thread.sleep(forTimeInterval: 1.5)
            nginx.stop()
            guard events.wait(timeout: 10, \.isReconnecting) != nil else { return }
            Thread.sleep(forTimeInterval: 0.6)
            try? nginx.start()
        }
        outage.start()
        let (result, elapsed) = try await composed.run(realtime: true)
        #expect(result.failedSinks.isEmpty)
        composed.expectNeverWaitedForTheChannel(result, elapsed: elapsed, seconds: 6)
        let seen = events.events
        #expect(seen.count == 4 && seen.first == .active && seen[1].isReconnecting && seen[2] == .active && seen.last == .ended,
                "events: \(seen)")
        let dropped = composed.runner.channelSink?.droppedPackets ?? 0
        #expect(dropped > 0, "the outage's packets were dropped, not queued without bound")
        let attempts = composed.runner.channelSink?.connectionAttempts ?? 0
        #expect(attempts >= 2)
        nginx.stop()
        let log = nginx.errorLog
        #expect(log.contains("publish: name='stage2' args='priority=1'"))
        #expect(log.contains("publish: name='stage2' args='priority=\(attempts)'"), "the accepted reconnect used priority \(attempts)")

        // The new nginx recorded the resumed stream: it starts on a keyframe with the
        // composition's own timestamps (continuing, not restarting at 0: nginx keeps them),
        // moved like every connection's by the AAC priming (1024 samples: 21 ms in FLV's
        // milliseconds) so that none is negative, and runs to the end of the composition.
        let flv = nginx.recording(streamKey: "stage2").path
        let fields = try probe(flv)
        #expect(fields["video.codec_name"] == "h264")
        #expect(fields["audio.codec_name"] == "aac")
        let start = Double(fields["video.start_time"] ?? "") ?? 0
        #expect(start >= 1.5 && start <= 4, "resumed at \(start) s: \(fields)")
        #expect(abs(start.remainder(dividingBy: 2) - 0.021) < 0.001, "resumed on a 2 s keyframe (+ 21 ms), at \(start) s")
        let end = Double(fields["format.duration"] ?? "") ?? 0  // FLV: the last timestamp
        #expect(abs(end - 6) < 0.2, "resumed stream ends at \(end) s")
        let keyframes = try runTool("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=key_frame",
                                                   "-read_intervals", "%+#1", "-of", "csv=p=0", flv])
        #expect(keyframes.text.hasPrefix("1"), "first resumed frame is a keyframe")
    }

    /// RTMPS through a TLS terminator (nginx's stream module) in front of nginx-rtmp, the
    /// certificate checked against the configured CA file; the stream is read back.
    @Test func pushesOverRTMPSThroughATLSFront() async throws {
        let nginx = try NginxRTMPServer(tlsFront: true)
        var configuration = channel(port: nginx.port, key: "secure1")
        configuration.ingestURL = "rtmps://127.0.0.1:\(nginx.tlsPort!)/live"
        configuration.caFile = nginx.certificate
        configuration.queueCapacity = 2_048
        let composed = try ComposedRun(channel: configuration, record: false)
        let (result, _) = try await composed.run(realtime: false)
        #expect(result.failedSinks.isEmpty, "\(result.failedSinks)")
        #expect(composed.events.events == [.active, .ended], "events: \(composed.events.events)")
        nginx.stop()
        let fields = try probe(nginx.recording(streamKey: "secure1").path)
        #expect(fields["video.codec_name"] == "h264" && fields["audio.codec_name"] == "aac", "\(fields)")
        let duration = Double(fields["format.duration"] ?? "") ?? 0
        #expect(abs(duration - 6) < 0.2, "rtmps stream lasts \(duration) s")
    }

    /// Verification is on by default: a certificate no trusted CA signed fails at once (it is
    /// not retried: retrying cannot fix it) with the reason, and nothing reaches nginx.
    @Test func rtmpsWithAnUntrustedCertificateFailsWithItsReason() async throws {
        let nginx = try NginxRTMPServer(tlsFront: true)
        var configuration = channel(port: nginx.port, key: "secure2")
        configuration.ingestURL = "rtmps://127.0.0.1:\(nginx.tlsPort!)/live"
        let composed = try ComposedRun(channel: configuration, record: true)
        let (result, _) = try await composed.run(realtime: false)
        let seen = composed.events.events
        #expect(seen.count == 1 && seen[0].failure?.reason == .certificateVerifyFailed, "events: \(seen)")
        #expect(seen.first?.failure?.detail.contains("certificate") == true, "events: \(seen)")
        #expect(composed.runner.channelSink?.connectionAttempts == 1)
        #expect(result.failedSinks["channel destination channel1"]?.contains("certificate verify failed") == true,
                "\(result.failedSinks)")
        #expect(!FileManager.default.fileExists(atPath: nginx.recording(streamKey: "secure2").path))
        try composed.expectCompleteRecording(seconds: 6)
        // Verification off (an explicit choice) connects to the same endpoint.
        configuration.verifyCertificate = false
        configuration.queueCapacity = 2_048
        let unchecked = try ComposedRun(channel: configuration, record: false)
        let (uncheckedResult, _) = try await unchecked.run(realtime: false)
        #expect(uncheckedResult.failedSinks.isEmpty, "\(uncheckedResult.failedSinks)")
    }

    @Test func failsWhenNginxStaysDownWhileTheRecordingCompletes() async throws {
        let nginx = try NginxRTMPServer()
        let composed = try ComposedRun(channel: channel(port: nginx.port, key: "stage3", base: .milliseconds(200)), record: true)
        let events = composed.events
        let outage = Thread { [nginx] in
            guard events.wait(timeout: 20, \.isActive) != nil else { return }
            Thread.sleep(forTimeInterval: 1.0)
            nginx.stop()
        }
        outage.start()
        let (result, elapsed) = try await composed.run(realtime: true)
        let seen = events.events
        #expect(seen.count == 3 && seen.first == .active && seen[1].isReconnecting, "events: \(seen)")
        #expect(seen.last?.failure?.reason == .connectionRefused, "events: \(seen)")
        #expect(composed.runner.channelSink?.state == .failed)
        // 1 + 5 attempts; the recording is untouched and the composition kept real time.
        #expect(composed.runner.channelSink?.connectionAttempts == 6)
        #expect(result.failedSinks["channel destination channel1"] == "output: channel destination channel1: connection refused")
        #expect(result.failedSinks["s3 destination recording1"] == nil)
        composed.expectNeverWaitedForTheChannel(result, elapsed: elapsed, seconds: 6)
        try composed.expectCompleteRecording(seconds: 6)
    }

    /// Stall bound: data in flight (≈ socket buffers) + stall timeout to RECONNECTING, then
    /// Σ(n × base + connect timeout) over the retries to FAILED. Here ≈ 1 s + 1 s, then
    /// (0.25 + 1) + (0.5 + 1) + (0.75 + 1) = 4.5 s.
    @Test func stalledReceiverFailsWithinABoundAndTheRecordingKeepsRealTime() async throws {
        let nginx = try NginxRTMPServer()
        let proxy = try StallingProxy(upstreamPort: nginx.port)
        defer { proxy.stop() }
        let composed = try ComposedRun(channel: channel(port: proxy.port, key: "stage4", maxRetries: 3, sendBuffer: 16_384),
                                       record: true, duration: .seconds(10))
        let events = composed.events
        let stalledAt = Mutex<Date?>(nil)
        let stall = Thread { [proxy] in
            guard events.wait(timeout: 20, \.isActive) != nil else { return }
            Thread.sleep(forTimeInterval: 1.0)
            stalledAt.withLock { $0 = Date() }
            proxy.stallReading()
        }
        stall.start()
        let (result, elapsed) = try await composed.run(realtime: true)
        let seen = events.events
        #expect(seen.count == 3 && seen.first == .active, "events: \(seen)")
        #expect(seen.count > 1 && seen[1] == .reconnecting(ChannelFailure(.writeStalled, detail: "no progress for 1000 ms")), "events: \(seen)")
        #expect(seen.last?.failure?.reason == .connectionTimedOut, "events: \(seen)")
        if let stalled = stalledAt.withLock({ $0 }),
           let reconnecting = events.wait(timeout: 0, \.isReconnecting),
           let failed = events.wait(timeout: 0, { $0.failure != nil }) {
            print(String(format: "stall noticed after %.2f s, FAILED %.2f s later", reconnecting.timeIntervalSince(stalled),
                         failed.timeIntervalSince(reconnecting)))
            #expect(reconnecting.timeIntervalSince(stalled) < 3.5, "stall noticed after \(reconnecting.timeIntervalSince(stalled)) s")
            #expect(failed.timeIntervalSince(reconnecting) < 6, "failed \(failed.timeIntervalSince(reconnecting)) s after reconnecting")
        }
        composed.expectNeverWaitedForTheChannel(result, elapsed: elapsed, seconds: 10)
        try composed.expectCompleteRecording(seconds: 10)
        _ = nginx
    }

    // The channel sink alone (no composition): connection failures and their reasons.
    // (One serialized suite: these tests block their thread, and the recording's uploads
    // need a free cooperative thread.)

    final class Encoders {
        let video: Encoder
        let audio: Encoder
        init() throws {
            video = try Encoder(video: VideoEncoderSettings(width: 320, height: 180, frameRate: Rational(30, 1), bitrate: 500_000, keyframeInterval: 60))
            audio = try Encoder(audio: AudioEncoderSettings())
        }
    }

    func startSink(_ configuration: ChannelDestinationConfiguration, clock: any MediaClock = SystemMediaClock()) throws -> (RTMPChannelSink, ChannelEventLog, Encoders) {
        let events = ChannelEventLog()
        let sink = RTMPChannelSink(name: "channel", configuration: configuration, clock: clock, logger: testLogger(),
                                   onEvent: { events.record($0) })
        let encoders = try Encoders()
        try sink.start(video: encoders.video, audio: encoders.audio)
        return (sink, events, encoders)
    }

    @Test func closedPortFailsWithConnectionRefusedAfterRetries() throws {
        let port = try freeLoopbackPort()
        let (sink, events, _) = try startSink(channel(port: port, key: "k", maxRetries: 2, base: .milliseconds(100)))
        let failed = events.wait(timeout: 5) { $0.failure != nil }
        #expect(failed != nil)
        #expect(events.events.first?.reconnectingReason == .connectionRefused, "events: \(events.events)")
        #expect(events.events.last?.failure?.reason == .connectionRefused)
        #expect(sink.state == .failed)
        #expect(sink.connectionAttempts == 3)
        #expect(throws: PipelineError.output("channel: connection refused")) { try sink.finish(failure: nil) }
    }

    @Test func rejectedStreamKeyFailsAtOnce() throws {
        let hook = try PublishHookServer(rejectedKey: "rejected")
        let nginx = try NginxRTMPServer(publishHookPort: hook.port)
        let (sink, events, _) = try startSink(channel(port: nginx.port, key: "rejected"))
        #expect(events.wait(timeout: 5) { $0.failure != nil } != nil)
        #expect(events.events.count == 1 && events.events.first?.failure?.reason == .streamRejected, "events: \(events.events)")
        #expect(sink.connectionAttempts == 1)
        #expect(throws: PipelineError.output("channel: stream rejected")) { try sink.finish(failure: nil) }
    }

    /// Backoff runs on the injected clock: nothing is retried until virtual time reaches
    /// attempt n's deadline (n × base after the previous failure).
    @Test func backoffFollowsTheInjectedClock() throws {
        let port = try freeLoopbackPort()
        let clock = ManualMediaClock()
        let (sink, events, _) = try startSink(channel(port: port, key: "k", maxRetries: 2, base: .seconds(10)), clock: clock)
        #expect(events.wait(timeout: 2, \.isReconnecting) != nil)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(sink.connectionAttempts == 1)
        clock.advance(by: .milliseconds(9_900))
        Thread.sleep(forTimeInterval: 0.3)
        #expect(sink.connectionAttempts == 1, "retried before 1 × base")
        clock.advance(by: .milliseconds(100))
        #expect(waitUntil(timeout: 2) { sink.connectionAttempts == 2 })
        clock.advance(by: .milliseconds(19_900))
        Thread.sleep(forTimeInterval: 0.3)
        #expect(sink.connectionAttempts == 2, "retried before 2 × base")
        clock.advance(by: .milliseconds(100))
        #expect(events.wait(timeout: 2) { $0.failure != nil } != nil)
        #expect(sink.connectionAttempts == 3)
        #expect(sink.state == .failed)
        _ = try? sink.finish(failure: nil)
    }

    @Test func finishWhileReconnectingEndsPromptly() throws {
        let port = try freeLoopbackPort()
        let (sink, events, _) = try startSink(channel(port: port, key: "k", base: .seconds(30)))
        #expect(events.wait(timeout: 2, \.isReconnecting) != nil)
        let started = Date()
        try sink.finish(failure: nil)
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(events.events.last == .ended)
        #expect(sink.state == .stopped)
    }
}

func waitUntil(timeout: TimeInterval, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return condition()
}
