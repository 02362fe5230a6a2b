// The daemon's log lines: millisecond timestamps, and the JSON format one object a line.
import Foundation
import Logging
@testable import Server
import Testing

@Suite struct DaemonLogHandlerTests {
    let time = Date(timeIntervalSince1970: 1_795_819_097.123_9)

    @Test func timestampsCarryMilliseconds() {
        #expect(DaemonLogHandler.timestamp(time) == "2026-11-27T22:38:17.123Z")
        let line = DaemonLogHandler.line(format: .text, time: time, level: .warning, label: "stage-compositor",
                                         message: "configuration: x", metadata: ["b": "2", "a": "1"], source: "Server")
        #expect(line == "2026-11-27T22:38:17.123Z warning stage-compositor: a=1 b=2 [Server] configuration: x\n")
    }

    @Test func jsonIsOneParsableObjectALine() throws {
        let line = DaemonLogHandler.line(format: .json, time: time, level: .notice, label: "stage-compositor",
                                         message: "ingest refused:\n\"bad key\"\u{1}",
                                         metadata: ["composition.id": "abc", "counts": ["frames": "10"], "tags": ["x", "y"]],
                                         source: "Server")
        #expect(line.hasSuffix("}\n") && line.dropLast().contains("\n") == false)
        #expect(line.hasPrefix(#"{"time":"2026-11-27T22:38:17.123Z","level":"notice","logger":"stage-compositor","source":"Server","#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["message"] as? String == "ingest refused:\n\"bad key\"\u{1}")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["composition.id"] as? String == "abc")
        #expect((metadata["counts"] as? [String: Any])?["frames"] as? String == "10")
        #expect(metadata["tags"] as? [String] == ["x", "y"])
    }

    @Test func theHandlerMergesItsMetadataAndWritesWholeLines() {
        let lines = LockedLines()
        var logger = Logger(label: "stage-compositor") { label in
            DaemonLogHandler(label: label, format: .json, write: { lines.append($0) })
        }
        logger[metadataKey: "node"] = "n1"
        logger.info("started", metadata: ["listen": "127.0.0.1:8086"])
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.contains(#""metadata":{"listen":"127.0.0.1:8086","node":"n1"}"#) == true, "\(lines.all)")
    }

    @Test func logFormatIsChecked() {
        var configuration = ServerConfiguration(stateDirectory: "/tmp/x")
        #expect(configuration.validate() == [])
        configuration.logFormat = "xml"
        #expect(configuration.validate() == [#"logFormat: "text" or "json""#])
    }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
