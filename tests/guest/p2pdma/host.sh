# p2pdma: VM 2, the NVMe-oF host (tests/guest/p2pdma.sh)
modprobe nvme_rdma || echo "P2P: FAIL modprobe nvme_rdma"
ok=0
for t in $(seq 1 150); do
    if echo "transport=rdma,traddr=10.77.0.1,trsvcid=4420,nqn=p2p" > /dev/nvme-fabrics 2>/tmp/conn.err; then ok=1; break; fi
    sleep 2
done
for t in $(seq 1 40); do [ -b /dev/nvme0n1 ] && break; sleep 0.5; done
res=
if [ $ok = 1 ] && [ -b /dev/nvme0n1 ]; then
    echo "P2P: connected $(cat /sys/class/nvme/nvme0/transport) $(cat /sys/class/nvme/nvme0/address)"
    dd if=/dev/urandom of=/tmp/a bs=65536 count=16 2>/dev/null
    # Elapsed centiseconds, from /proc/uptime (busybox date has no %N).
    cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
    t0=$(cs)
    dd if=/tmp/a of=/dev/nvme0n1 bs=65536 count=16 oflag=direct 2>/tmp/dd.err
    t1=$(cs)
    dd if=/dev/nvme0n1 of=/tmp/a2 bs=4096 count=256 iflag=direct 2>>/tmp/dd.err
    t2=$(cs)
    echo "P2P: write 1 MiB in $((t1 - t0))0 ms, read in $((t2 - t1))0 ms"
    if cmp -s /tmp/a /tmp/a2; then res="io ok: 1 MiB written in 64 KiB, read back in 4 KiB, equal"
    else res="io FAIL: $(cmp /tmp/a /tmp/a2 2>&1 | head -n 1) $(tr '\n' ' ' < /tmp/dd.err)"; fi
    echo 1 > /sys/class/nvme/nvme0/delete_controller
else
    res="connect FAIL: $(tr '\n' ' ' < /tmp/conn.err)"
fi
echo "P2P: $res"
dmesg | grep -iE 'nvme|rdma' | tail -n 8 | sed 's/^/P2P: dmesg: /'
for t in $(seq 1 20); do echo "$res" | nc 10.77.0.1 7777 && break; sleep 1; done
