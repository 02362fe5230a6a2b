public import MediaCore
// The composite recording's JSON metadata files (the seed's "JSON Metadata Files"):
// events/recording-started.json, recording-ended.json, recording-failed.json.
//
// Placement of `thumbnails` / `latest_thumbnail`: the seed's examples are broken across
// pages and their indentation is inconsistent, but in every example the braces place them
// inside `media`, next to `hls` (and the field table nests them under `media`). We write
// them there.
public import Foundation

public enum RecordingStatus: String, Sendable, Hashable, CaseIterable {
    case recordingStarted = "RECORDING_STARTED"
    case recordingEnded = "RECORDING_ENDED"
    case recordingStartFailed = "RECORDING_START_FAILED"
    case recordingEndedWithFailure = "RECORDING_ENDED_WITH_FAILURE"

    /// The file the status is written to under `events/`.
    public var metadataFileName: String {
        switch self {
        case .recordingStarted: "recording-started.json"
        case .recordingEnded: "recording-ended.json"
        case .recordingStartFailed, .recordingEndedWithFailure: "recording-failed.json"
        }
    }

    /// ENDED and ENDED_WITH_FAILURE carry `recording_ended_at`, `duration_ms` and the message.
    var hasEnded: Bool { self == .recordingEnded || self == .recordingEndedWithFailure }
}

public struct RecordingMetadata: Sendable, Hashable {
    public struct Rendition: Sendable, Hashable {
        /// Folder relative to `media/hls`, e.g. `720p30-abcdeABCDE12`.
        public var path: String
        public var playlist: String
        /// nil for a rendition without video.
        public var resolution: VideoResolution?

        public init(path: String, playlist: String = RecordingLayout.mediaPlaylistName, resolution: VideoResolution?) {
            self.path = path
            self.playlist = playlist
            self.resolution = resolution
        }
    }

    public struct ThumbnailSet: Sendable, Hashable {
        /// `media/thumbnails` or `media/latest_thumbnail`.
        public var path: String
        /// At least one; each is stored in the folder named after it (`1280x720`).
        public var resolutions: [VideoResolution]
        /// Individual participant recordings name their renditions by path ("high") instead.
        public var renditionPaths: [String]?

        public init(path: String, resolutions: [VideoResolution], renditionPaths: [String]? = nil) {
            self.renditionPaths = renditionPaths
            self.path = path
            self.resolutions = resolutions
        }

        public static func sequential(_ resolutions: [VideoResolution]) -> ThumbnailSet {
            ThumbnailSet(path: RecordingLayout.thumbnailsPath, resolutions: resolutions)
        }

        public static func latest(_ resolutions: [VideoResolution]) -> ThumbnailSet {
            ThumbnailSet(path: RecordingLayout.latestThumbnailPath, resolutions: resolutions)
        }
    }

    public var version: String
    public var stageArn: String
    /// Individual participant recordings name the stage session and the participant.
    public var sessionId: String?
    public var participantId: String?
    public var status: RecordingStatus
    /// Written unless the status is RECORDING_START_FAILED.
    public var startedAt: Date?
    /// Written only for RECORDING_ENDED / RECORDING_ENDED_WITH_FAILURE.
    public var endedAt: Date?
    /// Written only for RECORDING_ENDED / RECORDING_ENDED_WITH_FAILURE, when set.
    public var statusMessage: String?
    /// Written only for RECORDING_ENDED / RECORDING_ENDED_WITH_FAILURE; nil renders as 0
    /// ("a failure before any recording was done").
    public var durationMs: Int64?
    public var hlsPath: String
    public var multivariantPlaylist: String
    public var renditions: [Rendition]
    /// Present when the thumbnail storage includes SEQUENTIAL.
    public var thumbnails: ThumbnailSet?
    /// Present when the thumbnail storage includes LATEST.
    public var latestThumbnail: ThumbnailSet?

