import Foundation
import Testing
@testable import FFmpeg
import MediaCore

@Suite struct FFmpegWrapperTests {
    private func paint(_ frame: Frame, y: UInt8) {
        frame.fill(Rect(x: 0, y: 0, width: frame.width, height: frame.height), y: y, u: 128, v: 128)
    }

    /// swscale's SIMD writes whole vectors past the destination width: the scaler must put
    /// back whatever it clobbers, or neighbouring tiles get a stripe of this one.
    @Test(arguments: [(10, 10, 46, 30), (2, 4, 14, 10), (64, 0, 62, 64), (0, 20, 126, 2)])
    func scalingTouchesOnlyTheDestination(x: Int, y: Int, width: Int, height: Int) throws {
        let canvas = try Frame(yuv420Width: 128, height: 64)
        paint(canvas, y: 200)
        let source = try Frame(yuv420Width: 36, height: 20)
        paint(source, y: 50)
        let destination = Rect(x: x, y: y, width: width, height: height)
        try TileScaler().scale(source, crop: Rect(x: 0, y: 0, width: 36, height: 20), into: canvas, destination: destination)
        var outside = 0, inside = 0
        for row in 0..<64 {
            for column in 0..<128 {
                let luma = canvas.yuv(atX: column, y: row).y
                let isInside = column >= x && column < x + width && row >= y && row < y + height
                if isInside { if abs(Int(luma) - 50) <= 2 { inside += 1 } } else if luma != 200 { outside += 1 }
            }
        }
        #expect(outside == 0, "\(outside) pixels outside \(destination) changed")
        #expect(inside == width * height)
    }

    /// The crop picks the source's pixels, luma and chroma, enlarged (32 → 64), shrunk
    /// (32 → 16) or both (32x32 → 64x16).
    @Test(arguments: [(64, 64), (16, 16), (64, 16)])
    func cropSelectsTheSourcePixels(width: Int, height: Int) throws {
        let source = try Frame(yuv420Width: 64, height: 32)
        source.fill(Rect(x: 0, y: 0, width: 32, height: 32), y: 50, u: 100, v: 100)
        source.fill(Rect(x: 32, y: 0, width: 32, height: 32), y: 150, u: 160, v: 170)
        let canvas = try Frame(yuv420Width: 128, height: 96)
        paint(canvas, y: 200)
        let destination = Rect(x: 10, y: 4, width: width, height: height)
        try TileScaler().scale(source, crop: Rect(x: 32, y: 0, width: 32, height: 32), into: canvas, destination: destination)
        var wrong: [String] = []
        for row in stride(from: destination.y, to: destination.y + height, by: 1) {
            for column in stride(from: destination.x, to: destination.x + width, by: 1) {
                let p = canvas.yuv(atX: column, y: row)
                if abs(Int(p.y) - 150) > 1 || abs(Int(p.u) - 160) > 1 || abs(Int(p.v) - 170) > 1 { wrong.append("(\(column),\(row)): \(p)") }
            }
        }
        let wrongCount = wrong.count
        #expect(wrongCount == 0, "pixels that are not the crop's: \(wrong.prefix(5))")
    }

