/// One participant's decoded audio (planar float stereo, mix rate) indexed by absolute stage
/// sample position. Written by the decoder side, read once by the mixer. Fixed capacity:
/// allocated once, never grows.
public final class AudioRing {
    public let capacity: Int
    private let left: UnsafeMutablePointer<Float>
    private let right: UnsafeMutablePointer<Float>
    /// Positions [start, end) are held.
    public private(set) var start: Int64 = 0
    public private(set) var end: Int64 = 0
    public private(set) var overflowedSamples: Int64 = 0

    public init(capacity: Int) {
        self.capacity = capacity
        left = .allocate(capacity: capacity)
        right = .allocate(capacity: capacity)
        left.initialize(repeating: 0, count: capacity)
        right.initialize(repeating: 0, count: capacity)
    }

    deinit {
        left.deallocate()
        right.deallocate()
    }

    public var isEmpty: Bool { end <= start }

    /// Writes `count` samples at absolute `position`. A gap before `position` is filled with
    /// silence; an overlap with already-held samples overwrites them. If the ring would hold
    /// more than `capacity`, the oldest samples are dropped (and counted).
    public func write(left source: UnsafePointer<Float>, right sourceRight: UnsafePointer<Float>, count: Int, at position: Int64) {
        guard count > 0 else { return }
        if isEmpty { start = position; end = position }
        if position > end { writeSilence(from: end, to: position) }
        var skip = 0
        var at = position
        if at < start { skip = Int(start - at); at = start }
        guard skip < count else { return }
        for i in skip..<count {
            let index = slot(at + Int64(i - skip))
            left[index] = source[i]
            right[index] = sourceRight[i]
        }
        end = max(end, at + Int64(count - skip))
        trimToCapacity()
    }

    private func writeSilence(from: Int64, to: Int64) {
        var position = max(from, to - Int64(capacity))
        while position < to {
            let index = slot(position)
            left[index] = 0
            right[index] = 0
            position += 1
        }
        end = to
        trimToCapacity()
    }

    private func trimToCapacity() {
        let held = end - start
        if held > Int64(capacity) {
            overflowedSamples += held - Int64(capacity)
            start = end - Int64(capacity)
        }
    }

    /// Adds samples [from, from+count) × gain into the output buffers (silence where not held),
    /// then forgets everything before from+count.
    public func mix(from: Int64, count: Int, gain: Float, intoLeft outLeft: UnsafeMutablePointer<Float>, right outRight: UnsafeMutablePointer<Float>) {
        let to = from + Int64(count)
        let first = max(from, start)
        let last = min(to, end)
        if gain != 0, first < last {
            for position in first..<last {
                let index = slot(position)
                let out = Int(position - from)
                outLeft[out] += left[index] * gain
                outRight[out] += right[index] * gain
            }
        }
        discard(before: to)
    }

    /// Forgets samples before `position`.
    public func discard(before position: Int64) {
        if position >= end { start = max(start, position); end = max(end, start); return }
        if position > start { start = position }
    }

    private func slot(_ position: Int64) -> Int {
        let m = Int(position % Int64(capacity))
        return m < 0 ? m + capacity : m
    }
}
