// Lays out outgoing RTCP as compounds of at most `maxSize` bytes (one UDP datagram after
// SRTCP overhead). RFC 3550 wants every compound to open with a report and carry an SDES
// CNAME; with reduced-size RTCP (RFC 5506, `a=rtcp-rsize`) feedback may also go alone.

public enum RTCPCompoundPacker {
    public static let defaultMaxSize = 1200

    /// Report blocks (in RRs of at most 31, as many per compound as fit) and
    /// feedback, packed into the fewest compounds in the given order. A generic NACK too
    /// big for one compound is split; any other packet too big on its own gets a
    /// compound by itself, over the limit.
    public static func pack(senderSSRC: UInt32, cname: String, reportBlocks: [RTCPReportBlock], feedback: [RTCPPacket],
                            maxSize: Int = defaultMaxSize, reducedSize: Bool = false) -> [[RTCPPacket]] {
        let sdes = RTCPPacket.sourceDescription(.cname(ssrc: senderSSRC, cname))
        let headerSize = 8 + sdes.wireSize
        let queue = feedback.flatMap { split($0, room: maxSize - headerSize) }
        var blocks = reportBlocks[...]
        var next = queue.startIndex
        var compounds: [[RTCPPacket]] = []
        repeat {
            var compound: [RTCPPacket] = []
            var size = 0
            if !reducedSize || !blocks.isEmpty {
                // RR packets of up to 31 blocks while they fit, then the SDES (RFC 3550 §6.1 order).
                size = sdes.wireSize
                repeat {
                    let fitting = min(RTCPReceiverReport.maxReportBlocks, blocks.count, max(0, (maxSize - size - 8) / RTCPReportBlock.size))
                    if fitting == 0, !compound.isEmpty { break }
                    // The first RR always takes a block, so an absurdly small limit still progresses.
                    let count = compound.isEmpty && !blocks.isEmpty ? max(1, fitting) : fitting
                    compound.append(.receiverReport(RTCPReceiverReport(ssrc: senderSSRC, reportBlocks: Array(blocks.prefix(count)))))
                    blocks = blocks.dropFirst(count)
                    size += 8 + count * RTCPReportBlock.size
                } while !blocks.isEmpty
                compound.append(sdes)
            }
            // At least one feedback packet per compound, so an oversized one cannot stall the loop.
            var placed = 0
            while next < queue.endIndex, size + queue[next].wireSize <= maxSize || placed == 0 {
                size += queue[next].wireSize
                compound.append(queue[next])
                next += 1
                placed += 1
            }
            compounds.append(compound)
        } while !blocks.isEmpty || next < queue.endIndex
        return compounds
    }

    /// A NACK cut into pieces of at most `room` bytes; anything else unchanged.
    static func split(_ packet: RTCPPacket, room: Int) -> [RTCPPacket] {
        guard case .genericNack(let nack) = packet, packet.wireSize > room else { return [packet] }
        let perPacket = max(1, (room - 12) / 4)
        return stride(from: 0, to: nack.pairs.count, by: perPacket).map { start in
            .genericNack(RTCPGenericNack(senderSSRC: nack.senderSSRC, mediaSSRC: nack.mediaSSRC,
                                         pairs: Array(nack.pairs[start..<min(start + perPacket, nack.pairs.count)])))
        }
    }
}
