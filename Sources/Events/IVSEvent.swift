import MediaCore
// The EventBridge events the daemon emits — "IVS Composition State Change" and "IVS Stage
// Update" — field for field and in the order of the user guide's examples, rendered by hand
// so the text is deterministic: one compact JSON line for JSON-lines files, stdout and
// webhooks, or the guide's two-space pretty form.

/// The composition events' name for the envelope they share with stage updates.
public typealias CompositionStateChangeEvent = IVSEvent

/// An EventBridge event envelope from `aws.ivs`.
public struct IVSEvent: Sendable, Hashable, Codable {
    public static let detailTypeValue = "IVS Composition State Change"
    public static let stageUpdateDetailType = "IVS Stage Update"
    public static let participantRecordingDetailType = "IVS Participant Recording State Change"
    public static let sourceValue = "aws.ivs"

    public struct Detail: Sendable, Hashable, Codable {
        /// Stage updates: the stage session.
        public var sessionId: String?
        /// "Session Start", "Destination Failure", "Participant Published", ...
        public var eventName: String
        /// Composition events: the stage.
        public var stageArn: String?
        /// Stage updates: when it happened (Publish Error).
        public var eventTime: String?
        /// Stage updates: the participant.
        public var userId: String?
        public var participantId: String?
        /// Participant Publish Error: the model's EventErrorCode.
        public var errorCode: String?
        /// The destination ID, on destination events only.
        public var id: String?
        /// On failure events only.
        public var reason: String?
        /// Participant recording events: where the recording is, and (at its end) how long.
        public var recordingS3BucketName: String?
        public var recordingS3KeyPrefix: String?
        public var recordingDurationMs: Int64?

        public init(eventName: String, stageArn: String? = nil, id: String? = nil, reason: String? = nil,
                    sessionId: String? = nil, eventTime: String? = nil, userId: String? = nil,
                    participantId: String? = nil, errorCode: String? = nil) {
            self.eventName = eventName
            self.stageArn = stageArn
            self.id = id
            self.reason = reason
            self.sessionId = sessionId
            self.eventTime = eventTime
            self.userId = userId
            self.participantId = participantId
            self.errorCode = errorCode
        }

        enum CodingKeys: String, CodingKey {
            case sessionId = "session_id", eventName = "event_name", stageArn = "stage_arn", eventTime = "event_time"
            case userId = "user_id", participantId = "participant_id", errorCode = "error_code", id, reason
            case recordingS3BucketName = "recording_s3_bucket_name", recordingS3KeyPrefix = "recording_s3_key_prefix"
            case recordingDurationMs = "recording_duration_ms"
        }

        /// The members present, in the user guide's order.
        var renderedFields: [(String, String)] {
            let members: [(String, String?)] = [
                ("session_id", sessionId), ("event_name", eventName), ("stage_arn", stageArn), ("event_time", eventTime),
                ("user_id", userId), ("participant_id", participantId), ("error_code", errorCode), ("id", id), ("reason", reason),
                ("recording_s3_bucket_name", recordingS3BucketName), ("recording_s3_key_prefix", recordingS3KeyPrefix),
            ]
            return members.compactMap { name, value in value.map { (name, IVSEvent.quote($0)) } }
                + (recordingDurationMs.map { [("recording_duration_ms", String($0))] } ?? [])
        }
    }

    public var version: String
    public var id: String
    public var detailType: String
    public var source: String
    public var account: String
    /// UTC, whole seconds: "2017-06-12T10:23:43Z".
    public var time: String
    public var region: String
    public var resources: [String]
    public var detail: Detail

    public init(id: String, account: String, time: String, region: String, resources: [String], detail: Detail,
                detailType: String = IVSEvent.detailTypeValue) {
        version = "0"
        self.id = id
        self.detailType = detailType
        source = Self.sourceValue
        self.account = account
        self.time = time
        self.region = region
        self.resources = resources
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case version, id, detailType = "detail-type", source, account, time, region, resources, detail
    }

    /// One line of compact JSON, without the trailing newline.
    public var jsonLine: String { render(pretty: false) }

    /// The user guide's layout: two-space indent, `"key": value`.
    public var prettyJSON: String { render(pretty: true) }

    private func render(pretty: Bool) -> String {
        let detailFields = detail.renderedFields

        let fields: [(String, JSONValue)] = [
            ("version", .literal(Self.quote(version))),
            ("id", .literal(Self.quote(id))),
            ("detail-type", .literal(Self.quote(detailType))),
            ("source", .literal(Self.quote(source))),
            ("account", .literal(Self.quote(account))),
            ("time", .literal(Self.quote(time))),
            ("region", .literal(Self.quote(region))),
            ("resources", .array(resources.map(Self.quote))),
            ("detail", .object(detailFields)),
        ]
        return JSONValue.object(fields.map { ($0.0, $0.1.text(pretty: pretty, indent: 1)) }).text(pretty: pretty, indent: 0)
    }

    private indirect enum JSONValue {
        case literal(String)
        case array([String])
        /// Members already rendered.
        case object([(String, String)])

        func text(pretty: Bool, indent: Int) -> String {
            let inner = String(repeating: "  ", count: indent + 1)
            let outer = String(repeating: "  ", count: indent)
            switch self {
            case .literal(let text):
                return text
            case .array(let items):
                guard pretty else { return "[" + items.joined(separator: ",") + "]" }
                if items.isEmpty { return "[]" }
                return "[\n" + items.map { inner + $0 }.joined(separator: ",\n") + "\n\(outer)]"
            case .object(let members):
                guard pretty else {
                    return "{" + members.map { IVSEvent.quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
                }
                return "{\n" + members.map { inner + IVSEvent.quote($0.0) + ": " + $0.1 }
                    .joined(separator: ",\n") + "\n\(outer)}"
            }
        }
    }

    static func quote(_ value: String) -> String { JSONText.quote(value) }
}
