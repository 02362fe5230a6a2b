// The fleet's membership and placement, in the shared database. Every time is the database's
// (`now()`), so hosts' clocks never disagree about a lease. Each call is one transaction:
//   - register: a node (re)starts as a new incarnation with a fresh lease; whatever an older
//     incarnation of it held is released and returned, for the caller to fail.
//   - renew: extends the lease of exactly this incarnation, only while it is still valid.
//   - reapExpired: removes nodes whose lease ran out and returns what they held; concurrent
//     reapers each get different nodes (SKIP LOCKED), so every loss is handled once.
//   - place: puts a stage on the live, undrained node with the most free capacity, reserving
//     the cost in the same transaction (node rows locked: no two placements overbook one).
import Logging
public import Persistence
import PostgresNIO

/// What a daemon tells the fleet about itself.
public struct FleetNodeRegistration: Sendable, Equatable {
    public var nodeId: String
    /// Where other nodes reach it (internal calls, RTMP relay).
    public var internalURL: String
    /// Its advertised API, RTMP and WHIP addresses.
    public var apiURL: String
    public var rtmpURL: String?
    public var whipURL: String?
    /// CPU it offers to compositions, in thousandths of a core.
    public var capacityMillicores: Int

    public init(nodeId: String, internalURL: String, apiURL: String, rtmpURL: String? = nil, whipURL: String? = nil,
                capacityMillicores: Int) {
        self.nodeId = nodeId
        self.internalURL = internalURL
        self.apiURL = apiURL
        self.rtmpURL = rtmpURL
        self.whipURL = whipURL
        self.capacityMillicores = capacityMillicores
    }
}

/// A node as the fleet sees it now.
public struct FleetNodeStatus: Sendable, Equatable {
    public var registration: FleetNodeRegistration
    public var incarnation: Int64
    public var draining: Bool
    /// Whether its lease is still valid.
    public var live: Bool
    /// Milliseconds until its lease expires (negative: expired that long ago).
    public var leaseRemainingMs: Int64
    public var reservedMillicores: Int
    /// What the node last measured its process using (0: not measured yet).
    public var measuredMillicores: Int = 0
    public var stages: [String]
}

/// Who holds a stage.
public struct StagePlacement: Sendable, Equatable {
    public var stageArn: String
    public var nodeId: String
    public var incarnation: Int64
    public var costMillicores: Int

    public init(stageArn: String, nodeId: String, incarnation: Int64, costMillicores: Int) {
        self.stageArn = stageArn
        self.nodeId = nodeId
        self.incarnation = incarnation
        self.costMillicores = costMillicores
    }
}

public enum PlacementResult: Sendable, Equatable {
    case placed(StagePlacement)
    /// Nowhere has room: the reason names the largest free capacity and the cost asked.
    case refused(reason: String)
}

/// A node whose lease ran out (or an older incarnation of a restarted node), and the stages it held.
public struct LostNode: Sendable, Equatable {
    public var nodeId: String
    public var incarnation: Int64
    public var stages: [String]

    public init(nodeId: String, incarnation: Int64, stages: [String]) {
        self.nodeId = nodeId
        self.incarnation = incarnation
        self.stages = stages
    }
}

extension PostgresCompositionStore {
    /// Starts `registration` as a new incarnation, leased for `ttlMs`. Returns the
    /// incarnation and what an older incarnation of the same node still held (released now).
    public func register(_ registration: FleetNodeRegistration, ttlMs: Int64) async throws(PersistenceError)
        -> (incarnation: Int64, previous: LostNode?) {
        try await transaction { connection in
            var previous: LostNode?
            let rows = try await connection.query("""
                SELECT incarnation FROM node WHERE node_id = \(registration.nodeId) FOR UPDATE
                """, logger: self.logger)
            for try await old in rows.decode(Int64.self) {
                previous = LostNode(nodeId: registration.nodeId, incarnation: old,
                                    stages: try await Self.releasePlacements(of: registration.nodeId, incarnation: old, connection, self.logger))
            }
            let inserted = try await connection.query("""
                INSERT INTO node (node_id, incarnation, internal_url, api_url, rtmp_url, whip_url, capacity_millicores, lease_expires_at)
                VALUES (\(registration.nodeId), nextval('node_incarnation'), \(registration.internalURL), \(registration.apiURL),
                        \(registration.rtmpURL), \(registration.whipURL), \(registration.capacityMillicores),
                        now() + \(ttlMs) * interval '1 millisecond')
                ON CONFLICT (node_id) DO UPDATE SET incarnation = EXCLUDED.incarnation, internal_url = EXCLUDED.internal_url,
                  api_url = EXCLUDED.api_url, rtmp_url = EXCLUDED.rtmp_url, whip_url = EXCLUDED.whip_url,
                  capacity_millicores = EXCLUDED.capacity_millicores, draining = false, registered_at = now(),
                  lease_expires_at = EXCLUDED.lease_expires_at
                RETURNING incarnation
                """, logger: self.logger)
            var incarnation: Int64 = 0
            for try await value in inserted.decode(Int64.self) { incarnation = value }
            return (incarnation, previous)
        }
    }

