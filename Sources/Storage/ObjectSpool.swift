// A recording's objects on local disk until the bucket has them. The media thread writes
// each object (segment, playlist, thumbnail, metadata) as a file in the spool directory and
// goes on; one uploader sends them to the bucket in the order they were written, retrying
// for as long as it takes, and deletes each file once stored. Because the order is kept, a
// playlist is stored only after every segment it lists: the bucket never names a segment it
// does not hold. An older version of a key that is written again later (the playlist after
// every segment, the latest thumbnail) is skipped; the later put replaces it anyway.
//
// On disk: `spool.json` (which bucket, which recording), `<sequence>.obj` per object (one
// JSON header line with the key and content type, then the bytes), written to a temporary
// name and renamed, so a crash leaves whole objects only; `closed` once the writer has
// written its last object. A spool found at start-up (`resume`) carries on where it was.
public import Foundation
public import Logging
import MediaCore
import Synchronization

public final class ObjectSpool: Sendable {
    /// Which bucket and which recording a spool belongs to (`spool.json`).
    public struct Descriptor: Codable, Sendable, Equatable {
        public var bucket: String
        public var compositionArn: String
        public var destinationId: String

        public init(bucket: String, compositionArn: String, destinationId: String) {
            self.bucket = bucket
            self.compositionArn = compositionArn
            self.destinationId = destinationId
        }
    }

    public struct Limits: Sendable, Equatable {
        /// Bytes the spool may hold; a write beyond it fails (the recording fails with a reason).
        public var maxBytes: Int64
        /// Waits between attempts while the bucket fails: doubling from `retryBase` to `retryMax`.
        public var retryBase: Duration
        public var retryMax: Duration

        public init(maxBytes: Int64 = 2 << 30, retryBase: Duration = .milliseconds(500), retryMax: Duration = .seconds(10)) {
            self.maxBytes = maxBytes
            self.retryBase = retryBase
            self.retryMax = retryMax
        }
    }

    /// What the spool holds now and how the uploads go.
    public struct Status: Sendable, Equatable {
        public var objects: Int
        public var bytes: Int64
        /// Bytes stored in the bucket so far.
        public var uploadedBytes: Int64
        /// The last upload failure, cleared by the next success.
        public var lastError: String?
        /// A failure retrying does not cure (access denied, an invalid key, a full spool).
        public var permanentFailure: String?
        /// The writer has written its last object.
        public var closed: Bool
        /// Closed and everything stored: the directory is gone.
        public var finished: Bool
    }

    public let directory: URL
    public let descriptor: Descriptor
    private let storage: any ObjectStorage
    private let limits: Limits
    private let logger: Logger

    private struct Entry {
        var sequence: Int64
        var key: String
        var bytes: Int64
    }

    private struct State {
        var entries: [Entry] = []
        var head = 0
        /// Key → the sequence of its newest entry (older ones are skipped).
        var newest: [String: Int64] = [:]
        var nextSequence: Int64 = 1
        var bytes: Int64 = 0
        var uploaded: Int64 = 0
        var lastError: String?
        var permanentFailure: String?
        var closed = false
        var finished = false
        var stopped = false

        var pending: ArraySlice<Entry> { entries[head...] }

        mutating func popFirst() {
            bytes -= entries[head].bytes
            if newest[entries[head].key] == entries[head].sequence { newest[entries[head].key] = nil }
            head += 1
            if head > 1024, head * 2 > entries.count {
                entries.removeFirst(head)
                head = 0
            }
        }
    }

    private let state: Mutex<State>
    private let wake: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>
    /// Rung once, when the spool is finished (`finished()` waits for it).
    private let finishedSignal = ChangeSignal()

    static let descriptorName = "spool.json"
    static let closedName = "closed"
    static let entrySuffix = ".obj"

    private init(directory: URL, descriptor: Descriptor, storage: any ObjectStorage, limits: Limits, logger: Logger, state: State) {
        self.directory = directory
        self.descriptor = descriptor
        self.storage = storage
        self.limits = limits
        var logger = logger
        logger[metadataKey: "spool.directory"] = "\(directory.path)"
        self.logger = logger
        self.state = Mutex(state)
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// A new, empty spool in `directory` (created; it must not hold a spool already).
    public static func create(directory: URL, descriptor: Descriptor, storage: any ObjectStorage, limits: Limits = Limits(),
                              logger: Logger) throws(StorageError) -> ObjectSpool {
        let descriptorFile = directory.appendingPathComponent(descriptorName)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            if FileManager.default.fileExists(atPath: descriptorFile.path) {
                throw StorageError.ioFailure(key: descriptorFile.path, message: "a spool already exists there")
            }
            try JSONEncoder().encode(descriptor).write(to: descriptorFile, options: .atomic)
        } catch let error as StorageError {
            throw error
        } catch {
            throw .ioFailure(key: directory.path, message: "cannot create the spool: \(error.localizedDescription)")
        }
        return ObjectSpool(directory: directory, descriptor: descriptor, storage: storage, limits: limits, logger: logger, state: State())
    }

