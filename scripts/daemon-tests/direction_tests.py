#!/usr/bin/env python3
"""Directing a running composition end to end: three ffmpeg RTMP publishers and one aiortc
WHIP publisher on a live stage, composed to the HLS recording and pushed to nginx-rtmp at
once, while the test directs it the ways a producer's backend does:

  UpdateComposition by `stage-compositor composition update` (SigV4 like the AWS CLI),
  UpdateParticipant signed by botocore (the boto3 way to call an extension operation),
  the WHIP publisher's own token exchange (PATCH on its session resource),
  per-participant gain and mute.

Each change must show in the recording and in what nginx received within 2 frames of the
composition time its call was answered at (the recording's EXT-X-PROGRAM-DATE-TIME places the
answer on the composition clock), with no discontinuity, the segment cadence unchanged, and
one nginx connection.

Run one test: `direction_tests.py BINARY TEST_NAME` (`--list` lists them). Invoked from
Tests/ServerTests/DirectionDaemonTests.swift under `swift test`.
"""
import base64
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import media_check  # noqa: E402
from daemon_tests import (CHANNEL_ARN, ENV, REGION, Failure, NginxRTMP, check, keeping_ingest, recording_dir,  # noqa: E402
                          script_main)
from live_tests import (Publisher, check_timeline_and_seeking, create_ingest, live_daemon, publish_url, recording_playlist,  # noqa: E402
                        session_id, setup_encoder_and_storage, wait_published, wait_state)
from whip_clients import AiortcPublisher, free_udp_port  # noqa: E402

FPS = 30
FRAME = 1 / FPS
WIDTH, HEIGHT = 320, 180


def extension_call(d, operation, body):
    """Calls an extension operation as boto3 users do: botocore signs the POST (SigV4, service
    ivs) with the same credentials the AWS CLI uses. Returns (status, JSON or text)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    request = AWSRequest(method="POST", url=f"{d.endpoint}/{operation}", data=json.dumps(body),
                         headers={"Content-Type": "application/json"})
    SigV4Auth(Credentials(ENV["AWS_ACCESS_KEY_ID"], ENV["AWS_SECRET_ACCESS_KEY"]), "ivs", REGION).add_auth(request)
    prepared = request.prepare()
    http = urllib.request.Request(prepared.url, data=prepared.body.encode() if isinstance(prepared.body, str) else prepared.body,
                                  headers=dict(prepared.headers), method="POST")
    try:
        with urllib.request.urlopen(http, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def update_composition(d, arn, layout_file=None, transition=None, gains=(), mutes=()):
    """`stage-compositor composition update`; returns (sent, answered) wall times."""
    command = [d.binary, "composition", "update", "--endpoint", d.endpoint, "--arn", arn]
    if layout_file:
        command += ["--layout", layout_file]
    if transition is not None:
        command += ["--transition", str(transition)]
    for gain in gains:
        command += ["--gain", gain]
    for mute in mutes:
        command += ["--mute", mute]
    sent = time.time()
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=60)
    answered = time.time()
    check(result.returncode == 0, f"composition update: {result.stderr}")
    answer = json.loads(result.stdout)
    check(answer.get("composition", {}).get("arn") == arn, f"the update answers with the composition: {answer}")
    return sent, answered


class KeyPair:
    """A customer's key pair: its public half imported (ImportPublicKey), tokens signed with
    the private half, as a customer's backend signs them."""

    def __init__(self, d):
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        self.private = ec.generate_private_key(ec.SECP384R1())
        pem = self.private.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        self.arn = d.cli("import-public-key", "--public-key-material", pem, "--name", "director")["publicKey"]["arn"]

    def token(self, stage_arn, whip_url, participant_id, attributes, minutes=30):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, utils

        def b64(data):
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        now = int(time.time())
        claims = {"exp": now + minutes * 60, "iat": now, "jti": participant_id, "user_id": participant_id, "resource": stage_arn,
                  "topic": stage_arn.rsplit("/", 1)[1], "events_url": "wss://events.example/", "whip_url": whip_url,
                  "capabilities": {"allow_publish": True}, "attributes": attributes, "version": "1.0"}
        head = b64(json.dumps({"alg": "ES384", "typ": "JWT", "kid": self.arn}).encode())
        body = b64(json.dumps(claims).encode())
        der = self.private.sign(f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA384()))
        r, s = utils.decode_dss_signature(der)
        return f"{head}.{body}." + b64(r.to_bytes(48, "big") + s.to_bytes(48, "big"))


