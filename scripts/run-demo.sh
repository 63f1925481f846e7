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
# Single-guest mode (tests/guest/guest-driver.sh uses it): when
# RS_DEMO_CMD or RS_DEMO_DEVICE is set, or with --single, one q35 guest on
# -netdev user lists its PCI devices and runs RS_DEMO_CMD; it passes when
# the guest saw the adapter (PCI 1af4:10f0) and powered off cleanly.
#   RS_DEMO_DEVICE      the -device to show (default rdma-session)
#   RS_DEMO_CMD         command the guest runs after the listing
#                       (default: lspci -v -d 1af4:10f0)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD

log() { printf '[run-demo] %s\n' "$*" >&2; }
die() { printf '[run-demo] error: %s\n' "$*" >&2; exit 2; }

shell=0 single=0 mig=0
[ -n "${RS_DEMO_CMD+x}" ] || [ -n "${RS_DEMO_DEVICE+x}" ] && single=1
while [ $# -gt 0 ]; do
    case $1 in
    --shell) shell=1 ;;
    --single) single=1 ;;
    --migrate) mig=1 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done

if [ $single = 0 ]; then
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
fi

accel=${RS_ACCEL:-tcg}
tmo=${RS_DEMO_TIMEOUT:-120}
device=${RS_DEMO_DEVICE:-rdma-session}
gcmd=${RS_DEMO_CMD-lspci -v -d 1af4:10f0}
qemu="$RS_BUILD/qemu/qemu-system-x86_64"

t0=$(date +%s.%N)
if [ "${RS_DEMO_NO_BUILD:-0}" != 1 ]; then
    log "building QEMU (scripts/build-qemu.sh)"
    "$top/scripts/build-qemu.sh" qemu-system-x86_64 ||
        die "QEMU build failed (scripts/build-qemu.sh)"
fi
[ -x "$qemu" ] || die "$qemu does not exist: run scripts/build-qemu.sh"
log "building the guest image (scripts/guest-image.sh)"
img=$("$top/scripts/guest-image.sh") || die "guest image build failed (scripts/guest-image.sh)"
eval "$img"
t1=$(date +%s.%N)

devname=${device%%,*}
if ! grep -q "^name \"$devname\"" <("$qemu" -device help 2>/dev/null); then
    die "this QEMU build has no device \"$devname\" ($qemu -device help)"
fi

fw=()
for d in /usr/share/seabios /usr/share/qemu /usr/lib/ipxe/qemu; do
    [ -d "$d" ] && fw+=(-L "$d")
done
[ -e /usr/share/seabios/bios-256k.bin ] ||
    die "SeaBIOS is missing: install Debian's seabios package (scripts/build-qemu.sh does)"

case $accel in
kvm) acc=(-accel kvm -cpu host) ;;
tcg) acc=(-accel tcg) ;;
*) die "RS_ACCEL must be tcg or kvm, not $accel" ;;
esac

append="console=ttyS0 panic=-1 quiet no_timer_check"
[ $shell = 1 ] && append+=" rs.shell=1"
[ -n "$gcmd" ] && append+=" rs.cmd64=$(printf '%s' "$gcmd" | base64 -w0)"

mkdir -p "$RS_BUILD/demo"
serlog="$RS_BUILD/demo/serial.log"
: > "$serlog"

args=(-machine q35 "${acc[@]}" -m 512 -smp 1 -nodefaults -display none
      -no-reboot "${fw[@]}"
      -kernel "$RS_KERNEL" -initrd "$RS_INITRD" -append "$append"
      -netdev user,id=n0 -device "$device,netdev=n0" "$@")

log "booting q35 ($accel) with -device $device, kernel $RS_KVER; serial log $serlog"
if [ $shell = 1 ]; then
    "$qemu" "${args[@]}" -chardev "stdio,id=con,mux=on,logfile=$serlog" \
        -serial chardev:con -mon chardev=con,mode=readline
    rc=$?
else
    timeout -k 5 "$tmo" "$qemu" "${args[@]}" \
        -chardev "stdio,id=con,logfile=$serlog" -serial chardev:con </dev/null
    rc=$?
fi
t2=$(date +%s.%N)

if [ $rc = 124 ] || [ $rc = 137 ]; then
    log "the VM did not power off within ${tmo}s and was killed"
elif [ $rc != 0 ]; then
    log "QEMU exited with status $rc"
fi

# Lines of the guest's listing look like "00:02.0 0207: 1af4:10f0 (rev 01)".
hit=$(tr -d '\r' < "$serlog" |
      grep -E '^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] [0-9a-f]{4}: 1af4:10f0( |$)' | head -n 1)
awk -v a="$t0" -v b="$t1" -v c="$t2" \
    'BEGIN { printf "[run-demo] build %.1f s, boot to power-off %.1f s\n", b - a, c - b }' >&2
if [ -n "$hit" ] && [ $rc = 0 ]; then
    echo "demo: PASS: the guest lists the rdma-session adapter: $hit"
    exit 0
fi
if [ -n "$hit" ]; then
    echo "demo: FAIL: the guest listed the adapter ($hit), but QEMU did not end cleanly (status $rc, see $serlog)"
elif ! grep -q 'rs-init: end of PCI devices' "$serlog"; then
    echo "demo: FAIL: the guest did not get to its PCI listing (see $serlog)"
else
    echo "demo: FAIL: the guest's PCI listing has no 1af4:10f0 device (see $serlog)"
fi
exit 1
