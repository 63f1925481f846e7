# The verbs suite's helpers (tests/guest/verbs.py), after lib.sh; then
# each feature's script runs.  $VB_PAIRING names the boot.
#
#   vb_pair FEATURE PROG [ARGS...]  VM 1 runs PROG as the server, the
#        other VMs as clients of VM 1 (-c), all with -n
#        "$VB_PAIRING/FEATURE" and a TCP port of their own per call; a
#        program that exits without its CHECK lines fails as "no result"
#   vb_step                         the next step number (ports, barriers)
#   vb_vm1                          VM 1's address
vb_n=0
vb_step() { vb_n=$((vb_n + 1)); }
vb_vm1() { echo "${RS_IP%.*}.1"; }
vb_pair()
{
    local feat=$1 prog=$2 rc
    shift 2
    vb_step
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout 300 "$prog" -n "$VB_PAIRING/$feat" -p $((19000 + vb_n)) -t 120 "$@" > /tmp/vb.out 2>&1
    else
        timeout 300 "$prog" -n "$VB_PAIRING/$feat" -p $((19000 + vb_n)) -t 120 -c "$(vb_vm1)" "$@" > /tmp/vb.out 2>&1
    fi
    rc=$?
    cat /tmp/vb.out
    echo "verbs: $prog exit status $rc"
}
echo "verbs: $VB_PAIRING vm$RS_VM_INDEX device '$dev' ($(cat /sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/0 2>/dev/null))"
