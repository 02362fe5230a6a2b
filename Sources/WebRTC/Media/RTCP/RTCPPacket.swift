// RTCP compound packets (RFC 3550 §6): a run of packets, each with a 4-byte header
//
//  |V=2|P| RC/FMT  |      PT       |  length (32-bit words − 1)    |
//
// Reduced-size RTCP (RFC 5506) is accepted: any packet may come first and a compound may
// hold a single feedback packet. Types this module does not read are kept as `.unknown`.

import MediaCore

public enum RTCPPacket: Sendable, Equatable {
    case senderReport(RTCPSenderReport)
    case receiverReport(RTCPReceiverReport)
    case sourceDescription(RTCPSourceDescription)
    case goodbye(RTCPGoodbye)
    case genericNack(RTCPGenericNack)
    case pictureLossIndication(RTCPPictureLossIndication)
    case fullIntraRequest(RTCPFullIntraRequest)
    case receiverEstimatedMaxBitrate(RTCPReceiverEstimatedMaxBitrate)
    case unknown(RTCPUnknownPacket)

    public enum PacketType {
        public static let senderReport: UInt8 = 200
        public static let receiverReport: UInt8 = 201
        public static let sourceDescription: UInt8 = 202
        public static let goodbye: UInt8 = 203
        public static let application: UInt8 = 204
        public static let transportFeedback: UInt8 = 205
        public static let payloadFeedback: UInt8 = 206
        public static let extendedReport: UInt8 = 207
    }

    public enum FeedbackFormat {
        public static let genericNack: UInt8 = 1
        /// RTPFB 15: transport-wide congestion control feedback (kept as unknown).
        public static let transportCC: UInt8 = 15
        public static let pictureLossIndication: UInt8 = 1
        public static let fullIntraRequest: UInt8 = 4
        public static let applicationLayer: UInt8 = 15
    }

    // MARK: Compound

