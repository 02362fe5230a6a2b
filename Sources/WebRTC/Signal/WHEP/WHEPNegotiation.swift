// WHEP (draft-ietf-wish-whep): a viewer's offer in, our answer out, for sending it one
// composition over the ICE-lite transport WHIP uses. The viewer (Chromium, aiortc, ...) offers
// recvonly audio and video; we send the composition's own H.264 encode, so the choice is the
// offered H.264 payload type whose profile can decode that stream (see `H264ProfileLevelID`),
// and Opus. One video section is required, audio is optional (a video-only player gets video);
// every other section is answered with port 0. Offers are hostile input: size, line, section,
// attribute and format counts are bounded before anything is looked at, and nothing the offer
// says reaches the answer unless it is a number or a checked token.
//
// The result carries what the send side is built from: per track the payload type, SSRC,
// RTX payload type and SSRC, header extension ids and the feedback the viewer will send
// (`RTPSendStreamConfiguration`, `ViewerFeedbackReader`, `SenderReportConfiguration`), and
// what ICE and DTLS need: the viewer's credentials and fingerprint, and our setup role.

/// Our streams as the answer announces them. Fresh per viewer (`random`), so one viewer's
/// SSRCs say nothing about another's.
public struct WHEPLocalStreams: Equatable, Sendable {
    /// The RTCP CNAME of both tracks (what ties audio and video together for lip sync).
    public var cname: String
    /// The msid stream id: both tracks in one MediaStream at the viewer.
    public var streamID: String
    public var audioTrackID: String
    public var videoTrackID: String
    public var audioSSRC: UInt32
    public var videoSSRC: UInt32
    /// Retransmissions of video, when the viewer offers RTX.
    public var videoRTXSSRC: UInt32

    public init(cname: String, streamID: String, audioTrackID: String, videoTrackID: String,
                audioSSRC: UInt32, videoSSRC: UInt32, videoRTXSSRC: UInt32) {
        self.cname = cname
        self.streamID = streamID
        self.audioTrackID = audioTrackID
        self.videoTrackID = videoTrackID
        self.audioSSRC = audioSSRC
        self.videoSSRC = videoSSRC
        self.videoRTXSSRC = videoRTXSSRC
    }

    /// Three distinct non-zero SSRCs and random 16-character names.
    public static func random(using generator: inout some RandomNumberGenerator) -> WHEPLocalStreams {
        func name() -> String {
            String((0..<16).map { _ in IceCredentials.alphabet[Int.random(in: 0..<62, using: &generator)] })
        }
        var ssrcs: [UInt32] = []
        while ssrcs.count < 3 {
            let ssrc = UInt32.random(in: 1...UInt32.max, using: &generator)
            if !ssrcs.contains(ssrc) { ssrcs.append(ssrc) }
        }
        return WHEPLocalStreams(cname: name(), streamID: name(), audioTrackID: name(), videoTrackID: name(),
                                audioSSRC: ssrcs[0], videoSSRC: ssrcs[1], videoRTXSSRC: ssrcs[2])
    }
}

/// Which offered H.264 profiles may carry our stream.
public enum H264ProfileMatching: Equatable, Sendable {
    /// Only a profile whose decoders decode ours (`H264Profile.decodes`), at a level the viewer
    /// takes: RFC 6184 as written.
    case decodable
    /// Also, when none is, any offered H.264 with packetization-mode=1, the answer naming that
    /// offered profile: for viewers that declare fewer profiles than they decode (aiortc offers
    /// Baseline only and decodes everything with FFmpeg). What MediaMTX does for every viewer.
    case anyOffered
}

/// What we say about ourselves in the answer.
public struct WHEPAnswerOptions: Sendable {
    /// Our ICE credentials (the ICE-lite agent's local ones).
    public var localCredentials: IceCredentials
    /// The sha-256 fingerprint of our DTLS certificate, "AB:CD:..." (32 bytes).
    public var localFingerprintSHA256: String
    /// One host candidate each, in order of preference: the addresses of our UDP socket. The
    /// first also gives the m= port and the c= address.
    public var candidates: [TransportAddress]
    /// `o=` session id; the top bit is cleared (JSEP: below 2^63).
    public var sessionID: UInt64
    /// The composition's H.264 stream: bytes 1–3 of its SPS.
    public var videoProfileLevelID: H264ProfileLevelID
    public var profileMatching: H264ProfileMatching
    public var streams: WHEPLocalStreams

