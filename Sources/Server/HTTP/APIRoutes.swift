// The HTTP surface on Hummingbird's router: `GET /healthz`, `GET /metrics`, the console under
// `/console`, WHIP under `/whip`, and every control-plane operation at its model's route
// (POST /<Operation>, /tags/{resourceArn}). An operation passes, in order, through middleware
// that each does one thing and is tested alone: the API metrics, the body limit, the fleet
// signature, SigV4. Anything else is the IVS error for an unknown operation.
import Foundation
public import Hummingbird
import HTTPTypes
import Logging
public import NIOCore
import Prometheus
import APIModels
import Auth
import IngestServer

/// Hummingbird's basic context, the client's address (the WHIP per-address cap, logs), and
/// what the API middleware learnt of the request on its way in.
public struct ServerRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The operation the request's method and path name (set for API routes).
    var route: APIOperation.Route?
    /// The request body, collected once within the limit (`APIBodyLimitMiddleware`).
    var body = Data()
    /// Another node of the fleet sent it, signed with the fleet's secret.
    var forwarded = false
    /// This request's `x-amzn-RequestId` (`RequestIdMiddleware`), in its answer and its log lines.
    var requestId = ""

    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// What the HTTP surface needs; `buildRouter` puts it together.
public struct APIRoutes: Sendable {
    let maxBodyBytes: Int
    let authenticator: any RequestAuthenticator
    let registry: PrometheusCollectorRegistry
    let metrics: ServerMetrics
    let logger: Logger
    /// Runs an operation: route, raw query, body, and whether another node of the fleet sent it.
    let operation: @Sendable (APIOperation.Route, String, Data, Bool) async throws(APIError) -> Data
    /// WHIP (`/whip/...`): bearer tokens, not SigV4. Takes the client's IP address.
    var whip: (@Sendable (Request, String) async -> Response)?
    /// WHEP (`/whep/...`): bearer tokens or SigV4, checked by the endpoint. Takes the client's IP address.
    var whep: (@Sendable (Request, String) async -> Response)?
    /// WHIP sessions open and refused by its caps, for /metrics.
    var whipSessionCounts: (@Sendable () -> (open: Int, refused: Int64))?
    /// The fleet's shared secret: a call signed with it (FleetCallSignature) is another node
    /// forwarding an operation to this one, the stage's owner.
    var fleetSecret: String?
    /// Takes a fleet call's nonce until the given time (ms since 1970): false when it was
    /// taken already (a replay), or cannot be recorded. nil: nonces are not checked.
    var claimFleetNonce: (@Sendable (String, Int64) async -> Bool)?
    /// The wall clock a fleet call's time is checked against (ms since 1970).
    var nowMs: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
    /// `metrics.bearerToken`: /metrics then needs it (Prometheus `authorization: credentials`).
    var metricsBearerToken: String?
    /// The connection caps, by listener, counted into /metrics when it is read.
    var connectionLimiters: [(listener: String, limiter: ConnectionLimiter)] = []
    /// What else is read into the metrics when /metrics is served (a fleet node's lease and outbox).
    var onMetricsRead: [@Sendable () -> Void] = []

    init(maxBodyBytes: Int, authenticator: any RequestAuthenticator, registry: PrometheusCollectorRegistry, metrics: ServerMetrics,
         logger: Logger, operation: @escaping @Sendable (APIOperation.Route, String, Data, Bool) async throws(APIError) -> Data,
         whip: (@Sendable (Request, String) async -> Response)? = nil,
         whipSessionCounts: (@Sendable () -> (open: Int, refused: Int64))? = nil,
         whep: (@Sendable (Request, String) async -> Response)? = nil, fleetSecret: String? = nil,
         claimFleetNonce: (@Sendable (String, Int64) async -> Bool)? = nil, metricsBearerToken: String? = nil,
         connectionLimiters: [(listener: String, limiter: ConnectionLimiter)] = []) {
        self.maxBodyBytes = maxBodyBytes
        self.authenticator = authenticator
        self.registry = registry
        self.metrics = metrics
        self.logger = logger
        self.operation = operation
        self.whip = whip
        self.whipSessionCounts = whipSessionCounts
        self.whep = whep
        self.fleetSecret = fleetSecret
        self.claimFleetNonce = claimFleetNonce
        self.metricsBearerToken = metricsBearerToken
        self.connectionLimiters = connectionLimiters
    }

