// One build function for the daemon (`stage-compositor serve`) and the tests: resolves the
// configuration into a store, event sinks, an authenticator, a pipeline launcher and the
// HTTP responder, and returns the Hummingbird application with the CompositionManager (and
// the webhook sink, when configured) as services. Services shut down in reverse order: the
// HTTP server first, then the manager (its last events), then the webhook (which flushes them).
import Foundation
public import Hummingbird
import HTTPTypes
public import Logging
public import MediaCore
public import Prometheus
public import EventSinks
import APIModels
public import Persistence
import PostgresStore
import AsyncHTTPClient
import Metrics
import FFmpeg
import IngestServer
import LiveStage
import WebRTCIngest
import WebRTCPublisher
import WebRTCSecurity
import WebRTCSignal
import WHEP
import NIOSSL
import HummingbirdCore
import HummingbirdTLS
import NIOCore
import Auth
public import ServiceLifecycle

/// Swappable parts; the defaults are the daemon's.
public struct ServerDependencies: Sendable {
    public var logger: Logger
    /// nil: the configured sinks (`events.file`, `events.stdout`, `events.webhook`).
    public var events: (any EventSink)?
    /// nil: SigV4 verification when `auth.enabled`, else every request is let through.
    public var authenticator: (any RequestAuthenticator)?
    public var metricsRegistry: PrometheusCollectorRegistry
    public var clock: any MediaClock
    /// nil: real pipelines on dedicated threads, in real time.
    public var launcher: (any CompositionPipelineLauncher)?
    /// Keep state in memory instead of SQLite under the state directory.
    public var inMemoryStore: Bool
    /// The clock live media is stamped and composed on (the wall clock outside tests).
    public var liveClock: any MediaClock
    /// systemd notifications (READY, STATUS, WATCHDOG, STOPPING); nil outside a notify unit.
    public var notifier: SystemdNotifier?

    public init(logger: Logger, events: (any EventSink)? = nil,
                authenticator: (any RequestAuthenticator)? = nil,
                metricsRegistry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
                clock: any MediaClock = SystemMediaClock(), launcher: (any CompositionPipelineLauncher)? = nil,
                inMemoryStore: Bool = false, liveClock: any MediaClock = SystemMediaClock(), notifier: SystemdNotifier? = nil) {
        self.notifier = notifier
        self.liveClock = liveClock
        self.logger = logger
        self.events = events
        self.authenticator = authenticator
        self.metricsRegistry = metricsRegistry
        self.clock = clock
        self.launcher = launcher
        self.inMemoryStore = inMemoryStore
    }
}

public struct ServerBuildError: Error, CustomStringConvertible {
    public var description: String
}

