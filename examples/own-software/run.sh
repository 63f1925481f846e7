# A CI job's RDMA test in two VMs: scripts/launch-vms.sh --distro -n 2
# --share examples/own-software --cmd '. ./run.sh' runs this in each VM,
# in the shared directory (the host's copy of it), with RS_VM_INDEX,
# RS_PEER and rs_barrier from the launcher.  Each VM builds the program
# and writes its result into out/, which the host has afterwards.
set -e
mkdir -p out
log=out/vm$RS_VM_INDEX.log
gcc -O2 -Wall -o /tmp/rdma_hello rdma_hello.c -lrdmacm -libverbs
if [ "$RS_VM_INDEX" = 1 ]; then
    /tmp/rdma_hello -s > "$log" 2>&1 &
    server=$!
    rs_barrier 1
    wait $server
else
    rs_barrier 1
    # the server may not listen yet
    for try in 1 2 3 4 5 6 7 8 9 10; do
        /tmp/rdma_hello "$RS_PEER" -n 100 -b 65536 > "$log" 2>&1 && break
        sleep 1
    done
fi
cat "$log"
grep -q ', 0 bad bytes' "$log"
