// Where the channel destination's reconnect rules live: a pure state machine (no I/O, no
// clock of its own) that the RTMP sender thread feeds with what happened and that answers
// with what to do next. It follows the IVS broadcast SDK's auto-reconnect: linear backoff
// (attempt n waits n × base interval), at most `maxRetries` attempts per outage, and, with
// stream takeover, a priority appended to the stream key that grows with every attempt.
//
//   STARTING ──data accepted──► ACTIVE ──drop/stall/write error──► RECONNECTING ─┐
//      │                          ▲                                    │  ▲       │ attempt failed,
//      │ connect failed           └────────data accepted───────────────┘  └───────┘ retries left
//      └──────────────► RECONNECTING            retries exhausted / permanent ──► FAILED
//   any state but FAILED ──stop──► STOPPED
//
// It reports Lifecycle's DestinationState (the API's): the composition's state machine only
// records what this machine decides.

public import Lifecycle
public import MediaCore

/// Why a connection attempt or an established connection failed.
public struct ChannelFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        /// Nothing listens at the ingest address.
        case connectionRefused = "connection refused"
        /// No route to the ingest host (or it does not resolve).
        case hostUnreachable = "host unreachable"
        /// The server accepted the connection but refused to let us publish (bad stream key).
        case streamRejected = "stream rejected"
        /// The connection stopped taking data for longer than the stall timeout.
        case writeStalled = "write stalled"
        /// Connecting (TCP, RTMP handshake, publish) took longer than the connect timeout.
        case connectionTimedOut = "connection timed out"
        /// The server closed or reset an established connection.
        case connectionLost = "connection lost"
        /// The destination cannot work at all (bad URL, unsupported protocol, muxer error).
        case invalidDestination = "invalid destination"
        /// rtmps: the server's certificate is not trusted or does not name the host.
        case certificateVerifyFailed = "certificate verify failed"
    }

    public var reason: Reason
    /// FFmpeg's wording, for logs. Never contains the stream key.
    public var detail: String

    public init(_ reason: Reason, detail: String = "") {
        self.reason = reason
        self.detail = detail
    }

    /// Retrying cannot help: the server said no, the destination is malformed, or its
    /// certificate is not trusted.
    public var isPermanent: Bool { reason == .streamRejected || reason == .invalidDestination || reason == .certificateVerifyFailed }

    public var description: String { detail.isEmpty ? reason.rawValue : "\(reason.rawValue) (\(detail))" }
}

/// What the channel destination tells its owner. Delivered on the destination's sender
/// thread, in order. The owner maps them to "Destination Start" (.active, the first time),
/// "Destination Reconnecting", "Destination Failure" and "Destination End".
public enum ChannelEvent: Sendable, Equatable {
    case active
    case reconnecting(ChannelFailure)
    case failed(ChannelFailure)
    case ended
}

/// The seed's auto-reconnect configuration.
public struct ChannelReconnectPolicy: Sendable, Equatable {
    /// Off: the first failure is final.
    public var enabled: Bool
    /// Attempts per outage; the count starts again after each recovery.
    public var maxRetries: Int
    /// Attempt n waits n × this before connecting.
    public var baseInterval: MediaTime
    /// IVS stream takeover: append `?priority=N` to the stream key, N = 1 on the first
    /// connection and one more on every attempt, so a reconnect takes over from a stale
    /// session of ours that the ingest has not dropped yet.
    public var streamTakeover: Bool

    public init(enabled: Bool = true, maxRetries: Int = 5, baseInterval: MediaTime = .seconds(2), streamTakeover: Bool = false) {
        self.enabled = enabled
        self.maxRetries = maxRetries
        self.baseInterval = baseInterval
        self.streamTakeover = streamTakeover
    }

    public static let `default` = ChannelReconnectPolicy()

    /// Linear backoff: attempt n (1-based) waits n × base interval.
    public func delay(beforeAttempt attempt: Int) -> MediaTime {
        .microseconds(Int64(attempt) * baseInterval.microsecondsValue)
    }

    /// Longest time from a failure to FAILED, not counting the attempts themselves:
    /// (1 + 2 + … + maxRetries) × base interval.
    public var totalBackoff: MediaTime {
        .microseconds(Int64(maxRetries * (maxRetries + 1) / 2) * baseInterval.microsecondsValue)
    }
}

