#!/usr/bin/env python3
"""Black-box tests of `stage-compositor serve`, driven with the AWS CLI and boto3.

Each test starts the real daemon on a free loopback port with a temporary config and state
directory, and stops it before returning. Run one test: `daemon_tests.py BINARY TEST_NAME`
(`daemon_tests.py BINARY --list` lists them). Exit status 0 means the test passed.
Invoked from Tests/ServerTests/DaemonProcessTests.swift under `swift test`.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REGION, ACCOUNT = "us-east-1", "123456789012"
STAGE_ARN = f"arn:aws:ivs:{REGION}:{ACCOUNT}:stage/twoPeople"
LONG_STAGE_ARN = f"arn:aws:ivs:{REGION}:{ACCOUNT}:stage/fourGrid"
CHANNEL_ARN = f"arn:aws:ivs:{REGION}:{ACCOUNT}:channel/chanAAAAAAAA"
# The seed's layouts (User Guide, "Server-Side Composition", CLI examples).
GRID_LAYOUT = {"grid": {"featuredParticipantAttribute": "isFeatured", "videoFillMode": "COVER", "gridGap": 0}}
PIP_LAYOUT = {"pip": {"pipParticipantAttribute": "isPip", "pipOffset": 10, "pipPosition": "TOP_RIGHT"}}
ENV = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="secret", AWS_DEFAULT_REGION=REGION,
           AWS_PAGER="", AWS_EC2_METADATA_DISABLED="true")
for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
    ENV.pop(key, None)


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, binary, workdir, idle=2.0, quotas=None, retention=300.0, auth=None, channels=None, extra=None):
        self.binary, self.workdir = binary, workdir
        self.port = free_port()
        self.config_path = os.path.join(workdir, "config.json")
        self.stderr_path = os.path.join(workdir, "serve.err")
        config = {
            "region": REGION, "account": ACCOUNT, "listen": {"host": "127.0.0.1", "port": self.port},
            "stateDirectory": "state",
            "stageSourceRoots": [os.path.join(REPO, "fixtures")],
            "stages": [{"id": "twoPeople", "name": "two", "source": os.path.join(REPO, "fixtures/two-people")},
                       {"id": "fourGrid", "name": "four", "source": os.path.join(REPO, "fixtures/four-grid")}],
            # Port 1 on loopback: nothing listens there, so pushing to this channel is refused.
            "channels": channels or [{"arn": CHANNEL_ARN, "ingestEndpoint": "rtmp://127.0.0.1:1/app/", "streamKey": "sk_test",
                                      "reconnect": {"maxRetries": 1, "baseIntervalSeconds": 0.2}}],
            "buckets": {"rec-bucket": "recordings"},
            "quotas": quotas or {},
            "lifecycle": {"idleTimeoutSeconds": idle, "retentionSeconds": retention, "shutdownGraceSeconds": 20},
            "events": {"stdout": False},
            "encoderPreset": "ultrafast",
            "logLevel": "info",
            # Live ingest on free ports, so daemons never collide with each other or a local RTMP server.
            "ingest": {"rtmp": {"port": free_port()}, "rtmps": {"port": free_port()}},
        }
        if auth is not None:
            config["auth"] = auth
        # The same tests on the PostgreSQL store (PostgresDaemonTests gives each its own database).
        if os.environ.get("STAGE_COMPOSITOR_TEST_DATABASE_URL"):
            config["database"] = {"url": os.environ["STAGE_COMPOSITOR_TEST_DATABASE_URL"]}
        config.update(extra or {})
        self.config = config
        with open(self.config_path, "w") as f:
            json.dump(config, f, indent=2)
        self.process = None

    def reconfigure(self, **options):
        """Rewrites the configuration with other options (before start)."""
        self.__init__(self.binary, self.workdir, **options)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def events_path(self):
        return os.path.join(self.workdir, "state", "events.jsonl")

    @property
    def recordings(self):
        return os.path.join(self.workdir, "recordings")

    def start(self):
        self.stderr = open(self.stderr_path, "a")
        self.process = subprocess.Popen([self.binary, "serve", "--config", self.config_path],
                                        stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.time() + 30
        while time.time() < deadline:
            check(self.process.poll() is None, f"daemon exited early:\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.1)
        raise Failure("daemon did not start listening")

    def stop(self, sig=signal.SIGTERM, timeout=40):
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise Failure(f"daemon did not exit within {timeout}s after {sig}")
        return self.process.returncode if self.process else None

    def log(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def events(self):
        if not os.path.exists(self.events_path):
            return []
        with open(self.events_path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def cli(self, *args, expect_error=None, env=None):
        """Runs `aws ivs-realtime ARGS`; returns parsed JSON, or the error text when expect_error is given."""
        cmd = ["aws", "ivs-realtime", *args, "--endpoint-url", self.endpoint, "--region", REGION, "--output", "json"]
        result = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, **(env or {})), timeout=60)
        if expect_error:
            check(result.returncode != 0, f"{args[0]} should fail with {expect_error}, got {result.stdout}")
            check(f"({expect_error})" in result.stderr, f"{args[0]}: expected {expect_error}, got: {result.stderr}")
            return result.stderr
        check(result.returncode == 0, f"aws {' '.join(args)} failed: {result.stderr}\n{self.log()}")
        return json.loads(result.stdout) if result.stdout.strip() else {}

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("ivs-realtime", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
                            config=Config(retries={"max_attempts": 1}, parameter_validation=False))


def setup_configurations(d, width=320, height=180, framerate=15):
    enc = d.cli("create-encoder-configuration", "--name", "small",
                "--video", f"width={width},height={height},framerate={framerate},bitrate=300000")["encoderConfiguration"]
    sto = d.cli("create-storage-configuration", "--name", "local", "--s3", "bucketName=rec-bucket")["storageConfiguration"]
    return enc["arn"], sto["arn"]


def s3_destinations(enc, sto):
    return json.dumps([{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}])


def wait_state(d, arn, states, timeout=30, use_list=False):
    deadline = time.time() + timeout
    state = None
    while time.time() < deadline:
        if use_list:
            listed = d.cli("list-compositions", "--filter-by-stage-arn", STAGE_ARN)["compositions"]
            matching = [c for c in listed if c["arn"] == arn]
            state = matching[0]["state"] if matching else None
        else:
            state = d.cli("get-composition", "--arn", arn)["composition"]["state"]
        if state in states:
            return state
        time.sleep(0.3)
    raise Failure(f"{arn} did not reach {states} within {timeout}s (last {state})\n{d.log()}")


def wait_destination(d, arn, kind, states, timeout=30):
    """The composition's `kind` ("channel" or "s3") destination once it is in one of `states`."""
    deadline = time.time() + timeout
    destination = None
    while time.time() < deadline:
        destinations = d.cli("get-composition", "--arn", arn)["composition"]["destinations"]
        destination = next(x for x in destinations if kind in x["configuration"])
        if destination["state"] in states:
            return destination
        time.sleep(0.3)
    raise Failure(f"{kind} destination of {arn} did not reach {states} within {timeout}s (last {destination})\n{d.log()}")


