// The WHEP resource's HTTP rules in process: the endpoint with the token authority, the stage
// runtime and a composition on the in-memory store, its feed registered as a running pipeline
// registers it, and the media transport listening on loopback (no media is sent). Who may
// watch, in the order the checks run; the session resource (DELETE of the composition's own
// sessions only, PATCH refused, CORS); the caps; a composition that stopped or ended.
import APIModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Persistence
import Prometheus
@testable import Server
import TestSupport
import Testing
import WHEP

@Suite struct WHEPEndpointTests {
    static let compositionId = "WhepCompos01"
    static let path = "/whep/composition/\(compositionId)"

    struct Harness {
        let base: ReplicationTests.Harness
        let tokens: TokenAuthority
        let feeds: WHEPFeeds
        let feed: WHEPFeed
        let app: Application<RouterResponder<ServerRequestContext>>
        let transport: Task<Void, any Error>
        let metrics: @Sendable () -> String

        func token(_ user: String, stage: String = ReplicationTests.stageA,
                   capabilities: [ParticipantTokenCapability]) async throws -> String {
            let issued = try await tokens.issue(stageArn: stage, whipURL: "http://127.0.0.1/whip/x", duration: nil, userId: user,
                                                attributes: nil, capabilities: capabilities, now: Date())
            return try #require(issued.token)
        }
    }

    static func harness(perComposition: Int = 50, perAddress: Int = 64) async throws -> Harness {
        let base = try await ReplicationTests.harness()
        var configuration = ServerConfiguration()
        configuration.ingest.whip.host = "127.0.0.1"
        configuration.ingest.whip.port = 0
        configuration.ingest.whip.maxViewersPerAddress = perAddress
        let tokens = try await TokenAuthority(configuration: configuration, persistent: false) { [:] }
        try await base.store.putComposition(StoredComposition(composition: Composition(
            arn: "arn:aws:ivs:us-east-1:123456789012:composition/\(compositionId)", stageArn: ReplicationTests.stageA,
            state: .active, layout: .defaultGrid, destinations: [])))
        let registry = PrometheusCollectorRegistry()
        let metrics = ServerMetrics(factory: PrometheusMetricsFactory(registry: registry))
        let server = try makeWebRTCIngestServer(configuration: configuration, hub: await base.runtime.hub, metrics: metrics,
                                                logger: Logger(label: "whep-endpoint"))
        let transport = Task { try await server.run() }
        let deadline = ContinuousClock.now + .seconds(30)
        while server.port == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let feeds = WHEPFeeds(maxViewersPerComposition: perComposition, clock: { 0 })
        feeds.connect { server.wakeViewers(owner: $0) }
        let feed = feeds.makeFeed(compositionId: compositionId, director: nil)
        let logger = Logger(label: "whep-endpoint")
        let endpoint = WHEPEndpoint(configuration: configuration, store: base.store, runtime: base.runtime, media: server, feeds: feeds,
                                    tokens: tokens, authenticator: UnauthenticatedRequestGuard(allowedHosts: ["127.0.0.1"], logger: logger),
                                    wallClock: Date.init, logger: logger)
        var routes = APIRoutes(maxBodyBytes: 4096, authenticator: UnauthenticatedRequestGuard(allowedHosts: ["127.0.0.1"], logger: logger),
                               registry: registry, metrics: metrics, logger: logger,
                               operation: { _, _, _, _ throws(APIError) in Data("{}".utf8) },
                               whep: { request, client in await endpoint.respond(to: request, clientAddress: client) })
        routes.onMetricsRead.append {
            let counts = server.viewerSessionCounts
            metrics.recordConnections(listener: "whep", open: counts.open, refused: counts.refused)
        }
        let reads = routes.onMetricsRead
        return Harness(base: base, tokens: tokens, feeds: feeds, feed: feed, app: Application(router: routes.buildRouter()),
                       transport: transport, metrics: {
                           var buffer: [UInt8] = []
                           reads.forEach { $0() }
                           registry.emit(into: &buffer)
                           return String(decoding: buffer, as: UTF8.self)
                       })
    }

