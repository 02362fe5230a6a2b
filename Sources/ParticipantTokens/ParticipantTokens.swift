// Participant tokens, as IVS makes them: ES384 JWTs whose header names the signing key's ARN
// (`kid`) and whose payload names the stage (`resource`, `topic`), the participant (`jti`,
// `user_id`, `attributes`), what it may do (`capabilities`) and for how long (`iat`, `exp`).
// The daemon signs CreateParticipantToken's tokens with its own key; customers may sign their
// own with a P-384 key whose public half they imported (ImportPublicKey). jwt-kit signs and
// checks signatures; the rules around them (algorithm, key, times, stage) are checked here,
// before and after, so that each refusal says exactly what was wrong.
//
// Tokens are bearer secrets: no message here ever contains one, or any key material.

public import Crypto
public import Foundation
import JWTKit

public enum ParticipantCapability: String, Sendable, Equatable, Hashable, CaseIterable {
    case publish = "PUBLISH", subscribe = "SUBSCRIBE"
}

/// A token's content.
public struct ParticipantTokenClaims: Sendable, Equatable {
    public var participantId: String
    public var userId: String?
    public var stageArn: String
    public var stageId: String
    public var eventsURL: String
    public var whipURL: String
    public var capabilities: Set<ParticipantCapability>
    public var attributes: [String: String]
    /// Whole seconds since 1970 (JWT NumericDate).
    public var issuedAt: Int64
    public var expiresAt: Int64
    /// The `kid` of the key that signed it (set by the verifier).
    public var keyArn: String

    /// The capabilities by their model names, sorted ("PUBLISH", "SUBSCRIBE").
    public var capabilityNames: [String] { capabilities.map(\.rawValue).sorted() }

    public init(participantId: String, userId: String?, stageArn: String, stageId: String, eventsURL: String, whipURL: String,
                capabilities: Set<ParticipantCapability>, attributes: [String: String], issuedAt: Int64, expiresAt: Int64,
                keyArn: String = "") {
        self.participantId = participantId
        self.userId = userId
        self.stageArn = stageArn
        self.stageId = stageId
        self.eventsURL = eventsURL
        self.whipURL = whipURL
        self.capabilities = capabilities
        self.attributes = attributes
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.keyArn = keyArn
    }
}

public struct TokenError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case malformed, wrongAlgorithm, unknownKey, badSignature, expired, notYetValid, wrongStage, invalidClaims
    }

    public var kind: Kind
    public var message: String
    /// The claims of a token whose signature verified (expired, for another stage ...): whom
    /// the refusal concerns. Nil when the token cannot be trusted at all.
    public var genuineClaims: ParticipantTokenClaims?

    public init(_ kind: Kind, _ message: String, genuineClaims: ParticipantTokenClaims? = nil) {
        self.kind = kind
        self.message = message
        self.genuineClaims = genuineClaims
    }

    public var description: String { message }
}

/// A P-384 signing key and the ARN tokens name it by.
public struct TokenSigningKey: Sendable, CustomStringConvertible {
    public let arn: String
    let key: ES384PrivateKey

    public init(arn: String, pem: String) throws(TokenError) {
        do {
            key = try ES384PrivateKey(pem: pem)
        } catch {
            throw TokenError(.malformed, "not an ECDSA P-384 private key in PEM")
        }
        self.arn = arn
    }

    public init(arn: String) {
        self.arn = arn
        key = ES384PrivateKey()
    }

    /// PKCS#8 PEM of the private key, for the key file only.
    public var privateKeyPEM: String { key.pemRepresentation }
    public var publicKeyPEM: String { key.publicKey.pemRepresentation }

    /// Never the key.
    public var description: String { "TokenSigningKey(\(arn))" }
}

public enum PublicKeyPEM {
    /// An imported key: must be an EC P-384 public key (tokens are ES384).
    public static func parseP384(_ pem: String) throws(TokenError) -> P384.Signing.PublicKey {
        if pem.contains("PRIVATE KEY") {
            throw TokenError(.invalidClaims, "publicKeyMaterial is a private key; import only the public key")
        }
        do {
            return try P384.Signing.PublicKey(pemRepresentation: pem)
        } catch {
            throw TokenError(.invalidClaims, "publicKeyMaterial is not an ECDSA P-384 public key in PEM (participant tokens are ES384)")
        }
    }
}

