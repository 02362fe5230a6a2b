#!/usr/bin/env python3
"""Simulcast benchmark (release build): which WHIP simulcast layer the daemon composes, and the
CPU that choosing it saves.

  K headless Chromium publishers (whip_chromium.py, H.264, OpenH264) each send a camera-like
  1280x720@30 picture as three simulcast layers, q (320x180), h (640x360) and f (1280x720),
  listed smallest first as pages usually do. One composition of the stage, a 1920x1080@30 grid
  at 6 Mbit/s, is pushed to nginx-rtmp. With 6 publishers the grid's tiles are about 640x360,
  so the half layer covers them; with 12, about 480x270; with 1 to 4 the full layer is needed.

  The daemon runs twice (or 2N times with --repeat N, alternating), with
  ingest.whip.simulcastLayerFitsTiles true (the smallest layer covering each publisher's tile,
  the default) and false (always the largest layer). After a settle it measures, over
  --seconds: the daemon's CPU seconds per second and RSS, and for each publisher the size of
  the layer delivered to its decoder (stage_compositor_whip_video_width/_height in /metrics).
  It ends with the CPU the rule saves.

  The camera-like pictures (a photograph of plasma-workspace-wallpapers per publisher, panned
  and zoomed slowly, with temporal noise: scripts/make-fixture.sh --content camera's filters,
  written as raw Y4M for Chromium's fake camera, 10 s played forwards then backwards so that
  Chromium's loop has no jump) and tones are made once under benchmarks/.work/simulcast/
  (415 MB per picture; --photos limits how many distinct ones). The page opens the fake
  camera at 1280x720 (whip_chromium.py --capture-size).

  K Chromiums encoding three layers each load a small machine heavily: the machine's load and
  what Chromium says it sent (layer sizes, frame rates, qualityLimitationReason; reported when
  each publisher ends, so each publishes for --startup + --settle + --seconds + 10 s) are
  printed, with a warning when the publishers could not keep up (or left before the end).

Usage: benchmarks/simulcast_bench.py [--binary PATH] [--publishers K] [--seconds S] [--settle S]
                                     [--startup S] [--repeat N] [--photos N] [--keep]
"""
import argparse
import collections
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "scripts", "daemon-tests"))
sys.path.insert(0, HERE)
from daemon_tests import Daemon, NginxRTMP, free_port, wait_state  # noqa: E402
from live_bench import metric  # noqa: E402
from whip_bench import CHANNEL, Browser, measure, published  # noqa: E402
from whip_tests import free_udp_port  # noqa: E402

CLIENTS = os.path.join(REPO, "scripts", "whip-clients")
WORK = os.path.join(HERE, ".work", "simulcast")
WALLPAPERS = os.environ.get("WALLPAPERS", "/usr/share/wallpapers")
SIMULCAST = "q:4,h:2,f:1"  # rid:scaleResolutionDownBy, in sendEncodings order: smallest first
WIDTH, HEIGHT, FPS, LOOP_SECONDS = 1280, 720, 30, 10
# The rate the page opens the camera at (--capture-fps): below 30 when the machine cannot
# encode that many publishers' layers at 30 (the decoding saved scales alike in both modes).
CAPTURE_FPS = FPS
NOISE = 6  # make-fixture.sh's default --noise


# --- camera-like pictures ---------------------------------------------------------------------

def camera_photos():
    """make-fixture.sh's CAMERA_PHOTOS, read from it so that both show the same photographs."""
    with open(os.path.join(REPO, "scripts", "make-fixture.sh")) as f:
        found = re.search(r"^CAMERA_PHOTOS=\(([^)]*)\)", f.read(), re.M)
    if not found:
        raise SystemExit("simulcast_bench: CAMERA_PHOTOS not found in scripts/make-fixture.sh")
    return found.group(1).split()


def camera_photo(photos, i):
    """make-fixture.sh's camera_photo: participant i's photograph, a 16:9 size when there is one."""
    directory = os.path.join(WALLPAPERS, photos[i % len(photos)], "contents", "images")
    for name in ("2560x1440.jpg", "1920x1080.jpg"):
        if os.path.isfile(os.path.join(directory, name)):
            return os.path.join(directory, name)
    files = sorted(os.listdir(directory), key=lambda n: os.path.getsize(os.path.join(directory, n)), reverse=True)
    if not files:
        raise SystemExit(f"simulcast_bench: no photograph in {directory}")
    return os.path.join(directory, files[0])


