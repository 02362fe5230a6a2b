// The audio mixer: every publishing, unmuted participant's audio summed at 48 kHz stereo,
// through a limiter, cut into the encoder's frames. Integer sample positions throughout:
// tick n covers samples [n·rate/fps, (n+1)·rate/fps), so fractional frame durations never drift.

import Foundation
public import FFmpeg
public import MediaCore

public final class AudioMixer {
    public let sampleRate: Int
    private let frameRate: Rational
    private let encoderFrame: Frame
    private let frameSize: Int
    private let mixLeft: UnsafeMutablePointer<Float>
    private let mixRight: UnsafeMutablePointer<Float>
    private let mixCapacity: Int
    // Pending mixed samples not yet handed to the encoder (< frameSize + one tick).
    private let fifoLeft: UnsafeMutablePointer<Float>
    private let fifoRight: UnsafeMutablePointer<Float>
    private let fifoCapacity: Int
    private var fifoCount = 0
    /// Samples handed to the encoder so far (the next audio frame's pts).
    public private(set) var encodedSamples: Int64 = 0
    private var limiter = Limiter()
    /// Peak level of the last mixed tick (0...1), for metrics.
    public private(set) var lastPeak: Float = 0
    /// The participants whose audio the last tick mixed in (published and not muted), in
    /// stage order: the voices heard, next to the tiles shown.
    public private(set) var audibleParticipants: [String] = []
    /// The producer's gain and mute per participant (UpdateComposition), and the gain each
    /// participant's voice had at the end of the last tick: a change ramps over one tick.
    public private(set) var settings: [String: ParticipantAudio] = [:]
    /// Each participant's level in the last tick (what it added to the mix, after its gain),
    /// in stage order: the active speaker is found from these.
    public private(set) var levels: [ParticipantLevel] = []
    private var gains: [String: Float] = [:]
    /// At most this many participants' settings are kept; past it, those of participants not
    /// on the stage are forgotten first.
    public static let settingsLimit = 256
    // The viewers' copy of the mix (WHEP's Opus), queued only while `tapEnabled`, drained in
    // frames of the tap encoder's size; a backlog over its capacity is dropped, not grown.
    private let tapLeft: UnsafeMutablePointer<Float>
    private let tapRight: UnsafeMutablePointer<Float>
    private let tapCapacity: Int
    private var tapCount = 0
    /// The sample position of the tap's next frame (its pts), on the mix's own sample clock.
    public private(set) var tapPosition: Int64 = 0
    /// Queue the mix for the viewers too. Turned on, it starts with the next tick mixed.
    public var tapEnabled = false {
        didSet { if tapEnabled != oldValue { tapCount = 0 } }
    }

    public init(sampleRate: Int, frameRate: Rational, encoderFrame: Frame, frameSize: Int) {
        self.sampleRate = sampleRate
        self.frameRate = frameRate
        self.encoderFrame = encoderFrame
        self.frameSize = frameSize
        mixCapacity = sampleRate // one second: far more than one tick
        mixLeft = .allocate(capacity: mixCapacity)
        mixRight = .allocate(capacity: mixCapacity)
        fifoCapacity = frameSize + mixCapacity
        fifoLeft = .allocate(capacity: fifoCapacity)
        fifoRight = .allocate(capacity: fifoCapacity)
        tapCapacity = mixCapacity + 4_800
        tapLeft = .allocate(capacity: tapCapacity)
        tapRight = .allocate(capacity: tapCapacity)
    }

    deinit {
        mixLeft.deallocate()
        mixRight.deallocate()
        fifoLeft.deallocate()
        fifoRight.deallocate()
        tapLeft.deallocate()
        tapRight.deallocate()
    }

    /// Merges a producer's settings over those in force; they apply from the next tick.
    public func setAudio(_ changes: [String: ParticipantAudio], onStage: Set<String> = []) {
        settings.merge(changes) { _, new in new }
        if settings.count > Self.settingsLimit {
            settings = settings.filter { changes[$0.key] != nil || onStage.contains($0.key) }
        }
    }

    /// First sample position of output frame `tick`.
    public func samplePosition(ofTick tick: Int64) -> Int64 {
        Rational(frameRate.denominator, frameRate.numerator).rescaleDown(tick, to: Rational(1, Int64(sampleRate)))
    }

