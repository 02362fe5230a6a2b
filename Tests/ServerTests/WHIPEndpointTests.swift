// The WHIP resource's HTTP rules in process: the endpoint, the stage runtime and the token
// authority on the in-memory store, the media transport listening on loopback (no media is
// sent). What a refused publisher hears, in the order the checks run, and the stage's events.
// These checks ran through a daemon process and aiortc before (whip_tests.py).
import APIModels
import EventSinks
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LiveStage
import Logging
import Prometheus
@testable import Server
import TestSupport
import Testing

@Suite struct WHIPEndpointTests {
    struct Harness {
        let base: ReplicationTests.Harness
        let tokens: TokenAuthority
        let app: Application<RouterResponder<ServerRequestContext>>
        let transport: Task<Void, any Error>

        func token(_ user: String, capabilities: [ParticipantTokenCapability]? = nil, issuedAt: Date = Date(),
                   minutes: Int? = nil) async throws -> (participantId: String, token: String) {
            let issued = try await tokens.issue(stageArn: ReplicationTests.stageA, whipURL: "http://127.0.0.1/whip/ReplicaStgA1",
                                                duration: minutes, userId: user, attributes: nil, capabilities: capabilities, now: issuedAt)
            return (try #require(issued.participantId), try #require(issued.token))
        }

        func publishErrors() -> [(String, String)] {
            base.events.events.filter { $0.detail.eventName == "Participant Publish Error" }
                .map { ($0.detail.participantId ?? "", $0.detail.errorCode ?? "") }
        }
    }

    /// `imported`: public keys ImportPublicKey would have stored (ARN → PEM).
    static func harness(imported: [String: String] = [:]) async throws -> Harness {
        let base = try await ReplicationTests.harness()
        let configuration = ServerConfiguration()
        let tokens = try await TokenAuthority(configuration: configuration, persistent: false) { imported }
        var whip = configuration
        whip.ingest.whip.host = "127.0.0.1"
        whip.ingest.whip.port = 0
        let registry = PrometheusCollectorRegistry()
        let metrics = ServerMetrics(factory: PrometheusMetricsFactory(registry: registry))
        let server = try makeWebRTCIngestServer(configuration: whip, hub: await base.runtime.hub, metrics: metrics,
                                                logger: Logger(label: "whip-endpoint"))
        let transport = Task { try await server.run() }
        let deadline = ContinuousClock.now + .seconds(30)
        while server.port == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let endpoint = WHIPEndpoint(configuration: configuration, store: base.store, runtime: base.runtime, media: server, tokens: tokens,
                                    wallClock: Date.init, logger: Logger(label: "whip-endpoint"))
        let routes = APIRoutes(maxBodyBytes: 4096, authenticator: UnauthenticatedRequestGuard(allowedHosts: ["127.0.0.1"],
                                                                                              logger: Logger(label: "whip-endpoint")),
                               registry: registry, metrics: metrics, logger: Logger(label: "whip-endpoint"),
                               operation: { _, _, _, _ throws(APIError) in Data("{}".utf8) },
                               whip: { request, client in await endpoint.respond(to: request, clientAddress: client) })
        return Harness(base: base, tokens: tokens, app: Application(router: routes.buildRouter()), transport: transport)
    }

    static let path = "/whip/ReplicaStgA1"
    static let offer = Offers.h264Opus()
    /// The same offer without its video section (and bundle).
    static let audioOnly = Offers.h264Opus().replacingOccurrences(of: "a=group:BUNDLE 0 1", with: "a=group:BUNDLE 0")
        .components(separatedBy: "m=video")[0]

