// WebRTCMedia: the receive side of a WHIP publisher's media, and (in Send/, see
// SendOverview.swift) the send side of a WHEP viewer's, sans I/O. Every type is a value
// fed bytes, packets and `now` (Int64 µs) and polled for what to send or deliver; none
// reads a clock, opens a socket or spawns a task, so every case is a deterministic test.
//
//   SRTP-decrypted datagram
//     │  RTPPacket(parsing:) ─ or RTCPPacket.parseCompound (RTCP on the muxed port)
//     ▼
//   RTXUnwrapper ───────────── padding probes dropped; RTX → original, isRetransmission
//     ▼
//   RTPReceiveStream (per SSRC) ── SequenceUnwrapper: 16-bit seq → extended Int64
//     │                            statistics → RTCPReportBlock
//     ├──► NackGenerator ──── poll → NACK seqs (NackPacker) / gave up / keyframe needed
//     ▼
//   ReorderBuffer ─────────── in order; gaps waited for (video 150 ms, audio as its reordering needs) or abandoned
//     ▼
//   H264 / VP8 / Opus depacketizer ── EncodedFrame (timestamp unwrapped by TimestampUnwrapper)
//     │                               incomplete frame → KeyframeRequester (PLI/FIR)
//     ▼
//   SenderClock ───────────── RTP timestamp → sender wall clock via RTCP SR (lip sync)
//
//   Outgoing RTCP: ReceiverReportScheduler packs RR + SDES with pending NACK, PLI/FIR and
//   REMBScheduler's cap into compounds ≤ 1200 bytes (RTCPCompoundPacker).
//
// Errors: RTPError (packet and RTX parsing), RTCPError (compound parsing and writing).
// Depacketizers do not throw: what they drop is reported as DepacketizerDiscard.
