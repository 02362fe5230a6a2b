// Offer in, answer out, for a receive-only WHIP server: one audio (Opus) and one video
// (H.264, else VP8) m-section are accepted over a single BUNDLEd, rtcp-muxed ICE-lite
// transport; everything else is rejected with port 0 as JSEP requires. The result carries
// what the media layer needs: payload types, RTX mapping, SSRCs, header extension ids, and
// what DTLS and ICE need: remote credentials, the remote fingerprint and our setup role.

/// What we say about ourselves in the answer.
public struct SDPAnswerOptions: Sendable {
    /// Our ICE credentials (the ICE-lite agent's local ones).
    public var localCredentials: IceCredentials
    /// The sha-256 fingerprint of our DTLS certificate, "AB:CD:..." (32 bytes).
    public var localFingerprintSHA256: String
    /// Our single host candidate: the public address and port of the UDP socket.
    public var candidate: TransportAddress
    /// `o=` session id; the top bit is cleared (JSEP: below 2^63).
    public var sessionID: UInt64
    /// A WHIP stage publish needs both; tests or audio-only ingest may relax this.
    public var requireAudio: Bool
    public var requireVideo: Bool
    /// Receive every layer of a simulcast offer (the receiver composes the largest). When
    /// false, or when the offer lacks the rid header extension, simulcast is declined and the
    /// sender keeps only its first encoding.
    public var acceptSimulcast: Bool

    public init(localCredentials: IceCredentials, localFingerprintSHA256: String, candidate: TransportAddress, sessionID: UInt64,
                requireAudio: Bool = true, requireVideo: Bool = true, acceptSimulcast: Bool = true) {
        self.localCredentials = localCredentials
        self.localFingerprintSHA256 = localFingerprintSHA256
        self.candidate = candidate
        self.sessionID = sessionID
        self.requireAudio = requireAudio
        self.requireVideo = requireVideo
        self.acceptSimulcast = acceptSimulcast
    }
}

public enum MediaKind: String, Equatable, Sendable {
    case audio, video
}

/// The codecs this server depacketizes and decodes.
public enum NegotiatedCodecName: String, Equatable, Sendable {
    case h264 = "H264"
    case vp8 = "VP8"
    case opus = "opus"
}

public struct NegotiatedCodec: Equatable, Sendable {
    public var name: NegotiatedCodecName
    public var payloadType: UInt8
    public var clockRate: Int
    public var channels: Int?
    /// The offer's fmtp for this payload type, as written (for H.264 it may carry
    /// sprop-parameter-sets, the out-of-band SPS/PPS).
    public var fmtp: String?
    /// RTCP feedback both sides agreed on: a subset of nack, nack pli, ccm fir, goog-remb.
    public var feedback: [String]

    public var parameters: [String: String] {
        SDPCodec(payloadType: payloadType, name: name.rawValue, clockRate: clockRate, fmtp: fmtp).parameters
    }
}

/// The retransmission payload type (RFC 4588) of the chosen codec.
public struct NegotiatedRTX: Equatable, Sendable {
    public var payloadType: UInt8
    /// `apt=`: the payload type it repairs.
    public var associatedPayloadType: UInt8
    public var clockRate: Int
}

/// An SSRC the offer announced, with its RTX partner from `a=ssrc-group:FID`.
public struct NegotiatedSource: Equatable, Sendable {
    public var ssrc: UInt32
    public var rtxSSRC: UInt32?
    public var cname: String?
}

/// One accepted m-section.
public struct NegotiatedMedia: Equatable, Sendable {
    /// Position of the m-section in the offer (and the answer).
    public var index: Int
    public var mid: String?
    public var kind: MediaKind
    public var codec: NegotiatedCodec
    public var rtx: NegotiatedRTX?
    /// The header extensions we kept (sdes:mid, abs-send-time, abs-capture-time; the rid ones with simulcast)
    /// with the offer's ids.
    public var headerExtensions: [SDPExtmap]
    /// Announced SSRCs (none for simulcast offers and some clients; then the mid header
    /// extension or the payload type identifies the stream).
    public var sources: [NegotiatedSource]
    public var rtcpReducedSize: Bool
    /// The simulcast layers we receive (`a=simulcast:recv`), in the offer's order; empty
    /// without simulcast.
    public var simulcastRids: [String]
    /// rids of a simulcast offer we answered with a single layer.
    public var declinedSimulcastRids: [String]

    /// The id of a kept header extension.
    public func extensionID(_ uri: String) -> Int? {
        headerExtensions.first { $0.uri == uri }?.id
    }
}

