# migration part 1, VM 2 (the peer): the other ends of VM 1's programs
# (rsdv_dc_bw: a DCT for VM 1's DCI, a DCI sending to VM 1's DCT).
# Set before: count (rping), pingpong (ibv_*_pingpong -n), secs
# (the programs' durations).
wait_gid
pp="-d $dev -g $gi -n $pingpong -s 1024 -c"
ib_send_bw -p 18604 -F -D $secs -s 65536 > /tmp/sb 2>&1 & b=$!
ibv_rc_pingpong -p 18605 $pp > /tmp/cp 2>&1 & c=$!
rsdv_dc_bw -d $dev -g $gi -p 18607 -s 4096 > /tmp/dt 2>&1 & dt=$!
sleep 1
retry /tmp/rp rping -c -V -C $count -S 4096 -a $RS_PEER & p=$!
retry /tmp/rb ib_read_bw -p 18601 -F -D $secs -s 65536 $RS_PEER & r=$!
retry /tmp/sp ibv_srq_pingpong -p 18602 $pp $RS_PEER & s=$!
retry /tmp/ub ib_send_bw -c UD -p 18603 -F -D $secs -s 1024 $RS_PEER & u=$!
rsdv_dc_bw -d $dev -g $gi -p 18606 -s 4096 -D $secs $RS_PEER > /tmp/di 2>&1 & di=$!
wait $b; v send-bw-server $? /tmp/sb
wait $c; v rc-pingpong-server $? /tmp/cp
wait $r; v read-bw-client $? /tmp/rb
wait $s; v srq-pingpong-client $? /tmp/sp
wait $u; v ud-send-bw-client $? /tmp/ub
wait $p; v rping-client $? /tmp/rp
wait $di; v dc-bw-dci $? /tmp/di
wait $dt; v dc-bw-dct $? /tmp/dt
clean
