"""Unit tests of the side-by-side suite (tools/bench/run_all.py and its
suite_*.py modules) on fake inputs: binary location, --only, report
rendering, the BENCHMARKS.md splice, chart data, and the parsers of the
tools' outputs."""

import json
import os
import tempfile
import unittest

import charts
import bench_netns
import loopback_goodput
import quinn_peer
import run_all
import suite_allocations
import suite_context
import suite_dpdk
import suite_handshakes
import suite_handshakes_dpdk
import suite_goodput
import suite_memory
import suite_micro
import suite_report
import suite_streams

MACHINE = {"cpu_model": "Fake CPU", "cores": 2, "usable_cores": 2, "memory_bytes": 2**34,
           "kernel": "Linux 6.1", "machine": "x86_64", "date": "2026-01-02 03:04 UTC"}


def touch(path, executable=True):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
    if executable:
        os.chmod(path, 0o755)


class LocateTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_runfiles_dir_comes_first_then_bazel_bin(self):
        runfiles = os.path.join(self.root, "x.runfiles")
        checkout = os.path.join(self.root, "checkout")
        script = os.path.join(checkout, "tools", "bench", "run_all.py")
        roots = suite_context.candidate_roots({"RUNFILES_DIR": runfiles}, script)
        self.assertEqual(roots, [os.path.join(runfiles, "dpquic"),
                                 os.path.join(checkout, "bazel-bin")])
        touch(os.path.join(checkout, "bazel-bin", "dataplane", "dataplane"))
        touch(os.path.join(runfiles, "dpquic", "tools", "quicload", "quicload"))
        found = suite_context.locate_binaries(roots)
        self.assertEqual(found["dataplane"],
                         os.path.join(checkout, "bazel-bin", "dataplane", "dataplane"))
        self.assertEqual(found["quicload"],
                         os.path.join(runfiles, "dpquic", "tools", "quicload", "quicload"))
        self.assertIsNone(found["seal_bench"])
        # The runfiles copy wins over bazel-bin when both exist.
        touch(os.path.join(runfiles, "dpquic", "dataplane", "dataplane"))
        self.assertEqual(suite_context.locate("dataplane/dataplane", roots),
                         os.path.join(runfiles, "dpquic", "dataplane", "dataplane"))

    def test_script_inside_a_runfiles_tree(self):
        script = os.path.join(self.root, "all.runfiles", "dpquic", "tools", "bench", "run_all.py")
        roots = suite_context.candidate_roots({}, script)
        self.assertEqual(roots[0], os.path.join(self.root, "all.runfiles", "dpquic"))

    def test_workspace_directory_of_bazel_run(self):
        script = os.path.join(self.root, "r.runfiles", "dpquic", "tools", "bench", "run_all.py")
        env = {"BUILD_WORKSPACE_DIRECTORY": "/src/ws", "TEST_SRCDIR": "/t"}
        roots = suite_context.candidate_roots(env, script)
        self.assertEqual(roots, ["/t/dpquic", os.path.join(self.root, "r.runfiles", "dpquic"),
                                 "/src/ws/bazel-bin",
                                 os.path.join(self.root, "r.runfiles", "dpquic", "bazel-bin")])
        self.assertEqual(suite_context.output_workspace(env, script), "/src/ws")
        self.assertEqual(suite_context.output_workspace({}, "/a/b/tools/bench/run_all.py"), "/a/b")

    def test_directories_are_not_binaries(self):
        os.makedirs(os.path.join(self.root, "dataplane", "dataplane"))
        self.assertIsNone(suite_context.locate("dataplane/dataplane", [self.root]))

    def test_display_rewrites_paths_and_port(self):
        ctx = suite_context.Context({"dataplane": "/rf/dpquic/dataplane/dataplane"}, "/tmp/w")
        line = ctx.display(["/rf/dpquic/dataplane/dataplane", "--listen=127.0.0.1:4567",
                            "--root=/tmp/w/x y"], {"A": "1"}, port=4567)
        self.assertEqual(line, "A=1 bazel-bin/dataplane/dataplane --listen=127.0.0.1:$PORT "
                               "'--root=$WORK/x y'")
        with self.assertRaises(suite_context.Missing):
            ctx.binary("quicload")


class OptionsTest(unittest.TestCase):
    def test_only_names_and_numbers_in_report_order(self):
        self.assertEqual(run_all.parse_only("gso,1, micro"), ["goodput", "gso", "micro"])
        self.assertEqual(run_all.parse_only(""), [k for k, _, _ in run_all.SECTIONS])
        self.assertEqual(run_all.parse_only("8,DPDK"), ["dpdk"])
        with self.assertRaises(ValueError):
            run_all.parse_only("goodput,nine")
        with self.assertRaises(ValueError):
            run_all.parse_only(",")

    def test_runs_default_and_quick(self):
        self.assertEqual(run_all.parse_args([]).runs, 5)
        self.assertEqual(run_all.parse_args(["--quick"]).runs, 1)
        self.assertEqual(run_all.parse_args(["--quick", "--runs=3"]).runs, 3)
        with self.assertRaises(SystemExit):
            run_all.parse_args(["--runs=0"])

    def test_goodput_configs_for_the_sections(self):
        self.assertEqual(suite_goodput.wanted_configs({"gso"}), "ce")
        self.assertEqual(suite_goodput.wanted_configs({"goodput"}), "abcdfghi")
        self.assertEqual(suite_goodput.wanted_configs({"goodput", "gso"}), "abcdefghi")

    def test_best_peer_is_the_faster_pairing_of_ngtcp2_and_quinn(self):
        stats = {c: {"median": m} for c, m in (("a", 4.0), ("c", 9.0), ("f", 6.0))}
        self.assertEqual(suite_goodput.best_peer(stats), ("f", 6.0))
        self.assertEqual(suite_goodput.best_peer({"a": {"median": 4.0}}), ("a", 4.0))
        self.assertIsNone(suite_goodput.best_peer({"c": {"median": 9.0}}))

    def test_quick_runs_do_not_build_quinn(self):
        with tempfile.TemporaryDirectory() as tmp:
            ctx = suite_context.Context({}, tmp, quick=True)
            old = os.environ.get("XDG_CACHE_HOME")
            os.environ["XDG_CACHE_HOME"] = tmp
            try:
                configs, skipped, quinn = suite_goodput.usable_configs(ctx, "cfghi")
            finally:
                if old is None:
                    del os.environ["XDG_CACHE_HOME"]
                else:
                    os.environ["XDG_CACHE_HOME"] = old
        self.assertEqual(configs, "ci")
        self.assertEqual(sorted(skipped), ["f", "g", "h"])
        self.assertIn("--quick does not build it", skipped["f"])
        self.assertIsNone(quinn)


