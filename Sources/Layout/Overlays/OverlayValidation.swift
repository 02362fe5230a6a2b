// The one place overlay descriptions are validated: StartComposition and UpdateComposition
// (through APIModels), `compose --overlays`, a recorded stage's directions and the loader
// (`OverlayAssets.prepare`) all get these checks and this wording. Only the shape is checked
// here; whether files exist and fonts are known is the loader's business.

import MediaCore

/// The limits of an overlay description, named once (docs/daemon.md lists them).
public enum OverlayLimits {
    /// Pixels between an overlay (or a label's pill) and the edge it is placed against.
    public static let margin = 0...1000
    /// A label's text height relative to its tile's height.
    public static let fontScale: ClosedRange<Double> = 0.02...0.25
    /// A font family's name, in UTF-8 bytes.
    public static let fontNameBytes = 1...128
    public static let maximumImages = 8
    /// An image `file`'s path, in UTF-8 bytes.
    public static let fileBytes = 1...255
    /// An image's `x` and `y`.
    public static let coordinate = 0...8192
    /// An image's `width` and `height`.
    public static let size = 1...4096
    public static let opacity: ClosedRange<Double> = 0...1
    /// A slate's or a banner's text, in UTF-8 bytes.
    public static let textBytes = 1...500
    public static let maximumTextLines = 4
    /// A slate's or a banner's text height in pixels.
    public static let fontSize = 8...400
    public static let maximumBanners = 8
    /// A banner's `id`: `[A-Za-z0-9_-]`, this many characters.
    public static let bannerIdLength = 1...64
    /// How long a banner fades in or out (ms).
    public static let transitionMs = 0...5000
}

extension OverlayConfiguration {
    /// Checks the description's shape against `OverlayLimits`. `prefix` is its path in its
    /// request (`overlays` in StartComposition). The first problem wins, in field order.
    public func validate(prefix: String = "overlays") throws(LayoutValidationError) {
        if let labels { try labels.validate(prefix: "\(prefix).labels") }
        if let images {
            if images.count > OverlayLimits.maximumImages {
                throw .invalidField(field: "\(prefix).images", reason: "at most \(OverlayLimits.maximumImages) images (got \(images.count))")
            }
            for (index, image) in images.enumerated() { try image.validate(prefix: "\(prefix).images[\(index)]") }
        }
        if let background { try background.validate(prefix: "\(prefix).background") }
        if let slate { try slate.validate(prefix: "\(prefix).slate") }
        if let banners {
            if banners.count > OverlayLimits.maximumBanners {
                throw .invalidField(field: "\(prefix).banners", reason: "at most \(OverlayLimits.maximumBanners) banners (got \(banners.count))")
            }
            var seen: [String: Int] = [:]
            for (index, banner) in banners.enumerated() {
                try banner.validate(prefix: "\(prefix).banners[\(index)]")
                if let first = seen[banner.id] {
                    throw .invalidField(field: "\(prefix).banners[\(index)].id",
                                        reason: "'\(banner.id)' is already the id of banners[\(first)]")
                }
                seen[banner.id] = index
            }
        }
    }
}

extension LabelOverlay {
    public func validate(prefix: String = "overlays.labels") throws(LayoutValidationError) {
        if let attribute {
            if attribute.isEmpty { throw .invalidField(field: "\(prefix).attribute", reason: "must not be empty") }
            try validateAttributeKey(attribute, field: "\(prefix).attribute")
        }
        try OverlayRule.range(margin, OverlayLimits.margin, field: "\(prefix).margin")
        // (A range holds no NaN or infinity.)
        if let fontScale, !OverlayLimits.fontScale.contains(fontScale) {
            throw .invalidField(field: "\(prefix).fontScale", reason: "must be between \(OverlayLimits.fontScale.lowerBound) and \(OverlayLimits.fontScale.upperBound) (got \(fontScale))")
        }
        try OverlayRule.font(font, field: "\(prefix).font")
        try OverlayRule.color(textColor, field: "\(prefix).textColor")
        try OverlayRule.color(backgroundColor, field: "\(prefix).backgroundColor")
    }
}

extension ImageOverlay {
    public func validate(prefix: String = "overlays.images[0]") throws(LayoutValidationError) {
        try OverlayRule.file(file, field: "\(prefix).file")
        try OverlayRule.range(margin, OverlayLimits.margin, field: "\(prefix).margin")
        try OverlayRule.range(x, OverlayLimits.coordinate, field: "\(prefix).x")
        try OverlayRule.range(y, OverlayLimits.coordinate, field: "\(prefix).y")
        if (x == nil) != (y == nil) {
            throw .invalidField(field: "\(prefix).\(x == nil ? "x" : "y")", reason: "is required with \(x == nil ? "y" : "x")")
        }
        if position != nil, x != nil {
            throw .invalidField(field: "\(prefix).position", reason: "give either position or x and y, not both")
        }
        try OverlayRule.range(width, OverlayLimits.size, field: "\(prefix).width")
        try OverlayRule.range(height, OverlayLimits.size, field: "\(prefix).height")
        if let opacity, !OverlayLimits.opacity.contains(opacity) {
            throw .invalidField(field: "\(prefix).opacity", reason: "must be between 0 and 1 (got \(opacity))")
        }
    }
}

extension BackgroundOverlay {
    public func validate(prefix: String = "overlays.background") throws(LayoutValidationError) {
        if color == nil, file == nil { throw .invalidField(field: prefix, reason: "give a color or a file") }
        try OverlayRule.color(color, field: "\(prefix).color")
        if let file { try OverlayRule.file(file, field: "\(prefix).file") }
    }
}

