// This daemon as a node of the PostgreSQL database it keeps its state in: registered as a new
// incarnation when it starts, its lease renewed every heartbeat (LeaseKeeper decides, on the
// monotonic clock), and stopped — fenced — when the lease is lost, so that a node cut off from
// the database never goes on as if it still owned its stages. Nodes whose leases ran out are
// reaped once this one has renewed without a break for a full lease.
//
// Without fleet mode, one database serves one live node: a daemon refuses to start while
// another node's lease is valid. In fleet mode every node's stage writes are fenced by its
// lease (PostgresCompositionStore.fenceWrites), and what a lost node held is handed to
// `takeOver` of the node that reaped it.
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
    /// What this process uses, sent with every renewal (placement counts it).
    private let load = Mutex(MeasuredLoad())
    private let origin: ContinuousClock.Instant
    private let logger: Logger
    /// What an older incarnation of this node held when it registered (taken over at start-up).
    let previous: LostNode?
    /// Called with every node this one reaps, once.
    private let takeOverHandler = Mutex<(@Sendable (LostNode) async -> Void)?>(nil)
    /// Reaped nodes, taken over by a child task of `run` (the heartbeat never waits for it).
    private let lost: AsyncStream<LostNode>
    private let lostContinuation: AsyncStream<LostNode>.Continuation

    private init(store: PostgresCompositionStore, registration: FleetNodeRegistration, incarnation: Int64, keeper: LeaseKeeper,
                 origin: ContinuousClock.Instant, previous: LostNode?, logger: Logger) {
        self.previous = previous
        (lost, lostContinuation) = AsyncStream.makeStream()
        self.store = store
        self.registration = registration
        self.incarnation = incarnation
        self.keeper = Mutex(keeper)
        self.origin = origin
        self.logger = logger
    }

    /// Registers `registration` as a new incarnation; unless `fleet`, only when no other node
    /// holds the database.
    static func join(store: PostgresCompositionStore, registration: FleetNodeRegistration, settings: LeaseKeeper.Settings,
                     fleet: Bool = false, logger: Logger) async throws -> FleetMember {
        let others = try await store.fleetNodes().filter { $0.live && $0.registration.nodeId != registration.nodeId }
        if !fleet, let other = others.first {
            throw FleetMemberError(description: """
                another daemon uses this database: node \(other.registration.nodeId) (incarnation \(other.incarnation), \
                API \(other.registration.apiURL)), its lease valid for \(other.leaseRemainingMs) ms more. One node per \
                database without fleet mode (database.fleet); stop it, or wait for its lease to run out if it is gone
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
        if fleet { store.fenceWrites(nodeId: registration.nodeId, incarnation: incarnation) }
        return FleetMember(store: store, registration: registration, incarnation: incarnation, keeper: keeper, origin: origin,
                           previous: previous, logger: logger)
    }

    private var elapsedMs: Int64 {
        let elapsed = ContinuousClock.now - origin
        return elapsed.components.seconds &* 1000 &+ elapsed.components.attoseconds / 1_000_000_000_000_000
    }

    /// This process's CPU time so far (user and system, every thread), in microseconds.
    static func processCPUMicros() -> Int64 {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        let user = Int64(usage.ru_utime.tv_sec) &* 1_000_000 &+ Int64(usage.ru_utime.tv_usec)
        let system = Int64(usage.ru_stime.tv_sec) &* 1_000_000 &+ Int64(usage.ru_stime.tv_usec)
        return user &+ system
    }

    /// The exit status of a node that fenced itself (EX_TEMPFAIL: systemd starts it again).
    static let fencedExitStatus: Int32 = 75

    /// Told of each failed call to the database (the lease's renewal), for /metrics.
    private let databaseErrorHandler = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// When the lease was last renewed (ms on this process's clock), for /metrics.
    private let lastRenewedMs = Mutex<Int64?>(nil)

    func onDatabaseError(_ handler: @escaping @Sendable (String) -> Void) { databaseErrorHandler.withLock { $0 = handler } }

    /// Seconds since the lease was last renewed (nil before the first renewal).
    var leaseAgeSeconds: Double? { lastRenewedMs.withLock { $0 }.map { Double(max(0, elapsedMs - $0)) / 1000 } }

    /// Sets what is done with each node this one reaps.
    func onTakeOver(_ handler: @escaping @Sendable (LostNode) async -> Void) {
        takeOverHandler.withLock { $0 = handler }
    }

    /// Whether this node still owns what it runs (false once fenced).
    var isOwner: Bool { keeper.withLock { $0.check(at: elapsedMs) } }

    func run() async throws {
        let settings = keeper.withLock { $0.settings }
        logger.info("lease heartbeat started", metadata: ["heartbeat.ms": "\(settings.heartbeatMs)"])
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                for await node in self.lost {
                    guard let handler = self.takeOverHandler.withLock({ $0 }) else { continue }
                    await handler(node)
                }
            }
            defer { self.lostContinuation.finish() }
            while !Task.isShuttingDownGracefully {
                do {
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(settings.heartbeatMs)) }
                } catch {
                    break
                }
                try await self.heartbeat()
            }
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
            let measured = load.withLock { load in
                load.sample(cpuMicros: Self.processCPUMicros(), wallMicros: sent &* 1000)
                return load.millicores
            }
            let renewed = try await store.renew(nodeId: registration.nodeId, incarnation: incarnation,
                                                ttlMs: keeper.withLock { $0.settings.ttlMs }, measuredMillicores: measured)
            let now = elapsedMs
            keeper.withLock { renewed ? $0.renewed(sentAt: sent, at: now) : $0.renewalRefused() }
            if renewed { lastRenewedMs.withLock { $0 = sent } }
        } catch {
            keeper.withLock { $0.renewalFailed() }
            databaseErrorHandler.withLock { $0 }?("renew")
            logger.warning("lease renewal failed", metadata: ["error": "\(error)"])
        }
        let now = elapsedMs
        let (owner, state, mayReap) = keeper.withLock { keeper in (keeper.check(at: now), keeper.state, keeper.mayReap(at: now)) }
        guard owner else {
            let reason: String
            if case .fenced(let why) = state { reason = why } else { reason = "lease lost" }
            logger.critical("fenced itself: exiting now, writing nothing more as this incarnation",
                            metadata: ["node": "\(registration.nodeId)", "incarnation": "\(incarnation)", "reason": "\(reason)"])
            // At once, not by a graceful stop: a survivor owns this node's stages now, and a
            // graceful stop would finish outputs (and write) for them. The spools stay on disk;
            // the next incarnation uploads only what it takes over itself.
            exit(Self.fencedExitStatus)
        }
        guard mayReap else { return }
        do {
            for lost in try await store.reapExpired() {
                logger.warning("reaped a node whose lease ran out", metadata: [
                    "node": "\(lost.nodeId)", "incarnation": "\(lost.incarnation)", "stages": "\(lost.stages.joined(separator: ","))"])
                lostContinuation.yield(lost)
            }
        } catch {
            logger.warning("reaping failed", metadata: ["error": "\(error)"])
        }
    }
}

/// The first service to hear SIGTERM in a fleet node: it takes the node out of placement at
/// once (no new stages come to it) while the services after it stop its ingest and let its
/// compositions finish; the membership itself leaves last.
struct FleetDrain: Service {
    let member: FleetMember
    /// How long running compositions get to end on their own.
    let timeout: Duration
    /// Waits until no composition runs here or the deadline; returns how many still run.
    let hook: DrainHook
    let logger: Logger

    /// Shut down before the application (runServer's group): marks the node draining (no new stages are placed
    /// here), lets its compositions end on their own within `timeout`, then returns, and the
    /// other services stop as they always do (what still runs is stopped and finalized).
    func run() async throws {
        try? await gracefulShutdown()
        do {
            try await member.store.setDraining(nodeId: member.registration.nodeId, incarnation: member.incarnation, true)
            logger.notice("draining: this node takes no new stages",
                          metadata: ["node": "\(member.registration.nodeId)", "drain.timeout.s": "\(timeout.components.seconds)"])
        } catch {
            logger.warning("could not mark this node draining", metadata: ["error": "\(error)"])
        }
        let started = ContinuousClock.now
        let left = await hook.waitForCompositions(until: started + timeout)
        let waited = ContinuousClock.now - started
        if left == 0 {
            logger.notice("drained: no composition runs here", metadata: ["waited": "\(waited)"])
        } else {
            logger.notice("drain timeout: stopping the compositions still running", metadata: ["compositions": "\(left)"])
        }
    }
}

/// What the drain waits on, given once the composition manager exists.
final class DrainHook: Sendable {
    private let wait = Mutex<(@Sendable (ContinuousClock.Instant) async -> Int)?>(nil)

    func install(_ body: @escaping @Sendable (ContinuousClock.Instant) async -> Int) { wait.withLock { $0 = body } }

    /// How many compositions still run at `deadline` (0 without a manager).
    func waitForCompositions(until deadline: ContinuousClock.Instant) async -> Int {
        guard let body = wait.withLock({ $0 }) else { return 0 }
        return await body(deadline)
    }
}
