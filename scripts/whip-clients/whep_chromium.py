#!/usr/bin/env python3
"""A WHEP viewer in Debian's headless chromium (whep_page.html), for glass-to-glass latency:
the page plays the composition and reads whip_page.html's barcode from every picture it
presents. Served by whip_chromium.py's helper server; the page's final report is printed.

stdout: one JSON line {"ok": true, "latencies": [ms, ...], "frames": N, "first_frame_ms": ...,
"jitter_buffer_ms": ..., "delete_status": 200, ...}. Exit status 0 when it played.
"""
import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from whip_chromium import chromium_command, find_chromium, make_handler  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="the composition's WHEP URL")
    p.add_argument("--token", default="")
    p.add_argument("--barcode-epoch-ms", type=float, required=True, help="the publisher page's epoch")
    p.add_argument("--duration", type=float, default=20.0, help="seconds measured")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds played before measuring")
    args = p.parse_args()
    chromium = find_chromium("")
    if not chromium:
        print(json.dumps({"ok": False, "error": "chromium not found"}), flush=True)
        return 1
    reports = queue.Queue()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(reports))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    page = f"http://127.0.0.1:{httpd.server_address[1]}/whep_page.html?" + urllib.parse.urlencode(
        {"url": args.url, "token": args.token, "barcode": args.barcode_epoch_ms, "duration": args.duration,
         "warmup": args.warmup})
    profile = tempfile.mkdtemp(prefix="whep-chromium-")
    proc = subprocess.Popen(chromium_command(chromium, profile, page), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    final = None
    deadline = time.monotonic() + args.warmup + args.duration + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                report = reports.get(timeout=0.5)
            except queue.Empty:
                continue
            if report.get("event") == "final":
                final = report
                break
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        httpd.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    if final is None:
        print(json.dumps({"ok": False, "error": "no final report from the page"}), flush=True)
        return 4
    print(json.dumps({"ok": bool(final.get("ok")), **final.get("info", {}),
                      **({k: final[k] for k in ("stage", "error", "body") if k in final})}), flush=True)
    return 0 if final.get("ok") else 2


if __name__ == "__main__":
    sys.exit(main())
