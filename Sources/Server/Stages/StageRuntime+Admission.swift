// Admission: one path for every kind of publisher. An RTMP stream key, a WHIP participant
// token and a participant replica each become a `PublishCandidate`; `admit` takes it through
// lookup → recorded-stage check → protocol → reuse → quota → claim → join → book → recording.
// What is wrong is decided once (`AdmissionRefusal`); each front says it in its own words:
// ingest as a refused publish (logged, a Participant Publish Error event, paced), the API as
// an APIError.
import APIModels
import Fleet
import LiveStage
import Logging
import Persistence
import Stages

/// Someone who wants to publish on a stage, however they came.
struct PublishCandidate {
    enum Kind {
        /// An RTMP(S) publisher with a stream key: its request and the parsed key (for a relay).
        case streamKey(IngestAdmissionRequest, StreamKey)
        /// A WHIP publisher whose participant token verified.
        case token(TokenParticipant)
        /// A participant replica (StartParticipantReplication).
        case replica
    }

    var kind: Kind
    var stageArn: String
    var identity: LiveParticipantIdentity
    /// What the session book and ListParticipants show (`RTMP`, `RTMPS`, `WHIP`; empty for a replica).
    var transport: String
    /// Its entry among the runtime's connections: the ingest configuration's ARN (RTMP) or
    /// `whip:<stage ARN>/<participant ID>`. A replica has none (the replicas are kept apart).
    var connectionKey: String?
    var ingestConfigurationArn: String?
    /// Set when the transport is not allowed for it (RTMP without TLS where RTMPS is required).
    var protocolRefusal: String?
    /// A replica joins a stage that the API call placed on this node (`forwarded`).
    var claimForwarded: Bool

    var participantId: String { identity.participantId }
    var userId: String { identity.userId }
}

/// Why a candidate may not publish: the fact, not the words (each front has its own).
enum AdmissionRefusal: Error {
    case storeFailed(String)
    case stageMissing
    case recordedStage
    case wrongProtocol(String)
    case alreadyPublishing
    case quota(publishing: Int, quota: Int)
    case claimFailed(APIError)
    /// After the claim: the stage is another node's.
    case remote(FleetPeer)
}

/// What `admit` did.
enum Admitted {
    case joined(LivePublisher, ResolvedStage, StageReservation)
}

extension StageRuntime {
    /// The one admission path. `disconnect` is how the hub ends this publisher; `connection`
    /// makes its connection entry (nil: a replica, kept apart). On success the publisher is on
    /// the stage, in the book and (where the stage says so, and `record`) being recorded.
    func admit(_ candidate: PublishCandidate, disconnect: @escaping @Sendable (String) -> Void, record: Bool, logger: Logger,
               connection: ((LivePublisher, StageReservation) -> Connection)?) async -> Result<Admitted, AdmissionRefusal> {
        let stage: ResolvedStage?
        do { stage = try await catalog.stage(arn: candidate.stageArn) } catch {
            logger.error("publish refused: the state store failed", metadata: ["error": "\(error)"])
            return .failure(.storeFailed("\(error)"))
        }
        guard let stage else { return .failure(.stageMissing) }
        guard stage.sourcePath == nil else { return .failure(.recordedStage) }
        if let refusal = candidate.protocolRefusal { return .failure(.wrongProtocol(refusal)) }
        if isTaken(candidate) { return .failure(.alreadyPublishing) }
        let publishing = book.connectedCount(stageArn: candidate.stageArn)
        guard publishing < configuration.quotas.publishersPerStage else {
            return .failure(.quota(publishing: publishing, quota: configuration.quotas.publishersPerStage))
        }
        let reservation: StageReservation
        do {
            switch try await ownership.claim(stageArn: candidate.stageArn, millicores: PlacementCost.publishers(1), preferLocal: true,
                                             forwarded: candidate.claimForwarded) {
            case .local(let held): reservation = held
            case .remote(let peer): return .failure(.remote(peer))
            }
        } catch {
            return .failure(.claimFailed(error))
        }
        // The claim suspended the actor: someone may have taken the place meanwhile.
        guard !isTaken(candidate) else {
            await ownership.release(reservation)
            return .failure(.alreadyPublishing)
        }
        let publisher = hub.join(stageArn: candidate.stageArn, identity: candidate.identity, disconnect: disconnect)
        if let key = candidate.connectionKey, let connection { connections[key] = connection(publisher, reservation) }
        await apply(book.joinAndPublish(stageArn: candidate.stageArn, participantId: candidate.participantId, userId: candidate.userId,
                                        attributes: candidate.identity.attributes, transport: candidate.transport,
                                        ingestConfigurationArn: candidate.ingestConfigurationArn, at: seconds()))
        if record { await startRecording(publisher, stage: stage.stage, logger: logger) }
        return .success(.joined(publisher, stage, reservation))
    }

