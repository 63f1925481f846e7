# introspect, VM 2 (adapter): the ib_write_bw client.  While it runs,
# rdma resource show qp|mr|cq -dd shows the driver's details (the QP's
# device QPN, session group, source port and PSNs, which move; the MR's
# key, kind and pages); RS-INTROSPECT-RUNNING tells the harness to query
# QMP meanwhile; afterwards rdma statistic shows the device's counters.
for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done
sleep 2
for i in 1 2 3 4 5 6 7 8 9 10; do
    ib_write_bw -d $dev -x $gi -F -D $IS_SECS -s 65536 -p 18515 10.77.0.1 > /tmp/wa 2>&1 &
    p=$!
    ok=
    for t in $(seq 1 40); do
        rdma resource show qp 2>/dev/null | grep -qE 'type RC state RTS .*comm ib_write_bw' && { ok=1; break; }
        kill -0 $p 2>/dev/null || break
        sleep 0.25
    done
    [ -n "$ok" ] && break
    wait $p
    sleep 1
done
echo "RS-INTROSPECT-RUNNING"
drv() { echo "$1" | tr ' ' '\n' | grep -A1 -x "drv_$2" | tail -n 1; }
q1=$(rdma resource show qp -dd 2>&1 | grep 'type RC .*comm ib_write_bw' | head -n 1)
sleep 2
q2=$(rdma resource show qp -dd 2>&1 | grep 'type RC .*comm ib_write_bw' | head -n 1)
echo "qp: $q1"
echo "qp: $q2"
lqpn=$(echo "$q1" | sed -E 's/.* lqpn ([0-9]+) .*/\1/')
sq1=$(drv "$q1" dev_sq_psn); sq2=$(drv "$q2" dev_sq_psn)
sport=$(drv "$q1" src_port); grp=$(drv "$q1" group)
echo "RS-QP qpn=$(drv "$q1" dev_qpn) sport=$sport group=$grp"
if [ -n "$lqpn" ] && [ "$(drv "$q1" dev_qpn)" = "$lqpn" ] &&
   [ "$(drv "$q1" dev_type)" = rc ] && [ "$(drv "$q1" sessions)" = 1 ] &&
   [ "${sport:-0}" -ge 49152 ] && [ "$grp" != 0x0 ] &&
   [ -n "$sq1" ] && [ -n "$sq2" ] && [ "$sq1" != "$sq2" ]; then
    ck resource-qp ok "dev_qpn $lqpn group $grp src_port $sport dev_sq_psn $sq1 -> $sq2"
else
    ck resource-qp fail "$q1 / $q2"
fi
m=$(rdma resource show mr -dd 2>&1 | grep 'comm ib_write_bw' | head -n 1)
echo "mr: $m"
lkey=$(echo "$m" | sed -E 's/.* lkey (0x[0-9a-f]+) .*/\1/')
mlen=$(echo "$m" | sed -E 's/.* mrlen ([0-9]+) .*/\1/')
pg=$(drv "$m" pages); psz=$(drv "$m" page_size)
if [ "$(drv "$m" dev_key)" = "$lkey" ] && [ "$(drv "$m" kind)" = user ] &&
   [ -n "$(drv "$m" netid_gid)" ] && [ "${pg:-0}" -gt 0 ] &&
   [ $((pg * psz)) -ge "${mlen:-1}" ] && [ $(((pg - 1) * psz)) -lt "${mlen:-0}" ]; then
    ck resource-mr ok "dev_key $lkey kind user pages $pg x $psz for $mlen bytes"
else
    ck resource-mr fail "$m"
fi
c=$(rdma resource show cq -dd 2>&1 | grep 'comm ib_write_bw' | head -n 1)
echo "cq: $c"
if [ -n "$(drv "$c" handle)" ] && [ "$(drv "$c" entries)" -gt 0 ] 2>/dev/null; then
    ck resource-cq ok "handle $(drv "$c" handle) entries $(drv "$c" entries)"
else
    ck resource-cq fail "$c"
fi
wait $p; rc=$?
if [ $rc = 0 ] && grep -q "^ *65536 " /tmp/wa; then
    ck write-bw-client ok "$(grep "^ *65536 " /tmp/wa | tail -n 1)"
else
    ck write-bw-client fail "exit status $rc: $(tail -n 2 /tmp/wa | tr '\n' ' ')"
fi
st=$(rdma statistic show link $dev/1 2>&1)
echo "rdma statistic show link $dev/1: $st"
stat() { echo "$st" | tr ' ' '\n' | grep -A1 -x "$1" | tail -n 1; }
tx=$(stat roce_tx_packets); rt=$(stat retransmits); nr=$(stat seq_naks_rcvd)
if [ "${tx:-0}" -gt 1000 ] && [ "${rt:-0}" -gt 0 ] && [ "${nr:-0}" -gt 0 ] &&
   [ "$(stat path_failovers)" = 0 ]; then
    ck statistic-client ok "roce_tx_packets $tx retransmits $rt seq_naks_rcvd $nr"
else
    ck statistic-client fail "roce_tx_packets '$tx' retransmits '$rt' seq_naks_rcvd '$nr'"
fi
b=$(badlog); [ -z "$b" ] && ck dmesg-clean ok || ck dmesg-clean fail "$b"
