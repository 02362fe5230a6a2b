// Finalizing a participant recording after a crash: the playlist as it was written (its
// discontinuity, initialization section and dates, which a re-render places the media by)
// is kept, stored segments it did not list yet are measured and appended, and the result is
// a VOD playlist with recording-failed.json.
import Foundation
import HLS
import Logging
import Storage
import Testing
import TestSupport
@testable import Server

@Suite struct ParticipantRecordingRecoveryTests {
    @Test("after kill -9: listed segments keep their discontinuity and dates, an unlisted stored one is measured and appended")
    func keepsWhatThePlaylistSaid() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recovery-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let prefix = "AbCdef1G2hij/st-ZyXwvu1T2sABC/p1/2026-11-26T12-00-00Z"
        let rendition = root.appendingPathComponent(prefix + "/media/hls/high")
        try FileManager.default.createDirectory(at: rendition, withIntermediateDirectories: true)
        // Three 1 s fMP4 segments and their initialization section, as the recorder names them.
        let made = try await onThread {
            try runTool("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=red:size=160x90:rate=30",
                                   "-t", "3", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-f", "hls", "-hls_time", "1",
                                   "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4", "-start_number", "1",
                                   "-hls_segment_filename", rendition.appendingPathComponent("%d.mp4").path,
                                   rendition.appendingPathComponent("ffmpeg.m3u8").path], keeping: .standardError)
        }
        #expect(made.status == 0, "\(made.text)")
        // The EVENT playlist as the crash left it: segment 3 stored but not listed yet.
        let written = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:1
            #EXT-X-PLAYLIST-TYPE:EVENT
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-MAP:URI="init.mp4"
            #EXT-X-PROGRAM-DATE-TIME:2026-11-26T12:00:00.250Z
            #EXTINF:1.000,
            1.mp4
            #EXT-X-DISCONTINUITY
            #EXT-X-PROGRAM-DATE-TIME:2026-11-26T12:00:05.000Z
            #EXTINF:1.000,
            2.mp4

            """
        try written.write(to: rendition.appendingPathComponent("playlist.m3u8"), atomically: true, encoding: .utf8)
        let storage = LocalDirectoryStorage(rootPath: root.path)
        let result = try await ParticipantRecordingRecovery.finalize(
            prefix: prefix, storage: storage, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij",
            restartedAt: Date(timeIntervalSince1970: 1_795_694_500), reason: "the daemon stopped unexpectedly",
            logger: Logger(label: "recovery-test"))
        #expect(result.segments == 3)
        let recovered = try MediaPlaylist.parse(String(contentsOf: rendition.appendingPathComponent("playlist.m3u8"), encoding: .utf8))
        #expect(recovered.playlistType == .vod && recovered.endList)
        #expect(recovered.segments.map(\.uri) == ["1.mp4", "2.mp4", "3.mp4"])
        #expect(recovered.segments.map(\.discontinuity) == [false, true, false])
        #expect(recovered.segments[0].programDateTimeMs == 1_795_694_400_250 && recovered.segments[1].programDateTimeMs == 1_795_694_405_000)
        #expect(abs(recovered.segments[2].duration.microsecondsValue - 1_000_000) < 50_000, "\(recovered.segments[2])")
        let failed = root.appendingPathComponent(prefix + "/events/recording-failed.json")
        #expect(FileManager.default.fileExists(atPath: failed.path))
    }
}
