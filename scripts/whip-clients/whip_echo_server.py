#!/usr/bin/env python3
"""A minimal WHIP *server* made with aiortc, to exercise the WHIP clients in this folder without
the real daemon. It receives (never sends) media and counts it per track.

HTTP (plain, HTTP/1.1, one request per connection):
  OPTIONS *             -> 204 + CORS (Allow-Origin *, Allow-Headers Authorization, Content-Type,
                           Expose-Headers Location, ETag, Link) -- needed by the chromium page
  POST <any path>       -> 201 Created, Location: /resource/<id>, Content-Type: application/sdp,
                           body = answer.  401 if --token is set and the bearer differs,
                           415 if Content-Type is not application/sdp, 400 on a bad offer.
  DELETE /resource/<id> -> 200 (closes the peer connection), 404 if unknown
  PATCH  /resource/<id> -> 405
  GET /stats            -> JSON: every session with per-track frame counts, codec, ICE/DTLS state
  GET /health           -> 200 "ok"
  (--detect-sync adds per track "flash_onsets"/"beep_onsets": arrival times of flashes and beeps)

Started, it prints one JSON line {"event": "listening", "port": P, "url": "http://.../whip/endpoint"}
to stdout; on SIGTERM/SIGINT (or --exit-after) it prints the final /stats JSON as one line.

Relay / advertised-address mode (to test udp_impair_relay.py the way the daemon will be used):
  --udp-port N         bind the ICE host candidate on UDP port N (one session at a time)
  --advertise IP:PORT  rewrite the answer's candidate to IP:PORT (the relay), and replace the
                       client's candidates by an unreachable one (203.0.113.1:9) so this full-ICE
                       aiortc server does not reach the client directly around the relay (the
                       daemon is ICE-lite and never sends checks; this mimics that).
"""
import argparse
import asyncio
import json
import logging
import re
import signal
import sys
import time
import uuid

LOG = logging.getLogger("whip_echo")


def pin_ice_host_addresses(host_ip):
    """See whip_aiortc.py: aioice skips 127.0.0.1; pin the host candidate address(es)."""
    if host_ip in (None, "", "all"):
        return
    import aioice.ice
    addresses = [a.strip() for a in host_ip.split(",") if a.strip()]
    aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: list(addresses)


def allow_rsa_dtls_peers():
    """aiortc 1.16 restricts DTLS to ECDHE-ECDSA cipher suites (RTCCertificate._create_ssl_context),
    but GStreamer 1.22's dtls elements use an RSA-2048 certificate, so a GStreamer client's
    handshake dies with "Fatal SSL error" (gstdtlsdec.c process_buffer). The cipher list only
    constrains the *server's* certificate type; adding ECDHE-RSA suites lets an aiortc peer
    talk to an RSA peer while keeping its own ECDSA certificate."""
    from aiortc.rtcdtlstransport import RTCCertificate
    original = RTCCertificate._create_ssl_context

    def patched(self, srtp_profiles):
        ctx = original(self, srtp_profiles)
        ctx.set_cipher_list(b"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-SHA:"
                            b"ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:"
                            b"ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA")
        return ctx
    RTCCertificate._create_ssl_context = patched


class Session:
    def __init__(self, sid, pc, remote):
        self.id = sid
        self.pc = pc
        self.remote = remote
        self.created = time.time()
        self.tracks = {}  # "kind:N" -> dict
        self.connected_after_s = None
        self.closed = False
        self.codecs = {}

    def stats(self):
        dtls = None
        for t in self.pc.getTransceivers():
            if t.receiver and t.receiver.transport:
                dtls = t.receiver.transport.state
        return {"id": self.id, "remote": self.remote, "connection_state": self.pc.connectionState,
                "ice_state": self.pc.iceConnectionState, "dtls_state": dtls, "closed": self.closed,
                "connected_after_s": self.connected_after_s, "codecs": self.codecs,
                "tracks": self.tracks, "age_s": round(time.time() - self.created, 2)}


