// The daemon's log lines on standard error (journald keeps them): swift-log's stream format
// with millisecond timestamps, or one JSON object a line for log shippers (`logFormat: "json"`).
import Foundation
import MediaCore
public import Logging

public struct DaemonLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable {
        /// `2026-11-27T22:38:17.123Z info stage-compositor: key=value [Server] message`
        case text
        /// `{"time":"2026-11-27T22:38:17.123Z","level":"info","logger":"stage-compositor",...}`
        case json
    }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let format: Format
    private let write: @Sendable (String) -> Void

    /// `write` gets each line, newline included (standard error by default).
    public init(label: String, format: Format, metadataProvider: Logger.MetadataProvider? = nil,
                write: (@Sendable (String) -> Void)? = nil) {
        self.label = label
        self.format = format
        self.metadataProvider = metadataProvider
        self.write = write ?? { FileHandle.standardError.write(Data($0.utf8)) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let given = event.metadata { merged.merge(given) { _, new in new } }
        write(Self.line(format: format, time: Date(), level: event.level, label: label, message: "\(event.message)",
                        metadata: merged, source: event.source))
    }

    /// One line, newline included.
    static func line(format: Format, time: Date, level: Logger.Level, label: String, message: String,
                     metadata: Logger.Metadata, source: String) -> String {
        let stamp = timestamp(time)
        switch format {
        case .text:
            let pairs = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            return "\(stamp) \(level) \(label):\(pairs.isEmpty ? "" : " " + pairs) [\(source)] \(message)\n"
        case .json:
            var fields = [("time", quoted(stamp)), ("level", quoted(level.rawValue)), ("logger", quoted(label)),
                          ("source", quoted(source)), ("message", quoted(message))]
            if !metadata.isEmpty { fields.append(("metadata", json(.dictionary(metadata)))) }
            return "{" + fields.map { "\(quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}\n"
        }
    }

    /// UTC, to the millisecond: `2026-11-27T22:38:17.123Z`.
    static func timestamp(_ time: Date) -> String {
        let milliseconds = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds % 1000))
    }

    private static func json(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let text): return quoted(text)
        case .stringConvertible(let convertible): return quoted(convertible.description)
        case .array(let values): return "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let entries):
            return "{" + entries.sorted { $0.key < $1.key }.map { "\(quoted($0.key)):\(json($0.value))" }.joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal (RFC 8259 escapes), as every JSON we render by hand.
    static func quoted(_ text: String) -> String { JSONText.quote(text) }
}
