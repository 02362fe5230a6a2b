// RFC 6184 packetization mode 1 (non-interleaved): single NAL unit packets, STAP-A and
// FU-A. Packets go in in sequence order (from the reorder buffer); frames come out as
// Annex B access units. SPS and PPS seen in-band are remembered and put in front of an IDR
// that arrives without them, since a decoder joining there needs them.

public struct H264Depacketizer: Sendable {
    public enum NALType {
        public static let nonIDRSlice: UInt8 = 1
        public static let idrSlice: UInt8 = 5
        public static let sps: UInt8 = 7
        public static let pps: UInt8 = 8
        public static let accessUnitDelimiter: UInt8 = 9
        public static let stapA: UInt8 = 24
        public static let stapB: UInt8 = 25
        public static let mtap16: UInt8 = 26
        public static let mtap24: UInt8 = 27
        public static let fuA: UInt8 = 28
        public static let fuB: UInt8 = 29
    }

    static let startCode: [UInt8] = [0, 0, 0, 1]

    /// A frame larger than this is cut and reported (bounds memory whatever a peer sends).
    public let maxFrameSize: Int

    private var boundaries = FrameBoundaries()
    private var nalUnits: [[UInt8]] = []
    private var frameSize = 0
    /// An FU-A being reassembled: reconstructed NAL header + data so far.
    private var fragment: [UInt8]?
    private var sps: [UInt8]?
    private var pps: [UInt8]?

    public init(maxFrameSize: Int = 4 << 20) {
        self.maxFrameSize = maxFrameSize
    }

    /// Adds one RTP payload; returns frames finished by it (by a new timestamp or its marker).
    public mutating func push(payload: [UInt8], sequence: Int64, timestamp: Int64, marker: Bool) -> [DepacketizerEvent] {
        var events: [DepacketizerEvent] = []
        switch boundaries.arrive(sequence: sequence, timestamp: timestamp) {
        case .outOfOrder:
            return [.discarded(.outOfOrder(sequence))]
        case .accepted(let finished, let gap):
            if let finished { events += emit(finished) }
            if gap, fragment != nil {
                fragment = nil
                boundaries.markIncomplete()
                events.append(.discarded(.incompleteFragment))
            }
        }
        events += read(payload)
        if marker, let frame = boundaries.finish() { events += emit(frame) }
        return events
    }

    /// Emits the frame in progress (the stream ended, or it has waited long enough).
    public mutating func flush() -> [DepacketizerEvent] {
        guard let frame = boundaries.finish() else { return [] }
        return emit(frame)
    }

    // MARK: Payload structures

    private mutating func read(_ payload: [UInt8]) -> [DepacketizerEvent] {
        guard let header = payload.first else { return malformed() }
        let type = header & 0x1F
        switch type {
        case 1...23:
            if fragment != nil { return dropFragment() + add(payload) }
            return add(payload)

        case NALType.stapA:
            var events: [DepacketizerEvent] = fragment != nil ? dropFragment() : []
            // Validate all sizes first, so a malformed aggregate adds nothing.
            var units: [[UInt8]] = []
            var index = 1
            while index < payload.count {
                guard index + 2 <= payload.count else { return events + malformed() }
                let size = Int(payload[index]) << 8 | Int(payload[index + 1])
                index += 2
                guard size > 0, index + size <= payload.count else { return events + malformed() }
                units.append(Array(payload[index..<index + size]))
                index += size
            }
            guard !units.isEmpty else { return events + malformed() }
            for unit in units { events += add(unit) }
            return events

        case NALType.fuA:
            guard payload.count >= 2 else { return malformed() }
            let fuHeader = payload[1]
            let isStart = fuHeader & 0x80 != 0
            let isEnd = fuHeader & 0x40 != 0
            var events: [DepacketizerEvent] = []
            if isStart {
                if fragment != nil { events += dropFragment() }
                fragment = [header & 0xE0 | fuHeader & 0x1F] + payload[2...]
            } else if fragment == nil {
                boundaries.markIncomplete()
                return [.discarded(.orphanFragment)]
            } else {
                fragment! += payload[2...]
            }
            if let whole = fragment, whole.count + frameSize > maxFrameSize {
                fragment = nil
                boundaries.markIncomplete()
                return events + [.discarded(.frameTooLarge)]
            }
            if isEnd, let whole = fragment {
                fragment = nil
                events += add(whole)
            }
            return events

        case NALType.stapB, NALType.mtap16, NALType.mtap24, NALType.fuB:
            // Interleaved mode: never negotiated by WebRTC senders; its content is lost.
            if fragment != nil { return dropFragment() + unsupported(type) }
            return unsupported(type)

        default:
            // 0, 30, 31: unspecified; carry nothing a decoder needs.
            return [.discarded(.unsupportedPacketization(type))]
        }
    }

    private mutating func add(_ nal: [UInt8]) -> [DepacketizerEvent] {
        guard !nal.isEmpty else { return malformed() }
        guard frameSize + nal.count + 4 <= maxFrameSize else {
            boundaries.markIncomplete()
            return [.discarded(.frameTooLarge)]
        }
        switch nal[0] & 0x1F {
        case NALType.sps: sps = nal
        case NALType.pps: pps = nal
        default: break
        }
        nalUnits.append(nal)
        frameSize += nal.count + 4
        return []
    }

    private mutating func dropFragment() -> [DepacketizerEvent] {
        fragment = nil
        boundaries.markIncomplete()
        return [.discarded(.incompleteFragment)]
    }

    private mutating func malformed() -> [DepacketizerEvent] {
        boundaries.markIncomplete()
        return [.discarded(.malformedPayload)]
    }

    private mutating func unsupported(_ type: UInt8) -> [DepacketizerEvent] {
        boundaries.markIncomplete()
        return [.discarded(.unsupportedPacketization(type))]
    }

    // MARK: Access units

    private mutating func emit(_ frame: FrameBoundaries.Frame) -> [DepacketizerEvent] {
        var events: [DepacketizerEvent] = []
        var frame = frame
        if fragment != nil {
            // The frame ended inside a fragmented unit: its tail was lost.
            fragment = nil
            frame.isComplete = false
            events.append(.discarded(.incompleteFragment))
        }
        let types = nalUnits.map { $0[0] & 0x1F }
        let isKeyframe = types.contains(NALType.idrSlice)
        var units = nalUnits
        if isKeyframe {
            var parameterSets: [[UInt8]] = []
            if !types.contains(NALType.sps), let sps { parameterSets.append(sps) }
            if !types.contains(NALType.pps), let pps { parameterSets.append(pps) }
            // After an access unit delimiter, which must stay first.
            let at = types.first == NALType.accessUnitDelimiter ? 1 : 0
            units.insert(contentsOf: parameterSets, at: at)
        }
        nalUnits = []
        frameSize = 0
        var data: [UInt8] = []
        data.reserveCapacity(units.reduce(0) { $0 + $1.count + 4 })
        for unit in units { data += Self.startCode + unit }
        events.append(.frame(EncodedFrame(codec: .h264, timestamp: frame.timestamp, data: data, isKeyframe: isKeyframe,
                                          isComplete: frame.isComplete && !data.isEmpty, followsLoss: frame.followsLoss,
                                          firstSequence: frame.firstSequence, lastSequence: frame.lastSequence)))
        return events
    }
}
