#!/bin/bash
# The p2p suite: NVMe-oF with nvmet's p2pmem on the adapter's peer-to-peer
# DMA (tests/guest/p2pdma.sh), as TAP: "switch" (the NVMe CMB and the
# adapter behind one PCIe switch: namespace 1's data goes through the CMB,
# namespace 2's through RAM), "sockets" (under different host bridges on
# two NUMA nodes: the kernel refuses the pair and all data goes through
# RAM), and "switch rxe" (the switch with soft-RoCE as the initiator).
#
# It needs the guest kernel variant with CONFIG_PCI_P2PDMA, which Debian's
# kernels lack: scripts/build-guest-kernel.sh p2p builds it (a small
# config, minutes on two cores) the first time and caches it.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)

if ! "$top/scripts/build-guest-kernel.sh" p2p >/dev/null; then
    echo "1..0"
    echo "Bail out! the p2p guest kernel does not build (scripts/build-guest-kernel.sh p2p)"
    exit 1
fi

echo "1..3"
for t in "switch adapter" "sockets adapter" "switch rxe"; do
    # shellcheck disable=SC2086
    out=$("$top/tests/guest/p2pdma.sh" $t 2>&1)
    rc=$?
    name=${t% adapter}
    if [ $rc = 0 ]; then
        echo "ok - $name"
    else
        echo "not ok - $name (exit status $rc)"
    fi
    # The figures: the target adapter's bytes, the CMB mappings, the I/O.
    echo "$out" | grep -E '^p2pdma: [a-z]+ [a-z]+: |P2P: (.* 1 MiB|.*io |.*throughput|initiator|FAIL)|using p2pmem|cannot be used for peer' |
        sed 's/^/# /'
done
