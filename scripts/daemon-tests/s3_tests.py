#!/usr/bin/env python3
"""Black-box tests of recording to S3 through a storage outage: `stage-compositor serve`
records a live publisher (Debian's ffmpeg over RTMP) to a bucket on a local moto_server,
through a fault proxy that passes, refuses or blackholes connections on command. What
lands in the bucket is listed with the AWS CLI, downloaded and measured with ffprobe/ffmpeg.

Run one test: `s3_tests.py BINARY TEST_NAME` (`--list` lists them). Exit status 0 means the
test passed. Invoked from Tests/ServerTests/S3DaemonTests.swift under `swift test`.
"""
import json
import os
import re
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_tests import ENV, REGION, Failure, check, free_port, keeping_ingest, script_main, wait_state  # noqa: E402
from live_tests import (Publisher, create_ingest, create_stage, live_daemon, publish_url,  # noqa: E402
                        setup_encoder_and_storage)

BUCKET = "rec"
FPS = 30
OUTAGE_SECONDS = 60
# moto accepts any signature unless told otherwise; the daemon reads these from its environment.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDSPOOLTEST", "AWS_SECRET_ACCESS_KEY": "spool-test-secret"}


class Moto:
    """A moto_server on a free loopback port with the test bucket."""

    def __init__(self, workdir):
        self.port = free_port()
        self.log = open(os.path.join(workdir, "moto.log"), "w")
        self.process = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=self.log, stderr=self.log, start_new_session=True)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=2).read()
                break
            except OSError:
                check(self.process.poll() is None and time.time() < deadline, "moto_server did not start")
                time.sleep(0.2)
        self.aws("s3", "mb", f"s3://{BUCKET}")

    def aws(self, *args):
        result = subprocess.run(["aws", *args, "--endpoint-url", self.endpoint, "--region", REGION],
                                capture_output=True, text=True, env=dict(ENV, **CREDENTIALS), timeout=120)
        check(result.returncode == 0, f"aws {' '.join(args)}: {result.stderr}")
        return result.stdout

    def keys(self, prefix=""):
        """Every key in the bucket, as the AWS CLI lists them."""
        listed = self.aws("s3", "ls", f"s3://{BUCKET}/{prefix}", "--recursive")
        return sorted(line.split(None, 3)[3] for line in listed.splitlines() if line.strip())

    def download(self, prefix, target):
        self.aws("s3", "cp", f"s3://{BUCKET}/{prefix}", target, "--recursive", "--only-show-errors")

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class FaultProxy:
    """A TCP relay in front of moto: "pass" forwards, "refuse" resets every connection (open
    ones too) at once, "blackhole" accepts and answers nothing, holding what it was sent."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.mode = "pass"
        self.lock = threading.Lock()
        self.connections = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @staticmethod
    def _reset(sock):
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        except OSError:
            pass

    def set_mode(self, mode):
        with self.lock:
            self.mode = mode
            if mode != "pass":
                # Whatever was in flight is lost, as when a network path or an endpoint dies.
                for pair in self.connections:
                    for sock in pair:
                        self._reset(sock)
                self.connections = []

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                mode = self.mode
            if mode == "refuse":
                self._reset(client)
            elif mode == "blackhole":
                threading.Thread(target=self._swallow, args=(client,), daemon=True).start()
            else:
                try:
                    upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
                except OSError:
                    self._reset(client)
                    continue
                with self.lock:
                    self.connections.append((client, upstream))
                threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _swallow(self, client):
        """Reads and drops until the mode changes, then resets: a path that went dark."""
        while True:
            with self.lock:
                if self.mode != "blackhole" or self.closed:
                    break
            try:
                ready, _, _ = select.select([client], [], [], 0.2)
                if ready and not client.recv(65536):
                    break
            except OSError:
                break
        self._reset(client)

    def _pump(self, client, upstream):
        sockets = [client, upstream]
        try:
            while True:
                ready, _, _ = select.select(sockets, [], [], 0.5)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        raise OSError("closed")
                    (upstream if sock is client else client).sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            with self.lock:
                self.connections = [pair for pair in self.connections if pair[0] is not client]
            for sock in sockets:
                try:
                    sock.close()
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.listener.close()


def metric(d, name):
    text = urllib.request.urlopen(f"{d.endpoint}/metrics", timeout=10).read().decode()
    match = re.search(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


def s3_daemon(d, proxy):
    """The daemon's rec-bucket is the moto bucket behind the proxy."""
    extra = dict(d.config_extra)
    # Ports picked now that moto and the proxy hold theirs (a port picked earlier and
    # released could have gone to moto).
    extra["ingest"] = dict(extra["ingest"], rtmp={"port": free_port()}, rtmps={"port": free_port()})
    extra["buckets"] = {"rec-bucket": {"s3": {"endpoint": f"http://127.0.0.1:{proxy.port}", "bucket": BUCKET,
                                              "pathStyle": True, "requestTimeoutSeconds": 3, "maxAttempts": 2}}}
    extra["spool"] = {"drainTimeoutSeconds": 20}
    d.reconfigure(idle=60.0, extra=extra)
    os.environ.update(CREDENTIALS)


