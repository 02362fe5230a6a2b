// The live-stage part of the store contract (ingest configurations, sessions, participants,
// events), against both implementations, and the v1 → v2 migration.
import APIModels
import Foundation
import GRDB
import Persistence
import XCTest

final class StageSessionStoreTests: XCTestCase {
    let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/CCCCCCCCCCCC"

    func t(_ seconds: Int64) -> APITimestamp { APITimestamp(secondsSince1970: seconds) }

    func participant(_ id: String, state: ParticipantState, joined: Int64) -> Participant {
        Participant(participantId: id, userId: "user-\(id)", state: state, firstJoinTime: t(joined), attributes: [:],
                    published: true, protocol: .rtmps)
    }

    func exercise(_ store: some CompositionStore) async throws {
        // Ingest configurations.
        let ingest = StoredIngestConfiguration(configuration: IngestConfiguration(
            arn: "arn:aws:ivs:us-east-1:123456789012:ingest-configuration/IIIIIIIIIIII", ingestProtocol: .rtmps,
            streamKey: "rt_123456789012_us-east-1_IIIIIIIIIIII_secret", stageArn: stageArn, participantId: "PPPPPPPPPPPP",
            state: .inactive, userId: "u", attributes: ["a": "b"], tags: [:]), insecureIngest: false)
        try await store.putIngestConfiguration(ingest)
        let fetched = try await store.ingestConfiguration(arn: ingest.arn)
        XCTAssertEqual(fetched, ingest)
        let listed = try await store.ingestConfigurations()
        XCTAssertEqual(listed, [ingest])
        let deleted = try await store.deleteIngestConfiguration(arn: ingest.arn)
        XCTAssertTrue(deleted)
        let gone = try await store.ingestConfiguration(arn: ingest.arn)
        XCTAssertNil(gone)

        // Sessions: newest first; open ones found for crash recovery.
        let old = StoredStageSession(stageArn: stageArn, session: StageSession(sessionId: "st-AAAAAAAAAAAAA", startTime: t(100), endTime: t(200)))
        var current = StoredStageSession(stageArn: stageArn, session: StageSession(sessionId: "st-BBBBBBBBBBBBB", startTime: t(300)))
        try await store.putStageSession(old)
        try await store.putStageSession(current)
        let sessions = try await store.stageSessions(stageArn: stageArn)
        XCTAssertEqual(sessions.map(\.session.sessionId), ["st-BBBBBBBBBBBBB", "st-AAAAAAAAAAAAA"])
        let open = try await store.openStageSessions()
        XCTAssertEqual(open, [current])
        let single = try await store.stageSession(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA")
        XCTAssertEqual(single, old)
        let elsewhere = try await store.stageSessions(stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/other")
        XCTAssertEqual(elsewhere, [])

        // Participants keep their join order across updates.
        let session = "st-BBBBBBBBBBBBB"
        try await store.putParticipant(StoredParticipant(stageArn: stageArn, sessionId: session, participant: participant("b", state: .connected, joined: 301)))
        try await store.putParticipant(StoredParticipant(stageArn: stageArn, sessionId: session, participant: participant("a", state: .connected, joined: 302)))
        try await store.putParticipant(StoredParticipant(stageArn: stageArn, sessionId: session, participant: participant("b", state: .disconnected, joined: 301)))
        let people = try await store.participants(stageArn: stageArn, sessionId: session)
        XCTAssertEqual(people.map(\.participant.participantId), ["b", "a"])
        XCTAssertEqual(people.first?.participant.state, .disconnected)
        let one = try await store.participant(stageArn: stageArn, sessionId: session, participantId: "a")
        XCTAssertEqual(one?.participant.userId, "user-a")

        // Events in order of appending, per participant.
        for (name, who) in [(ParticipantEventName.joined, "a"), (.joined, "b"), (.publishStarted, "a"), (.publishError, "a"), (.left, "a")] {
            try await store.appendParticipantEvent(stageArn: stageArn, sessionId: session, ParticipantEvent(
                name: name, participantId: who, eventTime: t(310), errorCode: name == .publishError ? .bitrateExceeded : nil))
        }
        let events = try await store.participantEvents(stageArn: stageArn, sessionId: session, participantId: "a")
        XCTAssertEqual(events.map(\.name), [.joined, .publishStarted, .publishError, .left])
        XCTAssertEqual(events[2].errorCode, .bitrateExceeded)

        // Pruning forgets ended sessions with their participants and events, keeps the rest.
        try await store.appendParticipantEvent(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA",
                                               ParticipantEvent(name: .joined, participantId: "z", eventTime: t(150)))
        try await store.pruneStageSessions(endedBefore: 250)
        let afterPrune = try await store.stageSessions(stageArn: stageArn)
        XCTAssertEqual(afterPrune.map(\.session.sessionId), ["st-BBBBBBBBBBBBB"])
        let prunedEvents = try await store.participantEvents(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA", participantId: "z")
        XCTAssertEqual(prunedEvents, [])
        current.session.endTime = t(400)
        try await store.putStageSession(current)
        let stillOpen = try await store.openStageSessions()
        XCTAssertEqual(stillOpen, [])
    }

    func testInMemory() async throws { try await exercise(InMemoryCompositionStore()) }

    func testSQLite() async throws { try await exercise(try SQLiteCompositionStore()) }

    func testPostgreSQL() async throws { try await PostgresStores.with { store in try await exercise(store) } }

    /// A database written by the previous release (schema v1 only) opens, migrates, and keeps its rows.
    func testMigratesAVersion1Database() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("v1-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let stageArn = self.stageArn
        do {
            let queue = try DatabaseQueue(path: path)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                for table in ["encoderConfiguration", "storageConfiguration", "stage"] {
                    try db.create(table: table) { t in
                        t.primaryKey("arn", .text)
                        t.column("document", .text).notNull()
                    }
                }
                try db.create(table: "composition") { t in
                    t.primaryKey("arn", .text)
                    t.column("stageArn", .text).notNull().indexed()
                    t.column("state", .text).notNull()
                    t.column("idempotencyToken", .text).indexed()
                    t.column("document", .text).notNull()
                }
                try db.execute(sql: "INSERT INTO stage (arn, document) VALUES (?, ?)", arguments: [
                    stageArn, #"{"sourcePath":"","stage":{"arn":"\#(stageArn)","name":"old","tags":{}}}"#])
            }
            try migrator.migrate(queue)
        }
        let store = try SQLiteCompositionStore(path: path)
        let stages = try await store.stages()
        XCTAssertEqual(stages.map(\.stage.name), ["old"])
        try await exercise(store)
    }
}
