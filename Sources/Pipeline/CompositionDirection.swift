// Directing a running composition: a producer's change (a new layout, per-participant audio,
// overlays) is posted from any thread and taken by the composition thread at the start of its next
// output frame, which applies it to that frame: the change is in the picture and the mix
// from the frame after the call on, with no encoder restart.

public import Layout
public import MediaCore
import Synchronization

/// One change to a running composition. Absent parts are left as they are.
public struct CompositionDirection: Sendable, Equatable {
    /// The layout from now on.
    public var layout: LayoutConfiguration?
    /// How long tiles glide and fade into `layout` (ms; 0 is a cut).
    public var transitionMs: Int
    /// Participants' gain and mute, merged over the settings in force (a participant not
    /// named keeps its own).
    public var audio: [String: ParticipantAudio]
    /// The overlays from now on, prepared (files decoded) before they were posted: a whole
    /// description replaces the one in force; an empty one removes them all.
    public var overlays: PreparedOverlays?

    public init(layout: LayoutConfiguration? = nil, transitionMs: Int = 0, audio: [String: ParticipantAudio] = [:],
                overlays: PreparedOverlays? = nil) {
        self.layout = layout
        self.transitionMs = transitionMs
        self.audio = audio
        self.overlays = overlays
    }
}

/// The mailbox between the API and one composition thread. Bounded: changes that pile up
/// before a frame takes them are merged into one (the latest layout and the latest overlays
/// win, audio settings merge), so a flood of calls costs one change's memory.
public final class CompositionDirector: Sendable {
    private let pending = Mutex<CompositionDirection?>(nil)
    private let keyframe = Atomic<Bool>(false)

    /// Asks for a keyframe soon (a WebRTC viewer lost a picture or joined): the composition
    /// forces one at its next frame, but no sooner than a second after the last keyframe.
    /// Requests piling up are one request.
    public func requestKeyframe() {
        keyframe.store(true, ordering: .relaxed)
    }

    /// Whether a keyframe was asked for since the last call (the composition thread).
    public func takeKeyframeRequest() -> Bool {
        keyframe.exchange(false, ordering: .relaxed)
    }

    public init() {}

    /// Posts a change for the next output frame.
    public func post(_ change: CompositionDirection) {
        pending.withLock { current in
            guard var merged = current else {
                current = change
                return
            }
            if let layout = change.layout {
                merged.layout = layout
                merged.transitionMs = change.transitionMs
            }
            merged.audio.merge(change.audio) { _, new in new }
            if let overlays = change.overlays { merged.overlays = overlays }
            current = merged
        }
    }

    /// The change posted since the last call, if any (the composition thread, once a frame).
    public func take() -> CompositionDirection? {
        pending.withLock { current in
            defer { current = nil }
            return current
        }
    }
}
