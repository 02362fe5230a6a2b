// The daemon's store: one SQLite file (GRDB) under the state directory. Each resource is a
// row keyed by ARN holding its JSON document, plus the columns queries need. A committed
// write survives kill -9; schema changes go through numbered migrations.
public import APIModels
import Foundation
import GRDB

public final class SQLiteCompositionStore: DocumentRowStore {
    private let database: DatabaseQueue

    /// Opens (creating if needed) the database at `path` and migrates it to the latest schema.
    public init(path: String) throws(PersistenceError) {
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            database = try DatabaseQueue(path: path, configuration: configuration)
            try Self.migrator.migrate(database)
        } catch {
            throw PersistenceError("cannot open \(path): \(error)")
        }
    }

    /// A private in-memory database (tests of the SQL itself).
    public init() throws(PersistenceError) {
        do {
            database = try DatabaseQueue()
            try Self.migrator.migrate(database)
        } catch {
            throw PersistenceError("cannot open an in-memory database: \(error)")
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            for table in [Table.encoder, .storage] {
                try db.create(table: table.rawValue) { t in
                    t.primaryKey("arn", .text)
                    t.column("document", .text).notNull()
                }
            }
            try db.create(table: Table.stage.rawValue) { t in
                t.primaryKey("arn", .text)
                t.column("document", .text).notNull()
            }
            try db.create(table: Table.composition.rawValue) { t in
                t.primaryKey("arn", .text)
                t.column("stageArn", .text).notNull().indexed()
                t.column("state", .text).notNull()
                t.column("idempotencyToken", .text).indexed()
                t.column("document", .text).notNull()
            }
        }
        migrator.registerMigration("v2-live-stages") { db in
            try db.create(table: Table.ingest.rawValue) { t in
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
        migrator.registerMigration("v3-stream-keys-public-keys") { db in
            // RTMP publishers are admitted by stream key: give it an indexed column, filled
            // in for the configurations v2 stored (a document that cannot be read keeps NULL,
            // and reading it by ARN reports the problem).
            try db.alter(table: Table.ingest.rawValue) { t in t.add(column: "streamKey", .text) }
            let rows = try Row.fetchAll(db, sql: "SELECT arn, document FROM \(Table.ingest.rawValue)")
            for row in rows {
                let arn: String = row["arn"]
                let document: String = row["document"]
                guard let stored = try? decode(StoredIngestConfiguration.self, from: document) else { continue }
                try db.execute(sql: "UPDATE \(Table.ingest.rawValue) SET streamKey = ? WHERE arn = ?",
                               arguments: [stored.configuration.streamKey, arn])
            }
            try db.create(index: "ingestConfigurationByStreamKey", on: Table.ingest.rawValue, columns: ["streamKey"])
            try db.create(table: Table.publicKey.rawValue) { t in
                t.primaryKey("arn", .text)
                t.column("document", .text).notNull()
            }
        }
        migrator.registerMigration("v4-participant-revocations") { db in
            try db.create(table: "participantRevocation") { t in
                t.primaryKey("key", .text)
                t.column("expiresAt", .integer).notNull()
            }
            try db.create(table: "fleetNonce") { t in
                t.primaryKey("nonce", .text)
                t.column("expiresAt", .integer).notNull()
            }
        }
        migrator.registerMigration("v5-session-pages") { db in
            // ListStageSessions pages newest first, then by session ID; ListParticipants in
            // join order. (ListParticipantEvents' pages follow participantEventBySession, whose
            // entries end with the rowid, the event's sequence.)
            try db.execute(sql: "CREATE INDEX stageSessionNewestFirst ON stageSession (stageArn, startTime DESC, sessionId)")
            try db.create(index: "participantByJoinOrder", on: "participant", columns: ["stageArn", "sessionId", "joinOrder"])
        }
        return migrator
    }

    enum Table: String {
        case encoder = "encoderConfiguration"
        case storage = "storageConfiguration"
        case stage
        case composition
        case ingest = "ingestConfiguration"
        case publicKey
    }

    // MARK: Generic rows

    static func table(_ table: DocumentTable) -> Table {
        switch table {
        case .encoderConfiguration: .encoder
        case .storageConfiguration: .storage
        case .stage: .stage
        case .composition: .composition
        case .ingestConfiguration: .ingest
        case .publicKey: .publicKey
        }
    }

    public func putDocument<T: Encodable & Sendable>(_ value: T, arn: String, in table: DocumentTable) async throws(PersistenceError) {
        try await put(value, arn: arn, in: Self.table(table))
    }
    public func document<T: Decodable & Sendable>(_ type: T.Type, arn: String, in table: DocumentTable) async throws(PersistenceError) -> T? {
        try await get(type, arn: arn, in: Self.table(table))
    }
    public func documents<T: Decodable & Sendable>(_ type: T.Type, in table: DocumentTable) async throws(PersistenceError) -> [T] {
        try await all(type, in: Self.table(table))
    }
    public func deleteDocument(arn: String, in table: DocumentTable) async throws(PersistenceError) -> Bool {
        try await delete(arn: arn, in: Self.table(table))
    }
    public func documents<T: Decodable & Sendable>(_ type: T.Type, in table: DocumentTable, after: String?, limit: Int,
                                                   stageArn: String?) async throws(PersistenceError) -> KeysetPage<T> {
        let limit = KeysetPage<T>.clamped(limit)
        // The primary key's index gives the rows in order from `after` on (BINARY: byte order).
        var sql = "SELECT arn, document FROM \(Self.table(table).rawValue) WHERE arn > ?"
        var arguments: StatementArguments = [after ?? ""]
        if let stageArn {
            sql += " AND stageArn = ?"
            arguments += [stageArn]
        }
        sql += " ORDER BY arn LIMIT ?"
        arguments += [limit + 1]
        let (statement, statementArguments) = (sql, arguments)
        let rows: [(String, String)] = try await run { db in
            try Row.fetchAll(db, sql: statement, arguments: statementArguments).map { ($0["arn"], $0["document"]) }
        }
        var decoded: [(key: String, item: T)] = []
        for (arn, text) in rows { decoded.append((arn, try Self.decode(type, from: text))) }
        return KeysetPage(reading: decoded, limit: limit)
    }
    public func countDocuments(in table: DocumentTable) async throws(PersistenceError) -> Int {
        let sql = "SELECT COUNT(*) FROM \(Self.table(table).rawValue)"
        return try await run { db in try Int.fetchOne(db, sql: sql) ?? 0 }
    }

    private func put<T: Encodable & Sendable>(_ value: T, arn: String, in table: Table,
                                              extra: [String: String?] = [:]) async throws(PersistenceError) {
        let document = try Self.encode(value)
        let columns = ["arn", "document"] + extra.keys.sorted()
        var arguments: [(any DatabaseValueConvertible)?] = [arn, document]
        for key in extra.keys.sorted() { arguments.append(extra[key] ?? nil) }
        let sql = "INSERT OR REPLACE INTO \(table.rawValue) (\(columns.joined(separator: ", "))) VALUES ("
            + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let statementArguments = StatementArguments(arguments)
        try await run { db in try db.execute(sql: sql, arguments: statementArguments) }
    }

    private func get<T: Decodable & Sendable>(_ type: T.Type, arn: String, in table: Table) async throws(PersistenceError) -> T? {
        let text: String? = try await run { db in
            try String.fetchOne(db, sql: "SELECT document FROM \(table.rawValue) WHERE arn = ?", arguments: [arn])
        }
        guard let text else { return nil }
        return try Self.decode(type, from: text)
    }

    private func all<T: Decodable & Sendable>(_ type: T.Type, in table: Table) async throws(PersistenceError) -> [T] {
        let texts: [String] = try await run { db in
            try String.fetchAll(db, sql: "SELECT document FROM \(table.rawValue) ORDER BY arn")
        }
        var values: [T] = []
        for text in texts { values.append(try Self.decode(type, from: text)) }
        return values
    }

    private func delete(arn: String, in table: Table) async throws(PersistenceError) -> Bool {
        try await run { db in
            try db.execute(sql: "DELETE FROM \(table.rawValue) WHERE arn = ?", arguments: [arn])
            return db.changesCount > 0
        }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(PersistenceError) -> T {
        do {
            return try await database.write(body)
        } catch {
            throw PersistenceError("\(error)")
        }
    }

    static func encode<T: Encodable>(_ value: T) throws(PersistenceError) -> String { try StoredDocument.encode(value) }

    static func decode<T: Decodable>(_ type: T.Type, from text: String) throws(PersistenceError) -> T {
        try StoredDocument.decode(type, from: text)
    }

    // MARK: CompositionStore




    public func putIngestConfiguration(_ value: StoredIngestConfiguration) async throws(PersistenceError) {
        try await put(value, arn: value.arn, in: .ingest, extra: ["streamKey": value.configuration.streamKey])
    }
    public func ingestConfiguration(streamKey: String) async throws(PersistenceError) -> StoredIngestConfiguration? {
        try await documents(StoredIngestConfiguration.self,
                            "SELECT document FROM \(Table.ingest.rawValue) WHERE streamKey = ? ORDER BY arn LIMIT 1",
                            [streamKey]).first
    }

    public func putStageSession(_ value: StoredStageSession) async throws(PersistenceError) {
        let document = try Self.encode(value)
        let arguments: StatementArguments = [value.stageArn, value.session.sessionId ?? "",
                                             value.session.startTime?.secondsSince1970 ?? 0, value.session.endTime?.secondsSince1970,
                                             document]
        try await run { db in
            try db.execute(sql: "INSERT OR REPLACE INTO stageSession (stageArn, sessionId, startTime, endTime, document) VALUES (?, ?, ?, ?, ?)",
                           arguments: arguments)
        }
    }
    public func stageSession(stageArn: String, sessionId: String) async throws(PersistenceError) -> StoredStageSession? {
        try await documents(StoredStageSession.self, "SELECT document FROM stageSession WHERE stageArn = ? AND sessionId = ?",
                            [stageArn, sessionId]).first
    }
    public func stageSessions(stageArn: String) async throws(PersistenceError) -> [StoredStageSession] {
        try await documents(StoredStageSession.self,
                            "SELECT document FROM stageSession WHERE stageArn = ? ORDER BY startTime DESC, sessionId DESC", [stageArn])
    }
    public func stageSessions(stageArn: String, after: StageSessionPosition?, limit: Int) async throws(PersistenceError)
        -> KeysetPage<StoredStageSession> {
        let limit = KeysetPage<StoredStageSession>.clamped(limit)
        var sql = "SELECT startTime, sessionId, document FROM stageSession WHERE stageArn = ?"
        var arguments: StatementArguments = [stageArn]
        if let after {
            // `startTime <= ?` bounds the index range; the rest skips the ties already listed.
            sql += " AND startTime <= ? AND (startTime < ? OR sessionId > ?)"
            arguments += [after.startTime, after.startTime, after.sessionId]
        }
        sql += " ORDER BY startTime DESC, sessionId LIMIT ?"
        arguments += [limit + 1]
        let (statement, statementArguments) = (sql, arguments)
        let rows: [(Int64, String, String)] = try await run { db in
            try Row.fetchAll(db, sql: statement, arguments: statementArguments).map { ($0["startTime"], $0["sessionId"], $0["document"]) }
        }
        var decoded: [(key: String, item: StoredStageSession)] = []
        for (start, sessionId, text) in rows {
            decoded.append((PageKey.session(StageSessionPosition(startTime: start, sessionId: sessionId)),
                            try Self.decode(StoredStageSession.self, from: text)))
        }
        return KeysetPage(reading: decoded, limit: limit)
    }
    public func openStageSessions() async throws(PersistenceError) -> [StoredStageSession] {
        try await documents(StoredStageSession.self,
                            "SELECT document FROM stageSession WHERE endTime IS NULL ORDER BY stageArn, sessionId", [])
    }
    public func putParticipant(_ value: StoredParticipant) async throws(PersistenceError) {
        let document = try Self.encode(value)
        let arguments: StatementArguments = [value.stageArn, value.sessionId, value.participant.participantId ?? "", document,
                                             value.stageArn, value.sessionId, value.participant.participantId ?? "",
                                             value.stageArn, value.sessionId]
        // A participant keeps its place in the join order when it is updated.
        try await run { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO participant (stageArn, sessionId, participantId, document, joinOrder) VALUES (?, ?, ?, ?,
                  COALESCE((SELECT joinOrder FROM participant WHERE stageArn = ? AND sessionId = ? AND participantId = ?),
                           (SELECT COALESCE(MAX(joinOrder), 0) + 1 FROM participant WHERE stageArn = ? AND sessionId = ?)))
                """, arguments: arguments)
        }
    }
    public func participant(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> StoredParticipant? {
        try await documents(StoredParticipant.self,
                            "SELECT document FROM participant WHERE stageArn = ? AND sessionId = ? AND participantId = ?",
                            [stageArn, sessionId, participantId]).first
    }
    public func participants(stageArn: String, sessionId: String) async throws(PersistenceError) -> [StoredParticipant] {
        try await documents(StoredParticipant.self,
                            "SELECT document FROM participant WHERE stageArn = ? AND sessionId = ? ORDER BY joinOrder",
                            [stageArn, sessionId])
    }
    public func participants(stageArn: String, sessionId: String, matching filter: ParticipantFilter, afterJoinOrder: Int64?,
                             limit: Int) async throws(PersistenceError) -> KeysetPage<StoredParticipant> {
        try await ParticipantFilter.page(after: afterJoinOrder, limit: limit, matching: filter) { after, count throws(PersistenceError) in
            let rows: [(Int64, String)] = try await run { db in
                try Row.fetchAll(db, sql: """
                    SELECT joinOrder, document FROM participant WHERE stageArn = ? AND sessionId = ? AND joinOrder > ?
                    ORDER BY joinOrder LIMIT ?
                    """, arguments: [stageArn, sessionId, after ?? Int64.min, count]).map { ($0["joinOrder"], $0["document"]) }
            }
            var decoded: [(joinOrder: Int64, participant: StoredParticipant)] = []
            for (order, text) in rows { decoded.append((order, try Self.decode(StoredParticipant.self, from: text))) }
            return decoded
        }
    }
    public func appendParticipantEvent(_ value: StoredParticipantEvent) async throws(PersistenceError) {
        // The table keeps the event document itself; its columns file it.
        let document = try Self.encode(value.event)
        let arguments: StatementArguments = [value.stageArn, value.sessionId, value.participantId, document]
        try await run { db in
            try db.execute(sql: "INSERT INTO participantEvent (stageArn, sessionId, participantId, document) VALUES (?, ?, ?, ?)",
                           arguments: arguments)
        }
    }
    public func participantEvents(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> [ParticipantEvent] {
        try await documents(ParticipantEvent.self, """
            SELECT document FROM participantEvent WHERE stageArn = ? AND sessionId = ? AND participantId = ? ORDER BY sequence
            """, [stageArn, sessionId, participantId])
    }
    public func participantEvents(stageArn: String, sessionId: String, participantId: String, afterSequence: Int64?,
                                  limit: Int) async throws(PersistenceError) -> KeysetPage<ParticipantEvent> {
        let limit = KeysetPage<ParticipantEvent>.clamped(limit)
        let rows: [(Int64, String)] = try await run { db in
            try Row.fetchAll(db, sql: """
                SELECT sequence, document FROM participantEvent
                WHERE stageArn = ? AND sessionId = ? AND participantId = ? AND sequence > ? ORDER BY sequence LIMIT ?
                """, arguments: [stageArn, sessionId, participantId, afterSequence ?? Int64.min, limit + 1])
                .map { ($0["sequence"], $0["document"]) }
        }
        var decoded: [(key: String, item: ParticipantEvent)] = []
        for (sequence, text) in rows { decoded.append((PageKey.sequence(sequence), try Self.decode(ParticipantEvent.self, from: text))) }
        return KeysetPage(reading: decoded, limit: limit)
    }
    public func putRevocation(key: String, until seconds: Int64) async throws(PersistenceError) {
        try await run { db in
            try db.execute(sql: """
                INSERT INTO participantRevocation (key, expiresAt) VALUES (?, ?)
                ON CONFLICT (key) DO UPDATE SET expiresAt = max(expiresAt, excluded.expiresAt)
                """, arguments: [key, seconds])
        }
    }

    public func revocation(key: String) async throws(PersistenceError) -> Int64? {
        try await run { db in try Int64.fetchOne(db, sql: "SELECT expiresAt FROM participantRevocation WHERE key = ?", arguments: [key]) }
    }

    public func claimFleetNonce(_ nonce: String, until: Int64, now: Int64) async throws(PersistenceError) -> Bool {
        try await run { db in
            try db.execute(sql: "DELETE FROM fleetNonce WHERE expiresAt < ?", arguments: [now])
            try db.execute(sql: "INSERT INTO fleetNonce (nonce, expiresAt) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
                           arguments: [nonce, until])
            return db.changesCount == 1
        }
    }

    public func pruneRevocations(expiredBefore seconds: Int64) async throws(PersistenceError) {
        try await run { db in try db.execute(sql: "DELETE FROM participantRevocation WHERE expiresAt < ?", arguments: [seconds]) }
    }

    public func pruneStageSessions(endedBefore seconds: Int64) async throws(PersistenceError) {
        try await run { db in
            let ended = "SELECT stageArn, sessionId FROM stageSession WHERE endTime IS NOT NULL AND endTime < ?"
            try db.execute(sql: "DELETE FROM participantEvent WHERE (stageArn, sessionId) IN (\(ended))", arguments: [seconds])
            try db.execute(sql: "DELETE FROM participant WHERE (stageArn, sessionId) IN (\(ended))", arguments: [seconds])
            try db.execute(sql: "DELETE FROM stageSession WHERE endTime IS NOT NULL AND endTime < ?", arguments: [seconds])
        }
    }


    private func documents<T: Decodable & Sendable>(_ type: T.Type, _ sql: String, _ arguments: StatementArguments)
        async throws(PersistenceError) -> [T] {
        let texts: [String] = try await run { db in try String.fetchAll(db, sql: sql, arguments: arguments) }
        var values: [T] = []
        for text in texts { values.append(try Self.decode(type, from: text)) }
        return values
    }

    public func putComposition(_ value: StoredComposition) async throws(PersistenceError) {
        try await put(value, arn: value.arn, in: .composition,
                      extra: ["stageArn": value.composition.stageArn, "state": value.composition.state.rawValue,
                              "idempotencyToken": value.idempotencyToken])
    }
}
