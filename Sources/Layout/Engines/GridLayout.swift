/// IVS grid layout: equal tiles of one aspect (`videoAspectRatio`) in the rows x columns
/// that make them largest, an optional featured slot with a strip of the others, and the
/// stopped-video and ordering rules. See docs/layouts/README.md for the documented choices.

public import MediaCore

public struct GridLayout: LayoutEngine {
    public let configuration: GridConfiguration

    public init(configuration: GridConfiguration = GridConfiguration()) {
        self.configuration = configuration
    }

    public func tiles(canvas: PixelSize, participants: [LayoutParticipant]) -> [Tile] {
        guard let bounds = Rect(evenCanvas: canvas) else { return [] }
        var ordered = ParticipantSelection.ordered(
            participants,
            omitStoppedVideo: configuration.resolvedOmitStoppedVideo,
            orderAttribute: configuration.participantOrderAttribute)
        let featured = ParticipantSelection.takeFirstFlagged(configuration.featuredParticipantAttribute, from: &ordered)
        let tileAspect: AspectRatio = switch configuration.resolvedVideoAspectRatio {
        case .auto: ParticipantSelection.autoAspect(of: ordered)
        case .video: .video
        case .square: .square
        case .portrait: .portrait
        }
        let placement = TilePlacement(
            gap: configuration.effectiveGridGap(canvas: bounds.size),
            tileAspect: tileAspect,
            gridFillMode: configuration.videoFillMode ?? GridConfiguration.defaultVideoFillMode,
            featuredFillMode: configuration.videoFillMode ?? GridConfiguration.defaultFeaturedVideoFillMode,
            zIndex: 0)
        return placement.tiles(featured: featured, others: ordered, in: bounds)
    }
}

extension Rect {
    /// The drawable canvas: its size rounded down to even; nil when smaller than one tile.
    init?(evenCanvas canvas: PixelSize) {
        let width = evenFloor(canvas.width), height = evenFloor(canvas.height)
        guard width >= minimumTileEdge, height >= minimumTileEdge else { return nil }
        self.init(x: 0, y: 0, width: width, height: height)
    }
}

/// An odd gap is rounded up to even (tiles must stay on even pixels), and a gap larger
/// than the canvas is capped so the arithmetic stays bounded.
func effectiveGap(_ requested: Int, canvas: PixelSize) -> Int {
    evenCeil(min(max(requested, 0), max(canvas.width, canvas.height)))
}

extension GridConfiguration {
    public static let defaultGridGap = 2
    public static let defaultVideoAspectRatio = VideoAspectRatio.video
    public static let defaultVideoFillMode = VideoFillMode.cover
    public static let defaultFeaturedVideoFillMode = VideoFillMode.contain
    public static let defaultOmitStoppedVideo = false

    public var resolvedVideoAspectRatio: VideoAspectRatio { videoAspectRatio ?? Self.defaultVideoAspectRatio }
    public var resolvedOmitStoppedVideo: Bool { omitStoppedVideo ?? Self.defaultOmitStoppedVideo }
    func effectiveGridGap(canvas: PixelSize) -> Int { effectiveGap(gridGap ?? Self.defaultGridGap, canvas: canvas) }
}
