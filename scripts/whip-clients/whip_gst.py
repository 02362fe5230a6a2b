#!/usr/bin/python3
"""WHIP publisher made with GStreamer 1.22 webrtcbin (driven through PyGObject); the HTTP part
of WHIP is done here because whipsink exists only in gst-plugins-rs (not packaged in Debian 12).

  videotestsrc pattern=solid-color -> x264enc tune=zerolatency -> rtph264pay -> webrtcbin sink_1
  audiotestsrc wave=sine           -> opusenc                 -> rtpopuspay -> webrtcbin sink_0

Run with Debian's /usr/bin/python3 (python3-gi, gir1.2-gst-plugins-bad-1.0); the pyenv python3
that has aiortc has no `gi`. libnice never gathers loopback candidates, so run it inside a
network namespace (netns_veth.sh) and give it the host side of the veth in --url:
  ./netns_veth.sh up whipns 10.201.0.1 10.201.0.2
  ip netns exec whipns /usr/bin/python3 whip_gst.py --url http://10.201.0.1:PORT/whip/x --token T

Non-trickle: waits for ice-gathering-state COMPLETE, POSTs the offer, expects 201 + Location,
sets the answer, publishes --duration seconds after the connection-state is CONNECTED, DELETEs.
SIGINT/SIGTERM stop early (still DELETE).

stdout: one JSON line {"status": 201, "location": ..., "connected_after_s": ..., "frames_sent": ...,
"audio_buffers_sent": ..., "ice_state": ..., "dtls_state": ..., "connection_state": ..., "delete_status": ...}
Exit status: 0 ok (or POST returned --expect-status), 1 setup error (gi/elements missing),
2 unexpected POST status, 3 never connected / failed, 4 HTTP transport error or global timeout.
"""
import argparse
import json
import logging
import signal
import sys
import threading
import os
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webrtc_http import http  # noqa: E402

LOG = logging.getLogger("whip_gst")

try:
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstWebRTC", "1.0")
    gi.require_version("GstSdp", "1.0")
    from gi.repository import GLib, Gst, GstSdp, GstWebRTC
except (ImportError, ValueError) as _exc:  # pragma: no cover
    GI_ERROR = _exc
else:
    GI_ERROR = None


