# verbs: UD multicast between the adapter (VM 1) and soft-RoCE (VM 2) in
# one group, each way: rsv-mcast (ibv_attach_mcast), then mckey
# (rdma_join_multicast).
vb_pair mcast-rxe rsv-mcast -- send a2r 239.1.2.5
vb_pair mcast-rxe rsv-mcast -- recv r2a 239.1.2.6
vb_mckey mcast-rxe mckey-a2r 239.1.2.7 1
vb_mckey mcast-rxe mckey-r2a 239.1.2.8 2
