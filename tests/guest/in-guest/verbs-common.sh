# The verbs suite's helpers (tests/guest/verbs.py), after lib.sh; then
# each feature's script runs.  $VB_PAIRING names the boot.
#
#   vb_pair FEATURE PROG [ARGS...]  VM 1 runs PROG as the server, the
#        other VMs as clients of VM 1 (-c), all with -n
#        "$VB_PAIRING/FEATURE" and a TCP port of their own per call; a
#        program that exits without its CHECK lines fails as "no result"
#   vb_step                         the next step number (ports, barriers)
#   vb_vm1                          VM 1's address
#   vb_client OUT SECONDS CMD...    a client program, retried while its
#        server does not listen yet
vb_n=0
vb_step() { vb_n=$((vb_n + 1)); }
vb_vm1() { echo "${RS_IP%.*}.1"; }
# vb_client OUT SECONDS CMD...: a client CMD (timeout SECONDS, output in
# OUT), again every second for up to 60 s while it cannot connect (its
# server not listening yet); its exit status.
vb_client()
{
    local out=$1 t=$2 end=$(( $(date +%s) + 60 )) rc
    shift 2
    while :; do
        sleep 1
        timeout "$t" "$@" > "$out" 2>&1
        rc=$?
        grep -q "Couldn't connect" "$out" && [ "$(date +%s)" -lt $end ] || return $rc
    done
}
vb_pair()
{
    local feat=$1 prog=$2 rc
    shift 2
    vb_step
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout 300 "$prog" -n "$VB_PAIRING/$feat" -p $((19000 + vb_n)) -t 120 "$@" > /tmp/vb.out 2>&1
    else
        timeout 300 "$prog" -n "$VB_PAIRING/$feat" -p $((19000 + vb_n)) -t 120 -c "$(vb_vm1)" "$@" > /tmp/vb.out 2>&1
    fi
    rc=$?
    cat /tmp/vb.out
    echo "verbs: $prog exit status $rc"
}
echo "verbs: $VB_PAIRING vm$RS_VM_INDEX device '$dev' ($(cat /sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/0 2>/dev/null))"
# vb_rping FEATURE ADDRESS BARRIER PORT: rping -V (20 x 4 KiB) with VM 1
# serving on its ADDRESS and VM 2 the client, rdma_cm resolving ADDRESS;
# check FEATURE/rping.  BARRIER and PORT: the bases of the step's
# barrier and rdma_cm port.
vb_rping()
{
    local p r out=/tmp/vb.rping
    vb_step
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout 120 rping -s -V -C 20 -S 4096 -a "$2" -p $(($4 + vb_n)) > $out 2>&1 & p=$!
        barrier $(($3 + vb_n)) 60
        wait $p
        r=$?
    else
        barrier $(($3 + vb_n)) 60
        sleep 1
        timeout 120 rping -c -V -C 20 -S 4096 -a "$2" -p $(($4 + vb_n)) > $out 2>&1
        r=$?
    fi
    tail -n 3 $out
    [ $r = 0 ] && ok=ok || ok=fail
    ck "$VB_PAIRING/$1/rping" "$ok" "rping to $2: exit $r"
}
# vb_mckey FEATURE TAG GROUP SENDER_VM: librdmacm's mckey, every VM joining
# GROUP (rdma_join_multicast), VM SENDER_VM sending 60 messages once the
# others have joined, the others waiting for 20 of them; checks TAG-send,
# TAG-recv.  mckey's sender posts its sends unsignaled and destroys its QP
# right after: whatever the device had not sent by then is flushed, as on
# any adapter, and UD multicast may lose datagrams on a loaded host, so the
# receivers wait for a third of what is sent.
vb_mckey()
{
    local out=/tmp/mckey.out pid rc t=0 ok=fail g
    vb_step
    if [ "$RS_VM_INDEX" = "$4" ]; then
        rs_barrier $((500 + vb_n)) 150
        timeout 120 mckey -m "$3" -b "$RS_IP" -s -C 60 > $out 2>&1
        rc=$?
        cat $out
        grep -q '^data transfers complete' $out && [ $rc = 0 ] && ok=ok
        ck "$VB_PAIRING/$1/$2-send" $ok "mckey -s to $3: exit $rc, $(grep -E 'joined|complete' $out | tr '\n' ' ')"
    else
        timeout 240 mckey -m "$3" -b "$RS_IP" -C 20 > $out 2>&1 &
        pid=$!
        # Joined: rdma_cm has the interface join the group (it is in
        # /proc/net/igmp, as a little-endian hex word), and mckey attaches
        # its QP, whose receives are posted, as it hears of the join, then
        # pauses 3 s before it polls (its own output is buffered until it
        # exits).  Its user time, which this watched before, did not grow
        # in 90 rounds (150 s) in one CI run though mckey had joined, and it
        # timed out before the sender sent.
        g=$(echo "$3" | awk -F. '{ printf "%02X%02X%02X%02X", $4, $3, $2, $1 }')
        until grep -qw "$g" /proc/net/igmp || [ $t -ge 90 ]; do
            sleep 1
            t=$((t + 1))
        done
        sleep 5
        rs_barrier $((500 + vb_n)) 150
        wait $pid
        rc=$?
        cat $out
        grep -q '^data transfers complete' $out && [ $rc = 0 ] && ok=ok
        ck "$VB_PAIRING/$1/$2-recv" $ok "mckey on $3: exit $rc, $(grep -E 'joined|complete' $out | tr '\n' ' ')"
    fi
}
