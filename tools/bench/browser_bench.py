#!/usr/bin/python3
"""Side-by-side browser benchmark: headless Chromium against our server and
against ngtcp2's gtlsserver, over HTTP/3 on loopback.

Both servers serve the same directory (the browser tests' site,
tools/browser/pages.py) with the same certificate, at the same
time, from 127.0.0.1; one Chromium (started once) measures, alternating
between them run by run:

  page   the page with 100 sub-resources (80 images, 18 scripts, a
         stylesheet, the checks script): loadEventEnd - startTime of its
         navigation entry, and the end of its last sub-resource
  20 MB  fetch() of a 20 MB file, read whole: responseEnd - startTime of
         its resource timing entry

Every measurement runs in a fresh browser context, so it has its own new
QUIC connection (the page's timing includes the handshake; the download's
connection was opened by loading a small page first) and an empty cache.
The table gives the medians of --runs runs and the ratio ours / ngtcp2's
(below 1: ours is faster).

Usage (from the workspace):
  bazel build -c opt //dataplane
  tools/bench/browser_bench.py [--runs=5] [--dataplane=bazel-bin/dataplane/dataplane]
                               [--no-pin]

The servers run on CPU 0 and Chromium (all its processes) on CPU 1
(taskset), as the other side-by-side benchmarks pin theirs; --no-pin leaves
placement to the scheduler. Our server runs with --cores=1 (one shard).
gtlsserver runs with its defaults. Every process is stopped by PID;
Chromium resolves no name and talks only to 127.0.0.1. Needs Debian's
/usr/bin/python3 with python3-websocket, chromium and ngtcp2-server.
"""

import argparse
import os
import shlex
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKSPACE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(WORKSPACE, "tools", "browser"))

import bench_common  # noqa: E402

try:
    import cdp  # noqa: E402
    import certificate  # noqa: E402
    import pages  # noqa: E402
except ImportError as e:
    sys.exit("browser_bench: %s: run it with Debian's /usr/bin/python3 "
             "(python3-websocket; tools/setup.sh installs it)" % e)

DATAPLANE = os.path.join(WORKSPACE, "bazel-bin", "dataplane", "dataplane")
DOWNLOAD = 20000000
MEASURE_TIMEOUT = 60.0
SERVERS = ("dataplane", "gtlsserver")
NAMES = {"dataplane": "dpquic dataplane", "gtlsserver": "ngtcp2 gtlsserver"}
# What each server prints once it serves (gtlsserver --quiet: nothing).
READY = {"dataplane": bench_common.DATAPLANE_READY, "gtlsserver": None}


class BenchError(Exception):
    """A measurement failed, or a server exited during it; the message says
    which and why."""


def start_servers(work, root, cert, key, dataplane, pin):
    """Both servers on free ports of 127.0.0.1: {name: (process, port)} and
    their commands. Raises bench_common.ServerError when one does not start."""
    def pinned(cmd):
        return bench_common.taskset(bench_common.SERVER_CPU, cmd) if pin else cmd

    ports = {name: bench_common.free_udp_port() for name in SERVERS}
    while ports["gtlsserver"] == ports["dataplane"]:
        ports["gtlsserver"] = bench_common.free_udp_port()
    commands = {
        "dataplane": pinned(bench_common.dataplane_command(
            dataplane, ports["dataplane"],
            extra=["--root=" + root, "--cert=" + cert, "--key=" + key])),
        "gtlsserver": pinned(bench_common.ngtcp2_server_command(ports["gtlsserver"], key, cert,
                                                                htdocs=root)),
    }
    servers = {}
    try:
        for name in SERVERS:
            process = bench_common.start_server(commands[name], os.path.join(work, name + ".log"),
                                                READY[name], name=name)
            servers[name] = (process, ports[name])
    except BaseException:
        stop_servers(servers)
        raise
    return servers, commands


def stop_servers(servers):
    for process, _ in servers.values():
        process.stop()


def in_fresh_context(browser, measure):
    """measure(page) in a new browser context (its own connections and
    cache), disposed of afterwards."""
    context = browser.new_context()
    try:
        page = browser.new_page(context, network=False)
        return measure(page)
    finally:
        browser.dispose_context(context)


def measure_page(browser, origin):
    """Milliseconds: (loadEventEnd - startTime, last sub-resource's end)."""
    def measure(page):
        page.navigate(origin + "/subresources.html", MEASURE_TIMEOUT)
        t = page.evaluate("navigationTiming()", MEASURE_TIMEOUT)
        if t["resources"] != pages.SUBRESOURCES or t["protocols"] != ["h3"]:
            raise BenchError("%s: %d sub-resources over %s, expected %d over h3" % (
                origin, t["resources"], t["protocols"], pages.SUBRESOURCES))
        return t["loadEventEnd"] - t["startTime"], t["lastResponseEnd"] - t["startTime"]
    return in_fresh_context(browser, measure)


def measure_download(browser, origin):
    """Milliseconds from the 20 MB fetch's start to its response's end."""
    path = "/%s/%d" % (pages.SYNTHETIC_DIR, DOWNLOAD)

    def measure(page):
        page.navigate(origin + "/test.html", MEASURE_TIMEOUT)
        t = page.evaluate("timedDownload(%r)" % path, MEASURE_TIMEOUT)
        if t["status"] != 200 or t["bytes"] != DOWNLOAD or t["protocol"] != "h3":
            raise BenchError("%s%s: status %s, %d bytes over %s, expected 200, %d, h3" % (
                origin, path, t["status"], t["bytes"], t["protocol"], DOWNLOAD))
        return t["responseEnd"] - t["startTime"]
    return in_fresh_context(browser, measure)


