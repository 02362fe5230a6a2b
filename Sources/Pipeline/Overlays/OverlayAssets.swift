// Loading what an overlay description names, before any of it reaches a composition thread:
// image files (inside the overlay directory only, size-limited, decoded by FFmpeg with the
// same pixel limits as media) and fonts (known to the text stack). Every refusal names the
// field at fault (`overlays.images[0].file: ...`). The result is immutable and Sendable: the
// API hands it to the composition's mailbox, which only converts and draws it.

import FFmpeg
import Foundation
public import Layout
public import MediaCore
import OverlayDrawing

/// An overlay description with its images decoded: what a composition draws from.
public struct PreparedOverlays: Sendable, Equatable {
    public let configuration: OverlayConfiguration
    /// Decoded images (premultiplied), by `file` as the description writes it.
    public let images: [String: RGBABitmap]
    /// The font of text whose description names none.
    public let defaultFont: String

    public init(configuration: OverlayConfiguration, images: [String: RGBABitmap], defaultFont: String = "DejaVu Sans") {
        self.configuration = configuration
        self.images = images
        self.defaultFont = defaultFont
    }
}

/// Where overlay files and fonts come from (daemon: `overlays` in its configuration; `compose`:
/// the description's folder).
public struct OverlayAssets: Sendable {
    /// The folder image `file`s are relative to; nil: no files allowed.
    public var directory: String?
    /// The font family used when an overlay names none.
    public var defaultFont: String

    public static let maximumFileBytes = 16 << 20
    public static let maximumImageSide = 4096
    public static let maximumImagePixels = 4096 * 4096

    public init(directory: String?, defaultFont: String = "DejaVu Sans") {
        self.directory = directory
        self.defaultFont = defaultFont
    }

    /// Validates `configuration` (its shape, then its files and fonts) and decodes its images.
    public func prepare(_ configuration: OverlayConfiguration, prefix: String = "overlays") throws(LayoutValidationError) -> PreparedOverlays {
        try configuration.validate(prefix: prefix)
        var fonts: [(field: String, name: String)] = []
        if let font = configuration.labels?.font { fonts.append(("\(prefix).labels.font", font)) }
        if let font = configuration.slate?.font { fonts.append(("\(prefix).slate.font", font)) }
        for (index, banner) in (configuration.banners ?? []).enumerated() {
            if let font = banner.font { fonts.append(("\(prefix).banners[\(index)].font", font)) }
        }
        for (field, name) in fonts where !TextDrawing.fontExists(name) {
            throw .invalidField(field: field, reason: "no font of the family '\(name)' is installed")
        }
        var files: [(field: String, file: String)] = []
        for (index, image) in (configuration.images ?? []).enumerated() { files.append(("\(prefix).images[\(index)].file", image.file)) }
        if let file = configuration.background?.file { files.append(("\(prefix).background.file", file)) }
        if let file = configuration.slate?.file { files.append(("\(prefix).slate.file", file)) }
        var images: [String: RGBABitmap] = [:]
        for (field, file) in files where images[file] == nil {
            images[file] = try load(file, field: field)
        }
        return PreparedOverlays(configuration: configuration, images: images, defaultFont: defaultFont)
    }

    /// Adds a folder of fonts to those overlays are set with (process-wide); false when it
    /// cannot be read.
    public static func addFontDirectory(_ path: String) -> Bool { TextDrawing.addFontDirectory(path) }

    /// Whether the default font is installed (checked when the daemon starts).
    public var defaultFontExists: Bool { TextDrawing.fontExists(defaultFont) }

    private func load(_ file: String, field: String) throws(LayoutValidationError) -> RGBABitmap {
        guard let directory else {
            throw .invalidField(field: field, reason: "image files are not available here (no overlay directory is configured)")
        }
        // The validation refused absolute paths and `..`; the resolved path must still be
        // inside the directory (a symbolic link pointing out of it is refused too).
        let base = URL(fileURLWithPath: directory).standardizedFileURL.resolvingSymlinksInPath().path
        let path = URL(fileURLWithPath: base).appendingPathComponent(file).standardizedFileURL.resolvingSymlinksInPath().path
        guard path.hasPrefix(base.hasSuffix("/") ? base : base + "/") else {
            throw .invalidField(field: field, reason: "'\(file)' is outside the overlay directory")
        }
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard let attributes, (attributes[.type] as? FileAttributeType) == .typeRegular else {
            throw .invalidField(field: field, reason: "no file '\(file)' in the overlay directory")
        }
        let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        guard size <= Self.maximumFileBytes else {
            throw .invalidField(field: field, reason: "'\(file)' is \(size) bytes: over the limit of \(Self.maximumFileBytes)")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .invalidField(field: field, reason: "'\(file)' cannot be read")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: Self.maximumFileBytes + 1)) ?? Data()
        guard data.count <= Self.maximumFileBytes else {
            throw .invalidField(field: field, reason: "'\(file)' is over the limit of \(Self.maximumFileBytes) bytes")
        }
        do {
            return try ImageDecoder.decode([UInt8](data), maxSide: Self.maximumImageSide, maxPixels: Self.maximumImagePixels)
        } catch {
            throw .invalidField(field: field, reason: "'\(file)': \(error.message)")
        }
    }
}
