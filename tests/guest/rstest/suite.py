"""A VM-level suite as a Python program: its results as TAP on stdout (one
"ok"/"not ok" line per test, "# " notes, the plan at the end), its log
directory, and its launcher runs (rstest.launcher in-process, the output
parsed by rstest.checks):

    s = Suite("nvmf")                 # $RS_BUILD/test-logs/nvmf.XXXXXX
    r = s.launch("pair", ["-n", "2", "--cmd", script])
    s.expect(r, ["1:module-load", "2:module-load"])
    s.launcher_check(r, "pair")
    sys.exit(s.end())                 # 1 if any test failed (or none ran)

A run the suite acts on while it runs (QMP, the control port) goes in the
background, a child process of tests/guest/launch_vms.py:

    with s.start("launch", argv, vms_dir) as bg:
        bg.wait_for(200, lambda: ...)   # False if the launcher ended
        qmp(os.path.join(vms_dir, "vm2", "qmp.sock"), [("system_reset", None)])
        r = bg.wait()
"""

import contextlib
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, Iterable, List, Optional

from . import checks

# (as in qemupath, which the launcher imports only when it runs: without
# a QEMU tree a suite still reports every test as failed)
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BUILD = os.environ.get("RS_BUILD", os.path.join(TOP, "build"))

GUEST_DIR = os.path.join(TOP, "tests", "guest", "in-guest")
LAUNCHER = os.path.join(TOP, "tests", "guest", "launch_vms.py")
# a "not ok" line is cut there (a guest's line can be long)
MAX_LINE = 600
KEEP = 3


def guest_files(*names: str) -> str:
    """tests/guest/in-guest/NAME... concatenated, without the trailing
    newlines (as "$(cat ...)" gave them)."""
    text = ""
    for n in names:
        with open(os.path.join(GUEST_DIR, n)) as f:
            text += f.read()
    return text.rstrip("\n")


def need_program(prog: str, package: str, log: str) -> Optional[str]:
    """prog's path, its Debian package installed first (with the
    project's private apt configuration) if the machine has none; apt's
    output goes to the file log.  None if it could not be installed."""
    if shutil.which(prog) is None:
        with open(log, "w") as f:
            subprocess.call(["bash", "-c", '. "$1/scripts/apt-private.sh" && '
                             'apt_need "" "$2"', "bash", TOP, package],
                            stdin=subprocess.DEVNULL, stdout=f,
                            stderr=subprocess.STDOUT)
    return shutil.which(prog)


def need_tshark(log: str) -> Optional[str]:
    """tshark's path (need_program)."""
    return need_program("tshark", "tshark", log)


def qmp(sock: str, cmds) -> "tuple[bool, list]":
    """QMP commands [(NAME, ARGS or None), ...] on one connection to sock
    (a VM's qmp.sock): (True, their return values) or (False, what went
    wrong: the values so far and the error)."""
    # pylint: disable=import-outside-toplevel
    out: list = []
    try:
        from . import qemupath  # noqa: F401  (QEMU's python/ on sys.path)
        from qemu.qmp import ExecuteError
        from qemu.qmp.legacy import QEMUMonitorProtocol
    except ImportError as e:
        return False, ["no QEMU Python library: %s" % e]
    mon = QEMUMonitorProtocol(sock)
    mon.settimeout(10)
    try:
        mon.connect()
    except Exception as e:  # pylint: disable=broad-except
        return False, ["cannot connect to %s: %s" % (sock, e)]
    try:
        for name, args in cmds:
            try:
                out.append(mon.cmd(name, **(args or {})))
            except ExecuteError as e:
                return False, out + ["%s: %s" % (name, e)]
            except Exception as e:  # pylint: disable=broad-except
                return False, out + ["%s: %s" % (name, e)]
    finally:
        try:
            mon.close()
        except Exception:  # pylint: disable=broad-except
            pass            # (the QEMU went away meanwhile)
    return True, out


