import MediaCore
import Synchronization
import Testing

/// A counter tasks share.
private final class Shared: Sendable {
    let value = Atomic<Int>(0)
}

@Suite(.timeLimit(.minutes(1)))
struct ChangeSignalTests {
    @Test func aSignalBeforeTheWaitIsNotLost() async {
        let signal = ChangeSignal()
        let seen = signal.generation
        signal.signal()
        // Would wait forever (until the time limit) if the ring between reading the generation and waiting were lost.
        await signal.changed(after: seen)
        #expect(signal.generation == seen &+ 1)
    }

    @Test func aWaiterWakesWhenTheConditionBecomesTrue() async {
        let signal = ChangeSignal()
        let shared = Shared()
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await signal.wait { shared.value.load(ordering: .acquiring) >= 3 } }
            for _ in 0..<3 {
                await Task.yield()
                shared.value.add(1, ordering: .releasing)
                signal.signal()
            }
            #expect(await group.next() == true)
        }
    }

    @Test func aDeadlineEndsTheWaitWithTheConditionFalse() async {
        let signal = ChangeSignal()
        let held = await signal.wait(until: .now + .milliseconds(20)) { false }
        #expect(!held)
    }

    @Test func cancellationEndsTheWait() async {
        let signal = ChangeSignal()
        let task = Task { await signal.wait { false } }
        await Task.yield()
        task.cancel()
        #expect(await task.value == false)
    }

    @Test func manyWaitersAllWake() async {
        let signal = ChangeSignal()
        let ready = Shared()
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 { group.addTask { await signal.wait { ready.value.load(ordering: .acquiring) == 1 } } }
            ready.value.store(1, ordering: .releasing)
            signal.signal()
            var woken = 0
            for await held in group where held { woken += 1 }
            #expect(woken == 50)
        }
    }
}
