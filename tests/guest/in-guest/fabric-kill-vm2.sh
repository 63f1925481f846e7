# fabric, a member killed (VM 2): VM 1's ib_write_bw server; the host
# kills this VM's QEMU in the middle (fabric-kill-vm1.sh).
for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done
timeout 120 ib_write_bw -d $dev -x $gi -F -D $((FB_SECS * 4)) -s 65536 -p 18621 > /tmp/w 2>&1 &
sleep 1
rs_barrier 1 120
wait
