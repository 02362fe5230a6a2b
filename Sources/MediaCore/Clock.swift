import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The composition clock's source of "now". The daemon uses the wall clock; tests and
/// as-fast-as-possible renders use a `ManualClock` that only moves when told to, so every
/// timer (auto-shutdown, retries, cleanup) runs in virtual time through the same code.
public protocol MediaClock: Sendable {
    /// Monotonic time since an arbitrary origin, in microseconds.
    func now() -> MediaTime
    /// Waits until `deadline`; a manual clock returns at once after advancing to it.
    func sleep(until deadline: MediaTime) async throws
    /// The same, blocking the calling thread (a composition's own thread, never a task).
    func sleepBlocking(until deadline: MediaTime)
}

/// Wall-clock time from the system's monotonic clock.
public struct SystemMediaClock: MediaClock {
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    public init() { origin = clock.now }

    public func now() -> MediaTime {
        let elapsed = clock.now - origin
        let (seconds, attoseconds) = elapsed.components
        return .microseconds(seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
    }

    public func sleep(until deadline: MediaTime) async throws {
        let remaining = deadline.microsecondsValue - now().microsecondsValue
        if remaining > 0 { try await Task.sleep(for: .microseconds(remaining)) }
    }

    public func sleepBlocking(until deadline: MediaTime) {
        while true {
            let remaining = deadline.microsecondsValue - now().microsecondsValue
            guard remaining > 0 else { return }
            var request = timespec(tv_sec: Int(remaining / 1_000_000), tv_nsec: Int(remaining % 1_000_000) * 1000)
            var left = timespec()
            _ = nanosleep(&request, &left)
        }
    }
}

/// A clock that moves only when advanced: virtual time for tests and fast renders.
public final class ManualMediaClock: MediaClock {
    private let current: Mutex<Int64>

    public init(start: MediaTime = .zero) { current = Mutex(start.microsecondsValue) }

    public func now() -> MediaTime { .microseconds(current.withLock { $0 }) }

    public func advance(to time: MediaTime) {
        current.withLock { $0 = Swift.max($0, time.microsecondsValue) }
    }

    public func advance(by span: MediaTime) {
        current.withLock { $0 += span.microsecondsValue }
    }

    public func sleep(until deadline: MediaTime) async throws {
        advance(to: deadline)
    }

    public func sleepBlocking(until deadline: MediaTime) {
        advance(to: deadline)
    }
}
