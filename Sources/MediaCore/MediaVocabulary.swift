// The words every media module shares: what kind of stream, which compressed codec and its
// setup, and pixel sizes and rectangles. They live here, at the bottom, so that ingest, the
// live hub, layouts and the FFmpeg wrapper can all speak them without importing each other.

/// The kind of an elementary stream.
public enum MediaType: Sendable, Equatable { case video, audio, other }

/// The compressed formats live ingest hands to decoders. (Which of them this FFmpeg build
/// decodes is FFmpeg's business: `CompressedCodec.isDecodable` there.)
public enum CompressedCodec: String, Sendable, Equatable, CaseIterable {
    case h264, hevc, av1, vp8, vp9, aac, mp3, opus

    public var mediaType: MediaType {
        switch self {
        case .h264, .hevc, .av1, .vp8, .vp9: .video
        case .aac, .mp3, .opus: .audio
        }
    }
}

/// A live stream's codec setup: the codec, its configuration record (extradata, in the
/// ISO-BMFF form RTMP carries: avcC, hvcC, av1C, AudioSpecificConfig) and what the
/// publisher announced about the picture or sound (0 when unknown).
public struct CodecConfiguration: Sendable, Equatable {
    public var codec: CompressedCodec
    public var extradata: [UInt8]
    public var width: Int
    public var height: Int
    public var sampleRate: Int
    public var channelCount: Int

    public init(codec: CompressedCodec, extradata: [UInt8] = [], width: Int = 0, height: Int = 0,
                sampleRate: Int = 0, channelCount: Int = 0) {
        self.codec = codec
        self.extradata = extradata
        self.width = width
        self.height = height
        self.sampleRate = sampleRate
        self.channelCount = channelCount
    }
}

/// A pixel size (canvas or video).
public struct PixelSize: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)" }
}

/// An axis-aligned rectangle in pixels: a tile on the canvas, a source crop, a scaler's
/// destination. Layout engines only produce even values (YUV 4:2:0 chroma is subsampled by
/// two in both directions).
public struct Rect: Hashable, Sendable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var maxX: Int { x + width }
    public var maxY: Int { y + height }
    public var area: Int { width * height }
    public var description: String { "\(width)x\(height)+\(x)+\(y)" }

    public func intersects(_ other: Rect) -> Bool {
        x < other.maxX && other.x < maxX && y < other.maxY && other.y < maxY
    }

    public func contains(_ other: Rect) -> Bool {
        other.x >= x && other.y >= y && other.maxX <= maxX && other.maxY <= maxY
    }
}
