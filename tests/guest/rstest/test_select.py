"""rstest.select: names, selections, the units they boot, --list and
--repeat (no VM: the suite's run is a function here)."""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
# pylint: disable=wrong-import-position
from rstest import select, suite  # noqa: E402

CAT = {
    ("aa", "rc"): ["aa/rc/connect/vm1", "aa/rc/send/vm2", "aa/dmesg-clean/vm1",
                   "aa/launch-vms"],
    ("aa", "mw"): ["aa/mw/bind/vm1", "aa/dmesg-clean/vm1", "aa/launch-vms"],
    ("ar", "rc"): ["ar/rc/connect/vm1", "ar/launch-vms"],
    ("lim",): ["lim/cap/vm1"],
}


class SelectionTest(unittest.TestCase):
    def test_match(self) -> None:
        sel = select.Selection(["rc"])
        self.assertTrue(sel.wants("aa/rc/connect/vm1"))
        self.assertFalse(sel.wants("aa/mw/bind/vm1"))
        self.assertFalse(sel.wants("aa/rc-x/vm1"))
        self.assertTrue(select.Selection([]).wants("anything"))
        self.assertTrue(select.Selection(["aa/rc/connect"]).wants(
            "aa/rc/connect/vm1"))
        self.assertFalse(select.Selection(["aa/rc/connect"]).wants(
            "ar/rc/connect/vm1"))
        self.assertTrue(select.Selection(["*/rc/*/vm1"]).wants(
            "ar/rc/connect/vm1"))
        self.assertTrue(select.Selection(["verbs/aa/rc"], "verbs").wants(
            "aa/rc/send/vm2"))
        self.assertEqual(select.Selection(["rc", "xx"]).unmatched(
            select.names(CAT)), ["xx"])

    def test_units(self) -> None:
        self.assertEqual(select.Selection(["rc"]).units(CAT),
                         [("aa", "rc"), ("ar", "rc")])
        self.assertEqual(select.Selection(["aa/mw"]).units(CAT),
                         [("aa", "mw")])
        # a name of several units: the first, unless one is chosen anyway
        self.assertEqual(select.Selection(["aa/launch-vms"]).units(CAT),
                         [("aa", "rc")])
        self.assertEqual(select.Selection(["aa/mw", "aa/dmesg-clean"]).units(
            CAT), [("aa", "mw")])
        self.assertEqual(select.Selection([]).units(CAT), list(CAT))
        self.assertEqual(select.names(CAT, [("lim",)]), ["lim/cap/vm1"])
        self.assertEqual(len(select.names(CAT)), 8)

    def test_rates(self) -> None:
        r = select.Rates()
        for ok in (True, False, True):
            r.add("a", ok)
            r.add("b", True)
        self.assertEqual(r.lines("t", 3), [
            "t/a 2/3", "t/b 3/3", "2 checks, 1 below 3/3: t/a 2/3"])


class MainTest(unittest.TestCase):
    def setUp(self) -> None:
        # pylint: disable=consider-using-with
        self.tmp = tempfile.TemporaryDirectory()
        self.old, suite.BUILD = suite.BUILD, self.tmp.name
        self.ran = []
        self.round = 0

    def tearDown(self) -> None:
        suite.BUILD = self.old
        self.tmp.cleanup()

    def fake(self, s, units) -> None:
        """Reports what each unit reports, one name missing (aa/rc's
        send/vm2) and mw's bind failing in the second round."""
        self.ran.append(list(units))
        self.round += 1
        for u in units:
            for n in CAT[u]:
                if n == "aa/rc/send/vm2":
                    continue
                s.report(not (n == "aa/mw/bind/vm1" and self.round == 2), n)
        s.report(True, "not/in/the/catalog")

    def main(self, argv):
        out = io.StringIO()
        err = io.StringIO()
        with redirect_stderr(err):
            rc = select.main("t", CAT, self.fake, argv, out=out)
        return rc, out.getvalue().splitlines(), err.getvalue()

    def test_list(self) -> None:
        rc, lines, _ = self.main(["--list", "mw"])
        self.assertEqual((rc, lines), (0, ["aa/mw/bind/vm1"]))
        rc, lines, _ = self.main(["--list"])
        self.assertEqual(lines, select.names(CAT))
        self.assertEqual(self.ran, [])
        rc, _, err = self.main(["nosuch"])
        self.assertEqual(rc, 2)
        self.assertIn("no check named nosuch", err)
        self.assertEqual(self.main(["--repeat", "x"])[0], 2)

    def test_unit_name(self) -> None:
        _, lines, _ = self.main(["--list", "lim", "aa/mw"])
        self.assertEqual(lines, ["aa/dmesg-clean/vm1", "aa/launch-vms",
                                 "aa/mw/bind/vm1", "lim/cap/vm1"])

    def test_unit_name_exact(self) -> None:
        """A unit's names select only its checks: "launch-vms" of one
        unit (as migration.py's short part reports it) is not another
        unit's ".../launch-vms", whose unit it would boot too."""
        cat = {"short": ["migration-1", "launch-vms"],
               "held": ["held-migration-1", "held/launch-vms"]}
        out = io.StringIO()
        ran = []
        select.main("t", cat, lambda s, u: ran.append(list(u)),
                    ["--list", "short"], out=out)
        self.assertEqual(out.getvalue().splitlines(),
                         ["migration-1", "launch-vms"])
        out = io.StringIO()
        select.main("t", cat, lambda s, u: ran.append(list(u)),
                    ["--list", "launch-vms"], out=out)
        self.assertEqual(out.getvalue().splitlines(),
                         ["launch-vms", "held/launch-vms"])

    def test_selected(self) -> None:
        rc, lines, _ = self.main(["aa/rc/connect", "aa/rc/send"])
        self.assertEqual(self.ran, [[("aa", "rc")]])
        self.assertEqual(rc, 1)
        self.assertEqual(lines[:3], ["ok - aa/rc/connect/vm1",
                                     "not ok - aa/rc/send/vm2: not reported "
                                     "(the run did not get to it: see the "
                                     "logs in %s)" % lines[-1].split()[-1]
                                     .rstrip(")"),
                                     "1..2"])

    def test_all_and_repeat(self) -> None:
        rc, lines, _ = self.main([])
        self.assertEqual(self.ran, [list(CAT)])
        self.assertIn("ok - not/in/the/catalog", lines)
        self.assertIn("not ok - aa/rc/send/vm2", [ln[:23] for ln in lines])
        self.assertEqual(rc, 1)
        self.ran, self.round = [], 0
        rc, lines, _ = self.main(["--repeat", "3", "aa/mw/bind"])
        self.assertEqual(self.ran, [[("aa", "mw")]] * 3)
        self.assertEqual([ln for ln in lines if not ln.startswith("#")],
                         ["ok - aa/mw/bind/vm1", "not ok - aa/mw/bind/vm1",
                          "ok - aa/mw/bind/vm1", "1..3"])
        self.assertIn("# repeat: t/aa/mw/bind/vm1 2/3", lines)
        self.assertIn("# repeat: 1 checks, 1 below 3/3: t/aa/mw/bind/vm1 2/3",
                      lines)
        self.assertTrue(lines[0].startswith(
            "# repeat: round 1 of 3 (logs in "))
        self.assertTrue(lines[0].endswith("/r1)"))


if __name__ == "__main__":
    unittest.main()
