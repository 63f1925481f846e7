#!/bin/bash
# The project's test command.  Runs, in order:
#   build  scripts/build-qemu.sh qemu-system-x86_64 tests/qtest/qos-test
#   abi    the rdma-session-abi meson project (meson.build, tests/abi, and
#          tests/scripts: the shell scripts' lint)
#   build-fuzz  scripts/build-qemu.sh --fuzz: a second build directory
#          with clang, libFuzzer, ASan and UBSan (qemu-fuzz-x86_64,
#          qemu-system-x86_64, qos-test); counted only when it fails
#   qtest  the device's qtests: every qos-test path naming rdma-session
#   fuzz-smoke  scripts/fuzz.sh: generic-fuzz (rdma-session configuration)
#          and the RoCE packet fuzzer, RS_FUZZ_SMOKE_SECS (60) seconds
#          each; a crash, sanitizer report, hang or OOM fails the fuzzer
#   qtest-asan  the qtest suite's paths once more on the sanitizer build;
#          an ASan/UBSan report fails the test
#   demo   scripts/run-demo.sh as a smoke test: the guest must list the
#          adapter (PCI 1af4:10f0)
#   guest-driver  scripts/test-guest-driver.sh: build rdma_session.ko, load
#          it in the guest and check its probe line and kernel log
#   guest-stack  scripts/launch-vms.sh: the module, the Ethernet interface,
#          ping between two VMs, the RDMA device in ibv_devices/ibv_devinfo,
#          its RoCEv2 GID, rdma link/resource, DHCP on -netdev user, module
#          reload while a process holds a context; each check counts once
#          the parts it needs are committed; every perftest binary, rping
#          and ibv_*_pingpong start (no loader error); ibv_uc_pingpong,
#          ibv_srq_pingpong and ib_atomic_bw between the two VMs
#   rdma-matrix  scripts/launch-vms.sh: ibv_*_pingpong, perftest and rping
#          between two adapter VMs and between an adapter VM and a
#          soft-RoCE VM, each side as the server; RC programs with netem
#          loss in the soft-RoCE VM; packet captures of both pairings
#          checked with tshark and scripts/roce-icrc.py.  Checks not yet
#          expected to pass are run and listed as "not yet", in a tally of
#          their own, never counted as passed
#   nvmf   scripts/test-nvmf.sh: NVMe over Fabrics over RDMA between two
#          VMs (kernel RDMA consumer), data compared on host and target
#   resilience  scripts/test-resilience.sh: a system reset (QMP) and a
#          module unload in one of two VMs in the middle of ib_write_bw: the
#          peer's QP ends with retry exceeded, the VM comes back (boots
#          again, module reloaded) and runs traffic with the same peer
#   migration  scripts/test-migration.sh: VM 1 live-migrated three times
#          (tests/guest/migrate_vm.py) under rping -V, perftest RC and UD and
#          the RC/SRQ pingpongs, then once with the switchover held 30 s
#          while an adapter peer and a soft-RoCE peer keep their RC
#          traffic going, then NVMe-oF I/O verified while the target and
#          the host move
#   bench-smoke  bench/run-bench.sh --smoke: one short repetition of every
#          benchmark on both pairs (-netdev stream, MTU 9000); one check per
#          benchmark that produced numbers on both (a verified transfer
#          also needs rping -V to pass).  No speed is asserted.
# Each suite prints "<suite>: N passed, N failed"; the last line is the
# total "N passed, N failed".  Exit status 0 only if nothing failed.
# Passes and failures are counted from TAP output (one per test case); a
# step that cannot run at all (build error, crash, no tests) counts as one
# failure.  A successful build is not counted.  Logs go to build/test-logs/.
#
# Environment: RS_BUILD, RS_CACHE (see scripts/build-qemu.sh),
#   RS_QTEST_TIMEOUT (seconds for each qos-test run, default 300),
#   RS_FUZZ_SMOKE_SECS (seconds for each fuzzer in fuzz-smoke, default 60),
#   RS_DEMO_TIMEOUT (seconds for the demo VM, default 120),
#   RS_MATRIX_PROGS, RS_MATRIX_LOSS (the programs of rdma-matrix, without
#   and with netem loss; for a shorter run by hand).
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
# The sanitizer build (clang, libFuzzer, ASan, UBSan) for fuzz-smoke and
# qtest-asan: a second build directory of the same source.  Built before
# the shared lock below, which scripts/build-qemu.sh would wait for.
echo "== build-fuzz: scripts/build-qemu.sh --fuzz"
t=$(stamp)
fbuilt=0
if "$top/scripts/build-qemu.sh" --fuzz > "$logs/build-fuzz.log" 2>&1; then
    fbuilt=1
    echo "build-fuzz: ok ($(( $(stamp) - t )) s)"
else
    tail -n 40 "$logs/build-fuzz.log"
    report build-fuzz 0 1 "see $logs/build-fuzz.log"
