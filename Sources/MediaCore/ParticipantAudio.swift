// A producer's setting for one participant's voice in a composition's mix (UpdateComposition
// and StartComposition's `audio` extension field): the API shape and what the mixer applies.

/// Gain and mute of one participant in a composition's mix. Absent fields keep their
/// defaults: gain 1 (as published), not muted.
public struct ParticipantAudio: Codable, Hashable, Sendable {
    /// Linear gain, 0...2 (0.5 is -6 dB).
    public var gain: Double?
    public var muted: Bool?

    public static let gainRange: ClosedRange<Double> = 0...2

    public init(gain: Double? = nil, muted: Bool? = nil) {
        self.gain = gain
        self.muted = muted
    }

    /// Why `gain` is out of range (not a number, or outside 0...2), or nil.
    public var gainProblem: String? {
        guard let gain, !(gain.isFinite && Self.gainRange.contains(gain)) else { return nil }
        return "must be between 0 and 2 (got \(gain))"
    }

    /// The factor the mixer applies (0 when muted).
    public var effectiveGain: Float {
        muted == true ? 0 : Float(min(Self.gainRange.upperBound, max(Self.gainRange.lowerBound, gain ?? 1)))
    }
}
