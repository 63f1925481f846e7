# verbs: network identities (rsv-netid).  The host put 10.78.0.0/24 in
# identity 1 with VNI 200 and left identity 0 at VNI 100 (the netid
# pairing's QEMU arguments in tests/guest/verbs.py): each VM adds
# 10.78.0.N to the adapter's interface, the driver learns the identity of
# the new GID from the device, and rsv-netid runs one context in each
# identity (RSESSION_NETID for the second).
ip addr add "10.78.0.$RS_VM_INDEX/24" dev "$RS_IFACE"
# netid-migrate: VM 1 is migrated while both sides wait, connected.
if [ "$VB_PAIRING" = netid-migrate ]; then
    vb_pair netid rsv-netid -- "10.78.0.$RS_VM_INDEX" 40
else
    vb_pair netid rsv-netid -- "10.78.0.$RS_VM_INDEX"
fi
l=$(dmesg | grep -E "\(::ffff:10\.7[78]\.0\.$RS_VM_INDEX\) in network identity" | tr '\n' ';')
case "$l" in
*"10.77.0.$RS_VM_INDEX) in network identity 0, VNI 100"*"10.78.0.$RS_VM_INDEX) in network identity 1, VNI 200"*)
    ck "$VB_PAIRING/netid/driver-learns" ok "$l" ;;
*)  ck "$VB_PAIRING/netid/driver-learns" fail "kernel log: $l" ;;
esac
