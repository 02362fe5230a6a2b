// A WHEP viewer after DTLS-SRTP: the offer it made, then the composition's frames going to it
// and its decrypted RTCP coming back, through the outlet the daemon's viewer session drains
// (pacer, send streams, NACK answers with RTX, sender reports, keyframe requests), on a manual
// clock. The viewer's RTCP is the hostile part: receiver reports with forged LSR/DLSR, NACK
// floods, repeated FIRs, BYEs, garbage.
//
// Input: the offer (16-bit length, SDP text), then steps, each a step byte (ms that pass), a
// kind byte (0: a video frame, its size 16-bit and keyframe flag next; 1: an Opus frame; 2: the
// viewer's RTCP, 16-bit length and bytes; 3: the transport drains what is due) .
//
// Checked after every step: the pacer's queue within its bound, every datagram within a
// datagram's size, and no more answers to an RTCP packet than the packets it NACKed.

import MediaCore
import WebRTCIngest
import WebRTCMedia
import WebRTCSignal

enum WHEPViewerTarget {
    static let answerOptions = WHEPAnswerOptions(
        localCredentials: IceCredentials(ufrag: "fzuf", pwd: "fuzzfuzzfuzzfuzzfuzzfuzz"),
        localFingerprintSHA256: Array(repeating: "AB", count: 32).joined(separator: ":"),
        candidates: [TransportAddress(ip: .ipv4(192, 0, 2, 1), port: 40_000)], sessionID: 1,
        videoProfileLevelID: H264ProfileLevelID(profileIDC: 0x4D, constraintFlags: 0x40, levelIDC: 42), profileMatching: .anyOffered,
        streams: WHEPLocalStreams(cname: "fuzzcname", streamID: "s", audioTrackID: "a", videoTrackID: "v",
                                  audioSSRC: 0x0A0A_0A0A, videoSSRC: 0x0B0B_0B0B, videoRTXSSRC: 0x0C0C_0C0C))
    /// A datagram we write: the largest payload plus the RTP header, its extensions and RTX's two bytes.
    static let maxDatagram = H264Packetizer.defaultMaxPayloadSize + 64

    static func run(_ input: [UInt8]) -> FuzzReach {
        var reader = FuzzReader(input)
        guard let negotiation = try? WHEPNegotiator.negotiate(offer: String(decoding: reader.lengthPrefixed(), as: UTF8.self),
                                                              options: answerOptions),
              let outlet = try? makeOutlet(negotiation) else { return FuzzReach() }
        let pacer = ViewerPacerConfiguration()
        var video = H264Packetizer()
        var opus = OpusPacketizer()
        var now: Int64 = 1_000_000
        var frames: Int64 = 0, audioFrames: Int64 = 0
        var out: [WHEPDatagram] = []
        while !reader.isAtEnd {
            now &+= Int64(reader.byte()) &* 1000
            switch reader.byte() % 4 {
            case 0:
                let size = Int(reader.uint16()) % 60_000 + 8
                let key = reader.byte() & 1 == 1
                let nal: [UInt8] = [key ? 0x65 : 0x41] + [UInt8](repeating: 0xAB, count: size)
                let unit = (key ? [[0x67, 0x4D, 0x40, 0x2A, 0xDA, 0x01], [0x68, 0xCE, 0x3C, 0x80]] : []) + [nal]
                guard let frame = try? video.packetize(unit.flatMap { [0, 0, 0, 1] + $0 }, format: .annexB,
                                                       pts: MediaTime(ticks: frames, timeBase: Rational(1, 30))) else { continue }
                frames += 1
                outlet.enqueue(frame, now: now, epoch: (media: 0, time: 1_000_000))
            case 1:
                guard let frame = try? opus.packetize([0xFC, 0xFF, 0xFE], pts: MediaTime(ticks: audioFrames * 960, timeBase: Rational(1, 48_000)))
                else { continue }
                audioFrames += 1
                outlet.enqueue(frame, now: now, epoch: (media: 0, time: 1_000_000))
            case 2:
                let compound = reader.lengthPrefixed()
                out.removeAll(keepingCapacity: true)
                _ = outlet.feedback(compound, now: now, into: &out)
                // Answers are retransmissions only, each of a packet a NACK of ours asked for (a
                // PID and its 16-bit mask: 17 at most per pair).
                let asked = ((try? RTCPPacket.parseCompound(compound)) ?? []).reduce(0) { count, packet in
                    guard case .genericNack(let nack) = packet else { return count }
                    return count + 17 * nack.pairs.count
                }
                FuzzBound(out.count <= asked, "\(out.count) answers to RTCP that NACKed at most \(asked) packets")
                check(out)
            default:
                out.removeAll(keepingCapacity: true)
                outlet.due(now: now, into: &out)
                check(out)
            }
            FuzzBound(outlet.queuedVideoPackets <= pacer.maxQueuedVideoPackets + 60_000 / 1_000 + 2,
                      "\(outlet.queuedVideoPackets) video packets queued")
        }
        return FuzzReach(accepted: 1, mediaPackets: Int(outlet.counters.packets))
    }

    /// The outlet with fixed first sequence numbers and timestamp offsets, so that an input
    /// replays exactly (and a seed can NACK packets it knows were sent).
    static func makeOutlet(_ negotiation: WHEPNegotiation) throws(RTPError) -> WHEPViewerOutlet {
        var random = Constant()
        return try WHEPViewerOutlet(streams: WHEPViewerStreams(negotiation), using: &random)
    }

    /// Always the same draw: sequence numbers start near the 16-bit wrap, so inputs cross it.
    struct Constant: RandomNumberGenerator {
        mutating func next() -> UInt64 { 0xFFF0_FFF0_FFF0_FFF0 }
    }

    private static func check(_ datagrams: [WHEPDatagram]) {
        for datagram in datagrams {
            FuzzBound(datagram.bytes.count <= maxDatagram, "a datagram of \(datagram.bytes.count) bytes")
        }
    }
}
