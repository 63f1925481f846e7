/*
 * rdma-session adapter: the completer (rxe_comp.c's role) and CQ writes.
 *
 * ACKs, NAKs and READ responses from the peer's responder retire the send
 * WQEs from sq_comp on, in order.  The completer keeps no copy of a WQE:
 * it re-reads it from the send queue and derives its PSN span from its
 * length and the path MTU, so its whole state is sq_comp, comp_psn (the
 * first PSN of that WQE) and una_psn (the first PSN not acknowledged,
 * inside that WQE), all in the QP's VMState.  Every response acknowledges
 * the PSNs before its own (coalesced ACKs, NAKs, READ responses); a READ
 * is only complete with all of its responses, so an acknowledgement past
 * missing READ responses means they were lost and the requester asks
 * again for the rest.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

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
        rs_dma_write(c, addr + offsetof(struct rs_cqe, rsvd), &cqe->rsvd,
                     sizeof(cqe->rsvd))) {
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

/*
 * Outstanding work requests are flushed from req_bh (rs_qp_flush), after
 * the completion of the error that got the QP here.  A QP on an SRQ gets
 * the Last WQE Reached event instead of a receive queue flush (IBTA
 * 11.6.3.2).
 */
void rs_qp_to_err(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->state != RS_QPS_ERR) {
        trace_rdma_session_qp_state(qpn, qp->state, RS_QPS_ERR);
        qp->state = RS_QPS_ERR;
        if (qp->srq) {
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
static void rs_sq_flush_one(RSCore *c, uint32_t qpn, RSQp *qp)
{
    uint32_t stride = rs_sq_stride(qp->max_send_sge, qp->max_inline);
    struct rs_send_wqe_ctrl w;

    if (rs_dma_read(c, qp->sq_addr + (uint64_t)(qp->sq_comp &
                    ((1u << qp->sq_log) - 1)) * stride, &w, sizeof(w))) {
        memset(&w, 0, sizeof(w));
    }
    rs_send_cqe(c, qpn, &w, RS_WC_WR_FLUSH_ERR, 0);
    qp->sq_comp++;
}

/*
 * A send WQE failed locally while older ones still wait for their ACK:
 * those complete first, flushed, so the send queue completes in order.
 */
void rs_sq_flush_before(RSCore *c, uint32_t qpn, uint32_t end)
{
    RSQp *qp = &c->qps[qpn];

    while (qp->sq_comp != end && end - qp->sq_comp <= (1u << qp->sq_log)) {
        rs_sq_flush_one(c, qpn, qp);
    }
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
        qp->sq_ci = qp->sq_comp;
    }
    while ((uint16_t)(qp->sq_pi - qp->sq_comp) && sq < budget) {
        rs_sq_flush_one(c, qpn, qp);
        sq++;
    }
    qp->sq_ci = qp->sq_comp;

    if (qp->srq) {
        if (qp->srq_claimed) {
            struct rs_cqe cqe = {
                .wr_id = qp->srq_wr_id,
                .qpn = cpu_to_le32(qpn),
                .opcode = RS_WR_RECV,
                .status = RS_WC_WR_FLUSH_ERR,
            };

            qp->srq_claimed = false;
            rs_cq_post(c, qp->recv_cq, &cqe, false);
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

typedef struct RSCompWqe {
    struct rs_send_wqe_ctrl w;
    struct rs_sge sge[RS_MAX_SGE];
    unsigned nsge;
    uint64_t len;
    uint32_t npkts;
} RSCompWqe;

/* READ and atomics complete on their own responses, not on an ACK. */
static bool rs_comp_needs_resp(const struct rs_send_wqe_ctrl *w)
{
    return w->opcode == RS_WR_RDMA_READ || w->opcode == RS_WR_ATOMIC_CMP_SWP ||
           w->opcode == RS_WR_ATOMIC_FETCH_ADD;
}

static bool rs_comp_read_wqe(RSCore *c, RSQp *qp, RSCompWqe *e)
{
    uint32_t stride = rs_sq_stride(qp->max_send_sge, qp->max_inline);
    uint64_t addr = qp->sq_addr +
        (uint64_t)(qp->sq_comp & ((1u << qp->sq_log) - 1)) * stride;
    uint32_t mtu = 128u << qp->path_mtu;
    unsigned i;

    if (rs_dma_read(c, addr, &e->w, sizeof(e->w))) {
        return false;
    }
    e->len = 0;
    e->nsge = 0;
    if ((e->w.flags & RS_WQE_F_INLINE) && !rs_comp_needs_resp(&e->w)) {
        e->len = MIN(le32_to_cpu(e->w.inline_len), qp->max_inline);
    } else {
        e->nsge = MIN(e->w.num_sge, qp->max_send_sge);
        if (rs_dma_read(c, addr + sizeof(e->w), e->sge,
                        e->nsge * sizeof(struct rs_sge))) {
            return false;
        }
        for (i = 0; i < e->nsge; i++) {
            e->len += le32_to_cpu(e->sge[i].length);
        }
    }
    e->npkts = e->len ? DIV_ROUND_UP(e->len, mtu) : 1;
    return true;
}

/* n more packets acknowledged. */
static void rs_comp_progress(RSCore *c, RSQp *qp, uint32_t n)
{
    rs_req_acked(c, qp, n);
    qp->last_progress = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    qp->retries = 0;
    qp->rnr_retries = 0;
    qp->gap_retried = false;
    qp->probed = false;
    rs_req_kick(c);
}

enum { RS_COMP_OK, RS_COMP_READ_GAP, RS_COMP_FAIL };

/*
 * Every PSN before end is acknowledged: complete the WQEs it covers.
 * RS_COMP_READ_GAP: it covers a READ whose responses did not all arrive.
 */
static int rs_comp_acked(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t end,
                         RSCompWqe *e)
{
    uint32_t una = qp->una_psn;
    bool progress = false;
    int ret = RS_COMP_OK;

    while (rs_psn_diff(end, qp->una_psn) > 0) {
        uint32_t last;

        if (!rs_comp_read_wqe(c, qp, e)) {
            rs_qp_to_err(c, qpn);
            return RS_COMP_FAIL;
        }
        if (rs_comp_needs_resp(&e->w)) {
            ret = RS_COMP_READ_GAP;
            break;
        }
        last = (qp->comp_psn + e->npkts - 1) & RS_PSN_MASK;
        progress = true;
        if (rs_psn_diff(end, last) <= 0) {
            qp->una_psn = end & RS_PSN_MASK;     /* inside this message */
            break;
        }
        rs_send_cqe(c, qpn, &e->w, RS_WC_SUCCESS, e->len);
        qp->sq_comp++;
        qp->comp_psn = qp->una_psn = (last + 1) & RS_PSN_MASK;
    }
    if (progress) {
        rs_comp_progress(c, qp, rs_psn_diff(qp->una_psn, una));
        if (rs_psn_diff(qp->una_psn, qp->sq_psn) > 0) {
            /* It acknowledges PSNs sent before a rewind: skip them. */
            rs_req_rewind(c, qpn);
        }
    }
    return ret;
}

/* Responses are missing: send again from una_psn, once per gap. */
static void rs_comp_retry(RSCore *c, uint32_t qpn, RSQp *qp, const char *why)
{
    trace_rdma_session_comp_drop(qpn, qp->una_psn, why);
    if (!qp->gap_retried) {
        qp->gap_retried = true;
        rs_req_lost(c, qpn, false);
    }
}

/* The READ response for una_psn. */
static void rs_comp_read_resp(RSCore *c, uint32_t qpn, RSQp *qp,
                              const RSPkt *pkt, RSCompWqe *e)
{
    uint32_t mtu = 128u << qp->path_mtu;
    uint32_t d = rs_psn_diff(pkt->psn, qp->comp_psn);
    uint64_t off = (uint64_t)d * mtu;
    bool last;
    uint8_t st;

    if (!rs_comp_read_wqe(c, qp, e)) {
        rs_qp_to_err(c, qpn);
        return;
    }
    if (e->w.opcode != RS_WR_RDMA_READ) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "READ response for "
                                     "another operation");
        return;
    }
    last = d == e->npkts - 1;
    if (d >= e->npkts || pkt->paylen > mtu ||
        (!last && pkt->paylen != mtu) ||
        (last && off + pkt->paylen != e->len)) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "READ response length");
        rs_send_cqe(c, qpn, &e->w, RS_WC_BAD_RESP_ERR, 0);
        qp->sq_comp++;
        rs_qp_to_err(c, qpn);
        return;
    }
    st = rs_sge_copy(c, qp, qp->av.gid_index, e->sge, e->nsge, off,
                     (void *)pkt->payload, pkt->paylen, true);
    if (st) {
        rs_send_cqe(c, qpn, &e->w, st, 0);
        qp->sq_comp++;
        rs_qp_to_err(c, qpn);
        return;
    }
    qp->una_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if ((rs_opcode[pkt->opcode].flags & RS_OPF_LAST) && qp->rd_out) {
        qp->rd_out--;           /* that READ request is answered */
    }
    if (last) {
        rs_send_cqe(c, qpn, &e->w, RS_WC_SUCCESS, e->len);
        qp->sq_comp++;
        qp->comp_psn = qp->una_psn;
    }
    rs_comp_progress(c, qp, 1);
}

