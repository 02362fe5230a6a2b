// A fleet node's events go through the database's outbox (PostgresOutbox): appended here in
// the order they were made, delivered to the configured sinks by whichever node holds the
// outbox lease, in the order of the outbox. So a stage's updates and a composition's changes
// reach a webhook in order even when different nodes made them (a failover), once each in
// steady state (at least once across a delivering node's death).
//
// The database being out delays events, it does not lose them: appends are retried in order;
// at shutdown, what still cannot be appended is delivered by this node directly.
import EventSinks
import Events
import Foundation
import Logging
import MediaCore
import Persistence
import PostgresStore
import ServiceLifecycle
import Synchronization

final class FleetEventOutbox: EventSink, Service {
    private let store: PostgresCompositionStore
    private let nodeId: String
    private let incarnation: Int64
    /// The configured sinks (file, standard output, webhook) this node delivers to.
    private let sinks: any EventSink
    private let logger: Logger
    /// Whether this node still holds its own lease (a node paused past it delivers nothing).
    private let mayDeliver: @Sendable () -> Bool
    private let (appended, appender) = AsyncStream<IVSEvent>.makeStream()
    private let writerDone = Atomic<Bool>(false)
    /// How long the outbox lease lasts without renewal, and how often pending events are looked for.
    static let leaseTtlMs: Int64 = 5_000
    /// The holder delivers when the database's doorbell rings (NOTIFY on every append, heard
    /// through LISTEN) and looks anyway once a second, when it renews its lease (a ring lost
    /// to a reconnect waits that long at most); the other nodes try to take the lease once a second.
    static let pollInterval = Duration.milliseconds(1_000)
    static let claimIntervalMs: Int64 = 1_000
    /// Rung when any node appends an event.
    private let doorbell = ChangeSignal()
    /// When this node last took or renewed the outbox lease (monotonic ms), while it holds it.
    private let heldSince = Mutex<ContinuousClock.Instant?>(nil)

    /// Events published here and not yet in the database, and those the delivering node found
    /// undelivered at its last look (0 on the other nodes), for /metrics.
    private let notAppended = Atomic<Int>(0)
    private let notDelivered = Atomic<Int>(0)
    var backlog: (notAppended: Int, notDelivered: Int) {
        (notAppended.load(ordering: .relaxed), notDelivered.load(ordering: .relaxed))
    }
    /// Told of each failed call to the database, by operation (outbox_append, outbox_deliver).
    private let databaseError: @Sendable (String) -> Void

    init(store: PostgresCompositionStore, nodeId: String, incarnation: Int64, sinks: any EventSink,
         mayDeliver: @escaping @Sendable () -> Bool, databaseError: @escaping @Sendable (String) -> Void = { _ in }, logger: Logger) {
        self.mayDeliver = mayDeliver
        self.databaseError = databaseError
        self.store = store
        self.nodeId = nodeId
        self.incarnation = incarnation
        self.sinks = sinks
        var logger = logger
        logger[metadataKey: "component"] = "outbox"
        self.logger = logger
    }