fi
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
# run_qtests SUITE BUILD-DIR: every qos-test path naming rdma-session, one
# qos-test run per path, with that build's qemu-system-x86_64 and qos-test.
run_qtests()
{
    local suite=$1 qb=$2 t path qrc p f s qp qf qs crashed why note
    local -a paths
    t=$(stamp)
    # (scripts/build-qemu.sh gave the build's data directory the firmware)
    cd "$qb" || exit 1
    export QTEST_QEMU_BINARY=./qemu-system-x86_64
    # "qos-test -l" lists full paths such as
    # /x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/rdma-session/...; -p
    # takes exact paths (GLib's -p does not recurse).  One qos-test run per
    # path, so that a test that aborts does not hide the others.
    mapfile -t paths < <(./tests/qtest/qos-test -l 2>/dev/null | grep -E '^/.*/rdma-session(/|$)')
    if [ ${#paths[@]} -eq 0 ]; then
        report "$suite" 0 1 "qos-test lists no rdma-session test"
        cd "$top" || exit 1
        return
    fi
    : > "$logs/$suite.tap"
    : > "$logs/$suite.stderr"
    qp=0 qf=0 qs=0 crashed=0
    for path in "${paths[@]}"; do
        # (the subshell keeps bash's "Aborted" notices out of the output)
        ( timeout -k 10 "${RS_QTEST_TIMEOUT:-300}" \
            ./tests/qtest/qos-test -m quick --tap -p "$path"; exit $? ) \
            > "$logs/$suite.one" 2> "$logs/$suite.one.err"
        qrc=$?
        cat "$logs/$suite.one" >> "$logs/$suite.tap"
        cat "$logs/$suite.one.err" >> "$logs/$suite.stderr"
        read -r p f s < <(tap_count "$logs/$suite.one")
        # A sanitizer report is a failure even where the test passed.
        if [ "$f" = 0 ] && grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' \
                "$logs/$suite.one.err"; then
            f=1 p=$((p > 0 ? p - 1 : 0))
            echo "not ok - $path (sanitizer report)"
            grep -hE 'ERROR: |runtime error:|SUMMARY' "$logs/$suite.one.err" |
                head -n 3 | sed 's/^/#   /'
        elif [ "$qrc" != 0 ] && [ "$f" = 0 ]; then
            f=1
            crashed=$((crashed + 1))
            why="exit status $qrc"
            [ "$qrc" = 124 ] && why="timed out after ${RS_QTEST_TIMEOUT:-300} s"
            echo "not ok - $path ($why)"
            grep -hE '^(Bail out|\*\*)|ERROR|runtime error:' "$logs/$suite.one" \
                "$logs/$suite.one.err" | head -n 3 | sed 's/^/#   /'
        fi
        grep '^not ok' "$logs/$suite.one" | sed "s|^|$path: |"
        qp=$((qp + p)) qf=$((qf + f)) qs=$((qs + s))
    done
    rm -f "$logs/$suite.one" "$logs/$suite.one.err"
    note="${#paths[@]} paths"
    [ "$qs" = 0 ] || note+=", $qs skipped"
    [ "$crashed" = 0 ] || note+=", $crashed runs ended abnormally, see $logs/$suite.stderr"
    report "$suite" "$qp" "$qf" "$note, $(( $(stamp) - t )) s"
    cd "$top" || exit 1
}

echo "== qtest: qos-test, rdma-session paths"
if [ $built != 1 ]; then
    report qtest 0 1 "not run: the build failed"
else
    run_qtests qtest "$qbuild"
fi

# --- fuzz-smoke ----------------------------------------------------------------
# Each fuzzer (scripts/fuzz.sh) for a short fixed time on the sanitizer
# build: one check per fuzzer, failed by any crash, sanitizer report,
# timeout (hang) or out-of-memory; the reproducer is named.
echo "== fuzz-smoke: scripts/fuzz.sh, generic-fuzz and the packet fuzzer, ${RS_FUZZ_SMOKE_SECS:-60} s each"
t=$(stamp)
if [ $fbuilt != 1 ]; then
    report fuzz-smoke 0 1 "not run: the fuzz build failed"
else
    fp=0 ff=0
    for ft in generic packet; do
        if "$top/scripts/fuzz.sh" --no-build --target "$ft" \
                --seconds "${RS_FUZZ_SMOKE_SECS:-60}" > "$logs/fuzz-$ft.log" 2>&1; then
            fp=$((fp + 1))
            grep "^fuzz $ft:" "$logs/fuzz-$ft.log"
        else
            ff=$((ff + 1))
            echo "not ok - fuzz-smoke/$ft"
            grep -E "^(fuzz $ft:|  |==|SUMMARY)|runtime error" "$logs/fuzz-$ft.log" |
                head -n 8 | sed 's/^/#   /'
        fi
    done
    report fuzz-smoke "$fp" "$ff" "$(( $(stamp) - t )) s, logs $logs/fuzz-*.log"
fi

# --- qtest-asan ----------------------------------------------------------------
# The qtest suite's paths once more, on the ASan + UBSan build.  Leaks are
# not reported (QEMU keeps allocations until exit); any other report
# aborts QEMU or qos-test and fails the test.
echo "== qtest-asan: qos-test, rdma-session paths, ASan + UBSan build"
if [ $fbuilt != 1 ]; then
    report qtest-asan 0 1 "not run: the fuzz build failed"
else
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
        run_qtests qtest-asan "$RS_BUILD/qemu-fuzz"
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

# --- guest-stack ---------------------------------------------------------------
# Two runs of scripts/launch-vms.sh: two VMs with the adapter on one segment,
# then one VM on -netdev user.  The guests print "CHECK <name> ok|fail
# <detail>"; each check counts only once the parts it needs are in the
# repository (committed), so that a part that has not landed yet is not a
# failure, and a part that has landed must work.
echo "== guest-stack: scripts/launch-vms.sh (2 VMs on one segment, 1 VM on -netdev user)"
t=$(stamp)
intree() { git -C "$top" ls-files --error-unmatch "$@" >/dev/null 2>&1 ||
           { ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1 && [ -e "$top/$1" ]; }; }
declare -A gate=([net]=0 [ib]=0 [prov]=0)
intree guest-driver/kernel/rdma_session_netdev.c && intree hw/rdma-session/rdma-session-lan.c && gate[net]=1
intree guest-driver/kernel/rdma_session_verbs.c && gate[ib]=1
[ -n "$(git -C "$top" ls-files guest-driver/provider 2>/dev/null | head -n 1)" ] &&
    intree scripts/build-rdma-core.sh && gate[prov]=1
# check name -> the gates it needs
declare -A needs=(
    [module-load]='' [dmesg-clean]='' [netdev]=net [ping]=net [dhcp-gateway]=net
    [ibv-devices]='ib prov' [ibv-devinfo]='ib prov' [gid-rocev2]='ib net'
    [rdma-link]=ib [rdma-resource]=ib [reload-with-context]='ib prov' [perftest-start]=''
    [uc-pingpong]='ib prov' [srq-pingpong]='ib prov' [atomic-bw]='ib prov')
gated_in() { local g; for g in ${needs[$1]}; do [ "${gate[$g]}" = 1 ] || return 1; done; }
read -r -d '' gs_common <<'EOS'
ck() { echo "CHECK $1 $2 ${3:-}"; }
badlog() { dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)' | head -n 3 | tr '\n' ' '; }
dev=$(ls /sys/class/infiniband 2>/dev/null | head -n 1)
gid_of() {  # IPv4 address -> index of its RoCE v2 GID on $dev port 1
    h=$(echo "$1" | awk -F. '{ printf "%02x%02x:%02x%02x", $1, $2, $3, $4 }')
    for f in /sys/class/infiniband/$dev/ports/1/gids/*; do
        i=${f##*/}
        [ "$(cat "$f" 2>/dev/null)" = "0000:0000:0000:0000:0000:ffff:$h" ] || continue
        [ "$(cat /sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo "$i"; return 0; }
    done
    return 1
}
b=$(badlog)
if [ -z "$(ls /sys/bus/pci/drivers/rdma_session 2>/dev/null | grep '^0000:')" ]; then
    ck module-load fail "rdma_session is not bound to the adapter"
elif [ -n "$b" ]; then ck module-load fail "$b"
else ck module-load ok; fi
EOS
read -r -d '' gs_pair <<'EOS'
ifc=$RS_IFACE
mac=$(printf '52:54:00:77:00:%02x' "$RS_VM_INDEX")
drv=$(basename "$(readlink /sys/class/net/$ifc/device/driver 2>/dev/null)" 2>/dev/null)
if [ "$drv" = rdma_session ] && [ "$(cat /sys/class/net/$ifc/address)" = "$mac" ] &&
   [ "$(cat /sys/class/net/$ifc/carrier 2>/dev/null)" = 1 ]; then
    ck netdev ok "$ifc $mac carrier up"
else ck netdev fail "interface '$ifc' driver '$drv' address $(cat /sys/class/net/$ifc/address 2>/dev/null) carrier $(cat /sys/class/net/$ifc/carrier 2>/dev/null)"; fi
ok=0
for t in 1 2 3 4 5 6; do ping -c 1 -W 2 "$RS_PEER" >/dev/null 2>&1 && { ok=1; break; }; done
if [ $ok = 1 ] && ping -c 3 -W 2 "$RS_PEER" > /tmp/ping.log 2>&1; then
    ck ping ok "$(grep 'packets transmitted' /tmp/ping.log)"
else ck ping fail "$(tail -n 2 /tmp/ping.log 2>/dev/null | tr '\n' ' ')"; fi
if ibv_devices 2>&1 | grep -qw rsess0; then ck ibv-devices ok
else ck ibv-devices fail "$(ibv_devices 2>&1 | tr '\n' ' ')"; fi
ibv_devinfo -d rsess0 > /tmp/devinfo.log 2>&1
if grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo.log && grep -q 'link_layer:.*Ethernet' /tmp/devinfo.log; then
    ck ibv-devinfo ok "PORT_ACTIVE, link_layer Ethernet"
else ck ibv-devinfo fail "$(grep -E 'state|link_layer|No IB|Failed' /tmp/devinfo.log | tr '\n' ' ')"; fi
if gi=$(gid_of "$RS_IP"); then ck gid-rocev2 ok "index $gi ::ffff:$RS_IP RoCE v2"
else ck gid-rocev2 fail "no RoCE v2 GID for $RS_IP on '$dev': $(cat /sys/class/infiniband/$dev/ports/1/gids/* 2>/dev/null | grep -v '^0000:0000:0000:0000:0000:0000:0000:0000$' | tr '\n' ' ')"; fi
l=$(rdma link show 2>&1)
if echo "$l" | grep -qE "link rsess0/1 .*state ACTIVE.*netdev $ifc"; then ck rdma-link ok "$l"
else ck rdma-link fail "$l"; fi
r=$(rdma resource show 2>&1); rc=$?
if [ $rc = 0 ] && echo "$r" | grep -q 'rsess0'; then ck rdma-resource ok "$(echo "$r" | head -n 1)"
else ck rdma-resource fail "status $rc: $r"; fi
# Every perftest binary, rping and the pingpong tests start: the dynamic
# loader resolves their libraries and symbol versions (--help prints the
# usage; the exit status varies between the tools).
bad=
for p in ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_atomic_bw \
         rping ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong; do
    if ! command -v $p >/dev/null 2>&1; then bad="$bad $p:missing"; continue; fi
    o=$(timeout 10 $p --help 2>&1); rc=$?
    if [ $rc = 127 ] || [ $rc = 124 ] || [ -z "$o" ] ||
       echo "$o" | grep -qiE 'error while loading|version .* not found|symbol lookup error|cannot open shared|not found \(required'; then
        bad="$bad $p:status-$rc:$(echo "$o" | head -n 1)"
    fi
done
if [ -z "$bad" ]; then ck perftest-start ok "ib_*_bw/lat, rping, ibv_*_pingpong start"
else ck perftest-start fail "$bad"; fi
# Traffic between the two VMs: VM 1 serves, VM 2 connects (retrying until
# the server listens).
gi=$(gid_of "$RS_IP" || echo 1)
pp_pair() {  # check name, command...
    n=$1; shift
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout 90 "$@" > /tmp/$n.log 2>&1; rc=$?
    else
        for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
            sleep 2
            timeout 90 "$@" "$RS_PEER" > /tmp/$n.log 2>&1; rc=$?
            grep -qi "couldn't connect\|unable to connect\|connection refused" /tmp/$n.log || break
        done
    fi
    if [ $rc = 0 ]; then ck $n ok "$(grep -v '^ *$' /tmp/$n.log | tail -n 1)"
    else ck $n fail "status $rc: $(tail -n 3 /tmp/$n.log | tr '\n' ' ')"; fi
}
pp_pair uc-pingpong ibv_uc_pingpong -d rsess0 -g "$gi" -n 20
pp_pair srq-pingpong ibv_srq_pingpong -d rsess0 -g "$gi" -n 20
pp_pair atomic-bw ib_atomic_bw -d rsess0 -x "$gi" -n 50 -F
b=$(badlog)
if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
EOS
read -r -d '' gs_user <<'EOS'
ifc=$RS_IFACE
a=$(ip -4 -o addr show dev "$ifc" 2>/dev/null | awk '{print $4}')
case $a in
10.0.2.*) if ping -c 3 -W 2 10.0.2.2 > /tmp/ping.log 2>&1; then
              ck dhcp-gateway ok "lease $a, $(grep 'packets transmitted' /tmp/ping.log)"
          else ck dhcp-gateway fail "lease $a, ping 10.0.2.2: $(tail -n 2 /tmp/ping.log | tr '\n' ' ')"; fi ;;
*) ck dhcp-gateway fail "no DHCP lease on '$ifc' (address '$a')" ;;
esac
# Unload and reload the module while ibv_rc_pingpong (a server waiting for
# its client) holds a context on the device.
gi=$(gid_of "$a" || echo 0)
ibv_rc_pingpong -d rsess0 -g "$gi" > /tmp/pp.log 2>&1 &
pp=$!
sleep 2
note=
if ! kill -0 $pp 2>/dev/null; then
    ck reload-with-context fail "ibv_rc_pingpong did not stay up: $(tr '\n' ' ' < /tmp/pp.log)"
