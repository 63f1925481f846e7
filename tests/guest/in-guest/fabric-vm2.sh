# fabric, VM 2 (the clients of VM 1's programs; fabric-vm1.sh).
# Set before: FB_SECS.
for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done
retry() { local o=$1 i rc; shift; for i in $(seq 1 20); do "$@" > $o 2>&1; rc=$?; grep -qE "REJECTED|[Cc]ouldn.t connect|[Cc]onnection refused|Couldn't connect" $o || return $rc; sleep 1; done; return $rc; }
v() { if [ "$2" = 0 ] && ! grep -qiE "mismatch|fail|error|exceeded" "$3"; then ck $1 ok "$(grep -E "iters in|^ *65536 |msg/s" "$3" | tail -n 1)"; else ck $1 fail "exit status $2: $(grep -iE "mismatch|fail|error|exceeded" "$3" | head -n 2 | tr '\n' ' ')"; fi; }
sleep 1
retry /tmp/pp timeout 120 ibv_rc_pingpong -d $dev -g $gi -p 18600 -n 500 -s 4096 $RS_PEER; v rc-pingpong-client $? /tmp/pp
sleep 1
retry /tmp/wb timeout 120 ib_write_bw -d $dev -x $gi -F -D $FB_SECS -s 65536 -p 18611 $RS_PEER; v write-bw-client $? /tmp/wb
sleep 1
retry /tmp/rp timeout 120 rping -c -V -C 200 -S 4096 -a $RS_PEER -p 7174; v rping-client $? /tmp/rp
sleep 1
retry /tmp/rb timeout 120 ib_read_bw -d $dev -x $gi -F -D $FB_SECS -s 65536 -p 18612 $RS_PEER; v read-bw-client $? /tmp/rb
b=$(badlog); [ -z "$b" ] && ck dmesg-clean ok || ck dmesg-clean fail "$b"
sleep 10
