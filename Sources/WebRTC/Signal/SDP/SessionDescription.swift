// The parts of an SDP offer (RFC 8866, JSEP RFC 9429) that a receiving WebRTC server acts
// on, plus every attribute line in raw form for anything else. Transport attributes that
// may sit at session or media level (ice-ufrag, ice-pwd, fingerprint, setup, direction) are
// resolved onto each media section: the media-level value, else the session-level one.

public struct SessionDescription: Equatable, Sendable {
    public var origin: SDPOrigin?
    public var sessionName: String?
    /// Session-level values as written; media sections carry the resolved ones.
    public var iceUfrag: String?
    public var icePwd: String?
    public var iceLite: Bool = false
    /// `a=ice-options` tokens, e.g. "trickle", "ice2", "renomination".
    public var iceOptions: [String] = []
    public var fingerprints: [SDPFingerprint] = []
    public var setup: SDPSetup?
    public var groups: [SDPGroup] = []
    /// Session-level `a=extmap` lines apply to every media section (RFC 8285 §5).
    public var extmaps: [SDPExtmap] = []
    /// Every session-level `a=` line in order.
    public var attributes: [SDPAttribute] = []
    public var media: [SDPMediaDescription] = []

    public init() {}

    /// The mids of the first BUNDLE group (JSEP offers have at most one).
    public var bundleMids: [String]? {
        groups.first { $0.semantics.uppercased() == "BUNDLE" }?.mids
    }
}

/// `o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>`.
public struct SDPOrigin: Equatable, Sendable {
    public var username: String
    public var sessionID: String
    public var sessionVersion: String
    public var networkType: String
    public var addressType: String
    public var address: String

    public init(username: String, sessionID: String, sessionVersion: String, networkType: String, addressType: String, address: String) {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }
}

/// One `a=` line: `a=name` or `a=name:value`.
public struct SDPAttribute: Equatable, Sendable {
    public var name: String
    public var value: String?

    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}

/// `a=fingerprint:<hash-func> <hex:hex:...>` (RFC 8122): the DTLS certificate's digest.
public struct SDPFingerprint: Equatable, Sendable, CustomStringConvertible {
    /// Lower-case hash function name, e.g. "sha-256".
    public var algorithm: String
    public var bytes: [UInt8]

    public init(algorithm: String, bytes: [UInt8]) {
        self.algorithm = algorithm.lowercased()
        self.bytes = bytes
    }

    /// Parses the attribute value ("sha-256 AB:CD:..."); nil when malformed.
    public init?(attributeValue: some StringProtocol) {
        let parts = attributeValue.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, let bytes = Self.parseHex(parts[1]) else { return nil }
        self.init(algorithm: String(parts[0]), bytes: bytes)
    }

    /// Upper-case colon-separated hex, as browsers write it.
    public var hex: String {
        bytes.map { String($0, radix: 16, uppercase: true).leftPadded(to: 2) }.joined(separator: ":")
    }

    /// The attribute value: "sha-256 AB:CD:...".
    public var description: String { "\(algorithm) \(hex)" }

