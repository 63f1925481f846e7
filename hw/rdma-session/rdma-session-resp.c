/*
 * rdma-session adapter: the responder (rxe_resp.c's role).
 *
 * The network layer (rdma-session-net.c) hands the requests of every
 * frame for one of our QPs to rs_resp_receive(), the requester's frames
 * to our own GIDs too (loopback).  Remote keys resolve in the key table of
 * the network identity of the GID the packet arrived on.
 *
 * RC reliability (IBTA 9.7.5): ACKs are coalesced, one per QP per run of
 * the resp bottom half for the newest PSN that asked for one; a NAK or a
 * READ response makes a pending ACK redundant.  Duplicate SEND/WRITE
 * packets are acknowledged again, not executed; a duplicate READ request
 * is answered again from the READ resource it falls in (the requester may
 * ask for the rest of a READ only).  A SEND that finds the receive queue
 * empty gets an RNR NAK with the QP's min_rnr_timer, and the packets
 * behind it are dropped silently until the requester comes back.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "net/eth.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "rdma-session-fabric.h"
#include "trace.h"

/*
 * Send an ACK/NAK (AETH syndrome) for PSN psn to the QP's peer, or with
 * opcode RS_OP_ATOMIC_ACK the response to an atomic with its original value.
 */
static void rs_resp_send_ack(RSCore *c, uint32_t qpn, RSQp *qp,
                             uint8_t opcode, uint8_t syndrome, uint32_t psn,
                             uint64_t orig)
{
    RSPkt a;
    size_t len;

    memset(&a, 0, sizeof(a));
    if (!rs_qp_tuple(c, qp, qpn, NULL, &a)) {
        return;
    }
    rs_path_resp_tuple(qp, qp->path.resp_sport, &a);
    /* The page-fault pause's opcodes have no transport bits. */
    a.opcode = opcode >= RS_OP_ODP_PAUSE ? opcode :
               opcode | rs_qpt_transport(qp->type);
    a.dqpn = qp->dest_qpn;
    a.psn = psn;
    a.syndrome = syndrome;
    a.msn = qp->resp.msn;
    a.orig = orig;
    trace_rdma_session_resp_ack(qpn, psn, syndrome);
    len = rs_wire_build(c->resp_buf, &a, 0);
    rs_roce_xmit(c, c->resp_buf, len, &a);
}

static void rs_resp_ack(RSCore *c, uint32_t qpn, RSQp *qp, uint8_t syndrome,
                        uint32_t psn)
{
    rs_resp_send_ack(c, qpn, qp, RS_OP_ACK, syndrome, psn, 0);
}

/* A NAK: it also acknowledges what a pending ACK would have. */
static void rs_resp_nak(RSCore *c, uint32_t qpn, RSQp *qp, uint8_t syndrome,
                        uint32_t psn)
{
    if ((syndrome & RS_AETH_TYPE_MASK) == RS_AETH_TYPE_RNR) {
        c->stats.rnr_naks_sent++;
    } else if (syndrome == RS_AETH_NAK_PSN_SEQ) {
        c->stats.seq_naks_sent++;
    }
    qp->resp.ack_pending = false;
    rs_resp_ack(c, qpn, qp, syndrome, psn);
}

/* ACK psn (and everything before it) with the next coalesced ACK. */
static void rs_resp_ack_later(RSCore *c, RSQp *qp, uint32_t psn)
{
    if (!qp->resp.ack_pending || rs_psn_diff(psn, qp->resp.ack_psn) > 0) {
        qp->resp.ack_psn = psn;
    }
    qp->resp.ack_pending = true;
    qemu_bh_schedule(c->resp_bh);
}

static bool rs_qp_receiving(const RSQp *qp)
{
    return qp->state == RS_QPS_RTR || qp->state == RS_QPS_RTS ||
           qp->state == RS_QPS_SQD;
}

/* NAK that ends the connection: the responder's QP goes to ERR. */
static void rs_resp_nak_fatal(RSCore *c, uint32_t qpn, RSQp *qp,
                              uint8_t syndrome, uint32_t psn,
                              const char *why)
{
    trace_rdma_session_resp_nak(qpn, psn, syndrome, why);
    rs_resp_nak(c, qpn, qp, syndrome, psn);
    qp->resp.op = RS_RESP_NONE;
    /* The responder's own error, affiliated with its QP (IBTA 11.6.3.1). */
    rs_qp_event(c, qpn, syndrome == RS_AETH_NAK_REM_ACCESS ?
                RS_EV_QP_ACCESS_ERR : syndrome == RS_AETH_NAK_INV_REQ ?
                RS_EV_QP_REQ_ERR : RS_EV_QP_FATAL);
    rs_qp_to_err(c, qpn);
}

typedef struct RSRecvWqe {
    struct rs_recv_wqe_ctrl w;
    struct rs_sge sge[RS_MAX_SGE];
    unsigned nsge;
    uint64_t total;
} RSRecvWqe;

/*
 * On-demand paging: the request at psn met a page fault (c->odp_fault)
 * and is not executed.  The peer's requester pauses (PAUSE, if it is an
 * adapter) or waits out an RNR timer (the RNR NAK, any requester); what
 * follows is dropped until it sends from psn again.  A fault that failed
 * ends the QP.
 */
#define RS_ODP_PAUSE_TIMER  28      /* RNR timer code: 163.84 ms */

static void rs_resp_odp_fault(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t psn)
{
    if (rs_odp_wait(c, qpn, &qp->odp.resp, RS_ODP_WAIT_RESP, psn)) {
        rs_resp_odp_fail(c, qpn, qp);
        return;
    }
    if (c->p.odp_pause) {
        c->stats.odp_pauses_sent++;
        trace_rdma_session_odp_pause_tx(qpn, psn, false);
        rs_resp_send_ack(c, qpn, qp, RS_OP_ODP_PAUSE,
                         RS_AETH_TYPE_RNR | RS_ODP_PAUSE_TIMER, psn, 0);
    }
    trace_rdma_session_resp_nak(qpn, psn, RS_AETH_TYPE_RNR, "ODP page fault");
    rs_resp_nak(c, qpn, qp, RS_AETH_TYPE_RNR | (qp->min_rnr_timer & 0x1f),
                psn);
    qp->resp.seq_nak_sent = true;
}

/* The fault of the request at psn is resolved: the peer may go on. */
void rs_resp_odp_resume(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t psn)
{
    if (c->p.odp_pause && rs_qp_receiving(qp) && psn == qp->rq_psn) {
        trace_rdma_session_odp_pause_tx(qpn, psn, true);
        rs_resp_send_ack(c, qpn, qp, RS_OP_ODP_RESUME, RS_AETH_ACK, psn, 0);
    }
    qemu_bh_schedule(c->resp_bh);
}

/* The responder's fault failed: IBTA's answer to memory it cannot reach. */
void rs_resp_odp_fail(RSCore *c, uint32_t qpn, RSQp *qp)
{
    rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_REM_ACCESS, qp->odp.resp.psn,
                      "ODP page fault failed");
}

/*
 * Take the next receive WQE of the QP's SRQ and keep a copy in the QP for
 * the rest of the message: other QPs take the following ones meanwhile.
 * The caller has checked that the SRQ is not empty.
 */
