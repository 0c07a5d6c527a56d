"""Sections 1 and 6: single-connection goodput on kernel UDP, every stack at
the same path MTU, and GSO on against off.

The headline runs in a network namespace whose loopback has MTU 1500 (an
Ethernet path), with every stack sending 1452-byte datagrams: ngtcp2 and
quinn by default, ours held to it with --max-udp-payload. ngtcp2 -> ngtcp2
and ours -> ours also run on plain loopback (MTU 65536, where our path MTU
discovery climbs to 16383-byte datagrams): the jumbo column. GSO on against
off is configs c and e of the MTU-1500 runs. The measurement itself is
loopback_goodput.measure()."""

import os
import shutil
import urllib.parse

import bench_common
import bench_netns
import loopback_goodput
import quinn_peer
import suite_context
from suite_context import Missing

FULL_SIZE = 1 << 30
QUICK_SIZE = 64 << 20
MTU = 1500
PAYLOAD = 1452
JUMBO_CONFIGS = "ac"
# quinn's GSO seed: 237 -> 339 MiB/s on one stream.
QUINN_GSO_OFF_MIB = 237.0
QUINN_GSO_ON_MIB = 339.0

LABELS = {
    "a": "ngtcp2 -> ngtcp2",
    "b": "ours -> gtlsclient",
    "c": "ours -> ours",
    "d": "gtlsserver -> our client",
    "e": "ours --gso=off -> ours",
    "f": "quinn -> quinn",
    "g": "ours -> quinn client",
    "h": "quinn server -> our client",
    "i": "ours -> ours (perf)",
}
NEEDS_NGTCP2 = {"a": ("gtlsserver", "gtlsclient"), "b": ("gtlsclient",),
                "d": ("gtlsserver",)}
PEERS = "af"


def wanted_configs(sections):
    """The MTU-1500 configs the selected sections need, in order."""
    wanted = set()
    if "goodput" in sections:
        wanted |= set("abcdfghi")
    if "gso" in sections:
        wanted |= set("ce")
    return "".join(c for c in loopback_goodput.ALL_CONFIGS if c in wanted)


def quinn_sources():
    return os.path.join(suite_context.workspace_from_script(__file__), "tools", "bench",
                        "quinn_perf")


def quinn_binary(ctx):
    """quinn_perf's path: built on first use by a full run; a quick run only
    takes a binary built before. Raises Missing."""
    sources = quinn_sources()
    if not os.path.isdir(sources):
        raise Missing("quinn_perf sources not found at %s" % sources)
    if ctx.quick:
        built = quinn_peer.cached_binary(sources)
        if not built:
            raise Missing("quinn_perf is not built yet and --quick does not build it "
                          "(a full run does, in a few minutes)")
        return built
    try:
        return quinn_peer.build(sources, progress=ctx.log)
    except quinn_peer.Unavailable as e:
        raise Missing(str(e)) from e


def usable_configs(ctx, configs):
    """(configs whose tools are here, {config: why not}, quinn path or None)."""
    skipped = {}
    for config in configs:
        absent = [t for t in NEEDS_NGTCP2.get(config, ()) if shutil.which(t) is None]
        if absent:
            skipped[config] = "%s not found on PATH" % " and ".join(absent)
    quinn = None
    if loopback_goodput.needs_quinn(configs):
        try:
            quinn = quinn_binary(ctx)
        except Missing as e:
            for config in loopback_goodput.QUINN_CONFIGS:
                skipped[config] = str(e)
    return "".join(c for c in configs if c not in skipped), skipped, quinn


def _skip_all(sections, why, failed=False):
    for s in sections:
        if s is not None:
            (s.fail if failed else s.skip)(why)


