#!/usr/bin/env python3
"""Side-by-side goodput of one QUIC connection on loopback, kernel UDP.

Downloads SIZE bytes with one connection, alternating the configurations run
by run so that machine noise hits all of them alike, and prints a Markdown
table of median/min/max Gbps and the ratios against ngtcp2 (config a):

  a  gtlsserver -> gtlsclient        (ngtcp2 0.12.1 both ends, h3)
  b  dataplane  -> gtlsclient        (our server, h3)
  c  dataplane  -> dpquic_client     (ours both ends, h3)
  d  gtlsserver -> dpquic_client     (our client, h3)
  e  dataplane --gso=off -> dpquic_client (h3)
  f  quinn_perf server -> quinn_perf client (quinn 0.9.3 both ends, perf)
  g  dataplane  -> quinn_perf client (our server, perf)
  h  quinn_perf server -> dpquic_client (our client, perf)
  i  dataplane  -> dpquic_client     (ours both ends, perf)

h3 configs fetch GET /SIZE (a generated body); perf configs ask for SIZE
bytes over the perf protocol (ALPN "perf"), which is what quinn_perf speaks.
quinn_perf (tools/bench/quinn_perf) is built with cargo on first use.

Usage (from the workspace):
  bazel build -c opt //dataplane //tools/client:dpquic_client
  tools/bench/loopback_goodput.py [--runs=5] [--size=1073741824] [--configs=abc]
                                  [--max-udp-payload=N] [--mtu=N]

--mtu runs every process in a network namespace of its own whose loopback
has that MTU (1500: an Ethernet path), so that every stack meets the same
path MTU. --max-udp-payload caps our datagrams (server and client; default:
the binaries' 16383, reached by path MTU discovery); 1452 is ngtcp2's and
quinn_perf's size, for packet-size parity.

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
import bench_netns
import quinn_peer

WORKSPACE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATAPLANE = os.path.join(WORKSPACE, "bazel-bin/dataplane/dataplane")
CLIENT = os.path.join(WORKSPACE, "bazel-bin/tools/client/dpquic_client")
QUINN_SOURCES = os.path.join(WORKSPACE, "tools/bench/quinn_perf")
TIMEOUT = 120
SERVER_START_TIMEOUT = 5.0

DESCRIPTIONS = {
    "a": "ngtcp2 gtlsserver -> ngtcp2 gtlsclient",
    "b": "dpquic dataplane -> ngtcp2 gtlsclient",
    "c": "dpquic dataplane -> dpquic client",
    "d": "ngtcp2 gtlsserver -> dpquic client",
    "e": "dpquic dataplane --gso=off -> dpquic client",
    "f": "quinn server -> quinn client (perf)",
    "g": "dpquic dataplane -> quinn client (perf)",
    "h": "quinn server -> dpquic client (perf)",
    "i": "dpquic dataplane -> dpquic client (perf)",
}

# config -> (server kind, client kind)
CONFIGS = {
    "a": ("ngtcp2", "ngtcp2"),
    "b": ("dpquic", "ngtcp2"),
    "c": ("dpquic", "dpquic"),
    "d": ("ngtcp2", "dpquic"),
    "e": ("dpquic-nogso", "dpquic"),
    "f": ("quinn", "quinn"),
    "g": ("dpquic", "quinn"),
    "h": ("quinn", "dpquic-perf"),
    "i": ("dpquic", "dpquic-perf"),
}
ALL_CONFIGS = "abcdefghi"
QUINN_CONFIGS = "fgh"


def needs_quinn(configs):
    return any(c in QUINN_CONFIGS for c in configs)


class Stacks:
    """The binaries of a measurement and how they run: `quinn` is
    quinn_perf's path (needed by configs f, g, h only), `max_udp_payload`
    caps ours (0: the default), `wrap(cmd)` the prefix of every command (a
    namespace's `ip netns exec`)."""

    def __init__(self, dataplane=DATAPLANE, client=CLIENT, quinn=None, max_udp_payload=0,
                 wrap=None):
        self.dataplane = dataplane
        self.client = client
        self.quinn = quinn
        self.max_udp_payload = max_udp_payload
        self.wrap = wrap or (lambda cmd: cmd)


def server_command(kind, port, workdir, stacks):
    """The command line of a server of `kind` on 127.0.0.1:port."""
    key, cert = bench_common.certificate_paths(workdir)
    if kind == "ngtcp2":
        return bench_common.ngtcp2_server_command(port, key, cert, htdocs=workdir,
                                                  max_dyn_length="4G")
    if kind == "quinn":
        return quinn_peer.server_command(stacks.quinn, bench_common.HOST, port, key, cert)
    extra = ["--cert=" + cert, "--key=" + key]
    if stacks.max_udp_payload:
        extra.append("--max-udp-payload=%d" % stacks.max_udp_payload)
    if kind == "dpquic-nogso":
        extra.append("--gso=off")
    return bench_common.dataplane_command(stacks.dataplane, port, extra=extra)


def client_command(kind, port, size, workdir, stacks):
    """The command line of a client of `kind` downloading SIZE bytes."""
    if kind == "ngtcp2":
        url = "https://%s:%d/%d" % (bench_common.HOST, port, size)
        return bench_common.ngtcp2_client_command(port, url)
    if kind == "quinn":
        return quinn_peer.client_command(stacks.quinn, bench_common.HOST, port, size,
                                         bench_common.certificate_paths(workdir)[1])
    scheme = "perf" if kind == "dpquic-perf" else "https"
    cmd = [stacks.client, "%s://%s:%d/%d" % (scheme, bench_common.HOST, port, size)]
    if stacks.max_udp_payload:
        cmd.append("--max-udp-payload=%d" % stacks.max_udp_payload)
    return cmd


def _ready_text(server_kind):
    # gtlsserver --quiet prints nothing when it is ready: it gets the settle time.
    return {"ngtcp2": None, "quinn": quinn_peer.READY}.get(server_kind,
                                                          bench_common.DATAPLANE_READY)


def run_once(config, size, workdir, stacks, timeout=TIMEOUT):
    """One download in `config`: (Gbps, [server command, client command])."""
    server_kind, client_kind = CONFIGS[config]
    port = bench_common.free_udp_port()
    server_cmd = stacks.wrap(bench_common.taskset(
        bench_common.SERVER_CPU, server_command(server_kind, port, workdir, stacks)))
    client_cmd = stacks.wrap(bench_common.taskset(
        bench_common.CLIENT_CPU, client_command(client_kind, port, size, workdir, stacks)))
    log_path = os.path.join(workdir, "server-%s.log" % config)
    server = bench_common.start_server(server_cmd, log_path, _ready_text(server_kind),
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


def measure(configs="abcde", runs=5, size=1 << 30, workdir=None, stacks=None, timeout=TIMEOUT,
            progress=None):
    """Alternating runs of every config: {"gbps": {config: [Gbps per run]},
    "commands": {config: [server cmd, client cmd] of the first run}}.

    `workdir` holds the certificate and logs (a temporary directory when
    None); `progress(text)` is told about each run. Raises
    bench_common.ServerError when a server or client fails, ValueError on
    bad arguments."""
    stacks = stacks or Stacks()
    if runs < 1 or size < 1 or not configs or any(c not in CONFIGS for c in configs):
        raise ValueError("runs and size must be positive; configs are letters from %s" %
                         ALL_CONFIGS)
    if needs_quinn(configs) and not stacks.quinn:
        raise ValueError("configs %s need quinn_perf" % QUINN_CONFIGS)
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="loopback_goodput.") as tmp:
            return measure(configs, runs, size, tmp, stacks, timeout, progress)
    bench_common.make_certificate(workdir)
    gbps = {c: [] for c in configs}
    commands = {}
    for run in range(runs):
        for config in configs:
            value, cmds = run_once(config, size, workdir, stacks, timeout)
            gbps[config].append(value)
            commands.setdefault(config, cmds)
            if progress:
                progress("run %d %s: %.2f Gbps" % (run + 1, config, value))
    return {"gbps": gbps, "commands": commands}


def report(gbps, runs, size, max_udp_payload=0, mtu=0):
    """The Markdown table (with its one-line heading) of measure()'s figures."""
    desc = bench_common.machine_description()
    where = "a namespace whose loopback MTU is %d" % mtu if mtu else "loopback"
    lines = ["Measured %s on %s (%d online cores) in %s, %d alternating runs of %d bytes each%s."
             % (desc["date"], desc["cpu_model"], desc["cores"], where, runs, size,
                ", ours with --max-udp-payload=%d" % max_udp_payload if max_udp_payload else ""),
             ""]
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


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--configs", default="abc")
    parser.add_argument("--max-udp-payload", type=int, default=0)
    parser.add_argument("--mtu", type=int, default=0,
                        help="run everything in a namespace whose loopback has this MTU")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.size < 1 or not args.configs or \
            any(c not in CONFIGS for c in args.configs):
        parser.error("--runs and --size must be positive; --configs letters from " + ALL_CONFIGS)
    if args.mtu and not 1280 <= args.mtu <= 65536:
        parser.error("--mtu must be 1280..65536")
    if args.max_udp_payload and not 1200 <= args.max_udp_payload <= 16383:
        parser.error("--max-udp-payload must be 1200..16383")
    return args


def _measure(args, stacks):
    progress = lambda text: print(text, file=sys.stderr)
    if not args.mtu:
        return measure(args.configs, args.runs, args.size, None, stacks, TIMEOUT, progress)
    with bench_netns.LoopbackNamespace(args.mtu) as ns:
        stacks.wrap = ns.wrap
        return measure(args.configs, args.runs, args.size, None, stacks, TIMEOUT, progress)


def main(argv=None):
    args = parse_args(argv)
    for binary in (DATAPLANE, CLIENT):
        if not os.access(binary, os.X_OK):
            sys.exit("%s is missing: bazel build -c opt //dataplane //tools/client:dpquic_client"
                     % binary)
    stacks = Stacks(DATAPLANE, CLIENT, max_udp_payload=args.max_udp_payload)
    try:
        if needs_quinn(args.configs):
            stacks.quinn = quinn_peer.build(QUINN_SOURCES,
                                            progress=lambda t: print(t, file=sys.stderr))
        result = _measure(args, stacks)
    except (bench_common.ServerError, bench_netns.NamespaceError, quinn_peer.Unavailable,
            subprocess.SubprocessError) as e:
        sys.exit("loopback_goodput: %s" % e)
    print(report(result["gbps"], args.runs, args.size, args.max_udp_payload, args.mtu), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
