// Overlays on a YUV 4:2:0 canvas. An overlay (a label, a logo, a banner) is converted once,
// when it changes, from premultiplied RGBA into premultiplied Y'CbCr with its alpha (BT.601
// limited range, as the encoder signals; chroma and alpha averaged over each 2x2 block), on
// the chroma grid. Blending it is then one multiply-add per sample, `out = p + in * (1 - a)`,
// over the spans of each row that are not transparent, with no allocation: what a frame
// costs is proportional to the pixels the overlay covers.
//
// The compositor keeps canvas pixels between frames (tiles whose picture did not change are
// not drawn again), so overlays are drawn over a copy-aside: `CanvasPatches` keeps what was
// under them and puts it back before the next frame is drawn.

public import MediaCore

/// A premultiplied Y'CbCrA picture placed on the canvas at even coordinates.
public struct YUVAOverlay: Sendable, Equatable {
    public let x: Int
    public let y: Int
    public let width: Int
    public let height: Int
    /// Luma premultiplied by alpha, and alpha, `width * height`.
    private let lumaPremultiplied: [UInt8]
    private let lumaAlpha: [UInt8]
    /// Cb, Cr premultiplied by the block's alpha, and that alpha, `(width / 2) * (height / 2)`.
    private let cbPremultiplied: [UInt8]
    private let crPremultiplied: [UInt8]
    private let chromaAlpha: [UInt8]
    /// Per luma row: the columns [start, end) that are not transparent (start == end: none).
    private let rowSpans: [SIMD2<Int32>]
    /// Per chroma row, the same.
    private let chromaSpans: [SIMD2<Int32>]

    /// How opaque it is drawn by default (0...256; an image's `opacity`).
    public var opacity = 256

    /// The rectangle it covers (even).
    public var rect: Rect { Rect(x: x, y: y, width: width, height: height) }

    /// `bitmap` with its top-left corner at (`x`, `y`); an odd coordinate moves it one pixel
    /// left or up onto the chroma grid, and odd sizes get a transparent column or row.
    public init(bitmap: RGBABitmap, x: Int, y: Int) {
        let originX = x & ~1, originY = y & ~1
        let shiftX = x - originX, shiftY = y - originY
        let width = (bitmap.width + shiftX + 1) & ~1
        let height = (bitmap.height + shiftY + 1) & ~1
        self.x = originX
        self.y = originY
        self.width = width
        self.height = height
        var luma = [UInt8](repeating: 0, count: width * height)
        var alpha = [UInt8](repeating: 0, count: width * height)
        // Per pixel, premultiplied Cb and Cr in 1/255 units (summed over blocks below).
        var cbSums = [Int32](repeating: 0, count: (width / 2) * (height / 2))
        var crSums = [Int32](repeating: 0, count: (width / 2) * (height / 2))
        var alphaSums = [Int32](repeating: 0, count: (width / 2) * (height / 2))
        var spans = [SIMD2<Int32>](repeating: SIMD2(0, 0), count: height)
        bitmap.pixels.withUnsafeBufferPointer { source in
            for row in 0..<bitmap.height {
                var first = Int32.max, last = Int32.min
                for column in 0..<bitmap.width {
                    let i = (row * bitmap.width + column) * 4
                    let r = Int32(source[i]), g = Int32(source[i + 1]), b = Int32(source[i + 2]), a = Int32(source[i + 3])
                    guard a > 0 else { continue }
                    let outRow = row + shiftY, outColumn = column + shiftX
                    let o = outRow * width + outColumn
                    // ×1000 fixed point of BT.601 limited-range coefficients (per 255).
                    let y = (16_000 * a + 65_481 * r + 128_553 * g + 24_966 * b + 127_500) / 255_000
                    luma[o] = UInt8(clamping: y)
                    alpha[o] = UInt8(a)
                    let block = (outRow / 2) * (width / 2) + outColumn / 2
                    cbSums[block] += 128_000 * a - 37_797 * r - 74_203 * g + 112_000 * b
                    crSums[block] += 128_000 * a + 112_000 * r - 93_786 * g - 18_214 * b
                    alphaSums[block] += a
                    first = min(first, Int32(outColumn))
                    last = max(last, Int32(outColumn) + 1)
                }
                if first < last { spans[row + shiftY] = SIMD2(first & ~1, (last + 1) & ~1) }
            }
        }
        let chromaCount = (width / 2) * (height / 2)
        var cb = [UInt8](repeating: 0, count: chromaCount)
        var cr = [UInt8](repeating: 0, count: chromaCount)
        var chromaAlpha = [UInt8](repeating: 0, count: chromaCount)
        for i in 0..<chromaCount where alphaSums[i] > 0 {
            cb[i] = UInt8(clamping: (cbSums[i] + 510_000) / 1_020_000)
            cr[i] = UInt8(clamping: (crSums[i] + 510_000) / 1_020_000)
            chromaAlpha[i] = UInt8(clamping: (alphaSums[i] + 2) / 4)
        }
        var chromaSpans = [SIMD2<Int32>](repeating: SIMD2(0, 0), count: height / 2)
        for row in 0..<(height / 2) {
            let top = spans[row * 2], bottom = spans[row * 2 + 1]
            let hasTop = top.x < top.y, hasBottom = bottom.x < bottom.y
            guard hasTop || hasBottom else { continue }
            let start = min(hasTop ? top.x : .max, hasBottom ? bottom.x : .max)
            let end = max(hasTop ? top.y : .min, hasBottom ? bottom.y : .min)
            chromaSpans[row] = SIMD2(start / 2, end / 2)
        }
        lumaPremultiplied = luma
        lumaAlpha = alpha
        cbPremultiplied = cb
        crPremultiplied = cr
        self.chromaAlpha = chromaAlpha
        rowSpans = spans
        self.chromaSpans = chromaSpans
    }

