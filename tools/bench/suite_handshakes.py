"""Section 2: handshakes per second per server core.

The server runs on CPU 0 (taskset, and dataplane --cores=1 pins its shard
there too), quicload --handshake-only on CPU 1. Per run, alternating: the
crypto limit (handshake_crypto_bench --cpu=0: P-256 sign + X25519 keygen and
shared secret on that core), our dataplane, our dataplane with resumed
handshakes (quicload --resume: a PSK with X25519, no certificate and no
signature), and gtlsserver (ECDSA P-256 pair from openssl) when installed.
Full handshakes are judged against the full limit, resumed ones against
their own (X25519 keygen + shared secret); both targets are 60%.

One client core cannot complete handshakes as fast as one server core can
serve them (the client verifies the CertificateVerify signature, which costs
more than making it), so besides the rate the client achieved, each run
reads the server's CPU time (/proc/PID/stat) and reports handshakes per
server CPU-second: the rate one fully busy server core sustains. The target
is judged on that figure.

With the DPDK backend available (the net_memif PMD and hugepages), two more
rows run dataplane and quicload on DPDK, joined by net_memif: full and
resumed handshakes per second of the server's worker lcore CPU time and per
busy second of it, the figure their targets are judged on
(suite_handshakes_dpdk)."""

import contextlib
import json
import os
import shutil
import signal

import bench_common
import suite_handshakes_dpdk
from bench_common import CLIENT_CPU, SERVER_CPU, start_server, taskset
from suite_context import Missing

TARGET_FRACTION = 0.6
CONNECTIONS = 64
OURS = "dpquic dataplane, 1 core"
OURS_RESUMED = "dpquic dataplane, 1 core, resumed (PSK + X25519)"
NGTCP2 = "ngtcp2 gtlsserver, 1 core"
DPDK = suite_handshakes_dpdk.CONFIGS
# Judged against the resumed crypto limit.
RESUMED = (OURS_RESUMED, suite_handshakes_dpdk.OURS_DPDK_RESUMED)


def durations(quick):
    """(quicload --duration seconds, crypto bench --seconds)."""
    return (1, 0.2) if quick else (5, 1.0)


def crypto_limit(ctx, section, seconds):
    cmd = [ctx.binary("handshake_crypto_bench"), "--cpu=%d" % SERVER_CPU,
           "--seconds=%g" % seconds, "--repetitions=1"]
    section.command("crypto limit: " + ctx.display(cmd))
    result = bench_common.run_bounded(cmd, timeout=60)
    report = bench_common.last_json_line(result.stdout) if result.ok else None
    if report is None or "handshake_crypto_limit_per_sec" not in report:
        raise RuntimeError("handshake_crypto_bench failed (%s): %s" % (
            result.returncode, (result.stdout + result.stderr).strip()[-300:]))
    return report


def cpu_seconds(pid):
    """User + system CPU time of process `pid` in seconds (None if unreadable)."""
    return bench_common.stat_cpu_seconds("/proc/%d/stat" % pid)


def resumed_limit(report):
    """Resumed handshakes per second the public-key operations allow: one
    X25519 key pair and one shared secret (no signature)."""
    return 1.0 / (1.0 / report["x25519_keygen_per_sec"] + 1.0 / report["x25519_shared_per_sec"])


def server_command(dataplane, port):
    """Our server for a handshake run: one core on SERVER_CPU, with no Retry
    (bench_common.handshake_server_flags)."""
    return taskset(SERVER_CPU, bench_common.dataplane_command(
        dataplane, port, extra=bench_common.handshake_server_flags(CONNECTIONS)))


