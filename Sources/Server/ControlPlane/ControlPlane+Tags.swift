// TagResource, UntagResource and ListTagsForResource, for every resource type.
import APIModels
import Foundation
import Persistence

extension ControlPlane {
    func handleTags(_ route: APIOperation.Route, query: String, body: Data) async throws(APIError) -> Data {
        switch route.operation {
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
        default:
            throw .internalServer("\(route.operation.name) is not handled by handleTags")
        }
    }

    func tags(of arn: String) async throws(APIError) -> Tags {
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

    func updateTags(_ arn: String, _ update: @escaping @Sendable (Tags) -> Tags) async throws(APIError) -> Tags {
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
