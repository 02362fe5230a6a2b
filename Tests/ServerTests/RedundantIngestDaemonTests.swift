// Redundant ingest (IVS's redundantIngest on ingest configurations) against the real daemon:
// two ffmpeg RTMP publishers on the two credentials of one configuration, the active one
// SIGKILLed mid-composition and back 3 s later, through scripts/daemon-tests/redundant_tests.py;
// the recording is read back with ffmpeg (the source's colour at every frame, the freeze at
// each switch, the tone's longest gap).
import Foundation
import XCTest

final class RedundantIngestDaemonTests: XCTestCase {
    func testRedundantIngestSwitchesWithoutAGap() throws {
        let test = "redundant_ingest_switches_without_a_gap"
        let output = try DaemonProcessTests.runDaemonScript("redundant_tests.py", test, tools: ["python3", "ffmpeg", "ffprobe"])
        // The measured switch times, freezes and tone gap go to the suite's output (the release
        // notes quote them).
        for line in output.split(separator: "\n") where line.hasPrefix("redundant:") { print("\(test): \(line)") }
    }
}
