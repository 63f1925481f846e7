#!/usr/bin/env python3
"""The benchmark's own command at its shortest (bench/run-bench.sh
--smoke), as TAP: it keeps working (both pairs, jumbo frames, every
perftest program, rping -V verified) without being a timed test.  One test
per benchmark that produced numbers on the adapter pair and the soft-RoCE
pair (bench/bench.py's smoke_results, the parsing bench/bench.py
smoke-check prints), and one that the stream backend's ceiling
(bench/stream-ceiling.c) was measured; no speed is asserted.

Usage: tests/guest/bench_smoke.py
Environment: RS_BUILD.
Logs: $RS_BUILD/test-logs/bench-smoke.XXXXXX (bench-smoke.last): the
run-bench.sh output bench.log and its results (results.csv, ...).
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest.suite import BUILD, TOP, Suite  # noqa: E402

sys.path.insert(0, os.path.join(TOP, "bench"))
import bench  # noqa: E402  pylint: disable=wrong-import-position


def tail(path: str, n: int) -> str:
    try:
        with open(path, errors="replace") as f:
            return " ".join(f.read().splitlines()[-n:]) + " "
    except OSError:
        return ""


def main() -> int:
    s = Suite("bench-smoke")
    log = os.path.join(s.dir, "bench.log")
    with open(log, "w") as f:
        brc = subprocess.call(
            [os.path.join(TOP, "bench", "run-bench.sh"), "--smoke",
             "--no-build", "--out", s.dir],
            stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
            env=dict(os.environ, RS_BUILD=BUILD))
    if brc < 0:
        brc = 128 - brc     # (killed by a signal: bash's status)
    csv = os.path.join(s.dir, "results.csv")
    if os.path.isfile(csv) and os.path.getsize(csv) > 0:
        for ok, name, detail in bench.smoke_results(csv):
            s.tap("ok" if ok else "fail", "bench-smoke/" + name, detail)
    # the stream backend's ceiling, measured in the same run
    env = bench.read_env(os.path.join(s.dir, "machine.env"))
    ceil = bench.ceilings(env)
    s.tap("ok" if all(c[3] and c[3] > 0 for c in ceil) else "fail",
          "bench-smoke/backend-ceiling",
          "; ".join("%s: %s MB/s" % (t, v) for _, _, t, v in ceil))
    if brc != 0 and s.failed == 0:
        s.tap("fail", "bench-smoke: bench/run-bench.sh exit status %d" % brc,
              tail(log, 5))
    return s.end()


if __name__ == "__main__":
    sys.exit(main())
