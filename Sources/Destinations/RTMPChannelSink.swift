// The channel destination: the composition pushed as FLV over RTMP/RTMPS to a channel's
// ingest endpoint + stream key (IVS: rtmps://<ingest>:443/app/ + key).
//
//   media thread ── write() ──► ChannelPacketQueue (bounded, drops to keyframe) ──► sender thread
//                                                                                  │ Muxer("flv", rtmp://)
//                                                        ChannelConnectionStateMachine ◄┘ connect / send / back off
//
// The media thread only ever enqueues. The sender thread owns the connection: every blocking
// call (connect + handshake + publish, each write, the close) runs under an `IOInterrupt`
// deadline, so a receiver that stops reading turns into "write stalled" within
// `stallTimeout` instead of blocking. Outages go through the reconnect state machine.
//
// Timestamps: every connection keeps the composition's own timestamps (the first connection
// starts at 0 with the AAC priming just before it, moved by the muxer so that none is
// negative; a reconnect resumes on a keyframe at the composition time it was taken), so the
// channel sees one monotonic timeline across reconnects. Audio more than a priming before
// the resume keyframe is skipped.
//
// Timing (defaults; all in ChannelDestinationConfiguration / ChannelReconnectPolicy):
//   stall noticed   ≤ (socket send buffer + receiver window) / bitrate + stallTimeout (5 s)
//   connect bounded by connectTimeout (5 s): TCP (+TLS), handshake, publish
//   RECONNECTING → FAILED ≤ Σ n=1…maxRetries (n × baseInterval + connectTimeout)
//                         = 30 s + 25 s with 5 retries, 2 s base
//   finish()        ≤ stallTimeout to flush what is queued and close
// A stream the server refuses during publish ("stream rejected") fails at once: retrying
// the same key cannot help.

import Foundation
public import Lifecycle
public import FFmpeg
public import MediaCore
public import Pipeline
public import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

public struct ChannelDestinationConfiguration: Sendable {
    /// `rtmp://host[:port]/app` or `rtmps://…` — the channel's ingest endpoint.
    public var ingestURL: String
    /// Secret: never logged, never part of an error message.
    public var streamKey: String
    public var reconnect: ChannelReconnectPolicy
    /// A connection that takes no data for this long is considered stalled.
    public var stallTimeout: MediaTime
    /// Bound on connecting: TCP (+TLS), RTMP handshake and publish.
    public var connectTimeout: MediaTime
    /// Packets buffered between the media thread and the network (≈3 s at 30 fps + AAC).
    public var queueCapacity: Int
    /// Kernel send buffer for the socket (nil: system default). Smaller means less data in
    /// flight when the receiver stalls, so the stall is noticed sooner.
    public var socketSendBufferBytes: Int?
    /// rtmps: check the server's certificate chain and host name (on by default).
    public var verifyCertificate: Bool
    /// rtmps: PEM file of the certificate authorities to trust instead of the system's
    /// (a private ingest endpoint).
    public var caFile: String?

