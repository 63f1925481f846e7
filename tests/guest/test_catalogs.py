"""The table-driven VM suites' catalogs (rstest/select.py): every test
has one name, a path without spaces or ": " (the TAP line's detail
separator), unique in its unit; each suite has at least as many tests
as it reported before the catalogs (their counts in the test command)."""

import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import select  # noqa: E402

ENV = {k: v for k, v in os.environ.items()
       if not k.startswith(("RS_MIGRATION", "RS_MATRIX", "RS_HOST_"))}


def catalogs():
    """{suite: its catalog} with the default environment."""
    # pylint: disable=import-outside-toplevel
    import bench_smoke
    import guest_driver
    import guest_stack
    import incast
    import introspect
    import migration
    import multipath
    import nvmf
    import rdma_matrix
    import resilience
    import verbs
    return {
        "verbs": verbs.catalog(),
        "guest-stack": guest_stack.catalog(),
        "guest-driver": guest_driver.catalog(),
        "bench-smoke": bench_smoke.catalog(),
        "rdma-matrix": rdma_matrix.catalog(),
        "resilience": {("boot",): resilience.names()},
        "introspect": {("boot",): introspect.names()},
        "nvmf": {("boot",): nvmf.names(False)},
        "nvmf --migrate": {("boot",): nvmf.names(True)},
        "multipath": {("boot",): multipath.names()},
        "incast": {(m,): incast.names(m) for m, _ in incast.MODES},
        "migration": {u: p[1] for u, p in migration.parts().items()},
    }


# What each suite reported in a full run before its catalog.
COUNTS = {"verbs": 572, "guest-stack": 32, "guest-driver": 55,
          "bench-smoke": 14,
          "rdma-matrix": 71, "resilience": 19,
          "introspect": 20, "nvmf": 10, "nvmf --migrate": 15,
          "multipath": 62, "incast": 28, "migration": 102}


class CatalogTest(unittest.TestCase):
    def test_names(self) -> None:
        with mock.patch.dict(os.environ, ENV, clear=True):
            cats = catalogs()
        for suite, cat in cats.items():
            every = select.names(cat)
            self.assertEqual(len(every), COUNTS[suite], suite)
            for unit, names in cat.items():
                self.assertEqual(len(names), len(set(names)), (suite, unit))
            for n in every:
                self.assertNotIn(" ", n, suite)
                self.assertNotIn(": ", n, suite)
                self.assertTrue(select.Selection([n]).wants(n))

    def test_verbs_units(self) -> None:
        """A feature of a pairing boots that pairing with that feature
        alone; a check on both VMs selects both."""
        import verbs  # pylint: disable=import-outside-toplevel
        cat = verbs.catalog()
        sel = select.Selection(["adapter-rxe/odp"])
        self.assertEqual(sel.units(cat), [("adapter-rxe", "odp")])
        self.assertIn("adapter-rxe/odp/capture", cat[("adapter-rxe", "odp")])
        sel = select.Selection(["adapter-adapter/rc/rc-connect"])
        self.assertEqual([n for n in select.names(cat) if sel.wants(n)],
                         ["adapter-adapter/rc/rc-connect/vm1",
                          "adapter-adapter/rc/rc-connect/vm2"])
        self.assertEqual(select.Selection(["dc"]).units(cat),
                         [("three", "dc")])


