// What a composition draws of its overlays, on its own thread. Everything that can be made
// ahead is made when it changes, not per frame:
// - the background (colour, image, images placed BELOW) and the slate are whole canvases in
//   Y'CbCr, copied where the compositor would fill black;
// - images ABOVE, labels and banners are premultiplied Y'CbCrA layers (`YUVAOverlay`); a
//   label's text is set again only when its tile, name or mute changes (and then usually
//   comes from a cache).
// Per frame: the pixels under the layers are put back (`restore`), the compositor draws its
// tiles, then the layers are blended (`paint`) over the spans they cover.

public import Layout
public import MediaCore
import FFmpeg
import OverlayDrawing

public final class OverlayPainter {
    public let canvasSize: PixelSize
    private let defaultFont: String
    private var prepared: PreparedOverlays?
    private var background: BaseCanvas?
    /// The layout's fill mode the background image was scaled with (when it has none of its own).
    private var backgroundFillMode: VideoFillMode = .cover
    private var slate: BaseCanvas?
    private var images: [YUVAOverlay] = []
    private var labels: [YUVAOverlay] = []
    /// What the labels were drawn for (tiles, names, mutes): drawn again when it changes.
    private var labelledTiles: [LabelledTile] = []
    private var seenTiles: [LabelledTile] = []
    private var labelCache: [LabelKey: RGBABitmap] = [:]
    private var banners: [BannerLayer] = []
    private var patches = CanvasPatches()
    private var patchRects: [Rect] = []
    /// Participants the producer muted in the mix (UpdateComposition's `audio`): their labels
    /// show the muted badge as if they had muted themselves.
    public var mutedInMix: Set<String> = []
    /// Labels and banners set (for the benchmark and logs).
    public private(set) var textDrawings = 0

    public init(canvasSize: PixelSize, defaultFont: String) {
        self.canvasSize = canvasSize
        self.defaultFont = defaultFont
        patchRects.reserveCapacity(32)
        seenTiles.reserveCapacity(16)
        labelledTiles.reserveCapacity(16)
    }

    /// Whether labels are drawn (the compositor then leaves the camera-off tile's own small
    /// label out: the name is drawn large instead).
    public var drawsLabels: Bool { prepared?.configuration.labels != nil }
    /// Whether a slate replaces the empty canvas.
    public var hasSlate: Bool { slate != nil }
    /// Whether the canvas's empty parts are something other than black.
    public var hasBackground: Bool { background != nil }

    /// Draws `overlays` from now on (`stageTime` µs: banners fade from here); nil removes all.
    public func set(_ overlays: PreparedOverlays?, at stageTime: Int64) {
        let old = prepared
        prepared = overlays
        let configuration = overlays?.configuration
        if old?.configuration.background != configuration?.background || old?.configuration.images != configuration?.images
            || old?.images != overlays?.images {
            background = makeBackground()
            images = (configuration?.images ?? []).filter { ($0.layer ?? .above) == .above }.compactMap(layer(of:))
        }
        if old?.configuration.slate != configuration?.slate || old?.images != overlays?.images {
            slate = makeSlate()
        }
        if old?.configuration.labels != configuration?.labels {
            labelledTiles.removeAll(keepingCapacity: true)
            labels.removeAll(keepingCapacity: true)
        }
        updateBanners(configuration?.banners ?? [], at: stageTime, initial: old == nil)
    }

    // MARK: - Per frame

    /// Puts back what the last frame's layers covered.
    public func restore(_ frame: PlanarYUV420) {
        patches.restore(into: frame)
    }

    /// Fills `rect` from the background (or, when `slate`, the slate) instead of black; false
    /// when there is none (the caller fills black). A background image without a fill mode
    /// of its own is scaled as the layout fills its tiles (`layoutFillMode`, when known).
    public func fill(_ rect: Rect, of frame: PlanarYUV420, slate useSlate: Bool, layoutFillMode: VideoFillMode? = nil) -> Bool {
        if let layoutFillMode, layoutFillMode != backgroundFillMode {
            backgroundFillMode = layoutFillMode
            if let background = prepared?.configuration.background, background.file != nil, background.fillMode == nil {
                self.background = makeBackground()
            }
        }
        guard let base = (useSlate ? slate : nil) ?? background else { return false }
        base.copy(rect, into: frame)
        return true
    }

