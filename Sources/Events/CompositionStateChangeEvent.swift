import MediaCore
// The EventBridge "IVS Composition State Change" event, field for field and in the
// order of the user guide's examples, rendered by hand so the text is deterministic:
// one compact JSON line for JSON-lines files, stdout and webhooks, or the guide's
// two-space pretty form.

/// An "IVS Composition State Change" event envelope.
public struct CompositionStateChangeEvent: Sendable, Hashable, Codable {
    public static let detailTypeValue = "IVS Composition State Change"
    public static let sourceValue = "aws.ivs"

    public struct Detail: Sendable, Hashable, Codable {
        /// "Session Start", "Destination Failure", ...
        public var eventName: String
        public var stageArn: String
        /// The destination ID, on destination events only.
        public var id: String?
        /// On failure events only.
        public var reason: String?

        public init(eventName: String, stageArn: String, id: String? = nil, reason: String? = nil) {
            self.eventName = eventName
            self.stageArn = stageArn
            self.id = id
            self.reason = reason
        }

        enum CodingKeys: String, CodingKey {
            case eventName = "event_name", stageArn = "stage_arn", id, reason
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

    public init(id: String, account: String, time: String, region: String, resources: [String], detail: Detail) {
        version = "0"
        self.id = id
        detailType = Self.detailTypeValue
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
        var detailFields: [(String, String)] = [
            ("event_name", Self.quote(detail.eventName)),
            ("stage_arn", Self.quote(detail.stageArn)),
        ]
        if let destinationID = detail.id { detailFields.append(("id", Self.quote(destinationID))) }
        if let reason = detail.reason { detailFields.append(("reason", Self.quote(reason))) }

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
                    return "{" + members.map { CompositionStateChangeEvent.quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
                }
                return "{\n" + members.map { inner + CompositionStateChangeEvent.quote($0.0) + ": " + $0.1 }
                    .joined(separator: ",\n") + "\n\(outer)}"
            }
        }
    }

    static func quote(_ value: String) -> String { JSONText.quote(value) }
}
