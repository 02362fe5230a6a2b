// Child processes for the tests: one-shot tools (python3, ffprobe) and moto_server.
import Foundation
import TestSupport


struct ToolFailure: Error, CustomStringConvertible {
    var description: String
}

/// Runs `arguments` (looked up on PATH) to completion on a dedicated thread, feeding `input`.
func runTool(_ arguments: [String], input: Data = Data()) async throws -> Data {
    try await onThread {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let stdin = Pipe.closedOnExec(), stdout = Pipe.closedOnExec(), stderr = Pipe.closedOnExec()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        // Read stderr on the side so a chatty tool cannot fill its pipe and stall.
        let errors = Locked(Data())
        let errorReader = Thread { errors.value = stderr.fileHandleForReading.readDataToEndOfFile() }
        errorReader.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errors.done { usleep(1000) }
        guard process.terminationStatus == 0 else {
            throw ToolFailure(description: "\(arguments.joined(separator: " ")) exited \(process.terminationStatus): "
                              + String(decoding: errors.value, as: UTF8.self))
        }
        return output
    }
}

/// A value written once by another thread.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    private var written = false
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue; written = true } }
    }
    var done: Bool { lock.withLock { written } }
}

enum Paths {
    /// The package root: this file is Tests/S3StorageTests/Support/Processes.swift.
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let testsFolder = repoRoot.appendingPathComponent("Tests/S3StorageTests")
    static func fixture(_ name: String) -> String { repoRoot.appendingPathComponent("fixtures/\(name)").path }

    static func makeScratch(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("s3-tests-\(name)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