    /// Blends the layers over what the compositor drew: images, then each tile's label, then
    /// banners at their opacity at `stageTime`.
    public func paint(_ frame: PlanarYUV420, tiles: [Tile], participants: [StageParticipantState], stageTime: Int64) {
        guard let configuration = prepared?.configuration else { return }
        if let labelSettings = configuration.labels { updateLabels(labelSettings, tiles: tiles, participants: participants) }
        patchRects.removeAll(keepingCapacity: true)
        for image in images { patchRects.append(image.rect) }
        for label in labels { patchRects.append(label.rect) }
        for index in banners.indices.reversed() {
            let opacity = banners[index].opacity(at: stageTime)
            if opacity == 0, banners[index].removed, banners[index].settled(at: stageTime) {
                banners.remove(at: index)
                continue
            }
            if opacity > 0 { patchRects.append(banners[index].layer.rect) }
        }
        patches.save(patchRects, of: frame)
        for image in images { image.blend(into: frame, opacity: image.opacity) }
        for label in labels { label.blend(into: frame) }
        for banner in banners {
            let opacity = banner.opacity(at: stageTime)
            if opacity > 0 { banner.layer.blend(into: frame, opacity: opacity) }
        }
    }

    // MARK: - Making layers

    private func layer(of image: ImageOverlay) -> YUVAOverlay? {
        guard let bitmap = prepared?.images[image.file] else { return nil }
        let size = OverlayPlacement.imageSize(natural: PixelSize(width: bitmap.width, height: bitmap.height), width: image.width, height: image.height)
        guard let scaled = try? ImageDecoder.scale(bitmap, width: size.width, height: size.height) else { return nil }
        let origin: (x: Int, y: Int)
        if let x = image.x, let y = image.y {
            origin = (x, y)
        } else {
            origin = OverlayPlacement.origin(of: size, at: image.position ?? .topRight, margin: image.margin ?? 24,
                                             in: Rect(x: 0, y: 0, width: canvasSize.width, height: canvasSize.height))
        }
        var layer = YUVAOverlay(bitmap: scaled, x: origin.x, y: origin.y)
        layer.opacity = Int(((image.opacity ?? 1) * 256).rounded())
        return layer
    }

    private func makeBackground() -> BaseCanvas? {
        guard let configuration = prepared?.configuration else { return nil }
        let below = (configuration.images ?? []).filter { $0.layer == .below }
        guard configuration.background != nil || !below.isEmpty else { return nil }
        let base = BaseCanvas(size: canvasSize, color: configuration.background?.color.flatMap(RGBAColor.init(hex:)) ?? .black)
        if let file = configuration.background?.file {
            base.draw(prepared?.images[file], mode: configuration.background?.fillMode ?? backgroundFillMode)
        }
        for image in below { if let layer = layer(of: image) { base.blend(layer) } }
        return base
    }

    private func makeSlate() -> BaseCanvas? {
        guard let settings = prepared?.configuration.slate else { return nil }
        let base = BaseCanvas(size: canvasSize, color: settings.backgroundColor.flatMap(RGBAColor.init(hex:))
                              ?? RGBAColor(red: 16, green: 16, blue: 16))
        if let file = settings.file { base.draw(prepared?.images[file], mode: settings.fillMode ?? .contain) }
        if let text = settings.text {
            let style = TextStyle(font: settings.font ?? defaultFont, pixelSize: settings.fontSize ?? max(8, canvasSize.height * 8 / 100),
                                  color: settings.textColor.flatMap(RGBAColor.init(hex:)) ?? .white, centered: true)
            let bitmap = TextDrawing.draw(text, style: style, maxWidth: canvasSize.width * 9 / 10)
            textDrawings += 1
            let origin = OverlayPlacement.origin(of: PixelSize(width: bitmap.width, height: bitmap.height), at: .center, margin: 0,
                                                 in: Rect(x: 0, y: 0, width: canvasSize.width, height: canvasSize.height))
            base.blend(YUVAOverlay(bitmap: bitmap, x: origin.x, y: origin.y))
        }
        return base
    }

