// Directing a running composition end to end: the real daemon with ffmpeg RTMP publishers and
// an aiortc WHIP publisher, directed by `stage-compositor composition update`, UpdateParticipant
// signed by botocore and a WHIP token exchange, through scripts/daemon-tests/direction_tests.py;
// the recording and what nginx-rtmp received are read back and measured with ffmpeg.
import Foundation
import XCTest

final class DirectionDaemonTests: XCTestCase {
    func run(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript(
            "direction_tests.py", test, tools: ["aws", "ffmpeg", "ffprobe", "python3", "nginx", "chromium"], file: file, line: line)
        // The measured offsets go to the suite's output (the note quotes them).
        for line in output.split(separator: "\n") where line.hasPrefix("directed:") { print("\(test): \(line)") }
    }

    func testADirectedShowIsSeenOnTheNextFrames() throws { try run("directed_show") }
    func testChromiumExchangesItsWHIPTokenFromThePage() throws { try run("chromium_exchanges_its_token") }
    func testTheActiveSpeakerIsFeaturedTurnByTurn() throws { try run("active_speaker_follows_turns") }
}
