// HTTPS between the nodes of a fleet: the API served over TLS (`listen.tls`) answers a node
// that trusts the fleet's authority (`database.fleet.caFile`), and a client that trusts only
// the system's authorities refuses the certificate: calls between nodes are verified, not
// merely encrypted. In process, on loopback, with a CA and a node certificate made by openssl.
import APIModels
import AsyncHTTPClient
import Foundation
import Hummingbird
import IngestServer
import Logging
import NIOCore
import Prometheus
@testable import Server
import Synchronization
import Testing

@Suite struct FleetTLSTests {
    struct DenyAll: RequestAuthenticator {
        func authenticate(_ request: AuthenticationRequest) async -> APIError? { .accessDenied("SigV4 required") }
    }

    static func openssl(_ arguments: [String], in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " "))")
    }

    /// A fleet authority and a node certificate for 127.0.0.1 it signs.
    static func certificates(in directory: URL) throws {
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + curve + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=fleet test authority"],
                    in: directory)
        try openssl(["req"] + curve + ["-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=node-a"], in: directory)
        try "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(to: directory.appendingPathComponent("node.ext"), atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "node.pem",
                     "-days", "2", "-extfile", "node.ext"], in: directory)
    }

    @Test("the API over TLS answers a node trusting the fleet's authority; an unverified certificate is refused")
    func verifiedBetweenNodes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.certificates(in: directory)

        var listen = ServerConfiguration.Listen(host: "127.0.0.1", port: 0)
        listen.tls = .init(certificateFile: directory.appendingPathComponent("node.pem").path,
                           privateKeyFile: directory.appendingPathComponent("node.key").path)
        let responder = APIRoutes(
            maxBodyBytes: 4096, authenticator: DenyAll(), registry: PrometheusCollectorRegistry(),
            metrics: ServerMetrics(factory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry())),
            logger: Logger(label: "fleet-tls"), operation: { _, _, _, _ throws(APIError) in Data("{}".utf8) })
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = Application(router: responder.buildRouter(), server: try apiServer(listen: listen, limiter: ConnectionLimiter(limits: .init())),
                              configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) })
        let running = Task { try await app.runService(gracefulShutdownSignals: []) }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let url = "https://127.0.0.1:\(port)/healthz"

        // Every client is shut down whatever happens (AsyncHTTPClient traps on one that is not).
        let node = try makeNodeClient(caFile: directory.appendingPathComponent("ca.pem").path)
        let stranger = HTTPClient(eventLoopGroupProvider: .singleton), plain = HTTPClient(eventLoopGroupProvider: .singleton)
        var outcomes: [String] = []
        do {
            let answer = try await node.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
            outcomes.append("node \(answer.status.code)")
        } catch {
            outcomes.append("node failed: \(error)")
        }
        // The system's authorities do not know the fleet's: the handshake fails. (AsyncHTTPClient
        // retries a failed connection until the deadline, then reports why.)
        do {
            _ = try await stranger.execute(HTTPClientRequest(url: url), timeout: .seconds(3))
            outcomes.append("stranger answered")
        } catch {
            // Said as a certificate failure; on a machine loaded enough for the deadline to pass
            // first, as the deadline (the node above was answered by the same server).
            let said = "\(error)"
            outcomes.append(["certificate", "handshake", "deadline"].contains(where: said.contains) ? "stranger refused" : "stranger: \(said)")
        }
        // Plain HTTP to the TLS listener gets no answer either.
        do {
            _ = try await plain.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(2))
            outcomes.append("plain answered")
        } catch {
            outcomes.append("plain failed")
        }
        for client in [node, stranger, plain] { try? await client.shutdown() }
        #expect(outcomes == ["node 200", "stranger refused", "plain failed"])
    }
}
