// RFC 6184 packetization mode 1 (non-interleaved), the mode browsers negotiate: a NAL unit
// that fits goes alone (single NAL unit packet) or with its small neighbours (STAP-A); a larger
// one is cut into FU-A fragments of nearly equal size, so no packet is a runt. The marker bit
// ends the access unit. Every IDR access unit is preceded by SPS and PPS, taken from the
// access unit itself or remembered (extradata, or in-band earlier): libx264 with
// AV_CODEC_FLAG_GLOBAL_HEADER puts them in extradata only, and a viewer that joins at an IDR
// cannot decode it without them. Access unit delimiters and filler data are dropped: no
// decoder needs them and they cost a packet each.

public import MediaCore

/// How NAL units are delimited in an access unit.
public enum H264AccessUnitFormat: Sendable, Equatable {
    /// Start codes (00 00 01 or 00 00 00 01): libx264's and FFmpeg's raw H.264.
    case annexB
    /// Each NAL unit preceded by its length in `lengthSize` bytes (1, 2 or 4): MP4, FLV.
    case lengthPrefixed(lengthSize: Int)
}

/// SPS and PPS, as a decoder needs them before an IDR.
public struct H264ParameterSets: Sendable, Equatable {
    public var sequenceParameterSets: [[UInt8]]
    public var pictureParameterSets: [[UInt8]]
    /// The length size of the avcC record these came from (nil for Annex B extradata).
    public var nalLengthSize: Int?

    public init(sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]], nalLengthSize: Int? = nil) {
        self.sequenceParameterSets = sequenceParameterSets
        self.pictureParameterSets = pictureParameterSets
        self.nalLengthSize = nalLengthSize
    }

    /// From an encoder's extradata: Annex B (libx264's) or an avcC record (ISO 14496-15
    /// §5.3.3.1; what MP4 and FLV carry). Other NAL units in it (SEI) are ignored; at least one
    /// SPS and one PPS are required.
    public init(extradata: [UInt8]) throws(PacketizerError) {
        var sps: [[UInt8]] = []
        var pps: [[UInt8]] = []
        var lengthSize: Int?
        if extradata.starts(with: [0, 0, 1]) || extradata.starts(with: [0, 0, 0, 1]) {
            var ranges: [Range<Int>] = []
            H264NALUnits.annexB(extradata, into: &ranges)
            for range in ranges {
                switch extradata[range.lowerBound] & 0x1F {
                case H264Depacketizer.NALType.sps: sps.append(Array(extradata[range]))
                case H264Depacketizer.NALType.pps: pps.append(Array(extradata[range]))
                default: break
                }
            }
        } else if extradata.first == 1 {
            var reader = ByteReader(extradata)
            guard reader.skip(4), let sizeByte = reader.readUInt8(), let spsCount = reader.readUInt8() else {
                throw .malformedExtradata
            }
            let size = Int(sizeByte & 0x03) + 1
            guard size != 3 else { throw .invalidLengthSize(size) }
            lengthSize = size
            func readSets(_ count: Int) throws(PacketizerError) -> [[UInt8]] {
                var sets: [[UInt8]] = []
                for _ in 0..<count {
                    guard let length = reader.readUInt16(), length > 0, let set = reader.readBytes(Int(length)) else {
                        throw .malformedExtradata
                    }
                    sets.append(set)
                }
                return sets
            }
            sps = try readSets(Int(spsCount & 0x1F))
            guard let ppsCount = reader.readUInt8() else { throw .malformedExtradata }
            pps = try readSets(Int(ppsCount))
            // High-profile fields after the PPS (chroma format, bit depths) are not needed here.
        }
        guard !sps.isEmpty, !pps.isEmpty else { throw .malformedExtradata }
        self.init(sequenceParameterSets: sps, pictureParameterSets: pps, nalLengthSize: lengthSize)
    }

    /// The format the encoder's access units come in alongside this extradata.
    public var accessUnitFormat: H264AccessUnitFormat {
        nalLengthSize.map { .lengthPrefixed(lengthSize: $0) } ?? .annexB
    }
}

