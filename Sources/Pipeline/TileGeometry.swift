// Where a video goes inside its tile: a source crop and a destination rectangle, both even,
// for each fill mode. Pure, so it is tested exhaustively without FFmpeg.
public import Layout
public import MediaCore

public struct TilePlacement: Equatable, Sendable {
    /// Part of the source picture to use.
    public var crop: Rect
    /// Where it lands on the canvas (inside the tile).
    public var destination: Rect
}

public enum TileGeometry {
    /// FILL stretches the whole source over the tile; COVER crops the source (centred) to the
    /// tile's aspect; CONTAIN shrinks the destination (centred) to the source's aspect.
    /// Returns nil when nothing visible remains (degenerate sizes).
    public static func place(source: PixelSize, in tile: Rect, mode: VideoFillMode) -> TilePlacement? {
        guard source.width >= 2, source.height >= 2, tile.width >= 2, tile.height >= 2 else { return nil }
        let full = Rect(x: 0, y: 0, width: source.width, height: source.height)
        switch mode {
        case .fill:
            return TilePlacement(crop: evenCrop(full, within: source), destination: tile)
        case .cover:
            // Compare aspect ratios with integers: source.w/source.h vs tile.w/tile.h.
            let sourceWide = source.width * tile.height
            let tileWide = tile.width * source.height
            var crop = full
            if sourceWide > tileWide {
                // Source is wider: keep full height, crop width.
                crop.width = max(2, source.height * tile.width / tile.height)
                crop.x = (source.width - crop.width) / 2
            } else if sourceWide < tileWide {
                crop.height = max(2, source.width * tile.height / tile.width)
                crop.y = (source.height - crop.height) / 2
            }
            return TilePlacement(crop: evenCrop(crop, within: source), destination: tile)
        case .contain:
            let sourceWide = source.width * tile.height
            let tileWide = tile.width * source.height
            var destination = tile
            if sourceWide > tileWide {
                destination.height = nearestEven(tile.width * source.height, source.width)
            } else if sourceWide < tileWide {
                destination.width = nearestEven(tile.height * source.width, source.height)
            }
            destination.width = max(2, destination.width)
            destination.height = max(2, destination.height)
            destination.x = tile.x + even((tile.width - destination.width) / 2)
            destination.y = tile.y + even((tile.height - destination.height) / 2)
            return TilePlacement(crop: evenCrop(full, within: source), destination: destination)
        }
    }

    /// The least picture of `source`'s aspect that `tile` would not show upscaled in `mode`:
    /// one dimension is the tile's, the other follows the aspect (rounded up). COVER and
    /// FILL need the picture to reach both of the tile's sides, CONTAIN only the nearer one.
    /// A simulcast layer at least this large shows as sharp as any larger one. Computed from
    /// the sizes, not from a placement's even-rounded crop, which would overstate it by a few
    /// pixels (and a 638x358 tile would then want more than a 640x360 layer).
    public static func drawnSize(of source: PixelSize, in tile: Rect, mode: VideoFillMode) -> PixelSize {
        guard source.width > 0, source.height > 0, tile.width > 0, tile.height > 0 else { return source }
        // Scaled to the tile's width, the picture is taller than the tile iff this holds.
        // Picture and tile sizes are bounded (DecoderLimits caps decoded pictures; tiles lie
        // in the canvas), so the products cannot overflow; wrapping says so.
        let widthBound = tile.width &* source.height >= tile.height &* source.width
        let byWidth = mode == .contain ? !widthBound : widthBound
        return byWidth
            ? PixelSize(width: tile.width, height: ceilDivide(source.height &* tile.width, source.width))
            : PixelSize(width: ceilDivide(source.width &* tile.height, source.height), height: tile.height)
    }

    private static func ceilDivide(_ numerator: Int, _ denominator: Int) -> Int {
        (numerator &+ denominator &- 1) / denominator
    }

    private static func even(_ value: Int) -> Int { value & ~1 }

    /// numerator/denominator rounded to the nearest even integer (within 1 px of exact;
    /// flooring to even could lose almost 2). Never above an even bound the exact value is under.
    private static func nearestEven(_ numerator: Int, _ denominator: Int) -> Int {
        2 * ((numerator + denominator) / (2 * denominator))
    }

    /// Chroma is subsampled: crops start on even pixels. Odd source sizes keep their last
    /// column/row (the scaler reads it) only when the crop is the full picture.
    private static func evenCrop(_ crop: Rect, within source: PixelSize) -> Rect {
        var result = crop
        result.x = even(crop.x)
        result.y = even(crop.y)
        result.width = min(crop.width + (crop.x - result.x), source.width - result.x)
        result.height = min(crop.height + (crop.y - result.y), source.height - result.y)
        return result
    }
}
