import Foundation
import Testing
@testable import Storage

/// A fresh bucket directory under the system temp folder, removed by the caller.
func makeBucket() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("storage-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

@Suite struct LocalDirectoryStorageTests {
    @Test func putCreatesFoldersAndGetReadsBack() async throws {
        let root = try makeBucket()
        defer { try? FileManager.default.removeItem(at: root) }
        let storage = LocalDirectoryStorage(root: root)
        let key = "stage/comp/dest/composite/media/hls/720p30-abc/0.ts"
        #expect(await !storage.exists(key: key))
        try await storage.put(Data([1, 2, 3]), key: key, contentType: "video/mp2t")
        #expect(await storage.exists(key: key))
        #expect(try await storage.get(key: key) == Data([1, 2, 3]))
        #expect(FileManager.default.contents(atPath: root.appendingPathComponent(key).path) == Data([1, 2, 3]))
        // Replacing an object replaces all of it (shorter content leaves no tail).
        try await storage.put(text: "x", key: key)
        #expect(try await storage.get(key: key) == Data("x".utf8))
    }

    @Test func rootIsCreatedOnFirstWrite() async throws {
        let parent = try makeBucket()
        defer { try? FileManager.default.removeItem(at: parent) }
        let storage = LocalDirectoryStorage(rootPath: parent.path + "/not/yet/there")
        try await storage.put(text: "{}", key: "a.json")
        #expect(try await storage.get(key: "a.json") == Data("{}".utf8))
    }

    @Test func missingObjectIsNotFound() async throws {
        let root = try makeBucket()
        defer { try? FileManager.default.removeItem(at: root) }
        let storage = LocalDirectoryStorage(root: root)
        try await storage.put(text: "1", key: "folder/file")
        await #expect(throws: StorageError.notFound(key: "nope.json")) { try await storage.get(key: "nope.json") }
        // A folder is not an object.
        await #expect(throws: StorageError.notFound(key: "folder")) { try await storage.get(key: "folder") }
        #expect(await !storage.exists(key: "folder"))
    }

    @Test(arguments: [
        "", "/etc/passwd", "a/../../escape", "..", "a/..", "./a", "a/./b", "a//b", "a/", "a\\b",
        "a\u{0}b", "a\nb", String(repeating: "k", count: 1025), String(repeating: "c", count: 256),
    ])
    func invalidKeysAreRejected(key: String) async throws {
        let root = try makeBucket()
        defer { try? FileManager.default.removeItem(at: root) }
        let storage = LocalDirectoryStorage(root: root.appendingPathComponent("bucket"))
        await #expect {
            try await storage.put(Data("x".utf8), key: key, contentType: nil)
        } throws: { error in
            guard case .invalidKey(let reported, _) = error as? StorageError else { return false }
            return reported == key
        }
        await #expect(throws: StorageError.self) { try await storage.get(key: key) }
        #expect(await !storage.exists(key: key))
        // Nothing was written anywhere under the parent.
        let written = FileManager.default.enumerator(atPath: root.path)?.allObjects ?? []
        #expect(written.isEmpty)
    }

    @Test func symlinkInsideRootCannotLeadOutside() async throws {
        let root = try makeBucket()
        let outside = try makeBucket()
        defer { try? FileManager.default.removeItem(at: root); try? FileManager.default.removeItem(at: outside) }
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("link"), withDestinationURL: outside)
        let storage = LocalDirectoryStorage(root: root)
        await #expect(throws: StorageError.invalidKey(key: "link/x.ts", reason: "resolves outside the storage root")) {
            try await storage.put(Data("x".utf8), key: "link/x.ts", contentType: nil)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }

    @Test func listReturnsSortedKeysUnderPrefix() async throws {
        let root = try makeBucket()
        defer { try? FileManager.default.removeItem(at: root) }
        let storage = LocalDirectoryStorage(root: root)
        for key in ["s/c/d/composite/media/hls/r/1.ts", "s/c/d/composite/media/hls/r/0.ts",
                    "s/c/d/composite/events/recording-started.json", "s/c/other.txt", "top.json"] {
            try await storage.put(text: key, key: key)
        }
        // A temp file left by a crashed writer is not an object.
        try Data().write(to: root.appendingPathComponent("s/c/d/composite/media/hls/r/.2.ts.tmp-0000"))
        #expect(try await storage.list(prefix: "s/c/d/composite/media/hls/") == [
            "s/c/d/composite/media/hls/r/0.ts", "s/c/d/composite/media/hls/r/1.ts",
        ])
        #expect(try await storage.list(prefix: "s/c/d/composite/ev") == ["s/c/d/composite/events/recording-started.json"])
        #expect(try await storage.list(prefix: "").count == 5)
        #expect(try await storage.list(prefix: "s/c/o") == ["s/c/other.txt"])
        #expect(try await storage.list(prefix: "missing/") == [])
        await #expect(throws: StorageError.self) { try await storage.list(prefix: "../") }
    }

    /// Many writers racing on one key: the object is always exactly one writer's whole payload,
    /// and no temp files are left behind.
    @Test func concurrentWritesToOneKeyLeaveOneCompleteObject() async throws {
        let root = try makeBucket()
        defer { try? FileManager.default.removeItem(at: root) }
        let storage = LocalDirectoryStorage(root: root)
        let key = "race/playlist.m3u8"
        let payloads = (0..<24).map { index in Data(repeating: UInt8(index), count: 64 * 1024 + index) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for payload in payloads {
                group.addTask { try await storage.put(payload, key: key, contentType: nil) }
                group.addTask {
                    // Readers during the race see a complete payload or nothing yet.
                    if let data = try? await storage.get(key: key) { #expect(payloads.contains(data)) }
                }
            }
            try await group.waitForAll()
        }
        let final = try await storage.get(key: key)
        #expect(payloads.contains(final))
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("race").path) == ["playlist.m3u8"])
    }

    @Test func contentTypes() {
        #expect(ObjectKey.contentType(forKey: "a/b/playlist.m3u8") == "application/vnd.apple.mpegurl")
        #expect(ObjectKey.contentType(forKey: "a/0.ts") == "video/mp2t")
        #expect(ObjectKey.contentType(forKey: "a/thumb.JPG") == "image/jpeg")
        #expect(ObjectKey.contentType(forKey: "a.b/noext") == nil)
    }
}
