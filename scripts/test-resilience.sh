#!/bin/bash
# Resets and unloads in the middle of RDMA traffic, between two VMs with the
# adapter (scripts/launch-vms.sh -n 2), in one boot:
#   1. system reset: VM 2 serves ib_write_bw (-D 30), VM 1 is the client.
#      Once VM 1's QP is in RTS and traffic runs, this script resets VM 2
#      through QMP (set-action reboot=reset, then system_reset: the
#      launcher's -no-reboot would otherwise end QEMU).  VM 1's ib_write_bw
#      must end with "Failed status 12" (transport retry counter exceeded)
#      and a non-zero exit status, and VM 1's kernel log must stay clean;
#      VM 2's QEMU must keep running and its guest boot again to "ready";
#      this script then sends it its second command over the control port.
#   2. VM 1 and the rebooted VM 2 run ibv_rc_pingpong -c (data checked).
#   3. module unload: VM 1 serves ib_write_bw (-D 30), VM 2 is the client;
#      while traffic runs VM 1 does rmmod rdma_session, which must succeed
#      (the driver disassociates the server's context); VM 2's ib_write_bw
#      must end with "Failed status 12"; modprobe rdma_session in VM 1
#      brings rsess0 back ACTIVE with its RoCE v2 GID.
#   4. VM 1 and VM 2 run ib_write_bw again, the same pair of VMs.
#   5. function level reset: VM 1 serves ib_write_bw again and, while
#      traffic runs, resets its adapter through sysfs ("reset": FLR); the
#      driver goes down before and comes back after it, rsess0 must be
#      ACTIVE again; VM 2's ib_write_bw must end with "Failed status 12".
#   6. VM 1 and VM 2 run ib_write_bw again after the FLR.
#   At the end both kernel logs must have no WARNING/BUG/Oops/call trace/
#   hung task, and both QEMUs must power off cleanly.
# The guests print "CHECK <name> ok|fail <detail>" lines; this script adds
# its own (the reset, QEMU alive, the reboot) and prints all of them as TAP
# ("ok"/"not ok") and "resilience: N passed, N failed".  Exits 0 if every
# check passed.
#
# Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1
#   (do not build QEMU first), RS_VMS_LOGDIR (default: a new directory
#   under $RS_BUILD/test-logs/resilience.*).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/vm-checks.sh"
: "${RS_BUILD:=$top/build}"
export RS_BUILD

