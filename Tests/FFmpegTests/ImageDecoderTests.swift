import Foundation
import Testing
@testable import FFmpeg
import MediaCore
import TestSupport

@Suite struct ImageDecoderTests {
    static let limits = (side: 4096, pixels: 4096 * 4096)

    @Test func pngAlphaIsKeptAndColourPremultiplied() throws {
        let png = TestPNG.rgba(width: 200, height: 80) { x, _ in [255, 128, 0, UInt8(x * 255 / 199)] }
        let bitmap = try ImageDecoder.decode(png, maxSide: Self.limits.side, maxPixels: Self.limits.pixels)
        #expect(bitmap.width == 200 && bitmap.height == 80)
        for x in [0, 1, 50, 100, 199] {
            let a = x * 255 / 199
            let p = bitmap.pixel(x: x, y: 40)
            #expect(Int(p.a) == a)
            #expect(abs(Int(p.r) - (255 * a + 127) / 255) <= 1 && abs(Int(p.g) - (128 * a + 127) / 255) <= 1 && p.b == 0)
        }
    }

    @Test func jpegDecodesToItsColour() throws {
        let frame = try Frame(yuv420Width: 64, height: 32)
        let grey = YUVColorSample.grey
        frame.fill(Rect(x: 0, y: 0, width: 64, height: 32), y: grey.y, u: 128, v: 128)
        let jpeg = try JPEGEncoder(width: 64, height: 32, quality: 2).encode(frame)
        let bitmap = try ImageDecoder.decode(jpeg, maxSide: Self.limits.side, maxPixels: Self.limits.pixels)
        #expect(bitmap.width == 64 && bitmap.height == 32)
        let p = bitmap.pixel(x: 30, y: 15)
        // Y' 126 limited range is RGB (126 - 16) * 255 / 219 = 128.
        #expect(p.a == 255 && abs(Int(p.r) - 128) <= 3 && abs(Int(p.g) - 128) <= 3)
    }

    @Test func hugeImagesAreRefusedFromTheirHeaderBeforeDecoding() throws {
        // A 20000x20000 PNG header with no pixel data: refused by size, not by decoding.
        let header = TestPNG.bigEndian(20000) + TestPNG.bigEndian(20000) + [8, 6, 0, 0, 0]
        let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + TestPNG.chunk("IHDR", header) + TestPNG.chunk("IEND", [])
        let error = #expect(throws: FFmpegError.self) { try ImageDecoder.decode(png, maxSide: 4096, maxPixels: 4096 * 4096) }
        #expect(error?.message.contains("20000x20000") == true)
        // Within the side but over the pixel count.
        let wide = TestPNG.rgba(width: 64, height: 64) { _, _ in [0, 0, 0, 255] }
        #expect(throws: FFmpegError.self) { try ImageDecoder.decode(wide, maxSide: 4096, maxPixels: 1000) }
    }

    @Test func truncatedAndForeignFilesAreRefused() throws {
        let frame = try Frame(yuv420Width: 64, height: 32)
        frame.fill(Rect(x: 0, y: 0, width: 64, height: 32), y: 80, u: 90, v: 200)
        let jpeg = try JPEGEncoder(width: 64, height: 32).encode(frame)
        // Cut in its scan: the picture would come out half grey.
        let cut = Array(jpeg.prefix(jpeg.count - 12))
        let jpegError = #expect(throws: FFmpegError.self) { try ImageDecoder.decode(cut, maxSide: 4096, maxPixels: 1 << 24) }
        #expect(jpegError?.message.contains("truncated") == true, "\(String(describing: jpegError))")
        // Cut in its tables, before the frame header.
        #expect(throws: FFmpegError.self) { try ImageDecoder.decode(Array(jpeg.prefix(jpeg.count / 3)), maxSide: 4096, maxPixels: 1 << 24) }
        let png = TestPNG.rgba(width: 16, height: 16) { _, _ in [1, 2, 3, 4] }
        #expect(throws: FFmpegError.self) { try ImageDecoder.decode(Array(png.prefix(png.count - 20)), maxSide: 4096, maxPixels: 1 << 24) }
        // A damaged IDAT (bytes flipped inside the compressed data, IEND intact).
        var damaged = png
        for i in 60..<90 { damaged[i] ^= 0x5A }
        #expect(throws: FFmpegError.self) { try ImageDecoder.decode(damaged, maxSide: 4096, maxPixels: 1 << 24) }
        let notImage = #expect(throws: FFmpegError.self) { try ImageDecoder.decode(Array("GIF89a....".utf8), maxSide: 4096, maxPixels: 1 << 24) }
        #expect(notImage?.message.contains("not a PNG or JPEG") == true)
        #expect(throws: FFmpegError.self) { try ImageDecoder.decode([], maxSide: 4096, maxPixels: 1 << 24) }
    }

    /// Generated garbage after a valid signature never traps.
    @Test func randomBytesAfterASignatureAreRefusedOrDecodedNeverTrapped() {
        var state: UInt64 = 0x5EED
        for round in 0..<300 {
            var bytes: [UInt8] = round % 2 == 0 ? [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] : [0xFF, 0xD8, 0xFF]
            for _ in 0..<(round % 97 + 1) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(UInt8(truncatingIfNeeded: state >> 33))
            }
            _ = try? ImageDecoder.decode(bytes, maxSide: 256, maxPixels: 256 * 256)
        }
    }

    @Test func scalingKeepsColourUnderAlpha() throws {
        let bitmap = RGBABitmap(width: 4, height: 4, pixels: (0..<16).flatMap { i in i % 2 == 0 ? [200, 100, 50, 200] : [0, 0, 0, 0] as [UInt8] })
        let scaled = try ImageDecoder.scale(bitmap, width: 9, height: 7)
        #expect(scaled.width == 9 && scaled.height == 7)
        for y in 0..<7 { for x in 0..<9 { let p = scaled.pixel(x: x, y: y); #expect(p.r <= p.a && p.g <= p.a && p.b <= p.a) } }
    }
}

private enum YUVColorSample {
    static let grey = (y: UInt8(126), u: UInt8(128))
}
