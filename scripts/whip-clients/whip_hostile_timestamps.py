#!/usr/bin/env python3
"""A hostile WHIP publisher (issue 23): whip_aiortc.py, except that after --hostile-after
seconds of normal media its RTP timestamps alternate by 2^31, packet by packet: every other
packet of each stream carries its timestamp + 0x80000000 (mod 2^32). Everything else (ICE,
DTLS, SRTP, payloads, sequence numbers, RTCP) stays valid, so only the timestamps are nonsense.

Same options, output and exit codes as whip_aiortc.py, plus --hostile-after and --hostile-kind;
its JSON line also has "hostile_packets" (how many packets were sent with a shifted
timestamp) and "hostile_started_s".
"""
import sys
import time

from hostile_common import run, take

HOSTILE = {"after": 2.0, "kinds": ("audio", "video"), "packets": 0, "started": None, "t0": None}


def install():
    """Replaces the RtpPacket aiortc's RTCRtpSender builds with one whose serialize() shifts
    the timestamp of every other packet (per payload type) once --hostile-after has passed."""
    import aiortc.rtcrtpsender as sender_module
    from aiortc.rtp import RtpPacket

    flips = {}

    class HostilePacket(RtpPacket):
        def serialize(self, extensions_map=None):
            now = time.monotonic()
            if HOSTILE["t0"] is None:
                HOSTILE["t0"] = now
            kind = "audio" if self.payload_type in audio_types else "video"
            if now - HOSTILE["t0"] >= HOSTILE["after"] and kind in HOSTILE["kinds"]:
                flip = flips.get(self.payload_type, False)
                flips[self.payload_type] = not flip
                if flip:
                    if HOSTILE["started"] is None:
                        HOSTILE["started"] = now - HOSTILE["t0"]
                    original = self.timestamp
                    self.timestamp = (original + 0x80000000) & 0xFFFFFFFF
                    try:
                        data = RtpPacket.serialize(self, extensions_map)
                    finally:
                        self.timestamp = original  # the sender's history keeps the real one
                    # Counted from the bytes that go out (the RTP header is not encrypted by SRTP).
                    if int.from_bytes(data[4:8], "big") == (original + 0x80000000) & 0xFFFFFFFF:
                        HOSTILE["packets"] += 1
                    return data
            return RtpPacket.serialize(self, extensions_map)

    # Opus is the only audio codec whip_aiortc offers; its payload type is dynamic, so it is
    # learned from the sender's codec parameters when RTP starts.
    audio_types = set()
    original_run_rtp = sender_module.RTCRtpSender._run_rtp

    async def run_rtp(self, codec):
        if codec.mimeType.lower().startswith("audio/"):
            audio_types.add(codec.payloadType)
        return await original_run_rtp(self, codec)

    sender_module.RTCRtpSender._run_rtp = run_rtp
    sender_module.RtpPacket = HostilePacket


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    HOSTILE["after"] = float(take(argv, "--hostile-after", "2"))
    kind = take(argv, "--hostile-kind", "both")
    HOSTILE["kinds"] = ("audio", "video") if kind == "both" else (kind,)
    install()
    return run(argv, lambda: {"hostile_packets": HOSTILE["packets"], "hostile_started_s": HOSTILE["started"]})


if __name__ == "__main__":
    sys.exit(main())
