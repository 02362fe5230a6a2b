#!/usr/bin/env python3
"""Model-driven conformance of `stage-compositor serve` with botocore's ivs-realtime model.

Everything the one test, `model_conformance`, sends is generated from the model botocore ships
(`get_service_model("ivs-realtime")`), so a botocore update that adds an operation, a member or
a constraint changes what is sent without an edit here:

  1. every operation is called; none may answer 404 UnknownOperation or 5xx;
  2. valid inputs from every input shape: required members only, every member at its maximum,
     and one input per enum and boolean value; members that name a resource get a real one
     created first (stages, configurations, a public key, a live session with RTMP publishers);
  3. round trips: what Create/Update/Start/Import/Tag accepted is what they, Get and List return,
     with the documented defaults filled where IVS fills them (ECHOED_DEFAULTS);
  4. invalid inputs, each constraint of each member broken alone (length, pattern, range, enum,
     required, JSON type, list and map size, the cross-member rules the model states in prose):
     400 ValidationException in the IVS error shape;
  5. pagination of every List operation; 6. tags; 7. SigV4 on (signed, unsigned, tampered);
  8. a gap report: operations the daemon lacks, output members it never returned, input
     members that did not round-trip; anything outside ALLOWED_GAPS fails the test by name.

Run: `conformance_tests.py BINARY model_conformance` (`--list` lists it); CONFORMANCE_SEED
replays another seed. Invoked from Tests/ServerTests/ConformanceDaemonTests.swift.
"""
import collections
import copy
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

try:
    from re import _constants as sre, _parser as sre_parse
except ImportError:  # Python < 3.11
    import sre_constants as sre
    import sre_parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_tests import ACCOUNT, CHANNEL_ARN, ENV, REGION, STAGE_ARN, Daemon, Failure, free_port, script_main  # noqa: E402

SEED = int(os.environ.get("CONFORMANCE_SEED", "20200714"))
ACCESS_KEY, SECRET = ENV["AWS_ACCESS_KEY_ID"], ENV["AWS_SECRET_ACCESS_KEY"]
# Channels a composition may push to; all point at a closed port, so pushing fails at once and
# only that destination fails. One per StartComposition case, so cases do not conflict.
CHANNELS = [CHANNEL_ARN] + [f"arn:aws:ivs:{REGION}:{ACCOUNT}:channel/conform{i:05d}" for i in range(40)]
QUOTAS = {"concurrentCompositions": 100, "encoderConfigurations": 1000, "storageConfigurations": 1000,
          "ingestConfigurations": 1000, "stages": 1000}
PHASES = ("Create", "Import", "Start", "Get", "List", "Update", "Tag", "Untag", "Disconnect", "Revoke", "Stop", "Delete")
OMIT = object()      # a member the generator leaves out
DELETE = object()    # put(): remove the member

# Members of which at most one may be set (the model states it in prose, or IVS refuses both);
# True: one of them is required.
ONE_OF = {
    "DestinationConfiguration": (("channel", "s3"), True),        # "Either a channel or an s3 must be specified"
    "LayoutConfiguration": (("grid", "pip"), False),              # one layout per composition
    "ListParticipantsRequest": (("filterByUserId", "filterByPublished", "filterByState", "filterByRecordingState"), False),
    "ListIngestConfigurationsRequest": (("filterByStageArn", "filterByState"), False),  # "Only one filter ... at a time"
}
# Structures whose documented defaults ("Default: X") a response must carry when the request
# left the member out; other structures' unechoed defaults are only listed.
ECHOED_DEFAULTS = ("AutoParticipantRecordingConfiguration", "ParticipantThumbnailConfiguration",
                   "ParticipantRecordingHlsConfiguration", "Video")
# Valid inputs may meet these modeled errors for a reason the case cannot avoid.
EXPLAINED = {
    ("DisconnectParticipant", "ResourceNotFoundException"): "an earlier case disconnected the participant",
    ("StopParticipantReplication", "ResourceNotFoundException"): "that replication was stopped (or never started) by an earlier case",
}
# Gaps the report accepts: "Shape.member" (an output member never returned) or
# "Operation.path" (an input member that does not round-trip) -> why.
ALLOWED_GAPS = {
    "Participant.ispName": "a server cannot know a publisher's ISP",
    "Participant.osName": "RTMP and WHIP publishers do not report their OS",
    "Participant.osVersion": "RTMP and WHIP publishers do not report their OS",
    "Participant.browserName": "RTMP and WHIP publishers do not report a browser",
    "Participant.browserVersion": "RTMP and WHIP publishers do not report a browser",
    "Participant.sdkVersion": "no IVS broadcast SDK connects to this daemon",
    "Event.remoteParticipantId": "SUBSCRIBE_* events only: the daemon has no WebRTC subscribers",
    "Event.previousToken": "TOKEN_EXCHANGED needs a WHIP token exchange (direction_tests.py, WHIPTokenExchangeTests)",
    "Event.newToken": "TOKEN_EXCHANGED needs a WHIP token exchange (direction_tests.py, WHIPTokenExchangeTests)",
    "ExchangedParticipantToken.capabilities": "inside Event.previousToken/newToken (see there)",
    "ExchangedParticipantToken.attributes": "inside Event.previousToken/newToken (see there)",
    "ExchangedParticipantToken.userId": "inside Event.previousToken/newToken (see there)",
    "ExchangedParticipantToken.expirationTime": "inside Event.previousToken/newToken (see there)",
    "StageEndpoints.events": "the IVS SDK's event WebSocket; publishers here join by WHIP or RTMP (endpoints.whip, rtmp, rtmps)",
}
# Shapes no request of the run can produce: none of their members is ever seen.
ALLOWED_GAP_SHAPES = {
    "InternalServerException": "no valid request makes the daemon fail",
    "PendingVerification": "an AWS account state; a self-hosted daemon has none",
}
# Response headers the model declares (on many shapes) that the daemon does not send, by name.
ALLOWED_HEADER_GAPS = {
    "Access-Control-Allow-Origin": "no CORS: the API refuses cross-site calls while auth is off; the console is same-origin",
    "Access-Control-Expose-Headers": "no CORS (see Access-Control-Allow-Origin)",
}


class Report:
    """Failed checks by name, kept so that one run lists every discrepancy."""

    def __init__(self):
        self.failures = collections.OrderedDict()

    def fail(self, check, detail):
        self.failures.setdefault(check, []).append(detail)

    def expect(self, condition, check, detail):
        if not condition:
            self.fail(check, detail)
        return condition


# ----------------------------------------------------------------------------------------------
# The model

def service_model():
    import botocore.session
    return botocore.session.get_session().get_service_model("ivs-realtime")


def plain(html):
    """The model's HTML documentation as one line of text."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html or "")).strip()


def documented_default(shape):
    """The member's documented default ("Default: X", "The default value is X") as a value of
    its shape, or OMIT when the documentation gives none that fits the shape."""
    text = plain(shape.documentation)
    quoted = re.search(r'Default: "([^"]*)"', text)
    found = re.search(r"Default: (.+?)(?:\s*\(|\.(?:\s|$)|$)", text) or re.search(r"[Tt]he default value is (\S+?)[,.]", text)
    if not found:
        return OMIT
    words = quoted.group(1) if quoted else found.group(1).strip()
    t = shape.type_name
    try:
        if t in ("integer", "long"):
            return int(words)
        if t in ("float", "double"):
            return float(words)
        if t == "boolean":
            return {"true": True, "false": False}[words.lower()]
        if t == "string":
            return words if (shape.enum and words in shape.enum) or (not shape.enum and quoted) else OMIT
        if t == "list" and enum(shape.member):
            values = [w.strip() for w in words.split(",")]
            return values if all(v in enum(shape.member) for v in values) else OMIT
    except (KeyError, ValueError):
        pass
    return OMIT


def enum(shape):
    """The shape's enum values ([] for shapes that are not enum strings)."""
    return getattr(shape, "enum", None) or []


def resource_type(shape):
    """The resource type an ARN shape names ("stage", "encoder-configuration"), from its pattern."""
    found = re.search(r":([a-z][a-z-]*)/", shape.metadata.get("pattern", "")) if shape.type_name == "string" else None
    return found.group(1) if found and shape.name.endswith("Arn") else None


def walk(shape, path=()):
    """Every member below `shape` as (path, shape); lists step into their first element ("[]")."""
    if shape.type_name == "structure":
        for name, member in shape.members.items():
            yield path + (name,), member
            yield from walk(member, path + (name,))
    elif shape.type_name == "list":
        yield path + ("[]",), shape.member
        yield from walk(shape.member, path + ("[]",))


def body_member(shape, name):
    """Whether member `name` travels in the JSON body (not the URI, query string or a header)."""
    return shape.members[name].serialization.get("location") in (None, "body")


# ----------------------------------------------------------------------------------------------
# Strings from the model's patterns

REPEATS = tuple(x for x in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)) if x is not None)
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
TEXT = ALNUM + "é-_."   # members without a pattern are UTF-8 text: lengths count characters


