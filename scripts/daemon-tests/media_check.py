"""Measuring what the daemon produced, with ffmpeg as an independent decoder: colours at
points of the picture over time, tone levels (Goertzel), flash and beep onsets, and where the
layout engine puts each tile (`stage-compositor layout preview`)."""
import json
import math
import os
import re
import subprocess
import tempfile

import numpy

# Publisher colours (RGB) and names the tests use.
PALETTE = {
    "red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "yellow": (255, 255, 0),
    "magenta": (255, 0, 255), "cyan": (0, 255, 255), "black": (0, 0, 0), "grey": (28, 28, 28), "white": (255, 255, 255),
}


def hex_colour(name):
    r, g, b = PALETTE[name]
    return f"0x{r:02X}{g:02X}{b:02X}"


def nearest(rgb):
    return min(PALETTE, key=lambda name: sum((a - b) ** 2 for a, b in zip(PALETTE[name], rgb)))


def probe(path):
    result = subprocess.run(["ffprobe", "-v", "error", "-show_entries",
                             "format=duration,start_time:stream=codec_type,codec_name,width,height,start_time",
                             "-of", "json", path], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"ffprobe {path}: {result.stderr}")
    return json.loads(result.stdout)


class Video:
    """Every frame of a file, resampled to `fps`, as RGB (frames, height, width, 3). Frame i
    shows time i / fps from the first frame."""

    def __init__(self, path, width, height, fps=10):
        self.width, self.height, self.fps = width, height, fps
        result = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vf", f"fps={fps},scale={width}:{height}",
                                 "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"decode {path}: {result.stderr.decode()[:2000]}")
        frame = width * height * 3
        count = len(result.stdout) // frame
        self.frames = numpy.frombuffer(result.stdout[:count * frame], dtype=numpy.uint8).reshape(count, height, width, 3)

    @property
    def duration(self):
        return len(self.frames) / self.fps

    def colour(self, t, x, y, radius=2):
        index = min(max(int(round(t * self.fps)), 0), len(self.frames) - 1)
        box = self.frames[index, max(0, y - radius):y + radius + 1, max(0, x - radius):x + radius + 1].reshape(-1, 3)
        return tuple(int(v) for v in box.mean(axis=0))

    def name(self, t, x, y):
        return nearest(self.colour(t, x, y))

    def luma_series(self, x, y, radius=4):
        box = self.frames[:, max(0, y - radius):y + radius + 1, max(0, x - radius):x + radius + 1, :].astype(numpy.float64)
        rgb = box.mean(axis=(1, 2))
        return 0.299 * rgb[:, 0] + 0.587 * rgb[:, 1] + 0.114 * rgb[:, 2]


class Audio:
    """The mono mix of a file's audio at 48 kHz, from its first sample, which is at `start`
    seconds on the file's clock."""

    def __init__(self, path, rate=48000):
        self.rate = rate
        streams = [s for s in probe(path).get("streams", []) if s.get("codec_type") == "audio"]
        self.start = float(streams[0].get("start_time", 0)) if streams else 0.0
        result = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vn", "-ac", "1", "-ar", str(rate), "-f", "f32le", "-"],
                                capture_output=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"decode audio {path}: {result.stderr.decode()[:2000]}")
        self.samples = numpy.frombuffer(result.stdout, dtype=numpy.float32).astype(numpy.float64)

    @property
    def duration(self):
        return len(self.samples) / self.rate

    def tone(self, hz, start, end):
        """Peak amplitude (full scale 1.0) of the `hz` component between two times."""
        a, b = int(start * self.rate), int(end * self.rate)
        chunk = self.samples[max(a, 0):max(b, 0)]
        if len(chunk) == 0:
            return 0.0
        n = numpy.arange(len(chunk))
        phasor = numpy.exp(-2j * math.pi * hz * n / self.rate)
        return float(2 * abs(numpy.dot(chunk, phasor)) / len(chunk))

    # A live publisher's sound is played up to 1 % fast or slow for a while: drift following,
    # and the jitter allowance coming down (squeezed, not cut). A tone is looked for that far
    # around its pitch: a 100 ms slice sees only 5 Hz either side, and 1 % of 1390 Hz is 14 Hz
    # (the slice then reads a fifth of the tone's level).
    PITCH_TOLERANCE = 0.012

    def tone_level(self, hz, start, end, window=0.1):
        """The median over `window`-second slices of the `hz` amplitude, the largest within
        PITCH_TOLERANCE of `hz` in each slice: tells whether a tone sounds, tolerant of the
        pitch changes of drift following and of a shrinking jitter allowance, and of a click
        or two."""
        pitches = [hz * (1 + self.PITCH_TOLERANCE * k / 3) for k in range(-3, 4)]
        levels = []
        t = start
        while t + window <= end:
            levels.append(max(self.tone(pitch, t, t + window) for pitch in pitches))
            t += window
        return float(numpy.median(levels)) if levels else 0.0

    def envelope(self, window=0.002):
        """RMS in `window`-second steps."""
        step = int(self.rate * window)
        count = len(self.samples) // step
        blocks = self.samples[:count * step].reshape(count, step)
        return numpy.sqrt((blocks ** 2).mean(axis=1)), window


