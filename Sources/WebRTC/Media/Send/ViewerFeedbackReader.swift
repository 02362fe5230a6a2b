// What a viewer's RTCP says about the streams we send it, read with the RTCP parser the
// receive side uses: report blocks (loss, jitter, the LSR/DLSR echo that gives the round trip),
// generic NACKs, PLI and FIR (keyframe requests; a FIR repeating the last request number is a
// retransmission of the same request, RFC 5104 §4.3.1.2, and asks for nothing new), REMB, BYE.
// Feedback about SSRCs we do not send is left out, so a confused or hostile viewer cannot
// steer another stream.

public struct ViewerFeedback: Sendable, Equatable {
    /// Report blocks about our streams, from RRs (and SRs, if the viewer sends media).
    public var reportBlocks: [RTCPReportBlock] = []
    /// NACKs for our streams, in the order they came.
    public var nacks: [RTCPGenericNack] = []
    /// Our SSRCs a PLI asked a keyframe for.
    public var pictureLossIndications: [UInt32] = []
    /// Our SSRCs a FIR with a new request number asked a keyframe for.
    public var fullIntraRequests: [UInt32] = []
    /// The viewer's REMB estimate covering one of our streams (bit/s), the last if several.
    public var estimatedBitrate: UInt64?
    /// The viewer said BYE.
    public var goodbye = false
    /// Feedback about SSRCs we do not send, and types not read here (transport-cc, XR, APP...).
    public var ignoredPackets = 0

    public init() {}

    /// A PLI or a new FIR came.
    public var keyframeRequested: Bool { !pictureLossIndications.isEmpty || !fullIntraRequests.isEmpty }
}

public struct ViewerFeedbackReader: Sendable, Equatable {
    /// The SSRCs we send this viewer (media; RTX is never reported on).
    public let mediaSSRCs: Set<UInt32>
    public private(set) var compoundsRead: Int64 = 0
    /// FIRs whose request number repeated the last one's.
    public private(set) var repeatedFullIntraRequests: Int64 = 0

    private var lastFullIntraRequest: [UInt32: UInt8] = [:]

    public init(mediaSSRCs: some Sequence<UInt32>) {
        self.mediaSSRCs = Set(mediaSSRCs)
    }

    /// One (SRTCP-decrypted) compound from the viewer. Malformed input throws; nothing of it is used then.
    public mutating func read(_ compound: [UInt8]) throws(RTCPError) -> ViewerFeedback {
        let packets = try RTCPPacket.parseCompound(compound)
        compoundsRead += 1
        var feedback = ViewerFeedback()
        for packet in packets {
            switch packet {
            case .receiverReport(let report):
                take(report.reportBlocks, into: &feedback)
            case .senderReport(let report):
                take(report.reportBlocks, into: &feedback)
            case .genericNack(let nack):
                if mediaSSRCs.contains(nack.mediaSSRC) { feedback.nacks.append(nack) } else { feedback.ignoredPackets += 1 }
            case .pictureLossIndication(let pli):
                if mediaSSRCs.contains(pli.mediaSSRC) {
                    feedback.pictureLossIndications.append(pli.mediaSSRC)
                } else {
                    feedback.ignoredPackets += 1
                }
            case .fullIntraRequest(let fir):
                let ours = fir.entries.filter { mediaSSRCs.contains($0.ssrc) }
                if ours.isEmpty { feedback.ignoredPackets += 1 }
                for entry in ours {
                    if lastFullIntraRequest[entry.ssrc] == entry.sequenceNumber {
                        repeatedFullIntraRequests += 1
                        continue
                    }
                    lastFullIntraRequest[entry.ssrc] = entry.sequenceNumber
                    feedback.fullIntraRequests.append(entry.ssrc)
                }
            case .receiverEstimatedMaxBitrate(let remb):
                if remb.ssrcs.contains(where: mediaSSRCs.contains) {
                    feedback.estimatedBitrate = remb.bitrate
                } else {
                    feedback.ignoredPackets += 1
                }
            case .goodbye:
                feedback.goodbye = true
            case .sourceDescription:
                break
            case .unknown:
                feedback.ignoredPackets += 1
            }
        }
        return feedback
    }

    private func take(_ blocks: [RTCPReportBlock], into feedback: inout ViewerFeedback) {
        for block in blocks where mediaSSRCs.contains(block.ssrc) { feedback.reportBlocks.append(block) }
    }
}
