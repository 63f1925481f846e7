# introspect, VM 1 (adapter): the ib_write_bw server; afterwards its
# device counters (rdma statistic) show the traffic and, with the loss
# the suite sets (x-drop-tx), the sequence NAKs it sent.
for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done
ib_write_bw -d $dev -x $gi -F -D $IS_SECS -s 65536 -p 18515 > /tmp/wa 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "^ *65536 " /tmp/wa; then
    ck write-bw-server ok "$(grep "^ *65536 " /tmp/wa | tail -n 1)"
else
    ck write-bw-server fail "exit status $rc: $(tail -n 2 /tmp/wa | tr '\n' ' ')"
fi
st=$(rdma statistic show link $dev/1 2>&1)
echo "rdma statistic show link $dev/1: $st"
stat() { echo "$st" | tr ' ' '\n' | grep -A1 -x "$1" | tail -n 1; }
rx=$(stat roce_rx_packets); naks=$(stat seq_naks_sent)
if [ "${rx:-0}" -gt 1000 ] && [ "${naks:-0}" -gt 0 ] &&
   [ -n "$(stat path_failovers)" ] && [ -n "$(stat icrc_drops)" ]; then
    ck statistic-server ok "roce_rx_packets $rx seq_naks_sent $naks"
else
    ck statistic-server fail "roce_rx_packets '${rx}' seq_naks_sent '${naks}'"
fi
b=$(badlog); [ -z "$b" ] && ck dmesg-clean ok || ck dmesg-clean fail "$b"
