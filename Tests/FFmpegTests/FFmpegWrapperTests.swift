import Foundation
import Testing
@testable import FFmpeg

@Suite struct FFmpegWrapperTests {
    private func paint(_ frame: Frame, y: UInt8) {
        frame.fill(PixelRect(x: 0, y: 0, width: frame.width, height: frame.height), y: y, u: 128, v: 128)
    }

    /// swscale's SIMD writes whole vectors past the destination width: the scaler must put
    /// back whatever it clobbers, or neighbouring tiles get a stripe of this one.
    @Test(arguments: [(10, 10, 46, 30), (2, 4, 14, 10), (64, 0, 62, 64), (0, 20, 126, 2)])
    func scalingTouchesOnlyTheDestination(x: Int, y: Int, width: Int, height: Int) throws {
        let canvas = try Frame(yuv420Width: 128, height: 64)
        paint(canvas, y: 200)
        let source = try Frame(yuv420Width: 36, height: 20)
        paint(source, y: 50)
        let destination = PixelRect(x: x, y: y, width: width, height: height)
        try TileScaler().scale(source, crop: PixelRect(x: 0, y: 0, width: 36, height: 20), into: canvas, destination: destination)
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
        source.fill(PixelRect(x: 0, y: 0, width: 32, height: 32), y: 50, u: 100, v: 100)
        source.fill(PixelRect(x: 32, y: 0, width: 32, height: 32), y: 150, u: 160, v: 170)
        let canvas = try Frame(yuv420Width: 128, height: 96)
        paint(canvas, y: 200)
        let destination = PixelRect(x: 10, y: 4, width: width, height: height)
        try TileScaler().scale(source, crop: PixelRect(x: 32, y: 0, width: 32, height: 32), into: canvas, destination: destination)
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

    /// A tile scaled down by a whole factor is the mean of each source block it covers (area
    /// averaging, which reads half the taps of swscale's bilinear at the grid's 2:1 and is
    /// sharper: bilinear's triangle spans twice the block). Seeded noise, so any other
    /// weighting misses the block means by far more than rounding.
    @Test(arguments: [2, 4])
    func downscaleAveragesTheCoveredArea(factor: Int) throws {
        let source = try Frame(yuv420Width: 128, height: 64)
        paint(source, y: 0)
        let planes = source.yuvPlanes
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for row in 0..<64 {
            for column in 0..<128 {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                planes.y[row * planes.yStride + column] = UInt8(truncatingIfNeeded: state >> 56)
            }
        }
        let canvas = try Frame(yuv420Width: 128, height: 64)
        paint(canvas, y: 200)
        let destination = PixelRect(x: 0, y: 0, width: 128 / factor, height: 64 / factor)
        try TileScaler().scale(source, crop: PixelRect(x: 0, y: 0, width: 128, height: 64), into: canvas, destination: destination)
        var worst = 0
        for row in 0..<destination.height {
            for column in 0..<destination.width {
                var sum = 0
                for dy in 0..<factor {
                    for dx in 0..<factor { sum += Int(planes.y[(row * factor + dy) * planes.yStride + column * factor + dx]) }
                }
                let mean = Double(sum) / Double(factor * factor)
                worst = max(worst, Int((abs(Double(canvas.yuv(atX: column, y: row).y) - mean)).rounded(.up)))
            }
        }
        #expect(worst <= 1, "an output pixel is \(worst) from the mean of the \(factor)x\(factor) block it covers")
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
