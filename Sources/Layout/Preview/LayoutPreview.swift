/// Renders what a layout does with a set of participants, for docs and `layout preview`.
/// Drawing goes through the compositor's own YUV 4:2:0 code (`YUVRaster`, `CameraOffTile`)
/// and is converted to RGB, so camera-off tiles look exactly as in the output.
///
/// Video tiles are a flat colour per participant (by index in `participants`, from
/// `palette`) labelled "P1", "P2", ...; a tile whose fill mode is CONTAIN shows the
/// letterbox bars in a darker shade around the participant's video aspect.

public import MediaCore

/// What a preview draws besides the tiles (overlays: Pipeline's `OverlayPreview`).
public protocol PreviewDecoration {
    /// Whether it labels tiles (the camera-off tile's own label is then left out).
    var drawsLabels: Bool { get }
    /// Under the tiles, over the whole canvas (`empty`: no tile is shown).
    func drawBackground(into frame: PlanarYUV420, empty: Bool)
    /// Over the tiles.
    func drawForeground(into frame: PlanarYUV420, tiles: [Tile])
}

public enum LayoutPreview {
    /// red, green, blue, yellow, magenta, cyan, orange, purple, teal, pink, lime, brown.
    public static let palette: [(red: UInt8, green: UInt8, blue: UInt8)] = [
        (230, 30, 30), (30, 180, 60), (40, 80, 230), (240, 220, 30), (220, 40, 210), (30, 210, 220),
        (250, 140, 20), (130, 50, 190), (0, 128, 128), (250, 150, 190), (170, 240, 40), (140, 90, 40),
    ]
    public static let backgroundColor = YUVColor.black

    /// The preview label of the participant at `index` (0-based) in the input.
    public static func label(index: Int) -> String { "P\(index + 1)" }

    /// A frame between two layouts: from `from` (with its own sample participants) to the
    /// configuration rendered, `progress` (0...1) of the way, as the compositor glides.
    public struct Transition: Sendable {
        public var from: LayoutConfiguration
        public var fromParticipants: [LayoutParticipant]
        public var progress: Double

        public init(from: LayoutConfiguration, fromParticipants: [LayoutParticipant], progress: Double) {
            self.from = from
            self.fromParticipants = fromParticipants
            self.progress = progress
        }

        /// The frame's tiles, in draw order, with their opacity.
        public func tiles(to configuration: LayoutConfiguration, participants: [LayoutParticipant], canvas: PixelSize) -> [TransitionTile] {
            let transition = LayoutTransition(from: from.makeEngine().tiles(canvas: canvas, participants: fromParticipants),
                                              to: configuration.makeEngine().tiles(canvas: canvas, participants: participants),
                                              start: 0, duration: 1_000_000)
            return transition.tiles(at: Int64((min(1, max(0, progress.isNaN ? 0 : progress)) * 1_000_000).rounded()))
        }
    }

    public static func renderPNG(configuration: LayoutConfiguration, canvas: PixelSize,
                                 participants: [LayoutParticipant], transition: Transition? = nil,
                                 decoration: (any PreviewDecoration)? = nil) -> [UInt8] {
        let width = max(evenFloor(canvas.width), 2), height = max(evenFloor(canvas.height), 2)
        let rgb = renderRGB(configuration: configuration, canvas: PixelSize(width: width, height: height),
                            participants: participants, transition: transition, decoration: decoration)
        return PNGEncoder.encodeRGB(width: width, height: height, rgb: rgb)
    }

