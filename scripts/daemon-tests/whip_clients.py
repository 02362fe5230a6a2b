"""The WHIP clients the daemon tests drive, shared by every test module that needs one:
aiortc (scripts/whip-clients/whip_aiortc.py) and the other scripted clients, raw WHIP POSTs,
participant tokens from the daemon's CLI. It imports only media_check and the standard
library, so test modules import it (and each other) without cycles."""
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import media_check  # noqa: E402

CLIENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "whip-clients")


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def token(d, stage_arn, user, capabilities=("PUBLISH",), attributes=None):
    args = ["create-participant-token", "--stage-arn", stage_arn, "--user-id", user, "--capabilities", *capabilities]
    if attributes:
        args += ["--attributes", json.dumps(attributes)]
    return d.cli(*args)["participantToken"]


def whip_post(url, token_text, offer, content_type="application/sdp"):
    """(status, headers, body) of a raw WHIP POST."""
    request = urllib.request.Request(url, data=offer.encode(), method="POST", headers={
        "Content-Type": content_type, **({"Authorization": f"Bearer {token_text}"} if token_text else {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


class AiortcPublisher:
    """scripts/whip-clients/whip_aiortc.py: a solid colour and a sine tone over WHIP."""

    def __init__(self, url, token_text, colour, tone, workdir, name, codec="h264", duration=60, extra=()):
        r, g, b = media_check.PALETTE[colour]
        self.log_path = os.path.join(workdir, f"whip-{name}.log")
        self.log = open(self.log_path, "w")
        command = [sys.executable, os.path.join(CLIENTS, "whip_aiortc.py"), "--url", url, "--token", token_text,
                   "--video-codec", codec, "--color", f"{r},{g},{b}", "--tone-hz", str(tone), "--duration", str(duration),
                   "--width", "320", "--height", "240", *extra]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, text=True, start_new_session=True)

    def result(self, timeout=120):
        out, _ = self.process.communicate(timeout=timeout)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else {"exit": self.process.returncode, "stdout": out}

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self):
        """SIGINT: the client DELETEs its WHIP resource and exits."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-3000:]


def whip_publisher(d, stage_arn, user, script, args, workdir, name):
    token = d.cli("create-participant-token", "--stage-arn", stage_arn, "--user-id", user,
                  "--capabilities", "PUBLISH")["participantToken"]
    whip_url = d.cli("get-stage", "--arn", stage_arn)["stage"]["endpoints"]["whip"]
    log = open(os.path.join(workdir, f"{name}.log"), "w")
    process = subprocess.Popen([sys.executable, os.path.join(CLIENTS, script), "--url", whip_url, "--token", token["token"]] + args,
                               stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    return token["participantId"], process, log


def whip_result(process, log, limit):
    try:
        out, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate(timeout=10)
    log.close()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}
