// A flood of publishes with a real ingest configuration's ID and a wrong secret (the ID is not
// secret: it is in the ARN and the logs) makes a few Participant Publish Error events, not one
// per attempt; the rest are counted in /metrics. In process: the stage runtime on the
// in-memory store, admission as the RTMP server asks for it.
import APIModels
import EventSinks
import Foundation
import IngestServer
import LiveStage
import Logging
import MediaCore
import Prometheus
@testable import Server
import Testing

@Suite struct IngestRefusalTests {
    @Test("400 wrong-key publishes from one address in a burst make 3 events; the rest are counted")
    func wrongKeyFlood() async throws {
        // The burst happens at one wall-clock instant, however long a loaded machine takes over
        // the 400 admissions (the limiter lets one more event through each minute).
        let now = Date()
        let h = try await ReplicationTests.harness(wallClock: { now })
        defer { h.running.cancel() }
        let created = try await h.call(.createIngestConfiguration, CreateIngestConfigurationRequest(
            stageArn: ReplicationTests.stageA, ingestProtocol: .rtmp, insecureIngest: true))
        let configuration = try #require(try JSONDecoder().decode(CreateIngestConfigurationResponse.self, from: created).ingestConfiguration)
        let key = configuration.streamKey
        let wrong = String(key.dropLast()) + (key.hasSuffix("a") ? "b" : "a")
        for attempt in 0..<400 {
            let decision = await withCheckedContinuation { continuation in
                h.runtime.admit(IngestAdmissionRequest(streamKey: wrong, transport: .rtmp, remoteAddress: "192.0.2.7:\(40_000 + attempt)"),
                                disconnect: { _ in }, decide: { continuation.resume(returning: $0) })
            }
            guard case .refused(.invalidStreamKey, _) = decision else { Issue.record("attempt \(attempt): \(decision)"); return }
        }
        let publishErrors = { h.events.events.filter { $0.detail.eventName == "Participant Publish Error" }.count }
        // (Events are written from the runtime's inbox at once; 60 s only bounds a failure.)
        let deadline = ContinuousClock.now + .seconds(60)
        while publishErrors() < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(publishErrors() == 3)
        let text = h.registry.emitToString()
        #expect(text.contains("stage_compositor_ingest_refusal_events_suppressed_total 397"))
        #expect(text.contains(#"stage_compositor_ingest_refused_total{code="INVALID_STREAM_KEY"} 400"#))
    }

    @Test("a WHIP participant revoked by DisconnectParticipant stays revoked for a restarted runtime on the same store")
    func revocationOutlivesARestart() async throws {
        let h = try await ReplicationTests.harness()
        defer { h.running.cancel() }
        let expiry = Int64(Date().timeIntervalSince1970) + 3_600
        let decision = await h.runtime.admit(TokenParticipant(stageArn: ReplicationTests.stageA, participantId: "w", userId: "w",
                                                              attributes: [:], expiresAt: expiry),
                                             remoteAddress: "127.0.0.1:1", disconnect: { _ in })
        guard case .accepted(let publication) = decision else { Issue.record("refused: \(decision)"); return }
        _ = try await h.call(.disconnectParticipant, DisconnectParticipantRequest(stageArn: ReplicationTests.stageA, participantId: "w"))
        publication.ended(reason: "disconnected")
        #expect(await h.runtime.isRevoked(stageArn: ReplicationTests.stageA, participantId: "w"))
        // Another runtime on the same store: the daemon after a restart, or another node of the fleet.
        let restarted = StageRuntime(configuration: ServerConfiguration(), store: h.store, events: InMemoryEventSink(),
                                     hub: LiveStageHub(clock: ManualMediaClock()), logger: Logger(label: "restarted"))
        #expect(await restarted.isRevoked(stageArn: ReplicationTests.stageA, participantId: "w"))
        #expect(await !restarted.isRevoked(stageArn: ReplicationTests.stageA, participantId: "someone-else"))
        // Once the token has expired, the revocation no longer matters.
        let later = StageRuntime(configuration: ServerConfiguration(), store: h.store, events: InMemoryEventSink(),
                                 hub: LiveStageHub(clock: ManualMediaClock()),
                                 wallClock: { Date(timeIntervalSince1970: TimeInterval(expiry + 1)) }, logger: Logger(label: "later"))
        #expect(await !later.isRevoked(stageArn: ReplicationTests.stageA, participantId: "w"))
    }
}
