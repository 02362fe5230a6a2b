import Destinations
import Foundation
import Logging
import Storage
import Synchronization
import Testing

/// The worker `spawn` was given, to run where the test says.
private final class Spawned: Sendable {
    let worker = Mutex<(@Sendable () async -> Void)?>(nil)
}

@Suite(.timeLimit(.minutes(1)))
struct UploadQueueTests {
    @Test("the worker runs where its owner puts it (a service's task group), stores in order, and ends when the queue is released")
    func workerIsTheOwners() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("upload-queue-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let storage = LocalDirectoryStorage(rootPath: root.path)
        let spawned = Spawned()
        var queue: UploadQueue? = UploadQueue(storage: storage, capacity: 4, logger: Logger(label: "test"),
                                              spawn: { worker in spawned.worker.withLock { $0 = worker } })
        queue?.enqueue(Data("one".utf8), key: "a/1")
        queue?.enqueue(Data("two".utf8), key: "a/2")
        // Nothing is stored until the owner runs the worker.
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("a/1").path))
        let worker = try #require(spawned.worker.withLock { $0 })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await worker() }
            // waitUntilIdle blocks (a media thread's call): off the test's task.
            let failures = await Self.waitUntilIdle(queue)
            #expect(failures.isEmpty)
            #expect(queue?.bytesWritten == 6)
            #expect(try Data(contentsOf: root.appendingPathComponent("a/2")) == Data("two".utf8))
            // Released: the worker returns, so the group (a service's run) can end.
            queue = nil
            try await group.waitForAll()
        }
    }

    private static func waitUntilIdle(_ queue: UploadQueue?) async -> [String] {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: queue?.waitUntilIdle() ?? []) }.start()
        }
    }
}
