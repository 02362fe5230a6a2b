import EventSinks
import Events
import Foundation
import Synchronization
import Testing

@Suite("File, stdout and fan-out sinks")
struct LocalSinkTests {
    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("events-\(UUID().uuidString).jsonl").path
    }

    @Test("concurrent publishers produce one valid JSON object per line")
    func fileSinkConcurrent() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = JSONLinesFileEventSink(path: path, logger: quietLogger)
        await withTaskGroup(of: Void.self) { group in
            for number in 0..<64 {
                group.addTask { await sink.publish(sampleEvent(number)) }
            }
        }
        // A second sink (a restart) appends after the first one's lines.
        let again = JSONLinesFileEventSink(path: path, logger: quietLogger)
        await again.publish(sampleEvent(64, name: "Session End"))
        await sink.close()
        await again.close()

        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasSuffix("\n"))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 65)
        var ids: Set<String> = []
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["detail-type"] as? String == "IVS Composition State Change")
            ids.insert(try #require(object["id"] as? String))
        }
        #expect(ids == Set((0...64).map { sampleEvent($0).id }))
        #expect(lines.last.map(String.init) == sampleEvent(64, name: "Session End").jsonLine)
        #expect(await sink.writtenLines == 64)
        #expect(await sink.failedWrites == 0)
    }

    @Test("an unwritable path counts the failure and does not crash")
    func fileSinkUnwritable() async {
        let sink = JSONLinesFileEventSink(path: "/nonexistent-dir-\(UUID().uuidString)/events.jsonl",
                                          logger: quietLogger)
        await sink.publish(sampleEvent(1))
        await sink.publish(sampleEvent(2))
        #expect(await sink.failedWrites == 2)
        #expect(await sink.writtenLines == 0)
    }

    @Test("stdout sink writes the event's JSON line")
    func standardOutput() async {
        let lines = Mutex<[String]>([])
        let sink = StandardOutputEventSink(writeLine: { line in lines.withLock { $0.append(line) } })
        await sink.publish(sampleEvent(7))
        #expect(lines.withLock { $0 } == [sampleEvent(7).jsonLine + "\n"])
    }

    @Test("fan-out reaches every sink")
    func fanOut() async {
        let first = Mutex<[String]>([]), second = Mutex<[String]>([])
        let sink = FanOutEventSink([
            StandardOutputEventSink(writeLine: { line in first.withLock { $0.append(line) } }),
            StandardOutputEventSink(writeLine: { line in second.withLock { $0.append(line) } }),
        ])
        await sink.publish(sampleEvent(1))
        await sink.publish(sampleEvent(2))
        #expect(first.withLock { $0 }.count == 2)
        #expect(second.withLock { $0 } == [sampleEvent(1).jsonLine + "\n", sampleEvent(2).jsonLine + "\n"])
    }
}

@Suite("Webhook backoff")
struct WebhookBackoffTests {
    @Test("linear and exponential delays are capped")
    func delays() {
        let linear = WebhookBackoff.linear(step: .milliseconds(100), maximum: .milliseconds(250))
        #expect((1...4).map(linear.delay(afterAttempt:))
            == [.milliseconds(100), .milliseconds(200), .milliseconds(250), .milliseconds(250)])
        let exponential = WebhookBackoff.exponential(initial: .milliseconds(100), maximum: .seconds(1))
        #expect((1...6).map(exponential.delay(afterAttempt:))
            == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        #expect(exponential.delay(afterAttempt: 500) == .seconds(1))
    }
}

@Suite("Configured sinks")
struct ConfiguredEventSinksTests {
    @Test("file and webhook configured: both reached through the fan-out")
    func fileAndWebhook() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cfg-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sinks = ConfiguredEventSinks(file: path, standardOutput: false,
                                         webhook: WebhookConfiguration(url: "http://127.0.0.1:1/none"),
                                         httpClient: .shared, logger: quietLogger)
        #expect(sinks.sink.sinks.count == 2)
        await sinks.sink.publish(sampleEvent(1))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == sampleEvent(1).jsonLine + "\n")
        let webhook = try #require(sinks.webhook)
        #expect(webhook.configuration.maxAttempts == 5)
        #expect(webhook.statistics == WebhookStatistics())  // queued, nothing delivered or dropped yet
    }

    @Test("nothing configured: an empty fan-out")
    func none() {
        let sinks = ConfiguredEventSinks(file: nil, standardOutput: false, webhook: nil, httpClient: .shared,
                                         logger: quietLogger)
        #expect(sinks.sink.sinks.isEmpty)
        #expect(sinks.webhook == nil && sinks.file == nil)
    }
}