    func publish(_ event: IVSEvent) async {
        notAppended.add(1, ordering: .relaxed)
        appender.yield(event)
    }

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.writeLoop() }
            group.addTask { await self.deliverLoop() }
            group.addTask { await self.listenLoop() }
            try? await gracefulShutdown()
            // What was published before shutdown is appended (or delivered here), then the
            // deliverer makes a last pass and gives the lease up.
            self.appender.finish()
            await group.next()
            await group.next()
            group.cancelAll() // the listener
            await group.waitForAll()
        }
    }

    private func writeLoop() async {
        defer { writerDone.store(true, ordering: .releasing) }
        for await event in appended {
            defer { notAppended.subtract(1, ordering: .relaxed) }
            let document: String
            do { document = try StoredDocument.encode(event) } catch {
                logger.error("event cannot be encoded; dropped", metadata: ["error": "\(error)"])
                continue
            }
            var attempts = 0
            while true {
                do {
                    if try await store.appendOutboxEvent(document, nodeId: nodeId, incarnation: incarnation) { break }
                    logger.error("event not appended: this node's lease is gone (fenced)", metadata: ["event": "\(event.detail.eventName)"])
                    break
                } catch {
                    attempts += 1
                    databaseError("outbox_append")
                    if Task.isShuttingDownGracefully && attempts >= 3 {
                        // Shutting down with the database out: delivered from here rather than lost.
                        logger.warning("outbox unreachable at shutdown; event delivered by this node directly",
                                       metadata: ["event": "\(event.detail.eventName)", "error": "\(error)"])
                        await sinks.publish(event)
                        break
                    }
                    if attempts == 1 || attempts % 20 == 0 {
                        logger.warning("event not appended yet; retrying", metadata: ["attempts": "\(attempts)", "error": "\(error)"])
                    }
                    try? await Task.sleep(for: .milliseconds(min(2_000, 100 * attempts)))
                }
            }
        }
    }

    /// Hears the database's doorbell for as long as the outbox runs, listening again a second
    /// after a failure (the database restarting).
    private func listenLoop() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await store.listenForOutboxEvents(rang: { [doorbell] in doorbell.signal() })
            } catch {
                if Task.isCancelled { return }
                failures &+= 1
                if failures == 1 || failures % 60 == 0 {
                    logger.info("not hearing the outbox doorbell; looking once a second meanwhile", metadata: ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func deliverLoop() async {
        var failures = 0
        var lastClaim: ContinuousClock.Instant?
        while true {
            let rung = doorbell.generation
            let last = writerDone.load(ordering: .acquiring)
            do {
                let now = ContinuousClock.now
                let holding = heldSince.withLock { $0 } != nil
                let claimDue = lastClaim.map { now - $0 >= .milliseconds(Self.claimIntervalMs) } ?? true
                if claimDue || last {
                    lastClaim = now
                    let held = mayDeliver() ? try await store.claimOutbox(nodeId: nodeId, incarnation: incarnation, ttlMs: Self.leaseTtlMs)
                        : false
                    heldSince.withLock { $0 = held ? now : nil }
                    if held { try await deliverPending() }
                } else if holding {
                    try await deliverPending()
                }
                failures = 0
            } catch {
                failures += 1
                databaseError("outbox_deliver")
                if failures == 1 || failures % 50 == 0 {
                    logger.warning("outbox delivery failed; retrying", metadata: ["error": "\(error)", "failures": "\(failures)"])
                }
            }
            if last { break }
            // Until an event is appended anywhere (the writer's own too) or the next look.
            await doorbell.changed(after: rung, deadline: .now + Self.pollInterval)
        }
        try? await store.releaseOutbox(nodeId: nodeId, incarnation: incarnation)
    }

    /// This node holds the outbox lease: every pending event to the sinks, in order.
    private func deliverPending() async throws(PersistenceError) {
        guard mayDeliver() else { return }
        while true {
            let pending = try await store.pendingOutboxEvents(limit: 200)
            notDelivered.store(pending.count, ordering: .relaxed)
            guard let last = pending.last else { return }
            for entry in pending {
                guard mayDeliver() else { return }
                do { await sinks.publish(try StoredDocument.decode(IVSEvent.self, from: entry.document)) } catch {
                    logger.error("outbox event cannot be read; skipped", metadata: ["sequence": "\(entry.sequence)", "error": "\(error)"])
                }
            }
            guard try await store.markOutboxDelivered(upTo: last.sequence, nodeId: nodeId, incarnation: incarnation) else {
                logger.warning("outbox lease lost while delivering; the next holder goes on from the first undelivered event")
                heldSince.withLock { $0 = nil }
                return
            }
            if pending.count < 200 {
                notDelivered.store(0, ordering: .relaxed)
                return
            }
        }
    }
}
