// Stream-key look-ups, filed participant events, pruning by timestamp and public keys,
// against both implementations; and databases of the two earlier schemas migrating to v3.
import APIModels
import Foundation
import GRDB
import Persistence
import XCTest

final class LiveStoreTests: XCTestCase {
    static let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/CCCCCCCCCCCC"

    static func ingest(_ id: String, key: String) -> StoredIngestConfiguration {
        StoredIngestConfiguration(configuration: IngestConfiguration(
            name: "ingest-\(id)", arn: "arn:aws:ivs:us-east-1:123456789012:ingest-configuration/\(id)", ingestProtocol: .rtmp,
            streamKey: key, stageArn: stageArn, participantId: "P\(id)", state: .inactive, userId: "u", redundantIngest: false,
            redundantIngestCredentials: [RedundantIngestCredential(participantId: "R\(id)", streamKey: key + "-r")],
            attributes: ["a": "b"], tags: ["k": "v"]), insecureIngest: true)
    }

    static func publicKey(_ id: String, name: String) -> StoredPublicKey {
        StoredPublicKey(publicKey: PublicKey(arn: "arn:aws:ivs:us-east-1:123456789012:public-key/\(id)", name: name,
                                             publicKeyMaterial: "-----BEGIN PUBLIC KEY-----\nQQ==\n-----END PUBLIC KEY-----\n",
                                             fingerprint: "fp-\(id)", tags: [:]))
    }

    func t(_ iso: String) throws -> APITimestamp { try XCTUnwrap(APITimestamp(iso8601: iso)) }

