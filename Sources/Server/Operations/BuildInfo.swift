// What build this is, for `stage_compositor_build_info` and `--version`. The commit comes from
// the CBuildInfo C target: the Makefile's builds (`make release`, `make deb`) stamp it in
// without touching a tracked file; any other build says "unknown".
import CBuildInfo

public enum BuildInfo {
    public static let version = "0.1.0"
    /// The short commit hash, `<hash>-dirty` for a tree with uncommitted changes, or "unknown".
    public static let commit = String(cString: stage_compositor_build_commit())
    /// What `stage-compositor --version` prints: `0.1.0 (commit 0123456789ab)`.
    public static let versionDescription = "\(version) (commit \(commit))"
}
