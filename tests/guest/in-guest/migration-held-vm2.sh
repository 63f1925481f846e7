# migration part 2, VM 2 (adapter): client of VM 1's ib_write_bw (ACK
# timeout 14: a retry budget of about 3 s) and ibv_rc_pingpong.  Set
# before: pingpong (ibv_*_pingpong -n).
wait_gid
pp="-d $dev -g $gi -n $pingpong -s 1024 -c"
sleep 1
retry /tmp/cp ibv_rc_pingpong -p 18600 $pp 10.77.0.1 & c=$!
retry /tmp/wa ib_write_bw -x 1 -u 14 -p 18515 -F -D 20 -s 65536 10.77.0.1; v write-bw-client $? /tmp/wa
wait $c; v rc-pingpong-client $? /tmp/cp; clean
