#!/usr/bin/python3
"""Where our server's time goes during handshakes, by class, and what a
handshake target would need.

Runs one handshake load with the commands of the suite's section 2 (our
dataplane on CPU 0, quicload --handshake-only on CPU 1; on kernel UDP, or
on DPDK with two processes joined by net_memif), records the server with
`perf record --call-graph dwarf` while it runs, and puts each sample in
one class by its stack:

  limit crypto          under ECDSA_sign, X25519 or X25519_public_from_private:
                        the operations handshake_crypto_bench times
  BoringSSL's TLS work  the rest of SSL_do_handshake, without our callbacks
  our callbacks         our code that SSL_do_handshake calls (secrets, packet
                        keys, ticket keys)
  kernel                samples in the kernel outside the handshake
  engine                everything else: our code, mimalloc, libc, nghttp3,
                        ipsec-mb, the memif PMD

On DPDK only the worker lcore's thread is recorded, during the suite's
steady window. It polls without sleeping, so its samples include idle
spins: the shares divide by its busy time in that window
(dpquic_dpdk_busy_seconds_total), and the idle samples are taken out of
the engine.

With --ratio (the suite's figure for the same load) and --target, it also
prints what the target needs: at a fixed crypto speed the ratio rises as
the total falls, so target T from ratio R needs the total at R/T of
today's; the limit crypto, BoringSSL's TLS work and the kernel are held
fixed, and the rest is what is left for our callbacks and the engine.

Usage:
  bazel run -c opt //tools/bench:handshake_profile -- [--backend=udp|dpdk]
      [--resume] [--seconds=N] [--frequency=HZ] [--ratio=R --target=T]

Needs root (perf attaching to the server; DPDK: hugepages), perf
(linux-perf) and taskset. Every process talks over 127.0.0.1 or the memif
pair, is bounded in time, and is stopped by its PID.
"""

import argparse
import collections
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import bench_common
import suite_context
import suite_handshakes
import suite_handshakes_dpdk

LIMIT, TLS, CALLBACKS, KERNEL, ENGINE = (
    "limit crypto", "BoringSSL's TLS work", "our callbacks", "kernel", "engine")
CLASSES = (LIMIT, TLS, CALLBACKS, KERNEL, ENGINE)
LIMIT_FUNCTIONS = frozenset(("ECDSA_sign", "X25519", "X25519_public_from_private"))
HANDSHAKE_FUNCTION = "SSL_do_handshake"
OUR_PREFIX = "dpquic::"
KERNEL_DSO = "[kernel.kallsyms]"


class ProfileError(RuntimeError):
    """perf or the load failed; the message says which."""


def parse_frame(line):
    """(symbol, dso) of one `perf script -F ip,sym,dso` callchain line:
    "<ip> <symbol> (<dso>)"; the symbol may contain spaces."""
    words = line.split()
    if len(words) < 2:
        return None
    dso = words[-1]
    if dso.startswith("(") and dso.endswith(")"):
        dso = os.path.basename(dso[1:-1])  # [kernel.kallsyms] has no directory
        symbol = " ".join(words[1:-1])
    else:
        dso, symbol = "", " ".join(words[1:])
    return symbol, dso


def read_stacks(lines):
    """Yields each sample's stack, leaf first, from `perf script` lines
    (samples are separated by blank lines)."""
    stack = []
    for line in lines:
        if not line.strip():
            if stack:
                yield stack
                stack = []
            continue
        frame = parse_frame(line)
        if frame:
            stack.append(frame)
    if stack:
        yield stack


def classify(stack):
    """The class of one sample; `stack` is [(symbol, dso)], leaf first."""
    symbols = [symbol for symbol, _ in stack]
    if any(symbol in LIMIT_FUNCTIONS for symbol in symbols):
        return LIMIT
    if HANDSHAKE_FUNCTION in symbols:
        inside = symbols[:symbols.index(HANDSHAKE_FUNCTION)]
        return CALLBACKS if any(s.startswith(OUR_PREFIX) for s in inside) else TLS
    if stack and stack[0][1] == KERNEL_DSO:
        return KERNEL
    return ENGINE


