#!/usr/bin/env python3
"""WHEP viewers made with aiortc: POST a recvonly audio + video offer to a composition's
`/whep/composition/<id>`, play what comes for --duration seconds, DELETE the Location.

One viewer (the default) analyses what it plays, as a player would see it:
  - video: each decoded frame's share of each --palette colour (a 1/8 subsample), and its
    share of near-white pixels (flashes: an onset counts only when the picture before it was
    decoded too, as a dropped picture would make it seem late);
  - audio: the power of each --tones frequency against the spectrum's median (over the
    middle of the run), and onsets of a 2 kHz beep (5 ms windows);
  - lip sync from the sender reports, as a browser synchronizes: each flash's and each beep's
    RTP timestamp mapped to NTP time by its stream's latest RTCP SR, the offset paired
    (beep − flash) within 300 ms.
--count N runs N viewers in this one process; --no-decode keeps aiortc's RTP, RTCP, NACK and
jitter buffer but swaps its decoders for ones that drop frames (50 viewers of a 720p stream
decoded in Python would take this machine).

stdout: one JSON line, {"viewers": [...per viewer...], ...}. Logs go to stderr.
Exit status: 0 every viewer connected and played; 2 a POST was refused (its status is in
the line); 3 a viewer did not connect or failed; 4 HTTP transport error.
"""
import argparse
import asyncio
import json
import logging
import os
import re
import signal
import sys
import time
import urllib.parse

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webrtc_http import http, post_offer  # noqa: E402

LOG = logging.getLogger("whep_aiortc")
BEEP_HZ = 2000.0


def pin_ice_host_addresses(host_ip):
    """aioice skips 127.0.0.1 when it lists host addresses; pin the candidate (see whip_aiortc.py)."""
    if host_ip in (None, "", "all"):
        return
    import aioice.ice
    addresses = [a.strip() for a in host_ip.split(",") if a.strip()]
    aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: list(addresses)


def drop_decoders():
    """aiortc's receivers decode every frame in a thread; a viewer that only measures the
    transport does not need pictures."""
    import aiortc.rtcrtpreceiver as receiver

    class Nothing:
        def decode(self, encoded_frame):
            return []

    receiver.get_decoder = lambda codec: Nothing()


SENDER_REPORTS = {}


def capture_sender_reports():
    """Every SR a receiver gets, by its track kind: (ntp seconds, rtp timestamp, arrival)."""
    import aiortc.rtcrtpreceiver as receiver
    from aiortc.rtp import RtcpSrPacket
    original = receiver.RTCRtpReceiver._handle_rtcp_packet

    async def handle(self, packet):
        if isinstance(packet, RtcpSrPacket):
            ntp = packet.sender_info.ntp_timestamp / float(1 << 32)
            SENDER_REPORTS.setdefault(id(self), {"kind": self._RTCRtpReceiver__kind, "reports": []})["reports"].append(
                (ntp, packet.sender_info.rtp_timestamp, time.monotonic()))
        return await original(self, packet)

    receiver.RTCRtpReceiver._handle_rtcp_packet = handle


def ntp_of(reports, rtp, rate):
    """The NTP time of an RTP timestamp by the latest SR (32-bit wrap handled)."""
    if not reports:
        return None
    ntp, base, _ = reports[-1]
    delta = (rtp - base) & 0xFFFFFFFF
    if delta >= 1 << 31:
        delta -= 1 << 32
    return ntp + delta / rate


