// The IVS control plane: one function per operation, over the repository protocol
// (CompositionStore) and the CompositionManager. HTTP-free: takes the matched route and
// the body, returns the JSON body or the APIError to send.
public import APIModels
public import Foundation
import Layout
public import Persistence

public struct ControlPlane<Store: CompositionStore>: Sendable {
    let configuration: ServerConfiguration
    let arnContext: ARNContext
    let store: Store
    let catalog: StageCatalog<Store>
    public let manager: CompositionManager<Store>
    public let runtime: StageRuntime<Store>
    let validation: ValidationOptions
    let tokens: TokenAuthority?
    let wallClock: @Sendable () -> Date

    init(configuration: ServerConfiguration, store: Store, manager: CompositionManager<Store>, runtime: StageRuntime<Store>,
         tokens: TokenAuthority? = nil, wallClock: @escaping @Sendable () -> Date = Date.init) {
        self.tokens = tokens
        self.wallClock = wallClock
        self.configuration = configuration
        arnContext = ARNContext(region: configuration.region, account: configuration.account)!
        self.store = store
        catalog = StageCatalog(configuration: configuration, store: store)
        self.manager = manager
        self.runtime = runtime
        validation = ValidationOptions()
    }

    /// Runs one operation. `query` is the raw query string (UntagResource's tagKeys).
    /// `forwarded`: another node of the fleet sent it here, to the stage's owner; it is not
    /// forwarded again.
    public func handle(_ route: APIOperation.Route, query: String, body: Data, forwarded: Bool = false) async throws(APIError) -> Data {
        /// In a fleet, operations on a stage's live work run on the node that owns the stage.
        func remoteOwner(_ stageArn: String) async throws(APIError) -> FleetPeer? {
            forwarded ? nil : try await manager.ownership.remoteOwner(of: stageArn)
        }
        switch route.operation {
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
            let page = try Pagination.page(replicas, key: { $0.destinationStageArn }, nextToken: request.nextToken,
                                           maxResults: request.maxResults,
                                           defaultMaxResults: Pagination.defaultMaxResults(for: .listParticipantReplicas))
            return try APIJSON.encode(ListParticipantReplicasResponse(replicas: page.items, nextToken: page.nextToken))
        case .startComposition:
            let request = try decode(StartCompositionRequest.self, body)
            switch try await manager.start(request, forwarded: forwarded) {
            case .started(let composition): return try APIJSON.encode(StartCompositionResponse(composition: composition))
            case .elsewhere(let peer): return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
        case .stopComposition:
            let request = try decode(StopCompositionRequest.self, body)
            if let stageArn = try await manager.stageOfStoredComposition(arn: request.arn), let peer = try await remoteOwner(stageArn) {
                return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
            try await manager.stop(arn: request.arn)
            return try APIJSON.encode(StopCompositionResponse())
        case .getComposition:
            let request = try decode(GetCompositionRequest.self, body)
            return try APIJSON.encode(GetCompositionResponse(composition: try await manager.composition(arn: request.arn)))
        case .listCompositions:
            let request = try decode(ListCompositionsRequest.self, body)
            let all = try await manager.compositions().filter { composition in
                (request.filterByStageArn.map { composition.stageArn == $0 } ?? true)
                    && (request.filterByEncoderConfigurationArn.map { arn in
                        composition.destinations.contains {
                            $0.configuration.channel?.encoderConfigurationArn == arn
                                || ($0.configuration.s3?.encoderConfigurationArns.contains(arn) ?? false)
                        }
                    } ?? true)
            }
            let page = try Pagination.page(all.map(\.summary), key: { $0.arn }, nextToken: request.nextToken,
                                           maxResults: request.maxResults, defaultMaxResults: Pagination.defaultMaxResults(for: .listCompositions))
            return try APIJSON.encode(ListCompositionsResponse(compositions: page.items, nextToken: page.nextToken))

        case .createEncoderConfiguration:
            let request = try decode(CreateEncoderConfigurationRequest.self, body)
            let count = try await storeCall { try await store.encoderConfigurations().count }
            guard count < configuration.quotas.encoderConfigurations else {
                throw .serviceQuotaExceeded("encoder configurations: the quota of \(configuration.quotas.encoderConfigurations) is reached")
            }
            let value = request.makeEncoderConfiguration(arn: arnContext.arn(.encoderConfiguration, id: .random()))
            try await storeCall { try await store.putEncoderConfiguration(value) }
            return try APIJSON.encode(CreateEncoderConfigurationResponse(encoderConfiguration: value))
        case .getEncoderConfiguration:
            let request = try decode(GetEncoderConfigurationRequest.self, body)
            return try APIJSON.encode(GetEncoderConfigurationResponse(encoderConfiguration: try await encoder(request.arn)))
        case .listEncoderConfigurations:
            let request = try decode(ListEncoderConfigurationsRequest.self, body)
            let all = try await storeCall { try await store.encoderConfigurations() }
            let page = try Pagination.page(all.map(\.summary), key: { $0.arn }, nextToken: request.nextToken, maxResults: request.maxResults,
                                           defaultMaxResults: Pagination.defaultMaxResults(for: .listEncoderConfigurations))
            return try APIJSON.encode(ListEncoderConfigurationsResponse(encoderConfigurations: page.items, nextToken: page.nextToken))
        case .deleteEncoderConfiguration:
            let request = try decode(DeleteEncoderConfigurationRequest.self, body)
            _ = try await encoder(request.arn)
            if try await manager.isInUse(request.arn) {
                throw .conflict("arn: encoder configuration \(request.arn) is used by an active composition")
            }
            _ = try await storeCall { try await store.deleteEncoderConfiguration(arn: request.arn) }
            return try APIJSON.encode(DeleteEncoderConfigurationResponse())

        case .createStorageConfiguration:
            let request = try decode(CreateStorageConfigurationRequest.self, body)
            guard configuration.buckets[request.s3.bucketName] != nil else {
                throw .validation("s3.bucketName: bucket \(request.s3.bucketName) is not configured on this server")
            }
            let count = try await storeCall { try await store.storageConfigurations().count }
            guard count < configuration.quotas.storageConfigurations else {
                throw .serviceQuotaExceeded("storage configurations: the quota of \(configuration.quotas.storageConfigurations) is reached")
            }
            let value = request.makeStorageConfiguration(arn: arnContext.arn(.storageConfiguration, id: .random()))
            try await storeCall { try await store.putStorageConfiguration(value) }
            return try APIJSON.encode(CreateStorageConfigurationResponse(storageConfiguration: value))
        case .getStorageConfiguration:
            let request = try decode(GetStorageConfigurationRequest.self, body)
            return try APIJSON.encode(GetStorageConfigurationResponse(storageConfiguration: try await storage(request.arn)))
        case .listStorageConfigurations:
            let request = try decode(ListStorageConfigurationsRequest.self, body)
            let all = try await storeCall { try await store.storageConfigurations() }
            let page = try Pagination.page(all.map(\.summary), key: { $0.arn }, nextToken: request.nextToken, maxResults: request.maxResults,
                                           defaultMaxResults: Pagination.defaultMaxResults(for: .listStorageConfigurations))
            return try APIJSON.encode(ListStorageConfigurationsResponse(storageConfigurations: page.items, nextToken: page.nextToken))
        case .deleteStorageConfiguration:
            let request = try decode(DeleteStorageConfigurationRequest.self, body)
            _ = try await storage(request.arn)
            if try await manager.isInUse(request.arn) {
                throw .conflict("arn: storage configuration \(request.arn) is used by an active composition")
            }
            _ = try await storeCall { try await store.deleteStorageConfiguration(arn: request.arn) }
            return try APIJSON.encode(DeleteStorageConfigurationResponse())

        case .createStage:
            let request = try decode(CreateStageRequest.self, body)
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
            if let recording = request.autoParticipantRecordingConfiguration { value.autoParticipantRecordingConfiguration = recording }
            let updated = StoredStage(stage: value, sourcePath: found.sourcePath ?? "")
            try await storeCall { try await store.putStage(updated) }
            return try APIJSON.encode(UpdateStageResponse(stage: await presented(
                ResolvedStage(stage: value, sourcePath: found.sourcePath, isConfigured: false))))
        case .listStages:
            let request = try decode(ListStagesRequest.self, body)
            var all: [StageSummary] = []
            for resolved in try await catalog.all() { all.append(await presented(resolved).summary) }
            let page = try Pagination.page(all, key: { $0.arn }, nextToken: request.nextToken, maxResults: request.maxResults,
                                           defaultMaxResults: Pagination.defaultMaxResults(for: .listStages))
            return try APIJSON.encode(ListStagesResponse(stages: page.items, nextToken: page.nextToken))
        case .deleteStage:
            let request = try decode(DeleteStageRequest.self, body)
            let found = try await stage(request.arn)
            if found.isConfigured { throw .conflict("arn: stage \(request.arn) is defined in the server configuration file") }
            if try await manager.isInUse(request.arn) { throw .conflict("arn: stage \(request.arn) has an active composition") }
            // As IVS does, deleting a stage disconnects everyone on it.
            await runtime.disconnectAll(stageArn: request.arn, reason: "the stage was deleted")
            _ = try await storeCall { try await store.deleteStage(arn: request.arn) }
            return try APIJSON.encode(DeleteStageResponse())

        case .listStageSessions, .getStageSession, .listParticipants, .getParticipant, .listParticipantEvents,
             .disconnectParticipant:
            return try await handleParticipants(route.operation, body: body) { stageArn throws(APIError) in
                guard let peer = try await remoteOwner(stageArn) else { return nil }
                return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
        case .createIngestConfiguration, .getIngestConfiguration, .listIngestConfigurations, .updateIngestConfiguration,
             .deleteIngestConfiguration:
            return try await handleIngest(route.operation, body: body)
        case .importPublicKey, .getPublicKey, .listPublicKeys, .deletePublicKey:
            return try await handlePublicKeys(route.operation, body: body)
        case .createParticipantToken:
            let request = try decode(CreateParticipantTokenRequest.self, body)
            let resolved = try await stage(request.stageArn)
            let token = try await issueToken(for: resolved, duration: request.duration, userId: request.userId,
                                             attributes: request.attributes, capabilities: request.capabilities)
            return try APIJSON.encode(CreateParticipantTokenResponse(participantToken: token))

        case .tagResource:
            let wire = try APIJSON.decode(TagResourceRequest.Body.self, from: body)
            let request = TagResourceRequest(resourceArn: route.resourceArn ?? "", body: wire)
            try request.validate(options: validation)
            _ = try await updateTags(request.resourceArn) { $0.merging(request.tags) { _, new in new } }
            return try APIJSON.encode(TagResourceResponse())
        case .untagResource:
            let request = try UntagResourceRequest(resourceArn: route.resourceArn ?? "", query: query)
            try request.validate(options: validation)
            let keys = Set(request.tagKeys)
            _ = try await updateTags(request.resourceArn) { $0.filter { !keys.contains($0.key) } }
            return try APIJSON.encode(UntagResourceResponse())
        case .listTagsForResource:
            let request = ListTagsForResourceRequest(resourceArn: route.resourceArn ?? "")
            try request.validate(options: validation)
            return try APIJSON.encode(ListTagsForResourceResponse(tags: try await tags(of: request.resourceArn)))
        }
    }

    // MARK: Live stages

    /// A stage as the API shows it: live stages carry their ingest endpoints and, while
    /// someone is on them, the active session.
    private func presented(_ resolved: ResolvedStage) async -> Stage {
        var stage = resolved.stage
        guard resolved.sourcePath == nil else { return stage }
        let stageId = IVSARN(parsing: stage.arn, expecting: .stage)?.resourceID ?? ""
        stage.endpoints = StageEndpoints(whip: configuration.whipEndpoint(stageId: stageId), rtmp: configuration.ingest.rtmpEndpoint,
                                         rtmps: configuration.ingest.rtmpsEndpoint)
        stage.activeSessionId = await runtime.activeSessionId(stageArn: stage.arn)
        if stage.activeSessionId == nil, manager.ownership.isFleet {
            // Another node's live stage: its open session is in the store.
            let sessions = (try? await store.stageSessions(stageArn: stage.arn)) ?? []
            stage.activeSessionId = sessions.first { $0.session.endTime == nil }?.session.sessionId
        }
        return stage
    }

    /// A participant token for a live stage, signed by the daemon.
    private func issueToken(for resolved: ResolvedStage, duration: Int?, userId: String?, attributes: [String: String]?,
                            capabilities: [ParticipantTokenCapability]?) async throws(APIError) -> ParticipantToken {
        guard resolved.sourcePath == nil else {
            throw .validation("stageArn: \(resolved.stage.arn) is a recorded stage; participant tokens are for live stages")
        }
        guard let tokens, let whipURL = configuration.whipEndpoint(stageId: IVSARN(parsing: resolved.stage.arn, expecting: .stage)?.resourceID ?? "")
        else { throw .validation("participant tokens are for WHIP publishing, which is disabled here (ingest.whip.enabled)") }
        return try await tokens.issue(stageArn: resolved.stage.arn, whipURL: whipURL, duration: duration, userId: userId,
                                      attributes: attributes, capabilities: capabilities, now: wallClock())
    }

    private func handleParticipants(_ operation: APIOperation, body: Data, forward: (String) async throws(APIError) -> Data?)
        async throws(APIError) -> Data {
        switch operation {
        case .listStageSessions:
            let request = try decode(ListStageSessionsRequest.self, body)
            let sessions = try await storeCall { try await store.stageSessions(stageArn: request.stageArn) }
            // Newest first, stable across pages: the key orders by descending start time.
            let page = try Pagination.page(sessions, key: { Self.descending($0.session.startTime?.secondsSince1970 ?? 0) + ($0.session.sessionId ?? "") },
                                           nextToken: request.nextToken, maxResults: request.maxResults,
                                           defaultMaxResults: Pagination.defaultMaxResults(for: .listStageSessions))
            return try APIJSON.encode(ListStageSessionsResponse(stageSessions: page.items.map(\.session.summary), nextToken: page.nextToken))
        case .getStageSession:
            let request = try decode(GetStageSessionRequest.self, body)
            guard let found = try await storeCall({ try await store.stageSession(stageArn: request.stageArn, sessionId: request.sessionId) }) else {
                throw .resourceNotFound("sessionId: stage session \(request.sessionId) of \(request.stageArn) not found")
            }
            return try APIJSON.encode(GetStageSessionResponse(stageSession: found.session))
        case .listParticipants:
            let request = try decode(ListParticipantsRequest.self, body)
            let stored = try await storeCall { try await store.participants(stageArn: request.stageArn, sessionId: request.sessionId) }
            let matching = stored.enumerated().filter { _, entry in
                let p = entry.participant
                return (request.filterByUserId.map { p.userId == $0 } ?? true)
                    && (request.filterByPublished.map { p.published == $0 } ?? true)
                    && (request.filterByState.map { p.state == $0 } ?? true)
                    && (request.filterByRecordingState.map { p.recordingState == $0 } ?? true)
            }
            let page = try Pagination.page(matching, key: { Self.ascending(Int64($0.offset)) }, nextToken: request.nextToken,
                                           maxResults: request.maxResults, defaultMaxResults: 50)
            return try APIJSON.encode(ListParticipantsResponse(participants: page.items.map(\.element.participant.summary),
                                                               nextToken: page.nextToken))
        case .getParticipant:
            let request = try decode(GetParticipantRequest.self, body)
            guard let found = try await storeCall({
                try await store.participant(stageArn: request.stageArn, sessionId: request.sessionId, participantId: request.participantId)
            }) else {
                throw .resourceNotFound("participantId: participant \(request.participantId) not found in session \(request.sessionId)")
            }
            return try APIJSON.encode(GetParticipantResponse(participant: found.participant))
        case .listParticipantEvents:
            let request = try decode(ListParticipantEventsRequest.self, body)
            let events = try await storeCall {
                try await store.participantEvents(stageArn: request.stageArn, sessionId: request.sessionId, participantId: request.participantId)
            }
            let page = try Pagination.page(Array(events.enumerated()), key: { Self.ascending(Int64($0.offset)) },
                                           nextToken: request.nextToken, maxResults: request.maxResults, defaultMaxResults: 50)
            return try APIJSON.encode(ListParticipantEventsResponse(events: page.items.map(\.element), nextToken: page.nextToken))
        case .disconnectParticipant:
            let request = try decode(DisconnectParticipantRequest.self, body)
            _ = try await stage(request.stageArn)
            if let answer = try await forward(request.stageArn) { return answer }
            guard await runtime.disconnect(stageArn: request.stageArn, participantId: request.participantId,
                                           reason: request.reason ?? "DisconnectParticipant", revoke: true) else {
                throw .resourceNotFound("participantId: participant \(request.participantId) is not connected to \(request.stageArn)")
            }
            return try APIJSON.encode(DisconnectParticipantResponse())
        default:
            throw .internalServer("\(operation.name) is not a participant operation")
        }
    }

    private func handleIngest(_ operation: APIOperation, body: Data) async throws(APIError) -> Data {
        switch operation {
        case .createIngestConfiguration:
            let request = try decode(CreateIngestConfigurationRequest.self, body)
            if let stageArn = request.stageArn, !stageArn.isEmpty {
                guard owned(stageArn, .stage), try await catalog.stage(arn: stageArn) != nil else {
                    throw .validation("stageArn: stage \(stageArn) not found")
                }
            }
            let count = try await storeCall { try await store.ingestConfigurations().count }
            guard count < configuration.quotas.ingestConfigurations else {
                throw .serviceQuotaExceeded("ingest configurations: the quota of \(configuration.quotas.ingestConfigurations) is reached")
            }
            let id = ResourceID.random()
            var generator = SystemRandomNumberGenerator()
            let key = StreamKey.generate(account: arnContext.account, region: arnContext.region, ingestConfigurationID: id.rawValue,
                                         using: &generator)
            let value = IngestConfiguration(name: request.name, arn: arnContext.arn(.ingestConfiguration, id: id).description,
                                            ingestProtocol: request.ingestProtocol, streamKey: key.description,
                                            stageArn: request.stageArn ?? "", participantId: ResourceID.random().rawValue,
                                            state: .inactive, userId: request.userId, redundantIngest: false,
                                            attributes: request.attributes, tags: request.tags ?? [:])
            try await storeCall { try await store.putIngestConfiguration(StoredIngestConfiguration(
                configuration: value, insecureIngest: request.insecureIngest ?? false)) }
            return try APIJSON.encode(CreateIngestConfigurationResponse(ingestConfiguration: value))
        case .getIngestConfiguration:
            let request = try decode(GetIngestConfigurationRequest.self, body)
            return try APIJSON.encode(GetIngestConfigurationResponse(ingestConfiguration: try await ingest(request.arn).configuration))
        case .listIngestConfigurations:
            let request = try decode(ListIngestConfigurationsRequest.self, body)
            var all: [IngestConfigurationSummary] = []
            for stored in try await storeCall({ try await store.ingestConfigurations() }) {
                let value = await withState(stored.configuration)
                guard request.filterByStageArn.map({ value.stageArn == $0 }) ?? true,
                      request.filterByState.map({ value.state == $0 }) ?? true else { continue }
                all.append(value.summary)
            }
            let page = try Pagination.page(all, key: { $0.arn }, nextToken: request.nextToken, maxResults: request.maxResults,
                                           defaultMaxResults: 50)
            return try APIJSON.encode(ListIngestConfigurationsResponse(ingestConfigurations: page.items, nextToken: page.nextToken))
        case .updateIngestConfiguration:
            let request = try decode(UpdateIngestConfigurationRequest.self, body)
            var stored = try await ingest(request.arn)
            if let stageArn = request.stageArn, stageArn != stored.configuration.stageArn {
                if !stageArn.isEmpty {
                    guard owned(stageArn, .stage), try await catalog.stage(arn: stageArn) != nil else {
                        throw .resourceNotFound("stageArn: stage \(stageArn) not found")
                    }
                }
                if stored.configuration.state == .active {
                    throw .conflict("arn: ingest configuration \(request.arn) is publishing; its stage cannot change now")
                }
                stored.configuration.stageArn = stageArn
            }
            let updated = stored
            try await storeCall { try await store.putIngestConfiguration(updated) }
            return try APIJSON.encode(UpdateIngestConfigurationResponse(ingestConfiguration: updated.configuration))
        case .deleteIngestConfiguration:
            let request = try decode(DeleteIngestConfigurationRequest.self, body)
            let stored = try await ingest(request.arn)
            if stored.configuration.state == .active {
                guard request.force == true else {
                    throw .conflict("arn: ingest configuration \(request.arn) is publishing; pass force to disconnect it and delete")
                }
                await runtime.disconnect(ingestConfigurationArn: request.arn, reason: "its ingest configuration was deleted")
            }
            _ = try await storeCall { try await store.deleteIngestConfiguration(arn: request.arn) }
            return try APIJSON.encode(DeleteIngestConfigurationResponse())
        default:
            throw .internalServer("\(operation.name) is not an ingest operation")
        }
    }

    /// Customer public keys (ImportPublicKey & co.), for participant tokens signed elsewhere.
    private func handlePublicKeys(_ operation: APIOperation, body: Data) async throws(APIError) -> Data {
        switch operation {
        case .importPublicKey:
            let request = try decode(ImportPublicKeyRequest.self, body)
            let fingerprint = try PublicKeyMaterial.fingerprint(of: request.publicKeyMaterial)
            let existing = try await storeCall { try await store.publicKeys() }
            guard existing.count < ModelLimits.publicKeysPerRegion else {
                throw .serviceQuotaExceeded("public keys: the quota of \(ModelLimits.publicKeysPerRegion) is reached")
            }
            if existing.contains(where: { $0.publicKey.fingerprint == fingerprint }) {
                throw .conflict("publicKeyMaterial: this key is already imported")
            }
            let value = PublicKey(arn: arnContext.arn(.publicKey, id: .random()).description, name: request.name ?? "",
                                  publicKeyMaterial: request.publicKeyMaterial, fingerprint: fingerprint, tags: request.tags ?? [:])
            try await storeCall { try await store.putPublicKey(StoredPublicKey(publicKey: value)) }
            return try APIJSON.encode(ImportPublicKeyResponse(publicKey: value))
        case .getPublicKey:
            let request = try decode(GetPublicKeyRequest.self, body)
            return try APIJSON.encode(GetPublicKeyResponse(publicKey: try await publicKey(request.arn)))
        case .listPublicKeys:
            let request = try decode(ListPublicKeysRequest.self, body)
            let all = try await storeCall { try await store.publicKeys() }.map(\.publicKey.summary)
            let page = try Pagination.page(all, key: { $0.arn ?? "" }, nextToken: request.nextToken, maxResults: request.maxResults,
                                           defaultMaxResults: Pagination.defaultMaxResults(for: .listPublicKeys))
            return try APIJSON.encode(ListPublicKeysResponse(publicKeys: page.items, nextToken: page.nextToken))
        case .deletePublicKey:
            let request = try decode(DeletePublicKeyRequest.self, body)
            _ = try await publicKey(request.arn)
            _ = try await storeCall { try await store.deletePublicKey(arn: request.arn) }
            // Tokens it signed no longer verify; the sessions they admitted end too.
            await runtime.disconnect(publicKeyArn: request.arn, reason: "public key \(request.arn) was deleted")
            return try APIJSON.encode(DeletePublicKeyResponse())
        default:
            throw .internalServer("\(operation.name) is not a public-key operation")
        }
    }

    private func publicKey(_ arn: String) async throws(APIError) -> PublicKey {
        guard owned(arn, .publicKey), let found = try await storeCall({ try await store.publicKey(arn: arn) }) else {
            throw .resourceNotFound("arn: public key \(arn) not found")
        }
        return found.publicKey
    }

    /// An ingest configuration with its live `state`.
    private func ingest(_ arn: String) async throws(APIError) -> StoredIngestConfiguration {
        guard owned(arn, .ingestConfiguration), var found = try await storeCall({ try await store.ingestConfiguration(arn: arn) }) else {
            throw .resourceNotFound("arn: ingest configuration \(arn) not found")
        }
        found.configuration = await withState(found.configuration)
        return found
    }

    private func withState(_ configuration: IngestConfiguration) async -> IngestConfiguration {
        var value = configuration
        value.state = await runtime.isPublishing(ingestConfigurationArn: value.arn) ? .active : .inactive
        return value
    }

    /// Pagination keys that sort numbers (ascending or descending) as text.
    static func ascending(_ value: Int64) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    static func descending(_ value: Int64) -> String { ascending(Int64.max - value) }

    // MARK: Helpers

    private func decode<T: Decodable & APIRequest>(_ type: T.Type, _ body: Data) throws(APIError) -> T {
        try APIJSON.decodeRequest(type, from: body, options: validation)
    }

    private func storeCall<T>(_ body: () async throws -> T) async throws(APIError) -> T {
        do { return try await body() } catch { throw .internalServer("state store: \(error)") }
    }

    private func owned(_ arn: String, _ type: IVSResourceType) -> Bool {
        guard let parsed = IVSARN(parsing: arn, expecting: type) else { return false }
        return arnContext.owns(parsed)
    }

    private func encoder(_ arn: String) async throws(APIError) -> EncoderConfiguration {
        guard owned(arn, .encoderConfiguration), let found = try await storeCall({ try await store.encoderConfiguration(arn: arn) }) else {
            throw .resourceNotFound("arn: encoder configuration \(arn) not found")
        }
        return found
    }

    private func storage(_ arn: String) async throws(APIError) -> StorageConfiguration {
        guard owned(arn, .storageConfiguration), let found = try await storeCall({ try await store.storageConfiguration(arn: arn) }) else {
            throw .resourceNotFound("arn: storage configuration \(arn) not found")
        }
        return found
    }

    private func stage(_ arn: String) async throws(APIError) -> ResolvedStage {
        guard owned(arn, .stage), let found = try await catalog.stage(arn: arn) else {
            throw .resourceNotFound("arn: stage \(arn) not found")
        }
        return found
    }

    private func tags(of arn: String) async throws(APIError) -> Tags {
        guard let parsed = IVSARN(parsing: arn), arnContext.owns(parsed) else { throw .resourceNotFound("resourceArn: \(arn) not found") }
        switch parsed.resourceType {
        case .composition: return try await manager.composition(arn: arn).tags ?? [:]
        case .encoderConfiguration: return try await encoder(arn).tags ?? [:]
        case .storageConfiguration: return try await storage(arn).tags ?? [:]
        case .stage: return try await stage(arn).stage.tags ?? [:]
        case .ingestConfiguration: return try await ingest(arn).configuration.tags ?? [:]
        case .publicKey: return try await publicKey(arn).tags ?? [:]
        default: throw .resourceNotFound("resourceArn: \(arn) not found")
        }
    }

    private func updateTags(_ arn: String, _ update: @escaping @Sendable (Tags) -> Tags) async throws(APIError) -> Tags {
        guard let parsed = IVSARN(parsing: arn), arnContext.owns(parsed) else { throw .resourceNotFound("resourceArn: \(arn) not found") }
        let limited: @Sendable (Tags) -> Tags = update
        func check(_ tags: Tags) throws(APIError) {
            if tags.count > ModelLimits.maximumTags {
                throw .validation("tags: a resource can have at most \(ModelLimits.maximumTags) tags (would have \(tags.count))")
            }
        }
        switch parsed.resourceType {
        case .composition:
            let current = try await manager.composition(arn: arn).tags ?? [:]
            try check(limited(current))
            return try await manager.updateTags(arn: arn, limited)
        case .encoderConfiguration:
            var value = try await encoder(arn)
            value.tags = limited(value.tags ?? [:])
            try check(value.tags ?? [:])
            let updated = value
            try await storeCall { try await store.putEncoderConfiguration(updated) }
            return updated.tags ?? [:]
        case .storageConfiguration:
            var value = try await storage(arn)
            value.tags = limited(value.tags ?? [:])
            try check(value.tags ?? [:])
            let updated = value
            try await storeCall { try await store.putStorageConfiguration(updated) }
            return updated.tags ?? [:]
        case .stage:
            let found = try await stage(arn)
            if found.isConfigured { throw .validation("resourceArn: stage \(arn) is defined in the server configuration file; its tags are read-only") }
            var value = found.stage
            value.tags = limited(value.tags ?? [:])
            try check(value.tags ?? [:])
            let updated = StoredStage(stage: value, sourcePath: found.sourcePath ?? "")
            try await storeCall { try await store.putStage(updated) }
            return value.tags ?? [:]
        case .ingestConfiguration:
            var value = try await ingest(arn)
            value.configuration.tags = limited(value.configuration.tags ?? [:])
            try check(value.configuration.tags ?? [:])
            let updated = value
            try await storeCall { try await store.putIngestConfiguration(updated) }
            return updated.configuration.tags ?? [:]
        case .publicKey:
            var value = try await publicKey(arn)
            value.tags = limited(value.tags ?? [:])
            try check(value.tags ?? [:])
            let updated = value
            try await storeCall { try await store.putPublicKey(StoredPublicKey(publicKey: updated)) }
            return updated.tags ?? [:]
        default:
            throw .resourceNotFound("resourceArn: \(arn) not found")
        }
    }
}
