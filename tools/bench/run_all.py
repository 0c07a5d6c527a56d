#!/usr/bin/env python3
"""The side-by-side benchmark suite: every comparison in one run.

  bazel run -c opt //tools/bench:all [-- FLAGS]
  (or tools/bench/run_all.py FLAGS from a checkout after building the
  binaries: it then takes them from bazel-bin)

Writes, under --out (default: the workspace):
  docs/bench/results.json   every figure, per-run values, commands, machine
  docs/bench/*.svg          charts (gnuplot, through tools/bench/charts.py)
  BENCHMARKS.md             the block between <!-- suite:begin --> and
                            <!-- suite:end --> (created after the title
                            paragraph when absent); the rest is left alone
A run of some sections (--only) keeps the other sections of the
results.json it replaces, each with its own date, unless that file comes
from a run with other --runs or --quick.

Sections (--only takes names or numbers, comma-separated):
  1 goodput      one connection, kernel UDP, 1 GiB, every stack at MTU 1500
                 (a namespace's loopback) with 1452-byte datagrams: ngtcp2 and
                 quinn (tools/bench/quinn_perf, built on first use) against
                 ours in every pairing, plus a plain-loopback (jumbo) column;
                 ratios against the faster peer pairing
  2 handshakes   handshakes/s on one server core (quicload --handshake-only)
                 against the P-256 + X25519 crypto limit of that core; also
                 gtlsserver, and our server on DPDK (two processes joined by
                 net_memif, hugepages) per worker lcore CPU-second and per
                 busy lcore-second (the one judged)
  3 allocations  server heap allocations during a 1 GiB download after the
                 handshake (LD_PRELOAD counter): ours and gtlsserver
  4 memory       server RSS per idle connection, 10k and 100k connections
                 (needs quicload --idle)
  5 streams      1,000,000 short streams over one connection: streams/s and
                 server allocations per stream after warm-up
  6 gso          GSO on against off at MTU 1500 (configs of section 1),
                 quinn's 1.43x
  7 micro        google-benchmark microbenchmarks (seal, burst, endpoint,
                 sent packets, ACK processing), medians
  8 dpdk         dpdk_send_bench: goodput, send-path cycles per datagram by
                 part against raw AES-128-GCM, allocations
  9 flood        five 1 MB gtlsclient downloads during 5,000 Initials a second
                 from 256 addresses that never answer, against a flood-free
                 server: download times, RSS growth, connections held

Every figure is the median/min/max of --runs runs (default 5), compared
configurations alternating run by run. A section whose prerequisites are
missing (gtlsserver, hugepages, quicload --idle...) is reported as
"skipped: why"; a section that fails is reported with the error and the
suite exits 1 at the end. Traffic stays on 127.0.0.1; every process is
bounded by a timeout and stopped by its PID. A full run takes 15-25 minutes
on 2 cores.
"""

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
import traceback

import bench_common
import suite_allocations
import suite_context
import suite_dpdk
import suite_flood
import suite_goodput
import suite_handshakes
import suite_memory
import suite_micro
import suite_report
import suite_streams

# (key, number, title), in report order.
SECTIONS = (
    ("goodput", "1", "Single-connection goodput at MTU 1500, kernel UDP"),
    ("handshakes", "2", "Handshakes per second per server core"),
    ("allocations", "3", "Server heap allocations during a download"),
    ("memory", "4", "Memory per idle connection"),
    ("streams", "5", "Stream load: short streams over one connection"),
    ("gso", "6", "GSO on against off"),
    ("micro", "7", "Crypto and recovery microbenchmarks"),
    ("dpdk", "8", "DPDK send path"),
    ("flood", "9", "Honest downloads during a flood of spoofed Initials"),
)
RUNNERS = {
    "handshakes": suite_handshakes.run,
    "allocations": suite_allocations.run,
    "memory": suite_memory.run,
    "streams": suite_streams.run,
    "micro": suite_micro.run,
    "dpdk": suite_dpdk.run,
    "flood": suite_flood.run,
}


def parse_only(text):
    """--only=LIST: section keys in report order; raises ValueError."""
    if not text:
        return [key for key, _, _ in SECTIONS]
    by_name = {}
    for key, number, _ in SECTIONS:
        by_name[key] = key
        by_name[number] = key
    chosen = set()
    for word in text.split(","):
        word = word.strip().lower()
        if not word:
            continue
        if word not in by_name:
            raise ValueError("unknown section %r (names: %s; or numbers 1-9)" % (
                word, ", ".join(k for k, _, _ in SECTIONS)))
        chosen.add(by_name[word])
    if not chosen:
        raise ValueError("--only names no section")
    return [key for key, _, _ in SECTIONS if key in chosen]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="run_all", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", metavar="LIST",
                        help="sections to run, e.g. --only=goodput,gso or --only=1,6 "
                        "(default: all)")
    parser.add_argument("--runs", type=int, default=None, metavar="N",
                        help="runs per figure (default 5; 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and short durations, to check the suite works "
                        "(figures not to quote)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="where BENCHMARKS.md and docs/bench/ are written (default: the "
                        "workspace)")
    parser.add_argument("--no-markdown", action="store_true",
                        help="do not touch BENCHMARKS.md (results.json and charts only)")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the scratch directory (server and client logs)")
    args = parser.parse_args(argv)
    try:
        args.sections = parse_only(args.only)
    except ValueError as e:
        parser.error(str(e))
    if args.runs is None:
        args.runs = 1 if args.quick else 5
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def log(text):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), text), file=sys.stderr, flush=True)


