// What a viewer sends back, read with the receive side's RTCP parser and kept to our SSRCs.
@testable import WebRTCMedia
import MediaCore
import TestSupport
import Testing

struct ViewerFeedbackReaderTests {
    static let video: UInt32 = 0x1111
    static let audio: UInt32 = 0x2222
    static let viewer: UInt32 = 0x9999

    @Test("a viewer's compound: report blocks, NACKs, PLI, FIR and REMB about our streams; feedback about other SSRCs and unread types ignored")
    func compound() throws {
        var reader = ViewerFeedbackReader(mediaSSRCs: [Self.video, Self.audio])
        let ours = RTCPReportBlock(ssrc: Self.video, fractionLost: 3, cumulativeLost: 7, extendedHighestSequence: 70_000, jitter: 90,
                                   lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 655)
        let nack = RTCPGenericNack(senderSSRC: Self.viewer, mediaSSRC: Self.video, lost: [1, 2, 40])
        let compound: [RTCPPacket] = [
            .receiverReport(.init(ssrc: Self.viewer, reportBlocks: [ours, RTCPReportBlock(ssrc: 77), RTCPReportBlock(ssrc: Self.audio)])),
            .sourceDescription(.cname(ssrc: Self.viewer, "viewer")),
            .genericNack(nack),
            .genericNack(RTCPGenericNack(senderSSRC: Self.viewer, mediaSSRC: 77, lost: [5])),
            .pictureLossIndication(.init(senderSSRC: Self.viewer, mediaSSRC: Self.video)),
            .pictureLossIndication(.init(senderSSRC: Self.viewer, mediaSSRC: 78)),
            .fullIntraRequest(.init(senderSSRC: Self.viewer, entries: [.init(ssrc: 79, sequenceNumber: 1), .init(ssrc: Self.video, sequenceNumber: 1)])),
            .receiverEstimatedMaxBitrate(.init(senderSSRC: Self.viewer, bitrate: 1_500_000, ssrcs: [Self.video])),
            .receiverEstimatedMaxBitrate(.init(senderSSRC: Self.viewer, bitrate: 10, ssrcs: [80])),
            .unknown(.init(packetType: RTCPPacket.PacketType.transportFeedback, count: RTCPPacket.FeedbackFormat.transportCC,
                           body: [0, 0, 0x99, 0x99, 0, 0, 0x11, 0x11])),
        ]
        let feedback = try reader.read(RTCPPacket.serializeCompound(compound))
        var expected = ViewerFeedback()
        expected.reportBlocks = [ours, RTCPReportBlock(ssrc: Self.audio)]
        expected.nacks = [nack]
        expected.pictureLossIndications = [Self.video]
        expected.fullIntraRequests = [Self.video]
        expected.estimatedBitrate = RTCPReceiverEstimatedMaxBitrate(senderSSRC: 0, bitrate: 1_500_000, ssrcs: []).encodedBitrate
        expected.ignoredPackets = 4
        #expect(feedback == expected)
        #expect(feedback.keyframeRequested)
        #expect(reader.compoundsRead == 1)
    }

    @Test("a FIR repeating the last request number asks for nothing new; a new number does, per SSRC")
    func repeatedFIR() throws {
        var reader = ViewerFeedbackReader(mediaSSRCs: [Self.video, Self.audio])
        func fir(_ ssrc: UInt32, _ number: UInt8) throws -> [UInt32] {
            try reader.read(RTCPPacket.fullIntraRequest(.init(senderSSRC: Self.viewer, entries: [.init(ssrc: ssrc, sequenceNumber: number)]))
                .serialized()).fullIntraRequests
        }
        #expect(try fir(Self.video, 5) == [Self.video])
        #expect(try fir(Self.video, 5) == [])
        #expect(try fir(Self.audio, 5) == [Self.audio])
        #expect(try fir(Self.video, 6) == [Self.video])
        #expect(try fir(Self.video, 5) == [Self.video])
        #expect(reader.repeatedFullIntraRequests == 1)
    }

    @Test("BYE is reported; an SR's blocks are read; a malformed compound throws and nothing of it is used")
    func goodbyeAndErrors() throws {
        var reader = ViewerFeedbackReader(mediaSSRCs: [Self.video])
        let bye = try reader.read(RTCPPacket.serializeCompound([.receiverReport(.init(ssrc: Self.viewer)), .goodbye(.init(ssrcs: [Self.viewer]))]))
        #expect(bye.goodbye && !bye.keyframeRequested && bye.reportBlocks.isEmpty)
        let sr = RTCPSenderReport(ssrc: Self.viewer, ntpTime: 1, rtpTimestamp: 2, packetCount: 3, octetCount: 4,
                                  reportBlocks: [RTCPReportBlock(ssrc: Self.video, jitter: 5)])
        #expect(try reader.read(RTCPPacket.senderReport(sr).serialized()).reportBlocks == sr.reportBlocks)
        let pli = try RTCPPacket.pictureLossIndication(.init(senderSSRC: Self.viewer, mediaSSRC: Self.video)).serialized()
        #expect(throws: RTCPError.truncated(offset: 12)) { try reader.read(pli + [0x81, 0xC9]) }
        #expect(throws: RTCPError.truncated(offset: 0)) { try reader.read([]) }
        #expect(reader.compoundsRead == 2)
    }
}