    /// "AB:CD:..." (either case) to bytes; nil unless every group is two hex digits.
    public static func parseHex(_ text: some StringProtocol) -> [UInt8]? {
        var bytes: [UInt8] = []
        for group in text.split(separator: ":", omittingEmptySubsequences: false) {
            guard group.count == 2, let byte = UInt8(group, radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes.isEmpty ? nil : bytes
    }
}

/// `a=setup` (RFC 4145 §4): who opens the DTLS connection.
public enum SDPSetup: String, Equatable, Sendable {
    case active, passive, actpass, holdconn
}

/// Media direction from the sender's point of view of the description's author.
public enum SDPDirection: String, Equatable, Sendable {
    case sendrecv, sendonly, recvonly, inactive

    /// Whether the author sends media in this section.
    public var sends: Bool { self == .sendrecv || self == .sendonly }

    /// The direction an answer gives back when it accepts everything the offer allows.
    public var reversed: SDPDirection {
        switch self {
        case .sendonly: return .recvonly
        case .recvonly: return .sendonly
        case .sendrecv, .inactive: return self
        }
    }
}

/// `a=group:<semantics> <mid>...` (RFC 5888), e.g. BUNDLE or LS.
public struct SDPGroup: Equatable, Sendable {
    public var semantics: String
    public var mids: [String]

    public init(semantics: String, mids: [String]) {
        self.semantics = semantics
        self.mids = mids
    }
}

/// `a=extmap:<id>[/<direction>] <uri> [<attributes>]` (RFC 8285).
public struct SDPExtmap: Equatable, Sendable {
    public var id: Int
    public var direction: SDPDirection?
    public var uri: String
    public var attributes: String?

    public init(id: Int, direction: SDPDirection? = nil, uri: String, attributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.attributes = attributes
    }

    public static let midURI = "urn:ietf:params:rtp-hdrext:sdes:mid"
    public static let absSendTimeURI = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
    public static let absCaptureTimeURI = "http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time"
    public static let ridURI = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"
    public static let repairedRidURI = "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"
    public static let transportCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
}

/// A payload type with its `a=rtpmap`, `a=fmtp` and `a=rtcp-fb` lines gathered.
public struct SDPCodec: Equatable, Sendable {
    public var payloadType: UInt8
    /// Encoding name as written ("H264", "opus", "OPUS"); compare case-insensitively.
    public var name: String
    public var clockRate: Int
    /// Audio channels, when the rtpmap has a third part.
    public var channels: Int?
    /// The `a=fmtp` value as written.
    public var fmtp: String?
    /// `a=rtcp-fb` values for this payload type and for `*`, whitespace normalised ("nack pli").
    public var feedback: [String] = []

    public init(payloadType: UInt8, name: String, clockRate: Int, channels: Int? = nil, fmtp: String? = nil, feedback: [String] = []) {
        self.payloadType = payloadType
        self.name = name
        self.clockRate = clockRate
        self.channels = channels
        self.fmtp = fmtp
        self.feedback = feedback
    }

    /// fmtp `key=value` pairs split on ";" (keys lower-cased; a bare token gets an empty value).
    public var parameters: [String: String] {
        var result: [String: String] = [:]
        for pair in (fmtp ?? "").split(separator: ";") {
            let trimmed = pair.trimmingSDPWhitespace()
            guard !trimmed.isEmpty else { continue }
            if let equals = trimmed.firstIndex(of: "=") {
                result[trimmed[..<equals].trimmingSDPWhitespace().lowercased()] = String(trimmed[trimmed.index(after: equals)...].trimmingSDPWhitespace())
            } else {
                result[trimmed.lowercased()] = ""
            }
        }
        return result
    }

    public func isNamed(_ encodingName: String) -> Bool {
        name.lowercased() == encodingName.lowercased()
    }
}

/// The `a=ssrc:<ssrc> <attribute>[:<value>]` lines of one SSRC (RFC 5576).
public struct SDPSource: Equatable, Sendable {
    public var ssrc: UInt32
    public var cname: String?
    /// `msid` as "<stream> <track>".
    public var msid: String?
    /// Every attribute of this SSRC in order (cname, msid, mslabel, label, ...).
    public var attributes: [SDPAttribute] = []

    public init(ssrc: UInt32, cname: String? = nil, msid: String? = nil, attributes: [SDPAttribute] = []) {
        self.ssrc = ssrc
        self.cname = cname
        self.msid = msid
        self.attributes = attributes
    }
}

/// `a=ssrc-group:<semantics> <ssrc>...`: FID pairs a primary with its RTX stream, SIM lists
/// simulcast layers, FEC-FR pairs a primary with its FEC stream.
public struct SDPSourceGroup: Equatable, Sendable {
    public var semantics: String
    public var ssrcs: [UInt32]

    public init(semantics: String, ssrcs: [UInt32]) {
        self.semantics = semantics
        self.ssrcs = ssrcs
    }
}

/// `a=rid:<id> <send|recv> [<restrictions>]` (RFC 8851).
public struct SDPRid: Equatable, Sendable {
    public var id: String
    public var direction: String
    public var restrictions: String?

    public init(id: String, direction: String, restrictions: String? = nil) {
        self.id = id
        self.direction = direction
        self.restrictions = restrictions
    }
}

/// `a=candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type> ...`
/// (RFC 8839 §5.1). A lite agent never checks towards these; they are kept for logs.
public struct SDPCandidate: Equatable, Sendable {
    public var foundation: String
    public var component: Int
    /// Lower-cased: "udp" or "tcp".
    public var transport: String
    public var priority: UInt32
    /// An IP address or an mDNS name ("<uuid>.local").
    public var address: String
    public var port: UInt16
    /// "host", "srflx", "prflx" or "relay".
    public var type: String
    public var relatedAddress: String?
    public var relatedPort: UInt16?

    public init(foundation: String, component: Int, transport: String, priority: UInt32, address: String, port: UInt16,
                type: String, relatedAddress: String? = nil, relatedPort: UInt16? = nil) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.address = address
        self.port = port
        self.type = type
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
    }

    /// The candidate as a transport address, when its address is a literal IP.
    public var transportAddress: TransportAddress? {
        IPAddress(address).map { TransportAddress(ip: $0, port: port) }
    }
}

/// One `m=` section.
public struct SDPMediaDescription: Equatable, Sendable {
    /// "audio", "video", "application", ...
    public var kind: String
    public var port: Int
    public var proto: String
    /// The m-line's format list: payload types for RTP, "webrtc-datachannel" for SCTP.
    public var formats: [String]
    public var mid: String?
    /// Resolved: media level, else session level, else sendrecv.
    public var direction: SDPDirection = .sendrecv
    public var rtcpMux = false
    public var rtcpMuxOnly = false
    public var rtcpReducedSize = false
    /// RFC 8843: port 0 in an offer with this flag means "only if bundled", not "disabled".
    public var bundleOnly = false
    /// Resolved: media level, else session level.
    public var iceUfrag: String?
    public var icePwd: String?
    public var fingerprints: [SDPFingerprint] = []
    public var setup: SDPSetup?
    /// Payload types that have an `a=rtpmap`, in m-line order.
    public var codecs: [SDPCodec] = []
    /// Media-level `a=extmap` lines followed by session-level ones not overridden here.
    public var extmaps: [SDPExtmap] = []
    public var sources: [SDPSource] = []
    public var sourceGroups: [SDPSourceGroup] = []
    public var rids: [SDPRid] = []
    /// The `a=simulcast` value as written, e.g. "send q;h;f".
    public var simulcast: String?
    /// `a=msid` as "<stream> <track>".
    public var msid: String?
    public var candidates: [SDPCandidate] = []
    public var endOfCandidates = false
    /// Every media-level `a=` line in order.
    public var attributes: [SDPAttribute] = []

    public init(kind: String, port: Int, proto: String, formats: [String]) {
        self.kind = kind
        self.port = port
        self.proto = proto
        self.formats = formats
    }

    /// The m-line's formats that are RTP payload types.
    public var payloadTypes: [UInt8] { formats.compactMap { UInt8($0) } }

    public func codec(payloadType: UInt8) -> SDPCodec? {
        codecs.first { $0.payloadType == payloadType }
    }

    /// The offerer turned this section off (port 0 without bundle-only).
    public var isDisabled: Bool { port == 0 && !bundleOnly }
}

extension StringProtocol {
    /// Spaces and tabs off both ends (SDP has no other whitespace inside a line).
    func trimmingSDPWhitespace() -> SubSequence {
        var start = startIndex, end = endIndex
        while start < end, self[start] == " " || self[start] == "\t" { start = index(after: start) }
        while end > start, self[index(before: end)] == " " || self[index(before: end)] == "\t" { end = index(before: end) }
        return self[start..<end]
    }
}
