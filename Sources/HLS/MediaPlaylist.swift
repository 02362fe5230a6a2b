// Media (rendition) playlist rendering, RFC 8216 §4.3. Pure: returns the text; the recorder
// stores it. Rewritten in full as segments are added (at most once a second of media for an
// individual recording: PlaylistWriteSchedule): EVENT while recording, VOD at the end.
public import MediaCore

/// One media segment: its URI relative to the playlist and its exact duration.
public struct HLSSegment: Sendable, Hashable {
    public var uri: String
    /// Any time base; rendered in milliseconds rounded to nearest.
    public var duration: MediaTime
    /// EXT-X-DISCONTINUITY before it: the media before it does not continue into it (a
    /// publisher that reconnected, a codec change).
    public var discontinuity: Bool
    /// Its fMP4 initialization section, when it differs from the playlist's (a codec change
    /// mid-recording): EXT-X-MAP is repeated before it.
    public var initSegmentURI: String?
    /// EXT-X-PROGRAM-DATE-TIME before it (ms since 1970): the wall-clock time of its first
    /// sample. Written on a recording's first segment and after each discontinuity, so a
    /// re-render can place the media on the stage's timeline, gaps included.
    public var programDateTimeMs: Int64?

    public init(uri: String, duration: MediaTime, discontinuity: Bool = false, initSegmentURI: String? = nil,
                programDateTimeMs: Int64? = nil) {
        self.uri = uri
        self.duration = duration
        self.discontinuity = discontinuity
        self.initSegmentURI = initSegmentURI
        self.programDateTimeMs = programDateTimeMs
    }
}

public struct MediaPlaylist: Sendable, Hashable {
    public enum PlaylistType: String, Sendable, Hashable {
        /// Segments are only appended (a recording in progress).
        case event = "EVENT"
        /// The playlist will not change (a finished recording).
        case vod = "VOD"
    }

    /// The configured segment length. The rendered EXT-X-TARGETDURATION is never below it,
    /// and raised when a segment's rounded duration exceeds it (RFC 8216 §4.3.3.1).
    public var targetDurationSeconds: Int
    public var mediaSequence: Int
    public var playlistType: PlaylistType
    public var segments: [HLSSegment]
    /// The fMP4 initialization section (EXT-X-MAP). nil for MPEG-TS segments.
    public var initSegmentURI: String?
    public var endList: Bool
    public var independentSegments: Bool

    public init(targetDurationSeconds: Int, mediaSequence: Int = 0, playlistType: PlaylistType = .event,
                segments: [HLSSegment] = [], initSegmentURI: String? = nil, endList: Bool = false,
                independentSegments: Bool = true) {
        self.targetDurationSeconds = targetDurationSeconds
        self.mediaSequence = mediaSequence
        self.playlistType = playlistType
        self.segments = segments
        self.initSegmentURI = initSegmentURI
        self.endList = endList
        self.independentSegments = independentSegments
    }

    /// The same playlist closed as a finished recording: VOD with EXT-X-ENDLIST.
    public func finished() -> MediaPlaylist {
        var copy = self
        copy.playlistType = .vod
        copy.endList = true
        return copy
    }

    /// EXT-X-VERSION: 3 for decimal EXTINF with TS segments; 7 when EXT-X-MAP is used
    /// (version 6 is the minimum for EXT-X-MAP without I-frames; 7 matches common packagers).
    public var version: Int { initSegmentURI == nil ? 3 : 7 }

    /// The value written to EXT-X-TARGETDURATION: the configured target or the largest
    /// segment duration rounded to the nearest second, whichever is larger. Rounding uses
    /// the rendered (millisecond) EXTINF value so a player rounding that text agrees.
    public var renderedTargetDuration: Int {
        var target = max(targetDurationSeconds, 1)
        for segment in segments {
            let ms = segment.duration.roundedMilliseconds
            target = max(target, Int((ms + 500) / 1000))
        }
        return target
    }

    public func render() -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-TARGETDURATION:\(renderedTargetDuration)",
                     "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)", "#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)"]
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        if let initSegmentURI { lines.append("#EXT-X-MAP:URI=\"\(initSegmentURI)\"") }
        var currentMap = initSegmentURI
        for segment in segments {
            if segment.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if let map = segment.initSegmentURI, map != currentMap {
                lines.append("#EXT-X-MAP:URI=\"\(map)\"")
                currentMap = map
            }
            if let time = segment.programDateTimeMs {
                lines.append("#EXT-X-PROGRAM-DATE-TIME:\(UTCTimestamp.format(millisecondsSince1970: time))")
            }
            lines.append("#EXTINF:\(DecimalText.thousandths(segment.duration.roundedMilliseconds)),")
            lines.append(segment.uri)
        }
        if endList { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Total duration in milliseconds: the sum of the exact segment durations, rounded once
    /// (the recording metadata's `duration_ms`).
    public var durationMs: Int64 {
        guard let first = segments.first else { return 0 }
        var total = MediaTime(ticks: 0, timeBase: first.duration.timeBase)
        for segment in segments { total = total + segment.duration }
        return total.roundedMilliseconds
    }
}
