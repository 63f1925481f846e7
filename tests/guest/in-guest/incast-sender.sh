# incast, VMs 2 and 3 (after lib.sh, multipath-common.sh): a sender.
# ib_write_bw of 64 KiB messages to VM 1 for IN_SECS seconds, started
# with the other sender (rs_barrier); prints its goodput and what the
# device counted for it (retransmissions, timeouts, sequence NAKs, CNPs
# received, DCQCN's rate reductions).
IN_CNT="retransmits ack_timeouts seq_naks_rcvd roce_tx_packets cnp_received dcqcn_rate_reductions"
cnt_start
rs_barrier 700 120
bw_client /tmp/in "$IN_VM1" -s 65536 -D "$IN_SECS" -p $((18620 + RS_VM_INDEX))
cat /tmp/in
bw=$(awk '$1 == 65536 { print $4 }' /tmp/in)
echo "MEASURE incast vm=$RS_VM_INDEX MBps=${bw:-0} $(cnt_delta)"
[ $rc = 0 ] && [ -n "$bw" ] && ok=ok || ok=fail
ck incast-bw $ok "ib_write_bw to VM 1 for $IN_SECS s: exit $rc, ${bw:-no} MB/s"
dmesg_clean
