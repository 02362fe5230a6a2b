// StartComposition: (overlays prepared) → lookup → plan → claim → persist → launch.
public import APIModels
import Foundation
import Lifecycle
import Logging
import MediaCore
import Persistence
import ServiceLifecycle
import Destinations
import Fleet
import Events
import EventSinks
import HLS
import LiveStage
import Pipeline
import Stages
import Storage
import Composition
import Crypto
import Layout

extension CompositionManager {
    // MARK: API

    /// Where a StartComposition ran.
    public enum StartOutcome: Sendable {
        case started(Composition)
        /// The stage is (now) placed on another node: the call goes there.
        case elsewhere(FleetPeer)
    }

    /// Starts a composition on this node, which must own its stage (tests, one host).
    public func start(_ request: StartCompositionRequest) async throws(APIError) -> Composition {
        switch try await start(request, forwarded: false) {
        case .started(let composition): return composition
        case .elsewhere(let peer): throw .internalServer("stage \(request.stageArn) is placed on node \(peer.nodeId)")
        }
    }

    /// Starts a composition if this node owns (or is chosen for) the stage; `forwarded`: the
    /// call came from another node, so the stage must be here. Its overlays are prepared here,
    /// on the actor (the control plane prepares them before, off it).
    public func start(_ request: StartCompositionRequest, forwarded: Bool) async throws(APIError) -> StartOutcome {
        try await start(request, overlays: try prepareOverlays(request.overlays), forwarded: forwarded)
    }

    /// The same, with the request's overlays prepared (`prepareOverlays`). Lookup → plan →
    /// claim → persist → launch.
    func start(_ request: StartCompositionRequest, overlays: PreparedOverlays?, forwarded: Bool) async throws(APIError) -> StartOutcome {
        if let token = request.idempotencyToken,
           let existing = entries.values.first(where: { $0.stored.idempotencyToken == token }) {
            // The same request again is answered with what it started; another one is refused.
            if let digest = existing.stored.requestDigest, digest != Self.digest(request) {
                throw .conflict("idempotencyToken: '\(token)' was used for another request (composition \(existing.stored.arn)); "
                                + "send a new token")
            }
            return .started(existing.stored.composition)
        }
        let (stageARN, stage) = try await lookUpStage(request)
        let compositionID = ResourceID.random()
        var plan = try await plan(request, stageId: stageARN.resourceID, compositionId: compositionID.rawValue)
        plan.overlays = overlays
        let media = stageMedia(stage, request: request)
        if case .failure(let error) = media.quota { throw error }
        let reservation: StageReservation
        switch try await claim(request.stageArn, plan: plan, publishers: media.publishersAtStart, forwarded: forwarded) {
        case .remote(let peer): return .elsewhere(peer)
        case .local(let held): reservation = held
        }
        let arn = arnContext.arn(.composition, id: compositionID).description
        var entry = try await persist(request, arn: arn, compositionID: compositionID, plan: plan,
                                      publishersAtStart: media.publishersAtStart, reservation: reservation)
        if let problem = media.problem {
            entries[arn] = entry
            dirty.insert(arn)
            await apply(.sourceFailed(reason: problem), to: arn)
            return .started(entries[arn]?.stored.composition ?? entry.stored.composition)
        }
        launch(&entry, arn: arn, compositionID: compositionID, plan: plan, request: request, media: media.source)
        entries[arn] = entry
        dirty.insert(arn)
        await flush()
        updateMetrics()
        return .started(entries[arn]?.stored.composition ?? entry.stored.composition)
    }

    /// A request's overlays as a composition takes them: their image files read (from
    /// `overlays.directory`) and decoded, their fonts checked; a problem is a
    /// ValidationException naming the field. Nonisolated: decoding images takes a while, and
    /// the control plane does it before calling in, so nothing reaches a composition unchecked.
    nonisolated func prepareOverlays(_ overlays: OverlayConfiguration?) throws(APIError) -> PreparedOverlays? {
        guard let overlays else { return nil }
        let assets = OverlayAssets(directory: configuration.overlayDirectory, defaultFont: configuration.overlays.defaultFont)
        do throws(LayoutValidationError) {
            return try assets.prepare(overlays, prefix: "overlays")
        } catch {
            throw .validation(error.description)
        }
    }

