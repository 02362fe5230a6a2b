// The WHIP media transport: one UDP socket for every WebRTC publisher, as a Service.
//
//   UDP datagram ─► first byte (RFC 7983) ─┬─ STUN: session by USERNAME's ufrag, then its ICE agent
//                                          └─ DTLS / SRTP: session by remote address (learnt from
//                                             a valid ICE check) ─► WebRTCPublisherSession
//   session outputs ─► datagrams back, access units ─► LivePublisher (the stage's media path)
//
// Everything about sessions happens on the socket's event loop: the session table, every
// session's state and its timers (one 10 ms tick polls the sessions that are due). The work
// there is light (SRTP, depacketizing, a queue push); decoding happens on the compositions'
// threads. The HTTP side (`prepare`, `start`, `stop`) hops onto the loop.

public import Logging
public import LiveStage
public import NIOCore
public import NIOPosix
public import ServiceLifecycle
import Synchronization
import WebRTCMedia
import WebRTCPublisher
public import WebRTCSecurity
public import WebRTCSignal

public struct WebRTCIngestConfiguration: Sendable {
    /// Where the UDP socket binds.
    public var host: String
    public var port: Int
    /// The address publishers are told to send to (the answer's candidate): for NAT 1:1 or a
    /// relay; by default the bound address, which must then not be a wildcard.
    public var advertisedHost: String?
    public var advertisedPort: Int?
    public var session: WebRTCSessionConfiguration
    /// Sessions at once, and per client address; beyond either `start` refuses
    /// (`tooManySessions`) before any session state exists.
    public var maxSessions: Int
    public var maxSessionsPerAddress: Int
    /// Answer simulcast offers with every layer, else decline.
    public var acceptSimulcast: Bool
    /// Compose the smallest simulcast layer that covers every tile showing the publisher;
    /// when false, always the largest.
    public var simulcastLayerFitsTiles: Bool
    /// WHEP viewers at once, and per client address (beyond, `startViewer` refuses).
    public var maxViewers: Int
    public var maxViewersPerAddress: Int

    public init(host: String = "127.0.0.1", port: Int = 0, advertisedHost: String? = nil, advertisedPort: Int? = nil,
                session: WebRTCSessionConfiguration = WebRTCSessionConfiguration(), maxSessions: Int = 256,
                maxSessionsPerAddress: Int = 32, acceptSimulcast: Bool = true, simulcastLayerFitsTiles: Bool = true,
                maxViewers: Int = 500, maxViewersPerAddress: Int = 64) {
        self.maxViewers = maxViewers
        self.maxViewersPerAddress = maxViewersPerAddress
        self.simulcastLayerFitsTiles = simulcastLayerFitsTiles
        self.maxSessionsPerAddress = maxSessionsPerAddress
        self.host = host
        self.port = port
        self.advertisedHost = advertisedHost
        self.advertisedPort = advertisedPort
        self.session = session
        self.maxSessions = maxSessions
        self.acceptSimulcast = acceptSimulcast
    }
}

/// An offer negotiated into an answer, waiting for the publisher's admission.
public struct PreparedWebRTCSession: Sendable {
    /// The WHIP resource ID (the Location's last segment): unguessable.
    public let id: String
    public let answer: String
    public let negotiation: SDPNegotiation
    let localCredentials: IceCredentials
}

public struct WebRTCIngestError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable { case notListening, tooManySessions, offer, internalError }
    public var kind: Kind
    public var message: String
    public var description: String { message }
}

/// Per-participant statistics, each second and at the end (for metrics).
public protocol WebRTCIngestObserver: Sendable {
    /// Once a second per session: its counters, its bitrate, and the jitter allowance its
    /// media is shown with (µs, measured per publisher).
    func update(participantId: String, statistics: WebRTCSessionStatistics, bitsPerSecond: Int64, allowance: LiveAllowance)
    func ended(participantId: String)
    /// Each second: how late the socket's event loop ran its 10 ms tick at worst (µs), which
    /// bounds how long any session's datagrams waited behind other work.
    func loopLag(maxMicroseconds: Int64)
}

