"""Shared helpers for the side-by-side benchmark suite (tools/bench).

Standard library only, so the suite runs with the system python3 both from a
checkout (`import bench_common` with tools/bench on sys.path) and from Bazel.

  machine_description()   CPU model, cores, kernel, memory, date (a dict)
  machine_line(desc)      the same as one Markdown-friendly line
  stat_cpu_seconds(path)  CPU seconds of a process or thread (/proc stat file)
  summarize(values)       median/min/max/runs of a list of figures
  run_bounded(cmd, ...)   run a command under a timeout, killed by PID
  BackgroundProcess       a server started for a run, stopped by PID
  start_server(cmd, ...)  a BackgroundProcess once it serves, or ServerError
  taskset(cpu, cmd)       `cmd` pinned to SERVER_CPU or CLIENT_CPU
  free_udp_port()         an unused UDP port on loopback
  dataplane_command(...)  our server's command line
  ngtcp2_server_command(...), ngtcp2_client_command(...)
                          gtlsserver's and gtlsclient's command lines
  make_certificate(dir)   a self-signed ECDSA P-256 pair made with openssl
  dataplane_total(...), dataplane_connections(...)
                          figures of dataplane's "totals:" and "stats:" lines
  parse_json_lines(text)  the objects of "JSON {...}" lines in tool output
  markdown_table(...)     a Markdown table from headers and rows
"""

import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import time

# --- Machine description -----------------------------------------------------


def read_text(path):
    """The text of the file at `path`, "" when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def cpu_model(cpuinfo_text=None):
    """The CPU model name from /proc/cpuinfo ("unknown CPU" when absent)."""
    text = read_text("/proc/cpuinfo") if cpuinfo_text is None else cpuinfo_text
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("model name", "Model", "cpu model", "Hardware"):
            value = " ".join(value.split())
            if value:
                return value
    return "unknown CPU"


def memory_total_bytes(meminfo_text=None):
    """MemTotal from /proc/meminfo in bytes, or None."""
    text = read_text("/proc/meminfo") if meminfo_text is None else meminfo_text
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                scale = 1024 if len(fields) < 3 or fields[2].lower() == "kb" else 1
                return int(fields[1]) * scale
    return None


def machine_description(now=None):
    """What a reader needs to compare figures across machines."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 0
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count() or 0,
        "usable_cores": usable,
        "memory_bytes": memory_total_bytes(),
        "kernel": platform.system() + " " + platform.release(),
        "machine": platform.machine(),
        "date": now.strftime("%Y-%m-%d %H:%M UTC"),
    }


def machine_line(desc):
    """One line: "CPU, N cores, M GiB, kernel, arch, date"."""
    parts = [desc.get("cpu_model", "unknown CPU"), "%d cores" % desc.get("cores", 0)]
    if desc.get("usable_cores") not in (None, desc.get("cores")):
        parts[-1] += " (%d usable)" % desc["usable_cores"]
    if desc.get("memory_bytes"):
        parts.append("%.0f GiB RAM" % (desc["memory_bytes"] / 2**30))
    for key in ("kernel", "machine", "date"):
        if desc.get(key):
            parts.append(desc[key])
    return ", ".join(parts)


def stat_cpu_seconds(path):
    """User + system CPU time in seconds from a /proc/PID/stat or
    /proc/PID/task/TID/stat file (None if unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # After the command: state is field 3, utime 14 and stime 15 (1-based).
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


# --- Statistics --------------------------------------------------------------


def summarize(values):
    """{"median", "min", "max", "runs"} of a non-empty list of numbers."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("summarize: no values")
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": len(values),
    }


def ratio(value, reference):
    """value / reference, or None when the reference is missing or zero."""
    if value is None or not reference:
        return None
    return value / reference


# --- Processes -----------------------------------------------------------------


