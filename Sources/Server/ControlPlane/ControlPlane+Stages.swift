// Stages, their participant tokens and participant replication.
import APIModels
import Foundation
import Persistence

extension ControlPlane {
    func handleStages(_ operation: APIOperation, body: Data) async throws(APIError) -> Data {
        switch operation {
        case .startParticipantReplication:
            let request = try decode(StartParticipantReplicationRequest.self, body)
            let source = try await stage(request.sourceStageArn), destination = try await stage(request.destinationStageArn)
            guard source.sourcePath == nil, destination.sourcePath == nil else {
                throw .validation("participant replication is between live stages, not recorded ones")
            }
            try await runtime.startReplication(request, destination: destination.stage)
            return try APIJSON.encode(StartParticipantReplicationResponse())
        case .stopParticipantReplication:
            let request = try decode(StopParticipantReplicationRequest.self, body)
            try await runtime.stopReplication(sourceStageArn: request.sourceStageArn, destinationStageArn: request.destinationStageArn,
                                              participantId: request.participantId)
            return try APIJSON.encode(StopParticipantReplicationResponse())
        case .listParticipantReplicas:
            let request = try decode(ListParticipantReplicasRequest.self, body)
            let replicas = await runtime.replicas(sourceStageArn: request.sourceStageArn, participantId: request.participantId)
            let page = try onePage(replicas, key: { $0.destinationStageArn }, request, .listParticipantReplicas)
            return try APIJSON.encode(ListParticipantReplicasResponse(replicas: page.items, nextToken: page.nextToken))
        case .createStage:
            let request = try decode(CreateStageRequest.self, body)
            try await checkQuota(.stage)
            if let recording = request.autoParticipantRecordingConfiguration, try await !storageExists(recording) {
                // CreateStage's model has no ResourceNotFoundException: a validation error, as IVS.
                throw .validation("autoParticipantRecordingConfiguration.storageConfigurationArn: storage configuration "
                                  + "\(recording.storageConfigurationArn) not found")
            }
            var sourcePath = ""
            if let source = request.tags?[StageCatalog<Store>.sourceTag] { sourcePath = try catalog.validateSourcePath(source) }
            let stage = Stage(arn: arnContext.arn(.stage, id: .random()).description, name: request.name ?? "",
                              tags: request.tags ?? [:],
                              autoParticipantRecordingConfiguration: request.autoParticipantRecordingConfiguration)
            try await storeCall { try await store.putStage(StoredStage(stage: stage, sourcePath: sourcePath)) }
            let created = ResolvedStage(stage: stage, sourcePath: sourcePath.isEmpty ? nil : sourcePath, isConfigured: false)
            var issued: [ParticipantToken] = []
            for configuration in request.participantTokenConfigurations ?? [] {
                issued.append(try await issueToken(for: created, duration: configuration.duration, userId: configuration.userId,
                                                   attributes: configuration.attributes, capabilities: configuration.capabilities))
            }
            return try APIJSON.encode(CreateStageResponse(stage: await presented(created), participantTokens: issued))
        case .getStage:
            let request = try decode(GetStageRequest.self, body)
            return try APIJSON.encode(GetStageResponse(stage: await presented(try await stage(request.arn))))
        case .updateStage:
            let request = try decode(UpdateStageRequest.self, body)
            let found = try await stage(request.arn)
            if found.isConfigured { throw .validation("arn: stage \(request.arn) is defined in the server configuration file; it cannot be updated") }
            var value = found.stage
            if let name = request.name { value.name = name }
            if let recording = request.autoParticipantRecordingConfiguration {
                guard try await storageExists(recording) else {
                    throw .resourceNotFound("autoParticipantRecordingConfiguration.storageConfigurationArn: storage configuration "
                                            + "\(recording.storageConfigurationArn) not found")
                }
                value.autoParticipantRecordingConfiguration = recording
            }
            let updated = StoredStage(stage: value, sourcePath: found.sourcePath ?? "")
            try await storeCall { try await store.putStage(updated) }
            return try APIJSON.encode(UpdateStageResponse(stage: await presented(
                ResolvedStage(stage: value, sourcePath: found.sourcePath, isConfigured: false))))
        case .listStages:
            let request = try decode(ListStagesRequest.self, body)
            // A page of stages, each presented (in a fleet, its open session looked up by its
            // indexed key): nothing here grows with the number of stages.
            let page = try await storePage(request, .listStages, key: \.stage.arn) { after, limit throws(APIError) in
                try await catalog.page(after: after, limit: limit)
            } keep: { await presented($0).summary }
            return try APIJSON.encode(ListStagesResponse(stages: page.items, nextToken: page.nextToken))
        case .deleteStage:
            let request = try decode(DeleteStageRequest.self, body)
            let found = try await stage(request.arn)
            if found.isConfigured { throw .conflict("arn: stage \(request.arn) is defined in the server configuration file") }
            if try await manager.isInUse(request.arn) { throw .conflict("arn: stage \(request.arn) has an active composition") }
            // As IVS does, deleting a stage disconnects everyone on it.
            await runtime.disconnectAll(stageArn: request.arn, reason: "the stage was deleted")
            _ = try await storeCall { try await store.deleteStage(arn: request.arn) }
            try await detachIngestConfigurations(from: request.arn)
            return try APIJSON.encode(DeleteStageResponse())
        case .createParticipantToken:
            let request = try decode(CreateParticipantTokenRequest.self, body)
            let resolved = try await stage(request.stageArn)
            let token = try await issueToken(for: resolved, duration: request.duration, userId: request.userId,
                                             attributes: request.attributes, capabilities: request.capabilities)
            return try APIJSON.encode(CreateParticipantTokenResponse(participantToken: token))
        default:
            throw .internalServer("\(operation.name) is not handled by handleStages")
        }
    }