    public init(ingestURL: String, streamKey: String, reconnect: ChannelReconnectPolicy = .default,
                stallTimeout: MediaTime = .seconds(5), connectTimeout: MediaTime = .seconds(5),
                queueCapacity: Int = 256, socketSendBufferBytes: Int? = 256 * 1024,
                verifyCertificate: Bool = true, caFile: String? = nil) {
        self.verifyCertificate = verifyCertificate
        self.caFile = caFile
        self.ingestURL = ingestURL
        self.streamKey = streamKey
        self.reconnect = reconnect
        self.stallTimeout = stallTimeout
        self.connectTimeout = connectTimeout
        self.queueCapacity = queueCapacity
        self.socketSendBufferBytes = socketSendBufferBytes
    }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case invalid(String)
        public var description: String {
            switch self {
            case .invalid(let message): return message
            }
        }
    }

    /// Splits `rtmp://host:port/app/streamkey` (the form OBS and ffmpeg take) into the
    /// ingest URL and the stream key (the last path component).
    public static func parse(publishURL: String, reconnect: ChannelReconnectPolicy = .default) throws(ParseError) -> ChannelDestinationConfiguration {
        guard let components = URLComponents(string: publishURL), let scheme = components.scheme?.lowercased(),
              scheme == "rtmp" || scheme == "rtmps", let host = components.host, !host.isEmpty
        else { throw .invalid("'\(redact(publishURL))' is not rtmp://host[:port]/app/streamkey (or rtmps://)") }
        var path = components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        guard let slash = path.lastIndex(of: "/"), path.index(after: slash) < path.endIndex, slash != path.startIndex else {
            throw .invalid("'\(redact(publishURL))' has no app and stream key (rtmp://host[:port]/app/streamkey)")
        }
        let key = String(path[path.index(after: slash)...])
        let app = String(path[..<slash])
        let port = components.port.map { ":\($0)" } ?? ""
        return ChannelDestinationConfiguration(ingestURL: "\(scheme)://\(host)\(port)\(app)", streamKey: key, reconnect: reconnect)
    }

    /// The URL with its last path component (the stream key) masked, for messages.
    static func redact(_ publishURL: String) -> String {
        guard let scheme = publishURL.range(of: "://"), let slash = publishURL.lastIndex(of: "/"),
              slash >= scheme.upperBound else { return publishURL }
        return String(publishURL[...slash]) + "****"
    }

    var host: String? { URLComponents(string: ingestURL)?.host }
    var app: String {
        guard let components = URLComponents(string: ingestURL) else { return "" }
        return String(components.percentEncodedPath.drop { $0 == "/" })
    }
}

public final class RTMPChannelSink: PacketSink {
    public let name: String
    private let configuration: ChannelDestinationConfiguration
    private let clock: any MediaClock
    private let logger: Logger
    private let onEvent: @Sendable (ChannelEvent) -> Void
    private let queue: ChannelPacketQueue
    private let status: ChannelStatus
    private var sender: ChannelSender?
    private var finished = false

    /// `onEvent` is called on the destination's sender thread. `clock` times the reconnect
    /// backoff (a `ManualMediaClock` runs it in virtual time); socket deadlines use real time.
    public init(name: String, configuration: ChannelDestinationConfiguration, clock: any MediaClock = SystemMediaClock(),
                logger: Logger, onEvent: @escaping @Sendable (ChannelEvent) -> Void = { _ in }) {
        self.name = name
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.onEvent = onEvent
        queue = ChannelPacketQueue(capacity: configuration.queueCapacity)
        status = ChannelStatus()
    }

    /// The destination's state as of now.
    public var state: DestinationState { status.state }
    /// Why the destination FAILED, once it has.
    public var failure: ChannelFailure? { status.failure }
    /// Packets that never reached the channel: queue overflow and resynchronisation to a
    /// keyframe after an outage.
    public var droppedPackets: Int64 { queue.droppedPackets }
    /// Connections tried so far (the first one included).
    public var connectionAttempts: Int { status.attempts }
    /// Packet payload bytes handed to the connection so far (the output-bitrate metric).
    public var bytesSent: Int64 { status.bytesSent }

    public func start(video: Encoder, audio: Encoder) throws(PipelineError) {
        let parameters: (StreamParameters, StreamParameters)
        do {
            parameters = (try StreamParameters(of: video), try StreamParameters(of: audio))
        } catch {
            throw .output("\(name): \(error)")
        }
        let sender = ChannelSender(name: name, configuration: configuration, video: parameters.0, audio: parameters.1,
                                   queue: queue, status: status, clock: clock, logger: logger, onEvent: onEvent)
        self.sender = sender
        sender.start()
    }

    /// The longest time a `write` took (ns): it only enqueues, so it never waits for the
    /// network; tests check that the composition was never held up by the channel.
    public private(set) var longestWriteNanoseconds: Int64 = 0

    /// Enqueues only; throws once the destination has FAILED so the session drops it.
    public func write(_ packet: Packet, media: MediaType) throws(PipelineError) {
        let started = DispatchTime.now().uptimeNanoseconds
        defer { longestWriteNanoseconds = max(longestWriteNanoseconds, Int64(DispatchTime.now().uptimeNanoseconds - started)) }
        if let failure = status.failure { throw .output("\(name): \(failure.reason.rawValue)") }
        let dropped = queue.push(packet, media: media)
        if dropped > 0 {
            logger.warning("channel is behind; dropped queued packets, resuming at the next keyframe",
                           metadata: ["destination.dropped": "\(dropped)", "destination.dropped_total": "\(queue.droppedPackets)"])
        }
    }

