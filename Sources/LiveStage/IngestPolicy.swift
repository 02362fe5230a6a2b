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
        let second = now / 1_000_000
        if let current = currentSecond {
            if second > current {
                for step in 1...min(Int(second - current), seconds) {
                    buckets[Int((current + Int64(step)) % Int64(seconds))] = 0
                }
            }
        } else {
            startSecond = second
        }
        currentSecond = max(currentSecond ?? second, second)
        buckets[Int(second % Int64(seconds))] += Int64(bytes)
        guard let startSecond, second - startSecond >= Int64(seconds) else { return nil }
        return buckets.reduce(0, +) * 8 / Int64(seconds)
    }

    private var startSecond: Int64?
}
