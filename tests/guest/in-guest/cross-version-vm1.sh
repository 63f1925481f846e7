# cross-version migration, VM 1 (started on the previous release's QEMU,
# migrated to this build's, then back): serves rping -V to VM 2, is the
# client of VM 2's rping -V (each verifies every ping's data) and of
# ib_write_bw for secs seconds.  Each program must have lived through at
# least one migration; "migrations" says how many the driver heard of.
# Set before: count (rping), secs.
wait_gid
rping -s -V -C $count -S 4096 -a $RS_IP -p 7174 > /tmp/rs 2>&1 & p=$!
sleep 2
retry /tmp/rc rping -c -V -C $count -S 4096 -a $RS_PEER -p 7175 & c=$!
retry /tmp/wb ib_write_bw -p 18611 -F -D $secs -s 65536 $RS_PEER & w=$!
wait $p; v rping-server $? /tmp/rs 1
wait $c; v rping-client $? /tmp/rc 1
wait $w; v write-bw-client $? /tmp/wb 1
ck migrations ok "$(mig)"
clean