    /// Extends this incarnation's lease to `ttlMs` from now, if it is still valid. False: the
    /// lease is gone (expired, reaped, or the node registered again); the caller fences itself.
    /// `measuredMillicores`: what the node's process uses now (see MeasuredLoad), kept with the lease.
    public func renew(nodeId: String, incarnation: Int64, ttlMs: Int64, measuredMillicores: Int = 0) async throws(PersistenceError) -> Bool {
        let measured = min(max(measuredMillicores, 0), Int(Int32.max))
        return try await run {
            let rows = try await self.client.query("""
                UPDATE node SET lease_expires_at = now() + \(ttlMs) * interval '1 millisecond', measured_millicores = \(measured)
                WHERE node_id = \(nodeId) AND incarnation = \(incarnation) AND lease_expires_at > now()
                RETURNING 1
                """, logger: self.logger)
            var renewed = false
            for try await _ in rows.decode(Int.self) { renewed = true }
            return renewed
        }
    }

    /// Removes every node whose lease has expired, with its placements; each is returned to
    /// exactly one caller, however many reap at once.
    public func reapExpired() async throws(PersistenceError) -> [LostNode] {
        try await transaction { connection in
            let rows = try await connection.query("""
                DELETE FROM node WHERE node_id IN
                  (SELECT node_id FROM node WHERE lease_expires_at <= now() FOR UPDATE SKIP LOCKED)
                RETURNING node_id, incarnation
                """, logger: self.logger)
            var expired: [(String, Int64)] = []
            for try await (nodeId, incarnation) in rows.decode((String, Int64).self) { expired.append((nodeId, incarnation)) }
            var lost: [LostNode] = []
            for (nodeId, incarnation) in expired.sorted(by: { $0.0 < $1.0 }) {
                lost.append(LostNode(nodeId: nodeId, incarnation: incarnation,
                                     stages: try await Self.releasePlacements(of: nodeId, incarnation: incarnation, connection, self.logger)))
            }
            return lost
        }
    }

    private static func releasePlacements(of nodeId: String, incarnation: Int64, _ connection: PostgresConnection,
                                          _ logger: Logger) async throws -> [String] {
        let rows = try await connection.query("""
            DELETE FROM stage_placement WHERE node_id = \(nodeId) AND incarnation = \(incarnation) RETURNING stage_arn
            """, logger: logger)
        var stages: [String] = []
        for try await stage in rows.decode(String.self) { stages.append(stage) }
        return stages.sorted()
    }

    /// The stage's placement: where it already is, or else `preferring` when that node is live,
    /// undrained and has room (a publisher's stage lands where the publisher connected), or
    /// else the live, undrained node with the most free capacity for `costMillicores` (ties:
    /// the node id), reserved in this transaction.
    public func place(stageArn: String, costMillicores: Int, preferring: String? = nil) async throws(PersistenceError)
        -> PlacementResult {
        try await transaction { connection in
            // Every live node row locked: placements are serialized, so none overbooks.
            let live = try await connection.query("""
                SELECT node_id, incarnation, capacity_millicores, measured_millicores FROM node
                WHERE lease_expires_at > now() AND NOT draining ORDER BY node_id FOR UPDATE
                """, logger: self.logger)
            var nodes: [(id: String, incarnation: Int64, capacity: Int, measured: Int)] = []
            for try await (id, incarnation, capacity, measured) in live.decode((String, Int64, Int, Int).self) {
                nodes.append((id, incarnation, capacity, measured))
            }
            let existing = try await connection.query("""
                SELECT node_id, incarnation, cost_millicores FROM stage_placement WHERE stage_arn = \(stageArn)
                """, logger: self.logger)
            for try await (nodeId, incarnation, cost) in existing.decode((String, Int64, Int).self) {
                return .placed(StagePlacement(stageArn: stageArn, nodeId: nodeId, incarnation: incarnation, costMillicores: cost))
            }
            let reservedRows = try await connection.query("""
                SELECT node_id, incarnation, COALESCE(sum(cost_millicores), 0)::bigint FROM stage_placement GROUP BY node_id, incarnation
                """, logger: self.logger)
            var reserved: [String: Int64] = [:]
            for try await (nodeId, incarnation, sum) in reservedRows.decode((String, Int64, Int64).self) {
                if nodes.contains(where: { $0.id == nodeId && $0.incarnation == incarnation }) { reserved[nodeId, default: 0] &+= sum }
            }
            // A node's load is what its stages reserved, or what it measures when that is more
            // (the estimate was low, or work outside placements: relays, recordings).
            let free = nodes.map { node in (node, Int64(node.capacity) &- max(reserved[node.id] ?? 0, Int64(node.measured))) }
            let preferred = free.first { $0.0.id == preferring && $0.1 >= Int64(costMillicores) }
            guard let best = preferred ?? free.max(by: { ($0.1, $1.0.id) < ($1.1, $0.0.id) }), best.1 >= Int64(costMillicores) else {
                let most = free.map(\.1).max().map { "\(max($0, 0)) millicores free at most (capacity less the larger of "
                    + "reserved and measured)" } ?? "no live node accepts placements"
                return .refused(reason: "no node has capacity for this stage: it needs \(costMillicores) millicores, \(most) "
                                + "(\(nodes.count) live, undrained node\(nodes.count == 1 ? "" : "s"))")
            }
            try await connection.query("""
                INSERT INTO stage_placement (stage_arn, node_id, incarnation, cost_millicores)
                VALUES (\(stageArn), \(best.0.id), \(best.0.incarnation), \(costMillicores))
                """, logger: self.logger)
            return .placed(StagePlacement(stageArn: stageArn, nodeId: best.0.id, incarnation: best.0.incarnation,
                                          costMillicores: costMillicores))
        }
    }

