// Real and realistic WHIP offers. GStreamer and aiortc ones were captured from the
// libraries on the build machine (see each comment); Chrome, Firefox and OBS ones are written
// after their public SDP, keeping each client's quirks. Stored with LF; `crlf` makes the
// CRLF form clients actually send.

/// The same text with CRLF line endings, ending in CRLF as SDP does.
public func crlf(_ text: String) -> String {
    text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        .map { String(Substring($0)) }.joined(separator: "\r\n") + "\r\n"
}

public enum Offers {
    /// Chrome 120+ publishing through WHIP: audio then video, sendonly, BUNDLE, rtcp-rsize on video,
    /// extmap-allow-mixed, transport-cc everywhere, VP8/H.264 (four profiles, both modes)/AV1/VP9
    /// each with RTX, RED/ULPFEC, Opus with RED, one FID group, mDNS + srflx candidates in the first section.
    public static let chrome = crlf("""
        v=0
        o=- 5228595038118931041 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1
        a=extmap-allow-mixed
        a=msid-semantic: WMS
        m=audio 58374 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126
        c=IN IP4 203.0.113.45
        a=rtcp:9 IN IP4 0.0.0.0
        a=candidate:2999745851 1 udp 2122260223 0c1ddc6b-1d6b-4d4f-a9b1-8b1b1c1d2e3f.local 58374 typ host generation 0 network-id 1 network-cost 10
        a=candidate:842163049 1 udp 1686052607 203.0.113.45 58374 typ srflx raddr 0.0.0.0 rport 0 generation 0 network-id 1 network-cost 10
        a=ice-ufrag:Jq3W
        a=ice-pwd:4lFq9m1RtcnS7M5gq8r0xYqB
        a=ice-options:trickle
        a=fingerprint:sha-256 82:B7:0E:EE:7F:1A:50:39:BE:F0:7E:C2:34:7F:06:6E:D0:8F:5D:C7:51:24:47:E3:40:43:00:02:6B:6E:54:55
        a=setup:actpass
        a=mid:0
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendonly
        a=msid:- 6f2c1b7e-8d1a-4c55-9a57-0b9f3f0c2d11
        a=rtcp-mux
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=rtpmap:63 red/48000/2
        a=fmtp:63 111/111
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:13 CN/8000
        a=rtpmap:110 telephone-event/48000
        a=rtpmap:126 telephone-event/8000
        a=ssrc:3485940486 cname:Yq1Pj0xWvD6yNe7Q
        a=ssrc:3485940486 msid:- 6f2c1b7e-8d1a-4c55-9a57-0b9f3f0c2d11
        m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 104 105 106 107 108 109 127 125 39 40 45 46 98 99 100 101 112 113 116 117 118
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:Jq3W
        a=ice-pwd:4lFq9m1RtcnS7M5gq8r0xYqB
        a=ice-options:trickle
        a=fingerprint:sha-256 82:B7:0E:EE:7F:1A:50:39:BE:F0:7E:C2:34:7F:06:6E:D0:8F:5D:C7:51:24:47:E3:40:43:00:02:6B:6E:54:55
        a=setup:actpass
        a=mid:1
        a=extmap:14 urn:ietf:params:rtp-hdrext:toffset
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:13 urn:3gpp:video-orientation
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay
        a=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/video-content-type
        a=extmap:7 http://www.webrtc.org/experiments/rtp-hdrext/video-timing
        a=extmap:8 http://www.webrtc.org/experiments/rtp-hdrext/color-space
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
        a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id
        a=sendonly
        a=msid:- 0c1e5a8b-3f7d-4e2a-b6c9-d2e1f0a9b8c7
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:96 VP8/90000
        a=rtcp-fb:96 goog-remb
        a=rtcp-fb:96 transport-cc
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rtpmap:102 H264/90000
        a=rtcp-fb:102 goog-remb
        a=rtcp-fb:102 transport-cc
        a=rtcp-fb:102 ccm fir
        a=rtcp-fb:102 nack
        a=rtcp-fb:102 nack pli
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f
        a=rtpmap:103 rtx/90000
        a=fmtp:103 apt=102
        a=rtpmap:104 H264/90000
        a=rtcp-fb:104 goog-remb
        a=rtcp-fb:104 transport-cc
        a=rtcp-fb:104 ccm fir
        a=rtcp-fb:104 nack
        a=rtcp-fb:104 nack pli
        a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f
        a=rtpmap:105 rtx/90000
        a=fmtp:105 apt=104
        a=rtpmap:106 H264/90000
        a=rtcp-fb:106 goog-remb
        a=rtcp-fb:106 transport-cc
        a=rtcp-fb:106 ccm fir
        a=rtcp-fb:106 nack
        a=rtcp-fb:106 nack pli
        a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f
        a=rtpmap:107 rtx/90000
        a=fmtp:107 apt=106
        a=rtpmap:108 H264/90000
        a=rtcp-fb:108 goog-remb
        a=rtcp-fb:108 transport-cc
        a=rtcp-fb:108 ccm fir
        a=rtcp-fb:108 nack
        a=rtcp-fb:108 nack pli
        a=fmtp:108 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f
        a=rtpmap:109 rtx/90000
        a=fmtp:109 apt=108
        a=rtpmap:127 H264/90000
        a=rtcp-fb:127 goog-remb
        a=rtcp-fb:127 transport-cc
        a=rtcp-fb:127 ccm fir
        a=rtcp-fb:127 nack
        a=rtcp-fb:127 nack pli
        a=fmtp:127 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f
        a=rtpmap:125 rtx/90000
        a=fmtp:125 apt=127
        a=rtpmap:39 H264/90000
        a=rtcp-fb:39 goog-remb
        a=rtcp-fb:39 transport-cc
        a=rtcp-fb:39 ccm fir
        a=rtcp-fb:39 nack
        a=rtcp-fb:39 nack pli
        a=fmtp:39 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=4d001f
        a=rtpmap:40 rtx/90000
        a=fmtp:40 apt=39
        a=rtpmap:45 AV1/90000
        a=rtcp-fb:45 goog-remb
        a=rtcp-fb:45 transport-cc
        a=rtcp-fb:45 ccm fir
        a=rtcp-fb:45 nack
        a=rtcp-fb:45 nack pli
        a=fmtp:45 level-idx=5;profile=0;tier=0
        a=rtpmap:46 rtx/90000
        a=fmtp:46 apt=45
        a=rtpmap:98 VP9/90000
        a=rtcp-fb:98 goog-remb
        a=rtcp-fb:98 transport-cc
        a=rtcp-fb:98 ccm fir
        a=rtcp-fb:98 nack
        a=rtcp-fb:98 nack pli
        a=fmtp:98 profile-id=0
        a=rtpmap:99 rtx/90000
        a=fmtp:99 apt=98
        a=rtpmap:100 VP9/90000
        a=rtcp-fb:100 goog-remb
        a=rtcp-fb:100 transport-cc
        a=rtcp-fb:100 ccm fir
        a=rtcp-fb:100 nack
        a=rtcp-fb:100 nack pli
        a=fmtp:100 profile-id=2
        a=rtpmap:101 rtx/90000
        a=fmtp:101 apt=100
        a=rtpmap:112 H264/90000
        a=rtcp-fb:112 goog-remb
        a=rtcp-fb:112 transport-cc
        a=rtcp-fb:112 ccm fir
        a=rtcp-fb:112 nack
        a=rtcp-fb:112 nack pli
        a=fmtp:112 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=64001f
        a=rtpmap:113 rtx/90000
        a=fmtp:113 apt=112
        a=rtpmap:116 red/90000
        a=rtpmap:117 rtx/90000
        a=fmtp:117 apt=116
        a=rtpmap:118 ulpfec/90000
        a=ssrc-group:FID 2231627014 632943048
        a=ssrc:2231627014 cname:Yq1Pj0xWvD6yNe7Q
        a=ssrc:2231627014 msid:- 0c1e5a8b-3f7d-4e2a-b6c9-d2e1f0a9b8c7
        a=ssrc:632943048 cname:Yq1Pj0xWvD6yNe7Q
        a=ssrc:632943048 msid:- 0c1e5a8b-3f7d-4e2a-b6c9-d2e1f0a9b8c7
        """)

