#!/usr/bin/env python3
"""A raw Enhanced RTMP v2 multitrack publisher (video multitrack, plain AAC audio), as an ABR
encoder such as OBS's Enhanced Broadcasting sends it: one source at three renditions, each
track a different colour so that a composite shows which one was composed.

Media is prepared once with Debian's ffmpeg (`--media DIR` keeps it for the next run): a 10 s
loop of lavfi testsrc2 (real detail and motion, so decoding costs what a camera's would) with
a filled box over the middle half of the picture, 1280x720 blue, 640x360 yellow and 320x180
magenta (tracks 0, 1 and 2), H.264 baseline, 30 fps, a keyframe every second on every
rendition at the same frames; and AAC-LC 48 kHz of a 440 Hz sine. ffmpeg writes FLV; its tags
give each track's AVCDecoderConfigurationRecord and AVCC frames.

Each connection sends, after the RTMP handshake and connect (announcing E-RTMP capsEx
Multitrack and avc1), createStream and publish: onMetaData (with videoTrackIdInfoMap), the AAC
sequence header and every track's sequence start, then the media in real time (timestamps in
ms from 0, looped), until `--duration` s of media are sent; then FCUnpublish/deleteStream.
The forms of a video message (E-RTMP v2, "ExVideoTagHeader"/"ExVideoTagBody"):

  one        each track in its own OneTrack message:
             [0x80|frameType<<4|6] [0<<4|1 CodedFrames] "avc1" [trackId] [SI24 cts] AVCC
  one-plain  as `one`, but track 0 as a plain (legacy FLV AVC) message, as OBS sends it
  many       all tracks of a frame in one ManyTracks message:
             [0x80|frameType<<4|6] [1<<4|3 CodedFramesX] "avc1" then per track
             [trackId] [UI24 size] AVCC
  plain      no multitrack at all: track 0 only, legacy FLV (a control for today's servers)

Sequence starts use packet type 0 with the AVCDecoderConfigurationRecord as the body, in the
same form. Several connections (`URL ...` with `--form`, or `--publish FORM URL` repeated)
run from one process on threads, all sending the same prepared bytes.

Exit status 0 when every connection was admitted (NetStream.Publish.Start) and sent all its
media; one line per connection says what it sent (and, on failure, what the server answered).

  ertmp_multitrack.py --media DIR --prepare-only
  ertmp_multitrack.py --media DIR --duration 20 --form many rtmp://127.0.0.1:1935/app/KEY1 ...
"""
import argparse
import json
import os
import re
import select
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtmp_raw import RawRTMP, amf0, flv_tags  # noqa: E402

FPS = 30
LOOP_SECONDS = 10
# (width, height, box colour, video bitrate): tracks 0, 1, 2.
RENDITIONS = [(1280, 720, "0x0000FF", "2000k"), (640, 360, "0xFFFF00", "800k"), (320, 180, "0xFF00FF", "300k")]
COLOUR_NAMES = ["blue", "yellow", "magenta"]
TONE = 440
FORMS = ("one", "one-plain", "many", "plain")

AUDIO_CSID, VIDEO_CSID, DATA_CSID, STREAM_ID = 6, 7, 5, 1
CHUNK_SIZE = 4096

# E-RTMP v2 values.
EX_HEADER = 0x80
FRAME_KEY, FRAME_INTER = 1, 2
PACKET_SEQUENCE_START, PACKET_CODED_FRAMES, PACKET_CODED_FRAMES_X, PACKET_MULTITRACK = 0, 1, 3, 6
ONE_TRACK, MANY_TRACKS = 0, 1
CAPS_EX_MULTITRACK = 0x04


# ----------------------------------------------------------------------------------------------
# Media, prepared once

class Track:
    def __init__(self, track_id, width, height, colour, record, frames):
        self.id, self.width, self.height, self.colour = track_id, width, height, colour
        self.record = record          # AVCDecoderConfigurationRecord
        self.frames = frames          # [(timestamp ms, keyframe, AVCC data)]


