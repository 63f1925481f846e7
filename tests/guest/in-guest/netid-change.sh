# netid-change (tests/guest/verbs.py): the host changes the network
# identities of this running VM.  10.78.0.1 is in identity 1 (VNI 200)
# and 10.79.0.1 in identity 0 (VNI 100) when it says "NETID change-now";
# the host then sets netids=10.78.0.0/24=201;10.79.0.0/24=300 with
# qom-set: identity 1's VNI changes, identity 2 appears over 10.79.0.1.
ip addr add 10.78.0.1/24 dev "$RS_IFACE"
ip addr add 10.79.0.1/24 dev "$RS_IFACE"
t=0
until dmesg | grep -q "(::ffff:10.79.0.1) in network identity 0, VNI 100"; do
    t=$((t + 1)); [ $t -gt 150 ] && break; sleep 0.2
done
echo "NETID change-now"
t=0
until dmesg | grep -q "(::ffff:10.79.0.1) now in network identity 2, VNI 300"; do
    t=$((t + 1)); [ $t -gt 300 ] && break; sleep 0.2
done
l=$(dmesg | grep -E "network identity" | sed 's/^\[[ 0-9.]*\] //' | tr '\n' ';')
case "$l" in
*"network identity 1 changed by the host: VNI 201"*"network identity 2 changed by the host: VNI 300"*)
    ck netid-change/event ok "$l" ;;
*)  ck netid-change/event fail "kernel log: $l" ;;
esac
case "$l" in
*"(::ffff:10.78.0.1) now in"*)
    ck netid-change/driver-relearns fail "10.78.0.1 moved: $l" ;;
*"(::ffff:10.79.0.1) now in network identity 2, VNI 300"*)
    ck netid-change/driver-relearns ok "10.79.0.1 into identity 2, 10.78.0.1 stays in 1" ;;
*)  ck netid-change/driver-relearns fail "kernel log: $l" ;;
esac
b=$(badlog)
if [ -z "$b" ]; then ck netid-change/dmesg-clean ok; else ck netid-change/dmesg-clean fail "$b"; fi