def from_pattern(pattern, rng, fill=0):
    """A string matching `pattern` (what the model's patterns use: literals, sets, repeats,
    groups, alternatives, anchors); the first open-ended repeat is taken `fill` more times."""
    extra = [fill]

    def allowed(items):
        chars, negate = [], False
        for op, arg in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                chars.append(chr(arg))
            elif op is sre.RANGE:
                chars.extend(chr(x) for x in range(arg[0], arg[1] + 1))
            elif op is sre.CATEGORY:
                chars.extend("0123456789" if arg is sre.CATEGORY_DIGIT else ALNUM)
        return [x for x in ALNUM if x not in chars] if negate else chars

    def emit(items):
        out = []
        for op, arg in items:
            if op is sre.LITERAL:
                out.append(chr(arg))
            elif op is sre.NOT_LITERAL:
                out.append(rng.choice([x for x in ALNUM if x != chr(arg)]))
            elif op is sre.ANY:
                out.append(rng.choice(ALNUM))
            elif op is sre.IN:
                out.append(rng.choice(allowed(arg)))
            elif op in REPEATS:
                low, high, sub = arg
                count = low
                if high == sre.MAXREPEAT:
                    count = max(low, max(low, 1) + extra[0])
                    extra[0] = 0
                out.extend(emit(sub) for _ in range(count))
            elif op is sre.SUBPATTERN:
                out.append(emit(arg[-1]))
            elif op is sre.BRANCH:
                out.append(emit(rng.choice(arg[1])))
        return "".join(out)
    return emit(sre_parse.parse(pattern))


# ----------------------------------------------------------------------------------------------
# Calling the daemon

class Outcome:
    """One answer: status, error code and message (None on 2xx), parsed body, headers."""

    def __init__(self, status, code, message, body, headers, raw=b""):
        self.status, self.code, self.message, self.body, self.headers, self.raw = status, code, message, body, headers, raw

    @property
    def ok(self):
        return 200 <= self.status < 300

    def __str__(self):
        return f"{self.status} {self.code or ''} {self.message or ''}".strip()


