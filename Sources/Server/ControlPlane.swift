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
    let validation: ValidationOptions

    public init(configuration: ServerConfiguration, store: Store, manager: CompositionManager<Store>) {
        self.configuration = configuration
        arnContext = ARNContext(region: configuration.region, account: configuration.account)!
        self.store = store
        catalog = StageCatalog(configuration: configuration, store: store)
        self.manager = manager
        validation = ValidationOptions(layoutCheck: Self.layoutProblem)
    }

    /// The Layout module's own checks of a requested layout, after the model's: the message's
    /// path is relative to `layout` (`grid.gridGap: ...`), as ValidationOptions expects.
    @Sendable static func layoutProblem(_ layout: LayoutConfiguration) -> String? {
        do throws(LayoutValidationError) {
            if let grid = layout.grid { try grid.validate(prefix: "grid") }
            if let pip = layout.pip { try pip.validate(prefix: "pip") }
            return nil
        } catch {
            return error.description
        }
    }

    /// Runs one operation. `query` is the raw query string (UntagResource's tagKeys).
    public func handle(_ route: APIOperation.Route, query: String, body: Data) async throws(APIError) -> Data {
        switch route.operation {
        case .startComposition:
            let request = try decode(StartCompositionRequest.self, body)
            return try APIJSON.encode(StartCompositionResponse(composition: try await manager.start(request)))
        case .stopComposition:
            let request = try decode(StopCompositionRequest.self, body)
            try await manager.stop(arn: request.arn)
            return try APIJSON.encode(StopCompositionResponse())
        case .getComposition:
            let request = try decode(GetCompositionRequest.self, body)
            return try APIJSON.encode(GetCompositionResponse(composition: try await manager.composition(arn: request.arn)))
        case .listCompositions:
            let request = try decode(ListCompositionsRequest.self, body)
            let all = await manager.compositions().filter { composition in
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
            if await manager.isInUse(request.arn) {
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
            if await manager.isInUse(request.arn) {
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
            return try APIJSON.encode(CreateStageResponse(stage: stage, participantTokens: []))
        case .getStage:
            let request = try decode(GetStageRequest.self, body)
            return try APIJSON.encode(GetStageResponse(stage: try await stage(request.arn).stage))
        case .listStages:
            let request = try decode(ListStagesRequest.self, body)
            let all = try await catalog.all().map(\.stage.summary)
            let page = try Pagination.page(all, key: { $0.arn }, nextToken: request.nextToken, maxResults: request.maxResults,
                                           defaultMaxResults: Pagination.defaultMaxResults(for: .listStages))
            return try APIJSON.encode(ListStagesResponse(stages: page.items, nextToken: page.nextToken))
        case .deleteStage:
            let request = try decode(DeleteStageRequest.self, body)
            let found = try await stage(request.arn)
            if found.isConfigured { throw .conflict("arn: stage \(request.arn) is defined in the server configuration file") }
            if await manager.isInUse(request.arn) { throw .conflict("arn: stage \(request.arn) has an active composition") }
            _ = try await storeCall { try await store.deleteStage(arn: request.arn) }
            return try APIJSON.encode(DeleteStageResponse())

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
        default:
            throw .resourceNotFound("resourceArn: \(arn) not found")
        }
    }
}
