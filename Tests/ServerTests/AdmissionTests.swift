// One admission path for every publisher kind, in process (the stage runtime on the in-memory
// store): an RTMP stream key and a WHIP token meet the same rules in the same order and are
// refused with their protocol's codes; a replica meets them too, as API errors.
import APIModels
import Foundation
import LiveStage
import Persistence
@testable import Server
import Testing

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
