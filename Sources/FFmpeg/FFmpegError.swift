// The FFmpeg wrapper: the only module that imports the C libraries. Each type owns exactly
// one FFmpeg object and frees it once in `deinit`; raw AVERROR codes never leave this module.
internal import CFFmpeg
internal import CFFmpegShim

/// A failed FFmpeg call: what we were doing, FFmpeg's message, and a category callers can
/// branch on. EAGAIN and EOF are not errors; they come back as results (`DecodeResult` ...).
public struct FFmpegError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// The input is malformed (AVERROR_INVALIDDATA and friends).
        case invalidData
        /// A file, stream or codec we need is missing or unsupported.
        case unsupported
        /// Network or file I/O failed (connection refused, broken pipe, timeout ...).
        case io
        case outOfMemory
        case other
    }

    public var kind: Kind
    public var operation: String
    public var message: String
    /// The raw code, for logs only.
    public var code: Int32
    /// What the TLS layer reported while opening a network output (e.g. "Peer certificate
    /// failed verification"); the code alone says only "Input/output error".
    public var tlsFailure: String?

    public init(kind: Kind, operation: String, message: String, code: Int32 = 0, tlsFailure: String? = nil) {
        self.kind = kind
        self.operation = operation
        self.message = message
        self.code = code
        self.tlsFailure = tlsFailure
    }

    init(code: Int32, operation: String) {
        self.init(kind: FFmpegError.kind(of: code), operation: operation, message: FFmpegError.text(code), code: code)
    }

    public var description: String { "\(operation): " + (tlsFailure.map { "\($0) (\(message))" } ?? message) }

    static func text(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        cffshim_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func kind(of code: Int32) -> Kind {
        if code == cffshim_error_nomem() { return .outOfMemory }
        if code == cffshim_error_invalid() { return .other }
        switch code {
        case AVERROR_INVALIDDATA_VALUE: return .invalidData
        case AVERROR_DECODER_NOT_FOUND_VALUE, AVERROR_ENCODER_NOT_FOUND_VALUE, AVERROR_DEMUXER_NOT_FOUND_VALUE,
             AVERROR_MUXER_NOT_FOUND_VALUE, AVERROR_STREAM_NOT_FOUND_VALUE, AVERROR_PROTOCOL_NOT_FOUND_VALUE,
             AVERROR_PATCHWELCOME_VALUE:
            return .unsupported
        default:
            // Negative errno values are I/O failures (ECONNREFUSED, EPIPE, ETIMEDOUT, ENOENT ...).
            return code < 0 && code > -4096 ? .io : .other
        }
    }
}

// FFERRTAG values (the macros are not importable): -(a | b<<8 | c<<16 | d<<24).
// Bytes, not `asciiValue`: the "not found" tags start with 0xF8, which is not ASCII.
private func tag(_ a: Unicode.Scalar, _ b: Unicode.Scalar, _ c: Unicode.Scalar, _ d: Unicode.Scalar) -> Int32 {
    let value = a.value & 0xFF | (b.value & 0xFF) << 8 | (c.value & 0xFF) << 16 | (d.value & 0xFF) << 24
    return -Int32(bitPattern: value)
}
let AVERROR_INVALIDDATA_VALUE = tag("I", "N", "D", "A")
let AVERROR_DECODER_NOT_FOUND_VALUE = tag("\u{F8}", "D", "E", "C")
let AVERROR_ENCODER_NOT_FOUND_VALUE = tag("\u{F8}", "E", "N", "C")
let AVERROR_DEMUXER_NOT_FOUND_VALUE = tag("\u{F8}", "D", "E", "M")
let AVERROR_MUXER_NOT_FOUND_VALUE = tag("\u{F8}", "M", "U", "X")
let AVERROR_STREAM_NOT_FOUND_VALUE = tag("\u{F8}", "S", "T", "R")
let AVERROR_PROTOCOL_NOT_FOUND_VALUE = tag("\u{F8}", "P", "R", "O")
let AVERROR_PATCHWELCOME_VALUE = tag("P", "A", "W", "E")

/// Throws an `FFmpegError` for a negative return code.
@discardableResult
func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(FFmpegError) -> Int32 {
    if code < 0 { throw FFmpegError(code: code, operation: operation()) }
    return code
}

enum AVCodes {
    static let again = cffshim_error_again()
    static let eof = cffshim_error_eof()
    static let noPTS = cffshim_nopts()
}

/// Quiets FFmpeg's own stderr logging (we log through swift-log). Call once at start-up.
public enum FFmpegLogging {
    public enum Level: Int32, Sendable { case quiet = -8, error = 16, warning = 24, info = 32, debug = 48 }
    public static func setLevel(_ level: Level) { av_log_set_level(level.rawValue) }

    /// Installed once, before the first network output opens.
    static let tlsErrorCapture: Void = cffshim_install_tls_error_capture()

    /// This thread's last TLS error, cleared.
    static func takeTLSError() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let length = cffshim_take_tls_error(&buffer, buffer.count)
        guard length > 0 else { return nil }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
