# verbs: XRC (rsv-xrc, adapters only: soft-RoCE has no XRC).  VM 1 sends
# through one XRC_SEND QP; VM 2 runs two processes that share one XRC
# domain (a file) and one XRC target QP (A creates and connects it, B
# opens it by number), each with its own XRC SRQ.  Then rdma-core's own
# ibv_xsrq_pingpong between the two VMs.
vb_step
xrc_port=$((19000 + vb_n))
if [ "$RS_VM_INDEX" = 1 ]; then
    timeout 300 rsv-xrc -n "$VB_PAIRING/xrc" -p $xrc_port -t 120 -- send > /tmp/vb.out 2>&1
    rc=$?
    cat /tmp/vb.out
    echo "verbs: rsv-xrc send exit status $rc"
else
    rm -f /tmp/rsv-xrc.dom /tmp/rsv-xrc.sock
    timeout 300 rsv-xrc -n "$VB_PAIRING/xrc" -t 120 -- recv-b /tmp/rsv-xrc.dom /tmp/rsv-xrc.sock > /tmp/vb-b.out 2>&1 &
    xrc_b=$!
    timeout 300 rsv-xrc -n "$VB_PAIRING/xrc" -p $xrc_port -t 120 -c "$(vb_vm1)" -- recv-a /tmp/rsv-xrc.dom /tmp/rsv-xrc.sock > /tmp/vb.out 2>&1
    rc=$?
    wait $xrc_b
    rcb=$?
    cat /tmp/vb.out
    echo "verbs: rsv-xrc recv-a exit status $rc"
    cat /tmp/vb-b.out
    echo "verbs: rsv-xrc recv-b exit status $rcb"
fi

# ibv_xsrq_pingpong (unmodified): one XRC_SEND and one XRC_RECV QP a
# side, each side's XRC SRQ in a domain opened through /tmp/xrc_domain.
vb_step
xp_out=/tmp/xsrq.out
xp_ok=fail
xp_port=$((19000 + vb_n))
gi=$(gid_of "$RS_IP")
rs_barrier $((500 + vb_n)) 150
if [ "$RS_VM_INDEX" = 1 ]; then
    timeout 180 ibv_xsrq_pingpong -d "$dev" -g "$gi" -p $xp_port -n 20 > $xp_out 2>&1
    rc=$?
else
    # Until the server listens (it refuses nothing else before).
    xp_end=$(( $(date +%s) + 60 ))
    while :; do
        timeout 180 ibv_xsrq_pingpong -d "$dev" -g "$gi" -p $xp_port -n 20 "$(vb_vm1)" > $xp_out 2>&1
        rc=$?
        grep -q "Couldn't connect" $xp_out && [ "$(date +%s)" -lt $xp_end ] || break
        sleep 1
    done
fi
cat $xp_out
[ $rc = 0 ] && grep -q '^success' $xp_out && xp_ok=ok
ck "$VB_PAIRING/xrc/xsrq-pingpong" $xp_ok "ibv_xsrq_pingpong -n 20 on $dev GID $gi: exit $rc, $(grep -c 'SRQN' $xp_out) address lines, last line: $(tail -n 1 $xp_out)"
