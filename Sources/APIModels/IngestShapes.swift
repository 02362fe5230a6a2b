// RTMP ingest: IngestConfiguration shapes and operations (the model's IngestConfiguration*),
// and the stream keys they carry.

public enum IngestProtocol: String, Codable, Sendable, CaseIterable {
    case rtmp = "RTMP", rtmps = "RTMPS"
}

public enum IngestConfigurationState: String, Codable, Sendable, CaseIterable {
    case active = "ACTIVE", inactive = "INACTIVE"
}

/// One of a redundant-ingest configuration's two keys: 0 is the configuration's own (the
/// primary), 1 the backup; both publish as the configuration's participant.
public struct RedundantIngestCredential: Codable, Hashable, Sendable {
    public var participantId: String?
    public var streamKey: String?
    public init(participantId: String? = nil, streamKey: String? = nil) {
        self.participantId = participantId
        self.streamKey = streamKey
    }
}

public struct IngestConfiguration: Codable, Hashable, Sendable {
    public var name: String?
    public var arn: String
    public var ingestProtocol: IngestProtocol
    public var streamKey: String
    /// "" when the configuration has no stage (its key cannot be used then).
    public var stageArn: String
    public var participantId: String
    public var state: IngestConfigurationState
    public var userId: String?
    public var redundantIngest: Bool?
    public var redundantIngestCredentials: [RedundantIngestCredential]?
    public var attributes: [String: String]?
    public var tags: Tags?

    public init(name: String? = nil, arn: String, ingestProtocol: IngestProtocol, streamKey: String, stageArn: String,
                participantId: String, state: IngestConfigurationState, userId: String? = nil, redundantIngest: Bool? = nil,
                redundantIngestCredentials: [RedundantIngestCredential]? = nil,
                attributes: [String: String]? = nil, tags: Tags? = nil) {
        self.name = name
        self.arn = arn
        self.ingestProtocol = ingestProtocol
        self.streamKey = streamKey
        self.stageArn = stageArn
        self.participantId = participantId
        self.state = state
        self.userId = userId
        self.redundantIngest = redundantIngest
        self.redundantIngestCredentials = redundantIngestCredentials
        self.attributes = attributes
        self.tags = tags
    }

    public var summary: IngestConfigurationSummary {
        IngestConfigurationSummary(name: name, arn: arn, ingestProtocol: ingestProtocol, stageArn: stageArn,
                                   participantId: participantId, state: state, userId: userId, redundantIngest: redundantIngest)
    }
}

public struct IngestConfigurationSummary: Codable, Hashable, Sendable {
    public var name: String?
    public var arn: String
    public var ingestProtocol: IngestProtocol
    public var stageArn: String
    public var participantId: String
    public var state: IngestConfigurationState
    public var userId: String?
    public var redundantIngest: Bool?

    public init(name: String?, arn: String, ingestProtocol: IngestProtocol, stageArn: String, participantId: String,
                state: IngestConfigurationState, userId: String?, redundantIngest: Bool?) {
        self.name = name
        self.arn = arn
        self.ingestProtocol = ingestProtocol
        self.stageArn = stageArn
        self.participantId = participantId
        self.state = state
        self.userId = userId
        self.redundantIngest = redundantIngest
    }
}

public struct CreateIngestConfigurationRequest: Codable, Hashable, Sendable {
    public var name: String?
    public var stageArn: String?
    public var userId: String?
    public var attributes: [String: String]?
    public var ingestProtocol: IngestProtocol
    public var insecureIngest: Bool?
    public var redundantIngest: Bool?
    public var tags: Tags?

    public init(name: String? = nil, stageArn: String? = nil, userId: String? = nil, attributes: [String: String]? = nil,
                ingestProtocol: IngestProtocol, insecureIngest: Bool? = nil, redundantIngest: Bool? = nil, tags: Tags? = nil) {
        self.name = name
        self.stageArn = stageArn
        self.userId = userId
        self.attributes = attributes
        self.ingestProtocol = ingestProtocol
        self.insecureIngest = insecureIngest
        self.redundantIngest = redundantIngest
        self.tags = tags
    }
}

public struct CreateIngestConfigurationResponse: Codable, Hashable, Sendable {
    public var ingestConfiguration: IngestConfiguration?
    public init(ingestConfiguration: IngestConfiguration?) { self.ingestConfiguration = ingestConfiguration }
}

public struct GetIngestConfigurationRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct GetIngestConfigurationResponse: Codable, Hashable, Sendable {
    public var ingestConfiguration: IngestConfiguration?
    public init(ingestConfiguration: IngestConfiguration?) { self.ingestConfiguration = ingestConfiguration }
}

