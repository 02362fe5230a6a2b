// REMB as a bitrate cap: we do not estimate bandwidth, we tell the publisher not to send
// more than `cap` for its media SSRCs. Sent every `interval`, and at once when the cap changes.

public struct REMBScheduler: Sendable, Equatable {
    public let senderSSRC: UInt32
    /// Between two REMBs with an unchanged cap, in µs.
    public let interval: Int64
    public private(set) var cap: UInt64
    public private(set) var packetsSent: Int = 0

    private var lastSentAt: Int64?
    private var capChanged = true

    public init(senderSSRC: UInt32, cap: UInt64 = 8_500_000, interval: Int64 = 1_000_000) {
        self.senderSSRC = senderSSRC
        self.cap = cap
        self.interval = interval
    }

    /// A new cap, sent at the next poll when it differs once encoded.
    public mutating func setCap(_ bitrate: UInt64) {
        let old = RTCPReceiverEstimatedMaxBitrate(senderSSRC: senderSSRC, bitrate: cap, ssrcs: []).encodedBitrate
        let new = RTCPReceiverEstimatedMaxBitrate(senderSSRC: senderSSRC, bitrate: bitrate, ssrcs: []).encodedBitrate
        cap = bitrate
        if old != new { capChanged = true }
    }

    /// The REMB due at `now` for `mediaSSRCs`, if any (none without SSRCs to cap).
    public mutating func poll(now: Int64, mediaSSRCs: [UInt32]) -> RTCPPacket? {
        guard !mediaSSRCs.isEmpty else { return nil }
        if !capChanged, let lastSentAt, now - lastSentAt < interval { return nil }
        lastSentAt = now
        capChanged = false
        packetsSent += 1
        return .receiverEstimatedMaxBitrate(RTCPReceiverEstimatedMaxBitrate(senderSSRC: senderSSRC, bitrate: cap, ssrcs: mediaSSRCs))
    }

    public var nextDeadline: Int64 {
        guard !capChanged, let lastSentAt else { return Int64.min }
        return lastSentAt + interval
    }
}
