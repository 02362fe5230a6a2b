// The abs-capture-time header extension (http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time):
// when the first sample of a packet was captured, as a 64-bit NTP timestamp of the capture
// system's clock, optionally followed by the estimated offset (signed Q32.32 seconds) from that
// clock to the sender's, which a mixer or relay between them fills in; from the original
// sender it is absent or zero. Senders put it on some packets only (libwebrtc: the first, then
// once a second or when interpolating from the last one would be off by more than a millisecond).

public struct AbsoluteCaptureTime: Sendable, Equatable {
    /// NTP time of the capture system.
    public var captureTimestamp: UInt64
    /// Capture clock to sender clock, Q32.32 seconds.
    public var estimatedCaptureClockOffset: Int64?

    public init(captureTimestamp: UInt64, estimatedCaptureClockOffset: Int64? = nil) {
        self.captureTimestamp = captureTimestamp
        self.estimatedCaptureClockOffset = estimatedCaptureClockOffset
    }

    /// The element's data: 8 bytes, or 16 with the offset; anything else is not this extension.
    public init?(data: [UInt8]) {
        guard data.count == 8 || data.count == 16 else { return nil }
        func word(at index: Int) -> UInt64 { data[index..<(index + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        captureTimestamp = word(at: 0)
        estimatedCaptureClockOffset = data.count == 16 ? Int64(bitPattern: word(at: 8)) : nil
    }

    /// The capture instant on the sender's NTP clock, the clock its sender reports use.
    public var senderNTPTime: UInt64 {
        captureTimestamp &+ UInt64(bitPattern: estimatedCaptureClockOffset ?? 0)
    }

    public var serialized: [UInt8] {
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: captureTimestamp >> (56 - 8 * $0)) }
        if let offset = estimatedCaptureClockOffset {
            let bits = UInt64(bitPattern: offset)
            bytes += (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) }
        }
        return bytes
    }
}
