// The control-plane store in PostgreSQL, for daemons that share one database (a fleet). The
// same rows as SQLiteCompositionStore: each resource keyed by ARN holding its JSON document,
// plus the columns queries need. Schema changes go through numbered migrations, applied once
// under an advisory lock however many nodes start at the same time.
public import APIModels
import Foundation
import Logging
public import Persistence
public import PostgresNIO
import Synchronization

public final class PostgresCompositionStore: DocumentRowStore {
    let client: PostgresClient
    let logger: Logger
    private let callTimeout: Duration
    /// Set once this daemon is a node of a fleet: every write of a stage's state (its
    /// compositions, sessions, participants and their events) then commits only while this
    /// incarnation's lease is valid on the database's clock and no other node holds the stage.
    private let writer = Mutex<(nodeId: String, incarnation: Int64)?>(nil)

    /// A store on `client`, which must be running (`PostgresClient.run()`, a Service) before
    /// the first call. Call `migrate()` once before anything else.
    /// - Parameter callTimeout: how long one call may wait for the database (a connection,
    ///   then its answer) before it fails: an API request never hangs on a database outage.
    public init(client: PostgresClient, callTimeout: Duration = .seconds(10), logger: Logger) {
        self.client = client
        self.callTimeout = callTimeout
        self.logger = logger
    }