def run(runs, warmup, dataplane, pin, progress):
    """{server: {"load": [ms], "last": [ms], "download": [ms]}}, the
    commands used, and how many handshakes our server counted."""
    work = tempfile.mkdtemp(prefix="browser_bench.")
    servers = {}
    try:
        root = os.path.join(work, "root")
        pages.generate(root, synthetic_files=[DOWNLOAD])
        cert, key, spki = certificate.make(work, ("localhost",), ("127.0.0.1",))
        servers, commands = start_servers(work, root, cert, key, dataplane, pin)
        origins = {name: "https://127.0.0.1:%d" % port for name, (_, port) in servers.items()}
        prefix = bench_common.taskset(bench_common.CLIENT_CPU, []) if pin else []
        figures = {name: {"load": [], "last": [], "download": []} for name in SERVERS}
        with cdp.Chromium(flags=cdp.quic_flags([o.split("://")[1] for o in origins.values()],
                                               spki), prefix=prefix) as browser:
            commands["chromium"] = browser.command
            # Chromium's first loads are slower whatever the server (its
            # caches and JIT warm up): rounds that count nothing come first.
            for i in range(warmup):
                for name in SERVERS if i % 2 == 0 else SERVERS[::-1]:
                    measure_page(browser, origins[name])
                    measure_download(browser, origins[name])
                    progress("warm-up %d %s" % (i + 1, name))
            for i in range(runs):
                # Alternate, and flip the order every run: neither server
                # always goes first.
                for name in SERVERS if i % 2 == 0 else SERVERS[::-1]:
                    load, last = measure_page(browser, origins[name])
                    download = measure_download(browser, origins[name])
                    figures[name]["load"].append(load)
                    figures[name]["last"].append(last)
                    figures[name]["download"].append(download)
                    progress("run %d %s: page %.1f ms (last sub-resource %.1f ms), "
                             "20 MB %.1f ms" % (i + 1, name, load, last, download))
        for name, (process, _) in servers.items():
            if not process.running():
                raise BenchError("%s exited during the runs: %s" % (
                    name, process.log_text()[-500:]))
        stop_servers(servers)
        log = bench_common.read_text(servers["dataplane"][0].log_path)
        return figures, commands, bench_common.dataplane_total(log, "handshakes")
    finally:
        stop_servers(servers)
        shutil.rmtree(work, ignore_errors=True)


def report(figures, runs, warmup, command, handshakes):
    median = {name: {k: bench_common.summarize(v)["median"] for k, v in f.items()}
              for name, f in figures.items()}
    ours, theirs = median["dataplane"], median["gtlsserver"]
    rows = []
    for key, label in (("load", "page, 100 sub-resources: loadEventEnd (ms)"),
                       ("last", "page, 100 sub-resources: last sub-resource end (ms)"),
                       ("download", "20 MB fetch: responseEnd - startTime (ms)")):
        ratio = bench_common.ratio(ours[key], theirs[key])
        rows.append([label, ours[key], theirs[key], "%.2f" % ratio if ratio else "-"])
    mbps = {name: DOWNLOAD * 8 / (median[name]["download"] / 1000) / 1e6 for name in SERVERS}
    ratio = bench_common.ratio(mbps["dataplane"], mbps["gtlsserver"])
    rows.append(["20 MB fetch: goodput (Mbit/s)", mbps["dataplane"], mbps["gtlsserver"],
                 "%.2f" % ratio if ratio else "-"])
    desc = bench_common.machine_description()
    heading = ("Headless %s, medians of %d alternating runs after %d uncounted warm-up "
               "rounds, fresh connection per measurement; %s." % (
                   chromium_version(), runs, warmup, bench_common.machine_line(desc)))
    table = bench_common.markdown_table(
        ["measurement", NAMES["dataplane"], NAMES["gtlsserver"], "ours / ngtcp2"], rows,
        align="lrrr", digits=1)
    # Two fresh connections a run (page, download): more handshakes mean the
    # browser retried on a new connection, and those timings include it.
    expected = 2 * (runs + warmup)
    if handshakes == expected:
        note = "%s: %d handshakes, one per measurement." % (NAMES["dataplane"], handshakes)
    else:
        note = ("%s: %s handshakes for %d measurements: the browser retried some on a new "
                "connection, and their timings include it." % (
                    NAMES["dataplane"], handshakes, expected))
    return "%s\n\n%s\n%s\n\nCommand: `%s`\n" % (heading, table, note, command)


def chromium_version():
    result = bench_common.run_bounded([cdp.CHROMIUM, "--version"], timeout=30)
    return result.stdout.strip().split(" built")[0] if result.ok else "(version unknown)"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs per server (default 5)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="uncounted rounds before the runs (default 2)")
    parser.add_argument("--dataplane", default=DATAPLANE,
                        help="our server binary (default bazel-bin/dataplane/dataplane)")
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin the servers and Chromium to CPUs")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    for tool in ("chromium", "gtlsserver", "openssl"):
        if shutil.which(tool) is None:
            parser.error("%s is missing: run tools/setup.sh" % tool)
    if not os.access(args.dataplane, os.X_OK):
        parser.error("no server binary at %s: bazel build -c opt //dataplane" % args.dataplane)

    bench_common.exit_on_sigterm()

    command = " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0])] + sys.argv[1:])
    try:
        figures, commands, handshakes = run(args.runs, args.warmup, args.dataplane,
                                            not args.no_pin,
                                            lambda text: print(text, file=sys.stderr, flush=True))
    except (BenchError, bench_common.ServerError, cdp.CdpError) as e:
        print("browser_bench: %s" % e, file=sys.stderr)
        return 1
    print(report(figures, args.runs, args.warmup, command, handshakes))
    for name in SERVERS + ("chromium",):
        print("- %s: `%s`" % (name, " ".join(commands[name])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
