// WHIP end to end: the real daemon binary with real WebRTC peers (aiortc from PyPI, Debian's
// headless chromium, GStreamer 1.22's webrtcbin in a network namespace, a seeded impairing
// UDP relay), driven by scripts/daemon-tests/whip_tests.py; composites are read back from the
// HLS recording and nginx-rtmp and measured with ffmpeg. Each test starts its own daemon.
import Foundation
import XCTest

final class WHIPDaemonTests: XCTestCase {
    func run(_ test: String, tools: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript(
            "whip_tests.py", test, tools: ["aws", "ffmpeg", "ffprobe", "python3", "nginx"] + tools, file: file, line: line)
        // Figures the tests measure go to the suite's output.
        for line in output.split(separator: "\n")
        where line.hasPrefix("A/V offset") || line.hasPrefix("Chromium:") || line.hasPrefix("impairment:") || line.hasPrefix("aiortc")
            || line.hasPrefix("every join and leave") || line.hasPrefix("pip-bottom-right") {
            print("\(test): \(line)")
        }
    }

    func testMixedStageAiortcH264VP8AndRTMP() throws { try run("mixed_stage_aiortc_h264_vp8_and_rtmp") }
    func testWHIPHTTPRulesAndRefusals() throws { try run("whip_http_rules") }
    func testChromiumIsRecordedIndividually() throws { try run("chromium_is_recorded_individually") }
    func testSTUNWithAWrongPasswordIsAnswered401() throws { try run("stun_with_a_wrong_password_is_answered_401") }
    func testWHIPBitrateOverTheMaximumIsDisconnected() throws { try run("whip_bitrate_over_the_maximum_is_disconnected") }
    func testAiortcFlashAndBeepStayInSync() throws { try run("aiortc_flash_and_beep_stay_in_sync") }
    func testChromiumPublishesFlashAndBeep() throws { try run("chromium_publishes_flash_and_beep", tools: ["chromium"]) }
    func testChromiumCaptureTimesKeepFlashAndBeepInSync() throws {
        try run("chromium_capture_times_keep_flash_and_beep_in_sync", tools: ["chromium"])
    }
    func testChromiumVP8CaptureTimesKeepFlashAndBeepInSync() throws {
        try run("chromium_vp8_capture_times_keep_flash_and_beep_in_sync", tools: ["chromium"])
    }
    func testChromiumSimulcastComposesTheLargestLayer() throws {
        try run("chromium_simulcast_composes_the_largest_layer", tools: ["chromium"])
    }
    func testChromiumSimulcastComposesTheLayerItsTileNeeds() throws {
        try run("chromium_simulcast_composes_the_layer_its_tile_needs", tools: ["chromium"])
    }
    func testChromiumVP8SimulcastComposesTheLargestLayer() throws {
        try run("chromium_vp8_simulcast_composes_the_largest_layer", tools: ["chromium"])
    }
    func testSessionRerenderMatchesTheLiveComposite() throws {
        try run("session_rerender_matches_the_live_composite", tools: ["chromium", "moto_server"])
    }
    func testGStreamerWebRTCBinInANamespace() throws { try run("gstreamer_webrtcbin_in_a_namespace", tools: ["ip", "gst-launch-1.0"]) }
    func testImpairedNetworkKeepsPlayingThenAnOutageLeaves() throws { try run("impaired_network_keeps_playing_then_an_outage_leaves") }
}
