// The console's files, in the binary: HTML, CSS, an icon and plain ES modules (no npm, no build
// step), each a raw string literal in the `ConsoleAssets+*.swift` files beside this one. Edit
// them there; the page loads `/console/app.js`, which imports the other modules by absolute path.
//
//   app.js    state, the 2-second update, the actions (layout, feature, mute, stop), sign-in
//   views.js  what is drawn from the state
//   dom.js    DOM helpers (text only, lists kept by key)
//   api.js    `POST /<Operation>`, the IVS error shape, the session's key (sessionStorage)
//   sigv4.js  SigV4 with WebCrypto, as Sources/Auth/SigV4Verifier.swift checks it
//   player.js the WHEP player of a composition

/// One file of the console.
struct ConsoleAsset: Sendable {
    let contentType: String
    let body: String
    /// A strong validator of the body (FNV-1a 64), for `If-None-Match`.
    let etag: String

    init(_ contentType: String, _ body: String) {
        self.contentType = contentType
        self.body = body
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        etag = "\"" + String(hash, radix: 16) + "\""
    }
}

enum ConsoleAssets {
    static let indexName = "index.html"

    /// File name (the path after `/console/`) → file.
    static let files: [String: ConsoleAsset] = {
        let script = "text/javascript; charset=utf-8"
        return [
            "index.html": ConsoleAsset("text/html; charset=utf-8", indexHTML),
            "console.css": ConsoleAsset("text/css; charset=utf-8", consoleCSS),
            "icon.svg": ConsoleAsset("image/svg+xml", iconSVG),
            "app.js": ConsoleAsset(script, appJS),
            "views.js": ConsoleAsset(script, viewsJS),
            "dom.js": ConsoleAsset(script, domJS),
            "api.js": ConsoleAsset(script, apiJS),
            "sigv4.js": ConsoleAsset(script, sigv4JS),
            "player.js": ConsoleAsset(script, playerJS),
        ]
    }()
}