public final class WebRTCIngestServer: Service, Sendable {
    let configuration: WebRTCIngestConfiguration
    let certificate: DTLSCertificate
    let clock: any MediaClockReading
    private let group: any EventLoopGroup
    private let logger: Logger
    private let observer: (any WebRTCIngestObserver)?
    private let state = Mutex<ServerState>(ServerState())
    private let ready = Mutex<[CheckedContinuation<Void, Never>]>([])

    struct ServerState {
        var channel: (any Channel)?
        var localPort: Int?
        var table: SessionTable?
        var viewers: ViewerTable?
        var failed = false
    }

    public init(configuration: WebRTCIngestConfiguration, certificate: DTLSCertificate, clock: any MediaClockReading,
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, observer: (any WebRTCIngestObserver)? = nil,
                logger: Logger) {
        self.configuration = configuration
        self.certificate = certificate
        self.clock = clock
        self.group = group
        self.observer = observer
        self.logger = logger
    }

    /// The bound UDP port, once listening.
    public var port: Int? { state.withLock { $0.localPort } }
    /// Datagrams that belonged to no session (garbage, strays, expired sessions).
    public var unroutableDatagrams: Int64 { state.withLock { $0.table?.unroutable.load(ordering: .relaxed) ?? 0 } }
    /// Sessions running, and sessions refused by the caps so far (for /metrics).
    public var sessionCounts: (open: Int, refused: Int64) {
        (counts.open.load(ordering: .relaxed), counts.refused.load(ordering: .relaxed))
    }
    private let counts = SessionCounts()
    let viewerCounts = SessionCounts()

    func viewerTable() -> (any Channel, ViewerTable)? {
        state.withLock { state in state.channel.flatMap { channel in state.viewers.map { (channel, $0) } } }
    }

