"""Section 8: the DPDK backend's send path (dpdk_send_bench): goodput of one
server lcore over ring ports, send-path cycles per datagram and its parts
(QUIC packets built and sealed, Ethernet/IP/UDP headers, the software UDP
checksum, TX burst, the rest) against ipsec-mb's raw AES-128-GCM seal of the
same size on the same lcore, and heap allocations after the handshake.
Targets: the send path as a port with checksum offload costs it (all but the
software checksum) <= 2.5x raw AEAD, allocations < 200.

Hugepages: when none are reserved and we are root, 512 are reserved (the
report says so); when hugepages are unusable the bench runs with
--no-huge -m 1024 (the report says so too)."""

import os
import shutil

import bench_common
from suite_context import Missing

FULL_BYTES = 10000000000
QUICK_BYTES = 200000000
NO_HUGE_EAL = "--no-huge -m 1024 --no-pci --no-telemetry -l 0-1"
HUGEPAGES = 512
RATIO_TARGET = 2.5
GOODPUT_TARGET = 25
# Datagram sizes compared: a standard 1500-byte MTU, and jumbo frames.
CONFIGS = (("1452-byte datagrams (1500-byte MTU)", 1452), ("9000-byte datagrams (jumbo frames)", 9000))
ALLOCATION_TARGET = 200
TIMEOUT = 600
PARTS = (
    ("build_cycles_per_datagram", "QUIC packets built and sealed"),
    ("header_cycles_per_datagram", "Ethernet/IP/UDP headers"),
    ("checksum_cycles_per_datagram", "software UDP checksum (ports without offload)"),
    ("tx_burst_cycles_per_datagram", "TX burst"),
    ("other_cycles_per_datagram", "mbufs and events (other)"),
)


def free_hugepages(meminfo_text):
    """HugePages_Free from /proc/meminfo text (0 when absent)."""
    for line in meminfo_text.splitlines():
        if line.startswith("HugePages_Free:"):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return 0
    return 0


def prepare_hugepages(section, euid, nr_path="/proc/sys/vm/nr_hugepages"):
    """Reserves HUGEPAGES when none are and we may; True when any are free."""
    text = bench_common.read_text(nr_path).strip()
    if text == "0" and euid == 0:
        try:
            with open(nr_path, "w", encoding="utf-8") as f:
                f.write("%d\n" % HUGEPAGES)
            section.note("Reserved %d hugepages (/proc/sys/vm/nr_hugepages was 0)." % HUGEPAGES)
        except OSError as e:
            section.note("Could not reserve hugepages: %s." % e)
    return free_hugepages(bench_common.read_text("/proc/meminfo")) > 0


def run_bench(ctx, section, eal, size, payload, attempts=3):
    """One dpdk_send_bench run: its JSON report.

    stdout is line-buffered (stdbuf -oL), so a report printed before a crash
    in teardown survives; such a report is kept, and the report says the
    process died after it. A run that dies before its report is retried."""
    cmd = [ctx.binary("dpdk_send_bench"), "--bytes=%d" % size, "--max-udp-payload=%d" % payload]
    if eal:
        cmd.append("--eal=" + eal)
    if shutil.which("stdbuf"):
        cmd = ["stdbuf", "-oL"] + cmd
    section.command(ctx.display(cmd))
    for attempt in range(1, attempts + 1):
        result = bench_common.run_bounded(cmd, timeout=TIMEOUT)
        report = None
        try:
            report = bench_common.last_json_line(result.stdout)
        except ValueError:
            pass
        if not result.timed_out and report is not None and report.get("ok"):
            if result.returncode != 0:
                section.note("dpdk_send_bench exited %d after printing a complete report (a "
                             "crash in teardown); the report's figures are kept." %
                             result.returncode)
            return report
        crashed = result.returncode is not None and result.returncode < 0 and \
            not result.timed_out
        if not crashed or attempt == attempts:
            break
        section.note("A dpdk_send_bench run died of signal %d before its report; it was run "
                     "again." % -result.returncode)
    raise RuntimeError("dpdk_send_bench %s (exit %s): %s" % (
        "timed out" if result.timed_out else "failed", result.returncode,
        (result.stdout + result.stderr).strip()[-300:] or "no output"))


def run(ctx, section):
    size = QUICK_BYTES if ctx.quick else FULL_BYTES
    try:
        ctx.binary("dpdk_send_bench")
    except Missing as e:
        section.skip(str(e))
        return
    if ctx.quick:
        # A smoke run leaves the machine's hugepage reservation alone.
        eal = NO_HUGE_EAL
        section.note("Quick run: EAL runs with --no-huge (%s)." % NO_HUGE_EAL)
    else:
        eal = None if prepare_hugepages(section, os.geteuid()) else NO_HUGE_EAL
        if eal:
            section.note("No free hugepages: EAL runs with --no-huge (%s)." % NO_HUGE_EAL)
    reports = {payload: [] for _, payload in CONFIGS}
    try:
        for run_index in range(ctx.runs):
            for _, payload in CONFIGS:  # alternating run by run
                try:
                    report = run_bench(ctx, section, eal, size, payload)
                except RuntimeError as e:
                    if eal is not None:
                        raise
                    # Hugepages reserved but unusable here (say, no hugetlbfs).
                    section.note("With hugepages the bench failed (%s); the runs use --no-huge "
                                 "(%s)." % (str(e)[:160], NO_HUGE_EAL))
                    eal = NO_HUGE_EAL
                    report = run_bench(ctx, section, eal, size, payload)
                reports[payload].append(report)
                ctx.log("dpdk: run %d, %d-byte datagrams: %.2f Gbps, %.0f cycles/datagram, "
                        "%.2fx raw AEAD as with checksum offload, %d allocations"
                        % (run_index + 1, payload, report["goodput_gbps"],
                           report["send_cycles_per_datagram"], report["ratio"],
                           report["allocations"]))
    except (RuntimeError, KeyError) as e:
        section.fail(str(e))
        return
    fill(section, size, reports)