/// The whole send path against the whole receive path, in virtual time: a composition's
/// H.264 access units packetized once, queued for one viewer, sent by its RTPSendStream (RTX)
/// over a network that loses and jitters datagrams both ways; the viewer is this module's own
/// receive side (statistics, NACKs, reorder buffer, depacketizer, receiver reports). Seeded.
struct SendPathSimulationTests {
    static let ssrc: UInt32 = 0x5EED
    static let rtxSSRC: UInt32 = 0x5EEE
    static let viewerSSRC: UInt32 = 0x7777

    struct Flight {
        var at: Int64
        var order: Int
        var bytes: [UInt8]
        var toViewer: Bool
    }

    @Test("5 % loss both ways, 20–25 ms each way: every frame arrives whole and in order, SPS/PPS before each IDR; the round trip is measured from RRs",
          arguments: [UInt64(1), 2, 3])
    func lossyPath(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var inFlight: [Flight] = []
        var order = 0
        let frameCount = 300
        let lastFrameAt = Int64(frameCount - 1) * 33_333
        func send(_ bytes: [UInt8], at now: Int64, toViewer: Bool) {
            order += 1
            // The first keyframe goes through in order and the last frame whole: a receiver
            // cannot know of packets before its first, nor of a loss with nothing after it.
            let start = now < 10_000
            guard start || now >= lastFrameAt || Int.random(in: 0..<100, using: &random) >= 5 else { return }
            let delay = 20_000 + (start ? 0 : Int64.random(in: 0...5_000, using: &random))
            inFlight.append(Flight(at: now + delay, order: order, bytes: bytes, toViewer: toViewer))
        }

        // Sender: one composition, one viewer.
        let extradata = SendFixtures.annexB([SendFixtures.sps, SendFixtures.pps])
        var packetizer = H264Packetizer(parameterSets: try H264ParameterSets(extradata: extradata))
        var config = RTPSendStreamConfiguration(ssrc: Self.ssrc, payloadType: 102, clockRate: 90_000)
        config.rtx = RTXSendConfiguration(ssrc: Self.rtxSSRC, payloadType: 103)
        var stream = try RTPSendStream(configuration: config, using: &random)
        var pacer = ViewerPacer(configuration: .init(pacing: TokenBucket.Rate(burst: 20, interval: 500)))
        var reports = SenderReportScheduler(configuration: .init(cname: "composition"))
        var feedbackReader = ViewerFeedbackReader(mediaSSRCs: [Self.ssrc])
        var datagram: [UInt8] = []

        // Viewer: this module's receive side.
        let rtx = RTXUnwrapper(associations: RTXAssociations(payloadTypes: [103: 102], ssrcs: [Self.rtxSSRC: Self.ssrc]))
        var receiveStream = RTPReceiveStream(ssrc: Self.ssrc, clockRate: 90_000)
        // Waits long enough for NACKs lost on the way to be retried (as LossSimulationTests does).
        var nack = NackGenerator(configuration: NackConfiguration(initialDelay: 10_000))
        var reorder = ReorderBuffer<RTPPacket>(configuration: ReorderBufferConfiguration(maxWait: 1_000_000, capacity: 2048))
        var depacketizer = H264Depacketizer()
        var timestamps = TimestampUnwrapper()
        var viewerReports = ReceiverReportScheduler(configuration: .init(senderSSRC: Self.viewerSSRC, cname: "viewer"))
        var received: [EncodedFrame] = []

        var expected: [[UInt8]] = []
        var now: Int64 = 0
        var nextFrame = 0
        let end: Int64 = Int64(frameCount) * 33_333 + 2_000_000
        while now < end {
            // The next thing to happen: a frame, an arrival, a deadline of either side.
            var deadline = min(nextFrame < frameCount ? Int64(nextFrame) * 33_333 : .max, end)
            for candidate in [pacer.nextDeadline(now: now), reports.nextDeadline, nack.nextDeadline, reorder.nextDeadline,
                              viewerReports.nextDeadline] {
                if let candidate { deadline = min(deadline, max(candidate, now)) }
            }
            if let index = inFlight.indices.min(by: { (inFlight[$0].at, inFlight[$0].order) < (inFlight[$1].at, inFlight[$1].order) }),
               inFlight[index].at <= deadline {
                let flight = inFlight.remove(at: index)
                now = flight.at
                if flight.toViewer {
                    if RTPPacket.looksLikeRTCP(flight.bytes) {
                        for case .senderReport(let report) in try RTCPPacket.parseCompound(flight.bytes) {
                            receiveStream.senderReportReceived(ntpTime: report.ntpTime, now: now)
                        }
                    } else {
                        let packet: RTPPacket
                        let isRetransmission: Bool
                        switch try rtx.unwrap(RTPPacket(parsing: flight.bytes)) {
                        case .media(let media): (packet, isRetransmission) = (media, false)
                        case .retransmission(let original): (packet, isRetransmission) = (original, true)
                        case .padding, .unknownSSRC: continue
                        }
                        let update = receiveStream.received(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                                            payloadBytes: packet.payload.count, now: now, isRetransmission: isRetransmission)
                        if let extended = update.extended {
                            _ = nack.received(seq: extended, now: now, isRetransmission: isRetransmission)
                            _ = reorder.insert(packet, sequence: extended, now: now)
                        }
                    }
                } else {
                    pacer.feedbackReceived(now: now)
                    let feedback = try feedbackReader.read(flight.bytes)
                    for block in feedback.reportBlocks { stream.receiverReport(block, now: now) }
                    for request in feedback.nacks {
                        for sequence in stream.retransmissions(answering: request, now: now) {
                            stream.writeRetransmission(of: sequence, now: now, into: &datagram)
                            send(datagram, at: now, toViewer: true)
                        }
                    }
                }
            } else {
                now = deadline
                if nextFrame < frameCount, now == Int64(nextFrame) * 33_333 {
                    let isKeyframe = nextFrame % 60 == 0
                    let size = isKeyframe ? Int.random(in: 20_000...40_000, using: &random) : Int.random(in: 300...6_000, using: &random)
                    let nal = SendFixtures.nal(isKeyframe ? 0x65 : 0x41, size: size, seed: nextFrame)
                    expected.append(SendFixtures.annexB(isKeyframe ? [SendFixtures.sps, SendFixtures.pps, nal] : [nal]))
                    let frame = try packetizer.packetize(SendFixtures.annexB([nal]), pts: SendFixtures.pts(frame: Int64(nextFrame)))
                    #expect(pacer.enqueue(frame, now: now) == .queued)
                    nextFrame += 1
                }
            }
            // Both sides do what is due.
            while let packet = pacer.poll(now: now) {
                stream.writePacket(packet.frame, index: packet.index, now: now, into: &datagram)
                send(datagram, at: now, toViewer: true)
            }
            if let report = try reports.poll(now: now, stream: stream) { send(report, at: now, toViewer: true) }
            let output = nack.poll(now: now)
            for range in output.gaveUp { for sequence in range { reorder.abandon(sequence) } }
            for case .packet(let sequence, let packet) in reorder.poll(now: now) {
                received += frames(depacketizer.push(payload: packet.payload, sequence: sequence,
                                                     timestamp: timestamps.unwrap(packet.timestamp), marker: packet.marker))
            }
            let feedback: [RTCPPacket] = output.nacks.isEmpty ? [] :
                [.genericNack(RTCPGenericNack(senderSSRC: Self.viewerSSRC, mediaSSRC: Self.ssrc, lost: output.nacks))]
            var streams = [receiveStream]
            for bytes in try viewerReports.poll(now: now, streams: &streams, feedback: feedback) { send(bytes, at: now, toViewer: false) }
            receiveStream = streams[0]
        }
        received += frames(depacketizer.flush())

        #expect(received.count == frameCount)
        let wrong = zip(received, expected).enumerated().filter { $1.0.data != $1.1 || !$1.0.isComplete }.map(\.offset)
        #expect(wrong.isEmpty, "frames not as sent: \(wrong)")
        #expect(received.map(\.isKeyframe) == (0..<frameCount).map { $0 % 60 == 0 })
        #expect(stream.rtxPacketsSent > 0)
        #expect(nack.recoveredByNack > 0)
        #expect(reorder.packetsLost == 0)
        let rtt = try #require(stream.roundTripTime)
        #expect(rtt >= 40_000 && rtt <= 52_000, "round trip \(rtt) µs")
        #expect(pacer.dropsToKeyframe == 0)
        print("seed \(seed): \(stream.packetsSent) packets, \(stream.rtxPacketsSent) retransmitted, NACKed \(stream.sequenceNumbersNacked), "
              + "suppressed \(stream.retransmissionsSuppressed), round trip \(rtt) µs")
    }
}
