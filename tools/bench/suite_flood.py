"""Section 9: honest downloads during a flood of Initials from addresses that
never answer (the attack spoofed sources make).

dataplane --cores=2 --max-connections=1000 --stats=1 (500 slots a core).
`flood --rate=5000 --sources=256 --source-addresses=distinct` sends valid,
correctly protected client Initials from 256 loopback addresses for 20 s and
reads nothing but counts the replies. Three seconds in, gtlsclient
downloads 1 MB five times, one after another; every file is checked
byte-exact. Runs alternate with the same downloads against a server nobody
floods, so the ratio of download times shows what the flood costs an honest
client. Also reported: the server's VmRSS growth (peak during the flood
minus before it), the most connections held at once (stats lines), the
Retry packets the flood received and the unvalidated handshakes the server
dropped (`half_open_dropped`). The CI variant is
//tests/interop:spoofed_flood_test at 400/s."""

import os
import re
import time

import bench_common
from bench_common import ServerError, start_server
from suite_context import Missing, read_vm_rss_kib

CORES = 2
MAX_CONNECTIONS = 1000
SHARE = MAX_CONNECTIONS // CORES // 4
FULL = {"rate": 5000, "seconds": 20, "downloads": 5, "size": 1000000}
QUICK = {"rate": 2000, "seconds": 6, "downloads": 2, "size": 200000}
START_AFTER = 3.0
ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def synthetic_ok(path, size):
    """Whether `path` holds the server's `size` synthetic bytes."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data == (ALPHABET * (size // len(ALPHABET) + 1))[:size]


def download(ctx, gtlsclient, port, size, index):
    """Seconds one gtlsclient download of `size` bytes took; raises
    ServerError unless it exits 0 with the bytes exact."""
    directory = ctx.path("flood-download-%d" % index)
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, str(size))
    if os.path.exists(target):
        os.remove(target)
    cmd = bench_common.ngtcp2_client_command(port, "https://127.0.0.1:%d/%d" % (port, size),
                                             download_dir=directory, program=gtlsclient)
    result = bench_common.run_bounded(cmd, 60)
    if not result.ok or not synthetic_ok(target, size):
        raise ServerError("download %d failed (exit %s): %s" % (
            index, result.returncode, (result.stderr or result.stdout).strip()[-300:]))
    return result.elapsed


def measure_once(ctx, section, shape, flooded):
    """{"seconds": [...], "rss_growth_kib", "max_connections", "retries",
    "half_open_dropped", "refused"} for one server lifetime."""
    gtlsclient = ctx.require_tool("gtlsclient")
    port = bench_common.free_udp_port()
    server_cmd = bench_common.dataplane_command(
        ctx.binary("dataplane"), port, cores=CORES,
        extra=["--max-connections=%d" % MAX_CONNECTIONS, "--stats=1"])
    flood_cmd = [ctx.binary("flood"), "--target=127.0.0.1:%d" % port,
                 "--count=%d" % (shape["rate"] * shape["seconds"]),
                 "--duration=%d" % (shape["seconds"] + 5), "--rate=%d" % shape["rate"],
                 "--sources=256", "--source-addresses=distinct", "--drain-ms=500"]
    section.command("server: " + ctx.display(server_cmd, port=port))
    if flooded:
        section.command("flood: " + ctx.display(flood_cmd, port=port))
    server = start_server(server_cmd, ctx.path("flood-server.log"), bench_common.DATAPLANE_READY)
    flood = None
    try:
        time.sleep(0.5)
        baseline = read_vm_rss_kib(server.pid)
        peak = baseline
        if flooded:
            flood = bench_common.BackgroundProcess(flood_cmd, ctx.path("flood.log"))
        time.sleep(START_AFTER)
        seconds = []
        for i in range(shape["downloads"]):
            seconds.append(download(ctx, gtlsclient, port, shape["size"], i))
            peak = max(peak, read_vm_rss_kib(server.pid) or 0)
        if flooded and not flood.running():
            raise ServerError("the flood ended before the downloads did")
        while flood is not None and flood.running():
            peak = max(peak, read_vm_rss_kib(server.pid) or 0)
            time.sleep(0.2)
        flood_log = flood.log_text() if flood is not None else ""
    finally:
        if flood is not None:
            flood.stop()
        server.stop()
    with open(server.log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()  # after the stop: its totals line
    retry = re.findall(r"^flood:.* retry=(\d+)", flood_log, re.MULTILINE)
    return {"seconds": seconds, "rss_growth_kib": peak - baseline,
            "max_connections": max(bench_common.dataplane_connections(log) or [0]),
            "retries_received": int(retry[0]) if retry else 0,
            "half_open_dropped": bench_common.dataplane_total(log, "half_open_dropped"),
            "refused": bench_common.dataplane_total(log, "refused")}


def run(ctx, section):
    shape = QUICK if ctx.quick else FULL
    ctx.binary("flood")
    ctx.require_tool("gtlsclient")
    runs = {"quiet": [], "flooded": []}
    for i in range(ctx.runs):
        for label in ("quiet", "flooded") if i % 2 == 0 else ("flooded", "quiet"):
            ctx.log("flood run %d/%d: %s" % (i + 1, ctx.runs, label))
            runs[label].append(measure_once(ctx, section, shape, label == "flooded"))
    section.data = {"shape": shape, "runs": runs}
    quiet = bench_common.summarize([s for r in runs["quiet"] for s in r["seconds"]])
    flooded = bench_common.summarize([s for r in runs["flooded"] for s in r["seconds"]])
    rows = [["download time, no flood (s)", quiet["median"], quiet["min"], quiet["max"]],
            ["download time, flooded (s)", flooded["median"], flooded["min"], flooded["max"]]]
    for key, label in (("rss_growth_kib", "server VmRSS growth (KiB)"),
                       ("max_connections", "connections at once"),
                       ("retries_received", "Retry packets the flood received"),
                       ("half_open_dropped", "unvalidated handshakes dropped"),
                       ("refused", "connections refused")):
        s = bench_common.summarize([r[key] or 0 for r in runs["flooded"]])
        rows.append([label + ", flooded", s["median"], s["min"], s["max"]])
    section.table(["figure", "median", "min", "max"], rows,
                  caption="%d x %d-byte gtlsclient downloads per run, flood at %d/s for %d s "
                  "from 256 addresses" % (shape["downloads"], shape["size"], shape["rate"],
                                          shape["seconds"]))
    ratio = bench_common.ratio(flooded["median"], quiet["median"])
    section.note("Every download was byte-exact; a flooded download took %sx the time of one "
                 "without the flood (medians). Connections held at once stay at or below a "
                 "quarter of each core's pool (%d x %d) plus the honest client's "
                 "connections." % (
                     bench_common.format_number(ratio), CORES, SHARE))
    most = max(r["max_connections"] for r in runs["flooded"])
    # The honest client's five connections (one a download) on top.
    bound = CORES * SHARE + 5
    section.target("connections at once during the flood", most, "<= %d" % bound, most <= bound)
    if any(r["refused"] for r in runs["flooded"]):
        raise ServerError("the server refused connections during the flood")
    if not runs["flooded"]:
        raise Missing("no run")
