// What one HTTP client may hold of the API listener: a place among capped connections (in
// all and per address, taken before the first byte is read), headers of bounded size, an
// idle connection closed after a while, and a body that must arrive within a deadline
// (a slow POST trickling a byte at a time holds nothing for long).
import Foundation
import Hummingbird
import HummingbirdCore
import IngestServer
import NIOCore

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

enum HTTPLimits {
    /// How long a request body may take to arrive.
    static let bodyDeadline: Duration = .seconds(10)

    /// The HTTP/1 server: capped connections, bounded headers, idle connections closed.
    static func server(limiter: ConnectionLimiter, idleTimeout: TimeAmount) -> HTTPServerBuilder {
        .http1(configuration: HTTP1Channel.Configuration(
            additionalChannelHandlers: [HTTPConnectionCapHandler(limiter: limiter)],
            idleTimeout: idleTimeout,
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 << 10, maxHeaderListSize: 64 << 10, maxHeaderFieldCount: 100)))
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
