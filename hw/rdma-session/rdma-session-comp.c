/*
 * rdma-session adapter: the completer (rxe_comp.c's role) and CQ writes.
 *
 * ACKs, NAKs and READ responses from the peer's responder retire the send
 * WQEs from sq_comp on, in order.  The completer never reads a WQE from
 * the ring: it goes by what the requester recorded when it started the
 * WQE (RSSentWqe: PSN span, length, the local SGEs of a READ or atomic),
 * which the guest cannot change afterwards.  Its state is sq_comp,
 * comp_psn (the first PSN of that WQE) and una_psn (the first PSN not
 * acknowledged, inside that WQE), all in the QP's VMState.  Every
 * response acknowledges the PSNs before its own (coalesced ACKs, NAKs,
 * READ responses); a READ is only complete with all of its responses, so
 * an acknowledgement past missing READ responses means they were lost and
 * the requester asks again for the rest.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

static unsigned long *rs_comp_map(RSCore *c, uint32_t vector)
{
    return c->comp_pending + vector * BITS_TO_LONGS(c->p.max_cqs);
}

/* The next CQ of the vector whose notification fired, forgotten now. */
uint32_t rs_comp_cause_read(RSCore *c, uint32_t vector)
{
    unsigned long *map;
    uint32_t idx;

    if (vector >= c->p.num_comp_vectors) {
        RS_GUEST_ERR(rdma_session_err_comp_cause, "read of the completion "
                     "cause of vector %u of %u", vector,
                     c->p.num_comp_vectors);
        return RS_COMP_CAUSE_NONE;
    }
    map = rs_comp_map(c, vector);
    idx = find_first_bit(map, c->p.max_cqs);
    if (idx >= c->p.max_cqs) {
        return RS_COMP_CAUSE_NONE;
    }
    clear_bit(idx, map);
    c->cqs[idx].ev_pending = false;
    trace_rdma_session_comp_cause(vector, idx);
    return rs_handle(idx, c->cqs[idx].gen);
}

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

void rs_send_cqe(RSCore *c, uint32_t qpn, const struct rs_send_wqe_ctrl *w,
                 uint8_t status, uint32_t byte_len)
{
    RSQp *qp = &c->qps[qpn];
    struct rs_cqe cqe = {
        .wr_id = w->wr_id,
        .byte_len = cpu_to_le32(byte_len),
        .qpn = cpu_to_le32(qpn),
        .opcode = w->opcode,
        .status = status,
    };

    if (status == RS_WC_SUCCESS && !(w->flags & RS_WQE_F_SIGNALED) &&
        !(qp->flags & RS_QP_F_SIGNAL_ALL)) {
        return;
    }
    rs_cq_post(c, qp->send_cq, &cqe, false);
}

/* An affiliated asynchronous event of QP qpn (IBTA 11.6.3). */
void rs_qp_event(RSCore *c, uint32_t qpn, uint8_t type)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->type == RS_QPT_DC_CTX) {
        return;                 /* no guest handle: the NAK says it */
    }
    rs_core_raise_event(c, type, rs_handle(qpn, qp->gen), qp->sq_psn);
}

/*
 * Send Queue Drained: in SQD, once every work request sent before the
 * transition has completed (the requester sends nothing new in SQD).
 */
void rs_sq_drained_check(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->state == RS_QPS_SQD && qp->sqd_notify &&
        qp->sq_comp == qp->sq_ci && !qp->req_pkt) {
        qp->sqd_notify = false;
        rs_qp_event(c, qpn, RS_EV_QP_SQ_DRAINED);
    }
}

/*
 * Outstanding work requests are flushed from req_bh (rs_qp_flush), after
 * the completion of the error that got the QP here.  A QP on an SRQ gets
 * the Last WQE Reached event instead of a receive queue flush (IBTA
 * 11.6.3.2).
 */
