#!/usr/bin/env python3
"""E-RTMP v2 multitrack video ingest, end to end: ertmp_multitrack.py (a raw RTMP publisher
sending one source at 1280x720 blue, 640x360 yellow and 320x180 magenta as tracks 0, 1 and 2,
in OneTrack and ManyTracks messages, track 0 plain in some) publishes to the real daemon, and
what the daemon composed or recorded is decoded with ffmpeg as a player would, to see which
track it used.

multitrack_composes_from_the_smallest_track: twelve publishers on one stage, composed in the
default grid at 1280x720 30 fps to the local bucket: every tile shows the smallest track that
covers it (the rule WHIP simulcast uses), and with `ingest.rtmp.multitrackFitsTiles: false`
the largest; the daemon's CPU over the same steady 10 s of both runs shows what the rule saves.

multitrack_larger_tiles_get_a_larger_track: two publishers, whose tiles (638x358) are larger
than the 320x180 track: the 640x360 one is composed, switched to at its keyframe.

multitrack_individual_recording_records_the_largest: an individual participant recording
(the one consumer, and it wants the largest) records the 1280x720 track.

Run one test: `multitrack_tests.py BINARY TEST_NAME` (`--list` lists them). Exit status 0 means
the test passed. Invoked from Tests/ServerTests/MultitrackDaemonTests.swift under `swift test`.
"""
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import media_check  # noqa: E402
from daemon_tests import Failure, check, final_playlist, free_port, recording_dir, script_main  # noqa: E402
from live_tests import (composition_state, live_daemon, publish_url, recording_events_of, stage_updates,  # noqa: E402
                        wait_stage_update)
from whip_clients import free_udp_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SENDER = os.path.join(HERE, "ertmp_multitrack.py")
# What ertmp_multitrack.py sends: (track, width, height, colour), largest first.
TRACKS = [(0, 1280, 720, "blue"), (1, 640, 360, "yellow"), (2, 320, 180, "magenta")]
OUTPUT = (1280, 720)
FPS = 30
PUBLISHERS = 12
# Forms of the twelve publishers: half in OneTrack messages (track 0 plain in half of those, as
# OBS sends it), half in ManyTracks messages.
FORMS = ["one"] * 3 + ["one-plain"] * 3 + ["many"] * 6
# The composition runs this long once ACTIVE; the daemon's CPU is read over [WINDOW) of it.
COMPOSED_SECONDS = 10.0
WINDOW = (2.5, 9.5)
# Every tile is checked from this far into the recording (the switch to the right track waits
# for that track's next keyframe: one a second).
SETTLED = 1.0
# Where the composition's demand switches tracks: the new track's next keyframe (within 1 s),
# the jitter allowance (latencyMs 200) and a frame.
SWITCHED = 1.5


def full_log(d):
    with open(d.stderr_path, errors="replace") as f:
        return f.read()


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields 14 and 15 of stat(5), counted from the state (field 3) here.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def expected_track(tile, largest=False):
    """The rule: the smallest track at least as large as the tile in both dimensions (the
    largest when none is, or when the rule is off)."""
    _, _, w, h = tile
    if largest:
        return TRACKS[0]
    covering = [t for t in TRACKS if t[1] >= w and t[2] >= h]
    return min(covering, key=lambda t: t[1] * t[2]) if covering else TRACKS[0]


def shown_tracks(log, participant_id, until=None):
    """The tracks the daemon logged `multitrack track shown` for, for one participant, in order
    (those logged by the wall-clock time `until`, when given): [(track, width, height)]."""
    shown = []
    for line in log.splitlines():
        if "multitrack track shown" in line and f"participant.id={participant_id} " in line:
            if until is not None:
                stamp = datetime.datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
                if stamp.replace(tzinfo=datetime.timezone.utc).timestamp() > until:
                    continue
            fields = dict(re.findall(r"(\w[\w.]*)=(\S+)", line))
            shown.append((int(fields.get("track", -1)), int(fields.get("width", -1)), int(fields.get("height", -1))))
    return shown


