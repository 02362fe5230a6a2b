#!/usr/bin/env python3
"""Seeded user-space UDP relay with impairment (there is no tc netem on this machine).

  publisher --UDP--> [listen IP:PORT]  relay  [one upstream socket per client] --UDP--> target IP:PORT
  publisher <------- [listen socket]   relay  <------- replies on that client's upstream socket

Every distinct client source address gets its own upstream socket (bound to --upstream-bind,
ephemeral port), so the server behind (the WHIP daemon's media port) sees one distinct
address per publisher and can tell them apart; its replies on that socket go back to that
client. Use: make the daemon advertise the relay's listen port (its "advertised address"
setting) and point --target at the daemon's real UDP port.

Impairment, applied independently per direction (--direction both|up|down; "up" is client->target):
  --loss P              drop each datagram with probability P
  --reorder P           hold each (non-dropped) datagram back by --reorder-delay-ms with prob. P,
                        so the following ones overtake it
  --jitter-ms J         add a uniform 0..J ms delay to every datagram (this also reorders)
  --outage-at S --outage-for D   drop 100 % both ways for t in [S, S+D) (t = seconds since start,
                        or since the first datagram with --outage-from first-packet)
Random decisions come from random.Random(seed) per direction (seed, seed+1), so one packet
sequence always gets the same drops.

stdout: a first line {"event": "listening", "port": P, ...} once bound, and on exit
(SIGTERM, SIGINT, --duration) one JSON line of counters:
  {"up": {"received": .., "forwarded": .., "dropped_loss": .., "dropped_outage": .., "reordered": ..},
   "down": {...}, "clients": N, "uptime_s": ..}
Exit status: 0 normal end, 1 setup error (bind failure, bad arguments).
"""
import argparse
import asyncio
import json
import logging
import random
import signal
import sys
import time

LOG = logging.getLogger("udp_impair_relay")


def hostport(text):
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def set_buffers(transport, size=1 << 20):
    """Small datagrams cost ~1 KB of socket buffer each; the default 208 KB overflows in bursts."""
    import socket
    sock = transport.get_extra_info("socket")
    if sock is not None:
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, size)
            except OSError:
                pass


class Impairment:
    def __init__(self, name, args, seed, t0):
        self.name = name
        self.args = args
        self.rng = random.Random(seed)
        self.t0 = t0
        self.active = args.direction in ("both", name)
        self.c = {"received": 0, "bytes": 0, "forwarded": 0, "dropped_loss": 0, "dropped_outage": 0,
                  "reordered": 0, "send_errors": 0}

    def decide(self, now):
        """None to drop, else a delay in seconds (0 = send now)."""
        self.c["received"] += 1
        a = self.args
        start = self.t0["t"]
        if a.outage_for > 0 and start is not None and a.outage_at <= now - start < a.outage_at + a.outage_for:
            self.c["dropped_outage"] += 1
            return None
        if not self.active:
            return 0.0
        # Always draw the same number of random values per datagram: deterministic streams.
        r_loss, r_reorder, r_jitter = self.rng.random(), self.rng.random(), self.rng.random()
        if r_loss < a.loss:
            self.c["dropped_loss"] += 1
            return None
        delay = r_jitter * a.jitter_ms / 1000.0 if a.jitter_ms > 0 else 0.0
        if r_reorder < a.reorder:
            self.c["reordered"] += 1
            delay += a.reorder_delay_ms / 1000.0
        return delay