else
    rmmod rdma_session > /tmp/rmmod.log 2>&1 &
    rm=$!
    for t in $(seq 1 40); do kill -0 $rm 2>/dev/null || break; sleep 0.5; done
    if kill -0 $rm 2>/dev/null; then
        note="rmmod waited for the process; killed it"
        kill -9 $pp 2>/dev/null
        for t in $(seq 1 40); do kill -0 $rm 2>/dev/null || break; sleep 0.5; done
    fi
    if kill -0 $rm 2>/dev/null; then
        ck reload-with-context fail "rmmod rdma_session still hangs 20 s after the process was killed"
    elif ! wait $rm; then
        ck reload-with-context fail "rmmod rdma_session failed: $(cat /tmp/rmmod.log)"
    else
        kill -0 $pp 2>/dev/null && { note="${note:+$note; }the process survived the unload"; kill -9 $pp; }
        wait $pp 2>/dev/null
        ppout=$(tail -n 2 /tmp/pp.log | tr '\n' ' ')
        if ! modprobe rdma_session; then
            ck reload-with-context fail "modprobe rdma_session after the unload failed"
        else
            ifc=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
            [ -z "$ifc" ] || ip link set "$ifc" up
            for t in $(seq 1 20); do ibv_devinfo -d rsess0 2>/dev/null | grep -q PORT_ACTIVE && break; sleep 0.5; done
            if ibv_devinfo -d rsess0 2>/dev/null | grep -q PORT_ACTIVE; then
                ck reload-with-context ok "${note:-the process ended with the unload}; pingpong said: $ppout"
            else ck reload-with-context fail "after the reload rsess0 is not ACTIVE: $(ibv_devinfo 2>&1 | tr '\n' ' ')"; fi
        fi
    fi