    /// The preview as `width * height * 3` RGB bytes (canvas rounded down to even).
    public static func renderRGB(configuration: LayoutConfiguration, canvas: PixelSize,
                                 participants: [LayoutParticipant], transition: Transition? = nil,
                                 decoration: (any PreviewDecoration)? = nil) -> [UInt8] {
        let width = max(evenFloor(canvas.width), 2), height = max(evenFloor(canvas.height), 2)
        let chromaCount = (width / 2) * (height / 2)
        var y = [UInt8](repeating: backgroundColor.y, count: width * height)
        var u = [UInt8](repeating: backgroundColor.u, count: chromaCount)
        var v = [UInt8](repeating: backgroundColor.v, count: chromaCount)
        let tiles = transition?.tiles(to: configuration, participants: participants, canvas: PixelSize(width: width, height: height))
            ?? configuration.makeEngine().tiles(canvas: PixelSize(width: width, height: height), participants: participants)
                .map { TransitionTile(tile: $0, opacity: 1) }
        var indexById: [String: Int] = [:]
        for (index, participant) in participants.enumerated() where indexById[participant.participantId] == nil {
            indexById[participant.participantId] = index
        }
        y.withUnsafeMutableBufferPointer { yBuffer in
            u.withUnsafeMutableBufferPointer { uBuffer in
                v.withUnsafeMutableBufferPointer { vBuffer in
                    let frame = PlanarYUV420(yPlane: yBuffer.baseAddress!, uPlane: uBuffer.baseAddress!,
                                             vPlane: vBuffer.baseAddress!, yStride: width, uStride: width / 2,
                                             vStride: width / 2, width: width, height: height)
                    decoration?.drawBackground(into: frame, empty: tiles.isEmpty)
                    for item in tiles where item.opacity > 0 {
                        let index = indexById[item.tile.participantId] ?? 0
                        guard index < participants.count else { continue }
                        draw(item.tile, participant: participants[index], index: index, into: frame,
                             cameraOffLabel: decoration?.drawsLabels != true)
                        if item.opacity < 1 { fade(item.tile.rect, opacity: item.opacity, in: frame) }
                    }
                    decoration?.drawForeground(into: frame, tiles: tiles.filter { $0.opacity > 0 }.map(\.tile))
                }
            }
        }
        return convertToRGB(y: y, u: u, v: v, width: width, height: height)
    }

    private static func draw(_ tile: Tile, participant: LayoutParticipant, index: Int, into frame: PlanarYUV420,
                             cameraOffLabel: Bool) {
        let label = label(index: index)
        guard tile.content == .video else {
            CameraOffTile.draw(into: frame, rect: tile.rect, label: cameraOffLabel ? label : "")
            return
        }
        let rgb = palette[index % palette.count]
        let color = YUVColor(red: rgb.red, green: rgb.green, blue: rgb.blue)
        var videoRect = tile.rect
        if tile.fillMode == .contain, let aspect = participant.video.size.flatMap(AspectRatio.init) {
            let shade = YUVColor(red: rgb.red / 3, green: rgb.green / 3, blue: rgb.blue / 3)
            YUVRaster.fillRect(into: frame, rect: tile.rect, color: shade)
            let fitted = aspect.fitted(in: tile.rect.size)
            videoRect = Rect(x: tile.rect.x + evenFloor((tile.rect.width - fitted.width) / 2),
                             y: tile.rect.y + evenFloor((tile.rect.height - fitted.height) / 2),
                             width: fitted.width, height: fitted.height)
        }
        YUVRaster.fillRect(into: frame, rect: videoRect, color: color)
        // Black text on light colours, white on dark ones.
        let textColor: YUVColor = color.y > 150 ? .black : .white
        let available = tile.rect.width * 3 / 4
        let natural = YUVRaster.textSize(label, scale: 1)
        let scale = min(max(tile.rect.height / 5 / natural.height, 1), max(available / max(natural.width, 1), 1))
        let size = YUVRaster.textSize(label, scale: scale)
        YUVRaster.drawText(into: frame, text: label,
                           origin: (x: tile.rect.x + evenFloor((tile.rect.width - size.width) / 2),
                                    y: tile.rect.y + evenFloor((tile.rect.height - size.height) / 2)),
                           scale: scale, color: textColor, clip: tile.rect)
    }