/* The ATOMIC ACKNOWLEDGE for una_psn: the original value to the SGE. */
static void rs_comp_atomic_ack(RSCore *c, uint32_t qpn, RSQp *qp,
                               const RSPkt *pkt, RSCompWqe *e)
{
    uint8_t buf[8], st;

    if (!rs_comp_read_wqe(c, qp, e)) {
        rs_qp_to_err(c, qpn);
        return;
    }
    if (e->w.opcode != RS_WR_ATOMIC_CMP_SWP &&
        e->w.opcode != RS_WR_ATOMIC_FETCH_ADD) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "ATOMIC ACKNOWLEDGE for "
                                     "another operation");
        return;
    }
    stq_le_p(buf, pkt->orig);
    st = rs_sge_copy(c, qp, qp->av.gid_index, e->sge, e->nsge, 0, buf,
                     sizeof(buf), true);
    rs_send_cqe(c, qpn, &e->w, st, st ? 0 : sizeof(buf));
    qp->sq_comp++;
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

/* An ACK, NAK, READ response or ATOMIC ACKNOWLEDGE for RC QP qpn. */
void rs_comp_receive(RSCore *c, uint32_t qpn, const RSPkt *pkt)
{
    const RSOpcodeInfo *oi = &rs_opcode[pkt->opcode];
    RSQp *qp = &c->qps[qpn];
    uint8_t type = (oi->flags & RS_OPF_AETH) ?
                   pkt->syndrome & RS_AETH_TYPE_MASK : RS_AETH_TYPE_ACK;
    bool is_rresp = pkt->opcode >= RS_OP_READ_RESP_FIRST &&
                    pkt->opcode <= RS_OP_READ_RESP_ONLY;
    RSCompWqe e;
    int r;

    if (qp->type != RS_QPT_RC ||
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
    if (type == RS_AETH_TYPE_ACK && !is_rresp &&
        pkt->opcode != RS_OP_ATOMIC_ACK) {
        if (rs_comp_acked(c, qpn, qp, (pkt->psn + 1) & RS_PSN_MASK,
                          &e) == RS_COMP_READ_GAP) {
            rs_comp_retry(c, qpn, qp, "ACK past missing READ or atomic "
                          "responses");
        }
        return;
    }

    /* A NAK or a response acknowledges the PSNs before its own. */
    r = rs_comp_acked(c, qpn, qp, pkt->psn, &e);
    if (r == RS_COMP_FAIL) {
        return;
    }
    if (r == RS_COMP_READ_GAP) {
        rs_comp_retry(c, qpn, qp, "response past missing READ or atomic "
                      "responses");
        return;
    }
    if (is_rresp) {
        rs_comp_read_resp(c, qpn, qp, pkt, &e);
        return;
    }
    if (pkt->opcode == RS_OP_ATOMIC_ACK) {
        rs_comp_atomic_ack(c, qpn, qp, pkt, &e);
        return;
    }
    if (type == RS_AETH_TYPE_RNR) {
        rs_req_rnr_wait(c, qp, pkt->syndrome & ~RS_AETH_TYPE_MASK);
        return;
    }
    if (pkt->syndrome == RS_AETH_NAK_PSN_SEQ) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "sequence NAK");
        rs_req_lost(c, qpn, false);
        return;
    }
    trace_rdma_session_comp_nak(qpn, pkt->psn, pkt->syndrome);
    if (!rs_comp_read_wqe(c, qp, &e)) {
        memset(&e, 0, sizeof(e));
    }
    rs_send_cqe(c, qpn, &e.w, rs_nak_status(pkt->syndrome), 0);
    qp->sq_comp++;
    rs_qp_to_err(c, qpn);
}
