"""Section 2's DPDK rows: handshakes on the DPDK backend, server and client
in two processes joined by DPDK's net_memif PMD (shared memory, no kernel).

dataplane --backend=dpdk is the memif server (role=server: it creates the
control socket, an abstract one), quicload --backend=dpdk --handshake-only the
client; each is an EAL process of its own (--in-memory, its own --file-prefix,
-m 256 of hugepages: mbufs on hugepages, no hugetlbfs mount needed) with a
main lcore that supervises and one worker lcore that polls. The server's two
lcores are on CPU 0, the client's on CPU 1, so the two pollers never share a
core. The two engines own their addresses (10.77.0.1 and 10.77.0.2/24) and
resolve each other's MAC with ARP.

The server's worker lcore polls without sleeping, so its CPU time is wall
time, however little of it goes to handshakes. Two figures, both counted in a
steady window (after the first handshake, so EAL start, memif link-up and ARP
are left out) from one /metrics scrape of the server at each end:
- per lcore CPU-second: the handshakes over its worker thread's CPU time
  (/proc/PID/task/TID/stat, which leaves out time the thread was preempted).
  With one client core, which verifies a P-256 signature per full
  handshake, the client is the slower side and the worker idles part of the
  time: a lower bound on what the lcore sustains;
- per busy lcore-second: the handshakes over dpquic_dpdk_busy_seconds_total,
  the time of the worker's loop iterations that did work (the TSC, counted
  by the shard; dpquic_dpdk_poll_seconds_total is all of its loop, and
  busy / poll is the worker's busy fraction, reported too).
The targets are judged on the busy figure: it is the rate of a loaded lcore,
which is the server's capacity, while the CPU-second figure also counts the
spins spent waiting for the slower client.

Skipped, with the reason, when the memif PMD or enough free hugepages are
missing (hugepages are reserved first when none are and we are root:
suite_dpdk.prepare_hugepages)."""

import contextlib
import json
import os
import re
import socket
import time
import urllib.request

import bench_common
import suite_dpdk
from bench_common import CLIENT_CPU, SERVER_CPU

OURS_DPDK = "dpquic dataplane on DPDK (net_memif), 1 lcore"
OURS_DPDK_RESUMED = OURS_DPDK + ", resumed (PSK + X25519)"
CONFIGS = (OURS_DPDK, OURS_DPDK_RESUMED)
# The targets: full handshakes against the full crypto limit,
# resumed ones against theirs.
TARGETS = {OURS_DPDK: 0.65, OURS_DPDK_RESUMED: 0.6}

SERVER_IP, CLIENT_IP, PREFIX_LENGTH = "10.77.0.1", "10.77.0.2", 24
SERVER_MAC, CLIENT_MAC = "02:00:00:77:00:01", "02:00:00:77:00:02"
UDP_PORT = 4433
CONNECTIONS = 64  # as the kernel rows (suite_handshakes.CONNECTIONS)
MEMORY_MB = 256  # -m per process
PMD_DIRS = ("/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0", "/usr/lib/x86_64-linux-gnu")
RUNTIME_DIR = "/run/dpdk"  # EAL's per-prefix directory (left empty by --in-memory)
# EAL names its worker threads rte-worker-N (lcore-worker-N in older releases).
WORKER_THREAD = re.compile(r"^(?:rte|lcore)-worker-\d+$")
_SAMPLE = r"^%s(?:\{[^}]*\})?\s+(\S+)"
HANDSHAKES = "dpquic_handshakes_total"
BUSY_SECONDS = "dpquic_dpdk_busy_seconds_total"
POLL_SECONDS = "dpquic_dpdk_poll_seconds_total"


def durations(quick):
    """(quicload --duration, seconds of the measured window): the window
    starts after the first handshake and ends before the client stops."""
    return (5, 1.5) if quick else (10, 5.0)


