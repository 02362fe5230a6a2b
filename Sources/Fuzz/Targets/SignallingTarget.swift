// What a WHIP publisher or a WHEP viewer sends before media: SDP offers into the
// negotiators, and STUN datagrams into the ICE-lite agent. The first byte picks which: even,
// an offer, which goes to the WHIP negotiator and to the WHEP one (bits 1–2 pick the
// composition's H.264 profile, bit 3 `.anyOffered`); odd, STUN.
//
// SDP: the answer we produce must parse again and keep its media sections; a WHEP answer's
// payload types are ones the offer has for the codec we send, and a refusal never blames us.
// STUN: every datagram goes to one agent in turn (from one of a few addresses, time passing
// between them), as the daemon's UDP socket delivers them; a response is one datagram of sane size.

import WebRTCSignal

enum SignallingTarget {
    static func run(_ input: [UInt8]) -> FuzzReach {
        var reader = FuzzReader(input)
        let first = reader.byte()
        if first & 1 == 0 {
            let text = String(decoding: reader.rest(), as: UTF8.self)
            let whip = offer(text)
            let whep = viewerOffer(text, profile: whepProfiles[Int(first >> 1) & 3], anyOffered: first & 8 != 0)
            return FuzzReach(accepted: max(whip.accepted, whep.accepted))
        } else {
            return stun(&reader)
        }
    }

    private static func offer(_ text: String) -> FuzzReach {
        guard let negotiation = try? SDPNegotiator.negotiate(offer: text, options: WHIPMediaTarget.answerOptions) else {
            return FuzzReach()
        }
        let answer: SessionDescription
        do {
            answer = try SessionDescription.parse(negotiation.answer)
        } catch {
            fatalError("our answer does not parse (\(error)):\n\(negotiation.answer)")
        }
        FuzzBound(answer.media.count == negotiation.media.count + negotiation.rejected.count,
                  "the answer has \(answer.media.count) media sections for \(negotiation.media.count) accepted and \(negotiation.rejected.count) rejected")
        return FuzzReach(accepted: 1)
    }

    /// libx264's Constrained Baseline 3.1, Main 4, High 4, and Constrained Baseline 1b.
    static let whepProfiles = ["42c01f", "4d4028", "640028", "42f00b"].map { H264ProfileLevelID($0)! }

    static func whepOptions(profile: H264ProfileLevelID, anyOffered: Bool) -> WHEPAnswerOptions {
        WHEPAnswerOptions(localCredentials: WHIPMediaTarget.answerOptions.localCredentials,
                          localFingerprintSHA256: WHIPMediaTarget.answerOptions.localFingerprintSHA256,
                          candidates: [WHIPMediaTarget.answerOptions.candidate], sessionID: 1, videoProfileLevelID: profile,
                          profileMatching: anyOffered ? .anyOffered : .decodable,
                          streams: WHEPLocalStreams(cname: "fuzzcname", streamID: "fuzz", audioTrackID: "a", videoTrackID: "v",
                                                    audioSSRC: 1, videoSSRC: 2, videoRTXSSRC: 3))
    }

    private static func viewerOffer(_ text: String, profile: H264ProfileLevelID, anyOffered: Bool) -> FuzzReach {
        let negotiation: WHEPNegotiation
        do {
            negotiation = try WHEPNegotiator.negotiate(offer: text, options: whepOptions(profile: profile, anyOffered: anyOffered))
        } catch {
            FuzzBound(!error.isServerFault, "a viewer's offer refused as our fault: \(error)")
            return FuzzReach()
        }
        let answer: SessionDescription, offer: SessionDescription
        do {
            answer = try SessionDescription.parse(negotiation.answer)
            offer = try SessionDescription.parse(text)
        } catch {
            fatalError("our WHEP answer does not parse (\(error)):\n\(negotiation.answer)")
        }
        FuzzBound(answer.media.count == offer.media.count, "a WHEP answer of \(answer.media.count) sections to \(offer.media.count)")
        for track in negotiation.tracks {
            let offered = offer.media[track.index].codec(payloadType: track.payloadType)
            let name = track.kind == .video ? "H264" : "opus"
            FuzzBound(offered?.isNamed(name) == true, "WHEP answered PT \(track.payloadType) for \(offered?.name ?? "nothing")")
            if let rtx = track.rtx {
                let offeredRTX = offer.media[track.index].codec(payloadType: rtx.payloadType)
                FuzzBound(offeredRTX?.isNamed("rtx") == true && offeredRTX?.parameters["apt"] == String(track.payloadType),
                          "WHEP answered RTX PT \(rtx.payloadType) for apt \(offeredRTX?.parameters["apt"] ?? "-")")
            }
        }
        return FuzzReach(accepted: 1)
    }

    static let remote = IceCredentials(ufrag: "rmt1", pwd: "remotepasswordremotepassword")

    /// A keyed FNV-1a stand-in for HMAC-SHA1: the fuzzer is after parsing and state, not digests.
    static let fastHMAC: HMACSHA1 = { key, message in
        var state: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key + message { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return (0..<20).map { UInt8(truncatingIfNeeded: state >> UInt64($0 % 8 * 8) &+ UInt64($0)) }
    }

    private static func stun(_ reader: inout FuzzReader) -> FuzzReach {
        var reach = FuzzReach()
        var agent = IceLiteAgent(local: WHIPMediaTarget.answerOptions.localCredentials, remote: remote, hmacSHA1: fastHMAC,
                                 now: 0)
        var now: Int64 = 0
        while !reader.isAtEnd {
            now &+= Int64(reader.byte()) &* 10_000
            let source = TransportAddress(ip: .ipv4(198, 51, 100, reader.byte() & 3), port: 50_000)
            let datagram = reader.lengthPrefixed()
            _ = try? STUNMessage.decode(datagram)
            var actions = STUN.looksLikeSTUN(datagram) ? agent.receiveStun(datagram, from: source, now: now)
                                                        : agent.mediaReceived(from: source, now: now)
            actions += agent.poll(now: now)
            for case .send(let response, _) in actions {
                FuzzBound(response.count <= 548, "a STUN response of \(response.count) bytes")
            }
            for case .connected(_) in actions { reach.accepted = 1 }
        }
        return reach
    }
}
