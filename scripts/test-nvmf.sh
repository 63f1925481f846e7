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
# Usage: scripts/test-nvmf.sh [--migrate]
# Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1
#   (do not build QEMU first), RS_VMS_LOGDIR, RS_NVMF_TIMEOUT (seconds for
#   the guest commands, default 300).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/vm-checks.sh"
: "${RS_BUILD:=$top/build}"
export RS_BUILD

mig=0
[ "${1:-}" = --migrate ] && mig=1

read -r -d '' common <<'EOS'
ck() { echo "CHECK $1 $2 ${3:-}"; }
migs() { dmesg | grep -c 'live migration: announcing'; }
badlog() { dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)' | head -n 3 | tr '\n' ' '; }
nqn=nqn.2026-11.org.rdma-session:nvmf-test
EOS

read -r -d '' target <<'EOS'
cfg=/sys/kernel/config/nvmet
s=$cfg/subsystems/$nqn
if ! modprobe brd rd_nr=1 rd_size=32768 || ! modprobe nvmet_rdma; then
    ck nvmf-target fail "modprobe brd/nvmet_rdma failed"
    exit 1
fi
mount -t configfs none /sys/kernel/config 2>/dev/null
err=
{ mkdir $s &&
  echo 1 > $s/attr_allow_any_host &&
  mkdir $s/namespaces/1 &&
  echo -n /dev/ram0 > $s/namespaces/1/device_path &&
  echo 1 > $s/namespaces/1/enable &&
  mkdir $cfg/ports/1 &&
  echo rdma > $cfg/ports/1/addr_trtype &&
  echo ipv4 > $cfg/ports/1/addr_adrfam &&
  echo "$RS_IP" > $cfg/ports/1/addr_traddr &&
  echo 4420 > $cfg/ports/1/addr_trsvcid &&
  ln -s $s $cfg/ports/1/subsystems/$nqn; } 2>/tmp/cfg.err || err=$(tr '\n' ' ' < /tmp/cfg.err)
if [ -n "$err" ]; then
    ck nvmf-target fail "configfs: $err $(dmesg | tail -n 3 | tr '\n' ' ')"
    exit 1
fi
ck nvmf-target ok "$nqn on /dev/ram0, rdma $RS_IP:4420"
# The host sends the MD5 of what it wrote once it has disconnected.
timeout 280 nc -l -p 7777 > /tmp/host.md5
want=$(awk '{print $1}' /tmp/host.md5)
got=$(dd if=/dev/ram0 bs=65536 count=32 2>/dev/null | md5sum | awk '{print $1}')
if [ -n "$want" ] && [ "$want" = "$got" ]; then
    ck nvmf-target-data ok "RAM disk holds what the host wrote (md5 $got)"
else
    ck nvmf-target-data fail "host md5 '$want', RAM disk md5 '$got'"
fi
if [ "$mig" = 1 ]; then
    m=$(migs); [ "$m" = 1 ] && ck migration-notice ok "$m" || ck migration-notice fail "$m of 1"
fi
b=$(badlog)
if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
EOS

read -r -d '' host <<'EOS'
send_md5() {
    for t in $(seq 1 20); do
        echo "$1" | nc "$RS_PEER" 7777 2>/dev/null && return 0
        sleep 1
    done
    return 1
}
if ! modprobe nvme_rdma; then
    ck nvmf-connect fail "modprobe nvme_rdma failed"
    send_md5 none
    exit 1
fi
opts="transport=rdma,traddr=$RS_PEER,trsvcid=4420,nqn=$nqn"
ok=0
for t in $(seq 1 30); do
    if echo "$opts" > /dev/nvme-fabrics 2>/tmp/conn.err; then ok=1; break; fi
    sleep 2
done
for t in $(seq 1 40); do [ -b /dev/nvme0n1 ] && break; sleep 0.5; done
if [ $ok = 1 ] && [ -b /dev/nvme0n1 ]; then
    ck nvmf-connect ok "$(cat /sys/class/nvme/nvme0/transport 2>/dev/null) $(cat /sys/class/nvme/nvme0/address 2>/dev/null) $(cat /sys/block/nvme0n1/size) sectors"
else
    ck nvmf-connect fail "$(tr '\n' ' ' < /tmp/conn.err) $(dmesg | grep -iE 'nvme|rdma' | tail -n 4 | tr '\n' ' ')"
    send_md5 none
    exit 1
