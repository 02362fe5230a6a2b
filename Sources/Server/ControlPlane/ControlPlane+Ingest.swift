// Ingest configurations: an RTMP publisher's stream key, stage and identity.
import APIModels
import Foundation
import Persistence

extension ControlPlane {

    func handleIngest(_ operation: APIOperation, body: Data) async throws(APIError) -> Data {
        switch operation {
        case .createIngestConfiguration:
            let request = try decode(CreateIngestConfigurationRequest.self, body)
            if let stageArn = request.stageArn, !stageArn.isEmpty {
                guard owned(stageArn, .stage), try await catalog.stage(arn: stageArn) != nil else {
                    throw .validation("stageArn: stage \(stageArn) not found")
                }
            }
            try await checkQuota(.ingestConfiguration)
            let id = ResourceID.random()
            var generator = SystemRandomNumberGenerator()
            let key = StreamKey.generate(account: arnContext.account, region: arnContext.region, ingestConfigurationID: id.rawValue,
                                         using: &generator)
            var value = IngestConfiguration(name: request.name, arn: arnContext.arn(.ingestConfiguration, id: id).description,
                                            ingestProtocol: request.ingestProtocol, streamKey: key.description,
                                            stageArn: request.stageArn ?? "", participantId: ResourceID.random().rawValue,
                                            state: .inactive, userId: request.userId, redundantIngest: false,
                                            attributes: request.attributes, tags: request.tags ?? [:])
            Self.setRedundantIngest(request.redundantIngest ?? false, of: &value)
            try await storeCall { try await store.putIngestConfiguration(StoredIngestConfiguration(
                configuration: value, insecureIngest: request.insecureIngest ?? false)) }
            return try APIJSON.encode(CreateIngestConfigurationResponse(ingestConfiguration: value))
        case .getIngestConfiguration:
            let request = try decode(GetIngestConfigurationRequest.self, body)
            return try APIJSON.encode(GetIngestConfigurationResponse(ingestConfiguration: try await ingest(request.arn).configuration))
        case .listIngestConfigurations:
            let request = try decode(ListIngestConfigurationsRequest.self, body)
            let page = try await storePage(request, .listIngestConfigurations, key: \.arn) { after, limit throws(APIError) in
                try await storeCall { try await store.ingestConfigurations(after: after, limit: limit) }
            } keep: { stored throws(APIError) -> IngestConfigurationSummary? in
                guard request.filterByStageArn.map({ stored.configuration.stageArn == $0 }) ?? true else { return nil }
                let value = await withState(stored.configuration)
                return request.filterByState.map({ value.state == $0 }) ?? true ? value.summary : nil
            }
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
            if let redundant = request.redundantIngest, redundant != (stored.configuration.redundantIngest ?? false) {
                if stored.configuration.state == .active {
                    throw .conflict("arn: ingest configuration \(request.arn) is publishing; redundantIngest cannot change now")
                }
                Self.setRedundantIngest(redundant, of: &stored.configuration)
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

    /// Turns redundant ingest on (a backup stream key for the configuration's participant:
    /// credential 0 is the configuration's own key, the primary; credential 1 the backup) or off.
    static func setRedundantIngest(_ on: Bool, of configuration: inout IngestConfiguration) {
        configuration.redundantIngest = on
        guard on, let arn = IVSARN(parsing: configuration.arn, expecting: .ingestConfiguration) else {
            configuration.redundantIngestCredentials = nil
            return
        }
        var generator = SystemRandomNumberGenerator()
        let backup = StreamKey.generate(for: arn, using: &generator)
        configuration.redundantIngestCredentials = [
            RedundantIngestCredential(participantId: configuration.participantId, streamKey: configuration.streamKey),
            RedundantIngestCredential(participantId: configuration.participantId, streamKey: backup.description)]
    }

    /// An ingest configuration with its live `state`.
    func ingest(_ arn: String) async throws(APIError) -> StoredIngestConfiguration {
        guard owned(arn, .ingestConfiguration), var found = try await storeCall({ try await store.ingestConfiguration(arn: arn) }) else {
            throw .resourceNotFound("arn: ingest configuration \(arn) not found")
        }
        found.configuration = await withState(found.configuration)
        return found
    }

    func withState(_ configuration: IngestConfiguration) async -> IngestConfiguration {
        var value = configuration
        value.state = await runtime.isPublishing(ingestConfigurationArn: value.arn) ? .active : .inactive
        return value
    }
}
