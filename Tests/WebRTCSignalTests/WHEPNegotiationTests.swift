// WHEP answers to real viewers' offers (Chromium, aiortc): which H.264 payload type carries
// the composition's profile, RTX, feedback, extensions, our SSRCs, the answer text itself;
// and the offers a WHEP endpoint refuses with 400, each naming why.
import TestSupport
import Testing
@testable import WebRTCSignal

private let ourFingerprint = "D7:96:48:E8:56:E8:F9:A2:F5:8C:95:F0:CE:4B:39:C1:5B:FF:AD:5C:2D:FB:8B:B8:20:B6:11:9C:BA:8F:F8:87"
private let ourCredentials = IceCredentials(ufrag: "srvA1b2C", pwd: "ServerPwd0123456789abcde")
let whepTestStreams = WHEPLocalStreams(cname: "compositionCname", streamID: "composition", audioTrackID: "mix", videoTrackID: "canvas",
                                       audioSSRC: 1001, videoSSRC: 2002, videoRTXSSRC: 3003)

/// libx264's SPS bytes 1–3: `-profile baseline` (Constrained Baseline), main, high; 1080p is level 4.
enum Compositions {
    static let constrainedBaseline31 = H264ProfileLevelID("42c01f")!
    static let main40 = H264ProfileLevelID("4d4028")!
    static let high40 = H264ProfileLevelID("640028")!
}

func whepOptions(_ profile: H264ProfileLevelID = Compositions.main40, matching: H264ProfileMatching = .decodable,
                 candidates: [TransportAddress] = [.v4(203, 0, 113, 10, port: 8443)]) -> WHEPAnswerOptions {
    WHEPAnswerOptions(localCredentials: ourCredentials, localFingerprintSHA256: ourFingerprint, candidates: candidates,
                      sessionID: 0x8123_4567_89AB_CDEF, videoProfileLevelID: profile, profileMatching: matching, streams: whepTestStreams)
}

private func negotiate(_ offer: String, _ options: WHEPAnswerOptions = whepOptions()) throws(WHEPOfferError) -> WHEPNegotiation {
    let result = try WHEPNegotiator.negotiate(offer: offer, options: options)
    let problems = WHEPAnswerCheck.problems(result, offer: offer, options: options)
    #expect(problems.isEmpty, "\(problems)\n\(result.answer)")
    return result
}

/// The answer's lines of one m-section (from its m= line to the next).
private func answerSection(_ answer: String, _ index: Int) -> [String] {
    var sections: [[String]] = []
    for line in answer.sdpLines {
        if line.hasPrefix("m=") { sections.append([]) }
        if !sections.isEmpty { sections[sections.count - 1].append(line) }
    }
    return index < sections.count ? sections[index] : []
}

/// A small viewer offer: Opus (PT 111, mid a) and video (mid v) with one H.264 payload type per
/// fmtp (PT 96, 98, ... each with an RTX PT one above), BUNDLE, rtcp-mux, recvonly.
func viewerOffer(h264 fmtps: [String], audio: Bool = true, videoLines: [String] = []) -> String {
    var lines = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", audio ? "a=group:BUNDLE a v" : "a=group:BUNDLE v"]
    let transport = ["a=ice-ufrag:vwr1", "a=ice-pwd:viewerpasswordviewerpwd", "a=fingerprint:sha-256 " + ourFingerprint, "a=setup:actpass"]
    if audio {
        lines += ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:a"] + transport
            + ["a=recvonly", "a=rtcp-mux", "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1"]
    }
    let pts = fmtps.indices.flatMap { [String(96 + 2 * $0), String(97 + 2 * $0)] }
    lines += ["m=video 9 UDP/TLS/RTP/SAVPF " + pts.joined(separator: " "), "c=IN IP4 0.0.0.0", "a=mid:v"] + transport
        + ["a=recvonly", "a=rtcp-mux"] + videoLines
    for (index, fmtp) in fmtps.enumerated() {
        let pt = 96 + 2 * index
        lines += ["a=rtpmap:\(pt) H264/90000", "a=rtcp-fb:\(pt) nack", "a=rtcp-fb:\(pt) nack pli", "a=fmtp:\(pt) \(fmtp)",
                  "a=rtpmap:\(pt + 1) rtx/90000", "a=fmtp:\(pt + 1) apt=\(pt)"]
    }
    return lines.joined(separator: "\r\n") + "\r\n"
}

