# migration part 2, VM 1 (migrated once, the switchover held): serves
# ib_write_bw (ACK timeout 14) and ibv_rc_pingpong to VM 2 (adapter) and
# rping -V to VM 3 (soft-RoCE).  Set before: pingpong (ibv_*_pingpong -n).
wait_gid
pp="-d $dev -g $gi -n $pingpong -s 1024 -c"
ib_write_bw -x 1 -u 14 -p 18515 -F -D 20 -s 65536 > /tmp/wa 2>&1 & a=$!
rping -s -V -C 20000 -S 4096 -a $RS_IP > /tmp/rp 2>&1 & p=$!
ibv_rc_pingpong -p 18600 $pp > /tmp/cp 2>&1 & c=$!
wait $a; v write-bw-server-adapter $? /tmp/wa
wait $p; v rping-server $? /tmp/rp
wait $c; v rc-pingpong-server $? /tmp/cp 1
clean; notice 1