    /// Whether the candidate's place is taken: its connection (stream key or token) publishes,
    /// or its participant is on the stage already.
    private func isTaken(_ candidate: PublishCandidate) -> Bool {
        if let key = candidate.connectionKey, connections[key] != nil { return true }
        return book.isConnected(stageArn: candidate.stageArn, participantId: candidate.participantId)
    }

    // MARK: RTMP(S): a stream key

    func admission(_ request: IngestAdmissionRequest, disconnect: @escaping @Sendable (String) -> Void) async -> IngestAdmissionDecision {
        var requestLogger = logger
        requestLogger[metadataKey: "ingest.remote"] = "\(request.remoteAddress)"
        requestLogger[metadataKey: "ingest.transport"] = "\(request.transport.rawValue)"
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
        let identity = LiveParticipantIdentity(participantId: config.participantId, userId: config.userId ?? "",
                                               attributes: config.attributes ?? [:])
        // The configuration's key, or (redundant ingest) its backup credential's.
        guard let credential = Self.credential(of: key.secret, in: config) else {
            return refuse(.invalidStreamKey, "wrong stream key for \(arn)", logger: requestLogger,
                          stage: config.stageArn, participantId: identity.participantId, userId: identity.userId)
        }
        guard !config.stageArn.isEmpty else {
            return refuse(.invalidStreamKey, "ingest configuration \(arn) has no stage", logger: requestLogger)
        }
        let feed = config.redundantIngest == true ? credential : nil
        if let feed { requestLogger[metadataKey: "ingest.feed"] = "\(Self.feedName(feed))" }
        let candidate = PublishCandidate(
            kind: .streamKey(request, key), stageArn: config.stageArn, identity: identity, transport: request.transport.rawValue,
            connectionKey: Self.connectionKey(ingestConfigurationArn: arn, feed: feed), ingestConfigurationArn: arn,
            protocolRefusal: request.transport == .rtmp && !stored.insecureIngest ? "ingest configuration \(arn) requires RTMPS" : nil,
            claimForwarded: false)
        let outcome: Result<Void, AdmissionRefusal>
        if let feed {
            outcome = await admitRedundant(candidate, feed: feed, disconnect: disconnect, logger: requestLogger)
        } else {
            outcome = await admit(candidate, disconnect: disconnect, record: true, logger: requestLogger) { publisher, reservation in
                Connection(publication: Publication(publisher: publisher, runtime: self), stageArn: candidate.stageArn,
                           participantId: candidate.participantId, ingestConfigurationArn: arn, reservation: reservation)
            }.map { _ in () }
        }
        switch outcome {
        case .success:
            return accepted(candidate, logger: requestLogger)
        case .failure(.remote(let peer)):
            guard !isTaken(candidate) else { return refuse(.alreadyPublishing, candidate, logger: requestLogger) }
            return relay(candidate, request: request, key: key, to: peer, disconnect: disconnect, logger: requestLogger)
        case .failure(let refusal):
            return refuse(refusal, candidate, logger: requestLogger)
        }
    }

