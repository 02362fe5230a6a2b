// One outgoing stream: headers read back by the receive side's parser, the send history
// answering NACKs (plain and RTX), the round trip from receiver reports, and sender reports
// that the receive side's SenderClock turns back into one timeline for audio and video.
@testable import WebRTCMedia
import MediaCore
import TestSupport
import Testing

extension SendFixtures {
    static let video = RTPSendStreamConfiguration(ssrc: 0x1234_5678, payloadType: 102, clockRate: 90_000)
    static let audio = RTPSendStreamConfiguration(ssrc: 0x0A0D_10, payloadType: 111, clockRate: 48_000)

    /// A frame of the given payloads (marker on the last unless told otherwise).
    static func frame(_ payloads: [[UInt8]], codec: WebRTCCodec = .h264, timestamp: Int64 = 0, keyframe: Bool = false,
                      marker: Bool = true) -> PacketizedFrame {
        var frame = PacketizedFrame(codec: codec, timestamp: timestamp, isKeyframe: keyframe, marker: marker,
                                    byteCapacity: 0, packetCapacity: 0)
        for payload in payloads {
            frame.append(contentsOf: payload[...])
            frame.closePayload()
        }
        return frame
    }

    /// A video frame of `packets` packets of `size` bytes, tagged with `tag` in every byte.
    static func frame(packets: Int, size: Int = 100, tag: UInt8 = 1, timestamp: Int64 = 0, keyframe: Bool = false) -> PacketizedFrame {
        frame(Array(repeating: Array(repeating: tag, count: size), count: packets), timestamp: timestamp, keyframe: keyframe)
    }

    /// µs of a moment in 2024, on the Unix clock the SRs show.
    static let epoch: Int64 = 1_717_000_000_000_000
}

struct RTPSendStreamTests {
    typealias F = SendFixtures

