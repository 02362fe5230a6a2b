// 32-bit RTP timestamps to Int64. Each timestamp is taken as the nearest value to the last
// one (a signed 32-bit difference), so wrap-around at 2^32 and reordering both unwrap right.

public struct TimestampUnwrapper: Sendable, Equatable {
    private var last: Int64?

    public init() {}

    /// The most recent unwrapped value.
    public var lastUnwrapped: Int64? { last }

    /// Unwraps `timestamp` and remembers it as the new reference.
    public mutating func unwrap(_ timestamp: UInt32) -> Int64 {
        let value = peek(timestamp)
        last = value
        return value
    }

    /// Unwraps without moving the reference (for late packets and RTCP SR timestamps).
    public func peek(_ timestamp: UInt32) -> Int64 {
        guard let last else { return Int64(timestamp) }
        let delta = Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: last))
        // Steps of up to 2^31 are time (RFC 3550); billions of them from a hostile sender
        // wrap the running value around instead of trapping (SenderClock re-anchors on jumps).
        return last &+ Int64(delta)
    }
}
