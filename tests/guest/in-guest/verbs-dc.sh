# verbs: dynamically connected transport and indirect/pattern memory keys
# among three VMs with the adapter, through rsessiondv.h.  rsv-dc (VM 1
# the DCI, VMs 2 and 3 a DCT each; its header says what it checks), then
# the example programs: rsdv_dc_bw (VM 1's one DCI sending to DCTs on
# VMs 2 and 3, every message verified by its target) and
# rsdv_strided_write (VM 1 writes a column of VM 2's matrix through a
# pattern key; VM 2 checks the column and the rest).
vb_pair dc rsv-dc
# The driver's rate-limited note of the key violation on VM 2's DCT.
if [ "$RS_VM_INDEX" = 2 ]; then
    l=$(dmesg | grep 'connect with a wrong DC key from DCI' | head -n 1)
    [ -n "$l" ] && ok=ok || ok=fail
    ck "$VB_PAIRING/dc/dc-key-log" "$ok" "${l:-no kernel message}"
fi
vb_step
bw_port=$((19000 + vb_n))
case $RS_VM_INDEX in
1)  out=$(timeout 200 rsdv_dc_bw -p $bw_port -s 1024 -n 40 "${RS_IP%.*}.2" "${RS_IP%.*}.3" 2>&1); rc=$? ;;
*)  out=$(timeout 200 rsdv_dc_bw -p $bw_port -s 1024 -n 40 2>&1); rc=$? ;;
esac
echo "$out"
[ $rc = 0 ] && ok=ok || ok=fail
ck "$VB_PAIRING/dc/example-dc-bw" "$ok" "rsdv_dc_bw exit $rc: $(echo "$out" | grep -E 'msg/s|received' | tr '\n' ' ')"
vb_step
sw_port=$((19000 + vb_n))
case $RS_VM_INDEX in
1)  out=$(timeout 200 rsdv_strided_write -p $sw_port -r 32 -w 256 -e 8 -c 5 "${RS_IP%.*}.2" 2>&1); rc=$? ;;
2)  out=$(timeout 200 rsdv_strided_write -p $sw_port -r 32 -w 256 -e 8 -c 5 2>&1); rc=$? ;;
*)  out="not a party"; rc=0 ;;
esac
echo "$out"
[ $rc = 0 ] && ok=ok || ok=fail
[ "$RS_VM_INDEX" = 3 ] ||
    ck "$VB_PAIRING/dc/example-strided" "$ok" "rsdv_strided_write exit $rc: $(echo "$out" | grep -E 'column|read back' | tr '\n' ' ')"
rsdv_dc_bw -h | head -n 2 | grep -q '^Usage:' && ok=ok || ok=fail
ck "$VB_PAIRING/dc/example-usage" "$ok" "rsdv_dc_bw -h, rsdv_strided_write -h: $(rsdv_strided_write -h | head -n 1)"