def onsets(series, step, threshold, minimum_gap):
    """Times (s) where `series` (sampled every `step` s) rises through `threshold`, at least
    `minimum_gap` s apart, refined by linear interpolation between the two samples."""
    times = []
    for i in range(1, len(series)):
        if series[i - 1] < threshold <= series[i]:
            fraction = (threshold - series[i - 1]) / (series[i] - series[i - 1])
            t = (i - 1 + fraction) * step
            if not times or t - times[-1] >= minimum_gap:
                times.append(t)
    return times


class FrameLuma:
    """Every decoded frame of a file's video, as it is: its presentation time (s, on the file's
    own clock, as the audio's `start` is) and the mean luma of a box of the picture scaled to
    width x height. No resampling: a frame is shown from its own time."""

    def __init__(self, path, width, height, x, y, radius=4):
        size = 2 * radius + 1
        result = subprocess.run(["ffmpeg", "-v", "info", "-nostats", "-copyts", "-i", path, "-an", "-vf",
                                 f"scale={width}:{height},crop={size}:{size}:{max(0, x - radius)}:{max(0, y - radius)},showinfo",
                                 "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                                capture_output=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"decode {path}: {result.stderr.decode()[-2000:]}")
        self.times = [float(m) for m in re.findall(rb"Parsed_showinfo.*? pts_time:\s*(-?[0-9.]+)", result.stderr)]
        # ffmpeg (5.1) rebases a video stream that starts just after 0 to 0 even with -copyts: a
        # TS whose audio starts at 0 (AAC priming) and video at 0.021333 shows its first frame
        # at 0, which read an exactly aligned file as audio 21 ms late. The first frame is at the
        # video stream's own start time, as ffprobe and players have it.
        streams = [s for s in probe(path).get("streams", []) if s.get("codec_type") == "video"]
        start = float(streams[0].get("start_time", "nan")) if streams else float("nan")
        if self.times and start == start and abs(start - self.times[0]) > 0.0005:
            self.times = [t + start - self.times[0] for t in self.times]
        frame = size * size * 3
        count = len(result.stdout) // frame
        if count != len(self.times):
            raise RuntimeError(f"decode {path}: {count} frames but {len(self.times)} times")
        rgb = numpy.frombuffer(result.stdout[:count * frame], dtype=numpy.uint8).reshape(count, size * size, 3)
        self.rgb = rgb.astype(numpy.float64).mean(axis=1)
        self.luma = 0.299 * self.rgb[:, 0] + 0.587 * self.rgb[:, 1] + 0.114 * self.rgb[:, 2]

    def names(self, start, end, away_from=(), margin=0.25):
        """The palette names of the frames from `start` to `end` s after the first frame, leaving
        out those within `margin` s of any of the times `away_from` (on the file's clock)."""
        first = self.times[0] if self.times else 0.0
        return [nearest(tuple(self.rgb[i])) for i, t in enumerate(self.times)
                if start <= t - first <= end and all(abs(t - other) > margin for other in away_from)]

    def rises(self, threshold, minimum_gap):
        """Times of the first frame at or above `threshold` after one below it, at least
        `minimum_gap` s apart."""
        times = []
        for i in range(1, len(self.luma)):
            if self.luma[i - 1] < threshold <= self.luma[i]:
                t = self.times[i]
                if not times or t - times[-1] >= minimum_gap:
                    times.append(t)
        return times


def av_offsets(path, width, height, luma_threshold, beep_threshold, window=0.4):
    """av_onsets without the flashes' times: (beep onset - flash onset) in seconds, per flash."""
    return [offset for _, offset in av_onsets(path, width, height, luma_threshold, beep_threshold, window)]


def av_onsets(path, width, height, luma_threshold, beep_threshold, window=0.4):
    """(flash onset, beep onset - flash onset) in seconds, for each flash of a picture that flashes bright
    with a beep (an audio envelope rising through `beep_threshold`) at the same instants. Both
    onsets are on the file's own clock: the flash is the presentation time of its first frame,
    the beep is the audio's start time plus where the envelope rises, to the millisecond.
    (Counting frames and samples from each stream's first one instead reads an exactly aligned
    file as 34 ms apart: AAC's priming starts the audio 21 ms before the video, and frame
    indices after resampling are not frame times.)"""
    video = FrameLuma(path, width, height, width // 2, height // 2)
    flashes = video.rises(luma_threshold, 0.5)
    audio = Audio(path)
    envelope, step = audio.envelope(0.001)
    beeps = [audio.start + t for t in onsets(list(envelope), step, beep_threshold, 0.5)]
    offsets = []
    for flash in flashes:
        nearest_beep = min(beeps, key=lambda b: abs(b - flash), default=None)
        if nearest_beep is not None and abs(nearest_beep - flash) < window:
            offsets.append((flash, nearest_beep - flash))
    return offsets


def tiles(binary, participants, size, layout="grid", pip=None):
    """participant index (1-based) → (x, y, width, height) as the layout engine places them
    (`pip`: the index of the participant with the PiP attribute)."""
    if participants == 0:
        return {}
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run([binary, "layout", "preview", "--layout", layout, "--participants", str(participants),
                                 "--size", size, "--out", os.path.join(scratch, "preview.png"),
                                 *(["--pip", str(pip)] if pip else [])],
                                capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"layout preview: {result.stderr}")
    placed = {}
    for line in result.stdout.splitlines():
        match = re.match(r"p(\d+)@(\d+)x(\d+)\+(\d+)\+(\d+)", line.strip())
        if match:
            index, w, h, x, y = (int(v) for v in match.groups())
            placed[index] = (x, y, w, h)
    return placed


def centre(rect):
    x, y, w, h = rect
    return x + w // 2, y + h // 2


def check_colour_and_tone(playlist, width, height, colour, tone, skip=0.5):
    """Problems (an empty list when none) of a single-publisher recording: its picture's centre
    shows `colour` every half second, and `tone` sounds in every whole second, from `skip` s
    in to half a second before the end."""
    video, audio = Video(playlist, width, height), Audio(playlist)
    problems = [f"{t:.1f}s: {video.name(t, width // 2, height // 2)}"
                for t in [x * 0.5 for x in range(int(skip * 2), int(video.duration * 2) - 1)]
                if video.name(t, width // 2, height // 2) != colour]
    problems += [f"{t:.0f}-{t + 1:.0f}s: no {tone} Hz" for t in range(int(skip), int(audio.duration) - 1)
                 if audio.tone_level(tone, t, t + 1.0) <= 0.03]
    return problems


def packet_timestamps(path):
    """Every packet of a file as its demuxer reads it, not re-based: (type, pts, dts) in seconds
    (None where the packet has none)."""
    result = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts,dts:stream=index,codec_type,time_base",
                             "-of", "json", path], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"ffprobe {path}: {result.stderr}")
    probed = json.loads(result.stdout)
    streams = {}
    for stream in probed.get("streams", []):
        num, den = (int(v) for v in stream["time_base"].split("/"))
        streams[stream["index"]] = (stream.get("codec_type"), num / den)
    packets = []
    for packet in probed.get("packets", []):
        kind, unit = streams[packet["stream_index"]]
        packets.append((kind, *(packet[key] * unit if isinstance(packet.get(key), int) else None for key in ("pts", "dts"))))
    return packets


def hls_segments(playlist):
    """The media files of an HLS playlist, each as a path to probe on its own: an MPEG-TS
    segment as it is, an fMP4 one joined to its initialization section (in a temporary file the
    caller removes with the returned directory)."""
    folder = os.path.dirname(playlist)
    scratch = tempfile.mkdtemp(prefix="segments-")
    init, paths = None, []
    with open(playlist) as f:
        for line in (line.strip() for line in f):
            match = re.match(r'#EXT-X-MAP:URI="([^"]+)"', line)
            if match:
                init = os.path.join(folder, match.group(1))
            elif line and not line.startswith("#"):
                segment = os.path.join(folder, line)
                if init is None:
                    paths.append(segment)
                    continue
                joined = os.path.join(scratch, f"{len(paths)}.mp4")
                with open(joined, "wb") as out:
                    for part in (init, segment):
                        with open(part, "rb") as source:
                            out.write(source.read())
                paths.append(joined)
    return scratch, paths


def timestamp_problems(paths, seconds):
    """Packets of the files before 0 or past `seconds`: a negative time, or one wrapped round
    (MPEG-TS keeps 33 bits of 90 kHz: -1920 ticks reads as 2^33 - 1920, 26.5 hours on). Each is
    described; the list is empty when there are none."""
    problems = []
    for path in paths:
        for kind, pts, dts in packet_timestamps(path):
            for name, value in (("pts", pts), ("dts", dts)):
                if value is not None and not 0 <= value <= seconds:
                    problems.append(f"{os.path.basename(path)} {kind} {name} {value:.6f} s")
    return problems


class Pictures:
    """Every decoded frame of a file (scaled to width x height, RGB) with its presentation time
    on the file's own clock (as ffprobe reads it: ffmpeg -copyts moves a video-only output's
    first frame to 0). With `seek`: the one frame `ffmpeg -ss seek -i path` gives, as a
    player's seek would (ffmpeg's own timestamp handling is part of what is checked), its time
    put back on the file's clock (`start`: the file's start time, from which -ss counts)."""

    def __init__(self, path, width=64, height=36, seek=None, start=0.0):
        self.width, self.height = width, height
        command = ["ffmpeg", "-v", "info", "-nostats"]
        if seek is not None:
            command += ["-ss", f"{seek:.3f}"]
        command += ["-i", path, "-an", "-vf", f"scale={width}:{height},showinfo", "-fps_mode", "passthrough"]
        if seek is not None:
            command += ["-frames:v", "1"]
        result = subprocess.run(command + ["-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"decode {path}: {result.stderr.decode()[-2000:]}")
        frame = width * height * 3
        count = len(result.stdout) // frame
        if seek is None:
            probed = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                     "frame=best_effort_timestamp_time", "-of", "csv=p=0", path],
                                    capture_output=True, text=True, timeout=600)
            self.times = [float(line.strip(",")) for line in probed.stdout.split() if line.strip(",") not in ("", "N/A")]
        else:
            # The filters may have shown a frame more than the one written; ffmpeg's output
            # times count from the seek position.
            shown = re.findall(r"Parsed_showinfo.*? pts_time:\s*(-?[0-9.]+)", result.stderr.decode(errors="replace"))
            self.times = [float(time) + float(f"{seek:.3f}") + start for time in shown[:count]]
        if count != len(self.times):
            raise RuntimeError(f"decode {path}: {count} frames but {len(self.times)} times")
        self.frames = numpy.frombuffer(result.stdout[:count * frame], dtype=numpy.uint8).reshape(count, height, width, 3)


def seek_offsets(path, times, width=64, height=36):
    """For each t in `times` (seconds from the file's start, as `ffmpeg -ss` counts them): how
    many frames the frame `ffmpeg -ss t -i path -frames:v 1` gives is from the frame a straight
    decode shows at t (by its time), and how far its pixels are (mean absolute difference,
    0-255) from the nearest of that frame and its two neighbours: a seek gone wrong gives
    another picture, or the right one with the wrong time. Returns [(t, frames off, ms from t
    to the frame's time, pixel difference)]; ffmpeg gives the first frame at or after t, so 1
    frame off (up to a frame later than t) is a right seek too."""
    start = float(probe(path)["format"].get("start_time", 0))
    straight = Pictures(path, width, height)
    step = numpy.median(numpy.diff(straight.times))
    results = []
    for t in times:
        shown = max([i for i, time in enumerate(straight.times) if time <= start + t + 1e-6], default=0)
        sought = Pictures(path, width, height, seek=t, start=start)
        if not sought.times:
            results.append((t, None, None, None))
            continue
        off = round((sought.times[0] - straight.times[shown]) / step)
        neighbours = straight.frames[max(0, shown - 1):shown + 2].astype(numpy.float64)
        difference = min(float(numpy.abs(frame - sought.frames[0].astype(numpy.float64)).mean()) for frame in neighbours)
        results.append((t, off, round((sought.times[0] - start - t) * 1000, 1), difference))
    return results