class Run:
    """One launcher run: its exit status and output (stdout and stderr, as
    "launch-vms.sh > OUT 2>&1" had them, in the file path)."""

    def __init__(self, name: str, rc: int, path: str):
        self.name = name
        self.rc = rc
        self.path = path
        with open(path, errors="replace") as f:
            self.lines = f.read().splitlines()
        self.found = checks.parse(self.lines)

    def first(self, text: str) -> Optional[str]:
        """The first output line containing text."""
        return next((ln for ln in self.lines if text in ln), None)


class Background:
    """A launcher run in the background (a child process: the launcher's
    signal handlers want the main thread), while the suite acts on its
    VMs (QMP, the control port); wait() gives its Run."""

    def __init__(self, name: str, path: str, argv: List[str],
                 env: Dict[str, str]):
        self.name = name
        self.path = path
        with open(path, "w") as f:
            self.proc = subprocess.Popen(
                [sys.executable, LAUNCHER] + argv, stdin=subprocess.DEVNULL,
                stdout=f, stderr=subprocess.STDOUT, env=env)

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait_for(self, seconds: float, cond: Callable[[], bool]) -> bool:
        """Until cond() holds (True), the launcher ended or seconds
        passed (False)."""
        end = time.monotonic() + seconds
        while not cond():
            if not self.running() or time.monotonic() >= end:
                return False
            time.sleep(0.5)
        return True

    def stop(self) -> None:
        """SIGTERM: the launcher tears its VMs down."""
        if self.running():
            self.proc.terminate()

    def wait(self) -> Run:
        return Run(self.name, self.proc.wait(), self.path)

    def __enter__(self) -> "Background":
        return self

    def __exit__(self, *exc) -> None:
        if self.running():
            self.stop()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Suite(checks.Tally):
    """A suite's TAP, counts and log directory."""

    def __init__(self, name: str, out=sys.stdout, select=None):
        super().__init__(out)
        self.name = name
        self.skipped = 0
        # the checks to report (rstest.select.Selection; None: all), the
        # names reported in this round and each one's results (--repeat)
        self.select = select
        self.seen: set = set()
        self.rates = None
        self.t0 = time.time()
        logs = os.path.join(BUILD, "test-logs")
        os.makedirs(logs, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix=name + ".", dir=logs)
        old = sorted((d for d in glob.glob(os.path.join(logs, name + ".*"))
                      if os.path.isdir(d) and not os.path.islink(d)),
                     key=os.path.getmtime, reverse=True)
        for d in old[KEEP:]:
            shutil.rmtree(d, ignore_errors=True)
        tmp = os.path.join(logs, ".%s.last.%d" % (name, os.getpid()))
        os.symlink(os.path.basename(self.dir), tmp)
        os.replace(tmp, os.path.join(logs, name + ".last"))

    # --- TAP ----------------------------------------------------------------

    def begin_round(self, rates=None) -> None:
        """A new round of the suite's run (rstest.select, --repeat):
        nothing reported yet; results go to rates (select.Rates)."""
        self.seen = set()
        self.rates = rates

    def _take(self, name: str, ok: Optional[bool]) -> bool:
        """Whether test name is to be reported (selected); notes it."""
        if self.select is not None and not self.select.wants(name):
            return False
        self.seen.add(name)
        if self.rates is not None:
            self.rates.add(name, ok)
        return True

    def report(self, ok: bool, name: str, detail: str = "") -> None:
        """One test ("ok - NAME" or "not ok - NAME: DETAIL")."""
        if not self._take(name, bool(ok)):
            return
        if ok:
            self.passed += 1
            line = "ok - %s" % name
        else:
            self.failed += 1
            line = "not ok - %s" % name + (": %s" % detail if detail else "")
        print(line[:MAX_LINE], file=self.out, flush=True)

    def tap(self, res: str, name: str, detail: str = "") -> None:
        """One test with its detail on an ok line too: RES "ok" or anything
        else (failed), the detail after the name either way ("ok - NAME:
        DETAIL"; only a "not ok" line is cut)."""
        if res == "ok":
            if not self._take(name, True):
                return
            self.passed += 1
            print("ok - %s" % name + (": %s" % detail if detail else ""),
                  file=self.out, flush=True)
        else:
            self.report(False, name, detail)

    def skip(self, name: str, reason: str) -> None:
        """A test counted neither as passed nor as failed."""
        if not self._take(name, None):
            return
        self.skipped += 1
        print(("ok - %s # SKIP %s" % (name, reason))[:MAX_LINE],
              file=self.out, flush=True)

    def note(self, text: str) -> None:
        for ln in text.splitlines() or [""]:
            print("# %s" % ln, file=self.out, flush=True)

    def end(self) -> int:
        """The plan and a summary note; the exit status (1 if a test
        failed or none ran)."""
        print("1..%d" % (self.passed + self.failed + self.skipped),
              file=self.out)
        extra = ", %d not counted" % self.skipped if self.skipped else ""
        self.note("%s: %d passed, %d failed%s (%d s, logs in %s)" % (
            self.name, self.passed, self.failed, extra,
            time.time() - self.t0, self.dir))
        self.out.flush()
        return 0 if self.failed == 0 and self.passed + self.failed else 1

    # --- launcher runs ------------------------------------------------------

    def launch(self, name: str, argv: List[str],
               vms_dir: Optional[str] = None) -> Run:
        """scripts/launch-vms.sh ARGV, in-process (rstest.launcher.run),
        its output in <dir>/NAME.log; the VMs' run directory vms_dir
        (default: $RS_VMS_LOGDIR, else a new one under $RS_BUILD/vms)."""
        path = os.path.join(self.dir, name + ".log")
        with open(path, "w") as f, contextlib.redirect_stdout(f), \
                contextlib.redirect_stderr(f):
            try:
                # pylint: disable=import-outside-toplevel
                from . import launcher
            except ImportError as e:
                # (no QEMU source tree, hence no QEMU Python library)
                print("[launch-vms] error: %s" % e)
                rc = 2
            else:
                try:
                    o = launcher.parse(argv)
                except launcher.SetupError as e:
                    print("[launch-vms] error: %s" % e)
                    o = None
                rc = launcher.run(o, vms_dir) if o is not None else 2
        if rc == 130:
            self.note("%s: interrupted (see %s)" % (name, path))
            raise SystemExit(130)
        return Run(name, rc, path)

    def start(self, name: str, argv: List[str], vms_dir: str,
              env: Optional[Dict[str, str]] = None) -> Background:
        """scripts/launch-vms.sh ARGV in the background (tests/guest/
        launch_vms.py), its output in <dir>/NAME.log, the VMs' run
        directory vms_dir; env: more environment variables."""
        e = dict(os.environ)
        e.update(env or {})
        e["RS_BUILD"] = BUILD
        e["RS_VMS_LOGDIR"] = vms_dir
        return Background(name, os.path.join(self.dir, name + ".log"), argv,
                          e)

    def expect(self, found, wanted: Iterable, where: str = "",
               prefix: str = "") -> None:
        """Each wanted check ("VM:NAME" or (VM, NAME)) of a run (or of
        checks.parse()'s result) must have passed; a missing one fails.
        The tests are named PREFIXNAME/vmVM."""
        if isinstance(found, Run):
            where = where or found.path
            found = found.found
        pairs = [checks.parse_wanted([w])[0] if isinstance(w, str) else w
                 for w in wanted]
        super().expect(found, pairs, where, prefix)

    def launcher_check(self, r: Run, name: str = "") -> None:
        """The run's exit status: every VM became ready, ran its command
        with status 0 and powered off (test "NAME/launch-vms")."""
        test = "%s/launch-vms" % name if name else "launch-vms"
        if r.rc == 0:
            self.tap("ok", test, "VMs ran and powered off")
            return
        why = " ".join(
            ln for ln in r.lines
            if ln.startswith(("launch-vms: FAIL", "[launch-vms] error:")) or
            (ln.startswith("launch-vms: vm") and
             ": exit status " in ln and ": exit status 0" not in ln))
        self.report(False, test, "exit status %d: %s" % (r.rc, why))
