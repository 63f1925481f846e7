/*
 * rdma-session adapter: the local fabric (rdma-session-fabric.c), shared
 * memory between adapters of QEMU processes on one host.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RDMA_SESSION_FABRIC_H
#define RDMA_SESSION_FABRIC_H

#include "rdma-session-core.h"
#include "rdma-session-wire.h"

/* Bounds: members, their RAM regions and addresses, pieces of a frame. */
#define RS_FAB_MAX_MEMBERS  8
#define RS_FAB_MAX_REGIONS  8
#define RS_FAB_MAX_ADDRS    16
#define RS_FAB_MAX_PIECES   16
/* Payloads from this size on go by reference; smaller ones inline. */
#define RS_FAB_REF_MIN      512

/* Counters, QOM properties x-fabric-* and query-rdma-session. */
enum {
    RS_FAB_CNT_TX_INLINE,       /* frames sent inline */
    RS_FAB_CNT_TX_INLINE_BYTES,
    RS_FAB_CNT_TX_REF,          /* frames sent by reference */
    RS_FAB_CNT_TX_REF_BYTES,    /* their payload bytes */
    RS_FAB_CNT_RX_INLINE,
    RS_FAB_CNT_RX_INLINE_BYTES,
    RS_FAB_CNT_RX_REF,
    RS_FAB_CNT_RX_REF_BYTES,
    RS_FAB_CNT_RX_DROP,         /* frames dropped (bad headers, pieces) */
    RS_FAB_CNT_RX_BAD_REF,      /* of them: a piece outside the peer's RAM */
    RS_FAB_CNT_TX_LOST,         /* sends the channel refused */
    RS_FAB_CNT_GARBAGE,         /* members disconnected for a bad message */
    RS_FAB_CNT_JOINED,          /* members that said HELLO */
    RS_FAB_CNT_LEFT,            /* connections closed */
    RS_FAB_CNT_FULL,            /* connections refused: table full */
    RS_FAB_CNT_TX_MSGS,         /* channel messages sent with frames */
    RS_FAB_CNT_RX_MSGS,         /* channel messages received with frames */
    RS_FAB_COUNTERS
};

typedef struct RSFabric RSFabric;

bool rs_fabric_check(RSCore *c, Error **errp);
void rs_fabric_vm_running(RSCore *c);
void rs_fabric_vm_migrating(RSCore *c);
void rs_fabric_addrs_changed(RSCore *c);
bool rs_fabric_reaches(RSCore *c, const RSPkt *pkt);
bool rs_fabric_ref_begin(RSCore *c, const RSPkt *pkt, uint32_t n);
bool rs_fabric_ref_end(RSCore *c);
void rs_fabric_ref_drop(RSCore *c);
bool rs_fabric_record(RSCore *c, uint64_t addr, uint64_t len);
void rs_fabric_flush(RSCore *c);
bool rs_fabric_xmit(RSCore *c, const uint8_t *frame, size_t len,
                    const RSPkt *pkt);
uint64_t *rs_fabric_counter(RSCore *c, unsigned which);
bool rs_fabric_member(RSCore *c, unsigned i, uint64_t *id,
                      uint32_t *addrs, uint32_t *naddrs, uint32_t *nregions);

#endif