    public init(localCredentials: IceCredentials, localFingerprintSHA256: String, candidates: [TransportAddress], sessionID: UInt64,
                videoProfileLevelID: H264ProfileLevelID, profileMatching: H264ProfileMatching = .decodable, streams: WHEPLocalStreams) {
        self.localCredentials = localCredentials
        self.localFingerprintSHA256 = localFingerprintSHA256
        self.candidates = candidates
        self.sessionID = sessionID
        self.videoProfileLevelID = videoProfileLevelID
        self.profileMatching = profileMatching
        self.streams = streams
    }
}

/// RTX as answered: `RTXSendConfiguration(ssrc:payloadType:)`.
public struct WHEPSendRTX: Equatable, Sendable {
    public var payloadType: UInt8
    public var ssrc: UInt32
}

/// How the video payload type was chosen.
public struct WHEPH264Choice: Equatable, Sendable {
    /// The viewer's profile-level-id for the chosen payload type (42e01f when it gave none, as
    /// libwebrtc and aiortc read an absent one).
    public var offered: H264ProfileLevelID
    /// What the answer says: ours when the viewer offered our profile, else the offered
    /// profile with our level (so the viewer finds the decoder it offered).
    public var answered: H264ProfileLevelID
    public var levelAsymmetryAllowed: Bool
    /// False only under `.anyOffered` when no offered profile decodes ours: the viewer must
    /// decode more than it declared (worth a log line and a counter).
    public var declaredDecodable: Bool
}

/// One track we send, as negotiated.
public struct WHEPSendTrack: Equatable, Sendable {
    public var kind: MediaKind
    /// Position of the m-section in the offer (and the answer).
    public var index: Int
    public var mid: String?
    public var payloadType: UInt8
    /// 90 000 for H.264, 48 000 for Opus.
    public var clockRate: Int
    /// 2 for Opus.
    public var channels: Int?
    public var ssrc: UInt32
    public var rtx: WHEPSendRTX?
    /// The RTCP feedback the viewer will send for this track, as answered: a subset of
    /// "nack", "nack pli", "ccm fir", "goog-remb" in the offer's order.
    public var feedback: [String]
    /// The viewer's ids (1–14, so a one-byte header always fits): abs-send-time (for its
    /// bandwidth estimate) and sdes:mid (the mid itself, at most 16 bytes, goes on every packet).
    public var absSendTimeID: UInt8?
    public var midExtensionID: UInt8?
    public var rtcpReducedSize: Bool
    /// The a=fmtp value we answered.
    public var fmtp: String
    /// Video only.
    public var h264: WHEPH264Choice?

    /// NACKs come and are answered (from the send history, on RTX when negotiated).
    public var receivesNACK: Bool { feedback.contains("nack") }
    /// The viewer can ask for a keyframe (PLI or FIR); without either it waits for the next one.
    public var receivesKeyframeRequests: Bool { feedback.contains("nack pli") || feedback.contains("ccm fir") }
}

/// An m-section answered with port 0.
public struct WHEPRejectedSection: Equatable, Sendable {
    public enum Reason: Equatable, Sendable {
        /// Port 0 in the offer without bundle-only.
        case disabledByOfferer
        /// Not audio or video (a data channel, say).
        case unsupportedKind
    }

    public var index: Int
    public var mid: String?
    public var kind: String
    public var reason: Reason
}

/// The answer and what the viewer's session is built from.
public struct WHEPNegotiation: Equatable, Sendable {
    /// The SDP answer, CRLF line endings.
    public var answer: String
    public var video: WHEPSendTrack
    /// Nil when the viewer offered no audio section.
    public var audio: WHEPSendTrack?
    public var rejected: [WHEPRejectedSection]
    /// Mids in our `a=group:BUNDLE`, offer order; empty when the viewer offered no group (one section).
    public var bundleMids: [String]
    public var remoteCredentials: IceCredentials
    /// The fingerprint DTLS checks the viewer's certificate against (sha-256 when offered).
    public var remoteFingerprint: SDPFingerprint
    public var remoteFingerprints: [SDPFingerprint]
    /// Our `a=setup`: passive (DTLS server) for actpass/active offers, active for passive ones.
    public var localSetup: SDPSetup
    /// The CNAME the answer announced (for the sender reports' SDES).
    public var cname: String

