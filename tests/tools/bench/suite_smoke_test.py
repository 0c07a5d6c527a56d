"""Smoke test of the whole side-by-side suite: `all --quick` into a temporary
directory, then results.json, the generated BENCHMARKS.md block and the SVG
charts must exist and parse, every section must have run or say why it was
skipped, and every chart the Markdown links must be there.

Args: the path of //tools/bench:all."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree

ALL = None
TIMEOUT = 600
SECTION_KEYS = ["goodput", "handshakes", "allocations", "memory", "streams", "gso", "micro",
                "dpdk", "flood"]


class SuiteSmokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR"))
        cls.out = os.path.join(cls.tmp.name, "out")
        env = dict(os.environ)
        env.pop("BUILD_WORKSPACE_DIRECTORY", None)
        cls.result = subprocess.run([ALL, "--quick", "--out=" + cls.out], env=env,
                                    capture_output=True, text=True, timeout=TIMEOUT)
        sys.stderr.write(cls.result.stderr[-6000:])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_exit_status(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr[-2000:])

    def results(self):
        with open(os.path.join(self.out, "docs", "bench", "results.json")) as f:
            return json.load(f)

    def test_every_section_ran_or_says_why_not(self):
        results = self.results()
        self.assertTrue(results["quick"])
        self.assertEqual(results["runs"], 1)
        self.assertEqual([s["key"] for s in results["sections"]], SECTION_KEYS)
        for section in results["sections"]:
            with self.subTest(section=section["key"]):
                self.assertIn(section["status"], ("ok", "skipped"), section["reason"])
                if section["status"] == "skipped":
                    self.assertTrue(section["reason"])
                    continue
                self.assertTrue(section["commands"])
                self.assertTrue(section["tables"] and section["tables"][0]["rows"])
                for part in section["skipped"]:
                    self.assertTrue(part["why"])

    def test_markdown_block_and_chart_links(self):
        with open(os.path.join(self.out, "BENCHMARKS.md")) as f:
            text = f.read()
        self.assertEqual(text.count("<!-- suite:begin -->"), 1)
        self.assertEqual(text.count("<!-- suite:end -->"), 1)
        self.assertLess(text.index("<!-- suite:begin -->"), text.index("<!-- suite:end -->"))
        for number in range(1, 10):
            self.assertRegex(text, r"\n### %d\. " % number)
        links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
        results = self.results()
        self.assertEqual(sorted(os.path.basename(l) for l in links),
                         sorted(results["chart_files"]))
        for link in links:
            self.assertTrue(os.path.isfile(os.path.join(self.out, link)), link)

    def test_charts_are_svg(self):
        results = self.results()
        self.assertEqual(results["chart_problems"], [])
        # The goodput section always runs ours -> ours, so there is a chart.
        self.assertIn("gso.svg", results["chart_files"])
        for name in results["chart_files"]:
            root = ElementTree.parse(os.path.join(self.out, "docs", "bench", name)).getroot()
            self.assertTrue(root.tag.endswith("svg"), name)


if __name__ == "__main__":
    ALL = os.path.abspath(sys.argv.pop(1))
    unittest.main()
