# One VM on -netdev user: DHCP, the slirp gateway, and a module reload
# while a process holds a context.
ifc=$RS_IFACE
a=$(ip -4 -o addr show dev "$ifc" 2>/dev/null | awk '{print $4}')
case $a in
10.0.2.*) if ping -c 3 -W 2 10.0.2.2 > /tmp/ping.log 2>&1; then
              ck dhcp-gateway ok "lease $a, $(grep 'packets transmitted' /tmp/ping.log)"
          else ck dhcp-gateway fail "lease $a, ping 10.0.2.2: $(tail -n 2 /tmp/ping.log | tr '\n' ' ')"; fi ;;
*) ck dhcp-gateway fail "no DHCP lease on '$ifc' (address '$a')" ;;
esac
# Unload and reload the module while ibv_rc_pingpong (a server waiting for
# its client) holds a context on the device.
gi=$(gid_of "$a" || echo 0)
ibv_rc_pingpong -d rsess0 -g "$gi" > /tmp/pp.log 2>&1 &
pp=$!
sleep 2
note=
if ! kill -0 $pp 2>/dev/null; then
    ck reload-with-context fail "ibv_rc_pingpong did not stay up: $(tr '\n' ' ' < /tmp/pp.log)"
else
    rmmod rdma_session > /tmp/rmmod.log 2>&1 &
    rm=$!
    for t in $(seq 1 40); do kill -0 $rm 2>/dev/null || break; sleep 0.5; done
    if kill -0 $rm 2>/dev/null; then
        note="rmmod waited for the process; killed it"
        kill -9 $pp 2>/dev/null
        for t in $(seq 1 40); do kill -0 $rm 2>/dev/null || break; sleep 0.5; done
    fi
    if kill -0 $rm 2>/dev/null; then
        ck reload-with-context fail "rmmod rdma_session still hangs 20 s after the process was killed"
    elif ! wait $rm; then
        ck reload-with-context fail "rmmod rdma_session failed: $(cat /tmp/rmmod.log)"
    else
        kill -0 $pp 2>/dev/null && { note="${note:+$note; }the process survived the unload"; kill -9 $pp; }
        wait $pp 2>/dev/null
        ppout=$(tail -n 2 /tmp/pp.log | tr '\n' ' ')
        if ! modprobe rdma_session; then
            ck reload-with-context fail "modprobe rdma_session after the unload failed"
        else
            ifc=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
            [ -z "$ifc" ] || ip link set "$ifc" up
            for t in $(seq 1 20); do ibv_devinfo -d rsess0 2>/dev/null | grep -q PORT_ACTIVE && break; sleep 0.5; done
            if ibv_devinfo -d rsess0 2>/dev/null | grep -q PORT_ACTIVE; then
                ck reload-with-context ok "${note:-the process ended with the unload}; pingpong said: $ppout"
            else ck reload-with-context fail "after the reload rsess0 is not ACTIVE: $(ibv_devinfo 2>&1 | tr '\n' ' ')"; fi
        fi
    fi
fi
b=$(badlog)
if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