    /// Fades a rectangle toward the black background, as the compositor does (opacity 0...1).
    static func fade(_ rect: Rect, opacity: Double, in frame: PlanarYUV420) {
        let keep = Int((min(1, max(0, opacity)) * 256).rounded())
        let x0 = max(0, rect.x), y0 = max(0, rect.y), x1 = min(frame.width, rect.maxX), y1 = min(frame.height, rect.maxY)
        guard x0 < x1, y0 < y1 else { return }
        func blend(_ value: UInt8, _ base: Int) -> UInt8 { UInt8(clamping: base + ((Int(value) - base) * keep) >> 8) }
        for row in y0..<y1 {
            for column in x0..<x1 { frame.yPlane[row * frame.yStride + column] = blend(frame.yPlane[row * frame.yStride + column], 16) }
        }
        for row in (y0 / 2)..<(y1 / 2) {
            for column in (x0 / 2)..<(x1 / 2) {
                frame.uPlane[row * frame.uStride + column] = blend(frame.uPlane[row * frame.uStride + column], 128)
                frame.vPlane[row * frame.vStride + column] = blend(frame.vPlane[row * frame.vStride + column], 128)
            }
        }
    }

    /// BT.601 limited range to RGB (the inverse of `YUVColor(red:green:blue:)`).
    static func convertToRGB(y: [UInt8], u: [UInt8], v: [UInt8], width: Int, height: Int) -> [UInt8] {
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for row in 0..<height {
            for column in 0..<width {
                let c = 298 * (Int(y[row * width + column]) - 16)
                let chroma = (row / 2) * (width / 2) + column / 2
                let d = Int(u[chroma]) - 128, e = Int(v[chroma]) - 128
                let out = (row * width + column) * 3
                rgb[out] = UInt8(clamping: (c + 409 * e + 128) >> 8)
                rgb[out + 1] = UInt8(clamping: (c - 100 * d - 208 * e + 128) >> 8)
                rgb[out + 2] = UInt8(clamping: (c + 516 * d + 128) >> 8)
            }
        }
        return rgb
    }
}

extension LayoutPreview {
    /// The attribute `--featured` sets: the configured featuredParticipantAttribute, or
    /// "isFeatured" when the configuration has none (then it has no effect).
    public static func featuredAttribute(of configuration: LayoutConfiguration) -> String {
        let configured = configuration.pip?.featuredParticipantAttribute ?? configuration.grid?.featuredParticipantAttribute
        return configured.flatMap { $0.isEmpty ? nil : $0 } ?? "isFeatured"
    }

    /// The attribute `--pip` sets: the configured pipParticipantAttribute, or "isPip".
    public static func pipAttribute(of configuration: LayoutConfiguration) -> String {
        configuration.pip?.pipParticipantAttribute.flatMap { $0.isEmpty ? nil : $0 } ?? "isPip"
    }

    /// Sample participants P1...Pn (ids "p1"..., userIds "P1"..., 1280x720 video, arrival
    /// order = index). `featured`, `pip` and `stopped` hold 1-based indices; out-of-range
    /// indices are ignored.
    public static func sampleParticipants(count: Int, featured: Set<Int> = [], pip: Set<Int> = [],
                                          stopped: Set<Int> = [], configuration: LayoutConfiguration,
                                          videoSize: PixelSize = PixelSize(width: 1280, height: 720)) -> [LayoutParticipant] {
        let featuredKey = featuredAttribute(of: configuration)
        let pipKey = pipAttribute(of: configuration)
        return (0..<max(count, 0)).map { index in
            let number = index + 1
            var attributes: [String: String] = [:]
            if featured.contains(number) { attributes[featuredKey] = "true" }
            if pip.contains(number) { attributes[pipKey] = "true" }
            return LayoutParticipant(participantId: "p\(number)", userId: label(index: index), attributes: attributes,
                                     arrivalIndex: index, video: stopped.contains(number) ? .stopped : .publishing(videoSize))
        }
    }
}
