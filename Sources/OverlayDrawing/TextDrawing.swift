// Text for overlays, set by a real text stack: fontconfig picks the font and, character by
// character, a fallback that has the glyph (CJK, colour emoji); FriBidi finds the
// right-to-left runs and the paragraph's own direction; HarfBuzz shapes each run (ligatures,
// Arabic joining, combining marks); Cairo rasterizes the glyphs (FreeType, grey antialiasing,
// colour bitmaps) and the box behind them into premultiplied ARGB. It runs once per change
// of what a label or banner says, never per frame: the result is a bitmap the compositor
// blends.
//
// The fonts and faces are shared, and FreeType faces are not safe to use from two threads,
// so every drawing holds one lock; drawings are rare (a join, a rename, a banner edit).

internal import CTextStack
public import MediaCore
import Synchronization

/// How a piece of text is set.
public struct TextStyle: Hashable, Sendable {
    /// A font family ("DejaVu Sans"); characters it lacks come from fallback fonts.
    public var font: String
    /// The font's size in pixels (its em).
    public var pixelSize: Int
    public var color: RGBAColor
    /// Lines are centred on each other (else aligned to their paragraph's start).
    public var centered: Bool

    public init(font: String, pixelSize: Int, color: RGBAColor = .white, centered: Bool = false) {
        self.font = font
        self.pixelSize = pixelSize
        self.color = color
        self.centered = centered
    }
}

/// A rounded box drawn behind text (a label's pill, a banner's plate).
public struct BoxStyle: Hashable, Sendable {
    public var color: RGBAColor
    /// Corner radius as a fraction of the box's height (0.5: a pill).
    public var roundness: Double
    /// Space between the text and the box's edges, as fractions of the font size.
    public var paddingX: Double
    public var paddingY: Double

    public init(color: RGBAColor, roundness: Double = 0.5, paddingX: Double = 0.5, paddingY: Double = 0.25) {
        self.color = color
        self.roundness = roundness
        self.paddingX = paddingX
        self.paddingY = paddingY
    }
}

public enum TextDrawing {
    /// The largest bitmap a drawing makes (either side, pixels).
    public static let maximumSide = 4096
    /// Lines drawn (`\n` separates them); the rest are left out.
    public static let maximumLines = 8

    /// Draws `text` (on `box` when given, with a muted-microphone badge at its end when
    /// `mutedBadge`), no wider than `maxWidth` pixels: a longer line ends in an ellipsis. The
    /// bitmap is exactly as large as what was drawn, premultiplied; empty when nothing is.
    public static func draw(_ text: String, style: TextStyle, box: BoxStyle? = nil, mutedBadge: Bool = false,
                            maxWidth: Int? = nil) -> RGBABitmap {
        engine.withLock { $0.draw(text, style: style, box: box, mutedBadge: mutedBadge, maxWidth: maxWidth) }
    }

    /// Whether fontconfig knows a font of this family (case-insensitive), so a description
    /// naming one it does not is refused rather than drawn in a substitute.
    public static func fontExists(_ family: String) -> Bool {
        engine.withLock { _ in
            guard let pattern = FcPatternCreate() else { return false }
            defer { FcPatternDestroy(pattern) }
            _ = addString(pattern, "family", family)
            guard let objects = FcObjectSetCreate() else { return false }
            defer { FcObjectSetDestroy(objects) }
            FcObjectSetAdd(objects, "family")
            guard let set = FcFontList(nil, pattern, objects) else { return false }
            defer { FcFontSetDestroy(set) }
            return set.pointee.nfont > 0
        }
    }

    /// Adds the fonts of a folder to those text is set with (the daemon's
    /// `overlays.fontDirectory`); false when fontconfig cannot read it.
    public static func addFontDirectory(_ path: String) -> Bool {
        engine.withLock { engine in
            let added = path.withCString { name in
                name.withMemoryRebound(to: FcChar8.self, capacity: path.utf8.count + 1) { FcConfigAppFontAddDir(nil, $0) }
            }
            engine.forgetFallbacks()
            return added != 0
        }
    }

