#!/usr/bin/python3
"""Run Python unit tests (unittest discovery) and report each as TAP.

Usage: tests/runners/pyunit-tap.py DIRECTORY [PATTERN]

Discovers PATTERN (default test_*.py) below DIRECTORY, which is also put
on sys.path, and prints one "ok"/"not ok" line per test method, the
failure's traceback as "#" lines, and the plan.  Exits 1 on a failure.
"""

import sys
import unittest


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0

    def _line(self, test, ok, directive="", err=None):
        self.n += 1
        print("%s %d - %s%s" % ("ok" if ok else "not ok", self.n, test.id(), directive))
        if err is not None:
            for l in self._exc_info_to_string(err, test).splitlines():
                print("#   " + l)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(test, True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(test, False, err=err)

    def addError(self, test, err):
        super().addError(test, err)
        self._line(test, False, err=err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(test, True, " # SKIP %s" % reason)


def main():
    top = sys.argv[1]
    sys.path.insert(0, top)
    suite = unittest.defaultTestLoader.discover(top, pattern=sys.argv[2] if len(sys.argv) > 2 else "test_*.py",
                                                top_level_dir=top)
    result = TapResult()
    suite.run(result)
    print("1..%d" % result.n)
    return 0 if result.wasSuccessful() and result.n else 1


if __name__ == "__main__":
    sys.exit(main())
