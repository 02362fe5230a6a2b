// Conformance with botocore's ivs-realtime model: every operation of the model, driven through
// boto3 against the real daemon with inputs generated from its shapes (valid, maximal, every enum
// value, and about a thousand invalid ones), round trips, pagination, tags and SigV4, ending in a
// gap report that names what a botocore update added and the daemon lacks, through
// scripts/daemon-tests/conformance_tests.py.
import Foundation
import XCTest

final class ConformanceDaemonTests: XCTestCase {
    func testEveryOperationOfTheBotocoreModelConforms() throws {
        let output = try DaemonProcessTests.runDaemonScript("conformance_tests.py", "model_conformance", tools: ["python3", "ffmpeg"])
        // The counts and the gap report go to the suite's output.
        for line in output.split(separator: "\n") where line.hasPrefix("counts:") || line.hasPrefix("gap report:") {
            print("model_conformance: \(line)")
        }
    }
}
