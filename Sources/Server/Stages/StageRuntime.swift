// Live stages on the control-plane side: who may publish (ingest admission), who is on each
// stage (sessions, participants, their events, persisted), and the "IVS Stage Update" events.
//
//   ingest connection ──admit / failed / ended──▶ inbox ──▶ StageRuntime (actor, a Service)
//                                                         │  StageSessionBook (pure)
//                                                         ├─▶ store (sessions, participants, events)
//                                                         ├─▶ event sinks (Participant Published ...)
//                                                         └─▶ LiveStageHub (media to compositions)
//
// Connections talk to it only through the inbox, so a burst of publishers never blocks an
// event loop, and admissions, leaves and API calls are applied one at a time, in order.
import APIModels
import Crypto
import Fleet
import Events
public import EventSinks
public import Foundation
public import IngestServer
public import LiveStage
public import Logging
import MediaCore
public import Persistence
public import ServiceLifecycle
import Stages
import Synchronization

public actor StageRuntime<Store: CompositionStore>: Service, IngestAdmission {
    /// A publisher on a stage now.
    struct Connection {
        var publication: Publication
        var stageArn: String
        var participantId: String
        var ingestConfigurationArn: String?
        /// WHIP: the token's expiry and the key that verified it.
        var tokenExpiresAt: Int64? = nil
        var tokenKeyArn: String? = nil
        /// What it holds of this node's placement of the stage.
        var reservation: StageReservation? = nil
        /// An RTMP publisher whose stage is on another node: relayed there, not on this stage.
        var relay: RTMPRelay? = nil
    }

    enum Message: Sendable {
        case admit(IngestAdmissionRequest, disconnect: @Sendable (String) -> Void, decide: @Sendable (IngestAdmissionDecision) -> Void)
        case admitToken(TokenParticipant, remoteAddress: String, disconnect: @Sendable (String) -> Void,
                        decide: @Sendable (IngestAdmissionDecision) -> Void)
        case tokenRefused(TokenParticipant, IngestPublishError, reason: String)
        case failed(Publication, IngestPublishError, reason: String)
        case ended(Publication, reason: String)
    }

    /// Ended sessions are kept this long for ListStageSessions & co.
    static var sessionRetentionSeconds: Int64 { 14 * 86_400 }

    let configuration: ServerConfiguration
    let arnContext: ARNContext
    let store: Store
    let catalog: StageCatalog<Store>
    let events: any EventSink
    let builder: CompositionEventBuilder
    public let hub: LiveStageHub
    let wallClock: @Sendable () -> Date
    let logger: Logger
    let metrics: ServerMetrics?
    /// Which node a stage's publishers join (this one, outside a fleet).
    let ownership: any StageOwnership
    private var book: StageSessionBook
    /// By ingest configuration ARN (RTMP) or `whip:<stage ARN>/<participant ID>`.
    private var connections: [String: Connection] = [:]
    /// Which refused publishes become Participant Publish Error events (paced).
    private var refusalEvents = RefusalEventLimiter()
    private let inbox: AsyncStream<Message>
    private let inboxContinuation: AsyncStream<Message>.Continuation
    /// Individual participant recording (stages with autoParticipantRecordingConfiguration).
    private var recordings: ParticipantRecordings?
    /// Each recorded participant's recording fields, merged into its stored record.
    private var recordingFields: [ParticipantRecordingKey: (state: ParticipantRecordingState, bucket: String, prefix: String)] = [:]
    /// Each recorded participant's current recording (its full prefix).
    private var recordingPrefixes: [ParticipantRecordingKey: String] = [:]
    private var buckets: BucketService?
    /// Participant replication: each replica, and the replication fields of the participants
    /// involved (SOURCE on the source stage, REPLICA on the destination).
    struct ReplicaKey: Hashable { var source: String, destination: String, participantId: String }
    private var replicaState: [ReplicaKey: (replica: ParticipantReplica, forwarder: ReplicaForwarder)] = [:]
    /// Per participant, the tickets of its writes: the next to hand out, and the one writing (`inOrder`).
    private var participantWrites: [ParticipantRecordingKey: (next: UInt64, serving: UInt64)] = [:]
    private let participantWritten = ChangeSignal()
    /// Each replica's share of its destination stage's node (fleet), given back when it ends.
    private var replicaReservations: [ReplicaKey: StageReservation] = [:]
    private var replicationFields: [ParticipantRecordingKey: (type: ReplicationType, state: ReplicationState?, sourceStageArn: String?,
                                                              sourceSessionId: String?)] = [:]

    public init(configuration: ServerConfiguration, store: Store, events: any EventSink, hub: LiveStageHub,
                wallClock: @escaping @Sendable () -> Date = Date.init, metrics: ServerMetrics? = nil,
                ownership: any StageOwnership = SingleNodeOwnership(), logger: Logger) {
        self.ownership = ownership
        self.metrics = metrics
        self.configuration = configuration
        arnContext = ARNContext(region: configuration.region, account: configuration.account)!
        self.store = store
        catalog = StageCatalog(configuration: configuration, store: store)
        self.events = events
        self.hub = hub
        self.wallClock = wallClock
        self.logger = logger
        builder = CompositionEventBuilder(region: configuration.region, account: configuration.account,
                                          secondsSince1970: { Int64(wallClock().timeIntervalSince1970.rounded(.down)) })
        book = StageSessionBook(makeSessionID: {
            var generator = SystemRandomNumberGenerator()
            return StageSessionID.generate(using: &generator)
        })
        (inbox, inboxContinuation) = AsyncStream.makeStream()
    }

    // MARK: Service

    public func run() async throws {
        await withGracefulShutdownHandler {
            for await message in inbox { await handle(message) }
        } onGracefulShutdown: { [inboxContinuation] in
            // The ingest server (shut down first) has closed every connection and queued
            // their ends; handle those, then stop.
            inboxContinuation.finish()
        }
    }

    /// Closes the sessions the previous run left open (a crash or kill): their participants
    /// left when the daemon stopped. Also forgets sessions past their retention. In a fleet,
    /// open sessions are other nodes' live ones: only `takeOver` closes them.
    public func restore() async {
        let now = seconds()
        do {
            if !ownership.isFleet {
                for stored in try await store.openStageSessions() { try await close(stored, at: now) }
            }
            try await store.pruneStageSessions(endedBefore: now - Self.sessionRetentionSeconds)
        } catch {
            logger.error("cannot restore stage sessions", metadata: ["error": "\(error)"])
        }
    }

    /// Closes the open sessions of `stages`, which a node that is gone held: its publishers
    /// left, their recordings are finalized. Returns how many sessions.
    @discardableResult
    public func takeOver(stages: [String]) async -> Int {
        let wanted = Set(stages)
        var closed = 0
        do {
            for stored in try await store.openStageSessions() where wanted.contains(stored.stageArn) {
                try await close(stored, at: seconds())
                closed += 1
            }
        } catch {
            logger.error("cannot close the stage sessions of a lost node", metadata: ["error": "\(error)"])
        }
        return closed
    }

    /// An open session whose node is gone: recordings finalized, connected participants
    /// DISCONNECTED with Publish Stopped and Left events, the session ended.
    private func close(_ stored: StoredStageSession, at now: Int64) async throws {
        guard let sessionId = stored.session.sessionId else { return }
        for participant in try await store.participants(stageArn: stored.stageArn, sessionId: sessionId)
        where [.starting, .active, .stopping].contains(participant.participant.recordingState) {
            await recoverRecording(participant, restartedAt: wallClock())
        }
        for var participant in try await store.participants(stageArn: stored.stageArn, sessionId: sessionId)
        where participant.participant.state == .connected {
            participant.participant.state = .disconnected
            try await store.putParticipant(participant)
            for name in [APIModels.ParticipantEventName.publishStopped, .left] {
                try await store.appendParticipantEvent(stageArn: stored.stageArn, sessionId: sessionId, ParticipantEvent(
                    name: name, participantId: participant.participant.participantId, eventTime: APITimestamp(secondsSince1970: now)))
            }
        }
        var ended = stored
        ended.session.endTime = APITimestamp(secondsSince1970: now)
        try await store.putStageSession(ended)
        logger.notice("stage session left open by a run that is gone is closed",
                      metadata: ["stage.arn": "\(stored.stageArn)", "session.id": "\(sessionId)"])
    }

    enum PublisherClaim {
        /// The stage is this node's: the publisher joins it, holding this reservation.
        case local(StageReservation)
        /// The stage is on another node.
        case remote(FleetPeer)
        case refused(IngestAdmissionDecision)
    }

    /// Reserves a publisher's share of the stage's node, placing the stage here when nowhere yet.
    private func claimPublisher(stageArn: String, logger: Logger, participantId: String, userId: String) async -> PublisherClaim {
        do {
            switch try await ownership.claim(stageArn: stageArn, millicores: PlacementCost.publishers(1), preferLocal: true,
                                             forwarded: false) {
            case .local(let reservation): return .local(reservation)
            case .remote(let peer): return .remote(peer)
            }
        } catch {
            let code: IngestPublishError = error.code == .serviceQuotaExceeded ? .quotaExceeded : .internalServerException
            return .refused(refuse(code, error.message, logger: logger, stage: stageArn, participantId: participantId, userId: userId))
        }
    }

    /// An RTMP publisher of a stage on another node: kept here, its media relayed to the owner
    /// with its own stream key (encoders do not follow redirects). The owner records it as
    /// the stage's participant; this node only carries the connection.
    private func relay(_ request: IngestAdmissionRequest, configuration config: IngestConfiguration, ingestArn: String, to peer: FleetPeer,
                       key: StreamKey, disconnect: @escaping @Sendable (String) -> Void, logger: Logger) -> IngestAdmissionDecision {
        guard let base = peer.rtmpURL else {
            return refuse(.internalServerException, "stage \(config.stageArn) is on node \(peer.nodeId), which takes no RTMP",
                          logger: logger, stage: config.stageArn, participantId: config.participantId, userId: config.userId ?? "")
        }
        let identity = LiveParticipantIdentity(participantId: config.participantId, userId: config.userId ?? "",
                                               attributes: config.attributes ?? [:])
        // Its own namespace on this node's hub: nothing here composes a relayed publisher.
        let publisher = hub.join(stageArn: "relay:" + config.stageArn, identity: identity, disconnect: disconnect)
        let publication = Publication(publisher: publisher, runtime: self)
        let relay = RTMPRelay(publisher: publisher, url: "\(base)/\(request.streamKey)", displayURL: "\(base)/\(key.redacted)",
                              logger: logger) { failure in
            guard let failure else { return }
            logger.warning("relay to the stage's node ended; disconnecting the publisher", metadata: ["reason": "\(failure)"])
            disconnect("the stage's node ended the relay: \(failure)")
        }
        connections[ingestArn] = Connection(publication: publication, stageArn: config.stageArn, participantId: config.participantId,
                                            ingestConfigurationArn: ingestArn, relay: relay)
        logger.info("publisher relayed to the stage's node", metadata: ["stage.arn": "\(config.stageArn)", "node": "\(peer.nodeId)",
                                                                         "participant.id": "\(config.participantId)"])
        return .accepted(publication)
    }

    // MARK: IngestAdmission

    public nonisolated func admit(_ request: IngestAdmissionRequest, disconnect: @escaping @Sendable (String) -> Void,
                                  decide: @escaping @Sendable (IngestAdmissionDecision) -> Void) {
        if case .terminated = inboxContinuation.yield(.admit(request, disconnect: disconnect, decide: decide)) {
            decide(.refused(.internalServerException, reason: "the server is shutting down"))
        }
    }

    /// Decides whether a WHIP publisher whose token verified may publish (the stage exists and
    /// is live, the participant is not publishing already, the quota allows it).
    public nonisolated func admit(_ participant: TokenParticipant, remoteAddress: String,
                                  disconnect: @escaping @Sendable (String) -> Void) async -> IngestAdmissionDecision {
        await withCheckedContinuation { continuation in
            let message = Message.admitToken(participant, remoteAddress: remoteAddress, disconnect: disconnect,
                                             decide: { continuation.resume(returning: $0) })
            if case .terminated = inboxContinuation.yield(message) {
                continuation.resume(returning: .refused(.internalServerException, reason: "the server is shutting down"))
            }
        }
    }

    /// A WHIP publisher with a genuine token was turned away before admission (an expired or
    /// subscribe-only token, an offer without the codecs it needs): the stage hears of it.
    public nonisolated func refused(_ participant: TokenParticipant, _ error: IngestPublishError, reason: String) {
        inboxContinuation.yield(.tokenRefused(participant, error, reason: reason))
    }

    private func handle(_ message: Message) async {
        switch message {
        case .admit(let request, let disconnect, let decide):
            let decision = await admission(request, disconnect: disconnect)
            record(decision)
            decide(decision)
        case .admitToken(let participant, let remoteAddress, let disconnect, let decide):
            let decision = await admission(participant, remoteAddress: remoteAddress, disconnect: disconnect)
            record(decision)
            decide(decision)
        case .tokenRefused(let participant, let error, let reason):
            metrics?.ingestRefused(code: error.rawValue)
            var refusalLogger = logger
            refusalLogger[metadataKey: "ingest.transport"] = "WHIP"
            _ = refuse(error, reason, logger: refusalLogger, stage: participant.stageArn, participantId: participant.participantId,
                       userId: participant.userId)
        case .failed(let publication, let error, let reason):
            metrics?.ingestPublishError(code: error.rawValue)
            await publishFailed(publication, error: error, reason: reason)
        case .ended(let publication, let reason):
            await publicationEnded(publication, reason: reason)
            metrics?.livePublishers.record(connections.count)
        }
    }

    private func record(_ decision: IngestAdmissionDecision) {
        switch decision {
        case .accepted: metrics?.ingestAdmitted.increment()
        case .refused(let error, _): metrics?.ingestRefused(code: error.rawValue)
        }
        metrics?.livePublishers.record(connections.count)
    }

    private func admission(_ request: IngestAdmissionRequest, disconnect: @escaping @Sendable (String) -> Void) async
        -> IngestAdmissionDecision {
        var requestLogger = logger
        requestLogger[metadataKey: "ingest.remote"] = "\(request.remoteAddress)"
        guard let key = StreamKey(parsing: request.streamKey), key.account == arnContext.account, key.region == arnContext.region,
              let arn = IVSARN(region: key.region, account: key.account, resourceType: .ingestConfiguration,
                               resourceID: key.ingestConfigurationID)?.description else {
            requestLogger.notice("publish refused: not a stream key of this server",
                                 metadata: ["ingest.key.length": "\(request.streamKey.utf8.count)"])
            return .refused(.invalidStreamKey, reason: "not a stream key of this server")
        }
        requestLogger[metadataKey: "ingest.key"] = "\(key.redacted)"
        let stored: StoredIngestConfiguration?
        do { stored = try await store.ingestConfiguration(arn: arn) } catch {
            requestLogger.error("publish refused: the state store failed", metadata: ["error": "\(error)"])
            return .refused(.internalServerException, reason: "state store unavailable")
        }
        guard let stored else { return refuse(.invalidStreamKey, "no ingest configuration \(arn)", logger: requestLogger) }
        let config = stored.configuration
        let userId = config.userId ?? ""
        guard let storedKey = StreamKey(parsing: config.streamKey), Self.constantTimeEqual(storedKey.secret, key.secret) else {
            return refuse(.invalidStreamKey, "wrong stream key for \(arn)", logger: requestLogger,
                          stage: config.stageArn, participantId: config.participantId, userId: userId)
        }
        guard !config.stageArn.isEmpty else {
            return refuse(.invalidStreamKey, "ingest configuration \(arn) has no stage", logger: requestLogger)
        }
        let stage: ResolvedStage?
        do { stage = try await catalog.stage(arn: config.stageArn) } catch {
            return .refused(.internalServerException, reason: "state store unavailable")
        }
        guard let stage else {
            return refuse(.invalidStreamKey, "stage \(config.stageArn) of \(arn) does not exist", logger: requestLogger)
        }
        guard stage.sourcePath == nil else {
            return refuse(.invalidStreamKey, "stage \(config.stageArn) is a recorded stage", logger: requestLogger,
                          stage: config.stageArn, participantId: config.participantId, userId: userId)
        }
        if request.transport == .rtmp && !stored.insecureIngest {
            return refuse(.invalidProtocol, "ingest configuration \(arn) requires RTMPS", logger: requestLogger,
                          stage: config.stageArn, participantId: config.participantId, userId: userId)
        }
        if connections[arn] != nil {
            return refuse(.reuseOfStreamKey, "the stream key of \(arn) is already publishing", logger: requestLogger,
                          stage: config.stageArn, participantId: config.participantId, userId: userId)
        }
        let publishing = book.connectedCount(stageArn: config.stageArn)
        guard publishing < configuration.quotas.publishersPerStage else {
            return refuse(.quotaExceeded, "stage \(config.stageArn) has \(publishing) publishers, the quota is \(configuration.quotas.publishersPerStage)",
                          logger: requestLogger, stage: config.stageArn, participantId: config.participantId, userId: userId)
        }

        let reservation: StageReservation
        switch await claimPublisher(stageArn: config.stageArn, logger: requestLogger, participantId: config.participantId, userId: userId) {
        case .local(let held): reservation = held
        case .refused(let decision): return decision
        case .remote(let peer):
            guard connections[arn] == nil else {
                return refuse(.reuseOfStreamKey, "the stream key of \(arn) is already publishing", logger: requestLogger,
                              stage: config.stageArn, participantId: config.participantId, userId: userId)
            }
            return relay(request, configuration: config, ingestArn: arn, to: peer, key: key, disconnect: disconnect, logger: requestLogger)
        }
        guard connections[arn] == nil else {
            await ownership.release(reservation)
            return refuse(.reuseOfStreamKey, "the stream key of \(arn) is already publishing", logger: requestLogger,
                          stage: config.stageArn, participantId: config.participantId, userId: userId)
        }
        let identity = LiveParticipantIdentity(participantId: config.participantId, userId: userId, attributes: config.attributes ?? [:])
        let publisher = hub.join(stageArn: config.stageArn, identity: identity, disconnect: disconnect)
        let publication = Publication(publisher: publisher, runtime: self)
        connections[arn] = Connection(publication: publication, stageArn: config.stageArn, participantId: config.participantId,
                                      ingestConfigurationArn: arn, reservation: reservation)
        await apply(book.joinAndPublish(stageArn: config.stageArn, participantId: config.participantId, userId: userId,
                                        attributes: config.attributes ?? [:], transport: request.transport.rawValue,
                                        ingestConfigurationArn: arn, at: seconds()))
        await startRecording(publisher, stage: stage.stage, logger: requestLogger)
        requestLogger.info("publisher joined the stage", metadata: ["stage.arn": "\(config.stageArn)",
                                                                    "participant.id": "\(config.participantId)",
                                                                    "ingest.transport": "\(request.transport.rawValue)"])
        return .accepted(publication)
    }

    private func admission(_ participant: TokenParticipant, remoteAddress: String,
                           disconnect: @escaping @Sendable (String) -> Void) async -> IngestAdmissionDecision {
        var requestLogger = logger
        requestLogger[metadataKey: "ingest.remote"] = "\(remoteAddress)"
        requestLogger[metadataKey: "ingest.transport"] = "WHIP"
        let stageArn = participant.stageArn, participantId = participant.participantId, userId = participant.userId
        let stage: ResolvedStage?
        do { stage = try await catalog.stage(arn: stageArn) } catch {
            requestLogger.error("publish refused: the state store failed", metadata: ["error": "\(error)"])
            return .refused(.internalServerException, reason: "state store unavailable")
        }
        guard let stage else {
            return refuse(.invalidInput, "stage \(stageArn) of the participant token does not exist", logger: requestLogger)
        }
        guard stage.sourcePath == nil else {
            return refuse(.invalidInput, "stage \(stageArn) is a recorded stage", logger: requestLogger,
                          stage: stageArn, participantId: participantId, userId: userId)
        }
        let key = "whip:\(stageArn)/\(participantId)"
        if connections[key] != nil || book.isConnected(stageArn: stageArn, participantId: participantId) {
            return refuse(.reuseOfStreamKey, "participant \(participantId) is already publishing on \(stageArn) (each token joins once at a time)",
                          logger: requestLogger, stage: stageArn, participantId: participantId, userId: userId)
        }
        let publishing = book.connectedCount(stageArn: stageArn)
        guard publishing < configuration.quotas.publishersPerStage else {
            return refuse(.quotaExceeded, "stage \(stageArn) has \(publishing) publishers, the quota is \(configuration.quotas.publishersPerStage)",
                          logger: requestLogger, stage: stageArn, participantId: participantId, userId: userId)
        }
        let reservation: StageReservation
        switch await claimPublisher(stageArn: stageArn, logger: requestLogger, participantId: participantId, userId: userId) {
        case .local(let held): reservation = held
        case .refused(let decision): return decision
        case .remote(let peer):
            // The WHIP endpoint redirects to the owner before admission; the stage moved meanwhile.
            return refuse(.internalServerException, "stage \(stageArn) is now on node \(peer.nodeId): publish again",
                          logger: requestLogger, stage: stageArn, participantId: participantId, userId: userId)
        }
        guard connections[key] == nil else {
            await ownership.release(reservation)
            return refuse(.reuseOfStreamKey, "participant \(participantId) is already publishing on \(stageArn)", logger: requestLogger,
                          stage: stageArn, participantId: participantId, userId: userId)
        }
        let identity = LiveParticipantIdentity(participantId: participantId, userId: userId, attributes: participant.attributes)
        let publisher = hub.join(stageArn: stageArn, identity: identity, disconnect: disconnect)
        let publication = Publication(publisher: publisher, runtime: self)
        connections[key] = Connection(publication: publication, stageArn: stageArn, participantId: participantId, ingestConfigurationArn: nil,
                                      tokenExpiresAt: participant.expiresAt, tokenKeyArn: participant.keyArn, reservation: reservation)
        await apply(book.joinAndPublish(stageArn: stageArn, participantId: participantId, userId: userId,
                                        attributes: participant.attributes, transport: IngestTransport.whip.rawValue,
                                        ingestConfigurationArn: nil, at: seconds()))
        await startRecording(publisher, stage: stage.stage, logger: requestLogger)
        requestLogger.info("publisher joined the stage", metadata: ["stage.arn": "\(stageArn)", "participant.id": "\(participantId)"])
        return .accepted(publication)
    }

    /// Logs a refusal and, when the key names a stage, tells the stage (Participant Publish Error).
    private func refuse(_ error: IngestPublishError, _ reason: String, logger: Logger, stage: String? = nil,
                        participantId: String? = nil, userId: String = "") -> IngestAdmissionDecision {
        if let stage, !stage.isEmpty, let participantId {
            // Paced per participant and per address: a flood of refusals is counted, not told.
            let address = logger[metadataKey: "ingest.remote"].map { RefusalEventLimiter.host(of: "\($0)") }
            if refusalEvents.admitEvent(participant: "\(stage)/\(participantId)", address: address, at: wallClockMicroseconds()) {
                logger.notice("publish refused", metadata: ["error.code": "\(error.rawValue)", "reason": "\(reason)"])
                let effects = book.refused(stageArn: stage, participantId: participantId, userId: userId, errorCode: error.rawValue)
                Task { await self.apply(effects) }
            } else {
                metrics?.ingestRefusalEventsSuppressed.increment()
                logger.debug("publish refused (its event suppressed: too many refusals)",
                             metadata: ["error.code": "\(error.rawValue)", "reason": "\(reason)"])
            }
        } else {
            // No stage to tell (a key that is not ours): only the log, paced per address.
            let address = logger[metadataKey: "ingest.remote"].map { RefusalEventLimiter.host(of: "\($0)") } ?? "?"
            let level: Logger.Level = refusalEvents.admitEvent(participant: "no-stage@\(address)", address: address,
                                                               at: wallClockMicroseconds()) ? .notice : .debug
            logger.log(level: level, "publish refused", metadata: ["error.code": "\(error.rawValue)", "reason": "\(reason)"])
        }
        return .refused(error, reason: reason)
    }

    private func publishFailed(_ publication: Publication, error: IngestPublishError, reason: String) async {
        guard let connection = connections.values.first(where: { $0.publication === publication }) else { return }
        logger.warning("publisher broke a rule; disconnecting", metadata: [
            "stage.arn": "\(connection.stageArn)", "participant.id": "\(connection.participantId)",
            "error.code": "\(error.rawValue)", "reason": "\(reason)"])
        await apply(book.publishError(stageArn: connection.stageArn, participantId: connection.participantId,
                                      errorCode: error.rawValue, at: seconds()))
    }

    private func publicationEnded(_ publication: Publication, reason: String) async {
        guard let (arn, connection) = connections.first(where: { $0.value.publication === publication }) else { return }
        connections[arn] = nil
        publication.publisher.leave()
        if let relay = connection.relay {
            relay.stop()
            logger.info("relayed publisher left", metadata: ["stage.arn": "\(connection.stageArn)", "reason": "\(reason)"])
            return
        }
        await apply(book.leave(stageArn: connection.stageArn, participantId: connection.participantId, at: seconds()))
        if let reservation = connection.reservation { await ownership.release(reservation) }
        logger.info("publisher left the stage", metadata: ["stage.arn": "\(connection.stageArn)",
                                                           "participant.id": "\(connection.participantId)", "reason": "\(reason)"])
    }

    /// Persists, then publishes, in order.
    private func apply(_ effects: [StageSessionEffect]) async {
        for effect in effects {
            do {
                switch effect {
                case .saveSession(let record):
                    try await store.putStageSession(StoredStageSession(stageArn: record.stageArn, session: StageSession(
                        sessionId: record.sessionId, startTime: APITimestamp(secondsSince1970: record.startTime),
                        endTime: record.endTime.map { APITimestamp(secondsSince1970: $0) })))
                case .saveParticipant(let p):
                    var participant = Participant(
                        participantId: p.participantId, userId: p.userId, state: p.isConnected ? .connected : .disconnected,
                        firstJoinTime: APITimestamp(secondsSince1970: p.firstJoinTime), attributes: p.attributes,
                        published: p.hasPublished, protocol: ParticipantProtocol(rawValue: p.transport) ?? .unknown,
                        ingestConfigurationArn: p.ingestConfigurationArn)
                    let key = ParticipantRecordingKey(stageArn: p.stageArn, sessionId: p.sessionId, participantId: p.participantId)
                    if let fields = recordingFields[key] {
                        participant.recordingState = fields.state
                        participant.recordingS3BucketName = fields.bucket
                        participant.recordingS3Prefix = fields.prefix
                    }
                    if let fields = replicationFields[key] { Self.apply(fields, to: &participant) }
                    let stored = StoredParticipant(stageArn: p.stageArn, sessionId: p.sessionId, participant: participant,
                                                   recordingPrefix: recordingPrefixes[key])
                    try await inOrder(key) { try await store.putParticipant(stored) }
                case .appendEvent(let stageArn, let sessionId, let event):
                    try await store.appendParticipantEvent(stageArn: stageArn, sessionId: sessionId, ParticipantEvent(
                        name: APIModels.ParticipantEventName(rawValue: event.name.rawValue), participantId: event.participantId,
                        eventTime: APITimestamp(secondsSince1970: event.time),
                        errorCode: event.errorCode.flatMap(EventErrorCode.init(rawValue:))))
                case .notify(let notification):
                    await events.publish(stageUpdate(notification))
                }
            } catch {
                logger.error("stage state could not be persisted", metadata: ["error": "\(error)"])
            }
        }
    }

    private func stageUpdate(_ notification: StageNotification) -> IVSEvent {
        switch notification {
        case .published(let stage, let session, let user, let participant):
            builder.stageUpdate(.participantPublished, stageArn: stage, sessionId: session, userId: user, participantId: participant)
        case .unpublished(let stage, let session, let user, let participant):
            builder.stageUpdate(.participantUnpublished, stageArn: stage, sessionId: session, userId: user, participantId: participant)
        case .publishError(let stage, let session, let user, let participant, let code):
            builder.stageUpdate(.participantPublishError, stageArn: stage, sessionId: session, userId: user,
                                participantId: participant, errorCode: code)
        }
    }

    // MARK: Individual participant recording

    /// Starts recording individual participants (once, at start-up).
    public func enableParticipantRecording(buckets: BucketService) {
        self.buckets = buckets
        recordings = ParticipantRecordings(buckets: buckets, logger: logger) { [weak self] key, change in
            guard let self else { return }
            Task { await self.recordingChanged(key, change) }
        }
    }

    /// A publisher on a stage with autoParticipantRecordingConfiguration: record it.
    private func startRecording(_ publisher: LivePublisher, stage: Stage, logger requestLogger: Logger) async {
        let stageArn = stage.arn
        guard let recordings, let configuration = stage.autoParticipantRecordingConfiguration,
              !configuration.storageConfigurationArn.isEmpty, let sessionId = book.activeSession(stageArn: stageArn) else { return }
        let key = ParticipantRecordingKey(stageArn: stageArn, sessionId: sessionId, participantId: publisher.identity.participantId)
        let bucket: String?
        do { bucket = try await store.storageConfiguration(arn: configuration.storageConfigurationArn)?.s3?.bucketName } catch {
            bucket = nil
        }
        guard let bucket, isConfigured(bucket: bucket) else {
            requestLogger.error("participant recording cannot start: no such storage configuration or bucket",
                                metadata: ["storage.arn": "\(configuration.storageConfigurationArn)"])
            recordingFields[key] = (.failed, bucket ?? "", "")
            await saveRecordingFields(key)
            await events.publish(builder.participantRecording(.recordingStartFailure, stageArn: stageArn, sessionId: sessionId,
                                                              participantId: key.participantId, bucket: bucket ?? "", keyPrefix: ""))
            return
        }
        if recordingFields[key]?.state != .stopping { recordingFields[key] = (.starting, bucket, recordingFields[key]?.prefix ?? "") }
        await saveRecordingFields(key)
        recordings.publisherJoined(publisher, stageArn: stageArn, sessionId: sessionId, bucket: bucket, configuration: configuration,
                                   now: wallClock())
    }

    private func isConfigured(bucket: String) -> Bool { configuration.buckets[bucket] != nil }

    /// A recording the previous run was writing when it died: its playlist rebuilt as VOD from
    /// the stored segments, recording-failed.json, FAILED on the participant, and the event.
    private func recoverRecording(_ stored: StoredParticipant, restartedAt: Date) async {
        var updated = stored
        updated.participant.recordingState = .failed
        let bucket = stored.participant.recordingS3BucketName ?? ""
        let participantId = stored.participant.participantId ?? ""
        var durationMs: Int64 = 0
        if let prefix = stored.recordingPrefix, let storage = buckets?.storage(bucket: bucket) {
            do {
                let result = try await ParticipantRecordingRecovery.finalize(prefix: prefix, storage: storage, stageArn: stored.stageArn,
                                                                             restartedAt: restartedAt,
                                                                             reason: "the daemon stopped while recording", logger: logger)
                durationMs = result.durationMs
                logger.notice("participant recording finalized after a restart", metadata: [
                    "participant.id": "\(participantId)", "recording.prefix": "\(prefix)", "segments": "\(result.segments)",
                    "duration_ms": "\(result.durationMs)"])
            } catch {
                logger.error("participant recording could not be finalized", metadata: ["recording.prefix": "\(prefix)", "error": "\(error)"])
            }
        }
        do { try await store.putParticipant(updated) } catch {
            logger.error("participant recording state could not be persisted", metadata: ["error": "\(error)"])
        }
        await events.publish(builder.participantRecording(.recordingEndFailure, stageArn: stored.stageArn, sessionId: stored.sessionId,
                                                          participantId: participantId, bucket: bucket,
                                                          keyPrefix: stored.recordingPrefix ?? "", durationMs: durationMs))
    }

    /// A recording's state changed: persisted on the participant, and the event sent.
    func recordingChanged(_ key: ParticipantRecordingKey, _ change: ParticipantRecordingChange) async {
        switch change {
        case .active(let bucket, let prefix, let participantPrefix, let first):
            recordingFields[key] = (.active, bucket, participantPrefix)
            recordingPrefixes[key] = prefix
            await saveRecordingFields(key)
            if first {
                await events.publish(builder.participantRecording(.recordingStart, stageArn: key.stageArn, sessionId: key.sessionId,
                                                                  participantId: key.participantId, bucket: bucket, keyPrefix: prefix))
            }
        case .stopping:
            if let fields = recordingFields[key] { recordingFields[key] = (.stopping, fields.bucket, fields.prefix) }
            await saveRecordingFields(key)
        case .ended(let outcome, let bucket, let prefix):
            let failed = outcome.status == .recordingEndedWithFailure
            let fields = recordingFields[key]
            recordingFields[key] = (failed ? .failed : .stopped, bucket, fields?.prefix ?? "")
            await saveRecordingFields(key)
            await events.publish(builder.participantRecording(failed ? .recordingEndFailure : .recordingEnd, stageArn: key.stageArn,
                                                              sessionId: key.sessionId, participantId: key.participantId,
                                                              bucket: bucket, keyPrefix: prefix, durationMs: outcome.durationMs))
        }
    }

    private func saveRecordingFields(_ key: ParticipantRecordingKey) async {
        do {
            // Read and written back in turn with the participant's other writes: a read made
            // before a leave was stored must not be written back after it (PostgreSQL runs the
            // actor's overlapping store calls on different connections).
            try await inOrder(key) {
                guard var stored = try await store.participant(stageArn: key.stageArn, sessionId: key.sessionId,
                                                               participantId: key.participantId) else { return }
                if let fields = recordingFields[key] {
                    stored.participant.recordingState = fields.state
                    stored.participant.recordingS3BucketName = fields.bucket
                    stored.participant.recordingS3Prefix = fields.prefix
                }
                if let fields = replicationFields[key] { Self.apply(fields, to: &stored.participant) }
                stored.recordingPrefix = recordingPrefixes[key] ?? stored.recordingPrefix
                try await store.putParticipant(stored)
            }
        } catch {
            logger.error("participant recording state could not be persisted", metadata: ["error": "\(error)"])
        }
    }

    /// Runs `write` once every write of the same participant begun before it has finished, so
    /// a participant's writes reach the store in the order they were made: the actor is
    /// reentrant at each store call, and two writes in flight could otherwise land reversed.
    private func inOrder(_ key: ParticipantRecordingKey, _ write: () async throws -> Void) async throws {
        var queue = participantWrites[key] ?? (next: 0, serving: 0)
        let ticket = queue.next
        queue.next &+= 1
        participantWrites[key] = queue
        while participantWrites[key]?.serving != ticket, !Task.isCancelled {
            let seen = participantWritten.generation
            if participantWrites[key]?.serving == ticket { break }
            await participantWritten.changed(after: seen)
        }
        defer {
            if var queue = participantWrites[key] {
                queue.serving &+= 1
                participantWrites[key] = queue.serving == queue.next ? nil : queue
            }
            participantWritten.signal()
        }
        try await write()
    }

    // MARK: Participant replication

    private static func apply(_ fields: (type: ReplicationType, state: ReplicationState?, sourceStageArn: String?, sourceSessionId: String?),
                              to participant: inout Participant) {
        participant.replicationType = fields.type
        participant.replicationState = fields.state
        participant.sourceStageArn = fields.sourceStageArn
        participant.sourceSessionId = fields.sourceSessionId
    }

    /// StartParticipantReplication: the source participant must be publishing now, and be no
    /// replica itself (so replicas never form a cycle: media would go round it for ever); the
    /// destination must have room under `quotas.publishersPerStage`.
    func startReplication(_ request: StartParticipantReplicationRequest, destination: Stage) async throws(APIError) {
        let key = ReplicaKey(source: request.sourceStageArn, destination: request.destinationStageArn, participantId: request.participantId)
        guard replicaState[key] == nil else {
            throw .conflict("participant \(request.participantId) is already replicated to \(request.destinationStageArn)")
        }
        guard let source = hub.publishers(stageArn: request.sourceStageArn).first(where: { $0.identity.participantId == request.participantId }),
              let sourceSession = book.activeSession(stageArn: request.sourceStageArn) else {
            throw .resourceNotFound("participant \(request.participantId) is not publishing on \(request.sourceStageArn)")
        }
        if let origin = source.identity.replicaOf {
            throw .conflict("participant \(request.participantId) on \(request.sourceStageArn) is a replica of \(origin); "
                            + "replicate it from \(origin), its source stage")
        }
        if let path = ReplicationGraph(edges: replicaState.keys.filter { $0.participantId == request.participantId }
                                                .map { ($0.source, $0.destination) })
            .path(from: request.destinationStageArn, to: request.sourceStageArn) {
            throw .conflict("replicating participant \(request.participantId) from \(request.sourceStageArn) to "
                            + "\(request.destinationStageArn) would close a cycle of replicas (\(path.joined(separator: " → ")))")
        }
        guard !book.isConnected(stageArn: request.destinationStageArn, participantId: request.participantId) else {
            throw .conflict("participant \(request.participantId) is already on \(request.destinationStageArn)")
        }
        let publishing = book.connectedCount(stageArn: request.destinationStageArn)
        guard publishing < configuration.quotas.publishersPerStage else {
            throw .serviceQuotaExceeded("destinationStageArn: stage \(request.destinationStageArn) has \(publishing) publishers, "
                                        + "the quota (quotas.publishersPerStage) is \(configuration.quotas.publishersPerStage)")
        }
        // The replica joins the destination here, on the source's node: in a fleet the
        // destination is placed here too (it costs a publisher), or the call is refused.
        let reservation: StageReservation
        switch try await ownership.claim(stageArn: request.destinationStageArn, millicores: PlacementCost.publishers(1),
                                         preferLocal: true, forwarded: true) {
        case .local(let held): reservation = held
        case .remote(let peer):
            throw .conflict("destinationStageArn: stage \(request.destinationStageArn) runs on node \(peer.nodeId) and the source "
                            + "\(request.sourceStageArn) on this one; a replica is made on its source's node, so replicate to a stage "
                            + "before it is placed elsewhere (before its first publisher or composition)")
        }
        replicaReservations[key] = reservation
        let attributes = request.attributes ?? [:]
        let identity = LiveParticipantIdentity(participantId: request.participantId, userId: source.identity.userId, attributes: attributes,
                                               replicaOf: request.sourceStageArn)
        let forwarder = ReplicaForwarder()
        // DisconnectParticipant and DeleteStage reach a replica through the hub, as they reach
        // any publisher: the forwarder stops and the replica leaves.
        let replica = hub.join(stageArn: request.destinationStageArn, identity: identity, disconnect: { _ in forwarder.stop() })
        await apply(book.joinAndPublish(stageArn: request.destinationStageArn, participantId: request.participantId,
                                        userId: source.identity.userId, attributes: attributes, transport: "",
                                        ingestConfigurationArn: nil, at: seconds()))
        let destinationSession = book.activeSession(stageArn: request.destinationStageArn) ?? ""
        let replicaKey = ParticipantRecordingKey(stageArn: request.destinationStageArn, sessionId: destinationSession,
                                                 participantId: request.participantId)
        let sourceKey = ParticipantRecordingKey(stageArn: request.sourceStageArn, sessionId: sourceSession, participantId: request.participantId)
        replicationFields[replicaKey] = (.replica, .active, request.sourceStageArn, sourceSession)
        replicationFields[sourceKey] = (.source, nil, nil, nil)
        await saveRecordingFields(replicaKey)
        await saveRecordingFields(sourceKey)
        let entry = ParticipantReplica(sourceStageArn: request.sourceStageArn, participantId: request.participantId,
                                       sourceSessionId: sourceSession, destinationStageArn: request.destinationStageArn,
                                       destinationSessionId: destinationSession, replicationState: .active)
        await appendReplicationEvents(.replicationStarted, entry)
        var replicaLogger = logger
        replicaLogger[metadataKey: "participant.id"] = "\(request.participantId)"
        replicaLogger[metadataKey: "replica.destination"] = "\(request.destinationStageArn)"
        forwarder.start(source: source, replica: replica, hub: hub, window: TimeInterval(request.reconnectWindowSeconds ?? 0),
                        logger: replicaLogger) { [weak self] reason in
            guard let self else { return }
            Task { await self.replicationEnded(key, replicaKey: replicaKey, reason: reason) }
        }
        replicaState[key] = (entry, forwarder)
        replicaLogger.info("participant replication started", metadata: ["replica.source": "\(request.sourceStageArn)"])
        if destination.autoParticipantRecordingConfiguration?.recordParticipantReplicas ?? true {
            await startRecording(replica, stage: destination, logger: replicaLogger)
        }
    }

    /// StopParticipantReplication: the replica leaves its destination stage.
    func stopReplication(sourceStageArn: String, destinationStageArn: String, participantId: String) throws(APIError) {
        let key = ReplicaKey(source: sourceStageArn, destination: destinationStageArn, participantId: participantId)
        guard let entry = replicaState[key], entry.replica.replicationState == .active else {
            throw .resourceNotFound("participant \(participantId) of \(sourceStageArn) is not replicated to \(destinationStageArn)")
        }
        replicaState[key]?.replica.replicationState = .stopped
        entry.forwarder.stop()
    }

    /// Ends every replica into or out of a stage (DeleteStage): each stops at once, without
    /// waiting for a reconnect window.
    private func stopReplicas(touching stageArn: String) {
        for (key, entry) in replicaState where key.source == stageArn || key.destination == stageArn {
            replicaState[key]?.replica.replicationState = .stopped
            entry.forwarder.stop()
        }
    }

    /// ListParticipantReplicas: the replicas of one source participant.
    func replicas(sourceStageArn: String, participantId: String) -> [ParticipantReplica] {
        replicaState.filter { $0.key.source == sourceStageArn && $0.key.participantId == participantId }.map(\.value.replica)
    }

    private func replicationEnded(_ key: ReplicaKey, replicaKey: ParticipantRecordingKey, reason: String) async {
        guard let (entry, _) = replicaState.removeValue(forKey: key) else { return }
        if let reservation = replicaReservations.removeValue(forKey: key) { await ownership.release(reservation) }
        await appendReplicationEvents(.replicationStopped, entry)
        await apply(book.leave(stageArn: key.destination, participantId: key.participantId, at: seconds()))
        if let fields = replicationFields[replicaKey] { replicationFields[replicaKey] = (fields.type, .stopped, fields.sourceStageArn, fields.sourceSessionId) }
        await saveRecordingFields(replicaKey)
        logger.info("participant replication ended", metadata: ["participant.id": "\(key.participantId)",
                                                                 "replica.destination": "\(key.destination)", "reason": "\(reason)"])
    }

    /// REPLICATION_STARTED / REPLICATION_STOPPED in the participant's events on both stages:
    /// on the source (`replica` false) and on the destination (`replica` true), each naming
    /// the destination stage and session.
    private func appendReplicationEvents(_ name: APIModels.ParticipantEventName, _ replica: ParticipantReplica) async {
        let time = APITimestamp(secondsSince1970: seconds())
        for (stageArn, sessionId, isReplica) in [(replica.sourceStageArn, replica.sourceSessionId, false),
                                                 (replica.destinationStageArn, replica.destinationSessionId, true)] {
            guard !sessionId.isEmpty else { continue }
            do {
                try await store.appendParticipantEvent(stageArn: stageArn, sessionId: sessionId, ParticipantEvent(
                    name: name, participantId: replica.participantId, eventTime: time,
                    destinationStageArn: replica.destinationStageArn, destinationSessionId: replica.destinationSessionId,
                    replica: isReplica))
            } catch {
                logger.error("stage state could not be persisted", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: For the control plane

    /// Whether the ingest configuration is publishing now (its `state`).
    public func isPublishing(ingestConfigurationArn arn: String) -> Bool { connections[arn] != nil }

    /// The stage's current session ID, if anyone is on it.
    public func activeSessionId(stageArn: String) -> String? { book.activeSession(stageArn: stageArn) }

    /// Closes a publisher's connection (DisconnectParticipant, forced deletes, deleted stages).
    /// False when that participant is not connected. With `revoke` (DisconnectParticipant, as
    /// IVS does) it cannot come back by itself: a WHIP participant's token is refused until it
    /// expires, and an RTMP participant's ingest configuration loses its stage (`stageArn`
    /// empty) so its key is refused until UpdateIngestConfiguration sets one again.
    @discardableResult
    public func disconnect(stageArn: String, participantId: String, reason: String, revoke: Bool = false) async -> Bool {
        guard book.isConnected(stageArn: stageArn, participantId: participantId) else { return false }
        if let (key, entry) = replicaState.first(where: { $0.key.destination == stageArn && $0.key.participantId == participantId }) {
            // A replica: its replication ends (its source is not this stage's to revoke).
            replicaState[key]?.replica.replicationState = .stopped
            entry.forwarder.stop()
            return true
        }
        if revoke, let connection = connections.values.first(where: { $0.stageArn == stageArn && $0.participantId == participantId }) {
            if let arn = connection.ingestConfigurationArn {
                do {
                    if var stored = try await store.ingestConfiguration(arn: arn) {
                        stored.configuration.stageArn = ""
                        try await store.putIngestConfiguration(stored)
                    }
                } catch {
                    logger.error("cannot clear the ingest configuration's stage", metadata: ["ingest.arn": "\(arn)", "error": "\(error)"])
                }
            } else {
                // Kept in the store until the token expires: a restart, and every node of a
                // fleet, refuse it too.
                let now = seconds()
                do {
                    try await store.putRevocation(key: "\(stageArn)/\(participantId)", until: connection.tokenExpiresAt ?? now + 14 * 86_400)
                    try await store.pruneRevocations(expiredBefore: now)
                } catch {
                    logger.error("cannot store the participant's revocation", metadata: [
                        "stage.arn": "\(stageArn)", "participant.id": "\(participantId)", "error": "\(error)"])
                }
            }
        }
        return hub.disconnect(stageArn: stageArn, participantId: participantId, reason: reason)
    }

    /// Whether DisconnectParticipant revoked this WHIP participant (on any node, before any
    /// restart) and its token has not expired. A store that cannot answer refuses: a revoked
    /// token must not get in while the store is away.
    public func isRevoked(stageArn: String, participantId: String) async -> Bool {
        do {
            guard let until = try await store.revocation(key: "\(stageArn)/\(participantId)") else { return false }
            return until > seconds()
        } catch {
            logger.error("cannot read revocations; refusing the participant", metadata: ["error": "\(error)"])
            return true
        }
    }

    /// Ends every WHIP session a deleted public key admitted.
    public func disconnect(publicKeyArn: String, reason: String) {
        for connection in connections.values where connection.tokenKeyArn == publicKeyArn {
            hub.disconnect(stageArn: connection.stageArn, participantId: connection.participantId, reason: reason)
        }
    }

    /// Disconnects every publisher of an ingest configuration (forced delete).
    public func disconnect(ingestConfigurationArn arn: String, reason: String) {
        guard let connection = connections[arn] else { return }
        hub.disconnect(stageArn: connection.stageArn, participantId: connection.participantId, reason: reason)
    }

    /// Disconnects everyone on a stage (DeleteStage), replicas on it included, and ends the
    /// replicas of its participants on other stages.
    public func disconnectAll(stageArn: String, reason: String) {
        stopReplicas(touching: stageArn)
        for connection in connections.values where connection.stageArn == stageArn {
            hub.disconnect(stageArn: stageArn, participantId: connection.participantId, reason: reason)
        }
    }

    // MARK: Helpers

    private func seconds() -> Int64 { Int64(wallClock().timeIntervalSince1970.rounded(.down)) }
    private func wallClockMicroseconds() -> Int64 { Int64((wallClock().timeIntervalSince1970 * 1_000_000).rounded(.down)) }

    /// Compares secrets without an early exit, so timing says nothing about how much matched.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0xFF)
        }
        return difference == 0
    }

    fileprivate nonisolated func report(_ message: Message) {
        inboxContinuation.yield(message)
    }

    /// An admitted publisher, as the ingest connection holds it.
    final class Publication: IngestPublication, @unchecked Sendable {
        let publisher: LivePublisher
        private weak var runtime: StageRuntime?
        private let didEnd = Atomic<Bool>(false)

        init(publisher: LivePublisher, runtime: StageRuntime) {
            self.publisher = publisher
            self.runtime = runtime
        }

        func failed(_ error: IngestPublishError, reason: String) {
            runtime?.report(.failed(self, error, reason: reason))
        }

        func ended(reason: String) {
            guard !didEnd.exchange(true, ordering: .relaxed) else { return }
            if let runtime {
                runtime.report(.ended(self, reason: reason))
            } else {
                publisher.leave()
            }
        }
    }
}
