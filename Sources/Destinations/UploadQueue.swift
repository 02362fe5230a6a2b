// Hands finished objects (segments, playlists, metadata) from the media thread to storage.
// Two ways: `UploadQueue` keeps them in memory (bounded: when storage falls behind by
// `capacity` objects the media thread waits, so memory stays flat), for a local directory
// or the CLI; `SpooledUploads` writes them to an `ObjectSpool` on local disk, so a bucket
// outage delays the upload but neither stalls the composition nor loses anything. Either way
// one worker uploads in order, so a playlist never lands before its segment.

public import Foundation
public import Storage
public import Logging
import Synchronization

/// Where a recording sink puts its objects.
public protocol RecordingUploads: Sendable {
    /// Queues an object. Call from a media thread, never from an async context.
    func enqueue(_ data: Data, key: String)
    /// Called once, after the last object: blocks until they are stored (or for as long as
    /// the implementation allows) and returns why not everything is, if it is not.
    func finish() -> String?
    /// A failure that ends the recording (the destination fails).
    var firstFailure: String? { get }
    /// Waits for what is queued to be stored or to fail, and returns the keys that could not
    /// be stored (a full disk, a refusing bucket): the final playlist must not name them.
    func failedKeysWhenSettled() -> Set<String>
    /// Bytes stored so far.
    var bytesWritten: Int64 { get }
}

public final class UploadQueue: RecordingUploads {
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
        let failedKeys = Mutex<Set<String>>([])
        let written = Mutex<Int64>(0)
    }
    private let tally = Tally()

    /// `spawn` runs the worker, which ends when the queue is released: the daemon hands it to
    /// a service's task group (BucketService); without one (the CLI, tests) it runs as a task
    /// of its own.
    public init(storage: any ObjectStorage, capacity: Int = 16, logger: Logger,
                spawn: (@escaping @Sendable () async -> Void) -> Void = { worker in Task { await worker() } }) {
        self.storage = storage
        slots = DispatchSemaphore(value: capacity)
        let (stream, continuation) = AsyncStream<Job>.makeStream()
        self.continuation = continuation
        let slots = self.slots
        let pending = self.pending
        let tally = self.tally
        spawn {
            for await job in stream {
                do {
                    try await storage.put(job.data, key: job.key)
                    tally.written.withLock { $0 += Int64(job.data.count) }
                } catch {
                    logger.error("upload failed", metadata: ["key": "\(job.key)", "error": "\(error)"])
                    tally.failures.withLock { $0.append("\(error)") }
                    tally.failedKeys.withLock { _ = $0.insert(job.key) }
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

    public func finish() -> String? { waitUntilIdle().first }

    public func failedKeysWhenSettled() -> Set<String> {
        pending.wait()
        return tally.failedKeys.withLock { $0 }
    }

    /// The first upload failure, if any (the destination has failed).
    public var firstFailure: String? { tally.failures.withLock { $0.first } }

    public var bytesWritten: Int64 { tally.written.withLock { $0 } }
}

/// A recording's objects through an `ObjectSpool`: written to local disk at once, uploaded
/// in order with retries for as long as the bucket needs. `finish` waits `drainTimeout` for
/// the bucket; what is still spooled then stays on disk and is uploaded later (the spool
/// goes on, in this process or the next), and the reason says so.
public final class SpooledUploads: RecordingUploads {
    private let spool: ObjectSpool
    private let drainTimeout: Duration
    private let failure = Mutex<String?>(nil)
    private let failedKeys = Mutex<Set<String>>([])

    public init(spool: ObjectSpool, drainTimeout: Duration) {
        self.spool = spool
        self.drainTimeout = drainTimeout
    }

    public func enqueue(_ data: Data, key: String) {
        do {
            try spool.enqueue(data, key: key)
        } catch {
            failure.withLock { $0 = $0 ?? "\(error)" }
            failedKeys.withLock { _ = $0.insert(key) }
        }
    }

    /// Spooled objects are stored (on disk, uploaded in order later); only those the spool
    /// refused are not.
    public func failedKeysWhenSettled() -> Set<String> { failedKeys.withLock { $0 } }

    public func finish() -> String? {
        spool.close()
        if !spool.waitUntilDrained(timeout: drainTimeout) {
            let status = spool.status
            let reason = "storage did not take the recording within \(drainTimeout): \(status.objects) objects "
                + "(\(status.bytes) bytes) stay spooled in \(spool.directory.path) and are uploaded when it answers"
                + (status.lastError.map { "; last error: \($0)" } ?? "")
            failure.withLock { $0 = $0 ?? reason }
        }
        return firstFailure
    }

    public var firstFailure: String? {
        if let own = failure.withLock({ $0 }) { return own }
        return spool.status.permanentFailure
    }

    public var bytesWritten: Int64 { spool.status.uploadedBytes }
}