def load(ctx, section, label, server_cmd, port, stop_signal, ready_text, duration, extra=(),
         profiler=None):
    """One quicload --handshake-only run (plus `extra` flags) against a fresh
    server: its JSON, with the server's CPU seconds during the run as
    "server_cpu_seconds". A `profiler` (handshake_profile.Profiler) records
    the server while the client runs."""
    json_path = ctx.path("handshakes.json")
    if os.path.exists(json_path):
        os.unlink(json_path)
    client_cmd = taskset(CLIENT_CPU, [
        ctx.binary("quicload"), "--handshake-only", "--connections=%d" % CONNECTIONS,
        "--duration=%d" % duration, "--cores=1", "--no-progress", "--json=" + json_path] +
        list(extra) + ["https://127.0.0.1:%d/" % port])
    section.command("%s server: %s" % (label, ctx.display(server_cmd, port=port)))
    section.command("%s client: %s" % (label, ctx.display(client_cmd, port=port)))
    server = start_server(server_cmd, ctx.path("handshake-server.log"), ready_text)
    try:
        cpu_before = cpu_seconds(server.process.pid)
        with profiler.recording(server.process.pid) if profiler else contextlib.nullcontext():
            result = bench_common.run_bounded(client_cmd, timeout=duration + 60)
        cpu_after = cpu_seconds(server.process.pid)
    finally:
        server.stop(stop_signal)
    try:
        with open(json_path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError):
        report = None
    if report is None or not result.ok:
        raise RuntimeError("quicload against %s failed (%s): %s" % (
            label, "timeout" if result.timed_out else result.returncode,
            (result.stdout + result.stderr).strip()[-300:]))
    if cpu_before is not None and cpu_after is not None:
        report["server_cpu_seconds"] = cpu_after - cpu_before
    report["server_retries"] = bench_common.dataplane_total(server.log_text(), "retries")
    return report


def retries_text(report):
    """", N Retry packets sent" for a run of our server that sent any (their
    cost is in its CPU time), else ""."""
    retries = report.get("server_retries")
    return ", %d Retry packets sent" % retries if retries else ""


def per_cpu_second(report):
    """Handshakes per server CPU-second of one run (None without CPU time)."""
    cpu = report.get("server_cpu_seconds")
    return report["handshakes"] / cpu if cpu else None


def run(ctx, section):
    duration, crypto_seconds = durations(ctx.quick)
    try:
        dataplane = ctx.binary("dataplane")
        ctx.binary("quicload")
        ctx.binary("handshake_crypto_bench")
    except Missing as e:
        section.skip(str(e))
        return
    configs = [OURS, OURS_RESUMED]
    if shutil.which("gtlsserver") is None:
        section.skip_part(NGTCP2, "gtlsserver not found on PATH")
    else:
        try:
            key, cert = ctx.certificate()
            configs.append(NGTCP2)
        except Missing as e:
            section.skip_part(NGTCP2, str(e))
    dpdk_duration, dpdk_window = suite_handshakes_dpdk.durations(ctx.quick)
    # A smoke run leaves the machine's hugepage reservation alone.
    why = suite_handshakes_dpdk.unavailable(section, os.geteuid(), reserve=not ctx.quick)
    if why:
        for config in DPDK:
            section.skip_part(config, why)
    else:
        configs += DPDK
        suite_handshakes_dpdk.note(section, dpdk_duration, dpdk_window)
    limits, resumed_limits = [], []
    rates, failed = {c: [] for c in configs}, {c: [] for c in configs}
    capacities = {c: [] for c in configs}
    # DPDK rows: per busy lcore-second, and the worker's busy fraction.
    busy_capacities = {c: [] for c in configs if c in DPDK}
    busy_fractions = {c: [] for c in configs if c in DPDK}
    # Each round's judged figure over the limit measured at its start.
    round_ratios = {c: [] for c in configs}
    try:
        for run_index in range(ctx.runs):
            limit = crypto_limit(ctx, section, crypto_seconds)
            limits.append(limit["handshake_crypto_limit_per_sec"])
            resumed_limits.append(resumed_limit(limit))
            for config in configs:
                port = bench_common.free_udp_port()
                if config in (OURS, OURS_RESUMED):
                    cmd = server_command(dataplane, port)
                    report = load(ctx, section, config, cmd, port, signal.SIGTERM,
                                  bench_common.DATAPLANE_READY, duration,
                                  ["--resume"] if config == OURS_RESUMED else [])
                elif config in DPDK:
                    report = suite_handshakes_dpdk.load(ctx, section, config, dpdk_duration,
                                                        dpdk_window, run_index)
                else:
                    cmd = taskset(SERVER_CPU, bench_common.ngtcp2_server_command(port, key, cert))
                    report = load(ctx, section, config, cmd, port, signal.SIGINT, None,
                                  duration)
                round_limit = (resumed_limits if config in RESUMED else limits)[-1]
                rates[config].append(report["handshakes_per_sec"])
                failed[config].append(report.get("handshakes_failed", 0))
                capacity = suite_handshakes_dpdk.per_lcore_second(report) if config in DPDK \
                    else per_cpu_second(report)
                if capacity is not None:
                    capacities[config].append(capacity)
                busy = None
                if config in DPDK:
                    busy = suite_handshakes_dpdk.per_busy_second(report)
                    fraction = suite_handshakes_dpdk.busy_fraction(report)
                    if busy is not None:
                        busy_capacities[config].append(busy)
                    if fraction is not None:
                        busy_fractions[config].append(fraction)
                    ctx.log("handshakes: run %d %s: %s per busy lcore-second, worker %s busy" % (
                        run_index + 1, config, "%.0f" % busy if busy else "?",
                        "%.0f%%" % (100 * fraction) if fraction is not None else "?"))
                ctx.log("handshakes: run %d %s: %.0f/s, %s per server CPU-second (limit %.0f/s)%s"
                        % (run_index + 1, config, report["handshakes_per_sec"],
                           "%.0f" % capacity if capacity else "?", round_limit,
                           retries_text(report)))
                # The figure the target judges: per busy lcore-second on DPDK.
                judged = busy if config in DPDK else capacity
                if judged is not None and round_limit:
                    round_ratios[config].append(judged / round_limit)
    except (RuntimeError, OSError, KeyError, ZeroDivisionError) as e:
        section.fail(str(e))
        return
    fill(section, limits, rates, failed, duration, capacities, resumed_limits, busy_capacities,
         busy_fractions, round_ratios)


