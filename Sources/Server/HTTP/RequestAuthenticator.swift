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

/// Lets every request through (tests that need no guard).
public struct AllowAllAuthenticator: RequestAuthenticator {
    public init() {}
    public func authenticate(_ request: AuthenticationRequest) async -> APIError? { nil }
}

/// With authentication off, whoever reaches the API may use it, so it must be reachable only
/// by this machine's own tools and never by a web page: a browser POSTs cross-site without a
/// preflight when the body is text/plain or a form, and a DNS name rebound to 127.0.0.1 makes
/// a page's requests reach loopback. The AWS CLI and SDKs send no `Origin`, a JSON content
/// type and the host they were pointed at; a browser always sends `Origin` cross-site, and on
/// same-origin POSTs too. So an `Origin` is refused unless it is this server's own origin as the
/// request names it (the console at `/console`): its scheme is the API's, its host and port are
/// exactly the `Host`'s, and that host is one the API answers to. A page of a rebound DNS name
/// is same-origin with itself but its `Host` is not allowed; any other page's `Origin` differs.
public struct UnauthenticatedRequestGuard: RequestAuthenticator {
    /// Host names (no port, lower case) the API answers to.
    let allowedHosts: Set<String>
    /// The API's scheme: "http", or "https" with `listen.tls`. A same-origin page's `Origin` has it.
    let scheme: String
    let logger: Logger

    public init(allowedHosts: [String], scheme: String = "http", logger: Logger) {
        self.allowedHosts = Set((allowedHosts + ["localhost", "127.0.0.1", "::1"]).map { Self.bareHost($0) })
        self.scheme = scheme.lowercased()
        self.logger = logger
    }

    public func authenticate(_ request: AuthenticationRequest) async -> APIError? {
        let refusal = Self.refusal(request, allowedHosts: allowedHosts, scheme: scheme)
        if let refusal { logger.notice("request refused", metadata: ["reason": "\(refusal)", "http.target": "\(request.target)"]) }
        return refusal.map { .accessDenied("\($0) (authentication is off; see auth.enabled)") }
    }

    static func refusal(_ request: AuthenticationRequest, allowedHosts: Set<String>, scheme: String = "http") -> String? {
        func header(_ name: String) -> String? { request.headers.first { $0.0.lowercased() == name }?.1 }
        let origins = request.headers.filter { $0.0.lowercased() == "origin" }.map(\.1)
        if let origin = origins.first,
           origins.count > 1 || !isSameOrigin(origin, host: header("host"), scheme: scheme) {
            return "cross-site request refused (Origin: \(origin.prefix(100)))"
        }
        if let type = header("content-type") {
            let media = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            if !["application/json", "application/x-amz-json-1.0", "application/x-amz-json-1.1"].contains(media) {
                return "content type \(type.prefix(100)) refused: the API takes JSON"
            }
        }
        guard let host = header("host"), allowedHosts.contains(bareHost(host)) else {
            return "host \(header("host")?.prefix(100) ?? "(none)") is not one this server answers to (listen.allowedHosts)"
        }
        return nil
    }

    /// Whether `origin` (`scheme://host[:port]`, as browsers serialize it) names exactly the
    /// request's `Host` on this scheme: same host (case aside), same port (the scheme's default
    /// when absent from either). Anything else in it (a path, user info, "null") is another origin.
    static func isSameOrigin(_ origin: String, host: String?, scheme: String) -> Bool {
        let prefix = scheme + "://"
        let lower = origin.lowercased()
        guard let host, lower.hasPrefix(prefix) else { return false }
        let defaultPort = scheme == "https" ? 443 : 80
        guard let named = authority(String(lower.dropFirst(prefix.count)), defaultPort: defaultPort),
              let requested = authority(host.lowercased(), defaultPort: defaultPort) else { return false }
        return named == requested
    }

    /// `host[:port]` or `[v6][:port]` → (host, port); nil when it is anything else.
    static func authority(_ text: String, defaultPort: Int) -> (host: String, port: Int)? {
        let name: Substring, rest: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            name = text[text.index(after: text.startIndex)..<close]
            rest = text[text.index(after: close)...]
        } else if let colon = text.firstIndex(of: ":") {
            name = text[..<colon]
            rest = text[colon...]
        } else {
            name = text[...]
            rest = ""
        }
        let hostCharacters = Set("abcdefghijklmnopqrstuvwxyz0123456789-._:")
        guard !name.isEmpty, name.allSatisfy({ hostCharacters.contains($0) }) else { return nil }
        if rest.isEmpty { return (String(name), defaultPort) }
        let digits = rest.dropFirst()
        guard rest.first == ":", (1...5).contains(digits.count), digits.allSatisfy({ ("0"..."9").contains($0) }), let port = Int(digits),
              port <= 65535 else { return nil }
        return (String(name), port)
    }

    /// `Host` without its port, lower case: `[::1]:8086` → `::1`, `example.com:80` → `example.com`.
    static func bareHost(_ host: String) -> String {
        let lower = host.lowercased()
        if lower.hasPrefix("["), let close = lower.firstIndex(of: "]") {
            return String(lower[lower.index(after: lower.startIndex)..<close])
        }
        if lower.filter({ $0 == ":" }).count == 1, let colon = lower.firstIndex(of: ":") { return String(lower[..<colon]) }
        return lower
    }
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
