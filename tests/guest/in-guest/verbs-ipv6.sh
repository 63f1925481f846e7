# verbs: RoCE v2 over IPv6 global addresses.  Both VMs add
# 2001:db8:77::N/64 to their interface.  Checks: the address's RoCE v2
# GID (gid), IPv6 between the VMs (ping), ibv_rc_pingpong through that
# GID (rc-pingpong), ib_write_bw through it (write-bw), rping with
# rdma_cm resolving the IPv6 addresses (rping), UD multicast to the IPv6
# group ff0e::77:1 through ibv_attach_mcast with VM 1 sending (rsv-mcast:
# mc1-*) and VM 2 sending (mc2-*), NVMe over Fabrics with the target on
# VM 1's IPv6 address (nvmf-target, nvmf-io); rdma_cm refuses to join IPv6 groups
# over RoCE v2 (ENOTSUPP) on every device.  VM 1's capture is checked on
# the host (verbs.py ipv6_capture): RoCE frames over IPv6 each way, with
# their ICRCs.
v6_ip=2001:db8:77::$RS_VM_INDEX
v6_peer=2001:db8:77::1
ip -6 addr add "$v6_ip/64" dev "$RS_IFACE" nodad
v6_gid=$(gid_wait "$v6_ip")
if [ -n "$v6_gid" ]; then
    ck "$VB_PAIRING/ipv6/gid" ok "GID $v6_gid: $(cat "/sys/class/infiniband/$dev/ports/1/gids/$v6_gid") on $(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/$v6_gid")"
else
    ck "$VB_PAIRING/ipv6/gid" fail "no RoCE v2 GID of $v6_ip: $(cat /sys/class/infiniband/$dev/ports/1/gids/* | grep -v '^0000:0000:0000:0000:0000:0000:0000:0000$' | tr '\n' ' ')"
fi
vb_step
barrier $((650 + vb_n)) 120
if [ "$RS_VM_INDEX" = 1 ]; then v6_to=2001:db8:77::2; else v6_to=$v6_peer; fi
if ping -6 -c 2 -W 5 "$v6_to" > /tmp/v6.ping 2>&1; then
    ck "$VB_PAIRING/ipv6/ping" ok "$(grep -E 'transmitted' /tmp/v6.ping)"
else
    ck "$VB_PAIRING/ipv6/ping" fail "$(tail -n 2 /tmp/v6.ping | tr '\n' ' ')"
fi
vb_step
v6_port=$((18700 + vb_n))
if [ "$RS_VM_INDEX" = 1 ]; then
    timeout 150 ibv_rc_pingpong -d "$dev" -g "$v6_gid" -s 4096 -n 50 -p $v6_port > /tmp/v6.pp 2>&1
    r1=$?
else
    vb_client /tmp/v6.pp 150 ibv_rc_pingpong -d "$dev" -g "$v6_gid" -s 4096 -n 50 -p $v6_port "$(vb_vm1)"
    r1=$?
fi
cat /tmp/v6.pp
[ $r1 = 0 ] && grep -q iters /tmp/v6.pp && ok=ok || ok=fail
ck "$VB_PAIRING/ipv6/rc-pingpong" "$ok" "GID $v6_gid: exit $r1, $(grep iters /tmp/v6.pp)"
# ib_write_bw: its connection data over TCP, the WRITEs through the
# IPv6 GID (-x).
vb_step
v6_port=$((18700 + vb_n))
if [ "$RS_VM_INDEX" = 1 ]; then
    timeout 150 ib_write_bw -d "$dev" -x "$v6_gid" -F -s 65536 -n 200 -p $v6_port > /tmp/v6.bw 2>&1
    r1=$?
else
    vb_client /tmp/v6.bw 150 ib_write_bw -d "$dev" -x "$v6_gid" -F -s 65536 -n 200 -p $v6_port "$(vb_vm1)"
    r1=$?
