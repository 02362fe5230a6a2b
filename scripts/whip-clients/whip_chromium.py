#!/usr/bin/env python3
"""WHIP publisher in Debian's headless chromium with fake capture devices fed from files.

Serves whip_page.html from a tiny local HTTP server (thread) on 127.0.0.1, opens
  http://127.0.0.1:P/whip_page.html?url=WHIP&token=TOKEN&duration=S&codec=h264&post=direct
in `chromium --headless=new --use-fake-ui-for-media-stream --use-fake-device-for-media-stream
--use-file-for-fake-video-capture=X.y4m --use-file-for-fake-audio-capture=Y.wav
--allow-loopback-in-peer-connection --no-sandbox ...`, and collects the page's reports
(POST /report, JSON) until the "final" one.

stdout: one JSON line, e.g.
  {"ok": true, "status": 201, "location": "...", "times_ms": {"page_start": 35.1, "gum_resolved": ...,
   "first_frame": ..., "offer_created": ..., "ice_gathering_complete": ..., "post_sent": ...,
   "created_201": ..., "answer_applied": ..., "connected": ...}, "outbound": {...}, "delete_status": 200, ...}
times_ms are the page's performance.now() (ms since navigation start).

Exit status: 0 published (201 + connected), 2 the POST returned a non-201 (or not --expect-status),
3 201 but never connected, 4 timeout / no report from the page, 1 usage or setup error
(chromium missing, bad files).

The WHIP POST goes from the page origin (http://127.0.0.1:P) to the WHIP URL: the WHIP server
must answer CORS (OPTIONS preflight with Access-Control-Allow-Origin, -Allow-Headers
Authorization, Content-Type, and Access-Control-Expose-Headers: Location on the 201).
--post-via proxy makes the helper server do the HTTP requests instead (no CORS needed).
"""
import argparse
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
LOG = logging.getLogger("whip_chromium")