fi
b=$(badlog)
if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
EOS
if [ $built != 1 ]; then
    report guest-stack 0 1 "not run: the build failed"
else
    gp=0 gf=0 notcounted=()
    # A directory of its own: several test runs may share build/.
    gsdir=$(mktemp -d "$logs/guest-stack.XXXXXX")
    find "$logs" -mindepth 1 -maxdepth 1 -type d -name 'guest-stack.*' -printf '%T@ %p\n' |
        sort -rn | tail -n +4 | cut -d' ' -f2- | xargs -r rm -rf
    ln -sfn "${gsdir##*/}" "$logs/guest-stack.last"
    : > "$gsdir/guest-stack.log"
    gs_run()    # name, expected "vm:check ..." list, launch-vms arguments...
    {
        local name=$1 expect=$2 out="$gsdir/$1.log" lrc e vm c line res
        shift 2
        RS_NO_BUILD=1 RS_VMS_LOGDIR="$gsdir/vms-$name" \
            "$top/scripts/launch-vms.sh" -q "$@" > "$out" 2>&1
        lrc=$?
        cat "$out" >> "$gsdir/guest-stack.log"
        for e in $expect; do
            vm=${e%%:*} c=${e#*:}
            if ! gated_in "$c"; then
                notcounted+=("$c")
                continue
            fi
            line=$(grep -m1 "^\[vm$vm\] CHECK $c " "$out")
            res=$(echo "$line" | awk '{print $4}')
            if [ "$res" = ok ]; then
                gp=$((gp + 1))
            else
                gf=$((gf + 1))
                echo "not ok - $name vm$vm $c: ${line:-no result (see $out)}"
            fi
        done
        # the VMs themselves: ready, the command finished, QEMU powered off cleanly
        if [ "$lrc" = 0 ]; then gp=$((gp + 1)); else
            gf=$((gf + 1))
            echo "not ok - $name: $(grep -E '^launch-vms: (FAIL|vm[0-9]+: exit status [^0])' "$out" | tr '\n' ' ')"
            tail -n 5 "$out"
        fi
    }
    pair=''
    for v in 1 2; do
        for c in module-load netdev ping ibv-devices ibv-devinfo gid-rocev2 rdma-link rdma-resource perftest-start \
                 uc-pingpong srq-pingpong atomic-bw dmesg-clean; do
            pair+=" $v:$c"
        done
    done
    gs_run pair "$pair" -n 2 --timeout 300 --cmd "$gs_common
$gs_pair"
    gs_run user "1:module-load 1:dhcp-gateway 1:reload-with-context 1:dmesg-clean" \
        -n 1 --netdev-user --timeout 120 --cmd "$gs_common
$gs_user"
    note="$(( $(stamp) - t )) s"
    if [ ${#notcounted[@]} -gt 0 ]; then
        note+=", not counted until their parts land: $(printf '%s\n' "${notcounted[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//')"
    fi
    grep -h '^\[vm[0-9]*\] CHECK ' "$gsdir"/pair.log "$gsdir"/user.log > "$gsdir/checks"
    report guest-stack "$gp" "$gf" "$note"
fi

# --- rdma-matrix ---------------------------------------------------------------
# Unmodified RDMA programs between two VMs: two adapters, then an adapter (VM
# 1) and Linux soft-RoCE (VM 2: rdma_rxe on virtio-net), each program once
# with each side as the server; then, in the same soft-RoCE boot, RC programs
# with netem dropping, reordering and delaying the soft-RoCE VM's packets.
# One boot per pairing: both guests walk the same list of steps, meeting at
# a TCP barrier (busybox nc) before each one.  The adapter VM's traffic is
# recorded with --pcap and checked with tshark and scripts/roce-icrc.py.
# A check counts (passed or failed) only if it is listed in mx_on; the
# others run too and are reported as "not yet", in a tally of their own.
echo "== rdma-matrix: programs between adapter VMs, adapter and soft-RoCE, with netem loss; packet captures"
t=$(stamp)
mx_progs=${RS_MATRIX_PROGS:-"ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong
    ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw rping"}
mx_loss=${RS_MATRIX_LOSS-"ibv_rc_pingpong ib_write_bw ib_read_bw"}
# Counted checks: "program" (every pairing), "pairing/program" (pairings:
# adapter-adapter, adapter-rxe, adapter-rxe-netem) or one direction
# "pairing/program/server=vm1|vm2|adapter|rxe".  Add a program here when
# the engine implements what it needs.
mx_on="dmesg-clean dmesg-clean-all tc-netem tc-netem-off tc-netem-again
    tc-netem-off-again
    ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong
    ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat
    ib_atomic_bw rping"
# Exceptions to mx_on, in the same forms.  ibv_rc_pingpong under netem with
# the adapter as the server: the server sends the last message, and when
# netem drops soft-RoCE's ACK for it the client has already exited and
# destroyed its QP, so no retransmission is ever acknowledged and the
# adapter ends with "transport retry counter exceeded", as any RC
# requester must (rc_pingpong has no closing handshake; about 3% of runs).
mx_off="adapter-rxe-netem/ibv_rc_pingpong/server=adapter"
read -r -d '' mx_guest <<'EOS'
ck() { echo "CHECK $1 $2 ${3:-}"; }
dev=$(ls /sys/class/infiniband 2>/dev/null | head -n 1)
gid_of() {  # IPv4 address -> index of its RoCE v2 GID on $dev port 1
    h=$(echo "$1" | awk -F. '{ printf "%02x%02x:%02x%02x", $1, $2, $3, $4 }')
    for f in /sys/class/infiniband/$dev/ports/1/gids/*; do
        i=${f##*/}
        [ "$(cat "$f" 2>/dev/null)" = "0000:0000:0000:0000:0000:ffff:$h" ] || continue
        [ "$(cat /sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo "$i"; return 0; }
    done
    return 1
}
for t in $(seq 1 20); do gi=$(gid_of "$RS_IP") && break; sleep 0.5; done
echo "rdma-matrix: vm$RS_VM_INDEX device '$dev' GID index '$gi' peer $RS_PEER"
# barrier K SECONDS: VM 1 listens on port 30000+K, VM 2 connects.
barrier()
{
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout "$2" nc -l -p $((30000 + $1)) </dev/null >/dev/null 2>&1
    else
        end=$(( $(date +%s) + $2 ))
        until nc -w 2 "$RS_PEER" $((30000 + $1)) </dev/null >/dev/null 2>&1; do
            [ "$(date +%s)" -lt "$end" ] || return 1
            sleep 0.3
        done
    fi
}
# rping_data FILE PREFIX: the lines "PREFIXrdma-ping-N: <pattern>" are what
# rping -S 100 -C 10 sends (its pattern: letters from 'A' + N % 58, wrapping
# after 'z'), all 10 of them.
rping_data()
{
    awk -v pre="$2" -v S=100 -v C=10 '
        index($0, pre) == 1 {
            e = sprintf("rdma-ping-%d: ", n); c = 65 + n % 58
            while (length(e) < S - 1) { e = e sprintf("%c", c); c++; if (c > 122) c = 65 }
            if (substr($0, length(pre) + 1) != e) bad++
            n++
        }
        END { if (n == C && !bad) exit 0; printf "%d of %d lines \"%s...\", %d wrong", n, C, pre, bad; exit 1 }' "$1"
}
# run_for SECONDS PROGRAM ARGS...: output in $out, exit status in $rc
# ("timeout", or "stuck" for a process that SIGKILL does not end: it is left
# behind, not waited for).  A server also ends 5 s after $donef appears.
alive() { [ -e /proc/$1 ] && ! grep -q '^[0-9]* (.*) Z' /proc/$1/stat 2>/dev/null; }
run_for()
{
    local end=$(( $(date +%s) + $1 )) p fin=
    shift
    "$@" </dev/null >"$out" 2>&1 &
    p=$!
    while alive $p; do
        [ -z "$fin" ] && [ -n "$donef" ] && [ -e "$donef" ] && fin=$(( $(date +%s) + 5 ))
        if [ "$(date +%s)" -ge "$end" ] || { [ -n "$fin" ] && [ "$(date +%s)" -ge "$fin" ]; }; then
            kill $p 2>/dev/null; sleep 1; kill -9 $p 2>/dev/null; sleep 2
            if alive $p; then rc=stuck; echo "(pid $p: $(cat /proc/$p/wchan 2>/dev/null), state $(cut -d' ' -f3 /proc/$p/stat 2>/dev/null), not ended by SIGKILL)" >> "$out"
            else wait $p; rc=timeout; fi
            return
        fi
        sleep 0.2
    done
    wait $p; rc=$?
}
step()  # K ID SERVER-VM PROGRAM SECONDS
{
    k=$1 id=$2 srv=$3 prog=$4 tmo=$5 port=$((18000 + $1))
    # wait for the peer as long as its previous step may take
    [ -n "$gone" ] || barrier "$k" $(( (tmo > ptmo ? tmo : ptmo) + 60 )) || gone=$k
    ptmo=$tmo
    if [ -n "$gone" ]; then ck "$id" fail "the peer did not reach step $gone"; return; fi
    case $prog in
    ibv_rc_pingpong|ibv_uc_pingpong) a="-d $dev -g $gi -p $port -n 100 -s 4096 -c" ;;
    ibv_ud_pingpong) a="-d $dev -g $gi -p $port -n 100 -s 512 -c" ;;
    ibv_srq_pingpong) a="-d $dev -g $gi -p $port -n 100 -s 4096 -q 4 -c" ;;
    # -o 16: perftest 4.5 takes the peer's outstanding-read count for its
    # own QP; soft-RoCE's is 128, more than the adapter's 16
    # -u 18: a local ACK timeout of ~1 s instead of ~67 ms, as a TCG guest on
    # a loaded host can stall for longer than 7 x 67 ms
    ib_atomic_*) a="-d $dev -x $gi -p $port -F -n 200 -o 16 -u 18" ;;   # 8-byte operands
    ib_read_bw) a="-d $dev -x $gi -p $port -F -n 200 -s 4096 -o 16 -u 18" ;;
    ib_read_lat) a="-d $dev -x $gi -p $port -F -n 200 -s 8 -o 16 -u 18" ;;
    ib_*_bw) a="-d $dev -x $gi -p $port -F -n 200 -s 4096 -u 18" ;;
    ib_*_lat) a="-d $dev -x $gi -p $port -F -n 200 -s 8 -u 18" ;;
    rping) a="-v -V -S 100 -C 10 -p $port" ;;
    netem-on) # the soft-RoCE VM (VM 2) shapes its interface's egress
        if [ "$RS_VM_INDEX" = 2 ]; then
            if modprobe sch_netem && tc qdisc add dev "$RS_IFACE" root netem loss 3% reorder 5% delay 1ms; then
                ck "$id" ok "$(tc qdisc show dev "$RS_IFACE" | head -n 1)"
            else ck "$id" fail "tc qdisc add ... netem failed"; fi
        else ck "$id" ok; fi
        return ;;
    netem-off) # with netem's statistics: it did drop packets
        if [ "$RS_VM_INDEX" = 2 ]; then
            st=$(tc -s qdisc show dev "$RS_IFACE" | grep -m1 'Sent' | tr -s ' ')
            if tc qdisc del dev "$RS_IFACE" root; then ck "$id" ok "netem:$st"
            else ck "$id" fail "tc qdisc del failed"; fi
        else ck "$id" ok; fi
        return ;;
    dmesg)
        b=$(dmesg | grep -E 'WARNING|BUG|Oops|Call Trace' | head -n 3 | tr '\n' ' ')
        if [ -z "$b" ]; then ck "$id" ok; else ck "$id" fail "$b"; fi
        return ;;
    esac
    out=/tmp/mx.$k.out
    t0=$(date +%s)
    if [ "$RS_VM_INDEX" = "$srv" ]; then
        role=server
        [ "$prog" = rping ] && a="-s -a $RS_IP $a"
        # the client says when it is done: a server still waiting then
        # (a failed client) is stopped after a grace period
        donef=/tmp/mx.done.$k
        ( nc -l -p $((31000 + k)) </dev/null >/dev/null 2>&1 && touch $donef ) &
        run_for $((tmo + 30)) $prog $a
        nc -w 2 127.0.0.1 $((31000 + k)) </dev/null >/dev/null 2>&1
    else
        role=client
        [ "$prog" = rping ] && a="-c -a $RS_PEER $a" || a="$a $RS_PEER"
        donef=
        sleep 1
        # until the server listens: TCP (pingpong, perftest) or rdma_cm
        for try in 1 2 3 4 5 6 7 8; do
            run_for "$tmo" $prog $a
            [ $rc != 0 ] && [ $(( $(date +%s) - t0 )) -lt 20 ] &&
                grep -qE "Couldn't connect to|Unable to open file descriptor|RDMA_CM_EVENT_REJECTED" "$out" &&
                ! grep -q 'ping data' "$out" || break
            sleep 2
        done
        nc -w 2 "$RS_PEER" $((31000 + k)) </dev/null >/dev/null 2>&1
    fi
    why=
    if [ $rc != 0 ]; then
        case $rc in timeout|stuck) why=$rc ;; *) why="exit status $rc" ;; esac
    else
        case $prog in
        ibv_*) grep -q 'iters in' "$out" || why="no 'iters in' line" ;;
        ib_*) # the server of a read or atomic test measures nothing
            [ $role = server ] || grep -qE '^ *[0-9]+ +[0-9]+ +([0-9]|inf|-?nan)' "$out" || why="no result line" ;;
        rping) if [ $role = client ]; then why=$(rping_data "$out" 'ping data: ')
               else why=$(rping_data "$out" 'server ping data: '); fi ;;
        esac
    fi
    d="$role, $(( $(date +%s) - t0 )) s"
    case $prog in
    ibv_*) r=$(grep 'iters in' "$out" | head -n 1) ;;
    ib_*) r=$(grep -E '^ *[0-9]+ +[0-9]+ +([0-9]|inf|-?nan)' "$out" | head -n 1 | tr -s ' ') ;;
    *) r=$(grep -c 'ping data' "$out") ;;
    esac
    if [ -z "$why" ]; then
        ck "$id" ok "$d: $r"
    else
        ck "$id" fail "$d: $why: $(grep -v '^ *$' "$out" | tail -n 4 | tr '\n' ' ' | cut -c1-400)"
        sed 's/^/    /' "$out" | tail -n 25
    fi
}
k=0 ptmo=0 gone=
while read -r id srv prog tmo; do
    [ -n "$id" ] || continue
    k=$((k + 1))
    step "$k" "$id" "$srv" "$prog" "$tmo"
