// A WHIP publisher's media after DTLS-SRTP: the offer it negotiated, then its decrypted
// RTP and RTCP datagrams through PublisherMediaReceiver (RTX, reordering, NACK, sender
// clocks, simulcast, the depacketizers) and the forwarder into a LivePublisher, as the
// daemon's WHIP session does, on a manual clock.
//
// Input: a flags byte (bit 0: accept simulcast), the offer (16-bit length, SDP text), then
// datagrams, each a step byte (ms that pass before it), a kind byte (bit 0: RTCP) and the
// datagram (16-bit length).
//
// Checked after every datagram: receive state only for the streams the offer allows (an
// SSRC flood costs nothing), RTCP replies of sane size, and what FuzzStage checks.

import LiveStage
import WebRTCIngest
import WebRTCMedia
import WebRTCPublisher
import WebRTCSignal

enum WHIPMediaTarget {
    static let answerOptions = SDPAnswerOptions(
        localCredentials: IceCredentials(ufrag: "fzuf", pwd: "fuzzfuzzfuzzfuzzfuzzfuzz"),
        localFingerprintSHA256: Array(repeating: "AB", count: 32).joined(separator: ":"),
        candidate: TransportAddress(ip: .ipv4(192, 0, 2, 1), port: 40_000), sessionID: 1,
        requireAudio: false, requireVideo: false)

    static func run(_ input: [UInt8]) -> FuzzReach {
        var reader = FuzzReader(input)
        let flags = reader.byte()
        var options = answerOptions
        options.acceptSimulcast = flags & 1 != 0
        guard let negotiation = try? SDPNegotiator.negotiate(offer: String(decoding: reader.lengthPrefixed(), as: UTF8.self),
                                                              options: options) else { return FuzzReach() }
        let stage = FuzzStage()
        defer { stage.close() }
        let publisher = stage.hub.join(stageArn: FuzzStage.stageArn,
                                       identity: LiveParticipantIdentity(participantId: "whipfuzz", userId: "", attributes: [:]))
        var forwarder = WebRTCMediaForwarder(publisher: publisher)
        var receiver = PublisherMediaReceiver(negotiation: negotiation,
                                              configuration: PublisherMediaReceiverConfiguration(senderSSRC: 0x5354_4147))
        let bounds = StreamBounds(negotiation)
        var now: Int64 = 1_000_000
        while !reader.isAtEnd {
            now &+= Int64(reader.byte()) &* 1000
            stage.clock.advance(to: .microseconds(now))
            let kind = reader.byte()
            let datagram = reader.lengthPrefixed()
            var outputs: [ReceiverOutput]
            if kind & 1 == 0 {
                outputs = receiver.receiveRTP(datagram, now: now)
            } else {
                receiver.receiveRTCP(datagram, now: now)
                outputs = []
            }
            if publisher.takeKeyframeRequest() { receiver.requestKeyframe() }
            // The session polls at each deadline; a bounded number of rounds per step.
            for _ in 0..<4 {
                guard let deadline = receiver.nextDeadline, deadline <= now else { break }
                outputs += receiver.poll(now: now)
            }
            for output in outputs {
                switch output {
                case .accessUnit(let unit): forwarder.forward(unit)
                case .rtcp(let packet): FuzzBound(packet.count <= 1200, "an RTCP reply of \(packet.count) bytes")
                }
            }
            FuzzBound(receiver.streamCount <= bounds.streams, "\(receiver.streamCount) receive streams, \(bounds.streams) allowed")
            FuzzBound(receiver.rtxAssociationCount <= bounds.rtx, "\(receiver.rtxAssociationCount) RTX streams, \(bounds.rtx) allowed")
            stage.drain()
        }
        publisher.leave()
        stage.drain()
        return FuzzReach(accepted: 1, mediaPackets: stage.mediaPackets)
    }

    /// How many streams the offer allows: its declared SSRCs, or one per kind (one per
    /// simulcast layer), and one RTX stream per video stream, twice over for a restart.
    struct StreamBounds {
        var streams: Int
        var rtx: Int

        init(_ negotiation: SDPNegotiation) {
            let videoStreams = max(1, negotiation.video?.simulcastRids.count ?? 1)
            streams = max(negotiation.video?.sources.count ?? 0, videoStreams) + max(negotiation.audio?.sources.count ?? 0, 1)
            let declaredRTX = negotiation.media.flatMap(\.sources).filter { $0.rtxSSRC != nil }.count
            rtx = declaredRTX + 2 * videoStreams + (negotiation.video?.sources.count ?? 0)
        }
    }
}
