"""The suite's outputs: results.json (the sections, plus the chart data in
charts.py's schema), SVG charts through charts.py, and the generated
section of BENCHMARKS.md between the markers."""

import json
import os
import shutil

import bench_common
import charts

BEGIN = "<!-- suite:begin -->"
END = "<!-- suite:end -->"
CHART_KEYS = ("goodput", "handshakes", "cycles")
RESULTS_NAME = "results.json"
CHARTS_SUBDIR = os.path.join("docs", "bench")


# --- results.json ----------------------------------------------------------------


def merge_charts(sections):
    """charts.py's top-level keys from the sections that measured something."""
    merged = {}
    for section in sections:
        if section["status"] != "ok":
            continue
        for key, value in section.get("charts", {}).items():
            if key == "bar_charts":
                merged.setdefault("bar_charts", []).extend(value)
            elif key in CHART_KEYS:
                merged[key] = value
    return merged


def build_results(sections, machine, command, runs, quick):
    """The whole results document."""
    results = {
        "suite": "dpquic side-by-side benchmarks (tools/bench/run_all.py)",
        "command": command,
        "date": machine["date"],
        "machine": bench_common.machine_line(machine),
        "machine_description": machine,
        "runs": runs,
        "quick": quick,
        "sections": sections,
    }
    results.update(merge_charts(sections))
    return results


MACHINE_KEYS = ("cpu_model", "cores", "memory_bytes", "machine")


def same_machine(one, other):
    """Whether two runs' machine descriptions name the same kind of machine
    (the kernel and the date may differ)."""
    return all(one.get(k) == other.get(k) for k in MACHINE_KEYS)


def merge_previous(results, previous):
    """`results` of a run of some sections (--only) completed with the other
    sections of `previous`, the results.json it replaces, in report order.
    Each section keeps its own date; results["base"] names the last run of
    every section (command and date), which render() cites. None when the
    two cannot be mixed: a --quick run with a full one, or other --runs."""
    if previous.get("quick") != results["quick"] or previous.get("runs") != results["runs"]:
        return None
    if not same_machine(previous.get("machine_description", {}), results["machine_description"]):
        return None
    fresh = {s["key"] for s in results["sections"]}
    kept = [s for s in previous.get("sections", []) if s.get("key") not in fresh]
    merged = dict(results)
    merged["sections"] = sorted(results["sections"] + kept, key=lambda s: int(s["number"]))
    merged["base"] = previous.get("base") or {"command": previous.get("command"),
                                              "date": previous.get("date")}
    # The charts mix runs of several dates: their subtitle names none.
    merged["machine"] = bench_common.machine_line(dict(results["machine_description"], date=None))
    for key in CHART_KEYS + ("bar_charts",):
        merged.pop(key, None)
    merged.update(merge_charts(merged["sections"]))
    return merged


def chart_names(section):
    """The SVG file names (no directory) a section's chart data produce."""
    names = []
    for key, value in section.get("charts", {}).items():
        if key == "bar_charts":
            names.extend(chart["name"] + ".svg" for chart in value)
        elif key in CHART_KEYS:
            names.append(key + ".svg")
    return names


def write_charts(results, charts_dir, gnuplot="gnuplot"):
    """Draws every chart; ([file names written], [problems])."""
    try:
        scripts = charts.chart_scripts(results, charts_dir)
    except charts.SchemaError as e:
        return [], ["chart data: %s" % e]
    if not scripts:
        return [], []
    if shutil.which(gnuplot) is None:
        return [], ["gnuplot not found (Debian package gnuplot-nox): no charts"]
    os.makedirs(charts_dir, exist_ok=True)
    written, problems = [], []
    for path, script in scripts:
        try:
            charts.run_gnuplot(script, gnuplot)
            written.append(os.path.basename(path))
        except Exception as e:  # RuntimeError, TimeoutExpired: reported, not fatal
            problems.append("%s: %s" % (os.path.basename(path), e))
    return written, problems


