// WebRTCMedia's send side: what a WHEP viewer is sent, sans I/O. Values fed access units,
// RTCP and `now` (Int64 µs on one caller's clock, shown to viewers as NTP time since the
// Unix epoch), polled for bytes to send; nothing reads a clock or opens a socket.
//
//   encoder access unit (H.264 Annex B / AVCC, SPS+PPS from extradata) or Opus packet
//     │  H264Packetizer / OpusPacketizer ── once per composition
//     ▼
//   PacketizedFrame ──────── the RTP payloads end to end in one array, shared by every viewer
//     │
//     ├─ per viewer ─► ViewerPacer ──── bounded queue: audio first, video paced; a viewer
//     │                  │              that falls behind is dropped to the next keyframe
//     │                  ▼
//     │                RTPSendStream (per SSRC) ── sequence numbers, header, send history
//     │                  │  answers NACKs (plain or RTX), counts for SRs, RTT from RRs
//     │                  ▼
//     │                datagram ─► (SRTP protect, UDP: the shell)
//     │
//     ├─ SenderReportScheduler (per stream) ── SR + SDES CNAME about once a second
//     │
//   viewer's RTCP ─► ViewerFeedbackReader ── RR blocks, NACKs, PLI/FIR (repeats of a FIR
//                      │                     ignored), REMB, BYE, for our SSRCs only
//                      ▼
//   KeyframeRequestGate (per composition) ── every viewer's PLI/FIR, new viewers and drops
//                                            to keyframe → at most one encoder request a second
//
// Errors: PacketizerError (access units, extradata), RTPError (header extensions that cannot
// be written), RTCPError (compound parsing and writing).