    /// True when we open the DTLS connection (send the ClientHello).
    public var isDTLSClient: Bool { localSetup == .active }
    /// Our media SSRCs (RTX excluded), for `ViewerFeedbackReader(mediaSSRCs:)`.
    public var mediaSSRCs: [UInt32] { [video.ssrc] + (audio.map { [$0.ssrc] } ?? []) }
    /// Both tracks in offer order.
    public var tracks: [WHEPSendTrack] { ([video] + (audio.map { [$0] } ?? [])).sorted { $0.index < $1.index } }
}

public enum WHEPNegotiator {
    /// A Chromium recvonly offer is about 6 KB and 200 lines; these leave room for candidates
    /// and future codecs and bound the work per request.
    public static let maximumOfferBytes = 64 * 1024
    public static let maximumLines = 1024
    public static let maximumMediaSections = 16
    public static let maximumAttributesPerSection = 512
    public static let maximumFormatsPerSection = 256
    /// The RTCP feedback we act on (`ViewerFeedbackReader`). transport-cc is left out: we keep
    /// no transport-wide sequence numbers, so the viewer must not wait for them.
    static let supportedFeedback: Set<String> = ["nack", "nack pli", "ccm fir", "goog-remb"]
    /// What libwebrtc and aiortc assume when an H.264 format has no profile-level-id.
    static let defaultProfileLevelID = H264ProfileLevelID(profileIDC: 0x42, constraintFlags: 0xE0, levelIDC: 0x1F)
    static let opusFmtp = "minptime=10;useinbandfec=1;stereo=1;sprop-stereo=1"
    /// Echoed tokens (kinds, protocols, formats, mids) and our own names stay this short.
    static let maximumTokenLength = 64

