"""Prepares a fresh moto_server for the S3 tests: an IAM user allowed s3:*, its access key,
the test bucket, then turns signature checking on (moto skips it until told otherwise).
Prints {"accessKeyId": ..., "secretAccessKey": ...} as JSON.

usage: moto_setup.py ENDPOINT BUCKET REGION [auth|open]

"open" leaves signature checking off: moto 5 rejects valid SigV4 signatures on
ListObjectsV2 whose prefix holds "/" (boto3's own requests fail the same way), so the list
tests run against an open server; our signing is checked against botocore and the auth tests.
"""
import json
import sys
import urllib.request

import boto3

endpoint, bucket, region = sys.argv[1:4]
mode = sys.argv[4] if len(sys.argv) > 4 else "auth"
session = boto3.session.Session(aws_access_key_id="AKIDSETUP00000000000", aws_secret_access_key="setup",
                                region_name=region)
iam = session.client("iam", endpoint_url=endpoint)
iam.create_user(UserName="compositor")
iam.put_user_policy(UserName="compositor", PolicyName="s3-all", PolicyDocument=json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
}))
key = iam.create_access_key(UserName="compositor")["AccessKey"]
s3 = session.client("s3", endpoint_url=endpoint)
if region == "us-east-1":
    s3.create_bucket(Bucket=bucket)
else:
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
# From here on every request must carry a valid signature from a known key.
if mode == "open":
    print(json.dumps({"accessKeyId": key["AccessKeyId"], "secretAccessKey": key["SecretAccessKey"]}))
    sys.exit(0)
request = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                 headers={"Content-Type": "application/octet-stream"})
urllib.request.urlopen(request).read()
print(json.dumps({"accessKeyId": key["AccessKeyId"], "secretAccessKey": key["SecretAccessKey"]}))
