#!/usr/bin/env python3
"""Live composition benchmark (release build): real RTMP publishers, real daemon.

  density   N compositions at once, each of its own stage with 4 x 1280x720@30 publishers
            (ffmpeg pushing pre-encoded camera-like files with -re -c copy, so they cost
            almost nothing; LIVE_BENCH_CONTENT=flat: test patterns), each composed to 1280x720@30 at 2.5 Mbps and pushed to nginx-rtmp.
            For N = 1, 2, ... it reports the daemon's CPU seconds per output second per
            composition, frames dropped (lagged) and RSS, and stops at the first N that drops.
  latency   glass-to-glass: a publisher whose frames carry the wall-clock time they were
            made (a barcode), encoded live; the composite is read back from nginx and the
            barcode decoded on arrival. The same publisher pushed straight to nginx gives the
            baseline; the difference is what the compositor adds.
  memory    RSS of one composition after 1 and N minutes (--long N).
  recording 12 publishers (720p30 2 Mbit/s, -c copy) on one stage without a composition, for
            --duration s, with and without individual participant recording: the daemon's CPU
            seconds per second, its RSS, and what the recordings stored.

Usage: benchmarks/live_bench.py [--binary PATH] [--duration S] [--max N] [--long MINUTES] [--only density|latency|memory|recording]
"""
import argparse
import json
import os
import shutil
import signal
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
from daemon_tests import Daemon, NginxRTMP, free_port, wait_state  # noqa: E402

WORK = os.path.join(HERE, ".work", "live")
TICKS = os.sysconf("SC_CLK_TCK")


def prepare_inputs(seconds=60, content=None):
    """Four 720p30 H.264/AAC FLV files with distinct pictures and tones, 2 s GOPs, no B-frames:
    camera-like by default (scripts/make-fixture.sh --content camera: a photograph each, panned
    and zoomed slowly, with sensor noise, at a webcam's 2.5 Mbit/s), or the flat test patterns
    of earlier runs (--content flat, LIVE_BENCH_CONTENT=flat)."""
    content = content or os.environ.get("LIVE_BENCH_CONTENT", "camera")
    os.makedirs(WORK, exist_ok=True)
    if content == "camera":
        directory = os.path.join(WORK, f"camera-4x720p-{seconds}")
        if not os.path.exists(os.path.join(directory, "manifest.json")):
            subprocess.run([os.path.join(REPO, "scripts", "make-fixture.sh"), "--content", "camera", "--out", directory,
                            "--participants", "4", "--size", "1280x720", "--duration", str(seconds), "--container", "flv"],
                           check=True, stdout=subprocess.DEVNULL)
        files = sorted(os.path.join(root, name) for root, _, names in os.walk(directory) for name in names if name.endswith(".flv"))
        if len(files) != 4:
            raise RuntimeError(f"expected 4 FLV files in {directory}, found {files}")
        return files
    sources = ["testsrc2=size=1280x720:rate=30", "smptehdbars=size=1280x720:rate=30",
               "testsrc=size=1280x720:rate=30", "rgbtestsrc=size=1280x720:rate=30"]
    files = []
    for index, source in enumerate(sources):
        path = os.path.join(WORK, f"input{index}-{seconds}.flv")
        if not os.path.exists(path):
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-f", "lavfi",
                            "-i", f"sine=frequency={440 + 110 * index}:sample_rate=48000", "-t", str(seconds),
                            "-c:v", "libx264", "-preset", "veryfast", "-g", "60", "-bf", "0", "-b:v", "2M",
                            "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", "-f", "flv", path], check=True)
        files.append(path)
    return files


