#!/bin/bash
# Build rdma-core 56.x from Debian's source package (trixie) with the
# rdma-session provider (guest-driver/provider) added as
# providers/rdma_session, and install it into a staging directory for the
# guest image.  Idempotent: the source is fetched, unpacked and configured
# once; later runs copy only changed provider files and let ninja rebuild
# what they touch.
#
# Usage: scripts/build-rdma-core.sh
# Environment: RS_BUILD (default <repo>/build), RS_CACHE (download cache),
#              RS_RDMA_CORE_SERIES (default 56: upstream major version).
# Result: $RS_BUILD/rdma-core-stage, a DESTDIR install with Debian's paths
# (/usr/lib/x86_64-linux-gnu/libibverbs.so.1, .../libibverbs/
# librsession.so.1 (the provider and the direct verbs of rsessiondv.h),
# .../libibverbs/librsession-rdmav34.so, /etc/libibverbs.d/rsession.driver,
# /usr/include/infiniband/rsessiondv.h, /usr/bin/ibv_devinfo, rping, ...).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
: "${RS_RDMA_CORE_SERIES:=56}"
# shellcheck source=scripts/apt-private.sh
. "$top/scripts/apt-private.sh"

log() { printf '[build-rdma-core] %s\n' "$*" >&2; }
die() { printf '[build-rdma-core] error: %s\n' "$*" >&2; exit 1; }

need_host_packages()
{
    # From rdma-core's debian/control Build-Depends, minus what
    # -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 -DENABLE_VALGRIND=0 make unneeded
    # (pandoc, cython3, python3-dev, valgrind).  libudev-dev and
    # libsystemd-dev are only used by daemons the guest does not run.
    apt_need "" cmake ninja-build pkgconf gcc libnl-3-dev libnl-route-3-dev \
        rsync ||
        die "could not install rdma-core's build dependencies from Debian bookworm (see apt output above)"
}

# The newest cached orig tarball of the series, or nothing.
cached_tarball()
{
    find "$1" -maxdepth 1 -name "rdma-core_${RS_RDMA_CORE_SERIES}.*.orig.tar.gz" |
        sort -V | tail -n 1
}

# Find or download the rdma-core orig tarball; prints its path.
fetch_source()
{
    local dir="$RS_CACHE/src" t v
    local pat="rdma-core_${RS_RDMA_CORE_SERIES}.*.orig.tar.gz"
    mkdir -p "$dir"
    t=$(cached_tarball "$dir")
    if [ -n "$t" ]; then echo "$t"; return; fi
    apt_priv_setup || die "apt-get update with the private sources failed"
    v=$(APT_CONFIG="$RS_APT/apt.conf" apt-cache showsrc rdma-core 2>/dev/null |
        awk -v s="$RS_RDMA_CORE_SERIES" '$1 == "Version:" && index($2, s ".") == 1 {print $2}' |
        sort -V | tail -n 1)
    [ -n "$v" ] ||
        die "no source package rdma-core ${RS_RDMA_CORE_SERIES}.x in Debian trixie (deb-src): 'apt-cache showsrc rdma-core' lists none"
    log "fetching source package rdma-core=$v (trixie)"
    # The mirror may serve the tarballs but not the .dsc; apt-get then fails
    # although the orig tarball arrived, so judge by the file.
    (cd "$dir" && apt_priv source -q --download-only "rdma-core=$v" >&2) ||
        log "apt-get source rdma-core=$v reported an error; checking what arrived"
    t=$(cached_tarball "$dir")
    [ -n "$t" ] ||
        die "source package rdma-core=$v from Debian trixie: orig tarball ($pat) could not be downloaded"
    echo "$t"
}

need_host_packages
mkdir -p "$RS_BUILD"
exec 9>"$RS_BUILD/.rdma-core.lock"
flock 9

t0=$SECONDS
tarball=$(fetch_source)
ver=$(basename "$tarball" | sed -E 's/^rdma-core_([0-9.]+)\.orig\.tar\.gz$/\1/')
src="$RS_BUILD/rdma-core-$ver"
bld="$src/build"
stage="$RS_BUILD/rdma-core-stage"
prov="$src/providers/rdma_session"