    /// A storage configuration named for individual participant recording exists ("" is off).
    func storageExists(_ recording: AutoParticipantRecordingConfiguration) async throws(APIError) -> Bool {
        let arn = recording.storageConfigurationArn
        guard !arn.isEmpty else { return true }
        guard owned(arn, .storageConfiguration) else { return false }
        return try await storeCall { try await store.storageConfiguration(arn: arn) } != nil
    }

    /// A deleted stage's ingest configurations no longer name it (`stageArn` ""), so their keys
    /// cannot publish until they are pointed at another stage. Read a page at a time.
    func detachIngestConfigurations(from stageArn: String) async throws(APIError) {
        var after: String?
        repeat {
            let page = try await storeCall { try await store.ingestConfigurations(after: after, limit: 100) }
            for var stored in page.items where stored.configuration.stageArn == stageArn {
                stored.configuration.stageArn = ""
                let detached = stored
                try await storeCall { try await store.putIngestConfiguration(detached) }
            }
            after = page.nextKey
        } while after != nil
    }

    /// A stage as the API shows it: live stages carry their ingest endpoints and, while
    /// someone is on them, the active session; every field of individual participant
    /// recording is shown, with the model's defaults for what was not set.
    func presented(_ resolved: ResolvedStage) async -> Stage {
        var stage = resolved.stage
        guard resolved.sourcePath == nil else { return stage }
        stage.autoParticipantRecordingConfiguration = (stage.autoParticipantRecordingConfiguration ?? .off).withDefaults()
        let stageId = IVSARN(parsing: stage.arn, expecting: .stage)?.resourceID ?? ""
        stage.endpoints = StageEndpoints(whip: configuration.whipEndpoint(stageId: stageId), rtmp: configuration.ingest.rtmpEndpoint,
                                         rtmps: configuration.ingest.rtmpsEndpoint)
        stage.activeSessionId = await runtime.activeSessionId(stageArn: stage.arn)
        if stage.activeSessionId == nil, manager.ownership.isFleet {
            // Another node's live stage: its open session is in the store.
            stage.activeSessionId = (try? await store.openStageSession(stageArn: stage.arn))??.session.sessionId
        }
        return stage
    }

    /// A participant token for a live stage, signed by the daemon.
    func issueToken(for resolved: ResolvedStage, duration: Int?, userId: String?, attributes: [String: String]?,
                            capabilities: [ParticipantTokenCapability]?) async throws(APIError) -> ParticipantToken {
        guard resolved.sourcePath == nil else {
            throw .validation("stageArn: \(resolved.stage.arn) is a recorded stage; participant tokens are for live stages")
        }
        guard let tokens, let whipURL = configuration.whipEndpoint(stageId: IVSARN(parsing: resolved.stage.arn, expecting: .stage)?.resourceID ?? "")
        else { throw .validation("participant tokens are for WHIP publishing, which is disabled here (ingest.whip.enabled)") }
        return try await tokens.issue(stageArn: resolved.stage.arn, whipURL: whipURL, duration: duration, userId: userId,
                                      attributes: attributes, capabilities: capabilities, now: wallClock())
    }
}
