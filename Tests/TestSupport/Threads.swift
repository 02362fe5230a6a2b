// Helpers shared by the test targets.
import Foundation

/// Runs blocking work (a composition, process I/O) on a fresh thread and returns its result.
/// Never block the Swift concurrency pool: on a 2-core machine it has two threads, and the
/// async tests running beside a blocked one would starve.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 16 << 20
        thread.start()
    }
}