def recording_prefix(d, arn):
    composition = d.cli("get-composition", "--arn", arn)["composition"]
    return composition["destinations"][0]["detail"]["s3"]["recordingPrefix"]


def start_recording(d, name):
    """A stage with one live publisher and a composition recording it to the S3 bucket."""
    enc, sto = setup_encoder_and_storage(d)
    stage = create_stage(d, name)
    ingest = create_ingest(d, stage["arn"], "alice", secure=False)
    destinations = json.dumps([{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}])
    arn = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", destinations)["composition"]["arn"]
    publisher = Publisher(publish_url(stage, ingest, False), "green", 440, d.workdir, name, gop=FPS)
    check(wait_state(d, arn, {"ACTIVE", "FAILED"}, timeout=30) == "ACTIVE", "the publisher starts the composition")
    return arn, publisher


def wait_for(what, condition, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise Failure(f"{what} within {timeout} s")


def stored_segments(moto, prefix):
    return [k for k in moto.keys(prefix) if k.endswith(".ts")]


def check_stored_recording(moto, prefix, status_file, workdir, expected_segments=None):
    """Downloads the recording: final VOD playlist listing every stored segment (and at least
    `expected_segments`), metadata, a full decode. Returns (video frames, duration)."""
    keys = moto.keys(prefix)
    check(f"{prefix}/events/recording-started.json" in keys, f"no recording-started.json: {keys[:20]}")
    check(f"{prefix}/events/{status_file}" in keys, f"no {status_file}: {[k for k in keys if '/events/' in k]}")
    local = tempfile.mkdtemp(prefix="s3-download-", dir=workdir)
    moto.download(prefix, local)
    with open(os.path.join(local, "events", status_file)) as f:
        metadata = json.load(f)
    renditions = [r for r in os.listdir(os.path.join(local, "media", "hls"))
                  if os.path.isdir(os.path.join(local, "media", "hls", r))]
    check(len(renditions) == 1, f"renditions: {renditions}")
    rendition = os.path.join(local, "media", "hls", renditions[0])
    with open(os.path.join(rendition, "playlist.m3u8")) as f:
        playlist = f.read()
    check("#EXT-X-PLAYLIST-TYPE:VOD" in playlist and playlist.rstrip().endswith("#EXT-X-ENDLIST"),
          f"playlist not final:\n{playlist}")
    listed = re.findall(r"^(\S+\.ts)$", playlist, re.M)
    in_bucket = sorted(os.path.basename(k) for k in keys if k.endswith(".ts"))
    check(sorted(listed) == in_bucket, f"the playlist lists exactly the stored segments: {listed} vs {in_bucket}")
    names = [int(n.split(".")[0]) for n in listed]
    check(names == list(range(names[0], names[0] + len(names))), f"no segment missing: {listed}")
    if expected_segments is not None:
        missing = sorted(set(expected_segments) - set(listed))
        check(not missing, f"segments written before the kill are missing: {missing}")
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                            "stream=nb_read_packets:format=duration", "-of", "json",
                            os.path.join(rendition, "playlist.m3u8")], capture_output=True, text=True, timeout=120)
    check(probe.returncode == 0, f"ffprobe: {probe.stderr}")
    info = json.loads(probe.stdout)
    frames = int(info["streams"][0]["nb_read_packets"])
    duration = float(info["format"]["duration"])
    decode = subprocess.run(["ffmpeg", "-v", "error", "-i", os.path.join(rendition, "playlist.m3u8"), "-f", "null", "-"],
                            capture_output=True, text=True, timeout=300)
    check(decode.returncode == 0 and not decode.stderr.strip(), f"decode errors: {decode.stderr[:2000]}")
    return metadata, frames, duration, listed


