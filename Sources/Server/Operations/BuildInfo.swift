// What build this is, for `stage_compositor_build_info` and `--version`. No commit is stamped
// into the build yet: `commit` stays "unknown" until packaging fills it.
public enum BuildInfo {
    public static let version = "0.1.0"
    public static let commit = "unknown"
}
