// What the verifier needs from an HTTP request, as it arrived on the wire: the server
// hands over the raw request target (still percent-encoded) because SigV4 signs the
// encoded form, and the router's decoded path would lose `%2F` vs `/`.

/// An incoming HTTP request as seen by ``SigV4Verifier``.
public struct SignedRequest: Sendable {
    /// The request body, or its SHA-256 when the server has already hashed the bytes it
    /// received. Never pass the client's `x-amz-content-sha256` claim here.
    public enum Payload: Sendable, Equatable {
        case bytes([UInt8])
        /// Hex SHA-256 of the received body, computed by the server.
        case sha256Hex(String)
    }

    /// "GET", "POST", ... (compared upper-cased).
    public var method: String
    /// The path exactly as sent, percent-encoded, without the query: `/tags/arn%3Aaws%3A...`.
    public var path: String
    /// Query items exactly as sent (percent-encoded), in order; an item without `=` has value "".
    public var query: [(name: String, value: String)]
    /// Every header line in order; names are case-insensitive and may repeat.
    public var headers: [(name: String, value: String)]
    public var payload: Payload

    public init(method: String, path: String, query: [(name: String, value: String)] = [],
                headers: [(name: String, value: String)], payload: Payload) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.payload = payload
    }

    /// Splits a raw request target (`/tags/x?tagKeys=a&tagKeys=b`) into path and query items.
    public init(method: String, target: String, headers: [(name: String, value: String)], body: [UInt8]) {
        let (path, query) = Self.split(target: target)
        self.init(method: method, path: path, query: query, headers: headers, payload: .bytes(body))
    }

    /// Path and raw query items of a request target; `?` starts the query, `&` separates items.
    public static func split(target: String) -> (path: String, query: [(name: String, value: String)]) {
        guard let mark = target.firstIndex(of: "?") else { return (target, []) }
        let path = String(target[..<mark])
        let queryText = target[target.index(after: mark)...]
        let items = queryText.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let equals = pair.firstIndex(of: "=") {
                return (name: String(pair[..<equals]), value: String(pair[pair.index(after: equals)...]))
            }
            return (name: String(pair), value: "")
        }
        return (path, items)
    }

    /// All values of a header, case-insensitively, in the order they arrived.
    public func headerValues(_ name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.name.lowercased() == wanted }.map(\.value)
    }
}
