// Live stages end to end: the real daemon binary with real publishers (the ffmpeg CLI,
// GStreamer's rtmp2sink, hand-made hostile RTMP clients), driven by the AWS CLI and boto3
// through scripts/daemon-tests/live_tests.py, the output read back from nginx-rtmp and the
// HLS recording and measured with ffmpeg. Each test starts and stops its own daemon.
import Foundation
import XCTest

final class LiveDaemonTests: XCTestCase {
    func run(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        guard let binary = DaemonProcessTests.binary else {
            XCTFail("stage-compositor binary not found; run `swift build` first", file: file, line: line)
            return
        }
        for tool in ["aws", "ffmpeg", "ffprobe", "gst-launch-1.0", "python3", "nginx"] {
            let which = Process()
            which.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            which.arguments = ["sh", "-c", "command -v \(tool) || test -x /usr/sbin/\(tool)"]
            which.standardOutput = FileHandle.nullDevice
            try which.run()
            which.waitUntilExit()
            XCTAssertEqual(which.terminationStatus, 0, "\(tool) is needed (make test-deps)", file: file, line: line)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", DaemonProcessTests.packageRoot.appendingPathComponent("scripts/daemon-tests/live_tests.py").path,
                             binary, test]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        // Figures the tests measure (A/V offsets, time to LEFT) go to the suite's output.
        for line in text.split(separator: "\n") where line.hasPrefix("A/V offset") || line.hasPrefix("killed publisher") {
            print("\(test): \(line)")
        }
        XCTAssertEqual(process.terminationStatus, 0, "live test \(test) failed:\n\(text)", file: file, line: line)
    }

    func testThreePublishersAreComposedAndTheCompositionStopsByItself() throws { try run("three_publishers_compose_and_stop") }
    func testWebhookHandlerStartsTheCompositionOnParticipantPublished() throws { try run("full_workflow_webhook_starts_composition") }
    func testGStreamerRTMP2SinkPublishesOverRTMPAndRTMPS() throws { try run("gstreamer_rtmp2sink_publishes") }
    func testFlashAndBeepStayInSync() throws { try run("av_sync_flash_and_beep") }
    func testRefusalsNameTheirReason() throws { try run("refusals_name_their_reason") }
    func testHostileConnectionsAreClosedAlone() throws { try run("hostile_connections_are_closed_alone") }
    func testBitrateOverTheMaximumIsDisconnected() throws { try run("bitrate_over_the_maximum_is_disconnected") }
    func testDisconnectParticipantAndReconnectWithTheSameKey() throws { try run("disconnect_participant_and_reconnect_with_the_same_key") }
}

extension LiveDaemonTests {
    func testCompositionOnAnEmptyStageWaitsForAPublisher() throws { try run("empty_stage_waits_for_a_publisher") }
}
