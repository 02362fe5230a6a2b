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
        case .startParticipantReplication, .stopParticipantReplication, .listParticipantReplicas:
            // The source's node has the participant's media and its replicas.
            if let source = try? APIJSON.decode(SourceStage.self, from: body), let peer = try await remoteOwner(source.sourceStageArn) {
                return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
            return try await handleStages(route.operation, body: body)
        case .createStage, .getStage, .updateStage, .listStages, .deleteStage, .createParticipantToken:
            return try await handleStages(route.operation, body: body)
        case .startComposition, .stopComposition, .getComposition, .listCompositions, .updateComposition:
            return try await handleCompositions(route, query: query, body: body, forwarded: forwarded)
        case .createEncoderConfiguration, .getEncoderConfiguration, .listEncoderConfigurations,
             .deleteEncoderConfiguration, .createStorageConfiguration, .getStorageConfiguration,
             .listStorageConfigurations, .deleteStorageConfiguration:
            return try await handleConfigurations(route.operation, body: body)
        case .tagResource, .untagResource, .listTagsForResource:
            // A composition's tags change where it runs (or ran): its stage's node.
            if route.operation != .listTagsForResource, let arn = route.resourceArn,
               IVSARN(parsing: arn)?.resourceType == .composition,
               let stageArn = try await manager.stageOfStoredComposition(arn: arn), let peer = try await remoteOwner(stageArn) {
                return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
            return try await handleTags(route, query: query, body: body)
        case .listStageSessions, .getStageSession, .listParticipants, .getParticipant, .listParticipantEvents,
             .disconnectParticipant, .updateParticipant:
            return try await handleParticipants(route.operation, body: body) { stageArn throws(APIError) in
                guard let peer = try await remoteOwner(stageArn) else { return nil }
                return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
        case .createIngestConfiguration, .getIngestConfiguration, .listIngestConfigurations, .updateIngestConfiguration,
             .deleteIngestConfiguration:
            return try await handleIngest(route.operation, body: body)
        case .importPublicKey, .getPublicKey, .listPublicKeys, .deletePublicKey:
            return try await handlePublicKeys(route.operation, body: body)
        case .revokeConnectionToken:
            // Not a stage's: the revocation is in the store (every node refuses the token from
            // now on); each node disconnects whoever it admitted with it (told by this one).
            let request = try decode(RevokeConnectionTokenRequest.self, body)
            try await runtime.revoke(tokenId: request.tokenId, reason: "RevokeConnectionToken")
            if !forwarded {
                for peer in try await manager.ownership.otherLiveNodes() {
                    do { _ = try await manager.ownership.forward(route, query: query, body: body, to: peer) } catch {
                        // Stored already: that node refuses the token's next connection anyway.
                        runtime.logger.warning("a node was not told of a revoked token", metadata: [
                            "node": "\(peer.nodeId)", "error": "\(error.message)"])
                    }
                }
            }
            return try APIJSON.encode(RevokeConnectionTokenResponse())
        }
    }

    /// The part of a replication request that says where it runs.
    private struct SourceStage: Decodable {
        var sourceStageArn: String
    }

    // MARK: Helpers

    /// One page of a List operation's results: `items` ordered by `key`, from the request's
    /// nextToken, at most its maxResults (else the operation's default).
    func onePage<Item>(_ items: [Item], key: (Item) -> String, _ request: some PagedRequest, _ operation: APIOperation)
        throws(APIError) -> (items: [Item], nextToken: String?) {
        let page = try Pagination.page(items, key: key, nextToken: request.nextToken, maxResults: request.maxResults,
                                       defaultMaxResults: Pagination.defaultMaxResults(for: operation))
        return (page.items, page.nextToken)
    }

    /// One page of a List operation read from the store a page at a time, never the whole
    /// table: `read(after, limit)` gives rows in key order after `after` (keyset pagination, so
    /// a page costs the same wherever it starts); `keep` turns a row into the item shown, or
    /// nil to filter it out. With a filter the store is read on, page after page, until the
    /// page is full and one more match shows it is not the last (the token then names the
    /// page's last key; memory stays within a page).
    func storePage<Row: Sendable, Item>(
        _ request: some PagedRequest, _ operation: APIOperation, key: (Row) -> String,
        read: (String?, Int) async throws(APIError) -> KeysetPage<Row>,
        keep: (Row) async throws(APIError) -> Item?
    ) async throws(APIError) -> (items: [Item], nextToken: String?) {
        let (after, limit) = try Pagination.start(nextToken: request.nextToken, maxResults: request.maxResults,
                                                  defaultMaxResults: Pagination.defaultMaxResults(for: operation))
        var items: [Item] = [], lastKey = "", cursor = after
        while true {
            let page = try await read(cursor, limit + 1)
            for row in page.items {
                guard let item = try await keep(row) else { continue }
                if items.count == limit { return (items, Pagination.encodeToken(lastKey: lastKey)) }
                items.append(item)
                lastKey = key(row)
            }
            guard let next = page.nextKey else { return (items, nil) }
            cursor = next
        }
    }

    /// The resources a Create call adds and a quota counts. (Compositions are limited by how
    /// many run at once, in the CompositionManager.)
    enum CountedResource {
        case stage, encoderConfiguration, storageConfiguration, ingestConfiguration, publicKey
    }

    /// Refuses a Create call once `kind`'s quota is reached, as IVS does
    /// (ServiceQuotaExceededException, 402): the one place that counts, from the store (in a
    /// fleet, every node's). Creations racing past the check together can overshoot by as many
    /// as are in flight.
    func checkQuota(_ kind: CountedResource) async throws(APIError) {
        let quotas = configuration.quotas
        let (limit, table, name): (Int, DocumentTable, String) = switch kind {
        case .stage: (quotas.stages, .stage, "stages")
        case .encoderConfiguration: (quotas.encoderConfigurations, .encoderConfiguration, "encoder configurations")
        case .storageConfiguration: (quotas.storageConfigurations, .storageConfiguration, "storage configurations")
        case .ingestConfiguration: (quotas.ingestConfigurations, .ingestConfiguration, "ingest configurations")
        case .publicKey: (ModelLimits.publicKeysPerRegion, .publicKey, "public keys")
        }
        let count = try await storeCall { try await store.count(table) }
        guard count < limit else { throw .serviceQuotaExceeded("\(name): the quota of \(limit) is reached") }
    }

    func decode<T: Decodable & APIRequest>(_ type: T.Type, _ body: Data) throws(APIError) -> T {
        try APIJSON.decodeRequest(type, from: body, options: validation)
    }

    func storeCall<T>(_ body: () async throws -> T) async throws(APIError) -> T {
        do { return try await body() } catch { throw .internalServer("state store: \(error)") }
    }

    func owned(_ arn: String, _ type: IVSResourceType) -> Bool {
        guard let parsed = IVSARN(parsing: arn, expecting: type) else { return false }
        return arnContext.owns(parsed)
    }

    func encoder(_ arn: String) async throws(APIError) -> EncoderConfiguration {
        guard owned(arn, .encoderConfiguration), let found = try await storeCall({ try await store.encoderConfiguration(arn: arn) }) else {
            throw .resourceNotFound("arn: encoder configuration \(arn) not found")
        }
        return found
    }

    func storage(_ arn: String) async throws(APIError) -> StorageConfiguration {
        guard owned(arn, .storageConfiguration), let found = try await storeCall({ try await store.storageConfiguration(arn: arn) }) else {
            throw .resourceNotFound("arn: storage configuration \(arn) not found")
        }
        return found
    }

    func stage(_ arn: String) async throws(APIError) -> ResolvedStage {
        guard owned(arn, .stage), let found = try await catalog.stage(arn: arn) else {
            throw .resourceNotFound("arn: stage \(arn) not found")
        }
        return found
    }

}
