#!/bin/bash
# The rdma-core provider's data path test (guest-driver/provider/test:
# rings and doorbells in plain memory, the test playing the device),
# built against the rdma-core tree scripts/build-rdma-core.sh built, as
# one TAP test.
#
# Usage: tests/runners/provider-datapath.sh
# Environment: RS_BUILD.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
: "${RS_BUILD:=$top/build}"
prov=$top/guest-driver/provider
src=$(ls -d "$RS_BUILD"/rdma-core-[0-9]* 2>/dev/null | sort -V | tail -n 1)
bld=$src/build
echo "1..1"
if [ ! -e "$bld/util/librdma_util.a" ]; then
    echo "not ok 1 - provider data path: no rdma-core build in $RS_BUILD (run scripts/build-rdma-core.sh)"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the provider includes the shared ABI header as abi/ (as in rdma-core's tree)
mkdir -p "$tmp/inc"
ln -s "$top/include/hw/rdma-session" "$tmp/inc/abi"
if ! cc -std=gnu11 -O2 -g -Wall -Wextra -Wno-sign-compare \
        -Wno-unused-parameter -Wshadow -Werror -I"$bld/include" -I"$src" \
        -I"$prov" -I"$tmp/inc" -o "$tmp/rs-datapath-test" "$prov/test/rs-datapath-test.c" \
        "$bld/util/librdma_util.a" "$bld/ccan/libccan.a" -L"$bld/lib" \
        -libverbs -Wl,-rpath,"$bld/lib" -lpthread > "$tmp/cc.log" 2>&1; then
    echo "not ok 1 - provider data path: the test does not build"
    sed 's/^/#   /' "$tmp/cc.log" | head -n 20
    exit 1
fi
if "$tmp/rs-datapath-test" > "$tmp/out" 2>&1; then
    echo "ok 1 - provider data path: $(tail -n 1 "$tmp/out")"
else
    echo "not ok 1 - provider data path"
    sed 's/^/#   /' "$tmp/out" | tail -n 20
    exit 1
fi
