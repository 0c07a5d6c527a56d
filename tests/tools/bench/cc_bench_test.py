"""Unit tests of tools/bench/cc_bench.py: command lines, flags, the table."""

import contextlib
import io
import unittest

import cc_bench


class CommandTest(unittest.TestCase):
    def test_our_server_runs_the_controller_at_equal_mtu(self):
        cmd = cc_bench.server_command("ours-bbr", 4433, "/w", "/bin/dataplane")
        self.assertEqual(cmd[0], "/bin/dataplane")
        self.assertIn("--listen=127.0.0.1:4433", cmd)
        self.assertIn("--cc=bbr", cmd)
        self.assertIn("--max-udp-payload=1452", cmd)

    def test_ngtcp2_server_runs_bbr2_at_equal_mtu(self):
        cmd = cc_bench.server_command("ngtcp2-bbr2", 4433, "/w", "/bin/dataplane")
        self.assertEqual(cmd[0], "gtlsserver")
        self.assertIn("--cc=bbr2", cmd)
        self.assertIn("--max-udp-payload-size=1452", cmd)
        self.assertEqual(cmd[-4:], ["127.0.0.1", "4433", "/w/key.pem", "/w/cert.pem"])

    def test_relay_profile(self):
        cmd = cc_bench.impair_command("/bin/impair", 5000, 4433, 0.01, 3, 600)
        self.assertEqual(cmd[:3], ["/bin/impair", "--listen=127.0.0.1:5000",
                                   "--server=127.0.0.1:4433"])
        for flag in ("--rate=100M", "--delay=20ms", "--loss=0.01", "--seed=3",
                     "--duration=610"):
            self.assertIn(flag, cmd)


class ArgsTest(unittest.TestCase):
    def rejected(self, argv):
        with contextlib.redirect_stderr(io.StringIO()):
            with self.assertRaises(SystemExit) as caught:
                cc_bench.parse_args(argv)
        return caught.exception.code

    def test_defaults(self):
        args = cc_bench.parse_args([])
        self.assertEqual(args.runs, 5)
        self.assertEqual(args.size, 20000000)
        self.assertEqual(args.losses, [0.0, 0.01, 0.05])
        self.assertEqual(args.servers, list(cc_bench.SERVERS))

    def test_bad_values_exit_2(self):
        self.assertEqual(self.rejected(["--runs=0"]), 2)
        self.assertEqual(self.rejected(["--losses=x"]), 2)
        self.assertEqual(self.rejected(["--losses=1.5"]), 2)
        self.assertEqual(self.rejected(["--servers=ours-vegas"]), 2)


class ReportTest(unittest.TestCase):
    def test_medians_link_share_and_ratio(self):
        results = {0.01: {"ours-bbr": [70.0, 75.0, 80.0], "ngtcp2-bbr2": [80.0, 81.0, 79.0]}}
        table = cc_bench.report(results, 3, 20000000)
        self.assertIn("| 1% | dpquic --cc=bbr | 75.0 | 70.0 | 80.0 | 75% |", table)
        self.assertIn("| 1% | ngtcp2 gtlsserver --cc=bbr2 | 80.0 | 79.0 | 81.0 | 80% |", table)
        self.assertIn("| 1% | our BBR / ngtcp2's BBRv2 | 0.94 |", table)

    def test_no_ratio_without_both_bbrs(self):
        table = cc_bench.report({0.0: {"ours-cubic": [80.0]}}, 1, 1000)
        self.assertNotIn("BBRv2", table)


if __name__ == "__main__":
    unittest.main()