def count_classes(stacks):
    """Counter of classes over `stacks`."""
    return collections.Counter(classify(stack) for stack in stacks)


def shares(counts, busy_fraction=None):
    """{class: share of the server's busy time}. Without `busy_fraction`
    every sample is busy; with it, (1 - busy_fraction) of the samples are
    idle spins, taken out of the engine's."""
    total = sum(counts.values())
    if total == 0:
        raise ProfileError("perf recorded no sample of the server")
    busy = float(total) if busy_fraction is None else total * busy_fraction
    idle = total - busy
    if idle > counts.get(ENGINE, 0):
        raise ProfileError("the busy fraction %.2f leaves fewer engine samples than idle ones"
                           % busy_fraction)
    result = {c: counts.get(c, 0) / busy for c in CLASSES}
    result[ENGINE] = (counts.get(ENGINE, 0) - idle) / busy
    return result


def needs(share, ratio, target):
    """What target `target` needs from `ratio` with these shares (see the
    module's text): {"total": share of today's total, "fixed": limit +
    TLS work + kernel, "left": what that leaves, "today": our callbacks +
    engine today}."""
    total = ratio / target
    fixed = share[LIMIT] + share[TLS] + share[KERNEL]
    return {"total": total, "fixed": fixed, "left": total - fixed,
            "today": share[CALLBACKS] + share[ENGINE]}


