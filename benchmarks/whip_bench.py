#!/usr/bin/env python3
"""WHIP benchmark (release build): headless Chromium publishers, the real daemon.

  cpu       CPU of the daemon per WHIP publisher at 1280x720@30 (Chromium drawing a moving canvas,
            OpenH264 at its default bitrate): with k publishers and no composition (receive:
            ICE, SRTP, RTP, depacketizing, the stage queues) and with one composition of them
            to 1280x720@30 (receive + decode + scale; the composition's own encode is the
            same for every k, so the slope is the per-publisher cost).
  latency   glass-to-glass: the page draws the wall-clock time into each frame (a barcode);
            the composite is read back from nginx-rtmp and decoded on arrival.
  glass     glass-to-glass over WebRTC both ways: Chromium publishing the barcode page over
            WHIP -> composite -> WHEP -> a second Chromium reading the barcode from each picture
            its <video> presents (requestVideoFrameCallback's expected display time).

Usage: benchmarks/whip_bench.py [--binary PATH] [--seconds S] [--max K] [--only cpu|latency|glass]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "scripts", "daemon-tests"))
sys.path.insert(0, HERE)
from daemon_tests import Daemon, NginxRTMP, free_port, wait_state  # noqa: E402
from live_bench import cpu_seconds, metric, read_latencies, rss_mib  # noqa: E402
from whip_tests import free_udp_port  # noqa: E402

CLIENTS = os.path.join(REPO, "scripts", "whip-clients")
CHANNEL = "arn:aws:ivs:us-east-1:123456789012:channel/bench0000000"


def start_daemon(workdir, binary, nginx_port=1, ingest=None, whip=None):
    """The daemon under test; `ingest`: more ingest settings (e.g. minimumLatencyMs); `whip`:
    more WHIP settings (e.g. the port a relay listens on, as `advertisedPort`)."""
    whip = {"port": free_udp_port(), **(whip or {})}
    d = Daemon(binary, workdir, idle=60, channels=[{"arn": CHANNEL, "ingestEndpoint": f"rtmp://127.0.0.1:{nginx_port}/live",
                                                    "streamKey": "composite0"}],
               extra={"ingest": {"rtmp": {"port": free_port()}, "rtmps": {"port": free_port()},
                                 "whip": whip, **(ingest or {})},
                      "encoderPreset": "veryfast", "logLevel": os.environ.get("BENCH_LOG_LEVEL", "notice")})
    d.start()
    return d


class Browser:
    """whip_chromium.py publishing the barcode canvas."""

    def __init__(self, d, stage, name, epoch_ms, seconds, workdir):
        token = d.cli("create-participant-token", "--stage-arn", stage["arn"], "--user-id", name,
                      "--capabilities", "PUBLISH")["participantToken"]
        self.participant = token["participantId"]
        self.log = open(os.path.join(workdir, f"{name}.log"), "w")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(CLIENTS, "whip_chromium.py"), "--url", stage["endpoints"]["whip"],
             "--token", token["token"], "--barcode-epoch-ms", str(epoch_ms), "--size", "1280x720",
             "--duration", str(seconds), "--timeout", str(seconds + 90)],
            stdout=subprocess.PIPE, stderr=self.log, text=True)

    def result(self):
        out, _ = self.process.communicate(timeout=300)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else {}

    def kill(self):
        """SIGTERM, on which whip_chromium.py closes Chromium's process group (SIGKILL would
        leave Chromium running), then SIGKILL after 30 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def published(d, stage_arn, count, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        events = [e for e in d.events() if e["detail-type"] == "IVS Stage Update" and e["resources"] == [stage_arn]
                  and e["detail"]["event_name"] == "Participant Published"]
        if len(events) >= count:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{count} publishers did not publish:\n{d.log()}")


def compose_to_channel(d, stage):
    """A 1280x720@30 composition of the stage pushed to the channel; returns once ACTIVE."""
    enc = d.cli("create-encoder-configuration", "--name", "hd", "--video",
                "width=1280,height=720,framerate=30,bitrate=2500000")["encoderConfiguration"]["arn"]
    arn = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
        [{"channel": {"channelArn": CHANNEL, "encoderConfigurationArn": enc}}]))["composition"]["arn"]
    wait_state(d, arn, {"ACTIVE"})
    return arn


