#!/bin/bash
# The project's test command.  Runs, in order:
#   build  scripts/build-qemu.sh qemu-system-x86_64 tests/qtest/qos-test
#   abi    the rdma-session-abi meson project (meson.build, tests/abi)
#   qtest  the device's qtests: every qos-test path naming rdma-session
#   demo   scripts/run-demo.sh as a smoke test: the guest must list the
#          adapter (PCI 1af4:10f0)
#   guest-driver  scripts/test-guest-driver.sh: build rdma_session.ko, load
#          it in the guest and check its probe line and kernel log
# Each suite prints "<suite>: N passed, N failed"; the last line is the
# total "N passed, N failed".  Exit status 0 only if nothing failed.
# Passes and failures are counted from TAP output (one per test case); a
# step that cannot run at all (build error, crash, no tests) counts as one
# failure.  A successful build is not counted.  Logs go to build/test-logs/.
#
# Environment: RS_BUILD, RS_CACHE (see scripts/build-qemu.sh),
#   RS_QTEST_TIMEOUT (seconds for each qos-test run, default 300),
#   RS_DEMO_TIMEOUT (seconds for the demo VM, default 120).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD
logs="$RS_BUILD/test-logs"
mkdir -p "$logs"
py=/usr/bin/python3
[ -x "$py" ] || py=python3

pass=0
fail=0
report()    # suite passed failed [note]
{
    pass=$((pass + $2))
    fail=$((fail + $3))
    echo "$1: $2 passed, $3 failed${4:+ ($4)}"
}
stamp() { date +%s; }