    public func buildRouter() -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        // Outermost, so every answer carries its request id (boto3's ResponseMetadata.RequestId).
        router.add(middleware: RequestIdMiddleware())
        // Next, so it also wraps the router's "not found": an unknown operation in IVS's words.
        router.add(middleware: UnknownOperationMiddleware(metrics: metrics))
        router.get("/healthz") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        router.get("/metrics") { request, _ in metricsResponse(request) }
        // The operator console: public static files, outside the API's middleware (no SigV4).
        ConsoleRoutes.add(to: router)
        // WHIP and WHEP: their own HTTP rules (bearer tokens, SDP bodies), outside the API's middleware.
        Self.mount("whip", on: router, whip, disabled: "WHIP publishing is disabled on this server (ingest.whip.enabled)")
        Self.mount("whep", on: router, whep, disabled: "WHEP playback is disabled on this server (it rides on ingest.whip.enabled)")
        let api = router.group()
            .add(middleware: APIMetricsMiddleware(metrics: metrics, logger: logger))
            .add(middleware: APIBodyLimitMiddleware(maxBodyBytes: maxBodyBytes))
            .add(middleware: FleetSignatureMiddleware(secret: fleetSecret, claimNonce: claimFleetNonce, nowMs: nowMs, logger: logger))
            .add(middleware: SigV4Middleware(authenticator: authenticator))
        let run = APIOperationResponder(operation: operation, logger: logger)
        for operation in APIOperation.allCases where !operation.requestURI.contains("{") {
            api.on(RouterPath(operation.requestURI), method: HTTPRequest.Method(operation.httpMethod.rawValue)!, responder: run)
        }
        for operation in [APIOperation.tagResource, .untagResource, .listTagsForResource] {
            api.on("/tags/**", method: HTTPRequest.Method(operation.httpMethod.rawValue)!, responder: run)
        }
        return router
    }

    /// Every method under `/<prefix>` to `handler` (with the client's IP address), or 404 saying why.
    private static func mount(_ prefix: String, on router: Router<ServerRequestContext>,
                              _ handler: (@Sendable (Request, String) async -> Response)?, disabled: String) {
        for method in [HTTPRequest.Method.get, .head, .post, .put, .delete, .patch, .options] {
            for path in ["/\(prefix)", "/\(prefix)/**"] {
                router.on(RouterPath(path), method: method) { request, context in
                    guard let handler else { return WHIPResponses.plain(.notFound, disabled) }
                    return await handler(request, context.remoteAddress?.ipAddress ?? "?")
                }
            }
        }
    }

    /// `/metrics`: the Prometheus text, with what is counted only when read.
    private func metricsResponse(_ request: Request) -> Response {
        if let token = metricsBearerToken, !Self.bearerMatches(request.headers[.authorization], token: token) {
            return Response(status: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8", .wwwAuthenticate: "Bearer"],
                            body: .init(byteBuffer: ByteBuffer(string: "metrics.bearerToken: send Authorization: Bearer <token>\n")))
        }
        for (listener, limiter) in connectionLimiters {
            let counts = limiter.counts
            metrics.recordConnections(listener: listener, open: counts.open, refused: counts.refused)
        }
        if let counts = whipSessionCounts?() {
            metrics.recordConnections(listener: "whip", open: counts.open, refused: counts.refused)
        }
        if let stats = ProcessStats.read() { metrics.recordProcess(stats) }
        for read in onMetricsRead { read() }
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }

    /// Compares without an early exit, so timing says nothing about how much matched.
    static func bearerMatches(_ header: String?, token: String) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.dropFirst("Bearer ".count).utf8), expected = Array(token.utf8)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<max(given.count, expected.count) {
            difference |= (index < given.count ? given[index] : 0) ^ (index < expected.count ? expected[index] : 0xFF)
        }
        return difference == 0
    }

    /// Raw path and raw query (without "?") of a request target.
    static func splitTarget(_ target: String) -> (path: String, query: String) {
        guard let mark = target.firstIndex(of: "?") else { return (target, "") }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }

    static func errorResponse(_ error: APIError, status: Int? = nil) -> Response {
        let rendered = error.response
        var fields = HTTPFields()
        for (name, value) in rendered.headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        return Response(status: HTTPResponse.Status(code: status ?? rendered.status), headers: fields,
                        body: .init(byteBuffer: ByteBuffer(string: rendered.body)))
    }
}

// MARK: The API's middleware, outermost first

