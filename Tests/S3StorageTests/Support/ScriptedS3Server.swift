// A loopback HTTP/1.1 server (SwiftNIO) standing in for a misbehaving S3 endpoint: the
// answer to the n-th request (1-based) is `script(n)`. Every request is recorded.
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

struct ScriptedReply: Sendable {
    var status: Int
    var body: String = ""

    static func s3Error(_ status: Int, code: String, message: String) -> ScriptedReply {
        ScriptedReply(status: status, body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      + "<Error><Code>\(code)</Code><Message>\(message)</Message><RequestId>1</RequestId></Error>")
    }
}

struct ReceivedRequest: Sendable {
    var method: String
    var uri: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
}

final class ScriptedS3Server: Sendable {
    private let channel: any Channel
    private let recorder: Recorder
    let port: Int

    init(script: @escaping @Sendable (Int) -> ScriptedReply) async throws {
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

    var endpoint: String { "http://127.0.0.1:\(port)" }
    var received: [ReceivedRequest] { recorder.requests.withLock { $0 } }

    func close() async throws { try await channel.close() }

    final class Recorder: Sendable {
        let script: @Sendable (Int) -> ScriptedReply
        let requests = Mutex<[ReceivedRequest]>([])
        init(script: @escaping @Sendable (Int) -> ScriptedReply) { self.script = script }

        func record(_ request: ReceivedRequest) -> ScriptedReply {
            let count = requests.withLock { list in
                list.append(request)
                return list.count
            }
            return script(count)
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
                let reply = recorder.record(ReceivedRequest(
                    method: "\(head.method.rawValue)", uri: head.uri,
                    headers: head.headers.map { (name: $0.name, value: $0.value) },
                    body: Array(body.readableBytesView)))
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: "\(reply.body.utf8.count)")
                if !reply.body.isEmpty { headers.add(name: "Content-Type", value: "application/xml") }
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
