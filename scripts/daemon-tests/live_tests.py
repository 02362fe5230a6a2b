#!/usr/bin/env python3
"""Black-box tests of live stages: real publishers (Debian's ffmpeg CLI, GStreamer's
rtmp2sink, hand-made hostile clients) push RTMP/RTMPS to `stage-compositor serve`, which is
driven with the AWS CLI and boto3; what it composes is read back from nginx-rtmp and from
the HLS recording and measured with ffmpeg (colours, tones, flash/beep onsets).

Run one test: `live_tests.py BINARY TEST_NAME` (`--list` lists them). Exit status 0 means the
test passed. Invoked from Tests/ServerTests/LiveDaemonTests.swift under `swift test`.
"""
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import media_check  # noqa: E402
from daemon_tests import (CHANNEL_ARN, Daemon, Failure, NginxRTMP, check, free_port, recording_dir,  # noqa: E402
                          run_test, wait_state)
from rtmp_raw import RawRTMP, amf0, chunk  # noqa: E402

SIZE = (320, 180)


def live_daemon(binary, workdir, idle=3.0, quotas=None, ingest=None, channels=None, webhook=None):
    settings = {"rtmp": {"port": free_port()}, "rtmps": {"port": free_port()}, "latencyMs": 200,
                "idleTimeoutSeconds": 4, "handshakeTimeoutSeconds": 3}
    settings.update(ingest or {})
    extra = {"ingest": settings}
    if webhook:
        extra["events"] = {"stdout": False, "webhook": {"url": webhook, "maxAttempts": 3}}
    return Daemon(binary, workdir, idle=idle, quotas=quotas, channels=channels, extra=extra)


def setup_encoder_and_storage(d):
    enc = d.cli("create-encoder-configuration", "--name", "small",
                "--video", f"width={SIZE[0]},height={SIZE[1]},framerate=30,bitrate=600000")["encoderConfiguration"]
    sto = d.cli("create-storage-configuration", "--name", "local", "--s3", "bucketName=rec-bucket")["storageConfiguration"]
    return enc["arn"], sto["arn"]


def create_stage(d, name="live"):
    stage = d.cli("create-stage", "--name", name)["stage"]
    endpoints = stage.get("endpoints", {})
    check(endpoints.get("rtmp", "").startswith("rtmp://") and endpoints.get("rtmps", "").startswith("rtmps://"),
          f"stage endpoints: {stage}")
    return stage


def create_ingest(d, stage_arn, user, secure=True, attributes=None, name=None):
    args = ["create-ingest-configuration", "--stage-arn", stage_arn, "--user-id", user,
            "--ingest-protocol", "RTMPS" if secure else "RTMP"]
    if not secure:
        args.append("--insecure-ingest")
    if attributes:
        args += ["--attributes", json.dumps(attributes)]
    if name:
        args += ["--name", name]
    return d.cli(*args)["ingestConfiguration"]


def publish_url(stage, ingest, secure):
    base = stage["endpoints"]["rtmps" if secure else "rtmp"]
    return base + ingest["streamKey"]


