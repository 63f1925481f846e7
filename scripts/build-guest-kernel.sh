#!/bin/bash
# Build a guest kernel variant from Debian's kernel source: the source
# package of the guest kernel's version (the linux-image-6.12.* package
# scripts/guest-image.sh boots, from bookworm-backports' deb-src),
# configured small: "make allnoconfig", the kernel's kvm_guest.config,
# scripts/guest-kernel/base.config (what the guest images need) and the
# variant's fragment scripts/guest-kernel/<variant>.config.  Every module of
# scripts/guest-kernel/modules.list must come out, as a module or built in.
# Debian's own config (1,800 built-in options) took 53 minutes to build on
# two loaded cores; this one builds in a fraction of that.
# Modules are unsigned and uncompressed, no debug information.
#
# The result is cached in $RS_CACHE/kernel/<variant>-<key>/, key = the
# source version, the base config, the fragment, the module list and the
# script's recipe number; an existing result is reused:
#     vmlinuz                  the bzImage
#     kver                     its release (uname -r), e.g. 6.12.95+deb12-p2p
#     lib/modules/<kver>/      modules_install's tree (modules.dep etc.)
#     build/                   the kbuild output tree (O=), prepared for
#                              out-of-tree modules: make -C .../build M=...
# The unpacked source (shared by the variants) is in
# $RS_CACHE/kernel/src/linux-<version>/, the source package in
# $RS_CACHE/src/linux/.  Compiles go through ccache ($RS_CACHE/ccache,
# shared with scripts/build-qemu.sh, at most 5 GB).
#
# Usage: scripts/build-guest-kernel.sh [--cached] [VARIANT]   (default:
#        p2p, or $RS_KERNEL_VARIANT)
# Prints the variant directory on stdout; progress goes to stderr.  With
# --cached it builds nothing: it prints the directory if the variant is
# already built, else exits with status 3.
#
# Environment: RS_CACHE, RS_KERNEL_PKG (as in scripts/guest-image.sh),
#   RS_KERNEL_VARIANT, RS_KERNEL_JOBS (make -j, default: nproc).  The build
#   runs under nice -n 19.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-private.sh"

log() { printf '[guest-kernel] %s\n' "$*" >&2; }
die() { printf '[guest-kernel] error: %s\n' "$*" >&2; exit 1; }
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

cached_only=0
if [ "${1:-}" = --cached ]; then
    cached_only=1
    shift
fi
variant=${1:-${RS_KERNEL_VARIANT:-p2p}}
frag="$top/scripts/guest-kernel/$variant.config"
base="$top/scripts/guest-kernel/base.config"
modlist="$top/scripts/guest-kernel/modules.list"
[ -f "$frag" ] || die "no fragment $frag for variant '$variant' (scripts/guest-kernel/*.config)"
[ -f "$modlist" ] || die "no module list $modlist"
[ -f "$base" ] || die "no base config $base"

kdir="$RS_CACHE/kernel"
srcpkg="$RS_CACHE/src/linux"
debs="$RS_CACHE/guest/debs"
mkdir -p "$kdir/src" "$srcpkg" "$debs"
export APT_CONFIG="$RS_APT/apt.conf"

need=()
for t in gcc make bc flex bison dpkg-source xz perl; do
    command -v "$t" >/dev/null || need+=("$t")