def fake_sections():
    goodput = suite_context.Section("goodput", "1", "Goodput")
    result = {"gbps": {"a": [2.0, 1.0, 3.0], "c": [8.0, 9.0, 10.0], "e": [6.0, 6.5, 7.0],
                       "f": [3.0, 4.0, 5.0], "g": [5.0, 6.0, 7.0]},
              "commands": {c: [["srv", c], ["cli", "https://127.0.0.1:5/9"]] for c in "acefg"}}
    stats = {c: suite_context.bench_common.summarize(v) for c, v in result["gbps"].items()}
    jumbo = {"gbps": {"a": [2.5], "c": [20.0]},
             "commands": {c: [["srv", c], ["cli", "https://127.0.0.1:5/9"]] for c in "ac"}}
    jumbo_stats = {c: suite_context.bench_common.summarize(v) for c, v in jumbo["gbps"].items()}
    ctx = suite_context.Context({}, "/w")
    suite_goodput.fill_goodput(ctx, goodput, result, stats, jumbo, jumbo_stats,
                               {"b": "gtlsclient not found on PATH"}, 1000)
    gso = suite_context.Section("gso", "6", "GSO")
    suite_goodput.fill_gso(ctx, gso, result, stats, 1000)
    memory = suite_context.Section("memory", "4", "Memory")
    memory.skip("quicload has no --idle")
    dpdk = suite_context.Section("dpdk", "8", "DPDK")
    report = {"goodput_gbps": 5.0, "send_cycles_per_datagram": 1000.0,
              "build_cycles_per_datagram": 700.0, "header_cycles_per_datagram": 60.0,
              "checksum_cycles_per_datagram": 140.0, "tx_burst_cycles_per_datagram": 10.0,
              "other_cycles_per_datagram": 90.0, "raw_gcm_cycles": 400.0, "ratio": 2.15,
              "ratio_software_checksum": 2.5, "loop_cycles_per_datagram": 1500.0,
              "allocations": 20, "payload": 1400, "tsc_hz": 2600000000}
    jumbo = dict(report, goodput_gbps=30.0, payload=8900, loop_cycles_per_datagram=6000.0)
    suite_dpdk.fill(dpdk, 100, {1452: [report, dict(report, ratio=2.95, allocations=250)],
                                9000: [jumbo, jumbo]})
    failed = suite_context.Section("streams", "5", "Streams")
    failed.fail("quicload exited 1")
    return [s.to_dict() for s in (goodput, memory, failed, gso, dpdk)]


