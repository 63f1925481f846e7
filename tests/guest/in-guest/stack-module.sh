# The module is bound to the adapter and the kernel log is clean.
b=$(badlog)
if [ -z "$(ls /sys/bus/pci/drivers/rdma_session 2>/dev/null | grep '^0000:')" ]; then
    ck module-load fail "rdma_session is not bound to the adapter"
elif [ -n "$b" ]; then ck module-load fail "$b"
else ck module-load ok; fi
