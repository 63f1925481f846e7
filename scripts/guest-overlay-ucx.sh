#!/bin/bash
# The UCX and Open MPI overlay of the guest image: a second compressed
# cpio archive that scripts/guest-image.sh appends to the base initramfs
# when RS_GUEST_OVERLAY=ucx (Linux unpacks concatenated archives in turn,
# the later one's files over the earlier's).
#
# Why an overlay and not part of the base image: UCX, Open MPI and their
# libraries add ~25 MB unpacked to every boot of every suite (each VM
# decompresses its initramfs under TCG, and the suites boot hundreds of
# VMs), while only tests/guest/ucx.py and users who ask for MPI need them.
# An overlay rather than a second variant of the whole image: it does not
# depend on the base's contents (the module, rdma-core, the verbs
# programs change often), so it is built once per set of packages and
# only concatenated (a copy) onto each new base image.
#
# Contents, Debian bookworm's packages unpacked with dpkg-deb (fetched
# with the private apt configuration, scripts/apt-private.sh, into
# $RS_CACHE/guest/debs; nothing is installed on the host):
#   ucx-utils, libucx0 1.13 (ucx_info, ucx_perftest; the UCT modules
#     libuct_ib, libuct_rdmacm, libuct_cma that libuct dlopen()s)
#   openmpi-bin, libopenmpi3, openmpi-common 4.1.4 (mpirun, orted,
#     ompi_info; every MCA component; help texts and /etc/openmpi)
#   libpmix2, libhwloc15, libevent, libfabric1, libpsm2-2,
#     libpsm-infinipath1 and the other libraries they need
#   libhwloc-plugins' hwloc_pci only: its hwloc_gl, hwloc_opencl and
#     hwloc_xml_libxml need X11, OpenCL and libxml2 with libicu (~35 MB);
#     the guest has no GPU and hwloc has an XML parser of its own
#   the links Debian's alternatives make (mpirun, mpiexec,
#     libpsm_infinipath.so.1)
#   rs-rsh and rs-rshd (scripts/guest-ucx/): mpirun's remote start over
#     busybox nc, since the guest has no ssh
#   rs-mpi-check (tests/guest/mpi/rs-mpi-check.c), built here against
#     libopenmpi-dev's mpi.h (that package is unpacked, not installed)
# Every ELF file's DT_NEEDED, the dlopen()ed plugins' included, must be
# found in the overlay or in the base image, and every versioned symbol
# it references defined there (as guest-image.sh checks for the base);
# the build fails otherwise.  Documentation, man pages, headers and static
# libraries are left out.
#
# The result is cached by content: $RS_CACHE/guest/ucx-<hash>/ of the
# package versions, this script, scripts/guest-ucx/, the MPI program and
# the base image's list of libraries (the names only); the three most
# recent are kept.
#
# Usage: scripts/guest-overlay-ucx.sh BASE_INITRD
#   prints the overlay's path (overlay.cpio.gz) on stdout; progress on
#   stderr.  BASE_INITRD is the base image's initramfs.cpio.gz.
# Environment: RS_CACHE (default ~/.cache/rdma-session).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-private.sh"

log() { printf '[guest-overlay-ucx] %s\n' "$*" >&2; }
die() { printf '[guest-overlay-ucx] error: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] && [ -s "$1" ] || die "usage: $0 BASE_INITRD (the base image's initramfs.cpio.gz)"
base=$1
files=$top/scripts/guest-ucx
prog=$top/tests/guest/mpi/rs-mpi-check.c
gdir="$RS_CACHE/guest"
debs="$gdir/debs"
mkdir -p "$debs"
export APT_CONFIG="$RS_APT/apt.conf"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (this script needs Debian)"
PATH=$PATH:/usr/sbin:/sbin

# What goes into the guest, and libopenmpi-dev for mpi.h only.
pkgs="ucx-utils libucx0 openmpi-bin libopenmpi3 openmpi-common
    libpmix2 libhwloc15 libhwloc-plugins libpciaccess0 libevent-core-2.1-7
    libevent-pthreads-2.1-7 libfabric1 libpsm2-2 libpsm-infinipath1 libuuid1
    libnuma1 libmunge2 libatomic1 libgomp1 libstdc++6"
dev_pkgs="libopenmpi-dev"

# fetch PKG: the .deb (scripts/apt-private.sh, guest_deb_fetch, as
# guest-image.sh picks them: the guest's glibc is bookworm's).
# $madison: apt-cache madison of all the packages, asked once below
# (about 2 s a call).
madison=''
fetch() { guest_deb_fetch "$1" "$debs" "$madison" || die "cannot fetch $1"; }

# Versions resolved with apt-cache (seconds) are remembered until the
# package lists are refreshed or the list above changes.
declare -A deb=()
memo="$gdir/.ucx-resolved-$( { stat -c %Y "$RS_APT/lists/.updated" 2>/dev/null || true
    echo $pkgs $dev_pkgs; } | sha1sum | cut -c1-12)"
