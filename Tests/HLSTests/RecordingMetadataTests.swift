import Foundation
import Testing
@testable import HLS

@Suite struct RecordingMetadataTests {
    let stageArn = "arn:aws:ivs:ap-northeast-1:123456789012:stage/aAbBcCdDeE12"
    let hd = VideoResolution(width: 1280, height: 720)

    var started: RecordingMetadata {
        RecordingMetadata(stageArn: stageArn, status: .recordingStarted,
                          startedAt: Date(timeIntervalSince1970: 1_698_818_496),
                          renditions: [.init(path: "720p30-abcdeABCDE12", resolution: hd)],
                          thumbnails: .sequential([hd]), latestThumbnail: .latest([hd]))
    }

    /// The seed's recording-started.json, with thumbnails inside `media` (see RecordingMetadata.swift).
    @Test func recordingStartedMatchesSeedExample() {
        #expect(started.fileName == "recording-started.json")
        #expect(String(decoding: started.jsonData(), as: UTF8.self) == """
            {
              "version": "v1",
              "stage_arn": "arn:aws:ivs:ap-northeast-1:123456789012:stage/aAbBcCdDeE12",
              "recording_started_at": "2023-11-01T06:01:36Z",
              "recording_status": "RECORDING_STARTED",
              "media": {
                "hls": {
                  "path": "media/hls",
                  "playlist": "multivariant.m3u8",
                  "renditions": [
                    {
                      "path": "720p30-abcdeABCDE12",
                      "playlist": "playlist.m3u8",
                      "resolution_width": 1280,
                      "resolution_height": 720
                    }
                  ]
                },
                "thumbnails": {
                  "path": "media/thumbnails",
                  "resolutions": [
                    {
                      "path": "1280x720",
                      "resolution_width": 1280,
                      "resolution_height": 720
                    }
                  ]
                },
                "latest_thumbnail": {
                  "path": "media/latest_thumbnail",
                  "resolutions": [
                    {
                      "path": "1280x720",
                      "resolution_width": 1280,
                      "resolution_height": 720
                    }
                  ]
                }
              }
            }

            """)
    }

    /// The seed's recording-ended.json (its values), without thumbnails configured.
    @Test func recordingEndedMatchesSeedExample() {
        var metadata = started
        metadata.startedAt = Date(timeIntervalSince1970: 1_698_426_044)
        metadata.thumbnails = nil
        metadata.latestThumbnail = nil
        let ended = metadata.ended(at: Date(timeIntervalSince1970: 1_698_426_504.9), durationMs: 460_315)
        #expect(ended.status == .recordingEnded)
        #expect(ended.fileName == "recording-ended.json")
        #expect(ended.jsonText() == """
            {
              "version": "v1",
              "stage_arn": "arn:aws:ivs:ap-northeast-1:123456789012:stage/aAbBcCdDeE12",
              "recording_started_at": "2023-10-27T17:00:44Z",
              "recording_ended_at": "2023-10-27T17:08:24Z",
              "recording_status": "RECORDING_ENDED",
              "media": {
                "hls": {
                  "duration_ms": 460315,
                  "path": "media/hls",
                  "playlist": "multivariant.m3u8",
                  "renditions": [
                    {
                      "path": "720p30-abcdeABCDE12",
                      "playlist": "playlist.m3u8",
                      "resolution_width": 1280,
                      "resolution_height": 720
                    }
                  ]
                }
              }
            }

            """)
    }

    @Test func endedWithFailureCarriesMessageAndGoesToFailedFile() throws {
        let failed = started.ended(at: Date(timeIntervalSince1970: 1_698_818_500), durationMs: 4_000,
                                   failure: "storage write failed: \"bucket\" gone")
        #expect(failed.status == .recordingEndedWithFailure)
        #expect(failed.fileName == "recording-failed.json")
        let object = try #require(try JSONSerialization.jsonObject(with: failed.jsonData()) as? [String: Any])
        #expect(object["recording_status"] as? String == "RECORDING_ENDED_WITH_FAILURE")
        #expect(object["recording_status_message"] as? String == "storage write failed: \"bucket\" gone")
        #expect(object["recording_ended_at"] as? String == "2023-11-01T06:01:40Z")
        let media = try #require(object["media"] as? [String: Any])
        let hls = try #require(media["hls"] as? [String: Any])
        #expect(hls["duration_ms"] as? Int == 4_000)
        #expect(media["thumbnails"] != nil && media["latest_thumbnail"] != nil)
        // Key order: status message right after the status.
        let text = failed.jsonText()
        let status = try #require(text.range(of: "\"recording_status\""))
        let message = try #require(text.range(of: "\"recording_status_message\""))
        let media0 = try #require(text.range(of: "\"media\""))
        #expect(status.lowerBound < message.lowerBound && message.lowerBound < media0.lowerBound)
    }

    @Test func startFailedOmitsTimesDurationAndMessage() throws {
        let metadata = RecordingMetadata(stageArn: stageArn, status: .recordingStartFailed,
                                         startedAt: Date(timeIntervalSince1970: 0), endedAt: Date(timeIntervalSince1970: 1),
                                         statusMessage: "ignored", durationMs: 5,
                                         renditions: [.init(path: "720p30-abcdeABCDE12", resolution: hd)])
        #expect(metadata.fileName == "recording-failed.json")
        let object = try #require(try JSONSerialization.jsonObject(with: metadata.jsonData()) as? [String: Any])
        #expect(Set(object.keys) == ["version", "stage_arn", "recording_status", "media"])
        let hls = try #require((object["media"] as? [String: Any])?["hls"] as? [String: Any])
        #expect(hls["duration_ms"] == nil)
    }

    @Test func endedWithoutDurationWritesZero() throws {
        var metadata = started
        metadata.status = .recordingEndedWithFailure
        metadata.endedAt = Date(timeIntervalSince1970: 1_698_818_496)
        let hls = try #require(((try JSONSerialization.jsonObject(with: metadata.jsonData()) as? [String: Any])?["media"] as? [String: Any])?["hls"] as? [String: Any])
        #expect(hls["duration_ms"] as? Int == 0)
    }

    @Test func audioOnlyRenditionHasNoResolution() {
        let metadata = RecordingMetadata(stageArn: stageArn, status: .recordingStarted, startedAt: Date(timeIntervalSince1970: 0),
                                         renditions: [.init(path: "audio", resolution: nil)])
        #expect(metadata.jsonText().contains("""
                    {
                      "path": "audio",
                      "playlist": "playlist.m3u8"
                    }
            """))
        #expect(!metadata.jsonText().contains("resolution_width"))
        #expect(metadata.jsonText().contains("\"recording_started_at\": \"1970-01-01T00:00:00Z\""))
    }

    @Test func stringsAreEscaped() {
        let json = OrderedJSON.object([("a\"b", .string("line\nnext\\ \u{01} é/"))]).rendered()
        #expect(json == "{\n  \"a\\\"b\": \"line\\nnext\\\\ \\u0001 é/\"\n}")
    }

    @Test(arguments: [
        (1_698_818_496.0, "2023-11-01T06:01:36Z"),
        (951_868_799.0, "2000-02-29T23:59:59Z"),
        (951_868_800.0, "2000-03-01T00:00:00Z"),
        (0.0, "1970-01-01T00:00:00Z"),
        (-1.0, "1969-12-31T23:59:59Z"),
        (-0.5, "1969-12-31T23:59:59Z"),
        (4_102_444_800.0, "2100-01-01T00:00:00Z"),
    ])
    func rfc3339(seconds: Double, expected: String) {
        #expect(RFC3339.format(Date(timeIntervalSince1970: seconds)) == expected)
    }
}

@Suite struct RecordingLayoutTests {
    let layout = RecordingLayout(stageId: "MNALAcH9j2EJ", compositionId: "s2AdaGUbvQgp", destinationId: "2pBRK1rNgX1ff")

    @Test func keysFollowTheCompositeRecordingLayout() {
        let rendition = RecordingLayout.renditionName(height: 720, framesPerSecond: 30, encoderConfigurationId: "abcdeABCDE12")
        #expect(rendition == "720p30-abcdeABCDE12")
        #expect(layout.prefix == "MNALAcH9j2EJ/s2AdaGUbvQgp/2pBRK1rNgX1ff/composite")
        #expect(layout.metadataKey(for: .recordingStarted) == "MNALAcH9j2EJ/s2AdaGUbvQgp/2pBRK1rNgX1ff/composite/events/recording-started.json")
        #expect(layout.metadataKey(for: .recordingEnded).hasSuffix("/composite/events/recording-ended.json"))
        #expect(layout.metadataKey(for: .recordingStartFailed).hasSuffix("/composite/events/recording-failed.json"))
        #expect(layout.metadataKey(for: .recordingEndedWithFailure).hasSuffix("/composite/events/recording-failed.json"))
        #expect(layout.multivariantPlaylistKey == "MNALAcH9j2EJ/s2AdaGUbvQgp/2pBRK1rNgX1ff/composite/media/hls/multivariant.m3u8")
        #expect(layout.mediaPlaylistKey(rendition: rendition) == "\(layout.prefix)/media/hls/720p30-abcdeABCDE12/playlist.m3u8")
        #expect(layout.segmentKey(rendition: rendition, sequence: 0) == "\(layout.prefix)/media/hls/720p30-abcdeABCDE12/0.ts")
        #expect(layout.segmentKey(rendition: rendition, sequence: 12, fileExtension: "m4s") == "\(layout.prefix)/media/hls/720p30-abcdeABCDE12/12.m4s")
        #expect(layout.initSegmentKey(rendition: rendition) == "\(layout.prefix)/media/hls/720p30-abcdeABCDE12/init.mp4")
        let hd = VideoResolution(width: 1280, height: 720)
        #expect(layout.thumbnailKey(resolution: hd, number: 1) == "\(layout.prefix)/media/thumbnails/1280x720/1.jpg")
        #expect(layout.latestThumbnailKey(resolution: hd) == "\(layout.prefix)/media/latest_thumbnail/1280x720/thumb.jpg")
    }
}
