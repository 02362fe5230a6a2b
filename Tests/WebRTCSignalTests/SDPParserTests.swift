// Parsing real offers into the model, line endings, and malformed input.
import TestSupport
import Testing
@testable import WebRTCSignal

extension String {
    /// The SDP without lines that contain `fragment` (for building broken offers).
    func removingLines(containing fragment: String) -> String {
        sdpLines.filter { !$0.contains(fragment) }.joined(separator: "\r\n") + "\r\n"
    }

    var sdpLines: [String] {
        utf8.split(separator: UInt8(ascii: "\n")).map { line in
            var text = String(Substring(line))
            if text.hasSuffix("\r") { text.removeLast() }
            return text
        }
    }
}

struct SDPParserTests {
    @Test("an extmap whose ID is empty (\"a=extmap:/ uri\") is a malformed offer, not a trap (found by the stun-sdp fuzzer)")
    func extmapWithoutID() throws {
        for line in ["a=extmap:/ urn:ietf:params:rtp-hdrext:sdes:mid", "a=extmap:/sendonly urn:x", "a=extmap:// urn:x"] {
            let text = Offers.h264Opus().replacingOccurrences(of: "a=rtcp-mux\r\na=rtpmap:111", with: "a=rtcp-mux\r\n\(line)\r\na=rtpmap:111")
            #expect(throws: SDPError.self, "\(line)") { try SessionDescription.parse(text) }
        }
    }

