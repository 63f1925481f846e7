#!/bin/bash
# Build QEMU with the rdma-session device: Debian's orig tarball of the
# release qemu/VERSION pins, as a git repository (one commit, tag
# rs-pristine), the patch series qemu/patches/*.patch applied with `git am`,
# and the project's own files (hw/, include/, qapi/, tests/qtest/, docs/,
# configs/) overlaid.  Idempotent: the source is fetched, unpacked and
# configured once; later runs rewrite only files whose content changed and
# let ninja rebuild what they touch.
#
#   series   a changed series (files added, removed, edited) is applied
#            afresh to rs-pristine in a scratch sparse worktree, and the tree
#            is then reset to the result: only the files whose content
#            differs are rewritten.  A patch that does not apply
#            stops the build and leaves the tree as it was.
#   overlay  rsync --checksum (unchanged files keep their mtime); then every
#            file in those directories that git does not track and the
#            project no longer has (a file removed or renamed in the
#            project) is deleted, and a tracked file the project no longer
#            overrides is restored from the series.  `git -C <tree> status`
#            shows the overlay.
#
# Usage: scripts/build-qemu.sh [--fuzz] [ninja targets...]
#   --fuzz  a second build directory of the same source (build-fuzz, linked
#           as $RS_BUILD/qemu-fuzz) with clang, libFuzzer, ASan and UBSan;
#           default targets qemu-fuzz-x86_64, qemu-system-x86_64, qos-test
#           and rdma-session-test
# Compiles go through ccache (both builds; the guest kernel's too):
# $RS_CACHE/ccache, at most 5 GB, with the QEMU tree as base directory, so
# that a clone at another path (its own $RS_BUILD) hits the same entries.
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
        flex bison bzip2 rsync git seabios qemu-system-data ipxe-qemu ccache ||
        die "could not install QEMU's build dependencies from Debian bookworm (see apt output above)"
}

# The pinned release (QEMU_VERSION, QEMU_DEBIAN_VERSION, QEMU_TARBALL_SHA256).
. "$top/qemu/VERSION"
patches="$top/qemu/patches"

