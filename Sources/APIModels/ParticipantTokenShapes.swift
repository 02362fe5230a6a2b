// WHIP publishing credentials: CreateParticipantToken, and the public keys (ImportPublicKey
// and friends) whose private halves may sign participant tokens instead of the server.
// Shapes and their validation only; signing and verifying tokens live elsewhere.

public struct CreateParticipantTokenRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    /// Minutes, 1...20160; `defaultDuration` when absent.
    public var duration: Int?
    public var userId: String?
    public var attributes: [String: String]?
    /// PUBLISH and SUBSCRIBE when absent.
    public var capabilities: [ParticipantTokenCapability]?

    public static let defaultDuration = 720
    public static let defaultCapabilities: [ParticipantTokenCapability] = [.publish, .subscribe]

    public init(stageArn: String, duration: Int? = nil, userId: String? = nil, attributes: [String: String]? = nil,
                capabilities: [ParticipantTokenCapability]? = nil) {
        self.stageArn = stageArn
        self.duration = duration
        self.userId = userId
        self.attributes = attributes
        self.capabilities = capabilities
    }
}

public struct CreateParticipantTokenResponse: Codable, Hashable, Sendable {
    public var participantToken: ParticipantToken?
    public init(participantToken: ParticipantToken?) { self.participantToken = participantToken }
}

/// The model's `PublicKey`: every member optional, as in the model.
public struct PublicKey: Codable, Hashable, Sendable {
    public var arn: String?
    public var name: String?
    /// PEM (`-----BEGIN PUBLIC KEY-----` ...), as imported.
    public var publicKeyMaterial: String?
    /// A short string identifying the key.
    public var fingerprint: String?
    public var tags: Tags?

    public init(arn: String?, name: String? = nil, publicKeyMaterial: String? = nil, fingerprint: String? = nil,
                tags: Tags? = nil) {
        self.arn = arn
        self.name = name
        self.publicKeyMaterial = publicKeyMaterial
        self.fingerprint = fingerprint
        self.tags = tags
    }

    public var summary: PublicKeySummary { PublicKeySummary(arn: arn, name: name, tags: tags) }
}

public struct PublicKeySummary: Codable, Hashable, Sendable {
    public var arn: String?
    public var name: String?
    public var tags: Tags?

    public init(arn: String?, name: String? = nil, tags: Tags? = nil) {
        self.arn = arn
        self.name = name
        self.tags = tags
    }
}

public struct ImportPublicKeyRequest: Codable, Hashable, Sendable {
    public var publicKeyMaterial: String
    public var name: String?
    public var tags: Tags?

    public init(publicKeyMaterial: String, name: String? = nil, tags: Tags? = nil) {
        self.publicKeyMaterial = publicKeyMaterial
        self.name = name
        self.tags = tags
    }
}

public struct ImportPublicKeyResponse: Codable, Hashable, Sendable {
    public var publicKey: PublicKey?
    public init(publicKey: PublicKey?) { self.publicKey = publicKey }
}

public struct GetPublicKeyRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct GetPublicKeyResponse: Codable, Hashable, Sendable {
    public var publicKey: PublicKey?
    public init(publicKey: PublicKey?) { self.publicKey = publicKey }
}

public struct ListPublicKeysRequest: Codable, Hashable, Sendable {
    public var nextToken: String?
    public var maxResults: Int?
    public init(nextToken: String? = nil, maxResults: Int? = nil) {
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListPublicKeysResponse: Codable, Hashable, Sendable {
    public var publicKeys: [PublicKeySummary]
    public var nextToken: String?
    public init(publicKeys: [PublicKeySummary], nextToken: String? = nil) {
        self.publicKeys = publicKeys
        self.nextToken = nextToken
    }
}

public struct DeletePublicKeyRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct DeletePublicKeyResponse: Codable, Hashable, Sendable {
    public init() {}
}
