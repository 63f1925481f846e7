#!/bin/bash
# The project's test command: builds what the tests need, then runs the
# suites with `meson test` (the meson project in meson.build and
# tests/meson.build, set up in $RS_BUILD/tests), one suite after the other,
# and prints one line per suite and, as the last line, the total
# "N passed, N failed".  Exit status 0 only if nothing failed.
#
#   abi          the ABI header's check (C11, gnu99, C++11), the docs'
#                tables against it (spec layouts, the guide's status table)
#                and the shell scripts' lint
#   checkpatch   QEMU's scripts/checkpatch.pl on the device's files
#                (hw/rdma-session/, include/hw/rdma-session/,
#                tests/qtest/rdma-session/), one case per file, failing on
#                an ERROR
#   unit         the rdma-core provider's data path test
#   qtest        the device's qtests, one meson test per area
#   vmstate      the device's migration stream description against the
#                earlier releases' (tests/vmstate/, QEMU's
#                vmstate-static-checker.py)
#   fuzz-smoke   each fuzzer for RS_FUZZ_SMOKE_SECS (30) s on the sanitizer
#                build
#   qtest-asan   the qtests on the sanitizer build
#   demo, guest-driver, guest-stack, rdma-matrix, verbs, introspect, nvmf,
#   p2p, stacks, resilience, multipath, incast, fabric, migration,
#   libvirt, bench-smoke
#                the VM-level suites (tests/guest/; p2p builds the p2p guest
#                kernel the first time, then caches it; stacks runs in the Debian
#                guest; multipath, incast, migration and libvirt build networks
#                of namespaces, libvirt runs a libvirtd per host: they need
#                root)
#
# Usage: scripts/run-tests.sh [SUITE...]
#   SUITE: any of the above, or a meson suite such as qtest-lan (one qtest
#   area), or "guest" (every VM suite); default: all, in the order above.
#
# Counts come from the tests' TAP output (tests/runners/summary.py): one
# per test case; a test that crashes, times out or has no case counts as
# one failure; known exceptions are reported as skipped and not counted.
# A build is counted only when it fails.  Logs: $RS_BUILD/test-logs/ (the
# suites' own directories) and $RS_BUILD/tests/meson-logs/SUITE.{txt,json,
# junit.xml}.
#
# Environment: RS_BUILD, RS_CACHE (see scripts/build-qemu.sh),
#   RS_QTEST_TIMEOUT (seconds for each qtest path, default 300),
#   RS_FUZZ_SMOKE_SECS, RS_MATRIX_PROGS, RS_MATRIX_LOSS (see the suites),
#   RS_STACKS_ALL=1 (the stacks suite complete: by default its short
#   variant, tests/guest/stacks.py).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD
logs="$RS_BUILD/test-logs"
mkdir -p "$logs"

all=(abi checkpatch unit qtest vmstate fuzz-smoke qtest-asan demo guest-driver
     guest-stack rdma-matrix verbs introspect nvmf p2p stacks resilience
     multipath incast fabric migration libvirt bench-smoke)
guest=(demo guest-driver guest-stack rdma-matrix verbs introspect nvmf p2p
       stacks resilience multipath incast fabric migration libvirt
       bench-smoke)
sel=()
for a in "${@:-${all[@]}}"; do
    if [ "$a" = guest ]; then sel+=("${guest[@]}"); else sel+=("$a"); fi
done
wants() { local s; for s in "${sel[@]}"; do case $s in $1) return 0 ;; esac; done; return 1; }

pass=0
fail=0
report()    # suite passed failed [note]
{
    pass=$((pass + $2))
    fail=$((fail + $3))
    echo "$1: $2 passed, $3 failed${4:+ ($4)}"
}
stamp() { date +%s; }

# build NAME COMMAND...: a build step, counted only when it fails
build()
{
    local name=$1 t
    shift
    echo "== $name: $*"
    t=$(stamp)
    if "$@" > "$logs/$name.log" 2>&1; then
        echo "$name: ok ($(( $(stamp) - t )) s)"
        return 0
    fi
    tail -n 40 "$logs/$name.log"
    report "$name" 0 1 "see $logs/$name.log"
    return 1
}

