// The HTTP surface through Hummingbird's router test client: routing, error rendering,
// tags in the path, health and metrics. In-memory store, fake pipelines.
import APIModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Prometheus
import EventSinks
import Layout
import Persistence
import PostgresNIO
import PostgresStore
@testable import Server
import TestSupport
import XCTest

class ControlPlaneRouterTests: XCTestCase {
    /// The store the application runs on: in memory here, PostgreSQL in the subclass.
    func makeStore() async throws -> (any CompositionStore)? { nil }

    func makeApp(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
                 metrics: ServerConfiguration.Metrics = ServerConfiguration.Metrics()) async throws -> some ApplicationProtocol {
        try await Self.makeApp(store: try await makeStore(), registry: registry, metrics: metrics)
    }

    /// The daemon's application on `store` (nil: in memory), a configured recorded stage, a
    /// bucket directory, fake pipelines.
    static func makeApp(store: (any CompositionStore)?, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
                        metrics: ServerConfiguration.Metrics = ServerConfiguration.Metrics()) async throws -> some ApplicationProtocol {
        let configuration = ServerConfiguration(
            stages: [.init(id: "twoPeople", source: CompositionManagerTests.fixtures.appendingPathComponent("two-people").path)],
            buckets: ["rec-bucket": .directory(FileManager.default.temporaryDirectory.appendingPathComponent("rec-\(UUID())").path)],
            maxRequestBodyBytes: 4096, metrics: metrics)
        return try await buildApplication(configuration: configuration, dependencies: ServerDependencies(
            logger: Logger(label: "test"), events: InMemoryEventSink(), metricsRegistry: registry,
            launcher: FakePipelineLauncher(), inMemoryStore: true), store: store)
    }

