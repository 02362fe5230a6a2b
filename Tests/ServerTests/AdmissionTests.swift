// One admission path for every publisher kind, in process (the stage runtime on the in-memory
// store): an RTMP stream key and a WHIP token meet the same rules in the same order and are
// refused with their protocol's codes; a replica meets them too, as API errors.
import APIModels
import Foundation
import LiveStage
import Persistence
@testable import Server
import Synchronization
import Testing

/// The connections a test's disconnect closures were asked to close.
final class Closed: Sendable {
    let names = Mutex<[String]>([])
}

@Suite struct AdmissionTests {
    static let recorded = "arn:aws:ivs:us-east-1:123456789012:stage/RecordedStg1"
    static let missing = "arn:aws:ivs:us-east-1:123456789012:stage/MissingStg1"

    enum Kind: CaseIterable { case rtmp, whip }

    /// Admits `participantId` on `stageArn` as `kind` would: RTMP with an ingest configuration
    /// of that participant (put in the store as CreateIngestConfiguration would), WHIP with a token.
    static func admit(_ h: ReplicationTests.Harness, _ kind: Kind, _ participantId: String, on stageArn: String) async throws
        -> IngestAdmissionDecision {
        switch kind {
        case .whip:
            return await h.runtime.admit(TokenParticipant(stageArn: stageArn, participantId: participantId, userId: "u-\(participantId)",
                                                          attributes: [:]), remoteAddress: "192.0.2.1:1", disconnect: { _ in })
        case .rtmp:
            let id = String(UUID().uuidString.filter { $0.isLetter || $0.isNumber }.prefix(12))
            let arn = "arn:aws:ivs:us-east-1:123456789012:ingest-configuration/\(id)"
            let key = "rt_123456789012_us-east-1_\(id)_secretsecretsecretsecret"
            try await h.store.putIngestConfiguration(StoredIngestConfiguration(configuration: IngestConfiguration(
                arn: arn, ingestProtocol: .rtmp, streamKey: key, stageArn: stageArn, participantId: participantId, state: .inactive,
                userId: "u-\(participantId)", attributes: [:], tags: [:]), insecureIngest: true))
            return await withCheckedContinuation { continuation in
                h.runtime.admit(IngestAdmissionRequest(streamKey: key, transport: .rtmp, remoteAddress: "192.0.2.1:1"),
                                disconnect: { _ in }, decide: { continuation.resume(returning: $0) })
            }
        }
    }

    static func code(_ decision: IngestAdmissionDecision) -> IngestPublishError? {
        if case .refused(let code, _) = decision { return code }
        return nil
    }

    @Test("RTMP and WHIP: a missing stage, a recorded stage, a participant already on the stage, a full stage", arguments: Kind.allCases)
    func theSameRulesInTheSameOrder(kind: Kind) async throws {
        let h = try await ReplicationTests.harness(publishersPerStage: 2)
        defer { h.running.cancel() }
        try await h.store.putStage(StoredStage(stage: Stage(arn: Self.recorded, name: "r", tags: [:]), sourcePath: "/recorded/stage"))
        let stageCode: IngestPublishError = kind == .whip ? .invalidInput : .invalidStreamKey
        #expect(Self.code(try await Self.admit(h, kind, "p1", on: Self.missing)) == stageCode)
        #expect(Self.code(try await Self.admit(h, kind, "p1", on: Self.recorded)) == stageCode)
        // The participant is on the stage already, by the other transport: its place is taken.
        let other: Kind = kind == .rtmp ? .whip : .rtmp
        #expect(Self.code(try await Self.admit(h, other, "p1", on: ReplicationTests.stageA)) == nil)
        #expect(Self.code(try await Self.admit(h, kind, "p1", on: ReplicationTests.stageA)) == .reuseOfStreamKey)
        #expect(Self.code(try await Self.admit(h, kind, "p2", on: ReplicationTests.stageA)) == nil)
        #expect(Self.code(try await Self.admit(h, kind, "p3", on: ReplicationTests.stageA)) == .quotaExceeded)
    }