    private func updateLabels(_ settings: LabelOverlay, tiles: [Tile], participants: [StageParticipantState]) {
        seenTiles.removeAll(keepingCapacity: true)
        for tile in tiles {
            let state = participants.first { $0.participantId == tile.participantId }
            let name = state.map { Self.name(of: $0, attribute: settings.attribute ?? "name") } ?? tile.participantId
            seenTiles.append(LabelledTile(rect: tile.rect, video: tile.content == .video, name: name,
                                          muted: (settings.mutedBadge ?? true)
                                            && ((state?.isAudioMuted ?? false) || mutedInMix.contains(tile.participantId))))
        }
        guard seenTiles != labelledTiles else { return }
        swap(&seenTiles, &labelledTiles)
        labels.removeAll(keepingCapacity: true)
        let font = settings.font ?? defaultFont
        let color = settings.textColor.flatMap(RGBAColor.init(hex:)) ?? .white
        let pill = settings.backgroundColor.flatMap(RGBAColor.init(hex:)) ?? RGBAColor(red: 0, green: 0, blue: 0, alpha: 160)
        for tile in labelledTiles where tile.rect.width >= 32 && tile.rect.height >= 32 {
            let margin = settings.margin ?? max(4, tile.rect.height * 3 / 100)
            if tile.video {
                let size = max(12, Int((Double(tile.rect.height) * (settings.fontScale ?? 0.06)).rounded()))
                let key = LabelKey(text: tile.name, size: size, muted: tile.muted, maxWidth: tile.rect.width - 2 * margin, large: false)
                let bitmap = labelBitmap(key) {
                    TextDrawing.draw(tile.name, style: TextStyle(font: font, pixelSize: size, color: color),
                                     box: BoxStyle(color: pill), mutedBadge: tile.muted, maxWidth: key.maxWidth)
                }
                let origin = OverlayPlacement.origin(of: PixelSize(width: bitmap.width, height: bitmap.height),
                                                     at: settings.position ?? .bottomLeft, margin: margin, in: tile.rect)
                labels.append(YUVAOverlay(bitmap: bitmap, x: origin.x, y: origin.y))
            } else {
                // Camera off: the name large, under the camera icon the compositor drew.
                let size = max(12, tile.rect.height / 10)
                let key = LabelKey(text: tile.name, size: size, muted: tile.muted, maxWidth: tile.rect.width * 9 / 10, large: true)
                let bitmap = labelBitmap(key) {
                    TextDrawing.draw(tile.name, style: TextStyle(font: font, pixelSize: size, color: color, centered: true),
                                     mutedBadge: tile.muted, maxWidth: key.maxWidth)
                }
                let icon = min(tile.rect.width, tile.rect.height) * 2 / 5
                let top = tile.rect.y + tile.rect.height / 2 + icon / 2 + tile.rect.height / 25
                guard top + bitmap.height <= tile.rect.maxY else { continue }
                labels.append(YUVAOverlay(bitmap: bitmap, x: tile.rect.x + (tile.rect.width - bitmap.width) / 2, y: top))
            }
        }
    }

    private func labelBitmap(_ key: LabelKey, draw: () -> RGBABitmap) -> RGBABitmap {
        if let cached = labelCache[key] { return cached }
        if labelCache.count >= 256 { labelCache.removeAll(keepingCapacity: true) }
        let bitmap = draw()
        textDrawings += 1
        labelCache[key] = bitmap
        return bitmap
    }

    /// The name a label shows: the attribute, else the user ID, else the participant ID.
    static func name(of state: StageParticipantState, attribute: String) -> String {
        if let value = state.attributes[attribute], !value.isEmpty { return value }
        return state.userId.isEmpty ? state.participantId : state.userId
    }

    private func updateBanners(_ wanted: [BannerOverlay], at time: Int64, initial: Bool) {
        var next: [BannerLayer] = []
        for settings in wanted {
            let visible = settings.visible ?? true
            let duration = Int64(settings.transitionMs ?? 0) * 1000
            if let index = banners.firstIndex(where: { $0.settings.id == settings.id && !$0.removed }) {
                var existing = banners.remove(at: index)
                if existing.settings.drawing != settings.drawing { existing.layer = bannerLayer(settings) }
                existing.settings = settings
                existing.fade(to: visible ? 1 : 0, at: time, duration: duration)
                next.append(existing)
            } else {
                var layer = BannerLayer(settings: settings, layer: bannerLayer(settings))
                layer.fade(to: visible ? 1 : 0, at: time, duration: initial ? 0 : duration)
                next.append(layer)
            }
        }
        // Banners no longer described fade out over their own transition, then go.
        for var gone in banners where !gone.removed {
            gone.removed = true
            gone.fade(to: 0, at: time, duration: Int64(gone.settings.transitionMs ?? 0) * 1000)
            next.append(gone)
        }
        banners = next
    }

    private func bannerLayer(_ settings: BannerOverlay) -> YUVAOverlay {
        let size = settings.fontSize ?? max(8, canvasSize.height * 5 / 100)
        let margin = settings.margin ?? 32
        let style = TextStyle(font: settings.font ?? defaultFont, pixelSize: size,
                              color: settings.textColor.flatMap(RGBAColor.init(hex:)) ?? .white)
        let box = BoxStyle(color: settings.backgroundColor.flatMap(RGBAColor.init(hex:)) ?? RGBAColor(red: 0, green: 0, blue: 0, alpha: 192),
                           roundness: 0.15, paddingX: 0.6, paddingY: 0.3)
        let bitmap = TextDrawing.draw(settings.text, style: style, box: box, maxWidth: canvasSize.width - 2 * margin)
        textDrawings += 1
        let origin = OverlayPlacement.origin(of: PixelSize(width: bitmap.width, height: bitmap.height), at: settings.position ?? .bottomCenter,
                                             margin: margin, in: Rect(x: 0, y: 0, width: canvasSize.width, height: canvasSize.height))
        return YUVAOverlay(bitmap: bitmap, x: origin.x, y: origin.y)
    }
}

