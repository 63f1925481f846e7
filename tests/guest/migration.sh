#!/bin/bash
# Live migration in the middle of RDMA traffic, with unmodified peers.
#
# 1. Short downtimes: two adapter VMs on the multicast segment
#    (scripts/launch-vms.sh -n 2); VM 1 is migrated to a new QEMU three
#    times (--migrate 1@5x3, tests/guest/rstest/migration.py) while it
#    serves rping -V (RDMA READ and WRITE of 4 KiB buffers, every ping verified
#    by rping itself), ib_read_bw, ibv_srq_pingpong -c and a UD
#    ib_send_bw to VM 2, and is VM 2's client of ib_send_bw and
#    ibv_rc_pingpong -c; the RDMA stall VM 2 saw at each switch is
#    measured from a capture of its netdev.  Before those, migrations
#    that must fail and leave VM 1 running with its traffic
#    (--migrate-drill): to a destination with another max-qps and to one
#    with another MAC (refused, the destination names the field), and one
#    cancelled during a held switchover.
# 2. A downtime longer than the peers' retry budget: VM 1 (adapter), VM 2
#    (adapter) and VM 3 (soft-RoCE, rdma_rxe); VM 1 serves ib_write_bw
#    to VM 2 (ACK timeout 14: a retry budget of about 3 s; rdma_cm would
#    set 18, whose budget with this adapter's backoff exceeds 30 s) for
#    20 s of VM 2's time (VM 2 is still writing when VM 1 stops, then
#    waits for its last writes) and ibv_rc_pingpong -c (timeout 14), and
#    rping -V (data verified) to VM 3, and is migrated once with the
#    switchover held RS_MIGRATION_HOLD seconds (--migrate-hold): the
#    source's RNR NAKs keep the peers waiting.  VM 3's traffic is captured
#    (--pcap): the capture must show VM 1's RNR NAKs with the longest timer
#    during the hold and the destination's prompt (shortest timer) after
#    it.
# 3. perftest: VM 1, migrated twice, is the client of ib_write_bw and
#    ib_read_bw and the server of ib_send_bw with a soft-RoCE VM, then the
#    other way round, then the first way with an adapter VM (part 1 has
#    the other way with an adapter, part 2 ib_write_bw).
# 4. NVMe over Fabrics over RDMA (tests/guest/nvmf.py --migrate): VM 1
#    the target, VM 2 the host, which verifies I/O round after round while
#    VM 1 and then VM 2 are migrated.
# Checks: each migration completed with the destination running (its
# figures are printed), every program passed on both sides, VM 1's driver
# got the device's migration notice after each migration, the kernel logs
# are clean, every QEMU powered off.  Prints TAP and
# "migration: N passed, N failed"; exits 0 if every check passed.
#
# Usage: tests/guest/migration.sh [extra QEMU arguments for every VM,
#   e.g. -trace 'rdma_session_migration*']
# Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1,
#   RS_MIGRATIONS (part 1's migrations, default 3; 0 skips part 1),
#   RS_RPING_COUNT (default 60000), RS_PINGPONG_COUNT (default 30000),
#   RS_STALL_MAX_MS (part 1's bound on the stall, default 3000),
#   RS_MIGRATION_HOLD (seconds, default 30; 0 skips part 2),
#   RS_MIGRATION_RXE=0 (skips part 3), RS_MIGRATION_NVMF=0 (skips part 4).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/guest/suite-lib.sh"
: "${RS_BUILD:=$top/build}"
export RS_BUILD
n_mig=${RS_MIGRATIONS:-3}
count=${RS_RPING_COUNT:-60000}
: "${RS_PINGPONG_COUNT:=30000}"
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
    grep '^\[launch-vms\] migrate-vm:' "$1" | sed 's/^\[launch-vms\] /# /'
    for k in $(seq 1 "$3"); do
        line=$(grep -m1 "migrate-vm: vm$2 #$k: " "$1")
        if [ -n "$line" ]; then ck ok "$4migration-$k" "(${line#*: })"
        else ck fail "$4migration-$k" "$(grep -m1 'migrate-vm: FAIL' "$1")"; fi
    done
}

# stall_check OUT VM N PREFIX MAX: the peer's RDMA stall was measured at
# each of VM's N switches and none lasted MAX ms.
stall_check()
{
    local sum worst
    sum=$(grep -m1 "migrate-vm: vm$2: RDMA stall over $3 migrations" "$1")
    worst=$(sed -n 's/.*worst \([0-9]*\) ms.*/\1/p' <<< "$sum")
    if [ -n "$worst" ] && [ "$worst" -lt "$5" ]; then
        ck ok "${4}rdma-stall" "(${sum#*vm$2: }, at most $5 ms expected)"
    else
        ck fail "${4}rdma-stall" "${sum:-no stall figures for $3 migrations}, at most $5 ms expected"
    fi
}

