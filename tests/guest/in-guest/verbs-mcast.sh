# verbs: UD multicast among three VMs with the adapter.  The limits
# ibv_devinfo shows; rsv-mcast: VM 1 sends to VMs 2 and 3 through
# ibv_attach_mcast; then librdmacm's mckey (rdma_join_multicast), VM 1
# sending to VMs 2 and 3.
mc=$(ibv_devinfo -v -d "$dev" | grep -E 'max_(total_)?mcast' | tr -s ' \t' ' ' | tr '\n' ';')
if [ "$mc" = " max_mcast_grp: 32; max_mcast_qp_attach: 8; max_total_mcast_qp_attach: 256;" ]; then
    ck "$VB_PAIRING/mcast/devinfo" ok "$mc"
else
    ck "$VB_PAIRING/mcast/devinfo" fail "$mc"
fi
vb_pair mcast rsv-mcast -- send ud 239.1.2.3
vb_mckey mcast mckey 239.1.2.4 1