/// Gives every request an id, as IVS does: a fresh UUID in `x-amzn-RequestId` on the answer
/// (errors included), and in the log lines of the request. Every answer also carries the
/// security headers the model declares on IVS's outputs and errors (unless a route set its own).
struct RequestIdMiddleware: RouterMiddleware {
    static let header = HTTPField.Name("x-amzn-RequestId")!
    /// Nothing cached, sniffed, framed or loaded from an API answer; HTTPS remembered. Not
    /// the model's Access-Control-* pair: the API does not offer CORS (cross-site calls are
    /// refused while authentication is off).
    static let securityHeaders: [(HTTPField.Name, String)] = [
        (.cacheControl, "no-store"),
        (HTTPField.Name("Content-Security-Policy")!, "default-src 'none'; frame-ancestors 'none'"),
        (HTTPField.Name("Strict-Transport-Security")!, "max-age=47304000; includeSubDomains"),
        (HTTPField.Name("X-Content-Type-Options")!, "nosniff"),
        (HTTPField.Name("X-Frame-Options")!, "DENY"),
    ]

    static func newId() -> String { UUID().uuidString.lowercased() }

    func handle(_ request: Request, context: ServerRequestContext,
                next: (Request, ServerRequestContext) async throws -> Response) async throws -> Response {
        var context = context
        context.requestId = Self.newId()
        var response = try await next(request, context)
        response.headers[Self.header] = context.requestId
        for (name, value) in Self.securityHeaders where response.headers[name] == nil { response.headers[name] = value }
        return response
    }
}

/// A request no route takes: IVS's 404 with `x-amzn-ErrorType: UnknownOperationException`,
/// counted as operation "unknown".
struct UnknownOperationMiddleware: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(_ request: Request, context: ServerRequestContext,
                next: (Request, ServerRequestContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let method = request.method.rawValue, path = request.uri.path
            var response = APIRoutes.errorResponse(APIError(.resourceNotFound, "no operation at \(method) \(path)"), status: 404)
            response.headers[HTTPField.Name("x-amzn-ErrorType")!] = "UnknownOperationException"
            metrics.apiRequest(operation: "unknown", status: 404)
            return response
        }
    }
}

/// Names the operation (from the model's route), counts its answer by status and logs it with
/// its request id (reads that succeed at debug, everything else at info).
struct APIMetricsMiddleware: RouterMiddleware {
    let metrics: ServerMetrics
    let logger: Logger

    func handle(_ request: Request, context: ServerRequestContext,
                next: (Request, ServerRequestContext) async throws -> Response) async throws -> Response {
        var context = context
        context.route = APIOperation.route(method: request.method.rawValue, path: request.uri.path)
        guard let route = context.route else {
            // A path the router took that the model does not (a tag path with a bad escape).
            metrics.apiRequest(operation: "unknown", status: 404)
            var response = APIRoutes.errorResponse(
                APIError(.resourceNotFound, "no operation at \(request.method.rawValue) \(request.uri.path)"), status: 404)
            response.headers[HTTPField.Name("x-amzn-ErrorType")!] = "UnknownOperationException"
            return response
        }
        let started = ContinuousClock.now
        let response = try await next(request, context)
        metrics.apiRequest(operation: route.operation.name, status: response.status.code)
        let name = route.operation.name
        let quiet = response.status.kind == .successful && (name.hasPrefix("Get") || name.hasPrefix("List"))
        let elapsed = (ContinuousClock.now - started).components
        let ms = elapsed.seconds &* 1000 &+ elapsed.attoseconds / 1_000_000_000_000_000
        logger.log(level: quiet ? .debug : .info, "api request", metadata: [
            "operation": "\(name)", "status": "\(response.status.code)", "request.id": "\(context.requestId)", "ms": "\(ms)"])
        return response
    }
}

/// Collects the body within `maxBodyBytes` and `HTTPLimits.bodyDeadline` (413, 408).
struct APIBodyLimitMiddleware: RouterMiddleware {
    let maxBodyBytes: Int

    func handle(_ request: Request, context: ServerRequestContext,
                next: (Request, ServerRequestContext) async throws -> Response) async throws -> Response {
        let buffer: ByteBuffer
        do {
            buffer = try await HTTPLimits.collect(request, upTo: maxBodyBytes)
        } catch .tooSlow {
            return APIRoutes.errorResponse(.validation("the request body did not arrive within \(HTTPLimits.bodyDeadline)"), status: 408)
        } catch {
            return APIRoutes.errorResponse(.validation("request body exceeds the limit of \(maxBodyBytes) bytes"), status: 413)
        }
        var context = context
        context.body = Data(buffer.readableBytesView)
        return try await next(request, context)
    }
}

