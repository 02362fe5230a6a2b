// A doorbell for "something changed, look again": the owner of some state rings it after every
// change; a waiter notes the generation, checks its condition, and sleeps until the next ring
// (or its deadline, or its cancellation) instead of polling on a timer.
import Synchronization

public final class ChangeSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    /// Increases with every `signal()`: read it before checking a condition, then wait for a change after it.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Wakes every waiter.
    public func signal() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the generation is past `generation`, the task is cancelled, or `deadline`
    /// (when given) passes, whichever is first.
    public func changed(after generation: UInt64, deadline: ContinuousClock.Instant? = nil) async {
        guard let deadline else { return await changed(after: generation) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.changed(after: generation) }
            group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Waits until `condition` holds (checked again after every change) or `deadline` passes;
    /// returns whether it holds. For conditions on state outside an actor.
    public func wait(until deadline: ContinuousClock.Instant? = nil, for condition: () -> Bool) async -> Bool {
        while true {
            let seen = generation
            if condition() { return true }
            if let deadline, ContinuousClock.now >= deadline { return false }
            if Task.isCancelled { return false }
            await changed(after: seen, deadline: deadline)
        }
    }

    private func changed(after generation: UInt64) async {
        let id = state.withLock { state in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