class Media:
    """The renditions' tracks (same frame count and keyframes) and the AAC audio, one loop."""

    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        marker = os.path.join(directory, "prepared.json")
        expected = {"renditions": RENDITIONS, "fps": FPS, "seconds": LOOP_SECONDS, "tone": TONE}
        try:
            with open(marker) as f:
                prepared = json.load(f) == json.loads(json.dumps(expected))
        except (OSError, ValueError):
            prepared = False
        if not prepared:
            self.encode()
            with open(marker, "w") as f:
                json.dump(expected, f)
        self.tracks = []
        for index, (width, height, _, _) in enumerate(RENDITIONS):
            tags = [(ts, payload) for kind, ts, payload in flv_tags(self.path(f"track{index}.flv")) if kind == 9]
            records = [payload[5:] for _, payload in tags if payload[0] & 0x0F == 7 and payload[1] == 0]
            frames = [(ts, payload[0] >> 4 == 1, payload[5:]) for ts, payload in tags
                      if payload[0] & 0x0F == 7 and payload[1] == 1]
            if not records or not frames:
                raise RuntimeError(f"track {index}: no AVC sequence header or frames in {self.path(f'track{index}.flv')}")
            if any(payload[2:5] != b"\x00\x00\x00" for _, payload in tags if payload[1] == 1):
                raise RuntimeError(f"track {index}: composition times (B-frames?) in a baseline encode")
            self.tracks.append(Track(index, width, height, COLOUR_NAMES[index], records[0], frames))
        counts = {len(t.frames) for t in self.tracks}
        keys = {tuple(i for i, f in enumerate(t.frames) if f[1]) for t in self.tracks}
        times = {tuple(f[0] for f in t.frames) for t in self.tracks}
        if len(counts) != 1 or len(keys) != 1 or len(times) != 1:
            raise RuntimeError(f"the renditions differ in frames {counts}, keyframes or timing")
        self.keyframes = sorted(next(iter(keys)))
        if self.keyframes[0] != 0 or any(b - a != FPS for a, b in zip(self.keyframes, self.keyframes[1:])):
            raise RuntimeError(f"keyframes are not every {FPS} frames from the first: {self.keyframes}")
        self.loop_ms = len(self.tracks[0].frames) * 1000 // FPS
        audio = [(ts, payload) for kind, ts, payload in flv_tags(self.path("audio.flv")) if kind == 8]
        self.audio_header = next(payload for _, payload in audio if payload[0] >> 4 == 10 and payload[1] == 0)
        self.audio_frames = [(ts, payload) for ts, payload in audio
                             if payload[0] >> 4 == 10 and payload[1] == 1 and ts < self.loop_ms]
        if not self.audio_frames:
            raise RuntimeError("no AAC frames")

    def path(self, name):
        return os.path.join(self.directory, name)

    def encode(self):
        video = ["-c:v", "libx264", "-profile:v", "baseline", "-preset", "veryfast", "-g", str(FPS), "-keyint_min", str(FPS),
                 "-sc_threshold", "0", "-bf", "0", "-pix_fmt", "yuv420p", "-x264-params", "rc-lookahead=0"]
        chains = [f"[0:v]split={len(RENDITIONS)}" + "".join(f"[s{i}]" for i in range(len(RENDITIONS)))]
        outputs = []
        for i, (width, height, colour, bitrate) in enumerate(RENDITIONS):
            chains.append(f"[s{i}]scale={width}:{height},drawbox=x=iw/4:y=ih/4:w=iw/2:h=ih/2:color={colour}:t=fill[v{i}]")
            outputs += ["-map", f"[v{i}]", *video, "-b:v", bitrate, "-maxrate", bitrate, "-bufsize", bitrate,
                        "-an", "-f", "flv", self.path(f"track{i}.flv")]
        width, height = RENDITIONS[0][:2]
        command = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
                   "-f", "lavfi", "-i", f"testsrc2=size={width}x{height}:rate={FPS}:duration={LOOP_SECONDS}",
                   "-f", "lavfi", "-i", f"sine=frequency={TONE}:sample_rate=48000:duration={LOOP_SECONDS + 1}",
                   "-filter_complex", ";".join(chains), *outputs,
                   "-map", "1:a", "-c:a", "aac", "-b:a", "96k", "-ar", "48000", "-ac", "2", "-vn", "-f", "flv",
                   self.path("audio.flv")]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"ffmpeg: {result.stderr[-2000:]}")


# ----------------------------------------------------------------------------------------------
# E-RTMP video messages

def si24(value):
    return (value & 0xFFFFFF).to_bytes(3, "big")