    /// Firefox 120+: fingerprint at session level, ufrag/pwd in hex at media level, attributes
    /// in Firefox's sorted order, a directional extmap (`/recvonly`), capitalised UDP candidates,
    /// FID group after the ssrc lines, H.264 only as 42e01f.
    public static let firefox = crlf("""
        v=0
        o=mozilla...THIS_IS_SDPARTA-120.0 8012374692710327839 0 IN IP4 0.0.0.0
        s=-
        t=0 0
        a=fingerprint:sha-256 94:A0:65:68:5D:64:C4:98:0B:B8:D4:54:4A:87:21:A9:9A:01:AD:21:9E:B5:9C:F6:A1:5E:F6:F1:5A:1D:83:0B
        a=group:BUNDLE 0 1
        a=ice-options:trickle
        a=msid-semantic:WMS *
        m=audio 60848 UDP/TLS/RTP/SAVPF 109 9 0 8 101
        c=IN IP4 192.168.1.30
        a=candidate:0 1 UDP 2122252543 192.168.1.30 60848 typ host
        a=candidate:1 1 TCP 2105524479 192.168.1.30 9 typ host tcptype active
        a=sendonly
        a=end-of-candidates
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2/recvonly urn:ietf:params:rtp-hdrext:csrc-audio-level
        a=extmap:3 urn:ietf:params:rtp-hdrext:sdes:mid
        a=fmtp:109 maxplaybackrate=48000;stereo=1;useinbandfec=1
        a=fmtp:101 0-15
        a=ice-pwd:81a8a3c32ebaa438a1ac8fb7bb9f7151
        a=ice-ufrag:fb4c22ad
        a=mid:0
        a=msid:{5f0c8d1e-2b3a-4c7d-9e8f-a1b2c3d4e5f6} {7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d}
        a=rtcp-mux
        a=rtpmap:109 opus/48000/2
        a=rtpmap:9 G722/8000/1
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:101 telephone-event/8000
        a=setup:actpass
        a=ssrc:1997826342 cname:{3c2b1a09-8f7e-4d6c-b5a4-392817161514}
        m=video 60848 UDP/TLS/RTP/SAVPF 120 124 121 125 126 127 97 98 123 122 119
        c=IN IP4 192.168.1.30
        a=sendonly
        a=extmap:3 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:4 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:5 urn:ietf:params:rtp-hdrext:toffset
        a=extmap:6/recvonly http://www.webrtc.org/experiments/rtp-hdrext/playout-delay
        a=extmap:7 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=fmtp:126 profile-level-id=42e01f;level-asymmetry-allowed=1;packetization-mode=1
        a=fmtp:97 profile-level-id=42e01f;level-asymmetry-allowed=1
        a=fmtp:120 max-fs=12288;max-fr=60
        a=fmtp:124 apt=120
        a=fmtp:121 max-fs=12288;max-fr=60
        a=fmtp:125 apt=121
        a=fmtp:127 apt=126
        a=fmtp:98 apt=97
        a=fmtp:119 apt=122
        a=ice-pwd:81a8a3c32ebaa438a1ac8fb7bb9f7151
        a=ice-ufrag:fb4c22ad
        a=mid:1
        a=msid:{5f0c8d1e-2b3a-4c7d-9e8f-a1b2c3d4e5f6} {0d9c8b7a-6f5e-4d3c-a2b1-f0e9d8c7b6a5}
        a=rtcp-fb:120 nack
        a=rtcp-fb:120 nack pli
        a=rtcp-fb:120 ccm fir
        a=rtcp-fb:120 goog-remb
        a=rtcp-fb:120 transport-cc
        a=rtcp-fb:121 nack
        a=rtcp-fb:121 nack pli
        a=rtcp-fb:121 ccm fir
        a=rtcp-fb:121 goog-remb
        a=rtcp-fb:121 transport-cc
        a=rtcp-fb:126 nack
        a=rtcp-fb:126 nack pli
        a=rtcp-fb:126 ccm fir
        a=rtcp-fb:126 goog-remb
        a=rtcp-fb:126 transport-cc
        a=rtcp-fb:97 nack
        a=rtcp-fb:97 nack pli
        a=rtcp-fb:97 ccm fir
        a=rtcp-fb:97 goog-remb
        a=rtcp-fb:97 transport-cc
        a=rtcp-fb:123 nack
        a=rtcp-fb:123 nack pli
        a=rtcp-fb:123 ccm fir
        a=rtcp-fb:123 goog-remb
        a=rtcp-fb:123 transport-cc
        a=rtcp-fb:122 nack
        a=rtcp-fb:122 nack pli
        a=rtcp-fb:122 ccm fir
        a=rtcp-fb:122 goog-remb
        a=rtcp-fb:122 transport-cc
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:120 VP8/90000
        a=rtpmap:124 rtx/90000
        a=rtpmap:121 VP9/90000
        a=rtpmap:125 rtx/90000
        a=rtpmap:126 H264/90000
        a=rtpmap:127 rtx/90000
        a=rtpmap:97 H264/90000
        a=rtpmap:98 rtx/90000
        a=rtpmap:123 ulpfec/90000
        a=rtpmap:122 red/90000
        a=rtpmap:119 rtx/90000
        a=setup:actpass
        a=ssrc:3133453232 cname:{3c2b1a09-8f7e-4d6c-b5a4-392817161514}
        a=ssrc:3806839355 cname:{3c2b1a09-8f7e-4d6c-b5a4-392817161514}
        a=ssrc-group:FID 3133453232 3806839355
        """)

