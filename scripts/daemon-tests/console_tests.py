#!/usr/bin/env python3
"""The operator console (`/console`) in headless Chromium against the real daemon, driven over
the DevTools protocol on a pipe (`--remote-debugging-pipe`: no extra Python packages). A live
stage with two ffmpeg RTMP publishers and a running composition; the page must list the stage
and its participants, and its buttons must direct the composition as the API then reports it:
PiP clicked with the mouse, a participant featured from the keyboard, a mute, a stop confirmed
in the browser's dialog. The player is started: "playback not available" until the daemon
serves WHEP, or playing once it does. Screenshots (1280x720, and a 375 px phone without
horizontal scroll) go to $CONSOLE_SCREENSHOT_DIR (default <tmp>/stage-compositor-console); the
paths are printed as `console: screenshot ...` lines.

With `auth.enabled`, the page asks for a key, refuses a wrong secret with the daemon's message,
and signs every call (SigV4 in WebCrypto) once given the right one.

Run one test: `console_tests.py BINARY TEST_NAME` (`--list` lists them). Invoked from
Tests/ServerTests/ConsoleDaemonTests.swift under `swift test`.
"""
import base64
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_tests import ENV, REGION, Failure, check, keeping_ingest, script_main  # noqa: E402
from live_tests import Publisher, live_daemon, wait_published  # noqa: E402

AUTH = {"enabled": True, "accessKeys": {ENV["AWS_ACCESS_KEY_ID"]: ENV["AWS_SECRET_ACCESS_KEY"]}}
WAIT = 30  # seconds any one thing may take on a loaded machine (it takes well under 2 normally)


def screenshot_dir():
    path = os.environ.get("CONSOLE_SCREENSHOT_DIR") or os.path.join(tempfile.gettempdir(), "stage-compositor-console")
    os.makedirs(path, exist_ok=True)
    return path


def api(d, operation, body):
    """An API call as an SDK makes it (botocore's SigV4, no Origin); the JSON answer."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    request = AWSRequest(method="POST", url=f"{d.endpoint}/{operation}", data=json.dumps(body),
                         headers={"Content-Type": "application/json"})
    SigV4Auth(Credentials(ENV["AWS_ACCESS_KEY_ID"], ENV["AWS_SECRET_ACCESS_KEY"]), "ivs", REGION).add_auth(request)
    prepared = request.prepare()
    call = urllib.request.Request(prepared.url, data=prepared.body.encode(), headers=dict(prepared.headers), method="POST")
    try:
        with urllib.request.urlopen(call, timeout=30) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        raise Failure(f"{operation}: {error.code} {error.read().decode(errors='replace')}\n{d.log()}")


def until(what, probe, timeout=WAIT, interval=0.1, detail=lambda: ""):
    """probe() until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"{what} within {timeout} s {detail()}".rstrip())
        time.sleep(interval)


def live_show(d, publishers):
    """A live stage with two RTMP publishers (Alice red, Bob blue) and a composition of them in
    a grid; returns (stage, {user: participant ID}, composition ARN)."""
    encoder = api(d, "CreateEncoderConfiguration", {"name": "small", "video": {
        "width": 320, "height": 180, "framerate": 15, "bitrate": 300000}})["encoderConfiguration"]["arn"]
    storage = api(d, "CreateStorageConfiguration", {"name": "local", "s3": {"bucketName": "rec-bucket"}})["storageConfiguration"]["arn"]
    stage = api(d, "CreateStage", {"name": "console-show"})["stage"]
    ids = {}
    for user, name, colour, tone in [("alice", "Alice", "red", 440), ("bob", "Bob", "blue", 660)]:
        ingest = api(d, "CreateIngestConfiguration", {"stageArn": stage["arn"], "userId": user, "ingestProtocol": "RTMP",
                                                      "insecureIngest": True, "attributes": {"name": name}})["ingestConfiguration"]
        ids[user] = ingest["participantId"]
        publishers.append(Publisher(stage["endpoints"]["rtmp"] + ingest["streamKey"], colour, tone, d.workdir, user))
    for participant in ids.values():
        wait_published(d, stage["arn"], participant, timeout=WAIT)
    arn = api(d, "StartComposition", {"stageArn": stage["arn"], "layout": {"grid": {"gridGap": 0}}, "destinations": [
        {"s3": {"storageConfigurationArn": storage, "encoderConfigurationArns": [encoder]}}]})["composition"]["arn"]
    until("the composition ACTIVE", lambda: composition(d, arn)["state"] == "ACTIVE", detail=d.log)
    return stage, ids, arn


