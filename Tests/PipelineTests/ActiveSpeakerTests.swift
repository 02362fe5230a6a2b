// The active speaker, from per-frame levels: generated talks (turns of 2–4 s with 200 ms
// blips from the others between them) at 30 fps. The speaker follows each turn within the
// hold plus 100 ms, never takes a blip, never switches twice within the hold.
import Foundation
import Pipeline
import Testing
import TestSupport

@Suite struct ActiveSpeakerTests {
    static let frame: Int64 = 33_333

    /// Who talks when (µs): turns of distinct speakers back to back, and blips inside them.
    struct Talk {
        var turns: [(speaker: String, from: Int64, to: Int64)] = []
        var blips: [(speaker: String, from: Int64, to: Int64)] = []

        func levels(at time: Int64, people: [String]) -> [ParticipantLevel] {
            people.map { id in
                let loud = turns.contains { $0.speaker == id && $0.from <= time && time < $0.to }
                    || blips.contains { $0.speaker == id && $0.from <= time && time < $0.to }
                return ParticipantLevel(participantId: id, dbfs: loud ? -18 : -.infinity)
            }
        }
    }

    static func talk(seed: UInt64) -> Talk {
        var random = SeededGenerator(seed: seed)
        let people = ["p0", "p1", "p2"]
        var talk = Talk()
        var time: Int64 = 500_000
        var last = ""
        for _ in 0..<8 {
            let speaker = people.filter { $0 != last }.randomElement(using: &random)!
            let length = Int64.random(in: 2_000_000...4_000_000, using: &random)
            talk.turns.append((speaker, time, time + length))
            // A blip from someone else inside the turn, apart from their own turns by more than
            // a pause between words (else it is their speech going on).
            let blipper = people.filter { $0 != speaker }.randomElement(using: &random)!
            let at = time + Int64.random(in: 600_000...(length - 700_000), using: &random)
            talk.blips.append((blipper, at, at + 200_000))
            time += length
            last = speaker
        }
        return talk
    }

    @Test("generated talks: each turn is followed within hold + 100 ms, no blip is, no two switches within the hold",
          arguments: 0..<50)
    func followsTurns(seed: UInt64) {
        let talk = Self.talk(seed: 31_000 + seed)
        var detector = ActiveSpeakerDetector(holdMicroseconds: 1_500_000, minSpeechMicroseconds: 300_000)
        var switches: [(Int64, String)] = []
        var time: Int64 = 0
        let end = talk.turns.last!.to
        var speakerAt: [(Int64, String?)] = []
        while time < end {
            if detector.update(at: time, levels: talk.levels(at: time, people: ["p0", "p1", "p2"])) {
                switches.append((time, detector.speaker!))
            }
            speakerAt.append((time, detector.speaker))
            time += Self.frame
        }
        for turn in talk.turns {
            let due = turn.from + 1_500_000 + 100_000
            let followed = speakerAt.first { $0.0 >= turn.from && $0.1 == turn.speaker }?.0
            #expect(followed.map { $0 <= min(due, turn.to) } ?? false,
                    "seed \(seed): \(turn.speaker) from \(turn.from) µs followed at \(String(describing: followed))")
        }
        for (at, speaker) in switches {
            let inTurn = talk.turns.contains { $0.speaker == speaker && $0.from <= at && at < $0.to + Self.frame }
            #expect(inTurn, "seed \(seed): switched to \(speaker) at \(at) µs, outside their turns (a blip?)")
        }
        for (a, b) in zip(switches, switches.dropFirst()) {
            #expect(b.0 - a.0 >= 1_500_000, "seed \(seed): switches at \(a.0) and \(b.0) µs, within the hold")
        }
    }

    @Test func aSpeakerStaysThroughSilenceAndGoesWhenTheyLeave() {
        var detector = ActiveSpeakerDetector(holdMicroseconds: 1_000_000, minSpeechMicroseconds: 300_000)
        var time: Int64 = 0
        func step(_ levels: [(String, Float)]) -> Bool {
            defer { time += Self.frame }
            return detector.update(at: time, levels: levels.map { ParticipantLevel(participantId: $0.0, dbfs: $0.1) })
        }
        for _ in 0..<12 { _ = step([("a", -20), ("b", -.infinity)]) }
        #expect(detector.speaker == "a")
        for _ in 0..<100 { _ = step([("a", -.infinity), ("b", -.infinity)]) }
        #expect(detector.speaker == "a", "silence keeps the last speaker")
        // Quieter than the threshold is not speech.
        for _ in 0..<100 { _ = step([("a", -.infinity), ("b", -60)]) }
        #expect(detector.speaker == "a")
        _ = step([("b", -.infinity)])
        #expect(detector.speaker == nil, "a speaker who left is no speaker")
        // Word gaps shorter than the grace do not restart speech: 4 × (200 ms on, 150 ms off).
        var switched = false
        for _ in 0..<4 {
            for _ in 0..<6 { switched = step([("b", -20)]) || switched }
            for _ in 0..<4 { switched = step([("b", -.infinity)]) || switched }
        }
        #expect(switched && detector.speaker == "b")
    }

    @Test func extremeTimesAndLevelsDoNotTrap() {
        var detector = ActiveSpeakerDetector(holdMicroseconds: .max, minSpeechMicroseconds: .max, thresholdDbfs: .nan)
        _ = detector.update(at: .min, levels: [ParticipantLevel(participantId: "a", dbfs: .nan)])
        _ = detector.update(at: .max, levels: [ParticipantLevel(participantId: "a", dbfs: .infinity)])
        var other = ActiveSpeakerDetector(holdMicroseconds: -5, minSpeechMicroseconds: -5, graceMicroseconds: .max)
        _ = other.update(at: .max, levels: [ParticipantLevel(participantId: "a", dbfs: 0)])
        _ = other.update(at: .min, levels: [ParticipantLevel(participantId: "a", dbfs: 0)])
        #expect(other.speaker == "a")
    }
}
