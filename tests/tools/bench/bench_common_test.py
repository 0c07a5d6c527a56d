"""Unit tests of tools/bench/bench_common.py."""

import datetime
import os
import signal
import socket
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
            self.assertIn("stopping", bc._read_text(log))
            self.assertEqual(server.stop(), 7)  # Idempotent.

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

    def test_free_udp_port_is_bindable(self):
        port = bc.free_udp_port()
        self.assertTrue(1024 <= port <= 65535)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", port))


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
