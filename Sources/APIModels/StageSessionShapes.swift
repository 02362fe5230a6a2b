// Stage sessions, participants and their events (the model's StageSession, Participant,
// Event), and UpdateStage / DisconnectParticipant.

public enum ParticipantState: String, Codable, Sendable, CaseIterable {
    case connected = "CONNECTED", disconnected = "DISCONNECTED"
}

public enum ParticipantProtocol: String, Codable, Sendable, CaseIterable {
    case unknown = "UNKNOWN", whip = "WHIP", rtmp = "RTMP", rtmps = "RTMPS"
}

public enum ParticipantRecordingState: String, Codable, Sendable, CaseIterable {
    case starting = "STARTING", active = "ACTIVE", stopping = "STOPPING", stopped = "STOPPED", failed = "FAILED"
    case disabled = "DISABLED"
}

/// Participant replication between stages (not offered here; participants report NONE).
public enum ReplicationType: String, Codable, Sendable, CaseIterable {
    // Not `none`: as an optional member, `.none` would read as nil.
    case source = "SOURCE", replica = "REPLICA", notReplicated = "NONE"
}

public enum ReplicationState: String, Codable, Sendable, CaseIterable {
    case active = "ACTIVE", stopped = "STOPPED"
}

/// The model's `EventName`: what happened to a participant during a stage session.
public enum EventName: String, Codable, Sendable, CaseIterable {
    case joined = "JOINED", left = "LEFT", publishStarted = "PUBLISH_STARTED", publishStopped = "PUBLISH_STOPPED"
    case subscribeStarted = "SUBSCRIBE_STARTED", subscribeStopped = "SUBSCRIBE_STOPPED", publishError = "PUBLISH_ERROR"
    case subscribeError = "SUBSCRIBE_ERROR", joinError = "JOIN_ERROR", replicationStarted = "REPLICATION_STARTED"
    case replicationStopped = "REPLICATION_STOPPED", tokenExchanged = "TOKEN_EXCHANGED"
}

/// The name the daemon's code first used for `EventName`.
public typealias ParticipantEventName = EventName

/// The model's `EventErrorCode`: why a PUBLISH_ERROR, SUBSCRIBE_ERROR or JOIN_ERROR happened.
public enum EventErrorCode: String, Codable, Sendable, CaseIterable {
    case insufficientCapabilities = "INSUFFICIENT_CAPABILITIES", quotaExceeded = "QUOTA_EXCEEDED"
    case publisherNotFound = "PUBLISHER_NOT_FOUND", bitrateExceeded = "BITRATE_EXCEEDED"
    case resolutionExceeded = "RESOLUTION_EXCEEDED", streamDurationExceeded = "STREAM_DURATION_EXCEEDED"
    case invalidAudioCodec = "INVALID_AUDIO_CODEC", invalidVideoCodec = "INVALID_VIDEO_CODEC"
    case invalidProtocol = "INVALID_PROTOCOL", invalidStreamKey = "INVALID_STREAM_KEY"
    case reuseOfStreamKey = "REUSE_OF_STREAM_KEY", bFramePresent = "B_FRAME_PRESENT", invalidInput = "INVALID_INPUT"
    case internalServerException = "INTERNAL_SERVER_EXCEPTION"
}

/// A stage session: from the first participant joining to the last one leaving.
public struct StageSession: Codable, Hashable, Sendable {
    public var sessionId: String?
    public var startTime: APITimestamp?
    /// Nil while the session is active.
    public var endTime: APITimestamp?
    public init(sessionId: String?, startTime: APITimestamp?, endTime: APITimestamp? = nil) {
        self.sessionId = sessionId
        self.startTime = startTime
        self.endTime = endTime
    }

    public var summary: StageSessionSummary { StageSessionSummary(sessionId: sessionId, startTime: startTime, endTime: endTime) }
}