# --------------------------------------------------------------------------------------------

def test_outage_delays_but_loses_nothing(d):
    """The bucket is unreachable (connections refused) for 60 s mid-recording: the composition
    goes on into the spool, which grows; after the outage everything is uploaded, in order,
    and the recording in the bucket is whole."""
    moto = Moto(d.workdir)
    proxy = FaultProxy(moto.port)
    publisher = None
    try:
        s3_daemon(d, proxy)
        d.start()
        arn, publisher = start_recording(d, "outage")
        prefix = recording_prefix(d, arn)
        wait_for("two segments stored before the outage", lambda: len(stored_segments(moto, prefix)) >= 2, 40)
        proxy.set_mode("refuse")
        outage_started = time.time()
        stored_at_start = len(stored_segments(moto, prefix))
        time.sleep(10)
        early = (metric(d, "stage_compositor_spool_objects"), metric(d, "stage_compositor_spool_bytes"))
        check(early[0] > 0 and early[1] > 0, f"the spool holds what cannot be stored: {early}")
        frames_early = metric(d, "stage_compositor_frames_composed_total")
        time.sleep(max(0.0, OUTAGE_SECONDS - 5 - (time.time() - outage_started)))
        late = (metric(d, "stage_compositor_spool_objects"), metric(d, "stage_compositor_spool_bytes"))
        frames_late = metric(d, "stage_compositor_frames_composed_total")
        check(late[1] > early[1] and late[0] >= early[0], f"the spool grows during the outage: {early} then {late}")
        # The composition never waits for the bucket: frames keep coming at the output rate.
        rate = (frames_late - frames_early) / (OUTAGE_SECONDS - 15)
        check(rate > FPS * 0.9, f"composition rate during the outage: {rate:.1f} frames/s")
        check(d.cli("get-composition", "--arn", arn)["composition"]["state"] == "ACTIVE", "still ACTIVE in the outage")
        check(len(stored_segments(moto, prefix)) == stored_at_start, "nothing reaches the bucket during the outage")
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.time() - outage_started)))
        proxy.set_mode("pass")
        wait_for("the spool drains after the outage", lambda: metric(d, "stage_compositor_spool_objects") == 0, 90)
        time.sleep(4)  # a couple of segments more after the recovery
        d.cli("stop-composition", "--arn", arn)
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "stopped")
        composed = metric(d, "stage_compositor_frames_composed_total")
        check(metric(d, "stage_compositor_spool_objects") == 0 and metric(d, "stage_compositor_spool_bytes") == 0,
              "the spool metric returns to 0")
        check(not os.listdir(os.path.join(d.workdir, "state", "spool")) if os.path.isdir(
            os.path.join(d.workdir, "state", "spool")) else True, "the spool directory is emptied")
        metadata, frames, duration, listed = check_stored_recording(moto, prefix, "recording-ended.json", d.workdir)
        check(metadata["recording_status"] == "RECORDING_ENDED", f"metadata: {metadata}")
        check(abs(frames - composed) <= 1, f"every composed frame is in the bucket: {frames} of {composed}")
        check(abs(duration - composed / FPS) <= 1.0 / FPS + 1e-3,
              f"duration {duration:.3f} s vs {composed} frames composed ({composed / FPS:.3f} s)")
        check(duration > OUTAGE_SECONDS, f"the recording spans the outage: {duration:.1f} s")
        print(f"outage: {OUTAGE_SECONDS} s, spool peaked at >= {int(late[0])} objects / {int(late[1])} bytes, "
              f"recording {duration:.2f} s in {len(listed)} segments, {frames} frames of {composed} composed")
        # The event sinks write asynchronously: Session End may land a moment after STOPPED.
        names = wait_for("Session End", lambda: (lambda n: n if n and n[-1] == "Session End" else None)(
            [e["detail"]["event_name"] for e in d.events() if e["resources"] == [arn]]), 15)
        check("Destination Failure" not in names, f"events: {names}")
        check(d.stop() == 0, "exit status")
    finally:
        if publisher:
            publisher.kill()
        proxy.close()
        moto.stop()


