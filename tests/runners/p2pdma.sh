#!/bin/bash
# The p2p suite: NVMe-oF with nvmet's p2pmem on the adapter's peer-to-peer
# DMA (tests/guest/p2pdma.sh), in both topologies, as TAP: "switch" (the
# NVMe CMB and the adapter behind one PCIe switch: the data goes through
# the CMB) and "sockets" (under different host bridges on two NUMA nodes:
# the kernel refuses the pair and the data goes through RAM).
#
# It needs the guest kernel variant with CONFIG_PCI_P2PDMA, which Debian's
# kernels lack (scripts/build-guest-kernel.sh p2p: about 20 minutes on two
# idle cores, then cached).  When it is not built the checks are skipped
# (not counted) unless RS_P2P_KERNEL_BUILD=1 asks to build it here.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)

if ! "$top/scripts/build-guest-kernel.sh" --cached p2p >/dev/null 2>&1; then
    if [ "${RS_P2P_KERNEL_BUILD:-0}" != 1 ]; then
        echo "1..2"
        for t in switch sockets; do
            echo "ok - $t # SKIP the p2p guest kernel is not built" \
                 "(scripts/build-guest-kernel.sh p2p, or RS_P2P_KERNEL_BUILD=1)"
        done
        exit 0
    fi
    "$top/scripts/build-guest-kernel.sh" p2p >/dev/null ||
        { echo "1..0"; echo "Bail out! the p2p guest kernel does not build"; exit 1; }
fi

echo "1..2"
for t in switch sockets; do
    out=$("$top/tests/guest/p2pdma.sh" "$t" 2>&1)
    rc=$?
    if [ $rc = 0 ]; then
        echo "ok - $t"
    else
        echo "not ok - $t (exit status $rc)"
    fi
    # The figures: the target adapter's bytes, the CMB mappings, the I/O.
    echo "$out" | grep -E '^p2pdma: '"$t"': |P2P: (write 1 MiB|io |counter|FAIL)|using p2pmem' |
        sed 's/^/# /'
done