    @Test("redundant ingest: the two keys are one participant; either may go, the participant leaves with the last; a key publishes once")
    func redundantIngestIsOneParticipant() async throws {
        let h = try await ReplicationTests.harness()
        defer { h.running.cancel() }
        let id = "RedundantCfg", arn = "arn:aws:ivs:us-east-1:123456789012:ingest-configuration/RedundantCfg"
        var configuration = IngestConfiguration(arn: arn, ingestProtocol: .rtmp, streamKey: "rt_123456789012_us-east-1_\(id)_primarysecretprimarysecret",
                                                stageArn: ReplicationTests.stageA, participantId: "pRed", state: .inactive, userId: "u",
                                                attributes: [:], tags: [:])
        ControlPlane<InMemoryCompositionStore>.setRedundantIngest(true, of: &configuration)
        let credentials = try #require(configuration.redundantIngestCredentials)
        let keys = credentials.compactMap(\.streamKey)
        #expect(keys.count == 2 && keys[0] == configuration.streamKey && keys[1] != keys[0])
        #expect(configuration.redundantIngestCredentials?.allSatisfy { $0.participantId == "pRed" } == true)
        try await h.store.putIngestConfiguration(StoredIngestConfiguration(configuration: configuration, insecureIngest: true))
        let closed = Closed()
        func connect(_ key: String, _ name: String) async -> IngestAdmissionDecision {
            await withCheckedContinuation { continuation in
                h.runtime.admit(IngestAdmissionRequest(streamKey: key, transport: .rtmp, remoteAddress: "192.0.2.1:1"),
                                disconnect: { _ in closed.names.withLock { $0.append(name) } }, decide: { continuation.resume(returning: $0) })
            }
        }
        guard case .accepted(let primary) = await connect(keys[0], "primary"),
              case .accepted(let backup) = await connect(keys[1], "backup") else { return #expect(Bool(false), "both keys publish") }
        #expect(Self.code(await connect(keys[1], "again")) == .reuseOfStreamKey, "each key publishes once at a time")
        #expect(Self.code(await connect(String(keys[1].dropLast()) + "x", "wrong")) == .invalidStreamKey)
        #expect(await h.runtime.hub.publishers(stageArn: ReplicationTests.stageA).map(\.identity.participantId) == ["pRed"],
                "the stage shows one participant")
        try await h.wait("pRed", on: ReplicationTests.stageA, to: .connected)
        // The primary goes: the participant stays (the backup is shown), still publishing.
        primary.ended(reason: "killed")
        try await Task.sleep(for: .milliseconds(50))
        #expect(await h.runtime.isPublishing(ingestConfigurationArn: arn))
        #expect(await h.runtime.hub.publishers(stageArn: ReplicationTests.stageA).count == 1)
        try await h.wait("pRed", on: ReplicationTests.stageA, to: .connected)
        // DisconnectParticipant closes whichever connections there are.
        #expect(await h.runtime.disconnect(stageArn: ReplicationTests.stageA, participantId: "pRed", reason: "test"))
        #expect(closed.names.withLock { $0 } == ["backup"])
        backup.ended(reason: "closed")
        try await h.wait("pRed", on: ReplicationTests.stageA, to: .disconnected)
        #expect(await !h.runtime.isPublishing(ingestConfigurationArn: arn))
        let stored = try await h.store.stageSessions(stageArn: ReplicationTests.stageA).compactMap(\.session.sessionId)
        for session in stored {
            let participant = try await h.store.participant(stageArn: ReplicationTests.stageA, sessionId: session, participantId: "pRed")
            #expect(participant?.participant.redundantIngest == true)
        }
    }

    @Test("a replica meets the same rules: the runtime refuses one into a recorded stage (ValidationException), nothing joins")
    func aReplicaIntoARecordedStage() async throws {
        let h = try await ReplicationTests.harness()
        defer { h.running.cancel() }
        try await h.store.putStage(StoredStage(stage: Stage(arn: Self.recorded, name: "r", tags: [:]), sourcePath: "/recorded/stage"))
        _ = try await h.publish("p", on: ReplicationTests.stageA)
        // The runtime's own check (the API checks it too, before).
        await #expect(throws: APIError.validation(
            "destinationStageArn: stage \(Self.recorded) is a recorded stage; replicas join live stages")) {
            try await h.runtime.startReplication(ReplicationTests.start(ReplicationTests.stageA, Self.recorded),
                                                 destination: Stage(arn: Self.recorded, name: "r", tags: [:]))
        }
        #expect(await h.replicas("p", of: ReplicationTests.stageA).isEmpty)
        #expect(await h.runtime.hub.publishers(stageArn: Self.recorded).isEmpty)
    }
}
