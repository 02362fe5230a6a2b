// The RTMP and RTMPS listeners, as one Service: bind, accept publishers until graceful
// shutdown, then stop accepting and close every connection (each publisher leaves its stage).
//
//   TCP ─(TLS: NIOSSLServerHandler)─ IdleStateHandler ─ RTMPConnectionHandler ─▶ IngestAdmission
//                                                         │ media
//                                                         ▼
//                                                   LivePublisher (LiveStage)

public import LiveStage
public import Logging
public import NIOCore
public import NIOPosix
public import NIOSSL
public import ServiceLifecycle
import Synchronization

public struct RTMPIngestListener: Sendable {
    public var host: String
    public var port: Int
    /// Present for RTMPS.
    public var tls: TLSConfiguration?
    /// E-RTMP multitrack publishers are composed from the smallest track that covers their
    /// tiles (false: the largest).
    public var multitrackFitsTiles = true

    public init(host: String, port: Int, tls: TLSConfiguration? = nil, multitrackFitsTiles: Bool = true) {
        self.multitrackFitsTiles = multitrackFitsTiles
        self.host = host
        self.port = port
        self.tls = tls
    }

    var transport: IngestTransport { tls == nil ? .rtmp : .rtmps }
}

public final class RTMPIngestServer: Service, Sendable {
    private let listeners: [RTMPIngestListener]
    private let admission: any IngestAdmission
    private let policy: RTMPConnectionPolicy
    private let idleTimeout: TimeAmount
    private let clock: any MediaClockReading
    private let group: any EventLoopGroup
    private let logger: Logger
    private let registry = ConnectionRegistry()
    private let bound = Mutex<[IngestTransport: Int]>([:])
    private let ready = Mutex<[CheckedContinuation<Void, Never>]>([])

    /// RTMP and RTMPS together.
    public let limiter: ConnectionLimiter

    public init(listeners: [RTMPIngestListener], admission: any IngestAdmission, policy: RTMPConnectionPolicy,
                idleTimeout: TimeAmount, clock: any MediaClockReading, connectionLimits: ConnectionLimits = ConnectionLimits(),
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger) {
        limiter = ConnectionLimiter(limits: connectionLimits)
        self.listeners = listeners
        self.admission = admission
        self.policy = policy
        self.idleTimeout = idleTimeout
        self.clock = clock
        self.group = group
        self.logger = logger
    }

    /// The port each transport listens on, once bound (useful with port 0).
    public func port(for transport: IngestTransport) -> Int? { bound.withLock { $0[transport] } }

    /// Returns once every listener is bound (or `run` failed).
    public func waitUntilListening() async {
        await withCheckedContinuation { continuation in
            let done = bound.withLock { $0.count } == listeners.count
            if done { continuation.resume() } else { ready.withLock { $0.append(continuation) } }
        }
    }

    public func run() async throws {
        var channels: [any Channel] = []
        defer { releaseWaiters() }
        do {
            for listener in listeners {
                let channel = try await bind(listener)
                channels.append(channel)
                let port = channel.localAddress?.port ?? listener.port
                bound.withLock { $0[listener.transport] = port }
                logger.notice("RTMP ingest listening", metadata: ["transport": "\(listener.transport.rawValue)",
                                                                 "address": "\(listener.host):\(port)"])
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        releaseWaiters()
        // Runs until graceful shutdown (or cancellation), then lets go of every publisher.
        try? await gracefulShutdown()
        for channel in channels { try? await channel.close() }
        let open = registry.all
        if !open.isEmpty { logger.notice("closing ingest connections", metadata: ["count": "\(open.count)"]) }
        for channel in open { try? await channel.close() }
    }

    private func releaseWaiters() {
        let waiters = ready.withLock { waiters in
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func bind(_ listener: RTMPIngestListener) async throws -> any Channel {
        let tlsContext = try listener.tls.map { try NIOSSLContext(configuration: $0) }
        let admission = self.admission
        var listenerPolicy = self.policy
        listenerPolicy.multitrackFitsTiles = listener.multitrackFitsTiles
        let policy = listenerPolicy
        let clock = self.clock
        let registry = self.registry
        let idleTimeout = self.idleTimeout
        let limiter = self.limiter
        var logger = self.logger
        logger[metadataKey: "ingest.port"] = "\(listener.port)"
        let transport = listener.transport
        let connectionLogger = logger
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // Each read hands at most 64 KiB to the session; the session's own limits bound
            // what it holds.
            .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 16_384, maximum: 65_536))
            .childChannelInitializer { channel in
                // The cap first, before any handler or buffer exists for the connection.
                let address = channel.remoteAddress?.ipAddress ?? "?"
                guard limiter.acquire(address) else {
                    connectionLogger.notice("ingest connection refused: too many connections",
                                            metadata: ["ingest.remote": "\(address)", "limit.total": "\(limiter.limits.total)",
                                                       "limit.per_address": "\(limiter.limits.perAddress)"])
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in limiter.release(address) }
                return channel.eventLoop.makeCompletedFuture {
                    if let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tlsContext))
                    }
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: idleTimeout))
                    try channel.pipeline.syncOperations.addHandler(
                        RTMPConnectionHandler(transport: transport, admission: admission, policy: policy, clock: clock,
                                              registry: registry, logger: connectionLogger))
                }
            }
            .bind(host: listener.host, port: listener.port)
            .get()
    }
}
