// The metrics the router test cannot make appear (per composition, per WHIP participant) are
// documented too; /proc/self is parsed right.
import LiveStage
import Pipeline
import Prometheus
@testable import Server
import XCTest

final class ServerMetricsTests: XCTestCase {
    func testEveryMetricFamilyHasHelpAndType() {
        let registry = PrometheusCollectorRegistry()
        let metrics = ServerMetrics(factory: DocumentedPrometheusFactory(registry: registry, help: ServerMetrics.help))
        metrics.recordConnections(listener: "api", open: 1, refused: 0)
        metrics.recordWHIP(participantId: "p1", values: Dictionary(uniqueKeysWithValues: ServerMetrics.whipGaugeNames.map { ($0, 1) }))
        metrics.apiRequest(operation: "ListStages", status: 200)
        metrics.frameWorkTime.recordNanoseconds(1_000_000)
        let composition = metrics.composition("c1")
        composition.record(laggedFrames: 1)
        composition.record(delivery: [LiveDelivery(participantId: "p1", droppedPackets: 1, lateVideoFrames: 1, audioGapSeconds: 0,
                                                   allowance: LiveAllowance(latency: 0, steps: 0, steppedUp: 0))])
        if let stats = ProcessStats.read() { metrics.recordProcess(stats) }
        metrics.recordFleet(leaseAgeSeconds: 0.25, eventsNotAppended: 2, eventsNotDelivered: 7)
        metrics.fleetDatabaseError(operation: "renew")
        let text = registry.emitToString()
        XCTAssertEqual(ControlPlaneRouterTests.undocumentedMetrics(in: text), [], text)
        XCTAssertTrue(text.contains("stage_compositor_fleet_lease_age_seconds 0.25\n"), text)
        XCTAssertTrue(text.contains("stage_compositor_fleet_outbox_backlog{stage=\"not_delivered\"} 7"), text)
        XCTAssertTrue(text.contains("stage_compositor_fleet_database_errors_total{operation=\"renew\"} 1"), text)
        XCTAssertTrue(text.contains("stage_compositor_whip_packets_received{participant_id=\"p1\"}"), text)
        XCTAssertTrue(text.contains("stage_compositor_composition_dropped_packets{composition_id=\"c1\",participant_id=\"p1\"}"), text)
        XCTAssertTrue(text.contains("# TYPE stage_compositor_frame_encode_seconds histogram\n"), text)
    }

    func testProcessStatsFromProc() throws {
        // The command name may hold spaces and parentheses; utime 250 and stime 150 ticks.
        let stat = "4242 (stage (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0 123 456 789"
        let stats = try XCTUnwrap(ProcessStats.parse(stat: stat, statm: "5000 1200 300 10 0 900 0\n", openFileDescriptors: 12,
                                                     ticksPerSecond: 100, pageSize: 4096))
        XCTAssertEqual(stats, ProcessStats(cpuSeconds: 4, residentMemoryBytes: 1200 * 4096, openFileDescriptors: 12))
        XCTAssertNil(ProcessStats.parse(stat: "garbage", statm: "1 2", openFileDescriptors: 0, ticksPerSecond: 100, pageSize: 4096))
    }

    func testCPUCounterFollowsTheProcess() {
        let registry = PrometheusCollectorRegistry()
        let metrics = ServerMetrics(factory: DocumentedPrometheusFactory(registry: registry, help: ServerMetrics.help))
        metrics.recordProcess(ProcessStats(cpuSeconds: 1.5, residentMemoryBytes: 1, openFileDescriptors: 1))
        metrics.recordProcess(ProcessStats(cpuSeconds: 2.25, residentMemoryBytes: 1, openFileDescriptors: 1))
        XCTAssertTrue(registry.emitToString().contains("process_cpu_seconds_total 2.25\n"), registry.emitToString())
    }
}

/// The one line a composition's end is logged with (#41): where the recording is, how long it
/// ran, the frames made and repeated, and the outputs that failed.
final class CompositionEndLogTests: XCTestCase {
    func testTheEndLineNamesTheRecordingTheDurationAndTheFrames() {
        let result = CompositionResult(frames: 1_800, audioSamples: 2_880_000, duration: .microseconds(60_033_333), layoutChanges: 3,
                                       laggedFrames: 4, tilesScaled: 0, tilesReused: 0,
                                       failedSinks: ["channel destination d2": "connection refused"])
        let metadata = ThreadedPipelineLauncher.endMetadata(result, recordingPrefix: "STAGE/COMP/DEST/composite")
        XCTAssertEqual(metadata["recording.prefix"], "STAGE/COMP/DEST/composite")
        XCTAssertEqual(metadata["duration_s"], "60.033")
        XCTAssertEqual(metadata["frames"], "1800")
        XCTAssertEqual(metadata["frames.lagged"], "4")
        XCTAssertEqual(metadata["outputs.failed"], "channel destination d2")
        XCTAssertNil(ThreadedPipelineLauncher.endMetadata(result, recordingPrefix: nil)["recording.prefix"])
    }
}