def test_individual_recording_through_an_outage(d):
    """A publisher recorded individually (2 s segments) to the S3 bucket, which refuses
    connections for 15 s in the middle: the segments wait in the spool, and after the outage
    the recording in the bucket is whole — a VOD fMP4 playlist listing every stored segment,
    recording-ended.json, playable for the publishing time."""
    moto = Moto(d.workdir)
    proxy = FaultProxy(moto.port)
    publisher = None
    try:
        s3_daemon(d, proxy)
        d.start()
        _, sto = setup_encoder_and_storage(d)
        recording = {"storageConfigurationArn": sto, "mediaTypes": ["AUDIO_VIDEO"], "hlsConfiguration": {"targetSegmentDurationSeconds": 2},
                     "thumbnailConfiguration": {"recordingMode": "DISABLED"}}
        stage = d.cli("create-stage", "--name", "s3rec", "--auto-participant-recording-configuration", json.dumps(recording))["stage"]
        ingest = create_ingest(d, stage["arn"], "alice", secure=False)
        publisher = Publisher(publish_url(stage, ingest, False), "green", 440, d.workdir, "s3rec", gop=FPS)
        started = time.time()
        segments = lambda: [k for k in moto.keys("") if k.endswith(".mp4") and "/media/hls/high/" in k and not k.endswith("init.mp4")]
        wait_for("two segments stored before the outage", lambda: len(segments()) >= 2, 40)
        proxy.set_mode("refuse")
        time.sleep(15)
        spooled = metric(d, "stage_compositor_spool_objects")
        check(spooled > 0, f"the spool holds the segments during the outage: {spooled}")
        proxy.set_mode("pass")
        time.sleep(4)
        publisher.stop()
        published = time.time() - started
        wait_for("recording-ended.json in the bucket",
                 lambda: [k for k in moto.keys("") if k.endswith("events/recording-ended.json")], 60)
        ended_key = [k for k in moto.keys("") if k.endswith("events/recording-ended.json")][0]
        prefix = ended_key.rsplit("/events/", 1)[0]
        local = tempfile.mkdtemp(prefix="s3-download-", dir=d.workdir)
        moto.download(prefix, local)
        with open(os.path.join(local, "media", "hls", "high", "playlist.m3u8")) as f:
            playlist = f.read()
        listed = re.findall(r"^(\d+\.mp4)$", playlist, re.M)
        stored = sorted((os.path.basename(k) for k in moto.keys(prefix) if re.search(r"/\d+\.mp4$", k)), key=lambda n: int(n[:-4]))
        check("#EXT-X-PLAYLIST-TYPE:VOD" in playlist and listed == stored and listed == [f"{i}.mp4" for i in range(1, len(listed) + 1)],
              f"the playlist lists every stored segment: {listed} vs {stored}")
        duration = float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                                         os.path.join(local, "media", "hls", "high", "playlist.m3u8")],
                                        capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[-1])
        print(f"individual recording through a 15 s outage: spool held {int(spooled)} objects; {len(listed)} segments, "
              f"{duration:.1f} s for {published:.1f} s published")
        check(abs(duration - published) <= 3.0, f"recording {duration:.1f} s for {published:.1f} s published")
        check(d.stop() == 0, "exit status")
    finally:
        if publisher:
            publisher.kill()
        proxy.close()
        moto.stop()


