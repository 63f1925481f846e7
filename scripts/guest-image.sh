#!/bin/bash
# Build the demo/test guest: Debian's 6.12 kernel from bookworm-backports
# and a busybox initramfs whose /init lists the PCI devices, runs the
# command given as rs.cmd= on the kernel command line (or starts a shell)
# and powers the VM off.
#
# Nothing is installed on the host: the .deb packages are fetched with the
# private apt configuration (scripts/apt-private.sh) into
# $RS_CACHE/guest/debs and unpacked with dpkg-deb.  The result is cached in
# $RS_CACHE/guest/<hash of the inputs>/ and only rebuilt when an input
# changes (package versions, module list, extra files, this script).
#
# Usage: scripts/guest-image.sh
# Prints on stdout, in a form that "eval" accepts:
#     RS_KERNEL=<path of vmlinuz>
#     RS_INITRD=<path of initramfs.cpio.gz>
#     RS_KVER=<kernel release>
# Progress goes to stderr.
#
# Environment:
#   RS_CACHE           cache directory (default ~/.cache/rdma-session)
#   RS_KERNEL_PKG      kernel package to use instead of the default
#                      (the linux-image-6.12.*-amd64 that bookworm-backports'
#                      linux-image-amd64 depends on, or the one matching an
#                      installed linux-headers-6.12.*-amd64)
#   RS_GUEST_MODULES   kernel modules to put into the image and load at boot,
#                      space separated; dependencies are added (default none)
#   RS_GUEST_EXTRA     a directory copied over the initramfs root (optional)
#   RS_EXTRA_MODULES   out-of-tree .ko files (paths, space separated) copied
#                      into the image and loaded after RS_GUEST_MODULES
#
# Guest kernel command line understood by /init:
#   rs.cmd=WORD or rs.cmd="several words"   run it with sh -c, then power off
#   rs.cmd64=BASE64                          the same, base64 encoded
#   rs.shell=1                               shell after the command
#   (no rs.cmd: an interactive shell; exiting it powers the VM off)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-private.sh"

log() { printf '[guest-image] %s\n' "$*" >&2; }
die() { printf '[guest-image] error: %s\n' "$*" >&2; exit 1; }

gdir="$RS_CACHE/guest"
debs="$gdir/debs"
mkdir -p "$debs"
export APT_CONFIG="$RS_APT/apt.conf"

command -v dpkg-deb >/dev/null || die "dpkg-deb not found (this script needs Debian)"
apt_priv_setup || die "apt-get update with the private sources failed"

# --- Which kernel package ------------------------------------------------
kernel_pkg()
{
    if [ -n "${RS_KERNEL_PKG:-}" ]; then
        echo "$RS_KERNEL_PKG"; return
    fi
    # If the module build has installed 6.12 headers, boot the same ABI.
    local h
    h=$(dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
        awk '$1 ~ /^linux-headers-6\.12\.[0-9]+\+.*-amd64$/ && /install ok installed/ {print $1}' |
        sort -V | tail -n 1)
    if [ -n "$h" ]; then
        echo "linux-image-${h#linux-headers-}"; return
    fi
    # Otherwise what bookworm-backports' linux-image-amd64 points to.
    local v
    v=$(apt-cache madison linux-image-amd64 2>/dev/null |
        awk -F' *[|] *' '$3 ~ /bookworm-backports/ {print $2}' | sort -V | tail -n 1)
    [ -n "$v" ] || die "bookworm-backports has no linux-image-amd64 (private apt lists in $RS_APT)"
    apt-cache show "linux-image-amd64=$v" |
        sed -n 's/^Depends: *\(linux-image-[^ ,]*\).*/\1/p' | head -n 1
}

# fetch PKG: download the candidate version of PKG into $debs unless it is
# already there; prints the .deb path.
fetch()
{
    local pkg=$1 ver f
    ver=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1)
    [ -n "$ver" ] || die "package $pkg is not known to the private apt sources (bookworm, bookworm-backports, trixie)"
    f=$(ls -1 "$debs/${pkg}_"*"${ver#*:}_"*.deb 2>/dev/null | head -n 1 || true)
    if [ -z "$f" ]; then
        log "downloading $pkg $ver"
        (cd "$debs" && apt_priv download -q "$pkg=$ver" >&2) ||
            die "could not download $pkg=$ver from the Debian mirror"
        f=$(ls -1 "$debs/${pkg}_"*"${ver#*:}_"*.deb 2>/dev/null | head -n 1 || true)
        [ -n "$f" ] || die "apt-get download $pkg=$ver left no .deb in $debs"
    fi
    echo "$f"
}

# Resolving versions with apt-cache takes seconds; remember the answer
# until the package lists are refreshed or the choice inputs change.
memo="$gdir/.resolved-$( { stat -c %Y "$RS_APT/lists/.updated" 2>/dev/null
    echo "${RS_KERNEL_PKG:-}"
    dpkg-query -W -f='${Package} ${Version} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null || true
  } | sha1sum | cut -c1-12)"
