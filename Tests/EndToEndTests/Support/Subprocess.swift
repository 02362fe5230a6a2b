// Blocking work (compositions, ffmpeg/ffprobe, the CLI) runs on its own thread, never on the
// cooperative pool: the pipeline blocks on its upload queue, whose worker is an async task,
// and with 2 cores the pool has only 2 threads.
import Foundation
import TestSupport


struct ProcessOutput: Sendable {
    var status: Int32
    var stdout: Data
    var stderr: String
    /// True when the process died of a signal (a crash), not a normal exit.
    var crashed: Bool

    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

struct SubprocessError: Error, CustomStringConvertible {
    var description: String
}

/// Runs `executable` to completion, capturing stdout and stderr through temp files (no pipe
/// can fill up and stall the child).
func runProcess(_ executable: String, _ arguments: [String], currentDirectory: String? = nil) async throws -> ProcessOutput {
    try await onThread {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("stdout")
        let errURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return ProcessOutput(status: process.terminationStatus,
                             stdout: try Data(contentsOf: outURL),
                             stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self),
                             crashed: process.terminationReason == .uncaughtSignal)
    }
}

/// Runs a tool that must succeed; throws with its stderr otherwise.
func runChecked(_ executable: String, _ arguments: [String]) async throws -> ProcessOutput {
    let output = try await runProcess(executable, arguments)
    guard output.status == 0, !output.crashed else {
        throw SubprocessError(description: "\(executable) \(arguments.joined(separator: " ")) failed (\(output.status)): \(output.stderr)")
    }
    return output
}
