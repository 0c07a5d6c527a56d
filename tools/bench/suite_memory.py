"""Section 4: memory per idle connection, 10k and 100k connections.

dataplane --cores=1 --max-connections=110000 --stats=1 on CPU 0; its VmRSS
(/proc/PID/status) once it serves and has settled is the baseline. Then
`quicload --idle=SECONDS --connections=N` (CPU 1) opens N connections and
holds them idle; once the server's stats line reports N connections and one
more second has passed, VmRSS is read again. (RSS held - baseline) / N is
the figure, in KiB. quicload is stopped by PID after the reading. Counts
and protocols alternate run by run: HTTP/3 connections (https URL: QUIC,
TLS and the nghttp3 session with its control and QPACK streams) and perf
connections (perf URL: QUIC and TLS only, no application state), which
separates the QUIC stack's share from HTTP/3's. Target: <= 16 KiB per
connection, judged on the HTTP/3 figure (what the dataplane serves)."""

import re
import signal
import time

import bench_common
from bench_common import CLIENT_CPU, SERVER_CPU, ServerError, start_server, taskset
from suite_context import Missing, read_vm_rss_kib

TARGET_KIB = 16.0
FULL_COUNTS = (10000, 100000)
QUICK_COUNTS = (500, 2000)
MAX_CONNECTIONS = 110000
SETTLE = 1.0
STALL = 15.0  # seconds without a new peak before the reading is taken at the peak
# Bounds on the ramp: at least this many handshakes per second, plus slack.
MIN_RATE = 200
SLACK = 30
# (label, URL template): the target is judged on the first.
PROTOCOLS = (("h3", "https://127.0.0.1:%d/"), ("perf", "perf://127.0.0.1:%d/0"))
JUDGED = PROTOCOLS[0][0]


def idle_flag_supported(help_text):
    """quicload's --help lists --idle=SECONDS (not, say, --idle-timeout)."""
    return re.search(r"--idle[=\s]", help_text) is not None


def connections_now(log_text):
    """The connection count of the server's last stats line, or None."""
    counts = bench_common.dataplane_connections(log_text)
    return counts[-1] if counts else None


def measure_once(ctx, section, count, url):
    """(baseline KiB, held KiB, connections seen)."""
    port = bench_common.free_udp_port()
    ramp = count / MIN_RATE + SLACK
    server_cmd = taskset(SERVER_CPU, bench_common.dataplane_command(
        ctx.binary("dataplane"), port,
        extra=["--max-connections=%d" % MAX_CONNECTIONS, "--stats=1"]))
    # --shared-port: 100,000 connections from one UDP port, not a socket each
    # (which would need 100,000 file descriptors).
    client_cmd = taskset(CLIENT_CPU, [ctx.binary("quicload"), "--idle=%d" % int(ramp + 60),
                                      "--connections=%d" % count, "--cores=1", "--shared-port",
                                      "--no-progress", url % port])
    section.command("server: " + ctx.display(server_cmd, port=port))
    section.command("client (N=%d): %s" % (count, ctx.display(client_cmd, port=port)))
    server = start_server(server_cmd, ctx.path("memory-server.log"), bench_common.DATAPLANE_READY)
    try:
        time.sleep(SETTLE)
        baseline = read_vm_rss_kib(server.pid)
        client = bench_common.BackgroundProcess(client_cmd, ctx.path("memory-client.log"))
        try:
            deadline = time.monotonic() + ramp
            best, held, grown = 0, None, time.monotonic()
            while time.monotonic() < deadline and client.running():
                seen = connections_now(server.log_text()) or 0
                if seen > best:
                    best, held, grown = seen, read_vm_rss_kib(server.pid), time.monotonic()
                if seen >= count or time.monotonic() - grown > STALL:
                    break
                time.sleep(0.2)
            if best == 0:
                raise ServerError("no connection opened (quicload %s): %s" % (
                    "running" if client.running() else "exited",
                    client.log_text().strip()[-300:]))
            if best >= count:
                time.sleep(SETTLE)
                held = read_vm_rss_kib(server.pid)
                best = max(best, connections_now(server.log_text()) or 0)
            else:
                section.note("N=%d: at most %d connections were open at once (established "
                             "connections closed while the rest were still being opened); "
                             "the figure divides the server's RSS at that peak by %d." %
                             (count, best, best))
            seen = best
        finally:
            client.stop(signal.SIGTERM)
    finally:
        server.stop(signal.SIGTERM)
    if baseline is None or held is None:
        raise ServerError("could not read the server's VmRSS")
    return baseline, held, seen


def run(ctx, section):
    counts = QUICK_COUNTS if ctx.quick else FULL_COUNTS
    try:
        quicload = ctx.binary("quicload")
        ctx.binary("dataplane")
    except Missing as e:
        section.skip(str(e))
        return
    help_text = bench_common.run_bounded([quicload, "--help"], timeout=30)
    if not idle_flag_supported(help_text.stdout + help_text.stderr):
        section.skip("quicload has no --idle")
        return
    configs = [(label, url, n) for n in counts for label, url in PROTOCOLS]
    per_connection = {(label, n): [] for label, _, n in configs}
    rss = {(label, n): [] for label, _, n in configs}
    try:
        for run_index in range(ctx.runs):
            for label, url, count in configs:
                baseline, held, seen = measure_once(ctx, section, count, url)
                key = (label, count)
                per_connection[key].append((held - baseline) / max(seen, 1))
                rss[key].append({"baseline_kib": baseline, "held_kib": held,
                                 "connections": seen})
                ctx.log("memory: run %d %s N=%d: %d -> %d KiB, %.2f KiB per connection" % (
                    run_index + 1, label, count, baseline, held, per_connection[key][-1]))
    except (ServerError, OSError) as e:
        section.fail(str(e))
        return
    fill(section, per_connection, rss)


def fill(section, per_connection, rss):
    """per_connection and rss are keyed by (protocol label, connection count)."""
    rows = []
    for key in per_connection:
        label, count = key
        s = bench_common.summarize(per_connection[key])
        held = bench_common.summarize([r["held_kib"] - r["baseline_kib"] for r in rss[key]])
        opened = bench_common.summarize([r["connections"] for r in rss[key]])
        rows.append([label, count, opened["min"], held["median"], s["median"], s["min"],
                     s["max"], s["runs"]])
    section.table(["protocol", "idle connections", "held at once (fewest)",
                   "RSS delta KiB (median)", "KiB per connection (median)", "min", "max",
                   "runs"], rows, align="lrrrrrrr")
    judged = [v for (label, _), runs in per_connection.items() if label == JUDGED for v in runs]
    worst = max(judged) if judged else max(max(v) for v in per_connection.values())
    section.target("server RSS per idle HTTP/3 connection (worst run)", worst,
                   "<= %g KiB" % TARGET_KIB, worst <= TARGET_KIB)
    section.note("RSS delta = VmRSS with the connections held - VmRSS of the settled server "
                 "before the client started; per connection = RSS delta / connections held. "
                 "h3: QUIC + TLS + the nghttp3 session (its control and QPACK streams); perf: "
                 "QUIC + TLS only, so the difference is HTTP/3's share.")
    section.data = {
        "kib_per_connection": {"%s/%d" % key: v for key, v in per_connection.items()},
        "rss": {"%s/%d" % key: v for key, v in rss.items()}}
    section.charts = {"bar_charts": [{
        "name": "memory", "title": "Server memory per idle connection", "unit": "KiB",
        "runs": [dict(config="%s, %d connections" % key,
                      **{k: v for k, v in bench_common.summarize(runs).items() if k != "runs"})
                 for key, runs in per_connection.items()]}]}
