"""Sections 1 and 6: single-connection goodput on kernel UDP loopback (ours
and ngtcp2 in every pairing, ratios against ngtcp2), and GSO on against off
(configs c and e of the same alternating runs). The measurement itself is
loopback_goodput.measure()."""

import shutil

import bench_common
import loopback_goodput
from suite_context import Missing

FULL_SIZE = 1 << 30
QUICK_SIZE = 64 << 20
# quinn's GSO seed: 237 -> 339 MiB/s on one stream.
QUINN_GSO_OFF_MIB = 237.0
QUINN_GSO_ON_MIB = 339.0

LABELS = {
    "a": "ngtcp2 -> ngtcp2",
    "b": "ours -> gtlsclient",
    "c": "ours -> ours",
    "d": "gtlsserver -> our client",
    "e": "ours --gso=off -> ours",
}
NEEDS_NGTCP2 = {"a": ("gtlsserver", "gtlsclient"), "b": ("gtlsclient",),
                "d": ("gtlsserver",)}


def wanted_configs(sections):
    """The configs the selected sections need, in loopback_goodput's order."""
    wanted = set()
    if "goodput" in sections:
        wanted |= set("abcde")
    if "gso" in sections:
        wanted |= set("ce")
    return "".join(c for c in "abcde" if c in wanted)


def run(ctx, goodput, gso):
    """Fills `goodput` and/or `gso` (Section or None) from one alternating
    measurement of the configs they need."""
    sections = {name for name, s in (("goodput", goodput), ("gso", gso)) if s is not None}
    configs = wanted_configs(sections)
    size = QUICK_SIZE if ctx.quick else FULL_SIZE
    try:
        dataplane = ctx.binary("dataplane")
        client = ctx.binary("dpquic_client")
    except Missing as e:
        for s in (goodput, gso):
            if s is not None:
                s.skip(str(e))
        return
    skipped = {}
    for config in configs:
        absent = [tool for tool in NEEDS_NGTCP2.get(config, ()) if shutil.which(tool) is None]
        if absent:
            skipped[config] = "%s not found on PATH" % " and ".join(absent)
    configs = "".join(c for c in configs if c not in skipped)
    if not configs:
        goodput.skip("; ".join(sorted(set(skipped.values()))))
        return
    ctx.log("goodput: configs %s, %d runs of %d bytes" % (configs, ctx.runs, size))
    try:
        result = loopback_goodput.measure(configs, ctx.runs, size, ctx.path(), dataplane, client,
                                          progress=lambda text: ctx.log("goodput: " + text))
    except (bench_common.ServerError, OSError) as e:
        for s in (goodput, gso):
            if s is not None:
                s.fail(str(e))
        return
    stats = {c: bench_common.summarize(v) for c, v in result["gbps"].items()}
    if goodput is not None:
        fill_goodput(ctx, goodput, result, stats, skipped, size)
    if gso is not None:
        fill_gso(ctx, gso, result, stats, size)


def _commands(ctx, section, result, configs):
    for config in configs:
        server_cmd, client_cmd = result["commands"][config]
        port = int(client_cmd[-1].split(":")[2].split("/")[0]) if client_cmd[-1].startswith(
            "https://") else None
        section.command("(%s) server: %s" % (config, ctx.display(server_cmd, port=port)))
        section.command("(%s) client: %s" % (config, ctx.display(client_cmd, port=port)))


def fill_goodput(ctx, section, result, stats, skipped, size):
    configs = [c for c in "abcde" if c in stats]
    _commands(ctx, section, result, configs)
    for config, why in sorted(skipped.items()):
        section.skip_part("(%s) %s" % (config, loopback_goodput.DESCRIPTIONS[config]), why)
    base = stats["a"]["median"] if "a" in stats else None
    rows = []
    for config in configs:
        s = stats[config]
        rows.append(["(%s) %s" % (config, loopback_goodput.DESCRIPTIONS[config]), s["median"],
                     s["min"], s["max"], s["runs"], bench_common.ratio(s["median"], base)])
    section.table(["config", "median Gbps", "min", "max", "runs", "ratio vs ngtcp2"], rows,
                  align="lrrrrr")
    section.note("%d bytes per download (GET /%d over h3), one connection, configs alternating "
                 "run by run, every server on CPU %d and every client on CPU %d (taskset); "
                 "goodput = bytes * 8 / the client's wall time (handshake included)." % (
                     size, size, bench_common.SERVER_CPU, bench_common.CLIENT_CPU))
    if base is None:
        section.note("No ngtcp2 baseline: ratios are not available.")
    else:
        for config in configs[1:]:
            section.target("%s against ngtcp2 -> ngtcp2" % LABELS[config],
                           bench_common.ratio(stats[config]["median"], base), "-", None)
    section.data = {"size": size, "gbps": {c: result["gbps"][c] for c in configs},
                    "summary": {c: stats[c] for c in configs}}
    runs = [{"config": LABELS[c], "median": stats[c]["median"], "min": stats[c]["min"],
             "max": stats[c]["max"]} for c in configs]
    chart = {"unit": "Gbps", "runs": runs}
    if base is not None:
        chart["baseline"] = LABELS["a"]
    section.charts = {"goodput": chart}


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
    section.note("%d bytes on one stream; the same alternating runs as section 1 (configs c "
                 "and e)." % size)
    section.note("GSO on / off: **%.2fx** (ours); quinn's GSO seed measured %.0f -> %.0f MiB/s "
                 "(%.2fx)." % (ratio, QUINN_GSO_OFF_MIB, QUINN_GSO_ON_MIB, quinn))
    section.target("GSO on / off (quinn: %.2fx)" % quinn, ratio, "-", None)
    section.data = {"size": size, "on_gbps": result["gbps"]["c"],
                    "off_gbps": result["gbps"]["e"], "ratio": ratio, "quinn_ratio": quinn}
    section.charts = {"bar_charts": [{
        "name": "gso", "title": "GSO on against off, 1 connection, 1 stream", "unit": "Gbps",
        "baseline": "GSO off",
        "runs": [{"config": "GSO off", "median": off["median"], "min": off["min"],
                  "max": off["max"]},
                 {"config": "GSO on", "median": on["median"], "min": on["min"],
                  "max": on["max"]}]}]}