fi
dd if=/dev/urandom of=/tmp/a bs=65536 count=16 2>/dev/null
dd if=/dev/urandom of=/tmp/b bs=65536 count=16 2>/dev/null
# 64 KiB writes (registered with REG_MR), 4 KiB reads.
dd if=/tmp/a of=/dev/nvme0n1 bs=65536 count=16 oflag=direct 2>/tmp/dd.err
dd if=/dev/nvme0n1 of=/tmp/a2 bs=4096 count=256 iflag=direct 2>>/tmp/dd.err
if cmp -s /tmp/a /tmp/a2; then ck nvmf-io-64k ok "1 MiB written in 64 KiB, read back in 4 KiB: equal"
else ck nvmf-io-64k fail "$(cmp /tmp/a /tmp/a2 2>&1 | head -n 1) $(tr '\n' ' ' < /tmp/dd.err) $(dmesg | tail -n 3 | tr '\n' ' ')"; fi
# 4 KiB writes at 1 MiB, 64 KiB reads.
dd if=/tmp/b of=/dev/nvme0n1 bs=4096 count=256 seek=256 oflag=direct 2>/tmp/dd.err
dd if=/dev/nvme0n1 of=/tmp/b2 bs=65536 count=16 skip=16 iflag=direct 2>>/tmp/dd.err
if cmp -s /tmp/b /tmp/b2; then ck nvmf-io-4k ok "1 MiB written in 4 KiB at 1 MiB, read back in 64 KiB: equal"
else ck nvmf-io-4k fail "$(cmp /tmp/b /tmp/b2 2>&1 | head -n 1) $(tr '\n' ' ' < /tmp/dd.err) $(dmesg | tail -n 3 | tr '\n' ' ')"; fi
if [ "$mig" = 1 ]; then
    # Verified I/O while the target and then this VM move.
    r=0 err= end=0
    for t in $(seq 1 600); do
        off=$(( 32 + r % 8 * 4 ))
        dd if=/dev/urandom of=/tmp/c bs=65536 count=4 2>/dev/null
        dd if=/tmp/c of=/dev/nvme0n1 bs=65536 count=4 seek=$off oflag=direct 2>/tmp/dd.err &&
            dd if=/dev/nvme0n1 of=/tmp/c2 bs=4096 count=64 skip=$(( off * 16 )) iflag=direct 2>>/tmp/dd.err ||
            { err="round $r: $(tr '\n' ' ' < /tmp/dd.err)"; break; }
        cmp -s /tmp/c /tmp/c2 || { err="round $r: $(cmp /tmp/c /tmp/c2 2>&1 | head -n 1)"; break; }
        r=$((r + 1))
        if [ "$(migs)" -ge 1 ]; then
            [ $end = 0 ] && end=$(( $(cut -d. -f1 /proc/uptime) + 5 ))
            [ "$(cut -d. -f1 /proc/uptime)" -ge $end ] && break
        fi
    done
    if [ -z "$err" ] && [ "$(migs)" = 1 ]; then
        ck nvmf-io-migrating ok "$r rounds of 256 KiB written and read back equal while the target and this VM moved"
    else
        ck nvmf-io-migrating fail "${err:-$(migs) migrations of this VM after $r rounds} $(dmesg | grep -iE 'nvme|rdma' | tail -n 3 | tr '\n' ' ')"
    fi
    m=$(migs); [ "$m" = 1 ] && ck migration-notice ok "$m" || ck migration-notice fail "$m of 1"
fi
sum=$(cat /tmp/a /tmp/b | md5sum | awk '{print $1}')
if echo 1 > /sys/class/nvme/nvme0/delete_controller 2>/tmp/del.err; then
    for t in $(seq 1 20); do [ -e /sys/class/nvme/nvme0 ] || break; sleep 0.5; done
fi
if [ -e /sys/class/nvme/nvme0 ]; then ck nvmf-disconnect fail "$(tr '\n' ' ' < /tmp/del.err)"
else ck nvmf-disconnect ok; fi
send_md5 "$sum" || ck nvmf-md5-sent fail "nc to $RS_PEER:7777 failed"
b=$(badlog)
if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
EOS

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
    grep '^\[launch-vms\] migrate-vm: .*RDMA stall' "$out" | sed 's/^\[launch-vms\] //'
fi
launcher_check $lrc
echo "nvmf: $pass passed, $fail failed"
[ $fail = 0 ]
