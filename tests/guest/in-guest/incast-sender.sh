# incast, VMs 2 and 3 (after lib.sh, multipath-common.sh): a sender.
# ib_write_bw of 64 KiB messages to VM 1 for IN_SECS seconds, started
# with the other sender (rs_barrier); prints its goodput and what the
# device counted for it (retransmissions, timeouts, sequence NAKs).
cnt() {
    rdma statistic show link "$dev/1" | tr ' ' '\n' |
        awk -v k="$1" 'p { print; exit } $0 == k { p = 1 }'
}
rt0=$(cnt retransmits) to0=$(cnt ack_timeouts) nk0=$(cnt seq_naks_rcvd)
tx0=$(cnt roce_tx_packets)
rs_barrier 700 120
bw_client /tmp/in "$IN_VM1" -s 65536 -D "$IN_SECS" -p $((18620 + RS_VM_INDEX))
cat /tmp/in
bw=$(awk '$1 == 65536 { print $4 }' /tmp/in)
echo "MEASURE incast vm=$RS_VM_INDEX MBps=${bw:-0} retransmits=$(( $(cnt retransmits) - rt0 )) ack_timeouts=$(( $(cnt ack_timeouts) - to0 )) seq_naks_rcvd=$(( $(cnt seq_naks_rcvd) - nk0 )) tx_packets=$(( $(cnt roce_tx_packets) - tx0 ))"
[ $rc = 0 ] && [ -n "$bw" ] && ok=ok || ok=fail
echo "CHECK incast-bw $ok ib_write_bw to VM 1 for $IN_SECS s: exit $rc, ${bw:-no} MB/s"
b=$(dmesg | grep -E 'WARNING|BUG|Oops|Call Trace' | head -n 3 | tr '\n' ' ')
[ -z "$b" ] && echo "CHECK dmesg-clean ok" || echo "CHECK dmesg-clean fail $b"