class RunResult:
    """What run_bounded returns."""

    def __init__(self, cmd, returncode, stdout, stderr, elapsed, timed_out):
        self.cmd = cmd
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed
        self.timed_out = timed_out

    @property
    def ok(self):
        return not self.timed_out and self.returncode == 0

    def __repr__(self):
        return "RunResult(returncode=%r, elapsed=%.3f, timed_out=%r)" % (
            self.returncode, self.elapsed, self.timed_out)


def _kill_group(process, signum):
    """Sends `signum` to the process group the child leads (pgid = its PID)."""
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_pid(process, grace):
    """SIGTERM to the child's group, then SIGKILL after `grace` seconds.

    Children start in their own session (start_new_session), so the group is
    exactly the child and what it started (say, the server under `timeout`),
    and a grandchild cannot keep the output pipes open after the kill.
    """
    if process.poll() is not None:
        return process.returncode
    _kill_group(process, signal.SIGTERM)
    try:
        return process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        # The leader is not reaped yet, so the group id is still ours.
        _kill_group(process, signal.SIGKILL)
        return process.wait()


def run_bounded(cmd, timeout, env=None, cwd=None, input_text=None, grace=5.0):
    """Runs `cmd` (a list) for at most `timeout` seconds.

    On timeout the process and its group (its PID is the group id) get
    SIGTERM, then SIGKILL after `grace` seconds. stdout and stderr are captured as text. `elapsed` is the wall
    time from start to exit, in seconds.
    """
    start = time.monotonic()
    process = subprocess.Popen(
        cmd, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd, text=True,
        start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = process.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _stop_pid(process, grace)
        stdout, stderr = process.communicate()
    elapsed = time.monotonic() - start
    return RunResult(cmd, process.returncode, stdout, stderr, elapsed, timed_out)


class BackgroundProcess:
    """A process (a server) running during a measurement, output to a log file.

    Use as a context manager (or call stop()): leaving the block stops the
    process by PID, gracefully first. It starts in its own session, so a
    Ctrl-C at the terminal reaches the suite, which then stops it.
    """

    def __init__(self, cmd, log_path, env=None, cwd=None):
        self.cmd = cmd
        self.log_path = log_path
        self._log = open(log_path, "w", encoding="utf-8")
        self.process = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=env, cwd=cwd, start_new_session=True)
        self.returncode = None

    @property
    def pid(self):
        return self.process.pid

    def running(self):
        return self.process.poll() is None

    def log_text(self):
        if not self._log.closed:
            self._log.flush()
        return read_text(self.log_path)

    def wait_for_text(self, text, timeout):
        """True once `text` is in the log; False on timeout or early exit."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return True
            if not self.running():
                return text in self.log_text()
            time.sleep(0.02)
        return False

    def send_signal(self, signum):
        """Sends `signum` to the PID if the process still runs."""
        if self.running():
            os.kill(self.process.pid, signum)

    def stop(self, signum=signal.SIGTERM, grace=10.0):
        """Sends `signum` to the PID (the graceful stop), waits up to `grace`
        seconds, then SIGKILLs its process group. Returns the exit code."""
        if self.returncode is None:
            if self.running():
                try:
                    os.kill(self.process.pid, signum)
                except ProcessLookupError:
                    pass
                try:
                    self.process.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    _kill_group(self.process, signal.SIGKILL)
            self.returncode = self.process.wait()
            self._log.close()
        return self.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def exit_on_sigterm():
    """SIGTERM raises SystemExit, so a standalone benchmark's `finally` blocks
    and context managers stop every process it started."""
    def stop(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, stop)


class ServerError(RuntimeError):
    """A server, a client or a tool of a run failed; the message says which and why."""


def program_name(cmd):
    """The base name of the program `cmd` runs, past `ip netns exec NAME` and
    `taskset -c CPU` prefixes."""
    words = [str(w) for w in cmd]
    if len(words) > 4 and os.path.basename(words[0]) == "ip" and words[1:3] == ["netns", "exec"]:
        words = words[4:]
    if len(words) > 3 and os.path.basename(words[0]) == "taskset" and words[1] == "-c":
        words = words[3:]
    return os.path.basename(words[0])


def start_server(cmd, log_path, ready_text=None, timeout=10.0, settle=0.5, env=None,
                 name=None):
    """A BackgroundProcess running `cmd` (output in `log_path`), once it serves.

    With `ready_text`, serving means that text is in its output within
    `timeout` seconds (dataplane prints DATAPLANE_READY); without, that it
    still runs after `settle` seconds (gtlsserver --quiet prints nothing when
    ready). Otherwise the process is stopped by PID and ServerError says why,
    with `name` (default: the program) and the end of its log.
    """
    server = BackgroundProcess(cmd, log_path, env=env)
    if ready_text:
        ready = server.wait_for_text(ready_text, timeout)
    else:
        time.sleep(settle)
        ready = server.running()
    if ready:
        return server
    exited = not server.running()
    code = server.stop(grace=1.0)
    why = "exited %d" % code if exited else "no %r in its output after %g s" % (ready_text, timeout)
    raise ServerError("%s did not start (%s): %s" % (name or program_name(cmd), why,
                                                   server.log_text().strip()[-500:]))


# --- CPU placement and ports ------------------------------------------------------

# Every side-by-side run puts its server on SERVER_CPU and its client (load
# generator, browser) on CLIENT_CPU.
SERVER_CPU = 0
CLIENT_CPU = 1


def taskset(cpu, cmd):
    """`cmd` pinned to CPU `cpu` (an int) with taskset (as is when taskset is absent)."""
    if shutil.which("taskset") is None:
        return cmd
    return ["taskset", "-c", str(cpu)] + cmd


def free_udp_port(host="127.0.0.1"):
    """A UDP port nobody is bound to on `host` right now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# --- Command lines ---------------------------------------------------------------