    /// Blends it into `frame` at `opacity` (0...256: 256 is as drawn), clipped to the frame.
    public func blend(into frame: PlanarYUV420, opacity: Int = 256) {
        let opacity = Int32(min(256, max(0, opacity)))
        guard opacity > 0 else { return }
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(frame.width & ~1, x + width), y1 = min(frame.height & ~1, y + height)
        guard x0 < x1, y0 < y1 else { return }
        lumaPremultiplied.withUnsafeBufferPointer { luma in
            lumaAlpha.withUnsafeBufferPointer { alpha in
                for row in y0..<y1 {
                    let local = row - y
                    let span = rowSpans[local]
                    let start = max(x0, x + Int(span.x)), end = min(x1, x + Int(span.y))
                    guard start < end else { continue }
                    let offset = local * width - x
                    Self.blendRow(into: frame.yPlane + row * frame.yStride, premultiplied: luma.baseAddress! + offset,
                                  alpha: alpha.baseAddress! + offset, from: start, to: end, opacity: opacity)
                }
            }
        }
        let cx0 = x0 / 2, cx1 = x1 / 2, cy0 = y0 / 2, cy1 = y1 / 2
        let chromaWidth = width / 2
        cbPremultiplied.withUnsafeBufferPointer { cb in
            crPremultiplied.withUnsafeBufferPointer { cr in
                chromaAlpha.withUnsafeBufferPointer { alpha in
                    for row in cy0..<cy1 {
                        let local = row - y / 2
                        let span = chromaSpans[local]
                        let start = max(cx0, x / 2 + Int(span.x)), end = min(cx1, x / 2 + Int(span.y))
                        guard start < end else { continue }
                        let offset = local * chromaWidth - x / 2
                        Self.blendRow(into: frame.uPlane + row * frame.uStride, premultiplied: cb.baseAddress! + offset,
                                      alpha: alpha.baseAddress! + offset, from: start, to: end, opacity: opacity)
                        Self.blendRow(into: frame.vPlane + row * frame.vStride, premultiplied: cr.baseAddress! + offset,
                                      alpha: alpha.baseAddress! + offset, from: start, to: end, opacity: opacity)
                    }
                }
            }
        }
    }

    /// `out = p·o + in·(1 - a·o)` over columns [from, to) (`p` and `a` indexed by canvas column).
    @inline(__always)
    private static func blendRow(into destination: UnsafeMutablePointer<UInt8>, premultiplied: UnsafePointer<UInt8>,
                                 alpha: UnsafePointer<UInt8>, from: Int, to: Int, opacity: Int32) {
        if opacity == 256 {
            for i in from..<to {
                let a = UInt32(alpha[i])
                let kept = (UInt32(destination[i]) &* (255 &- a) &* 257 &+ 32_896) >> 16
                destination[i] = UInt8(truncatingIfNeeded: min(255, UInt32(premultiplied[i]) &+ kept))
            }
        } else {
            let o = UInt32(opacity)
            for i in from..<to {
                let a = (UInt32(alpha[i]) &* o) >> 8
                let p = (UInt32(premultiplied[i]) &* o) >> 8
                let kept = (UInt32(destination[i]) &* (255 &- a) &* 257 &+ 32_896) >> 16
                destination[i] = UInt8(truncatingIfNeeded: min(255, p &+ kept))
            }
        }
    }
}

