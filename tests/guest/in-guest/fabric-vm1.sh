# fabric, VM 1 (the servers): ibv_rc_pingpong, ib_write_bw 64 KiB,
# rping -V and ib_read_bw with VM 2 over the local fabric (the adapters
# have local-fabric; tests/guest/fabric.py checks where the bytes went).
# Set before: FB_SECS.
for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done
v() { if [ "$2" = 0 ] && ! grep -qiE "mismatch|fail|error|exceeded" "$3"; then ck $1 ok "$(grep -E "iters in|^ *65536 |msg/s" "$3" | tail -n 1)"; else ck $1 fail "exit status $2: $(grep -iE "mismatch|fail|error|exceeded" "$3" | head -n 2 | tr '\n' ' ')"; fi; }
timeout 120 ibv_rc_pingpong -d $dev -g $gi -p 18600 -n 500 -s 4096 > /tmp/pp 2>&1; v rc-pingpong-server $? /tmp/pp
timeout 120 ib_write_bw -d $dev -x $gi -F -D $FB_SECS -s 65536 -p 18611 > /tmp/wb 2>&1; v write-bw-server $? /tmp/wb
timeout 120 rping -s -V -C 200 -S 4096 -a $RS_IP -p 7174 > /tmp/rp 2>&1; v rping-server $? /tmp/rp
timeout 120 ib_read_bw -d $dev -x $gi -F -D $FB_SECS -s 65536 -p 18612 > /tmp/rb 2>&1; v read-bw-server $? /tmp/rb
b=$(badlog); [ -z "$b" ] && ck dmesg-clean ok || ck dmesg-clean fail "$b"
echo RS-FABRIC-DONE
sleep 8
