# ucx: ucx_perftest between the two VMs, VM 1 (an adapter) the client,
# VM 2 the server; each test a check on both VMs (uc_perf, ucx-common.sh).
# Message counts are small so that each test takes a few seconds under
# TCG.
#
# ucx_perftest's server runs the test parameters the client sends it, the
# UCT device (-d) included: both VMs must have the device under the same
# name.  A soft-RoCE VM 2 renames rxe0 to the client's rsess0 for the
# UCT tests (rdma dev set), and back after them; UCP tests pick their
# devices on each side.

if [ "$UC_SOFT" = 1 ] && [ "$UC_PAIRING" = adapter-rxe ]; then
    rdma dev set "$dev" name rsess0 && UC_DEV=rsess0:1 ||
        echo "ucx: rdma dev set $dev name rsess0 failed"
fi
# UCT over RC: RDMA WRITE and READ of 64 KiB (zero copy), 8-byte WRITE
# and active-message ping-pongs (inline sends)
uc_perf uct-rc-put-bw bw -t put_bw -x rc_verbs -s 65536 -D zcopy -n 400
uc_perf uct-rc-get-bw bw -t get -x rc_verbs -s 65536 -D zcopy -n 400
uc_perf uct-rc-put-lat lat -t put_lat -x rc_verbs -n 1000
uc_perf uct-rc-am-lat lat -t am_lat -x rc_verbs -n 1000
# UCT over UD: active messages, ping-pong and a stream of 512 bytes
# (copied; within soft-RoCE's 1024-byte path MTU)
uc_perf uct-ud-am-lat lat -t am_lat -x ud_verbs -n 1000
uc_perf uct-ud-am-bw bw -t am_bw -x ud_verbs -s 512 -D bcopy -n 4000
if [ "$UC_SOFT" = 1 ] && [ "$UC_PAIRING" = adapter-rxe ]; then
    rdma dev set rsess0 name "$dev" && UC_DEV=$dev:1 ||
        echo "ucx: rdma dev set rsess0 name $dev failed"
fi
# UCP, transports chosen by UCX: tagged messages of 64 KiB (rendezvous)
# and 8 bytes, and RMA puts of 64 KiB
uc_perf ucp-tag-bw bw -t tag_bw -s 65536 -n 400
uc_perf ucp-tag-lat lat -t tag_lat -n 1000
uc_perf ucp-put-bw bw -t ucp_put_bw -s 65536 -n 400