class CommandLineTest(unittest.TestCase):
    def test_goodput_servers_and_clients(self):
        stacks = loopback_goodput.Stacks("dp", "cl", "qp", 1452)
        self.assertEqual(loopback_goodput.server_command("ngtcp2", 4433, "/w", stacks),
                         ["gtlsserver", "--quiet", "--htdocs=/w", "--max-dyn-length=4G",
                          "127.0.0.1", "4433", "/w/key.pem", "/w/cert.pem"])
        self.assertEqual(loopback_goodput.server_command("dpquic-nogso", 4433, "/w", stacks),
                         ["dp", "--listen=127.0.0.1:4433", "--cores=1", "--cert=/w/cert.pem",
                          "--key=/w/key.pem", "--max-udp-payload=1452", "--gso=off"])
        self.assertEqual(loopback_goodput.server_command("quinn", 4433, "/w", stacks),
                         ["qp", "server", "--listen=127.0.0.1:4433", "--cert=/w/cert.pem",
                          "--key=/w/key.pem", "--max-udp-payload=1452"])
        self.assertEqual(loopback_goodput.client_command("ngtcp2", 4433, 1000, "/w", stacks),
                         ["gtlsclient", "--quiet", "--exit-on-all-streams-close",
                          "--no-quic-dump", "--no-http-dump", "127.0.0.1", "4433",
                          "https://127.0.0.1:4433/1000"])
        self.assertEqual(loopback_goodput.client_command("dpquic", 4433, 1000, "/w", stacks),
                         ["cl", "https://127.0.0.1:4433/1000", "--max-udp-payload=1452"])
        self.assertEqual(loopback_goodput.client_command("dpquic-perf", 4433, 1000, "/w", stacks),
                         ["cl", "perf://127.0.0.1:4433/1000", "--max-udp-payload=1452"])
        self.assertEqual(loopback_goodput.client_command("quinn", 4433, 1000, "/w", stacks),
                         ["qp", "client", "--connect=127.0.0.1:4433", "--size=1000",
                          "--ca=/w/cert.pem", "--max-udp-payload=1452"])

    def test_quinn_builds_are_cached_by_source_hash(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "crate")
            touch(os.path.join(src, "Cargo.toml"), executable=False)
            touch(os.path.join(src, "src", "main.rs"), executable=False)
            root = os.path.join(tmp, "cache")
            self.assertEqual(quinn_peer.source_files(src), ["Cargo.toml", "src/main.rs"])
            self.assertIsNone(quinn_peer.cached_binary(src, root))
            built = os.path.join(root, quinn_peer.source_hash(src), "target", "release",
                                 "quinn_perf")
            touch(built)
            self.assertEqual(quinn_peer.cached_binary(src, root), built)
            # A cached binary is used as is: no cargo runs.
            self.assertEqual(quinn_peer.build(src, root), built)
            with open(os.path.join(src, "src", "main.rs"), "w") as f:
                f.write("fn main() {}\n")
            self.assertIsNone(quinn_peer.cached_binary(src, root))
        self.assertEqual(quinn_peer.cache_root({"XDG_CACHE_HOME": "/c"}), "/c/dpquic/quinn_perf")
        self.assertEqual(quinn_peer.cache_root({"HOME": "/h"}), "/h/.cache/dpquic/quinn_perf")

    def test_goodput_client_ports(self):
        self.assertEqual(suite_goodput.client_port(["cl", "perf://127.0.0.1:4433/9", "--x=1"]),
                         4433)
        self.assertEqual(suite_goodput.client_port(["qp", "client", "--connect=127.0.0.1:77"]), 77)
        self.assertEqual(suite_goodput.client_port(["gtlsclient", "127.0.0.1", "5",
                                                    "https://127.0.0.1:5/9"]), 5)
        self.assertIsNone(suite_goodput.client_port(["cl", "https://localhost/9"]))

    def test_goodput_commands_in_a_namespace(self):
        cmd = bench_netns.wrap_command("ns1", ["taskset", "-c", "0", "/x/dataplane"])
        self.assertEqual(cmd, ["ip", "netns", "exec", "ns1", "taskset", "-c", "0",
                               "/x/dataplane"])
        self.assertEqual(suite_context.bench_common.program_name(cmd), "dataplane")
        self.assertEqual(bench_netns.namespace_name(1500, pid=7), "dpquic-mtu1500-7")
        with self.assertRaises(ValueError):
            bench_netns.LoopbackNamespace(1000)

    def test_goodput_needs_quinn_for_its_configs(self):
        with self.assertRaises(ValueError):
            loopback_goodput.measure("f", 1, 10, "/nonexistent", loopback_goodput.Stacks())
        self.assertEqual(loopback_goodput.parse_args(["--mtu=1500", "--configs=fi"]).mtu, 1500)
        for bad in (["--mtu=100"], ["--configs=z"], ["--max-udp-payload=99"]):
            with self.assertRaises(SystemExit):
                loopback_goodput.parse_args(bad)

    def test_allocation_servers_and_clients(self):
        class Ctx:
            def binary(self, name):
                return "/b/" + name

            def certificate(self):
                return "/w/key.pem", "/w/cert.pem"

            def path(self, *parts):
                return os.path.join("/w", *parts)

        server, _, shown, _, _, ready = suite_allocations.commands(
            Ctx(), suite_allocations.OURS, 4433, 1000, "/w/r.json")
        self.assertEqual((server, ready),
                         (["/b/dataplane", "--listen=127.0.0.1:4433", "--cores=1"], "serving"))
        self.assertEqual(shown["LD_PRELOAD"], "/b/alloc_preload")
        server, _, _, client, _, ready = suite_allocations.commands(
            Ctx(), suite_allocations.NGTCP2, 4433, 1000, "/w/r.json")
        self.assertEqual(server, ["gtlsserver", "--quiet", "--htdocs=/w", "--max-dyn-length=4G",
                                  "127.0.0.1", "4433", "/w/key.pem", "/w/cert.pem"])
        self.assertEqual(client, ["gtlsclient", "--quiet", "--exit-on-all-streams-close",
                                  "--no-quic-dump", "--no-http-dump", "127.0.0.1", "4433",
                                  "https://127.0.0.1:4433/1000"])
        self.assertIsNone(ready)