static void rs_srq_claim(RSCore *c, uint32_t qpn, RSQp *qp)
{
    RSSrq *s = &c->srqs[qp->srq];
    uint64_t addr = s->ring + (uint64_t)(s->ci & ((1u << s->log_size) - 1)) *
                    rs_rq_stride(s->max_sge);
    struct rs_recv_wqe_ctrl w;

    memset(qp->resp.srq_sge, 0, sizeof(qp->resp.srq_sge));
    if (rs_dma_read(c, addr, &w, sizeof(w))) {
        memset(&w, 0, sizeof(w));
        qp->resp.srq_nsge = RS_SRQ_WQE_BAD_DMA;
    } else if (w.num_sge > s->max_sge) {
        qp->resp.srq_nsge = RS_SRQ_WQE_BAD_SGE;
    } else if (rs_dma_read(c, addr + sizeof(w), qp->resp.srq_sge,
                           w.num_sge * sizeof(struct rs_sge))) {
        qp->resp.srq_nsge = RS_SRQ_WQE_BAD_DMA;
    } else {
        qp->resp.srq_nsge = w.num_sge;
    }
    qp->resp.srq_wr_id = w.wr_id;
    qp->resp.srq_claimed = true;
    s->ci++;
    trace_rdma_session_srq_take(qp->srq, qpn, s->ci);
    if (s->limit && (uint16_t)(s->pi - s->ci) < s->limit) {
        s->limit = 0;
        rs_core_raise_event(c, RS_EV_SRQ_LIMIT_REACHED,
                            rs_handle(qp->srq, s->gen),
                            (uint16_t)(s->pi - s->ci));
    }
}

/* The receive WQE at rq_ci, or the one taken from the SRQ; RS_WC_*. */
static uint8_t rs_resp_get_rwqe(RSCore *c, uint32_t qpn, RSQp *qp,
                                uint32_t gid, RSRecvWqe *r)
{
    uint64_t addr = qp->rq_addr + (uint64_t)(qp->resp.rq_ci &
        ((1u << qp->rq_log) - 1)) * rs_rq_stride(qp->max_recv_sge);

    memset(r, 0, sizeof(*r));
    if (qp->srq) {
        if (!qp->resp.srq_claimed) {
            rs_srq_claim(c, qpn, qp);
        }
        r->w.wr_id = qp->resp.srq_wr_id;
        if (qp->resp.srq_nsge == RS_SRQ_WQE_BAD_DMA) {
            return RS_WC_LOC_QP_OP_ERR;
        }
        if (qp->resp.srq_nsge == RS_SRQ_WQE_BAD_SGE) {
            return RS_WC_LOC_LEN_ERR;
        }
        r->nsge = qp->resp.srq_nsge;
        memcpy(r->sge, qp->resp.srq_sge, sizeof(r->sge));
        return rs_sge_check(c, qp, gid, r->sge, r->nsge,
                            RS_ACCESS_LOCAL_WRITE, &r->total);
    }
    if (rs_dma_read(c, addr, &r->w, sizeof(r->w))) {
        return RS_WC_LOC_QP_OP_ERR;
    }
    if (r->w.num_sge > qp->max_recv_sge) {
        return RS_WC_LOC_LEN_ERR;
    }
    r->nsge = r->w.num_sge;
    if (rs_dma_read(c, addr + sizeof(r->w), r->sge,
                    r->nsge * sizeof(struct rs_sge))) {
        return RS_WC_LOC_QP_OP_ERR;
    }
    return rs_sge_check(c, qp, gid, r->sge, r->nsge, RS_ACCESS_LOCAL_WRITE,
                        &r->total);
}

/*
 * A SEND longer than the receive WQE or than max-msg-size (which also
 * keeps the 32-bit offset into the message from wrapping).
 */
static bool rs_resp_send_too_long(RSCore *c, const RSQp *qp,
                                  const RSPkt *pkt, const RSRecvWqe *r)
{
    uint64_t end = (uint64_t)qp->resp.off + pkt->paylen;

    return end > r->total || end > c->p.max_msg_size;
}

static bool rs_rq_empty(RSCore *c, RSQp *qp)
{
    if (qp->srq) {
        RSSrq *s = &c->srqs[qp->srq];
        uint16_t n = s->pi - s->ci;

        /* A producer more than a ring ahead is a guest error: empty. */
        return !qp->resp.srq_claimed && (!n || n > (1u << s->log_size));
    }
    if (!(uint16_t)(qp->rq_pi - qp->resp.rq_ci)) {
        /* Posted through a doorbell record without a doorbell? */
        rs_dbrec_rq_fetch(c, qp - c->qps);
    }
    return !(uint16_t)(qp->rq_pi - qp->resp.rq_ci);
}

static void rs_recv_cqe(RSCore *c, uint32_t qpn, RSQp *qp,
                        const RSRecvWqe *r, const RSPkt *pkt,
                        uint8_t status, uint32_t byte_len, uint8_t opcode)
{
    const RSOpcodeInfo *oi = &rs_opcode[pkt->opcode];
    struct rs_cqe cqe = {
        .wr_id = r->w.wr_id,
        .byte_len = cpu_to_le32(byte_len),
        .qpn = cpu_to_le32(qpn),
        .opcode = opcode,
        .status = status,
    };

    if (oi->flags & RS_OPF_IMM) {
        cqe.imm_or_inv = cpu_to_le32(pkt->imm);
        cqe.wc_flags |= RS_WC_F_IMM;
    } else if (oi->flags & RS_OPF_IETH) {
        cqe.imm_or_inv = cpu_to_le32(pkt->ieth);
        cqe.wc_flags |= RS_WC_F_INV;
    }
    if (oi->flags & RS_OPF_DETH) {
        cqe.src_qp = cpu_to_le32(pkt->sqpn);
        cqe.wc_flags |= RS_WC_F_GRH |
                        (pkt->v6 ? RS_WC_F_IPV6 : RS_WC_F_IPV4);
        if (pkt->vlan && rs_qp_privileged(c, qp)) {
            /* The kernel answers from the GID on this VLAN (ABI 1.9). */
            cqe.wc_flags |= RS_WC_F_VLAN;
            cqe.srqn = cpu_to_le32(RS_VLAN_TCI(pkt->vlan));
        }
    }
    if (qp->type == RS_QPT_XRC_TGT) {
        cqe.srqn = cpu_to_le32(qp->srq);
    }
    if (qp->type == RS_QPT_DC_CTX) {
        /* Through a DC context: the DCT's number, the DCI's. */
        cqe.qpn = cpu_to_le32(qp->dc.dct);
        cqe.src_qp = cpu_to_le32(qp->dest_qpn);
    }
    if (qp->srq) {
        qp->resp.srq_claimed = false;
    } else {
        qp->resp.rq_ci++;
    }
    rs_cq_post(c, qp->recv_cq, &cqe, pkt->se);
}

void rs_resp_ud(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                const RSPkt *pkt)
{
    uint8_t grh[RS_GRH_LEN] = { 0 };
    RSRecvWqe r;
    uint8_t st;

    if (!rs_qp_receiving(qp)) {
        trace_rdma_session_resp_drop(qpn, pkt->psn, "QP not receiving");
        return;
    }
    if (pkt->qkey != qp->qkey) {
        trace_rdma_session_resp_drop(qpn, pkt->psn, "Q_Key mismatch");
        return;
    }
    if (pkt->paylen > (128u << qp->path_mtu) || rs_rq_empty(c, qp)) {
        trace_rdma_session_resp_drop(qpn, pkt->psn,
                                     "too long or no receive WQE");
        return;
    }
    st = rs_resp_get_rwqe(c, qpn, qp, gid, &r);
    if (!st && r.total < RS_GRH_LEN + pkt->paylen) {
        st = RS_WC_LOC_LEN_ERR;
    }
    if (!st) {
        /* A datagram that faults is dropped whole, its GRH too. */
        st = rs_sge_ready(c, qp, gid, r.sge, r.nsge, 0,
                          RS_GRH_LEN + pkt->paylen, true);
    }
    if (!st) {
        /*
         * RoCEv2: the IPv6 header is the GRH; an IPv4 header goes in the
         * GRH's last 20 bytes.
         */
        if (pkt->v6) {
            memcpy(grh, pkt->l3, RS_IP6_HLEN);
        } else {
            memcpy(grh + 20, pkt->l3, RS_IP4_HLEN);
        }
        st = rs_sge_copy(c, qp, gid, r.sge, r.nsge, 0, grh, sizeof(grh),
                         true);
    }
    if (!st) {
        st = rs_sge_copy(c, qp, gid, r.sge, r.nsge, RS_GRH_LEN,
                         (void *)pkt->payload, pkt->paylen, true);
    }
    if (st == RS_WC_ODP_FAULT) {
        /* Unreliable: the datagram is lost, the WQE waits for the next. */
        trace_rdma_session_resp_drop(qpn, pkt->psn, "ODP page fault");
        rs_odp_drop_fault(c);
        return;
    }
    rs_recv_cqe(c, qpn, qp, &r, pkt, st, RS_GRH_LEN + pkt->paylen,
                RS_WR_RECV);
}

