# verbs: UD multicast between the adapter (VM 1) and soft-RoCE (VM 2) in
# one group, each way through ibv_attach_mcast (rsv-mcast); mckey
# (rdma_join_multicast) with the adapter sending.  Not mckey with
# soft-RoCE sending: its sender destroys the QP right after posting its
# sends unsignaled, and on a loaded host soft-RoCE had not put all of
# them on the wire by then (both VMs' captures: the adapter received
# every frame soft-RoCE sent).  rsv-mcast's sender waits for each
# completion.
vb_pair mcast-rxe rsv-mcast -- send a2r 239.1.2.5
vb_pair mcast-rxe rsv-mcast -- recv r2a 239.1.2.6
vb_mckey mcast-rxe mckey-a2r 239.1.2.7 1