struct WHEPNegotiationTests {
    @Test("Chromium, Main composition: the whole answer, exactly (PT 116 = 4d001f mode 1, its RTX, our SSRCs, passive)")
    func chromiumExact() throws {
        let result = try negotiate(Offers.chromiumWHEP)
        let expected = """
            v=0
            o=- 81985529216486895 2 IN IP4 127.0.0.1
            s=-
            t=0 0
            a=ice-lite
            a=group:BUNDLE 0 1
            m=audio 8443 UDP/TLS/RTP/SAVPF 111
            c=IN IP4 203.0.113.10
            a=mid:0
            a=ice-ufrag:srvA1b2C
            a=ice-pwd:ServerPwd0123456789abcde
            a=fingerprint:sha-256 \(ourFingerprint)
            a=setup:passive
            a=sendonly
            a=rtcp-mux
            a=rtcp-rsize
            a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
            a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
            a=msid:composition mix
            a=rtpmap:111 opus/48000/2
            a=fmtp:111 minptime=10;useinbandfec=1;stereo=1;sprop-stereo=1
            a=ssrc:1001 cname:compositionCname
            a=ssrc:1001 msid:composition mix
            a=candidate:1 1 udp 2130706431 203.0.113.10 8443 typ host
            a=end-of-candidates
            m=video 8443 UDP/TLS/RTP/SAVPF 116 117
            c=IN IP4 203.0.113.10
            a=mid:1
            a=ice-ufrag:srvA1b2C
            a=ice-pwd:ServerPwd0123456789abcde
            a=fingerprint:sha-256 \(ourFingerprint)
            a=setup:passive
            a=sendonly
            a=rtcp-mux
            a=rtcp-rsize
            a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
            a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
            a=msid:composition canvas
            a=rtpmap:116 H264/90000
            a=rtcp-fb:116 goog-remb
            a=rtcp-fb:116 ccm fir
            a=rtcp-fb:116 nack
            a=rtcp-fb:116 nack pli
            a=fmtp:116 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d4028
            a=rtpmap:117 rtx/90000
            a=fmtp:117 apt=116
            a=ssrc-group:FID 2002 3003
            a=ssrc:2002 cname:compositionCname
            a=ssrc:2002 msid:composition canvas
            a=ssrc:3003 cname:compositionCname
            a=ssrc:3003 msid:composition canvas
            a=candidate:1 1 udp 2130706431 203.0.113.10 8443 typ host
            a=end-of-candidates
            """
        #expect(result.answer == crlf(expected))
    }

