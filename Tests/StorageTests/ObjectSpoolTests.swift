// The spool in front of a bucket: order, outage, coalescing, limits, crash and resume. The
// bucket is an in-memory storage that can be switched off (every put fails) and records the
// order of the puts it accepted.
import Foundation
import Logging
import Storage
import Synchronization
import Testing
import TestSupport

final class FlakyBucket: ObjectStorage {
    let objects = Mutex<[String: Data]>([:])
    let accepted = Mutex<[String]>([])
    let attempts = Atomic<Int>(0)
    let down = Atomic<Bool>(false)
    let denied = Atomic<Bool>(false)

    func put(_ data: Data, key: String, contentType: String?) async throws(StorageError) {
        attempts.add(1, ordering: .relaxed)
        if denied.load(ordering: .relaxed) { throw .accessDenied(key: key, message: "AccessDenied") }
        if down.load(ordering: .relaxed) { throw .ioFailure(key: key, message: "connection refused") }
        objects.withLock { $0[key] = data }
        accepted.withLock { $0.append(key) }
    }

    func get(key: String) async throws(StorageError) -> Data {
        guard let data = objects.withLock({ $0[key] }) else { throw .notFound(key: key) }
        return data
    }

    func exists(key: String) async -> Bool { objects.withLock { $0[key] != nil } }

    func list(prefix: String) async throws(StorageError) -> [String] {
        objects.withLock { $0.keys.filter { $0.hasPrefix(prefix) }.sorted() }
    }
}