    /// For tests: how `text` is laid out on one line — each glyph's character (index into
    /// its Unicode scalars) from left to right, with the file of the font that draws it.
    static func visualOrder(_ text: String, font: String, pixelSize: Int) -> [(character: Int, fontFile: String)] {
        engine.withLock { engine in
            engine.shapeForInspection(text.unicodeScalars.map(\.value), family: font, size: Double(pixelSize)).runs.flatMap { run in
                run.clusters.map { (Int($0), run.font.path) }
            }
        }
    }

    private static let engine = Mutex(TextEngine())
}

private func addString(_ pattern: OpaquePointer, _ object: String, _ value: String) -> Bool {
    value.withCString { text in
        text.withMemoryRebound(to: FcChar8.self, capacity: value.utf8.count + 1) { FcPatternAddString(pattern, object, $0) != 0 }
    }
}

/// A font file loaded for shaping (HarfBuzz) and drawing (Cairo over FreeType), kept for the
/// life of the process (a handful: the families in use and their fallbacks).
private final class LoadedFont {
    let path: String
    let face: FT_Face
    let shaping: OpaquePointer
    let drawing: OpaquePointer

    init?(library: FT_Library, path: String, index: Int32) {
        var face: FT_Face?
        guard FT_New_Face(library, path, FT_Long(index), &face) == 0, let face else { return nil }
        guard let blob = hb_blob_create_from_file(path) else {
            FT_Done_Face(face)
            return nil
        }
        let hbFace = hb_face_create(blob, UInt32(index))
        hb_blob_destroy(blob)
        guard let font = hb_font_create(hbFace) else {
            hb_face_destroy(hbFace)
            FT_Done_Face(face)
            return nil
        }
        hb_face_destroy(hbFace)
        // FT_LOAD_COLOR: colour bitmap glyphs (emoji) drawn in colour.
        guard let drawing = cairo_ft_font_face_create_for_ft_face(face, 1 << 20) else {
            hb_font_destroy(font)
            FT_Done_Face(face)
            return nil
        }
        self.path = path
        self.face = face
        self.shaping = font
        self.drawing = drawing
    }
}

/// One font of a family's fallback list: where it is and what it covers.
private struct FallbackFont {
    let path: String
    let index: Int32
    let charset: OpaquePointer?
}

/// A shaped run: glyphs in visual order, one font, advances in 26.6 pixels.
private struct ShapedRun {
    var font: LoadedFont
    var glyphs: [cairo_glyph_t]
    /// Each glyph's character (index into the line's scalars).
    var clusters: [UInt32]
    var width: Double
}

private struct ShapedLine {
    var runs: [ShapedRun]
    var width: Double
    var rightToLeft: Bool
}

private final class TextEngine {
    private var library: FT_Library?
    private var fonts: [String: LoadedFont] = [:]
    /// Per family: fontconfig's list of fonts to try, best first (kept with its set).
    private var fallbacks: [String: (set: UnsafeMutablePointer<FcFontSet>, fonts: [FallbackFont])] = [:]

    init() {
        var library: FT_Library?
        if FT_Init_FreeType(&library) == 0 { self.library = library }
    }

    func forgetFallbacks() {
        for entry in fallbacks.values { FcFontSetDestroy(entry.set) }
        fallbacks = [:]
        _ = FcConfigBuildFonts(nil)
    }

