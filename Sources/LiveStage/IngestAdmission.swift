// What the ingest server asks of the stage side (the daemon's StageRuntime): may this
// stream key publish, and what happened to a publisher afterwards. The server never touches
// the control plane's state; the stage side never touches sockets. It lives with the hub, so
// RTMP and WHIP ingest share it without importing each other.

/// The transport a publisher used.
public enum IngestTransport: String, Sendable, Equatable {
    case rtmp = "RTMP", rtmps = "RTMPS", whip = "WHIP"
}

/// The model's EventErrorCode values the ingest path reports.
public enum IngestPublishError: String, Sendable, Equatable, CaseIterable {
    case insufficientCapabilities = "INSUFFICIENT_CAPABILITIES"
    case invalidStreamKey = "INVALID_STREAM_KEY"
    case invalidProtocol = "INVALID_PROTOCOL"
    case reuseOfStreamKey = "REUSE_OF_STREAM_KEY"
    case quotaExceeded = "QUOTA_EXCEEDED"
    case bitrateExceeded = "BITRATE_EXCEEDED"
    case resolutionExceeded = "RESOLUTION_EXCEEDED"
    case invalidVideoCodec = "INVALID_VIDEO_CODEC"
    case invalidAudioCodec = "INVALID_AUDIO_CODEC"
    case invalidInput = "INVALID_INPUT"
    case streamDurationExceeded = "STREAM_DURATION_EXCEEDED"
    case internalServerException = "INTERNAL_SERVER_EXCEPTION"
}

public struct IngestAdmissionRequest: Sendable, Equatable {
    /// The publish name as the encoder sent it (`?query` arguments removed).
    public var streamKey: String
    public var transport: IngestTransport
    /// "ip:port" of the publisher, for logs.
    public var remoteAddress: String

    public init(streamKey: String, transport: IngestTransport, remoteAddress: String) {
        self.streamKey = streamKey
        self.transport = transport
        self.remoteAddress = remoteAddress
    }
}

/// An admitted publisher: where its media goes, and whom to tell how it ended.
public protocol IngestPublication: Sendable {
    var publisher: LivePublisher { get }
    /// The stage the publisher is on (a redundant-ingest feed's publisher is kept apart from it).
    var stageArn: String { get }
    /// The publisher broke a rule after admission (bitrate, codec, malformed media): a
    /// PUBLISH_ERROR is recorded; `ended` follows when the connection is closed.
    func failed(_ error: IngestPublishError, reason: String)
    /// The publisher is gone (unpublished, disconnected, timed out, killed). Called once.
    func ended(reason: String)
}

extension IngestPublication {
    public var stageArn: String { publisher.stageArn }
}

/// A WHIP publisher whose participant token verified: which stage, and who it is.
public struct TokenParticipant: Sendable, Equatable {
    public var stageArn: String
    public var participantId: String
    public var userId: String
    public var attributes: [String: String]
    /// The token's `exp` (seconds since 1970): a revoked participant stays refused until then.
    public var expiresAt: Int64?
    /// The public key that verified the token: deleting the key ends the session.
    public var keyArn: String?
    /// The token's capability names ("PUBLISH", "SUBSCRIBE"), when it had some (a token
    /// exchange reports them).
    public var capabilities: [String]?

    public init(stageArn: String, participantId: String, userId: String, attributes: [String: String],
                expiresAt: Int64? = nil, keyArn: String? = nil, capabilities: [String]? = nil) {
        self.capabilities = capabilities
        self.stageArn = stageArn
        self.participantId = participantId
        self.userId = userId
        self.attributes = attributes
        self.expiresAt = expiresAt
        self.keyArn = keyArn
    }
}

public enum IngestAdmissionDecision: Sendable {
    case accepted(any IngestPublication)
    case refused(IngestPublishError, reason: String)
}

public protocol IngestAdmission: Sendable {
    /// Decides whether `request` may publish. `decide` is called exactly once, on any
    /// thread; `disconnect` is how the stage side later closes the connection
    /// (DisconnectParticipant, a deleted ingest configuration).
    func admit(_ request: IngestAdmissionRequest, disconnect: @escaping @Sendable (String) -> Void,
               decide: @escaping @Sendable (IngestAdmissionDecision) -> Void)
}