kdeb='' bdeb=''
if [ -s "$memo" ]; then
    { read -r kdeb; read -r bdeb; } < "$memo" || true
    [ -s "$kdeb" ] && [ -s "$bdeb" ] || kdeb='' bdeb=''
fi
if [ -z "$kdeb" ]; then
    kpkg=$(kernel_pkg)
    [ -n "$kpkg" ] || die "could not determine the guest kernel package"
    kdeb=$(fetch "$kpkg")
    bdeb=$(fetch busybox-static)
    rm -f "$gdir"/.resolved-*
    printf '%s\n%s\n' "$kdeb" "$bdeb" > "$memo"
fi

# --- Cache key -------------------------------------------------------------
modules=${RS_GUEST_MODULES:-}
extra=${RS_GUEST_EXTRA:-}
extrasum=none
extramods=${RS_EXTRA_MODULES:-}
extramodsum=none
if [ -n "$extramods" ]; then
    for f in $extramods; do
        [ -f "$f" ] || die "RS_EXTRA_MODULES: $f is not a file"
    done
    extramodsum=$(for f in $extramods; do basename "$f"; sha1sum < "$f"; done | sha1sum | cut -c1-40)
fi
if [ -n "$extra" ]; then
    [ -d "$extra" ] || die "RS_GUEST_EXTRA=$extra is not a directory"
    extrasum=$(cd "$extra" && tar --sort=name --mtime=@0 --owner=0 --group=0 -cf - . | sha1sum | cut -c1-40)
fi
key=$( { basename "$kdeb"; basename "$bdeb"; echo "$modules"; echo "$extrasum"
         [ "$extramodsum" = none ] || echo "extramods $extramodsum"
         sha1sum < "$0"; } | sha1sum | cut -c1-16)
out="$gdir/$key"
if [ -s "$out/vmlinuz" ] && [ -s "$out/initramfs.cpio.gz" ] && [ -s "$out/kver" ]; then
    log "up to date: $out"
    printf 'RS_KERNEL=%q\nRS_INITRD=%q\nRS_KVER=%q\n' \
        "$out/vmlinuz" "$out/initramfs.cpio.gz" "$(cat "$out/kver")"
    exit 0
fi