class Publishers:
    """ffmpeg -re -stream_loop -1 -c copy: a publisher that costs almost nothing."""

    def __init__(self):
        self.processes = []

    def push(self, path, url):
        self.processes.append(subprocess.Popen(
            ["ffmpeg", "-v", "error", "-nostdin", "-re", "-stream_loop", "-1", "-i", path, "-c", "copy", "-f", "flv", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))

    def stop(self):
        for p in self.processes:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in self.processes:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.processes = []


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def metric(d, name):
    text = urllib.request.urlopen(f"{d.endpoint}/metrics", timeout=10).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def start_daemon(workdir, binary, compositions, nginx_port=1):
    """A daemon whose channels bench0000000... push to nginx (port 1: nowhere)."""
    channels = [{"arn": f"arn:aws:ivs:us-east-1:123456789012:channel/bench{i:07d}",
                 "ingestEndpoint": f"rtmp://127.0.0.1:{nginx_port}/live", "streamKey": f"composite{i}"}
                for i in range(compositions)]
    return Daemon(binary, workdir, idle=30, quotas={"concurrentCompositions": max(5, compositions)}, channels=channels,
                  extra={"ingest": {"rtmp": {"port": free_port()}, "rtmps": {"port": free_port()}},
                         "encoderPreset": "veryfast", "logLevel": os.environ.get("BENCH_LOG_LEVEL", "notice")})


def setup_stage(d, name, publishers=4):
    stage = d.cli("create-stage", "--name", name)["stage"]
    keys = [d.cli("create-ingest-configuration", "--stage-arn", stage["arn"], "--user-id", f"{name}-{i}",
                  "--ingest-protocol", "RTMP", "--insecure-ingest")["ingestConfiguration"]["streamKey"]
            for i in range(publishers)]
    return stage, keys


def density(binary, duration, maximum, start=1, keep_going=False):
    inputs = prepare_inputs()
    print(f"density: N live compositions of 4 x 1280x720@30 -> 1280x720@30 2.5 Mbps (veryfast), {duration} s each")
    results = []
    for n in range(start, maximum + 1):
        workdir = tempfile.mkdtemp(prefix="live-bench-")
        nginx = NginxRTMP(workdir)
        d = start_daemon(workdir, binary, n, nginx.port)
        publishers = Publishers()
        try:
            d.start()
            enc = d.cli("create-encoder-configuration", "--name", "hd", "--video",
                        "width=1280,height=720,framerate=30,bitrate=2500000")["encoderConfiguration"]["arn"]
            arns = []
            for c in range(n):
                stage, keys = setup_stage(d, f"s{c}")
                for key, path in zip(keys, inputs):
                    publishers.push(path, stage["endpoints"]["rtmp"] + key)
                time.sleep(1)
                arns.append(d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
                    [{"channel": {"channelArn": f"arn:aws:ivs:us-east-1:123456789012:channel/bench{c:07d}",
                                  "encoderConfigurationArn": enc}}]))["composition"]["arn"])
            for arn in arns:
                wait_state(d, arn, {"ACTIVE"}, timeout=30)
            time.sleep(5)  # warm-up: every publisher joined, encoders running
            pid = d.process.pid
            cpu0, t0 = cpu_seconds(pid), time.time()
            composed0, dropped0 = metric(d, "stage_compositor_frames_composed_total"), metric(d, "stage_compositor_frames_dropped_total")
            peak = 0.0
            while time.time() - t0 < duration:
                time.sleep(1)
                peak = max(peak, rss_mib(pid))
            cpu1, t1 = cpu_seconds(pid), time.time()
            composed = metric(d, "stage_compositor_frames_composed_total") - composed0
            dropped = metric(d, "stage_compositor_frames_dropped_total") - dropped0
            wall = t1 - t0
            per_composition = (cpu1 - cpu0) / wall / n
            results.append((n, per_composition, composed, dropped, peak))
            print(f"  N={n}: CPU {per_composition:.3f} s per output s per composition ({(cpu1 - cpu0) / wall:.2f} cores in all), "
                  f"{int(composed)} frames composed, {int(dropped)} dropped, peak RSS {peak:.0f} MiB")
            for arn in arns:
                d.cli("stop-composition", "--arn", arn)
        finally:
            publishers.stop()
            d.stop()
            nginx.stop()
            if os.environ.get("KEEP_BENCH_DIRS") == "1":
                print(f"  (kept {workdir})")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
        if dropped > 0 and not keep_going:
            break
    clean = [r for r in results if r[3] == 0]
    print(f"  => {clean[-1][0] if clean else 0} concurrent live compositions with 0 dropped frames on this machine "
          f"({os.cpu_count()} cores)")
    return results


# ---- glass-to-glass latency -----------------------------------------------------------------

W, H = 640, 360
BITS = 40          # milliseconds since the run started, 40 bits
BLOCK = 16         # a bit is a 16x16 block: readable after scaling the tile down and H.264


