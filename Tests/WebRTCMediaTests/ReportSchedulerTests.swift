// Outgoing RTCP: compound layout within 1200 bytes, and when regular reports are due.
@testable import WebRTCMedia
import TestSupport
import Testing

struct CompoundPackerTests {
    static func blocks(_ count: Int) -> [RTCPReportBlock] {
        (0..<count).map { RTCPReportBlock(ssrc: UInt32($0 + 1)) }
    }

    static func nack(pairs: Int) -> RTCPPacket {
        .genericNack(RTCPGenericNack(senderSSRC: 1, mediaSSRC: 2,
                                     pairs: (0..<pairs).map { RTCPNackPair(packetID: UInt16($0 * 17), lostBitmask: 0) }))
    }

    @Test("RR, SDES, then feedback in one compound")
    func order() throws {
        let compounds = RTCPCompoundPacker.pack(senderSSRC: 9, cname: "stage", reportBlocks: Self.blocks(2),
                                                feedback: [Self.nack(pairs: 1), .pictureLossIndication(.init(senderSSRC: 9, mediaSSRC: 2))])
        #expect(compounds.count == 1)
        #expect(compounds[0] == [.receiverReport(.init(ssrc: 9, reportBlocks: Self.blocks(2))),
                                 .sourceDescription(.cname(ssrc: 9, "stage")), Self.nack(pairs: 1),
                                 .pictureLossIndication(.init(senderSSRC: 9, mediaSSRC: 2))])
        let bytes = try RTCPPacket.serializeCompound(compounds[0])
        #expect(bytes.count == 56 + 16 + 16 + 12)
        #expect(try RTCPPacket.parseCompound(bytes) == compounds[0])
    }

    @Test("more than 31 sources: several RR packets, then further compounds, each ≤ 1200 bytes")
    func manyBlocks() throws {
        let compounds = RTCPCompoundPacker.pack(senderSSRC: 9, cname: "stage", reportBlocks: Self.blocks(100), feedback: [])
        var seen: [UInt32] = []
        for compound in compounds {
            #expect(try RTCPPacket.serializeCompound(compound).count <= 1200)
            guard case .receiverReport = compound.first, case .sourceDescription = compound.last else {
                Issue.record("compound does not open with RR and end with SDES"); continue
            }
            for case .receiverReport(let report) in compound {
                #expect(report.reportBlocks.count <= 31)
                seen += report.reportBlocks.map(\.ssrc)
            }
        }
        #expect(seen == (1...100).map { UInt32($0) })
        // 1200 − SDES 16 = 1184: two RRs (31 + 17 blocks = 8 + 744 + 8 + 408) fill one compound.
        #expect(compounds.count == 3)
        #expect(compounds[0].count == 3)
    }

    @Test("a NACK too large for one compound is split; every piece keeps its compound under the limit")
    func splitNack() throws {
        let compounds = RTCPCompoundPacker.pack(senderSSRC: 9, cname: "stage", reportBlocks: [], feedback: [Self.nack(pairs: 600)])
        var pairs = 0
        for compound in compounds {
            #expect(try RTCPPacket.serializeCompound(compound).count <= 1200)
            for case .genericNack(let nack) in compound { pairs += nack.pairs.count }
        }
        #expect(pairs == 600)
        #expect(compounds.count == 3)  // (1200 − 24 − 12) / 4 = 291 pairs each
    }

    @Test("reduced-size: feedback without reports goes alone")
    func reducedSize() {
        let compounds = RTCPCompoundPacker.pack(senderSSRC: 9, cname: "stage", reportBlocks: [],
                                                feedback: [.pictureLossIndication(.init(senderSSRC: 9, mediaSSRC: 2))], reducedSize: true)
        #expect(compounds == [[.pictureLossIndication(.init(senderSSRC: 9, mediaSSRC: 2))]])
    }

    @Test("an oversized non-NACK packet gets a compound of its own instead of stalling")
    func oversized() {
        let remb = RTCPPacket.receiverEstimatedMaxBitrate(.init(senderSSRC: 9, bitrate: 1, ssrcs: Array(0..<255)))
        let compounds = RTCPCompoundPacker.pack(senderSSRC: 9, cname: "stage", reportBlocks: [], feedback: [remb, remb], maxSize: 600)
        #expect(compounds.count == 2)
        #expect(compounds.allSatisfy { $0.count == 3 })
    }
}

