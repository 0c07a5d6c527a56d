"""Section 5: stream load, 1,000,000 short streams over one connection (the
shape of SwiftQUIC's QUICStreamLoad): quicload perf://.../64 with 64
concurrent streams. Streams per second from quicload's JSON report; server
allocations per stream after warm-up from the LD_PRELOAD counter: the mark
(SIGUSR1) goes right after quicload's progress line at WARMUP seconds and the
dump (SIGUSR2) right after its next progress line, while the connection is
still busy, so only steady-state streams are counted (the line's request
counts give the streams in between). A run too short for a second line is
dumped after quicload exits, which also counts the connection's close.
Target: 0 per stream."""

import json
import os
import re
import signal
import subprocess
import time

import bench_common
from bench_common import ServerError, start_server
from suite_context import Missing, preload_env, read_alloc_report

FULL_REQUESTS = 1000000
QUICK_REQUESTS = 600000
FULL_WARMUP = 1.0
QUICK_WARMUP = 1.0
STREAMS = 64
BODY = 64
CLIENT_TIMEOUT = 300
PROGRESS = re.compile(r"^\[\s*([0-9.]+)s\] requests (\d+)/(\d+)", re.MULTILINE)


def progress_at(text, seconds):
    """(elapsed, requests done) of the first progress line at or past
    `seconds`, or None. quicload prints one line per second when its output
    is not a terminal: "[    2.0s] requests 357128/1000000  goodput ..."."""
    for match in PROGRESS.finditer(text):
        elapsed = float(match.group(1))
        if elapsed >= seconds:
            return elapsed, int(match.group(2))
    return None


def measure_once(ctx, section, requests, warmup):
    """(streams/s, allocations after the mark, streams after the mark)."""
    port = bench_common.free_udp_port()
    report_path = ctx.path("streams-alloc.json")
    json_path = ctx.path("streams.json")
    for path in (report_path, json_path):
        if os.path.exists(path):
            os.unlink(path)
    env, shown = preload_env(ctx.binary("alloc_preload"), report_path, dump_signal="USR2")
    server_cmd = bench_common.dataplane_command(ctx.binary("dataplane"), port)
    client_cmd = [ctx.binary("quicload"), "perf://127.0.0.1:%d/%d" % (port, BODY),
                  "--connections=1", "--streams=%d" % STREAMS, "--requests=%d" % requests,
                  "--json=" + json_path]
    section.command("server: " + ctx.display(server_cmd, shown, port))
    section.command("client: " + ctx.display(client_cmd, port=port))
    section.command("SIGUSR1 to the server at quicload's progress line for %.0f s, SIGUSR2 at "
                    "its next progress line" % warmup)
    server = start_server(server_cmd, ctx.path("streams-server.log"),
                          bench_common.DATAPLANE_READY, env=env)
    try:
        client = bench_common.BackgroundProcess(client_cmd, ctx.path("streams-client.log"))
        try:
            deadline = time.monotonic() + CLIENT_TIMEOUT
            mark = None
            while mark is None and client.running() and time.monotonic() < deadline:
                mark = progress_at(client.log_text(), warmup)
                if mark is None:
                    time.sleep(0.01)
            if mark is not None:
                server.send_signal(signal.SIGUSR1)
            dumped = None
            while mark is not None and client.running() and time.monotonic() < deadline:
                dumped = progress_at(client.log_text(), mark[0] + 0.5)
                if dumped is not None:
                    if os.path.exists(report_path):
                        os.unlink(report_path)
                    server.send_signal(signal.SIGUSR2)
                    break
                time.sleep(0.01)
            try:
                client.process.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise ServerError("quicload timed out after %d s" % CLIENT_TIMEOUT)
        finally:
            code = client.stop()
        if code != 0:
            raise ServerError("quicload exited %d: %s" % (code, client.log_text().strip()[-300:]))
        if mark is None:
            raise ServerError("quicload finished before its %.0f s progress line: no "
                              "measurement after warm-up (use more requests)" % warmup)
        if dumped is None:
            # The dump rewrites the report file (at_exit false); nothing wrote
            # it before, since the mark only takes a snapshot.
            if os.path.exists(report_path):
                os.unlink(report_path)
            server.send_signal(signal.SIGUSR2)
        dump = read_alloc_report(report_path)
    finally:
        server.stop(signal.SIGTERM)
    if dump is None or not dump.get("marked") or dump.get("at_exit"):
        raise ServerError("no allocation dump with a mark at %s: %r" % (report_path, dump))
    with open(json_path, encoding="utf-8") as f:
        report = json.load(f)
    if report.get("requests_ok") != requests:
        raise ServerError("quicload: %s of %d streams ok" % (report.get("requests_ok"), requests))
    streams_per_sec = report["requests_ok"] / report["duration_sec"]
    counted = (dumped[1] if dumped is not None else requests) - mark[1]
    return streams_per_sec, dump["allocations_since_mark"], counted


def run(ctx, section):
    requests = QUICK_REQUESTS if ctx.quick else FULL_REQUESTS
    warmup = QUICK_WARMUP if ctx.quick else FULL_WARMUP
    try:
        for name in ("alloc_preload", "dataplane", "quicload"):
            ctx.binary(name)
    except Missing as e:
        section.skip(str(e))
        return
    rates, allocations, after = [], [], []
    try:
        for run_index in range(ctx.runs):
            rate, allocs, streams = measure_once(ctx, section, requests, warmup)
            rates.append(rate)
            allocations.append(allocs)
            after.append(streams)
            ctx.log("streams: run %d: %.0f streams/s, %d allocations over %d streams after "
                    "warm-up" % (run_index + 1, rate, allocs, streams))
    except (ServerError, OSError, ValueError, KeyError) as e:
        section.fail(str(e))
        return
    fill(section, requests, warmup, rates, allocations, after)


def fill(section, requests, warmup, rates, allocations, after):
    per_stream = [a / s if s else None for a, s in zip(allocations, after)]
    r = bench_common.summarize(rates)
    a = bench_common.summarize(allocations)
    p = bench_common.summarize([x for x in per_stream if x is not None] or [0])
    per = lambda v: "%.3g" % v
    section.table(["figure", "median", "min", "max", "runs"], [
        ["streams per second (%d x %d-byte perf streams, 1 connection)" % (requests, BODY),
         round(r["median"]), round(r["min"]), round(r["max"]), r["runs"]],
        ["server allocations after warm-up", int(a["median"]), int(a["min"]), int(a["max"]),
         a["runs"]],
        ["server allocations per stream after warm-up", per(p["median"]), per(p["min"]),
         per(p["max"]), p["runs"]],
    ], align="lrrrr")
    section.target("server allocations per stream after warm-up (worst run)", p["max"], "0",
                   p["max"] == 0)
    section.note("%d concurrent streams on one connection; warm-up = the first %.0f s; "
                 "allocations counted from the mark to a dump at quicload's next progress line, "
                 "while the connection is busy (a run too short for it is dumped after quicload "
                 "exits, its close included)." % (STREAMS, warmup))
    section.data = {"requests": requests, "streams_per_sec": rates,
                    "allocations_after_warmup": allocations, "streams_after_warmup": after,
                    "allocations_per_stream": per_stream}
