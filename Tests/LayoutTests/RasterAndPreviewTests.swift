import Testing
import TestSupport
@testable import Layout
import MediaCore

/// A YUV 4:2:0 frame owned by the test, with a sentinel-filled margin to catch overdraw.
final class TestFrame {
    let width: Int, height: Int
    var y: [UInt8], u: [UInt8], v: [UInt8]

    init(width: Int, height: Int, fill: YUVColor = YUVColor(y: 1, u: 2, v: 3)) {
        self.width = width
        self.height = height
        y = [UInt8](repeating: fill.y, count: width * height)
        u = [UInt8](repeating: fill.u, count: ((width + 1) / 2) * ((height + 1) / 2))
        v = [UInt8](repeating: fill.v, count: ((width + 1) / 2) * ((height + 1) / 2))
    }

    func draw(_ body: (PlanarYUV420) -> Void) {
        let chromaStride = (width + 1) / 2
        y.withUnsafeMutableBufferPointer { yb in
            u.withUnsafeMutableBufferPointer { ub in
                v.withUnsafeMutableBufferPointer { vb in
                    body(PlanarYUV420(yPlane: yb.baseAddress!, uPlane: ub.baseAddress!, vPlane: vb.baseAddress!,
                                      yStride: width, uStride: chromaStride, vStride: chromaStride,
                                      width: width, height: height))
                }
            }
        }
    }

    func luma(_ x: Int, _ row: Int) -> UInt8 { y[row * width + x] }
    func chroma(_ x: Int, _ row: Int) -> (UInt8, UInt8) {
        let index = (row / 2) * ((width + 1) / 2) + x / 2
        return (u[index], v[index])
    }
}

@Suite struct RasterTests {
    @Test func fillRectClipsAndCoversChroma() {
        let frame = TestFrame(width: 10, height: 8)
        let red = YUVColor(y: 81, u: 90, v: 240)
        frame.draw { YUVRaster.fillRect(into: $0, rect: Rect(x: 6, y: -2, width: 10, height: 6), color: red) }
        for row in 0..<8 {
            for x in 0..<10 {
                let inside = x >= 6 && row < 4
                #expect(frame.luma(x, row) == (inside ? 81 : 1), "luma \(x),\(row)")
                #expect(frame.chroma(x, row) == (inside ? (90, 240) : (2, 3)), "chroma \(x),\(row)")
            }
        }
        frame.draw { YUVRaster.fillRect(into: $0, rect: Rect(x: 20, y: 0, width: 4, height: 4), color: red) }
        #expect(frame.y.filter { $0 == 81 }.count == 16)
    }

    @Test func cameraOffTileStaysInsideItsRectAndDrawsIconAndLabel() {
        let frame = TestFrame(width: 200, height: 140)
        let rect = Rect(x: 20, y: 10, width: 160, height: 90)
        frame.draw { CameraOffTile.draw(into: $0, rect: rect, label: "alice") }
        var icon = 0, label = 0
        for row in 0..<140 {
            for x in 0..<200 {
                let inside = rect.contains(Rect(x: x, y: row, width: 1, height: 1))
                let luma = frame.luma(x, row)
                if !inside {
                    #expect(luma == 1, "overdraw at \(x),\(row)")
                    continue
                }
                #expect(frame.chroma(x, row) == (128, 128), "camera-off is neutral grey")
                #expect([CameraOffTile.background.y, CameraOffTile.iconLuma, CameraOffTile.labelLuma].contains(luma))
                if luma == CameraOffTile.iconLuma { icon += 1 }
                if luma == CameraOffTile.labelLuma { label += 1 }
            }
        }
        #expect(frame.luma(20, 10) == CameraOffTile.background.y)
        #expect(frame.luma(179, 99) == CameraOffTile.background.y)
        #expect(icon > 300, "camera icon drawn (\(icon) px)")
        #expect(label > 40, "label drawn (\(label) px)")
        // The label is below the icon: label pixels only in the lower part of the tile.
        let firstLabelRow = (10..<100).first { row in (20..<180).contains { frame.luma($0, row) == CameraOffTile.labelLuma } }
        #expect(firstLabelRow.map { $0 > 10 + 45 } == true)
    }

    @Test func longLabelsFallBackToTheInitialAndTinyTilesToNothing() {
        #expect(CameraOffTile.fittingLabel("alice", width: 100) == "alice")
        #expect(CameraOffTile.fittingLabel("a-very-long-user-identifier", width: 40) == "a")
        #expect(CameraOffTile.fittingLabel("alice", width: 4) == nil)
        #expect(CameraOffTile.fittingLabel("", width: 100) == nil)
        // A 6x6 tile is just the background, without crashing or overdrawing.
        let frame = TestFrame(width: 8, height: 8)
        frame.draw { CameraOffTile.draw(into: $0, rect: Rect(x: 2, y: 2, width: 6, height: 6), label: "bob") }
        #expect(frame.luma(4, 4) == CameraOffTile.background.y)
        #expect(frame.luma(0, 0) == 1)
    }