done <<STEPS
$MX_STEPS
STEPS
exit 0
EOS
if [ $built != 1 ]; then
    report rdma-matrix 0 1 "not run: the build failed"
else
    mp=0 mf=0 mny=0 mnyok=0
    mxdir=$(mktemp -d "$logs/rdma-matrix.XXXXXX")
    find "$logs" -mindepth 1 -maxdepth 1 -type d -name 'rdma-matrix.*' -printf '%T@ %p\n' |
        sort -rn | tail -n +4 | cut -d' ' -f2- | xargs -r rm -rf
    ln -sfn "${mxdir##*/}" "$logs/rdma-matrix.last"
    mx_counted()    # pairing/program[/server=NAME]
    {
        local e pp=${1%/server=*}
        for e in $mx_off; do
            [ "$e" = "$1" ] || [ "$e" = "$pp" ] || [ "$e" = "${pp#*/}" ] && return 1
        done
        for e in $mx_on; do
            [ "$e" = "$1" ] || [ "$e" = "$pp" ] || [ "$e" = "${pp#*/}" ] && return 0
        done
        return 1
    }
    # mx_result ID KEY: one check from the CHECK lines of both VMs; KEY is
    # what mx_on names
    mx_result()
    {
        local id=$1 key=$2 vm l res=ok detail=''
        for vm in 1 2; do
            l=$(grep -m1 -F "[vm$vm] CHECK $id " "$mxdir/$run.log")
            case $l in
            *" CHECK $id ok"*) detail+="${detail:+; }vm$vm ${l#*" CHECK $id ok "}" ;;
            *" CHECK $id fail"*) res=fail; detail+="${detail:+; }vm$vm ${l#*" CHECK $id fail "}" ;;
            *) res=fail; detail+="${detail:+; }vm$vm: no result" ;;
            esac
        done
        echo "$res $id: $detail" >> "$mxdir/checks"
        if mx_counted "$key"; then
            if [ $res = ok ]; then mp=$((mp + 1)); else
                mf=$((mf + 1)); echo "not ok - $id: $detail" | cut -c1-600; fi
        else
            mny=$((mny + 1))
            if [ $res = ok ]; then mnyok=$((mnyok + 1)); echo "not yet - $id: passed (not counted)"
            else echo "not yet - $id: $(echo "$detail" | cut -c1-300)"; fi
        fi
    }
    mx_run()    # run-name, steps, launch-vms arguments...
    {
        run=$1 steps=$2
        shift 2
        local ts=$(stamp) lrc id srv prog tmo
        RS_NO_BUILD=1 RS_VMS_LOGDIR="$mxdir/vms-$run" \
            "$top/scripts/launch-vms.sh" -q "$@" --cmd "MX_RUN=$run MX_STEPS='$steps'
$mx_guest" > "$mxdir/$run.log" 2>&1
        lrc=$?
        while read -r id srv prog tmo; do
            [ -n "$id" ] && mx_result "$id" "$id"
        done <<< "$steps"
        # both guests ran to the end and QEMU powered off cleanly; if the
        # counted part finished (its kernel log check), a later hang or
        # crash belongs to the "not yet" part
        l=$(grep -E '^launch-vms: (FAIL|vm[0-9]+: exit status [^0])' "$mxdir/$run.log" | tr '\n' ' ')
        if [ "$lrc" = 0 ]; then mp=$((mp + 1))
        elif [ "$(grep -cF " CHECK $run/dmesg-clean " "$mxdir/$run.log")" = 2 ]; then
            mny=$((mny + 1)); echo "not yet - $run/vms: $l"
        else
            mf=$((mf + 1)); echo "not ok - $run/vms: $l"
        fi
        echo "rdma-matrix: $run: $(( $(stamp) - ts )) s ($(grep -o 'boot to ready [0-9.]* s' "$mxdir/$run.log"))"
    }
    mx_steps()  # on|off pairing program... : both directions of the counted
    {           # programs (on) or of the others (off)
        local on=$1 p=$2 prog s name tmo
        shift 2
        for prog in "$@"; do
            for s in 1 2; do
                case $p in
                adapter-adapter) name=vm$s ;;
                *) name=$([ $s = 1 ] && echo adapter || echo rxe) ;;
                esac
                if mx_counted "$p/$prog/server=$name"; then tmo=90; else tmo=20; fi
                case $on$tmo in on90|off20) ;; *) continue ;; esac
                echo "$p/$prog/server=$name $s $prog $tmo"
            done
        done
    }
    # The counted checks first, then the kernel log check, then the others:
    # one that hangs (a process stuck in the kernel) only costs later
    # "not yet" results.
    aa=$(mx_steps on adapter-adapter $mx_progs
         echo "adapter-adapter/dmesg-clean 0 dmesg 10"
         mx_steps off adapter-adapter $mx_progs
         echo "adapter-adapter/dmesg-clean-all 0 dmesg 10")
    ar=$(mx_steps on adapter-rxe $mx_progs
         echo "adapter-rxe-netem/tc-netem 0 netem-on 10"
         mx_steps on adapter-rxe-netem $mx_loss
         echo "adapter-rxe-netem/tc-netem-off 0 netem-off 10"
         echo "adapter-rxe/dmesg-clean 0 dmesg 10"
         mx_steps off adapter-rxe $mx_progs
         if [ -n "$(mx_steps off adapter-rxe-netem $mx_loss)" ]; then
             echo "adapter-rxe-netem/tc-netem-again 0 netem-on 10"
             mx_steps off adapter-rxe-netem $mx_loss
             # Off again before the last barrier: VM 2 powers off right
             # after it, so a handshake segment netem drops there is never
             # sent again and VM 1 waits out the barrier (seen once).
             echo "adapter-rxe-netem/tc-netem-off-again 0 netem-off 10"
         fi
         echo "adapter-rxe/dmesg-clean-all 0 dmesg 10")
    mx_run adapter-adapter "$aa" -n 2 --timeout 900 \
        --pcap 1 "$mxdir/adapter-adapter.pcap"
    mx_run adapter-rxe "$ar" -n 2 --soft-roce-vm 2 --timeout 900 \
        --pcap 1 "$mxdir/adapter-rxe.pcap"
    # The captures (VM 1, the adapter): tshark (Debian's, installed with the
    # private apt configuration) decodes every UDP 4791 frame as InfiniBand
    # with a BTH, finds no malformed packet and no expert error;
    # scripts/roce-icrc.py checks every ICRC (tshark 4.0 shows the ICRC but
    # does not verify it) and must reject a copy with one flipped byte.
    mx_cap()    # check-name ok|fail detail
    {
        echo "$2 $1: $3" >> "$mxdir/checks"
        if [ "$2" = ok ]; then mp=$((mp + 1)); else mf=$((mf + 1)); echo "not ok - $1: $3"; fi
    }
    command -v tshark >/dev/null 2>&1 ||
        ( . "$top/scripts/apt-private.sh" && apt_need "" tshark ) > "$mxdir/tshark-install.log" 2>&1
    for c in adapter-adapter adapter-rxe; do
        f=$mxdir/$c.pcap
        if [ ! -s "$f" ]; then mx_cap "$c/capture" fail "no capture $f"; continue; fi
        if ! command -v tshark >/dev/null 2>&1; then
            mx_cap "$c/capture-tshark" fail "no tshark (see $mxdir/tshark-install.log)"
        else
            # The payloads are test data: no guessing of upper protocols in
            # them (RPC-over-RDMA calls perftest's 8-byte sends malformed).
            noheur=$(tshark -G heuristic-decodes 2>/dev/null |
                     awk '$1 == "infiniband.payload" && $2 != "ethertype" { printf " --disable-protocol %s", $2 }')
            tsh()   # display filter -> number of frames ("error" if tshark fails)
            {
                local o
                o=$(tshark -n $noheur -r "$f" -Y "$1" 2>>"$mxdir/tshark.err") || { echo error; return; }
                [ -z "$o" ] && echo 0 || echo "$o" | wc -l
            }
            nudp=$(tsh 'udp.port == 4791')
            nbth=$(tsh 'udp.port == 4791 && infiniband.bth')
            if [ "$nudp" != error ] && [ "$nudp" != 0 ] && [ "$nudp" = "$nbth" ]; then
                mx_cap "$c/capture-roce-decoded" ok "$nbth frames on UDP 4791, all with an InfiniBand BTH"
            else
                mx_cap "$c/capture-roce-decoded" fail "$nudp frames on UDP 4791, $nbth decoded with a BTH"
            fi
            nbad=$(tsh '_ws.malformed || _ws.expert.severity >= "error"')
            if [ "$nbad" = 0 ]; then
                mx_cap "$c/capture-no-malformed" ok "$(tsh '') frames, none malformed or with an expert error"
            else
                mx_cap "$c/capture-no-malformed" fail "$nbad frames: $(tshark -n $noheur -r "$f" -Y '_ws.malformed || _ws.expert.severity >= "error"' 2>/dev/null | head -n 3 | tr '\n' ' ')"
            fi
        fi
        if r=$("$py" "$top/scripts/roce-icrc.py" "$f" --corrupt "$mxdir/$c.corrupt.pcap" 2>&1); then
            mx_cap "$c/capture-icrc" ok "$(echo "$r" | head -n 1)"
        else
            mx_cap "$c/capture-icrc" fail "$(echo "$r" | head -n 4 | tr '\n' ' ')"
        fi
    done
    # the ICRC check can fail: the copy of a packet with one payload byte flipped
    if [ -s "$mxdir/adapter-rxe.corrupt.pcap" ] &&
       r=$("$py" "$top/scripts/roce-icrc.py" "$mxdir/adapter-rxe.corrupt.pcap" 2>&1); [ $? = 1 ] &&
       grep -q '^1 RoCEv2 packets, 1 bad ICRC' <<< "$r"; then
        mx_cap capture-icrc-selftest ok "a flipped byte is found: $(echo "$r" | sed -n 2p)"
    else
        mx_cap capture-icrc-selftest fail "roce-icrc.py did not reject the corrupted packet: ${r:-no corrupted copy}"
    fi
    note="$(( $(stamp) - t )) s; not yet: $mny checks"
    [ $mnyok = 0 ] || note+=", $mnyok of them passed"
    report rdma-matrix "$mp" "$mf" "$note"
    echo "rdma-matrix: not yet: $mny (not counted as passed or failed; list above and in $mxdir/checks)"