public struct StageSessionSummary: Codable, Hashable, Sendable {
    public var sessionId: String?
    public var startTime: APITimestamp?
    public var endTime: APITimestamp?
    public init(sessionId: String?, startTime: APITimestamp?, endTime: APITimestamp?) {
        self.sessionId = sessionId
        self.startTime = startTime
        self.endTime = endTime
    }
}

/// The model's `Participant`: every member optional, as in the model.
public struct Participant: Codable, Hashable, Sendable {
    public var participantId: String?
    public var userId: String?
    public var state: ParticipantState?
    public var firstJoinTime: APITimestamp?
    public var attributes: [String: String]?
    public var published: Bool?
    public var ispName: String?
    public var osName: String?
    public var osVersion: String?
    public var browserName: String?
    public var browserVersion: String?
    public var sdkVersion: String?
    public var recordingS3BucketName: String?
    public var recordingS3Prefix: String?
    public var recordingState: ParticipantRecordingState?
    public var `protocol`: ParticipantProtocol?
    public var replicationType: ReplicationType?
    public var replicationState: ReplicationState?
    public var sourceStageArn: String?
    public var sourceSessionId: String?
    public var redundantIngest: Bool?
    public var ingestConfigurationArn: String?

    /// A participant as this daemon reports one: no individual recording (bucket and prefix
    /// "", as the model says for disabled recording), no replication (NONE), and redundant
    /// ingest as its ingest configuration has it (false for everyone else).
    public init(participantId: String?, userId: String?, state: ParticipantState?, firstJoinTime: APITimestamp?,
                attributes: [String: String]?, published: Bool?, recordingState: ParticipantRecordingState? = .disabled,
                protocol: ParticipantProtocol?, ingestConfigurationArn: String? = nil, redundantIngest: Bool = false) {
        self.redundantIngest = redundantIngest
        self.participantId = participantId
        self.userId = userId
        self.state = state
        self.firstJoinTime = firstJoinTime
        self.attributes = attributes
        self.published = published
        self.recordingState = recordingState
        self.protocol = `protocol`
        self.ingestConfigurationArn = ingestConfigurationArn
        recordingS3BucketName = ""
        recordingS3Prefix = ""
        replicationType = .notReplicated
    }

    public var summary: ParticipantSummary {
        ParticipantSummary(participantId: participantId, userId: userId, state: state, firstJoinTime: firstJoinTime,
                           published: published, recordingState: recordingState, replicationType: replicationType,
                           replicationState: replicationState, sourceStageArn: sourceStageArn, sourceSessionId: sourceSessionId,
                           redundantIngest: redundantIngest, ingestConfigurationArn: ingestConfigurationArn)
    }
}

public struct ParticipantSummary: Codable, Hashable, Sendable {
    public var participantId: String?
    public var userId: String?
    public var state: ParticipantState?
    public var firstJoinTime: APITimestamp?
    public var published: Bool?
    public var recordingState: ParticipantRecordingState?
    public var replicationType: ReplicationType?
    public var replicationState: ReplicationState?
    public var sourceStageArn: String?
    public var sourceSessionId: String?
    public var redundantIngest: Bool?
    public var ingestConfigurationArn: String?

    public init(participantId: String?, userId: String?, state: ParticipantState?, firstJoinTime: APITimestamp?,
                published: Bool?, recordingState: ParticipantRecordingState?, replicationType: ReplicationType?,
                replicationState: ReplicationState? = nil, sourceStageArn: String? = nil, sourceSessionId: String? = nil,
                redundantIngest: Bool?, ingestConfigurationArn: String?) {
        self.participantId = participantId
        self.userId = userId
        self.state = state
        self.firstJoinTime = firstJoinTime
        self.published = published
        self.recordingState = recordingState
        self.replicationType = replicationType
        self.replicationState = replicationState
        self.sourceStageArn = sourceStageArn
        self.sourceSessionId = sourceSessionId
        self.redundantIngest = redundantIngest
        self.ingestConfigurationArn = ingestConfigurationArn
    }
}

