#!/bin/bash
# Guest driver test: build guest-driver/kernel (rdma_session.ko) against the
# headers of the guest kernel (also with W=1: no warnings either way), boot
# the guest image with the module loaded at boot (scripts/guest-image.sh,
# RS_EXTRA_MODULES) and check:
#  - one VM on -netdev user (scripts/launch-vms.sh -n 1 --netdev-user): the
#    probe line with ABI 1.x, max_qp 255, max_cq 255 and port ACTIVE, the eth0 line with link
#    up; udhcpc gets a lease from slirp through the adapter and the slirp
#    gateway 10.0.2.2 answers ping; MTU 9000 works; rmmod while the
#    interface is up and a second insmod work, and the gateway answers
#    again after the reload;
#  - two VMs on one segment (scripts/launch-vms.sh -n 2: -netdev
#    socket,mcast on 127.0.0.1) with 10.77.0.1/24 and 10.77.0.2/24 ping
#    each other, also with 8000-byte (jumbo) and 30000-byte (fragmented)
#    datagrams; the carrier of VM 1 goes off and on with QMP set_link
#    (port events); each VM's command and QEMU must end with status 0;
#  - no WARNING, BUG, Oops or call trace in any guest's kernel log.
# Exits 0 on success, 1 on a failed check, 2 on a setup error.
#
# The headers: linux-headers-amd64 from bookworm-backports is installed if
# no linux-headers-6.12.*-amd64 is (scripts/apt-private.sh, apt_need);
# scripts/guest-image.sh boots the kernel matching the newest installed
# 6.12 headers, and the module is built against those same headers.
#
# Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_KERNEL_PKG
#   (scripts/guest-image.sh), RS_DEMO_TIMEOUT (seconds for each run's
#   commands, default 180).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD
. "$top/scripts/apt-private.sh"

log() { printf '[guest-driver] %s\n' "$*" >&2; }
die() { printf '[guest-driver] error: %s\n' "$*" >&2; echo "guest-driver: FAIL: $*"; exit 2; }

t0=$(date +%s)
out="$RS_BUILD/guest-driver"
mkdir -p "$out"
# One run at a time per build directory: the runs share $out (module
# copies, logs, monitor sockets).
exec 8> "$out/.lock"
flock 8 || die "cannot lock $out/.lock"

