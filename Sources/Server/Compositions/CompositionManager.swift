// Owns every composition: validates and starts them, drives each one's lifecycle state
// machine from pipeline reports and timers, performs its actions (stop the pipeline,
// publish events, persist), and hides ended compositions after the retention time.
//
//   API ──start/stop──▶ CompositionManager (actor) ──launch──▶ pipeline Thread
//                            ▲        │                              │
//                 inbox ─────┘        └─▶ events, store              │ SessionEvent / finished
//                   ▲─────────────────────────────────────────────────┘
//
// Side effects leave the actor in order through one outbox (state first, then events), so
// interleaved calls never publish out of order or persist a stale snapshot.
public import APIModels
public import Foundation
import Lifecycle
public import Logging
public import MediaCore
public import Persistence
public import ServiceLifecycle
import Destinations
import Fleet
import Events
public import EventSinks
import HLS
public import LiveStage
import Pipeline
import Stages
import Storage

public actor CompositionManager<Store: CompositionStore>: Service {
    struct Entry {
        var stored: StoredComposition
        var machine: CompositionStateMachine?
        var handle: (any PipelineHandle)?
        /// Sink name → destination ID (the s3 recording; the channel reports through `.channel`).
        /// Destination reports that arrived before "Session Start"; replayed right after it.
        var earlyChannelEvents: [CompositionEvent] = []
        var endedAt: MediaTime?
        var publishers = 0
        var logger: Logger
        /// The capacity it holds on this node's placement of its stage, until it ends.
        var reservation: StageReservation?

        var isTerminal: Bool { stored.composition.state == .stopped || stored.composition.state == .failed }
    }

    public static var restartReason: String { "daemon restarted while the composition was running" }

    let configuration: ServerConfiguration
    let arnContext: ARNContext
    let store: Store
    let catalog: StageCatalog<Store>
    let events: any EventSink
    let launcher: any CompositionPipelineLauncher
    /// The buckets' storages and the spools in front of S3 buckets.
    let buckets: BucketService
    /// Live stages' publishers (nil: live ingest disabled).
    let hub: LiveStageHub?
    let clock: any MediaClock
    let wallClock: @Sendable () -> Date
    let logger: Logger
    let metrics: ServerMetrics?
    let builder: CompositionEventBuilder
    let lifecycle: CompositionLifecycleConfiguration
    /// Which node runs a stage's compositions (this one, outside a fleet).
    let ownership: any StageOwnership
    private let inbox: AsyncStream<(String, PipelineReport)>
    private let inboxContinuation: AsyncStream<(String, PipelineReport)>.Continuation
    /// Background work run() runs as its children (see `run`).
    private let pendingJobs: AsyncStream<@Sendable () async -> Void>
    private let jobs: AsyncStream<@Sendable () async -> Void>.Continuation

    /// systemd: the watchdog is pinged and the status updated from the timer loop.
    private let notifier: SystemdNotifier?
    private var entries: [String: Entry] = [:]
    private var outbox: [CompositionStateChangeEvent] = []
    private var dirty: Set<String> = []
    private var flushing = false
    /// Rung after every change of `entries` that waits look for (a pipeline's report, a flush).
    private let changes = ChangeSignal()

    public init(configuration: ServerConfiguration, store: Store, events: any EventSink,
                launcher: any CompositionPipelineLauncher, buckets: BucketService, hub: LiveStageHub? = nil, clock: any MediaClock,
                wallClock: @escaping @Sendable () -> Date = Date.init, metrics: ServerMetrics?, notifier: SystemdNotifier? = nil,
                ownership: any StageOwnership = SingleNodeOwnership(), logger: Logger) {
        self.ownership = ownership
        self.notifier = notifier
        self.hub = hub
        self.configuration = configuration
        arnContext = ARNContext(region: configuration.region, account: configuration.account)!
        self.store = store
        catalog = StageCatalog(configuration: configuration, store: store)
        self.events = events
        self.launcher = launcher
        self.buckets = buckets
        self.clock = clock
        self.wallClock = wallClock
        self.metrics = metrics
        self.logger = logger
        builder = CompositionEventBuilder(region: configuration.region, account: configuration.account,
                                          secondsSince1970: { Int64(wallClock().timeIntervalSince1970.rounded(.down)) })
        let l = configuration.lifecycle
        lifecycle = CompositionLifecycleConfiguration(
            idleTimeout: .microseconds(Int64(l.idleTimeoutSeconds * 1_000_000)),
            maximumDuration: .microseconds(Int64(l.maximumDurationSeconds * 1_000_000)),
            retention: .microseconds(Int64(l.retentionSeconds * 1_000_000)),
            // The channel sink retries by itself (channels[].reconnect); the lifecycle only records it.
            reconnectPolicy: .byDestination)
        (pendingJobs, jobs) = AsyncStream.makeStream()
        (inbox, inboxContinuation) = AsyncStream.makeStream()
    }

    // MARK: Service

    /// Processes pipeline reports and timers until graceful shutdown, then stops every
    /// running composition as StopComposition would (bounded by shutdownGraceSeconds).
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await (arn, report) in self.inbox { await self.handle(report, for: arn) }
            }
            group.addTask { await self.timerLoop() }
            group.addTask {
                // Work that outlives the call that started it (finalizing a crashed
                // recording once its spool is uploaded) runs here, as a child of the service.
                await withDiscardingTaskGroup { jobs in
                    for await job in self.pendingJobs { jobs.addTask { await job() } }
                }
            }
            try? await gracefulShutdown()
            self.notifier?.stopping(status: "stopping: \(self.runningCount.compositions) compositions running")
            await self.shutdownAll()
            self.jobs.finish()
            group.cancelAll()
        }
    }

    private func timerLoop() async {
        while !Task.isCancelled {
            let now = clock.now()
            let wake = min(nextWakeUp() ?? now + .seconds(1), now + .milliseconds(250))
            do { try await clock.sleep(until: wake) } catch { return }
            await tick()
        }
    }

    /// Stops everything still running and waits (bounded) for recordings to finalize.
    func shutdownAll() async {
        let running = entries.values.filter { !$0.isTerminal }.map(\.stored.arn)
        guard !running.isEmpty else { return }
        logger.notice("shutting down: stopping running compositions", metadata: ["count": "\(running.count)"])
        for arn in running { await apply(.stopRequested, to: arn) }
        let deadline = ContinuousClock.now + .milliseconds(Int64(configuration.lifecycle.shutdownGraceSeconds * 1000))
        // Until every composition has ended and its final state is persisted and published:
        // the caller cancels the inbox task next, and a write cancelled halfway would leave a
        // STOPPED composition stored as running.
        _ = await waitUntil(deadline) { isSettled }
        for entry in entries.values where !entry.isTerminal {
            entry.logger.error("composition did not finish within the shutdown grace period; it is finalized on the next start")
        }
        await flush()
    }

    /// Fleet drain: waits until no composition runs here (each ends as it would: StopComposition,
    /// the idle timeout, its maximum duration) and its final state is kept, or until
    /// `deadline`. Returns how many still run.
    public func waitForRunningCompositions(until deadline: ContinuousClock.Instant) async -> Int {
        notifier?.stopping(status: "draining: \(runningCount.compositions) compositions running")
        _ = await waitUntil(deadline) { isSettled }
        return runningCount.compositions
    }

    /// Every composition has ended, its pipeline is gone, and its final state is stored and published.
    private var isSettled: Bool {
        !entries.values.contains(where: { !$0.isTerminal || $0.handle != nil }) && !flushing && dirty.isEmpty && outbox.isEmpty
    }

    /// Waits until `condition` holds or `deadline` passes (checked after every change `changes` rings).
    private func waitUntil(_ deadline: ContinuousClock.Instant, _ condition: () -> Bool) async -> Bool {
        while true {
            let seen = changes.generation
            if condition() { return true }
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return false }
            await changes.changed(after: seen, deadline: deadline)
        }
    }

    // MARK: Start-up

    /// Finalizes a crashed composition's S3 recording once its spool is uploaded; retries
    /// every 10 s while the bucket fails, for as long as the daemon runs.
    private func finalizeLater(_ recording: StoredRecording, bucket: String, record: StoredComposition, restartedAt: Date,
                               reason: String, logger: Logger) {
        guard let storage = buckets.storage(bucket: bucket) else {
            logger.error("recording cannot be finalized: its bucket is no longer configured", metadata: ["bucket": "\(bucket)"])
            return
        }
        let spool = buckets.spool(destinationId: recording.destinationId)
        let started = record.composition.startTime.map { Date(timeIntervalSince1970: TimeInterval($0.secondsSince1970)) }
        let stageArn = record.composition.stageArn
        logger.notice("recording is finalized once its spool is uploaded",
                      metadata: ["destination.id": "\(recording.destinationId)", "spool.objects": "\(spool?.status.objects ?? 0)"])
        jobs.yield {
            await spool?.finished()
            var attempts = 0
            while !Task.isCancelled {
                attempts += 1
                do {
                    let result = try await RecordingRecovery.finalize(recording, storage: storage, stageArn: stageArn, startedAt: started,
                                                                      restartedAt: restartedAt, reason: reason, logger: logger)
                    logger.notice("recording finalized after restart", metadata: [
                        "destination.id": "\(recording.destinationId)", "segments": "\(result.segments)",
                        "duration.ms": "\(result.durationMs)", "recording.ended": "\(result.endedAt)"])
                    return
                } catch {
                    if attempts == 1 || attempts % 10 == 0 {
                        logger.warning("recording not finalized yet; retrying", metadata: ["error": "\(error)", "attempts": "\(attempts)"])
                    }
                    try? await Task.sleep(for: .seconds(10))
                }
            }
        }
    }

    /// Loads persisted compositions. Those that were running when the process died are
    /// finalized (recording playlist VOD + ENDLIST, recording-failed.json) and marked FAILED.
    /// In a fleet the store is shared: this node loads nothing (reads come from the store) and
    /// fails only what it is handed with `takeOver`.
    public func restore() async throws(APIError) {
        guard !ownership.isFleet else { return }
        let stored: [StoredComposition]
        do { stored = try await store.compositions() } catch { throw .internalServer("composition store: \(error.message)") }
        let now = clock.now()
        let wallNow = wallClock()
        for record in stored {
            if record.composition.state == .stopped || record.composition.state == .failed {
                let endSeconds = record.composition.endTime?.secondsSince1970 ?? Int64(wallNow.timeIntervalSince1970)
                let age = max(0, Int64(wallNow.timeIntervalSince1970) - endSeconds)
                entries[record.arn] = Entry(stored: record, endedAt: now - .seconds(age), logger: entryLogger(record.arn))
                continue
            }
            await failOrphan(record, reason: Self.restartReason, wallNow: wallNow)
        }
        await flush()
        updateMetrics()
    }

    /// Fails the compositions still running on `stages`, which a node that is gone held
    /// (reaped by this one, or this node's own earlier incarnation): each is marked FAILED with
    /// `reason` and a Session Failure event, and its S3 recording finalized from the segments
    /// in the bucket. Returns how many.
    @discardableResult
    public func takeOver(stages: [String], reason: String) async -> Int {
        guard !stages.isEmpty else { return 0 }
        let stored: [StoredComposition]
        do { stored = try await store.compositions() } catch {
            logger.error("compositions of a lost node cannot be read; they stay as they are", metadata: ["error": "\(error)"])
            return 0
        }
        let wanted = Set(stages)
        let orphans = stored.filter { record in
            wanted.contains(record.composition.stageArn) && entries[record.arn] == nil
                && record.composition.state != .stopped && record.composition.state != .failed
        }
        let wallNow = wallClock()
        for record in orphans { await failOrphan(record, reason: reason, wallNow: wallNow) }
        // Those that had already ended are kept here for their retention (then deleted), as
        // their node would have: nothing else would ever remove them from the table.
        for record in stored where wanted.contains(record.composition.stageArn) && entries[record.arn] == nil {
            entries[record.arn] = Entry(stored: record, endedAt: clock.now(), logger: entryLogger(record.arn))
        }
        await flush()
        updateMetrics()
        return orphans.count
    }

    private func entryLogger(_ arn: String) -> Logger {
        var entryLogger = logger
        entryLogger[metadataKey: "composition.id"] = "\(arn.split(separator: "/").last ?? "")"
        return entryLogger
    }

    /// A composition whose process is gone: its recording finalized, FAILED with `reason`.
    private func failOrphan(_ original: StoredComposition, reason given: String, wallNow: Date) async {
        var record = original
        let entryLogger = entryLogger(record.arn)
        var reason = given
        if let recording = record.recording, let bucket = recording.bucket, buckets.isSpooled(bucket: bucket) {
            // An S3 bucket may be out now: finalize in the background, once the spool the
            // dead process left (if it was this host) has been uploaded, retrying until the
            // bucket answers.
            finalizeLater(recording, bucket: bucket, record: record, restartedAt: wallNow, reason: reason, logger: entryLogger)
        } else if let recording = record.recording {
            let started = record.composition.startTime.map { Date(timeIntervalSince1970: TimeInterval($0.secondsSince1970)) }
            do {
                let result = try await RecordingRecovery.finalize(recording, storage: LocalDirectoryStorage(rootPath: recording.storageRoot),
                                                                  stageArn: record.composition.stageArn,
                                                                  startedAt: started, restartedAt: wallNow, reason: reason,
                                                                  logger: entryLogger)
                entryLogger.notice("recording finalized after restart",
                                   metadata: ["destination.id": "\(recording.destinationId)",
                                              "segments": "\(result.segments)", "duration.ms": "\(result.durationMs)",
                                              "recording.ended": "\(result.endedAt)"])
            } catch {
                entryLogger.error("recording could not be finalized after restart", metadata: ["error": "\(error)"])
                reason += "; recording could not be finalized: \(error)"
            }
        }
        let timestamp = APITimestamp(secondsSince1970: Int64(wallNow.timeIntervalSince1970))
        for index in record.composition.destinations.indices {
            let destination = record.composition.destinations[index]
            switch destination.state {
            case .active, .reconnecting, .stopping:
                record.composition.destinations[index].state = .stopped
                record.composition.destinations[index].endTime = timestamp
                enqueue(.destinationEnd(destinationID: destination.id), record: record)
            case .starting:
                record.composition.destinations[index].state = .failed
                record.composition.destinations[index].endTime = timestamp
            case .stopped, .failed:
                break
            }
        }
        record.composition.state = .failed
        record.composition.endTime = timestamp
        record.failureReason = reason
        enqueue(.sessionFailure(reason: reason), record: record)
        entryLogger.warning("composition's process is gone; marked FAILED", metadata: ["reason": "\(reason)"])
        entries[record.arn] = Entry(stored: record, endedAt: clock.now(), logger: entryLogger)
        dirty.insert(record.arn)
    }

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
    /// call came from another node, so the stage must be here.
    public func start(_ request: StartCompositionRequest, forwarded: Bool) async throws(APIError) -> StartOutcome {
        if let token = request.idempotencyToken,
           let existing = entries.values.first(where: { $0.stored.idempotencyToken == token }) {
            return .started(existing.stored.composition)
        }
        guard let stageARN = IVSARN(parsing: request.stageArn, expecting: .stage), arnContext.owns(stageARN),
              let stage = try await catalog.stage(arn: request.stageArn) else {
            throw .resourceNotFound("stageArn: stage \(request.stageArn) not found")
        }
        let running = entries.values.filter { !$0.isTerminal }.count
        guard running < configuration.quotas.concurrentCompositions else {
            throw .serviceQuotaExceeded("concurrent compositions: the quota of \(configuration.quotas.concurrentCompositions) is reached")
        }

        // Plan every destination before creating anything: what the request names is looked
        // up here, the rules are CompositionPlanner's.
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
        let compositionID = ResourceID.random()
        let planner = CompositionPlanner(arnContext: arnContext, channels: configuration.channels,
                                         bucketDirectories: configuration.buckets.mapValues { $0.directory })
        let plan = try planner.plan(request, stageId: stageARN.resourceID, compositionId: compositionID.rawValue,
                                    destinationIds: request.destinations.map { _ in ResourceID.random().rawValue }, lookups: lookups)

        // The stage's media. A recorded source's problems fail the composition (Session
        // Failure), not the call; a live stage starts with whoever publishes now.
        var sourceProblem: String?
        var publishersAtStart = 0
        let media: StageMedia
        if let sourcePath = stage.sourcePath {
            media = .recorded(path: sourcePath)
            do {
                let recorded = try RecordedStage.load(from: sourcePath)
                let participants = recorded.manifest.participants
                if participants.count > configuration.quotas.publishersPerStage {
                    throw APIError.serviceQuotaExceeded(
                        "publishers per stage: stage \(request.stageArn) has \(participants.count) publishers, the quota is \(configuration.quotas.publishersPerStage)")
                }
                publishersAtStart = participants.filter { $0.state(atMs: 0).isPublished }.count
            } catch let error as APIError {
                throw error
            } catch {
                sourceProblem = "stage source cannot be read: \(error)"
            }
        } else if let hub {
            media = .live
            publishersAtStart = hub.publishers(stageArn: request.stageArn).count
        } else {
            media = .live
            sourceProblem = "stage \(request.stageArn) has no recorded source (tag \(StageCatalog<Store>.sourceTag)) and live ingest is disabled"
        }

        // Where it runs: the stage's node, with room for what it costs.
        let cost = PlacementCost.composition(
            renditions: [PlacementCost.Rendition(width: plan.encoder.width, height: plan.encoder.height,
                                                 framerate: Double(plan.encoder.frameRate.numerator) / Double(max(plan.encoder.frameRate.denominator, 1)))],
            participants: publishersAtStart)
        let reservation: StageReservation
        switch try await ownership.claim(stageArn: request.stageArn, millicores: cost, preferLocal: false, forwarded: forwarded) {
        case .remote(let peer): return .elsewhere(peer)
        case .local(let held): reservation = held
        }

        // Create.
        let arn = arnContext.arn(.composition, id: compositionID).description
        let now = clock.now()
        let timestamp = wallTimestamp()
        let destinations = plan.destinations
        let recording = plan.recording?.stored
        let composition = Composition(arn: arn, stageArn: request.stageArn, state: .starting,
                                      layout: plan.layout, destinations: destinations,
                                      tags: request.tags ?? [:], startTime: timestamp)
        var entryLogger = logger
        entryLogger[metadataKey: "composition.id"] = "\(compositionID)"
        let machine = CompositionStateMachine(destinationIDs: destinations.map(\.id), createdAt: now,
                                              publisherCount: publishersAtStart, configuration: lifecycle)
        var entry = Entry(stored: StoredComposition(composition: composition, idempotencyToken: request.idempotencyToken,
                                                    recording: recording),
                          machine: machine, publishers: publishersAtStart, logger: entryLogger, reservation: reservation)
        // Persisted before anything runs: a composition the store cannot keep would be lost
        // (and its recording never finalized) after a restart, so the call fails instead.
        do {
            try await store.putComposition(entry.stored)
        } catch {
            entry.logger.error("composition could not be persisted; not started", metadata: ["error": "\(error)"])
            await ownership.release(reservation)
            throw .internalServer("the composition could not be stored: \(error.message)")
        }
        entry.logger.info("composition starting", metadata: ["stage.arn": "\(request.stageArn)",
                                                              "destinations": "\(destinations.count)"])

        if let sourceProblem {
            entries[arn] = entry
            dirty.insert(arn)
            await apply(.sourceFailed(reason: sourceProblem), to: arn)
            return .started(entries[arn]?.stored.composition ?? composition)
        }
        if plan.recording != nil || plan.channel != nil {
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
        entries[arn] = entry
        dirty.insert(arn)
        await flush()
        updateMetrics()
        return .started(entries[arn]?.stored.composition ?? composition)
    }

    public func stop(arn: String) async throws(APIError) {
        guard let entry = visibleEntry(arn) else { throw .resourceNotFound("arn: composition \(arn) not found") }
        guard !entry.isTerminal else { return }
        entry.logger.info("stop requested")
        await apply(.stopRequested, to: arn)
    }

    /// A composition this node runs or ran; in a fleet, else the one the store has (another
    /// node's).
    public func composition(arn: String) async throws(APIError) -> Composition {
        if let entry = visibleEntry(arn) { return entry.stored.composition }
        if ownership.isFleet, let stored = try await storedComposition(arn) { return stored.composition }
        throw .resourceNotFound("arn: composition \(arn) not found")
    }

    /// Every visible composition (ended ones until their retention runs out); in a fleet, with
    /// the other nodes' from the store.
    public func compositions() async throws(APIError) -> [Composition] {
        let now = clock.now()
        var all: [String: Composition] = [:]
        if ownership.isFleet {
            do {
                for stored in try await store.compositions() { all[stored.arn] = stored.composition }
            } catch {
                throw .internalServer("composition store: \(error.message)")
            }
        }
        for entry in entries.values where !isExpired(entry, now: now) { all[entry.stored.arn] = entry.stored.composition }
        return all.values.sorted { $0.arn < $1.arn }
    }

    /// A page of `compositions()` after `after` by ARN (of `stageArn`'s, when given): in a
    /// fleet, a page of the store's with this node's own among it; `nextKey` is the store's.
    public func compositions(stageArn: String?, after: String?, limit: Int) async throws(APIError) -> KeysetPage<Composition> {
        var page: [String: Composition] = [:]
        var nextKey: String?
        if ownership.isFleet {
            do {
                let stored = try await store.compositions(stageArn: stageArn, after: after, limit: limit)
                for value in stored.items { page[value.arn] = value.composition }
                nextKey = stored.nextKey
            } catch {
                throw .internalServer("composition store: \(error.message)")
            }
        }
        let now = clock.now()
        for entry in entries.values where !isExpired(entry, now: now) {
            let composition = entry.stored.composition
            guard after.map({ $0.utf8.lexicographicallyPrecedes(composition.arn.utf8) }) ?? true,
                  nextKey.map({ !$0.utf8.lexicographicallyPrecedes(composition.arn.utf8) }) ?? true,
                  stageArn.map({ composition.stageArn == $0 }) ?? true else { continue }
            page[composition.arn] = composition
        }
        return KeysetPage(items: page.values.sorted { $0.arn.utf8.lexicographicallyPrecedes($1.arn.utf8) }, nextKey: nextKey)
    }

    private func storedComposition(_ arn: String) async throws(APIError) -> StoredComposition? {
        do { return try await store.composition(arn: arn) } catch { throw .internalServer("composition store: \(error.message)") }
    }

    /// The stage of a composition this node does not run (another node's, in a fleet).
    public func stageOfStoredComposition(arn: String) async throws(APIError) -> String? {
        guard entries[arn] == nil, ownership.isFleet else { return nil }
        return try await storedComposition(arn)?.composition.stageArn
    }

    /// Compositions not yet ended that use `arn` (an encoder or storage configuration, or a
    /// stage); in a fleet, any node's.
    public func isInUse(_ arn: String) async throws(APIError) -> Bool {
        func uses(_ composition: Composition) -> Bool {
            guard composition.state != .stopped && composition.state != .failed else { return false }
            return composition.stageArn == arn || composition.destinations.contains { destination in
                let c = destination.configuration
                return c.channel?.encoderConfigurationArn == arn || c.s3?.storageConfigurationArn == arn
                    || (c.s3?.encoderConfigurationArns.contains(arn) ?? false)
            }
        }
        if entries.values.contains(where: { uses($0.stored.composition) }) { return true }
        guard ownership.isFleet else { return false }
        return try await compositions().contains(where: uses)
    }

    /// Replaces a visible composition's tags with `update(current)`.
    public func updateTags(arn: String, _ update: @Sendable (Tags) -> Tags) async throws(APIError) -> Tags {
        guard var entry = visibleEntry(arn) else {
            // In a fleet, one no node runs any more (it ended elsewhere, or its node is gone): the
            // stored record, which the store lets this node write only while no other node holds the stage.
            guard ownership.isFleet, var stored = try await storedComposition(arn) else {
                throw .resourceNotFound("resourceArn: \(arn) not found")
            }
            let tags = update(stored.composition.tags ?? [:])
            stored.composition.tags = tags
            do { try await store.putComposition(stored) } catch {
                throw .internalServer("the composition's tags could not be stored: \(error.message)")
            }
            return tags
        }
        let tags = update(entry.stored.composition.tags ?? [:])
        entry.stored.composition.tags = tags
        entries[arn] = entry
        dirty.insert(arn)
        await flush()
        return tags
    }

    // MARK: Lifecycle

    /// One report from a pipeline thread (through the inbox; tests call it directly).
    func handle(_ report: PipelineReport, for arn: String) async {
        defer { changes.signal() }
        guard let entry = entries[arn] else { return }
        switch report {
        case .session(.mediaFlowing):
            await apply(.pipelineStarted, to: arn)
            let early = entries[arn]?.earlyChannelEvents ?? []
            entries[arn]?.earlyChannelEvents = []
            for event in early { await apply(event, to: arn) }
        case .channel(let id, let event):
            await handleChannel(event, destinationID: id, arn: arn)
        case .session(.sinkActive(_, let destinationId)):
            guard let id = destinationId else { break }
            if entry.machine?.status == .starting {
                // Before "Session Start" the lifecycle takes no destination output: replay it then.
                entries[arn]?.earlyChannelEvents.append(.destinationOutput(destinationID: id))
            } else {
                await apply(.destinationOutput(destinationID: id), to: arn)
            }
        case .session(.sinkFailed(_, let destinationId, let reason)):
            if let id = destinationId { await apply(.destinationFailed(destinationID: id, reason: reason), to: arn) }
        case .session(.publishersChanged(let count, _)):
            entries[arn]?.publishers = count
            await apply(.publishersChanged(count: count), to: arn)
        case .finished(let failure):
            entries[arn]?.handle = nil
            if let failure { entry.logger.error("pipeline ended with an error", metadata: ["error": "\(failure)"]) }
            guard let machine = entry.machine else { return }
            switch machine.status {
            case .stopping: await apply(.allDestinationsFlushed, to: arn)
            case .starting, .active: await apply(.sourceFailed(reason: failure ?? "the composition pipeline ended unexpectedly"), to: arn)
            case .stopped, .failed: break
            }
        }
        updateMetrics()
    }

    /// The RTMP sink reconnects by itself; its reports only move the destination's state:
    /// connected → ACTIVE (Destination Start, again after a recovery), dropped →
    /// RECONNECTING (Destination Reconnecting), gave up → FAILED (Destination Failure).
    private func handleChannel(_ event: ChannelEvent, destinationID id: String, arn: String) async {
        let lifecycleEvent: CompositionEvent
        switch event {
        case .active: lifecycleEvent = .destinationOutput(destinationID: id)
        case .reconnecting(let failure): lifecycleEvent = .destinationDropped(destinationID: id, reason: failure.reason.rawValue)
        case .failed(let failure): lifecycleEvent = .destinationFailed(destinationID: id, reason: failure.reason.rawValue)
        case .ended: return // Destination End comes with the graceful stop, once every output is flushed.
        }
        if case .failed(let failure) = event {
            entries[arn]?.logger.warning("channel destination failed", metadata: ["destination.id": "\(id)", "reason": "\(failure)"])
        }
        if entries[arn]?.machine?.status == .starting {
            // Before "Session Start" the lifecycle takes no destination output or drop; keep
            // every report (a failure too, so the events stay in order) until then.
            entries[arn]?.earlyChannelEvents.append(lifecycleEvent)
            return
        }
        await apply(lifecycleEvent, to: arn)
    }

    /// The RTMP push settings of a configured channel.
    /// Sends `.tick` to every composition whose deadline has passed and forgets ended
    /// compositions whose retention ran out.
    func tick() async {
        let now = clock.now()
        for (arn, entry) in entries {
            if let deadline = entry.machine?.nextDeadline, deadline <= now, !entry.isTerminal {
                await apply(.tick, to: arn)
            }
        }
        for (arn, entry) in entries where isExpired(entry, now: now) {
            entries[arn] = nil
            dirty.insert(arn)
            entry.logger.info("composition expired from Get/List")
        }
        await flush()
        updateMetrics()
        if let notifier {
            let running = runningCount
            notifier.heartbeat(status: SystemdNotifyPolicy.status(runningCompositions: running.compositions, publishers: running.publishers))
        }
    }

    /// Compositions not yet ended, and the publishers they show.
    private var runningCount: (compositions: Int, publishers: Int) {
        entries.values.reduce(into: (0, 0)) { count, entry in
            if !entry.isTerminal { count.0 += 1; count.1 += entry.publishers }
        }
    }

    private func nextWakeUp() -> MediaTime? {
        var next: MediaTime?
        for entry in entries.values {
            let deadline = entry.isTerminal ? entry.endedAt.map { $0 + lifecycle.retention } : entry.machine?.nextDeadline
            if let deadline, next.map({ deadline < $0 }) ?? true { next = deadline }
        }
        return next
    }

    private func apply(_ event: CompositionEvent, to arn: String) async {
        guard var entry = entries[arn], var machine = entry.machine else { return }
        let now = clock.now()
        let actions = machine.on(event, at: now)
        entry.machine = machine
        var followUps: [CompositionEvent] = []
        var released: StageReservation?
        for action in actions {
            switch action {
            case .emit(let notification):
                enqueue(notification, record: entry.stored)
                var metadata: Logger.Metadata = ["event": "\(notification.eventName)"]
                if let id = notification.destinationID { metadata["destination.id"] = "\(id)" }
                if let reason = notification.reason { metadata["reason"] = "\(reason)" }
                entry.logger.info("composition event", metadata: metadata)
            case .beginGracefulStop, .abortPipeline:
                entry.handle?.requestStop()
            case .finalize(let status):
                entry.endedAt = now
                if status == .failed { entry.stored.failureReason = machine.failureReason }
                // Its share of the stage's node is given back once the state is kept (below).
                released = entry.reservation
                entry.reservation = nil
            case .reconnectDestination(let id, _):
                // Never asked for with `.byDestination`; an output that cannot retry fails instead.
                followUps.append(.destinationFailed(destinationID: id, reason: "the destination cannot reconnect"))
            case .rejected(let why):
                entry.logger.debug("lifecycle ignored an event", metadata: ["event": "\(event)", "why": "\(why)"])
            case .scheduleTimer, .cancelTimer:
                break // nextDeadline is read from the machine by the timer loop
            }
        }
        sync(&entry, with: machine)
        entries[arn] = entry
        dirty.insert(arn)
        for followUp in followUps { await apply(followUp, to: arn) }
        await flush()
        // After its final state is stored: a stage placed again elsewhere meanwhile would refuse that write.
        if let released { await ownership.release(released) }
    }

    /// Copies the machine's states onto the API shape, stamping wall-clock times on changes.
    private func sync(_ entry: inout Entry, with machine: CompositionStateMachine) {
        let timestamp = wallTimestamp()
        let status = CompositionState(rawValue: machine.status.rawValue) ?? .failed
        if entry.stored.composition.state != status {
            entry.stored.composition.state = status
            if status == .stopped || status == .failed { entry.stored.composition.endTime = timestamp }
        }
        for index in entry.stored.composition.destinations.indices {
            let id = entry.stored.composition.destinations[index].id
            guard let raw = machine.destinationStatus(id)?.rawValue, let state = DestinationState(rawValue: raw) else { continue }
            let previous = entry.stored.composition.destinations[index].state
            guard previous != state else { continue }
            entry.stored.composition.destinations[index].state = state
            if state == .active, entry.stored.composition.destinations[index].startTime == nil {
                entry.stored.composition.destinations[index].startTime = timestamp
            }
            if state == .stopped || state == .failed { entry.stored.composition.destinations[index].endTime = timestamp }
        }
    }

    private func enqueue(_ notification: CompositionNotification, record: StoredComposition) {
        outbox.append(builder.event(for: notification, compositionArn: record.arn, stageArn: record.composition.stageArn))
    }

    /// Persists changed compositions, then publishes queued events, in order. One flusher at
    /// a time; a caller that finds one running leaves its work to it.
    func flush() async {
        guard !flushing else { return }
        flushing = true
        defer {
            flushing = false
            changes.signal()
        }
        while !dirty.isEmpty || !outbox.isEmpty {
            let changed = dirty
            dirty = []
            for arn in changed.sorted() {
                do {
                    if let entry = entries[arn] {
                        try await store.putComposition(entry.stored)
                    } else {
                        _ = try await store.deleteComposition(arn: arn)
                    }
                } catch {
                    logger.error("composition could not be persisted", metadata: ["composition.arn": "\(arn)", "error": "\(error)"])
                }
            }
            let batch = outbox
            outbox = []
            for event in batch { await events.publish(event) }
        }
    }

    // MARK: Helpers

    private func visibleEntry(_ arn: String) -> Entry? {
        guard let entry = entries[arn], !isExpired(entry, now: clock.now()) else { return nil }
        return entry
    }

    private func isExpired(_ entry: Entry, now: MediaTime) -> Bool {
        guard entry.isTerminal, let endedAt = entry.endedAt else { return false }
        return now >= endedAt + lifecycle.retention
    }

    private func wallTimestamp() -> APITimestamp {
        APITimestamp(secondsSince1970: Int64(wallClock().timeIntervalSince1970.rounded(.down)))
    }

    private func encoderConfiguration(_ arn: String, at path: String) async throws(APIError) -> EncoderConfiguration {
        let found: EncoderConfiguration?
        do { found = try await store.encoderConfiguration(arn: arn) } catch { throw .internalServer("encoder configuration store: \(error.message)") }
        guard let found else { throw .resourceNotFound("\(path): encoder configuration \(arn) not found") }
        return found
    }

    private func storageConfiguration(_ arn: String) async throws(APIError) -> StorageConfiguration? {
        do { return try await store.storageConfiguration(arn: arn) } catch { throw .internalServer("storage configuration store: \(error.message)") }
    }

    private func updateMetrics() {
        guard let metrics else { return }
        var compositions: [String: Int] = [:]
        var destinations: [String: Int] = [:]
        var publishers = 0
        for entry in entries.values {
            compositions[entry.stored.composition.state.rawValue, default: 0] += 1
            for destination in entry.stored.composition.destinations { destinations[destination.state.rawValue, default: 0] += 1 }
            if !entry.isTerminal { publishers += entry.publishers }
        }
        metrics.recordStates(compositions: compositions, destinations: destinations, publishers: publishers)
        let spooled = buckets.spooled()
        metrics.spoolObjects.record(spooled.objects)
        metrics.spoolBytes.record(spooled.bytes)
    }
}
