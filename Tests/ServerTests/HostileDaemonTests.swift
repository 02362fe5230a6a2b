// Hostile publishers and callers (issue 23) against the real daemon binary: hand-made RTMP
// clients with valid keys sending nonsense timestamps and floods of empty messages, thousands
// of idle connections and slow POSTs from other loopback addresses, cross-site API calls,
// old TLS versions on RTMPS, aiortc WHIP publishers whose RTP timestamps jump by 2^31 or that
// flood SSRCs and DTLS, and the WHIP per-address cap, through scripts/daemon-tests/hostile_tests.py. Each test starts and stops its own daemon;
// an honest ffmpeg publisher's tile and tone are checked in the composition's recording.
import Foundation
import XCTest

final class HostileDaemonTests: XCTestCase {
    func run(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript(
            "hostile_tests.py", test, tools: ["aws", "ffmpeg", "ffprobe", "openssl", "python3"], file: file, line: line)
        // The figures the tests measure (RSS before/peak/after against their bounds, how soon
        // attackers were cut off, what the caps held) go to the suite's output.
        for line in output.split(separator: "\n")
        where ["RSS:", "attacker", "canary:", "early floods:", "idle RTMP:", "slow POSTs:", "zero-length audio:",
               "type-19 messages:", "recording:", "flood counted:", "WHIP event loop lag", "third publisher:"].contains(where: { line.hasPrefix($0) }) {
            print("\(test): \(line)")
        }
    }

    func testRTMPTimestampFloodDisconnectsTheAttackerAlone() throws { try run("rtmp_timestamp_flood") }
    func testRTMPMessageFloodDisconnectsTheAttackerAlone() throws { try run("rtmp_message_flood") }
    func testRTMPFloodBeforeAdmissionStallsNoOne() throws { try run("rtmp_flood_before_admission") }
    func testConnectionCapsKeepIdleConnectionsAndSlowPostsOut() throws { try run("connection_caps") }
    func testCrossSiteAPIRequestsAreRefusedWhileAuthenticationIsOff() throws { try run("cross_site_api_refused") }
    func testRTMPSRefusesTLSBelow1_2() throws { try run("rtmps_refuses_old_tls") }
    func testWHIPTimestampFloodLeavesTheHonestPublisherAlone() throws { try run("whip_timestamp_flood") }
    func testWHIPSSRCAndDTLSFloodIsBoundedAndDelaysNoOne() throws { try run("whip_ssrc_and_dtls_flood") }
    func testWHIPSessionsPerAddressAreCapped() throws { try run("whip_sessions_per_address") }
}