    /// Where the stage is placed now, with the node holding it (nil: nowhere, or on a node
    /// whose row is gone).
    public func placement(stageArn: String) async throws(PersistenceError) -> (StagePlacement, FleetNodeStatus)? {
        try await run {
            let rows = try await self.client.query("""
                SELECT p.node_id, p.incarnation, p.cost_millicores, n.internal_url, n.api_url, n.rtmp_url, n.whip_url,
                       n.capacity_millicores, n.draining, n.lease_expires_at > now(),
                       (extract(epoch FROM n.lease_expires_at - now()) * 1000)::bigint
                FROM stage_placement p JOIN node n ON n.node_id = p.node_id AND n.incarnation = p.incarnation
                WHERE p.stage_arn = \(stageArn)
                """, logger: self.logger)
            for try await (nodeId, incarnation, cost, internalURL, apiURL, rtmpURL, whipURL, capacity, draining, live, remaining)
                in rows.decode((String, Int64, Int, String, String, String?, String?, Int, Bool, Bool, Int64).self) {
                let node = FleetNodeStatus(
                    registration: FleetNodeRegistration(nodeId: nodeId, internalURL: internalURL, apiURL: apiURL, rtmpURL: rtmpURL,
                                                        whipURL: whipURL, capacityMillicores: capacity),
                    incarnation: incarnation, draining: draining, live: live, leaseRemainingMs: remaining,
                    reservedMillicores: cost, stages: [stageArn])
                return (StagePlacement(stageArn: stageArn, nodeId: nodeId, incarnation: incarnation, costMillicores: cost), node)
            }
            return nil
        }
    }

    /// Sets what the stage's placement reserves on the node that holds it. A rise is refused
    /// (false, nothing changed) when the node's other placements leave too little room, and
    /// so is any change by an incarnation that no longer holds the stage.
    public func setPlacementCost(stageArn: String, nodeId: String, incarnation: Int64, costMillicores: Int) async throws(PersistenceError)
        -> Bool {
        try await transaction { connection in
            let nodeRows = try await connection.query("""
                SELECT capacity_millicores FROM node WHERE node_id = \(nodeId) AND incarnation = \(incarnation) FOR UPDATE
                """, logger: self.logger)
            var capacity: Int?
            for try await value in nodeRows.decode(Int.self) { capacity = value }
            guard let capacity else { return false }
            let others = try await connection.query("""
                SELECT COALESCE(sum(cost_millicores), 0)::bigint FROM stage_placement
                WHERE node_id = \(nodeId) AND incarnation = \(incarnation) AND stage_arn <> \(stageArn)
                """, logger: self.logger)
            var reserved: Int64 = 0
            for try await value in others.decode(Int64.self) { reserved = value }
            let current = try await connection.query("""
                SELECT cost_millicores FROM stage_placement
                WHERE stage_arn = \(stageArn) AND node_id = \(nodeId) AND incarnation = \(incarnation) FOR UPDATE
                """, logger: self.logger)
            var held: Int?
            for try await value in current.decode(Int.self) { held = value }
            guard let held else { return false }
            if costMillicores > held && reserved &+ Int64(costMillicores) > Int64(capacity) { return false }
            try await connection.query("""
                UPDATE stage_placement SET cost_millicores = \(costMillicores) WHERE stage_arn = \(stageArn)
                """, logger: self.logger)
            return true
        }
    }