class Server:
    def __init__(self, args):
        self.args = args
        self.sessions = {}
        self.lock = asyncio.Lock()  # serialise offer handling (needed for --udp-port pinning)
        self.requests = 0

    # ---------------------------------------------------------------- media
    async def consume(self, session, track):
        key = f"{track.kind}:{len([k for k in session.tracks if k.startswith(track.kind)])}"
        info = {"kind": track.kind, "frames": 0, "first_frame_after_s": None, "last_frame_at": None}
        session.tracks[key] = info
        try:
            while True:
                frame = await track.recv()
                info["frames"] += 1
                now = time.time()
                if info["first_frame_after_s"] is None:
                    info["first_frame_after_s"] = round(now - session.created, 3)
                    if track.kind == "video":
                        info["width"], info["height"] = frame.width, frame.height
                    else:
                        info["sample_rate"] = frame.sample_rate
                info["last_frame_at"] = round(now, 3)
                if self.args.detect_sync:
                    self.detect(info, track.kind, frame, now)
                if track.kind == "video" and info["frames"] % 30 == 15 and self.args.sample_colour:
                    try:  # mean colour of the centre, cheap-ish (every 30th frame)
                        rgb = frame.to_ndarray(format="rgb24")
                        h, w = rgb.shape[:2]
                        c = rgb[h // 4:3 * h // 4, w // 4:3 * w // 4].reshape(-1, 3).mean(axis=0)
                        info["centre_rgb"] = [int(x) for x in c]
                    except Exception:  # noqa: BLE001
                        pass
        except Exception as exc:  # MediaStreamError at the end
            LOG.info("session %s track %s ended after %d frames (%s)", session.id, key, info["frames"],
                     type(exc).__name__)

    def detect(self, info, kind, frame, now):
        """--detect-sync: arrival times (time.time()) of white flashes (mean luma > 200 while
        the previous frame was not) and beeps (audio peak > 0.5 full scale while the previous
        frame was quieter; the tone is 0.25, the beep 0.8). Lists keep the last 50 onsets."""
        import numpy as np
        if kind == "video":
            plane = frame.planes[0]
            rows = np.frombuffer(bytes(plane), np.uint8).reshape(plane.height, plane.line_size)
            luma = rows[::4, :plane.width:4].mean()  # skip the line padding
            on = luma > 200
            key = "flash_onsets"
        else:
            pcm = frame.to_ndarray()
            peak = float(np.abs(pcm).max()) / (32768.0 if pcm.dtype == np.int16 else 1.0)
            on = peak > 0.5
            key = "beep_onsets"
        if on and not info.get("_on"):
            info.setdefault(key, []).append(round(now, 3))
            del info[key][:-50]
        info["_on"] = bool(on)

    # ---------------------------------------------------------------- signalling
    async def handle_offer(self, offer, remote):
        from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
        sid = uuid.uuid4().hex[:12]
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        session = Session(sid, pc, remote)

        @pc.on("track")
        def on_track(track):
            LOG.info("session %s: %s track", sid, track.kind)
            asyncio.ensure_future(self.consume(session, track))

        @pc.on("connectionstatechange")
        async def on_state():
            LOG.info("session %s: connectionState=%s", sid, pc.connectionState)
            if pc.connectionState == "connected" and session.connected_after_s is None:
                session.connected_after_s = round(time.time() - session.created, 3)

        if self.args.advertise:
            offer = re.sub(r"a=candidate:.*\r\n", "", offer)
            offer = re.sub(r"(m=[^\r\n]*\r\n)", r"\1a=candidate:1 1 udp 1 203.0.113.1 9 typ host\r\n", offer)
        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
        for t in pc.getTransceivers():
            t.direction = "recvonly"
        answer = await pc.createAnswer()
        loop = asyncio.get_running_loop()
        if self.args.udp_port:
            # aioice binds host candidates with loop.create_datagram_endpoint(local_addr=(ip, 0));
            # for the duration of this gathering, turn port 0 into --udp-port.
            original = loop.create_datagram_endpoint

            def pinned(factory, local_addr=None, **kw):
                if local_addr and local_addr[1] == 0:
                    local_addr = (local_addr[0], self.args.udp_port)
                return original(factory, local_addr=local_addr, **kw)
            loop.create_datagram_endpoint = pinned
            try:
                await pc.setLocalDescription(answer)
            finally:
                del loop.create_datagram_endpoint
        else:
            await pc.setLocalDescription(answer)
        sdp = pc.localDescription.sdp
        if self.args.advertise:
            ip, port = self.args.advertise.rsplit(":", 1)
            sdp = re.sub(r"(a=candidate:\S+ \d+ udp \d+ )\S+ \d+( typ host)", rf"\g<1>{ip} {port}\2", sdp)
        for m in re.finditer(r"m=(audio|video) \d+ \S+ (\d+)", sdp):
            pt = m.group(2)
            rtpmap = re.search(rf"a=rtpmap:{pt} ([^\r\n]+)", sdp)
            session.codecs[m.group(1)] = rtpmap.group(1) if rtpmap else pt
        self.sessions[sid] = session
        LOG.info("session %s created for %s: %s", sid, remote, session.codecs)
        return sid, sdp

    async def close_session(self, sid):
        session = self.sessions[sid]
        session.closed = True
        await asyncio.wait_for(session.pc.close(), 5)

    def stats(self):
        return {"requests": self.requests, "sessions": [s.stats() for s in self.sessions.values()]}

    async def serve_client(self, reader, writer):
        remote = "%s:%s" % writer.get_extra_info("peername")[:2]
        try:
            status, headers, body = await asyncio.wait_for(self.handle_http(reader, remote), 30)
        except Exception as exc:  # noqa: BLE001
            LOG.exception("request from %s failed", remote)
            status, headers, body = 500, {"Content-Type": "text/plain"}, f"error: {exc}"
        cors = {"Access-Control-Allow-Origin": "*",
                "Access-Control-Allow-Methods": "POST, DELETE, OPTIONS, PATCH",
                "Access-Control-Allow-Headers": "Authorization, Content-Type, If-Match",
                "Access-Control-Expose-Headers": "Location, ETag, Link",
                "Connection": "close"}
        data = body.encode() if isinstance(body, str) else body
        head = f"HTTP/1.1 {status} {STATUS_TEXT.get(status, 'Status')}\r\n"
        for k, v in {**cors, **headers, "Content-Length": str(len(data))}.items():
            head += f"{k}: {v}\r\n"
        writer.write(head.encode() + b"\r\n" + data)
        try:
            await asyncio.wait_for(writer.drain(), 10)
        finally:
            writer.close()

    async def handle_http(self, reader, remote):
        request_line = (await reader.readline()).decode(errors="replace").strip()
        if not request_line:
            return 400, {}, ""
        method, target, _ = (request_line.split(" ") + ["", ""])[:3]
        headers = {}
        while True:
            line = (await reader.readline()).decode(errors="replace")
            if line in ("\r\n", "\n", ""):
                break
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        body = b""
        if int(headers.get("content-length", "0") or 0):
            body = await reader.readexactly(int(headers["content-length"]))
        self.requests += 1
        path = target.split("?")[0]
        LOG.info("%s %s %s from %s", method, path, headers.get("content-type", ""), remote)
        if method == "OPTIONS":
            return 204, {}, ""
        if method == "GET" and path == "/stats":
            return 200, {"Content-Type": "application/json"}, json.dumps(self.stats())
        if method == "GET" and path == "/health":
            return 200, {"Content-Type": "text/plain"}, "ok"
        if path.startswith("/resource/"):
            sid = path[len("/resource/"):]
            if sid not in self.sessions or self.sessions[sid].closed:
                return 404, {"Content-Type": "text/plain"}, "no such resource"
            if method == "DELETE":
                await self.close_session(sid)
                return 200, {}, ""
            return 405, {"Allow": "DELETE"}, ""
        if method != "POST":
            return 405, {"Allow": "POST, OPTIONS"}, ""
        if self.args.token:
            auth = headers.get("authorization", "")
            if auth != f"Bearer {self.args.token}":
                return 401, {"Content-Type": "text/plain", "WWW-Authenticate": "Bearer"}, "Bearer token missing or wrong"
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/sdp":
            return 415, {"Content-Type": "text/plain"}, "Content-Type must be application/sdp"
        offer = body.decode(errors="replace")
        if "m=" not in offer:
            return 400, {"Content-Type": "text/plain"}, "not an SDP offer"
        async with self.lock:
            try:
                sid, answer = await asyncio.wait_for(self.handle_offer(offer, remote), 15)
            except Exception as exc:  # noqa: BLE001
                LOG.exception("bad offer")
                return 400, {"Content-Type": "text/plain"}, f"bad offer: {exc}"
        return 201, {"Location": f"/resource/{sid}", "Content-Type": "application/sdp", "ETag": f'"{sid}"'}, answer


STATUS_TEXT = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
               404: "Not Found", 405: "Method Not Allowed", 415: "Unsupported Media Type", 500: "Internal Server Error"}


