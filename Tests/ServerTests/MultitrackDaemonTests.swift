// E-RTMP v2 multitrack video ingest against the real daemon: scripts/daemon-tests/ertmp_multitrack.py
// (a raw RTMP publisher sending one source as 1280x720 blue, 640x360 yellow and 320x180 magenta
// tracks, in OneTrack and ManyTracks messages) publishes twelve participants from one process,
// through scripts/daemon-tests/multitrack_tests.py; the composite recording is decoded with
// ffmpeg to see which track each tile shows (the smallest that covers it; the largest with
// ingest.rtmp.multitrackFitsTiles off; the 640x360 one for two larger tiles), the daemon's CPU
// is compared between the two, and an individual participant recording is checked to be the
// largest track.
import Foundation
import XCTest

final class MultitrackDaemonTests: XCTestCase {
    func run(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript(
            "multitrack_tests.py", test, tools: ["python3", "ffmpeg", "ffprobe"], file: file, line: line)
        // The measured CPU and the tile colours go to the suite's output (the release notes quote them).
        for line in output.split(separator: "\n") where line.hasPrefix("multitrack") { print("\(test): \(line)") }
    }

    func testTwelvePublishersAreComposedFromTheSmallestTrackThatCoversTheirTile() throws {
        try run("multitrack_composes_from_the_smallest_track")
    }

    func testLargerTilesAreComposedFromALargerTrack() throws {
        try run("multitrack_larger_tiles_get_a_larger_track")
    }

    func testAnIndividualRecordingRecordsTheLargestTrack() throws {
        try run("multitrack_individual_recording_records_the_largest")
    }
}
