# p2pdma: VM 2, the NVMe-oF host (tests/guest/p2pdma.sh), on the adapter
# or, when the VM has none, on soft-RoCE over its Ethernet interface.
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
    ifc=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
    modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$ifc" ||
        echo "P2P: FAIL soft-RoCE on $ifc"
fi
echo "P2P: initiator RDMA device $(ls /sys/class/infiniband | tr '\n' ' ')"
modprobe nvme_rdma || echo "P2P: FAIL modprobe nvme_rdma"
ok=0
for t in $(seq 1 150); do
    if echo "transport=rdma,traddr=10.77.0.1,trsvcid=4420,nqn=p2p" > /dev/nvme-fabrics 2>/tmp/conn.err; then ok=1; break; fi
    sleep 2
done
# The block device of namespace $1.
nsdev()
{
    for b in /sys/block/nvme*; do
        [ "$(cat $b/nsid 2>/dev/null)" = "$1" ] && { echo /dev/${b##*/}; return; }
    done
}
# Tell the target a phase ended; wait until it has read its counters.
phase()
{
    for t in $(seq 1 30); do echo "$1" | nc 10.77.0.1 7777 && break; sleep 1; done
    case $1 in done*) return ;; esac
    timeout 60 nc -l -p 7778 </dev/null >/dev/null
}
# Elapsed centiseconds, from /proc/uptime (busybox date has no %N).
cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
mbs() { awk -v b="$1" -v c="$2" 'BEGIN { printf "%.1f", (c > 0 ? b / 1048576 / (c / 100) : 0) }'; }
# Namespace $1 ($2: its name in the lines): 1 MiB written in 64 KiB and
# read back in 4 KiB, compared; then 32 MiB written and read in
# 128 KiB for the throughput, compared.
io()
{
    d=$(nsdev $1)
    [ -b "$d" ] || { echo "P2P: $2 io FAIL: no block device for namespace $1"; return; }
    dd if=/dev/urandom of=/tmp/a bs=65536 count=16 2>/dev/null
    t0=$(cs)
    dd if=/tmp/a of=$d bs=65536 count=16 oflag=direct 2>/tmp/dd.err
    t1=$(cs)
    dd if=$d of=/tmp/a2 bs=4096 count=256 iflag=direct 2>>/tmp/dd.err
    t2=$(cs)
    echo "P2P: $2 write 1 MiB in $((t1 - t0))0 ms, read in $((t2 - t1))0 ms"
    if cmp -s /tmp/a /tmp/a2; then echo "P2P: $2 io ok: 1 MiB written in 64 KiB, read back in 4 KiB, equal"
    else echo "P2P: $2 io FAIL: $(cmp /tmp/a /tmp/a2 2>&1 | head -n 1) $(tr '\n' ' ' < /tmp/dd.err)"; fi
    n=32
    dd if=/dev/urandom of=/tmp/b bs=131072 count=$((n * 8)) 2>/dev/null
    t0=$(cs)
    dd if=/tmp/b of=$d bs=131072 count=$((n * 8)) oflag=direct 2>>/tmp/dd.err
    t1=$(cs)
    dd if=$d of=/tmp/b2 bs=131072 count=$((n * 8)) iflag=direct 2>>/tmp/dd.err
    t2=$(cs)
    if cmp -s /tmp/b /tmp/b2; then v=equal; else v="FAIL: $(cmp /tmp/b /tmp/b2 2>&1 | head -n 1)"; fi
    echo "P2P: $2 throughput: $n MiB in 128 KiB, write $(mbs $((n * 1048576)) $((t1 - t0))) MB/s, read $(mbs $((n * 1048576)) $((t2 - t1))) MB/s, $v"
    rm -f /tmp/b /tmp/b2
}
for t in $(seq 1 40); do [ -b "$(nsdev 1)" ] && [ -b "$(nsdev 2)" ] && break; sleep 0.5; done
res=
if [ $ok = 1 ] && [ -b "$(nsdev 1)" ]; then
    echo "P2P: connected $(cat /sys/class/nvme/nvme0/transport) $(cat /sys/class/nvme/nvme0/address)"
    phase "start"
    io 1 p2pmem
    phase "p2pmem"
    io 2 ram
    phase "ram"
    res="io done"
    echo 1 > /sys/class/nvme/nvme0/delete_controller
else
    res="connect FAIL: $(tr '\n' ' ' < /tmp/conn.err)"
fi
echo "P2P: $res"
dmesg | grep -iE 'nvme|rdma' | tail -n 8 | sed 's/^/P2P: dmesg: /'
phase "done: $res"