def check_events(d, arn, stage_arn, names):
    events = [e for e in d.events() if e["resources"] == [arn]]
    got = [e["detail"]["event_name"] for e in events]
    check(got == names, f"events for {arn}: expected {names}, got {got}")
    destination_ids = {dest["id"] for dest in d.cli("get-composition", "--arn", arn)["composition"]["destinations"]} \
        if names else set()
    for e in events:
        check(e["version"] == "0" and e["detail-type"] == "IVS Composition State Change" and e["source"] == "aws.ivs",
              f"envelope fields: {e}")
        check(e["account"] == ACCOUNT and e["region"] == REGION, f"account/region: {e}")
        check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", e["time"]), f"time format: {e['time']}")
        check(re.fullmatch(r"[0-9a-f-]{36}", e["id"]), f"event id: {e['id']}")
        check(e["detail"]["stage_arn"] == stage_arn, f"stage_arn: {e}")
        if e["detail"]["event_name"].startswith("Destination"):
            check(e["detail"].get("id") in destination_ids, f"destination id: {e}")
        else:
            check("id" not in e["detail"], f"session events carry no destination id: {e}")
    return events


def recording_dir(d, composition):
    prefix = composition["destinations"][0]["detail"]["s3"]["recordingPrefix"]
    return os.path.join(d.recordings, prefix)


def final_playlist(root):
    """A composite recording's one rendition under `root` (a local copy of its prefix), checked
    final (VOD, ENDLIST): (its hls folder, the rendition's name, the playlist's path, its text)."""
    hls = os.path.join(root, "media", "hls")
    renditions = [r for r in os.listdir(hls) if os.path.isdir(os.path.join(hls, r))]
    check(len(renditions) == 1, f"renditions: {renditions}")
    playlist = os.path.join(hls, renditions[0], "playlist.m3u8")
    with open(playlist) as f:
        text = f.read()
    check("#EXT-X-PLAYLIST-TYPE:VOD" in text and text.rstrip().endswith("#EXT-X-ENDLIST"), f"playlist not final:\n{text}")
    return hls, renditions[0], playlist, text


def check_recording(d, composition, status_file="recording-ended.json", min_seconds=0.5):
    root = recording_dir(d, composition)
    events_dir = os.path.join(root, "events")
    check(os.path.exists(os.path.join(events_dir, "recording-started.json")), f"no recording-started.json in {events_dir}")
    metadata_path = os.path.join(events_dir, status_file)
    check(os.path.exists(metadata_path), f"no {status_file} in {events_dir}: {os.listdir(events_dir)}")
    with open(metadata_path) as f:
        metadata = json.load(f)
    check(metadata["stage_arn"] == composition["stageArn"], f"metadata stage_arn: {metadata}")
    hls, _, playlist, text = final_playlist(root)
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_type,width,height",
                            "-of", "json", os.path.join(hls, "multivariant.m3u8")], capture_output=True, text=True, timeout=60)
    check(probe.returncode == 0, f"ffprobe failed: {probe.stderr}")
    info = json.loads(probe.stdout)
    duration = float(info["format"]["duration"])
    check(duration >= min_seconds, f"recording too short: {duration}s")
    video = [s for s in info["streams"] if s.get("codec_type") == "video"]
    audio = [s for s in info["streams"] if s.get("codec_type") == "audio"]
    check(video and video[0]["width"] == 320 and video[0]["height"] == 180 and audio, f"streams: {info['streams']}")
    # Decode it all: every segment must be readable.
    decode = subprocess.run(["ffmpeg", "-v", "error", "-i", playlist, "-f", "null", "-"], capture_output=True, text=True, timeout=120)
    check(decode.returncode == 0 and not decode.stderr.strip(), f"decode errors: {decode.stderr[:2000]}")
    return text, metadata, duration


# --------------------------------------------------------------------------------------------

def test_cli_start_stop_grid_and_pip(d):
    """Create configurations, start grid and PiP compositions, watch them go ACTIVE, stop them.
    The grid records IVS's default thumbnails (SEQUENTIAL); the PiP asks for LATEST every second."""
    d.start()
    enc, sto = setup_configurations(d)
    arns = []
    latest_every_second = json.dumps([{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc],
                                              "thumbnailConfigurations": [{"targetIntervalSeconds": 1, "storage": ["LATEST"]}]}}])
    for layout, destinations in ((GRID_LAYOUT, s3_destinations(enc, sto)), (PIP_LAYOUT, latest_every_second)):
        started = d.cli("start-composition", "--stage-arn", STAGE_ARN, "--destinations", destinations,
                        "--layout", json.dumps(layout))["composition"]
        check(started["state"] in ("STARTING", "ACTIVE"), f"new composition state: {started['state']}")
        check(started["layout"] == layout, f"layout echoed: {started['layout']}")
        check(re.fullmatch(rf"arn:aws:ivs:{REGION}:{ACCOUNT}:composition/[a-zA-Z0-9]{{12}}", started["arn"]), started["arn"])
        arns.append(started["arn"])
    wait_state(d, arns[0], {"ACTIVE"})
    wait_state(d, arns[1], {"ACTIVE"}, use_list=True)
    active = d.cli("get-composition", "--arn", arns[0])["composition"]
    check(active["destinations"][0]["state"] == "ACTIVE" and "startTime" in active["destinations"][0], f"destination: {active}")
    time.sleep(1.5)
    for arn in arns:
        d.cli("stop-composition", "--arn", arn)
    for arn in arns:
        wait_state(d, arn, {"STOPPED"})
        composition = d.cli("get-composition", "--arn", arn)["composition"]
        check("endTime" in composition and composition["destinations"][0]["state"] == "STOPPED", f"ended: {composition}")
        check_events(d, arn, STAGE_ARN, ["Session Start", "Destination Start", "Destination End", "Session End"])
        check_recording(d, composition)
    media = [os.path.join(recording_dir(d, d.cli("get-composition", "--arn", arn)["composition"]), "media") for arn in arns]
    check(os.path.exists(os.path.join(media[0], "thumbnails", "320x180", "1.jpg"))
          and not os.path.exists(os.path.join(media[0], "latest_thumbnail")), "the grid: IVS's default thumbnails, SEQUENTIAL only")
    check(os.path.exists(os.path.join(media[1], "latest_thumbnail", "320x180", "thumb.jpg"))
          and not os.path.exists(os.path.join(media[1], "thumbnails")), "the PiP: the LATEST thumbnail it asked for, no SEQUENTIAL ones")
    listed = d.cli("list-compositions", "--filter-by-encoder-configuration-arn", enc)["compositions"]
    check(sorted(c["arn"] for c in listed) == sorted(arns), f"filterByEncoderConfigurationArn: {listed}")
    check(d.stop() == 0, "exit status after SIGTERM")


def test_auto_shutdown_after_idle_timeout(d):
    """two-people is 6 s long; after that nobody publishes, and the 2 s idle timeout ends it."""
    d.start()
    enc, sto = setup_configurations(d)
    started = time.time()
    arn = d.cli("start-composition", "--stage-arn", STAGE_ARN, "--destinations", s3_destinations(enc, sto))["composition"]["arn"]
    wait_state(d, arn, {"ACTIVE"})
    wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=40)
    elapsed = time.time() - started
    composition = d.cli("get-composition", "--arn", arn)["composition"]
    check(composition["state"] == "STOPPED", f"auto-shutdown ends STOPPED, got {composition['state']}")
    check(elapsed >= 7.5, f"stopped too early ({elapsed:.1f}s): the stage lasts 6 s plus a 2 s idle timeout")
    check_events(d, arn, STAGE_ARN, ["Session Start", "Destination Start", "Destination End", "Session End"])
    _, metadata, duration = check_recording(d, composition, min_seconds=7.0)
    check(metadata["recording_status"] == "RECORDING_ENDED", f"metadata: {metadata}")
    check(d.stop() == 0, "exit status after SIGTERM")