    /// An RTMP publisher of a stage on another node: kept here, its media relayed to the owner
    /// with its own stream key (encoders do not follow redirects). The owner records it as
    /// the stage's participant; this node only carries the connection.
    private func relay(_ candidate: PublishCandidate, request: IngestAdmissionRequest, key: StreamKey, to peer: FleetPeer,
                       disconnect: @escaping @Sendable (String) -> Void, logger: Logger) -> IngestAdmissionDecision {
        guard let base = peer.rtmpURL, let ingestArn = candidate.connectionKey else {
            return refuse(.internalServerException, "stage \(candidate.stageArn) is on node \(peer.nodeId), which takes no RTMP",
                          logger: logger, stage: candidate.stageArn, participantId: candidate.participantId, userId: candidate.userId)
        }
        // Its own namespace on this node's hub: nothing here composes a relayed publisher.
        let publisher = hub.join(stageArn: "relay:" + candidate.stageArn, identity: candidate.identity, disconnect: disconnect)
        let publication = Publication(publisher: publisher, runtime: self)
        let relay = RTMPRelay(publisher: publisher, url: "\(base)/\(request.streamKey)", displayURL: "\(base)/\(key.redacted)",
                              logger: logger) { failure in
            guard let failure else { return }
            logger.warning("relay to the stage's node ended; disconnecting the publisher", metadata: ["reason": "\(failure)"])
            disconnect("the stage's node ended the relay: \(failure)")
        }
        connections[ingestArn] = Connection(publication: publication, stageArn: candidate.stageArn, participantId: candidate.participantId,
                                            ingestConfigurationArn: ingestArn, relay: relay)
        logger.info("publisher relayed to the stage's node", metadata: ["stage.arn": "\(candidate.stageArn)", "node": "\(peer.nodeId)",
                                                                         "participant.id": "\(candidate.participantId)"])
        return .accepted(publication)
    }

    // MARK: WHIP: a participant token

    func admission(_ participant: TokenParticipant, remoteAddress: String,
                   disconnect: @escaping @Sendable (String) -> Void) async -> IngestAdmissionDecision {
        var requestLogger = logger
        requestLogger[metadataKey: "ingest.remote"] = "\(remoteAddress)"
        requestLogger[metadataKey: "ingest.transport"] = "WHIP"
        let key = "whip:\(participant.stageArn)/\(participant.participantId)"
        let candidate = PublishCandidate(
            kind: .token(participant), stageArn: participant.stageArn,
            identity: LiveParticipantIdentity(participantId: participant.participantId, userId: participant.userId,
                                              attributes: participant.attributes),
            transport: IngestTransport.whip.rawValue, connectionKey: key, ingestConfigurationArn: nil, protocolRefusal: nil,
            claimForwarded: false)
        let outcome = await admit(candidate, disconnect: disconnect, record: true, logger: requestLogger) { publisher, reservation in
            Connection(publication: Publication(publisher: publisher, runtime: self), stageArn: candidate.stageArn,
                       participantId: candidate.participantId, ingestConfigurationArn: nil, tokenExpiresAt: participant.expiresAt,
                       tokenKeyArn: participant.keyArn, reservation: reservation)
        }
        switch outcome {
        case .success: return accepted(candidate, logger: requestLogger)
        case .failure(let refusal): return refuse(refusal, candidate, logger: requestLogger)
        }
    }

    // MARK: Saying it: ingest

    private func accepted(_ candidate: PublishCandidate, logger: Logger) -> IngestAdmissionDecision {
        guard let key = candidate.connectionKey, let connection = connections[key] else {
            return .refused(.internalServerException, reason: "the publisher left while joining")
        }
        logger.info("publisher joined the stage", metadata: ["stage.arn": "\(candidate.stageArn)",
                                                             "participant.id": "\(candidate.participantId)"])
        return .accepted(connection.publication)
    }

