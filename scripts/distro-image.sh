#!/bin/bash
# Build the Debian guest: a bookworm system made by debootstrap from
# Debian's packages (systemd, udev, apt, iproute2, an ssh server,
# rdma-core's userspace, perftest) with bookworm-backports' 6.12 kernel
# and its own initramfs, on an ext4 disk image the launcher boots with
# its kernel given directly (-kernel/-initrd, root=/dev/vda).  A work in
# progress towards the distribution guest: the adapter's driver and
# provider are not installed in it yet (they will come as packages).
#
# The guest at boot: a serial console on ttyS0 with root logged in,
# systemd-networkd for no interface, and rs-net.service giving the first
# Ethernet interface the address of "rs.ip=A.B.C.D/N" on the kernel
# command line (as the initramfs guest's /init does); it prints
# "rs-distro: ready" on the console once the network is configured.
#
# The result is cached in $RS_CACHE/distro/<hash of this script>/ and
# only rebuilt when this script changes; debootstrap's packages are kept
# in $RS_CACHE/distro/debs.  Needs root (debootstrap, chroot).
#
# Usage: scripts/distro-image.sh
# Prints on stdout, in a form that "eval" accepts:
#     RS_DISTRO_KERNEL=<vmlinuz>  RS_DISTRO_INITRD=<initrd.img>
#     RS_DISTRO_DISK=<rootfs.img, raw ext4; boot it with snapshot=on>
# Progress goes to stderr.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-private.sh"

log() { printf '[distro-image] %s\n' "$*" >&2; }
die() { printf '[distro-image] error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "debootstrap and chroot need root"
mirror=${RS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
pkgs="systemd-sysv,dbus,udev,kmod,iproute2,openssh-server,rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils,perftest,procps,ca-certificates"
size=${RS_DISTRO_SIZE:-4G}

key=$(sha1sum < "$0" | cut -c1-16)
dir="$RS_CACHE/distro"
out="$dir/$key"
if [ -s "$out/rootfs.img" ] && [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.img" ]; then
    log "up to date: $out"
    printf 'RS_DISTRO_KERNEL=%q\nRS_DISTRO_INITRD=%q\nRS_DISTRO_DISK=%q\n' \
        "$out/vmlinuz" "$out/initrd.img" "$out/rootfs.img"
    exit 0
fi

need=()
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
command -v mke2fs >/dev/null || [ -x /usr/sbin/mke2fs ] || need+=(e2fsprogs)
[ ${#need[@]} -eq 0 ] || apt_need "" "${need[@]}" || die "cannot install ${need[*]}"
PATH=$PATH:/usr/sbin:/sbin

tb=$(date +%s)
mkdir -p "$dir/debs"
work=$(mktemp -d "$dir/.work.XXXXXX")
root="$work/root"
mounted=()
cleanup()
{
    local m
    for m in "${mounted[@]+"${mounted[@]}"}"; do umount "$m" 2>/dev/null || umount -l "$m" || true; done
    rm -rf "$work"
}
trap cleanup EXIT

log "debootstrap bookworm ($mirror)"
debootstrap --variant=minbase --include="$pkgs" --cache-dir="$dir/debs" \
    bookworm "$root" "$mirror" > "$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }

# The kernel from bookworm-backports, with the initramfs Debian makes, and
# its headers with DKMS for the driver's package (scripts/build-dkms-deb.sh).
echo "deb $mirror bookworm-backports main" > "$root/etc/apt/sources.list.d/backports.list"
for m in proc sys dev; do
    case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    dev) mount --bind /dev "$root/dev" ;;
    esac
    mounted=("$root/$m" "${mounted[@]+"${mounted[@]}"}")
done
log "installing bookworm-backports' kernel"
chroot "$root" env DEBIAN_FRONTEND=noninteractive sh -c \
    'apt-get -q update && apt-get -q -y --no-install-recommends -t bookworm-backports install linux-image-amd64 linux-headers-amd64 initramfs-tools && apt-get -q -y --no-install-recommends install dkms gcc make libc6-dev && apt-get clean' \
    > "$work/kernel.log" 2>&1 || { tail -n 20 "$work/kernel.log" >&2; die "the kernel did not install"; }
for m in "${mounted[@]}"; do umount "$m"; done
mounted=()

# Configuration: host name, root file system, console, network.
echo debian > "$root/etc/hostname"
echo '/dev/vda / ext4 defaults 0 1' > "$root/etc/fstab"
chroot "$root" passwd -d root > /dev/null
mkdir -p "$root/etc/systemd/system/serial-getty@ttyS0.service.d"
cat > "$root/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 %I $TERM
EOF
cat > "$root/usr/local/sbin/rs-net" <<'EOF'
#!/bin/sh
# rs.ip=A.B.C.D/N on the kernel command line: the first Ethernet
# interface gets it (the launcher's addressing, as the initramfs guest).
ip=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^rs\.ip=//p')
ifc=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
ip link set lo up
if [ -n "$ip" ] && [ -n "$ifc" ]; then
    ip link set "$ifc" up
    ip addr add "$ip" dev "$ifc"
fi
echo "rs-distro: ready ${ifc:-no interface} ${ip:-no address}" > /dev/console
EOF
chmod 755 "$root/usr/local/sbin/rs-net"
cat > "$root/etc/systemd/system/rs-net.service" <<'EOF'
[Unit]
Description=Address from rs.ip= on the kernel command line
After=systemd-udev-settle.service systemd-modules-load.service
Wants=systemd-udev-settle.service
Before=network.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/rs-net
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/rs-net.service "$root/etc/systemd/system/multi-user.target.wants/rs-net.service"

kver=$(ls "$root/boot" | sed -n 's/^vmlinuz-//p' | sort -V | tail -n 1)
[ -n "$kver" ] || die "no kernel in the image's /boot"
mkdir -p "$work/out"
cp "$root/boot/vmlinuz-$kver" "$work/out/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$work/out/initrd.img"
log "making the ext4 image ($size)"
mke2fs -q -t ext4 -L rs-debian -d "$root" "$work/out/rootfs.img" "$size" ||
    die "mke2fs -d failed"
rm -rf "$out"
mv "$work/out" "$out"
log "built $out in $(( $(date +%s) - tb )) s: kernel $kver, $(du -sh "$root" | cut -f1) installed"
printf 'RS_DISTRO_KERNEL=%q\nRS_DISTRO_INITRD=%q\nRS_DISTRO_DISK=%q\n' \
    "$out/vmlinuz" "$out/initrd.img" "$out/rootfs.img"