# Unpack once.  The stamp names the tarball so a different one re-unpacks.
if [ "$(cat "$src/.rs-unpacked" 2>/dev/null)" != "$(basename "$tarball")" ]; then
    log "unpacking $(basename "$tarball") into $src"
    rm -rf "$src" "$src.tmp"
    mkdir -p "$src.tmp"
    tar -xzf "$tarball" -C "$src.tmp"
    mv "$src.tmp/rdma-core-$ver" "$src"
    rmdir "$src.tmp"
    basename "$tarball" > "$src/.rs-unpacked"
fi
log "source ready ($((SECONDS - t0)) s)"

# Overlay the provider and the shared ABI headers (abi/ inside the provider
# directory, so the provider builds from the rdma-core tree alone).
mkdir -p "$prov/abi"
rsync -r --checksum --delete --exclude=/abi/ "$top/guest-driver/provider/" "$prov/"
rsync -r --checksum --delete "$top/include/hw/rdma-session/" "$prov/abi/"

# Hook it into the top-level CMakeLists.txt next to the other providers.
if ! grep -q '^add_subdirectory(providers/rdma_session)' "$src/CMakeLists.txt"; then
    sed -i '/^add_subdirectory(providers\/vmw_pvrdma)$/a add_subdirectory(providers/rdma_session)' \
        "$src/CMakeLists.txt"
    grep -q '^add_subdirectory(providers/rdma_session)' "$src/CMakeLists.txt" ||
        die "could not add providers/rdma_session to $src/CMakeLists.txt"
fi

# Debian's own configuration (debian/rules), without static libraries,
# man pages, pyverbs and valgrind annotations.
cmake_args=(
    -GNinja
    -DCMAKE_BUILD_TYPE=Release
    -DDISTRO_FLAVOUR=Debian
    -DCMAKE_INSTALL_PREFIX=/usr
    -DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu
    -DCMAKE_INSTALL_SYSCONFDIR=/etc
    -DCMAKE_INSTALL_LIBEXECDIR=/usr/lib
    -DCMAKE_INSTALL_SHAREDSTATEDIR=/var/lib
    -DCMAKE_INSTALL_RUNDIR=/run
    -DCMAKE_INSTALL_UDEV_RULESDIR=/lib/udev/rules.d
    -DCMAKE_INSTALL_SYSTEMD_SERVICEDIR=/lib/systemd/system
    -DNO_MAN_PAGES=1
    -DNO_PYVERBS=1
    -DENABLE_VALGRIND=0
    -DENABLE_STATIC=0
)
if [ ! -f "$bld/build.ninja" ] ||
   [ "$(cat "$bld/.rs-cmake-args" 2>/dev/null)" != "${cmake_args[*]}" ]; then
    t1=$SECONDS
    log "configuring"
    mkdir -p "$bld"
    (cd "$bld" && cmake "${cmake_args[@]}" .. >&2) || die "cmake configure failed"
    echo "${cmake_args[*]}" > "$bld/.rs-cmake-args"
    log "configured ($((SECONDS - t1)) s)"
fi

t1=$SECONDS
jobs=$(nproc 2>/dev/null || echo 2)
ninja -C "$bld" -j "$jobs" >&2 || die "build failed"
log "built ($((SECONDS - t1)) s)"

# Install into the staging directory; cmake's install skips files that are
# already up to date.  The provider was once a plain provider named
# rdma_session: a stale copy would be loaded next to librsession.
rm -f "$stage/etc/libibverbs.d/rdma_session.driver" \
    "$stage"/usr/lib/x86_64-linux-gnu/libibverbs/librdma_session-rdmav*.so
DESTDIR="$stage" ninja -C "$bld" install > "$bld/.rs-install.log" 2>&1 ||
    { cat "$bld/.rs-install.log" >&2; die "install into $stage failed"; }
lib="$stage/usr/lib/x86_64-linux-gnu"
for f in "$lib/libibverbs.so.1" "$lib/libibverbs/librsession-rdmav34.so" \
         "$lib/librsession.so.1" "$stage/usr/include/infiniband/rsessiondv.h" \
         "$stage/etc/libibverbs.d/rsession.driver" "$stage/usr/bin/ibv_devinfo"; do
    [ -e "$f" ] || die "missing after install: $f"
done
log "installed into $stage (total $((SECONDS - t0)) s)"
