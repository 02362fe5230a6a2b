/// One participant's decoded audio (planar float stereo, mix rate) indexed by absolute stage
/// sample position. Written by the decoder side, read once by the mixer. Bounded: it starts
/// at `initialCapacity` and grows (doubling, a handful of times at most) only while more is
/// held at once, never beyond `capacity`; what usually sits in it is well under a second.
public final class AudioRing {
    /// The most it ever holds.
    public let capacity: Int
    /// Samples the storage has room for now (≤ capacity).
    public private(set) var allocated: Int
    private var left: UnsafeMutablePointer<Float>
    private var right: UnsafeMutablePointer<Float>
    /// Positions [start, end) are held.
    public private(set) var start: Int64 = 0
    public private(set) var end: Int64 = 0
    public private(set) var overflowedSamples: Int64 = 0
    /// Samples of silence written into gaps before a later write (the source's timestamps
    /// jumped forward), less those a write then filled (a packet that came out of order).
    public private(set) var silenceFilledSamples: Int64 = 0
    /// Silences filled and not written over since, not yet mixed (the latest few: a write
    /// over an older one is not subtracted).
    private var silences: [Range<Int64>] = []
    private static let trackedSilences = 8

    public init(capacity: Int, initialCapacity: Int? = nil) {
        self.capacity = capacity
        silences.reserveCapacity(Self.trackedSilences + 1)
        allocated = max(1, min(capacity, initialCapacity ?? capacity))
        left = .allocate(capacity: allocated)
        right = .allocate(capacity: allocated)
        left.initialize(repeating: 0, count: allocated)
        right.initialize(repeating: 0, count: allocated)
    }

    deinit {
        left.deallocate()
        right.deallocate()
    }

    public var isEmpty: Bool { end <= start }

    /// Writes `count` samples at absolute `position`. A gap before `position` is filled with
    /// silence; an overlap with already-held samples overwrites them, or with `crossfade`
    /// blends from them into the new ones across the overlap (a step back in the source's
    /// timeline: the sound skips what the overlap held without a click). If the ring would
    /// hold more than `capacity`, the oldest samples are dropped (and counted). Up to
    /// `uncountedSilence` samples of a gap are silence put there on purpose (a delay the
    /// sound takes on), not sound missing: they are not counted in `silenceFilledSamples`.
    public func write(left source: UnsafePointer<Float>, right sourceRight: UnsafePointer<Float>, count: Int, at position: Int64,
                      crossfade: Bool = false, uncountedSilence: Int64 = 0) {
        guard count > 0 else { return }
        if isEmpty { start = position; end = position }
        reserve(through: max(end, position + Int64(count)))
        if position > end { writeSilence(from: end, to: position, uncounted: uncountedSilence) }
        var skip = 0
        var at = position
        if at < start { skip = Int(start - at); at = start }
        guard skip < count else { return }
        if !silences.isEmpty { fillSilences(with: at..<(at &+ Int64(count - skip))) }
        let blended = crossfade ? Int(clamping: max(0, min(end, at &+ Int64(count - skip)) &- at)) : 0
        for i in skip..<count {
            let index = slot(at + Int64(i - skip))
            if i - skip < blended {
                let weight = Float(i - skip + 1) / Float(blended + 1)
                left[index] += (source[i] - left[index]) * weight
                right[index] += (sourceRight[i] - right[index]) * weight
            } else {
                left[index] = source[i]
                right[index] = sourceRight[i]
            }
        }
        end = max(end, at + Int64(count - skip))
        trimToCapacity()
    }

    /// Grows the storage so that [start, newEnd) fits, up to `capacity`, keeping what is held.
    private func reserve(through newEnd: Int64) {
        let needed = newEnd - start
        guard needed > Int64(allocated), allocated < capacity else { return }
        let size = Int(min(Int64(capacity), max(needed, Int64(allocated) * 2)))
        let newLeft = UnsafeMutablePointer<Float>.allocate(capacity: size)
        let newRight = UnsafeMutablePointer<Float>.allocate(capacity: size)
        newLeft.initialize(repeating: 0, count: size)
        newRight.initialize(repeating: 0, count: size)
        var position = start
        while position < end {
            let from = slot(position)
            let to = Self.slot(position, size: size)
            newLeft[to] = left[from]
            newRight[to] = right[from]
            position += 1
        }
        left.deallocate()
        right.deallocate()
        left = newLeft
        right = newRight
        allocated = size
    }