# Guest-side helpers: the driver hears of each migration (MIGRATION_NOTICE)
# and announces eth0; kernel log; a program's verdict from its exit status
# and output (rping says what went wrong but may still exit 0).
notice() { echo "m=\$(dmesg | grep -c 'live migration: announcing'); [ \$m = $1 ] && echo \"CHECK migration-notice ok \$m\" || echo \"CHECK migration-notice fail \$m of $1\""; }
clean='b=$(dmesg | grep -E "WARNING|BUG|Oops|Call Trace" | head -n 3 | tr "\n" " "); [ -z "$b" ] && echo "CHECK dmesg-clean ok" || echo "CHECK dmesg-clean fail $b"'
# A client that came before its server listened (rdma_cm rejects, TCP
# refuses) runs again: a slow start under load is not what is tested.
again='retry() { local o=$1 i rc; shift; for i in 1 2 3 4 5 6 7 8 9 10; do "$@" > $o 2>&1; rc=$?; grep -qE "REJECTED|[Cc]ouldn.t connect|[Cc]onnection refused" $o || return $rc; sleep 1; done; return $rc; }'
# v NAME STATUS LOG [MIGRATIONS]: on the migrated VM, the program must also
# have lived through at least MIGRATIONS migrations (it says how many).
verdict='mig() { dmesg | grep -c "live migration: announcing"; }
v() { m=$(mig); if [ "$2" = 0 ] && ! grep -qiE "mismatch|fail|error|exceeded" "$3" && [ "$m" -ge "${4:-0}" ]; then echo "CHECK $1 ok ${4:+across $m migrations: }$(grep -E "iters in|^ *65536 |^ *1024 " "$3" | tail -n 1)"; else echo "CHECK $1 fail exit status $2${4:+, $m of $4 migrations}: $(grep -iE "mismatch|fail|error|exceeded" "$3" | head -n 2 | tr "\n" " ")"; fi; }'
# gid_of ADDR: the index of ADDR's RoCE v2 GID (ibv_*_pingpong need it)
gid='for t in $(seq 1 20); do dev=$(ls /sys/class/infiniband 2>/dev/null | head -n 1); [ -n "$dev" ] && break; sleep 0.5; done
gid_of() { h=$(echo "$1" | awk -F. "{ printf \"%02x%02x:%02x%02x\", \$1, \$2, \$3, \$4 }"); for f in /sys/class/infiniband/$dev/ports/1/gids/*; do i=${f##*/}; [ "$(cat $f 2>/dev/null)" = "0000:0000:0000:0000:0000:ffff:$h" ] && [ "$(cat /sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo $i; return 0; }; done; return 1; }
for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done'

# --- 1. three short migrations under RC and UD traffic ------------------------------
# VM 1 is the migrated VM; it serves rping -V, ib_read_bw, ibv_srq_pingpong
# and a UD ib_send_bw, and is the client of ib_send_bw and ibv_rc_pingpong.
# The perftest runs last 30 s of guest time (they outlast the three
# migrations, which the check asserts); the pingpongs run a fixed count
# (at least one migration).
pp="-d \$dev -g \$gi -n $RS_PINGPONG_COUNT -s 1024 -c"
if [ "$n_mig" != 0 ]; then
out=$logdir/launch.log
RS_VMS_LOGDIR=$logdir/vms "$top/scripts/launch-vms.sh" -q ${RS_NO_BUILD:+--no-build} \
    -n 2 --timeout 300 --migrate "1@5x$n_mig" --migrate-drill \
    --vm-cmd 1 "$verdict; $again; $gid
rping -s -V -C $count -S 4096 -a \$RS_IP > /tmp/rp 2>&1 & p=\$!
ib_read_bw -p 18601 -F -D 30 -s 65536 > /tmp/rb 2>&1 & r=\$!
ibv_srq_pingpong -p 18602 $pp > /tmp/sp 2>&1 & s=\$!
ib_send_bw -c UD -p 18603 -F -D 30 -s 1024 > /tmp/ub 2>&1 & u=\$!
sleep 2
retry /tmp/sb ib_send_bw -p 18604 -F -D 30 -s 65536 \$RS_PEER & b=\$!
retry /tmp/cp ibv_rc_pingpong -p 18605 $pp \$RS_PEER & c=\$!
wait \$b; v send-bw-client \$? /tmp/sb $n_mig
wait \$c; v rc-pingpong-client \$? /tmp/cp 1
wait \$r; v read-bw-server \$? /tmp/rb $n_mig
wait \$s; v srq-pingpong-server \$? /tmp/sp 1
wait \$u; v ud-send-bw-server \$? /tmp/ub $n_mig
wait \$p; v rping-server \$? /tmp/rp $n_mig
$clean; $(notice "$n_mig")" \
    --vm-cmd 2 "$verdict; $again; $gid
ib_send_bw -p 18604 -F -D 30 -s 65536 > /tmp/sb 2>&1 & b=\$!
ibv_rc_pingpong -p 18605 $pp > /tmp/cp 2>&1 & c=\$!
sleep 1
retry /tmp/rp rping -c -V -C $count -S 4096 -a \$RS_PEER & p=\$!
retry /tmp/rb ib_read_bw -p 18601 -F -D 30 -s 65536 \$RS_PEER & r=\$!
retry /tmp/sp ibv_srq_pingpong -p 18602 $pp \$RS_PEER & s=\$!
retry /tmp/ub ib_send_bw -c UD -p 18603 -F -D 30 -s 1024 \$RS_PEER & u=\$!
wait \$b; v send-bw-server \$? /tmp/sb
wait \$c; v rc-pingpong-server \$? /tmp/cp
wait \$r; v read-bw-client \$? /tmp/rb
wait \$s; v srq-pingpong-client \$? /tmp/sp
wait \$u; v ud-send-bw-client \$? /tmp/ub
wait \$p; v rping-client \$? /tmp/rp
$clean" \
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
# Under TCG on 2 busy cores; the goal is a median under 300 ms.
stall_check "$out" 1 "$n_mig" "" "${RS_STALL_MAX_MS:-3000}"
vm_checks "$out" 1:send-bw-client 1:rc-pingpong-client 1:read-bw-server \
    1:srq-pingpong-server 1:ud-send-bw-server 1:rping-server \
    1:dmesg-clean 1:migration-notice \
    2:send-bw-server 2:rc-pingpong-server 2:read-bw-client \
    2:srq-pingpong-client 2:ud-send-bw-client 2:rping-client 2:dmesg-clean
launcher_check $lrc
fi

# --- 2. one migration with the switchover held ------------------------------------
if [ "$hold" != 0 ]; then
    out=$logdir/hold.log
    pcap=$logdir/hold-vm3.pcap
    RS_VMS_LOGDIR=$logdir/vms-hold "$top/scripts/launch-vms.sh" -q --no-build \
        -n 3 --soft-roce-vm 3 --timeout $((hold + 240)) --migrate 1@5 \
        --migrate-hold "$hold" --pcap 3 "$pcap" \
        --vm-cmd 1 "$verdict; $gid
ib_write_bw -x 1 -u 14 -p 18515 -F -D 20 -s 65536 > /tmp/wa 2>&1 & a=\$!
rping -s -V -C 20000 -S 4096 -a \$RS_IP > /tmp/rp 2>&1 & p=\$!
ibv_rc_pingpong -p 18600 $pp > /tmp/cp 2>&1 & c=\$!
wait \$a; v write-bw-server-adapter \$? /tmp/wa
wait \$p; v rping-server \$? /tmp/rp
wait \$c; v rc-pingpong-server \$? /tmp/cp 1
$clean; $(notice 1)" \
        --vm-cmd 2 "$verdict; $again; $gid; sleep 1
retry /tmp/cp ibv_rc_pingpong -p 18600 $pp 10.77.0.1 & c=\$!
retry /tmp/wa ib_write_bw -x 1 -u 14 -p 18515 -F -D 20 -s 65536 10.77.0.1; v write-bw-client \$? /tmp/wa
wait \$c; v rc-pingpong-client \$? /tmp/cp; $clean" \
        --vm-cmd 3 "$verdict; $again; sleep 1
retry /tmp/rp rping -c -V -C 20000 -S 4096 -a 10.77.0.1; v rping-client \$? /tmp/rp; $clean" \
        ${1:+-- "$@"} > "$out" 2>&1
    lrc=$?
    migrations "$out" 1 1 "held-"
    stall_check "$out" 1 1 held- $(( (hold + 3) * 1000 ))
    vm_checks "$out" 1:write-bw-server-adapter \
        1:rping-server 1:rc-pingpong-server 1:dmesg-clean 1:migration-notice \
        2:write-bw-client 2:rc-pingpong-client 2:dmesg-clean \
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
# --- 3. perftest, the migrated VM client and server ------------------------------
# perf_guest VM CLIENTS SERVERS: VM's command, client of the CLIENTS and
# server of the SERVERS (write, read, send: ib_<x>_bw); on VM 1 each must
# have lived through both migrations.
perf_guest()
{
    local x m=''
    [ "$1" = 1 ] && m=2
    printf '%s\n' "$verdict; $again; $gid"
    for x in $3; do
        printf 'ib_%s_bw -p %s %s > /tmp/%s 2>&1 & s_%s=$!\n' "$x" "$(perf_port "$x")" "$(perf_args "$x")" "$x" "$x"
    done
    echo 'sleep 2'
    for x in $2; do
        printf 'retry /tmp/%s ib_%s_bw -p %s %s $RS_PEER & c_%s=$!\n' "$x" "$x" "$(perf_port "$x")" "$(perf_args "$x")" "$x"
    done
    for x in $2; do printf 'wait $c_%s; v %s-bw-client $? /tmp/%s %s\n' "$x" "$x" "$x" "$m"; done
    for x in $3; do printf 'wait $s_%s; v %s-bw-server $? /tmp/%s %s\n' "$x" "$x" "$x" "$m"; done
    echo "$clean"
    [ "$1" = 1 ] && notice 2
}
perf_port() { case $1 in write) echo 18611 ;; read) echo 18612 ;; send) echo 18613 ;; esac; }
perf_args() { echo '-d $dev -x $gi -F -D 25 -s 65536 -u 18'"$([ "$1" = read ] && echo ' -o 16')"; }
# perf_part PREFIX LAUNCH-OPTIONS VM1-CLIENTS VM1-SERVERS
perf_part()
{
    local pre=$1 opts=$2 c1=$3 s1=$4 x want1='' want2=''
    out=$logdir/${pre%-}.log
    # shellcheck disable=SC2086
    RS_VMS_LOGDIR=$logdir/vms-${pre%-} "$top/scripts/launch-vms.sh" -q --no-build \
        -n 2 $opts --timeout 240 --migrate 1@5x2 \
        --vm-cmd 1 "$(perf_guest 1 "$c1" "$s1")" \
        --vm-cmd 2 "$(perf_guest 2 "$s1" "$c1")" \
        ${5:+-- "${@:5}"} > "$out" 2>&1
    lrc=$?
    for x in $c1; do want1+=" 1:$x-bw-client"; want2+=" 2:$x-bw-server"; done
    for x in $s1; do want1+=" 1:$x-bw-server"; want2+=" 2:$x-bw-client"; done
    migrations "$out" 1 2 "$pre"
    stall_check "$out" 1 2 "$pre" "${RS_STALL_MAX_MS:-3000}"
    # shellcheck disable=SC2086
    vm_checks "$out" $want1 1:dmesg-clean 1:migration-notice $want2 2:dmesg-clean
    launcher_check $lrc
}
if [ "${RS_MIGRATION_RXE:-1}" != 0 ]; then
    perf_part rxe- "--soft-roce-vm 2" "write read" "send" "$@"
    perf_part rxe-rev- "--soft-roce-vm 2" "send" "write read" "$@"
    perf_part adapter- "" "write read" "send" "$@"
fi

# --- 4. NVMe-oF while the target and then the host move -------------------------
if [ "${RS_MIGRATION_NVMF:-1}" != 0 ]; then
    RS_VMS_LOGDIR=$logdir/vms-nvmf "$top/tests/guest/nvmf.py" --migrate \
        > "$logdir/nvmf.log" 2>&1
    grep -E '^(ok|not ok) - |^# migrate-vm: ' "$logdir/nvmf.log" |
        sed -E 's/^(ok|not ok) - /\1 - nvmf-/'
    np=$(grep -c '^ok - ' "$logdir/nvmf.log")
    nf=$(grep -c '^not ok - ' "$logdir/nvmf.log")
    [ $((np + nf)) -gt 0 ] || { nf=1; echo "not ok - nvmf: no result (see $logdir/nvmf.log)"; }
    pass=$((pass + np)) fail=$((fail + nf))
fi
echo "1..$((pass + fail))"
echo "# migration: $pass passed, $fail failed ($(( $(date +%s) - t0 )) s, logs in $logdir)"
[ $fail = 0 ]
