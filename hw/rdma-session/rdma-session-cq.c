/*
 * rdma-session adapter: completion queue services (rxe_cq.c's role): CQE
 * writes and CQ interrupts, the completion cause of each vector
 * (RS_COMP_CAUSE, which the core's register read takes) and its state in
 * a CQ's migration.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

void rs_comp_cause_clear(RSCore *c, uint32_t idx)
{
    RSCq *cq = &c->cqs[idx];

    if (cq->ev_pending) {
        cq->ev_pending = false;
        clear_bit(idx, rs_comp_map(c, cq->vector));
    }
}

static bool rs_cq_event_needed(void *opaque)
{
    return ((RSCq *)opaque)->ev_pending;
}

/* A notification the driver has not read from RS_COMP_CAUSE yet. */
const VMStateDescription vmstate_rs_cq_event = {
    .name = "rdma-session/cq/event",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_cq_event_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(ev_pending, RSCq),
        VMSTATE_END_OF_LIST()
    },
};

/* After an incoming migration: the maps from the CQs' flags. */
bool rs_comp_cause_load(RSCore *c)
{
    bitmap_zero(c->comp_pending,
                c->p.num_comp_vectors * BITS_TO_LONGS(c->p.max_cqs) *
                BITS_PER_LONG);
    for (uint32_t i = 0; i < c->p.max_cqs; i++) {
        RSCq *cq = &c->cqs[i];

        if (!cq->ev_pending) {
            continue;
        }
        if (!cq->valid) {
            return false;
        }
        set_bit(i, rs_comp_map(c, cq->vector));
    }
    return true;
}

/*
 * Write one CQE at the CQ's producer index with this lap's owner bit
 * (1 on the first lap), written last; interrupt if the CQ is armed.
 */
void rs_cq_post(RSCore *c, uint32_t idx, struct rs_cqe *cqe, bool solicited)
{
    RSCq *cq = &c->cqs[idx];
    uint32_t size = 1u << cq->log_size;
    uint64_t addr;

    if (!cq->valid) {
        return;
    }
    /* ci is 16 bits (the doorbell's): size <= 2^15 keeps full != empty. */
    if (((cq->pi - cq->ci) & 0xffff) >= size) {
        trace_rdma_session_cq_overflow(idx);
        rs_core_raise_event(c, RS_EV_CQ_ERR,
                            rs_handle(idx, cq->gen), cq->pi);
        return;
    }
    addr = cq->ring + (uint64_t)(cq->pi & (size - 1)) * sizeof(*cqe);
    cqe->owner = ((cq->pi >> cq->log_size) & 1) ? 0 : RS_CQE_OWNER;
    if (rs_dma_write(c, addr, cqe, offsetof(struct rs_cqe, owner)) ||
        rs_dma_write(c, addr + offsetof(struct rs_cqe, srqn), &cqe->srqn,
                     sizeof(cqe->srqn))) {
        rs_core_raise_event(c, RS_EV_CQ_ERR, rs_handle(idx, cq->gen),
                            cq->pi);
        return;
    }
    /* The poller may see the owner bit only after the entry's body. */
    smp_wmb();
    rs_dma_write(c, addr + offsetof(struct rs_cqe, owner), &cqe->owner, 1);
    trace_rdma_session_cqe(idx, cq->pi, le32_to_cpu(cqe->qpn), cqe->opcode,
                           cqe->status, le32_to_cpu(cqe->byte_len));
    cq->pi++;
    if ((cq->arm & (RS_DB_CQ_ARM_NEXT >> RS_DB_VALUE_SHIFT)) ||
        ((cq->arm & (RS_DB_CQ_ARM_SOLICITED >> RS_DB_VALUE_SHIFT)) &&
         (solicited || cqe->status != RS_WC_SUCCESS))) {
        cq->arm = 0;
        if (!cq->ev_pending) {
            cq->ev_pending = true;
            set_bit(idx, rs_comp_map(c, cq->vector));
        }
        c->notify(c->owner, RS_MSIX_COMP_VECTOR0 + cq->vector);
    }
}