def measure(d, seconds):
    start_cpu, start = cpu_seconds(d.process.pid), time.time()
    time.sleep(seconds)
    return (cpu_seconds(d.process.pid) - start_cpu) / (time.time() - start), rss_mib(d.process.pid)


def cpu(binary, seconds, maximum):
    print(f"cpu: k Chromium publishers at 1280x720@30 (canvas, OpenH264), {seconds} s per measurement")
    rows = []
    for k in range(1, maximum + 1):
        workdir = tempfile.mkdtemp(prefix="whip-cpu-")
        d = start_daemon(workdir, binary)
        browsers = []
        try:
            stage = d.cli("create-stage", "--name", "cpu")["stage"]
            epoch = time.time() * 1000
            browsers = [Browser(d, stage, f"p{i}", epoch, seconds * 2 + 30, workdir) for i in range(k)]
            published(d, stage["arn"], k)
            time.sleep(3)
            receive, _ = measure(d, seconds)
            compose_to_channel(d, stage)
            time.sleep(3)
            composed, rss = measure(d, seconds)
            bitrate = metric(d, "stage_compositor_whip_bitrate_bps") / k
            rows.append((k, receive, composed, rss))
            print(f"  k={k}: receive only {receive:.3f} CPU s/s, with a 720p30 composition {composed:.3f} CPU s/s, RSS {rss:.0f} MiB "
                  f"(publishers at {bitrate / 1e6:.2f} Mb/s each)")
        finally:
            for browser in browsers:
                browser.kill()
            d.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    if len(rows) >= 2:
        per_receive = (rows[-1][1] - rows[0][1]) / (rows[-1][0] - rows[0][0])
        per_decode = (rows[-1][2] - rows[0][2]) / (rows[-1][0] - rows[0][0])
        if per_receive <= 0 or per_decode <= 0:
            # Each Chromium encoding 720p30 takes most of a core: with more of them than the
            # machine has spare cores, they cannot keep 30 fps and the daemon gets less to do.
            print(f"  => no per-publisher slope: the publishers saturated the machine (load {os.getloadavg()[0]:.1f}); "
                  f"use the k=1 row")
        else:
            print(f"  => per WHIP publisher: receive {per_receive:.3f} CPU s/s; receive + decode + scale {per_decode:.3f} CPU s/s")


def latency(binary, seconds, jitter_ms=0, warmup=35):
    """Glass-to-glass with the jitter allowance measured per publisher (the default), then
    fixed at its maximum (minimumLatencyMs = latencyMs, as before it was measured). With
    `jitter_ms`, the publisher's datagrams pass a seeded relay adding 0..jitter_ms of delay.
    The measurement starts `warmup` s after the composition: a publisher's measured allowance
    starts at the maximum and takes about 30 s to come down to what its jitter needs."""
    path = f", through a relay adding 0-{jitter_ms} ms to each datagram" if jitter_ms else ""
    print(f"latency: a Chromium page drawing the wall-clock time into 1280x720 frames{path}, {seconds} s each, "
          f"from {warmup} s after the composition started")
    for label, ingest in (("measured allowance (default)", {}), ("fixed 200 ms allowance", {"minimumLatencyMs": 200})):
        latency_once(binary, seconds, label, ingest, jitter_ms, warmup)


