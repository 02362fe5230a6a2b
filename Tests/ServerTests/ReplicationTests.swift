// Participant replication's rules, in process: the control plane and the stage runtime on the
// in-memory store, publishers admitted as WHIP participants are (no media is needed for these
// rules). A replica is never a source and never closes a cycle; DisconnectParticipant and
// DeleteStage end a replica on both stages; the destination's publisher quota holds; a
// replica is no reconnect of its own source; a forwarder that stops advancing stops.
import APIModels
import EventSinks
import Foundation
import IngestServer
import LiveStage
import Logging
import MediaCore
import Persistence
import Prometheus
@testable import Server
import Stages
import TestSupport
import Testing

@Suite struct ReplicationTests {
    static let stageA = "arn:aws:ivs:us-east-1:123456789012:stage/ReplicaStgA1"
    static let stageB = "arn:aws:ivs:us-east-1:123456789012:stage/ReplicaStgB1"
    static let stageC = "arn:aws:ivs:us-east-1:123456789012:stage/ReplicaStgC1"

    struct Harness {
        let plane: ControlPlane<InMemoryCompositionStore>
        let runtime: StageRuntime<InMemoryCompositionStore>
        let store: InMemoryCompositionStore
        let running: Task<Void, Never>
        let events: InMemoryEventSink
        let registry: PrometheusCollectorRegistry

        func call(_ operation: APIOperation, _ request: some Encodable) async throws(APIError) -> Data {
            try await plane.handle(.init(operation: operation), query: "", body: try! JSONEncoder().encode(request))
        }

        /// Admits `participantId` to `stageArn` as a WHIP publisher; returns its publication.
        func publish(_ participantId: String, on stageArn: String) async throws -> any IngestPublication {
            let decision = await runtime.admit(TokenParticipant(stageArn: stageArn, participantId: participantId, userId: participantId,
                                                                attributes: [:]), remoteAddress: "127.0.0.1:1", disconnect: { _ in })
            guard case .accepted(let publication) = decision else { throw APIError.conflict("refused: \(decision)") }
            return publication
        }

