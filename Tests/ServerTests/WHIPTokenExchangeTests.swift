// WHIP token exchange in process (the endpoint, the stage runtime and a real media transport
// on the in-memory store): a key-pair token is exchanged on the session resource as IVS's
// SDKs exchange one; IVS's rules refuse the rest.
import APIModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ParticipantTokens
@testable import Server
import Testing

@Suite struct WHIPTokenExchangeTests {
    static let keyArn = "arn:aws:ivs:us-east-1:123456789012:public-key/KeyPair00001"
    static let whipURL = "http://127.0.0.1/whip/ReplicaStgA1"

    /// A token signed by the imported key pair, as a customer's backend makes one.
    static func keyPairToken(_ key: TokenSigningKey, participantId: String, attributes: [String: String], expiresIn: Int64 = 3600,
                             whipURL: String = whipURL, capabilities: Set<ParticipantCapability> = [.publish, .subscribe]) async throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        let claims = ParticipantTokenClaims(participantId: participantId, userId: "user-\(participantId)", stageArn: ReplicationTests.stageA,
                                            stageId: "ReplicaStgA1", eventsURL: "wss://events.example/", whipURL: whipURL,
                                            capabilities: capabilities, attributes: attributes, issuedAt: now, expiresAt: now + expiresIn)
        return try await TokenIssuer(key: key).issue(claims)
    }

    static func patch(_ client: some TestClientProtocol, _ session: String, bearer: String, body: String) async throws
        -> (HTTPResponse.Status, String) {
        try await client.execute(uri: session, method: .patch, headers: [.authorization: "Bearer \(bearer)", .contentType: "application/jwt"],
                                 body: ByteBuffer(string: body)) { response in (response.status, String(buffer: response.body)) }
    }

    @Test("a key-pair token is exchanged (204): new attributes on the live stage and the record, TOKEN_EXCHANGED with both tokens")
    func exchange() async throws {
        let key = TokenSigningKey(arn: Self.keyArn)
        let h = try await WHIPEndpointTests.harness(imported: [Self.keyArn: key.publicKeyPEM])
        defer { h.transport.cancel(); h.base.running.cancel() }
        let first = try await Self.keyPairToken(key, participantId: "KeyPairUser1", attributes: ["order": "1"])
        let second = try await Self.keyPairToken(key, participantId: "KeyPairUser1", attributes: ["featured": "true"], expiresIn: 7200,
                                                 capabilities: [.publish])
        try await h.app.test(.router) { client in
            let (status, _, headers) = try await WHIPEndpointTests.post(client, token: first)
            #expect(status == .created)
            let session = try #require(headers[.location])
            // Another participant's session resource, a token of another jti, a changed whip_url: refused.
            let stranger = try await Self.keyPairToken(key, participantId: "KeyPairUser2", attributes: [:])
            #expect(try await Self.patch(client, session, bearer: stranger, body: second).0 == .notFound)
            let otherJti = try await Self.keyPairToken(key, participantId: "KeyPairUser2", attributes: [:])
            let (jtiStatus, jtiBody) = try await Self.patch(client, session, bearer: first, body: otherJti)
            #expect(jtiStatus == .badRequest && jtiBody.contains("its jti must equal the current token's"), "\(jtiBody)")
            let moved = try await Self.keyPairToken(key, participantId: "KeyPairUser1", attributes: [:], whipURL: "http://elsewhere/whip")
            let (movedStatus, movedBody) = try await Self.patch(client, session, bearer: first, body: moved)
            #expect(movedStatus == .badRequest && movedBody.contains("its whip_url must equal"), "\(movedBody)")
            let watcher = try await Self.keyPairToken(key, participantId: "KeyPairUser1", attributes: [:], capabilities: [.subscribe])
            #expect(try await Self.patch(client, session, bearer: first, body: watcher).0 == .forbidden)
            #expect(try await Self.patch(client, session, bearer: first, body: "x.y.z").0 == .badRequest)

            let (exchanged, text) = try await Self.patch(client, session, bearer: first, body: second)
            #expect(exchanged == .noContent, "\(text)")
        }
        let stage = ReplicationTests.stageA
        let live = await h.base.runtime.hub.publishers(stageArn: stage).first { $0.identity.participantId == "KeyPairUser1" }
        #expect(live?.attributes == ["featured": "true"])
        let sessionId = try #require(await h.base.runtime.activeSessionId(stageArn: stage))
        let record = try await h.base.store.participant(stageArn: stage, sessionId: sessionId, participantId: "KeyPairUser1")
        #expect(record?.participant.attributes == ["featured": "true"])
        let events = try await h.base.store.participantEvents(stageArn: stage, sessionId: sessionId, participantId: "KeyPairUser1")
        let event = try #require(events.first { $0.name == .tokenExchanged })
        #expect(event.previousToken?.attributes == ["order": "1"] && event.previousToken?.capabilities == [.publish, .subscribe])
        #expect(event.newToken?.attributes == ["featured": "true"] && event.newToken?.capabilities == [.publish])
        #expect(event.newToken?.userId == "user-KeyPairUser1")
        let expiries = [event.previousToken?.expirationTime?.secondsSince1970, event.newToken?.expirationTime?.secondsSince1970].compactMap { $0 }
        #expect(expiries.count == 2 && expiries[1] - expiries[0] >= 3_590, "\(expiries)")
        #expect(events.filter { $0.name == .tokenExchanged }.count == 1, "refused exchanges leave no event")
    }

    @Test("a CreateParticipantToken token cannot be exchanged (403), nor exchanged for")
    func serviceTokensAreNotExchanged() async throws {
        let key = TokenSigningKey(arn: Self.keyArn)
        let h = try await WHIPEndpointTests.harness(imported: [Self.keyArn: key.publicKeyPEM])
        defer { h.transport.cancel(); h.base.running.cancel() }
        let service = try await h.token("svc")
        let keyPair = try await Self.keyPairToken(key, participantId: service.participantId, attributes: ["featured": "true"])
        try await h.app.test(.router) { client in
            let (status, _, headers) = try await WHIPEndpointTests.post(client, token: service.token)
            #expect(status == .created)
            let session = try #require(headers[.location])
            let (refused, body) = try await Self.patch(client, session, bearer: service.token, body: keyPair)
            #expect(refused == .forbidden && body.contains("CreateParticipantToken"), "\(body)")
        }
        let stage = ReplicationTests.stageA
        let live = await h.base.runtime.hub.publishers(stageArn: stage).first { $0.identity.participantId == service.participantId }
        #expect(live?.attributes == [:])
    }
}
