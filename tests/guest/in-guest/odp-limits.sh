# odp-limits (tests/guest/verbs.py): the guest driver's bounds on ODP, on
# one VM (tests/guest/progs/rsv-odplim.c): an implicit ODP MR's children
# (created only for mapped addresses, at most odp_children, freed when
# empty), and advise_mr on an ODP MR of network identity 1, whose lkey is
# not its admin handle.  The host put 10.78.0.0/24 in identity 1 (the
# netid pairing's QEMU arguments).
ip addr add 10.78.0.1/24 dev "$RS_IFACE"
t=0
until dmesg | grep -q "(::ffff:10.78.0.1) in network identity 1"; do
    t=$((t + 1)); [ $t -gt 150 ] && break; sleep 0.2
done
echo "odp-limits: odp_children $(cat /sys/module/rdma_session/parameters/odp_children 2>&1)"
timeout 300 rsv-odplim -n odp-limits -t 60 -- 10.78.0.1 > /tmp/odplim.out 2>&1
rc=$?
cat /tmp/odplim.out
echo "odp-limits: rsv-odplim exit status $rc"
rdma statistic show link "$dev/1" 2>&1 | tr -s ' ' '\n' | grep -A1 implicit_children | tr '\n' ' '
echo
b=$(badlog)
if [ -z "$b" ]; then ck odp-limits/dmesg-clean ok; else ck odp-limits/dmesg-clean fail "$b"; fi
