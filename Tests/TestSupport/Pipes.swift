// Pipes for the processes tests start.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension Pipe {
    /// A pipe whose ends no other child process inherits. Foundation's Process leaves every
    /// open descriptor to its children, so a long-lived child started meanwhile by another
    /// test (nginx, moto_server) kept copies of a short-lived one's pipes: its reader never
    /// saw end-of-file, and a run of the suite hung (the botocore signer waited for its stdin
    /// to close while nginx held the write end). The child that gets an end as its standard
    /// input, output or error still has it: dup2 clears the close-on-exec flag.
    public static func closedOnExec() -> Pipe {
        let pipe = Pipe()
        for descriptor in [pipe.fileHandleForReading.fileDescriptor, pipe.fileHandleForWriting.fileDescriptor] {
            _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
        }
        return pipe
    }
}

/// Which of a tool's output streams `runTool` keeps; the other goes to /dev/null.
public enum ToolStreams: Sendable {
    case standardOutput, standardError, both
}

/// What a tool run to its end left: its exit status and the streams that were kept.
public struct ToolRun: Sendable {
    public let status: Int32
    public let output: Data
    public var text: String { String(decoding: output, as: UTF8.self) }
}

/// Runs a tool found on PATH to its end, keeping `streams` (standard output unless told),
/// with pipes no other child inherits.
public func runTool(_ executable: String, _ arguments: [String], keeping streams: ToolStreams = .standardOutput) throws -> ToolRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let kept = Pipe.closedOnExec()
    process.standardOutput = streams == .standardError ? FileHandle.nullDevice : kept
    process.standardError = streams == .standardOutput ? FileHandle.nullDevice : kept
    try process.run()
    let output = kept.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ToolRun(status: process.terminationStatus, output: output)
}
