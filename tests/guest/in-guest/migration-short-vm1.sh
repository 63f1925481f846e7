# migration part 1, VM 1 (migrated n_mig times): serves rping -V,
# ib_read_bw, ibv_srq_pingpong and a UD ib_send_bw, is the client of
# ib_send_bw and ibv_rc_pingpong.  Its ib_read_bw and ib_send_bw register
# their buffers on demand (--odp): ODP MRs, their translations and the
# faults in flight migrate.  Dynamically connected transport both ways
# (rsdv_dc_bw, 4 KiB SENDs, every byte and the order checked by the
# target): VM 2's DCI sends to a DCT here (the DCT's hidden responder
# contexts migrate) and a DCI here sends to a DCT on VM 2 for $secs s (the
# DCI's connection state migrates).  Set before: n_mig, count (rping),
# pingpong (ibv_*_pingpong -n), secs
# (the programs' durations).
wait_gid
pp="-d $dev -g $gi -n $pingpong -s 1024 -c"
rping -s -V -C $count -S 4096 -a $RS_IP > /tmp/rp 2>&1 & p=$!
ib_read_bw --odp -p 18601 -F -D $secs -s 65536 > /tmp/rb 2>&1 & r=$!
ibv_srq_pingpong -p 18602 $pp > /tmp/sp 2>&1 & s=$!
ib_send_bw -c UD -p 18603 -F -D $secs -s 1024 > /tmp/ub 2>&1 & u=$!
rsdv_dc_bw -d $dev -g $gi -p 18606 -s 4096 > /tmp/dt 2>&1 & dt=$!
sleep 2
retry /tmp/sb ib_send_bw --odp -p 18604 -F -D $secs -s 65536 $RS_PEER & b=$!
retry /tmp/cp ibv_rc_pingpong -p 18605 $pp $RS_PEER & c=$!
rsdv_dc_bw -d $dev -g $gi -p 18607 -s 4096 -D $secs $RS_PEER > /tmp/di 2>&1 & di=$!
wait $b; v send-bw-client $? /tmp/sb $n_mig
wait $c; v rc-pingpong-client $? /tmp/cp 1
wait $r; v read-bw-server $? /tmp/rb $n_mig
wait $s; v srq-pingpong-server $? /tmp/sp 1
wait $u; v ud-send-bw-server $? /tmp/ub $n_mig
wait $p; v rping-server $? /tmp/rp $n_mig
wait $di; v dc-bw-dci $? /tmp/di $n_mig
wait $dt; v dc-bw-dct $? /tmp/dt $n_mig
clean; notice $n_mig