    public init(stageArn: String, sessionId: String? = nil, participantId: String? = nil, status: RecordingStatus,
                startedAt: Date?, endedAt: Date? = nil,
                statusMessage: String? = nil, durationMs: Int64? = nil, renditions: [Rendition],
                thumbnails: ThumbnailSet? = nil, latestThumbnail: ThumbnailSet? = nil,
                hlsPath: String = RecordingLayout.hlsPath,
                multivariantPlaylist: String = RecordingLayout.multivariantPlaylistName,
                version: String = "v1") {
        self.version = version
        self.stageArn = stageArn
        self.sessionId = sessionId
        self.participantId = participantId
        self.status = status
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.statusMessage = statusMessage
        self.durationMs = durationMs
        self.hlsPath = hlsPath
        self.multivariantPlaylist = multivariantPlaylist
        self.renditions = renditions
        self.thumbnails = thumbnails
        self.latestThumbnail = latestThumbnail
    }

    /// This recording, finished: RECORDING_ENDED, or RECORDING_ENDED_WITH_FAILURE with a
    /// `failure` message.
    public func ended(at date: Date, durationMs: Int64, failure: String? = nil, message: String? = nil) -> RecordingMetadata {
        var copy = self
        copy.status = failure == nil ? .recordingEnded : .recordingEndedWithFailure
        copy.endedAt = date
        copy.durationMs = durationMs
        copy.statusMessage = failure ?? message
        return copy
    }

    /// The file name under `events/` for the current status.
    public var fileName: String { status.metadataFileName }

    public func jsonData() -> Data { Data(jsonText().utf8) }

    /// The document as text, fields in the seed's order, with a trailing newline.
    public func jsonText() -> String { jsonValue.rendered() + "\n" }

    var jsonValue: OrderedJSON {
        var root: [(key: String, value: OrderedJSON)] = [
            ("version", .string(version)),
            ("stage_arn", .string(stageArn)),
        ]
        if let sessionId { root.append(("session_id", .string(sessionId))) }
        if let participantId { root.append(("participant_id", .string(participantId))) }
        if status != .recordingStartFailed, let startedAt {
            root.append(("recording_started_at", .string(RFC3339.format(startedAt))))
        }
        if status.hasEnded, let endedAt {
            root.append(("recording_ended_at", .string(RFC3339.format(endedAt))))
        }
        root.append(("recording_status", .string(status.rawValue)))
        if status.hasEnded, let statusMessage {
            root.append(("recording_status_message", .string(statusMessage)))
        }

        var hls: [(key: String, value: OrderedJSON)] = []
        if status.hasEnded { hls.append(("duration_ms", .integer(durationMs ?? 0))) }
        hls.append(("path", .string(hlsPath)))
        hls.append(("playlist", .string(multivariantPlaylist)))
        hls.append(("renditions", .array(renditions.map { rendition in
            var fields: [(key: String, value: OrderedJSON)] = [
                ("path", .string(rendition.path)), ("playlist", .string(rendition.playlist)),
            ]
            if let resolution = rendition.resolution {
                fields.append(("resolution_width", .integer(Int64(resolution.width))))
                fields.append(("resolution_height", .integer(Int64(resolution.height))))
            }
            return .object(fields)
        })))

        var media: [(key: String, value: OrderedJSON)] = [("hls", .object(hls))]
        if let thumbnails { media.append(("thumbnails", thumbnails.jsonValue)) }
        if let latestThumbnail { media.append(("latest_thumbnail", latestThumbnail.jsonValue)) }
        root.append(("media", .object(media)))
        return .object(root)
    }
}

extension RecordingMetadata.ThumbnailSet {
    var jsonValue: OrderedJSON {
        if let renditionPaths {
            return .object([("path", .string(path)),
                            ("renditions", .array(renditionPaths.map { .object([("path", .string($0))]) }))])
        }
        return .object([
            ("path", .string(path)),
            ("resolutions", .array(resolutions.map { resolution in
                .object([
                    ("path", .string(resolution.description)),
                    ("resolution_width", .integer(Int64(resolution.width))),
                    ("resolution_height", .integer(Int64(resolution.height))),
                ])
            })),
        ])
    }
}

/// RFC 3339 UTC timestamps with whole seconds ("2023-11-01T06:01:36Z"), computed with
/// integer civil-date arithmetic: no formatter, no locale, no shared mutable state.
public enum RFC3339 {
    public static func format(_ date: Date) -> String {
        UTCTimestamp.format(secondsSince1970: Int64(date.timeIntervalSince1970.rounded(.down)))
    }
}