def run(ctx, goodput, gso):
    """Fills `goodput` and/or `gso` (Section or None) from one alternating
    measurement at MTU 1500 (and, for goodput, one on plain loopback)."""
    sections = {name for name, s in (("goodput", goodput), ("gso", gso)) if s is not None}
    size = QUICK_SIZE if ctx.quick else FULL_SIZE
    try:
        stacks = loopback_goodput.Stacks(ctx.binary("dataplane"), ctx.binary("dpquic_client"),
                                         max_udp_payload=PAYLOAD)
    except Missing as e:
        _skip_all((goodput, gso), str(e))
        return
    configs, skipped, stacks.quinn = usable_configs(ctx, wanted_configs(sections))
    if not configs:
        _skip_all((goodput, gso), "; ".join(sorted(set(skipped.values()))))
        return
    progress = lambda text: ctx.log("goodput: " + text)
    ctx.log("goodput: configs %s at MTU %d, %d runs of %d bytes" % (configs, MTU, ctx.runs, size))
    try:
        with bench_netns.LoopbackNamespace(MTU) as ns:
            stacks.wrap = ns.wrap
            result = loopback_goodput.measure(configs, ctx.runs, size, ctx.path(), stacks,
                                              progress=progress)
        jumbo = None
        jumbo_configs = "".join(c for c in JUMBO_CONFIGS if c in configs)
        if goodput is not None and jumbo_configs:
            jumbo = loopback_goodput.measure(
                jumbo_configs, ctx.runs, size, ctx.path(),
                loopback_goodput.Stacks(stacks.dataplane, stacks.client), progress=progress)
    except (bench_common.ServerError, bench_netns.NamespaceError, OSError) as e:
        _skip_all((goodput, gso), str(e), failed=True)
        return
    stats = {c: bench_common.summarize(v) for c, v in result["gbps"].items()}
    if goodput is not None:
        jumbo_stats = {c: bench_common.summarize(v) for c, v in (jumbo or {}).get(
            "gbps", {}).items()}
        fill_goodput(ctx, goodput, result, stats, jumbo, jumbo_stats, skipped, size)
    if gso is not None:
        fill_gso(ctx, gso, result, stats, size)


def _display(ctx, cmd, port):
    return ctx.display(cmd, port=port).replace(bench_netns.namespace_name(MTU), "$NS")


def client_port(cmd):
    """The server port a client command line names, or None."""
    for word in cmd:
        if word.startswith("--connect="):
            return int(word.rsplit(":", 1)[1])
        if word.startswith(("https://", "perf://")):
            return urllib.parse.urlsplit(word).port
    return None


def _commands(ctx, section, result, configs, suffix=""):
    for config in configs:
        server_cmd, client_cmd = result["commands"][config]
        port = client_port(client_cmd)
        section.command("(%s%s) server: %s" % (config, suffix, _display(ctx, server_cmd, port)))
        section.command("(%s%s) client: %s" % (config, suffix, _display(ctx, client_cmd, port)))


def best_peer(stats):
    """(config, median) of the faster peer pairing (ngtcp2 or quinn), or None."""
    peers = [(stats[c]["median"], c) for c in PEERS if c in stats]
    if not peers:
        return None
    median, config = max(peers)
    return config, median