    /// Brings the schema to the latest version: each migration not yet recorded in
    /// `schema_migration` runs, in order, in one transaction holding an advisory lock, so
    /// nodes starting together neither race nor apply one twice.
    public func migrate() async throws(PersistenceError) {
        try await transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresMigrations.lockKey))", logger: self.logger)
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS schema_migration (
                  version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: self.logger)
            var applied: Set<String> = []
            for try await version in try await connection.query("SELECT version FROM schema_migration", logger: self.logger)
                .decode(String.self) {
                applied.insert(version)
            }
            for migration in PostgresMigrations.all where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger)
                }
                try await connection.query("INSERT INTO schema_migration (version) VALUES (\(migration.version))", logger: self.logger)
            }
        }
    }

    /// The versions applied, in order.
    public func appliedMigrations() async throws(PersistenceError) -> [String] {
        try await strings("SELECT version FROM schema_migration ORDER BY version")
    }

    static func name(of table: DocumentTable) -> String {
        switch table {
        case .encoderConfiguration: "encoder_configuration"
        case .storageConfiguration: "storage_configuration"
        case .stage: "stage"
        case .composition: "composition"
        case .ingestConfiguration: "ingest_configuration"
        case .publicKey: "public_key"
        }
    }

    /// Fences this store's writes of stage state to the node's incarnation (see `writer`).
    public func fenceWrites(nodeId: String, incarnation: Int64) {
        writer.withLock { $0 = (nodeId, incarnation) }
    }

    /// Runs `query`, a write of `stageArn`'s state, fenced when this store belongs to a node:
    /// in one transaction with a check that holds the node's row (FOR SHARE: a reaper deleting
    /// it waits for this write, or this write sees the row gone).
    private func stageWrite(stageArn: String, _ query: PostgresQuery) async throws(PersistenceError) {
        guard let identity = writer.withLock({ $0 }) else {
            try await execute(query)
            return
        }
        let (nodeId, incarnation) = identity
        let written = try await transaction { connection in
            let rows = try await connection.query("""
                SELECT n.lease_expires_at > now(),
                       (SELECT p.node_id || ' (incarnation ' || p.incarnation || ')' FROM stage_placement p
                        WHERE p.stage_arn = \(stageArn) AND NOT (p.node_id = \(nodeId) AND p.incarnation = \(incarnation)))
                FROM node n WHERE n.node_id = \(nodeId) AND n.incarnation = \(incarnation) FOR SHARE OF n
                """, logger: self.logger)
            var verdict = "this node's lease is gone (reaped, or registered again)"
            for try await (live, holder) in rows.decode((Bool, String?).self) {
                if !live {
                    verdict = "this node's lease has expired"
                } else if let holder {
                    verdict = "stage \(stageArn) is held by node \(holder)"
                } else {
                    verdict = ""
                }
            }
            guard verdict.isEmpty else { return verdict }
            try await connection.query(query, logger: self.logger)
            return ""
        }
        guard written.isEmpty else {
            throw PersistenceError("fenced: node \(nodeId) (incarnation \(incarnation)) may not write: \(written)")
        }
    }

    // MARK: Plumbing

    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws(PersistenceError) -> T {
        let timeout = callTimeout
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else {
                    throw PersistenceError("postgresql: no answer within \(timeout)")
                }
                return value
            }
        } catch {
            throw PersistenceError(Self.describe(error))
        }
    }

    /// PSQLError's own description hides the server's message; the store's callers log it.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PersistenceError { return error.message }
        if let error = error as? PostgresTransactionError {
            return describe(error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? PersistenceError("transaction failed"))
        }
        guard let error = error as? PSQLError else { return "\(error)" }
        if let server = error.serverInfo {
            let message = server[.message] ?? "error"
            let code = server[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            return "postgresql: \(message)\(code)"
        }
        return "postgresql: \(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
    }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(PersistenceError) -> T {
        try await run { try await self.client.withTransaction(logger: self.logger) { connection in try await body(connection) } }
    }

    private func execute(_ query: PostgresQuery) async throws(PersistenceError) {
        _ = try await run { try await self.client.query(query, logger: self.logger) }
    }

    /// The number of rows a statement changed.
    private func changes(_ query: PostgresQuery) async throws(PersistenceError) -> Int {
        try await run {
            try await self.client.withConnection { connection in
                let result = try await connection.query(query, logger: self.logger)
                var count = 0
                for try await _ in result.decode(Int.self) { count += 1 }
                return count
            }
        }
    }

    /// Every row of `query`, decoded as `types`.
    private func rows<each Column: PostgresDecodable & Sendable>(_ query: PostgresQuery, as types: (repeat each Column).Type)
        async throws(PersistenceError) -> [(repeat each Column)] {
        try await run {
            var rows: [(repeat each Column)] = []
            for try await row in try await self.client.query(query, logger: self.logger).decode(types) { rows.append(row) }
            return rows
        }
    }

    private func strings(_ query: PostgresQuery) async throws(PersistenceError) -> [String] {
        try await run {
            var values: [String] = []
            for try await value in try await self.client.query(query, logger: self.logger).decode(String.self) {
                values.append(value)
            }
            return values
        }
    }

    private func documents<T: Decodable & Sendable>(_ type: T.Type, _ query: PostgresQuery) async throws(PersistenceError) -> [T] {
        var values: [T] = []
        for text in try await strings(query) { values.append(try StoredDocument.decode(type, from: text)) }
        return values
    }

    public func putDocument<T: Encodable & Sendable>(_ value: T, arn: String, in table: DocumentTable) async throws(PersistenceError) {
        let document = try StoredDocument.encode(value)
        try await execute("""
            INSERT INTO \(unescaped: Self.name(of: table)) (arn, document) VALUES (\(arn), \(document))
            ON CONFLICT (arn) DO UPDATE SET document = EXCLUDED.document
            """)
    }

    public func document<T: Decodable & Sendable>(_ type: T.Type, arn: String, in table: DocumentTable) async throws(PersistenceError) -> T? {
        try await documents(type, "SELECT document FROM \(unescaped: Self.name(of: table)) WHERE arn = \(arn)").first
    }

    public func documents<T: Decodable & Sendable>(_ type: T.Type, in table: DocumentTable) async throws(PersistenceError) -> [T] {
        // COLLATE "C": byte order, as SQLite sorts, whatever the database's locale.
        try await documents(type, "SELECT document FROM \(unescaped: Self.name(of: table)) ORDER BY arn COLLATE \"C\"")
    }

    public func documents<T: Decodable & Sendable>(_ type: T.Type, in table: DocumentTable, after: String?, limit: Int,
                                                   stageArn: String?) async throws(PersistenceError) -> KeysetPage<T> {
        let limit = KeysetPage<T>.clamped(limit)
        let name = Self.name(of: table), after = after ?? ""
        // Byte order (COLLATE "C"), served in order by each table's `arn COLLATE "C"` index
        // (migration 0006) whatever the database's locale.
        let query: PostgresQuery = if let stageArn {
            """
            SELECT arn, document FROM \(unescaped: name) WHERE arn COLLATE "C" > \(after) AND stage_arn = \(stageArn)
            ORDER BY arn COLLATE "C" LIMIT \(limit + 1)
            """
        } else {
            """
            SELECT arn, document FROM \(unescaped: name) WHERE arn COLLATE "C" > \(after) ORDER BY arn COLLATE "C" LIMIT \(limit + 1)
            """
        }
        let rows: [(String, String)] = try await run {
            var rows: [(String, String)] = []
            for try await row in try await self.client.query(query, logger: self.logger).decode((String, String).self) {
                rows.append(row)
            }
            return rows
        }
        var decoded: [(key: String, item: T)] = []
        for (arn, text) in rows { decoded.append((arn, try StoredDocument.decode(type, from: text))) }
        return KeysetPage(reading: decoded, limit: limit)
    }

    public func countDocuments(in table: DocumentTable) async throws(PersistenceError) -> Int {
        let query: PostgresQuery = "SELECT count(*) FROM \(unescaped: Self.name(of: table))"
        return try await run {
            var count = 0
            for try await value in try await self.client.query(query, logger: self.logger).decode(Int.self) { count = value }
            return count
        }
    }

    public func deleteDocument(arn: String, in table: DocumentTable) async throws(PersistenceError) -> Bool {
        try await changes("DELETE FROM \(unescaped: Self.name(of: table)) WHERE arn = \(arn) RETURNING 1") > 0
    }

    // MARK: CompositionStore




    public func putIngestConfiguration(_ value: StoredIngestConfiguration) async throws(PersistenceError) {
        let document = try StoredDocument.encode(value)
        try await execute("""
            INSERT INTO ingest_configuration (arn, stream_key, document) VALUES (\(value.arn), \(value.configuration.streamKey), \(document))
            ON CONFLICT (arn) DO UPDATE SET stream_key = EXCLUDED.stream_key, document = EXCLUDED.document
            """)
    }
    public func ingestConfiguration(streamKey: String) async throws(PersistenceError) -> StoredIngestConfiguration? {
        try await documents(StoredIngestConfiguration.self, """
            SELECT document FROM ingest_configuration WHERE stream_key = \(streamKey) ORDER BY arn COLLATE "C" LIMIT 1
            """).first
    }

    public func putStageSession(_ value: StoredStageSession) async throws(PersistenceError) {
        let document = try StoredDocument.encode(value)
        let sessionId = value.session.sessionId ?? ""
        let start = value.session.startTime?.secondsSince1970 ?? 0
        let end = value.session.endTime?.secondsSince1970
        try await stageWrite(stageArn: value.stageArn, """
            INSERT INTO stage_session (stage_arn, session_id, start_time, end_time, document)
            VALUES (\(value.stageArn), \(sessionId), \(start), \(end), \(document))
            ON CONFLICT (stage_arn, session_id) DO UPDATE
              SET start_time = EXCLUDED.start_time, end_time = EXCLUDED.end_time, document = EXCLUDED.document
            """)
    }
    public func stageSession(stageArn: String, sessionId: String) async throws(PersistenceError) -> StoredStageSession? {
        try await documents(StoredStageSession.self,
                            "SELECT document FROM stage_session WHERE stage_arn = \(stageArn) AND session_id = \(sessionId)").first
    }
    public func stageSessions(stageArn: String) async throws(PersistenceError) -> [StoredStageSession] {
        try await documents(StoredStageSession.self, """
            SELECT document FROM stage_session WHERE stage_arn = \(stageArn) ORDER BY start_time DESC, session_id COLLATE "C" DESC
            """)
    }
    public func stageSessions(stageArn: String, after: StageSessionPosition?, limit: Int) async throws(PersistenceError)
        -> KeysetPage<StoredStageSession> {
        let limit = KeysetPage<StoredStageSession>.clamped(limit)
        // Served in order by stage_session_newest_first (migration 0008); `start_time <= ` bounds
        // its range, the rest skips the ties already listed.
        let query: PostgresQuery = if let after {
            """
            SELECT start_time, session_id, document FROM stage_session
            WHERE stage_arn = \(stageArn) AND start_time <= \(after.startTime)
              AND (start_time < \(after.startTime) OR session_id COLLATE "C" > \(after.sessionId))
            ORDER BY start_time DESC, session_id COLLATE "C" LIMIT \(limit + 1)
            """
        } else {
            """
            SELECT start_time, session_id, document FROM stage_session WHERE stage_arn = \(stageArn)
            ORDER BY start_time DESC, session_id COLLATE "C" LIMIT \(limit + 1)
            """
        }
        let rows = try await rows(query, as: (Int64, String, String).self)
        var decoded: [(key: String, item: StoredStageSession)] = []
        for (start, sessionId, text) in rows {
            decoded.append((PageKey.session(StageSessionPosition(startTime: start, sessionId: sessionId)),
                            try StoredDocument.decode(StoredStageSession.self, from: text)))
        }
        return KeysetPage(reading: decoded, limit: limit)
    }
    public func openStageSessions() async throws(PersistenceError) -> [StoredStageSession] {
        try await documents(StoredStageSession.self, """
            SELECT document FROM stage_session WHERE end_time IS NULL ORDER BY stage_arn COLLATE "C", session_id COLLATE "C"
            """)
    }
    public func openStageSession(stageArn: String) async throws(PersistenceError) -> StoredStageSession? {
        try await documents(StoredStageSession.self, """
            SELECT document FROM stage_session WHERE stage_arn = \(stageArn) AND end_time IS NULL
            ORDER BY start_time DESC LIMIT 1
            """).first
    }
    public func putParticipant(_ value: StoredParticipant) async throws(PersistenceError) {
        let document = try StoredDocument.encode(value)
        let participantId = value.participant.participantId ?? ""
        // join_order is a sequence: a participant keeps its place when it is updated.
        try await stageWrite(stageArn: value.stageArn, """
            INSERT INTO participant (stage_arn, session_id, participant_id, document)
            VALUES (\(value.stageArn), \(value.sessionId), \(participantId), \(document))
            ON CONFLICT (stage_arn, session_id, participant_id) DO UPDATE SET document = EXCLUDED.document
            """)
    }
    public func participant(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> StoredParticipant? {
        try await documents(StoredParticipant.self, """
            SELECT document FROM participant
            WHERE stage_arn = \(stageArn) AND session_id = \(sessionId) AND participant_id = \(participantId)
            """).first
    }
    public func participants(stageArn: String, sessionId: String) async throws(PersistenceError) -> [StoredParticipant] {
        try await documents(StoredParticipant.self, """
            SELECT document FROM participant WHERE stage_arn = \(stageArn) AND session_id = \(sessionId) ORDER BY join_order
            """)
    }
    public func participants(stageArn: String, sessionId: String, matching filter: ParticipantFilter, afterJoinOrder: Int64?,
                             limit: Int) async throws(PersistenceError) -> KeysetPage<StoredParticipant> {
        try await ParticipantFilter.page(after: afterJoinOrder, limit: limit, matching: filter) { after, count throws(PersistenceError) in
            let rows = try await rows("""
                SELECT join_order, document FROM participant
                WHERE stage_arn = \(stageArn) AND session_id = \(sessionId) AND join_order > \(after ?? Int64.min)
                ORDER BY join_order LIMIT \(count)
                """, as: (Int64, String).self)
            var decoded: [(joinOrder: Int64, participant: StoredParticipant)] = []
            for (order, text) in rows { decoded.append((order, try StoredDocument.decode(StoredParticipant.self, from: text))) }
            return decoded
        }
    }
    public func appendParticipantEvent(_ value: StoredParticipantEvent) async throws(PersistenceError) {
        let document = try StoredDocument.encode(value.event)
        try await stageWrite(stageArn: value.stageArn, """
            INSERT INTO participant_event (stage_arn, session_id, participant_id, document)
            VALUES (\(value.stageArn), \(value.sessionId), \(value.participantId), \(document))
            """)
    }
    public func participantEvents(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> [ParticipantEvent] {
        try await documents(ParticipantEvent.self, """
            SELECT document FROM participant_event
            WHERE stage_arn = \(stageArn) AND session_id = \(sessionId) AND participant_id = \(participantId) ORDER BY sequence
            """)
    }
    public func participantEvents(stageArn: String, sessionId: String, participantId: String, afterSequence: Int64?,
                                  limit: Int) async throws(PersistenceError) -> KeysetPage<ParticipantEvent> {
        let limit = KeysetPage<ParticipantEvent>.clamped(limit)
        let rows = try await rows("""
            SELECT sequence, document FROM participant_event
            WHERE stage_arn = \(stageArn) AND session_id = \(sessionId) AND participant_id = \(participantId)
              AND sequence > \(afterSequence ?? Int64.min)
            ORDER BY sequence LIMIT \(limit + 1)
            """, as: (Int64, String).self)
        var decoded: [(key: String, item: ParticipantEvent)] = []
        for (sequence, text) in rows {
            decoded.append((PageKey.sequence(sequence), try StoredDocument.decode(ParticipantEvent.self, from: text)))
        }
        return KeysetPage(reading: decoded, limit: limit)
    }
    public func putRevocation(key: String, until seconds: Int64) async throws(PersistenceError) {
        try await execute("""
            INSERT INTO participant_revocation (key, expires_at) VALUES (\(key), \(seconds))
            ON CONFLICT (key) DO UPDATE SET expires_at = GREATEST(participant_revocation.expires_at, EXCLUDED.expires_at)
            """)
    }

    public func revocation(key: String) async throws(PersistenceError) -> Int64? {
        try await run {
            for try await value in try await self.client.query(
                "SELECT expires_at FROM participant_revocation WHERE key = \(key)", logger: self.logger).decode(Int64.self) {
                return value
            }
            return nil
        }
    }

    public func claimFleetNonce(_ nonce: String, until: Int64, now: Int64) async throws(PersistenceError) -> Bool {
        try await execute("DELETE FROM fleet_nonce WHERE expires_at < \(now)")
        return try await changes("INSERT INTO fleet_nonce (nonce, expires_at) VALUES (\(nonce), \(until)) ON CONFLICT (nonce) DO NOTHING RETURNING 1") == 1
    }

    public func pruneRevocations(expiredBefore seconds: Int64) async throws(PersistenceError) {
        try await execute("DELETE FROM participant_revocation WHERE expires_at < \(seconds)")
    }

    public func pruneStageSessions(endedBefore seconds: Int64) async throws(PersistenceError) {
        try await transaction { connection in
            for table in ["participant_event", "participant"] {
                try await connection.query("""
                    DELETE FROM \(unescaped: table) WHERE (stage_arn, session_id) IN
                      (SELECT stage_arn, session_id FROM stage_session WHERE end_time IS NOT NULL AND end_time < \(seconds))
                    """, logger: self.logger)
            }
            try await connection.query("DELETE FROM stage_session WHERE end_time IS NOT NULL AND end_time < \(seconds)", logger: self.logger)
        }
    }


    public func putComposition(_ value: StoredComposition) async throws(PersistenceError) {
        let document = try StoredDocument.encode(value)
        try await stageWrite(stageArn: value.composition.stageArn, """
            INSERT INTO composition (arn, stage_arn, state, idempotency_token, document)
            VALUES (\(value.arn), \(value.composition.stageArn), \(value.composition.state.rawValue), \(value.idempotencyToken), \(document))
            ON CONFLICT (arn) DO UPDATE SET stage_arn = EXCLUDED.stage_arn, state = EXCLUDED.state,
              idempotency_token = EXCLUDED.idempotency_token, document = EXCLUDED.document
            """)
    }
}