/*
 * The NAK for an access rs_mr_rw() failed: an indirect or pattern key's
 * entry refusing it is a protection error, anything else the DMA's.
 */
static uint8_t rs_resp_rw_nak(uint8_t st)
{
    return st == RS_STATUS_MKEY_PROT ? RS_AETH_NAK_REM_ACCESS :
                                       RS_AETH_NAK_REM_OP;
}

/*
 * rkey check for RDMA WRITE/READ: QP, PD and MR rights, bounds.  A request
 * of zero bytes names no memory: its R_Key and VA are not checked (IBTA
 * C9-88), and *mrp is NULL.
 */
static bool rs_resp_rkey_pd(RSCore *c, RSQp *qp, uint32_t pd, uint32_t gid,
                            uint32_t rkey, uint64_t va, uint32_t len,
                            uint16_t right, RSMr **mrp)
{
    RSMr *mr;

    *mrp = NULL;
    if (!(qp->access & right)) {
        return false;
    }
    if (!len) {
        return true;
    }
    mr = rs_mkey_lookup(c, gid, rkey);
    if (mr && mr->mw_type) {
        mr = rs_mw_remote(c, qp, pd, mr, va, len, right);
        *mrp = mr;
        return mr != NULL;
    }
    if (!mr || mr->pd != pd || !(mr->access & right) ||
        va < mr->iova || va + len < va ||
        va + len > mr->iova + mr->length) {
        return false;
    }
    *mrp = mr;
    return true;
}

/* ... in the QP's PD (an XRC target's: its current SRQ's). */
static bool rs_resp_rkey(RSCore *c, RSQp *qp, uint32_t gid, uint32_t rkey,
                         uint64_t va, uint32_t len, uint16_t right,
                         RSMr **mrp)
{
    return rs_resp_rkey_pd(c, qp, qp->pd, gid, rkey, va, len, right, mrp);
}

/*
 * Responses the responder owes (READ responses, ATOMIC ACKNOWLEDGEs) are
 * produced at most RS_RESP_BUDGET packets per received frame (a bundle
 * is one frame: its READ requests share them) in the receive path, then
 * RS_RESP_BUDGET per QP per run of resp_bh, and not while the backend holds one
 * of our frames: one READ request of max-msg-size bytes is work for a
 * long time, never one long stall of the main loop or an unbounded queue.
 * They leave in PSN order, so anything that would acknowledge later PSNs
 * (a coalesced ACK, an ATOMIC ACKNOWLEDGE, a NAK) waits behind them.
 */
/* A READ resource answers a duplicate request at most this often. */
#define RS_READ_REPLAY_NS   (10 * SCALE_MS)

static bool rs_resp_owes(const RSQp *qp)
{
    unsigned i;

    for (i = 0; i < RS_MAX_RD_ATOMIC; i++) {
        const RSRdRes *r = &qp->resp.rd_res[i];

        if (r->valid && r->next < r->stop) {
            return true;
        }
    }
    for (i = 0; i < RS_ATOMIC_RES; i++) {
        if (qp->resp.atomic_res[i].valid && qp->resp.atomic_res[i].owed) {
            return true;
        }
    }
    return false;
}

/* Send the next packet of READ resource rd; false if the QP failed. */
static bool rs_resp_read_pkt(RSCore *c, uint32_t qpn, RSQp *qp, RSRdRes *rd)
{
    uint32_t mtu = 128u << qp->path_mtu;
    uint64_t off = (uint64_t)rd->next * mtu;
    uint32_t n = rd->len ? MIN(mtu, rd->len - off) : 0;
    bool ref = false;
    RSMr *mr;
    size_t len;
    uint8_t st;
    RSPkt p;

    memset(&p, 0, sizeof(p));
    if (!rs_qp_tuple(c, qp, qpn, NULL, &p)) {
        rd->next = rd->stop;    /* no way to the peer any more */
        return true;
    }
    rs_path_resp_tuple(qp, rd->sport ? rd->sport : qp->path.resp_sport, &p);
    p.dqpn = qp->dest_qpn;
    p.syndrome = RS_AETH_ACK;
    p.msn = qp->resp.msn;
    p.psn = (rd->psn + rd->next) & RS_PSN_MASK;
    if (rd->stop - rd->first == 1) {
        p.opcode = RS_OP_READ_RESP_ONLY;
    } else if (rd->next == rd->first) {
        p.opcode = RS_OP_READ_RESP_FIRST;
    } else if (rd->next == rd->stop - 1) {
        p.opcode = RS_OP_READ_RESP_LAST;
    } else {
        p.opcode = RS_OP_READ_RESP_MIDDLE;
    }
    p.opcode |= rs_qpt_transport(qp->type);
    if (n) {
        /*
         * Checked for every packet: the MR may be gone meanwhile.  An
         * XRC target's later requests may name SRQs of other PDs: the
         * READ's own SRQ's PD counts.
         */
        uint32_t pd = qp->type == RS_QPT_XRC_TGT ?
                      rs_xrc_srq_pd(c, qp, rd->srq) : qp->pd;

        if (!rs_resp_rkey_pd(c, qp, pd, rd->gid, rd->rkey, rd->va + off, n,
                             RS_ACCESS_REMOTE_READ, &mr)) {
            rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_REM_ACCESS, p.psn,
                              "READ rkey gone");
            return false;
        }
        if (c->fabric && rs_fabric_ref_begin(c, &p, n)) {
            /* To a local fabric member: the range the rkey granted. */
            st = rs_mr_rw(c, mr, rd->va + off,
                          c->resp_buf + rs_wire_payload_off(&p), n, false);
            ref = rs_fabric_ref_end(c);
            if (st && ref) {
                rs_fabric_ref_drop(c);
                ref = false;
            }
        }
        if (!ref) {
            st = rs_mr_rw(c, mr, rd->va + off,
                          c->resp_buf + rs_wire_payload_off(&p), n, false);
        }
        if (st == RS_STATUS_ODP_FAULT) {
            /* The responses stop until the page is there. */
            if (rs_odp_wait(c, qpn, &qp->odp.resp, RS_ODP_WAIT_READ,
                            p.psn)) {
                rs_resp_odp_fail(c, qpn, qp);
                return false;
            }
            return true;
        }
        if (st) {
            rs_resp_nak_fatal(c, qpn, qp, rs_resp_rw_nak(st), p.psn,
                              "READ DMA");
            return false;
        }
    }
    rd->next++;
    len = rs_wire_build(c->resp_buf, &p, ref ? 0 : n);
    rs_roce_xmit(c, c->resp_buf, len, &p);
    return true;
}