    /// OBS Studio 30 WHIP output (libdatachannel): session-level setup, ufrag, pwd and fingerprint,
    /// a=group:LS, ice-options before the fingerprint, one codec per section, no RTX, candidates
    /// (upper-case UDP, an IPv6 link-local one) and end-of-candidates in the first section only.
    public static let obs = crlf("""
        v=0
        o=rtc 2819745103 0 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1
        a=group:LS 0 1
        a=msid-semantic:WMS *
        a=setup:actpass
        a=ice-ufrag:Qx7d
        a=ice-pwd:w0K3vYfN8pLr2sTq6uHb1c
        a=ice-options:ice2,trickle
        a=fingerprint:sha-256 B7:CE:09:D6:BB:C0:04:E7:17:5C:64:3C:7D:EC:B0:B5:80:EC:37:BC:97:12:DD:2E:6A:AE:B9:4B:AE:8D:2F:9F
        m=audio 51034 UDP/TLS/RTP/SAVPF 111
        c=IN IP4 192.168.0.198
        a=mid:0
        a=sendonly
        a=ssrc:2715283347 cname:VdA9sL2mQe7RtB1k
        a=ssrc:2715283347 msid:aT5kR2mW8qZ1xC4v aT5kR2mW8qZ1xC4v-audio
        a=msid:aT5kR2mW8qZ1xC4v aT5kR2mW8qZ1xC4v-audio
        a=rtcp-mux
        a=rtpmap:111 opus/48000/2
        a=fmtp:111 minptime=10;maxaveragebitrate=96000;stereo=1;sprop-stereo=1;useinbandfec=1
        a=candidate:1 1 UDP 2015363327 192.168.0.198 51034 typ host
        a=candidate:2 1 UDP 2015363583 fe80::6c3d:5b42:1532:2f9a 51035 typ host
        a=end-of-candidates
        m=video 51034 UDP/TLS/RTP/SAVPF 96
        c=IN IP4 192.168.0.198
        a=mid:1
        a=sendonly
        a=ssrc:2715283348 cname:VdA9sL2mQe7RtB1k
        a=ssrc:2715283348 msid:aT5kR2mW8qZ1xC4v aT5kR2mW8qZ1xC4v-video
        a=msid:aT5kR2mW8qZ1xC4v aT5kR2mW8qZ1xC4v-video
        a=rtcp-mux
        a=rtpmap:96 H264/90000
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtcp-fb:96 goog-remb
        a=fmtp:96 profile-level-id=42e01f;packetization-mode=1;level-asymmetry-allowed=1
        """)

