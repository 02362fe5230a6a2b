import Foundation
import Testing
@testable import FFmpeg
import MediaCore

/// PNG files made here (zlib through Foundation is not available on Linux: stored blocks).
enum PNGFile {
    static func crc(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func adler(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        return b << 16 | a
    }

    static func be(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be(UInt32(data.count)) + body + be(crc(body))
    }

    /// An RGBA PNG of straight pixels `rgba(x, y)`.
    static func rgba(width: Int, height: Int, _ pixel: (Int, Int) -> [UInt8]) -> [UInt8] {
        var raw: [UInt8] = []
        for y in 0..<height {
            raw.append(0)
            for x in 0..<width { raw += pixel(x, y) }
        }
        // zlib with stored (uncompressed) deflate blocks.
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65535, raw.count - offset)
            let last: UInt8 = offset + count == raw.count ? 1 : 0
            zlib += [last, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            zlib += raw[offset..<(offset + count)]
            offset += count
        } while offset < raw.count
        zlib += be(adler(raw))
        let header = be(UInt32(width)) + be(UInt32(height)) + [8, 6, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", [])
    }
}

@Suite struct ImageDecoderTests {
    static let limits = (side: 4096, pixels: 4096 * 4096)

    @Test func pngAlphaIsKeptAndColourPremultiplied() throws {
        let png = PNGFile.rgba(width: 200, height: 80) { x, _ in [255, 128, 0, UInt8(x * 255 / 199)] }
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
        let header = PNGFile.be(20000) + PNGFile.be(20000) + [8, 6, 0, 0, 0]
        let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + PNGFile.chunk("IHDR", header) + PNGFile.chunk("IEND", [])
        let error = #expect(throws: FFmpegError.self) { try ImageDecoder.decode(png, maxSide: 4096, maxPixels: 4096 * 4096) }
        #expect(error?.message.contains("20000x20000") == true)
        // Within the side but over the pixel count.
        let wide = PNGFile.rgba(width: 64, height: 64) { _, _ in [0, 0, 0, 255] }
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
        let png = PNGFile.rgba(width: 16, height: 16) { _, _ in [1, 2, 3, 4] }
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
