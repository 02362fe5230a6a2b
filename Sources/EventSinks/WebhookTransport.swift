// The HTTP POST a webhook delivery makes, behind a protocol so the retry logic is tested
// without sockets and the daemon injects its shared HTTPClient.

public import AsyncHTTPClient
internal import NIOCore

/// Sends one webhook request; returns the HTTP status, throws on transport errors
/// (refused, reset, timed out).
public protocol WebhookTransport: Sendable {
    func post(_ body: [UInt8], to url: String, timeout: Duration) async throws -> Int
}

/// `POST url` with `Content-Type: application/json` through AsyncHTTPClient.
public struct HTTPClientWebhookTransport: WebhookTransport {
    private let httpClient: HTTPClient

    /// The client is the caller's: it is not shut down here. Note that AsyncHTTPClient
    /// retries a refused connection until the request's timeout by default
    /// (`connectionPool.retryConnectionEstablishment`), so a down webhook costs one
    /// `requestTimeout` per attempt, in the background.
    public init(httpClient: HTTPClient) {
        self.httpClient = httpClient
    }

    /// A request that outlives its deadline by this much is abandoned: the client's own
    /// deadline has been seen to miss under load (a refused connection being retried while
    /// the pool is busy), and one stuck request must not stall every later event.
    static let deadlineGrace: Duration = .milliseconds(500)

    struct DeadlineExceeded: Error, CustomStringConvertible {
        var description: String { "webhook request exceeded its deadline" }
    }

    public func post(_ body: [UInt8], to url: String, timeout: Duration) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask { try await self.execute(body, to: url, timeout: timeout) }
            group.addTask {
                try await Task.sleep(for: timeout + Self.deadlineGrace)
                throw DeadlineExceeded()
            }
            defer { group.cancelAll() }
            guard let status = try await group.next() else { throw DeadlineExceeded() }
            return status
        }
    }

    private func execute(_ body: [UInt8], to url: String, timeout: Duration) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "stage-compositor")
        request.body = .bytes(ByteBuffer(bytes: body))
        let (seconds, attoseconds) = timeout.components
        let response = try await httpClient.execute(
            request, timeout: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        // Read the (ignored) body so the connection goes back to the pool.
        for try await _ in response.body {}
        return Int(response.status.code)
    }
}