def plain_video(keyframe, packet_type, body):
    """Legacy FLV AVC: [frameType<<4 | 7] [AVCPacketType] [SI24 composition time] body."""
    return bytes([(FRAME_KEY if keyframe else FRAME_INTER) << 4 | 7, packet_type]) + si24(0) + body


def one_track(keyframe, packet_type, track_id, body):
    header = bytes([EX_HEADER | (FRAME_KEY if keyframe else FRAME_INTER) << 4 | PACKET_MULTITRACK,
                    ONE_TRACK << 4 | packet_type]) + b"avc1"
    return header + bytes([track_id]) + body


def many_tracks(keyframe, packet_type, bodies):
    """bodies: [(track id, body)]; each track: trackId, UI24 sizeOfVideoTrack (the bytes after
    it up to the next track), body."""
    out = bytes([EX_HEADER | (FRAME_KEY if keyframe else FRAME_INTER) << 4 | PACKET_MULTITRACK,
                 MANY_TRACKS << 4 | packet_type]) + b"avc1"
    for track_id, body in bodies:
        out += bytes([track_id]) + len(body).to_bytes(3, "big") + body
    return out


def video_sequence_start(media, form):
    """The video messages that set every track up, sent before any frame."""
    tracks = media.tracks
    if form == "plain":
        return [plain_video(True, 0, tracks[0].record)]
    if form == "many":
        return [many_tracks(True, PACKET_SEQUENCE_START, [(t.id, t.record) for t in tracks])]
    messages = []
    for t in tracks:
        if form == "one-plain" and t.id == 0:
            messages.append(plain_video(True, 0, t.record))
        else:
            messages.append(one_track(True, PACKET_SEQUENCE_START, t.id, t.record))
    return messages


def video_loop(media, form):
    """[(timestamp ms, [payload...])] for each frame of one loop."""
    out = []
    for index in range(len(media.tracks[0].frames)):
        ts, keyframe, _ = media.tracks[0].frames[index]
        if form == "plain":
            payloads = [plain_video(keyframe, 1, media.tracks[0].frames[index][2])]
        elif form == "many":
            payloads = [many_tracks(keyframe, PACKET_CODED_FRAMES_X, [(t.id, t.frames[index][2]) for t in media.tracks])]
        else:
            payloads = []
            for t in media.tracks:
                data = t.frames[index][2]
                if form == "one-plain" and t.id == 0:
                    payloads.append(plain_video(keyframe, 1, data))
                else:
                    payloads.append(one_track(keyframe, PACKET_CODED_FRAMES, t.id, si24(0) + data))
        out.append((ts, payloads))
    return out


# ----------------------------------------------------------------------------------------------
# RTMP

def rtmp_message(csid, type_id, payload, stream_id, timestamp, chunk_size):
    """One message as a fmt-0 chunk and fmt-3 continuations, with an extended timestamp when it
    does not fit 24 bits."""
    extended = timestamp >= 0xFFFFFF
    header = bytes([csid & 0x3F]) + (0xFFFFFF if extended else timestamp).to_bytes(3, "big") \
        + len(payload).to_bytes(3, "big") + bytes([type_id]) + struct.pack("<I", stream_id)
    ext = timestamp.to_bytes(4, "big") if extended else b""
    parts = [header, ext, payload[:chunk_size]]
    continuation = bytes([0xC0 | (csid & 0x3F)]) + ext
    for offset in range(chunk_size, len(payload), chunk_size):
        parts += [continuation, payload[offset:offset + chunk_size]]
    return b"".join(parts)


def amf0_ecma(items):
    """An AMF0 ECMA array (what encoders use for onMetaData)."""
    out = b"\x08" + struct.pack(">I", len(items))
    for key, value in items.items():
        data = key.encode()
        out += struct.pack(">H", len(data)) + data + (amf0_ecma(value) if isinstance(value, dict) else amf0(value))
    return out + b"\x00\x00\x09"


def amf0_strict_array(values):
    return b"\x0A" + struct.pack(">I", len(values)) + b"".join(amf0(v) for v in values)


