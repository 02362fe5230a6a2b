#!/usr/bin/env python3
"""Black-box tests of WHIP publishing: real WebRTC peers (aiortc from PyPI, Debian's headless
chromium, GStreamer 1.22's webrtcbin in a network namespace) publish to `stage-compositor
serve` with participant tokens from CreateParticipantToken (or signed with an imported key);
the composite is read back from the HLS recording and nginx-rtmp and measured with ffmpeg.

Run one test: `whip_tests.py BINARY TEST_NAME` (`--list` lists them). Exit status 0 means the
test passed. Invoked from Tests/ServerTests/WHIPDaemonTests.swift under `swift test`.
"""
import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import media_check  # noqa: E402
from daemon_tests import CHANNEL_ARN, Failure, NginxRTMP, check, keeping_ingest, script_main, wait_state  # noqa: E402
from live_tests import (SIZE, Publisher, check_phases, composition_events, create_ingest, create_stage,  # noqa: E402
                        live_daemon, participants, publish_url, recording_playlist, session_id, setup_encoder_and_storage,
                        recording_events_of, stage_updates, wait_participant, wait_published)
from s3_tests import BUCKET, CREDENTIALS, FaultProxy, Moto, s3_daemon  # noqa: E402
from whip_clients import CLIENTS, AiortcPublisher, free_udp_port, token, whip_post  # noqa: E402

def whip_daemon(binary, workdir, whip=None, **options):
    settings = {"port": free_udp_port()}
    settings.update(whip or {})
    return live_daemon(binary, workdir, ingest={"whip": settings}, **options)


def metrics_text(d):
    return urllib.request.urlopen(f"{d.endpoint}/metrics", timeout=10).read().decode()


def metric(d, name, labels="", text=None):
    """The sum of `name`'s samples whose labels contain `labels`, from `text` or a fresh read."""
    total = 0.0
    for line in (text if text is not None else metrics_text(d)).splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if labels in line:
                total += float(line.rsplit(" ", 1)[1])
    return total


# --------------------------------------------------------------------------------------------

def test_mixed_stage_aiortc_h264_vp8_and_rtmp(d):
    """aiortc publishes H.264 + Opus and VP8 + Opus over WHIP, and ffmpeg pushes RTMP, on one
    stage: the composite shows the three colours and tones; the WHIP participants are WHIP in
    the API with their token's user ID and attributes; DELETE makes one leave; the composition
    stops by itself after the last one leaves."""
    nginx = NginxRTMP(d.workdir)
    clients = []
    try:
        d.reconfigure(idle=3.0, channels=[{"arn": CHANNEL_ARN, "ingestEndpoint": f"rtmp://127.0.0.1:{nginx.port}/live",
                                           "streamKey": "composite"}], extra=d.config_extra)
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        stage = create_stage(d)
        arn_stage = stage["arn"]
        whip_url = stage["endpoints"].get("whip", "")
        check(whip_url.startswith("http://") and whip_url.endswith("/" + arn_stage.rsplit("/", 1)[1]), f"endpoints: {stage}")
        red = token(d, arn_stage, "red-h264", attributes={"colour": "red"})
        check(red["participantId"] and red["token"].count(".") == 2 and red["duration"] == 720 and red["expirationTime"],
              f"participant token: {red}")
        header = json.loads(base64.urlsafe_b64decode(red["token"].split(".")[0] + "=="))
        check(header["alg"] == "ES384" and header["kid"].startswith("arn:aws:ivs:"), f"token header: {header}")
        green = token(d, arn_stage, "green-vp8")
        blue = create_ingest(d, arn_stage, "blue-rtmp", secure=False)

        started = time.time()
        clients.append(AiortcPublisher(whip_url, red["token"], "red", 440, d.workdir, "red", codec="h264", duration=300))
        wait_published(d, arn_stage, red["participantId"])
        print(f"aiortc H.264 publisher: Participant Published {time.time() - started:.2f} s after start")
        clients.append(AiortcPublisher(whip_url, green["token"], "green", 660, d.workdir, "green", codec="vp8", duration=300))
        wait_published(d, arn_stage, green["participantId"])
        rtmp = Publisher(publish_url(stage, blue, False), "blue", 880, d.workdir, "blue")
        clients.append(rtmp)
        wait_published(d, arn_stage, blue["participantId"])

        destinations = [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}},
                        {"channel": {"channelArn": CHANNEL_ARN, "encoderConfigurationArn": enc}}]
        composition = d.cli("start-composition", "--stage-arn", arn_stage, "--destinations", json.dumps(destinations),
                            "--layout", json.dumps({"grid": {"gridGap": 0}}))["composition"]
        arn = composition["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        t0 = time.time()
        session = session_id(d, arn_stage)
        time.sleep(8)
        # Per-participant WebRTC metrics.
        check(metric(d, "stage_compositor_whip_packets_received", red["participantId"]) > 100,
              "per-participant packets received in /metrics")
        # Green leaves with DELETE (the WHIP client's normal end), red and blue stay.
        leaving_at = time.time() - t0
        clients[1].stop()  # green DELETEs its WHIP resource
        wait_participant(d, arn_stage, session, green["participantId"], "DISCONNECTED", timeout=10)
        left_at = time.time() - t0
        time.sleep(5)
        end_at = time.time() - t0
        for client in clients:
            client.stop()
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=40) == "STOPPED", "composition stops by itself")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        names = composition_events(d, arn)
        check(names[0] == "Session Start" and names[-1] == "Session End", f"composition events: {names}")

        for tok in (red, green):
            p = d.cli("get-participant", "--stage-arn", arn_stage, "--session-id", session,
                      "--participant-id", tok["participantId"])["participant"]
            check(p["protocol"] == "WHIP" and p["userId"] == tok["userId"] and p["published"], f"WHIP participant: {p}")
            events = d.cli("list-participant-events", "--stage-arn", arn_stage, "--session-id", session,
                           "--participant-id", tok["participantId"])["events"]
            check([e["name"] for e in events] == ["JOINED", "PUBLISH_STARTED", "PUBLISH_STOPPED", "LEFT"],
                  f"participant events of {tok['userId']}: {events}")
        detail = d.cli("get-participant", "--stage-arn", arn_stage, "--session-id", session,
                       "--participant-id", red["participantId"])["participant"]
        check(detail.get("attributes", {}).get("colour") == "red", f"token attributes: {detail}")
        check(d.stop() == 0, "exit status")
    finally:
        for client in clients:
            client.kill()
        nginx.stop()
    phases = [(1.5, leaving_at - 0.3, [("red", 440), ("green", 660), ("blue", 880)]),
              (left_at + 1.0, end_at - 0.5, [("red", 440), ("blue", 880)])]
    playlist = recording_playlist(d, final)
    check_phases("recording", media_check.Video(playlist, *SIZE), media_check.Audio(playlist), phases, d.binary)
    flv = nginx.recording("composite")
    check_phases("channel", media_check.Video(flv, *SIZE), media_check.Audio(flv), phases, d.binary)


