// Local bucket directories are checked before any composition runs: a directory the daemon
// cannot write would otherwise be found by the first recording, which FAILS with it.
import Foundation

extension ServerConfiguration {
    /// `config check`: a bucket directory that exists must take a file (one is written and
    /// removed); one that does not exist yet must be creatable where it would go. When this user
    /// may not create it, that is a warning only: `serve` runs as its own user and makes it at start.
    func bucketDirectoryCheck() -> (problems: [String], warnings: [String]) {
        var problems: [String] = [], warnings: [String] = []
        let files = FileManager.default
        for name in buckets.keys.sorted() {
            guard let path = buckets[name]?.directory, !path.isEmpty else { continue }
            var isDirectory: ObjCBool = false
            if files.fileExists(atPath: path, isDirectory: &isDirectory) {
                if !isDirectory.boolValue {
                    problems.append("buckets.\(name): \(path) is not a directory")
                } else if let failure = Self.writeProbe(in: path) {
                    problems.append("buckets.\(name): cannot write into \(path): \(failure)")
                }
                continue
            }
            var ancestor = URL(fileURLWithPath: path).deletingLastPathComponent()
            while !files.fileExists(atPath: ancestor.path, isDirectory: &isDirectory), ancestor.path != "/" {
                ancestor.deleteLastPathComponent()
            }
            if !isDirectory.boolValue {
                problems.append("buckets.\(name): \(path) cannot be made: \(ancestor.path) is not a directory")
            } else if access(ancestor.path, W_OK) != 0 {
                let reason = String(cString: strerror(errno))
                warnings.append("buckets.\(name): \(path) does not exist and this user cannot make it in \(ancestor.path) "
                                + "(\(reason)); serve makes it at start")
            }
        }
        return (problems, warnings)
    }

    /// `serve`, before anything runs: makes each local bucket's directory and writes a file into
    /// it. Each problem names its bucket.
    public func prepareBucketDirectories() -> [String] {
        buckets.keys.sorted().compactMap { name in
            guard let path = buckets[name]?.directory, !path.isEmpty else { return nil }
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                return "buckets.\(name): cannot make \(path): \(error.localizedDescription)"
            }
            return Self.writeProbe(in: path).map { "buckets.\(name): cannot write into \(path): \($0)" }
        }
    }

    /// Creates and removes a file in `directory`; nil when that worked, else why not.
    static func writeProbe(in directory: String) -> String? {
        let probe = directory + "/.stage-compositor-write-check-\(getpid())"
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        close(descriptor)
        unlink(probe)
        return nil
    }
}
