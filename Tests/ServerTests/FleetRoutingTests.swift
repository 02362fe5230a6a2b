// In a fleet, the control plane sends work on a stage to the node that owns it: StartComposition
// placed elsewhere, StopComposition and DisconnectParticipant of another node's stage are
// forwarded with the body they came with; a forwarded call is never forwarded again; reads of
// another node's compositions come from the shared store. And the HTTP surface accepts a call
// signed with the fleet's secret in place of SigV4, and nothing signed otherwise. In process:
// a scripted ownership stands for the database's placements.
import APIModels
import Auth
import EventSinks
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LiveStage
import Logging
import MediaCore
import Persistence
import Prometheus
@testable import Server
import Layout
import Synchronization
import Testing

/// Stages placed on `remote` belong to that peer; every other stage is this node's.
final class ScriptedOwnership: StageOwnership {
    let peer = FleetPeer(nodeId: "node-b", internalURL: "http://node-b.internal:8080", whipURL: "https://b.example.com/whip")
    let remote: Set<String>
    let forwarded = Mutex<[(operation: String, body: Data)]>([])
    let released = Mutex<[StageReservation]>([])

    init(remote: Set<String>) { self.remote = remote }

    var isFleet: Bool { true }

    func claim(stageArn: String, millicores: Int, preferLocal: Bool, forwarded: Bool) async throws(APIError) -> StageClaim {
        remote.contains(stageArn) ? .remote(peer) : .local(StageReservation(stageArn: stageArn, millicores: millicores))
    }

    func release(_ reservation: StageReservation) async { released.withLock { $0.append(reservation) } }

    func remoteOwner(of stageArn: String) async throws(APIError) -> FleetPeer? { remote.contains(stageArn) ? peer : nil }

    func forward(_ route: APIOperation.Route, query: String, body: Data, to peer: FleetPeer) async throws(APIError) -> Data {
        forwarded.withLock { $0.append((route.operation.name, body)) }
        return Data(#"{"forwardedTo":"\#(peer.nodeId)"}"#.utf8)
    }

    func otherLiveNodes() async throws(APIError) -> [FleetPeer] { [peer] }
}

@Suite struct FleetRoutingTests {
    static let remoteStage = "arn:aws:ivs:us-east-1:123456789012:stage/RemoteStage1"
    static let localStage = "arn:aws:ivs:us-east-1:123456789012:stage/LocalStage01"
    static let encoderArn = "arn:aws:ivs:us-east-1:123456789012:encoder-configuration/AAAAAAAAAAAA"
    static let storageArn = "arn:aws:ivs:us-east-1:123456789012:storage-configuration/BBBBBBBBBBBB"

    struct Harness {
        let plane: ControlPlane<InMemoryCompositionStore>
        let store: InMemoryCompositionStore
        let ownership: ScriptedOwnership
        let launcher: FakePipelineLauncher
    }

    static func harness() async throws -> Harness {
        let configuration = ServerConfiguration(
            buckets: ["rec-bucket": .directory(FileManager.default.temporaryDirectory.appendingPathComponent("rec-\(UUID())").path)])
        let store = InMemoryCompositionStore()
        try await store.putEncoderConfiguration(CreateEncoderConfigurationRequest().makeEncoderConfiguration(arn: IVSARN(parsing: encoderArn)!))
        try await store.putStorageConfiguration(CreateStorageConfigurationRequest(s3: .init(bucketName: "rec-bucket"))
            .makeStorageConfiguration(arn: IVSARN(parsing: storageArn)!))
        for arn in [remoteStage, localStage] {
            try await store.putStage(StoredStage(stage: Stage(arn: arn, name: "s", tags: [:]), sourcePath: ""))
        }
        let ownership = ScriptedOwnership(remote: [remoteStage])
        let launcher = FakePipelineLauncher()
        let hub = LiveStageHub(clock: ManualMediaClock())
        let logger = Logger(label: "fleet-routing")
        let buckets = try BucketService(configuration: configuration, environment: [:], logger: logger)
        let manager = CompositionManager(configuration: configuration, store: store, events: InMemoryEventSink(), launcher: launcher,
                                         buckets: buckets, hub: hub, clock: ManualMediaClock(), metrics: nil, ownership: ownership,
                                         logger: logger)
        let runtime = StageRuntime(configuration: configuration, store: store, events: InMemoryEventSink(), hub: hub,
                                   ownership: ownership, logger: logger)
        return Harness(plane: ControlPlane(configuration: configuration, store: store, manager: manager, runtime: runtime),
                       store: store, ownership: ownership, launcher: launcher)
    }

