// UpdateParticipant in process (the control plane and stage runtime on the in-memory store):
// a publishing participant's attributes change as a token exchange would change them — its
// record, a TOKEN_EXCHANGED event with both tokens, and the live stage every composition reads.
import APIModels
import Foundation
import LiveStage
import Persistence
@testable import Server
import Testing

@Suite struct UpdateParticipantTests {
    static func call(_ h: ReplicationTests.Harness, _ json: String) async throws(APIError) -> Data {
        try await h.plane.handle(APIOperation.Route(operation: .updateParticipant), query: "", body: Data(json.utf8))
    }

    @Test("the record, the TOKEN_EXCHANGED event with both tokens, and the live stage's attributes change together")
    func attributesChangeEverywhere() async throws {
        let h = try await ReplicationTests.harness()
        defer { h.running.cancel() }
        let stage = ReplicationTests.stageA
        _ = try await h.publish("p1", on: stage)
        let body = #"{"stageArn":"\#(stage)","participantId":"p1","attributes":{"featured":"true","order":"2"}}"#
        let answer = try APIJSON.decode(UpdateParticipantResponse.self, from: try await Self.call(h, body))
        #expect(answer.participant?.attributes == ["featured": "true", "order": "2"])
        #expect(answer.participant?.state == .connected)

        let session = try #require(await h.runtime.activeSessionId(stageArn: stage))
        let stored = try await h.store.participant(stageArn: stage, sessionId: session, participantId: "p1")
        #expect(stored?.participant.attributes == ["featured": "true", "order": "2"])
        let events = try await h.store.participantEvents(stageArn: stage, sessionId: session, participantId: "p1")
        let exchanged = try #require(events.last)
        #expect(exchanged.name == .tokenExchanged)
        #expect(exchanged.previousToken == ExchangedParticipantToken(attributes: [:], userId: "p1"))
        #expect(exchanged.newToken == ExchangedParticipantToken(attributes: ["featured": "true", "order": "2"], userId: "p1"))
        let live = await h.runtime.hub.publishers(stageArn: stage).first { $0.identity.participantId == "p1" }
        #expect(live?.attributes == ["featured": "true", "order": "2"])
    }

    @Test("a participant that is not publishing is not found; a stage that does not exist is not found")
    func notConnected() async throws {
        let h = try await ReplicationTests.harness()
        defer { h.running.cancel() }
        let stage = ReplicationTests.stageA
        await #expect(throws: APIError.resourceNotFound("participantId: participant p9 is not connected to \(stage)")) {
            try await Self.call(h, #"{"stageArn":"\#(stage)","participantId":"p9","attributes":{}}"#)
        }
        let publication = try await h.publish("p1", on: stage)
        publication.ended(reason: "gone")
        // The leave goes through the runtime's inbox.
        var waited = 0
        while await h.runtime.activeSessionId(stageArn: stage) != nil, waited < 500 {
            try await Task.sleep(for: .milliseconds(20))
            waited += 1
        }
        await #expect(throws: APIError.resourceNotFound("participantId: participant p1 is not connected to \(stage)")) {
            try await Self.call(h, #"{"stageArn":"\#(stage)","participantId":"p1","attributes":{}}"#)
        }
        let missing = "arn:aws:ivs:us-east-1:123456789012:stage/NoSuchStage1"
        await #expect(throws: APIError.self) {
            try await Self.call(h, #"{"stageArn":"\#(missing)","participantId":"p1","attributes":{}}"#)
        }
    }
}