    private func fallbackList(for family: String) -> [FallbackFont] {
        if let known = fallbacks[family] { return known.fonts }
        guard let pattern = FcPatternCreate() else { return [] }
        defer { FcPatternDestroy(pattern) }
        _ = addString(pattern, "family", family)
        FcConfigSubstitute(nil, pattern, FcMatchPattern)
        FcDefaultSubstitute(pattern)
        var result = FcResultMatch
        guard let set = FcFontSort(nil, pattern, 1, nil, &result) else { return [] }
        var list: [FallbackFont] = []
        for i in 0..<Int(set.pointee.nfont) {
            guard let font = set.pointee.fonts[i] else { continue }
            var file: UnsafeMutablePointer<FcChar8>?
            guard FcPatternGetString(font, "file", 0, &file) == FcResultMatch, let file else { continue }
            var index: Int32 = 0
            _ = FcPatternGetInteger(font, "index", 0, &index)
            var charset: OpaquePointer?
            _ = FcPatternGetCharSet(font, "charset", 0, &charset)
            list.append(FallbackFont(path: String(cString: file), index: index, charset: charset))
        }
        fallbacks[family] = (set, list)
        return list
    }

    private func load(_ fallback: FallbackFont) -> LoadedFont? {
        let key = "\(fallback.path)#\(fallback.index)"
        if let font = fonts[key] { return font }
        guard let library, let font = LoadedFont(library: library, path: fallback.path, index: fallback.index) else { return nil }
        fonts[key] = font
        return font
    }

    /// A character drawn with the font before it rather than a font of its own: marks, joiners
    /// and variation selectors belong to their base.
    private func followsPrevious(_ scalar: UInt32) -> Bool {
        if scalar == 0x200D || scalar == 0x200C || (0xFE00...0xFE0F).contains(scalar) || (0x1F3FB...0x1F3FF).contains(scalar)
            || (0xE0020...0xE007F).contains(scalar) { return true }
        let category = hb_unicode_general_category(hb_unicode_funcs_get_default(), scalar)
        return category == HB_UNICODE_GENERAL_CATEGORY_NON_SPACING_MARK || category == HB_UNICODE_GENERAL_CATEGORY_ENCLOSING_MARK
            || category == HB_UNICODE_GENERAL_CATEGORY_SPACING_MARK
    }

    func shapeForInspection(_ scalars: [UInt32], family: String, size: Double) -> ShapedLine {
        shape(scalars, family: family, size: size)
    }

