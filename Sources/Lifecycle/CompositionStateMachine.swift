// The composition lifecycle (the user guide's "Composition Lifecycle") as a value:
// events in, actions out, no I/O. The owner (the server's composition runner) performs
// the actions and feeds back what happened, and drives the timers by sending `.tick`
// when the clock reaches `nextDeadline`; with a ManualMediaClock that is virtual time.
//
//   STARTING ──pipelineStarted──▶ ACTIVE ──stop / idle 60 s / 24 h──▶ STOPPING ──flushed──▶ STOPPED
//       │                            │                                   │
//       └──── source failed, idle before media, all destinations failed ─┴──────────────▶ FAILED
//
// States only move forward. Each destination has its own forward-only track:
// STARTING → ACTIVE ⇄ RECONNECTING → FAILED, and ACTIVE/RECONNECTING → STOPPING → STOPPED.
// A destination's output reconnects by itself (the RTMP channel sink does, under its
// ChannelReconnectPolicy): the machine records RECONNECTING and waits to hear that output
// flows again or that the destination gave up; it keeps no reconnect timer of its own.
//
// The two state types here are the API's (APIModels uses them as they are), the sinks' and
// the store's: one vocabulary from the request to the sink.
public import MediaCore

/// A composition's state (the model's `CompositionState`).
public enum CompositionState: String, Codable, Sendable, CaseIterable {
    case starting = "STARTING", active = "ACTIVE", stopping = "STOPPING", stopped = "STOPPED", failed = "FAILED"

    public var isTerminal: Bool { self == .stopped || self == .failed }
}

/// A destination's state (the model's `DestinationState`).
public enum DestinationState: String, Codable, Sendable, CaseIterable {
    case starting = "STARTING", active = "ACTIVE", stopping = "STOPPING", reconnecting = "RECONNECTING"
    case failed = "FAILED", stopped = "STOPPED"
}

/// Why a composition shuts down gracefully.
public enum StopReason: String, Sendable, Hashable {
    /// StopComposition was called.
    case stopRequested
    /// No participant published for the idle timeout (60 s).
    case idleTimeout
    /// The maximum composition duration (24 h) was reached.
    case maximumDuration
}

/// The lifecycle's timers, each a deadline on the composition clock.
public enum CompositionTimer: Hashable, Sendable {
    case maximumDuration
    case idleShutdown
}

/// What happened, as reported by the owner.
public enum CompositionEvent: Hashable, Sendable {
    /// The pipeline subscribed to the stage and produces composed media.
    case pipelineStarted
    /// A destination wrote output successfully (may be sent for every write).
    case destinationOutput(destinationID: String)
    /// A destination's output broke and it is reconnecting (again: nothing changes).
    case destinationDropped(destinationID: String, reason: String)
    /// A destination's output reconnected.
    case destinationRecovered(destinationID: String)
    /// A destination cannot recover (e.g. stream key invalid): FAILED at once.
    case destinationFailed(destinationID: String, reason: String)
    /// StopComposition.
    case stopRequested
    /// After `beginGracefulStop`: every destination has flushed and closed its output.
    case allDestinationsFlushed
    /// The number of participants publishing on the stage changed.
    case publishersChanged(count: Int)
    /// The clock reached a deadline (sending it early or late is harmless).
    case tick
    /// The stage source failed (unknown stage, subscription error).
    case sourceFailed(reason: String)
    /// An explicit maximum-duration signal (the machine's own timer does the same).
    case maxDurationReached
}

/// Notifications that become EventBridge "IVS Composition State Change" events.
public enum CompositionNotification: Hashable, Sendable {
    case sessionStart
    case sessionEnd
    case sessionFailure(reason: String)
    case destinationStart(destinationID: String)
    case destinationEnd(destinationID: String)
    case destinationReconnecting(destinationID: String)
    case destinationFailure(destinationID: String, reason: String)

    /// The `detail.event_name` value.
    public var eventName: String {
        switch self {
        case .sessionStart: "Session Start"
        case .sessionEnd: "Session End"
        case .sessionFailure: "Session Failure"
        case .destinationStart: "Destination Start"
        case .destinationEnd: "Destination End"
        case .destinationReconnecting: "Destination Reconnecting"
        case .destinationFailure: "Destination Failure"
        }
    }

