# verbs: UD multicast between the adapter (VM 1) and soft-RoCE (VM 2) in
# one group, each way: rsv-mcast (ibv_attach_mcast), then mckey
# (rdma_join_multicast).
vb_pair mcast-rxe rsv-mcast -- send a2r 239.1.2.5
vb_pair mcast-rxe rsv-mcast -- recv r2a 239.1.2.6
vb_mckey mcast-rxe mckey-a2r 239.1.2.7 1
# mckey's sender destroys its QP right after posting its sends, unsignaled,
# and soft-RoCE may not have sent them all by then (likely, not confirmed:
# in one run of four the adapter's mckey did not see all 20): the adapter
# waits for half of them.
vb_mckey mcast-rxe mckey-r2a 239.1.2.8 2 10