/*
 * Send what QP qpn owes, oldest PSN first, at most *budget packets (it
 * counts them down); true if some is left for later.
 */
static bool rs_resp_send_owed(RSCore *c, uint32_t qpn, RSQp *qp,
                              unsigned *budget)
{
    for (;;) {
        RSAtomicRes *at = NULL;
        RSRdRes *rd = NULL;
        int32_t best = INT32_MAX;
        unsigned i;

        if (qp->odp.resp.mr && qp->odp.resp.kind == RS_ODP_WAIT_READ) {
            return false;       /* a READ response waits for a page */
        }
        for (i = 0; i < RS_MAX_RD_ATOMIC; i++) {
            RSRdRes *r = &qp->resp.rd_res[i];
            int32_t d = rs_psn_diff(r->psn + r->next, qp->rq_psn);

            if (r->valid && r->next < r->stop && d < best) {
                best = d;
                rd = r;
            }
        }
        for (i = 0; i < RS_ATOMIC_RES; i++) {
            RSAtomicRes *a = &qp->resp.atomic_res[i];
            int32_t d = rs_psn_diff(a->psn, qp->rq_psn);

            if (a->valid && a->owed && d < best) {
                best = d;
                at = a;
                rd = NULL;
            }
        }
        if (!rd && !at) {
            return false;
        }
        if (!*budget || rs_roce_tx_busy(c)) {
            return true;
        }
        --*budget;
        if (at) {
            at->owed = false;
            rs_resp_send_ack(c, qpn, qp, RS_OP_ATOMIC_ACK, RS_AETH_ACK,
                             at->psn, at->orig);
        } else if (!rs_resp_read_pkt(c, qpn, qp, rd)) {
            return false;
        }
    }
}

/*
 * Live migration: an RNR NAK, RNR timer code timer, at the PSN the
 * responder expects.  It acknowledges everything before that PSN and tells
 * the peer's requester to send from there again once the timer ran out;
 * rnr_retry 7 (what applications set) waits without limit.  Nothing of
 * the QP changes.  Skipped while READ or atomic responses are owed: the
 * peer expects those at older PSNs, and the engine sends them meanwhile.
 * False if nothing was sent.
 */
bool rs_resp_rnr_prompt(RSCore *c, uint32_t qpn, uint8_t timer)
{
    RSQp *qp = &c->qps[qpn];

    if (!qp->valid || !rs_qpt_rc_responder(qp->type) ||
        !rs_qp_receiving(qp) || rs_resp_owes(qp)) {
        return false;
    }
    rs_resp_ack(c, qpn, qp, RS_AETH_TYPE_RNR | (timer & 0x1f), qp->rq_psn);
    return true;
}

/* A response is owed: send what the budget allows now, the rest later. */
static void rs_resp_owe(RSCore *c, uint32_t qpn, RSQp *qp)
{
    if (rs_resp_send_owed(c, qpn, qp, &c->rx_resp_budget)) {
        qemu_bh_schedule(c->resp_bh);
    }
}

/* resp_bh: owed responses, then the coalesced ACKs behind them. */
void rs_resp_process(void *opaque)
{
    RSCore *c = opaque;
    bool more = false;
    uint32_t qpn;

    if (!rs_port_active(c)) {
        return;
    }
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];
        unsigned budget = RS_RESP_BUDGET;

        if (!qp->valid) {
            continue;
        }
        if (rs_qpt_rc_responder(qp->type) && rs_qp_receiving(qp) &&
            rs_resp_send_owed(c, qpn, qp, &budget)) {
            more = true;
            continue;
        }
        if (!qp->resp.ack_pending) {
            continue;
        }
        qp->resp.ack_pending = false;
        if (rs_qpt_rc_responder(qp->type) && rs_qp_receiving(qp)) {
            rs_resp_ack(c, qpn, qp, RS_AETH_ACK, qp->resp.ack_psn);
        }
    }
    rs_bundle_flush(c);         /* nothing waits past the engine's run */
    if (more && !rs_roce_tx_busy(c)) {
        qemu_bh_schedule(c->resp_bh);
    }
}

/*
 * Compare-and-swap or fetch-and-add on 8 aligned bytes of an MR.  The
 * engine runs in bottom halves under the BQL, so no other operation of the
 * device touches guest memory between the read and the write
 * (IB_ATOMIC_HCA).  Memory holds the guest's (little-endian) value; the
 * wire carries big-endian ones.  The original value is kept in a responder
 * resource so that a duplicate request is answered, not executed again.
 */
static void rs_resp_atomic(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                           const RSPkt *pkt)
{
    RSAtomicRes *res;
    uint64_t orig, val;
    uint8_t buf[8];
    RSMr *mr;

    if (pkt->va & 7) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "misaligned atomic");
        return;
    }
    res = &qp->resp.atomic_res[qp->resp.atomic_next];
    if (res->valid && res->owed) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "more atomics outstanding than allowed");
        return;
    }
    if (!rs_resp_rkey(c, qp, gid, pkt->rkey, pkt->va, sizeof(buf),
                      RS_ACCESS_REMOTE_ATOMIC, &mr) ||
        !rs_mkl_single(c, mr, pkt->va, sizeof(buf))) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn,
                          "atomic rkey, rights or bounds");
        return;
    }
    /* The read and the write happen together or not at all. */
    if ((mr->flags & RS_MR_F_ODP) &&
        !rs_odp_probe(c, mr - c->mrs, pkt->va, sizeof(buf), true)) {
        rs_resp_odp_fault(c, qpn, qp, pkt->psn);
        return;
    }
    qp->resp.atomic_next = (qp->resp.atomic_next + 1) % RS_ATOMIC_RES;
    /*
     * A peer device's BAR cannot do the read-modify-write as one: guest
     * RAM only (ConnectX needs PCIe atomics from the peer for it).
     */
    c->data_ram_only = true;
    if (rs_mr_rw(c, mr, pkt->va, buf, sizeof(buf), false)) {
        c->data_ram_only = false;
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_REM_OP, pkt->psn,
                          "atomic DMA");
        return;
    }
    orig = ldq_le_p(buf);
    if (rs_op_code(pkt->opcode) == RS_OP_CMP_SWAP) {
        val = orig == pkt->compare ? pkt->swap_add : orig;
    } else {
        val = orig + pkt->swap_add;
    }
    stq_le_p(buf, val);
    if (val != orig && rs_mr_rw(c, mr, pkt->va, buf, sizeof(buf), true)) {
        c->data_ram_only = false;
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_REM_OP, pkt->psn,
                          "atomic DMA");
        return;
    }
    c->data_ram_only = false;
    trace_rdma_session_resp_atomic(qpn, pkt->psn, pkt->va, orig, val);
    res->valid = true;
    res->owed = true;
    res->psn = pkt->psn;
    res->orig = orig;
    qp->resp.msn++;
    qp->rq_psn = (pkt->psn + 1) & RS_PSN_MASK;
    qp->resp.ack_pending = false;    /* the response acknowledges it */
    rs_resp_owe(c, qpn, qp);
}

/* A duplicate atomic: the saved result, or nothing if it is gone. */
static void rs_resp_atomic_dup(RSCore *c, uint32_t qpn, RSQp *qp,
                               const RSPkt *pkt)
{
    unsigned i;

    for (i = 0; i < RS_ATOMIC_RES; i++) {
        RSAtomicRes *res = &qp->resp.atomic_res[i];

        if (res->valid && res->psn == pkt->psn) {
            res->owed = true;
            rs_resp_owe(c, qpn, qp);
            return;
        }
    }
    trace_rdma_session_resp_drop(qpn, pkt->psn, "duplicate atomic unknown");
}

