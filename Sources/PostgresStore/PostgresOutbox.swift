// The fleet's event outbox. Every node appends the events it makes (only while its lease is
// valid: a fenced node's late events never go out); one node at a time holds the outbox lease
// and delivers what is pending to its sinks in the order it was appended, so the events of one
// resource (a stage's updates, a composition's changes) never overtake each other, whichever
// node made them. A delivering node that dies leaves its lease to expire; the next holder
// delivers from the first event not marked delivered (at least once).
import Logging
public import Persistence
import PostgresNIO

/// An event waiting in the outbox: its place in the order and its JSON document.
public struct OutboxEntry: Sendable, Equatable {
    public var sequence: Int64
    public var document: String
}

extension PostgresCompositionStore {
    /// Appends an event made by this incarnation; false (nothing appended) when the node's
    /// lease is no longer valid.
    public func appendOutboxEvent(_ document: String, nodeId: String, incarnation: Int64) async throws(PersistenceError) -> Bool {
        try await run {
            // The doorbell rings with the commit, only when an event went in.
            let rows = try await self.client.query("""
                WITH appended AS (
                  INSERT INTO event_outbox (document, node_id)
                  SELECT \(document), \(nodeId) WHERE EXISTS
                    (SELECT 1 FROM node WHERE node_id = \(nodeId) AND incarnation = \(incarnation) AND lease_expires_at > now())
                  RETURNING sequence),
                rang AS (SELECT pg_notify('stage_compositor_outbox', '') FROM appended)
                SELECT 1 FROM appended, rang
                """, logger: self.logger)
            var appended = false
            for try await _ in rows.decode(Int.self) { appended = true }
            return appended
        }
    }

    /// Calls `rang` each time an event is appended to the outbox (by any node), from a
    /// connection of its own (LISTEN), until the task is cancelled or the connection fails
    /// (thrown: the caller listens again). `listening` is called once the LISTEN is in place.
    public func listenForOutboxEvents(listening: @Sendable () -> Void = {}, rang: @escaping @Sendable () -> Void) async throws {
        try await client.withConnection { connection in
            try await connection.listen(on: "stage_compositor_outbox") { notifications in
                listening()
                for try await _ in notifications { rang() }
            }
        }
    }

    /// Takes or renews the outbox lease for `ttlMs`; true when this incarnation holds it now.
    /// The lease of a holder whose node lease has run out can be taken at once.
    public func claimOutbox(nodeId: String, incarnation: Int64, ttlMs: Int64) async throws(PersistenceError) -> Bool {
        try await run {
            let rows = try await self.client.query("""
                INSERT INTO outbox_lease (id, node_id, incarnation, expires_at)
                VALUES (1, \(nodeId), \(incarnation), now() + \(ttlMs) * interval '1 millisecond')
                ON CONFLICT (id) DO UPDATE SET node_id = EXCLUDED.node_id, incarnation = EXCLUDED.incarnation,
                  expires_at = EXCLUDED.expires_at
                WHERE outbox_lease.expires_at <= now()
                   OR (outbox_lease.node_id = EXCLUDED.node_id AND outbox_lease.incarnation = EXCLUDED.incarnation)
                   -- A holder whose node lease is gone (dead, fenced) holds nothing.
                   OR NOT EXISTS (SELECT 1 FROM node WHERE node.node_id = outbox_lease.node_id
                                  AND node.incarnation = outbox_lease.incarnation AND node.lease_expires_at > now())
                RETURNING 1
                """, logger: self.logger)
            var held = false
            for try await _ in rows.decode(Int.self) { held = true }
            return held
        }
    }

    /// Gives the outbox lease up at once (a node leaving on purpose), if this incarnation holds it.
    public func releaseOutbox(nodeId: String, incarnation: Int64) async throws(PersistenceError) {
        _ = try await run {
            try await self.client.query("""
                UPDATE outbox_lease SET expires_at = now() WHERE node_id = \(nodeId) AND incarnation = \(incarnation)
                """, logger: self.logger)
            return true
        }
    }

    /// The oldest events not yet delivered, in order.
    public func pendingOutboxEvents(limit: Int) async throws(PersistenceError) -> [OutboxEntry] {
        try await run {
            let rows = try await self.client.query("""
                SELECT sequence, document FROM event_outbox WHERE delivered_at IS NULL ORDER BY sequence LIMIT \(limit)
                """, logger: self.logger)
            var entries: [OutboxEntry] = []
            for try await (sequence, document) in rows.decode((Int64, String).self) {
                entries.append(OutboxEntry(sequence: sequence, document: document))
            }
            return entries
        }
    }

    /// Marks every event up to `sequence` delivered, only while this incarnation holds the
    /// outbox lease; false when it does not (another node delivers now).
    public func markOutboxDelivered(upTo sequence: Int64, nodeId: String, incarnation: Int64) async throws(PersistenceError) -> Bool {
        try await transaction { connection in
            let lease = try await connection.query("""
                SELECT 1 FROM outbox_lease WHERE node_id = \(nodeId) AND incarnation = \(incarnation) AND expires_at > now() FOR SHARE
                """, logger: self.logger)
            var held = false
            for try await _ in lease.decode(Int.self) { held = true }
            guard held else { return false }
            try await connection.query("""
                UPDATE event_outbox SET delivered_at = now() WHERE delivered_at IS NULL AND sequence <= \(sequence)
                """, logger: self.logger)
            // Delivered events are kept a day (to look at), then go.
            try await connection.query("""
                DELETE FROM event_outbox WHERE delivered_at < now() - interval '1 day'
                """, logger: self.logger)
            return true
        }
    }
}