    /// GStreamer 1.22.0 webrtcbin (bundle-policy=max-bundle, x264enc ! rtph264pay and opusenc !
    /// rtpopuspay, both transceivers sendonly), the local description after ICE gathering, as
    /// captured on the build machine: video first, audio `bundle-only` with port 0, candidates
    /// inline without end-of-candidates, rtcp-mux-only, OPUS in capitals, sprop-parameter-sets,
    /// a non-preferred H.264 profile (42c015), nack pli without nack.
    public static let gstreamer = crlf("""
        v=0
        o=- 3310222336218319803 0 IN IP4 0.0.0.0
        s=-
        t=0 0
        a=ice-options:trickle
        a=group:BUNDLE video0 audio1
        m=video 9 UDP/TLS/RTP/SAVPF 96
        c=IN IP4 0.0.0.0
        a=setup:actpass
        a=ice-ufrag:We9PV1wXz1VFByE6ewPpjumzd0jJAWFK
        a=ice-pwd:EoX9uTcPg+HUefP2mdGGPYvl/0Y+o3al
        a=rtcp-mux
        a=rtcp-rsize
        a=sendonly
        a=rtpmap:96 H264/90000
        a=rtcp-fb:96 nack pli
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 transport-cc
        a=framerate:30
        a=fmtp:96 packetization-mode=1;sprop-parameter-sets=Z0LAFdkBQfsBagwMDUoAAAMAAgAAAwB5HixckA==,aMuMsg==;profile-level-id=42c015;level-asymmetry-allowed=1
        a=ssrc:4148590028 msid:user3344994266@host-7f4eeacf webrtctransceiver0
        a=ssrc:4148590028 cname:user3344994266@host-7f4eeacf
        a=mid:video0
        a=fingerprint:sha-256 2C:08:09:9E:10:48:C6:DA:6A:81:6D:4D:24:CE:CB:D7:F9:BD:4A:37:5D:C0:CC:5F:F7:DF:19:3D:D3:F4:DB:0B
        a=rtcp-mux-only
        a=candidate:1 1 UDP 2015363327 192.0.2.2 48009 typ host
        a=candidate:2 1 TCP 1015021823 192.0.2.2 9 typ host tcptype active
        a=candidate:3 1 TCP 1010827519 192.0.2.2 49437 typ host tcptype passive
        a=candidate:4 1 UDP 2015363583 fd00::2 42705 typ host
        a=candidate:5 1 TCP 1015022079 fd00::2 9 typ host tcptype active
        a=candidate:6 1 TCP 1010827775 fd00::2 45005 typ host tcptype passive
        a=candidate:7 1 UDP 2015363839 fe80::fc:ff:fe00:1 46458 typ host
        a=candidate:8 1 TCP 1015022335 fe80::fc:ff:fe00:1 9 typ host tcptype active
        a=candidate:9 1 TCP 1010828031 fe80::fc:ff:fe00:1 38085 typ host tcptype passive
        m=audio 0 UDP/TLS/RTP/SAVPF 97
        c=IN IP4 0.0.0.0
        a=setup:actpass
        a=ice-ufrag:We9PV1wXz1VFByE6ewPpjumzd0jJAWFK
        a=ice-pwd:EoX9uTcPg+HUefP2mdGGPYvl/0Y+o3al
        a=bundle-only
        a=rtcp-mux
        a=rtcp-rsize
        a=sendonly
        a=rtpmap:97 OPUS/48000/2
        a=rtcp-fb:97 transport-cc
        a=fmtp:97 sprop-stereo=0;sprop-maxcapturerate=48000
        a=ssrc:3147172756 msid:user3344994266@host-7f4eeacf webrtctransceiver1
        a=ssrc:3147172756 cname:user3344994266@host-7f4eeacf
        a=mid:audio1
        a=fingerprint:sha-256 2C:08:09:9E:10:48:C6:DA:6A:81:6D:4D:24:CE:CB:D7:F9:BD:4A:37:5D:C0:CC:5F:F7:DF:19:3D:D3:F4:DB:0B
        a=rtcp-mux-only
        """)