    private func shape(_ scalars: [UInt32], family: String, size: Double) -> ShapedLine {
        let chain = fallbackList(for: family)
        guard !scalars.isEmpty, let primary = chain.first.flatMap(load) else { return ShapedLine(runs: [], width: 0, rightToLeft: false) }
        // Fonts, character by character.
        var fontIndex = [Int](repeating: 0, count: scalars.count)
        for (i, scalar) in scalars.enumerated() {
            if i > 0, followsPrevious(scalar) {
                fontIndex[i] = fontIndex[i - 1]
                continue
            }
            fontIndex[i] = chain.firstIndex { font in font.charset.map { FcCharSetHasChar($0, scalar) != 0 } ?? false } ?? 0
        }
        // Directions (FriBidi: the paragraph's from its first strong character).
        var types = [FriBidiCharType](repeating: FriBidiCharType(rawValue: 0), count: scalars.count)
        var brackets = [FriBidiBracketType](repeating: 0, count: scalars.count)
        var levels = [FriBidiLevel](repeating: 0, count: scalars.count)
        var base = FriBidiParType(rawValue: 64) // FRIBIDI_PAR_ON: from the text
        scalars.withUnsafeBufferPointer { text in
            fribidi_get_bidi_types(text.baseAddress, FriBidiStrIndex(scalars.count), &types)
            fribidi_get_bracket_types(text.baseAddress, FriBidiStrIndex(scalars.count), types, &brackets)
        }
        if fribidi_get_par_embedding_levels_ex(types, brackets, FriBidiStrIndex(scalars.count), &base, &levels) == 0 {
            levels = [FriBidiLevel](repeating: 0, count: scalars.count)
        }
        // Scripts: each shaper (Arabic joining, Hebrew, Indic …) sees its own script only.
        // Spaces, punctuation and marks (Common, Inherited) take the script before them (at the
        // start, the first one after).
        let unicode = hb_unicode_funcs_get_default()
        var scripts = scalars.map { hb_unicode_script(unicode, $0) }
        let neutral: Set<UInt32> = [HB_SCRIPT_COMMON.rawValue, HB_SCRIPT_INHERITED.rawValue, HB_SCRIPT_UNKNOWN.rawValue]
        if let first = scripts.first(where: { !neutral.contains($0.rawValue) }) {
            var current = first
            for i in scripts.indices {
                if neutral.contains(scripts[i].rawValue) { scripts[i] = current } else { current = scripts[i] }
            }
        }
        // Runs of one font, one level and one script, in logical order.
        var logicalRuns: [(start: Int, end: Int, font: Int, level: FriBidiLevel, script: hb_script_t)] = []
        var start = 0
        for i in 1...scalars.count
        where i == scalars.count || fontIndex[i] != fontIndex[start] || levels[i] != levels[start] || scripts[i] != scripts[start] {
            logicalRuns.append((start, i, fontIndex[start], levels[start], scripts[start]))
            start = i
        }
        // Visual order (UAX #9, L2): from the highest level down to the lowest odd one,
        // reverse every stretch of runs at that level or above.
        var order = Array(logicalRuns.indices)
        let highest = logicalRuns.map(\.level).max() ?? 0
        let lowestOdd = logicalRuns.map(\.level).filter { $0 & 1 == 1 }.min() ?? (highest + 1)
        var level = highest
        while level >= lowestOdd && level > 0 {
            var i = 0
            while i < order.count {
                guard logicalRuns[order[i]].level >= level else { i += 1; continue }
                var j = i
                while j < order.count, logicalRuns[order[j]].level >= level { j += 1 }
                order[i..<j].reverse()
                i = j
            }
            level -= 1
        }
        var runs: [ShapedRun] = []
        var x = 0.0
        let scale = Int32((size * 64).rounded())
        scalars.withUnsafeBufferPointer { text in
            for index in order {
                let run = logicalRuns[index]
                let font = load(chain[run.font]) ?? primary
                hb_font_set_scale(font.shaping, scale, scale)
                guard let buffer = hb_buffer_create() else { continue }
                defer { hb_buffer_destroy(buffer) }
                hb_buffer_add_utf32(buffer, text.baseAddress, Int32(scalars.count), UInt32(run.start), Int32(run.end - run.start))
                hb_buffer_set_direction(buffer, run.level & 1 == 1 ? HB_DIRECTION_RTL : HB_DIRECTION_LTR)
                hb_buffer_set_script(buffer, run.script)
                hb_buffer_guess_segment_properties(buffer)
                hb_shape(font.shaping, buffer, nil, 0)
                var count: UInt32 = 0
                guard let infos = hb_buffer_get_glyph_infos(buffer, &count),
                      let positions = hb_buffer_get_glyph_positions(buffer, &count) else { continue }
                var glyphs: [cairo_glyph_t] = []
                glyphs.reserveCapacity(Int(count))
                var clusters: [UInt32] = []
                clusters.reserveCapacity(Int(count))
                let runStart = x
                for g in 0..<Int(count) {
                    let position = positions[g]
                    glyphs.append(cairo_glyph_t(index: UInt(infos[g].codepoint),
                                                x: x + Double(position.x_offset) / 64,
                                                y: -Double(position.y_offset) / 64))
                    clusters.append(infos[g].cluster)
                    x += Double(position.x_advance) / 64
                }
                runs.append(ShapedRun(font: font, glyphs: glyphs, clusters: clusters, width: x - runStart))
            }
        }
        return ShapedLine(runs: runs, width: x, rightToLeft: base.rawValue == 273) // FRIBIDI_PAR_RTL
    }

    /// `scalars` shaped, cut and ended with an ellipsis when wider than `limit`.
    private func fitted(_ scalars: [UInt32], family: String, size: Double, limit: Double) -> ShapedLine {
        let whole = shape(scalars, family: family, size: size)
        guard whole.width > limit, scalars.count > 1 else { return whole }
        var low = 0, high = scalars.count - 1, best = shape([0x2026], family: family, size: size)
        while low <= high {
            let middle = (low + high) / 2
            let line = shape(Array(scalars[0..<middle]) + [0x2026], family: family, size: size)
            if line.width <= limit {
                best = line
                low = middle + 1
            } else {
                high = middle - 1
            }
        }
        return best
    }