class HandshakeCapacityTest(unittest.TestCase):
    def test_target_is_judged_per_server_cpu_second(self):
        section = suite_context.Section("handshakes", "2", "Handshakes")
        ours, ngtcp2 = suite_handshakes.OURS, suite_handshakes.NGTCP2
        report = {"handshakes": 9000, "server_cpu_seconds": 1.5}
        self.assertEqual(suite_handshakes.per_cpu_second(report), 6000)
        self.assertIsNone(suite_handshakes.per_cpu_second({"handshakes": 9000}))
        suite_handshakes.fill(section, [10000, 10000], {ours: [2000, 2100], ngtcp2: [2200]},
                              {ours: [0, 0], ngtcp2: [0]}, 5,
                              {ours: [8100, 8300], ngtcp2: [4000]})
        target = section.to_dict()["targets"][0]
        self.assertEqual(target["name"],
                         "handshakes per server CPU-second against the crypto limit")
        self.assertAlmostEqual(target["value"], 0.82)
        self.assertTrue(target["met"])
        self.assertEqual(len(section.to_dict()["tables"]), 2)

    def test_targets_judge_each_rounds_figure_against_that_rounds_limit(self):
        section = suite_context.Section("handshakes", "2", "Handshakes")
        ours, dpdk = suite_handshakes.OURS, suite_handshakes_dpdk.OURS_DPDK
        # The limit swings between rounds (4000, then 8000) while the server
        # holds 2400: per round 0.6 and 0.3, median 0.45; the medians'
        # ratio would be 2400 / 6000 = 0.4.
        ratios = {ours: [0.6, 0.3], dpdk: [0.9, 0.5]}
        suite_handshakes.fill(section, [4000, 8000], {ours: [1000, 1000], dpdk: [1500, 1500]},
                              {ours: [0, 0], dpdk: [0, 0]}, 5,
                              {ours: [2400, 2400], dpdk: [2000, 2000]}, None,
                              {dpdk: [3600, 4000]}, {dpdk: [0.7, 0.7]}, ratios)
        result = section.to_dict()
        values = {t["name"]: t["value"] for t in result["targets"]}
        self.assertAlmostEqual(
            values["handshakes per server CPU-second against the crypto limit"], 0.45)
        self.assertAlmostEqual(values["%s: handshakes per busy server lcore-second against "
                                      "the crypto limit" % dpdk], 0.7)
        self.assertIn("median of per-round ratios", " ".join(result["notes"]))
        self.assertEqual(result["data"]["round_ratios_to_limit"], ratios)
        # Without per-round ratios, the medians' ratio.
        plain = suite_context.Section("handshakes", "2", "Handshakes")
        suite_handshakes.fill(plain, [4000, 8000], {ours: [1000, 1000]}, {ours: [0, 0]}, 5,
                              {ours: [2400, 2400]})
        self.assertAlmostEqual(plain.to_dict()["targets"][0]["value"], 0.4)

    def test_resumed_handshakes_are_judged_against_their_own_limit(self):
        limit = {"x25519_keygen_per_sec": 40000.0, "x25519_shared_per_sec": 40000.0}
        self.assertEqual(suite_handshakes.resumed_limit(limit), 20000.0)
        section = suite_context.Section("handshakes", "2", "Handshakes")
        ours, resumed = suite_handshakes.OURS, suite_handshakes.OURS_RESUMED
        suite_handshakes.fill(section, [10000], {ours: [2000], resumed: [3000]},
                              {ours: [0], resumed: [0]}, 5, {ours: [5000], resumed: [11000]},
                              [20000])
        result = section.to_dict()
        self.assertEqual([(t["value"], t["met"]) for t in result["targets"]],
                         [(0.5, False), (0.55, False)])
        rows = {row[0]: row for row in result["tables"][1]["rows"]}
        self.assertEqual(rows[resumed][5], 0.55)
        self.assertEqual([r["config"] for r in result["charts"]["handshakes"]["runs"]],
                         [ours + " (per server CPU-second)"])

    def test_cpu_seconds_of_this_process(self):
        self.assertGreater(suite_handshakes.cpu_seconds(os.getpid()), 0)
        self.assertIsNone(suite_handshakes.cpu_seconds(2 ** 22 + 12345))


