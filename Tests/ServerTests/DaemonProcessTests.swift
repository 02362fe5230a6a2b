// Runs the real daemon binary (`stage-compositor serve`) and drives it with the AWS CLI and
// boto3 through scripts/daemon-tests/daemon_tests.py; each test starts and stops its own
// daemon on a free loopback port. The script prints why a test failed, with the daemon log.
import Foundation
import XCTest
import TestSupport

final class DaemonProcessTests: XCTestCase {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The built executable next to the test bundle (or STAGE_COMPOSITOR_BIN).
    static var binary: String? {
        if let path = ProcessInfo.processInfo.environment["STAGE_COMPOSITOR_BIN"] { return path }
        let candidates = [Bundle.main.bundleURL.appendingPathComponent("stage-compositor").path,
                          packageRoot.appendingPathComponent(".build/debug/stage-compositor").path]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    func runScript(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        _ = try Self.runDaemonScript("daemon_tests.py", test, tools: ["aws", "ffprobe", "ffmpeg", "python3"], file: file, line: line)
    }

    /// Runs `scripts/daemon-tests/<script> <binary> <test>` (after checking the tools it needs
    /// are installed) and fails with its output, which names what went wrong and the daemon log.
    static func runDaemonScript(_ script: String, _ test: String, tools: [String], environment: [String: String] = [:],
                                file: StaticString = #filePath, line: UInt = #line) throws -> String {
        guard let binary else {
            XCTFail("stage-compositor binary not found; run `swift build` first", file: file, line: line)
            return ""
        }
        for tool in tools {
            let which = Process()
            which.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            which.arguments = ["sh", "-c", "command -v \(tool) || test -x /usr/sbin/\(tool)"]
            which.standardOutput = FileHandle.nullDevice
            try which.run()
            which.waitUntilExit()
            XCTAssertEqual(which.terminationStatus, 0, "\(tool) is needed (make test-deps)", file: file, line: line)
        }
        var environment = environment
        // The PostgreSQL leg of the store matrix (`make test-postgres`): every daemon test on a
        // fresh database of the test process's server, unless the test chose its own.
        if ProcessInfo.processInfo.environment["STAGE_COMPOSITOR_TEST_STORE"] == "postgres",
           environment["STAGE_COMPOSITOR_TEST_DATABASE_URL"] == nil {
            environment["STAGE_COMPOSITOR_TEST_DATABASE_URL"] = try PostgresTestServer.shared().database()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", packageRoot.appendingPathComponent("scripts/daemon-tests/\(script)").path, binary, test]
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let output = Pipe.closedOnExec()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, "daemon test \(test) failed:\n\(text)", file: file, line: line)
        return text
    }

    func testStartStopGridAndPipWithAWSCLI() throws { try runScript("cli_start_stop_grid_and_pip") }
    func testAutoShutdownAfterIdleTimeout() throws { try runScript("auto_shutdown_after_idle_timeout") }
    func testValidationErrorsQuotasAndConflictsThroughBoto3() throws { try runScript("validation_errors_and_quotas") }
    func testKill9ThenRestartFinalizesTheRecording() throws { try runScript("kill9_restart_finalizes_recording") }
    func testSIGTERMStopsCompositionsCleanly() throws { try runScript("sigterm_stops_compositions_cleanly") }
    func testConfigCheck() throws { try runScript("config_check") }
    func testExampleConfigurationPassesConfigCheck() throws { try runScript("example_config_check") }
    func testSigV4AuthThroughAWSCLIAndBotocore() throws { try runScript("sigv4_auth") }
    func testChannelDestinationPushesToNginxRTMP() throws { try runScript("channel_destination_pushes_to_nginx") }
    func testComposeCLIPlansLikeTheDaemonPushesAndRecords() throws { try runScript("compose_cli_pushes_and_records") }
    func testRefusedChannelFailsAloneWhileRecordingCompletes() throws { try runScript("channel_refused_fails_alone") }
    func testServeWithoutConfigAndSystemdNotify() throws { try runScript("serve_without_config_and_systemd_notify") }
}
