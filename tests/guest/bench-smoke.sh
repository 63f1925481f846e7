#!/bin/bash
# The benchmark's own command at its shortest (bench/run-bench.sh --smoke),
# as TAP: it keeps working (both pairs, jumbo frames, every perftest
# program, rping -V verified) without being a timed test.  One test per
# benchmark that produced numbers on the adapter pair and the soft-RoCE
# pair; no speed is asserted.
#
# Usage: tests/guest/bench-smoke.sh
# Environment: RS_BUILD.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD
. "$top/tests/guest/suite-lib.sh"
suite_dir bench-smoke
"$top/bench/run-bench.sh" --smoke --no-build --out "$sdir" > "$sdir/bench.log" 2>&1
brc=$?
if [ -s "$sdir/results.csv" ]; then
    while read -r res name detail; do
        tap "$res" "bench-smoke/$name" "$detail"
    done < <(python3 "$top/bench/bench.py" smoke-check "$sdir/results.csv")
fi
if [ "$brc" != 0 ] && [ "$fail" = 0 ]; then
    tap fail "bench-smoke: bench/run-bench.sh exit status $brc" \
        "$(tail -n 5 "$sdir/bench.log" | tr '\n' ' ')"
fi
suite_end
