// Seeds of the whep-viewer target: real viewers' offers (Chromium's, aiortc's), then a
// composition's frames going out and RTCP coming back as a player sends it (receiver reports
// echoing our sender reports, NACKs for packets that were sent, PLI, FIR), and the attacks
// (a NACK flood, repeated FIRs, a viewer silent for seconds). The target replays the outlet
// from a fixed seed, so a shadow outlet here learns which sequence numbers were sent.
@testable import FuzzTargets
import MediaCore
import TestSupport
import WebRTCMedia
import WebRTCSignal

enum WHEPViewerSeeds {
    static func generate() throws -> [(name: String, bytes: [UInt8])] {
        [("chromium-session", try session(offer: Offers.chromiumWHEP, seconds: 3, attack: .none)),
         ("aiortc-session", try session(offer: Offers.aiortcWHEP, seconds: 2, attack: .none)),
         ("nack-flood", try session(offer: Offers.chromiumWHEP, seconds: 1, attack: .nackFlood)),
         ("fir-repeats", try session(offer: Offers.chromiumWHEP, seconds: 1, attack: .firRepeats)),
         ("silent-viewer", try session(offer: Offers.aiortcWHEP, seconds: 10, attack: .silence))]
    }

    enum Attack { case none, nackFlood, firRepeats, silence }

    /// The input, built while a shadow of the target's outlet runs the same steps.
    struct Script {
        var writer = FuzzInputWriter()
        let outlet: WHEPViewerOutlet
        var now: Int64 = 1_000_000
        var sentVideo: [UInt16] = []
        var lastReport: UInt32 = 0
        var frames: Int64 = 0

        /// Time that passes before the next action (each action is a step: its delay byte, its kind).
        var pending = 0

        mutating func step(milliseconds: Int) {
            pending += milliseconds
            now += Int64(milliseconds) * 1000
        }

        private mutating func action(_ kind: UInt8) {
            writer.byte(UInt8(pending))
            writer.byte(kind)
            pending = 0
        }

        mutating func video(key: Bool, size: Int) {
            action(0)
            writer.uint16(UInt16(size - 8))
            writer.byte(key ? 1 : 0)
        }

        mutating func audio() { action(1) }

        mutating func rtcp(_ packets: [RTCPPacket]) throws {
            action(2)
            writer.lengthPrefixed(try RTCPPacket.serializeCompound(packets))
        }

        mutating func drain() {
            action(3)
            var out: [WHEPDatagram] = []
            outlet.due(now: now, into: &out)
            for datagram in out {
                if datagram.isRTCP, let packets = try? RTCPPacket.parseCompound(datagram.bytes) {
                    for case .senderReport(let report) in packets { lastReport = UInt32(truncatingIfNeeded: report.ntpTime >> 16) }
                } else if let packet = try? RTPPacket(parsing: datagram.bytes), packet.ssrc == WHEPViewerTarget.answerOptions.streams.videoSSRC {
                    sentVideo.append(packet.sequenceNumber)
                }
            }
        }
    }

    static func session(offer: String, seconds: Int, attack: Attack) throws -> [UInt8] {
        let negotiation = try WHEPNegotiator.negotiate(offer: offer, options: WHEPViewerTarget.answerOptions)
        var script = Script(outlet: try WHEPViewerTarget.makeOutlet(negotiation))
        script.writer.lengthPrefixed(Array(offer.utf8))
        let video = WHEPViewerTarget.answerOptions.streams.videoSSRC
        // The shadow outlet takes the frames the target will make (the same packetizer input).
        var packetizer = H264Packetizer(), opus = OpusPacketizer()
        var audioFrames: Int64 = 0
        for tick in 0..<(seconds * 30) {
            let key = tick % 30 == 0, size = key ? 24_000 : 2_000 + (tick * 397) % 3_000
            script.step(milliseconds: 33)
            script.video(key: key, size: size)
            let nal: [UInt8] = [key ? 0x65 : 0x41] + [UInt8](repeating: 0xAB, count: size - 8 + 8)
            let unit = (key ? [[0x67, 0x4D, 0x40, 0x2A, 0xDA, 0x01], [0x68, 0xCE, 0x3C, 0x80]] : []) + [nal]
            let frame = try packetizer.packetize(unit.flatMap { [0, 0, 0, 1] + $0 }, format: .annexB,
                                                 pts: MediaTime(ticks: script.frames, timeBase: Rational(1, 30)))
            script.frames += 1
            script.outlet.enqueue(frame, now: script.now, epoch: (media: 0, time: 1_000_000))
            if tick % 2 == 0 {
                script.audio()
                let sound = try opus.packetize([0xFC, 0xFF, 0xFE], pts: MediaTime(ticks: audioFrames * 960, timeBase: Rational(1, 48_000)))
                audioFrames += 1
                script.outlet.enqueue(sound, now: script.now, epoch: (media: 0, time: 1_000_000))
            }
            if attack == .silence, tick >= 30 { continue }  // no RTCP and no reading after the first second
            script.drain()
            let lost = script.sentVideo.suffix(12).enumerated().filter { $0.offset % 5 == 0 }.map(\.element)
            let report = RTCPReportBlock(ssrc: video, fractionLost: 0, cumulativeLost: 0, extendedHighestSequence: UInt32(script.sentVideo.last ?? 0),
                                         jitter: 0, lastSenderReport: script.lastReport, delaySinceLastSenderReport: 655)
            switch attack {
            case .nackFlood:
                // Every packet sent so far, NACKed again each tick.
                let pairs = stride(from: 0, to: script.sentVideo.count, by: 17).map { index in
                    RTCPNackPair(packetID: script.sentVideo[index], lostBitmask: 0xFFFF)
                }
                try script.rtcp([.receiverReport(RTCPReceiverReport(ssrc: 5, reportBlocks: [report])),
                                 .genericNack(RTCPGenericNack(senderSSRC: 5, mediaSSRC: video, pairs: pairs))])
            case .firRepeats:
                try script.rtcp([.fullIntraRequest(RTCPFullIntraRequest(senderSSRC: 5, entries: [.init(ssrc: video, sequenceNumber: UInt8(tick % 3))]))])
            default:
                if tick % 10 == 5 {
                    var packets: [RTCPPacket] = [.receiverReport(RTCPReceiverReport(ssrc: 5, reportBlocks: [report]))]
                    if !lost.isEmpty { packets.append(.genericNack(RTCPGenericNack(senderSSRC: 5, mediaSSRC: video, lost: lost))) }
                    if tick % 30 == 15 { packets.append(.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 5, mediaSSRC: video))) }
                    try script.rtcp(packets)
                }
            }
        }
        script.step(milliseconds: 200)
        script.drain()
        return script.writer.bytes
    }
}
