/*
 * rdma-session adapter: doorbell records (ABI 1.11, RS_CAP_DB_RECORD).
 *
 * A QP given a struct rs_db_record by SET_QP_DB_RECORD posts without an
 * MMIO doorbell while the device says, in the record, that it reads the
 * producer by itself (mlx5's doorbell records, virtio's notification
 * suppression).  The send side is active while the requester leaves
 * unsent WQEs that it comes back to (the budget, a window or rate limit,
 * an RNR wait, a page fault): every run of the requester on the QP reads
 * sq_prod first.  When the ring runs empty the device stores sq_active 0,
 * then (smp_mb) reads sq_prod once more: a post that saw sq_active 1
 * stored its producer before that load, so it is picked up here, and one
 * that saw 0 rings the doorbell.  The receive side reads rq_prod whenever
 * the producer it knows says the ring is empty and a message needs a
 * WQE; rq_active is 1 while the QP may receive (Init to SQE), so receive
 * posts need no doorbell at all.  In Error both are 0: posts ring the
 * doorbells, which flush them.
 *
 * Each producer is read once per look, checked against the ring (bits
 * 16-31 zero, at most a ring ahead of the consumer, never behind what
 * the device already took) and a bad one makes the QP fatal and drops
 * the record.  A look takes one 4-byte read; what it finds is bounded by
 * the ring and worked off within the requester's budget.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/atomic.h"
#include "qemu/log.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

#define RS_DBR_SQ_PROD      offsetof(struct rs_db_record, sq_prod)
#define RS_DBR_SQ_ACTIVE    offsetof(struct rs_db_record, sq_active)
#define RS_DBR_RQ_PROD      offsetof(struct rs_db_record, rq_prod)
#define RS_DBR_RQ_ACTIVE    offsetof(struct rs_db_record, rq_active)

/* A receive queue of its own that may receive: rq_active 1. */
static bool rs_dbrec_rq_wanted(const RSQp *qp)
{
    return !qp->srq && qp->rq_log && qp->type != RS_QPT_XRC_TGT &&
           qp->state != RS_QPS_RESET && qp->state != RS_QPS_ERR;
}

static bool rs_dbrec_has_rq(const RSQp *qp)
{
    return !qp->srq && qp->rq_log && qp->type != RS_QPT_XRC_TGT;
}

static void rs_dbrec_store(RSCore *c, uint64_t addr, uint32_t off,
                           uint32_t val)
{
    uint32_t le = cpu_to_le32(val);

    /* Checked by SET_QP_DB_RECORD (guest RAM); a failure changes nothing. */
    rs_dma_write(c, addr + off, &le, sizeof(le));
}

/* Forget QP qpn's record: its driver rings the doorbells from now on. */
static void rs_dbrec_drop(RSCore *c, uint32_t qpn)
{
    RSDbRec *r = &c->dbrec[qpn];

    if (r->addr) {
        rs_dbrec_store(c, r->addr, RS_DBR_SQ_ACTIVE, 0);
        rs_dbrec_store(c, r->addr, RS_DBR_RQ_ACTIVE, 0);
    }
    *r = (RSDbRec){ 0 };
}

/* A hostile or unreadable record: the QP is fatal, the record dropped. */
static void rs_dbrec_fatal(RSCore *c, uint32_t qpn, const char *what,
                           uint32_t val, uint32_t ci)
{
    RS_GUEST_ERR(rdma_session_err_dbrec, "QP %u: doorbell record %s 0x%x "
                 "with consumer %u", qpn, what, val, ci & 0xffff);
    rs_dbrec_drop(c, qpn);
    rs_qp_event(c, qpn, RS_EV_QP_FATAL);
    rs_qp_to_err(c, qpn);
}

/*
 * Read producer off of QP qpn's record, check it against the ring of
 * 2^log entries whose consumer is ci and whose producer the device knew
 * as *pi, and take it: true, or false when the QP became fatal.
 */
static bool rs_dbrec_take(RSCore *c, uint32_t qpn, uint32_t off,
                          unsigned log, uint32_t ci, uint32_t *pi,
                          const char *what)
{
    RSDbRec *r = &c->dbrec[qpn];
    uint16_t known, seen;
    uint32_t le, v;

    if (rs_dma_read(c, r->addr + off, &le, sizeof(le))) {
        rs_dbrec_fatal(c, qpn, "unreadable at", (uint32_t)r->addr, ci);
        return false;
    }
    v = le32_to_cpu(le);
    known = *pi - ci;
    seen = v - ci;
    if (v >> 16 || seen > (1u << log) || seen < known) {
        rs_dbrec_fatal(c, qpn, what, v, ci);
        return false;
    }
    if (seen != known) {
        trace_rdma_session_dbrec_pickup(qpn, what, *pi & 0xffff, v);
        c->stats.db_record_pickups += (uint16_t)(seen - known);
        *pi = v;
    }
    return true;
}