# Find or download the pinned orig tarball; prints its path.
fetch_qemu_source()
{
    local dir="$RS_CACHE/src" t
    t="$dir/qemu_$QEMU_VERSION+ds.orig.tar.xz"
    mkdir -p "$dir"
    if [ ! -f "$t" ]; then
        apt_priv_setup || die "apt-get update with the private sources failed"
        log "fetching source package qemu=$QEMU_DEBIAN_VERSION"
        (cd "$dir" && apt_priv source -q --download-only "qemu=$QEMU_DEBIAN_VERSION" >&2) ||
            die "no QEMU $QEMU_VERSION source: 'apt-get source qemu=$QEMU_DEBIAN_VERSION' (trixie, bookworm-backports deb-src) failed; put qemu_$QEMU_VERSION+ds.orig.tar.xz into $dir, or pin another release in qemu/VERSION"
        [ -f "$t" ] || die "apt-get source qemu=$QEMU_DEBIAN_VERSION brought no $(basename "$t")"
    fi
    [ "$(sha256sum < "$t" | cut -d' ' -f1)" = "$QEMU_TARBALL_SHA256" ] ||
        die "$t: SHA-256 is not qemu/VERSION's QEMU_TARBALL_SHA256"
    echo "$t"
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
ver=$QEMU_VERSION
src="$RS_BUILD/qemu-$ver"
bld="$src/build"
link="$RS_BUILD/qemu"
[ $fuzz = 0 ] || { bld="$src/build-fuzz"; link="$RS_BUILD/qemu-fuzz"; }
# ccache: paths under the tree are hashed relative to it, and the working
# directory (in the debug information) is not hashed, so that the cache
# serves trees at other paths (a fresh clone) as well.  configure writes
# the compiler it is given ("ccache gcc") into meson's cross file; a build
# directory configured without it is configured afresh (its options'
# checksum below changes).  The fuzzing build's coverage filter, a file
# named on the command line (build-fuzz/instrumentation-filter, a copy of
# the tree's template, which exists before configure), is hashed with
# every compile.
export CCACHE_DIR="$RS_CACHE/ccache" CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1 \
    CCACHE_MAXSIZE=5G
[ $fuzz = 0 ] ||
    export CCACHE_EXTRAFILES="$src/scripts/oss-fuzz/instrumentation-filter-template"

# git with an identity of its own for the tree's commits; trees unpacked
# by earlier versions of this script belong to the tarball's owner.
rgit()
{
    git -c safe.directory='*' -c user.name="rdma-session build" \
        -c user.email="build@rdma-session.invalid" -c advice.detachedHead=false "$@"
}
qgit() { rgit -C "$src" "$@"; }

# The pristine tree: the tarball unpacked, committed once ("QEMU <ver>
# (Debian orig tarball)", tag rs-pristine).  A tree unpacked by the former
# scheme (an integration patch applied in place, no .git) is adopted: the
# pristine repository's .git moves into it, and applying the series below
# rewrites only the files that differ.
unpack_pristine()
{
    local tarball tmp
    tarball=$(fetch_qemu_source)
    tmp="$RS_BUILD/.unpack-qemu-$ver"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    log "unpacking $(basename "$tarball")"
    tar --no-same-owner -C "$tmp" -xf "$tarball"
    [ -d "$tmp/qemu-$ver" ] || die "unexpected tarball layout in $tarball"
    # (&&: set -e does not reach into a subshell whose status || tests)
    (
        cd "$tmp/qemu-$ver" &&
        rgit init -q &&
        # No automatic gc in the background of a build (38000 loose objects).
        rgit config gc.auto 0 &&
        rgit config maintenance.auto false &&
        # Every file of the tarball, those its .gitignore files name too.
        rgit add -A -f &&
        GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
            rgit commit -q --no-verify -m "QEMU $ver (Debian orig tarball)" \
            -m "$(basename "$tarball"), SHA-256 $QEMU_TARBALL_SHA256" &&
        rgit tag rs-pristine &&
        # Not the tree's content: the build directories, the state of this
        # script, Python's caches.  The only exclusions git applies here
        # (the overlay's check below ignores the tarball's .gitignore files).
        printf '%s\n' '/build/' '/build-fuzz/' '/.rs-*' '__pycache__/' '*.pyc' >> .git/info/exclude
    ) || die "could not make $tmp/qemu-$ver a git repository"
    if [ -d "$src" ]; then
        log "adopting $src (unpacked by an earlier version of this script)"
        rm -rf "$src/.git"
        mv "$tmp/qemu-$ver/.git" "$src/.git"
        rm -f "$src/.rs-series" "$src/.rs-patch" "$src/.rs-unpacked"
        rm -rf "$tmp"
    else
        mv "$tmp/qemu-$ver" "$src"
        rmdir "$tmp"
    fi
}

# The series' identity: its files' names and contents, in order.
series_id()
{
    local p
    for p in "$patches"/*.patch; do
        [ -e "$p" ] || continue
        printf '%s\n' "${p##*/}"
        cat "$p"
    done | sha1sum | cut -c1-12
}

