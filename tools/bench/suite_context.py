"""What every section of the side-by-side suite shares: where the binaries
are, the per-run settings, the scratch directory, and the Section record a
section fills in (commands, tables, targets, skipped parts, chart data).

Binaries are found in the runfiles tree when the suite runs under
`bazel run` or `bazel test` (RUNFILES_DIR, TEST_SRCDIR, or the .runfiles
directory next to the script), else in bazel-bin of the workspace.
"""

import os
import shlex
import shutil
import signal
import sys
import time

import bench_common

WORKSPACE_NAME = "dpquic"

# name -> path below the workspace root (runfiles) or bazel-bin.
BINARIES = {
    "dataplane": "dataplane/dataplane",
    "quicload": "tools/quicload/quicload",
    "flood": "tools/flood/flood",
    "dpquic_client": "tools/client/dpquic_client",
    "alloc_preload": "tools/bench/libdpquic_alloc_preload.so",
    "handshake_crypto_bench": "tools/bench/handshake_crypto_bench",
    "dpdk_send_bench": "tools/bench/dpdk_send_bench",
    "seal_bench": "tools/bench/seal_bench",
    "burst_bench": "tools/bench/burst_bench",
    "endpoint_bench": "tools/bench/endpoint_bench",
    "sent_packets_bench": "tools/bench/sent_packets_bench",
    "ack_processing_bench": "tools/bench/ack_processing_bench",
}


