// Answers to real offers: codec choice, RTX, SSRCs, extensions, transport parameters, the
// answer text itself, and the 400-worthy offers.
import TestSupport
import Testing
@testable import WebRTCSignal

private let ourFingerprint = "D7:96:48:E8:56:E8:F9:A2:F5:8C:95:F0:CE:4B:39:C1:5B:FF:AD:5C:2D:FB:8B:B8:20:B6:11:9C:BA:8F:F8:87"
private let ourCredentials = IceCredentials(ufrag: "srvA1b2C", pwd: "ServerPwd0123456789abcde")

private func options(candidate: TransportAddress = .v4(203, 0, 113, 10, port: 8443),
                     requireAudio: Bool = true, requireVideo: Bool = true, acceptSimulcast: Bool = true) -> SDPAnswerOptions {
    SDPAnswerOptions(localCredentials: ourCredentials, localFingerprintSHA256: ourFingerprint, candidate: candidate,
                     sessionID: 0x8123_4567_89AB_CDEF, requireAudio: requireAudio, requireVideo: requireVideo,
                     acceptSimulcast: acceptSimulcast)
}

private func negotiate(_ offer: String, _ answerOptions: SDPAnswerOptions = options()) throws -> SDPNegotiation {
    try SDPNegotiator.negotiate(offer: offer, options: answerOptions)
}

/// The answer's lines of one m-section (from its m= line to the next).
private func section(_ answer: String, _ index: Int) -> [String] {
    var sections: [[String]] = []
    for line in answer.sdpLines {
        if line.hasPrefix("m=") { sections.append([]) }
        if !sections.isEmpty { sections[sections.count - 1].append(line) }
    }
    return sections[index]
}

/// Checks every answer must pass, whatever the offer.
private func expectWellFormed(_ negotiation: SDPNegotiation, offer: String) throws {
    let answer = negotiation.answer
    // CRLF everywhere, and nothing else.
    let bytes = Array(answer.utf8)
    for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
        #expect(index > 0 && bytes[index - 1] == UInt8(ascii: "\r"))
    }
    #expect(answer.hasSuffix("\r\n"))
    let parsedOffer = try SessionDescription.parse(offer)
    let parsed = try SessionDescription.parse(answer)
    #expect(parsed.iceLite)
    #expect(parsed.media.count == parsedOffer.media.count)
    #expect(parsed.bundleMids == negotiation.bundleMids || (parsed.bundleMids == nil && negotiation.bundleMids.isEmpty))
    for (index, media) in parsed.media.enumerated() {
        #expect(media.kind == parsedOffer.media[index].kind)
        #expect(media.mid == parsedOffer.media[index].mid)
        guard let accepted = negotiation.media.first(where: { $0.index == index }) else {
            #expect(media.port == 0)
            #expect(media.attributes.map(\.name).allSatisfy { $0 == "mid" })
            continue
        }
        #expect(media.port == 8443)
        #expect(media.direction == .recvonly)
        #expect(media.rtcpMux)
        #expect(media.setup == negotiation.localSetup)
        #expect(media.iceUfrag == ourCredentials.ufrag && media.icePwd == ourCredentials.pwd)
        #expect(media.fingerprints == [SDPFingerprint(attributeValue: "sha-256 " + ourFingerprint)!])
        #expect(media.formats == [String(accepted.codec.payloadType)] + (accepted.rtx.map { [String($0.payloadType)] } ?? []))
        #expect(media.candidates == [SDPCandidate(foundation: "1", component: 1, transport: "udp", priority: 2_130_706_431,
                                                  address: "203.0.113.10", port: 8443, type: "host")])
        #expect(media.endOfCandidates)
        if accepted.simulcastRids.isEmpty {
            #expect(media.extmaps.allSatisfy { SDPNegotiator.supportedExtensions.contains($0.uri) })
            #expect(media.rids.isEmpty && media.simulcast == nil)
        } else {
            let allowed = SDPNegotiator.supportedExtensions.union(SDPNegotiator.simulcastExtensions)
            #expect(media.extmaps.allSatisfy { allowed.contains($0.uri) })
            #expect(media.rids == accepted.simulcastRids.map { SDPRid(id: $0, direction: "recv") })
            #expect(media.simulcast == "recv " + accepted.simulcastRids.joined(separator: ";"))
        }
        for codec in media.codecs {
            #expect(codec.feedback.allSatisfy { SDPNegotiator.supportedFeedback.contains($0) })
        }
    }
    #expect(!answer.contains("transport-cc"))
}

