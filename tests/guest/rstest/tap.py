"""unittest results as TAP: one "ok"/"not ok" line per test method, a
failure's traceback as "#" lines, then the plan (tests/runners/
pyunit-tap.py, the Debian guest's named tests)."""

import sys
import unittest


class TapResult(unittest.TestResult):
    """Prints each test's line as it ends."""

    def __init__(self, out=None):
        super().__init__()
        self.n = 0
        self.out = out or sys.stdout

    def _line(self, test, ok, directive="", err=None):
        self.n += 1
        print("%s %d - %s%s" % ("ok" if ok else "not ok", self.n, test.id(),
                                directive), file=self.out, flush=True)
        if err is not None:
            for ln in self._exc_info_to_string(err, test).splitlines():
                print("#   " + ln, file=self.out, flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(test, True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(test, False, err=err)

    def addError(self, test, err):
        super().addError(test, err)
        # (an error in setUpClass comes as a _ErrorHolder, once)
        self._line(test, False, err=err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(test, True, " # SKIP %s" % reason)

    def plan(self) -> int:
        """The plan line; the exit status (1 on a failure or no test)."""
        print("1..%d" % self.n, file=self.out, flush=True)
        return 0 if self.wasSuccessful() and self.n else 1
