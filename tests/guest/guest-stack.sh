#!/bin/bash
# The guest stack, as TAP: two runs of scripts/launch-vms.sh.  Two VMs with
# the adapter on one segment: in each, the module is bound and the kernel
# log is clean, eth0 is the adapter's with its MAC and carrier, the VMs
# ping each other, ibv_devices/ibv_devinfo show rsess0 ACTIVE on Ethernet,
# the port has the RoCE v2 GID of its address, rdma link/resource work,
# every perftest program, rping and ibv_*_pingpong start, and
# ibv_uc_pingpong, ibv_srq_pingpong and ib_atomic_bw run between the VMs.
# Then one VM on -netdev user: a DHCP lease and the slirp gateway, and
# rmmod/modprobe while ibv_rc_pingpong holds a context.  One test per
# check and per run (the VMs ran and powered off cleanly).  The guest-side
# scripts are tests/guest/in-guest/*.sh.
#
# Usage: tests/guest/guest-stack.sh
# Environment: RS_BUILD; RS_NO_BUILD=1 is implied (the build comes first).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD
. "$top/tests/guest/suite-lib.sh"
suite_dir guest-stack
g=$top/tests/guest/in-guest

# gs_run NAME "VM:CHECK ..." launch-vms arguments...: one launcher run, a
# test per expected check and one for the run itself
gs_run()
{
    local name=$1 expect=$2 out="$sdir/$1.log" lrc
    shift 2
    RS_NO_BUILD=1 RS_VMS_LOGDIR="$sdir/vms-$name" \
        "$top/scripts/launch-vms.sh" -q "$@" > "$out" 2>&1
    lrc=$?
    # shellcheck disable=SC2086
    vm_checks "$out" $expect
    launcher_check "$lrc" "$name" "$out"
    grep -h '^\[vm[0-9]*\] CHECK ' "$out" >> "$sdir/checks"
}

pair=
for v in 1 2; do
    for c in module-load netdev ping ibv-devices ibv-devinfo gid-rocev2 \
             rdma-link rdma-resource perftest-start uc-pingpong srq-pingpong \
             atomic-bw dmesg-clean; do
        pair+=" $v:$c"
    done
done
gs_run pair "$pair" -n 2 --timeout 300 \
    --cmd "$(cat "$g/lib.sh" "$g/stack-module.sh" "$g/stack-pair.sh")"
gs_run user "1:module-load 1:dhcp-gateway 1:reload-with-context 1:dmesg-clean" \
    -n 1 --netdev-user --timeout 120 \
    --cmd "$(cat "$g/lib.sh" "$g/stack-module.sh" "$g/stack-user.sh")"
suite_end