    public func waitUntilListening() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { $0.localPort != nil || $0.failed }
            if done { continuation.resume() } else { ready.withLock { $0.append(continuation) } }
        }
    }

    // MARK: Service

    public func run() async throws {
        defer { releaseWaiters() }
        let table = SessionTable(certificate: certificate, configuration: configuration.session, clock: clock,
                                 observer: observer, counts: counts, layerFitsTiles: configuration.simulcastLayerFitsTiles,
                                 logger: logger)
        let viewers = ViewerTable(clock: clock, counts: viewerCounts, logger: logger)
        let channel: any Channel
        do {
            channel = try await DatagramBootstrap(group: group)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                // Bursts of a keyframe from several publishers: a few MiB of socket buffer.
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                // A keyframe to every WHEP viewer at once.
                .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 2048))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(DatagramHandler(table: table, viewers: viewers))
                    }
                }
                .bind(host: configuration.host, port: configuration.port)
                .get()
        } catch {
            state.withLock { $0.failed = true }
            throw error
        }
        let port = channel.localAddress?.port ?? configuration.port
        table.channel = channel
        viewers.channel = channel
        state.withLock {
            $0.viewers = viewers
            $0.channel = channel
            $0.localPort = port
            $0.table = table
        }
        logger.notice("WebRTC (WHIP) media listening", metadata: ["address": "\(configuration.host):\(port)",
                                                                  "advertised": "\(advertisedAddress(port: port).map { "\($0)" } ?? "?")"])
        releaseWaiters()
        let ticker = channel.eventLoop.scheduleRepeatedTask(initialDelay: .microseconds(SessionTable.tickInterval),
                                                            delay: .microseconds(SessionTable.tickInterval)) { _ in
            table.tick()
            viewers.tick()
        }
        try? await gracefulShutdown()
        ticker.cancel()
        try? await channel.eventLoop.submit {
            table.endAll(reason: "the server is shutting down")
            viewers.endAll(reason: "the server is shutting down")
        }.get()
        try? await channel.close()
        state.withLock { $0.channel = nil }
    }

    private func releaseWaiters() {
        let waiters = ready.withLock { waiters in
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func advertisedAddress(port: Int) -> TransportAddress? {
        let host = configuration.advertisedHost ?? configuration.host
        guard let ip = IPAddress(host), ip.bytes.contains(where: { $0 != 0 }) else { return nil }
        return TransportAddress(ip: ip, port: UInt16(clamping: configuration.advertisedPort ?? port))
    }

    // MARK: WHIP

    /// Negotiates an offer. Errors name what the offer lacks (for a 400).
    public func prepare(offer: String) throws(WebRTCIngestError) -> PreparedWebRTCSession {
        guard let port, let candidate = advertisedAddress(port: port) else {
            throw WebRTCIngestError(kind: .notListening, message: "WebRTC media transport is not listening")
        }
        var generator = SystemRandomNumberGenerator()
        let credentials = IceCredentials.random(using: &generator)
        let options = SDPAnswerOptions(localCredentials: credentials, localFingerprintSHA256: certificate.fingerprintSHA256Text,
                                       candidate: candidate, sessionID: UInt64.random(in: 1...UInt64(Int64.max), using: &generator),
                                       requireAudio: true, requireVideo: true, acceptSimulcast: configuration.acceptSimulcast)
        let negotiation: SDPNegotiation
        do {
            negotiation = try SDPNegotiator.negotiate(offer: offer, options: options)
        } catch {
            throw WebRTCIngestError(kind: .offer, message: error.description)
        }
        let id = (0..<3).map { _ in String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 36) }.joined()
        return PreparedWebRTCSession(id: id, answer: negotiation.answer, negotiation: negotiation, localCredentials: credentials)
    }

    /// Starts receiving an admitted publisher's media; `publication.ended` is called when the
    /// session ends (consent expired, DTLS failure, `stop`, shutdown).
    /// `clientAddress` is the HTTP peer's IP address, for the per-address cap.
    public func start(_ prepared: PreparedWebRTCSession, publication: any IngestPublication, participantId: String,
                      clientAddress: String) async throws {
        guard let (channel, table) = state.withLock({ state in state.channel.flatMap { c in state.table.map { (c, $0) } } }) else {
            throw WebRTCIngestError(kind: .notListening, message: "WebRTC media transport is not listening")
        }
        let (maxSessions, perAddress) = (configuration.maxSessions, configuration.maxSessionsPerAddress)
        do {
            try await channel.eventLoop.submit {
                guard table.count < maxSessions else {
                    throw WebRTCIngestError(kind: .tooManySessions, message: "too many WebRTC sessions (\(maxSessions))")
                }
                guard table.count(clientAddress: clientAddress) < perAddress else {
                    throw WebRTCIngestError(kind: .tooManySessions,
                                            message: "too many WebRTC sessions from \(clientAddress) (\(perAddress))")
                }
                try table.add(prepared, publication: publication, participantId: participantId, clientAddress: clientAddress)
            }.get()
        } catch let error as WebRTCIngestError where error.kind == .tooManySessions {
            counts.refused.add(1, ordering: .relaxed)
            throw error
        }
    }

    /// Ends a session (WHIP DELETE, DisconnectParticipant). False when there is none.
    @discardableResult
    public func stop(id: String, reason: String) async -> Bool {
        guard let (channel, table) = state.withLock({ state in state.channel.flatMap { c in state.table.map { (c, $0) } } }) else {
            return false
        }
        return (try? await channel.eventLoop.submit { table.end(id: id, reason: reason) }.get()) ?? false
    }

    /// Ends a session only if it is `participantId`'s on `stageArn` (WHIP DELETE, whose token
    /// names them). False when there is no such session.
    public func stop(id: String, stageArn: String, participantId: String, reason: String) async -> Bool {
        guard let (channel, table) = state.withLock({ state in state.channel.flatMap { c in state.table.map { (c, $0) } } }) else {
            return false
        }
        return (try? await channel.eventLoop.submit {
            table.end(id: id, reason: reason, if: { $0.participantId == participantId && $0.publication.publisher.stageArn == stageArn })
        }.get()) ?? false
    }

    /// Whether session `id` is `participantId`'s on `stageArn` (a token exchange on it).
    public func isSession(id: String, stageArn: String, participantId: String) async -> Bool {
        guard let (channel, table) = state.withLock({ state in state.channel.flatMap { c in state.table.map { (c, $0) } } }) else {
            return false
        }
        return (try? await channel.eventLoop.submit {
            table.entry(id: id).map { $0.participantId == participantId && $0.publication.publisher.stageArn == stageArn } ?? false
        }.get()) ?? false
    }

    /// A session ID as logs show it: enough to tell sessions apart, too little to end one.
    public static func redacted(_ id: String) -> String { id.count > 6 ? "\(id.prefix(6))…" : "…" }

    /// Same, without waiting (the hub's disconnect callback must return quickly).
    public func stopSoon(id: String, reason: String) {
        guard let (channel, table) = state.withLock({ state in state.channel.flatMap { c in state.table.map { (c, $0) } } }) else {
            return
        }
        channel.eventLoop.execute { _ = table.end(id: id, reason: reason) }
    }

    /// Statistics of a running session.
    public func statistics(id: String) async -> WebRTCSessionStatistics? {
        guard let (channel, table) = state.withLock({ state in state.channel.flatMap { c in state.table.map { (c, $0) } } }) else {
            return nil
        }
        return try? await channel.eventLoop.submit { table.statistics(id: id) }.get()
    }
}

