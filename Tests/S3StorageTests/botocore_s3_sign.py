"""Signs S3 requests with botocore's own S3SigV4Auth (what boto3 and the AWS CLI use), so
the tests compare our signer's headers with the reference byte for byte.

stdin: JSON list of {method, url, headers: [[name, value]], body_b64, time, region, akid,
secret, token?}; stdout: JSON list of {authorization, content_sha256, amz_date}.
"""
import base64
import datetime
import json
import sys

import botocore.auth
from botocore.auth import S3SigV4Auth
from botocore.config import Config
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

results = []
for case in json.load(sys.stdin):
    request = AWSRequest(method=case["method"], url=case["url"], data=base64.b64decode(case["body_b64"]))
    # We always sign the payload (botocore skips it over HTTPS unless told).
    request.context["client_config"] = Config(s3={"payload_signing_enabled": True})
    for name, value in case["headers"]:
        request.headers[name] = value
    when = datetime.datetime.strptime(case["time"], "%Y%m%dT%H%M%SZ")
    auth = S3SigV4Auth(Credentials(case["akid"], case["secret"], case.get("token")), "s3", case["region"])
    botocore.auth.get_current_datetime = lambda *args, **kwargs: when
    auth.add_auth(request)
    results.append({"authorization": request.headers["Authorization"],
                    "content_sha256": request.headers["X-Amz-Content-SHA256"],
                    "amz_date": request.headers["X-Amz-Date"]})
json.dump(results, sys.stdout)
