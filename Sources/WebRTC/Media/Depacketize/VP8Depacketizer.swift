// RFC 7741 VP8 payloads: a payload descriptor, then a piece of the frame. A frame starts
// with S=1 and partition index 0; its first byte says keyframe (P bit clear).
//
//   |X|R|N|S|R| PID |     X: extensions follow, N: non-reference, S: partition start
//   |I|L|T|K| RSV   |     (if X)
//   |M| PictureID   |     (if I; M=1: 15 bits, two bytes)
//   |   TL0PICIDX   |     (if L)
//   |TID|Y| KEYIDX  |     (if T or K)

import MediaCore

public struct VP8PayloadDescriptor: Sendable, Equatable {
    public enum PictureID: Sendable, Equatable {
        case short(UInt8)   // 7 bits
        case long(UInt16)   // 15 bits

        public var value: UInt16 {
            switch self {
            case .short(let value): UInt16(value)
            case .long(let value): value
            }
        }
    }

    public var isNonReference: Bool
    public var isPartitionStart: Bool
    public var partitionIndex: UInt8
    public var pictureID: PictureID?
    public var tl0PictureIndex: UInt8?
    /// Temporal layer (T) and layer sync bit.
    public var temporalLayer: UInt8?
    public var isLayerSync: Bool
    /// KEYIDX (K).
    public var keyIndex: UInt8?

    public init(isNonReference: Bool = false, isPartitionStart: Bool, partitionIndex: UInt8 = 0, pictureID: PictureID? = nil,
                tl0PictureIndex: UInt8? = nil, temporalLayer: UInt8? = nil, isLayerSync: Bool = false, keyIndex: UInt8? = nil) {
        self.isNonReference = isNonReference
        self.isPartitionStart = isPartitionStart
        self.partitionIndex = partitionIndex
        self.pictureID = pictureID
        self.tl0PictureIndex = tl0PictureIndex
        self.temporalLayer = temporalLayer
        self.isLayerSync = isLayerSync
        self.keyIndex = keyIndex
    }

    /// The first packet of a frame.
    public var isFrameStart: Bool { isPartitionStart && partitionIndex == 0 }

    /// The descriptor and its length in bytes; nil if `payload` is too short for it.
    public static func parse(_ payload: [UInt8]) -> (descriptor: VP8PayloadDescriptor, length: Int)? {
        var reader = ByteReader(payload)
        guard let first = reader.readUInt8() else { return nil }
        var descriptor = VP8PayloadDescriptor(isNonReference: first & 0x20 != 0, isPartitionStart: first & 0x10 != 0,
                                              partitionIndex: first & 0x07)
        if first & 0x80 != 0 {
            guard let extensions = reader.readUInt8() else { return nil }
            if extensions & 0x80 != 0 {
                guard let high = reader.readUInt8() else { return nil }
                if high & 0x80 != 0 {
                    guard let low = reader.readUInt8() else { return nil }
                    descriptor.pictureID = .long(UInt16(high & 0x7F) << 8 | UInt16(low))
                } else {
                    descriptor.pictureID = .short(high)
                }
            }
            if extensions & 0x40 != 0 {
                guard let index = reader.readUInt8() else { return nil }
                descriptor.tl0PictureIndex = index
            }
            if extensions & 0x30 != 0 {
                guard let layer = reader.readUInt8() else { return nil }
                if extensions & 0x20 != 0 {
                    descriptor.temporalLayer = layer >> 6
                    descriptor.isLayerSync = layer & 0x20 != 0
                }
                if extensions & 0x10 != 0 { descriptor.keyIndex = layer & 0x1F }
            }
        }
        return (descriptor, reader.offset)
    }

    /// The wire form (for tests and senders).
    public func serialized() -> [UInt8] {
        let hasT = temporalLayer != nil, hasK = keyIndex != nil
        let hasExtensions = pictureID != nil || tl0PictureIndex != nil || hasT || hasK
        var bytes: [UInt8] = [(hasExtensions ? 0x80 : 0) | (isNonReference ? 0x20 : 0) | (isPartitionStart ? 0x10 : 0) | partitionIndex & 0x07]
        guard hasExtensions else { return bytes }
        bytes.append((pictureID != nil ? 0x80 : 0) | (tl0PictureIndex != nil ? 0x40 : 0) | (hasT ? 0x20 : 0) | (hasK ? 0x10 : 0))
        switch pictureID {
        case .short(let value): bytes.append(value & 0x7F)
        case .long(let value): bytes += [0x80 | UInt8(truncatingIfNeeded: value >> 8) & 0x7F, UInt8(truncatingIfNeeded: value)]
        case nil: break
        }
        if let tl0PictureIndex { bytes.append(tl0PictureIndex) }
        if hasT || hasK {
            bytes.append((temporalLayer ?? 0) << 6 | (isLayerSync ? 0x20 : 0) | (keyIndex ?? 0) & 0x1F)
        }
        return bytes
    }
}

public struct VP8Depacketizer: Sendable {
    public let maxFrameSize: Int

    private var boundaries = FrameBoundaries()
    private var data: [UInt8] = []
    private var isKeyframe = false
    /// The frame in progress saw its start packet (S=1, PID=0).
    private var sawStart = false
    /// Picture ID of the frame in progress, if the sender numbers pictures.
    public private(set) var lastPictureID: VP8PayloadDescriptor.PictureID?

    public init(maxFrameSize: Int = 4 << 20) {
        self.maxFrameSize = maxFrameSize
    }

    public mutating func push(payload: [UInt8], sequence: Int64, timestamp: Int64, marker: Bool) -> [DepacketizerEvent] {
        var events: [DepacketizerEvent] = []
        switch boundaries.arrive(sequence: sequence, timestamp: timestamp) {
        case .outOfOrder:
            return [.discarded(.outOfOrder(sequence))]
        case .accepted(let finished, _):
            if let finished { events += emit(finished) }
        }
        guard let (descriptor, length) = VP8PayloadDescriptor.parse(payload), length < payload.count else {
            boundaries.markIncomplete()
            events.append(.discarded(.malformedPayload))
            if marker, let frame = boundaries.finish() { events += emit(frame) }
            return events
        }
        if descriptor.isFrameStart {
            if sawStart || !data.isEmpty {
                // A second start under one timestamp: the sender broke the rules; keep the new frame.
                data = []
                boundaries.markIncomplete()
            }
            sawStart = true
            // VP8 frame tag (RFC 6386 §9.1): bit 0 of the first byte is 0 on keyframes.
            isKeyframe = payload[length] & 0x01 == 0
            lastPictureID = descriptor.pictureID
        }
        if data.count + payload.count - length > maxFrameSize {
            boundaries.markIncomplete()
            events.append(.discarded(.frameTooLarge))
        } else {
            data += payload[length...]
        }
        if marker, let frame = boundaries.finish() { events += emit(frame) }
        return events
    }

    public mutating func flush() -> [DepacketizerEvent] {
        guard let frame = boundaries.finish() else { return [] }
        return emit(frame)
    }

    private mutating func emit(_ frame: FrameBoundaries.Frame) -> [DepacketizerEvent] {
        defer {
            data = []
            isKeyframe = false
            sawStart = false
        }
        // Without its start packet the frame header is gone: not decodable.
        let complete = frame.isComplete && sawStart && !data.isEmpty
        return [.frame(EncodedFrame(codec: .vp8, timestamp: frame.timestamp, data: data, isKeyframe: sawStart && isKeyframe,
                                    isComplete: complete, followsLoss: frame.followsLoss,
                                    firstSequence: frame.firstSequence, lastSequence: frame.lastSequence))]
    }
}