/// The model's `ExchangedParticipantToken` (the before and after of a TOKEN_EXCHANGED event).
public struct ExchangedParticipantToken: Codable, Hashable, Sendable {
    public var capabilities: [ParticipantTokenCapability]?
    public var attributes: [String: String]?
    public var userId: String?
    public var expirationTime: APITimestamp?

    public init(capabilities: [ParticipantTokenCapability]? = nil, attributes: [String: String]? = nil,
                userId: String? = nil, expirationTime: APITimestamp? = nil) {
        self.capabilities = capabilities
        self.attributes = attributes
        self.userId = userId
        self.expirationTime = expirationTime
    }
}

/// The model's `Event`: one occurrence in a participant's stage session.
public struct ParticipantEvent: Codable, Hashable, Sendable {
    public var name: EventName?
    public var participantId: String?
    public var eventTime: APITimestamp?
    /// The publisher, for subscribe events; nil for publish and join events.
    public var remoteParticipantId: String?
    /// Set for the error events only.
    public var errorCode: EventErrorCode?
    public var destinationStageArn: String?
    public var destinationSessionId: String?
    public var replica: Bool?
    public var previousToken: ExchangedParticipantToken?
    public var newToken: ExchangedParticipantToken?

    public init(name: EventName?, participantId: String?, eventTime: APITimestamp?, errorCode: EventErrorCode? = nil,
                remoteParticipantId: String? = nil, destinationStageArn: String? = nil, destinationSessionId: String? = nil,
                replica: Bool? = nil, previousToken: ExchangedParticipantToken? = nil, newToken: ExchangedParticipantToken? = nil) {
        self.name = name
        self.participantId = participantId
        self.eventTime = eventTime
        self.errorCode = errorCode
        self.remoteParticipantId = remoteParticipantId
        self.destinationStageArn = destinationStageArn
        self.destinationSessionId = destinationSessionId
        self.replica = replica
        self.previousToken = previousToken
        self.newToken = newToken
    }
}

public struct ListStageSessionsRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    public var nextToken: String?
    public var maxResults: Int?
    public init(stageArn: String, nextToken: String? = nil, maxResults: Int? = nil) {
        self.stageArn = stageArn
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListStageSessionsResponse: Codable, Hashable, Sendable {
    public var stageSessions: [StageSessionSummary]
    public var nextToken: String?
    public init(stageSessions: [StageSessionSummary], nextToken: String? = nil) {
        self.stageSessions = stageSessions
        self.nextToken = nextToken
    }
}

public struct GetStageSessionRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    public var sessionId: String
    public init(stageArn: String, sessionId: String) {
        self.stageArn = stageArn
        self.sessionId = sessionId
    }
}

public struct GetStageSessionResponse: Codable, Hashable, Sendable {
    public var stageSession: StageSession?
    public init(stageSession: StageSession?) { self.stageSession = stageSession }
}

public struct ListParticipantsRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    public var sessionId: String
    public var filterByUserId: String?
    public var filterByPublished: Bool?
    public var filterByState: ParticipantState?
    public var filterByRecordingState: ParticipantRecordingState?
    public var nextToken: String?
    public var maxResults: Int?
    public init(stageArn: String, sessionId: String, filterByUserId: String? = nil, filterByPublished: Bool? = nil,
                filterByState: ParticipantState? = nil, filterByRecordingState: ParticipantRecordingState? = nil,
                nextToken: String? = nil, maxResults: Int? = nil) {
        self.stageArn = stageArn
        self.sessionId = sessionId
        self.filterByUserId = filterByUserId
        self.filterByPublished = filterByPublished
        self.filterByState = filterByState
        self.filterByRecordingState = filterByRecordingState
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListParticipantsResponse: Codable, Hashable, Sendable {
    public var participants: [ParticipantSummary]
    public var nextToken: String?
    public init(participants: [ParticipantSummary], nextToken: String? = nil) {
        self.participants = participants
        self.nextToken = nextToken
    }
}

public struct GetParticipantRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    public var sessionId: String
    public var participantId: String
    public init(stageArn: String, sessionId: String, participantId: String) {
        self.stageArn = stageArn
        self.sessionId = sessionId
        self.participantId = participantId
    }
}