def frac(x):
    return x - int(x)


def camera_graph(i, w, h, fps, half_frames):
    """make-fixture.sh's camera_graph (the same zoom, pan and noise for participant i), over
    `half_frames` frames played forwards then backwards (Chromium loops the file: no jump)."""
    pz, px, py = 45 + 5 * (i % 4), 50 + 7 * (i % 5), 60 + 5 * (i % 6)
    fz, fx, fy = f"{frac(i * 0.37):.3f}", f"{frac(i * 0.61 + 0.2):.3f}", f"{frac(i * 0.29 + 0.5):.3f}"
    t = f"on/{fps}"
    z = f"1.25+0.15*sin(2*PI*({t}/{pz}+{fz}))"
    x = f"(iw-iw/zoom)*(0.5+0.5*sin(2*PI*({t}/{px}+{fx})))"
    y = f"(ih-ih/zoom)*(0.5+0.5*sin(2*PI*({t}/{py}+{fy})))"
    return (f"[0]format=yuv420p,zoompan=z='{z}':x='{x}':y='{y}':d=1:s={w}x{h}:fps={fps},trim=end_frame={half_frames},"
            f"split[fw][bw];[bw]reverse[rv];[fw][rv]concat=n=2:v=1:a=0,noise=alls={NOISE}:allf=t,format=yuv420p[v]")


def make_pictures(count):
    """One 1280x720@30 Y4M and one WAV per picture index, made once: [(video, audio), ...]."""
    photos = camera_photos()
    if not os.path.isdir(os.path.join(WALLPAPERS, photos[0])):
        raise SystemExit(f"simulcast_bench: the photographs of plasma-workspace-wallpapers are missing in {WALLPAPERS} "
                         f"(scripts/install-deps.sh --bench)")
    os.makedirs(WORK, exist_ok=True)
    ff = ["nice", "-n", "10", "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
    made = []
    for i in range(count):
        name = photos[i % len(photos)] + ("-mirrored" if i >= len(photos) else "")
        video = os.path.join(WORK, f"camera{i}-{name}-{WIDTH}x{HEIGHT}-{FPS}-{LOOP_SECONDS}s.y4m")
        audio = os.path.join(WORK, f"tone{i}-{300 + 150 * i}hz-{LOOP_SECONDS}s.wav")
        if not os.path.exists(video):
            print(f"making {os.path.relpath(video, REPO)} ({name}) ...", flush=True)
            # make-fixture.sh's camera_still: cropped to 16:9, scaled once to 1.6 x the video
            # size (the zoom never magnifies it), mirrored from participant 11 on.
            sw, sh = (WIDTH * 16 // 10 + 1) & ~1, (HEIGHT * 16 // 10 + 1) & ~1
            still_filter = f"scale={sw}:{sh}:force_original_aspect_ratio=increase:flags=lanczos,crop={sw}:{sh}"
            if i >= len(photos):
                still_filter += ",hflip"
            with tempfile.TemporaryDirectory(dir=WORK) as tmp:
                still = os.path.join(tmp, "still.ppm")
                subprocess.run([*ff, "-i", camera_photo(photos, i), "-vf", still_filter, "-frames:v", "1", still], check=True)
                half = LOOP_SECONDS * FPS // 2
                partial = os.path.join(tmp, "camera.y4m")
                subprocess.run([*ff, "-loop", "1", "-framerate", str(FPS), "-t", str(LOOP_SECONDS / 2), "-i", still,
                                "-filter_complex", camera_graph(i, WIDTH, HEIGHT, FPS, half), "-map", "[v]",
                                "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", partial], check=True)
                os.replace(partial, video)
        if not os.path.exists(audio):
            partial = audio + ".partial.wav"
            subprocess.run([*ff, "-f", "lavfi", "-i", f"sine=frequency={300 + 150 * i}:sample_rate=48000:duration={LOOP_SECONDS}",
                            "-c:a", "pcm_s16le", "-ac", "1", partial], check=True)
            os.replace(partial, audio)
        made.append((video, audio))
    return made


# --- the publisher's page -----------------------------------------------------------------------

class SimulcastBrowser(Browser):
    """whip_chromium.py publishing a Y4M and a WAV (Chromium's fake devices) as simulcast."""

    def __init__(self, d, stage, name, files, seconds, workdir, script):
        token = d.cli("create-participant-token", "--stage-arn", stage["arn"], "--user-id", name,
                      "--capabilities", "PUBLISH")["participantToken"]
        self.participant = token["participantId"]
        self.log = open(os.path.join(workdir, f"{name}.log"), "w")
        self.process = subprocess.Popen(
            [sys.executable, script, "--url", stage["endpoints"]["whip"], "--token", token["token"],
             "--video", files[0], "--audio", files[1], "--capture-size", f"{WIDTH}x{HEIGHT}@{CAPTURE_FPS}", "--simulcast", SIMULCAST, "--video-codec", "h264",
             "--duration", str(seconds), "--timeout", str(seconds + 120)],
            stdout=subprocess.PIPE, stderr=self.log, text=True)

    def kill(self):
        super().kill()
        self.log.close()


# --- the daemon ----------------------------------------------------------------------------------

def start_daemon(workdir, binary, nginx_port, fits_tiles):
    """whip_bench.start_daemon, with ingest.whip.simulcastLayerFitsTiles set."""
    d = Daemon(binary, workdir, idle=60, channels=[{"arn": CHANNEL, "ingestEndpoint": f"rtmp://127.0.0.1:{nginx_port}/live",
                                                    "streamKey": "composite0"}],
               extra={"ingest": {"rtmp": {"port": free_port()}, "rtmps": {"port": free_port()},
                                 "whip": {"port": free_udp_port(), "simulcastLayerFitsTiles": fits_tiles}},
                      "encoderPreset": "veryfast", "logLevel": os.environ.get("BENCH_LOG_LEVEL", "notice")})
    d.start()
    return d


def compose_1080p(d, stage):
    """A 1920x1080@30 6 Mbit/s grid of the stage pushed to the channel, started on the empty
    stage (its first publisher makes it ACTIVE): its ARN."""
    enc = d.cli("create-encoder-configuration", "--name", "fullhd", "--video",
                "width=1920,height=1080,framerate=30,bitrate=6000000")["encoderConfiguration"]["arn"]
    return d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
        [{"channel": {"channelArn": CHANNEL, "encoderConfigurationArn": enc}}]))["composition"]["arn"]


