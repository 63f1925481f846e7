# p2pdma: VM 1, the NVMe-oF target with p2pmem (tests/guest/p2pdma.sh)
echo "P2P: kernel $(uname -r)"
nv=
for d in /sys/bus/pci/devices/*; do
    [ -d "$d/p2pmem" ] || continue
    nv=${d##*/}
    echo "P2P: p2pmem $nv size=$(cat $d/p2pmem/size) available=$(cat $d/p2pmem/available) published=$(cat $d/p2pmem/published)"
done
[ -n "$nv" ] || echo "P2P: FAIL no device publishes p2pmem"
rs=$(for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor):$(cat $d/device)" = 0x1af4:0x10f0 ] && echo ${d##*/}; done)
echo "P2P: adapter $rs, RDMA devices: $(ls /sys/class/infiniband | tr '\n' ' ')"
for d in $nv $rs; do echo "P2P: $d is behind $(readlink -f /sys/bus/pci/devices/$d/.. | sed 's|/sys/devices/||')"; done
modprobe nvmet && modprobe nvmet_rdma || echo "P2P: FAIL modprobe nvmet nvmet_rdma"
grep -q configfs /proc/mounts || mount -t configfs none /sys/kernel/config
N=/sys/kernel/config/nvmet
S=$N/subsystems/p2p
mkdir $S && echo 1 > $S/attr_allow_any_host
# Namespace 1 buffers its data in p2pmem, namespace 2 (the same disk) in
# RAM: the same I/O with and without the CMB, in one run.
for ns in 1 2; do
    mkdir $S/namespaces/$ns
    echo /dev/nvme0n1 > $S/namespaces/$ns/device_path
done
echo "$nv" > $S/namespaces/1/p2pmem || echo "P2P: FAIL p2pmem=$nv refused"
echo "P2P: namespace 1 p2pmem=$(cat $S/namespaces/1/p2pmem), namespace 2 p2pmem=$(cat $S/namespaces/2/p2pmem)"
for ns in 1 2; do
    if echo 1 > $S/namespaces/$ns/enable; then echo "P2P: namespace $ns enabled"; else echo "P2P: FAIL namespace $ns enable"; fi
done
mkdir $N/ports/1
echo rdma > $N/ports/1/addr_trtype; echo ipv4 > $N/ports/1/addr_adrfam
echo 10.77.0.1 > $N/ports/1/addr_traddr; echo 4420 > $N/ports/1/addr_trsvcid
ln -s $S $N/ports/1/subsystems/p2p || echo "P2P: FAIL port"
echo "P2P: target ready"
# The adapter's data buffer counters (device ABI 1.8), as rdma statistic
# shows them, after each of the host's phases; the host waits for the
# acknowledgement before its next phase.
while :; do
    r=$(timeout ${P2P_WAIT:-400} nc -l -p 7777 </dev/null) || r="done: nothing (timeout)"
    echo "P2P: host said: $r"
    for c in ram_dma_read_bytes ram_dma_write_bytes peer_dma_read_bytes peer_dma_write_bytes data_dma_refused; do
        echo "P2P: counter ${r%%:*} $c=$(cat /sys/class/infiniband/*/ports/1/hw_counters/$c)"
    done
    case $r in done*) break ;; esac
    for t in $(seq 1 30); do echo ack | nc 10.77.0.2 7778 && break; sleep 1; done
done
echo "P2P: p2pmem available after: $(cat /sys/bus/pci/devices/$nv/p2pmem/available)"
echo "P2P: kernel log:"
dmesg | grep -iE 'p2p|peer-to-peer|nvmet|cmb|nvme' | sed 's/^/P2P: dmesg: /'