fi
cat /tmp/v6.bw
bw=$(awk '$1 == 65536 { print $4 " MB/s average, peak " $3 }' /tmp/v6.bw)
[ $r1 = 0 ] && [ -n "$bw" ] && ok=ok || ok=fail
ck "$VB_PAIRING/ipv6/write-bw" "$ok" "GID $v6_gid, 200 x 64 KiB: exit $r1, $bw"
# rping: rdma_cm resolves the IPv6 addresses to their GIDs.
vb_rping ipv6 "$v6_peer" 650 7300
vb_pair ipv6 rsv-mcast -g "$v6_gid" -- send mc1 ff0e::77:1
vb_pair ipv6 rsv-mcast -g "$v6_gid" -- recv mc2 ff0e::77:1
# NVMe over Fabrics on the IPv6 address: VM 1 exports an 8 MiB RAM disk
# through nvmet-rdma (adrfam ipv6), VM 2 connects through nvme-rdma,
# writes 1 MiB in 64 KiB requests, reads it back in 4 KiB and compares
# (nvmf-io), disconnects and sends VM 1 the MD5, which VM 1 compares
# with its RAM disk (nvmf-target).
vb_step
v6_nqn=nqn.2026-11.org.rdma-session:ipv6
if [ "$RS_VM_INDEX" = 1 ]; then
    c=/sys/kernel/config/nvmet
    err=
    { modprobe brd rd_nr=1 rd_size=8192 && modprobe nvmet_rdma &&
      { mount -t configfs none /sys/kernel/config 2>/dev/null; true; } &&
      mkdir $c/subsystems/$v6_nqn &&
      echo 1 > $c/subsystems/$v6_nqn/attr_allow_any_host &&
      mkdir $c/subsystems/$v6_nqn/namespaces/1 &&
      echo -n /dev/ram0 > $c/subsystems/$v6_nqn/namespaces/1/device_path &&
      echo 1 > $c/subsystems/$v6_nqn/namespaces/1/enable &&
      mkdir $c/ports/6 &&
      echo rdma > $c/ports/6/addr_trtype &&
      echo ipv6 > $c/ports/6/addr_adrfam &&
      echo "$v6_ip" > $c/ports/6/addr_traddr &&
      echo 4420 > $c/ports/6/addr_trsvcid &&
      ln -s $c/subsystems/$v6_nqn $c/ports/6/subsystems/$v6_nqn; } 2>/tmp/v6.cfg ||
        err="configfs: $(tr '\n' ' ' < /tmp/v6.cfg)"
    barrier $((650 + vb_n)) 120
    want=$(timeout 200 nc -l -p 7790 | awk '{ print $1 }')
    got=$(dd if=/dev/ram0 bs=65536 count=16 2>/dev/null | md5sum | awk '{ print $1 }')
    if [ -z "$err" ] && [ -n "$want" ] && [ "$want" = "$got" ]; then
        ck "$VB_PAIRING/ipv6/nvmf-target" ok "$v6_nqn on [$v6_ip]:4420: the RAM disk holds what VM 2 wrote (md5 $got)"
    else
        ck "$VB_PAIRING/ipv6/nvmf-target" fail "${err}VM 2's md5 '$want', the RAM disk's '$got'"
    fi
    rm -f $c/ports/6/subsystems/$v6_nqn
    rmdir $c/ports/6 $c/subsystems/$v6_nqn/namespaces/1 $c/subsystems/$v6_nqn 2>/dev/null
else
    barrier $((650 + vb_n)) 120
    err=
    modprobe nvme_rdma || err="modprobe nvme_rdma failed"
    ok=0
    for t in $(seq 1 20); do
        [ -n "$err" ] && break
        echo "transport=rdma,traddr=$v6_peer,trsvcid=4420,nqn=$v6_nqn" > /dev/nvme-fabrics 2>/tmp/v6.conn && { ok=1; break; }
        sleep 2
    done
    for t in $(seq 1 40); do [ -b /dev/nvme0n1 ] && break; sleep 0.5; done
    sum=none
    if [ $ok = 1 ] && [ -b /dev/nvme0n1 ]; then
        a=$(cat /sys/class/nvme/nvme0/address)
        dd if=/dev/urandom of=/tmp/v6.a bs=65536 count=16 2>/dev/null
        dd if=/tmp/v6.a of=/dev/nvme0n1 bs=65536 count=16 oflag=direct 2>/tmp/v6.dd &&
            dd if=/dev/nvme0n1 of=/tmp/v6.b bs=4096 count=256 iflag=direct 2>>/tmp/v6.dd
        if cmp -s /tmp/v6.a /tmp/v6.b; then
            sum=$(md5sum < /tmp/v6.a | awk '{ print $1 }')
            ck "$VB_PAIRING/ipv6/nvmf-io" ok "$a: 1 MiB written in 64 KiB, read back in 4 KiB, equal"
        else
            ck "$VB_PAIRING/ipv6/nvmf-io" fail "$a: $(cmp /tmp/v6.a /tmp/v6.b 2>&1 | head -n 1) $(tr '\n' ' ' < /tmp/v6.dd)"
        fi
        echo 1 > /sys/class/nvme/nvme0/delete_controller
        for t in $(seq 1 20); do [ -e /sys/class/nvme/nvme0 ] || break; sleep 0.5; done
    else
        ck "$VB_PAIRING/ipv6/nvmf-io" fail "${err}$(tr '\n' ' ' < /tmp/v6.conn 2>/dev/null) $(dmesg | grep -iE 'nvme|rdma' | tail -n 3 | tr '\n' ' ')"
    fi
    for t in $(seq 1 20); do
        echo "$sum" | nc "$(vb_vm1)" 7790 2>/dev/null && break
        sleep 1
    done
fi
vb_step
barrier $((650 + vb_n)) 60
ip -6 addr del "$v6_ip/64" dev "$RS_IFACE"
