#!/bin/bash
# One fuzzer (scripts/fuzz.sh, on the sanitizer build) for a short fixed
# time, as one TAP test: a crash, sanitizer report, hang or out-of-memory
# fails it and the reproducer is named.
#
# Usage: tests/runners/fuzz-smoke.sh generic|hub|packet|fabric
# Environment: RS_FUZZ_SMOKE_SECS (default 30), RS_BUILD.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
target=$1
: "${RS_BUILD:=$top/build}"
log="$RS_BUILD/test-logs/fuzz-$target.log"
mkdir -p "${log%/*}"
echo "1..1"
if "$top/scripts/fuzz.sh" --no-build --target "$target" \
        --seconds "${RS_FUZZ_SMOKE_SECS:-30}" > "$log" 2>&1; then
    echo "ok 1 - fuzz-smoke/$target"
    grep "^fuzz $target:" "$log" | sed 's/^/# /'
else
    echo "not ok 1 - fuzz-smoke/$target (log $log)"
    grep -E "^(fuzz $target:|  |==|SUMMARY|rdma-session fuzz: )|runtime error" "$log" |
        head -n 8 | sed 's/^/#   /'
    exit 1
fi
