// Recording to S3 through a storage outage, end to end: the real daemon records a live ffmpeg
// publisher to a bucket on a local moto_server through a fault proxy that refuses or
// blackholes connections for 60 s (scripts/daemon-tests/s3_tests.py). What lands in the
// bucket is listed with the AWS CLI and measured with ffprobe/ffmpeg.
import Foundation
import XCTest

final class S3DaemonTests: XCTestCase {
    func run(_ test: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try DaemonProcessTests.runDaemonScript(
            "s3_tests.py", test, tools: ["aws", "ffmpeg", "ffprobe", "python3", "moto_server"], file: file, line: line)
        // What the tests measured (spool size, recording length) goes to the suite's output.
        for line in output.split(separator: "\n") where line.hasPrefix("outage:") || line.hasPrefix("kill -9") || line.hasPrefix("individual recording") {
            print("\(test): \(line)")
        }
    }

    func testAnOutageMidRecordingDelaysTheUploadButLosesNothing() throws { try run("outage_delays_but_loses_nothing") }
    func testKill9DuringAnOutageUploadsTheSpoolAfterRestart() throws { try run("kill9_during_outage_uploads_the_spool_after_restart") }
    func testIndividualRecordingThroughAnOutageIsWhole() throws { try run("individual_recording_through_an_outage") }
}