    public static func negotiate(offer text: String, options: WHEPAnswerOptions) throws(WHEPOfferError) -> WHEPNegotiation {
        let localFingerprint = try validate(options)
        let offer = try parseBounded(text)
        // Two lite agents both wait for checks that never come.
        guard !offer.iceLite else { throw .viewerIsICELite }

        // Sections we could serve: audio and video not turned off by the offerer.
        var live: [MediaKind: [Int]] = [:]
        var rejected: [WHEPRejectedSection] = []
        for (index, section) in offer.media.enumerated() {
            if section.isDisabled {
                rejected.append(WHEPRejectedSection(index: index, mid: section.mid, kind: section.kind, reason: .disabledByOfferer))
            } else if let kind = MediaKind(rawValue: section.kind.lowercased()) {
                live[kind, default: []].append(index)
            } else {
                rejected.append(WHEPRejectedSection(index: index, mid: section.mid, kind: section.kind, reason: .unsupportedKind))
            }
        }
        for kind in [MediaKind.video, .audio] where live[kind, default: []].count > 1 {
            throw .multipleSections(kind: kind, count: live[kind, default: []].count)
        }
        guard let videoIndex = live[.video]?.first else { throw .noVideo }
        let streams = options.streams

        // Each served section in the offer's order, so the first problem named is the first in the offer.
        var video: WHEPSendTrack?, audio: WHEPSendTrack?
        for index in ([videoIndex] + (live[.audio] ?? [])).sorted() {
            let section = offer.media[index]
            if index == videoIndex {
                var track = try track(section, index: index, kind: .video, ssrc: streams.videoSSRC)
                let h264 = try chooseH264(section, ours: options.videoProfileLevelID, matching: options.profileMatching)
                track.payloadType = h264.codec.payloadType
                track.clockRate = h264.codec.clockRate
                track.feedback = feedback(h264.codec)
                track.rtx = section.codecs.first {
                    $0.isNamed("rtx") && $0.clockRate == h264.codec.clockRate && $0.parameters["apt"] == String(h264.codec.payloadType)
                }.map { WHEPSendRTX(payloadType: $0.payloadType, ssrc: streams.videoRTXSSRC) }
                track.fmtp = (h264.choice.levelAsymmetryAllowed ? "level-asymmetry-allowed=1;" : "")
                    + "packetization-mode=1;profile-level-id=\(h264.choice.answered)"
                track.h264 = h264.choice
                video = track
            } else {
                var track = try track(section, index: index, kind: .audio, ssrc: streams.audioSSRC)
                // RFC 7587: always opus/48000/2, whatever is sent.
                guard let opus = section.codecs.first(where: { $0.isNamed("opus") && $0.clockRate == 48000 && ($0.channels ?? 2) == 2 }) else {
                    throw .noOpus(mid: section.mid)
                }
                track.payloadType = opus.payloadType
                track.clockRate = 48000
                track.channels = 2
                track.feedback = feedback(opus)
                track.fmtp = opusFmtp
                audio = track
            }
        }
        guard let video else { throw .noVideo }

        // One transport: with two sections, both must be in the offer's BUNDLE group.
        let served = [video] + (audio.map { [$0] } ?? [])
        let bundle = offer.bundleMids
        if served.count > 1 {
            guard let bundle, served.allSatisfy({ $0.mid.map(bundle.contains) ?? false }) else { throw .sdp(.missingBundle) }
        }
        let bundleMids = bundle.map { group in group.filter { mid in served.contains { $0.mid == mid } } } ?? []

        // Transport parameters of the first served section (with BUNDLE, the same in each).
        let transport = offer.media[served.map(\.index).min() ?? videoIndex]
        guard let ufrag = transport.iceUfrag, let pwd = transport.icePwd, (1...256).contains(ufrag.utf8.count),
              (1...256).contains(pwd.utf8.count) else { throw .sdp(.missingICECredentials) }
        guard let remoteFingerprint = transport.fingerprints.first(where: { $0.algorithm == "sha-256" }) ?? transport.fingerprints.first else {
            throw .sdp(.missingFingerprint)
        }
        let localSetup: SDPSetup
        switch transport.setup {
        // RFC 4145 §4: no a=setup means active. Passive, we wait for the viewer's ClientHello,
        // which comes once its ICE checks (which we only answer, being lite) have found a path.
        case .actpass, .active, nil: localSetup = .passive
        case .passive: localSetup = .active
        case .holdconn: throw .sdp(.unsupportedSetup(SDPSetup.holdconn.rawValue))
        }

        var negotiation = WHEPNegotiation(answer: "", video: video, audio: audio, rejected: rejected, bundleMids: bundleMids,
                                          remoteCredentials: IceCredentials(ufrag: ufrag, pwd: pwd), remoteFingerprint: remoteFingerprint,
                                          remoteFingerprints: transport.fingerprints, localSetup: localSetup, cname: streams.cname)
        negotiation.answer = WHEPAnswerWriter(offer: offer, options: options, localFingerprint: localFingerprint,
                                              negotiation: negotiation).render()
        return negotiation
    }

    // MARK: Bounds and checks

    /// Our own parameters; returns our fingerprint.
    private static func validate(_ options: WHEPAnswerOptions) throws(WHEPOfferError) -> SDPFingerprint {
        guard let bytes = SDPFingerprint.parseHex(options.localFingerprintSHA256), bytes.count == 32 else {
            throw .sdp(.invalidLocalFingerprint(options.localFingerprintSHA256))
        }
        guard options.localCredentials.isValidForSDP else { throw .invalidLocalParameters("ICE credentials") }
        guard !options.candidates.isEmpty, options.candidates.count <= 8,
              options.candidates.allSatisfy({ $0.port != 0 && $0.ip.bytes.contains { $0 != 0 } }) else {
            throw .invalidLocalParameters("candidates \(options.candidates)")
        }
        let streams = options.streams
        guard Set([streams.audioSSRC, streams.videoSSRC, streams.videoRTXSSRC]).count == 3 else {
            throw .invalidLocalParameters("SSRCs must differ")
        }
        for name in [streams.cname, streams.streamID, streams.audioTrackID, streams.videoTrackID] where !isToken(name) {
            throw .invalidLocalParameters("cname and msid ids must be SDP tokens")
        }
        let ours = options.videoProfileLevelID
        guard ours.profile != nil, ours.level != nil else { throw .invalidLocalParameters("H.264 profile-level-id \(ours)") }
        return SDPFingerprint(algorithm: "sha-256", bytes: bytes)
    }