class JitterRelay:
    """scripts/whip-clients/udp_impair_relay.py --jitter-ms between the page and the daemon."""

    def __init__(self, target_port, jitter_ms, seed=26):
        self.port = free_udp_port()
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(CLIENTS, "udp_impair_relay.py"), "--listen", f"127.0.0.1:{self.port}",
             "--target", f"127.0.0.1:{target_port}", "--seed", str(seed), "--jitter-ms", str(jitter_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if '"listening"' not in line:
            raise RuntimeError(f"relay: {line}")

    def stop(self):
        self.process.terminate()
        self.process.wait()


def latency_once(binary, seconds, label, ingest, jitter_ms=0, warmup=35):
    workdir = tempfile.mkdtemp(prefix="whip-latency-")
    nginx = NginxRTMP(workdir)
    allowances = []
    delivery = None
    relay = None
    try:
        whip_port = free_udp_port()
        if jitter_ms:
            relay = JitterRelay(whip_port, jitter_ms)
        d = start_daemon(workdir, binary, nginx.port, ingest, {"port": whip_port, **({"advertisedPort": relay.port} if relay else {})})
        browser = None
        try:
            stage = d.cli("create-stage", "--name", "latency")["stage"]
            epoch = time.time()
            browser = Browser(d, stage, "clock", epoch * 1000, seconds + warmup + 40, workdir)
            published(d, stage["arn"], 1)
            compose_to_channel(d, stage)
            time.sleep(warmup)
            # The publisher's allowance as the daemon measures it, sampled while the barcode is read.
            sampler = threading.Thread(target=sample_allowance, args=(d, allowances, seconds + 5), daemon=True)
            sampler.start()
            stamps = read_latencies(f"rtmp://127.0.0.1:{nginx.port}/live/composite0", 1280, 720, 2.0, epoch, seconds,
                                    with_stamps=True)
            composed = [latency for latency, _ in stamps]
            delivery = read_delivery(d)
        finally:
            if browser:
                browser.kill()
            d.stop()
    finally:
        if relay:
            relay.stop()
        nginx.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if not composed:
        print("  could not read the barcode")
        return
    allowance = f"{statistics.median(allowances) * 1000:.0f} ms (range {min(allowances) * 1000:.0f}-{max(allowances) * 1000:.0f})" \
        if allowances else "not reported"
    print(f"  {label}: page -> WebRTC -> compositor -> nginx -> reader: median {statistics.median(composed):.0f} ms, "
          f"p95 {sorted(composed)[int(len(composed) * 0.95)]:.0f} ms ({len(composed)} frames); "
          f"jitter allowance {allowance}; {repeated_pictures(stamps)} composite frames repeated the previous picture")
    if delivery:
        print(f"    the daemon counted: {delivery['late']:.0f} video frames late, {delivery['gap'] * 1000:.0f} ms of sound missing, "
              f"{delivery['steps']:.0f} steps up of the allowance adding {delivery['stepped'] * 1000:.0f} ms; "
              f"packets lost {delivery['lost']:.0f}, dropped for coming after the reorder wait: "
              f"{delivery['audioTooLate']:.0f} audio (waiting {delivery['audioWait'] * 1000:.0f} ms), {delivery['videoTooLate']:.0f} video (150 ms); "
              f"NACKs {delivery['nacks']:.0f}, "
              f"{delivery['unneeded']:.0f} retransmissions of packets that had come")


def glass(binary, seconds, warmup=35):
    """Chromium -> WHIP -> composite (1280x720@30) -> WHEP -> Chromium, measured from `warmup` s
    after the composition started (the publisher's measured jitter allowance settles)."""
    workdir = tempfile.mkdtemp(prefix="whep-glass-")
    nginx = NginxRTMP(workdir)
    try:
        d = start_daemon(workdir, binary, nginx.port)
        browser = None
        try:
            stage = d.cli("create-stage", "--name", "glass")["stage"]
            epoch = time.time()
            browser = Browser(d, stage, "clock", epoch * 1000, seconds + warmup + 60, workdir)
            published(d, stage["arn"], 1)
            arn = compose_to_channel(d, stage)
            viewer_token = d.cli("create-participant-token", "--stage-arn", stage["arn"], "--user-id", "viewer",
                                 "--capabilities", "SUBSCRIBE")["participantToken"]["token"]
            time.sleep(warmup)
            allowances = []
            sampler = threading.Thread(target=sample_allowance, args=(d, allowances, seconds + 10), daemon=True)
            sampler.start()
            viewer = subprocess.run(
                [sys.executable, os.path.join(CLIENTS, "whep_chromium.py"), "--url",
                 f"{d.endpoint}/whep/composition/{arn.rsplit('/', 1)[1]}", "--token", viewer_token,
                 "--barcode-epoch-ms", str(epoch * 1000), "--duration", str(seconds)],
                capture_output=True, text=True, timeout=seconds + 120)
            lines = [line for line in viewer.stdout.splitlines() if line.startswith("{")]
            played = json.loads(lines[-1]) if lines else {"ok": False, "error": viewer.stderr[-500:]}
            rtmp = read_latencies(f"rtmp://127.0.0.1:{nginx.port}/live/composite0", 1280, 720, 2.0, epoch, seconds)
        finally:
            if browser:
                browser.kill()
            d.stop()
    finally:
        nginx.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    latencies = played.get("latencies") or []
    if not latencies:
        print(f"glass: the WHEP viewer read no barcode: {played}")
        return
    ordered = sorted(latencies)
    allowance = f"{statistics.median(allowances) * 1000:.0f} ms" if allowances else "not reported"
    print(f"glass: Chromium -> WHIP -> composite -> WHEP -> Chromium: median {statistics.median(ordered):.0f} ms, "
          f"p95 {ordered[int(len(ordered) * 0.95)]:.0f} ms, min {ordered[0]:.0f} ms ({len(ordered)} pictures); "
          f"the viewer's jitter buffer {played.get('jitter_buffer_ms') or 0:.0f} ms on average, first picture "
          f"{played.get('first_frame_ms') or 0:.0f} ms after its POST; publisher's jitter allowance {allowance}")
    if rtmp:
        print(f"       the same composite through nginx-rtmp to an ffmpeg reader: median {statistics.median(rtmp):.0f} ms, "
              f"p95 {sorted(rtmp)[int(len(rtmp) * 0.95)]:.0f} ms")


def read_delivery(d):
    """What the daemon counted of the publisher's media reaching its composition late: frames
    shown after their tick, sound missing, and the allowance's steps up (each a held picture and
    a gap that long)."""
    try:
        return {"late": metric(d, "stage_compositor_composition_late_video_frames"),
                "gap": metric(d, "stage_compositor_composition_audio_gap_seconds"),
                "steps": metric(d, "stage_compositor_whip_latency_steps"),
                "stepped": metric(d, "stage_compositor_whip_latency_stepped_seconds"),
                "audioTooLate": metric(d, "stage_compositor_whip_audio_packets_too_late"),
                "videoTooLate": metric(d, "stage_compositor_whip_video_packets_too_late"),
                "audioWait": metric(d, "stage_compositor_whip_audio_reorder_wait_seconds"),
                "nacks": metric(d, "stage_compositor_whip_nacks_sent"),
                "unneeded": metric(d, "stage_compositor_whip_unneeded_retransmissions"),
                "lost": metric(d, "stage_compositor_whip_packets_lost")}
    except Exception:  # noqa: BLE001 - a daemon that stopped early reports nothing
        return None


def repeated_pictures(stamps):
    """Composite frames showing the same page frame as the one before (the page's next frame was
    not there in time: a freeze), beyond what the page's own rate would give."""
    return sum(1 for (_, a), (_, b) in zip(stamps, stamps[1:]) if a == b)


def sample_allowance(d, into, seconds):
    """stage_compositor_whip_latency_seconds of the one publisher, twice a second."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            value = metric(d, "stage_compositor_whip_latency_seconds")
            if value > 0:
                into.append(value)
        except Exception:  # noqa: BLE001 - the daemon may be stopping
            return
        time.sleep(0.5)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(REPO, ".build", "release", "stage-compositor"))
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--max", type=int, default=2)
    parser.add_argument("--only", choices=["cpu", "latency", "glass"])
    parser.add_argument("--jitter-ms", type=int, default=0, help="latency: through a relay adding 0..J ms to each datagram")
    parser.add_argument("--warmup", type=int, default=35,
                        help="latency: seconds from the composition's start to the measurement (the allowance settling)")
    args = parser.parse_args()
    if not os.path.exists(args.binary):
        print(f"no {args.binary}: run `swift build -c release` first")
        return 1
    if args.only in (None, "latency"):
        latency(args.binary, args.seconds, args.jitter_ms, args.warmup)
    if args.only in (None, "glass"):
        glass(args.binary, args.seconds, args.warmup)
    if args.only in (None, "cpu"):
        cpu(args.binary, args.seconds, args.max)
    return 0


if __name__ == "__main__":
    sys.exit(main())
