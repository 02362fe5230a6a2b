import Testing
import MediaCore
@testable import HLS

@Suite struct MediaPlaylistTests {
    let tb90k = Rational(1, 90_000)

    func seg(_ uri: String, _ ticks: Int64, _ base: Rational = Rational(1, 90_000)) -> HLSSegment {
        HLSSegment(uri: uri, duration: MediaTime(ticks: ticks, timeBase: base))
    }

    @Test func eventPlaylistWhileRecording() {
        let playlist = MediaPlaylist(targetDurationSeconds: 2, segments: [seg("0.ts", 180_000), seg("1.ts", 180_000)])
        #expect(playlist.render() == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PLAYLIST-TYPE:EVENT
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXTINF:2.000,
            0.ts
            #EXTINF:2.000,
            1.ts

            """)
    }

    @Test func finishedPlaylistIsVODWithEndList() {
        let playlist = MediaPlaylist(targetDurationSeconds: 2, segments: [seg("0.ts", 180_000), seg("1.ts", 45_000)]).finished()
        #expect(playlist.render() == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXTINF:2.000,
            0.ts
            #EXTINF:0.500,
            1.ts
            #EXT-X-ENDLIST

            """)
    }

    @Test func fragmentedMP4UsesMapAndVersion7() {
        let playlist = MediaPlaylist(targetDurationSeconds: 2, mediaSequence: 5, playlistType: .vod,
                                     segments: [seg("5.m4s", 2000, Rational(1, 1000))], initSegmentURI: "init.mp4",
                                     endList: true, independentSegments: false)
        #expect(playlist.render() == """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:5
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXT-X-MAP:URI="init.mp4"
            #EXTINF:2.000,
            5.m4s
            #EXT-X-ENDLIST

            """)
    }

    @Test func emptyEventPlaylist() {
        #expect(MediaPlaylist(targetDurationSeconds: 6).render() == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PLAYLIST-TYPE:EVENT
            #EXT-X-INDEPENDENT-SEGMENTS

            """)
    }

    /// RFC 8216 §4.3.3.1: each EXTINF rounded to the nearest integer must be <= the target.
    @Test(arguments: [
        (Int64(2_000), 2), (2_499, 2), (2_500, 3), (2_501, 3), (3_400, 3), (7_600, 8), (1_000, 2), (400, 2),
    ])
    func targetDurationCoversRoundedSegments(ms: Int64, expected: Int) {
        let playlist = MediaPlaylist(targetDurationSeconds: 2, segments: [seg("0.ts", ms, Rational(1, 1000))])
        #expect(playlist.renderedTargetDuration == expected)
        #expect(playlist.render().contains("#EXT-X-TARGETDURATION:\(expected)\n"))
    }

    @Test func targetDurationRoundingUsesRenderedMilliseconds() {
        // 2.4995 s renders as "2.500", which a player rounds to 3: the target must be 3.
        let playlist = MediaPlaylist(targetDurationSeconds: 2, segments: [seg("0.ts", 24_995, Rational(1, 10_000))])
        #expect(playlist.render().contains("#EXTINF:2.500,"))
        #expect(playlist.renderedTargetDuration == 3)
    }

    @Test func fractionalDurationsAreExact() {
        // One NTSC frame, 60 NTSC frames, and 1.001 s at 90 kHz: no floating-point error.
        let oneFrame = seg("a.ts", 1001, Rational(1, 30_000))
        let sixtyFrames = seg("b.ts", 60 * 1001, Rational(1, 30_000))
        let ninety = seg("c.ts", 90_090)
        let tiny = seg("d.ts", 44, Rational(1, 90_000)) // 0.000489 s -> 0.000
        let playlist = MediaPlaylist(targetDurationSeconds: 2, segments: [oneFrame, sixtyFrames, ninety, tiny])
        let text = playlist.render()
        #expect(text.contains("#EXTINF:0.033,\na.ts\n"))
        #expect(text.contains("#EXTINF:2.002,\nb.ts\n"))
        #expect(text.contains("#EXTINF:1.001,\nc.ts\n"))
        #expect(text.contains("#EXTINF:0.000,\nd.ts\n"))
        // 0.0333667 + 2.002 + 1.001 + 0.000489 = 3.0368556 s, rounded once.
        #expect(playlist.durationMs == 3037)
    }

    @Test func durationIsSummedExactlyThenRounded() {
        // 3 x 1001/30000 s = 0.1001 s -> 100 ms; rounding each first would give 99.
        let frames = (0..<3).map { seg("\($0).ts", 1001, Rational(1, 30_000)) }
        #expect(MediaPlaylist(targetDurationSeconds: 1, segments: frames).durationMs == 100)
    }

    @Test func decimalText() {
        #expect(DecimalText.thousandths(0) == "0.000")
        #expect(DecimalText.thousandths(5) == "0.005")
        #expect(DecimalText.thousandths(1_050) == "1.050")
        #expect(DecimalText.thousandths(123_456) == "123.456")
        #expect(DecimalText.thousandths(-1_500) == "-1.500")
        #expect(DecimalText.threeDecimals(Rational(30_000, 1001)) == "29.970")
        #expect(DecimalText.threeDecimals(Rational(30, 1)) == "30.000")
    }
}

@Suite struct MultivariantPlaylistTests {
    @Test func oneRendition() {
        let playlist = MultivariantPlaylist(variants: [
            .init(bandwidth: 2_628_000, averageBandwidth: 2_500_000, resolution: VideoResolution(width: 1280, height: 720),
                  frameRate: Rational(30, 1), codecs: "avc1.64001f,mp4a.40.2", uri: "720p30-abcdeABCDE12/playlist.m3u8"),
        ])
        #expect(playlist.render() == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-STREAM-INF:BANDWIDTH=2628000,AVERAGE-BANDWIDTH=2500000,RESOLUTION=1280x720,FRAME-RATE=30.000,CODECS="avc1.64001f,mp4a.40.2"
            720p30-abcdeABCDE12/playlist.m3u8

            """)
    }

    @Test func audioOnlyAndFractionalRate() {
        let playlist = MultivariantPlaylist(variants: [
            .init(bandwidth: 1_200_000, resolution: VideoResolution(width: 640, height: 360), frameRate: Rational(30_000, 1001),
                  codecs: "avc1.4d401e,mp4a.40.2", uri: "360p30-x/playlist.m3u8"),
            .init(bandwidth: 160_000, resolution: nil, frameRate: nil, codecs: "mp4a.40.2", uri: "audio/playlist.m3u8"),
        ], independentSegments: false)
        #expect(playlist.render() == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-STREAM-INF:BANDWIDTH=1200000,RESOLUTION=640x360,FRAME-RATE=29.970,CODECS="avc1.4d401e,mp4a.40.2"
            360p30-x/playlist.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=160000,CODECS="mp4a.40.2"
            audio/playlist.m3u8

            """)
    }
}