def metadata(media, form):
    first = media.tracks[0]
    items = {"duration": 0.0, "width": first.width, "height": first.height, "framerate": FPS,
             "videocodecid": 7, "audiocodecid": 10, "audiosamplerate": 48000, "audiosamplesize": 16, "stereo": True,
             "encoder": "ertmp_multitrack.py"}
    if form != "plain":
        items["videoTrackIdInfoMap"] = {str(t.id): {"width": t.width, "height": t.height, "framerate": FPS}
                                        for t in media.tracks[1:]}
    return amf0("@setDataFrame") + amf0("onMetaData") + amf0_ecma(items)


class Connection(RawRTMP):
    """One publishing connection: RawRTMP's handshake and commands, an E-RTMP connect."""

    def connect(self, app="app"):
        command_object = {"app": app, "type": "nonprivate", "flashVer": "FMLE/3.0 (compatible; ertmp_multitrack)",
                          "tcUrl": self.tc_url, "capsEx": CAPS_EX_MULTITRACK}
        body = b"\x03"
        for key, value in command_object.items():
            data = key.encode()
            body += struct.pack(">H", len(data)) + data + amf0(value)
        data = b"fourCcList"
        body += struct.pack(">H", len(data)) + data + amf0_strict_array(["avc1"])
        body += b"\x00\x00\x09"
        payload = amf0("connect") + amf0(1) + body
        self.send(rtmp_message(3, 20, payload, 0, 0, self.chunk_size))

    def command(self, name, transaction, *args, stream_id=0, csid=3):
        payload = amf0(name) + amf0(transaction) + b"".join(amf0(a) for a in args)
        self.send(rtmp_message(csid, 20, payload, stream_id, 0, self.chunk_size))


def parse_url(url):
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme != "rtmp":
        raise ValueError(f"{url}: only rtmp:// URLs")
    app, _, key = parsed.path.lstrip("/").partition("/")
    if not app or not key:
        raise ValueError(f"{url}: no app/key")
    return parsed.hostname, parsed.port or 1935, app, key, f"rtmp://{parsed.netloc}/{app}"