// MARK: - Wire format

/// The JWT payload, field for field.
struct TokenPayload: JWTPayload, Equatable {
    struct Capabilities: Codable, Equatable {
        var allow_publish: Bool?
        var allow_subscribe: Bool?
    }

    var exp: Int64
    var iat: Int64
    var jti: String
    var user_id: String?
    var resource: String
    var topic: String
    var events_url: String
    var whip_url: String
    var capabilities: Capabilities
    var attributes: [String: String]?
    var version: String

    /// Times and the stage are checked by TokenVerifier, against its injected clock.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    init(_ claims: ParticipantTokenClaims) {
        exp = claims.expiresAt
        iat = claims.issuedAt
        jti = claims.participantId
        user_id = claims.userId
        resource = claims.stageArn
        topic = claims.stageId
        events_url = claims.eventsURL
        whip_url = claims.whipURL
        capabilities = Capabilities(allow_publish: claims.capabilities.contains(.publish),
                                    allow_subscribe: claims.capabilities.contains(.subscribe))
        attributes = claims.attributes
        version = "1.0"
    }

    func claims(keyArn: String) -> ParticipantTokenClaims {
        var set: Set<ParticipantCapability> = []
        if capabilities.allow_publish == true { set.insert(.publish) }
        if capabilities.allow_subscribe == true { set.insert(.subscribe) }
        return ParticipantTokenClaims(participantId: jti, userId: user_id, stageArn: resource, stageId: topic, eventsURL: events_url,
                                      whipURL: whip_url, capabilities: set, attributes: attributes ?? [:], issuedAt: iat,
                                      expiresAt: exp, keyArn: keyArn)
    }
}

// MARK: - Signing and verifying

public struct TokenIssuer: Sendable {
    public let key: TokenSigningKey
    private let keys: JWTKeyCollection

    public init(key: TokenSigningKey) async {
        self.key = key
        keys = JWTKeyCollection()
        await keys.add(ecdsa: key.key, kid: JWKIdentifier(string: key.arn))
    }

    /// The compact JWT for these claims, signed ES384 with `kid` = the key's ARN.
    public func issue(_ claims: ParticipantTokenClaims) async throws(TokenError) -> String {
        do {
            return try await keys.sign(TokenPayload(claims), kid: JWKIdentifier(string: key.arn), header: ["typ": "JWT"])
        } catch {
            throw TokenError(.invalidClaims, "the token could not be signed")
        }
    }
}

public struct TokenVerifier: Sendable {
    /// Tokens longer than this are refused before any parsing.
    public static let maxTokenBytes = 8 * 1024
    /// How far in the future `iat` may be (clocks differ a little).
    public static let allowedSkewSeconds: Int64 = 30
    /// IVS: at most 14 days from `iat`.
    public static let maxLifetimeSeconds: Int64 = 14 * 86_400

    private let keys: JWTKeyCollection
    private let knownKeys: Set<String>

    /// `keys`: ARN → public key (the daemon's own and every imported one).
    public init(keys: [String: P384.Signing.PublicKey]) async throws(TokenError) {
        let collection = JWTKeyCollection()
        for (arn, key) in keys {
            do {
                try await collection.add(ecdsa: ES384PublicKey(backing: key), kid: JWKIdentifier(string: arn))
            } catch {
                throw TokenError(.invalidClaims, "public key \(arn) cannot verify ES384 tokens")
            }
        }
        self.keys = collection
        knownKeys = Set(keys.keys)
    }