class Caller:
    """Calls operations through boto3 (and raw signed HTTP for what boto3 cannot send), and
    keeps what the report needs: per-operation counts, request IDs, every output member seen,
    and the IVS error shape of every error."""

    def __init__(self, model, report):
        self.model, self.report = model, report
        self.stats = collections.defaultdict(lambda: {"calls": 0, "ok": 0, "modeled": collections.Counter(), "other": collections.Counter()})
        self.seen = set()
        self.request_ids, self.missing_request_ids = collections.Counter(), []
        self.compositions = []   # every composition a call started, stopped at the end
        self.unknown = set()     # operations the daemon answered 404 UnknownOperation
        self.endpoint = None

    def connect(self, endpoint):
        """Two boto3 clients on `endpoint`, one signing as the AWS CLI does and one unsigned."""
        import boto3
        from botocore import UNSIGNED, serialize
        from botocore.config import Config
        self.endpoint, self.clients = endpoint, {}
        for sign in (True, False):
            config = Config(retries={"max_attempts": 1}, parameter_validation=False, **({} if sign else {"signature_version": UNSIGNED}))
            self.clients[sign] = boto3.client("ivs-realtime", endpoint_url=endpoint, region_name=REGION,
                                              aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET, config=config)
            self.clients[sign].meta.events.register("after-call", self._keep_body)
        self.serializer = serialize.create_serializer("rest-json", include_validation=False)
        return self

    def _keep_body(self, http_response, **_):
        self.last_body = http_response.content

    def call(self, op, params, sign=True):
        """Calls `op` with `params` through boto3 (parameter validation off)."""
        from botocore import xform_name
        from botocore.exceptions import ClientError
        self.last_body = b""
        try:
            response = getattr(self.clients[sign], xform_name(op))(**params)
            meta = response.pop("ResponseMetadata")
            outcome = Outcome(meta["HTTPStatusCode"], None, None, response, meta.get("HTTPHeaders", {}), self.last_body)
        except ClientError as error:
            r = error.response
            meta = r.get("ResponseMetadata", {})
            outcome = Outcome(meta.get("HTTPStatusCode", 0), r["Error"].get("Code"), r["Error"].get("Message"), r,
                              meta.get("HTTPHeaders", {}), self.last_body)
        except Exception as error:  # botocore could not send it: the case needs another value
            self.report.fail("harness", f"{op}: boto3 could not send {short(params)}: {error!r}")
            return Outcome(0, "ClientSide", str(error), {}, {})
        self._record(op, outcome)
        return outcome

    def raw(self, op, params, body=None, sign=True, tamper=None):
        """Sends `op` as botocore would serialize `params`, with `body` (bytes) instead of the
        serialized one when given; signed with SigV4 as boto3 signs, then `tamper(request)`."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        request = self.serializer.serialize_to_request(params, self.model.operation_model(op))
        url = self.endpoint + request["url_path"]
        if request["query_string"]:
            url += "?" + urllib.parse.urlencode(request["query_string"], doseq=True)
        data = request["body"] if body is None else body
        aws = AWSRequest(method=request["method"], url=url, data=data, headers={"Content-Type": "application/json", **request["headers"]})
        if sign:
            SigV4Auth(Credentials(ACCESS_KEY, SECRET), "ivs", REGION).add_auth(aws)
        prepared = aws.prepare()
        headers, data = dict(prepared.headers), prepared.body
        if tamper:
            headers, data = tamper(headers, data)
        http = urllib.request.Request(prepared.url, data=data or None, headers=headers, method=request["method"])
        try:
            with urllib.request.urlopen(http, timeout=30) as response:
                status, answer, got = response.status, response.read(), response.headers
        except urllib.error.HTTPError as error:
            status, answer, got = error.code, error.read(), error.headers
        headers = {k.lower(): v for k, v in got.items()}
        try:
            parsed = json.loads(answer) if answer else {}
        except ValueError:
            parsed = {}
        parsed = parsed if isinstance(parsed, dict) else {}
        code = None if 200 <= status < 300 else (headers.get("x-amzn-errortype", "") or str(parsed.get("__type", ""))).split(":")[0] or None
        message = parsed.get("message") or parsed.get("Message")
        outcome = Outcome(status, code, message, parsed, headers, answer)
        self._record(op, outcome, parse=False)
        return outcome

    def _record(self, op, outcome, parse=True):
        stats = self.stats[op]
        stats["calls"] += 1
        model = self.model.operation_model(op)
        modeled = {e.name for e in model.error_shapes}
        request_id = outcome.headers.get("x-amzn-requestid")
        if request_id:
            self.request_ids[request_id] += 1
        else:
            self.missing_request_ids.append(f"{op} {outcome.status}")
        if outcome.ok:
            stats["ok"] += 1
            if op == "StartComposition" and parse:
                self.compositions.append(outcome.body["composition"]["arn"])
            if parse:
                self.collect(model.output_shape, outcome.body)
            return
        (stats["modeled"] if outcome.code in modeled else stats["other"])[outcome.code or str(outcome.status)] += 1
        if outcome.status >= 500:
            self.report.fail("no 5xx", f"{op}: {outcome}")
        if outcome.status == 404 and outcome.code != "ResourceNotFoundException" and op not in self.unknown:
            self.unknown.add(op)  # reported once; its cases are not reported one by one
            self.report.fail("every operation answers", f"{op}: {outcome}")
        problem = error_shape_problem(outcome)
        if problem:
            self.report.fail("IVS error shape", f"{op}: {outcome.status}: {problem}")
        if parse and outcome.code in modeled:
            self.collect(self.model.shape_for(outcome.code), outcome.body)

    def collect(self, shape, value):
        """Notes every member of `shape` present in `value` as "Shape.member"."""
        if shape is None or value is None:
            return
        if shape.type_name == "structure" and isinstance(value, dict):
            for name, member in shape.members.items():
                if name in value and value[name] is not None:
                    self.seen.add(f"{shape.name}.{name}")
                    self.collect(member, value[name])
        elif shape.type_name == "list" and isinstance(value, list):
            for item in value:
                self.collect(shape.member, item)
        elif shape.type_name == "map" and isinstance(value, dict):
            for item in value.values():
                self.collect(shape.value, item)


def error_shape_problem(outcome):
    """What is missing from an error answer for it to be in the IVS error shape (an
    x-amzn-ErrorType header or "__type", and a JSON body with a non-empty message), or None."""
    try:
        body = json.loads(outcome.raw) if outcome.raw else None
    except ValueError:
        return f"body is not JSON: {outcome.raw[:80]!r}"
    if not isinstance(body, dict):
        return f"no JSON object in the body ({outcome.raw[:80]!r})"
    if not outcome.headers.get("x-amzn-errortype") and "__type" not in body:
        return "neither an x-amzn-ErrorType header nor __type"
    if not (body.get("message") or body.get("Message")):
        return f"no message in the body {body}"
    return None


# ----------------------------------------------------------------------------------------------
# Values from shapes

class Generator:
    """Valid and invalid values of the model's shapes (seeded). Members that name a resource are
    asked of the world first (`world.real`)."""

    def __init__(self, model, world, seed):
        self.model, self.world, self.rng = model, world, random.Random(seed)

    # -- valid ---------------------------------------------------------------------------------

    def build(self, op, shape, mode, variant=0, path=(), invalid=False):
        """A valid value: mode "min" (required members only, shortest lists) or "max" (every
        member, strings and lists at their maximum); `variant` picks the one-of alternative."""
        real = self.world.real(op, path, shape, invalid)
        if real is not None:
            return real
        t, meta = shape.type_name, shape.metadata
        if t == "structure":
            names = list(shape.members) if mode == "max" else list(shape.required_members)
            group = ONE_OF.get(shape.name)
            if group:
                members, required = group
                chosen = members[variant % len(members)]
                names = [n for n in names if n not in members or n == chosen]
                if required and chosen not in names:
                    names.append(chosen)
            out = {}
            for name in names:
                value = self.build(op, shape.members[name], mode, variant, path + (name,), invalid)
                if value is not OMIT:
                    out[name] = value
            return out
        if t == "list":
            low, high = meta.get("min", 0), meta.get("max")
            count = (high if high is not None and high <= 50 else 3) if mode == "max" else max(low, 1)
            if enum(shape.member):
                count = min(count, len(enum(shape.member)))
                return [enum(shape.member)[(variant + i) % len(enum(shape.member))] for i in range(count)]
            return [self.build(op, shape.member, mode, variant + i, path + ("[]",), invalid) for i in range(count)]
        if t == "map":
            high = meta.get("max")
            count = (high if high is not None and high <= 50 else 3) if mode == "max" else 1
            out = {}
            while len(out) < count:
                out[self.string(shape.key, self.length(shape.key, mode, cap=16))] = self.string(shape.value, self.length(shape.value, mode, cap=48))
            return out
        if t == "string":
            if shape.enum:
                return shape.enum[variant % len(shape.enum)] if mode == "max" else self.rng.choice(shape.enum)
            return self.string(shape, self.length(shape, mode))
        if t in ("integer", "long"):
            low, high = meta.get("min", 0), meta.get("max", 2 ** 31 - 1)
            return high if mode == "max" else self.rng.randint(low, min(high, low + 1000))
        if t in ("float", "double"):
            low, high = meta.get("min", 0), meta.get("max", 1000)
            return float(high) if mode == "max" else round(self.rng.uniform(low, high), 2)
        if t == "boolean":
            return True if mode == "max" else self.rng.choice([True, False])
        raise Failure(f"no generator for {shape.name} ({t})")

    def length(self, shape, mode, cap=None):
        low, high = shape.metadata.get("min", 0), shape.metadata.get("max")
        if mode == "max":
            return high if high is not None else (cap or 32)
        return self.rng.randint(max(low, 1 if high is None or high > 0 else 0), min(high if high is not None else 12, low + 12, cap or 99))

    def string(self, shape, length, strict=True):
        """`length` characters, matching the shape's pattern (or best effort when not `strict`)."""
        pattern = shape.metadata.get("pattern")
        if not pattern:
            return "".join(self.rng.choice(TEXT) for _ in range(length))
        for _ in range(40):
            seed = self.rng.random()
            base = from_pattern(pattern, random.Random(seed))
            value = from_pattern(pattern, random.Random(seed), fill=length - len(base))
            if len(value) == length and re.fullmatch(pattern, value, re.S):
                return value
        if strict:
            raise Failure(f"cannot generate {length} characters matching {pattern}")
        return "a" * length

    def put(self, op, container, shape, path, value, prefix=(), invalid=False):
        """Sets `path` below `container` (a value of `shape`) to `value` (DELETE removes it),
        creating the members on the way with minimal valid values and dropping the other
        members of a one-of group."""
        key, rest = path[0], path[1:]
        if shape.type_name == "list":
            if not container:
                container.append(self.build(op, shape.member, "min", 0, prefix + ("[]",), invalid))
            if not rest:
                container[0] = value
            else:
                self.put(op, container[0], shape.member, rest, value, prefix + ("[]",), invalid)
            return
        group = ONE_OF.get(shape.name)
        if group and key in group[0]:
            for other in group[0]:
                if other != key:
                    container.pop(other, None)
        if not rest:
            if value is DELETE:
                container.pop(key, None)
            else:
                container[key] = value
            return
        member = shape.members[key]
        if key not in container:
            container[key] = self.build(op, member, "min", 0, prefix + (key,), invalid)
        self.put(op, container[key], member, rest, value, prefix + (key,), invalid)

    # -- the rules the model states in prose -----------------------------------------------------

    def follow_rules(self, shape, value, focus=(), path=()):
        """Adjusts a generated input to the cross-member rules in the model's documentation
        (even sizes, a pixel budget, "must be set to true if", 1 KB of attributes), leaving the
        member under test (`focus`) as it is."""
        if shape.type_name == "list" and isinstance(value, list):
            for item in value:
                self.follow_rules(shape.member, item, focus, path + ("[]",))
            return
        if shape.type_name != "structure" or not isinstance(value, dict):
            return
        budget = None
        for name, member in shape.members.items():
            doc = plain(member.documentation)
            here = path + (name,)
            if name in value and "must be an even number" in doc and value[name] % 2 and here != focus:
                value[name] += -1 if value[name] > member.metadata.get("min", 0) else 1
            pixels = re.search(r"maximum total pixels is (\d+)", doc)
            budget = int(pixels.group(1)) if pixels else budget
            must = re.search(r"This must be set to true, if (\w+) is set to (\w+)", doc)
            if must and value.get(must.group(1)) == must.group(2) and value.get(name) is not True:
                if here == focus:
                    other = shape.members[must.group(1)]
                    value[must.group(1)] = next(x for x in other.enum if x != must.group(2))
                else:
                    value[name] = True
            if "1 KB total" in doc and isinstance(value.get(name), dict) and here != focus:
                while attribute_bytes(value[name]) > 1024:
                    value[name].popitem()
            if name in value:
                self.follow_rules(member, value[name], focus, here)
        sized = [n for n in shape.members if "maximum total pixels" in plain(shape.members[n].documentation)]
        if budget and len(sized) == 2 and all(n in value for n in sized):
            a, b = sized
            if value[a] * value[b] > budget:
                fixed = b if path + (b,) != focus else a
                keep = a if fixed == b else b
                value[fixed] = max(2, (budget // value[keep]) // 2 * 2)

    # -- invalid ---------------------------------------------------------------------------------

    def violations(self, shape, valid):
        """Values of `shape` that each break one constraint: (label, value, raw) where raw means
        only raw HTTP can send it (a wrong JSON type)."""
        t, meta, out = shape.type_name, shape.metadata, []
        low, high = meta.get("min"), meta.get("max")
        if t == "string":
            if shape.enum:
                out.append(("not an enum value", "NOT_A_VALUE", False))
                if shape.enum[0].lower() != shape.enum[0]:
                    out.append(("enum value in lower case", shape.enum[0].lower(), False))
            else:
                if low:
                    out.append((f"{low - 1} characters (min {low})", self.string(shape, low - 1, strict=False), False))
                if high is not None:
                    out.append((f"{high + 1} characters (max {high})", self.string(shape, high + 1, strict=False), False))
                for bad in self.pattern_breakers(shape, valid):
                    out.append(("breaks the pattern", bad, False))
            out += [("a number for a string", 7, True), ("an object for a string", {"a": "b"}, True)]
        elif t in ("integer", "long"):
            if low is not None:
                out.append((f"{low - 1} (min {low})", low - 1, False))
            if high is not None:
                out.append((f"{high + 1} (max {high})", high + 1, False))
            out += [("a fraction for an integer", 2.5, False), ("2^64 (no integer)", 2 ** 64, False), ("a string for an integer", "12", True)]
        elif t in ("float", "double"):
            if low is not None:
                out.append((f"{low - 0.5} (min {low})", low - 0.5, False))
            if high is not None:
                out.append((f"{high + 0.5} (max {high})", high + 0.5, False))
            out.append(("a string for a number", "12", True))
        elif t == "boolean":
            out += [('"true" for a boolean', "true", True), ("1 for a boolean", 1, True), ("an object for a boolean", {}, True)]
        elif t == "list":
            item = valid[0] if valid else None
            if high is not None and item is not None:
                out.append((f"{high + 1} items (max {high})", [item] * (high + 1) if not enum(shape.member) else
                            [enum(shape.member)[i % len(enum(shape.member))] for i in range(high + 1)], False))
            if low:
                out.append((f"{low - 1} items (min {low})", (valid or [])[:low - 1], False))
            out.append(("a string for a list", "x", True))
        elif t == "map":
            value = self.string(shape.value, min(8, shape.value.metadata.get("max", 8)))
            if high is not None:
                out.append((f"{high + 1} entries (max {high})", {f"k{i}": value for i in range(high + 1)}, False))
            key_low, key_high = shape.key.metadata.get("min"), shape.key.metadata.get("max")
            if key_low:
                out.append((f"a key of {key_low - 1} characters", {"a" * (key_low - 1): value}, False))
            if key_high is not None:
                out.append((f"a key of {key_high + 1} characters", {"k" * (key_high + 1): value}, False))
            value_high = shape.value.metadata.get("max")
            if value_high is not None:
                out.append((f"a value of {value_high + 1} characters", {"k": "v" * (value_high + 1)}, False))
            out.append(("a list for a map", ["x"], True))
        elif t == "structure":
            out += [("a string for an object", "x", True), ("a list for an object", [], True)]
        return out

    def pattern_breakers(self, shape, valid):
        """Up to two strings of a valid length that the pattern refuses (fully, and also as a
        search when the pattern cannot match the empty string: it may not be anchored)."""
        pattern = shape.metadata.get("pattern")
        if not pattern:
            return []
        low, high = shape.metadata.get("min", 0), shape.metadata.get("max", 10 ** 6)
        v = valid if isinstance(valid, str) and len(valid) >= 2 else self.string(shape, max(low, min(8, high)), strict=False)
        middle = len(v) // 2
        candidates = ["!" + v[1:], v[:-1] + " ", v[:middle] + "é" + v[middle + 1:], v.upper(), v[:middle] + "/" + v[middle + 1:], "!" * max(low, 1)]
        loose = re.fullmatch(pattern, "") is not None
        out = []
        for c in candidates:
            if low <= len(c) <= high and not re.fullmatch(pattern, c, re.S) and (loose or not re.search(pattern, c, re.S)) and c not in out:
                out.append(c)
        return out[:2]


def attribute_bytes(attributes):
    """The UTF-8 size of attributes as the 1 KB rule counts it (keys and values)."""
    return sum(len(k.encode()) + len(str(v).encode()) for k, v in attributes.items())


# ----------------------------------------------------------------------------------------------
# The world: real resources that generated inputs name

class World:
    """Creates the resources the cases name (stages, configurations, a public key, compositions,
    a live session with two RTMP publishers and replicas) and answers `real(op, path, shape)`:
    the value a member naming a resource gets, or None to generate one."""

    def __init__(self, d, caller):
        self.d, self.c = d, caller
        self.channels = itertools.cycle(CHANNELS)
        self.publishers = []
        self.destination_index = 0
        self.replicated = []
        self.taggable_index = 0
        self.generator = None

    def real(self, op, path, shape, invalid):
        """The value for the member at `path` of `op`'s input when it names a resource (for an
        invalid case, Delete/Stop get a made-up ARN so nothing is consumed), OMIT, or None."""
        name, member = shape.name, (path[-1] if path else "")
        if name == "PaginationToken":
            return OMIT
        if path == ("arn",) and op.startswith(("Delete", "Stop")):
            return self.made_up(shape) if invalid else self.victim(op)
        if op == "StartComposition" and member == "stageArn" or op == "ListCompositions" and member == "filterByStageArn":
            return STAGE_ARN
        if op == "StartParticipantReplication" and member == "destinationStageArn":
            self.destination_index += 1
            return self.destinations[(self.destination_index - 1) % len(self.destinations)]
        if op == "StopParticipantReplication" and member == "destinationStageArn":
            return self.replicated.pop(0) if self.replicated and not invalid else self.destinations[0]
        if op == "UpdateStage" and path == ("arn",):
            return self.updated_stage
        if op == "UpdateIngestConfiguration" and path == ("arn",):
            return self.spare_ingest["arn"]
        if op == "TagResource" and name == "ResourceArn" and not invalid:
            return self.fresh_taggable()
        if name == "ResourceArn":
            self.taggable_index += 1
            return self.taggable[self.taggable_index % len(self.taggable)]
        if name == "PublicKeyMaterial":
            return public_key_pem()
        return {
            "StageArn": self.live_stage, "IngestConfigurationStageArn": self.live_stage,
            "EncoderConfigurationArn": self.encoder, "StorageConfigurationArn": self.storage,
            "AutoParticipantRecordingStorageConfigurationArn": self.storage,
            "IngestConfigurationArn": self.ingest[0]["arn"], "PublicKeyArn": self.public_key,
            "CompositionArn": self.composition, "StageSessionId": self.session,
            "ParticipantId": self.ingest[0]["participantId"], "ParticipantTokenId": self.ingest[1]["participantId"],
            "S3BucketName": "rec-bucket",
        }.get(name, next(self.channels) if name == "ChannelArn" else None)

    @staticmethod
    def made_up(shape):
        """A well-formed ARN of the shape's resource type that names nothing."""
        kind = resource_type(shape) or "stage"
        return f"arn:aws:ivs:{REGION}:{ACCOUNT}:{kind}/{'AAAAAAAAAAAA' if kind != 'channel' else 'zzzzzzzzzzzz'}"

    def create(self, op, **params):
        """Calls a Create/Import/Start operation that must succeed; returns its resource."""
        outcome = self.c.call(op, params)
        if not outcome.ok:
            raise Failure(f"setup: {op} {json.dumps(params)[:300]}: {outcome}\n{self.d.log()}")
        return next(v for k, v in outcome.body.items() if isinstance(v, dict))

    def victim(self, op):
        """A new resource for a Delete/Stop case to consume, made by the operation that creates
        that kind (DeleteX: CreateX or ImportX; StopX: StartX) with a minimal valid input."""
        kind = op[len("Delete"):] if op.startswith("Delete") else op[len("Stop"):]
        maker = next(m for m in (f"Create{kind}", f"Import{kind}", f"Start{kind}") if m in self.c.model.operation_names)
        params = self.generator.build(maker, self.c.model.operation_model(maker).input_shape, "min")
        self.generator.follow_rules(self.c.model.operation_model(maker).input_shape, params)
        if maker == "StartComposition":
            params["destinations"] = [self.s3_destination()]
        return self.create(maker, **params)["arn"]

    def fresh_taggable(self):
        """A new untagged resource for TagResource, cycling through the kinds created cheaply."""
        self.taggable_index += 1
        kinds = ["Stage", "EncoderConfiguration", "StorageConfiguration", "IngestConfiguration"]
        return self.victim("Delete" + kinds[self.taggable_index % len(kinds)])

    def s3_destination(self):
        """An S3 destination recording with the small encoder configuration."""
        return {"s3": {"storageConfigurationArn": self.storage, "encoderConfigurationArns": [self.encoder]}}

    def publish(self, ingest, name, video=("libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-bf", "0")):
        """An ffmpeg RTMP publisher on the live stage (small, encoded live)."""
        url = self.live["endpoints"]["rtmp"] + ingest["streamKey"]
        log = open(os.path.join(self.d.workdir, f"publisher-{name}.log"), "w")
        command = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re",
                   "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=15", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                   "-c:v", *video, "-pix_fmt", "yuv420p", "-b:v", "150k", "-c:a", "aac", "-b:a", "48k", "-f", "flv", url]
        process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        self.publishers.append(process)
        return process

    def wait(self, what, probe, timeout=20):
        """Polls `probe()` until it gives a true value; returns it."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = probe()
            if value:
                return value
            time.sleep(0.1)
        raise Failure(f"setup: {what} within {timeout} s\n{self.d.log()}")

    def published(self, session, participant_ids):
        """Whether these participants of the live stage's session are connected and published."""
        outcome = self.c.call("ListParticipants", {"stageArn": self.live_stage, "sessionId": session})
        got = {p["participantId"]: p for p in outcome.body.get("participants", [])} if outcome.ok else {}
        return all(got.get(p, {}).get("published") and got[p].get("state") == "CONNECTED" for p in participant_ids)

    def active_session(self, stage):
        """The stage's active session ID, or a false value."""
        outcome = self.c.call("GetStage", {"arn": stage})
        return outcome.ok and outcome.body["stage"].get("activeSessionId")

    def build(self):
        """Creates the world: storage and encoder configurations, live stages with two ingest
        configurations publishing (after a first short session, so sessions page), three
        replication destinations, a stage and an ingest configuration to update, a public key
        and a composition."""
        self.storage = self.create("CreateStorageConfiguration", name="conformance", s3={"bucketName": "rec-bucket"})["arn"]
        self.encoder = self.create("CreateEncoderConfiguration", name="small",
                                   video={"width": 320, "height": 180, "framerate": 15, "bitrate": 200000})["arn"]
        self.live = self.create("CreateStage", name="live", autoParticipantRecordingConfiguration={
            "storageConfigurationArn": self.storage, "mediaTypes": ["AUDIO_ONLY"]})
        self.live_stage = self.live["arn"]
        self.ingest = [self.create("CreateIngestConfiguration", name=f"publisher{i}", stageArn=self.live_stage, userId=f"user{i}",
                                   ingestProtocol="RTMP", insecureIngest=True, attributes={"seat": str(i)}) for i in (1, 2, 3)]
        first = self.publish(self.ingest[1], "first")
        self.destinations = [self.create("CreateStage", name=f"replica{i}")["arn"] for i in range(3)]
        self.updated_stage = self.create("CreateStage", name="toUpdate")["arn"]
        self.spare_ingest = self.create("CreateIngestConfiguration", name="spare", ingestProtocol="RTMPS")
        self.public_key = self.create("ImportPublicKey", name="conformance", publicKeyMaterial=public_key_pem())["arn"]
        self.composition = self.create("StartComposition", stageArn=STAGE_ARN, destinations=[self.s3_destination()])["arn"]
        # A first, short session (participant 2 alone), so that ListStageSessions has two to page.
        session = self.wait("a first session", lambda: self.active_session(self.live_stage))
        self.wait("participant 2 publishing", lambda: self.published(session, [self.ingest[1]["participantId"]]))
        stop_process(first)
        self.wait("the first session to end", lambda: not self.active_session(self.live_stage))
        for i, ingest in enumerate(self.ingest[:2]):
            self.publish(ingest, f"p{i + 1}")
        self.session = self.wait("the second session", lambda: self.active_session(self.live_stage))
        self.wait("both publishers", lambda: self.published(self.session, [i["participantId"] for i in self.ingest[:2]]))
        # Video the daemon cannot decode (FLV's Sorenson H.263): a PUBLISH_ERROR event with an errorCode.
        self.publish(self.ingest[2], "undecodable", video=("flv1",))
        self.taggable = [self.updated_stage, self.encoder, self.storage, self.spare_ingest["arn"], self.public_key, self.composition]

    def stop_publishers(self):
        """Stops every ffmpeg publisher the world started."""
        for process in self.publishers:
            stop_process(process)


def stop_process(process):
    """Stops an ffmpeg publisher as an encoder is stopped (SIGINT: it unpublishes)."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def public_key_pem():
    """A new EC P-384 public key in PEM (cryptography, or the openssl CLI)."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        key = ec.generate_private_key(ec.SECP384R1())
        return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    except ImportError:
        private = subprocess.run(["openssl", "ecparam", "-name", "secp384r1", "-genkey", "-noout"], capture_output=True, check=True).stdout
        return subprocess.run(["openssl", "ec", "-pubout"], input=private, capture_output=True, check=True).stdout.decode()


# ----------------------------------------------------------------------------------------------
# The suite

class Conformance:
    """Runs the sections in order on one daemon and keeps the counts for the summary."""

    def __init__(self, d):
        self.d, self.model, self.report = d, service_model(), Report()
        self.caller = Caller(self.model, self.report).connect(d.endpoint)
        self.world = World(d, self.caller)
        self.gen = Generator(self.model, self.world, SEED)
        self.world.generator = self.gen
        self.counts = collections.Counter()
        self.mismatches = {}         # (check, "Operation.path") -> an example, its readers, how many cases
        self.other_defaults = set()  # documented defaults not echoed outside ECHOED_DEFAULTS
        self.explained = []
        self.lenient = []            # unknown references where the model leaves the answer open
        self.timings = []

    def timed(self, name, section):
        """Runs a section, noting how long it took."""
        start = time.time()
        section()
        self.timings.append((name, time.time() - start))

    def operations(self):
        """The model's operations, creating ones first and deleting ones last (PHASES)."""
        return sorted(self.model.operation_names, key=lambda op: (next((i for i, p in enumerate(PHASES) if op.startswith(p)), len(PHASES)), op))

    def input_shape(self, op):
        return self.model.operation_model(op).input_shape

    # -- 2 and 3: valid inputs and round trips ----------------------------------------------------

    def valid_cases(self, op):
        """(label, params) for `op`: minimal, maximal (one per one-of alternative), and one per
        value of every enum and boolean member (list-of-enum members: one value each)."""
        shape = self.input_shape(op)
        if shape is None:
            return [("no input", {})]
        shapes = [shape] + [s for _, s in walk(shape)]
        variants = max([len(ONE_OF[s.name][0]) for s in shapes if s.name in ONE_OF], default=1)
        cases = [("minimal", self.gen.build(op, shape, "min"), ())]
        cases += [(f"maximal #{v + 1}", self.gen.build(op, shape, "max", v), ()) for v in range(variants)]
        for path, member in walk(shape):
            if path[-1] == "[]" and enum(member):
                continue  # the list's own cases set each value
            values = (enum(member) or ([[x] for x in enum(member.member)] if member.type_name == "list" else []) or
                      ([True, False] if member.type_name == "boolean" else []))
            for value in values:
                params = self.gen.build(op, shape, "min")
                self.gen.put(op, params, shape, path, copy.deepcopy(value))
                cases.append((f"{'.'.join(path)}={json.dumps(value)}", params, path))
        for _, params, focus in cases:
            self.gen.follow_rules(shape, params, focus)
        return [(label, params) for label, params, _ in cases]

    def run_valid(self):
        """Sends every valid case; a refusal fails unless EXPLAINED or a modeled conflict/quota."""
        for op in self.operations():
            for label, params in self.valid_cases(op):
                self.counts["valid"] += 1
                outcome = self.caller.call(op, params)
                if outcome.ok:
                    self.round_trip(op, params, outcome)
                elif (op, outcome.code) in EXPLAINED or outcome.code in ("ConflictException", "ServiceQuotaExceededException") and \
                        outcome.code in {e.name for e in self.model.operation_model(op).error_shapes}:
                    self.explained.append(f"{op} {label}: {outcome.code}: {outcome.message} "
                                          f"({EXPLAINED.get((op, outcome.code), 'modeled; see the message')})")
                elif op not in self.caller.unknown:
                    self.report.fail("valid inputs", f"{op} {label}: {outcome}\n      request: {short(params)}")
                self.after(op, params, outcome)

    def after(self, op, params, outcome):
        """Cleans up after a case: a replication is remembered for StopParticipantReplication,
        an imported public key is deleted (3 per region)."""
        if op == "StartParticipantReplication" and outcome.ok:
            self.world.replicated.append(params["destinationStageArn"])
        if op == "ImportPublicKey" and outcome.ok:
            self.caller.call("DeletePublicKey", {"arn": outcome.body["publicKey"]["arn"]})
        if op == "StartComposition" and outcome.ok:  # many running at once would starve the machine
            self.caller.call("StopComposition", {"arn": outcome.body["composition"]["arn"]})

    def round_trip(self, op, params, outcome):
        """What `op` accepted is what it, Get<X> and List<X>s return (members the output has)."""
        if op == "TagResource":
            listed = self.caller.call("ListTagsForResource", {"resourceArn": params["resourceArn"]})
            self.counts["round trips"] += 1
            if listed.body.get("tags", {}) != {**listed.body.get("tags", {}), **params["tags"]}:
                self.mismatch("round trips", op, ("tags",), "ListTagsForResource",
                              f"sent {short(params['tags'])}, got {short(listed.body.get('tags'))}")
            return
        output = self.model.operation_model(op).output_shape
        resources = [(k, v) for k, v in outcome.body.items() if isinstance(v, dict) and k in output.members]
        if not op.startswith(("Create", "Import", "Start", "Update")) or not resources:
            return
        key, resource = resources[0]
        readers, kind = [(op, resource, output.members[key])], key[0].upper() + key[1:]
        if "arn" in resource and f"Get{kind}" in self.model.operation_names:
            got = self.caller.call(f"Get{kind}", {"arn": resource["arn"]})
            if self.report.expect(got.ok, "round trips", f"Get{kind} {resource['arn']} after {op}: {got}"):
                readers.append((f"Get{kind}", got.body[key], output.members[key]))
        if "arn" in resource and f"List{kind}s" in self.model.operation_names:
            summary = self.find_in_list(f"List{kind}s", resource["arn"])
            if self.report.expect(summary is not None, "round trips", f"List{kind}s does not list {resource['arn']} after {op}"):
                readers.append((f"List{kind}s", summary, self.list_item_shape(f"List{kind}s")))
        for reader, value, shape in readers:
            self.counts["round trips"] += 1
            for check, problem, where in self.compare(params, self.input_shape(op), value, shape, (), defaults=not reader.startswith("List")):
                self.mismatch(check, op, where, reader, problem)

    def mismatch(self, check, op, path, reader, problem):
        """Keeps one example per (check, operation, member) and which readers showed it."""
        name = f"{op}.{'.'.join(path)}"
        if name in ALLOWED_GAPS:
            return
        entry = self.mismatches.setdefault((check, name), {"problem": problem, "readers": set(), "cases": 0})
        entry["readers"].add(reader)
        entry["cases"] += 1

    def list_item_shape(self, op):
        return next(m.member for m in self.model.operation_model(op).output_shape.members.values() if m.type_name == "list")

    def find_in_list(self, op, arn):
        """The summary `op` lists for `arn` (paging through), or None."""
        params, item_key = {}, next(n for n, m in self.model.operation_model(op).output_shape.members.items() if m.type_name == "list")
        for _ in range(100):
            outcome = self.caller.call(op, params)
            if not outcome.ok:
                return None
            found = [item for item in outcome.body.get(item_key, []) if item.get("arn") == arn]
            if found or not outcome.body.get("nextToken"):
                return found[0] if found else None
            params = {"nextToken": outcome.body["nextToken"]}
        return None

    def compare(self, sent, sent_shape, got, got_shape, path, defaults=True):
        """(check, problem, path) for each member sent that `got` (of `got_shape`) has with
        another value, and for documented defaults missing from ECHOED_DEFAULTS structures."""
        mismatch = [("round trips", f"sent {short(sent)}, got {short(got)}", path)]
        if sent_shape.type_name == "structure":
            if got_shape.name != sent_shape.name:  # e.g. DestinationConfiguration inside a Destination
                inner = next((n for n, m in got_shape.members.items() if m.name == sent_shape.name), None)
                if inner is not None:
                    return self.compare(sent, sent_shape, (got or {}).get(inner), got_shape.members[inner], path, defaults)
            got, problems = got if isinstance(got, dict) else {}, []
            for name, member in sent_shape.members.items():
                if name not in got_shape.members:
                    continue
                if name not in sent:
                    problems += self.default_problems(member, got, name, got_shape, path) if defaults else []
                elif name not in got:
                    problems.append(("round trips", f"sent {short(sent[name])}, not returned", path + (name,)))
                else:
                    problems += self.compare(sent[name], member, got[name], got_shape.members[name], path + (name,), defaults)
            return problems
        if sent_shape.type_name == "list":
            if not isinstance(got, list) or len(got) != len(sent):
                return mismatch
            return [p for a, b in zip(sent, got) for p in self.compare(a, sent_shape.member, b, got_shape.member, path + ("[]",), defaults)]
        if sent_shape.type_name in ("float", "double") and isinstance(got, (int, float)):
            return [] if abs(sent - got) <= 1e-6 * max(1, abs(sent)) else mismatch
        return [] if sent == got else mismatch

    def default_problems(self, member, got, name, got_shape, path):
        """A member left out: the response must carry its documented default when the structure
        is in ECHOED_DEFAULTS (nested structures in it: an object with their defaults)."""
        enforce = got_shape.name in ECHOED_DEFAULTS
        if member.type_name == "structure" and member.name in ECHOED_DEFAULTS and enforce:
            return [(check if check != "round trips" else "documented defaults", problem, where)
                    for check, problem, where in self.compare({}, member, got.get(name), got_shape.members[name], path + (name,))]
        default = documented_default(member)
        if default is OMIT or got.get(name) == default:
            return []
        if not enforce:
            self.other_defaults.add(f"{got_shape.name}.{name} (documented default {json.dumps(default)}, returned {short(got.get(name))})")
            return []
        return [("documented defaults", f"left out: documented default {json.dumps(default)}, got {short(got.get(name, '(absent)'))}",
                 path + (name,))]

    # -- 4: invalid inputs -----------------------------------------------------------------------

    def invalid_cases(self, op):
        """(label, params, body) breaking one constraint each; body is the raw JSON to send
        instead (wrong JSON types), else None."""
        shape = self.input_shape(op)
        if shape is None:
            return []
        cases = self.required_cases(op, shape) + self.constraint_cases(op, shape) + self.rule_cases(op, shape)
        if self.model.operation_model(op).http["method"] == "POST" and all(body_member(shape, n) for n in shape.members):
            cases += [("body: a JSON array", {}, b"[1]"), ("body: not JSON", {}, b"{not json")]
        return cases

    def base(self, op, shape):
        """A minimal valid input for an invalid case (Delete/Stop name no real resource)."""
        params = self.gen.build(op, shape, "min", invalid=True)
        self.gen.follow_rules(shape, params)
        return params

    @staticmethod
    def raw_case(shape, label, params):
        """A case only raw HTTP can send: the body members as JSON, the others through botocore."""
        body = json.dumps({k: v for k, v in params.items() if body_member(shape, k)}).encode()
        return label, {k: v for k, v in params.items() if not body_member(shape, k)}, body

    def required_cases(self, op, shape):
        """Each required member left out, and sent as JSON null."""
        cases = []
        for path, member in [((), shape)] + [(p, s) for p, s in walk(shape) if s.type_name == "structure"]:
            for required in member.required_members:
                label = ".".join(path + (required,))
                target = member.members[required]
                if (target.serialization.get("location") == "querystring" and target.type_name == "list"
                        and target.metadata.get("min", 0) == 0):
                    # A required query list that may be empty (UntagResource's tagKeys): boto3 sends
                    # an empty list as no parameter at all, so absent must mean empty, not missing.
                    continue
                if path or body_member(shape, required) or target.serialization.get("location") == "querystring":
                    params = self.base(op, shape)
                    self.gen.put(op, params, shape, path + (required,), DELETE, invalid=True)
                    cases.append((f"{label} missing (required)", params, None))
                if path or body_member(shape, required):
                    params = self.base(op, shape)
                    self.gen.put(op, params, shape, path + (required,), None, invalid=True)
                    cases.append(self.raw_case(shape, f"{label} null (required)", params))
        return cases

    def constraint_cases(self, op, shape):
        """Each member's own constraints broken one at a time (Generator.violations)."""
        cases = []
        for path, member in walk(shape):
            in_uri = shape.members[path[0]].serialization.get("location") == "uri"
            reference = self.base(op, shape)
            valid = self.value_at(reference, path)
            if valid is None:
                valid = self.gen.build(op, member, "min", 0, path, True)
                self.gen.put(op, reference, shape, path, valid, invalid=True)
            for label, value, raw in self.gen.violations(member, valid):
                if raw and not body_member(shape, path[0]) or in_uri and value == "":
                    continue  # only the body can carry a wrong JSON type; an empty path segment is another route
                params = copy.deepcopy(reference)
                self.gen.put(op, params, shape, path, value, invalid=True)
                label = f"{'.'.join(path)}: {label}"
                cases.append(self.raw_case(shape, label, params) if raw else (label, params, None))
        return cases

    def rule_cases(self, op, shape):
        """The cross-member rules the model states in prose, each broken once: one-of groups,
        1 KB of attributes, even sizes, the pixel budget, "must be set to true if"."""
        cases = []
        for path, member in [((), shape)] + list(walk(shape)):
            where, doc = ".".join(path) or "input", plain(member.documentation)
            if member.type_name == "structure" and member.name in ONE_OF:
                names, required = ONE_OF[member.name]
                params = self.base(op, shape)
                node = self.locate(op, params, shape, path)
                for name in names:
                    node[name] = node.get(name) or self.gen.build(op, member.members[name], "min", 0, path + (name,), True)
                cases.append((f"{where}: {' and '.join(names)} together", params, None))
                if required:
                    params = self.base(op, shape)
                    node = self.locate(op, params, shape, path)
                    for name in names:
                        node.pop(name, None)
                    cases.append((f"{where}: none of {', '.join(names)}", params, None))
            broken = None
            if path and member.type_name == "map" and "1 KB total" in doc:
                broken = ("attributes over 1 KB total", {path: {f"key{i}": "v" * 100 for i in range(10)}})
            if path and member.type_name in ("integer", "long") and "must be an even number" in doc:
                broken = ("odd (must be an even number)", {path: member.metadata.get("min", 0) + 1})
            must = re.search(r"This must be set to true, if (\w+) is set to (\w+)", doc)
            if path and must:
                broken = (f"false with {must.group(1)} {must.group(2)}", {path[:-1] + (must.group(1),): must.group(2), path: False})
            sized = [n for n, m in member.members.items() if "maximum total pixels" in plain(m.documentation)] \
                if member.type_name == "structure" else []
            if len(sized) == 2:
                broken = (f"{' and '.join(sized)} at their maximum (pixel budget)",
                          {path + (n,): member.members[n].metadata["max"] for n in sized})
            if broken:
                params = self.base(op, shape)
                for at, value in broken[1].items():
                    self.gen.put(op, params, shape, at, value, invalid=True)
                cases.append((f"{where}: {broken[0]}", params, None))
        return cases

    def locate(self, op, params, shape, path):
        """The dict at `path` in params, created on the way."""
        if not path:
            return params
        if self.value_at(params, path) is None:
            self.gen.put(op, params, shape, path, {}, invalid=True)
        return self.value_at(params, path)

    @staticmethod
    def value_at(params, path):
        """The value at `path` in params ("[]": the first item), or None."""
        node = params
        for key in path:
            if key == "[]":
                node = node[0] if isinstance(node, list) and node else None
            else:
                node = node.get(key) if isinstance(node, dict) else None
        return node

    def run_invalid(self):
        """Sends every invalid case; each must answer 400 ValidationException."""
        for op in self.operations():
            for label, params, body in self.invalid_cases(op):
                self.counts["invalid"] += 1
                outcome = self.caller.raw(op, params, body=body) if body is not None else self.caller.call(op, params)
                if (outcome.status != 400 or outcome.code != "ValidationException") and op not in self.caller.unknown:
                    self.report.fail("invalid inputs answer 400 ValidationException",
                                     f"{op} {label}: {outcome}\n      request: {short(params) if body is None else body[:160]}")
                if outcome.ok:
                    self.after(op, params, outcome)

    # -- unknown references ------------------------------------------------------------------------

    def run_unknown_references(self):
        """Each member that names a resource, given a well-formed ARN (or ID) of none: the
        operations that model ResourceNotFoundException answer it (list filters may list nothing)."""
        made_up_ids = {"StageSessionId": "st-AAAAAAAAAAAAA", "ParticipantId": "AAAAAAAAAAAA", "ParticipantTokenId": "AAAAAAAAAAAA"}
        for op in self.operations():
            shape = self.input_shape(op)
            if shape is None:
                continue
            modeled = {e.name for e in self.model.operation_model(op).error_shapes}
            for path, member in walk(shape):
                kind = resource_type(member)
                if not kind and member.name not in made_up_ids and member.name != "ResourceArn":
                    continue
                value = made_up_ids.get(member.name) or World.made_up(member)
                params = self.base(op, shape)
                self.gen.put(op, params, shape, path, value, invalid=True)
                self.counts["unknown references"] += 1
                outcome = self.caller.call(op, params)
                where = f"{op} {'.'.join(path)}={value}"
                if op in self.caller.unknown:
                    continue
                if "ResourceNotFoundException" in modeled and not path[-1].startswith("filterBy"):
                    self.report.expect(outcome.code == "ResourceNotFoundException", "unknown references answer ResourceNotFoundException",
                                       f"{where}: {outcome}")
                elif "autoParticipantRecordingConfiguration" in path:
                    # A storage configuration that does not exist is refused; CreateStage's model
                    # has no ResourceNotFoundException, so there it is a ValidationException.
                    self.report.expect(outcome.code == "ValidationException", "unknown references are refused in the modeled error",
                                       f"{where}: {outcome}")
                else:
                    self.report.expect(outcome.ok or outcome.code in ("ResourceNotFoundException", "ValidationException"),
                                       "unknown references answer ResourceNotFoundException", f"{where}: {outcome}")
                    self.lenient.append(f"{where}: {outcome.status} {outcome.code or ''}")

    # -- 5: pagination -----------------------------------------------------------------------------

    def run_pagination(self):
        """Every List operation with maxResults and nextToken: pages of one and of the maximum
        list the same items once each; a made-up nextToken is a ValidationException."""
        w = self.world
        # Two of what the earlier cases deleted or stopped: replicas, public keys (3 per region).
        for destination in w.destinations[:2]:
            if destination not in w.replicated:
                started = self.caller.call("StartParticipantReplication", {"sourceStageArn": w.live_stage, "destinationStageArn": destination,
                                                                           "participantId": w.ingest[0]["participantId"]})
                self.after("StartParticipantReplication", {"destinationStageArn": destination}, started)
        extra_key = w.create("ImportPublicKey", name="paging", publicKeyMaterial=public_key_pem())["arn"]
        for op in self.operations():
            shape = self.input_shape(op)
            if not op.startswith("List") or shape is None or not {"maxResults", "nextToken"} <= set(shape.members):
                continue
            base = self.gen.build(op, shape, "min")
            self.gen.follow_rules(shape, base)
            largest = shape.members["maxResults"].metadata.get("max", 100)
            for attempt in range(3):
                everything, ones = self.pages(op, base, largest), self.pages(op, base, 1)
                if everything is None or ones is None or sorted(everything) == sorted(ones):
                    break
            if everything is None or ones is None:
                continue
            self.counts["paged lists"] += 1
            self.report.expect(len(everything) >= 2, "pagination", f"{op}: {len(everything)} items; the world should give it two or more")
            self.report.expect(len(set(ones)) == len(ones), "pagination", f"{op}: pages of one list an item twice")
            self.report.expect(sorted(everything) == sorted(ones), "pagination",
                               f"{op}: maxResults=1 lists {len(ones)} items, maxResults={largest} lists {len(everything)}")
            garbage = self.caller.call(op, dict(base, nextToken="bm90LWEtdG9rZW4="))
            self.report.expect(garbage.code == "ValidationException", "pagination", f"{op}: a made-up nextToken: {garbage}")
        self.caller.call("DeletePublicKey", {"arn": extra_key})

    def pages(self, op, base, size):
        """The identities of the items `op` lists with maxResults=size, following nextToken."""
        key = next(n for n, m in self.model.operation_model(op).output_shape.members.items() if m.type_name == "list")
        items, token = [], None
        for _ in range(500):
            outcome = self.caller.call(op, dict(base, maxResults=size, **({"nextToken": token} if token else {})))
            self.counts["pages"] += 1
            if not self.report.expect(outcome.ok, "pagination", f"{op} maxResults={size}: {outcome}"):
                return None
            page = outcome.body.get(key, [])
            self.report.expect(len(page) <= size, "pagination", f"{op}: {len(page)} items in a page of {size}")
            items += [identity(item) for item in page]
            token = outcome.body.get("nextToken")
            if not token:
                return items
        self.report.fail("pagination", f"{op}: more than 500 pages")
        return None

    # -- 6: tags -----------------------------------------------------------------------------------

    def run_tags(self):
        """On each kind of taggable resource: 50 tags are kept, a 51st refused, untagging
        removes them; and an untag with a 100,000-character tagKeys answers in the IVS shape."""
        for arn in self.world.taggable:
            existing = self.caller.call("ListTagsForResource", {"resourceArn": arn}).body.get("tags", {})
            keys = list(existing)
            for i in range(0, len(keys), 50):
                self.caller.call("UntagResource", {"resourceArn": arn, "tagKeys": keys[i:i + 50]})
            tags = {f"key{i:02d}": f"value{i}" for i in range(50)}
            tagged = self.caller.call("TagResource", {"resourceArn": arn, "tags": tags})
            listed = self.caller.call("ListTagsForResource", {"resourceArn": arn})
            self.report.expect(tagged.ok and listed.body.get("tags") == tags, "tags",
                               f"{arn}: 50 tags: {tagged}; listed {short(listed.body.get('tags'))}")
            more = self.caller.call("TagResource", {"resourceArn": arn, "tags": {"key50": "one too many"}})
            self.report.expect(not more.ok and 400 <= more.status < 500, "tags", f"{arn}: a 51st tag: {more}")
            untagged = self.caller.call("UntagResource", {"resourceArn": arn, "tagKeys": list(tags)})
            listed = self.caller.call("ListTagsForResource", {"resourceArn": arn})
            self.report.expect(untagged.ok and listed.body.get("tags") == {}, "tags",
                               f"{arn}: untag all: {untagged}; listed {short(listed.body.get('tags'))}")
            self.counts["tagged resources"] += 1
        long_keys = self.caller.call("UntagResource", {"resourceArn": self.world.encoder, "tagKeys": ["k" * 100_000]})
        self.report.expect(long_keys.status == 400 and error_shape_problem(long_keys) is None, "untag with 100,000-character tagKeys",
                           f"DELETE /tags/<arn>?tagKeys=<100000 chars>: {long_keys.status}, x-amzn-ErrorType "
                           f"{long_keys.headers.get('x-amzn-errortype')!r}, body {long_keys.raw[:120]!r}")

    # -- the behaviours being built now --------------------------------------------------------------

    def run_specific(self):
        """Idempotency tokens, DeleteStage and ingest configurations, redundant ingest, and one
        ConflictException and one ServiceQuotaExceededException."""
        c, w = self.caller, self.world
        request = {"stageArn": STAGE_ARN, "destinations": [w.s3_destination()], "idempotencyToken": "conformance-token-1"}
        first, again = c.call("StartComposition", request), c.call("StartComposition", request)
        self.report.expect(first.ok and again.ok and again.body["composition"]["arn"] == first.body["composition"]["arn"],
                           "idempotency", f"the same token and request twice: {first}; {again}")
        for label, other in (("other destinations", dict(request, destinations=[{"channel": {"channelArn": next(w.channels)}}])),
                             ("another stage", dict(request, stageArn=w.live_stage))):
            refused = c.call("StartComposition", other)
            self.report.expect(refused.code in ("ConflictException", "ValidationException"), "idempotency",
                               f"the same token with {label}: {refused}"
                               + (f" (started {refused.body['composition']['arn']})" if refused.ok else ""))
        # DeleteStage: ingest configurations that named the stage name none afterwards.
        doomed = w.create("CreateStage", name="doomed")["arn"]
        pointing = w.create("CreateIngestConfiguration", name="pointing", stageArn=doomed, ingestProtocol="RTMPS")["arn"]
        deleted = c.call("DeleteStage", {"arn": doomed})
        after = c.call("GetIngestConfiguration", {"arn": pointing})
        self.report.expect(deleted.ok and after.ok and after.body["ingestConfiguration"].get("stageArn") == "",
                           "DeleteStage clears the stage from ingest configurations",
                           f"DeleteStage {doomed}: {deleted}; GetIngestConfiguration then: stageArn "
                           f"{after.body.get('ingestConfiguration', {}).get('stageArn')!r}")
        # Redundant ingest: two credentials.
        created = c.call("CreateIngestConfiguration", {"name": "redundant", "ingestProtocol": "RTMPS", "redundantIngest": True})
        updated = c.call("UpdateIngestConfiguration", {"arn": w.spare_ingest["arn"], "redundantIngest": True})
        for label, outcome in (("CreateIngestConfiguration", created), ("UpdateIngestConfiguration", updated)):
            config = outcome.body.get("ingestConfiguration", {}) if outcome.ok else {}
            credentials = config.get("redundantIngestCredentials") or []
            self.report.expect(config.get("redundantIngest") is True and len(credentials) == 2 and
                               all(x.get("participantId") and x.get("streamKey") for x in credentials), "redundant ingest",
                               f"{label} redundantIngest=true: {outcome if not outcome.ok else ''} redundantIngest="
                               f"{config.get('redundantIngest')!r}, redundantIngestCredentials={short(config.get('redundantIngestCredentials'))}")
        c.call("UpdateIngestConfiguration", {"arn": w.spare_ingest["arn"], "redundantIngest": False})
        # A ConflictException and a ServiceQuotaExceededException, so that their shapes are seen.
        conflict = c.call("DeleteStage", {"arn": STAGE_ARN})
        self.report.expect(conflict.code == "ConflictException", "modeled errors", f"DeleteStage of a stage from the configuration file: {conflict}")
        keys = []
        for _ in range(4):
            imported = c.call("ImportPublicKey", {"publicKeyMaterial": public_key_pem()})
            if not imported.ok:
                break
            keys.append(imported.body["publicKey"]["arn"])
        self.report.expect(imported.code == "ServiceQuotaExceededException" and imported.status == 402, "modeled errors",
                           f"ImportPublicKey past the quota of 3 public keys: {imported}")
        for arn in keys:
            c.call("DeletePublicKey", {"arn": arn})

    # -- the end of the live part and a sweep of every Get/List -----------------------------------------

    def wind_down(self):
        """Stops compositions, replications and publishers, waits for them to end, then calls
        every Get and List on what exists, so that end states (endTime, STOPPED) are seen."""
        c, w = self.caller, self.world
        for arn in dict.fromkeys(c.compositions + [w.composition]):
            c.call("StopComposition", {"arn": arn})
        for destination in w.replicated:
            c.call("StopParticipantReplication", {"sourceStageArn": w.live_stage, "destinationStageArn": destination,
                                                  "participantId": w.ingest[0]["participantId"]})
        w.stop_publishers()
        w.wait("compositions to stop", lambda: all(x["state"] in ("STOPPED", "FAILED") for x in
                                                   c.call("ListCompositions", {"maxResults": 100}).body.get("compositions", [])), 30)
        w.wait("the live session to end", lambda: not w.active_session(w.live_stage))
        for arn in dict.fromkeys(c.compositions):
            c.call("GetComposition", {"arn": arn})
        for stage in [w.live_stage] + w.destinations:
            for session in c.call("ListStageSessions", {"stageArn": stage}).body.get("stageSessions", []):
                sid = session["sessionId"]
                c.call("GetStageSession", {"stageArn": stage, "sessionId": sid})
                for p in c.call("ListParticipants", {"stageArn": stage, "sessionId": sid}).body.get("participants", []):
                    ids = {"stageArn": stage, "sessionId": sid, "participantId": p["participantId"]}
                    c.call("GetParticipant", ids)
                    c.call("ListParticipantEvents", ids)
                    c.call("ListParticipantReplicas", {"sourceStageArn": stage, "participantId": p["participantId"]})
        for op in ("ListStages", "ListEncoderConfigurations", "ListStorageConfigurations", "ListIngestConfigurations", "ListPublicKeys"):
            c.call(op, {})

    # -- 7: SigV4 ----------------------------------------------------------------------------------

    def run_sigv4(self):
        """The daemon again with auth on (same state): the minimal valid input of every
        operation that reads or creates works signed; unsigned it is AccessDeniedException (403,
        IVS shape); a tampered body or signature is refused."""
        d = self.d
        status = d.stop()
        self.report.expect(status == 0, "daemon exits cleanly", f"exit status {status}\n{d.log()}")
        d.reconfigure(quotas=QUOTAS, channels=channel_config(), auth={"enabled": True, "accessKeys": {ACCESS_KEY: SECRET}},
                      extra=d.config_extra)
        d.start()
        self.caller.connect(d.endpoint)
        subset = [op for op in self.operations() if op.startswith(("Create", "Get", "List", "Tag", "Untag", "Update"))]
        for op in subset:
            params = self.gen.build(op, self.input_shape(op), "min")
            self.gen.follow_rules(self.input_shape(op), params)
            signed = self.caller.call(op, params)
            self.counts["signed"] += 1
            self.report.expect(signed.status not in (401, 403), "SigV4", f"{op} signed: {signed}")
            refused = self.caller.call(op, params, sign=False)
            self.counts["unsigned"] += 1
            self.report.expect(refused.status == 403 and refused.code == "AccessDeniedException" and error_shape_problem(refused) is None,
                               "SigV4", f"{op} unsigned: {refused} ({error_shape_problem(refused)})")

        def body_changed(headers, data):
            return headers, (data or b"{}")[:-1] + b' }'

        def signature_changed(headers, data):
            auth = headers["Authorization"]
            return dict(headers, Authorization=auth[:-1] + ("0" if auth[-1] != "0" else "1")), data
        for op, params in (("CreateEncoderConfiguration", {"name": "tampered"}), ("ListStages", {}),
                           ("ListTagsForResource", {"resourceArn": self.world.encoder})):
            for label, tamper in (("body changed after signing", body_changed), ("signature changed", signature_changed)):
                if label.startswith("body") and self.model.operation_model(op).http["method"] != "POST":
                    continue
                outcome = self.caller.raw(op, params, tamper=tamper)
                self.counts["tampered"] += 1
                self.report.expect(outcome.status == 403 and outcome.code == "AccessDeniedException", "SigV4", f"{op} {label}: {outcome}")

    # -- 1 and 8: the table and the gap report ----------------------------------------------------------

    def gap_report(self):
        """Prints the operation table and the gaps; fails on gaps outside ALLOWED_GAPS."""
        print(f"\n{'operation':34} {'calls':>6} {'2xx':>6}  modeled errors / other answers")
        for op in self.operations():
            s = self.caller.stats[op]
            errors = ", ".join(f"{k} {v}" for k, v in sorted(s["modeled"].items()))
            other = ", ".join(f"{k} {v}" for k, v in sorted(s["other"].items()))
            print(f"{op:34} {s['calls']:6} {s['ok']:6}  {errors}{' / NOT MODELED: ' + other if other else ''}")
        lacking = [op for op in self.operations() if self.caller.stats[op]["ok"] == 0]
        for op in lacking:
            self.report.fail("gap (a): operations the daemon lacks", f"{op}: never answered 2xx ({dict(self.caller.stats[op]['other'])})")
        never = sorted(self.output_members() - self.caller.seen)
        for name in never:
            shape = name.split(".")[0]
            if shape in ALLOWED_GAP_SHAPES:
                ALLOWED_GAPS.setdefault(name, ALLOWED_GAP_SHAPES[shape])
        headers = collections.defaultdict(list)
        for name in (n for n in never if n not in ALLOWED_GAPS):
            shape, member = name.split(".")
            serialization = self.model.shape_for(shape).members[member].serialization
            if serialization.get("location") == "header":  # the same header in many shapes: one line
                if serialization["name"] in ALLOWED_HEADER_GAPS:
                    continue
                headers[f"{member} (header {serialization['name']})"].append(shape)
            else:
                self.report.fail("gap (b): output members never returned", name)
        for member, shapes in sorted(headers.items()):
            self.report.fail("gap (b): output members never returned", f"{member}: never sent, in {len(shapes)} shapes ({', '.join(shapes)})")
        unechoed = sorted(name for check, name in self.mismatches if check == "round trips")
        for (check, name), entry in sorted(self.mismatches.items()):
            self.report.fail(check, f"{name}: {entry['problem']} ({entry['cases']} responses: {', '.join(sorted(entry['readers']))})")
        for name in unechoed:
            self.report.fail("gap (c): input members that do not round-trip", name)
        print(f"\ngap report: {len(lacking)} operations lacking, {len(never)} output members never returned "
              f"({len([n for n in never if n in ALLOWED_GAPS])} allowed), {len(unechoed)} input members not round-tripped")
        for name in never:
            if name in ALLOWED_GAPS:
                print(f"  allowed: {name}: {ALLOWED_GAPS[name]}")
        for header, reason in ALLOWED_HEADER_GAPS.items():
            print(f"  allowed: header {header}: {reason}")
        if self.other_defaults:
            print("documented defaults not echoed (not enforced outside ECHOED_DEFAULTS):\n  " + "\n  ".join(sorted(self.other_defaults)))

    def output_members(self):
        """Every "Shape.member" of a structure an operation's output or an error can hold."""
        names, visited = set(), set()

        def visit(shape):
            if shape.type_name == "structure" and shape.name not in visited:
                visited.add(shape.name)
                for name, member in shape.members.items():
                    names.add(f"{shape.name}.{name}")
                    visit(member)
            elif shape.type_name == "list":
                visit(shape.member)
            elif shape.type_name == "map":
                visit(shape.value)
        for shape in [self.model.operation_model(op).output_shape for op in self.operations()] + list(self.model.error_shapes):
            if shape is not None:
                visit(shape)
        return names

    def check_request_ids(self):
        """Every response carried an x-amzn-RequestId, each a different one."""
        ids, missing = self.caller.request_ids, self.caller.missing_request_ids
        self.report.expect(not missing, "x-amzn-RequestId on every response",
                           f"missing on {len(missing)} of {sum(ids.values()) + len(missing)} responses: "
                           + ", ".join(f"{k} ({v})" for k, v in collections.Counter(missing).most_common(8)))
        repeated = [k for k, v in ids.items() if v > 1]
        self.report.expect(not repeated, "x-amzn-RequestId on every response", f"{len(repeated)} request IDs answered twice, e.g. {repeated[:3]}")

    def summary(self, started):
        """Prints what was accepted leniently or explained, the counts and the timings."""
        print("\nunknown references where the model does not say ResourceNotFoundException (any 2xx/400/404 accepted):\n  "
              + "\n  ".join(self.lenient))
        if self.explained:
            print("\nvalid inputs refused for an explained reason:\n  " + "\n  ".join(self.explained))
        counts = self.counts
        print(f"\ncounts: {len(self.model.operation_names)} operations, {counts['valid']} valid cases, {counts['invalid']} invalid cases, "
              f"{counts['unknown references']} unknown references, {counts['round trips']} round trips, "
              f"{counts['paged lists']} lists paged in {counts['pages']} pages, {counts['tagged resources']} resources tagged, "
              f"SigV4: {counts['signed']} signed, {counts['unsigned']} unsigned, {counts['tampered']} tampered")
        print("timings: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.timings) + f"; total {time.time() - started:.1f} s")


def identity(item):
    """An item's identity across pages: its ARN, else the item without the members that change
    while paging (states, published, endTime)."""
    if "arn" in item:
        return item["arn"]
    return json.dumps({k: v for k, v in item.items() if not (k.lower().endswith("state") or k in ("published", "endTime"))},
                      sort_keys=True, default=str)


def short(value, limit=240):
    """A value as JSON for a failure line, cut at `limit` characters."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"…({len(text)} chars)"


def channel_config():
    """The daemon's channels: CHANNELS, all pushing to a closed port (refused at once, no retries)."""
    return [{"arn": arn, "ingestEndpoint": "rtmp://127.0.0.1:1/app/", "streamKey": "sk_test",
             "reconnect": {"maxRetries": 0, "baseIntervalSeconds": 0.2}} for arn in CHANNELS]


def free_udp_port():
    """A UDP port free on loopback (the WHIP listener's)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_model_conformance(d):
    """Every operation of botocore's ivs-realtime model, driven with generated valid and invalid
    inputs against the real daemon (sections 1-8 of the module docstring)."""
    started = time.time()
    d.start()
    suite = Conformance(d)
    print(f"botocore model ivs-realtime {suite.model.api_version}: {len(suite.model.operation_names)} operations; seed {SEED}")
    sections = (("world", suite.world.build), ("valid inputs", suite.run_valid), ("invalid inputs", suite.run_invalid),
                ("unknown references", suite.run_unknown_references), ("specific behaviours", suite.run_specific),
                ("tags", suite.run_tags), ("pagination", suite.run_pagination), ("wind down and sweep", suite.wind_down),
                ("SigV4", suite.run_sigv4))
    try:
        for name, section in sections:
            suite.timed(name, section)
    finally:
        suite.world.stop_publishers()
    suite.check_request_ids()
    suite.gap_report()
    suite.summary(started)
    status = d.stop()
    suite.report.expect(status == 0, "daemon exits cleanly", f"exit status {status}")
    if suite.report.failures:
        for check, details in suite.report.failures.items():
            print(f"[{check}] {len(details)} failure(s)\n    " + "\n    ".join(details[:40]) +
                  (f"\n    … and {len(details) - 40} more" if len(details) > 40 else ""))
        raise Failure(f"{sum(map(len, suite.report.failures.values()))} failures in "
                      f"{len(suite.report.failures)} checks: " + "; ".join(suite.report.failures))


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def make_daemon(binary, name, workdir):
    """The daemon under test: quotas high enough for every case, CHANNELS, ingest on free ports."""
    ingest = {"rtmp": {"port": free_port()}, "rtmps": {"port": free_port()}, "whip": {"port": free_udp_port()}}
    daemon = Daemon(binary, workdir, idle=2.0, quotas=QUOTAS, channels=channel_config(), extra={"ingest": ingest})
    daemon.config_extra = {"ingest": ingest}
    return daemon


def main():
    return script_main(TESTS, __doc__, make_daemon)


if __name__ == "__main__":
    sys.exit(main())
