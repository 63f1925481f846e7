#!/bin/bash
# Guest driver test: build guest-driver/kernel (rdma_session.ko) against the
# headers of the guest kernel, boot the guest image with the module loaded
# at boot (scripts/guest-image.sh, RS_EXTRA_MODULES) and check the guest's
# kernel log: the probe line with ABI 1.0, max_qp 255, max_cq 255 and port
# ACTIVE; rmmod and a second insmod work; no WARNING, BUG, Oops or call
# trace.  Exits 0 on success, 1 on a failed check, 2 on a setup error.
#
# The headers: linux-headers-amd64 from bookworm-backports is installed if
# no linux-headers-6.12.*-amd64 is (scripts/apt-private.sh, apt_need);
# scripts/guest-image.sh boots the kernel matching the newest installed
# 6.12 headers, and the module is built against those same headers.
#
# Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_KERNEL_PKG
#   (scripts/guest-image.sh), RS_DEMO_NO_BUILD, RS_DEMO_TIMEOUT
#   (scripts/run-demo.sh; the timeout defaults to 180 here).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD
. "$top/scripts/apt-private.sh"

log() { printf '[test-guest-driver] %s\n' "$*" >&2; }
die() { printf '[test-guest-driver] error: %s\n' "$*" >&2; echo "guest-driver: FAIL: $*"; exit 2; }

t0=$(date +%s)
out="$RS_BUILD/guest-driver"
mkdir -p "$out"

# --- Headers matching the guest kernel ---------------------------------------
installed_kver()
{
    dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
        awk '$1 ~ /^linux-headers-6\.12\.[0-9]+\+.*-amd64$/ && /install ok installed/ {print $1}' |
        sort -V | tail -n 1 | sed 's/^linux-headers-//'
}
if [ -n "${RS_KERNEL_PKG:-}" ]; then
    kver=${RS_KERNEL_PKG#linux-image-}
    apt_need bookworm-backports "linux-headers-$kver" || die "cannot install linux-headers-$kver"
else
    kver=$(installed_kver)
    if [ -z "$kver" ]; then
        apt_need bookworm-backports linux-headers-amd64 ||
            die "cannot install linux-headers-amd64 from bookworm-backports"
        kver=$(installed_kver)
    fi
fi
[ -n "$kver" ] || die "no linux-headers-6.12.*-amd64 installed"
kdir=/lib/modules/$kver/build
[ -e "$kdir/Makefile" ] || kdir=/usr/src/linux-headers-$kver
[ -e "$kdir/Makefile" ] || die "no kernel build tree for $kver"

# --- Build the module (from a copy: the source tree stays clean) -------------
src="$out/kmod"
rm -rf "$src"
mkdir -p "$src"
cp "$top"/guest-driver/kernel/{Kbuild,Makefile,*.c,*.h} "$src/"
log "building rdma_session.ko against $kdir"
if ! make -C "$kdir" M="$src" RS_ABI_INCLUDE="$top/include" modules \
        > "$out/build.log" 2>&1; then
    tail -n 30 "$out/build.log"
    echo "guest-driver: FAIL: the module does not build (see $out/build.log)"
    exit 1
fi
if grep -E 'warning:|error:' "$out/build.log"; then
    echo "guest-driver: FAIL: the module build has warnings (see $out/build.log)"
    exit 1
fi
ko="$src/rdma_session.ko"
[ -s "$ko" ] || die "the build left no $ko"
t1=$(date +%s)

# --- Boot ---------------------------------------------------------------------
# /init loads the module before the command; the command unloads and
# reloads it (remove path, second enable after a disable) and prints the
# kernel log between markers.
gcmd='rmmod rdma_session && echo RS-RMMOD-OK; insmod /lib/modules/$(uname -r)/rdma_session.ko && echo RS-INSMOD-OK; echo RS-DMESG-BEGIN; dmesg; echo RS-DMESG-END'
RS_EXTRA_MODULES="$ko" RS_DEMO_CMD="$gcmd" RS_DEMO_TIMEOUT="${RS_DEMO_TIMEOUT:-180}" \
    "$top/scripts/run-demo.sh" > "$out/demo.log" 2>&1
drc=$?
cp "$RS_BUILD/demo/serial.log" "$out/serial.log" 2>/dev/null
t2=$(date +%s)
[ $drc = 2 ] && { tail -n 20 "$out/demo.log"; die "scripts/run-demo.sh could not run (see $out/demo.log)"; }

tr -d '\r' < "$out/serial.log" | sed -n '/^RS-DMESG-BEGIN$/,/^RS-DMESG-END$/p' > "$out/dmesg.log"
probe_re='rdma_session [0-9a-f:.]+: rdma-session: ABI 1\.0, max_qp 255, max_cq 255, max_mr [0-9]+, max_gids [0-9]+, MAC ([0-9a-f]{2}:){5}[0-9a-f]{2}, port ACTIVE'
fails=()
[ $drc = 0 ] || fails+=("the demo boot failed (status $drc, see $out/demo.log)")
grep -q '^RS-DMESG-END$' "$out/dmesg.log" || fails+=("the guest did not print its kernel log")
nprobe=$(grep -cE "$probe_re" "$out/dmesg.log")
[ "$nprobe" = 2 ] || fails+=("$nprobe probe lines with the expected values, expected 2 (boot and reload)")
grep -q '^RS-RMMOD-OK' "$out/serial.log" || fails+=("rmmod rdma_session failed")
grep -q '^RS-INSMOD-OK' "$out/serial.log" || fails+=("insmod after rmmod failed")
bad=$(grep -E 'WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)' "$out/dmesg.log" | head -n 5)
[ -z "$bad" ] || fails+=("the kernel log has: $bad")

line=$(grep -E "$probe_re" "$out/dmesg.log" | head -n 1)
log "module build $((t1 - t0)) s, image + boot $((t2 - t1)) s; logs in $out"
if [ ${#fails[@]} -eq 0 ]; then
    echo "guest-driver: PASS: ${line}"
    exit 0
fi
for f in "${fails[@]}"; do echo "guest-driver: FAIL: $f"; done
grep rdma_session "$out/dmesg.log" | head -n 10
exit 1