class BenchSmokeTest(unittest.TestCase):
    """bench-smoke's names are the benchmarks run-bench.sh --smoke runs;
    a selection runs --only those (run-bench.sh faked: it writes a
    results.csv and machine.env)."""

    def setUp(self) -> None:
        # pylint: disable=import-outside-toplevel,consider-using-with
        import tempfile
        from rstest import suite
        self.tmp = tempfile.TemporaryDirectory()
        self.suite = suite
        self.old, suite.BUILD = suite.BUILD, self.tmp.name
        self.argv: list = []

    def tearDown(self) -> None:
        self.suite.BUILD = self.old
        self.tmp.cleanup()

    def test_benchmarks(self) -> None:
        """The list is run-bench.sh's default (all_perf without
        send_lat_ev, verify, transfer_1g)."""
        import re  # pylint: disable=import-outside-toplevel
        import bench_smoke  # pylint: disable=import-outside-toplevel
        with open(os.path.join(os.path.dirname(os.path.dirname(
                os.path.dirname(os.path.abspath(__file__)))), "bench",
                               "run-bench.sh")) as f:
            text = f.read()
        perf = re.search(r'^all_perf="([^"]*)"', text, re.M).group(1)
        self.assertEqual(sorted(bench_smoke.BENCHMARKS),
                         sorted([b for b in perf.split()
                                 if b != "send_lat_ev"] +
                                ["verify", "transfer_1g"]))
        self.assertIn('sel="${all_perf/ send_lat_ev/} verify transfer_1g"',
                      text)

    def fake_call(self, argv, **_kw) -> int:
        """run-bench.sh: a row per metric of each benchmark it runs."""
        import bench_smoke  # pylint: disable=import-outside-toplevel
        self.argv.append(argv)
        out = argv[argv.index("--out") + 1]
        only = (argv[argv.index("--only") + 1].split(",")
                if "--only" in argv else bench_smoke.BENCHMARKS)
        if any("_lat" in b or "_bw" in b or b == "msg_rate" for b in only):
            only = only + ["verify"]
        with open(os.path.join(out, "results.csv"), "w") as f:
            f.write("benchmark,label,metric,unit,better,adapter_median,"
                    "adapter_min,adapter_max,adapter_status,adapter_rep1,"
                    "soft_roce_median,soft_roce_min,soft_roce_max,"
                    "soft_roce_status,soft_roce_rep1,ratio\n")
            for b in bench_smoke.BENCHMARKS:
                if b in only:
                    sr = ",,,n/a," if "_odp" in b else "2,2,2,ok,2"
                    f.write("%s,L,m,MB/s,higher,1234.5,1,1,ok,1,%s,\n" %
                            (b, sr))
        with open(os.path.join(out, "machine.env"), "w") as f:
            for fr, bt, _ in [("4154", "1", 0), ("4154", "16", 0),
                              ("65536", "1", 0)]:
                f.write("ceiling_%s_b%s_mbs_before=900.5\n" % (fr, bt))
        return 0

    def main(self, args) -> "tuple[int, list]":
        import io  # pylint: disable=import-outside-toplevel
        import bench_smoke  # pylint: disable=import-outside-toplevel
        out = io.StringIO()
        with mock.patch.object(bench_smoke.subprocess, "call",
                               self.fake_call):
            rc = select.main("bench-smoke", bench_smoke.catalog(),
                             bench_smoke.run, args, out=out)
        return rc, [ln for ln in out.getvalue().splitlines()
                    if ln.startswith(("ok", "not ok"))]

    def test_run(self) -> None:
        rc, tap = self.main([])
        self.assertEqual(rc, 0)
        self.assertEqual(len(tap), 14)
        self.assertNotIn("--only", self.argv[0])
        self.assertEqual(tap[0], "ok - write_bw_64k: numbers on both pairs "
                         "(m MB/s: adapter 1234, soft-RoCE 2.00)")
        self.assertIn("soft-RoCE n/a", tap[1])
        self.assertTrue(tap[13].startswith("ok - backend-ceiling: "))
        rc, tap = self.main(["write_lat", "bench-smoke/transfer_1g"])
        self.assertEqual(rc, 0)
        self.assertEqual(self.argv[1][-2:], ["--only",
                                             "write_lat,transfer_1g"])
        self.assertEqual([t.split(":")[0] for t in tap],
                         ["ok - write_lat", "ok - transfer_1g"])
        rc, tap = self.main(["backend-ceiling"])
        self.assertEqual(self.argv[2][-2:], ["--only", "verify"])
        self.assertEqual(len(tap), 1)


if __name__ == "__main__":
    unittest.main()