def _judged(config, figures, limit_of, round_ratios):
    """What a target judges for `config`: the median of its per-round ratios
    (each round's figure over the crypto limit measured at the round's
    start) when the run has them, else its median figure over the median
    limit. On a shared machine the one-second limit swings more than the
    servers' figures; a round's own limit is the fairest reference."""
    per_round = (round_ratios or {}).get(config)
    if per_round:
        return bench_common.summarize(per_round)["median"]
    values = figures.get(config)
    if not values:
        return None
    return bench_common.ratio(bench_common.summarize(values)["median"], limit_of(config))


def _limit_rows(limit, resumed):
    rows = [["crypto limit (P-256 sign + X25519 keygen + shared), CPU %d" % SERVER_CPU,
             limit["median"], limit["min"], limit["max"], limit["runs"], 1.0, 0]]
    if resumed is not None:
        rows.append(["resumed crypto limit (X25519 keygen + shared), CPU %d" % SERVER_CPU,
                     resumed["median"], resumed["min"], resumed["max"], resumed["runs"], 1.0, 0])
    return rows


def _capacity_table(section, capacities, limit_of):
    rows = []
    for config, values in capacities.items():
        if values:
            s = bench_common.summarize(values)
            rows.append([config, s["median"], s["min"], s["max"], s["runs"],
                         bench_common.ratio(s["median"], limit_of(config))])
    section.table(["server", "median handshakes per server CPU-second", "min", "max", "runs",
                   "ratio to limit"], rows,
                  caption="Per server core: handshakes / the server's CPU seconds (DPDK: its "
                  "worker lcore's, in a steady window)",
                  align="lrrrrr")
    return rows


def _busy_table(section, busy_capacities, busy_fractions, limit_of):
    rows = []
    for config, values in busy_capacities.items():
        if values:
            s = bench_common.summarize(values)
            fractions = busy_fractions.get(config)
            rows.append([config, s["median"], s["min"], s["max"], s["runs"],
                         bench_common.ratio(s["median"], limit_of(config)),
                         bench_common.summarize(fractions)["median"] if fractions else None])
    section.table(["server", "median handshakes per busy lcore-second", "min", "max", "runs",
                   "ratio to limit", "worker busy fraction"], rows,
                  caption="DPDK worker lcore: handshakes / its busy seconds (loop iterations "
                  "that did work, dpquic_dpdk_busy_seconds_total), in the same window",
                  align="lrrrrrr")
    return rows


def _target(section, name, fraction, threshold=TARGET_FRACTION):
    section.target(name, fraction, ">= %.2f" % threshold,
                   fraction is not None and fraction >= threshold)