# While QEMU builds, in the background: the Debian guest's debootstrap
# (mostly downloads; build-distro below waits for it) and, at nice 19, the
# p2p guest kernel (it takes the CPU the builds and the early suites leave;
# the p2p suite waits for it).  Each step that needs them redoes what
# failed and reports it; these logs say why.
bg_distro=
bg_kernel=
if wants stacks || wants migration; then
    "$top/scripts/distro-image.sh" > "$logs/bg-distro-image.log" 2>&1 &
    bg_distro=$!
fi
if wants p2p; then
    "$top/scripts/build-guest-kernel.sh" p2p > "$logs/bg-guest-kernel.log" 2>&1 &
    bg_kernel=$!
fi
bg_wait()   # NAME PID: wait for a background preparation, say how it ended
{
    local t rc=0
    [ -n "$2" ] || return 0
    t=$(stamp)
    wait "$2" || rc=$?
    echo "$1 (background): exit status $rc, waited $(( $(stamp) - t )) s"
}

build build "$top/scripts/build-qemu.sh" qemu-system-x86_64 tests/qtest/qos-test \
    tests/qtest/rdma-session/rdma-session-test tests/unit/test-aio
# The sanitizer build: a second build directory of the same source, built
# before the shared lock below, which scripts/build-qemu.sh would wait for.
if wants 'fuzz-smoke' || wants 'qtest-asan*'; then
    build build-fuzz "$top/scripts/build-qemu.sh" --fuzz
fi
# The guest image and what it contains (the module, rdma-core with the
# provider), which the unit and VM suites use as they are.
if wants unit || wants 'demo' || wants 'guest-*' || wants 'rdma-*' ||
   wants verbs || wants introspect || wants nvmf || wants resilience ||
   wants multipath || wants incast || wants migration || wants libvirt ||
   wants bench-smoke ||
   wants stacks; then
    build build-guest "$top/scripts/guest-image.sh"
fi
# The Debian guest (scripts/distro-image.sh) with the driver's packages
# installed in it by DKMS (tests/guest/rstest/distro.py), both cached: the
# stacks suite's, and the migration suite's between hosts.
if wants stacks || wants migration; then
    bg_wait distro-image "$bg_distro"
    build build-distro python3 "$top/tests/guest/stacks.py" --prepare
fi
# Hold scripts/build-qemu.sh's lock (shared) while the tests use the build,
# so that a concurrent build does not relink the binaries under them.
exec 8>"$RS_BUILD/.lock"
flock -s 8

mt="$RS_BUILD/tests"
if [ -e "$mt/build.ninja" ]; then
    meson setup --reconfigure "$mt" "$top" -Drs_build="$RS_BUILD" > "$logs/meson-setup.log" 2>&1
else
    meson setup "$mt" "$top" -Drs_build="$RS_BUILD" > "$logs/meson-setup.log" 2>&1
fi || { tail -n 20 "$logs/meson-setup.log"; report meson-setup 0 1 "see $logs/meson-setup.log"; }

for s in "${sel[@]}"; do
    [ "$s" != p2p ] || { bg_wait guest-kernel "$bg_kernel"; bg_kernel=; }
    echo "== $s: meson test --suite $s"
    t=$(stamp)
    rm -f "$mt/meson-logs/$s.json"
    meson test -C "$mt" --suite "$s" --logbase "$s" --num-processes 2 \
        > "$logs/meson-$s.log" 2>&1
    out=$("$top/tests/runners/summary.py" "$mt/meson-logs/$s.json" "$s" \
          "$(( $(stamp) - t ))")
    echo "$out" | sed '$d'
    read -r p f < <(echo "$out" | tail -n 1 | sed -E 's/^[^:]*: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/')
    pass=$((pass + p))
    fail=$((fail + f))
    echo "$out" | tail -n 1
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
