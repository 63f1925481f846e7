#!/bin/bash
# Live migration in the middle of RDMA traffic, with unmodified peers.
#
# 1. Short downtimes: two adapter VMs on the multicast segment
#    (scripts/launch-vms.sh -n 2); VM 1 serves rping -V (RDMA READ and
#    WRITE of 4 KiB buffers, every ping verified by rping itself) to VM 2
#    and is migrated to a new QEMU three times while the stream runs
#    (--migrate 1@5x3, scripts/migrate-vm.py).  Before those, migrations
#    that must fail and leave VM 1 running with its traffic
#    (--migrate-drill): to a destination with another max-qps and to one
#    with another MAC (refused, the destination names the field), and one
#    cancelled during a held switchover.
# 2. A downtime longer than the peers' retry budget: VM 1 (adapter), VM 2
#    (adapter) and VM 3 (soft-RoCE, rdma_rxe); VM 1 serves ib_write_bw
#    to VM 2 (ACK timeout 14: a retry budget of about 3 s; rdma_cm would
#    set 18, whose budget with this adapter's backoff exceeds 30 s) for
#    20 s of VM 2's time (VM 2 is still writing when VM 1 stops, then
#    waits for its last writes), and
#    rping -V (data verified) to VM 3, and is migrated once with the
#    switchover held RS_MIGRATION_HOLD seconds (--migrate-hold): the
#    source's RNR NAKs keep the peers waiting.  VM 3's traffic is captured
#    (--pcap): the capture must show VM 1's RNR NAKs with the longest timer
#    during the hold and the destination's prompt (shortest timer) after
#    it.
# Checks: each migration completed with the destination running (its
# figures are printed), every program passed on both sides, VM 1's driver
# got the device's migration notice after each migration, the kernel logs
# are clean, every QEMU powered off.  Prints TAP and
# "migration: N passed, N failed"; exits 0 if every check passed.
#
# Usage: scripts/test-migration.sh [extra QEMU arguments for every VM,
#   e.g. -trace 'rdma_session_migration*']
# Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1,
#   RS_MIGRATIONS (part 1's migrations, default 3; 0 skips part 1),
#   RS_RPING_COUNT (default 60000), RS_MIGRATION_HOLD (seconds, default
#   30; 0 skips part 2).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/vm-checks.sh"
: "${RS_BUILD:=$top/build}"
export RS_BUILD
n_mig=${RS_MIGRATIONS:-3}
count=${RS_RPING_COUNT:-60000}
hold=${RS_MIGRATION_HOLD:-30}
logdir=$(mktemp -d "$RS_BUILD/test-logs/migration.XXXXXX" 2>/dev/null) ||
    { mkdir -p "$RS_BUILD/test-logs"; logdir=$(mktemp -d "$RS_BUILD/test-logs/migration.XXXXXX"); }
ln -sfn "${logdir##*/}" "$RS_BUILD/test-logs/migration.last"
t0=$(date +%s)
pass=0 fail=0
ck() {  # ok|fail NAME DETAIL
    if [ "$1" = ok ]; then pass=$((pass + 1)); echo "ok - $2 ${3:-}"
    else fail=$((fail + 1)); echo "not ok - $2 ${3:-}"; fi
}
# migrations OUT VM N: the figures of VM's N migrations in OUT
migrations()
{
    local k line
    grep '^\[launch-vms\] migrate-vm:' "$1" | sed 's/^\[launch-vms\] //'
    for k in $(seq 1 "$3"); do
        line=$(grep -m1 "migrate-vm: vm$2 #$k: " "$1")
        if [ -n "$line" ]; then ck ok "$4migration-$k" "(${line#*: })"
        else ck fail "$4migration-$k" "$(grep -m1 'migrate-vm: FAIL' "$1")"; fi
    done
}

# Guest-side helpers: the driver hears of each migration (MIGRATION_NOTICE)
# and announces eth0; kernel log; a program's verdict from its exit status
# and output (rping says what went wrong but may still exit 0).
notice() { echo "m=\$(dmesg | grep -c 'live migration: announcing'); [ \$m = $1 ] && echo \"CHECK migration-notice ok \$m\" || echo \"CHECK migration-notice fail \$m of $1\""; }
clean='b=$(dmesg | grep -E "WARNING|BUG|Oops|Call Trace" | head -n 3 | tr "\n" " "); [ -z "$b" ] && echo "CHECK dmesg-clean ok" || echo "CHECK dmesg-clean fail $b"'
# A client that came before its server listened (rdma_cm rejects, TCP
# refuses) runs again: a slow start under load is not what is tested.
again='retry() { local o=$1 i rc; shift; for i in 1 2 3 4 5 6 7 8 9 10; do "$@" > $o 2>&1; rc=$?; grep -qE "REJECTED|[Cc]ouldn.t connect|[Cc]onnection refused" $o || return $rc; sleep 1; done; return $rc; }'
verdict='v() { if [ "$2" = 0 ] && ! grep -qiE "mismatch|fail|error|exceeded" "$3"; then echo "CHECK $1 ok $(grep -E "iters in|^ *65536 " "$3" | tail -n 1)"; else echo "CHECK $1 fail exit status $2: $(grep -iE "mismatch|fail|error|exceeded" "$3" | head -n 2 | tr "\n" " ")"; fi; }'