    /// How much of a cosine `cycles` per output pixel a downscale keeps, for the (a) grid's
    /// real tile (1280x719 -> 638x358, 2.006:1), across (`vertical` false) or down. Up to 0.5
    /// the tile can show it, and a sharp scaler keeps most of it; above 0.5 it cannot, and
    /// whatever is kept comes out as a false, coarser pattern (aliasing). The amplitude is
    /// fitted over the whole tile, so rounding and the filter's phases average out.
    private func kept(cycles: Double, vertical: Bool) throws -> Double {
        let (sourceWidth, sourceHeight, tileWidth, tileHeight) = (1280, 719, 638, 358)
        let source = try Frame(yuv420Width: sourceWidth, height: sourceHeight + 1)
        paint(source, y: 0)
        let along = vertical ? sourceHeight : sourceWidth
        let outAlong = vertical ? tileHeight : tileWidth
        let perSourcePixel = cycles * Double(outAlong) / Double(along)
        let wave: [UInt8] = (0..<along).map { index in
            let phase = 2 * Double.pi * perSourcePixel * (Double(index) + 0.5)
            return UInt8((128 + 100 * cos(phase)).rounded())
        }
        let planes = source.yuvPlanes
        for row in 0..<sourceHeight {
            for column in 0..<sourceWidth { planes.y[row * planes.yStride + column] = wave[vertical ? row : column] }
        }
        let canvas = try Frame(yuv420Width: tileWidth, height: tileHeight)
        try TileScaler().scale(source, crop: Rect(x: 0, y: 0, width: sourceWidth, height: sourceHeight),
                               into: canvas, destination: Rect(x: 0, y: 0, width: tileWidth, height: tileHeight))
        // Least squares of the tile's mean profile against cos and sin at the source's phases.
        var profile = [Double](repeating: 0, count: outAlong)
        for row in 0..<tileHeight {
            for column in 0..<tileWidth { profile[vertical ? row : column] += Double(canvas.yuv(atX: column, y: row).y) }
        }
        let across = Double(vertical ? tileWidth : tileHeight)
        profile = profile.map { $0 / across }
        let mean = profile.reduce(0, +) / Double(outAlong)
        var (cc, ss, cs, pc, ps) = (0.0, 0.0, 0.0, 0.0, 0.0)
        for (index, level) in profile.enumerated() {
            let centre: Double = (Double(index) + 0.5) * Double(along) / Double(outAlong)
            let phase: Double = 2 * Double.pi * perSourcePixel * centre
            let value = level - mean
            cc += cos(phase) * cos(phase); ss += sin(phase) * sin(phase); cs += cos(phase) * sin(phase)
            pc += value * cos(phase); ps += value * sin(phase)
        }
        let determinant = cc * ss - cs * cs
        let a = (pc * ss - ps * cs) / determinant, b = (ps * cc - pc * cs) / determinant
        return (a * a + b * b).squareRoot() / 100
    }

    /// The tile scaler keeps the detail a tile can show and drops what it cannot, at the
    /// grid's 2.006:1 in both directions. swscale's raised-cosine filter (SWS_X) keeps 0.79 of
    /// a 0.3-cycle pattern and lets 0.12 of a 0.8-cycle one through as aliasing; its bilinear
    /// blurs (0.74 kept), its area averaging aliases (0.18 through).
    @Test(arguments: [false, true])
    func downscaleKeepsDetailAndDropsAliasing(vertical: Bool) throws {
        let detail = try kept(cycles: 0.3, vertical: vertical)
        let aliasing = try kept(cycles: 0.8, vertical: vertical)
        #expect(detail >= 0.76, "a 0.3-cycle pattern kept at \(detail) of its amplitude")
        #expect(aliasing <= 0.15, "a 0.8-cycle pattern let through at \(aliasing) of its amplitude")
    }

    @Test func rotationMovesPixelsClockwise() throws {
        // 4x2 luma:  0 1 2 3 / 4 5 6 7  →  90° clockwise (2x4):  4 0 / 5 1 / 6 2 / 7 3
        let source = try Frame(yuv420Width: 4, height: 2)
        paint(source, y: 0)
        let planes = source.yuvPlanes
        for i in 0..<8 { planes.y[(i / 4) * planes.yStride + i % 4] = UInt8(i) }
        let target = Frame()
        try source.rotated(clockwiseQuarterTurns: 1, into: target)
        #expect(target.width == 2 && target.height == 4)
        let expected: [[UInt8]] = [[4, 0], [5, 1], [6, 2], [7, 3]]
        for (row, values) in expected.enumerated() {
            #expect(values.enumerated().map { target.yuv(atX: $0.offset, y: row).y } == values)
        }
        try source.rotated(clockwiseQuarterTurns: 2, into: target)
        #expect(target.yuv(atX: 0, y: 0).y == 7 && target.yuv(atX: 3, y: 1).y == 0)
        try source.rotated(clockwiseQuarterTurns: 3, into: target)
        #expect(target.yuv(atX: 0, y: 0).y == 3 && target.yuv(atX: 1, y: 3).y == 4)
    }

    @Test func garbageInputIsAnErrorNotACrash() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("garbage-\(getpid()).mp4")
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761) }).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(throws: FFmpegError.self) { _ = try Demuxer(url: url.path) }
        #expect(throws: FFmpegError.self) { _ = try Demuxer(url: "/nonexistent/\(getpid()).mkv") }
    }

    @Test func errorKindsComeFromTheCode() {
        #expect(FFmpegError.kind(of: AVERROR_INVALIDDATA_VALUE) == .invalidData)
        #expect(FFmpegError.kind(of: AVERROR_DECODER_NOT_FOUND_VALUE) == .unsupported)
        #expect(FFmpegError.kind(of: -111) == .io) // ECONNREFUSED
        #expect(FFmpegError(code: AVERROR_INVALIDDATA_VALUE, operation: "read").message.contains("Invalid data"))
    }
}
