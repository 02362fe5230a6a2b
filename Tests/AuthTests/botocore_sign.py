"""Signs requests with botocore exactly as the AWS CLI does, for the Auth tests.

stdin: a JSON array of cases; stdout: a JSON array of signed requests.
  {"kind": "client", "operation": "TagResource", "params": {...}, ...common}
      a real ivs-realtime client call, captured before it is sent;
  {"kind": "raw", "method": "POST", "url": "...", "headers": {...}, "body": "...", ...common}
      botocore's SigV4Auth.add_auth on a hand-made AWSRequest.
common: "time" (ISO, UTC), "endpoint", "region", "akid", "secret".
Each result: method, url, headers [[name, value]...], body_b64, canonical_request, string_to_sign.
"""
import base64
import datetime
import json
import sys

import botocore.auth
import botocore.session
from botocore.awsrequest import AWSRequest, AWSResponse
from botocore.credentials import Credentials

captured = {}
_canonical = botocore.auth.SigV4Auth.canonical_request
_sts = botocore.auth.SigV4Auth.string_to_sign


def canonical_request(self, request):
    text = _canonical(self, request)
    captured["canonical_request"] = text
    return text


def string_to_sign(self, request, canonical):
    text = _sts(self, request, canonical)
    captured["string_to_sign"] = text
    return text


botocore.auth.SigV4Auth.canonical_request = canonical_request
botocore.auth.SigV4Auth.string_to_sign = string_to_sign


def fix_time(iso):
    moment = datetime.datetime.fromisoformat(iso)
    botocore.auth.get_current_datetime = lambda *args, **kwargs: moment


def body_bytes(body):
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    return body.read() if hasattr(body, "read") else bytes(body)


def result(method, url, headers, body):
    out = dict(captured)
    out.update(
        method=method,
        url=url,
        headers=[[k, v.decode() if isinstance(v, bytes) else v] for k, v in headers.items()],
        body_b64=base64.b64encode(body_bytes(body)).decode(),
    )
    return out


class _Raw:
    def stream(self, **kwargs):
        yield b"{}"


def client_case(case):
    session = botocore.session.get_session()
    client = session.create_client(
        "ivs-realtime",
        region_name=case["region"],
        endpoint_url=case["endpoint"],
        aws_access_key_id=case["akid"],
        aws_secret_access_key=case["secret"],
    )
    sent = {}

    def before_send(request, **kwargs):
        sent["value"] = result(request.method, request.url, request.headers, request.body)
        return AWSResponse(request.url, 200, {}, _Raw())

    client.meta.events.register("before-send.ivs-realtime.*", before_send)
    method = botocore.xform_name(case["operation"])
    try:
        getattr(client, method)(**case["params"])
    except Exception:  # the fake response may not parse; the request was captured first
        pass
    return sent["value"]


def raw_case(case):
    request = AWSRequest(method=case["method"], url=case["url"], headers=case.get("headers", {}),
                         data=case.get("body", "").encode("utf-8"))
    botocore.auth.SigV4Auth(Credentials(case["akid"], case["secret"]), "ivs", case["region"]).add_auth(request)
    return result(request.method, request.url, request.headers, request.body)


def main():
    outputs = []
    for case in json.load(sys.stdin):
        captured.clear()
        fix_time(case["time"])
        outputs.append(client_case(case) if case["kind"] == "client" else raw_case(case))
    json.dump(outputs, sys.stdout)


main()