def layout_file(workdir, name, layout):
    path = os.path.join(workdir, f"{name}.json")
    with open(path, "w") as f:
        json.dump(layout, f)
    return path


def tiles(binary, layout_path, featured=None, pip=None):
    """Draw order: [(participant index 1-based, (x, y, w, h))] as the layout engine places
    four participants (red, green, blue, yellow: their order of arrival)."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [binary, "layout", "preview", "--layout", layout_path, "--participants", "4", "--size", f"{WIDTH}x{HEIGHT}",
                   "--out", os.path.join(scratch, "p.png")]
        if featured:
            command += ["--featured", str(featured)]
        if pip:
            command += ["--pip", str(pip)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    check(result.returncode == 0, f"layout preview: {result.stderr}")
    placed = []
    for line in result.stdout.splitlines():
        match = re.match(r"p(\d+)@(\d+)x(\d+)\+(\d+)\+(\d+)", line.strip())
        if match:
            index, w, h, x, y = (int(v) for v in match.groups())
            placed.append((index, (x, y, w, h)))
    return placed


COLOURS = {1: "red", 2: "green", 3: "blue", 4: "yellow"}


def colour_at(placed, x, y):
    """What a layout shows at a point: the last-drawn tile over it, else the black background."""
    shown = "black"
    for index, (tx, ty, w, h) in placed:
        if tx <= x < tx + w and ty <= y < ty + h:
            shown = COLOURS[index]
    return shown


def telling_point(before, after):
    """A point (inside a tile, away from its edges) whose colour differs between the layouts:
    (x, y, colour before, colour after)."""
    for _, (x, y, w, h) in after:
        for fx, fy in ((0.5, 0.5), (0.25, 0.25), (0.75, 0.75), (0.25, 0.75), (0.75, 0.25)):
            px, py = int(x + w * fx), int(y + h * fy)
            was, now = colour_at(before, px, py), colour_at(after, px, py)
            if was != now and min(px - x, x + w - px, py - y, y + h - py) >= 6:
                return px, py, was, now
    raise Failure(f"no point tells the layouts apart:\n  before {before}\n  after {after}")


def first_change(video, point, after_t, until_t):
    """The time (s from the first frame) of the first frame at or after `after_t` whose colour
    at `point` is no longer the colour before."""
    x, y, was, _ = point
    t = after_t
    while t <= until_t:
        if video.name(t, x, y) != was:
            return t
        t += FRAME / 2
    return None


def program_date_time(playlist):
    with open(playlist) as f:
        for line in f:
            if line.startswith("#EXT-X-PROGRAM-DATE-TIME:"):
                text = line.split(":", 1)[1].strip().replace("Z", "+00:00")
                return datetime.fromisoformat(text).timestamp()
    raise Failure("the recording has no EXT-X-PROGRAM-DATE-TIME")


def test_directed_show(d):
    """grid → PiP (cut) → grid with a featured slot (300 ms glide) → green featured
    (UpdateParticipant) → green plain again → yellow featured (its own WHIP token exchange) →
    plain grid → red at gain 0.5 → red muted."""
    nginx = NginxRTMP(d.workdir)
    publishers = []
    whip = None
    try:
        d.reconfigure(idle=30.0, channels=[{"arn": CHANNEL_ARN, "ingestEndpoint": f"rtmp://127.0.0.1:{nginx.port}/live",
                                            "streamKey": "composite"}], extra=d.config_extra)
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        # Every publisher is recorded on its own too: the show is re-rendered from those below.
        individual = {"storageConfigurationArn": sto, "mediaTypes": ["AUDIO_VIDEO"], "hlsConfiguration": {"targetSegmentDurationSeconds": 2}}
        stage = d.cli("create-stage", "--name", "directed", "--auto-participant-recording-configuration",
                      json.dumps(individual))["stage"]
        stage_arn = stage["arn"]
        whip_url = stage["endpoints"]["whip"]
        configs = [create_ingest(d, stage_arn, "red", secure=False), create_ingest(d, stage_arn, "green", secure=False),
                   create_ingest(d, stage_arn, "blue", secure=False, attributes={"pip": "true"})]
        for config, (colour, tone) in zip(configs, [("red", 440), ("green", 660), ("blue", 880)]):
            publishers.append(Publisher(publish_url(stage, config, False), colour, tone, d.workdir, colour, size="320x180"))
            wait_published(d, stage_arn, config["participantId"])
        keys = KeyPair(d)
        yellow_id = "directedYellow1"
        # The aiortc publisher exchanges its token once this file exists (written when due).
        exchanged = os.path.join(d.workdir, "exchanged.jwt")
        whip = AiortcPublisher(whip_url, keys.token(stage_arn, whip_url, yellow_id, {}), "yellow", 1100, d.workdir, "yellow",
                               duration=120, extra=["--width", "320", "--height", "180", "--exchange-token", exchanged,
                                                    "--exchange-after", "0"])
        wait_published(d, stage_arn, yellow_id)

        destinations = [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}},
                        {"channel": {"channelArn": CHANNEL_ARN, "encoderConfigurationArn": enc}}]
        grid = {"grid": {"gridGap": 0}}
        composition = d.cli("start-composition", "--stage-arn", stage_arn, "--destinations", json.dumps(destinations),
                            "--layout", json.dumps(grid))["composition"]
        arn = composition["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        started = time.time()
        session = session_id(d, stage_arn)

        files = {"grid": layout_file(d.workdir, "grid", grid),
                 "pip": layout_file(d.workdir, "pip", {"pip": {"gridGap": 0, "pipParticipantAttribute": "pip"}}),
                 "featured": layout_file(d.workdir, "featured", {"grid": {"gridGap": 0, "featuredParticipantAttribute": "featured"}})}
        # (label, sent, answered, layout before, layout after)
        changes = []
        shown = tiles(d.binary, files["grid"])

        def at(seconds):
            delay = started + seconds - time.time()
            if delay > 0:
                time.sleep(delay)

        at(3)
        after = tiles(d.binary, files["pip"], pip=3)
        changes.append(("PiP (cut)", *update_composition(d, arn, files["pip"]), shown, after, 0))
        shown = after
        at(6)
        after = tiles(d.binary, files["featured"])
        changes.append(("grid, featured slot (300 ms)", *update_composition(d, arn, files["featured"], transition=300), shown, after, 0.3))
        shown = after
        at(9)
        green = configs[1]["participantId"]
        sent = time.time()
        status, answer = extension_call(d, "UpdateParticipant", {"stageArn": stage_arn, "participantId": green,
                                                                 "attributes": {"featured": "true"}})
        check(status == 200 and answer["participant"]["attributes"] == {"featured": "true"}, f"UpdateParticipant: {status} {answer}")
        after = tiles(d.binary, files["featured"], featured=2)
        changes.append(("green featured (UpdateParticipant)", sent, time.time(), shown, after, 0))
        shown = after
        at(12)
        sent = time.time()
        status, answer = extension_call(d, "UpdateParticipant", {"stageArn": stage_arn, "participantId": green, "attributes": {}})
        check(status == 200, f"UpdateParticipant: {status} {answer}")
        after = tiles(d.binary, files["featured"])
        changes.append(("green plain again (UpdateParticipant)", sent, time.time(), shown, after, 0))
        shown = after
        at(15)
        # Yellow exchanges its own token (aiortc): its send and answer times come back in its result.
        with open(exchanged + ".part", "w") as f:
            f.write(keys.token(stage_arn, whip_url, yellow_id, {"featured": "true"}))
        os.rename(exchanged + ".part", exchanged)
        at(21)
        after_exchange = tiles(d.binary, files["featured"], featured=4)
        after = tiles(d.binary, files["grid"])
        grid_change = update_composition(d, arn, files["grid"])
        at(24)
        gain_change = update_composition(d, arn, gains=[f"{configs[0]['participantId']}=0.5"])
        at(27)
        mute_change = update_composition(d, arn, mutes=[configs[0]["participantId"]])
        at(30)

        got = d.cli("get-composition", "--arn", arn)["composition"]
        check(got["layout"] == {"grid": {"gridGap": 0}}, f"GetComposition shows the layout in force: {got['layout']}")
        d.cli("stop-composition", "--arn", arn)
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition stopped")
        whip.process.send_signal(2)
        result = whip.result(timeout=60)
        check(result.get("exchange_status") == 204, f"the WHIP token exchange: {result}")
        changes.append(("yellow featured (WHIP token exchange)", result["exchange_sent_at"], result["exchange_answered_at"],
                        shown, after_exchange, 0))
        changes.append(("plain grid (cut)", *grid_change, after_exchange, after, 0))
        changes.sort(key=lambda change: change[1])

        # Both tokens of each exchange, in the participant's events.
        for participant, count, attributes in ((green, 2, [{"featured": "true"}, {}]), (yellow_id, 1, [{"featured": "true"}])):
            events = d.cli("list-participant-events", "--stage-arn", stage_arn, "--session-id", session,
                           "--participant-id", participant)["events"]
            exchanges = [e for e in events if e["name"] == "TOKEN_EXCHANGED"]
            check(len(exchanges) == count and [e["newToken"]["attributes"] for e in exchanges] == attributes
                  and all("previousToken" in e for e in exchanges), f"TOKEN_EXCHANGED of {participant}: {events}")
        got = d.cli("get-participant", "--stage-arn", stage_arn, "--session-id", session, "--participant-id", yellow_id)
        check(got["participant"]["attributes"] == {"featured": "true"}, f"GetParticipant after the exchange: {got}")

        # A CreateParticipantToken token is not exchanged (IVS's rule).
        service = d.cli("create-participant-token", "--stage-arn", stage_arn, "--user-id", "svc",
                        "--capabilities", "PUBLISH")["participantToken"]
        refused_file = os.path.join(d.workdir, "refused.jwt")
        with open(refused_file, "w") as f:
            f.write(keys.token(stage_arn, whip_url, service["participantId"], {"featured": "true"}))
        refused = AiortcPublisher(whip_url, service["token"], "white", 1300, d.workdir, "service", duration=4,
                                  extra=["--width", "320", "--height", "180", "--exchange-token", refused_file, "--exchange-after", "1"])
        outcome = refused.result(timeout=60)
        check(outcome.get("exchange_status") == 403 and "CreateParticipantToken" in outcome.get("exchange_body", ""),
              f"a CreateParticipantToken token's exchange: {outcome}")
        # Everyone leaves: their individual recordings end.
        for p in publishers:
            p.stop()
        session_dir = os.path.join(d.recordings, stage_arn.rsplit("/", 1)[1], session)
        deadline = time.time() + 60
        ended = []
        while time.time() < deadline:
            ended = [root for root, _, files in os.walk(session_dir) if "recording-ended.json" in files]
            if len(ended) >= 5:
                break
            time.sleep(0.5)
        check(len(ended) >= 5, f"the five individual recordings end: {ended}")
        d.stop()
    finally:
        for p in publishers:
            p.kill()
        if whip and whip.process.poll() is None:
            whip.process.kill()
        nginx.stop()

    playlist = recording_playlist(d, composition)
    with open(playlist) as f:
        text = f.read()
    # What the composition applied, in its recording: the start, each change, the attributes it saw.
    directions_path = os.path.join(recording_dir(d, composition), "events", "directions.json")
    with open(directions_path) as f:
        record = json.load(f)
    kinds = [("layout" if "layout" in x else "") + ("audio" if "audio" in x else "") + ("attributes" if "attributes" in x else "")
             for x in record["directions"]]
    check(kinds[0] == "layout" and kinds.count("layout") == 4 and kinds.count("audio") == 2
          and sum(1 for x in record["directions"] if green in x.get("attributes", {})) == 2
          and sum(1 for x in record["directions"] if yellow_id in x.get("attributes", {})) == 1,
          f"events/directions.json: {json.dumps(record)[:3000]}")
    check("#EXT-X-DISCONTINUITY" not in text, "no discontinuity in the recording")
    durations = [float(v) for v in re.findall(r"#EXTINF:([0-9.]+)", text)]
    check(len(durations) >= 10 and all(abs(v - durations[0]) < 0.02 for v in durations[:-1]),
          f"the segment cadence is unchanged: {durations}")
    # As a player reads it: no packet before 0 or wrapped (recording and channel), and
    # `ffmpeg -ss` lands on the frame a straight decode shows then, across the directed show.
    check_timeline_and_seeking(playlist, nginx.recording("composite"))
    log = d.log()
    connected = sum(1 for line in open(d.stderr_path) if "channel connected" in line)
    check(connected == 1 and "reconnecting" not in log, f"nginx saw one connection ({connected} connects)")
    origin = program_date_time(playlist)
    recording = media_check.Video(playlist, WIDTH, HEIGHT, fps=FPS)
    channel = media_check.Video(nginx.recording("composite"), WIDTH, HEIGHT, fps=FPS)
    offsets = []
    first_seen = None
    for label, sent, answered, before, after, glide in changes:
        point = telling_point(before, after)
        sent_c, answered_c = sent - origin, answered - origin
        seen = first_change(recording, point, sent_c - 1.0, answered_c + 2.0)
        check(seen is not None, f"{label}: never seen in the recording at {point}")
        settled = recording.name(seen + glide + 0.3, point[0], point[1])
        check(settled == point[3], f"{label}: the recording shows {settled} at {point[:2]} after the change, expected {point[3]}")
        # A glide is under way from the next frame; where a given point changes colour depends
        # on the tiles' paths, so it is allowed the glide's length.
        check(sent_c - 2 * FRAME <= seen <= answered_c + glide + 2 * FRAME,
              f"{label}: seen at {seen:.3f} s, the call was sent at {sent_c:.3f} s and answered at {answered_c:.3f} s")
        # The channel's file starts when nginx got its first frame: compared by differences.
        shift = first_seen[1] - first_seen[0] if first_seen else 0.0
        on_channel = first_change(channel, point, seen + shift - 1.0, seen + shift + 3.0)
        check(on_channel is not None, f"{label}: never seen on the channel")
        if first_seen is None:
            first_seen = (seen, on_channel)
        drift = (on_channel - first_seen[1]) - (seen - first_seen[0])
        check(abs(drift) <= 2 * FRAME + 0.001, f"{label}: the channel shows it {drift * 1000:.0f} ms away from the recording")
        offsets.append(f"{label} {1000 * (seen - answered_c):+.0f} ms (call took {1000 * (answered - sent):.0f} ms)")
    print("directed: seen after the answer: " + "; ".join(offsets))

    # Re-rendered from the individual recordings, directed by events/directions.json: every
    # change at the same wall-clock time as live, within a frame.
    out = os.path.join(d.workdir, "rerender")
    result = subprocess.run([d.binary, "compose", "--stage", session_dir, "--directions", directions_path, "--layout", files["grid"],
                             "--encoder", f"{WIDTH}x{HEIGHT}@{FPS}:600000", "--out", out, "--thumbnails", "off"],
                            capture_output=True, text=True, timeout=600)
    check(result.returncode == 0, f"compose --directions: {result.stderr[-3000:]}")
    rerendered_playlist = [os.path.join(root, name) for root, _, names in os.walk(out) for name in names
                           if name == "playlist.m3u8"]
    check(len(rerendered_playlist) == 1, f"the re-render's playlist: {rerendered_playlist}")
    rerender = media_check.Video(rerendered_playlist[0], WIDTH, HEIGHT, fps=FPS)
    rerender_origin = program_date_time(rerendered_playlist[0])
    apart = []
    for label, sent, answered, before, after, glide in changes:
        point = telling_point(before, after)
        live_seen = first_change(recording, point, sent - origin - 1.0, answered - origin + 2.0)
        again = first_change(rerender, point, sent - rerender_origin - 1.0, answered - rerender_origin + 2.0)
        check(again is not None, f"re-render: {label} never seen")
        difference = (again + rerender_origin) - (live_seen + origin)
        apart.append(f"{label} {1000 * difference:+.0f} ms")
        # One frame, and the two clocks' millisecond rounding.
        check(abs(difference) <= FRAME + 0.004, f"re-render: {label} {1000 * difference:+.0f} ms from live")
    print("directed: re-rendered against live: " + "; ".join(apart))

    # Gain 0.5 on red: -6 dB of its tone; muted: gone.
    # The mix's first sample is composition time 0, as the first frame is.
    audio = media_check.Audio(playlist)
    gain_c = gain_change[1] - origin
    mute_c = mute_change[1] - origin
    before = audio.tone_level(440, gain_c - 2.2, gain_c - 0.2)
    halved = audio.tone_level(440, gain_c + 0.2, mute_c - 0.3)
    # Muted, what is left at 440 Hz is the other tones' intermodulation (1100 - 660 Hz) in the
    # codec and limiter, about -32 dB of red's own level: red itself is gone (the in-process
    # test checks the mix is exactly silent).
    muted = audio.tone_level(440, mute_c + 0.2, mute_c + 2.5, window=0.5)
    db = 20 * math.log10(halved / before)
    muted_db = 20 * math.log10(max(muted, 1e-9) / before)
    print(f"directed: red at gain 0.5 {db:+.2f} dB; muted {muted_db:+.1f} dB")
    check(abs(db + 6.02) <= 0.5, f"gain 0.5 lowers red's tone by {db:.2f} dB, expected -6 ± 0.5")
    check(muted_db < -26, f"muted red still sounds: {muted_db:.1f} dB of its level")


def test_chromium_exchanges_its_token(d):
    """Headless Chromium publishing over WHIP with a key-pair token exchanges it from the page
    (PATCH on its session resource, across origins: the preflight and the answer carry CORS):
    204, TOKEN_EXCHANGED with both tokens, the new attributes on GetParticipant; a composition
    featuring by that attribute puts Chromium's blue picture in the featured slot."""
    from whip_tests import chromium_fixture, stop_browser
    d.start()
    enc, sto = setup_encoder_and_storage(d)
    stage = d.cli("create-stage", "--name", "chromium-exchange")["stage"]
    stage_arn, whip_url = stage["arn"], stage["endpoints"]["whip"]
    keys = KeyPair(d)
    red = create_ingest(d, stage_arn, "red", secure=False)
    publisher = Publisher(publish_url(stage, red, False), "red", 440, d.workdir, "red", size="320x180")
    browser = None
    try:
        wait_published(d, stage_arn, red["participantId"])
        composition = d.cli("start-composition", "--stage-arn", stage_arn, "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]),
            "--layout", json.dumps({"grid": {"gridGap": 0}}))["composition"]
        check(wait_state(d, composition["arn"], {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        files = chromium_fixture(d, color="0,0,255", tone_hz=880, flash_every=0, width=320, height=180)
        participant = "chromiumBlue1"
        exchange = os.path.join(d.workdir, "chromium-exchange.jwt")
        with open(exchange, "w") as f:
            f.write(keys.token(stage_arn, whip_url, participant, {"featured": "true"}))
        log = open(os.path.join(d.workdir, "chromium.log"), "w")
        browser = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                                 "whip-clients", "whip_chromium.py"),
                                    "--url", whip_url, "--token", keys.token(stage_arn, whip_url, participant, {}),
                                    "--video", files["video"], "--audio", files["audio"], "--duration", "12",
                                    "--exchange-token", exchange, "--exchange-after", "3"],
                                   stdout=subprocess.PIPE, stderr=log, text=True)
        wait_published(d, stage_arn, participant, timeout=60)
        session = session_id(d, stage_arn)
        featured = os.path.join(d.workdir, "featured.json")
        with open(featured, "w") as f:
            json.dump({"grid": {"gridGap": 0, "featuredParticipantAttribute": "featured"}}, f)
        update_composition(d, composition["arn"], featured)
        # The exchange comes 3 s after Chromium connects; the composition stops while it
        # still publishes (12 s), so the recording ends on it featured.
        time.sleep(7)
        d.cli("stop-composition", "--arn", composition["arn"])
        out, _ = browser.communicate(timeout=120)
        result = json.loads(out.strip().splitlines()[-1])
        check(result.get("status") == 201 and result.get("exchange_status") == 204, f"chromium's token exchange: {result}")
        events = d.cli("list-participant-events", "--stage-arn", stage_arn, "--session-id", session,
                       "--participant-id", participant)["events"]
        exchanged = [e for e in events if e["name"] == "TOKEN_EXCHANGED"]
        check(len(exchanged) == 1 and exchanged[0]["previousToken"]["attributes"] == {}
              and exchanged[0]["newToken"]["attributes"] == {"featured": "true"}, f"TOKEN_EXCHANGED: {events}")
        got = d.cli("get-participant", "--stage-arn", stage_arn, "--session-id", session, "--participant-id", participant)
        check(got["participant"]["attributes"] == {"featured": "true"}, f"GetParticipant: {got}")
        check(wait_state(d, composition["arn"], {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition stopped")
    finally:
        publisher.kill()
        if browser:
            stop_browser(browser)
    # Once exchanged, Chromium's blue picture is the featured (largest) tile: the grid's
    # featured slot is on the left two thirds of the canvas.
    video = media_check.Video(recording_playlist(d, composition), WIDTH, HEIGHT, fps=10)
    names = [video.name(t, WIDTH // 3, HEIGHT // 2) for t in [video.duration - 1.0, video.duration - 0.5]]
    check(names == ["blue", "blue"], f"the featured slot shows {names} at the end")
    check(d.stop() == 0, "exit status")


def test_active_speaker_follows_turns(d):
    """Three ffmpeg publishers take turns speaking (tone bursts of 3–3.5 s) with 200 ms blips
    from the others (louder than the speaker) between; the layout features the active speaker
    (hold 1500 ms, shortest speech 300 ms). In the recording, the featured slot shows each turn's
    speaker from hold + 100 ms after the turn began (plus the publishers' start-up slop) to its
    end, and never a blip's owner."""
    d.start()
    enc, sto = setup_encoder_and_storage(d)
    stage = d.cli("create-stage", "--name", "speakers")["stage"]
    stage_arn = stage["arn"]
    # Seconds from the show's start: (colour, from, to); blips (colour, at).
    turns = [("red", 0.0, 3.0), ("green", 3.0, 6.5), ("blue", 6.5, 9.5), ("red", 9.5, 12.5)]
    blips = [("blue", 1.8), ("red", 5.0), ("green", 8.0)]
    tones = {"red": 440, "green": 660, "blue": 880}
    show = time.time() + 8.0  # the publishers start first; the show's clock is the wall clock
    publishers = []
    try:
        for colour in ("red", "green", "blue"):
            config = create_ingest(d, stage_arn, colour, secure=False)
            offset = show - time.time()  # this ffmpeg's t at the show's start (its -re clock starts now)
            spoken = "+".join(f"between(t,{offset + a:.3f},{offset + b:.3f})" for c, a, b in turns if c == colour)
            blipped = "+".join(f"between(t,{offset + at:.3f},{offset + at + 0.2:.3f})" for c, at in blips if c == colour)
            gate = f"if({blipped},1.6,if({spoken},1,0))" if blipped else f"if({spoken},1,0)"
            audio = f"sine=frequency={tones[colour]}:sample_rate=48000,volume='{gate}':eval=frame"
            publishers.append(Publisher(publish_url(stage, config, False), colour, tones[colour], d.workdir, colour,
                                        size="320x180", audio_source=audio))
            wait_published(d, stage_arn, config["participantId"])
        layout = {"grid": {"gridGap": 0, "featured": "ACTIVE_SPEAKER", "activeSpeakerHoldMs": 1500, "activeSpeakerMinSpeechMs": 300}}
        # The AWS CLI checks StartComposition's fields against the model, so the extension
        # field goes in by UpdateComposition once the composition runs.
        composition = d.cli("start-composition", "--stage-arn", stage_arn, "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]),
            "--layout", json.dumps({"grid": {"gridGap": 0}}))["composition"]
        check(wait_state(d, composition["arn"], {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        status, answer = extension_call(d, "UpdateComposition", {"arn": composition["arn"], "layout": layout})
        check(status == 200, f"UpdateComposition: {status} {answer}")
        check(time.time() < show - 0.5, "the composition follows speakers before the show starts")
        time.sleep(max(0.0, show + 13.0 - time.time()))
        metrics = urllib.request.urlopen(f"{d.endpoint}/metrics", timeout=10).read().decode()
        switches = float(re.search(r"^stage_compositor_active_speaker_switches_total (\S+)$", metrics, re.M).group(1))
        d.cli("stop-composition", "--arn", composition["arn"])
        check(wait_state(d, composition["arn"], {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition stopped")
    finally:
        for p in publishers:
            p.kill()
    playlist = recording_playlist(d, composition)
    origin = program_date_time(playlist)
    video = media_check.Video(playlist, WIDTH, HEIGHT, fps=10)
    # The featured slot: the grid's large tile (the first of three featured), its centre.
    featured_file = layout_file(d.workdir, "featured", {"grid": {"gridGap": 0, "featuredParticipantAttribute": "featured"}})
    placed = tiles(d.binary, featured_file, featured=1)
    x, y, w, h = max((rect for _, rect in placed), key=lambda r: r[2] * r[3])
    cx, cy = x + w // 2, y + h // 2
    start = show - origin  # the show's start on the composition clock
    # The publishers' media reaches the composition after ffmpeg's start-up and the 200 ms
    # jitter allowance: allowed on top of the hold.
    slop = 0.6
    problems = []
    for colour, a, b in turns:
        t = start + a + 1.5 + 0.1 + slop
        while t < start + b - 0.1:
            if video.name(t, cx, cy) != colour:
                problems.append(f"{t - start:.1f} s: {video.name(t, cx, cy)} featured during {colour}'s turn")
            t += 0.1
    for colour, at in blips:
        t = start + at
        while t < start + at + 0.2 + slop + 0.5:
            if video.name(t, cx, cy) == colour:
                problems.append(f"{t - start:.1f} s: {colour} featured on its 200 ms blip")
            t += 0.1
    print(f"directed: active speaker: {int(switches)} switches, {len(problems)} problems")
    check(not problems, "active speaker: " + "; ".join(problems[:12]))
    check(switches >= len(turns), f"every turn was a switch (metrics say {switches})")
    check(d.stop() == 0, "exit status")


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def main():
    return script_main(TESTS, __doc__, lambda binary, name, workdir: keeping_ingest(
        live_daemon(binary, workdir, ingest={"whip": {"port": free_udp_port()}})))


if __name__ == "__main__":
    sys.exit(main())
