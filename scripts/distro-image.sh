#!/bin/bash
# Build the Debian guest: a bookworm system made by debootstrap from
# Debian's packages (systemd, udev, apt, iproute2, an ssh server,
# rdma-core's userspace and development files, perftest, and the RDMA
# stacks: UCX, Open MPI, libfabric, the NFS server and client, LIO's
# targetcli and open-iscsi, nvme-cli, fio) with bookworm-backports' 6.12
# kernel, its headers, DKMS and its own initramfs, on an ext4 disk image
# the launcher boots with the kernel given directly (-kernel/-initrd,
# root=/dev/vda).  The adapter's driver and provider are not in it: they
# are installed as packages (rstest/distro.py, scripts/build-dkms-deb.sh).
#
# The guest at boot: a serial console on ttyS0 with root logged in (its
# getty started first, and systemd not hanging the tty up for it, which
# would cut off the launcher's command writing its output to ttyS0),
# rs-net.service giving the first Ethernet interface the address of
# "rs.ip=A.B.C.D/N" (and the route of rs.gw=) from the kernel command
# line, and rs-go.service speaking the launcher's control protocol on the
# second serial port (rs.go=ttyS1) as the initramfs guest's /init does:
# it mounts the shared host directory (rs.share=TAG, virtio-9p) on
# /mnt/host, waits for the RDMA device, prints "rs-init: ready" and runs
# what the launcher sends (tests/guest/rstest/distro.py).  Root on every
# guest has the same ssh key, trusted by all, for mpirun and the like.
#
# The result is cached in $RS_CACHE/distro/<hash of this script>/ and
# only rebuilt when this script changes; debootstrap's packages are kept
# in $RS_CACHE/distro/debs.  Needs root (debootstrap, chroot).
#
# Usage: scripts/distro-image.sh
# Prints on stdout, in a form that "eval" accepts:
#     RS_DISTRO_KERNEL=<vmlinuz>  RS_DISTRO_INITRD=<initrd.img>
#     RS_DISTRO_DISK=<rootfs.img, raw ext4; boot it with snapshot=on>
#     RS_DISTRO_KVER=<kernel release>
# Progress goes to stderr.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-private.sh"

log() { printf '[distro-image] %s\n' "$*" >&2; }
die() { printf '[distro-image] error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "debootstrap and chroot need root"
mirror=${RS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
pkgs="systemd-sysv,dbus,udev,kmod,iproute2,openssh-server,openssh-client,busybox,procps,ca-certificates"
# The rest by apt in the new system (debootstrap's own ordering fails on
# some of them, e.g. libltdl-dev).
stacks="rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest libibverbs-dev librdmacm-dev"
stacks+=" ucx-utils openmpi-bin libopenmpi-dev libfabric-bin"
stacks+=" nfs-kernel-server nfs-common targetcli-fb open-iscsi nvme-cli fio"
size=${RS_DISTRO_SIZE:-6G}

key=$(sha1sum < "$0" | cut -c1-16)
dir="$RS_CACHE/distro"
out="$dir/$key"
if [ -s "$out/rootfs.img" ] && [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.img" ] && [ -s "$out/kver" ]; then
    log "up to date: $out"
    printf 'RS_DISTRO_KERNEL=%q\nRS_DISTRO_INITRD=%q\nRS_DISTRO_DISK=%q\nRS_DISTRO_KVER=%q\n' \
        "$out/vmlinuz" "$out/initrd.img" "$out/rootfs.img" "$(cat "$out/kver")"
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
# apt's downloads go to the package cache too.
mkdir -p "$dir/debs/partial"
for m in proc sys dev var/cache/apt/archives; do
    case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    dev) mount --bind /dev "$root/dev" ;;
    *) mount --bind "$dir/debs" "$root/$m" ;;
    esac
    mounted=("$root/$m" "${mounted[@]+"${mounted[@]}"}")
done
log "installing bookworm-backports' kernel and the RDMA stacks"
chroot "$root" env DEBIAN_FRONTEND=noninteractive sh -c \
    "apt-get -q update && apt-get -q -y --no-install-recommends -t bookworm-backports install linux-image-amd64 linux-headers-amd64 initramfs-tools && apt-get -q -y --no-install-recommends install dkms gcc make libc6-dev $stacks" \
    > "$work/kernel.log" 2>&1 || { tail -n 20 "$work/kernel.log" >&2; die "the packages did not install"; }
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
TTYVHangup=no
TTYReset=no
EOF
cat > "$root/usr/local/sbin/rs-net" <<'EOF'
#!/bin/sh
# rs.ip=A.B.C.D/N (rs.gw=A.B.C.D) on the kernel command line: the first
# Ethernet interface gets it (the launcher's addressing, as the initramfs
# guest); rs.name=NAME is the host name.
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | tail -n 1; }
ip=$(arg rs.ip) gw=$(arg rs.gw) name=$(arg rs.name)
[ -z "$name" ] || hostname "$name"
ip link set lo up
ifc=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
if [ -n "$ip" ] && [ -n "$ifc" ]; then
    ip link set "$ifc" up
    ip addr add "$ip" dev "$ifc"
    [ -z "$gw" ] || ip route add default via "$gw" dev "$ifc"
