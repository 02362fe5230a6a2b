// RFC 7587: one Opus packet per RTP packet, timestamped on a 48 kHz clock whatever the
// encoder's sampling rate. The marker bit starts a talkspurt (RFC 3550 §5.1): the first packet,
// and the first after a gap the caller reports (DTX, the mix paused).

public import MediaCore

public struct OpusPacketizer: Sendable {
    /// The RTP clock of Opus (RFC 7587 §4.1).
    public static let clockRate = 48_000
    static let timeBase = Rational(1, Int64(clockRate))

    public private(set) var packetsPacketized: Int64 = 0
    private var started = false

    public init() {}

    /// The RTP payload of one Opus packet stamped with `pts`; `afterSilence` when packets
    /// were left out before it.
    public mutating func packetize(_ packet: [UInt8], pts: MediaTime, afterSilence: Bool = false) throws(PacketizerError) -> PacketizedFrame {
        guard !packet.isEmpty else { throw .emptyPayload }
        var frame = PacketizedFrame(codec: .opus, timestamp: pts.converted(to: Self.timeBase).ticks, isKeyframe: true,
                                    marker: !started || afterSilence, byteCapacity: packet.count, packetCapacity: 1)
        frame.append(contentsOf: packet[...])
        frame.closePayload()
        started = true
        packetsPacketized += 1
        return frame
    }
}
