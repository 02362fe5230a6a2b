// Public keys imported to verify participant tokens signed elsewhere.
import APIModels
import Foundation
import Persistence

extension ControlPlane {

    /// Customer public keys (ImportPublicKey & co.), for participant tokens signed elsewhere.
    func handlePublicKeys(_ operation: APIOperation, body: Data) async throws(APIError) -> Data {
        switch operation {
        case .importPublicKey:
            let request = try decode(ImportPublicKeyRequest.self, body)
            let fingerprint = try PublicKeyMaterial.fingerprint(of: request.publicKeyMaterial)
            try await checkQuota(.publicKey)
            // The quota keeps this read to a few keys.
            let existing = try await storeCall { try await store.publicKeys() }
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
            let page = try await storePage(request, .listPublicKeys, key: \.arn) { after, limit throws(APIError) in
                try await storeCall { try await store.publicKeys(after: after, limit: limit) }
            } keep: { $0.publicKey.summary }
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

    func publicKey(_ arn: String) async throws(APIError) -> PublicKey {
        guard owned(arn, .publicKey), let found = try await storeCall({ try await store.publicKey(arn: arn) }) else {
            throw .resourceNotFound("arn: public key \(arn) not found")
        }
        return found.publicKey
    }
}