async def amain(args):
    pin_ice_host_addresses(args.host_ip)
    if not args.ecdsa_only:
        allow_rsa_dtls_peers()
    server = Server(args)
    srv = await asyncio.start_server(server.serve_client, args.bind, args.port)
    port = srv.sockets[0].getsockname()[1]
    host = args.bind if args.bind not in ("0.0.0.0", "") else "127.0.0.1"
    print(json.dumps({"event": "listening", "port": port, "url": f"http://{host}:{port}/whip/endpoint"}), flush=True)
    LOG.info("WHIP echo server on %s:%d (ICE host %s)", args.bind, port, args.host_ip)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), args.exit_after)
    except asyncio.TimeoutError:
        pass
    srv.close()
    print(json.dumps(server.stats()), flush=True)
    for sid, s in list(server.sessions.items()):
        if not s.closed:
            try:
                await asyncio.wait_for(s.pc.close(), 3)
            except Exception:  # noqa: BLE001
                pass
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bind", default="0.0.0.0", help="HTTP bind address")
    p.add_argument("--port", type=int, default=0, help="HTTP port (0 = any; printed)")
    p.add_argument("--token", default="", help="require this bearer token (default: accept any)")
    p.add_argument("--host-ip", default="127.0.0.1",
                   help="ICE host candidate address(es), comma-separated; 'all' = aioice default")
    p.add_argument("--udp-port", type=int, default=0, help="bind the ICE candidate to this UDP port")
    p.add_argument("--advertise", default="", help="IP:PORT to put in the answer's candidate (a relay)")
    p.add_argument("--ecdsa-only", action="store_true",
                   help="keep aiortc's ECDHE-ECDSA-only DTLS ciphers (GStreamer's RSA certificate then fails)")
    p.add_argument("--detect-sync", action="store_true",
                   help="record arrival times of white flashes and loud beeps (A/V sync of --flash-every)")
    p.add_argument("--sample-colour", action="store_true", help="record the mean centre colour of video")
    p.add_argument("--exit-after", type=float, default=3600.0, help="hard limit in seconds (default 3600)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s whip_echo %(levelname)s %(message)s")
    if not args.verbose:
        for noisy in ("aioice", "aiortc"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return asyncio.run(amain(args))
    except Exception:  # noqa: BLE001
        LOG.exception("fatal")
        return 1


if __name__ == "__main__":
    sys.exit(main())
