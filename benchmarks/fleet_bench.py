#!/usr/bin/env python3
"""Fleet benchmark: what a fleet of three `stage-compositor serve` nodes on one PostgreSQL
database costs at idle, and how fast it answers the API under a steady request rate.

Starts its own PostgreSQL server (initdb in a temporary directory under /tmp, a free port,
production-like settings: fsync on, pg_stat_statements loaded; as `postgres` via runuser when
run as root), moto_server, and three fleet nodes through scripts/daemon-tests/fleet_tests.py's
Fleet (same SigV4 keys, shared secret, the moto bucket), with the default lease
(leaseTtlSeconds 10, heartbeatSeconds 1) unless --lease-ttl / --heartbeat say otherwise.
Everything it started is stopped and its directories removed at the end, on failure and on
Ctrl-C / SIGTERM too (--keep keeps the work directory with the logs).

  idle   --idle-seconds with nothing running: per node CPU (% of one core, utime+stime from
         /proc/<pid>/stat) and RSS (VmRSS); the database's transactions/s (pg_stat_database
         xact_commit+xact_rollback), statements/s (pg_stat_statements) and the busiest
         statements, both also per node (divided by the node count); the PostgreSQL server's
         own CPU (the postmaster with its children, exited ones included); moto's CPU and the
         S3 requests the nodes made.
  load   a few stages, an encoder and a storage configuration, an ended stage session (a
         short ffmpeg RTMP publisher; --session-seconds 0: none) and, with --with-composition,
         one composition (on a live stage nobody publishes on: it waits in STARTING, placed on
         a node, without encoding) are made through node a; then --rate requests/s for
         --seconds, round-robin over the nodes, open loop (each request is sent at its
         scheduled time from a thread pool, whatever earlier ones are doing, and its latency
         counts from that scheduled time, so a stall shows in full instead of slowing the
         load down). The mix: GetStage, ListStages, GetComposition, ListCompositions,
         ListParticipants, ListStageSessions, GetStageSession, and ~10 % writes (TagResource /
         UntagResource on a stage, CreateStage followed by DeleteStage of that stage).
         Reports the achieved rate, errors by code, p50/p90/p99/max latency overall, per node
         and per operation, the client's own send lag (if it is large, the client, not the
         fleet, was the bottleneck), the slowest calls and the CPU of nodes and database
         meanwhile.

Then every node's log and the PostgreSQL server log are scanned for warnings and errors.

Measure the release build (the default: .build/release/stage-compositor; without it the debug
build is used, with a warning; debug numbers are not representative).

Usage: benchmarks/fleet_bench.py [--binary PATH] [--idle-seconds 30] [--rate 100] [--seconds 30]
                                 [--with-composition] [--json FILE] [--only idle|load] ...
"""
import argparse
import collections
import concurrent.futures
import gc
import json
import os
import pwd
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "scripts", "daemon-tests"))
import fleet_tests  # noqa: E402
from daemon_tests import ENV, REGION, free_port  # noqa: E402
from live_tests import Publisher  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
NODES = 3


def log(text):
    print(text, flush=True)


# ---- /proc ----------------------------------------------------------------------------------

def proc_stat(pid):
    """(ppid, utime+stime, cutime+cstime) in seconds, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS, (int(fields[13]) + int(fields[14])) / TICKS


def cpu_seconds(pid):
    stat = proc_stat(pid)
    return stat[1] if stat else None


def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def tree_cpu_seconds(root):
    """CPU of a server and its direct children: the postmaster's own and reaped children's
    (cutime+cstime: backends that exited meanwhile), plus every live child's. A sum over the
    tree's processes, in seconds."""
    stat = proc_stat(root)
    if stat is None:
        return None
    total = stat[1] + stat[2]
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != root:
            child = proc_stat(int(name))
            if child and child[0] == root:
                total += child[1]
    return total


# ---- PostgreSQL -----------------------------------------------------------------------------

