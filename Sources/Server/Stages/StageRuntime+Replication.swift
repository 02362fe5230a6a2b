// Participant replication on the stage runtime: the API's checks (the source publishes now,
// is no replica, and no cycle of replicas would close), then the replica is admitted like any
// publisher (a `PublishCandidate`), its media carried by a ReplicaForwarder. Its end comes
// back through the inbox.
import APIModels
import Foundation
import LiveStage
import Logging
import Persistence
import Stages

extension StageRuntime {
    /// StartParticipantReplication: the source participant must be publishing now, and be no
    /// replica itself (so replicas never form a cycle: media would go round it for ever); the
    /// destination must have room under `quotas.publishersPerStage`.
    func startReplication(_ request: StartParticipantReplicationRequest, destination: Stage) async throws(APIError) {
        let key = ReplicaEntry.Key(source: request.sourceStageArn, destination: request.destinationStageArn,
                                   participantId: request.participantId)
        guard replicaEntries[key] == nil else {
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
        if let path = ReplicationGraph(edges: replicaEntries.keys.filter { $0.participantId == request.participantId }
                                                .map { ($0.source, $0.destination) })
            .path(from: request.destinationStageArn, to: request.sourceStageArn) {
            throw .conflict("replicating participant \(request.participantId) from \(request.sourceStageArn) to "
                            + "\(request.destinationStageArn) would close a cycle of replicas (\(path.joined(separator: " → ")))")
        }
        // The replica joins the destination here, on the source's node: in a fleet the
        // destination is placed here too (it costs a publisher), or the call is refused.
        let attributes = request.attributes ?? [:]
        let candidate = PublishCandidate(
            kind: .replica, stageArn: request.destinationStageArn,
            identity: LiveParticipantIdentity(participantId: request.participantId, userId: source.identity.userId, attributes: attributes,
                                              replicaOf: request.sourceStageArn),
            transport: "", connectionKey: nil, ingestConfigurationArn: nil, protocolRefusal: nil, claimForwarded: true)
        let forwarder = ReplicaForwarder()
        var replicaLogger = logger
        replicaLogger[metadataKey: "participant.id"] = "\(request.participantId)"
        replicaLogger[metadataKey: "replica.destination"] = "\(request.destinationStageArn)"
        // DisconnectParticipant and DeleteStage reach a replica through the hub, as they reach
        // any publisher: the forwarder stops and the replica leaves.
        let outcome = await admit(candidate, disconnect: { _ in forwarder.stop() },
                                  record: destination.autoParticipantRecordingConfiguration?.recordParticipantReplicas ?? true,
                                  logger: replicaLogger, connection: nil)
        let replica: LivePublisher, reservation: StageReservation
        switch outcome {
        case .success(.joined(let joined, _, let held)): (replica, reservation) = (joined, held)
        case .failure(let refusal): throw Self.apiError(refusal, candidate, sourceStageArn: request.sourceStageArn)
        }
        let destinationSession = book.activeSession(stageArn: request.destinationStageArn) ?? ""
        let replicaKey = ParticipantRecordingKey(stageArn: request.destinationStageArn, sessionId: destinationSession,
                                                 participantId: request.participantId)
        let sourceKey = ParticipantRecordingKey(stageArn: request.sourceStageArn, sessionId: sourceSession, participantId: request.participantId)
        ledger.replicationStarted(replica: replicaKey, source: sourceKey)
        await saveRecordingFields(replicaKey)
        await saveRecordingFields(sourceKey)
        let entry = ParticipantReplica(sourceStageArn: request.sourceStageArn, participantId: request.participantId,
                                       sourceSessionId: sourceSession, destinationStageArn: request.destinationStageArn,
                                       destinationSessionId: destinationSession, replicationState: .active)
        await appendReplicationEvents(.replicationStarted, entry)
        forwarder.start(source: source, replica: replica, hub: hub, window: TimeInterval(request.reconnectWindowSeconds ?? 0),
                        logger: replicaLogger) { [weak self] reason in
            self?.report(.replicationEnded(key, replicaKey: replicaKey, reason: reason))
        }
        replicaEntries[key] = ReplicaEntry(replica: entry, forwarder: forwarder, reservation: reservation)
        replicaLogger.info("participant replication started", metadata: ["replica.source": "\(request.sourceStageArn)"])
    }

    /// StopParticipantReplication: the replica leaves its destination stage.
    func stopReplication(sourceStageArn: String, destinationStageArn: String, participantId: String) throws(APIError) {
        let key = ReplicaEntry.Key(source: sourceStageArn, destination: destinationStageArn, participantId: participantId)
        guard let entry = replicaEntries[key], entry.replica.replicationState == .active else {
            throw .resourceNotFound("participant \(participantId) of \(sourceStageArn) is not replicated to \(destinationStageArn)")
        }
        replicaEntries[key]?.stop()
    }

    /// Ends every replica into or out of a stage (DeleteStage): each stops at once, without
    /// waiting for a reconnect window.
    func stopReplicas(touching stageArn: String) {
        for key in replicaEntries.keys where key.source == stageArn || key.destination == stageArn {
            replicaEntries[key]?.stop()
        }
    }

    /// ListParticipantReplicas: the replicas of one source participant.
    func replicas(sourceStageArn: String, participantId: String) -> [ParticipantReplica] {
        replicaEntries.filter { $0.key.source == sourceStageArn && $0.key.participantId == participantId }.map(\.value.replica)
    }

    func replicationEnded(_ key: ReplicaEntry.Key, replicaKey: ParticipantRecordingKey, reason: String) async {
        guard let entry = replicaEntries.removeValue(forKey: key) else { return }
        if let reservation = entry.reservation { await ownership.release(reservation) }
        await appendReplicationEvents(.replicationStopped, entry.replica)
        await apply(book.leave(stageArn: key.destination, participantId: key.participantId, at: seconds()))
        ledger.replicationStopped(replica: replicaKey)
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
}