def shown_problems(log, ids, wanted, label, at, required=True, forms=FORMS):
    """Problems with the daemon's `multitrack track shown` lines for the participants (in
    `forms` order): the track each was shown at the wall-clock time `at` (the last logged by
    then) is one of `wanted`, at that track's own size; with `required`, every participant has
    one. (When the composition ends nobody wants a tile: the daemon may go back to another.)"""
    problems, unlogged = [], []
    sizes = {n: (w, h) for n, w, h, _ in TRACKS}
    for p, form in zip(ids, forms):
        shown = shown_tracks(log, p, until=at)
        if not shown:
            unlogged.append(f"{p} ({form})")
            continue
        if shown[-1][0] not in wanted:
            problems.append(f"{label}: {p} ({form}) was shown track {shown[-1][0]} while composed, expected one of "
                            f"{sorted(wanted)}: {shown_tracks(log, p)}")
        if any(sizes.get(track) != (w, h) for track, w, h in shown):
            problems.append(f"{label}: {p} ({form}): logged sizes are not the tracks' own: {shown}")
    if unlogged and required:
        problems.append(f"{label}: no `multitrack track shown` for {', '.join(unlogged)}")
    elif unlogged:
        print(f"multitrack {label}: no `multitrack track shown` for {', '.join(unlogged)}")
    return problems


class Sender:
    """ertmp_multitrack.py publishing to several URLs from one process."""

    def __init__(self, workdir, media, streams, duration, name):
        self.result_path = os.path.join(workdir, f"sender-{name}.json")
        self.log_path = os.path.join(workdir, f"sender-{name}.log")
        command = [sys.executable, SENDER, "--media", media, "--duration", str(duration), "--result", self.result_path]
        for form, url in streams:
            command += ["--publish", form, url]
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def wait(self, timeout):
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Failure(f"the sender did not finish within {timeout:.0f}s:\n{self.output()}")
        check(self.process.returncode == 0, f"the sender failed ({self.process.returncode}):\n{self.output()}")
        with open(self.result_path) as f:
            return json.load(f)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def prepare_media(workdir):
    """The sender's media, encoded once for every run of the test."""
    media = os.path.join(workdir, "media")
    result = subprocess.run([sys.executable, SENDER, "--media", media, "--prepare-only"], capture_output=True, text=True, timeout=300)
    check(result.returncode == 0, f"preparing the media: {result.stdout}{result.stderr}")
    return media


def encoder_and_storage(client, width, height):
    enc = client.create_encoder_configuration(name="multitrack", video={"width": width, "height": height, "framerate": FPS,
                                                                         "bitrate": 2_500_000})["encoderConfiguration"]
    sto = client.create_storage_configuration(name="local", s3={"bucketName": "rec-bucket"})["storageConfiguration"]
    return enc["arn"], sto["arn"]