# Where the servers listen and the clients connect.
HOST = "127.0.0.1"
# What dataplane prints once it serves.
DATAPLANE_READY = "serving"


def dataplane_command(binary, port, cores=1, extra=()):
    """Our server `binary` on HOST:port with `cores` shards, then `extra` flags."""
    return [binary, "--listen=%s:%d" % (HOST, port), "--cores=%d" % cores] + list(extra)


def handshake_server_flags(connections):
    """dataplane flags for a handshake-rate run whose `connections` in flight
    all come from one client address: every handshake a plain one, as the
    compared servers (gtlsserver, quinn) make them. By default dataplane
    answers with Retry (a round trip, a token to seal, a second Initial to
    read) the Initials above its bound of 32 half-open connections per
    source address, and all of them once a core accepts 5,000 new
    connections a second, which a resumed-handshake run reaches. So: no
    Retry, and a per-address bound of twice the connections, below which
    nothing is refused."""
    return ["--retry=never", "--max-half-open-per-address=%d" % (2 * connections)]


def ngtcp2_server_command(port, key, cert, htdocs=None, max_dyn_length=None):
    """gtlsserver --quiet on HOST:port with the PEM `key` and `cert`; `htdocs`
    is the directory it serves, `max_dyn_length` (say "4G") the largest
    generated body (GET /SIZE) it sends."""
    cmd = ["gtlsserver", "--quiet"]
    if htdocs is not None:
        cmd.append("--htdocs=" + htdocs)
    if max_dyn_length is not None:
        cmd.append("--max-dyn-length=" + max_dyn_length)
    return cmd + [HOST, str(port), key, cert]


def ngtcp2_client_command(port, url, download_dir=None, program="gtlsclient"):
    """gtlsclient --quiet fetching `url` from HOST:port, exiting once every
    stream has closed. With `download_dir` the body is saved there
    (--download); without, it is discarded (--no-quic-dump --no-http-dump)."""
    cmd = [program, "--quiet", "--exit-on-all-streams-close"]
    if download_dir is None:
        cmd += ["--no-quic-dump", "--no-http-dump"]
    else:
        cmd.append("--download=" + download_dir)
    return cmd + [HOST, str(port), url]


