#!/usr/bin/env python3
"""WHIP (RFC 9725) publisher made with aiortc: a solid colour video (H.264 or VP8) and an Opus
sine tone, optionally with a white flash + a 2 kHz beep at the same instants (A/V sync checks).

Non-trickle flow: gather all ICE candidates, POST the offer (Content-Type: application/sdp,
Authorization: Bearer TOKEN), expect 201 + Location, apply the answer, publish for --duration
seconds, then DELETE the Location. SIGINT/SIGTERM end the publishing early (still DELETEs).
A 307/308 answer to the POST is followed, as a browser's fetch() does: the same offer is POSTed
to its Location (at most 3 times), without the Authorization header when the Location is on
another origin (a stage-compositor fleet's redirect carries the token in ?access_token= then);
"redirects" in the JSON line lists the URLs followed.

stdout: exactly one JSON line at the end, e.g.
  {"status": 201, "location": "http://.../resource/abc", "connected_after_s": 0.41,
   "frames_sent": 298, "audio_frames_sent": 500, "ice_state": "completed",
   "dtls_state": "connected", "delete_status": 200, ...}
(--offer-only prints the SDP offer instead.)  Logs go to stderr.

Exit status:
  0  published (POST 201, DTLS connected, DELETE done) -- or the POST returned --expect-status
  1  usage / internal error
  2  the POST returned an unexpected status (the JSON line has "status" and "body")
  3  the POST was accepted but ICE/DTLS never connected within --connect-timeout, or failed later
  4  HTTP transport error (connection refused, timeout) or the global --timeout expired
"""
import argparse
import asyncio
import fractions
import json
import logging
import math
import os
import signal
import sys
import time
import urllib.parse

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webrtc_http import http, post_offer  # noqa: E402

LOG = logging.getLogger("whip_aiortc")

VIDEO_CLOCK = 90000
AUDIO_RATE = 48000
AUDIO_PTIME = 0.020
AUDIO_SAMPLES = int(AUDIO_RATE * AUDIO_PTIME)  # 960
BEEP_HZ = 2000.0
BEEP_S = 0.060
FLASH_FRAMES = 2


def pin_ice_host_addresses(host_ip):
    """aiortc gathers ICE host candidates through aioice.ice.get_host_addresses(), which lists
    every interface address and deliberately SKIPS 127.0.0.1 (and ::1). On this machine that
    would give 192.0.2.2 / fd00::2 only, so a server on loopback could still be reached via
    eth0's address, but the candidate would not be 127.0.0.1 and IPv6 candidates would be added
    too. Replacing the module-level function (it is looked up at call time in
    Connection.gather_candidates) pins the host candidate to exactly the given address(es).
    host_ip "all" keeps aioice's default behaviour."""
    if host_ip in (None, "", "all"):
        return
    import aioice.ice
    addresses = [a.strip() for a in host_ip.split(",") if a.strip()]
    aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: list(addresses)


class Clock:
    """One start instant shared by the audio and the video track, so frame k of the video and
    sample n of the audio are sent at t0 + k/fps and t0 + n/48000: flashes and beeps leave
    the process at the same wall-clock instants."""

    def __init__(self):
        self.t0 = None

    def start(self):
        if self.t0 is None:
            self.t0 = time.monotonic()
        return self.t0


