#!/bin/bash
# The project's test command.  Runs, in order:
#   build  scripts/build-qemu.sh qemu-system-x86_64 tests/qtest/qos-test
#   abi    the rdma-session-abi meson project (meson.build, tests/abi)
#   qtest  the device's qtests: every qos-test path naming rdma-session
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

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
