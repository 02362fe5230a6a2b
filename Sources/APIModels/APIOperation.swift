// The routing table: every served operation's HTTP binding, as in the model's `http` trait.

/// HTTP methods used by the ivs-realtime model.
public enum HTTPMethodName: String, Sendable {
    case get = "GET", post = "POST", delete = "DELETE"
}

/// The operations this daemon serves, with their HTTP bindings from the model.
/// Most are `POST /<OperationName>` with a JSON body; the tagging operations address the
/// resource in the path (`/tags/{resourceArn}`, percent-encoded by the SDKs, `/` included).
public enum APIOperation: String, Sendable, CaseIterable {
    case startComposition = "StartComposition"
    case stopComposition = "StopComposition"
    case getComposition = "GetComposition"
    case listCompositions = "ListCompositions"
    case createEncoderConfiguration = "CreateEncoderConfiguration"
    case getEncoderConfiguration = "GetEncoderConfiguration"
    case listEncoderConfigurations = "ListEncoderConfigurations"
    case deleteEncoderConfiguration = "DeleteEncoderConfiguration"
    case createStorageConfiguration = "CreateStorageConfiguration"
    case getStorageConfiguration = "GetStorageConfiguration"
    case listStorageConfigurations = "ListStorageConfigurations"
    case deleteStorageConfiguration = "DeleteStorageConfiguration"
    case createStage = "CreateStage"
    case getStage = "GetStage"
    case listStages = "ListStages"
    case deleteStage = "DeleteStage"
    case updateStage = "UpdateStage"
    case listStageSessions = "ListStageSessions"
    case getStageSession = "GetStageSession"
    case listParticipants = "ListParticipants"
    case getParticipant = "GetParticipant"
    case listParticipantEvents = "ListParticipantEvents"
    case disconnectParticipant = "DisconnectParticipant"
    case createIngestConfiguration = "CreateIngestConfiguration"
    case getIngestConfiguration = "GetIngestConfiguration"
    case listIngestConfigurations = "ListIngestConfigurations"
    case updateIngestConfiguration = "UpdateIngestConfiguration"
    case deleteIngestConfiguration = "DeleteIngestConfiguration"
    case createParticipantToken = "CreateParticipantToken"
    case importPublicKey = "ImportPublicKey"
    case getPublicKey = "GetPublicKey"
    case listPublicKeys = "ListPublicKeys"
    case deletePublicKey = "DeletePublicKey"
    case tagResource = "TagResource"
    case untagResource = "UntagResource"
    case listTagsForResource = "ListTagsForResource"
    case startParticipantReplication = "StartParticipantReplication"
    case stopParticipantReplication = "StopParticipantReplication"
    case listParticipantReplicas = "ListParticipantReplicas"
    case revokeConnectionToken = "RevokeConnectionToken"
    // Extensions beyond the IVS model, in its style (POST /<Operation>, JSON, its errors).
    case updateComposition = "UpdateComposition"
    case updateParticipant = "UpdateParticipant"

    /// Not in botocore's ivs-realtime model: this daemon's own operations (SPEC §9).
    public var isExtension: Bool { self == .updateComposition || self == .updateParticipant }

    /// The operations of the IVS model.
    public static var modelOperations: [APIOperation] { allCases.filter { !$0.isExtension } }

    public var name: String { rawValue }

    public var httpMethod: HTTPMethodName {
        switch self {
        case .listTagsForResource: .get
        case .untagResource: .delete
        default: .post
        }
    }

    /// The model's `http.requestUri`.
    public var requestURI: String {
        switch self {
        case .tagResource, .untagResource, .listTagsForResource: "/tags/{resourceArn}"
        default: "/" + rawValue
        }
    }

    /// The model's `http.responseCode` (200 for every operation here).
    public var successCode: Int { 200 }

    /// Whether the request has a JSON body (the tag reads and deletes carry none:
    /// UntagResource's `tagKeys` is a repeated query parameter).
    public var hasJSONBody: Bool {
        switch self {
        case .listTagsForResource, .untagResource: false
        default: true
        }
    }

    /// The error shapes the model lists for the operation.
    public var modeledErrors: [APIError.Code] {
        switch self {
        case .startComposition, .createEncoderConfiguration, .createStorageConfiguration:
            [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict, .pendingVerification]
        case .stopComposition, .getComposition, .deleteEncoderConfiguration, .getEncoderConfiguration,
             .deleteStorageConfiguration, .getStorageConfiguration:
            [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]
        case .listCompositions, .listEncoderConfigurations, .listStorageConfigurations:
            [.validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict]
        case .createStage: [.validation, .accessDenied, .serviceQuotaExceeded, .pendingVerification]
        case .getStage: [.resourceNotFound, .validation, .accessDenied]
        case .listStages: [.validation, .accessDenied, .conflict]
        case .deleteStage: [.resourceNotFound, .validation, .accessDenied, .conflict, .pendingVerification]
        case .tagResource, .untagResource, .listTagsForResource: [.resourceNotFound, .validation, .internalServer]
        case .updateStage: [.resourceNotFound, .validation, .accessDenied, .serviceQuotaExceeded, .conflict, .pendingVerification]
        case .listStageSessions, .listParticipants, .listParticipantEvents, .listIngestConfigurations: [.validation, .accessDenied]
        case .getStageSession, .getParticipant, .getIngestConfiguration: [.resourceNotFound, .validation, .accessDenied]
        case .disconnectParticipant: [.resourceNotFound, .validation, .accessDenied, .pendingVerification]
        case .createIngestConfiguration: [.validation, .accessDenied, .serviceQuotaExceeded, .pendingVerification]
        case .updateIngestConfiguration, .deleteIngestConfiguration, .deletePublicKey:
            [.resourceNotFound, .validation, .accessDenied, .conflict, .pendingVerification]
        case .createParticipantToken: [.resourceNotFound, .validation, .accessDenied, .serviceQuotaExceeded, .pendingVerification]
        case .importPublicKey: [.validation, .accessDenied, .serviceQuotaExceeded, .conflict, .pendingVerification]
        case .getPublicKey: [.resourceNotFound, .validation, .accessDenied]
        case .listPublicKeys: [.validation, .accessDenied]
        case .startParticipantReplication:
            [.resourceNotFound, .validation, .accessDenied, .internalServer, .serviceQuotaExceeded, .conflict, .pendingVerification]
        case .stopParticipantReplication: [.resourceNotFound, .validation, .accessDenied, .internalServer]
        case .listParticipantReplicas: [.validation, .accessDenied]
        case .revokeConnectionToken: [.validation, .accessDenied, .internalServer]
        case .updateComposition: [.resourceNotFound, .validation, .accessDenied, .internalServer, .conflict]
        case .updateParticipant: [.resourceNotFound, .validation, .accessDenied, .internalServer]
        }
    }