@Suite struct ObjectSpoolTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
    let descriptor = ObjectSpool.Descriptor(bucket: "rec", compositionArn: "arn:aws:ivs:us-east-1:1:composition/x", destinationId: "d1")
    let fast = ObjectSpool.Limits(maxBytes: 1 << 20, retryBase: .milliseconds(5), retryMax: .milliseconds(20))

    /// Polls every 10 ms, giving up after `seconds` worth of polls (not wall time: while the
    /// concurrency pool is busy with other tests neither this loop nor the uploader runs).
    func eventually(_ what: String, within seconds: Int = 30, _ condition: () -> Bool) async {
        for _ in 0..<(seconds * 100) where !condition() { try? await Task.sleep(for: .milliseconds(10)) }
        #expect(condition(), "\(what) within \(seconds) s of polling")
    }

    func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".obj") }.sorted()
    }

    @Test func uploadsInTheOrderWrittenAndRemovesItselfWhenClosedAndDrained() async throws {
        let bucket = FlakyBucket()
        let spool = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: bucket, limits: fast,
                                           logger: Logger(label: "test"))
        let uploader = Task { await spool.run() }
        defer { uploader.cancel() }
        for n in 0..<5 { try spool.enqueue(Data("segment \(n)".utf8), key: "r/seg\(n).ts") }
        await eventually("everything stored") { spool.status.objects == 0 }
        #expect(bucket.accepted.withLock { $0 } == (0..<5).map { "r/seg\($0).ts" })
        #expect(FileManager.default.fileExists(atPath: directory.path), "open spools stay")
        spool.close()
        await spool.finished()
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(spool.status.uploadedBytes == (0..<5).reduce(0) { $0 + Int64("segment \($1)".utf8.count) })
        #expect(try await bucket.get(key: "r/seg3.ts") == Data("segment 3".utf8))
    }

    @Test func anOutageDelaysButLosesNothingAndAPlaylistNeverOvertakesItsSegments() async throws {
        let bucket = FlakyBucket()
        let spool = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: bucket, limits: fast,
                                           logger: Logger(label: "test"))
        let uploader = Task { await spool.run() }
        defer { uploader.cancel() }
        bucket.down.store(true, ordering: .relaxed)
        var expectedSegments: [String] = []
        for n in 0..<20 {
            try spool.enqueue(Data(repeating: UInt8(n), count: 1000), key: "r/seg\(n).ts")
            try spool.enqueue(Data("playlist after \(n)".utf8), key: "r/playlist.m3u8")
            expectedSegments.append("r/seg\(n).ts")
        }
        await eventually("retries while down") { bucket.attempts.load(ordering: .relaxed) >= 2 }
        #expect(bucket.accepted.withLock { $0 }.isEmpty)
        #expect(spool.status.objects == 40)
        #expect(spool.status.lastError?.contains("connection refused") == true)
        #expect(spool.status.permanentFailure == nil, "an outage is not a failure")
        #expect(files().count == 40, "every object waits on disk")
        bucket.down.store(false, ordering: .relaxed)
        await eventually("drained after the outage") { spool.status.objects == 0 }
        let accepted = bucket.accepted.withLock { $0 }
        #expect(accepted.filter { $0.hasSuffix(".ts") } == expectedSegments)
        // Stale playlists were skipped: the later put would replace them anyway.
        #expect(accepted.filter { $0.hasSuffix(".m3u8") }.count == 1)
        #expect(accepted.last == "r/playlist.m3u8")
        #expect(try await bucket.get(key: "r/playlist.m3u8") == Data("playlist after 19".utf8))
        #expect(spool.status.lastError == nil)
    }

    @Test func whileTheBucketIsDownNoPlaylistIsStoredBeforeTheSegmentsItLists() async throws {
        let bucket = FlakyBucket()
        let spool = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: bucket, limits: fast,
                                           logger: Logger(label: "test"))
        let uploader = Task { await spool.run() }
        defer { uploader.cancel() }
        try spool.enqueue(Data("0".utf8), key: "r/seg0.ts")
        try spool.enqueue(Data("seg0".utf8), key: "r/playlist.m3u8")
        await eventually("first pair stored") { spool.status.objects == 0 }
        bucket.down.store(true, ordering: .relaxed)
        try spool.enqueue(Data("1".utf8), key: "r/seg1.ts")
        try spool.enqueue(Data("seg0 seg1".utf8), key: "r/playlist.m3u8")
        await eventually("retrying") { bucket.attempts.load(ordering: .relaxed) >= 4 }  // the 2 stored puts, then a failure and its retry
        #expect(try await bucket.get(key: "r/playlist.m3u8") == Data("seg0".utf8), "the stored playlist lists stored segments only")
        bucket.down.store(false, ordering: .relaxed)
        await eventually("drained") { spool.status.objects == 0 }
        #expect(bucket.accepted.withLock { $0 } == ["r/seg0.ts", "r/playlist.m3u8", "r/seg1.ts", "r/playlist.m3u8"])
    }

    @Test func aFullSpoolRefusesWithAReasonAndKeepsWhatItHas() async throws {
        let bucket = FlakyBucket()
        bucket.down.store(true, ordering: .relaxed)
        let limits = ObjectSpool.Limits(maxBytes: 10_000, retryBase: .milliseconds(5), retryMax: .milliseconds(20))
        let spool = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: bucket, limits: limits,
                                           logger: Logger(label: "test"))
        let uploader = Task { await spool.run() }
        defer { uploader.cancel() }
        var refused: StorageError?
        for n in 0..<20 {
            do { try spool.enqueue(Data(repeating: 1, count: 1000), key: "r/seg\(n).ts") } catch {
                refused = error
                break
            }
        }
        let message = try #require(refused).description
        #expect(message.contains("spool full"), "\(message)")
        #expect(spool.status.permanentFailure?.contains("spool full") == true)
        #expect(spool.status.bytes <= 10_000)
        let kept = spool.status.objects
        #expect(kept >= 8)
        bucket.down.store(false, ordering: .relaxed)
        await eventually("what it kept is stored") { bucket.accepted.withLock { $0.count } == kept }
    }

    @Test func accessDeniedIsAFailureTheRecordingReports() async throws {
        let bucket = FlakyBucket()
        bucket.denied.store(true, ordering: .relaxed)
        let spool = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: bucket, limits: fast,
                                           logger: Logger(label: "test"))
        let uploader = Task { await spool.run() }
        defer { uploader.cancel() }
        try spool.enqueue(Data("x".utf8), key: "r/seg0.ts")
        await eventually("failure reported") { spool.status.permanentFailure != nil }
        #expect(spool.status.permanentFailure?.contains("access denied") == true)
        #expect(spool.status.objects == 1, "the object stays: fixed credentials would store it")
        spool.stop()
    }

    /// A process that dies leaves whole objects only; the next one uploads them in order and
    /// ignores a half-written temporary file.
    @Test func aSpoolLeftByADeadProcessIsResumedInOrder() async throws {
        let bucket = FlakyBucket()
        bucket.down.store(true, ordering: .relaxed)
        do {
            let spool = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: bucket, limits: fast,
                                               logger: Logger(label: "test"))
            let uploader = Task { await spool.run() }
            defer { uploader.cancel() }
            for n in 0..<4 { try spool.enqueue(Data("s\(n)".utf8), key: "r/seg\(n).ts") }
            try spool.enqueue(Data("p".utf8), key: "r/playlist.m3u8")
            spool.stop()  // as good as dead: nothing more is uploaded
        }
        try Data("half an obj".utf8).write(to: directory.appendingPathComponent(".0000000000000006.obj.tmp"))
        #expect(ObjectSpool.descriptor(in: directory) == descriptor)

        let resumed = try ObjectSpool.resume(directory: directory, storage: bucket, limits: fast, logger: Logger(label: "test"))
        #expect(resumed.status.objects == 5)
        #expect(resumed.status.closed, "its writer is gone")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent(".0000000000000006.obj.tmp").path))
        bucket.down.store(false, ordering: .relaxed)
        let resumedUploader = Task { await resumed.run() }
        defer { resumedUploader.cancel() }
        await resumed.finished()
        #expect(bucket.accepted.withLock { $0 } == ["r/seg0.ts", "r/seg1.ts", "r/seg2.ts", "r/seg3.ts", "r/playlist.m3u8"])
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }

    @Test func waitUntilDrainedIsBounded() async throws {
        let bucket = FlakyBucket()
        bucket.down.store(true, ordering: .relaxed)
        let spool = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: bucket, limits: fast,
                                           logger: Logger(label: "test"))
        let uploader = Task { await spool.run() }
        defer { uploader.cancel() }
        try spool.enqueue(Data("x".utf8), key: "r/seg0.ts")
        let started = ContinuousClock.now
        // Blocking calls run where production runs them: on a thread of their own (a pipeline
        // thread), never on the concurrency pool, which the uploader needs.
        let drained = try await onThread { spool.waitUntilDrained(timeout: .milliseconds(300)) }
        #expect(!drained)
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        bucket.down.store(false, ordering: .relaxed)
        await eventually("the spool drains once the bucket is back") { spool.status.objects == 0 }
        #expect(try await onThread { spool.waitUntilDrained(timeout: .milliseconds(1)) })
        spool.stop()
    }

    @Test func badKeysAndWritesAfterCloseAreRefused() throws {
        let spool = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: FlakyBucket(), limits: fast,
                                           logger: Logger(label: "test"))
        #expect(throws: StorageError.self) { try spool.enqueue(Data(), key: "../escape") }
        spool.close()
        #expect(throws: StorageError.self) { try spool.enqueue(Data(), key: "r/late.ts") }
        #expect(throws: StorageError.self) {
            _ = try ObjectSpool.create(directory: directory, descriptor: descriptor, storage: FlakyBucket(), limits: fast,
                                       logger: Logger(label: "test"))
        }
    }
}