    static func post(_ client: some TestClientProtocol, path: String = path, token: String?, body: String = Offers.chromiumWHEP,
                     extra: HTTPFields = [:]) async throws -> (HTTPResponse.Status, String, HTTPFields) {
        var headers: HTTPFields = [.contentType: "application/sdp"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        headers.append(contentsOf: extra)
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body)) { response in
            (response.status, String(buffer: response.body), response.headers)
        }
    }

    @Test("POST: who may watch (401, 403), what composition (404), the offer (400), then 201 with the answer and a session resource")
    func whoMayWatch() async throws {
        let h = try await Self.harness()
        defer { h.transport.cancel(); h.base.running.cancel(); h.feed.close() }
        let viewer = try await h.token("viewer", capabilities: [.subscribe])
        let publisher = try await h.token("publisher", capabilities: [.publish])
        let elsewhere = try await h.token("elsewhere", stage: ReplicationTests.stageB, capabilities: [.subscribe])
        let (feed, store) = (h.feed, h.base.store)
        try await h.app.test(.router) { client in
            try await client.execute(uri: Self.path, method: .options) { response in
                #expect(response.status == .noContent)
                #expect(response.headers[.accessControlAllowOrigin] == "*")
                #expect(response.headers[.accessControlAllowHeaders]?.contains("Authorization") == true)
            }
            var (status, body, headers) = try await Self.post(client, token: String(viewer.dropLast(8)) + "AAAAAAAA")
            #expect(status == .unauthorized && body.contains("signature"), "\(status) \(body)")
            (status, body, _) = try await Self.post(client, token: publisher)
            #expect(status == .forbidden && body.contains("SUBSCRIBE"), "\(status) \(body)")
            (status, body, _) = try await Self.post(client, token: elsewhere)
            #expect(status == .forbidden, "\(status) \(body)")
            // Unsigned, from another site: what the API's guard refuses (authentication off).
            (status, body, _) = try await Self.post(client, token: nil, extra: [.origin: "http://evil.example"])
            #expect(status == .unauthorized && body.contains("cross-site"), "\(status) \(body)")
            (status, body, _) = try await Self.post(client, path: "/whep/composition/NoSuchCompo1", token: viewer)
            #expect(status == .notFound, "\(status) \(body)")
            (status, body, _) = try await Self.post(client, token: viewer, body: "v=0\r\n")
            #expect(status == .badRequest, "\(status) \(body)")
            (status, body, headers) = try await Self.post(client, token: viewer)
            #expect(status == .created && body.contains("a=setup:passive") && body.contains("a=sendonly"), "\(status) \(body)")
            let location = try #require(headers[.location])
            #expect(location.hasPrefix(Self.path + "/"))
            #expect(feed.viewerCount == 1)

            // The session resource: PATCH refused, another composition's path cannot end it, its own can.
            try await client.execute(uri: location, method: .patch, headers: [.authorization: "Bearer \(viewer)"]) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "DELETE, OPTIONS")
            }
            let session = String(location.split(separator: "/").last ?? "")
            try await store.putComposition(StoredComposition(composition: Composition(
                arn: "arn:aws:ivs:us-east-1:123456789012:composition/WhepOther001", stageArn: ReplicationTests.stageA,
                state: .active, layout: .defaultGrid, destinations: [])))
            try await client.execute(uri: "/whep/composition/WhepOther001/\(session)", method: .delete,
                                     headers: [.authorization: "Bearer \(viewer)"]) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: location, method: .delete, headers: [.authorization: "Bearer \(publisher)"]) { response in
                #expect(response.status == .forbidden)
            }
            try await client.execute(uri: location, method: .delete, headers: [.authorization: "Bearer \(viewer)"]) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: location, method: .delete, headers: [.authorization: "Bearer \(viewer)"]) { response in
                #expect(response.status == .notFound)
            }
        }
        #expect(h.feed.viewerCount == 0)
        try await Self.waitUntil { h.metrics().contains("stage_compositor_connections_open{listener=\"whep\"} 0") }
    }

    @Test("the caps: per composition, then per address, answer 429 and are counted; an ended composition answers 404")
    func capsAndEnd() async throws {
        let h = try await Self.harness(perComposition: 2, perAddress: 3)
        defer { h.transport.cancel(); h.base.running.cancel() }
        let viewer = try await h.token("viewer", capabilities: [.subscribe])
        let (feeds, feed, store, metrics) = (h.feeds, h.feed, h.base.store, h.metrics)
        try await h.app.test(.router) { client in
            for _ in 0..<2 {
                let (status, body, _) = try await Self.post(client, token: viewer)
                #expect(status == .created, "\(status) \(body)")
            }
            var (status, body, _) = try await Self.post(client, token: viewer)
            #expect(status == .tooManyRequests && body.contains("maxViewersPerComposition"), "\(status) \(body)")
            // A second composition on the same stage: the per-address cap (3 in all) is next.
            let second = feeds.makeFeed(compositionId: "WhepCompos02", director: nil)
            defer { second.close() }
            try await store.putComposition(StoredComposition(composition: Composition(
                arn: "arn:aws:ivs:us-east-1:123456789012:composition/WhepCompos02", stageArn: ReplicationTests.stageA,
                state: .active, layout: .defaultGrid, destinations: [])))
            (status, body, _) = try await Self.post(client, path: "/whep/composition/WhepCompos02", token: viewer)
            #expect(status == .created, "\(status) \(body)")
            (status, body, _) = try await Self.post(client, path: "/whep/composition/WhepCompos02", token: viewer)
            #expect(status == .tooManyRequests && body.contains("from"), "\(status) \(body)")
            #expect(second.viewerCount == 1, "a refused viewer leaves no outlet behind")
            #expect(metrics().contains("stage_compositor_connections_refused{listener=\"whep\"} 2"))

            // The pipeline ends: its feed closes, its viewers' sessions end, no one can join.
            feed.close()
            (status, body, _) = try await Self.post(client, token: viewer)
            #expect(status == .notFound && body.contains("not running"), "\(status) \(body)")
            // Its two viewers' sessions end now (still connecting: no DTLS here), the other composition's stays.
            try await Self.waitUntil { metrics().contains("stage_compositor_connections_open{listener=\"whep\"} 1") }
        }
    }

    /// Polls (the transport ends sessions on its event loop) for up to 10 s: well before a
    /// connecting session's own timeout (20 s) would end it anyway.
    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            #expect(ContinuousClock.now < deadline, "timed out")
            if ContinuousClock.now >= deadline { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