    public var destinationID: String? {
        switch self {
        case .destinationStart(let id), .destinationEnd(let id), .destinationReconnecting(let id),
             .destinationFailure(let id, _): id
        case .sessionStart, .sessionEnd, .sessionFailure: nil
        }
    }

    public var reason: String? {
        switch self {
        case .sessionFailure(let reason), .destinationFailure(_, let reason): reason
        default: nil
        }
    }
}

/// What the owner must do, in order.
public enum CompositionAction: Hashable, Sendable {
    /// Publish an event (EventBridge envelope, sinks).
    case emit(CompositionNotification)
    /// Wake up with `.tick` at `deadline` (replaces an earlier deadline for the same timer).
    case scheduleTimer(CompositionTimer, deadline: MediaTime)
    case cancelTimer(CompositionTimer)
    /// Stop composing, flush and close every live destination output, then send
    /// `.allDestinationsFlushed`.
    case beginGracefulStop(StopReason)
    /// Tear the pipeline down now (nothing left worth flushing, or the source is gone).
    case abortPipeline(reason: String)
    /// The composition has ended in `status`: persist it, finalize recordings' metadata,
    /// and remove it from Get/List once `isExpired(now:)`.
    case finalize(CompositionState)
    /// The event makes no sense in the current state (an owner bug); nothing changed.
    case rejected(String)
}

/// Tunables, all in composition-clock time so tests can shrink them.
public struct CompositionLifecycleConfiguration: Sendable, Hashable {
    public var idleTimeout: MediaTime
    public var maximumDuration: MediaTime
    /// How long a STOPPED/FAILED composition stays visible to Get/List.
    public var retention: MediaTime

    public init(idleTimeout: MediaTime = .seconds(60), maximumDuration: MediaTime = .seconds(24 * 3600),
                retention: MediaTime = .seconds(5 * 60)) {
        self.idleTimeout = idleTimeout
        self.maximumDuration = maximumDuration
        self.retention = retention
    }
}

public struct CompositionStateMachine: Sendable {
    private enum State: Sendable {
        case starting
        case active
        case stopping(StopReason)
        case stopped
        case failed(reason: String)
    }

    private enum DestinationPhase: Sendable, Equatable {
        case starting
        case active
        case reconnecting
        case stopping
        case stopped
        case failed(reason: String)
    }

    private struct DestinationRecord: Sendable {
        let id: String
        var phase: DestinationPhase = .starting
        var startedAt: MediaTime?
        var endedAt: MediaTime?

        var isTerminal: Bool {
            switch phase {
            case .stopped, .failed: true
            default: false
            }
        }
    }

    public let configuration: CompositionLifecycleConfiguration
    public let createdAt: MediaTime
    /// When "Session Start" happened.
    public private(set) var sessionStartedAt: MediaTime?
    public private(set) var endedAt: MediaTime?
    public private(set) var publisherCount: Int

    private var state: State = .starting
    private var destinations: [DestinationRecord]
    private var timers: [CompositionTimer: MediaTime] = [:]

    /// A new composition in STARTING. The maximum-duration timer starts now, and the idle
    /// timer too when nobody publishes yet: read `scheduledTimers` to arm them.
    public init(destinationIDs: [String], createdAt: MediaTime, publisherCount: Int,
                configuration: CompositionLifecycleConfiguration = CompositionLifecycleConfiguration()) {
        precondition(!destinationIDs.isEmpty && Set(destinationIDs).count == destinationIDs.count,
                     "a composition needs distinct destination IDs")
        self.configuration = configuration
        self.createdAt = createdAt
        self.publisherCount = max(0, publisherCount)
        destinations = destinationIDs.map { DestinationRecord(id: $0) }
        timers[.maximumDuration] = createdAt + configuration.maximumDuration
        if publisherCount <= 0 { timers[.idleShutdown] = createdAt + configuration.idleTimeout }
    }

    // MARK: Reading

    public var status: CompositionState {
        switch state {
        case .starting: .starting
        case .active: .active
        case .stopping: .stopping
        case .stopped: .stopped
        case .failed: .failed
        }
    }

    public var stopReason: StopReason? {
        if case .stopping(let reason) = state { return reason }
        return nil
    }

    public var failureReason: String? {
        if case .failed(let reason) = state { return reason }
        return nil
    }

    public var destinationIDs: [String] { destinations.map(\.id) }