class HandshakesDpdkTest(unittest.TestCase):
    def test_memif_pmd_is_found_in_the_first_directory_that_has_it(self):
        listing = {"/pmds": ["librte_net_ring.so.23", "librte_net_memif.so.23"],
                   "/lib": ["librte_net_memif.so"]}

        def listdir(path):
            if path not in listing:
                raise FileNotFoundError(path)
            return listing[path]

        found = suite_handshakes_dpdk.memif_pmd(("/none", "/pmds", "/lib"), listdir)
        self.assertEqual(found, "/pmds/librte_net_memif.so.23")
        self.assertIsNone(suite_handshakes_dpdk.memif_pmd(("/none",), listdir))

    def test_hugepages_must_hold_both_processes(self):
        meminfo = "HugePages_Total:     512\nHugePages_Free:      300\nHugepagesize:       2048 kB\n"
        self.assertEqual(suite_handshakes_dpdk.hugepage_size_kb(meminfo), 2048)
        self.assertTrue(suite_handshakes_dpdk.hugepages_enough(meminfo, 2, 256))
        self.assertFalse(suite_handshakes_dpdk.hugepages_enough(meminfo, 2, 512))
        self.assertFalse(suite_handshakes_dpdk.hugepages_enough("HugePages_Free: 300\n"))

    def test_commands_put_each_side_on_its_cpu_with_its_own_prefix(self):
        server, client = suite_handshakes_dpdk.commands("/b/dataplane", "/b/quicload", "T", 10,
                                                        9100, "/w/r.json", resumed=True)
        self.assertEqual(server, [
            "/b/dataplane", "--backend=dpdk", "--cores=1", "--ip=10.77.0.1/24",
            "--listen=10.77.0.1:4433", "--metrics=127.0.0.1:9100",
            "--retry=never", "--max-half-open-per-address=128",
            "--eal=--in-memory -m 256 --no-pci --no-telemetry --file-prefix=dpq-hs-srv-T "
            "--lcores=0@0,1@0 --vdev=net_memif0,role=server,socket=/tmp/dpq-memif-T.sock,id=0,"
            "mac=02:00:00:77:00:01"])
        self.assertIn("--eal=--in-memory -m 256 --no-pci --no-telemetry --file-prefix=dpq-hs-cli-T "
                      "--lcores=0@1,1@1 --vdev=net_memif0,role=client,socket=/tmp/dpq-memif-T.sock,"
                      "id=0,mac=02:00:00:77:00:02", client)
        self.assertEqual(client[-3:], ["--json=/w/r.json", "--resume", "https://10.77.0.1:4433/"])
        self.assertIn("--duration=10", client)
        _, full = suite_handshakes_dpdk.commands("d", "q", "T", 5, 1, "r", resumed=False)
        self.assertNotIn("--resume", full)

    def test_our_handshake_server_answers_the_runs_connections_without_retry(self):
        cmd = suite_handshakes.server_command("/b/dataplane", 4433)
        self.assertIn("--max-half-open-per-address=%d" % (2 * suite_handshakes.CONNECTIONS), cmd)
        self.assertIn("--retry=never", cmd)
        self.assertIn("--cores=1", cmd)
        self.assertEqual(suite_handshakes.retries_text({"server_retries": 0}), "")
        self.assertEqual(suite_handshakes.retries_text({"server_retries": None}), "")
        self.assertEqual(suite_handshakes.retries_text({"server_retries": 7}),
                         ", 7 Retry packets sent")

    def test_handshakes_total_from_prometheus_text(self):
        text = ("# HELP dpquic_handshakes_total Handshakes completed.\n"
                "# TYPE dpquic_handshakes_total counter\ndpquic_handshakes_total 1234\n"
                "dpquic_handshakes_total_other 5\n")
        self.assertEqual(suite_handshakes_dpdk.handshakes_total(text), 1234)
        self.assertIsNone(suite_handshakes_dpdk.handshakes_total("dpquic_connections 3\n"))

    def test_scrape_figures_sum_every_shard(self):
        # As dataplane --backend=dpdk renders them: one series per shard.
        text = ("# HELP dpquic_handshakes_total Handshakes completed.\n"
                "# TYPE dpquic_handshakes_total counter\n"
                'dpquic_handshakes_total{shard="0"} 1200\n'
                'dpquic_handshakes_total{shard="1"} 34\n'
                "# TYPE dpquic_dpdk_poll_seconds_total counter\n"
                'dpquic_dpdk_poll_seconds_total{shard="0"} 12.5\n'
                'dpquic_dpdk_poll_seconds_total{shard="1"} 12.25\n'
                "# TYPE dpquic_dpdk_busy_seconds_total counter\n"
                'dpquic_dpdk_busy_seconds_total{shard="0"} 7.000000001\n'
                'dpquic_dpdk_busy_seconds_total{shard="1"} 0\n'
                'dpquic_handshake_duration_seconds_count{shard="0"} 1200\n')
        handshakes, busy, poll = suite_handshakes_dpdk.scrape_figures(text)
        self.assertEqual(handshakes, 1234)
        self.assertAlmostEqual(busy, 7.000000001)
        self.assertAlmostEqual(poll, 24.75)
        # A kernel-UDP server (or an older one) has no loop time.
        self.assertEqual(suite_handshakes_dpdk.scrape_figures(
            'dpquic_handshakes_total{shard="0"} 5\n'), (5, None, None))
        self.assertIsNone(suite_handshakes_dpdk.metric_total(
            "dpquic_dpdk_busy_seconds_total NaNx\n", suite_handshakes_dpdk.BUSY_SECONDS))

    def test_window_figures_are_differences_of_two_samples(self):
        first = (100, 2.0, 50.0, 1.25, 10.0)
        last = (1100, 7.0, 55.0, 4.25, 15.0)
        figures = suite_handshakes_dpdk.window_figures(first, last)
        self.assertEqual(figures, {"server_lcore_handshakes": 1000, "server_lcore_seconds": 5.0,
                                   "window_seconds": 5.0, "server_busy_seconds": 3.0,
                                   "server_poll_seconds": 5.0})
        self.assertEqual(suite_handshakes_dpdk.per_lcore_second(figures), 200)
        self.assertAlmostEqual(suite_handshakes_dpdk.per_busy_second(figures), 1000 / 3.0)
        self.assertEqual(suite_handshakes_dpdk.busy_fraction(figures), 0.6)
        missing = suite_handshakes_dpdk.window_figures(first, (1100, 7.0, 55.0, None, None))
        self.assertIsNone(missing["server_busy_seconds"])
        self.assertIsNone(suite_handshakes_dpdk.per_busy_second(missing))
        self.assertIsNone(suite_handshakes_dpdk.busy_fraction(missing))

    def test_worker_threads_by_name(self):
        with tempfile.TemporaryDirectory() as proc:
            for tid, name in ((10, "dataplane"), (11, "eal-intr-thread"), (12, "rte-worker-1"),
                              (13, "lcore-worker-2")):
                os.makedirs(os.path.join(proc, "7", "task", str(tid)))
                with open(os.path.join(proc, "7", "task", str(tid), "comm"), "w") as f:
                    f.write(name + "\n")
            self.assertEqual(suite_handshakes_dpdk.worker_threads(7, proc), [12, 13])
            self.assertEqual(suite_handshakes_dpdk.worker_threads(8, proc), [])

    def test_lcore_cpu_seconds_of_this_thread(self):
        pid = os.getpid()
        self.assertGreater(suite_handshakes_dpdk.lcore_cpu_seconds(pid, [pid]), 0)
        self.assertIsNone(suite_handshakes_dpdk.lcore_cpu_seconds(pid, [2 ** 22 + 12345]))
        self.assertIsNone(suite_handshakes_dpdk.lcore_cpu_seconds(pid, []))

    def test_per_lcore_second(self):
        report = {"server_lcore_handshakes": 10000, "server_lcore_seconds": 4.0}
        self.assertEqual(suite_handshakes_dpdk.per_lcore_second(report), 2500)
        self.assertIsNone(suite_handshakes_dpdk.per_lcore_second({"handshakes": 5}))

    def test_dpdk_rows_are_judged_per_busy_lcore_second(self):
        section = suite_context.Section("handshakes", "2", "Handshakes")
        ours, resumed = suite_handshakes.OURS, suite_handshakes.OURS_RESUMED
        dpdk, dpdk_resumed = suite_handshakes_dpdk.OURS_DPDK, suite_handshakes_dpdk.OURS_DPDK_RESUMED
        # Per CPU-second 0.6 and 0.55 of the limits, per busy second 0.66
        # and 0.7: the targets (0.65, 0.60) follow the busy figure.
        suite_handshakes.fill(section, [10000], {ours: [2000], resumed: [3000], dpdk: [2500],
                                                 dpdk_resumed: [4000]},
                              {ours: [0], resumed: [0], dpdk: [0], dpdk_resumed: [0]}, 5,
                              {ours: [5000], resumed: [11000], dpdk: [6000],
                               dpdk_resumed: [11000]}, [20000],
                              {dpdk: [6500, 6600, 6700], dpdk_resumed: [14000]},
                              {dpdk: [0.5, 0.6, 0.7], dpdk_resumed: [0.75]})
        result = section.to_dict()
        targets = {t["name"]: (t["value"], t["target"], t["met"]) for t in result["targets"]}
        self.assertEqual(targets[dpdk + ": handshakes per busy server lcore-second against the "
                                 "crypto limit"], (0.66, ">= 0.65", True))
        self.assertEqual(targets[dpdk_resumed + ": handshakes per busy server lcore-second "
                                 "against their crypto limit"], (0.7, ">= 0.60", True))
        self.assertEqual(result["data"]["dpdk_ratio_to_limit"], {dpdk: 0.66, dpdk_resumed: 0.7})
        self.assertEqual(result["data"]["dpdk_cpu_ratio_to_limit"],
                         {dpdk: 0.6, dpdk_resumed: 0.55})
        # Rates, per CPU-second (both kept), per busy second.
        self.assertEqual(len(result["tables"]), 3)
        cpu = {row[0]: row for row in result["tables"][1]["rows"]}
        self.assertEqual(cpu[dpdk][1:6], [6000, 6000, 6000, 1, 0.6])
        busy = {row[0]: row for row in result["tables"][2]["rows"]}
        self.assertEqual(list(busy), [dpdk, dpdk_resumed])
        self.assertEqual(busy[dpdk][1:], [6600, 6500, 6700, 3, 0.66, 0.6])
        self.assertEqual(busy[dpdk_resumed][5:], [0.7, 0.75])
        rates = {row[0]: row for row in result["tables"][0]["rows"]}
        self.assertEqual(rates[dpdk_resumed][5], 0.2)
        self.assertEqual([r["config"] for r in result["charts"]["handshakes"]["runs"]],
                         [ours + " (per server CPU-second)", dpdk + " (per server CPU-second)"])

    def test_dpdk_rows_without_busy_time_miss_their_targets(self):
        section = suite_context.Section("handshakes", "2", "Handshakes")
        ours, dpdk = suite_handshakes.OURS, suite_handshakes_dpdk.OURS_DPDK
        suite_handshakes.fill(section, [10000], {ours: [2000], dpdk: [2500]},
                              {ours: [0], dpdk: [0]}, 5, {ours: [5000], dpdk: [9000]})
        result = section.to_dict()
        target = [t for t in result["targets"] if t["name"].startswith(dpdk)][0]
        self.assertEqual((target["value"], target["met"]), (None, False))
        self.assertEqual(len(result["tables"]), 2)


