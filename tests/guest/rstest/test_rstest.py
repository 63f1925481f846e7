"""Unit tests of the harness's parsers and guest script (no VM):

  python3 -m unittest discover -s tests/guest -p 'test_*.py'

(with RS_BUILD holding the unpacked QEMU tree, for qemu.machine)."""

import io
import os
import subprocess
import tempfile
import time
import unittest

from rstest import checks, console, distro, suite
from rstest.tap import TapResult
from rstest.vm import McastSegment, UserSegment, guest_script

# A guest that ran a command, was reset in the middle of its next one,
# booted again and ran a third (as test-resilience's VM 2 does).
CONSOLE = """\
rs-init: Linux 6.12, uptime 1.0 s\r
rs-init: end of PCI devices\r
rs-init: eth0 (rdma_session) 52:54:00:77:00:01 10.77.0.1/24 \r
rs-init: RDMA devices: rsess0 \r
rs-init: ready\r
rs-init: running the launcher's command\r
first\r
rs-init: command exit status 0\r
rs-init: running the launcher's command\r
second, reset
[    0.000000] Linux version 6.12
rs-init: ready
rs-init: running the launcher's command
third
rs-init: command exit status 3
"""


class ConsoleTest(unittest.TestCase):
    def setUp(self) -> None:
        fd, self.path = tempfile.mkstemp()
        os.write(fd, CONSOLE.encode())
        os.close(fd)
        self.text = console.read(self.path)

    def tearDown(self) -> None:
        os.unlink(self.path)

    def test_ready(self) -> None:
        self.assertEqual(console.readies(self.text), 2)
        self.assertEqual(console.ready_summary(self.text),
                         "end of PCI devices;eth0 (rdma_session) "
                         "52:54:00:77:00:01 10.77.0.1/24 ;"
                         "RDMA devices: rsess0 ;")

    def test_status(self) -> None:
        self.assertEqual(console.exit_status(self.text), "3")
        self.assertIsNone(console.exit_status("rs-init: ready\n"))

    def test_output(self) -> None:
        # as the bash launcher's sed did: every range from a "running"
        # line to a status line, the first "running" line and the status
        # lines left out
        self.assertEqual(console.command_output(self.text), [
            "first", "rs-init: running the launcher's command",
            "second, reset", "[    0.000000] Linux version 6.12",
            "rs-init: ready", "rs-init: running the launcher's command",
            "third"])
        self.assertEqual(console.command_output(
            "rs-init: running the launcher's command\nstill going\n"),
            ["still going"])

    def test_prompt(self) -> None:
        """The Debian guest's root shell prompt in front of the lines (a
        migration run lost a VM's whole output to it): left out."""
        fd, path = tempfile.mkstemp()
        os.write(fd, b"rs-init: ready\r\nLast login: Sun Nov 29 on ttyS0\r\n"
                 b"\x1b[?2004hroot@vm2:~# rs-init: running the launcher's "
                 b"command\r\nCHECK a ok\r\n\x1b[?2004hroot@vm2:~# CHECK b ok "
                 b"root@x:~# \r\nrs-init: command exit status 0\r\n")
        os.close(fd)
        try:
            text = console.read(path)
        finally:
            os.unlink(path)
        self.assertEqual(console.command_output(text),
                         ["CHECK a ok", "CHECK b ok root@x:~# "])
        self.assertEqual(console.exit_status(text), "0")


class ChecksTest(unittest.TestCase):
    OUT = ("[vm1] CHECK a ok fine\n[vm2] CHECK b fail why not\n"
           "[vm1] CHECK a fail later\n[vm1] CHECK dmesg-clean ok\n"
           "[vm1] CHECKS x ok\n")

    def test_parse(self) -> None:
        found = checks.parse(io.StringIO(self.OUT))
        self.assertTrue(found[(1, "a")].ok)
        self.assertEqual(found[(1, "a")].detail, "fine")
        self.assertFalse(found[(2, "b")].ok)
        self.assertEqual(found[(2, "b")].detail, "why not")
        self.assertTrue(found[(1, "dmesg-clean")].ok)
        self.assertNotIn((1, "x"), found)

    def test_tally(self) -> None:
        out = io.StringIO()
        t = checks.Tally(out)
        t.expect(checks.parse(io.StringIO(self.OUT)),
                 checks.parse_wanted(["1:a", "2:b", "2:c"]))
        self.assertEqual((t.passed, t.failed), (1, 2))
        self.assertEqual(out.getvalue().splitlines(), [
            "ok - a/vm1", "not ok - b/vm2: [vm2] CHECK b fail why not",
            "not ok - c/vm2: no result"])


