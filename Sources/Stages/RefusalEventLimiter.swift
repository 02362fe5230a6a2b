// Which refused publishes become a "Participant Publish Error" event. A refusal costs an
// attacker one connection, and costs us an event in the events file, the webhook and the
// stage's history: an ingest configuration ID is not secret (it is in its ARN and the logs),
// so anyone can make a configuration's stage refuse them at the rate they connect. Each
// refusal is counted (in /metrics); events are paced by two token buckets, one per remote
// address and one per participant, and a refusal becomes an event only when both have a
// token. The first refusals of a real publisher with a mistyped key still show at once.
//
// Sans-I/O with explicit time (µs), and bounded: at most `maxKeys` buckets are kept; when
// full, buckets that refilled (the same as none) go first, then the emptiest.

public import MediaCore

public struct RefusalEventLimiter: Sendable {
    public typealias Rate = TokenBucket.Rate

    /// Per participant (stage and participant ID): 3 at once, then one a minute.
    public static let perParticipant = Rate(burst: 3, interval: 60_000_000)
    /// Per remote address: 10 at once, then one each 10 s.
    public static let perAddress = Rate(burst: 10, interval: 10_000_000)

    private let participantRate: Rate
    private let addressRate: Rate
    private let maxKeys: Int
    private var buckets: [String: TokenBucket] = [:]

    public init(participant: Rate = Self.perParticipant, address: Rate = Self.perAddress, maxKeys: Int = 4096) {
        participantRate = participant
        addressRate = address
        self.maxKeys = max(2, maxKeys)
    }

    /// Buckets kept now (for tests: never above `maxKeys`).
    public var keyCount: Int { buckets.count }

    /// A refusal of `participant` (`<stage ARN>/<participant ID>`) from `address` (nil when
    /// unknown) at `now`: true when it becomes an event. Either way it is counted by the caller.
    public mutating func admitEvent(participant: String, address: String?, at now: Int64) -> Bool {
        let keys = [("p:" + participant, participantRate)] + (address.map { [("a:" + $0, addressRate)] } ?? [])
        var refilled: [(String, TokenBucket)] = keys.map { key, rate in
            var bucket = buckets[key] ?? TokenBucket(rate: rate)
            bucket.refill(at: now)
            return (key, bucket)
        }
        // One event takes a token from every bucket, or from none.
        let allowed = refilled.allSatisfy { $0.1.hasToken }
        if allowed { for index in refilled.indices { refilled[index].1.consume() } }
        for (key, bucket) in refilled {
            if buckets[key] == nil && buckets.count >= maxKeys { evict(at: now) }
            buckets[key] = bucket
        }
        return allowed
    }

    /// Makes room for one bucket: every bucket that has refilled by now is dropped (keeping
    /// one is the same as keeping none); if none has, the emptiest (the one an attacker spent most).
    private mutating func evict(at now: Int64) {
        buckets = buckets.filter { !$0.value.isFull(at: now) }
        if buckets.count >= maxKeys, let oldest = buckets.min(by: { $0.value.credit < $1.value.credit })?.key {
            buckets[oldest] = nil
        }
    }
}

extension RefusalEventLimiter {
    /// The host of an "address:port" ("[v6]:port") remote address: one bucket per host, not
    /// per connection's port.
    public static func host(of remote: String) -> String {
        if remote.hasPrefix("["), let close = remote.firstIndex(of: "]") { return String(remote[...close]) }
        let colons = remote.filter { $0 == ":" }.count
        if colons == 1, let colon = remote.lastIndex(of: ":") { return String(remote[..<colon]) }
        return remote
    }
}