class ReportTest(unittest.TestCase):
    def test_goodput_figures_and_ratios(self):
        goodput = fake_sections()[0]
        rows = goodput["tables"][0]["rows"]
        # The best peer is quinn -> quinn (f, median 4.0); jumbo figures in the last column.
        self.assertEqual(rows[0][1:7], [2.0, 1.0, 3.0, 3, 0.5, 2.5])
        self.assertEqual(rows[1][0], "(c) dpquic dataplane -> dpquic client")
        self.assertEqual(rows[1][5:7], [2.25, 20.0])
        self.assertEqual([r[0][:3] for r in rows], ["(a)", "(c)", "(f)", "(g)"])
        self.assertIsNone(rows[2][6])
        self.assertEqual(goodput["skipped"], [{"what": "(b) dpquic dataplane -> ngtcp2 gtlsclient",
                                               "why": "gtlsclient not found on PATH"}])
        self.assertEqual(goodput["charts"]["goodput"]["baseline"], "quinn -> quinn")
        self.assertEqual([(t["value"], t["met"]) for t in goodput["targets"]],
                         [(2.25, False), (1.5, True)])

    def test_targets(self):
        sections = {s["key"]: s for s in fake_sections()}
        dpdk = sections["dpdk"]["targets"]
        self.assertEqual((dpdk[0]["value"], dpdk[0]["met"]), (2.55, False))
        # The best configuration's median goodput (jumbo frames here).
        self.assertEqual((dpdk[1]["value"], dpdk[1]["met"]), (30.0, True))
        self.assertEqual((dpdk[2]["value"], dpdk[2]["met"]), (250, False))
        tables = sections["dpdk"]["tables"]
        self.assertEqual(len(tables), 2)
        capacity = [row for row in tables[1]["rows"] if row[0].startswith("server lcore capacity")]
        # 8900 bytes * 8 * 2.6 GHz / 6000 cycles = 30.85 Gbps.
        self.assertAlmostEqual(capacity[0][1], 8900 * 8 * 2.6e9 / 6000 / 1e9)
        # The software checksum has its own row, and the target ratio is the
        # one a port with checksum offload would have.
        rows = {row[0]: row[1] for row in tables[0]["rows"]}
        self.assertEqual(rows["send path: software UDP checksum (ports without offload)"], 140)
        self.assertEqual(rows["send path / raw AEAD, with the software checksum"], 2.5)
        self.assertIn("checksum offload", sections["dpdk"]["targets"][0]["name"])
        self.assertAlmostEqual(sections["gso"]["data"]["ratio"], 9.0 / 6.5)

    def test_results_follow_the_charts_schema(self):
        results = suite_report.build_results(fake_sections(), MACHINE, "bazel run x", 3, False)
        self.assertEqual(results["machine"].split(",")[0], "Fake CPU")
        self.assertEqual([c["name"] for c in results["bar_charts"]], ["gso"])
        self.assertIn("goodput", results)
        self.assertIn("cycles", results)
        # A skipped or failed section contributes no chart data.
        self.assertNotIn("handshakes", results)
        scripts = charts.chart_scripts(json.loads(json.dumps(results)), "/out")
        self.assertEqual(sorted(os.path.basename(p) for p, _ in scripts),
                         ["cycles.svg", "goodput.svg", "gso.svg"])

    def test_markdown(self):
        results = suite_report.build_results(fake_sections(), MACHINE, "bazel run x", 3, False)
        text = suite_report.render(results, ["goodput.svg", "cycles.svg"], "docs/bench")
        self.assertIn("### 4. Memory\n\n- skipped: quicload has no --idle\n", text)
        self.assertIn("- **failed**: quicload exited 1", text)
        self.assertIn("- skipped: (b) dpquic dataplane -> ngtcp2 gtlsclient: gtlsclient not "
                      "found on PATH", text)
        self.assertIn("![goodput](docs/bench/goodput.svg)", text)
        self.assertIn("![cycles](docs/bench/cycles.svg)", text)
        # gso.svg was not written: no link to it.
        self.assertNotIn("gso.svg", text)
        self.assertIn("| (c) dpquic dataplane -> dpquic client | 9.00 | 8.00 | 10.00 | 3 | 2.25 "
                      "| 20.00 |", text)
        self.assertIn("- Target: heap allocations after the handshake (worst run): 250 "
                      "(target < 200): **not met**", text)
        self.assertIn("| 4. Memory | skipped: quicload has no --idle |", text)
        self.assertIn("Fake CPU, 2 cores", text)
        self.assertIn("[docs/bench/results.json](docs/bench/results.json)", text)
        self.assertIn("```\n(a) server: srv a\n", text)


