#!/usr/bin/env python3
"""Side-by-side goodput of one QUIC connection on loopback, kernel UDP.

Downloads SIZE bytes over h3 (GET /SIZE, a generated body) with one
connection, alternating the configurations run by run so that machine noise
hits all of them alike, and prints a Markdown table of median/min/max Gbps
and the ratios against ngtcp2 (gtlsserver -> gtlsclient):

  a  gtlsserver -> gtlsclient        (ngtcp2 0.12.1 both ends)
  b  dataplane  -> gtlsclient        (our server)
  c  dataplane  -> dpquic_client     (ours both ends)
  d  gtlsserver -> dpquic_client     (our client)
  e  dataplane --gso=off -> dpquic_client

Usage (from the workspace):
  bazel build -c opt //dataplane //tools/client:dpquic_client
  tools/bench/loopback_goodput.py [--runs=5] [--size=1073741824] [--configs=abcde]
                                  [--max-udp-payload=N]

--max-udp-payload caps our datagrams (server and client; default: the
binaries' 16383, reached by path MTU discovery on loopback); 1452 gives
packet-size parity with ngtcp2, which stays at 1452 by default.

The server runs on CPU 0 and the client on CPU 1 (taskset): unpinned, the
scheduler now and then puts both on one core, and ours -> ours came out at
~25 or ~40 Gbps from run to run on this 2-core machine.

Goodput is SIZE*8 / the client's wall-clock time from start to exit
(handshake included, about 1 ms of a ~2 s run). Every process is bounded by
a timeout and killed by PID; traffic stays on 127.0.0.1.

The side-by-side suite (tools/bench/run_all.py) calls measure() directly.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import bench_common

WORKSPACE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATAPLANE = os.path.join(WORKSPACE, "bazel-bin/dataplane/dataplane")
CLIENT = os.path.join(WORKSPACE, "bazel-bin/tools/client/dpquic_client")
TIMEOUT = 120
SERVER_START_TIMEOUT = 5.0

DESCRIPTIONS = {
    "a": "ngtcp2 gtlsserver -> ngtcp2 gtlsclient",
    "b": "dpquic dataplane -> ngtcp2 gtlsclient",
    "c": "dpquic dataplane -> dpquic client",
    "d": "ngtcp2 gtlsserver -> dpquic client",
    "e": "dpquic dataplane --gso=off -> dpquic client",
}

# config -> (server kind, client kind)
CONFIGS = {
    "a": ("ngtcp2", "ngtcp2"),
    "b": ("dpquic", "ngtcp2"),
    "c": ("dpquic", "dpquic"),
    "d": ("ngtcp2", "dpquic"),
    "e": ("dpquic-nogso", "dpquic"),
}


def server_command(kind, port, workdir, dataplane=DATAPLANE, max_udp_payload=0):
    """The command line of a server of `kind` on 127.0.0.1:port."""
    if kind == "ngtcp2":
        key, cert = bench_common.certificate_paths(workdir)
        return bench_common.ngtcp2_server_command(port, key, cert, htdocs=workdir,
                                                  max_dyn_length="4G")
    extra = []
    if max_udp_payload:
        extra.append("--max-udp-payload=%d" % max_udp_payload)
    if kind == "dpquic-nogso":
        extra.append("--gso=off")
    return bench_common.dataplane_command(dataplane, port, extra=extra)


def client_command(kind, port, size, client=CLIENT, max_udp_payload=0):
    """The command line of a client of `kind` downloading SIZE bytes."""
    url = "https://127.0.0.1:%d/%d" % (port, size)
    if kind == "ngtcp2":
        return bench_common.ngtcp2_client_command(port, url)
    cmd = [client, url]
    if max_udp_payload:
        cmd.append("--max-udp-payload=%d" % max_udp_payload)
    return cmd


def run_once(config, size, workdir, dataplane=DATAPLANE, client=CLIENT, max_udp_payload=0,
             timeout=TIMEOUT):
    """One download in `config`: (Gbps, [server command, client command])."""
    server_kind, client_kind = CONFIGS[config]
    port = bench_common.free_udp_port()
    server_cmd = bench_common.taskset(
        bench_common.SERVER_CPU,
        server_command(server_kind, port, workdir, dataplane, max_udp_payload))
    client_cmd = bench_common.taskset(
        bench_common.CLIENT_CPU, client_command(client_kind, port, size, client, max_udp_payload))
    log_path = os.path.join(workdir, "server-%s.log" % config)
    # gtlsserver --quiet prints nothing when it is ready: it gets the settle time.
    server = bench_common.start_server(
        server_cmd, log_path, None if server_kind == "ngtcp2" else bench_common.DATAPLANE_READY,
        timeout=SERVER_START_TIMEOUT, name="server " + server_kind)
    try:
        result = bench_common.run_bounded(client_cmd, timeout=timeout)
    finally:
        server.stop()
    if not result.ok:
        what = "timed out after %d s" % timeout if result.timed_out else \
            "exited %d" % result.returncode
        raise bench_common.ServerError("config %s: client %s %s: %s" % (
            config, client_kind, what, (result.stdout + result.stderr).strip()[-500:]))
    return size * 8 / result.elapsed / 1e9, [server_cmd, client_cmd]


def measure(configs="abcde", runs=5, size=1 << 30, workdir=None, dataplane=DATAPLANE,
            client=CLIENT, max_udp_payload=0, timeout=TIMEOUT, progress=None):
    """Alternating runs of every config: {"gbps": {config: [Gbps per run]},
    "commands": {config: [server cmd, client cmd] of the first run}}.

    `workdir` holds the certificate and logs (a temporary directory when
    None); `progress(text)` is told about each run. Raises
    bench_common.ServerError when a server or client fails, ValueError on
    bad arguments."""
    if runs < 1 or size < 1 or not configs or any(c not in CONFIGS for c in configs):
        raise ValueError("runs and size must be positive; configs are letters from abcde")
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="loopback_goodput.") as tmp:
            return measure(configs, runs, size, tmp, dataplane, client, max_udp_payload,
                           timeout, progress)
    bench_common.make_certificate(workdir)
    gbps = {c: [] for c in configs}
    commands = {}
    for run in range(runs):
        for config in configs:
            value, cmds = run_once(config, size, workdir, dataplane, client, max_udp_payload,
                                   timeout)
            gbps[config].append(value)
            commands.setdefault(config, cmds)
            if progress:
                progress("run %d %s: %.2f Gbps" % (run + 1, config, value))
    return {"gbps": gbps, "commands": commands}


def report(gbps, runs, size, max_udp_payload=0):
    """The Markdown table (with its one-line heading) of measure()'s figures."""
    desc = bench_common.machine_description()
    lines = ["Measured %s on %s (%d online cores), %d alternating runs of %d bytes each%s." % (
        desc["date"], desc["cpu_model"], desc["cores"], runs, size,
        ", ours with --max-udp-payload=%d" % max_udp_payload if max_udp_payload else ""), ""]
    base = bench_common.summarize(gbps["a"])["median"] if "a" in gbps else None
    rows = []
    for config, values in gbps.items():
        stats = bench_common.summarize(values)
        ratio = bench_common.ratio(stats["median"], base)
        rows.append(["(%s) %s" % (config, DESCRIPTIONS[config]), stats["median"], stats["min"],
                     stats["max"], "%.2f" % ratio if ratio is not None else "-"])
    table = bench_common.markdown_table(["config", "median Gbps", "min", "max", "median / (a)"],
                                        rows, align="lrrrr")
    return "\n".join(lines) + "\n" + table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--configs", default="abc")
    parser.add_argument("--max-udp-payload", type=int, default=0)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.size < 1 or any(c not in CONFIGS for c in args.configs):
        parser.error("--runs and --size must be positive; --configs letters from abcde")
    for binary in (DATAPLANE, CLIENT):
        if not os.access(binary, os.X_OK):
            sys.exit("%s is missing: bazel build -c opt //dataplane //tools/client:dpquic_client"
                     % binary)
    try:
        result = measure(args.configs, args.runs, args.size, None, DATAPLANE, CLIENT,
                         args.max_udp_payload, TIMEOUT,
                         progress=lambda text: print(text, file=sys.stderr))
    except (bench_common.ServerError, subprocess.SubprocessError) as e:
        sys.exit("loopback_goodput: %s" % e)
    print(report(result["gbps"], args.runs, args.size, args.max_udp_payload), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
