"""Section 7: the crypto and recovery microbenchmarks of earlier issues in
one place: each google-benchmark binary with JSON output, repetitions and
aggregates only; the table shows the medians (time per operation and the
counters each benchmark reports: cycles per datagram, allocations...)."""

import json

import bench_common
from suite_context import Missing

BENCHES = (
    ("seal_bench", "packet sealing: ours against raw ipsec-mb and BoringSSL"),
    ("burst_bench", "burst building without and with AES-128-GCM"),
    ("endpoint_bench", "the whole endpoint per packet, null I/O"),
    ("sent_packets_bench", "sent-packet ring against std::map"),
    ("ack_processing_bench", "ACK processing: XOR against a range walk"),
)
# Keys of google benchmark's JSON entries that are not user counters.
STANDARD_KEYS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "aggregate_name", "aggregate_unit", "iterations",
    "real_time", "cpu_time", "time_unit", "error_occurred", "error_message", "label",
}
TIMEOUT = 900
# The per-packet targets of the performance issue, judged on endpoint_bench's
# burst-receive download: each repetition divides by the raw AES-128-GCM
# measured right after it on the same core, and the medians of those ratios
# are judged.
ENDPOINT_DOWNLOAD = "BM_EndpointDownload/64/1"
RATIO_TARGET = 2.5
ENDPOINT_TARGETS = (
    ("receive_path_over_raw_open",
     "receive path (datagrams in to bytes read, ACKs built) against the raw AES-128-GCM open, "
     "1472-byte datagrams, null I/O (median)"),
    ("send_over_raw_seal",
     "send path (burst built and sealed) against the raw AES-128-GCM seal, 1472-byte "
     "datagrams, null I/O (median)"),
)


def bench_args(quick):
    if quick:
        return ["--benchmark_format=json", "--benchmark_repetitions=2",
                "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.01"]
    return ["--benchmark_format=json", "--benchmark_repetitions=5",
            "--benchmark_report_aggregates_only=true"]


def parse_benchmark_json(text):
    """The JSON document in a benchmark's stdout (lines before it, such as
    "pinned to cpu 1", are skipped)."""
    start = text.find("{\n")
    if start < 0:
        start = text.find("{")
    if start < 0:
        raise ValueError("no JSON in the benchmark output")
    value, _ = json.JSONDecoder().raw_decode(text[start:])
    return value


def medians(document):
    """[{"name", "real_time", "cpu_time", "time_unit", "counters"}] of the
    median aggregates (or of the single runs when there are no aggregates)."""
    entries = document.get("benchmarks", [])
    chosen = [e for e in entries if e.get("aggregate_name") == "median"]
    if not chosen:
        chosen = [e for e in entries if e.get("run_type", "iteration") == "iteration"]
    rows = []
    for entry in chosen:
        counters = {k: v for k, v in entry.items()
                    if k not in STANDARD_KEYS and isinstance(v, (int, float))
                    and not isinstance(v, bool)}
        rows.append({"name": entry.get("run_name", entry.get("name")),
                     "real_time": entry.get("real_time"), "cpu_time": entry.get("cpu_time"),
                     "time_unit": entry.get("time_unit", "ns"), "counters": counters,
                     "error": entry.get("error_message") if entry.get("error_occurred") else None})
    return rows


def compact(value):
    """A counter for a table cell: 3-4 significant digits, k/M/G suffixes."""
    magnitude = abs(value)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= limit:
            return "%.3g%s" % (value / limit, suffix)
    if value == int(value):
        return "%d" % value
    return "%.4g" % value


def endpoint_download(rows):
    """The burst-receive download's row of endpoint_bench, or None."""
    for row in rows:
        if row["name"].startswith(ENDPOINT_DOWNLOAD + "/") or row["name"] == ENDPOINT_DOWNLOAD:
            return row
    return None


def judge_endpoint(section, rows, arch):
    """Targets from endpoint_bench's ratios; a note on what they divide by."""
    row = endpoint_download(rows)
    if row is None or row["error"]:
        section.skip_part("endpoint targets", "no %s result" % ENDPOINT_DOWNLOAD)
        return
    counters = row["counters"]
    for key, name in ENDPOINT_TARGETS:
        if key not in counters:
            section.skip_part("endpoint targets", "endpoint_bench reports no %s" % key)
            continue
        section.target(name, counters[key], "<= %.1fx" % RATIO_TARGET,
                       counters[key] <= RATIO_TARGET)
    section.note(
        "endpoint_bench's ratios divide by ipsec-mb's direct AES-128-GCM of one packet into a hot "
        "buffer, measured after each repetition's download on the same core (here %.0f cycles to "
        "open, %.0f to seal, ipsec-mb arch %s). They depend on that code path: where ipsec-mb runs "
        "AES-GCM with VAES (its AVX-512 arch) the raw AEAD costs a fraction of what AES-NI alone "
        "does, and the same engine's ratios are higher. The receive path counts the test "
        "application's check of every byte." % (counters.get("raw_open_cycles", 0),
                                                counters.get("raw_seal_cycles", 0), arch or "unknown"))


def table_rows(rows):
    out = []
    for row in rows:
        counters = ", ".join("%s=%s" % (k, compact(v)) for k, v in sorted(row["counters"].items()))
        if row["error"]:
            counters = "error: " + row["error"]
        out.append([row["name"], "%.4g %s" % (row["real_time"], row["time_unit"]),
                    "%.4g %s" % (row["cpu_time"], row["time_unit"]), counters or "-"])
    return out


def run(ctx, section):
    args = bench_args(ctx.quick)
    results = {}
    for name, title in BENCHES:
        try:
            cmd = [ctx.binary(name)] + args
        except Missing as e:
            section.skip_part(name, str(e))
            continue
        section.command(ctx.display(cmd))
        ctx.log("micro: %s" % name)
        result = bench_common.run_bounded(cmd, timeout=TIMEOUT)
        try:
            if not result.ok:
                raise ValueError("exit %s%s" % (result.returncode,
                                                " (timeout)" if result.timed_out else ""))
            document = parse_benchmark_json(result.stdout)
            rows = medians(document)
            if not rows:
                raise ValueError("no benchmarks in the output")
        except ValueError as e:
            section.skip_part(name, "failed: %s: %s" % (e, result.stderr.strip()[-200:]))
            continue
        results[name] = rows
        if name == "endpoint_bench":
            judge_endpoint(section, rows, document.get("context", {}).get("ipsec_mb_arch"))
        section.table(["benchmark", "real time per iteration (median)", "CPU time",
                       "counters (median)"], table_rows(rows), caption="%s (%s)" % (name, title),
                      align="lrrl")
    if not results:
        section.fail("no microbenchmark ran: " +
                     "; ".join("%s: %s" % (s["what"], s["why"]) for s in section.skipped))
        return
    section.note("Medians of %s repetitions per benchmark; counters are per the benchmark's "
                 "own definition (see each file in tools/bench)." % ("2 (--quick)" if ctx.quick
                                                                      else "5"))
    section.data = {"medians": results}