    /// Parses within the limits, and checks every section's size and the tokens we would echo.
    private static func parseBounded(_ text: String) throws(WHEPOfferError) -> SessionDescription {
        let bytes = text.utf8.count
        guard bytes <= maximumOfferBytes else { throw .sdp(.tooLarge(bytes: bytes, limit: maximumOfferBytes)) }
        var lines = 0
        for byte in text.utf8 where byte == UInt8(ascii: "\n") { lines += 1 }
        if let last = text.utf8.last, last != UInt8(ascii: "\n") { lines += 1 }
        guard lines <= maximumLines else { throw .tooManyLines(count: lines, limit: maximumLines) }
        let offer: SessionDescription
        do {
            offer = try SessionDescription.parse(text)
        } catch {
            throw .sdp(error)
        }
        guard offer.media.count <= maximumMediaSections else {
            throw .tooManyMediaSections(count: offer.media.count, limit: maximumMediaSections)
        }
        var mids = Set<String>()
        for (index, section) in offer.media.enumerated() {
            guard section.attributes.count <= maximumAttributesPerSection else {
                throw .tooManyAttributes(index: index, count: section.attributes.count, limit: maximumAttributesPerSection)
            }
            guard section.formats.count <= maximumFormatsPerSection else {
                throw .tooManyFormats(index: index, count: section.formats.count, limit: maximumFormatsPerSection)
            }
            guard isVisible(section.kind), isVisible(section.proto), section.formats.first.map(isVisible) ?? true,
                  section.mid.map(isToken) ?? true else { throw .unreadableSection(index: index) }
            if let mid = section.mid, !mids.insert(mid).inserted { throw .duplicateMid(mid) }
        }
        return offer
    }