def fill_goodput(ctx, section, result, stats, jumbo, jumbo_stats, skipped, size):
    configs = [c for c in loopback_goodput.ALL_CONFIGS if c in stats and c != "e"]
    _commands(ctx, section, result, configs)
    if jumbo:
        _commands(ctx, section, jumbo, list(jumbo_stats), " jumbo")
    for config, why in sorted(skipped.items()):
        if config != "e":
            section.skip_part("(%s) %s" % (config, loopback_goodput.DESCRIPTIONS[config]), why)
    best = best_peer(stats)
    rows = []
    for config in configs:
        s = stats[config]
        j = jumbo_stats.get(config)
        rows.append(["(%s) %s" % (config, loopback_goodput.DESCRIPTIONS[config]), s["median"],
                     s["min"], s["max"], s["runs"],
                     bench_common.ratio(s["median"], best[1]) if best else None,
                     j["median"] if j else None])
    section.table(["config", "median Gbps", "min", "max", "runs", "ratio vs best peer",
                   "loopback MTU, median Gbps"], rows, align="lrrrrrr")
    section.note(
        "%d bytes per download over one connection (h3 GET /%d, or the perf protocol where "
        "marked), configs alternating run by run, every server on CPU %d and every client on "
        "CPU %d (taskset); goodput = bytes * 8 / the client's wall time (handshake included)."
        % (size, size, bench_common.SERVER_CPU, bench_common.CLIENT_CPU))
    section.note(
        "Equal MTU: every process runs in a network namespace whose loopback has MTU %d, and "
        "every stack sends %d-byte datagrams (ngtcp2 and quinn by default, ours with "
        "--max-udp-payload=%d). The last column is plain loopback (MTU 65536), where our path "
        "MTU discovery climbs to 16383-byte datagrams and ngtcp2 stays at 1452." % (
            MTU, PAYLOAD, PAYLOAD))
    section.note("quinn is quinn 0.9.3 (Debian) through tools/bench/quinn_perf, a perf client "
                 "and server on one tokio thread each, preferring AES-128-GCM like the others.")
    _targets(section, stats, best)
    section.data = {"size": size, "mtu": MTU, "payload": PAYLOAD,
                    "gbps": {c: result["gbps"][c] for c in configs},
                    "summary": {c: stats[c] for c in configs},
                    "jumbo_gbps": (jumbo or {}).get("gbps", {}), "jumbo_summary": jumbo_stats}
    runs = [{"config": LABELS[c], "median": stats[c]["median"], "min": stats[c]["min"],
             "max": stats[c]["max"]} for c in configs]
    chart = {"unit": "Gbps", "runs": runs}
    if best is not None:
        chart["baseline"] = LABELS[best[0]]
    section.charts = {"goodput": chart}


def _targets(section, stats, best):
    if best is None:
        section.note("No peer pairing ran (ngtcp2 or quinn): ratios are not available.")
        return
    for config in "ci":
        if config in stats:
            value = bench_common.ratio(stats[config]["median"], best[1])
            section.target("%s against the best peer (%s)" % (LABELS[config], LABELS[best[0]]),
                           value, ">= 2.5", value >= 2.5)
    if "g" in stats and "f" in stats:
        value = bench_common.ratio(stats["g"]["median"], stats["f"]["median"])
        section.target("quinn client: ours -> it against quinn -> it", value, ">= 1.3",
                       value >= 1.3)


def fill_gso(ctx, section, result, stats, size):
    _commands(ctx, section, result, "ce")
    on, off = stats["c"], stats["e"]
    ratio = bench_common.ratio(on["median"], off["median"])
    quinn = QUINN_GSO_ON_MIB / QUINN_GSO_OFF_MIB
    mib = lambda gbps: gbps * 1e9 / 8 / 2**20
    section.table(["config", "median Gbps", "median MiB/s", "min Gbps", "max Gbps", "runs"], [
        ["GSO on (c): dataplane -> dpquic client", on["median"], mib(on["median"]), on["min"],
         on["max"], on["runs"]],
        ["GSO off (e): dataplane --gso=off -> dpquic client", off["median"], mib(off["median"]),
         off["min"], off["max"], off["runs"]],
    ], align="lrrrrr")
    section.note("%d bytes on one stream at MTU %d with %d-byte datagrams; the same "
                 "alternating runs as section 1 (configs c and e)." % (size, MTU, PAYLOAD))
    section.note("GSO on / off: **%.2fx** (ours); quinn's GSO seed measured %.0f -> %.0f MiB/s "
                 "(%.2fx)." % (ratio, QUINN_GSO_OFF_MIB, QUINN_GSO_ON_MIB, quinn))
    section.target("GSO on / off (quinn: %.2fx)" % quinn, ratio, "-", None)
    section.data = {"size": size, "on_gbps": result["gbps"]["c"],
                    "off_gbps": result["gbps"]["e"], "ratio": ratio, "quinn_ratio": quinn}
    section.charts = {"bar_charts": [{
        "name": "gso", "title": "GSO on against off, 1 connection, 1 stream, MTU 1500",
        "unit": "Gbps", "baseline": "GSO off",
        "runs": [{"config": "GSO off", "median": off["median"], "min": off["min"],
                  "max": off["max"]},
                 {"config": "GSO on", "median": on["median"], "min": on["min"],
                  "max": on["max"]}]}]}