read -r -d '' common <<'EOS'
ck() { echo "CHECK $1 $2 ${3:-} (uptime $(cut -d' ' -f1 /proc/uptime) s)"; }
badlog() { dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|blocked for more than' | head -n 3 | tr '\n' ' '; }
gid_of() {  # IPv4 address -> index of its RoCE v2 GID on rsess0 port 1
    h=$(echo "$1" | awk -F. '{ printf "%02x%02x:%02x%02x", $1, $2, $3, $4 }')
    for f in /sys/class/infiniband/rsess0/ports/1/gids/*; do
        i=${f##*/}
        [ "$(cat "$f" 2>/dev/null)" = "0000:0000:0000:0000:0000:ffff:$h" ] || continue
        [ "$(cat /sys/class/infiniband/rsess0/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo "$i"; return 0; }
    done
    return 1
}
# passed NAME LOG: check NAME from the program's status $rc and its LOG
passed() {
    if [ $rc = 0 ]; then ck "$1" ok "$(grep -A1 '#bytes' "$2" | tail -n 1)$(grep 'iters in' "$2" | tail -n 1)"
    else ck "$1" fail "status $rc: $(tail -n 3 "$2" | tr '\n' ' ')"; fi
}
wait_gid() { for t in $(seq 1 40); do gi=$(gid_of "$RS_IP") && return 0; sleep 0.5; done; return 1; }
# port_back: after the driver came back (modprobe, FLR), give the interface
# its address again; true once rsess0 is ACTIVE with its RoCE v2 GID
port_back() {
    for t in $(seq 1 20); do [ -e "/sys/class/net/$RS_IFACE" ] && break; sleep 0.5; done
    ip addr add "$RS_IP/24" dev "$RS_IFACE" 2>/dev/null
    ip link set "$RS_IFACE" up
    for t in $(seq 1 40); do ibv_devinfo -d rsess0 2>/dev/null | grep -q PORT_ACTIVE && break; sleep 0.5; done
    ibv_devinfo -d rsess0 2>/dev/null | grep -q PORT_ACTIVE && wait_gid
}
port_state() { ibv_devinfo -d rsess0 2>&1 | grep -E 'state|No IB' | tr '\n' ' '; }
alive() { [ -e /proc/$1 ] && ! grep -q '^[0-9]* (.*) Z' /proc/$1/stat 2>/dev/null; }
# wait_end PID SECONDS: wait for PID, killing it after SECONDS; rc = status
wait_end() {
    for t in $(seq 1 $((2 * $2))); do alive $1 || break; sleep 0.5; done
    alive $1 && { kill -9 $1 2>/dev/null; sleep 1; }
    wait $1; rc=$?
}
# client LOG SECONDS PROGRAM ARGS...: run a client against $RS_PEER, again
# while the server does not listen yet (up to SECONDS); rc = its status
client() {
    log=$1 end=$(( $(date +%s) + $2 )); shift 2
    while :; do
        timeout 120 "$@" "$RS_PEER" > "$log" 2>&1; rc=$?
        grep -qiE "couldn't connect|unable to connect|connection refused" "$log" || break
        [ "$(date +%s)" -lt "$end" ] || break
        sleep 1
    done
    return $rc
}
# wait_rts: until a QP of ib_write_bw is connected (traffic has started):
# in RTS on the client, in RTR on the server (perftest's bandwidth servers
# only receive)
wait_rts() {
    for t in $(seq 1 120); do
        rdma resource show qp 2>/dev/null | grep -qE 'type RC state RT[RS] .*comm ib_write_bw' && return 0
        sleep 0.5
    done
    return 1
}
retry_exceeded() {  # LOG RC CHECK: the program failed with status 12
    if [ "$2" != 0 ] && grep -q 'Failed status 12' "$1"; then
        ck $3 ok "exit status $2: $(grep -m1 'Failed status' "$1")"
    else ck $3 fail "exit status $2: $(tail -n 4 "$1" | tr '\n' ' ')"; fi
}
dmesg_clean() {
    b=$(badlog)
    if [ -z "$b" ]; then ck $1 ok; else ck $1 fail "$b"; fi
}
wait_gid || echo "resilience: no RoCE v2 GID for $RS_IP"
echo "resilience: vm$RS_VM_INDEX GID index '$gi' peer $RS_PEER"
EOS

# VM 1: the client of step 1 and 2, the server of steps 3 and 4.
read -r -d '' vm1 <<'EOS'
# 1. VM 2 is reset while this client writes.
client /tmp/bw1.log 60 ib_write_bw -d rsess0 -x "$gi" -p 18601 -F -s 4096 -D 30 -u 15 &
p=$!
if wait_rts && sleep 2 && alive $p; then
    echo "RESIL reset-now"
    wait_end $p 60
    retry_exceeded /tmp/bw1.log $rc reset-peer-retry-exceeded
else
    echo "RESIL no-traffic"
    wait_end $p 5
    ck reset-peer-retry-exceeded fail "no traffic to reset VM 2 in: status $rc, $(tail -n 4 /tmp/bw1.log | tr '\n' ' ')"
fi
dmesg_clean reset-peer-dmesg-clean
# 2. The same peer after its reboot.
client /tmp/pp2.log 120 ibv_rc_pingpong -d rsess0 -g "$gi" -p 18602 -n 100 -s 4096 -c
passed reset-traffic-again /tmp/pp2.log
# 3. Unload the module under the server's QP.
timeout 120 ib_write_bw -d rsess0 -x "$gi" -p 18603 -F -s 4096 -D 30 -u 15 > /tmp/bw3.log 2>&1 &
p=$!
unloaded=0
if wait_rts && sleep 2 && alive $p; then
    t0=$(date +%s)
    rmmod rdma_session > /tmp/rmmod.log 2>&1 &
    rmp=$!
    wait_end $rmp 30
    if [ $rc = 0 ] && [ ! -e /sys/module/rdma_session ]; then
        unloaded=1
        ck rmmod-during-traffic ok "in $(( $(date +%s) - t0 )) s; server $(alive $p && echo still running || echo ended)"
    else ck rmmod-during-traffic fail "status $rc: $(tr '\n' ' ' < /tmp/rmmod.log) $(ls -d /sys/module/rdma_session 2>/dev/null)"; fi
else
    ck rmmod-during-traffic fail "no traffic to unload the module under: $(tail -n 4 /tmp/bw3.log | tr '\n' ' ')"
fi
if [ $unloaded = 0 ]; then
    ck modprobe-port-active fail "not checked: the module was not unloaded"
elif modprobe rdma_session; then
    if port_back; then
        ck modprobe-port-active ok "rsess0 ACTIVE, GID index $gi"
    else ck modprobe-port-active fail "$(port_state) GIDs: $(cat /sys/class/infiniband/rsess0/ports/1/gids/* 2>/dev/null | grep -v '^0000:0000:0000:0000' | tr '\n' ' ')"; fi
else
    ck modprobe-port-active fail "modprobe rdma_session failed"
fi
wait_end $p 30
echo "resilience: the unloaded server ended with status $rc: $(tail -n 2 /tmp/bw3.log | tr '\n' ' ')"
# 4. The same pair again.
timeout 60 ib_write_bw -d rsess0 -x "$gi" -p 18604 -F -s 4096 -n 200 -u 18 > /tmp/bw4.log 2>&1; rc=$?
passed rmmod-traffic-again /tmp/bw4.log
# 5. A function level reset of the adapter under the server's QP.
timeout 120 ib_write_bw -d rsess0 -x "$gi" -p 18605 -F -s 4096 -D 30 -u 15 > /tmp/bw5.log 2>&1 &
p=$!
pcidev=$(readlink -f /sys/class/infiniband/rsess0/device)
if wait_rts && sleep 2 && alive $p && [ -w "$pcidev/reset" ]; then
    if echo 1 > "$pcidev/reset"; then
        if port_back; then
            ck flr-during-traffic ok "rsess0 ACTIVE again, GID index $gi: $(dmesg | grep -c 'function reset') driver messages"
        else ck flr-during-traffic fail "$(port_state); $(dmesg | tail -n 3 | tr '\n' ' ')"; fi
    else ck flr-during-traffic fail "writing $pcidev/reset failed"; fi
else
    ck flr-during-traffic fail "no traffic to reset the function under ($pcidev): $(tail -n 4 /tmp/bw5.log | tr '\n' ' ')"
fi
wait_end $p 30
echo "resilience: the server under the FLR ended with status $rc: $(tail -n 2 /tmp/bw5.log | tr '\n' ' ')"
# 6. The same pair after the FLR.
timeout 60 ib_write_bw -d rsess0 -x "$gi" -p 18606 -F -s 4096 -n 200 -u 18 > /tmp/bw6.log 2>&1; rc=$?
passed flr-traffic-again /tmp/bw6.log
dmesg_clean dmesg-clean
exit 0
EOS

# VM 2, first boot: the server of step 1, reset in the middle.
read -r -d '' vm2a <<'EOS'
timeout 120 ib_write_bw -d rsess0 -x "$gi" -p 18601 -F -s 4096 -D 30 -u 15 > /tmp/bw1.log 2>&1
echo "resilience: step 1 ended without a reset: $?: $(tail -n 3 /tmp/bw1.log | tr '\n' ' ')"
EOS

# VM 2 after the reset: the server of step 2, the client of steps 3 and 4.
read -r -d '' vm2b <<'EOS'
timeout 120 ibv_rc_pingpong -d rsess0 -g "$gi" -p 18602 -n 100 -s 4096 -c > /tmp/pp2.log 2>&1; rc=$?
passed reset-traffic-again /tmp/pp2.log
client /tmp/bw3.log 60 ib_write_bw -d rsess0 -x "$gi" -p 18603 -F -s 4096 -D 30 -u 15
retry_exceeded /tmp/bw3.log $rc rmmod-peer-retry-exceeded
client /tmp/bw4.log 90 ib_write_bw -d rsess0 -x "$gi" -p 18604 -F -s 4096 -n 200 -u 18
passed rmmod-traffic-again /tmp/bw4.log
client /tmp/bw5.log 60 ib_write_bw -d rsess0 -x "$gi" -p 18605 -F -s 4096 -D 30 -u 15
retry_exceeded /tmp/bw5.log $rc flr-peer-retry-exceeded
client /tmp/bw6.log 90 ib_write_bw -d rsess0 -x "$gi" -p 18606 -F -s 4096 -n 200 -u 18
passed flr-traffic-again /tmp/bw6.log
dmesg_clean dmesg-clean
exit 0
EOS

t0=$(date +%s)
logdir=$(mktemp -d "$RS_BUILD/test-logs/resilience.XXXXXX" 2>/dev/null) ||
    { mkdir -p "$RS_BUILD/test-logs"; logdir=$(mktemp -d "$RS_BUILD/test-logs/resilience.XXXXXX"); }
find "$RS_BUILD/test-logs" -mindepth 1 -maxdepth 1 -type d -name 'resilience.*' -printf '%T@ %p\n' |
    sort -rn | tail -n +4 | cut -d' ' -f2- | xargs -r rm -rf
ln -sfn "${logdir##*/}" "$RS_BUILD/test-logs/resilience.last"
run=${RS_VMS_LOGDIR:-$logdir/vms}
out=$logdir/launch.log
pass=0 fail=0 checks=()
host_ck() { checks+=("host $1 $2 ${3:-}"); }

RS_VMS_LOGDIR=$run "$top/scripts/launch-vms.sh" -q -n 2 --timeout 300 \
    --vm-cmd 1 "$common
$vm1" --vm-cmd 2 "$common
$vm2a" > "$out" 2>&1 &
lpid=$!
trap 'kill $lpid 2>/dev/null' EXIT

# wait_for SECONDS COMMAND...: until COMMAND succeeds or the launcher ended
wait_for() {
    local end=$(( $(date +%s) + $1 ))
    shift
    until "$@"; do
        kill -0 $lpid 2>/dev/null && [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.5
    done
}
readies() { tr -d '\r' < "$run/vm2/serial.log" 2>/dev/null | grep -c '^rs-init: ready'; }
rebooted() { [ "$(readies)" -ge 2 ]; }
qmp() { "$top/scripts/qmp.py" "$run/vm2/qmp.sock" "$@"; }

# 1. The reset, once VM 1 says its traffic runs.
if wait_for 200 grep -qs '^RESIL reset-now' "$run/vm1/serial.log"; then
    qpid=$(cat "$run/vm2/pid")
    treset=$(date +%s)
    if r=$(qmp set-action '{"reboot": "reset"}' system_reset 2>&1); then
        host_ck qmp-system-reset ok "set-action reboot=reset, system_reset: $(echo $r)"
    else host_ck qmp-system-reset fail "$r"; fi
    if wait_for 120 rebooted; then
        host_ck reset-vm-boots-again ok "rs-init: ready again $(( $(date +%s) - treset )) s after the reset, $(( treset - t0 )) s into the run"
        st=$(qmp query-status 2>&1)
        if kill -0 "$qpid" 2>/dev/null && grep -q '"status": "running"' <<< "$st"; then
            host_ck reset-qemu-alive ok "pid $qpid, $st"
        else host_ck reset-qemu-alive fail "pid $qpid: $(kill -0 "$qpid" 2>&1 || echo gone), query-status: $st"; fi
        # its /init waits for a command again: the rest of the steps
        sed -n '1,/^RS_IFACE=/p' "$run/vm2/cmd.sh" > "$run/vm2/cmd2.sh"
        printf '%s\n%s\n' "$common" "$vm2b" >> "$run/vm2/cmd2.sh"
        printf 'go %s\n' "$(base64 -w0 < "$run/vm2/cmd2.sh")" 1<>"$run/vm2/ctl.in"
    else
        host_ck reset-vm-boots-again fail "$(readies) 'rs-init: ready' in vm2's console; QEMU $(kill -0 "$qpid" 2>/dev/null && echo runs || echo gone)"
        host_ck reset-qemu-alive fail "not checked: no reboot"
    fi
else
    host_ck qmp-system-reset fail "VM 1 never said its traffic runs: $(grep -m1 '^RESIL' "$run/vm1/serial.log" 2>/dev/null)"
    host_ck reset-vm-boots-again fail "not checked: no reset"
    host_ck reset-qemu-alive fail "not checked: no reset"
    kill $lpid 2>/dev/null
fi
wait $lpid
lrc=$?
trap - EXIT
cat "$out" >&2

for c in "${checks[@]}"; do
    read -r who name res detail <<< "$c"
    if [ "$res" = ok ]; then pass=$((pass + 1)); echo "ok - $who $name"
    else fail=$((fail + 1)); echo "not ok - $who $name: $detail"; fi
done
vm_checks "$out" 1:reset-peer-retry-exceeded 1:reset-peer-dmesg-clean 1:reset-traffic-again \
         2:reset-traffic-again 1:rmmod-during-traffic 2:rmmod-peer-retry-exceeded \
         1:modprobe-port-active 1:rmmod-traffic-again 2:rmmod-traffic-again \
         1:flr-during-traffic 2:flr-peer-retry-exceeded 1:flr-traffic-again \
         2:flr-traffic-again \
         1:dmesg-clean 2:dmesg-clean
launcher_check $lrc
echo "resilience: $pass passed, $fail failed ($(( $(date +%s) - t0 )) s, logs in $logdir)"
[ $fail = 0 ]
