import Foundation
import Testing

/// MemoryDenyWriteExecute=yes kills a process that maps memory writable and executable
/// (a JIT). Run the real binary's compose path (Swift runtime, FFmpeg decoders, x264)
/// under the same kernel rule to show the hardening does not break it.
@Suite("MemoryDenyWriteExecute")
struct MemoryDenyWriteExecuteTests {
    /// The stage-compositor built next to this test bundle (`swift build` builds it).
    static var builtBinary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("stage-compositor")
    }

    @Test("stage-compositor compose runs with write+execute mappings forbidden")
    func composeUnderMDWE() async throws {
        let binary = Self.builtBinary
        try #require(FileManager.default.isExecutableFile(atPath: binary.path),
                     "\(binary.path) is not built: run swift build first")
        let out = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let helper = repositoryRoot.appendingPathComponent("Tests/OpsTests/run_with_mdwe.py").path
        let result = try await runCommand("/usr/bin/env", [
            "python3", helper, binary.path, "compose",
            "--stage", repositoryRoot.appendingPathComponent("fixtures/four-grid").path,
            "--duration", "2", "--encoder", "320x180@15:300000", "--preset", "ultrafast", "--out", out.path,
        ])
        if result.status == 77 { return }  // kernel without PR_SET_MDWE (< 6.3): nothing to check
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.hasSuffix("multivariant.m3u8\n"), "\(result.standardOutput)")
    }
}
