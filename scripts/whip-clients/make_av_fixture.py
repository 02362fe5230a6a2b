#!/usr/bin/env python3
"""Write an A/V fixture for chromium's fake capture devices (numpy + stdlib only):

  D/video.y4m  YUV4MPEG2 W640 H360 F30:1 C420jpeg (I420, BT.601 limited range), a solid colour
               with a white flash of 2 frames starting at t = 0, S, 2S, ...
  D/audio.wav  48 kHz mono s16, a sine tone (amplitude 0.25) with a louder 2 kHz beep
               (amplitude 0.8) of 60 ms starting at the same instants t = 0, S, 2S, ...

With --flash-gaps G1,G2,... the instants are 0, G1, G1+G2, ... (the gaps repeat): an irregular
pattern lets a test tell which flash of the source a flash of the composite is.

Chromium loops both files (--use-file-for-fake-video-capture / --use-file-for-fake-audio-capture),
so make --duration a multiple of --flash-every and the flashes stay periodic across the loop.
Size: 345,600 bytes per 640x360 frame (a 4 s clip is 41 MB).

Prints one JSON line: {"video": PATH, "audio": PATH, "frames": N, "flash_frames": [...], "beep_starts_s": [...]}.
Exit 0 on success, 1 on error.
"""
import argparse
import json
import math
import os
import sys
import wave

import numpy as np


def rgb_to_yuv(r, g, b):
    y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
    u = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255
    v = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
    return [int(round(min(255, max(0, c)))) for c in (y, u, v)]


def frame_bytes(rgb, w, h):
    y, u, v = rgb_to_yuv(*rgb)
    q = (w // 2) * (h // 2)
    buf = np.empty(w * h + 2 * q, dtype=np.uint8)
    buf[:w * h] = y
    buf[w * h:w * h + q] = u
    buf[w * h + q:] = v
    return buf.tobytes()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--color", default="0,0,255", help="R,G,B (default blue)")
    p.add_argument("--tone-hz", type=float, default=440.0)
    p.add_argument("--flash-every", type=float, default=1.0, help="seconds between flashes/beeps (0 = none)")
    p.add_argument("--flash-gaps", default="", help="seconds between successive flashes, repeated (overrides --flash-every)")
    p.add_argument("--duration", type=float, default=4.0, help="clip length in seconds (loops)")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=360)
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--flash-frames", type=int, default=2)
    p.add_argument("--beep-hz", type=float, default=2000.0)
    p.add_argument("--beep-ms", type=float, default=60.0)
    p.add_argument("--video-name", default="video.y4m")
    p.add_argument("--audio-name", default="audio.wav")
    args = p.parse_args()
    try:
        rgb = tuple(int(c) for c in args.color.split(","))
        assert len(rgb) == 3
    except (ValueError, AssertionError):
        p.error("--color must be R,G,B")
    os.makedirs(args.out_dir, exist_ok=True)
    w, h, fps = args.width, args.height, args.fps
    frames = int(round(args.duration * fps))
    instants = []
    if args.flash_gaps:
        gaps = [float(g) for g in args.flash_gaps.split(",")]
        if min(gaps) <= 0:
            p.error("--flash-gaps must be positive")
        t, n = 0.0, 0
        while t < args.duration - 1e-9:
            instants.append(round(t, 6))
            t += gaps[n % len(gaps)]
            n += 1
    elif args.flash_every > 0:
        n = 0
        while n * args.flash_every < args.duration - 1e-9:
            instants.append(n * args.flash_every)
            n += 1
    flash = set()
    for t in instants:
        k0 = int(round(t * fps))
        flash.update(range(k0, min(frames, k0 + args.flash_frames)))

    video = os.path.join(args.out_dir, args.video_name)
    normal, white = frame_bytes(rgb, w, h), frame_bytes((255, 255, 255), w, h)
    with open(video, "wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for k in range(frames):
            f.write(b"FRAME\n")
            f.write(white if k in flash else normal)

    rate = 48000
    n = int(round(args.duration * rate))
    t = np.arange(n) / rate
    pcm = 0.25 * np.sin(2 * math.pi * args.tone_hz * t)
    for t0 in instants:
        a, b = int(round(t0 * rate)), int(round((t0 + args.beep_ms / 1000) * rate))
        pcm[a:b] = 0.8 * np.sin(2 * math.pi * args.beep_hz * t[a:b])
    audio = os.path.join(args.out_dir, args.audio_name)
    with wave.open(audio, "wb") as wf:
        wf.setnchannels(1)
        wf.setsampwidth(2)
        wf.setframerate(rate)
        wf.writeframes((pcm * 32767).astype("<i2").tobytes())
    print(json.dumps({"video": video, "audio": audio, "frames": frames, "flash_frames": sorted(flash),
                      "beep_starts_s": instants}))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as exc:
        print(f"make_av_fixture: {exc}", file=sys.stderr)
        sys.exit(1)
