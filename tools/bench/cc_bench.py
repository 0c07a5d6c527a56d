#!/usr/bin/python3
"""Congestion controllers side by side on an impaired loopback path: our
server with --cc=cubic and --cc=bbr against ngtcp2's gtlsserver with
--cc=cubic and --cc=bbr2, each serving a download to ngtcp2's gtlsclient
through tools/impair.

The path (the impair relay, both directions): --rate=100M, --delay=20ms
(40 ms of round trip), random loss of each --losses value, the relay's
default queue (100 ms at the rate). Every server sends at most 1452-byte
UDP payloads, so the comparison is at equal MTU. For each loss rate the
four servers take turns, run by run (alternating), and the table gives the
median goodput of --runs downloads of --size bytes (elapsed time of the
client, handshake included), with min and max, and the ratio of our BBR to
ngtcp2's BBRv2 and to the link.

Usage:
  bazel run -c opt //tools/bench:cc_bench -- [--runs=5] [--size=20000000]
                                             [--losses=0,0.01,0.05]
                                             [--servers=LIST] [--timeout=600]

Servers run on CPU 0, the relay and the client on CPU 1 (taskset). Every
process listens on and talks to 127.0.0.1 only, runs bounded by --timeout,
and is stopped by PID. Needs ngtcp2-client and ngtcp2-server (gtlsclient,
gtlsserver) and openssl, which tools/setup.sh installs.
"""

import argparse
import os
import sys
import tempfile

import bench_common
import suite_context

LINK_BPS = 100e6
PAYLOAD = 1452
SERVERS = {
    "ours-cubic": "dpquic --cc=cubic",
    "ours-bbr": "dpquic --cc=bbr",
    "ngtcp2-cubic": "ngtcp2 gtlsserver --cc=cubic",
    "ngtcp2-bbr2": "ngtcp2 gtlsserver --cc=bbr2",
}
IMPAIR_READY = "impair: listening on"


class BenchError(Exception):
    """A server, the relay or the client failed; the message says which."""


def server_command(name, port, workdir, dataplane):
    """The command line of server `name` on 127.0.0.1:port."""
    kind, cc = name.split("-")
    if kind == "ngtcp2":
        key, cert = bench_common.certificate_paths(workdir)
        cmd = bench_common.ngtcp2_server_command(port, key, cert, htdocs=workdir,
                                                 max_dyn_length="4G")
        return cmd[:1] + ["--cc=" + cc, "--max-udp-payload-size=%d" % PAYLOAD] + cmd[1:]
    return bench_common.dataplane_command(
        dataplane, port, extra=["--cc=" + cc, "--max-udp-payload=%d" % PAYLOAD])


def impair_command(impair, listen_port, server_port, loss, seed, timeout):
    return [impair, "--listen=127.0.0.1:%d" % listen_port,
            "--server=127.0.0.1:%d" % server_port, "--rate=100M", "--delay=20ms",
            "--loss=%g" % loss, "--seed=%d" % seed, "--duration=%d" % (timeout + 10)]


def run_once(name, loss, seed, size, workdir, binaries, timeout):
    """One download from server `name` through the relay: Mbit/s."""
    server_port = bench_common.free_udp_port()
    relay_port = bench_common.free_udp_port()
    while relay_port == server_port:
        relay_port = bench_common.free_udp_port()
    server = bench_common.start_server(
        bench_common.taskset(bench_common.SERVER_CPU,
                             server_command(name, server_port, workdir, binaries["dataplane"])),
        os.path.join(workdir, name + ".log"),
        None if name.startswith("ngtcp2") else bench_common.DATAPLANE_READY, name=name)
    relay = None
    try:
        relay = bench_common.start_server(
            bench_common.taskset(bench_common.CLIENT_CPU,
                                 impair_command(binaries["impair"], relay_port, server_port,
                                                loss, seed, timeout)),
            os.path.join(workdir, "impair.log"), IMPAIR_READY, name="impair")
        url = "https://127.0.0.1:%d/%d" % (relay_port, size)
        client = bench_common.taskset(bench_common.CLIENT_CPU,
                                      bench_common.ngtcp2_client_command(relay_port, url))
        result = bench_common.run_bounded(client, timeout=timeout)
    finally:
        if relay is not None:
            relay.stop()
        server.stop()
    if not result.ok:
        what = "timed out after %d s" % timeout if result.timed_out else \
            "exited %d" % result.returncode
        raise BenchError("%s at %g loss: gtlsclient %s: %s" % (
            name, loss, what, (result.stdout + result.stderr).strip()[-300:]))
    return size * 8 / result.elapsed / 1e6