def make_tracks(args, clock, counters):
    from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
    import av

    def rgb_to_yuv(r, g, b):  # BT.601 limited range, what encoders assume for yuv420p
        y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
        u = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255
        v = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
        return [int(round(min(255, max(0, c)))) for c in (y, u, v)]

    def plane_array(rgb, w, h):
        y, u, v = rgb_to_yuv(*rgb)
        arr = np.empty((h * 3 // 2, w), dtype=np.uint8)
        arr[:h] = y
        # yuv420p ndarray layout used by PyAV: U plane then V plane, each (h/2)x(w/2), packed
        uv = arr[h:].reshape(-1)
        q = (w // 2) * (h // 2)
        uv[:q] = u
        uv[q:] = v
        return arr

    class ColourVideoTrack(MediaStreamTrack):
        kind = "video"

        def __init__(self):
            super().__init__()
            self.w, self.h, self.fps = args.width, args.height, args.fps
            self.normal = plane_array(args.color, self.w, self.h)
            self.white = plane_array((255, 255, 255), self.w, self.h)
            self.index = 0

        async def recv(self):
            if self.readyState != "live":
                raise MediaStreamError
            t0 = clock.start()
            k = self.index
            self.index += 1
            due = t0 + k / self.fps
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            flash = False
            if args.flash_every and args.flash_every > 0:
                t = k / self.fps
                n = round(t / args.flash_every)
                start_frame = round(n * args.flash_every * self.fps)
                flash = n >= 1 and start_frame <= k < start_frame + args.flash_frames
            frame = av.VideoFrame.from_ndarray(self.white if flash else self.normal, format="yuv420p")
            frame.pts = int(round(k * VIDEO_CLOCK / self.fps))
            frame.time_base = fractions.Fraction(1, VIDEO_CLOCK)
            counters["frames_sent"] += 1
            if flash:
                counters["flashes_sent"] += 1
            return frame

    class ToneAudioTrack(MediaStreamTrack):
        kind = "audio"

        def __init__(self):
            super().__init__()
            self.sample = 0
            self.phase_step = 2 * math.pi * args.tone_hz / AUDIO_RATE

        async def recv(self):
            if self.readyState != "live":
                raise MediaStreamError
            t0 = clock.start()
            n0 = self.sample
            self.sample += AUDIO_SAMPLES
            delay = t0 + n0 / AUDIO_RATE - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            n = np.arange(n0, n0 + AUDIO_SAMPLES, dtype=np.float64)
            pcm = 0.25 * np.sin(self.phase_step * n)
            if args.flash_every and args.flash_every > 0:
                t = n / AUDIO_RATE
                k = np.round(t / args.flash_every)
                start = k * args.flash_every
                beep = (k >= 1) & (t >= start) & (t < start + BEEP_S)
                if beep.any():
                    pcm = np.where(beep, 0.8 * np.sin(2 * math.pi * BEEP_HZ * t), pcm)
                    counters["beep_frames_sent"] += 1
            data = (pcm * 32767).astype(np.int16).reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(data, format="s16", layout="mono")
            frame.sample_rate = AUDIO_RATE
            frame.pts = n0
            frame.time_base = fractions.Fraction(1, AUDIO_RATE)
            counters["audio_frames_sent"] += 1
            return frame

    video = None if args.no_video else ColourVideoTrack()
    audio = None if args.no_audio else ToneAudioTrack()
    return video, audio


def corrupt_fingerprint(sdp):
    """Flip the first hex byte of every a=fingerprint (the DTLS certificate then mismatches)."""
    out = []
    for line in sdp.split("\r\n"):
        if line.startswith("a=fingerprint:"):
            algo, _, fp = line.partition(" ")
            first = fp[:2]
            flipped = "%02X" % (int(first, 16) ^ 0xFF)
            line = f"{algo} {flipped}{fp[2:]}"
        out.append(line)
    return "\r\n".join(out)


async def run(args):
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpSender, RTCSessionDescription

    pin_ice_host_addresses(args.host_ip)
    result = {"status": None, "location": None}
    counters = {"frames_sent": 0, "audio_frames_sent": 0, "flashes_sent": 0, "beep_frames_sent": 0}
    clock = Clock()
    # iceServers=[]: otherwise aiortc adds stun:stun.l.google.com:19302 and gathering waits
    # for it (up to 5 s) when there is no Internet.
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    t_start = time.monotonic()
    connected = asyncio.Event()
    failed = asyncio.Event()
    connected_at = {}

    @pc.on("connectionstatechange")
    async def on_state():
        LOG.info("connectionState=%s iceConnectionState=%s", pc.connectionState, pc.iceConnectionState)
        if pc.connectionState == "connected" and "t" not in connected_at:
            connected_at["t"] = time.monotonic()
            connected.set()
        elif pc.connectionState in ("failed", "closed"):
            failed.set()

    video, audio = make_tracks(args, clock, counters)
    # Audio first (mid 0), video second (mid 1), like browsers' usual order and what
    # daemon-tests/whip_tests.py's offer surgery ("a=group:BUNDLE 0 1" -> "0") assumes.
    if audio:
        pc.addTransceiver(audio, direction="sendonly")
    if video:
        tr = pc.addTransceiver(video, direction="sendonly")
        wanted = {"h264": "video/H264", "vp8": "video/VP8"}[args.video_codec]
        caps = RTCRtpSender.getCapabilities("video").codecs
        prefs = [c for c in caps if c.mimeType == wanted]
        if not args.no_rtx:
            prefs += [c for c in caps if c.mimeType == "video/rtx"]
        tr.setCodecPreferences(prefs)

    # setLocalDescription() returns after ICE gathering is complete in aiortc (no trickle),
    # so localDescription already holds every candidate.
    await asyncio.wait_for(pc.setLocalDescription(await pc.createOffer()), args.gather_timeout)
    offer = pc.localDescription.sdp
    if args.corrupt_fingerprint:
        offer = corrupt_fingerprint(offer)
    if args.offer_only:
        sys.stdout.write(offer)
        sys.stdout.flush()
        await pc.close()
        return 0
    LOG.info("offer gathered in %.2f s, POST %s", time.monotonic() - t_start, args.url)

    loop = asyncio.get_running_loop()
    t_post = time.monotonic()
    try:
        status, headers, body, url, token, result["redirects"] = await loop.run_in_executor(
            None, lambda: post_offer(args.url, args.token, offer, follow=not args.no_follow_redirects,
                                     stop_at=args.expect_status, timeout=args.http_timeout, log=LOG))
    except OSError as exc:
        result.update(status=None, error=f"POST {args.url} failed: {exc}")
        await pc.close()
        print(json.dumps(result), flush=True)
        return 4
    result["status"] = status
    result["post_rtt_s"] = round(time.monotonic() - t_post, 3)
    if args.expect_status is not None and status == args.expect_status and status != 201:
        result["body"] = body
        await pc.close()
        print(json.dumps(result), flush=True)
        return 0
    if status != 201:
        result["body"] = body
        LOG.error("POST returned %s: %s", status, body[:500])
        await pc.close()
        print(json.dumps(result), flush=True)
        return 2
    location = headers.get("location")
    result["location"] = urllib.parse.urljoin(url, location) if location else None
    result["location_header"] = location
    if headers.get("etag"):
        result["etag"] = headers["etag"]
    if headers.get("link"):
        result["link"] = headers["link"]
    if not location:
        LOG.error("201 without a Location header")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))

    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    exit_code = 0
    try:
        await asyncio.wait_for(connected.wait(), args.connect_timeout)
        result["connected_after_s"] = round(connected_at["t"] - t_start, 3)
        result["connected_after_post_s"] = round(connected_at["t"] - t_post, 3)
        LOG.info("connected %.2f s after start; publishing for %.1f s", connected_at["t"] - t_start, args.duration)
    except asyncio.TimeoutError:
        LOG.error("not connected within %.1f s (ice=%s dtls=%s)", args.connect_timeout, pc.iceConnectionState,
                  dtls_state(pc))
        result["connected_after_s"] = None
        exit_code = 3
    if exit_code == 0 and args.exchange_token and result.get("location"):
        # A token exchange while publishing, as IVS's SDKs make one: PATCH on the session
        # resource, the current token as Bearer, the new one as the body.
        # At least --exchange-after seconds in, and once the file exists (a test writes it when
        # the exchange is due).
        await asyncio.sleep(max(0.0, connected_at["t"] + args.exchange_after - time.monotonic()))
        while not os.path.exists(args.exchange_token) and not stop.is_set():
            await asyncio.sleep(0.02)
        with open(args.exchange_token) as f:
            new_token = f.read().strip()
        result["exchange_sent_at"] = time.time()
        estatus, _, ebody = await loop.run_in_executor(
            None, lambda: http("PATCH", result["location"], token, body=new_token, content_type="application/jwt",
                               timeout=args.http_timeout))
        result["exchange_answered_at"] = time.time()
        result["exchange_status"] = estatus
        if estatus >= 300:
            result["exchange_body"] = ebody[:500]
    if exit_code == 0:
        end = t_start + args.duration if args.duration_from_start else connected_at["t"] + args.duration
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(failed.wait())]
        await asyncio.wait(waiters, timeout=max(0.0, end - time.monotonic()), return_when=asyncio.FIRST_COMPLETED)
        for w in waiters:
            w.cancel()
        if failed.is_set():
            LOG.error("connection %s while publishing", pc.connectionState)
            exit_code = 3
        if stop.is_set():
            LOG.info("signal: stopping early")
            result["stopped_by_signal"] = True

    result["ice_state"] = pc.iceConnectionState
    result["dtls_state"] = dtls_state(pc)
    result["connection_state"] = pc.connectionState
    result["selected_pair"] = selected_pair(pc)
    result.update(counters)
    result["published_s"] = round(time.monotonic() - connected_at["t"], 3) if "t" in connected_at else 0.0
    if result.get("location") and not (failed.is_set() and args.no_delete_after_failure):
        try:
            dstatus, _, dbody = await loop.run_in_executor(
                None, lambda: http("DELETE", result["location"], token, timeout=args.http_timeout))
            result["delete_status"] = dstatus
            if dstatus >= 300:
                LOG.warning("DELETE returned %s: %s", dstatus, dbody[:300])
        except OSError as exc:
            result["delete_status"] = None
            result["delete_error"] = str(exc)
    await asyncio.wait_for(pc.close(), 5)
    print(json.dumps(result), flush=True)
    return exit_code


