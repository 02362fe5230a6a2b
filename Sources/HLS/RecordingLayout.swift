// Where every object of a composite recording goes, relative to the bucket root. Mirrors
// the seed's "IVS Composite Recording" directory layout:
//
//   <stageId>/<compositionId>/<destinationId>/composite/
//     events/recording-started.json, recording-ended.json | recording-failed.json
//     media/hls/multivariant.m3u8
//     media/hls/<height>p<fps>-<encoderConfigurationId>/playlist.m3u8, 0.ts, 1.ts, ...
//     media/thumbnails/<w>x<h>/1.jpg, 2.jpg, ...
//     media/latest_thumbnail/<w>x<h>/thumb.jpg

/// Builds the object keys of one composite recording. Keys use "/" and never start with it.
public struct RecordingLayout: Sendable, Hashable {
    public var stageId: String
    public var compositionId: String
    public var destinationId: String

    public static let eventsPath = "events"
    public static let hlsPath = "media/hls"
    public static let multivariantPlaylistName = "multivariant.m3u8"
    public static let mediaPlaylistName = "playlist.m3u8"
    public static let initSegmentName = "init.mp4"
    public static let thumbnailsPath = "media/thumbnails"
    public static let latestThumbnailPath = "media/latest_thumbnail"
    public static let latestThumbnailName = "thumb.jpg"

    public init(stageId: String, compositionId: String, destinationId: String) {
        self.stageId = stageId
        self.compositionId = compositionId
        self.destinationId = destinationId
    }

    /// `<stageId>/<compositionId>/<destinationId>/composite`: the response's `recordingPrefix`.
    public var prefix: String { "\(stageId)/\(compositionId)/\(destinationId)/composite" }

    /// `720p30-abcdeABCDE12`. Pass a fractional frame rate rounded to the nearest integer.
    public static func renditionName(height: Int, framesPerSecond: Int, encoderConfigurationId: String) -> String {
        "\(height)p\(framesPerSecond)-\(encoderConfigurationId)"
    }

    /// Segment file name: the segment's media sequence number, from 0 (`0.ts`, `1.ts`, or
    /// `0.m4s` for fMP4), so names and EXT-X-MEDIA-SEQUENCE agree.
    public static func segmentName(sequence: Int, fileExtension: String = "ts") -> String {
        "\(sequence).\(fileExtension)"
    }

    /// Sequential thumbnail name, numbered from 1 like the seed's examples (`1.jpg`).
    public static func thumbnailName(number: Int) -> String { "\(number).jpg" }

    /// The changes a producer made while it ran (`events/directions.json`), for a re-render.
    public var directionsKey: String { "\(prefix)/\(RecordingLayout.eventsPath)/directions.json" }

    public func metadataKey(for status: RecordingStatus) -> String {
        "\(prefix)/\(RecordingLayout.eventsPath)/\(status.metadataFileName)"
    }

    public var multivariantPlaylistKey: String {
        "\(prefix)/\(RecordingLayout.hlsPath)/\(RecordingLayout.multivariantPlaylistName)"
    }

    public func renditionPrefix(rendition: String) -> String { "\(prefix)/\(RecordingLayout.hlsPath)/\(rendition)" }

    public func mediaPlaylistKey(rendition: String) -> String {
        "\(renditionPrefix(rendition: rendition))/\(RecordingLayout.mediaPlaylistName)"
    }

    public func segmentKey(rendition: String, sequence: Int, fileExtension: String = "ts") -> String {
        "\(renditionPrefix(rendition: rendition))/\(RecordingLayout.segmentName(sequence: sequence, fileExtension: fileExtension))"
    }

    public func initSegmentKey(rendition: String) -> String {
        "\(renditionPrefix(rendition: rendition))/\(RecordingLayout.initSegmentName)"
    }

    public func thumbnailKey(resolution: VideoResolution, number: Int) -> String {
        "\(prefix)/\(RecordingLayout.thumbnailsPath)/\(resolution)/\(RecordingLayout.thumbnailName(number: number))"
    }

    public func latestThumbnailKey(resolution: VideoResolution) -> String {
        "\(prefix)/\(RecordingLayout.latestThumbnailPath)/\(resolution)/\(RecordingLayout.latestThumbnailName)"
    }
}