def certificate_paths(directory):
    """(key, cert): where make_certificate puts its pair in `directory`."""
    return os.path.join(directory, "key.pem"), os.path.join(directory, "cert.pem")


def make_certificate(directory, timeout=60):
    """A self-signed ECDSA P-256 leaf (CN=localhost, CA:FALSE, SANs
    localhost and 127.0.0.1: what webpki-based clients such as quinn accept
    as their own trust anchor) in `directory`, made with openssl unless both
    files exist: (key, cert) paths. Raises ServerError when openssl fails."""
    key, cert = certificate_paths(directory)
    if not (os.path.exists(key) and os.path.exists(cert)):
        result = run_bounded(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-days", "1", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
             "-addext", "basicConstraints=critical,CA:FALSE",
             "-keyout", key, "-out", cert],
            timeout=timeout)
        if not result.ok:
            raise ServerError("openssl req failed: " + result.stderr.strip()[-300:])
    return key, cert


# --- Tool output ---------------------------------------------------------------

_STATS_CONNECTIONS = re.compile(r"^stats: connections=(\d+)", re.MULTILINE)


def dataplane_total(log_text, name):
    """Counter `name` of the last "totals:" line dataplane printed (when it
    stopped), or None."""
    found = re.findall(r"totals:.* %s=(\d+)" % re.escape(name), log_text)
    return int(found[-1]) if found else None


def dataplane_connections(log_text):
    """The connection counts of dataplane's "stats: connections=N" lines, in order."""
    return [int(n) for n in _STATS_CONNECTIONS.findall(log_text)]


def parse_json_lines(text, prefix="JSON "):
    """The JSON objects of the lines starting with `prefix`, in order.

    With prefix=None, every line that is a whole JSON object counts. A line
    whose payload starts with "{" but does not parse raises ValueError naming
    the line; other lines are prose and skipped.
    """
    objects = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if prefix is None:
            if not stripped.startswith("{"):
                continue
            payload = stripped
        else:
            if not stripped.startswith(prefix.strip()):
                continue
            payload = stripped[len(prefix.strip()):].strip()
            if not payload.startswith("{"):
                continue
        try:
            value = json.loads(payload)
        except json.JSONDecodeError as e:
            raise ValueError("line %d: bad JSON (%s): %s" % (number, e.msg, line)) from None
        objects.append(value)
    return objects


def last_json_line(text, prefix="JSON "):
    """The last object of parse_json_lines, or None when there is none."""
    objects = parse_json_lines(text, prefix)
    return objects[-1] if objects else None


# --- Markdown ------------------------------------------------------------------


def format_number(value, digits=2):
    """Numbers for tables: None as "n/a", ints with thousands separators."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return "{:,}".format(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) >= 1000:
            return "{:,}".format(int(value))
        return "{:,.{}f}".format(value, digits)
    return str(value)


def markdown_table(headers, rows, align=None, digits=2):
    """A Markdown table. `align` is a string of "l", "r" or "c" per column
    (default: numbers right, text left, decided by the first row). Cells go
    through format_number; "|" in text is escaped."""
    columns = len(headers)
    for row in rows:
        if len(row) != columns:
            raise ValueError("markdown_table: row %r has %d cells, want %d" % (row, len(row), columns))
    if align is None:
        first = rows[0] if rows else [""] * columns
        align = "".join("r" if isinstance(c, (int, float)) and not isinstance(c, bool) else "l"
                        for c in first)
    if len(align) != columns or any(a not in "lrc" for a in align):
        raise ValueError("markdown_table: bad align %r" % (align,))

    def cell(value):
        return format_number(value, digits).replace("|", "\\|")

    rule = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |",
             "| " + " | ".join(rule[a] for a in align) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"
