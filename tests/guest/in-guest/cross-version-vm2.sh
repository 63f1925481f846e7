# cross-version migration, VM 2 (the peer, on the previous release's QEMU
# throughout): the other ends of VM 1's programs.  Set before: count
# (rping), secs.
wait_gid
rping -s -V -C $count -S 4096 -a $RS_IP -p 7175 > /tmp/rs 2>&1 & p=$!
ib_write_bw -p 18611 -F -D $secs -s 65536 > /tmp/wb 2>&1 & w=$!
sleep 1
retry /tmp/rc rping -c -V -C $count -S 4096 -a $RS_PEER -p 7174 & c=$!
wait $p; v rping-server $? /tmp/rs
wait $c; v rping-client $? /tmp/rc
wait $w; v write-bw-server $? /tmp/wb
clean