class Publisher:
    """Debian's ffmpeg pushing a flat colour and a sine tone in real time, encoded live."""

    def __init__(self, url, colour, tone, workdir, name, size="320x240", gop=30, extra_output=None, video_filter=None,
                 audio_source=None):
        self.log_path = os.path.join(workdir, f"publisher-{name}.log")
        video = f"color=c={media_check.hex_colour(colour)}:size={size}:rate=30" if colour else None
        if video_filter:
            video = video_filter
        audio = audio_source or f"sine=frequency={tone}:sample_rate=48000"
        command = ["ffmpeg", "-hide_banner", "-loglevel", "warning", "-nostdin", "-re",
                   "-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio,
                   "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", str(gop), "-bf", "0",
                   "-pix_fmt", "yuv420p", "-b:v", "500k", "-c:a", "aac", "-b:a", "96k", "-ar", "48000",
                   *(extra_output or []), "-f", "flv", url]
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log, start_new_session=True)

    def stop(self):
        """A clean unpublish: ffmpeg finishes the stream (FCUnpublish/deleteStream) on SIGINT."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-2000:]


class GStreamerPublisher:
    """GStreamer 1.22's rtmp2sink (an RTMP client independent of FFmpeg's)."""

    def __init__(self, url, colour, tone, workdir, name, secure=False):
        r, g, b = media_check.PALETTE[colour]
        argb = f"0xff{r:02x}{g:02x}{b:02x}"
        tls = ["tls-validation-flags=0"] if secure else []
        command = ["gst-launch-1.0", "-q",
                   "videotestsrc", "is-live=true", "pattern=solid-color", f"foreground-color={argb}", "!",
                   "video/x-raw,width=320,height=240,framerate=30/1", "!",
                   "x264enc", "tune=zerolatency", "speed-preset=veryfast", "key-int-max=30", "bframes=0", "!",
                   "h264parse", "!", "flvmux", "name=mux", "streamable=true", "!",
                   "rtmp2sink", f"location={url}", *tls,
                   "audiotestsrc", "is-live=true", "wave=sine", f"freq={tone}", "volume=0.125", "!",
                   "audioconvert", "!", "audioresample", "!", "audio/x-raw,rate=48000,channels=2", "!",
                   "voaacenc", "!", "aacparse", "!", "mux."]
        self.log_path = os.path.join(workdir, f"gst-{name}.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log, start_new_session=True)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-2000:]


def session_id(d, stage_arn, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        stage = d.cli("get-stage", "--arn", stage_arn)["stage"]
        if stage.get("activeSessionId"):
            return stage["activeSessionId"]
        time.sleep(0.1)
    raise Failure(f"no active session on {stage_arn}\n{d.log()}")


def participants(d, stage_arn, session):
    return d.cli("list-participants", "--stage-arn", stage_arn, "--session-id", session)["participants"]


def wait_participant(d, stage_arn, session, participant_id, state, timeout=15):
    """Seconds until the participant reaches `state` (CONNECTED/DISCONNECTED)."""
    started = time.time()
    while time.time() - started < timeout:
        for p in participants(d, stage_arn, session):
            if p["participantId"] == participant_id and p["state"] == state:
                return time.time() - started
        time.sleep(0.05)
    raise Failure(f"participant {participant_id} did not become {state}: {participants(d, stage_arn, session)}\n{d.log()}")


def live_publishers(d):
    text = urllib.request.urlopen(f"{d.endpoint}/metrics", timeout=10).read().decode()
    match = re.search(r"^stage_compositor_live_publishers ([0-9.]+)$", text, re.M)
    return int(float(match.group(1))) if match else 0


def wait_live_publishers(d, count, timeout=10):
    """Seconds until the daemon counts `count` live publishers."""
    started = time.time()
    while time.time() - started < timeout:
        if live_publishers(d) == count:
            return time.time() - started
        time.sleep(0.02)
    raise Failure(f"live publishers did not reach {count} (now {live_publishers(d)})\n{d.log()}")


def wait_published(d, stage_arn, participant_id, timeout=20):
    """Waits for the participant's "Participant Published" stage update."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for e in stage_updates(d, stage_arn):
            if e["detail"]["event_name"] == "Participant Published" and e["detail"]["participant_id"] == participant_id:
                return e
        time.sleep(0.1)
    raise Failure(f"no Participant Published for {participant_id}\n{d.log()}")


def stage_updates(d, stage_arn):
    return [e for e in d.events() if e["detail-type"] == "IVS Stage Update" and e["resources"] == [stage_arn]]


def composition_events(d, arn):
    return [e["detail"]["event_name"] for e in d.events() if e["resources"] == [arn]]


def recording_playlist(d, composition):
    hls = os.path.join(recording_dir(d, composition), "media", "hls")
    renditions = [r for r in os.listdir(hls) if os.path.isdir(os.path.join(hls, r))]
    check(len(renditions) == 1, f"renditions: {renditions}")
    path = os.path.join(hls, renditions[0], "playlist.m3u8")
    with open(path) as f:
        text = f.read()
    check("#EXT-X-PLAYLIST-TYPE:VOD" in text and text.rstrip().endswith("#EXT-X-ENDLIST"), f"playlist not final:\n{text}")
    return path


def check_phases(name, video, audio, phases, binary):
    """Each phase (start, end, [(colour, tone)...] in arrival order): the tiles the layout
    engine gives that many participants show those colours, and exactly those tones sound."""
    all_tones = {tone for _, _, present in phases for _, tone in present}
    for start, end, present in phases:
        placed = media_check.tiles(binary, len(present), f"{SIZE[0]}x{SIZE[1]}")
        for t in (start + (end - start) * 0.3, start + (end - start) * 0.7):
            for index, (colour, _) in enumerate(present, start=1):
                x, y = media_check.centre(placed[index])
                seen = video.name(t, x, y)
                check(seen == colour, f"{name} at {t:.1f}s: tile {index} of {len(present)} at ({x},{y}) shows {seen}, "
                                      f"expected {colour} ({video.colour(t, x, y)})")
        for tone in all_tones:
            level = audio.tone_level(tone, start + 0.2, end - 0.2)
            expected = any(t == tone for _, t in present)
            if expected:
                check(level > 0.03, f"{name} {start:.1f}-{end:.1f}s: {tone} Hz should sound, level {level:.4f}")
            else:
                check(level < 0.01, f"{name} {start:.1f}-{end:.1f}s: {tone} Hz should be silent, level {level:.4f}")


# --------------------------------------------------------------------------------------------

