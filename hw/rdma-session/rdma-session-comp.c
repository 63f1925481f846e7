/*
 * rdma-session adapter: the completer (rxe_comp.c's role).
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
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

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
        sge[i] = qp->req.rd_sge[(rec->sge_at + i) % RS_RD_SGE_POOL];
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
    qp->req.last_progress = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    qp->req.retries = 0;
    qp->req.rnr_retries = 0;
    qp->odp.pause_since = 0;
    qp->comp.gap_retried = false;
    qp->req.probed = false;
    if (rs_psn_diff(qp->comp.una_psn, qp->sq_psn) > 0) {
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
    uint32_t una = qp->comp.una_psn;
    bool progress = false;
    int ret = RS_COMP_OK;
    RSSentWqe *rec;

    /* Each turn completes a started WQE or stops: at most RS_SQ_INFLIGHT. */
    while (rs_psn_diff(end, qp->comp.una_psn) > 0 &&
           (rec = rs_sq_started(qp, qp->comp.sq_comp))) {
        uint32_t last;

        if (rs_comp_needs_resp(rec->opcode)) {
            ret = RS_COMP_READ_GAP;
            break;
        }
        last = (qp->comp.psn + rec->npkts - 1) & RS_PSN_MASK;
        progress = true;
        if (rs_psn_diff(end, last) <= 0) {
            qp->comp.una_psn = end & RS_PSN_MASK;     /* inside this message */
            break;
        }
        rs_sq_complete(c, qpn, RS_WC_SUCCESS, rec->len);
        qp->comp.psn = qp->comp.una_psn = (last + 1) & RS_PSN_MASK;
    }
    if (progress) {
        rs_comp_progress(c, qp, rs_psn_diff(qp->comp.una_psn, una));
    }
    return ret;
}

/*
 * Something after una_psn is missing (READ responses, or the responder
 * NAKed a gap): send again from una_psn, once until the next progress.
 */
static void rs_comp_retry(RSCore *c, uint32_t qpn, RSQp *qp, const char *why)
{
    trace_rdma_session_comp_drop(qpn, qp->comp.una_psn, why);
    if (!qp->comp.gap_retried) {
        qp->comp.gap_retried = true;
        rs_req_lost(c, qpn, false);
    }
}

/* The empty READ response that completes a FLUSH or ATOMIC WRITE. */
static void rs_comp_empty_resp(RSCore *c, uint32_t qpn, RSQp *qp,
                               const RSPkt *pkt)
{
    rs_sq_complete(c, qpn, RS_WC_SUCCESS, 0);
    qp->comp.psn = qp->comp.una_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if (qp->req.rd_out) {
        qp->req.rd_out--;
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
    if (rs_odp_wait(c, qpn, &qp->odp.req, RS_ODP_WAIT_LANDING, psn)) {
        if (rs_sq_started(qp, qp->comp.sq_comp)) {
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
        if (!qp->odp.paused || pkt->psn != qp->odp.pause_psn) {
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
        trace_rdma_session_comp_drop(qpn, qp->comp.una_psn,
                                     "PAUSE past missing "
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
    uint32_t d = rs_psn_diff(pkt->psn, qp->comp.psn);
    uint64_t off = (uint64_t)d * mtu;
    RSSentWqe *rec = rs_sq_started(qp, qp->comp.sq_comp);
    bool last;
    uint8_t st;

    /* FLUSH and ATOMIC WRITE: a READ RESPONSE Only without payload. */
    if (rec && (rec->opcode == RS_WR_FLUSH ||
                rec->opcode == RS_WR_ATOMIC_WRITE) &&
        rs_op_code(pkt->opcode) == RS_OP_READ_RESP_ONLY && !pkt->paylen &&
        pkt->psn == qp->comp.psn) {
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
    if (pkt->payiovcnt) {
        /* By reference from a local fabric peer's RAM. */
        struct rs_sge sge[RS_MAX_SGE];
        unsigned i;

        for (i = 0; i < rec->nsge && i < RS_MAX_SGE; i++) {
            sge[i] = qp->req.rd_sge[(rec->sge_at + i) % RS_RD_SGE_POOL];
        }
        st = rs_pkt_to_sges(c, qp, qp->av.gid_index, sge, i, off, pkt);
    } else {
        st = rs_comp_to_sges(c, qp, rec, off, pkt->payload, pkt->paylen);
    }
    if (st == RS_WC_ODP_FAULT) {
        rs_comp_odp_landing(c, qpn, qp, pkt->psn);
        return;
    }
    if (st) {
        rs_sq_complete(c, qpn, st, 0);
        rs_qp_to_err(c, qpn);
        return;
    }
    qp->comp.una_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if ((rs_opcode[pkt->opcode].flags & RS_OPF_LAST) && qp->req.rd_out) {
        qp->req.rd_out--;           /* that READ request is answered */
    }
    if (last) {
        rs_sq_complete(c, qpn, RS_WC_SUCCESS, rec->len);
        qp->comp.psn = qp->comp.una_psn;
    }
    rs_comp_progress(c, qp, 1);
}

/* The ATOMIC ACKNOWLEDGE for una_psn: the original value to the SGE. */
static void rs_comp_atomic_ack(RSCore *c, uint32_t qpn, RSQp *qp,
                               const RSPkt *pkt)
{
    RSSentWqe *rec = rs_sq_started(qp, qp->comp.sq_comp);
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
    qp->comp.psn = qp->comp.una_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if (qp->req.rd_out) {
        qp->req.rd_out--;
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
    if (rs_psn_diff(pkt->psn, qp->req.max_psn) >= 0) {
        trace_rdma_session_comp_drop(qpn, pkt->psn, "PSN not sent yet");
        return;
    }
    if (rs_psn_diff(pkt->psn, qp->comp.una_psn) < 0) {
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
        if (qp->odp.paused && pkt->psn == qp->odp.pause_psn) {
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
    if (rs_sq_started(qp, qp->comp.sq_comp)) {
        rs_sq_complete(c, qpn, rs_nak_status(pkt->syndrome), 0);
    }
    rs_qp_to_err(c, qpn);
}
