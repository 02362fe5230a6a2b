// The operator console end to end: headless Chromium on /console of the real daemon, with a live
// stage of two ffmpeg RTMP publishers and a running composition, driven over the DevTools
// protocol through scripts/daemon-tests/console_tests.py. The screenshots' paths are printed.
import Foundation
import XCTest

final class ConsoleDaemonTests: XCTestCase {
    func run(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript(
            "console_tests.py", test, tools: ["python3", "ffmpeg", "chromium"], file: file, line: line)
        for line in output.split(separator: "\n") where line.hasPrefix("console:") { print("\(test): \(line)") }
    }

    func testTheConsoleDirectsALiveStage() throws { try run("console_directs_a_live_stage") }
    func testTheConsoleSignsInWithAnAccessKey() throws { try run("console_signs_in_with_an_access_key") }
}