def test_three_publishers_compose_and_stop(d):
    """Three ffmpeg publishers (one over RTMPS) join at different times; one unpublishes, one is
    SIGKILLed. The composite (nginx-rtmp and the HLS recording) shows each one's colour and tone
    while it publishes, the tiles re-flow, the killed one is LEFT at once, and the composition
    stops by itself after the idle timeout with a VOD recording."""
    nginx = NginxRTMP(d.workdir)
    publishers = []
    try:
        d.reconfigure(idle=3.0, channels=[{"arn": CHANNEL_ARN, "ingestEndpoint": f"rtmp://127.0.0.1:{nginx.port}/live",
                                           "streamKey": "composite"}], extra=d.config_extra)
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        stage = create_stage(d)
        arn_stage = stage["arn"]
        red = create_ingest(d, arn_stage, "red", secure=False)
        green = create_ingest(d, arn_stage, "green", secure=True)
        blue = create_ingest(d, arn_stage, "blue", secure=False)
        check(red["state"] == "INACTIVE" and red["participantId"], f"ingest configuration: {red}")

        publishers.append(Publisher(publish_url(stage, red, False), "red", 440, d.workdir, "red"))
        wait_published(d, arn_stage, red["participantId"])
        check(d.cli("get-ingest-configuration", "--arn", red["arn"])["ingestConfiguration"]["state"] == "ACTIVE",
              "a publishing ingest configuration is ACTIVE")
        destinations = [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}},
                        {"channel": {"channelArn": CHANNEL_ARN, "encoderConfigurationArn": enc}}]
        composition = d.cli("start-composition", "--stage-arn", arn_stage, "--destinations", json.dumps(destinations),
                            "--layout", json.dumps({"grid": {"gridGap": 0}}))["composition"]
        # The composition's time zero: red is already publishing, so it starts at once.
        t0 = time.time()
        arn = composition["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        session = session_id(d, arn_stage)
        # Each change (composition time) between when the test made it and when the API showed
        # it done: on a loaded machine an AWS CLI poll takes a second or two, and the composite
        # may change anywhere in between.
        changes = []

        def at(seconds):
            # Not before the previous change has been shown for 2.5 s: a phase must keep time
            # for the checks after the margins below (under load the API once showed a change
            # 1.56 s late, which left the next phase 1.44 s and its tone window empty).
            not_before = max(t0 + seconds, t0 + changes[-1][1] + 2.5 if changes else 0)
            delay = not_before - time.time()
            if delay > 0:
                time.sleep(delay)

        def joined(config, label, made):
            wait_participant(d, arn_stage, session, config["participantId"], "CONNECTED", timeout=15)
            changes.append((made, time.time() - t0, label))

        at(3)
        made = time.time() - t0
        publishers.append(Publisher(publish_url(stage, green, True), "green", 660, d.workdir, "green"))
        joined(green, "green joined", made)
        at(7)
        made = time.time() - t0
        publishers.append(Publisher(publish_url(stage, blue, False), "blue", 880, d.workdir, "blue"))
        joined(blue, "blue joined", made)
        at(11)
        left_from = time.time() - t0
        publishers[1].stop()  # green unpublishes
        wait_participant(d, arn_stage, session, green["participantId"], "DISCONNECTED", timeout=10)
        changes.append((left_from, time.time() - t0, "green left"))
        at(14)
        killed_at = time.time() - t0
        before = live_publishers(d)
        publishers[2].kill()  # blue dies
        # Timed on /metrics (a local HTTP GET), not through the AWS CLI, whose start-up alone
        # takes a second on a loaded machine.
        left_after = wait_live_publishers(d, before - 1, timeout=10)
        check(left_after <= 1.5, f"a killed publisher is LEFT within 1.5 s, took {left_after:.2f}s")
        wait_participant(d, arn_stage, session, blue["participantId"], "DISCONNECTED", timeout=10)
        print(f"killed publisher LEFT after {left_after * 1000:.0f} ms")
        changes.append((killed_at, killed_at + left_after, "blue killed"))
        at(17)
        changes.append((time.time() - t0, time.time() - t0, "red left"))
        publishers[0].stop()  # the last one leaves: the idle timeout starts
        stopped_at = time.time()
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=30) == "STOPPED", "composition stops by itself")
        idle_took = time.time() - stopped_at
        check(2.5 <= idle_took <= 8, f"auto-shutdown {idle_took:.1f}s after the last publisher left (idle timeout 3 s)")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        check(all(x["state"] == "STOPPED" for x in final["destinations"]), f"destinations: {final['destinations']}")
        names = composition_events(d, arn)
        check(names[0] == "Session Start" and names[-1] == "Session End", f"composition events: {names}")

        # The participants and their events, through the API.
        listed = {p["participantId"]: p for p in participants(d, arn_stage, session)}
        for config in (red, green, blue):
            p = listed[config["participantId"]]
            check(p["state"] == "DISCONNECTED" and p["published"], f"participant: {p}")
            full = d.cli("get-participant", "--stage-arn", arn_stage, "--session-id", session,
                         "--participant-id", config["participantId"])["participant"]
            check(full["protocol"] == ("RTMPS" if config is green else "RTMP") and full["ingestConfigurationArn"] == config["arn"]
                  and full["userId"] == config["userId"], f"participant detail: {full}")
            events = d.cli("list-participant-events", "--stage-arn", arn_stage, "--session-id", session,
                           "--participant-id", config["participantId"])["events"]
            check([e["name"] for e in events] == ["JOINED", "PUBLISH_STARTED", "PUBLISH_STOPPED", "LEFT"],
                  f"participant events of {config['userId']}: {events}")
        updates = [(e["detail"]["event_name"], e["detail"]["user_id"]) for e in stage_updates(d, arn_stage)]
        check(updates.count(("Participant Published", "blue")) == 1 and ("Participant Unpublished", "blue") in updates,
              f"stage updates: {updates}")
        sessions = d.cli("list-stage-sessions", "--stage-arn", arn_stage)["stageSessions"]
        check(sessions and sessions[0]["sessionId"] == session and sessions[0].get("endTime"), f"sessions: {sessions}")
        check(d.stop() == 0, "exit status")
    finally:
        for p in publishers:
            p.kill()
        nginx.stop()

    # What the composite shows, from both outputs, between the changes: from 0.8 s after the
    # API showed one done (ffmpeg's first frames, the 200 ms latency) to 0.3 s before the test
    # made the next.
    print("changes (composition time, made-shown):",
          ", ".join(f"{label} {made:.2f}-{shown:.2f}s" for made, shown, label in changes))
    present = [("red", 440)]
    phases = []
    previous = 0.0
    membership = {"green joined": ("add", ("green", 660)), "blue joined": ("add", ("blue", 880)),
                  "green left": ("remove", ("green", 660)), "blue killed": ("remove", ("blue", 880)),
                  "red left": ("remove", ("red", 440))}
    for made, shown, label in changes:
        if made - previous >= 2.4:
            phases.append((previous + 0.8, made - 0.3, list(present)))
        kind, who = membership[label]
        present = present + [who] if kind == "add" else [p for p in present if p != who]
        previous = shown
    check(len(phases) == 5, f"phases: {phases}")
    playlist = recording_playlist(d, final)
    check_phases("recording", media_check.Video(playlist, *SIZE), media_check.Audio(playlist), phases, d.binary)
    flv = nginx.recording("composite")
    check_phases("channel", media_check.Video(flv, *SIZE), media_check.Audio(flv), phases, d.binary)