fi
EOF
chmod 755 "$root/usr/local/sbin/rs-net"
cat > "$root/etc/systemd/system/rs-net.service" <<'EOF'
[Unit]
Description=Address from rs.ip= on the kernel command line
After=systemd-udev-settle.service systemd-modules-load.service
Wants=systemd-udev-settle.service
Before=network.target
Wants=network.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/rs-net
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
EOF
# The launcher's control protocol on the port of rs.go= (ttyS1), its
# reports on ttyS0 (tests/guest/rstest/console.py):
#   go BASE64        run the script as the launcher's command, its output
#                    on the console, then power off
#   run ID BASE64    run the script, answer "done ID STATUS BASE64-OUTPUT"
#                    on the port, wait for the next line (named tests)
#   poweroff         power off
cat > "$root/usr/local/sbin/rs-go" <<'EOF'
#!/bin/bash
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | tail -n 1; }
say() { echo "rs-init: $*" > /dev/ttyS0; }
share=$(arg rs.share) go=$(arg rs.go)
say "Linux $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime) s"
if [ -n "$share" ]; then
    mkdir -p /mnt/host
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 "$share" /mnt/host ||
        say "mounting the shared directory $share failed"
fi
# The adapter (PCI 1af4:10f0): udev loads its driver, which makes an
# RDMA device; soft-RoCE's comes with the launcher's command.
if grep -qx 0x10f0 /sys/bus/pci/devices/*/device 2>/dev/null; then
    for _ in $(seq 120); do
        [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ] && break
        sleep 0.5
    done
fi
ifc=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
if [ -n "$ifc" ]; then
    drv=$(basename "$(readlink "/sys/class/net/$ifc/device/driver")" 2>/dev/null)
    say "$ifc (${drv:-no driver}) $(cat "/sys/class/net/$ifc/address") $(ip -4 -o addr show dev "$ifc" | awk '{print $4}' | tr '\n' ' ')"
else
    say "no network interface"
fi
say "RDMA devices: $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"
# The port raw before "ready", after which the launcher sends: a line
# the tty took in canonical mode would be cut at 4095 bytes and echoed.
if [ -n "$go" ] && [ -c "/dev/$go" ]; then
    stty -F "/dev/$go" raw -echo
    exec 3<>"/dev/$go"
fi
say ready
[ -n "$go" ] && [ -c "/dev/$go" ] || exit 0
cd /root
while read -r verb a b <&3; do
    case $verb in
    go)
        say "running the launcher's command"
        echo "$a" | base64 -d > /run/rs-go.sh
        bash /run/rs-go.sh < /dev/null > /dev/ttyS0 2>&1
        say "command exit status $?"
        break ;;
    run)
        echo "$b" | base64 -d > "/run/rs-run-$a.sh"
        bash "/run/rs-run-$a.sh" < /dev/null > "/run/rs-run-$a.out" 2>&1
        st=$?
        printf 'done %s %s %s\n' "$a" "$st" "$(base64 -w0 < "/run/rs-run-$a.out")" >&3
        rm -f "/run/rs-run-$a.sh" "/run/rs-run-$a.out" ;;
    poweroff)
        break ;;
    esac
done
say "powering off"
systemctl poweroff
EOF
chmod 755 "$root/usr/local/sbin/rs-go"
cat > "$root/etc/systemd/system/rs-go.service" <<'EOF'
[Unit]
Description=The launcher's control port (rs.go= on the kernel command line)
After=rs-net.service systemd-udev-settle.service network.target
After=ssh.service nfs-server.service iscsid.service getty.target
Wants=rs-net.service

[Service]
Type=simple
ExecStart=/usr/local/sbin/rs-go
StandardOutput=journal+console
LimitMEMLOCK=infinity

[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/rs-net.service "$root/etc/systemd/system/multi-user.target.wants/rs-net.service"
ln -sf /etc/systemd/system/rs-go.service "$root/etc/systemd/system/multi-user.target.wants/rs-go.service"
# RDMA wants locked memory: no limit for root's logins either (mpirun
# over ssh).
cat > "$root/etc/security/limits.d/rdma.conf" <<'EOF'
*    soft memlock unlimited
*    hard memlock unlimited
EOF
# Root's ssh key, the same in every guest and trusted by all (the VMs are
# a private test cluster), and no host key questions between them.
mkdir -p "$root/root/.ssh"
chmod 700 "$root/root/.ssh"
chroot "$root" ssh-keygen -q -t ed25519 -N "" -C rs-guest -f /root/.ssh/id_ed25519
cp "$root/root/.ssh/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
cat > "$root/etc/ssh/ssh_config.d/rs-guest.conf" <<'EOF'
Host *
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
EOF

kver=$(ls "$root/boot" | sed -n 's/^vmlinuz-//p' | sort -V | tail -n 1)
[ -n "$kver" ] || die "no kernel in the image's /boot"
mkdir -p "$work/out"
cp "$root/boot/vmlinuz-$kver" "$work/out/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$work/out/initrd.img"
echo "$kver" > "$work/out/kver"
log "making the ext4 image ($size)"
mke2fs -q -t ext4 -L rs-debian -d "$root" "$work/out/rootfs.img" "$size" ||
    die "mke2fs -d failed"
rm -rf "$out"
mv "$work/out" "$out"
# Older images go (a VM still running one keeps its open file).
for d in "$dir"/*/; do
    d=${d%/}
    case ${d##*/} in debs|"$key") ;; *) rm -rf "$d" ;; esac
done
log "built $out in $(( $(date +%s) - tb )) s: kernel $kver, $(du -sh "$root" | cut -f1) installed"
printf 'RS_DISTRO_KERNEL=%q\nRS_DISTRO_INITRD=%q\nRS_DISTRO_DISK=%q\nRS_DISTRO_KVER=%q\n' \
    "$out/vmlinuz" "$out/initrd.img" "$out/rootfs.img" "$kver"
