// The operator console's routes through Hummingbird's router test client: every file of the
// page with its content type and security headers, no signature needed for it while the API
// beside it still wants one, a plain 404 for any other name, and the API still refusing a
// cross-site page while authentication is off.
import APIModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Prometheus
@testable import Server
import Synchronization
import Testing

@Suite struct ConsoleRoutesTests {
    static let csp = HTTPField.Name("Content-Security-Policy")!

    static func app(authenticator: any RequestAuthenticator) -> some ApplicationProtocol {
        Application(router: HTTPMiddlewareTests.routes(authenticator: authenticator, registry: PrometheusCollectorRegistry(),
                                                       calls: HTTPMiddlewareTests.Log()).buildRouter())
    }

    @Test("each file is served with its content type, no-cache, and the page's strict policy; without a signature")
    func filesAndHeaders() async throws {
        // An authenticator that refuses everything: the page's routes never ask it.
        let refusing = HTTPMiddlewareTests.RecordingAuthenticator(refuse: true)
        let expected = ["index.html": "text/html; charset=utf-8", "console.css": "text/css; charset=utf-8",
                        "icon.svg": "image/svg+xml", "app.js": "text/javascript; charset=utf-8",
                        "views.js": "text/javascript; charset=utf-8", "dom.js": "text/javascript; charset=utf-8",
                        "api.js": "text/javascript; charset=utf-8", "sigv4.js": "text/javascript; charset=utf-8",
                        "player.js": "text/javascript; charset=utf-8"]
        #expect(Set(ConsoleAssets.files.keys) == Set(expected.keys))
        try await Self.app(authenticator: refusing).test(.router) { client in
            for (uri, name) in [("/console", "index.html")] + expected.keys.map({ ("/console/\($0)", $0) }) {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .ok, "\(uri)")
                    #expect(response.headers[.contentType] == expected[name], "\(uri)")
                    #expect(response.headers[.cacheControl] == "no-cache", "\(uri)")
                    #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "\(uri)")
                    let policy = try #require(response.headers[Self.csp], "\(uri)")
                    for directive in ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
                                      "media-src 'self' blob:", "frame-ancestors 'none'"] {
                        #expect(policy.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.contains(directive),
                                "\(uri): \(policy)")
                    }
                    #expect(!policy.contains("unsafe"), "\(policy)")
                    #expect(String(buffer: response.body) == ConsoleAssets.files[name]?.body, "\(uri)")
                    #expect(response.headers[.eTag] == ConsoleAssets.files[name]?.etag)
                }
            }
            // Revalidation: the same ETag is a 304 without a body.
            let etag = try #require(ConsoleAssets.files["app.js"]?.etag)
            try await client.execute(uri: "/console/app.js", method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
            }
            // The API beside it still wants the signature.
            try await client.execute(uri: "/ListStages", method: .post, body: ByteBuffer(string: "{}")) { response in
                #expect(response.status == .forbidden)
            }
        }
        #expect(refusing.seen.withLock { $0.count } == 1, "only the API call was authenticated")
    }

    @Test("a name that is not a file of the page is a 404, never a file of the disk or an API answer")
    func unknownFiles() async throws {
        try await Self.app(authenticator: HTTPMiddlewareTests.RecordingAuthenticator()).test(.router) { client in
            for uri in ["/console/nope.js", "/console/../Package.swift", "/console/%2e%2e/Package.swift", "/console/app.js/x",
                        "/console/APP.JS", "/console/index.html.bak", "/console/sub/app.js"] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .notFound, "\(uri)")
                    #expect(!String(buffer: response.body).contains("import "), "\(uri)")
                }
            }
            // Only GET: a POST to the page is no operation.
            try await client.execute(uri: "/console", method: .post, body: ByteBuffer(string: "{}")) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[HTTPField.Name("x-amzn-ErrorType")!] == "UnknownOperationException")
            }
        }
    }

    @Test("the page links only its own files, by absolute path, and loads no script or style inline")
    func pageReferencesOnlyItsFiles() throws {
        let page = try #require(ConsoleAssets.files["index.html"]).body
        #expect(!page.contains("<script>") && !page.contains("style=") && !page.contains("<style"), "inline script or style")
        #expect(!page.contains("http://") && !page.contains("https://"), "an external URL")
        var referenced = Set<String>()
        for file in ConsoleAssets.files.values {
            for prefix in ["\"/console/", "'/console/"] {
                for part in file.body.components(separatedBy: prefix).dropFirst() {
                    referenced.insert(String(part.prefix { $0 != "\"" && $0 != "'" }))
                }
            }
        }
        #expect(!referenced.isEmpty)
        for name in referenced { #expect(ConsoleAssets.files[name] != nil, "\(name) is referenced but not served") }
        // Every module is imported by another one (or is the entry point).
        for name in ConsoleAssets.files.keys where name.hasSuffix(".js") {
            #expect(referenced.contains(name), "\(name) is never loaded")
        }
    }

    @Test("authentication off: the page's same-origin calls pass, a cross-site page's are refused")
    func theAPIStillRefusesCrossSite() async throws {
        let guardian = UnauthenticatedRequestGuard(allowedHosts: ["127.0.0.1"], logger: Logger(label: "console-test"))
        try await Self.app(authenticator: guardian).test(.router) { client in
            try await client.execute(uri: "/console", method: .get, headers: [.origin: "https://evil.example"]) { response in
                #expect(response.status == .ok, "the page itself is public")
            }
            for (origin, status) in [("http://localhost", HTTPResponse.Status.ok), ("https://evil.example", .forbidden),
                                     ("http://localhost:8086", .forbidden), ("null", .forbidden)] {
                try await client.execute(uri: "/ListStages", method: .post, headers: [.origin: origin, .contentType: "application/json"],
                                         body: ByteBuffer(string: "{}")) { response in
                    #expect(response.status == status, "\(origin)")
                    if status == .forbidden {
                        #expect(response.headers[HTTPField.Name("x-amzn-ErrorType")!] == "AccessDeniedException")
                    }
                }
            }
        }
    }
}