/// One m-section answered with port 0.
public struct RejectedMedia: Equatable, Sendable {
    public enum Reason: Equatable, Sendable {
        /// Port 0 in the offer without bundle-only.
        case disabledByOfferer
        /// Not audio or video (e.g. a data channel).
        case unsupportedKind
        /// Not UDP/TLS/RTP/SAVP(F).
        case unsupportedProtocol
        /// recvonly or inactive: the offerer would send nothing.
        case notSending
        case noSupportedCodec
        case noRTCPMux
        /// Outside the offer's BUNDLE group.
        case notBundled
        /// A second audio or video section; we take the first.
        case duplicate
    }

    public var index: Int
    public var mid: String?
    public var kind: String
    public var reason: Reason
}

/// The answer and everything the session needs from the offer.
public struct SDPNegotiation: Equatable, Sendable {
    /// The SDP answer, CRLF line endings.
    public var answer: String
    /// Accepted sections in offer order.
    public var media: [NegotiatedMedia]
    public var rejected: [RejectedMedia]
    /// Mids in our `a=group:BUNDLE`; empty when the offer had no BUNDLE group (single section).
    public var bundleMids: [String]
    public var remoteCredentials: IceCredentials
    /// The fingerprint DTLS checks the peer's certificate against (sha-256 when offered).
    public var remoteFingerprint: SDPFingerprint
    public var remoteFingerprints: [SDPFingerprint]
    /// Our `a=setup`: passive (DTLS server) for actpass/active offers, active for passive ones.
    public var localSetup: SDPSetup

    public var video: NegotiatedMedia? { media.first { $0.kind == .video } }
    public var audio: NegotiatedMedia? { media.first { $0.kind == .audio } }
    /// True when we open the DTLS connection (send the ClientHello).
    public var isDTLSClient: Bool { localSetup == .active }
}

public enum SDPNegotiator {
    /// The RTCP feedback we act on. transport-cc is left out on purpose: we do not send
    /// transport-wide feedback, and offering it would make senders wait for it.
    static let supportedFeedback: Set<String> = ["nack", "nack pli", "ccm fir", "goog-remb"]
    /// abs-capture-time: exact capture times, which libwebrtc's audio SRs are not (`SenderClock`).
    static let supportedExtensions: Set<String> = [SDPExtmap.midURI, SDPExtmap.absSendTimeURI, SDPExtmap.absCaptureTimeURI]
    /// H.264 profile-level-ids in order of preference: constrained baseline 3.1, baseline
    /// 3.1, then constrained high 3.1; any other profile follows in offer order.
    static let preferredH264Profiles = ["42e01f", "42001f", "640c1f"]

    public static func negotiate(offer text: String, options: SDPAnswerOptions) throws(SDPError) -> SDPNegotiation {
        try negotiate(offer: SessionDescription.parse(text), options: options)
    }

    public static func negotiate(offer: SessionDescription, options: SDPAnswerOptions) throws(SDPError) -> SDPNegotiation {
        guard let localFingerprintBytes = SDPFingerprint.parseHex(options.localFingerprintSHA256), localFingerprintBytes.count == 32 else {
            throw .invalidLocalFingerprint(options.localFingerprintSHA256)
        }
        let localFingerprint = SDPFingerprint(algorithm: "sha-256", bytes: localFingerprintBytes)
        let bundle = offer.bundleMids

        var accepted: [NegotiatedMedia] = []
        var rejected: [RejectedMedia] = []
        for (index, section) in offer.media.enumerated() {
            switch evaluate(section, index: index, bundle: bundle, alreadyAccepted: accepted, acceptSimulcast: options.acceptSimulcast) {
            case .accept(let media): accepted.append(media)
            case .reject(let reason): rejected.append(RejectedMedia(index: index, mid: section.mid, kind: section.kind, reason: reason))
            }
        }

        func requireKind(_ kind: MediaKind) throws(SDPError) {
            guard !accepted.contains(where: { $0.kind == kind }) else { return }
            let ofKind = rejected.filter { $0.kind == kind.rawValue }
            if let noMux = ofKind.first(where: { $0.reason == .noRTCPMux }) { throw .missingRTCPMux(mid: noMux.mid) }
            if ofKind.contains(where: { $0.reason == .notBundled }) { throw .missingBundle }
            throw kind == .video ? .noVideoCodec : .noAudioCodec
        }
        if options.requireVideo { try requireKind(.video) }
        if options.requireAudio { try requireKind(.audio) }
        guard let transport = accepted.first.map({ offer.media[$0.index] }) else { throw .noAcceptableMedia }
        // Without BUNDLE every section would need its own ICE/DTLS transport; we run one.
        if bundle == nil, accepted.count > 1 { throw .missingBundle }

        // Transport parameters come from the first accepted section; with BUNDLE they are the
        // same in every section (JSEP), and the first accepted one becomes the BUNDLE tag.
        guard let ufrag = transport.iceUfrag, !ufrag.isEmpty, let pwd = transport.icePwd, !pwd.isEmpty else {
            throw .missingICECredentials
        }
        guard let remoteFingerprint = transport.fingerprints.first(where: { $0.algorithm == "sha-256" }) ?? transport.fingerprints.first else {
            throw .missingFingerprint
        }
        let localSetup: SDPSetup
        switch transport.setup {
        // RFC 4145 §4: no a=setup means active, so we are passive either way.
        case .actpass, .active, nil: localSetup = .passive
        case .passive: localSetup = .active
        case .holdconn: throw .unsupportedSetup(SDPSetup.holdconn.rawValue)
        }

        let acceptedMids = accepted.compactMap(\.mid)
        let bundleMids = bundle.map { group in group.filter { acceptedMids.contains($0) } } ?? []
        let answer = SDPAnswerWriter(offer: offer, options: options, localFingerprint: localFingerprint, localSetup: localSetup,
                                     accepted: accepted, bundleMids: bundleMids).render()
        return SDPNegotiation(answer: answer, media: accepted, rejected: rejected, bundleMids: bundleMids,
                              remoteCredentials: IceCredentials(ufrag: ufrag, pwd: pwd), remoteFingerprint: remoteFingerprint,
                              remoteFingerprints: transport.fingerprints, localSetup: localSetup)
    }

