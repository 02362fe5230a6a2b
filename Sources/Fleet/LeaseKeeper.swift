// A node's view of its own lease, on its local monotonic clock (milliseconds). Pure: the
// heartbeat loop tells it what happened and asks what to do.
//   - A renewal that succeeded proves the database's lease valid until (at least) the time
//     the request was *sent* plus the TTL: the database stamped it later than that. The node
//     believes itself the owner until then, minus a safety margin for clock-rate drift.
//   - Past that moment without a newer success (an answer arriving later is too late), or when the database says the lease is
//     gone, the node fences itself: it stops its outputs and writes nothing more. Fencing is
//     final for this incarnation; a node comes back only by registering again.
//   - It may reap other nodes only after it has itself renewed without a break for a full
//     TTL, so a database outage that every node saw never makes one node reap the others.
public struct LeaseKeeper: Sendable, Equatable {
    public struct Settings: Sendable, Equatable {
        public var ttlMs: Int64
        public var heartbeatMs: Int64
        /// Taken off the lease the node believes it holds (clock-rate drift, scheduling).
        public var safetyMarginMs: Int64

        /// Valid when 0 < heartbeat and heartbeat + margin < TTL (a heartbeat can fail once
        /// and the next still land inside the lease).
        public init(ttlMs: Int64 = 10_000, heartbeatMs: Int64 = 1_000, safetyMarginMs: Int64 = 1_000) {
            self.ttlMs = ttlMs
            self.heartbeatMs = heartbeatMs
            self.safetyMarginMs = safetyMarginMs
        }

        public var problems: [String] {
            var problems: [String] = []
            if heartbeatMs <= 0 { problems.append("heartbeat must be positive, not \(heartbeatMs) ms") }
            if safetyMarginMs < 0 { problems.append("safety margin must not be negative") }
            if heartbeatMs + safetyMarginMs >= ttlMs {
                problems.append("lease TTL \(ttlMs) ms must exceed the heartbeat (\(heartbeatMs) ms) plus the margin (\(safetyMarginMs) ms)")
            }
            return problems
        }
    }

    public enum State: Sendable, Equatable {
        /// Not registered yet.
        case joining
        /// Owner of its placements until `until` (local ms).
        case active(until: Int64)
        /// Stopped for good: why.
        case fenced(String)
    }

    public let settings: Settings
    public private(set) var state: State = .joining
    /// Send time of the first success of the current unbroken run of successes.
    public private(set) var connectedSince: Int64?

    public init(settings: Settings) { self.settings = settings }

    /// The registration sent at `sentAt` succeeded.
    public mutating func registered(sentAt: Int64) {
        guard case .joining = state else { return }
        state = .active(until: sentAt &+ settings.ttlMs &- settings.safetyMarginMs)
        connectedSince = sentAt
    }

    /// A renewal sent at `sentAt` succeeded; its answer came at `now`. An answer that comes
    /// after the lease the node knew of had run out changes nothing: the node stopped being
    /// the owner at that moment (whether or not anything asked), and fencing is final.
    public mutating func renewed(sentAt: Int64, at now: Int64) {
        guard check(at: now), case .active(let until) = state else { return }
        state = .active(until: max(until, sentAt &+ settings.ttlMs &- settings.safetyMarginMs))
        if connectedSince == nil { connectedSince = sentAt }
    }

    /// The database answered that this incarnation's lease is gone.
    public mutating func renewalRefused() {
        guard case .active = state else { return }
        state = .fenced("the database no longer holds this node's lease (expired, reaped, or the node registered again)")
        connectedSince = nil
    }

    /// A renewal failed without an answer (the database unreachable, a timeout).
    public mutating func renewalFailed() {
        connectedSince = nil
    }

    /// Whether the node still owns its placements at `now`; fences it when the lease ran out.
    public mutating func check(at now: Int64) -> Bool {
        guard case .active(let until) = state else { return false }
        guard now < until else {
            state = .fenced("could not renew the lease within \(settings.ttlMs) ms (the last proven lease ended \(now &- until) ms ago)")
            connectedSince = nil
            return false
        }
        return true
    }

    /// Whether it may declare other nodes dead at `now`: active, and renewing without a break
    /// for at least a full TTL.
    public func mayReap(at now: Int64) -> Bool {
        guard case .active(let until) = state, now < until, let since = connectedSince else { return false }
        return now &- since >= settings.ttlMs
    }
}