void rs_qp_to_err(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->type == RS_QPT_DC_CTX) {
        rs_dc_ctx_error(c, qpn);    /* released, never its DCT */
        return;
    }
    if (qp->state != RS_QPS_ERR) {
        trace_rdma_session_qp_state(qpn, qp->state, RS_QPS_ERR);
        qp->state = RS_QPS_ERR;
        rs_odp_qp_clear(c, qp);
        if (qp->srq && qp->type != RS_QPT_XRC_TGT) {
            rs_core_raise_event(c, RS_EV_QP_LAST_WQE_REACHED,
                                rs_handle(qpn, qp->gen), 0);
        }
    }
    rs_req_kick(c);
}

/*
 * A QP in ERR completes every outstanding work request with
 * RS_WC_WR_FLUSH_ERR, in order: send WQEs from the oldest not completed
 * (sent or not), receive WQEs from rq_ci (on an SRQ: the one a message in
 * progress took), and those posted while the QP stays in ERR, as rxe and
 * mlx5 do (ib_drain_qp() relies on it).  Flushed WQEs complete whether
 * signaled or not.  True when budget ran out before the queues were empty.
 */
/* The record of WQE index if the requester has started it, else NULL. */
RSSentWqe *rs_sq_started(RSQp *qp, uint32_t index)
{
    if (index - qp->sq_comp >= qp->sq_rec - qp->sq_comp) {
        return NULL;
    }
    return &qp->sent[index % RS_SQ_INFLIGHT];
}

/*
 * Complete the WQE at sq_comp: as recorded when it was started, or, one
 * the requester never started (flushed), as the ring holds it now.
 */
void rs_sq_complete(RSCore *c, uint32_t qpn, uint8_t status,
                    uint32_t byte_len)
{
    RSQp *qp = &c->qps[qpn];
    RSSentWqe *rec = rs_sq_started(qp, qp->sq_comp);
    uint32_t stride = rs_sq_stride(qp->max_send_sge, qp->max_inline);
    struct rs_send_wqe_ctrl w;

    memset(&w, 0, sizeof(w));
    if (rec) {
        w.wr_id = rec->wr_id;
        w.opcode = rec->opcode;
        w.flags = rec->flags;
        qp->rd_sge_tail += rec->nsge;
    } else {
        if (rs_dma_read(c, qp->sq_addr + (uint64_t)(qp->sq_comp &
                        ((1u << qp->sq_log) - 1)) * stride, &w, sizeof(w))) {
            memset(&w, 0, sizeof(w));
        }
        qp->sq_rec = qp->sq_comp + 1;
    }
    rs_send_cqe(c, qpn, &w, status, byte_len);
    qp->sq_comp++;
}

/* The send queue jumped (a producer overrun): no WQE is started. */
static void rs_sq_forget(RSQp *qp)
{
    qp->sq_ci = qp->sq_rec = qp->sq_comp;
    qp->rd_sge_tail = qp->rd_sge_head;
    qp->req_pkt = 0;
}

/*
 * A send WQE failed locally while older ones still wait for their ACK:
 * those complete first, flushed, so the send queue completes in order.
 */
void rs_sq_flush_before(RSCore *c, uint32_t qpn, uint32_t end)
{
    RSQp *qp = &c->qps[qpn];

    while (qp->sq_comp != end && end - qp->sq_comp <= (1u << qp->sq_log)) {
        rs_sq_complete(c, qpn, RS_WC_WR_FLUSH_ERR, 0);
    }
}

/*
 * The receive WQE QP qpn took from its SRQ for a message in progress
 * completes flushed (an XRC target's names the XRC SRQ it came from).
 */
void rs_srq_flush_claimed(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];
    struct rs_cqe cqe = {
        .wr_id = qp->srq_wr_id,
        .qpn = cpu_to_le32(qpn),
        .opcode = RS_WR_RECV,
        .status = RS_WC_WR_FLUSH_ERR,
    };

    if (qp->type == RS_QPT_XRC_TGT) {
        cqe.srqn = cpu_to_le32(qp->srq);
    }
    if (qp->type == RS_QPT_DC_CTX) {
        cqe.qpn = cpu_to_le32(qp->dc_dct);
        cqe.src_qp = cpu_to_le32(qp->dest_qpn);
    }
    qp->srq_claimed = false;
    rs_cq_post(c, qp->recv_cq, &cqe, false);
}