class Publisher:
    def __init__(self, args):
        self.args = args
        self.loop = GLib.MainLoop()
        self.result = {"status": None, "location": None}
        self.exit_code = 0
        self.t_start = time.monotonic()
        self.t_connected = None
        self.counters = {"frames_sent": 0, "video_rtp_packets": 0, "audio_buffers_sent": 0}
        self.posted = False
        self.finishing = False
        r, g, b = args.color
        desc = (
            f"webrtcbin name=webrtc bundle-policy=max-bundle "
            f"audiotestsrc is-live=true wave=sine freq={args.tone_hz} volume=0.25 ! audioconvert ! audioresample ! "
            f"audio/x-raw,rate=48000,channels=1 ! opusenc bitrate=64000 frame-size=20 ! rtpopuspay pt=111 ! "
            f"application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000 ! queue name=aq "
            f"videotestsrc is-live=true pattern=solid-color foreground-color={0xff000000 | (r << 16) | (g << 8) | b} ! "
            f"video/x-raw,width={args.width},height={args.height},framerate={args.fps}/1 ! videoconvert ! queue ! "
            f"x264enc name=venc tune=zerolatency speed-preset=ultrafast bitrate={args.bitrate_kbps} "
            f"key-int-max={args.fps * 2} threads=1 ! video/x-h264,profile=constrained-baseline ! "
            f"rtph264pay name=vpay pt=102 config-interval=-1 aggregate-mode=zero-latency ! "
            f"application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000 ! queue name=vq"
        )
        if args.no_audio:
            desc = desc.replace(desc[desc.index("audiotestsrc"):desc.index("videotestsrc")], "")
        if args.no_video:
            desc = desc[:desc.index("videotestsrc")]
        LOG.debug("pipeline: %s", desc)
        self.pipe = Gst.parse_launch(desc)
        self.webrtc = self.pipe.get_by_name("webrtc")
        # Request sink pads explicitly so the m-line order is audio (mid 0), video (mid 1).
        for qname in ("aq", "vq"):
            q = self.pipe.get_by_name(qname)
            if q is None:
                continue
            sink = self.webrtc.request_pad_simple("sink_%u")
            if q.get_static_pad("src").link(sink) != Gst.PadLinkReturn.OK:
                raise RuntimeError(f"cannot link {qname} to webrtcbin {sink.get_name()}")
            trans = sink.get_property("transceiver")
            trans.set_property("direction", GstWebRTC.WebRTCRTPTransceiverDirection.SENDONLY)
        venc = self.pipe.get_by_name("venc")
        if venc:
            venc.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, self._count, "frames_sent")
            self.pipe.get_by_name("vpay").get_static_pad("src").add_probe(
                Gst.PadProbeType.BUFFER, self._count, "video_rtp_packets")
        aq = self.pipe.get_by_name("aq")
        if aq:
            aq.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, self._count, "audio_buffers_sent")
        self.webrtc.connect("on-negotiation-needed", self.on_negotiation_needed)
        self.webrtc.connect("notify::ice-gathering-state", self.on_gathering)
        self.webrtc.connect("notify::ice-connection-state", self.on_ice_state)
        self.webrtc.connect("notify::connection-state", self.on_conn_state)
        bus = self.pipe.get_bus()
        bus.add_signal_watch()
        bus.connect("message::error", self.on_error)

    def _count(self, pad, info, key):
        self.counters[key] += 1
        return Gst.PadProbeReturn.OK

    # ------------------------------------------------------------ negotiation
    def on_negotiation_needed(self, element):
        LOG.info("negotiation needed: creating the offer")
        promise = Gst.Promise.new_with_change_func(self.on_offer_created, None)
        element.emit("create-offer", None, promise)

    def on_offer_created(self, promise, _):
        promise.wait()
        reply = promise.get_reply()
        offer = reply.get_value("offer")
        self.webrtc.emit("set-local-description", offer, Gst.Promise.new())

    def on_gathering(self, element, _pspec):
        state = element.get_property("ice-gathering-state")
        LOG.info("ice-gathering-state %s", state.value_nick)
        if state == GstWebRTC.WebRTCICEGatheringState.COMPLETE and not self.posted:
            self.posted = True
            sdp = element.get_property("local-description").sdp.as_text()
            if self.args.offer_only:
                sys.stdout.write(sdp)
                sys.stdout.flush()
                GLib.idle_add(self.quit, 0)
                return
            threading.Thread(target=self.post, args=(sdp,), daemon=True).start()

    def post(self, sdp):
        LOG.info("offer gathered in %.2f s; POST %s", time.monotonic() - self.t_start, self.args.url)
        self.t_post = time.monotonic()
        try:
            status, headers, body = http("POST", self.args.url, self.args.token, sdp, timeout=self.args.http_timeout)
        except OSError as exc:
            self.result["error"] = f"POST failed: {exc}"
            GLib.idle_add(self.finish, 4)
            return
        GLib.idle_add(self.on_post_response, status, headers, body)

    def on_post_response(self, status, headers, body):
        self.result["status"] = status
        self.result["post_rtt_s"] = round(time.monotonic() - self.t_post, 3)
        if self.args.expect_status is not None and status == self.args.expect_status and status != 201:
            self.result["body"] = body
            self.finish(0)
            return False
        if status != 201:
            LOG.error("POST returned %s: %s", status, body[:500])
            self.result["body"] = body
            self.finish(2)
            return False
        loc = headers.get("location")
        self.result["location"] = urllib.parse.urljoin(self.args.url, loc) if loc else None
        self.result["location_header"] = loc
        res, msg = GstSdp.SDPMessage.new_from_text(body)
        if res != GstSdp.SDPResult.OK:
            self.result["error"] = "unparsable answer"
            self.finish(3)
            return False
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, msg)
        self.webrtc.emit("set-remote-description", answer, Gst.Promise.new())
        GLib.timeout_add(int(self.args.connect_timeout * 1000), self.on_connect_timeout)
        return False

    # ------------------------------------------------------------ state
    def on_ice_state(self, element, _pspec):
        LOG.info("ice-connection-state %s", element.get_property("ice-connection-state").value_nick)

    def on_conn_state(self, element, _pspec):
        state = element.get_property("connection-state")
        LOG.info("connection-state %s", state.value_nick)
        if state == GstWebRTC.WebRTCPeerConnectionState.CONNECTED and self.t_connected is None:
            self.t_connected = time.monotonic()
            self.result["connected_after_s"] = round(self.t_connected - self.t_start, 3)
            self.result["connected_after_post_s"] = round(self.t_connected - self.t_post, 3)
            LOG.info("connected; publishing for %.1f s", self.args.duration)
            GLib.timeout_add(int(self.args.duration * 1000), self.finish, 0)
        elif state in (GstWebRTC.WebRTCPeerConnectionState.FAILED, GstWebRTC.WebRTCPeerConnectionState.CLOSED) \
                and not self.finishing:
            GLib.idle_add(self.finish, 3)

    def on_connect_timeout(self):
        if self.t_connected is None and not self.finishing:
            LOG.error("not connected within %.1f s", self.args.connect_timeout)
            self.finish(3)
        return False

    def on_error(self, _bus, msg):
        err, dbg = msg.parse_error()
        LOG.error("pipeline error: %s (%s)", err, dbg)
        self.result["error"] = str(err)
        self.finish(3 if self.posted else 1)

    def dtls_state(self):
        try:
            trans = self.webrtc.emit("get-transceiver", 0)
            transport = trans.get_property("sender").get_property("transport")
            return transport.get_property("state").value_nick
        except Exception:  # noqa: BLE001
            return None

    def finish(self, code):
        if self.finishing:
            return False
        self.finishing = True
        self.exit_code = code
        self.result["ice_state"] = self.webrtc.get_property("ice-connection-state").value_nick
        self.result["connection_state"] = self.webrtc.get_property("connection-state").value_nick
        self.result["dtls_state"] = self.dtls_state()
        self.result.setdefault("connected_after_s", None)
        self.result.update(self.counters)
        self.result["published_s"] = round(time.monotonic() - self.t_connected, 3) if self.t_connected else 0.0
        if self.result.get("location"):
            threading.Thread(target=self._delete, daemon=True).start()
        else:
            self.quit(code)
        return False

    def _delete(self):
        try:
            st, _, _ = http("DELETE", self.result["location"], self.args.token, timeout=self.args.http_timeout)
            self.result["delete_status"] = st
        except OSError as exc:
            self.result["delete_status"] = None
            self.result["delete_error"] = str(exc)
        GLib.idle_add(self.quit, self.exit_code)

    def quit(self, code):
        self.exit_code = code
        self.loop.quit()
        return False

    def run(self):
        limit = self.args.timeout or (self.args.duration + self.args.connect_timeout + 2 * self.args.http_timeout + 20)

        def global_timeout():
            LOG.error("global timeout (%.0f s)", limit)
            self.result["error"] = f"global timeout {limit:.0f} s"
            self.finishing = True
            self.quit(4)
            return False
        GLib.timeout_add(int(limit * 1000), global_timeout)
        for sig in (signal.SIGINT, signal.SIGTERM):
            GLib.unix_signal_add(GLib.PRIORITY_HIGH, sig, self._on_signal)
        if self.pipe.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            LOG.error("cannot start the pipeline")
            return 1
        self.loop.run()
        self.pipe.set_state(Gst.State.NULL)
        if not self.args.offer_only:
            print(json.dumps(self.result), flush=True)
        return self.exit_code

    def _on_signal(self):
        LOG.info("signal: stopping")
        self.result["stopped_by_signal"] = True
        if self.t_connected is None and not self.result.get("location"):
            self.finish(3)
        else:
            self.finish(0)
        return True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--token", default="")
    p.add_argument("--color", default="0,0,255", help="R,G,B (default blue)")
    p.add_argument("--tone-hz", type=float, default=880.0)
    p.add_argument("--duration", type=float, default=10.0, help="seconds to publish after connecting")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=360)
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--bitrate-kbps", type=int, default=800)
    p.add_argument("--expect-status", type=int)
    p.add_argument("--offer-only", action="store_true", help="print the gathered offer and exit")
    p.add_argument("--no-audio", action="store_true")
    p.add_argument("--no-video", action="store_true")
    p.add_argument("--connect-timeout", type=float, default=15.0)
    p.add_argument("--http-timeout", type=float, default=10.0)
    p.add_argument("--timeout", type=float, help="global hard limit (default duration + connect + 40 s)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s whip_gst %(levelname)s %(message)s")
    try:
        args.color = tuple(int(c) for c in args.color.split(","))
        assert len(args.color) == 3
    except (ValueError, AssertionError):
        p.error("--color must be R,G,B")
    if args.no_audio and args.no_video:
        p.error("nothing to publish")
    if GI_ERROR is not None:
        LOG.error("PyGObject/GStreamer introspection missing (%s); run with /usr/bin/python3, "
                  "apt-get install python3-gi gir1.2-gst-plugins-bad-1.0", GI_ERROR)
        print(json.dumps({"status": None, "error": f"gi missing: {GI_ERROR}"}), flush=True)
        return 1
    Gst.init(None)
    missing = [e for e in ("webrtcbin", "nicesrc", "x264enc", "opusenc", "rtph264pay", "rtpopuspay",
                           "videotestsrc", "audiotestsrc", "dtlssrtpenc")
               if Gst.ElementFactory.find(e) is None]
    if missing:
        LOG.error("GStreamer elements missing: %s", missing)
        print(json.dumps({"status": None, "error": f"elements missing: {missing}"}), flush=True)
        return 1
    try:
        return Publisher(args).run()
    except Exception as exc:  # noqa: BLE001
        LOG.exception("internal error")
        print(json.dumps({"status": None, "error": repr(exc)}), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