/// Runs the daemon until it is told to stop: the state store the configuration names is open
/// for the whole run (PostgreSQL's connection pool as a child task of this call), then the
/// application and its services.
public func runServer(configuration: ServerConfiguration, dependencies: ServerDependencies) async throws {
    guard let text = configuration.database.url else {
        try await buildApplication(configuration: configuration, dependencies: dependencies).runService()
        return
    }
    let url = try PostgresDatabaseURL.parse(text).get()
    let timeout = Duration.milliseconds(Int64((configuration.database.callTimeoutSeconds ?? 10) * 1000))
    dependencies.logger.info("state store: PostgreSQL", metadata: ["url": "\(url)"])
    try await PostgresCompositionStore.withStore(url: url, callTimeout: timeout, logger: dependencies.logger) { store in
        let listen = configuration.listen
        let fleet = configuration.database.fleet
        let scheme = listen.tls == nil ? "http" : "https"
        let local = "\(scheme)://\(listen.host.contains(":") ? "[\(listen.host)]" : listen.host):\(listen.port)"
        let internalURL = fleet?.internalURL ?? local
        let advertised = fleet?.advertisedURL ?? internalURL
        // Where other nodes relay RTMP publishers of this node's stages: RTMPS when it listens,
        // at the internal URL's host.
        let ingest = configuration.ingest
        let internalHost = URL(string: internalURL)?.host ?? listen.host
        let rtmp = ingest.rtmps.enabled ? "rtmps://\(internalHost):\(ingest.rtmps.port)/app"
            : ingest.rtmp.enabled ? "rtmp://\(internalHost):\(ingest.rtmp.port)/app" : nil
        let registration = FleetNodeRegistration(
            nodeId: configuration.database.resolvedNodeId, internalURL: internalURL, apiURL: advertised, rtmpURL: rtmp,
            whipURL: configuration.ingest.whip.enabled ? advertised + "/whip" : nil,
            capacityMillicores: fleet?.capacityMillicores ?? ProcessInfo.processInfo.activeProcessorCount &* 1000)
        let member = try await FleetMember.join(store: store, registration: registration,
                                                settings: configuration.database.leaseSettings, fleet: fleet != nil,
                                                logger: dependencies.logger)
        // Calls to other nodes verify their certificates (https:// internal URLs): against the
        // fleet's own authority when it has one, else the system's.
        let nodeClient = try fleet?.caFile.map(makeNodeClient(caFile:))
        do {
            let context = fleet.map { fleet in
                FleetContext(member: member, ownership: FleetOwnership(
                    store: store, nodeId: registration.nodeId, incarnation: member.incarnation, secret: fleet.secret,
                    httpClient: nodeClient ?? HTTPClient.shared, logger: dependencies.logger))
            }
            let application = try await buildApplication(configuration: configuration, dependencies: dependencies, store: store,
                                                         services: [member], fleet: context)
            guard let context, let fleet else {
                try await application.runService()
                try await nodeClient?.shutdown()
                return
            }
            // The drain shuts down first and alone: the API, ingest and compositions all go on
            // while it waits; then the application stops as it always does.
            let drain = FleetDrain(member: member, timeout: .milliseconds(Int64(
                (fleet.drainTimeoutSeconds ?? ServerConfiguration.Database.Fleet.defaultDrainTimeoutSeconds) * 1000)),
                                   hook: context.drain, logger: dependencies.logger)
            try await ServiceGroup(configuration: .init(services: [application, drain], gracefulShutdownSignals: [.sigterm, .sigint],
                                                        logger: dependencies.logger)).run()
            try await nodeClient?.shutdown()
        } catch {
            try? await nodeClient?.shutdown()
            throw error
        }
    }
}

/// A daemon that is a node of a fleet: its membership and how it finds stages' owners.
public struct FleetContext: Sendable {
    let member: FleetMember
    let ownership: FleetOwnership
    /// How the drain waits for this node's compositions (installed by buildApplication).
    let drain = DrainHook()
}