/// A tile as its label was drawn for.
private struct LabelledTile: Equatable {
    var rect: Rect
    var video: Bool
    var name: String
    var muted: Bool
}

private struct LabelKey: Hashable {
    var text: String
    var size: Int
    var muted: Bool
    var maxWidth: Int
    var large: Bool
}

/// A banner's layer and its fade.
private struct BannerLayer {
    var settings: BannerOverlay
    var layer: YUVAOverlay
    var removed = false
    private var from: Double = 0
    private var to: Double = 0
    private var start: Int64 = 0
    private var duration: Int64 = 0

    init(settings: BannerOverlay, layer: YUVAOverlay) {
        self.settings = settings
        self.layer = layer
    }

    /// Opacity at `time` (0...256), linear over the fade.
    func opacity(at time: Int64) -> Int {
        let value: Double
        if duration <= 0 || time >= start + duration {
            value = to
        } else if time <= start {
            value = from
        } else {
            value = from + (to - from) * Double(time - start) / Double(duration)
        }
        return Int((value * 256).rounded())
    }

    func settled(at time: Int64) -> Bool { duration <= 0 || time >= start + duration }

    mutating func fade(to target: Double, at time: Int64, duration: Int64) {
        let current = Double(opacity(at: time)) / 256
        guard target != to || !settled(at: time) else { return }
        from = current
        to = target
        start = time
        self.duration = max(0, duration)
    }
}

extension BannerOverlay {
    /// What its bitmap depends on (not whether it is shown, nor how fast it fades).
    fileprivate var drawing: BannerOverlay {
        var copy = self
        copy.visible = nil
        copy.transitionMs = nil
        return copy
    }
}

/// A whole canvas made ahead (the background, the slate), copied where black would be.
private final class BaseCanvas {
    let size: PixelSize
    var luma: [UInt8]
    var cb: [UInt8]
    var cr: [UInt8]

    init(size: PixelSize, color: RGBAColor) {
        self.size = size
        let yuv = YUVColor(red: color.red, green: color.green, blue: color.blue)
        luma = [UInt8](repeating: yuv.y, count: size.width * size.height)
        cb = [UInt8](repeating: yuv.u, count: (size.width / 2) * (size.height / 2))
        cr = [UInt8](repeating: yuv.v, count: (size.width / 2) * (size.height / 2))
    }

    func withFrame<T>(_ body: (PlanarYUV420) -> T) -> T {
        luma.withUnsafeMutableBufferPointer { y in
            cb.withUnsafeMutableBufferPointer { u in
                cr.withUnsafeMutableBufferPointer { v in
                    body(PlanarYUV420(yPlane: y.baseAddress!, uPlane: u.baseAddress!, vPlane: v.baseAddress!, yStride: size.width,
                                      uStride: size.width / 2, vStride: size.width / 2, width: size.width, height: size.height))
                }
            }
        }
    }

    func blend(_ layer: YUVAOverlay) {
        withFrame { layer.blend(into: $0, opacity: layer.opacity) }
    }

    /// An image scaled to the canvas by `mode`.
    func draw(_ bitmap: RGBABitmap?, mode: VideoFillMode) {
        guard let bitmap else { return }
        let rect = OverlayPlacement.fill(natural: PixelSize(width: bitmap.width, height: bitmap.height), mode: mode, canvas: size)
        guard let scaled = try? ImageDecoder.scale(bitmap, width: rect.width, height: rect.height) else { return }
        blend(YUVAOverlay(bitmap: scaled, x: rect.x, y: rect.y))
    }

    func copy(_ rect: Rect, into frame: PlanarYUV420) {
        let x0 = max(0, rect.x) & ~1, y0 = max(0, rect.y) & ~1
        let x1 = min(min(size.width, frame.width) & ~1, rect.maxX), y1 = min(min(size.height, frame.height) & ~1, rect.maxY)
        guard x0 < x1, y0 < y1 else { return }
        luma.withUnsafeBufferPointer { y in
            for row in y0..<y1 { (frame.yPlane + row * frame.yStride + x0).update(from: y.baseAddress! + row * size.width + x0, count: x1 - x0) }
        }
        let chromaWidth = size.width / 2
        cb.withUnsafeBufferPointer { u in
            cr.withUnsafeBufferPointer { v in
                for row in (y0 / 2)..<(y1 / 2) {
                    (frame.uPlane + row * frame.uStride + x0 / 2).update(from: u.baseAddress! + row * chromaWidth + x0 / 2, count: (x1 - x0) / 2)
                    (frame.vPlane + row * frame.vStride + x0 / 2).update(from: v.baseAddress! + row * chromaWidth + x0 / 2, count: (x1 - x0) / 2)
                }
            }
        }
    }
}