    /// What an idempotency token stands for: SHA-256 of the request as JSON with sorted keys.
    static func digest(_ request: StartCompositionRequest) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(request)) ?? Data()
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// The stage the request names (it must be this account's and exist), under the quota
    /// of concurrent compositions.
    func lookUpStage(_ request: StartCompositionRequest) async throws(APIError) -> (IVSARN, ResolvedStage) {
        guard let stageARN = IVSARN(parsing: request.stageArn, expecting: .stage), arnContext.owns(stageARN),
              let stage = try await catalog.stage(arn: request.stageArn) else {
            throw .resourceNotFound("stageArn: stage \(request.stageArn) not found")
        }
        let running = entries.values.filter { !$0.isTerminal }.count
        guard running < configuration.quotas.concurrentCompositions else {
            throw .serviceQuotaExceeded("concurrent compositions: the quota of \(configuration.quotas.concurrentCompositions) is reached")
        }
        return (stageARN, stage)
    }

    /// Every destination planned before anything is created: what the request names is
    /// looked up here, the rules are CompositionPlanner's.
    func plan(_ request: StartCompositionRequest, stageId: String, compositionId: String) async throws(APIError)
        -> CompositionPlanner.Plan {
        var lookups = CompositionPlanner.Lookups()
        let named = CompositionPlanner.namedConfigurations(request)
        for arn in named.encoders where lookups.encoders[arn] == nil {
            do { lookups.encoders[arn] = try await store.encoderConfiguration(arn: arn) } catch {
                throw .internalServer("encoder configuration store: \(error.message)")
            }
        }
        for arn in named.storages where lookups.storages[arn] == nil {
            lookups.storages[arn] = try await storageConfiguration(arn)
        }
        for entry in entries.values where !entry.isTerminal {
            for destination in entry.stored.composition.destinations {
                if let channel = destination.configuration.channel?.channelArn { lookups.channelsInUse.insert(channel) }
            }
        }
        let planner = CompositionPlanner(arnContext: arnContext, channels: configuration.channels,
                                         bucketDirectories: configuration.buckets.mapValues { $0.directory })
        return try planner.plan(request, stageId: stageId, compositionId: compositionId,
                                destinationIds: request.destinations.map { _ in ResourceID.random().rawValue }, lookups: lookups)
    }

    /// The stage's media and who publishes at the start. A recorded source's problems fail the
    /// composition (Session Failure), not the call; a live stage starts with whoever publishes
    /// now. A recorded stage with more publishers than the quota refuses the call.
    func stageMedia(_ stage: ResolvedStage, request: StartCompositionRequest)
        -> (source: StageMedia, publishersAtStart: Int, problem: String?, quota: Result<Void, APIError>) {
        if let sourcePath = stage.sourcePath {
            do {
                let participants = try RecordedStage.load(from: sourcePath).manifest.participants
                if participants.count > configuration.quotas.publishersPerStage {
                    return (.recorded(path: sourcePath), 0, nil, .failure(.serviceQuotaExceeded(
                        "publishers per stage: stage \(request.stageArn) has \(participants.count) publishers, the quota is \(configuration.quotas.publishersPerStage)")))
                }
                return (.recorded(path: sourcePath), participants.filter { $0.state(atMs: 0).isPublished }.count, nil, .success(()))
            } catch {
                return (.recorded(path: sourcePath), 0, "stage source cannot be read: \(error)", .success(()))
            }
        }
        if let hub { return (.live, hub.publishers(stageArn: request.stageArn).count, nil, .success(())) }
        return (.live, 0, "stage \(request.stageArn) has no recorded source (tag \(StageCatalog<Store>.sourceTag)) and live ingest is disabled",
                .success(()))
    }

    /// Where it runs: the stage's node, with room for what it costs.
    func claim(_ stageArn: String, plan: CompositionPlanner.Plan, publishers: Int, forwarded: Bool) async throws(APIError)
        -> StageClaim {
        let cost = PlacementCost.composition(
            renditions: [PlacementCost.Rendition(width: plan.encoder.width, height: plan.encoder.height,
                                                 framerate: Double(plan.encoder.frameRate.numerator) / Double(max(plan.encoder.frameRate.denominator, 1)))],
            participants: publishers)
        return try await ownership.claim(stageArn: stageArn, millicores: cost, preferLocal: false, forwarded: forwarded)
    }

    /// The composition, STARTING, persisted before anything runs: one the store cannot keep
    /// would be lost (and its recording never finalized) after a restart, so the call fails.
    func persist(_ request: StartCompositionRequest, arn: String, compositionID: ResourceID, plan: CompositionPlanner.Plan,
                         publishersAtStart: Int, reservation: StageReservation) async throws(APIError) -> Entry {
        let composition = Composition(arn: arn, stageArn: request.stageArn, state: .starting,
                                      layout: plan.layout, destinations: plan.destinations,
                                      tags: request.tags ?? [:], startTime: wallTimestamp(),
                                      overlays: request.overlays.flatMap { $0.isEmpty ? nil : $0 })
        var entryLogger = logger
        entryLogger[metadataKey: "composition.id"] = "\(compositionID)"
        let machine = CompositionStateMachine(destinationIDs: plan.destinations.map(\.id), createdAt: clock.now(),
                                              publisherCount: publishersAtStart, configuration: lifecycle)
        let entry = Entry(stored: StoredComposition(composition: composition, idempotencyToken: request.idempotencyToken,
                                                    requestDigest: request.idempotencyToken.map { _ in Self.digest(request) },
                                                    recording: plan.recording?.stored),
                          machine: machine, publishers: publishersAtStart, logger: entryLogger, reservation: reservation)
        do {
            try await store.putComposition(entry.stored)
        } catch {
            entry.logger.error("composition could not be persisted; not started", metadata: ["error": "\(error)"])
            await ownership.release(reservation)
            throw .internalServer("the composition could not be stored: \(error.message)")
        }
        entry.logger.info("composition starting", metadata: ["stage.arn": "\(request.stageArn)",
                                                              "destinations": "\(plan.destinations.count)"])
        return entry
    }

    /// Its pipeline, on its own thread, reporting back through the inbox.
    func launch(_ entry: inout Entry, arn: String, compositionID: ResourceID, plan: CompositionPlanner.Plan,
                        request: StartCompositionRequest, media: StageMedia) {
        guard plan.recording != nil || plan.channel != nil else { return }
        let uploads = plan.recording.map { [buckets] recording in
            let (bucket, destinationId) = (recording.bucket, recording.stored.destinationId)
            return { @Sendable logger in
                buckets.uploads(bucket: bucket, compositionArn: arn, destinationId: destinationId, logger: logger)
            }
        }
        let job = PipelineJob(
            stageArn: request.stageArn, source: media,
            plan: CompositionPlanner.compositionPlan(plan, compositionId: compositionID.rawValue, uploads: uploads,
                                                     preset: configuration.encoderPreset, lowLatency: media == .live))
        let continuation = inboxContinuation
        entry.handle = launcher.launch(job, logger: entry.logger) { report in continuation.yield((arn, report)) }
    }
}