/// The application on `store`, or (nil) on the SQLite database in the state directory.
/// `services` run before (and stop after) the application's own.
public func buildApplication(configuration: ServerConfiguration, dependencies: ServerDependencies,
                             store given: (any CompositionStore)? = nil, services: [any Service] = [],
                             fleet: FleetContext? = nil) async throws
    -> Application<RouterResponder<ServerRequestContext>> {
    let logger = dependencies.logger
    let metrics = ServerMetrics(factory: DocumentedPrometheusFactory(registry: dependencies.metricsRegistry, help: ServerMetrics.help))
    let ingest = configuration.ingest
    let hub = LiveStageHub(clock: dependencies.liveClock, settings: LiveMediaSettings(
        latency: Int64(ingest.latencyMs) * 1000, minimumLatency: Int64(ingest.minimumLatencyMs) * 1000, videoStoppedAfter: Int64(ingest.videoStoppedAfterSeconds * 1_000_000),
        keyframeCacheBytes: ingest.keyframeCacheBytes, keyframeCachePackets: ingest.keyframeCachePackets))
    let liveClock = HubClockReading(clock: hub.clock)
    let viewerFeeds = WHEPFeeds(maxViewersPerComposition: configuration.ingest.whip.maxViewersPerComposition,
                                clock: { liveClock.nowMicroseconds() })
    let launcher = dependencies.launcher ?? ThreadedPipelineLauncher(metrics: metrics, hub: hub, viewers: viewerFeeds)
    var events: any EventSink
    var eventServices: [any Service] = []
    if let given = dependencies.events {
        events = given
    } else {
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let webhook = configuration.events.webhook.map { WebhookConfiguration(url: $0.url, maxAttempts: $0.maxAttempts) }
        let sinks = ConfiguredEventSinks(file: configuration.eventsFilePath, standardOutput: configuration.events.stdout ?? true,
                                         webhook: webhook, httpClient: HTTPClient.shared, logger: logger)
        events = sinks.sink
        if let webhookSink = sinks.webhook { eventServices.append(webhookSink) }
    }
    var fleetOutbox: FleetEventOutbox?
    if let fleet {
        // In a fleet, events go through the database's outbox, delivered in order by one node.
        let outbox = FleetEventOutbox(store: fleet.ownership.store, nodeId: fleet.ownership.nodeId,
                                      incarnation: fleet.ownership.incarnation, sinks: events,
                                      mayDeliver: { [member = fleet.member] in member.isOwner },
                                      databaseError: { metrics.fleetDatabaseError(operation: $0) }, logger: logger)
        events = outbox
        eventServices.append(outbox)
        fleet.member.onDatabaseError { metrics.fleetDatabaseError(operation: $0) }
        fleetOutbox = outbox
    }
    let authenticator: any RequestAuthenticator = dependencies.authenticator ?? (
        configuration.auth.enabled
            ? SigV4RequestAuthenticator(accessKeys: configuration.auth.accessKeys, region: configuration.region, logger: logger)
            : UnauthenticatedRequestGuard(allowedHosts: [configuration.listen.host] + (configuration.listen.allowedHosts ?? []),
                                          scheme: configuration.listen.tls == nil ? "http" : "https", logger: logger))
    if let given {
        return try await makeApplication(configuration: configuration, store: given, events: events,
                                         eventServices: services + eventServices,
                                         authenticator: authenticator, launcher: launcher, hub: hub, viewerFeeds: viewerFeeds, metrics: metrics,
                                         dependencies: dependencies, fleet: fleet, outbox: fleetOutbox)
    }
    if dependencies.inMemoryStore {
        return try await makeApplication(configuration: configuration, store: InMemoryCompositionStore(), events: events,
                                         eventServices: eventServices, authenticator: authenticator,
                                         launcher: launcher, hub: hub, viewerFeeds: viewerFeeds, metrics: metrics, dependencies: dependencies)
    }
    try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
                                            attributes: [.posixPermissions: 0o700])
    let store = try SQLiteCompositionStore(path: configuration.databasePath)
    logger.info("state store opened", metadata: ["path": "\(configuration.databasePath)"])
    return try await makeApplication(configuration: configuration, store: store, events: events, eventServices: eventServices,
                                     authenticator: authenticator, launcher: launcher, hub: hub, viewerFeeds: viewerFeeds, metrics: metrics,
                                     dependencies: dependencies)
}

