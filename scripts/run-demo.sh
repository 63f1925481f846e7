#!/bin/bash
# The demo: build QEMU with the rdma-session adapter and the guest image,
# boot two guests with the adapter on one Ethernet segment
# (scripts/launch-vms.sh) and show, in each, the RDMA device (ibv_devices,
# ibv_devinfo) and traffic between them: ping over the adapter's Ethernet
# interface, then ibv_rc_pingpong over RoCEv2; each must work.  Exits 0
# on success, 1 on a failure, 2 on a setup error.
#
# Usage: scripts/run-demo.sh [--shell|--migrate] [-- extra QEMU arguments...]
#   --shell         interactive shell on VM 1 (VM 2 runs in the background)
#   --migrate       then a verified RDMA stream (rping -V, VM 1 serving)
#                   during which VM 1 is live-migrated to a new QEMU three
#                   times (launch-vms.sh --migrate 1@10x3): QEMU's figures
#                   and the RDMA stall VM 2 saw at each switch are printed
# Environment:
#   RS_ACCEL=kvm        use KVM instead of TCG (only if KVM really works)
#   RS_DEMO_TIMEOUT     seconds for the guests' commands (default 120)
#   RS_DEMO_NO_BUILD=1  use the existing build/qemu binary as it is
#   RS_BUILD, RS_CACHE  as for scripts/build-qemu.sh
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD

log() { printf '[run-demo] %s\n' "$*" >&2; }
die() { printf '[run-demo] error: %s\n' "$*" >&2; exit 2; }

shell=0 mig=0
while [ $# -gt 0 ]; do
    case $1 in
    --shell) shell=1 ;;
    --migrate) mig=1 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done

nb=()
[ "${RS_DEMO_NO_BUILD:-0}" = 1 ] && nb=(--no-build)
if [ $shell = 1 ]; then
    exec "$top/scripts/launch-vms.sh" "${nb[@]}" -n 2 --shell 1 -- "$@"
fi
# What each guest shows and checks (VM 1 serves ibv_rc_pingpong).
gcmd=$(cat "$top/tests/guest/in-guest/demo.sh")
tmo=60
mc=200000
gcmd="tmo=$tmo mig=$mig mc=$mc
$gcmd"
migargs=()
[ $mig = 1 ] && migargs=(--migrate 1@10x3)
# A directory per run (several runs may share build/); the last one
# is build/demo/last.
mkdir -p "$RS_BUILD/demo"
out=$(mktemp -d "$RS_BUILD/demo/run.XXXXXX")
ln -sfn "${out##*/}" "$RS_BUILD/demo/last"
find "$RS_BUILD/demo" -mindepth 1 -maxdepth 1 -type d -name 'run.*' -printf '%T@ %p\n' |
    sort -rn | tail -n +4 | cut -d' ' -f2- | xargs -r rm -rf
RS_VMS_LOGDIR="$out/vms" "$top/scripts/launch-vms.sh" "${nb[@]}" -n 2 \
    "${migargs[@]}" --timeout "${RS_DEMO_TIMEOUT:-$((120 + mig * 180))}" \
    --cmd "$gcmd" -- "$@" | tee "$out/demo.log"
lrc=${PIPESTATUS[0]}
[ "$lrc" = 2 ] && die "scripts/launch-vms.sh could not start the VMs"
fails=$(grep -c '^\[vm[0-9]*\] demo-step: [a-z-]* fail' "$out/demo.log")
echo
echo "Summary:"
sed -n 's/^\[\(vm[0-9]*\)\] demo-step: /  \1 /p' "$out/demo.log"
sed -n 's/^\[launch-vms\] migrate-vm: /  /p' "$out/demo.log"
if [ "$lrc" = 0 ] && [ "$fails" = 0 ]; then
    echo "demo: PASS: two VMs with the adapter ($(grep -h 'demo-step: ' "$out/demo.log" | sed 's/^\[\(vm[0-9]*\)\] demo-step: \([a-z-]*\) \([a-z/]*\).*/\1 \2 \3/' | tr '\n' ',' | sed 's/,$//; s/,/, /g'))"
    exit 0
fi
echo "demo: FAIL: see $out/demo.log and $out/vms/vm*/serial.log"
exit 1