    @Test("Chromium, Main composition: the negotiated values the send side is built from")
    func chromiumNegotiated() throws {
        let result = try negotiate(Offers.chromiumWHEP)
        let video = result.video
        #expect(video.index == 1 && video.mid == "1" && video.kind == .video)
        #expect(video.payloadType == 116 && video.clockRate == 90000 && video.channels == nil)
        #expect(video.ssrc == 2002 && video.rtx == WHEPSendRTX(payloadType: 117, ssrc: 3003))
        #expect(video.feedback == ["goog-remb", "ccm fir", "nack", "nack pli"])
        #expect(video.receivesNACK && video.receivesKeyframeRequests)
        #expect(video.absSendTimeID == 2 && video.midExtensionID == 4 && video.rtcpReducedSize)
        #expect(video.h264 == WHEPH264Choice(offered: H264ProfileLevelID("4d001f")!, answered: Compositions.main40,
                                             levelAsymmetryAllowed: true, declaredDecodable: true))

        let audio = try #require(result.audio)
        #expect(audio.index == 0 && audio.mid == "0" && audio.payloadType == 111 && audio.clockRate == 48000 && audio.channels == 2)
        #expect(audio.ssrc == 1001 && audio.rtx == nil)
        #expect(audio.feedback == [], "Chromium offers only transport-cc for Opus")
        #expect(!audio.receivesNACK && !audio.receivesKeyframeRequests)
        #expect(audio.absSendTimeID == 2 && audio.midExtensionID == 4)

        #expect(result.tracks.map(\.kind) == [.audio, .video])
        #expect(result.mediaSSRCs == [2002, 1001])
        #expect(result.cname == "compositionCname")
        #expect(result.bundleMids == ["0", "1"] && result.rejected.isEmpty)
        #expect(result.remoteCredentials == IceCredentials(ufrag: "EBD5", pwd: "hyUe+Ef7pEC6xKPeBFurepQM"))
        #expect(result.remoteFingerprint.hex == "34:37:79:13:87:A8:78:5F:5F:F9:4A:9E:51:7A:31:55:AD:58:FC:C5:C1:E2:28:AA:4D:DB:7B:B4:42:90:D7:E6")
        #expect(result.localSetup == .passive && !result.isDTLSClient)
    }

    @Test("Chromium: each composition profile gets the payload type a decoder of it is behind",
          arguments: [
              // x264 -profile baseline: Constrained Baseline, so 42e01f (108), not Baseline 42001f (102).
              ("42c01f", 108, 109, "42c01f"),
              ("42c028", 108, 109, "42c028"),
              ("4d4028", 116, 117, "4d4028"),
              // Chromium 156 offers no High: High 4:4:4 Predictive decoders decode it; the answer names f4.
              ("640028", 41, 42, "f40028"),
              ("640c28", 41, 42, "f40028"),
              ("f4001f", 41, 42, "f4001f"),
              // Baseline proper (FMO, ASO) only by a Baseline decoder.
              ("42001f", 102, 103, "42001f"),
          ])
    func chromiumProfiles(ours: String, payloadType: Int, rtx: Int, answered: String) throws {
        let result = try negotiate(Offers.chromiumWHEP, whepOptions(H264ProfileLevelID(ours)!))
        #expect(result.video.payloadType == UInt8(payloadType))
        #expect(result.video.rtx?.payloadType == UInt8(rtx))
        #expect(result.video.h264?.answered.description == answered)
        #expect(answerSection(result.answer, 1).contains("a=fmtp:\(payloadType) level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=\(answered)"))
    }

    @Test("aiortc, Constrained Baseline composition: 42e01f with RTX, sha-256 of three fingerprints, no rtcp-rsize")
    func aiortc() throws {
        let result = try negotiate(Offers.aiortcWHEP, whepOptions(Compositions.constrainedBaseline31))
        let video = result.video
        #expect(video.payloadType == 101 && video.rtx == WHEPSendRTX(payloadType: 102, ssrc: 3003))
        #expect(video.feedback == ["nack", "nack pli", "goog-remb"])
        #expect(video.absSendTimeID == 3 && video.midExtensionID == 1 && !video.rtcpReducedSize)
        #expect(video.h264?.answered == Compositions.constrainedBaseline31)
        let audio = try #require(result.audio)
        #expect(audio.payloadType == 96 && audio.midExtensionID == 1 && audio.absSendTimeID == nil)
        #expect(result.remoteCredentials == IceCredentials(ufrag: "cvdc", pwd: "T2f71lppnGJ76riyDkw7VB"))
        #expect(result.remoteFingerprint.algorithm == "sha-256" && result.remoteFingerprints.count == 3)
        #expect(!result.answer.contains("a=rtcp-rsize"))
        #expect(answerSection(result.answer, 1).contains("a=fmtp:101 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42c01f"))
    }

    @Test("aiortc declares only Baseline profiles: a Main composition is refused, unless any offered profile may carry it")
    func aiortcMain() throws {
        #expect(throws: WHEPOfferError.noCompatibleH264Profile(mid: "1", ours: Compositions.main40, offered: ["42001f", "42e01f"])) {
            try negotiate(Offers.aiortcWHEP, whepOptions(Compositions.main40))
        }
        let result = try negotiate(Offers.aiortcWHEP, whepOptions(Compositions.main40, matching: .anyOffered))
        // The viewer's first H.264; the answer names its profile (Baseline) with our level, so aiortc finds its codec.
        #expect(result.video.payloadType == 99 && result.video.rtx?.payloadType == 100)
        #expect(result.video.h264 == WHEPH264Choice(offered: H264ProfileLevelID("42001f")!, answered: H264ProfileLevelID("420028")!,
                                                    levelAsymmetryAllowed: true, declaredDecodable: false))
        // A decodable profile still wins over the fallback.
        let decodable = try negotiate(Offers.chromiumWHEP, whepOptions(Compositions.main40, matching: .anyOffered))
        #expect(decodable.video.payloadType == 116 && decodable.video.h264?.declaredDecodable == true)
    }

    @Test("payload type choice: packetization-mode 1 only, our profile before a larger one, levels, the offer's order",
          arguments: [
              // Mode 0 first in the offer is skipped.
              (["level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=4d001f",
                "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f"], "4d4028", 98),
              // Same profile before a superset, wherever it is.
              (["level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=64001f",
                "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f"], "4d4028", 98),
              // The nearest superset: High before High 4:4:4 Predictive.
              (["level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=f4001f",
                "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=64001f"], "4d4028", 98),
              // Without level-asymmetry-allowed the offered level must reach ours: 3.1 does not, 4 does.
              (["packetization-mode=1;profile-level-id=4d001f", "packetization-mode=1;profile-level-id=4d0028"], "4d4028", 98),
              (["packetization-mode=1;profile-level-id=4d0029", "packetization-mode=1;profile-level-id=4d0028"], "4d4028", 96),
              // ... or a superset at a high enough level.
              (["packetization-mode=1;profile-level-id=4d001f", "packetization-mode=1;profile-level-id=640032"], "4d4028", 98),
              // Equal ranks: the first offered.
              (["level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
                "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42c01f"], "42c01f", 96),
              // No profile-level-id: read as 42e01f (libwebrtc, aiortc), Constrained Baseline 3.1.
              (["packetization-mode=1"], "42c01f", 96),
              (["packetization-mode=1", "packetization-mode=1;profile-level-id=420028"], "42c028", 98),
              // Unreadable or unknown profile-level-ids are never chosen.
              (["packetization-mode=1;profile-level-id=zz", "packetization-mode=1;profile-level-id=6e001f",
                "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"], "42c01f", 100),
              // Case and spacing of the fmtp do not matter.
              (["PACKETIZATION-MODE=1 ; Profile-Level-Id=4D001F ; level-asymmetry-allowed=1"], "4d4028", 96),
          ])
    func payloadTypeChoice(fmtps: [String], ours: String, payloadType: Int) throws {
        let result = try negotiate(viewerOffer(h264: fmtps), whepOptions(H264ProfileLevelID(ours)!))
        #expect(result.video.payloadType == UInt8(payloadType))
        #expect(result.video.rtx?.payloadType == UInt8(payloadType + 1))
    }

    @Test("no H.264 profile or level that takes ours: refused, listing what was offered",
          arguments: [
              (["packetization-mode=1;profile-level-id=42e01f"], "4d4028", ["42e01f"]),
              (["packetization-mode=1;profile-level-id=4d001f"], "4d4028", ["4d001f"]),
              (["level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f"], "640028", ["4d001f"]),
              (["level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640c1f"], "640028", ["640c1f"]),
              (["level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"], "42001f", ["42e01f"]),
              (["packetization-mode=1;profile-level-id=bogus", "packetization-mode=1"], "4d4028", ["unreadable", "42e01f"]),
          ])
    func noCompatibleProfile(fmtps: [String], ours: String, offered: [String]) {
        let profile = H264ProfileLevelID(ours)!
        #expect(throws: WHEPOfferError.noCompatibleH264Profile(mid: "v", ours: profile, offered: offered)) {
            try negotiate(viewerOffer(h264: fmtps), whepOptions(profile))
        }
    }

    @Test("Chromium without H.264, or with packetization-mode 0 only: refused, naming it")
    func noH264() {
        let withoutH264 = Offers.chromiumWHEP.replacingOccurrences(of: "H264/90000", with: "H265/90000")
        #expect(throws: WHEPOfferError.noH264(mid: "1")) { try negotiate(withoutH264) }
        let modeZero = Offers.chromiumWHEP.replacingOccurrences(of: "packetization-mode=1", with: "packetization-mode=0")
        #expect(throws: WHEPOfferError.noH264PacketizationMode1(mid: "1")) { try negotiate(modeZero) }
        let noMode = viewerOffer(h264: ["profile-level-id=42e01f"])
        #expect(throws: WHEPOfferError.noH264PacketizationMode1(mid: "v")) { try negotiate(noMode) }
        #expect(WHEPOfferError.noH264(mid: "1").description == "video m-section 1 offers no H.264, the only video codec this server sends")
        #expect(WHEPOfferError.noH264PacketizationMode1(mid: "1").description
                == "video m-section 1 offers H.264 only with packetization-mode=0; packetization-mode=1 is required")
    }

    @Test("no audio section: a video-only answer; an audio section turned off (port 0) is rejected and video served")
    func videoOnly() throws {
        let offer = viewerOffer(h264: ["packetization-mode=1;profile-level-id=4d001f;level-asymmetry-allowed=1"], audio: false)
        let result = try negotiate(offer)
        #expect(result.audio == nil && result.tracks.count == 1 && result.mediaSSRCs == [2002])
        #expect(result.bundleMids == ["v"])
        #expect(!result.answer.contains("m=audio"))

        let audioOff = Offers.chromiumWHEP.replacingOccurrences(of: "m=audio 9 ", with: "m=audio 0 ")
        let off = try negotiate(audioOff)
        #expect(off.audio == nil)
        #expect(off.rejected == [WHEPRejectedSection(index: 0, mid: "0", kind: "audio", reason: .disabledByOfferer)])
        #expect(off.bundleMids == ["1"])
        #expect(answerSection(off.answer, 0) == ["m=audio 0 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:0"])

        // A single section needs no BUNDLE group.
        let unbundled = try negotiate(offer.removingLines(containing: "a=group:BUNDLE"))
        #expect(unbundled.bundleMids == [] && !unbundled.answer.contains("a=group"))
    }

    @Test("a data channel is answered with port 0 and its mid, and left out of BUNDLE")
    func dataChannel() throws {
        let offer = Offers.chromiumWHEP.replacingOccurrences(of: "a=group:BUNDLE 0 1", with: "a=group:BUNDLE 0 1 2") + crlf("""
            m=application 9 UDP/DTLS/SCTP webrtc-datachannel
            c=IN IP4 0.0.0.0
            a=ice-ufrag:EBD5
            a=ice-pwd:hyUe+Ef7pEC6xKPeBFurepQM
            a=mid:2
            a=sctp-port:5000
            a=max-message-size:262144
            """)
        let result = try negotiate(offer)
        #expect(result.rejected == [WHEPRejectedSection(index: 2, mid: "2", kind: "application", reason: .unsupportedKind)])
        #expect(result.bundleMids == ["0", "1"])
        #expect(answerSection(result.answer, 2) == ["m=application 0 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0", "a=mid:2"])
    }

    @Test("sendrecv viewers are answered sendonly; sendonly and inactive sections are refused")
    func directions() throws {
        let sendrecv = try negotiate(Offers.chromiumWHEP.replacingOccurrences(of: "a=recvonly", with: "a=sendrecv"))
        #expect(answerSection(sendrecv.answer, 0).contains("a=sendonly") && answerSection(sendrecv.answer, 1).contains("a=sendonly"))
        let session = try negotiate(Offers.aiortcWHEP.removingLines(containing: "a=recvonly")
            .replacingOccurrences(of: "a=msid-semantic:WMS *", with: "a=msid-semantic:WMS *\r\na=recvonly"),
                                    whepOptions(Compositions.constrainedBaseline31))
        #expect(session.video.payloadType == 101, "a session-level direction applies to every section")

        let videoSection = Offers.chromiumWHEP.range(of: "m=video")!.lowerBound
        func videoDirection(_ direction: String) -> String {
            Offers.chromiumWHEP.replacingOccurrences(of: "a=recvonly", with: "a=\(direction)", range: videoSection..<Offers.chromiumWHEP.endIndex)
        }
        #expect(throws: WHEPOfferError.unsupportedDirection(mid: "1", kind: .video, direction: .sendonly)) { try negotiate(videoDirection("sendonly")) }
        #expect(throws: WHEPOfferError.unsupportedDirection(mid: "1", kind: .video, direction: .inactive)) { try negotiate(videoDirection("inactive")) }
        let audioSendonly = Offers.chromiumWHEP.replacingOccurrences(of: "a=recvonly", with: "a=sendonly", range: Offers.chromiumWHEP.startIndex..<videoSection)
        #expect(throws: WHEPOfferError.unsupportedDirection(mid: "0", kind: .audio, direction: .sendonly)) { try negotiate(audioSendonly) }
        #expect(WHEPOfferError.unsupportedDirection(mid: "1", kind: .video, direction: .sendonly).description
                == "video m-section 1 is sendonly; a WHEP viewer's sections must be recvonly or sendrecv")
    }

    @Test("two video (or audio) sections are refused: a composition is one of each")
    func twoSections() {
        let secondVideo = Offers.aiortcWHEP + crlf("""
            m=video 9 UDP/TLS/RTP/SAVPF 101
            c=IN IP4 0.0.0.0
            a=mid:2
            a=recvonly
            a=rtcp-mux
            a=rtpmap:101 H264/90000
            a=fmtp:101 packetization-mode=1;profile-level-id=42e01f
            """)
        #expect(throws: WHEPOfferError.multipleSections(kind: .video, count: 2)) { try negotiate(secondVideo) }
        let secondAudio = Offers.aiortcWHEP + crlf("""
            m=audio 9 UDP/TLS/RTP/SAVPF 96
            a=mid:2
            a=recvonly
            a=rtcp-mux
            a=rtpmap:96 opus/48000/2
            """)
        #expect(throws: WHEPOfferError.multipleSections(kind: .audio, count: 2)) { try negotiate(secondAudio) }
        // A second video turned off (port 0) is only rejected.
        let secondOff = secondVideo.replacingOccurrences(of: "m=video 9 UDP/TLS/RTP/SAVPF 101", with: "m=video 0 UDP/TLS/RTP/SAVPF 101")
        #expect(throws: Never.self) { _ = try negotiate(secondOff, whepOptions(Compositions.constrainedBaseline31)) }
    }

    @Test("offers a WHEP endpoint refuses with 400, each naming what is wrong",
          arguments: [
              (Offers.chromiumWHEP.replacingOccurrences(of: "m=video 9", with: "m=video 0"), WHEPOfferError.noVideo),
              (Offers.chromiumWHEP.replacingOccurrences(of: "m=video", with: "m=text"), WHEPOfferError.noVideo),
              (Offers.chromiumWHEP.replacingOccurrences(of: "opus/48000/2", with: "opus/48000/1"), WHEPOfferError.noOpus(mid: "0")),
              (Offers.aiortcWHEP.replacingOccurrences(of: "opus/48000/2", with: "PCMU/8000"), WHEPOfferError.noOpus(mid: "0")),
              (Offers.chromiumWHEP.replacingOccurrences(of: "UDP/TLS/RTP/SAVPF", with: "RTP/AVP"),
               WHEPOfferError.unsupportedProtocol(mid: "0", proto: "RTP/AVP")),
              (Offers.chromiumWHEP.removingLines(containing: "a=rtcp-mux"), WHEPOfferError.sdp(.missingRTCPMux(mid: "0"))),
              (Offers.chromiumWHEP.removingLines(containing: "a=group:BUNDLE"), WHEPOfferError.sdp(.missingBundle)),
              (Offers.chromiumWHEP.replacingOccurrences(of: "a=group:BUNDLE 0 1", with: "a=group:BUNDLE 1"), WHEPOfferError.sdp(.missingBundle)),
              (Offers.chromiumWHEP.removingLines(containing: "a=ice-ufrag"), WHEPOfferError.sdp(.missingICECredentials)),
              (Offers.chromiumWHEP.removingLines(containing: "a=ice-pwd"), WHEPOfferError.sdp(.missingICECredentials)),
              (Offers.chromiumWHEP.removingLines(containing: "a=fingerprint"), WHEPOfferError.sdp(.missingFingerprint)),
              (Offers.chromiumWHEP.replacingOccurrences(of: "a=setup:actpass", with: "a=setup:holdconn"), WHEPOfferError.sdp(.unsupportedSetup("holdconn"))),
              (Offers.chromiumWHEP.replacingOccurrences(of: "a=mid:1", with: "a=mid:0"), WHEPOfferError.duplicateMid("0")),
              (Offers.chromiumWHEP.replacingOccurrences(of: "a=mid:1", with: "a=mid:v(1)"), WHEPOfferError.unreadableSection(index: 1)),
              (Offers.chromiumWHEP.replacingOccurrences(of: "a=mid:1", with: "a=mid:" + String(repeating: "m", count: 65)),
               WHEPOfferError.unreadableSection(index: 1)),
              (Offers.aiortcWHEP.replacingOccurrences(of: "t=0 0\r\n", with: "t=0 0\r\na=ice-lite\r\n"), WHEPOfferError.viewerIsICELite),
              ("v=0\r\ns=-\r\n", WHEPOfferError.noVideo),
              ("", WHEPOfferError.sdp(.empty)),
              ("m=video 9 UDP/TLS/RTP/SAVPF 96\r\n", WHEPOfferError.sdp(.missingVersion)),
          ])
    func refused(offer: String, error: WHEPOfferError) {
        #expect(throws: error) { try negotiate(offer) }
        #expect(!error.isServerFault)
    }

    @Test("our DTLS role: passive to actpass, active or none; active to passive")
    func setupRoles() throws {
        #expect(try negotiate(Offers.chromiumWHEP.replacingOccurrences(of: "a=setup:actpass", with: "a=setup:active")).localSetup == .passive)
        #expect(try negotiate(Offers.chromiumWHEP.removingLines(containing: "a=setup")).localSetup == .passive)
        let passive = try negotiate(Offers.chromiumWHEP.replacingOccurrences(of: "a=setup:actpass", with: "a=setup:passive"))
        #expect(passive.localSetup == .active && passive.isDTLSClient)
        #expect(passive.answer.components(separatedBy: "a=setup:active\r\n").count == 3)
    }

    @Test("header extensions: only those we send, with the viewer's ids, one-byte ids, a directional offer mirrored")
    func headerExtensions() throws {
        func extensions(_ lines: [String], mid: String = "v") throws -> (WHEPSendTrack, [String]) {
            let offer = viewerOffer(h264: ["level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f"], audio: false,
                                    videoLines: lines).replacingOccurrences(of: "a=mid:v", with: "a=mid:\(mid)")
                .replacingOccurrences(of: "a=group:BUNDLE v", with: "a=group:BUNDLE \(mid)")
            let result = try negotiate(offer)
            return (result.video, answerSection(result.answer, 0).filter { $0.hasPrefix("a=extmap") })
        }
        let mirrored = try extensions(["a=extmap:3/recvonly \(SDPExtmap.absSendTimeURI)", "a=extmap:5/sendonly \(SDPExtmap.midURI)"])
        #expect(mirrored.0.absSendTimeID == 3 && mirrored.0.midExtensionID == nil)
        #expect(mirrored.1 == ["a=extmap:3/sendonly \(SDPExtmap.absSendTimeURI)"])

        let wide = try extensions(["a=extmap:15 \(SDPExtmap.absSendTimeURI)", "a=extmap:14 \(SDPExtmap.midURI)",
                                   "a=extmap:2 \(SDPExtmap.transportCCURI)", "a=extmap:6 \(SDPExtmap.absCaptureTimeURI)"])
        #expect(wide.0.absSendTimeID == nil && wide.0.midExtensionID == 14)
        #expect(wide.1 == ["a=extmap:14 \(SDPExtmap.midURI)"])

        // One id for two URIs: the first kept, the second not.
        let clash = try extensions(["a=extmap:4 \(SDPExtmap.absSendTimeURI)", "a=extmap:4 \(SDPExtmap.midURI)"])
        #expect(clash.0.absSendTimeID == 4 && clash.0.midExtensionID == nil)

        // A mid longer than a one-byte element (16 bytes) is not put on packets.
        let longMid = try extensions(["a=extmap:4 \(SDPExtmap.midURI)"], mid: String(repeating: "m", count: 17))
        #expect(longMid.0.midExtensionID == nil && longMid.1.isEmpty)
        #expect(try extensions(["a=extmap:4 \(SDPExtmap.midURI)"], mid: String(repeating: "m", count: 16)).0.midExtensionID == 4)
    }

    @Test("candidates: one host candidate per address, preference falling, the first giving the m= port and c=")
    func candidates() throws {
        let addresses = [TransportAddress(ip: IPAddress("2001:db8::10")!, port: 9000), .v4(203, 0, 113, 10, port: 8443)]
        let result = try negotiate(Offers.chromiumWHEP, whepOptions(candidates: addresses))
        let lines = answerSection(result.answer, 1)
        #expect(lines.first == "m=video 9000 UDP/TLS/RTP/SAVPF 116 117")
        #expect(lines.contains("c=IN IP6 2001:db8::10"))
        #expect(lines.filter { $0.hasPrefix("a=candidate") } == [
            "a=candidate:1 1 udp 2130706431 2001:db8::10 9000 typ host",
            "a=candidate:2 1 udp 2130706175 203.0.113.10 8443 typ host",
        ])
        #expect(lines.last == "a=end-of-candidates")
    }

    @Test("an offer without RTX gets no RTX and no FID group; feedback is only what was offered")
    func withoutRTX() throws {
        let offer = viewerOffer(h264: ["level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f"])
            .removingLines(containing: "rtx/90000").removingLines(containing: "apt=").removingLines(containing: "nack pli")
        let result = try negotiate(offer)
        #expect(result.video.rtx == nil && result.video.feedback == ["nack"] && !result.video.receivesKeyframeRequests)
        #expect(!result.answer.contains("ssrc-group") && !result.answer.contains("3003"))
        #expect(answerSection(result.answer, 1).first == "m=video 8443 UDP/TLS/RTP/SAVPF 96")
    }

    @Test("hostile sizes are refused before any work: bytes, lines, sections, attributes, formats")
    func limits() {
        let big = Offers.chromiumWHEP + String(repeating: "a=x-padding:" + String(repeating: "p", count: 1000) + "\r\n", count: 70)
        #expect(throws: WHEPOfferError.sdp(.tooLarge(bytes: big.utf8.count, limit: 65536))) { try negotiate(big) }
        let lines = Offers.chromiumWHEP + String(repeating: "a=x\r\n", count: 900)
        #expect(throws: WHEPOfferError.tooManyLines(count: 201 + 900, limit: 1024)) { try negotiate(lines) }
        let sections = Offers.aiortcWHEP + String(repeating: "m=application 0 UDP/DTLS/SCTP webrtc-datachannel\r\n", count: 15)
        #expect(throws: WHEPOfferError.tooManyMediaSections(count: 17, limit: 16)) { try negotiate(sections) }
        let attributes = Offers.aiortcWHEP + "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n" + String(repeating: "a=x\r\n", count: 513)
        #expect(throws: WHEPOfferError.tooManyAttributes(index: 2, count: 513, limit: 512)) { try negotiate(attributes) }
        let formats = Offers.aiortcWHEP + "m=video 0 UDP/TLS/RTP/SAVPF " + (0..<257).map { String($0 % 128) }.joined(separator: " ") + "\r\n"
        #expect(throws: WHEPOfferError.tooManyFormats(index: 2, count: 257, limit: 256)) { try negotiate(formats) }
        // At the limits, an offer is still read.
        let atLimit = Offers.chromiumWHEP.replacingOccurrences(of: "t=0 0\r\n", with: "t=0 0\r\n" + String(repeating: "a=x\r\n", count: 1024 - 201))
        #expect(throws: Never.self) { _ = try negotiate(atLimit) }
    }

    @Test("a kind, protocol or format we would echo must be an SDP token", arguments: [
        "m=applic\u{7F}ation 0 UDP/DTLS/SCTP webrtc-datachannel",
        "m=application 0 UDP/DTLS/SCTP webrtc\u{C3}\u{A9}",
        "m=application 0 " + String(repeating: "P", count: 65) + " webrtc-datachannel",
    ])
    func unreadableEcho(line: String) {
        #expect(throws: WHEPOfferError.unreadableSection(index: 2)) { try negotiate(Offers.aiortcWHEP + line + "\r\n") }
    }

    @Test("our own parameters are checked: a bad one is a server fault (500), not the viewer's")
    func localParameters() {
        var options = whepOptions()
        options.localFingerprintSHA256 = "AB:CD"
        #expect(throws: WHEPOfferError.sdp(.invalidLocalFingerprint("AB:CD"))) { try negotiate(Offers.chromiumWHEP, options) }
        #expect(WHEPOfferError.sdp(.invalidLocalFingerprint("AB:CD")).isServerFault)

        var cases: [WHEPAnswerOptions] = []
        options = whepOptions()
        options.candidates = []
        cases.append(options)
        options = whepOptions(candidates: [.v4(0, 0, 0, 0, port: 8443)])
        cases.append(options)
        options = whepOptions(candidates: [.v4(203, 0, 113, 10, port: 0)])
        cases.append(options)
        options = whepOptions()
        options.streams.videoRTXSSRC = options.streams.videoSSRC
        cases.append(options)
        options = whepOptions()
        options.streams.cname = "two words"
        cases.append(options)
        options = whepOptions()
        options.streams.streamID = ""
        cases.append(options)
        options = whepOptions()
        options.localCredentials = IceCredentials(ufrag: "ab", pwd: "short")
        cases.append(options)
        cases.append(whepOptions(H264ProfileLevelID("6e001f")!))
        cases.append(whepOptions(H264ProfileLevelID("4d400e")!))
        for bad in cases {
            #expect(throws: WHEPOfferError.self) { try negotiate(Offers.chromiumWHEP, bad) }
            do {
                _ = try WHEPNegotiator.negotiate(offer: Offers.chromiumWHEP, options: bad)
            } catch {
                #expect(error.isServerFault, "\(error)")
            }
        }
    }

    @Test("random local streams: distinct non-zero SSRCs, token names, the same for the same seed")
    func randomStreams() throws {
        var first = SeededGenerator(seed: 7), second = SeededGenerator(seed: 7)
        let streams = WHEPLocalStreams.random(using: &first)
        #expect(streams == WHEPLocalStreams.random(using: &second))
        #expect(Set([streams.audioSSRC, streams.videoSSRC, streams.videoRTXSSRC]).count == 3)
        #expect(![streams.audioSSRC, streams.videoSSRC, streams.videoRTXSSRC].contains(0))
        for name in [streams.cname, streams.streamID, streams.audioTrackID, streams.videoTrackID] {
            #expect(name.count == 16 && WHEPNegotiator.isToken(name))
        }
        var options = whepOptions()
        options.streams = streams
        _ = try negotiate(Offers.chromiumWHEP, options)
    }

    @Test("errors read as a WHEP client can act on them")
    func descriptions() {
        #expect(WHEPOfferError.noCompatibleH264Profile(mid: "1", ours: Compositions.main40, offered: ["42001f", "42e01f"]).description
                == "video m-section 1: no offered H.264 profile-level-id (42001f, 42e01f) can receive this composition's 4d4028 (Main, level 4)")
        #expect(WHEPOfferError.noVideo.description
                == "offer has no video m-section; WHEP here plays a composition's video (H.264), with or without audio")
        #expect(WHEPOfferError.multipleSections(kind: .video, count: 2).description
                == "offer has 2 video m-sections; a composition is one video and at most one audio track")
        #expect(WHEPOfferError.noOpus(mid: nil).description
                == "audio m-section without mid offers no Opus (48000/2), the only audio codec this server sends")
        #expect(WHEPOfferError.sdp(.missingBundle).description == SDPError.missingBundle.description)
        #expect(WHEPOfferError.tooManyLines(count: 2000, limit: 1024).description == "offer has 2000 lines; at most 1024 are read")
    }
}
