// Seeded property checks with shrinking, in the manner of Hypothesis's stateful tests: a
// generator makes a sequence from a seed, the property is run on it, and a failing sequence
// is shrunk (chunks of it removed while it still fails) to a minimal one, which is reported
// with its seed so `STAGE_SEQUENCE_SEED=<seed>` replays it alone. (SeededGenerator: Bytes.swift.)

import Foundation

public struct PropertyFailure: Error, CustomStringConvertible {
    public var seed: UInt64
    public var original: Int
    public var shrunk: [String]
    public var message: String

    public var description: String {
        "property failed for seed \(seed) (replay: STAGE_SEQUENCE_SEED=\(seed)); shrunk from \(original) to \(shrunk.count) steps:\n  "
            + shrunk.joined(separator: "\n  ") + "\n" + message
    }
}

public enum PropertyCheck {
    /// The seeds a run checks: `count` seeds from `base` on, or only the one in the
    /// `STAGE_SEQUENCE_SEED` environment variable (to replay a reported failure).
    public static func seeds(count: Int, base: UInt64) -> [UInt64] {
        if let text = ProcessInfo.processInfo.environment["STAGE_SEQUENCE_SEED"], let seed = UInt64(text) { return [seed] }
        return (0..<UInt64(count)).map { base &+ $0 }
    }

    /// Runs `property` on the sequence generated from each seed. The first failure (a
    /// message) is shrunk: runs of steps are removed, longest first, while it still fails.
    /// Returns nil when every seed passed.
    public static func check<Step: CustomStringConvertible>(
        seeds: [UInt64], generate: (inout SeededGenerator) -> [Step], property: ([Step]) -> String?
    ) -> PropertyFailure? {
        for seed in seeds {
            var generator = SeededGenerator(seed: seed)
            let steps = generate(&generator)
            guard let message = property(steps) else { continue }
            let (minimal, finalMessage) = shrink(steps, message: message, property: property)
            return PropertyFailure(seed: seed, original: steps.count, shrunk: minimal.map { $0.description }, message: finalMessage)
        }
        return nil
    }

    /// Delta debugging over the steps: remove chunks of halving size while the property
    /// still fails; interpreters ignore steps that no longer apply, so any subsequence runs.
    static func shrink<Step>(_ steps: [Step], message: String, property: ([Step]) -> String?) -> ([Step], String) {
        var current = steps
        var currentMessage = message
        var chunk = max(current.count / 2, 1)
        var attempts = 0
        while chunk >= 1, attempts < 2_000 {
            var removedAny = false
            var start = 0
            while start < current.count, attempts < 2_000 {
                var candidate = current
                candidate.removeSubrange(start..<min(start + chunk, candidate.count))
                attempts += 1
                if let failure = property(candidate) {
                    current = candidate
                    currentMessage = failure
                    removedAny = true
                } else {
                    start += chunk
                }
            }
            if !removedAny { chunk /= 2 }
        }
        return (current, currentMessage)
    }
}