fi

# script_suite NAME SCRIPT [PATTERN]: a suite of its own script that prints
# TAP ("ok"/"not ok" lines); PATTERN: more of its lines to show.
script_suite()
{
    local name=$1 script=$2 show=${3:-} np nf
    if [ $built != 1 ]; then
        report "$name" 0 1 "not run: the build failed"
        return
    fi
    t=$(stamp)
    RS_NO_BUILD=1 "$top/scripts/$script" > "$logs/$name.log" 2>&1
    read -r np nf _ < <(tap_count "$logs/$name.log")
    grep -E "^not ok${show:+|$show}" "$logs/$name.log"
    [ $((np + nf)) -gt 0 ] || nf=1
    report "$name" "$np" "$nf" "$(( $(stamp) - t )) s, see $logs/$name.log"
}

# --- nvmf ----------------------------------------------------------------------
# scripts/test-nvmf.sh: a kernel RDMA consumer between two VMs, NVMe over
# Fabrics over RDMA (rdma_cm, fast-registration MRs, remote invalidation),
# data written and read back and compared with the target's RAM disk.
echo "== nvmf: scripts/test-nvmf.sh (NVMe-oF RDMA target VM and host VM)"
script_suite nvmf test-nvmf.sh

# --- resilience -----------------------------------------------------------------
# scripts/test-resilience.sh: a system reset, an rmmod and a function level
# reset under traffic between two VMs.
echo "== resilience: scripts/test-resilience.sh (system reset, rmmod and FLR during ib_write_bw)"
script_suite resilience test-resilience.sh