# --- Build -----------------------------------------------------------------
log "building guest image $key ($(basename "$kdeb"), $(basename "$bdeb"))"
work=$(mktemp -d "$gdir/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$kdeb" "$work/k"
dpkg-deb -x "$bdeb" "$work/bb"
vmlinuz=$(ls -1 "$work"/k/boot/vmlinuz-* 2>/dev/null | head -n 1)
[ -n "$vmlinuz" ] || die "$(basename "$kdeb") contains no /boot/vmlinuz-*"
kver=${vmlinuz##*/vmlinuz-}
moddir=$(ls -d "$work"/k/lib/modules/"$kver" "$work"/k/usr/lib/modules/"$kver" 2>/dev/null | head -n 1 || true)
bb="$work/bb/bin/busybox"
[ -x "$bb" ] || die "$(basename "$bdeb") contains no bin/busybox"

root="$work/root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,root,etc,lib/modules/"$kver"}
cp "$bb" "$root/bin/busybox"
for a in $("$bb" --list); do
    [ "$a" = busybox ] || [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done

# Kernel modules: resolve "depends=" from each module's .modinfo, copy them
# uncompressed (busybox insmod cannot read .ko.xz) and write the load order.
declare -A seen=()
order=()
modfile()   # name -> path of the .ko[.xz] in the package, or empty
{
    local n=${1//-/_} alt=${1//_/-}
    find "$moddir/kernel" \( -name "$n.ko*" -o -name "$alt.ko*" \) 2>/dev/null | head -n 1
}
modcat() { case $1 in *.xz) xz -dc "$1";; *.zst) zstd -qdc "$1";; *.gz) gzip -dc "$1";; *) cat "$1";; esac; }
addmod()
{
    local m=${1//-/_} f deps d
    [ -z "${seen[$m]:-}" ] || return 0
    seen[$m]=1
    f=$(modfile "$m")
    if [ -z "$f" ]; then
        if grep -qE "/${m}\.ko\$|/${m//_/-}\.ko\$" "$moddir/modules.builtin"; then
            log "module $m is built into the kernel"
            return 0
        fi
        die "kernel $kver has no module $m"
    fi
    modcat "$f" > "$work/m.ko"
    deps=$(tr '\0' '\n' < "$work/m.ko" | sed -n 's/^depends=//p' | head -n 1)
    for d in ${deps//,/ }; do addmod "$d"; done
    modcat "$f" > "$root/lib/modules/$kver/$m.ko"
    order+=("$m")
}
for m in $modules; do addmod "$m"; done
for f in $extramods; do
    m=$(basename "$f" .ko)
    cp "$f" "$root/lib/modules/$kver/$m.ko"
    order+=("$m")
done
printf '%s\n' "${order[@]+"${order[@]}"}" | sed '/^$/d' > "$root/lib/modules/$kver/load.order"
[ ${#order[@]} -eq 0 ] || log "modules: ${order[*]}"

# PCI listing without pciutils: "BB:DD.F CCCC: VVVV:DDDD (rev RR)" like
# "lspci -n"; -v adds the BARs and the IRQ, -d VVVV:DDDD filters.
cat > "$root/bin/lspci" <<'EOF'
#!/bin/sh
# Minimal lspci -n for the rdma-session guest (sysfs based).
verbose=0 filt=
while [ $# -gt 0 ]; do
    case $1 in
    -v) verbose=1 ;;
    -n|-nn) ;;
    -d) shift; filt=$1 ;;
    *) echo "usage: lspci [-v] [-d vendor:device]" >&2; exit 2 ;;
    esac
    shift
done
found=1
for d in /sys/bus/pci/devices/*; do
    [ -e "$d/vendor" ] || continue
    ven=$(cat "$d/vendor"); dev=$(cat "$d/device")
    cls=$(cat "$d/class"); rev=$(cat "$d/revision" 2>/dev/null || echo 0x00)
    id="${ven#0x}:${dev#0x}"
    [ -z "$filt" ] || [ "$filt" = "$id" ] || continue
    found=0
    bdf=${d##*/}
    line="${bdf#0000:} $(echo "${cls#0x}" | cut -c1-4): $id (rev ${rev#0x})"
    drv=
    [ -e "$d/driver" ] && drv=$(basename "$(readlink "$d/driver")")
    echo "$line${drv:+ driver=$drv}"
    [ $verbose = 1 ] || continue
    echo "	IRQ: $(cat "$d/irq" 2>/dev/null)"
    i=0
    while read -r start end flags; do
        if [ "$end" != 0x0000000000000000 ] && [ $i -le 5 ]; then
            size=$(( end - start + 1 ))
            if [ $(( flags & 0x100 )) -ne 0 ]; then kind="I/O ports"
            else
                kind="Memory"
                [ $(( flags & 0x100000 )) -ne 0 ] && kind="$kind 64-bit"
                [ $(( flags & 0x2000 )) -ne 0 ] && kind="$kind prefetchable"
            fi
            printf '\tBAR%d: %s at %x [size=%d]\n' $i "$kind" $(( start )) $size
        fi
        i=$((i + 1))
    done < "$d/resource"
done
exit $found
EOF
chmod 755 "$root/bin/lspci"

cat > "$root/init" <<'EOF'
#!/bin/sh
# rdma-session guest init (scripts/guest-image.sh)
export PATH=/bin:/sbin HOME=/root TERM=${TERM:-linux}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
exec </dev/console >/dev/console 2>&1
echo 0 > /proc/sys/kernel/printk 2>/dev/null
hostname rs-guest
ip link set lo up 2>/dev/null

kver=$(uname -r)
echo "rs-init: Linux $kver, uptime $(cut -d' ' -f1 /proc/uptime) s"
while read -r m; do
    [ -n "$m" ] || continue
    insmod "/lib/modules/$kver/$m.ko" || echo "rs-init: insmod $m failed"
done < "/lib/modules/$kver/load.order"

echo "rs-init: PCI devices:"
lspci
echo "rs-init: end of PCI devices"

cmdline=$(cat /proc/cmdline)
cmd= shell=0
case " $cmdline " in
*' rs.cmd="'*) cmd=${cmdline#*rs.cmd=\"}; cmd=${cmd%%\"*} ;;
*' rs.cmd='*)  cmd=${cmdline#*rs.cmd=}; cmd=${cmd%% *} ;;
*' rs.cmd64='*) cmd=${cmdline#*rs.cmd64=}; cmd=$(echo "${cmd%% *}" | base64 -d) ;;
esac
case " $cmdline " in *' rs.shell=1 '*) shell=1 ;; esac

if [ -n "$cmd" ]; then
    echo "rs-init: running: $cmd"
    sh -c "$cmd"
    echo "rs-init: command exit status $?"
else
    shell=1
fi
if [ $shell = 1 ]; then
    echo "rs-init: shell (exit to power off)"
    setsid cttyhack sh -l
fi
echo "rs-init: powering off"
sync
poweroff -f
EOF
chmod 755 "$root/init"
echo 'PS1="rs-guest:\w# "' > "$root/etc/profile"

if [ -n "$extra" ]; then
    cp -a "$extra/." "$root/"
fi

mkdir -p "$work/out"
(cd "$root" && find . | LC_ALL=C sort | "$bb" cpio -o -H newc -R 0:0 2>/dev/null) |
    gzip -9 > "$work/out/initramfs.cpio.gz"
cp "$vmlinuz" "$work/out/vmlinuz"
echo "$kver" > "$work/out/kver"
rm -rf "$out"
mv "$work/out" "$out"
log "built $out: kernel $kver, initramfs $(du -k "$out/initramfs.cpio.gz" | cut -f1) KiB"

# Keep the three most recent images.
find "$gdir" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended \
    -regex '.*/[0-9a-f]{16}' -printf '%T@ %p\n' | sort -rn | tail -n +4 |
    cut -d' ' -f2- | xargs -r rm -rf

printf 'RS_KERNEL=%q\nRS_INITRD=%q\nRS_KVER=%q\n' \
    "$out/vmlinuz" "$out/initramfs.cpio.gz" "$kver"
