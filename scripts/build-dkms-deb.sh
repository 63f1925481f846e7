#!/bin/bash
# Build the guest driver as a Debian DKMS package, rdma-session-dkms: the
# module's sources and the ABI header under /usr/src/rdma-session-VERSION
# with a dkms.conf, so that DKMS builds and installs rdma_session.ko in the
# guest against the guest's own kernel headers (and again for each new
# kernel).  The version comes from the file VERSION at the top of the tree
# (see docs/system/devices/rdma-session-releases.rst): a release's commit
# (HEAD is the tag vVERSION) gets VERSION itself, any other commit
# VERSION~git<commit date>.<hash>, which sorts below the release it leads
# to and above the one before, newer with every commit.  The package
# version carries the epoch 1: because packages before VERSION were
# numbered 1.ABI-MINOR+git... (1.7+git..., which would sort above 1.1.0);
# the DKMS module version and the file names have no epoch.  Then the
# provider as rdma-session-provider (below).  A start on the distribution
# guest's packages.
#
# Usage: scripts/build-dkms-deb.sh [OUTDIR]   (default $RS_BUILD/debs)
# Prints the paths of the two .debs on stdout.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
out=${1:-$RS_BUILD/debs}
log() { printf '[dkms-deb] %s\n' "$*" >&2; }
die() { printf '[dkms-deb] error: %s\n' "$*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (this script needs Debian)"

release=$(tr -d '[:space:]' < "$top/VERSION" 2>/dev/null) || true
[[ $release =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "no MAJOR.MINOR.PATCH in $top/VERSION"
if [ "$(git -C "$top" rev-parse -q --verify "refs/tags/v$release^{commit}" 2>/dev/null)" = \
     "$(git -C "$top" rev-parse -q --verify HEAD 2>/dev/null)" ] &&
   git -C "$top" diff --quiet HEAD -- 2>/dev/null; then
    ver=$release
else
    rev=$(git -C "$top" log -1 --format='%cd.%h' --date=format:%Y%m%d%H%M%S 2>/dev/null || echo 0)
    ver="$release~git$rev"
fi
debver="1:$ver"
name=rdma-session

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="$work/pkg/usr/src/$name-$ver"
mkdir -p "$src/include/hw/rdma-session" "$work/pkg/DEBIAN"
cp "$top"/guest-driver/kernel/*.c "$top"/guest-driver/kernel/*.h \
   "$top/guest-driver/kernel/Kbuild" "$src/"
cp "$top"/include/hw/rdma-session/*.h "$src/include/hw/rdma-session/"
# The module's Makefile names the tree's include/ relative to itself:
# here the copy next to the sources.
cat > "$src/Makefile" <<'EOF'
# SPDX-License-Identifier: GPL-2.0-only
KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build

all: modules

modules clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) RS_ABI_INCLUDE=$(CURDIR)/include $@

.PHONY: all modules clean
EOF
cat > "$src/dkms.conf" <<EOF
PACKAGE_NAME="$name"
PACKAGE_VERSION="$ver"
MAKE[0]="make KVER=\$kernelver"
CLEAN="make clean"
BUILT_MODULE_NAME[0]="rdma_session"
DEST_MODULE_LOCATION[0]="/updates/dkms"
AUTOINSTALL="yes"
EOF

size=$(du -sk "$work/pkg/usr" | cut -f1)
cat > "$work/pkg/DEBIAN/control" <<EOF
Package: $name-dkms
Version: $debver
Architecture: all
Maintainer: rdma-session developers <rdma-session@localhost>
Depends: dkms (>= 3.0)
Recommends: rdma-core, ibverbs-providers
Section: kernel
Priority: optional
Installed-Size: $size
Description: rdma-session RDMA adapter driver (DKMS)
 The Linux driver of QEMU's rdma-session device, an emulated RoCEv2 RDMA
 NIC: rdma_session.ko, built by DKMS for each installed kernel.  udev
 loads it for the device's PCI ID.
EOF
# As dh_dkms's maintainer scripts do.
cat > "$work/pkg/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
if [ "\$1" = configure ]; then
    dkms add -m $name -v $ver > /dev/null 2>&1 || true
    for k in /lib/modules/*/build; do
        [ -e "\$k" ] || continue
        kv=\$(basename "\$(dirname "\$k")")
        dkms build -m $name -v $ver -k "\$kv" && dkms install -m $name -v $ver -k "\$kv" --force
    done
fi
exit 0
EOF
cat > "$work/pkg/DEBIAN/prerm" <<EOF
#!/bin/sh
set -e
dkms remove -m $name -v $ver --all > /dev/null 2>&1 || true
exit 0
EOF
chmod 755 "$work/pkg/DEBIAN/postinst" "$work/pkg/DEBIAN/prerm"
mkdir -p "$out"
deb="$out/${name}-dkms_${ver}_all.deb"
dpkg-deb --root-owner-group -Zxz --build "$work/pkg" "$deb" > /dev/null ||
    die "dpkg-deb --build failed"
log "built $deb"
echo "$deb"

# The provider: a libibverbs plugin that drops into the distribution's
# own rdma-core.  Plugins are bound to libibverbs' private ABI, not to its
# release: the one scripts/build-rdma-core.sh builds (rdma-core 56) is
# librsession-rdmav34.so, and bookworm's libibverbs1 44 has the same
# private ABI 34 with every IBVERBS_PRIVATE_34 symbol it uses, so one
# package serves both without rebuilding the distribution's rdma-core.
stage=${RS_RDMA_CORE_STAGE:-$RS_BUILD/rdma-core-stage}
lib=usr/lib/x86_64-linux-gnu
real=$(readlink "$stage/$lib/librsession.so.1" 2>/dev/null || true)
[ -n "$real" ] && [ -f "$stage/$lib/$real" ] ||
    die "no librsession.so.1 in $stage (scripts/build-rdma-core.sh)"
pabi=$(ls "$stage/$lib/libibverbs" | sed -n 's/^librsession-rdmav\([0-9]*\)\.so$/\1/p')
[ -n "$pabi" ] || die "no librsession-rdmav*.so in $stage/$lib/libibverbs"
p="$work/prov"
mkdir -p "$p/DEBIAN" "$p/$lib/libibverbs" "$p/etc/libibverbs.d"
cp "$stage/$lib/$real" "$p/$lib/"
ln -s "$real" "$p/$lib/librsession.so.1"
ln -s "../$real" "$p/$lib/libibverbs/librsession-rdmav$pabi.so"
cp "$stage/etc/libibverbs.d/rsession.driver" "$p/etc/libibverbs.d/"
{
    echo "Package: $name-provider"
    echo "Version: $debver"
    echo "Architecture: amd64"
    echo "Maintainer: rdma-session developers <rdma-session@localhost>"
    echo "Depends: libibverbs1 (>= 44), libc6 (>= 2.34)"
    echo "Section: libs"
    echo "Priority: optional"
    echo "Installed-Size: $(du -sk "$p/usr" | cut -f1)"
    echo "Description: rdma-session RDMA adapter: libibverbs provider"
    echo " The rdma-core provider of QEMU's rdma-session device (an emulated"
    echo " RoCEv2 RDMA NIC) for the distribution's libibverbs (private ABI"
    echo " $pabi), and the direct verbs library librsession.so.1."
} > "$p/DEBIAN/control"
deb2="$out/${name}-provider_${ver}_amd64.deb"
dpkg-deb --root-owner-group -Zxz --build "$p" "$deb2" > /dev/null ||
    die "dpkg-deb --build failed (provider)"
log "built $deb2"
echo "$deb2"