    @Test("headers: SSRC, payload type, sequence numbers on from the first across 65535 → 0, the timestamp offset wrapping, the marker on the frame's last packet; each parses back")
    func headers() throws {
        var stream = try RTPSendStream(configuration: F.video, initialSequenceNumber: 65534, timestampOffset: UInt32.max - 999)
        let frame = F.frame([[1, 2, 3], [4, 5], [6]], timestamp: 2000)
        var datagram: [UInt8] = []
        var packets: [RTPPacket] = []
        for index in 0..<3 {
            let sequence = stream.writePacket(frame, index: index, now: F.epoch, into: &datagram)
            #expect(datagram.count == stream.headerSize + frame.payload(at: index).count)
            let packet = try RTPPacket(parsing: datagram)
            #expect(packet.sequenceNumber == sequence)
            packets.append(packet)
        }
        #expect(stream.headerSize == 12)
        #expect(packets == [
            RTPPacket(marker: false, payloadType: 102, sequenceNumber: 65534, timestamp: 1000, ssrc: 0x1234_5678, payload: [1, 2, 3]),
            RTPPacket(marker: false, payloadType: 102, sequenceNumber: 65535, timestamp: 1000, ssrc: 0x1234_5678, payload: [4, 5]),
            RTPPacket(marker: true, payloadType: 102, sequenceNumber: 0, timestamp: 1000, ssrc: 0x1234_5678, payload: [6]),
        ])
        #expect(stream.nextSequenceNumber == 1)
        #expect(stream.packetsSent == 3)
        #expect(stream.payloadBytesSent == 6)
        // A frame without the marker (Opus inside a talkspurt) marks none.
        let quiet = F.frame([[9]], codec: .opus, timestamp: 960, marker: false)
        stream.writePacket(quiet, index: 0, now: F.epoch, into: &datagram)
        #expect(try RTPPacket(parsing: datagram).marker == false)
    }

    @Test("abs-send-time (6.18 s of the NTP time of sending) and fixed elements: one-byte form for ids 1–14, two-byte above; an unwritable element is refused")
    func headerExtensions() throws {
        let now = F.epoch + 123_456
        // Independently of NTPTime: seconds since 1900 in 1/2^18, modulo 64 s.
        let seconds = (now + NTPTime.unixEpochOffsetSeconds * 1_000_000)
        let expected = UInt32((Int128(seconds) << 18) / 1_000_000 % (1 << 24))
        func value(_ bytes: [UInt8]?) -> UInt32 { (bytes ?? []).reduce(0) { $0 << 8 | UInt32($1) } }

        var config = F.video
        config.absSendTimeID = 3
        config.fixedExtensions = [RTPHeaderExtensionElement(id: 1, data: Array("v".utf8))]
        var stream = try RTPSendStream(configuration: config, initialSequenceNumber: 1, timestampOffset: 0)
        var datagram: [UInt8] = []
        stream.writePacket(F.frame([[7, 7]]), index: 0, now: now, into: &datagram)
        #expect(stream.headerSize == 12 + 4 + 8)
        let packet = try RTPPacket(parsing: datagram)
        guard case .oneByte(let elements) = packet.headerExtension else { Issue.record("not one-byte"); return }
        #expect(elements.map(\.id) == [3, 1])
        #expect(abs(Int64(value(packet.extensionElement(id: 3))) - Int64(expected)) <= 1)
        #expect(packet.extensionElement(id: 1) == Array("v".utf8))
        #expect(packet.payload == [7, 7])
        // Later sends restamp it.
        stream.writePacket(F.frame([[7, 7]]), index: 0, now: now + 1_000_000, into: &datagram)
        #expect(value(try RTPPacket(parsing: datagram).extensionElement(id: 3)) == (value(packet.extensionElement(id: 3)) + (1 << 18)) & 0xFF_FFFF)

        config.absSendTimeID = 20
        config.fixedExtensions = []
        var twoByte = try RTPSendStream(configuration: config, initialSequenceNumber: 1, timestampOffset: 0)
        twoByte.writePacket(F.frame([[7]]), index: 0, now: now, into: &datagram)
        let parsed = try RTPPacket(parsing: datagram)
        guard case .twoByte(_, let wide) = parsed.headerExtension else { Issue.record("not two-byte"); return }
        #expect(wide.map(\.id) == [20])
        #expect(abs(Int64(value(parsed.extensionElement(id: 20))) - Int64(expected)) <= 1)

        config.absSendTimeID = nil
        config.fixedExtensions = [RTPHeaderExtensionElement(id: 0, data: [1])]
        #expect(throws: RTPError.unencodableHeaderExtension(id: 0, length: 1)) {
            try RTPSendStream(configuration: config, initialSequenceNumber: 0, timestampOffset: 0)
        }
    }

    /// Sends `count` one-packet frames at 1 ms intervals from `F.epoch`; returns the datagrams.
    static func send(_ count: Int, on stream: inout RTPSendStream, from start: Int64 = F.epoch) -> [[UInt8]] {
        var datagram: [UInt8] = []
        return (0..<count).map { number in
            stream.writePacket(F.frame([[UInt8(truncatingIfNeeded: number), 0xEE]], timestamp: Int64(number) * 90),
                               index: 0, now: start + Int64(number) * 1000, into: &datagram)
            return datagram
        }
    }

    @Test("a NACK is answered from the history with the very packets, in the order asked; again within a round trip it is not, after it is")
    func answersNacks() throws {
        var stream = try RTPSendStream(configuration: F.video, initialSequenceNumber: 65530, timestampOffset: 77)
        let sent = Self.send(10, on: &stream)
        let now = F.epoch + 20_000
        let nack = RTCPGenericNack(senderSSRC: 1, mediaSSRC: F.video.ssrc, lost: [65535, 65532, 2])
        let resend = stream.retransmissions(answering: nack, now: now)
        #expect(resend == [65532, 65535, 2])  // NackPacker order: from the widest gap on
        var datagram: [UInt8] = []
        for sequence in resend {
            #expect(stream.writeRetransmission(of: sequence, now: now, into: &datagram))
            #expect(datagram == sent[Int(sequence &- 65530)])
        }
        #expect(stream.retransmissionsSent == 3)
        #expect(stream.packetsSent == 13)
        #expect(stream.sequenceNumbersNacked == 3)
        // 10 ms later: within the assumed 50 ms round trip.
        #expect(stream.retransmissions(answering: nack, now: now + 10_000).isEmpty)
        #expect(stream.retransmissionsSuppressed == 3)
        #expect(stream.retransmissions(answering: nack, now: now + 50_000) == [65532, 65535, 2])
        #expect(stream.nacksReceived == 3)
        // A sequence number asked twice in one NACK goes once.
        let twice = RTCPGenericNack(senderSSRC: 1, mediaSSRC: F.video.ssrc,
                                    pairs: [RTCPNackPair(packetID: 65533, lostBitmask: 0), RTCPNackPair(packetID: 65533, lostBitmask: 0)])
        #expect(stream.retransmissions(answering: twice, now: now + 100_000) == [65533])
    }

    @Test("not resent: never sent, overwritten in the ring, older than the age limit, or a NACK about another SSRC")
    func unavailable() throws {
        var config = F.video
        config.historyCapacity = 12  // rounded up to 16
        var stream = try RTPSendStream(configuration: config, initialSequenceNumber: 0, timestampOffset: 0)
        _ = Self.send(40, on: &stream)
        let now = F.epoch + 40_000
        func ask(_ sequences: [UInt16], at time: Int64, ssrc: UInt32 = F.video.ssrc) -> [UInt16] {
            stream.retransmissions(answering: RTCPGenericNack(senderSSRC: 1, mediaSSRC: ssrc, lost: sequences), now: time)
        }
        #expect(ask([23, 24, 39, 40, 41], at: now) == [24, 39])
        #expect(stream.nackedUnavailable == 3)
        #expect(ask([30], at: now, ssrc: 99).isEmpty)
        #expect(stream.nacksReceived == 1)
        // 24 was sent at epoch + 24 ms: a second after that it is too old.
        #expect(ask([25], at: F.epoch + 1_025_000) == [25])
        #expect(ask([26], at: F.epoch + 1_026_001).isEmpty)
        var datagram: [UInt8] = []
        #expect(!stream.writeRetransmission(of: 3, now: now, into: &datagram))
        #expect(!stream.writeRetransmission(of: 40, now: now, into: &datagram))
    }

    @Test("at most maxRetransmissionsPerNack per NACK; the rest may be asked again at once")
    func perNackLimit() throws {
        var config = F.video
        config.maxRetransmissionsPerNack = 3
        var stream = try RTPSendStream(configuration: config, initialSequenceNumber: 100, timestampOffset: 0)
        _ = Self.send(10, on: &stream)
        let nack = RTCPGenericNack(senderSSRC: 1, mediaSSRC: config.ssrc, lost: [101, 102, 103, 104, 105])
        #expect(stream.retransmissions(answering: nack, now: F.epoch + 20_000) == [101, 102, 103])
        #expect(stream.retransmissionsOverLimit == 2)
        #expect(stream.retransmissions(answering: nack, now: F.epoch + 20_000) == [104, 105])
    }

    @Test("with RTX, a retransmission goes on the RTX SSRC and payload type with its own sequence numbers; RTXUnwrapper gives back the original")
    func rtx() throws {
        var config = F.video
        config.rtx = RTXSendConfiguration(ssrc: 0xBEEF, payloadType: 103)
        var stream = try RTPSendStream(configuration: config, initialSequenceNumber: 500, timestampOffset: 9, initialRTXSequenceNumber: 65535)
        let frame = F.frame([[1, 1, 1], [2, 2]], timestamp: 3000)
        var originals: [RTPPacket] = []
        var datagram: [UInt8] = []
        for index in 0..<2 {
            stream.writePacket(frame, index: index, now: F.epoch, into: &datagram)
            originals.append(try RTPPacket(parsing: datagram))
        }
        let unwrapper = RTXUnwrapper(associations: RTXAssociations(payloadTypes: [103: 102], ssrcs: [0xBEEF: config.ssrc]))
        let resend = stream.retransmissions(answering: RTCPGenericNack(senderSSRC: 1, mediaSSRC: config.ssrc, lost: [501, 500]),
                                            now: F.epoch + 5000)
        var rtxSequences: [UInt16] = []
        for (sequence, original) in zip(resend, originals) {
            #expect(stream.writeRetransmission(of: sequence, now: F.epoch + 5000, into: &datagram))
            let packet = try RTPPacket(parsing: datagram)
            #expect(packet.ssrc == 0xBEEF && packet.payloadType == 103)
            #expect(packet == RTXUnwrapper.wrap(original, rtxSSRC: 0xBEEF, rtxPayloadType: 103, rtxSequenceNumber: packet.sequenceNumber))
            #expect(try unwrapper.unwrap(packet) == .retransmission(original))
            rtxSequences.append(packet.sequenceNumber)
        }
        #expect(rtxSequences == [65535, 0])
        #expect(stream.rtxPacketsSent == 2)
        #expect(stream.rtxPayloadBytesSent == 3 + 2 + 2 + 2)
        #expect(stream.packetsSent == 2)  // the media SSRC's count (its SR) is the originals
        #expect(stream.retransmissionsSent == 2)
    }

    @Test("the round trip from a report block echoing our SR (LSR/DLSR); it then spaces retransmissions; nonsense echoes are ignored")
    func roundTrip() throws {
        var stream = try RTPSendStream(configuration: F.video, initialSequenceNumber: 0, timestampOffset: 0)
        _ = Self.send(5, on: &stream)
        let report = try #require(stream.makeSenderReport(now: F.epoch + 10_000))
        // The viewer held the SR 30 ms; it reaches us 110 ms after it was sent: 80 ms of round trip.
        let held = UInt32(30 * 65536 / 1000)
        stream.receiverReport(RTCPReportBlock(ssrc: F.video.ssrc, fractionLost: 12, lastSenderReport: report.compactNTP,
                                              delaySinceLastSenderReport: held), now: F.epoch + 120_000)
        let rtt = try #require(stream.roundTripTime)
        #expect(abs(rtt - 80_000) <= 40, "\(rtt)")
        #expect(stream.lastReceiverReport?.fractionLost == 12)
        #expect(stream.receiverReportsReceived == 1)
        let nack = RTCPGenericNack(senderSSRC: 1, mediaSSRC: F.video.ssrc, lost: [1])
        #expect(stream.retransmissions(answering: nack, now: F.epoch + 200_000) == [1])
        #expect(stream.retransmissions(answering: nack, now: F.epoch + 260_000).isEmpty)
        #expect(stream.retransmissions(answering: nack, now: F.epoch + 281_000) == [1])
        // Without an echo, about another SSRC, or echoing the future: no new round trip.
        stream.receiverReport(RTCPReportBlock(ssrc: F.video.ssrc), now: F.epoch + 300_000)
        stream.receiverReport(RTCPReportBlock(ssrc: 42, lastSenderReport: report.compactNTP), now: F.epoch + 300_000)
        stream.receiverReport(RTCPReportBlock(ssrc: F.video.ssrc, lastSenderReport: report.compactNTP &+ 65536),
                              now: F.epoch + 300_000)
        #expect(stream.roundTripTime == rtt)
        #expect(stream.receiverReportsReceived == 3)
    }

    @Test("random first sequence number, timestamp offset and RTX sequence: the same for a seed, different across seeds")
    func randomStart() throws {
        func start(_ seed: UInt64) throws -> [UInt64] {
            var generator = SeededGenerator(seed: seed)
            let stream = try RTPSendStream(configuration: F.video, using: &generator)
            return [UInt64(stream.nextSequenceNumber), UInt64(stream.timestampOffset), UInt64(stream.nextRTXSequenceNumber)]
        }
        #expect(try start(1) == start(1))
        let starts = try (1...20).map(start)
        #expect(Set(starts.map { $0[0] }).count == 20)
        #expect(Set(starts.map { $0[1] }).count == 20)
    }
}