def fill(section, limits, rates, failed, duration, capacities=None, resumed_limits=None,
         busy_capacities=None, busy_fractions=None, round_ratios=None):
    """The tables and targets. Resumed handshakes (RESUMED) are compared with
    `resumed_limits`, everything else with `limits`. The DPDK rows' targets
    are judged on `busy_capacities` (per busy lcore-second); their
    per-CPU-second figures in `capacities` are shown too. With
    `round_ratios` the targets judge those (see _judged)."""
    limit = bench_common.summarize(limits)
    resumed = bench_common.summarize(resumed_limits) if resumed_limits else None
    limit_of = lambda config: (resumed or limit)["median"] if config in RESUMED \
        else limit["median"]
    rows = _limit_rows(limit, resumed)
    chart_runs = []
    for config, values in rates.items():
        s = bench_common.summarize(values)
        rows.append([config, s["median"], s["min"], s["max"], s["runs"],
                     bench_common.ratio(s["median"], limit_of(config)), sum(failed[config])])
        if config not in RESUMED:
            chart_runs.append({"config": config, "median": s["median"], "min": s["min"],
                               "max": s["max"]})
    section.table(["server", "median handshakes/s", "min", "max", "runs", "ratio to limit",
                   "failed"], rows, caption="Rate the client achieved", align="lrrrrrr")
    figures = rates
    capacities = capacities or {}
    if capacities.get(OURS):
        capacity_rows = _capacity_table(section, capacities, limit_of)
        figures = capacities
        chart_runs = [{"config": row[0] + " (per server CPU-second)", "median": row[1],
                       "min": row[2], "max": row[3]} for row in capacity_rows
                      if row[0] not in RESUMED]
    per = "per server CPU-second" if figures is capacities else "per second"
    judged_ratios = round_ratios if figures is capacities else None
    fraction = _judged(OURS, figures, limit_of, judged_ratios)
    _target(section, "handshakes %s against the crypto limit" % per, fraction)
    resumed_fraction = None
    if figures.get(OURS_RESUMED) and resumed is not None:
        resumed_fraction = _judged(OURS_RESUMED, figures, limit_of, judged_ratios)
        _target(section, "resumed handshakes %s against their crypto limit" % per,
                resumed_fraction)
    busy_capacities = busy_capacities or {}
    busy_fractions = busy_fractions or {}
    if any(busy_capacities.values()):
        _busy_table(section, busy_capacities, busy_fractions, limit_of)
    dpdk_fractions, dpdk_cpu_fractions = {}, {}
    for config in DPDK:
        if capacities.get(config):
            dpdk_cpu_fractions[config] = bench_common.ratio(
                bench_common.summarize(capacities[config])["median"], limit_of(config))
        if capacities.get(config) or busy_capacities.get(config):
            # Judged per busy lcore-second: the rate of a loaded lcore.
            dpdk_fractions[config] = _judged(config, busy_capacities, limit_of, round_ratios)
            _target(section, "%s: handshakes per busy server lcore-second against %s" % (
                config, "their crypto limit" if config in RESUMED else "the crypto limit"),
                dpdk_fractions[config], suite_handshakes_dpdk.TARGETS[config])
    section.note("quicload --handshake-only, %d connections in flight, %d s per run, ECDSA "
                 "P-256 certificates (dataplane's self-signed default; openssl-made for "
                 "gtlsserver), server on CPU %d, client on CPU %d; the crypto limits are "
                 "measured on CPU %d in the same alternating runs. Resumed runs add --resume: "
                 "every connection after each core's first resumes a ticket (PSK with X25519 "
                 "key exchange). Our server runs with %s: the run's connections all come from "
                 "one address, and by default it answers with Retry the Initials above 32 "
                 "half-open connections per address, and all of them above 5,000 new "
                 "connections a second, work gtlsserver does not do.%s" % (
                     CONNECTIONS, duration, SERVER_CPU, CLIENT_CPU, SERVER_CPU,
                     " ".join(bench_common.handshake_server_flags(CONNECTIONS)),
                     " The targets judge the median of per-round ratios: each round's figure "
                     "over the crypto limit measured at that round's start (the tables' ratio "
                     "columns divide the medians)." if round_ratios else ""))
    section.data = {"crypto_limit_per_sec": limits, "resumed_crypto_limit_per_sec":
                    resumed_limits or [], "handshakes_per_sec": rates,
                    "handshakes_per_server_cpu_second": capacities,
                    "handshakes_failed": failed, "ratio_to_limit": fraction,
                    "resumed_ratio_to_limit": resumed_fraction,
                    "dpdk_ratio_to_limit": dpdk_fractions,
                    "dpdk_cpu_ratio_to_limit": dpdk_cpu_fractions,
                    "handshakes_per_busy_lcore_second": busy_capacities,
                    "dpdk_busy_fraction": busy_fractions,
                    "round_ratios_to_limit": round_ratios or {}}
    section.charts = {"handshakes": {"crypto_limit_per_sec": limit["median"],
                                     "target_fraction": TARGET_FRACTION, "runs": chart_runs}}