bool rs_qp_flush(RSCore *c, uint32_t qpn, unsigned budget)
{
    RSQp *qp = &c->qps[qpn];
    uint32_t sq = 0, rq = 0;

    if ((uint16_t)(qp->sq_pi - qp->sq_comp) > (1u << qp->sq_log)) {
        RS_GUEST_ERR(rdma_session_err_flush_overrun, "QP %u: %s producer %u "
                     "is more than a ring ahead of %u", qpn, "SQ", qp->sq_pi,
                     qp->sq_comp & 0xffff);
        qp->sq_comp += (uint16_t)(qp->sq_pi - qp->sq_comp);
        rs_sq_forget(qp);
    }
    while ((uint16_t)(qp->sq_pi - qp->sq_comp) && sq < budget) {
        rs_sq_complete(c, qpn, RS_WC_WR_FLUSH_ERR, 0);
        sq++;
    }
    qp->sq_ci = qp->sq_comp;

    if (qp->srq) {
        if (qp->srq_claimed) {
            rs_srq_flush_claimed(c, qpn);
            rq++;
        }
    } else {
        if ((uint16_t)(qp->rq_pi - qp->rq_ci) > (1u << qp->rq_log)) {
            RS_GUEST_ERR(rdma_session_err_flush_overrun, "QP %u: %s producer "
                         "%u is more than a ring ahead of %u", qpn, "RQ",
                         qp->rq_pi, qp->rq_ci & 0xffff);
            qp->rq_ci += (uint16_t)(qp->rq_pi - qp->rq_ci);
        }
        while ((uint16_t)(qp->rq_pi - qp->rq_ci) && rq < budget) {
            uint32_t stride = rs_rq_stride(qp->max_recv_sge);
            struct rs_recv_wqe_ctrl w;
            struct rs_cqe cqe = {
                .qpn = cpu_to_le32(qpn),
                .opcode = RS_WR_RECV,
                .status = RS_WC_WR_FLUSH_ERR,
            };

            if (!rs_dma_read(c, qp->rq_addr + (uint64_t)(qp->rq_ci &
                             ((1u << qp->rq_log) - 1)) * stride, &w,
                             sizeof(w))) {
                cqe.wr_id = w.wr_id;
            }
            rs_cq_post(c, qp->recv_cq, &cqe, false);
            qp->rq_ci++;
            rq++;
        }
    }
    qp->resp_op = RS_RESP_NONE;
    if (sq || rq) {
        trace_rdma_session_qp_flush(qpn, sq, rq);
    }
    return sq == budget || rq == budget;
}

static uint8_t rs_nak_status(uint8_t syndrome)
{
    switch (syndrome) {
    case RS_AETH_NAK_INV_REQ:
        return RS_WC_REM_INV_REQ_ERR;
    case RS_AETH_NAK_REM_ACCESS:
        return RS_WC_REM_ACCESS_ERR;
    case RS_AETH_NAK_REM_OP:
        return RS_WC_REM_OP_ERR;
    default:
        return RS_WC_BAD_RESP_ERR;
    }
}

/*
 * READ, atomics, FLUSH and ATOMIC WRITE complete on their own responses,
 * not on an ACK.
 */
static bool rs_comp_needs_resp(uint8_t opcode)
{
    return opcode == RS_WR_RDMA_READ || opcode == RS_WR_ATOMIC_CMP_SWP ||
           opcode == RS_WR_ATOMIC_FETCH_ADD || opcode == RS_WR_FLUSH ||
           opcode == RS_WR_ATOMIC_WRITE;
}

/* Copy a response's payload to the local SGEs the requester recorded. */
static uint8_t rs_comp_to_sges(RSCore *c, RSQp *qp, const RSSentWqe *rec,
                               uint64_t off, const void *buf, uint32_t len)
{
    struct rs_sge sge[RS_MAX_SGE];
    unsigned i;

    for (i = 0; i < rec->nsge && i < RS_MAX_SGE; i++) {
        sge[i] = qp->rd_sge[(rec->sge_at + i) % RS_RD_SGE_POOL];
    }
    return rs_sge_copy(c, qp, qp->av.gid_index, sge, i, off, (void *)buf,
                       len, true);
}

