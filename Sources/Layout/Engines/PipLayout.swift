/// IVS picture-in-picture layout: the participant flagged by `pipParticipantAttribute` in a
/// corner window on top (zIndex 1), everyone else filling the canvas as a grid (zIndex 0)
/// with the featured rule. See docs/layouts/README.md for the documented choices.

public import MediaCore

public struct PipLayout: LayoutEngine {
    public let configuration: PipConfiguration

    public init(configuration: PipConfiguration = PipConfiguration()) {
        self.configuration = configuration
    }

    public static let mainZIndex = 0
    public static let windowZIndex = 1

    public func tiles(canvas: PixelSize, participants: [LayoutParticipant]) -> [Tile] {
        guard let bounds = Rect(evenCanvas: canvas) else { return [] }
        var ordered = ParticipantSelection.ordered(
            participants,
            omitStoppedVideo: configuration.resolvedOmitStoppedVideo,
            orderAttribute: configuration.participantOrderAttribute)
        // The PiP flag wins over the featured flag when one participant has both.
        let pip = ParticipantSelection.takeFirstFlagged(configuration.pipParticipantAttribute, from: &ordered)
        let featured = ParticipantSelection.takeFirstFlagged(configuration.featuredParticipantAttribute, from: &ordered)
        let fillMode = configuration.resolvedVideoFillMode

        guard let pip else {
            return mainTiles(featured: featured, others: ordered, bounds: bounds)
        }
        let content = pip.tileContent
        if featured == nil, ordered.isEmpty, configuration.resolvedPipBehavior == .dynamic {
            return [Tile(participantId: pip.participantId, rect: bounds, fillMode: fillMode,
                         zIndex: Self.mainZIndex, content: content)]
        }
        let window = Tile(participantId: pip.participantId, rect: windowRect(for: pip, canvas: bounds),
                          fillMode: fillMode, zIndex: Self.windowZIndex, content: content)
        return mainTiles(featured: featured, others: ordered, bounds: bounds) + [window]
    }

    /// Everyone but the PiP participant, over the whole canvas. Tiles take the most common
    /// aspect of the participants' own videos (PipConfiguration has no videoAspectRatio).
    private func mainTiles(featured: LayoutParticipant?, others: [LayoutParticipant], bounds: Rect) -> [Tile] {
        let fillMode = configuration.resolvedVideoFillMode
        let placement = TilePlacement(
            gap: effectiveGap(configuration.gridGap ?? PipConfiguration.defaultGridGap, canvas: bounds.size),
            tileAspect: ParticipantSelection.autoAspect(of: others),
            gridFillMode: fillMode, featuredFillMode: fillMode, zIndex: Self.mainZIndex)
        return placement.tiles(featured: featured, others: others, in: bounds)
    }

    /// The PiP window: `pipWidth` x `pipHeight` when both are set; one of them plus the
    /// participant's aspect; or, with neither, a window of the participant's aspect whose
    /// area is 1/16 of the canvas (a quarter of each edge when the aspects match), at most
    /// half the canvas on each axis. Placed `pipOffset` from the two edges of `pipPosition`,
    /// then kept inside the canvas (shrunk to it if larger). Odd values round to even.
    func windowRect(for participant: LayoutParticipant, canvas: Rect) -> Rect {
        let aspect = ParticipantSelection.aspect(of: participant, fallback: .video)
        let requestedWidth = configuration.pipWidth.map { min(max($0, 1), canvas.width) }
        let requestedHeight = configuration.pipHeight.map { min(max($0, 1), canvas.height) }
        let size: PixelSize
        switch (requestedWidth, requestedHeight) {
        case let (width?, height?):
            size = PixelSize(width: max(evenFloor(width), minimumTileEdge), height: max(evenFloor(height), minimumTileEdge))
        case let (width?, nil):
            size = aspect.fitted(in: PixelSize(width: width, height: canvas.height))
        case let (nil, height?):
            size = aspect.fitted(in: PixelSize(width: canvas.width, height: height))
        case (nil, nil):
            // w * h = canvasArea / 16 with w / h = aspect  =>  w = sqrt(canvasArea * aw / (16 * ah)).
            let width = integerSquareRoot(canvas.width * canvas.height * aspect.width / (16 * aspect.height))
            size = aspect.fitted(in: PixelSize(width: min(width, canvas.width / 2),
                                               height: canvas.height / 2))
        }
        let offset = effectiveGap(configuration.pipOffset ?? PipConfiguration.defaultPipOffset, canvas: canvas.size)
        let position = configuration.resolvedPipPosition
        let x = position.isLeft ? canvas.x + offset : canvas.maxX - size.width - offset
        let y = position.isTop ? canvas.y + offset : canvas.maxY - size.height - offset
        return Rect(x: x, y: y, width: size.width, height: size.height).clampedEven(to: canvas)
    }
}

/// floor(sqrt(value)) for value >= 0, without floating point.
func integerSquareRoot(_ value: Int) -> Int {
    guard value > 1 else { return max(value, 0) }
    var x = value, y = (value + 1) / 2
    while y < x { (x, y) = (y, (y + value / y) / 2) }
    return x
}

extension PipPosition {
    var isLeft: Bool { self == .topLeft || self == .bottomLeft }
    var isTop: Bool { self == .topLeft || self == .topRight }
}

extension PipConfiguration {
    public static let defaultGridGap = 0
    public static let defaultVideoFillMode = VideoFillMode.cover
    public static let defaultOmitStoppedVideo = false
    public static let defaultPipBehavior = PipBehavior.static
    public static let defaultPipOffset = 0
    public static let defaultPipPosition = PipPosition.bottomRight

    public var resolvedVideoFillMode: VideoFillMode { videoFillMode ?? Self.defaultVideoFillMode }
    public var resolvedOmitStoppedVideo: Bool { omitStoppedVideo ?? Self.defaultOmitStoppedVideo }
    public var resolvedPipBehavior: PipBehavior { pipBehavior ?? Self.defaultPipBehavior }
    public var resolvedPipPosition: PipPosition { pipPosition ?? Self.defaultPipPosition }
}