    /// aiortc 1.16.0 `createOffer()` after `addTransceiver(..., direction="sendonly")` for an
    /// audio and a video track, as captured on the build machine: candidates and three
    /// fingerprints (sha-256/384/512) per section, VP8 before H.264 42001f and 42e01f.
    public static let aiortc = crlf("""
        v=0
        o=- 4004356660 4004356660 IN IP4 0.0.0.0
        s=-
        t=0 0
        a=group:BUNDLE 0 1
        a=msid-semantic:WMS *
        m=audio 33024 UDP/TLS/RTP/SAVPF 96 9 0 8
        c=IN IP4 192.0.2.2
        a=sendonly
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:2 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=mid:0
        a=msid:3e038917-cd9d-497b-a6f3-3db76a8bb228 3ecf562d-a508-45f7-897e-43b6b508d2a7
        a=rtcp:9 IN IP4 0.0.0.0
        a=rtcp-mux
        a=ssrc:1560423111 cname:bcd1db5a-5854-4ae8-9599-20afe5704bba
        a=rtpmap:96 opus/48000/2
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=candidate:f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 33024 typ host
        a=candidate:d0bcf3d9c29a2bc887618212a1623bfa 1 udp 2130706431 fd00::2 41302 typ host
        a=end-of-candidates
        a=ice-ufrag:aVfB
        a=ice-pwd:BerfznPwk7x0JvlyCDfVwY
        a=fingerprint:sha-256 8B:CE:24:F8:0A:18:4F:E4:95:13:AC:82:52:DA:FB:30:8F:A1:3B:2E:E8:EA:70:DF:3F:BA:96:50:CD:FA:32:37
        a=fingerprint:sha-384 55:6D:42:FE:E9:7B:D0:FD:9A:3E:E6:80:2B:8E:99:FF:66:C5:B2:0C:ED:75:17:65:B5:4E:98:E3:7E:B5:B0:87:CA:E8:3C:72:42:CA:AA:7B:E5:30:28:72:B3:81:F8:B0
        a=fingerprint:sha-512 EC:4D:C1:74:F7:A9:2E:4D:FF:69:12:6D:69:2D:7D:2B:E9:9F:FC:CB:B7:48:B1:8B:15:24:C4:EF:F6:FD:7F:17:FC:D2:3A:28:A6:86:51:8D:59:E8:28:74:62:FC:53:D5:8B:E7:B0:64:04:5C:6A:96:08:A4:BC:D6:E1:63:7E:F4
        a=setup:actpass
        m=video 52539 UDP/TLS/RTP/SAVPF 97 98 99 100 101 102
        c=IN IP4 192.0.2.2
        a=sendonly
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:3 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=mid:1
        a=msid:3e038917-cd9d-497b-a6f3-3db76a8bb228 3e7dd25d-e43d-4574-94b0-0552f6aafe3f
        a=rtcp:9 IN IP4 0.0.0.0
        a=rtcp-mux
        a=ssrc-group:FID 3121121069 518149584
        a=ssrc:3121121069 cname:bcd1db5a-5854-4ae8-9599-20afe5704bba
        a=ssrc:518149584 cname:bcd1db5a-5854-4ae8-9599-20afe5704bba
        a=rtpmap:97 VP8/90000
        a=rtcp-fb:97 nack
        a=rtcp-fb:97 nack pli
        a=rtcp-fb:97 goog-remb
        a=rtpmap:98 rtx/90000
        a=fmtp:98 apt=97
        a=rtpmap:99 H264/90000
        a=rtcp-fb:99 nack
        a=rtcp-fb:99 nack pli
        a=rtcp-fb:99 goog-remb
        a=fmtp:99 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f
        a=rtpmap:100 rtx/90000
        a=fmtp:100 apt=99
        a=rtpmap:101 H264/90000
        a=rtcp-fb:101 nack
        a=rtcp-fb:101 nack pli
        a=rtcp-fb:101 goog-remb
        a=fmtp:101 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f
        a=rtpmap:102 rtx/90000
        a=fmtp:102 apt=101
        a=candidate:f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 52539 typ host
        a=candidate:d0bcf3d9c29a2bc887618212a1623bfa 1 udp 2130706431 fd00::2 49726 typ host
        a=end-of-candidates
        a=ice-ufrag:aVfB
        a=ice-pwd:BerfznPwk7x0JvlyCDfVwY
        a=fingerprint:sha-256 8B:CE:24:F8:0A:18:4F:E4:95:13:AC:82:52:DA:FB:30:8F:A1:3B:2E:E8:EA:70:DF:3F:BA:96:50:CD:FA:32:37
        a=fingerprint:sha-384 55:6D:42:FE:E9:7B:D0:FD:9A:3E:E6:80:2B:8E:99:FF:66:C5:B2:0C:ED:75:17:65:B5:4E:98:E3:7E:B5:B0:87:CA:E8:3C:72:42:CA:AA:7B:E5:30:28:72:B3:81:F8:B0
        a=fingerprint:sha-512 EC:4D:C1:74:F7:A9:2E:4D:FF:69:12:6D:69:2D:7D:2B:E9:9F:FC:CB:B7:48:B1:8B:15:24:C4:EF:F6:FD:7F:17:FC:D2:3A:28:A6:86:51:8D:59:E8:28:74:62:FC:53:D5:8B:E7:B0:64:04:5C:6A:96:08:A4:BC:D6:E1:63:7E:F4
        a=setup:actpass
        """)

    /// Chrome publishing simulcast (sendEncodings with rids f, h, q): rid header extensions,
    /// a=rid and a=simulcast, no a=ssrc lines.
    public static let simulcast = crlf("""
        v=0
        o=- 3391820517004617152 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1
        a=extmap-allow-mixed
        a=msid-semantic: WMS
        m=audio 9 UDP/TLS/RTP/SAVPF 111
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:z9Yt
        a=ice-pwd:a1B2c3D4e5F6g7H8i9J0kLmN
        a=ice-options:trickle
        a=fingerprint:sha-256 A2:9C:5A:28:4C:9E:F7:52:18:29:CF:10:79:B0:80:E9:D7:4A:1C:10:FC:AB:6A:42:43:D3:36:56:DE:BE:4C:1E
        a=setup:actpass
        a=mid:0
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendonly
        a=msid:- 11111111-2222-4333-8444-555555555555
        a=rtcp-mux
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=ssrc:1001 cname:simulcastcname
        m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:z9Yt
        a=ice-pwd:a1B2c3D4e5F6g7H8i9J0kLmN
        a=ice-options:trickle
        a=fingerprint:sha-256 A2:9C:5A:28:4C:9E:F7:52:18:29:CF:10:79:B0:80:E9:D7:4A:1C:10:FC:AB:6A:42:43:D3:36:56:DE:BE:4C:1E
        a=setup:actpass
        a=mid:1
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
        a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id
        a=sendonly
        a=msid:- 66666666-7777-4888-9999-000000000000
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:96 VP8/90000
        a=rtcp-fb:96 goog-remb
        a=rtcp-fb:96 transport-cc
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rtpmap:102 H264/90000
        a=rtcp-fb:102 goog-remb
        a=rtcp-fb:102 transport-cc
        a=rtcp-fb:102 ccm fir
        a=rtcp-fb:102 nack
        a=rtcp-fb:102 nack pli
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f
        a=rtpmap:103 rtx/90000
        a=fmtp:103 apt=102
        a=rid:f send
        a=rid:h send
        a=rid:q send
        a=simulcast:send f;h;q
        """)
}

