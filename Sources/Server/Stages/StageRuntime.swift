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
// event loop, and admissions and leaves are applied one at a time, in order. Work it gives
// itself (a refusal's events, a recording's or a replica's end) goes through the inbox too:
// the mailbox alone defines the order. Admission is in StageRuntime+Admission.swift (one path
// for every publisher kind), replication in +Replication, participant recording in +Recording.
import APIModels
import Crypto
import Fleet
import Events
public import EventSinks
public import Foundation
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
        /// One of a redundant participant's two connections (0 primary, 1 backup).
        var redundantFeed: Int? = nil
    }

    enum Message: Sendable {
        case admit(IngestAdmissionRequest, disconnect: @Sendable (String) -> Void, decide: @Sendable (IngestAdmissionDecision) -> Void)
        case admitToken(TokenParticipant, remoteAddress: String, disconnect: @Sendable (String) -> Void,
                        decide: @Sendable (IngestAdmissionDecision) -> Void)
        case tokenRefused(TokenParticipant, IngestPublishError, reason: String)
        case failed(Publication, IngestPublishError, reason: String)
        case ended(Publication, reason: String)
        /// Session-book effects to persist and publish (a refusal's Publish Error event).
        case effects([StageSessionEffect])
        case recordingChanged(ParticipantRecordingKey, ParticipantRecordingChange)
        case replicationEnded(ReplicaEntry.Key, replicaKey: ParticipantRecordingKey, reason: String)
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
    var book: StageSessionBook
    /// By ingest configuration ARN (RTMP) or `whip:<stage ARN>/<participant ID>`.
    var connections: [String: Connection] = [:]
    /// Which refused publishes become Participant Publish Error events (paced).
    var refusalEvents = RefusalEventLimiter()
    private let inbox: AsyncStream<Message>
    private let inboxContinuation: AsyncStream<Message>.Continuation
    /// Individual participant recording (stages with autoParticipantRecordingConfiguration).
    var recordings: ParticipantRecordings?
    var buckets: BucketService?
    /// Each participant's recording and replication fields, merged into its stored record.
    var ledger = ParticipantLedger()
    /// Participant replication: each replica made on this node.
    var replicaEntries: [ReplicaEntry.Key: ReplicaEntry] = [:]
    /// Redundant participants on a stage now, by `<stage ARN>/<participant ID>`.
    var redundant: [String: RedundantEntry] = [:]
    /// Per participant, the tickets of its writes: the next to hand out, and the one writing (`inOrder`).
    private var participantWrites: [ParticipantRecordingKey: (next: UInt64, serving: UInt64)] = [:]
    private let participantWritten = ChangeSignal()

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
        case .effects(let effects):
            await apply(effects)
        case .recordingChanged(let key, let change):
            await recordingChanged(key, change)
        case .replicationEnded(let key, let replicaKey, let reason):
            await replicationEnded(key, replicaKey: replicaKey, reason: reason)
        }
    }

    private func record(_ decision: IngestAdmissionDecision) {
        switch decision {
        case .accepted: metrics?.ingestAdmitted.increment()
        case .refused(let error, _): metrics?.ingestRefused(code: error.rawValue)
        }
        metrics?.livePublishers.record(connections.count)
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
        if let feed = connection.redundantFeed, await !redundantFeedEnded(connection, feed: feed) { return }
        await apply(book.leave(stageArn: connection.stageArn, participantId: connection.participantId, at: seconds()))
        if let reservation = connection.reservation { await ownership.release(reservation) }
        logger.info("publisher left the stage", metadata: ["stage.arn": "\(connection.stageArn)",
                                                           "participant.id": "\(connection.participantId)", "reason": "\(reason)"])
    }

    /// Persists, then publishes, in order.
    func apply(_ effects: [StageSessionEffect]) async {
        for effect in effects {
            do {
                switch effect {
                case .saveSession(let record):
                    try await store.putStageSession(StoredStageSession(stageArn: record.stageArn, session: StageSession(
                        sessionId: record.sessionId, startTime: APITimestamp(secondsSince1970: record.startTime),
                        endTime: record.endTime.map { APITimestamp(secondsSince1970: $0) })))
                case .saveParticipant(let p):
                    var redundant = false
                    if let arn = p.ingestConfigurationArn {
                        redundant = try await store.ingestConfiguration(arn: arn)?.configuration.redundantIngest ?? false
                    }
                    let participant = Participant(
                        participantId: p.participantId, userId: p.userId, state: p.isConnected ? .connected : .disconnected,
                        firstJoinTime: APITimestamp(secondsSince1970: p.firstJoinTime), attributes: p.attributes,
                        published: p.hasPublished, protocol: ParticipantProtocol(rawValue: p.transport) ?? .unknown,
                        ingestConfigurationArn: p.ingestConfigurationArn, redundantIngest: redundant)
                    let key = ParticipantRecordingKey(stageArn: p.stageArn, sessionId: p.sessionId, participantId: p.participantId)
                    var stored = StoredParticipant(stageArn: p.stageArn, sessionId: p.sessionId, participant: participant, recordingPrefix: nil)
                    ledger.decorate(&stored, key: key)
                    try await inOrder(key) { [stored] in try await store.putParticipant(stored) }
                case .appendEvent(let stageArn, let sessionId, let event):
                    try await store.appendParticipantEvent(stageArn: stageArn, sessionId: sessionId, ParticipantEvent(
                        name: APIModels.ParticipantEventName(rawValue: event.name.rawValue), participantId: event.participantId,
                        eventTime: APITimestamp(secondsSince1970: event.time),
                        errorCode: event.errorCode.flatMap(EventErrorCode.init(rawValue:)),
                        previousToken: event.previousToken.map(ExchangedParticipantToken.init),
                        newToken: event.newToken.map(ExchangedParticipantToken.init)))
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

    /// Runs `write` once every write of the same participant begun before it has finished, so
    /// a participant's writes reach the store in the order they were made: the actor is
    /// reentrant at each store call, and two writes in flight could otherwise land reversed.
    func inOrder(_ key: ParticipantRecordingKey, _ write: () async throws -> Void) async throws {
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

    // MARK: For the control plane

    /// Whether the ingest configuration is publishing now (its `state`).
    public func isPublishing(ingestConfigurationArn arn: String) -> Bool {
        connections[arn] != nil || connections[Self.connectionKey(ingestConfigurationArn: arn, feed: RedundantFeedSelector.backup)] != nil
    }

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
        if let key = replicaEntries.keys.first(where: { $0.destination == stageArn && $0.participantId == participantId }) {
            // A replica: its replication ends (its source is not this stage's to revoke).
            replicaEntries[key]?.stop()
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

    /// Whether DisconnectParticipant revoked this WHIP participant, or RevokeConnectionToken
    /// its token (`jti`, the participant ID), on any node and before any restart, and that has
    /// not run out. A store that cannot answer refuses: a revoked token must not get in while
    /// the store is away.
    public func isRevoked(stageArn: String, participantId: String) async -> Bool {
        do {
            let now = seconds()
            for key in ["\(stageArn)/\(participantId)", Self.tokenRevocationKey(participantId)] {
                if let until = try await store.revocation(key: key), until > now { return true }
            }
            return false
        } catch {
            logger.error("cannot read revocations; refusing the participant", metadata: ["error": "\(error)"])
            return true
        }
    }

    static func tokenRevocationKey(_ tokenId: String) -> String { "token/\(tokenId)" }

    /// RevokeConnectionToken: no token with this ID connects again for as long as any token
    /// can live (14 days: CreateParticipantToken's longest, and a self-signed token's too),
    /// and whoever this node admitted with one is disconnected now.
    func revoke(tokenId: String, reason: String) async throws(APIError) {
        let now = seconds()
        do {
            try await store.putRevocation(key: Self.tokenRevocationKey(tokenId), until: now + Int64(ModelLimits.participantTokenDurationMinutes.upperBound) * 60)
            try await store.pruneRevocations(expiredBefore: now)
        } catch {
            throw .internalServer("cannot store the revocation: \(error)")
        }
        for connection in connections.values where connection.ingestConfigurationArn == nil && connection.participantId == tokenId {
            logger.info("participant disconnected: its token was revoked", metadata: [
                "stage.arn": "\(connection.stageArn)", "participant.id": "\(tokenId)"])
            hub.disconnect(stageArn: connection.stageArn, participantId: connection.participantId, reason: reason)
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

    func seconds() -> Int64 { Int64(wallClock().timeIntervalSince1970.rounded(.down)) }
    func wallClockMicroseconds() -> Int64 { Int64((wallClock().timeIntervalSince1970 * 1_000_000).rounded(.down)) }

    /// Compares secrets without an early exit, so timing says nothing about how much matched.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0xFF)
        }
        return difference == 0
    }

    nonisolated func report(_ message: Message) {
        inboxContinuation.yield(message)
    }

    /// An admitted publisher, as the ingest connection holds it.
    final class Publication: IngestPublication, @unchecked Sendable {
        let publisher: LivePublisher
        let stageArn: String
        private weak var runtime: StageRuntime?
        private let didEnd = Atomic<Bool>(false)

        /// `stageArn`: the stage it is on, when its publisher is kept apart (a redundant feed).
        init(publisher: LivePublisher, runtime: StageRuntime, stageArn: String? = nil) {
            self.publisher = publisher
            self.stageArn = stageArn ?? publisher.stageArn
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