/* n more packets acknowledged. */
static void rs_comp_progress(RSCore *c, RSQp *qp, uint32_t n)
{
    rs_sq_drained_check(c, qp - c->qps);
    rs_req_acked(c, qp, n);
    rs_path_acked(c, qp);
    qp->last_progress = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    qp->retries = 0;
    qp->rnr_retries = 0;
    qp->pause_since = 0;
    qp->gap_retried = false;
    qp->probed = false;
    if (rs_psn_diff(qp->una_psn, qp->sq_psn) > 0) {
        /*
         * It acknowledges PSNs sent before a rewind (an ACK, or READ
         * responses that come during an RNR wait): skip them, or the
         * requester would send completed WQEs again from behind sq_comp.
         */
        rs_req_rewind(c, qp - c->qps);
    }
    rs_req_kick(c);
}

enum { RS_COMP_OK, RS_COMP_READ_GAP };

/*
 * Every PSN before end is acknowledged: complete the WQEs it covers.
 * RS_COMP_READ_GAP: it covers a READ whose responses did not all arrive.
 */
static int rs_comp_acked(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t end)
{
    uint32_t una = qp->una_psn;
    bool progress = false;
    int ret = RS_COMP_OK;
    RSSentWqe *rec;

    /* Each turn completes a started WQE or stops: at most RS_SQ_INFLIGHT. */
    while (rs_psn_diff(end, qp->una_psn) > 0 &&
           (rec = rs_sq_started(qp, qp->sq_comp))) {
        uint32_t last;

        if (rs_comp_needs_resp(rec->opcode)) {
            ret = RS_COMP_READ_GAP;
            break;
        }
        last = (qp->comp_psn + rec->npkts - 1) & RS_PSN_MASK;
        progress = true;
        if (rs_psn_diff(end, last) <= 0) {
            qp->una_psn = end & RS_PSN_MASK;     /* inside this message */
            break;
        }
        rs_sq_complete(c, qpn, RS_WC_SUCCESS, rec->len);
        qp->comp_psn = qp->una_psn = (last + 1) & RS_PSN_MASK;
    }
    if (progress) {
        rs_comp_progress(c, qp, rs_psn_diff(qp->una_psn, una));
    }
    return ret;
}

/*
 * Something after una_psn is missing (READ responses, or the responder
 * NAKed a gap): send again from una_psn, once until the next progress.
 */
static void rs_comp_retry(RSCore *c, uint32_t qpn, RSQp *qp, const char *why)
{
    trace_rdma_session_comp_drop(qpn, qp->una_psn, why);
    if (!qp->gap_retried) {
        qp->gap_retried = true;
        rs_req_lost(c, qpn, false);
    }
}

/* The empty READ response that completes a FLUSH or ATOMIC WRITE. */
static void rs_comp_empty_resp(RSCore *c, uint32_t qpn, RSQp *qp,
                               const RSPkt *pkt)
{
    rs_sq_complete(c, qpn, RS_WC_SUCCESS, 0);
    qp->comp_psn = qp->una_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if (qp->rd_out) {
        qp->rd_out--;
    }
    rs_comp_progress(c, qp, 1);
}

/*
 * A READ response or ATOMIC ACKNOWLEDGE cannot land for want of a page:
 * it is dropped, the requester waits for the page and then asks again.
 */
static void rs_comp_odp_landing(RSCore *c, uint32_t qpn, RSQp *qp,
                                uint32_t psn)
{
    trace_rdma_session_comp_drop(qpn, psn, "ODP page fault");
    if (rs_odp_wait(c, qpn, &qp->odp_req, RS_ODP_WAIT_LANDING, psn)) {
        if (rs_sq_started(qp, qp->sq_comp)) {
            rs_sq_complete(c, qpn, RS_WC_LOC_PROT_ERR, 0);
        }
        rs_qp_to_err(c, qpn);
    }
}

/*
 * The peer's responder waits for a page fault at pkt->psn (PAUSE) or
 * has it resolved (RESUME): see "Page-fault pause on the wire".
 */