def measure(servers, losses, runs, size, binaries, timeout, progress):
    """{loss: {server: [Mbit/s per run]}}, runs alternating between servers."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="cc_bench.") as workdir:
        bench_common.make_certificate(workdir)
        for loss in losses:
            results[loss] = {name: [] for name in servers}
            for run in range(runs):
                for name in servers:
                    mbps = run_once(name, loss, run + 1, size, workdir, binaries, timeout)
                    results[loss][name].append(mbps)
                    progress("loss %g run %d %s: %.1f Mbit/s" % (loss, run + 1, name, mbps))
    return results


def report(results, runs, size):
    """The Markdown table of measure()'s figures, with its heading line."""
    desc = bench_common.machine_description()
    lines = ["Measured %s on %s (%d online cores): %d alternating runs of a %d-byte download "
             "by gtlsclient through tools/impair (100 Mbit/s, 40 ms RTT, random loss both "
             "ways), %d-byte datagrams at most." % (desc["date"], desc["cpu_model"],
                                                  desc["cores"], runs, size, PAYLOAD), ""]
    rows = []
    for loss, by_server in results.items():
        medians = {}
        for name, values in by_server.items():
            stats = bench_common.summarize(values)
            medians[name] = stats["median"]
            rows.append(["%g%%" % (loss * 100), SERVERS[name], stats["median"], stats["min"],
                         stats["max"], "%.0f%%" % (100 * stats["median"] * 1e6 / LINK_BPS)])
        ratio = bench_common.ratio(medians.get("ours-bbr"), medians.get("ngtcp2-bbr2"))
        if ratio is not None:
            rows.append(["%g%%" % (loss * 100), "our BBR / ngtcp2's BBRv2", "%.2f" % ratio, "",
                         "", ""])
    table = bench_common.markdown_table(
        ["loss", "server", "median Mbit/s", "min", "max", "of the link"], rows,
        align="llrrrr", digits=1)
    return "\n".join(lines) + "\n" + table


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size", type=int, default=20000000)
    parser.add_argument("--losses", default="0,0.01,0.05")
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--timeout", type=int, default=600)
    args = parser.parse_args(argv)
    try:
        args.losses = [float(x) for x in args.losses.split(",")]
    except ValueError:
        parser.error("--losses: comma-separated probabilities, e.g. 0,0.01,0.05")
    args.servers = args.servers.split(",")
    if args.runs < 1 or args.size < 1 or args.timeout < 1:
        parser.error("--runs, --size and --timeout must be positive")
    if any(not 0 <= loss < 1 for loss in args.losses):
        parser.error("--losses: each in [0, 1)")
    if any(name not in SERVERS for name in args.servers):
        parser.error("--servers: a comma-separated list of " + ", ".join(SERVERS))
    return args


def main(argv=None):
    args = parse_args(argv)
    binaries = suite_context.standalone_binaries(
        "cc_bench", {"dataplane": "dataplane/dataplane", "impair": "tools/impair/impair"},
        __file__, "bazel build -c opt //dataplane //tools/impair")
    suite_context.require_tools("cc_bench", ("gtlsserver", "gtlsclient", "openssl", "taskset"))
    bench_common.exit_on_sigterm()
    try:
        results = measure(args.servers, args.losses, args.runs, args.size, binaries,
                          args.timeout, lambda text: print(text, file=sys.stderr, flush=True))
    except (BenchError, bench_common.ServerError) as e:
        sys.exit("cc_bench: %s" % e)
    print(report(results, args.runs, args.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
