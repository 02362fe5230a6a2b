"""The HTTP side of the WHIP and WHEP clients: one request (HTTP errors returned, transport
errors raised as OSError), and an offer POSTed as a browser's fetch() would, following 307/308
to their Location with the same offer and without Authorization across origins (a
stage-compositor fleet's redirect carries the token in ?access_token= then). Standard library only."""
import urllib.error
import urllib.parse
import urllib.request


def http(method, url, token, body=None, content_type="application/sdp", timeout=10.0):
    """(status, headers with lower-case names, body text)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if body is not None:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=body.encode() if body is not None else None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read().decode(errors="replace")


def post_offer(url, token, offer, follow=True, stop_at=None, limit=3, timeout=10.0, log=None):
    """POSTs `offer`, following redirects (unless `follow` is false, the status is `stop_at`, or
    `limit` were followed). Returns (status, headers, body, final url, token sent there,
    [the redirect targets without their query])."""
    redirects = []
    while True:
        status, headers, body = http("POST", url, token, offer, timeout=timeout)
        if status not in (307, 308) or not headers.get("location") or not follow or len(redirects) >= limit or status == stop_at:
            return status, headers, body, url, token, redirects
        target = urllib.parse.urljoin(url, headers["location"])
        if log:
            log.info("POST %s answered %s: following to %s", url, status, target.split("?")[0])
        if urllib.parse.urlsplit(target)[:2] != urllib.parse.urlsplit(url)[:2]:
            token = None  # fetch() drops Authorization on a cross-origin redirect
        redirects.append(target.split("?")[0])
        url = target
