// Daemon tests again with `database.url` on PostgreSQL: each gets a database of its own on
// the test process's server (TestSupport.PostgresTestServer). Chosen for what the store
// carries: the API's resources, a kill -9 and restart that must find its compositions and
// recordings in the database, and a live stage's sessions and participants.
import Foundation
import TestSupport
import XCTest

final class PostgresDaemonTests: XCTestCase {
    /// Runs the daemon test on a fresh database, then checks the daemon kept its state there:
    /// `sql` counts rows that only the test's run can have written.
    func run(_ script: String, _ test: String, tools: [String], rows sql: String) throws {
        let server = try PostgresTestServer.shared()
        let url = try server.database()
        let output = try DaemonProcessTests.runDaemonScript(script, test, tools: tools,
                                                            environment: ["STAGE_COMPOSITOR_TEST_DATABASE_URL": url])
        XCTAssertTrue(output.contains("PASS"), output)
        let count = try server.query(url: url, sql)
        XCTAssertNotEqual(Int(count) ?? 0, 0, "\(sql): \(count)")
    }

    func testStartStopThroughTheAWSCLIOnPostgreSQL() throws {
        try run("daemon_tests.py", "cli_start_stop_grid_and_pip", tools: ["aws", "ffprobe", "ffmpeg", "python3"],
                rows: "SELECT count(*) FROM composition")
    }

    func testKill9ThenRestartFinalizesTheRecordingOnPostgreSQL() throws {
        try run("daemon_tests.py", "kill9_restart_finalizes_recording", tools: ["aws", "ffprobe", "ffmpeg", "python3"],
                rows: "SELECT count(*) FROM composition WHERE state = 'FAILED'")
    }

    func testLiveStageParticipantsOnPostgreSQL() throws {
        try run("live_tests.py", "three_publishers_compose_and_stop", tools: ["aws", "ffprobe", "ffmpeg", "python3"],
                rows: "SELECT count(*) FROM participant_event")
    }

    func testIndividualRecordingSurvivesKill9OnPostgreSQL() throws {
        try run("live_tests.py", "individual_recording_survives_kill9", tools: ["aws", "ffprobe", "ffmpeg", "python3"],
                rows: "SELECT count(*) FROM participant WHERE document LIKE '%recordingPrefix%'")
    }

    func testOneNodePerDatabaseLeaseAndFencing() throws {
        try run("daemon_tests.py", "postgres_one_node_lease_and_fencing", tools: ["python3"],
                rows: "SELECT count(*) FROM schema_migration")
    }
}
