// RFC 7587: one RTP packet is one Opus packet, timestamped at 48 kHz. Nothing to
// assemble; the depacketizer only notes losses, which the decoder conceals.

public struct OpusDepacketizer: Sendable {
    private var lastSequence: Int64?

    public init() {}

    public mutating func push(payload: [UInt8], sequence: Int64, timestamp: Int64) -> [DepacketizerEvent] {
        if let lastSequence, sequence <= lastSequence { return [.discarded(.outOfOrder(sequence))] }
        let followsLoss = lastSequence.map { sequence != $0 + 1 } ?? false
        lastSequence = sequence
        guard !payload.isEmpty else { return [.discarded(.malformedPayload)] }
        return [.frame(EncodedFrame(codec: .opus, timestamp: timestamp, data: payload, isKeyframe: true, isComplete: true,
                                    followsLoss: followsLoss, firstSequence: sequence, lastSequence: sequence))]
    }
}
