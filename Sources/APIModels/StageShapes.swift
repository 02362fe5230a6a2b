// Stage and tagging shapes and operations.

public enum ParticipantTokenCapability: String, Codable, Sendable, CaseIterable {
    case publish = "PUBLISH", subscribe = "SUBSCRIBE"
}

public enum ParticipantRecordingMediaType: String, Codable, Sendable, CaseIterable {
    case audioVideo = "AUDIO_VIDEO", audioOnly = "AUDIO_ONLY", none = "NONE"
}

public enum ThumbnailRecordingMode: String, Codable, Sendable, CaseIterable {
    case interval = "INTERVAL", disabled = "DISABLED"
}

public struct ParticipantTokenConfiguration: Codable, Hashable, Sendable {
    /// Minutes, 1...20160.
    public var duration: Int?
    public var userId: String?
    public var attributes: [String: String]?
    public var capabilities: [ParticipantTokenCapability]?

    public init(duration: Int? = nil, userId: String? = nil, attributes: [String: String]? = nil,
                capabilities: [ParticipantTokenCapability]? = nil) {
        self.duration = duration
        self.userId = userId
        self.attributes = attributes
        self.capabilities = capabilities
    }
}

public struct ParticipantToken: Codable, Hashable, Sendable {
    public var participantId: String?
    public var token: String?
    public var userId: String?
    public var attributes: [String: String]?
    public var duration: Int?
    public var capabilities: [ParticipantTokenCapability]?
    public var expirationTime: APITimestamp?

    public init(participantId: String? = nil, token: String? = nil, userId: String? = nil,
                attributes: [String: String]? = nil, duration: Int? = nil,
                capabilities: [ParticipantTokenCapability]? = nil, expirationTime: APITimestamp? = nil) {
        self.participantId = participantId
        self.token = token
        self.userId = userId
        self.attributes = attributes
        self.duration = duration
        self.capabilities = capabilities
        self.expirationTime = expirationTime
    }
}

public struct ParticipantThumbnailConfiguration: Codable, Hashable, Sendable {
    public var targetIntervalSeconds: Int?
    public var storage: [ThumbnailStorageType]?
    public var recordingMode: ThumbnailRecordingMode?

    public init(targetIntervalSeconds: Int? = nil, storage: [ThumbnailStorageType]? = nil,
                recordingMode: ThumbnailRecordingMode? = nil) {
        self.targetIntervalSeconds = targetIntervalSeconds
        self.storage = storage
        self.recordingMode = recordingMode
    }
}

public struct ParticipantRecordingHlsConfiguration: Codable, Hashable, Sendable {
    public var targetSegmentDurationSeconds: Int?
    public init(targetSegmentDurationSeconds: Int? = nil) { self.targetSegmentDurationSeconds = targetSegmentDurationSeconds }
}

/// Individual participant recording: `storageConfigurationArn` "" is off. What a request
/// leaves out takes the model's documented default (`withDefaults()`), which is also what
/// responses show.
public struct AutoParticipantRecordingConfiguration: Codable, Hashable, Sendable {
    /// "" or a storage-configuration ARN.
    public var storageConfigurationArn: String
    public var mediaTypes: [ParticipantRecordingMediaType]?
    public var thumbnailConfiguration: ParticipantThumbnailConfiguration?
    /// 0...300
    public var recordingReconnectWindowSeconds: Int?
    public var hlsConfiguration: ParticipantRecordingHlsConfiguration?
    public var recordParticipantReplicas: Bool?

    public init(storageConfigurationArn: String, mediaTypes: [ParticipantRecordingMediaType]? = nil,
                thumbnailConfiguration: ParticipantThumbnailConfiguration? = nil,
                recordingReconnectWindowSeconds: Int? = nil,
                hlsConfiguration: ParticipantRecordingHlsConfiguration? = nil, recordParticipantReplicas: Bool? = nil) {
        self.storageConfigurationArn = storageConfigurationArn
        self.mediaTypes = mediaTypes
        self.thumbnailConfiguration = thumbnailConfiguration
        self.recordingReconnectWindowSeconds = recordingReconnectWindowSeconds
        self.hlsConfiguration = hlsConfiguration
        self.recordParticipantReplicas = recordParticipantReplicas
    }

