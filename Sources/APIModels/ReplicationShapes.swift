// Participant replication: a publisher of one stage appears as a publisher on another.
// Shapes as botocore's ivs-realtime model has them.

public struct StartParticipantReplicationRequest: Codable, Hashable, Sendable {
    public var sourceStageArn: String
    public var destinationStageArn: String
    public var participantId: String
    /// 0...300: how long the replica waits for its source to reconnect.
    public var reconnectWindowSeconds: Int?
    public var attributes: [String: String]?

    public init(sourceStageArn: String, destinationStageArn: String, participantId: String, reconnectWindowSeconds: Int? = nil,
                attributes: [String: String]? = nil) {
        self.sourceStageArn = sourceStageArn
        self.destinationStageArn = destinationStageArn
        self.participantId = participantId
        self.reconnectWindowSeconds = reconnectWindowSeconds
        self.attributes = attributes
    }
}

/// Its members are HTTP headers only: the body is `{}`.
public struct StartParticipantReplicationResponse: Codable, Hashable, Sendable {
    public init() {}
}

public struct StopParticipantReplicationRequest: Codable, Hashable, Sendable {
    public var sourceStageArn: String
    public var destinationStageArn: String
    public var participantId: String

    public init(sourceStageArn: String, destinationStageArn: String, participantId: String) {
        self.sourceStageArn = sourceStageArn
        self.destinationStageArn = destinationStageArn
        self.participantId = participantId
    }
}

public struct StopParticipantReplicationResponse: Codable, Hashable, Sendable {
    public init() {}
}

public struct ListParticipantReplicasRequest: Codable, Hashable, Sendable {
    public var sourceStageArn: String
    public var participantId: String
    public var nextToken: String?
    public var maxResults: Int?

    public init(sourceStageArn: String, participantId: String, nextToken: String? = nil, maxResults: Int? = nil) {
        self.sourceStageArn = sourceStageArn
        self.participantId = participantId
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ParticipantReplica: Codable, Hashable, Sendable {
    public var sourceStageArn: String
    public var participantId: String
    public var sourceSessionId: String
    public var destinationStageArn: String
    public var destinationSessionId: String
    public var replicationState: ReplicationState

    public init(sourceStageArn: String, participantId: String, sourceSessionId: String, destinationStageArn: String,
                destinationSessionId: String, replicationState: ReplicationState) {
        self.sourceStageArn = sourceStageArn
        self.participantId = participantId
        self.sourceSessionId = sourceSessionId
        self.destinationStageArn = destinationStageArn
        self.destinationSessionId = destinationSessionId
        self.replicationState = replicationState
    }
}

public struct ListParticipantReplicasResponse: Codable, Hashable, Sendable {
    public var replicas: [ParticipantReplica]
    public var nextToken: String?

    public init(replicas: [ParticipantReplica], nextToken: String?) {
        self.replicas = replicas
        self.nextToken = nextToken
    }
}

extension StartParticipantReplicationRequest: APIRequest {
    public static var operation: APIOperation { .startParticipantReplication }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(sourceStageArn, .stage, at: "sourceStageArn")
        try Rule.arn(destinationStageArn, .stage, at: "destinationStageArn")
        try Rule.participantId(participantId)
        try Rule.range(reconnectWindowSeconds, ModelLimits.replicationReconnectWindowSeconds, at: "reconnectWindowSeconds")
        try Rule.attributes(attributes)
        guard sourceStageArn != destinationStageArn else {
            throw Rule.fail("destinationStageArn", "must differ from sourceStageArn")
        }
    }
}

extension StopParticipantReplicationRequest: APIRequest {
    public static var operation: APIOperation { .stopParticipantReplication }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(sourceStageArn, .stage, at: "sourceStageArn")
        try Rule.arn(destinationStageArn, .stage, at: "destinationStageArn")
        try Rule.participantId(participantId)
    }
}

extension ListParticipantReplicasRequest: APIRequest {
    public static var operation: APIOperation { .listParticipantReplicas }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(sourceStageArn, .stage, at: "sourceStageArn")
        try Rule.participantId(participantId)
        try Rule.nextToken(nextToken)
        try Rule.range(maxResults, 1...50, at: "maxResults")
    }
}