struct ReceiverReportSchedulerTests {
    static func streams() -> [RTPReceiveStream] {
        var video = RTPReceiveStream(ssrc: 0xAAAA, clockRate: 90_000)
        var audio = RTPReceiveStream(ssrc: 0xBBBB, clockRate: 48_000)
        for seq in [UInt16(0), 1, 3] { _ = video.received(sequenceNumber: seq, timestamp: 0, payloadBytes: 1, now: 0) }
        _ = audio.received(sequenceNumber: 7, timestamp: 0, payloadBytes: 1, now: 0)
        return [video, audio]
    }

    @Test("the first report goes at once with a block per stream; the next after the interval")
    func fixedInterval() throws {
        var scheduler = ReceiverReportScheduler(configuration: .init(senderSSRC: 1, cname: "c"))
        var streams = Self.streams()
        #expect(scheduler.isReportDue(now: 0))
        let datagrams = try scheduler.poll(now: 0, streams: &streams, feedback: [])
        #expect(datagrams.count == 1)
        let packets = try RTCPPacket.parseCompound(datagrams[0])
        guard case .receiverReport(let report) = packets[0] else { Issue.record("no RR"); return }
        #expect(report.ssrc == 1)
        #expect(report.reportBlocks.map(\.ssrc) == [0xAAAA, 0xBBBB])
        #expect(report.reportBlocks[0].cumulativeLost == 1)
        #expect(report.reportBlocks[0].fractionLost == 64)
        #expect(packets[1] == .sourceDescription(.cname(ssrc: 1, "c")))
        #expect(scheduler.nextDeadline == 1_000_000)
        #expect(try scheduler.poll(now: 999_999, streams: &streams, feedback: []).isEmpty)
        #expect(try scheduler.poll(now: 1_000_000, streams: &streams, feedback: []).count == 1)
        #expect(scheduler.reportsSent == 2)
    }

    @Test("feedback is sent at once, with an empty RR + SDES, or alone with reduced-size")
    func feedbackBetweenReports() throws {
        let pli = RTCPPacket.pictureLossIndication(.init(senderSSRC: 1, mediaSSRC: 0xAAAA))
        var streams = Self.streams()
        var full = ReceiverReportScheduler(configuration: .init(senderSSRC: 1, cname: "c"))
        _ = try full.poll(now: 0, streams: &streams, feedback: [])
        let between = try full.poll(now: 300_000, streams: &streams, feedback: [pli])
        #expect(try RTCPPacket.parseCompound(between[0]) == [.receiverReport(.init(ssrc: 1)), .sourceDescription(.cname(ssrc: 1, "c")), pli])

        var reduced = ReceiverReportScheduler(configuration: .init(senderSSRC: 1, cname: "c", reducedSize: true))
        _ = try reduced.poll(now: 0, streams: &streams, feedback: [])
        #expect(try reduced.poll(now: 300_000, streams: &streams, feedback: [pli]) == [try pli.serialized()])
        #expect(reduced.reportsSent == 1)
    }

    @Test("randomized intervals stay within 0.5–1.5 × and repeat for the same seed")
    func randomized() throws {
        func deadlines(seed: UInt64) throws -> [Int64] {
            var generator = SeededGenerator(seed: seed)
            var scheduler = ReceiverReportScheduler(configuration: .init(senderSSRC: 1, cname: "c"))
            var streams: [RTPReceiveStream] = []
            var now: Int64 = 0
            var result: [Int64] = []
            for _ in 0..<200 {
                _ = try scheduler.poll(now: now, streams: &streams, feedback: [], using: &generator)
                result.append(scheduler.nextDeadline - now)
                now = scheduler.nextDeadline
            }
            return result
        }
        let first = try deadlines(seed: 5)
        #expect(try deadlines(seed: 5) == first)
        #expect(try deadlines(seed: 6) != first)
        #expect(first.allSatisfy { (500_000...1_500_000).contains($0) })
        #expect(Set(first).count > 100)
        let mean = first.reduce(0, +) / Int64(first.count)
        #expect(abs(mean - 1_000_000) < 60_000)
    }
}
