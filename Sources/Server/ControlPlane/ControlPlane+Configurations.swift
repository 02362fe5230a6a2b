// Encoder and storage configurations: stored resources any node serves from the store.
import APIModels
import Foundation
import Persistence

extension ControlPlane {
    func handleConfigurations(_ operation: APIOperation, body: Data) async throws(APIError) -> Data {
        switch operation {
        case .createEncoderConfiguration:
            let request = try decode(CreateEncoderConfigurationRequest.self, body)
            try await checkQuota(.encoderConfiguration)
            let value = request.makeEncoderConfiguration(arn: arnContext.arn(.encoderConfiguration, id: .random()))
            try await storeCall { try await store.putEncoderConfiguration(value) }
            return try APIJSON.encode(CreateEncoderConfigurationResponse(encoderConfiguration: value))
        case .getEncoderConfiguration:
            let request = try decode(GetEncoderConfigurationRequest.self, body)
            return try APIJSON.encode(GetEncoderConfigurationResponse(encoderConfiguration: try await encoder(request.arn)))
        case .listEncoderConfigurations:
            let request = try decode(ListEncoderConfigurationsRequest.self, body)
            let page = try await storePage(request, .listEncoderConfigurations, key: \.arn) { after, limit throws(APIError) in
                try await storeCall { try await store.encoderConfigurations(after: after, limit: limit) }
            } keep: { $0.summary }
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
            try await checkQuota(.storageConfiguration)
            let value = request.makeStorageConfiguration(arn: arnContext.arn(.storageConfiguration, id: .random()))
            try await storeCall { try await store.putStorageConfiguration(value) }
            return try APIJSON.encode(CreateStorageConfigurationResponse(storageConfiguration: value))
        case .getStorageConfiguration:
            let request = try decode(GetStorageConfigurationRequest.self, body)
            return try APIJSON.encode(GetStorageConfigurationResponse(storageConfiguration: try await storage(request.arn)))
        case .listStorageConfigurations:
            let request = try decode(ListStorageConfigurationsRequest.self, body)
            let page = try await storePage(request, .listStorageConfigurations, key: \.arn) { after, limit throws(APIError) in
                try await storeCall { try await store.storageConfigurations(after: after, limit: limit) }
            } keep: { $0.summary }
            return try APIJSON.encode(ListStorageConfigurationsResponse(storageConfigurations: page.items, nextToken: page.nextToken))
        case .deleteStorageConfiguration:
            let request = try decode(DeleteStorageConfigurationRequest.self, body)
            _ = try await storage(request.arn)
            if try await manager.isInUse(request.arn) {
                throw .conflict("arn: storage configuration \(request.arn) is used by an active composition")
            }
            _ = try await storeCall { try await store.deleteStorageConfiguration(arn: request.arn) }
            return try APIJSON.encode(DeleteStorageConfigurationResponse())
        default:
            throw .internalServer("\(operation.name) is not handled by handleConfigurations")
        }
    }
}