def test_sigterm_stops_compositions_cleanly(d):
    d.start()
    enc, sto = setup_configurations(d)
    arn = d.cli("start-composition", "--stage-arn", LONG_STAGE_ARN, "--destinations", s3_destinations(enc, sto))["composition"]["arn"]
    wait_state(d, arn, {"ACTIVE"})
    time.sleep(1)
    composition = d.cli("get-composition", "--arn", arn)["composition"]
    code = d.stop(signal.SIGTERM)
    check(code == 0, f"exit status {code} after SIGTERM\n{d.log()}")
    events = [e["detail"]["event_name"] for e in d.events() if e["resources"] == [arn]]
    check(events == ["Session Start", "Destination Start", "Destination End", "Session End"], f"events: {events}")
    check_recording(d, composition)
    # The state survives: after a restart the composition is STOPPED (not re-finalized as FAILED).
    d.start()
    check(d.cli("get-composition", "--arn", arn)["composition"]["state"] == "STOPPED", "state after restart")
    check(d.stop() == 0, "second exit status")


def test_kill9_restart_finalizes_recording(d):
    d.idle = 60
    d.start()
    enc, sto = setup_configurations(d)
    stage = d.cli("create-stage", "--name", "created", "--tags",
                  f"stage-compositor:source={os.path.join(REPO, 'fixtures/four-grid')}")["stage"]
    arn = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", s3_destinations(enc, sto),
                "--tags", "team=video")["composition"]["arn"]
    wait_state(d, arn, {"ACTIVE"})
    composition = d.cli("get-composition", "--arn", arn)["composition"]
    rendition_root = os.path.join(recording_dir(d, composition), "media", "hls")
    deadline = time.time() + 30
    segments = []
    while time.time() < deadline:
        segments = [f for r, _, files in os.walk(rendition_root) for f in files if f.endswith(".ts")]
        if len(segments) >= 3:
            break
        time.sleep(0.2)
    check(len(segments) >= 3, f"segments before kill: {segments}")
    d.process.kill()  # SIGKILL: no chance to clean up
    d.process.wait()
    killed_at = time.time()
    before = sorted(f for r, _, files in os.walk(rendition_root) for f in files if f.endswith(".ts"))
    last_segment_written = max(os.path.getmtime(os.path.join(r, f)) for r, _, files in os.walk(rendition_root)
                               for f in files if f.endswith(".ts"))
    events_dir = os.path.join(recording_dir(d, composition), "events")
    check(not os.path.exists(os.path.join(events_dir, "recording-failed.json"))
          and not os.path.exists(os.path.join(events_dir, "recording-ended.json")), "no final metadata before the restart")
    playlists = [os.path.join(r, f) for r, _, files in os.walk(rendition_root) for f in files if f == "playlist.m3u8"]
    with open(playlists[0]) as f:
        check("#EXT-X-PLAYLIST-TYPE:EVENT" in f.read(), "the playlist is still EVENT before the restart")
    time.sleep(3)  # the restart comes clearly later than the last segment
    d.start()
    after = d.cli("get-composition", "--arn", arn)["composition"]
    check(after["state"] == "FAILED" and "endTime" in after, f"after restart: {after}")
    check(after["tags"] == {"team": "video"}, f"tags survive: {after['tags']}")
    check(after["destinations"][0]["state"] == "STOPPED", f"destination: {after['destinations']}")
    playlist_text, metadata, _ = check_recording(d, after, status_file="recording-failed.json", min_seconds=2.0)
    listed = re.findall(r"^(\d+\.ts)$", playlist_text, re.M)
    check(sorted(listed) == before, f"every segment written before the kill is in the playlist: {listed} vs {before}")
    check(metadata["recording_status"] == "RECORDING_ENDED_WITH_FAILURE", f"metadata: {metadata}")
    # recording_ended_at (whole seconds) is when the last stored segment was written, not the restart.
    import calendar
    ended = calendar.timegm(time.strptime(metadata["recording_ended_at"], "%Y-%m-%dT%H:%M:%SZ"))
    check(int(last_segment_written) <= ended <= killed_at,
          f"recording_ended_at {metadata['recording_ended_at']}: last segment written at {last_segment_written:.1f}, "
          f"killed at {killed_at:.1f}")
    events = [e for e in d.events() if e["resources"] == [arn]]
    names = [e["detail"]["event_name"] for e in events]
    check(names == ["Session Start", "Destination Start", "Destination End", "Session Failure"], f"events: {names}")
    check("daemon restarted" in events[-1]["detail"]["reason"], f"reason: {events[-1]}")
    # Configurations and the created stage survive too.
    d.cli("get-encoder-configuration", "--arn", enc)
    d.cli("get-storage-configuration", "--arn", sto)
    check(d.cli("get-stage", "--arn", stage["arn"])["stage"]["name"] == "created", "stage survives")
    check(d.stop() == 0, "exit status")


