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
import APIModels
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
import Composition

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
    let inbox: AsyncStream<(String, PipelineReport)>
    let inboxContinuation: AsyncStream<(String, PipelineReport)>.Continuation
    /// Background work run() runs as its children (see `run`).
    let pendingJobs: AsyncStream<@Sendable () async -> Void>
    let jobs: AsyncStream<@Sendable () async -> Void>.Continuation

    /// systemd: the watchdog is pinged and the status updated from the timer loop.
    let notifier: SystemdNotifier?
    var entries: [String: Entry] = [:]
    var outbox: [CompositionStateChangeEvent] = []
    var dirty: Set<String> = []
    var flushing = false
    /// Rung after every change of `entries` that waits look for (a pipeline's report, a flush).
    let changes = ChangeSignal()

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
            // The channel sink retries by itself (channels[].reconnect); the lifecycle only records it.
            retention: .microseconds(Int64(l.retentionSeconds * 1_000_000)))
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

    func timerLoop() async {
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
    var isSettled: Bool {
        !entries.values.contains(where: { !$0.isTerminal || $0.handle != nil }) && !flushing && dirty.isEmpty && outbox.isEmpty
    }

    /// Waits until `condition` holds or `deadline` passes (checked after every change `changes` rings).
    func waitUntil(_ deadline: ContinuousClock.Instant, _ condition: () -> Bool) async -> Bool {
        while true {
            let seen = changes.generation
            if condition() { return true }
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return false }
            await changes.changed(after: seen, deadline: deadline)
        }
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
        case .session(.directed):
            break // logged by the session with its composition time
        case .session(.activeSpeaker):
            metrics?.activeSpeakerSwitches.increment()
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
    func handleChannel(_ event: ChannelEvent, destinationID id: String, arn: String) async {
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
    var runningCount: (compositions: Int, publishers: Int) {
        entries.values.reduce(into: (0, 0)) { count, entry in
            if !entry.isTerminal { count.0 += 1; count.1 += entry.publishers }
        }
    }

    func nextWakeUp() -> MediaTime? {
        var next: MediaTime?
        for entry in entries.values {
            let deadline = entry.isTerminal ? entry.endedAt.map { $0 + lifecycle.retention } : entry.machine?.nextDeadline
            if let deadline, next.map({ deadline < $0 }) ?? true { next = deadline }
        }
        return next
    }

    func apply(_ event: CompositionEvent, to arn: String) async {
        guard var entry = entries[arn], var machine = entry.machine else { return }
        let now = clock.now()
        let actions = machine.on(event, at: now)
        entry.machine = machine
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
            case .rejected(let why):
                entry.logger.debug("lifecycle ignored an event", metadata: ["event": "\(event)", "why": "\(why)"])
            case .scheduleTimer, .cancelTimer:
                break // nextDeadline is read from the machine by the timer loop
            }
        }
        sync(&entry, with: machine)
        entries[arn] = entry
        dirty.insert(arn)
        await flush()
        // After its final state is stored: a stage placed again elsewhere meanwhile would refuse that write.
        if let released { await ownership.release(released) }
    }

    /// Copies the machine's states onto the API shape, stamping wall-clock times on changes.
    func sync(_ entry: inout Entry, with machine: CompositionStateMachine) {
        let timestamp = wallTimestamp()
        let status = machine.status
        if entry.stored.composition.state != status {
            entry.stored.composition.state = status
            if status == .stopped || status == .failed { entry.stored.composition.endTime = timestamp }
        }
        for index in entry.stored.composition.destinations.indices {
            let id = entry.stored.composition.destinations[index].id
            guard let state = machine.destinationStatus(id) else { continue }
            let previous = entry.stored.composition.destinations[index].state
            guard previous != state else { continue }
            entry.stored.composition.destinations[index].state = state
            if state == .active, entry.stored.composition.destinations[index].startTime == nil {
                entry.stored.composition.destinations[index].startTime = timestamp
            }
            if state == .stopped || state == .failed { entry.stored.composition.destinations[index].endTime = timestamp }
        }
    }

    func enqueue(_ notification: CompositionNotification, record: StoredComposition) {
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

    func visibleEntry(_ arn: String) -> Entry? {
        guard let entry = entries[arn], !isExpired(entry, now: clock.now()) else { return nil }
        return entry
    }

    func isExpired(_ entry: Entry, now: MediaTime) -> Bool {
        guard entry.isTerminal, let endedAt = entry.endedAt else { return false }
        return now >= endedAt + lifecycle.retention
    }

    func wallTimestamp() -> APITimestamp {
        APITimestamp(secondsSince1970: Int64(wallClock().timeIntervalSince1970.rounded(.down)))
    }

    func encoderConfiguration(_ arn: String, at path: String) async throws(APIError) -> EncoderConfiguration {
        let found: EncoderConfiguration?
        do { found = try await store.encoderConfiguration(arn: arn) } catch { throw .internalServer("encoder configuration store: \(error.message)") }
        guard let found else { throw .resourceNotFound("\(path): encoder configuration \(arn) not found") }
        return found
    }

    func storageConfiguration(_ arn: String) async throws(APIError) -> StorageConfiguration? {
        do { return try await store.storageConfiguration(arn: arn) } catch { throw .internalServer("storage configuration store: \(error.message)") }
    }

    func updateMetrics() {
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