struct SDPNegotiationTests {
    @Test("Chrome: H.264 42e01f with its RTX, Opus, FID SSRCs, mid and abs-send-time ids, passive setup")
    func chrome() throws {
        let result = try negotiate(Offers.chrome)
        try expectWellFormed(result, offer: Offers.chrome)
        let video = try #require(result.video)
        #expect(video.mid == "1")
        #expect(video.codec.name == .h264 && video.codec.payloadType == 106 && video.codec.clockRate == 90000)
        #expect(video.codec.parameters["profile-level-id"] == "42e01f")
        #expect(video.rtx == NegotiatedRTX(payloadType: 107, associatedPayloadType: 106, clockRate: 90000))
        #expect(video.codec.feedback == ["goog-remb", "ccm fir", "nack", "nack pli"])
        #expect(video.sources == [NegotiatedSource(ssrc: 2231627014, rtxSSRC: 632943048, cname: "Yq1Pj0xWvD6yNe7Q")])
        #expect(video.extensionID(SDPExtmap.midURI) == 4)
        #expect(video.extensionID(SDPExtmap.absSendTimeURI) == 2)
        #expect(video.headerExtensions.count == 2)
        #expect(video.rtcpReducedSize)

        let audio = try #require(result.audio)
        #expect(audio.codec == NegotiatedCodec(name: .opus, payloadType: 111, clockRate: 48000, channels: 2,
                                               fmtp: "minptime=10;useinbandfec=1", feedback: []))
        #expect(audio.rtx == nil)
        #expect(audio.sources.map(\.ssrc) == [3485940486])

        #expect(result.bundleMids == ["0", "1"])
        #expect(result.remoteCredentials == IceCredentials(ufrag: "Jq3W", pwd: "4lFq9m1RtcnS7M5gq8r0xYqB"))
        #expect(result.remoteFingerprint.algorithm == "sha-256")
        #expect(result.remoteFingerprint.hex == "82:B7:0E:EE:7F:1A:50:39:BE:F0:7E:C2:34:7F:06:6E:D0:8F:5D:C7:51:24:47:E3:40:43:00:02:6B:6E:54:55")
        #expect(result.localSetup == .passive && !result.isDTLSClient)
        #expect(result.rejected.isEmpty)

        let videoLines = section(result.answer, 1)
        #expect(videoLines.first == "m=video 8443 UDP/TLS/RTP/SAVPF 106 107")
        #expect(videoLines.contains("a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"))
        #expect(videoLines.contains("a=rtpmap:107 rtx/90000"))
        #expect(videoLines.contains("a=fmtp:107 apt=106"))
        #expect(videoLines.contains("a=rtcp-rsize"))
        #expect(section(result.answer, 0).first == "m=audio 8443 UDP/TLS/RTP/SAVPF 111")
    }

    @Test("abs-capture-time, when a page turns it on, is kept in both sections with the offer's id")
    func absCaptureTime() throws {
        let extmap = "a=extmap:12 \(SDPExtmap.absCaptureTimeURI)\r\n"
        let offer = Offers.chrome.replacingOccurrences(of: "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid\r\n",
                                                       with: "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid\r\n" + extmap)
        #expect(offer.components(separatedBy: extmap).count == 3)
        let result = try negotiate(offer)
        try expectWellFormed(result, offer: offer)
        #expect(result.audio?.extensionID(SDPExtmap.absCaptureTimeURI) == 12)
        #expect(result.video?.extensionID(SDPExtmap.absCaptureTimeURI) == 12)
        #expect(section(result.answer, 0).contains("a=extmap:12 \(SDPExtmap.absCaptureTimeURI)"))
        #expect(section(result.answer, 1).contains("a=extmap:12 \(SDPExtmap.absCaptureTimeURI)"))
        // Without it in the offer, the answer has none.
        #expect(try negotiate(Offers.chrome).audio?.extensionID(SDPExtmap.absCaptureTimeURI) == nil)
    }

    @Test("Firefox: H.264 126 with RTX 127, session-level fingerprint, directional extmap not kept")
    func firefox() throws {
        let result = try negotiate(Offers.firefox)
        try expectWellFormed(result, offer: Offers.firefox)
        let video = try #require(result.video)
        #expect(video.codec.payloadType == 126)
        #expect(video.rtx?.payloadType == 127)
        #expect(video.codec.feedback == ["nack", "nack pli", "ccm fir", "goog-remb"])
        #expect(video.sources == [NegotiatedSource(ssrc: 3133453232, rtxSSRC: 3806839355, cname: "{3c2b1a09-8f7e-4d6c-b5a4-392817161514}")])
        #expect(video.headerExtensions.map(\.id) == [3, 4])
        #expect(result.audio?.codec.payloadType == 109)
        #expect(result.audio?.headerExtensions.map(\.id) == [3])
        #expect(result.remoteCredentials.ufrag == "fb4c22ad")
        #expect(result.remoteFingerprint.hex.hasPrefix("94:A0:65"))
    }

    @Test("OBS 30: the whole answer, exactly")
    func obsExact() throws {
        let result = try negotiate(Offers.obs)
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
            a=recvonly
            a=rtcp-mux
            a=rtpmap:111 opus/48000/2
            a=fmtp:111 minptime=10;maxaveragebitrate=96000;stereo=1;useinbandfec=1
            a=candidate:1 1 udp 2130706431 203.0.113.10 8443 typ host
            a=end-of-candidates
            m=video 8443 UDP/TLS/RTP/SAVPF 96
            c=IN IP4 203.0.113.10
            a=mid:1
            a=ice-ufrag:srvA1b2C
            a=ice-pwd:ServerPwd0123456789abcde
            a=fingerprint:sha-256 \(ourFingerprint)
            a=setup:passive
            a=recvonly
            a=rtcp-mux
            a=rtpmap:96 H264/90000
            a=rtcp-fb:96 nack
            a=rtcp-fb:96 nack pli
            a=rtcp-fb:96 goog-remb
            a=fmtp:96 profile-level-id=42e01f;packetization-mode=1;level-asymmetry-allowed=1
            a=candidate:1 1 udp 2130706431 203.0.113.10 8443 typ host
            a=end-of-candidates
            """
        #expect(result.answer == crlf(expected))
        #expect(result.video?.sources == [NegotiatedSource(ssrc: 2715283348, rtxSSRC: nil, cname: "VdA9sL2mQe7RtB1k")])
        #expect(result.remoteCredentials == IceCredentials(ufrag: "Qx7d", pwd: "w0K3vYfN8pLr2sTq6uHb1c"))
    }

    @Test("GStreamer: bundle-only audio is accepted, OPUS keeps its spelling, sprop-* stay out of the answer")
    func gstreamer() throws {
        let result = try negotiate(Offers.gstreamer)
        try expectWellFormed(result, offer: Offers.gstreamer)
        #expect(result.bundleMids == ["video0", "audio1"])
        let video = try #require(result.video)
        #expect(video.codec.payloadType == 96 && video.rtx == nil)
        #expect(video.codec.parameters["profile-level-id"] == "42c015")
        #expect(video.codec.parameters["sprop-parameter-sets"] != nil, "the offer's SPS/PPS stay available to the decoder")
        #expect(video.codec.feedback == ["nack pli", "ccm fir"])
        #expect(video.sources.map(\.ssrc) == [4148590028])
        #expect(result.audio?.codec.payloadType == 97)
        #expect(result.remoteCredentials.ufrag == "We9PV1wXz1VFByE6ewPpjumzd0jJAWFK")

        let videoLines = section(result.answer, 0)
        #expect(videoLines.contains("a=fmtp:96 packetization-mode=1;profile-level-id=42c015;level-asymmetry-allowed=1"))
        let audioLines = section(result.answer, 1)
        #expect(audioLines.first == "m=audio 8443 UDP/TLS/RTP/SAVPF 97")
        #expect(audioLines.contains("a=rtpmap:97 OPUS/48000/2"))
        #expect(!audioLines.contains { $0.hasPrefix("a=fmtp:97") })
    }

    @Test("aiortc: H.264 42e01f over 42001f and VP8, sha-256 picked among three fingerprints")
    func aiortc() throws {
        let result = try negotiate(Offers.aiortc)
        try expectWellFormed(result, offer: Offers.aiortc)
        #expect(result.video?.codec.payloadType == 101)
        #expect(result.video?.rtx == NegotiatedRTX(payloadType: 102, associatedPayloadType: 101, clockRate: 90000))
        #expect(result.video?.sources == [NegotiatedSource(ssrc: 3121121069, rtxSSRC: 518149584, cname: "bcd1db5a-5854-4ae8-9599-20afe5704bba")])
        #expect(result.audio?.codec.payloadType == 96)
        #expect(result.remoteFingerprint.algorithm == "sha-256")
        #expect(result.remoteFingerprints.count == 3)
        #expect(result.remoteCredentials == IceCredentials(ufrag: "aVfB", pwd: "BerfznPwk7x0JvlyCDfVwY"))
    }

    @Test("simulcast is received whole: every layer as a recv rid, the rid header extensions kept")
    func simulcast() throws {
        let result = try negotiate(Offers.simulcast)
        try expectWellFormed(result, offer: Offers.simulcast)
        let video = try #require(result.video)
        #expect(video.simulcastRids == ["f", "h", "q"])
        #expect(video.declinedSimulcastRids == [])
        #expect(video.sources.isEmpty)
        #expect(video.extensionID(SDPExtmap.ridURI) == 10 && video.extensionID(SDPExtmap.repairedRidURI) == 11)
        #expect(video.extensionID(SDPExtmap.transportCCURI) == nil)
        let lines = section(result.answer, 1)
        #expect(lines.contains("a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"))
        #expect(lines.contains("a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"))
        #expect(Array(lines.filter { $0.hasPrefix("a=rid") || $0.hasPrefix("a=simulcast") }) ==
                ["a=rid:f recv", "a=rid:h recv", "a=rid:q recv", "a=simulcast:recv f;h;q"])
        #expect(result.audio?.simulcastRids == [] && !section(result.answer, 0).contains { $0.contains("rtp-stream-id") })
    }

    @Test("simulcast lists: paused layers and undeclared rids are left out, an alternative is taken, the draft's rid= prefix read")
    func simulcastLists() throws {
        func layers(_ simulcast: String, rids: [String] = ["a send", "b send", "c send"]) throws -> [String] {
            let offer = Offers.simulcast.replacing("a=rid:f send\r\na=rid:h send\r\na=rid:q send\r\n", with: rids.map { "a=rid:\($0)\r\n" }.joined())
                .replacing("a=simulcast:send f;h;q", with: "a=simulcast:" + simulcast)
            let result = try negotiate(offer)
            try expectWellFormed(result, offer: offer)
            return try #require(result.video).simulcastRids
        }
        #expect(try layers("send a;b;c") == ["a", "b", "c"])
        #expect(try layers("send a;~b;c") == ["a", "c"])
        #expect(try layers("send ~a,b;c") == ["b", "c"])
        #expect(try layers("send a;x;c") == ["a", "c"])
        #expect(try layers("recv z send c;a") == ["c", "a"])
        #expect(try layers(" send rid=a;b") == ["a", "b"])
        #expect(try layers("send a;b;c", rids: ["a send", "b recv", "c send pt=102;max-width=1280"]) == ["a", "c"])
        #expect(try layers("recv a;b") == [])
    }

    @Test("simulcast is declined without the rid header extension, or when turned off: one layer, the rids reported")
    func simulcastDeclined() throws {
        let withoutRid = Offers.simulcast.replacing("a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id\r\n", with: "")
        for (offer, answerOptions) in [(withoutRid, options()), (Offers.simulcast, options(acceptSimulcast: false))] {
            let result = try negotiate(offer, answerOptions)
            try expectWellFormed(result, offer: offer)
            let video = try #require(result.video)
            #expect(video.declinedSimulcastRids == ["f", "h", "q"])
            #expect(video.codec.payloadType == 102 && video.rtx?.payloadType == 103)
            #expect(video.sources.isEmpty)
            #expect(video.headerExtensions.map(\.uri) == [SDPExtmap.absSendTimeURI, SDPExtmap.midURI])
            #expect(!result.answer.contains("a=rid") && !result.answer.contains("a=simulcast") && !result.answer.contains("rtp-stream-id"))
            #expect(result.audio?.declinedSimulcastRids == [])
        }
    }

    @Test("a data channel and a second video are rejected with port 0 and their mid; BUNDLE lists only accepted mids")
    func rejectedSections() throws {
        let offer = Offers.obs.replacing("a=group:BUNDLE 0 1", with: "a=group:BUNDLE 0 1 2 3") + crlf("""
            m=application 9 UDP/DTLS/SCTP webrtc-datachannel
            c=IN IP4 0.0.0.0
            a=mid:2
            a=sctp-port:5000
            m=video 9 UDP/TLS/RTP/SAVPF 97
            c=IN IP4 0.0.0.0
            a=mid:3
            a=sendonly
            a=rtcp-mux
            a=rtpmap:97 VP8/90000
            """)
        let result = try negotiate(offer)
        try expectWellFormed(result, offer: offer)
        #expect(result.rejected == [
            RejectedMedia(index: 2, mid: "2", kind: "application", reason: .unsupportedKind),
            RejectedMedia(index: 3, mid: "3", kind: "video", reason: .duplicate),
        ])
        #expect(result.bundleMids == ["0", "1"])
        #expect(section(result.answer, 2) == ["m=application 0 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0", "a=mid:2"])
        #expect(section(result.answer, 3) == ["m=video 0 UDP/TLS/RTP/SAVPF 97", "c=IN IP4 0.0.0.0", "a=mid:3"])
    }

    @Test("a video section without an acceptable codec is rejected while a later one is used")
    func laterVideoUsed() throws {
        let offer = Offers.obs.replacing("a=group:BUNDLE 0 1", with: "a=group:BUNDLE 0 1 2")
            .replacing("a=rtpmap:96 H264/90000", with: "a=rtpmap:96 VP9/90000") + crlf("""
            m=video 9 UDP/TLS/RTP/SAVPF 100
            a=mid:2
            a=sendonly
            a=rtcp-mux
            a=rtpmap:100 VP8/90000
            """)
        let result = try negotiate(offer)
        #expect(result.rejected.map(\.reason) == [.noSupportedCodec])
        #expect(result.video?.mid == "2" && result.video?.codec.name == .vp8)
        #expect(result.bundleMids == ["0", "2"])
    }

    @Test("our setup answers the offer's: passive to actpass, active or none; active to passive")
    func setupRoles() throws {
        #expect(try negotiate(Offers.obs.replacing("a=setup:actpass", with: "a=setup:active")).localSetup == .passive)
        #expect(try negotiate(Offers.obs.removingLines(containing: "a=setup")).localSetup == .passive)
        let passive = try negotiate(Offers.obs.replacing("a=setup:actpass", with: "a=setup:passive"))
        #expect(passive.localSetup == .active && passive.isDTLSClient)
        #expect(passive.answer.contains("a=setup:active\r\n"))
        #expect(throws: SDPError.unsupportedSetup("holdconn")) {
            try negotiate(Offers.obs.replacing("a=setup:actpass", with: "a=setup:holdconn"))
        }
    }

    @Test("H.264 profile preference: 42e01f, then 42001f, then 640c1f, then the offer's order")
    func profilePreference() throws {
        func chosen(_ profiles: [String]) throws -> UInt8? {
            var lines = ["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=ice-ufrag:abcd", "a=ice-pwd:abcdefghijklmnopqrstuv",
                         "a=fingerprint:sha-256 " + ourFingerprint,
                         "m=video 9 UDP/TLS/RTP/SAVPF " + profiles.indices.map { String(100 + $0) }.joined(separator: " "),
                         "a=mid:v", "a=sendonly", "a=rtcp-mux"]
            for (index, profile) in profiles.enumerated() {
                lines.append("a=rtpmap:\(100 + index) H264/90000")
                lines.append("a=fmtp:\(100 + index) packetization-mode=1;profile-level-id=\(profile)")
            }
            return try negotiate(lines.joined(separator: "\r\n"), options(requireAudio: false)).video?.codec.payloadType
        }
        #expect(try chosen(["640c1f", "42001f", "42E01F"]) == 102)
        #expect(try chosen(["640c1f", "42001f", "4d001f"]) == 101)
        #expect(try chosen(["4d001f", "640C1F"]) == 101)
        #expect(try chosen(["4d001f", "64001f"]) == 100)
    }

    @Test("H.264 with packetization-mode 0 only falls back to VP8, or fails without it")
    func packetizationMode() throws {
        let modeZero = Offers.obs.replacing("packetization-mode=1", with: "packetization-mode=0")
        #expect(throws: SDPError.noVideoCodec) { try negotiate(modeZero) }
        let withVP8 = modeZero.replacing("m=video 51034 UDP/TLS/RTP/SAVPF 96", with: "m=video 51034 UDP/TLS/RTP/SAVPF 96 98")
            .replacing("a=rtpmap:96 H264/90000", with: "a=rtpmap:96 H264/90000\r\na=rtpmap:98 VP8/90000")
        #expect(try negotiate(withVP8).video?.codec == NegotiatedCodec(name: .vp8, payloadType: 98, clockRate: 90000, channels: nil,
                                                                      fmtp: nil, feedback: []))
    }

    @Test("offers the WHIP endpoint refuses with 400, each naming what is missing",
          arguments: [
              (Offers.obs.replacing("a=rtpmap:96 H264/90000", with: "a=rtpmap:96 VP9/90000"), SDPError.noVideoCodec),
              (Offers.obs.replacing("m=video", with: "m=text"), SDPError.noVideoCodec),
              (Offers.obs.replacing("a=mid:1\r\na=sendonly", with: "a=mid:1\r\na=recvonly"), SDPError.noVideoCodec),
              (Offers.obs.replacing("opus/48000/2", with: "PCMU/8000"), SDPError.noAudioCodec),
              (Offers.obs.replacing("opus/48000/2", with: "opus/48000/1"), SDPError.noAudioCodec),
              (Offers.obs.removingLines(containing: "a=ice-ufrag"), SDPError.missingICECredentials),
              (Offers.obs.removingLines(containing: "a=ice-pwd"), SDPError.missingICECredentials),
              (Offers.obs.removingLines(containing: "a=fingerprint"), SDPError.missingFingerprint),
              (Offers.firefox.removingLines(containing: "a=rtcp-mux"), SDPError.missingRTCPMux(mid: "1")),
              (Offers.obs.removingLines(containing: "a=group:BUNDLE"), SDPError.missingBundle),
              (Offers.obs.replacing("a=group:BUNDLE 0 1", with: "a=group:BUNDLE 0"), SDPError.missingBundle),
              (Offers.chrome.replacing("UDP/TLS/RTP/SAVPF", with: "RTP/AVP"), SDPError.noVideoCodec),
              (Offers.chrome.replacing("m=audio 58374", with: "m=audio 0"), SDPError.noAudioCodec),
              ("v=0\r\ns=-\r\n", SDPError.noVideoCodec),
          ])
    func refused(offer: String, error: SDPError) {
        #expect(throws: error) { try negotiate(offer) }
    }

    @Test("requirements can be relaxed to one kind; nothing usable is still an error")
    func relaxedRequirements() throws {
        let videoOnly = Offers.obs.replacing("opus/48000/2", with: "PCMU/8000")
        let result = try negotiate(videoOnly, options(requireAudio: false))
        #expect(result.audio == nil && result.video != nil)
        #expect(result.rejected.map(\.reason) == [.noSupportedCodec])
        #expect(result.bundleMids == ["1"])
        #expect(throws: SDPError.noAcceptableMedia) {
            try negotiate("v=0\r\ns=-\r\n", options(requireAudio: false, requireVideo: false))
        }
    }

    @Test("an IPv6 candidate gives c=IN IP6 and an IPv6 candidate line")
    func ipv6Candidate() throws {
        let result = try negotiate(Offers.obs, options(candidate: TransportAddress(ip: IPAddress("2001:db8::10")!, port: 9000)))
        let lines = section(result.answer, 0)
        #expect(lines.contains("c=IN IP6 2001:db8::10"))
        #expect(lines.contains("a=candidate:1 1 udp 2130706431 2001:db8::10 9000 typ host"))
    }

    @Test("a local fingerprint that is not 32 hex bytes is a server error")
    func badLocalFingerprint() {
        var bad = options()
        bad.localFingerprintSHA256 = "AB:CD"
        #expect(throws: SDPError.invalidLocalFingerprint("AB:CD")) { try negotiate(Offers.obs, bad) }
    }

    @Test("errors describe what is missing in words a WHIP client can act on")
    func descriptions() {
        #expect(SDPError.noVideoCodec.description == "offer has no video m-section with H.264 (packetization-mode=1) or VP8")
        #expect(SDPError.missingRTCPMux(mid: "1").description == "m-section 1 lacks a=rtcp-mux, which is required")
        #expect(SDPError.malformedLine(number: 3, text: "x").description == "malformed SDP line 3: x")
    }
}