    private enum Verdict {
        case accept(NegotiatedMedia)
        case reject(RejectedMedia.Reason)
    }

    private static func evaluate(_ section: SDPMediaDescription, index: Int, bundle: [String]?, alreadyAccepted: [NegotiatedMedia],
                                 acceptSimulcast: Bool) -> Verdict {
        if section.isDisabled { return .reject(.disabledByOfferer) }
        guard let kind = MediaKind(rawValue: section.kind.lowercased()) else { return .reject(.unsupportedKind) }
        let proto = section.proto.uppercased()
        guard proto == "UDP/TLS/RTP/SAVPF" || proto == "UDP/TLS/RTP/SAVP" else { return .reject(.unsupportedProtocol) }
        guard section.direction.sends else { return .reject(.notSending) }
        let choice = kind == .video ? chooseVideoCodec(section) : chooseAudioCodec(section)
        guard let (codec, rtx) = choice else { return .reject(.noSupportedCodec) }
        guard section.rtcpMux else { return .reject(.noRTCPMux) }
        if let bundle {
            guard let mid = section.mid, bundle.contains(mid) else { return .reject(.notBundled) }
        }
        if alreadyAccepted.contains(where: { $0.kind == kind }) { return .reject(.duplicate) }

        // An extension the offerer only receives (or neither side uses) tells us nothing.
        let sent = section.extmaps.filter { $0.direction.map(\.sends) ?? true }
        let layers = acceptSimulcast && kind == .video ? simulcastLayers(of: section, sentExtensions: sent) : []
        let wanted = layers.isEmpty ? supportedExtensions : supportedExtensions.union(simulcastExtensions)
        let extensions = sent.filter { wanted.contains($0.uri) }
        let declined = section.simulcast != nil && layers.isEmpty ? section.rids.map(\.id) : []
        return .accept(NegotiatedMedia(index: index, mid: section.mid, kind: kind, codec: codec, rtx: rtx,
                                       headerExtensions: extensions, sources: sources(of: section),
                                       rtcpReducedSize: section.rtcpReducedSize, simulcastRids: layers,
                                       declinedSimulcastRids: declined))
    }

    static let simulcastExtensions: Set<String> = [SDPExtmap.ridURI, SDPExtmap.repairedRidURI]

    /// The rids of `a=simulcast:send` (RFC 8853) we can receive: each stream's first
    /// alternative that is not paused (`~`) and has an `a=rid:<id> send`. Layers can only be
    /// told apart with the rid header extension; without it, none.
    static func simulcastLayers(of section: SDPMediaDescription, sentExtensions: [SDPExtmap]) -> [String] {
        guard let value = section.simulcast, sentExtensions.contains(where: { $0.uri == SDPExtmap.ridURI }) else { return [] }
        let declared = Set(section.rids.filter { $0.direction.lowercased() == "send" }.map(\.id))
        let tokens = value.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let send = tokens.firstIndex(where: { $0.lowercased() == "send" }), send + 1 < tokens.count else { return [] }
        // draft-ietf-mmusic-sdp-simulcast-03 (older Firefox) wrote "send rid=a;b".
        var list = tokens[send + 1]
        if list.lowercased().hasPrefix("rid=") { list = list.dropFirst(4) }
        var rids: [String] = []
        for stream in list.split(separator: ";") {
            let chosen = stream.split(separator: ",").first { !$0.hasPrefix("~") && declared.contains(String($0)) }
            if let chosen, !rids.contains(String(chosen)) { rids.append(String(chosen)) }
        }
        return rids
    }

