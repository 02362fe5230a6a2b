// A token bucket on explicit time: `burst` tokens at once, one more each `interval` µs. What
// paces recording work (new initialization sections) and refusal events alike. Sans-I/O: the
// caller says what time it is; the clock only moves forward here (a step back earns nothing).

public struct TokenBucket: Sendable, Equatable {
    public struct Rate: Sendable, Equatable {
        /// Tokens at once.
        public var burst: Int
        /// Then one more each this many µs.
        public var interval: Int64

        public init(burst: Int, interval: Int64) {
            self.burst = max(1, burst)
            self.interval = max(1, interval)
        }

        /// A full bucket's credit (`burst` × `interval`, saturating).
        public var capacity: Int64 { Int64(burst).multipliedReportingOverflow(by: interval).overflow ? .max : Int64(burst) &* interval }
    }

    public let rate: Rate
    /// Tokens times `interval`, so refilling is exact integer arithmetic.
    public private(set) var credit: Int64
    private var updated: Int64?

    /// A full bucket.
    public init(rate: Rate) {
        self.rate = rate
        credit = rate.capacity
    }

    /// Earns what the time since the last call is worth, up to a full bucket.
    public mutating func refill(at now: Int64) {
        if let updated, now > updated {
            credit = min(rate.capacity, credit &+ min(now &- updated, rate.capacity))
        }
        updated = max(updated ?? now, now)
    }

    /// Whether a token is there (after `refill`).
    public var hasToken: Bool { credit >= rate.interval }

    /// µs until the next token (0 when there is one).
    public var waitForToken: Int64 { max(0, rate.interval &- credit) }

    /// Takes a token (after `refill`, when `hasToken`).
    public mutating func consume() { credit = max(0, credit &- rate.interval) }

    /// Refills, then takes a token if there is one.
    public mutating func take(at now: Int64) -> Bool {
        refill(at: now)
        guard hasToken else { return false }
        consume()
        return true
    }

    /// Whether it would be full at `now`: keeping it is then the same as keeping none.
    public func isFull(at now: Int64) -> Bool {
        credit &+ max(0, now &- (updated ?? now)) >= rate.capacity
    }
}
