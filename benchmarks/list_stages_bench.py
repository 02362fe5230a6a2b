#!/usr/bin/env python3
"""ListStages against a big SQLite state store (issue 38, item 6).

Starts `stage-compositor serve` once to create its database, fills it with --stages stages of
--tags long tags each (about 19 KB a stage: 35,000 make a 690 MB file, as in the report),
starts the daemon again and measures, from outside: one `ListStages maxResults=1` (time, and
the daemon's peak RSS from /proc/<pid>/status VmHWM), eight at once, and paging through every
stage at maxResults=100.

    benchmarks/list_stages_bench.py [--binary .build/debug/stage-compositor] [--stages 35000]
"""
import argparse
import concurrent.futures
import json
import os
import random
import socket
import sqlite3
import string
import subprocess
import tempfile
import time
import urllib.request

REGION, ACCOUNT = "us-east-1", "123456789012"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_peak_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def call(port, operation, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{operation}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


class Daemon:
    def __init__(self, binary, workdir):
        self.binary, self.workdir, self.port = binary, workdir, free_port()
        self.config = os.path.join(workdir, "config.json")
        with open(self.config, "w") as f:
            json.dump({"region": REGION, "account": ACCOUNT, "listen": {"host": "127.0.0.1", "port": self.port},
                       "stateDirectory": os.path.join(workdir, "state"), "events": {"stdout": False},
                       "ingest": {"rtmp": {"port": free_port()}, "rtmps": {"port": free_port()}},
                       "quotas": {"stages": 1_000_000}}, f)

    def __enter__(self):
        self.process = subprocess.Popen([self.binary, "serve", "--config", self.config], stdout=subprocess.DEVNULL,
                                        stderr=open(os.path.join(self.workdir, "serve.err"), "a"))
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.1)
        raise SystemExit("daemon did not start")

    def __exit__(self, *_):
        self.process.terminate()
        self.process.wait(timeout=60)


def fill(path, stages, tags):
    rng = random.Random(38)
    database = sqlite3.connect(path)
    rows = []
    for index in range(stages):
        stage_id = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(12))
        arn = f"arn:aws:ivs:{REGION}:{ACCOUNT}:stage/{stage_id}"
        stage_tags = {f"k{t:03d}-" + "x" * 123: "v" * 256 for t in range(tags)}
        document = json.dumps({"sourcePath": "", "stage": {"arn": arn, "name": f"s{index}", "tags": stage_tags}},
                              sort_keys=True, separators=(",", ":"))
        rows.append((arn, document))
        if len(rows) == 1000:
            database.executemany("INSERT INTO stage (arn, document) VALUES (?, ?)", rows)
            rows = []
    database.executemany("INSERT INTO stage (arn, document) VALUES (?, ?)", rows)
    database.commit()
    database.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/debug/stage-compositor")
    parser.add_argument("--stages", type=int, default=35_000)
    parser.add_argument("--tags", type=int, default=50)
    parser.add_argument("--workdir", help="reuse the filled database of an earlier run")
    parser.add_argument("--skip-paging", action="store_true", help="only the first page (when every page reads the table)")
    options = parser.parse_args()
    workdir = options.workdir or tempfile.mkdtemp(prefix="list-stages-")
    os.makedirs(workdir, exist_ok=True)
    database = os.path.join(workdir, "state", "state.sqlite")
    if not os.path.exists(os.path.join(workdir, "filled")):
        with Daemon(os.path.abspath(options.binary), workdir):
            pass
        database = next(os.path.join(root, name) for root, _, names in os.walk(os.path.join(workdir, "state"))
                        for name in names if name.endswith((".sqlite", ".db")))
        fill(database, options.stages, options.tags)
        open(os.path.join(workdir, "filled"), "w").write(database)
    database = open(os.path.join(workdir, "filled")).read()
    print(f"{options.stages} stages x {options.tags} tags: {os.path.getsize(database) / 1e6:.0f} MB ({workdir})")
    with Daemon(os.path.abspath(options.binary), workdir) as daemon:
        idle = rss_peak_mb(daemon.process.pid)
        start = time.monotonic()
        first = call(daemon.port, "ListStages", {"maxResults": 1})
        one = time.monotonic() - start
        print(f"ListStages maxResults=1: {one * 1000:.1f} ms, daemon peak RSS {idle:.0f} -> {rss_peak_mb(daemon.process.pid):.0f} MB")
        start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda _: call(daemon.port, "ListStages", {"maxResults": 1}), range(8)))
        print(f"eight at once: {(time.monotonic() - start) * 1000:.1f} ms, peak RSS {rss_peak_mb(daemon.process.pid):.0f} MB")
        if options.skip_paging:
            return
        start, seen, pages, slowest = time.monotonic(), len(first["stages"]), 1, 0.0
        token = None
        while True:
            body = {"maxResults": 100} | ({"nextToken": token} if token else {})
            page_start = time.monotonic()
            page = call(daemon.port, "ListStages", body)
            slowest = max(slowest, time.monotonic() - page_start)
            seen, pages, token = seen + len(page["stages"]), pages + 1, page.get("nextToken")
            if not token:
                break
        seen -= len(first["stages"])
        print(f"paging through all at maxResults=100: {seen} stages in {pages - 1} pages, {time.monotonic() - start:.1f} s "
              f"(slowest page {slowest * 1000:.0f} ms), peak RSS {rss_peak_mb(daemon.process.pid):.0f} MB")


if __name__ == "__main__":
    main()
