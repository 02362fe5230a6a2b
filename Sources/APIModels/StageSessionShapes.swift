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

public enum ParticipantEventName: String, Codable, Sendable, CaseIterable {
    case joined = "JOINED", left = "LEFT", publishStarted = "PUBLISH_STARTED", publishStopped = "PUBLISH_STOPPED"
    case subscribeStarted = "SUBSCRIBE_STARTED", subscribeStopped = "SUBSCRIBE_STOPPED", publishError = "PUBLISH_ERROR"
    case subscribeError = "SUBSCRIBE_ERROR", joinError = "JOIN_ERROR", replicationStarted = "REPLICATION_STARTED"
    case replicationStopped = "REPLICATION_STOPPED", tokenExchanged = "TOKEN_EXCHANGED"
}

public enum EventErrorCode: String, Codable, Sendable, CaseIterable {
    case insufficientCapabilities = "INSUFFICIENT_CAPABILITIES", quotaExceeded = "QUOTA_EXCEEDED"
    case publisherNotFound = "PUBLISHER_NOT_FOUND", bitrateExceeded = "BITRATE_EXCEEDED"
    case resolutionExceeded = "RESOLUTION_EXCEEDED", streamDurationExceeded = "STREAM_DURATION_EXCEEDED"
    case invalidAudioCodec = "INVALID_AUDIO_CODEC", invalidVideoCodec = "INVALID_VIDEO_CODEC"
    case invalidProtocol = "INVALID_PROTOCOL", invalidStreamKey = "INVALID_STREAM_KEY"
    case reuseOfStreamKey = "REUSE_OF_STREAM_KEY", bFramePresent = "B_FRAME_PRESENT", invalidInput = "INVALID_INPUT"
    case internalServerException = "INTERNAL_SERVER_EXCEPTION"
}

public struct StageSession: Codable, Hashable, Sendable {
    public var sessionId: String?
    public var startTime: APITimestamp?
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
    public var replicationType: String?
    public var replicationState: String?
    public var sourceStageArn: String?
    public var sourceSessionId: String?
    public var redundantIngest: Bool?
    public var ingestConfigurationArn: String?

    public init(participantId: String?, userId: String?, state: ParticipantState?, firstJoinTime: APITimestamp?,
                attributes: [String: String]?, published: Bool?, recordingState: ParticipantRecordingState? = .disabled,
                protocol: ParticipantProtocol?, ingestConfigurationArn: String? = nil) {
        self.participantId = participantId
        self.userId = userId
        self.state = state
        self.firstJoinTime = firstJoinTime
        self.attributes = attributes
        self.published = published
        self.recordingState = recordingState
        self.protocol = `protocol`
        self.ingestConfigurationArn = ingestConfigurationArn
        // No individual participant recording here: the model says "" when disabled.
        recordingS3BucketName = ""
        recordingS3Prefix = ""
        replicationType = "NONE"
    }

    public var summary: ParticipantSummary {
        ParticipantSummary(participantId: participantId, userId: userId, state: state, firstJoinTime: firstJoinTime,
                           published: published, recordingState: recordingState, replicationType: replicationType,
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
    public var replicationType: String?
    public var replicationState: String?
    public var sourceStageArn: String?
    public var sourceSessionId: String?
    public var redundantIngest: Bool?
    public var ingestConfigurationArn: String?

    public init(participantId: String?, userId: String?, state: ParticipantState?, firstJoinTime: APITimestamp?,
                published: Bool?, recordingState: ParticipantRecordingState?, replicationType: String?,
                redundantIngest: Bool?, ingestConfigurationArn: String?) {
        self.participantId = participantId
        self.userId = userId
        self.state = state
        self.firstJoinTime = firstJoinTime
        self.published = published
        self.recordingState = recordingState
        self.replicationType = replicationType
        self.redundantIngest = redundantIngest
        self.ingestConfigurationArn = ingestConfigurationArn
    }
}

/// The model's `Event`.
public struct ParticipantEvent: Codable, Hashable, Sendable {
    public var name: ParticipantEventName?
    public var participantId: String?
    public var eventTime: APITimestamp?
    public var remoteParticipantId: String?
    public var errorCode: EventErrorCode?
    public var destinationStageArn: String?
    public var destinationSessionId: String?
    public var replica: Bool?

    public init(name: ParticipantEventName?, participantId: String?, eventTime: APITimestamp?, errorCode: EventErrorCode? = nil) {
        self.name = name
        self.participantId = participantId
        self.eventTime = eventTime
        self.errorCode = errorCode
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

/// `st-` + 13 alphanumerics: the model's StageSessionId (16 characters).
public enum StageSessionID {
    public static func generate(using generator: inout some RandomNumberGenerator) -> String {
        var text = "st-"
        for _ in 0..<13 { text.append(ResourceID.alphabet.randomElement(using: &generator)!) }
        return text
    }

    public static func isValid(_ text: String) -> Bool {
        text.unicodeScalars.count == 16 && text.hasPrefix("st-") && text.unicodeScalars.dropFirst(3).allSatisfy(CharacterRules.isAlphanumeric)
    }
}
