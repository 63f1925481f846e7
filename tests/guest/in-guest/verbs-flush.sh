# verbs: RDMA ATOMIC WRITE and FLUSH (rsv-flush), each side the requester
# in turn: the 8 bytes checked in the responder's memory and read back,
# FLUSH of a range and of the whole MR, FLUSH without the right refused.
vb_pair flush rsv-flush