    func exercise(_ store: some CompositionStore) async throws {
        let stageArn = Self.stageArn

        // Ingest configurations by stream key.
        let first = Self.ingest("IIIIIIIIIIII", key: "rt_123456789012_us-east-1_IIIIIIIIIIII_secretA")
        var second = Self.ingest("JJJJJJJJJJJJ", key: "rt_123456789012_us-east-1_JJJJJJJJJJJJ_secret_B")
        try await store.putIngestConfiguration(first)
        try await store.putIngestConfiguration(second)
        var found = try await store.ingestConfiguration(streamKey: first.configuration.streamKey)
        XCTAssertEqual(found, first)
        found = try await store.ingestConfiguration(streamKey: second.configuration.streamKey)
        XCTAssertEqual(found, second)
        found = try await store.ingestConfiguration(streamKey: "rt_123456789012_us-east-1_IIIIIIIIIIII_secreta")
        XCTAssertNil(found, "keys compare exactly")
        found = try await store.ingestConfiguration(streamKey: "")
        XCTAssertNil(found)
        // A replaced key no longer finds the configuration; the new one does.
        let oldKey = second.configuration.streamKey
        second.configuration.streamKey = "rt_123456789012_us-east-1_JJJJJJJJJJJJ_rotated"
        second.configuration.stageArn = ""
        try await store.putIngestConfiguration(second)
        found = try await store.ingestConfiguration(streamKey: oldKey)
        XCTAssertNil(found)
        found = try await store.ingestConfiguration(streamKey: second.configuration.streamKey)
        XCTAssertEqual(found, second)
        let all = try await store.ingestConfigurations()
        XCTAssertEqual(all, [first, second])
        let deleted = try await store.deleteIngestConfiguration(arn: first.arn)
        XCTAssertTrue(deleted)
        found = try await store.ingestConfiguration(streamKey: first.configuration.streamKey)
        XCTAssertNil(found)

        // Events filed by participant, listed in order of appending.
        let old = StoredStageSession(stageArn: stageArn, session: StageSession(
            sessionId: "st-AAAAAAAAAAAAA", startTime: try t("2024-05-01T10:00:00Z"), endTime: try t("2024-05-01T11:00:00Z")))
        let boundary = StoredStageSession(stageArn: stageArn, session: StageSession(
            sessionId: "st-BBBBBBBBBBBBB", startTime: try t("2024-05-01T11:00:00Z"), endTime: try t("2024-05-01T12:00:00Z")))
        let open = StoredStageSession(stageArn: stageArn, session: StageSession(
            sessionId: "st-CCCCCCCCCCCCC", startTime: try t("2024-05-01T09:00:00Z")))
        for session in [old, boundary, open] { try await store.putStageSession(session) }
        let names: [(EventName, String)] = [(.joined, "p1"), (.joined, "p2"), (.publishStarted, "p1"), (.subscribeStarted, "p2"),
                                            (.publishError, "p1"), (.left, "p2"), (.left, "p1")]
        for (index, (name, who)) in names.enumerated() {
            let event = ParticipantEvent(name: name, participantId: who, eventTime: APITimestamp(secondsSince1970: 1_714_557_600 + Int64(index)),
                                         errorCode: name == .publishError ? .resolutionExceeded : nil,
                                         remoteParticipantId: name == .subscribeStarted ? "p1" : nil)
            try await store.appendParticipantEvent(StoredParticipantEvent(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA",
                                                                          participantId: who, event: event))
        }
        let p1 = try await store.participantEvents(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA", participantId: "p1")
        XCTAssertEqual(p1.map(\.name), [.joined, .publishStarted, .publishError, .left])
        XCTAssertEqual(p1.map(\.eventTime?.secondsSince1970), [1_714_557_600, 1_714_557_602, 1_714_557_604, 1_714_557_606])
        XCTAssertEqual(p1[2].errorCode, .resolutionExceeded)
        let p2 = try await store.participantEvents(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA", participantId: "p2")
        XCTAssertEqual(p2.map(\.name), [.joined, .subscribeStarted, .left])
        XCTAssertEqual(p2[1].remoteParticipantId, "p1")
        // The filing participant, not the event's member, decides whose list it joins.
        try await store.appendParticipantEvent(StoredParticipantEvent(
            stageArn: stageArn, sessionId: "st-BBBBBBBBBBBBB", participantId: "p3",
            event: ParticipantEvent(name: .joined, participantId: nil, eventTime: try t("2024-05-01T11:00:01Z"))))
        let p3 = try await store.participantEvents(stageArn: stageArn, sessionId: "st-BBBBBBBBBBBBB", participantId: "p3")
        XCTAssertEqual(p3.map(\.name), [.joined])
        let otherSession = try await store.participantEvents(stageArn: stageArn, sessionId: "st-BBBBBBBBBBBBB", participantId: "p1")
        XCTAssertEqual(otherSession, [])
        try await store.putParticipant(StoredParticipant(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA", participant: Participant(
            participantId: "p1", userId: "u1", state: .disconnected, firstJoinTime: try t("2024-05-01T10:00:00Z"), attributes: nil,
            published: true, protocol: .whip)))

        // Pruning by timestamp: strictly before; open sessions stay whatever their age.
        try await store.pruneStageSessions(endedBefore: try t("2024-05-01T12:00:00Z"))
        let left = try await store.stageSessions(stageArn: stageArn)
        XCTAssertEqual(left.map(\.session.sessionId), ["st-BBBBBBBBBBBBB", "st-CCCCCCCCCCCCC"])
        let prunedEvents = try await store.participantEvents(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA", participantId: "p1")
        XCTAssertEqual(prunedEvents, [])
        let prunedPeople = try await store.participants(stageArn: stageArn, sessionId: "st-AAAAAAAAAAAAA")
        XCTAssertEqual(prunedPeople, [])
        try await store.pruneStageSessions(endedBefore: try t("2030-01-01T00:00:00Z"))
        let stillOpen = try await store.stageSessions(stageArn: stageArn)
        XCTAssertEqual(stillOpen, [open])
        let keptOpen = try await store.openStageSessions()
        XCTAssertEqual(keptOpen, [open])

        // Public keys.
        let keyB = Self.publicKey("bbbbbbbb-0000-4000-8000-000000000000", name: "b")
        var keyA = Self.publicKey("aaaaaaaa-0000-4000-8000-000000000000", name: "a")
        try await store.putPublicKey(keyB)
        try await store.putPublicKey(keyA)
        var keys = try await store.publicKeys()
        XCTAssertEqual(keys, [keyA, keyB])
        keyA.publicKey.tags = ["team": "video"]
        try await store.putPublicKey(keyA)
        let fetched = try await store.publicKey(arn: keyA.arn)
        XCTAssertEqual(fetched, keyA)
        let missing = try await store.publicKey(arn: "arn:aws:ivs:us-east-1:123456789012:public-key/none")
        XCTAssertNil(missing)
        let removed = try await store.deletePublicKey(arn: keyB.arn)
        XCTAssertTrue(removed)
        let removedAgain = try await store.deletePublicKey(arn: keyB.arn)
        XCTAssertFalse(removedAgain)
        keys = try await store.publicKeys()
        XCTAssertEqual(keys, [keyA])

        // Revocations: the later expiry wins; pruning forgets only what expired.
        let revoked = "\(Self.stageArn)/p1", other = "\(Self.stageArn)/p2"
        let none = try await store.revocation(key: revoked)
        XCTAssertNil(none)
        try await store.putRevocation(key: revoked, until: 2_000)
        try await store.putRevocation(key: revoked, until: 1_500)
        try await store.putRevocation(key: other, until: 1_000)
        let kept = try await store.revocation(key: revoked)
        XCTAssertEqual(kept, 2_000)
        try await store.pruneRevocations(expiredBefore: 1_001)
        let pruned = try await store.revocation(key: other), stays = try await store.revocation(key: revoked)
        XCTAssertNil(pruned)
        XCTAssertEqual(stays, 2_000)

        // Fleet call nonces: taken once while their time lasts, forgotten after.
        let nonce = "00112233445566778899aabbccddeeff"
        let taken = try await store.claimFleetNonce(nonce, until: 10_000, now: 5_000)
        let replay = try await store.claimFleetNonce(nonce, until: 10_000, now: 9_999)
        let another = try await store.claimFleetNonce("ffeeddccbbaa99887766554433221100", until: 10_000, now: 9_999)
        let afterwards = try await store.claimFleetNonce(nonce, until: 20_000, now: 10_001)
        XCTAssertEqual([taken, replay, another, afterwards], [true, false, true, true])
    }

    func testInMemory() async throws { try await exercise(InMemoryCompositionStore()) }

    func testSQLite() async throws { try await exercise(try SQLiteCompositionStore()) }

    func testPostgreSQL() async throws { try await PostgresStores.with { store in try await exercise(store) } }

    func testSQLiteKeepsEverythingAcrossReopening() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("live-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ingest = Self.ingest("IIIIIIIIIIII", key: "rt_1_r_IIIIIIIIIIII_s")
        let key = Self.publicKey("k1", name: "k")
        do {
            let store = try SQLiteCompositionStore(path: path)
            try await store.putIngestConfiguration(ingest)
            try await store.putPublicKey(key)
            try await store.putRevocation(key: "\(Self.stageArn)/p1", until: 4_000_000_000)
        }
        let reopened = try SQLiteCompositionStore(path: path)
        let revocation = try await reopened.revocation(key: "\(Self.stageArn)/p1")
        XCTAssertEqual(revocation, 4_000_000_000)
        let byKey = try await reopened.ingestConfiguration(streamKey: "rt_1_r_IIIIIIIIIIII_s")
        XCTAssertEqual(byKey, ingest)
        let keys = try await reopened.publicKeys()
        XCTAssertEqual(keys, [key])
    }

    // MARK: Migrations

    /// The v1 schema as the first release shipped it.
    static func createVersion1(_ db: Database) throws {
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
    }

    /// The v2 schema (live stages) as the release before stream-key look-ups shipped it.
    static func createVersion2(_ db: Database) throws {
        try db.create(table: "ingestConfiguration") { t in
            t.primaryKey("arn", .text)
            t.column("document", .text).notNull()
        }
        try db.create(table: "stageSession") { t in
            t.column("stageArn", .text).notNull()
            t.column("sessionId", .text).notNull()
            t.column("startTime", .integer).notNull()
            t.column("endTime", .integer)
            t.column("document", .text).notNull()
            t.primaryKey(["stageArn", "sessionId"])
        }
        try db.create(table: "participant") { t in
            t.column("stageArn", .text).notNull()
            t.column("sessionId", .text).notNull()
            t.column("participantId", .text).notNull()
            t.column("joinOrder", .integer).notNull()
            t.column("document", .text).notNull()
            t.primaryKey(["stageArn", "sessionId", "participantId"])
        }
        try db.create(table: "participantEvent") { t in
            t.autoIncrementedPrimaryKey("sequence")
            t.column("stageArn", .text).notNull()
            t.column("sessionId", .text).notNull()
            t.column("participantId", .text).notNull()
            t.column("document", .text).notNull()
        }
        try db.create(index: "participantEventBySession", on: "participantEvent", columns: ["stageArn", "sessionId", "participantId"])
    }

    func temporaryDatabase(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).sqlite").path
    }

    func appliedMigrations(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") }
    }

    /// A v1-only database file (the first release) opens, migrates through v2 and v3, keeps
    /// its rows and serves every live-stage call.
    func testMigratesAVersion1OnlyDatabase() async throws {
        let path = temporaryDatabase("v1")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let stageArn = Self.stageArn
        do {
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try Self.createVersion1(db)
                try db.execute(sql: "INSERT INTO stage (arn, document) VALUES (?, ?)", arguments: [
                    stageArn, #"{"sourcePath":"/srv/stage","stage":{"arn":"\#(stageArn)","name":"old","tags":{}}}"#])
            }
            try migrator.migrate(try DatabaseQueue(path: path))
        }
        XCTAssertEqual(try appliedMigrations(path), ["v1"])
        let store = try SQLiteCompositionStore(path: path)
        XCTAssertEqual(try appliedMigrations(path), ["v1", "v2-live-stages", "v3-stream-keys-public-keys", "v4-participant-revocations",
                                                       "v5-session-pages"])
        let stages = try await store.stages()
        XCTAssertEqual(stages.map(\.sourcePath), ["/srv/stage"])
        try await exercise(store)
    }

    /// A v2 database with ingest configurations gets their stream keys indexed.
    func testMigratesAVersion2DatabaseAndIndexesItsStreamKeys() async throws {
        let path = temporaryDatabase("v2")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let stored = Self.ingest("IIIIIIIIIIII", key: "rt_123456789012_us-east-1_IIIIIIIIIIII_before_v3")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let document = String(decoding: try encoder.encode(stored), as: UTF8.self)
        do {
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1", migrate: Self.createVersion1)
            migrator.registerMigration("v2-live-stages") { db in
                try Self.createVersion2(db)
                try db.execute(sql: "INSERT INTO ingestConfiguration (arn, document) VALUES (?, ?)", arguments: [stored.arn, document])
                // A row that no longer decodes must not stop the upgrade.
                try db.execute(sql: "INSERT INTO ingestConfiguration (arn, document) VALUES (?, ?)", arguments: ["broken", "{"])
            }
            try migrator.migrate(try DatabaseQueue(path: path))
        }
        let store = try SQLiteCompositionStore(path: path)
        let found = try await store.ingestConfiguration(streamKey: stored.configuration.streamKey)
        XCTAssertEqual(found, stored)
        let indexes = try await DatabaseQueue(path: path).read { db in try db.indexes(on: "ingestConfiguration").map(\.name) }
        XCTAssertTrue(indexes.contains("ingestConfigurationByStreamKey"), "\(indexes)")
        // The unreadable row keeps a NULL key and reports itself when read.
        do {
            _ = try await store.ingestConfiguration(arn: "broken")
            XCTFail("an unreadable document must be an error")
        } catch {
            XCTAssertTrue(error.message.contains("cannot be read"), error.message)
        }
        // Opening an up-to-date database again applies nothing.
        _ = try SQLiteCompositionStore(path: path)
        XCTAssertEqual(try appliedMigrations(path), ["v1", "v2-live-stages", "v3-stream-keys-public-keys", "v4-participant-revocations",
                                                       "v5-session-pages"])
    }
}