/// What lay under this frame's overlays, to put back before the next frame is drawn.
/// Its storage grows to the largest set of rectangles seen and is then reused.
public struct CanvasPatches {
    private var rects: [Rect] = []
    /// Where each rectangle's samples start in `luma` and `chroma`.
    private var offsets: [SIMD2<Int>] = []
    private var luma: [UInt8] = []
    private var chroma: [UInt8] = []

    public init() {}

    public var isEmpty: Bool { rects.isEmpty }

    /// Keeps the pixels of `saved` (even rectangles, clipped to the frame), forgetting any kept before.
    public mutating func save(_ saved: [Rect], of frame: PlanarYUV420) {
        rects.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        var lumaCount = 0, chromaCount = 0
        for rect in saved {
            guard let clipped = Self.clip(rect, frame) else { continue }
            rects.append(clipped)
            offsets.append(SIMD2(lumaCount, chromaCount))
            lumaCount += clipped.width * clipped.height
            chromaCount += 2 * (clipped.width / 2) * (clipped.height / 2)
        }
        if luma.count < lumaCount { luma = [UInt8](repeating: 0, count: lumaCount) }
        if chroma.count < chromaCount { chroma = [UInt8](repeating: 0, count: chromaCount) }
        var lumaOffset = 0, chromaOffset = 0
        luma.withUnsafeMutableBufferPointer { luma in
            chroma.withUnsafeMutableBufferPointer { chroma in
                for rect in rects {
                    for row in rect.y..<rect.maxY {
                        (luma.baseAddress! + lumaOffset).update(from: frame.yPlane + row * frame.yStride + rect.x, count: rect.width)
                        lumaOffset += rect.width
                    }
                    for row in (rect.y / 2)..<(rect.maxY / 2) {
                        (chroma.baseAddress! + chromaOffset).update(from: frame.uPlane + row * frame.uStride + rect.x / 2, count: rect.width / 2)
                        chromaOffset += rect.width / 2
                        (chroma.baseAddress! + chromaOffset).update(from: frame.vPlane + row * frame.vStride + rect.x / 2, count: rect.width / 2)
                        chromaOffset += rect.width / 2
                    }
                }
            }
        }
    }

    /// Puts back what `save` kept, and forgets it. Everything was saved before anything was
    /// drawn, so overlapping rectangles hold the same pixels and any order restores them.
    public mutating func restore(into frame: PlanarYUV420) {
        guard !rects.isEmpty else { return }
        luma.withUnsafeBufferPointer { luma in
            chroma.withUnsafeBufferPointer { chroma in
                for index in rects.indices.reversed() {
                    let rect = rects[index]
                    var l = offsets[index].x, c = offsets[index].y
                    for row in rect.y..<rect.maxY {
                        (frame.yPlane + row * frame.yStride + rect.x).update(from: luma.baseAddress! + l, count: rect.width)
                        l += rect.width
                    }
                    for row in (rect.y / 2)..<(rect.maxY / 2) {
                        (frame.uPlane + row * frame.uStride + rect.x / 2).update(from: chroma.baseAddress! + c, count: rect.width / 2)
                        c += rect.width / 2
                        (frame.vPlane + row * frame.vStride + rect.x / 2).update(from: chroma.baseAddress! + c, count: rect.width / 2)
                        c += rect.width / 2
                    }
                }
            }
        }
        rects.removeAll(keepingCapacity: true)
    }

    private static func clip(_ rect: Rect, _ frame: PlanarYUV420) -> Rect? {
        let x0 = max(0, rect.x) & ~1, y0 = max(0, rect.y) & ~1
        let x1 = min(frame.width & ~1, (rect.maxX + 1) & ~1), y1 = min(frame.height & ~1, (rect.maxY + 1) & ~1)
        guard x0 < x1, y0 < y1 else { return nil }
        return Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}
