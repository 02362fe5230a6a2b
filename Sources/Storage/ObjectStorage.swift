// Object storage behind one protocol: a bucket-like key/value store of immutable objects.
// `LocalDirectoryStorage` is the embedded default (a directory stands in for a bucket);
// `S3Storage` talks to any S3-compatible endpoint behind the same protocol.
public import Foundation

/// The storage layer's one error type. Every case names the key at fault.
public enum StorageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key is not a safe relative object key (empty, absolute, `..`, backslash, NUL, ...).
    case invalidKey(key: String, reason: String)
    case notFound(key: String)
    /// The backend refused the credentials or the permission (S3 403: AccessDenied,
    /// SignatureDoesNotMatch, InvalidAccessKeyId, ...); `message` carries the server's words.
    case accessDenied(key: String, message: String)
    /// The backend failed: a file-system error locally, a request failure remotely.
    case ioFailure(key: String, message: String)

    public var description: String {
        switch self {
        case .invalidKey(let key, let reason): "invalid object key '\(key)': \(reason)"
        case .notFound(let key): "object '\(key)' not found"
        case .accessDenied(let key, let message): "access denied to '\(key)': \(message)"
        case .ioFailure(let key, let message): "storage failure on '\(key)': \(message)"
        }
    }
}

/// A bucket. Keys are "/"-separated relative paths (`stage/comp/dest/composite/events/x.json`).
/// A `put` replaces the whole object atomically: readers see the old or the new object, never
/// a mix (this is what lets the recorder rewrite playlists in place).
public protocol ObjectStorage: Sendable {
    func put(_ data: Data, key: String, contentType: String?) async throws(StorageError)
    func get(key: String) async throws(StorageError) -> Data
    func exists(key: String) async -> Bool
    /// Keys starting with `prefix` (plain string prefix, as in S3), sorted.
    func list(prefix: String) async throws(StorageError) -> [String]
}

extension ObjectStorage {
    /// Stores `data` with the content type guessed from the key's extension.
    public func put(_ data: Data, key: String) async throws(StorageError) {
        try await put(data, key: key, contentType: ObjectKey.contentType(forKey: key))
    }

    /// Stores UTF-8 text (playlists, metadata JSON).
    public func put(text: String, key: String) async throws(StorageError) {
        try await put(Data(text.utf8), key: key, contentType: ObjectKey.contentType(forKey: key))
    }
}

/// Rules for object keys, shared by every backend so a key valid locally is valid on S3.
public enum ObjectKey {
    /// S3's limit, in UTF-8 bytes.
    public static let maximumLength = 1024

    /// Checks that `key` is a plain relative path: non-empty, at most 1024 bytes, no leading
    /// "/", no trailing "/", no empty, "." or ".." components, no backslash, no NUL or other
    /// control characters, no component longer than 255 bytes (file-system limit).
    public static func validate(_ key: String) throws(StorageError) {
        func reject(_ reason: String) -> StorageError { .invalidKey(key: key, reason: reason) }
        if key.isEmpty { throw reject("empty") }
        if key.utf8.count > maximumLength { throw reject("longer than \(maximumLength) bytes") }
        if key.hasPrefix("/") { throw reject("absolute path") }
        if key.hasSuffix("/") { throw reject("ends with '/'") }
        if key.contains("\\") { throw reject("contains a backslash") }
        if key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw reject("contains NUL or a control character")
        }
        for component in key.split(separator: "/", omittingEmptySubsequences: false) {
            switch component {
            case "": throw reject("empty path component")
            case ".", "..": throw reject("'\(component)' path component")
            default:
                if component.utf8.count > 255 { throw reject("path component longer than 255 bytes") }
            }
        }
    }

    /// A content type from the key's extension, for the objects of a recording.
    public static func contentType(forKey key: String) -> String? {
        guard let dot = key.lastIndex(of: "."), !key[dot...].contains("/") else { return nil }
        switch key[key.index(after: dot)...].lowercased() {
        case "m3u8": return "application/vnd.apple.mpegurl"
        case "ts": return "video/mp2t"
        case "mp4", "m4s": return "video/mp4"
        case "json": return "application/json"
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        default: return nil
        }
    }
}
