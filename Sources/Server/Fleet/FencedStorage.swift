// A bucket as a fleet node writes it: every write first asks whether the node still holds its
// lease. A node that was paused past its lease (SIGSTOP, a frozen VM) resumes with uploads
// queued; they must not land after a survivor has finalized its recordings.
import Foundation
import Storage

struct FencedStorage: ObjectStorage {
    let base: any ObjectStorage
    /// Whether this node may still write (false once its lease is lost: for good).
    let mayWrite: @Sendable () -> Bool

    func put(_ data: Data, key: String, contentType: String?) async throws(StorageError) {
        guard mayWrite() else {
            throw .accessDenied(key: key, message: "this node lost its lease (fenced): it writes nothing more")
        }
        try await base.put(data, key: key, contentType: contentType)
    }

    func get(key: String) async throws(StorageError) -> Data { try await base.get(key: key) }

    func exists(key: String) async -> Bool { await base.exists(key: key) }

    func list(prefix: String) async throws(StorageError) -> [String] { try await base.list(prefix: prefix) }
}