def test_whip_http_rules(d):
    """What needs real WebRTC clients, each alone while a publisher keeps publishing: a token
    signed with an imported public key publishes; garbage datagrams and a DTLS fingerprint
    mismatch end nothing but that session; DisconnectParticipant disconnects a real publisher,
    and deleting a public key ends the sessions it admitted. (The HTTP rules — CORS, 405, 401,
    403, 415, 400, 409, revoked tokens, DELETE — are WHIPEndpointTests, in process.)"""
    d.start()
    stage = create_stage(d)
    arn_stage = stage["arn"]
    url = stage["endpoints"]["whip"]
    good = token(d, arn_stage, "good")
    # The good publisher must outlast everything below on a loaded machine (over 60 s measured
    # with a build running beside it); it is killed at the end.
    clients = [AiortcPublisher(url, good["token"], "red", 440, d.workdir, "good", duration=600)]
    try:
        wait_published(d, arn_stage, good["participantId"])
        session = session_id(d, arn_stage)

        # A customer key: import its public half, sign a token with the private half (Python).
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, utils
        private = ec.generate_private_key(ec.SECP384R1())
        pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                                serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        key = d.cli("import-public-key", "--public-key-material", pem, "--name", "customer")["publicKey"]

        def sign(claims):
            def b64(data):
                return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
            head = b64(json.dumps({"alg": "ES384", "typ": "JWT", "kid": key["arn"]}).encode())
            body_part = b64(json.dumps(claims).encode())
            der = private.sign(f"{head}.{body_part}".encode(), ec.ECDSA(hashes.SHA384()))
            r, s = utils.decode_dss_signature(der)
            return f"{head}.{body_part}." + b64(r.to_bytes(48, "big") + s.to_bytes(48, "big"))

        now = int(time.time())
        claims = {"exp": now + 600, "iat": now, "jti": "customerSigned1", "user_id": "customer", "resource": arn_stage,
                  "topic": arn_stage.rsplit("/", 1)[1], "events_url": "wss://example", "whip_url": url,
                  "capabilities": {"allow_publish": True}, "attributes": {}, "version": "1.0"}
        clients.append(AiortcPublisher(url, sign(claims), "green", 660, d.workdir, "customer", duration=600))
        wait_published(d, arn_stage, "customerSigned1")

        # The media port: garbage, and a STUN check with the right ufrag but a wrong password.
        port = d.config["ingest"]["whip"]["port"]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for size in (1, 20, 100, 1200):
                s.sendto(os.urandom(size), ("127.0.0.1", port))
            s.sendto(bytes([0x80, 0x60]) + os.urandom(100), ("127.0.0.1", port))
        clients.append(AiortcPublisher(url, token(d, arn_stage, "bad-fingerprint")["token"], "blue", 880, d.workdir,
                                       "fingerprint", duration=20, extra=["--corrupt-fingerprint"]))
        result = clients[-1].result(timeout=60)
        check(result.get("dtls_state") != "connected", f"a DTLS fingerprint mismatch never connects: {result}")
        check("DTLS" in d.log() and "fingerprint" in d.log(), f"the daemon logs the fingerprint mismatch:\n{d.log()}")

        time.sleep(2)
        listed = {p["participantId"]: p for p in participants(d, arn_stage, session)}
        check(listed[good["participantId"]]["state"] == "CONNECTED", f"the good publisher is unaffected: {listed}")
        check(clients[0].process.poll() is None, f"the good publisher still runs: {clients[0].output()}")
        check(metric(d, "stage_compositor_whip_packets_received", good["participantId"]) > 200, "good publisher's packets")

        # DisconnectParticipant disconnects the real publisher.
        d.cli("disconnect-participant", "--stage-arn", arn_stage, "--participant-id", good["participantId"], "--reason", "test")
        wait_participant(d, arn_stage, session, good["participantId"], "DISCONNECTED", timeout=10)
        # Deleting a public key ends the sessions its tokens admitted.
        wait_participant(d, arn_stage, session, "customerSigned1", "CONNECTED", timeout=10)
        d.cli("delete-public-key", "--arn", key["arn"])
        wait_participant(d, arn_stage, session, "customerSigned1", "DISCONNECTED", timeout=10)
        check(d.stop() == 0, "exit status")
    finally:
        for client in clients:
            client.kill()



def stun_binding(username, password):
    """A Binding request with USERNAME, MESSAGE-INTEGRITY (HMAC-SHA1 with `password`) and FINGERPRINT."""
    import hashlib
    import hmac
    import struct
    import zlib

    def attribute(kind, value):
        return struct.pack("!HH", kind, len(value)) + value + b"\0" * (-len(value) % 4)
    transaction = os.urandom(12)
    body = attribute(0x0006, username.encode()) + attribute(0x0024, struct.pack("!I", 1853824767)) + \
        attribute(0x802A, os.urandom(8))
    header = struct.pack("!HHI", 0x0001, len(body) + 24, 0x2112A442) + transaction
    integrity = hmac.new(password.encode(), header + body, hashlib.sha1).digest()
    body += attribute(0x0008, integrity)
    header = struct.pack("!HHI", 0x0001, len(body) + 8, 0x2112A442) + transaction
    crc = (zlib.crc32(header + body) ^ 0x5354554E) & 0xFFFFFFFF
    body += attribute(0x8028, struct.pack("!I", crc))
    return header + body


def stun_error_code(response):
    """The ERROR-CODE of a STUN response, or None."""
    import struct
    offset = 20
    while offset + 4 <= len(response):
        kind, length = struct.unpack("!HH", response[offset:offset + 4])
        if kind == 0x0009:
            value = response[offset + 4:offset + 4 + length]
            return value[2] * 100 + value[3]
        offset += 4 + length + (-length % 4)
    return None


def test_stun_with_a_wrong_password_is_answered_401(d):
    """A connectivity check that names a real session's ufrag but is signed with a wrong
    password is answered 401 Unauthorized and changes nothing; the session ID is not logged in
    full. (Who may DELETE a session, and PATCH, are WHIPEndpointTests, in process.)"""
    d.start()
    stage = create_stage(d)
    url = stage["endpoints"]["whip"]
    offer = subprocess.run([sys.executable, os.path.join(CLIENTS, "whip_aiortc.py"), "--url", url, "--token", "x",
                            "--offer-only"], capture_output=True, text=True, timeout=60).stdout
    tok = token(d, stage["arn"], "probe")
    status, headers, answer = whip_post(url, tok["token"], offer)
    check(status == 201 and headers.get("Location"), f"POST: {status} {answer}")
    ufrag = re.search(r"a=ice-ufrag:(\S+)", answer).group(1)
    port = int(re.search(r"a=candidate:\S+ 1 udp \d+ \S+ (\d+) typ host", answer).group(1))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(stun_binding(f"{ufrag}:remote", "wrongpasswordwrongpasswo"), ("127.0.0.1", port))
        response, _ = s.recvfrom(2048)
    check(response[0:2] == b"\x01\x11" and stun_error_code(response) == 401, f"STUN answer: {response.hex()}")
    location = headers["Location"]
    with open(d.stderr_path) as f:
        logged = f.read()
    check(location.rsplit("/", 1)[1] not in logged, "the WHIP session ID is not logged in full")
    check(d.stop() == 0, "exit status")


def chromium_fixture(d, **options):
    """make_av_fixture.py's Y4M/WAV for Chromium's fake devices: {"video": ..., "audio": ...}."""
    args = [arg for name, value in options.items() for arg in (f"--{name.replace('_', '-')}", str(value))]
    made = subprocess.run([sys.executable, os.path.join(CLIENTS, "make_av_fixture.py"), "--out-dir", os.path.join(d.workdir, "fixture"),
                           *args], capture_output=True, text=True, timeout=120)
    check(made.returncode == 0, f"fixture: {made.stderr}")
    return json.loads(made.stdout.strip().splitlines()[-1])


def chromium_publishing(d, files, user, *args, record_individually=False, size=None):
    """A composition waiting on an empty stage (recording to storage), and headless Chromium
    publishing the fixture to it over WHIP: (composition ARN, token, the whip_chromium.py process).
    `record_individually`: the stage also records each publisher on its own. `size`: the
    composition's (width, height) instead of the live tests' small one."""
    enc, sto = setup_encoder_and_storage(d)
    if size:
        enc = encoder_of_size(d, size)
    if record_individually:
        recording = {"storageConfigurationArn": sto, "mediaTypes": ["AUDIO_VIDEO"], "hlsConfiguration": {"targetSegmentDurationSeconds": 2},
                     "thumbnailConfiguration": {"recordingMode": "DISABLED"}}
        stage = d.cli("create-stage", "--name", "recorded", "--auto-participant-recording-configuration", json.dumps(recording))["stage"]
    else:
        stage = create_stage(d)
    tok = token(d, stage["arn"], user)
    # The composition waits on the empty stage; the browser's first frame makes it ACTIVE.
    composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
        [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]
    log = open(os.path.join(d.workdir, "chromium.log"), "w")
    browser = subprocess.Popen([sys.executable, os.path.join(CLIENTS, "whip_chromium.py"), "--url", stage["endpoints"]["whip"],
                                "--token", tok["token"], "--video", files["video"], "--audio", files["audio"], *args],
                               stdout=subprocess.PIPE, stderr=log, text=True)
    return composition["arn"], tok, browser


def encoder_of_size(d, size):
    """An encoder configuration of `size` (width, height) at 30 fps."""
    return d.cli("create-encoder-configuration", "--name", f"e{size[0]}x{size[1]}", "--video",
                 f"width={size[0]},height={size[1]},framerate=30,bitrate=1000000")["encoderConfiguration"]["arn"]


