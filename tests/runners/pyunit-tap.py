#!/usr/bin/python3
"""Run Python unit tests (unittest discovery) and report each as TAP.

Usage: tests/runners/pyunit-tap.py DIRECTORY [PATTERN]

Discovers PATTERN (default test_*.py) below DIRECTORY, which is also put
on sys.path, and prints one "ok"/"not ok" line per test method, the
failure's traceback as "#" lines, and the plan.  Exits 1 on a failure.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "guest"))
# pylint: disable=wrong-import-position
from rstest.tap import TapResult  # noqa: E402


def main():
    top = sys.argv[1]
    sys.path.insert(0, top)
    suite = unittest.defaultTestLoader.discover(top, pattern=sys.argv[2] if len(sys.argv) > 2 else "test_*.py",
                                                top_level_dir=top)
    result = TapResult()
    suite.run(result)
    return result.plan()


if __name__ == "__main__":
    sys.exit(main())