def workspace_from_script(script_path):
    """The directory three levels above tools/bench/<script>: the workspace
    root of a checkout, or the main repository inside a runfiles tree."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(script_path))))


def candidate_roots(environ, script_path):
    """Directories that may hold the binaries at their workspace paths, best
    first: runfiles trees, then bazel-bin of the workspace."""
    roots = []
    for key in ("RUNFILES_DIR", "TEST_SRCDIR"):
        if environ.get(key):
            roots.append(os.path.join(environ[key], WORKSPACE_NAME))
    script_root = workspace_from_script(script_path)
    # In a runfiles tree the script sits at <x>.runfiles/dpquic/tools/bench.
    if os.path.basename(os.path.dirname(script_root)).endswith(".runfiles"):
        roots.append(script_root)
    for base in (environ.get("BUILD_WORKSPACE_DIRECTORY"), script_root):
        if base:
            roots.append(os.path.join(base, "bazel-bin"))
    unique = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def locate(relative, roots):
    """The first existing regular file roots[i]/relative, or None."""
    for root in roots:
        path = os.path.join(root, relative)
        if os.path.isfile(path):
            return os.path.abspath(path)
    return None


def locate_binaries(roots, names=BINARIES):
    """{name: absolute path or None}."""
    return {name: locate(relative, roots) for name, relative in names.items()}


def standalone_binaries(prog, relatives, script_path, hint):
    """{name: real path} of `relatives` ({name: path below bazel-bin}) for the
    standalone benchmark `prog`, or exit with a one-line `hint` (the build
    command) naming the first one not built."""
    roots = candidate_roots(os.environ, script_path)
    found = {}
    for name, relative in relatives.items():
        path = locate(relative, roots)
        if path is None:
            sys.exit("%s: %s not built: %s" % (prog, name, hint))
        # Past bazel-bin, which a later build of another configuration moves.
        found[name] = os.path.realpath(path)
    return found


def require_tools(prog, tools):
    """Exit with a one-line message naming the first of `tools` not on PATH."""
    for tool in tools:
        if not shutil.which(tool):
            sys.exit("%s: %s not found on PATH (tools/setup.sh installs it)" % (prog, tool))


def output_workspace(environ, script_path):
    """Where results go by default: the workspace `bazel run` was started in,
    else the checkout the script is in."""
    return environ.get("BUILD_WORKSPACE_DIRECTORY") or workspace_from_script(script_path)


class Missing(Exception):
    """A prerequisite of a section is absent; the message says which."""


class Section:
    """One section of the report, as it goes into results.json."""

    def __init__(self, key, number, title):
        self.key = key
        self.number = number
        self.title = title
        self.status = "ok"          # ok | skipped | failed
        self.reason = ""
        self.date = bench_common.machine_description()["date"]
        self.commands = []
        self.notes = []             # sentences, Markdown allowed
        self.tables = []            # {"caption", "headers", "rows", "align"}
        self.targets = []           # {"name", "value", "target", "met"}
        self.skipped = []           # {"what", "why"}: parts left out
        self.charts = {}            # fragments of charts.py's schema
        self.data = {}              # raw figures (per-run values etc.)

    def command(self, text):
        if text not in self.commands:
            self.commands.append(text)

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def table(self, headers, rows, caption="", align=None, digits=2):
        self.tables.append({"caption": caption, "headers": list(headers),
                            "rows": [list(r) for r in rows], "align": align,
                            "digits": digits})

    def target(self, name, value, target, met):
        self.targets.append({"name": name, "value": value, "target": target,
                             "met": None if met is None else bool(met)})

    def skip_part(self, what, why):
        self.skipped.append({"what": what, "why": why})

    def skip(self, why):
        self.status = "skipped"
        self.reason = why

    def fail(self, why):
        self.status = "failed"
        self.reason = why

    def to_dict(self):
        return {"key": self.key, "number": self.number, "title": self.title,
                "status": self.status, "reason": self.reason, "date": self.date,
                "commands": self.commands, "notes": self.notes, "tables": self.tables,
                "targets": self.targets, "skipped": self.skipped, "charts": self.charts,
                "data": self.data}


class Context:
    """Settings and helpers for one suite run."""

    def __init__(self, binaries, work_dir, runs=5, quick=False, log=None):
        self.binaries = binaries
        self.work_dir = work_dir
        self.runs = runs
        self.quick = quick
        self._log = log
        self._certificate = None

    def log(self, text):
        if self._log:
            self._log(text)

    def binary(self, name):
        """The path of a suite binary; raises Missing when it was not built."""
        path = self.binaries.get(name)
        if not path:
            raise Missing("%s not built (%s)" % (name, BINARIES.get(name, name)))
        return path

    def require_tool(self, name):
        """A system tool on PATH (gtlsserver, openssl...); raises Missing."""
        path = shutil.which(name)
        if not path:
            raise Missing("%s not found on PATH" % name)
        return path

    def path(self, *parts):
        return os.path.join(self.work_dir, *parts)

    def certificate(self):
        """(key, cert): a self-signed ECDSA P-256 pair made once per run."""
        if self._certificate is None:
            self.require_tool("openssl")
            self._certificate = bench_common.make_certificate(self.work_dir)
        return self._certificate

    def display(self, cmd, env=None, port=None):
        """`cmd` as a shell line for the report: binaries by their bazel-bin
        path, the scratch directory as $WORK, the port as $PORT."""
        words = []
        for key, value in (env or {}).items():
            words.append("%s=%s" % (key, value))
        words.extend(str(w) for w in cmd)
        text = " ".join(shlex.quote(w) for w in words)
        for name, path in sorted(self.binaries.items(), key=lambda kv: -len(kv[1] or "")):
            if path:
                text = text.replace(path, "bazel-bin/" + BINARIES.get(name, name))
        text = text.replace(self.work_dir, "$WORK")
        if port:
            text = text.replace(":%d" % port, ":$PORT").replace(" %d " % port, " $PORT ")
        return text


def preload_env(preload, report_path, dump_signal=None):
    """(full environment, the part to show) for a server under the allocation
    counter: report at `report_path`, mark on SIGUSR1, dump on `dump_signal`."""
    extra = {"LD_PRELOAD": preload, "DPQUIC_ALLOC_REPORT": report_path,
             "DPQUIC_ALLOC_MARK_SIGNAL": "USR1"}
    if dump_signal:
        extra["DPQUIC_ALLOC_DUMP_SIGNAL"] = dump_signal
    env = dict(os.environ)
    env.update(extra)
    return env, extra


def read_vm_rss_kib(pid):
    """VmRSS of `pid` in KiB from /proc/PID/status, or None."""
    try:
        with open("/proc/%d/status" % pid, encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def read_alloc_report(path, timeout=5.0):
    """The allocation preload's JSON report at `path` (waits for it), or None."""
    import json
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read().strip()
            if text:
                return json.loads(text.splitlines()[-1])
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def signal_number(name):
    return getattr(signal, name if name.startswith("SIG") else "SIG" + name)
