"""A small Chrome DevTools Protocol driver for headless Chromium.

Starts Chromium in its own process group (so stopping it stops exactly the
processes it started), talks to the browser over one WebSocket with flat
sessions, and gives the tests what they need: pages in fresh browser
contexts, navigation, Runtime.evaluate of promises, and Network events.

Needs Debian's python3-websocket, which installs for /usr/bin/python3.

    with Chromium(flags=[...]) as browser:
        page = browser.new_page()
        page.navigate("https://localhost:4433/test.html")
        result = page.evaluate("runChecks()")
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import websocket

CHROMIUM = "chromium"
START_TIMEOUT = 30.0
# Chromium normally writes its DevTools port within 2 s. A start that hangs
# or fails is killed and tried again on a fresh profile, this many times in
# all, so that one stuck start does not fail a test before any traffic.
START_ATTEMPTS = 2
CALL_TIMEOUT = 30.0

# Flags that keep headless Chromium quiet on the network and usable as root:
# no background fetches, no component updates, no first-run or sync traffic.
# Even so, Chromium asks clients2.google.com for the time, update.googleapis.com
# for components and accounts.google.com for accounts; quic_flags' resolver
# rules make those fail before any packet is sent.
BASE_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--enable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
]


class CdpError(Exception):
    """Chromium failed to start, a call failed or timed out."""


def quic_flags(origins, spki):
    """Flags forcing HTTP/3 to `origins` ("host:port"), accepting the
    certificate whose base64 SHA-256 SPKI hash is `spki`, and failing every
    name resolution but the origins' hosts (the rules apply to IP literals
    too), so nothing can reach beyond them."""
    hosts = sorted({o.rsplit(":", 1)[0] for o in origins})
    return ["--origin-to-force-quic-on=" + ",".join(origins),
            "--ignore-certificate-errors-spki-list=" + spki,
            "--host-resolver-rules=MAP * ~NOTFOUND, " +
            ", ".join("EXCLUDE " + h for h in hosts)]


class Chromium:
    """One headless Chromium process and a DevTools connection to it.

    `flags` are added to BASE_FLAGS; `prefix` (say ["taskset", "-c", "1"] or
    ["ip", "netns", "exec", NS]) goes in front of the command; `net_log`
    names a file for --log-net-log. The user data directory is fresh and
    removed on close.
    """

    def __init__(self, flags=(), prefix=(), net_log=None, log_path=None, binary=CHROMIUM):
        self._flags = list(prefix) + [binary] + BASE_FLAGS + list(flags)
        self._net_log = net_log
        self._log = open(log_path, "w") if log_path else subprocess.DEVNULL
        self._ws = None
        self._closed = False
        self._next_id = 0
        self._events = []
        for attempt in range(1, START_ATTEMPTS + 1):
            self._launch()
            try:
                self._connect()
                return
            except CdpError:
                self._stop_process()
                if attempt == START_ATTEMPTS:
                    self.close()
                    raise
            except BaseException:
                self.close()
                raise

    def _launch(self):
        """Starts Chromium on a fresh user data directory."""
        self.user_data_dir = tempfile.mkdtemp(prefix="cdp-profile.")
        cmd = self._flags + [
            "--user-data-dir=" + self.user_data_dir,
            "--remote-debugging-port=0",  # Chromium picks a free port and writes it down
        ]
        if self._net_log:
            cmd.append("--log-net-log=" + self._net_log)
        cmd.append("about:blank")
        self.command = cmd
        self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def _connect(self):
        """Waits for DevToolsActivePort (port, then the browser's path) and
        opens the browser's WebSocket."""
        active = os.path.join(self.user_data_dir, "DevToolsActivePort")
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise CdpError("chromium exited %d at start" % self.process.returncode)
            try:
                with open(active) as f:
                    lines = f.read().split("\n")
                if len(lines) >= 2 and lines[0] and lines[1]:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise CdpError("chromium: no DevTools port within %.0f s" % START_TIMEOUT)
            time.sleep(0.05)
        url = "ws://127.0.0.1:%s%s" % (lines[0].strip(), lines[1].strip())
        # Chromium refuses DevTools WebSockets that carry an Origin header.
        self._ws = websocket.create_connection(url, timeout=CALL_TIMEOUT, suppress_origin=True)

    # --- the protocol ---------------------------------------------------

    def _receive(self, deadline, waiting_for):
        """One message; CdpError when `deadline` passes first (naming what
        we were `waiting_for`) or the connection to Chromium is lost."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CdpError("%s: nothing within the time allowed" % waiting_for)
        try:
            self._ws.settimeout(remaining)
            return json.loads(self._ws.recv())
        except websocket.WebSocketTimeoutException:
            raise CdpError("%s: nothing within the time allowed" % waiting_for) from None
        except (websocket.WebSocketException, OSError) as e:
            raise CdpError("%s: DevTools connection lost (%s)" % (waiting_for, e)) from None

    def call(self, method, params=None, session=None, timeout=CALL_TIMEOUT):
        """Sends one command and returns its result; events that arrive in
        the meantime are kept for wait_event/take_events."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        try:
            self._ws.send(json.dumps(message))
        except (websocket.WebSocketException, OSError) as e:
            raise CdpError("%s: DevTools connection lost (%s)" % (method, e)) from None
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline, "%s (%.0f s)" % (method, timeout))
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError("%s: %s" % (method, reply["error"].get("message", reply)))
                return reply.get("result", {})
            if "method" in reply:
                self._events.append(reply)

    def wait_event(self, predicate, timeout):
        """The first kept or arriving event for which predicate(event) holds
        (it is removed from the kept ones), or CdpError on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._events):
                if predicate(event):
                    return self._events.pop(i)
            message = self._receive(deadline, "awaited event (%.0f s)" % timeout)
            if "method" in message:
                self._events.append(message)

    def take_events(self, predicate):
        """Removes and returns every kept event for which predicate holds."""
        taken = [e for e in self._events if predicate(e)]
        self._events = [e for e in self._events if not predicate(e)]
        return taken

    # --- pages and contexts -----------------------------------------------

    def new_context(self):
        """A fresh browser context: its own cache and its own connections."""
        return self.call("Target.createBrowserContext")["browserContextId"]

    def dispose_context(self, context):
        self.call("Target.disposeBrowserContext", {"browserContextId": context})

    def new_page(self, context=None, network=True):
        """A blank tab (in `context` when given) with Page and Runtime
        events enabled, and Network events unless `network` is False (the
        benchmark leaves DevTools' network instrumentation off)."""
        params = {"url": "about:blank"}
        if context:
            params["browserContextId"] = context
        target = self.call("Target.createTarget", params)["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        for domain in ("Page", "Runtime") + (("Network",) if network else ()):
            page.call(domain + ".enable")
        return page

    # --- shutdown -----------------------------------------------------------

    def close(self):
        """Browser.close, then the process group (exactly the processes this
        Chromium started) is killed if it is still there; the profile goes.
        Only the first call does anything."""
        if self._closed:
            return
        self._closed = True
        if self._ws is not None:
            try:
                self.call("Browser.close", timeout=5)
            except (CdpError, OSError, websocket.WebSocketException):
                pass
            try:
                self._ws.close()
            except (OSError, websocket.WebSocketException):
                pass
            self._ws = None
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._stop_process()
        if self._log is not subprocess.DEVNULL:
            self._log.close()
            self._log = subprocess.DEVNULL

    def _stop_process(self):
        """Kills the process group (exactly the processes this Chromium
        started) if it is still there, and removes the profile."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        shutil.rmtree(self.user_data_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Page:
    """One tab, driven through its flat session."""

    def __init__(self, browser, target, session):
        self.browser = browser
        self.target = target
        self.session = session

    def call(self, method, params=None, timeout=CALL_TIMEOUT):
        return self.browser.call(method, params, self.session, timeout)

    def _mine(self, event):
        return event.get("sessionId") == self.session

    def navigate(self, url, timeout=CALL_TIMEOUT):
        """Loads `url` and waits for its load event; CdpError when the
        navigation fails (say, ERR_QUIC_PROTOCOL_ERROR) or times out."""
        self.browser.take_events(lambda e: self._mine(e) and e["method"] == "Page.loadEventFired")
        result = self.call("Page.navigate", {"url": url}, timeout)
        if result.get("errorText"):
            raise CdpError("navigation to %s: %s" % (url, result["errorText"]))
        self.browser.wait_event(
            lambda e: self._mine(e) and e["method"] == "Page.loadEventFired", timeout)

    def evaluate(self, expression, timeout=CALL_TIMEOUT):
        """The value of `expression` (awaited when it is a promise), as JSON
        data; CdpError with the exception's text when it throws."""
        result = self.call("Runtime.evaluate", {
            "expression": expression, "awaitPromise": True, "returnByValue": True,
            "timeout": int(timeout * 1000)}, timeout + 5)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CdpError("evaluate %s: %s" % (expression[:60], text))
        return result["result"].get("value")

    def network_events(self, method):
        """Removes and returns this page's kept Network events of `method`
        (say "Network.responseReceived")."""
        return self.browser.take_events(lambda e: self._mine(e) and e["method"] == method)

    def drop_events(self, prefix):
        """Forgets this page's kept events whose method starts with `prefix`."""
        self.browser.take_events(lambda e: self._mine(e) and e["method"].startswith(prefix))

    def close(self):
        self.browser.call("Target.closeTarget", {"targetId": self.target})