/// A call signed with the fleet's secret is another node forwarding: verified (time within the
/// skew, nonce taken once) and marked `forwarded`, or refused (403). Unsigned calls pass on.
struct FleetSignatureMiddleware: RouterMiddleware {
    let secret: String?
    let claimNonce: (@Sendable (String, Int64) async -> Bool)?
    let nowMs: @Sendable () -> Int64
    let logger: Logger

    func handle(_ request: Request, context: ServerRequestContext,
                next: (Request, ServerRequestContext) async throws -> Response) async throws -> Response {
        guard let signature = request.headers[HTTPField.Name(FleetCallSignature.signatureHeader)!] else {
            return try await next(request, context)
        }
        let (rawPath, rawQuery) = APIRoutes.splitTarget(request.head.path ?? request.uri.path)
        let time = request.headers[HTTPField.Name(FleetCallSignature.timeHeader)!] ?? ""
        let nonce = request.headers[HTTPField.Name(FleetCallSignature.nonceHeader)!] ?? ""
        let node = request.headers[HTTPField.Name(FleetCallSignature.nodeHeader)!] ?? "?"
        guard let secret, let signedAt = FleetCallSignature.verify(
            secret: secret, method: request.method.rawValue, path: rawPath, query: rawQuery, timeText: time, nonce: nonce,
            signature: signature, body: context.body, nowMs: nowMs()) else {
            logger.notice("refused a call signed as from another node", metadata: ["node": "\(node)"])
            return APIRoutes.errorResponse(.accessDenied("the fleet call signature does not verify (secret, or clocks more than "
                                                         + "\(FleetCallSignature.skewMs / 1000) s apart)"))
        }
        // A verified call is taken once: the same nonce again is a replay.
        if let claimNonce, await !claimNonce(nonce, signedAt &+ FleetCallSignature.skewMs) {
            logger.warning("refused a replayed call signed as from another node", metadata: ["node": "\(node)"])
            return APIRoutes.errorResponse(.accessDenied("the fleet call was already taken (its nonce is used)"))
        }
        var context = context
        context.forwarded = true
        return try await next(request, context)
    }
}

/// Every call not forwarded by the fleet is authenticated (SigV4, or the loopback guard when
/// auth is off). SigV4 signs the request target as sent (still percent-encoded) and the Host
/// header, which HTTPTypes moves out of the header fields into the authority.
struct SigV4Middleware: RouterMiddleware {
    let authenticator: any RequestAuthenticator

    func handle(_ request: Request, context: ServerRequestContext,
                next: (Request, ServerRequestContext) async throws -> Response) async throws -> Response {
        guard !context.forwarded else { return try await next(request, context) }
        let (rawPath, rawQuery) = APIRoutes.splitTarget(request.head.path ?? request.uri.path)
        var headers = request.headers.map { ($0.name.rawName, $0.value) }
        if let authority = request.head.authority { headers.insert(("host", authority), at: 0) }
        if let denied = await authenticator.authenticate(AuthenticationRequest(
            method: request.method.rawValue, path: rawPath, query: rawQuery, headers: headers, body: context.body)) {
            return APIRoutes.errorResponse(denied)
        }
        return try await next(request, context)
    }
}

/// The end of the chain: the operation runs, its answer or its IVS error is the response.
struct APIOperationResponder: HTTPResponder {
    let operation: @Sendable (APIOperation.Route, String, Data, Bool) async throws(APIError) -> Data
    let logger: Logger

    func respond(to request: Request, context: ServerRequestContext) async throws -> Response {
        guard let route = context.route else {
            return APIRoutes.errorResponse(APIError(.resourceNotFound, "no operation at \(request.method.rawValue) \(request.uri.path)"),
                                           status: 404)
        }
        do {
            let data = try await operation(route, request.uri.query ?? "", context.body, context.forwarded)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
        } catch {
            let metadata: Logger.Metadata = ["operation": "\(route.operation.name)", "error": "\(error.message)",
                                             "request.id": "\(context.requestId)"]
            if error.code == .internalServer {
                logger.error("operation failed", metadata: metadata)
            } else {
                logger.debug("request rejected", metadata: metadata)
            }
            return APIRoutes.errorResponse(error)
        }
    }
}
