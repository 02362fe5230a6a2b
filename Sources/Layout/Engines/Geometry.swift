// Small pure geometry helpers shared by the engines. Everything is integer pixels and every
// value that reaches a Tile is even (YUV 4:2:0 subsamples chroma by two on both axes).

public import MediaCore

/// The smallest tile edge an engine produces. Canvases too small to give every participant
/// this much get overlapping minimum tiles rather than dropped participants.
let minimumTileEdge = 2

/// Largest even number <= value (for value >= 0).
@inline(__always)
func evenFloor(_ value: Int) -> Int { value & ~1 }

/// Smallest even number >= value (for value >= 0).
@inline(__always)
func evenCeil(_ value: Int) -> Int { (value + 1) & ~1 }

/// A width:height ratio kept as two integers so that layouts never depend on `Double`.
public struct AspectRatio: Hashable, Sendable, CustomStringConvertible {
    public let width: Int
    public let height: Int

    /// Reduced to lowest terms; both terms must be positive.
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "AspectRatio needs positive terms")
        let divisor = AspectRatio.gcd(width, height)
        self.width = width / divisor
        self.height = height / divisor
    }

    /// The aspect of a video size, or nil for a degenerate (zero or negative) size.
    public init?(_ size: PixelSize) {
        guard size.width > 0, size.height > 0 else { return nil }
        self.init(width: size.width, height: size.height)
    }

    public static let video = AspectRatio(width: 16, height: 9)
    public static let square = AspectRatio(width: 1, height: 1)
    public static let portrait = AspectRatio(width: 3, height: 4)

    public var description: String { "\(width):\(height)" }

    /// The largest even-sided box of this aspect inside `bounds` (each edge at least the
    /// minimum tile edge, so a degenerate bound is clamped up rather than producing zero).
    func fitted(in bounds: PixelSize) -> PixelSize {
        let boundW = max(bounds.width, 0), boundH = max(bounds.height, 0)
        var w: Int, h: Int
        if boundW * height <= boundH * width {
            w = boundW
            h = boundW * height / width
        } else {
            h = boundH
            w = boundH * width / height
        }
        w = max(evenFloor(w), minimumTileEdge)
        h = max(evenFloor(h), minimumTileEdge)
        return PixelSize(width: w, height: h)
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return max(a, 1)
    }
}

/// How `count` equal tiles with `gap` between them share `length` pixels along one axis.
/// When the requested gap leaves less than the minimum edge per tile, the gap shrinks
/// (never below zero) before the tile is clamped up to the minimum edge.
struct AxisSplit: Equatable {
    /// The exact share of one tile (not rounded to even, so an aspect fit inside it loses
    /// nothing before its own rounding).
    var cell: Int
    /// The cell rounded down to even.
    var tile: Int
    var gap: Int

    init(length: Int, count: Int, gap: Int) {
        precondition(count >= 1)
        var gap = gap
        if count > 1, (length - gap * (count - 1)) / count < minimumTileEdge {
            gap = max(0, evenFloor((length - minimumTileEdge * count) / (count - 1)))
        }
        self.gap = gap
        self.cell = max((length - gap * (count - 1)) / count, minimumTileEdge)
        self.tile = evenFloor(cell)
    }
}

/// Rows x columns of equal tiles of one aspect, chosen to maximise the tile area.
struct GridArrangement: Equatable {
    var rows: Int
    var columns: Int
    var tile: PixelSize
    var horizontalGap: Int
    var verticalGap: Int

    /// Tile size for a given arrangement (no search).
    init(rows: Int, columns: Int, area: PixelSize, gap: Int, aspect: AspectRatio?) {
        let across = AxisSplit(length: area.width, count: columns, gap: gap)
        let down = AxisSplit(length: area.height, count: rows, gap: gap)
        self.rows = rows
        self.columns = columns
        self.horizontalGap = across.gap
        self.verticalGap = down.gap
        self.tile = aspect.map { $0.fitted(in: PixelSize(width: across.cell, height: down.cell)) }
            ?? PixelSize(width: across.tile, height: down.tile)
    }

    /// Every column count 1...count is tried (rows follow as ceil(count / columns), so no
    /// row is ever empty). Ties keep the arrangement that fits the area (only minimum-size
    /// tiles on a tiny area can overflow), then the one with fewer empty cells, then the one
    /// closer to the canvas orientation (more columns on landscape, more rows on portrait).
    /// With `aspect == nil` tiles take the whole cell (used when the area must be filled).
    static func best(count: Int, area: PixelSize, gap: Int, aspect: AspectRatio?) -> GridArrangement {
        precondition(count >= 1)
        var best: GridArrangement?
        var bestScore = (area: 0, overflow: 0, emptyCells: 0, orientation: 0)
        for columns in 1...count {
            let rows = (count + columns - 1) / columns
            let candidate = GridArrangement(rows: rows, columns: columns, area: area, gap: gap, aspect: aspect)
            let block = candidate.blockSize
            // Larger tiles first; "smaller is better" terms are negated.
            let score = (area: candidate.tile.width * candidate.tile.height,
                         overflow: -(max(block.width - area.width, 0) + max(block.height - area.height, 0)),
                         emptyCells: -(rows * columns - count),
                         orientation: area.width >= area.height ? columns : rows)
            if best == nil || score > bestScore {
                best = candidate
                bestScore = score
            }
        }
        return best!
    }

    /// Width and height of the whole block of tiles (gaps included).
    var blockSize: PixelSize {
        PixelSize(width: columns * tile.width + (columns - 1) * horizontalGap,
                  height: rows * tile.height + (rows - 1) * verticalGap)
    }

    /// The rectangles of `count` tiles in reading order, the block centred in `area` and the
    /// last (incomplete) row centred within the block. Origins are even.
    func rects(count: Int, in area: Rect) -> [Rect] {
        let block = blockSize
        let top = area.y + evenFloor(max(area.height - block.height, 0) / 2)
        var rects: [Rect] = []
        rects.reserveCapacity(count)
        for index in 0..<count {
            let row = index / columns
            let column = index % columns
            let inRow = min(columns, count - row * columns)
            let rowWidth = inRow * tile.width + (inRow - 1) * horizontalGap
            let left = area.x + evenFloor(max(area.width - rowWidth, 0) / 2)
            rects.append(Rect(x: left + column * (tile.width + horizontalGap),
                              y: top + row * (tile.height + verticalGap),
                              width: tile.width, height: tile.height))
        }
        return rects
    }
}

extension Rect {
    /// This rectangle made even on every edge and moved/shrunk to lie inside `bounds`
    /// (bounds is assumed even). A rectangle larger than the bounds is shrunk to them.
    func clampedEven(to bounds: Rect) -> Rect {
        let w = min(max(evenFloor(width), minimumTileEdge), max(bounds.width, minimumTileEdge))
        let h = min(max(evenFloor(height), minimumTileEdge), max(bounds.height, minimumTileEdge))
        let x = min(max(evenFloor(self.x), bounds.x), max(bounds.maxX - w, bounds.x))
        let y = min(max(evenFloor(self.y), bounds.y), max(bounds.maxY - h, bounds.y))
        return Rect(x: evenFloor(x), y: evenFloor(y), width: w, height: h)
    }
}