    /// Recording off: what a stage created without the field reports.
    public static let off = AutoParticipantRecordingConfiguration(storageConfigurationArn: "").withDefaults()

    /// Every field the model documents a default for, filled in: AUDIO_VIDEO; thumbnails
    /// DISABLED (every 60 s, SEQUENTIAL, when enabled); no merging window; 6 s segments;
    /// replicas recorded. Setting the storage to "" resets every other field (as IVS does).
    public func withDefaults() -> AutoParticipantRecordingConfiguration {
        let kept = storageConfigurationArn.isEmpty ? AutoParticipantRecordingConfiguration(storageConfigurationArn: "") : self
        let thumbnail = kept.thumbnailConfiguration
        return AutoParticipantRecordingConfiguration(
            storageConfigurationArn: storageConfigurationArn,
            mediaTypes: kept.mediaTypes ?? [.audioVideo],
            thumbnailConfiguration: ParticipantThumbnailConfiguration(
                targetIntervalSeconds: thumbnail?.targetIntervalSeconds ?? 60, storage: thumbnail?.storage ?? [.sequential],
                recordingMode: thumbnail?.recordingMode ?? .disabled),
            recordingReconnectWindowSeconds: kept.recordingReconnectWindowSeconds ?? 0,
            hlsConfiguration: ParticipantRecordingHlsConfiguration(
                targetSegmentDurationSeconds: kept.hlsConfiguration?.targetSegmentDurationSeconds ?? 6),
            recordParticipantReplicas: kept.recordParticipantReplicas ?? true)
    }
}

public struct StageEndpoints: Codable, Hashable, Sendable {
    public var events: String?
    public var whip: String?
    public var rtmp: String?
    public var rtmps: String?

    public init(events: String? = nil, whip: String? = nil, rtmp: String? = nil, rtmps: String? = nil) {
        self.events = events
        self.whip = whip
        self.rtmp = rtmp
        self.rtmps = rtmps
    }
}

public struct Stage: Codable, Hashable, Sendable {
    public var arn: String
    public var name: String?
    /// `st-` + 13 alphanumerics (16 characters).
    public var activeSessionId: String?
    public var tags: Tags?
    public var autoParticipantRecordingConfiguration: AutoParticipantRecordingConfiguration?
    public var endpoints: StageEndpoints?

    public init(arn: String, name: String? = nil, activeSessionId: String? = nil, tags: Tags? = nil,
                autoParticipantRecordingConfiguration: AutoParticipantRecordingConfiguration? = nil,
                endpoints: StageEndpoints? = nil) {
        self.arn = arn
        self.name = name
        self.activeSessionId = activeSessionId
        self.tags = tags
        self.autoParticipantRecordingConfiguration = autoParticipantRecordingConfiguration
        self.endpoints = endpoints
    }

    public var summary: StageSummary { StageSummary(arn: arn, name: name, activeSessionId: activeSessionId, tags: tags) }
}

public struct StageSummary: Codable, Hashable, Sendable {
    public var arn: String
    public var name: String?
    public var activeSessionId: String?
    public var tags: Tags?

    public init(arn: String, name: String? = nil, activeSessionId: String? = nil, tags: Tags? = nil) {
        self.arn = arn
        self.name = name
        self.activeSessionId = activeSessionId
        self.tags = tags
    }
}

public struct CreateStageRequest: Codable, Hashable, Sendable {
    public var name: String?
    public var participantTokenConfigurations: [ParticipantTokenConfiguration]?
    public var tags: Tags?
    public var autoParticipantRecordingConfiguration: AutoParticipantRecordingConfiguration?

