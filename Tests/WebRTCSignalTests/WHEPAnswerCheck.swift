// What every WHEP answer must be, whatever the offer: read back with our own parser and held
// against the offer and the options. Shared by the example tests and the property test, so it
// returns problems instead of failing.
import TestSupport
@testable import WebRTCSignal

enum WHEPAnswerCheck {
    static func problems(_ negotiation: WHEPNegotiation, offer text: String, options: WHEPAnswerOptions) -> [String] {
        var problems: [String] = []
        func check(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition { problems.append(message()) }
        }
        let answer = negotiation.answer
        let bytes = Array(answer.utf8)
        for (index, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: "\n") { check(index > 0 && bytes[index - 1] == UInt8(ascii: "\r"), "a bare LF at \(index)") }
            if byte == UInt8(ascii: "\r") { check(index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "\n"), "a bare CR at \(index)") }
        }
        check(answer.hasSuffix("\r\n"), "the answer does not end in CRLF")
        guard let offer = try? SessionDescription.parse(text) else { return problems + ["an accepted offer does not parse"] }
        let parsed: SessionDescription
        do {
            parsed = try SessionDescription.parse(answer)
        } catch {
            return problems + ["the answer does not parse: \(error)"]
        }
        check(parsed.iceLite, "no a=ice-lite")
        guard parsed.media.count == offer.media.count else {
            return problems + ["\(parsed.media.count) sections answer \(offer.media.count)"]
        }
        check(parsed.bundleMids ?? [] == negotiation.bundleMids, "BUNDLE \(parsed.bundleMids ?? []) vs \(negotiation.bundleMids)")
        check(negotiation.video.kind == .video && negotiation.audio.map { $0.kind == .audio } ?? true, "track kinds")

        let first = options.candidates[0]
        for (index, media) in parsed.media.enumerated() {
            let offered = offer.media[index]
            check(media.kind == offered.kind, "section \(index) is \(media.kind) for \(offered.kind)")
            check(media.mid == offered.mid, "section \(index) has mid \(media.mid ?? "-") for \(offered.mid ?? "-")")
            guard let track = negotiation.tracks.first(where: { $0.index == index }) else {
                check(media.port == 0, "rejected section \(index) has port \(media.port)")
                check(media.attributes.allSatisfy { $0.name == "mid" }, "rejected section \(index) has attributes")
                check(negotiation.rejected.contains { $0.index == index }, "section \(index) is neither served nor rejected")
                check(!(media.mid.map(negotiation.bundleMids.contains) ?? false), "rejected section \(index) is bundled")
                continue
            }
            check(media.port == Int(first.port), "section \(index) port \(media.port)")
            check(media.direction == .sendonly, "section \(index) is \(media.direction)")
            check(offered.direction == .recvonly || offered.direction == .sendrecv, "served a \(offered.direction) section")
            check(media.rtcpMux && offered.rtcpMux, "section \(index) without rtcp-mux")
            check(media.setup == negotiation.localSetup, "section \(index) setup")
            check(media.iceUfrag == options.localCredentials.ufrag && media.icePwd == options.localCredentials.pwd, "ICE credentials")
            check(media.fingerprints == [SDPFingerprint(algorithm: "sha-256", bytes: SDPFingerprint.parseHex(options.localFingerprintSHA256) ?? [])],
                  "fingerprint")
            check(media.candidates.count == options.candidates.count && media.candidates.first?.transportAddress == first,
                  "candidates \(media.candidates)")
            check(media.endOfCandidates, "no end-of-candidates")
            check(media.formats == [String(track.payloadType)] + (track.rtx.map { [String($0.payloadType)] } ?? []),
                  "formats \(media.formats)")

            // Every payload type we answer is one the viewer offered, for the same codec.
            let offeredCodec = offered.codec(payloadType: track.payloadType)
            let answeredCodec = media.codec(payloadType: track.payloadType)
            check(offered.payloadTypes.contains(track.payloadType), "PT \(track.payloadType) was not offered")
            if track.kind == .video {
                check(offeredCodec.map { $0.isNamed("H264") && $0.clockRate == 90000 && $0.parameters["packetization-mode"] == "1" } ?? false,
                      "PT \(track.payloadType) is not offered H.264 packetization-mode=1")
                check(answeredCodec?.parameters["packetization-mode"] == "1", "answered packetization-mode")
                // The viewer finds its decoder by profile: ours must be one it offered for this PT.
                let offeredProfile = offeredCodec?.parameters["profile-level-id"].map { H264ProfileLevelID($0)?.profile } ?? .constrainedBaseline
                let answeredProfile = answeredCodec?.parameters["profile-level-id"].flatMap { H264ProfileLevelID($0) }
                check(answeredProfile?.profile != nil && answeredProfile?.profile == offeredProfile,
                      "answered profile \(answeredProfile?.description ?? "-") is not the offered \(String(describing: offeredProfile))")
                check(answeredProfile?.level != nil, "answered level")
                check(answeredProfile == track.h264?.answered, "answered profile-level-id")
            } else {
                check(offeredCodec.map { $0.isNamed("opus") && $0.clockRate == 48000 } ?? false, "PT \(track.payloadType) is not offered Opus")
                check(answeredCodec?.channels == 2, "Opus channels")
            }
            if let rtx = track.rtx {
                let offeredRTX = offered.codec(payloadType: rtx.payloadType)
                check(offeredRTX?.isNamed("rtx") == true && offeredRTX?.parameters["apt"] == String(track.payloadType),
                      "RTX PT \(rtx.payloadType) is not the offered RTX of \(track.payloadType)")
                check(media.codec(payloadType: rtx.payloadType)?.parameters["apt"] == String(track.payloadType), "answered apt")
                check(media.sourceGroups == [SDPSourceGroup(semantics: "FID", ssrcs: [track.ssrc, rtx.ssrc])], "FID group")
            } else {
                check(media.sourceGroups.isEmpty, "a source group without RTX")
            }
            let ssrcs = [track.ssrc] + (track.rtx.map { [$0.ssrc] } ?? [])
            check(media.sources.map(\.ssrc) == ssrcs, "SSRCs \(media.sources.map(\.ssrc))")
            check(media.sources.allSatisfy { $0.cname == options.streams.cname && $0.msid == media.msid }, "ssrc cname/msid")
            check(media.msid?.hasPrefix(options.streams.streamID + " ") == true, "msid \(media.msid ?? "-")")

            // Feedback: offered for this PT and one we act on.
            for feedback in answeredCodec?.feedback ?? [] {
                check(offeredCodec?.feedback.contains(feedback) == true && WHEPNegotiator.supportedFeedback.contains(feedback),
                      "feedback \(feedback)")
            }
            // Extensions: offered with the same id, ours to send, one-byte ids.
            for extmap in media.extmaps {
                check(offered.extmaps.contains { $0.id == extmap.id && $0.uri == extmap.uri }, "extmap \(extmap.id) \(extmap.uri) not offered")
                check([SDPExtmap.absSendTimeURI, SDPExtmap.midURI].contains(extmap.uri) && (1...14).contains(extmap.id), "extmap \(extmap.uri)")
            }
            check(Set(media.extmaps.map(\.id)).count == media.extmaps.count, "an extension id twice")
            if let mid = track.mid, negotiation.tracks.count > 1 { check(negotiation.bundleMids.contains(mid), "served \(mid) not bundled") }
        }
        check(!answer.contains("transport-cc"), "transport-cc answered")
        return problems
    }
}
