#!/bin/bash
# Build QEMU 10.0.x from Debian's source package with the rdma-session tree
# overlaid.  Idempotent: the source is fetched and configured once; later
# runs copy only changed files and let ninja rebuild what they touch.
#
# Usage: scripts/build-qemu.sh [--fuzz] [ninja targets...]
#   --fuzz  a second build directory of the same source (build-fuzz, linked
#           as $RS_BUILD/qemu-fuzz) with clang, libFuzzer, ASan and UBSan;
#           default targets qemu-fuzz-x86_64, qemu-system-x86_64, qos-test
#           and rdma-session-test
# Environment: RS_BUILD (default <repo>/build), RS_CACHE (download cache).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
. "$top/scripts/apt-private.sh"

log() { printf '[build-qemu] %s\n' "$*" >&2; }
die() { printf '[build-qemu] error: %s\n' "$*" >&2; exit 1; }

# Host packages QEMU needs.  meson >= 1.5 only exists in bookworm-backports.
need_host_packages()
{
    if ! meson --version 2>/dev/null | awk -F. '{exit !($1 > 1 || $2 >= 5)}'; then
        apt_need bookworm-backports meson ||
            die "meson >= 1.5 is needed: package 'meson' from suite bookworm-backports could not be installed"
    fi
    apt_need "" ninja-build python3-venv python3-pycotap pkg-config gcc \
        libglib2.0-dev libpixman-1-dev libslirp-dev zlib1g-dev libfdt-dev \
        flex bison bzip2 rsync seabios qemu-system-data ipxe-qemu ||
        die "could not install QEMU's build dependencies from Debian bookworm (see apt output above)"
}