class MergeTest(unittest.TestCase):
    def results(self, date, sections, runs=3, quick=False):
        machine = dict(MACHINE, date=date)
        return suite_report.build_results(sections, machine, "cmd " + date, runs, quick)

    def test_a_partial_run_keeps_the_other_sections_with_their_dates(self):
        full = json.loads(json.dumps(self.results("d1", fake_sections())))
        for s in full["sections"]:
            s["date"] = "d1"
        dpdk = [s for s in fake_sections() if s["key"] == "dpdk"][0]
        rerun = dict(dpdk, date="d2", targets=[dict(dpdk["targets"][0], value=9.0)])
        merged = suite_report.merge_previous(self.results("d2", [rerun]), full)
        self.assertEqual([s["key"] for s in merged["sections"]],
                         [s["key"] for s in full["sections"]])
        by_key = {s["key"]: s for s in merged["sections"]}
        self.assertEqual(by_key["dpdk"]["targets"][0]["value"], 9.0)
        self.assertEqual(by_key["goodput"]["date"], "d1")
        # Chart data come from every kept section, not only the rerun one.
        self.assertIn("goodput", merged)
        self.assertIn("cycles", merged)
        self.assertEqual(merged["base"], {"command": "cmd d1", "date": "d1"})
        self.assertFalse(merged["machine"].endswith("d2"))
        text = suite_report.render(merged)
        self.assertIn("Generated by `cmd d1` on d1; section 8 rerun alone since, the last "
                      "time by `cmd d2` on d2", text)
        # A second partial run keeps the first full run as its base.
        again = suite_report.merge_previous(self.results("d3", [dict(rerun, date="d3")]),
                                            json.loads(json.dumps(merged)))
        self.assertEqual(again["base"]["date"], "d1")

    def test_quick_or_other_runs_are_not_mixed(self):
        full = self.results("d1", fake_sections())
        self.assertIsNone(suite_report.merge_previous(self.results("d2", [], quick=True), full))
        self.assertIsNone(suite_report.merge_previous(self.results("d2", [], runs=5), full))

    def test_another_machine_is_not_mixed(self):
        full = self.results("d1", fake_sections())
        other = self.results("d2", [])
        other["machine_description"] = dict(MACHINE, cpu_model="AMD EPYC", date="d2")
        self.assertIsNone(suite_report.merge_previous(other, full))
        # Another kernel on the same kind of machine still mixes.
        kernel = self.results("d2", [])
        kernel["machine_description"] = dict(MACHINE, kernel="Linux 9.9", date="d2")
        self.assertIsNotNone(suite_report.merge_previous(kernel, full))

    def test_a_full_run_cites_only_itself(self):
        text = suite_report.render(self.results("d1", fake_sections()))
        self.assertIn("Generated by `cmd d1` on d1. Do not edit", text)


class SpliceTest(unittest.TestCase):
    def test_inserted_after_the_title_paragraph(self):
        before = "# Benchmarks\n\nIntro line one\nline two.\n\n## Hand-written\n\ntext\n"
        out = suite_report.splice(before, "GEN\n")
        self.assertEqual(out, "# Benchmarks\n\nIntro line one\nline two.\n\n"
                              "<!-- suite:begin -->\nGEN\n<!-- suite:end -->\n\n"
                              "## Hand-written\n\ntext\n")
        # Running again replaces the block and keeps the rest byte for byte.
        again = suite_report.splice(out, "NEW\nLINES\n")
        self.assertEqual(again, out.replace("GEN\n", "NEW\nLINES\n"))

    def test_title_only_and_empty(self):
        self.assertEqual(suite_report.splice("# T\n", "G"),
                         "# T\n\n<!-- suite:begin -->\nG\n<!-- suite:end -->\n")
        self.assertEqual(suite_report.splice(None, "G"),
                         "# Benchmarks\n\n<!-- suite:begin -->\nG\n<!-- suite:end -->\n")

    def test_one_marker_is_an_error(self):
        with self.assertRaises(ValueError):
            suite_report.splice("# T\n<!-- suite:begin -->\nx\n", "G")

    def test_update_markdown_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "BENCHMARKS.md")
            suite_report.update_markdown(path, "first")
            suite_report.update_markdown(path, "second")
            with open(path) as f:
                self.assertEqual(f.read(), "# Benchmarks\n\n<!-- suite:begin -->\nsecond\n"
                                           "<!-- suite:end -->\n")


