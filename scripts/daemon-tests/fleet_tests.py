#!/usr/bin/env python3
"""Black-box tests of fleet mode: several `stage-compositor serve` daemons on one PostgreSQL
database act as one IVS endpoint. Each node has its own configuration and state directory (as
daemon_tests.Daemon makes them) plus `database.nodeId`, a 3 s lease renewed every 0.3 s and
`database.fleet` (the shared secret, its capacity in millicores); every node has the same
SigV4 keys and the same bucket, on a local moto_server. Publishers are Debian's ffmpeg (RTMP)
and aiortc (WHIP); what the fleet recorded is read back from the bucket and measured with
ffmpeg. Which node holds a stage is read from `stage-compositor nodes --config`.

The database is STAGE_COMPOSITOR_TEST_DATABASE_URL (Tests/ServerTests/FleetDaemonTests.swift
gives each test a fresh one). fleet_database_restart also needs STAGE_COMPOSITOR_TEST_PG_RESTART:
the command line (a JSON array) that restarts that database's server (`pg_ctl restart`), on a
server of the test's own.

Run one test: `fleet_tests.py BINARY TEST_NAME` (`--list` lists them). Exit status 0 means the
test passed. The figures measured are printed on lines starting with "fleet:".
"""
import functools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import media_check  # noqa: E402
from daemon_tests import ENV, REGION, Daemon, Failure, check, final_playlist, run_from_command_line  # noqa: E402
from live_tests import SIZE, Publisher, check_phases, create_ingest, live_daemon  # noqa: E402
from s3_tests import BUCKET, CREDENTIALS, Moto  # noqa: E402
from whip_clients import CLIENTS, AiortcPublisher, free_udp_port, token, whip_post  # noqa: E402

SECRET = "fleet-test-secret-4b1d9a"
LEASE = {"leaseTtlSeconds": 3, "heartbeatSeconds": 0.3}
TTL = LEASE["leaseTtlSeconds"]
# The same SigV4 keys on every node (Daemon.cli signs with these): a forwarded call must not be
# verified again against the host it was not sent to.
AUTH = {"enabled": True, "accessKeys": {ENV["AWS_ACCESS_KEY_ID"]: ENV["AWS_SECRET_ACCESS_KEY"]}}
SEGMENT_SECONDS = 2
# Seconds an API call may take before the test calls it hung (botocore's read timeout): a
# survivor during a failover, a node while another is stopped or the database restarts...
CALL_LIMIT = 5.0
# ... and any other call (generous: the suite runs on two loaded cores).
SLOW_CALL_LIMIT = 30.0
# From kill -9 of the owner: its composition FAILED on the survivors, its recording finalized.
FAILED_WITHIN, FINALIZED_WITHIN = 15.0, 20.0
STAGE_ARN_PATTERN = re.compile(r"arn:aws:ivs:[a-z0-9-]+:\d{12}:stage/[A-Za-z0-9_-]+")


class HungCall(Failure):
    """An API call that did not answer within its time limit."""


def figure(text):
    """A measured figure, on a line FleetDaemonTests repeats in the suite's output."""
    print(f"fleet: {text}", flush=True)