# Find or download the QEMU 10.0.x orig tarball; prints its path.
fetch_qemu_source()
{
    local dir="$RS_CACHE/src" t v suite
    mkdir -p "$dir"
    t=$(ls -1 "$dir"/qemu_10.0.*+ds.orig.tar.xz 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$t" ]; then echo "$t"; return; fi
    apt_priv_setup || die "apt-get update with the private sources failed"
    for suite in trixie bookworm-backports; do
        v=$(APT_CONFIG="$RS_APT/apt.conf" apt-cache showsrc qemu 2>/dev/null |
            awk '/^Version: 1:10\.0\./ {print $2}' | sort -V | tail -n 1)
        [ -n "$v" ] || continue
        log "fetching source package qemu=$v"
        if (cd "$dir" && apt_priv source -q --download-only "qemu=$v" >&2); then
            t=$(ls -1 "$dir"/qemu_10.0.*+ds.orig.tar.xz 2>/dev/null | sort -V | tail -n 1 || true)
            [ -n "$t" ] && { echo "$t"; return; }
        fi
        log "source package qemu=$v from $suite could not be downloaded"
    done
    die "no QEMU 10.0.x source: 'apt-get source qemu' from suites trixie and bookworm-backports (deb-src) both failed"
}

fuzz=0
if [ "${1:-}" = --fuzz ]; then fuzz=1; shift; fi

need_host_packages
# libFuzzer and the sanitizer runtimes come with Debian's clang and
# compiler-rt; gcc has no -fsanitize=fuzzer.
if [ $fuzz = 1 ]; then
    apt_need "" clang libclang-rt-14-dev ||
        die "the fuzz build needs clang and libclang-rt-14-dev from Debian bookworm"
fi
# Serialise concurrent builds sharing one tree.
mkdir -p "$RS_BUILD"
exec 9>"$RS_BUILD/.lock"
flock 9
tarball=$(fetch_qemu_source)
ver=$(basename "$tarball" | sed -E 's/^qemu_([0-9.]+)\+ds.*/\1/')
src="$RS_BUILD/qemu-$ver"
bld="$src/build"
link="$RS_BUILD/qemu"
[ $fuzz = 0 ] || { bld="$src/build-fuzz"; link="$RS_BUILD/qemu-fuzz"; }

# The integration patch the tree was unpacked with: the copy kept beside
# it, or (trees unpacked before the copy was kept) the version in the
# repository's history with the recorded checksum.
applied_patch()
{
    local sum h
    sum=$(cat "$src/.rs-unpacked" 2>/dev/null) || return 1
    if [ -f "$src/.rs-patch" ]; then
        [ "$(sha1sum < "$src/.rs-patch" | cut -c1-12)" = "$sum" ] || return 1
        cat "$src/.rs-patch"
        return
    fi
    for h in $(git -C "$top" log --format=%H -- scripts/qemu-integration.patch 2>/dev/null); do
        if [ "$(git -C "$top" show "$h:scripts/qemu-integration.patch" | sha1sum | cut -c1-12)" = "$sum" ]; then
            git -C "$top" show "$h:scripts/qemu-integration.patch"
            return
        fi
    done
    return 1
}

# A changed integration patch, applied in place: every file the old or the
# new patch touches is taken from the tarball, patched in a scratch tree,
# and copied over only if its content changed, so ninja rebuilds only what
# depends on it (a new generic-fuzz configuration: generic_fuzz.c).  False
# if that cannot be done; then the tree is unpacked afresh.
patch_in_place()
{
    local tmp files f rc=1
    tmp=$(mktemp -d) || return 1
    applied_patch > "$tmp/old.patch" || { rm -rf "$tmp"; return 1; }
    files=$(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$tmp/old.patch" \
                "$top/scripts/qemu-integration.patch" | sort -u)
    case $'\n'$files$'\n' in
    *$'\n'Kconfig$'\n'*|*$'\n'MAINTAINERS$'\n'*) rm -rf "$tmp"; return 1 ;;
    esac
    if tar -tf "$tarball" > "$tmp/list" &&
       grep -Fx -f <(sed "s|^|qemu-$ver/|" <<<"$files") "$tmp/list" > "$tmp/members" &&
       mkdir "$tmp/t" && tar -C "$tmp/t" -xf "$tarball" -T "$tmp/members" &&
       mkdir -p "$tmp/t/qemu-$ver" &&
       (cd "$tmp/t/qemu-$ver" && patch -p1 --quiet < "$top/scripts/qemu-integration.patch"); then
        rc=0
        for f in $files; do
            if [ -f "$tmp/t/qemu-$ver/$f" ]; then
                cmp -s "$tmp/t/qemu-$ver/$f" "$src/$f" && continue
                log "integration patch: $f"
                mkdir -p "$(dirname "$src/$f")"
                cp "$tmp/t/qemu-$ver/$f" "$src/$f" || rc=1
            else
                rm -f "$src/$f"     # a file only the old patch added
            fi
        done
    fi
    rm -rf "$tmp"
    return $rc
}

patchsum=$(sha1sum < "$top/scripts/qemu-integration.patch" | cut -c1-12)
if [ -d "$src" ] && [ "$(cat "$src/.rs-unpacked" 2>/dev/null)" != "$patchsum" ] &&
   patch_in_place; then
    cp "$top/scripts/qemu-integration.patch" "$src/.rs-patch"
    echo "$patchsum" > "$src/.rs-unpacked"
fi
# Otherwise a changed integration patch means a fresh tree (both build
# directories).
if [ "$(cat "$src/.rs-unpacked" 2>/dev/null)" != "$patchsum" ]; then
    log "unpacking $(basename "$tarball")"
    rm -rf "$src"
    mkdir -p "$RS_BUILD"
    tar -C "$RS_BUILD" -xf "$tarball"
    [ -d "$src" ] || die "unexpected tarball layout in $tarball"
    (cd "$src" && patch -p1 --quiet < "$top/scripts/qemu-integration.patch") ||
        die "scripts/qemu-integration.patch does not apply to QEMU $ver"
    cat "$top/Kconfig" >> "$src/Kconfig"
    cat "$top/MAINTAINERS" >> "$src/MAINTAINERS"
    cp "$top/scripts/qemu-integration.patch" "$src/.rs-patch"
    echo "$patchsum" > "$src/.rs-unpacked"
fi

# Overlay: --checksum rewrites only files whose content changed, so ninja
# sees an untouched mtime on everything else.  Of tests/, only the qtests
# belong in QEMU's tree (tests/meson.build is the project's own).
rsync -r --checksum --exclude='*~' \
    --include='/hw/***' --include='/include/***' --include='/qapi/***' \
    --include='/tests/' \
    --include='/tests/qtest/***' \
    --include='/docs/***' --include='/configs/***' --exclude='*' \
    "$top/" "$src/"

cfg=(--target-list=x86_64-softmmu --python=/usr/bin/python3
     --without-default-features --without-default-devices
     --with-devices-x86_64=rdma-session$([ $fuzz = 0 ] || echo -fuzz)
     --enable-slirp --enable-tcg --enable-kvm --enable-fdt=system
     --disable-docs --disable-install-blobs --disable-werror
     --enable-trace-backends=log)
# virtio-9p (launch-vms.sh --share: a host directory in every guest); not
# in the fuzzing build (its own device set, rdma-session-fuzz.mak).
[ $fuzz = 1 ] || cfg+=(--enable-attr --enable-virtfs)
# Clang's libFuzzer instruments hw/ and net/ only (QEMU's
# instrumentation-filter); ASan and UBSan cover everything.
[ $fuzz = 0 ] || cfg+=(--cc=clang --cxx=clang++ --enable-fuzzing
                       --enable-asan --enable-ubsan)
cfgsum=$(printf '%s\n' "${cfg[@]}" | sha1sum | cut -c1-12)
if [ "$(cat "$bld/.rs-config" 2>/dev/null)" != "$cfgsum" ]; then
    log "configuring QEMU $ver"
    rm -rf "$bld"
    mkdir -p "$bld"
    (cd "$bld" && ../configure "${cfg[@]}" >config.out 2>&1) ||
        { tail -n 30 "$bld/config.out" >&2; die "QEMU configure failed ($bld/config.out)"; }
    echo "$cfgsum" > "$bld/.rs-config"
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(qemu-system-x86_64 tests/qtest/qos-test
             tests/qtest/rdma-session/rdma-session-test)
    [ $fuzz = 0 ] || targets+=(qemu-fuzz-x86_64)
fi
log "ninja ${targets[*]}"
ninja -C "$bld" "${targets[@]}"
# The build is configured without firmware blobs; QEMU started without -L
# (qtest, the fuzzers) looks in the build tree's data directory: give it
# Debian's files.
data="$bld/qemu-bundle/usr/local/share/qemu"
mkdir -p "$data"
for f in /usr/share/seabios/*.bin /usr/share/qemu/*.bin /usr/lib/ipxe/qemu/*.rom; do
    [ -e "$f" ] && [ ! -e "$data/${f##*/}" ] && ln -sf "$f" "$data/${f##*/}"
done
ln -sfn "$bld" "$link"
