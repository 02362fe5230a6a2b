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

/// Runs a tool found on PATH to its end: its exit status and what it wrote to standard error
/// (standard output is dropped), with pipes no other child inherits.
public func runTool(_ executable: String, _ arguments: [String]) throws -> (status: Int32, errors: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let errors = Pipe.closedOnExec()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let message = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: message, as: UTF8.self))
}