    static func body(_ request: some Encodable) throws -> Data { try JSONEncoder().encode(request) }

    static func start(_ stage: String) throws -> Data {
        try body(StartCompositionRequest(stageArn: stage, destinations: [DestinationConfiguration(s3: S3DestinationConfiguration(
            storageConfigurationArn: storageArn, encoderConfigurationArns: [encoderArn]))]))
    }

    @Test("StartComposition on a stage placed elsewhere goes to that node as it came, and starts nothing here")
    func startForwarded() async throws {
        let h = try await Self.harness()
        let request = try Self.start(Self.remoteStage)
        let answer = try await h.plane.handle(.init(operation: .startComposition), query: "", body: request)
        #expect(String(decoding: answer, as: UTF8.self) == #"{"forwardedTo":"node-b"}"#)
        #expect(h.ownership.forwarded.withLock { $0.map(\.operation) } == ["StartComposition"])
        #expect(h.ownership.forwarded.withLock { $0.first?.body } == request)
        #expect(h.launcher.jobs.isEmpty)
        #expect(try await h.store.compositions().isEmpty)
    }

    @Test("a local stage's composition starts here, holds a reservation, and gives it back when it ends")
    func startLocal() async throws {
        let h = try await Self.harness()
        let answer = try await h.plane.handle(.init(operation: .startComposition), query: "", body: try Self.start(Self.localStage))
        let started = try #require(try JSONDecoder().decode(StartCompositionResponse.self, from: answer).composition)
        #expect(h.launcher.jobs.count == 1 && h.ownership.forwarded.withLock { $0.isEmpty })
        _ = try await h.plane.handle(.init(operation: .stopComposition), query: "", body: try Self.body(StopCompositionRequest(arn: started.arn)))
        #expect(h.ownership.released.withLock { $0.isEmpty })
        await h.plane.manager.handle(.finished(failure: nil), for: started.arn)
        #expect(h.ownership.released.withLock { $0.map(\.stageArn) } == [Self.localStage])
        // 1280×720 at 30 fps (the default encoder) with no publisher: 800 + 100.
        #expect(h.ownership.released.withLock { $0.first?.millicores } == 900)
    }