    /// H.264 with packetization-mode=1 (FU-A/STAP-A; mode 0 would forbid fragmentation), the
    /// preferred profiles first; else VP8. VP9, AV1 and H.265 are not decoded here.
    static func chooseVideoCodec(_ section: SDPMediaDescription) -> (NegotiatedCodec, NegotiatedRTX?)? {
        let h264 = section.codecs.filter { $0.isNamed("H264") && $0.clockRate == 90000 && $0.parameters["packetization-mode"] == "1" }
        func rank(_ codec: SDPCodec) -> Int {
            // RFC 6184: no profile-level-id means 42000a (baseline, level 1.0).
            let profile = codec.parameters["profile-level-id"]?.lowercased() ?? "42000a"
            return preferredH264Profiles.firstIndex(of: profile) ?? preferredH264Profiles.count
        }
        // Stable: equal ranks keep the offer's order.
        let best = h264.enumerated().min { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }?.element
        if let best { return negotiated(best, as: .h264, in: section) }
        if let vp8 = section.codecs.first(where: { $0.isNamed("VP8") && $0.clockRate == 90000 }) {
            return negotiated(vp8, as: .vp8, in: section)
        }
        return nil
    }

    /// Opus is always offered as opus/48000/2 (RFC 7587), whatever the real channel count.
    static func chooseAudioCodec(_ section: SDPMediaDescription) -> (NegotiatedCodec, NegotiatedRTX?)? {
        guard let opus = section.codecs.first(where: { $0.isNamed("opus") && $0.clockRate == 48000 && ($0.channels ?? 2) == 2 }) else {
            return nil
        }
        return negotiated(opus, as: .opus, in: section)
    }

    private static func negotiated(_ codec: SDPCodec, as name: NegotiatedCodecName, in section: SDPMediaDescription) -> (NegotiatedCodec, NegotiatedRTX?) {
        // Only feedback the offer lists for this payload type may appear in the answer (RFC 4585 §4.2).
        var feedback: [String] = []
        for value in codec.feedback where supportedFeedback.contains(value) && !feedback.contains(value) {
            feedback.append(value)
        }
        let chosen = NegotiatedCodec(name: name, payloadType: codec.payloadType, clockRate: codec.clockRate,
                                     channels: codec.channels, fmtp: codec.fmtp, feedback: feedback)
        let rtx = section.codecs.first {
            $0.isNamed("rtx") && $0.clockRate == codec.clockRate && $0.parameters["apt"] == String(codec.payloadType)
        }
        return (chosen, rtx.map { NegotiatedRTX(payloadType: $0.payloadType, associatedPayloadType: codec.payloadType, clockRate: $0.clockRate) })
    }

    /// Primary SSRCs with their RTX partners. The second SSRC of a FID or FEC-FR pair is a
    /// repair stream, never a source of its own.
    private static func sources(of section: SDPMediaDescription) -> [NegotiatedSource] {
        var rtxOf: [UInt32: UInt32] = [:]
        var repair = Set<UInt32>()
        for group in section.sourceGroups where group.ssrcs.count == 2 {
            switch group.semantics.uppercased() {
            case "FID":
                rtxOf[group.ssrcs[0]] = group.ssrcs[1]
                repair.insert(group.ssrcs[1])
            case "FEC-FR":
                repair.insert(group.ssrcs[1])
            default:
                break
            }
        }
        return section.sources.filter { !repair.contains($0.ssrc) }.map {
            NegotiatedSource(ssrc: $0.ssrc, rtxSSRC: rtxOf[$0.ssrc], cname: $0.cname)
        }
    }
}

/// Renders the answer text.
private struct SDPAnswerWriter {
    let offer: SessionDescription
    let options: SDPAnswerOptions
    let localFingerprint: SDPFingerprint
    let localSetup: SDPSetup
    let accepted: [NegotiatedMedia]
    let bundleMids: [String]