def memif_pmd(dirs=PMD_DIRS, listdir=os.listdir):
    """The path of the net_memif PMD EAL loads (None when absent)."""
    for directory in dirs:
        try:
            names = sorted(listdir(directory))
        except OSError:
            continue
        for name in names:
            if name.startswith("librte_net_memif.so"):
                return os.path.join(directory, name)
    return None


def hugepage_size_kb(meminfo_text):
    """Hugepagesize from /proc/meminfo text, in kB (0 when absent)."""
    match = re.search(r"^Hugepagesize:\s+(\d+)\s+kB", meminfo_text, re.MULTILINE)
    return int(match.group(1)) if match else 0


def hugepages_enough(meminfo_text, processes=2, memory_mb=MEMORY_MB):
    """Whether the free hugepages hold `memory_mb` for each process."""
    free_kb = suite_dpdk.free_hugepages(meminfo_text) * hugepage_size_kb(meminfo_text)
    return free_kb >= processes * memory_mb * 1024


def eal_arguments(role, socket_name, prefix, cpu, mac):
    """EAL arguments of one side: main and worker lcore both on `cpu`, one
    memif port (`role` server or client) on the abstract socket `socket_name`."""
    return ("--in-memory -m %d --no-pci --no-telemetry --file-prefix=%s --lcores=0@%d,1@%d "
            "--vdev=net_memif0,role=%s,socket=%s,id=0,mac=%s" % (
                MEMORY_MB, prefix, cpu, cpu, role, socket_name, mac))


def commands(dataplane, quicload, tag, duration, metrics_port, json_path, resumed):
    """(server command, client command) of one run; `tag` makes the socket
    and the file prefixes unique."""
    socket_name = "/tmp/dpq-memif-%s.sock" % tag
    server = [dataplane, "--backend=dpdk", "--cores=1",
              "--ip=%s/%d" % (SERVER_IP, PREFIX_LENGTH),
              "--listen=%s:%d" % (SERVER_IP, UDP_PORT),
              "--metrics=127.0.0.1:%d" % metrics_port] + \
        bench_common.handshake_server_flags(CONNECTIONS) + [
              "--eal=" + eal_arguments("server", socket_name, "dpq-hs-srv-" + tag, SERVER_CPU,
                                       SERVER_MAC)]
    client = [quicload, "--backend=dpdk", "--ip=%s/%d" % (CLIENT_IP, PREFIX_LENGTH),
              "--eal=" + eal_arguments("client", socket_name, "dpq-hs-cli-" + tag, CLIENT_CPU,
                                       CLIENT_MAC),
              "--handshake-only", "--connections=%d" % CONNECTIONS, "--duration=%d" % duration,
              "--cores=1", "--no-progress", "--json=" + json_path]
    if resumed:
        client.append("--resume")
    client.append("https://%s:%d/" % (SERVER_IP, UDP_PORT))
    return server, client


def prefixes(tag):
    return ["dpq-hs-srv-" + tag, "dpq-hs-cli-" + tag]


def metric_total(metrics_text, name):
    """The sum of family `name`'s samples (every shard's) in Prometheus
    text, a float (None when it has none or one does not parse)."""
    values = re.findall(_SAMPLE % re.escape(name), metrics_text, re.MULTILINE)
    try:
        return sum(float(v) for v in values) if values else None
    except ValueError:
        return None


def handshakes_total(metrics_text):
    """dpquic_handshakes_total from Prometheus text, summed over shards
    (None when absent)."""
    total = metric_total(metrics_text, HANDSHAKES)
    return int(total) if total is not None else None


def scrape_figures(metrics_text):
    """(handshakes, busy seconds, poll seconds) from one scrape's text, each
    None when absent."""
    return (handshakes_total(metrics_text), metric_total(metrics_text, BUSY_SECONDS),
            metric_total(metrics_text, POLL_SECONDS))


