# verbs: what programs written for ConnectX and soft-RoCE rely on
# (rsv-compat: flow labels of 32 bits, a UD receive's GRH area and
# network header type, CQ events only for the CQ that fired), then
# perftest with CQ events instead of polling (-e): it waits for an event
# per completion and polls once after it, so a spurious event fails it.
case $dev in
rxe*) vb_pair compat rsv-compat ;;
*) vb_pair compat rsv-compat -- adapter ;;
esac
# Not with a soft-RoCE peer: there ib_send_lat -e stops in most runs with
# everything sent and acknowledged on the adapter's side and soft-RoCE's
# program waiting for an event (between two soft-RoCE VMs it passes).
pt_events=ib_send_lat\ ib_send_bw
[ "$VB_PAIRING" = adapter-rxe ] && pt_events=
for t in $(seq 1 20); do gi=$(gid_of "$RS_IP") && break; sleep 0.5; done
for t in $pt_events; do
    vb_step
    out=/tmp/pt.out
    a="-e -d $dev -x $gi -n 200 -p $((19000 + vb_n))"
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout 120 $t $a > $out 2>&1
        rc=$?
    else
        vb_client $out 120 $t $a "$(vb_vm1)"
        rc=$?
    fi
    cat $out
    ok=fail
    [ $rc = 0 ] && grep -qE '^ *[0-9]+ +200 ' $out && ok=ok
    ck "$VB_PAIRING/compat/$t-events" $ok "$t -e -n 200: exit $rc, $(grep -E '^ *[0-9]+ +200 |Failed status|rror' $out | head -n 2 | tr -s ' ' | tr '\n' ' ')"
done
