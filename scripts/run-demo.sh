#!/bin/bash
# The demo: build QEMU with the rdma-session adapter and the guest image,
# boot a q35 guest with the adapter and show the guest's PCI listing.
# Exits 0 when the guest saw the adapter (PCI 1af4:10f0) and powered off
# cleanly, 1 when it did not, 2 on a setup error.  Never hangs: the VM is
# killed after RS_DEMO_TIMEOUT seconds.
#
# Usage: scripts/run-demo.sh [--shell] [-- extra QEMU arguments...]
#   --shell         give an interactive guest shell after the listing
#                   (no timeout; "exit" or Ctrl-A x ends the VM)
# Environment:
#   RS_ACCEL=kvm        use KVM instead of TCG (only if KVM really works)
#   RS_DEMO_TIMEOUT     seconds before the VM is killed (default 120)
#   RS_DEMO_DEVICE      the -device to show (default rdma-session; e.g.
#                       virtio-net-pci to try the guest without the adapter)
#   RS_DEMO_CMD         command the guest runs after the listing
#                       (default: lspci -v -d 1af4:10f0)
#   RS_DEMO_NO_BUILD=1  use the existing build/qemu binary as it is
#   RS_BUILD, RS_CACHE  as for scripts/build-qemu.sh
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD

log() { printf '[run-demo] %s\n' "$*" >&2; }
die() { printf '[run-demo] error: %s\n' "$*" >&2; exit 2; }

shell=0
while [ $# -gt 0 ]; do
    case $1 in
    --shell) shell=1 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done

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
if ! "$qemu" -device help 2>/dev/null | grep -q "^name \"$devname\""; then
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

append="console=ttyS0 panic=-1 quiet"
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