def worker_threads(pid, proc="/proc"):
    """Thread IDs of process `pid` named like EAL worker lcores."""
    task_dir = os.path.join(proc, str(pid), "task")
    try:
        tids = sorted(os.listdir(task_dir), key=int)
    except (OSError, ValueError):
        return []
    return [int(tid) for tid in tids
            if WORKER_THREAD.match(bench_common.read_text(
                os.path.join(task_dir, tid, "comm")).strip())]


def lcore_cpu_seconds(pid, tids):
    """CPU seconds of the threads `tids` of `pid` together (None if any is
    unreadable)."""
    values = [bench_common.stat_cpu_seconds("/proc/%d/task/%d/stat" % (pid, tid))
              for tid in tids]
    return None if not values or None in values else sum(values)


def free_tcp_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _scrape(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as reply:
            return scrape_figures(reply.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None, None, None


def _sample(server_pid, tids, metrics_port):
    """(handshakes, worker lcore CPU seconds, monotonic time, busy seconds,
    poll seconds) now."""
    handshakes, busy, poll = _scrape(metrics_port)
    return handshakes, lcore_cpu_seconds(server_pid, tids), time.monotonic(), busy, poll


def window_figures(first, last):
    """What load() adds to quicload's report from the window's first and
    last _sample: handshakes, worker CPU seconds, wall seconds, and busy and
    poll seconds (None when the server did not report them)."""
    def delta(index):
        if first[index] is None or last[index] is None:
            return None
        return last[index] - first[index]
    return {"server_lcore_handshakes": delta(0), "server_lcore_seconds": delta(1),
            "window_seconds": delta(2), "server_busy_seconds": delta(3),
            "server_poll_seconds": delta(4)}


def per_lcore_second(report):
    """Handshakes per second of the server's worker lcore CPU time (None
    without)."""
    seconds = report.get("server_lcore_seconds")
    handshakes = report.get("server_lcore_handshakes")
    return handshakes / seconds if seconds and handshakes is not None else None


def per_busy_second(report):
    """Handshakes per busy second of the server's worker lcore (None
    without): the figure the targets are judged on."""
    seconds = report.get("server_busy_seconds")
    handshakes = report.get("server_lcore_handshakes")
    return handshakes / seconds if seconds and handshakes is not None else None


def busy_fraction(report):
    """The share of the worker's loop time that did work in the window
    (None without)."""
    busy, poll = report.get("server_busy_seconds"), report.get("server_poll_seconds")
    return busy / poll if busy is not None and poll else None


def unavailable(section, euid, reserve=True):
    """Why the DPDK rows cannot run here (None when they can). With
    `reserve`, hugepages are reserved first when none are and we are root."""
    if memif_pmd() is None:
        return "the net_memif PMD (librte_net_memif.so) is not installed (Debian: dpdk)"
    meminfo = bench_common.read_text("/proc/meminfo")
    free = suite_dpdk.prepare_hugepages(section, euid) if reserve else \
        suite_dpdk.free_hugepages(meminfo) > 0
    if not free:
        return "no free hugepages (echo 512 > /proc/sys/vm/nr_hugepages as root)"
    if not hugepages_enough(bench_common.read_text("/proc/meminfo")):
        return "fewer free hugepages than the two EAL processes need (-m %d each)" % MEMORY_MB
    return None


def _remove_runtime_dirs(tag):
    for prefix in prefixes(tag):
        path = os.path.join(RUNTIME_DIR, prefix)
        try:
            for name in os.listdir(path):
                os.unlink(os.path.join(path, name))
            os.rmdir(path)
        except OSError:
            pass


def load(ctx, section, config, duration, window, run_index, profiler=None):
    """One quicload --handshake-only run over memif against a fresh DPDK
    server: quicload's JSON plus window_figures(): the steady window's
    handshakes, the server's worker lcore CPU seconds, and its busy and poll
    seconds (the shard's counters) in it. A `profiler`
    (handshake_profile.Profiler) records the worker lcore during the window."""
    tag = "%d-%d-%d" % (os.getpid(), run_index, CONFIGS.index(config))
    json_path = ctx.path("handshakes-dpdk.json")
    if os.path.exists(json_path):
        os.unlink(json_path)
    metrics_port = free_tcp_port()
    server_cmd, client_cmd = commands(ctx.binary("dataplane"), ctx.binary("quicload"), tag,
                                      duration, metrics_port, json_path,
                                      config == OURS_DPDK_RESUMED)
    for side, cmd in (("server", server_cmd), ("client", client_cmd)):
        section.command("%s %s: %s" % (config, side, ctx.display(cmd, port=metrics_port)
                                       .replace(tag, "$TAG")))
    server = None
    client = None
    try:
        server = bench_common.start_server(server_cmd, ctx.path("handshake-dpdk-server.log"),
                                           bench_common.DATAPLANE_READY, timeout=30)
        tids = worker_threads(server.pid)
        if len(tids) != 1:
            raise RuntimeError("%s: expected one EAL worker thread in the server, found %d" %
                               (config, len(tids)))
        client = bench_common.BackgroundProcess(client_cmd,
                                                ctx.path("handshake-dpdk-client.log"))
        start = time.monotonic()
        first = None
        # The window opens once handshakes complete (EAL start, memif link-up
        # and ARP are behind), and must close before the client stops.
        while time.monotonic() - start < duration - window - 0.5 and client.running():
            first = _sample(server.pid, tids, metrics_port)
            if first[0]:
                break
            time.sleep(0.1)
        if not first or not first[0]:
            raise RuntimeError("%s: no handshake completed in %.1f s: %s" % (
                config, time.monotonic() - start, client.log_text().strip()[-300:]))
        with profiler.recording(server.pid, tids) if profiler else contextlib.nullcontext():
            time.sleep(window)
        last = _sample(server.pid, tids, metrics_port)
        deadline = time.monotonic() + duration + 60
        while client.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        code = client.stop(grace=5.0)
    finally:
        if client is not None:
            client.stop(grace=5.0)
        if server is not None:
            server.stop()
        _remove_runtime_dirs(tag)
    try:
        with open(json_path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError):
        report = None
    if report is None or code != 0:
        raise RuntimeError("quicload (DPDK) against %s failed (exit %s): %s" % (
            config, code, client.log_text().strip()[-300:]))
    if None in first[:3] or None in last[:3] or last[1] <= first[1]:
        raise RuntimeError("%s: could not read the server's handshakes or lcore CPU time" %
                           config)
    report["server_retries"] = bench_common.dataplane_total(server.log_text(), "retries")
    figures = window_figures(first, last)
    if not figures["server_busy_seconds"]:
        raise RuntimeError("%s: no %s in the server's /metrics" % (config, BUSY_SECONDS))
    report.update(figures)
    return report


def note(section, duration, window):
    section.note(
        "DPDK rows: dataplane --backend=dpdk and quicload --backend=dpdk in two EAL processes "
        "joined by net_memif (shared memory; each --in-memory with -m %d of hugepages), the "
        "server's main and worker lcores on CPU %d, the client's on CPU %d, %d s runs. The "
        "server's worker lcore polls without sleeping: per lcore-second is the handshakes the "
        "server completed in a %g s window after the first one, over its worker thread's CPU "
        "seconds in that window. One client core is the slower side (it verifies every "
        "CertificateVerify), so the worker idles part of the time and that figure is a lower "
        "bound on the server lcore's capacity. Per busy lcore-second divides the same "
        "handshakes by the worker's busy time in the window (dpquic_dpdk_busy_seconds_total: "
        "its loop iterations that did work, by the TSC); the targets are judged on it, as it "
        "is the rate of a loaded lcore, while CPU time also counts spins spent waiting for the "
        "client. Full handshakes are judged against the full limit (target %.2f), resumed ones "
        "against theirs (target %.2f)." % (
            MEMORY_MB, SERVER_CPU, CLIENT_CPU, duration, window, TARGETS[OURS_DPDK],
            TARGETS[OURS_DPDK_RESUMED]))