    @Test("UpdateComposition and UpdateParticipant of another node's stage go to it as they came; forwarded, they run here")
    func directionForwarded() async throws {
        let h = try await Self.harness()
        let arn = "arn:aws:ivs:us-east-1:123456789012:composition/OtherNode002"
        try await h.store.putComposition(StoredComposition(composition: Composition(
            arn: arn, stageArn: Self.remoteStage, state: .active, layout: .defaultGrid, destinations: [])))
        let update = try Self.body(UpdateCompositionRequest(arn: arn, layout: LayoutConfiguration(pip: PipConfiguration()), transitionMs: 300))
        let answer = try await h.plane.handle(.init(operation: .updateComposition), query: "", body: update)
        #expect(String(decoding: answer, as: UTF8.self) == #"{"forwardedTo":"node-b"}"#)
        let attributes = try Self.body(UpdateParticipantRequest(stageArn: Self.remoteStage, participantId: "p1", attributes: ["featured": "true"]))
        _ = try await h.plane.handle(.init(operation: .updateParticipant), query: "", body: attributes)
        #expect(h.ownership.forwarded.withLock { $0.map(\.operation) } == ["UpdateComposition", "UpdateParticipant"])
        #expect(h.ownership.forwarded.withLock { $0.map(\.body) } == [update, attributes])
        // Arriving forwarded, they run here: neither the composition nor the participant is this node's.
        await #expect(throws: APIError.self) {
            try await h.plane.handle(.init(operation: .updateComposition), query: "", body: update, forwarded: true)
        }
        await #expect(throws: APIError.self) {
            try await h.plane.handle(.init(operation: .updateParticipant), query: "", body: attributes, forwarded: true)
        }
        #expect(h.ownership.forwarded.withLock { $0.count } == 2)
    }

    @Test("UpdateComposition's overlays are prepared by the stage's node: another node forwards files it does not have")
    func overlaysPreparedByTheOwner() async throws {
        let h = try await Self.harness()
        let arn = "arn:aws:ivs:us-east-1:123456789012:composition/OtherNode003"
        try await h.store.putComposition(StoredComposition(composition: Composition(
            arn: arn, stageArn: Self.remoteStage, state: .active, layout: .defaultGrid, destinations: [])))
        let update = try Self.body(UpdateCompositionRequest(arn: arn, overlays: OverlayConfiguration(
            images: [ImageOverlay(file: "only-on-node-b.png")])))
        let answer = try await h.plane.handle(.init(operation: .updateComposition), query: "", body: update)
        #expect(String(decoding: answer, as: UTF8.self) == #"{"forwardedTo":"node-b"}"#)
        #expect(h.ownership.forwarded.withLock { $0.map(\.body) } == [update])
        // Arriving forwarded, the file is looked for here, and it is not here.
        await #expect(throws: APIError.validation("overlays.images[0].file: no file 'only-on-node-b.png' in the overlay directory")) {
            try await h.plane.handle(.init(operation: .updateComposition), query: "", body: update, forwarded: true)
        }
    }

    @Test("StopComposition and DisconnectParticipant of another node's stage are forwarded; a forwarded call is not")
    func ownerActionsForwarded() async throws {
        let h = try await Self.harness()
        let arn = "arn:aws:ivs:us-east-1:123456789012:composition/OtherNode001"
        try await h.store.putComposition(StoredComposition(composition: Composition(
            arn: arn, stageArn: Self.remoteStage, state: .active, layout: .defaultGrid, destinations: [])))
        let stop = try Self.body(StopCompositionRequest(arn: arn))
        _ = try await h.plane.handle(.init(operation: .stopComposition), query: "", body: stop)
        let disconnect = try Self.body(DisconnectParticipantRequest(stageArn: Self.remoteStage, participantId: "p1"))
        _ = try await h.plane.handle(.init(operation: .disconnectParticipant), query: "", body: disconnect)
        #expect(h.ownership.forwarded.withLock { $0.map(\.operation) } == ["StopComposition", "DisconnectParticipant"])
        // Arriving forwarded, it runs here: the composition is not this node's, so not found.
        await #expect(throws: APIError.self) {
            try await h.plane.handle(.init(operation: .stopComposition), query: "", body: stop, forwarded: true)
        }
        #expect(h.ownership.forwarded.withLock { $0.count } == 2)
    }

    @Test("RevokeConnectionToken runs here and is told to every other live node, once: a forwarded one goes no further")
    func revocationToldToEveryNode() async throws {
        let h = try await Self.harness()
        let body = try Self.body(RevokeConnectionTokenRequest(tokenId: "token-1"))
        let route = APIOperation.Route(operation: .revokeConnectionToken)
        _ = try await h.plane.handle(route, query: "", body: body)
        #expect(h.ownership.forwarded.withLock { $0.map(\.operation) } == ["RevokeConnectionToken"])
        #expect(h.ownership.forwarded.withLock { $0.first?.body } == body)
        #expect(await h.plane.runtime.isRevoked(stageArn: Self.localStage, participantId: "token-1"), "refused here from now on")
        _ = try await h.plane.handle(route, query: "", body: body, forwarded: true)
        #expect(h.ownership.forwarded.withLock { $0.count } == 1, "a forwarded revocation is not forwarded again")
    }

    @Test("another node's composition is read from the shared store, by Get and List")
    func readsFromTheStore() async throws {
        let h = try await Self.harness()
        let arn = "arn:aws:ivs:us-east-1:123456789012:composition/OtherNode002"
        try await h.store.putComposition(StoredComposition(composition: Composition(
            arn: arn, stageArn: Self.remoteStage, state: .active, layout: .defaultGrid, destinations: [])))
        let got = try await h.plane.handle(.init(operation: .getComposition), query: "", body: try Self.body(GetCompositionRequest(arn: arn)))
        #expect(try JSONDecoder().decode(GetCompositionResponse.self, from: got).composition?.state == .active)
        let listed = try await h.plane.handle(.init(operation: .listCompositions), query: "", body: Data("{}".utf8))
        #expect(try JSONDecoder().decode(ListCompositionsResponse.self, from: listed).compositions.map(\.arn) == [arn])
    }

    /// Lets no request through: a call that gets past it was accepted by its fleet signature.
    struct DenyAll: RequestAuthenticator {
        func authenticate(_ request: AuthenticationRequest) async -> APIError? { .accessDenied("SigV4 required") }
    }

    @Test("a call signed with the fleet's secret runs as forwarded without SigV4, once; a wrong signature or a replay is refused")
    func signedCalls() async throws {
        let seen = Mutex<[Bool]>([])
        // The responder's clock is the signing time: however long this takes on a loaded machine.
        let now: Int64 = 1_800_000_000_000
        var responder = APIRoutes(
            maxBodyBytes: 4096, authenticator: DenyAll(), registry: PrometheusCollectorRegistry(),
            metrics: ServerMetrics(factory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry())),
            logger: Logger(label: "fleet-routing"),
            operation: { _, _, _, forwarded throws(APIError) in
                seen.withLock { $0.append(forwarded) }
                return Data("{}".utf8)
            },
            fleetSecret: "a-fleet-secret-of-some-length")
        responder.nowMs = { now + 29_000 }
        // The nonces as the shared store keeps them (its claim is tested on every store).
        let store = InMemoryCompositionStore()
        responder.claimFleetNonce = { nonce, until in (try? await store.claimFleetNonce(nonce, until: until, now: now + 29_000)) ?? false }
        let app = Application(router: responder.buildRouter())
        let body = #"{"arn":"x"}"#
        @Sendable func headers(secret: String, nonce: String = FleetCallSignature.makeNonce()) -> HTTPFields {
            var fields = HTTPFields()
            fields[HTTPField.Name(FleetCallSignature.nodeHeader)!] = "node-a"
            fields[HTTPField.Name(FleetCallSignature.timeHeader)!] = String(now)
            fields[HTTPField.Name(FleetCallSignature.nonceHeader)!] = nonce
            fields[HTTPField.Name(FleetCallSignature.signatureHeader)!] = FleetCallSignature.sign(
                secret: secret, method: "POST", path: "/StopComposition", query: "", timeMs: now, nonce: nonce, body: Data(body.utf8))
            return fields
        }
        let captured = headers(secret: "a-fleet-secret-of-some-length")
        try await app.test(.router) { client in
            try await client.execute(uri: "/StopComposition", method: .post, headers: captured, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .ok)
            }
            // The same call again, within its time window: a replay.
            try await client.execute(uri: "/StopComposition", method: .post, headers: captured, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .forbidden)
            }
            try await client.execute(uri: "/StopComposition", method: .post, headers: headers(secret: "a-fleet-secret-of-some-length"),
                                     body: ByteBuffer(string: body)) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/StopComposition", method: .post, headers: headers(secret: "another-secret-of-some-length"),
                                     body: ByteBuffer(string: body)) { response in
                #expect(response.status == .forbidden)
            }
            try await client.execute(uri: "/StopComposition", method: .post, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .forbidden)
            }
        }
        #expect(seen.withLock { $0 } == [true, true])
    }
}