def composition(d, arn):
    return api(d, "GetComposition", {"arn": arn})["composition"]


class Chromium:
    """Headless Chromium on the DevTools protocol over a pipe: commands go to its fd 3, answers
    and events come from its fd 4, each message a JSON text ended by a NUL byte."""

    def __init__(self, workdir):
        binary = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)
        check(binary, "chromium is needed (make test-deps)")
        profile = tempfile.mkdtemp(prefix="chromium-", dir=workdir)
        # The two pipe ends Chromium keeps, moved above 10 so they are never 3 or 4 themselves.
        commands_read, self.commands = os.pipe()
        self.answers_fd, answers_write = os.pipe()
        theirs = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands_read, answers_write)]
        os.close(commands_read)
        os.close(answers_write)
        flags = ["--headless=new", "--no-sandbox", "--remote-debugging-pipe", f"--user-data-dir={profile}", "--disable-gpu",
                 "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                 "--disable-extensions", "--mute-audio", "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
                 "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
                 "--autoplay-policy=no-user-gesture-required", "--window-size=1280,720", "about:blank"]
        self.log = open(os.path.join(workdir, "chromium.log"), "w")
        self.process = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{theirs[0]} 4>&{theirs[1]} {theirs[0]}<&- {theirs[1]}>&-', binary, *flags],
            pass_fds=theirs, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        for fd in theirs:
            os.close(fd)
        self.lock = threading.Condition()
        self.next_id = 0
        self.answers = {}
        self.events = []
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        pending = b""
        while True:
            try:
                data = os.read(self.answers_fd, 1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            pending += data
            *messages, pending = pending.split(b"\0")
            with self.lock:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self.answers[message["id"]] = message
                    else:
                        self.events.append(message)
                self.lock.notify_all()
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def post(self, method, params=None, session=None):
        """Sends a command; its id (answer(id) waits for the answer)."""
        with self.lock:
            self.next_id += 1
            ident = self.next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.commands, data):]
        except OSError as error:
            raise Failure(f"chromium is gone ({error}; exit {self.process.poll()})")
        return ident

    def answer(self, ident, what, timeout=WAIT):
        deadline = time.monotonic() + timeout
        with self.lock:
            while ident not in self.answers:
                if self.closed or time.monotonic() > deadline:
                    raise Failure(f"chromium gave no answer to {what} (exit {self.process.poll()})")
                self.lock.wait(0.2)
            answer = self.answers.pop(ident)
        if "error" in answer:
            raise Failure(f"chromium: {what}: {answer['error']}")
        return answer.get("result", {})

    def send(self, method, params=None, session=None, timeout=WAIT):
        return self.answer(self.post(method, params, session), method, timeout)

    def event(self, method, session, timeout=WAIT):
        """The first event `method` of the session not yet taken."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for index, event in enumerate(self.events):
                    if event.get("method") == method and event.get("sessionId") == session:
                        return self.events.pop(index)
                if self.closed or time.monotonic() > deadline:
                    raise Failure(f"chromium: no {method}")
                self.lock.wait(0.2)

    def problems(self, session):
        """Uncaught exceptions, console errors and security (CSP) reports of the page; failed
        loads the page expects (the WHEP POST's 404) are not problems."""
        found = []
        with self.lock:
            events = [e for e in self.events if e.get("sessionId") == session]
        for event in events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append("exception: " + details.get("exception", {}).get("description", details.get("text", "?")))
            elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append("console.error: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif event["method"] == "Log.entryAdded":
                entry = params.get("entry", {})
                if entry.get("level") == "error" and entry.get("source") != "network":
                    found.append(f"{entry.get('source')}: {entry.get('text')}")
        return found

    def close(self):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=10)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.process.wait(timeout=10)
        for fd in (self.commands, self.answers_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()


class Page:
    """One tab of the browser at a fixed viewport."""

    def __init__(self, browser, width=1280, height=720):
        self.browser = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(method)
        self.viewport(width, height)

    def send(self, method, params=None):
        return self.browser.send(method, params, self.session)

    def viewport(self, width, height, mobile=False):
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def open(self, url):
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise Failure(f"page script {expression[:80]!r}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def status(self):
        try:
            return self.evaluate("document.getElementById('status')?.textContent ?? ''")
        except Failure as failure:
            return str(failure)

    def wait(self, what, expression, timeout=WAIT):
        """Until the expression is true (an exception, as while the page loads, is false)."""
        guarded = f"(() => {{ try {{ return ({expression}); }} catch (error) {{ return null; }} }})()"
        return until(what, lambda: self.evaluate(guarded), timeout=timeout,
                     detail=lambda: f"(status line: {self.status()!r}; problems: {self.browser.problems(self.session)})")

    def centre(self, selector):
        rect = self.evaluate(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();
            return {{x: r.x + r.width / 2, y: r.y + r.height / 2, disabled: e.disabled}}; }})()""")
        check(rect, f"no {selector} on the page")
        check(not rect["disabled"], f"{selector} is disabled")
        return rect

    def click(self, selector, wait_for_answer=True):
        """A real mouse click at the element's centre; with wait_for_answer=False the release is
        only sent (a dialog it opens blocks its answer), and its id returned."""
        at = self.centre(selector)
        base = {"x": at["x"], "y": at["y"], "button": "left", "clickCount": 1}
        self.send("Input.dispatchMouseEvent", {**base, "type": "mouseMoved", "button": "none"})
        self.send("Input.dispatchMouseEvent", {**base, "type": "mousePressed"})
        release = self.browser.post("Input.dispatchMouseEvent", {**base, "type": "mouseReleased"}, self.session)
        if wait_for_answer:
            return self.browser.answer(release, "mouseReleased")
        return release

    def press_enter(self, selector):
        """Keyboard: focus the element as Tab would, then Enter."""
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        check(self.evaluate(f"document.activeElement === document.querySelector({json.dumps(selector)})"), f"{selector} takes focus")
        key = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}
        self.send("Input.dispatchKeyEvent", {**key, "type": "keyDown", "text": "\r"})
        self.send("Input.dispatchKeyEvent", {**key, "type": "keyUp"})

    def type_into(self, selector, text):
        self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.focus(); e.select?.(); }})()")
        self.send("Input.insertText", {"text": text})

    def screenshot(self, name):
        """The viewport, scrolled to the top of the page, as a PNG in screenshot_dir()."""
        self.evaluate("window.scrollTo(0, 0); new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        path = os.path.join(screenshot_dir(), name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"]))
        return path

    def check_clean(self):
        problems = self.browser.problems(self.session)
        check(not problems, f"the page logged errors: {problems}")


def js(text):
    return json.dumps(text)


def row(kind, key):
    """The selector of a keyed list item (a composition card, a participant row)."""
    return f'{kind} > [data-key={js(key)}]'


def test_console_directs_a_live_stage(d):
    """Authentication off: the page's same-origin calls go unsigned. It lists the stage and both
    participants; PiP (mouse) and Feature (keyboard) and Mute and Stop (with its dialog) reach
    the composition; the events show the token exchange; no script error or CSP report."""
    d.start()
    publishers, browser = [], None
    try:
        stage, ids, arn = live_show(d, publishers)
        composition_id = arn.rsplit("/", 1)[1]
        card = row("#composition-list", arn)
        browser = Chromium(d.workdir)
        page = Page(browser)
        started = time.monotonic()
        page.open(f"{d.endpoint}/console")
        page.wait("the stage listed, selected and live", """[...document.querySelectorAll('#stage-list button')].some(b =>
            b.getAttribute('aria-pressed') === 'true' && b.textContent.includes('console-show') && b.textContent.includes('live session'))""")
        for user, participant in ids.items():
            page.wait(f"{user} in the participants table", f"""(() => {{ const r = document.querySelector({js(row('#participant-rows', participant))});
                return r && r.textContent.includes({js(user)}) && r.textContent.includes('CONNECTED') && r.textContent.includes('RTMP'); }})()""")
        page.wait("the composition's card, ACTIVE, in a grid", f"""(() => {{ const c = document.querySelector({js(card)});
            return c && c.textContent.includes('ACTIVE') && c.querySelector('[data-action="grid"]').getAttribute('aria-pressed') === 'true'
                && c.querySelectorAll('.mix li').length === 2; }})()""")
        check(page.evaluate("document.getElementById('who-text').textContent").startswith("Unsigned"), "the page calls unsigned")
        print(f"console: the stage, its participants and the composition shown {time.monotonic() - started:.1f} s after loading")

        # PiP, with the mouse: the composition's layout as GetComposition reports it.
        clicked = time.monotonic()
        page.click(f'{card} [data-action="pip"]')
        layout = until("GetComposition's layout PiP", lambda: composition(d, arn)["layout"].get("pip") is not None and
                       composition(d, arn)["layout"], detail=lambda: f"(status line: {page.status()!r})")
        print(f"console: PiP in GetComposition {time.monotonic() - clicked:.2f} s after the click: {json.dumps(layout)}")
        page.wait("PiP pressed on the page", f"document.querySelector({js(card + ' [data-action=pip]')}).getAttribute('aria-pressed') === 'true'")

        # Feature Bob, from the keyboard: the layout names the attribute, Bob's record has it.
        page.press_enter(f'{card} .mix [data-key={js(ids["bob"])}] [data-action="feature"]')
        until("Bob featured (UpdateParticipant)", lambda: api(d, "GetParticipant", {
            "stageArn": stage["arn"], "sessionId": api(d, "GetStage", {"arn": stage["arn"]})["stage"]["activeSessionId"],
            "participantId": ids["bob"]})["participant"]["attributes"] == {"name": "Bob", "featured": "true"},
            detail=lambda: f"(status line: {page.status()!r})")
        check(composition(d, arn)["layout"]["pip"].get("featuredParticipantAttribute") == "featured",
              f"the layout features by the attribute: {composition(d, arn)['layout']}")
        page.wait("Bob shown featured", f"""document.querySelector({js(f'{card} .mix [data-key={js(ids["bob"])}] [data-action="feature"]')})
            .getAttribute('aria-pressed') === 'true'""")
        page.wait("the token exchange among the events", "document.getElementById('events').textContent.includes('TOKEN_EXCHANGED')")
        check(page.evaluate("document.querySelector('#events li .event-name').textContent") == "TOKEN_EXCHANGED",
              "the newest event first")

        # Mute Alice in the mix.
        page.click(f'{card} .mix [data-key={js(ids["alice"])}] [data-action="mute"]')
        page.wait("Alice muted", f"""document.querySelector({js(f'{card} .mix [data-key={js(ids["alice"])}] [data-action="mute"]')})
            .textContent === 'Unmute' && document.getElementById('status').textContent.includes('muted')""")

        # The player: the composite over WHEP, in the page.
        page.click(f'{card} [data-action="play"]')
        playback = page.wait("the player's answer", f"""(() => {{ const s = document.querySelector({js(card + ' .player-status')}).textContent;
            return /not available|Playing|failed/.test(s) ? s : null; }})()""")
        print(f"console: player of {composition_id}: {playback}")
        check("Playing" in playback, f"the player: {playback}")
        page.wait("video frames", f"document.querySelector({js(card + ' video')}).videoWidth > 0")
        # PiP, clicked while it plays: the picture in the player changes within a second (a
        # participant goes into the window). First Grid, settled; then the page samples the video
        # (32x18) before the PiP click and every 10 ms after it, until 3 % of its pixels changed by
        # more than 150 levels (sum of R, G, B).
        page.click(f'{card} [data-action="grid"]')
        until("GetComposition's layout Grid", lambda: composition(d, arn)["layout"].get("grid") is not None)
        time.sleep(1.5)
        changed_after = page.evaluate(f"""new Promise((resolve) => {{
            const video = document.querySelector({js(card + ' video')});
            const canvas = document.createElement('canvas');
            canvas.width = 32; canvas.height = 18;
            const g = canvas.getContext('2d', {{ willReadFrequently: true }});
            const sample = () => {{ g.drawImage(video, 0, 0, 32, 18); return g.getImageData(0, 0, 32, 18).data; }};
            const before = sample();
            const clicked = performance.now();
            document.querySelector({js(card + ' [data-action="pip"]')}).click();
            const poll = () => {{
                const now = sample();
                let changed = 0;
                for (let i = 0; i < now.length; i += 4) {{
                    if (Math.abs(now[i] - before[i]) + Math.abs(now[i + 1] - before[i + 1]) + Math.abs(now[i + 2] - before[i + 2]) > 150) changed++;
                }}
                if (changed >= 0.03 * now.length / 4) resolve(performance.now() - clicked);
                else if (performance.now() - clicked > 5000) resolve('no change in 5 s');
                else setTimeout(poll, 10);
            }};
            poll();
        }})""")
        print(f"console: PiP clicked while playing: the picture changed {changed_after} ms after the click")

        check(isinstance(changed_after, (int, float)) and changed_after <= 1000,
              f"the playing video changed {changed_after} ms after the click; layout now "
              f"{api(d, 'GetComposition', {'arn': arn})['composition']['layout']}")

        shot = page.screenshot("console-1280x720.png")
        print(f"console: screenshot 1280x720: {shot}")
        page.viewport(375, 740, mobile=True)
        page.wait("a 375 px page without horizontal scroll",
                  "document.documentElement.clientWidth === 375 && document.documentElement.scrollWidth <= 375")
        print(f"console: screenshot 375 px: {page.screenshot('console-375.png')}")
        page.viewport(1280, 720)

        # Stop, confirmed in the browser's dialog.
        release = page.click(f'{card} [data-action="stop"]', wait_for_answer=False)
        dialog = browser.event("Page.javascriptDialogOpening", page.session)
        check(dialog["params"]["type"] == "confirm" and composition_id in dialog["params"]["message"], f"the dialog: {dialog}")
        page.send("Page.handleJavaScriptDialog", {"accept": True})
        browser.answer(release, "mouseReleased")
        until("the composition STOPPED", lambda: composition(d, arn)["state"] == "STOPPED", detail=d.log)
        page.wait("the card ended", f"""(() => {{ const c = document.querySelector({js(card)});
            return c.textContent.includes('STOPPED') && c.querySelector('[data-action="pip"]').disabled; }})()""")
        page.check_clean()
    finally:
        if browser:
            browser.close()
        for publisher in publishers:
            publisher.kill()
    check(d.stop() == 0, "exit status")


def test_console_signs_in_with_an_access_key(d):
    """Authentication on: the page asks for a key; a wrong secret is refused with the daemon's
    message; the right one signs every call (the stage and its participants listed, PiP sent)."""
    d.start()
    publishers, browser = [], None
    try:
        stage, ids, arn = live_show(d, publishers)
        card = row("#composition-list", arn)
        browser = Chromium(d.workdir)
        page = Page(browser)
        page.open(f"{d.endpoint}/console")
        page.wait("the sign-in form", "!document.getElementById('sign-in').hidden && document.getElementById('main').hidden")
        print(f"console: screenshot of the sign-in: {page.screenshot('console-sign-in.png')}")
        access_key = ENV["AWS_ACCESS_KEY_ID"]
        for secret, expectation in [("not-the-secret", "refused"), (ENV["AWS_SECRET_ACCESS_KEY"], "signed")]:
            page.type_into("#access-key-id", access_key)
            page.type_into("#secret-access-key", secret)
            page.press_enter("#secret-access-key")
            if expectation == "refused":
                page.wait("the wrong secret refused", """!document.getElementById('sign-in').hidden &&
                    document.getElementById('sign-in-reason').textContent.includes('signature does not match')""")
                check(page.evaluate("sessionStorage.getItem('stage-compositor.console.credentials')") is None,
                      "a refused key is not kept")
        page.wait("the stage listed", """[...document.querySelectorAll('#stage-list button')].some(b =>
            b.getAttribute('aria-pressed') === 'true' && b.textContent.includes('console-show'))""")
        for participant in ids.values():
            page.wait("the participants listed", f"document.querySelector({js(row('#participant-rows', participant))}) !== null")
        check(page.evaluate("document.getElementById('who-text').textContent") == f"Signed in as {access_key} ({REGION})", "signed in")
        check(page.evaluate("document.getElementById('secret-access-key').value") == "", "the secret is not left in the form")
        saved = json.loads(page.evaluate("sessionStorage.getItem('stage-compositor.console.credentials')") or "{}")
        check(saved.get("accessKeyId") == access_key, "the key is kept in the tab's sessionStorage")
        check(page.evaluate("localStorage.length") == 0, "nothing in localStorage")
        page.wait("the composition's card", f"document.querySelector({js(card + ' [data-action=pip]')})?.disabled === false")
        page.click(f'{card} [data-action="pip"]')
        until("GetComposition's layout PiP (a signed UpdateComposition)", lambda: "pip" in composition(d, arn)["layout"],
              detail=lambda: f"(status line: {page.status()!r})")
        page.check_clean()
        # Signing out forgets the key.
        page.click("#sign-out-button")
        page.wait("the sign-in form again", "!document.getElementById('sign-in').hidden")
        check(page.evaluate("sessionStorage.getItem('stage-compositor.console.credentials')") is None, "the key is forgotten")
    finally:
        if browser:
            browser.close()
        for publisher in publishers:
            publisher.kill()
    check(d.stop() == 0, "exit status")


TESTS = {name[len("test_"):]: fn for name, fn in globals().items() if name.startswith("test_")}


def main():
    def make_daemon(binary, name, workdir):
        daemon = keeping_ingest(live_daemon(binary, workdir, idle=30))
        if name == "console_signs_in_with_an_access_key":
            daemon.reconfigure(auth=AUTH, idle=30)
        return daemon
    return script_main(TESTS, __doc__, make_daemon)


if __name__ == "__main__":
    sys.exit(main())
