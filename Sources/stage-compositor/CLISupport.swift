import APIModels
import ArgumentParser
import Foundation
import Logging

/// A user-facing failure: printed as one line, exit status 1, no stack trace.
struct CLIFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`, turning any thrown error into "error: …" on stderr and exit code 1.
func runReportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as ExitCode {
        throw error
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    }
}

/// `runReportingErrors` for async commands.
func reportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ExitCode {
        throw error
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    }
}

func makeLogger(label: String, verbose: Bool) -> Logger {
    var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = verbose ? .info : .warning
    return logger
}

/// 12 characters of [a-zA-Z0-9], like IVS resource IDs.
func makeResourceID() -> String { ResourceID.random().rawValue }

func stderrIsTerminal() -> Bool { isatty(STDERR_FILENO) != 0 }
