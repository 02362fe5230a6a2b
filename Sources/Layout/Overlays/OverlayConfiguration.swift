// Extension (not in the IVS model): what the compositor draws itself, over and under the
// tiles — name labels on tiles, images (logos, watermarks), a background image, a slate when
// nobody publishes, and text banners shown and hidden live. Given as `overlays` on
// StartComposition and UpdateComposition (a whole description each time: what it leaves out
// is gone), and by `compose --overlays FILE`. Validated in one place (`validate`, below);
// files and fonts are checked where they are loaded (Pipeline's `OverlayAssets`).

public import MediaCore

/// Where an overlay sits on the canvas (or a label in its tile): the IVS `pipPosition`
/// words, plus the middle of the top and bottom edges and the centre.
public enum OverlayPosition: String, Codable, Sendable, CaseIterable {
    case topLeft = "TOP_LEFT", topCenter = "TOP_CENTER", topRight = "TOP_RIGHT"
    case bottomLeft = "BOTTOM_LEFT", bottomCenter = "BOTTOM_CENTER", bottomRight = "BOTTOM_RIGHT"
    case center = "CENTER"
}

/// Whether an image is drawn over the tiles or under them (on the background).
public enum OverlayLayer: String, Codable, Sendable, CaseIterable {
    case above = "ABOVE", below = "BELOW"
}

public struct OverlayConfiguration: Codable, Hashable, Sendable {
    /// A name on each tile.
    public var labels: LabelOverlay?
    /// Logos and watermarks, drawn in order (later ones on top).
    public var images: [ImageOverlay]?
    /// Behind the tiles instead of black.
    public var background: BackgroundOverlay?
    /// The whole canvas while no participant publishes.
    public var slate: SlateOverlay?
    /// Text banners and lower thirds, drawn in order over everything else.
    public var banners: [BannerOverlay]?

    public init(labels: LabelOverlay? = nil, images: [ImageOverlay]? = nil, background: BackgroundOverlay? = nil,
                slate: SlateOverlay? = nil, banners: [BannerOverlay]? = nil) {
        self.labels = labels
        self.images = images
        self.background = background
        self.slate = slate
        self.banners = banners
    }

    /// Nothing to draw.
    public var isEmpty: Bool {
        labels == nil && (images ?? []).isEmpty && background == nil && slate == nil && (banners ?? []).isEmpty
    }
}

/// A participant's name inside its tile, on a rounded translucent pill; a muted-microphone
/// badge beside it while their audio is muted; a camera-off tile shows the name large.
public struct LabelOverlay: Codable, Hashable, Sendable {
    /// The participant attribute that holds the name (falling back to the user ID, then the
    /// participant ID). Default `name`.
    public var attribute: String?
    /// The corner or edge of the tile (default BOTTOM_LEFT).
    public var position: OverlayPosition?
    /// Pixels between the pill and the tile's edge (default: 3 % of the tile's height).
    public var margin: Int?
    /// The text's height relative to the tile's height (default 0.06; 0.02...0.25), at least 12 px.
    public var fontScale: Double?
    /// A font family (default: the configured default, DejaVu Sans).
    public var font: String?
    /// `#RRGGBB` or `#RRGGBBAA` (default white).
    public var textColor: String?
    /// The pill's colour (default `#000000A0`).
    public var backgroundColor: String?
    /// The muted-microphone badge (default true).
    public var mutedBadge: Bool?

    public init(attribute: String? = nil, position: OverlayPosition? = nil, margin: Int? = nil, fontScale: Double? = nil,
                font: String? = nil, textColor: String? = nil, backgroundColor: String? = nil, mutedBadge: Bool? = nil) {
        self.attribute = attribute
        self.position = position
        self.margin = margin
        self.fontScale = fontScale
        self.font = font
        self.textColor = textColor
        self.backgroundColor = backgroundColor
        self.mutedBadge = mutedBadge
    }
}