    /// The token's claims, if it is genuine, current and for `stageArn`.
    public func verify(_ token: String, stageArn: String, now: Date) async throws(TokenError) -> ParticipantTokenClaims {
        guard token.utf8.count <= Self.maxTokenBytes else { throw TokenError(.malformed, "longer than \(Self.maxTokenBytes) bytes") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URLDecode(parts[0]),
              let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any] else {
            throw TokenError(.malformed, "not a JWT (header.payload.signature)")
        }
        guard let algorithm = header["alg"] as? String, algorithm == "ES384" else {
            throw TokenError(.wrongAlgorithm, "alg must be ES384, not \(String(describing: header["alg"] ?? "missing"))")
        }
        guard let kid = header["kid"] as? String else { throw TokenError(.unknownKey, "no kid (the signing key's ARN) in the header") }
        guard knownKeys.contains(kid) else {
            throw TokenError(.unknownKey, "signed by \(kid), which is not this server's key nor an imported public key")
        }
        let payload: TokenPayload
        do {
            payload = try await keys.verify(token, as: TokenPayload.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw TokenError(.badSignature, "the signature does not verify with key \(kid)")
        } catch {
            throw TokenError(.malformed, "the payload is not a participant token (exp, iat, jti, resource, topic, capabilities, version)")
        }
        let claims = payload.claims(keyArn: kid)
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        guard payload.version == "1.0" else { throw TokenError(.invalidClaims, "version must be 1.0", genuineClaims: claims) }
        guard Self.isParticipantID(payload.jti) else {
            throw TokenError(.invalidClaims, "jti must be 1-64 characters of A-Z, a-z, 0-9, - and _", genuineClaims: claims)
        }
        // Claims come from the token (an imported key signs whatever it likes): no trap on them.
        let (lifetime, overflow) = payload.exp.subtractingReportingOverflow(payload.iat)
        guard payload.exp > payload.iat, !overflow, lifetime <= Self.maxLifetimeSeconds else {
            throw TokenError(.invalidClaims, "exp must be after iat and at most 14 days later", genuineClaims: claims)
        }
        guard payload.iat <= seconds + Self.allowedSkewSeconds else {
            throw TokenError(.notYetValid, "issued in the future (iat \(payload.iat), now \(seconds))", genuineClaims: claims)
        }
        guard payload.exp > seconds else {
            throw TokenError(.expired, "expired at \(payload.exp) (now \(seconds))", genuineClaims: claims)
        }
        guard payload.resource == stageArn else {
            throw TokenError(.wrongStage, "issued for \(payload.resource), not \(stageArn)", genuineClaims: claims)
        }
        return claims
    }

    static func isParticipantID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45 || byte == 95
        }
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

// MARK: - The daemon's key on disk

/// The one I/O type: the daemon's signing key in `<directory>/participant-token-key.pem`
/// (0600, written atomically), created on first use and reused after.
public enum TokenKeyStore {
    public static let fileName = "participant-token-key.pem"

    /// `arn(publicKeyFingerprint)` names the key; the fingerprint is hex SHA-256 of its DER.
    public static func loadOrCreate(directory: String, arn: (String) -> String) throws(TokenError) -> TokenSigningKey {
        let path = directory + "/" + fileName
        let manager = FileManager.default
        if manager.fileExists(atPath: path) {
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw TokenError(.malformed, "cannot read the participant-token key \(path)")
            }
            let probe: TokenSigningKey
            do {
                probe = try TokenSigningKey(arn: "", pem: pem)
            } catch {
                throw TokenError(.malformed, "\(path) is not an ECDSA P-384 private key in PEM; move it away to make a new key "
                                 + "(tokens signed with the old one then stop working)")
            }
            return try TokenSigningKey(arn: arn(fingerprint(of: probe)), pem: pem)
        }
        do {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let fresh = TokenSigningKey(arn: "")
            let temporary = path + ".tmp-\(UInt32.random(in: 0...UInt32.max))"
            guard manager.createFile(atPath: temporary, contents: Data(fresh.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600])
            else { throw CocoaError(.fileWriteUnknown) }
            guard rename(temporary, path) == 0 else {
                try? manager.removeItem(atPath: temporary)
                throw CocoaError(.fileWriteUnknown)
            }
            return try TokenSigningKey(arn: arn(fingerprint(of: fresh)), pem: fresh.privateKeyPEM)
        } catch let error as TokenError {
            throw error
        } catch {
            throw TokenError(.malformed, "cannot write the participant-token key \(path): \(error)")
        }
    }

    static func fingerprint(of key: TokenSigningKey) -> String {
        guard let publicKey = try? P384.Signing.PublicKey(pemRepresentation: key.publicKeyPEM) else { return "" }
        return SHA256.hash(data: publicKey.derRepresentation).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }
}