def spooled_keys(d):
    """The keys waiting in the daemon's spool, from the files on disk."""
    root = os.path.join(d.workdir, "state", "spool")
    keys = []
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".obj") and not name.startswith("."):
                with open(os.path.join(directory, name), "rb") as f:
                    keys.append(json.loads(f.readline())["key"])
    return keys


def test_kill9_during_outage_uploads_the_spool_after_restart(d):
    """The bucket goes dark (connections hang), the daemon is killed with -9 while segments
    wait in the spool, restarts while the bucket is still dark, and once the bucket is back
    uploads the spool and finishes the recording up to the last segment written."""
    moto = Moto(d.workdir)
    proxy = FaultProxy(moto.port)
    publisher = None
    try:
        s3_daemon(d, proxy)
        d.start()
        arn, publisher = start_recording(d, "crash")
        prefix = recording_prefix(d, arn)
        wait_for("two segments stored before the outage", lambda: len(stored_segments(moto, prefix)) >= 2, 40)
        proxy.set_mode("blackhole")
        outage_started = time.time()
        time.sleep(20)
        check(metric(d, "stage_compositor_spool_objects") > 0, "segments wait in the spool")
        d.process.kill()  # SIGKILL during the outage
        d.process.wait()
        publisher.kill()
        waiting = spooled_keys(d)
        written = sorted({os.path.basename(k) for k in waiting if k.endswith(".ts")}
                         | {os.path.basename(k) for k in stored_segments(moto, prefix)})
        check(len([k for k in waiting if k.endswith(".ts")]) >= 3, f"segments spooled before the kill: {waiting}")
        time.sleep(2)
        d.start()  # the bucket is still dark
        after = d.cli("get-composition", "--arn", arn)["composition"]
        check(after["state"] == "FAILED", f"after the restart: {after['state']}")
        time.sleep(5)
        check(metric(d, "stage_compositor_spool_objects") >= len(waiting), "the spool is resumed, not dropped")
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.time() - outage_started)))
        proxy.set_mode("pass")
        wait_for("the spool drains after the outage", lambda: metric(d, "stage_compositor_spool_objects") == 0, 90)
        wait_for("the recording is finished after the spool drains",
                 lambda: f"{prefix}/events/recording-failed.json" in moto.keys(prefix), 60)
        metadata, frames, duration, listed = check_stored_recording(moto, prefix, "recording-failed.json", d.workdir,
                                                                    expected_segments=written)
        check(metadata["recording_status"] == "RECORDING_ENDED_WITH_FAILURE", f"metadata: {metadata}")
        check(duration > 15, f"the recording reaches the kill: {duration:.1f} s")
        print(f"kill -9 in a {OUTAGE_SECONDS} s outage: {len(waiting)} objects spooled at the kill, recording "
              f"{duration:.2f} s in {len(listed)} segments after the restart")
        check(d.stop() == 0, "exit status")
    finally:
        if publisher:
            publisher.kill()
        proxy.close()
        moto.stop()


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def main():
    return script_main(TESTS, __doc__, lambda binary, name, workdir: keeping_ingest(live_daemon(binary, workdir)))


if __name__ == "__main__":
    sys.exit(main())
