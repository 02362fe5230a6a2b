// The hook for request authentication (SigV4 verification plugs in here). It sees the
// request exactly as received and answers nil (allowed) or the error to return.
public import APIModels
public import Foundation
public import Logging
import Auth

public struct AuthenticationRequest: Sendable {
    public var method: String
    /// The raw (still percent-encoded) path.
    public var path: String
    /// The raw query string, without "?".
    public var query: String
    /// Header (name, value) pairs in the order received; names as sent. Includes `host`
    /// (HTTP/1 `Host`, which HTTPTypes keeps as the request's authority).
    public var headers: [(String, String)]
    public var body: Data

    /// The request target as sent: raw path, then `?` and the raw query if any.
    public var target: String { query.isEmpty ? path : path + "?" + query }

    public init(method: String, path: String, query: String, headers: [(String, String)], body: Data) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }
}

public protocol RequestAuthenticator: Sendable {
    /// nil to let the request through; otherwise the error (AccessDeniedException) to send.
    func authenticate(_ request: AuthenticationRequest) async -> APIError?
}

/// Lets every request through: the default, for a daemon bound to loopback.
public struct AllowAllAuthenticator: RequestAuthenticator {
    public init() {}
    public func authenticate(_ request: AuthenticationRequest) async -> APIError? { nil }
}

/// SigV4 verification against the configured access keys (`auth.enabled`): the AWS CLI and
/// SDKs sign with service `ivs` and this region. Any failure is AccessDeniedException; the
/// reason goes to the log, the client sees a fixed message (as AWS does, it reveals nothing).
public struct SigV4RequestAuthenticator: RequestAuthenticator {
    let verifier: SigV4Verifier
    let logger: Logger

    public init(accessKeys: [String: String], region: String, logger: Logger,
                now: @escaping @Sendable () -> Date = { Date() }) {
        verifier = SigV4Verifier(credentials: accessKeys, region: region, service: "ivs", now: now)
        self.logger = logger
    }

    public func authenticate(_ request: AuthenticationRequest) async -> APIError? {
        let signed = SignedRequest(method: request.method, target: request.target,
                                   headers: request.headers.map { (name: $0.0, value: $0.1) }, body: Array(request.body))
        switch verifier.verify(signed) {
        case .allowed:
            return nil
        case .denied(let failure):
            logger.notice("request denied", metadata: ["auth.reason": "\(failure.reason)", "http.target": "\(request.target)"])
            return .accessDenied(Self.message(for: failure))
        }
    }

    /// What the client is told: enough to fix its setup (clock, credentials), no more.
    static func message(for failure: AuthFailure) -> String {
        switch failure {
        case .missingAuthorization: "Missing Authentication Token: the request must be signed (SigV4)"
        case .requestTimeTooSkewed: "Signature expired: the request time is more than 15 minutes from the server time"
        case .unknownAccessKey: "The security token included in the request is invalid"
        default: "The request signature does not match: \(failure.reason)"
        }
    }
}