    /// The descriptor of the spool in `directory`, if there is one.
    public static func descriptor(in directory: URL) -> Descriptor? {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent(descriptorName)) else { return nil }
        return try? JSONDecoder().decode(Descriptor.self, from: data)
    }

    /// The spool left in `directory` by an earlier process, with its objects in their order.
    /// Its writer is gone, so it is closed: it uploads what it holds, then removes itself.
    /// Leftover temporary files (an object cut off by a crash) are deleted.
    public static func resume(directory: URL, storage: any ObjectStorage, limits: Limits = Limits(),
                              logger: Logger) throws(StorageError) -> ObjectSpool {
        guard let descriptor = descriptor(in: directory) else {
            throw .ioFailure(key: directory.path, message: "no readable \(descriptorName)")
        }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory.path) } catch {
            throw .ioFailure(key: directory.path, message: "cannot list the spool: \(error.localizedDescription)")
        }
        var state = State()
        var found: [(Int64, String)] = []
        for name in names {
            if name.hasSuffix(entrySuffix), let sequence = Int64(name.dropLast(entrySuffix.count)) {
                found.append((sequence, name))
            } else if name.hasPrefix(".") {
                try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
            }
        }
        for (sequence, name) in found.sorted(by: { $0.0 < $1.0 }) {
            let url = directory.appendingPathComponent(name)
            guard let header = readHeader(url) else {
                logger.error("unreadable spooled object skipped", metadata: ["spool.file": "\(url.path)"])
                continue
            }
            let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
            state.entries.append(Entry(sequence: sequence, key: header.key, bytes: size))
            state.newest[header.key] = sequence
            state.bytes += size
            state.nextSequence = sequence + 1
        }
        state.closed = true
        return ObjectSpool(directory: directory, descriptor: descriptor, storage: storage, limits: limits, logger: logger, state: state)
    }

    // MARK: Writing (the media thread)

    /// Writes one object to the spool. Fails when the spool is full, its disk fails, or
    /// after `close()`; the object is then not kept.
    public func enqueue(_ data: Data, key: String, contentType: String? = nil) throws(StorageError) {
        try ObjectKey.validate(key)
        let header = Header(key: key, contentType: contentType ?? ObjectKey.contentType(forKey: key))
        var file: Data
        do { file = try JSONEncoder().encode(header) } catch {
            throw .ioFailure(key: key, message: "cannot encode the spool header: \(error)")
        }
        file.append(0x0A)
        file.append(data)
        let size = Int64(file.count)
        let sequence = try state.withLock { state throws(StorageError) -> Int64 in
            if state.closed { throw StorageError.ioFailure(key: key, message: "the spool is closed") }
            if state.bytes + size > limits.maxBytes {
                let message = "spool full: \(state.bytes) bytes (\(state.pending.count) objects) wait for the bucket, "
                    + "the limit is \(limits.maxBytes) bytes" + (state.lastError.map { "; last upload error: \($0)" } ?? "")
                state.permanentFailure = state.permanentFailure ?? message
                throw StorageError.ioFailure(key: key, message: message)
            }
            state.bytes += size
            defer { state.nextSequence += 1 }
            return state.nextSequence
        }
        let name = String(format: "%016lld", sequence) + Self.entrySuffix
        let temporary = directory.appendingPathComponent(".\(name).tmp")
        do {
            // Stored only once it is on disk: the data fsynced, then the rename and the folder,
            // so a power loss never leaves a spool entry that names missing or partial bytes.
            try LocalDirectoryStorage.writeSynced(file, to: temporary.path)
            try FileManager.default.moveItem(at: temporary, to: directory.appendingPathComponent(name))
            LocalDirectoryStorage.syncDirectory(directory.path)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            let message = "cannot write to the spool: \((error as? LocalDirectoryStorage.POSIXFailure)?.message ?? error.localizedDescription)"
            state.withLock {
                $0.bytes -= size
                $0.permanentFailure = $0.permanentFailure ?? message
            }
            throw .ioFailure(key: key, message: message)
        }
        state.withLock { state in
            state.entries.append(Entry(sequence: sequence, key: key, bytes: size))
            state.newest[key] = sequence
        }
        wake.yield()
    }

    /// No more objects: once everything is stored the spool removes its directory.
    public func close() {
        try? Data().write(to: directory.appendingPathComponent(Self.closedName))
        state.withLock { $0.closed = true }
        wake.yield()
    }

    // MARK: Uploading

    /// The uploader: returns when the spool is finished or `stop()` is called. Run it once,
    /// as a child task of whoever owns the spool (BucketService's run).
    public func run() async {
        await uploadLoop()
    }

    /// Stops uploading (daemon shutdown); what is left stays on disk for the next start.
    public func stop() {
        state.withLock { $0.stopped = true }
        wake.yield()
    }

    public var status: Status {
        state.withLock {
            Status(objects: $0.pending.count, bytes: $0.bytes, uploadedBytes: $0.uploaded, lastError: $0.lastError,
                   permanentFailure: $0.permanentFailure, closed: $0.closed, finished: $0.finished)
        }
    }

    /// Blocks (a media thread, never an async context) until everything written so far is
    /// stored, or `timeout` passes; true when drained.
    public func waitUntilDrained(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if status.objects == 0 { return true }
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Waits until the spool is closed and everything in it is stored.
    /// Returns early when the task is cancelled.
    public func finished() async {
        _ = await finishedSignal.wait { status.finished }
    }

    private enum Next {
        case upload(Entry)
        case skip(Entry)
        case idle
        case finish
        case stop
    }

    private func next() -> Next {
        state.withLock { state in
            if state.stopped { return .stop }
            guard let first = state.pending.first else { return state.closed ? .finish : .idle }
            return state.newest[first.key] == first.sequence ? .upload(first) : .skip(first)
        }
    }

    private func uploadLoop() async {
        var failures = 0
        var wakeups = wakes.makeAsyncIterator()
        // Cancelled (its owner is shutting down) counts as stopped: what is left stays on disk.
        while !Task.isCancelled {
            switch next() {
            case .stop:
                return
            case .idle:
                guard await wakeups.next() != nil else { return }
            case .finish:
                try? FileManager.default.removeItem(at: directory)
                state.withLock { $0.finished = true }
                finishedSignal.signal()
                logger.debug("spool drained and removed")
                return
            case .skip(let entry):
                try? FileManager.default.removeItem(at: url(of: entry))
                state.withLock { $0.popFirst() }
            case .upload(let entry):
                let file = url(of: entry)
                guard let (header, data) = Self.read(file) else {
                    let message = "spooled object \(entry.key) cannot be read back from \(file.path)"
                    logger.error("spooled object lost", metadata: ["storage.key": "\(entry.key)"])
                    state.withLock {
                        $0.permanentFailure = $0.permanentFailure ?? message
                        $0.popFirst()
                    }
                    continue
                }
                do {
                    try await storage.put(data, key: header.key, contentType: header.contentType)
                    try? FileManager.default.removeItem(at: file)
                    if failures > 0 {
                        logger.notice("bucket reachable again; uploading the spool",
                                      metadata: ["spool.objects": "\(status.objects)", "failed.attempts": "\(failures)"])
                    }
                    failures = 0
                    state.withLock {
                        $0.uploaded += Int64(data.count)
                        $0.lastError = nil
                        $0.popFirst()
                    }
                } catch {
                    failures += 1
                    let permanent: Bool
                    switch error {
                    case .invalidKey: permanent = true
                    case .accessDenied: permanent = true
                    case .notFound, .ioFailure: permanent = false
                    }
                    if case .invalidKey = error {
                        // It can never be stored; keeping it would block everything after it.
                        try? FileManager.default.removeItem(at: file)
                        state.withLock {
                            $0.permanentFailure = $0.permanentFailure ?? "\(error)"
                            $0.popFirst()
                        }
                        continue
                    }
                    state.withLock {
                        $0.lastError = "\(error)"
                        if permanent { $0.permanentFailure = $0.permanentFailure ?? "\(error)" }
                    }
                    if failures == 1 || failures % 10 == 0 {
                        let pending = status
                        logger.warning("upload failed; the object stays spooled and is retried", metadata: [
                            "storage.key": "\(entry.key)", "error": "\(error)", "failed.attempts": "\(failures)",
                            "spool.objects": "\(pending.objects)", "spool.bytes": "\(pending.bytes)"])
                    }
                    let delay = min(limits.retryMax, limits.retryBase * (1 << min(failures - 1, 20)))
                    try? await Task.sleep(for: delay)
                }
            }
        }
    }

    private func url(of entry: Entry) -> URL {
        directory.appendingPathComponent(String(format: "%016lld", entry.sequence) + Self.entrySuffix)
    }

    // MARK: File format

    struct Header: Codable {
        var key: String
        var contentType: String?
    }

    static func read(_ url: URL) -> (Header, Data)? {
        guard let file = try? Data(contentsOf: url), let newline = file.firstIndex(of: 0x0A),
              let header = try? JSONDecoder().decode(Header.self, from: file[file.startIndex..<newline]) else { return nil }
        return (header, file[(newline + 1)...])
    }

    static func readHeader(_ url: URL) -> Header? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        guard let prefix = try? handle.read(upToCount: 4096), let newline = prefix.firstIndex(of: 0x0A) else { return nil }
        return try? JSONDecoder().decode(Header.self, from: prefix[prefix.startIndex..<newline])
    }
}