extension Offers {
    /// The smallest offer a WHIP publisher sends: Opus (PT 111, SSRC 1111) and H.264 (PT 102,
    /// SSRC 2222; with `rtx`, RTX PT 103 on SSRC 3333 in a FID group), BUNDLE, rtcp-mux.
    public static func h264Opus(ufrag: String = "abcd", pwd: String = "0123456789abcdef01234567",
                                fingerprint: String = "AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99",
                                setup: String = "actpass", rtx: Bool = true, cname: String = "sender") -> String {
        let videoPayloads = rtx ? "102 103" : "102"
        let rtxLines = rtx ? "a=rtpmap:103 rtx/90000\r\na=fmtp:103 apt=102\r\na=ssrc-group:FID 2222 3333\r\n" : ""
        let rtxSource = rtx ? "a=ssrc:3333 cname:\(cname)\r\n" : ""
        return """
        v=0\r
        o=- 1 2 IN IP4 127.0.0.1\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=ice-ufrag:\(ufrag)\r
        a=ice-pwd:\(pwd)\r
        a=fingerprint:sha-256 \(fingerprint)\r
        a=setup:\(setup)\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r
        c=IN IP4 0.0.0.0\r
        a=mid:0\r
        a=sendonly\r
        a=rtcp-mux\r
        a=rtpmap:111 opus/48000/2\r
        a=ssrc:1111 cname:\(cname)\r
        m=video 9 UDP/TLS/RTP/SAVPF \(videoPayloads)\r
        c=IN IP4 0.0.0.0\r
        a=mid:1\r
        a=sendonly\r
        a=rtcp-mux\r
        a=rtpmap:102 H264/90000\r
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r
        a=rtcp-fb:102 nack\r
        a=rtcp-fb:102 nack pli\r

        """ + rtxLines + "a=ssrc:2222 cname:\(cname)\r\n" + rtxSource
    }
}

