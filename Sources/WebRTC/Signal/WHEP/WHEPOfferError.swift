/// Why a WHEP viewer's offer gets no answer. The endpoint answers each with 400 and the
/// description as the body (500 when `isServerFault`); every case names the section or
/// the missing piece. Offered text appears only after it was checked to be a short SDP token.
public enum WHEPOfferError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Unparsable, too large, or lacking what any answer needs (ICE credentials, fingerprint,
    /// rtcp-mux, BUNDLE, a usable a=setup): worded as for WHIP.
    case sdp(SDPError)
    case tooManyLines(count: Int, limit: Int)
    case tooManyMediaSections(count: Int, limit: Int)
    /// Section `index` (0-based) has more `a=` lines than allowed.
    case tooManyAttributes(index: Int, count: Int, limit: Int)
    /// Section `index` lists more formats on its m= line than allowed.
    case tooManyFormats(index: Int, count: Int, limit: Int)
    /// Section `index` has a media kind, protocol, first format or mid we would have to echo
    /// that is not a short run of visible ASCII.
    case unreadableSection(index: Int)
    /// Two sections share a mid.
    case duplicateMid(String)
    /// The viewer is ICE-lite too: nobody would send connectivity checks.
    case viewerIsICELite
    /// No audio or video section is turned on: WHEP plays a composition's video.
    case noVideo
    /// More than one audio (or video) section: a composition has one of each.
    case multipleSections(kind: MediaKind, count: Int)
    case unsupportedProtocol(mid: String?, proto: String)
    /// sendonly or inactive: the viewer would not receive what we send.
    case unsupportedDirection(mid: String?, kind: MediaKind, direction: SDPDirection)
    /// The video section has no H.264 at all (we send nothing else).
    case noH264(mid: String?)
    /// H.264 only with packetization-mode 0 (single NAL units), which cannot carry our frames.
    case noH264PacketizationMode1(mid: String?)
    /// No offered H.264 (packetization-mode=1) profile and level can take our stream.
    case noCompatibleH264Profile(mid: String?, ours: H264ProfileLevelID, offered: [String])
    /// The audio section has no Opus 48000/2.
    case noOpus(mid: String?)
    /// Our own parameters (candidates, SSRCs, cname, msid, profile-level-id) are unusable: a server bug.
    case invalidLocalParameters(String)

    /// A fault of ours rather than of the offer (500, not 400).
    public var isServerFault: Bool {
        switch self {
        case .invalidLocalParameters, .sdp(.invalidLocalFingerprint): return true
        default: return false
        }
    }

    public var description: String {
        func section(_ mid: String?) -> String { mid.map { "m-section \($0)" } ?? "m-section without mid" }
        switch self {
        case .sdp(let error): return error.description
        case .tooManyLines(let count, let limit): return "offer has \(count) lines; at most \(limit) are read"
        case .tooManyMediaSections(let count, let limit): return "offer has \(count) m-sections; at most \(limit) are read"
        case .tooManyAttributes(let index, let count, let limit):
            return "m-section \(index + 1) (of the offer's order) has \(count) attributes; at most \(limit) are read"
        case .tooManyFormats(let index, let count, let limit):
            return "m-section \(index + 1) (of the offer's order) lists \(count) formats; at most \(limit) are read"
        case .unreadableSection(let index):
            return "m-section \(index + 1) (of the offer's order) has a kind, protocol, format or mid that is not an SDP token"
        case .duplicateMid(let mid): return "two m-sections have a=mid:\(mid)"
        case .viewerIsICELite: return "offer is ICE-lite; this server is ICE-lite too, so the viewer must run full ICE"
        case .noVideo: return "offer has no video m-section; WHEP here plays a composition's video (H.264), with or without audio"
        case .multipleSections(let kind, let count):
            return "offer has \(count) \(kind.rawValue) m-sections; a composition is one video and at most one audio track"
        case .unsupportedProtocol(let mid, let proto): return "\(section(mid)) uses \(proto), not UDP/TLS/RTP/SAVPF"
        case .unsupportedDirection(let mid, let kind, let direction):
            return "\(kind.rawValue) \(section(mid)) is \(direction.rawValue); a WHEP viewer's sections must be recvonly or sendrecv"
        case .noH264(let mid): return "video \(section(mid)) offers no H.264, the only video codec this server sends"
        case .noH264PacketizationMode1(let mid):
            return "video \(section(mid)) offers H.264 only with packetization-mode=0; packetization-mode=1 is required"
        case .noCompatibleH264Profile(let mid, let ours, let offered):
            let profile = ours.profile?.description ?? "unknown profile"
            let level = ours.level?.description ?? "unknown level"
            return "video \(section(mid)): no offered H.264 profile-level-id (\(offered.joined(separator: ", "))) can receive "
                + "this composition's \(ours) (\(profile), level \(level))"
        case .noOpus(let mid): return "audio \(section(mid)) offers no Opus (48000/2), the only audio codec this server sends"
        case .invalidLocalParameters(let what): return "invalid local WHEP parameters: \(what)"
        }
    }
}