// MARK: - Event-loop side

/// Sessions running and refused, readable from any thread.
final class SessionCounts: Sendable {
    let open = Atomic<Int>(0)
    let refused = Atomic<Int64>(0)
}

/// Every session, and the indexes to find one. Touched only on the socket's event loop.
final class SessionTable: @unchecked Sendable {
    /// Timestamp jumps a WHIP publisher may make before it is disconnected (as over RTMP).
    static let maxTimestampDiscontinuities = 10
    final class Entry: IndexedSession {
        let id: String
        let participantId: String
        /// The HTTP peer that POSTed the offer (the per-address cap counts these).
        let clientAddress: String
        let session: WebRTCPublisherSession
        let publication: any IngestPublication
        var forwarder: WebRTCMediaForwarder
        var address: TransportAddress?
        var ufrag: String { session.localCredentials.ufrag }
        var nextDeadline: Int64?
        var lastReport: (time: Int64, bytes: Int64)
        /// Bytes received per second over 5 s, held to the advertised maximum bitrate.
        var bitrate = BitrateWindow()

        init(id: String, participantId: String, clientAddress: String, session: WebRTCPublisherSession,
             publication: any IngestPublication, now: Int64) {
            self.id = id
            self.clientAddress = clientAddress
            self.participantId = participantId
            self.session = session
            self.publication = publication
            forwarder = WebRTCMediaForwarder(publisher: publication.publisher)
            lastReport = (now, 0)
        }
    }

    var channel: (any Channel)?
    private let certificate: DTLSCertificate
    private let configuration: WebRTCSessionConfiguration
    private let clock: any MediaClockReading
    private let observer: (any WebRTCIngestObserver)?
    private let counts: SessionCounts
    let unroutable = Atomic<Int64>(0)
    private let logger: Logger
    private var index = SessionIndex<Entry>()
    /// When the last tick ended, and the worst lateness of a tick in the current second.
    private var lastTickEnd: Int64?
    private var lag: (windowStart: Int64, max: Int64) = (0, 0)
    static let tickInterval: Int64 = 10_000
    /// Simulcast: compose the smallest layer covering the publisher's tiles, not the largest.
    private let layerFitsTiles: Bool

    init(certificate: DTLSCertificate, configuration: WebRTCSessionConfiguration, clock: any MediaClockReading,
         observer: (any WebRTCIngestObserver)?, counts: SessionCounts, layerFitsTiles: Bool, logger: Logger) {
        self.layerFitsTiles = layerFitsTiles
        self.counts = counts
        self.certificate = certificate
        self.configuration = configuration
        self.clock = clock
        self.observer = observer
        self.logger = logger
    }