    @Test func textUsesTheBitmapFont() {
        let frame = TestFrame(width: 20, height: 10, fill: .black)
        frame.draw {
            YUVRaster.drawText(into: $0, text: "T", origin: (x: 0, y: 0), scale: 1, color: .white,
                               clip: Rect(x: 0, y: 0, width: 20, height: 10), lumaOnly: true)
        }
        // 'T': a full top bar and a centre stem.
        #expect((0..<5).allSatisfy { frame.luma($0, 0) == 235 })
        #expect((1..<7).allSatisfy { frame.luma(2, $0) == 235 && frame.luma(0, $0) == 16 })
        #expect(YUVRaster.textSize("P12", scale: 2) == PixelSize(width: 34, height: 14))
        // Lowercase shares uppercase glyphs; unknown characters draw as '?'.
        #expect(BitmapFont.glyphOffset(UInt8(ascii: "t")) != BitmapFont.glyphOffset(UInt8(ascii: "?")))
        #expect(BitmapFont.glyphOffset(UInt8(ascii: "~")) == BitmapFont.glyphOffset(UInt8(ascii: "?")))
        #expect(BitmapFont.glyphOffset(0xC3) == BitmapFont.glyphOffset(UInt8(ascii: "?")))
    }

    @Test func yuvRoundTripKeepsPaletteColours() {
        for rgb in LayoutPreview.palette {
            let color = YUVColor(red: rgb.red, green: rgb.green, blue: rgb.blue)
            let back = LayoutPreview.convertToRGB(y: [color.y], u: [color.u], v: [color.v], width: 1, height: 1)
            #expect(abs(Int(back[0]) - Int(rgb.red)) <= 4 && abs(Int(back[1]) - Int(rgb.green)) <= 4
                && abs(Int(back[2]) - Int(rgb.blue)) <= 4, "\(rgb) -> \(back)")
        }
    }
}

@Suite struct PNGTests {
    struct Chunk { var type: String; var data: [UInt8]; var crc: UInt32 }

