# verbs: RoCE on an 802.1Q VLAN (ABI 1.9, RS_CAP_VLAN).  Both VMs put
# VLAN 100 on their interface with the egress priority map 0:5 and
# 10.100.0.N/24 on it.  Checks: the address's RoCE v2 GID belongs to the
# VLAN interface (gid), the adapter's driver gave the device its VLAN
# (driver-vlan, adapters only), IP over the VLAN (ping),
# ibv_rc_pingpong through the VLAN's GID with SL 5 (rc-pingpong) and,
# at the same time as that, through the untagged address's GID
# (rc-pingpong-untagged), rping with rdma_cm picking the VLAN's GID, its
# SL from the ToS through the egress map (rping), vlan_rx_dropped in
# rdma statistic (statistic, adapters only).  VM 1's capture is checked
# on the host (verbs.py vlan_capture): every RoCE frame of 10.100.0.x
# tagged VID 100, VM 1's with priority 5, none untagged.
vl=$RS_IFACE.100
vl_ip=10.100.0.$RS_VM_INDEX
vl_peer=10.100.0.1
vl_adapter=1
case $dev in rxe*) vl_adapter=0 ;; esac
modprobe 8021q 2>/dev/null
ip link add link "$RS_IFACE" name "$vl" type vlan id 100 egress-qos-map 0:5
ip addr add "$vl_ip/24" dev "$vl"
ip link set "$vl" up
vl_gid=$(gid_wait "$vl_ip")
if [ -n "$vl_gid" ] &&
   [ "$(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/$vl_gid")" = "$vl" ]; then
    ck "$VB_PAIRING/vlan/gid" ok "GID $vl_gid ($vl_ip) on $vl"
else
    ck "$VB_PAIRING/vlan/gid" fail "no RoCE v2 GID of $vl_ip on $vl ($vl_gid)"
fi
if [ $vl_adapter = 1 ]; then
    if dmesg | grep -q "GID $vl_gid on VLAN 100"; then
        ck "$VB_PAIRING/vlan/driver-vlan" ok "$(dmesg | grep "GID $vl_gid on VLAN" | tail -n 1)"
    else
        ck "$VB_PAIRING/vlan/driver-vlan" fail "no 'GID $vl_gid on VLAN 100' in the kernel log"
    fi
fi
vb_step
barrier $((600 + vb_n)) 120
if [ "$RS_VM_INDEX" = 1 ]; then vl_to=10.100.0.2; else vl_to=$vl_peer; fi
if ping -c 2 -W 5 "$vl_to" > /tmp/vl.ping 2>&1; then
    ck "$VB_PAIRING/vlan/ping" ok "$(grep -E 'transmitted' /tmp/vl.ping)"
else
    ck "$VB_PAIRING/vlan/ping" fail "$(tail -n 2 /tmp/vl.ping | tr '\n' ' ')"
fi
# ibv_rc_pingpong on the VLAN (SL 5) and, meanwhile, untagged.
u_gid=$(gid_of "$RS_IP")
vb_step
vl_port=$((18600 + vb_n))
if [ "$RS_VM_INDEX" = 1 ]; then
    timeout 150 ibv_rc_pingpong -d "$dev" -g "$vl_gid" -l 5 -s 4096 -n 50 -p $vl_port > /tmp/vl.pp 2>&1 & p1=$!
    timeout 150 ibv_rc_pingpong -d "$dev" -g "$u_gid" -s 4096 -n 50 -p $((vl_port + 1)) > /tmp/vl.pu 2>&1 & p2=$!
    wait $p1; r1=$?
    wait $p2; r2=$?
else
    vb_client /tmp/vl.pp 150 ibv_rc_pingpong -d "$dev" -g "$vl_gid" -l 5 -s 4096 -n 50 -p $vl_port "$vl_peer" & p1=$!
    vb_client /tmp/vl.pu 150 ibv_rc_pingpong -d "$dev" -g "$u_gid" -s 4096 -n 50 -p $((vl_port + 1)) "$(vb_vm1)" & p2=$!
    wait $p1; r1=$?
    wait $p2; r2=$?
fi
cat /tmp/vl.pp /tmp/vl.pu
[ $r1 = 0 ] && grep -q iters /tmp/vl.pp && ok=ok || ok=fail
ck "$VB_PAIRING/vlan/rc-pingpong" "$ok" "GID $vl_gid SL 5: exit $r1, $(grep iters /tmp/vl.pp)"
[ $r2 = 0 ] && grep -q iters /tmp/vl.pu && ok=ok || ok=fail
ck "$VB_PAIRING/vlan/rc-pingpong-untagged" "$ok" "GID $u_gid: exit $r2, $(grep iters /tmp/vl.pu)"
# rping: rdma_cm resolves the VLAN address to the VLAN's GID.
vb_rping vlan "$vl_peer" 600 7200
if [ $vl_adapter = 1 ]; then
    s=$(rdma statistic show link "$dev/1" 2>&1 | grep -o 'vlan_rx_dropped [0-9]*')
    [ -n "$s" ] && ok=ok || ok=fail
    ck "$VB_PAIRING/vlan/statistic" "$ok" "$s"
fi
vb_step
barrier $((600 + vb_n)) 60
ip link del "$vl"