    func render() -> String {
        var lines = SDPAnswerSession.lines(sessionID: options.sessionID, bundleMids: bundleMids)
        for (index, section) in offer.media.enumerated() {
            if let media = accepted.first(where: { $0.index == index }) {
                lines += acceptedSection(media, offered: section)
            } else {
                lines += rejectedSection(section)
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// JSEP: port 0, one of the offered formats, and the mid so the offerer can match it.
    private func rejectedSection(_ section: SDPMediaDescription) -> [String] {
        var lines = ["m=\(section.kind) 0 \(section.proto) \(section.formats.first ?? "0")", "c=IN IP4 0.0.0.0"]
        if let mid = section.mid { lines.append("a=mid:\(mid)") }
        return lines
    }

    private func acceptedSection(_ media: NegotiatedMedia, offered section: SDPMediaDescription) -> [String] {
        let candidate = options.candidate
        let addressType = candidate.ip.family == .ipv4 ? "IP4" : "IP6"
        var formats = [String(media.codec.payloadType)]
        if let rtx = media.rtx { formats.append(String(rtx.payloadType)) }
        var lines = [
            "m=\(section.kind) \(candidate.port) \(section.proto) \(formats.joined(separator: " "))",
            "c=IN \(addressType) \(candidate.ip)",
        ]
        if let mid = media.mid { lines.append("a=mid:\(mid)") }
        lines += [
            "a=ice-ufrag:\(options.localCredentials.ufrag)",
            "a=ice-pwd:\(options.localCredentials.pwd)",
            "a=fingerprint:\(localFingerprint)",
            "a=setup:\(localSetup.rawValue)",
            "a=recvonly",
            "a=rtcp-mux",
        ]
        if media.rtcpReducedSize { lines.append("a=rtcp-rsize") }
        for extmap in media.headerExtensions {
            // Mirror a directional offer (sendonly → recvonly); plain ones stay plain.
            let direction = extmap.direction.map { "/" + $0.reversed.rawValue } ?? ""
            lines.append("a=extmap:\(extmap.id)\(direction) \(extmap.uri)")
        }

        let codec = media.codec
        let channels = codec.channels.map { "/\($0)" } ?? ""
        let offeredName = section.codec(payloadType: codec.payloadType)?.name ?? codec.name.rawValue
        lines.append("a=rtpmap:\(codec.payloadType) \(offeredName)/\(codec.clockRate)\(channels)")
        for feedback in codec.feedback { lines.append("a=rtcp-fb:\(codec.payloadType) \(feedback)") }
        if let fmtp = Self.answerFmtp(codec.fmtp) { lines.append("a=fmtp:\(codec.payloadType) \(fmtp)") }
        if let rtx = media.rtx {
            lines.append("a=rtpmap:\(rtx.payloadType) rtx/\(rtx.clockRate)")
            let offered = section.codec(payloadType: rtx.payloadType)?.fmtp ?? "apt=\(rtx.associatedPayloadType)"
            lines.append("a=fmtp:\(rtx.payloadType) \(offered)")
        }
        // Simulcast: every layer, each on its own SSRC with the rid header extension. Declined
        // (no a=simulcast / a=rid), a browser keeps only the first encoding of its sender and
        // sends it without rids under an SSRC it did not announce; the mid header extension
        // tells us which section it is.
        if !media.simulcastRids.isEmpty {
            lines += media.simulcastRids.map { "a=rid:\($0) recv" }
            lines.append("a=simulcast:recv " + media.simulcastRids.joined(separator: ";"))
        }
        lines += [
            "a=candidate:1 1 udp 2130706431 \(candidate.ip) \(candidate.port) typ host",
            "a=end-of-candidates",
        ]
        return lines
    }

    /// The offer's fmtp without sprop-* parameters, which describe the offerer's own stream
    /// (its SPS/PPS, its stereo capture) and would claim the same for ours.
    static func answerFmtp(_ fmtp: String?) -> String? {
        guard let fmtp else { return nil }
        let kept = fmtp.split(separator: ";").map { $0.trimmingSDPWhitespace() }
            .filter { !$0.isEmpty && !$0.lowercased().hasPrefix("sprop-") }
        return kept.isEmpty ? nil : kept.joined(separator: ";")
    }
}

/// The session part of every answer we write (WHIP's and WHEP's): ICE-lite (we never send
/// checks; the peer, as the full agent, controls and nominates) and the BUNDLE group.
enum SDPAnswerSession {
    static func lines(sessionID: UInt64, bundleMids: [String]) -> [String] {
        var lines = ["v=0", "o=- \(sessionID & 0x7FFF_FFFF_FFFF_FFFF) 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=ice-lite"]
        if !bundleMids.isEmpty { lines.append("a=group:BUNDLE " + bundleMids.joined(separator: " ")) }
        return lines
    }
}