// WHEP viewers' offers (recvonly audio and video), captured on the build machine.
extension Offers {
    /// Chromium 156 (Debian 12), headless: a page that runs
    /// `pc = new RTCPeerConnection({bundlePolicy: "max-bundle"}); pc.addTransceiver("audio", {direction: "recvonly"});
    /// pc.addTransceiver("video", {direction: "recvonly"}); await pc.setLocalDescription(await pc.createOffer())`,
    /// waits for ICE gathering and writes `pc.localDescription.sdp` into the page, read with
    /// `chromium --headless --no-sandbox --virtual-time-budget=10000 --dump-dom file:///.../offer.html`
    /// (no network, so no candidates: they would trickle). H.264 as 42001f, 42e01f, 4d001f and
    /// f4001f, each in packetization-mode 1 and 0 with RTX; no High (64xxxx); VP8, VP9 (four
    /// profiles), AV1 (two), RED, ULPFEC, FlexFEC; transport-cc, rtcp-rsize, rtcp-xr.
    public static let chromiumWHEP = crlf("""
        v=0
        o=- 5017739927632883580 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1
        a=extmap-allow-mixed
        a=msid-semantic: WMS
        m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:EBD5
        a=ice-pwd:hyUe+Ef7pEC6xKPeBFurepQM
        a=ice-options:trickle
        a=fingerprint:sha-256 34:37:79:13:87:A8:78:5F:5F:F9:4A:9E:51:7A:31:55:AD:58:FC:C5:C1:E2:28:AA:4D:DB:7B:B4:42:90:D7:E6
        a=setup:actpass
        a=mid:0
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=recvonly
        a=rtcp-mux
        a=rtcp-rsize
        a=rtcp-xr:rcvr-rtt=all
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=rtpmap:63 red/48000/2
        a=fmtp:63 111/111
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:13 CN/8000
        a=rtpmap:110 telephone-event/48000
        a=rtpmap:126 telephone-event/8000
        m=video 9 UDP/TLS/RTP/SAVPF 96 97 98 99 100 101 35 36 37 38 102 103 104 107 108 109 114 115 116 117 39 40 41 42 43 44 45 46 47 48 118 119 120 49
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:EBD5
        a=ice-pwd:hyUe+Ef7pEC6xKPeBFurepQM
        a=ice-options:trickle
        a=fingerprint:sha-256 34:37:79:13:87:A8:78:5F:5F:F9:4A:9E:51:7A:31:55:AD:58:FC:C5:C1:E2:28:AA:4D:DB:7B:B4:42:90:D7:E6
        a=setup:actpass
        a=mid:1
        a=extmap:14 urn:ietf:params:rtp-hdrext:toffset
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:13 urn:3gpp:video-orientation
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay
        a=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/video-content-type
        a=extmap:7 http://www.webrtc.org/experiments/rtp-hdrext/video-timing
        a=extmap:8 http://www.webrtc.org/experiments/rtp-hdrext/color-space
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
        a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id
        a=recvonly
        a=rtcp-mux
        a=rtcp-rsize
        a=rtcp-xr:rcvr-rtt=all
        a=rtpmap:96 VP8/90000
        a=rtcp-fb:96 goog-remb
        a=rtcp-fb:96 transport-cc
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rtpmap:98 VP9/90000
        a=rtcp-fb:98 goog-remb
        a=rtcp-fb:98 transport-cc
        a=rtcp-fb:98 ccm fir
        a=rtcp-fb:98 nack
        a=rtcp-fb:98 nack pli
        a=fmtp:98 profile-id=0
        a=rtpmap:99 rtx/90000
        a=fmtp:99 apt=98
        a=rtpmap:100 VP9/90000
        a=rtcp-fb:100 goog-remb
        a=rtcp-fb:100 transport-cc
        a=rtcp-fb:100 ccm fir
        a=rtcp-fb:100 nack
        a=rtcp-fb:100 nack pli
        a=fmtp:100 profile-id=2
        a=rtpmap:101 rtx/90000
        a=fmtp:101 apt=100
        a=rtpmap:35 VP9/90000
        a=rtcp-fb:35 goog-remb
        a=rtcp-fb:35 transport-cc
        a=rtcp-fb:35 ccm fir
        a=rtcp-fb:35 nack
        a=rtcp-fb:35 nack pli
        a=fmtp:35 profile-id=1
        a=rtpmap:36 rtx/90000
        a=fmtp:36 apt=35
        a=rtpmap:37 VP9/90000
        a=rtcp-fb:37 goog-remb
        a=rtcp-fb:37 transport-cc
        a=rtcp-fb:37 ccm fir
        a=rtcp-fb:37 nack
        a=rtcp-fb:37 nack pli
        a=fmtp:37 profile-id=3
        a=rtpmap:38 rtx/90000
        a=fmtp:38 apt=37
        a=rtpmap:102 H264/90000
        a=rtcp-fb:102 goog-remb
        a=rtcp-fb:102 transport-cc
        a=rtcp-fb:102 ccm fir
        a=rtcp-fb:102 nack
        a=rtcp-fb:102 nack pli
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f
        a=rtpmap:103 rtx/90000
        a=fmtp:103 apt=102
        a=rtpmap:104 H264/90000
        a=rtcp-fb:104 goog-remb
        a=rtcp-fb:104 transport-cc
        a=rtcp-fb:104 ccm fir
        a=rtcp-fb:104 nack
        a=rtcp-fb:104 nack pli
        a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f
        a=rtpmap:107 rtx/90000
        a=fmtp:107 apt=104
        a=rtpmap:108 H264/90000
        a=rtcp-fb:108 goog-remb
        a=rtcp-fb:108 transport-cc
        a=rtcp-fb:108 ccm fir
        a=rtcp-fb:108 nack
        a=rtcp-fb:108 nack pli
        a=fmtp:108 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f
        a=rtpmap:109 rtx/90000
        a=fmtp:109 apt=108
        a=rtpmap:114 H264/90000
        a=rtcp-fb:114 goog-remb
        a=rtcp-fb:114 transport-cc
        a=rtcp-fb:114 ccm fir
        a=rtcp-fb:114 nack
        a=rtcp-fb:114 nack pli
        a=fmtp:114 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f
        a=rtpmap:115 rtx/90000
        a=fmtp:115 apt=114
        a=rtpmap:116 H264/90000
        a=rtcp-fb:116 goog-remb
        a=rtcp-fb:116 transport-cc
        a=rtcp-fb:116 ccm fir
        a=rtcp-fb:116 nack
        a=rtcp-fb:116 nack pli
        a=fmtp:116 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f
        a=rtpmap:117 rtx/90000
        a=fmtp:117 apt=116
        a=rtpmap:39 H264/90000
        a=rtcp-fb:39 goog-remb
        a=rtcp-fb:39 transport-cc
        a=rtcp-fb:39 ccm fir
        a=rtcp-fb:39 nack
        a=rtcp-fb:39 nack pli
        a=fmtp:39 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=4d001f
        a=rtpmap:40 rtx/90000
        a=fmtp:40 apt=39
        a=rtpmap:41 H264/90000
        a=rtcp-fb:41 goog-remb
        a=rtcp-fb:41 transport-cc
        a=rtcp-fb:41 ccm fir
        a=rtcp-fb:41 nack
        a=rtcp-fb:41 nack pli
        a=fmtp:41 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=f4001f
        a=rtpmap:42 rtx/90000
        a=fmtp:42 apt=41
        a=rtpmap:43 H264/90000
        a=rtcp-fb:43 goog-remb
        a=rtcp-fb:43 transport-cc
        a=rtcp-fb:43 ccm fir
        a=rtcp-fb:43 nack
        a=rtcp-fb:43 nack pli
        a=fmtp:43 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=f4001f
        a=rtpmap:44 rtx/90000
        a=fmtp:44 apt=43
        a=rtpmap:45 AV1/90000
        a=rtcp-fb:45 goog-remb
        a=rtcp-fb:45 transport-cc
        a=rtcp-fb:45 ccm fir
        a=rtcp-fb:45 nack
        a=rtcp-fb:45 nack pli
        a=fmtp:45 level-idx=5;profile=0;tier=0
        a=rtpmap:46 rtx/90000
        a=fmtp:46 apt=45
        a=rtpmap:47 AV1/90000
        a=rtcp-fb:47 goog-remb
        a=rtcp-fb:47 transport-cc
        a=rtcp-fb:47 ccm fir
        a=rtcp-fb:47 nack
        a=rtcp-fb:47 nack pli
        a=fmtp:47 level-idx=5;profile=1;tier=0
        a=rtpmap:48 rtx/90000
        a=fmtp:48 apt=47
        a=rtpmap:118 red/90000
        a=rtpmap:119 rtx/90000
        a=fmtp:119 apt=118
        a=rtpmap:120 ulpfec/90000
        a=rtpmap:49 flexfec-03/90000
        a=rtcp-fb:49 goog-remb
        a=rtcp-fb:49 transport-cc
        a=fmtp:49 repair-window=10000000
        """)