    /// Mixes the samples of output frame `tick` into the queue for the encoder.
    public func mix(tick: Int64, participants: [StageParticipantState], source: any StageSource) {
        let from = samplePosition(ofTick: tick)
        let to = samplePosition(ofTick: tick + 1)
        let count = Int(to - from)
        mixLeft.update(repeating: 0, count: count)
        mixRight.update(repeating: 0, count: count)
        audibleParticipants.removeAll(keepingCapacity: true)
        levels.removeAll(keepingCapacity: true)
        for state in participants {
            guard let subscriber = source.subscriber(for: state.participantId) else { continue }
            subscriber.advanceAudio(to: to)
            let audible = state.isPublished && !state.isAudioMuted
            if audible {
                audibleParticipants.append(state.participantId)
                subscriber.noteAudioRead(from: from, count: count)
            }
            guard audible else {
                // Not heard: no ramp (a mute from the publisher is theirs to shape).
                if gains[state.participantId] != nil { gains[state.participantId] = nil }
                subscriber.audio.mix(from: from, count: count, gain: 0, intoLeft: mixLeft, right: mixRight)
                levels.append(ParticipantLevel(participantId: state.participantId, dbfs: -.infinity))
                continue
            }
            // A voice that was heard last tick ramps from its gain then; a new one starts at its own.
            let target = settings.isEmpty ? 1 : settings[state.participantId]?.effectiveGain ?? 1
            let previous = gains[state.participantId] ?? target
            gains[state.participantId] = target
            let energy = subscriber.audio.mix(from: from, count: count, gain: previous, endGain: target, intoLeft: mixLeft, right: mixRight)
            levels.append(ParticipantLevel(participantId: state.participantId,
                                           dbfs: energy > 0 ? 10 * log10(energy / Float(2 * count)) : -.infinity))
        }
        if gains.count > Self.settingsLimit { gains = gains.filter { id, _ in participants.contains { $0.participantId == id } } }
        lastPeak = limiter.process(left: mixLeft, right: mixRight, count: count)
        // The caller drains a frame after each tick; a mix left undrained must stop here, not
        // write past the queue.
        precondition(fifoCount + count <= fifoCapacity, "AudioMixer: mix called \(fifoCount) samples ahead of the encoder")
        (fifoLeft + fifoCount).update(from: mixLeft, count: count)
        (fifoRight + fifoCount).update(from: mixRight, count: count)
        fifoCount += count
        if tapEnabled {
            if tapCount == 0 || tapCount + count > tapCapacity {
                // Starting (or a backlog no one drained): from this tick on.
                tapCount = 0
                tapPosition = from
            }
            (tapLeft + tapCount).update(from: mixLeft, count: count)
            (tapRight + tapCount).update(from: mixRight, count: count)
            tapCount += count
        }
    }

    /// The tap's next `frame.nb_samples`-long frame (packed stereo float, for the viewers'
    /// encoder), stamped with its sample position; nil until that much is queued.
    public func nextTapFrame(into frame: Frame, size: Int, encoder: Encoder) throws(FFmpegError) -> Frame? {
        guard tapEnabled, size > 0, tapCount >= size else { return nil }
        try encoder.prepareForWriting(frame)
        frame.writeFloatInterleaved(left: tapLeft, right: tapRight, count: size, pts: tapPosition)
        tapPosition += Int64(size)
        tapCount = Self.dropFront(size, of: tapCount, left: tapLeft, right: tapRight)
        return frame
    }

    /// Removes the first `count` of a stereo queue's `queued` samples; returns what is left.
    private static func dropFront(_ count: Int, of queued: Int, left: UnsafeMutablePointer<Float>,
                                  right: UnsafeMutablePointer<Float>) -> Int {
        let remaining = queued - count
        if remaining > 0 {
            left.update(from: left + count, count: remaining)
            right.update(from: right + count, count: remaining)
        }
        return remaining
    }

    /// Fills the encoder frame with the next `frameSize` samples if that many are queued (or,
    /// when `flush`, whatever remains). Returns the frame, or nil when not enough is queued.
    public func nextEncoderFrame(flush: Bool = false, encoder: Encoder) throws(FFmpegError) -> Frame? {
        let available = min(fifoCount, frameSize)
        guard available == frameSize || (flush && available > 0) else { return nil }
        try encoder.prepareForWriting(encoderFrame)
        encoderFrame.writeFloatPlanar(left: fifoLeft, right: fifoRight, count: available, pts: encodedSamples)
        encodedSamples += Int64(available)
        fifoCount = Self.dropFront(available, of: fifoCount, left: fifoLeft, right: fifoRight)
        return encoderFrame
    }
}

/// A peak limiter: instant attack, smooth release, never lets |sample| exceed `ceiling`.
struct Limiter {
    var gain: Float = 1
    let ceiling: Float = 0.98
    /// Per-sample release toward unity gain (about 50 ms at 48 kHz).
    let release: Float = 0.0004

    /// Limits in place; returns the input peak.
    mutating func process(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, count: Int) -> Float {
        var peak: Float = 0
        for i in 0..<count {
            let level = max(abs(left[i]), abs(right[i]))
            peak = max(peak, level)
            if level * gain > ceiling { gain = ceiling / level }
            left[i] *= gain
            right[i] *= gain
            if gain < 1 { gain = min(1, gain + release) }
        }
        return peak
    }
}
