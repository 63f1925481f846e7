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

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/guest/suite-lib.sh"
: "${RS_BUILD:=$top/build}"
export RS_BUILD

common=$(cat "$top/tests/guest/in-guest/resilience-common.sh")

# VM 1: the client of step 1 and 2, the server of steps 3 and 4.
vm1=$(cat "$top/tests/guest/in-guest/resilience-vm1.sh")

# VM 2, first boot: the server of step 1, reset in the middle.
vm2a=$(cat "$top/tests/guest/in-guest/resilience-vm2a.sh")

# VM 2 after the reset: the server of step 2, the client of steps 3 and 4.
vm2b=$(cat "$top/tests/guest/in-guest/resilience-vm2b.sh")

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
echo "1..$((pass + fail))"
echo "# resilience: $pass passed, $fail failed ($(( $(date +%s) - t0 )) s, logs in $logdir)"
[ $fail = 0 ]
