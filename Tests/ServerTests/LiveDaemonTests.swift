// Live stages end to end: the real daemon binary with real publishers (the ffmpeg CLI,
// GStreamer's rtmp2sink, hand-made hostile RTMP clients), driven by the AWS CLI and boto3
// through scripts/daemon-tests/live_tests.py, the output read back from nginx-rtmp and the
// HLS recording and measured with ffmpeg. Each test starts and stops its own daemon.
import Foundation
import XCTest

final class LiveDaemonTests: XCTestCase {
    func run(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript(
            "live_tests.py", test, tools: ["aws", "ffmpeg", "ffprobe", "gst-launch-1.0", "python3", "nginx"], file: file, line: line)
        // Figures the tests measure (A/V offsets, time to LEFT, lagged frames and dropped packets
        // under load) and the generated sequences with their seeds go to the suite's output.
        for line in output.split(separator: "\n")
        where line.hasPrefix("A/V offset") || line.hasPrefix("published ") || line.hasPrefix("replication:") || line.hasPrefix("replica ") || line.hasPrefix("after kill -9") || line.hasPrefix("WHIP AUDIO_VIDEO") || line.hasPrefix("killed publisher") || line.hasPrefix("overload:") || line.hasPrefix("seek")
            || (line.hasPrefix("seed ") && line.contains(" sequence: ")) {
            print("\(test): \(line)")
        }
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

// Issue 22: every publisher stays on screen, whatever the others do.
extension LiveDaemonTests {
    func testMiddleJoinerUnpublishesAndTheLaterJoinerStays() throws { try run("middle_joiner_unpublishes") }
    func testMiddleJoinerIsKilledAndTheLaterJoinerStays() throws { try run("middle_joiner_is_killed") }
    func testIndividualRecordingOfAnRTMPPublisherThatReconnects() throws { try run("individual_recording_rtmp_reconnect") }
    func testIndividualRecordingOfWHIPPublishersAndMediaTypes() throws { try run("individual_recording_whip_and_media_types") }
    func testIndividualRecordingIsFinalizedAfterKill9() throws { try run("individual_recording_survives_kill9") }
    func testParticipantReplicationComposesTheReplicaOnTheDestination() throws { try run("participant_replication") }
    func testReplicaReconnectsAndIsRecordedOnTheDestination() throws { try run("replica_reconnects_and_is_recorded_on_the_destination") }
    /// Seeded join/unpublish/kill/rejoin sequences (ffmpeg RTMP and aiortc WHIP publishers)
    /// against the model of the stage; STAGE_SEQUENCE_SEED=N runs seed N alone.
    func testGeneratedJoinLeaveSequencesFollowTheModel() throws { try run("generated_join_leave_sequences") }
    func testSevenPublishersUnderLoadEachKeepTheirTile() throws { try run("seven_publishers_under_load") }
}
