// One moto_server per test process, on a free loopback port, with signature checking on:
// moto_setup.py creates an IAM user allowed s3:*, its key and the bucket, then turns
// authentication on. Stopped by PID when the test process exits.
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOPosix
import Storage
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct MotoServer: Sendable {
    var endpoint: URL
    var bucket: String
    var region: String
    var accessKeyId: String
    var secretAccessKey: String

    /// AsyncHTTPClient's process-wide client: lives as long as the test process.
    static var httpClient: HTTPClient { .shared }

    /// The shared server, started on first use.
    static func shared() async throws -> MotoServer { try await startOnce.value }
    /// A second server with signature checking off, for listing (see moto_setup.py).
    static func sharedOpen() async throws -> MotoServer { try await startOpenOnce.value }

    private static let startOnce = Task { try await start(checkingSignatures: true) }
    private static let startOpenOnce = Task { try await start(checkingSignatures: false) }

    /// A storage on the shared bucket, isolated from other tests by its key prefix.
    static func storage(prefix: String = "t-\(UUID().uuidString.prefix(8))", secret: String? = nil,
                        listPageSize: Int = 1000, open: Bool = false) async throws -> S3Storage {
        let server = open ? try await sharedOpen() : try await shared()
        let configuration = S3StorageConfiguration(
            endpoint: server.endpoint, bucket: server.bucket, region: server.region,
            accessKeyId: server.accessKeyId, secretAccessKey: secret ?? server.secretAccessKey,
            maxAttempts: 2, keyPrefix: prefix, baseRetryDelay: .milliseconds(10))
        return S3Storage(configuration: configuration, httpClient: httpClient, listPageSize: listPageSize)
    }

    private static func start(checkingSignatures: Bool) async throws -> MotoServer {
        let port = try await freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["moto_server", "-H", "127.0.0.1", "-p", "\(port)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // SIGKILL: a child started by Foundation's Process inherits blocked signals and may
        // ignore SIGTERM; moto holds nothing worth flushing.
        motoPIDs.withLock { $0.append(process.processIdentifier) }
        atexit { motoPIDs.withLock { $0.forEach { kill($0, SIGKILL) } } }

        let endpoint = URL(string: "http://127.0.0.1:\(port)")!
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            var probe = HTTPClientRequest(url: endpoint.absoluteString + "/moto-api/")
            probe.method = .GET
            if let response = try? await httpClient.execute(probe, timeout: .seconds(2)), response.status.code < 500 {
                break
            }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw ToolFailure(description: "moto_server did not answer on port \(port)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let bucket = "stage-compositor-tests", region = "us-east-1"
        let output = try await runTool(["python3", Paths.testsFolder.appendingPathComponent("moto_setup.py").path,
                                        endpoint.absoluteString, bucket, region,
                                        checkingSignatures ? "auth" : "open"])
        let credentials = try JSONDecoder().decode([String: String].self, from: output)
        return MotoServer(endpoint: endpoint, bucket: bucket, region: region,
                          accessKeyId: credentials["accessKeyId"] ?? "", secretAccessKey: credentials["secretAccessKey"] ?? "")
    }
}

private let motoPIDs = Mutex<[pid_t]>([])

/// A port nobody listens on right now (bound then released).
func freePort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress?.port ?? 0
    try await channel.close().get()
    return port
}