class FleetNode(Daemon):
    """A daemon of the fleet: node-<name>."""

    name = None

    @property
    def node_id(self):
        return f"node-{self.name}"

    def full_log(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()
        except OSError:
            return ""

    def running(self):
        return self.process is not None and self.process.poll() is None

    def rtmp_url(self, stage, ingest):
        """The stage's RTMP publish URL on this node's ingest port (from the stage's endpoint,
        whichever node it came from)."""
        parts = urllib.parse.urlsplit(stage["endpoints"]["rtmp"])
        port = self.config["ingest"]["rtmp"]["port"]
        return urllib.parse.urlunsplit(parts._replace(netloc=f"127.0.0.1:{port}")) + ingest["streamKey"]

    def whip_url(self, stage_arn):
        return f"{self.endpoint}/whip/{stage_arn.rsplit('/', 1)[1]}"

    def api(self, limit=SLOW_CALL_LIMIT):
        """boto3 on this node, signed with AUTH's key, giving up on a call after `limit` s."""
        clients = self.__dict__.setdefault("_api", {})
        if limit not in clients:
            import boto3
            from botocore.config import Config
            clients[limit] = boto3.client("ivs-realtime", endpoint_url=self.endpoint, region_name=REGION,
                                          aws_access_key_id=ENV["AWS_ACCESS_KEY_ID"],
                                          aws_secret_access_key=ENV["AWS_SECRET_ACCESS_KEY"],
                                          config=Config(retries={"max_attempts": 1}, connect_timeout=limit,
                                                        read_timeout=limit, parameter_validation=False))
        return clients[limit]


class Fleet:
    """The test's processes: moto_server, the nodes, the publishers. Stands in for the single
    daemon of run_test: `log()` is every node's log tail, `process` is None (close() ends
    everything, in the test's own `finally`)."""

    process = None

    def __init__(self, binary, workdir):
        self.binary, self.workdir = binary, workdir
        self.url = os.environ.get("STAGE_COMPOSITOR_TEST_DATABASE_URL")
        self.moto = None
        self.nodes = []
        self.children = []          # anything with kill(): publishers
        self.slowest_call = (0.0, "")
        self.calls = 0
        self._s3 = None

    # ---- processes

    def start_moto(self):
        self.moto = Moto(self.workdir)
        # The nodes' S3 client reads its credentials from the environment (moto takes any).
        os.environ.update(CREDENTIALS)
        return self.moto

    def node(self, name, capacity=4000, idle=10.0, drain=None):
        """A node's configuration (not started): live ingest on free ports (RTMP, RTMPS, WHIP),
        the moto bucket as rec-bucket, the fleet database settings."""
        check(self.url, "needs STAGE_COMPOSITOR_TEST_DATABASE_URL (run through FleetDaemonTests)")
        check(self.moto is not None, "start moto before configuring nodes (its port must be taken first)")
        directory = os.path.join(self.workdir, f"node-{name}")
        os.makedirs(directory)
        ingest = live_daemon(self.binary, directory, ingest={"whip": {"port": free_udp_port()}}).config["ingest"]
        extra = {
            "ingest": ingest,
            "buckets": {"rec-bucket": {"s3": {"endpoint": self.moto.endpoint, "bucket": BUCKET, "pathStyle": True,
                                              "requestTimeoutSeconds": 3, "maxAttempts": 2}}},
            "database": {"url": self.url, "nodeId": f"node-{name}", **LEASE,
                         "fleet": {"secret": SECRET, "capacityMillicores": capacity,
                                   **({} if drain is None else {"drainTimeoutSeconds": drain})}},
        }
        node = FleetNode(self.binary, directory, idle=idle, auth=AUTH, extra=extra)
        node.name = name
        self.nodes.append(node)
        return node

    def start(self, count, capacity=4000, idle=10.0):
        """moto and `count` nodes a, b, c..., started."""
        self.start_moto()
        nodes = [self.node("abcdefgh"[i], capacity=capacity, idle=idle) for i in range(count)]
        started = time.time()
        for node in nodes:
            node.start()
        figure(f"{count} nodes listening {time.time() - started:.2f} s after the first was started")
        return nodes

    def adopt(self, child):
        self.children.append(child)
        return child

    def log(self):
        parts = []
        for node in self.nodes:
            state = "not started" if node.process is None else \
                "running" if node.process.poll() is None else f"exited {node.process.returncode}"
            parts.append(f"--- {node.node_id} ({state}, {node.endpoint}) ---\n{node.log()}")
        return "\n".join(parts)

    def close(self):
        for child in self.children:
            try:
                child.kill()
            except Exception:  # noqa: BLE001 - the others must still be ended
                pass
        for node in self.nodes:
            if node.running():
                node.process.kill()        # also ends a SIGSTOPped one
                node.process.wait()
        if self.moto:
            self.moto.stop()

    # ---- the fleet's view

    def by_id(self, node_id):
        return next(n for n in self.nodes if n.node_id == node_id)

    def nodes_table(self, via=None):
        """(text, {node id: {incarnation, live, draining, reserved, capacity, stages}}) of
        `stage-compositor nodes`; no stage may be listed on two nodes."""
        via = via or next((n for n in self.nodes if n.process is not None), self.nodes[0])
        result = subprocess.run([self.binary, "nodes", "--config", via.config_path], capture_output=True, text=True,
                                timeout=30)
        check(result.returncode == 0, f"nodes --config: {result.returncode} {result.stderr}")
        table = parse_nodes(result.stdout)
        holders = {}
        for node_id, node in table.items():
            for arn in node["stages"]:
                holders.setdefault(arn, []).append(node_id)
        doubled = {arn: ids for arn, ids in holders.items() if len(ids) > 1}
        check(not doubled, f"a stage on two nodes: {doubled}\n{result.stdout}")
        return result.stdout, table

    def owner(self, stage_arn, timeout=15, expect=None):
        """The node holding `stage_arn` per `nodes` (waits until one does, or it is `expect`)."""
        deadline = time.time() + timeout
        while True:
            text, table = self.nodes_table()
            holders = [node_id for node_id, node in table.items() if stage_arn in node["stages"]]
            if holders and (expect is None or holders[0] == expect):
                return self.by_id(holders[0])
            if time.time() > deadline:
                listed = any(node["stages"] for node in table.values())
                hint = "" if listed else " (the table lists no stage ARN at all: does `nodes` print them?)"
                raise Failure(f"{stage_arn} is not held by {expect or 'any node'} within {timeout} s{hint}:\n{text}")
            time.sleep(0.3)

    def events(self, arn=None):
        """Every node's event file, together (`arn`: only the events about it). A line cut short
        by a kill -9 is left out."""
        found = []
        for node in self.nodes:
            if not os.path.exists(node.events_path):
                continue
            with open(node.events_path) as f:
                for line in f:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if arn is None or event.get("resources") == [arn]:
                        found.append(event)
        return found

    # ---- API calls that must answer

    def call(self, node, operation, limit=SLOW_CALL_LIMIT, **params):
        """A boto3 call on `node`; one that does not answer within `limit` s fails the test."""
        import botocore.exceptions
        started = time.time()
        try:
            return getattr(node.api(limit), operation)(**params)
        except (botocore.exceptions.ReadTimeoutError, botocore.exceptions.ConnectTimeoutError,
                botocore.exceptions.EndpointConnectionError) as error:
            raise HungCall(f"{operation} on {node.node_id} did not answer within {limit} s: {error}")
        finally:
            took = time.time() - started
            self.calls += 1
            if took > self.slowest_call[0]:
                self.slowest_call = (took, f"{operation} on {node.node_id}")

    def composition(self, node, arn, limit=SLOW_CALL_LIMIT):
        return self.call(node, "get_composition", limit=limit, arn=arn)["composition"]

    def wait_state(self, node, arn, states, timeout=30):
        deadline = time.time() + timeout
        while True:
            state = self.composition(node, arn)["state"]
            if state in states:
                return state
            if time.time() > deadline:
                raise Failure(f"{arn} did not reach {states} on {node.node_id} within {timeout} s (last {state})")
            time.sleep(0.3)

    def session(self, node, stage_arn, timeout=15):
        deadline = time.time() + timeout
        while True:
            session = self.call(node, "get_stage", arn=stage_arn)["stage"].get("activeSessionId")
            if session:
                return session
            if time.time() > deadline:
                raise Failure(f"no active session on {stage_arn} (asked {node.node_id})")
            time.sleep(0.2)

    def participants(self, node, stage_arn, session, limit=SLOW_CALL_LIMIT):
        return self.call(node, "list_participants", limit=limit, stageArn=stage_arn, sessionId=session)["participants"]

    def wait_publishing(self, node, stage_arn, participant_id, timeout=20):
        """The stage's session once the participant is CONNECTED and publishing (asked `node`)."""
        deadline = time.time() + timeout
        seen = []
        while time.time() < deadline:
            session = self.call(node, "get_stage", arn=stage_arn)["stage"].get("activeSessionId")
            if session:
                seen = self.participants(node, stage_arn, session)
                if any(p["participantId"] == participant_id and p["state"] == "CONNECTED" and p.get("published")
                       for p in seen):
                    return session
            time.sleep(0.2)
        raise Failure(f"{participant_id} is not publishing on {stage_arn} within {timeout} s (asked {node.node_id}): {seen}")

    # ---- the bucket

    def s3(self):
        if self._s3 is None:
            import boto3
            self._s3 = boto3.client("s3", endpoint_url=self.moto.endpoint, region_name=REGION,
                                    aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                    aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
        return self._s3

    def objects(self, prefix):
        """{key: (size, ETag, LastModified)} of every object under `prefix`."""
        found, token_ = {}, None
        while True:
            page = self.s3().list_objects_v2(Bucket=BUCKET, Prefix=prefix, **({"ContinuationToken": token_} if token_ else {}))
            for item in page.get("Contents", []):
                found[item["Key"]] = (item["Size"], item["ETag"], item["LastModified"].isoformat())
            token_ = page.get("NextContinuationToken")
            if not token_:
                return found

    def stable_objects(self, prefix, quiet=1.0, timeout=6.0):
        """objects(prefix) once a listing `quiet` s later is the same (the survivor done writing)."""
        deadline = time.time() + timeout
        listing = self.objects(prefix)
        while True:
            time.sleep(quiet)
            again = self.objects(prefix)
            if again == listing:
                return listing
            check(time.time() < deadline, f"the bucket under {prefix} keeps changing for {timeout} s")
            listing = again

    def segments(self, prefix):
        return sorted((os.path.basename(k) for k in self.objects(prefix) if k.endswith(".ts")), key=segment_number)

    def wait_objects(self, what, prefix, condition, timeout):
        deadline = time.time() + timeout
        while True:
            keys = self.objects(prefix)
            if condition(keys):
                return keys
            if time.time() > deadline:
                raise Failure(f"{what} within {timeout} s; under {prefix}: {sorted(keys)[-12:]}")
            time.sleep(0.25)


def parse_nodes(text):
    """`stage-compositor nodes`' output: a row per node (node id, incarnation, then its state,
    lease, reserved/capacity millicores... in any order). A stage ARN belongs to the node named
    at the start of its line (a row of the nodes table, or of a table of node and stage), or,
    on an indented line, to the node above."""
    nodes, current = {}, None
    for line in text.splitlines():
        words = line.split()
        if not words or words[0] == "NODE" or line.startswith("no nodes"):
            continue
        if not line[0].isspace() and len(words) >= 2 and words[1].isdigit():
            cpu = next((re.fullmatch(r"(\d+)/(\d+)m?", w) for w in words if re.fullmatch(r"(\d+)/(\d+)m?", w)), None)
            measured = next((int(w[:-1]) for w in words[2:] if re.fullmatch(r"\d+m", w)), None)
            current = {"incarnation": int(words[1]), "live": "expired" not in words, "draining": "draining" in words,
                       "reserved": int(cpu.group(1)) if cpu else None, "capacity": int(cpu.group(2)) if cpu else None,
                       "measured": measured, "stages": []}
            nodes[words[0]] = current
        elif not line[0].isspace():
            current = nodes.get(words[0])
        if current is not None:
            current["stages"] += [arn for arn in STAGE_ARN_PATTERN.findall(line) if arn not in current["stages"]]
    return nodes


def segment_number(name):
    digits = re.match(r"\d+", name)
    return int(digits.group(0)) if digits else -1


def s3_destination(enc, sto):
    return {"s3": {"storageConfigurationArn": sto, "encoderConfigurationArns": [enc],
                   "recordingConfiguration": {"hlsConfiguration": {"targetSegmentDurationSeconds": SEGMENT_SECONDS}}}}


def setup(fleet, node, width=SIZE[0], height=SIZE[1], framerate=30, bitrate=600000):
    """An encoder and a storage configuration (rec-bucket), made through `node`."""
    client = node.api()
    enc = client.create_encoder_configuration(
        name="fleet", video={"width": width, "height": height, "framerate": framerate, "bitrate": bitrate})
    sto = client.create_storage_configuration(name="fleet", s3={"bucketName": "rec-bucket"})
    return enc["encoderConfiguration"]["arn"], sto["storageConfiguration"]["arn"]


def recording_prefix(composition):
    return composition["destinations"][0]["detail"]["s3"]["recordingPrefix"]


def composition_placed_by_publisher(fleet, owner, via, enc, sto, name):
    """A stage whose RTMP publisher (red, 440 Hz) places it on `owner`, and its composition,
    started through `via`, ACTIVE with two segments in the bucket: (stage ARN, composition ARN,
    recording prefix)."""
    stage = owner.api().create_stage(name=name)["stage"]
    red = create_ingest(owner, stage["arn"], "red", secure=False)
    fleet.adopt(Publisher(owner.rtmp_url(stage, red), "red", 440, fleet.workdir, "red"))
    fleet.wait_publishing(via, stage["arn"], red["participantId"])
    fleet.owner(stage["arn"], expect=owner.node_id)
    arn = fleet.call(via, "start_composition", stageArn=stage["arn"],
                     destinations=[s3_destination(enc, sto)])["composition"]["arn"]
    fleet.wait_state(via, arn, {"ACTIVE"})
    prefix = recording_prefix(fleet.composition(via, arn))
    fleet.wait_objects("two segments stored", prefix, lambda keys: len(fleet.segments(prefix)) >= 2, 30)
    return stage["arn"], arn, prefix


def check_finalized_recording(fleet, prefix, status_file, must_list=()):
    """The recording under `prefix` as the bucket has it: `status_file` and no other final
    metadata, a VOD media playlist (#EXT-X-ENDLIST) listing only segments the bucket holds,
    and every one of `must_list`; it decodes to its end without an error. Returns
    (metadata, listed segments, the sum of their #EXTINF, the local playlist path)."""
    keys = fleet.objects(prefix)
    finals = sorted(k for k in keys if k.endswith(("/recording-ended.json", "/recording-failed.json")))
    check(finals == [f"{prefix}/events/{status_file}"], f"final metadata under {prefix}: {finals}")
    check(f"{prefix}/events/recording-started.json" in keys, f"no recording-started.json under {prefix}")
    local = tempfile.mkdtemp(prefix="recording-", dir=fleet.workdir)
    fleet.moto.download(prefix, local)
    with open(os.path.join(local, "events", status_file)) as f:
        metadata = json.load(f)
    _, rendition, playlist, text = final_playlist(local)
    listed = re.findall(r"^(\S+\.ts)$", text, re.M)
    stored = {os.path.basename(k) for k in keys if k.startswith(f"{prefix}/media/hls/{rendition}/") and k.endswith(".ts")}
    check(listed, f"the playlist lists no segment:\n{text}")
    check(set(listed) <= stored, f"the playlist lists segments the bucket lacks: {sorted(set(listed) - stored)}")
    missing = sorted(set(must_list) - set(listed), key=segment_number)
    check(not missing, f"segments stored before the end are not listed: {missing}\n{text}")
    extinf = sum(float(x) for x in re.findall(r"^#EXTINF:([0-9.]+)", text, re.M))
    decode = subprocess.run(["ffmpeg", "-v", "error", "-i", playlist, "-f", "null", "-"], capture_output=True, text=True,
                            timeout=120)
    check(decode.returncode == 0 and not decode.stderr.strip(), f"decode errors: {decode.stderr[:2000]}")
    return metadata, listed, extinf, playlist


def fleet_test(test):
    """Runs a test on a Fleet and ends every process it started, whatever happens; an
    unexpected exception fails the test like a Failure (with the nodes' logs)."""
    @functools.wraps(test)
    def run(fleet):
        try:
            test(fleet)
        except Failure:
            raise
        except Exception as error:  # noqa: BLE001
            raise Failure(f"{type(error).__name__}: {error}\n{traceback.format_exc()}")
        finally:
            fleet.close()
    return run


def offer_process():
    """An aiortc SDP offer being made (a second or two), for raw WHIP POSTs."""
    return subprocess.Popen([sys.executable, os.path.join(CLIENTS, "whip_aiortc.py"), "--url", "http://127.0.0.1:9/whip/x",
                             "--token", "x", "--offer-only"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


class KilledOnClose:
    """Lets Fleet.close end a plain subprocess."""

    def __init__(self, process):
        self.process = process

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# --------------------------------------------------------------------------------------------

@fleet_test
def test_fleet_any_node_answers(fleet):
    """Three nodes. The stage is created through A, an ffmpeg publisher (red, 440 Hz) pushes RTMP
    to B, so the stage is placed on B; an aiortc publisher (green, 660 Hz) POSTs its offer to C,
    which answers 307 to B's WHIP URL with the token in ?access_token=, and the client follows
    it; a second ffmpeg publisher (blue, 880 Hz) pushes RTMP to C, which relays it to B (encoders
    do not follow redirects). StartComposition through A is forwarded to B; Get/ListCompositions, GetStage and
    ListParticipants agree on all three nodes; StopComposition through C and
    DisconnectParticipant through A are forwarded too, and so are TagResource on the composition
    and participant replication (the destination stage is placed on the source's node). The
    composite in the bucket shows the colours and sounds the tones."""
    offer = fleet.adopt(KilledOnClose(offer_process()))
    a, b, c = fleet.start(3, capacity=4000)
    enc, sto = setup(fleet, a)
    stage = a.api().create_stage(name="anywhere")["stage"]
    stage_arn = stage["arn"]
    check(stage.get("endpoints", {}).get("rtmp", "").startswith("rtmp://"), f"stage endpoints: {stage}")
    red = create_ingest(a, stage_arn, "red", secure=False)
    fleet.adopt(Publisher(b.rtmp_url(stage, red), "red", 440, fleet.workdir, "red"))
    fleet.wait_publishing(a, stage_arn, red["participantId"])
    fleet.owner(stage_arn, expect=b.node_id)

    # WHIP through C: a raw POST shows the redirect, then the real publisher follows it.
    green = token(a, stage_arn, "green")
    sdp, _ = offer.process.communicate(timeout=60)
    check("m=video" in sdp, f"an aiortc offer: {sdp[:300]}")
    status, headers, body = whip_post(c.whip_url(stage_arn), green["token"], sdp)
    location = {k.lower(): v for k, v in headers.items()}.get("location", "")
    check(status == 307, f"a WHIP POST to a node that does not hold the stage: 307 expected, got {status} {body[:300]}")
    target = urllib.parse.urlsplit(location)
    check(urllib.parse.urlunsplit(target._replace(query="")) == b.whip_url(stage_arn),
          f"the redirect goes to the owner's WHIP URL {b.whip_url(stage_arn)}: {location}")
    check(urllib.parse.parse_qs(target.query).get("access_token") == [green["token"]],
          f"the redirect carries the participant token in ?access_token=: {location}")
    whip = fleet.adopt(AiortcPublisher(c.whip_url(stage_arn), green["token"], "green", 660, fleet.workdir, "green",
                                       duration=120))
    try:
        fleet.wait_publishing(c, stage_arn, green["participantId"], timeout=30)
    except Failure as failure:
        raise Failure(f"{failure}\naiortc: {whip.output()}")
    figure(f"WHIP: POST to {c.node_id} answered 307 to {b.node_id}; the client followed it and publishes")

    # RTMP through C: C keeps the connection and relays the media to B.
    blue = create_ingest(a, stage_arn, "blue", secure=False)
    relayed_at = time.time()
    fleet.adopt(Publisher(c.rtmp_url(stage, blue), "blue", 880, fleet.workdir, "blue"))
    fleet.wait_publishing(a, stage_arn, blue["participantId"], timeout=30)
    check(fleet.owner(stage_arn).node_id == b.node_id, "the relayed publisher joins the stage on node-b")
    check("publisher relayed to the stage's node" in c.log(), f"{c.node_id} says it relays:\n{c.log()}")
    figure(f"RTMP: a publisher on {c.node_id} relayed to {b.node_id}, publishing there {time.time() - relayed_at:.2f} s "
           "after ffmpeg started")

    # StartComposition through A, forwarded to B.
    requested = time.time()
    composition = fleet.call(a, "start_composition", stageArn=stage_arn, destinations=[s3_destination(enc, sto)],
                             layout={"grid": {"gridGap": 0}})["composition"]
    arn = composition["arn"]
    check(composition["state"] in ("STARTING", "ACTIVE") and composition["stageArn"] == stage_arn,
          f"StartComposition through {a.node_id}: {composition}")
    fleet.wait_state(a, arn, {"ACTIVE"})
    t0 = time.time()
    figure(f"StartComposition through {a.node_id}: ACTIVE {t0 - requested:.2f} s after the request")
    check(fleet.owner(stage_arn).node_id == b.node_id, "the stage stays on node-b")

    # Every node tells the same story.
    def agreed(what, read, timeout=10):
        deadline = time.time() + timeout
        while True:
            views = {node.node_id: read(node) for node in (a, b, c)}
            if len({json.dumps(v, sort_keys=True, default=str) for v in views.values()}) == 1:
                return next(iter(views.values()))
            if time.time() > deadline:
                raise Failure(f"{what} differs between nodes:\n" + "\n".join(f"  {k}: {v}" for k, v in views.items()))
            time.sleep(0.3)

    def composition_view(node):
        got = fleet.composition(node, arn)
        return {"state": got["state"], "stageArn": got["stageArn"], "layout": got.get("layout"),
                "startTime": got.get("startTime"),
                "destinations": sorted((d["id"], d["state"], json.dumps(d["configuration"], sort_keys=True),
                                        json.dumps(d.get("detail"), sort_keys=True)) for d in got["destinations"])}

    view = agreed("GetComposition", composition_view)
    check(view["state"] == "ACTIVE", f"GetComposition: {view}")
    agreed("ListCompositions", lambda node: sorted(
        (x["arn"], x["state"]) for x in fleet.call(node, "list_compositions", filterByStageArn=stage_arn)["compositions"]))
    session = agreed("GetStage's active session", lambda node: fleet.call(node, "get_stage", arn=stage_arn)["stage"].get(
        "activeSessionId"))
    check(session, "an active session")
    listed = agreed("ListParticipants", lambda node: sorted(
        (p["participantId"], p.get("userId"), p["state"], p.get("published"))
        for p in fleet.participants(node, stage_arn, session)))
    check({(p[0], p[2]) for p in listed} == {(red["participantId"], "CONNECTED"), (green["participantId"], "CONNECTED"),
                                             (blue["participantId"], "CONNECTED")},
          f"participants: {listed}")
    for config, protocol in ((red, "RTMP"), (green, "WHIP"), (blue, "RTMPS")):
        detail = fleet.call(c, "get_participant", stageArn=stage_arn, sessionId=session,
                            participantId=config["participantId"])["participant"]
        check(detail.get("protocol") == protocol, f"GetParticipant through {c.node_id}: {detail}")
    # WHEP through C: 307 to the composition's node B (the token in ?access_token=); a viewer
    # following it plays the composite there.
    viewer = token(a, stage_arn, "viewer", capabilities=("SUBSCRIBE",))
    composition_id = arn.rsplit("/", 1)[1]
    status, headers, body = whip_post(f"{c.endpoint}/whep/composition/{composition_id}", viewer["token"], "v=0\r\n")
    location = {k.lower(): v for k, v in headers.items()}.get("location", "")
    target = urllib.parse.urlsplit(location)
    check(status == 307 and urllib.parse.urlunsplit(target._replace(query="")) == f"{b.endpoint}/whep/composition/{composition_id}"
          and urllib.parse.parse_qs(target.query).get("access_token") == [viewer["token"]],
          f"a WHEP POST to {c.node_id}: 307 to {b.node_id} expected, got {status} {location} {body[:300]}")
    played = subprocess.run([sys.executable, os.path.join(CLIENTS, "whep_aiortc.py"), "--url",
                             f"{c.endpoint}/whep/composition/{composition_id}", "--token", viewer["token"], "--duration", "4"],
                            capture_output=True, text=True, timeout=90)
    lines = [line for line in played.stdout.splitlines() if line.startswith("{")]
    check(lines, f"whep_aiortc.py: {played.stderr[-2000:]}")
    watched = json.loads(lines[-1])["viewers"][0]
    check(watched["status"] == 201 and watched["redirects"] == [f"{b.endpoint}/whep/composition/{composition_id}"]
          and watched.get("frames", 0) >= 60 and all(watched["colours"][x] >= 0.5 for x in ("red", "green", "blue"))
          and watched.get("delete_status") == 200, f"the WHEP viewer through {c.node_id}: {watched}")
    figure(f"WHEP: POST to {c.node_id} answered 307 to {b.node_id}; the viewer followed it and played {watched['frames']} "
           f"pictures with the three colours")

    _, table = fleet.nodes_table()
    figure(f"stage on {b.node_id}, reserved {table[b.node_id]['reserved']}/{table[b.node_id]['capacity']} m "
           f"(composition of 3 participants at {SIZE[0]}x{SIZE[1]}@30 and 3 publishers)")

    # Tags on the running composition through A and C, forwarded to B: every node reads them.
    fleet.call(a, "tag_resource", resourceArn=arn, tags={"team": "fleet", "run": "1"})
    fleet.call(c, "untag_resource", resourceArn=arn, tagKeys=["run"])
    tags = agreed("the composition's tags", lambda node: fleet.call(node, "list_tags_for_resource", resourceArn=arn)["tags"])
    check(tags == {"team": "fleet"}, f"tags after TagResource through {a.node_id} and UntagResource through {c.node_id}: {tags}")

    # Replication through A, forwarded to the source's node B, which places the destination there.
    mirror = a.api().create_stage(name="mirror")["stage"]["arn"]
    fleet.call(a, "start_participant_replication", sourceStageArn=stage_arn, destinationStageArn=mirror,
               participantId=red["participantId"])
    check(fleet.owner(mirror).node_id == b.node_id, "the replica's destination stage is placed on the source's node")

    def replicas(node):
        return sorted((r["destinationStageArn"], r.get("replicationState")) for r in fleet.call(
            node, "list_participant_replicas", sourceStageArn=stage_arn, participantId=red["participantId"])["replicas"])
    check(agreed("ListParticipantReplicas", replicas) == [(mirror, "ACTIVE")], "one active replica, seen from every node")
    fleet.call(c, "stop_participant_replication", sourceStageArn=stage_arn, destinationStageArn=mirror,
               participantId=red["participantId"])
    check(all(state != "ACTIVE" for _, state in agreed("ListParticipantReplicas after the stop", replicas)),
          "StopParticipantReplication through node-c ends it")
    figure(f"TagResource/UntagResource and Start/StopParticipantReplication through {a.node_id} and {c.node_id} "
           f"reached {b.node_id}")

    # StopComposition through C, forwarded to B.
    time.sleep(max(0.0, t0 + 8 - time.time()))
    stop_at = time.time() - t0
    fleet.call(c, "stop_composition", arn=arn)
    fleet.wait_state(c, arn, {"STOPPED", "FAILED"})
    check(fleet.wait_state(a, arn, {"STOPPED", "FAILED"}) == "STOPPED", "stopped through node-c: STOPPED")

    # DisconnectParticipant through A, forwarded to B: the WHIP publisher leaves.
    fleet.call(a, "disconnect_participant", stageArn=stage_arn, participantId=green["participantId"], reason="fleet test")
    deadline = time.time() + 10
    while True:
        states = {p["participantId"]: p["state"] for p in fleet.participants(c, stage_arn, session)}
        if states.get(green["participantId"]) == "DISCONNECTED":
            break
        check(time.time() < deadline, f"DisconnectParticipant through {a.node_id} did not disconnect: {states}")
        time.sleep(0.3)

    prefix = recording_prefix(fleet.composition(a, arn))
    fleet.wait_objects("recording-ended.json in the bucket", prefix,
                       lambda keys: f"{prefix}/events/recording-ended.json" in keys, 30)
    metadata, segments, extinf, playlist = check_finalized_recording(fleet, prefix, "recording-ended.json")
    check(metadata.get("recording_status") == "RECORDING_ENDED", f"metadata: {metadata}")
    deadline = time.time() + 10
    while True:  # the event sinks write asynchronously
        names = [e["detail"]["event_name"] for e in fleet.events(arn) if e["detail"]["event_name"].startswith("Session")]
        if "Session End" in names or time.time() > deadline:
            break
        time.sleep(0.2)
    check(sorted(names) == ["Session End", "Session Start"], f"session events across the nodes: {names}")
    figure(f"any node: recording of {extinf:.1f} s in {len(segments)} segments (stopped {stop_at:.1f} s after ACTIVE); "
           f"slowest API call {fleet.slowest_call[0]:.2f} s ({fleet.slowest_call[1]}) of {fleet.calls}")
    video, audio = media_check.Video(playlist, *SIZE), media_check.Audio(playlist)
    check_phases("fleet recording", video, audio,
                 [(1.5, video.duration - 0.5, [("red", 440), ("green", 660), ("blue", 880)])],
                 fleet.binary)


@fleet_test
def test_fleet_capacity_and_refusal(fleet):
    """Three nodes of 1200 millicores. A composition of a 1280x720@30 encoder on a live stage
    nobody publishes on costs 900: three of them (started through A, B and C) land one per
    node (two do not fit on one); a fourth is refused with ServiceQuotaExceededException naming
    "no node has capacity" and the 900 needed, and creates nothing. Stopping one frees its node
    for the fourth once its reservation is released and what it measures itself using (which
    placement also counts) is under 300."""
    a, b, c = fleet.start(3, capacity=1200, idle=60.0)
    enc, sto = setup(fleet, a, width=1280, height=720, framerate=30, bitrate=2500000)
    stages = [a.api().create_stage(name=f"capacity-{i}")["stage"]["arn"] for i in range(4)]
    compositions = {}
    for stage_arn, node in zip(stages[:3], (a, b, c)):
        composition = fleet.call(node, "start_composition", stageArn=stage_arn, destinations=[s3_destination(enc, sto)])
        compositions[stage_arn] = composition["composition"]["arn"]
        check(composition["composition"]["state"] in ("STARTING", "ACTIVE"), f"composition: {composition}")
    text, table = fleet.nodes_table()
    spread = {node_id: [s for s in node["stages"] if s in stages] for node_id, node in table.items()}
    figure("placement spread: " + ", ".join(
        f"{node_id} {len(held)} stage(s) {table[node_id]['reserved']}/{table[node_id]['capacity']} m"
        for node_id, held in sorted(spread.items())))
    check(sorted(len(held) for held in spread.values()) == [1, 1, 1], f"one stage per node:\n{text}")
    check(all(node["reserved"] == 900 and node["capacity"] == 1200 for node in table.values()),
          f"each node reserves 900 of 1200 millicores (800 for 1280x720@30 + 100 for one participant):\n{text}")
    figure("measured load with a composition waiting for its first publisher: "
           + ", ".join(f"{node_id} {node['measured']} m" for node_id, node in sorted(table.items())))

    import botocore.exceptions
    for node in (a, c):
        try:
            fleet.call(node, "start_composition", stageArn=stages[3], destinations=[s3_destination(enc, sto)])
            raise Failure(f"a fourth composition through {node.node_id} must be refused: no node has 900 millicores free\n{text}")
        except botocore.exceptions.ClientError as error:
            code, message = error.response["Error"]["Code"], error.response["Error"].get("Message", "")
            check(code == "ServiceQuotaExceededException" and "no node has capacity" in message and "900" in message,
                  f"the refusal through {node.node_id}: {code}: {message}")
            figure(f"refused through {node.node_id}: {code}: {message}")
    listed = fleet.call(b, "list_compositions", filterByStageArn=stages[3])["compositions"]
    check(listed == [], f"a refused StartComposition creates nothing: {listed}")
    _, table = fleet.nodes_table()
    check(all(stages[3] not in node["stages"] for node in table.values()), "the refused stage is placed nowhere")

    # Stopping one frees its node: the fourth goes there.
    freed = fleet.owner(stages[1])
    fleet.call(a, "stop_composition", arn=compositions[stages[1]])
    fleet.wait_state(a, compositions[stages[1]], {"STOPPED", "FAILED"})
    deadline = time.time() + 15
    while True:
        text, table = fleet.nodes_table()
        if table[freed.node_id]["reserved"] == 0 and (table[freed.node_id]["measured"] or 0) <= 300:
            break
        check(time.time() < deadline, f"{freed.node_id}'s 900 millicores are not released after StopComposition, "
                                      f"or it measures itself using over 300:\n{text}")
        time.sleep(0.3)
    fourth = fleet.call(c, "start_composition", stageArn=stages[3], destinations=[s3_destination(enc, sto)])["composition"]
    check(fourth["state"] in ("STARTING", "ACTIVE"), f"the fourth after a stop: {fourth}")
    check(fleet.owner(stages[3]).node_id == freed.node_id, f"the fourth goes to the freed {freed.node_id}")
    figure(f"after a stop on {freed.node_id} its capacity was released and the fourth stage placed there")


@fleet_test
def test_fleet_failover_kill9(fleet):
    """Three nodes; a publisher on B places the stage there and a composition (started through A)
    records to the bucket. kill -9 B: within 15 s a survivor takes over, the composition is FAILED
    on both survivors (which answer every call meanwhile within a few seconds), its recording is
    finalized once (recording-failed.json, a VOD playlist of stored segments that plays to its
    end), one Session Failure is sent, the participants are LEFT; the publisher republishes to C,
    the stage is placed there, and a new composition through A works."""
    a, b, c = fleet.start(3, capacity=4000)
    enc, sto = setup(fleet, a)
    stage = a.api().create_stage(name="failover")["stage"]
    stage_arn = stage["arn"]
    red = create_ingest(a, stage_arn, "red", secure=False)
    publisher = fleet.adopt(Publisher(b.rtmp_url(stage, red), "red", 440, fleet.workdir, "red-on-b"))
    session = fleet.wait_publishing(a, stage_arn, red["participantId"])
    fleet.owner(stage_arn, expect=b.node_id)
    arn = fleet.call(a, "start_composition", stageArn=stage_arn, destinations=[s3_destination(enc, sto)])["composition"]["arn"]
    fleet.wait_state(a, arn, {"ACTIVE"})
    prefix = recording_prefix(fleet.composition(a, arn))
    fleet.wait_objects("three segments stored", prefix, lambda keys: len([k for k in keys if k.endswith(".ts")]) >= 3, 30)

    b.process.kill()
    killed = time.time()
    b.process.wait()
    stored_at_kill = fleet.segments(prefix)
    publisher.kill()

    # The survivors answer throughout; the composition becomes FAILED on both.
    fleet.slowest_call, fleet.calls = (0.0, ""), 0
    extra_reads = [lambda n: fleet.call(n, "get_stage", limit=CALL_LIMIT, arn=stage_arn),
                   lambda n: fleet.participants(n, stage_arn, session, limit=CALL_LIMIT),
                   lambda n: fleet.call(n, "list_compositions", limit=CALL_LIMIT, filterByStageArn=stage_arn)]
    failed_on, round_ = {}, 0
    while len(failed_on) < 2:
        for node in (a, c):
            if fleet.composition(node, arn, limit=CALL_LIMIT)["state"] == "FAILED":
                failed_on.setdefault(node.node_id, time.time() - killed)
            extra_reads[round_ % len(extra_reads)](node)
        round_ += 1
        check(time.time() - killed < FAILED_WITHIN,
              f"the composition is not FAILED on both survivors {FAILED_WITHIN} s after kill -9 of its node: {failed_on}")
        time.sleep(0.2)
    failed_after = max(failed_on.values())
    fleet.wait_objects("recording-failed.json", prefix, lambda keys: f"{prefix}/events/recording-failed.json" in keys,
                       max(1.0, killed + FINALIZED_WITHIN - time.time()))
    finalized_after = time.time() - killed
    takers = [n.node_id for n in (a, c) if "took over" in n.full_log()]
    check(takers, "a survivor logs that it took over")
    text, table = fleet.nodes_table(via=a)
    check(not table.get(b.node_id, {}).get("live") and stage_arn not in table.get(b.node_id, {}).get("stages", []),
          f"the killed node is gone or expired and holds no stage:\n{text}")
    figure(f"failover: kill -9 of {b.node_id} -> FAILED on both survivors {failed_after:.2f} s -> recording finalized "
           f"{finalized_after:.2f} s; taken over by {', '.join(takers)}; slowest survivor call "
           f"{fleet.slowest_call[0]:.2f} s ({fleet.slowest_call[1]}) of {fleet.calls}")

    metadata, listed, extinf, _ = check_finalized_recording(fleet, prefix, "recording-failed.json", must_list=stored_at_kill)
    check(metadata.get("recording_status") == "RECORDING_ENDED_WITH_FAILURE", f"metadata: {metadata}")
    figure(f"failover recording: {len(listed)} segments, {extinf:.1f} s ({len(stored_at_kill)} stored at the kill)")

    deadline = time.time() + 10
    while True:
        failures = [e["detail"] for e in fleet.events(arn) if e["detail"]["event_name"] == "Session Failure"]
        if failures or time.time() > deadline:
            break
        time.sleep(0.2)
    time.sleep(1)  # a second one (two survivors both handling the loss) would be there by now
    failures = [e["detail"] for e in fleet.events(arn) if e["detail"]["event_name"] == "Session Failure"]
    names = [e["detail"]["event_name"] for e in fleet.events(arn)]
    check(len(failures) == 1 and "Session End" not in names, f"one Session Failure across the nodes: {names}")
    check(failures[0].get("reason"), f"the Session Failure says why: {failures[0]}")
    figure(f"Session Failure reason: {failures[0]['reason']}")

    deadline = time.time() + 10
    while True:
        states = {p["participantId"]: p["state"] for p in fleet.participants(c, stage_arn, session)}
        events = fleet.call(a, "list_participant_events", stageArn=stage_arn, sessionId=session,
                            participantId=red["participantId"])["events"]
        if states.get(red["participantId"]) == "DISCONNECTED" and events and events[-1]["name"] == "LEFT":
            break
        check(time.time() < deadline, f"the lost node's participant is LEFT: {states}, events {[e['name'] for e in events]}")
        time.sleep(0.3)

    # The publisher comes back on C: the stage is placed there, and a new composition works.
    fleet.adopt(Publisher(c.rtmp_url(stage, red), "blue", 660, fleet.workdir, "red-on-c"))
    fleet.wait_publishing(a, stage_arn, red["participantId"], timeout=20)
    fleet.owner(stage_arn, expect=c.node_id)
    again = fleet.call(a, "start_composition", stageArn=stage_arn, destinations=[s3_destination(enc, sto)])["composition"]
    check(fleet.wait_state(a, again["arn"], {"ACTIVE", "FAILED"}) == "ACTIVE", "a new composition after the failover")
    check(fleet.composition(c, again["arn"])["state"] == "ACTIVE", "ACTIVE on node-c too")
    fleet.call(a, "stop_composition", arn=again["arn"])
    check(fleet.wait_state(c, again["arn"], {"STOPPED", "FAILED"}) == "STOPPED", "the new composition stops")
    check(fleet.composition(a, arn)["state"] == "FAILED", "the lost composition stays FAILED")
    figure(f"after the failover: republished to {c.node_id}, placed there, a new composition ran "
           f"({time.time() - killed:.1f} s after the kill)")


@fleet_test
def test_fleet_fencing_sigstop(fleet):
    """Two nodes; the publisher places the stage on A, the composition is started through B.
    SIGSTOP A past its lease: B marks the composition FAILED and finalizes its recording. SIGCONT
    A: it logs "fenced itself" and exits non-zero within a few seconds, having written nothing
    more to the bucket, and the composition stays FAILED."""
    a, b = fleet.start(2, capacity=4000)
    enc, sto = setup(fleet, a)
    stage_arn, arn, prefix = composition_placed_by_publisher(fleet, a, b, enc, sto, "fencing")

    a.process.send_signal(signal.SIGSTOP)
    stopped = time.time()
    try:
        time.sleep(TTL + 0.5)  # past the lease, whatever B has done by then
        deadline = stopped + FAILED_WITHIN
        while fleet.composition(b, arn, limit=CALL_LIMIT)["state"] != "FAILED":
            check(time.time() < deadline, f"{b.node_id} did not mark the composition FAILED {FAILED_WITHIN} s after "
                                          f"SIGSTOP of {a.node_id}")
            time.sleep(0.2)
        failed_after = time.time() - stopped
        fleet.wait_objects("recording-failed.json written by the survivor", prefix,
                           lambda keys: f"{prefix}/events/recording-failed.json" in keys, FINALIZED_WITHIN)
        before = fleet.stable_objects(prefix)
    finally:
        a.process.send_signal(signal.SIGCONT)
    resumed = time.time()
    try:
        a.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        raise Failure(f"{a.node_id} did not fence itself and exit within 10 s of SIGCONT")
    exited_after = time.time() - resumed
    check(a.process.returncode != 0, f"a fenced node exits with a failure status, not {a.process.returncode}")
    check("fenced itself" in a.full_log(), f"{a.node_id} logs that it fenced itself")
    time.sleep(3)
    after = fleet.objects(prefix)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    check(not changed, f"the bucket changed under {prefix} after SIGCONT of the fenced node: " +
          ", ".join(f"{k}: {before.get(k)} -> {after.get(k)}" for k in changed[:10]))
    check(fleet.composition(b, arn)["state"] == "FAILED", "the composition stays FAILED")
    names = [e["detail"]["event_name"] for e in fleet.events(arn)]
    check(names.count("Session Failure") == 1 and "Session End" not in names,
          f"one Session Failure and no Session End across the nodes: {names}")
    check_finalized_recording(fleet, prefix, "recording-failed.json")
    figure(f"fencing: SIGSTOP of {a.node_id} -> FAILED on {b.node_id} after {failed_after:.2f} s; SIGCONT -> "
           f"exited {exited_after:.2f} s later with status {a.process.returncode}; {len(after)} objects unchanged")


@fleet_test
def test_fleet_drain_sigterm(fleet):
    """SIGTERM drains a node. A publisher places a stage on A (drainTimeoutSeconds 60) and a
    composition started through B records it. SIGTERM A: `nodes` shows it draining at once, a
    new stage's composition started through A is placed on B, and A's composition goes on
    recording (A keeps answering, its segments keep coming). StopComposition through B ends it
    as usual (recording-ended.json), and A then exits 0 at once, without waiting out its drain.
    Then SIGTERM B (drainTimeoutSeconds 2) with its composition running: after the 2 s it stops
    that composition as a plain shutdown does (STOPPED, recording-ended.json) and exits 0."""
    fleet.start_moto()
    a = fleet.node("a", drain=60.0)
    b = fleet.node("b", drain=2.0)
    for node in (a, b):
        node.start()
    enc, sto = setup(fleet, a)
    stage_arn, arn, prefix = composition_placed_by_publisher(fleet, a, b, enc, sto, "drain")

    a.process.send_signal(signal.SIGTERM)
    terminated = time.time()
    deadline = terminated + 10
    while True:
        text, table = fleet.nodes_table(via=b)
        if table.get(a.node_id, {}).get("draining"):
            break
        check(time.time() < deadline, f"{a.node_id} is not shown draining 10 s after SIGTERM:\n{text}")
        time.sleep(0.2)
    marked_after = time.time() - terminated
    check(stage_arn in table[a.node_id]["stages"], f"the draining node keeps its stage:\n{text}")

    # A new stage goes elsewhere, even when its StartComposition reaches the draining node.
    other = a.api().create_stage(name="drain-new")["stage"]["arn"]
    second = fleet.call(a, "start_composition", stageArn=other, destinations=[s3_destination(enc, sto)])["composition"]["arn"]
    check(fleet.owner(other).node_id == b.node_id, "a new stage is placed on the node that is not draining")

    # The running composition goes on: ACTIVE, and new segments after the SIGTERM.
    at_term = len(fleet.segments(prefix))
    fleet.wait_objects("two more segments after SIGTERM", prefix, lambda keys: len(fleet.segments(prefix)) >= at_term + 2,
                       4 * SEGMENT_SECONDS + 10)
    check(a.running(), f"{a.node_id} exited while its composition was running (drain timeout 60 s)")
    check(fleet.composition(a, arn)["state"] == "ACTIVE", "the draining node's composition is still ACTIVE")

    stop_requested = time.time()
    fleet.call(b, "stop_composition", arn=arn)
    check(fleet.wait_state(b, arn, {"STOPPED", "FAILED"}) == "STOPPED", "the composition stops as usual")
    try:
        a.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        raise Failure(f"{a.node_id} did not exit within 20 s of its last composition's StopComposition")
    exited_after = time.time() - stop_requested
    check(a.process.returncode == 0, f"a drained node exits 0, not {a.process.returncode}")
    check("drained: no composition runs here" in a.full_log(), f"{a.node_id} logs that it drained")
    metadata, listed, extinf, _ = check_finalized_recording(fleet, prefix, "recording-ended.json")
    check(metadata.get("recording_status") == "RECORDING_ENDED", f"metadata: {metadata}")
    names = [e["detail"]["event_name"] for e in fleet.events(arn)]
    check(names.count("Session End") == 1 and "Session Failure" not in names, f"one Session End: {names}")
    figure(f"drain: SIGTERM -> {a.node_id} shown draining after {marked_after:.2f} s; its composition ran on "
           f"{stop_requested - terminated:.1f} s ({len(listed)} segments, {extinf:.1f} s recorded); after StopComposition "
           f"it exited 0 in {exited_after:.2f} s")

    # B's drain times out: what still runs is stopped and finalized as at any shutdown.
    fleet.wait_state(b, second, {"STARTING", "ACTIVE"})
    b.process.send_signal(signal.SIGTERM)
    terminated = time.time()
    try:
        b.process.wait(timeout=40)
    except subprocess.TimeoutExpired:
        raise Failure(f"{b.node_id} did not exit within 40 s of SIGTERM with a 2 s drain timeout")
    took = time.time() - terminated
    check(b.process.returncode == 0, f"{b.node_id} exits 0 after its drain timeout, not {b.process.returncode}")
    log = b.full_log()
    check("drain timeout: stopping the compositions still running" in log, f"{b.node_id} logs its drain timeout")
    check(took >= 2.0, f"{b.node_id} exited {took:.2f} s after SIGTERM, before its 2 s drain timeout")
    figure(f"drain timeout: {b.node_id} exited 0 {took:.2f} s after SIGTERM (2 s drain, then its composition stopped)")


@fleet_test
def test_fleet_database_restart(fleet):
    """Two nodes; a publisher that flashes white and beeps once a second places the stage on A,
    and a composition started through B records it. The database server restarts (pg_ctl
    restart) mid-composition: no node is reaped or fenced (same incarnations, both live), the
    composition stays ACTIVE, segments keep coming, and the recording has no gap: its length
    matches the wall time and its flashes stay one second apart."""
    restart = os.environ.get("STAGE_COMPOSITOR_TEST_PG_RESTART")
    check(restart, "needs STAGE_COMPOSITOR_TEST_PG_RESTART, the command that restarts the test's PostgreSQL server "
                   "(a JSON array; FleetDaemonTests passes it)")
    restart = json.loads(restart)
    a, b = fleet.start(2, capacity=4000)
    enc, sto = setup(fleet, a)
    stage = a.api().create_stage(name="restart")["stage"]
    stage_arn = stage["arn"]
    flash = create_ingest(a, stage_arn, "flash", secure=False)
    video = "color=c=black:size=320x240:rate=30,drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='lt(mod(t\\,1)\\,0.1)'"
    audio = "aevalsrc='if(lt(mod(t\\,1)\\,0.1)\\,0.5*sin(2*PI*1000*t)\\,0)':s=48000"
    fleet.adopt(Publisher(a.rtmp_url(stage, flash), None, None, fleet.workdir, "flash", video_filter=video,
                          audio_source=audio))
    fleet.wait_publishing(b, stage_arn, flash["participantId"])
    fleet.owner(stage_arn, expect=a.node_id)
    arn = fleet.call(b, "start_composition", stageArn=stage_arn, destinations=[s3_destination(enc, sto)])["composition"]["arn"]
    started = time.time()
    fleet.wait_state(b, arn, {"ACTIVE"})
    prefix = recording_prefix(fleet.composition(b, arn))

    # When each segment first shows in the bucket (a thread polling it).
    first_seen, done = {}, threading.Event()

    def watch():
        while not done.is_set():
            try:
                for name in fleet.segments(prefix):
                    first_seen.setdefault(name, time.time())
            except Exception:  # noqa: BLE001 - moto busy: the next poll sees it
                pass
            done.wait(0.25)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        fleet.wait_objects("two segments stored", prefix, lambda keys: len([k for k in keys if k.endswith(".ts")]) >= 2, 30)
        text, before = fleet.nodes_table()
        check(all(node["live"] for node in before.values()) and len(before) == 2, f"two live nodes:\n{text}")

        # The output goes to a file, not a pipe: the server pg_ctl starts keeps its output open.
        output_path = os.path.join(fleet.workdir, "pg_ctl-restart.out")
        restart_at = time.time()
        with open(output_path, "w") as output:
            status = subprocess.run(restart, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                    timeout=90).returncode
        restarted = time.time()
        with open(output_path) as output:
            check(status == 0, f"{' '.join(restart)}: {status} {output.read()[-2000:]}")

        # For 3 lease lengths after it: the composition is ACTIVE whenever a node answers (a call
        # may fail or time out while a node reconnects: counted and shown), and both answer again.
        import botocore.exceptions
        errors, answered_again = [], {}
        while time.time() < restarted + 3 * TTL or len(answered_again) < 2:
            for node in (a, b):
                try:
                    state = fleet.composition(node, arn, limit=CALL_LIMIT)["state"]
                    check(state == "ACTIVE", f"{node.node_id} says {state} {time.time() - restarted:.1f} s after "
                                             f"the database restarted")
                    answered_again.setdefault(node.node_id, time.time() - restarted)
                except botocore.exceptions.ClientError as error:
                    errors.append(f"{node.node_id} {time.time() - restarted:.1f}s: {error.response['Error'].get('Code')}")
                except HungCall:
                    errors.append(f"{node.node_id} {time.time() - restarted:.1f}s: no answer within {CALL_LIMIT} s")
            check(time.time() < restarted + 30, f"nodes did not answer again after the restart: {answered_again}, {errors}")
            check(a.running() and b.running(), "a node exited after the database restarted")
            time.sleep(0.3)
        text, after = fleet.nodes_table()
        check({k: (v["incarnation"], v["live"]) for k, v in after.items()}
              == {k: (v["incarnation"], True) for k, v in before.items()},
              f"the same nodes, incarnations and leases after the restart:\nbefore: {before}\nafter:\n{text}")
        for node in (a, b):
            log = node.full_log()
            for phrase in ("fenced itself", "took over"):
                check(phrase not in log, f"{node.node_id} logs '{phrase}' after a database restart")
        check(fleet.owner(stage_arn).node_id == a.node_id, "the stage stays on node-a")
        time.sleep(max(0.0, restarted + 2 * SEGMENT_SECONDS + 1 - time.time()))
        stop_requested = time.time()
        fleet.call(b, "stop_composition", arn=arn)
        check(fleet.wait_state(b, arn, {"STOPPED", "FAILED"}) == "STOPPED", "the composition stops cleanly")
    finally:
        done.set()
        watcher.join()
    fleet.wait_objects("recording-ended.json", prefix, lambda keys: f"{prefix}/events/recording-ended.json" in keys, 30)
    metadata, listed, extinf, playlist = check_finalized_recording(fleet, prefix, "recording-ended.json",
                                                                   must_list=fleet.segments(prefix))
    check(metadata.get("recording_status") == "RECORDING_ENDED", f"metadata: {metadata}")
    numbers = [segment_number(name) for name in listed]
    check(numbers == list(range(numbers[0], numbers[0] + len(numbers))), f"no segment missing: {listed}")

    # Segments kept coming: the longest wait for the next one, and one soon after the restart.
    times = sorted(first_seen.values())
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    longest = max(gaps) if gaps else 0.0
    after_restart = min((t for t in times if t > restarted), default=None)
    check(after_restart is not None and after_restart - restarted <= 2 * SEGMENT_SECONDS + 2,
          f"a segment stored within {2 * SEGMENT_SECONDS + 2} s of the restart (first after it: "
          f"{None if after_restart is None else round(after_restart - restarted, 2)} s)")
    check(longest <= 2 * SEGMENT_SECONDS + 2, f"segments kept coming: the longest wait for one was {longest:.2f} s")

    # No gap in the media: as long as the wall time, and a flash every second throughout.
    wall = stop_requested - started
    flashes = media_check.FrameLuma(playlist, *SIZE, SIZE[0] // 2, SIZE[1] // 2).rises(128, 0.5)
    sound = media_check.Audio(playlist)
    envelope, step = sound.envelope(0.001)
    beeps = media_check.onsets(list(envelope), step, 0.1, 0.5)
    intervals = [later - earlier for series in (flashes, beeps) for earlier, later in zip(series, series[1:])]
    worst = max((abs(i - 1.0) for i in intervals), default=None)
    figure(f"database restart: pg_ctl restart took {restarted - restart_at:.2f} s; nodes answered again after "
           f"{max(answered_again.values()):.2f} s ({len(errors)} failed calls: {errors[:4]}); segments every "
           f"<= {longest:.2f} s; recording {extinf:.2f} s (#EXTINF sum) for {wall:.2f} s between StartComposition and "
           f"StopComposition (difference {extinf - wall:+.2f} s); {len(flashes)} flashes and {len(beeps)} beeps, "
           f"intervals off 1 s by at most {worst if worst is None else round(worst, 3)} s")
    check(wall - 2.0 <= extinf <= wall + 1.0, f"recording {extinf:.2f} s for {wall:.2f} s of wall time")
    check(min(len(flashes), len(beeps)) >= int(extinf) - 2 and worst is not None and worst <= 0.25,
          f"a flash and a beep every second: {len(flashes)} flashes and {len(beeps)} beeps in {extinf:.1f} s, "
          f"intervals {[round(i, 2) for i in intervals]}")


if __name__ == "__main__":
    sys.exit(run_from_command_line({name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")},
                                   Fleet, __doc__))