class Analysis:
    def __init__(self, palette, tones):
        self.palette = palette
        self.tones = tones
        self.colour_frames = {name: 0 for name in palette}
        self.frames = 0
        self.first_frame_at = None
        self.keyframe_waits = []
        self.flashes = []  # NTP seconds
        self.white_before = 0.0
        self.last_pts = None
        self.frame_step = None
        self.onsets_unseen = 0
        self.audio = []
        self.audio_frames = 0
        self.beeps = []  # NTP seconds
        self.beep_on = None
        self.audio_next_pts = None
        self.video_reports = None
        self.audio_reports = None

    def video(self, frame, reports, origin):
        now = time.monotonic()
        if self.first_frame_at is None:
            self.first_frame_at = now
        self.frames += 1
        rgb = frame.to_ndarray(format="rgb24")[::8, ::8].astype(np.int16)
        pixels = rgb.reshape(-1, 3)
        for name, (r, g, b) in self.palette.items():
            near = np.abs(pixels - np.array([r, g, b])).max(axis=1) < 60
            if near.mean() > 0.02:
                self.colour_frames[name] += 1
        white = float((pixels.min(axis=1) > 200).mean())
        # A flash begins in this picture only if the one before it was decoded too (a player
        # under load drops pictures; the onset would then seem late by whole frames).
        step = frame.pts - self.last_pts if self.last_pts is not None else None
        if step and step > 0:
            self.frame_step = min(self.frame_step or step, step)
        contiguous = step is not None and 0 < step <= 1.5 * (self.frame_step or step)
        if white > 0.03 and self.white_before <= 0.01:
            ntp = ntp_of(reports, (origin + frame.pts) & 0xFFFFFFFF, 90000)
            if ntp is not None and contiguous:
                self.flashes.append(ntp)
            elif ntp is not None:
                self.onsets_unseen += 1
        self.white_before = white
        self.last_pts = frame.pts

    def sound(self, frame, reports, origin):
        self.audio_frames += 1
        samples = frame.to_ndarray()
        channels = len(frame.layout.channels)
        mono = samples.reshape(-1, channels).mean(axis=1) if samples.ndim == 2 and samples.shape[0] == 1 else samples.mean(axis=0)
        mono = mono.astype(np.float64)
        if np.abs(mono).max() > 2.0:
            mono = mono / 32768.0
        if len(self.audio) < 48000 * 120 // 960:
            self.audio.append(mono)
        # As for flashes: an onset only after sound that was heard (not at the first frame, nor
        # after a gap, where the beep may have begun before).
        if self.audio_next_pts is None or frame.pts != self.audio_next_pts:
            self.beep_on = None
        self.audio_next_pts = frame.pts + len(mono)
        window = 240
        for start in range(0, len(mono) - window + 1, window):
            chunk = mono[start:start + window]
            n = np.arange(window)
            level = abs(np.dot(chunk, np.exp(-2j * np.pi * BEEP_HZ * n / 48000))) / window
            on = bool(level > 0.05)
            if on and self.beep_on is False:
                ntp = ntp_of(reports, (origin + frame.pts + start) & 0xFFFFFFFF, 48000)
                if ntp is not None:
                    self.beeps.append(ntp)
            self.beep_on = on

    def summary(self):
        result = {"frames": self.frames, "audio_frames": self.audio_frames,
                  "colours": {k: round(v / max(1, self.frames), 3) for k, v in self.colour_frames.items()}}
        if self.audio:
            signal_ = np.concatenate(self.audio)
            middle = signal_[len(signal_) // 4: len(signal_) * 3 // 4]
            if len(middle) >= 48000:
                spectrum = np.abs(np.fft.rfft(middle[:48000 * (len(middle) // 48000)]))
                freqs = np.fft.rfftfreq(48000 * (len(middle) // 48000), 1 / 48000)
                floor = float(np.median(spectrum)) or 1e-9
                result["tones"] = {str(t): round(float(spectrum[np.abs(freqs - t) < 3].max()) / floor, 1) for t in self.tones}
        offsets = []
        for flash in self.flashes:
            near = [b - flash for b in self.beeps if abs(b - flash) < 0.3]
            if near:
                offsets.append(min(near, key=abs))
        result["flashes"] = len(self.flashes)
        result["flashes_after_a_missing_picture"] = self.onsets_unseen
        result["beeps"] = len(self.beeps)
        result["av_offsets_ms"] = [round(o * 1000, 1) for o in offsets]
        if not offsets and self.flashes and self.beeps:
            result["unpaired"] = {"flashes": [round(f % 100, 3) for f in self.flashes[:4]], "beeps": [round(b % 100, 3) for b in self.beeps[:4]]}
        return result


async def viewer(index, args, analyse):
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    result = {"index": index}
    analysis = Analysis(args.palette, args.tones) if analyse else None
    connected = asyncio.Event()
    failed = asyncio.Event()
    tasks = []
    counters = {"video": 0, "audio": 0}

    @pc.on("connectionstatechange")
    async def on_state():
        if pc.connectionState == "connected":
            connected.set()
        elif pc.connectionState in ("failed", "closed"):
            failed.set()

    @pc.on("track")
    def on_track(track):
        async def consume():
            receiver = next((t.receiver for t in pc.getTransceivers() if t.receiver.track is track), None)
            while True:
                try:
                    frame = await track.recv()
                except Exception:
                    return
                counters[track.kind] += 1
                if analysis is None:
                    continue
                reports = SENDER_REPORTS.get(id(receiver), {}).get("reports", [])
                # aiortc gives frames pts from the stream's first RTP timestamp (its TimestampMapper).
                origin = getattr(receiver._RTCRtpReceiver__timestamp_mapper, "_origin", None) or 0
                if track.kind == "video":
                    analysis.video(frame, reports, origin)
                else:
                    analysis.sound(frame, reports, origin)
        tasks.append(asyncio.ensure_future(consume()))

    pc.addTransceiver("video", direction="recvonly")
    pc.addTransceiver("audio", direction="recvonly")
    await pc.setLocalDescription(await pc.createOffer())
    loop = asyncio.get_running_loop()
    t_post = time.monotonic()
    try:
        status, headers, body, url, _, result["redirects"] = await loop.run_in_executor(
            None, lambda: post_offer(args.url, args.token, pc.localDescription.sdp))
    except OSError as exc:
        result.update(status=None, error=str(exc))
        await pc.close()
        return result, 4
    result["status"] = status
    if status != 201:
        result["body"] = body[:500]
        await pc.close()
        return result, 2
    location = urllib.parse.urljoin(url, headers.get("location", ""))
    result["location"] = location
    if args.candidate_port:
        # Through a relay: the answer's candidate (and m= ports) point at it instead.
        body = re.sub(r"(a=candidate:\S+ \d+ udp \d+ \S+ )\d+", lambda m: m.group(1) + str(args.candidate_port), body)
    await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))
    code = 0
    try:
        await asyncio.wait_for(connected.wait(), args.connect_timeout)
        result["connected_after_post_s"] = round(time.monotonic() - t_post, 3)
    except asyncio.TimeoutError:
        code = 3
    if code == 0:
        end = time.monotonic() + args.duration
        while time.monotonic() < end and not failed.is_set() and not STOP.is_set():
            await asyncio.sleep(0.1)
        if failed.is_set():
            code = 3
            result["failed"] = pc.connectionState
    result["video_frames"] = counters["video"]
    result["audio_frames"] = counters["audio"]
    for transceiver in pc.getTransceivers():
        try:
            stats = await transceiver.receiver.getStats()
        except Exception:
            continue
        for report in stats.values():
            if getattr(report, "type", "") == "inbound-rtp":
                result[f"{transceiver.kind}_packets"] = report.packetsReceived
    if analysis is not None:
        result.update(analysis.summary())
        if analysis.first_frame_at is not None:
            result["first_frame_after_post_s"] = round(analysis.first_frame_at - t_post, 3)
    if not args.no_delete:
        status, _, _ = await loop.run_in_executor(None, lambda: http("DELETE", location, args.token))
        result["delete_status"] = status
    for task in tasks:
        task.cancel()
    await asyncio.wait_for(pc.close(), 5)
    return result, code


STOP = None


async def run(args):
    global STOP
    STOP = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, STOP.set)
    pin_ice_host_addresses(args.host_ip)
    capture_sender_reports()
    if args.no_decode:
        drop_decoders()
    started = []
    for index in range(args.count):
        started.append(asyncio.ensure_future(viewer(index, args, analyse=not args.no_decode and index == 0)))
        await asyncio.sleep(args.stagger)
    done = await asyncio.gather(*started)
    codes = [code for _, code in done]
    print(json.dumps({"viewers": [r for r, _ in done], "exit": max(codes)}), flush=True)
    return max(codes)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="the composition's WHEP URL")
    p.add_argument("--token", help="a SUBSCRIBE participant token (Bearer); none: unsigned")
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--stagger", type=float, default=0.05, help="seconds between viewers' POSTs")
    p.add_argument("--no-decode", action="store_true")
    p.add_argument("--no-delete", action="store_true")
    p.add_argument("--connect-timeout", type=float, default=10.0)
    p.add_argument("--host-ip", default="127.0.0.1")
    p.add_argument("--candidate-port", type=int, help="send to this port instead of the answer's (a relay in front)")
    p.add_argument("--palette", type=json.loads, default={"red": [255, 0, 0], "green": [0, 255, 0], "blue": [0, 0, 255]})
    p.add_argument("--tones", type=lambda s: [float(x) for x in s.split(",")], default=[440.0, 660.0, 880.0])
    return p.parse_args(argv)


def main(argv=None):
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
