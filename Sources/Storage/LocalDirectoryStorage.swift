// A directory standing in for a bucket: key "a/b/c.ts" is the file ROOT/a/b/c.ts.
// Writes are atomic and durable: a temp file in the destination folder, fsync, rename,
// fsync of the folder. Content types are not stored (a local file has none).
// File I/O here is blocking; objects are small (segments, playlists, JSON, JPEG).
public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public struct LocalDirectoryStorage: ObjectStorage {
    /// The bucket's directory, standardized. Created on the first write if missing.
    public let root: URL

    public init(root: URL) {
        self.root = root.standardizedFileURL
    }

    public init(rootPath: String) {
        self.init(root: URL(fileURLWithPath: rootPath, isDirectory: true))
    }

    /// Temp files are `.<name>.tmp-<UUID>` next to the target; `list` never shows them.
    static let tempMarker = ".tmp-"

    public func put(_ data: Data, key: String, contentType: String?) async throws(StorageError) {
        let target = try fileURL(forKey: key)
        let directory = target.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .ioFailure(key: key, message: "cannot create folder \(directory.path): \(error.localizedDescription)")
        }
        // A symlink inside the bucket must not lead a write outside it.
        let resolvedRoot = root.resolvingSymlinksInPath().path
        let resolvedDirectory = directory.resolvingSymlinksInPath().path
        guard resolvedDirectory == resolvedRoot || resolvedDirectory.hasPrefix(resolvedRoot + "/") else {
            throw .invalidKey(key: key, reason: "resolves outside the storage root")
        }
        let temp = directory.appendingPathComponent(".\(target.lastPathComponent)\(Self.tempMarker)\(UUID().uuidString)")
        do {
            try Self.writeSynced(data, to: temp.path)
        } catch {
            unlink(temp.path)
            throw .ioFailure(key: key, message: error.message)
        }
        if rename(temp.path, target.path) != 0 {
            let message = String(cString: strerror(errno))
            unlink(temp.path)
            throw .ioFailure(key: key, message: "rename to \(target.path) failed: \(message)")
        }
        Self.syncDirectory(directory.path)
    }

    public func get(key: String) async throws(StorageError) -> Data {
        let url = try fileURL(forKey: key)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw .notFound(key: key)
        }
        do {
            return try Data(contentsOf: url)
        } catch {
            throw .ioFailure(key: key, message: error.localizedDescription)
        }
    }

    public func exists(key: String) async -> Bool {
        guard let url = try? fileURL(forKey: key) else { return false }
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
    }

    public func list(prefix: String) async throws(StorageError) -> [String] {
        if prefix.hasPrefix("/") || prefix.contains("\\") || prefix.contains("\0")
            || prefix.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) {
            throw .invalidKey(key: prefix, reason: "not a relative key prefix")
        }
        // Walk only the deepest folder the prefix names completely.
        let components = prefix.split(separator: "/")
        let folder = components.dropLast(prefix.hasSuffix("/") ? 0 : 1).joined(separator: "/")
        let start = folder.isEmpty ? root : root.appendingPathComponent(folder, isDirectory: true)
        guard let enumerator = FileManager.default.enumerator(at: start, includingPropertiesForKeys: [.isRegularFileKey]) else {
            return []
        }
        let rootPath = root.path.hasSuffix("/") ? root.path : root.path + "/"
        var keys: [String] = []
        for case let url as URL in enumerator {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true else { continue }
            let name = url.lastPathComponent
            if name.hasPrefix("."), name.contains(Self.tempMarker) { continue }
            let path = url.standardizedFileURL.path
            guard path.hasPrefix(rootPath) else { continue }
            let key = String(path.dropFirst(rootPath.count))
            if key.hasPrefix(prefix) { keys.append(key) }
        }
        return keys.sorted()
    }

    /// The file for `key`, after validating the key and checking that the standardized path
    /// stays inside the root.
    func fileURL(forKey key: String) throws(StorageError) -> URL {
        try ObjectKey.validate(key)
        let url = root.appendingPathComponent(key, isDirectory: false).standardizedFileURL
        let rootPath = root.path.hasSuffix("/") ? root.path : root.path + "/"
        guard url.path.hasPrefix(rootPath) else {
            throw .invalidKey(key: key, reason: "resolves outside the storage root")
        }
        return url
    }

    struct POSIXFailure: Error {
        var message: String
    }

    /// Writes all of `data` to a new file at `path` and fsyncs it.
    static func writeSynced(_ data: Data, to path: String) throws(POSIXFailure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw POSIXFailure(message: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var failure: String?
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = "write \(path): \(String(cString: strerror(errno)))"
                    return
                }
                offset += written
            }
        }
        if let failure { throw POSIXFailure(message: failure) }
        if fsync(fd) != 0 { throw POSIXFailure(message: "fsync \(path): \(String(cString: strerror(errno)))") }
    }

    /// Makes the rename itself durable. Best effort: some file systems refuse fsync on folders.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