class Publish(threading.Thread):
    """Publishes the prepared media on one URL in one form for `duration` s of media."""

    def __init__(self, url, form, media, duration, loops):
        super().__init__(daemon=True)
        self.url, self.form, self.media, self.duration = url, form, media, duration
        self.sequence_start, self.loop = loops
        self.video_messages = self.audio_messages = self.frames = self.bytes = 0
        self.error = None
        self.received = b""
        self.published_at = self.finished_at = None
        self.key = parse_url(url)[3]

    def drain(self, sock):
        while select.select([sock], [], [], 0)[0]:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.received = (self.received + data)[-8192:]

    def answered(self):
        return self.received.decode("latin-1")

    def run(self):
        try:
            self.publish()
        except Exception as error:  # noqa: BLE001 — reported per connection
            self.error = f"{type(error).__name__}: {error}"
        self.finished_at = time.time()

    def publish(self):
        host, port, app, key, tc_url = parse_url(self.url)
        client = Connection(host, port, timeout=10)
        client.chunk_size = 128
        client.tc_url = tc_url
        try:
            client.handshake()
            # Set Chunk Size (type 1), then every message in chunks of CHUNK_SIZE.
            client.send(rtmp_message(2, 1, struct.pack(">I", CHUNK_SIZE), 0, 0, 128))
            client.chunk_size = CHUNK_SIZE
            client.publish(key, app)
            started = re.compile(rb"onStatus.{0,200}?NetStream\.Publish\.Start", re.S)
            deadline = time.time() + 10
            while not started.search(self.received):
                if time.time() > deadline:
                    raise TimeoutError("no NetStream.Publish.Start within 10 s")
                if re.search(rb"NetStream\.Publish\.(BadName|Denied|Failed)|_error", self.received):
                    raise ConnectionError("the publish was refused")
                if select.select([client.sock], [], [], 0.2)[0]:
                    data = client.sock.recv(65536)
                    if not data:
                        raise ConnectionError("the server closed the connection before Publish.Start")
                    self.received += data
            self.published_at = time.time()
            self.send_media(client)
            client.command("FCUnpublish", 6, None, key)
            client.command("deleteStream", 7, None, float(STREAM_ID))
            time.sleep(0.2)
        finally:
            client.close()

    def send_media(self, client):
        media, chunk = self.media, client.chunk_size
        client.send(rtmp_message(DATA_CSID, 18, metadata(media, self.form), STREAM_ID, 0, chunk))
        client.send(rtmp_message(AUDIO_CSID, 8, media.audio_header, STREAM_ID, 0, chunk))
        for payload in self.sequence_start:
            client.send(rtmp_message(VIDEO_CSID, 9, payload, STREAM_ID, 0, chunk))
        end_ms = int(self.duration * 1000)
        start = time.monotonic()
        loop = 0
        while loop * media.loop_ms < end_ms:
            offset = loop * media.loop_ms
            # Audio and video of this loop in timestamp order (audio first at equal times).
            schedule = [(offset + ts, 0, 8, [payload]) for ts, payload in media.audio_frames] \
                + [(offset + ts, 1, 9, payloads) for ts, payloads in self.loop]
            schedule.sort(key=lambda item: (item[0], item[1]))
            for ts, _, type_id, payloads in schedule:
                if ts >= end_ms:
                    continue
                delay = start + ts / 1000 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                data = b"".join(rtmp_message(VIDEO_CSID if type_id == 9 else AUDIO_CSID, type_id, p, STREAM_ID, ts, chunk)
                                for p in payloads)
                client.send(data)
                self.bytes += len(data)
                if type_id == 9:
                    self.video_messages += len(payloads)
                    self.frames += 1
                else:
                    self.audio_messages += 1
                self.drain(client.sock)
            loop += 1

    def summary(self):
        took = (self.finished_at or time.time()) - (self.published_at or time.time())
        line = (f"ertmp_multitrack: {self.key} form {self.form}: {self.frames} frames in {self.video_messages} video "
                f"messages, {self.audio_messages} audio messages, {self.bytes} bytes in {took:.1f} s")
        if self.error:
            line += f"; FAILED: {self.error}; the server answered: {self.answered()[-600:]!r}"
        return line

    def result(self):
        return {"url": self.url, "key": self.key, "form": self.form, "frames": self.frames, "videoMessages": self.video_messages,
                "audioMessages": self.audio_messages, "bytes": self.bytes, "publishedAt": self.published_at,
                "finishedAt": self.finished_at, "error": self.error}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("urls", nargs="*", help="rtmp://host:port/app/KEY, published in --form")
    parser.add_argument("--form", choices=FORMS, default="one")
    parser.add_argument("--publish", nargs=2, action="append", default=[], metavar=("FORM", "URL"),
                        help="another URL in its own form (repeatable)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of media per connection")
    parser.add_argument("--media", default=None, help="folder for the prepared media (kept for the next run)")
    parser.add_argument("--prepare-only", action="store_true")
    parser.add_argument("--result", help="write a JSON summary of every connection here")
    args = parser.parse_args()
    for form, _ in args.publish:
        if form not in FORMS:
            parser.error(f"--publish: form {form} is not one of {', '.join(FORMS)}")
    media_dir = args.media or os.path.join(os.environ.get("TMPDIR", "/tmp"), "ertmp-multitrack-media")
    prepared_at = time.time()
    media = Media(media_dir)
    print(f"ertmp_multitrack: media in {media_dir} ({time.time() - prepared_at:.1f} s): "
          + ", ".join(f"track {t.id} {t.width}x{t.height} {t.colour}" for t in media.tracks)
          + f", {len(media.tracks[0].frames)} frames a loop, keyframes every {FPS}", flush=True)
    if args.prepare_only:
        return 0
    streams = [(args.form, url) for url in args.urls] + [(form, url) for form, url in args.publish]
    if not streams:
        parser.error("no URL to publish")
    loops = {form: (video_sequence_start(media, form), video_loop(media, form)) for form in {f for f, _ in streams}}
    publishes = [Publish(url, form, media, args.duration, loops[form]) for form, url in streams]
    for p in publishes:
        p.start()
    for p in publishes:
        p.join(args.duration + 60)
    for p in publishes:
        print(p.summary(), flush=True)
    if args.result:
        with open(args.result + ".part", "w") as f:
            json.dump([p.result() for p in publishes], f, indent=2)
        os.rename(args.result + ".part", args.result)
    failed = [p for p in publishes if p.error or p.is_alive()]
    print(f"ertmp_multitrack: {len(publishes) - len(failed)} of {len(publishes)} connections sent everything", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