class GuestScriptTest(unittest.TestCase):
    def test_environment(self) -> None:
        s = guest_script(2, 3, McastSegment("230.1.2.3:4000"), "true",
                         soft_roce=True)
        self.assertTrue(s.startswith(
            "export RS_VM_INDEX=2 RS_VM_COUNT=3 RS_IP=10.77.0.2 "
            "RS_PEERS='10.77.0.1 10.77.0.3' RS_PEER=10.77.0.3\n"))
        self.assertIn("rdma link add rxe0", s)
        self.assertTrue(s.endswith("\ntrue\n"))
        u = guest_script(1, 1, UserSegment(), "true", soft_roce=False)
        self.assertTrue(u.startswith(
            "export RS_VM_INDEX=1 RS_VM_COUNT=1 RS_IP= RS_PEERS='' "
            "RS_PEER=\n"))

    def test_shell_syntax(self) -> None:
        s = guest_script(1, 2, McastSegment(), "rs_barrier 1 5", False)
        r = subprocess.run(["sh", "-n"], input=s, text=True, check=False)
        self.assertEqual(r.returncode, 0)


class SuiteTest(unittest.TestCase):
    def setUp(self) -> None:
        # pylint: disable=consider-using-with
        self.tmp = tempfile.TemporaryDirectory()
        self.old, suite.BUILD = suite.BUILD, self.tmp.name

    def tearDown(self) -> None:
        suite.BUILD = self.old
        self.tmp.cleanup()

    def test_tap(self) -> None:
        out = io.StringIO()
        s = suite.Suite("t", out)
        log = os.path.join(s.dir, "run.log")
        with open(log, "w") as f:
            f.write("[vm1] CHECK a ok\n[vm2] CHECK b fail " + "x" * 700 +
                    "\nlaunch-vms: vm2: exit status 1\n"
                    "launch-vms: vm1: exit status 0\nlaunch-vms: FAIL (..)\n")
        r = suite.Run("run", 1, log)
        s.expect(r, ["1:a", "2:b", (2, "c")])
        s.launcher_check(r, "run")
        s.skip("d", "known")
        s.note("two\nlines")
        self.assertEqual(s.end(), 1)
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "ok - a/vm1")
        self.assertTrue(lines[1].startswith("not ok - b/vm2: [vm2] CHECK b"))
        self.assertEqual(len(lines[1]), suite.MAX_LINE)
        self.assertEqual(lines[2], "not ok - c/vm2: no result (see %s)" % log)
        self.assertEqual(lines[3], "not ok - run/launch-vms: exit status 1: "
                         "launch-vms: vm2: exit status 1 "
                         "launch-vms: FAIL (..)")
        self.assertEqual(lines[4:7], ["ok - d # SKIP known", "# two",
                                      "# lines"])
        self.assertEqual(lines[7], "1..5")
        self.assertTrue(lines[8].startswith("# t: 1 passed, 3 failed, "
                                            "1 not counted ("))

    def test_tap_detail(self) -> None:
        out = io.StringIO()
        s = suite.Suite("t", out)
        s.tap("ok", "a", "3 frames")
        s.tap("ok", "b")
        s.tap("fail", "c", "y" * 700)
        self.assertEqual((s.passed, s.failed), (2, 1))
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[:2], ["ok - a: 3 frames", "ok - b"])
        self.assertEqual(lines[2][:16], "not ok - c: yyyy")
        self.assertEqual(len(lines[2]), suite.MAX_LINE)

    def test_pass_and_logs(self) -> None:
        dirs = []
        for _ in range(5):
            out = io.StringIO()
            s = suite.Suite("t", out)
            dirs.append(s.dir)
            s.report(True, "x")
            self.assertEqual(s.end(), 0)
            time.sleep(0.01)
        self.assertEqual(out.getvalue().splitlines()[:2], ["ok - x", "1..1"])
        logs = os.path.join(self.tmp.name, "test-logs")
        self.assertEqual(sorted(d for d in os.listdir(logs)
                                if d != "t.last"),
                         sorted(os.path.basename(d) for d in dirs[2:]))
        self.assertEqual(os.readlink(os.path.join(logs, "t.last")),
                         os.path.basename(dirs[-1]))
        self.assertEqual(suite.Suite("t", io.StringIO()).end(), 1)  # none ran


class ShortVariantTest(unittest.TestCase):
    """distro.short_variant: the methods a class's SHORT leaves out are
    reported as skipped, neither run nor counted as passed."""

    def test_short(self) -> None:
        ran = []

        class Pair(unittest.TestCase):
            SHORT = ("test_a",)

            def test_a(self) -> None:
                ran.append("a")

            def test_b(self) -> None:
                ran.append("b")

        class Other(unittest.TestCase):
            def test_c(self) -> None:
                ran.append("c")

        load = unittest.defaultTestLoader.loadTestsFromTestCase
        tests, left = distro.short_variant(
            unittest.TestSuite([load(Pair), load(Other)]), "RS_X_ALL")
        self.assertEqual(left, ["Pair: test_b"])
        out = io.StringIO()
        result = TapResult(out)
        tests.run(result)
        self.assertEqual(ran, ["a", "c"])
        self.assertEqual(result.plan(), 0)
        lines = out.getvalue().splitlines()
        self.assertRegex(lines[0], r"^ok 1 - .*Pair\.test_a$")
        self.assertRegex(lines[1], r"^ok 2 - .*Pair\.test_b # SKIP short "
                         r"variant \(RS_X_ALL=1 runs it\)$")
        self.assertRegex(lines[2], r"^ok 3 - .*Other\.test_c$")
        self.assertEqual(lines[3], "1..3")


if __name__ == "__main__":
    unittest.main()