extension SlateOverlay {
    public func validate(prefix: String = "overlays.slate") throws(LayoutValidationError) {
        if text == nil, file == nil, backgroundColor == nil {
            throw .invalidField(field: prefix, reason: "give a text, a file or a backgroundColor")
        }
        if let text { try OverlayRule.text(text, field: "\(prefix).text") }
        if let file { try OverlayRule.file(file, field: "\(prefix).file") }
        try OverlayRule.range(fontSize, OverlayLimits.fontSize, field: "\(prefix).fontSize")
        try OverlayRule.font(font, field: "\(prefix).font")
        try OverlayRule.color(textColor, field: "\(prefix).textColor")
        try OverlayRule.color(backgroundColor, field: "\(prefix).backgroundColor")
    }
}

extension BannerOverlay {
    public func validate(prefix: String = "overlays.banners[0]") throws(LayoutValidationError) {
        let idIsValid = OverlayLimits.bannerIdLength.contains(id.utf8.count) && id.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F
        }
        if !idIsValid {
            throw .invalidField(field: "\(prefix).id", reason: "\(OverlayRule.quoted(id)) must match [A-Za-z0-9_-]{1,64}")
        }
        try OverlayRule.text(text, field: "\(prefix).text")
        try OverlayRule.range(margin, OverlayLimits.margin, field: "\(prefix).margin")
        try OverlayRule.range(fontSize, OverlayLimits.fontSize, field: "\(prefix).fontSize")
        try OverlayRule.font(font, field: "\(prefix).font")
        try OverlayRule.color(textColor, field: "\(prefix).textColor")
        try OverlayRule.color(backgroundColor, field: "\(prefix).backgroundColor")
        try OverlayRule.range(transitionMs, OverlayLimits.transitionMs, field: "\(prefix).transitionMs")
    }
}

/// Single-field rules of overlay descriptions; each throws naming `field`.
enum OverlayRule {
    static func range(_ value: Int?, _ limits: ClosedRange<Int>, field: String) throws(LayoutValidationError) {
        if let value, !limits.contains(value) {
            throw .invalidField(field: field, reason: "must be between \(limits.lowerBound) and \(limits.upperBound) (got \(value))")
        }
    }

    static func color(_ value: String?, field: String) throws(LayoutValidationError) {
        if let value, RGBAColor(hex: value) == nil {
            throw .invalidField(field: field, reason: "\(quoted(value)) must be #RRGGBB or #RRGGBBAA")
        }
    }

    static func font(_ value: String?, field: String) throws(LayoutValidationError) {
        guard let value else { return }
        let bytes = value.utf8.count
        if !OverlayLimits.fontNameBytes.contains(bytes) {
            throw .invalidField(field: field, reason: "must be \(OverlayLimits.fontNameBytes.lowerBound) to \(OverlayLimits.fontNameBytes.upperBound) bytes of UTF-8 (got \(bytes))")
        }
        if value.unicodeScalars.contains(where: isControl) {
            throw .invalidField(field: field, reason: "must not contain control characters")
        }
    }

    /// A file beside the description or in the overlay directory: a plain relative path, so
    /// that no description reaches a file outside it.
    static func file(_ value: String, field: String) throws(LayoutValidationError) {
        let bytes = value.utf8.count
        if !OverlayLimits.fileBytes.contains(bytes) {
            throw .invalidField(field: field, reason: "must be \(OverlayLimits.fileBytes.lowerBound) to \(OverlayLimits.fileBytes.upperBound) bytes of UTF-8 (got \(bytes))")
        }
        if value.unicodeScalars.contains(where: isControl) {
            throw .invalidField(field: field, reason: "must not contain control characters")
        }
        if value.hasPrefix("/") {
            throw .invalidField(field: field, reason: "\(quoted(value)) must be a relative path (no leading /)")
        }
        if value.contains("\\") {
            throw .invalidField(field: field, reason: "\(quoted(value)) must use / between folders, not \\")
        }
        if value.split(separator: "/", omittingEmptySubsequences: false).contains("..") {
            throw .invalidField(field: field, reason: "\(quoted(value)) must not contain a .. component")
        }
    }

    /// A slate's or a banner's text: UTF-8 within the byte limit, lines broken by `\n` only.
    static func text(_ value: String, field: String) throws(LayoutValidationError) {
        let bytes = value.utf8.count
        if !OverlayLimits.textBytes.contains(bytes) {
            throw .invalidField(field: field, reason: "must be \(OverlayLimits.textBytes.lowerBound) to \(OverlayLimits.textBytes.upperBound) bytes of UTF-8 (got \(bytes))")
        }
        if value.unicodeScalars.contains(where: { $0 != "\n" && isControl($0) }) {
            throw .invalidField(field: field, reason: "must not contain control characters other than \\n")
        }
        let lines = value.unicodeScalars.lazy.filter { $0 == "\n" }.count + 1
        if lines > OverlayLimits.maximumTextLines {
            throw .invalidField(field: field, reason: "at most \(OverlayLimits.maximumTextLines) lines (got \(lines))")
        }
    }

    /// C0, DEL and C1 (Unicode's Cc).
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control
    }

    /// Quotes user input in messages, cut short so that a huge value cannot flood a log line.
    /// Control characters are shown escaped.
    static func quoted(_ value: String) -> String {
        var shown = ""
        for (index, scalar) in value.unicodeScalars.enumerated() {
            if index == 80 { return "'\(shown)...'" }
            shown += isControl(scalar) ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return "'\(shown)'"
    }
}