def run_sections(ctx, keys):
    """Runs the chosen sections; returns their dicts in report order."""
    made = {key: suite_context.Section(key, number, title)
            for key, number, title in SECTIONS if key in keys}
    for key, _, title in SECTIONS:
        if key not in made or key == "gso" and "goodput" in made:
            continue
        log("section %s: %s" % (made[key].number, title))
        try:
            if key in ("goodput", "gso"):
                suite_goodput.run(ctx, made.get("goodput"), made.get("gso"))
            else:
                RUNNERS[key](ctx, made[key])
        except Exception as e:  # a bug in a section must not lose the others
            traceback.print_exc()
            made[key].fail("%s: %s" % (type(e).__name__, e))
        for k in (key, "gso") if key == "goodput" else (key,):
            if k in made:
                s = made[k]
                log("section %s: %s%s" % (s.number, s.status, ": " + s.reason if s.reason else ""))
    return [made[key].to_dict() for key, _, _ in SECTIONS if key in made]


def keep_other_sections(results, results_path):
    """A run of some sections (--only) keeps the others of the results.json
    it replaces, when that one can be mixed with it (suite_report.merge_previous)."""
    try:
        with open(results_path, encoding="utf-8") as f:
            previous = json.load(f)
    except FileNotFoundError:
        return results
    except (OSError, ValueError) as e:
        log("%s unreadable (%s): it is replaced by this run's sections only" % (results_path, e))
        return results
    merged = suite_report.merge_previous(results, previous)
    if merged is None:
        log("%s comes from a run with other --runs or --quick, or from another machine: it is "
            "replaced by this run's sections only" % results_path)
        return results
    kept = [s["number"] for s in merged["sections"] if s not in results["sections"]]
    log("kept sections %s from %s" % (", ".join(kept) or "none", results_path))
    return merged


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    script = os.path.abspath(__file__)
    environ = os.environ
    out = args.out
    if out is None:
        out = suite_context.output_workspace(environ, script)
    elif not os.path.isabs(out):
        out = os.path.join(environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), out)
    out = os.path.abspath(out)
    binaries = suite_context.locate_binaries(suite_context.candidate_roots(environ, script))
    for name, path in binaries.items():
        if path is None:
            log("not found: %s (%s)" % (name, suite_context.BINARIES[name]))
        else:
            log("binary %s: %s" % (name, path))
    # Under bazel test, scratch files stay in the test's own directory.
    work = tempfile.mkdtemp(prefix="dpquic-bench.", dir=environ.get("TEST_TMPDIR"))
    ctx = suite_context.Context(binaries, work, runs=args.runs, quick=args.quick, log=log)
    machine = bench_common.machine_description()
    quoted = " ".join(shlex.quote(a) for a in argv)
    if environ.get("BUILD_WORKSPACE_DIRECTORY") or environ.get("TEST_SRCDIR"):
        command = "bazel run -c opt //tools/bench:all" + (" -- " + quoted if argv else "")
    else:
        command = "tools/bench/run_all.py" + (" " + quoted if argv else "")
    log("machine: %s; %d runs%s; output under %s" % (
        bench_common.machine_line(machine), args.runs, " (quick)" if args.quick else "", out))
    try:
        sections = run_sections(ctx, args.sections)
    finally:
        if args.keep_work:
            log("scratch directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)

    results = suite_report.build_results(sections, machine, command, args.runs, args.quick)
    charts_dir = os.path.join(out, suite_report.CHARTS_SUBDIR)
    results_path = os.path.join(charts_dir, suite_report.RESULTS_NAME)
    if len(sections) < len(SECTIONS):
        results = keep_other_sections(results, results_path)
    os.makedirs(charts_dir, exist_ok=True)
    written, problems = suite_report.write_charts(results, charts_dir)
    results["chart_files"] = written
    results["chart_problems"] = problems
    suite_report.write_json(results, results_path)
    log("wrote %s" % results_path)
    for name in written:
        log("wrote %s" % os.path.join(charts_dir, name))
    for problem in problems:
        log("charts: %s" % problem)
    if not args.no_markdown:
        markdown_path = os.path.join(out, "BENCHMARKS.md")
        generated = suite_report.render(results, written, "docs/bench", problems)
        suite_report.update_markdown(markdown_path, generated)
        log("wrote the suite section of %s" % markdown_path)
    failed = [s for s in sections if s["status"] == "failed"]
    for s in sections:
        log("%s. %s: %s%s" % (s["number"], s["title"], s["status"],
                              ": " + s["reason"] if s["reason"] else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
