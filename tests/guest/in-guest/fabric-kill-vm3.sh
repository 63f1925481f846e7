# fabric, a member killed (VM 3): VM 1's other ib_write_bw server, which
# must not notice VM 2's end (fabric-kill-vm1.sh).
for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done
v() { if [ "$2" = 0 ] && ! grep -qiE "mismatch|fail|error|exceeded" "$3"; then ck $1 ok "$(grep -E "^ *65536 " "$3" | tail -n 1)"; else ck $1 fail "exit status $2: $(grep -iE "mismatch|fail|error|exceeded" "$3" | head -n 2 | tr '\n' ' ')"; fi; }
timeout 120 ib_write_bw -d $dev -x $gi -F -D $((FB_SECS * 2)) -s 65536 -p 18622 > /tmp/w 2>&1 &
p=$!
sleep 1
rs_barrier 1 120
wait $p; v survivor-server $? /tmp/w
b=$(badlog); [ -z "$b" ] && ck dmesg-clean ok || ck dmesg-clean fail "$b"
sleep 15   # while the host reads the counters after VM 1 is done