done
[ ${#need[@]} -eq 0 ] || apt_need "" gcc make bc flex bison dpkg-dev xz-utils perl ||
    die "cannot install the build tools (${need[*]})"
[ -e /usr/include/libelf.h ] || apt_need "" libelf-dev || die "cannot install libelf-dev"
[ -e /usr/include/openssl/ssl.h ] || apt_need "" libssl-dev || die "cannot install libssl-dev"
command -v ccache >/dev/null || apt_need "" ccache || die "cannot install ccache"
apt_priv_setup || die "apt-get update with the private sources failed"

# --- Which version ---------------------------------------------------------
# The same choice as scripts/guest-image.sh: RS_KERNEL_PKG, else the
# installed linux-headers-6.12.*-amd64, else bookworm-backports' default.
kernel_pkg()
{
    if [ -n "${RS_KERNEL_PKG:-}" ]; then
        echo "$RS_KERNEL_PKG"; return
    fi
    local h v
    h=$(dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
        awk '$1 ~ /^linux-headers-6\.12\.[0-9]+\+.*-amd64$/ && /install ok installed/ {print $1}' |
        sort -V | tail -n 1)
    if [ -n "$h" ]; then
        echo "linux-image-${h#linux-headers-}"; return
    fi
    v=$(apt-cache madison linux-image-amd64 2>/dev/null |
        awk -F' *[|] *' '$3 ~ /bookworm-backports/ {print $2}' | sort -V | tail -n 1)
    [ -n "$v" ] || die "bookworm-backports has no linux-image-amd64 (private apt lists in $RS_APT)"
    apt-cache show "linux-image-amd64=$v" |
        sed -n 's/^Depends: *\(linux-image-[^ ,]*\).*/\1/p' | head -n 1
}
kpkg=$(kernel_pkg)
[ -n "$kpkg" ] || die "could not determine the guest kernel package"
kdeb=$(guest_deb_fetch "$kpkg" "$debs") || die "cannot fetch $kpkg"
ver=$(dpkg-deb -f "$kdeb" Version)          # e.g. 6.12.95-1~bpo12+1
src=$(dpkg-deb -f "$kdeb" Source | sed 's/ .*//')
src=${src:-linux}
[ "$src" = linux ] || [ "$src" = linux-signed-amd64 ] || die "$kpkg comes from source $src, not linux"

# --- Cache key ---------------------------------------------------------------
# Not this script's text (a comment must not throw away an hour of
# build): bump recipe when a change here changes what is built.
recipe=2
key=$( { echo "linux $ver recipe $recipe"; cat "$base" "$frag"
         grep -v '^#' "$modlist"; } | sha1sum | cut -c1-16)
out="$kdir/$variant-$key"
if [ -s "$out/vmlinuz" ] && [ -s "$out/kver" ]; then
    log "up to date: $out ($(cat "$out/kver"))"
    echo "$out"
    exit 0
fi
[ $cached_only = 0 ] || exit 3
exec 9>"$kdir/.lock"
flock 9
# Another build may have finished it while we waited for the lock.
if [ -s "$out/vmlinuz" ] && [ -s "$out/kver" ]; then
    log "up to date: $out ($(cat "$out/kver"))"
    echo "$out"
    exit 0
fi

# --- Source ----------------------------------------------------------------------
tree="$kdir/src/linux-$ver"
if [ ! -e "$tree/Makefile" ] || [ ! -e "$tree/.rs-unpacked" ]; then
    dsc="$srcpkg/linux_${ver#*:}.dsc"
    if [ ! -s "$dsc" ]; then
        t0=$(date +%s.%N)
        log "downloading the source package linux $ver"
        (cd "$srcpkg" && apt_priv source -q --download-only "linux=$ver" >&2) ||
            die "cannot download the source package linux=$ver (deb-src of bookworm-backports)"
        [ -s "$dsc" ] || die "apt-get source left no $dsc"
        log "downloaded in $(secs "$t0") s"
    fi
    t0=$(date +%s.%N)
    rm -rf "$tree" "$tree.tmp"
    log "unpacking linux $ver with Debian's patches"
    nice -n 19 dpkg-source -q -x "$dsc" "$tree.tmp" >&2 || die "dpkg-source -x $dsc failed"
    touch "$tree.tmp/.rs-unpacked"
    mv "$tree.tmp" "$tree"
    log "unpacked in $(secs "$t0") s"
fi

# --- Configure ---------------------------------------------------------------------
jobs=${RS_KERNEL_JOBS:-$(nproc)}
b="$out/build"
mk=(nice -n 19 make -C "$tree" O="$b" -j"$jobs"
    KBUILD_BUILD_TIMESTAMP="Debian $ver" KBUILD_BUILD_USER=rdma-session KBUILD_BUILD_HOST=guest-kernel)
export CCACHE_DIR="$RS_CACHE/ccache" CCACHE_BASEDIR="$kdir" CCACHE_NOHASHDIR=1 \
    CCACHE_MAXSIZE=5G
mk+=(CC="ccache gcc")
tb=$(date +%s.%N)
# An interrupted build resumes where it stopped (same key, same config).
mkdir -p "$b"
if [ ! -e "$out/.configured" ]; then
# allnoconfig, then kvm_guest.config, the base and the fragment on top.
"${mk[@]}" allnoconfig > "$out/config.log" 2>&1 || { tail "$out/config.log" >&2; die "make allnoconfig failed"; }
cat "$tree/kernel/configs/kvm_guest.config" "$base" "$frag" >> "$b/.config"
"${mk[@]}" olddefconfig >> "$out/config.log" 2>&1 || { tail "$out/config.log" >&2; die "make olddefconfig failed"; }
# Every setting of the base and the fragment must have survived.
cat "$base" "$frag" | while IFS= read -r l; do
    case $l in
    CONFIG_*=*) grep -qxF -- "$l" "$b/.config" || die "the config lost '$l' (a dependency missing? $b/.config)" ;;
    '# CONFIG_'*' is not set') c=${l#\# }; c=${c%% *}
        ! grep -q "^$c=" "$b/.config" || die "the config still has $(grep "^$c=" "$b/.config")" ;;
    esac
done || exit 1
touch "$out/.configured"
fi
nmod=$(grep -c '=m$' "$b/.config" || true)
log "configured ($variant: $(grep -c '=y$' "$b/.config") built in, $nmod modules) in $(secs "$tb") s"

# --- Build ---------------------------------------------------------------------------
t0=$(date +%s.%N)
log "building bzImage and modules with make -j$jobs (log: $out/build.log)"
"${mk[@]}" bzImage modules > "$out/build.log" 2>&1 ||
    { grep -E 'error|Error' "$out/build.log" | tail -n 20 >&2; die "the kernel build failed (log: $out/build.log)"; }
log "built in $(secs "$t0") s"
echo "make -j$jobs bzImage modules: $(secs "$t0") s wall" > "$out/build-time"
kver=$("${mk[@]}" -s kernelrelease)
rm -rf "$out/lib"
"${mk[@]}" INSTALL_MOD_PATH="$out" INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod modules_install \
    > "$out/install.log" 2>&1 || { tail "$out/install.log" >&2; die "modules_install failed"; }
rm -f "$out/lib/modules/$kver/build" "$out/lib/modules/$kver/source"
missing=()
for m in $(grep -v '^#' "$modlist"); do
    n=${m//-/_} a=${m//_/-}
    [ -n "$(find "$out/lib/modules/$kver/kernel" \( -name "$n.ko" -o -name "$a.ko" \))" ] ||
        grep -qE "/($n|$a)\.ko\$" "$out/lib/modules/$kver/modules.builtin" || missing+=("$m")
done
[ ${#missing[@]} -eq 0 ] || die "the $variant kernel lacks modules.list's ${missing[*]} (scripts/guest-kernel/base.config)"
cp "$b/arch/x86/boot/bzImage" "$out/vmlinuz"
echo "$kver" > "$out/kver"
log "built $out: kernel $kver, $nmod modules, in $(secs "$tb") s"

# Keep the two most recent builds of each variant.
find "$kdir" -mindepth 1 -maxdepth 1 -type d -name "$variant-*" \
    -printf '%T@ %p\n' | sort -rn | tail -n +3 | cut -d' ' -f2- | xargs -r rm -rf
echo "$out"
