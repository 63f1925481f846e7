#!/bin/bash
# A command whose exit status is its result, as one TAP test; its lines
# starting with "NAME:" become notes, its whole output goes to
# $RS_BUILD/test-logs/NAME.log.
#
# Usage: tests/runners/exit-status.sh NAME COMMAND [ARGS...]
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
: "${RS_BUILD:=$top/build}"
name=$1
shift
log=$RS_BUILD/test-logs/$name.log
mkdir -p "${log%/*}"
echo "1..1"
if "$@" > "$log" 2>&1; then
    echo "ok 1 - $name"
    grep "^$name:" "$log" | sed 's/^/# /'
else
    rc=$?
    echo "not ok 1 - $name (exit status $rc, log $log)"
    tail -n 30 "$log" | sed 's/^/#   /'
    exit 1
fi
