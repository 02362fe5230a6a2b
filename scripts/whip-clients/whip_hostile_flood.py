#!/usr/bin/env python3
"""A hostile WHIP publisher (issue 23): whip_aiortc.py, except that after --hostile-after
seconds of normal media, every RTP packet it sends is followed by
  --ssrcs-per-packet N copies, each under an SSRC never used before (an SSRC flood: thousands
      of SSRCs the offer never declared, each correctly SRTP-protected), and/or
  --dtls-per-packet N copies of its own first DTLS flight (a ClientHello: a handshake burst).
Its own audio and video stay valid, so the flood is the only nonsense.

Same options, output and exit codes as whip_aiortc.py; its JSON line also has
"flood_ssrcs" (distinct SSRCs sent), "flood_dtls" (DTLS datagrams replayed) and
"hostile_started_s".
"""
import sys
import time

from hostile_common import run, take

FLOOD = {"after": 2.0, "ssrcs": 0, "dtls": 0, "sent_ssrcs": 0, "sent_dtls": 0, "started": None, "t0": None,
         "hello": None, "next_ssrc": 0x10000000}


def install():
    from aiortc.rtcdtlstransport import RTCDtlsTransport
    from aiortc.rtp import is_rtcp

    original_write_ssl = RTCDtlsTransport._write_ssl
    original_send_rtp = RTCDtlsTransport._send_rtp

    async def write_ssl(self):
        # The first datagram OpenSSL writes is the ClientHello (aiortc is the DTLS client
        # against an ICE-lite server); keep it to replay.
        try:
            data = self._ssl.bio_read(1500)
        except Exception:
            data = b""
        if data:
            if FLOOD["hello"] is None and data[0] == 22:
                FLOOD["hello"] = bytes(data)
            await self.transport._send(data)

    async def send_rtp(self, data):
        await original_send_rtp(self, data)
        now = time.monotonic()
        if FLOOD["t0"] is None:
            FLOOD["t0"] = now
        if now - FLOOD["t0"] < FLOOD["after"] or is_rtcp(data):
            return
        if FLOOD["started"] is None:
            FLOOD["started"] = now - FLOOD["t0"]
        for _ in range(FLOOD["ssrcs"]):
            forged = bytearray(data)
            forged[8:12] = FLOOD["next_ssrc"].to_bytes(4, "big")
            FLOOD["next_ssrc"] += 1
            await original_send_rtp(self, bytes(forged))
            FLOOD["sent_ssrcs"] += 1
        if FLOOD["hello"] is not None:
            for _ in range(FLOOD["dtls"]):
                await self.transport._send(FLOOD["hello"])
                FLOOD["sent_dtls"] += 1

    RTCDtlsTransport._write_ssl = write_ssl
    RTCDtlsTransport._send_rtp = send_rtp
    _ = original_write_ssl


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    FLOOD["after"] = float(take(argv, "--hostile-after", "2"))
    FLOOD["ssrcs"] = int(take(argv, "--ssrcs-per-packet", "0"))
    FLOOD["dtls"] = int(take(argv, "--dtls-per-packet", "0"))
    install()
    return run(argv, lambda: {"flood_ssrcs": FLOOD["sent_ssrcs"], "flood_dtls": FLOOD["sent_dtls"],
                              "hostile_started_s": FLOOD["started"]})


if __name__ == "__main__":
    sys.exit(main())
