// A stage session's individual recordings read back as a recorded stage: stretches of
// publishing from the playlists' dates and durations, reconnect gaps, several recordings of
// one participant, what cannot be used said, and hostile files refused with their names.
import Foundation
import Testing
@testable import Stages

@Suite struct SessionRecordingsTests {
    static let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij"

    static func metadata(_ participant: String, status: String = "RECORDING_ENDED", hls: Bool = true) -> String {
        let media = hls ? #""hls": {"duration_ms": 1, "path": "media/hls", "playlist": "multivariant.m3u8", "renditions": [{"path": "high", "playlist": "playlist.m3u8"}]}"# : #""thumbnails": {"path": "media/thumbnails", "renditions": [{"path": "high"}]}"#
        return """
            {"version": "v1", "stage_arn": "\(stageArn)", "session_id": "st-1", "participant_id": "\(participant)",
             "recording_started_at": "2026-11-26T12:00:00Z", "recording_ended_at": "2026-11-26T12:01:00Z",
             "recording_status": "\(status)", "media": {\(media)}}
            """
    }

    static func playlist(_ runs: [(date: String?, durations: [String])]) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:3", "#EXT-X-MEDIA-SEQUENCE:1", "#EXT-X-PLAYLIST-TYPE:VOD",
                     "#EXT-X-MAP:URI=\"init.mp4\""]
        var number = 0
        for (index, run) in runs.enumerated() {
            if index > 0 { lines.append("#EXT-X-DISCONTINUITY") }
            if let date = run.date { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(date)") }
            for duration in run.durations {
                number += 1
                lines += ["#EXTINF:\(duration),", "\(number).mp4"]
            }
        }
        return (lines + ["#EXT-X-ENDLIST"]).joined(separator: "\n") + "\n"
    }

    static func read(_ files: [String: String]) throws(StageError) -> SessionRecordings {
        try SessionRecordings.read(files: Array(files.keys), source: "session") { path in
            guard let text = files[path] else { throw CocoaError(.fileNoSuchFile) }
            return Data(text.utf8)
        }
    }

    @Test("stretches from dates and durations: a reconnect is a gap, a second recording is a second part, NONE is left out")
    func manifestFromRecordings() throws {
        let recordings = try Self.read([
            // alice: from 12:00:00.500 for 2.5 s, back at 12:00:06.000 for 2 s (one recording, a reconnect).
            "alice/2026-11-26T12-00-00Z/events/recording-ended.json": Self.metadata("alice"),
            "alice/2026-11-26T12-00-00Z/media/hls/high/playlist.m3u8":
                Self.playlist([("2026-11-26T12:00:00.500Z", ["2.000", "0.500"]), ("2026-11-26T12:00:06.000Z", ["2.000"])]),
            // bob: two recordings (the second after the reconnect window had closed).
            "bob/2026-11-26T12-00-01Z/events/recording-ended.json": Self.metadata("bob"),
            "bob/2026-11-26T12-00-01Z/media/hls/high/playlist.m3u8": Self.playlist([("2026-11-26T12:00:01.250Z", ["1.000"])]),
            "bob/2026-11-26T12-00-40Z/events/recording-failed.json": Self.metadata("bob", status: "RECORDING_ENDED_WITH_FAILURE"),
            "bob/2026-11-26T12-00-40Z/events/recording-started.json": Self.metadata("bob", status: "RECORDING_STARTED"),
            "bob/2026-11-26T12-00-40Z/media/hls/high/playlist.m3u8": Self.playlist([("2026-11-26T12:00:40.000Z", ["3.000"])]),
            // carol: thumbnails only.
            "carol/2026-11-26T12-00-02Z/events/recording-ended.json": Self.metadata("carol", hls: false),
        ])
        #expect(recordings.stageArn == Self.stageArn)
        #expect(recordings.recordings.count == 3)
        #expect(recordings.notes == ["carol/2026-11-26T12-00-02Z: no HLS media (mediaTypes NONE): left out"])
        let manifest = recordings.manifest
        #expect(manifest.startedAt == "2026-11-26T12:00:00.500Z")
        #expect(manifest.durationMs == 42_500)
        #expect(manifest.participants.map(\.participantId) == ["alice", "bob"])
        let alice = manifest.participants[0], bob = manifest.participants[1]
        #expect(alice.timeline == [.init(atMs: 0, event: .publish), .init(atMs: 2500, event: .unpublish),
                                   .init(atMs: 5500, event: .publish), .init(atMs: 7500, event: .unpublish)])
        #expect(alice.mediaParts == [StageMediaPart(media: "alice/2026-11-26T12-00-00Z/media/hls/multivariant.m3u8", mediaOffsetMs: 0)])
        #expect(bob.timeline == [.init(atMs: 750, event: .publish), .init(atMs: 1750, event: .unpublish),
                                 .init(atMs: 39_500, event: .publish), .init(atMs: 42_500, event: .unpublish)])
        #expect(bob.mediaParts?.map(\.mediaOffsetMs) == [750, 39_500])
        // A recorded stage as any other: it validates.
        try StageManifestValidator.validate(manifest, file: "session")
    }

    @Test("a playlist without dates (written before they were) is placed approximately, and said so")
    func undatedPlaylist() throws {
        let recordings = try Self.read([
            "alice/2026-11-26T12-00-00Z/events/recording-ended.json": Self.metadata("alice"),
            "alice/2026-11-26T12-00-00Z/media/hls/high/playlist.m3u8": Self.playlist([(nil, ["2.000"]), (nil, ["1.000"])]),
        ])
        #expect(recordings.notes == ["alice/2026-11-26T12-00-00Z: 2 stretch(es) without EXT-X-PROGRAM-DATE-TIME placed approximately"])
        #expect(recordings.manifest.startedAt == "2026-11-26T12:00:00.000Z")
        #expect(recordings.manifest.participants[0].timeline.map(\.atMs) == [0, 2000, 2000, 3000])
    }

    @Test("what cannot be read fails naming the file", arguments: [
        ["a/t/events/recording-ended.json": "{not json"],
        ["a/t/events/recording-ended.json": metadata("a"), "a/t/media/hls/high/playlist.m3u8": "garbage"],
        ["a/t/events/recording-ended.json": metadata("a")],
        ["x/y/z": "nothing here"],
        ["a/t/events/recording-ended.json": metadata("a"),
         "a/t/media/hls/high/playlist.m3u8": playlist([("2026-11-26T12:00:00.000Z", ["1.0"])]),
         "b/t/events/recording-ended.json": metadata("b").replacingOccurrences(of: "AbCdef1G2hij", with: "Other0000000")],
    ])
    func refusals(files: [String: String]) {
        #expect(throws: StageError.self) { try Self.read(files) }
        do { _ = try Self.read(files) } catch { #expect(error.file.hasPrefix("session"), "\(error)") }
    }
}