    /// Sends what is queued (bounded by the stall timeout), closes the stream and waits for
    /// the sender thread. Throws if the destination had FAILED.
    public func finish(failure: String?) throws(PipelineError) {
        guard !finished else { return }
        finished = true
        queue.close()
        sender?.stopConnecting()
        sender?.join()
        if let failure = status.failure { throw .output("\(name): \(failure.reason.rawValue)") }
    }
}

/// State shared between the sender thread (writer) and everyone else (readers).
final class ChannelStatus: Sendable {
    private struct Snapshot {
        var state: DestinationState = .starting
        var failure: ChannelFailure?
        var attempts = 0
        var bytesSent: Int64 = 0
    }
    private let snapshot = Mutex(Snapshot())

    var state: DestinationState { snapshot.withLock { $0.state } }
    var failure: ChannelFailure? { snapshot.withLock { $0.failure } }
    var attempts: Int { snapshot.withLock { $0.attempts } }
    var bytesSent: Int64 { snapshot.withLock { $0.bytesSent } }

    func countBytes(_ count: Int) { snapshot.withLock { $0.bytesSent += Int64(count) } }

    func update(state: DestinationState, failure: ChannelFailure?) {
        snapshot.withLock {
            $0.state = state
            $0.failure = failure
        }
    }

    func countAttempt() { snapshot.withLock { $0.attempts += 1 } }
}

/// The sender thread: owns the connection (a `Muxer`) and the reconnect state machine.
final class ChannelSender: @unchecked Sendable {
    // Set at init, read-only afterwards.
    private let name: String
    private let configuration: ChannelDestinationConfiguration
    private let video: StreamParameters
    private let audio: StreamParameters
    private let queue: ChannelPacketQueue
    private let status: ChannelStatus
    private let clock: any MediaClock
    private let logger: Logger
    private let onEvent: @Sendable (ChannelEvent) -> Void
    private let done = DispatchSemaphore(value: 0)
    /// The interrupt of a connection attempt in progress, so finish() can cut it short.
    private let connecting = Mutex<IOInterrupt?>(nil)

    // Sender thread only.
    private var machine: ChannelConnectionStateMachine
    private var muxer: Muxer?
    private var interrupt = IOInterrupt()
    private var needsKeyframe = true
    private var resumeMicroseconds: Int64 = .min
    private var drainDeadlineArmed = false

    init(name: String, configuration: ChannelDestinationConfiguration, video: StreamParameters, audio: StreamParameters,
         queue: ChannelPacketQueue, status: ChannelStatus, clock: any MediaClock, logger: Logger,
         onEvent: @escaping @Sendable (ChannelEvent) -> Void) {
        self.name = name
        self.configuration = configuration
        self.video = video
        self.audio = audio
        self.queue = queue
        self.status = status
        self.clock = clock
        self.logger = logger
        self.onEvent = onEvent
        machine = ChannelConnectionStateMachine(policy: configuration.reconnect, streamKey: configuration.streamKey)
    }

    func start() {
        let thread = Thread { [self] in
            run()
            done.signal()
        }
        thread.name = "channel-sender"
        thread.start()
    }

    func join() {
        done.wait()
        done.signal()
    }

    /// The composition is over: an attempt in progress gives up now.
    func stopConnecting() {
        connecting.withLock { $0?.abort() }
    }

    private func run() {
        var action = machine.on(.start(now: clock.now()))
        while true {
            announce(action.announce)
            switch action.step {
            case .connect(let streamKey):
                action = connect(streamKey: streamKey)
            case .connectAfter(let deadline, let streamKey):
                action = waitUntil(deadline) ? machine.on(.stop) : connect(streamKey: streamKey)
            case .send:
                action = send()
            case .close:
                close(graceful: false)
                queue.discardAll()
                return
            }
        }
    }

