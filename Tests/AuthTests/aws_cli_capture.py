"""Runs real `aws ivs-realtime` commands against a loopback server that records each
request exactly as it arrived (raw request target, header lines, body) and answers `{}`.

argv: access key id, secret, region. stdout: a JSON array of captured requests.
"""
import base64
import http.server
import json
import os
import subprocess
import sys
import threading

captured = []


class Recorder(http.server.BaseHTTPRequestHandler):
    def _record(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        captured.append({
            "method": self.command,
            "target": self.path,
            "headers": [[name, value] for name, value in self.headers.items()],
            "body_b64": base64.b64encode(body).decode(),
        })
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_DELETE = _record

    def log_message(self, *args):
        pass


def main():
    akid, secret, region = sys.argv[1:4]
    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    env = dict(os.environ, AWS_ACCESS_KEY_ID=akid, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION=region,
               AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null", AWS_MAX_ATTEMPTS="1")
    arn = f"arn:aws:ivs:{region}:123456789012:stage/AbCdEfGhIjKl"
    commands = [
        ["ivs-realtime", "list-compositions", "--max-results", "5"],
        ["ivs-realtime", "untag-resource", "--resource-arn", arn, "--tag-keys", "team", "cost center"],
        ["ivs-realtime", "tag-resource", "--resource-arn", arn, "--tags", "team=video ops"],
    ]
    for command in commands:
        subprocess.run(["aws", "--endpoint-url", endpoint, *command], env=env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    server.shutdown()
    json.dump(captured, sys.stdout)


main()
