// Drawing primitives on a caller-owned planar YUV 4:2:0 frame. Nothing here allocates:
// the compositor calls them per output frame on its canvas.

public import MediaCore

/// A view of a planar YUV 4:2:0 image (I420 / AV_PIX_FMT_YUV420P) owned by the caller.
/// Chroma planes are `(width + 1) / 2` x `(height + 1) / 2`.
public struct PlanarYUV420 {
    public var yPlane: UnsafeMutablePointer<UInt8>
    public var uPlane: UnsafeMutablePointer<UInt8>
    public var vPlane: UnsafeMutablePointer<UInt8>
    public var yStride: Int
    public var uStride: Int
    public var vStride: Int
    public var width: Int
    public var height: Int

    public init(yPlane: UnsafeMutablePointer<UInt8>, uPlane: UnsafeMutablePointer<UInt8>,
                vPlane: UnsafeMutablePointer<UInt8>, yStride: Int, uStride: Int, vStride: Int,
                width: Int, height: Int) {
        self.yPlane = yPlane
        self.uPlane = uPlane
        self.vPlane = vPlane
        self.yStride = yStride
        self.uStride = uStride
        self.vStride = vStride
        self.width = width
        self.height = height
    }

    var bounds: Rect { Rect(x: 0, y: 0, width: width, height: height) }
}

/// A colour as 8-bit Y'CbCr (BT.601 limited range in this module's conversions).
public struct YUVColor: Hashable, Sendable {
    public var y: UInt8
    public var u: UInt8
    public var v: UInt8

    public init(y: UInt8, u: UInt8, v: UInt8) {
        self.y = y
        self.u = u
        self.v = v
    }

    /// A neutral grey of luma `y`.
    public static func grey(_ y: UInt8) -> YUVColor { YUVColor(y: y, u: 128, v: 128) }
    public static let black = YUVColor.grey(16)
    public static let white = YUVColor.grey(235)

    /// BT.601 limited-range conversion from 8-bit RGB.
    public init(red: UInt8, green: UInt8, blue: UInt8) {
        let r = Int(red), g = Int(green), b = Int(blue)
        y = UInt8(clamping: (66 * r + 129 * g + 25 * b + 128) >> 8 + 16)
        u = UInt8(clamping: (-38 * r - 74 * g + 112 * b + 128) >> 8 + 128)
        v = UInt8(clamping: (112 * r - 94 * g - 18 * b + 128) >> 8 + 128)
    }
}

public enum YUVRaster {
    /// Fills `rect` (clipped to the frame) with `color`. Chroma covers every 2x2 block the
    /// rectangle touches, so odd edges round outwards in chroma.
    public static func fillRect(into frame: PlanarYUV420, rect: Rect, color: YUVColor) {
        guard let clipped = rect.intersection(frame.bounds) else { return }
        fillLuma(frame, clipped, color.y)
        let chromaWidth = (frame.width + 1) / 2, chromaHeight = (frame.height + 1) / 2
        let x0 = clipped.x / 2, x1 = min((clipped.maxX + 1) / 2, chromaWidth)
        let y0 = clipped.y / 2, y1 = min((clipped.maxY + 1) / 2, chromaHeight)
        guard x1 > x0, y1 > y0 else { return }
        for row in y0..<y1 {
            (frame.uPlane + row * frame.uStride + x0).update(repeating: color.u, count: x1 - x0)
            (frame.vPlane + row * frame.vStride + x0).update(repeating: color.v, count: x1 - x0)
        }
    }

    /// Sets luma only, for neutral-grey drawing over a neutral-grey background.
    static func fillLuma(_ frame: PlanarYUV420, _ rect: Rect, _ luma: UInt8) {
        guard let clipped = rect.intersection(frame.bounds) else { return }
        for row in clipped.y..<clipped.maxY {
            (frame.yPlane + row * frame.yStride + clipped.x).update(repeating: luma, count: clipped.width)
        }
    }

    /// Width and height of `text` drawn at `scale` (font pixels are `scale` x `scale`).
    public static func textSize(_ text: String, scale: Int) -> PixelSize {
        let count = text.utf8.count
        guard count > 0 else { return PixelSize(width: 0, height: 0) }
        return PixelSize(width: (count * BitmapFont.advance - 1) * scale, height: BitmapFont.glyphHeight * scale)
    }

    /// Draws `text` with the 5x7 font, top-left at `origin`, clipped to `clip` and the frame.
    /// `lumaOnly` leaves chroma alone (grey text on a grey background).
    public static func drawText(into frame: PlanarYUV420, text: String, origin: (x: Int, y: Int), scale: Int,
                                color: YUVColor, clip: Rect, lumaOnly: Bool = false) {
        guard scale >= 1, let clip = clip.intersection(frame.bounds) else { return }
        var x = origin.x
        for byte in text.utf8 {
            let offset = BitmapFont.glyphOffset(byte)
            for row in 0..<BitmapFont.glyphHeight {
                let bits = BitmapFont.rows[offset + row]
                guard bits != 0 else { continue }
                for column in 0..<BitmapFont.glyphWidth where bits & (0x10 >> column) != 0 {
                    let dot = Rect(x: x + column * scale, y: origin.y + row * scale, width: scale, height: scale)
                    guard let visible = dot.intersection(clip) else { continue }
                    if lumaOnly { fillLuma(frame, visible, color.y) } else { fillRect(into: frame, rect: visible, color: color) }
                }
            }
            x += BitmapFont.advance * scale
        }
    }
}

extension Rect {
    /// The overlap of two rectangles, nil when they do not overlap.
    public func intersection(_ other: Rect) -> Rect? {
        let left = max(x, other.x), top = max(y, other.y)
        let right = min(maxX, other.maxX), bottom = min(maxY, other.maxY)
        guard right > left, bottom > top else { return nil }
        return Rect(x: left, y: top, width: right - left, height: bottom - top)
    }
}
