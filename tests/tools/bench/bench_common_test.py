"""Unit tests of tools/bench/bench_common.py."""

import datetime
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
import unittest

import bench_common as bc

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R)   CPU @ 2.20GHz
flags\t\t: fpu vme

processor\t: 1
model name\t: Intel(R) Xeon(R)   CPU @ 2.20GHz
"""


class MachineTest(unittest.TestCase):
    def test_cpu_model_collapses_spaces(self):
        self.assertEqual(bc.cpu_model(CPUINFO), "Intel(R) Xeon(R) CPU @ 2.20GHz")
        self.assertEqual(bc.cpu_model(""), "unknown CPU")

    def test_memory_total(self):
        self.assertEqual(bc.memory_total_bytes("MemFree: 1 kB\nMemTotal:  16384 kB\n"), 16384 * 1024)
        self.assertIsNone(bc.memory_total_bytes("MemFree: 1 kB\n"))

    def test_description_of_this_machine(self):
        now = datetime.datetime(2024, 5, 6, 7, 8, tzinfo=datetime.timezone.utc)
        desc = bc.machine_description(now)
        self.assertEqual(desc["date"], "2024-05-06 07:08 UTC")
        self.assertEqual(desc["cores"], os.cpu_count())
        self.assertGreaterEqual(desc["cores"], desc["usable_cores"])
        self.assertTrue(desc["kernel"].startswith("Linux "))
        self.assertNotEqual(desc["cpu_model"], "")

    def test_machine_line(self):
        desc = {"cpu_model": "Foo CPU", "cores": 8, "usable_cores": 2,
                "memory_bytes": 16 * 2**30, "kernel": "Linux 6.1.0", "machine": "x86_64",
                "date": "2024-05-06 07:08 UTC"}
        self.assertEqual(bc.machine_line(desc),
                         "Foo CPU, 8 cores (2 usable), 16 GiB RAM, Linux 6.1.0, x86_64, "
                         "2024-05-06 07:08 UTC")
        desc["usable_cores"] = 8
        self.assertTrue(bc.machine_line(desc).startswith("Foo CPU, 8 cores, 16 GiB"))


class StatisticsTest(unittest.TestCase):
    def test_summarize_odd_and_even(self):
        self.assertEqual(bc.summarize([3, 1, 2, 5, 4]),
                         {"median": 3.0, "min": 1.0, "max": 5.0, "runs": 5})
        self.assertEqual(bc.summarize([4, 1, 2, 3])["median"], 2.5)
        with self.assertRaises(ValueError):
            bc.summarize([])

    def test_ratio(self):
        self.assertEqual(bc.ratio(3.0, 2.0), 1.5)
        self.assertIsNone(bc.ratio(3.0, 0))
        self.assertIsNone(bc.ratio(None, 2.0))


class ProcessTest(unittest.TestCase):
    def test_run_bounded_captures_output_and_status(self):
        r = bc.run_bounded(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
        self.assertEqual((r.returncode, r.stdout, r.stderr, r.timed_out), (3, "out\n", "err\n", False))
        self.assertFalse(r.ok)
        r = bc.run_bounded(["/bin/cat"], timeout=30, input_text="abc")
        self.assertTrue(r.ok)
        self.assertEqual(r.stdout, "abc")

    def test_run_bounded_kills_on_timeout(self):
        start = time.monotonic()
        r = bc.run_bounded(["/bin/sleep", "30"], timeout=0.3)
        self.assertTrue(r.timed_out)
        self.assertEqual(r.returncode, -signal.SIGTERM)
        self.assertLess(time.monotonic() - start, 10)
        self.assertGreaterEqual(r.elapsed, 0.3)

    def test_run_bounded_escalates_to_sigkill(self):
        # The child ignores SIGTERM; the grace period ends in SIGKILL.
        r = bc.run_bounded(["/bin/sh", "-c", "trap '' TERM; echo ready; sleep 30"],
                           timeout=0.5, grace=0.3)
        self.assertTrue(r.timed_out)
        self.assertEqual(r.returncode, -signal.SIGKILL)

    def test_background_process(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "server.log")
            script = "echo listening; trap 'echo stopping; exit 7' TERM; while :; do sleep 0.05; done"
            with bc.BackgroundProcess(["/bin/sh", "-c", script], log) as server:
                self.assertTrue(server.wait_for_text("listening", timeout=10))
                self.assertTrue(server.running())
                self.assertFalse(server.wait_for_text("never printed", timeout=0.2))
                self.assertEqual(server.stop(), 7)
            self.assertFalse(server.running())
            self.assertIn("stopping", bc.read_text(log))
            self.assertEqual(server.stop(), 7)  # Idempotent.
            self.assertIn("stopping", server.log_text())  # Readable after the stop.
        self.assertEqual(bc.read_text(os.path.join(d, "absent")), "")

    def test_background_process_that_ignores_sigterm_is_killed(self):
        with tempfile.TemporaryDirectory() as d:
            p = bc.BackgroundProcess(["/bin/sh", "-c", "trap '' TERM; echo up; sleep 30"],
                                     os.path.join(d, "log"))
            self.assertTrue(p.wait_for_text("up", timeout=10))
            start = time.monotonic()
            self.assertEqual(p.stop(grace=0.3), -signal.SIGKILL)
            self.assertLess(time.monotonic() - start, 10)

    def test_background_process_that_exits_early(self):
        with tempfile.TemporaryDirectory() as d:
            with bc.BackgroundProcess(["/bin/sh", "-c", "echo bye; exit 4"],
                                      os.path.join(d, "log")) as p:
                self.assertFalse(p.wait_for_text("listening", timeout=10))
            self.assertEqual(p.returncode, 4)

    def test_taskset_takes_an_int_cpu(self):
        self.assertEqual((bc.SERVER_CPU, bc.CLIENT_CPU), (0, 1))
        pinned = bc.taskset(bc.CLIENT_CPU, ["prog", "--flag"])
        if shutil.which("taskset"):
            self.assertEqual(pinned, ["taskset", "-c", "1", "prog", "--flag"])
        else:
            self.assertEqual(pinned, ["prog", "--flag"])

    def test_free_udp_port_is_bindable(self):
        port = bc.free_udp_port()
        self.assertTrue(1024 <= port <= 65535)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", port))


class StartServerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.log = os.path.join(self.tmp.name, "server.log")

    def tearDown(self):
        self.tmp.cleanup()

    def python(self, code):
        return [sys.executable, "-c", code]

    def test_ready_text(self):
        code = "import time; print('dataplane: serving', flush=True); time.sleep(30)"
        with bc.start_server(self.python(code), self.log, "serving", timeout=10) as server:
            self.assertTrue(server.running())
            self.assertIn("serving", server.log_text())
        self.assertFalse(server.running())

    def test_settle_time_without_ready_text(self):
        env = dict(os.environ, SERVER_WORD="quiet")
        code = "import os, time; print(os.environ['SERVER_WORD'], flush=True); time.sleep(30)"
        start = time.monotonic()
        with bc.start_server(self.python(code), self.log, settle=0.2, env=env) as server:
            self.assertGreaterEqual(time.monotonic() - start, 0.2)
            self.assertTrue(server.running())
            self.assertTrue(server.wait_for_text("quiet", timeout=10))

    def test_exit_at_once_is_an_error(self):
        code = "import sys; print('bad flag', flush=True); sys.exit(3)"
        program = re.escape(os.path.basename(sys.executable))
        for ready in ("serving", None):
            with self.assertRaisesRegex(bc.ServerError,
                                        r"^%s did not start \(exited 3\): bad flag$" % program):
                bc.start_server(self.python(code), self.log, ready, settle=0.2)

    def test_no_ready_text_in_time_is_an_error_and_the_process_is_stopped(self):
        # It ignores SIGTERM: the stop ends in SIGKILL.
        code = "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
               "print('starting', os.getpid(), flush=True); time.sleep(30)"
        start = time.monotonic()
        with self.assertRaisesRegex(bc.ServerError, r"^srv did not start \(no 'serving' in its "
                                    r"output after 0.3 s\): starting (\d+)$") as caught:
            bc.start_server(self.python(code), self.log, "serving", timeout=0.3, name="srv")
        self.assertLess(time.monotonic() - start, 10)
        self.assertIsInstance(caught.exception, RuntimeError)
        pid = int(str(caught.exception).split()[-1])
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)

    def test_program_name_skips_taskset(self):
        self.assertEqual(bc.program_name(["taskset", "-c", "0", "/b/dataplane", "--cores=1"]),
                         "dataplane")
        self.assertEqual(bc.program_name(["/usr/bin/gtlsserver", "--quiet"]), "gtlsserver")


class CommandLineTest(unittest.TestCase):
    def test_dataplane(self):
        self.assertEqual(bc.dataplane_command("/b/dataplane", 4433),
                         ["/b/dataplane", "--listen=127.0.0.1:4433", "--cores=1"])
        self.assertEqual(bc.dataplane_command("dp", 9, cores=2, extra=("--stats=1", "--gso=off")),
                         ["dp", "--listen=127.0.0.1:9", "--cores=2", "--stats=1", "--gso=off"])

    def test_ngtcp2_server(self):
        self.assertEqual(bc.ngtcp2_server_command(4433, "/w/key.pem", "/w/cert.pem"),
                         ["gtlsserver", "--quiet", "127.0.0.1", "4433", "/w/key.pem",
                          "/w/cert.pem"])
        self.assertEqual(bc.ngtcp2_server_command(4433, "k", "c", htdocs="/w/root"),
                         ["gtlsserver", "--quiet", "--htdocs=/w/root", "127.0.0.1", "4433", "k",
                          "c"])
        self.assertEqual(bc.ngtcp2_server_command(4433, "k", "c", htdocs="/w",
                                                  max_dyn_length="4G"),
                         ["gtlsserver", "--quiet", "--htdocs=/w", "--max-dyn-length=4G",
                          "127.0.0.1", "4433", "k", "c"])

    def test_ngtcp2_client(self):
        url = "https://127.0.0.1:4433/1000"
        self.assertEqual(bc.ngtcp2_client_command(4433, url),
                         ["gtlsclient", "--quiet", "--exit-on-all-streams-close",
                          "--no-quic-dump", "--no-http-dump", "127.0.0.1", "4433", url])
        self.assertEqual(bc.ngtcp2_client_command(4433, url, download_dir="/w/d",
                                                  program="/usr/bin/gtlsclient"),
                         ["/usr/bin/gtlsclient", "--quiet", "--exit-on-all-streams-close",
                          "--download=/w/d", "127.0.0.1", "4433", url])

    @unittest.skipUnless(shutil.which("openssl"), "openssl not installed")
    def test_certificate_made_once(self):
        with tempfile.TemporaryDirectory() as d:
            key, cert = bc.make_certificate(d)
            self.assertEqual((key, cert), bc.certificate_paths(d))
            self.assertIn("PRIVATE KEY", bc.read_text(key))
            self.assertIn("BEGIN CERTIFICATE", bc.read_text(cert))
            made = os.stat(cert).st_mtime_ns
            self.assertEqual(bc.make_certificate(d), (key, cert))
            self.assertEqual(os.stat(cert).st_mtime_ns, made)
            with self.assertRaisesRegex(bc.ServerError, "openssl req failed"):
                bc.make_certificate(os.path.join(d, "absent", "dir"))


class DataplaneOutputTest(unittest.TestCase):
    LOG = ("dataplane: serving on 127.0.0.1:4433\n"
           "stats: connections=3 handshakes/s=1.0\n"
           "stats: connections=12 handshakes/s=9.0\n"
           "totals: packets=100 half_open_dropped=4 handshakes=7 refused=0\n")

    def test_totals(self):
        self.assertEqual(bc.dataplane_total(self.LOG, "handshakes"), 7)
        self.assertEqual(bc.dataplane_total(self.LOG, "half_open_dropped"), 4)
        self.assertEqual(bc.dataplane_total(self.LOG, "refused"), 0)
        self.assertIsNone(bc.dataplane_total(self.LOG, "retries"))
        self.assertIsNone(bc.dataplane_total("dataplane: serving\n", "handshakes"))

    def test_stats_connections(self):
        self.assertEqual(bc.dataplane_connections(self.LOG), [3, 12])
        self.assertEqual(bc.dataplane_connections("no stats\n"), [])


class JsonLinesTest(unittest.TestCase):
    OUTPUT = ("handshake_crypto_bench: CPU 1\n"
              "JSON {\"a\": 1, \"b\": [1, 2]}\n"
              "not JSON {\"x\": 1}\n"
              "  JSON {\"a\": 2}\n"
              "{\"plain\": true}\n")

    def test_prefixed_lines(self):
        self.assertEqual(bc.parse_json_lines(self.OUTPUT), [{"a": 1, "b": [1, 2]}, {"a": 2}])
        self.assertEqual(bc.last_json_line(self.OUTPUT), {"a": 2})
        self.assertIsNone(bc.last_json_line("nothing here\n"))

    def test_whole_line_objects(self):
        self.assertEqual(bc.parse_json_lines(self.OUTPUT, prefix=None), [{"plain": True}])

    def test_bad_json_names_the_line(self):
        with self.assertRaisesRegex(ValueError, "line 2: bad JSON"):
            bc.parse_json_lines("ok\nJSON {\"a\": }\n")
        with self.assertRaisesRegex(ValueError, "line 1: bad JSON"):
            bc.parse_json_lines("{truncated\n", prefix=None)
        # Lines whose payload does not start an object are prose, not data.
        self.assertEqual(bc.parse_json_lines("JSON lines follow\nJSON 3\n"), [])
        self.assertEqual(bc.parse_json_lines("[1, 2]\n", prefix=None), [])


class MarkdownTest(unittest.TestCase):
    def test_table_with_default_alignment(self):
        table = bc.markdown_table(
            ["config", "Gbps", "runs", "ok"],
            [["ngtcp2 | ngtcp2", 1.23456, 5, True], ["ours", 12345.0, 1234567, False]])
        self.assertEqual(table,
                         "| config | Gbps | runs | ok |\n"
                         "| :--- | ---: | ---: | :--- |\n"
                         "| ngtcp2 \\| ngtcp2 | 1.23 | 5 | yes |\n"
                         "| ours | 12,345 | 1,234,567 | no |\n")

    def test_explicit_alignment_digits_and_none(self):
        table = bc.markdown_table(["a", "b"], [["x", None], ["y", 0.5]], align="cl", digits=3)
        self.assertEqual(table, "| a | b |\n| :---: | :--- |\n| x | n/a |\n| y | 0.500 |\n")

    def test_bad_rows_and_alignment(self):
        with self.assertRaises(ValueError):
            bc.markdown_table(["a", "b"], [["x"]])
        with self.assertRaises(ValueError):
            bc.markdown_table(["a"], [["x"]], align="q")


if __name__ == "__main__":
    unittest.main()
