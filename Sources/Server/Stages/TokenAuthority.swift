// Participant tokens on the daemon: CreateParticipantToken (and CreateStage's
// participantTokenConfigurations) sign with the daemon's key, kept in the state directory;
// WHIP verifies a token with that key or with any public key imported by ImportPublicKey
// (read from the store at each publish, so an import or delete applies at once).
import APIModels
import Crypto
import Foundation
import ParticipantTokens

struct TokenAuthority: Sendable {
    let issuer: TokenIssuer
    private let ownPublicKey: P384.Signing.PublicKey
    /// ARN → PEM of every imported public key.
    private let importedKeys: @Sendable () async throws -> [String: String]

    /// Loads the daemon's signing key from `stateDirectory` (making one the first time), or
    /// makes one in memory (`persistent: false`, tests with an in-memory store).
    init(configuration: ServerConfiguration, persistent: Bool = true,
         importedKeys: @escaping @Sendable () async throws -> [String: String]) async throws {
        let context = ARNContext(region: configuration.region, account: configuration.account)!
        // The daemon's own key gets an ARN like an imported one: the first 12 hex digits of its fingerprint.
        let name: @Sendable (String) -> String = { fingerprint in
            let id = ResourceID(String(fingerprint.prefix(12)).padding(toLength: 12, withPad: "0", startingAt: 0)) ?? .random()
            return context.arn(.publicKey, id: id).description
        }
        let key = persistent ? try TokenKeyStore.loadOrCreate(directory: configuration.stateDirectory + "/keys", arn: name)
            : TokenSigningKey(arn: name("000000000000"))
        issuer = await TokenIssuer(key: key)
        ownPublicKey = try P384.Signing.PublicKey(pemRepresentation: key.publicKeyPEM)
        self.importedKeys = importedKeys
    }

    /// This daemon's signing key: its ARN and public key (a fleet shares them, so that every
    /// node verifies the tokens any node issued).
    var ownKey: (arn: String, publicKeyPEM: String) { (issuer.key.arn, issuer.key.publicKeyPEM) }

    func verify(_ token: String, stageArn: String, now: Date) async throws(TokenError) -> ParticipantTokenClaims {
        var keys = [issuer.key.arn: ownPublicKey]
        let imported: [String: String]
        do { imported = try await importedKeys() } catch {
            throw TokenError(.unknownKey, "the imported public keys cannot be read now")
        }
        for (arn, pem) in imported {
            if let key = try? PublicKeyPEM.parseP384(pem) { keys[arn] = key }
        }
        return try await TokenVerifier(keys: keys).verify(token, stageArn: stageArn, now: now)
    }

    /// A token for `stageArn`, as the model's ParticipantToken.
    func issue(stageArn: String, whipURL: String, duration: Int?, userId: String?, attributes: [String: String]?,
               capabilities: [ParticipantTokenCapability]?, now: Date) async throws(APIError) -> ParticipantToken {
        let minutes = duration ?? CreateParticipantTokenRequest.defaultDuration
        let granted = capabilities ?? CreateParticipantTokenRequest.defaultCapabilities
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let participantId = String((0..<12).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
        let stageId = IVSARN(parsing: stageArn, expecting: .stage)?.resourceID ?? ""
        let claims = ParticipantTokenClaims(
            participantId: participantId, userId: userId, stageArn: stageArn, stageId: stageId, eventsURL: "", whipURL: whipURL,
            capabilities: Set(granted.map { $0 == .publish ? ParticipantCapability.publish : .subscribe }),
            attributes: attributes ?? [:], issuedAt: issuedAt, expiresAt: issuedAt + Int64(minutes) * 60)
        let token: String
        do { token = try await issuer.issue(claims) } catch { throw .internalServer("participant token: \(error.message)") }
        return ParticipantToken(participantId: participantId, token: token, userId: userId, attributes: attributes,
                                duration: minutes, capabilities: granted,
                                expirationTime: APITimestamp(secondsSince1970: claims.expiresAt))
    }
}
