# resilience: guest-side part 'vm1' (sent by tests/guest/resilience.py)
# 1. VM 2 is reset while this client writes.
client /tmp/bw1.log 60 ib_write_bw -d rsess0 -x "$gi" -p 18601 -F -s 4096 -D 30 -u 15 &
p=$!
if wait_rts && sleep 2 && alive $p; then
    echo "RESIL reset-now"
    wait_end $p 60
    retry_exceeded /tmp/bw1.log $rc reset-peer-retry-exceeded
else
    echo "RESIL no-traffic"
    wait_end $p 5
    ck reset-peer-retry-exceeded fail "no traffic to reset VM 2 in: status $rc, $(tail -n 4 /tmp/bw1.log | tr '\n' ' ')"
fi
dmesg_clean reset-peer-dmesg-clean
# 2. The same peer after its reboot.
client /tmp/pp2.log 120 ibv_rc_pingpong -d rsess0 -g "$gi" -p 18602 -n 100 -s 4096 -c
passed reset-traffic-again /tmp/pp2.log
# 3. Unload the module under the server's QP.
timeout 120 ib_write_bw -d rsess0 -x "$gi" -p 18603 -F -s 4096 -D 30 -u 15 > /tmp/bw3.log 2>&1 &
p=$!
unloaded=0
if wait_rts && sleep 2 && alive $p; then
    t0=$(date +%s)
    rmmod rdma_session > /tmp/rmmod.log 2>&1 &
    rmp=$!
    wait_end $rmp 30
    if [ $rc = 0 ] && [ ! -e /sys/module/rdma_session ]; then
        unloaded=1
        ck rmmod-during-traffic ok "in $(( $(date +%s) - t0 )) s; server $(alive $p && echo still running || echo ended)"
    else ck rmmod-during-traffic fail "status $rc: $(tr '\n' ' ' < /tmp/rmmod.log) $(ls -d /sys/module/rdma_session 2>/dev/null)"; fi
else
    ck rmmod-during-traffic fail "no traffic to unload the module under: $(tail -n 4 /tmp/bw3.log | tr '\n' ' ')"
fi
if [ $unloaded = 0 ]; then
    ck modprobe-port-active fail "not checked: the module was not unloaded"
elif modprobe rdma_session; then
    if port_back; then
        ck modprobe-port-active ok "rsess0 ACTIVE, GID index $gi"
    else ck modprobe-port-active fail "$(port_state) GIDs: $(cat /sys/class/infiniband/rsess0/ports/1/gids/* 2>/dev/null | grep -v '^0000:0000:0000:0000' | tr '\n' ' ')"; fi
else
    ck modprobe-port-active fail "modprobe rdma_session failed"
fi
wait_end $p 30
echo "resilience: the unloaded server ended with status $rc: $(tail -n 2 /tmp/bw3.log | tr '\n' ' ')"
# 4. The same pair again.
timeout 60 ib_write_bw -d rsess0 -x "$gi" -p 18604 -F -s 4096 -n 200 -u 18 > /tmp/bw4.log 2>&1; rc=$?
passed rmmod-traffic-again /tmp/bw4.log
# 5. A function level reset of the adapter under the server's QP.
timeout 120 ib_write_bw -d rsess0 -x "$gi" -p 18605 -F -s 4096 -D 30 -u 15 > /tmp/bw5.log 2>&1 &
p=$!
pcidev=$(readlink -f /sys/class/infiniband/rsess0/device)
if wait_rts && sleep 2 && alive $p && [ -w "$pcidev/reset" ]; then
    if echo 1 > "$pcidev/reset"; then
        if port_back; then
            ck flr-during-traffic ok "rsess0 ACTIVE again, GID index $gi: $(dmesg | grep -c 'function reset') driver messages"
        else ck flr-during-traffic fail "$(port_state); $(dmesg | tail -n 3 | tr '\n' ' ')"; fi
    else ck flr-during-traffic fail "writing $pcidev/reset failed"; fi
else
    ck flr-during-traffic fail "no traffic to reset the function under ($pcidev): $(tail -n 4 /tmp/bw5.log | tr '\n' ' ')"
fi
wait_end $p 30
echo "resilience: the server under the FLR ended with status $rc: $(tail -n 2 /tmp/bw5.log | tr '\n' ' ')"
# 6. The same pair after the FLR.
timeout 60 ib_write_bw -d rsess0 -x "$gi" -p 18606 -F -s 4096 -n 200 -u 18 > /tmp/bw6.log 2>&1; rc=$?
passed flr-traffic-again /tmp/bw6.log
dmesg_clean dmesg-clean
exit 0
