// Individual participant recordings: object keys and metadata documents as the seed's
// "Recording Contents" and "JSON Metadata Files" show them.
import Foundation
import HLS
import MediaCore
import Testing

struct ParticipantRecordingLayoutTests {
    let layout = ParticipantRecordingLayout(stageId: "AbCdef1G2hij", sessionId: "st-ZyXwvu1T2s", participantId: "xYz1c2d3e4f",
                                            startedAt: Date(timeIntervalSince1970: 1_704_110_455))  // 2024-01-01T12:00:55Z

    @Test("keys: <stageId>/<sessionId>/<participantId>/<timestamp>/events, media/hls/high, thumbnails")
    func keys() {
        let prefix = "AbCdef1G2hij/st-ZyXwvu1T2s/xYz1c2d3e4f/2024-01-01T12-00-55Z"
        #expect(layout.prefix == prefix)
        #expect(layout.participantPrefix == "AbCdef1G2hij/st-ZyXwvu1T2s/xYz1c2d3e4f")
        #expect(layout.metadataKey(for: .recordingStarted) == "\(prefix)/events/recording-started.json")
        #expect(layout.metadataKey(for: .recordingEndedWithFailure) == "\(prefix)/events/recording-failed.json")
        #expect(layout.multivariantPlaylistKey == "\(prefix)/media/hls/multivariant.m3u8")
        #expect(layout.mediaPlaylistKey == "\(prefix)/media/hls/high/playlist.m3u8")
        #expect(layout.renditionKey(ParticipantRecordingLayout.segmentName(number: 1)) == "\(prefix)/media/hls/high/1.mp4")
        #expect(ParticipantRecordingLayout.initSegmentName(number: 1) == "init.mp4")
        #expect(ParticipantRecordingLayout.initSegmentName(number: 2) == "init-2.mp4")
        #expect(layout.thumbnailKey(number: 2) == "\(prefix)/media/thumbnails/high/2.jpg")
        #expect(layout.latestThumbnailKey == "\(prefix)/media/latest_thumbnail/high/thumb.jpg")
    }

    @Test("recording-started.json and recording-ended.json have the seed's fields and structure")
    func metadata() throws {
        let arn = "arn:aws:ivs:us-west-2:123456789012:stage/AbCdef1G2hij"
        let started = layout.metadata(stageArn: arn, status: .recordingStarted, hls: true, sequentialThumbnails: true,
                                      latestThumbnail: true)
        let seedStarted = """
        {"version": "v1", "stage_arn": "\(arn)", "session_id": "st-ZyXwvu1T2s", "participant_id": "xYz1c2d3e4f",
         "recording_started_at": "2024-01-01T12:00:55Z", "recording_status": "RECORDING_STARTED",
         "media": {"hls": {"path": "media/hls", "playlist": "multivariant.m3u8", "renditions": [{"path": "high", "playlist": "playlist.m3u8"}]},
                   "thumbnails": {"path": "media/thumbnails", "renditions": [{"path": "high"}]},
                   "latest_thumbnail": {"path": "media/latest_thumbnail", "renditions": [{"path": "high"}]}}}
        """
        #expect(try json(started.jsonData()) == json(Data(seedStarted.utf8)))
        let ended = started.ended(at: Date(timeIntervalSince1970: 1_704_111_100), durationMs: 645_237)
        let object = try #require(try JSONSerialization.jsonObject(with: ended.jsonData()) as? [String: Any])
        #expect(object["recording_status"] as? String == "RECORDING_ENDED")
        #expect(object["recording_ended_at"] as? String == "2024-01-01T12:11:40Z")
        #expect(((object["media"] as? [String: Any])?["hls"] as? [String: Any])?["duration_ms"] as? Int == 645_237)
        #expect(ended.fileName == "recording-ended.json")
        let audioOnly = layout.metadata(stageArn: arn, status: .recordingStarted, hls: true, sequentialThumbnails: false,
                                        latestThumbnail: false)
        let media = try #require((try JSONSerialization.jsonObject(with: audioOnly.jsonData()) as? [String: Any])?["media"] as? [String: Any])
        #expect(Set(media.keys) == ["hls"])
    }

    func json(_ data: Data) throws -> NSDictionary {
        try #require(try JSONSerialization.jsonObject(with: data) as? NSDictionary)
    }

    @Test("a discontinuity and a new initialization section are rendered before their segment")
    func discontinuity() {
        var playlist = MediaPlaylist(targetDurationSeconds: 6, mediaSequence: 1, playlistType: .event,
                                     segments: [HLSSegment(uri: "1.mp4", duration: .microseconds(6_000_000), initSegmentURI: "init.mp4"),
                                                HLSSegment(uri: "2.mp4", duration: .microseconds(4_000_000), discontinuity: true,
                                                           initSegmentURI: "init.mp4"),
                                                HLSSegment(uri: "3.mp4", duration: .microseconds(5_500_000), discontinuity: true,
                                                           initSegmentURI: "init-2.mp4")],
                                     initSegmentURI: "init.mp4")
        playlist = playlist.finished()
        #expect(playlist.render() == """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:1
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-MAP:URI="init.mp4"
        #EXTINF:6.000,
        1.mp4
        #EXT-X-DISCONTINUITY
        #EXTINF:4.000,
        2.mp4
        #EXT-X-DISCONTINUITY
        #EXT-X-MAP:URI="init-2.mp4"
        #EXTINF:5.500,
        3.mp4
        #EXT-X-ENDLIST

        """)
    }
}