/* READ resources in use: max_dest_rd_atomic, at least one. */
static unsigned rs_resp_nres(RSQp *qp)
{
    return MIN(MAX(qp->max_dest_rd_atomic, 1), RS_MAX_RD_ATOMIC);
}

/*
 * A duplicate FLUSH or ATOMIC WRITE: the empty READ RESPONSE Only again
 * from the resource of its PSN, as often as a READ's; never executed
 * again.  Found by PSN alone, as rxe does: soft-RoCE sends an ATOMIC
 * WRITE again with a RETH address of 0.
 */
static void rs_resp_flush_aw_dup(RSCore *c, uint32_t qpn, RSQp *qp,
                                 const RSPkt *pkt)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    unsigned i;

    for (i = 0; i < RS_MAX_RD_ATOMIC; i++) {
        RSRdRes *r = &qp->resp.rd_res[i];

        if (!r->valid || r->psn != pkt->psn || r->len || r->npkts != 1) {
            continue;
        }
        if (r->replay_ns && now - r->replay_ns < RS_READ_REPLAY_NS) {
            break;
        }
        trace_rdma_session_resp_drop(qpn, pkt->psn,
                                     "duplicate FLUSH/ATOMIC WRITE: replay");
        r->replay_ns = now;
        r->first = r->next = 0;
        r->stop = 1;
        rs_resp_owe(c, qpn, qp);
        return;
    }
    trace_rdma_session_resp_drop(qpn, pkt->psn, "duplicate FLUSH/ATOMIC "
                                 "WRITE: no such resource or replayed");
}

/*
 * A request with a PSN before the expected one: its ACK or its READ
 * responses were lost.  SEND/WRITE are acknowledged again, not executed
 * (C9-105); a READ is answered again from its resource (C9-106), for the
 * part of it the request names; an atomic from its saved result.
 */
static void rs_resp_duplicate(RSCore *c, uint32_t qpn, RSQp *qp,
                              uint32_t gid, const RSPkt *pkt)
{
    uint32_t mtu = 128u << qp->path_mtu;
    RSRdRes *res = NULL;
    uint32_t npkts, d = 0;
    int64_t now;
    unsigned i;
    RSMr *mr;

    if (rs_opcode[pkt->opcode].flags & RS_OPF_ATOMIC) {
        rs_resp_atomic_dup(c, qpn, qp, pkt);
        return;
    }
    if (rs_opcode[pkt->opcode].flags &
        (RS_OPF_FLUSH | RS_OPF_ATOMIC_WRITE)) {
        rs_resp_flush_aw_dup(c, qpn, qp, pkt);
        return;
    }
    if (!(rs_opcode[pkt->opcode].flags & RS_OPF_READ)) {
        trace_rdma_session_resp_drop(qpn, pkt->psn, "duplicate: ACK again");
        rs_resp_ack_later(c, qp, (qp->rq_psn - 1) & RS_PSN_MASK);
        return;
    }
    for (i = 0; i < RS_MAX_RD_ATOMIC; i++) {
        RSRdRes *r = &qp->resp.rd_res[i];

        d = rs_psn_diff(pkt->psn, r->psn);
        if (r->valid && (int32_t)d >= 0 && d < r->npkts) {
            res = r;
            break;
        }
    }
    npkts = pkt->dmalen ? DIV_ROUND_UP(pkt->dmalen, mtu) : 1;
    /* Only a part of the original, from the packet at its PSN on. */
    if (!res || pkt->rkey != res->rkey ||
        pkt->va != res->va + (uint64_t)d * mtu ||
        d + npkts > res->npkts ||
        (uint64_t)d * mtu + pkt->dmalen > res->len) {
        trace_rdma_session_resp_drop(qpn, pkt->psn,
                                     "duplicate READ: no such resource");
        return;
    }
    if (!rs_resp_rkey(c, qp, gid, pkt->rkey, pkt->va, pkt->dmalen,
                      RS_ACCESS_REMOTE_READ, &mr)) {
        trace_rdma_session_resp_drop(qpn, pkt->psn,
                                     "duplicate READ: rkey gone");
        return;
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    if (res->replay_ns && now - res->replay_ns < RS_READ_REPLAY_NS) {
        trace_rdma_session_resp_drop(qpn, pkt->psn,
                                     "duplicate READ: replayed just now");
        return;
    }
    trace_rdma_session_resp_drop(qpn, pkt->psn, "duplicate READ: replay");
    res->replay_ns = now;
    res->first = res->next = d;
    res->stop = d + npkts;
    res->sport = pkt->sport;    /* the path the request came back on */
    rs_resp_owe(c, qpn, qp);
}

/*
 * RC's PSN check (rxe's check_psn): true for the expected PSN.  A
 * duplicate is answered again, a gap gets one sequence NAK until the
 * expected PSN arrives.
 */
static bool rs_resp_rc_psn(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                           const RSPkt *pkt)
{
    int32_t d = rs_psn_diff(pkt->psn, qp->rq_psn);

    if (d < 0) {
        rs_resp_duplicate(c, qpn, qp, gid, pkt);
        return false;
    }
    if (d > 0 && rs_resp_owes(qp)) {
        /* A NAK would overtake responses: lost, as on the wire. */
        trace_rdma_session_resp_drop(qpn, pkt->psn, "gap behind responses");
        return false;
    }
    if (d > 0) {
        trace_rdma_session_resp_nak(qpn, pkt->psn, RS_AETH_NAK_PSN_SEQ,
                                    "PSN sequence error");
        if (!qp->resp.seq_nak_sent) {
            qp->resp.seq_nak_sent = true;
            rs_resp_nak(c, qpn, qp, RS_AETH_NAK_PSN_SEQ, qp->rq_psn);
        }
        return false;
    }
    qp->resp.seq_nak_sent = false;
    return true;
}

/*
 * RC's opcode sequence and length checks (rxe's check_op_seq and
 * check_length): FIRST/ONLY start a message, MIDDLE/LAST continue it, and
 * every packet but the last carries a full path MTU.
 */
static bool rs_resp_rc_seq(RSCore *c, uint32_t qpn, RSQp *qp,
                           const RSPkt *pkt)
{
    uint32_t mtu = 128u << qp->path_mtu;
    uint32_t f = rs_opcode[pkt->opcode].flags;

    if ((qp->resp.op == RS_RESP_NONE && !(f & RS_OPF_FIRST)) ||
        (qp->resp.op == RS_RESP_SEND &&
         ((f & RS_OPF_FIRST) || !(f & RS_OPF_SEND))) ||
        (qp->resp.op == RS_RESP_WRITE &&
         ((f & RS_OPF_FIRST) || !(f & RS_OPF_WRITE)))) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "opcode out of sequence");
        return false;
    }
    if (pkt->paylen > mtu ||
        (!(f & RS_OPF_LAST) && (f & RS_OPF_PAYLOAD) && pkt->paylen != mtu)) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "payload length");
        return false;
    }
    return true;
}

/*
 * A READ request: a READ resource to send the responses from; they
 * acknowledge the request.
 */