    /// aiortc 1.16.0: `pc = RTCPeerConnection(); pc.addTransceiver("audio", direction="recvonly");
    /// pc.addTransceiver("video", direction="recvonly"); await pc.setLocalDescription(await pc.createOffer())`,
    /// `pc.localDescription.sdp` (`.build/venv/bin/python3`). Candidates in every section and three
    /// fingerprints; its own SSRCs (for its RTCP) with a FID group though it sends nothing;
    /// H.264 only as 42001f and 42e01f, packetization-mode=1, with RTX; no rtcp-rsize.
    public static let aiortcWHEP = crlf("""
        v=0
        o=- 4004868018 4004868018 IN IP4 0.0.0.0
        s=-
        t=0 0
        a=group:BUNDLE 0 1
        a=msid-semantic:WMS *
        m=audio 48838 UDP/TLS/RTP/SAVPF 96 9 0 8
        c=IN IP4 192.0.2.2
        a=recvonly
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:2 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=mid:0
        a=msid:93a6088c-f7e8-4a18-9c9a-412bc3fe156b 8bc5b117-c5f6-4c47-987d-915637c89ad0
        a=rtcp:9 IN IP4 0.0.0.0
        a=rtcp-mux
        a=ssrc:1304804297 cname:02dc4176-d301-4b94-b6e3-d152ef9372ed
        a=rtpmap:96 opus/48000/2
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=candidate:f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 48838 typ host
        a=candidate:d0bcf3d9c29a2bc887618212a1623bfa 1 udp 2130706431 fd00::2 52304 typ host
        a=end-of-candidates
        a=ice-ufrag:cvdc
        a=ice-pwd:T2f71lppnGJ76riyDkw7VB
        a=fingerprint:sha-256 FA:7F:69:9E:8E:06:D9:BA:BD:DF:98:06:61:03:EB:09:F8:2C:F0:98:2F:CC:7C:06:8A:EF:70:E8:D6:55:D7:46
        a=fingerprint:sha-384 1A:C3:31:18:A8:32:06:A5:D8:5A:C8:E5:D7:27:BA:E6:74:77:01:B6:E7:02:40:FF:5D:6F:19:7B:7E:C7:76:16:88:9D:BE:EC:DA:18:55:92:9C:F0:B5:51:A7:E0:6B:5B
        a=fingerprint:sha-512 AF:0D:A4:3C:E1:F9:8F:D7:0F:C5:BF:63:DD:93:F5:41:0D:4F:3C:96:7F:00:E2:7E:82:58:D7:80:84:9B:54:D3:F9:E8:FA:2D:3B:78:0A:72:91:41:A6:EB:4A:12:5F:19:06:7A:89:BD:90:54:35:7A:41:1E:44:F2:21:37:F7:E3
        a=setup:actpass
        m=video 44213 UDP/TLS/RTP/SAVPF 97 98 99 100 101 102
        c=IN IP4 192.0.2.2
        a=recvonly
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:3 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=mid:1
        a=msid:93a6088c-f7e8-4a18-9c9a-412bc3fe156b d405d870-d393-458f-b83f-8c397a79e1d4
        a=rtcp:9 IN IP4 0.0.0.0
        a=rtcp-mux
        a=ssrc-group:FID 406599518 2927653326
        a=ssrc:406599518 cname:02dc4176-d301-4b94-b6e3-d152ef9372ed
        a=ssrc:2927653326 cname:02dc4176-d301-4b94-b6e3-d152ef9372ed
        a=rtpmap:97 VP8/90000
        a=rtcp-fb:97 nack
        a=rtcp-fb:97 nack pli
        a=rtcp-fb:97 goog-remb
        a=rtpmap:98 rtx/90000
        a=fmtp:98 apt=97
        a=rtpmap:99 H264/90000
        a=rtcp-fb:99 nack
        a=rtcp-fb:99 nack pli
        a=rtcp-fb:99 goog-remb
        a=fmtp:99 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f
        a=rtpmap:100 rtx/90000
        a=fmtp:100 apt=99
        a=rtpmap:101 H264/90000
        a=rtcp-fb:101 nack
        a=rtcp-fb:101 nack pli
        a=rtcp-fb:101 goog-remb
        a=fmtp:101 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f
        a=rtpmap:102 rtx/90000
        a=fmtp:102 apt=101
        a=candidate:f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 44213 typ host
        a=candidate:d0bcf3d9c29a2bc887618212a1623bfa 1 udp 2130706431 fd00::2 58702 typ host
        a=end-of-candidates
        a=ice-ufrag:cvdc
        a=ice-pwd:T2f71lppnGJ76riyDkw7VB
        a=fingerprint:sha-256 FA:7F:69:9E:8E:06:D9:BA:BD:DF:98:06:61:03:EB:09:F8:2C:F0:98:2F:CC:7C:06:8A:EF:70:E8:D6:55:D7:46
        a=fingerprint:sha-384 1A:C3:31:18:A8:32:06:A5:D8:5A:C8:E5:D7:27:BA:E6:74:77:01:B6:E7:02:40:FF:5D:6F:19:7B:7E:C7:76:16:88:9D:BE:EC:DA:18:55:92:9C:F0:B5:51:A7:E0:6B:5B
        a=fingerprint:sha-512 AF:0D:A4:3C:E1:F9:8F:D7:0F:C5:BF:63:DD:93:F5:41:0D:4F:3C:96:7F:00:E2:7E:82:58:D7:80:84:9B:54:D3:F9:E8:FA:2D:3B:78:0A:72:91:41:A6:EB:4A:12:5F:19:06:7A:89:BD:90:54:35:7A:41:1E:44:F2:21:37:F7:E3
        a=setup:actpass
        """)
}