# --- Headers matching the guest kernel ---------------------------------------
installed_kver()
{
    dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
        awk '$1 ~ /^linux-headers-6\.12\.[0-9]+\+.*-amd64$/ && /install ok installed/ {print $1}' |
        sort -V | tail -n 1 | sed 's/^linux-headers-//'
}
if [ -n "${RS_KERNEL_PKG:-}" ]; then
    kver=${RS_KERNEL_PKG#linux-image-}
    apt_need bookworm-backports "linux-headers-$kver" || die "cannot install linux-headers-$kver"
else
    kver=$(installed_kver)
    if [ -z "$kver" ]; then
        apt_need bookworm-backports linux-headers-amd64 ||
            die "cannot install linux-headers-amd64 from bookworm-backports"
        kver=$(installed_kver)
    fi
fi
[ -n "$kver" ] || die "no linux-headers-6.12.*-amd64 installed"
kdir=/lib/modules/$kver/build
[ -e "$kdir/Makefile" ] || kdir=/usr/src/linux-headers-$kver
[ -e "$kdir/Makefile" ] || die "no kernel build tree for $kver"

# --- Build the module (from a copy: the source tree stays clean) -------------
src="$out/kmod"
rm -rf "$src"
mkdir -p "$src"
cp "$top"/guest-driver/kernel/{Kbuild,Makefile,*.c,*.h} "$src/"
log "building rdma_session.ko against $kdir"
if ! make -C "$kdir" M="$src" RS_ABI_INCLUDE="$top/include" modules \
        > "$out/build.log" 2>&1; then
    tail -n 30 "$out/build.log"
    echo "guest-driver: FAIL: the module does not build (see $out/build.log)"
    exit 1
fi
if grep -E 'warning:|error:' "$out/build.log"; then
    echo "guest-driver: FAIL: the module build has warnings (see $out/build.log)"
    exit 1
fi
# The same sources with W=1 (extra warnings), in a second copy.
srcw="$out/kmod-w1"
rm -rf "$srcw"
cp -r "$src" "$srcw"
make -C "$kdir" M="$srcw" RS_ABI_INCLUDE="$top/include" W=1 clean > /dev/null 2>&1
if ! make -C "$kdir" M="$srcw" RS_ABI_INCLUDE="$top/include" W=1 modules \
        > "$out/build-w1.log" 2>&1 || grep -E 'warning:|error:' "$out/build-w1.log"; then
    echo "guest-driver: FAIL: the module build with W=1 fails or warns (see $out/build-w1.log)"
    exit 1
fi
ko="$src/rdma_session.ko"
[ -s "$ko" ] || die "the build left no $ko"
t1=$(date +%s)

# --- One VM on -netdev user -------------------------------------------------
# /init loads the module before the command.  The command gets a DHCP lease
# (busybox udhcpc with its own script), pings the slirp gateway, runs at
# MTU 9000, unloads the module with the interface up and reloads it
# (remove path, second enable after a disable), pings again with a static
# address and prints the kernel log between markers.
gcmd=$(cat <<'EOS'
printf '#!/bin/sh\ncase "$1" in bound|renew) ip addr flush dev "$interface"; ip addr add "$ip/${mask:-24}" dev "$interface"; echo "RS-DHCP-LEASE $ip from $serverid";; esac\n' > /tmp/rs-udhcpc.sh
chmod +x /tmp/rs-udhcpc.sh
ip addr flush dev eth0; ip link set eth0 up
udhcpc -i eth0 -s /tmp/rs-udhcpc.sh -n -q -t 5 -T 2
ping -c 3 -W 5 10.0.2.2 && echo RS-PING-GW-OK
ip link set eth0 mtu 9000 && ping -c 2 -W 5 -s 1400 10.0.2.2 && echo RS-MTU9000-OK
ip link set eth0 mtu 1500
rmmod rdma_session && echo RS-RMMOD-OK
insmod /lib/modules/$(uname -r)/rdma_session.ko && echo RS-INSMOD-OK
ip addr add 10.0.2.15/24 dev eth0; ip link set eth0 up
ping -c 3 -W 5 10.0.2.2 && echo RS-PING-RELOAD-OK
echo RS-DMESG-BEGIN; dmesg; echo RS-DMESG-END
EOS
)
rm -rf "$out/user-vm"
RS_EXTRA_MODULES="$ko" RS_VMS_LOGDIR="$out/user-vm" "$top/scripts/launch-vms.sh" \
    --no-build -q -n 1 --netdev-user --timeout "${RS_DEMO_TIMEOUT:-180}" \
    --cmd "$gcmd" > "$out/user-vm.log" 2>&1
drc=$?
tr -d '\r' < "$out/user-vm/vm1/serial.log" > "$out/serial.log" 2>/dev/null
t2=$(date +%s)
[ $drc = 2 ] && { tail -n 20 "$out/user-vm.log"; die "scripts/launch-vms.sh could not start the VM (see $out/user-vm.log)"; }

tr -d '\r' < "$out/serial.log" | sed -n '/^RS-DMESG-BEGIN$/,/^RS-DMESG-END$/p' > "$out/dmesg.log"

# --- Two VMs on one segment ---------------------------------------------------
# scripts/launch-vms.sh -n 2 (the VM test harness): QEMU's own multicast
# socket backend on the loopback interface is the switch, the VMs have
# 10.77.0.1/24 and 10.77.0.2/24, the image the module built above
# (RS_EXTRA_MODULES).  Each VM pings the other until it answers (at most
# 30 tries), then checks plain, jumbo and fragmented pings, stays up a
# while for the peer and prints its kernel log.
vms="$out/vms"
rm -rf "$vms"
vcmd=$(cat <<'EOS'
ip link set "$RS_IFACE" mtu 9000
i=0; while [ $i -lt 30 ] && ! ping -c 1 -W 1 $RS_PEER > /dev/null 2>&1; do i=$((i + 1)); done
ping -c 3 -W 5 $RS_PEER && echo RS-PEER-PING-OK
ping -c 2 -W 5 -s 8000 $RS_PEER && echo RS-PEER-JUMBO-OK
ping -c 2 -W 5 -s 30000 $RS_PEER && echo RS-PEER-FRAG-OK
sleep 5
if [ $RS_VM_INDEX = 1 ]; then
    echo RS-LINK-TEST
    c=/sys/class/net/$RS_IFACE/carrier
    i=0; while [ $i -lt 60 ] && [ $(cat $c) = 1 ]; do sleep 0.5; i=$((i + 1)); done
    [ $(cat $c) = 0 ] && echo RS-CARRIER-DOWN-OK
    i=0; while [ $i -lt 30 ] && [ $(cat $c) = 0 ]; do sleep 0.5; i=$((i + 1)); done
    [ $(cat $c) = 1 ] && echo RS-CARRIER-UP-OK
fi
echo RS-DMESG-BEGIN; dmesg; echo RS-DMESG-END
EOS
)
RS_EXTRA_MODULES="$ko" RS_VMS_LOGDIR="$vms" "$top/scripts/launch-vms.sh" --no-build -q \
    -n 2 --timeout "${RS_DEMO_TIMEOUT:-180}" --cmd "$vcmd" > "$out/two-vms.log" 2>&1 &
lpid=$!
# Link state: when VM 1 says RS-LINK-TEST, take its link down for 3 s
# (QMP set_link on its netdev); the guest must see carrier off, then on
# again.
for _ in $(seq 1 $(( ${RS_DEMO_TIMEOUT:-180} + 120 ))); do
    grep -q '^RS-LINK-TEST' "$vms/vm1/serial.log" 2>/dev/null && break
    kill -0 $lpid 2>/dev/null || break
    sleep 1
done
if grep -q '^RS-LINK-TEST' "$vms/vm1/serial.log" 2>/dev/null; then
    { "$top/scripts/qmp.py" "$vms/vm1/qmp.sock" set_link '{"name": "n0", "up": false}'
      sleep 3
      "$top/scripts/qmp.py" "$vms/vm1/qmp.sock" set_link '{"name": "n0", "up": true}'
    } >> "$out/two-vms.qmp.log" 2>&1
fi
wait $lpid
lrc=$?
[ $lrc = 2 ] && { tail -n 20 "$out/two-vms.log"; die "scripts/launch-vms.sh could not start the two VMs (see $out/two-vms.log)"; }
t3=$(date +%s)

probe_re='rdma_session [0-9a-f:.]+: rdma-session: ABI 1\.[0-9]+, max_qp 255, max_cq 255, max_mr [0-9]+, max_gids [0-9]+, MAC ([0-9a-f]{2}:){5}[0-9a-f]{2}, port ACTIVE'
fails=()
[ $drc = 0 ] || fails+=("the user-net VM failed (status $drc, see $out/user-vm.log)")
grep -q '^RS-DMESG-END$' "$out/dmesg.log" || fails+=("the guest did not print its kernel log")
nprobe=$(grep -cE "$probe_re" "$out/dmesg.log")
[ "$nprobe" = 2 ] || fails+=("$nprobe probe lines with the expected values, expected 2 (boot and reload)")
nlan=$(grep -cE 'rdma_session [0-9a-f:.]+ eth0: rdma-session LAN port, MAC ([0-9a-f]{2}:){5}[0-9a-f]{2}, link up' "$out/dmesg.log")
[ "$nlan" = 2 ] || fails+=("$nlan eth0 lines with link up, expected 2 (boot and reload)")
for m in RS-DHCP-LEASE RS-PING-GW-OK RS-MTU9000-OK RS-RMMOD-OK RS-INSMOD-OK RS-PING-RELOAD-OK; do
    grep -q "^$m" "$out/serial.log" || fails+=("user-net VM: no $m")
done
bad=$(grep -E 'WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)' "$out/dmesg.log" | head -n 5)
[ -z "$bad" ] || fails+=("the kernel log has: $bad")

for n in 1 2; do
    s="$vms/vm$n/serial.log"
    st=$(grep -m1 "^launch-vms: vm$n: exit status" "$out/two-vms.log")
    [ "$st" = "launch-vms: vm$n: exit status 0" ] ||
        fails+=("two-VM test: VM $n: ${st:-no status} (see $s, $out/two-vms.log)")
    marks=(RS-PEER-PING-OK RS-PEER-JUMBO-OK RS-PEER-FRAG-OK RS-DMESG-END)
    [ $n = 1 ] && marks+=(RS-CARRIER-DOWN-OK RS-CARRIER-UP-OK)
    for m in "${marks[@]}"; do
        grep -q "^$m" "$s" || fails+=("two-VM test: VM $n: no $m (see $s)")
    done
    bad=$(tr -d '\r' < "$s" | sed -n '/^RS-DMESG-BEGIN$/,/^RS-DMESG-END$/p' |
          grep -E 'WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)' | head -n 5)
    [ -z "$bad" ] || fails+=("two-VM test: VM $n: the kernel log has: $bad")
done

line=$(grep -E "$probe_re" "$out/dmesg.log" | head -n 1)
lease=$(tr -d '\r' < "$out/serial.log" | grep -m1 '^RS-DHCP-LEASE' | sed 's/^RS-DHCP-LEASE //')
log "module build $((t1 - t0)) s, image + user-net VM $((t2 - t1)) s, two VMs $((t3 - t2)) s; logs in $out"
if [ ${#fails[@]} -eq 0 ]; then
    echo "guest-driver: PASS: ${line}"
    echo "guest-driver: PASS: eth0 link up; DHCP lease $lease; slirp gateway ping; MTU 9000; rmmod with the interface up and insmod"
    echo "guest-driver: PASS: two VMs (10.77.0.1, 10.77.0.2) ping each other: plain, 8000-byte and 30000-byte datagrams; carrier follows set_link off/on"
    exit 0
fi
for f in "${fails[@]}"; do echo "guest-driver: FAIL: $f"; done
grep rdma_session "$out/dmesg.log" | head -n 10
exit 1
