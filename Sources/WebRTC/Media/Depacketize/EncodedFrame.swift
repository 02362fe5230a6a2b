// What depacketizers produce: one access unit (video frame, or Opus packet) per RTP
// timestamp, with what is known of its integrity.

public import MediaCore

/// The codecs this WebRTC stack negotiates and depacketizes: a subset of the media
/// vocabulary's `CompressedCodec`, closed so that every switch over it stays exhaustive.
public enum WebRTCCodec: Sendable, Equatable {
    case h264
    case vp8
    case opus

    public var compressed: CompressedCodec {
        switch self {
        case .h264: .h264
        case .vp8: .vp8
        case .opus: .opus
        }
    }
}

public struct EncodedFrame: Sendable, Equatable {
    public var codec: WebRTCCodec
    /// Unwrapped RTP timestamp (clock rate of the codec: 90 kHz video, 48 kHz Opus).
    public var timestamp: Int64
    /// H.264: Annex B byte stream (00 00 00 01 start codes). VP8: the frame. Opus: the packet.
    public var data: [UInt8]
    public var isKeyframe: Bool
    /// No packet of the frame is missing and every fragment was whole. An incomplete frame
    /// breaks decoding until the next keyframe: the owner should request one.
    public var isComplete: Bool
    /// Packets were lost between the previous frame and this one.
    public var followsLoss: Bool
    /// Extended sequence numbers of its first and last packet.
    public var firstSequence: Int64
    public var lastSequence: Int64

    public init(codec: WebRTCCodec, timestamp: Int64, data: [UInt8], isKeyframe: Bool, isComplete: Bool,
                followsLoss: Bool, firstSequence: Int64, lastSequence: Int64) {
        self.codec = codec
        self.timestamp = timestamp
        self.data = data
        self.isKeyframe = isKeyframe
        self.isComplete = isComplete
        self.followsLoss = followsLoss
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
    }
}

/// Payload content dropped by a depacketizer. Not errors: the stream goes on.
public enum DepacketizerDiscard: Sendable, Equatable {
    /// A packetization the receiver does not implement (H.264 STAP-B, MTAP, FU-B).
    case unsupportedPacketization(UInt8)
    /// Too short, or lengths that run past the payload.
    case malformedPayload
    /// A fragment whose start was lost.
    case orphanFragment
    /// A fragmented unit cut short by a loss or by the end of its frame.
    case incompleteFragment
    /// Sequence numbers must come in order (from the reorder buffer); this one did not.
    case outOfOrder(Int64)
    /// A frame grew past the size limit; it was cut.
    case frameTooLarge
}

public enum DepacketizerEvent: Sendable, Equatable {
    case frame(EncodedFrame)
    case discarded(DepacketizerDiscard)
}

/// The codec-independent part of frame assembly: a frame is the packets of one RTP
/// timestamp, ended by the marker bit or by a new timestamp; any sequence gap inside it,
/// or just before it, makes it incomplete (the lost packet may have been its first).
struct FrameBoundaries: Sendable {
    struct Frame: Sendable {
        var timestamp: Int64
        var firstSequence: Int64
        var lastSequence: Int64
        var isComplete: Bool
        var followsLoss: Bool
    }

    private(set) var current: Frame?
    private var lastSequence: Int64?

    enum Arrival {
        /// Ignore the packet: behind one already taken.
        case outOfOrder
        /// `finished` (if any) must be emitted before the packet is added to `current`.
        /// `gapInFrame` tells the codec to drop any fragment in progress.
        case accepted(finished: Frame?, gap: Bool)
    }

    mutating func arrive(sequence: Int64, timestamp: Int64) -> Arrival {
        if let lastSequence, sequence <= lastSequence { return .outOfOrder }
        let gap = lastSequence.map { sequence != $0 + 1 } ?? false
        lastSequence = sequence
        var finished: Frame?
        if let frame = current, frame.timestamp != timestamp {
            finished = frame
            current = nil
        }
        if current == nil {
            current = Frame(timestamp: timestamp, firstSequence: sequence, lastSequence: sequence,
                            isComplete: !gap, followsLoss: gap)
        } else {
            current!.lastSequence = sequence
            if gap { current!.isComplete = false }
        }
        return .accepted(finished: finished, gap: gap)
    }

    mutating func markIncomplete() { current?.isComplete = false }

    /// Ends the current frame (marker bit).
    mutating func finish() -> Frame? {
        defer { current = nil }
        return current
    }
}
