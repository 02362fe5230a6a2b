// The operator console at `/console`: a page of static files compiled into the binary
// (`ConsoleAssets`), public like `/healthz` (no SigV4: the page holds no data; the API calls it
// makes are signed by the operator's key when `auth.enabled`, and same-origin when it is off).
// Each answer forbids everything the page does not need: scripts, styles and connections only
// to this origin, media from blob: (a WHEP player), no framing, no sniffing, revalidated on
// every load (`no-cache` with an ETag) so an upgraded daemon serves its own page at once.
import Hummingbird
import HTTPTypes
import NIOCore

enum ConsoleRoutes {
    /// The page's own policy (the API's is `default-src 'none'`).
    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self'",
        "media-src 'self' blob:", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
    ].joined(separator: "; ")

    static let securityHeaders: HTTPFields = [
        .cacheControl: "no-cache",
        HTTPField.Name("Content-Security-Policy")!: contentSecurityPolicy,
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
        HTTPField.Name("Cross-Origin-Resource-Policy")!: "same-origin",
        HTTPField.Name("Permissions-Policy")!: "camera=(), microphone=(), geolocation=()",
    ]

    /// `GET /console` (the page) and `GET /console/<file>`; any other name is a plain 404.
    static func add(to router: Router<ServerRequestContext>) {
        router.get("/console") { request, _ in response(for: ConsoleAssets.indexName, request) }
        router.get("/console/**") { request, context in
            response(for: context.parameters.getCatchAll().joined(separator: "/"), request)
        }
    }

    static func response(for name: String, _ request: Request) -> Response {
        var headers = securityHeaders
        guard let asset = ConsoleAssets.files[name.isEmpty ? ConsoleAssets.indexName : name] else {
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(status: .notFound, headers: headers,
                            body: .init(byteBuffer: ByteBuffer(string: "no console file \(name.prefix(100))\n")))
        }
        headers[.eTag] = asset.etag
        if request.headers[.ifNoneMatch] == asset.etag { return Response(status: .notModified, headers: headers) }
        headers[.contentType] = asset.contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: asset.body)))
    }
}
