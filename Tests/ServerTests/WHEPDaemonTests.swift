// WHEP end to end: the real daemon binary, RTMP publishers (Debian's ffmpeg) and aiortc
// viewers (scripts/whip-clients/whep_aiortc.py), driven by scripts/daemon-tests/whep_tests.py:
// the composite as a viewer plays it (colours, tones, lip sync from the sender reports), its
// refusals, and a viewer blackholed by the seeded relay. Each test starts its own daemon.
import Foundation
import XCTest

final class WHEPDaemonTests: XCTestCase {
    func run(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript(
            "whep_tests.py", test, tools: ["aws", "ffmpeg", "ffprobe", "python3"], file: file, line: line)
        for line in output.split(separator: "\n") where line.hasPrefix("WHEP viewer") || line.hasPrefix("healthy viewer") {
            print("\(test): \(line)")
        }
    }

    func testAiortcPlaysTheComposite() throws { try run("aiortc_plays_the_composite") }
    func testABlackholedViewerIsDroppedAndTheOthersPlayOn() throws { try run("a_blackholed_viewer_is_dropped_and_the_others_play_on") }
}
