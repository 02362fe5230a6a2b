// The fleet's event outbox in process, on a PostgreSQL server the test starts: two nodes
// publish, and every event reaches the sinks once, delivered by the one node holding the
// outbox lease, each node's events in the order it made them; a node that may not deliver
// (its own lease gone) delivers nothing. What the fleet daemon tests saw only through webhooks.
import EventSinks
import Events
import Fleet
import Foundation
import Logging
import PostgresStore
@testable import Server
import ServiceLifecycle
import TestSupport
import Testing

@Suite struct FleetEventOutboxTests {
    static let stage = "arn:aws:ivs:us-east-1:123456789012:stage/OutboxStage1"

    static func node(_ id: String) -> FleetNodeRegistration {
        FleetNodeRegistration(nodeId: id, internalURL: "http://127.0.0.1:1", apiURL: "http://127.0.0.1:1", rtmpURL: nil, whipURL: nil,
                              capacityMillicores: 1_000)
    }

    static func event(_ participant: String) -> IVSEvent {
        CompositionEventBuilder(region: "us-east-1", account: "123456789012", secondsSince1970: { 1_800_000_000 })
            .stageUpdate(.participantPublished, stageArn: stage, sessionId: "st-1", userId: "u", participantId: participant)
    }

    /// Runs nodes "a" and "b"'s outboxes; `aMayDeliver` is a's own lease. Returns what each sink got.
    static func run(aMayDeliver: Bool, published: Int) async throws -> (a: [String], b: [String], backlog: [Int]) {
        var logger = Logger(label: "outbox-tests")
        logger.logLevel = .warning
        let url = try PostgresDatabaseURL.parse(try PostgresTestServer.shared().database()).get()
        return try await PostgresCompositionStore.withStore(url: url, callTimeout: .seconds(600), logger: logger) { store in
            let a = try await store.register(node("a"), ttlMs: 600_000), b = try await store.register(node("b"), ttlMs: 600_000)
            let sinkA = InMemoryEventSink(), sinkB = InMemoryEventSink()
            let outboxA = FleetEventOutbox(store: store, nodeId: "a", incarnation: a.incarnation, sinks: sinkA,
                                           mayDeliver: { aMayDeliver }, logger: logger)
            let outboxB = FleetEventOutbox(store: store, nodeId: "b", incarnation: b.incarnation, sinks: sinkB,
                                           mayDeliver: { true }, logger: logger)
            for index in 0..<published {
                await outboxA.publish(event("a\(index)"))
                await outboxB.publish(event("b\(index)"))
            }
            // Published, not yet in the database (the outboxes do not run yet): /metrics's backlog.
            let waiting = outboxA.backlog.notAppended + outboxB.backlog.notAppended
            let group = ServiceGroup(configuration: .init(services: [outboxA, outboxB], logger: logger))
            let running = Task { try await group.run() }
            // Delivered within a few lease polls (1 s each); 120 s only bounds a failure on a
            // machine running the whole suite.
            let deadline = ContinuousClock.now + .seconds(120)
            while sinkA.events.count + sinkB.events.count < 2 * published, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            try await Task.sleep(for: .milliseconds(1_500))
            let drained = [outboxA.backlog.notAppended, outboxA.backlog.notDelivered, outboxB.backlog.notAppended,
                           outboxB.backlog.notDelivered]
            await group.triggerGracefulShutdown()
            try await running.value
            func participants(_ sink: InMemoryEventSink) -> [String] { sink.events.map { $0.detail.participantId ?? "?" } }
            return (participants(sinkA), participants(sinkB), [waiting] + drained)
        }
    }

    @Test("two nodes' events are each delivered once, by the lease holder, each node's in the order it made them")
    func deliveredOnceInOrder() async throws {
        let (a, b, backlog) = try await Self.run(aMayDeliver: true, published: 6)
        #expect(backlog == [12, 0, 0, 0, 0], "waiting before, then none appended or undelivered: \(backlog)")
        let delivered = a + b
        #expect(a.isEmpty || b.isEmpty, "one node delivers: a \(a), b \(b)")
        #expect(delivered.count == 12 && Set(delivered).count == 12, "\(delivered)")
        #expect(delivered.filter { $0.hasPrefix("a") } == (0..<6).map { "a\($0)" })
        #expect(delivered.filter { $0.hasPrefix("b") } == (0..<6).map { "b\($0)" })
    }

    @Test("a node whose own lease is gone delivers nothing; the other delivers everything")
    func aNodeWithoutItsLeaseDeliversNothing() async throws {
        let (a, b, _) = try await Self.run(aMayDeliver: false, published: 4)
        #expect(a.isEmpty, "\(a)")
        #expect(b.count == 8 && Set(b).count == 8, "\(b)")
    }
}
