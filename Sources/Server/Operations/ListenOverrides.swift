// `serve --listen HOST:PORT --rtmp-port N …`: a first run without a configuration file, or a
// file's addresses changed for one run.

/// Addresses given on the command line; each replaces the configuration's.
public struct ListenOverrides: Sendable, Equatable {
    /// `HOST:PORT`, `[IPv6]:PORT`, or a bare `PORT` (the host stays).
    public var listen: String?
    public var rtmpPort: Int?
    public var rtmpsPort: Int?
    public var whipPort: Int?

    public init(listen: String? = nil, rtmpPort: Int? = nil, rtmpsPort: Int? = nil, whipPort: Int? = nil) {
        self.listen = listen
        self.rtmpPort = rtmpPort
        self.rtmpsPort = rtmpsPort
        self.whipPort = whipPort
    }

    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// `configuration` with these addresses; `validate()` judges the result.
    public func applied(to configuration: ServerConfiguration) throws(Invalid) -> ServerConfiguration {
        var copy = configuration
        if let listen {
            let (host, port) = try Self.parse(listen)
            if let host { copy.listen.host = host }
            copy.listen.port = port
        }
        if let rtmpPort { copy.ingest.rtmp.port = rtmpPort }
        if let rtmpsPort { copy.ingest.rtmps.port = rtmpsPort }
        if let whipPort { copy.ingest.whip.port = whipPort }
        return copy
    }

    /// `127.0.0.1:8086` → ("127.0.0.1", 8086); `[::1]:8086` → ("::1", 8086); `8086` → (nil, 8086).
    static func parse(_ text: String) throws(Invalid) -> (host: String?, port: Int) {
        let invalid = Invalid(description: "--listen \(text): give HOST:PORT, [IPv6]:PORT or PORT")
        var host: String?
        var portText = Substring(text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { throw invalid }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            guard text.firstIndex(of: ":") == colon else { throw invalid }  // a bare IPv6 address needs brackets
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        guard host?.isEmpty != true, let port = Int(portText), (0...65_535).contains(port) else { throw invalid }
        return (host, port)
    }
}
