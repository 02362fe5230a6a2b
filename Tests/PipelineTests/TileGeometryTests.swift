// TileGeometry.place for every fill mode over a spread of source and tile shapes: results
// even where chroma needs it, inside the source/tile, aspect kept within a pixel.
import Layout
@testable import Pipeline
import Testing
import MediaCore

private let sources: [PixelSize] = [
    PixelSize(width: 320, height: 180), PixelSize(width: 1920, height: 1080), PixelSize(width: 180, height: 320),
    PixelSize(width: 640, height: 480), PixelSize(width: 317, height: 181), PixelSize(width: 1080, height: 1920),
    PixelSize(width: 2, height: 2), PixelSize(width: 1000, height: 10), PixelSize(width: 10, height: 1000),
    PixelSize(width: 480, height: 270), PixelSize(width: 333, height: 333),
]
private let tiles: [Rect] = [
    Rect(x: 0, y: 0, width: 320, height: 180), Rect(x: 160, y: 0, width: 158, height: 180),
    Rect(x: 0, y: 90, width: 1280, height: 720), Rect(x: 2, y: 4, width: 200, height: 100),
    Rect(x: 10, y: 20, width: 96, height: 128), Rect(x: 0, y: 0, width: 2, height: 2),
    Rect(x: 100, y: 100, width: 638, height: 358), Rect(x: 0, y: 0, width: 1920, height: 1080),
]

private func isEven(_ value: Int) -> Bool { value % 2 == 0 }

private func within(_ rect: Rect, _ size: PixelSize) -> Bool {
    rect.x >= 0 && rect.y >= 0 && rect.width > 0 && rect.height > 0 && rect.maxX <= size.width && rect.maxY <= size.height
}

struct TileGeometryTests {
    @Test("FILL: the whole source stretched over the whole tile", arguments: sources)
    func fill(source: PixelSize) throws {
        for tile in tiles {
            let placement = try #require(TileGeometry.place(source: source, in: tile, mode: .fill))
            #expect(placement.destination == tile)
            #expect(placement.crop == Rect(x: 0, y: 0, width: source.width, height: source.height))
        }
    }

    @Test("COVER: the tile filled, the source cropped (centred, even origin) to the tile's aspect", arguments: sources)
    func cover(source: PixelSize) throws {
        for tile in tiles {
            let placement = try #require(TileGeometry.place(source: source, in: tile, mode: .cover))
            let crop = placement.crop
            #expect(placement.destination == tile)
            #expect(within(crop, source), "crop \(crop) outside \(source)")
            #expect(isEven(crop.x) && isEven(crop.y), "crop origin \(crop) not even")
            // Centred: the margins left/right (top/bottom) differ by at most 2 (even origin).
            #expect(abs(crop.x - (source.width - crop.maxX)) <= 2, "crop \(crop) of \(source) not centred")
            #expect(abs(crop.y - (source.height - crop.maxY)) <= 2, "crop \(crop) of \(source) not centred")
            // Aspect: the crop's width for its height matches the tile's aspect within 1 px
            // (or the crop is the full side it could not exceed).
            let wantWidth = Double(crop.height) * Double(tile.width) / Double(tile.height)
            let wantHeight = Double(crop.width) * Double(tile.height) / Double(tile.width)
            let keepsAspect = abs(Double(crop.width) - wantWidth) <= 1 || abs(Double(crop.height) - wantHeight) <= 1
            #expect(keepsAspect || crop.width == 2 || crop.height == 2,
                    "crop \(crop) of \(source) for tile \(tile): width \(crop.width) vs \(wantWidth)")
            // Nothing cropped that need not be: one side is the full source side.
            #expect(crop.width >= source.width - 1 || crop.height >= source.height - 1, "crop \(crop) of \(source) crops both sides")
        }
    }

    @Test("CONTAIN: the whole source letterboxed inside the tile, even, centred, aspect within 1 px", arguments: sources)
    func contain(source: PixelSize) throws {
        for tile in tiles {
            let placement = try #require(TileGeometry.place(source: source, in: tile, mode: .contain))
            let destination = placement.destination
            #expect(placement.crop == Rect(x: 0, y: 0, width: source.width, height: source.height))
            #expect(tile.contains(destination), "destination \(destination) outside tile \(tile)")
            #expect([destination.x, destination.y, destination.width, destination.height].allSatisfy(isEven),
                    "destination \(destination) not even")
            #expect(destination.width == tile.width || destination.height == tile.height,
                    "destination \(destination) touches neither side of \(tile)")
            #expect(abs((destination.x - tile.x) - (tile.maxX - destination.maxX)) <= 2, "not centred: \(destination) in \(tile)")
            #expect(abs((destination.y - tile.y) - (tile.maxY - destination.maxY)) <= 2, "not centred: \(destination) in \(tile)")
            guard destination.width > 2, destination.height > 2 else { continue } // clamped to the 2 px minimum
            let wantHeight = Double(destination.width) * Double(source.height) / Double(source.width)
            let wantWidth = Double(destination.height) * Double(source.width) / Double(source.height)
            let error = destination.width == tile.width ? abs(Double(destination.height) - wantHeight)
                                                        : abs(Double(destination.width) - wantWidth)
            #expect(error <= 1, "\(source) in \(tile): destination \(destination) is \(error) px off the source aspect")
        }
    }

    @Test("same aspect: no crop, no letterbox")
    func sameAspect() throws {
        let tile = Rect(x: 0, y: 0, width: 640, height: 360)
        let source = PixelSize(width: 1280, height: 720)
        for mode in VideoFillMode.allCases {
            let placement = try #require(TileGeometry.place(source: source, in: tile, mode: mode))
            #expect(placement.crop == Rect(x: 0, y: 0, width: 1280, height: 720))
            #expect(placement.destination == tile)
        }
    }

    @Test("exact values: 16:9 into a 4:3 tile")
    func exactValues() throws {
        let tile = Rect(x: 0, y: 0, width: 400, height: 300)
        let source = PixelSize(width: 1920, height: 1080)
        let cover = try #require(TileGeometry.place(source: source, in: tile, mode: .cover))
        #expect(cover.crop == Rect(x: 240, y: 0, width: 1440, height: 1080))
        let contain = try #require(TileGeometry.place(source: source, in: tile, mode: .contain))
        #expect(contain.destination == Rect(x: 0, y: 36, width: 400, height: 226)) // 225 exact: a tie, rounded up
    }

    @Test("odd source sizes keep their last column/row when uncropped")
    func oddSource() throws {
        let source = PixelSize(width: 317, height: 181)
        let fill = try #require(TileGeometry.place(source: source, in: Rect(x: 0, y: 0, width: 320, height: 180), mode: .fill))
        #expect(fill.crop == Rect(x: 0, y: 0, width: 317, height: 181))
    }

    @Test("degenerate sizes: nothing to place")
    func degenerate() {
        let tile = Rect(x: 0, y: 0, width: 100, height: 100)
        for mode in VideoFillMode.allCases {
            #expect(TileGeometry.place(source: PixelSize(width: 0, height: 0), in: tile, mode: mode) == nil)
            #expect(TileGeometry.place(source: PixelSize(width: 1, height: 100), in: tile, mode: mode) == nil)
            #expect(TileGeometry.place(source: PixelSize(width: 100, height: 100), in: Rect(x: 0, y: 0, width: 0, height: 10), mode: mode) == nil)
        }
    }
}