def make_handler(reports):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *a):
            LOG.debug("http: " + fmt, *a)

        def _send(self, status, body=b"", ctype="text/plain"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = urllib.parse.urlparse(self.path).path
            if path in ("/", "/whip_page.html", "/whep_page.html"):
                with open(os.path.join(HERE, "whep_page.html" if path == "/whep_page.html" else "whip_page.html"), "rb") as f:
                    return self._send(200, f.read(), "text/html; charset=utf-8")
            if path == "/favicon.ico":
                return self._send(204)
            return self._send(404, b"not found")

        def do_POST(self):
            path = urllib.parse.urlparse(self.path).path
            body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            if path == "/report":
                try:
                    reports.put(json.loads(body))
                except ValueError:
                    LOG.warning("bad report %r", body[:200])
                return self._send(204)
            if path == "/proxy":
                req = json.loads(body)
                data = req["body"].encode() if req.get("body") is not None else None
                r = urllib.request.Request(req["url"], data=data, method=req["method"], headers=req.get("headers", {}))
                try:
                    try:
                        with urllib.request.urlopen(r, timeout=10) as resp:
                            out = {"status": resp.status, "location": resp.headers.get("Location"),
                                   "body": resp.read().decode(errors="replace")}
                    except urllib.error.HTTPError as err:
                        out = {"status": err.code, "location": err.headers.get("Location"),
                               "body": err.read().decode(errors="replace")}
                except OSError as exc:
                    out = {"error": str(exc)}
                return self._send(200, json.dumps(out).encode(), "application/json")
            return self._send(404, b"not found")
    return Handler


def chromium_command(chromium, profile, page, extra=()):
    """Headless chromium for a WebRTC page on loopback: its host candidates are 127.0.0.1
    (not mDNS names), media autoplays, timers and rendering run in the background."""
    return [chromium, "--headless=new", "--no-sandbox",  # root: chromium refuses to start sandboxed
            "--allow-loopback-in-peer-connection",  # else 127.0.0.1 host candidates are never gathered
            "--autoplay-policy=no-user-gesture-required",
            "--disable-features=WebRtcHideLocalIpsWithMdns",  # real IPs, never xxx.local candidates
            "--remote-debugging-port=0", f"--user-data-dir={profile}",
            "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-extensions", "--mute-audio",
            "--disable-renderer-backgrounding", "--disable-background-timer-throttling", *extra, page]


def find_chromium(explicit):
    for name in ([explicit] if explicit else []) + ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="WHIP endpoint URL")
    p.add_argument("--token", default="")
    p.add_argument("--video", help="Y4M file for the fake camera (make_av_fixture.py)")
    p.add_argument("--audio", help="WAV file for the fake microphone")
    p.add_argument("--barcode-epoch-ms", type=float,
                   help="instead of the fake devices: a canvas showing the ms since this wall-clock epoch (latency benchmark)")
    p.add_argument("--size", default="1280x720", help="canvas size with --barcode-epoch-ms")
    p.add_argument("--capture-size", default="", help="WxH or WxH@FPS the page opens the fake camera at (default 640x360@30)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds to publish after connecting")
    p.add_argument("--video-codec", choices=("h264", "vp8"), default="h264")
    p.add_argument("--codec-only", action="store_true",
                   help="offer no other video codec than --video-codec (a server preferring H.264 then gets VP8)")
    p.add_argument("--simulcast", default="", help="simulcast layers as rid:scaleResolutionDownBy,... in sendEncodings order (e.g. h:2,f:1)")
    p.add_argument("--pause-layer", default="", help="rid:from:to: set that simulcast layer inactive from..to seconds after connecting")
    p.add_argument("--measure-flash", action="store_true",
                   help="the page times the fake devices' flashes and beeps as it receives them (result: source)")
    p.add_argument("--capture-time", action="store_true",
                   help="offer the abs-capture-time header extension (Chromium offers it only when a page asks)")
    p.add_argument("--post-via", choices=("direct", "proxy"), default="direct",
                   help="direct: the page fetch()es the WHIP URL (needs CORS); proxy: the helper server does")
    p.add_argument("--expect-status", type=int, help="exit 0 if the POST returns this status")
    p.add_argument("--exchange-token", metavar="FILE", help="a new participant token to exchange for --token while publishing")
    p.add_argument("--exchange-after", type=float, default=2.0, help="seconds after connecting to exchange it")
    p.add_argument("--chromium", default="", help="chromium binary (default: chromium on PATH)")
    p.add_argument("--extra-flag", action="append", default=[], help="extra chromium flag (repeatable)")
    p.add_argument("--timeout", type=float, help="hard limit (default duration + 60 s)")
    p.add_argument("--keep-profile", action="store_true", help="keep the temporary --user-data-dir")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s whip_chromium %(levelname)s %(message)s")
    if args.barcode_epoch_ms is None:
        for f in (args.video, args.audio):
            if not f or not os.path.isfile(f):
                LOG.error("missing file %s (give --video and --audio, or --barcode-epoch-ms)", f)
                return 1
    chromium = find_chromium(args.chromium)
    if not chromium:
        LOG.error("chromium not found (apt-get install -y chromium)")
        print(json.dumps({"ok": False, "error": "chromium not found"}), flush=True)
        return 1

    reports = queue.Queue()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(reports))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    page = f"http://127.0.0.1:{port}/whip_page.html?" + urllib.parse.urlencode(
        {"url": args.url, "token": args.token, "duration": args.duration, "codec": args.video_codec,
         "post": args.post_via, **({"simulcast": args.simulcast} if args.simulcast else {}),
         **({"pause": args.pause_layer} if args.pause_layer else {}),
         **({"measure": "flash"} if args.measure_flash else {}),
         **({"only": "1"} if args.codec_only else {}),
         **({"captime": "1"} if args.capture_time else {}),
         **({"exchange": open(args.exchange_token).read().strip(), "exchange_after": args.exchange_after}
            if args.exchange_token else {}),
         **({"capture": args.capture_size} if args.capture_size else {}),
         **({"barcode": args.barcode_epoch_ms, "size": args.size} if args.barcode_epoch_ms is not None else {})})
    profile = tempfile.mkdtemp(prefix="whip-chromium-")
    cmd = chromium_command(chromium, profile, page, [
        "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
        *([f"--use-file-for-fake-video-capture={os.path.abspath(args.video)}",
           f"--use-file-for-fake-audio-capture={os.path.abspath(args.audio)}"] if args.barcode_epoch_ms is None else []),
        *args.extra_flag])
    LOG.info("page %s", page)
    LOG.debug("cmd %s", " ".join(cmd))
    log_path = os.path.join(profile, "chromium.log")
    chrome_log = open(log_path, "w")
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=chrome_log, stderr=subprocess.STDOUT, start_new_session=True)

    stop = {"signal": False}

    def on_signal(signum, frame):
        stop["signal"] = True
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    limit = args.timeout or args.duration + 60
    events, final = {}, None
    while time.monotonic() - started < limit and not stop["signal"]:
        try:
            rep = reports.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None:
                LOG.error("chromium exited with %s before the final report", proc.returncode)
                break
            continue
        ev = rep.get("event")
        LOG.info("page: %s", json.dumps(rep)[:400])
        events.setdefault(ev, rep)
        if ev == "final":
            final = rep
            break

    # Stop chromium (its own process group, started above).
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=5)
    httpd.shutdown()
    chrome_log.close()

    if final is None:
        with open(log_path, errors="replace") as f:
            tail = f.read()[-2000:]
        LOG.error("no final report from the page; chromium log tail:\n%s", tail)
        out = {"ok": False, "error": "signal" if stop["signal"] else "timeout/no final report",
               "events": sorted(events), "times_ms": {k: round(v["t"], 1) for k, v in events.items() if "t" in v}}
        print(json.dumps(out), flush=True)
        if not args.keep_profile:
            shutil.rmtree(profile, ignore_errors=True)
        return 4
    info = final.get("info", {})
    out = {"ok": bool(final.get("ok")), "status": info.get("status"), "location": info.get("location"),
           "times_ms": {k: round(v, 1) for k, v in final.get("times", {}).items()},
           "time_origin_ms": info.get("time_origin_ms"),
           "connection_state": info.get("connection_state"), "selected_pair": info.get("selected_pair"),
           "video_codecs_available": info.get("video_codecs_available"), "codec_forced": info.get("codec_forced"),
           "outbound": info.get("outbound"), "delete_status": info.get("delete_status"),
           **({k: info[k] for k in ("exchange_status", "exchange_body", "exchange_error") if k in info}),
           "offer_candidates": info.get("offer_candidates"), "capture_time_offered": info.get("capture_time_offered"),
           **({"source": info.get("source")} if "source" in info else {}), "wall_s": round(time.monotonic() - started, 2)}
    if not final.get("ok"):
        out.update(stage=final.get("stage"), error=final.get("error"), body=final.get("body"))
    print(json.dumps(out), flush=True)
    if not args.keep_profile:
        shutil.rmtree(profile, ignore_errors=True)
    status = info.get("status")
    if args.expect_status is not None and status == args.expect_status:
        return 0
    if final.get("ok"):
        return 0
    if final.get("stage") == "post":
        return 2
    if final.get("stage") == "connect":
        return 3
    return 4 if status is None else 2


if __name__ == "__main__":
    sys.exit(main())