/// Splits access units into NAL unit ranges, without copying.
enum H264NALUnits {
    /// The NAL units between start codes; trailing zero bytes (a 4-byte start code's first
    /// byte, trailing_zero_8bits) are not part of the unit before them. Bytes before the first
    /// start code are ignored.
    static func annexB(_ data: [UInt8], into ranges: inout [Range<Int>]) {
        ranges.removeAll(keepingCapacity: true)
        var start: Int?
        func close(_ end: Int) {
            guard let start else { return }
            var end = end
            while end > start, data[end - 1] == 0 { end -= 1 }
            if end > start { ranges.append(start..<end) }
        }
        var index = 0
        while index + 2 < data.count {
            // A byte above 1 at index + 2 rules out a start code at index, index + 1 and index + 2.
            if data[index + 2] > 1 {
                index += 3
            } else if data[index] == 0, data[index + 1] == 0, data[index + 2] == 1 {
                close(index)
                start = index + 3
                index += 3
            } else {
                index += 1
            }
        }
        close(data.count)
    }

    /// NAL units each preceded by a big-endian length of `lengthSize` bytes; empty ones are skipped.
    static func lengthPrefixed(_ data: [UInt8], lengthSize: Int, into ranges: inout [Range<Int>]) throws(PacketizerError) {
        guard lengthSize == 1 || lengthSize == 2 || lengthSize == 4 else { throw .invalidLengthSize(lengthSize) }
        ranges.removeAll(keepingCapacity: true)
        var index = 0
        while index < data.count {
            guard data.count - index >= lengthSize else { throw .truncatedLengthPrefix(offset: index) }
            var length = 0
            for byte in data[index..<(index + lengthSize)] { length = length << 8 | Int(byte) }
            guard length <= data.count - index - lengthSize else { throw .truncatedLengthPrefix(offset: index) }
            let start = index + lengthSize
            if length > 0 { ranges.append(start..<(start + length)) }
            index = start + length
        }
    }
}

public struct H264Packetizer: Sendable {
    public static let defaultMaxPayloadSize = 1200
    /// The RTP clock of H.264 (RFC 6184 §8.2.1).
    public static let clockRate = 90_000
    static let timeBase = Rational(1, Int64(clockRate))
    static let fillerData: UInt8 = 12

    /// The largest RTP payload written, in bytes (an RTP header, header extensions and the
    /// SRTP tag come on top).
    public let maxPayloadSize: Int
    /// What is put before an IDR that comes without SPS or PPS.
    public private(set) var parameterSets: H264ParameterSets?

    public private(set) var accessUnitsPacketized: Int64 = 0
    public private(set) var keyframesPacketized: Int64 = 0
    /// IDR access units that got remembered SPS/PPS put before them.
    public private(set) var parameterSetsInserted: Int64 = 0
    /// IDR access units sent without SPS or PPS because none was known: undecodable for a
    /// viewer that joins there.
    public private(set) var keyframesWithoutParameterSets: Int64 = 0
    /// Access unit delimiters and filler data left out.
    public private(set) var nalUnitsDropped: Int64 = 0

    // Scratch space reused from one access unit to the next.
    private var ranges: [Range<Int>] = []
    private var units: [ArraySlice<UInt8>] = []

    public init(maxPayloadSize: Int = defaultMaxPayloadSize, parameterSets: H264ParameterSets? = nil) {
        precondition(maxPayloadSize >= 3, "an H.264 RTP payload needs room for an FU-A fragment")
        self.maxPayloadSize = maxPayloadSize
        self.parameterSets = parameterSets
    }

    /// New out-of-band SPS/PPS (the encoder was reopened with new extradata).
    public mutating func setParameterSets(_ sets: H264ParameterSets?) {
        parameterSets = sets
    }