# --- 1. three short migrations under rping -V --------------------------------------
if [ "$n_mig" != 0 ]; then
out=$logdir/launch.log
RS_VMS_LOGDIR=$logdir/vms "$top/scripts/launch-vms.sh" -q ${RS_NO_BUILD:+--no-build} \
    -n 2 --timeout 300 --migrate "1@5x$n_mig" --migrate-drill \
    --vm-cmd 1 "$verdict; rping -s -V -C $count -S 4096 -a \$RS_IP > /tmp/rp 2>&1; v rping-server \$? /tmp/rp; $clean; $(notice "$n_mig")" \
    --vm-cmd 2 "$verdict; $again; sleep 1; retry /tmp/rp rping -c -V -C $count -S 4096 -a \$RS_PEER; v rping-client \$? /tmp/rp; $clean" \
    ${1:+-- "$@"} > "$out" 2>&1
lrc=$?
for d in "max-qps differs:max_qps" "mac differs:mac" "cancelled:cancelled"; do
    what=${d%%:*}
    line=$(grep -m1 "migrate-vm: vm1 drill: $what: the source runs on" "$out")
    if [ -n "$line" ] && grep -q "${d#*:}" <<< "$line"; then
        ck ok "drill-${what// /-}" "(${line#*drill: })"
    else
        ck fail "drill-${what// /-}" "$(grep -m1 'migrate-vm: FAIL' "$out")"
    fi
done
migrations "$out" 1 "$n_mig" ""
vm_checks "$out" 1:rping-server 1:dmesg-clean 1:migration-notice \
    2:rping-client 2:dmesg-clean
launcher_check $lrc
fi

# --- 2. one migration with the switchover held ------------------------------------
if [ "$hold" != 0 ]; then
    out=$logdir/hold.log
    pcap=$logdir/hold-vm3.pcap
    RS_VMS_LOGDIR=$logdir/vms-hold "$top/scripts/launch-vms.sh" -q --no-build \
        -n 3 --soft-roce-vm 3 --timeout $((hold + 240)) --migrate 1@5 \
        --migrate-hold "$hold" --pcap 3 "$pcap" \
        --vm-cmd 1 "$verdict
ib_write_bw -x 1 -u 14 -p 18515 -F -D 20 -s 65536 > /tmp/wa 2>&1 & a=\$!
rping -s -V -C 20000 -S 4096 -a \$RS_IP > /tmp/rp 2>&1 & p=\$!
wait \$a; v write-bw-server-adapter \$? /tmp/wa
wait \$p; v rping-server \$? /tmp/rp
$clean; $(notice 1)" \
        --vm-cmd 2 "$verdict; $again; sleep 1
retry /tmp/wa ib_write_bw -x 1 -u 14 -p 18515 -F -D 20 -s 65536 10.77.0.1; v write-bw-client \$? /tmp/wa; $clean" \
        --vm-cmd 3 "$verdict; $again; sleep 1
retry /tmp/rp rping -c -V -C 20000 -S 4096 -a 10.77.0.1; v rping-client \$? /tmp/rp; $clean" \
        ${1:+-- "$@"} > "$out" 2>&1
    lrc=$?
    migrations "$out" 1 1 "held-"
    vm_checks "$out" 1:write-bw-server-adapter \
        1:rping-server 1:dmesg-clean 1:migration-notice \
        2:write-bw-client 2:dmesg-clean \
        3:rping-client 3:dmesg-clean
    launcher_check $lrc
    # The hold on the wire, as the soft-RoCE VM received it: RNR NAKs
    # (AETH syndrome 001 + timer) from VM 1, timer 0 (655.36 ms) every
    # 300 ms of the hold, then timer 1 (0.01 ms) from the destination.
    if [ ! -s "$pcap" ] || ! command -v tshark >/dev/null 2>&1; then
        ck fail held-capture "no capture $pcap or no tshark"
    else
        nak() { tshark -n -r "$pcap" -Y "ip.src == 10.77.0.1 && ip.dst == 10.77.0.3 && infiniband.aeth.syndrome == $1" 2>/dev/null | wc -l; }
        h=$(nak 0x20) p=$(nak 0x21) want=$(( hold * 10 / 3 / 2 ))
        if [ "$h" -ge "$want" ] && [ "$p" -ge 1 ]; then
            ck ok held-capture "$h RNR NAKs with timer 655.36 ms during the hold (at least $want expected), $p with 0.01 ms after it"
        else
            ck fail held-capture "$h RNR NAKs with timer 655.36 ms (at least $want expected), $p with 0.01 ms"
        fi
    fi
fi
echo "migration: $pass passed, $fail failed ($(( $(date +%s) - t0 )) s, logs in $logdir)"
[ $fail = 0 ]