    static func chunks(_ png: [UInt8]) -> [Chunk] {
        var chunks: [Chunk] = []
        var offset = 8
        func be32(_ at: Int) -> UInt32 { png[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        while offset + 12 <= png.count {
            let length = Int(be32(offset))
            let type = String(decoding: png[(offset + 4)..<(offset + 8)], as: UTF8.self)
            let data = Array(png[(offset + 8)..<(offset + 8 + length)])
            chunks.append(Chunk(type: type, data: data, crc: be32(offset + 8 + length)))
            offset += 12 + length
        }
        return chunks
    }

    @Test func structureSignatureHeaderAndChecksums() throws {
        let participants = LayoutPreview.sampleParticipants(count: 3, stopped: [3], configuration: .defaultGrid)
        let png = LayoutPreview.renderPNG(configuration: .defaultGrid, canvas: PixelSize(width: 481, height: 270),
                                          participants: participants)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let chunks = Self.chunks(png)
        #expect(chunks.map(\.type) == ["IHDR", "IDAT", "IEND"])
        #expect(chunks[0].data == [0, 0, 0x01, 0xE0, 0, 0, 0x01, 0x0E, 8, 2, 0, 0, 0]) // 480x270, 8-bit RGB
        for chunk in chunks {
            #expect(CRC32.checksum(Array(chunk.type.utf8) + chunk.data) == chunk.crc, "CRC of \(chunk.type)")
        }
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926) // the standard check value
        #expect(Adler32.checksum(Array("Wikipedia".utf8)) == 0x11E6_0398)
        #expect(png.count < 40_000, "flat previews compress well (\(png.count) bytes)")
    }

    @Test func pixelsDecodeToThePaletteAndCameraOff() throws {
        let configuration = LayoutConfiguration.defaultGrid
        let participants = LayoutPreview.sampleParticipants(count: 2, stopped: [2], configuration: configuration)
        let canvas = PixelSize(width: 320, height: 180)
        let png = LayoutPreview.renderPNG(configuration: configuration, canvas: canvas, participants: participants)
        let idat = Self.chunks(png).filter { $0.type == "IDAT" }.flatMap(\.data)
        let raw = try Inflater.zlibDecompress(idat)
        #expect(raw.count == (320 * 3 + 1) * 180)
        func pixel(_ x: Int, _ y: Int) -> [Int] {
            let offset = y * (320 * 3 + 1) + 1 + x * 3
            return raw[offset..<(offset + 3)].map(Int.init)
        }
        let tiles = configuration.makeEngine().tiles(canvas: canvas, participants: participants)
        let first = tiles.tile("p1")!.rect, second = tiles.tile("p2")!.rect
        // P1 is red near its corner; P2 (camera off) is dark grey; the gap is black.
        let red = pixel(first.x + 2, first.y + 2)
        #expect(red[0] > 200 && red[1] < 60 && red[2] < 60, "\(red)")
        let grey = pixel(second.x + 1, second.y + 1)
        #expect(abs(grey[0] - grey[1]) <= 2 && grey[0] > 25 && grey[0] < 50, "\(grey)")
        #expect(pixel(first.maxX, first.y + 2) == [0, 0, 0])
        #expect(pixel(0, 0) == [0, 0, 0])
    }

    @Test func deflateRoundTripsArbitraryData() throws {
        var rng = SeededGenerator(seed: 7)
        var data = (0..<5000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        data += [UInt8](repeating: 9, count: 70_000) + data.prefix(700) + Array(data[100..<3000])
        let compressed = Zlib.compress(data, pixelBytes: 3, rowBytes: 1000)
        #expect(try Inflater.zlibDecompress(compressed) == data)
        #expect(compressed.count < data.count / 4)
    }
}

/// Minimal RFC 1950/1951 decoder for stored and fixed-Huffman blocks (what PNGEncoder
/// writes), so the tests check pixels instead of trusting the encoder.
enum Inflater {
    struct Failure: Error { var reason: String }

    static func zlibDecompress(_ stream: [UInt8]) throws -> [UInt8] {
        guard stream.count >= 6, (Int(stream[0]) << 8 | Int(stream[1])) % 31 == 0, stream[0] & 0x0F == 8 else {
            throw Failure(reason: "bad zlib header")
        }
        var reader = BitReader(bytes: stream, position: 2)
        var out: [UInt8] = []
        var final = false
        while !final {
            final = try reader.bits(1) == 1
            switch try reader.bits(2) {
            case 0:
                reader.alignToByte()
                let length = try reader.bits(16), complement = try reader.bits(16)
                guard length ^ 0xFFFF == complement else { throw Failure(reason: "stored length") }
                for _ in 0..<length { out.append(UInt8(try reader.bits(8))) }
            case 1:
                while true {
                    let symbol = try fixedLiteral(&reader)
                    if symbol < 256 { out.append(UInt8(symbol)); continue }
                    if symbol == 256 { break }
                    let index = symbol - 257
                    let length = Deflate.lengthBases[index] + (try reader.bits(Deflate.lengthExtraBits[index]))
                    var code = 0
                    for _ in 0..<5 { code = code << 1 | (try reader.bits(1)) }
                    let distance = Deflate.distanceBases[code] + (try reader.bits(Deflate.distanceExtraBits[code]))
                    guard distance <= out.count else { throw Failure(reason: "distance too far") }
                    for _ in 0..<length { out.append(out[out.count - distance]) }
                }
            default:
                throw Failure(reason: "unsupported block type")
            }
        }
        reader.alignToByte()
        let trailer = try (0..<4).reduce(UInt32(0)) { value, _ in value << 8 | UInt32(try reader.bits(8)) }
        guard trailer == Adler32.checksum(out) else { throw Failure(reason: "Adler-32 mismatch") }
        return out
    }

    static func fixedLiteral(_ reader: inout BitReader) throws -> Int {
        var code = 0
        for _ in 0..<7 { code = code << 1 | (try reader.bits(1)) }
        if code <= 0b0010111 { return 256 + code }
        code = code << 1 | (try reader.bits(1))
        if (0x30...0xBF).contains(code) { return code - 0x30 }
        if (0xC0...0xC7).contains(code) { return 280 + code - 0xC0 }
        code = code << 1 | (try reader.bits(1))
        if (0x190...0x1FF).contains(code) { return 144 + code - 0x190 }
        throw Failure(reason: "bad literal code")
    }

    struct BitReader {
        var bytes: [UInt8]
        var position: Int
        var bit = 0

        mutating func bits(_ count: Int) throws -> Int {
            var value = 0
            for index in 0..<count {
                guard position < bytes.count else { throw Failure(reason: "truncated") }
                value |= Int((bytes[position] >> bit) & 1) << index
                bit += 1
                if bit == 8 { bit = 0; position += 1 }
            }
            return value
        }

        mutating func alignToByte() {
            if bit != 0 { bit = 0; position += 1 }
        }
    }
}
