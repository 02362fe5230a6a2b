// The HTTP surface's parts, each alone, through Hummingbird's router test client: the route
// table (every operation at its model's route, the tags path, WHIP), an unknown operation in
// IVS's words, the body limit, SigV4 (skipped only for a verified fleet call), the API metrics.
// Rules the Python daemon tests used to check through a process.
import APIModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Prometheus
@testable import Server
import Synchronization
import Testing

@Suite struct HTTPMiddlewareTests {
    /// Records what reached it; refuses when told to.
    final class RecordingAuthenticator: RequestAuthenticator, Sendable {
        let seen = Mutex<[AuthenticationRequest]>([])
        let refuse: Bool
        init(refuse: Bool = false) { self.refuse = refuse }
        func authenticate(_ request: AuthenticationRequest) async -> APIError? {
            seen.withLock { $0.append(request) }
            return refuse ? .accessDenied("no signature") : nil
        }
    }

    final class Log<Entry: Sendable>: Sendable {
        let entries = Mutex<[Entry]>([])
        func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }
        var all: [Entry] { entries.withLock { $0 } }
    }

    struct Call: Sendable, Equatable {
        var operation: String
        var resourceArn: String?
        var query: String
        var body: String
        var forwarded: Bool
    }

    static func routes(authenticator: any RequestAuthenticator = RecordingAuthenticator(), registry: PrometheusCollectorRegistry,
                       calls: Log<Call>, maxBodyBytes: Int = 64,
                       whip: (@Sendable (Request, String) async -> Response)? = nil) -> APIRoutes {
        APIRoutes(maxBodyBytes: maxBodyBytes, authenticator: authenticator, registry: registry,
                  metrics: ServerMetrics(factory: DocumentedPrometheusFactory(registry: registry, help: ServerMetrics.help)),
                  logger: Logger(label: "http-middleware"),
                  operation: { route, query, body, forwarded throws(APIError) in
                      calls.append(Call(operation: route.operation.name, resourceArn: route.resourceArn, query: query,
                                        body: String(decoding: body, as: UTF8.self), forwarded: forwarded))
                      if route.operation == .deleteStage { throw .resourceNotFound("no such stage") }
                      return Data("{}".utf8)
                  }, whip: whip)
    }

    @Test("every operation answers at its model's route, tags at /tags/<encoded ARN> by method; nothing else does")
    func theRouteTable() async throws {
        let calls = Log<Call>(), registry = PrometheusCollectorRegistry()
        let app = Application(router: Self.routes(registry: registry, calls: calls).buildRouter())
        let arn = "arn:aws:ivs:us-east-1:123456789012:stage/AbCdEf123456"
        try await app.test(.router) { client in
            for operation in APIOperation.allCases where operation.requestURI.contains("{") == false {
                try await client.execute(uri: operation.requestURI, method: .post, body: ByteBuffer(string: "{}")) { response in
                    #expect(response.status == (operation == .deleteStage ? .notFound : .ok), "\(operation)")
                }
            }
            for (method, operation) in [(HTTPRequest.Method.post, "TagResource"), (.get, "ListTagsForResource"), (.delete, "UntagResource")] {
                try await client.execute(uri: APIOperation.tagsPath(for: arn) + "?tagKeys=a", method: method) { response in
                    #expect(response.status == .ok, "\(operation)")
                }
            }
            // The wrong method, an unknown name, a path below an operation, the root: unknown operations.
            for (method, uri) in [(HTTPRequest.Method.get, "/CreateStage"), (.post, "/CreateStages"), (.post, "/CreateStage/x"),
                                  (.post, "/"), (.put, APIOperation.tagsPath(for: arn)), (.post, "/tags/%zz")] {
                try await client.execute(uri: uri, method: method) { response in
                    #expect(response.status == .notFound, "\(method) \(uri)")
                    #expect(response.headers[HTTPField.Name("x-amzn-ErrorType")!] == "UnknownOperationException", "\(method) \(uri)")
                }
            }
        }
        let seen = calls.all
        #expect(seen.count == APIOperation.allCases.count)
        #expect(seen.filter { $0.resourceArn != nil }.map(\.resourceArn) == [arn, arn, arn])
        #expect(seen.last?.query == "tagKeys=a")
        let text = registry.emitToString()
        #expect(text.contains(#"stage_compositor_api_requests_total{operation="unknown",status="404"} 6"#), "\(text)")
        #expect(text.contains(#"stage_compositor_api_requests_total{operation="DeleteStage",status="404"} 1"#))
        #expect(text.contains(#"stage_compositor_api_requests_total{operation="CreateStage",status="200"} 1"#))
    }

    @Test("a body over the limit is a 413 ValidationException and runs nothing; one within it reaches the operation whole")
    func theBodyLimit() async throws {
        let calls = Log<Call>(), registry = PrometheusCollectorRegistry()
        let app = Application(router: Self.routes(registry: registry, calls: calls, maxBodyBytes: 64).buildRouter())
        try await app.test(.router) { client in
            try await client.execute(uri: "/CreateStage", method: .post, body: ByteBuffer(string: String(repeating: "x", count: 65))) { response in
                #expect(response.status == .contentTooLarge)
                #expect(response.headers[HTTPField.Name("x-amzn-ErrorType")!] == "ValidationException")
            }
            let body = "{\"name\":\"" + String(repeating: "y", count: 53) + "\"}"
            #expect(body.utf8.count == 64)
            try await client.execute(uri: "/CreateStage", method: .post, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .ok)
            }
        }
        #expect(calls.all.map(\.body) == ["{\"name\":\"" + String(repeating: "y", count: 53) + "\"}"])
        #expect(registry.emitToString().contains(#"stage_compositor_api_requests_total{operation="CreateStage",status="413"} 1"#))
    }

    @Test("SigV4 sees the target as sent (still percent-encoded), the query and the Host; a refusal runs nothing")
    func authentication() async throws {
        let calls = Log<Call>(), registry = PrometheusCollectorRegistry()
        let lenient = RecordingAuthenticator()
        let arn = "arn:aws:ivs:us-east-1:123456789012:stage/AbCdEf123456"
        let target = APIOperation.tagsPath(for: arn) + "?tagKeys=a%20b"
        try await Application(router: Self.routes(authenticator: lenient, registry: registry, calls: calls).buildRouter())
            .test(.router) { client in
                try await client.execute(uri: target, method: .delete, headers: [HTTPField.Name("x-amz-date")!: "20261128T000000Z"]) { response in
                    #expect(response.status == .ok)
                }
            }
        let seen = try #require(lenient.seen.withLock { $0.first })
        #expect(seen.method == "DELETE")
        #expect(seen.path == APIOperation.tagsPath(for: arn))
        #expect(seen.path.contains("%3A"))
        #expect(seen.query == "tagKeys=a%20b")
        #expect(seen.headers.contains { $0.0 == "x-amz-date" && $0.1 == "20261128T000000Z" })
        #expect(calls.all.count == 1)

        let strict = RecordingAuthenticator(refuse: true)
        try await Application(router: Self.routes(authenticator: strict, registry: registry, calls: calls).buildRouter())
            .test(.router) { client in
                try await client.execute(uri: "/CreateStage", method: .post, body: ByteBuffer(string: "{}")) { response in
                    #expect(response.status == .forbidden)
                    #expect(response.headers[HTTPField.Name("x-amzn-ErrorType")!] == "AccessDeniedException")
                }
                // /healthz and /metrics are not API calls: no signature asked.
                try await client.execute(uri: "/healthz", method: .get) { response in #expect(response.status == .ok) }
            }
        #expect(calls.all.count == 1)
        #expect(strict.seen.withLock { $0.count } == 1)
    }

    @Test("WHIP: every method under /whip reaches the endpoint with the client's address; off, it says so")
    func whipRoutes() async throws {
        let calls = Log<Call>(), registry = PrometheusCollectorRegistry()
        let reached = Log<String>()
        let whip: @Sendable (Request, String) async -> Response = { request, _ in
            reached.append("\(request.method.rawValue) \(request.uri.path)")
            return Response(status: .noContent)
        }
        try await Application(router: Self.routes(registry: registry, calls: calls, whip: whip).buildRouter()).test(.router) { client in
            for (method, path) in [(HTTPRequest.Method.post, "/whip"), (.post, "/whip/stage/a"), (.delete, "/whip/session/x"),
                                   (.patch, "/whip/session/x"), (.options, "/whip")] {
                try await client.execute(uri: path, method: method) { response in #expect(response.status == .noContent) }
            }
        }
        #expect(reached.all == ["POST /whip", "POST /whip/stage/a", "DELETE /whip/session/x", "PATCH /whip/session/x",
                                            "OPTIONS /whip"])
        try await Application(router: Self.routes(registry: registry, calls: calls).buildRouter()).test(.router) { client in
            try await client.execute(uri: "/whip/stage/a", method: .post) { response in
                #expect(response.status == .notFound)
                #expect(String(buffer: response.body).contains("ingest.whip.enabled"))
            }
        }
        #expect(calls.all.isEmpty)
    }
}
