// Who is on each live stage, as IVS reports it: a stage session starts when the first
// participant joins and ends when the last one leaves; each participant has a state
// (connected or not), whether it ever published, and a list of events. Pure: the owner feeds
// joins, leaves and errors with the time, and carries out the effects (persist, emit
// "IVS Stage Update" events).

/// One participant of one stage session.
public struct SessionParticipant: Sendable, Equatable, Codable {
    public var stageArn: String
    public var sessionId: String
    public var participantId: String
    public var userId: String
    public var attributes: [String: String]
    /// "RTMP", "RTMPS", "WHIP".
    public var transport: String
    public var ingestConfigurationArn: String?
    public var isConnected: Bool
    public var hasPublished: Bool
    /// Seconds since 1970 of the first join in this session.
    public var firstJoinTime: Int64

    public init(stageArn: String, sessionId: String, participantId: String, userId: String, attributes: [String: String],
                transport: String, ingestConfigurationArn: String?, isConnected: Bool, hasPublished: Bool, firstJoinTime: Int64) {
        self.stageArn = stageArn
        self.sessionId = sessionId
        self.participantId = participantId
        self.userId = userId
        self.attributes = attributes
        self.transport = transport
        self.ingestConfigurationArn = ingestConfigurationArn
        self.isConnected = isConnected
        self.hasPublished = hasPublished
        self.firstJoinTime = firstJoinTime
    }
}

/// The model's participant event names this book produces.
public enum SessionEventName: String, Sendable, Equatable, Codable {
    case joined = "JOINED", left = "LEFT", publishStarted = "PUBLISH_STARTED", publishStopped = "PUBLISH_STOPPED"
    case publishError = "PUBLISH_ERROR", tokenExchanged = "TOKEN_EXCHANGED"
}

/// What a participant's token said before or after an exchange (the model's
/// `ExchangedParticipantToken`): the fields an exchange may change.
public struct SessionTokenSnapshot: Sendable, Equatable, Codable {
    public var attributes: [String: String]
    public var userId: String
    /// The model's capability names ("PUBLISH", "SUBSCRIBE"), when a token said them.
    public var capabilities: [String]?
    /// Seconds since 1970, when a token said it.
    public var expirationTime: Int64?

    public init(attributes: [String: String], userId: String, capabilities: [String]? = nil, expirationTime: Int64? = nil) {
        self.attributes = attributes
        self.userId = userId
        self.capabilities = capabilities
        self.expirationTime = expirationTime
    }
}

public struct SessionParticipantEvent: Sendable, Equatable, Codable {
    public var name: SessionEventName
    public var participantId: String
    public var time: Int64
    /// The model's EventErrorCode, on PUBLISH_ERROR.
    public var errorCode: String?
    /// The token before and after, on TOKEN_EXCHANGED.
    public var previousToken: SessionTokenSnapshot?
    public var newToken: SessionTokenSnapshot?

    public init(name: SessionEventName, participantId: String, time: Int64, errorCode: String? = nil,
                previousToken: SessionTokenSnapshot? = nil, newToken: SessionTokenSnapshot? = nil) {
        self.name = name
        self.participantId = participantId
        self.time = time
        self.errorCode = errorCode
        self.previousToken = previousToken
        self.newToken = newToken
    }
}

public struct StageSessionRecord: Sendable, Equatable, Codable {
    public var stageArn: String
    public var sessionId: String
    public var startTime: Int64
    public var endTime: Int64?

    public init(stageArn: String, sessionId: String, startTime: Int64, endTime: Int64? = nil) {
        self.stageArn = stageArn
        self.sessionId = sessionId
        self.startTime = startTime
        self.endTime = endTime
    }
}

/// "IVS Stage Update" notifications.
public enum StageNotification: Sendable, Equatable {
    case published(stageArn: String, sessionId: String, userId: String, participantId: String)
    case unpublished(stageArn: String, sessionId: String, userId: String, participantId: String)
    case publishError(stageArn: String, sessionId: String?, userId: String, participantId: String, errorCode: String)
}

/// What the owner must do, in order.
public enum StageSessionEffect: Sendable, Equatable {
    case saveSession(StageSessionRecord)
    case saveParticipant(SessionParticipant)
    case appendEvent(stageArn: String, sessionId: String, SessionParticipantEvent)
    case notify(StageNotification)
}

public struct StageSessionBook: Sendable {
    private struct ActiveSession {
        var record: StageSessionRecord
        var participants: [String: SessionParticipant] = [:]
        var connected: Set<String> = []
    }

    private var sessions: [String: ActiveSession] = [:]
    private let makeSessionID: @Sendable () -> String

    /// - Parameter makeSessionID: a new `st-` + 13 alphanumerics ID (random in the daemon,
    ///   seeded in tests).
    public init(makeSessionID: @escaping @Sendable () -> String) {
        self.makeSessionID = makeSessionID
    }

    /// The stage's current session, if someone is on it.
    public func activeSession(stageArn: String) -> String? { sessions[stageArn]?.record.sessionId }

    /// Participants connected to the stage now.
    public func connectedCount(stageArn: String) -> Int { sessions[stageArn]?.connected.count ?? 0 }

    public func isConnected(stageArn: String, participantId: String) -> Bool {
        sessions[stageArn]?.connected.contains(participantId) ?? false
    }

