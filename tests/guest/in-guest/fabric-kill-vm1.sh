# fabric, a member killed (VM 1): ib_write_bw to VM 2 and to VM 3 at the
# same time over the local fabric; the host kills VM 2's QEMU while both
# run (tests/guest/fabric.py).  The QP to VM 2 must end in an error
# completion, the one to VM 3 must go on and pass.  Set before: FB_SECS.
for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done
retry() { local o=$1 i rc; shift; for i in $(seq 1 20); do "$@" > $o 2>&1; rc=$?; grep -qE "REJECTED|[Cc]ouldn.t connect|[Cc]onnection refused" $o || return $rc; sleep 1; done; return $rc; }
rs_barrier 1 120 || ck barrier fail "the servers did not start: $(ip -s link show eth0 | tr -s " \n" " "); $(ip neigh | tr "\n" " ")"
set -- $RS_PEERS
( retry /tmp/w2 timeout 120 ib_write_bw -d $dev -x $gi -F -D $((FB_SECS * 4)) -s 65536 -p 18621 $1; echo $? > /tmp/w2.rc ) &
( retry /tmp/w3 timeout 120 ib_write_bw -d $dev -x $gi -F -D $((FB_SECS * 2)) -s 65536 -p 18622 $2; echo $? > /tmp/w3.rc ) &
sleep 6
echo RS-FABRIC-KILL
wait
rc=$(cat /tmp/w2.rc)
if [ "$rc" != 0 ] && grep -qiE "completion with error|status|retry" /tmp/w2; then
    ck killed-peer-error ok "exit status $rc: $(grep -iE "completion with error|status|retry" /tmp/w2 | head -n 2 | tr '\n' ' ')"
else
    ck killed-peer-error fail "exit status $rc: $(tail -n 3 /tmp/w2 | tr '\n' ' ')"
fi
rc=$(cat /tmp/w3.rc)
if [ "$rc" = 0 ] && ! grep -qiE "mismatch|fail|error|exceeded" /tmp/w3; then
    ck survivor-client ok "$(grep -E "^ *65536 " /tmp/w3 | tail -n 1)"
else
    ck survivor-client fail "exit status $rc: $(grep -iE "mismatch|fail|error|exceeded" /tmp/w3 | head -n 2 | tr '\n' ' ')"
fi
b=$(badlog); [ -z "$b" ] && ck dmesg-clean ok || ck dmesg-clean fail "$b"
echo RS-FABRIC-SURVIVED
sleep 8
