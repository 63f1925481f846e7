# verbs: memory windows (rsv-mw): type 2 (IBV_WR_BIND_MW, then
# ibv_wr_bind_mw) and type 1, each bound once by VM 1 (the server) and
# once by VM 2, the other side writing, reading and (type 2) invalidating
# remotely.
for t in 2 2ex 1; do
    vb_pair mw rsv-mw -- $t server
    vb_pair mw rsv-mw -- $t client
done