class Profiler:
    """perf record of one process while recording() is entered."""

    def __init__(self, data_path, frequency):
        self.data_path = data_path
        self.frequency = frequency

    @contextlib.contextmanager
    def recording(self, pid, threads=None):
        """Records process `pid`, or only its `threads` (TIDs) when given,
        until the block ends."""
        target = ["-t", ",".join(str(t) for t in threads)] if threads else ["-p", str(pid)]
        with open(self.data_path + ".log", "w", encoding="utf-8") as log:
            process = subprocess.Popen(
                ["perf", "record", "-q", "-F", str(self.frequency), "--call-graph",
                 "dwarf,16384", "-o", self.data_path] + target,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
            try:
                yield
            finally:
                code = self._stop(process)
        if code not in (0, -signal.SIGINT, 128 + signal.SIGINT):
            raise ProfileError("perf record exited %d: %s" % (
                code, bench_common.read_text(self.data_path + ".log").strip()[-300:]))

    @staticmethod
    def _stop(process):
        """SIGINT (perf writes its data and exits), then its exit code."""
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()


def script_counts(data_path, timeout):
    """count_classes over `perf script` of `data_path`, read as it streams."""
    with subprocess.Popen(["perf", "script", "-i", data_path, "-F", "ip,sym,dso"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          errors="replace") as script:
        try:
            counts = count_classes(read_stacks(script.stdout))
        finally:
            script.stdout.close()
            try:
                script.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                script.kill()
                raise ProfileError("perf script took over %d s" % timeout)
    if script.returncode != 0:
        raise ProfileError("perf script exited %d" % script.returncode)
    return counts


def run_load(ctx, backend, resumed, seconds, profiler):
    """One section-2 load with `profiler` recording the server: (the
    handshakes per server CPU-second or per busy lcore-second, the worker's
    busy fraction or None)."""
    section = suite_context.Section("handshake_profile", 2, "handshake profile")
    if backend == "udp":
        port = bench_common.free_udp_port()
        cmd = suite_handshakes.server_command(ctx.binary("dataplane"), port)
        report = suite_handshakes.load(
            ctx, section, "dpquic dataplane", cmd, port, signal.SIGTERM,
            bench_common.DATAPLANE_READY, seconds, ["--resume"] if resumed else [],
            profiler=profiler)
        return suite_handshakes.per_cpu_second(report), None
    why = suite_handshakes_dpdk.unavailable(section, os.geteuid())
    if why:
        raise ProfileError("DPDK: " + why)
    config = suite_handshakes_dpdk.OURS_DPDK_RESUMED if resumed else \
        suite_handshakes_dpdk.OURS_DPDK
    # The window is the recorded part; the run leaves time before and after.
    report = suite_handshakes_dpdk.load(ctx, section, config, seconds + 6, seconds, 0,
                                        profiler=profiler)
    return suite_handshakes_dpdk.per_busy_second(report), \
        suite_handshakes_dpdk.busy_fraction(report)


def report_text(args, rate, busy_fraction, share):
    """The printed result."""
    unit = "per server CPU-second" if args.backend == "udp" else "per busy lcore-second"
    lines = ["%s handshakes on %s: %s %s%s" % (
        "resumed" if args.resume else "full", "kernel UDP" if args.backend == "udp" else
        "DPDK (net_memif)", "%.0f" % rate if rate else "?", unit,
        ", worker busy %.0f%% of the window" % (100 * busy_fraction)
        if busy_fraction is not None else "")]
    rows = [[c, "%.1f%%" % (100 * share[c])] for c in CLASSES]
    lines.append(bench_common.markdown_table(["class", "share of the server's busy time"],
                                             rows, align="lr"))
    if args.ratio is not None:
        need = needs(share, args.ratio, args.target)
        lines.append("target %.2f from ratio %.3f: the total at %.1f%% of today's; limit "
                     "crypto + TLS work + kernel %.1f%%, which leaves %.1f%% for our "
                     "callbacks and the engine (today %.1f%%)" % (
                         args.target, args.ratio, 100 * need["total"], 100 * need["fixed"],
                         100 * need["left"], 100 * need["today"]))
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="handshake_profile", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("udp", "dpdk"), default="udp",
                        help="kernel UDP or DPDK over net_memif (default udp)")
    parser.add_argument("--resume", action="store_true",
                        help="resumed handshakes (quicload --resume)")
    parser.add_argument("--seconds", type=int, default=4,
                        help="seconds recorded, 1..60 (default 4)")
    parser.add_argument("--frequency", type=int, default=999,
                        help="samples per second, 100..4999 (default 999)")
    parser.add_argument("--ratio", type=float,
                        help="the suite's ratio to the limit for this load")
    parser.add_argument("--target", type=float, help="the target ratio (with --ratio)")
    args = parser.parse_args(argv)
    if not 1 <= args.seconds <= 60:
        parser.error("--seconds: 1..60")
    if not 100 <= args.frequency <= 4999:
        parser.error("--frequency: 100..4999")
    if (args.ratio is None) != (args.target is None):
        parser.error("--ratio and --target go together")
    if args.ratio is not None and not (args.ratio > 0 and args.target > 0):
        parser.error("--ratio and --target must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    binaries = suite_context.standalone_binaries(
        "handshake_profile", {name: suite_context.BINARIES[name]
                              for name in ("dataplane", "quicload")},
        __file__, "bazel build -c opt //dataplane //tools/quicload")
    suite_context.require_tools("handshake_profile", ("perf", "taskset"))
    if os.geteuid() != 0:
        sys.exit("handshake_profile: needs root (perf attaches to the server)")
    bench_common.exit_on_sigterm()
    work = tempfile.mkdtemp(prefix="dpquic-handshake-profile-")
    try:
        ctx = suite_context.Context(binaries, work, runs=1,
                                    log=lambda text: print(text, file=sys.stderr, flush=True))
        profiler = Profiler(os.path.join(work, "perf.data"), args.frequency)
        rate, busy_fraction = run_load(ctx, args.backend, args.resume, args.seconds, profiler)
        share = shares(script_counts(profiler.data_path, timeout=900), busy_fraction)
    except (RuntimeError, OSError, KeyError) as e:  # ProfileError is one
        sys.exit("handshake_profile: %s" % e)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(report_text(args, rate, busy_fraction, share))
    return 0


if __name__ == "__main__":
    sys.exit(main())
