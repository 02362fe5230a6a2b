// Where every object of one individual participant recording goes (the seed's "IVS
// Individual Participant Recording", "Recording Contents"):
//
//   <stageId>/<stageSessionId>/<participantId>/<timestamp>/
//     events/recording-started.json, recording-ended.json | recording-failed.json
//     media/hls/multivariant.m3u8
//     media/hls/high/playlist.m3u8, init.mp4, 1.mp4, 2.mp4, ...
//     media/thumbnails/high/1.jpg, 2.jpg, ...
//     media/latest_thumbnail/high/thumb.jpg
//
// `<timestamp>` is when the recording started, "2024-01-01T12-00-55Z" (RFC 3339 with the
// colons replaced, as in the seed's key prefixes). Media is kept as the publisher sent it, so
// there is one rendition, "high". Pure.
public import Foundation

public struct ParticipantRecordingLayout: Sendable, Hashable {
    public var stageId: String
    public var sessionId: String
    public var participantId: String
    public var startedAt: Date

    public static let renditionPath = "high"

    public init(stageId: String, sessionId: String, participantId: String, startedAt: Date) {
        self.stageId = stageId
        self.sessionId = sessionId
        self.participantId = participantId
        self.startedAt = startedAt
    }

    /// "2024-01-01T12-00-55Z".
    public var timestamp: String { RFC3339.format(startedAt).replacingOccurrences(of: ":", with: "-") }

    /// `<stageId>/<sessionId>/<participantId>`: the participant's `recordingS3Prefix`.
    public var participantPrefix: String { "\(stageId)/\(sessionId)/\(participantId)" }

    /// `<participantPrefix>/<timestamp>`: the events' `recording_s3_key_prefix`.
    public var prefix: String { "\(participantPrefix)/\(timestamp)" }

    public func metadataKey(for status: RecordingStatus) -> String {
        "\(prefix)/\(RecordingLayout.eventsPath)/\(status.metadataFileName)"
    }

    public var multivariantPlaylistKey: String {
        "\(prefix)/\(RecordingLayout.hlsPath)/\(RecordingLayout.multivariantPlaylistName)"
    }

    public var renditionPrefix: String { "\(prefix)/\(RecordingLayout.hlsPath)/\(Self.renditionPath)" }

    public var mediaPlaylistKey: String { "\(renditionPrefix)/\(RecordingLayout.mediaPlaylistName)" }

    /// The initialization section of the `number`th run of the recording (a codec change
    /// starts a new one): `init.mp4`, then `init-2.mp4`, ...
    public static func initSegmentName(number: Int) -> String { number <= 1 ? "init.mp4" : "init-\(number).mp4" }

    /// Media segments are numbered from 1, as in the seed (`1.mp4`).
    public static func segmentName(number: Int) -> String { "\(number).mp4" }

    public func renditionKey(_ name: String) -> String { "\(renditionPrefix)/\(name)" }

    public func thumbnailKey(number: Int) -> String {
        "\(prefix)/\(RecordingLayout.thumbnailsPath)/\(Self.renditionPath)/\(RecordingLayout.thumbnailName(number: number))"
    }

    public var latestThumbnailKey: String {
        "\(prefix)/\(RecordingLayout.latestThumbnailPath)/\(Self.renditionPath)/\(RecordingLayout.latestThumbnailName)"
    }

    /// The metadata document for this recording: `media` lists what the configuration writes.
    public func metadata(stageArn: String, status: RecordingStatus, hls: Bool, sequentialThumbnails: Bool,
                         latestThumbnail: Bool) -> RecordingMetadata {
        RecordingMetadata(
            stageArn: stageArn, sessionId: sessionId, participantId: participantId, status: status,
            startedAt: status == .recordingStartFailed ? nil : startedAt,
            renditions: hls ? [RecordingMetadata.Rendition(path: Self.renditionPath, resolution: nil)] : [],
            thumbnails: sequentialThumbnails
                ? RecordingMetadata.ThumbnailSet(path: RecordingLayout.thumbnailsPath, resolutions: [], renditionPaths: [Self.renditionPath])
                : nil,
            latestThumbnail: latestThumbnail
                ? RecordingMetadata.ThumbnailSet(path: RecordingLayout.latestThumbnailPath, resolutions: [],
                                                 renditionPaths: [Self.renditionPath])
                : nil)
    }
}
