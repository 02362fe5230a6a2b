/// Why an offer could not be parsed or answered. The WHIP endpoint answers each with 400
/// and the description as the body, so every case names the line or the missing piece.
public enum SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    // Parsing
    case empty
    case tooLarge(bytes: Int, limit: Int)
    /// The first line is not `v=`.
    case missingVersion
    case unsupportedVersion(String)
    /// A line that is not `<letter>=<value>`.
    case malformedLine(number: Int, text: String)
    case malformedMediaLine(number: Int, text: String)
    /// An attribute the negotiation relies on (rtpmap, fmtp, extmap, fingerprint, setup,
    /// group, ssrc, ssrc-group) that does not follow its grammar.
    case malformedAttribute(number: Int, text: String)

    // Negotiation
    case noVideoCodec
    case noAudioCodec
    /// Neither kind is required and no section is usable.
    case noAcceptableMedia
    case missingICECredentials
    case missingFingerprint
    /// The accepted media must share one transport: `a=rtcp-mux` is required.
    case missingRTCPMux(mid: String?)
    /// Audio and video are both accepted but not in one `a=group:BUNDLE`.
    case missingBundle
    /// `a=setup:holdconn`: the offerer wants no DTLS connection yet.
    case unsupportedSetup(String)
    /// Our own certificate fingerprint is not 32 colon-separated hex bytes (a server bug).
    case invalidLocalFingerprint(String)

    public var description: String {
        switch self {
        case .empty: return "empty SDP"
        case .tooLarge(let bytes, let limit): return "SDP of \(bytes) bytes exceeds the limit of \(limit)"
        case .missingVersion: return "SDP does not start with v="
        case .unsupportedVersion(let version): return "unsupported SDP version \(version)"
        case .malformedLine(let number, let text): return "malformed SDP line \(number): \(text)"
        case .malformedMediaLine(let number, let text): return "malformed m= line \(number): \(text)"
        case .malformedAttribute(let number, let text): return "malformed attribute on line \(number): \(text)"
        case .noVideoCodec: return "offer has no video m-section with H.264 (packetization-mode=1) or VP8"
        case .noAudioCodec: return "offer has no audio m-section with Opus (48000/2)"
        case .noAcceptableMedia: return "offer has no audio or video m-section this server can receive"
        case .missingICECredentials: return "offer has no a=ice-ufrag / a=ice-pwd"
        case .missingFingerprint: return "offer has no a=fingerprint"
        case .missingRTCPMux(let mid): return "m-section \(mid ?? "without mid") lacks a=rtcp-mux, which is required"
        case .missingBundle: return "offer does not put audio and video in one a=group:BUNDLE"
        case .unsupportedSetup(let value): return "unsupported a=setup:\(value)"
        case .invalidLocalFingerprint(let text): return "invalid local sha-256 fingerprint \"\(text)\""
        }
    }
}
