// A small picture with alpha, as overlays are kept before they are converted for the canvas:
// 8-bit R, G, B, A per pixel, rows packed, colour premultiplied by alpha (a pixel's R, G and B
// never exceed its A), so blending is one multiply-add and scaling does not fringe.

public struct RGBABitmap: Hashable, Sendable {
    public let width: Int
    public let height: Int
    /// `width * height * 4` bytes: R, G, B, A, premultiplied.
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width >= 0 && height >= 0 && pixels.count == width * height * 4, "RGBABitmap: pixel count")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// Transparent.
    public init(width: Int, height: Int) {
        self.init(width: width, height: height, pixels: [UInt8](repeating: 0, count: max(0, width) * max(0, height) * 4))
    }

    /// One pixel (premultiplied).
    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        let i = (y * width + x) * 4
        return (pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }
}

/// An sRGB colour with straight (not premultiplied) alpha.
public struct RGBAColor: Hashable, Sendable {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8
    public var alpha: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    public static let white = RGBAColor(red: 255, green: 255, blue: 255)
    public static let black = RGBAColor(red: 0, green: 0, blue: 0)
}
