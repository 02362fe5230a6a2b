// IVS LayoutConfiguration (botocore ivs-realtime 2020-07-14): exactly one of grid / pip.
// Optional fields stay optional here so that a preset or request round-trips unchanged;
// defaults are applied by the engines (`GridConfiguration.resolved...`).

public enum VideoAspectRatio: String, Codable, Sendable, CaseIterable {
    case auto = "AUTO", video = "VIDEO", square = "SQUARE", portrait = "PORTRAIT"
}

public enum PipPosition: String, Codable, Sendable, CaseIterable {
    case topLeft = "TOP_LEFT", topRight = "TOP_RIGHT", bottomLeft = "BOTTOM_LEFT", bottomRight = "BOTTOM_RIGHT"
}

public enum PipBehavior: String, Codable, Sendable, CaseIterable {
    case `static` = "STATIC", dynamic = "DYNAMIC"
}

/// Extension (not in the IVS model): who takes the featured slot (grid) or the full frame
/// (PiP) besides `featuredParticipantAttribute`.
public enum FeaturedSelection: String, Codable, Sendable, CaseIterable {
    /// The dominant speaker, from the mix's per-participant levels.
    case activeSpeaker = "ACTIVE_SPEAKER"
}

/// How the active speaker is followed (`featured: ACTIVE_SPEAKER`).
public struct ActiveSpeakerSettings: Hashable, Sendable {
    /// A new speaker takes over no sooner than this after the last switch.
    public var holdMs: Int
    /// Sound shorter than this is not speech (a cough, a blip).
    public var minSpeechMs: Int
    /// A participant's level (RMS over an output frame, dBFS) at or above this is sound.
    public var thresholdDbfs: Double

    public static let defaultHoldMs = 1500, defaultMinSpeechMs = 300
    public static let defaultThresholdDbfs = -45.0

    public init(holdMs: Int = defaultHoldMs, minSpeechMs: Int = defaultMinSpeechMs, thresholdDbfs: Double = defaultThresholdDbfs) {
        self.holdMs = holdMs
        self.minSpeechMs = minSpeechMs
        self.thresholdDbfs = thresholdDbfs
    }
}

/// The attribute the compositor gives the active speaker, which the engines feature.
public enum ActiveSpeakerAttribute {
    public static let key = "__active_speaker"
}

public struct GridConfiguration: Codable, Hashable, Sendable {
    public var featuredParticipantAttribute: String?
    /// Extension: `ACTIVE_SPEAKER` features the dominant speaker (before the attribute).
    public var featured: FeaturedSelection?
    /// Extension: the active speaker's hold and shortest speech (ms).
    public var activeSpeakerHoldMs: Int?
    public var activeSpeakerMinSpeechMs: Int?
    public var omitStoppedVideo: Bool?
    public var videoAspectRatio: VideoAspectRatio?
    public var videoFillMode: VideoFillMode?
    public var gridGap: Int?
    public var participantOrderAttribute: String?

    public init(featuredParticipantAttribute: String? = nil, omitStoppedVideo: Bool? = nil,
                videoAspectRatio: VideoAspectRatio? = nil, videoFillMode: VideoFillMode? = nil,
                gridGap: Int? = nil, participantOrderAttribute: String? = nil, featured: FeaturedSelection? = nil,
                activeSpeakerHoldMs: Int? = nil, activeSpeakerMinSpeechMs: Int? = nil) {
        self.featured = featured
        self.activeSpeakerHoldMs = activeSpeakerHoldMs
        self.activeSpeakerMinSpeechMs = activeSpeakerMinSpeechMs
        self.featuredParticipantAttribute = featuredParticipantAttribute
        self.omitStoppedVideo = omitStoppedVideo
        self.videoAspectRatio = videoAspectRatio
        self.videoFillMode = videoFillMode
        self.gridGap = gridGap
        self.participantOrderAttribute = participantOrderAttribute
    }
}

public struct PipConfiguration: Codable, Hashable, Sendable {
    public var featuredParticipantAttribute: String?
    /// Extension: `ACTIVE_SPEAKER` puts the dominant speaker in the full frame.
    public var featured: FeaturedSelection?
    public var activeSpeakerHoldMs: Int?
    public var activeSpeakerMinSpeechMs: Int?
    public var omitStoppedVideo: Bool?
    public var videoFillMode: VideoFillMode?
    public var gridGap: Int?
    public var pipParticipantAttribute: String?
    public var pipBehavior: PipBehavior?
    public var pipOffset: Int?
    public var pipPosition: PipPosition?
    public var pipWidth: Int?
    public var pipHeight: Int?
    public var participantOrderAttribute: String?

    public init(featuredParticipantAttribute: String? = nil, omitStoppedVideo: Bool? = nil,
                videoFillMode: VideoFillMode? = nil, gridGap: Int? = nil,
                pipParticipantAttribute: String? = nil, pipBehavior: PipBehavior? = nil,
                pipOffset: Int? = nil, pipPosition: PipPosition? = nil,
                pipWidth: Int? = nil, pipHeight: Int? = nil, participantOrderAttribute: String? = nil,
                featured: FeaturedSelection? = nil, activeSpeakerHoldMs: Int? = nil, activeSpeakerMinSpeechMs: Int? = nil) {
        self.featured = featured
        self.activeSpeakerHoldMs = activeSpeakerHoldMs
        self.activeSpeakerMinSpeechMs = activeSpeakerMinSpeechMs
        self.featuredParticipantAttribute = featuredParticipantAttribute
        self.omitStoppedVideo = omitStoppedVideo
        self.videoFillMode = videoFillMode
        self.gridGap = gridGap
        self.pipParticipantAttribute = pipParticipantAttribute
        self.pipBehavior = pipBehavior
        self.pipOffset = pipOffset
        self.pipPosition = pipPosition
        self.pipWidth = pipWidth
        self.pipHeight = pipHeight
        self.participantOrderAttribute = participantOrderAttribute
    }
}

/// `{"grid": {...}}` or `{"pip": {...}}`; an empty object means the default grid.
public struct LayoutConfiguration: Codable, Hashable, Sendable {
    public var grid: GridConfiguration?
    public var pip: PipConfiguration?
    /// Extension (not in the IVS model): how long tiles glide and fade when the stage changes
    /// (joins, leaves, attribute changes), 0...`maximumTransitionMs`; nil or 0 is a cut, as
    /// IVS does.
    public var transitionMs: Int?

    /// The longest transition a layout or an UpdateComposition may ask for.
    public static let maximumTransitionMs = 2000

    public init(grid: GridConfiguration? = nil, pip: PipConfiguration? = nil, transitionMs: Int? = nil) {
        self.grid = grid
        self.pip = pip
        self.transitionMs = transitionMs
    }

    public static let defaultGrid = LayoutConfiguration(grid: GridConfiguration())

    /// The active speaker's settings when the layout follows one (`featured: ACTIVE_SPEAKER`).
    public var activeSpeaker: ActiveSpeakerSettings? {
        let (featured, hold, minimum) = pip.map { ($0.featured, $0.activeSpeakerHoldMs, $0.activeSpeakerMinSpeechMs) }
            ?? (grid?.featured, grid?.activeSpeakerHoldMs, grid?.activeSpeakerMinSpeechMs)
        guard featured == .activeSpeaker else { return nil }
        return ActiveSpeakerSettings(holdMs: hold ?? ActiveSpeakerSettings.defaultHoldMs,
                                     minSpeechMs: minimum ?? ActiveSpeakerSettings.defaultMinSpeechMs)
    }
}
