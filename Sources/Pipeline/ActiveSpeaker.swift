// Who is speaking, from the mix's per-participant levels, once per output frame: pure, with
// explicit time. A participant is sounding at or above the threshold; its speech runs from
// when it started sounding to when it last sounded, across pauses shorter than a grace (the
// gaps between words). The loudest one whose speech has lasted `minSpeech` takes over, no
// sooner than `hold` after the last switch; a blip shorter than `minSpeech` never does, and
// the speaker stays while nobody else speaks.

public struct ActiveSpeakerDetector: Sendable {
    public let hold: Int64
    public let minSpeech: Int64
    public let threshold: Float
    /// Pauses shorter than this (µs) do not end a participant's speech.
    public let grace: Int64
    public private(set) var speaker: String?
    private var lastSwitch: Int64?
    /// Per participant: when its speech started and when it last sounded (µs).
    private var speech: [String: (since: Int64, last: Int64)] = [:]

    public init(holdMicroseconds: Int64, minSpeechMicroseconds: Int64, thresholdDbfs: Float = -45, graceMicroseconds: Int64 = 250_000) {
        hold = max(0, holdMicroseconds)
        minSpeech = max(0, minSpeechMicroseconds)
        threshold = thresholdDbfs
        grace = max(0, graceMicroseconds)
        speech.reserveCapacity(16)
    }

    /// One frame's levels (dBFS; -infinity for silence) at `time` (µs). True when the
    /// speaker changed.
    public mutating func update(at time: Int64, levels: [ParticipantLevel]) -> Bool {
        for level in levels {
            guard level.dbfs >= threshold else { continue }
            if let current = speech[level.participantId], time &- current.last <= grace {
                speech[level.participantId] = (current.since, time)
            } else {
                speech[level.participantId] = (time, time)
            }
        }
        if speech.count > levels.count {
            // Those gone from the stage are forgotten (and a speaker gone is no speaker).
            for id in speech.keys where !levels.contains(where: { $0.participantId == id }) { speech[id] = nil }
        }
        if let speaker, !levels.contains(where: { $0.participantId == speaker }) {
            self.speaker = nil
            lastSwitch = nil
        }
        var candidate: ParticipantLevel?
        for level in levels where level.dbfs >= threshold {
            guard let span = speech[level.participantId], span.last == time, span.last &- span.since >= minSpeech else { continue }
            if candidate.map({ level.dbfs > $0.dbfs }) ?? true { candidate = level }
        }
        guard let candidate, candidate.participantId != speaker else { return false }
        if let lastSwitch, time &- lastSwitch < hold { return false }
        speaker = candidate.participantId
        lastSwitch = time
        return true
    }
}

/// One participant's level in one output frame of the mix.
public struct ParticipantLevel: Sendable, Equatable {
    public var participantId: String
    /// RMS of what the participant adds to the mix over the frame, dBFS (-infinity: silence).
    public var dbfs: Float

    public init(participantId: String, dbfs: Float) {
        self.participantId = participantId
        self.dbfs = dbfs
    }
}
