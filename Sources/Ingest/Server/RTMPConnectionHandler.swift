// One publisher's RTMP(S) connection on a NIO event loop: bytes into the pure
// RTMPServerSession, its actions out (replies, the admission question, media to the live
// stage). Nothing here blocks or decodes; media is parsed and handed to the publisher's
// bounded queues. Every way a connection can end — unpublish, close, reset, garbage, a
// slow or silent peer, a rule broken — closes it with one logged reason, and the stage side
// hears `ended` exactly once.

import Crypto
import Foundation
public import LiveStage
public import MediaCore
public import Logging
public import NIOCore
public import RTMP
import Synchronization

/// Limits and timings of one connection.
public struct RTMPConnectionPolicy: Sendable {
    public var limits: RTMPSessionLimits
    /// Handshake + connect + publish must be done by then (slowloris).
    public var publishDeadline: TimeAmount
    /// Bits per second averaged over 5 s above which a publisher is disconnected.
    public var maxBitrate: Int64
    /// Messages per second (in any one second, and averaged over 5 s) above which it is.
    public var messageRate: MessageRateLimit
    /// The codecs the compositions can decode (the daemon passes what its FFmpeg has).
    public var decodableCodecs: Set<CompressedCodec>
    /// E-RTMP multitrack: the smallest track that covers the consumers' tiles (false: the largest).
    public var multitrackFitsTiles = true

    /// An ingest server takes messages up to 8 MiB: a 1080p keyframe at the maximum bitrate
    /// is well under that.
    public static let defaultLimits = RTMPSessionLimits(chunk: RTMPChunkLimits(maxMessageLength: 8 << 20))

    public init(limits: RTMPSessionLimits = RTMPConnectionPolicy.defaultLimits, publishDeadline: TimeAmount = .seconds(10),
                maxBitrate: Int64 = 8_500_000, messageRate: MessageRateLimit = MessageRateLimit(),
                decodableCodecs: Set<CompressedCodec> = Set(CompressedCodec.allCases)) {
        self.messageRate = messageRate
        self.decodableCodecs = decodableCodecs
        self.limits = limits
        self.publishDeadline = publishDeadline
        self.maxBitrate = maxBitrate
    }
}

