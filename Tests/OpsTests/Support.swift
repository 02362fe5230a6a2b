import Foundation
import TestSupport

/// The repository root (this file is Tests/OpsTests/Support.swift).
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

struct CommandResult {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs a program to completion (small outputs only) on a Dispatch thread, so the wait
/// never blocks one of the few threads Swift concurrency (and the other tests) run on.
func runCommand(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                currentDirectory: URL? = nil) async throws -> CommandResult {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result {
                try runCommandBlocking(executable, arguments, environment: environment,
                                       currentDirectory: currentDirectory)
            })
        }
    }
}

private func runCommandBlocking(_ executable: String, _ arguments: [String], environment: [String: String],
                                currentDirectory: URL?) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    if let currentDirectory { process.currentDirectoryURL = currentDirectory }
    let output = Pipe.closedOnExec(), errors = Pipe.closedOnExec()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(status: process.terminationStatus,
                         standardOutput: String(decoding: out, as: UTF8.self),
                         standardError: String(decoding: err, as: UTF8.self))
}

func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ops-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// `Key=Value` lines of one section of a unit file (comments and blank lines skipped).
func unitDirectives(_ text: String, section: String) -> [(key: String, value: String)] {
    var current = ""
    var result: [(key: String, value: String)] = []
    for raw in text.split(separator: "\n") {
        let line = raw.trimmingCharacters(in: .whitespaces)
        if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
        if line.hasPrefix("[") { current = String(line.dropFirst().dropLast()); continue }
        guard current == section, let equals = line.firstIndex(of: "=") else { continue }
        result.append((String(line[..<equals]), String(line[line.index(after: equals)...])))
    }
    return result
}