# tap_count FILE: prints "passed failed skipped" from the TAP lines in FILE;
# test cases announced by a plan line "1..N" but never reported count as
# failed.
tap_count()
{
    awk '
        /^ok / { if ($0 ~ /# *[Ss][Kk][Ii][Pp]/) s++; else p++; next }
        /^not ok / { if ($0 ~ /# *TODO/) p++; else f++; next }
        /^1\.\.[0-9]+/ { split($0, a, /\.\./); plan += a[2] + 0 }
        END {
            seen = p + f + s
            if (plan > seen) f += plan - seen
            printf "%d %d %d\n", p, f, s
        }' "$1"
}

# --- build -------------------------------------------------------------------
echo "== build: scripts/build-qemu.sh qemu-system-x86_64 tests/qtest/qos-test"
t=$(stamp)
built=0
if "$top/scripts/build-qemu.sh" qemu-system-x86_64 tests/qtest/qos-test \
        > "$logs/build.log" 2>&1; then
    built=1
    echo "build: ok ($(( $(stamp) - t )) s)"
else
    tail -n 40 "$logs/build.log"
    report build 0 1 "see $logs/build.log"
fi
qbuild="$RS_BUILD/qemu"
# Hold scripts/build-qemu.sh's lock (shared) while the tests use the build,
# so that a concurrent build does not relink the binaries under them.
if [ $built = 1 ]; then
    exec 8>"$RS_BUILD/.lock"
    flock -s 8
fi

# --- abi ---------------------------------------------------------------------
echo "== abi: meson project rdma-session-abi (meson $(meson --version 2>/dev/null || echo missing))"
t=$(stamp)
abidir="$RS_BUILD/abi"
rm -rf "$abidir"
if ! meson setup "$abidir" "$top" > "$logs/abi-setup.log" 2>&1; then
    tail -n 20 "$logs/abi-setup.log"
    report abi 0 1 "meson setup failed, see $logs/abi-setup.log"
else
    meson test -C "$abidir" --print-errorlogs > "$logs/abi.log" 2>&1
    abirc=$?
    # Each test's stdout is TAP; testlog.json keeps it (meson 1.0 and 1.7).
    : > "$logs/abi.tap"
    if [ -s "$abidir/meson-logs/testlog.json" ]; then
        "$py" - "$abidir/meson-logs/testlog.json" >> "$logs/abi.tap" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get("stdout") or ""
    tap = [l for l in out.splitlines() if l.startswith(("ok ", "not ok ", "1.."))]
    if tap:
        print("\n".join(tap))
    elif t.get("result") != "OK":
        print("1..1\nnot ok 1 - %s: %s" % (t.get("name"), t.get("result")))
EOF
    fi
    read -r p f s < <(tap_count "$logs/abi.tap")
    if [ "$abirc" != 0 ] && [ "$f" = 0 ]; then
        f=1     # the build failed, or meson failed without a TAP failure
        tail -n 30 "$logs/abi.log"
    fi
    grep '^not ok' "$logs/abi.tap" | head -n 20
    report abi "$p" "$f" "$(cat "$abidir/meson-logs/testlog.json" 2>/dev/null | wc -l) meson tests, $(( $(stamp) - t )) s"
fi

# --- qtest -------------------------------------------------------------------
echo "== qtest: qos-test, rdma-session paths"
t=$(stamp)
if [ $built != 1 ]; then
    report qtest 0 1 "not run: the build failed"
else
    # The build is configured without firmware blobs; qtest runs QEMU
    # without -L, so give the build tree's data directory Debian's files.
    data="$qbuild/qemu-bundle/usr/local/share/qemu"
    mkdir -p "$data"
    for f in /usr/share/seabios/*.bin /usr/share/qemu/*.bin /usr/lib/ipxe/qemu/*.rom; do
        [ -e "$f" ] && [ ! -e "$data/${f##*/}" ] && ln -sf "$f" "$data/${f##*/}"
    done
    cd "$qbuild" || exit 1
    export QTEST_QEMU_BINARY=./qemu-system-x86_64
    # "qos-test -l" lists full paths such as
    # /x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/rdma-session/...; -p
    # takes exact paths (GLib's -p does not recurse).  One qos-test run per
    # path, so that a test that aborts does not hide the others.
    mapfile -t paths < <(./tests/qtest/qos-test -l 2>/dev/null | grep -E '^/.*/rdma-session(/|$)')
    if [ ${#paths[@]} -eq 0 ]; then
        report qtest 0 1 "qos-test lists no rdma-session test"
    else
        : > "$logs/qtest.tap"
        : > "$logs/qtest.stderr"
        qp=0 qf=0 qs=0 crashed=0
        for path in "${paths[@]}"; do
            # (the subshell keeps bash's "Aborted" notices out of the output)
            ( timeout -k 10 "${RS_QTEST_TIMEOUT:-300}" \
                ./tests/qtest/qos-test -m quick --tap -p "$path"; exit $? ) \
                > "$logs/qtest.one" 2> "$logs/qtest.one.err"
            qrc=$?
            cat "$logs/qtest.one" >> "$logs/qtest.tap"
            cat "$logs/qtest.one.err" >> "$logs/qtest.stderr"
            read -r p f s < <(tap_count "$logs/qtest.one")
            if [ "$qrc" != 0 ] && [ "$f" = 0 ]; then
                f=1
                crashed=$((crashed + 1))
                why="exit status $qrc"
                [ "$qrc" = 124 ] && why="timed out after ${RS_QTEST_TIMEOUT:-300} s"
                echo "not ok - $path ($why)"
                grep -hE '^(Bail out|\*\*)|ERROR' "$logs/qtest.one" "$logs/qtest.one.err" |
                    head -n 3 | sed 's/^/#   /'
            fi
            grep '^not ok' "$logs/qtest.one" | sed "s|^|$path: |"
            qp=$((qp + p)) qf=$((qf + f)) qs=$((qs + s))
        done
        rm -f "$logs/qtest.one" "$logs/qtest.one.err"
        note="${#paths[@]} paths"
        [ "$qs" = 0 ] || note+=", $qs skipped"
        [ "$crashed" = 0 ] || note+=", $crashed runs ended abnormally, see $logs/qtest.stderr"
        report qtest "$qp" "$qf" "$note, $(( $(stamp) - t )) s"
    fi
    cd "$top" || exit 1
fi

# --- demo --------------------------------------------------------------------
echo "== demo: scripts/run-demo.sh"
t=$(stamp)
if [ $built != 1 ]; then
    report demo 0 1 "not run: the build failed"
elif RS_DEMO_NO_BUILD=1 "$top/scripts/run-demo.sh" > "$logs/demo.log" 2>&1; then
    grep '^demo:' "$logs/demo.log"
    report demo 1 0 "$(( $(stamp) - t )) s"
else
    tail -n 30 "$logs/demo.log"
    report demo 0 1 "see $logs/demo.log and $RS_BUILD/demo/serial.log"
fi

# --- guest-driver ------------------------------------------------------------
echo "== guest-driver: scripts/test-guest-driver.sh"
t=$(stamp)
if [ $built != 1 ]; then
    report guest-driver 0 1 "not run: the build failed"
elif RS_DEMO_NO_BUILD=1 "$top/scripts/test-guest-driver.sh" > "$logs/guest-driver.log" 2>&1; then
    grep '^guest-driver:' "$logs/guest-driver.log"
    report guest-driver 1 0 "$(( $(stamp) - t )) s"
else
    tail -n 30 "$logs/guest-driver.log"
    report guest-driver 0 1 "see $logs/guest-driver.log and $RS_BUILD/guest-driver/"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
