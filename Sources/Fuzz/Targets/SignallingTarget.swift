// What a WHIP publisher sends before media: SDP offers into the negotiator, and STUN
// datagrams into the ICE-lite agent. The first byte picks which.
//
// SDP: the answer we produce must parse again and keep its media sections. STUN: every
// datagram goes to one agent in turn (from one of a few addresses, time passing between
// them), as the daemon's UDP socket delivers them; a response is one datagram of sane size.

import WebRTCSignal

enum SignallingTarget {
    static func run(_ input: [UInt8]) -> FuzzReach {
        var reader = FuzzReader(input)
        if reader.byte() & 1 == 0 {
            return offer(String(decoding: reader.rest(), as: UTF8.self))
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