    public func destinationStatus(_ id: String) -> DestinationState? {
        guard let record = destinations.first(where: { $0.id == id }) else { return nil }
        return switch record.phase {
        case .starting: .starting
        case .active: .active
        case .reconnecting: .reconnecting
        case .stopping: .stopping
        case .stopped: .stopped
        case .failed: .failed
        }
    }

    public func destinationStartedAt(_ id: String) -> MediaTime? { destinations.first { $0.id == id }?.startedAt }
    public func destinationEndedAt(_ id: String) -> MediaTime? { destinations.first { $0.id == id }?.endedAt }

    /// Armed timers, earliest first.
    public var scheduledTimers: [(timer: CompositionTimer, deadline: MediaTime)] {
        timers.map { ($0.key, $0.value) }.sorted { $0.1 < $1.1 || ($0.1 == $1.1 && Self.rank($0.0) < Self.rank($1.0)) }
    }

    /// When the owner should send `.tick` next.
    public var nextDeadline: MediaTime? { timers.values.min() }

    /// STOPPED/FAILED compositions leave Get/List `retention` (5 min) after they end.
    public func isExpired(now: MediaTime) -> Bool {
        guard let endedAt else { return false }
        return now >= endedAt + configuration.retention
    }

    // MARK: Events

    public mutating func on(_ event: CompositionEvent, at now: MediaTime) -> [CompositionAction] {
        switch state {
        case .stopped, .failed:
            // Late reports from a pipeline that is winding down are expected; nothing moves.
            return []
        case .starting, .active, .stopping:
            break
        }
        switch event {
        case .pipelineStarted:
            guard case .starting = state else { return [] }
            state = .active
            sessionStartedAt = now
            return [.emit(.sessionStart)]

        case .destinationOutput(let id):
            return destinationOutput(id, now: now)

        case .destinationDropped(let id, let reason):
            return destinationDropped(id, reason: reason, now: now)

        case .destinationRecovered(let id):
            return destinationRecovered(id, now: now)

        case .destinationFailed(let id, let reason):
            guard let index = index(of: id) else { return [.rejected("unknown destination \(id)")] }
            guard !destinations[index].isTerminal else { return [] }
            return failDestination(at: index, reason: reason, now: now)

        case .stopRequested:
            guard !isStopping else { return [] }
            return beginStop(.stopRequested, now: now)

        case .maxDurationReached:
            guard !isStopping else { return [] }
            return beginStop(.maximumDuration, now: now)

        case .allDestinationsFlushed:
            guard isStopping else { return [.rejected("no graceful stop in progress")] }
            return finishStop(now: now)

        case .publishersChanged(let count):
            guard count >= 0 else { return [.rejected("negative publisher count \(count)")] }
            publisherCount = count
            guard !isStopping else { return [] }
            if count == 0, timers[.idleShutdown] == nil {
                let deadline = now + configuration.idleTimeout
                timers[.idleShutdown] = deadline
                return [.scheduleTimer(.idleShutdown, deadline: deadline)]
            }
            if count > 0, timers.removeValue(forKey: .idleShutdown) != nil {
                return [.cancelTimer(.idleShutdown)]
            }
            return []

        case .tick:
            return tick(now: now)

        case .sourceFailed(let reason):
            guard !isStopping else { return [] }
            return failSession(reason: reason, now: now)
        }
    }

    // MARK: Transitions

    private var isStopping: Bool {
        if case .stopping = state { return true }
        return false
    }

    private func index(of id: String) -> Int? { destinations.firstIndex { $0.id == id } }

    private mutating func destinationOutput(_ id: String, now: MediaTime) -> [CompositionAction] {
        guard let index = index(of: id) else { return [.rejected("unknown destination \(id)")] }
        switch (state, destinations[index].phase) {
        case (.starting, _):
            return [.rejected("destination \(id) produced output before the pipeline started")]
        case (.active, .starting):
            destinations[index].phase = .active
            destinations[index].startedAt = now
            return [.emit(.destinationStart(destinationID: id))]
        case (.active, .reconnecting):
            // Output flowing again is as good as a reported recovery.
            return destinationRecovered(id, now: now)
        case (.active, .failed):
            return [.rejected("destination \(id) already failed")]
        default:
            // Steady output, or output while flushing: nothing changes.
            return []
        }
    }