    func draw(_ text: String, style: TextStyle, box: BoxStyle?, mutedBadge: Bool, maxWidth: Int?) -> RGBABitmap {
        let empty = RGBABitmap(width: 0, height: 0)
        let size = Double(max(1, min(style.pixelSize, TextDrawing.maximumSide / 2)))
        let padX = box.map { (size * $0.paddingX).rounded() } ?? 0
        let padY = box.map { (size * $0.paddingY).rounded() } ?? 0
        let badgeSide = mutedBadge ? (size * 1.1).rounded() : 0
        let badgeGap = mutedBadge && !text.isEmpty ? (size * 0.35).rounded() : 0
        let limit = Double(min(maxWidth ?? TextDrawing.maximumSide, TextDrawing.maximumSide))
        let textRoom = max(size, limit - 2 * padX - badgeSide - badgeGap)
        let paragraphs = text.split(separator: "\n", omittingEmptySubsequences: false).prefix(TextDrawing.maximumLines)
        let lines = paragraphs.map { fitted($0.unicodeScalars.map(\.value), family: style.font, size: size, limit: textRoom) }
        // Line metrics from the primary font.
        guard let primary = fallbackList(for: style.font).first.flatMap(load) else { return empty }
        let scale = Int32((size * 64).rounded())
        hb_font_set_scale(primary.shaping, scale, scale)
        var extents = hb_font_extents_t()
        _ = hb_font_get_h_extents(primary.shaping, &extents)
        let ascent = Double(extents.ascender) / 64
        let descent = -Double(extents.descender) / 64
        let lineHeight = ascent + descent + Double(extents.line_gap) / 64
        let textWidth = lines.map(\.width).max() ?? 0
        let textHeight = lines.isEmpty ? 0 : lineHeight * Double(lines.count - 1) + ascent + descent
        let contentHeight = max(textHeight, badgeSide)
        let width = Int(min(Double(TextDrawing.maximumSide), (textWidth + badgeGap + badgeSide + 2 * padX).rounded(.up)))
        let height = Int(min(Double(TextDrawing.maximumSide), (contentHeight + 2 * padY).rounded(.up)))
        guard width > 0, height > 0, let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, Int32(width), Int32(height)) else {
            return empty
        }
        defer { cairo_surface_destroy(surface) }
        guard let cr = cairo_create(surface) else { return empty }
        defer { cairo_destroy(cr) }
        if let options = cairo_font_options_create() {
            // Grey antialiasing: subpixel colour fringes would show in video.
            cairo_font_options_set_antialias(options, CAIRO_ANTIALIAS_GRAY)
            cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_SLIGHT)
            cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF)
            cairo_set_font_options(cr, options)
            cairo_font_options_destroy(options)
        }
        if let box {
            setColor(cr, box.color)
            roundedRectangle(cr, x: 0, y: 0, width: Double(width), height: Double(height),
                             radius: min(Double(height) * box.roundness, Double(width) / 2))
            cairo_fill(cr)
        }
        let rightToLeft = lines.first?.rightToLeft ?? false
        let textLeft = padX + (mutedBadge && rightToLeft ? badgeSide + badgeGap : 0)
        var baseline = padY + (contentHeight - textHeight) / 2 + ascent
        setColor(cr, style.color)
        cairo_set_font_size(cr, size)
        for line in lines {
            let indent = style.centered ? (textWidth - line.width) / 2 : (line.rightToLeft ? textWidth - line.width : 0)
            for run in line.runs where !run.glyphs.isEmpty {
                cairo_set_font_face(cr, run.font.drawing)
                cairo_set_font_size(cr, size)
                var glyphs = run.glyphs
                for g in glyphs.indices {
                    glyphs[g].x += textLeft + indent
                    glyphs[g].y += baseline
                }
                cairo_show_glyphs(cr, &glyphs, Int32(glyphs.count))
            }
            baseline += lineHeight
        }
        if mutedBadge {
            let badgeX = rightToLeft ? padX : padX + textWidth + badgeGap
            drawMutedBadge(cr, x: badgeX, y: padY + (contentHeight - badgeSide) / 2, side: badgeSide)
        }
        cairo_surface_flush(surface)
        return bitmap(of: surface, width: width, height: height)
    }

    private func setColor(_ cr: OpaquePointer, _ color: RGBAColor) {
        cairo_set_source_rgba(cr, Double(color.red) / 255, Double(color.green) / 255, Double(color.blue) / 255, Double(color.alpha) / 255)
    }

    private func roundedRectangle(_ cr: OpaquePointer, x: Double, y: Double, width: Double, height: Double, radius: Double) {
        let r = max(0, radius)
        cairo_new_sub_path(cr)
        cairo_arc(cr, x + width - r, y + r, r, -Double.pi / 2, 0)
        cairo_arc(cr, x + width - r, y + height - r, r, 0, Double.pi / 2)
        cairo_arc(cr, x + r, y + height - r, r, Double.pi / 2, Double.pi)
        cairo_arc(cr, x + r, y + r, r, Double.pi, 3 * Double.pi / 2)
        cairo_close_path(cr)
    }

    /// A red disc with a white microphone struck through.
    private func drawMutedBadge(_ cr: OpaquePointer, x: Double, y: Double, side: Double) {
        let cx = x + side / 2, cy = y + side / 2
        cairo_set_source_rgba(cr, 0.85, 0.19, 0.15, 1)
        cairo_arc(cr, cx, cy, side / 2, 0, 2 * Double.pi)
        cairo_fill(cr)
        cairo_set_source_rgba(cr, 1, 1, 1, 1)
        let capsuleWidth = side * 0.22, capsuleHeight = side * 0.36
        roundedRectangle(cr, x: cx - capsuleWidth / 2, y: cy - side * 0.28, width: capsuleWidth, height: capsuleHeight,
                         radius: capsuleWidth / 2)
        cairo_fill(cr)
        cairo_set_line_width(cr, max(1, side * 0.07))
        cairo_arc(cr, cx, cy - side * 0.02, side * 0.2, 0, Double.pi)
        cairo_stroke(cr)
        cairo_move_to(cr, cx, cy + side * 0.18)
        cairo_line_to(cr, cx, cy + side * 0.3)
        cairo_stroke(cr)
        cairo_set_line_width(cr, max(1, side * 0.08))
        cairo_move_to(cr, cx - side * 0.28, cy - side * 0.28)
        cairo_line_to(cr, cx + side * 0.28, cy + side * 0.28)
        cairo_stroke(cr)
    }

    /// Cairo's ARGB32 (premultiplied native-endian words) as RGBA bytes.
    private func bitmap(of surface: OpaquePointer, width: Int, height: Int) -> RGBABitmap {
        guard let data = cairo_image_surface_get_data(surface) else { return RGBABitmap(width: 0, height: 0) }
        let stride = Int(cairo_image_surface_get_stride(surface))
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        pixels.withUnsafeMutableBufferPointer { out in
            for row in 0..<height {
                let source = UnsafeRawPointer(data + row * stride)
                for column in 0..<width {
                    let word = source.loadUnaligned(fromByteOffset: column * 4, as: UInt32.self)
                    let o = (row * width + column) * 4
                    out[o] = UInt8(truncatingIfNeeded: word >> 16)
                    out[o + 1] = UInt8(truncatingIfNeeded: word >> 8)
                    out[o + 2] = UInt8(truncatingIfNeeded: word)
                    out[o + 3] = UInt8(truncatingIfNeeded: word >> 24)
                }
            }
        }
        return RGBABitmap(width: width, height: height, pixels: pixels)
    }
}