static void rs_comp_odp(RSCore *c, uint32_t qpn, RSQp *qp, const RSPkt *pkt)
{
    bool resume = pkt->opcode == RS_OP_ODP_RESUME;

    trace_rdma_session_odp_pause_rx(qpn, pkt->psn, resume);
    if (resume) {
        if (!qp->odp_paused || pkt->psn != qp->pause_psn) {
            trace_rdma_session_comp_drop(qpn, pkt->psn,
                                         "RESUME without a pause");
            return;
        }
        c->stats.odp_resumes_rcvd++;
        rs_req_rnr_end(c, qp);
        return;
    }
    if ((pkt->syndrome & RS_AETH_TYPE_MASK) != RS_AETH_TYPE_RNR) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "PAUSE without RNR");
        return;
    }
    /*
     * Like an RNR NAK it acknowledges the PSNs before its own.  READ or
     * atomic responses missing before it are asked for again when the
     * pause ends (it rewinds to una_psn): retrying them now would send
     * the paused PSN right after them, into the fault.
     */
    if (rs_comp_acked(c, qpn, qp, pkt->psn) == RS_COMP_READ_GAP) {
        trace_rdma_session_comp_drop(qpn, qp->una_psn, "PAUSE past missing "
                                     "READ or atomic responses");
    }
    c->stats.odp_pauses_rcvd++;
    rs_req_pause(c, qp, pkt->psn, pkt->syndrome & ~RS_AETH_TYPE_MASK);
}

/* The READ response for una_psn. */
static void rs_comp_read_resp(RSCore *c, uint32_t qpn, RSQp *qp,
                              const RSPkt *pkt)
{
    uint32_t mtu = 128u << qp->path_mtu;
    uint32_t d = rs_psn_diff(pkt->psn, qp->comp_psn);
    uint64_t off = (uint64_t)d * mtu;
    RSSentWqe *rec = rs_sq_started(qp, qp->sq_comp);
    bool last;
    uint8_t st;

    /* FLUSH and ATOMIC WRITE: a READ RESPONSE Only without payload. */
    if (rec && (rec->opcode == RS_WR_FLUSH ||
                rec->opcode == RS_WR_ATOMIC_WRITE) &&
        rs_op_code(pkt->opcode) == RS_OP_READ_RESP_ONLY && !pkt->paylen &&
        pkt->psn == qp->comp_psn) {
        rs_comp_empty_resp(c, qpn, qp, pkt);
        return;
    }
    if (!rec || rec->opcode != RS_WR_RDMA_READ) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "READ response for "
                                     "another operation");
        return;
    }
    last = d == rec->npkts - 1;
    if (d >= rec->npkts || pkt->paylen > mtu ||
        (!last && pkt->paylen != mtu) ||
        (last && off + pkt->paylen != rec->len)) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "READ response length");
        rs_sq_complete(c, qpn, RS_WC_BAD_RESP_ERR, 0);
        rs_qp_to_err(c, qpn);
        return;
    }
    st = rs_comp_to_sges(c, qp, rec, off, pkt->payload, pkt->paylen);
    if (st == RS_WC_ODP_FAULT) {
        rs_comp_odp_landing(c, qpn, qp, pkt->psn);
        return;
    }
    if (st) {
        rs_sq_complete(c, qpn, st, 0);
        rs_qp_to_err(c, qpn);
        return;
    }
    qp->una_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if ((rs_opcode[pkt->opcode].flags & RS_OPF_LAST) && qp->rd_out) {
        qp->rd_out--;           /* that READ request is answered */
    }
    if (last) {
        rs_sq_complete(c, qpn, RS_WC_SUCCESS, rec->len);
        qp->comp_psn = qp->una_psn;
    }
    rs_comp_progress(c, qp, 1);
}