    public init(name: String? = nil, participantTokenConfigurations: [ParticipantTokenConfiguration]? = nil,
                tags: Tags? = nil, autoParticipantRecordingConfiguration: AutoParticipantRecordingConfiguration? = nil) {
        self.name = name
        self.participantTokenConfigurations = participantTokenConfigurations
        self.tags = tags
        self.autoParticipantRecordingConfiguration = autoParticipantRecordingConfiguration
    }
}

public struct CreateStageResponse: Codable, Hashable, Sendable {
    public var stage: Stage?
    public var participantTokens: [ParticipantToken]?
    public init(stage: Stage?, participantTokens: [ParticipantToken]? = nil) {
        self.stage = stage
        self.participantTokens = participantTokens
    }
}

public struct GetStageRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct GetStageResponse: Codable, Hashable, Sendable {
    public var stage: Stage?
    public init(stage: Stage?) { self.stage = stage }
}

public struct ListStagesRequest: Codable, Hashable, Sendable {
    public var nextToken: String?
    public var maxResults: Int?
    public init(nextToken: String? = nil, maxResults: Int? = nil) {
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListStagesResponse: Codable, Hashable, Sendable {
    public var stages: [StageSummary]
    public var nextToken: String?
    public init(stages: [StageSummary], nextToken: String? = nil) {
        self.stages = stages
        self.nextToken = nextToken
    }
}

public struct DeleteStageRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct DeleteStageResponse: Codable, Hashable, Sendable {
    public init() {}
}

// MARK: - Tagging (resource ARN in the path)

/// `POST /tags/{resourceArn}` with body `{"tags": {...}}`. `resourceArn` comes from the
/// path, so it is not part of the coded body.
public struct TagResourceRequest: Hashable, Sendable {
    public var resourceArn: String
    public var tags: Tags

    public init(resourceArn: String, tags: Tags) {
        self.resourceArn = resourceArn
        self.tags = tags
    }

    /// The JSON body of the request.
    public struct Body: Codable, Hashable, Sendable {
        public var tags: Tags
        public init(tags: Tags) { self.tags = tags }
    }

    public init(resourceArn: String, body: Body) { self.init(resourceArn: resourceArn, tags: body.tags) }
}

public struct TagResourceResponse: Codable, Hashable, Sendable {
    public init() {}
}

/// `DELETE /tags/{resourceArn}?tagKeys=a&tagKeys=b`.
public struct UntagResourceRequest: Hashable, Sendable {
    public var resourceArn: String
    public var tagKeys: [String]

    public init(resourceArn: String, tagKeys: [String]) {
        self.resourceArn = resourceArn
        self.tagKeys = tagKeys
    }

    /// Builds the request from the raw query string (`tagKeys=a&tagKeys=b%20c`); other
    /// parameters are ignored.
    public init(resourceArn: String, query: String) throws(APIError) {
        var keys: [String] = []
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.first == "tagKeys" else { continue }
            let raw = parts.count == 2 ? String(parts[1]) : ""
            guard let key = PercentDecoding.decode(raw.replacingPlusWithSpace()) else {
                throw .validation("tagKeys: invalid percent-encoding")
            }
            keys.append(key)
        }
        self.init(resourceArn: resourceArn, tagKeys: keys)
    }
}

public struct UntagResourceResponse: Codable, Hashable, Sendable {
    public init() {}
}

/// `GET /tags/{resourceArn}`.
public struct ListTagsForResourceRequest: Hashable, Sendable {
    public var resourceArn: String
    public init(resourceArn: String) { self.resourceArn = resourceArn }
}

public struct ListTagsForResourceResponse: Codable, Hashable, Sendable {
    public var tags: Tags
    public init(tags: Tags) { self.tags = tags }
}

extension String {
    func replacingPlusWithSpace() -> String {
        String(unicodeScalars.map { $0 == "+" ? " " : Character($0) })
    }
}