def dtls_state(pc):
    for t in pc.getTransceivers():
        if t.sender and t.sender.transport:
            return t.sender.transport.state
    return None


def selected_pair(pc):
    try:
        for t in pc.getTransceivers():
            if t.sender and t.sender.transport:
                conn = t.sender.transport.transport._connection
                pair = conn._nominated.get(1)
                if pair:
                    return f"{pair.local_candidate.host}:{pair.local_candidate.port} -> " \
                           f"{pair.remote_candidate.host}:{pair.remote_candidate.port}"
    except Exception:  # private aioice API; purely informative
        pass
    return None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="WHIP endpoint URL")
    p.add_argument("--token", default="", help="bearer token (omitted from the request if empty)")
    p.add_argument("--video-codec", choices=("h264", "vp8"), default="h264")
    p.add_argument("--color", default="255,0,0", help="R,G,B of the solid video colour (default red)")
    p.add_argument("--tone-hz", type=float, default=440.0)
    p.add_argument("--duration", type=float, default=10.0, help="seconds to publish after connecting")
    p.add_argument("--duration-from-start", action="store_true", help="count --duration from process start")
    p.add_argument("--flash-every", type=float, default=0.0,
                   help="every S seconds (media time, first at S): --flash-frames white frames + %d ms %d Hz beep"
                   % (BEEP_S * 1000, BEEP_HZ))
    p.add_argument("--flash-frames", type=int, default=FLASH_FRAMES,
                   help="white frames per flash (default %(default)s; longer flashes survive a composition that skips frames)")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=360)
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--host-ip", default="127.0.0.1",
                   help="comma-separated ICE host candidate address(es); 'all' = aioice default (skips loopback)")
    p.add_argument("--expect-status", type=int, help="exit 0 if the POST returns this status (refusal tests)")
    p.add_argument("--no-follow-redirects", action="store_true", help="treat a 307/308 answer to the POST as final")
    p.add_argument("--offer-only", action="store_true", help="print the SDP offer to stdout and exit")
    p.add_argument("--exchange-token", metavar="FILE",
                   help="a file holding a new participant token to exchange for the current one while publishing "
                        "(waited for: the exchange is made once it exists)")
    p.add_argument("--exchange-after", type=float, default=2.0, help="seconds after connecting to exchange the token")
    p.add_argument("--no-audio", action="store_true")
    p.add_argument("--no-video", action="store_true")
    p.add_argument("--no-rtx", action="store_true", help="do not offer video/rtx (NACKs then resend the original packets)")
    p.add_argument("--corrupt-fingerprint", action="store_true", help="send a wrong a=fingerprint in the offer")
    p.add_argument("--no-delete-after-failure", action="store_true",
                   help="when the connection fails, do not DELETE: a publisher whose network died cannot reach "
                        "the server either, so the server's consent timeout must end the session")
    p.add_argument("--connect-timeout", type=float, default=15.0, help="seconds from the 201 to DTLS connected")
    p.add_argument("--http-timeout", type=float, default=10.0)
    p.add_argument("--gather-timeout", type=float, default=10.0)
    p.add_argument("--timeout", type=float, help="global hard limit (default: duration + 60 s)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    try:
        args.color = tuple(int(c) for c in args.color.split(","))
        assert len(args.color) == 3 and all(0 <= c <= 255 for c in args.color)
    except (ValueError, AssertionError):
        p.error("--color must be R,G,B with 0..255 values")
    if args.no_audio and args.no_video:
        p.error("--no-audio and --no-video together leave nothing to publish")
    if args.width % 2 or args.height % 2:
        p.error("--width and --height must be even")
    return args


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s whip_aiortc %(levelname)s %(message)s")
    if not args.verbose:
        for noisy in ("aioice", "aiortc"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    limit = args.timeout or (args.duration + args.connect_timeout + args.gather_timeout + 2 * args.http_timeout + 15)
    try:
        return asyncio.run(asyncio.wait_for(run(args), limit))
    except asyncio.TimeoutError:
        LOG.error("global timeout (%.0f s) expired", limit)
        print(json.dumps({"status": None, "error": f"global timeout {limit:.0f} s"}), flush=True)
        return 4
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001
        LOG.exception("internal error")
        print(json.dumps({"status": None, "error": repr(exc)}), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