struct SenderReportSchedulerTests {
    typealias F = SendFixtures

    @Test("no SR before the first packet; then at once, then every interval: SR with the counts and an SDES CNAME, as the RTCP parser reads them")
    func schedule() throws {
        var stream = try RTPSendStream(configuration: F.video, initialSequenceNumber: 0, timestampOffset: 1000)
        var scheduler = SenderReportScheduler(configuration: .init(cname: "composition-1"))
        #expect(try scheduler.poll(now: F.epoch, stream: stream) == nil)
        #expect(scheduler.nextDeadline == nil)
        var datagram: [UInt8] = []
        let frame = F.frame([[1, 2, 3], [4, 5, 6, 7]], timestamp: 0)
        for index in 0..<2 { stream.writePacket(frame, index: index, now: F.epoch, into: &datagram) }
        let now = F.epoch + 5_000
        let bytes = try #require(try scheduler.poll(now: now, stream: stream))
        let packets = try RTCPPacket.parseCompound(bytes)
        #expect(packets == [
            .senderReport(RTCPSenderReport(ssrc: F.video.ssrc, ntpTime: NTPTime.ntp(fromUnixMicroseconds: now),
                                           rtpTimestamp: 1000 + 450, packetCount: 2, octetCount: 7)),
            .sourceDescription(.cname(ssrc: F.video.ssrc, "composition-1")),
        ])
        #expect(scheduler.nextDeadline == now + 1_000_000)
        #expect(try scheduler.poll(now: now + 999_999, stream: stream) == nil)
        #expect(try scheduler.poll(now: now + 1_000_000, stream: stream) != nil)
        #expect(scheduler.reportsSent == 2)
    }

    @Test("the RTP timestamp is the anchor's, moved on by the time since it at the stream's clock rate, with the stream's offset")
    func anchoredTimestamps() throws {
        var video = try RTPSendStream(configuration: F.video, initialSequenceNumber: 0, timestampOffset: UInt32.max)
        var audio = try RTPSendStream(configuration: F.audio, initialSequenceNumber: 0, timestampOffset: 5)
        video.setClockAnchor(RTPClockAnchor(timestamp: 9000, time: F.epoch))
        audio.setClockAnchor(RTPClockAnchor(timestamp: 4800, time: F.epoch))
        var datagram: [UInt8] = []
        video.writePacket(F.frame([[1]], timestamp: 9000), index: 0, now: F.epoch + 40_000, into: &datagram)
        audio.writePacket(F.frame([[1]], codec: .opus, timestamp: 4800), index: 0, now: F.epoch + 40_000, into: &datagram)
        #expect(video.makeSenderReport(now: F.epoch + 500_000)?.rtpTimestamp == UInt32(9000 + 45_000 - 1))
        #expect(audio.makeSenderReport(now: F.epoch + 500_000)?.rtpTimestamp == UInt32(5 + 4800 + 24_000))
        #expect(video.makeSenderReport(now: F.epoch - 100)?.rtpTimestamp == UInt32(9000 - 9 - 1))
        // Without an anchor: the first packet's timestamp at the time it went out.
        var plain = try RTPSendStream(configuration: F.video, initialSequenceNumber: 0, timestampOffset: 0)
        plain.writePacket(F.frame([[1]], timestamp: 3000), index: 0, now: F.epoch, into: &datagram)
        plain.writePacket(F.frame([[1]], timestamp: 6000), index: 0, now: F.epoch + 70_000, into: &datagram)
        #expect(plain.clockAnchor == RTPClockAnchor(timestamp: 3000, time: F.epoch))
        #expect(plain.makeSenderReport(now: F.epoch + 1_000_000)?.rtpTimestamp == 93_000)
    }

    @Test("lip sync end to end: the receive side's SenderClock maps audio and video of one instant to one time from our SRs")
    func lipSync() throws {
        var generator = SeededGenerator(seed: 7)
        var video = try RTPSendStream(configuration: F.video, using: &generator)
        var audio = try RTPSendStream(configuration: F.audio, using: &generator)
        // The composition's clock: media time 0 was epoch + 2 s.
        let start = F.epoch + 2_000_000
        video.setClockAnchor(RTPClockAnchor(timestamp: 0, time: start))
        audio.setClockAnchor(RTPClockAnchor(timestamp: 0, time: start))
        var videoClock = SenderClock(clockRate: 90_000)
        var audioClock = SenderClock(clockRate: 48_000)
        var videoTimestamps = TimestampUnwrapper()
        var audioTimestamps = TimestampUnwrapper()
        var reports = (video: SenderReportScheduler(configuration: .init(cname: "c")), audio: SenderReportScheduler(configuration: .init(cname: "c")))
        var datagram: [UInt8] = []
        // 3 s of media, sent late by a varying delay (queues, pacing) that SRs must not show.
        for millisecond in stride(from: 0, to: 3000, by: 20) {
            let media = Int64(millisecond)
            let sendTime = start + media * 1000 + 30_000 + Int64(millisecond % 7) * 1000
            audio.writePacket(F.frame([[1]], codec: .opus, timestamp: media * 48), index: 0, now: sendTime, into: &datagram)
            let audioPacket = try RTPPacket(parsing: datagram)
            _ = audioClock.packetArrived(timestamp: audioTimestamps.unwrap(audioPacket.timestamp), now: sendTime + 20_000)
            if millisecond % 40 == 0 {
                video.writePacket(F.frame([[2]], timestamp: media * 90), index: 0, now: sendTime + 5_000, into: &datagram)
                let videoPacket = try RTPPacket(parsing: datagram)
                _ = videoClock.packetArrived(timestamp: videoTimestamps.unwrap(videoPacket.timestamp), now: sendTime + 25_000)
            }
            for (bytes, isVideo) in [(try reports.video.poll(now: sendTime, stream: video), true),
                                     (try reports.audio.poll(now: sendTime, stream: audio), false)] {
                guard let bytes else { continue }
                for case .senderReport(let sr) in try RTCPPacket.parseCompound(bytes) {
                    if isVideo {
                        _ = videoClock.senderReport(ntpTime: sr.ntpTime, rtpTimestamp: videoTimestamps.peek(sr.rtpTimestamp))
                    } else {
                        _ = audioClock.senderReport(ntpTime: sr.ntpTime, rtpTimestamp: audioTimestamps.peek(sr.rtpTimestamp))
                    }
                }
            }
        }
        #expect(reports.video.reportsSent == 3 && reports.audio.reportsSent == 3)
        // Media time 2.5 s in each stream's RTP time, mapped through each stream's SRs.
        let videoTime = try #require(videoClock.wallClock(forTimestamp: videoTimestamps.peek(video.rtpTimestamp(2500 * 90))))
        let audioTime = try #require(audioClock.wallClock(forTimestamp: audioTimestamps.peek(audio.rtpTimestamp(2500 * 48))))
        #expect(abs(videoTime - (start + 2_500_000)) <= 25)
        #expect(abs(audioTime - videoTime) <= 25)
    }

    @Test("randomized intervals stay within 0.5–1.5 × and repeat for the same seed")
    func randomized() throws {
        var stream = try RTPSendStream(configuration: F.audio, initialSequenceNumber: 0, timestampOffset: 0)
        var datagram: [UInt8] = []
        stream.writePacket(F.frame([[1]], codec: .opus), index: 0, now: F.epoch, into: &datagram)
        func intervals(seed: UInt64) throws -> [Int64] {
            var generator = SeededGenerator(seed: seed)
            var scheduler = SenderReportScheduler(configuration: .init(cname: "c"))
            var now = F.epoch
            var result: [Int64] = []
            for _ in 0..<100 {
                #expect(try scheduler.poll(now: now, stream: stream, using: &generator) != nil)
                let next = try #require(scheduler.nextDeadline)
                result.append(next - now)
                now = next
            }
            return result
        }
        let first = try intervals(seed: 3)
        #expect(try intervals(seed: 3) == first)
        #expect(try intervals(seed: 4) != first)
        #expect(first.allSatisfy { (500_000...1_500_000).contains($0) })
        #expect(Set(first).count > 50)
    }

    @Test("goodbye: SR, SDES and BYE with the reason; an empty RR opens it when nothing was sent")
    func goodbye() throws {
        let scheduler = SenderReportScheduler(configuration: .init(cname: "c"))
        var stream = try RTPSendStream(configuration: F.video, initialSequenceNumber: 0, timestampOffset: 0)
        let silent = try RTCPPacket.parseCompound(scheduler.goodbye(now: F.epoch, stream: stream))
        #expect(silent == [.receiverReport(.init(ssrc: F.video.ssrc)), .sourceDescription(.cname(ssrc: F.video.ssrc, "c")),
                           .goodbye(.init(ssrcs: [F.video.ssrc]))])
        var datagram: [UInt8] = []
        stream.writePacket(F.frame([[1]]), index: 0, now: F.epoch, into: &datagram)
        let packets = try RTCPPacket.parseCompound(scheduler.goodbye(now: F.epoch, stream: stream, reason: "viewer left"))
        guard case .senderReport(let report) = packets.first else { Issue.record("no SR"); return }
        #expect(report.packetCount == 1)
        #expect(packets.last == .goodbye(.init(ssrcs: [F.video.ssrc], reason: Array("viewer left".utf8))))
    }
}