    /// An ingest refusal, in the words of the candidate's protocol: what the publisher is told,
    /// the log line, and (when it names a participant of a stage) the stage's event.
    private func refuse(_ refusal: AdmissionRefusal, _ candidate: PublishCandidate, logger: Logger) -> IngestAdmissionDecision {
        let stage = candidate.stageArn, participant = candidate.participantId, user = candidate.userId
        let isToken: Bool
        if case .token = candidate.kind { isToken = true } else { isToken = false }
        let source = isToken ? "the participant token" : candidate.ingestConfigurationArn ?? "the stream key"
        switch refusal {
        case .storeFailed:
            return .refused(.internalServerException, reason: "state store unavailable")
        case .stageMissing:
            return refuse(isToken ? .invalidInput : .invalidStreamKey, "stage \(stage) of \(source) does not exist", logger: logger)
        case .recordedStage:
            return refuse(isToken ? .invalidInput : .invalidStreamKey, "stage \(stage) is a recorded stage", logger: logger,
                          stage: stage, participantId: participant, userId: user)
        case .wrongProtocol(let reason):
            return refuse(.invalidProtocol, reason, logger: logger, stage: stage, participantId: participant, userId: user)
        case .alreadyPublishing:
            let reason = isToken
                ? "participant \(participant) is already publishing on \(stage) (each token joins once at a time)"
                : "the stream key of \(source) is already publishing"
            return refuse(.reuseOfStreamKey, reason, logger: logger, stage: stage, participantId: participant, userId: user)
        case .quota(let publishing, let quota):
            return refuse(.quotaExceeded, "stage \(stage) has \(publishing) publishers, the quota is \(quota)", logger: logger,
                          stage: stage, participantId: participant, userId: user)
        case .claimFailed(let error):
            let code: IngestPublishError = error.code == .serviceQuotaExceeded ? .quotaExceeded : .internalServerException
            return refuse(code, error.message, logger: logger, stage: stage, participantId: participant, userId: user)
        case .remote(let peer):
            // The WHIP endpoint redirects to the owner before admission; the stage moved meanwhile.
            return refuse(.internalServerException, "stage \(stage) is now on node \(peer.nodeId): publish again", logger: logger,
                          stage: stage, participantId: participant, userId: user)
        }
    }

    /// Logs a refusal and, when the key names a stage, tells the stage (Participant Publish
    /// Error) through the inbox, after the message being handled.
    func refuse(_ error: IngestPublishError, _ reason: String, logger: Logger, stage: String? = nil,
                participantId: String? = nil, userId: String = "") -> IngestAdmissionDecision {
        if let stage, !stage.isEmpty, let participantId {
            // Paced per participant and per address: a flood of refusals is counted, not told.
            let address = logger[metadataKey: "ingest.remote"].map { RefusalEventLimiter.host(of: "\($0)") }
            if refusalEvents.admitEvent(participant: "\(stage)/\(participantId)", address: address, at: wallClockMicroseconds()) {
                logger.notice("publish refused", metadata: ["error.code": "\(error.rawValue)", "reason": "\(reason)"])
                report(.effects(book.refused(stageArn: stage, participantId: participantId, userId: userId, errorCode: error.rawValue)))
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

    // MARK: Saying it: the API (a replica)

    /// A replica's refusal, as StartParticipantReplication answers it.
    static func apiError(_ refusal: AdmissionRefusal, _ candidate: PublishCandidate, sourceStageArn: String) -> APIError {
        let stage = candidate.stageArn
        switch refusal {
        case .storeFailed(let reason): return .internalServer("state store unavailable: \(reason)")
        case .stageMissing: return .resourceNotFound("destinationStageArn: stage \(stage) does not exist")
        case .recordedStage: return .validation("destinationStageArn: stage \(stage) is a recorded stage; replicas join live stages")
        case .wrongProtocol(let reason): return .validation(reason)
        case .alreadyPublishing: return .conflict("participant \(candidate.participantId) is already on \(stage)")
        case .quota(let publishing, let quota):
            return .serviceQuotaExceeded("destinationStageArn: stage \(stage) has \(publishing) publishers, "
                                         + "the quota (quotas.publishersPerStage) is \(quota)")
        case .claimFailed(let error): return error
        case .remote(let peer):
            return .conflict("destinationStageArn: stage \(stage) runs on node \(peer.nodeId) and the source "
                             + "\(sourceStageArn) on this one; a replica is made on its source's node, so replicate to a stage "
                             + "before it is placed elsewhere (before its first publisher or composition)")
        }
    }
}
