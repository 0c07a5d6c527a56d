#!/usr/bin/python3
"""Headless Chromium against our HTTP/3 server: the checks of
//tests/interop:browser_test and //tests/interop:browser_dpdk_test.

  browser_check.py udp --dataplane=PATH
      The whole kernel-UDP test: a certificate, the site (pages.py) under
      --root, our server on 127.0.0.1 and [::1] with --qlog-dir, one
      Chromium, every check, SIGTERM while a request is in flight, and the
      server's qlog. With --reference instead of --dataplane, the same
      checks run against ngtcp2's gtlsserver (serving the synthetic bodies
      as files), to tell a bug of the test from one of the server; it has
      no ranges, validators or drain, so those checks fail there.
  browser_check.py prepare --out=DIR [--address=IP]
      Writes DIR/root (the site), DIR/cert.pem and DIR/key.pem (SAN: IP or
      localhost) and prints the SPKI hash: for a server this script does not
      start (the DPDK test's, inside a network namespace).
  browser_check.py checks --origin=https://HOST:PORT --spki=HASH [--only=LIST]
      The page checks against a server already running (LIST from:
      subresources, download).
  browser_check.py qlog DIR
      No connection in the server's qlog files under DIR ended with an error.

Each check prints one line, PASS or FAIL, with what was expected; the exit
status is 1 when any failed. Every wait is bounded; the processes this
script starts are stopped by PID (Chromium by its own process group) and
its temporary directories removed, whatever happens.

Runs with /usr/bin/python3 (Debian's python3-websocket is installed there).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import cdp
import certificate
import pages
from records import check_destinations, check_qlog, netlog_quic_closes

SIZES = [0, 1, 1000, 1000000, 20000000]
PARALLEL = 50
PARALLEL_BASE = 100000  # GET /100000 .. /100049, all at once
ABORTED = 20000001      # distinct sizes tell the requests apart in Network events
AFTER_ABORT = 1001
HELD = 20000002         # the request in flight at SIGTERM
DOWNLOAD = 20000000
DRAIN_TIMEOUT = 10      # the server's --drain-timeout
DRAIN_BOUND = DRAIN_TIMEOUT + 5  # SIGTERM to exit, at most
TEST_BUDGET = 100       # seconds for the page checks in all
HOLD_AFTER_SIGTERM = 1.0
SERVER_START_TIMEOUT = 15
PAGE_TIMEOUT = 60
CONTENT_TYPE_PATHS = ["/test.html", "/style.css", "/checks.js", "/img/00.png", "/reval.txt"]
CHECKS = ("subresources", "download")


class Report:
    """PASS/FAIL lines as they come, and the verdict."""

    def __init__(self):
        self.failures = 0
        self.checks = 0

    def add(self, name, ok, detail):
        self.checks += 1
        if not ok:
            self.failures += 1
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)

    def add_results(self, results):
        """Results of checks.js ({name, ok, detail}, or a list of them)."""
        for r in results if isinstance(results, list) else [results]:
            self.add(r["name"], r["ok"], r["detail"])

    def finish(self, what):
        print("%s: %d checks, %d failed" % (what, self.checks, self.failures), flush=True)
        return 1 if self.failures else 0


def stop_on_signals():
    """SIGTERM/SIGINT/SIGHUP (Bazel's timeout, Ctrl-C) unwind through the
    finally blocks that stop our processes."""
    def handler(signum, _frame):
        raise SystemExit(128 + signum)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, handler)


def make_workdir():
    return tempfile.mkdtemp(prefix="browser_test.", dir=os.environ.get("TEST_TMPDIR"))


def free_udp_port():
    """A UDP port free on both 127.0.0.1 and ::1 right now."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as v4:
            v4.bind(("127.0.0.1", 0))
            port = v4.getsockname()[1]
            try:
                with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as v6:
                    v6.bind(("::1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no UDP port free on both 127.0.0.1 and ::1")


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


# --- the server -------------------------------------------------------------


class Server:
    """A server process in its own session, output to a log, stopped by PID."""

    def __init__(self, cmd, log_path):
        self.log_path = log_path
        self.command = cmd
        self.terminated_at = None
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self):
        return self.process.pid

    def await_text(self, text, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in tail(self.log_path, 100):
                return True
            if self.process.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def await_exit(self, timeout):
        """The exit status, or None if it still runs after `timeout` s."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self):
        """SIGTERM (the graceful stop), once; remembers when."""
        if self.terminated_at is None:
            self.terminated_at = time.monotonic()
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def dataplane_command(binary, port, root, qlog_dir, cert, key):
    cmd = [binary, "--listen=127.0.0.1:%d" % port, "--listen=[::1]:%d" % port,
           "--cores=1", "--root=" + root, "--qlog-dir=" + qlog_dir,
           "--cert=" + cert, "--key=" + key, "--drain-timeout=%d" % DRAIN_TIMEOUT]
    return cmd


def gtlsserver_command(port, root, cert, key):
    return ["gtlsserver", "--quiet", "--htdocs=" + root, "::1", str(port), key, cert]


# --- Network events ---------------------------------------------------------


class NetworkRecord:
    """What the browser's Network events say about each request: URL, the
    status the network returned (a 304 stays a 304 here), the protocol and
    the connection it went over."""

    def __init__(self):
        self.requests = {}  # requestId -> dict

    def absorb(self, page):
        for event in page.network_events("Network.requestWillBeSent"):
            p = event["params"]
            self.requests.setdefault(p["requestId"], {})["url"] = p["request"]["url"]
        for event in page.network_events("Network.responseReceived"):
            p = event["params"]
            entry = self.requests.setdefault(p["requestId"], {})
            entry["url"] = p["response"]["url"]
            entry["protocol"] = p["response"].get("protocol")
            entry["connection"] = p["response"].get("connectionId")
            entry.setdefault("status", p["response"]["status"])
        for event in page.network_events("Network.responseReceivedExtraInfo"):
            p = event["params"]
            if "statusCode" in p:
                self.requests.setdefault(p["requestId"], {})["status"] = p["statusCode"]
        for event in page.network_events("Network.requestWillBeSentExtraInfo"):
            p = event["params"]
            headers = {k.lower(): v for k, v in p.get("headers", {}).items()}
            self.requests.setdefault(p["requestId"], {})["headers"] = headers
        page.drop_events("Network.")

    def for_path(self, path):
        """Records of requests whose URL path is `path`, in the order sent."""
        found = []
        for request_id, entry in self.requests.items():
            url = entry.get("url", "")
            if url.split("://", 1)[-1].split("/", 1)[-1].split("?")[0] == path.lstrip("/"):
                found.append(dict(entry, id=request_id))
        return found


# --- the checks -------------------------------------------------------------


def js(value):
    return json.dumps(value)


class BrowserChecks:
    """The checks, run in one tab of one Chromium against `origin`, within
    `budget` seconds in all. Every check reports at least one line under its
    label, also when it cannot run (its page did not load, a call failed or
    the time is up)."""

    def __init__(self, page, origin, report, budget, synthetic_prefix="/"):
        self.page = page
        self.origin = origin
        self.report = report
        self.deadline = time.monotonic() + budget
        self.prefix = synthetic_prefix
        self.network = NetworkRecord()
        self.seen = []          # protocolsSeen() of each page load
        self.loaded = None      # the path of the page loaded, or None
        self.failed_loads = {}  # path -> why it did not load

    def synthetic(self, n):
        """The path whose body is the n synthetic bytes."""
        return "%s%d" % (self.prefix, n)

    def remaining(self):
        return self.deadline - time.monotonic()

    def evaluate(self, call, timeout=PAGE_TIMEOUT):
        return self.page.evaluate(call, max(1.0, min(timeout, self.remaining())))

    def leave(self):
        """Records what the page we are on saw (protocols, Network events)."""
        if self.loaded:
            try:
                self.seen.append(self.evaluate("protocolsSeen()"))
            except cdp.CdpError:
                pass
            self.loaded = None
        self.network.absorb(self.page)

    def load(self, path, fresh=False):
        """On `path`, navigating there unless it is loaded (or `fresh`);
        True when it is. A page that failed to load is not tried again
        unless `fresh`."""
        if self.loaded == path and not fresh:
            return True
        if path in self.failed_loads and not fresh:
            return False
        self.leave()
        try:
            self.page.navigate(self.origin + path, max(1.0, min(PAGE_TIMEOUT, self.remaining())))
        except cdp.CdpError as e:
            self.failed_loads[path] = "%s did not load: %s" % (path, e)
            return False
        self.failed_loads.pop(path, None)
        self.loaded = path
        return True

    def run(self, label, check, page=None, fresh=False):
        """check() on `page` (loaded first); if it cannot run or a call
        fails, one FAIL line under `label`."""
        if self.remaining() <= 0:
            self.report.add(label, False, "not run: the test's time is up")
            return
        if page and not self.load(page, fresh):
            self.report.add(label, False, "not run: " + self.failed_loads[page])
            return
        try:
            check()
        except cdp.CdpError as e:
            self.report.add(label, False, str(e))

    # --- one method per check; labels are in udp_checks/external_checks ---

    def check_load(self, path):
        ok = self.load(path)
        self.report.add("load " + path, ok, "loaded" if ok else self.failed_loads[path])

    def check_sizes(self, sizes):
        self.report.add_results(self.evaluate("checkSizes(%s, %s)" % (js(self.prefix), js(sizes))))

    def check_parallel(self):
        self.report.add_results(self.evaluate("checkParallel(%s, %d, %d)" % (
            js(self.prefix), PARALLEL, PARALLEL_BASE)))

    def check_not_found(self):
        self.report.add_results(self.evaluate("checkNotFound('/no-such-file.html')"))

    def check_content_types(self):
        types = pages.mime_types()
        expected = {p: types[p.rsplit(".", 1)[1]] for p in CONTENT_TYPE_PATHS}
        self.report.add_results(self.evaluate("checkContentTypes(%s)" % js(expected)))

    def check_ranges(self):
        self.report.add_results(self.evaluate(
            "checkRanges('/range.bin', %d)" % pages.RANGE_FILE_SIZE))

    def check_conditional(self):
        self.report.add_results(self.evaluate("checkConditional('/reval.txt')"))

    def check_revalidation(self, path="/cached.txt"):
        """A cached GET, then fetch(cache: "no-cache"): the browser sends a
        conditional request and the server answers 304 (the Network record
        keeps the status the network returned; the page sees the cached
        200). `path` is fetched by nothing else."""
        seen = self.evaluate("browserRevalidate(%s)" % js(path))
        self.network.absorb(self.page)
        requests = self.network.for_path(path)
        statuses = [r.get("status") for r in requests]
        validators = sorted({"if-none-match", "if-modified-since"} &
                            set(requests[-1].get("headers", {}) if requests else {}))
        ok = seen["same"] and seen["status"] == 200 and statuses == [200, 304] and validators
        self.report.add(
            "browser revalidation of " + path, ok,
            "network statuses %s with %s on the second, expected [200, 304] with a validator; "
            "first response's etag %s; responseStatus %s; the page got %s with %s body" % (
                statuses, ", ".join(validators) or "no validator", seen["etag"],
                seen["responseStatus"], seen["status"],
                "the same" if seen["same"] else "a different"))

    def check_abort(self):
        """An aborted 20 MB body, then a GET that must succeed on the same
        connection (the Network record's connection ids)."""
        aborted, after = self.synthetic(ABORTED), self.synthetic(AFTER_ABORT)
        self.report.add_results(self.evaluate("checkAbort(%s, %d, %s, %d)" % (
            js(aborted), ABORTED, js(after), AFTER_ABORT)))
        self.network.absorb(self.page)
        records = self.network.for_path(aborted) + self.network.for_path(after)
        connections = {r.get("connection") for r in records}
        ok = len(records) == 2 and len(connections) == 1 and None not in connections
        self.report.add("same connection after the abort", ok,
                        "%d responses over connection(s) %s, expected 2 over one" % (
                            len(records), sorted(str(c) for c in connections)))

    def check_subresources(self):
        self.report.add_results(self.evaluate(
            "checkSubresources(%s)" % js(pages.expected_page_shape())))

    def check_drain(self, server, drain_bound):
        """SIGTERM while GET /HELD is in flight (its first chunk read, the
        rest held back by the page): the body completes byte-exact, and the
        server exits 0 within the drain bound (checked by check_exit)."""
        label = "GET %s across SIGTERM" % self.synthetic(HELD)
        self.evaluate("startHeldFetch(%s, %d)" % (js(self.synthetic(HELD)), HELD))
        deadline = time.monotonic() + min(PAGE_TIMEOUT, self.remaining())
        while (state := self.evaluate("heldFetchState()")) == "waiting":
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if state == "waiting":
            self.report.add(label, False, "no first chunk within %.0f s" % PAGE_TIMEOUT)
            return
        if state == "done":
            self.report.add(label, False, "ended before it was under way: %s" %
                            self.evaluate("releaseHeldFetch()"))
            return
        server.terminate()
        time.sleep(HOLD_AFTER_SIGTERM)  # the server drains while the request waits
        problem = self.evaluate("releaseHeldFetch()")
        self.report.add(label, not problem, problem or "in flight at SIGTERM, completed byte-exact")

    def check_protocols(self):
        """Every navigation and resource entry of every page said h3 (the
        Performance API), and so did every response (the Network record)."""
        self.leave()
        entries = sum(s["entries"] for s in self.seen)
        other = [o for s in self.seen for o in s["other"]]
        if not entries:
            verdict = "no entries: no page loaded"
        elif other:
            verdict = "%d not h3: %s" % (len(other), "; ".join(other[:5]))
        else:
            verdict = "all h3"
        self.report.add("every request over h3 (Performance API)", entries > 0 and not other,
                        "%d entries on %d page loads, %s" % (entries, len(self.seen), verdict))
        protocols = [r.get("protocol") for r in self.network.requests.values()
                     if "protocol" in r]
        not_h3 = sorted({str(p) for p in protocols if p != "h3"})
        if not protocols:
            verdict = "no responses"
        elif not_h3:
            verdict = "also " + ", ".join(not_h3)
        else:
            verdict = "all h3"
        self.report.add("every response over h3 (Network record)", bool(protocols) and not not_h3,
                        "%d responses, %s" % (len(protocols), verdict))


def udp_checks(c, server, drain_bound):
    """Every check of the kernel-UDP test; the SIGTERM one comes last, as it
    ends the server."""
    sizes = "GET %s<N> bodies" % c.prefix
    c.run("load /test.html", lambda: c.check_load("/test.html"))
    c.run(sizes, lambda: c.check_sizes(SIZES), "/test.html")
    c.run("%d parallel GETs" % PARALLEL, c.check_parallel, "/test.html")
    c.run("GET of a missing file", c.check_not_found, "/test.html")
    c.run("content-types", c.check_content_types, "/test.html")
    c.run("ranges", c.check_ranges, "/test.html")
    c.run("conditional GETs", c.check_conditional, "/test.html")
    c.run("browser revalidation", c.check_revalidation, "/test.html")
    c.run("abort mid-body", c.check_abort, "/test.html")
    c.run("page with %d sub-resources" % pages.SUBRESOURCES, c.check_subresources,
          "/subresources.html")
    c.run("GET %s across SIGTERM" % c.synthetic(HELD),
          lambda: c.check_drain(server, drain_bound), "/test.html", fresh=True)
    c.run("protocols", c.check_protocols)


def external_checks(c, only):
    """The checks of a run against a server started elsewhere."""
    for name in only:
        if name == "subresources":
            c.run("page with %d sub-resources" % pages.SUBRESOURCES, c.check_subresources,
                  "/subresources.html")
        elif name == "download":
            c.run("GET %s" % c.synthetic(DOWNLOAD), lambda: c.check_sizes([DOWNLOAD]),
                  "/test.html")
    c.run("protocols", c.check_protocols)


SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def check_exit(server, report, drain_bound):
    """After SIGTERM (check_drain's, or now if it did not send one): exit 0
    within the drain bound, and no sanitizer report in the server's log
    (under --config=asan)."""
    if server.terminated_at is None:
        server.terminate()
    status = server.await_exit(max(0.0, drain_bound - (time.monotonic() - server.terminated_at)))
    took = time.monotonic() - server.terminated_at
    if status is None:
        report.add("server exit after SIGTERM", False,
                   "still running %.1f s after SIGTERM, expected exit 0 within %d s" % (
                       took, drain_bound))
        server.kill()
    else:
        report.add("server exit after SIGTERM", status == 0,
                   "exit %d %.1f s after SIGTERM, expected 0 within %d s" % (
                       status, took, drain_bound))
    with open(server.log_path, errors="replace") as f:
        found = [r for r in SANITIZER_REPORTS if r in f.read()]
    report.add("no sanitizer report from the server", not found,
               "its log has %s" % ", ".join(found) if found else "none in its log")


# --- the runs -----------------------------------------------------------------


def print_diagnosis(server_log, net_log):
    if server_log:
        print("--- server log (last lines)\n" + tail(server_log), end="")
    closes = netlog_quic_closes(net_log)
    if closes:
        print("--- Chromium's QUIC session closes (net log)")
        print("\n".join(closes[:20]))


def run_udp(args):
    work = make_workdir()
    report = Report()
    server = browser = None
    started = time.monotonic()
    try:
        root = os.path.join(work, "root")
        synthetic = SIZES + [ABORTED, AFTER_ABORT, HELD] + [
            PARALLEL_BASE + i for i in range(PARALLEL)]
        pages.generate(root, synthetic_files=synthetic if args.reference else ())
        cert, key, spki = certificate.make(work, ("localhost",), ("127.0.0.1", "::1"))
        qlog_dir = os.path.join(work, "qlog")
        os.mkdir(qlog_dir)
        port = free_udp_port()
        server_log = os.path.join(work, "server.log")
        if args.reference:
            server = Server(gtlsserver_command(port, root, cert, key), server_log)
            time.sleep(0.5)  # gtlsserver --quiet prints nothing when it is ready
            ready = server.process.poll() is None
        else:
            server = Server(dataplane_command(args.dataplane, port, root, qlog_dir, cert, key),
                            server_log)
            ready = server.await_text("serving", SERVER_START_TIMEOUT)
        print("server: " + " ".join(server.command), flush=True)
        if not ready:
            report.add("server start", False, "did not start: " + tail(server_log))
            return report.finish("browser test")
        net_log = os.path.join(work, "netlog.json")
        browser = cdp.Chromium(flags=cdp.quic_flags(["localhost:%d" % port], spki),
                               net_log=net_log, log_path=os.path.join(work, "chromium.log"))
        print("chromium: " + " ".join(browser.command), flush=True)
        checks = BrowserChecks(browser.new_page(), "https://localhost:%d" % port, report,
                               budget=TEST_BUDGET,
                               synthetic_prefix="/%s/" % pages.SYNTHETIC_DIR
                               if args.reference else "/")
        udp_checks(checks, server, DRAIN_BOUND)
        check_exit(server, report, DRAIN_BOUND)
        browser.close()
        check_destinations(net_log, ["127.0.0.1", "::1"], report)
        if not args.reference:
            check_qlog(qlog_dir, report)
        if report.failures:
            print_diagnosis(server_log, net_log)
    finally:
        if browser:
            browser.close()
        if server:
            server.kill()
        if args.keep:
            print("work directory kept: " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
        print("took %.1f s" % (time.monotonic() - started))
    return report.finish("browser test")


def run_prepare(args):
    os.makedirs(args.out, exist_ok=True)
    pages.generate(os.path.join(args.out, "root"))
    if args.address:
        _, _, spki = certificate.make(args.out, (), (args.address,))
    else:
        _, _, spki = certificate.make(args.out, ("localhost",), ("127.0.0.1", "::1"))
    print(spki)
    return 0


def run_checks(args):
    """The chosen checks against a server already running at --origin, from
    one Chromium started here (inside whatever network namespace this
    process is in)."""
    only = args.only.split(",")
    unknown = [c for c in only if c not in CHECKS]
    if unknown:
        print("unknown check(s) %s (have: %s)" % (", ".join(unknown), ", ".join(CHECKS)))
        return 2
    report = Report()
    host_port = args.origin.split("://", 1)[-1].rstrip("/")
    work = make_workdir()
    net_log = os.path.join(work, "netlog.json")
    try:
        with cdp.Chromium(flags=cdp.quic_flags([host_port], args.spki), net_log=net_log,
                          log_path=os.path.join(work, "chromium.log")) as browser:
            print("chromium: " + " ".join(browser.command), flush=True)
            checks = BrowserChecks(browser.new_page(), args.origin.rstrip("/"), report,
                                   budget=TEST_BUDGET)
            external_checks(checks, only)
        check_destinations(net_log, [host_port.rsplit(":", 1)[0]], report)
        if report.failures:
            print_diagnosis(None, net_log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report.finish("browser checks")


def run_qlog(args):
    report = Report()
    check_qlog(args.dir, report)
    return report.finish("qlog")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    udp = sub.add_parser("udp", help="the whole kernel-UDP test")
    udp.add_argument("--dataplane", help="the server binary")
    udp.add_argument("--reference", action="store_true",
                     help="run the checks against gtlsserver instead of our server")
    udp.add_argument("--keep", action="store_true", help="keep the work directory")
    prepare = sub.add_parser("prepare", help="site, certificate and SPKI for another server")
    prepare.add_argument("--out", required=True)
    prepare.add_argument("--address", help="the server's IP address (the SAN)")
    checks = sub.add_parser("checks", help="page checks against a running server")
    checks.add_argument("--origin", required=True, help="https://HOST:PORT")
    checks.add_argument("--spki", required=True, help="base64 SHA-256 of the server's SPKI")
    checks.add_argument("--only", default=",".join(CHECKS), help="subset of: " + ", ".join(CHECKS))
    qlog = sub.add_parser("qlog", help="check the server's qlog files")
    qlog.add_argument("dir")
    args = parser.parse_args(argv)
    if args.mode == "udp" and not args.dataplane and not args.reference:
        parser.error("udp needs --dataplane (or --reference)")
    stop_on_signals()
    return {"udp": run_udp, "prepare": run_prepare, "checks": run_checks,
            "qlog": run_qlog}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