        /// The participant's state on the stage's latest session, once it is `state` (the
        /// runtime applies leaves from its inbox at once; 60 s only bounds a failure, on a
        /// machine running the whole suite in parallel).
        func wait(_ participantId: String, on stageArn: String, to state: ParticipantState) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                // Over every session of the stage (a rejoin opens a new one, and two sessions
                // started within a second do not sort by time): CONNECTED in one, or in none.
                var states: [ParticipantState] = []
                for stored in try await store.stageSessions(stageArn: stageArn) {
                    guard let session = stored.session.sessionId,
                          let found = try await store.participant(stageArn: stageArn, sessionId: session, participantId: participantId)
                    else { continue }
                    if let participantState = found.participant.state { states.append(participantState) }
                }
                if state == .connected ? states.contains(.connected) : (!states.isEmpty && !states.contains(.connected)) { return }
                try await Task.sleep(for: .milliseconds(10))
            }
            Issue.record("\(participantId) on \(stageArn) did not become \(state)")
        }

        func events(_ participantId: String, on stageArn: String) async throws -> [ParticipantEvent] {
            guard let session = try await store.stageSessions(stageArn: stageArn).last?.session.sessionId else { return [] }
            return try await store.participantEvents(stageArn: stageArn, sessionId: session, participantId: participantId)
        }

        func replicas(_ participantId: String, of stageArn: String) async -> [ParticipantReplica] {
            await runtime.replicas(sourceStageArn: stageArn, participantId: participantId)
        }
    }

    /// `wallClock`: the runtime's (a fixed one where a test counts in wall time, e.g. the
    /// refusal events' one-a-minute rate, which a slow machine would otherwise cross).
    static func harness(publishersPerStage: Int = 12, wallClock: @escaping @Sendable () -> Date = Date.init) async throws -> Harness {
        var configuration = ServerConfiguration(
            buckets: ["rec-bucket": .directory(FileManager.default.temporaryDirectory.appendingPathComponent("rec-\(UUID())").path)])
        configuration.quotas.publishersPerStage = publishersPerStage
        let store = InMemoryCompositionStore()
        for arn in [stageA, stageB, stageC] {
            try await store.putStage(StoredStage(stage: Stage(arn: arn, name: "s", tags: [:]), sourcePath: ""))
        }
        let logger = Logger(label: "replication-tests")
        let hub = LiveStageHub(clock: ManualMediaClock())
        let buckets = try BucketService(configuration: configuration, environment: [:], logger: logger)
        let manager = CompositionManager(configuration: configuration, store: store, events: InMemoryEventSink(),
                                         launcher: FakePipelineLauncher(), buckets: buckets, hub: hub, clock: ManualMediaClock(),
                                         metrics: nil, logger: logger)
        let events = InMemoryEventSink(), registry = PrometheusCollectorRegistry()
        let runtime = StageRuntime(configuration: configuration, store: store, events: events, hub: hub, wallClock: wallClock,
                                   metrics: ServerMetrics(factory: PrometheusMetricsFactory(registry: registry)), logger: logger)
        let running = Task { _ = try? await runtime.run() }
        return Harness(plane: ControlPlane(configuration: configuration, store: store, manager: manager, runtime: runtime),
                       runtime: runtime, store: store, running: running, events: events, registry: registry)
    }

    static func start(_ source: String, _ destination: String, window: Int = 0) -> StartParticipantReplicationRequest {
        StartParticipantReplicationRequest(sourceStageArn: source, destinationStageArn: destination, participantId: "p",
                                           reconnectWindowSeconds: window)
    }

    static func code(_ body: () async throws(APIError) -> Data) async -> APIError.Code? {
        do { _ = try await body() } catch { return error.code }
        return nil
    }

    @Test("a replica is never a source: B → A after A → B and the source left is refused, so no loop forms")
    func noReplicaOfAReplica() async throws {
        let h = try await Self.harness()
        defer { h.running.cancel() }
        let p = try await h.publish("p", on: Self.stageA)
        _ = try await h.call(.startParticipantReplication, Self.start(Self.stageA, Self.stageB, window: 60))
        p.ended(reason: "left")
        try await h.wait("p", on: Self.stageA, to: .disconnected)
        // The A → B replica waits for its source within the window, and is on B meanwhile.
        #expect(await h.replicas("p", of: Self.stageA).map(\.replicationState) == [.active])
        #expect(await Self.code { () async throws(APIError) in
            try await h.call(.startParticipantReplication, Self.start(Self.stageB, Self.stageA, window: 60))
        } == .conflict)
        // Nor further on: B's replica of p is no source for C either.
        #expect(await Self.code { () async throws(APIError) in
            try await h.call(.startParticipantReplication, Self.start(Self.stageB, Self.stageC))
        } == .conflict)
        #expect(await h.replicas("p", of: Self.stageB).isEmpty)
        _ = try await h.call(.stopParticipantReplication, StopParticipantReplicationRequest(
            sourceStageArn: Self.stageA, destinationStageArn: Self.stageB, participantId: "p"))
        try await h.wait("p", on: Self.stageB, to: .disconnected)
    }

    @Test("DisconnectParticipant of a replica ends its replication, with REPLICATION_STARTED and _STOPPED on both stages")
    func disconnectEndsAReplica() async throws {
        let h = try await Self.harness()
        defer { h.running.cancel() }
        let p = try await h.publish("p", on: Self.stageA)
        _ = try await h.publish("q", on: Self.stageB)
        _ = try await h.call(.startParticipantReplication, Self.start(Self.stageA, Self.stageB, window: 60))
        try await h.wait("p", on: Self.stageB, to: .connected)
        _ = try await h.call(.disconnectParticipant, DisconnectParticipantRequest(stageArn: Self.stageB, participantId: "p"))
        try await h.wait("p", on: Self.stageB, to: .disconnected)
        #expect(await h.replicas("p", of: Self.stageA).isEmpty)
        let names = { (events: [ParticipantEvent]) in events.compactMap(\.name).filter { $0.rawValue.hasPrefix("REPLICATION") } }
        let onA = try await h.events("p", on: Self.stageA), onB = try await h.events("p", on: Self.stageB)
        #expect(names(onA) == [.replicationStarted, .replicationStopped])
        #expect(names(onB) == [.replicationStarted, .replicationStopped])
        #expect(onA.filter { $0.name == .replicationStopped }.allSatisfy { $0.replica == false && $0.destinationStageArn == Self.stageB })
        #expect(onB.filter { $0.name == .replicationStopped }.allSatisfy { $0.replica == true && $0.destinationStageArn == Self.stageB })
        // The source goes on publishing on A: only its replica was disconnected.
        #expect(await h.runtime.activeSessionId(stageArn: Self.stageA) != nil)
        p.ended(reason: "done")
    }

    @Test("DeleteStage of the destination ends the replica at once, whatever its reconnect window")
    func deleteStageEndsAReplica() async throws {
        let h = try await Self.harness()
        defer { h.running.cancel() }
        _ = try await h.publish("p", on: Self.stageA)
        _ = try await h.call(.startParticipantReplication, Self.start(Self.stageA, Self.stageB, window: 60))
        try await h.wait("p", on: Self.stageB, to: .connected)
        _ = try await h.call(.deleteStage, DeleteStageRequest(arn: Self.stageB))
        try await h.wait("p", on: Self.stageB, to: .disconnected)
        #expect(await h.replicas("p", of: Self.stageA).isEmpty)
        #expect(await h.runtime.activeSessionId(stageArn: Self.stageB) == nil)
    }

    @Test("a replica counts against the destination's publishersPerStage")
    func destinationQuota() async throws {
        let h = try await Self.harness(publishersPerStage: 1)
        defer { h.running.cancel() }
        _ = try await h.publish("p", on: Self.stageA)
        _ = try await h.publish("q", on: Self.stageB)
        #expect(await Self.code { () async throws(APIError) in
            try await h.call(.startParticipantReplication, Self.start(Self.stageA, Self.stageB))
        } == .serviceQuotaExceeded)
        #expect(await h.replicas("p", of: Self.stageA).isEmpty)
    }

    @Test("a replica of the participant on its source's stage is not taken for the source reconnecting")
    func replicaIsNoReconnect() {
        let hub = LiveStageHub(clock: ManualMediaClock())
        let source = hub.join(stageArn: Self.stageA, identity: LiveParticipantIdentity(participantId: "p", userId: "u", attributes: [:]))
        source.leave()
        let replica = hub.join(stageArn: Self.stageA, identity: LiveParticipantIdentity(participantId: "p", userId: "u", attributes: [:],
                                                                                       replicaOf: Self.stageC))
        #expect(ReplicaForwarder.reconnect(of: source, among: hub.publishers(stageArn: Self.stageA)) == nil)
        replica.leave()
        let back = hub.join(stageArn: Self.stageA, identity: LiveParticipantIdentity(participantId: "p", userId: "u", attributes: [:]))
        #expect(ReplicaForwarder.reconnect(of: source, among: hub.publishers(stageArn: Self.stageA)) === back)
    }

    @Test("forwarding stops when packets keep coming for 3 s without a later timestamp, and not before")
    func forwardProgress() {
        // A live source: timestamps advance, whatever the rate.
        var live = ForwardProgress()
        var liveStalls = 0
        for index in 0..<10_000 where live.forwarded(dts: Int64(index) * 1000, at: .milliseconds(index)) { liveStalls += 1 }
        #expect(liveStalls == 0)
        // A keyframe cache replayed at a reconnect: a burst of old timestamps, then live again.
        var replay = ForwardProgress()
        _ = replay.forwarded(dts: 1_000_000, at: .zero)
        var replayStalls = 0
        for index in 0..<250 where replay.forwarded(dts: Int64(index), at: .milliseconds(index * 20)) { replayStalls += 1 }
        if replay.forwarded(dts: 1_000_001, at: .seconds(5)) { replayStalls += 1 }
        #expect(replayStalls == 0)
        // A loop: the same GOP over and over.
        var loop = ForwardProgress()
        var stalledAt: Int?
        for round in 0..<100 where stalledAt == nil {
            for index in 0..<60 where stalledAt == nil {
                if loop.forwarded(dts: Int64(index) * 33_333, at: .milliseconds(round * 100 + index)) { stalledAt = round }
            }
        }
        // Stalled once both bounds are passed: 3 s in (round 30), far beyond 300 packets.
        #expect(stalledAt == 30)
    }

    @Test("a replication cycle is any path back: found by the graph as by brute force on every small graph")
    func graphPaths() {
        let stages = ["a", "b", "c", "d"]
        let pairs = stages.flatMap { s in stages.compactMap { d in s == d ? nil : (s, d) } }
        var generator = SeededGenerator(seed: 38)
        for _ in 0..<400 {
            let edges = pairs.filter { _ in Bool.random(using: &generator) }
            let graph = ReplicationGraph(edges: edges)
            for start in stages {
                // Brute force: the stages reachable from start.
                var reachable: Set<String> = [start]
                var changed = true
                while changed {
                    changed = false
                    for (s, d) in edges where reachable.contains(s) && !reachable.contains(d) { reachable.insert(d); changed = true }
                }
                for goal in stages {
                    let path = graph.path(from: start, to: goal)
                    #expect((path != nil) == reachable.contains(goal))
                    if let path {
                        #expect(path.first == start && path.last == goal)
                        #expect(zip(path, path.dropFirst()).allSatisfy { step in edges.contains { $0 == step } })
                    }
                }
            }
        }
    }
}