def stop_browser(browser):
    """Ends a whip_chromium.py still running: SIGTERM, on which it closes Chromium's process
    group (killed at once, it would leave Chromium running), then SIGKILL after 30 s."""
    if browser.poll() is not None:
        return
    browser.terminate()
    try:
        browser.wait(timeout=30)
    except subprocess.TimeoutExpired:
        browser.kill()
        browser.wait()


def chromium_result(browser, watch):
    """Runs `watch()` while Chromium publishes, then returns its JSON result, checked to be a
    201 and connected; Chromium never outlives the test."""
    try:
        watch()
        out, _ = browser.communicate(timeout=120)
    finally:
        stop_browser(browser)
    result = json.loads(out.strip().splitlines()[-1])
    check(result.get("ok") and result.get("status") == 201, f"chromium: {result}")
    return result


def test_chromium_is_recorded_individually(d):
    """Headless Chromium publishing a blue picture and a 440 Hz tone over WHIP to a stage with
    autoParticipantRecordingConfiguration, for 8 s: its recording holds H.264 and Opus as
    Chromium sent them (no transcoding), plays for the publishing time within a segment, is
    blue with its tone, and the events say Recording Start then Recording End."""
    d.start()
    _, sto = setup_encoder_and_storage(d)
    files = chromium_fixture(d, color="0,0,255", tone_hz=440, flash_every=0, width=640, height=360)
    recording = {"storageConfigurationArn": sto, "mediaTypes": ["AUDIO_VIDEO"], "hlsConfiguration": {"targetSegmentDurationSeconds": 2},
                 "thumbnailConfiguration": {"recordingMode": "INTERVAL", "storage": ["LATEST"], "targetIntervalSeconds": 2}}
    stage = d.cli("create-stage", "--name", "chromium", "--auto-participant-recording-configuration", json.dumps(recording))["stage"]
    tok = token(d, stage["arn"], "browser")
    log = open(os.path.join(d.workdir, "chromium.log"), "w")
    browser = subprocess.Popen([sys.executable, os.path.join(CLIENTS, "whip_chromium.py"), "--url", stage["endpoints"]["whip"],
                                "--token", tok["token"], "--video", files["video"], "--audio", files["audio"], "--duration", "8"],
                               stdout=subprocess.PIPE, stderr=log, text=True)
    chromium_result(browser, lambda: None)
    events = recording_events_of(d, tok["participantId"])
    names = [e["detail"]["event_name"] for e in events]
    check(names == ["Recording Start", "Recording End"], f"recording events: {names}")
    root = os.path.join(d.recordings, events[-1]["detail"]["recording_s3_key_prefix"])
    playlist = os.path.join(root, "media", "hls", "high", "playlist.m3u8")
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name:format=duration", "-of", "csv=p=0", playlist],
                           capture_output=True, text=True, timeout=60).stdout.split()
    print(f"Chromium recording: {' '.join(probe)}")
    check("h264" in probe and "opus" in probe, f"H.264 and Opus as sent: {probe}")
    duration = float(probe[-1])
    check(abs(duration - 8) <= 2.5, f"recording {duration:.1f} s for 8 s of publishing")
    problems = media_check.check_colour_and_tone(playlist, 640, 360, "blue", 440, skip=1.0)
    check(not problems, "blue and 440 Hz throughout: " + ", ".join(problems[:20]))
    check(os.path.exists(os.path.join(root, "media", "latest_thumbnail", "high", "thumb.jpg")), "the latest thumbnail")
    check(d.stop() == 0, "exit status")


def playlist_date(path):
    """EXT-X-PROGRAM-DATE-TIME of a media playlist's first segment, in s since 1970."""
    import datetime
    with open(path) as f:
        match = re.search(r"^#EXT-X-PROGRAM-DATE-TIME:(\S+)$", f.read(), re.M)
    check(match is not None, f"{path} has EXT-X-PROGRAM-DATE-TIME")
    return datetime.datetime.fromisoformat(match.group(1).replace("Z", "+00:00")).timestamp()


def visible_colours(video, names=("red", "green", "blue")):
    """Per frame, the set of `names` covering at least 1 % of the picture."""
    import numpy
    frames = video.frames.astype(numpy.int16)
    found = []
    for frame in frames:
        present = set()
        for name in names:
            distance = numpy.abs(frame - numpy.array(media_check.PALETTE[name], dtype=numpy.int16)).sum(axis=2)
            if (distance < 120).mean() > 0.01:
                present.add(name)
        found.append(frozenset(present))
    return found


def colour_changes(sets, start, fps=30):
    """(wall time, before, after) of each change of the visible set between runs that last 5
    frames or more on both sides (a change is timed by its first frame)."""
    runs = []
    for index, value in enumerate(sets):
        if runs and runs[-1][0] == value:
            runs[-1][2] = index
        else:
            runs.append([value, index, index])
    steady = [run for run in runs if run[2] - run[1] + 1 >= 5]
    changes = []
    for before, after in zip(steady, steady[1:]):
        if before[0] != after[0]:
            changes.append((start + after[1] / fps, before[0], after[0]))
    return changes