class ParserTest(unittest.TestCase):
    def test_stream_progress_lines(self):
        text = ("quicload: x\n[    1.0s] requests 176200/1000000  goodput 0.089 Gbps\n"
                "[    2.0s] requests 357128/1000000  goodput 0.092 Gbps\n")
        self.assertEqual(suite_streams.progress_at(text, 1.0), (1.0, 176200))
        self.assertEqual(suite_streams.progress_at(text, 1.5), (2.0, 357128))
        self.assertIsNone(suite_streams.progress_at(text, 3.0))

    def test_server_stats_lines(self):
        text = ("dataplane: serving\nstats: connections=10 handshakes/s=1.0 in=0\n"
                "stats: connections=9999 handshakes/s=2.0\n")
        self.assertEqual(suite_memory.connections_now(text), 9999)
        self.assertIsNone(suite_memory.connections_now("dataplane: serving\n"))
        self.assertTrue(suite_memory.idle_flag_supported("  --idle=SECONDS  hold"))
        self.assertFalse(suite_memory.idle_flag_supported("  --handshake-only"))

    def test_benchmark_json_medians_and_counters(self):
        doc = {"context": {}, "benchmarks": [
            {"name": "BM_A_mean", "run_name": "BM_A", "run_type": "aggregate",
             "aggregate_name": "mean", "real_time": 9.0, "cpu_time": 9.0, "time_unit": "ns",
             "cycles_per_datagram": 99.0},
            {"name": "BM_A_median", "run_name": "BM_A", "run_type": "aggregate",
             "aggregate_name": "median", "real_time": 10.0, "cpu_time": 8.0, "time_unit": "ns",
             "iterations": 5, "repetitions": 5, "cycles_per_datagram": 100.5,
             "bytes_per_second": 2.5e9, "label": "x"}]}
        text = "pinned to cpu 1; ipsec-mb arch avx512\n" + json.dumps(doc, indent=2)
        rows = suite_micro.medians(suite_micro.parse_benchmark_json(text))
        self.assertEqual(rows, [{"name": "BM_A", "real_time": 10.0, "cpu_time": 8.0,
                                 "time_unit": "ns", "error": None,
                                 "counters": {"cycles_per_datagram": 100.5,
                                              "bytes_per_second": 2.5e9}}])
        self.assertEqual(suite_micro.table_rows(rows), [
            ["BM_A", "10 ns", "8 ns", "bytes_per_second=2.5G, cycles_per_datagram=100.5"]])
        with self.assertRaises(ValueError):
            suite_micro.parse_benchmark_json("no json here")

    def test_endpoint_targets_judge_the_burst_download(self):
        def row(name, **counters):
            return {"name": name, "real_time": 1.0, "cpu_time": 1.0, "time_unit": "ms",
                    "counters": counters, "error": None}
        rows = [row("BM_EndpointDownload/64/0/iterations:4", receive_path_over_raw_open=3.0,
                    send_over_raw_seal=1.0),
                row("BM_EndpointDownload/64/1/iterations:4", receive_path_over_raw_open=2.6,
                    send_over_raw_seal=2.4, raw_open_cycles=250.0, raw_seal_cycles=260.0)]
        section = suite_context.Section("micro", "7", "Micro")
        suite_micro.judge_endpoint(section, rows, "avx512")
        self.assertEqual([(t["value"], t["met"]) for t in section.targets],
                         [(2.6, False), (2.4, True)])
        self.assertIn("250 cycles to open, 260 to seal, ipsec-mb arch avx512", section.notes[0])
        missing = suite_context.Section("micro", "7", "Micro")
        suite_micro.judge_endpoint(missing, rows[:1], None)
        self.assertEqual(missing.targets, [])
        self.assertEqual(missing.skipped[0]["what"], "endpoint targets")

    def test_compact_numbers(self):
        self.assertEqual(suite_micro.compact(0), "0")
        self.assertEqual(suite_micro.compact(759.08), "759.1")
        self.assertEqual(suite_micro.compact(14483302.9), "14.5M")
        self.assertEqual(suite_micro.compact(1500), "1.5k")

    def test_hugepages(self):
        self.assertEqual(suite_dpdk.free_hugepages("HugePages_Total: 512\nHugePages_Free: 500\n"),
                         500)
        self.assertEqual(suite_dpdk.free_hugepages("MemTotal: 1 kB\n"), 0)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "nr_hugepages")
            with open(path, "w") as f:
                f.write("0\n")
            section = suite_context.Section("dpdk", "8", "DPDK")
            suite_dpdk.prepare_hugepages(section, 1000, path)  # not root: left alone
            with open(path) as f:
                self.assertEqual(f.read(), "0\n")
            self.assertEqual(section.notes, [])
            suite_dpdk.prepare_hugepages(section, 0, path)
            with open(path) as f:
                self.assertEqual(f.read(), "512\n")
            self.assertEqual(section.notes,
                             ["Reserved 512 hugepages (/proc/sys/vm/nr_hugepages was 0)."])


if __name__ == "__main__":
    unittest.main()