def test_full_workflow_webhook_starts_composition(d):
    """The seed's workflow: a publisher pushes; "Participant Published" reaches a webhook; its
    handler calls StartComposition with boto3; the publisher leaves; the composition stops by
    itself. Every event arrives, in order."""
    received = []
    started = {}
    lock = threading.Condition()
    client_holder = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            event = json.loads(body)
            with lock:
                received.append(event)
                lock.notify_all()
            self.send_response(200)
            self.end_headers()
            if event["detail-type"] == "IVS Stage Update" and event["detail"]["event_name"] == "Participant Published" \
                    and "arn" not in started:
                client = client_holder["client"]
                response = client.start_composition(
                    stageArn=event["resources"][0],
                    destinations=[{"s3": {"storageConfigurationArn": client_holder["sto"],
                                          "encoderConfigurationArns": [client_holder["enc"]]}}])
                started["arn"] = response["composition"]["arn"]

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    publisher = None
    try:
        d.reconfigure(idle=3.0, extra=dict(d.config_extra, events={"stdout": False, "webhook": {
            "url": f"http://127.0.0.1:{server.server_address[1]}/events", "maxAttempts": 3}}))
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        client_holder.update(client=d.client(), enc=enc, sto=sto)
        stage = create_stage(d)
        ingest = create_ingest(d, stage["arn"], "presenter", secure=True, attributes={"isFeatured": "true"})
        publisher = Publisher(publish_url(stage, ingest, True), "yellow", 520, d.workdir, "presenter")
        deadline = time.time() + 20
        while "arn" not in started and time.time() < deadline:
            time.sleep(0.1)
        check("arn" in started, f"the webhook handler did not start a composition; received {received}\n{d.log()}")
        arn = started["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        time.sleep(4)
        publisher.stop()
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=30) == "STOPPED", "composition stops by itself")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        deadline = time.time() + 10
        expected = [("IVS Stage Update", "Participant Published"), ("IVS Composition State Change", "Session Start"),
                    ("IVS Composition State Change", "Destination Start"), ("IVS Stage Update", "Participant Unpublished"),
                    ("IVS Composition State Change", "Destination End"), ("IVS Composition State Change", "Session End")]
        while time.time() < deadline:
            with lock:
                got = [(e["detail-type"], e["detail"]["event_name"]) for e in received]
            if got == expected:
                break
            time.sleep(0.1)
        check(got == expected, f"webhook events: {got}")
        for e in received:
            if e["detail-type"] == "IVS Stage Update":
                detail = e["detail"]
                check(detail["participant_id"] == ingest["participantId"] and detail["user_id"] == "presenter"
                      and detail["session_id"].startswith("st-") and len(detail["session_id"]) == 16,
                      f"stage update detail: {e}")
        check(d.stop() == 0, "exit status")
        playlist = recording_playlist(d, final)
        video = media_check.Video(playlist, *SIZE)
        check(video.name(video.duration / 2, SIZE[0] // 2, SIZE[1] // 2) == "yellow", "the composite shows the presenter")
    finally:
        if publisher:
            publisher.kill()
        server.shutdown()


def test_gstreamer_rtmp2sink_publishes(d):
    """GStreamer's rtmp2sink (a second, independent RTMP client) publishes over RTMP and RTMPS;
    both are composed."""
    publishers = []
    try:
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        stage = create_stage(d)
        plain = create_ingest(d, stage["arn"], "gst-plain", secure=False)
        secure = create_ingest(d, stage["arn"], "gst-tls", secure=True)
        publishers.append(GStreamerPublisher(publish_url(stage, plain, False), "cyan", 500, d.workdir, "plain"))
        wait_published(d, stage["arn"], plain["participantId"])
        publishers.append(GStreamerPublisher(publish_url(stage, secure, True), "magenta", 700, d.workdir, "tls", secure=True))
        wait_published(d, stage["arn"], secure["participantId"])
        composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]),
            "--layout", json.dumps({"grid": {"gridGap": 0}}))["composition"]
        arn = composition["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        time.sleep(5)
        d.cli("stop-composition", "--arn", arn)
        check(wait_state(d, arn, {"STOPPED", "FAILED"}) == "STOPPED", "composition stopped")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        check(d.stop() == 0, "exit status")
    finally:
        for p in publishers:
            p.stop()
    playlist = recording_playlist(d, final)
    video, audio = media_check.Video(playlist, *SIZE), media_check.Audio(playlist)
    check_phases("gstreamer", video, audio, [(1.5, video.duration - 0.5, [("cyan", 500), ("magenta", 700)])], d.binary)


def test_av_sync_flash_and_beep(d):
    """A publisher whose picture flashes white and whose audio beeps at the same instants, once
    a second: in the composite the flash and the beep stay within 40 ms of each other, at the
    start and at the end of the run (the virtual-time LiveStageTests cover 10 minutes with drift)."""
    minutes = float(os.environ.get("LIVE_AV_SYNC_MINUTES", "1"))
    publisher = None
    try:
        d.start()
        enc, sto = setup_encoder_and_storage(d)
        stage = create_stage(d)
        ingest = create_ingest(d, stage["arn"], "flash", secure=False)
        video = "color=c=black:size=320x240:rate=30,drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='lt(mod(t\\,1)\\,0.1)'"
        audio = "aevalsrc='if(lt(mod(t\\,1)\\,0.1)\\,0.5*sin(2*PI*1000*t)\\,0)':s=48000"
        publisher = Publisher(publish_url(stage, ingest, False), None, None, d.workdir, "flash", video_filter=video,
                              audio_source=audio)
        wait_published(d, stage["arn"], ingest["participantId"])
        composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]
        arn = composition["arn"]
        check(wait_state(d, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        time.sleep(minutes * 60 + 2)
        d.cli("stop-composition", "--arn", arn)
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", "composition stopped")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        check(d.stop() == 0, "exit status")
    finally:
        if publisher:
            publisher.kill()
    playlist = recording_playlist(d, final)
    offsets = media_check.av_offsets(playlist, *SIZE, 128, 0.1)
    check(len(offsets) >= minutes * 60 - 5, f"flashes found: {len(offsets)}")
    first, last = offsets[:5], offsets[-5:]
    print(f"A/V offset (audio - video), first flashes: {[round(o * 1000) for o in first]} ms, "
          f"last: {[round(o * 1000) for o in last]} ms")
    check(all(abs(o) <= 0.040 for o in first + last), f"|A/V offset| > 40 ms: first {first}, last {last}")


def test_refusals_name_their_reason(d):
    """Wrong key, unknown key, RTMP where RTMPS is required, a configuration without a stage, a
    key already publishing, and a stage over its publisher quota: each connection is refused at
    once, with the model's error code in a Participant Publish Error event, and the publisher
    already on the stage is unaffected."""
    d.reconfigure(extra=d.config_extra, quotas={"publishersPerStage": 2})
    d.start()
    stage = create_stage(d)
    good = create_ingest(d, stage["arn"], "good", secure=False)
    publishers = [Publisher(publish_url(stage, good, False), "red", 440, d.workdir, "good")]
    try:
        wait_published(d, stage["arn"], good["participantId"])
        session = session_id(d, stage["arn"])
        rtmp_port = d.config["ingest"]["rtmp"]["port"]

        def refused(key, secure=False, label=""):
            port = d.config["ingest"]["rtmps" if secure else "rtmp"]["port"]
            client = RawRTMP("127.0.0.1", port, secure=secure)
            started = time.time()
            client.handshake()
            client.publish(key)
            closed, took, data = client.read_until_closed(limit=10)
            client.close()
            check(closed and time.time() - started < 3, f"{label}: the connection is closed at once (took {took:.1f}s)")
            check(b"NetStream.Publish.BadName" in data or b"error" in data, f"{label}: an onStatus error is sent: {data[-300:]}")

        def error_events(code, timeout=15):
            """The Participant Publish Error events with `code`, once there is one: the event
            sinks write asynchronously, so it may land a moment after the refusal."""
            deadline = time.time() + timeout
            while True:
                found = [e for e in stage_updates(d, stage["arn"]) if e["detail"]["event_name"] == "Participant Publish Error"
                         and e["detail"].get("error_code") == code]
                if found or time.time() > deadline:
                    return found
                time.sleep(0.1)

        secure_only = create_ingest(d, stage["arn"], "secure-only", secure=True)
        refused(secure_only["streamKey"], secure=False, label="RTMP to an RTMPS-only configuration")
        check(error_events("INVALID_PROTOCOL"), f"INVALID_PROTOCOL event: {stage_updates(d, stage['arn'])}")

        wrong = good["streamKey"][:-4] + ("AAAA" if not good["streamKey"].endswith("AAAA") else "BBBB")
        refused(wrong, label="wrong secret")
        check(error_events("INVALID_STREAM_KEY"), "INVALID_STREAM_KEY event")
        refused("rt_999_us-east-1_nothing_here", label="unknown key")
        refused("not-a-key", label="garbage key")

        stageless = d.cli("create-ingest-configuration", "--user-id", "lost", "--ingest-protocol", "RTMP",
                          "--insecure-ingest")["ingestConfiguration"]
        check(stageless.get("stageArn", "") == "", f"a configuration without a stage: {stageless}")
        refused(stageless["streamKey"], label="configuration without a stage")

        refused(good["streamKey"], label="a key already publishing")
        check(error_events("REUSE_OF_STREAM_KEY"), "REUSE_OF_STREAM_KEY event")

        second = create_ingest(d, stage["arn"], "second", secure=False)
        third = create_ingest(d, stage["arn"], "third", secure=False)
        publishers.append(Publisher(publish_url(stage, second, False), "green", 660, d.workdir, "second"))
        wait_published(d, stage["arn"], second["participantId"])
        refused(third["streamKey"], label="over the publisher quota (2)")
        check(error_events("QUOTA_EXCEEDED"), "QUOTA_EXCEEDED event")

        # Operators see the refusals in /metrics, by error code.
        metrics = urllib.request.urlopen(f"{d.endpoint}/metrics", timeout=10).read().decode()
        for code, minimum in (("INVALID_PROTOCOL", 1), ("INVALID_STREAM_KEY", 4), ("REUSE_OF_STREAM_KEY", 1), ("QUOTA_EXCEEDED", 1)):
            match = re.search(r'^stage_compositor_ingest_refused_total\{code="%s"\} (\d+)' % code, metrics, re.M)
            check(match and int(match.group(1)) >= minimum, f"refusals of {code} in /metrics:\n{metrics}")
        check(re.search(r"^stage_compositor_live_publishers 2(\.0)?$", metrics, re.M), f"live publishers gauge:\n{metrics}")

        # The first publisher never noticed.
        listed = {p["participantId"]: p for p in participants(d, stage["arn"], session)}
        check(listed[good["participantId"]]["state"] == "CONNECTED", f"the good publisher is still connected: {listed}")
        check(publishers[0].process.poll() is None, f"the good publisher still runs: {publishers[0].output()}")
        check(rtmp_port > 0, "port")
        check(d.stop() == 0, "exit status")
    finally:
        for p in publishers:
            p.kill()


def test_hostile_connections_are_closed_alone(d):
    """Garbage bytes, an oversized chunk size, an oversized message length, deeply nested AMF,
    a handshake that never finishes (slowloris) and a silent half-open connection: each is
    closed with a logged reason and bounded memory, while a real publisher keeps being composed."""
    d.reconfigure(extra=dict(d.config_extra, ingest=dict(d.config["ingest"], handshakeTimeoutSeconds=2,
                                                          idleTimeoutSeconds=2)))
    d.start()
    enc, sto = setup_encoder_and_storage(d)
    stage = create_stage(d)
    good = create_ingest(d, stage["arn"], "good", secure=False)
    publisher = Publisher(publish_url(stage, good, False), "blue", 880, d.workdir, "good")
    try:
        wait_published(d, stage["arn"], good["participantId"])
        composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
            [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]
        check(wait_state(d, composition["arn"], {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
        port = d.config["ingest"]["rtmp"]["port"]

        def attack(label, body, limit=8):
            client = RawRTMP("127.0.0.1", port)
            try:
                body(client)
            except (BrokenPipeError, ConnectionResetError):
                return  # closed while we were still sending: also fine
            closed, took, _ = client.read_until_closed(limit=limit)
            client.close()
            check(closed, f"{label}: the server closes the connection (waited {took:.1f}s)")

        # Garbage that cannot pass for C0: an HTTP request sent to the RTMP port, then noise.
        # (Random bytes start with 0x03, a valid version, once in 256 runs; the handshake then
        # proceeds and the connection fails later for another reason.)
        attack("garbage bytes", lambda c: c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + os.urandom(4096)))

        def oversized_chunk_size(c):
            c.handshake()
            c.send(chunk(2, 1, (0x7FFFFFFF).to_bytes(4, "big")))
        attack("oversized chunk size", oversized_chunk_size)

        def oversized_message(c):
            c.handshake()
            header = bytes([3]) + (0).to_bytes(3, "big") + (0xFFFFFF).to_bytes(3, "big") + bytes([20]) + (0).to_bytes(4, "little")
            c.send(header + os.urandom(128))
        attack("oversized message length", oversized_message)

        def nested(c):
            c.handshake()
            # {"a": {"a": {"a": ... 5000 deep}}}: the decoder must refuse, not recurse.
            payload = amf0("connect") + amf0(1) + b"\x03\x00\x01a" * 5000
            c.send(chunk(3, 20, payload, chunk_size=128))
        attack("AMF nesting", nested)

        def slowloris(c):
            c.send(b"\x03")
            for _ in range(10):
                time.sleep(0.25)
                c.send(b"\x00")
        attack("a handshake that never finishes", slowloris)

        # A publisher whose network dies after it started publishing: nothing more arrives
        # (no FIN, no RST). The idle timeout (2 s here) closes it and it leaves the stage.
        silent = create_ingest(d, stage["arn"], "silent", secure=False)

        def half_open(c):
            c.handshake()
            c.publish(silent["streamKey"])
        attack("silent after publishing (half-open)", half_open, limit=8)
        session = session_id(d, stage["arn"])
        wait_participant(d, stage["arn"], session, silent["participantId"], "DISCONNECTED", timeout=5)

        log = d.log()
        for reason in ("unsupported RTMP version 71", "chunk size 2147483647 exceeds the limit",
                       "message length 16777215 exceeds the limit", "nested too deeply",
                       "did not start publishing", "no data received"):
            check(reason in log, f"the log names the reason ({reason}):\n{log[-3000:]}")
        session = session_id(d, stage["arn"])
        listed = {p["participantId"]: p for p in participants(d, stage["arn"], session)}
        check(listed[good["participantId"]]["state"] == "CONNECTED", f"the good publisher is unaffected: {listed}")
        check(len(listed) == 2, f"no hostile client became a participant (only good and silent): {listed}")
        time.sleep(1)
        d.cli("stop-composition", "--arn", composition["arn"])
        check(wait_state(d, composition["arn"], {"STOPPED", "FAILED"}) == "STOPPED", "composition stopped")
        final = d.cli("get-composition", "--arn", composition["arn"])["composition"]
        check(d.stop() == 0, "the daemon survived and exits cleanly")
    finally:
        publisher.kill()
    playlist = recording_playlist(d, final)
    video = media_check.Video(playlist, *SIZE)
    # Alone, the good publisher fills the canvas; while the silent one was on the stage they
    # shared it, the good one first.
    alone = media_check.centre(media_check.tiles(d.binary, 1, f"{SIZE[0]}x{SIZE[1]}")[1])
    shared = media_check.centre(media_check.tiles(d.binary, 2, f"{SIZE[0]}x{SIZE[1]}")[1])
    missing = [t / 2 for t in range(4, int(video.duration * 2) - 2)
               if "blue" not in (video.name(t / 2, *alone), video.name(t / 2, *shared))]
    check(not missing, f"the good publisher is shown throughout (not at {missing})")


def test_bitrate_over_the_maximum_is_disconnected(d):
    """A publisher above ingest.maxBitrate is disconnected with BITRATE_EXCEEDED."""
    d.reconfigure(extra=dict(d.config_extra, ingest=dict(d.config["ingest"], maxBitrate=200_000)))
    d.start()
    stage = create_stage(d)
    ingest = create_ingest(d, stage["arn"], "greedy", secure=False)
    publisher = Publisher(publish_url(stage, ingest, False), "red", 440, d.workdir, "greedy",
                          extra_output=["-b:v", "2M", "-minrate", "2M", "-maxrate", "2M", "-bufsize", "1M",
                                        "-x264-params", "nal-hrd=cbr:filler=1"])
    try:
        wait_published(d, stage["arn"], ingest["participantId"])
        deadline = time.time() + 20
        while time.time() < deadline:
            errors = [e for e in stage_updates(d, stage["arn"]) if e["detail"].get("error_code") == "BITRATE_EXCEEDED"]
            if errors:
                break
            time.sleep(0.2)
        check(errors, f"BITRATE_EXCEEDED: {stage_updates(d, stage['arn'])}\n{d.log()}")
        session = errors[0]["detail"]["session_id"]
        wait_participant(d, stage["arn"], session, ingest["participantId"], "DISCONNECTED", timeout=5)
        events = d.cli("list-participant-events", "--stage-arn", stage["arn"], "--session-id", session,
                       "--participant-id", ingest["participantId"])["events"]
        check(any(e["name"] == "PUBLISH_ERROR" and e.get("errorCode") == "BITRATE_EXCEEDED" for e in events),
              f"participant events: {events}")
        check(d.stop() == 0, "exit status")
    finally:
        publisher.kill()


def test_disconnect_participant_and_reconnect_with_the_same_key(d):
    """DisconnectParticipant closes the publisher's connection; the same key publishes again and
    is the same participant in the same stage session."""
    d.reconfigure(idle=30.0, extra=d.config_extra)
    d.start()
    stage = create_stage(d)
    ingest = create_ingest(d, stage["arn"], "again", secure=False)
    first = Publisher(publish_url(stage, ingest, False), "red", 440, d.workdir, "first")
    second = None
    try:
        wait_published(d, stage["arn"], ingest["participantId"])
        session = session_id(d, stage["arn"])
        # A second publisher keeps the session open across the reconnect.
        other = create_ingest(d, stage["arn"], "other", secure=False)
        keeper = Publisher(publish_url(stage, other, False), "green", 660, d.workdir, "keeper")
        wait_published(d, stage["arn"], other["participantId"])
        d.cli("disconnect-participant", "--stage-arn", stage["arn"], "--participant-id", ingest["participantId"],
              "--reason", "test")
        wait_participant(d, stage["arn"], session, ingest["participantId"], "DISCONNECTED", timeout=5)
        second = Publisher(publish_url(stage, ingest, False), "red", 440, d.workdir, "second")
        deadline = time.time() + 15
        while time.time() < deadline:
            published = [e for e in stage_updates(d, stage["arn"]) if e["detail"]["event_name"] == "Participant Published"
                         and e["detail"]["participant_id"] == ingest["participantId"]]
            if len(published) == 2:
                break
            time.sleep(0.1)
        check(len(published) == 2, f"published twice: {stage_updates(d, stage['arn'])}")
        check(session_id(d, stage["arn"]) == session, "the same stage session")
        wait_participant(d, stage["arn"], session, ingest["participantId"], "CONNECTED", timeout=5)
        keeper.stop()
        check(d.stop() == 0, "exit status")
    finally:
        first.kill()
        if second:
            second.kill()


def test_empty_stage_waits_for_a_publisher(d):
    """StartComposition on a live stage nobody publishes on waits in STARTING, as IVS does, and
    goes ACTIVE when someone starts publishing; on a stage nobody comes to, it fails after the
    idle timeout with a reason."""
    # The idle timeout bounds the time from StartComposition to the publisher's arrival, which
    # here includes four AWS CLI calls: about 9 s on a loaded 2-core machine (an 8 s timeout
    # once failed the waiting stage there). 20 s leaves twice that.
    d.reconfigure(idle=20.0, extra=d.config_extra)
    d.start()
    enc, sto = setup_encoder_and_storage(d)
    waiting = create_stage(d, "waiting")
    empty = create_stage(d, "empty")
    ingest = create_ingest(d, waiting["arn"], "late", secure=False)
    destinations = json.dumps([{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}])
    first = d.cli("start-composition", "--stage-arn", waiting["arn"], "--destinations", destinations)["composition"]["arn"]
    second = d.cli("start-composition", "--stage-arn", empty["arn"], "--destinations", destinations)["composition"]["arn"]
    time.sleep(1.5)
    for arn in (first, second):
        check(d.cli("get-composition", "--arn", arn)["composition"]["state"] == "STARTING", "an empty stage keeps it STARTING")
    publisher = Publisher(publish_url(waiting, ingest, False), "green", 660, d.workdir, "late")
    try:
        check(wait_state(d, first, {"ACTIVE", "FAILED"}, timeout=15) == "ACTIVE", "the first publisher starts it")
        check(wait_state(d, second, {"ACTIVE", "FAILED", "STOPPED"}, timeout=40) == "FAILED", "nobody came: it fails")
        failure = [e["detail"] for e in d.events() if e["resources"] == [second]]
        check([e["event_name"] for e in failure] == ["Session Failure"] and "No participants" in failure[0].get("reason", ""),
              f"events of the empty stage's composition: {failure}")
        d.cli("stop-composition", "--arn", first)
        check(wait_state(d, first, {"STOPPED", "FAILED"}) == "STOPPED", "stopped")
        check(d.stop() == 0, "exit status")
    finally:
        publisher.kill()


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, name = sys.argv[1], sys.argv[2]

    def make_daemon(workdir):
        daemon = live_daemon(binary, workdir)
        # Tests reconfigure with other options; the live ingest settings stay unless given.
        daemon.config_extra = {"ingest": daemon.config["ingest"]}
        original = daemon.reconfigure

        def reconfigure(**options):
            extra = options.pop("extra", daemon.config_extra)
            original(extra=extra, **options)
            daemon.config_extra = extra
        daemon.reconfigure = reconfigure
        return daemon
    return run_test(TESTS, name, make_daemon, __doc__)


if __name__ == "__main__":
    sys.exit(main())