def test_session_rerender_matches_the_live_composite(d):
    """The #24 acceptance, in one stage on a moto_server bucket: autoParticipantRecordingConfiguration
    (2 s segments, thumbnails INTERVAL to SEQUENTIAL and LATEST, a 30 s reconnect window), composed
    live to a composite recording too. Publishers: ffmpeg RTMP (red, 440 Hz) that drops (SIGKILL)
    and comes back within the window, aiortc WHIP H.264 (green, 660 Hz), headless Chromium WHIP
    (blue). Each gets exactly one recording (the RTMP one with one discontinuity), ended, VOD,
    with its colour and tone, thumbnails, Start/End events in order, recordingState STOPPED.
    Then `compose --stage s3://…/<stageId>/<sessionId>` re-renders the session with the live
    layout: at every join and leave the set of visible colours changes within one frame (plus 8 ms
    of placement) of the live composite's, both placed on the wall clock by EXT-X-PROGRAM-DATE-TIME. And
    with pip-bottom-right: one participant fills the canvas, another shows in the bottom-right window."""
    moto = Moto(d.workdir)
    proxy = FaultProxy(moto.port)
    publishers = []
    try:
        s3_daemon(d, proxy)
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        recording = {"storageConfigurationArn": sto, "mediaTypes": ["AUDIO_VIDEO"], "recordingReconnectWindowSeconds": 30,
                     "hlsConfiguration": {"targetSegmentDurationSeconds": 2},
                     "thumbnailConfiguration": {"recordingMode": "INTERVAL", "storage": ["SEQUENTIAL", "LATEST"], "targetIntervalSeconds": 2}}
        stage = d.cli("create-stage", "--name", "rerender", "--auto-participant-recording-configuration", json.dumps(recording))["stage"]
        arn_stage = stage["arn"]
        composition = d.cli("start-composition", "--stage-arn", arn_stage, "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]
        ingest = create_ingest(d, arn_stage, "rtmp-red", secure=False)
        url = publish_url(stage, ingest, False)
        published = {}

        def publishing(name, start):
            published.setdefault(name, []).append([start, None])

        def stopped(name):
            published[name][-1][1] = time.time()

        red = Publisher(url, "red", 440, d.workdir, "red-1")
        publishers.append(red)
        wait_published(d, arn_stage, ingest["participantId"])
        publishing("red", time.time())
        session = session_id(d, arn_stage)
        time.sleep(3)
        green_token = token(d, arn_stage, "aiortc-green")
        green = AiortcPublisher(stage["endpoints"]["whip"], green_token["token"], "green", 660, d.workdir, "green", duration=60)
        publishers.append(green)
        wait_published(d, arn_stage, green_token["participantId"], timeout=30)
        publishing("green", time.time())
        time.sleep(3)
        files = chromium_fixture(d, color="0,0,255", tone_hz=880, flash_every=0, width=320, height=240)
        blue_token = token(d, arn_stage, "chromium-blue")
        log = open(os.path.join(d.workdir, "chromium.log"), "w")
        browser = subprocess.Popen([sys.executable, os.path.join(CLIENTS, "whip_chromium.py"), "--url", stage["endpoints"]["whip"],
                                    "--token", blue_token["token"], "--video", files["video"], "--audio", files["audio"],
                                    "--duration", "14"], stdout=subprocess.PIPE, stderr=log, text=True)
        wait_published(d, arn_stage, blue_token["participantId"], timeout=60)
        publishing("blue", time.time())
        time.sleep(4)
        red.kill()                                                  # the RTMP connection drops
        stopped("red")
        time.sleep(4)
        red = Publisher(url, "red", 440, d.workdir, "red-2")        # and comes back within the window
        publishers.append(red)
        wait_participant(d, arn_stage, session, ingest["participantId"], "CONNECTED")
        publishing("red", time.time())
        time.sleep(4)
        green.stop()
        stopped("green")
        chromium_result(browser, lambda: None)
        stopped("blue")
        time.sleep(3)
        red.stop()
        stopped("red")
        time.sleep(1.5)
        d.cli("stop-composition", "--arn", composition["arn"])
        check(wait_state(d, composition["arn"], {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition stopped")
        participants = {"red": ingest["participantId"], "green": green_token["participantId"], "blue": blue_token["participantId"]}
        events = {name: recording_events_of(d, pid, timeout=90) for name, pid in participants.items()}
        stage_id = arn_stage.rsplit("/", 1)[1]
        local = os.path.join(d.workdir, "session")
        moto.download(f"{stage_id}/{session}", local)
        for name, pid in participants.items():
            names = [e["detail"]["event_name"] for e in events[name]]
            check(names == ["Recording Start", "Recording End"], f"{name} recording events: {names}")
            recordings = os.listdir(os.path.join(local, pid))
            check(len(recordings) == 1, f"{name}: one recording, not {recordings}")
            root = os.path.join(local, pid, recordings[0])
            with open(os.path.join(root, "events", "recording-ended.json")) as f:
                ended = json.load(f)
            check(ended["recording_status"] == "RECORDING_ENDED" and ended["participant_id"] == pid and ended["session_id"] == session
                  and ended["media"]["hls"]["duration_ms"] == events[name][-1]["detail"]["recording_duration_ms"], f"{name}: {ended}")
            playlist = os.path.join(root, "media", "hls", "high", "playlist.m3u8")
            with open(playlist) as f:
                text = f.read()
            check("#EXT-X-PLAYLIST-TYPE:VOD" in text and "#EXT-X-ENDLIST" in text, f"{name}: VOD playlist")
            check(text.count("#EXT-X-DISCONTINUITY") == (1 if name == "red" else 0), f"{name} discontinuities:\n{text}")
            for thumbnail in ("media/thumbnails/high/1.jpg", "media/latest_thumbnail/high/thumb.jpg"):
                check(os.path.exists(os.path.join(root, thumbnail)), f"{name}: {thumbnail}")
            duration = float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", playlist],
                                            capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[-1])
            publishing_time = sum(end - start for start, end in published[name])
            print(f"{name}: recording {duration:.2f} s for {publishing_time:.2f} s published")
            check(abs(duration - publishing_time) <= 2.0, f"{name}: {duration:.2f} s recorded for {publishing_time:.2f} s published")
            tone = {"red": 440, "green": 660, "blue": 880}[name]
            problems = media_check.check_colour_and_tone(playlist, 320, 240, name, tone, skip=1.0)
            check(not problems, f"{name}: its colour and tone throughout: " + ", ".join(problems[:20]))
            state = d.cli("get-participant", "--stage-arn", arn_stage, "--session-id", session, "--participant-id", pid)["participant"]
            check(state.get("recordingState") == "STOPPED", f"{name}: recordingState {state.get('recordingState')}")

        # The live composite, and the session composed again from the bucket with the same layout.
        composite = [k for k in moto.keys(stage_id) if "/composite/" in k and k.endswith("playlist.m3u8")]
        check(len(composite) == 1, f"one composite recording: {composite}")
        moto.download(composite[0].rsplit("/", 1)[0], os.path.join(d.workdir, "live"))
        live_playlist = os.path.join(d.workdir, "live", "playlist.m3u8")
        environment = dict(os.environ, **CREDENTIALS, AWS_ENDPOINT_URL=moto.endpoint, AWS_REGION="us-east-1")

        def rerender(layout, out, *extra):
            result = subprocess.run([d.binary, "compose", "--stage", f"s3://{BUCKET}/{stage_id}/{session}", "--layout", layout, *extra,
                                     "--encoder", f"{SIZE[0]}x{SIZE[1]}@30:600k", "--thumbnails", "off", "--out", out],
                                    capture_output=True, text=True, timeout=600, env=environment)
            print(result.stderr.strip())
            check(result.returncode == 0, f"compose --stage: {result.stderr}")
            multivariant = result.stdout.strip().splitlines()[-1]
            media = [os.path.join(r, f) for r, _, fs in os.walk(os.path.dirname(multivariant)) for f in fs if f == "playlist.m3u8"]
            return multivariant, media[0]

        _, rerendered = rerender("grid", os.path.join(d.workdir, "rerender"))
        live_start, rerender_start = playlist_date(live_playlist), playlist_date(rerendered)
        live_changes = colour_changes(visible_colours(media_check.Video(live_playlist, *SIZE, fps=30)), live_start)
        rerender_sets = visible_colours(media_check.Video(rerendered, *SIZE, fps=30))
        rerender_changes = colour_changes(rerender_sets, rerender_start)
        # The re-render spans the recorded media; the live composite also shows the time
        # before the first media and after the last (it was stopped later).
        rerender_end = rerender_start + len(rerender_sets) / 30
        show = lambda changes, zero: ", ".join(f"{t - zero:.3f}s {'+'.join(sorted(b)) or '-'}→{'+'.join(sorted(a)) or '-'}" for t, b, a in changes)
        print(f"live composite (from {live_start:.3f}): {show(live_changes, live_start)}")
        print(f"re-rendered    (from {rerender_start:.3f}): {show(rerender_changes, live_start)}")
        check(len(live_changes) >= 7, f"the live composite shows every join and leave: {show(live_changes, live_start)}")
        # The bar is one frame (33 ms). Both composites show a change at their first
        # frame asking for a time at or after it; their frame grids differ by a phase, so the
        # same change lands less than a frame apart, plus how far the recordings place it from
        # where the live stage clock had it: the dates' millisecond rounding and the first
        # sample's timing, measured at most 6.4 ms. Measured over 4 runs: at most 32 ms.
        worst = 0.0
        tolerance = 1 / 30 + 0.008
        deltas = []
        for t, before, after in live_changes:
            if t < rerender_start + 0.2 or t > rerender_end - 0.2:
                continue   # outside the recorded media: the live composite's own start and end
            match = [c for c in rerender_changes if c[1] == before and c[2] == after and abs(c[0] - t) < 1.0]
            check(match, f"re-render has {sorted(before)}→{sorted(after)} near {t - live_start:.3f}s: {show(rerender_changes, live_start)}")
            signed = min((c[0] - t for c in match), key=abs)
            delta = abs(signed)
            worst = max(worst, delta)
            deltas.append(f"{'+'.join(sorted(after - before)) or '-'.join(sorted(before - after))} {signed * 1000:+.0f}")
            check(delta <= tolerance, f"{sorted(before)}→{sorted(after)} at {t - live_start:.3f}s live, {delta * 1000:.0f} ms apart re-rendered")
        print(f"every join and leave within {worst * 1000:.1f} ms of the live composite (re-render minus live, ms: {', '.join(deltas)})")

        # The same session as picture-in-picture, green in the window (recordings carry no
        # attributes: the preset's pipParticipantAttribute is given on the command line).
        _, pip = rerender("pip-bottom-right", os.path.join(d.workdir, "rerender-pip"),
                          "--participant-attribute", f"{participants['green']}:isPip=true")
        video = media_check.Video(pip, *SIZE, fps=10)
        placed = media_check.tiles(d.binary, 2, f"{SIZE[0]}x{SIZE[1]}", layout="pip-bottom-right", pip=2)
        main_at, window_at = media_check.centre(placed[1]), media_check.centre(placed[2])
        pip_start = playlist_date(pip)
        two = [t for t, _, after in rerender_changes if len(after) >= 2]
        check(two, "a time with two participants")
        at = two[0] + 1.0 - pip_start
        main_colour, window_colour = video.name(at, *main_at), video.name(at, *window_at)
        x, y, w, h = placed[2]
        print(f"pip-bottom-right at {at:.1f}s: {main_colour} fills the canvas, {window_colour} in the window at {placed[2]}")
        check(main_colour == "red" and window_colour == "green", f"PiP: red fills the canvas ({main_colour}), green in the window ({window_colour})")
        check(x + w >= SIZE[0] * 0.85 and y + h >= SIZE[1] * 0.85 and w < SIZE[0] / 2, f"the window is small, bottom right: {placed[2]}")
        check(d.stop() == 0, "exit status")
    finally:
        for publisher in publishers:
            publisher.kill()
        proxy.close()
        moto.stop()


def stop_and_read_recording(d, arn):
    """Stops the composition and the daemon; the recording's playlist."""
    d.cli("stop-composition", "--arn", arn)
    check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition stopped")
    final = d.cli("get-composition", "--arn", arn)["composition"]
    check(d.stop() == 0, "exit status")
    return recording_playlist(d, final)


def source_skew(result):
    """(flash time, beep minus flash) in s, in what the page received from Chromium's fake
    devices, on the capture clock, for each flash (the page's `measure=flash`). The camera and
    the microphone start their files independently, so the stream a page sends carries an
    offset of its own."""
    source = result.get("source") or {}
    beeps = [beep["ts_us"] / 1000 for beep in source.get("beeps", [])]
    skews = []
    for flash in source.get("flashes", []):
        captured = flash["ts_us"] / 1000 + source["video_lag_ms"]   # the frame's time on the audio's clock
        beep = min(beeps, key=lambda b: abs(b - captured), default=None)
        if beep is not None and abs(beep - captured) < 400:
            skews.append((captured / 1000, (beep - captured) / 1000))
    return skews


# Frames (at 30 fps) between the Chromium fixture's flashes: irregular (drawn once, 20 to 40)
# and 30 s before they repeat, so that the flashes of the composite can be matched with the
# source's by the pattern of their times.
FLASH_GAP_FRAMES = (27, 29, 23, 32, 35, 24, 22, 22, 20, 32, 37, 29, 21, 27, 36, 37,
                    31, 28, 25, 23, 28, 26, 20, 40, 28, 28, 26, 25, 29, 29, 40, 31)


def matched_with_source(composite, source, tolerance=0.05):
    """Each composite flash (time, offset) that shows a flash the page timed (time, skew), as
    (composite offset, source skew, how far off the constant its time is): the two clocks
    differ by a constant, taken as the one that lines up the most flashes. The flash gaps are
    irregular, so only the right constant lines up more than a few; it must line up at least 3
    more than any other."""
    def aligned(delta):
        pairs = []
        for at, offset in composite:
            nearest = min(source, key=lambda s: abs(at - s[0] - delta))
            if abs(at - nearest[0] - delta) < tolerance:
                pairs.append((offset, nearest[1], at - nearest[0] - delta))
        return pairs
    candidates = sorted({round(c - s, 3) for c, _ in composite for s, _ in source})
    counted = sorted(((len(aligned(delta)), delta) for delta in candidates), reverse=True)
    if not counted:
        return []
    best, delta = counted[0]
    runner_up = max((n for n, other in counted if abs(other - delta) > 3 * tolerance), default=0)
    check(best >= runner_up + 3, f"the composite's flashes line up with the source's one way only: "
                                 f"{best} at {delta:.3f} s, {runner_up} another way")
    return aligned(delta)


def chromium_flash_and_beep(d, capture_time, bound, codec="h264"):
    """Headless Chromium publishes a blue picture with a 880 Hz tone, flashing white with a
    2 kHz beep at irregular instants about a second apart, from Y4M/WAV fake devices: the
    composite shows blue and the tone, and each flash and its beep are within `bound` s of
    each other once the offset the source itself carries (measured in the page) is taken out.
    The time from the page's first frame to the composition's ACTIVE is reported. `codec`: the
    video codec Chromium is made to send (h264: OpenH264; vp8: libvpx). WHIP_FLASH_SECONDS: how
    long it publishes (default 16; the issue's measurement: 60)."""
    files = chromium_fixture(d, color="0,0,255", tone_hz=880, flash_gaps=",".join(str(f / 30) for f in FLASH_GAP_FRAMES),
                             duration=sum(FLASH_GAP_FRAMES) / 30, width=320, height=180)
    # Long enough an idle timeout for Chromium to start while the composition waits.
    d.reconfigure(idle=20.0, extra=dict(d.config_extra, logLevel=os.environ.get("WHIP_TEST_LOG_LEVEL", "info")))
    d.start()
    seconds = os.environ.get("WHIP_FLASH_SECONDS", "16")
    arn, tok, browser = chromium_publishing(d, files, "browser", "--duration", seconds, "--timeout", str(int(seconds) + 74),
                                            "--measure-flash", "--video-codec", codec, *(["--codec-only"] if codec != "h264" else []),
                                            *(["--capture-time"] if capture_time else []))
    active_at = None
    capture_times = 0.0

    def wait_active():
        nonlocal active_at, capture_times
        deadline = time.time() + 60
        while time.time() < deadline and browser.poll() is None:
            state = d.cli("get-composition", "--arn", arn)["composition"]["state"]
            if state == "ACTIVE":
                active_at = time.time()
                break
            check(state == "STARTING", f"composition {state}")
            time.sleep(0.05)
        check(active_at, "the composition became ACTIVE once the browser published")
        # While it publishes (its gauges go when it leaves): did its audio carry capture times?
        while time.time() < deadline and browser.poll() is None:
            capture_times = max(capture_times, metric(d, "stage_compositor_whip_audio_capture_times", tok["participantId"]))
            time.sleep(0.5)
    result = chromium_result(browser, wait_active)
    times = result["times_ms"]
    # requestVideoFrameCallback may not fire in a headless page: getUserMedia's end is the
    # next best "first frame".
    first_frame = (result["time_origin_ms"] + times.get("first_frame", times.get("gum_resolved", 0))) / 1000
    print(f"Chromium: first frame to composition ACTIVE {(active_at - first_frame) * 1000:.0f} ms "
          f"(page: first frame {times.get('first_frame', -1):.0f} ms, POST {times.get('post_sent', -1):.0f} ms, "
          f"201 {times.get('created_201', -1):.0f} ms, connected {times.get('connected', -1):.0f} ms; "
          f"codec {((result.get('outbound') or {}).get('video') or {}).get('codec')}; "
          f"abs-capture-time offered {result.get('capture_time_offered')}, audio packets with it {capture_times:.0f})")
    check(bool(result.get("capture_time_offered")) == capture_time, f"abs-capture-time offered: {result.get('capture_time_offered')}")
    sent = (((result.get("outbound") or {}).get("video") or {}).get("codec") or "").lower()
    check(sent == f"video/{codec}", f"Chromium sent {sent}, not video/{codec}")
    check((capture_times > 0) == capture_time, f"audio capture times received: {capture_times}")
    playlist = stop_and_read_recording(d, arn)
    # Between flashes (wherever they fall in the composite) the picture is blue, and the tone sounds.
    frames = media_check.FrameLuma(playlist, *SIZE, SIZE[0] // 2, SIZE[1] // 2)
    between = frames.names(3, 13, away_from=frames.rises(225, 0.5))
    check(len(between) > 100 and set(between) == {"blue"}, f"between flashes: {sorted(set(between))} ({len(between)} frames)")
    check(media_check.Audio(playlist).tone_level(880, 3, 12) > 0.03, "the 880 Hz tone sounds")
    onsets = media_check.av_onsets(playlist, *SIZE, 225, 0.4)
    offsets = [offset for _, offset in onsets]
    check(len(offsets) >= 8, f"flashes matched with beeps: {offsets}")
    timed = source_skew(result)
    skews = [skew for _, skew in timed]
    check(len(skews) >= 8, f"the page timed the source's flashes and beeps: {result.get('source')}")
    # The page reads the frames' capture times against its own clock; the audio chunks'
    # timestamps must be on that clock already (they arrive within a few ms of them).
    check(abs(result["source"]["audio_lag_ms"]) < 100, f"audio timestamps on the page's clock: {result['source']['audio_lag_ms']}")
    print(f"A/V offset (audio - video), Chromium{' with abs-capture-time' if capture_time else ''}: "
          f"{[round(o * 1000) for o in offsets]} ms; the source's own {[round(s * 1000) for s in skews]} ms")
    # Chromium's fake microphone skips 10 ms buffers when the machine is busy (its file then
    # runs behind the camera's), so the source's own offset may step during a run, by over
    # 100 ms under heavy load.
    if capture_time:
        # Capture times carry each step, and each is followed: every composite flash must be
        # within `bound` of the source's own offset at that same flash.
        pairs = matched_with_source(onsets, timed)
        residuals = [r for _, _, r in pairs]
        print(f"A/V offset flash by flash (composite, source): {[(round(o * 1000), round(s * 1000)) for o, s, _ in pairs]} ms "
              f"(times lined up within {round(min(residuals, default=0) * 1000)}..{round(max(residuals, default=0) * 1000)} ms)")
        check(len(pairs) >= 8, f"composite flashes matched with the source's: {len(pairs)}")
        apart = [(round(o * 1000), round(s * 1000)) for o, s, _ in pairs if abs(o - s) > bound]
        check(not apart, f"A/V offsets more than {bound * 1000:.0f} ms from the source's own at the same flash "
                         f"(composite, source): {apart} ms")
    else:
        # Sender reports are smoothed (libwebrtc's audio reports wobble by a frame), so a step of
        # the source is followed over seconds: each composite offset must lie within `bound` of
        # what the source did over the run (when it held still, as it mostly does: within
        # `bound` of that one offset).
        low, high = min(skews), max(skews)
        outside = [o for o in offsets if not low - bound <= o <= high + bound]
        check(not outside, f"A/V offsets more than {bound * 1000:.0f} ms beyond the source's own "
                           f"({low * 1000:.0f} to {high * 1000:.0f} ms): {[round(o * 1000) for o in outside]} ms")

def test_chromium_publishes_flash_and_beep(d):
    """chromium_flash_and_beep, audio timed by Chromium's sender reports. libwebrtc stamps an
    audio SR with the time the frame was encoded, not captured, so what Chromium itself claims
    puts its audio 7-25 ms late (measured); the composite adds its half frame (±17 ms) at most.
    Held to 60 ms: the 40 ms of the capture-time test and the 20 ms audio frame of the bias."""
    chromium_flash_and_beep(d, capture_time=False, bound=0.060)


def test_chromium_capture_times_keep_flash_and_beep_in_sync(d):
    """chromium_flash_and_beep, with the page offering abs-capture-time (as a page may, with
    setHeaderExtensionsToNegotiate): audio and video timed by the capture instants Chromium
    stamps on its packets, held to 40 ms."""
    chromium_flash_and_beep(d, capture_time=True, bound=0.040)


def test_chromium_vp8_capture_times_keep_flash_and_beep_in_sync(d):
    """chromium_flash_and_beep with VP8 (libvpx) and abs-capture-time, held to 40 ms: one media
    path whatever the codec."""
    chromium_flash_and_beep(d, capture_time=True, bound=0.040, codec="vp8")


def test_chromium_simulcast_composes_the_largest_layer(d):
    """H.264 simulcast from Chromium: see chromium_simulcast."""
    chromium_simulcast(d, "h264")


def test_chromium_vp8_simulcast_composes_the_largest_layer(d):
    """VP8 simulcast from Chromium (one libvpx encoder for both layers): see chromium_simulcast."""
    chromium_simulcast(d, "vp8")


def test_chromium_simulcast_composes_the_layer_its_tile_needs(d):
    """Headless Chromium publishes a 640x360 picture in two simulcast layers (320x180 and
    640x360). A 320x180 composition's one tile is covered by the half-size layer, and the
    daemon composes that one: Chromium is asked for its keyframe and the larger layer's frames
    are not decoded. A second composition of the stage at 640x360 needs the full picture: the
    daemon moves up to it; once that composition stops, back down. Followed in the
    participant's metrics (the size of the layer delivered to the decoders)."""
    files = chromium_fixture(d, color="0,255,0", tone_hz=550, flash_every=0, duration=2, width=640, height=360)
    d.reconfigure(idle=30.0)
    d.start()
    arn, tok, browser = chromium_publishing(d, files, "fitting-browser", "--simulcast", "h:2,f:1", "--duration", "40", "--timeout", "100")
    stage_arn = d.cli("get-composition", "--arn", arn)["composition"]["stageArn"]
    widths = []

    def width_now():
        return metric(d, "stage_compositor_whip_video_width", tok["participantId"])

    def wait_for_width(wanted, within):
        deadline = time.time() + within
        while time.time() < deadline and browser.poll() is None:
            width = width_now()
            if not widths or widths[-1] != width:
                widths.append(width)
            if width == wanted:
                return True
            time.sleep(0.25)
        return False

    def watch():
        check(wait_for_width(320, 30), f"the 320x180 composition's tile is covered by the half-size layer: widths {widths}")
        big = d.cli("start-composition", "--stage-arn", stage_arn, "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": d.cli("list-storage-configurations")["storageConfigurations"][0]["arn"],
                     "encoderConfigurationArns": [encoder_of_size(d, (640, 360))]}}]))["composition"]["arn"]
        wait_state(d, big, {"ACTIVE"})
        check(wait_for_width(640, 10), f"a 640x360 composition of the same stage needs the full-size layer: widths {widths}")
        d.cli("stop-composition", "--arn", big)
        check(wait_for_width(320, 10), f"with it stopped, the half-size layer again: widths {widths}")
        others = metric(d, "stage_compositor_whip_frames_of_other_layers", tok["participantId"])
        switches = metric(d, "stage_compositor_whip_simulcast_switches", tok["participantId"])
        check(others > 0 and switches >= 2, f"the other layer's frames are received, not decoded; switches {switches}, others {others}")
        print(f"Chromium simulcast, layer delivered as the compositions changed: widths {widths}, switches {switches}")
    try:
        watch()
    finally:
        stop_browser(browser)
    d.cli("stop-composition", "--arn", arn)