class PostgresServer:
    """Debian's PostgreSQL in a directory of its own under /tmp (the socket path stays short and
    the `postgres` user can reach it), on a free 127.0.0.1 port, trust authentication."""

    def __init__(self, unsafe_fast=False, statements=True):
        roots = "/usr/lib/postgresql"
        versions = sorted((int(v) for v in os.listdir(roots) if v.isdigit()), reverse=True) if os.path.isdir(roots) else []
        self.bin = next((f"{roots}/{v}/bin" for v in versions if os.access(f"{roots}/{v}/bin/initdb", os.X_OK)), None)
        if self.bin is None:
            raise SystemExit(f"PostgreSQL server binaries not found under {roots} (Debian's postgresql package)")
        self.version = os.path.basename(os.path.dirname(self.bin))
        self.directory = tempfile.mkdtemp(prefix="fleet-bench-pg-", dir="/tmp")
        self.data = os.path.join(self.directory, "data")
        self.log_path = os.path.join(self.directory, "server.log")
        self.port = None
        self.started = False
        self.unsafe_fast = unsafe_fast
        self.statements = statements and os.path.exists(
            os.path.join(os.path.dirname(self.bin), "lib", "pg_stat_statements.so"))
        self.as_postgres = os.getuid() == 0
        if self.as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self.directory, user.pw_uid, user.pw_gid)

    def tool(self, name, *args, check=True, timeout=120):
        command = [os.path.join(self.bin, name), *args]
        if self.as_postgres:
            command = ["/usr/sbin/runuser", "-u", "postgres", "--"] + command
        # Output to a file, not a pipe: the server pg_ctl starts keeps its output open.
        output_path = os.path.join(self.directory, f"{name}.out")
        with open(output_path, "w") as output:
            status = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                    cwd=self.directory, timeout=timeout).returncode
        with open(output_path) as output:
            text = output.read()
        if check and status != 0:
            tail = ""
            if os.path.exists(self.log_path):
                with open(self.log_path) as f:
                    tail = f.read()[-2000:]
            raise RuntimeError(f"{name} failed ({status}): {text}\n{tail}")
        return status, text

    def start(self):
        self.tool("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
        self.port = free_port()
        options = [f"-p {self.port}", f"-k {self.directory}", "-c listen_addresses=127.0.0.1", "-c max_connections=200"]
        if self.statements:
            options += ["-c shared_preload_libraries=pg_stat_statements", "-c pg_stat_statements.track=all"]
        if self.unsafe_fast:  # as the test server: no durability, less I/O
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self.tool("pg_ctl", "start", "-w", "-t", "60", "-D", self.data, "-l", self.log_path, "-o", " ".join(options))
        self.started = True
        self.tool("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "bench")
        if self.statements:
            # In `postgres`, where the benchmark's own queries run (they are then left out by dbid).
            self.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return self

    @property
    def url(self):
        return f"postgres://postgres@127.0.0.1:{self.port}/bench?sslmode=disable"

    @property
    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def query(self, sql):
        """Rows of `sql` run in the `postgres` database (not `bench`: not counted there)."""
        result = subprocess.run([os.path.join(self.bin, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                                 "-d", "postgres", "-X", "-q", "-tA", "-F", "\t", "-c", sql],
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"psql: {result.stderr}")
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def counters(self):
        row = self.query("SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated, "
                         "tup_deleted, (SELECT count(*) FROM pg_stat_activity WHERE datname = 'bench') "
                         "FROM pg_stat_database WHERE datname = 'bench'")[0]
        names = ["xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated",
                 "tup_deleted", "connections"]
        return dict(zip(names, (int(x) for x in row)))

    def reset_statements(self):
        if self.statements:
            self.query("SELECT pg_stat_statements_reset()")

    def statement_stats(self, top=8):
        """(calls, total execution ms, [(calls, ms, rows, query)...]) in `bench` since the last reset."""
        if not self.statements:
            return None
        bench = "(SELECT oid FROM pg_database WHERE datname = 'bench')"
        total = self.query(f"SELECT coalesce(sum(calls), 0), coalesce(sum(total_exec_time), 0) FROM pg_stat_statements "
                           f"WHERE dbid = {bench}")[0]
        rows = self.query(f"SELECT calls, round(total_exec_time::numeric, 2), rows, "
                          f"left(regexp_replace(query, '\\s+', ' ', 'g'), 110) FROM pg_stat_statements "
                          f"WHERE dbid = {bench} ORDER BY calls DESC LIMIT {top}")
        return int(float(total[0])), float(total[1]), [(int(r[0]), float(r[1]), int(r[2]), r[3]) for r in rows]

    def log_problems(self):
        try:
            with open(self.log_path) as f:
                lines = f.read().splitlines()
        except OSError:
            return []
        return [line for line in lines if re.search(r"\b(ERROR|FATAL|PANIC|WARNING):", line)]

    def stop(self):
        if self.started:
            try:
                self.tool("pg_ctl", "stop", "-m", "fast", "-w", "-t", "30", "-D", self.data, check=False, timeout=60)
            except Exception:  # noqa: BLE001 - killed below
                pass
            pid = self.postmaster_pid
            if pid and proc_stat(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.started = False
        shutil.rmtree(self.directory, ignore_errors=True)


# ---- measuring windows ----------------------------------------------------------------------

def percentile(sorted_values, p):
    if not sorted_values:
        return None
    rank = max(0, min(len(sorted_values) - 1, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[rank]


class Window:
    """CPU and RSS of the nodes, CPU of PostgreSQL and moto, and the database's counters between
    begin() and end(); RSS sampled every second."""

    def __init__(self, fleet, pg):
        self.fleet, self.pg = fleet, pg
        self.rss = collections.defaultdict(list)
        self.stopping = threading.Event()
        self.thread = None

    def _cpu(self):
        cpu = {node.node_id: cpu_seconds(node.process.pid) for node in self.fleet.nodes}
        cpu["postgres"] = tree_cpu_seconds(self.pg.postmaster_pid)
        cpu["moto"] = cpu_seconds(self.fleet.moto.process.pid)
        return cpu

    def _moto_requests(self):
        try:
            with open(os.path.join(self.fleet.workdir, "moto.log")) as f:
                return sum(1 for line in f if re.search(r'"(GET|PUT|POST|DELETE|HEAD) ', line))
        except OSError:
            return 0

    def _sample(self):
        while not self.stopping.wait(1.0):
            for node in self.fleet.nodes:
                value = rss_mib(node.process.pid)
                if value is not None:
                    self.rss[node.node_id].append(value)

    def begin(self):
        self.pg.reset_statements()
        self.counters0 = self.pg.counters()
        self.moto0 = self._moto_requests()
        self.cpu0, self.t0 = self._cpu(), time.monotonic()
        for node in self.fleet.nodes:
            self.rss[node.node_id].append(rss_mib(node.process.pid))
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def end(self):
        cpu1, t1 = self._cpu(), time.monotonic()
        counters1 = self.pg.counters()
        statements = self.pg.statement_stats()
        moto1 = self._moto_requests()
        self.stopping.set()
        self.thread.join()
        wall = t1 - self.t0
        result = {"seconds": round(wall, 2), "nodes": {}}
        for node in self.fleet.nodes:
            before, after = self.cpu0[node.node_id], cpu1[node.node_id]
            samples = [x for x in self.rss[node.node_id] if x is not None]
            result["nodes"][node.node_id] = {
                "cpu_percent": None if before is None or after is None else round((after - before) / wall * 100, 2),
                "rss_mib_mean": round(sum(samples) / len(samples), 1) if samples else None,
                "rss_mib_max": round(max(samples), 1) if samples else None,
            }
        xacts = (counters1["xact_commit"] + counters1["xact_rollback"]) - \
                (self.counters0["xact_commit"] + self.counters0["xact_rollback"])
        database = {
            "transactions_per_s": round(xacts / wall, 2),
            "transactions_per_s_per_node": round(xacts / wall / len(self.fleet.nodes), 2),
            "rollbacks": counters1["xact_rollback"] - self.counters0["xact_rollback"],
            "rows_per_s": {k: round((counters1[k] - self.counters0[k]) / wall, 1)
                           for k in ("tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted")},
            "connections": counters1["connections"],
            "server_cpu_percent": None if self.cpu0["postgres"] is None or cpu1["postgres"] is None
            else round((cpu1["postgres"] - self.cpu0["postgres"]) / wall * 100, 2),
        }
        if statements:
            calls, ms, top = statements
            database.update({
                "statements_per_s": round(calls / wall, 2),
                "statements_per_s_per_node": round(calls / wall / len(self.fleet.nodes), 2),
                "statement_exec_ms_per_s": round(ms / wall, 2),
                "top_statements": [{"calls_per_s": round(c / wall, 2), "exec_ms": m, "rows_per_call": round(r / c, 2) if c else None,
                                    "query": q} for c, m, r, q in top],
            })
        result["database"] = database
        result["moto"] = {
            "cpu_percent": None if self.cpu0["moto"] is None or cpu1["moto"] is None
            else round((cpu1["moto"] - self.cpu0["moto"]) / wall * 100, 2),
            "s3_requests_per_s": round((moto1 - self.moto0) / wall, 2),
        }
        return result


# ---- the fleet ------------------------------------------------------------------------------

def api_clients(fleet, workers, timeout):
    """A botocore client per node (thread-safe; one connection per worker at most), SigV4-signed
    with the keys every node accepts (fleet_tests.AUTH)."""
    import botocore.session
    from botocore.config import Config
    session = botocore.session.get_session()
    config = Config(retries={"max_attempts": 1}, connect_timeout=timeout, read_timeout=timeout,
                    parameter_validation=False, max_pool_connections=workers + 4)
    return {node.node_id: session.create_client("ivs-realtime", region_name=REGION, endpoint_url=node.endpoint,
                                                aws_access_key_id=ENV["AWS_ACCESS_KEY_ID"],
                                                aws_secret_access_key=ENV["AWS_SECRET_ACCESS_KEY"], config=config)
            for node in fleet.nodes}


def start_fleet(args, binary, workdir, pg):
    fleet_tests.LEASE = {"leaseTtlSeconds": args.lease_ttl, "heartbeatSeconds": args.heartbeat}
    fleet = fleet_tests.Fleet(binary, workdir)
    fleet.url = pg.url
    # No composition must give up waiting for publishers while the benchmark runs.
    idle = args.idle_seconds + args.seconds + args.settle + 600
    started = time.time()
    try:
        fleet.start(NODES, capacity=args.capacity, idle=idle)
    except BaseException:
        log(fleet.log()[-6000:])
        fleet.close()
        raise
    return fleet, time.time() - started


def make_resources(args, fleet, client, workdir):
    """Stages, an encoder and a storage configuration, an ended session (a short publisher) and
    maybe a composition, made through node a. Returns the context the request mix uses."""
    a, b = fleet.nodes[0], fleet.nodes[1]
    context = {"stages": [], "composition": None, "session": None}
    for i in range(args.stages):
        context["stages"].append(client.create_stage(name=f"bench-{i}")["stage"]["arn"])
    enc = client.create_encoder_configuration(name="bench", video={"width": 1280, "height": 720, "framerate": 30,
                                                                   "bitrate": 2500000})["encoderConfiguration"]["arn"]
    sto = client.create_storage_configuration(name="bench", s3={"bucketName": "rec-bucket"})["storageConfiguration"]["arn"]
    context["encoder"], context["storage"] = enc, sto
    context["tag_stage"] = context["stages"][0]
    if args.session_seconds > 0:
        stage = client.get_stage(arn=context["stages"][1])["stage"]
        ingest = client.create_ingest_configuration(stageArn=stage["arn"], userId="bench-publisher", ingestProtocol="RTMP",
                                                    insecureIngest=True)["ingestConfiguration"]
        publisher = fleet.adopt(Publisher(b.rtmp_url(stage, ingest), "red", 440, workdir, "session"))
        try:
            session = fleet.wait_publishing(a, stage["arn"], ingest["participantId"], timeout=30)
            time.sleep(max(0.0, args.session_seconds - 2))
        finally:
            publisher.stop()
        deadline = time.time() + 15
        while client.get_stage(arn=stage["arn"])["stage"].get("activeSessionId") and time.time() < deadline:
            time.sleep(0.3)
        participants = client.list_participants(stageArn=stage["arn"], sessionId=session)["participants"]
        context["session"] = (stage["arn"], session)
        log(f"  an ended stage session {session} on {stage['arn'].rsplit('/', 1)[1]} with {len(participants)} "
            f"participant(s) ({', '.join(p['state'] for p in participants)})")
    if args.with_composition:
        stage_arn = context["stages"][2]
        composition = client.start_composition(stageArn=stage_arn, destinations=[fleet_tests.s3_destination(enc, sto)])
        context["composition"] = composition["composition"]["arn"]
        context["tag_stage"] = stage_arn
        owner = fleet.owner(stage_arn)
        log(f"  composition {context['composition'].rsplit('/', 1)[1]} ({composition['composition']['state']}) on "
            f"{owner.node_id}")
    return context


# ---- load -----------------------------------------------------------------------------------

# Relative weights of the request mix; CreateStage is followed by a DeleteStage of the stage.
MIX = [("GetStage", 24), ("ListStages", 12), ("GetComposition", 10), ("ListCompositions", 10),
       ("ListParticipants", 12), ("ListStageSessions", 12), ("GetStageSession", 6),
       ("TagResource", 4), ("UntagResource", 4), ("CreateStage+DeleteStage", 2)]


def mix_for(context):
    mix = dict(MIX)
    if context["composition"] is None:
        mix["ListCompositions"] += mix.pop("GetComposition")
    if context["session"] is None:
        mix["ListStageSessions"] += mix.pop("ListParticipants") + mix.pop("GetStageSession")
    return mix


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []          # (operation, node, scheduled offset s, latency s, service s, send lag s, error code)
        self.error_examples = {}
        self.pauses = []           # (offset s, how late s) of the client's own stalls

    def add(self, operation, node, offset, latency, service, lag, error=None, message=None):
        with self.lock:
            self.calls.append((operation, node, offset, latency, service, lag, error))
            if error and error not in self.error_examples:
                self.error_examples[error] = f"{operation} on {node}: {message}"[:400]


def error_code(error):
    import botocore.exceptions
    if isinstance(error, botocore.exceptions.ClientError):
        return error.response.get("Error", {}).get("Code") or f"HTTP {error.response.get('ResponseMetadata', {}).get('HTTPStatusCode')}"
    return type(error).__name__


def one_call(client, operation, context, rnd):
    stages = context["stages"]
    if operation == "GetStage":
        client.get_stage(arn=rnd.choice(stages))
    elif operation == "ListStages":
        client.list_stages()
    elif operation == "GetComposition":
        client.get_composition(arn=context["composition"])
    elif operation == "ListCompositions":
        client.list_compositions()
    elif operation == "ListParticipants":
        stage_arn, session = context["session"]
        client.list_participants(stageArn=stage_arn, sessionId=session)
    elif operation == "ListStageSessions":
        stage_arn = context["session"][0] if context["session"] else rnd.choice(stages)
        client.list_stage_sessions(stageArn=stage_arn)
    elif operation == "GetStageSession":
        stage_arn, session = context["session"]
        client.get_stage_session(stageArn=stage_arn, sessionId=session)
    elif operation == "TagResource":
        client.tag_resource(resourceArn=context["tag_stage"], tags={f"bench-{rnd.randrange(8)}": str(rnd.randrange(1000))})
    elif operation == "UntagResource":
        client.untag_resource(resourceArn=context["tag_stage"], tagKeys=[f"bench-{rnd.randrange(8)}"])
    elif operation == "CreateStage":
        return client.create_stage(name="bench-churn")["stage"]["arn"]
    elif operation == "DeleteStage":
        client.delete_stage(arn=context["delete"])
    else:
        raise ValueError(operation)
    return None


def run_load(args, fleet, clients, context, recorder):
    """--rate requests/s for --seconds, open loop, round-robin over the nodes."""
    mix = mix_for(context)
    plan_random = random.Random(args.seed)
    total = int(args.rate * args.seconds)
    names, weights = list(mix), list(mix.values())
    plan = [(plan_random.choices(names, weights)[0], fleet.nodes[i % len(fleet.nodes)].node_id) for i in range(total)]
    local = threading.local()

    def rng():
        if not hasattr(local, "random"):
            local.random = random.Random(f"{args.seed}-{threading.get_ident()}")
        return local.random

    def execute(index, due, operation, node_id):
        started = time.monotonic()
        client = clients[node_id]
        steps = ["CreateStage", "DeleteStage"] if operation == "CreateStage+DeleteStage" else [operation]
        step_due, step_context = due, context
        for step in steps:
            step_started = started if step == steps[0] else time.monotonic()
            try:
                created = one_call(client, step, step_context, rng())
                error = message = None
            except Exception as exc:  # noqa: BLE001 - every failure is counted by its code
                created, error, message = None, error_code(exc), str(exc)
            finished = time.monotonic()
            recorder.add(step, node_id, step_due - t0, finished - step_due, finished - step_started, step_started - step_due,
                         error, message)
            if error or step != "CreateStage":
                break
            # The delete follows the create's answer: it is due when that came.
            step_due, step_context = finished, dict(context, delete=created)

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.workers, thread_name_prefix="bench")
    futures = []
    t0 = time.monotonic() + 0.5
    # The client's own pauses (the machine or the interpreter stalling this process) inflate the
    # latencies of every call in flight: a thread that should wake every 5 ms records how late it
    # woke. The garbage collector is off meanwhile: with it on, the client stalled 60-80 ms at the same
    # point of every run with the same seed, and every call in flight then looked slow.
    pauses, stopping = [], threading.Event()

    def watch():
        while not stopping.is_set():
            before = time.monotonic()
            time.sleep(0.005)
            late = time.monotonic() - before - 0.005
            if late > 0.02:
                pauses.append((before - t0, late))
    watcher = threading.Thread(target=watch, daemon=True)
    gc.collect()
    gc.disable()
    watcher.start()
    try:
        for index, (operation, node_id) in enumerate(plan):
            due = t0 + index / args.rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(execute, index, due, operation, node_id))
        sent_over = time.monotonic() - t0
        concurrent.futures.wait(futures, timeout=args.timeout + 30)
        answered_over = time.monotonic() - t0
    finally:
        stopping.set()
        gc.enable()
        pool.shutdown(wait=False, cancel_futures=True)
    recorder.pauses = pauses
    return sent_over, answered_over, mix


def latency_summary(calls):
    ok = sorted(c[3] for c in calls if c[6] is None)
    everything = sorted(c[3] for c in calls)
    summary = {"count": len(calls), "errors": len(calls) - len(ok)}
    for p in (50, 90, 99):
        value = percentile(everything, p)
        summary[f"p{p}_ms"] = None if value is None else round(value * 1000, 2)
    summary["max_ms"] = round(everything[-1] * 1000, 2) if everything else None
    summary["mean_ms"] = round(sum(everything) / len(everything) * 1000, 2) if everything else None
    return summary


def analyse_load(calls, pauses, sent_over, args):
    result = {"target_rate": args.rate, "seconds": args.seconds, "requests_scheduled": int(args.rate * args.seconds)}
    creates = [c for c in calls if c[0] != "DeleteStage"]   # a DeleteStage is extra, not a scheduled request
    result["requests_sent"] = len(creates)
    result["calls_including_deletes"] = len(calls)
    result["achieved_send_rate"] = round(len(creates) / sent_over, 2) if sent_over else None
    ok = [c for c in calls if c[6] is None]
    last_answer = max((c[2] + c[3] for c in calls), default=0.0)
    result["answered_ok_per_s"] = round(len(ok) / max(last_answer, 1e-9), 2)
    result["errors"] = dict(collections.Counter(c[6] for c in calls if c[6]))
    result["overall"] = latency_summary(calls)
    result["per_node"] = {node: latency_summary([c for c in calls if c[1] == node])
                          for node in sorted({c[1] for c in calls})}
    result["per_operation"] = {op: latency_summary([c for c in calls if c[0] == op])
                               for op in sorted({c[0] for c in calls})}
    service = sorted(c[4] for c in calls)
    lags = sorted(c[5] for c in calls)
    result["service_time"] = {f"p{p}_ms": round(percentile(service, p) * 1000, 2) for p in (50, 90, 99)} if service else {}
    result["client_send_lag"] = ({f"p{p}_ms": round(percentile(lags, p) * 1000, 2) for p in (50, 99)}
                                 | {"max_ms": round(lags[-1] * 1000, 2)}) if lags else {}
    result["client_pauses_over_20ms"] = {"count": len(pauses), "max_ms": round(max((p[1] for p in pauses), default=0) * 1000, 1),
                                         "worst": [{"at_s": round(at, 2), "ms": round(late * 1000, 1)}
                                                   for at, late in sorted(pauses, key=lambda p: -p[1])[:5]]}
    result["over_100ms"] = sum(1 for c in calls if c[3] > 0.1)
    result["over_1s"] = sum(1 for c in calls if c[3] > 1.0)
    slowest = sorted(calls, key=lambda c: c[3], reverse=True)[:10]
    result["slowest"] = [{"operation": c[0], "node": c[1], "at_s": round(c[2], 2), "latency_ms": round(c[3] * 1000, 1),
                          "service_ms": round(c[4] * 1000, 1), "send_lag_ms": round(c[5] * 1000, 1), "error": c[6]}
                         for c in slowest]
    seconds = collections.defaultdict(list)
    for c in calls:
        seconds[int(c[2])].append(c[3])
    result["per_second_max_ms"] = [round(max(seconds[s]) * 1000, 1) for s in sorted(seconds)]
    result["per_second_p50_ms"] = [round(percentile(sorted(seconds[s]), 50) * 1000, 1) for s in sorted(seconds)]
    return result


# ---- logs -----------------------------------------------------------------------------------

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\S+ (trace|debug|info|notice|warning|error|critical) ")


def log_findings(fleet):
    """Per node: the lines at warning or above (and any line not in the logger's format: a
    crash's output), with their distinct kinds (numbers, ARNs and ids masked so repeats group)."""
    findings = {}
    for node in fleet.nodes:
        lines = []
        for line in node.full_log().splitlines():
            match = LOG_LINE.match(line)
            if line.strip() and (match is None or match.group(1) in ("warning", "error", "critical")):
                lines.append(line)
        kinds = collections.Counter()
        for line in lines:
            text = LOG_LINE.sub(lambda m: m.group(1) + " ", line)
            text = re.sub(r"arn:aws:ivs:[^\s\"',\]]+", "<arn>", text)
            text = re.sub(r"\b(st|pa)-[A-Za-z0-9]+", "<id>", text)
            text = re.sub(r"\d+(\.\d+)?", "N", text)
            kinds[text[:240]] += 1
        findings[node.node_id] = {"lines": len(lines), "kinds": kinds.most_common(8)}
    return findings


# ---- output ---------------------------------------------------------------------------------

def fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def print_window(title, window):
    log(f"\n{title} ({window['seconds']:.0f} s)")
    log(f"  {'node':<10} {'CPU % core':>10} {'RSS MiB':>9} {'RSS max':>9}")
    for node_id, node in window["nodes"].items():
        log(f"  {node_id:<10} {fmt(node['cpu_percent'], 2):>10} {fmt(node['rss_mib_mean']):>9} {fmt(node['rss_mib_max']):>9}")
    db = window["database"]
    statements = ""
    if "statements_per_s" in db:
        statements = (f", {db['statements_per_s']:.1f} statements/s ({db['statements_per_s_per_node']:.1f} per node, "
                      f"{db['statement_exec_ms_per_s']:.1f} ms of execution per s)")
    log(f"  database: {db['transactions_per_s']:.1f} transactions/s ({db['transactions_per_s_per_node']:.1f} per node, "
        f"{db['rollbacks']} rolled back){statements}; server CPU {fmt(db['server_cpu_percent'], 2)} % of a core; "
        f"{db['connections']} connections")
    rows = db["rows_per_s"]
    log(f"  rows/s: returned {rows['tup_returned']}, fetched {rows['tup_fetched']}, inserted {rows['tup_inserted']}, "
        f"updated {rows['tup_updated']}, deleted {rows['tup_deleted']}")
    moto = window["moto"]
    log(f"  moto: {moto['s3_requests_per_s']:.2f} S3 requests/s, CPU {fmt(moto['cpu_percent'], 2)} %")
    for statement in db.get("top_statements", [])[:6]:
        log(f"    {statement['calls_per_s']:>7.2f}/s {statement['rows_per_call']:>6.2f} rows  {statement['query']}")


def print_load(load):
    log(f"\nload: target {load['target_rate']}/s for {load['seconds']} s, round-robin over {len(load['per_node'])} nodes")
    log(f"  sent {load['requests_sent']} requests ({load['calls_including_deletes']} calls with the DeleteStages) at "
        f"{load['achieved_send_rate']:.1f}/s; answered OK {load['answered_ok_per_s']:.1f}/s; errors: "
        f"{load['errors'] or 'none'}")
    lag = load["client_send_lag"]
    log(f"  client send lag p50 {fmt(lag.get('p50_ms'), 2)} ms, p99 {fmt(lag.get('p99_ms'), 2)} ms, max "
        f"{fmt(lag.get('max_ms'), 1)} ms; client paused > 20 ms {load['client_pauses_over_20ms']['count']} times (longest "
        f"{load['client_pauses_over_20ms']['max_ms']:.0f} ms); calls over 100 ms: {load['over_100ms']}, over 1 s: {load['over_1s']}")
    header = f"  {'':<24} {'calls':>6} {'err':>4} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}"
    log(header)

    def row(name, s):
        log(f"  {name:<24} {s['count']:>6} {s['errors']:>4} {fmt(s['p50_ms'], 2):>8} {fmt(s['p90_ms'], 2):>8} "
            f"{fmt(s['p99_ms'], 2):>8} {fmt(s['max_ms'], 1):>8}")
    row("all", load["overall"])
    for node, s in load["per_node"].items():
        row(node, s)
    for op, s in load["per_operation"].items():
        row(op, s)
    log("  slowest: " + "; ".join(f"{c['operation']} on {c['node']} at {c['at_s']:.1f} s {c['latency_ms']:.0f} ms"
                                  + (f" ({c['error']})" if c["error"] else "") for c in load["slowest"][:5]))


# ---- main -----------------------------------------------------------------------------------

def choose_binary(requested):
    if requested:
        if not os.access(requested, os.X_OK):
            sys.exit(f"{requested} is not an executable")
        return requested
    release = os.path.join(REPO, ".build/release/stage-compositor")
    debug = os.path.join(REPO, ".build/debug/stage-compositor")
    if os.access(release, os.X_OK):
        if os.access(debug, os.X_OK) and os.path.getmtime(debug) > os.path.getmtime(release):
            log(f"warning: {release} is older than the debug build; it may predate fleet mode (`swift build -c release`)")
        return release
    if os.access(debug, os.X_OK):
        log(f"warning: {release} not found; measuring the DEBUG build {debug} (not representative: "
            "`swift build -c release` for real numbers)")
        return debug
    sys.exit("no stage-compositor build found (.build/release or .build/debug)")


def git_state():
    """The checkout's commit, and whether its sources differ from it (the binary may not be the commit's)."""
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "Sources", "Package.swift"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{head}{' + uncommitted changes under Sources' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", help="stage-compositor to run (default .build/release, else .build/debug)")
    parser.add_argument("--idle-seconds", type=float, default=30, help="idle measurement window (default 30)")
    parser.add_argument("--settle", type=float, help="seconds after start-up before the idle window (default: the "
                        "lease TTL + 2, so the nodes' reaping, which starts after a full lease, is in the window)")
    parser.add_argument("--rate", type=float, default=100, help="API requests per second (default 100)")
    parser.add_argument("--seconds", type=float, default=30, help="load duration (default 30)")
    parser.add_argument("--workers", type=int, default=64, help="client threads (default 64)")
    parser.add_argument("--timeout", type=float, default=30, help="per-call connect/read timeout in s (default 30)")
    parser.add_argument("--stages", type=int, default=5, help="stages made before the load (default 5, at least 3)")
    parser.add_argument("--session-seconds", type=float, default=5,
                        help="length of the RTMP publish that makes the ended stage session (0: no session)")
    parser.add_argument("--with-composition", action="store_true", help="one composition (STARTING, placed) during the load")
    parser.add_argument("--lease-ttl", type=float, default=10, help="database.leaseTtlSeconds (default 10, production)")
    parser.add_argument("--heartbeat", type=float, default=1, help="database.heartbeatSeconds (default 1, production)")
    parser.add_argument("--capacity", type=int, default=4000, help="each node's fleet.capacityMillicores")
    parser.add_argument("--pg-unsafe-fast", action="store_true",
                        help="PostgreSQL with fsync/synchronous_commit/full_page_writes off, as the tests run it")
    parser.add_argument("--no-pg-stat-statements", action="store_true", help="do not load pg_stat_statements")
    parser.add_argument("--only", choices=["idle", "load"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="FILE", help="write every number as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (node logs, configs)")
    args = parser.parse_args()
    args.stages = max(3, args.stages)
    if args.settle is None:
        args.settle = args.lease_ttl + 2
    binary = choose_binary(args.binary)

    # Ctrl-C (even when started from a shell that ignores it for background jobs) and SIGTERM
    # end the run and clean up.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    workdir = tempfile.mkdtemp(prefix="fleet-bench-")
    pg = fleet = None
    results = {"binary": os.path.abspath(binary), "binary_built": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(
                   os.path.getmtime(binary))), "git": git_state(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "cpus": os.cpu_count(), "load_average_at_start": os.getloadavg(),
               "lease": {"leaseTtlSeconds": args.lease_ttl, "heartbeatSeconds": args.heartbeat}, "nodes": NODES,
               "arguments": vars(args)}
    status = 0
    try:
        pg = PostgresServer(unsafe_fast=args.pg_unsafe_fast, statements=not args.no_pg_stat_statements)
        pg.start()
        log(f"{results['binary']} (built {results['binary_built']}; checkout {results['git']})")
        log(f"PostgreSQL {pg.version} on 127.0.0.1:{pg.port} ({'fsync off' if args.pg_unsafe_fast else 'fsync on'}"
            f"{', pg_stat_statements' if pg.statements else ''}); binary {binary}; "
            f"lease {args.lease_ttl:g} s renewed every {args.heartbeat:g} s; load average {os.getloadavg()[0]:.2f} "
            f"on {os.cpu_count()} CPUs")
        results["postgres"] = {"version": pg.version, "fsync": not args.pg_unsafe_fast, "pg_stat_statements": pg.statements}
        fleet, took = start_fleet(args, binary, workdir, pg)
        results["startup_seconds"] = round(took, 2)
        text, table = fleet.nodes_table()
        results["nodes_table_at_start"] = text
        live = [node_id for node_id, node in table.items() if node["live"]]
        log(f"{len(fleet.nodes)} nodes started in {took:.2f} s (moto and the nodes); `nodes` lists {len(live)} live: "
            f"{', '.join(sorted(live))}")

        if args.only in (None, "idle"):
            time.sleep(args.settle)
            log(f"idle: measuring {args.idle_seconds:g} s with nothing running...")
            window = Window(fleet, pg).begin()
            time.sleep(args.idle_seconds)
            results["idle"] = window.end()
            print_window("idle", results["idle"])

        if args.only in (None, "load"):
            clients = api_clients(fleet, args.workers, args.timeout)
            log("\nload: making the resources through node-a...")
            context = make_resources(args, fleet, clients[fleet.nodes[0].node_id], workdir)
            for node_id, client in clients.items():   # warm up: service model loaded, a connection open
                client.list_stages()
            recorder = Recorder()
            log(f"load: {args.rate:g} requests/s for {args.seconds:g} s...")
            window = Window(fleet, pg).begin()
            sent_over, _, mix = run_load(args, fleet, clients, context, recorder)
            during = window.end()
            load = analyse_load(list(recorder.calls), recorder.pauses, sent_over, args)
            load["mix_weights"] = mix
            load["error_examples"] = recorder.error_examples
            load["resources"] = {k: v for k, v in context.items() if k != "delete"}
            load["during"] = during
            results["load"] = load
            print_load(load)
            print_window("during the load", during)
            if recorder.error_examples:
                log("  error examples:")
                for code, example in recorder.error_examples.items():
                    log(f"    {code}: {example}")
            text, table = fleet.nodes_table()
            results["nodes_table_after_load"] = text

        stopped = [n.node_id for n in fleet.nodes if not n.running()]
        results["nodes_exited"] = stopped
        results["node_logs"] = log_findings(fleet)
        results["postgres_log_problems"] = pg.log_problems()[-50:]
        log("\nlogs:")
        if stopped:
            log(f"  nodes that exited during the run: {stopped}")
            status = 1
        for node_id, found in results["node_logs"].items():
            log(f"  {node_id}: {found['lines']} lines at warning or above")
            for kind, count in found["kinds"][:5]:
                log(f"    {count:>5} x {kind[:200]}")
        problems = results["postgres_log_problems"]
        log(f"  PostgreSQL log: {len(pg.log_problems())} ERROR/FATAL/WARNING lines" +
            "".join(f"\n    {line[:200]}" for line in problems[-5:]))
    except KeyboardInterrupt:
        log("interrupted: cleaning up")
        status = 130
    except Exception as error:  # noqa: BLE001 - reported with the nodes' logs, then cleaned up
        import traceback
        traceback.print_exc()
        if fleet is not None:
            log(fleet.log()[-6000:])
        results["failure"] = f"{type(error).__name__}: {error}"
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not stop the clean-up
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if fleet is not None:
            fleet.close()
        if pg is not None:
            pg.stop()
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2, default=str)
            log(f"wrote {args.json}")
    return status


if __name__ == "__main__":
    sys.exit(main())