    /// Waits on the injected clock; true if the composition ended meanwhile.
    private func waitUntil(_ deadline: MediaTime) -> Bool {
        while true {
            let remaining = deadline.microsecondsValue - clock.now().microsecondsValue
            if remaining <= 0 { return queue.isClosed }
            // Short slices so a virtual clock advanced by a test is noticed quickly.
            if queue.waitForClose(upTo: min(Double(remaining) / 1_000_000, 0.05)) { return true }
        }
    }

    private func connect(streamKey: String) -> ChannelConnectionStateMachine.Action {
        if queue.isClosed { return machine.on(.stop) }
        status.countAttempt()
        let attemptInterrupt = IOInterrupt()
        connecting.withLock { $0 = attemptInterrupt }
        defer { connecting.withLock { $0 = nil } }
        do throws(ChannelFailure) {
            muxer = try open(streamKey: streamKey, interrupt: attemptInterrupt)
            interrupt = attemptInterrupt
            needsKeyframe = true
            logger.info("channel connected")
            return ChannelConnectionStateMachine.Action(step: .send)
        } catch {
            if queue.isClosed && attemptInterrupt.isAborted { return machine.on(.stop) }
            logger.warning("channel connection failed", metadata: ["destination.reason": "\(error)"])
            return machine.on(.failure(error, now: clock.now()))
        }
    }

    private func open(streamKey: String, interrupt: IOInterrupt) throws(ChannelFailure) -> Muxer {
        if let host = configuration.host, !ChannelSender.resolves(host) {
            throw ChannelFailure(.hostUnreachable, detail: "cannot resolve \(host)")
        }
        var options = ["rtmp_playpath": streamKey, "rtmp_app": configuration.app, "tcp_nodelay": "1"]
        if let bytes = configuration.socketSendBufferBytes { options["send_buffer_size"] = "\(bytes)" }
        if configuration.ingestURL.lowercased().hasPrefix("rtmps://") {
            // FFmpeg's TLS layer does not verify unless told to.
            options["tls_verify"] = configuration.verifyCertificate ? "1" : "0"
            if let caFile = configuration.caFile { options["ca_file"] = caFile }
        }
        interrupt.arm(timeout: configuration.connectTimeout)
        defer { interrupt.disarm() }
        do {
            let muxer = try Muxer(format: "flv", url: configuration.ingestURL, interleaved: true,
                                  protocolOptions: options, interrupt: interrupt, displayURL: configuration.ingestURL)
            try muxer.addStream(video)
            try muxer.addStream(audio)
            // Live: no seeking back to patch duration/filesize at the end.
            try muxer.writeHeader(options: ["flvflags": "no_duration_filesize"])
            return muxer
        } catch {
            interrupt.abort()
            throw ChannelSender.connectFailure(error)
        }
    }

    /// Writes queued packets until the connection breaks or the queue is drained and closed.
    private func send() -> ChannelConnectionStateMachine.Action {
        guard let muxer else { return machine.on(.failure(ChannelFailure(.connectionLost), now: clock.now())) }
        // A connection starts on a keyframe: the newest queued one, else the next to come
        // (at most a keyframe interval away; an idle RTMP connection waits that long fine).
        while needsKeyframe {
            if let resume = queue.skipToNewestKeyframe(time: microseconds(of:)) {
                needsKeyframe = false
                resumeMicroseconds = resume.resumeAt
                if resume.skipped > 0 {
                    logger.info("channel resumes at a keyframe", metadata: ["destination.skipped": "\(resume.skipped)"])
                }
            } else if queue.waitForClose(upTo: 0.05) {
                close(graceful: true)
                return machine.on(.stop)
            }
        }
        while true {
            let item: ChannelPacketQueue.Item
            switch queue.next(waitingUpTo: 0.1) {
            case .timedOut: continue
            case .drained:
                do throws(FFmpegError) {
                    armDrainDeadline()
                    try muxer.finish()
                } catch {
                    logger.warning("channel trailer failed", metadata: ["destination.reason": "\(error)"])
                }
                close(graceful: true)
                return machine.on(.stop)
            case .item(let next): item = next
            }
            defer { queue.recycle(item.packet) }
            if !isResumable(item) { continue }
            if queue.isClosed { armDrainDeadline() } else { interrupt.arm(timeout: configuration.stallTimeout) }
            let size = item.packet.size
            do {
                try muxer.write(item.packet, stream: item.media == .video ? 0 : 1)
                status.countBytes(size)
            } catch {
                let failure = ChannelSender.writeFailure(error, stallTimeout: configuration.stallTimeout)
                logger.warning("channel connection broke", metadata: ["destination.reason": "\(failure)"])
                close(graceful: false)
                return machine.on(.failure(failure, now: clock.now()))
            }
            if machine.destinationState != .active {
                return machine.on(.dataAccepted)
            }
        }
    }

