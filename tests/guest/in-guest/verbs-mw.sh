# verbs: memory windows (rsv-mw): type 2 and type 1, each bound once by
# VM 1 (the server) and once by VM 2, the other side writing, reading and
# (type 2) invalidating remotely.
vb_pair mw rsv-mw -- 2 server
vb_pair mw rsv-mw -- 2 client
vb_pair mw rsv-mw -- 1 server
vb_pair mw rsv-mw -- 1 client
