import MediaCore
// The control plane's one error type, rendered the way botocore parses rest-json errors:
// the code from the `x-amzn-ErrorType` header, the message from the body's `message` key.


/// An IVS API error: one of the model's exception shapes plus a message naming the field,
/// ARN or quota at fault.
public struct APIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The model's exception shapes (ivs-realtime 2020-07-14) and their HTTP status codes.
    public enum Code: String, Sendable, CaseIterable {
        case validation = "ValidationException"
        case accessDenied = "AccessDeniedException"
        case resourceNotFound = "ResourceNotFoundException"
        case conflict = "ConflictException"
        case serviceQuotaExceeded = "ServiceQuotaExceededException"
        case internalServer = "InternalServerException"
        case pendingVerification = "PendingVerification"

        public var httpStatus: Int {
            switch self {
            case .validation: 400
            case .accessDenied, .pendingVerification: 403
            case .resourceNotFound: 404
            case .conflict: 409
            case .serviceQuotaExceeded: 402
            case .internalServer: 500
            }
        }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func validation(_ message: String) -> APIError { APIError(.validation, message) }
    public static func resourceNotFound(_ message: String) -> APIError { APIError(.resourceNotFound, message) }
    public static func conflict(_ message: String) -> APIError { APIError(.conflict, message) }
    public static func serviceQuotaExceeded(_ message: String) -> APIError { APIError(.serviceQuotaExceeded, message) }
    public static func accessDenied(_ message: String) -> APIError { APIError(.accessDenied, message) }
    public static func internalServer(_ message: String) -> APIError { APIError(.internalServer, message) }

    /// "ValidationException: destinations: ..." for logs.
    public var description: String { "\(code.rawValue): \(message)" }

    /// The HTTP response as data. The body carries both `exceptionMessage` (the model's
    /// member, filled by botocore's modeled-error parse) and `message` (what botocore puts
    /// into `Error.Message`, so the CLI prints it after "...operation: ").
    public var response: ErrorResponse {
        ErrorResponse(
            status: code.httpStatus,
            headers: [
                ("Content-Type", "application/json"),
                ("x-amzn-ErrorType", code.rawValue),
            ],
            body: "{\"exceptionMessage\":\(JSONText.quote(message)),\"message\":\(JSONText.quote(message))}"
        )
    }
}

/// An error response as plain data: the HTTP server copies it onto the wire unchanged.
public struct ErrorResponse: Sendable, Equatable {
    public var status: Int
    /// Ordered (name, value) pairs.
    public var headers: [(String, String)]
    public var body: String

    public init(status: Int, headers: [(String, String)], body: String) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func == (lhs: ErrorResponse, rhs: ErrorResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body
            && lhs.headers.map(\.0) == rhs.headers.map(\.0) && lhs.headers.map(\.1) == rhs.headers.map(\.1)
    }
}

