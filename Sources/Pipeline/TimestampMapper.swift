/// Maps a source's timestamps (microseconds) onto the stage clock, surviving timestamp jumps:
/// a jump backwards, or forwards by more than `maxForwardGap`, is treated as a discontinuity
/// and the source continues right after its previous timestamp. Pure.
public struct TimestampMapper: Sendable {
    /// Stage time = source time + offset.
    public private(set) var offset: Int64
    private var last: Int64?
    public let maxForwardGap: Int64
    public private(set) var discontinuities = 0

    public init(offset: Int64, maxForwardGap: Int64 = 10_000_000) {
        self.offset = offset
        self.maxForwardGap = maxForwardGap
    }

    /// Stage time for a source timestamp; `nominalStep` is the expected distance to the
    /// previous one (a frame or an audio packet duration) used after a discontinuity.
    public mutating func map(_ sourceMicroseconds: Int64, nominalStep: Int64) -> Int64 {
        var stage = sourceMicroseconds + offset
        if let last {
            if stage < last - 500_000 || stage > last + maxForwardGap {
                offset = last + nominalStep - sourceMicroseconds
                stage = last + nominalStep
                discontinuities += 1
            }
        }
        last = max(last ?? stage, stage)
        return stage
    }
}
