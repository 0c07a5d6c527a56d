#!/usr/bin/env python3
"""SVG charts of the benchmark suite's results, drawn with gnuplot.

Usage:
  tools/bench/charts.py --out docs/bench RESULTS.json
  bazel run //tools/bench:charts -- --out docs/bench RESULTS.json
(under `bazel run`, relative paths are taken from the directory it was run in)

Needs gnuplot (Debian: gnuplot-nox). Writes one SVG per section present in
RESULTS.json and prints the path of each file written. Exit status 2 on a
malformed results file (one line naming the problem), 1 when gnuplot fails.

Results schema (every section optional, unknown keys ignored):

{
  "machine": "one line describing the machine",         (optional subtitle)
  "goodput": {                                           -> goodput.svg
    "unit": "Gbps",                                      (default "Gbps")
    "baseline": "ngtcp2 -> ngtcp2",   (config the ratios are against; default: first)
    "runs": [{"config": "ngtcp2 -> ngtcp2", "median": 2.1, "min": 2.0, "max": 2.3}, ...]
  },
  "cycles": {                                            -> cycles.svg
    "unit": "cycles per packet",                         (default)
    "parts": [{"config": "DPDK send", "part": "AEAD seal", "cycles": 410}, ...]
  },
  "handshakes": {                                        -> handshakes.svg
    "crypto_limit_per_sec": 10184,
    "target_fraction": 0.8,                              (default 0.8; 0 hides the line)
    "runs": [{"config": "dpquic, 1 core", "median": 8500, "min": 8300, "max": 8700}, ...]
  },
  "bar_charts": [                                        -> NAME.svg each
    {"name": "gso", "title": "GSO on against off", "unit": "Gbps",
     "baseline": "GSO off",                              (optional: ratio labels)
     "runs": [{"config": "GSO off", "median": 3.1, "min": 3.0, "max": 3.2}, ...]}
  ]
}

goodput, handshakes and bar_charts draw bars at the median with min/max
error bars; with a baseline each bar is labelled with its ratio to it
("1.00x"). cycles draws one stacked bar per config, one colour per part, in
the order the parts first appear; a config without some part stacks 0 there.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

CHART_WIDTH = 900
CHART_HEIGHT = 500
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+$")


class SchemaError(Exception):
    """The results file does not follow the schema in the module docstring."""


# --- Validation ----------------------------------------------------------------


def _number(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SchemaError("%s: want a finite number, got %r" % (where, value))
    return float(value)


def _text(value, where):
    if not isinstance(value, str) or not value:
        raise SchemaError("%s: want a non-empty string, got %r" % (where, value))
    return value


def _object(value, where):
    if not isinstance(value, dict):
        raise SchemaError("%s: want an object, got %r" % (where, type(value).__name__))
    return value


def _list(value, where):
    if not isinstance(value, list) or not value:
        raise SchemaError("%s: want a non-empty list" % where)
    return value


def _runs(section, where):
    runs = []
    for i, run in enumerate(_list(section.get("runs"), where + ".runs")):
        at = "%s.runs[%d]" % (where, i)
        _object(run, at)
        median = _number(run.get("median"), at + ".median")
        low = _number(run.get("min", median), at + ".min")
        high = _number(run.get("max", median), at + ".max")
        if not low <= median <= high:
            raise SchemaError("%s: want min <= median <= max, got %g, %g, %g" %
                              (at, low, median, high))
        runs.append({"config": _text(run.get("config"), at + ".config"),
                     "median": median, "min": low, "max": high})
    return runs


def _baseline_median(runs, baseline, where):
    if baseline is None:
        return None
    for run in runs:
        if run["config"] == baseline:
            return run["median"]
    raise SchemaError("%s.baseline: %r is not one of the configs" % (where, baseline))


# --- gnuplot -------------------------------------------------------------------


def _quote(text):
    """A gnuplot string literal (double quotes, backslash escapes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _datablock(name, rows):
    """An inline data block; strings are quoted, so spaces are fine."""
    lines = ["$%s << EOD" % name]
    for row in rows:
        cells = []
        for cell in row:
            if isinstance(cell, str):
                # Data strings have no escapes: swap the two characters that
                # would end or mangle them.
                cells.append('"' + cell.replace('"', "'").replace("\\", "/") + '"')
            else:
                cells.append(repr(float(cell)))
        lines.append(" ".join(cells))
    lines.append("EOD")
    return "\n".join(lines) + "\n"


def _preamble(path, title, subtitle, ylabel):
    title_expression = _quote(title)
    if subtitle:
        title_expression += ' . "\\n" . ' + _quote(subtitle)
    return "\n".join([
        "set terminal svg size %d,%d dynamic noenhanced font 'sans,12' background '#ffffff'"
        % (CHART_WIDTH, CHART_HEIGHT),
        "set output %s" % _quote(path),
        "set encoding utf8",
        'set datafile separator whitespace',
        "set title " + title_expression,
        "set ylabel %s" % _quote(ylabel),
        "set yrange [0:*]",
        "set grid ytics lc rgb '#dddddd'",
        "set border 3",
        "set tics nomirror",
        "set xtics rotate by -20 left",
        "set key top right",
        "set style fill solid 0.8 border -1",
        "set boxwidth 0.8",
        "",
    ])


def _bar_script(path, title, subtitle, unit, runs, baseline_median, extra_lines=(),
                y_top=None):
    """Bars at the median with min/max error bars, optional ratio labels.

    The y axis reaches past the highest bar (or `y_top`) to leave room for the
    labels."""
    rows = []
    for run in runs:
        label = ""
        if baseline_median:
            label = "%.2fx" % (run["median"] / baseline_median)
        rows.append([run["config"], run["median"], run["min"], run["max"], label or "-"])
    top = max([run["max"] for run in runs] + ([y_top] if y_top is not None else []))
    script = _preamble(path, title, subtitle, unit)
    script += _datablock("bars", rows)
    script += "set xrange [-0.6:%f]\n" % (len(runs) - 0.4)
    script += "set yrange [0:%f]\n" % (top * 1.18 if top > 0 else 1)
    script += "set style data histograms\n"
    script += "set style histogram errorbars gap 1 lw 1.5\n"
    plots = ["$bars using 2:3:4:xtic(1) title 'median (min-max)' lc rgb '#4c78a8'"]
    if baseline_median:
        plots.append("$bars using 0:4:5 with labels offset 0,0.9 notitle")
    plots.extend(extra_lines)
    script += "plot " + ", \\\n     ".join(plots) + "\n"
    return script


def goodput_script(section, path, subtitle):
    where = "goodput"
    _object(section, where)
    runs = _runs(section, where)
    baseline = section.get("baseline", runs[0]["config"])
    base = _baseline_median(runs, baseline, where)
    unit = section.get("unit", "Gbps")
    title = "Single-connection goodput, MTU 1500 (ratios against %s)" % baseline
    return _bar_script(path, title, subtitle, _text(unit, where + ".unit"), runs, base)


def handshakes_script(section, path, subtitle):
    where = "handshakes"
    _object(section, where)
    runs = _runs(section, where)
    limit = _number(section.get("crypto_limit_per_sec"), where + ".crypto_limit_per_sec")
    fraction = _number(section.get("target_fraction", 0.8), where + ".target_fraction")
    lines = ["%f with lines lw 2 dt 1 lc rgb '#e45756' title %s" %
             (limit, _quote("crypto limit %.0f/s" % limit))]
    if fraction > 0:
        lines.append("%f with lines lw 1.5 dt 2 lc rgb '#e45756' title %s" %
                     (limit * fraction, _quote("%.0f%% of the limit" % (fraction * 100))))
    # Ratio labels are against the limit; the limit line stays in view.
    return _bar_script(path, "Handshakes per second per server core", subtitle,
                       "handshakes/s", runs, limit, lines, y_top=limit)


def bar_chart_script(section, path, subtitle, where):
    _object(section, where)
    runs = _runs(section, where)
    base = _baseline_median(runs, section.get("baseline"), where)
    unit = section.get("unit", "")
    if unit:
        _text(unit, where + ".unit")
    return _bar_script(path, _text(section.get("title"), where + ".title"), subtitle, unit,
                       runs, base)


def cycles_script(section, path, subtitle):
    where = "cycles"
    _object(section, where)
    configs = []
    parts = []
    table = {}
    for i, entry in enumerate(_list(section.get("parts"), where + ".parts")):
        at = "%s.parts[%d]" % (where, i)
        _object(entry, at)
        config = _text(entry.get("config", "dpquic"), at + ".config")
        part = _text(entry.get("part"), at + ".part")
        cycles = _number(entry.get("cycles"), at + ".cycles")
        if cycles < 0:
            raise SchemaError("%s.cycles: negative" % at)
        if (config, part) in table:
            raise SchemaError("%s: part %r appears twice for %r" % (at, part, config))
        if config not in configs:
            configs.append(config)
        if part not in parts:
            parts.append(part)
        table[(config, part)] = cycles
    rows = [[config] + [table.get((config, part), 0.0) for part in parts] for config in configs]
    totals = [sum(row[1:]) for row in rows]
    unit = _text(section.get("unit", "cycles per packet"), where + ".unit")
    script = _preamble(path, "Cycles per packet, by part", subtitle, unit)
    script += _datablock("cycles", [row + [total] for row, total in zip(rows, totals)])
    script += "set xrange [-0.6:%f]\n" % (len(configs) - 0.4)
    script += "set yrange [0:%f]\n" % (max(totals) * 1.15 if max(totals) > 0 else 1)
    script += "set style data histograms\n"
    script += "set style histogram rowstacked\n"
    script += "set key outside right top vertical\n"
    plots = []
    for index, part in enumerate(parts):
        column = index + 2
        using = "%d:xtic(1)" % column if index == 0 else "%d" % column
        plots.append("$cycles using %s title %s" % (using, _quote(part)))
    total_column = len(parts) + 2
    plots.append("$cycles using 0:%d:(sprintf('%%.0f', $%d)) with labels offset 0,0.8 notitle" %
                 (total_column, total_column))
    script += "plot " + ", \\\n     ".join(plots) + "\n"
    return script


def chart_scripts(results, out_dir):
    """[(path, gnuplot script)] for every section present in `results`."""
    _object(results, "results")
    subtitle = results.get("machine")
    if subtitle is not None:
        subtitle = _text(subtitle, "machine")
    scripts = []
    if "goodput" in results:
        path = os.path.join(out_dir, "goodput.svg")
        scripts.append((path, goodput_script(results["goodput"], path, subtitle)))
    if "cycles" in results:
        path = os.path.join(out_dir, "cycles.svg")
        scripts.append((path, cycles_script(results["cycles"], path, subtitle)))
    if "handshakes" in results:
        path = os.path.join(out_dir, "handshakes.svg")
        scripts.append((path, handshakes_script(results["handshakes"], path, subtitle)))
    names = set()
    for i, chart in enumerate(results.get("bar_charts", [])):
        where = "bar_charts[%d]" % i
        _object(chart, where)
        name = _text(chart.get("name"), where + ".name")
        if not NAME_PATTERN.match(name) or name in ("goodput", "cycles", "handshakes") \
                or name in names:
            raise SchemaError("%s.name: %r is not a free file name ([A-Za-z0-9_.-])" % (where, name))
        names.add(name)
        path = os.path.join(out_dir, name + ".svg")
        scripts.append((path, bar_chart_script(chart, path, subtitle, where)))
    return scripts


def run_gnuplot(script, gnuplot="gnuplot"):
    """Runs one script; raises RuntimeError with gnuplot's message on failure."""
    with tempfile.NamedTemporaryFile("w", suffix=".gp", delete=False) as f:
        f.write(script)
        script_path = f.name
    try:
        result = subprocess.run([gnuplot, script_path], capture_output=True, text=True,
                                timeout=60)
    finally:
        os.unlink(script_path)
    if result.returncode != 0 or "error" in result.stderr.lower():
        raise RuntimeError("gnuplot failed: " + result.stderr.strip())


def main(argv=None):
    parser = argparse.ArgumentParser(description="SVG charts of benchmark results (gnuplot).")
    parser.add_argument("results", help="the suite's results JSON file")
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--gnuplot", default="gnuplot", help="gnuplot binary (default: gnuplot)")
    parser.add_argument("--print-scripts", action="store_true",
                        help="print the gnuplot scripts instead of running them")
    args = parser.parse_args(argv)
    # `bazel run` starts us in the runfiles tree; paths are the user's.
    base = os.environ.get("BUILD_WORKING_DIRECTORY", "")
    if base:
        args.results = os.path.join(base, args.results)
        args.out = os.path.join(base, args.out)

    try:
        with open(args.results, encoding="utf-8") as f:
            results = json.load(f)
        scripts = chart_scripts(results, args.out)
    except (OSError, json.JSONDecodeError, SchemaError) as e:
        print("charts.py: %s: %s" % (args.results, e), file=sys.stderr)
        return 2
    if args.print_scripts:
        for path, script in scripts:
            print("# %s\n%s" % (path, script))
        return 0
    if shutil.which(args.gnuplot) is None:
        print("charts.py: %s not found (Debian package gnuplot-nox)" % args.gnuplot,
              file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    for path, script in scripts:
        try:
            run_gnuplot(script, args.gnuplot)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print("charts.py: %s: %s" % (path, e), file=sys.stderr)
            return 1
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
