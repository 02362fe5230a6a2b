// Where overlays go: pure geometry, shared by the compositor and `layout preview`.

public import MediaCore

public enum OverlayPlacement {
    /// The top-left corner of a `size` box at `position` inside `area`, `margin` from its edges.
    public static func origin(of size: PixelSize, at position: OverlayPosition, margin: Int, in area: Rect) -> (x: Int, y: Int) {
        let left = area.x + margin
        let right = area.maxX - margin - size.width
        let centreX = area.x + (area.width - size.width) / 2
        let top = area.y + margin
        let bottom = area.maxY - margin - size.height
        let centreY = area.y + (area.height - size.height) / 2
        switch position {
        case .topLeft: return (left, top)
        case .topCenter: return (centreX, top)
        case .topRight: return (right, top)
        case .bottomLeft: return (left, bottom)
        case .bottomCenter: return (centreX, bottom)
        case .bottomRight: return (right, bottom)
        case .center: return (centreX, centreY)
        }
    }

    /// An image's drawn size: its own without `width` and `height`, its aspect ratio kept when
    /// only one is given, exactly both when both are.
    public static func imageSize(natural: PixelSize, width: Int?, height: Int?) -> PixelSize {
        guard natural.width > 0, natural.height > 0 else { return PixelSize(width: width ?? 0, height: height ?? 0) }
        switch (width, height) {
        case let (w?, h?): return PixelSize(width: w, height: h)
        case let (w?, nil): return PixelSize(width: w, height: max(1, Int((Double(w) * Double(natural.height) / Double(natural.width)).rounded())))
        case let (nil, h?): return PixelSize(width: max(1, Int((Double(h) * Double(natural.width) / Double(natural.height)).rounded())), height: h)
        case (nil, nil): return natural
        }
    }

    /// Where an image of `natural` size is drawn to fill `canvas` by `mode`: the whole canvas
    /// (FILL), a rectangle covering it, centred and cut by the canvas (COVER), or one inside it,
    /// centred (CONTAIN).
    public static func fill(natural: PixelSize, mode: VideoFillMode, canvas: PixelSize) -> Rect {
        guard natural.width > 0, natural.height > 0, mode != .fill else { return Rect(x: 0, y: 0, width: canvas.width, height: canvas.height) }
        let scaleX = Double(canvas.width) / Double(natural.width), scaleY = Double(canvas.height) / Double(natural.height)
        let scale = mode == .cover ? max(scaleX, scaleY) : min(scaleX, scaleY)
        let width = max(1, Int((Double(natural.width) * scale).rounded())), height = max(1, Int((Double(natural.height) * scale).rounded()))
        return Rect(x: (canvas.width - width) / 2, y: (canvas.height - height) / 2, width: width, height: height)
    }
}