    static func json(_ buffer: ByteBuffer) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any])
    }

    func testEncoderConfigurationCRUDAndTags() async throws {
        try await makeApp().test(.router) { client in
            let arn = try await client.execute(uri: "/CreateEncoderConfiguration", method: .post,
                                     body: ByteBuffer(string: #"{"name":"small","video":{"width":640,"height":360}}"#)) { response in
                XCTAssertEqual(response.status, .ok)
                let body = try Self.json(response.body)
                let configuration = try XCTUnwrap(body["encoderConfiguration"] as? [String: Any])
                let video = try XCTUnwrap(configuration["video"] as? [String: Any])
                XCTAssertEqual(video["framerate"] as? Double, 30)
                XCTAssertEqual(video["bitrate"] as? Int, 2_500_000)
                return try XCTUnwrap(configuration["arn"] as? String)
            }
            XCTAssertTrue(arn.hasPrefix("arn:aws:ivs:us-east-1:123456789012:encoder-configuration/"))
            try await client.execute(uri: APIOperation.tagsPath(for: arn), method: .post,
                                     body: ByteBuffer(string: #"{"tags":{"team":"video"}}"#)) { response in
                XCTAssertEqual(response.status, .ok)
            }
            try await client.execute(uri: APIOperation.tagsPath(for: arn), method: .get) { response in
                XCTAssertEqual(try Self.json(response.body)["tags"] as? [String: String], ["team": "video"])
            }
            try await client.execute(uri: APIOperation.tagsPath(for: arn) + "?tagKeys=team", method: .delete) { response in
                XCTAssertEqual(response.status, .ok)
            }
            try await client.execute(uri: APIOperation.tagsPath(for: arn), method: .get) { response in
                XCTAssertEqual(try Self.json(response.body)["tags"] as? [String: String], [:])
            }
            try await client.execute(uri: "/ListEncoderConfigurations", method: .post, body: ByteBuffer(string: "")) { response in
                XCTAssertEqual((try Self.json(response.body)["encoderConfigurations"] as? [Any])?.count, 1)
            }
            try await client.execute(uri: "/DeleteEncoderConfiguration", method: .post,
                                     body: ByteBuffer(string: #"{"arn":"\#(arn)"}"#)) { response in
                XCTAssertEqual(response.status, .ok)
            }
            try await client.execute(uri: "/GetEncoderConfiguration", method: .post,
                                     body: ByteBuffer(string: #"{"arn":"\#(arn)"}"#)) { response in
                XCTAssertEqual(response.status, .notFound)
                XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ResourceNotFoundException")
            }
        }
    }

    func testErrorsCarryTheModelTypeAndStatus() async throws {
        try await makeApp().test(.router) { client in
            try await client.execute(uri: "/CreateEncoderConfiguration", method: .post,
                                     body: ByteBuffer(string: #"{"video":{"width":321}}"#)) { response in
                XCTAssertEqual(response.status, .badRequest)
                XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ValidationException")
                let message = try XCTUnwrap(try Self.json(response.body)["message"] as? String)
                XCTAssertTrue(message.hasPrefix("video.width"), message)
            }
            try await client.execute(uri: "/StartComposition", method: .post, body: ByteBuffer(string: "not json")) { response in
                XCTAssertEqual(response.status, .badRequest)
            }
            try await client.execute(uri: "/NoSuchOperation", method: .post, body: ByteBuffer(string: "{}")) { response in
                XCTAssertEqual(response.status, .notFound)
            }
            try await client.execute(uri: "/CreateEncoderConfiguration", method: .post,
                                     body: ByteBuffer(string: "{\"name\":\"" + String(repeating: "a", count: 5000) + "\"}")) { response in
                XCTAssertEqual(response.status, .contentTooLarge)
                XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ValidationException")
            }
            try await client.execute(uri: "/CreateStorageConfiguration", method: .post,
                                     body: ByteBuffer(string: #"{"s3":{"bucketName":"not-configured"}}"#)) { response in
                XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ValidationException")
            }
        }
    }

    func testStagesFromTheConfigurationAreListedAndProtected() async throws {
        try await makeApp().test(.router) { client in
            try await client.execute(uri: "/ListStages", method: .post, body: ByteBuffer(string: "{}")) { response in
                let stages = try XCTUnwrap(try Self.json(response.body)["stages"] as? [[String: Any]])
                XCTAssertEqual(stages.compactMap { $0["arn"] as? String }, ["arn:aws:ivs:us-east-1:123456789012:stage/twoPeople"])
            }
            try await client.execute(uri: "/DeleteStage", method: .post,
                                     body: ByteBuffer(string: #"{"arn":"arn:aws:ivs:us-east-1:123456789012:stage/twoPeople"}"#)) { response in
                XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ConflictException")
            }
            try await client.execute(uri: "/CreateStage", method: .post,
                                     body: ByteBuffer(string: #"{"name":"x","tags":{"stage-compositor:source":"/etc"}}"#)) { response in
                XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ValidationException")
            }
        }
    }

    func testLayoutIsCheckedOnceWithTheLayoutModulesWording() async throws {
        try await makeApp().test(.router) { client in
            let body = #"{"stageArn":"arn:aws:ivs:us-east-1:123456789012:stage/twoPeople","#
                + #""destinations":[{"channel":{"channelArn":"arn:aws:ivs:us-east-1:123456789012:channel/abcdEFGH1234"}}],"#
                + #""layout":{"pip":{"pipOffset":-5}}}"#
            try await client.execute(uri: "/StartComposition", method: .post, body: ByteBuffer(string: body)) { response in
                XCTAssertEqual(response.status, .badRequest)
                XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ValidationException")
                let message = try XCTUnwrap(try Self.json(response.body)["message"] as? String)
                XCTAssertEqual(message, "layout.pip.pipOffset: must be at least 0 (got -5)")
            }
        }
    }

    func testHealthAndMetrics() async throws {
        let registry = PrometheusCollectorRegistry()
        try await makeApp(registry: registry).test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                XCTAssertEqual(response.status, .ok)
                XCTAssertEqual(String(buffer: response.body), "ok\n")
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                XCTAssertTrue(text.contains("stage_compositor_frames_composed_total"), text)
                XCTAssertTrue(text.contains("stage_compositor_output_bytes_total{destination_type=\"channel\"}"), text)
                XCTAssertTrue(text.contains("stage_compositor_compositions{state=\"ACTIVE\"}"), text)
                XCTAssertTrue(text.contains("stage_compositor_connections_refused{listener=\"api\"} 0"), text)
                XCTAssertTrue(text.contains("stage_compositor_connections_open{listener=\"api\"}"), text)
            }
        }
    }

    /// Every family on /metrics has `# HELP` and `# TYPE`; API calls are counted by operation and
    /// status (an unknown path as one operation); the process and the build are described.
    func testMetricsAreDocumentedAndLabelled() async throws {
        try await makeApp().test(.router) { client in
            try await client.execute(uri: "/ListEncoderConfigurations", method: .post,
                                     headers: [.contentType: "application/json"], body: ByteBuffer(string: "{}")) { response in
                XCTAssertEqual(response.status, .ok)
            }
            for _ in 0..<2 {
                try await client.execute(uri: "/NoSuchOperation", method: .post,
                                         headers: [.contentType: "application/json"], body: ByteBuffer(string: "{}")) { response in
                    XCTAssertEqual(response.status, .notFound)
                }
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                XCTAssertEqual(Self.undocumentedMetrics(in: text), [], text)
                XCTAssertTrue(text.contains("stage_compositor_api_requests_total{operation=\"ListEncoderConfigurations\",status=\"200\"} 1\n"), text)
                XCTAssertTrue(text.contains("stage_compositor_api_requests_total{operation=\"unknown\",status=\"404\"} 2\n"), text)
                XCTAssertNotNil(text.range(of: #"(?m)^stage_compositor_build_info\{version="[^"]+",commit="[^"]+"\} 1(\.0)?$"#,
                                           options: .regularExpression), text)
                for name in ["process_resident_memory_bytes", "process_open_fds"] {
                    let value = try XCTUnwrap(Self.sample(name, in: text), "\(name) in\n\(text)")
                    XCTAssertGreaterThan(value, 0, name)
                }
                let cpu = try XCTUnwrap(Self.sample("process_cpu_seconds_total", in: text), text)
                XCTAssertGreaterThanOrEqual(cpu, 0)
                XCTAssertTrue(text.contains("# TYPE process_cpu_seconds_total counter\n"), text)
            }
        }
    }

    /// The unlabelled sample `name`'s value.
    static func sample(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    /// Families with a `# TYPE` but no `# HELP`, and samples whose family lacks either (a
    /// histogram's `_bucket`, `_sum` and `_count` belong to it).
    static func undocumentedMetrics(in text: String) -> [String] {
        var helped = Set<String>(), typed: [String: String] = [:], problems: [String] = []
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ", maxSplits: 3)
            if line.hasPrefix("# HELP "), words.count == 4 {
                helped.insert(String(words[2]))
            } else if line.hasPrefix("# TYPE "), words.count == 4 {
                typed[String(words[2])] = String(words[3])
                if !helped.contains(String(words[2])) { problems.append("TYPE without HELP: \(words[2])") }
            } else if !line.hasPrefix("#") {
                let name = String(line.prefix { $0 != "{" && $0 != " " })
                let family = ["_bucket", "_sum", "_count"].compactMap { suffix -> String? in
                    guard name.hasSuffix(suffix) else { return nil }
                    let base = String(name.dropLast(suffix.count))
                    return typed[base] == "histogram" ? base : nil
                }.first ?? name
                if typed[family] == nil || !helped.contains(family) { problems.append("sample without HELP or TYPE: \(name)") }
            }
        }
        return problems
    }

    /// Authentication off: a web page must not be able to drive the API (cross-site POSTs,
    /// DNS rebinding); the AWS CLI's requests (no Origin, JSON, the host it was given) pass.
    func testCrossSiteRequestsAreRefusedWhileAuthenticationIsOff() async throws {
        try await makeApp().test(.router) { client in
            let body = ByteBuffer(string: #"{"stageArn":"arn:aws:ivs:us-east-1:123456789012:stage/twoPeople","destinations":[]}"#)
            // (The router test client always sends the authority "localhost".)
            let attempts: [(HTTPFields, String)] = [
                ([.origin: "https://evil.example", .contentType: "text/plain"], "cross-site"),
                ([.origin: "null", .contentType: "application/json"], "cross-site"),
                ([.contentType: "text/plain"], "content type"),
                ([.contentType: "application/x-www-form-urlencoded"], "content type"),
            ]
            for (headers, reason) in attempts {
                try await client.execute(uri: "/StartComposition", method: .post, headers: headers, body: body) { response in
                    XCTAssertEqual(response.status, .forbidden, "\(headers)")
                    XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "AccessDeniedException")
                    XCTAssertTrue(String(buffer: response.body).contains(reason), String(buffer: response.body))
                }
            }
            // As the AWS CLI sends it: no Origin, JSON.
            try await client.execute(uri: "/ListEncoderConfigurations", method: .post,
                                     headers: [.contentType: "application/json"], body: ByteBuffer(string: "{}")) { response in
                XCTAssertEqual(response.status, .ok)
            }
        }
        // Hosts: the listen address, localhost and loopback, with or without a port; any other
        // name (a DNS name rebound to 127.0.0.1) is refused.
        let allowed = UnauthenticatedRequestGuard(allowedHosts: ["127.0.0.1", "compositor.internal"], logger: Logger(label: "test")).allowedHosts
        func refusal(_ host: String?) -> String? {
            UnauthenticatedRequestGuard.refusal(AuthenticationRequest(method: "POST", path: "/ListStages", query: "",
                                                                      headers: (host.map { [("host", $0)] } ?? []) + [("Content-Type", "application/json")],
                                                                      body: Data()), allowedHosts: allowed)
        }
        for host in ["127.0.0.1:8086", "localhost:8086", "LOCALHOST", "[::1]:8086", "compositor.internal:8086"] {
            XCTAssertNil(refusal(host), host)
        }
        for host in ["rebound.evil.example:8086", "127.0.0.1.evil.example", "[::2]:8086", ""] {
            XCTAssertNotNil(refusal(host), host)
        }
        XCTAssertNotNil(refusal(nil))
    }

    /// Authentication off, a browser's same-origin call (the console at /console) passes: its
    /// `Origin` names exactly the request's `Host` on the API's scheme, and that host is one the
    /// API answers to. Any other Origin (another port, host or scheme, a rebound name, "null",
    /// more than an origin) is still refused.
    func testASameOriginPageMayCallTheAPIWhileAuthenticationIsOff() async throws {
        try await makeApp().test(.router) { client in
            // The router test client's authority is "localhost": port 80 on http.
            for (origin, allowed) in [("http://localhost", true), ("http://LOCALHOST:80", true), ("http://localhost:8086", false),
                                      ("https://localhost", false), ("http://127.0.0.1", false)] {
                try await client.execute(uri: "/ListEncoderConfigurations", method: .post,
                                         headers: [.origin: origin, .contentType: "application/json"],
                                         body: ByteBuffer(string: "{}")) { response in
                    XCTAssertEqual(response.status, allowed ? .ok : .forbidden, origin)
                    if !allowed { XCTAssertTrue(String(buffer: response.body).contains("cross-site"), String(buffer: response.body)) }
                }
            }
            // Same-origin is not a content-type exemption: a form post is still refused.
            try await client.execute(uri: "/ListEncoderConfigurations", method: .post,
                                     headers: [.origin: "http://localhost", .contentType: "text/plain"],
                                     body: ByteBuffer(string: "{}")) { response in
                XCTAssertEqual(response.status, .forbidden)
                XCTAssertTrue(String(buffer: response.body).contains("content type"), String(buffer: response.body))
            }
        }
        let allowed = UnauthenticatedRequestGuard(allowedHosts: ["127.0.0.1", "compositor.internal"], logger: Logger(label: "test")).allowedHosts
        func refusal(origins: [String], host: String?, scheme: String = "http") -> String? {
            UnauthenticatedRequestGuard.refusal(
                AuthenticationRequest(method: "POST", path: "/ListStages", query: "",
                                      headers: (host.map { [("Host", $0)] } ?? []) + origins.map { ("Origin", $0) }
                                          + [("Content-Type", "application/json")], body: Data()),
                allowedHosts: allowed, scheme: scheme)
        }
        let sameOrigin: [(origin: String, host: String, scheme: String)] = [
            ("http://127.0.0.1:8086", "127.0.0.1:8086", "http"),
            ("http://localhost:8086", "LOCALHOST:8086", "http"),
            ("http://[::1]:8086", "[::1]:8086", "http"),
            ("http://compositor.internal", "compositor.internal:80", "http"),
            ("http://compositor.internal:80", "compositor.internal", "http"),
            ("https://compositor.internal", "compositor.internal", "https"),
            ("https://compositor.internal:8443", "compositor.internal:8443", "https"),
        ]
        for (origin, host, scheme) in sameOrigin {
            XCTAssertNil(refusal(origins: [origin], host: host, scheme: scheme), "\(origin) on \(scheme)://\(host)")
        }
        let crossSite: [(origin: [String], host: String?, scheme: String)] = [
            (["http://127.0.0.1:9999"], "127.0.0.1:8086", "http"),                 // another port
            (["http://127.0.0.1"], "127.0.0.1:8086", "http"),                      // the default port is another port
            (["http://localhost:8086"], "127.0.0.1:8086", "http"),                 // another name of the same machine
            (["https://127.0.0.1:8086"], "127.0.0.1:8086", "http"),                // another scheme
            (["http://compositor.internal:8443"], "compositor.internal:8443", "https"),
            (["http://rebound.evil.example:8086"], "rebound.evil.example:8086", "http"), // same-origin, but not an allowed host
            (["http://127.0.0.1.evil.example:8086"], "127.0.0.1.evil.example:8086", "http"),
            (["null"], "127.0.0.1:8086", "http"),
            ([""], "127.0.0.1:8086", "http"),
            (["http://127.0.0.1:8086/"], "127.0.0.1:8086", "http"),                // not an origin: a path
            (["http://user@127.0.0.1:8086"], "127.0.0.1:8086", "http"),
            (["http://127.0.0.1:+8086"], "127.0.0.1:+8086", "http"),
            (["http://127.0.0.1:8086", "https://evil.example"], "127.0.0.1:8086", "http"), // two origins
            (["http://127.0.0.1:8086"], nil, "http"),                               // no Host to be the same as
        ]
        for (origins, host, scheme) in crossSite {
            XCTAssertNotNil(refusal(origins: origins, host: host, scheme: scheme), "\(origins) on \(scheme)://\(host ?? "(no host)")")
        }
        // The daemon's guard takes the listener's scheme.
        let tls = UnauthenticatedRequestGuard(allowedHosts: ["compositor.internal"], scheme: "https", logger: Logger(label: "test"))
        let request = AuthenticationRequest(method: "POST", path: "/ListStages", query: "",
                                            headers: [("host", "compositor.internal:8443"), ("origin", "https://compositor.internal:8443"),
                                                      ("content-type", "application/json")], body: Data())
        let refused = await tls.authenticate(request)
        XCTAssertNil(refused)
    }

    func testMetricsBehindABearerToken() async throws {
        let token = "0123456789abcdef-metrics"
        try await makeApp(metrics: ServerConfiguration.Metrics(bearerToken: token)).test(.router) { client in
            for header in [nil, "Bearer wrong", "Bearer \(token)x", "Basic \(token)"] {
                var headers = HTTPFields()
                if let header { headers[.authorization] = header }
                try await client.execute(uri: "/metrics", method: .get, headers: headers) { response in
                    XCTAssertEqual(response.status, .unauthorized, header ?? "none")
                }
            }
            try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                XCTAssertEqual(response.status, .ok)
                XCTAssertTrue(String(buffer: response.body).contains("stage_compositor_frames_composed_total"))
            }
            try await client.execute(uri: "/healthz", method: .get) { response in XCTAssertEqual(response.status, .ok) }
        }
    }

    func testAnUnauthenticatedAPIOnlyOnLoopbackAndNoPlaceholderSecret() {
        var open = ServerConfiguration(listen: .init(host: "0.0.0.0"), stateDirectory: "/tmp/x")
        XCTAssertTrue(open.validate().contains { $0.hasPrefix("listen.host: 0.0.0.0 is reachable from other machines") }, "\(open.validate())")
        open.listen.allowUnauthenticated = true
        XCTAssertFalse(open.validate().contains { $0.hasPrefix("listen.host") })
        var authenticated = ServerConfiguration(listen: .init(host: "0.0.0.0"),
                                                auth: .init(enabled: true, accessKeys: ["AKID": ServerConfiguration.placeholderSecret]),
                                                stateDirectory: "/tmp/x")
        XCTAssertTrue(authenticated.validate().contains { $0.hasPrefix("auth.accessKeys.AKID") }, "\(authenticated.validate())")
        XCTAssertFalse(authenticated.validate().contains { $0.hasPrefix("listen.host") })
        authenticated.auth.accessKeys = ["AKID": "a secret of my own"]
        XCTAssertFalse(authenticated.validate().contains { $0.hasPrefix("auth.accessKeys") })
        XCTAssertTrue(ServerConfiguration(stateDirectory: "/tmp/x").validate().isEmpty)
    }
}

/// The same HTTP surface on the PostgreSQL store (a database of its own per test).
final class ControlPlaneRouterPostgresTests: ControlPlaneRouterTests {
    private var pool: Task<Void, Never>?

    override func makeStore() async throws -> (any CompositionStore)? {
        let url = try PostgresDatabaseURL.parse(try PostgresTestServer.shared().database()).get()
        var logger = Logger(label: "postgres")
        logger.logLevel = .warning
        let client = PostgresClient(configuration: url.clientConfiguration(), backgroundLogger: logger)
        pool = Task { await client.run() }
        let store = PostgresCompositionStore(client: client, logger: logger)
        try await store.migrate()
        return store
    }

    // XCTest on Linux runs only the methods a class declares itself.
    override func testEncoderConfigurationCRUDAndTags() async throws { try await super.testEncoderConfigurationCRUDAndTags() }
    override func testErrorsCarryTheModelTypeAndStatus() async throws { try await super.testErrorsCarryTheModelTypeAndStatus() }
    override func testStagesFromTheConfigurationAreListedAndProtected() async throws { try await super.testStagesFromTheConfigurationAreListedAndProtected() }
    override func testLayoutIsCheckedOnceWithTheLayoutModulesWording() async throws { try await super.testLayoutIsCheckedOnceWithTheLayoutModulesWording() }
    override func testHealthAndMetrics() async throws { try await super.testHealthAndMetrics() }
    override func testMetricsAreDocumentedAndLabelled() async throws { try await super.testMetricsAreDocumentedAndLabelled() }
    override func testCrossSiteRequestsAreRefusedWhileAuthenticationIsOff() async throws { try await super.testCrossSiteRequestsAreRefusedWhileAuthenticationIsOff() }
    override func testMetricsBehindABearerToken() async throws { try await super.testMetricsBehindABearerToken() }
    override func testASameOriginPageMayCallTheAPIWhileAuthenticationIsOff() async throws {
        try await super.testASameOriginPageMayCallTheAPIWhileAuthenticationIsOff()
    }

    override func tearDown() {
        pool?.cancel()
        super.tearDown()
    }
}