static void rs_resp_read_req(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                             const RSPkt *pkt)
{
    uint32_t mtu = 128u << qp->path_mtu;
    RSRdRes *res;
    RSMr *mr;

    if (!rs_resp_rkey(c, qp, gid, pkt->rkey, pkt->va, pkt->dmalen,
                      RS_ACCESS_REMOTE_READ, &mr) ||
        pkt->dmalen > c->p.max_msg_size) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn,
                          "READ rkey, rights or bounds");
        return;
    }
    res = &qp->resp.rd_res[qp->resp.rd_head % rs_resp_nres(qp)];
    if (res->valid && res->next < res->stop) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "more READs outstanding than allowed");
        return;
    }
    /* Its first pages must be there: a NAK can only come before them. */
    if (mr && (mr->flags & RS_MR_F_ODP) &&
        !rs_odp_probe(c, mr - c->mrs, pkt->va, pkt->dmalen, false)) {
        rs_resp_odp_fault(c, qpn, qp, pkt->psn);
        return;
    }
    qp->resp.rd_head++;
    *res = (RSRdRes) {
        .valid = true,
        .psn = pkt->psn,
        .npkts = pkt->dmalen ? DIV_ROUND_UP(pkt->dmalen, mtu) : 1,
        .va = pkt->va,
        .rkey = pkt->rkey,
        .len = pkt->dmalen,
        .gid = gid,
        .srq = qp->type == RS_QPT_XRC_TGT ? qp->srq : 0,
        .sport = pkt->sport,
    };
    res->stop = res->npkts;
    qp->rq_psn = (qp->rq_psn + res->npkts) & RS_PSN_MASK;
    qp->resp.msn++;
    qp->resp.ack_pending = false;    /* the responses acknowledge it */
    rs_resp_owe(c, qpn, qp);
}

/*
 * The rights a FLUSH needs for its placement type; 0 if the FETH is not
 * one the IBTA defines (no placement type, reserved bits or selectivity).
 */
static uint16_t rs_resp_flush_right(uint32_t feth)
{
    uint32_t plt = feth & RS_FLUSH_PLT_MASK;
    uint32_t sel = (feth & RS_FLUSH_SEL_MASK) >> RS_FLUSH_SEL_SHIFT;

    if (!plt || (plt & ~(RS_FLUSH_PLT_GLOBAL | RS_FLUSH_PLT_PERSISTENT)) ||
        sel > RS_FLUSH_SEL_MR ||
        (feth & ~(RS_FLUSH_PLT_MASK | RS_FLUSH_SEL_MASK))) {
        return 0;
    }
    return ((plt & RS_FLUSH_PLT_GLOBAL) ? RS_ACCESS_FLUSH_GLOBAL : 0) |
           ((plt & RS_FLUSH_PLT_PERSISTENT) ? RS_ACCESS_FLUSH_PERSISTENT : 0);
}

/*
 * The rkey of a FLUSH or ATOMIC WRITE: an MR of the QP's PD with every
 * bit of right, or a window (rs_mw_remote: bound, its PD, a type 2
 * window's QP, every bit of right in the window's rights), and then the
 * MR the window is bound to.  The range must be inside the MR or the
 * window, unless whole (a FLUSH of the whole MR or window names none).
 * NULL if it names nothing the request may use.
 */
static RSMr *rs_resp_flush_aw_key(RSCore *c, RSQp *qp, uint32_t gid,
                                  const RSPkt *pkt, uint16_t right,
                                  bool whole)
{
    RSMr *mr = rs_mkey_lookup(c, gid, pkt->rkey);
    uint64_t va = pkt->va;
    uint32_t len = pkt->dmalen;

    if (!mr) {
        return NULL;
    }
    if (whole) {
        va = mr->iova;
        len = 0;
    }
    if (mr->mw_type) {
        return rs_mw_remote(c, qp, qp->pd, mr, va, len, right);
    }
    if (mr->pd != qp->pd || (mr->access & right) != right ||
        va < mr->iova || va + len < va || va + len > mr->iova + mr->length) {
        return NULL;
    }
    return mr;
}

/*
 * RDMA FLUSH and ATOMIC WRITE (IBTA 1.5 oA19; rxe's process_flush and
 * atomic_write_reply).  The QP and the MR, or the window the rkey names,
 * must have every right the request needs (a FLUSH one per placement
 * type, an ATOMIC WRITE remote write); a FLUSH of the whole MR or window
 * names no range.  Both take a READ resource of no length, as a
 * zero-byte READ does: its empty READ RESPONSE Only acknowledges the
 * request, and a duplicate is answered from it, never executed again.
 *
 * The engine writes guest RAM synchronously, so everything before a FLUSH
 * is globally visible when it executes; the barrier orders it for the
 * guest's CPUs.  No MR has the persistent right (rs_mr_check_access).
 * The 8 bytes of an ATOMIC WRITE are written with one copy in the bottom
 * half, so no other operation of the device sees half of them.
 */
static void rs_resp_flush_aw(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                             const RSPkt *pkt)
{
    bool flush = rs_opcode[pkt->opcode].flags & RS_OPF_FLUSH;
    bool whole = flush && ((pkt->feth & RS_FLUSH_SEL_MASK) >>
                           RS_FLUSH_SEL_SHIFT) == RS_FLUSH_SEL_MR;
    uint16_t right;
    RSRdRes *res;
    RSMr *mr;

    if (flush) {
        right = rs_resp_flush_right(pkt->feth);
        if (!right) {
            rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                              "FLUSH placement type or selectivity");
            return;
        }
    } else {
        right = RS_ACCESS_REMOTE_WRITE;
        if (pkt->paylen != 8 || pkt->dmalen != 8) {
            rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                              "ATOMIC WRITE length");
            return;
        }
    }
    if ((qp->access & right) != right) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "QP without the right for FLUSH/ATOMIC WRITE");
        return;
    }
    mr = rs_resp_flush_aw_key(c, qp, gid, pkt, right, whole);
    if (!mr || (!flush && !rs_mkl_single(c, mr, pkt->va, 8))) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn,
                          "FLUSH/ATOMIC WRITE rkey, rights or bounds");
        return;
    }
    if (!flush && (pkt->va & 7)) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "misaligned ATOMIC WRITE");
        return;
    }
    res = &qp->resp.rd_res[qp->resp.rd_head % rs_resp_nres(qp)];
    if (res->valid && res->next < res->stop) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "more READs and atomics outstanding than allowed");
        return;
    }
    if (flush) {
        /* Global visibility: our writes before it, before its response. */
        smp_mb();
    } else {
        uint8_t st;

        /* A peer BAR may split the 8 bytes: guest RAM only. */
        c->data_ram_only = true;
        st = rs_mr_rw(c, mr, pkt->va, (void *)pkt->payload, 8, true);
        c->data_ram_only = false;

        if (st == RS_STATUS_ODP_FAULT) {
            rs_resp_odp_fault(c, qpn, qp, pkt->psn);
            return;
        }
        if (st) {
            rs_resp_nak_fatal(c, qpn, qp, rs_resp_rw_nak(st), pkt->psn,
                              "ATOMIC WRITE DMA");
            return;
        }
    }
    trace_rdma_session_resp_flush_aw(qpn, pkt->psn, pkt->opcode, pkt->va,
                                     pkt->dmalen, pkt->feth);
    qp->resp.rd_head++;
    *res = (RSRdRes) {
        .valid = true,
        .psn = pkt->psn,
        .npkts = 1,
        .va = pkt->va,
        .rkey = pkt->rkey,
        .gid = gid,
        .stop = 1,
    };
    qp->rq_psn = (pkt->psn + 1) & RS_PSN_MASK;
    qp->resp.msn++;
    qp->resp.ack_pending = false;    /* the response acknowledges it */
    rs_resp_owe(c, qpn, qp);
}

/*
 * RC: everything that consumes a receive WQE (a SEND, a WRITE with
 * immediate) needs one before any write (rxe's check_resource).  False
 * without one: an RNR NAK, and what follows it is dropped until the
 * retry.
 */