def capacity_gbps(report):
    """The goodput one server lcore could carry at its measured busy cycles
    per datagram (payload * 8 * TSC rate / loop cycles), in Gbps."""
    hz = report.get("tsc_hz", 0)
    cycles = report.get("loop_cycles_per_datagram", 0)
    return report["payload"] * 8 * hz / cycles / 1e9 if hz and cycles else 0.0


def config_rows(runs):
    column = lambda key: bench_common.summarize([r[key] for r in runs])
    rows = [["goodput, 1 server lcore (Gbps)", column("goodput_gbps")]]
    if all(r.get("tsc_hz") for r in runs):
        rows += [["server lcore capacity at its busy cycles (Gbps)",
                  bench_common.summarize([capacity_gbps(r) for r in runs])]]
    rows += [["send path cycles per datagram", column("send_cycles_per_datagram")]]
    rows += [["send path: " + label, column(key)] for key, label in PARTS
             if all(key in r for r in runs)]
    rows += [["raw ipsec-mb AES-128-GCM seal, cycles", column("raw_gcm_cycles")]]
    if all("raw_gcm_recycled_mbuf_cycles" in r for r in runs):
        rows += [["raw seal into the transfer's recycled mbufs, cycles",
                  column("raw_gcm_recycled_mbuf_cycles")]]
    rows += [["send path / raw AEAD, as with checksum offload", column("ratio")]]
    if all("ratio_software_checksum" in r for r in runs):
        rows += [["send path / raw AEAD, with the software checksum",
                  column("ratio_software_checksum")]]
    rows += [["whole server loop cycles per datagram", column("loop_cycles_per_datagram")],
             ["heap allocations after the handshake", column("allocations")],
             ["average UDP payload (bytes)", column("payload")]]
    return rows, column


def fill(section, size, reports):
    integral = lambda v: int(v) if float(v).is_integer() else v
    columns = {}
    for title, payload in CONFIGS:
        rows, columns[payload] = config_rows(reports[payload])
        section.table(["figure", "median", "min", "max", "runs"],
                      [[label] + [integral(s[k]) for k in ("median", "min", "max")] + [s["runs"]]
                       for label, s in rows],
                      caption="%s (--max-udp-payload=%d)" % (title, payload), align="lrrrr")
    standard = columns[CONFIGS[0][1]]
    ratio = standard("ratio")
    worst_allocations = int(max(c("allocations")["max"] for c in columns.values()))
    best_goodput = max(c("goodput_gbps")["median"] for c in columns.values())
    section.target("send path cycles against raw AEAD, %d-byte datagrams, as a port with "
                   "checksum offload costs it (median)" % CONFIGS[0][1], ratio["median"], "<= %.1fx" % RATIO_TARGET,
                   ratio["median"] <= RATIO_TARGET)
    section.target("goodput of one connection, 1 server lcore (best config, median Gbps)",
                   best_goodput, ">= %d" % GOODPUT_TARGET, best_goodput >= GOODPUT_TARGET)
    section.target("heap allocations after the handshake (worst run)", worst_allocations,
                   "< %d" % ALLOCATION_TARGET, worst_allocations < ALLOCATION_TARGET)
    section.note("%d bytes per run over two ring ports wired to each other (no NIC), our "
                 "client on the main lcore and our server on a worker lcore, the two datagram "
                 "sizes alternating run by run (ring ports carry any frame an mbuf holds; PMTU "
                 "discovery climbs to the ceiling). Goodput is what the client verified; the "
                 "client's core is the slower one here. The raw AEAD is measured on the server's "
                 "lcore right after each transfer, into one hot buffer and into the server's "
                 "mbufs as the transfer left them: the client core read them last, so the send "
                 "path's writes miss the cache in a way a NIC's TX completion on the sending "
                 "core would not cause. Ring ports have no checksum offload, so the shard "
                 "computes UDP checksums in software; those cycles are their own row, and the "
                 "target ratio leaves them out (a port with offload gets the pseudo-header sum, "
                 "which is in the header row)." % size)
    section.data = {"bytes": size, "runs": {str(p): r for p, r in reports.items()}}
    column = standard
    standard_keys = set.intersection(*(set(r) for r in reports[CONFIGS[0][1]]))
    parts = [{"config": "DPDK send path", "part": label,
              "cycles": max(0.0, column(key)["median"])} for key, label in PARTS
             if key in standard_keys]
    parts.append({"config": "raw AES-128-GCM", "part": "AEAD seal",
                  "cycles": column("raw_gcm_cycles")["median"]})
    section.charts = {"cycles": {"unit": "cycles per datagram", "parts": parts}}