def stage_events(d, stage_arn, name):
    return [e for e in d.events() if e["detail-type"] == "IVS Stage Update" and e["resources"] == [stage_arn]
            and e["detail"]["event_name"] == name]


WHIP_LINE = re.compile(r'^stage_compositor_whip_(\w+)\{[^}]*participant_id="([^"]+)"[^}]*\}\s+(\S+)')


def whip_gauges(d):
    """{participant_id: {gauge: value}} from the per-participant WHIP gauges of /metrics, and
    the WHIP loop's lag (its longest late tick in the last second, s)."""
    text = urllib.request.urlopen(f"{d.endpoint}/metrics", timeout=10).read().decode()
    out, lag = collections.defaultdict(dict), 0.0
    for line in text.splitlines():
        found = WHIP_LINE.match(line)
        if found:
            out[found.group(2)][found.group(1)] = float(found.group(3))
        elif line.startswith("stage_compositor_whip_loop_lag_seconds"):
            lag = max(lag, float(line.rsplit(" ", 1)[1]))
    return out, lag


def machine_ticks():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def sizes_text(sizes):
    counts = collections.Counter(sizes)
    return ", ".join(f"{size} x{n}" for size, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"


def run_mode(binary, fits_tiles, pictures, k, seconds, settle, startup, script, keep=False):
    """One daemon with the rule on or off, K publishers, one composition: the measurements."""
    workdir = tempfile.mkdtemp(prefix=f"simulcast-bench-{'fits' if fits_tiles else 'largest'}-")
    nginx = NginxRTMP(workdir)
    browsers = []
    d = None
    stop = threading.Event()  # the sampler's
    try:
        d = start_daemon(workdir, binary, nginx.port, fits_tiles)
        stage = d.cli("create-stage", "--name", "simulcast")["stage"]
        composition = compose_1080p(d, stage)
        # Publishing long enough for every Chromium to start and connect (they start together;
        # on a loaded machine the last connects well after the first: `startup`), the settle
        # and the measurement; whip_chromium.py then reports what Chromium sent.
        publish_seconds = startup + settle + seconds + 10
        samples = []  # (time, WHIP gauges, WHIP loop lag), every second from the first publisher on

        def sample():
            while not stop.is_set():
                try:
                    samples.append((time.time(), *whip_gauges(d)))
                except OSError:
                    pass
                stop.wait(1.0)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        browsers = [SimulcastBrowser(d, stage, f"p{i}", pictures[i % len(pictures)], publish_seconds, workdir, script)
                    for i in range(k)]
        try:
            published(d, stage["arn"], k, timeout=60 + 10 * k)
        except RuntimeError:
            count = len(stage_events(d, stage["arn"], "Participant Published"))
            print(f"    WARNING: only {count} of {k} publishers published within {60 + 10 * k} s; measuring those", flush=True)
        wait_state(d, composition, {"ACTIVE"})
        time.sleep(settle)

        lagged0, dropped0 = metric(d, "stage_compositor_composition_lagged_frames"), metric(d, "stage_compositor_composition_dropped_packets")
        busy0, total0 = machine_ticks()
        window_start = time.time()
        cpu, rss = measure(d, seconds)
        window_end = time.time()
        busy1, total1 = machine_ticks()
        stop.set()
        sampler.join()
        before = [lag for when, _, lag in samples if when < window_start]
        during = [lag for when, _, lag in samples if window_start <= when <= window_end + 1]
        # The window's samples (the last may come up to 1 s after it, covering its last second).
        samples = [(when, gauges) for when, gauges, _ in samples if window_start <= when <= window_end + 1]
        lagged = metric(d, "stage_compositor_composition_lagged_frames") - lagged0
        dropped = metric(d, "stage_compositor_composition_dropped_packets") - dropped0
        load = os.getloadavg()
        left_early = len(stage_events(d, stage["arn"], "Participant Unpublished"))
        joined = sorted(datetime.datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
                        for e in stage_events(d, stage["arn"], "Participant Published"))
        with open(os.path.join(workdir, "whip-metrics.jsonl"), "w") as f:
            for when, gauges in samples:
                f.write(json.dumps({"t": round(when, 2), "whip": gauges}) + "\n")

        participants = {b.participant for b in browsers}
        first, last = {}, {}
        for _, gauges in samples:
            for p, g in gauges.items():
                if p in participants:
                    first.setdefault(p, g)
                    last[p] = g
        sizes = [f"{int(g.get('video_width', 0))}x{int(g.get('video_height', 0))}" for g in last.values()]
        widths_seen = {p: sorted({int(g.get("video_width", 0)) for _, gauges in samples if p in gauges for g in [gauges[p]]})
                       for p in last}
        bitrates = [g.get("bitrate_bps", 0) for _, gauges in samples for p, g in gauges.items() if p in participants]
        result = {
            "fits_tiles": fits_tiles, "cpu": cpu, "rss": rss, "sizes": sizes, "present": len(last), "k": k,
            "layers": sorted({int(g.get("simulcast_layers", 0)) for g in last.values()}),
            "switches": sum(last[p].get("simulcast_switches", 0) - first[p].get("simulcast_switches", 0) for p in last),
            "changing": {p: w for p, w in widths_seen.items() if len(w) > 1},
            "bitrate": statistics.mean(bitrates) if bitrates else 0.0,
            # RFC 3550's cumulative loss goes down when duplicates arrive: none is none lost.
            "lost": sum(max(0.0, last[p].get("packets_lost", 0) - first[p].get("packets_lost", 0)) for p in last),
            "lagged": lagged, "dropped": dropped, "left_early": left_early,
            "spread": joined[-1] - joined[0] if joined else 0.0, "startup": startup,
            "busy": (busy1 - busy0) / max(1, total1 - total0), "load": load,
            "lag_before": max(before, default=0.0), "lag_during": max(during, default=0.0),
        }
        # What Chromium sent, from its own statistics at the end of its publishing.
        reports = []
        for browser in browsers:
            try:
                reports.append(browser.result())
            except subprocess.TimeoutExpired:
                reports.append({})
        result["chromium"] = [r for r in reports if r.get("ok")]
        result["failed"] = [r.get("stage") or r.get("error") or "no report" for r in reports if not r.get("ok")]
        result["disconnected"] = sum(1 for r in result["chromium"] if r.get("connection_state") != "connected")
        result["publish_seconds"] = publish_seconds
        return result
    finally:
        stop.set()
        for browser in browsers:
            browser.kill()
        if d:
            d.stop()
        nginx.stop()
        if keep:
            print(f"    kept {workdir} (daemon log serve.err, publishers' logs p<i>.log)")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def sending_seconds(report, publish_seconds):
    """How long the page sent: from connecting to answer_applied + its duration."""
    times = report.get("times_ms") or {}
    if "connected" in times and "answer_applied" in times:
        return max(1.0, publish_seconds - (times["connected"] - times["answer_applied"]) / 1000)
    return float(publish_seconds)


def chromium_summary(result):
    """'q 320x180 29.8 fps, ...' (medians over the publishers that stayed connected), and the
    warnings it raises."""
    per_rid = collections.defaultdict(list)
    limited = collections.Counter()
    stayed = [r for r in result["chromium"] if r.get("connection_state") == "connected"]
    for report in stayed:
        seconds = sending_seconds(report, result["publish_seconds"])
        for layer in (report.get("outbound") or {}).get("layers", []):
            per_rid[layer.get("rid")].append(dict(layer, fps=(layer.get("framesSent") or 0) / seconds))
            if layer.get("qualityLimitationReason") not in (None, "none"):
                limited[layer["qualityLimitationReason"]] += 1
    parts, warnings = [], []
    for rid in [r.split(":")[0] for r in SIMULCAST.split(",")]:
        layers = per_rid.get(rid, [])
        sent = [layer for layer in layers if layer.get("framesSent")]
        if not sent:
            parts.append(f"{rid} not sent")
            if stayed:
                warnings.append(f"layer {rid} not sent by any publisher")
            continue
        fps = statistics.median(layer["fps"] for layer in layers)
        sizes = collections.Counter(f"{layer.get('frameWidth')}x{layer.get('frameHeight')}" for layer in sent)
        off = f", off in {len(layers) - len(sent)}" if len(sent) < len(layers) else ""
        parts.append(f"{rid} {sizes_text(sizes.elements())} {fps:.1f} fps{off}")
        if fps < CAPTURE_FPS * 0.9:
            warnings.append(f"layer {rid} at {fps:.1f} fps")
        if off:
            warnings.append(f"layer {rid} switched off by {len(layers) - len(sent)} publishers")
    if any((layer.get("frameWidth") or WIDTH) < WIDTH for layer in per_rid.get("f", []) if layer.get("framesSent")):
        warnings.append("Chromium scaled its full layer down")
    if limited:
        warnings.append("Chromium's quality limited by " + ", ".join(f"{reason} ({n} layers)" for reason, n in limited.items()))
    if result["failed"]:
        warnings.append(f"{len(result['failed'])} of {result['k']} Chromiums failed to publish or report ({', '.join(result['failed'])})")
    if result["disconnected"]:
        warnings.append(f"{result['disconnected']} of {result['k']} Chromiums were disconnected before their end")
    return f"{', '.join(parts)} ({len(stayed)} of {result['k']} connected to the end)", warnings


def report(result, label):
    name = "fits tiles:" if result["fits_tiles"] else "largest:   "
    print(f"{label}{name} {result['k']} publishers, layers decoded {sizes_text(result['sizes'])}, "
          f"daemon {result['cpu']:.3f} CPU-s/s, RSS {result['rss']:.0f} MiB", flush=True)
    sent, warnings = chromium_summary(result)
    load = " ".join(f"{v:.1f}" for v in result["load"])
    print(f"    received {'/'.join(map(str, result['layers'])) or 'no'} layers each, {result['bitrate'] / 1e6:.2f} Mbit/s per publisher, "
          f"{result['lost']:.0f} packets lost, {result['switches']:.0f} layer switches in the window; composition lagged "
          f"{result['lagged']:.0f} frames, dropped {result['dropped']:.0f} packets; machine {100 * result['busy']:.0f}% busy, "
          f"load average {load}; WHIP loop late by {1000 * result['lag_during']:.0f} ms at most "
          f"({1000 * result['lag_before']:.0f} ms while the publishers joined)")
    print(f"    Chromium sent (medians): {sent}; the publishers connected over {result['spread']:.0f} s")
    if result["present"] < result["k"]:
        warnings.append(f"only {result['present']} of {result['k']} publishers were in /metrics during the window")
    if result["left_early"]:
        warnings.append(f"{result['left_early']} publishers had left the stage by the end of the window"
                        + (f" (they connected over {result['spread']:.0f} s: give --startup more than that)"
                           if result["spread"] > result["startup"] - 5 else ""))
    if result["changing"]:
        warnings.append(f"the decoded layer changed during the window: {result['changing']}")
    if result["lagged"] > 0:
        warnings.append(f"the composition fell behind the clock by {result['lagged']:.0f} frames (the daemon could not keep up)")
    for warning in warnings:
        print(f"    WARNING: {warning}")
    if warnings:
        print("    => the publishers or the machine could not keep up: these numbers are not the rule's alone")
    sys.stdout.flush()
    return bool(warnings)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(REPO, ".build", "release", "stage-compositor"))
    parser.add_argument("--publishers", type=int, default=6, help="Chromium publishers (default 6)")
    parser.add_argument("--seconds", type=int, default=20, help="measurement per mode (default 20)")
    parser.add_argument("--settle", type=float, default=5, help="seconds after the last publisher joined, before measuring (default 5)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each mode, alternating (default 1)")
    parser.add_argument("--startup", type=float, help="seconds the publishers may take to connect, all of them "
                        "(default 15 + 5 K); each publishes for this + the settle + the measurement + 10 s")
    parser.add_argument("--photos", type=int, default=6, help="distinct pictures at most (415 MB each; default 6)")
    parser.add_argument("--capture-fps", type=int, default=FPS, help="the camera's frame rate in the page (default 30)")
    parser.add_argument("--keep", action="store_true", help="keep each run's work directory (daemon and publisher logs)")
    args = parser.parse_args()
    global CAPTURE_FPS
    CAPTURE_FPS = args.capture_fps
    if not os.path.isfile(args.binary) or not os.access(args.binary, os.X_OK):
        print(f"simulcast_bench: no executable {args.binary}: run `swift build -c release` first (or give --binary)", file=sys.stderr)
        return 2
    if not shutil.which("chromium"):
        print("simulcast_bench: chromium is missing (apt-get install -y chromium)", file=sys.stderr)
        return 2
    if not 1 <= args.publishers <= 12:
        print("simulcast_bench: --publishers: 1 to 12 (a stage's publishers)", file=sys.stderr)
        return 2
    startup = args.startup if args.startup is not None else 15 + 5 * args.publishers
    pictures = make_pictures(max(1, min(args.publishers, args.photos)))
    script = os.path.join(CLIENTS, "whip_chromium.py")
    print(f"simulcast: {args.publishers} Chromium publishers, 1280x720@30 camera-like pictures as simulcast {SIMULCAST} "
          f"(H.264), one 1920x1080@30 6 Mbit/s grid composition; {args.seconds} s per measurement after {args.settle:g} s; "
          f"{os.cpu_count()} CPUs, binary {os.path.relpath(args.binary, REPO)}", flush=True)
    results = {True: [], False: []}
    troubled = False
    for run in range(args.repeat):
        for fits_tiles in (True, False):
            result = run_mode(args.binary, fits_tiles, pictures, args.publishers, args.seconds, args.settle,
                              startup, script, args.keep)
            results[fits_tiles].append(result)
            troubled |= report(result, f"[{run + 1}/{args.repeat}] " if args.repeat > 1 else "")
    fits = statistics.median(r["cpu"] for r in results[True])
    largest = statistics.median(r["cpu"] for r in results[False])
    if args.repeat > 1:
        for fits_tiles, rows in results.items():
            sizes = sizes_text(rows[-1]["sizes"])
            print(f"median {'fits tiles:' if fits_tiles else 'largest:   '} layers decoded {sizes} (last run), "
                  f"daemon {statistics.median(r['cpu'] for r in rows):.3f} CPU-s/s, "
                  f"RSS {statistics.median(r['rss'] for r in rows):.0f} MiB")
    saved = 100 * (largest - fits) / largest if largest > 0 else 0.0
    same = all(sorted(a["sizes"]) == sorted(b["sizes"]) for a in results[True] for b in results[False])
    notes = (["both modes decoded the same layers: the tiles need the largest one, so no saving is expected"] if same else []) + \
        (["see the warnings above: not the rule's effect alone"] if troubled else [])
    print(f"CPU saved by the rule: {saved:.1f} %" + (f" ({'; '.join(notes)})" if notes else ""))
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