    /// Publishes this node's participant-token public key, so every node verifies the
    /// tokens any node issued (keys stay after their node is gone: its tokens still verify).
    public func putTokenKey(arn: String, publicKeyPEM: String) async throws(PersistenceError) {
        _ = try await run {
            try await self.client.query("""
                INSERT INTO fleet_token_key (arn, public_key_pem) VALUES (\(arn), \(publicKeyPEM))
                ON CONFLICT (arn) DO UPDATE SET public_key_pem = EXCLUDED.public_key_pem
                """, logger: self.logger)
            return true
        }
    }

    /// Every node's token public key, by ARN.
    public func tokenKeys() async throws(PersistenceError) -> [String: String] {
        try await run {
            var keys: [String: String] = [:]
            let rows = try await self.client.query("SELECT arn, public_key_pem FROM fleet_token_key", logger: self.logger)
            for try await (arn, pem) in rows.decode((String, String).self) { keys[arn] = pem }
            return keys
        }
    }

    /// Frees a stage's placement, only for the incarnation that holds it (a fenced node's late
    /// release changes nothing). Returns whether it did.
    public func releasePlacement(stageArn: String, nodeId: String, incarnation: Int64) async throws(PersistenceError) -> Bool {
        try await run {
            let rows = try await self.client.query("""
                DELETE FROM stage_placement WHERE stage_arn = \(stageArn) AND node_id = \(nodeId) AND incarnation = \(incarnation)
                RETURNING 1
                """, logger: self.logger)
            var released = false
            for try await _ in rows.decode(Int.self) { released = true }
            return released
        }
    }

    /// Removes this incarnation (a node leaving on purpose) with its placements.
    public func deregister(nodeId: String, incarnation: Int64) async throws(PersistenceError) {
        try await transaction { connection in
            _ = try await Self.releasePlacements(of: nodeId, incarnation: incarnation, connection, self.logger)
            try await connection.query("DELETE FROM node WHERE node_id = \(nodeId) AND incarnation = \(incarnation)", logger: self.logger)
        }
    }

    /// Takes the node out of placement (SIGTERM, `nodes drain`): it keeps what it runs.
    public func setDraining(nodeId: String, incarnation: Int64, _ draining: Bool) async throws(PersistenceError) {
        _ = try await run {
            try await self.client.query("""
                UPDATE node SET draining = \(draining) WHERE node_id = \(nodeId) AND incarnation = \(incarnation)
                """, logger: self.logger)
            return true
        }
    }

    /// Every registered node with its lease, load and stages (`stage-compositor nodes`).
    public func fleetNodes() async throws(PersistenceError) -> [FleetNodeStatus] {
        try await transaction { connection in
            let rows = try await connection.query("""
                SELECT node_id, incarnation, internal_url, api_url, rtmp_url, whip_url, capacity_millicores, draining,
                       lease_expires_at > now(), (extract(epoch FROM lease_expires_at - now()) * 1000)::bigint, measured_millicores
                FROM node ORDER BY node_id
                """, logger: self.logger)
            var nodes: [FleetNodeStatus] = []
            for try await (id, incarnation, internalURL, apiURL, rtmpURL, whipURL, capacity, draining, live, remaining, measured)
                in rows.decode((String, Int64, String, String, String?, String?, Int, Bool, Bool, Int64, Int).self) {
                nodes.append(FleetNodeStatus(
                    registration: FleetNodeRegistration(nodeId: id, internalURL: internalURL, apiURL: apiURL, rtmpURL: rtmpURL,
                                                        whipURL: whipURL, capacityMillicores: capacity),
                    incarnation: incarnation, draining: draining, live: live, leaseRemainingMs: remaining,
                    reservedMillicores: 0, measuredMillicores: measured, stages: []))
            }
            let placements = try await connection.query("""
                SELECT stage_arn, node_id, incarnation, cost_millicores FROM stage_placement ORDER BY stage_arn
                """, logger: self.logger)
            for try await (stage, nodeId, incarnation, cost) in placements.decode((String, String, Int64, Int).self) {
                guard let index = nodes.firstIndex(where: { $0.registration.nodeId == nodeId && $0.incarnation == incarnation }) else { continue }
                nodes[index].reservedMillicores &+= cost
                nodes[index].stages.append(stage)
            }
            return nodes
        }
    }
}
