"""tools/bench/charts.py: SVG files from a sample results file, and clear
errors for malformed ones."""

import contextlib
import copy
import io
import json
import os
import shutil
import tempfile
import unittest
import xml.etree.ElementTree as ET

import charts

SVG = "{http://www.w3.org/2000/svg}"

SAMPLE = {
    "machine": "Example CPU @ 2.20GHz, 2 cores, Linux 6.1.0, 2024-05-06 07:08 UTC",
    "goodput": {
        "baseline": "ngtcp2 -> ngtcp2",
        "runs": [
            {"config": "ngtcp2 -> ngtcp2", "median": 2.0, "min": 1.9, "max": 2.2},
            {"config": "dpquic -> ngtcp2", "median": 3.0, "min": 2.8, "max": 3.1},
            {"config": "ngtcp2 -> dpquic", "median": 2.5, "min": 2.5, "max": 2.5},
            {"config": "dpquic -> dpquic", "median": 6.5, "min": 6.0, "max": 7.0},
        ],
    },
    "cycles": {
        "parts": [
            {"config": "DPDK send", "part": "AEAD seal", "cycles": 410},
            {"config": "DPDK send", "part": "frame building", "cycles": 120},
            {"config": "DPDK send", "part": "mbuf + TX", "cycles": 90},
            {"config": "raw AEAD", "part": "AEAD seal", "cycles": 380},
        ],
    },
    "handshakes": {
        "crypto_limit_per_sec": 10000,
        "runs": [{"config": "dpquic, 1 core", "median": 8500, "min": 8300, "max": 8700}],
    },
    "bar_charts": [{
        "name": "gso", "title": "GSO on against off", "unit": "MiB/s", "baseline": "GSO off",
        "runs": [{"config": "GSO off", "median": 300, "min": 290, "max": 310},
                 {"config": "GSO on", "median": 525, "min": 500, "max": 530}],
    }],
}


def svg_texts(path):
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg", root.tag
    return [" ".join(e.itertext()).strip() for e in root.iter(SVG + "text")]


class ChartsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.results = os.path.join(self.dir, "results.json")
        self.out = os.path.join(self.dir, "docs", "bench")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_charts(self, results, *extra):
        with open(self.results, "w") as f:
            json.dump(results, f)
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = charts.main(["--out", self.out, self.results] + list(extra))
        return status, stdout.getvalue(), stderr.getvalue()

    def test_writes_every_chart_as_valid_svg(self):
        self.assertIsNotNone(shutil.which("gnuplot"), "gnuplot missing (Debian gnuplot-nox)")
        status, stdout, stderr = self.run_charts(SAMPLE)
        self.assertEqual(status, 0, stderr)
        names = ["goodput.svg", "cycles.svg", "handshakes.svg", "gso.svg"]
        self.assertEqual(stdout.split(), [os.path.join(self.out, n) for n in names])
        self.assertEqual(sorted(os.listdir(self.out)), sorted(names))

        goodput = svg_texts(os.path.join(self.out, "goodput.svg"))
        for text in ["ngtcp2 -> ngtcp2", "dpquic -> dpquic", "1.00x", "1.50x", "1.25x", "3.25x",
                     "Gbps", SAMPLE["machine"],
                     "Single-connection goodput, MTU 1500 (ratios against ngtcp2 -> ngtcp2)"]:
            self.assertIn(text, goodput)

        cycles = svg_texts(os.path.join(self.out, "cycles.svg"))
        for text in ["DPDK send", "raw AEAD", "AEAD seal", "frame building", "mbuf + TX",
                     "620", "380", "cycles per packet"]:
            self.assertIn(text, cycles)

        handshakes = svg_texts(os.path.join(self.out, "handshakes.svg"))
        for text in ["dpquic, 1 core", "0.85x", "crypto limit 10000/s", "80% of the limit",
                     "handshakes/s"]:
            self.assertIn(text, handshakes)

        gso = svg_texts(os.path.join(self.out, "gso.svg"))
        for text in ["GSO on against off", "GSO off", "GSO on", "1.00x", "1.75x", "MiB/s"]:
            self.assertIn(text, gso)

    def test_only_present_sections_and_escaping(self):
        results = {"bar_charts": [{"name": "odd", "title": "a & b < c", "runs": [
            {"config": 'R&D "quoted" <x>', "median": 1}]}]}
        status, stdout, stderr = self.run_charts(results)
        self.assertEqual(status, 0, stderr)
        self.assertEqual(os.listdir(self.out), ["odd.svg"])
        texts = svg_texts(os.path.join(self.out, "odd.svg"))
        self.assertIn("a & b < c", texts)
        self.assertIn("R&D 'quoted' <x>", texts)

    def test_print_scripts_runs_nothing(self):
        status, stdout, _ = self.run_charts(SAMPLE, "--print-scripts")
        self.assertEqual(status, 0)
        self.assertIn("set terminal svg", stdout)
        self.assertIn("set style histogram rowstacked", stdout)
        self.assertFalse(os.path.exists(self.out))

    def assert_schema_error(self, results, message):
        status, stdout, stderr = self.run_charts(results)
        self.assertEqual(status, 2)
        self.assertEqual(stdout, "")
        self.assertIn(message, stderr)
        self.assertEqual(stderr.count("\n"), 1, stderr)
        self.assertFalse(os.path.exists(self.out))

    def test_schema_errors(self):
        bad = copy.deepcopy(SAMPLE)
        bad["goodput"]["runs"][1]["min"] = 3.5
        self.assert_schema_error(bad, "goodput.runs[1]: want min <= median <= max")
        bad = copy.deepcopy(SAMPLE)
        bad["goodput"]["baseline"] = "nobody"
        self.assert_schema_error(bad, "goodput.baseline: 'nobody' is not one of the configs")
        bad = copy.deepcopy(SAMPLE)
        bad["handshakes"]["crypto_limit_per_sec"] = "fast"
        self.assert_schema_error(bad, "handshakes.crypto_limit_per_sec: want a finite number")
        bad = copy.deepcopy(SAMPLE)
        bad["cycles"]["parts"].append({"config": "raw AEAD", "part": "AEAD seal", "cycles": 1})
        self.assert_schema_error(bad, "cycles.parts[4]: part 'AEAD seal' appears twice")
        bad = copy.deepcopy(SAMPLE)
        bad["bar_charts"][0]["name"] = "../escape"
        self.assert_schema_error(bad, "bar_charts[0].name: '../escape' is not a free file name")
        bad = copy.deepcopy(SAMPLE)
        bad["bar_charts"][0]["name"] = "goodput"
        self.assert_schema_error(bad, "bar_charts[0].name: 'goodput' is not a free file name")
        self.assert_schema_error({"goodput": {"runs": []}}, "goodput.runs: want a non-empty list")
        self.assert_schema_error([1], "results: want an object")

    def test_unreadable_results(self):
        with contextlib.redirect_stderr(io.StringIO()) as stderr:
            status = charts.main(["--out", self.out, os.path.join(self.dir, "missing.json")])
        self.assertEqual(status, 2)
        self.assertIn("missing.json: [Errno 2]", stderr.getvalue())
        with open(self.results, "w") as f:
            f.write("{not json")
        with contextlib.redirect_stderr(io.StringIO()) as stderr:
            self.assertEqual(charts.main(["--out", self.out, self.results]), 2)
        self.assertIn("results.json", stderr.getvalue())

    def test_missing_gnuplot(self):
        status, _, stderr = self.run_charts(SAMPLE, "--gnuplot", "/nonexistent/gnuplot")
        self.assertEqual(status, 1)
        self.assertIn("gnuplot-nox", stderr)


if __name__ == "__main__":
    unittest.main()
