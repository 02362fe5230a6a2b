// One output tick of a stage: who is on it is asked once, and that one list drives both the
// picture (VideoCompositor: tiles) and the mix (AudioMixer: voices), so a tile and its voice
// can never disagree. CompositionSession encodes what it renders; the stage-sequence property
// tests render ticks without encoders and compare the tiles and the mix with a model.

public import Layout
public import MediaCore

public final class StageRenderer {
    public let source: any StageSource
    public let compositor: VideoCompositor
    public let mixer: AudioMixer
    private let frameDuration: Rational
    /// Follows the dominant speaker when the layout features one.
    public private(set) var speakers: ActiveSpeakerDetector?
    private var speakerSettings: ActiveSpeakerSettings?
    /// Set by a tick whose mix changed the active speaker (its stage time, µs); the caller
    /// clears it once it has told.
    public var speakerSwitchedAt: Int64?
    /// The source's own directions (a recorded stage's), each applied from the first tick at
    /// or after its time; those the last render applied, for the caller to tell.
    private let scheduled: [ScheduledDirection]
    private var nextScheduled = 0
    public private(set) var appliedDirections: [CompositionDirection] = []
    /// The stage time of the last tick rendered (µs): a change fades from there.
    private var lastStageTime: Int64 = 0

    public init(source: any StageSource, compositor: VideoCompositor, mixer: AudioMixer, frameRate: Rational) {
        self.source = source
        scheduled = source.scheduledDirections
        self.compositor = compositor
        self.mixer = mixer
        frameDuration = frameRate.inverted
    }

    /// Follows the active speaker with these settings (nil: no longer).
    public func followSpeakers(_ settings: ActiveSpeakerSettings?) {
        speakerSettings = settings
        guard let settings else {
            speakers = nil
            compositor.activeSpeaker = nil
            return
        }
        speakers = ActiveSpeakerDetector(holdMicroseconds: Int64(settings.holdMs) * 1000,
                                         minSpeechMicroseconds: Int64(settings.minSpeechMs) * 1000,
                                         thresholdDbfs: Float(settings.thresholdDbfs))
        compositor.activeSpeaker = nil
    }

    /// Applies a producer's change from the next rendered tick on.
    public func direct(_ change: CompositionDirection) {
        if let layout = change.layout {
            compositor.setLayout(layout.makeEngine(), transition: Int64(change.transitionMs) * 1000)
            compositor.stageChangeTransition = Int64(layout.transitionMs ?? 0) * 1000
            if layout.activeSpeaker != speakerSettings { followSpeakers(layout.activeSpeaker) }
        }
        if !change.audio.isEmpty { mixer.setAudio(change.audio, onStage: Set(mixer.audibleParticipants)) }
        if let overlays = change.overlays {
            if overlays.configuration.isEmpty {
                compositor.overlays = nil
            } else {
                let painter = compositor.overlays ?? OverlayPainter(canvasSize: compositor.canvasSize, defaultFont: overlays.defaultFont)
                painter.set(overlays, at: lastStageTime)
                // Set again: the background may have changed, so the next frame is drawn whole.
                compositor.overlays = painter
            }
        }
        if !change.audio.isEmpty || change.overlays != nil {
            // Labels badge whom the producer muted in the mix too.
            compositor.overlays?.mutedInMix = Set(mixer.settings.filter { $0.value.muted == true }.keys)
        }
    }

    /// Brings the stage to output frame `tick`: the participants at its time, their pictures
    /// drawn into the canvas (or, when `repeatPicture`, only brought to the tick: the clock is
    /// behind and the previous picture is shown again), their audio mixed. Returns the list both used.
    @discardableResult
    public func render(tick: Int64, repeatPicture: Bool = false) -> [StageParticipantState] {
        let stageTime = MediaTime(ticks: tick, timeBase: frameDuration)
        let stageMicro = stageTime.microsecondsValue
        lastStageTime = stageMicro
        appliedDirections.removeAll(keepingCapacity: true)
        while nextScheduled < scheduled.count, scheduled[nextScheduled].atMicroseconds <= stageMicro {
            direct(scheduled[nextScheduled].change)
            appliedDirections.append(scheduled[nextScheduled].change)
            nextScheduled += 1
        }
        // Who is on the stage is asked for the instant this frame stands for, as frames are
        // (`frameLead`: the tick nearest a join or leave shows it, as it shows the nearest picture).
        let participants = source.participants(at: .microseconds(stageMicro + compositor.frameLead))
        if repeatPicture {
            compositor.advance(participants: participants, source: source, stageTime: stageMicro)
        } else {
            compositor.compose(participants: participants, source: source, stageTime: stageMicro)
        }
        mixer.mix(tick: tick, participants: participants, source: source)
        if speakers?.update(at: stageMicro, levels: mixer.levels) == true {
            // From the next tick on: the speaker is laid out by what was heard up to now.
            compositor.activeSpeaker = speakers?.speaker
            speakerSwitchedAt = stageMicro
        }
        return participants
    }
}