    var count: Int { index.count }

    /// The consumers' combined demand as the size a simulcast layer must cover; nil inside
    /// means the largest, and no answer (`.none`: nobody shows the picture) keeps the layer.
    static func wantedVideoSize(_ demand: LiveVideoDemand) -> (width: Int, height: Int)?? {
        switch demand {
        case .largest: .some(nil)
        case .atLeast(let width, let height): .some((width, height))
        case .none: nil
        }
    }

    func count(clientAddress: String) -> Int { index.count(clientAddress: clientAddress) }

    func add(_ prepared: PreparedWebRTCSession, publication: any IngestPublication, participantId: String, clientAddress: String) throws {
        let now = clock.nowMicroseconds()
        let session: WebRTCPublisherSession
        do {
            session = try WebRTCPublisherSession(negotiation: prepared.negotiation, localCredentials: prepared.localCredentials,
                                                 certificate: certificate, configuration: configuration, now: now)
        } catch {
            throw WebRTCIngestError(kind: .internalError, message: "DTLS setup failed: \(error.reason)")
        }
        let entry = Entry(id: prepared.id, participantId: participantId, clientAddress: clientAddress, session: session,
                          publication: publication, now: now)
        entry.nextDeadline = session.nextDeadline
        index.insert(entry)
        counts.open.store(index.count, ordering: .relaxed)
    }

    func statistics(id: String) -> WebRTCSessionStatistics? { index[id]?.session.statistics }

    func entry(id: String) -> Entry? { index[id] }

    // MARK: Datagrams

    /// A datagram for a publisher; false when it is none's.
    func receive(_ bytes: [UInt8], from source: TransportAddress) -> Bool {
        guard let entry = index.route(bytes, from: source) else { return false }
        let now = clock.nowMicroseconds()
        let outputs = entry.session.receive(bytes, from: source, now: now)
        index.select(entry, address: entry.session.remoteAddress)
        carryOut(outputs, for: entry)
        entry.nextDeadline = entry.session.nextDeadline
        return true
    }


    // MARK: Timers

    func tick() {
        let now = clock.nowMicroseconds()
        defer { lastTickEnd = clock.nowMicroseconds() }
        if let end = lastTickEnd { lag.max = max(lag.max, now &- end &- Self.tickInterval) }
        if now &- lag.windowStart >= 1_000_000 {
            observer?.loopLag(maxMicroseconds: lag.max)
            lag = (now, 0)
        }
        for entry in index.entries {
            if entry.forwarder.publisher.takeKeyframeRequest() {
                entry.session.requestKeyframe()
                entry.nextDeadline = now
            }
            if layerFitsTiles, let wanted = Self.wantedVideoSize(entry.forwarder.publisher.videoDemand),
               entry.session.setWantedVideoSize(wanted) {
                entry.nextDeadline = now
            }
            if let deadline = entry.nextDeadline, deadline <= now {
                carryOut(entry.session.poll(now: now), for: entry)
                entry.nextDeadline = entry.session.nextDeadline
            }
            if index[entry.id] != nil, now - entry.lastReport.time >= 1_000_000 {
                let statistics = entry.session.statistics
                let bytes = statistics.receiver.bytesReceived
                let received = max(0, bytes &- entry.lastReport.bytes)
                let bitrate = received.multipliedReportingOverflow(by: 8_000_000).partialValue / max(1, now - entry.lastReport.time)
                entry.lastReport = (now, bytes)
                observer?.update(participantId: entry.participantId, statistics: statistics, bitsPerSecond: bitrate,
                                 allowance: entry.forwarder.publisher.allowance)
                // REMB asks for at most the maximum; a sender that ignores it by a quarter, over
                // 5 s (a keyframe burst is not enough), is disconnected as RTMP's would be.
                let limit = Int64(clamping: configuration.receiver.maxBitrate)
                if let average = entry.bitrate.add(Int(clamping: received), now: now), average > limit + limit / 4 {
                    entry.publication.failed(.bitrateExceeded, reason: "\(average) bit/s averaged over 5 s exceeds \(limit)")
                    remove(entry, reason: "bitrate \(average) bit/s exceeds the maximum \(limit)")
                } else if statistics.receiver.timestampDiscontinuities > Self.maxTimestampDiscontinuities {
                    // A sender restarting its timestamps makes one; one that keeps jumping sends nonsense.
                    let reason = "RTP timestamps jumped by more than an hour \(statistics.receiver.timestampDiscontinuities) times"
                    entry.publication.failed(.invalidInput, reason: reason)
                    remove(entry, reason: reason)
                }
            }
        }
    }

