// Failure handling against scripted loopback servers: SlowDown and 5xx are retried with
// backoff up to maxAttempts, 4xx never, and invalid keys never reach the network.
import AsyncHTTPClient
import Auth
import Foundation
import Storage
import Testing

@Suite struct S3RetryTests {
    func storage(_ server: ScriptedS3Server, maxAttempts: Int = 5) -> S3Storage {
        S3Storage(configuration: S3StorageConfiguration(
            endpoint: URL(string: server.endpoint)!, bucket: "media", region: "us-east-1",
            accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", maxAttempts: maxAttempts,
            baseRetryDelay: .milliseconds(20), maximumRetryDelay: .milliseconds(100)),
            httpClient: MotoServer.httpClient)
    }

    @Test func slowDownTwiceThenSuccess() async throws {
        let server = try await ScriptedS3Server { attempt in
            attempt <= 2 ? .s3Error(503, code: "SlowDown", message: "Please reduce your request rate.") : ScriptedReply(status: 200)
        }
        defer { Task { try await server.close() } }
        let payload = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        try await storage(server).put(payload, key: "a/seg1.ts")
        let received = server.received
        #expect(received.count == 3)
        for request in received {
            #expect(request.method == "PUT")
            #expect(request.uri == "/media/a/seg1.ts")
            #expect(request.body == Array(payload))
            #expect(request.header("x-amz-content-sha256") == SigV4Canonical.sha256Hex(Array(payload)))
            #expect(request.header("content-type") == "video/mp2t")
            #expect(request.header("authorization")?.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") == true)
        }
    }

    @Test func alwaysFailingServerGivesUpAfterMaxAttempts() async throws {
        let server = try await ScriptedS3Server { _ in .s3Error(500, code: "InternalError", message: "We encountered an internal error.") }
        defer { Task { try await server.close() } }
        let error = await #expect(throws: StorageError.self) {
            try await storage(server, maxAttempts: 3).put(text: "{}", key: "events/recording-started.json")
        }
        #expect(server.received.count == 3)
        guard case .ioFailure(let key, let message) = error else {
            Issue.record("expected ioFailure, got \(String(describing: error))")
            return
        }
        #expect(key == "events/recording-started.json")
        #expect(message.contains("InternalError") && message.contains("500"), "\(message)")
    }

    @Test func clientErrorsAreNotRetried() async throws {
        let server = try await ScriptedS3Server { _ in .s3Error(400, code: "InvalidArgument", message: "Bad header.") }
        defer { Task { try await server.close() } }
        let error = await #expect(throws: StorageError.self) { try await storage(server).put(text: "x", key: "a.m3u8") }
        #expect(server.received.count == 1)
        #expect(error?.description.contains("InvalidArgument: Bad header.") == true, "\(String(describing: error))")

        let forbidden = try await ScriptedS3Server { _ in .s3Error(403, code: "AccessDenied", message: "Access Denied") }
        defer { Task { try await forbidden.close() } }
        await #expect(throws: StorageError.accessDenied(key: "a.m3u8",
                                                        message: "GET s3://media/a.m3u8 refused (HTTP 403) AccessDenied: Access Denied")) {
            try await storage(forbidden).get(key: "a.m3u8")
        }
        #expect(forbidden.received.count == 1)
    }

    @Test func connectionFailuresAreRetriedThenReported() async throws {
        let port = try await freePort()
        let storage = S3Storage(configuration: S3StorageConfiguration(
            endpoint: URL(string: "http://127.0.0.1:\(port)")!, bucket: "media", region: "us-east-1",
            accessKeyId: "AKID", secretAccessKey: "secret", maxAttempts: 2, baseRetryDelay: .milliseconds(10),
            // AsyncHTTPClient keeps re-dialling a refused port until the request deadline.
            requestTimeout: .seconds(1)),
            httpClient: MotoServer.httpClient)
        let error = await #expect(throws: StorageError.self) { try await storage.put(text: "x", key: "k.json") }
        guard case .ioFailure(let key, let message) = error else {
            Issue.record("expected ioFailure, got \(String(describing: error))")
            return
        }
        #expect(key == "k.json")
        #expect(message.contains("after 2 attempts"), "\(message)")
    }

    @Test(arguments: ["", "/abs.ts", "a//b.ts", "a/../b.ts", "./a.ts", "a/", "a\\b.ts", "a\u{0}b", "tab\there"])
    func invalidKeysNeverReachTheServer(key: String) async throws {
        let server = try await ScriptedS3Server { _ in ScriptedReply(status: 200) }
        defer { Task { try await server.close() } }
        let storage = storage(server)
        for operation in 0..<2 {
            let error = await #expect(throws: StorageError.self) {
                if operation == 0 { try await storage.put(text: "x", key: key) } else { _ = try await storage.get(key: key) }
            }
            guard case .invalidKey(let reported, _) = error else {
                Issue.record("expected invalidKey, got \(String(describing: error))")
                continue
            }
            #expect(reported == key)
        }
        #expect(await storage.exists(key: key) == false)
        #expect(server.received.isEmpty)
    }
}