def chromium_simulcast(d, codec):
    """Headless Chromium publishes two simulcast layers, listed smallest first (rid h at half
    size, then rid f at full size), as many pages do: the daemon receives both and, for a
    640x360 composition whose one tile needs the full picture, composes the full-size one (a
    declined offer would make Chromium send only its first, smallest, encoding). The page switches f off from 4 s to 8 s after connecting, as a sender does when
    its bandwidth falls: the daemon falls back to h and returns to f. Checked in the
    participant's metrics while it publishes (layers seen, the size delivered, over time)
    against the page's own outbound statistics, and in the composite."""
    files = chromium_fixture(d, color="255,0,0", tone_hz=660, flash_every=0, duration=2, width=640, height=360)
    d.reconfigure(idle=20.0)
    d.start()
    arn, tok, browser = chromium_publishing(d, files, "simulcast-browser", "--simulcast", "h:2,f:1", "--pause-layer", "f:4:8", "--video-codec", codec, "--duration", "14",
                                            "--timeout", "90", record_individually=codec == "h264", size=(640, 360))
    seen = {"layers": 0.0, "width": 0.0, "height": 0.0, "switches": 0.0, "others": 0.0}
    delivered_widths = []

    def watch_metrics():
        # While it publishes: the participant's metrics, each sample from one read of /metrics
        # (they are removed when it leaves, possibly between two reads).
        deadline = time.time() + 75
        while time.time() < deadline and browser.poll() is None:
            sample = {name: metric(d, f"stage_compositor_whip_{name}", tok["participantId"], text=text)
                      for text in [metrics_text(d)]
                      for name in ("simulcast_layers", "video_width", "video_height", "simulcast_switches", "frames_of_other_layers")}
            if sample["simulcast_layers"]:
                seen.update(layers=max(seen["layers"], sample["simulcast_layers"]), width=sample["video_width"],
                            height=sample["video_height"], switches=sample["simulcast_switches"],
                            others=sample["frames_of_other_layers"])
                if not delivered_widths or delivered_widths[-1] != seen["width"]:
                    delivered_widths.append(seen["width"])
            time.sleep(0.5)
    result = chromium_result(browser, watch_metrics)
    sent = [layer for layer in (result.get("outbound") or {}).get("layers", []) if layer.get("framesSent")]
    print(f"Chromium: {codec} simulcast sent {[(l.get('rid'), l.get('frameWidth'), l.get('frameHeight'), l.get('framesSent'), l.get('qualityLimitationReason')) for l in sent]}; "
          f"daemon: {seen}, widths delivered {delivered_widths}")
    check(len(sent) == 2, f"Chromium sent both layers: {sent}")
    widths = {layer["rid"]: layer.get("frameWidth") or 0 for layer in sent}
    check(seen["layers"] == 2, f"the daemon received both layers: {seen}")
    # The picture delivered is the full-size layer's, as Chromium last encoded it (it may
    # scale a layer down under CPU load, never above the source).
    # Under CPU load Chromium may scale its layers down between our last sample and its
    # final statistics; the picture delivered must still be the larger layer's.
    limited = any(layer.get("qualityLimitationReason") not in (None, "none") for layer in sent)
    check(seen["width"] > widths.get("h", 0) and (seen["width"] == widths.get("f") or limited),
          f"composed the largest layer: {seen} vs {widths}")
    check(seen["others"] > 0, f"the other layer's frames were received and not decoded: {seen}")
    # f, then h while f was off, then f again.
    steps = iter(delivered_widths)
    check(all(any(width == wanted for width in steps) for wanted in (widths.get("f"), widths.get("h"), widths.get("f"))),
          f"fell back to the smaller layer while the larger was off, and returned: {delivered_widths} vs {widths}")
    check(seen["switches"] >= 2, f"two switches at least: {seen}")
    if codec == "h264":
        # The individual recording holds the largest layer as it came (VP8 is not recorded as video).
        events = recording_events_of(d, tok["participantId"])
        check([e["detail"]["event_name"] for e in events] == ["Recording Start", "Recording End"], f"recording events: {events}")
        individual = os.path.join(d.recordings, events[-1]["detail"]["recording_s3_key_prefix"], "media", "hls", "high", "playlist.m3u8")
        streams = media_check.probe(individual).get("streams", [])
        recorded = [stream.get("width") for stream in streams if stream.get("codec_type") == "video"]
        frames = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "frame=width", "-of", "csv=p=0",
                                 "-read_intervals", "%+2", individual], capture_output=True, text=True, timeout=60).stdout.split()
        print(f"Chromium: individual recording of the simulcast publisher: stream width {recorded}, first frames {sorted(set(frames))}")
        check(recorded and (recorded[0] == widths.get("f") or limited) and recorded[0] > widths.get("h", 0),
              f"recorded the largest layer: {recorded} vs {widths}")
        check(frames and all(int(w) > widths.get("h", 0) for w in frames), f"its first frames are the largest layer's: {frames}")
        # Each layer switch starts a new initialization section after a discontinuity; the
        # times go on across them.
        rows = [row.split(",") for row in subprocess.run(
            ["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time,width", "-of", "csv=p=0", individual],
            capture_output=True, text=True, timeout=60).stdout.split()]
        runs = [int(w) for i, (_, w) in enumerate(rows) if i == 0 or rows[i - 1][1] != w]
        backwards = sum(1 for a, b in zip(rows, rows[1:]) if float(b[0]) < float(a[0]))
        with open(individual) as f:
            maps = f.read().count("#EXT-X-MAP")
        print(f"Chromium: recorded layers {runs} in {maps} initialization sections, {len(rows)} frames to {float(rows[-1][0]):.2f} s")
        check(backwards == 0 and maps == len(runs) and runs == [int(w) for w in delivered_widths], f"layers {runs}, {maps} maps, "
              f"{backwards} times backwards; delivered {delivered_widths}")
    playlist = stop_and_read_recording(d, arn)
    video = media_check.Video(playlist, *SIZE)
    check(video.name(6.5, SIZE[0] // 2, SIZE[1] // 2) == "red", f"at 6.5s: {video.colour(6.5, SIZE[0] // 2, SIZE[1] // 2)}")
    check(media_check.Audio(playlist).tone_level(660, 3, 9) > 0.03, "the 660 Hz tone sounds")


def test_aiortc_flash_and_beep_stay_in_sync(d):
    """aiortc publishes a cyan picture flashing white with a 2 kHz beep over a quieter tone once
    a second, frames and samples timed from one clock: in the composite, flash and beep stay
    within 40 ms of each other for the whole run."""
    d.start()
    enc, sto = setup_encoder_and_storage(d)
    stage = create_stage(d)
    tok = token(d, stage["arn"], "sync")
    publisher = AiortcPublisher(stage["endpoints"]["whip"], tok["token"], "cyan", 440, d.workdir, "sync", duration=90,
                                extra=["--flash-every", "1"])
    try:
        wait_published(d, stage["arn"], tok["participantId"])
        composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]
        arn = composition["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        time.sleep(25)
        d.cli("stop-composition", "--arn", arn)
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition stopped")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        check(d.stop() == 0, "exit status")
    finally:
        publisher.kill()
    offsets = media_check.av_offsets(recording_playlist(d, final), *SIZE, 225, 0.4)
    print(f"A/V offset (audio - video), aiortc: {[round(o * 1000) for o in offsets]} ms")
    check(len(offsets) >= 18, f"flashes matched with beeps: {offsets}")
    check(all(abs(o) <= 0.040 for o in offsets), f"|A/V offset| > 40 ms: {offsets}")


def test_whip_bitrate_over_the_maximum_is_disconnected(d):
    """ingest.maxBitrate holds for WHIP too: REMB asks for it, and a sender above it by a quarter
    over 5 s (aiortc's encoders do not go below 500 kbit/s) is disconnected with BITRATE_EXCEEDED."""
    extra = json.loads(json.dumps(d.config_extra))
    extra["ingest"]["maxBitrate"] = 100_000
    d.reconfigure(extra=extra)
    d.start()
    stage = create_stage(d)
    granted = token(d, stage["arn"], "loud")
    client = AiortcPublisher(stage["endpoints"]["whip"], granted["token"], "red", 440, d.workdir, "loud", duration=60)
    try:
        wait_published(d, stage["arn"], granted["participantId"])
        deadline = time.time() + 30
        errors = []
        while time.time() < deadline and not errors:
            errors = [e["detail"] for e in stage_updates(d, stage["arn"])
                      if e["detail"]["event_name"] == "Participant Publish Error" and e["detail"]["participant_id"] == granted["participantId"]]
            time.sleep(0.2)
        check(errors and errors[0].get("error_code") == "BITRATE_EXCEEDED", f"publish error: {errors}\n{d.log()}")
        check("exceeds the maximum 100000" in d.log(), "the reason is logged")
        check(d.stop() == 0, "exit status")
    finally:
        client.kill()


class NetworkNamespace:
    """A namespace joined to the host by a veth pair (scripts/whip-clients/netns_veth.sh)."""

    def __init__(self, name, host_ip, ns_ip):
        self.args = [name, host_ip, ns_ip]
        result = subprocess.run([os.path.join(CLIENTS, "netns_veth.sh"), "up", *self.args], capture_output=True, text=True,
                                timeout=30)
        check(result.returncode == 0, f"netns up: {result.stdout}{result.stderr}")

    def close(self):
        subprocess.run([os.path.join(CLIENTS, "netns_veth.sh"), "down", *self.args], capture_output=True, timeout=30)


def test_gstreamer_webrtcbin_in_a_namespace(d):
    """GStreamer 1.22's webrtcbin (libnice, which skips loopback) publishes H.264 + Opus from a
    network namespace over a veth pair; the daemon advertises the host side of the pair. The
    composite shows its colour and tone."""
    suffix = os.getpid() % 200 + 20
    host_ip, ns_ip = f"10.{suffix}.77.1", f"10.{suffix}.77.2"
    namespace = NetworkNamespace(f"whip{os.getpid()}", host_ip, ns_ip)
    publisher = None
    try:
        whip = dict(d.config["ingest"]["whip"], host="0.0.0.0", advertisedHost=host_ip)
        d.reconfigure(extra={"ingest": dict(d.config["ingest"], whip=whip)})
        # The API too, so that the publisher in the namespace reaches the WHIP endpoint: the
        # namespace's network is this test's own, so the API may stay without authentication
        # (the daemon refuses a non-loopback address without auth unless told so).
        d.config["listen"]["host"] = "0.0.0.0"
        d.config["listen"]["allowUnauthenticated"] = True
        with open(d.config_path, "w") as f:
            json.dump(d.config, f, indent=2)
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        stage = create_stage(d)
        tok = token(d, stage["arn"], "gstreamer")
        url = stage["endpoints"]["whip"].replace("127.0.0.1", host_ip)
        log = open(os.path.join(d.workdir, "gst.log"), "w")
        publisher = subprocess.Popen(["ip", "netns", "exec", namespace.args[0], "/usr/bin/python3",
                                      os.path.join(CLIENTS, "whip_gst.py"), "--url", url, "--token", tok["token"],
                                      "--duration", "20", "--color", "255,255,0", "--width", "320", "--height", "240"],
                                     stdout=subprocess.PIPE, stderr=log, text=True)
        wait_published(d, stage["arn"], tok["participantId"], timeout=30)
        composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]
        arn = composition["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        out, _ = publisher.communicate(timeout=90)
        result = json.loads(out.strip().splitlines()[-1])
        check(result.get("status") == 201 and result.get("dtls_state") == "connected", f"gstreamer: {result}")
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition stops after the publisher left")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        check(d.stop() == 0, "exit status")
    finally:
        if publisher and publisher.poll() is None:
            publisher.kill()
            publisher.wait()
        namespace.close()
    playlist = recording_playlist(d, final)
    video, audio = media_check.Video(playlist, *SIZE), media_check.Audio(playlist)
    for t in (2, 4, 6):
        check(video.name(t, SIZE[0] // 2, SIZE[1] // 2) == "yellow", f"at {t}s: {video.colour(t, SIZE[0] // 2, SIZE[1] // 2)}")


class ImpairmentRelay:
    """scripts/whip-clients/udp_impair_relay.py between publishers and the daemon's UDP port."""

    def __init__(self, port, target_port, workdir, seed, loss, reorder, outage_at=None, outage_for=None):
        command = [sys.executable, os.path.join(CLIENTS, "udp_impair_relay.py"), "--listen", f"127.0.0.1:{port}",
                   "--target", f"127.0.0.1:{target_port}", "--seed", str(seed), "--loss", str(loss), "--reorder", str(reorder),
                   "--reorder-delay-ms", "30", "--stats-file", os.path.join(workdir, "relay-stats.json")]
        if outage_at is not None:
            command += ["--outage-at", str(outage_at), "--outage-for", str(outage_for)]
        self.stats_path = os.path.join(workdir, "relay-stats.json")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        check('"listening"' in line, f"relay: {line}")

    def stats(self):
        with open(self.stats_path) as f:
            return json.load(f)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def test_impaired_network_keeps_playing_then_an_outage_leaves(d):
    """Through a seeded relay with 5 % loss and 5 % reordering, an aiortc publisher's tile keeps
    playing: NACKs recover packets and no freeze in the recording is longer than one keyframe
    interval. Then a 100 % outage of 40 s: the participant is LEFT after the consent timeout
    (30 s), and the composition stops after the idle timeout."""
    relay_port = free_udp_port()
    whip = dict(d.config["ingest"]["whip"], advertisedPort=relay_port)
    d.reconfigure(extra={"ingest": dict(d.config["ingest"], whip=whip)})
    # The outage begins 40 s after the relay starts: time for the daemon, the publisher and the
    # composition to start on a loaded machine, and then over 20 s of loss and reordering.
    relay = ImpairmentRelay(relay_port, whip["port"], d.workdir, seed=11, loss=0.05, reorder=0.05, outage_at=40, outage_for=40)
    outage_begins = time.time() + 40
    publisher = None
    try:
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        stage = create_stage(d)
        tok = token(d, stage["arn"], "lossy")
        publisher = AiortcPublisher(stage["endpoints"]["whip"], tok["token"], "magenta", 550, d.workdir, "lossy", duration=110,
                                    extra=["--flash-every", "0.5", "--flash-frames", "5", "--no-delete-after-failure"])
        wait_published(d, stage["arn"], tok["participantId"])
        session = session_id(d, stage["arn"])
        composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]
        arn = composition["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        composition_start = time.time()
        check(outage_begins - composition_start >= 15, f"the composition started only {outage_begins - composition_start:.1f}s "
                                                       "before the outage")
        time.sleep(max(0, outage_begins - 1 - time.time()))
        recovered = metric(d, "stage_compositor_whip_packets_recovered_by_nack", tok["participantId"])
        nacks = metric(d, "stage_compositor_whip_nacks_sent", tok["participantId"])
        stats = relay.stats()
        text = metrics_text(d)
        pid = tok["participantId"]
        print(f"impairment: relay dropped {stats['up']['dropped_loss']} of {stats['up']['received']} upstream datagrams, "
              f"reordered {stats['up']['reordered']}; NACKs sent {nacks:.0f}, packets recovered by NACK {recovered:.0f}, "
              f"lost {metric(d, 'stage_compositor_whip_packets_lost', pid, text):.0f}, "
              f"PLIs {metric(d, 'stage_compositor_whip_plis_sent', pid, text):.0f}, NACK round trip "
              f"{metric(d, 'stage_compositor_whip_nack_round_trip_seconds', pid, text) * 1000:.1f} ms; composition: "
              f"lagged frames {metric(d, 'stage_compositor_composition_lagged_frames', arn.rsplit('/', 1)[1], text):.0f}, "
              f"late video frames {metric(d, 'stage_compositor_composition_late_video_frames', pid, text):.0f}, "
              f"allowance {metric(d, 'stage_compositor_composition_jitter_allowance_seconds', pid, text) * 1000:.0f} ms, "
              f"steps {metric(d, 'stage_compositor_composition_allowance_steps', pid, text):.0f} "
              f"({metric(d, 'stage_compositor_composition_allowance_stepped_seconds', pid, text) * 1000:.0f} ms)")
        check(recovered >= 10, f"NACK recoveries: {recovered}")
        wait_participant(d, stage["arn"], session, tok["participantId"], "DISCONNECTED", timeout=60)
        left_after = time.time() - outage_begins
        check("consent expired" in d.log(), "the daemon's consent timeout ended the session (the publisher cannot "
                                            "reach it to DELETE)")
        print(f"impairment: participant LEFT {left_after:.1f} s after the outage began (consent timeout 30 s)")
        # The relay's clock started a little before `outage_begins` was taken (its start-up),
        # and the API is polled through the AWS CLI: a few seconds of slack on both sides,
        # still far from the 10 s after which ICE only reports the path disconnected.
        check(27 <= left_after <= 40, f"LEFT {left_after:.1f}s after the outage began")
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=30) == "STOPPED", "composition stops by itself")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        check(d.stop() == 0, "exit status")
    finally:
        if publisher:
            publisher.kill()
        relay.stop()
    # The recording until the outage: magenta, with a white flash every 0.5 s that keeps
    # coming. A frozen picture would skip flashes: the longest gap between two flashes, less
    # 0.5 s, bounds the longest freeze. aiortc sends keyframes only when asked (PLI), so the
    # bound is IVS's recommended keyframe interval, 2 s. The flashes last 5 frames so that a
    # composition tick that is late on a loaded machine (it shows the latest due frame) cannot
    # skip a whole flash.
    playlist = recording_playlist(d, final)
    video = media_check.Video(playlist, *SIZE, fps=30)
    end = outage_begins - composition_start - 1
    for t in (2.25, end / 2 + 0.25, end - 0.25):
        check(video.name(t, SIZE[0] // 2, SIZE[1] // 2) in ("magenta", "white"), f"at {t:.1f}s: {video.colour(t, SIZE[0] // 2, SIZE[1] // 2)}")
    luma = list(video.luma_series(SIZE[0] // 2, SIZE[1] // 2))[30:int(end * 30)]
    flashes = media_check.onsets(luma, 1 / 30, 170, 0.3)
    gaps = [(a + 1, b - a) for a, b in zip(flashes, flashes[1:]) if b - a > 0.7]
    gap = max(b - a for a, b in zip(flashes, flashes[1:]))
    print(f"impairment: {len(flashes)} flashes in {end - 1:.1f} s, longest gap {gap * 1000:.0f} ms (freeze at most "
          f"{(gap - 0.5) * 1000:.0f} ms); gaps over 0.7 s (at s, length s): {[(round(t, 1), round(g, 2)) for t, g in gaps]}")
    check(len(flashes) >= (end - 1) * 2 - 4, f"flashes seen before the outage: {len(flashes)} in {end - 1:.1f}s")
    check(gap - 0.5 <= 2.0, f"a freeze of up to {gap - 0.5:.2f}s (keyframe interval 2 s)")


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def main():
    return script_main(TESTS, __doc__, lambda binary, name, workdir: keeping_ingest(whip_daemon(binary, workdir)))


if __name__ == "__main__":
    sys.exit(main())