static bool rs_resp_rc_rwqe_ready(RSCore *c, uint32_t qpn, RSQp *qp,
                                  const RSPkt *pkt)
{
    uint32_t f = rs_opcode[pkt->opcode].flags;

    if (!((f & RS_OPF_SEND) && (f & RS_OPF_FIRST)) &&
        !((f & RS_OPF_WRITE) && (f & RS_OPF_IMM))) {
        return true;
    }
    if (!rs_rq_empty(c, qp)) {
        return true;
    }
    if (rs_resp_owes(qp)) {
        trace_rdma_session_resp_drop(qpn, pkt->psn, "RNR behind responses");
        return false;
    }
    trace_rdma_session_resp_nak(qpn, pkt->psn, RS_AETH_TYPE_RNR,
                                "no receive WQE");
    rs_resp_nak(c, qpn, qp, RS_AETH_TYPE_RNR | (qp->min_rnr_timer & 0x1f),
                pkt->psn);
    qp->resp.seq_nak_sent = true;
    return false;
}

/* UC: the rest of the current message is dropped, never the QP. */
static void rs_resp_uc_drop(RSQp *qp, uint32_t qpn, uint32_t psn,
                            const char *why)
{
    trace_rdma_session_resp_drop(qpn, psn, why);
    qp->resp.op = RS_RESP_DROP;
    qp->resp.off = 0;
}

/*
 * A SEND or WRITE packet the requester got wrong: RC NAKs it with
 * syndrome and its QP goes to ERR (why); UC drops the rest of the message
 * (uc_why).
 */
static void rs_resp_exec_fail(RSCore *c, uint32_t qpn, RSQp *qp,
                              const RSPkt *pkt, uint8_t syndrome,
                              const char *why, const char *uc_why)
{
    if (rs_qpt_rc_responder(qp->type)) {
        rs_resp_nak_fatal(c, qpn, qp, syndrome, pkt->psn, why);
    } else {
        rs_resp_uc_drop(qp, qpn, pkt->psn, uc_why);
    }
}

/*
 * A local error of the receive WQE (status st): its error completion, and
 * the QP cannot go on; RC also NAKs.
 */
static void rs_resp_rwqe_fail(RSCore *c, uint32_t qpn, RSQp *qp,
                              const RSRecvWqe *r, const RSPkt *pkt,
                              uint8_t st)
{
    if (rs_qpt_rc_responder(qp->type)) {
        rs_recv_cqe(c, qpn, qp, r, pkt, st, 0, RS_WR_RECV);
        rs_resp_nak_fatal(c, qpn, qp, st == RS_WC_LOC_LEN_ERR ?
                          RS_AETH_NAK_INV_REQ : RS_AETH_NAK_REM_OP,
                          pkt->psn, "receive WQE");
        return;
    }
    RS_GUEST_ERR(rdma_session_err_recv_wqe, "QP %u receive WQE: "
                 "completion status %u", qpn, st);
    rs_recv_cqe(c, qpn, qp, r, pkt, st, 0, RS_WR_RECV);
    qp->resp.op = RS_RESP_NONE;
    rs_qp_to_err(c, qpn);
}

/* The last packet of a message was executed; only RC's ACKs carry an MSN. */
static void rs_resp_msg_done(RSQp *qp)
{
    qp->resp.op = RS_RESP_NONE;
    qp->resp.off = 0;
    if (rs_qpt_rc_responder(qp->type)) {
        qp->resp.msn++;
    }
}

/*
 * A SEND packet: its payload into the receive WQE at resp_off; the last
 * one completes the WQE.
 */
static bool rs_resp_exec_send(RSCore *c, uint32_t qpn, RSQp *qp,
                              uint32_t gid, const RSPkt *pkt)
{
    uint32_t f = rs_opcode[pkt->opcode].flags;
    RSRecvWqe r;
    uint8_t st;

    st = rs_resp_get_rwqe(c, qpn, qp, gid, &r);
    if (!st && rs_resp_send_too_long(c, qp, pkt, &r)) {
        if (!rs_qpt_rc_responder(qp->type)) {
            rs_resp_uc_drop(qp, qpn, pkt->psn, "UC: message too long");
            return false;
        }
        st = RS_WC_LOC_LEN_ERR;
    }
    if (!st) {
        st = rs_pkt_to_sges(c, qp, gid, r.sge, r.nsge, qp->resp.off, pkt);
    }
    if (st == RS_WC_ODP_FAULT) {
        /* The receive WQE stays; the packet comes again (RC) or not. */
        if (rs_qpt_rc_responder(qp->type)) {
            rs_resp_odp_fault(c, qpn, qp, pkt->psn);
        } else {
            rs_odp_drop_fault(c);
            rs_resp_uc_drop(qp, qpn, pkt->psn, "UC: ODP page fault");
        }
        return false;
    }
    if (st) {
        rs_resp_rwqe_fail(c, qpn, qp, &r, pkt, st);
        return false;
    }
    qp->resp.off += pkt->paylen;
    if ((f & RS_OPF_IETH) && !rs_mr_remote_inv(c, qp, gid, pkt->ieth)) {
        /* Not a bound fast-registration key of this PD in this identity. */
        rs_recv_cqe(c, qpn, qp, &r, pkt, RS_WC_LOC_ACCESS_ERR, 0,
                    RS_WR_RECV);
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "IETH rkey cannot be invalidated");
        return false;
    }
    if (f & RS_OPF_LAST) {
        rs_recv_cqe(c, qpn, qp, &r, pkt, RS_WC_SUCCESS, qp->resp.off,
                    RS_WR_RECV);
        rs_resp_msg_done(qp);
    } else {
        qp->resp.op = RS_RESP_SEND;
    }
    return true;
}

/*
 * An RDMA WRITE packet: the RETH of the first one names the memory, each
 * packet goes on where the one before ended; the last one of a WRITE with
 * immediate completes a receive WQE.
 */
static bool rs_resp_exec_write(RSCore *c, uint32_t qpn, RSQp *qp,
                               uint32_t gid, const RSPkt *pkt)
{
    uint32_t f = rs_opcode[pkt->opcode].flags;
    RSRecvWqe r;
    RSMr *mr;
    uint8_t st;

    if (f & RS_OPF_FIRST) {
        if (!rs_resp_rkey(c, qp, gid, pkt->rkey, pkt->va, pkt->dmalen,
                          RS_ACCESS_REMOTE_WRITE, &mr) ||
            pkt->dmalen > c->p.max_msg_size) {
            rs_resp_exec_fail(c, qpn, qp, pkt, RS_AETH_NAK_REM_ACCESS,
                              "WRITE rkey, rights or bounds",
                              "UC WRITE rkey, rights or bounds");
            return false;
        }
        qp->resp.va = pkt->va;
        qp->resp.rkey = pkt->rkey;
        qp->resp.left = pkt->dmalen;
        qp->resp.off = 0;
    }
    if (pkt->paylen > qp->resp.left ||
        ((f & RS_OPF_LAST) && pkt->paylen != qp->resp.left)) {
        rs_resp_exec_fail(c, qpn, qp, pkt, RS_AETH_NAK_INV_REQ,
                          "WRITE longer or shorter than its RETH",
                          "UC WRITE longer or shorter than its RETH");
        return false;
    }
    if (pkt->paylen) {
        if (!rs_resp_rkey(c, qp, gid, qp->resp.rkey, qp->resp.va,
                          pkt->paylen, RS_ACCESS_REMOTE_WRITE, &mr)) {
            rs_resp_exec_fail(c, qpn, qp, pkt, RS_AETH_NAK_REM_ACCESS,
                              "WRITE rkey gone", "UC WRITE rkey gone or DMA");
            return false;
        }
        st = rs_pkt_to_mr(c, mr, qp->resp.va, pkt);
        if (st == RS_STATUS_ODP_FAULT) {
            rs_odp_widen(c, qp->resp.va + qp->resp.left);
            if (rs_qpt_rc_responder(qp->type)) {
                rs_resp_odp_fault(c, qpn, qp, pkt->psn);
            } else {
                rs_odp_drop_fault(c);
                rs_resp_uc_drop(qp, qpn, pkt->psn, "UC: ODP page fault");
            }
            return false;
        }
        if (st) {
            rs_resp_exec_fail(c, qpn, qp, pkt, rs_resp_rw_nak(st),
                              "WRITE DMA", "UC WRITE rkey gone or DMA");
            return false;
        }
    }
    qp->resp.va += pkt->paylen;
    qp->resp.left -= pkt->paylen;
    qp->resp.off += pkt->paylen;
    if (!(f & RS_OPF_LAST)) {
        qp->resp.op = RS_RESP_WRITE;
        return true;
    }
    if (f & RS_OPF_IMM) {
        /* RC has made sure of a receive WQE (rs_resp_rc_rwqe_ready). */
        if (rs_rq_empty(c, qp)) {
            trace_rdma_session_resp_drop(qpn, pkt->psn,
                                         "UC WRITE_IMM: no receive WQE");
        } else {
            st = rs_resp_get_rwqe(c, qpn, qp, gid, &r);
            rs_recv_cqe(c, qpn, qp, &r, pkt, st, qp->resp.off,
                        RS_WR_RECV_RDMA_IMM);
        }
    }
    rs_resp_msg_done(qp);
    return true;
}