/* The ATOMIC ACKNOWLEDGE for una_psn: the original value to the SGE. */
static void rs_comp_atomic_ack(RSCore *c, uint32_t qpn, RSQp *qp,
                               const RSPkt *pkt)
{
    RSSentWqe *rec = rs_sq_started(qp, qp->sq_comp);
    uint8_t buf[8], st;

    if (!rec || (rec->opcode != RS_WR_ATOMIC_CMP_SWP &&
                 rec->opcode != RS_WR_ATOMIC_FETCH_ADD)) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "ATOMIC ACKNOWLEDGE for "
                                     "another operation");
        return;
    }
    stq_le_p(buf, pkt->orig);
    st = rs_comp_to_sges(c, qp, rec, 0, buf, sizeof(buf));
    if (st == RS_WC_ODP_FAULT) {
        rs_comp_odp_landing(c, qpn, qp, pkt->psn);
        return;
    }
    rs_sq_complete(c, qpn, st, st ? 0 : sizeof(buf));
    qp->comp_psn = qp->una_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if (qp->rd_out) {
        qp->rd_out--;
    }
    if (st) {
        rs_qp_to_err(c, qpn);
        return;
    }
    rs_comp_progress(c, qp, 1);
}

/*
 * An ACK, NAK, READ response or ATOMIC ACKNOWLEDGE for RC (or XRC
 * initiator) QP qpn; the opcode table let only its transport's through.
 */
void rs_comp_receive(RSCore *c, uint32_t qpn, const RSPkt *pkt)
{
    const RSOpcodeInfo *oi = &rs_opcode[pkt->opcode];
    RSQp *qp = &c->qps[qpn];
    uint8_t type = (oi->flags & RS_OPF_AETH) ?
                   pkt->syndrome & RS_AETH_TYPE_MASK : RS_AETH_TYPE_ACK;
    uint8_t op = rs_op_code(pkt->opcode);
    bool is_rresp = op >= RS_OP_READ_RESP_FIRST &&
                    op <= RS_OP_READ_RESP_ONLY;
    int r;

    if (!rs_qpt_rc_requester(qp->type) ||
        (qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD)) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "QP not sending");
        return;
    }
    if (rs_psn_diff(pkt->psn, qp->max_psn) >= 0) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "PSN not sent yet");
        return;
    }
    if (rs_psn_diff(pkt->psn, qp->una_psn) < 0) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "duplicate response");
        return;
    }
    if (oi->flags & RS_OPF_ODP) {
        rs_comp_odp(c, qpn, qp, pkt);
        return;
    }
    if (type == RS_AETH_TYPE_ACK && !is_rresp && op != RS_OP_ATOMIC_ACK) {
        if (rs_comp_acked(c, qpn, qp, (pkt->psn + 1) & RS_PSN_MASK) ==
            RS_COMP_READ_GAP) {
            rs_comp_retry(c, qpn, qp, "ACK past missing READ or atomic "
                          "responses");
        }
        return;
    }

    /* A NAK or a response acknowledges the PSNs before its own. */
    r = rs_comp_acked(c, qpn, qp, pkt->psn);
    if (r == RS_COMP_READ_GAP) {
        rs_comp_retry(c, qpn, qp, "response past missing READ or atomic "
                      "responses");
        return;
    }
    if (is_rresp) {
        rs_comp_read_resp(c, qpn, qp, pkt);
        return;
    }
    if (op == RS_OP_ATOMIC_ACK) {
        rs_comp_atomic_ack(c, qpn, qp, pkt);
        return;
    }
    if (type == RS_AETH_TYPE_RNR) {
        c->stats.rnr_naks_rcvd++;
        if (qp->odp_paused && pkt->psn == qp->pause_psn) {
            return;             /* the pause's own RNR NAK: not counted */
        }
        rs_req_rnr_wait(c, qp, pkt->syndrome & ~RS_AETH_TYPE_MASK);
        return;
    }
    if (pkt->syndrome == RS_AETH_NAK_PSN_SEQ) {
        c->stats.seq_naks_rcvd++;
        /* Once per PSN: a stream of NAKs is not a retransmission each. */
        rs_comp_retry(c, qpn, qp, "sequence NAK");
        return;
    }
    trace_rdma_session_comp_nak(qpn, pkt->psn, pkt->syndrome);
    if (rs_sq_started(qp, qp->sq_comp)) {
        rs_sq_complete(c, qpn, rs_nak_status(pkt->syndrome), 0);
    }
    rs_qp_to_err(c, qpn);
}
