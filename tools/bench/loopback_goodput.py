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
  bazel build -c opt //dataplane //tests/interop:dpquic_client
  tools/bench/loopback_goodput.py [--runs=5] [--size=1073741824] [--configs=abcde]
                                  [--max-udp-payload=N]

--max-udp-payload caps our datagrams (server and client; default: the
binaries' 16383, reached by path MTU discovery on loopback); 1452 gives
packet-size parity with ngtcp2, which stays at 1452 by default.

Goodput is SIZE*8 / the client's wall-clock time from start to exit
(handshake included, about 1 ms of a ~2 s run). Every process is bounded by
a timeout and killed by PID; traffic stays on 127.0.0.1.
"""
import argparse
import datetime
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

WORKSPACE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATAPLANE = os.path.join(WORKSPACE, "bazel-bin/dataplane/dataplane")
CLIENT = os.path.join(WORKSPACE, "bazel-bin/tests/interop/dpquic_client")
TIMEOUT = 120

DESCRIPTIONS = {
    "a": "ngtcp2 gtlsserver -> ngtcp2 gtlsclient",
    "b": "dpquic dataplane -> ngtcp2 gtlsclient",
    "c": "dpquic dataplane -> dpquic client",
    "d": "ngtcp2 gtlsserver -> dpquic client",
    "e": "dpquic dataplane --gso=off -> dpquic client",
}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


MAX_UDP_PAYLOAD = []  # extra flag for our binaries, set from --max-udp-payload


class Server:
    def __init__(self, kind, port, workdir):
        self.kind, self.port = kind, port
        if kind == "ngtcp2":
            cmd = ["gtlsserver", "--quiet", "--htdocs=" + workdir, "--max-dyn-length=4G",
                   "127.0.0.1", str(port), os.path.join(workdir, "key.pem"),
                   os.path.join(workdir, "cert.pem")]
        else:
            cmd = [DATAPLANE, "--listen=127.0.0.1:%d" % port, "--cores=1"] + MAX_UDP_PAYLOAD
            if kind == "dpquic-nogso":
                cmd.append("--gso=off")
        self.process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        if self.process.poll() is not None:
            sys.exit("server %s exited at start" % kind)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_client(kind, port, size):
    url = "https://127.0.0.1:%d/%d" % (port, size)
    if kind == "ngtcp2":
        cmd = ["gtlsclient", "--quiet", "--exit-on-all-streams-close", "--no-quic-dump",
               "--no-http-dump", "127.0.0.1", str(port), url]
    else:
        cmd = [CLIENT, url] + MAX_UDP_PAYLOAD
    start = time.monotonic()
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=TIMEOUT)
    elapsed = time.monotonic() - start
    if result.returncode != 0:
        sys.exit("client %s failed (%d): %s" % (kind, result.returncode,
                                                 result.stdout.decode()[-500:]))
    return size * 8 / elapsed / 1e9


CONFIGS = {
    "a": ("ngtcp2", "ngtcp2"),
    "b": ("dpquic", "ngtcp2"),
    "c": ("dpquic", "dpquic"),
    "d": ("ngtcp2", "dpquic"),
    "e": ("dpquic-nogso", "dpquic"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size", type=int, default=1 << 30)
    parser.add_argument("--configs", default="abc")
    parser.add_argument("--max-udp-payload", type=int, default=0)
    args = parser.parse_args()
    if args.max_udp_payload:
        MAX_UDP_PAYLOAD.append("--max-udp-payload=%d" % args.max_udp_payload)
    if args.runs < 1 or args.size < 1 or any(c not in CONFIGS for c in args.configs):
        parser.error("--runs and --size must be positive; --configs letters from abcde")
    for binary in (DATAPLANE, CLIENT):
        if not os.access(binary, os.X_OK):
            sys.exit("%s is missing: bazel build -c opt //dataplane //tests/interop:dpquic_client"
                     % binary)
    results = {c: [] for c in args.configs}
    with tempfile.TemporaryDirectory() as workdir:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                        "-keyout", os.path.join(workdir, "key.pem"), "-out",
                        os.path.join(workdir, "cert.pem")], check=True, capture_output=True)
        for run in range(args.runs):
            for config in args.configs:
                server_kind, client_kind = CONFIGS[config]
                port = free_port()
                server = Server(server_kind, port, workdir)
                try:
                    gbps = run_client(client_kind, port, args.size)
                finally:
                    server.stop()
                results[config].append(gbps)
                print("run %d %s: %.2f Gbps" % (run + 1, config, gbps), file=sys.stderr)

    print("Measured %s on %s (%d online cores), %d alternating runs of %d bytes each%s." % (
        datetime.date.today().isoformat(), cpu_model(), os.cpu_count(), args.runs, args.size,
        ", ours with --max-udp-payload=%d" % args.max_udp_payload if args.max_udp_payload else ""))
    print()
    print("| config | median Gbps | min | max | median / (a) |")
    print("|---|---|---|---|---|")
    base = statistics.median(results["a"]) if "a" in results else None
    for config in args.configs:
        values = results[config]
        median = statistics.median(values)
        ratio = "%.2f" % (median / base) if base else "-"
        print("| (%s) %s | %.2f | %.2f | %.2f | %s |" % (
            config, DESCRIPTIONS[config], median, min(values), max(values), ratio))


if __name__ == "__main__":
    main()