    /// Every packet of a (possibly reduced-size) compound.
    public static func parseCompound(_ bytes: [UInt8]) throws(RTCPError) -> [RTCPPacket] {
        guard !bytes.isEmpty else { throw .truncated(offset: 0) }
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { throw .truncated(offset: offset) }
            let first = bytes[offset]
            guard first >> 6 == 2 else { throw .unsupportedVersion(first >> 6, offset: offset) }
            let length = ((Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])) + 1) * 4
            guard length <= bytes.count - offset else { throw .truncated(offset: offset) }
            var bodyEnd = offset + length
            if first & 0x20 != 0 {
                let padding = Int(bytes[bodyEnd - 1])
                guard padding > 0, padding <= length - 4 else { throw .invalidPadding(offset: offset) }
                bodyEnd -= padding
            }
            packets.append(try parse(count: first & 0x1F, type: bytes[offset + 1],
                                     body: bytes[(offset + 4)..<bodyEnd], offset: offset))
            offset += length
        }
        return packets
    }

    /// The packets one after another, as one compound.
    public static func serializeCompound(_ packets: [RTCPPacket]) throws(RTCPError) -> [UInt8] {
        var bytes: [UInt8] = []
        for packet in packets { try packet.write(to: &bytes) }
        return bytes
    }

    public func serialized() throws(RTCPError) -> [UInt8] {
        var bytes: [UInt8] = []
        try write(to: &bytes)
        return bytes
    }

    /// Bytes this packet takes on the wire.
    public var wireSize: Int {
        switch self {
        case .senderReport(let report): 28 + RTCPReportBlock.size * report.reportBlocks.count
        case .receiverReport(let report): 8 + RTCPReportBlock.size * report.reportBlocks.count
        case .sourceDescription(let description): 4 + description.chunks.reduce(0) { $0 + $1.wireSize }
        case .goodbye(let bye): 4 + 4 * bye.ssrcs.count + (bye.reason.map { ($0.count + 1 + 3) / 4 * 4 } ?? 0)
        case .genericNack(let nack): 12 + 4 * nack.pairs.count
        case .pictureLossIndication: 12
        case .fullIntraRequest(let fir): 12 + 8 * fir.entries.count
        case .receiverEstimatedMaxBitrate(let remb): 20 + 4 * remb.ssrcs.count
        case .unknown(let unknown): 4 + (unknown.body.count + 3) / 4 * 4
        }
    }

    // MARK: Parsing one packet

    private static func parse(count: UInt8, type: UInt8, body: ArraySlice<UInt8>, offset: Int) throws(RTCPError) -> RTCPPacket {
        var reader = ByteReader(body)
        let malformed = RTCPError.malformed(packetType: type, offset: offset)
        let unknown = RTCPPacket.unknown(RTCPUnknownPacket(packetType: type, count: count, body: Array(body)))
        switch type {
        case PacketType.senderReport:
            guard let ssrc = reader.readUInt32(), let ntp = reader.readUInt64(), let rtp = reader.readUInt32(),
                  let packets = reader.readUInt32(), let octets = reader.readUInt32(),
                  let blocks = readBlocks(count: count, from: &reader)
            else { throw malformed }
            return .senderReport(RTCPSenderReport(ssrc: ssrc, ntpTime: ntp, rtpTimestamp: rtp, packetCount: packets,
                                                  octetCount: octets, reportBlocks: blocks))

        case PacketType.receiverReport:
            guard let ssrc = reader.readUInt32(), let blocks = readBlocks(count: count, from: &reader) else { throw malformed }
            return .receiverReport(RTCPReceiverReport(ssrc: ssrc, reportBlocks: blocks))

        case PacketType.sourceDescription:
            var chunks: [RTCPSourceDescription.Chunk] = []
            for _ in 0..<count {
                guard let chunk = readChunk(from: &reader) else { throw malformed }
                chunks.append(chunk)
            }
            return .sourceDescription(RTCPSourceDescription(chunks: chunks))

        case PacketType.goodbye:
            var ssrcs: [UInt32] = []
            for _ in 0..<count {
                guard let ssrc = reader.readUInt32() else { throw malformed }
                ssrcs.append(ssrc)
            }
            var reason: [UInt8]?
            if let length = reader.readUInt8() {
                guard let text = reader.readBytes(Int(length)) else { throw malformed }
                reason = text
            }
            return .goodbye(RTCPGoodbye(ssrcs: ssrcs, reason: reason))

        case PacketType.transportFeedback where count == FeedbackFormat.genericNack:
            guard let sender = reader.readUInt32(), let media = reader.readUInt32(),
                  reader.remainingCount % 4 == 0
            else { throw malformed }
            var pairs: [RTCPNackPair] = []
            while let pid = reader.readUInt16(), let blp = reader.readUInt16() {
                pairs.append(RTCPNackPair(packetID: pid, lostBitmask: blp))
            }
            return .genericNack(RTCPGenericNack(senderSSRC: sender, mediaSSRC: media, pairs: pairs))

        case PacketType.payloadFeedback where count == FeedbackFormat.pictureLossIndication:
            guard let sender = reader.readUInt32(), let media = reader.readUInt32() else { throw malformed }
            return .pictureLossIndication(RTCPPictureLossIndication(senderSSRC: sender, mediaSSRC: media))

        case PacketType.payloadFeedback where count == FeedbackFormat.fullIntraRequest:
            guard let sender = reader.readUInt32(), let media = reader.readUInt32(),
                  reader.remainingCount % 8 == 0
            else { throw malformed }
            var entries: [RTCPFullIntraRequest.Entry] = []
            while let ssrc = reader.readUInt32(), let seq = reader.readUInt8(), reader.skip(3) {
                entries.append(RTCPFullIntraRequest.Entry(ssrc: ssrc, sequenceNumber: seq))
            }
            return .fullIntraRequest(RTCPFullIntraRequest(senderSSRC: sender, mediaSSRC: media, entries: entries))

        case PacketType.payloadFeedback where count == FeedbackFormat.applicationLayer:
            // Other application-layer feedback shares the format; only "REMB" is read.
            guard body.count >= 12, Array(body.dropFirst(8).prefix(4)) == RTCPReceiverEstimatedMaxBitrate.identifier else {
                return unknown
            }
            guard let sender = reader.readUInt32(), reader.skip(8), let ssrcCount = reader.readUInt8(),
                  let packed = reader.readUInt24()
            else { throw malformed }
            var ssrcs: [UInt32] = []
            for _ in 0..<ssrcCount {
                guard let ssrc = reader.readUInt32() else { throw malformed }
                ssrcs.append(ssrc)
            }
            let exponent = UInt64(packed >> 18)
            let mantissa = UInt64(packed & 0x3_FFFF)
            // An exponent above 46 overflows 64 bits; saturate instead of trapping.
            let bitrate = mantissa == 0 ? 0 : (mantissa.leadingZeroBitCount >= Int(exponent) ? mantissa << exponent : UInt64.max)
            return .receiverEstimatedMaxBitrate(RTCPReceiverEstimatedMaxBitrate(senderSSRC: sender, bitrate: bitrate, ssrcs: ssrcs))

        default:
            return unknown
        }
    }

    private static func readBlocks(count: UInt8, from reader: inout ByteReader) -> [RTCPReportBlock]? {
        var blocks: [RTCPReportBlock] = []
        for _ in 0..<count {
            guard let block = RTCPReportBlock(reading: &reader) else { return nil }
            blocks.append(block)
        }
        // Anything after the blocks is a profile-specific extension; ignored.
        return blocks
    }

    private static func readChunk(from reader: inout ByteReader) -> RTCPSourceDescription.Chunk? {
        let chunkStart = reader.offset
        guard let ssrc = reader.readUInt32() else { return nil }
        var items: [RTCPSourceDescription.Item] = []
        while true {
            // A chunk that runs to the end of the packet without its null item is tolerated.
            guard let type = reader.readUInt8() else { break }
            if type == 0 {
                // Null item: skip to the next 32-bit boundary of the chunk.
                let used = reader.offset - chunkStart
                guard reader.skip((4 - used % 4) % 4) else { return nil }
                break
            }
            guard let length = reader.readUInt8(), let value = reader.readBytes(Int(length)) else { return nil }
            items.append(RTCPSourceDescription.Item(type: type, value: value))
        }
        return RTCPSourceDescription.Chunk(ssrc: ssrc, items: items)
    }

    // MARK: Writing

    private func write(to bytes: inout [UInt8]) throws(RTCPError) {
        let start = bytes.count
        func header(count: Int, type: UInt8) throws(RTCPError) {
            guard (0...31).contains(count) else { throw .unencodable("count \(count) for packet type \(type)") }
            bytes.append(2 << 6 | UInt8(count))
            bytes.append(type)
            bytes.appendBigEndian(UInt16(0))  // length, filled in below
        }

        switch self {
        case .senderReport(let report):
            try header(count: report.reportBlocks.count, type: PacketType.senderReport)
            bytes.appendBigEndian(report.ssrc)
            bytes.appendBigEndian(report.ntpTime)
            bytes.appendBigEndian(report.rtpTimestamp)
            bytes.appendBigEndian(report.packetCount)
            bytes.appendBigEndian(report.octetCount)
            for block in report.reportBlocks { block.write(to: &bytes) }

        case .receiverReport(let report):
            try header(count: report.reportBlocks.count, type: PacketType.receiverReport)
            bytes.appendBigEndian(report.ssrc)
            for block in report.reportBlocks { block.write(to: &bytes) }

        case .sourceDescription(let description):
            try header(count: description.chunks.count, type: PacketType.sourceDescription)
            for chunk in description.chunks {
                bytes.appendBigEndian(chunk.ssrc)
                for item in chunk.items {
                    guard item.type != 0, item.value.count <= 255 else {
                        throw .unencodable("SDES item type \(item.type) with \(item.value.count) bytes")
                    }
                    bytes.append(item.type)
                    bytes.append(UInt8(item.value.count))
                    bytes += item.value
                }
                bytes.append(0)
                bytes.padToWordBoundary()
            }

        case .goodbye(let bye):
            try header(count: bye.ssrcs.count, type: PacketType.goodbye)
            for ssrc in bye.ssrcs { bytes.appendBigEndian(ssrc) }
            if let reason = bye.reason {
                guard reason.count <= 255 else { throw .unencodable("BYE reason of \(reason.count) bytes") }
                bytes.append(UInt8(reason.count))
                bytes += reason
                bytes.padToWordBoundary()
            }

        case .genericNack(let nack):
            try header(count: Int(FeedbackFormat.genericNack), type: PacketType.transportFeedback)
            bytes.appendBigEndian(nack.senderSSRC)
            bytes.appendBigEndian(nack.mediaSSRC)
            for pair in nack.pairs {
                bytes.appendBigEndian(pair.packetID)
                bytes.appendBigEndian(pair.lostBitmask)
            }

        case .pictureLossIndication(let pli):
            try header(count: Int(FeedbackFormat.pictureLossIndication), type: PacketType.payloadFeedback)
            bytes.appendBigEndian(pli.senderSSRC)
            bytes.appendBigEndian(pli.mediaSSRC)

        case .fullIntraRequest(let fir):
            try header(count: Int(FeedbackFormat.fullIntraRequest), type: PacketType.payloadFeedback)
            bytes.appendBigEndian(fir.senderSSRC)
            bytes.appendBigEndian(fir.mediaSSRC)
            for entry in fir.entries {
                bytes.appendBigEndian(entry.ssrc)
                bytes.append(entry.sequenceNumber)
                bytes.appendBigEndian24(0)
            }

        case .receiverEstimatedMaxBitrate(let remb):
            guard remb.ssrcs.count <= 255 else { throw .unencodable("REMB with \(remb.ssrcs.count) SSRCs") }
            try header(count: Int(FeedbackFormat.applicationLayer), type: PacketType.payloadFeedback)
            bytes.appendBigEndian(remb.senderSSRC)
            bytes.appendBigEndian(UInt32(0))  // media SSRC: unused, per the draft
            bytes += RTCPReceiverEstimatedMaxBitrate.identifier
            bytes.append(UInt8(remb.ssrcs.count))
            let (exponent, mantissa) = RTCPReceiverEstimatedMaxBitrate.encode(bitrate: remb.bitrate)
            bytes.appendBigEndian24(UInt32(exponent) << 18 | mantissa)
            for ssrc in remb.ssrcs { bytes.appendBigEndian(ssrc) }

        case .unknown(let unknown):
            try header(count: Int(unknown.count), type: unknown.packetType)
            bytes += unknown.body
            let padding = (4 - unknown.body.count % 4) % 4
            if padding > 0 {
                // A body that was padded on the wire is padded again, with P set.
                bytes += [UInt8](repeating: 0, count: padding - 1)
                bytes.append(UInt8(padding))
                bytes[start] |= 0x20
            }
        }

        let words = (bytes.count - start) / 4 - 1
        guard words <= Int(UInt16.max) else { throw .unencodable("packet of \(bytes.count - start) bytes") }
        bytes[start + 2] = UInt8(truncatingIfNeeded: words >> 8)
        bytes[start + 3] = UInt8(truncatingIfNeeded: words)
    }
}
