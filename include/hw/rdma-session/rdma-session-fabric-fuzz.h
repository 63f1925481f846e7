/*
 * rdma-session adapter: the local fabric's entry for the fuzzers
 * (hw/rdma-session/rdma-session-fabric.c; docs/specs "Local fabric" for
 * the messages).
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_SESSION_FABRIC_FUZZ_H
#define HW_RDMA_SESSION_FABRIC_FUZZ_H

/* The control channel's messages: header and types. */
#define RS_FAB_MAGIC        0x42465352u     /* "RSFB" little-endian */
#define RS_FAB_HDR_LEN      12
enum {
    RS_FAB_MSG_HELLO = 1,       /* id, regions (fds attached) */
    RS_FAB_MSG_ADDRS = 2,       /* IPv4 addresses */
    RS_FAB_MSG_FRAME = 3,       /* a whole RoCE frame */
    RS_FAB_MSG_FRAME_REF = 4,   /* headers + pieces of the sender's RAM */
};
/* HELLO version 2's flags: the sender takes several messages at once. */
#define RS_FAB_HELLO_BATCH  1u
/* A batch: FRAME and FRAME_REF messages back to back, bounded. */
#define RS_FAB_BATCH_MAX    65536
#define RS_FAB_BATCH_MSGS   64

/* The fuzzers' fake member's one RAM region. */
#define RS_FAB_FUZZ_ADDR    0x100000ull
#define RS_FAB_FUZZ_SIZE    65536

/*
 * Channel message @buf (@len bytes, at most RS_FAB_BATCH_MAX: one message
 * or a batch; NULL: none) from the fake member 0 of the first adapter
 * with local-fabric, whose address is @fuzz_ip (host order) and which
 * announced batches.  Returns the fake member's RAM (RS_FAB_FUZZ_SIZE
 * bytes) for the fuzzer to fill.
 */
uint8_t *rs_fabric_fuzz_input(const uint8_t *buf, size_t len,
                              uint32_t fuzz_ip);

#endif
