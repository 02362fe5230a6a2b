// Reading playlists back: exact round trips of what we write (dates, discontinuities, maps),
// what other packagers write, and hostile text that must fail cleanly, never trap.
import Foundation
import MediaCore
import Testing
import TestSupport
@testable import HLS

@Suite struct MediaPlaylistParserTests {
    @Test("a participant recording's playlist (dates, a reconnect, a codec change) reads back exactly as written")
    func roundTrip() throws {
        var playlist = MediaPlaylist(targetDurationSeconds: 2, mediaSequence: 1, playlistType: .vod, initSegmentURI: "init.mp4", endList: true)
        playlist.segments = [
            HLSSegment(uri: "1.mp4", duration: .microseconds(2_955_000), initSegmentURI: "init.mp4", programDateTimeMs: 1_764_158_515_498),
            HLSSegment(uri: "2.mp4", duration: .microseconds(555_000), initSegmentURI: "init.mp4"),
            HLSSegment(uri: "3.mp4", duration: .microseconds(2_944_000), discontinuity: true, initSegmentURI: "init.mp4",
                       programDateTimeMs: 1_764_158_528_774),
            HLSSegment(uri: "4.mp4", duration: .microseconds(1_000), discontinuity: true, initSegmentURI: "init2.mp4",
                       programDateTimeMs: 1_764_158_540_000),
        ]
        let text = playlist.render()
        #expect(text.contains("#EXT-X-PROGRAM-DATE-TIME:2025-11-26T12:01:55.498Z\n#EXTINF:2.955,\n1.mp4"))
        #expect(text.contains("#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init2.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:2025-11-26T12:02:20.000Z"))
        let parsed = try MediaPlaylist.parse(text)
        #expect(parsed.segments == playlist.segments)
        #expect(parsed.initSegmentURI == "init.mp4" && parsed.endList && parsed.playlistType == .vod && parsed.mediaSequence == 1)
        #expect(parsed.render() == text)
    }

    @Test("other packagers' playlists: CRLF, unknown tags, a date with an offset, extra fraction digits, a title after EXTINF")
    func foreignPlaylist() throws {
        let text = "#EXTM3U\r\n#EXT-X-VERSION:6\r\n#EXT-X-TARGETDURATION:6\r\n#EXT-X-KEY:METHOD=NONE\r\n"
            + "#EXT-X-PROGRAM-DATE-TIME:2026-11-26T13:01:55.4985+01:00\r\n#EXTINF:5.0000009,title\r\nsegment0.ts\r\n"
            + "#EXTINF:4,\r\nsegment1.ts\r\n#EXT-X-ENDLIST\r\n"
        let parsed = try MediaPlaylist.parse(text)
        #expect(parsed.segments.map(\.uri) == ["segment0.ts", "segment1.ts"])
        #expect(parsed.segments.map(\.duration.microsecondsValue) == [5_000_000, 4_000_000])
        #expect(parsed.segments[0].programDateTimeMs == UTCTimestamp.parseMilliseconds("2026-11-26T12:01:55.498Z"))
        #expect(parsed.endList && parsed.targetDurationSeconds == 6)
    }

    @Test("what is not a media playlist fails with the line at fault", arguments: [
        ("", 1), ("#EXTM3U\nsegment.ts\n", 2), ("#EXTM3U\n#EXTINF:abc,\nx.ts\n", 2), ("#EXTM3U\n#EXTINF:-1,\nx.ts\n", 2),
        ("#EXTM3U\n#EXTINF:9999999999,\nx.ts\n", 2), ("#EXTM3U\n#EXT-X-PROGRAM-DATE-TIME:yesterday\n", 2),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nhigh.m3u8\n", 2), ("#EXTM3U\n#EXT-X-MAP:BYTERANGE=1\n", 2),
        ("not a playlist", 1), ("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:LIVE\n", 2),
    ])
    func rejects(text: String, line: Int) {
        #expect(throws: PlaylistParseError.self) { try MediaPlaylist.parse(text) }
        do { _ = try MediaPlaylist.parse(text) } catch { #expect(error.line == line, "\(error)") }
    }

    @Test("random bytes and mutated playlists never trap (seeded)")
    func hostileText() {
        var generator = SeededGenerator(seed: 0x5EED_2026)
        let base = Array(MediaPlaylistParserTests.sample.utf8)
        for _ in 0..<20_000 {
            var bytes = base
            for _ in 0..<(1 + Int(generator.next() % 8)) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.insert(contentsOf: Array("99999999999999999999.9".utf8), at: position)
                default: bytes.remove(at: position)
                }
                if bytes.isEmpty { bytes = base }
            }
            _ = try? MediaPlaylist.parse(String(decoding: bytes, as: UTF8.self))
        }
    }

    static let sample = """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:3
        #EXT-X-MEDIA-SEQUENCE:1
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXT-X-MAP:URI="init.mp4"
        #EXT-X-PROGRAM-DATE-TIME:2026-11-26T12:01:55.498Z
        #EXTINF:2.955,
        1.mp4
        #EXT-X-DISCONTINUITY
        #EXT-X-PROGRAM-DATE-TIME:2026-11-26T12:02:08.774Z
        #EXTINF:2.944,
        5.mp4
        #EXT-X-ENDLIST

        """
}

@Suite struct UTCTimestampMillisecondsTests {
    @Test("milliseconds format and parse back, across leap years and the epoch", arguments: [
        Int64(0), 1, 999, 1_000, 951_782_400_123, 1_764_158_515_498, -1, -86_400_001, 253_402_300_799_999,
    ])
    func roundTrip(milliseconds: Int64) {
        let text = UTCTimestamp.format(millisecondsSince1970: milliseconds)
        #expect(UTCTimestamp.parseMilliseconds(text) == milliseconds, "\(text)")
    }

    @Test("RFC 3339 forms", arguments: [
        ("2026-11-26T11:53:37Z", Int64(1_795_694_017_000)), ("2026-11-26T11:53:37.1Z", 1_795_694_017_100),
        ("2026-11-26t11:53:37.123456z", 1_795_694_017_123), ("2026-11-26T12:53:37.000+01:00", 1_795_694_017_000),
        ("2026-11-26T10:23:37-01:30", 1_795_694_017_000),
    ])
    func forms(text: String, milliseconds: Int64) {
        #expect(UTCTimestamp.parseMilliseconds(text) == milliseconds)
    }

    @Test("not dates", arguments: ["", "2026-11-26", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-26T24:00:00Z",
                                   "2026-11-26T11:53:37", "2026-11-26T11:53:37.Z", "2026-11-26T11:53:37+0100", "+026-11-26T11:53:37Z",
                                   "2026-11-26T11:53:37Zjunk", String(repeating: "9", count: 100)])
    func rejects(text: String) {
        #expect(UTCTimestamp.parseMilliseconds(text) == nil)
    }
}