    // MARK: Outputs

    private func carryOut(_ outputs: [WebRTCSessionOutput], for entry: Entry) {
        for output in outputs {
            switch output {
            case .send(let bytes, let address):
                guard let channel, let socketAddress = try? SocketAddress(address) else { continue }
                let envelope = AddressedEnvelope(remoteAddress: socketAddress, data: channel.allocator.buffer(bytes: bytes))
                channel.writeAndFlush(envelope, promise: nil)
            case .media(let unit):
                entry.forwarder.forward(unit)
            case .connected:
                logger.info("WHIP publisher connected", metadata: ["participant.id": "\(entry.participantId)",
                                                                   "whip.session": "\(WebRTCIngestServer.redacted(entry.id))",
                                                                   "remote": "\(entry.address.map { "\($0)" } ?? "?")"])
            case .ended(let reason):
                remove(entry, reason: reason.description)
            }
        }
    }

    @discardableResult
    func end(id: String, reason: String, if allowed: (Entry) -> Bool = { _ in true }) -> Bool {
        guard let entry = index[id], allowed(entry) else { return false }
        remove(entry, reason: reason)
        return true
    }

    func endAll(reason: String) {
        for entry in index.entries { remove(entry, reason: reason) }
    }

    private func remove(_ entry: Entry, reason: String) {
        guard index.remove(entry) else { return }
        counts.open.store(index.count, ordering: .relaxed)
        let statistics = entry.session.statistics
        logger.info("WHIP publisher left", metadata: [
            "participant.id": "\(entry.participantId)", "whip.session": "\(WebRTCIngestServer.redacted(entry.id))", "reason": "\(reason)",
            "rtp.received": "\(statistics.receiver.packetsReceived)", "rtp.lost": "\(statistics.receiver.packetsLost)",
            "rtp.recovered": "\(statistics.receiver.recoveredByNack)",
            "srtp.auth_failures": "\(statistics.srtp.authenticationFailures)"])
        observer?.ended(participantId: entry.participantId)
        entry.publication.ended(reason: reason)
    }
}

/// Reads datagrams into the table.
final class DatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let table: SessionTable
    private let viewers: ViewerTable

    init(table: SessionTable, viewers: ViewerTable) {
        self.table = table
        self.viewers = viewers
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let source = TransportAddress(envelope.remoteAddress) else { return }
        let bytes = Array(envelope.data.readableBytesView)
        if !table.receive(bytes, from: source), !viewers.receive(bytes, from: source) {
            table.unroutable.add(1, ordering: .relaxed)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP port unreachable from a publisher that left surfaces here; the socket stays open.
    }
}

extension TransportAddress {
    init?(_ address: SocketAddress) {
        guard let port = address.port else { return nil }
        switch address {
        case .v4(let v4):
            let value = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            self.init(ip: .ipv4(UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)),
                      port: UInt16(port))
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            guard let ip = IPAddress(bytes: bytes) else { return nil }
            self.init(ip: ip, port: UInt16(port))
        case .unixDomainSocket:
            return nil
        }
    }
}

extension SocketAddress {
    init(_ address: TransportAddress) throws {
        try self.init(ipAddress: address.ip.description, port: Int(address.port))
    }
}