    /// A write over `written` took the place of silence filled in before it (a packet that came
    /// out of order): that silence was not missing after all.
    private func fillSilences(with written: Range<Int64>) {
        var index = 0
        while index < silences.count {
            let silence = silences[index]
            let overlap = silence.clamped(to: written)
            guard !overlap.isEmpty else { index += 1; continue }
            silenceFilledSamples &-= overlap.upperBound &- overlap.lowerBound
            let before = silence.lowerBound..<overlap.lowerBound
            let after = overlap.upperBound..<silence.upperBound
            switch (before.isEmpty, after.isEmpty) {
            case (true, true): silences.remove(at: index)
            case (false, true): silences[index] = before; index += 1
            case (true, false): silences[index] = after; index += 1
            case (false, false):
                silences[index] = before
                silences.insert(after, at: index + 1)
                index += 2
            }
        }
        if silences.count > Self.trackedSilences { silences.removeFirst(silences.count - Self.trackedSilences) }
    }

    private func writeSilence(from: Int64, to: Int64, uncounted: Int64) {
        let counted = (from &+ min(max(0, uncounted), to &- from))..<to
        silenceFilledSamples &+= counted.upperBound &- counted.lowerBound
        // Silences already mixed stay counted: nothing can fill them any more.
        silences.removeAll { $0.upperBound <= start }
        if !counted.isEmpty {
            if silences.count == Self.trackedSilences { silences.removeFirst() }
            silences.append(counted)
        }
        var position = max(from, to - Int64(allocated))
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
        if held > Int64(allocated) {
            overflowedSamples += held - Int64(allocated)
            start = end - Int64(allocated)
        }
    }

    /// Adds samples [from, from+count) × gain into the output buffers (silence where not held),
    /// then forgets everything before from+count.
    /// With `endGain`, the gain goes from `gain` to it in a straight line over the `count`
    /// samples (a change of gain without a click); it is `endGain` on the last sample.
    /// Returns the energy added (the sum of the squares of both channels' added samples).
    @discardableResult
    public func mix(from: Int64, count: Int, gain: Float, endGain: Float? = nil,
                    intoLeft outLeft: UnsafeMutablePointer<Float>, right outRight: UnsafeMutablePointer<Float>) -> Float {
        let to = from + Int64(count)
        let first = max(from, start)
        let last = min(to, end)
        var energy: Float = 0
        if let endGain, endGain != gain, first < last {
            let step = (endGain - gain) / Float(count)
            for position in first..<last {
                let index = slot(position)
                let out = Int(position - from)
                let g = gain + step * Float(out + 1)
                let l = left[index] * g, r = right[index] * g
                outLeft[out] += l
                outRight[out] += r
                energy += l * l + r * r
            }
        } else if gain != 0, first < last {
            for position in first..<last {
                let index = slot(position)
                let out = Int(position - from)
                let l = left[index] * gain, r = right[index] * gain
                outLeft[out] += l
                outRight[out] += r
                energy += l * l + r * r
            }
        }
        discard(before: to)
        return energy
    }

    /// How many of the positions [from, to) are held.
    public func heldCount(from: Int64, to: Int64) -> Int {
        Int(clamping: max(0, min(to, end) &- max(from, start)))
    }

    /// Forgets samples before `position`.
    public func discard(before position: Int64) {
        if position >= end { start = max(start, position); end = max(end, start); return }
        if position > start { start = position }
    }

    private func slot(_ position: Int64) -> Int { Self.slot(position, size: allocated) }

    private static func slot(_ position: Int64, size: Int) -> Int {
        let m = Int(position % Int64(size))
        return m < 0 ? m + size : m
    }
}
