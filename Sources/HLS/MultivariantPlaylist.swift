// Multivariant (master) playlist rendering, RFC 8216 §4.3.4.2: one EXT-X-STREAM-INF per
// rendition (one per encoder configuration).
public import MediaCore

/// Width and height of a rendition's video: the media vocabulary's pixel size, whose
/// description ("1280x720") is RESOLUTION's and the thumbnail folders' names.
public typealias VideoResolution = PixelSize

public struct MultivariantPlaylist: Sendable, Hashable {
    public struct Variant: Sendable, Hashable {
        /// Peak bits per second, including audio and container overhead.
        public var bandwidth: Int
        public var averageBandwidth: Int?
        /// nil for an audio-only rendition.
        public var resolution: VideoResolution?
        /// Frames per second, rendered with three decimals (30000/1001 -> "29.970").
        public var frameRate: Rational?
        /// RFC 6381 codecs, e.g. "avc1.64001f,mp4a.40.2".
        public var codecs: String
        /// The media playlist, relative to the multivariant playlist.
        public var uri: String

        public init(bandwidth: Int, averageBandwidth: Int? = nil, resolution: VideoResolution?,
                    frameRate: Rational?, codecs: String, uri: String) {
            self.bandwidth = bandwidth
            self.averageBandwidth = averageBandwidth
            self.resolution = resolution
            self.frameRate = frameRate
            self.codecs = codecs
            self.uri = uri
        }
    }

    public var variants: [Variant]
    public var independentSegments: Bool

    public init(variants: [Variant], independentSegments: Bool = true) {
        self.variants = variants
        self.independentSegments = independentSegments
    }

    public func render() -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:3"]
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        for variant in variants {
            var attributes = ["BANDWIDTH=\(variant.bandwidth)"]
            if let average = variant.averageBandwidth { attributes.append("AVERAGE-BANDWIDTH=\(average)") }
            if let resolution = variant.resolution { attributes.append("RESOLUTION=\(resolution)") }
            if let frameRate = variant.frameRate {
                attributes.append("FRAME-RATE=\(DecimalText.threeDecimals(frameRate))")
            }
            attributes.append("CODECS=\"\(variant.codecs)\"")
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(variant.uri)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
