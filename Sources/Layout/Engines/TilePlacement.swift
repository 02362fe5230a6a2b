// Places an ordered list of participants in an area: a plain grid, or — with a featured
// participant — one large featured slot plus a strip of equal tiles for everyone else.
// Used by the grid engine for the whole canvas and by the PiP engine for the main area.

import MediaCore

/// Which side of the featured slot the strip of other participants goes.
enum StripSide: Equatable {
    case below
    case beside
}

struct TilePlacement {
    /// Even gap between tiles (and between the featured slot and the strip).
    var gap: Int
    /// Aspect of the non-featured tiles; nil means tiles take their whole cell.
    var tileAspect: AspectRatio?
    var gridFillMode: VideoFillMode
    var featuredFillMode: VideoFillMode
    var zIndex: Int

    /// Share of the area's height (strip below) or width (strip beside) the strip may use.
    static let stripShare = (numerator: 1, denominator: 4)

    /// Tiles in layout order (featured first). On an area too small for every participant
    /// at the minimum size, tiles are clamped inside it (and then may overlap) rather than
    /// anyone being dropped.
    func tiles(featured: LayoutParticipant?, others: [LayoutParticipant], in area: Rect) -> [Tile] {
        unclampedTiles(featured: featured, others: others, in: area).map { tile in
            var tile = tile
            tile.rect = tile.rect.clampedEven(to: area)
            return tile
        }
    }

    private func unclampedTiles(featured: LayoutParticipant?, others: [LayoutParticipant], in area: Rect) -> [Tile] {
        guard let featured else { return gridTiles(others, in: area) }
        guard !others.isEmpty else {
            return [tile(featured, area, featuredFillMode)]
        }
        let featuredAspect = ParticipantSelection.aspect(of: featured, fallback: tileAspect ?? .video)
        let below = featuredSplit(.below, others: others, in: area)
        let beside = featuredSplit(.beside, others: others, in: area)
        // The strip goes below on a landscape/square area and beside on a portrait one,
        // unless the other side shows the featured video (undistorted, at its own aspect)
        // at least 25% larger — e.g. a phone-portrait featured video on a landscape canvas.
        let belowArea = featuredAspect.fitted(in: below.slot.size).area
        let besideArea = featuredAspect.fitted(in: beside.slot.size).area
        let chosen = if area.width >= area.height {
            besideArea * 4 >= belowArea * 5 ? beside : below
        } else {
            belowArea * 4 >= besideArea * 5 ? below : beside
        }
        return [tile(featured, chosen.slot, featuredFillMode)]
            + zip(others, chosen.strip).map { tile($0, $1, gridFillMode) }
    }

    /// Equal tiles, rows x columns chosen for the largest tile.
    func gridTiles(_ participants: [LayoutParticipant], in area: Rect) -> [Tile] {
        guard !participants.isEmpty else { return [] }
        let arrangement = GridArrangement.best(count: participants.count, area: area.size, gap: gap, aspect: tileAspect)
        return zip(participants, arrangement.rects(count: participants.count, in: area)).map {
            tile($0, $1, gridFillMode)
        }
    }

    /// The featured slot and the strip tiles for one strip side. The strip region is a
    /// quarter of the area; the strip only takes the height (width) its tiles need, the
    /// featured slot gets the rest minus one gap (less when the gap would leave the slot
    /// under the minimum edge).
    func featuredSplit(_ side: StripSide, others: [LayoutParticipant], in area: Rect) -> (slot: Rect, strip: [Rect]) {
        let share = TilePlacement.stripShare
        switch side {
        case .below:
            let region = PixelSize(width: area.width,
                                   height: max(evenFloor(area.height * share.numerator / share.denominator), minimumTileEdge))
            let arrangement = GridArrangement.best(count: others.count, area: region, gap: gap, aspect: tileAspect)
            let used = arrangement.blockSize.height
            let slotHeight = max(area.height - used - slotGap(remaining: area.height - used), minimumTileEdge)
            let stripArea = Rect(x: area.x, y: area.maxY - used, width: area.width, height: used)
            return (Rect(x: area.x, y: area.y, width: area.width, height: slotHeight),
                    arrangement.rects(count: others.count, in: stripArea))
        case .beside:
            let region = PixelSize(width: max(evenFloor(area.width * share.numerator / share.denominator), minimumTileEdge),
                                   height: area.height)
            let arrangement = GridArrangement.best(count: others.count, area: region, gap: gap, aspect: tileAspect)
            let used = arrangement.blockSize.width
            let slotWidth = max(area.width - used - slotGap(remaining: area.width - used), minimumTileEdge)
            let stripArea = Rect(x: area.maxX - used, y: area.y, width: used, height: area.height)
            return (Rect(x: area.x, y: area.y, width: slotWidth, height: area.height),
                    arrangement.rects(count: others.count, in: stripArea))
        }
    }

    /// The gap between the featured slot and the strip, shrunk if it would leave the slot
    /// under the minimum edge in the `remaining` pixels.
    private func slotGap(remaining: Int) -> Int {
        min(gap, evenFloor(max(remaining - minimumTileEdge, 0)))
    }

    private func tile(_ participant: LayoutParticipant, _ rect: Rect, _ fillMode: VideoFillMode) -> Tile {
        Tile(participantId: participant.participantId, rect: rect, fillMode: fillMode,
             zIndex: zIndex, content: participant.tileContent)
    }
}

extension Rect {
    var size: PixelSize { PixelSize(width: width, height: height) }
}

extension PixelSize {
    var area: Int { width * height }
}
