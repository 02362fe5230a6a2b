// One code path for real-time and as-fast-as-possible: the session asks the pacer to wait
// until each output frame is due. The real-time pacer sleeps on the monotonic clock; the
// fast one returns at once (the composition clock is then virtual).

#if canImport(Glibc)
import Glibc
#endif
public import MediaCore

public protocol Pacer {
    /// Blocks until `stageTime` (from the start of the composition) is due. Returns how late
    /// the caller already is, in µs (0 when on time).
    mutating func wait(until stageTime: MediaTime) -> Int64
}

public struct AsFastAsPossiblePacer: Pacer {
    public init() {}
    public mutating func wait(until stageTime: MediaTime) -> Int64 { 0 }
}

public struct RealtimePacer: Pacer {
    private var origin: Int64?

    public init() {}

    public mutating func wait(until stageTime: MediaTime) -> Int64 {
        let now = RealtimePacer.monotonicMicroseconds()
        let start = origin ?? now
        origin = start
        let deadline = start + stageTime.microsecondsValue
        if deadline > now {
            var request = timespec(tv_sec: Int((deadline - now) / 1_000_000), tv_nsec: Int((deadline - now) % 1_000_000) * 1000)
            var remaining = timespec()
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
            return 0
        }
        return now - deadline
    }

    static func monotonicMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