/// A PNG or JPEG (alpha honoured) at a position of the canvas: a corner or edge with a
/// margin, or a rectangle (`x`, `y`, and optionally `width`/`height`). Without a size it
/// keeps its own; with one of them, its aspect ratio.
public struct ImageOverlay: Codable, Hashable, Sendable {
    /// A file in the overlay directory (daemon: `overlays.directory`; `compose`: beside the
    /// description). A plain relative path: no `..`, not absolute.
    public var file: String
    public var position: OverlayPosition?
    /// Pixels from the canvas's edges when placed by `position` (default 24).
    public var margin: Int?
    public var x: Int?
    public var y: Int?
    public var width: Int?
    public var height: Int?
    /// 0...1 (default 1).
    public var opacity: Double?
    /// ABOVE (default) or BELOW the tiles.
    public var layer: OverlayLayer?

    public init(file: String, position: OverlayPosition? = nil, margin: Int? = nil, x: Int? = nil, y: Int? = nil,
                width: Int? = nil, height: Int? = nil, opacity: Double? = nil, layer: OverlayLayer? = nil) {
        self.file = file
        self.position = position
        self.margin = margin
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.opacity = opacity
        self.layer = layer
    }
}

/// Behind the tiles: a colour and/or an image scaled to the canvas (`fillMode`, default the
/// layout's video fill mode: how its tiles are filled).
public struct BackgroundOverlay: Codable, Hashable, Sendable {
    public var color: String?
    public var file: String?
    public var fillMode: VideoFillMode?

    public init(color: String? = nil, file: String? = nil, fillMode: VideoFillMode? = nil) {
        self.color = color
        self.file = file
        self.fillMode = fillMode
    }
}

/// The whole canvas while nobody publishes: a colour, an image (scaled with `fillMode`,
/// default CONTAIN) and/or centred text ("We'll be right back").
public struct SlateOverlay: Codable, Hashable, Sendable {
    public var text: String?
    public var file: String?
    public var fillMode: VideoFillMode?
    /// Text height in pixels of the canvas (default: 8 % of its height).
    public var fontSize: Int?
    public var font: String?
    public var textColor: String?
    /// Default `#101010`.
    public var backgroundColor: String?

    public init(text: String? = nil, file: String? = nil, fillMode: VideoFillMode? = nil, fontSize: Int? = nil,
                font: String? = nil, textColor: String? = nil, backgroundColor: String? = nil) {
        self.text = text
        self.file = file
        self.fillMode = fillMode
        self.fontSize = fontSize
        self.font = font
        self.textColor = textColor
        self.backgroundColor = backgroundColor
    }
}

/// A line of text on a box (a lower third, a ticker title), shown and hidden live: a change
/// of `visible`, a banner added or one removed fades over `transitionMs`. A banner keeps its
/// identity across updates by `id`.
public struct BannerOverlay: Codable, Hashable, Sendable {
    public var id: String
    public var text: String
    /// Default BOTTOM_CENTER.
    public var position: OverlayPosition?
    /// Pixels from the canvas's edges (default 32).
    public var margin: Int?
    /// Text height in pixels of the canvas (default: 5 % of its height).
    public var fontSize: Int?
    public var font: String?
    /// Default white.
    public var textColor: String?
    /// Default `#000000C0`.
    public var backgroundColor: String?
    /// Default true.
    public var visible: Bool?
    /// How long it fades in or out (ms, 0...5000; default 0: at once).
    public var transitionMs: Int?

    public init(id: String, text: String, position: OverlayPosition? = nil, margin: Int? = nil, fontSize: Int? = nil,
                font: String? = nil, textColor: String? = nil, backgroundColor: String? = nil, visible: Bool? = nil,
                transitionMs: Int? = nil) {
        self.id = id
        self.text = text
        self.position = position
        self.margin = margin
        self.fontSize = fontSize
        self.font = font
        self.textColor = textColor
        self.backgroundColor = backgroundColor
        self.visible = visible
        self.transitionMs = transitionMs
    }
}

/// Overlay colours: `#RRGGBB` or `#RRGGBBAA` (sRGB, straight alpha).
extension RGBAColor {
    public init?(hex: String) {
        let bytes = Array(hex.utf8)
        guard bytes.first == UInt8(ascii: "#"), bytes.count == 7 || bytes.count == 9 else { return nil }
        var values: [UInt8] = []
        var index = 1
        while index < bytes.count {
            guard let high = Self.nibble(bytes[index]), let low = Self.nibble(bytes[index + 1]) else { return nil }
            values.append(high << 4 | low)
            index += 2
        }
        self.init(red: values[0], green: values[1], blue: values[2], alpha: values.count == 4 ? values[3] : 255)
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
