"""Section 3: server heap allocations during a 1 GiB download, after the
handshake, counted by the LD_PRELOAD counter (//tools/bench:alloc_preload).

The server runs under the preload with DPQUIC_ALLOC_MARK_SIGNAL=USR1; the
client starts, and MARK_DELAY seconds later (the handshake is long done) the
server gets SIGUSR1; after the download the server is stopped (dataplane with
SIGTERM, gtlsserver with SIGINT) so that its exit report is written, and
allocations_since_mark is the figure. Ours (dataplane <- quicload) and ngtcp2
(gtlsserver <- gtlsclient), alternating run by run. Target: ours < 200."""

import os
import shutil
import signal
import subprocess
import time

import bench_common
from bench_common import ServerError, start_server
from suite_context import Missing, preload_env, read_alloc_report

TARGET = 200
FULL_SIZE = 1 << 30
QUICK_SIZE = 512 << 20
FULL_MARK_DELAY = 0.3
QUICK_MARK_DELAY = 0.15
CLIENT_TIMEOUT = 180
OURS = "dpquic dataplane <- quicload"
NGTCP2 = "ngtcp2 gtlsserver <- gtlsclient"


def commands(ctx, config, port, size, report_path):
    """(server cmd, server env, env to show, client cmd, stop signal, ready text)."""
    env, shown = preload_env(ctx.binary("alloc_preload"), report_path)
    url = "https://127.0.0.1:%d/%d" % (port, size)
    if config == OURS:
        server = bench_common.dataplane_command(ctx.binary("dataplane"), port)
        client = [ctx.binary("quicload"), "--connections=1", "--requests=1", "--no-progress",
                  url]
        return server, env, shown, client, signal.SIGTERM, bench_common.DATAPLANE_READY
    key, cert = ctx.certificate()
    server = bench_common.ngtcp2_server_command(port, key, cert, htdocs=ctx.path(),
                                                max_dyn_length="4G")
    client = bench_common.ngtcp2_client_command(port, url)
    return server, env, shown, client, signal.SIGINT, None


def measure_once(ctx, section, config, size, mark_delay):
    """One download: (allocations since the mark, total allocations, client seconds)."""
    port = bench_common.free_udp_port()
    report_path = ctx.path("alloc-report.json")
    if os.path.exists(report_path):
        os.unlink(report_path)
    server_cmd, env, shown, client_cmd, stop_signal, ready = commands(ctx, config, port, size,
                                                                      report_path)
    section.command("%s server: %s" % (config, ctx.display(server_cmd, shown, port)))
    section.command("%s client: %s" % (config, ctx.display(client_cmd, port=port)))
    section.command("%s: SIGUSR1 to the server %.0f ms after the client starts; %s to the "
                    "server after the client exits" % (config, mark_delay * 1000,
                                                       signal.Signals(stop_signal).name))
    server = start_server(server_cmd, ctx.path("alloc-server.log"), ready, env=env)
    try:
        client = bench_common.BackgroundProcess(client_cmd, ctx.path("alloc-client.log"))
        start = time.monotonic()
        try:
            time.sleep(mark_delay)
            marked_while_running = client.running()
            server.send_signal(signal.SIGUSR1)
            try:
                client.process.wait(timeout=CLIENT_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise ServerError("%s: client timed out after %d s" % (config, CLIENT_TIMEOUT))
            elapsed = time.monotonic() - start
        finally:
            code = client.stop()
        if code != 0:
            raise ServerError("%s: client exited %d: %s" % (config, code,
                                                            client.log_text().strip()[-300:]))
        if not marked_while_running:
            raise ServerError("%s: the download ended before the mark (%.0f ms): use a larger "
                              "size" % (config, mark_delay * 1000))
    finally:
        server.stop(stop_signal)
    report = read_alloc_report(report_path)
    if report is None or not report.get("marked"):
        raise ServerError("%s: no allocation report with a mark at %s (server exit %s)" % (
            config, report_path, server.returncode))
    return report["allocations_since_mark"], report["allocations"], elapsed


def run(ctx, section):
    size = QUICK_SIZE if ctx.quick else FULL_SIZE
    mark_delay = QUICK_MARK_DELAY if ctx.quick else FULL_MARK_DELAY
    try:
        for name in ("alloc_preload", "dataplane", "quicload"):
            ctx.binary(name)
    except Missing as e:
        section.skip(str(e))
        return
    configs = [OURS]
    absent = [t for t in ("gtlsserver", "gtlsclient") if shutil.which(t) is None]
    if absent:
        section.skip_part(NGTCP2, "%s not found on PATH" % " and ".join(absent))
    else:
        configs.append(NGTCP2)
    since_mark = {c: [] for c in configs}
    totals = {c: [] for c in configs}
    seconds = {c: [] for c in configs}
    try:
        for run_index in range(ctx.runs):
            for config in configs:
                after, total, elapsed = measure_once(ctx, section, config, size, mark_delay)
                since_mark[config].append(after)
                totals[config].append(total)
                seconds[config].append(elapsed)
                ctx.log("allocations: run %d %s: %d after the mark (%d in all), %.2f s" % (
                    run_index + 1, config, after, total, elapsed))
    except (ServerError, Missing, OSError) as e:
        section.fail(str(e))
        return
    fill(section, size, mark_delay, since_mark, totals, seconds)


def fill(section, size, mark_delay, since_mark, totals, seconds):
    rows = []
    for config in since_mark:
        s = bench_common.summarize(since_mark[config])
        rows.append([config, int(s["median"]), int(s["min"]), int(s["max"]), s["runs"],
                     int(bench_common.summarize(totals[config])["median"]),
                     bench_common.summarize(seconds[config])["median"]])
    section.table(["server <- client", "allocations after the mark (median)", "min", "max",
                   "runs", "whole process (median)", "client seconds"], rows, align="lrrrrrr")
    worst = max(since_mark[OURS])
    section.target("our server's allocations during the download (worst run)", worst,
                   "< %d" % TARGET, worst < TARGET)
    section.note("%d bytes per download; mark %.0f ms after the client starts (the handshake "
                 "takes ~1-2 ms), count up to the server's exit report." % (size,
                                                                            mark_delay * 1000))
    section.data = {"size": size, "allocations_since_mark": since_mark,
                    "allocations_total": totals, "client_seconds": seconds}
    section.charts = {"bar_charts": [{
        "name": "allocations", "title": "Server heap allocations during a download, after the "
        "handshake", "unit": "allocations",
        "runs": [{"config": c, **{k: v for k, v in bench_common.summarize(since_mark[c]).items()
                                  if k != "runs"}} for c in since_mark]}]}
