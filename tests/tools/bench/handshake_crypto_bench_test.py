"""//tools/bench:handshake_crypto_bench: flags, pinning, and a JSON line whose
limit is the one derived from the three measured rates.

Args: the path of the handshake_crypto_bench binary.
"""

import os
import sys
import unittest

import bench_common as bc

BENCH = None


class HandshakeCryptoBenchTest(unittest.TestCase):
    def test_help(self):
        r = bc.run_bounded([BENCH, "--help"], timeout=30)
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: handshake_crypto_bench", r.stdout)
        self.assertIn("--cpu=N", r.stdout)

    def test_bad_flags(self):
        for flag, message in [("--cpu=-1", "bad --cpu"), ("--seconds=0", "bad --seconds"),
                              ("--repetitions=1.5", "bad --repetitions"),
                              ("--frobnicate", "unknown argument: --frobnicate")]:
            r = bc.run_bounded([BENCH, flag], timeout=30)
            self.assertEqual(r.returncode, 2, flag)
            self.assertEqual(r.stdout, "")
            self.assertIn(message, r.stderr)

    def test_measures_on_the_given_cpu(self):
        cpu = min(os.sched_getaffinity(0))
        r = bc.run_bounded([BENCH, "--cpu=%d" % cpu, "--seconds=0.05", "--repetitions=3"],
                           timeout=60)
        self.assertTrue(r.ok, r.stderr)
        self.assertIn("CPU %d (pinned), 3 x 0.05 s" % cpu, r.stdout)
        result = bc.last_json_line(r.stdout)
        self.assertEqual(len(bc.parse_json_lines(r.stdout)), 1)
        self.assertEqual(result["cpu"], cpu)
        self.assertIs(result["pinned"], True)
        self.assertEqual(result["repetitions"], 3)
        self.assertEqual(result["seconds"], 0.05)
        rates = [result[k] for k in ("p256_sign_per_sec", "x25519_keygen_per_sec",
                                     "x25519_shared_per_sec")]
        # Each operation takes between 1 us and 10 ms on any machine we run on.
        for rate in rates:
            self.assertGreater(rate, 100)
            self.assertLess(rate, 1e6)
        limit = 1.0 / sum(1.0 / rate for rate in rates)
        self.assertAlmostEqual(result["handshake_crypto_limit_per_sec"], limit, delta=0.1 + limit * 1e-5)
        self.assertLess(result["handshake_crypto_limit_per_sec"], min(rates))

    def test_unusable_cpu_is_a_clear_error(self):
        r = bc.run_bounded([BENCH, "--cpu=1023"], timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot pin to CPU 1023", r.stderr)


if __name__ == "__main__":
    BENCH = os.path.abspath(sys.argv.pop(1))
    unittest.main()