    /// After the resume keyframe, audio older than it is skipped (it may be queued later:
    /// the video encoder's lookahead delays video behind audio).
    private func isResumable(_ item: ChannelPacketQueue.Item) -> Bool {
        item.media == .video || microseconds(of: item) >= resumeMicroseconds
    }

    /// A packet's time for resuming on a keyframe, in µs. Audio's is its pts plus the
    /// encoder's priming: an AAC decoder decodes each frame with the one before it, and the
    /// encoder's first packet (all priming, stamped a priming before 0) must go out with the
    /// first keyframe for the first frame's sound to decode whole.
    private func microseconds(of item: ChannelPacketQueue.Item) -> Int64 {
        item.media == .video
            ? video.timeBase.rescale(item.packet.pts, to: MediaTime.microseconds)
            : audio.timeBase.rescale(item.packet.pts + audio.primingTicks, to: MediaTime.microseconds)
    }

    /// Once the composition has ended, the remaining packets and the trailer share one
    /// stall timeout, so finish() is bounded even on a slow link.
    private func armDrainDeadline() {
        guard !drainDeadlineArmed else { return }
        drainDeadlineArmed = true
        interrupt.arm(timeout: configuration.stallTimeout)
    }

    /// Drops the connection. Not graceful: every blocking call returns at once.
    private func close(graceful: Bool) {
        if !graceful { interrupt.abort() } else if !drainDeadlineArmed { interrupt.arm(timeout: configuration.stallTimeout) }
        muxer = nil
    }

    private func announce(_ event: ChannelEvent?) {
        status.update(state: machine.destinationState, failure: machine.failure)
        guard let event else { return }
        switch event {
        case .active: logger.info("channel destination active")
        case .reconnecting(let failure): logger.warning("channel destination reconnecting", metadata: ["destination.reason": "\(failure)"])
        case .failed(let failure): logger.error("channel destination failed", metadata: ["destination.reason": "\(failure)"])
        case .ended: logger.info("channel destination ended", metadata: ["destination.dropped_total": "\(queue.droppedPackets)"])
        }
        onEvent(event)
    }

    static func connectFailure(_ error: FFmpegError) -> ChannelFailure {
        let detail = error.description
        if let tls = error.tlsFailure, tls.lowercased().contains("certificate") {
            return ChannelFailure(.certificateVerifyFailed, detail: detail)
        }
        switch error.networkCondition {
        case .connectionRefused: return ChannelFailure(.connectionRefused, detail: detail)
        case .hostUnreachable: return ChannelFailure(.hostUnreachable, detail: detail)
        case .interrupted, .timedOut: return ChannelFailure(.connectionTimedOut, detail: detail)
        // Connected, then the server hung up or answered with an error during publish.
        case .closedByPeer, .otherIO: return ChannelFailure(.streamRejected, detail: detail)
        case nil: return ChannelFailure(error.kind == .unsupported ? .invalidDestination : .streamRejected, detail: detail)
        }
    }

    static func writeFailure(_ error: FFmpegError, stallTimeout: MediaTime) -> ChannelFailure {
        switch error.networkCondition {
        case .interrupted, .timedOut:
            return ChannelFailure(.writeStalled, detail: "no progress for \(stallTimeout.millisecondsValue) ms")
        default:
            return ChannelFailure(.connectionLost, detail: error.description)
        }
    }

    static func resolves(_ host: String) -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, nil, &hints, &result)
        if let result { freeaddrinfo(result) }
        return status == 0
    }
}

