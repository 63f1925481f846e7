#!/bin/bash
# Build the guest kernel module rdma_session.ko (guest-driver/kernel) against
# the headers of the guest kernel, incrementally, in $RS_BUILD/guest-module.
# Prints the path of the .ko on stdout; progress and errors go to stderr.
# Exits 0 on success, 1 if the module does not build, 2 on a setup error.
#
# The headers: the newest installed linux-headers-6.12.*-amd64 (the same
# choice scripts/guest-image.sh makes for the guest kernel); if none is
# installed, linux-headers-amd64 is installed from bookworm-backports
# (scripts/apt-private.sh, apt_need).  RS_KERNEL_PKG=linux-image-<kver>
# selects another version.  RS_KERNEL_VARIANT=NAME builds against that
# variant of the guest kernel (scripts/build-guest-kernel.sh NAME, built
# if needed; or the path of a variant directory) instead, in
# $RS_BUILD/guest-module-NAME.
#
# Environment: RS_BUILD (default build/), RS_CACHE, RS_KERNEL_PKG,
# RS_KERNEL_VARIANT.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
. "$top/scripts/apt-private.sh"

log() { printf '[guest-module] %s\n' "$*" >&2; }
die() { printf '[guest-module] error: %s\n' "$*" >&2; exit 2; }

installed_kver()
{
    dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
        awk '$1 ~ /^linux-headers-6\.12\.[0-9]+\+.*-amd64$/ && /install ok installed/ {print $1}' |
        sort -V | tail -n 1 | sed 's/^linux-headers-//'
}
variant=${RS_KERNEL_VARIANT:-}
if [ -n "$variant" ]; then
    case $variant in
    */*) vdir=$variant ;;
    *) vdir=$("$top/scripts/build-guest-kernel.sh" "$variant") ||
           die "the guest kernel variant $variant does not build (scripts/build-guest-kernel.sh)" ;;
    esac
    [ -s "$vdir/kver" ] || die "$vdir is not a guest kernel variant directory (no kver)"
    kver=$(cat "$vdir/kver")
elif [ -n "${RS_KERNEL_PKG:-}" ]; then
    kver=${RS_KERNEL_PKG#linux-image-}
    apt_need bookworm-backports "linux-headers-$kver" >&2 || die "cannot install linux-headers-$kver"
else
    kver=$(installed_kver)
    if [ -z "$kver" ]; then
        apt_need bookworm-backports linux-headers-amd64 >&2 ||
            die "cannot install linux-headers-amd64 from bookworm-backports"
        kver=$(installed_kver)
    fi
fi
[ -n "$kver" ] || die "no linux-headers-6.12.*-amd64 installed"
if [ -n "$variant" ]; then
    kdir=$vdir/build
else
    kdir=/lib/modules/$kver/build
    [ -e "$kdir/Makefile" ] || kdir=/usr/src/linux-headers-$kver
fi
[ -e "$kdir/Makefile" ] || die "no kernel build tree for $kver"

out="$RS_BUILD/guest-module${variant:+-$(basename "$variant")}"
mkdir -p "$out/src"
exec 9>"$out/.lock"
flock 9
# Copy the sources, keeping modification times, only when they changed,
# so that kbuild rebuilds only what changed.
for f in "$top"/guest-driver/kernel/{Kbuild,Makefile,*.c,*.h}; do
    [ -e "$f" ] || continue
    cmp -s "$f" "$out/src/${f##*/}" || cp -p "$f" "$out/src/"
done
# Sources removed from the tree: drop the copies too.
for f in "$out"/src/*.c "$out"/src/*.h; do
    [ -e "$f" ] || continue
    [ -e "$top/guest-driver/kernel/${f##*/}" ] || rm -f "$f" "${f%.c}.o"
done
log "building rdma_session.ko against $kdir"
if ! make -C "$kdir" M="$out/src" RS_ABI_INCLUDE="$top/include" modules \
        > "$out/build.log" 2>&1; then
    tail -n 30 "$out/build.log" >&2
    log "the module does not build (see $out/build.log)"
    exit 1
fi
grep -E 'warning:' "$out/build.log" >&2 && log "the module build has warnings (see $out/build.log)"
[ -s "$out/src/rdma_session.ko" ] || die "the build left no $out/src/rdma_session.ko"
echo "$out/src/rdma_session.ko"