if [ -s "$memo" ]; then
    while read -r name path; do
        [ -s "$path" ] || { deb=(); break; }
        deb[$name]=$path
    done < "$memo"
fi
if [ -z "${deb[libucx0]:-}" ] || [ -z "${deb[libopenmpi-dev]:-}" ]; then
    deb=()
    apt_priv_setup || die "apt-get update with the private sources failed"
    madison=$(apt-cache madison $pkgs $dev_pkgs 2>/dev/null) || true
    for p in $pkgs $dev_pkgs; do
        deb[$p]=$(fetch "$p")
    done
    rm -f "$gdir"/.ucx-resolved-*
    for p in "${!deb[@]}"; do echo "$p ${deb[$p]}"; done | sort > "$memo"
fi

# The busybox of the base image's package lists and unpacks cpio archives
# (the host may have no cpio).
bbdeb=$(ls -1 "$debs"/busybox-static_*.deb 2>/dev/null | tail -n 1 || true)
[ -n "$bbdeb" ] || die "no busybox-static .deb in $debs (scripts/guest-image.sh fetches it)"

# The base image's libraries (names): what the overlay need not bring.
tmpbb=$(mktemp -d "$gdir/.ucx-bb.XXXXXX")
trap 'rm -rf "$tmpbb"' EXIT
dpkg-deb -x "$bbdeb" "$tmpbb"
bb=$tmpbb/bin/busybox
baselibs=$(gzip -dc "$base" | "$bb" cpio -t 2>/dev/null |
    sed -n 's@^\(\./\)\{0,1\}\(usr/\)\{0,1\}lib\(64\)\{0,1\}/\(x86_64-linux-gnu/\)\{0,1\}\([^/]*\.so[^/]*\)$@\5@p' |
    LC_ALL=C sort -u)
[ -n "$baselibs" ] || die "no libraries found in $base"

