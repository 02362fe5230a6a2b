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

public struct GridConfiguration: Codable, Hashable, Sendable {
    public var featuredParticipantAttribute: String?
    public var omitStoppedVideo: Bool?
    public var videoAspectRatio: VideoAspectRatio?
    public var videoFillMode: VideoFillMode?
    public var gridGap: Int?
    public var participantOrderAttribute: String?

    public init(featuredParticipantAttribute: String? = nil, omitStoppedVideo: Bool? = nil,
                videoAspectRatio: VideoAspectRatio? = nil, videoFillMode: VideoFillMode? = nil,
                gridGap: Int? = nil, participantOrderAttribute: String? = nil) {
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
                pipWidth: Int? = nil, pipHeight: Int? = nil, participantOrderAttribute: String? = nil) {
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
}
