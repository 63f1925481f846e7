#!/bin/bash
# Live migration in the middle of RDMA traffic, with an unmodified peer:
# two adapter VMs on the multicast segment (scripts/launch-vms.sh -n 2),
# VM 1 serves rping -V (RDMA READ and WRITE of 4 KiB buffers, every ping
# verified by rping itself) to VM 2, and is migrated to a new QEMU three
# times while the stream runs (--migrate 1@5x3, scripts/migrate-vm.py).
# Checks: each migration completed with the destination running (its
# figures are printed), the verified stream completed on both sides, VM 1's
# driver got the device's migration notice after each migration, both
# kernel logs are clean, every QEMU powered off.  Prints TAP and
# "migration: N passed, N failed"; exits 0 if every check passed.
#
# Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1,
#   RS_MIGRATIONS (default 3), RS_RPING_COUNT (default 30000).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/vm-checks.sh"
: "${RS_BUILD:=$top/build}"
export RS_BUILD
n_mig=${RS_MIGRATIONS:-3}
count=${RS_RPING_COUNT:-30000}
logdir=$(mktemp -d "$RS_BUILD/test-logs/migration.XXXXXX" 2>/dev/null) ||
    { mkdir -p "$RS_BUILD/test-logs"; logdir=$(mktemp -d "$RS_BUILD/test-logs/migration.XXXXXX"); }
ln -sfn "${logdir##*/}" "$RS_BUILD/test-logs/migration.last"
out=$logdir/launch.log
t0=$(date +%s)

# the driver hears of each migration (MIGRATION_NOTICE) and announces eth0
notice="m=\$(dmesg | grep -c 'live migration: announcing'); [ \$m = $n_mig ] && echo \"CHECK migration-notice ok \$m\" || echo \"CHECK migration-notice fail \$m of $n_mig\""
clean='b=$(dmesg | grep -E "WARNING|BUG|Oops|Call Trace" | head -n 3 | tr "\n" " "); [ -z "$b" ] && echo "CHECK dmesg-clean ok" || echo "CHECK dmesg-clean fail $b"'
RS_VMS_LOGDIR=$logdir/vms "$top/scripts/launch-vms.sh" -q ${RS_NO_BUILD:+--no-build} \
    -n 2 --timeout 300 --migrate "1@5x$n_mig" \
    --vm-cmd 1 "rping -s -V -C $count -S 4096 -a \$RS_IP; r=\$?; echo \"CHECK rping-server \$([ \$r = 0 ] && echo ok || echo fail) exit status \$r\"; $clean; $notice" \
    --vm-cmd 2 "sleep 1; rping -c -V -C $count -S 4096 -a \$RS_PEER; r=\$?; echo \"CHECK rping-client \$([ \$r = 0 ] && echo ok || echo fail) exit status \$r\"; $clean" \
    > "$out" 2>&1
lrc=$?

pass=0 fail=0
ck() {  # ok|fail NAME DETAIL
    if [ "$1" = ok ]; then pass=$((pass + 1)); echo "ok - $2 ${3:-}"
    else fail=$((fail + 1)); echo "not ok - $2 ${3:-}"; fi
}
grep '^\[launch-vms\] migrate-vm:' "$out" | sed 's/^\[launch-vms\] //'
for k in $(seq 1 "$n_mig"); do
    line=$(grep -m1 "migrate-vm: vm1 #$k: " "$out")
    if [ -n "$line" ]; then ck ok "migration-$k" "(${line#*: })"
    else ck fail "migration-$k" "$(grep -m1 'migrate-vm: FAIL' "$out")"; fi
done
vm_checks "$out" 1:rping-server 1:dmesg-clean 1:migration-notice \
    2:rping-client 2:dmesg-clean
launcher_check $lrc
echo "migration: $pass passed, $fail failed ($(( $(date +%s) - t0 )) s, logs in $logdir)"
[ $fail = 0 ]
