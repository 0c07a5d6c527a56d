"""Unit tests of tools/bench/handshake_profile.py: reading `perf script`,
classifying samples, shares with idle spins taken out, and the budget."""

import contextlib
import io
import unittest

import handshake_profile as hp

BIN = "(/x/bazel-out/k8-opt/bin/dataplane/dataplane)"
SSL = "(/usr/lib/x86_64-linux-gnu/android/libssl.so.0)"
CRYPTO = "(/usr/lib/x86_64-linux-gnu/android/libcrypto.so.0)"
KERNEL = "([kernel.kallsyms])"

# Six samples as `perf script -F ip,sym,dso` prints them, leaf first.
SCRIPT = """
\t  10 X25519 %(crypto)s
\t  20 [unknown] %(ssl)s
\t  30 SSL_do_handshake %(ssl)s
\t  40 dpquic::crypto::TlsSession::advance %(bin)s

\t  11 SHA256_Update %(crypto)s
\t  21 SSL_do_handshake %(ssl)s
\t  41 dpquic::crypto::TlsSession::advance %(bin)s

\t  12 __memcpy_avx_unaligned_erms (inlined)
\t  13 dpquic::crypto::hkdf_expand_label %(bin)s
\t  14 dpquic::crypto::ConnectionKeys::install_secret %(bin)s
\t  22 SSL_do_handshake %(ssl)s

\tffff0001 copy_user_generic %(kernel)s
\tffff0002 do_syscall_64 %(kernel)s
\t  15 dpquic::dataplane::UdpSocket::send_each %(bin)s

\t  16 std::function<void (dpquic::dataplane::dpdk::DpdkShard&)>::operator() %(bin)s
\t  17 run_body (inlined)

\t  18 ECDSA_sign %(crypto)s
""" % {"bin": BIN, "ssl": SSL, "crypto": CRYPTO, "kernel": KERNEL}


class ReadTest(unittest.TestCase):
    def test_frames_and_samples(self):
        stacks = list(hp.read_stacks(SCRIPT.splitlines(True)))
        self.assertEqual(len(stacks), 6)
        self.assertEqual(stacks[0][0], ("X25519", "libcrypto.so.0"))
        self.assertEqual(stacks[3][0], ("copy_user_generic", hp.KERNEL_DSO))
        self.assertEqual(stacks[4][0], (
            "std::function<void (dpquic::dataplane::dpdk::DpdkShard&)>::operator()",
            "dataplane"))
        self.assertEqual(stacks[4][1], ("run_body", "inlined"))


class ClassifyTest(unittest.TestCase):
    def test_each_sample_lands_in_its_class(self):
        classes = [hp.classify(s) for s in hp.read_stacks(SCRIPT.splitlines(True))]
        self.assertEqual(classes, [hp.LIMIT, hp.TLS, hp.CALLBACKS, hp.KERNEL, hp.ENGINE,
                                   hp.LIMIT])

    def test_kernel_inside_the_handshake_is_tls_work(self):
        stack = [("clear_page", hp.KERNEL_DSO), ("SSL_do_handshake", "libssl.so.0")]
        self.assertEqual(hp.classify(stack), hp.TLS)


class SharesTest(unittest.TestCase):
    COUNTS = {hp.LIMIT: 40, hp.TLS: 10, hp.CALLBACKS: 5, hp.KERNEL: 0, hp.ENGINE: 45}

    def test_every_sample_busy(self):
        share = hp.shares(self.COUNTS)
        self.assertAlmostEqual(share[hp.LIMIT], 0.40)
        self.assertAlmostEqual(share[hp.ENGINE], 0.45)
        self.assertAlmostEqual(sum(share.values()), 1.0)

    def test_idle_spins_come_out_of_the_engine(self):
        # 80 of 100 samples busy: the 20 idle ones are engine samples.
        share = hp.shares(self.COUNTS, busy_fraction=0.8)
        self.assertAlmostEqual(share[hp.LIMIT], 0.50)
        self.assertAlmostEqual(share[hp.ENGINE], 25 / 80)
        self.assertAlmostEqual(sum(share.values()), 1.0)

    def test_classes_without_samples_count_zero(self):
        share = hp.shares({hp.LIMIT: 3, hp.ENGINE: 1})
        self.assertEqual(share[hp.KERNEL], 0)
        self.assertAlmostEqual(share[hp.LIMIT], 0.75)

    def test_impossible_busy_fraction_and_no_samples(self):
        with self.assertRaises(hp.ProfileError):
            hp.shares(self.COUNTS, busy_fraction=0.5)
        with self.assertRaises(hp.ProfileError):
            hp.shares({c: 0 for c in hp.CLASSES})


class NeedsTest(unittest.TestCase):
    def test_budget(self):
        share = {hp.LIMIT: 0.5, hp.TLS: 0.15, hp.CALLBACKS: 0.05, hp.KERNEL: 0.1,
                 hp.ENGINE: 0.2}
        need = hp.needs(share, ratio=0.48, target=0.6)
        self.assertAlmostEqual(need["total"], 0.8)
        self.assertAlmostEqual(need["fixed"], 0.75)
        self.assertAlmostEqual(need["left"], 0.05)
        self.assertAlmostEqual(need["today"], 0.25)


class ArgsTest(unittest.TestCase):
    def rejected(self, argv):
        with contextlib.redirect_stderr(io.StringIO()):
            with self.assertRaises(SystemExit) as caught:
                hp.parse_args(argv)
        return caught.exception.code

    def test_defaults(self):
        args = hp.parse_args([])
        self.assertEqual((args.backend, args.resume, args.seconds, args.frequency),
                         ("udp", False, 4, 999))

    def test_bad_flags_exit_2(self):
        for argv in (["--backend=tap"], ["--seconds=0"], ["--frequency=5000"],
                     ["--ratio=0.5"], ["--target=0.6"], ["--ratio=0", "--target=0.6"]):
            self.assertEqual(self.rejected(argv), 2, argv)


if __name__ == "__main__":
    unittest.main()
