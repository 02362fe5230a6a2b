// `layout preview --overlays`: the overlays a composition would draw, on the preview's
// sample tiles, named as `--names` says — so an operator sees labels, logos, banners and the
// slate before going live.

public import Layout
public import MediaCore

public final class OverlayPreview: PreviewDecoration {
    private let painter: OverlayPainter
    private let participants: [StageParticipantState]

    /// `participants`: the preview's sample participants with the names and mutes to show.
    public init(overlays: PreparedOverlays, canvas: PixelSize, participants: [StageParticipantState]) {
        painter = OverlayPainter(canvasSize: canvas, defaultFont: overlays.defaultFont)
        painter.set(overlays, at: 0)
        self.participants = participants
    }

    public var drawsLabels: Bool { painter.drawsLabels }

    public func drawBackground(into frame: PlanarYUV420, empty: Bool) {
        _ = painter.fill(Rect(x: 0, y: 0, width: frame.width, height: frame.height), of: frame, slate: empty)
    }

    public func drawForeground(into frame: PlanarYUV420, tiles: [Tile]) {
        painter.paint(frame, tiles: tiles, participants: participants, stageTime: 0)
    }
}
