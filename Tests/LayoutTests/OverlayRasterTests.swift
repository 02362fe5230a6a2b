import Testing
@testable import Layout
import MediaCore
import TestSupport

/// A YUV420 picture owned by a test.
final class TestPicture {
    let width: Int, height: Int
    var y: [UInt8], u: [UInt8], v: [UInt8]

    init(width: Int, height: Int, fill: (Int, Int) -> UInt8 = { _, _ in 16 }) {
        self.width = width
        self.height = height
        y = (0..<(width * height)).map { fill($0 % width, $0 / width) }
        u = [UInt8](repeating: 128, count: (width / 2) * (height / 2))
        v = [UInt8](repeating: 128, count: (width / 2) * (height / 2))
    }

    func with<T>(_ body: (PlanarYUV420) -> T) -> T {
        y.withUnsafeMutableBufferPointer { yp in
            u.withUnsafeMutableBufferPointer { up in
                v.withUnsafeMutableBufferPointer { vp in
                    body(PlanarYUV420(yPlane: yp.baseAddress!, uPlane: up.baseAddress!, vPlane: vp.baseAddress!, yStride: width,
                                      uStride: width / 2, vStride: width / 2, width: width, height: height))
                }
            }
        }
    }
}

@Suite struct OverlayRasterTests {
    /// A bitmap of one straight colour with alpha varying by column (0 at the left, 255 at the right).
    static func gradient(width: Int, height: Int, red: Int, green: Int, blue: Int) -> RGBABitmap {
        var pixels: [UInt8] = []
        for _ in 0..<height {
            for x in 0..<width {
                let a = width == 1 ? 255 : x * 255 / (width - 1)
                pixels += [UInt8((red * a + 127) / 255), UInt8((green * a + 127) / 255), UInt8((blue * a + 127) / 255), UInt8(a)]
            }
        }
        return RGBABitmap(width: width, height: height, pixels: pixels)
    }

    /// The reference: straight colour → BT.601 limited Y', blended in double precision.
    static func expectedLuma(under: Double, red: Double, green: Double, blue: Double, alpha: Double) -> Double {
        let y = 16 + (65.481 * red + 128.553 * green + 24.966 * blue) / 255
        return y * alpha + under * (1 - alpha)
    }

    @Test(arguments: [(0, 0), (24, 10), (25, 11), (1, 1)])
    func blendsWithinOneLevelOfTheExactAlphaBlend(x: Int, y: Int) {
        let picture = TestPicture(width: 96, height: 48) { column, row in UInt8(16 + (column * 3 + row) % 220) }
        let before = picture.y
        let bitmap = Self.gradient(width: 40, height: 20, red: 255, green: 128, blue: 0)
        let overlay = YUVAOverlay(bitmap: bitmap, x: x, y: y)
        picture.with { overlay.blend(into: $0) }
        var worst = 0.0
        for row in 0..<20 {
            for column in 0..<40 {
                let alpha = Double(column * 255 / 39) / 255
                let under = Double(before[(row + y) * 96 + column + x])
                let expected = Self.expectedLuma(under: under, red: 255, green: 128, blue: 0, alpha: alpha)
                worst = max(worst, abs(Double(picture.y[(row + y) * 96 + column + x]) - expected))
            }
        }
        #expect(worst <= 1.5, "luma off by \(worst)")
        // Nothing outside the bitmap's pixels changed.
        for row in 0..<48 {
            for column in 0..<96 where !(x..<(x + 40)).contains(column) || !(y..<(y + 20)).contains(row) {
                #expect(picture.y[row * 96 + column] == before[row * 96 + column])
            }
        }
    }

    @Test func opaqueColourLandsOnItsYCbCr() {
        let picture = TestPicture(width: 16, height: 16)
        let red = RGBABitmap(width: 8, height: 8, pixels: [UInt8]((0..<64).flatMap { _ in [UInt8(255), 0, 0, 255] }))
        picture.with { YUVAOverlay(bitmap: red, x: 4, y: 4).blend(into: $0) }
        let expected = YUVColor(red: 255, green: 0, blue: 0)
        #expect(abs(Int(picture.y[6 * 16 + 6]) - Int(expected.y)) <= 1)
        #expect(abs(Int(picture.u[3 * 8 + 3]) - Int(expected.u)) <= 1)
        #expect(abs(Int(picture.v[3 * 8 + 3]) - Int(expected.v)) <= 1)
        #expect(picture.y[0] == 16 && picture.u[0] == 128)
    }

    @Test func opacityScalesTheBlendAndZeroLeavesThePicture() {
        let white = RGBABitmap(width: 4, height: 4, pixels: [UInt8](repeating: 255, count: 64))
        let half = TestPicture(width: 8, height: 8)
        half.with { YUVAOverlay(bitmap: white, x: 0, y: 0).blend(into: $0, opacity: 128) }
        #expect(abs(Int(half.y[0]) - (16 + 235) / 2) <= 1)
        let none = TestPicture(width: 8, height: 8)
        none.with { YUVAOverlay(bitmap: white, x: 0, y: 0).blend(into: $0, opacity: 0) }
        #expect(none.y.allSatisfy { $0 == 16 })
    }