class Relay:
    def __init__(self, args):
        self.args = args
        self.target = hostport(args.target)
        self.clients = {}  # client addr -> upstream transport
        self.pending = {}  # client addr -> list of datagrams awaiting the upstream socket
        self.t0 = {"t": None if args.outage_from == "first-packet" else time.monotonic()}
        self.up = Impairment("up", args, args.seed, self.t0)
        self.down = Impairment("down", args, args.seed + 1, self.t0)
        self.listen_transport = None
        self.started = time.monotonic()

    def _send(self, transport, data, addr, imp):
        try:
            if addr is None:
                transport.sendto(data)
            else:
                transport.sendto(data, addr)
            imp.c["forwarded"] += 1
        except Exception:  # noqa: BLE001
            imp.c["send_errors"] += 1

    def schedule(self, imp, transport, data, addr=None):
        now = time.monotonic()
        if self.t0["t"] is None:
            self.t0["t"] = now
        imp.c["bytes"] += len(data)
        delay = imp.decide(now)
        if delay is None:
            return
        if delay <= 0:
            self._send(transport, data, addr, imp)
        else:
            asyncio.get_running_loop().call_later(delay, self._send, transport, data, addr, imp)

    # client -> relay
    def from_client(self, data, addr):
        up = self.clients.get(addr)
        if up is not None:
            self.schedule(self.up, up, data)
            return
        if addr in self.pending:
            self.pending[addr].append(data)
            return
        if len(self.clients) >= self.args.max_clients:
            LOG.warning("dropping %s: --max-clients reached", addr)
            return
        self.pending[addr] = [data]
        asyncio.ensure_future(self.open_upstream(addr))

    async def open_upstream(self, addr):
        loop = asyncio.get_running_loop()
        relay = self

        class Upstream(asyncio.DatagramProtocol):
            def datagram_received(self, data, _src):
                if relay.listen_transport is not None:
                    relay.schedule(relay.down, relay.listen_transport, data, addr)

            def error_received(self, exc):
                LOG.debug("upstream for %s: %s", addr, exc)

        try:
            transport, _ = await loop.create_datagram_endpoint(
                Upstream, local_addr=(self.args.upstream_bind, 0), remote_addr=self.target)
        except OSError as exc:
            LOG.error("cannot open an upstream socket for %s: %s", addr, exc)
            self.pending.pop(addr, None)
            return
        set_buffers(transport)
        self.clients[addr] = transport
        LOG.info("client %s:%d -> upstream %s:%d -> %s:%d", *addr[:2], *transport.get_extra_info("sockname")[:2],
                 *self.target)
        for data in self.pending.pop(addr, []):
            self.schedule(self.up, transport, data)

    def counters(self):
        return {"up": self.up.c, "down": self.down.c, "clients": len(self.clients),
                "client_map": {f"{a[0]}:{a[1]}": "%s:%d" % t.get_extra_info("sockname")[:2]
                               for a, t in self.clients.items()},
                "uptime_s": round(time.monotonic() - self.started, 3), "seed": self.args.seed}


async def amain(args):
    relay = Relay(args)
    loop = asyncio.get_running_loop()

    class Listen(asyncio.DatagramProtocol):
        def datagram_received(self, data, addr):
            relay.from_client(data, addr)

        def error_received(self, exc):
            LOG.debug("listen socket: %s", exc)

    host, port = hostport(args.listen)
    try:
        transport, _ = await loop.create_datagram_endpoint(Listen, local_addr=(host, port))
    except OSError as exc:
        LOG.error("cannot bind %s:%d: %s", host, port, exc)
        print(json.dumps({"event": "error", "error": str(exc)}), flush=True)
        return 1
    set_buffers(transport)
    relay.listen_transport = transport
    bound = transport.get_extra_info("sockname")
    print(json.dumps({"event": "listening", "host": bound[0], "port": bound[1], "target": args.target}), flush=True)
    LOG.info("relay %s:%d -> %s loss=%.3f reorder=%.3f/%dms jitter=%dms outage=%s+%s seed=%d", bound[0], bound[1],
             args.target, args.loss, args.reorder, args.reorder_delay_ms, args.jitter_ms, args.outage_at,
             args.outage_for, args.seed)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    async def stats_writer():
        while True:
            await asyncio.sleep(args.stats_every)
            with open(args.stats_file + ".tmp", "w") as f:
                json.dump(relay.counters(), f)
            import os
            os.replace(args.stats_file + ".tmp", args.stats_file)
    writer = asyncio.ensure_future(stats_writer()) if args.stats_file else None
    try:
        await asyncio.wait_for(stop.wait(), args.duration)
    except asyncio.TimeoutError:
        pass
    if writer:
        writer.cancel()
    print(json.dumps(relay.counters()), flush=True)
    transport.close()
    for t in relay.clients.values():
        t.close()
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default="127.0.0.1:0", help="IP:PORT to listen on (port 0 = any, printed)")
    p.add_argument("--target", required=True, help="IP:PORT to forward to (the daemon's real UDP port)")
    p.add_argument("--upstream-bind", default="127.0.0.1", help="local address of the per-client upstream sockets")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--loss", type=float, default=0.0)
    p.add_argument("--reorder", type=float, default=0.0)
    p.add_argument("--reorder-delay-ms", type=float, default=30.0)
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--direction", choices=("both", "up", "down"), default="both",
                   help="which direction loss/reorder/jitter apply to (outages are always both)")
    p.add_argument("--outage-at", type=float, default=0.0)
    p.add_argument("--outage-for", type=float, default=0.0)
    p.add_argument("--outage-from", choices=("start", "first-packet"), default="start")
    p.add_argument("--max-clients", type=int, default=64)
    p.add_argument("--duration", type=float, default=3600.0, help="exit after S seconds (default 3600)")
    p.add_argument("--stats-file", help="also write the counters JSON to this file every --stats-every s")
    p.add_argument("--stats-every", type=float, default=1.0)
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    for name in ("loss", "reorder"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            p.error(f"--{name} must be within 0..1")
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s udp_impair_relay %(levelname)s %(message)s")
    try:
        return asyncio.run(amain(args))
    except (ValueError, OSError) as exc:
        LOG.error("%s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
