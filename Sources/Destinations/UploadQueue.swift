// Hands finished objects (segments, playlists, metadata) from the media thread to storage.
// Bounded: when storage falls behind by `capacity` objects the media thread waits, so memory
// stays flat. One worker uploads in order, so a playlist never lands before its segment.

public import Foundation
public import Storage
public import Logging
import Synchronization

public final class UploadQueue: Sendable {
    private struct Job: Sendable {
        var key: String
        var data: Data
    }

    private let storage: any ObjectStorage
    private let slots: DispatchSemaphore
    private let pending = DispatchGroup()
    private let continuation: AsyncStream<Job>.Continuation
    private final class Tally: Sendable {
        let failures = Mutex<[String]>([])
        let written = Mutex<Int64>(0)
    }
    private let tally = Tally()

    public init(storage: any ObjectStorage, capacity: Int = 16, logger: Logger) {
        self.storage = storage
        slots = DispatchSemaphore(value: capacity)
        let (stream, continuation) = AsyncStream<Job>.makeStream()
        self.continuation = continuation
        let slots = self.slots
        let pending = self.pending
        let tally = self.tally
        Task.detached {
            for await job in stream {
                do {
                    try await storage.put(job.data, key: job.key)
                    tally.written.withLock { $0 += Int64(job.data.count) }
                } catch {
                    logger.error("upload failed", metadata: ["key": "\(job.key)", "error": "\(error)"])
                    tally.failures.withLock { $0.append("\(error)") }
                }
                slots.signal()
                pending.leave()
            }
        }
    }

    deinit { continuation.finish() }

    /// Queues an object; blocks while `capacity` uploads are outstanding. Call from a
    /// media thread, never from an async context.
    public func enqueue(_ data: Data, key: String) {
        slots.wait()
        pending.enter()
        continuation.yield(Job(key: key, data: data))
    }

    /// Blocks until every queued upload has finished; returns the failures so far.
    @discardableResult
    public func waitUntilIdle() -> [String] {
        pending.wait()
        return tally.failures.withLock { $0 }
    }

    /// The first upload failure, if any (the destination has failed).
    public var firstFailure: String? { tally.failures.withLock { $0.first } }

    public var bytesWritten: Int64 { tally.written.withLock { $0 } }
}