final class RTMPConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Phase {
        case negotiating
        /// Waiting for the stage side's decision on a publish.
        case admitting
        case publishing(any IngestPublication)
        case closed
    }

    private var session: RTMPServerSession
    private var phase = Phase.negotiating
    private var forwarder: RTMPMediaForwarder
    private var bitrate = BitrateWindow()
    private var messageRate: MessageRateLimit
    private var messagesCounted: Int64 = 0
    private let transport: IngestTransport
    private let admission: any IngestAdmission
    private let policy: RTMPConnectionPolicy
    private let clock: any MediaClockReading
    private var logger: Logger
    private var deadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    private let registry: ConnectionRegistry

    init(transport: IngestTransport, admission: any IngestAdmission, policy: RTMPConnectionPolicy,
         clock: any MediaClockReading, registry: ConnectionRegistry, logger: Logger) {
        self.transport = transport
        self.admission = admission
        self.policy = policy
        messageRate = policy.messageRate
        forwarder = RTMPMediaForwarder(decodable: policy.decodableCodecs)
        forwarder.fitsTiles = policy.multitrackFitsTiles
        self.clock = clock
        self.registry = registry
        self.logger = logger
        session = RTMPServerSession(limits: policy.limits, hmacSHA256: RTMPConnectionHandler.hmacSHA256,
                                    random: RTMPConnectionHandler.fillRandom)
    }

    static let hmacSHA256: @Sendable ([UInt8], [UInt8]) -> [UInt8] = { key, data in
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    static let fillRandom: @Sendable (inout [UInt8]) -> Void = { bytes in
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = generator.next() }
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        logger[metadataKey: "ingest.remote"] = "\(context.remoteAddress.map { "\($0)" } ?? "?")"
        logger[metadataKey: "ingest.transport"] = "\(transport.rawValue)"
    }

    /// The context refers back to this handler: keeping it past removal would leak both,
    /// once per connection (the session fuzzer found it).
    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        registry.add(context.channel)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: policy.publishDeadline) {
            let handler = handler.value
            guard case .negotiating = handler.phase else { return }
            handler.close(reason: "did not start publishing within \(handler.policy.publishDeadline.nanoseconds / 1_000_000_000) s")
        }
        logger.debug("ingest connection opened")
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isClosed else { return }
        var buffer = unwrapInboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        perform(session.receive(bytes))
        let received = session.messagesReceived &- messagesCounted
        messagesCounted = session.messagesReceived
        if let excess = messageRate.add(received, now: clock.nowMicroseconds()) {
            if case .publishing(let publication) = phase { publication.failed(.invalidInput, reason: excess) }
            close(reason: "message flood: \(excess)")
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        registry.remove(context.channel)
        finish(reason: "connection closed by the publisher")
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            close(reason: "no data received for the idle timeout (connection stalled or half-open)")
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        close(reason: "connection error: \(error)")
    }

    // MARK: Session actions

    private var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    private func perform(_ actions: [RTMPSessionAction]) {
        for action in actions {
            guard !isClosed else { return }
            switch action {
            case .send(let bytes):
                write(bytes)
            case .publishRequested(let request):
                requestAdmission(request)
            case .media(let message):
                forward(message)
            case .metadata:
                break
            case .unpublished:
                close(reason: "the publisher unpublished")
            case .close(let error):
                close(reason: "protocol error: \(error)")
            case .ignored(let what):
                logger.trace("ignored from the publisher", metadata: ["rtmp.ignored": "\(what)"])
            }
        }
    }

    private func write(_ bytes: [UInt8]) {
        guard let context, !bytes.isEmpty else { return }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    private func requestAdmission(_ request: RTMPPublishRequest) {
        guard case .negotiating = phase, let context else { return }
        phase = .admitting
        let key = String(request.streamKey.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        let eventLoop = context.eventLoop
        let channel = context.channel
        let handler = NIOLoopBound(self, eventLoop: eventLoop)
        admission.admit(IngestAdmissionRequest(streamKey: key, transport: transport,
                                               remoteAddress: context.remoteAddress.map { "\($0)" } ?? "?"),
                        disconnect: { reason in
                            channel.eventLoop.execute { handler.value.close(reason: "disconnected: \(reason)") }
                        },
                        decide: { decision in
                            eventLoop.execute { handler.value.decided(decision) }
                        })
    }

    private func decided(_ decision: IngestAdmissionDecision) {
        switch decision {
        case .accepted(let publication):
            guard case .admitting = phase else {
                // The connection went away while the stage side was deciding.
                publication.ended(reason: "connection closed before publishing started")
                return
            }
            phase = .publishing(publication)
            deadline?.cancel()
            logger[metadataKey: "participant.id"] = "\(publication.publisher.identity.participantId)"
            logger.info("publisher admitted", metadata: ["stage.arn": "\(publication.stageArn)"])
            perform(session.acceptPublish())
        case .refused(let error, let reason):
            guard case .admitting = phase else { return }
            // The stage side logged the refusal with its context (and paces a flood of them):
            // one line per refusal, not three.
            logger.debug("publish refused", metadata: ["error.code": "\(error.rawValue)", "reason": "\(reason)"])
            perform(session.rejectPublish(code: "NetStream.Publish.BadName", description: "\(error.rawValue): \(reason)"))
            close(reason: "publish refused: \(error.rawValue)", alreadyLogged: true)
        }
    }

    private func forward(_ message: RTMPMediaMessage) {
        guard case .publishing(let publication) = phase else { return }
        if let rate = bitrate.add(message.payload.count, now: clock.nowMicroseconds()), rate > policy.maxBitrate {
            publication.failed(.bitrateExceeded, reason: "\(rate) bit/s averaged over 5 s exceeds \(policy.maxBitrate)")
            close(reason: "bitrate \(rate) bit/s exceeds the maximum \(policy.maxBitrate)")
            return
        }
        switch forwarder.forward(message, to: publication.publisher) {
        case .forwarded, .ignored:
            if let shown = forwarder.takeShownTrack() {
                logger.info("multitrack track shown", metadata: ["track": "\(shown.track)", "width": "\(shown.setup.width)",
                                                                 "height": "\(shown.setup.height)", "tracks": "\(forwarder.tracks.count)"])
            }
        case .reject(let error, let reason):
            publication.failed(error, reason: reason)
            close(reason: "\(error.rawValue): \(reason)")
        }
    }

    // MARK: Ending

    /// Closes the connection (once) and tells the stage side.
    func close(reason: String, alreadyLogged: Bool = false) {
        guard !isClosed else { return }
        finish(reason: reason, alreadyLogged: alreadyLogged)
        context?.close(promise: nil)
    }

    private func finish(reason: String, alreadyLogged: Bool = false) {
        let previous = phase
        phase = .closed
        deadline?.cancel()
        switch previous {
        case .publishing(let publication):
            logger.info("publisher left", metadata: ["reason": "\(reason)"])
            publication.ended(reason: reason)
        case .negotiating, .admitting:
            logger.log(level: alreadyLogged ? .debug : .notice, "ingest connection closed before publishing", metadata: ["reason": "\(reason)"])
        case .closed:
            break
        }
    }
}

/// The open connections, so a graceful shutdown can close them all.
final class ConnectionRegistry: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) { channels.withLock { $0[ObjectIdentifier(channel)] = channel } }
    func remove(_ channel: any Channel) { channels.withLock { $0[ObjectIdentifier(channel)] = nil } }
    var all: [any Channel] { channels.withLock { Array($0.values) } }
}

/// One accepted connection's handler, for use in process: NIO's `EmbeddedChannel` in tests
/// and the session fuzzer drive a whole publisher session through it without a socket.
public enum RTMPConnection {
    public static func makeHandler(transport: IngestTransport, admission: any IngestAdmission, policy: RTMPConnectionPolicy,
                                   clock: any MediaClockReading, logger: Logger) -> any ChannelInboundHandler {
        RTMPConnectionHandler(transport: transport, admission: admission, policy: policy, clock: clock,
                              registry: ConnectionRegistry(), logger: logger)
    }
}
