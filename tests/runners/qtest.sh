#!/bin/bash
# Run the device's qtests as TAP: every path naming rdma-session of the
# two qtest binaries, qos-test (the qos graph's tests of the adapter) and
# tests/qtest/rdma-session/rdma-session-test (those that start two
# adapters or a second QEMU), that matches one of the patterns (extended
# regular expressions; none: all), one process per path so that a test
# that aborts does not hide the others.  A run that crashes or times out,
# and a sanitizer report in a passing run, is a failed test.
#
# Usage: tests/runners/qtest.sh QEMU-BUILD-DIR [PATTERN...]
#        tests/runners/qtest.sh --areas QEMU-BUILD-DIR PATTERN...
#   --areas: one test, which fails if a path matches none or several of
#   the patterns (the areas meson runs): no qtest is left out of the suite.
# Environment: RS_QTEST_TIMEOUT (seconds per path, default 300),
#   ASAN_OPTIONS/UBSAN_OPTIONS for the sanitizer build.
set -uo pipefail

areas=0
[ "$1" = --areas ] && { areas=1; shift; }
qb=$1
shift
cd "$qb" || { echo "Bail out! no QEMU build directory $qb"; exit 1; }
# (scripts/build-qemu.sh gave the build's data directory the firmware)
export QTEST_QEMU_BINARY=./qemu-system-x86_64
pat=$(IFS='|'; echo "${*:-.}")
[ $areas = 0 ] || pat=.
# "-l" lists full paths; each runs in a process of its own, of the binary
# that listed it (bins[i] for paths[i]).
paths=() bins=()
for b in ./tests/qtest/qos-test ./tests/qtest/rdma-session/rdma-session-test; do
    if [ ! -x "$b" ]; then
        echo "Bail out! no $b in $qb"
        exit 1
    fi
    mapfile -t p < <("$b" -l 2>/dev/null |
                     grep -E '^/.*/rdma-session(/|$)' | grep -E -- "$pat")
    for x in "${p[@]}"; do
        paths+=("$x")
        bins+=("$b")
    done
done
if [ ${#paths[@]} -eq 0 ]; then
    echo "Bail out! the qtests list no rdma-session path matching '$pat'"
    exit 1
fi
if [ $areas = 1 ]; then
    echo "1..1"
    bad=
    for path in "${paths[@]}"; do
        k=0
        # (bash's own ERE match: no grep process per path and pattern)
        for p in "$@"; do [[ $path =~ $p ]] && k=$((k + 1)); done
        [ $k = 1 ] || bad+=" $path ($k areas)"
    done
    if [ -z "$bad" ]; then
        echo "ok 1 - each of the ${#paths[@]} paths is in one area"
        exit 0
    fi
    echo "not ok 1 - paths not in exactly one area:$bad"
    exit 1
fi
echo "1..${#paths[@]}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
for path in "${paths[@]}"; do
    b=${bins[$n]}
    n=$((n + 1))
    # (the subshell keeps bash's "Aborted" notices out of the output)
    ( timeout -k 10 "${RS_QTEST_TIMEOUT:-300}" \
        "$b" -m quick --tap -p "$path"; exit $? ) \
        > "$tmp/out" 2> "$tmp/err"
    rc=$?
    cat "$tmp/err" >&2
    why=
    if grep -q '^not ok' "$tmp/out"; then
        why=$(grep -m1 '^not ok' "$tmp/out")
    elif [ $rc = 124 ] || [ $rc = 137 ]; then
        why="timed out after ${RS_QTEST_TIMEOUT:-300} s"
    elif [ $rc != 0 ]; then
        why="exit status $rc"
    elif ! grep -q '^ok ' "$tmp/out"; then
        why="no result"
    elif grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$tmp/err"; then
        why="sanitizer report"
    fi
    if [ -z "$why" ]; then
        echo "ok $n - $path"
    else
        bad=$((bad + 1))
        echo "not ok $n - $path ($why)"
        grep -hE '^(Bail out|\*\*)|ERROR|runtime error:|SUMMARY' "$tmp/out" "$tmp/err" |
            head -n 4 | sed 's/^/#   /'
    fi
done
[ $bad = 0 ]