/* The requester resumes QP qpn: take sq_prod if the device said it would. */
bool rs_dbrec_sq_fetch(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (!c->dbrec[qpn].sq_active) {
        return true;
    }
    return rs_dbrec_take(c, qpn, RS_DBR_SQ_PROD, qp->sq_log,
                         qp->comp.sq_comp, &qp->sq_pi, "sq_prod");
}

/* The requester leaves unsent WQEs that it comes back to. */
void rs_dbrec_sq_arm(RSCore *c, uint32_t qpn)
{
    RSDbRec *r = &c->dbrec[qpn];

    if (r->addr && !r->sq_active) {
        r->sq_active = true;
        rs_dbrec_store(c, r->addr, RS_DBR_SQ_ACTIVE, 1);
        trace_rdma_session_dbrec_active(qpn, "sq", 1);
    }
}

/*
 * The send queue ran empty: sq_active 0, then sq_prod once more.  True if
 * it moved (the requester goes on, and arms again if it stops short).
 */
bool rs_dbrec_sq_idle(RSCore *c, uint32_t qpn)
{
    RSDbRec *r = &c->dbrec[qpn];
    RSQp *qp = &c->qps[qpn];
    uint32_t before = qp->sq_pi;

    if (!r->addr || !r->sq_active) {
        return false;
    }
    r->sq_active = false;
    rs_dbrec_store(c, r->addr, RS_DBR_SQ_ACTIVE, 0);
    trace_rdma_session_dbrec_active(qpn, "sq", 0);
    smp_mb();                   /* the store before the load: no lost post */
    if (!rs_dbrec_take(c, qpn, RS_DBR_SQ_PROD, qp->sq_log,
                       qp->comp.sq_comp, &qp->sq_pi, "sq_prod")) {
        return false;
    }
    return qp->sq_pi != before;
}

/* A message needs a receive WQE and the known producer says none. */
void rs_dbrec_rq_fetch(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (!c->dbrec[qpn].rq_active) {
        return;
    }
    rs_dbrec_take(c, qpn, RS_DBR_RQ_PROD, qp->rq_log, qp->resp.rq_ci,
                  &qp->rq_pi, "rq_prod");
}

/*
 * QP qpn changed state.  Into Error or Reset both sides go inactive; the
 * producers are read once more after that, so what was posted while they
 * were active is flushed in Error.  Out of them the receive side is
 * active again.
 */
void rs_dbrec_qp_state(RSCore *c, uint32_t qpn)
{
    RSDbRec *r = &c->dbrec[qpn];
    RSQp *qp = &c->qps[qpn];
    bool err = qp->state == RS_QPS_ERR;

    if (!r->addr) {
        return;
    }
    if (rs_dbrec_rq_wanted(qp)) {
        if (!r->rq_active) {
            r->rq_active = true;
            rs_dbrec_store(c, r->addr, RS_DBR_RQ_ACTIVE, 1);
            trace_rdma_session_dbrec_active(qpn, "rq", 1);
        }
        return;
    }
    if (qp->state != RS_QPS_RESET && !err) {
        return;
    }
    if (r->sq_active) {
        r->sq_active = false;
        rs_dbrec_store(c, r->addr, RS_DBR_SQ_ACTIVE, 0);
        trace_rdma_session_dbrec_active(qpn, "sq", 0);
        smp_mb();               /* store before load: take every post */
        if (err && !rs_dbrec_take(c, qpn, RS_DBR_SQ_PROD, qp->sq_log,
                                  qp->comp.sq_comp, &qp->sq_pi, "sq_prod")) {
            return;
        }
    }
    if (r->rq_active) {
        r->rq_active = false;
        rs_dbrec_store(c, r->addr, RS_DBR_RQ_ACTIVE, 0);
        trace_rdma_session_dbrec_active(qpn, "rq", 0);
        smp_mb();               /* store before load: take every post */
        if (err) {
            rs_dbrec_take(c, qpn, RS_DBR_RQ_PROD, qp->rq_log,
                          qp->resp.rq_ci, &qp->rq_pi, "rq_prod");
        }
    }
}

/* QP qpn was destroyed: the record is the driver's memory again. */
void rs_dbrec_qp_gone(RSCore *c, uint32_t qpn)
{
    c->dbrec[qpn] = (RSDbRec){ 0 };
}

