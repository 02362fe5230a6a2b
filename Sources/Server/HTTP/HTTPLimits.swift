// What one HTTP client may hold of the API listener: a place among capped connections (in
// all and per address, taken before the first byte is read), headers of bounded size, an
// idle connection closed after a while, and a body that must arrive within a deadline
// (a slow POST trickling a byte at a time holds nothing for long).
import Foundation
import Hummingbird
import HummingbirdCore
import APIModels
import HTTPTypes
import IngestServer
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Takes a place in the limiter when the connection opens and gives it back when it closes;
/// a connection over the limit is closed at once.
final class HTTPConnectionCapHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let limiter: ConnectionLimiter
    private var address: String?

    init(limiter: ConnectionLimiter) {
        self.limiter = limiter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let address = context.channel.remoteAddress?.ipAddress ?? "?"
        guard limiter.acquire(address) else {
            context.close(promise: nil)
            return
        }
        self.address = address
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    private func release() {
        guard let address else { return }
        self.address = nil
        limiter.release(address)
    }
}

/// A request NIO's parser cannot read (a request line or header field over the limits, bad
/// syntax) is answered by Hummingbird with 400 and an empty body; this gives that answer IVS's
/// error shape, so the client learns why. Everything else passes untouched.
final class HTTPParseErrorAnswerHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    private let limits: String
    private var refusal: APIError?
    private var body: ByteBuffer?

    /// `limits`: what the parser allows, for the message.
    init(limits: String) {
        self.limits = limits
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parseError = error as? HTTPParserError {
            refusal = switch parseError {
            case .headerOverflow: .validation("the request line or a header field is too long (\(limits))")
            default: .validation("the request is not valid HTTP/1.1 (\(parseError))")
            }
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard let refusal else { return context.write(data, promise: promise) }
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status == .badRequest && body == nil:
            let rendered = refusal.response
            let buffer = ByteBuffer(string: rendered.body)
            for (name, value) in rendered.headers {
                if let field = HTTPField.Name(name) { head.headerFields[field] = value }
            }
            head.headerFields[.contentLength] = "\(buffer.readableBytes)"
            head.headerFields[RequestIdMiddleware.header] = RequestIdMiddleware.newId()
            for (name, value) in RequestIdMiddleware.securityHeaders { head.headerFields[name] = value }
            body = buffer
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end(let trailers) where body != nil:
            context.write(wrapOutboundOut(.body(body!)), promise: nil)
            self.refusal = nil
            body = nil
            context.write(wrapOutboundOut(.end(trailers)), promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }
}

enum HTTPLimits {
    /// The parser's limits: a request line or header field, all header fields, their count.
    static let maxHeaderFieldBytes = 16 << 10, maxHeaderListBytes = 64 << 10, maxHeaderFieldCount = 100

    /// How long a request body may take to arrive.
    static let bodyDeadline: Duration = .seconds(10)

    /// The HTTP/1 server: capped connections, bounded headers, idle connections closed.
    static func server(limiter: ConnectionLimiter, idleTimeout: TimeAmount) -> HTTPServerBuilder {
        .http1(configuration: HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                HTTPConnectionCapHandler(limiter: limiter),
                HTTPParseErrorAnswerHandler(limits: "at most \(maxHeaderFieldBytes) bytes each, \(maxHeaderListBytes) in all")],
            idleTimeout: idleTimeout,
            httpDecoderConfiguration: .init(maxHeaderFieldSize: maxHeaderFieldBytes, maxHeaderListSize: maxHeaderListBytes,
                                            maxHeaderFieldCount: maxHeaderFieldCount)))
    }

    enum BodyFailure: Error { case tooLarge, tooSlow }

    /// The whole body, at most `limit` bytes, within `bodyDeadline`.
    static func collect(_ request: Request, upTo limit: Int) async throws(BodyFailure) -> ByteBuffer {
        let result: Result<ByteBuffer, BodyFailure> = await withTaskGroup(of: Result<ByteBuffer, BodyFailure>?.self) { group in
            group.addTask { [request] in
                var request = request
                do { return .success(try await request.collectBody(upTo: limit)) } catch { return .failure(.tooLarge) }
            }
            group.addTask {
                try? await Task.sleep(for: bodyDeadline)
                return Task.isCancelled ? nil : .failure(.tooSlow)
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .failure(.tooSlow)
        }
        return try result.get()
    }
}
