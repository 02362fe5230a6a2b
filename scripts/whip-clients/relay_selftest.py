#!/usr/bin/env python3
"""Self-test of udp_impair_relay.py without any WebRTC: two UDP clients send 200 datagrams each
through the relay (5 % loss + 5 % reorder upstream) to a UDP echo socket, which answers each one.
Checks: each client gets its own upstream socket (the target sees two distinct source addresses),
replies reach the right client, and the same --seed gives the same drops/reorders.
Prints the findings and "OK"; exit 0 on success, 1 on failure. Takes about 5 s."""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(echo, seed):
    r = subprocess.Popen([sys.executable, os.path.join(HERE, "udp_impair_relay.py"), "--target",
                          "127.0.0.1:%d" % echo.getsockname()[1], "--seed", str(seed), "--loss", "0.05",
                          "--reorder", "0.05", "--direction", "up", "--duration", "30"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = json.loads(r.stdout.readline())["port"]
        clients = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
        seen = {}
        for i in range(400):
            clients[i % 2].sendto(b"%d:%d" % (i % 2, i), ("127.0.0.1", port))
            time.sleep(0.001)
        end = time.time() + 1.5
        while time.time() < end:
            try:
                data, src = echo.recvfrom(2000)
            except socket.timeout:
                continue
            seen.setdefault(data.split(b":")[0].decode(), set()).add("%s:%d" % src)
            echo.sendto(b"reply-" + data, src)
        replies = [0, 0]
        for k, c in enumerate(clients):
            c.settimeout(0.3)
            try:
                while True:
                    d, _ = c.recvfrom(2000)
                    if not d.startswith(b"reply-%d:" % k):
                        raise AssertionError(f"client {k} got someone else's reply {d!r}")
                    replies[k] += 1
            except socket.timeout:
                pass
        r.terminate()
        counters = json.loads(r.stdout.read().strip().splitlines()[-1])
        return {k: sorted(v) for k, v in seen.items()}, replies, (counters["up"]["dropped_loss"], counters["up"]["reordered"])
    finally:
        if r.poll() is None:
            r.kill()
        r.wait(5)


def main():
    argparse.ArgumentParser(description=__doc__).parse_args()
    echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind(("127.0.0.1", 0))
    echo.settimeout(0.2)
    echo.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    a, b, c = run(echo, 5), run(echo, 5), run(echo, 6)
    print("seed 5: upstream addresses per client", a[0], "replies", a[1], "drops/reorders", a[2])
    print("seed 5 again: drops/reorders", b[2], "; seed 6:", c[2])
    ok = (len(a[0].get("0", [])) == 1 and len(a[0].get("1", [])) == 1 and a[0]["0"] != a[0]["1"]
          and a[2] == b[2] and min(a[1]) > 150)
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