struct DrawnSizeTests {
    @Test("the size a tile draws a picture at, for choosing a simulcast layer")
    func examples() {
        let hd = PixelSize(width: 1280, height: 720)
        func drawn(_ tile: Rect, _ mode: VideoFillMode, source: PixelSize = hd) -> PixelSize {
            TileGeometry.drawnSize(of: source, in: tile, mode: mode)
        }
        // A 12-person 1080p grid's tile, same aspect: the tile's size in every mode.
        for mode in VideoFillMode.allCases {
            #expect(drawn(Rect(x: 0, y: 0, width: 480, height: 270), mode) == PixelSize(width: 480, height: 270))
        }
        // A square tile: COVER crops the sides, so the picture must be 640 high; CONTAIN
        // letterboxes it at 640 wide; FILL squeezes the width and needs the height.
        let square = Rect(x: 0, y: 0, width: 640, height: 640)
        #expect(drawn(square, .cover) == PixelSize(width: 1138, height: 640))
        #expect(drawn(square, .contain) == PixelSize(width: 640, height: 360))
        #expect(drawn(square, .fill) == PixelSize(width: 1138, height: 640))
        // The same need whichever layer is in use (the layer changes, the tile does not).
        let half = PixelSize(width: 640, height: 360)
        #expect(drawn(Rect(x: 0, y: 0, width: 480, height: 270), .cover, source: half) == PixelSize(width: 480, height: 270))
        #expect(drawn(square, .contain, source: half) == PixelSize(width: 640, height: 360))
        // A tile a little under a layer's size is covered by that layer.
        #expect(drawn(Rect(x: 0, y: 0, width: 638, height: 358), .cover) == PixelSize(width: 638, height: 359))
    }

    @Test("a picture of the drawn size is never scaled up into its tile, and is the least such: one side is the tile's", arguments: sources)
    func neverUpscaled(source: PixelSize) throws {
        for tile in tiles {
            for mode in VideoFillMode.allCases {
                guard TileGeometry.place(source: source, in: tile, mode: mode) != nil else { continue }
                let size = TileGeometry.drawnSize(of: source, in: tile, mode: mode)
                #expect(size.width == tile.width || size.height == tile.height, "\(source) in \(tile) \(mode): \(size)")
                // CONTAIN fits the picture inside the tile; COVER and FILL reach past both sides.
                if mode == .contain {
                    #expect(size.width <= tile.width && size.height <= tile.height + 1, "\(source) in \(tile) contain: \(size)")
                } else {
                    #expect(size.width >= tile.width && size.height >= tile.height, "\(source) in \(tile) \(mode): \(size)")
                }
                guard size.width >= 2, size.height >= 2 else { continue }   // too thin to place at all
                let needed = try #require(TileGeometry.place(source: size, in: tile, mode: mode))
                // Even crops and destinations move edges by up to 2 px.
                #expect(needed.crop.width + 2 >= needed.destination.width && needed.crop.height + 2 >= needed.destination.height,
                        "\(source) in \(tile) \(mode): drawn \(size), crop \(needed.crop) for \(needed.destination)")
                // The aspect is kept (within the rounding up of one side).
                #expect(abs(size.width * source.height - size.height * source.width) <= max(source.width, source.height),
                        "\(source) in \(tile) \(mode): \(size) changes the aspect")
            }
        }
    }
}
