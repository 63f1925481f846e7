# The demo's guest side (scripts/run-demo.sh): the RDMA device, ping and
# ibv_rc_pingpong between the two VMs (VM 1 the server), and with mig=1 a
# verified rping stream across VM 1's migrations.  Each step prints
# "demo-step: NAME ok|fail REASON".
step() { echo "demo-step: $*"; }
ndev=$(ls /sys/class/infiniband 2>/dev/null | head -n 1)
prov=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librsession-rdmav*.so 2>/dev/null | head -n 1)
echo "--- ibv_devices"
ibv_devices
echo "--- ibv_devinfo"
ibv_devinfo
[ -z "$ndev" ] || { echo "--- GIDs (ibv_devinfo -v)"; ibv_devinfo -v -d "$ndev" 2>/dev/null | grep -E 'GID\['; }
if [ -z "$ndev" ]; then
    step "rdma-device fail the kernel driver registered no RDMA device"
elif ibv_devinfo -d "$ndev" 2>/dev/null | grep -q PORT_ACTIVE; then
    step "rdma-device ok $ndev"
elif [ -z "$prov" ]; then
    step "rdma-device fail kernel device $ndev, but no rdma-session provider in rdma-core"
else
    step "rdma-device fail $ndev is not listed by ibv_devinfo with an ACTIVE port"
fi
echo "--- $RS_IFACE: $(ip -br addr show dev "$RS_IFACE" 2>/dev/null)"
if [ -z "$RS_IFACE" ]; then
    step "ping fail no network interface"
else
    echo "--- ping -c 3 $RS_PEER"
    # the peer may still be bringing its interface up
    ok=0
    for t in 1 2 3 4 5; do ping -c 1 -W 2 "$RS_PEER" >/dev/null 2>&1 && { ok=1; break; }; done
    if [ $ok = 1 ] && ping -c 3 -W 2 "$RS_PEER"; then step "ping ok"; else step "ping fail"; fi
fi
if [ -z "$ndev" ] || ! ibv_devinfo -d "$ndev" 2>/dev/null | grep -q PORT_ACTIVE; then
    step "rc-pingpong fail no active RDMA device"
else
    gid=$(for f in /sys/class/infiniband/$ndev/ports/1/gids/*; do
              i=${f##*/}; g=$(cat "$f" 2>/dev/null)
              case $g in 0000:0000:0000:0000:0000:ffff:*) echo "$i"; break ;; esac
          done)
    echo "--- ibv_rc_pingpong (GID index ${gid:-?}, VM $RS_VM_INDEX $( [ "$RS_VM_INDEX" = 1 ] && echo server || echo client))"
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout $tmo ibv_rc_pingpong -d "$ndev" -g "${gid:-1}" -n 10 -s 4096
    else
        sleep 2
        timeout $tmo ibv_rc_pingpong -d "$ndev" -g "${gid:-1}" -n 10 -s 4096 "$RS_PEER"
    fi
    if [ $? = 0 ]; then step "rc-pingpong ok"
    else step "rc-pingpong fail"; fi
fi
if [ "$mig" = 1 ]; then
    echo "--- rping -V -C $mc -S 4096 (VM 1 serves, and is live-migrated 3 times meanwhile)"
    if [ "$RS_VM_INDEX" = 1 ]; then
        rping -s -V -C $mc -S 4096 -a "$RS_IP" > /tmp/rp 2>&1; rc=$?
    else
        for t in 1 2 3 4 5 6 7 8 9 10; do
            sleep 1; rping -c -V -C $mc -S 4096 -a "$RS_PEER" > /tmp/rp 2>&1; rc=$?
            grep -q REJECTED /tmp/rp || break
        done
    fi
    m=$(dmesg | grep -c 'live migration: announcing')
    if [ $rc != 0 ] || grep -qiE 'mismatch|fail|error' /tmp/rp; then
        step "migrated-stream fail rping: $(tail -n 2 /tmp/rp | tr '\n' ' ')"
    elif [ "$RS_VM_INDEX" = 1 ] && [ "$m" != 3 ]; then
        step "migrated-stream fail the stream ended after $m of 3 migrations"
    else
        step "migrated-stream ok $mc pings of 4 KiB verified$( [ "$RS_VM_INDEX" = 1 ] && echo ", across $m migrations")"
    fi
fi
exit 0
