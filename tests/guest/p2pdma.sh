#!/bin/bash
# Peer-to-peer DMA check with the p2p guest kernel variant
# (scripts/build-guest-kernel.sh p2p: Debian's 6.12 with CONFIG_PCI_P2PDMA).
#
# Two VMs on a multicast segment under TCG.  VM 1 (10.77.0.1) has a PCIe
# switch (pcie-root-port, x3130-upstream, two xio3130-downstream ports)
# with an NVMe controller with a 64 MiB CMB behind one downstream port
# and the rdma-session adapter behind the other; it checks that the nvme
# driver published the CMB as p2pmem, that the adapter's RDMA device is
# there, and configures nvmet (nvmet-rdma port 4420) with two namespaces
# on the NVMe disk: 1 with p2pmem set to the NVMe controller, 2 without.
# VM 2 (10.77.0.2) connects with nvme-rdma and, on each namespace, writes
# 1 MiB and reads it back, then writes and reads 32 MiB for
# the throughput, all compared; after each namespace VM 1 prints its
# adapter's data counters.  The guests' lines start with "P2P: "; this
# script prints them, the number of NVMe commands whose data QEMU mapped
# in the CMB and the counters' differences per namespace, and exits 0 if
# no line says FAIL, the I/O compared equal and the bytes went where the
# topology says: in the switch namespace 1's data went through the CMB
# (peer DMA) and namespace 2's through RAM.
#
# With "sockets" VM 1 instead has two NUMA nodes, each with a pxb-pcie
# expander bridge (a host bridge of its own), the NVMe controller under
# one and the adapter under the other: the kernel's p2pdma distance check
# refuses the pair, nvmet falls back to RAM (the proxied path) for both
# namespaces, and the adapter's counters show no peer byte.
#
# The initiator is VM 2's rdma-session adapter, or with "rxe" soft-RoCE
# on a virtio-net interface (no adapter in VM 2).
#
# Usage: tests/guest/p2pdma.sh [switch|sockets] [adapter|rxe]   (RS_BUILD,
# RS_CACHE as for the other scripts; RS_P2P_VM1_ARGS: more QEMU options
# for VM 1, e.g. "-global rdma-session.peer-dma=off"; RS_QEMU: the QEMU
# binary, default $RS_BUILD/qemu/...; the image without rdma-core
# userspace unless RS_RDMA_CORE_STAGE says otherwise; logs in
# $RS_BUILD/p2pdma/)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
: "${RS_BUILD:=$top/build}"
qemu=${RS_QEMU:-$RS_BUILD/qemu/qemu-system-x86_64}
[ -x "$qemu" ] || { echo "p2pdma: no QEMU at $qemu (scripts/build-qemu.sh)" >&2; exit 2; }
topo=${1:-switch}
case $topo in switch|sockets) ;; *) echo "p2pdma: topology switch or sockets" >&2; exit 2;; esac
peer=${2:-adapter}
case $peer in adapter|rxe) ;; *) echo "p2pdma: initiator adapter or rxe" >&2; exit 2;; esac
logs=$RS_BUILD/p2pdma/$topo-$peer
mkdir -p "$logs/extra/p2p"
cp "$top"/tests/guest/p2pdma/*.sh "$logs/extra/p2p/"
eval "$(RS_KERNEL_VARIANT=p2p RS_GUEST_EXTRA=$logs/extra RS_GUEST_MODULES=nvme \
        RS_RDMA_CORE_STAGE=${RS_RDMA_CORE_STAGE:-none} \
        "$top/scripts/guest-image.sh")"
echo "p2pdma: kernel $RS_KVER ($RS_KERNEL)" >&2
truncate -s 64M "$logs/nvme.img"
fw=()
for d in /usr/share/seabios /usr/share/qemu /usr/lib/ipxe/qemu; do [ -d $d ] && fw+=(-L $d); done
grp="230.$((RANDOM % 256)).$((RANDOM % 256)).$((RANDOM % 254 + 1)):$((RANDOM % 30000 + 20000))"
common=(-machine q35 -accel tcg -m 1024 -smp 1 -nodefaults -display none -no-reboot "${fw[@]}"
        -kernel "$RS_KERNEL" -initrd "$RS_INITRD"
        -netdev socket,id=n0,mcast=$grp,localaddr=127.0.0.1)
app="console=ttyS0 panic=-1 no_timer_check"
if [ "$topo" = switch ]; then
    # One PCIe switch: the two functions share an upstream bridge.
    vm1_topo=(-device pcie-root-port,id=rp1,bus=pcie.0,chassis=1
              -device x3130-upstream,id=up1,bus=rp1
              -device xio3130-downstream,id=dn1,bus=up1,chassis=2,slot=0
              -device xio3130-downstream,id=dn2,bus=up1,chassis=3,slot=1)
    nvme_bus=dn1 rs_bus=dn2
else
    # Two sockets: a NUMA node and a host bridge (pxb-pcie) each.
    vm1_topo=(-object memory-backend-ram,id=m0,size=512M
              -object memory-backend-ram,id=m1,size=512M
              -numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,memdev=m1
              -device pxb-pcie,id=pxb0,bus_nr=32,numa_node=0,bus=pcie.0
              -device pcie-root-port,id=rpa,bus=pxb0,chassis=10,slot=0
              -device pxb-pcie,id=pxb1,bus_nr=64,numa_node=1,bus=pcie.0
              -device pcie-root-port,id=rpb,bus=pxb1,chassis=11,slot=0)
    nvme_bus=rpa rs_bus=rpb
fi
t0=$(date +%s)
"$qemu" "${common[@]}" -name vm1 -serial file:"$logs/vm1.log" \
    -append "$app rs.name=vm1 rs.ip=10.77.0.1/24 rs.cmd=\"sh /p2p/target.sh\"" \
    "${vm1_topo[@]}" \
    -drive file="$logs/nvme.img",if=none,id=nvm,format=raw \
    -device nvme,serial=p2p1,drive=nvm,cmb_size_mb=64,bus=$nvme_bus \
    -device rdma-session,netdev=n0,mac=52:54:00:77:00:01,bus=$rs_bus \
    -trace pci_nvme_map_addr_cmb,file="$logs/vm1.trace" ${RS_P2P_VM1_ARGS:-} &
p1=$!
if [ $peer = adapter ]; then
    vm2_nic=(-device rdma-session,netdev=n0,mac=52:54:00:77:00:02) vm2_mods=
else
    vm2_nic=(-device virtio-net-pci,netdev=n0,mac=52:54:00:77:00:02) vm2_mods=" rs.modules=virtio_net"
fi
"$qemu" "${common[@]}" -name vm2 -serial file:"$logs/vm2.log" \
    -append "$app rs.name=vm2 rs.ip=10.77.0.2/24$vm2_mods rs.cmd=\"sh /p2p/host.sh\"" \
    "${vm2_nic[@]}" &
p2=$!
# A target that never answers (I/O that hangs) fails in bounded time.
( sleep "${RS_P2P_TIMEOUT:-180}"; echo "P2P: FAIL timeout" >> "$logs/vm1.log"
  kill $p1 $p2 2>/dev/null ) >/dev/null 2>&1 &
w=$!
trap 'kill $p1 $p2 $w 2>/dev/null || true' EXIT
wait $p1 $p2 || true
kill $w 2>/dev/null || true
echo "p2pdma: VMs ran $(( $(date +%s) - t0 )) s (logs in $logs)" >&2
grep -h 'P2P: ' "$logs/vm1.log" | sed 's/^/[vm1] /'
grep -h 'P2P: ' "$logs/vm2.log" | sed 's/^/[vm2] /'
# The NVMe controller's commands whose data pointers were in its CMB
# (QEMU's trace): the target's I/O through p2pmem.
ncmb=$(grep -c pci_nvme_map_addr_cmb "$logs/vm1.trace" 2>/dev/null || true)
echo "p2pdma: $topo $peer: NVMe data mappings in the CMB (QEMU trace pci_nvme_map_addr_cmb): ${ncmb:-0}"
# The target adapter's data buffer counters after each phase of the host:
# an NVMe-oF write is its RDMA READ of the host's data (written to the
# buffer), a read its RDMA WRITE of the data (read from the buffer).
cnt() { sed -n "s/.*P2P: counter $1 $2=\([0-9]*\).*/\1/p" "$logs/vm1.log" | tail -n 1; }
delta() { local a b; a=$(cnt "$1" "$3") b=$(cnt "$2" "$3"); [ -n "$a" ] && [ -n "$b" ] && echo $((b - a)); }
declare -A d=()
for ph in p2pmem:start ram:p2pmem; do
    to=${ph%%:*} from=${ph#*:}
    for c in peer_dma_write_bytes peer_dma_read_bytes ram_dma_write_bytes ram_dma_read_bytes; do
        d[$to.$c]=$(delta "$from" "$to" "$c")
    done
    echo "p2pdma: $topo $peer: namespace $to: target adapter data bytes: peer write ${d[$to.peer_dma_write_bytes]:-?}" \
         "read ${d[$to.peer_dma_read_bytes]:-?}, RAM write ${d[$to.ram_dma_write_bytes]:-?} read ${d[$to.ram_dma_read_bytes]:-?}"
done
# 1 MiB plus the throughput's 32 MiB each way.
mib=$((33 * 1048576))
! grep -q 'P2P: .*FAIL' "$logs/vm1.log" "$logs/vm2.log" || exit 1
for ns in p2pmem ram; do
    grep -q "P2P: $ns io ok" "$logs/vm2.log" && grep -q "P2P: $ns throughput: .*, equal" "$logs/vm2.log" || exit 1
done
ge() { [ "${d[$1]:-0}" -ge "$2" ]; }
eq0() { [ "${d[$1]:--1}" -eq 0 ]; }
eq0 ram.peer_dma_write_bytes && eq0 ram.peer_dma_read_bytes &&
    ge ram.ram_dma_write_bytes $mib && ge ram.ram_dma_read_bytes $mib || exit 1
if [ "$topo" = switch ]; then
    grep -q 'using p2pmem' "$logs/vm1.log" && [ "${ncmb:-0}" -gt 0 ] &&
        ge p2pmem.peer_dma_write_bytes $mib && ge p2pmem.peer_dma_read_bytes $mib
else
    # The kernel's distance check says why: no shared upstream bridge and
    # no whitelisted host bridge.
    grep -q 'cannot be used for peer-to-peer DMA' "$logs/vm1.log" &&
        ! grep -q 'using p2pmem' "$logs/vm1.log" && [ "${ncmb:-0}" -eq 0 ] &&
        eq0 p2pmem.peer_dma_write_bytes && eq0 p2pmem.peer_dma_read_bytes &&
        ge p2pmem.ram_dma_write_bytes $mib && ge p2pmem.ram_dma_read_bytes $mib
fi