    @Test("a Chrome offer parses into sections, codecs, extmaps, sources and candidates")
    func chrome() throws {
        let offer = try SessionDescription.parse(Offers.chrome)
        #expect(offer.origin?.sessionID == "5228595038118931041")
        #expect(offer.bundleMids == ["0", "1"])
        #expect(offer.media.map(\.kind) == ["audio", "video"])

        let audio = offer.media[0]
        #expect(audio.mid == "0")
        #expect(audio.port == 58374)
        #expect(audio.direction == .sendonly)
        #expect(audio.rtcpMux && !audio.rtcpReducedSize)
        #expect(audio.iceUfrag == "Jq3W" && audio.icePwd == "4lFq9m1RtcnS7M5gq8r0xYqB")
        #expect(audio.setup == .actpass)
        #expect(audio.codecs.map(\.payloadType) == [111, 63, 9, 0, 8, 13, 110, 126])
        #expect(audio.payloadTypes == audio.codecs.map(\.payloadType))
        #expect(audio.codec(payloadType: 111) == SDPCodec(payloadType: 111, name: "opus", clockRate: 48000, channels: 2,
                                                          fmtp: "minptime=10;useinbandfec=1", feedback: ["transport-cc"]))
        #expect(audio.candidates.count == 2)
        #expect(audio.candidates[0].address == "0c1ddc6b-1d6b-4d4f-a9b1-8b1b1c1d2e3f.local")
        #expect(audio.candidates[0].transportAddress == nil)
        #expect(audio.candidates[1].type == "srflx" && audio.candidates[1].relatedAddress == "0.0.0.0" && audio.candidates[1].relatedPort == 0)
        #expect(audio.candidates[1].transportAddress == .v4(203, 0, 113, 45, port: 58374))
        #expect(audio.sources == [SDPSource(ssrc: 3485940486, cname: "Yq1Pj0xWvD6yNe7Q", msid: "- 6f2c1b7e-8d1a-4c55-9a57-0b9f3f0c2d11",
                                            attributes: [SDPAttribute(name: "cname", value: "Yq1Pj0xWvD6yNe7Q"),
                                                         SDPAttribute(name: "msid", value: "- 6f2c1b7e-8d1a-4c55-9a57-0b9f3f0c2d11")])])

        let video = offer.media[1]
        #expect(video.codecs.count == 25)
        #expect(video.rtcpReducedSize)
        #expect(video.extmaps.count == 11)
        #expect(video.extmaps.first { $0.uri == SDPExtmap.midURI }?.id == 4)
        #expect(video.codec(payloadType: 106)?.parameters == ["level-asymmetry-allowed": "1", "packetization-mode": "1", "profile-level-id": "42e01f"])
        #expect(video.codec(payloadType: 106)?.feedback == ["goog-remb", "transport-cc", "ccm fir", "nack", "nack pli"])
        #expect(video.codec(payloadType: 107)?.parameters["apt"] == "106")
        #expect(video.sourceGroups == [SDPSourceGroup(semantics: "FID", ssrcs: [2231627014, 632943048])])
        #expect(video.sources.map(\.ssrc) == [2231627014, 632943048])
        #expect(video.msid == "- 0c1e5a8b-3f7d-4e2a-b6c9-d2e1f0a9b8c7")
        #expect(video.fingerprints.first?.bytes.count == 32)
    }

    @Test("Firefox: the session-level fingerprint applies to every section; directional extmaps parse")
    func firefox() throws {
        let offer = try SessionDescription.parse(Offers.firefox)
        #expect(offer.fingerprints.count == 1)
        for media in offer.media {
            #expect(media.fingerprints == offer.fingerprints)
            #expect(media.iceUfrag == "fb4c22ad")
        }
        #expect(offer.media[0].extmaps.contains(SDPExtmap(id: 2, direction: .recvonly, uri: "urn:ietf:params:rtp-hdrext:csrc-audio-level")))
        #expect(offer.media[0].endOfCandidates)
        #expect(offer.media[0].candidates.map(\.transport) == ["udp", "tcp"])
        #expect(offer.media[0].codec(payloadType: 9)?.channels == 1)
        #expect(offer.media[1].codec(payloadType: 126)?.fmtp == "profile-level-id=42e01f;level-asymmetry-allowed=1;packetization-mode=1")
        #expect(offer.media[1].sourceGroups.first?.ssrcs == [3133453232, 3806839355])
    }

    @Test("OBS: session-level setup, ufrag and pwd are resolved into both sections")
    func obs() throws {
        let offer = try SessionDescription.parse(Offers.obs)
        #expect(offer.setup == .actpass)
        #expect(offer.iceOptions == ["ice2", "trickle"])
        #expect(offer.groups.map(\.semantics) == ["BUNDLE", "LS"])
        for media in offer.media {
            #expect(media.setup == .actpass)
            #expect(media.iceUfrag == "Qx7d")
            #expect(media.icePwd == "w0K3vYfN8pLr2sTq6uHb1c")
        }
        #expect(offer.media[0].candidates[1].transportAddress == TransportAddress(ip: IPAddress("fe80::6c3d:5b42:1532:2f9a")!, port: 51035))
        #expect(offer.media[1].candidates.isEmpty)
    }

    @Test("GStreamer: a bundle-only section with port 0 is not disabled; rtcp-mux-only parses")
    func gstreamer() throws {
        let offer = try SessionDescription.parse(Offers.gstreamer)
        #expect(offer.bundleMids == ["video0", "audio1"])
        let audio = offer.media[1]
        #expect(audio.port == 0 && audio.bundleOnly && !audio.isDisabled)
        #expect(audio.rtcpMuxOnly)
        #expect(offer.media[0].candidates.count == 9)
        #expect(!offer.media[0].endOfCandidates)
        #expect(offer.media[0].codec(payloadType: 96)?.parameters["sprop-parameter-sets"] == "Z0LAFdkBQfsBagwMDUoAAAMAAgAAAwB5HixckA==,aMuMsg==")
    }

    @Test("aiortc: several fingerprints per section")
    func aiortc() throws {
        let offer = try SessionDescription.parse(Offers.aiortc)
        #expect(offer.media[0].fingerprints.map(\.algorithm) == ["sha-256", "sha-384", "sha-512"])
        #expect(offer.media[0].fingerprints.map(\.bytes.count) == [32, 48, 64])
    }

    @Test("simulcast: rid and simulcast lines are kept in the model")
    func simulcast() throws {
        let video = try SessionDescription.parse(Offers.simulcast).media[1]
        #expect(video.rids.map(\.id) == ["f", "h", "q"])
        #expect(video.rids.allSatisfy { $0.direction == "send" })
        #expect(video.simulcast == "send f;h;q")
        #expect(video.sources.isEmpty)
    }

    @Test("LF and CRLF line endings give the same description; blank lines and trailing blanks are ignored")
    func lineEndings() throws {
        let crlfParsed = try SessionDescription.parse(Offers.chrome)
        let lf = Offers.chrome.sdpLines.joined(separator: "\n")
        #expect(try SessionDescription.parse(lf) == crlfParsed)
        let messy = Offers.chrome.sdpLines.map { $0 + "  " }.joined(separator: "\r\n\r\n")
        #expect(try SessionDescription.parse(messy) == crlfParsed)
    }

    @Test("rtcp-fb with a wildcard applies to every payload type; session direction is inherited")
    func wildcardAndSessionDirection() throws {
        let offer = try SessionDescription.parse("""
            v=0
            o=- 1 1 IN IP4 0.0.0.0
            s=-
            t=0 0
            a=sendonly
            m=video 9 UDP/TLS/RTP/SAVPF 96 98
            a=rtpmap:96 VP8/90000
            a=rtpmap:98 H264/90000
            a=rtcp-fb:96 goog-remb
            a=rtcp-fb:*   nack   pli
            m=audio 9 UDP/TLS/RTP/SAVPF 111
            a=recvonly
            a=rtpmap:111 opus/48000/2
            """)
        #expect(offer.media[0].codec(payloadType: 96)?.feedback == ["goog-remb", "nack pli"])
        #expect(offer.media[0].codec(payloadType: 98)?.feedback == ["nack pli"])
        #expect(offer.media[0].direction == .sendonly)
        #expect(offer.media[1].direction == .recvonly)
    }

    @Test("malformed input is rejected with the line at fault",
          arguments: [
              ("", SDPError.empty),
              ("\r\n\r\n", SDPError.empty),
              ("hello", SDPError.malformedLine(number: 1, text: "hello")),
              ("o=- 1 1 IN IP4 0.0.0.0\nv=0", SDPError.missingVersion),
              ("v=1", SDPError.unsupportedVersion("1")),
              ("v=0\nm=video", SDPError.malformedMediaLine(number: 2, text: "m=video")),
              ("v=0\nm=video x UDP/TLS/RTP/SAVPF 96", SDPError.malformedMediaLine(number: 2, text: "m=video x UDP/TLS/RTP/SAVPF 96")),
              ("v=0\no=only three fields", SDPError.malformedLine(number: 2, text: "o=only three fields")),
              ("v=0\nm=video 9 RTP/AVP 96\na=rtpmap:96 H264", SDPError.malformedAttribute(number: 3, text: "a=rtpmap:96 H264")),
              ("v=0\nm=video 9 RTP/AVP 96\na=rtpmap:300 H264/90000", SDPError.malformedAttribute(number: 3, text: "a=rtpmap:300 H264/90000")),
              ("v=0\nm=video 9 RTP/AVP 96\na=extmap:x urn:a", SDPError.malformedAttribute(number: 3, text: "a=extmap:x urn:a")),
              ("v=0\na=fingerprint:sha-256 ZZ:00", SDPError.malformedAttribute(number: 2, text: "a=fingerprint:sha-256 ZZ:00")),
              ("v=0\na=setup:sometimes", SDPError.malformedAttribute(number: 2, text: "a=setup:sometimes")),
              ("v=0\nm=video 9 RTP/AVP 96\na=ssrc:abc cname:x", SDPError.malformedAttribute(number: 3, text: "a=ssrc:abc cname:x")),
              ("v=0\nm=video 9 RTP/AVP 96\na=ssrc-group:FID 1 x", SDPError.malformedAttribute(number: 3, text: "a=ssrc-group:FID 1 x")),
              ("v=0\nA=b", SDPError.malformedLine(number: 2, text: "A=b")),
          ])
    func malformed(text: String, error: SDPError) {
        #expect(throws: error) { try SessionDescription.parse(text) }
    }

    @Test("an oversized body is refused before parsing")
    func tooLarge() {
        let huge = "v=0\r\n" + String(repeating: "a=x-filler:0123456789abcdef\r\n", count: 5000)
        #expect(throws: SDPError.tooLarge(bytes: huge.utf8.count, limit: SessionDescription.maximumLength)) {
            try SessionDescription.parse(huge)
        }
    }

    @Test("every truncation of a real offer either parses or throws, never traps")
    func truncations() {
        let offer = Array(Offers.firefox.utf8)
        for count in stride(from: 0, to: offer.count, by: 7) {
            let prefix = String(decoding: offer.prefix(count), as: UTF8.self)
            _ = try? SessionDescription.parse(prefix)
        }
    }

    @Test("candidate lines that do not follow the grammar are skipped, not fatal")
    func oddCandidates() throws {
        let offer = try SessionDescription.parse("""
            v=0
            m=audio 9 UDP/TLS/RTP/SAVPF 111
            a=candidate:1 1 udp notanumber 1.2.3.4 5 typ host
            a=candidate:garbage
            a=candidate:2 1 udp 100 1.2.3.4 5 typ host
            """)
        #expect(offer.media[0].candidates.map(\.foundation) == ["2"])
    }
}
