// A loopback HTTP/1.1 server (SwiftNIO) for tests that need a misbehaving peer (webhook
// receivers, S3 endpoints): its answer to the n-th request (1-based) is `script(n)`, or no
// answer at all when the script says nil. Every request is recorded with the status answered.
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

public struct ScriptedHTTPReply: Sendable {
    public var status: Int
    public var body: String
    public var contentType: String?
    public init(status: Int, body: String = "", contentType: String? = nil) {
        self.status = status
        self.body = body
        self.contentType = contentType
    }
}

public struct ScriptedHTTPRequest: Sendable {
    public var method: String
    public var uri: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The status answered; nil when the server let the request hang.
    public var status: Int?

    public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    public var contentType: String? { header("content-type") }
    public var text: String { String(decoding: body, as: UTF8.self) }
}

public final class ScriptedHTTPServer: Sendable {
    private let channel: any Channel
    private let recorder: Recorder
    public let port: Int

    public init(script: @escaping @Sendable (Int) -> ScriptedHTTPReply?) async throws {
        let recorder = Recorder(script: script)
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

    public var endpoint: String { "http://127.0.0.1:\(port)" }
    public var received: [ScriptedHTTPRequest] { recorder.requests.withLock { $0 } }

    public func close() async throws { try await channel.close() }

    /// A port on loopback that nothing listens on (bound, then closed).
    public static func refusedPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress!.port!
        try await channel.close()
        return port
    }

    final class Recorder: Sendable {
        let script: @Sendable (Int) -> ScriptedHTTPReply?
        let requests = Mutex<[ScriptedHTTPRequest]>([])
        init(script: @escaping @Sendable (Int) -> ScriptedHTTPReply?) { self.script = script }

        /// Records the request and returns the reply (nil: never answer).
        func record(_ request: ScriptedHTTPRequest) -> ScriptedHTTPReply? {
            requests.withLock { list in
                let reply = script(list.count + 1)
                var request = request
                request.status = reply?.status
                list.append(request)
                return reply
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
                guard let reply = recorder.record(ScriptedHTTPRequest(
                    method: head.method.rawValue, uri: head.uri, headers: head.headers.map { (name: $0.name, value: $0.value) },
                    body: Array(body.readableBytesView), status: nil)) else { return }
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: "\(reply.body.utf8.count)")
                if let type = reply.contentType { headers.add(name: "Content-Type", value: type) }
                context.write(wrapOutboundOut(.head(HTTPResponseHead(
                    version: head.version, status: HTTPResponseStatus(statusCode: reply.status), headers: headers))),
                    promise: nil)
                if head.method != .HEAD && !reply.body.isEmpty {
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: reply.body)))), promise: nil)
                }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
