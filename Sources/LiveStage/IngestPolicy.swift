// What RTMP and WHIP ingest both measure publishers with: the stage clock's "now" and a
// sliding bitrate window. Here, beside the admission contract, so neither ingest module
// imports the other.

/// "Now" for rate measurements, from the daemon's stage clock.
public protocol MediaClockReading: Sendable {
    func nowMicroseconds() -> Int64
}

/// Bytes received per second over a sliding window of whole seconds, to hold publishers to
/// the maximum bitrate without punishing a single large keyframe.
public struct BitrateWindow: Sendable {
    public let seconds: Int
    private var buckets: [Int64]
    private var currentSecond: Int64?

    public init(seconds: Int = 5) {
        self.seconds = seconds
        buckets = Array(repeating: 0, count: seconds)
    }

    /// Adds `bytes` at `now` (µs); returns the average bitrate (bits/s) over the window once
    /// a whole window has been seen, else nil.
    public mutating func add(_ bytes: Int, now: Int64) -> Int64? {
        // `now` is the local clock's, but nothing here traps whatever it is: slots are taken
        // modulo the window (never negative), sums wrap instead of trapping.
        let second = now / 1_000_000
        if let current = currentSecond {
            if second > current {
                let (gap, overflow) = second.subtractingReportingOverflow(current)
                for step in 1...(overflow ? seconds : Int(min(gap, Int64(seconds)))) {
                    buckets[slot(current &+ Int64(step))] = 0
                }
            }
        } else {
            startSecond = second
        }
        currentSecond = max(currentSecond ?? second, second)
        buckets[slot(second)] &+= Int64(bytes)
        guard let startSecond, second.subtractingReportingOverflow(startSecond).partialValue >= Int64(seconds) else { return nil }
        return buckets.reduce(0, &+) &* 8 / Int64(seconds)
    }

    private var startSecond: Int64?

    private func slot(_ second: Int64) -> Int {
        let window = Int64(seconds)
        return Int((second % window + window) % window)
    }
}
