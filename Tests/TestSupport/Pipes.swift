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