def barcode_frame(ms):
    """A yuv420p frame: grey, with `ms` as a row of black/white blocks at the top left."""
    import numpy
    y = numpy.full((H, W), 128, dtype=numpy.uint8)
    for bit in range(BITS):
        value = 235 if (ms >> (BITS - 1 - bit)) & 1 else 16
        row, col = divmod(bit, W // BLOCK // 2)
        y[8 + row * BLOCK:8 + (row + 1) * BLOCK, 8 + col * BLOCK:8 + (col + 1) * BLOCK] = value
    uv = numpy.full((H // 2, W // 2), 128, dtype=numpy.uint8)
    return y.tobytes() + uv.tobytes() + uv.tobytes()


def read_barcode(y, width, height, scale):
    """Decodes the barcode from a luma plane where the publisher's frame was scaled by `scale`."""
    value = 0
    for bit in range(BITS):
        row, col = divmod(bit, W // BLOCK // 2)
        cx = int((8 + col * BLOCK + BLOCK / 2) * scale)
        cy = int((8 + row * BLOCK + BLOCK / 2) * scale)
        value = (value << 1) | (1 if y[cy * width + cx] > 128 else 0)
    return value


class BarcodePublisher:
    """Frames made now, stamped with now, encoded live (x264 zerolatency) and pushed."""

    def __init__(self, url, epoch):
        self.epoch = epoch
        self.process = subprocess.Popen(
            ["ffmpeg", "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{W}x{H}", "-r", "30", "-i", "-",
             "-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo",
             "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "30", "-bf", "0", "-b:v", "1500k",
             "-c:a", "aac", "-b:a", "64k", "-f", "flv", url],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        start = time.time()
        frame = 0
        while self.running:
            due = start + frame / 30
            delay = due - time.time()
            if delay > 0:
                time.sleep(delay)
            try:
                self.process.stdin.write(barcode_frame(int((time.time() - self.epoch) * 1000)))
                self.process.stdin.flush()
            except (BrokenPipeError, OSError):
                return
            frame += 1

    def stop(self):
        self.running = False
        self.thread.join(timeout=5)
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self.process.terminate()
        self.process.wait(timeout=10)


def read_latencies(url, width, height, scale, epoch, seconds, with_stamps=False):
    """Reads `url`, decodes frames as they arrive, returns (arrival - stamp) in ms per frame
    (`with_stamps`: (latency, stamp) pairs)."""
    reader = subprocess.Popen(["ffmpeg", "-v", "error", "-fflags", "nobuffer", "-flags", "low_delay", "-i", url,
                               "-f", "rawvideo", "-pix_fmt", "gray", "-"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    size = width * height
    latencies = []
    deadline = time.time() + seconds
    try:
        while time.time() < deadline:
            data = reader.stdout.read(size)
            if len(data) < size:
                break
            now_ms = int((time.time() - epoch) * 1000)
            stamp = read_barcode(data, width, height, scale)
            if 0 < now_ms - stamp < 10_000:
                latencies.append((now_ms - stamp, stamp) if with_stamps else now_ms - stamp)
    finally:
        reader.kill()
        reader.wait()
    return latencies


def latency(binary, seconds):
    print(f"latency: a live 640x360 publisher stamped with its capture time, {seconds} s per measurement")
    workdir = tempfile.mkdtemp(prefix="live-latency-")
    nginx = NginxRTMP(workdir)
    epoch = time.time()
    try:
        # Baseline: the publisher straight to nginx, read back.
        publisher = BarcodePublisher(f"rtmp://127.0.0.1:{nginx.port}/live/direct", epoch)
        time.sleep(2)
        direct = read_latencies(f"rtmp://127.0.0.1:{nginx.port}/live/direct", W, H, 1.0, epoch, seconds)
        publisher.stop()
        # Through the compositor: alone on its stage, the tile is the whole 1280x720 canvas.
        d = start_daemon(workdir, binary, 1, nginx.port)
        d.start()
        try:
            enc = d.cli("create-encoder-configuration", "--name", "hd", "--video",
                        "width=1280,height=720,framerate=30,bitrate=2500000")["encoderConfiguration"]["arn"]
            stage, keys = setup_stage(d, "latency", publishers=1)
            publisher = BarcodePublisher(stage["endpoints"]["rtmp"] + keys[0], epoch)
            time.sleep(1)
            arn = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
                [{"channel": {"channelArn": "arn:aws:ivs:us-east-1:123456789012:channel/bench0000000",
                              "encoderConfigurationArn": enc}}]))["composition"]["arn"]
            wait_state(d, arn, {"ACTIVE"})
            time.sleep(3)
            composed = read_latencies(f"rtmp://127.0.0.1:{nginx.port}/live/composite0", 1280, 720, 2.0, epoch, seconds)
            publisher.stop()
            latency_ms = d.config["ingest"].get("latencyMs", 200)
        finally:
            d.stop()
    finally:
        nginx.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if not direct or not composed:
        print(f"  could not read the barcode (direct {len(direct)} frames, composed {len(composed)} frames)")
        return
    d_med, c_med = statistics.median(direct), statistics.median(composed)
    c_p95 = sorted(composed)[int(len(composed) * 0.95)]
    print(f"  publisher -> nginx -> reader:               median {d_med:.0f} ms ({len(direct)} frames)")
    print(f"  publisher -> compositor -> nginx -> reader: median {c_med:.0f} ms, p95 {c_p95:.0f} ms ({len(composed)} frames)")
    print(f"  => added by the compositor: {c_med - d_med:.0f} ms (of which {latency_ms} ms is the configured jitter allowance)")


def memory(binary, minutes):
    inputs = prepare_inputs()
    print(f"memory: one live composition (4 x 720p30 publishers) for {minutes} min")
    workdir = tempfile.mkdtemp(prefix="live-memory-")
    d = start_daemon(workdir, binary, 1)
    publishers = Publishers()
    try:
        d.start()
        enc = d.cli("create-encoder-configuration", "--name", "hd", "--video",
                    "width=1280,height=720,framerate=30,bitrate=2500000")["encoderConfiguration"]["arn"]
        sto = d.cli("create-storage-configuration", "--name", "local", "--s3", "bucketName=rec-bucket")["storageConfiguration"]["arn"]
        stage, keys = setup_stage(d, "memory")
        for key, path in zip(keys, inputs):
            publishers.push(path, stage["endpoints"]["rtmp"] + key)
        time.sleep(1)
        arn = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]["arn"]
        wait_state(d, arn, {"ACTIVE"})
        start = time.time()
        samples = {}
        for mark in sorted({1, minutes}):
            while time.time() - start < mark * 60:
                time.sleep(5)
            samples[mark] = rss_mib(d.process.pid)
            print(f"  RSS after {mark} min: {samples[mark]:.0f} MiB")
        dropped = metric(d, "stage_compositor_frames_dropped_total")
        print(f"  frames dropped over the run: {int(dropped)}")
        d.cli("stop-composition", "--arn", arn)
    finally:
        publishers.stop()
        d.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def recording(binary, duration, publishers_count=12):
    inputs = prepare_inputs()
    print(f"recording: {publishers_count} publishers (720p30, 2 Mbit/s, -c copy) on one stage, {duration} s, "
          "without and with individual recording")
    for recorded in (False, True):
        workdir = tempfile.mkdtemp(prefix="recording-bench-")
        d = start_daemon(workdir, binary, 0)
        publishers = Publishers()
        try:
            d.start()
            args = ["create-stage", "--name", "bench"]
            if recorded:
                storage = d.cli("create-storage-configuration", "--name", "local",
                                "--s3", "bucketName=rec-bucket")["storageConfiguration"]["arn"]
                args += ["--auto-participant-recording-configuration", json.dumps({
                    "storageConfigurationArn": storage, "mediaTypes": ["AUDIO_VIDEO"],
                    "thumbnailConfiguration": {"recordingMode": "INTERVAL", "storage": ["SEQUENTIAL", "LATEST"],
                                               "targetIntervalSeconds": 10}})]
            stage = d.cli(*args)["stage"]
            keys = [d.cli("create-ingest-configuration", "--stage-arn", stage["arn"], "--user-id", f"p{i}", "--ingest-protocol",
                          "RTMP", "--insecure-ingest")["ingestConfiguration"]["streamKey"] for i in range(publishers_count)]
            for index, key in enumerate(keys):
                publishers.push(inputs[index % len(inputs)], stage["endpoints"]["rtmp"] + key)
            time.sleep(8)
            cpu0, t0, peak = cpu_seconds(d.process.pid), time.time(), 0.0
            while time.time() - t0 < duration:
                time.sleep(1)
                peak = max(peak, rss_mib(d.process.pid))
            cpu = (cpu_seconds(d.process.pid) - cpu0) / (time.time() - t0)
            publishers.stop()
            time.sleep(3)
            stored = 0
            for root, _, files in os.walk(d.recordings):
                stored += sum(os.path.getsize(os.path.join(root, f)) for f in files)
            label = "recorded individually" if recorded else "not recorded"
            print(f"  {label:>22}: daemon CPU {cpu:.3f} s/s ({cpu / publishers_count * 1000:.1f} ms per publisher-second), "
                  f"peak RSS {peak:.0f} MiB, stored {stored / 1e6:.1f} MB")
        finally:
            publishers.stop()
            d.stop()
            shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(REPO, ".build/release/stage-compositor"))
    parser.add_argument("--duration", type=int, default=60)
    parser.add_argument("--max", type=int, default=8)
    parser.add_argument("--long", type=int, default=30)
    parser.add_argument("--only", choices=["density", "latency", "memory", "recording"])
    parser.add_argument("--from", dest="start", type=int, default=1, help="first N of the density run")
    parser.add_argument("--keep-going", action="store_true", help="density: go on past the first N that drops")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"{args.binary} not found: run `swift build -c release`")
    if args.only in (None, "density"):
        density(args.binary, args.duration, args.max, args.start, args.keep_going)
    if args.only in (None, "latency"):
        latency(args.binary, min(args.duration, 30))
    if args.only in (None, "memory"):
        memory(args.binary, args.long)
    if args.only in (None, "recording"):
        recording(args.binary, min(args.duration, 60))


if __name__ == "__main__":
    main()