def test_validation_errors_and_quotas(d):
    """Every SPEC §1 validation rule, unknown ARNs, quotas, conflicts, idempotency, body limit."""
    d.start()
    import botocore.exceptions
    c = d.client()
    enc = c.create_encoder_configuration(name="small", video={"width": 320, "height": 180, "framerate": 5, "bitrate": 200000})["encoderConfiguration"]["arn"]
    sto = c.create_storage_configuration(name="local", s3={"bucketName": "rec-bucket"})["storageConfiguration"]["arn"]
    s3 = {"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}
    unknown_enc = f"arn:aws:ivs:{REGION}:{ACCOUNT}:encoder-configuration/AAAAAAAAAAAA"
    unknown_sto = f"arn:aws:ivs:{REGION}:{ACCOUNT}:storage-configuration/AAAAAAAAAAAA"
    unknown_comp = f"arn:aws:ivs:{REGION}:{ACCOUNT}:composition/AAAAAAAAAAAA"
    unknown_stage = f"arn:aws:ivs:{REGION}:{ACCOUNT}:stage/AAAAAAAAAAAA"

    def start(**kw):
        args = {"stageArn": STAGE_ARN, "destinations": [s3]}
        args.update(kw)
        return lambda: c.start_composition(**args)

    def video(**kw):
        return lambda: c.create_encoder_configuration(video=kw)

    def seg(n):
        return [{"s3": {**s3["s3"], "recordingConfiguration": {"hlsConfiguration": {"targetSegmentDurationSeconds": n}}}}]

    def thumb(n):
        return [{"s3": {**s3["s3"], "thumbnailConfigurations": [{"targetIntervalSeconds": n}]}}]

    cases = [
        ("stage ARN pattern", start(stageArn="arn:aws:ivs:us-east-1:123:stage/bad/../x"), "ValidationException"),
        ("stage ARN of another type", start(stageArn=unknown_enc), "ValidationException"),
        ("unknown stage", start(stageArn=unknown_stage), "ResourceNotFoundException"),
        ("stage of another account", start(stageArn="arn:aws:ivs:us-east-1:999999999999:stage/twoPeople"), "ResourceNotFoundException"),
        ("no destinations", start(destinations=[]), "ValidationException"),
        ("three destinations", start(destinations=[s3, s3, s3]), "ValidationException"),
        ("two s3 destinations", start(destinations=[s3, s3]), "ValidationException"),
        ("two channel destinations", start(destinations=[{"channel": {"channelArn": CHANNEL_ARN}}] * 2), "ValidationException"),
        ("destination with neither", start(destinations=[{"name": "x"}]), "ValidationException"),
        ("destination with both", start(destinations=[{"channel": {"channelArn": CHANNEL_ARN}, **s3}]), "ValidationException"),
        ("zero encoder ARNs", start(destinations=[{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": []}}]), "ValidationException"),
        ("two encoder ARNs", start(destinations=[{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc, enc]}}]), "ValidationException"),
        ("encoder ARN pattern", start(destinations=[{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": ["nope"]}}]), "ValidationException"),
        ("storage ARN pattern", start(destinations=[{"s3": {"storageConfigurationArn": "arn:aws:s3:::bucket", "encoderConfigurationArns": [enc]}}]), "ValidationException"),
        ("channel ARN pattern", start(destinations=[{"channel": {"channelArn": "channel/x"}}]), "ValidationException"),
        ("unknown encoder", start(destinations=[{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [unknown_enc]}}]), "ResourceNotFoundException"),
        ("unknown storage", start(destinations=[{"s3": {"storageConfigurationArn": unknown_sto, "encoderConfigurationArns": [enc]}}]), "ResourceNotFoundException"),
        ("unknown channel", start(destinations=[{"channel": {"channelArn": f"arn:aws:ivs:{REGION}:{ACCOUNT}:channel/zzzzzzzzzzzz"}}]), "ResourceNotFoundException"),
        ("segment duration 1", start(destinations=seg(1)), "ValidationException"),
        ("segment duration 11", start(destinations=seg(11)), "ValidationException"),
        ("thumbnail interval 0", start(destinations=thumb(0)), "ValidationException"),
        ("thumbnail interval 86401", start(destinations=thumb(86401)), "ValidationException"),
        ("idempotency token too long", start(idempotencyToken="a" * 65), "ValidationException"),
        ("idempotency token pattern", start(idempotencyToken="bad token!"), "ValidationException"),
        ("51 tags", start(tags={f"k{i}": "v" for i in range(51)}), "ValidationException"),
        ("destination name pattern", start(destinations=[{"name": "bad name!", **s3}]), "ValidationException"),
        ("grid and pip", start(layout={"grid": {}, "pip": {}}), "ValidationException"),
        ("negative gridGap", start(layout={"grid": {"gridGap": -1}}), "ValidationException"),
        ("width 1", video(width=1), "ValidationException"),
        ("width 1922", video(width=1922), "ValidationException"),
        ("odd width", video(width=321), "ValidationException"),
        ("odd height", video(height=181), "ValidationException"),
        ("too many pixels", video(width=1920, height=1920), "ValidationException"),
        ("framerate 0.5", video(framerate=0.5), "ValidationException"),
        ("framerate 61", video(framerate=61), "ValidationException"),
        ("bitrate 0", video(bitrate=0), "ValidationException"),
        ("bitrate 8500001", video(bitrate=8500001), "ValidationException"),
        ("encoder name pattern", lambda: c.create_encoder_configuration(name="bad name"), "ValidationException"),
        ("bucket name pattern", lambda: c.create_storage_configuration(s3={"bucketName": "Bad_Bucket"}), "ValidationException"),
        ("unconfigured bucket", lambda: c.create_storage_configuration(s3={"bucketName": "other-bucket"}), "ValidationException"),
        ("get unknown composition", lambda: c.get_composition(arn=unknown_comp), "ResourceNotFoundException"),
        ("stop unknown composition", lambda: c.stop_composition(arn=unknown_comp), "ResourceNotFoundException"),
        ("get composition bad ARN", lambda: c.get_composition(arn="arn:aws:ivs:us-east-1:123:composition/"), "ValidationException"),
        ("get unknown encoder", lambda: c.get_encoder_configuration(arn=unknown_enc), "ResourceNotFoundException"),
        ("delete unknown encoder", lambda: c.delete_encoder_configuration(arn=unknown_enc), "ResourceNotFoundException"),
        ("get unknown storage", lambda: c.get_storage_configuration(arn=unknown_sto), "ResourceNotFoundException"),
        ("delete unknown storage", lambda: c.delete_storage_configuration(arn=unknown_sto), "ResourceNotFoundException"),
        ("get unknown stage", lambda: c.get_stage(arn=unknown_stage), "ResourceNotFoundException"),
        ("delete configured stage", lambda: c.delete_stage(arn=STAGE_ARN), "ConflictException"),
        ("stage source outside roots", lambda: c.create_stage(tags={"stage-compositor:source": "/etc"}), "ValidationException"),
        ("stage source traversal", lambda: c.create_stage(tags={"stage-compositor:source": os.path.join(REPO, "fixtures/../Sources")}), "ValidationException"),
        ("list maxResults 0", lambda: c.list_compositions(maxResults=0), "ValidationException"),
        ("list maxResults 101", lambda: c.list_encoder_configurations(maxResults=101), "ValidationException"),
        ("bad nextToken", lambda: c.list_compositions(nextToken="bm90LWEtdG9rZW4="), "ValidationException"),
        ("tag unknown resource", lambda: c.tag_resource(resourceArn=unknown_enc, tags={"a": "b"}), "ResourceNotFoundException"),
        ("list tags bad ARN", lambda: c.list_tags_for_resource(resourceArn="arn:aws:s3:::x"), "ValidationException"),
    ]
    failures = []
    for name, call, expected in cases:
        try:
            call()
            failures.append(f"{name}: no error (expected {expected})")
        except botocore.exceptions.ClientError as error:
            code = error.response["Error"]["Code"]
            if code != expected:
                failures.append(f"{name}: {code} (expected {expected}): {error.response['Error'].get('Message')}")
        except botocore.exceptions.ParamValidationError as error:
            failures.append(f"{name}: rejected client-side by botocore ({error}); the case needs another value")
    check(not failures, "validation table:\n  " + "\n  ".join(failures))
    print(f"validation table: {len(cases)} cases OK")

    # Idempotency: the same token gives the same composition back.
    first = c.start_composition(stageArn=STAGE_ARN, destinations=[s3], idempotencyToken="token-1")["composition"]
    again = c.start_composition(stageArn=STAGE_ARN, destinations=[s3], idempotencyToken="token-1")["composition"]
    check(first["arn"] == again["arn"], "idempotencyToken returns the same composition")
    # Channel destinations: the channel output is not built yet, so that destination fails with a reason while
    # the s3 one runs; the channel stays reserved by this composition (ConflictException for another one).
    with_channel = c.start_composition(stageArn=STAGE_ARN, destinations=[s3, {"channel": {"channelArn": CHANNEL_ARN}}])["composition"]
    try:
        c.start_composition(stageArn=STAGE_ARN, destinations=[{"channel": {"channelArn": CHANNEL_ARN}}])
        raise Failure("a channel used by an active composition must give ConflictException")
    except botocore.exceptions.ClientError as error:
        check(error.response["Error"]["Code"] == "ConflictException", f"channel conflict: {error.response['Error']}")
    # Deleting an encoder configuration in use: ConflictException.
    try:
        c.delete_encoder_configuration(arn=enc)
        raise Failure("deleting an encoder configuration in use must fail")
    except botocore.exceptions.ClientError as error:
        check(error.response["Error"]["Code"] == "ConflictException", f"delete in use: {error.response['Error']}")
    # Concurrent compositions: 5 allowed, the 6th is over quota.
    running = [first["arn"], with_channel["arn"]]
    for _ in range(3):
        running.append(c.start_composition(stageArn=STAGE_ARN, destinations=[s3])["composition"]["arn"])
    try:
        c.start_composition(stageArn=STAGE_ARN, destinations=[s3])
        raise Failure("a 6th concurrent composition must give ServiceQuotaExceededException")
    except botocore.exceptions.ClientError as error:
        check(error.response["Error"]["Code"] == "ServiceQuotaExceededException", f"6th: {error.response['Error']}")
        check(error.response["ResponseMetadata"]["HTTPStatusCode"] == 402, "quota status 402")
    # Pagination over the five.
    page1 = c.list_compositions(maxResults=2)
    page2 = c.list_compositions(maxResults=2, nextToken=page1["nextToken"])
    page3 = c.list_compositions(maxResults=2, nextToken=page2["nextToken"])
    seen = [x["arn"] for p in (page1, page2, page3) for x in p["compositions"]]
    check(sorted(seen) == sorted(running) and "nextToken" not in page3, f"pagination: {seen}")
    # The channel points at a closed port: one quick retry, then the destination fails alone.
    channel_dest = wait_destination(d, with_channel["arn"], "channel", {"FAILED"})
    check(channel_dest["state"] == "FAILED", f"channel destination: {channel_dest}")
    failure_events = [e for e in d.events() if e["resources"] == [with_channel["arn"]] and e["detail"]["event_name"] == "Destination Failure"]
    check(failure_events and failure_events[0]["detail"]["reason"] == "connection refused", f"failure reason: {failure_events}")
    for arn in running:
        c.stop_composition(arn=arn)
    # Encoder configuration quota (20) and storage configuration quota (5).
    for _ in range(19):
        c.create_encoder_configuration()
    try:
        c.create_encoder_configuration()
        raise Failure("21st encoder configuration must fail")
    except botocore.exceptions.ClientError as error:
        check(error.response["Error"]["Code"] == "ServiceQuotaExceededException", f"encoder quota: {error.response['Error']}")
    for _ in range(4):
        c.create_storage_configuration(s3={"bucketName": "rec-bucket"})
    try:
        c.create_storage_configuration(s3={"bucketName": "rec-bucket"})
        raise Failure("6th storage configuration must fail")
    except botocore.exceptions.ClientError as error:
        check(error.response["Error"]["Code"] == "ServiceQuotaExceededException", f"storage quota: {error.response['Error']}")
    # Request body limit.
    import urllib.request, urllib.error
    request = urllib.request.Request(d.endpoint + "/CreateEncoderConfiguration", data=b"{" + b" " * (2 << 20) + b"}", method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=30)
        raise Failure("a 2 MiB body must be rejected")
    except urllib.error.HTTPError as error:
        check(error.code == 413 and error.headers["x-amzn-ErrorType"] == "ValidationException", f"body limit: {error.code} {error.headers}")
    # The CLI prints the modeled error.
    d.cli("get-composition", "--arn", unknown_comp, expect_error="ResourceNotFoundException")
    for arn in running:
        wait_state(d, arn, {"STOPPED", "FAILED"})
    check(d.stop() == 0, "exit status")


def test_example_config_check(d):
    """The shipped deploy/config.example.json passes `config check` as it is (the daemon's loader
    is the one definition of the fields)."""
    example = subprocess.run([d.binary, "config", "check", os.path.join(REPO, "deploy/config.example.json")],
                             capture_output=True, text=True)
    check(example.returncode == 0 and "OK" in example.stdout and "unknown key" not in example.stdout,
          f"deploy/config.example.json: {example.stdout} {example.stderr}")


def test_config_check(d):
    good = subprocess.run([d.binary, "config", "check", d.config_path], capture_output=True, text=True)
    check(good.returncode == 0 and "OK" in good.stdout, f"good config: {good.stdout} {good.stderr}")
    bad_path = os.path.join(d.workdir, "bad.json")
    with open(bad_path, "w") as f:
        json.dump({"region": "US East", "account": "12ab", "stateDirectory": "s", "listen": {"host": "127.0.0.1", "port": 70000},
                   "stages": [{"id": "x", "source": "/nonexistent"}], "buckets": {"Bad_Name": "x"},
                   "channels": [{"arn": "nope", "ingestEndpoint": "http://x", "streamKey": ""}]}, f)
    bad = subprocess.run([d.binary, "config", "check", bad_path], capture_output=True, text=True)
    check(bad.returncode == 1, f"bad config exit status {bad.returncode}")
    for needle in ('region: "US East" is not a region name', 'account: "12ab" is not an account ID', "listen.port",
                   "buckets.Bad_Name", "channels[0].arn", "channels[0].ingestEndpoint", "channels[0].streamKey"):
        check(needle in bad.stderr, f"config check should name {needle}:\n{bad.stderr}")
    # A recorded stage that is not there (yet) is a warning: the daemon runs, compositions on it fail.
    absent_path = os.path.join(d.workdir, "absent-stage.json")
    with open(d.config_path) as f:
        absent = json.load(f)
    absent["stages"][0]["source"] = "/nonexistent"
    with open(absent_path, "w") as f:
        json.dump(absent, f)
    warned = subprocess.run([d.binary, "config", "check", absent_path], capture_output=True, text=True)
    check(warned.returncode == 0 and "warning: stages[0].source: /nonexistent has no manifest.json" in warned.stdout,
          f"absent stage: {warned.stdout} {warned.stderr}")
    missing = os.path.join(d.workdir, "missing.json")
    with open(missing, "w") as f:
        f.write('{"region": "us-east-1"}')
    result = subprocess.run([d.binary, "config", "check", missing], capture_output=True, text=True)
    check(result.returncode == 1 and "account: is required" in result.stderr, f"missing key: {result.stderr}")


def test_sigv4_auth(d):
    """auth.enabled: the AWS CLI's signed calls work; a wrong secret, a request signed 16 minutes
    ago (botocore with its clock turned back) and an unsigned request get AccessDeniedException."""
    d.start()
    check(d.cli("list-compositions") == {"compositions": []}, "signed list-compositions")
    enc, _ = setup_configurations(d)
    check(d.cli("get-encoder-configuration", "--arn", enc)["encoderConfiguration"]["arn"] == enc, "signed get")
    for env, why in (({"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, "wrong secret"),
                     ({"AWS_ACCESS_KEY_ID": "AKIDUNKNOWN"}, "unknown access key")):
        text = d.cli("list-compositions", expect_error="AccessDeniedException", env=env)
        check("when calling the ListCompositions operation" in text, f"{why}: {text}")
    d.cli("list-compositions", "--no-sign-request", expect_error="AccessDeniedException")
    # Signed with botocore itself, 16 minutes ago (its clock patched), through boto3.
    import datetime
    import botocore.auth
    import botocore.exceptions
    real_now = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda *a, **k: real_now(*a, **k) - datetime.timedelta(minutes=16)
    try:
        d.client().list_compositions()
        raise Failure("a request signed 16 minutes ago must be refused")
    except botocore.exceptions.ClientError as error:
        check(error.response["Error"]["Code"] == "AccessDeniedException", f"old signature: {error.response['Error']}")
        check(error.response["ResponseMetadata"]["HTTPStatusCode"] == 403, "status 403")
        check(error.response["ResponseMetadata"]["HTTPHeaders"].get("x-amzn-errortype", "").startswith("AccessDeniedException"),
              f"x-amzn-ErrorType: {error.response['ResponseMetadata']['HTTPHeaders']}")
    finally:
        botocore.auth.get_current_datetime = real_now
    for reason in ("signature mismatch", "unknown access key", "missing Authorization", "request time too skewed"):
        check(f"auth.reason={reason}" in d.log(), f"the daemon log names the denial ({reason}):\n{d.log()}")
    # 14 minutes is inside the allowed skew.
    botocore.auth.get_current_datetime = lambda *a, **k: real_now(*a, **k) - datetime.timedelta(minutes=14)
    try:
        check(d.client().list_compositions()["compositions"] == [], "signed 14 minutes ago")
    finally:
        botocore.auth.get_current_datetime = real_now
    # Paths with encoded characters are verified as sent (tags/{resourceArn}).
    d.cli("tag-resource", "--resource-arn", enc, "--tags", "team=video")
    check(d.cli("list-tags-for-resource", "--resource-arn", enc)["tags"] == {"team": "video"}, "signed tags round trip")
    check(d.stop() == 0, "exit status")


class NginxRTMP:
    """nginx + libnginx-mod-rtmp on loopback, recording every stream to record/<key>.flv (the same
    receiver as Tests/DestinationsTests/RTMPTestServers.swift)."""

    def __init__(self, workdir):
        self.port = free_port()
        self.dir = os.path.join(workdir, "nginx")
        os.makedirs(os.path.join(self.dir, "record"))
        os.makedirs(os.path.join(self.dir, "logs"))
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""daemon off;
master_process off;
worker_processes 1;
pid {self.dir}/nginx.pid;
error_log {self.dir}/logs/error.log info;
load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
events {{ worker_connections 64; }}
rtmp {{
    server {{
        listen 127.0.0.1:{self.port};
        application live {{
            live on;
            record all;
            record_path {self.dir}/record;
            record_unique off;
        }}
    }}
}}
""")
        check(os.path.exists("/usr/sbin/nginx") and os.path.exists("/usr/lib/nginx/modules/ngx_rtmp_module.so"),
              "nginx with the RTMP module is needed (scripts/install-deps.sh --test)")
        self.process = subprocess.Popen(["/usr/sbin/nginx", "-c", conf, "-p", self.dir, "-e", f"{self.dir}/logs/error.log"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise Failure("nginx did not listen")

    def recording(self, key):
        return os.path.join(self.dir, "record", f"{key}.flv")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def channel_events(d, arn, destination_id):
    return [e["detail"] for e in d.events() if e["resources"] == [arn] and e["detail"].get("id") == destination_id]


def test_channel_destination_pushes_to_nginx(d):
    """A composition with channel + s3: the RTMP push reaches nginx (its recording decodes with the
    composition's size) and the s3 recording is complete."""
    nginx = NginxRTMP(d.workdir)
    try:
        d.reconfigure(channels=[{"arn": CHANNEL_ARN, "ingestEndpoint": f"rtmp://127.0.0.1:{nginx.port}/live",
                                                   "streamKey": "sk_daemon"}])
        d.start()
        enc, sto = setup_configurations(d)
        destinations = [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}},
                        {"channel": {"channelArn": CHANNEL_ARN, "encoderConfigurationArn": enc}}]
        composition = d.cli("start-composition", "--stage-arn", LONG_STAGE_ARN, "--destinations",
                            json.dumps(destinations))["composition"]
        arn = composition["arn"]
        channel = wait_destination(d, arn, "channel", {"ACTIVE", "FAILED"})
        check(channel["state"] == "ACTIVE", f"channel destination: {channel}\n{d.log()}")
        check(wait_destination(d, arn, "s3", {"ACTIVE"})["state"] == "ACTIVE", "s3 destination")
        time.sleep(3)
        d.cli("stop-composition", "--arn", arn)
        check(wait_state(d, arn, {"STOPPED", "FAILED"}) == "STOPPED", "composition should stop cleanly")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        check(all(x["state"] == "STOPPED" for x in final["destinations"]), f"destinations: {final['destinations']}")
        details = channel_events(d, arn, channel["id"])
        check([e["event_name"] for e in details] == ["Destination Start", "Destination End"], f"channel events: {details}")
        check_recording(d, final)
        metrics = urllib.request.urlopen(f"{d.endpoint}/metrics", timeout=10).read().decode()
        for kind, minimum in (("s3", 20_000), ("channel", 20_000)):
            match = re.search(r'^stage_compositor_output_bytes_total\{destination_type="%s"\} (\d+)' % kind, metrics, re.M)
            check(match and int(match.group(1)) >= minimum, f"output bytes ({kind}) in /metrics:\n{metrics}")
        check(d.stop() == 0, "exit status")
    finally:
        nginx.stop()
    flv = nginx.recording("sk_daemon")
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_type,codec_name,width,height",
                            "-of", "json", flv], capture_output=True, text=True, timeout=60)
    check(probe.returncode == 0, f"ffprobe {flv}: {probe.stderr}")
    info = json.loads(probe.stdout)
    video = [s for s in info["streams"] if s["codec_type"] == "video"]
    audio = [s for s in info["streams"] if s["codec_type"] == "audio"]
    check(video and video[0]["codec_name"] == "h264" and (video[0]["width"], video[0]["height"]) == (320, 180),
          f"channel video: {info}")
    check(audio and audio[0]["codec_name"] == "aac", f"channel audio: {info}")
    check(float(info["format"]["duration"]) >= 2.0, f"channel recording too short: {info['format']}")
    decode = subprocess.run(["ffmpeg", "-v", "error", "-i", flv, "-f", "null", "-"], capture_output=True, text=True, timeout=60)
    check(decode.returncode == 0, f"decode {flv}: {decode.stderr[:2000]}")


def test_compose_cli_pushes_and_records(d):
    """`stage-compositor compose` (no daemon) plans its flags as the daemon plans a StartComposition
    request: --rtmp reaches nginx (H.264 + AAC at the --encoder size), the recording has the
    asked segment length and the LATEST thumbnail only (--thumbnails 1:latest), and the path of
    its multivariant playlist is printed."""
    nginx = NginxRTMP(d.workdir)
    out = os.path.join(d.workdir, "compose-out")
    try:
        result = subprocess.run([d.binary, "compose", "--stage", os.path.join(REPO, "fixtures/four-grid"), "--duration", "5",
                                 "--encoder", "640x360@30:800k", "--segment-duration", "3", "--thumbnails", "1:latest",
                                 "--rtmp", f"rtmp://127.0.0.1:{nginx.port}/live/sk_cli", "--out", out],
                                capture_output=True, text=True, timeout=120)
    finally:
        nginx.stop()
    check(result.returncode == 0, f"compose: {result.returncode}\n{result.stderr[-3000:]}")
    printed = result.stdout.strip().splitlines()[-1]
    check(printed.endswith("/media/hls/multivariant.m3u8") and os.path.exists(printed), f"printed: {result.stdout}")
    media = os.path.dirname(os.path.dirname(printed))
    check(os.path.exists(os.path.join(media, "latest_thumbnail", "640x360", "thumb.jpg"))
          and not os.path.exists(os.path.join(media, "thumbnails")), f"--thumbnails 1:latest: {os.listdir(media)}")
    _, rendition, playlist, text = final_playlist(os.path.dirname(media))
    check(rendition.startswith("360p30-") and "#EXT-X-TARGETDURATION:3" in text, f"{rendition}:\n{text}")
    for path, (width, height) in ((playlist, (640, 360)), (nginx.recording("sk_cli"), (640, 360))):
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_type,codec_name,width,height",
                                "-of", "json", path], capture_output=True, text=True, timeout=60)
        check(probe.returncode == 0, f"ffprobe {path}: {probe.stderr}")
        info = json.loads(probe.stdout)
        kinds = {s["codec_type"]: s for s in info["streams"]}
        check(kinds.get("video", {}).get("codec_name") == "h264" and (kinds["video"]["width"], kinds["video"]["height"]) == (width, height)
              and kinds.get("audio", {}).get("codec_name") == "aac", f"{path}: {info['streams']}")
        check(float(info["format"]["duration"]) >= 4.0, f"{path} is {info['format']['duration']} s of 5")


def test_channel_refused_fails_alone(d):
    """A channel whose ingest port is closed: RECONNECTING, then FAILED with "connection refused"
    (Destination Failure), while the composition stays ACTIVE and the s3 recording completes."""
    closed = free_port()
    d.reconfigure(channels=[{"arn": CHANNEL_ARN, "ingestEndpoint": f"rtmp://127.0.0.1:{closed}/live",
                                               "streamKey": "sk_closed",
                                               "reconnect": {"maxRetries": 2, "baseIntervalSeconds": 0.2}}])
    d.start()
    enc, sto = setup_configurations(d)
    destinations = [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}},
                    {"channel": {"channelArn": CHANNEL_ARN}}]
    composition = d.cli("start-composition", "--stage-arn", LONG_STAGE_ARN, "--destinations",
                        json.dumps(destinations))["composition"]
    arn = composition["arn"]
    channel = wait_destination(d, arn, "channel", {"FAILED"})
    s3 = wait_destination(d, arn, "s3", {"ACTIVE"})
    check(d.cli("get-composition", "--arn", arn)["composition"]["state"] == "ACTIVE",
          "the composition stays ACTIVE while the s3 destination is")
    details = channel_events(d, arn, channel["id"])
    check([e["event_name"] for e in details] == ["Destination Reconnecting", "Destination Failure"], f"channel events: {details}")
    check(details[-1]["reason"] == "connection refused", f"reason: {details[-1]}")
    check("endTime" in channel, f"a failed destination has its endTime: {channel}")
    time.sleep(2)
    d.cli("stop-composition", "--arn", arn)
    check(wait_state(d, arn, {"STOPPED", "FAILED"}) == "STOPPED", "composition should stop cleanly")
    final = d.cli("get-composition", "--arn", arn)["composition"]
    states = {("channel" if "channel" in x["configuration"] else "s3"): x["state"] for x in final["destinations"]}
    check(states == {"channel": "FAILED", "s3": "STOPPED"}, f"destination states: {states}")
    names = [e["detail"]["event_name"] for e in d.events() if e["resources"] == [arn]]
    check(names[0] == "Session Start" and names[-1] == "Session End" and names.count("Destination End") == 1,
          f"events: {names}")
    check(s3["id"] != channel["id"], "two destinations")
    check_recording(d, final, min_seconds=1.0)
    check(d.stop() == 0, "exit status")


class EmbeddedDefaultsDaemon(Daemon):
    """`stage-compositor serve` with no arguments, run from the checkout (its fixtures are the
    bundled stages) with XDG_STATE_HOME in the test's folder and a systemd notify socket."""
    PORT = 8086

    def __init__(self, binary, workdir, notify_socket, watchdog_usec):
        super().__init__(binary, workdir)
        self.port = self.PORT
        self.xdg = os.path.join(workdir, "xdg")
        self.env = dict(ENV, XDG_STATE_HOME=self.xdg, NOTIFY_SOCKET=notify_socket, WATCHDOG_USEC=str(watchdog_usec))
        self.env.pop("WATCHDOG_PID", None)

    @property
    def recordings(self):
        return os.path.join(self.xdg, "stage-compositor", "buckets", "recordings")

    @property
    def events_path(self):
        return os.path.join(self.xdg, "stage-compositor", "events.jsonl")

    def start(self):
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", self.port))
            except OSError as error:
                raise Failure(f"the embedded defaults listen on 127.0.0.1:{self.port}, which is in use here: {error}")
        self.stderr = open(self.stderr_path, "a")
        self.stdout_path = os.path.join(self.workdir, "stdout.txt")
        self.process = subprocess.Popen([self.binary, "serve"], cwd=REPO, env=self.env,
                                        stdout=open(self.stdout_path, "w"), stderr=self.stderr)
        return self


class NotifySocket:
    """The service manager's side of sd_notify: a datagram socket read by a thread that keeps
    every message with its arrival time."""

    def __init__(self, path):
        import threading
        self.path = path
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(path)
        self.socket.settimeout(0.2)
        self.messages = []
        self.condition = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while not self.closed:
            try:
                data = self.socket.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            message = dict(line.split("=", 1) for line in data.decode().split("\n") if "=" in line)
            with self.condition:
                self.messages.append((time.time(), message))
                self.condition.notify_all()

    def wait_for(self, key, timeout):
        """The first message that has `key` (None after `timeout`)."""
        with self.condition:
            found = self.condition.wait_for(lambda: next((m for _, m in self.messages if key in m), None), timeout)
            return found or None

    def close(self):
        self.closed = True
        self.thread.join()
        self.socket.close()


def test_serve_without_config_and_systemd_notify(d):
    """`serve` with no arguments runs on embedded defaults: the API on 127.0.0.1:8086 answers
    the AWS CLI, the bundled recorded stages are there, and a composition records into the
    local bucket "recordings" under $XDG_STATE_HOME. As a Type=notify service it sends READY=1
    once the API listens, STATUS= with the running compositions, WATCHDOG=1 more often than
    WATCHDOG_USEC, and STOPPING=1 on SIGTERM."""
    notify = NotifySocket(os.path.join(d.workdir, "notify.sock"))
    watchdog_seconds = 4
    daemon = EmbeddedDefaultsDaemon(d.binary, d.workdir, notify.path, watchdog_seconds * 1_000_000)
    try:
        daemon.start()
        started = time.time()
        ready = notify.wait_for("READY", timeout=60)
        check(ready is not None and ready.get("READY") == "1", f"no READY=1: {notify.messages}\n{daemon.log()}")
        check("listening on" in ready.get("STATUS", ""), f"READY's status: {ready}")
        print(f"READY=1 {time.time() - started:.2f} s after the start")
        # READY means the API answers.
        stages = daemon.cli("list-stages")["stages"]
        arns = sorted(s["arn"] for s in stages)
        bundled = [f"arn:aws:ivs:{REGION}:{ACCOUNT}:stage/{name}" for name in ("four-grid", "two-people")]
        check(all(arn in arns for arn in bundled), f"bundled stages: {arns}")
        enc = daemon.cli("create-encoder-configuration", "--name", "small",
                         "--video", "width=320,height=180,framerate=15,bitrate=300000")["encoderConfiguration"]["arn"]
        sto = daemon.cli("create-storage-configuration", "--name", "local",
                         "--s3", "bucketName=recordings")["storageConfiguration"]["arn"]
        arn = daemon.cli("start-composition", "--stage-arn", bundled[1], "--destinations",
                         s3_destinations(enc, sto))["composition"]["arn"]
        check(wait_state(daemon, arn, {"ACTIVE", "FAILED"}, timeout=60) == "ACTIVE", "composition ACTIVE")
        time.sleep(3)
        daemon.cli("stop-composition", "--arn", arn)
        check(wait_state(daemon, arn, {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition STOPPED")
        time.sleep(2)
        final = daemon.cli("get-composition", "--arn", arn)["composition"]
        check_recording(daemon, final, min_seconds=1)
        statuses = [m["STATUS"] for _, m in notify.messages if "STATUS" in m]
        check(any(s.startswith("1 composition running") for s in statuses), f"statuses: {statuses}")
        check(statuses[-1].startswith("0 compositions running"), f"statuses: {statuses}")
        check(daemon.stop() == 0, f"exit status\n{daemon.log()}")
        check(notify.wait_for("STOPPING", timeout=5) is not None, f"no STOPPING=1: {notify.messages[-3:]}")
        pings = [t for t, m in notify.messages if m.get("WATCHDOG") == "1"]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        print(f"watchdog: {len(pings)} pings, longest gap {max(gaps):.2f} s (WATCHDOG_USEC {watchdog_seconds} s)")
        # Pinged every WATCHDOG_USEC/2; a gap of the whole interval would have had the daemon restarted.
        check(len(pings) >= 3 and max(gaps) < watchdog_seconds, f"watchdog pings at {pings}")
        with open(daemon.stdout_path) as f:
            summary = f.read()
        check("http://127.0.0.1:8086" in summary and daemon.recordings in summary and "stage/two-people" in summary,
              f"the start-up summary: {summary}")
    finally:
        if daemon.process and daemon.process.poll() is None:
            daemon.process.kill()
            daemon.process.wait()
        notify.close()


def test_postgres_one_node_lease_and_fencing(d):
    """On PostgreSQL (STAGE_COMPOSITOR_TEST_DATABASE_URL, from PostgresDaemonTests): the daemon
    registers as a node with a 3 s lease renewed every 0.3 s, and `stage-compositor nodes` lists it.
    A second daemon on the same database refuses to start and names the first. SIGSTOP the first
    past its lease: the second can start; SIGCONT: the first fences itself (logs it, exits non-zero)
    and the second reaps it. SIGTERM the second: it deregisters, and no node is left."""
    url = os.environ.get("STAGE_COMPOSITOR_TEST_DATABASE_URL")
    check(url, "needs STAGE_COMPOSITOR_TEST_DATABASE_URL (run through PostgresDaemonTests)")
    lease = {"leaseTtlSeconds": 3, "heartbeatSeconds": 0.3}
    d.reconfigure(extra={"database": dict(url=url, nodeId="node-a", **lease)})

    def nodes(config):
        result = subprocess.run([d.binary, "nodes", "--config", config], capture_output=True, text=True, timeout=60)
        check(result.returncode == 0, f"nodes: {result.stderr}")
        return result.stdout

    d.start()
    listed = nodes(d.config_path)
    print(listed)
    check("node-a" in listed and " live " in listed, f"nodes lists node-a as live:\n{listed}")
    other_dir = os.path.join(d.workdir, "b")
    os.makedirs(other_dir)
    b = Daemon(d.binary, other_dir, extra={"database": dict(url=url, nodeId="node-b", **lease)})
    try:
        b.stderr = open(b.stderr_path, "a")
        refused = subprocess.run([b.binary, "serve", "--config", b.config_path], capture_output=True, text=True, timeout=60)
        check(refused.returncode != 0 and "another daemon uses this database: node node-a" in refused.stderr,
              f"a second node is refused: {refused.returncode} {refused.stderr[-2000:]}")
        d.process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(4.5)                                    # past the 3 s lease
            b.start()
        finally:
            d.process.send_signal(signal.SIGCONT)
        started = time.time()
        try:
            d.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            raise Failure(f"the stopped node did not fence itself within 15 s of SIGCONT:\n{d.log()}")
        print(f"fenced and exited {time.time() - started:.2f} s after SIGCONT, status {d.process.returncode}")
        check(d.process.returncode != 0, "a fenced node exits with a failure status")
        check("fenced itself" in d.log(), f"the fenced node says so:\n{d.log()}")
        deadline = time.time() + 15
        while time.time() < deadline and "node-a" in nodes(b.config_path):
            time.sleep(0.5)
        listed = nodes(b.config_path)
        print(listed)
        check("node-a" not in listed and "node-b" in listed, f"node-b reaped node-a:\n{listed}\n{b.log()}")
        check("reaped a node whose lease ran out" in b.log(), f"node-b logs the reaping:\n{b.log()}")
        check(b.stop() == 0, f"node-b stops cleanly:\n{b.log()}")
        listed = nodes(b.config_path)
        check("no nodes registered" in listed, f"node-b deregistered:\n{listed}")
    finally:
        if b.process and b.process.poll() is None:   # a failure leaves no second daemon behind
            b.process.kill()
            b.process.wait()


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def run_from_command_line(tests, make, usage):
    """`script.py BINARY TEST`: runs TEST with `make(binary, workdir)` as its daemon (or fleet)."""
    if len(sys.argv) != 3:
        print(usage)
        return 2
    binary, name = sys.argv[1], sys.argv[2]
    return run_test(tests, name, lambda workdir: make(binary, workdir), usage)


def keeping_ingest(daemon):
    """A live daemon whose reconfigure(...) keeps its ingest settings unless given `extra`
    (tests reconfigure with other options; the live ingest ports stay)."""
    daemon.config_extra = {"ingest": daemon.config["ingest"]}
    original = daemon.reconfigure

    def reconfigure(**options):
        extra = options.pop("extra", daemon.config_extra)
        original(extra=extra, **options)
        daemon.config_extra = extra
    daemon.reconfigure = reconfigure
    return daemon


def script_main(tests, usage, make_daemon):
    """A test script's main: `SCRIPT BINARY TEST_NAME` runs one test with a daemon from
    `make_daemon(binary, name, workdir)`; exit status 0 when it passed."""
    if len(sys.argv) != 3:
        print(usage)
        return 2
    binary, name = sys.argv[1], sys.argv[2]
    return run_test(tests, name, lambda workdir: make_daemon(binary, name, workdir), usage)


def run_test(tests, name, make_daemon, usage):
    """Runs one test with a fresh daemon in a temporary folder; 0 when it passed. Shared by
    the daemon and live test scripts."""
    if name == "--list":
        print("\n".join(tests))
        return 0
    if name not in tests:
        print(usage)
        return 2
    workdir = tempfile.mkdtemp(prefix=f"{name}-")
    daemon = make_daemon(workdir)
    try:
        tests[name](daemon)
        print(f"PASS {name}")
        return 0
    except Failure as failure:
        print(f"FAIL {name}: {failure}")
        print("--- daemon log ---\n" + daemon.log())
        # Once more after the (long) log: a truncated CI excerpt shows its tail.
        print(f"--- end of daemon log ---\nFAIL {name}: {failure}")
        return 1
    finally:
        if daemon.process and daemon.process.poll() is None:
            daemon.process.kill()
            daemon.process.wait()
        if os.environ.get("KEEP_DAEMON_TEST_DIRS") != "1":
            shutil.rmtree(workdir, ignore_errors=True)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, name = sys.argv[1], sys.argv[2]

    def make_daemon(workdir):
        if name == "kill9_restart_finalizes_recording":
            return Daemon(binary, workdir, idle=60)
        if name == "sigv4_auth":
            return Daemon(binary, workdir, auth={"enabled": True, "accessKeys": {"AKIDEXAMPLE": "secret"}})
        return Daemon(binary, workdir)
    return run_test(TESTS, name, make_daemon, __doc__)


if __name__ == "__main__":
    sys.exit(main())