key=$( { for p in "${!deb[@]}"; do basename "${deb[$p]}"; done | LC_ALL=C sort
         echo "$baselibs"
         sha1sum < "$0"; cat "$files"/* "$prog"; } | sha1sum | cut -c1-16)
out="$gdir/ucx-$key"
if [ -s "$out/overlay.cpio.gz" ]; then
    log "up to date: $out"
    echo "$out/overlay.cpio.gz"
    exit 0
fi

# --- Build -----------------------------------------------------------------
tb=$(date +%s.%N)
log "building the UCX/Open MPI overlay $key"
work=$(mktemp -d "$gdir/.work-ucx.XXXXXX")
trap 'rm -rf "$tmpbb" "$work"' EXIT
root=$work/root
mkdir -p "$root" "$work/dev" "$work/base"
for p in $pkgs; do
    dpkg-deb -x "${deb[$p]}" "$root"
done
for p in $dev_pkgs; do
    dpkg-deb -x "${deb[$p]}" "$work/dev"
done
# The base image's libraries, for linking the MPI program and checking
# symbol versions.
(cd "$work/base" && gzip -dc "$base" | "$bb" cpio -i -d -m 2>/dev/null) ||
    die "cannot unpack the libraries of $base"

# A file the base image has stays the base's (rdma-core's libraries from
# its staging tree, for one): the overlay's copy would replace it.
gzip -dc "$base" | "$bb" cpio -t 2>/dev/null | sed 's@^\./@@' | LC_ALL=C sort > "$work/base.list"
(cd "$root" && find . ! -type d | sed 's@^\./@@' | LC_ALL=C sort) > "$work/ov.list"
LC_ALL=C comm -12 "$work/base.list" "$work/ov.list" > "$work/both.list"
if [ -s "$work/both.list" ]; then
    log "left to the base image: $(tr '\n' ' ' < "$work/both.list")"
    (cd "$root" && xargs -r rm -f < "$work/both.list")
fi
rm -rf "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/lintian \
    "$root"/usr/share/bug "$root"/usr/include
find "$root" \( -name '*.a' -o -name '*.la' -o -path '*/pkgconfig/*' \) -delete
rm -f "$root"/usr/lib/x86_64-linux-gnu/hwloc/hwloc_gl.so \
    "$root"/usr/lib/x86_64-linux-gnu/hwloc/hwloc_opencl.so \
    "$root"/usr/lib/x86_64-linux-gnu/hwloc/hwloc_xml_libxml.so
[ -e "$root/usr/lib/x86_64-linux-gnu/hwloc/hwloc_pci.so" ] || die "libhwloc-plugins has no hwloc_pci.so"
# Debian's alternatives (the maintainer scripts do not run here).
ln -sf mpirun.openmpi "$root/usr/bin/mpirun"
ln -sf mpiexec.openmpi "$root/usr/bin/mpiexec"
psm1=$(cd "$root" && ls usr/lib/libpsm1/libpsm_infinipath.so.1.* 2>/dev/null | head -n 1 || true)
[ -n "$psm1" ] || die "libpsm-infinipath1 has no usr/lib/libpsm1/libpsm_infinipath.so.1.*"
ln -sf "/$psm1" "$root/usr/lib/x86_64-linux-gnu/libpsm_infinipath.so.1"
for b in mpirun.openmpi orted ompi_info ucx_info ucx_perftest; do
    [ -x "$root/usr/bin/$b" ] || die "no /usr/bin/$b in the packages"
done
install -m 755 "$files/rs-rsh" "$files/rs-rshd" "$root/usr/bin/"

# The MPI program, against libopenmpi-dev's mpi.h and the libraries of
# the overlay and the base image.
inc=$work/dev/usr/lib/x86_64-linux-gnu/openmpi/include
[ -e "$inc/mpi.h" ] || die "libopenmpi-dev has no usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h"
command -v gcc >/dev/null || apt_need "" gcc || die "cannot install gcc"
ld_dirs=("$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib/libpsm1"
         "$work/base/usr/lib/x86_64-linux-gnu" "$work/base/lib/x86_64-linux-gnu")
gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -I"$inc" -o "$root/usr/bin/rs-mpi-check" "$prog" \
    -L"$root/usr/lib/x86_64-linux-gnu" "${ld_dirs[@]/#/-Wl,-rpath-link,}" -l:libmpi.so.40 >&2 ||
    die "tests/guest/mpi/rs-mpi-check.c does not build"

# Shared libraries: every ELF file's DT_NEEDED must be in the overlay or in
# the base image (no fallback to the host's: the overlay holds the
# packages' own, the base what guest-image.sh put there).
elf() { [ "$(head -c 4 "$1" 2>/dev/null | tr -d '\0')" = $'\x7fELF' ]; }
declare -A have=() libpath=()
while IFS= read -r -d '' f; do
    have[${f##*/}]=1
    [ -n "${libpath[${f##*/}]:-}" ] || libpath[${f##*/}]=$f
done < <(find "$root" "$work/base" \( -type f -o -type l \) -name '*.so*' -print0)
missing=()
while IFS= read -r -d '' f; do
    elf "$f" || continue
    for n in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        [ -n "${have[$n]:-}" ] || missing+=("$n (needed by ${f#$root})")
    done
done < <(find "$root" -type f -print0)
[ ${#missing[@]} -eq 0 ] || {
    printf '[guest-overlay-ucx]   %s\n' "${missing[@]}" >&2
    die "shared libraries in neither the overlay's packages nor the base image (add their package to pkgs)"
}
# Every versioned symbol reference defined by the library the guest will
# load (the overlay's, else the base image's).
declare -A vdefs=()
unresolved=()
while IFS= read -r -d '' f; do
    elf "$f" || continue
    while read -r lib ver; do
        p=${libpath[$lib]:-}
        [ -n "$p" ] || { unresolved+=("${f#$root}: $lib not found"); continue; }
        if [ -z "${vdefs[$lib]:-}" ]; then
            vdefs[$lib]=" $(objdump -p "$p" 2>/dev/null | awk '/^Version definitions:/ {d=1; next}
                /^Version References:/ || /^$/ {d=0} d && NF >= 4 {print $4}' | tr '\n' ' ') "
        fi
        case ${vdefs[$lib]} in
        *" $ver "*) ;;
        *) unresolved+=("${f#$root}: $ver from $lib") ;;
        esac
    done < <(objdump -p "$f" 2>/dev/null | awk '/^Version References:/ {r=1; next}
        r && /required from/ {lib=$3; sub(/:$/, "", lib); next}
        r && NF >= 4 {print lib, $4}')
done < <(find "$root" -type f -print0)
[ ${#unresolved[@]} -eq 0 ] || {
    printf '[guest-overlay-ucx]   %s\n' "${unresolved[@]}" >&2
    die "symbol versions that the overlay's and the base image's libraries do not define"
}
strip --strip-unneeded "$root/usr/bin/rs-mpi-check"

mkdir -p "$work/out"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | "$bb" cpio -o -H newc -R 0:0 2>/dev/null) |
    gzip -6 > "$work/out/overlay.cpio.gz"
# Another build of the same inputs may have finished meanwhile.
if [ -s "$out/overlay.cpio.gz" ]; then
    rm -rf "$work/out"
else
    rm -rf "$out"
    mv "$work/out" "$out"
fi
log "built $out in $(awk -v a="$tb" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s: $(du -k "$out/overlay.cpio.gz" | cut -f1) KiB ($(du -sk "$root" | cut -f1) KiB unpacked)"

# Keep the three most recent overlays.
find "$gdir" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended \
    -regex '.*/ucx-[0-9a-f]{16}' -printf '%T@ %p\n' | sort -rn | tail -n +4 |
    cut -d' ' -f2- | xargs -r rm -rf
echo "$out/overlay.cpio.gz"
