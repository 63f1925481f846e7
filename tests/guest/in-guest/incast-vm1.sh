# incast, VM 1 (after lib.sh, multipath-common.sh): the receiver.  An
# ib_write_bw server for each sender, both senders start together
# (rs_barrier), marks incast-go and incast-end around it for the host's
# latency probe and bottleneck counters; prints the CE-marked packets its
# device received and the CNPs it sent.
IN_CNT="ecn_ce_received cnp_sent"
cnt_start
timeout 300 ib_write_bw -d "$dev" -x "$gi" -F -s 65536 -D "$IN_SECS" -p 18622 > /tmp/in2 2>&1 & p2=$!
timeout 300 ib_write_bw -d "$dev" -x "$gi" -F -s 65536 -D "$IN_SECS" -p 18623 > /tmp/in3 2>&1 & p3=$!
rs_barrier 700 120
mark incast-go
wait $p2; r2=$?
wait $p3; r3=$?
mark incast-end
sleep 5     # the host reads the bottleneck's counters meanwhile
cat /tmp/in2 /tmp/in3
echo "MEASURE incast vm=1 $(cnt_delta)"
[ $r2 = 0 ] && [ $r3 = 0 ] && ok=ok || ok=fail
ck incast-servers $ok "ib_write_bw servers: exit $r2, $r3"
dmesg_clean
