// Fleet mode end to end: two or three daemons on one PostgreSQL database act as one IVS
// endpoint (scripts/daemon-tests/fleet_tests.py): any node answers and forwards to the stage's
// node (API and WHIP's 307), placement by capacity and its refusal, failover after kill -9 of a
// stage's node, fencing of a node stopped past its lease, and a database restart under a running
// composition. Each test has a fresh database of the shared server; the restart test has a
// server of its own, which its script restarts (`restartCommand`) when the composition runs.
import Foundation
import TestSupport
import XCTest

final class FleetDaemonTests: XCTestCase {
    static let tools = ["aws", "ffmpeg", "ffprobe", "python3", "moto_server"]

    func run(_ test: String, environment: [String: String], file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript("fleet_tests.py", test, tools: Self.tools, environment: environment,
                                                            file: file, line: line)
        XCTAssertTrue(output.contains("PASS"), output, file: file, line: line)
        // What the test measured (failover times, the placement spread) goes to the suite's output.
        for figure in output.split(separator: "\n") where figure.hasPrefix("fleet: ") {
            print("\(test): \(figure.dropFirst("fleet: ".count))")
        }
    }

    func runOnSharedServer(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let url = try PostgresTestServer.shared().database()
        try run(test, environment: ["STAGE_COMPOSITOR_TEST_DATABASE_URL": url], file: file, line: line)
    }

    func testAnyNodeAnswersForwardsAndRedirectsWHIP() throws { try runOnSharedServer("fleet_any_node_answers") }
    func testPlacementByCapacityRefusesWhenNoNodeHasRoom() throws { try runOnSharedServer("fleet_capacity_and_refusal") }
    func testKill9OfAStagesNodeFailsOverToASurvivor() throws { try runOnSharedServer("fleet_failover_kill9") }
    func testANodeStoppedPastItsLeaseFencesItselfAndWritesNothing() throws { try runOnSharedServer("fleet_fencing_sigstop") }
    func testSIGTERMDrainsANodeAndItsCompositionsFinishFirst() throws { try runOnSharedServer("fleet_drain_sigterm") }

    func testDatabaseRestartMidCompositionReapsNoNodeAndLeavesNoGap() throws {
        let server = try PostgresTestServer.dedicated()
        defer { server.stop() }
        let url = try server.database()
        let restart = String(decoding: try JSONSerialization.data(withJSONObject: server.restartCommand), as: UTF8.self)
        try run("fleet_database_restart", environment: ["STAGE_COMPOSITOR_TEST_DATABASE_URL": url,
                                                        "STAGE_COMPOSITOR_TEST_PG_RESTART": restart])
    }
}