    @Test func clipsAtEveryEdgeWithoutTouchingMemoryOutside() {
        let white = RGBABitmap(width: 10, height: 10, pixels: [UInt8](repeating: 255, count: 400))
        for (x, y) in [(-5, -5), (-11, 0), (60, 60), (58, -3), (0, 61), (-100, -100)] {
            let picture = TestPicture(width: 64, height: 64)
            picture.with { YUVAOverlay(bitmap: white, x: x, y: y).blend(into: $0) }
            let covered = picture.y.enumerated().filter { $0.element != 16 }.map { ($0.offset % 64, $0.offset / 64) }
            for (column, row) in covered {
                #expect(column >= x - 1 && column < x + 10 && row >= y - 1 && row < y + 10)
            }
        }
    }

    @Test func transparentRowsAndColumnsAreSkipped() {
        // A 2x2 opaque dot in a 30x30 transparent bitmap: only its block changes.
        var pixels = [UInt8](repeating: 0, count: 30 * 30 * 4)
        for (x, y) in [(14, 14), (15, 14), (14, 15), (15, 15)] { pixels.replaceSubrange(((y * 30 + x) * 4)..<((y * 30 + x) * 4 + 4), with: [255, 255, 255, 255]) }
        let picture = TestPicture(width: 64, height: 64) { c, r in UInt8(16 + (c + r) % 100) }
        let before = picture.y
        picture.with { YUVAOverlay(bitmap: RGBABitmap(width: 30, height: 30, pixels: pixels), x: 10, y: 10).blend(into: $0) }
        let changed = (0..<(64 * 64)).filter { picture.y[$0] != before[$0] }
        #expect(Set(changed) == Set([24 * 64 + 24, 24 * 64 + 25, 25 * 64 + 24, 25 * 64 + 25]))
    }

    /// Generated: overlapping rectangles saved, the picture scribbled over, restored: exactly
    /// the picture as it was, whatever the rectangles (odd, outside, overlapping).
    @Test func patchesPutBackExactlyWhatWasThere() {
        var random = SeededGenerator(seed: 43)
        var patches = CanvasPatches()
        for _ in 0..<200 {
            let picture = TestPicture(width: 64, height: 48) { _, _ in UInt8.random(in: 0...255, using: &random) }
            for i in picture.u.indices { picture.u[i] = UInt8.random(in: 0...255, using: &random); picture.v[i] = UInt8.random(in: 0...255, using: &random) }
            let original = (picture.y, picture.u, picture.v)
            let rects = (0..<Int.random(in: 0...6, using: &random)).map { _ in
                Rect(x: Int.random(in: -20...70, using: &random), y: Int.random(in: -20...50, using: &random),
                     width: Int.random(in: 0...40, using: &random), height: Int.random(in: 0...40, using: &random))
            }
            picture.with { patches.save(rects, of: $0) }
            // Scribble inside every saved rectangle (as overlays would).
            for rect in rects {
                let x0 = min(64, max(0, rect.x)), y0 = min(48, max(0, rect.y))
                for row in y0..<max(y0, min(48, rect.maxY)) {
                    for column in x0..<max(x0, min(64, rect.maxX)) {
                        picture.y[row * 64 + column] = 7
                        picture.u[(row / 2) * 32 + column / 2] = 9
                    }
                }
            }
            picture.with { patches.restore(into: $0) }
            #expect(picture.y == original.0 && picture.u == original.1 && picture.v == original.2)
            #expect(patches.isEmpty)
        }
    }

    @Test func placementPutsBoxesAgainstTheirEdges() {
        let area = Rect(x: 100, y: 50, width: 400, height: 300)
        let size = PixelSize(width: 40, height: 20)
        #expect(OverlayPlacement.origin(of: size, at: .topLeft, margin: 10, in: area) == (110, 60))
        #expect(OverlayPlacement.origin(of: size, at: .topRight, margin: 10, in: area) == (450, 60))
        #expect(OverlayPlacement.origin(of: size, at: .bottomLeft, margin: 10, in: area) == (110, 320))
        #expect(OverlayPlacement.origin(of: size, at: .bottomRight, margin: 10, in: area) == (450, 320))
        #expect(OverlayPlacement.origin(of: size, at: .topCenter, margin: 10, in: area) == (280, 60))
        #expect(OverlayPlacement.origin(of: size, at: .bottomCenter, margin: 10, in: area) == (280, 320))
        #expect(OverlayPlacement.origin(of: size, at: .center, margin: 10, in: area) == (280, 190))
    }

    @Test func imagesKeepTheirSizeOrAspect() {
        let natural = PixelSize(width: 200, height: 80)
        #expect(OverlayPlacement.imageSize(natural: natural, width: nil, height: nil) == natural)
        #expect(OverlayPlacement.imageSize(natural: natural, width: 100, height: nil) == PixelSize(width: 100, height: 40))
        #expect(OverlayPlacement.imageSize(natural: natural, width: nil, height: 40) == PixelSize(width: 100, height: 40))
        #expect(OverlayPlacement.imageSize(natural: natural, width: 10, height: 10) == PixelSize(width: 10, height: 10))
        let canvas = PixelSize(width: 1280, height: 720)
        let square = PixelSize(width: 100, height: 100)
        #expect(OverlayPlacement.fill(natural: square, mode: .cover, canvas: canvas) == Rect(x: 0, y: -280, width: 1280, height: 1280))
        #expect(OverlayPlacement.fill(natural: square, mode: .contain, canvas: canvas) == Rect(x: 280, y: 0, width: 720, height: 720))
        #expect(OverlayPlacement.fill(natural: square, mode: .fill, canvas: canvas) == Rect(x: 0, y: 0, width: 1280, height: 720))
    }
}