    private mutating func destinationDropped(_ id: String, reason: String, now: MediaTime) -> [CompositionAction] {
        guard let index = index(of: id) else { return [.rejected("unknown destination \(id)")] }
        switch (state, destinations[index].phase) {
        case (.starting, _):
            return [.rejected("destination \(id) dropped before the pipeline started")]
        case (.active, .starting), (.active, .active):
            destinations[index].phase = .reconnecting
            return [.emit(.destinationReconnecting(destinationID: id))]
        case (.active, .reconnecting):
            // Another failed attempt of the destination's own retries: nothing changes here.
            return []
        case (.stopping, .stopping):
            // No retries while shutting down: the output is lost.
            return failDestination(at: index, reason: reason, now: now)
        default:
            return []
        }
    }

    private mutating func destinationRecovered(_ id: String, now: MediaTime) -> [CompositionAction] {
        guard let index = index(of: id) else { return [.rejected("unknown destination \(id)")] }
        switch (state, destinations[index].phase) {
        case (.starting, _):
            return [.rejected("destination \(id) recovered before the pipeline started")]
        case (.active, .starting):
            return [.rejected("destination \(id) recovered but never started")]
        case (.active, .reconnecting):
            destinations[index].phase = .active
            // Output started again: consumers that track destinations see it come back.
            return [.emit(.destinationStart(destinationID: id))]
        default:
            return []
        }
    }

    private mutating func failDestination(at index: Int, reason: String, now: MediaTime) -> [CompositionAction] {
        let id = destinations[index].id
        var actions: [CompositionAction] = []
        destinations[index].phase = .failed(reason: reason)
        destinations[index].endedAt = now
        actions.append(.emit(.destinationFailure(destinationID: id, reason: reason)))
        if destinations.allSatisfy({ if case .failed = $0.phase { true } else { false } }) {
            actions += failSession(reason: "All destinations failed", now: now)
        }
        return actions
    }

    private mutating func beginStop(_ reason: StopReason, now: MediaTime) -> [CompositionAction] {
        var actions = cancelAllTimers()
        for index in destinations.indices {
            switch destinations[index].phase {
            case .active, .reconnecting:
                destinations[index].phase = .stopping
            case .starting:
                // Never produced output: nothing to flush, no "Destination End".
                destinations[index].phase = .stopped
                destinations[index].endedAt = now
            case .stopping, .stopped, .failed:
                break
            }
        }
        state = .stopping(reason)
        actions.append(.beginGracefulStop(reason))
        return actions
    }

    private mutating func finishStop(now: MediaTime) -> [CompositionAction] {
        var actions: [CompositionAction] = []
        for index in destinations.indices where destinations[index].phase == .stopping {
            destinations[index].phase = .stopped
            destinations[index].endedAt = now
            actions.append(.emit(.destinationEnd(destinationID: destinations[index].id)))
        }
        state = .stopped
        endedAt = now
        actions += [.emit(.sessionEnd), .finalize(.stopped)]
        return actions
    }

    private mutating func failSession(reason: String, now: MediaTime) -> [CompositionAction] {
        var actions = cancelAllTimers()
        for index in destinations.indices {
            switch destinations[index].phase {
            case .active, .reconnecting, .stopping:
                // Whatever was written stays valid: the owner finalizes it.
                destinations[index].phase = .stopped
                destinations[index].endedAt = now
                actions.append(.emit(.destinationEnd(destinationID: destinations[index].id)))
            case .starting:
                destinations[index].phase = .failed(reason: reason)
                destinations[index].endedAt = now
            case .stopped, .failed:
                break
            }
        }
        state = .failed(reason: reason)
        endedAt = now
        actions += [.emit(.sessionFailure(reason: reason)), .abortPipeline(reason: reason), .finalize(.failed)]
        return actions
    }

    private mutating func tick(now: MediaTime) -> [CompositionAction] {
        if let deadline = timers[.maximumDuration], deadline <= now {
            return beginStop(.maximumDuration, now: now)
        }
        if let deadline = timers[.idleShutdown], deadline <= now {
            if case .starting = state {
                // Never got media and nobody publishes: the pipeline could not start.
                return failSession(reason: "No participants publishing in the stage", now: now)
            }
            return beginStop(.idleTimeout, now: now)
        }
        return []
    }

    private mutating func cancelAllTimers() -> [CompositionAction] {
        let cancelled = scheduledTimers.map { CompositionAction.cancelTimer($0.timer) }
        timers.removeAll()
        return cancelled
    }

    private static func rank(_ timer: CompositionTimer) -> Int {
        switch timer {
        case .maximumDuration: 0
        case .idleShutdown: 1
        }
    }
}
