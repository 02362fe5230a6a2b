// This daemon as a node of the PostgreSQL database it keeps its state in: registered as a new
// incarnation when it starts, its lease renewed every heartbeat (LeaseKeeper decides, on the
// monotonic clock), and stopped — fenced — when the lease is lost, so that a node cut off from
// the database never goes on as if it still owned its stages. Nodes whose leases ran out are
// reaped once this one has renewed without a break for a full lease.
//
// Until compositions and stages carry their owner, one database serves one live node: a
// daemon refuses to start while another node's lease is valid (two would each take the
// other's compositions for its own crash leftovers).
import Fleet
import Foundation
import Logging
import Persistence
import PostgresStore
import ServiceLifecycle
import Synchronization

struct FleetMemberError: Error, CustomStringConvertible {
    var description: String
}

final class FleetMember: Service {
    let store: PostgresCompositionStore
    let registration: FleetNodeRegistration
    let incarnation: Int64
    private let keeper: Mutex<LeaseKeeper>
    private let origin: ContinuousClock.Instant
    private let logger: Logger

    private init(store: PostgresCompositionStore, registration: FleetNodeRegistration, incarnation: Int64, keeper: LeaseKeeper,
                 origin: ContinuousClock.Instant, logger: Logger) {
        self.store = store
        self.registration = registration
        self.incarnation = incarnation
        self.keeper = Mutex(keeper)
        self.origin = origin
        self.logger = logger
    }

    /// Registers `registration` as a new incarnation, unless another node holds the database.
    static func join(store: PostgresCompositionStore, registration: FleetNodeRegistration, settings: LeaseKeeper.Settings,
                     logger: Logger) async throws -> FleetMember {
        let others = try await store.fleetNodes().filter { $0.live && $0.registration.nodeId != registration.nodeId }
        if let other = others.first {
            throw FleetMemberError(description: """
                another daemon uses this database: node \(other.registration.nodeId) (incarnation \(other.incarnation), \
                API \(other.registration.apiURL)), its lease valid for \(other.leaseRemainingMs) ms more. One node per \
                database until fleet mode; stop it, or wait for its lease to run out if it is gone
                """)
        }
        let origin = ContinuousClock.now
        var keeper = LeaseKeeper(settings: settings)
        let (incarnation, previous) = try await store.register(registration, ttlMs: settings.ttlMs)
        keeper.registered(sentAt: 0)
        var metadata: Logger.Metadata = ["node": "\(registration.nodeId)", "incarnation": "\(incarnation)",
                                         "lease.ttl.ms": "\(settings.ttlMs)"]
        if let previous {
            metadata["previous.incarnation"] = "\(previous.incarnation)"
            metadata["previous.stages"] = "\(previous.stages.count)"
        }
        logger.notice("registered in the database as a new incarnation", metadata: metadata)
        return FleetMember(store: store, registration: registration, incarnation: incarnation, keeper: keeper, origin: origin,
                           logger: logger)
    }

    private var elapsedMs: Int64 {
        let elapsed = ContinuousClock.now - origin
        return elapsed.components.seconds &* 1000 &+ elapsed.components.attoseconds / 1_000_000_000_000_000
    }

    /// Whether this node still owns what it runs (false once fenced).
    var isOwner: Bool { keeper.withLock { $0.check(at: elapsedMs) } }

    func run() async throws {
        let settings = keeper.withLock { $0.settings }
        logger.info("lease heartbeat started", metadata: ["heartbeat.ms": "\(settings.heartbeatMs)"])
        while !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(settings.heartbeatMs)) }
            } catch {
                break
            }
            try await heartbeat()
        }
        // Leaving on purpose: the row goes, so nobody waits for the lease to run out.
        do {
            try await store.deregister(nodeId: registration.nodeId, incarnation: incarnation)
            logger.notice("left the database's nodes", metadata: ["node": "\(registration.nodeId)"])
        } catch {
            logger.warning("could not deregister; the lease will run out", metadata: ["error": "\(error)"])
        }
    }

    /// One renewal; throws (stopping the daemon) when the node has fenced itself.
    func heartbeat() async throws {
        let sent = elapsedMs
        do {
            let renewed = try await store.renew(nodeId: registration.nodeId, incarnation: incarnation,
                                                ttlMs: keeper.withLock { $0.settings.ttlMs })
            let now = elapsedMs
            keeper.withLock { renewed ? $0.renewed(sentAt: sent, at: now) : $0.renewalRefused() }
        } catch {
            keeper.withLock { $0.renewalFailed() }
            logger.warning("lease renewal failed", metadata: ["error": "\(error)"])
        }
        let now = elapsedMs
        let (owner, state, mayReap) = keeper.withLock { keeper in (keeper.check(at: now), keeper.state, keeper.mayReap(at: now)) }
        guard owner else {
            let reason: String
            if case .fenced(let why) = state { reason = why } else { reason = "lease lost" }
            logger.critical("fenced itself: stopping, writing nothing more as this incarnation",
                            metadata: ["node": "\(registration.nodeId)", "incarnation": "\(incarnation)", "reason": "\(reason)"])
            throw FleetMemberError(description: "fenced: \(reason)")
        }
        guard mayReap else { return }
        do {
            for lost in try await store.reapExpired() {
                logger.warning("reaped a node whose lease ran out", metadata: [
                    "node": "\(lost.nodeId)", "incarnation": "\(lost.incarnation)", "stages": "\(lost.stages.joined(separator: ","))"])
            }
        } catch {
            logger.warning("reaping failed", metadata: ["error": "\(error)"])
        }
    }
}
