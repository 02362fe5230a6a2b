// The hook for request authentication (SigV4 verification plugs in here). It sees the
// request exactly as received and answers nil (allowed) or the error to return.
public import APIModels
public import Foundation

public struct AuthenticationRequest: Sendable {
    public var method: String
    /// The raw (still percent-encoded) path.
    public var path: String
    /// The raw query string, without "?".
    public var query: String
    /// Header (name, value) pairs in the order received; names as sent.
    public var headers: [(String, String)]
    public var body: Data

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