def write_json(results, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


# --- Markdown --------------------------------------------------------------------


def _format_value(value):
    if isinstance(value, float):
        return "%.3g" % value if abs(value) < 100 else bench_common.format_number(value, 0)
    return bench_common.format_number(value)


def render_section(section, chart_files, charts_link_dir):
    """The Markdown of one section."""
    lines = ["### %s. %s" % (section["number"], section["title"]), ""]
    if section["status"] == "skipped":
        lines += ["- skipped: %s" % section["reason"], ""]
        return "\n".join(lines) + "\n"
    if section["status"] == "failed":
        lines += ["- **failed**: %s" % section["reason"]]
    lines.append("- Date: %s" % section["date"])
    for target in section.get("targets", []):
        value = _format_value(target["value"])
        if target["met"] is None:
            lines.append("- %s: %s" % (target["name"], value))
            continue
        met = "met" if target["met"] else "**not met**"
        lines.append("- Target: %s: %s (target %s): %s" % (target["name"], value,
                                                           target["target"], met))
    for part in section.get("skipped", []):
        lines.append("- skipped: %s: %s" % (part["what"], part["why"]))
    lines.append("")
    if section.get("commands"):
        lines += ["Commands:", "", "```"] + section["commands"] + ["```", ""]
    for note in section.get("notes", []):
        lines += [note, ""]
    for table in section.get("tables", []):
        if table.get("caption"):
            lines += ["**%s**" % table["caption"], ""]
        if table["rows"]:
            lines.append(bench_common.markdown_table(table["headers"], table["rows"],
                                                     table.get("align"),
                                                     table.get("digits", 2)).rstrip("\n"))
            lines.append("")
    for name in chart_names(section):
        if name in chart_files:
            path = "/".join([charts_link_dir, name])
            lines += ["![%s](%s)" % (name[:-4], path), ""]
    return "\n".join(lines) + "\n"


def render(results, chart_files=(), charts_link_dir="docs/bench", problems=()):
    """The generated block (without the markers)."""
    sections = results["sections"]
    base = results.get("base")
    if base:
        rerun = [s["number"] for s in sections if s.get("date") != base["date"]]
        origin = ("Generated by `%s` on %s; section%s %s rerun alone since, the last time by `%s` "
                  "on %s (each section gives its date)." % (
                      base["command"], base["date"], "" if len(rerun) == 1 else "s",
                      ", ".join(rerun), results["command"], results["date"]))
    else:
        origin = "Generated by `%s` on %s." % (results["command"], results["date"])
    head = [
        "## Side-by-side suite (generated)",
        "",
        origin + " Do not edit between the suite markers: the suite rewrites this part.",
        "",
        "- Machine: %s" % results["machine"],
        "- Runs: every figure is the median, min and max of %d run%s, the compared "
        "configurations alternating run by run%s." % (
            results["runs"], "" if results["runs"] == 1 else "s",
            " (**--quick**: tiny sizes, not figures to quote)" if results["quick"] else ""),
        "- Raw results: [%s/%s](%s/%s)" % (charts_link_dir, RESULTS_NAME, charts_link_dir,
                                           RESULTS_NAME),
    ]
    for problem in problems:
        head.append("- charts: %s" % problem)
    head.append("")
    rows = []
    for s in sections:
        if s["status"] != "ok" or not s.get("targets"):
            rows.append(["%s. %s" % (s["number"], s["title"]),
                         {"ok": "-", "skipped": "skipped: " + s["reason"],
                          "failed": "failed: " + s["reason"]}[s["status"]], "", "", ""])
            continue
        for t in s["targets"]:
            rows.append(["%s. %s" % (s["number"], s["title"]), t["name"],
                         _format_value(t["value"]), t["target"],
                         {True: "met", False: "not met", None: "-"}[t["met"]]])
    if rows:
        head += [bench_common.markdown_table(["section", "figure", "value", "target", "met"],
                                             rows, align="lllll").rstrip("\n"), ""]
    body = [render_section(s, chart_files, charts_link_dir) for s in sections]
    return "\n".join(head) + "\n" + "\n".join(body)


def splice(existing, generated):
    """`existing` Markdown with the block between the markers replaced by
    `generated`; without markers, the block goes after the title paragraph
    (the "# ..." line and the paragraph after it). Text outside the markers
    is kept byte for byte."""
    block = BEGIN + "\n" + generated.rstrip("\n") + "\n" + END
    if existing is None or not existing.strip():
        return "# Benchmarks\n\n" + block + "\n"
    begin = existing.find(BEGIN)
    end = existing.find(END)
    if begin >= 0 and end > begin:
        return existing[:begin] + block + existing[end + len(END):]
    if begin >= 0 or end >= 0:
        raise ValueError("BENCHMARKS.md has only one of the suite markers")
    lines = existing.splitlines(keepends=True)
    index = 0
    while index < len(lines) and not lines[index].startswith("# "):
        index += 1
    if index == len(lines):
        return block + "\n\n" + existing
    index += 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    while index < len(lines) and lines[index].strip() and not lines[index].startswith("#"):
        index += 1
    before = "".join(lines[:index])
    after = "".join(lines[index:])
    if not before.endswith("\n"):
        before += "\n"
    return before + "\n" + block + "\n" + ("\n" + after.lstrip("\n") if after.strip() else "")


def update_markdown(path, generated):
    existing = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            existing = f.read()
    text = splice(existing, generated)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
