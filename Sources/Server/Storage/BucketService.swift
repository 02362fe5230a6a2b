// The configured buckets at run time: a storage per bucket (a directory, or S3 through one
// shared HTTP client), and the spools in front of the S3 ones. A recording into a directory
// goes straight there; a recording into S3 goes through a spool, so an outage of the bucket
// delays the upload and loses nothing. Spools left by an earlier process are resumed at
// start-up; on graceful shutdown the uploaders stop and what is left waits on disk.
import AsyncHTTPClient
public import Destinations
import Foundation
public import Logging
public import ServiceLifecycle
public import Storage
import Synchronization

public final class BucketService: Service, Sendable {
    private let configuration: ServerConfiguration
    private let storages: [String: any ObjectStorage]
    private let httpClient: HTTPClient?
    private let limits: ObjectSpool.Limits
    private let drainTimeout: Duration
    private let spools = Mutex<[String: ObjectSpool]>([:])
    private let logger: Logger

    /// Reads the S3 buckets' credentials now: a bucket without them stops the start, with
    /// the reason.
    /// - Parameter mayWrite: in a fleet, whether this node still holds its lease; every write
    ///   to a bucket asks first.
    public init(configuration: ServerConfiguration, environment: [String: String], logger: Logger,
                limits: ObjectSpool.Limits? = nil, mayWrite: (@Sendable () -> Bool)? = nil) throws(ServerBuildError) {
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "component"] = "storage"
        self.logger = logger
        let needsHTTP = configuration.buckets.values.contains { if case .s3 = $0 { true } else { false } }
        let client = needsHTTP ? HTTPClient(eventLoopGroupProvider: .singleton) : nil
        var storages: [String: any ObjectStorage] = [:]
        for (name, bucket) in configuration.buckets {
            switch bucket {
            case .directory(let path):
                storages[name] = LocalDirectoryStorage(rootPath: path)
            case .s3(let s3):
                do {
                    let settings = try s3.storageConfiguration(name: name, environment: environment)
                    storages[name] = S3Storage(configuration: settings, httpClient: client!, logger: logger)
                } catch {
                    try? client?.syncShutdown()
                    throw ServerBuildError(description: "buckets.\(name).s3.credentials: \(error)")
                }
            }
        }
        self.storages = mayWrite.map { mayWrite in storages.mapValues { FencedStorage(base: $0, mayWrite: mayWrite) } } ?? storages
        httpClient = client
        self.limits = limits ?? ObjectSpool.Limits(maxBytes: configuration.spool.maxBytes)
        drainTimeout = .milliseconds(Int64(configuration.spool.drainTimeoutSeconds * 1000))
    }

    public func storage(bucket: String) -> (any ObjectStorage)? { storages[bucket] }

    /// Whether recordings into `bucket` go through the spool.
    public func isSpooled(bucket: String) -> Bool {
        if case .s3? = configuration.buckets[bucket] { return true }
        return false
    }

    /// Where a new recording's objects go. Runs on the pipeline thread when it starts.
    /// Spools whose uploader is to start: run() starts each as a child task.
    /// Upload workers to run as children of `run`: each spool's uploader, each in-memory queue's worker.
    private let (pendingUploaders, uploaders) = AsyncStream<@Sendable () async -> Void>.makeStream()

    public func uploads(bucket: String, compositionArn: String, destinationId: String, logger: Logger) -> any RecordingUploads {
        guard let storage = storages[bucket] else {
            return FailedUploads(reason: "bucket \(bucket) is not configured on this server")
        }
        guard isSpooled(bucket: bucket) else {
            return UploadQueue(storage: storage, logger: logger, spawn: { [uploaders] worker in uploaders.yield(worker) })
        }
        do {
            let spool = try ObjectSpool.create(
                directory: URL(fileURLWithPath: configuration.spoolDirectory).appendingPathComponent(destinationId),
                descriptor: .init(bucket: bucket, compositionArn: compositionArn, destinationId: destinationId),
                storage: storage, limits: limits, logger: logger)
            spools.withLock { $0[destinationId] = spool }
            uploaders.yield { await spool.run() }
            return SpooledUploads(spool: spool, drainTimeout: drainTimeout)
        } catch {
            return FailedUploads(reason: "\(error)")
        }
    }

    /// Resumes every spool an earlier process left (start-up, before compositions restore)
    /// that `resume` accepts (by composition ARN); the others stay on disk, untouched: in a
    /// fleet, a recording another node has finalized meanwhile must not be overwritten.
    public func resumeSpools(where resume: (String) -> Bool = { _ in true }) {
        let root = URL(fileURLWithPath: configuration.spoolDirectory)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        for name in names.sorted() {
            let directory = root.appendingPathComponent(name)
            guard let descriptor = ObjectSpool.descriptor(in: directory) else { continue }
            guard let storage = storages[descriptor.bucket], isSpooled(bucket: descriptor.bucket) else {
                logger.error("spool for a bucket that is no longer configured; left on disk",
                             metadata: ["spool.directory": "\(directory.path)", "bucket": "\(descriptor.bucket)"])
                continue
            }
            guard resume(descriptor.compositionArn) else {
                logger.warning("spool of a composition another node has taken over; left on disk, not uploaded", metadata: [
                    "spool.directory": "\(directory.path)", "composition.arn": "\(descriptor.compositionArn)"])
                continue
            }
            do {
                let spool = try ObjectSpool.resume(directory: directory, storage: storage, limits: limits, logger: logger)
                let status = spool.status
                logger.notice("spool resumed: its objects are uploaded in order", metadata: [
                    "spool.directory": "\(directory.path)", "composition.arn": "\(descriptor.compositionArn)",
                    "spool.objects": "\(status.objects)", "spool.bytes": "\(status.bytes)"])
                spools.withLock { $0[descriptor.destinationId] = spool }
                uploaders.yield { await spool.run() }
            } catch {
                logger.error("spool cannot be resumed", metadata: ["spool.directory": "\(directory.path)", "error": "\(error)"])
            }
        }
    }

    /// The spool of a recording, while it has one.
    public func spool(destinationId: String) -> ObjectSpool? { spools.withLock { $0[destinationId] } }

    /// Objects and bytes waiting in every spool (the spool metrics); forgets finished spools.
    public func spooled() -> (objects: Int, bytes: Int64) {
        spools.withLock { spools in
            var objects = 0
            var bytes: Int64 = 0
            for (id, spool) in spools {
                let status = spool.status
                if status.finished {
                    spools[id] = nil
                    continue
                }
                objects += status.objects
                bytes += status.bytes
            }
            return (objects, bytes)
        }
    }

    /// Runs every spool's uploader as a child task (those resumed at start-up and each new
    /// recording's), until graceful shutdown stops them; what is left stays on disk.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask {
                await withDiscardingTaskGroup { uploads in
                    for await worker in self.pendingUploaders { uploads.addTask { await worker() } }
                }
            }
            try? await gracefulShutdown()
            await close()
            uploaders.finish()
            // A queue whose recording never finished (its pipeline died) would wait forever.
            group.cancelAll()
        }
    }

    /// Stops the uploaders (what is left stays on disk) and the HTTP client.
    public func close() async {
        let left = spools.withLock { Array($0.values) }
        for spool in left { spool.stop() }
        let (objects, bytes) = spooled()
        if objects > 0 {
            logger.notice("stopping with objects still spooled; they are uploaded on the next start",
                          metadata: ["spool.objects": "\(objects)", "spool.bytes": "\(bytes)"])
        }
        try? await httpClient?.shutdown()
    }
}

/// A recording whose storage could not even be set up: it fails at its first object.
final class FailedUploads: RecordingUploads {
    let reason: String
    private let refused = Mutex<Set<String>>([])
    init(reason: String) { self.reason = reason }
    func enqueue(_ data: Data, key: String) { refused.withLock { _ = $0.insert(key) } }
    func failedKeysWhenSettled() -> Set<String> { refused.withLock { $0 } }
    func finish() -> String? { reason }
    var firstFailure: String? { reason }
    var bytesWritten: Int64 { 0 }
}
