import Events
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

func sampleEvent(_ number: Int, name: String = "Session Start") -> CompositionStateChangeEvent {
    CompositionStateChangeEvent(
        id: String(format: "00000000-0000-4000-8000-%012d", number), account: "123456789012",
        time: "2026-11-22T05:12:19Z", region: "us-east-1",
        resources: ["arn:aws:ivs:us-east-1:123456789012:composition/AbCdEfGhIjKl"],
        detail: .init(eventName: name, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdEfGhIjKl"))
}

/// Polls `condition` until it holds or `timeout` passes (generous: the whole suite shares
/// two cores; a passing test returns as soon as the condition holds).
func eventually(within timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

/// A request the loopback server received.
struct ReceivedRequest: Sendable {
    var method: String
    var uri: String
    var contentType: String?
    var body: String
    /// The status answered, nil when the server let it hang.
    var status: Int?
}

/// A loopback HTTP/1.1 server (SwiftNIO) whose answer to the n-th request (1-based) is
/// `policy(n)`: a status code, or nil to never answer.
final class LoopbackWebhookServer: Sendable {
    private let channel: any Channel
    let port: Int

    init(policy: @escaping @Sendable (Int) -> Int?) async throws {
        let recorder = Recorder(policy: policy)
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(recorder: recorder))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress!.port!
        self.recorder = recorder
    }

    private let recorder: Recorder

    var url: String { "http://127.0.0.1:\(port)/events" }
    var received: [ReceivedRequest] { recorder.requests.withLock { $0 } }

    func close() async throws {
        try await channel.close()
    }

    final class Recorder: Sendable {
        let policy: @Sendable (Int) -> Int?
        let requests = Mutex<[ReceivedRequest]>([])
        init(policy: @escaping @Sendable (Int) -> Int?) { self.policy = policy }

        /// Records the request and returns the status to answer (nil: never answer).
        func record(_ request: ReceivedRequest) -> Int? {
            requests.withLock { list in
                var request = request
                request.status = policy(list.count + 1)
                list.append(request)
                return request.status
            }
        }
    }

    final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let recorder: Recorder
        var head: HTTPRequestHead?
        var body = ByteBuffer()

        init(recorder: Recorder) { self.recorder = recorder }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body.clear()
            case .body(var chunk):
                body.writeBuffer(&chunk)
            case .end:
                guard let head else { return }
                let request = ReceivedRequest(method: "\(head.method)", uri: head.uri,
                                              contentType: head.headers.first(name: "content-type"),
                                              body: String(buffer: body), status: nil)
                guard let status = recorder.record(request) else { return }
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: "0")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(
                    version: head.version, status: HTTPResponseStatus(statusCode: status), headers: headers))),
                    promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}

/// A port on loopback that nothing listens on (bound, then closed).
func refusedPort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress!.port!
    try await channel.close()
    return port
}