# Apply the series to rs-pristine in a scratch worktree that holds only
# the files the patches touch (sparse), then move the tree to the result:
# `git reset --hard` rewrites exactly the files whose content differs
# between the tree's commit and the new one, so ninja rebuilds only what
# depends on them; the overlay's files (untracked) stay as they are.
apply_series()
{
    local wt="$RS_BUILD/.am-qemu-$ver" out new gone f n
    local list=("$patches"/*.patch)
    [ -e "${list[0]}" ] || list=()
    rm -rf "$wt"
    qgit worktree prune
    qgit worktree add -q --no-checkout --detach "$wt" rs-pristine ||
        die "git worktree add in $src failed"
    { [ ${#list[@]} -eq 0 ] ||
      sed -n 's|^diff --git a/\(.*\) b/\(.*\)$|/\1\n/\2|p' "${list[@]}"; } | sort -u |
        rgit -C "$wt" sparse-checkout set --no-cone --stdin
    rgit -C "$wt" checkout -q
    if [ ${#list[@]} -gt 0 ] && ! out=$(rgit -C "$wt" am --no-3way --committer-date-is-author-date "${list[@]}" 2>&1); then
        printf '%s\n' "$out" >&2
        rgit -C "$wt" am --abort >/dev/null 2>&1 || true
        qgit worktree remove --force "$wt"
        n=$(sed -n 's/^Patch failed at \([0-9]*\) .*/\1/p' <<<"$out" | head -n 1)
        die "qemu/patches/${n:+${list[10#$n - 1]##*/}} does not apply to QEMU $ver (rs-pristine); the tree is unchanged"
    fi
    new=$(rgit -C "$wt" rev-parse HEAD)
    qgit worktree remove --force "$wt"
    log "QEMU $ver + qemu/patches (${#list[@]} patches): $(qgit diff --name-only HEAD "$new" | tr '\n' ' ')"
    # The index to the new commit first, the files untouched; then the
    # files whose content is already the new one count as unchanged (a
    # tree adopted from the former scheme has most of them), and the hard
    # reset rewrites only the others.  Files the new commit no longer has
    # are removed by hand (after the mixed reset they are untracked).
    gone=$(qgit diff --name-only --no-renames --diff-filter=D HEAD "$new")
    qgit reset -q --mixed "$new" >/dev/null
    qgit update-index -q --refresh >/dev/null || true
    qgit reset -q --hard "$new"
    while IFS= read -r f; do
        [ -z "$f" ] || rm -f "$src/$f"
    done <<<"$gone"
}

if ! [ -d "$src/.git" ] || ! qgit rev-parse -q --verify 'rs-pristine^{commit}' >/dev/null 2>&1; then
    unpack_pristine
fi
sid=$(series_id)
if [ "$(cat "$src/.rs-series" 2>/dev/null)" != "$sid" ]; then
    apply_series
    echo "$sid" > "$src/.rs-series"
fi

# Overlay: --checksum rewrites only files whose content changed, so ninja
# sees an untouched mtime on everything else.  Of tests/, only the qtests
# belong in QEMU's tree (tests/meson.build is the project's own).
roots=(hw include qapi tests/qtest docs configs)
rsync -r --checksum --exclude='*~' \
    --include='/hw/***' --include='/include/***' --include='/qapi/***' \
    --include='/tests/' \
    --include='/tests/qtest/***' \
    --include='/docs/***' --include='/configs/***' --exclude='*' \
    "$top/" "$src/"
# What the overlay placed and the project no longer has: files in those
# directories that git does not track (the tarball and the series have
# them all) and that are not among the project's files are deleted; a
# tracked file that is modified but no longer the project's own is
# restored.
want=$(cd "$top" && for r in "${roots[@]}"; do
           [ -d "$r" ] && find "$r" -type f ! -name '*~'
       done | LC_ALL=C sort)
while IFS= read -r f; do
    [ -n "$f" ] || continue
    log "overlay: removing $f (no longer in the project)"
    rm -f "$src/$f"
    rmdir -p --ignore-fail-on-non-empty "$(dirname "$src/$f")" 2>/dev/null || true
done < <(qgit ls-files --others --exclude-from=.git/info/exclude -- "${roots[@]}" | LC_ALL=C sort |
         LC_ALL=C comm -23 - <(printf '%s\n' "$want"))
while IFS= read -r f; do
    [ -n "$f" ] || continue
    log "overlay: restoring $f (no longer in the project)"
    qgit checkout -q HEAD -- "$f"
done < <(qgit ls-files --modified -- "${roots[@]}" | LC_ALL=C sort -u |
         LC_ALL=C comm -23 - <(printf '%s\n' "$want"))

cfg=(--target-list=x86_64-softmmu --python=/usr/bin/python3
     --without-default-features --without-default-devices
     --with-devices-x86_64=rdma-session$([ $fuzz = 0 ] || echo -fuzz)
     --enable-slirp --enable-tcg --enable-kvm --enable-fdt=system
     --disable-docs --disable-install-blobs --disable-werror
     --enable-trace-backends=log)
[ $fuzz = 1 ] || cfg+=(--cc="ccache gcc")
# virtio-9p (launch-vms.sh --share: a host directory in every guest); not
# in the fuzzing build (its own device set, rdma-session-fuzz.mak).
[ $fuzz = 1 ] || cfg+=(--enable-attr --enable-virtfs)
# Clang's libFuzzer instruments hw/ and net/ only (QEMU's
# instrumentation-filter); ASan and UBSan cover everything.
[ $fuzz = 0 ] || cfg+=(--cc="ccache clang" --cxx="ccache clang++" --enable-fuzzing
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