    /// A matched route: the operation and, for the tagging operations, the decoded ARN.
    public struct Route: Sendable, Equatable {
        public var operation: APIOperation
        public var resourceArn: String?

        public init(operation: APIOperation, resourceArn: String? = nil) {
            self.operation = operation
            self.resourceArn = resourceArn
        }

        /// The request path that reaches this route (the ARN label encoded as botocore does).
        public var path: String {
            switch operation {
            case .tagResource, .untagResource, .listTagsForResource: APIOperation.tagsPath(for: resourceArn ?? "")
            default: operation.requestURI
            }
        }
    }

    /// Finds the operation for `method` and `path` (the path without its query string).
    /// The `{resourceArn}` label is percent-decoded; a label that does not decode, or that
    /// decodes to something with a `/`-free shape mismatch, is left to validation.
    public static func route(method: String, path: String) -> Route? {
        let method = method.uppercased()
        if path.hasPrefix("/tags/") {
            let encoded = String(path.dropFirst("/tags/".count))
            guard !encoded.isEmpty, let arn = PercentDecoding.decode(encoded) else { return nil }
            let operation: APIOperation? = switch method {
            case "POST": .tagResource
            case "GET": .listTagsForResource
            case "DELETE": .untagResource
            default: nil
            }
            return operation.map { Route(operation: $0, resourceArn: arn) }
        }
        guard method == "POST", path.hasPrefix("/"),
              let operation = APIOperation(rawValue: String(path.dropFirst())),
              operation.requestURI == path else { return nil }
        return Route(operation: operation, resourceArn: nil)
    }

    /// The request path for `resourceArn`, encoded as botocore does (everything but
    /// `A-Za-z0-9-_.~` is percent-encoded, `:` and `/` included).
    public static func tagsPath(for resourceArn: String) -> String {
        "/tags/" + PercentDecoding.encode(resourceArn)
    }
}

/// RFC 3986 percent-encoding of path labels.
public enum PercentDecoding {
    /// Decodes `%XX` escapes as UTF-8; nil for a malformed escape or invalid UTF-8.
    public static func decode(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.popFirst().flatMap(hexValue),
                      let low = iterator.popFirst().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    public static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let unreserved = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
                || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F || byte == 0x2E || byte == 0x7E
            if unreserved {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}

extension APIOperation {
    /// The request shapes whose JSON body is the whole request: every operation except the
    /// three tagging ones, whose resource ARN is in the path (and UntagResource's keys in the
    /// query). Each shape names its operation (`APIRequest.operation`).
    public static let jsonBodyRequests: [any (Decodable & APIRequest).Type] = [
        StartCompositionRequest.self, StopCompositionRequest.self, GetCompositionRequest.self, ListCompositionsRequest.self,
        CreateEncoderConfigurationRequest.self, GetEncoderConfigurationRequest.self, ListEncoderConfigurationsRequest.self,
        DeleteEncoderConfigurationRequest.self,
        CreateStorageConfigurationRequest.self, GetStorageConfigurationRequest.self, ListStorageConfigurationsRequest.self,
        DeleteStorageConfigurationRequest.self,
        CreateStageRequest.self, GetStageRequest.self, ListStagesRequest.self, DeleteStageRequest.self, UpdateStageRequest.self,
        ListStageSessionsRequest.self, GetStageSessionRequest.self, ListParticipantsRequest.self, GetParticipantRequest.self,
        ListParticipantEventsRequest.self, DisconnectParticipantRequest.self,
        CreateIngestConfigurationRequest.self, GetIngestConfigurationRequest.self, ListIngestConfigurationsRequest.self,
        UpdateIngestConfigurationRequest.self, DeleteIngestConfigurationRequest.self,
        CreateParticipantTokenRequest.self,
        ImportPublicKeyRequest.self, GetPublicKeyRequest.self, ListPublicKeysRequest.self, DeletePublicKeyRequest.self,
        StartParticipantReplicationRequest.self, StopParticipantReplicationRequest.self, ListParticipantReplicasRequest.self,
        RevokeConnectionTokenRequest.self,
        UpdateCompositionRequest.self, UpdateParticipantRequest.self,
    ]
}
