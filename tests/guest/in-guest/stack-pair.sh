# Two adapter VMs on one segment: the Ethernet interface, ping, the RDMA
# device, its RoCE v2 GID, rdma link/resource, every tool starts, traffic.
ifc=$RS_IFACE
mac=$(printf '52:54:00:77:00:%02x' "$RS_VM_INDEX")
drv=$(basename "$(readlink /sys/class/net/$ifc/device/driver 2>/dev/null)" 2>/dev/null)
if [ "$drv" = rdma_session ] && [ "$(cat /sys/class/net/$ifc/address)" = "$mac" ] &&
   [ "$(cat /sys/class/net/$ifc/carrier 2>/dev/null)" = 1 ]; then
    ck netdev ok "$ifc $mac carrier up"
else ck netdev fail "interface '$ifc' driver '$drv' address $(cat /sys/class/net/$ifc/address 2>/dev/null) carrier $(cat /sys/class/net/$ifc/carrier 2>/dev/null)"; fi
ok=0
for t in 1 2 3 4 5 6; do ping -c 1 -W 2 "$RS_PEER" >/dev/null 2>&1 && { ok=1; break; }; done
if [ $ok = 1 ] && ping -c 3 -W 2 "$RS_PEER" > /tmp/ping.log 2>&1; then
    ck ping ok "$(grep 'packets transmitted' /tmp/ping.log)"
else ck ping fail "$(tail -n 2 /tmp/ping.log 2>/dev/null | tr '\n' ' ')"; fi
if ibv_devices 2>&1 | grep -qw rsess0; then ck ibv-devices ok
else ck ibv-devices fail "$(ibv_devices 2>&1 | tr '\n' ' ')"; fi
ibv_devinfo -d rsess0 > /tmp/devinfo.log 2>&1
if grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo.log && grep -q 'link_layer:.*Ethernet' /tmp/devinfo.log; then
    ck ibv-devinfo ok "PORT_ACTIVE, link_layer Ethernet"
else ck ibv-devinfo fail "$(grep -E 'state|link_layer|No IB|Failed' /tmp/devinfo.log | tr '\n' ' ')"; fi
if gi=$(gid_of "$RS_IP"); then ck gid-rocev2 ok "index $gi ::ffff:$RS_IP RoCE v2"
else ck gid-rocev2 fail "no RoCE v2 GID for $RS_IP on '$dev': $(cat /sys/class/infiniband/$dev/ports/1/gids/* 2>/dev/null | grep -v '^0000:0000:0000:0000:0000:0000:0000:0000$' | tr '\n' ' ')"; fi
l=$(rdma link show 2>&1)
if echo "$l" | grep -qE "link rsess0/1 .*state ACTIVE.*netdev $ifc"; then ck rdma-link ok "$l"
else ck rdma-link fail "$l"; fi
r=$(rdma resource show 2>&1); rc=$?
if [ $rc = 0 ] && echo "$r" | grep -q 'rsess0'; then ck rdma-resource ok "$(echo "$r" | head -n 1)"
else ck rdma-resource fail "status $rc: $r"; fi
# Every perftest binary, rping and the pingpong tests start: the dynamic
# loader resolves their libraries and symbol versions (--help prints the
# usage; the exit status varies between the tools).
bad=
for p in ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_atomic_bw \
         rping ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong; do
    if ! command -v $p >/dev/null 2>&1; then bad="$bad $p:missing"; continue; fi
    o=$(timeout 10 $p --help 2>&1); rc=$?
    if [ $rc = 127 ] || [ $rc = 124 ] || [ -z "$o" ] ||
       echo "$o" | grep -qiE 'error while loading|version .* not found|symbol lookup error|cannot open shared|not found \(required'; then
        bad="$bad $p:status-$rc:$(echo "$o" | head -n 1)"
    fi
done
if [ -z "$bad" ]; then ck perftest-start ok "ib_*_bw/lat, rping, ibv_*_pingpong start"
else ck perftest-start fail "$bad"; fi
# Traffic between the two VMs: VM 1 serves, VM 2 connects (retrying until
# the server listens).
gi=$(gid_of "$RS_IP" || echo 1)
pp_pair() {  # check name, command...
    n=$1; shift
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout 90 "$@" > /tmp/$n.log 2>&1; rc=$?
    else
        for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
            sleep 2
            timeout 90 "$@" "$RS_PEER" > /tmp/$n.log 2>&1; rc=$?
            grep -qi "couldn't connect\|unable to connect\|connection refused" /tmp/$n.log || break
        done
    fi
    if [ $rc = 0 ]; then ck $n ok "$(grep -v '^ *$' /tmp/$n.log | tail -n 1)"
    else ck $n fail "status $rc: $(tail -n 3 /tmp/$n.log | tr '\n' ' ')"; fi
}
pp_pair uc-pingpong ibv_uc_pingpong -d rsess0 -g "$gi" -n 20
pp_pair srq-pingpong ibv_srq_pingpong -d rsess0 -g "$gi" -n 20
pp_pair atomic-bw ib_atomic_bw -d rsess0 -x "$gi" -n 50 -F
b=$(badlog)
if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