/// Extension (not in the IVS model): a producer's backend changes a publishing participant's
/// attributes, as a token exchange would (TOKEN_EXCHANGED); every composition of the stage
/// lays out again.
public struct UpdateParticipantRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    public var participantId: String
    public var attributes: [String: String]

    public init(stageArn: String, participantId: String, attributes: [String: String]) {
        self.stageArn = stageArn
        self.participantId = participantId
        self.attributes = attributes
    }
}

public struct UpdateParticipantResponse: Codable, Hashable, Sendable {
    public var participant: Participant?
    public init(participant: Participant?) { self.participant = participant }
}

public struct GetParticipantResponse: Codable, Hashable, Sendable {
    public var participant: Participant?
    public init(participant: Participant?) { self.participant = participant }
}

public struct ListParticipantEventsRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    public var sessionId: String
    public var participantId: String
    public var nextToken: String?
    public var maxResults: Int?
    public init(stageArn: String, sessionId: String, participantId: String, nextToken: String? = nil, maxResults: Int? = nil) {
        self.stageArn = stageArn
        self.sessionId = sessionId
        self.participantId = participantId
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListParticipantEventsResponse: Codable, Hashable, Sendable {
    public var events: [ParticipantEvent]
    public var nextToken: String?
    public init(events: [ParticipantEvent], nextToken: String? = nil) {
        self.events = events
        self.nextToken = nextToken
    }
}

public struct DisconnectParticipantRequest: Codable, Hashable, Sendable {
    public var stageArn: String
    public var participantId: String
    public var reason: String?
    public init(stageArn: String, participantId: String, reason: String? = nil) {
        self.stageArn = stageArn
        self.participantId = participantId
        self.reason = reason
    }
}

public struct DisconnectParticipantResponse: Codable, Hashable, Sendable {
    public init() {}
}

/// A participant token's ID is its `jti`, the participant ID it connects as: revoked, no
/// token with it connects again (until the longest a token lives has passed), and whoever is
/// connected with one now is disconnected.
public struct RevokeConnectionTokenRequest: Codable, Hashable, Sendable {
    public var tokenId: String
    public init(tokenId: String) { self.tokenId = tokenId }
}

public struct RevokeConnectionTokenResponse: Codable, Hashable, Sendable {
    public init() {}
}

public struct UpdateStageRequest: Codable, Hashable, Sendable {
    public var arn: String
    public var name: String?
    public var autoParticipantRecordingConfiguration: AutoParticipantRecordingConfiguration?
    public init(arn: String, name: String? = nil, autoParticipantRecordingConfiguration: AutoParticipantRecordingConfiguration? = nil) {
        self.arn = arn
        self.name = name
        self.autoParticipantRecordingConfiguration = autoParticipantRecordingConfiguration
    }
}

public struct UpdateStageResponse: Codable, Hashable, Sendable {
    public var stage: Stage?
    public init(stage: Stage?) { self.stage = stage }
}

/// `st-` + 13 alphanumerics: the model's StageSessionId (exactly 16 characters,
/// `st-[a-zA-Z0-9]+`).
public enum StageSessionID {
    public static let prefix = "st-"
    public static let length = 16

    /// A new session ID; the server passes `SystemRandomNumberGenerator`, tests a seeded one.
    public static func generate(using generator: inout some RandomNumberGenerator) -> String {
        var text = prefix
        for _ in prefix.count..<length { text.append(ResourceID.alphabet.randomElement(using: &generator)!) }
        return text
    }

    /// Whether `text` is a session ID of the model's shape.
    public static func isValid(_ text: String) -> Bool {
        text.unicodeScalars.count == length && text.hasPrefix(prefix)
            && text.unicodeScalars.dropFirst(prefix.count).allSatisfy(CharacterRules.isAlphanumeric)
    }
}