uint8_t rs_cmd_set_qp_db_record(RSCore *c, const struct rs_admin_cmd *cmd,
                                struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_set_qp_db_record *m = &cmd->set_db_record;
    uint32_t idx = RS_QP_LOOKUP(c, le32_to_cpu(m->handle));
    uint64_t addr = le64_to_cpu(m->addr);
    RSDbRec *r;
    RSQp *qp;
    uint8_t st;

    if (!c->p.db_record) {
        return RS_STATUS_NOT_SUPPORTED;
    }
    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    qp = &c->qps[idx];
    r = &c->dbrec[idx];
    if (m->rsvd || !qp->sq_log || qp->type == RS_QPT_DC_CTX) {
        return RS_STATUS_BAD_PARAM;
    }
    if (addr & (RS_DB_RECORD_ALIGN - 1)) {
        return RS_STATUS_BAD_ALIGN;
    }
    if (addr) {
        st = rs_dma_check(c, addr, sizeof(struct rs_db_record), true);
        if (st) {
            return st;
        }
    }
    rs_dbrec_drop(c, idx);
    if (addr) {
        r->addr = addr;
        rs_dbrec_store(c, addr, RS_DBR_SQ_ACTIVE, 0);
        r->rq_active = rs_dbrec_rq_wanted(qp);
        rs_dbrec_store(c, addr, RS_DBR_RQ_ACTIVE, r->rq_active);
    }
    trace_rdma_session_dbrec_set(idx, addr);
    cqe->handle = m->handle;
    return RS_STATUS_OK;
}

static bool rs_dbrec_realize(RSCore *c, Error **errp)
{
    c->dbrec = g_new0(RSDbRec, c->p.max_qps);
    return true;
}

static void rs_dbrec_unrealize(RSCore *c)
{
    g_free(c->dbrec);
    c->dbrec = NULL;
}

static void rs_dbrec_reset(RSCore *c)
{
    memset(c->dbrec, 0, sizeof(*c->dbrec) * c->p.max_qps);
}

static void rs_dbrec_pre_load(RSCore *c)
{
    rs_dbrec_reset(c);
}

/*
 * Nothing of a loaded record is followed before this: a record belongs
 * to a valid QP with a send queue, is aligned and in guest RAM, and is
 * active only where the device may read it.
 */
static bool rs_dbrec_valid(RSCore *c)
{
    uint32_t qpn;

    for (qpn = 0; qpn < c->p.max_qps; qpn++) {
        const RSDbRec *r = &c->dbrec[qpn];
        const RSQp *qp = &c->qps[qpn];

        if (!r->addr) {
            if (r->sq_active || r->rq_active) {
                return false;
            }
            continue;
        }
        if (!c->p.db_record || qpn == 0 || !qp->valid || !qp->sq_log ||
            qp->type == RS_QPT_DC_CTX ||
            (r->addr & (RS_DB_RECORD_ALIGN - 1)) ||
            rs_dma_check(c, r->addr, sizeof(struct rs_db_record), true) ||
            (r->rq_active && !rs_dbrec_has_rq(qp))) {
            trace_rdma_session_dbrec_bad_state(qpn, r->addr);
            return false;
        }
    }
    return true;
}

static const VMStateDescription vmstate_rs_dbrec_qp = {
    .name = "rdma-session/dbrec-qp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(addr, RSDbRec),
        VMSTATE_BOOL(sq_active, RSDbRec),
        VMSTATE_BOOL(rq_active, RSDbRec),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * Sent once a QP has a record or a post came through one: a stream of a
 * guest that never used records is an older release's.  db_mmio_writes
 * comes with it and is otherwise not migrated.
 */
static bool rs_dbrec_needed(void *opaque)
{
    RSCore *c = opaque;
    uint32_t qpn;

    if (c->stats.db_record_pickups) {
        return true;
    }
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        if (c->dbrec[qpn].addr) {
            return true;
        }
    }
    return false;
}

const VMStateDescription vmstate_rs_dbrec = {
    .name = "rdma-session/core/dbrec",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_dbrec_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.db_mmio_writes, RSCore),
        VMSTATE_UINT64(stats.db_record_pickups, RSCore),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(dbrec, RSCore, p.max_qps,
                                             vmstate_rs_dbrec_qp, RSDbRec),
        VMSTATE_END_OF_LIST()
    },
};

const RSFeature rs_feature_dbrec = {
    .name = "dbrec",
    .realize = rs_dbrec_realize,
    .unrealize = rs_dbrec_unrealize,
    .reset = rs_dbrec_reset,
    .pre_load = rs_dbrec_pre_load,
    .validate = rs_dbrec_valid,
};
