/// The "camera off" placeholder the compositor draws for `.cameraOff` tiles: a dark grey
/// tile, a camera-with-a-slash icon and the participant's label below it. Neutral greys
/// only, so after the background fill only luma is touched. O(tile area), no allocation.

public import MediaCore

public enum CameraOffTile {
    public static let background = YUVColor.grey(48)
    public static let iconLuma: UInt8 = 150
    public static let labelLuma: UInt8 = 200

    /// Draws the placeholder into `rect` (clipped to the frame). The label is drawn whole
    /// when it fits the tile width at scale 1 or more, else only its first character (the
    /// initial), else not at all; the icon is left out on tiles under 16 pixels.
    public static func draw(into frame: PlanarYUV420, rect: Rect, label: String) {
        YUVRaster.fillRect(into: frame, rect: rect, color: background)
        guard let tile = rect.intersection(frame.bounds) else { return }
        let iconSize = evenFloor(min(tile.width, tile.height) * 2 / 5)
        let text = fittingLabel(label, width: tile.width * 9 / 10)
        // Text as tall as a third of the icon, capped by the width.
        var scale = 0
        if let text {
            let count = text.utf8.count
            scale = min(max(iconSize / (3 * BitmapFont.glyphHeight), 1), (tile.width * 9 / 10) / (count * BitmapFont.advance - 1))
        }
        let textSize = text.map { YUVRaster.textSize($0, scale: scale) } ?? PixelSize(width: 0, height: 0)
        let showIcon = iconSize >= 16
        let spacing = showIcon && text != nil ? max(iconSize / 6, 2) : 0
        let contentHeight = (showIcon ? iconSize : 0) + spacing + textSize.height
        guard contentHeight <= tile.height else { return }
        let top = tile.y + (tile.height - contentHeight) / 2
        if showIcon {
            drawIcon(frame, Rect(x: tile.x + (tile.width - iconSize) / 2, y: top, width: iconSize, height: iconSize))
        }
        if let text {
            let origin = (x: tile.x + (tile.width - textSize.width) / 2, y: top + contentHeight - textSize.height)
            YUVRaster.drawText(into: frame, text: text, origin: origin, scale: scale,
                               color: .grey(labelLuma), clip: tile, lumaOnly: true)
        }
    }

    /// The label if it fits `width` at scale 1, else its initial, else nil.
    static func fittingLabel(_ label: String, width: Int) -> String? {
        let count = label.utf8.count
        guard count > 0 else { return nil }
        if count * BitmapFont.advance - 1 <= width { return label }
        if BitmapFont.glyphWidth <= width, let first = label.first { return String(first) }
        return nil
    }

    /// A camera body (rectangle), a lens (a wedge widening to the right) and a diagonal
    /// slash, cut out of the icon with the background colour so it reads as "off".
    private static func drawIcon(_ frame: PlanarYUV420, _ box: Rect) {
        let s = box.width
        let bodyHeight = s * 9 / 20
        let bodyTop = box.y + (s - bodyHeight) / 2
        let bodyWidth = s * 3 / 5
        YUVRaster.fillLuma(frame, Rect(x: box.x, y: bodyTop, width: bodyWidth, height: bodyHeight), iconLuma)
        // Lens: from the body's right edge + a small gap to the box's right edge; its half
        // height grows linearly from a third of the body to the whole body.
        let lensLeft = box.x + bodyWidth + s / 20
        let lensWidth = box.maxX - lensLeft
        if lensWidth > 0 {
            let centre = bodyTop + bodyHeight / 2
            for column in 0..<lensWidth {
                let half = bodyHeight / 6 + (bodyHeight / 2 - bodyHeight / 6) * column / max(lensWidth - 1, 1)
                YUVRaster.fillLuma(frame, Rect(x: lensLeft + column, y: centre - half, width: 1, height: 2 * half), iconLuma)
            }
        }
        // Slash from top-left to bottom-right: a background-coloured cut, then the line.
        let thickness = max(s / 14, 1)
        for row in 0..<s {
            let centreX = box.x + row
            if let cut = Rect(x: centreX - 2 * thickness, y: box.y + row, width: 4 * thickness, height: 1).intersection(box) {
                YUVRaster.fillLuma(frame, cut, background.y)
            }
            if let line = Rect(x: centreX - thickness / 2 - 1, y: box.y + row, width: thickness + 1, height: 1).intersection(box) {
                YUVRaster.fillLuma(frame, line, iconLuma)
            }
        }
    }
}