    static func post(_ client: some TestClientProtocol, token: String?, body: String = offer,
                     contentType: String = "application/sdp") async throws -> (HTTPResponse.Status, String, HTTPFields) {
        var headers: HTTPFields = [.contentType: contentType]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body)) { response in
            (response.status, String(buffer: response.body), response.headers)
        }
    }

    @Test("POST: the token first (401, 403), then the offer (415, 400 naming what is missing), then the stage (409); refusals tell the stage")
    func publishRefusals() async throws {
        let h = try await Self.harness()
        defer { h.transport.cancel(); h.base.running.cancel() }
        let good = try await h.token("good")
        let viewer = try await h.token("viewer", capabilities: [.subscribe])
        let noVideo = try await h.token("no-video")
        let expired = try await h.token("late", issuedAt: Date(timeIntervalSinceNow: -7200), minutes: 1)
        try await h.app.test(.router) { client in
            try await client.execute(uri: Self.path, method: .options) { response in
                #expect(response.status == .noContent)
                #expect(response.headers[.accessControlAllowOrigin] == "*")
                #expect(response.headers[.accessControlAllowMethods]?.contains("POST") == true)
            }
            try await client.execute(uri: Self.path, method: .patch) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "POST, OPTIONS")
            }
            var (status, body, _) = try await Self.post(client, token: nil)
            #expect(status == .unauthorized && body.contains("Bearer"), "\(status) \(body)")
            (status, body, _) = try await Self.post(client, token: String(good.token.dropLast(8)) + "AAAAAAAA")
            #expect(status == .unauthorized && body.contains("signature"), "\(status) \(body)")
            (status, body, _) = try await Self.post(client, token: expired.token)
            #expect(status == .unauthorized && body.contains("expired"), "\(status) \(body)")
            (status, body, _) = try await Self.post(client, token: viewer.token)
            #expect(status == .forbidden && body.contains("PUBLISH"), "\(status) \(body)")
            (status, body, _) = try await Self.post(client, token: good.token, contentType: "text/plain")
            #expect(status == .unsupportedMediaType, "\(status) \(body)")
            (status, body, _) = try await Self.post(client, token: noVideo.token, body: Self.audioOnly)
            #expect(status == .badRequest && body.contains("video") && body.contains("H.264"), "\(status) \(body)")
            let headers: HTTPFields
            (status, body, headers) = try await Self.post(client, token: good.token)
            #expect(status == .created && body.contains("a=ice-ufrag"), "\(status) \(body)")
            #expect(headers[.location]?.hasPrefix(Self.path + "/") == true)
            #expect(headers[.contentType] == "application/sdp")
            (status, body, _) = try await Self.post(client, token: good.token)
            #expect(status == .conflict && body.contains("already publishing"), "\(status) \(body)")
        }
        // The genuine tokens' refusals reached the stage (through the runtime's inbox).
        let wanted = [(viewer.participantId, "INSUFFICIENT_CAPABILITIES"), (noVideo.participantId, "INVALID_VIDEO_CODEC"),
                      (good.participantId, "REUSE_OF_STREAM_KEY"), (expired.participantId, "INVALID_INPUT")]
        let deadline = ContinuousClock.now + .seconds(30)
        func missing() -> [(String, String)] {
            let seen = h.publishErrors()
            return wanted.filter { want in !seen.contains { $0 == want } }
        }
        while !missing().isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(missing().isEmpty, "missing Publish Error events: \(missing()); seen \(h.publishErrors())")
    }

    @Test("DisconnectParticipant revokes the token (403 until it expires); DELETE takes only the session's own token")
    func revocationAndDelete() async throws {
        let h = try await Self.harness()
        defer { h.transport.cancel(); h.base.running.cancel() }
        let good = try await h.token("good"), other = try await h.token("other")
        try await h.app.test(.router) { client in
            let (status, _, headers) = try await Self.post(client, token: good.token)
            #expect(status == .created)
            let session = try #require(headers[.location])
            // Another participant's token, no token, a garbage token, a token of another stage: the session stays.
            let elsewhere = try await h.tokens.issue(stageArn: ReplicationTests.stageB, whipURL: "", duration: nil, userId: "good",
                                                     attributes: nil, capabilities: nil, now: Date()).token
            for (token, expected) in [(other.token, HTTPResponse.Status.notFound), (nil, .unauthorized), ("x.y.z", .unauthorized),
                                      (elsewhere, .unauthorized)] {
                var fields = HTTPFields()
                if let token { fields[.authorization] = "Bearer \(token)" }
                try await client.execute(uri: session, method: .delete, headers: fields) { response in
                    #expect(response.status == expected, "\(String(describing: token?.prefix(8)))")
                }
            }
            try await client.execute(uri: session, method: .patch, headers: [.contentType: "application/trickle-ice-sdpfrag"],
                                     body: ByteBuffer(string: "a=end-of-candidates\r\n")) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "DELETE, OPTIONS")
            }
            try await client.execute(uri: session, method: .delete, headers: [.authorization: "Bearer \(good.token)"]) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: session, method: .delete, headers: [.authorization: "Bearer \(good.token)"]) { response in
                #expect(response.status == .notFound, "a second DELETE")
            }
            try await h.base.wait(good.participantId, on: ReplicationTests.stageA, to: .disconnected)
            // Publishing again is allowed after a DELETE; DisconnectParticipant revokes.
            var (again, _, _) = try await Self.post(client, token: good.token)
            #expect(again == .created)
            try await h.base.wait(good.participantId, on: ReplicationTests.stageA, to: .connected)
            #expect(await h.base.runtime.disconnect(stageArn: ReplicationTests.stageA, participantId: good.participantId,
                                                    reason: "test", revoke: true))
            try await h.base.wait(good.participantId, on: ReplicationTests.stageA, to: .disconnected)
            let body: String
            (again, body, _) = try await Self.post(client, token: good.token)
            #expect(again == .forbidden && body.contains("DisconnectParticipant"), "\(again) \(body)")
        }
    }

    @Test("RevokeConnectionToken disconnects whoever connected with the token, and refuses it from then on; other tokens still publish")
    func revokeConnectionToken() async throws {
        let h = try await Self.harness()
        defer { h.transport.cancel(); h.base.running.cancel() }
        let revoked = try await h.token("revoked"), kept = try await h.token("kept")
        try await h.app.test(.router) { client in
            for participant in [revoked, kept] {
                let (status, _, _) = try await Self.post(client, token: participant.token)
                #expect(status == .created)
                try await h.base.wait(participant.participantId, on: ReplicationTests.stageA, to: .connected)
            }
            try await h.base.runtime.revoke(tokenId: revoked.participantId, reason: "RevokeConnectionToken")
            try await h.base.wait(revoked.participantId, on: ReplicationTests.stageA, to: .disconnected)
            let (again, body, _) = try await Self.post(client, token: revoked.token)
            #expect(again == .forbidden && body.contains("RevokeConnectionToken"), "\(again) \(body)")
            #expect(await h.base.runtime.hub.publishers(stageArn: ReplicationTests.stageA).map(\.identity.participantId)
                == [kept.participantId], "the other participant stays")
            // Unknown token IDs are fine (the model has no ResourceNotFoundException here).
            try await h.base.runtime.revoke(tokenId: "never-issued_1", reason: "RevokeConnectionToken")
        }
    }
}