func makeApplication<Store: CompositionStore>(
    configuration: ServerConfiguration, store: Store, events: any EventSink, eventServices: [any Service],
    authenticator: any RequestAuthenticator, launcher: any CompositionPipelineLauncher, hub: LiveStageHub,
    viewerFeeds: WHEPFeeds, metrics: ServerMetrics, dependencies: ServerDependencies, fleet: FleetContext? = nil, outbox: FleetEventOutbox? = nil
) async throws -> Application<RouterResponder<ServerRequestContext>> {
    var mayWrite: (@Sendable () -> Bool)?
    if let member = fleet?.member { mayWrite = { member.isOwner } }
    let buckets = try BucketService(configuration: configuration, environment: ProcessInfo.processInfo.environment,
                                    logger: dependencies.logger, mayWrite: mayWrite)
    if let fleet {
        // Only what this node takes over from its own earlier incarnation: another node may have
        // finalized the rest already.
        let mine = Set(fleet.member.previous?.stages ?? [])
        let compositions = try await store.compositions().filter { mine.contains($0.composition.stageArn) }.map(\.arn)
        buckets.resumeSpools(where: Set(compositions).contains)
    } else {
        buckets.resumeSpools()
    }
    let ownership: any StageOwnership = fleet?.ownership ?? SingleNodeOwnership()
    let manager = CompositionManager(configuration: configuration, store: store, events: events, launcher: launcher,
                                     buckets: buckets, hub: hub,
                                     clock: dependencies.clock, metrics: metrics, notifier: dependencies.notifier,
                                     ownership: ownership, logger: dependencies.logger)
    try await manager.restore()
    let runtime = StageRuntime(configuration: configuration, store: store, events: events, hub: hub, metrics: metrics,
                               ownership: ownership, logger: dependencies.logger)
    await runtime.enableParticipantRecording(buckets: buckets)
    await runtime.restore()
    if let fleet {
        // What a node that is gone held: its compositions FAILED and recordings finalized, its
        // sessions closed. First this node's own earlier incarnation, then every node it reaps.
        let logger = dependencies.logger
        let takeOver: @Sendable (LostNode, String) async -> Void = { lost, reason in
            let compositions = await manager.takeOver(stages: lost.stages, reason: reason)
            let sessions = await runtime.takeOver(stages: lost.stages)
            logger.notice("took over a lost node's stages", metadata: [
                "lost.node": "\(lost.nodeId)", "lost.incarnation": "\(lost.incarnation)", "stages": "\(lost.stages.count)",
                "compositions.failed": "\(compositions)", "sessions.closed": "\(sessions)"])
        }
        if let previous = fleet.member.previous {
            await takeOver(previous, "node \(previous.nodeId) restarted (incarnation \(previous.incarnation) is gone) while the composition was running")
        }
        fleet.member.onTakeOver { lost in
            await takeOver(lost, "node \(lost.nodeId) (incarnation \(lost.incarnation)) was lost while the composition was running: "
                                 + "its lease expired")
        }
    }
    let ingestServer = try makeIngestServer(configuration: configuration, admission: runtime, hub: hub, logger: dependencies.logger)
    var tokens: TokenAuthority?
    var whip: (server: WebRTCIngestServer, endpoint: WHIPEndpoint<Store>)?
    if configuration.ingest.whip.enabled {
        let authority = try await TokenAuthority(configuration: configuration, persistent: !dependencies.inMemoryStore) {
            // In a fleet, every node's own key too: a token issued by any node verifies here.
            var keys = try await fleet?.ownership.store.tokenKeys() ?? [:]
            for stored in try await store.publicKeys() {
                if let arn = stored.publicKey.arn, let pem = stored.publicKey.publicKeyMaterial { keys[arn] = pem }
            }
            return keys
        }
        if let fleet { try await fleet.ownership.store.putTokenKey(arn: authority.ownKey.arn, publicKeyPEM: authority.ownKey.publicKeyPEM) }
        tokens = authority
        let server = try makeWebRTCIngestServer(configuration: configuration, hub: hub, metrics: metrics, logger: dependencies.logger)
        whip = (server, WHIPEndpoint(configuration: configuration, store: store, runtime: runtime, media: server, tokens: authority,
                                     wallClock: Date.init, logger: dependencies.logger))
    }
    let whep = whip.map { whip in
        viewerFeeds.connect { [server = whip.server] compositionId in server.wakeViewers(owner: compositionId) }
        return WHEPEndpoint(configuration: configuration, store: store, runtime: runtime, media: whip.server, feeds: viewerFeeds,
                            tokens: whip.endpoint.tokens, authenticator: authenticator, wallClock: Date.init, logger: dependencies.logger)
    }
    let controlPlane = ControlPlane(configuration: configuration, store: store, manager: manager, runtime: runtime, tokens: tokens)
    let endpoint = whip?.endpoint
    let listen = configuration.listen
    let limiter = ConnectionLimiter(limits: ConnectionLimits(total: listen.maxConnections ?? 1_000,
                                                             perAddress: listen.maxConnectionsPerAddress ?? 100))
    var routes = APIRoutes(
        maxBodyBytes: configuration.maxRequestBodyBytes, authenticator: authenticator,
        registry: dependencies.metricsRegistry, metrics: metrics, logger: dependencies.logger,
        operation: { route, query, body, forwarded throws(APIError) in
            try await controlPlane.handle(route, query: query, body: body, forwarded: forwarded)
        },
        whip: endpoint.map { endpoint -> @Sendable (Request, String) async -> Response in
            { request, client in await endpoint.respond(to: request, clientAddress: client) }
        },
        whipSessionCounts: whip.map { whip -> @Sendable () -> (open: Int, refused: Int64) in { whip.server.sessionCounts } },
        whep: whep.map { endpoint -> @Sendable (Request, String) async -> Response in
            { request, client in await endpoint.respond(to: request, clientAddress: client) }
        },
        fleetSecret: configuration.database.fleet?.secret,
        claimFleetNonce: { [store, logger = dependencies.logger] nonce, until in
            do {
                return try await store.claimFleetNonce(nonce, until: until, now: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
            } catch {
                logger.error("cannot record a fleet call's nonce; refusing the call", metadata: ["error": "\(error)"])
                return false
            }
        },
        metricsBearerToken: configuration.metrics.bearerToken,
        connectionLimiters: [("api", limiter)] + (ingestServer.map { [("ingest", $0.limiter)] } ?? []))
    if let server = whip?.server {
        routes.onMetricsRead.append {
            let counts = server.viewerSessionCounts
            metrics.recordConnections(listener: "whep", open: counts.open, refused: counts.refused)
        }
    }
    if let member = fleet?.member {
        routes.onMetricsRead.append {
            let backlog = outbox?.backlog ?? (0, 0)
            metrics.recordFleet(leaseAgeSeconds: member.leaseAgeSeconds, eventsNotAppended: backlog.0, eventsNotDelivered: backlog.1)
        }
    }
    let logger = dependencies.logger
    fleet?.drain.install { [manager] deadline in await manager.waitForRunningCompositions(until: deadline) }
    return Application(
        router: routes.buildRouter(),
        server: try apiServer(listen: listen, limiter: limiter),
        configuration: ApplicationConfiguration(address: .hostname(listen.host, port: listen.port), serverName: "stage-compositor"),
        // Shut down in reverse order: ingest first (publishers leave), then the stage runtime
        // (their last stage updates), the compositions, and the event services last, so
        // they deliver everything the others published.
        services: eventServices + [buckets, manager, runtime] + (ingestServer.map { [$0] } ?? []) + (whip.map { [$0.server] } ?? []),
        onServerRunning: { [notifier = dependencies.notifier] channel in
            let address = channel.localAddress.map { "\($0)" } ?? "?"
            logger.notice("stage-compositor listening", metadata: ["address": "\(address)"])
            notifier?.ready(status: "listening on \(address)")
        },
        logger: logger)
}

/// The RTMP/RTMPS listeners the configuration enables (nil when both are off). RTMPS uses the
/// configured certificate, else a self-signed one kept in the state directory.
func makeIngestServer(configuration: ServerConfiguration, admission: any IngestAdmission, hub: LiveStageHub,
                      logger: Logger) throws -> RTMPIngestServer? {
    let ingest = configuration.ingest
    var listeners: [RTMPIngestListener] = []
    if ingest.rtmp.enabled {
        listeners.append(RTMPIngestListener(host: ingest.rtmp.host, port: ingest.rtmp.port,
                                            multitrackFitsTiles: ingest.rtmp.multitrackFitsTiles))
    }
    if ingest.rtmps.enabled {
        let tls: TLSConfiguration
        if let certificate = ingest.certificateFile, let key = ingest.privateKeyFile {
            tls = try IngestTLS.serverConfiguration(certificateFile: certificate, privateKeyFile: key)
        } else {
            let hosts = [ingest.publicHost, ingest.rtmps.host].compactMap { $0 }
            let (selfSigned, file) = try IngestTLS.selfSigned(in: configuration.stateDirectory + "/tls", hosts: hosts)
            logger.notice("RTMPS uses a self-signed certificate (set ingest.certificateFile/privateKeyFile for production)",
                          metadata: ["certificate": "\(file)"])
            tls = selfSigned
        }
        listeners.append(RTMPIngestListener(host: ingest.rtmps.host, port: ingest.rtmps.port, tls: tls,
                                             multitrackFitsTiles: ingest.rtmps.multitrackFitsTiles))
    }
    guard !listeners.isEmpty else { return nil }
    var ingestLogger = logger
    ingestLogger[metadataKey: "component"] = "ingest"
    return RTMPIngestServer(
        listeners: listeners, admission: admission,
        policy: RTMPConnectionPolicy(publishDeadline: .milliseconds(Int64(ingest.handshakeTimeoutSeconds * 1000)),
                                     maxBitrate: Int64(ingest.maxBitrate),
                                     messageRate: MessageRateLimit(sustainedPerSecond: Int64(ingest.maxMessagesPerSecond),
                                                                   burstPerSecond: Int64(ingest.maxMessagesPerSecondBurst)),
                                     decodableCodecs: Set(CompressedCodec.allCases.filter(\.isDecodable))),
        idleTimeout: .milliseconds(Int64(ingest.idleTimeoutSeconds * 1000)), clock: HubClockReading(clock: hub.clock),
        connectionLimits: ConnectionLimits(total: ingest.maxConnections, perAddress: ingest.maxConnectionsPerAddress),
        logger: ingestLogger)
}

/// The WHIP media transport (UDP), with a fresh DTLS certificate for this run.
func makeWebRTCIngestServer(configuration: ServerConfiguration, hub: LiveStageHub, metrics: ServerMetrics,
                            logger: Logger) throws -> WebRTCIngestServer {
    let whip = configuration.ingest.whip
    var whipLogger = logger
    whipLogger[metadataKey: "component"] = "whip"
    let session = WebRTCSessionConfiguration(
        ice: IceLiteAgent.Configuration(consentTimeout: Int64(whip.consentTimeoutSeconds * 1_000_000), software: "stage-compositor"),
        receiver: PublisherMediaReceiverConfiguration(senderSSRC: UInt32.random(in: 1...UInt32.max),
                                                      maxBitrate: UInt64(configuration.ingest.maxBitrate)),
        maxSRTPStreams: whip.maxStreamsPerSession, dtlsBurst: whip.dtlsDatagramBurst, dtlsPerSecond: whip.dtlsDatagramsPerSecond)
    return WebRTCIngestServer(
        configuration: WebRTCIngestConfiguration(host: whip.host, port: whip.port, advertisedHost: whip.advertisedHost,
                                                 advertisedPort: whip.advertisedPort, session: session,
                                                 maxSessions: whip.maxSessions, maxSessionsPerAddress: whip.maxSessionsPerAddress,
                                                 acceptSimulcast: whip.acceptSimulcast,
                                                 simulcastLayerFitsTiles: whip.simulcastLayerFitsTiles,
                                                 maxViewers: whip.maxViewers, maxViewersPerAddress: whip.maxViewersPerAddress),
        certificate: try DTLSCertificate.generate(), clock: HubClockReading(clock: hub.clock),
        observer: WHIPMetricsObserver(metrics: metrics), logger: whipLogger)
}

/// Per-participant WHIP statistics into /metrics.
struct WHIPMetricsObserver: WebRTCIngestObserver {
    let metrics: ServerMetrics

    func update(participantId: String, statistics: WebRTCSessionStatistics, bitsPerSecond: Int64, allowance: LiveAllowance) {
        let receiver = statistics.receiver
        metrics.recordWHIP(participantId: participantId, values: [
            "packets_received": Double(receiver.packetsReceived), "packets_lost": Double(receiver.packetsLost),
            "packets_recovered_by_nack": Double(receiver.recoveredByNack), "nacks_sent": Double(receiver.nacksSent),
            "plis_sent": Double(receiver.pictureLossIndicationsSent), "jitter_seconds": Double(receiver.videoJitter) / 1_000_000,
            "nack_round_trip_seconds": Double(receiver.nackRoundTrip) / 1_000_000,
            "audio_packets_too_late": Double(receiver.audioPacketsTooLate), "video_packets_too_late": Double(receiver.videoPacketsTooLate),
            "audio_reorder_wait_seconds": Double(receiver.audioReorderWait) / 1_000_000,
            "unneeded_retransmissions": Double(receiver.unneededRetransmissions),
            "bitrate_bps": Double(bitsPerSecond), "srtp_auth_failures": Double(statistics.srtp.authenticationFailures),
            "undeclared_stream_packets": Double(receiver.undeclaredStreamPackets),
            "video_width": Double(receiver.videoWidth), "video_height": Double(receiver.videoHeight),
            "simulcast_layers": Double(receiver.simulcastLayers), "simulcast_switches": Double(receiver.simulcastSwitches),
            "frames_of_other_layers": Double(receiver.framesOfOtherLayers),
            "audio_capture_times": Double(receiver.audioCaptureTimes), "video_capture_times": Double(receiver.videoCaptureTimes),
            "srtp_streams_refused": Double(statistics.srtpStreamsRefused),
            "dtls_datagrams_dropped": Double(statistics.dtlsDatagramsDropped),
            "latency_seconds": Double(allowance.latency) / 1_000_000, "latency_steps": Double(allowance.steps),
            "latency_stepped_seconds": Double(allowance.steppedUp) / 1_000_000])
    }

    func ended(participantId: String) { metrics.removeWHIP(participantId: participantId) }

    func loopLag(maxMicroseconds: Int64) { metrics.whipLoopLag.record(Double(maxMicroseconds) / 1_000_000) }
}

/// Rate measurements on the live media clock.
struct HubClockReading: MediaClockReading {
    let clock: any MediaClock
    func nowMicroseconds() -> Int64 { clock.now().microsecondsValue }
}

/// The API's HTTP/1.1 server, over TLS when `listen.tls` names a certificate and key.
func apiServer(listen: ServerConfiguration.Listen, limiter: ConnectionLimiter) throws -> HTTPServerBuilder {
    let plain = HTTPLimits.server(limiter: limiter, idleTimeout: TimeAmount.milliseconds(Int64((listen.idleTimeoutSeconds ?? 30) * 1000)))
    guard let tls = listen.tls else { return plain }
    let configuration = TLSConfiguration.makeServerConfiguration(
        certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificateFile).map { .certificate($0) },
        privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.privateKeyFile, format: .pem)))
    return try .tls(plain, tlsConfiguration: configuration)
}

/// The client for calls to the other nodes of a fleet whose API certificates a private
/// authority signs (`database.fleet.caFile`): certificate chain and host name both checked.
func makeNodeClient(caFile: String) throws -> HTTPClient {
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
    tls.certificateVerification = .fullVerification
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
}
