#!/bin/bash
# Kernel RDMA consumer test: NVMe over Fabrics over RDMA between two VMs
# with the adapter (scripts/launch-vms.sh -n 2).
#
# VM 1 is the target: nvmet + nvmet-rdma configured through configfs, one
# namespace on a brd RAM disk (/dev/ram0, 32 MiB), port 4420 on its
# address.  VM 2 is the host: nvme-rdma connects through /dev/nvme-fabrics,
# then
#   - writes 1 MiB of random data with 64 KiB requests (fast-registration
#     MRs, the target RDMA READs them) and reads it back with 4 KiB
#     requests (the target RDMA WRITEs, SEND with invalidate), comparing;
#   - writes 1 MiB more at offset 1 MiB with 4 KiB requests (in-capsule
#     data) and reads it back with 64 KiB requests, comparing;
#   all with O_DIRECT, one request at a time: the multicast segment of
#   launch-vms.sh loses frames in bursts of more than about 90 (see the
#   user guide), and an RDMA READ of 64 KiB is 64 response packets;
#   - disconnects, then sends the MD5 of what it wrote to VM 1 (busybox
#     nc), which compares it with its RAM disk's first 2 MiB.
# With --migrate, both VMs are live-migrated while the host verifies I/O:
# the target 8 s after the commands start, the host 22 s after; between
# the two checks above and the disconnect the host writes 256 KiB of
# random data in 64 KiB requests at rotating offsets from 2 MiB and reads
# it back in 4 KiB requests, comparing, round after round until 5 s after
# its own migration; any I/O error or difference fails it.
# The guests print "CHECK <name> ok|fail <detail>" lines; this script
# prints them as TAP ("ok"/"not ok") and "nvmf: N passed, N failed".
# Exits 0 if every check passed.
#
# Usage: tests/guest/nvmf.sh [--migrate]
# Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1
#   (do not build QEMU first), RS_VMS_LOGDIR, RS_NVMF_TIMEOUT (seconds for
#   the guest commands, default 300).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/guest/suite-lib.sh"
: "${RS_BUILD:=$top/build}"
export RS_BUILD

mig=0
[ "${1:-}" = --migrate ] && mig=1

common=$(cat "$top/tests/guest/in-guest/nvmf-common.sh")

target=$(cat "$top/tests/guest/in-guest/nvmf-target.sh")

host=$(cat "$top/tests/guest/in-guest/nvmf-host.sh")

out=$(mktemp)
trap 'rm -f "$out"' EXIT
margs=()
[ $mig = 1 ] && margs=(--migrate 1@8 --migrate 2@22)
"$top/scripts/launch-vms.sh" -q -n 2 --timeout "${RS_NVMF_TIMEOUT:-300}" \
    "${margs[@]}" --vm-cmd 1 "mig=$mig
$common
$target" --vm-cmd 2 "mig=$mig
$common
$host" > "$out" 2>&1
lrc=$?
cat "$out" >&2

pass=0 fail=0
vm_checks "$out" 1:nvmf-target 1:nvmf-target-data 1:dmesg-clean \
    2:nvmf-connect 2:nvmf-io-64k 2:nvmf-io-4k 2:nvmf-disconnect 2:dmesg-clean
if [ $mig = 1 ]; then
    vm_checks "$out" 1:migration-notice 2:nvmf-io-migrating 2:migration-notice
    for v in 1 2; do
        line=$(grep -m1 "migrate-vm: vm$v #1: total" "$out")
        if [ -n "$line" ]; then pass=$((pass + 1)); echo "ok - vm$v migrated (${line#*#1: })"
        else fail=$((fail + 1)); echo "not ok - vm$v migrated: $(grep -m1 'migrate-vm: FAIL' "$out")"; fi
    done
    grep '^\[launch-vms\] migrate-vm: .*RDMA stall' "$out" | sed 's/^\[launch-vms\] /# /'
fi
launcher_check $lrc
echo "1..$((pass + fail))"
echo "# nvmf: $pass passed, $fail failed"
[ $fail = 0 ]