/// The channel destination's connection state machine. The owner performs the returned
/// step and reports its outcome; states only move forward to FAILED/STOPPED.
public struct ChannelConnectionStateMachine: Sendable {
    public enum Event: Sendable, Equatable {
        /// The destination starts; `now` is on the owner's clock.
        case start(now: MediaTime)
        /// A packet was written on the current connection.
        case dataAccepted
        /// Connecting failed or the connection broke.
        case failure(ChannelFailure, now: MediaTime)
        /// The composition ended: flush and close.
        case stop
    }

    /// What the owner does next.
    public enum Step: Sendable, Equatable {
        /// Connect now, publishing to `streamKey` (with the takeover priority if any).
        case connect(streamKey: String)
        /// Wait until `deadline` (owner's clock), then connect to `streamKey`.
        case connectAfter(deadline: MediaTime, streamKey: String)
        /// Keep sending on the current connection.
        case send
        /// Close everything; the destination is done (FAILED or STOPPED).
        case close
    }

    public struct Action: Sendable, Equatable {
        /// An event to report, if the state changed in a way the owner announces.
        public var announce: ChannelEvent?
        public var step: Step

        public init(announce: ChannelEvent? = nil, step: Step) {
            self.announce = announce
            self.step = step
        }
    }

    private enum State: Sendable, Equatable {
        case idle
        case starting
        case active
        /// `attempt` (1-based) is the attempt in progress or scheduled.
        case reconnecting(attempt: Int)
        case failed(ChannelFailure)
        case stopped
    }

    private var state: State = .idle
    private let policy: ChannelReconnectPolicy
    private let streamKey: String
    /// Takeover priority of the latest connection (0: none yet).
    private var priority = 0

    public init(policy: ChannelReconnectPolicy, streamKey: String) {
        self.policy = policy
        self.streamKey = streamKey
    }

    public var destinationState: DestinationState {
        switch state {
        case .idle, .starting: return .starting
        case .active: return .active
        case .reconnecting: return .reconnecting
        case .failed: return .failed
        case .stopped: return .stopped
        }
    }

    /// The failure that ended the destination, when FAILED.
    public var failure: ChannelFailure? {
        if case .failed(let failure) = state { return failure }
        return nil
    }

    public mutating func on(_ event: Event) -> Action {
        switch (state, event) {
        case (.idle, .start):
            state = .starting
            return Action(step: .connect(streamKey: nextStreamKey()))

        case (.starting, .dataAccepted), (.reconnecting, .dataAccepted):
            state = .active
            return Action(announce: .active, step: .send)
        case (.active, .dataAccepted):
            return Action(step: .send)

        case (.starting, .failure(let failure, let now)), (.active, .failure(let failure, let now)):
            guard policy.enabled, policy.maxRetries > 0, !failure.isPermanent else { return fail(failure) }
            state = .reconnecting(attempt: 1)
            return Action(announce: .reconnecting(failure), step: scheduleAttempt(1, now: now))
        case (.reconnecting(let attempt), .failure(let failure, let now)):
            guard attempt < policy.maxRetries, !failure.isPermanent else { return fail(failure) }
            state = .reconnecting(attempt: attempt + 1)
            return Action(step: scheduleAttempt(attempt + 1, now: now))

        case (.idle, .stop), (.starting, .stop), (.active, .stop), (.reconnecting, .stop):
            state = .stopped
            return Action(announce: .ended, step: .close)

        case (.failed, _), (.stopped, _):
            return Action(step: .close)
        case (.idle, _):
            // Nothing happens before start.
            return Action(step: .close)
        case (_, .start):
            // Started twice: keep going as before.
            return Action(step: .send)
        }
    }

    private mutating func fail(_ failure: ChannelFailure) -> Action {
        state = .failed(failure)
        return Action(announce: .failed(failure), step: .close)
    }

    private mutating func scheduleAttempt(_ attempt: Int, now: MediaTime) -> Step {
        .connectAfter(deadline: now + policy.delay(beforeAttempt: attempt), streamKey: nextStreamKey())
    }

    private mutating func nextStreamKey() -> String {
        guard policy.streamTakeover else { return streamKey }
        priority += 1
        return "\(streamKey)?priority=\(priority)"
    }
}