/*
 * Execute a SEND or RDMA WRITE packet that passed its transport's checks,
 * RC's and UC's alike (rxe's execute).  False if it failed: RC has NAKed,
 * UC dropped the message; a bad receive WQE also moved the QP to ERR.
 */
static bool rs_resp_execute(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                            const RSPkt *pkt)
{
    if (rs_opcode[pkt->opcode].flags & RS_OPF_SEND) {
        return rs_resp_exec_send(c, qpn, qp, gid, pkt);
    }
    return rs_resp_exec_write(c, qpn, qp, gid, pkt);
}

static void rs_resp_rc_exec(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                            const RSPkt *pkt)
{
    uint32_t f = rs_opcode[pkt->opcode].flags;

    if (!rs_qp_receiving(qp)) {
        trace_rdma_session_resp_drop(qpn, pkt->psn, "QP not receiving");
        return;
    }
    if (!rs_resp_rc_psn(c, qpn, qp, gid, pkt) ||
        !rs_resp_rc_seq(c, qpn, qp, pkt)) {
        return;
    }
    if (f & RS_OPF_READ) {
        rs_resp_read_req(c, qpn, qp, gid, pkt);
        return;
    }
    if (f & RS_OPF_ATOMIC) {
        rs_resp_atomic(c, qpn, qp, gid, pkt);
        return;
    }
    if (f & (RS_OPF_FLUSH | RS_OPF_ATOMIC_WRITE)) {
        rs_resp_flush_aw(c, qpn, qp, gid, pkt);
        return;
    }
    if (!rs_resp_rc_rwqe_ready(c, qpn, qp, pkt) ||
        !rs_resp_execute(c, qpn, qp, gid, pkt)) {
        return;
    }
    qp->rq_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if (pkt->ackreq) {
        rs_resp_ack_later(c, qp, pkt->psn);
    }
}

static void rs_resp_rc(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                       const RSPkt *pkt)
{
    rs_resp_rc_exec(c, qpn, qp, gid, pkt);
    /* The request that faulted went through after all. */
    if (qp->odp.resp.mr && qp->odp.resp.kind == RS_ODP_WAIT_RESP &&
        rs_psn_diff(qp->rq_psn, qp->odp.resp.psn) > 0) {
        memset(&qp->odp.resp, 0, sizeof(qp->odp.resp));
    }
}

/*
 * XRC target: RC's responder, on the XRC SRQ the XRCETH names.  A new
 * request naming an SRQ the target may not use (none, another domain's,
 * another than its message's first packet named) is an invalid request.
 * Only the expected PSN selects: a duplicate of an earlier message (its
 * ACK was lost) is acknowledged or answered from its resources as RC's
 * are, whatever message is in progress; a later PSN gets RC's NAK.
 */
static void rs_resp_xrc(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                        const RSPkt *pkt)
{
    if (!rs_qp_receiving(qp)) {
        trace_rdma_session_resp_drop(qpn, pkt->psn, "QP not receiving");
        return;
    }
    if (pkt->psn == qp->rq_psn &&
        !rs_xrc_tgt_select(c, qpn, qp, pkt->xrcsrq)) {
        rs_resp_nak_fatal(c, qpn, qp, RS_AETH_NAK_INV_REQ, pkt->psn,
                          "XRC SRQ");
        return;
    }
    rs_resp_rc(c, qpn, qp, gid, pkt);
}

/*
 * UC (IBTA vol. 1 chapter 9; rxe's check_psn/check_op_seq): no ACKs, no
 * NAKs.
 * A PSN gap, an opcode out of sequence, a bad rkey or length drop the
 * message in progress silently; the responder waits for the next FIRST or
 * ONLY packet, which also abandons an unfinished message (its receive WQE
 * is used again, as nothing was completed).
 */
static void rs_resp_uc(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                       const RSPkt *pkt)
{
    uint32_t mtu = 128u << qp->path_mtu;
    uint32_t f = rs_opcode[pkt->opcode].flags;

    if (!rs_qp_receiving(qp)) {
        trace_rdma_session_resp_drop(qpn, pkt->psn, "QP not receiving");
        return;
    }
    if (pkt->psn != qp->rq_psn && !(f & RS_OPF_FIRST)) {
        qp->rq_psn = (pkt->psn + 1) & RS_PSN_MASK;
        rs_resp_uc_drop(qp, qpn, pkt->psn, "UC PSN gap");
        return;
    }
    qp->rq_psn = (pkt->psn + 1) & RS_PSN_MASK;
    if (f & RS_OPF_FIRST) {
        qp->resp.op = RS_RESP_NONE;
        qp->resp.off = 0;
    } else if (qp->resp.op == RS_RESP_DROP) {
        trace_rdma_session_resp_drop(qpn, pkt->psn, "UC message dropped");
        return;
    } else if (qp->resp.op == RS_RESP_NONE ||
               (qp->resp.op == RS_RESP_SEND && !(f & RS_OPF_SEND)) ||
               (qp->resp.op == RS_RESP_WRITE && !(f & RS_OPF_WRITE))) {
        rs_resp_uc_drop(qp, qpn, pkt->psn, "UC opcode out of sequence");
        return;
    }
    if (pkt->paylen > mtu ||
        (!(f & RS_OPF_LAST) && pkt->paylen != mtu)) {
        rs_resp_uc_drop(qp, qpn, pkt->psn, "UC payload length");
        return;
    }
    if ((f & RS_OPF_SEND) && (f & RS_OPF_FIRST) && rs_rq_empty(c, qp)) {
        rs_resp_uc_drop(qp, qpn, pkt->psn, "UC: no receive WQE");
        return;
    }
    rs_resp_execute(c, qpn, qp, gid, pkt);
}

/* A request (not a response) rs_roce_input() found the QP of. */
void rs_resp_receive(RSCore *c, uint32_t qpn, RSQp *qp, int gid,
                     const RSPkt *pkt)
{
    if (qp->type == RS_QPT_XRC_TGT) {
        rs_resp_xrc(c, qpn, qp, gid, pkt);
    } else if (qp->type == RS_QPT_UD || qp->type == RS_QPT_GSI) {
        rs_resp_ud(c, qpn, qp, gid, pkt);
    } else if (rs_qpt_rc_responder(qp->type)) {
        rs_resp_rc(c, qpn, qp, gid, pkt);
    } else {
        rs_resp_uc(c, qpn, qp, gid, pkt);
    }
}
