import Events
import Foundation
import Logging
import HTTPTestSupport

let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

func sampleEvent(_ number: Int, name: String = "Session Start") -> CompositionStateChangeEvent {
    CompositionStateChangeEvent(
        id: String(format: "00000000-0000-4000-8000-%012d", number), account: "123456789012",
        time: "2026-11-22T05:12:19Z", region: "us-east-1",
        resources: ["arn:aws:ivs:us-east-1:123456789012:composition/AbCdEfGhIjKl"],
        detail: .init(eventName: name, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdEfGhIjKl"))
}

/// Polls `condition` every 10 ms until it holds, giving up after `timeout` worth of polls.
/// The bound counts polls, not wall time: on a loaded 2-core machine the whole concurrency
/// pool can be busy with other tests for tens of seconds, and a wall-clock deadline would
/// expire while neither this test nor the code it waits for could run. A passing test
/// returns as soon as the condition holds; a broken one still fails.
func eventually(within timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    let polls = Int(timeout / .milliseconds(10))
    for _ in 0..<polls {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

/// The webhook receiver: a scripted loopback server whose answer to the n-th request
/// (1-based) is `policy(n)`, a status code, or nil to never answer.
func webhookServer(policy: @escaping @Sendable (Int) -> Int?) async throws -> ScriptedHTTPServer {
    try await ScriptedHTTPServer { policy($0).map { ScriptedHTTPReply(status: $0) } }
}

extension ScriptedHTTPServer {
    var url: String { endpoint + "/events" }
}