# --- migration ------------------------------------------------------------------
echo "== migration: scripts/test-migration.sh (VM 1 live-migrated three times under RC and UD traffic, once with a 30 s switchover; NVMe-oF target and host migrated)"
script_suite migration test-migration.sh '^migrate-vm:'

# --- bench-smoke ----------------------------------------------------------------
# The benchmark's own command, shortest: it keeps working (both pairs, jumbo
# frames, every perftest program, rping -V verified) without being a timed
# test.
echo "== bench-smoke: bench/run-bench.sh --smoke (adapter and soft-RoCE pairs)"
if [ $built != 1 ]; then
    report bench-smoke 0 1 "not run: the build failed"
else
    t=$(stamp)
    bdir="$logs/bench-smoke"
    rm -rf "$bdir"
    "$top/bench/run-bench.sh" --smoke --no-build --out "$bdir" > "$logs/bench-smoke.log" 2>&1
    brc=$?
    bp=0 bf=0
    if [ -s "$bdir/results.csv" ]; then
        # one check per benchmark: every metric of it has numbers on both
        read -r bp bf < <("$py" - "$bdir/results.csv" <<'EOF'
import csv, sys
ok = {}
for r in csv.DictReader(open(sys.argv[1])):
    good = r["adapter_status"] == "ok" and r["soft_roce_status"] == "ok"
    ok[r["benchmark"]] = ok.get(r["benchmark"], True) and good
    if not good:
        print("not ok - bench-smoke/%s %s: adapter %s, soft-RoCE %s"
              % (r["benchmark"], r["metric"], r["adapter_status"], r["soft_roce_status"]), file=sys.stderr)
print(sum(ok.values()), sum(1 for v in ok.values() if not v))
EOF
        )
    fi
    if [ "$brc" != 0 ] && [ "$bf" = 0 ]; then
        bf=1
        echo "not ok - bench-smoke: bench/run-bench.sh exit status $brc"
        tail -n 15 "$logs/bench-smoke.log" | sed 's/^/#   /'
    fi
    report bench-smoke "$bp" "$bf" "$(( $(stamp) - t )) s, see $logs/bench-smoke.log"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