    /// The RTP payloads of one access unit, stamped with `pts` on the 90 kHz clock. SPS and PPS
    /// found in it replace the remembered ones.
    public mutating func packetize(_ accessUnit: [UInt8], format: H264AccessUnitFormat = .annexB,
                                   pts: MediaTime) throws(PacketizerError) -> PacketizedFrame {
        switch format {
        case .annexB: H264NALUnits.annexB(accessUnit, into: &ranges)
        case .lengthPrefixed(let lengthSize): try H264NALUnits.lengthPrefixed(accessUnit, lengthSize: lengthSize, into: &ranges)
        }

        var hasIDR = false
        var inBandSPS: [[UInt8]] = []
        var inBandPPS: [[UInt8]] = []
        units.removeAll(keepingCapacity: true)
        for range in ranges {
            switch accessUnit[range.lowerBound] & 0x1F {
            case H264Depacketizer.NALType.accessUnitDelimiter, Self.fillerData:
                nalUnitsDropped += 1
                continue
            case H264Depacketizer.NALType.idrSlice: hasIDR = true
            case H264Depacketizer.NALType.sps: inBandSPS.append(Array(accessUnit[range]))
            case H264Depacketizer.NALType.pps: inBandPPS.append(Array(accessUnit[range]))
            default: break
            }
            units.append(accessUnit[range])
        }
        guard !units.isEmpty else { throw .noNALUnits }
        if !inBandSPS.isEmpty || !inBandPPS.isEmpty {
            var sets = parameterSets ?? H264ParameterSets(sequenceParameterSets: [], pictureParameterSets: [])
            if !inBandSPS.isEmpty { sets.sequenceParameterSets = inBandSPS }
            if !inBandPPS.isEmpty { sets.pictureParameterSets = inBandPPS }
            parameterSets = sets
        }
        if hasIDR {
            // SPS, then PPS, then the rest in order: what a decoder joining here needs first.
            let rest = units.filter {
                let type = $0[$0.startIndex] & 0x1F
                return type != H264Depacketizer.NALType.sps && type != H264Depacketizer.NALType.pps
            }
            let sps = parameterSets?.sequenceParameterSets ?? []
            let pps = parameterSets?.pictureParameterSets ?? []
            if sps.isEmpty || pps.isEmpty { keyframesWithoutParameterSets += 1 }
            if (inBandSPS.isEmpty && !sps.isEmpty) || (inBandPPS.isEmpty && !pps.isEmpty) { parameterSetsInserted += 1 }
            units.removeAll(keepingCapacity: true)
            for set in sps { units.append(set[...]) }
            for set in pps { units.append(set[...]) }
            units.append(contentsOf: rest)
            keyframesPacketized += 1
        }
        accessUnitsPacketized += 1

        let frame = emit(timestamp: pts.converted(to: Self.timeBase).ticks, isKeyframe: hasIDR)
        // Let go of the access unit's storage; the capacity stays.
        units.removeAll(keepingCapacity: true)
        return frame
    }

    /// Lays `units` out as single NAL unit, STAP-A and FU-A payloads.
    private func emit(timestamp: Int64, isKeyframe: Bool) -> PacketizedFrame {
        let fragmentRoom = maxPayloadSize - 2
        let total = units.reduce(0) { $0 + $1.count }
        let packetEstimate = units.count + total / fragmentRoom + 1
        var frame = PacketizedFrame(codec: .h264, timestamp: timestamp, isKeyframe: isKeyframe, marker: true,
                                    byteCapacity: total + 2 * packetEstimate + 2 * units.count,
                                    packetCapacity: packetEstimate)
        var index = 0
        while index < units.count {
            let unit = units[index]
            if unit.count > maxPayloadSize {
                fragment(unit, room: fragmentRoom, into: &frame)
                index += 1
                continue
            }
            // As many following units as fit with it in one STAP-A (a 1-byte header, then a
            // 2-byte size before each unit).
            var size = 1 + 2 + unit.count
            var end = index + 1
            while end < units.count, size + 2 + units[end].count <= maxPayloadSize {
                size += 2 + units[end].count
                end += 1
            }
            if end - index == 1 {
                frame.append(contentsOf: unit)
            } else {
                // F is set if any unit has it; NRI is the highest of theirs (RFC 6184 §5.7.1).
                var forbidden: UInt8 = 0
                var importance: UInt8 = 0
                for aggregated in units[index..<end] {
                    let header = aggregated[aggregated.startIndex]
                    forbidden |= header & 0x80
                    importance = max(importance, header & 0x60)
                }
                frame.append(forbidden | importance | H264Depacketizer.NALType.stapA)
                for aggregated in units[index..<end] {
                    frame.appendBigEndian(UInt16(aggregated.count))
                    frame.append(contentsOf: aggregated)
                }
            }
            frame.closePayload()
            index = end
        }
        return frame
    }

    /// FU-A fragments of nearly equal size: the NAL header becomes the FU indicator (F, NRI)
    /// and the FU header (S, E, type).
    private func fragment(_ unit: ArraySlice<UInt8>, room: Int, into frame: inout PacketizedFrame) {
        let header = unit[unit.startIndex]
        let body = unit.dropFirst()
        let count = (body.count + room - 1) / room
        let base = body.count / count
        let longer = body.count % count
        var start = body.startIndex
        for piece in 0..<count {
            let size = base + (piece < longer ? 1 : 0)
            var fuHeader = header & 0x1F
            if piece == 0 { fuHeader |= 0x80 }
            if piece == count - 1 { fuHeader |= 0x40 }
            frame.append(header & 0xE0 | H264Depacketizer.NALType.fuA)
            frame.append(fuHeader)
            frame.append(contentsOf: body[start..<(start + size)])
            frame.closePayload()
            start += size
        }
    }
}