def compose(d, media, label, forms=FORMS, seconds=COMPOSED_SECONDS, window=WINDOW):
    """Multitrack publishers (one per form, from one sender process) on a stage composed in
    the default grid at OUTPUT for `seconds` once ACTIVE; the daemon's CPU over `window` of
    that. Returns (final composition, participant IDs, CPU seconds per second of output, the
    sender's results, the wall-clock time just before the composition was stopped)."""
    d.start()
    client = d.client()
    enc, sto = encoder_and_storage(client, *OUTPUT)
    stage = client.create_stage(name=f"multitrack-{label}")["stage"]
    stage_arn = stage["arn"]
    configs = [client.create_ingest_configuration(stageArn=stage_arn, userId=f"{label}-{i}", ingestProtocol="RTMP",
                                                  insecureIngest=True)["ingestConfiguration"] for i in range(len(forms))]
    ids = [c["participantId"] for c in configs]
    # Long enough for the publishes, the composition's start and `seconds`, with room.
    sender = Sender(d.workdir, media, [(form, publish_url(stage, c, False)) for form, c in zip(forms, configs)],
                    duration=seconds + 8, name=label)
    try:
        for participant in ids:
            wait_stage_update(d, stage_arn, participant, "Participant Published", 1, timeout=20)
        destinations = [{"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc]}}]
        arn = client.start_composition(stageArn=stage_arn, destinations=destinations)["composition"]["arn"]
        check(composition_state(client, arn, {"ACTIVE", "FAILED"}) == "ACTIVE", f"{label}: composition ACTIVE\n{d.log()}")
        active = time.time()

        def at(seconds):
            delay = active + seconds - time.time()
            if delay > 0:
                time.sleep(delay)

        at(window[0])
        before, measured_from = cpu_seconds(d.process.pid), time.time()
        at(window[1])
        after, measured_to = cpu_seconds(d.process.pid), time.time()
        check(sender.process.poll() is None, f"{label}: the sender stopped early:\n{sender.output()}")
        at(seconds)
        stopping = time.time()
        client.stop_composition(arn=arn)
        check(composition_state(client, arn, {"STOPPED", "FAILED"}, timeout=60) == "STOPPED", f"{label}: composition STOPPED")
        final = client.get_composition(arn=arn)["composition"]
        results = sender.wait(timeout=seconds + 60)
    finally:
        sender.kill()
    errors = [e["detail"] for e in stage_updates(d, stage_arn) if e["detail"]["event_name"] == "Participant Publish Error"]
    check(not errors, f"{label}: publish errors: {errors}")
    check(d.stop() == 0, f"{label}: the daemon exits cleanly")
    return final, ids, (after - before) / (measured_to - measured_from), results, stopping


def tile_colours(d, composition, expected, label, seconds=COMPOSED_SECONDS, settled=SETTLED, camera_off_allowed=False):
    """Decodes the composite recording: every tile's colour at 10 fps from `settled` s in
    (`expected`: tile index → colour, for a grid of that many). `camera_off_allowed`: the
    camera-off tile (grey) is no problem, but every tile shows its colour at least once and
    never another's (the largest tracks' run: twelve 720p decodes, which a machine busy with
    something else cannot keep up with; what it shows must still be the largest track).
    Returns ({colour: samples}, [problems])."""
    _, _, playlist, _ = final_playlist(recording_dir(d, composition))
    probed = media_check.probe(playlist)
    video = [s for s in probed["streams"] if s.get("codec_type") == "video"]
    check(video and (video[0]["width"], video[0]["height"]) == OUTPUT, f"{label}: the recording's video: {probed}")
    # Decoded at a quarter of the size (a 1280x720 decode of 20 s at 10 fps is 0.5 GB of RGB).
    scale = 4
    frames = media_check.Video(playlist, OUTPUT[0] // scale, OUTPUT[1] // scale, fps=10)
    placed = media_check.tiles(d.binary, len(expected), f"{OUTPUT[0]}x{OUTPUT[1]}")
    check(len(placed) == len(expected), f"the layout places {len(expected)}: {placed}")
    seen = collections.Counter()
    problems = []
    samples = 0
    first = {}
    for i in range(len(frames.frames) - 2):
        t = i / frames.fps
        for index, rect in placed.items():
            x, y = media_check.centre(rect)
            if index not in first and frames.name(t, x // scale, y // scale) == expected[index]:
                first[index] = t
    for i in range(int(round(settled * frames.fps)), len(frames.frames) - 2):
        t = i / frames.fps
        samples += 1
        for index, rect in sorted(placed.items()):
            x, y = media_check.centre(rect)
            name = frames.name(t, x // scale, y // scale)
            seen[name] += 1
            if camera_off_allowed and name == "grey":
                continue
            if name != expected[index]:
                problems.append(f"{t:.1f}s tile {index}: {name} {frames.colour(t, x // scale, y // scale)}, expected {expected[index]}")
    check(samples >= 10 * (seconds - settled - 2), f"{label}: only {samples} samples in a {frames.duration:.1f}s recording")
    if camera_off_allowed:
        problems += [f"tile {index} never shows {expected[index]}" for index in sorted(placed) if index not in first]
    print(f"multitrack {label}: {frames.duration:.1f}s recording, {samples} samples from {settled:.1f}s: tile colours "
          + ", ".join(f"{name} {count}" for name, count in seen.most_common())
          + f"; the expected colour first at {max(first.values(), default=float('nan')):.1f}s at the latest")
    return seen, problems


def test_multitrack_composes_from_the_smallest_track(d):
    """Twelve publishers (ertmp_multitrack.py, one process; OneTrack, OneTrack with track 0
    plain, and ManyTracks messages) composed in the default grid at 1280x720 30 fps: the tiles
    (318x178 in a 4x3 grid) are covered by the 320x180 track, and from the first second on
    every tile shows it (magenta), never another track, black or the camera-off tile; the
    daemon logs `multitrack track shown` with that track for each participant. Then the same
    on a daemon with `ingest.rtmp.multitrackFitsTiles: false`: every tile shows the largest
    (blue). The daemon's CPU over the same steady 10 s of each run: the rule's is lower."""
    started = time.time()
    media = prepare_media(d.workdir)
    placed = media_check.tiles(d.binary, PUBLISHERS, f"{OUTPUT[0]}x{OUTPUT[1]}")
    fitting = {index: expected_track(rect) for index, rect in placed.items()}
    print("multitrack: tiles " + ", ".join(sorted({f"{w}x{h}" for _, _, w, h in placed.values()}))
          + " → tracks by the rule: " + ", ".join(sorted({f"{t[0]} {t[1]}x{t[2]} {t[3]}" for t in fitting.values()})))

    problems = []

    # With the rule (the default).
    final, ids, fits_cpu, results, stopping = compose(d, media, "fits")
    print(f"multitrack fits: the sender sent {sum(r['frames'] for r in results)} frames on {len(results)} connections")
    problems += shown_problems(full_log(d), ids, {t[0] for t in fitting.values()}, "with the rule", stopping)
    fits_seen, fits_problems = tile_colours(d, final, {i: t[3] for i, t in fitting.items()}, "fits")

    # The rule off: the largest track is composed, scaled down by the compositor.
    os.makedirs(os.path.join(d.workdir, "largest"))
    largest = live_daemon(d.binary, os.path.join(d.workdir, "largest"), idle=10.0,
                          ingest={"rtmp": {"port": free_port(), "multitrackFitsTiles": False}, "whip": {"port": free_udp_port()}})
    try:
        final_l, ids_l, largest_cpu, _, stopping_l = compose(largest, media, "largest")
    except Failure as failure:
        raise Failure(f"{failure}\n--- the second daemon's log (rule off) ---\n{largest.log()}")
    finally:
        if largest.process and largest.process.poll() is None:
            largest.process.kill()
            largest.process.wait()
    # Every multitrack publisher logs the track it shows, the largest here.
    problems += shown_problems(full_log(largest), ids_l, {TRACKS[0][0]}, "with the rule off", stopping_l)
    largest_seen, largest_problems = tile_colours(largest, final_l, {i: TRACKS[0][3] for i in placed}, "largest",
                                                  camera_off_allowed=True)

    ratio = fits_cpu / largest_cpu if largest_cpu else float("nan")
    print(f"multitrack CPU: fits tiles {fits_cpu:.2f} CPU-s per output s, largest {largest_cpu:.2f}, ratio {ratio:.2f}")
    print(f"multitrack: wall time {time.time() - started:.0f}s")
    if fits_problems:
        problems.append(f"with the rule, {len(fits_problems)} tile samples are not the fitting track:\n  "
                        + "\n  ".join(fits_problems[:30]))
    if largest_problems:
        problems.append(f"with the rule off, {len(largest_problems)} tile samples are not the largest track:\n  "
                        + "\n  ".join(largest_problems[:30]))
    if not fits_cpu < largest_cpu:
        problems.append(f"composing from the fitting track costs {fits_cpu:.2f} CPU-s/s, from the largest {largest_cpu:.2f}")
    check(not problems, "\n".join(problems))


def test_multitrack_larger_tiles_get_a_larger_track(d):
    """Two publishers (OneTrack and ManyTracks messages) composed in the default grid at
    1280x720: their tiles (about 640x360, side by side) are larger than the 320x180 track, so
    the rule picks the 640x360 one (yellow), not the smallest (which the daemon shows while
    nobody composes them) nor the largest; the switch waits for that track's keyframe, one a
    second, and from the first second on both tiles show it."""
    media = prepare_media(d.workdir)
    forms = ["one", "many"]
    placed = media_check.tiles(d.binary, len(forms), f"{OUTPUT[0]}x{OUTPUT[1]}")
    fitting = {index: expected_track(rect) for index, rect in placed.items()}
    print("multitrack two: tiles " + ", ".join(sorted({f"{w}x{h}" for _, _, w, h in placed.values()}))
          + " → tracks by the rule: " + ", ".join(sorted({f"{t[0]} {t[1]}x{t[2]} {t[3]}" for t in fitting.values()})))
    seconds = 8.0
    final, ids, _, _, stopping = compose(d, media, "two", forms=forms, seconds=seconds, window=(1.0, 2.0))
    problems = shown_problems(full_log(d), ids, {t[0] for t in fitting.values()}, "two tiles", stopping, forms=forms)
    _, colour_problems = tile_colours(d, final, {i: t[3] for i, t in fitting.items()}, "two", seconds=seconds,
                                      settled=SWITCHED)
    if colour_problems:
        problems.append(f"{len(colour_problems)} tile samples are not the fitting track:\n  " + "\n  ".join(colour_problems[:30]))
    check(not problems, "\n".join(problems))


def test_multitrack_individual_recording_records_the_largest(d):
    """A stage with autoParticipantRecordingConfiguration (AUDIO_VIDEO, 2 s segments) and no
    composition, two multitrack publishers (OneTrack and ManyTracks messages) for 8 s: each
    recording is the largest track, 1280x720 and blue, with its 440 Hz tone."""
    media = prepare_media(d.workdir)
    d.start()
    client = d.client()
    _, sto = encoder_and_storage(client, *OUTPUT)
    recording = {"storageConfigurationArn": sto, "mediaTypes": ["AUDIO_VIDEO"], "hlsConfiguration": {"targetSegmentDurationSeconds": 2}}
    stage = client.create_stage(name="multitrack-recorded", autoParticipantRecordingConfiguration=recording)["stage"]
    forms = ["one", "many"]
    configs = [client.create_ingest_configuration(stageArn=stage["arn"], userId=f"rec-{form}", ingestProtocol="RTMP",
                                                  insecureIngest=True)["ingestConfiguration"] for form in forms]
    sender = Sender(d.workdir, media, [(form, publish_url(stage, c, False)) for form, c in zip(forms, configs)],
                    duration=8, name="recorded")
    try:
        for c in configs:
            wait_stage_update(d, stage["arn"], c["participantId"], "Participant Published", 1, timeout=20)
        sender.wait(timeout=60)
    finally:
        sender.kill()
    stage_id = stage["arn"].rsplit("/", 1)[1]
    for form, c in zip(forms, configs):
        events = recording_events_of(d, c["participantId"])
        names = [e["detail"]["event_name"] for e in events]
        check(names == ["Recording Start", "Recording End"], f"{form}: recording events {names}\n{d.log()}")
        prefix = events[-1]["detail"]["recording_s3_key_prefix"]
        check(prefix.startswith(f"{stage_id}/"), f"{form}: prefix {prefix}")
        root = os.path.join(d.recordings, prefix)
        playlist = os.path.join(root, "media", "hls", "high", "playlist.m3u8")
        check(os.path.exists(playlist), f"{form}: no {playlist}: {os.listdir(os.path.join(root, 'media', 'hls'))}")
        probed = media_check.probe(playlist)
        video = [s for s in probed["streams"] if s.get("codec_type") == "video"]
        duration = float(probed["format"]["duration"])
        size = (video[0]["width"], video[0]["height"]) if video else None
        print(f"multitrack recorded ({form}): {size[0]}x{size[1]}, {duration:.1f}s" if size else f"{form}: no video {probed}")
        check(size == (TRACKS[0][1], TRACKS[0][2]), f"{form}: the individual recording is {size}, the largest track is "
                                                     f"{TRACKS[0][1]}x{TRACKS[0][2]}")
        check(duration >= 6, f"{form}: a {duration:.1f}s recording of 8 s")
        problems = media_check.check_colour_and_tone(playlist, 320, 180, TRACKS[0][3], 440)
        check(not problems, f"{form}: {TRACKS[0][3]} and 440 Hz throughout: " + ", ".join(problems[:20]))
    log = full_log(d)
    for form, c in zip(forms, configs):
        shown = shown_tracks(log, c["participantId"])
        print(f"multitrack recorded ({form}): logged as shown: {shown or 'nothing'}")
        check(all(track == TRACKS[0][0] for track, _, _ in shown), f"{form}: a recorded publisher was shown {shown}")
    check(d.stop() == 0, "the daemon exits cleanly")


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def main():
    return script_main(TESTS, __doc__, lambda binary, name, workdir: live_daemon(
        binary, workdir, idle=10.0, ingest={"whip": {"port": free_udp_port()}}))


if __name__ == "__main__":
    sys.exit(main())
