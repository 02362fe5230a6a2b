#!/usr/bin/env python3
"""Black-box tests of WHEP playback: aiortc viewers (scripts/whip-clients/whep_aiortc.py) POST
to a running composition's `/whep/composition/<id>` and play the composite of RTMP publishers
over WebRTC, as a browser would: colours and tones decoded, lip sync from the RTCP sender
reports, DELETE, refusals, and a viewer whose UDP path is blackholed by the seeded relay.

Run one test: `whep_tests.py BINARY TEST_NAME` (`--list` lists them). Exit status 0 means the
test passed. Invoked from Tests/ServerTests/WHEPDaemonTests.swift under `swift test`.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_tests import api  # noqa: E402
from daemon_tests import check, keeping_ingest, script_main, wait_state  # noqa: E402
from live_tests import (Publisher, check_timeline_and_seeking, create_ingest, create_stage, publish_url,  # noqa: E402
                        recording_playlist, setup_encoder_and_storage, wait_published)
from whip_clients import CLIENTS, free_udp_port, token, whip_post  # noqa: E402
from whip_tests import metric, whip_daemon  # noqa: E402

FLASH_VIDEO = ("color=c=0x0000FF:size=320x240:rate=30,"
               "drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='lt(mod(t\\,1)\\,0.1)'")
BEEP_AUDIO = "aevalsrc='0.3*sin(2*PI*880*t)+if(lt(mod(t\\,1)\\,0.06)\\,0.5*sin(2*PI*2000*t)\\,0)':s=48000"


def viewers_in_background(url, token_text, duration, count=1, extra=()):
    """whep_aiortc.py, running: `finished` waits for its JSON line."""
    command = [sys.executable, os.path.join(CLIENTS, "whep_aiortc.py"), "--url", url, "--duration", str(duration),
               "--count", str(count), "--token", token_text, *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def viewers(url, token_text, duration=10, count=1, extra=()):
    """Runs whep_aiortc.py to the end: (exit status, its JSON line)."""
    return finished(viewers_in_background(url, token_text, duration, count, extra), duration + 60)


def finished(process, timeout):
    out, err = process.communicate(timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    check(lines, f"whep_aiortc.py printed nothing (exit {process.returncode}): {err[-2000:]}")
    return process.returncode, json.loads(lines[-1])


def three_publishers(d):
    """A stage with red/440 Hz, green/660 Hz and blue/880 Hz RTMP publishers (blue flashes
    white and beeps 2 kHz once a second), and an ACTIVE composition of them."""
    enc, sto = setup_encoder_and_storage(d)
    stage = create_stage(d)
    publishers = []
    for name, colour, tone in (("red", "red", 440), ("green", "green", 660)):
        ingest = create_ingest(d, stage["arn"], name, secure=False)
        publishers.append(Publisher(publish_url(stage, ingest, False), colour, tone, d.workdir, name))
        wait_published(d, stage["arn"], ingest["participantId"])
    ingest = create_ingest(d, stage["arn"], "blue", secure=False)
    publishers.append(Publisher(publish_url(stage, ingest, False), None, None, d.workdir, "blue", video_filter=FLASH_VIDEO,
                                audio_source=BEEP_AUDIO))
    wait_published(d, stage["arn"], ingest["participantId"])
    composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
        [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]),
        "--layout", json.dumps({"grid": {"gridGap": 0}}))["composition"]
    check(wait_state(d, composition["arn"], {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
    return stage, composition["arn"], publishers


def camera_composition(d):
    """WHEP_CAMERA=1: three publishers of moving, detailed pictures (testsrc2, 640x360) composed
    to 1280x720@30 at 2.5 Mbit/s, as benchmarks measure: a keyframe is ~100 packets, a frame ~10."""
    enc = d.cli("create-encoder-configuration", "--name", "hd", "--video",
                "width=1280,height=720,framerate=30,bitrate=2500000")["encoderConfiguration"]["arn"]
    sto = d.cli("create-storage-configuration", "--name", "local", "--s3", "bucketName=rec-bucket")["storageConfiguration"]["arn"]
    stage = create_stage(d)
    publishers = []
    for name, tone in (("one", 440), ("two", 660), ("three", 880)):
        ingest = create_ingest(d, stage["arn"], name, secure=False)
        publishers.append(Publisher(publish_url(stage, ingest, False), None, tone, d.workdir, name,
                                    video_filter=f"testsrc2=size=640x360:rate=30,hue=h={tone}", extra_output=["-b:v", "1200k"]))
        wait_published(d, stage["arn"], ingest["participantId"])
    composition = d.cli("start-composition", "--stage-arn", stage["arn"], "--destinations", json.dumps(
        [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]))["composition"]
    check(wait_state(d, composition["arn"], {"ACTIVE", "FAILED"}) == "ACTIVE", "composition ACTIVE")
    return stage, composition["arn"], publishers


def watched(d, camera=False):
    """The daemon started, three_publishers' composition, its WHEP URL (GetComposition's
    extension field) and a SUBSCRIBE token of its stage."""
    d.start()
    stage, arn, publishers = camera_composition(d) if camera else three_publishers(d)
    url = api(d, "GetComposition", {"arn": arn})["composition"]["whepUrl"]
    return stage, arn, publishers, url, token(d, stage["arn"], "viewer", capabilities=("SUBSCRIBE",))["token"]


def test_aiortc_plays_the_composite(d):
    """aiortc plays a composition of three RTMP publishers over WHEP with a SUBSCRIBE token:
    each colour in the video, each tone in the audio, lip sync from the sender reports within
    40 ms; DELETE ends it and frees its state. A PUBLISH-only token, a token of another stage
    and no token (with authentication on the unsigned request is refused too: the daemon tests
    run with it off, so unsigned is the console's case and is let through) are checked."""
    publishers = []
    try:
        # whepUrl is an extension field: the AWS CLI drops it, an SDK call's JSON has it.
        stage, arn, publishers, url, subscriber = watched(d)
        check(url.endswith("/whep/composition/" + arn.rsplit("/", 1)[1]), f"GetComposition's whepUrl: {url}")
        publisher_only = token(d, stage["arn"], "publisher", capabilities=("PUBLISH",))
        other_stage = create_stage(d, name="other")
        other = token(d, other_stage["arn"], "elsewhere", capabilities=("SUBSCRIBE",))
        offer = "v=0\r\n"  # who may watch is decided before the offer is read
        for name, tok, wanted in (("PUBLISH-only token", publisher_only["token"], 403), ("another stage's token", other["token"], 403)):
            status, _, body = whip_post(url, tok, offer)
            check(status == wanted, f"{name}: {status} {body}")
        status, _, body = whip_post(url, "not.a.token", offer)
        check(status == 401, f"a malformed token: {status} {body}")
        status, _, body = whip_post(url[:-3] + "nothere", subscriber, offer)
        check(status == 404, f"an unknown composition: {status} {body}")

        code, result = viewers(url, subscriber, duration=12)
        viewer = result["viewers"][0]
        print("WHEP viewer: " + json.dumps({k: v for k, v in viewer.items() if k != "location"}))
        check(code == 0 and viewer["status"] == 201, f"viewer: {viewer}")
        check(viewer["first_frame_after_post_s"] <= 3.0, f"first picture {viewer['first_frame_after_post_s']} s after the POST")
        check(viewer["frames"] >= 12 * 30 * 0.8, f"video frames decoded: {viewer['frames']}")
        for colour in ("red", "green", "blue"):
            check(viewer["colours"][colour] >= 0.8, f"{colour} in {viewer['colours'][colour] * 100:.0f} % of the frames")
        for tone in ("440.0", "660.0", "880.0"):
            check(viewer["tones"][tone] >= 20, f"{tone} Hz at {viewer['tones'][tone]}x the spectrum's median")
        offsets = viewer["av_offsets_ms"]
        check(len(offsets) >= 8, f"flash/beep pairs: {offsets} (flashes {viewer['flashes']}, beeps {viewer['beeps']})")
        check(all(abs(o) <= 40 for o in offsets), f"A/V offsets (beep - flash, by the SRs) beyond 40 ms: {offsets}")
        # Measured -4 to -1 ms. Sender reports anchored on when each stream's packets were sent
        # (not on the composition's time) put audio 20-22 ms early: within 40 ms, not within 12.
        median = sorted(offsets)[len(offsets) // 2]
        check(abs(median) <= 12, f"median A/V offset {median} ms beyond 12 ms: {offsets}")
        check(viewer["delete_status"] == 200, f"DELETE: {viewer['delete_status']}")
        check(metric(d, "stage_compositor_connections_open", 'listener="whep"') == 0, "the viewer's session is gone after DELETE")
        status, _, _ = whip_post(viewer["location"], subscriber, "")
        check(status == 405, f"POST on the session resource: {status}")
        check("WHEP viewer left" in d.log() and "the viewer ended the WHEP session (DELETE)" in d.log(), "DELETE logged")
        lagged = metric(d, "stage_compositor_composition_lagged_frames", arn.rsplit("/", 1)[1])
        print(f"composition lagged frames: {lagged:.0f}")
        d.cli("stop-composition", "--arn", arn)
        check(wait_state(d, arn, {"STOPPED", "FAILED"}, timeout=40) == "STOPPED", "composition stopped")
        check("whepUrl" not in api(d, "GetComposition", {"arn": arn})["composition"], "no whepUrl once STOPPED")
        final = d.cli("get-composition", "--arn", arn)["composition"]
        status, _, body = whip_post(url, subscriber, offer)
        check(status == 404, f"a stopped composition: {status} {body}")
        check(d.stop() == 0, "exit status")
    finally:
        for publisher in publishers:
            publisher.kill()
    # The recording made beside the viewer (whose join and PLIs asked the encoder for
    # keyframes, and whose Opus tap ran on the mix) plays and seeks as a player needs.
    playlist = recording_playlist(d, final)
    with open(playlist) as f:
        lengths = [float(x) for x in re.findall(r"#EXTINF:([0-9.]+)", f.read())]
    check(lengths and max(lengths) <= 2.5, f"segment lengths (target 2 s): {lengths}")
    check_timeline_and_seeking(playlist)


def test_a_blackholed_viewer_is_dropped_and_the_others_play_on(d):
    """Two viewers; one's UDP path goes through the seeded relay, which blackholes it 6 s in.
    That viewer is held back and dropped to keyframes (no RTCP from it), then its consent
    expires and its session ends; the other plays every frame throughout and the composition
    lags no frame."""
    relay_port = free_udp_port()
    whip = dict(d.config["ingest"]["whip"], consentTimeoutSeconds=8)
    d.reconfigure(extra={"ingest": dict(d.config["ingest"], whip=whip)})
    # The blackhole begins 6 s after the first datagram through the relay (the viewer's first check).
    relay = subprocess.Popen([sys.executable, os.path.join(CLIENTS, "udp_impair_relay.py"), "--listen", f"127.0.0.1:{relay_port}",
                              "--target", f"127.0.0.1:{whip['port']}", "--seed", "5", "--outage-at", "6", "--outage-for", "600",
                              "--outage-from", "first-packet"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    check('"listening"' in relay.stdout.readline(), "relay listening")
    publishers = []
    try:
        stage, arn, publishers, url, subscriber = watched(d)
        healthy = viewers_in_background(url, subscriber, 24, extra=["--no-decode"])
        blackholed = viewers_in_background(url, subscriber, 22, extra=["--no-decode", "--no-delete",
                                                                                "--candidate-port", str(relay_port)])
        code, result = finished(healthy, 90)
        other_code, other = finished(blackholed, 90)
        good, bad = result["viewers"][0], other["viewers"][0]
        print(f"healthy viewer: {good.get('video_packets')} video, {good.get('audio_packets')} audio packets; "
              f"blackholed viewer: {bad.get('video_packets')} video, {bad.get('audio_packets')} audio packets")
        # 24 s of 30 fps video (a packet or more a frame) and 50 Opus packets a second.
        check(code == 0 and good.get("video_packets", 0) >= 24 * 30 * 0.9 and good.get("audio_packets", 0) >= 24 * 50 * 0.9,
              f"the healthy viewer: {good}")
        check(bad["status"] == 201 and bad.get("audio_packets", 0) < 8 * 50, f"the blackholed viewer: {bad}")
        log = d.log()
        ended = [line for line in log.splitlines() if "WHEP viewer ended" in line and "consent expired" in line]
        check(len(ended) == 1, "the blackholed viewer's session ended on consent:\n" + "\n".join(
            line for line in log.splitlines() if "WHEP" in line))
        check("frames.skipped" in ended[0], f"its counters: {ended[0]}")
        skipped = int(ended[0].split("frames.skipped=")[1].split()[0].strip(","))
        check(skipped > 0, f"it was dropped to keyframes: {ended[0]}")
        lagged = metric(d, "stage_compositor_composition_lagged_frames", arn.rsplit("/", 1)[1])
        check(lagged == 0, f"lagged frames: {lagged}")
        check(d.stop() == 0, "exit status")
    finally:
        relay.terminate()
        relay.wait(timeout=10)
        for publisher in publishers:
            publisher.kill()


def process_usage(pid):
    """(CPU seconds, RSS MiB) of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return (int(fields[11]) + int(fields[12])) / ticks, rss / 1024


def test_fifty_viewers_cost(d):
    """Not in `make test` (a measurement; benchmarks/run-whep-viewers.sh runs it on the release
    build): the daemon's CPU and memory over 20 s with no viewer, then with WHEP_VIEWERS (50)
    aiortc viewers of one composition (RTP, RTCP and NACKs as a player, without decoding);
    the composition must lag no frame."""
    count = int(os.environ.get("WHEP_VIEWERS", "50"))
    seconds = float(os.environ.get("WHEP_SECONDS", "20"))
    camera = os.environ.get("WHEP_CAMERA") == "1"
    publishers = []
    try:
        stage, arn, publishers, url, subscriber = watched(d, camera=camera)
        time.sleep(3)
        cpu0, rss0 = process_usage(d.process.pid)
        time.sleep(seconds)
        cpu1, rss1 = process_usage(d.process.pid)
        idle = (cpu1 - cpu0) / seconds
        lagged0 = metric(d, "stage_compositor_composition_lagged_frames", arn.rsplit("/", 1)[1])
        crowd = viewers_in_background(url, subscriber, seconds + 90, count=count, extra=["--no-decode", "--stagger", "0.1"])
        # Measured once every viewer is connected (50 aiortc peers in one Python process connect slowly).
        deadline = time.time() + 90
        while metric(d, "stage_compositor_connections_open", 'listener="whep"') < count and time.time() < deadline:
            time.sleep(0.5)
        joined = metric(d, "stage_compositor_connections_open", 'listener="whep"')
        time.sleep(3)
        cpu2, rss2 = process_usage(d.process.pid)
        time.sleep(seconds)
        cpu3, rss3 = process_usage(d.process.pid)
        with_viewers = (cpu3 - cpu2) / seconds
        open_viewers = metric(d, "stage_compositor_connections_open", 'listener="whep"')
        code, result = finished(crowd, 120)
        lagged = metric(d, "stage_compositor_composition_lagged_frames", arn.rsplit("/", 1)[1]) - lagged0
        played = [v for v in result["viewers"] if v["status"] == 201 and v.get("video_packets", 0) > 0]
        print(f"WHEP viewers ({'1280x720 camera-like' if camera else '320x240 flat colours'}): {count} viewers ({open_viewers:.0f} open while measured, {len(played)} played): daemon "
              f"{idle * 100:.1f} % of a core without viewers, {with_viewers * 100:.1f} % with them: "
              f"{(with_viewers - idle) * 100 / count:.2f} % of a core per viewer; RSS {rss1:.0f} → {rss3:.0f} MiB: "
              f"{(rss3 - rss1) / count:.2f} MiB per viewer; lagged frames while watched {lagged:.0f}")
        ended = [line.split("reason=")[1][:80] for line in d.log().splitlines() if "WHEP viewer ended" in line and "reason=" in line]
        check(len(played) == count and joined == count and open_viewers == count,
              f"viewers that played: {len(played)} of {count}, {open_viewers:.0f} open while measured; ended early: {ended[:5]}")
        check(lagged == 0, f"the composition lagged {lagged:.0f} frames with {count} viewers")
        check(d.stop() == 0, "exit status")
    finally:
        for publisher in publishers:
            publisher.kill()


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def main():
    return script_main(TESTS, __doc__, lambda binary, name, workdir: keeping_ingest(whip_daemon(binary, workdir)))


if __name__ == "__main__":
    sys.exit(main())
