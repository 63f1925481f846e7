#!/usr/bin/env python3
"""The benchmark's own command at its shortest (bench/run-bench.sh
--smoke), as TAP: it keeps working (both pairs, jumbo frames, every
perftest program, rping -V verified) without being a timed test.  One test
per benchmark --smoke runs, named as the benchmark (bench/bench.py's
ORDER, results.csv's rows: write_bw_64k, ..., verify, transfer_1g), that
produced numbers on the adapter pair and the soft-RoCE pair (bench/bench.py's
smoke_results; the ODP rows: on the adapter, soft-RoCE "n/a (no ODP)"),
and one, backend-ceiling, that the stream backend's ceiling
(bench/stream-ceiling.c) was measured: 14 tests.  No speed is asserted;
the figures (each metric's median on each pair, the ceiling's MB/s) are
in the TAP detail.  A run that reports no failure but whose run-bench.sh
exits non-zero fails one more test, run-bench/exit-status (with a
selection: a note).

Usage: tests/guest/bench_smoke.py [--list] [--repeat N] [NAME...]
  (rstest/select.py: each benchmark is a unit: a selection runs
  bench/run-bench.sh --smoke --only the selected benchmarks (with a
  perftest program, run-bench.sh also runs verify, reported only if
  selected); backend-ceiling, measured in any run, alone runs
  --only verify)
Environment: RS_BUILD.
Logs: $RS_BUILD/test-logs/bench-smoke.XXXXXX (bench-smoke.last): the
run-bench.sh output bench.log and its results (results.csv, ...).
"""

import csv
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import select  # noqa: E402
from rstest.suite import BUILD, TOP, Suite  # noqa: E402

sys.path.insert(0, os.path.join(TOP, "bench"))
import bench  # noqa: E402  pylint: disable=wrong-import-position

# The benchmarks --smoke runs (every one, as run-bench.sh without --only),
# in results.csv's order; test_catalogs.py checks them against
# run-bench.sh's list.
BENCHMARKS = list(bench.ORDER)
CEILING = "backend-ceiling"
# what a run for the ceiling alone runs (the shortest: one rping -V -C 32)
CEILING_ONLY = "verify"


def catalog():
    """The units (rstest/select.py), each with its test, in the order
    they are reported: a benchmark each, then the ceiling."""
    cat = {b: [b] for b in BENCHMARKS}
    cat[CEILING] = [CEILING]
    return cat


def tail(path: str, n: int) -> str:
    try:
        with open(path, errors="replace") as f:
            return " ".join(f.read().splitlines()[-n:]) + " "
    except OSError:
        return ""


def figures(path: str) -> dict:
    """{benchmark: "METRIC UNIT: adapter X, soft-RoCE Y; ..."} from a
    results.csv (the medians; a cell without one: its status)."""
    out: dict = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            cells = []
            for p, label in (("adapter", "adapter"),
                             ("soft_roce", "soft-RoCE")):
                try:
                    v = bench.fmt(float(r[p + "_median"]))
                except (KeyError, ValueError):
                    v = r.get(p + "_status") or "-"
                cells.append("%s %s" % (label, v))
            out.setdefault(r["benchmark"], []).append(
                "%s %s: %s" % (r["metric"], r["unit"], ", ".join(cells)))
    return {b: "; ".join(m) for b, m in out.items()}


def run(s: Suite, units) -> None:
    """bench/run-bench.sh --smoke (--only the chosen benchmarks unless
    all are), then one test per benchmark and the ceiling; a selected
    benchmark without a results.csv row fails."""
    failed = s.failed
    chosen = [u for u in units if u in BENCHMARKS]
    argv = [os.path.join(TOP, "bench", "run-bench.sh"), "--smoke",
            "--no-build", "--out", s.dir]
    if len(chosen) < len(BENCHMARKS):
        argv += ["--only", ",".join(chosen or [CEILING_ONLY])]
    log = os.path.join(s.dir, "bench.log")
    with open(log, "w") as f:
        brc = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=f,
                              stderr=subprocess.STDOUT,
                              env=dict(os.environ, RS_BUILD=BUILD))
    if brc < 0:
        brc = 128 - brc     # (killed by a signal: bash's status)
    csvp = os.path.join(s.dir, "results.csv")
    rows, figs = {}, {}
    if os.path.isfile(csvp) and os.path.getsize(csvp) > 0:
        rows = {name: (ok, detail)
                for ok, name, detail in bench.smoke_results(csvp)}
        figs = figures(csvp)
    for b in BENCHMARKS:
        if b in rows:
            ok, detail = rows[b]
            s.tap("ok" if ok else "fail", b,
                  detail + (" (%s)" % figs[b] if b in figs else ""))
        elif b in chosen:
            s.report(False, b, "no row in %s (bench/run-bench.sh exit "
                     "status %d): %s" % (csvp, brc, tail(log, 5)))
    # the stream backend's ceiling, measured in the same run
    env = bench.read_env(os.path.join(s.dir, "machine.env"))
    ceil = bench.ceilings(env)
    s.tap("ok" if all(c[3] and c[3] > 0 for c in ceil) else "fail",
          CEILING, "; ".join("%s: %s MB/s" % (t, v) for _, _, t, v in ceil))
    if brc != 0 and s.failed == failed:
        why = "bench/run-bench.sh exit status %d (see %s): %s" % (
            brc, log, tail(log, 5))
        if s.select:
            # (outside the selection, such as the verify run-bench.sh
            # adds to a perftest program)
            s.note("bench-smoke: " + why)
        else:
            s.report(False, "run-bench/exit-status", why)


def main() -> int:
    return select.main("bench-smoke", catalog(), run, sys.argv[1:], __doc__)


if __name__ == "__main__":
    sys.exit(main())