    /// A publisher joined and started publishing (RTMP ingest joins and publishes at once).
    public mutating func joinAndPublish(stageArn: String, participantId: String, userId: String, attributes: [String: String],
                                        transport: String, ingestConfigurationArn: String?, at time: Int64) -> [StageSessionEffect] {
        var effects: [StageSessionEffect] = []
        var session: ActiveSession
        if let existing = sessions[stageArn] {
            session = existing
        } else {
            session = ActiveSession(record: StageSessionRecord(stageArn: stageArn, sessionId: makeSessionID(), startTime: time))
            effects.append(.saveSession(session.record))
        }
        let sessionId = session.record.sessionId
        var participant = session.participants[participantId] ?? SessionParticipant(
            stageArn: stageArn, sessionId: sessionId, participantId: participantId, userId: userId, attributes: attributes,
            transport: transport, ingestConfigurationArn: ingestConfigurationArn, isConnected: true, hasPublished: true,
            firstJoinTime: time)
        // A reconnect keeps the first join time; what it joined with now is what counts.
        participant.userId = userId
        participant.attributes = attributes
        participant.transport = transport
        participant.ingestConfigurationArn = ingestConfigurationArn
        participant.isConnected = true
        participant.hasPublished = true
        session.participants[participantId] = participant
        session.connected.insert(participantId)
        sessions[stageArn] = session
        effects.append(.saveParticipant(participant))
        effects.append(.appendEvent(stageArn: stageArn, sessionId: sessionId,
                                    SessionParticipantEvent(name: .joined, participantId: participantId, time: time)))
        effects.append(.appendEvent(stageArn: stageArn, sessionId: sessionId,
                                    SessionParticipantEvent(name: .publishStarted, participantId: participantId, time: time)))
        effects.append(.notify(.published(stageArn: stageArn, sessionId: sessionId, userId: userId, participantId: participantId)))
        return effects
    }

    /// A publisher broke a rule after joining (bitrate, codec ...). It leaves separately.
    public mutating func publishError(stageArn: String, participantId: String, errorCode: String, at time: Int64) -> [StageSessionEffect] {
        guard let session = sessions[stageArn], let participant = session.participants[participantId] else { return [] }
        return [
            .appendEvent(stageArn: stageArn, sessionId: session.record.sessionId,
                         SessionParticipantEvent(name: .publishError, participantId: participantId, time: time, errorCode: errorCode)),
            .notify(.publishError(stageArn: stageArn, sessionId: session.record.sessionId, userId: participant.userId,
                                  participantId: participantId, errorCode: errorCode)),
        ]
    }

    /// A publisher was refused before joining: only the stage update, with the stage's session
    /// when there is one.
    public func refused(stageArn: String, participantId: String, userId: String, errorCode: String) -> [StageSessionEffect] {
        [.notify(.publishError(stageArn: stageArn, sessionId: sessions[stageArn]?.record.sessionId, userId: userId,
                               participantId: participantId, errorCode: errorCode))]
    }

    /// A connected participant's token was exchanged (or a producer changed its attributes,
    /// which acts as one): its attributes and user ID become the new token's, and a
    /// TOKEN_EXCHANGED event says both. Nothing when it is not connected.
    public mutating func exchangeToken(stageArn: String, participantId: String, to newToken: SessionTokenSnapshot,
                                       previousCapabilities: [String]? = nil, previousExpirationTime: Int64? = nil,
                                       at time: Int64) -> [StageSessionEffect] {
        guard var session = sessions[stageArn], session.connected.contains(participantId),
              var participant = session.participants[participantId] else { return [] }
        let previous = SessionTokenSnapshot(attributes: participant.attributes, userId: participant.userId,
                                            capabilities: previousCapabilities, expirationTime: previousExpirationTime)
        participant.attributes = newToken.attributes
        participant.userId = newToken.userId
        session.participants[participantId] = participant
        sessions[stageArn] = session
        return [
            .saveParticipant(participant),
            .appendEvent(stageArn: stageArn, sessionId: session.record.sessionId,
                         SessionParticipantEvent(name: .tokenExchanged, participantId: participantId, time: time,
                                                 previousToken: previous, newToken: newToken)),
        ]
    }

    /// The participant as the session knows it (connected or not).
    public func participant(stageArn: String, participantId: String) -> SessionParticipant? {
        sessions[stageArn]?.participants[participantId]
    }

    /// A publisher left (any reason). The last one out ends the session.
    public mutating func leave(stageArn: String, participantId: String, at time: Int64) -> [StageSessionEffect] {
        guard var session = sessions[stageArn], session.connected.contains(participantId),
              var participant = session.participants[participantId] else { return [] }
        let sessionId = session.record.sessionId
        participant.isConnected = false
        session.participants[participantId] = participant
        session.connected.remove(participantId)
        var effects: [StageSessionEffect] = [
            .saveParticipant(participant),
            .appendEvent(stageArn: stageArn, sessionId: sessionId,
                         SessionParticipantEvent(name: .publishStopped, participantId: participantId, time: time)),
            .appendEvent(stageArn: stageArn, sessionId: sessionId,
                         SessionParticipantEvent(name: .left, participantId: participantId, time: time)),
            .notify(.unpublished(stageArn: stageArn, sessionId: sessionId, userId: participant.userId, participantId: participantId)),
        ]
        if session.connected.isEmpty {
            session.record.endTime = time
            effects.append(.saveSession(session.record))
            sessions[stageArn] = nil
        } else {
            sessions[stageArn] = session
        }
        return effects
    }
}