public struct UpdateIngestConfigurationRequest: Codable, Hashable, Sendable {
    public var arn: String
    public var stageArn: String?
    public var redundantIngest: Bool?
    public init(arn: String, stageArn: String? = nil, redundantIngest: Bool? = nil) {
        self.arn = arn
        self.stageArn = stageArn
        self.redundantIngest = redundantIngest
    }
}

public struct UpdateIngestConfigurationResponse: Codable, Hashable, Sendable {
    public var ingestConfiguration: IngestConfiguration?
    public init(ingestConfiguration: IngestConfiguration?) { self.ingestConfiguration = ingestConfiguration }
}

public struct DeleteIngestConfigurationRequest: Codable, Hashable, Sendable {
    public var arn: String
    /// Disconnect a publishing participant first, instead of refusing.
    public var force: Bool?
    public init(arn: String, force: Bool? = nil) {
        self.arn = arn
        self.force = force
    }
}

public struct DeleteIngestConfigurationResponse: Codable, Hashable, Sendable {
    public init() {}
}

public struct ListIngestConfigurationsRequest: Codable, Hashable, Sendable {
    public var filterByStageArn: String?
    public var filterByState: IngestConfigurationState?
    public var nextToken: String?
    public var maxResults: Int?
    public init(filterByStageArn: String? = nil, filterByState: IngestConfigurationState? = nil, nextToken: String? = nil,
                maxResults: Int? = nil) {
        self.filterByStageArn = filterByStageArn
        self.filterByState = filterByState
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListIngestConfigurationsResponse: Codable, Hashable, Sendable {
    public var ingestConfigurations: [IngestConfigurationSummary]
    public var nextToken: String?
    public init(ingestConfigurations: [IngestConfigurationSummary], nextToken: String? = nil) {
        self.ingestConfigurations = ingestConfigurations
        self.nextToken = nextToken
    }
}

/// `rt_<account>_<region>_<ingest configuration id>_<secret>`, matching the model's
/// StreamKey pattern `rt_[0-9]+_[a-z0-9-]+_[a-zA-Z0-9-]+_.+`. The secret is what
/// authenticates a publisher; the ID only says which configuration to check it against.
/// `description` is the whole key (it goes into API responses); log `redacted` instead.
public struct StreamKey: Hashable, Sendable, CustomStringConvertible {
    public let account: String
    public let region: String
    public let ingestConfigurationID: String
    public let secret: String

    public static let secretLength = 32
    /// Longer input is refused before any parsing (a publisher sends this string).
    public static let maximumLength = 512

    /// A new key with `secretLength` random alphanumerics (62 symbols: about 190 bits).
    /// The server passes `SystemRandomNumberGenerator`, which on Linux reads getrandom(2),
    /// a CSPRNG; tests pass a seeded generator.
    public static func generate(account: String, region: String, ingestConfigurationID: String,
                                using generator: inout some RandomNumberGenerator) -> StreamKey {
        var secret = ""
        for _ in 0..<secretLength { secret.append(ResourceID.alphabet.randomElement(using: &generator)!) }
        return StreamKey(account: account, region: region, ingestConfigurationID: ingestConfigurationID, secret: secret)
    }

    /// A new key for the ingest configuration `arn` (its account, region and ID).
    public static func generate(for arn: IVSARN, using generator: inout some RandomNumberGenerator) -> StreamKey {
        generate(account: arn.account, region: arn.region, ingestConfigurationID: arn.resourceID, using: &generator)
    }

    init(account: String, region: String, ingestConfigurationID: String, secret: String) {
        self.account = account
        self.region = region
        self.ingestConfigurationID = ingestConfigurationID
        self.secret = secret
    }

    /// Parses a key; nil when it does not have the shape (never a crash on publisher input).
    /// The region and ID cannot contain `_`, so the first four underscores split the key and
    /// the secret keeps any further ones; like the pattern's `.`, it has no line breaks.
    public init?(parsing text: String) {
        guard text.hasPrefix("rt_"), text.utf8.count <= Self.maximumLength else { return nil }
        let parts = text.dropFirst(3).split(separator: "_", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, CharacterRules.isAccount(String(parts[0])), CharacterRules.isRegion(String(parts[1])),
              CharacterRules.isResourceID(String(parts[2])), !parts[3].isEmpty,
              !parts[3].unicodeScalars.contains(where: CharacterRules.isLineTerminator) else { return nil }
        self.init(account: String(parts[0]), region: String(parts[1]), ingestConfigurationID: String(parts[2]),
                  secret: String(parts[3]))
    }

    /// The ingest configuration ID inside `text`; nil for anything that is not a stream key.
    public static func ingestConfigurationID(in text: String) -> String? {
        StreamKey(parsing: text)?.ingestConfigurationID
    }

    public var description: String { "rt_\(account)_\(region)_\(ingestConfigurationID)_\(secret)" }

    /// The key with its secret hidden, for logs.
    public var redacted: String { "rt_\(account)_\(region)_\(ingestConfigurationID)_***" }
}