    /// 1–64 visible ASCII characters, no space: safe to write back into an SDP line.
    static func isVisible(_ text: String) -> Bool {
        (1...maximumTokenLength).contains(text.utf8.count) && text.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// RFC 8866 token (what a mid, a cname or an msid id is).
    static func isToken(_ text: String) -> Bool {
        isVisible(text) && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): true
            default: Array("!#$%&'*+-.^_`{|}~".utf8).contains(byte)
            }
        }
    }

    // MARK: Sections and codecs

    /// A served section's checks and everything but the codec.
    private static func track(_ section: SDPMediaDescription, index: Int, kind: MediaKind, ssrc: UInt32) throws(WHEPOfferError) -> WHEPSendTrack {
        let proto = section.proto.uppercased()
        guard proto == "UDP/TLS/RTP/SAVPF" || proto == "UDP/TLS/RTP/SAVP" else {
            throw .unsupportedProtocol(mid: section.mid, proto: section.proto)
        }
        guard section.direction == .recvonly || section.direction == .sendrecv else {
            throw .unsupportedDirection(mid: section.mid, kind: kind, direction: section.direction)
        }
        guard section.rtcpMux else { throw .sdp(.missingRTCPMux(mid: section.mid)) }

        // Extensions the viewer receives (no direction, sendrecv or recvonly), ids that fit a
        // one-byte header, each id once.
        var absSendTimeID: UInt8?, midExtensionID: UInt8?
        var used = Set<Int>()
        for extmap in section.extmaps where (1...14).contains(extmap.id) && !used.contains(extmap.id)
            && (extmap.direction == nil || extmap.direction == .sendrecv || extmap.direction == .recvonly) {
            if extmap.uri == SDPExtmap.absSendTimeURI, absSendTimeID == nil {
                absSendTimeID = UInt8(extmap.id)
                used.insert(extmap.id)
            } else if extmap.uri == SDPExtmap.midURI, midExtensionID == nil, let mid = section.mid, mid.utf8.count <= 16 {
                midExtensionID = UInt8(extmap.id)
                used.insert(extmap.id)
            }
        }
        return WHEPSendTrack(kind: kind, index: index, mid: section.mid, payloadType: 0, clockRate: 0, channels: nil, ssrc: ssrc, rtx: nil,
                             feedback: [], absSendTimeID: absSendTimeID, midExtensionID: midExtensionID,
                             rtcpReducedSize: section.rtcpReducedSize, fmtp: "", h264: nil)
    }

    /// Feedback the offer lists for this payload type that we act on (RFC 4585 §4.2: the answer may only keep offered ones).
    private static func feedback(_ codec: SDPCodec) -> [String] {
        var kept: [String] = []
        for value in codec.feedback where supportedFeedback.contains(value) && !kept.contains(value) { kept.append(value) }
        return kept
    }

    /// The offered H.264 payload type for our stream: packetization-mode=1; a profile whose
    /// decoders decode ours at a level the viewer takes (level-asymmetry-allowed, or at least
    /// ours); our own profile first, then the nearest larger one, then the offer's order.
    /// Under `.anyOffered`, failing all that, the first offered with a profile the viewer knows.
    static func chooseH264(_ section: SDPMediaDescription, ours: H264ProfileLevelID,
                           matching: H264ProfileMatching) throws(WHEPOfferError) -> (codec: SDPCodec, choice: WHEPH264Choice) {
        let h264 = section.codecs.filter { $0.isNamed("H264") && $0.clockRate == 90000 }
        guard !h264.isEmpty else { throw .noH264(mid: section.mid) }
        let modeOne = h264.filter { $0.parameters["packetization-mode"] == "1" }
        guard !modeOne.isEmpty else { throw .noH264PacketizationMode1(mid: section.mid) }
        guard let ourProfile = ours.profile, let ourLevel = ours.level else {
            throw .invalidLocalParameters("H.264 profile-level-id \(ours)")
        }

        var best: (rank: Int, codec: SDPCodec, choice: WHEPH264Choice)?
        var offered: [String] = []
        for codec in modeOne {
            let parameters = codec.parameters
            let profileLevelID: H264ProfileLevelID? = if let text = parameters["profile-level-id"] {
                H264ProfileLevelID(text)
            } else {
                defaultProfileLevelID
            }
            if offered.count < 8 { offered.append(profileLevelID?.description ?? "unreadable") }
            guard let profileLevelID, let profile = profileLevelID.profile, let level = profileLevelID.level else { continue }
            let asymmetry = parameters["level-asymmetry-allowed"] == "1"
            let decodable = profile.decodes(ourProfile) && (asymmetry || level >= ourLevel)
            let rank: Int
            if decodable {
                rank = profile == ourProfile ? 0 : 1 + profile.rawValue
            } else if matching == .anyOffered {
                rank = 100  // the viewer's own order
            } else {
                continue
            }
            if let best, best.rank <= rank { continue }
            let choice = WHEPH264Choice(offered: profileLevelID, answered: answered(offered: profileLevelID, ours: ours),
                                        levelAsymmetryAllowed: asymmetry, declaredDecodable: decodable)
            best = (rank, codec, choice)
        }
        guard let best else { throw .noCompatibleH264Profile(mid: section.mid, ours: ours, offered: offered) }
        return (best.codec, best.choice)
    }

    /// Our profile-level-id when the viewer offered our profile; else the offered profile's
    /// bytes with our level, so its profile (what picks the decoder) is one the viewer offered.
    static func answered(offered: H264ProfileLevelID, ours: H264ProfileLevelID) -> H264ProfileLevelID {
        guard let offeredProfile = offered.profile, let ourLevel = ours.level else { return ours }
        // x264 writes level 1b of the High profiles as level_idc 9, which receivers do not parse.
        if offeredProfile == ours.profile, ours.levelIDC != 9 { return ours }
        var flags = offered.constraintFlags & ~0x10
        // 1b is level_idc 11 with constraint_set3 in (Constrained) Baseline and Main; the High
        // profiles have no such flag, and 1.1 decoders decode 1b.
        if ourLevel.isLevel1b, offeredProfile <= .main { flags |= 0x10 }
        return H264ProfileLevelID(profileIDC: offered.profileIDC, constraintFlags: flags, levelIDC: ourLevel.levelIDC)
    }
}
