/// Basic grid: equal tiles, rows x columns chosen to maximise the tile area for a 16:9
/// tile aspect. (The full IVS rules — featured slot, aspect modes, ordering — are issue #3.)
public struct GridLayout: LayoutEngine {
    public let configuration: GridConfiguration

    public init(configuration: GridConfiguration = GridConfiguration()) {
        self.configuration = configuration
    }

    public func tiles(canvas: PixelSize, participants: [LayoutParticipant]) -> [Tile] {
        let omit = configuration.omitStoppedVideo ?? false
        let visible = participants
            .filter { !(omit && !$0.video.isPublishing) }
            .sorted { ($0.arrivalIndex, $0.participantId) < ($1.arrivalIndex, $1.participantId) }
        guard !visible.isEmpty else { return [] }
        let gap = configuration.gridGap ?? 2
        let fill = configuration.videoFillMode ?? .cover
        let count = visible.count
        var best = (rows: 1, columns: count, area: -1)
        for rows in 1...count {
            let columns = (count + rows - 1) / rows
            let cellW = (canvas.width - gap * (columns - 1)) / columns
            let cellH = (canvas.height - gap * (rows - 1)) / rows
            // Largest 16:9 box inside the cell.
            let w = min(cellW, cellH * 16 / 9)
            let h = w * 9 / 16
            if w * h > best.area { best = (rows, columns, w * h) }
        }
        let cellW = evenFloor((canvas.width - gap * (best.columns - 1)) / best.columns)
        let cellH = evenFloor((canvas.height - gap * (best.rows - 1)) / best.rows)
        let totalH = best.rows * cellH + (best.rows - 1) * gap
        let top = evenFloor((canvas.height - totalH) / 2)
        var tiles: [Tile] = []
        for (index, participant) in visible.enumerated() {
            let row = index / best.columns
            let inRow = row == best.rows - 1 ? count - row * best.columns : best.columns
            let rowW = inRow * cellW + (inRow - 1) * gap
            let left = evenFloor((canvas.width - rowW) / 2)
            let column = index % best.columns
            let rect = Rect(x: left + column * (cellW + gap), y: top + row * (cellH + gap), width: cellW, height: cellH)
            let content: TileContent = participant.video.isPublishing ? .video : .cameraOff
            tiles.append(Tile(participantId: participant.participantId, rect: rect, fillMode: fill, zIndex: 0, content: content))
        }
        return tiles
    }
}

func evenFloor(_ value: Int) -> Int { value & ~1 }

extension VideoState {
    public var isPublishing: Bool {
        if case .publishing = self { return true }
        return false
    }
}
