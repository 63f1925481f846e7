/*
 * rdma-session adapter: the requester (rxe_req.c's role).
 *
 * An SQ doorbell only records the producer index and kicks req_bh; the
 * bottom half reads WQEs at each QP's sq_ci, checks them and their local
 * keys, segments the message by the path MTU and puts the packets on the
 * wire with the UDP 5-tuple of a session of the QP's group.  UD work
 * requests complete once sent; RC ones when the completer sees the ACK.
 *
 * RC runs a send window: at most cwnd packets (READ responses count too)
 * are unacknowledged; the requester stops there and resumes in the middle
 * of the message when ACKs arrive.  cwnd is a congestion window that
 * adapts as TCP Reno's does, between 2 and x-window packets: a network
 * that loses frames when bursts overflow a queue (a host's UDP socket
 * buffer under -netdev dgram or socket) gets bursts it can take, instead
 * of losing every window's tail and waiting out the ACK timeout.
 * The requester's state is sq_ci, the WQE it is sending, and req_pkt,
 * the packets of it already sent.  When it starts a WQE it records what
 * it decided (RSSentWqe: opcode, length, PSN span, the local SGEs of a
 * READ or atomic) for the completer; when it resumes a message or sends
 * it again it reads the WQE from the ring for the payload's SGEs and
 * fails the QP if the guest rewrote it.
 * ACK requests go on the last packet of a message, every half window and
 * on the packet that fills the window.  Large READs go out as several
 * READ requests of half of x-window each.
 *
 * Lost packets are recovered go-back-N from the first unacknowledged PSN,
 * possibly in the middle of a message (MIDDLE/LAST opcodes; a READ is
 * requested again for its remaining part): on a sequence NAK, a gap in
 * READ responses, or the QP's local ACK timeout (retry_cnt times, then
 * RS_WC_RETRY_EXC_ERR; the timer starts with the oldest unacknowledged
 * request and backs off on each retry), or once, after 20-30 ms without
 * progress, a tail loss probe.  An RNR NAK pauses the QP for
 * the peer's RNR timer (rnr_retry times, 7 is unlimited, then
 * RS_WC_RNR_RETRY_EXC_ERR).
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "net/eth.h"
#include "rdma-session-core.h"
#include "rdma-session-engine.h"
#include "rdma-session-wire.h"
#include "rdma-session-fabric.h"
#include "trace.h"

#define RS_REQ_BUDGET   64      /* packets per QP per bottom-half run */

void rs_req_kick(RSCore *c)
{
    if (c->req_bh) {
        qemu_bh_schedule(c->req_bh);
    }
}

/*
 * L2-L4 addressing of a packet: UD from the AH's vector, connected QPs
 * from session slot of their group (the QP's own AV without one).
 */
static bool rs_qp_tuple_at(RSCore *c, RSQp *qp, uint32_t qpn,
                           const RSAv *ud_av, RSPkt *pkt, unsigned slot)
{
    const uint8_t *dgid, *sgid;
    uint32_t gid_index, flow_label;
    bool v4s, v4d;

    if (ud_av || !qp->group) {
        const RSAv *av = ud_av ? ud_av : &qp->av;

        if (!ud_av && !qp->has_av) {
            return false;
        }
        dgid = av->dgid;
        memcpy(pkt->dmac, av->dmac, 6);
        gid_index = av->gid_index;
        pkt->sport = 0xc000 | (qpn & 0x3fff);
        pkt->dport = RS_ROCE_UDP_PORT;
        pkt->tos = av->traffic_class;
        pkt->ttl = av->hop_limit;
        flow_label = av->flow_label;
    } else {
        RSSessionGroup *g = &c->groups[qp->group];
        RSSession *s;

        if (!g->valid || slot >= g->nsessions || !g->session[slot] ||
            g->session[slot] >= c->p.max_sessions) {
            return false;
        }
        s = &c->sessions[g->session[slot]];
        if (!s->valid) {
            return false;
        }
        dgid = s->dst_ip;
        memcpy(pkt->dmac, s->dmac, 6);
        gid_index = s->gid_index;
        pkt->sport = s->src_port;
        pkt->dport = s->dst_port;
        pkt->tos = qp->av.traffic_class;
        pkt->ttl = qp->av.hop_limit;
        flow_label = qp->av.flow_label;
    }
    if (!rs_gid_valid(c, gid_index)) {
        return false;
    }
    pkt->tos = rs_ecn_tos(c, pkt->tos);
    /* IPv4 (v4-mapped GIDs) or IPv6, the same on both ends. */
    sgid = c->gids[gid_index].gid;
    v4s = rs_gid_to_ip4(sgid, &pkt->sip);
    v4d = rs_gid_to_ip4(dgid, &pkt->dip);
    if (v4s != v4d) {
        return false;
    }
    if (ud_av && rs_gid_is_mcast(dgid)) {
        /* The group's Ethernet address, whatever the AV says. */
        rs_mcast_mac(dgid, pkt->dmac);
    }
    pkt->v6 = !v4s;
    pkt->flow_label = pkt->v6 ? flow_label & RS_AV_FLOW_LABEL_MASK : 0;
    /* A GID on a VLAN sends tagged, with the AV's priority (ABI 1.9). */
    pkt->vlan = c->gids[gid_index].vlan ?
                c->gids[gid_index].vlan |
                RS_AV_PRIO(flow_label) << RS_VLAN_PCP_SHIFT : 0;
    memcpy(pkt->sgid, sgid, 16);
    memcpy(pkt->dgid, dgid, 16);
    memcpy(pkt->smac, c->mac.a, 6);
    return true;
}

/*
 * Responses (ACKs, READ responses) leave with the addresses of the group's
 * first session and the source port of the request they answer
 * (rs_path_resp_tuple).
 */
bool rs_qp_tuple(RSCore *c, RSQp *qp, uint32_t qpn, const RSAv *ud_av,
                 RSPkt *pkt)
{
    return rs_qp_tuple_at(c, qp, qpn, ud_av, pkt, 0);
}

/*
 * A request's 5-tuple: a connected QP's on the session it uses now
 * (req_slot, chosen by rdma-session-path.c), every packet of a message
 * and every resent one too; UD's from the AH with its group's next
 * source port.
 */
static bool rs_qp_tuple_msg(RSCore *c, RSQp *qp, uint32_t qpn,
                            const RSAv *ud_av, RSPkt *pkt)
{
    return rs_qp_tuple_at(c, qp, qpn, ud_av, pkt, qp->path.req_slot) &&
           rs_path_tuple(c, qp, ud_av != NULL, pkt);
}

static bool rs_req_opcode_ok(uint8_t qpt, uint8_t op)
{
    switch (op) {
    case RS_WR_SEND:
    case RS_WR_SEND_IMM:
    case RS_WR_LOCAL_INV:
    case RS_WR_REG_MR:
    case RS_WR_REG_INDIRECT:
    case RS_WR_REG_PATTERN:
        return true;
    case RS_WR_RDMA_WRITE:
    case RS_WR_RDMA_WRITE_IMM:
        return qpt == RS_QPT_RC || qpt == RS_QPT_UC ||
               qpt == RS_QPT_XRC_INI || qpt == RS_QPT_DCI;
    case RS_WR_BIND_MW:
        return qpt == RS_QPT_RC || qpt == RS_QPT_UC;
    case RS_WR_RDMA_READ:
    case RS_WR_ATOMIC_CMP_SWP:
    case RS_WR_ATOMIC_FETCH_ADD:
        return qpt == RS_QPT_RC || qpt == RS_QPT_XRC_INI || qpt == RS_QPT_DCI;
    case RS_WR_SEND_INV:
        return qpt == RS_QPT_RC || qpt == RS_QPT_XRC_INI;
    case RS_WR_FLUSH:
    case RS_WR_ATOMIC_WRITE:
        return qpt == RS_QPT_RC;
    default:
        return false;
    }
}

static uint8_t rs_req_rc_op(uint8_t wr_op, uint32_t i, uint32_t n);

/*
 * The wire opcode of packet i (of n) of a message.  UC's and XRC's are
 * RC's in their transport's range.
 */
static uint8_t rs_req_wire_op(uint8_t qpt, uint8_t wr_op, uint32_t i,
                              uint32_t n)
{
    if (qpt == RS_QPT_UD || qpt == RS_QPT_GSI) {
        return wr_op == RS_WR_SEND_IMM ? 0x65 : 0x64;
    }
    return rs_req_rc_op(wr_op, i, n) | rs_qpt_transport(qpt);
}

static uint8_t rs_req_rc_op(uint8_t wr_op, uint32_t i, uint32_t n)
{
    bool first = i == 0, last = i == n - 1;

    switch (wr_op) {
    case RS_WR_SEND:
    case RS_WR_SEND_IMM:
    case RS_WR_SEND_INV:
        if (!last) {
            return first ? RS_OP_SEND_FIRST : RS_OP_SEND_MIDDLE;
        }
        if (wr_op == RS_WR_SEND_IMM) {
            return first ? RS_OP_SEND_ONLY_IMM : RS_OP_SEND_LAST_IMM;
        }
        if (wr_op == RS_WR_SEND_INV) {
            return first ? RS_OP_SEND_ONLY_INV : RS_OP_SEND_LAST_INV;
        }
        return first ? RS_OP_SEND_ONLY : RS_OP_SEND_LAST;
    case RS_WR_RDMA_WRITE:
    case RS_WR_RDMA_WRITE_IMM:
        if (!last) {
            return first ? RS_OP_WRITE_FIRST : RS_OP_WRITE_MIDDLE;
        }
        if (wr_op == RS_WR_RDMA_WRITE_IMM) {
            return first ? RS_OP_WRITE_ONLY_IMM : RS_OP_WRITE_LAST_IMM;
        }
        return first ? RS_OP_WRITE_ONLY : RS_OP_WRITE_LAST;
    case RS_WR_ATOMIC_CMP_SWP:
        return RS_OP_CMP_SWAP;
    case RS_WR_ATOMIC_FETCH_ADD:
        return RS_OP_FETCH_ADD;
    case RS_WR_FLUSH:
        return RS_OP_FLUSH;
    case RS_WR_ATOMIC_WRITE:
        return RS_OP_ATOMIC_WRITE;
    default:
        return RS_OP_READ_REQ;
    }
}

/*
 * RS_WQE_F_AV_ADDR: read the address vector a privileged QP's UD WQE
 * points to, with the checks CREATE_AH makes.
 */
static bool rs_req_av_addr(RSCore *c, const RSQp *qp, uint64_t addr,
                           RSAv *av)
{
    struct rs_ah_attr a;

    if (!rs_qp_privileged(c, qp) || rs_dma_read(c, addr, &a, sizeof(a))) {
        return false;
    }
    memset(av, 0, sizeof(*av));
    memcpy(av->dgid, a.dgid, sizeof(av->dgid));
    memcpy(av->dmac, a.dmac, sizeof(av->dmac));
    av->hop_limit = a.hop_limit;
    av->traffic_class = a.traffic_class;
    av->flow_label = le32_to_cpu(a.flow_label);
    av->gid_index = le32_to_cpu(a.gid_index);
    return rs_check_av(c, av) == RS_STATUS_OK;
}

/* A WQE that cannot be executed: error completion, QP to ERR. */
static void rs_req_fail(RSCore *c, uint32_t qpn, RSQp *qp,
                        const struct rs_send_wqe_ctrl *w, uint8_t status)
{
    RS_GUEST_ERR(rdma_session_err_wqe, "QP %u send WQE %u: completion "
                 "status %u", qpn, qp->req.sq_ci, status);
    rs_sq_flush_before(c, qpn, qp->req.sq_ci);
    if (rs_sq_started(qp, qp->comp.sq_comp)) {
        rs_sq_complete(c, qpn, status, 0);
    } else {
        rs_send_cqe(c, qpn, w, status, 0);
        qp->req.sq_rec = ++qp->comp.sq_comp;
    }
    qp->req.sq_ci = qp->comp.sq_comp;
    qp->req.pkt = 0;
    rs_qp_to_err(c, qpn);
}

/*
 * Record what a new WQE at sq_ci is (for the completer, the flush and
 * retransmissions); false when RS_SQ_INFLIGHT WQEs, or READs and atomics
 * with RS_RD_SGE_POOL local SGEs, are outstanding: wait for completions.
 */
static bool rs_req_record(RSQp *qp, const struct rs_send_wqe_ctrl *w,
                          uint32_t len, uint32_t npkts,
                          const struct rs_sge *sge, unsigned nsge)
{
    RSSentWqe *rec;
    unsigned i;

    if (qp->req.sq_rec - qp->comp.sq_comp >= RS_SQ_INFLIGHT ||
        qp->req.rd_sge_head - qp->req.rd_sge_tail + nsge > RS_RD_SGE_POOL) {
        return false;
    }
    rec = &qp->req.sent[qp->req.sq_rec % RS_SQ_INFLIGHT];
    *rec = (RSSentWqe) {
        .wr_id = w->wr_id,
        .len = len,
        .npkts = npkts,
        .opcode = w->opcode,
        .flags = w->flags,
        .nsge = nsge,
        .sge_at = qp->req.rd_sge_head % RS_RD_SGE_POOL,
    };
    for (i = 0; i < nsge; i++) {
        qp->req.rd_sge[(qp->req.rd_sge_head + i) % RS_RD_SGE_POOL] = sge[i];
    }
    qp->req.rd_sge_head += nsge;
    qp->req.sq_rec++;
    return true;
}

#define RS_CWND_MIN 2

/*
 * The window's largest size: x-window, or x-fabric-window while the QP
 * sends over the local fabric, which has no queue to overflow and whose
 * round trip (two main loops' wake-ups) x-window's packets do not cover.
 */
static uint32_t rs_req_wmax(RSCore *c, const RSQp *qp)
{
    return qp->req.fabric ? MAX(c->p.fabric_window, c->p.window) :
           c->p.window;
}

static uint32_t rs_req_cwnd(RSCore *c, RSQp *qp)
{
    if (!qp->req.cwnd) {
        qp->req.cwnd = qp->req.ssthresh = rs_req_wmax(c, qp);
        qp->req.recover_psn = qp->sq_psn;
    }
    return qp->req.cwnd;
}

/*
 * The QP's packets start or stop going over the local fabric (a member
 * joined or left): the whole window there, at most x-window elsewhere.
 */
static void rs_req_path_fabric(RSCore *c, RSQp *qp, bool fabric)
{
    if (qp->req.fabric == fabric) {
        return;
    }
    qp->req.fabric = fabric;
    if (!qp->req.cwnd) {
        return;
    }
    if (fabric) {
        qp->req.cwnd = qp->req.ssthresh = rs_req_wmax(c, qp);
    } else {
        qp->req.cwnd = MIN(qp->req.cwnd, c->p.window);
        qp->req.ssthresh = MIN(qp->req.ssthresh, c->p.window);
    }
    qp->req.cwnd_acked = 0;
}

/*
 * A request packet was lost (a sequence NAK, missing READ responses, a
 * tail loss probe or the local ACK timeout): send again from the first
 * unacknowledged PSN, with a smaller window.  Halve it once per loss
 * episode (the losses of packets sent before the last cut are the same
 * one); a timeout also restarts from the minimum, in slow start.
 */
void rs_req_lost(RSCore *c, uint32_t qpn, bool timeout)
{
    RSQp *qp = &c->qps[qpn];

    rs_req_cwnd(c, qp);
    if (rs_psn_diff(qp->comp.una_psn, qp->req.recover_psn) >= 0) {
        qp->req.ssthresh = MAX(qp->req.cwnd / 2, RS_CWND_MIN);
        qp->req.cwnd = qp->req.ssthresh;
        qp->req.recover_psn = qp->sq_psn;
    }
    if (timeout) {
        qp->req.cwnd = RS_CWND_MIN;
        c->stats.ack_timeouts++;
    }
    c->stats.retransmits++;
    qp->req.cwnd_acked = 0;
    trace_rdma_session_req_cwnd(qpn, qp->req.cwnd, qp->req.ssthresh, timeout);
    rs_req_rewind(c, qpn);
}

/* n more packets were acknowledged: slow start, then +1 per window. */
void rs_req_acked(RSCore *c, RSQp *qp, uint32_t n)
{
    if (rs_req_cwnd(c, qp) >= rs_req_wmax(c, qp)) {
        return;
    }
    if (qp->req.cwnd < qp->req.ssthresh) {
        qp->req.cwnd = MIN(qp->req.cwnd + n, qp->req.ssthresh);
        return;
    }
    qp->req.cwnd_acked += n;
    if (qp->req.cwnd_acked >= qp->req.cwnd) {
        qp->req.cwnd_acked = 0;
        qp->req.cwnd++;
    }
}

/*
 * n more PSNs sent.  After a rewind the requester sends again PSNs it had
 * sent before; an ACK for one of those up to max_psn is still valid
 * (rs_comp_receive).
 */
static void rs_req_advance(RSQp *qp, uint32_t n)
{
    qp->sq_psn = (qp->sq_psn + n) & RS_PSN_MASK;
    if (rs_psn_diff(qp->sq_psn, qp->req.max_psn) > 0) {
        qp->req.max_psn = qp->sq_psn;
    }
}

static uint32_t rs_req_inflight(RSQp *qp)
{
    return MAX(rs_psn_diff(qp->sq_psn, qp->comp.una_psn), 0);
}

/* Packets the send window still allows. */
static uint32_t rs_req_room(RSCore *c, RSQp *qp)
{
    uint32_t cwnd = rs_req_cwnd(c, qp), inflight = rs_req_inflight(qp);

    return inflight >= cwnd ? 0 : cwnd - inflight;
}

#define RS_RETRY_TICK_NS    (10 * SCALE_MS)
#define RS_PROBE_NS         (2 * RS_RETRY_TICK_NS)

/*
 * The local ACK timeout of qp's next retry: 4.096 us * 2^timeout, at
 * least a retry tick, doubled per retry up to x-ack-backoff times.  A DC
 * CONNECT waits as long.
 */
int64_t rs_req_ack_timeout_ns(RSCore *c, const RSQp *qp)
{
    return MAX(4096LL << MIN(qp->timeout, 31), RS_RETRY_TICK_NS) <<
           MIN(qp->req.retries, c->p.ack_backoff);
}

void rs_req_arm_retry(RSCore *c)
{
    if (c->retry_timer && !timer_pending(c->retry_timer)) {
        timer_mod(c->retry_timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  RS_RETRY_TICK_NS);
    }
}

/*
 * A request packet is about to leave with PSN sq_psn.  The local ACK timer
 * measures the wait for the oldest unacknowledged request, so a request
 * sent while nothing is outstanding starts it from now: an idle QP must
 * not time out at once on its next request.
 */
static void rs_req_timer_start(RSCore *c, RSQp *qp)
{
    if (qp->sq_psn == qp->comp.una_psn) {
        qp->req.last_progress = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    }
    rs_req_arm_retry(c);
}

/*
 * FLUSH and ATOMIC WRITE name no local memory and are answered by an empty
 * READ response; they count against max_rd_atomic as READs do.
 */
static bool rs_wr_empty_resp(uint8_t op)
{
    return op == RS_WR_FLUSH || op == RS_WR_ATOMIC_WRITE;
}

/* READ and atomics: the response lands in the WQE's local SGEs. */
static bool rs_wr_local_dest(uint8_t op)
{
    return op == RS_WR_RDMA_READ || op == RS_WR_ATOMIC_CMP_SWP ||
           op == RS_WR_ATOMIC_FETCH_ADD;
}

/* A send WQE with what the requester's checks resolved of it. */
typedef struct RSSendWqe {
    uint64_t addr;              /* in the ring; inline data follows */
    struct rs_send_wqe_ctrl w;
    struct rs_sge sge[RS_MAX_SGE];
    RSSentWqe *rec;             /* recorded when it started, or NULL */
    RSAv wqe_av;                /* the address vector RS_WQE_F_AV_ADDR names */
    const RSAv *ud_av;          /* UD: the destination */
    uint32_t gid_index;         /* the identity its local keys belong to */
    uint64_t total;             /* message length */
    uint32_t npkts;
    bool is_inline;
} RSSendWqe;

/*
 * Read the WQE at sq_ci and check its opcode for the QP type and against
 * what was recorded when it started (rxe's req_next_wqe, next_opcode).
 * False: the QP failed.
 */
static bool rs_req_fetch(RSCore *c, uint32_t qpn, RSQp *qp, RSSendWqe *s)
{
    uint32_t stride = rs_sq_stride(qp->max_send_sge, qp->max_inline);

    s->addr = qp->sq_addr +
        (uint64_t)(qp->req.sq_ci & ((1u << qp->sq_log) - 1)) * stride;
    if (rs_dma_read(c, s->addr, &s->w, sizeof(s->w))) {
        memset(&s->w, 0, sizeof(s->w));
        rs_qp_event(c, qpn, RS_EV_QP_FATAL);
        rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }
    if (!qp->req.pkt) {
        trace_rdma_session_req_wqe(qpn, qp->req.sq_ci, s->w.opcode, s->w.flags,
                                   s->w.num_sge);
    }
    s->rec = rs_sq_started(qp, qp->req.sq_ci);
    if (!rs_req_opcode_ok(qp->type, s->w.opcode) ||
        (s->rec && s->rec->opcode != s->w.opcode)) {
        rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }
    return true;
}

/*
 * LOCAL_INV, REG_MR and BIND_MW (rxe's rxe_do_local_ops) wait until every
 * earlier WQE completed: they are then fenced as IBTA wants for LOCAL_INV,
 * complete in order, and a go-back-N rewind never executes one twice.
 */
static bool rs_req_local_op(RSCore *c, uint32_t qpn, RSQp *qp,
                            const struct rs_send_wqe_ctrl *w,
                            unsigned *budget)
{
    uint8_t st;

    if (qp->comp.sq_comp != qp->req.sq_ci) {
        return false;
    }
    st = rs_mr_local_op(c, qp, w);
    if (st) {
        rs_req_fail(c, qpn, qp, w, st);
        return false;
    }
    rs_send_cqe(c, qpn, w, RS_WC_SUCCESS, 0);
    qp->req.sq_ci++;
    qp->comp.sq_comp = qp->req.sq_rec = qp->req.sq_ci;
    (*budget)--;            /* they cost a doorbell's work like packets */
    return true;
}

/*
 * The destination: UD's address vector (the WQE's AH, or the one it
 * points to), the identity the local keys resolve in, and the message's
 * 5-tuple into pkt.  False if any of them is invalid.
 */
static bool rs_req_dest(RSCore *c, uint32_t qpn, RSQp *qp, RSSendWqe *s,
                        RSPkt *pkt)
{
    bool ud = qp->type == RS_QPT_UD || qp->type == RS_QPT_GSI;

    s->ud_av = NULL;
    if (ud && (s->w.flags & RS_WQE_F_AV_ADDR)) {
        if (!rs_req_av_addr(c, qp, le64_to_cpu(s->w.swap), &s->wqe_av)) {
            return false;
        }
        s->ud_av = &s->wqe_av;
    } else if (ud) {
        uint32_t ah = RS_LOOKUP(c->ahs, c->p.max_ahs, le32_to_cpu(s->w.ah));

        if (!ah || c->ahs[ah].pd != qp->pd) {
            return false;
        }
        s->ud_av = &c->ahs[ah].av;
    }
    s->gid_index = s->ud_av ? s->ud_av->gid_index : qp->av.gid_index;
    return rs_qp_tuple_msg(c, qp, qpn, s->ud_av, pkt);
}

/*
 * FLUSH and ATOMIC WRITE: no SGEs, no inline data; a FLUSH's placement
 * type one the IBTA defines (persistence is the responder's to refuse),
 * its selectivity a range or the MR, the range's length a RETH's.
 */
static bool rs_req_flush_check(RSCore *c, uint32_t qpn, RSQp *qp,
                               RSSendWqe *s)
{
    uint32_t feth = le32_to_cpu(s->w.imm_or_inv);
    uint32_t plt = feth & RS_FLUSH_PLT_MASK;
    uint32_t sel = (feth & RS_FLUSH_SEL_MASK) >> RS_FLUSH_SEL_SHIFT;

    if (s->w.num_sge || (s->w.flags & RS_WQE_F_INLINE)) {
        rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }
    if (s->w.opcode == RS_WR_FLUSH &&
        (!plt || (plt & ~(RS_FLUSH_PLT_GLOBAL | RS_FLUSH_PLT_PERSISTENT)) ||
         sel > RS_FLUSH_SEL_MR ||
         (feth & ~(RS_FLUSH_PLT_MASK | RS_FLUSH_SEL_MASK)) ||
         le64_to_cpu(s->w.compare_add) > UINT32_MAX)) {
        rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }
    s->npkts = 1;
    return true;
}

/*
 * The message length, from the inline data or the local SGEs, each SGE
 * checked, and the packets it takes.  False: the QP failed.
 */
static bool rs_req_length(RSCore *c, uint32_t qpn, RSQp *qp, RSSendWqe *s)
{
    bool ud = qp->type == RS_QPT_UD || qp->type == RS_QPT_GSI;
    bool atomic = s->w.opcode == RS_WR_ATOMIC_CMP_SWP ||
                  s->w.opcode == RS_WR_ATOMIC_FETCH_ADD;
    bool local_dest = rs_wr_local_dest(s->w.opcode);
    uint32_t mtu = 128u << qp->path_mtu;
    uint8_t st;

    s->total = 0;
    s->is_inline = (s->w.flags & RS_WQE_F_INLINE) && !local_dest;
    if (rs_wr_empty_resp(s->w.opcode)) {
        return rs_req_flush_check(c, qpn, qp, s);
    }
    if (s->is_inline) {
        s->total = le32_to_cpu(s->w.inline_len);
        if (s->total > qp->max_inline) {
            rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_LEN_ERR);
            return false;
        }
    } else {
        if (s->w.num_sge > qp->max_send_sge ||
            rs_dma_read(c, s->addr + sizeof(s->w), s->sge,
                        s->w.num_sge * sizeof(struct rs_sge))) {
            rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_QP_OP_ERR);
            return false;
        }
        st = rs_sge_check(c, qp, s->gid_index, s->sge, s->w.num_sge,
                          local_dest ? RS_ACCESS_LOCAL_WRITE : 0, &s->total);
        if (st) {
            rs_req_fail(c, qpn, qp, &s->w, st);
            return false;
        }
    }
    if (s->total > c->p.max_msg_size || (ud && s->total > mtu) ||
        (atomic && s->total != 8)) {
        rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_LEN_ERR);
        return false;
    }
    s->npkts = s->total ? DIV_ROUND_UP(s->total, mtu) : 1;
    return true;
}

/*
 * Validate the WQE before any packet of it leaves, also when it resumes
 * or is sent again: destination, local keys, lengths, and that the guest
 * did not rewrite a WQE the requester had started; record a new one.
 * False: the QP failed, or it waits for completions.
 */
static bool rs_req_check(RSCore *c, uint32_t qpn, RSQp *qp, RSSendWqe *s,
                         RSPkt *pkt)
{
    if (!rs_req_dest(c, qpn, qp, s, pkt)) {
        rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }
    if (!rs_req_length(c, qpn, qp, s)) {
        return false;
    }
    if (s->rec ? s->rec->len != s->total || s->rec->npkts != s->npkts :
                 qp->req.pkt != 0) {
        /* The guest rewrote a WQE the requester had started. */
        rs_req_fail(c, qpn, qp, &s->w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }
    return s->rec ||
           rs_req_record(qp, &s->w, s->total, s->npkts, s->sge,
                         rs_wr_local_dest(s->w.opcode) ? s->w.num_sge : 0);
}

/* The headers all packets of the message share (rxe's init_req_packet). */
static void rs_req_init_pkt(uint32_t qpn, const RSQp *qp,
                            const RSSendWqe *s, RSPkt *pkt)
{
    bool ud = qp->type == RS_QPT_UD || qp->type == RS_QPT_GSI;

    pkt->dqpn = ud ? le32_to_cpu(s->w.remote_qpn) : qp->dest_qpn;
    pkt->pkey = 0xffff;
    if (qp->type == RS_QPT_XRC_INI) {
        pkt->xrcsrq = le32_to_cpu(s->w.xrc_srqn) & RS_PSN_MASK;
    }
    if (ud) {
        uint32_t qkey = le32_to_cpu(s->w.remote_qkey);

        pkt->qkey = (qkey & 0x80000000u) ? qp->qkey : qkey;
        pkt->sqpn = qpn;
    }
    pkt->imm = le32_to_cpu(s->w.imm_or_inv);
    pkt->ieth = le32_to_cpu(s->w.imm_or_inv);
    pkt->va = le64_to_cpu(s->w.remote_addr);
    pkt->rkey = le32_to_cpu(s->w.rkey);
    pkt->dmalen = s->total;
}

/*
 * Send a request of one packet whose one response completes the WQE (an
 * atomic, FLUSH, ATOMIC WRITE): it counts against max_rd_atomic.
 */
static void rs_req_one_response(RSCore *c, RSQp *qp, RSPkt *pkt,
                                uint32_t paylen, unsigned *budget)
{
    size_t len;

    pkt->psn = qp->sq_psn;
    pkt->ackreq = true;
    len = rs_wire_build(c->req_buf, pkt, paylen);
    rs_req_timer_start(c, qp);
    rs_req_advance(qp, 1);
    qp->req.sq_ci++;
    qp->req.pkt = 0;
    qp->req.rd_out++;
    (*budget)--;
    rs_path_sent(c, qp, false, paylen);
    rs_roce_xmit(c, c->req_buf, len, pkt);
}

/* An atomic: one request packet; its response completes the WQE. */
static bool rs_req_atomic(RSCore *c, RSQp *qp, const RSSendWqe *s,
                          RSPkt *pkt, unsigned *budget)
{
    /* Atomics share max_rd_atomic with READ requests. */
    if (!rs_req_room(c, qp) ||
        qp->req.rd_out >= MAX(qp->max_rd_atomic, 1)) {
        return false;
    }
    pkt->opcode = rs_req_wire_op(qp->type, s->w.opcode, 0, 1);
    if (s->w.opcode == RS_WR_ATOMIC_CMP_SWP) {
        pkt->swap_add = le64_to_cpu(s->w.swap);
        pkt->compare = le64_to_cpu(s->w.compare_add);
    } else {
        pkt->swap_add = le64_to_cpu(s->w.compare_add);
    }
    rs_req_one_response(c, qp, pkt, 0, budget);
    return true;
}

/*
 * FLUSH or ATOMIC WRITE: one request packet, answered by a READ RESPONSE
 * Only without payload that completes the WQE.  The 8 bytes of an ATOMIC
 * WRITE go on the wire as they are in the WQE, in memory order.
 */
static bool rs_req_flush_aw(RSCore *c, RSQp *qp, const RSSendWqe *s,
                            RSPkt *pkt, unsigned *budget)
{
    uint32_t paylen = 0;

    if (!rs_req_room(c, qp) ||
        qp->req.rd_out >= MAX(qp->max_rd_atomic, 1)) {
        return false;
    }
    pkt->opcode = rs_req_rc_op(s->w.opcode, 0, 1);
    if (s->w.opcode == RS_WR_FLUSH) {
        pkt->icrc_rxe_flush = c->p.rxe_flush_icrc;
        pkt->feth = le32_to_cpu(s->w.imm_or_inv);
        pkt->dmalen = le64_to_cpu(s->w.compare_add);
    } else {
        paylen = sizeof(s->w.compare_add);
        pkt->dmalen = paylen;
        memcpy(c->req_buf + rs_wire_payload_off(pkt), &s->w.compare_add,
               paylen);
    }
    rs_req_one_response(c, qp, pkt, paylen, budget);
    return true;
}

/*
 * The next READ request of the message, for the packets from req_pkt on.
 * One READ request per half of x-window of the message, at fixed packet
 * offsets, so that one asking again for the rest of a part stays inside
 * what the responder's READ resource covers.  A congestion window smaller
 * than that still lets one go out when nothing else is outstanding.
 */
static bool rs_req_read(RSCore *c, RSQp *qp, const RSSendWqe *s,
                        RSPkt *pkt, unsigned *budget)
{
    uint32_t mtu = 128u << qp->path_mtu;
    uint32_t room, chunk;
    uint32_t per = MAX(c->p.window / 2, 1);
    uint64_t off = (uint64_t)qp->req.pkt * mtu;
    size_t len;

    /* (x-window's parts also on the fabric: a part's offsets are fixed) */
    rs_req_path_fabric(c, qp, rs_fabric_reaches(c, pkt));
    room = rs_req_room(c, qp);
    chunk = MIN(s->npkts, (qp->req.pkt / per + 1) * per) - qp->req.pkt;
    if ((room < chunk && rs_req_inflight(qp)) ||
        qp->req.rd_out >= MAX(qp->max_rd_atomic, 1)) {
        return false;
    }
    pkt->opcode = rs_req_wire_op(qp->type, RS_WR_RDMA_READ, 0, 1);
    pkt->psn = qp->sq_psn;
    pkt->ackreq = true;
    pkt->va += off;
    pkt->dmalen = MIN(s->total - off, (uint64_t)chunk * mtu);
    len = rs_wire_build(c->req_buf, pkt, 0);
    rs_req_timer_start(c, qp);
    rs_req_advance(qp, chunk);
    qp->req.pkt += chunk;
    qp->req.rd_out++;
    if (qp->req.pkt == s->npkts) {
        qp->req.sq_ci++;
        qp->req.pkt = 0;
    }
    (*budget)--;
    rs_path_sent(c, qp, false, pkt->dmalen);
    rs_roce_xmit(c, c->req_buf, len, pkt);
    return true;
}

/*
 * SEND and WRITE: a packet per path MTU of payload, from packet req_pkt
 * on, while the window and the budget allow.  Each packet is accounted
 * for before it leaves: over loopback its ACK or NAK reaches the
 * completer (which may rewind us) while we still send.
 */
static bool rs_req_segment(RSCore *c, uint32_t qpn, RSQp *qp,
                           const RSSendWqe *s, RSPkt *pkt, unsigned *budget)
{
    bool ud = qp->type == RS_QPT_UD || qp->type == RS_QPT_GSI;
    bool uc = qp->type == RS_QPT_UC;
    uint32_t mtu = 128u << qp->path_mtu;
    uint32_t expect_ci, expect_pkt, ack_every;
    uint8_t st;

    if (!ud && !uc) {
        rs_req_path_fabric(c, qp, rs_fabric_reaches(c, pkt));
    }
    while (*budget) {
        uint32_t i = qp->req.pkt;
        uint32_t room = ud || uc ? 1 : rs_req_room(c, qp);
        uint32_t off = i * mtu;
        uint32_t n = MIN((uint64_t)mtu, s->total - off);
        bool last = i == s->npkts - 1;
        uint8_t *payload;
        bool ref = false;
        size_t len;

        if (!room || rs_roce_tx_busy(c) || !rs_dcqcn_may_send(c, qpn)) {
            return false;
        }
        ack_every = MAX(qp->req.cwnd / 2, 1);
        pkt->opcode = rs_req_wire_op(qp->type, s->w.opcode, i, s->npkts);
        payload = c->req_buf + rs_wire_payload_off(pkt);
        if (s->is_inline) {
            st = rs_dma_read(c, s->addr + sizeof(s->w) + off, payload, n) ?
                 RS_WC_LOC_PROT_ERR : RS_WC_SUCCESS;
        } else if (c->fabric && rs_fabric_ref_begin(c, pkt, n)) {
            /*
             * To a local fabric member: the key check as always, the
             * payload's pieces recorded instead of copied (or copied
             * after all when they are not all in shareable RAM).
             */
            st = rs_sge_copy(c, qp, s->gid_index, s->sge, s->w.num_sge, off,
                             payload, n, false);
            ref = rs_fabric_ref_end(c);
            if (!st && !ref) {
                st = rs_sge_copy(c, qp, s->gid_index, s->sge,
                                 s->w.num_sge, off, payload, n, false);
            }
        } else {
            st = rs_sge_copy(c, qp, s->gid_index, s->sge, s->w.num_sge, off,
                             payload, n, false);
        }
        if (st && ref) {
            rs_fabric_ref_drop(c);
            ref = false;
        }
        if (st == RS_WC_ODP_FAULT) {
            /* Nothing leaves until the page is there. */
            if (!rs_odp_wait(c, qpn, &qp->odp.req, RS_ODP_WAIT_REQ,
                             qp->sq_psn)) {
                return false;
            }
            st = RS_WC_LOC_PROT_ERR;
        }
        if (st) {
            /* Packets already sent: the peer sees a truncated message. */
            rs_req_fail(c, qpn, qp, &s->w, st);
            return false;
        }
        pkt->psn = qp->sq_psn;
        pkt->ackreq = !ud && !uc &&
                      (last || room == 1 || (i + 1) % ack_every == 0);
        pkt->se = last && (s->w.flags & RS_WQE_F_SOLICITED);
        /* By reference: a frame without payload, and the pieces. */
        len = rs_wire_build(c->req_buf, pkt, ref ? 0 : n);
        if (!ud && !uc) {
            rs_req_timer_start(c, qp);
        }
        rs_req_advance(qp, 1);
        if (last) {
            qp->req.sq_ci++;
            qp->req.pkt = 0;
        } else {
            qp->req.pkt++;
        }
        expect_ci = qp->req.sq_ci;
        expect_pkt = qp->req.pkt;
        (*budget)--;
        rs_path_sent(c, qp, ud, n);
        rs_dcqcn_sent(c, qpn, len);
        rs_roce_xmit(c, c->req_buf, len, pkt);
        if (last) {
            if (ud || uc) {
                /* No acknowledgements: done once on the wire. */
                rs_sq_complete(c, qpn, RS_WC_SUCCESS, s->total);
                qp->comp.psn = qp->comp.una_psn = qp->sq_psn;
            }
            return true;
        }
        if (qp->state != RS_QPS_RTS || qp->req.sq_ci != expect_ci ||
            qp->req.pkt != expect_pkt) {
            return true;        /* a NAK ended or rewound it meanwhile */
        }
    }
    return true;
}

/*
 * Work on the WQE at sq_ci from its packet req_pkt.  True: go on with the
 * next WQE (or this one again: the state moved under us); false: stop
 * working on this QP for now (window full, error).
 */
static bool rs_req_wqe(RSCore *c, uint32_t qpn, RSQp *qp, unsigned *budget)
{
    RSSendWqe s;
    RSPkt pkt;

    if (!rs_req_fetch(c, qpn, qp, &s)) {
        return false;
    }
    if (s.w.opcode == RS_WR_LOCAL_INV || s.w.opcode == RS_WR_REG_MR ||
        s.w.opcode == RS_WR_BIND_MW || s.w.opcode == RS_WR_REG_INDIRECT ||
        s.w.opcode == RS_WR_REG_PATTERN) {
        return rs_req_local_op(c, qpn, qp, &s.w, budget);
    }
    /*
     * The fence indicator: wait until the READs, atomics, FLUSHes and
     * ATOMIC WRITEs before it have their responses.
     */
    if ((s.w.flags & RS_WQE_F_FENCE) && !s.rec && qp->req.rd_out) {
        return false;
    }
    /* A new message may move to another session of the group. */
    if (!qp->req.pkt && !rs_path_msg_start(c, qpn, qp)) {
        return false;
    }
    if (qp->type == RS_QPT_DCI) {
        bool go;
        uint8_t st = rs_dc_req_target(c, qpn, qp, &s.w, s.rec != NULL,
                                      &go);

        if (st) {
            rs_req_fail(c, qpn, qp, &s.w, st);
            return false;
        }
        if (!go) {
            return false;       /* connecting, or the old target's WQEs */
        }
    }
    memset(&pkt, 0, sizeof(pkt));
    if (!rs_req_check(c, qpn, qp, &s, &pkt)) {
        return false;
    }
    rs_req_init_pkt(qpn, qp, &s, &pkt);
    switch (s.w.opcode) {
    case RS_WR_ATOMIC_CMP_SWP:
    case RS_WR_ATOMIC_FETCH_ADD:
        return rs_req_atomic(c, qp, &s, &pkt, budget);
    case RS_WR_RDMA_READ:
        return rs_req_read(c, qp, &s, &pkt, budget);
    case RS_WR_FLUSH:
    case RS_WR_ATOMIC_WRITE:
        return rs_req_flush_aw(c, qp, &s, &pkt, budget);
    default:
        return rs_req_segment(c, qpn, qp, &s, &pkt, budget);
    }
}

/* The requester waits for a page fault (one that failed: it fails). */
static bool rs_req_odp_waits(const RSQp *qp)
{
    return qp->odp.req.mr && !qp->odp.req.failed;
}

/*
 * Work on QP qpn's send queue; true if it has more than the budget.
 * *used: how much of the budget it took.
 */
static bool rs_req_qp(RSCore *c, uint32_t qpn, bool active, unsigned *used)
{
    RSQp *qp = &c->qps[qpn];
    unsigned budget = RS_REQ_BUDGET;
    bool more = false;

    *used = 0;
    if (qp->valid && qp->state == RS_QPS_ERR) {
        /* Flushing needs no link. */
        return rs_qp_flush(c, qpn, budget);
    }
    /* A doorbell record the device reads: what was posted since. */
    if (!qp->valid || !rs_dbrec_sq_fetch(c, qpn)) {
        return false;
    }
    if (!active || qp->state != RS_QPS_RTS || qp->req.rnr_wait ||
        rs_req_odp_waits(qp)) {
        /* Link up, RTS, the RNR timer or the page fault kicks it again. */
        if ((uint16_t)(qp->sq_pi - qp->req.sq_ci)) {
            rs_dbrec_sq_arm(c, qpn);
        }
        return false;
    }
again:
    if ((uint16_t)(qp->sq_pi - qp->req.sq_ci) > (1u << qp->sq_log)) {
        RS_GUEST_ERR(rdma_session_err_sq_overrun, "QP %u: SQ producer "
                     "%u is more than a ring ahead of %u", qpn,
                     qp->sq_pi, qp->req.sq_ci & 0xffff);
        rs_qp_event(c, qpn, RS_EV_QP_FATAL);
        rs_qp_to_err(c, qpn);
        return false;
    }
    while ((uint16_t)(qp->sq_pi - qp->req.sq_ci) && qp->valid &&
           qp->state == RS_QPS_RTS && !qp->req.rnr_wait &&
           !rs_req_odp_waits(qp) && !rs_roce_tx_busy(c)) {
        if (!budget) {
            more = true;
            break;
        }
        if (!rs_req_wqe(c, qpn, qp, &budget)) {
            break;
        }
    }
    if (qp->valid && qp->state == RS_QPS_RTS) {
        /*
         * Unsent WQEs: the device comes back to them (bottom half, ACK,
         * timer, page fault) and reads the record then.  None: idle, and
         * what was posted meanwhile is taken now.
         */
        if ((uint16_t)(qp->sq_pi - qp->req.sq_ci)) {
            rs_dbrec_sq_arm(c, qpn);
        } else if (rs_dbrec_sq_idle(c, qpn)) {
            if (budget) {
                goto again;
            }
            rs_dbrec_sq_arm(c, qpn);
            more = true;
        }
    }
    *used = RS_REQ_BUDGET - budget;
    return more;
}

void rs_req_process(void *opaque)
{
    RSCore *c = opaque;
    bool active = rs_port_active(c);
    bool more = false;
    uint32_t qpn;

    if (!(c->status & R_RS_STATUS_READY_MASK)) {
        return;
    }
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        unsigned used;

        more |= rs_req_qp(c, qpn, active, &used);
    }
    rs_bundle_flush(c);         /* nothing waits past the engine's run */
    if (more) {
        rs_req_kick(c);
    }
}

/*
 * The SQ doorbell of valid QP qpn: send at once, in the thread that rang
 * it, instead of waking the main loop for req_bh.  That is one thread
 * switch less per message, and under TCG the work goes to the vCPU of a
 * guest that would only spin on its CQ meanwhile.  What exceeds the
 * budget, and every resumption on an ACK, still goes through req_bh; what
 * it bundled is sent when the MMIO write ends.
 * (The doorbell runs under the device's re-entrancy guard, so DMA cannot
 * ring it again.)
 */
void rs_req_doorbell(RSCore *c, uint32_t qpn)
{
    unsigned used;
    bool more;

    if (!(c->status & R_RS_STATUS_READY_MASK)) {
        return;
    }
    more = rs_req_qp(c, qpn, rs_port_active(c), &used);
    trace_rdma_session_req_doorbell(qpn, used, more);
    if (more) {
        rs_req_kick(c);
    }
}

/* Go back to the first unacknowledged PSN and send from there again. */
void rs_req_rewind(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    trace_rdma_session_req_rewind(qpn, qp->comp.sq_comp, qp->req.sq_ci,
                                  qp->comp.una_psn);
    qp->req.sq_ci = qp->comp.sq_comp;
    qp->req.pkt = MAX(rs_psn_diff(qp->comp.una_psn, qp->comp.psn), 0);
    qp->sq_psn = qp->comp.una_psn;
    qp->req.rd_out = 0;
    qp->req.last_progress = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    rs_path_rewind(c, qpn, qp);
    rs_req_kick(c);
}

/* The completion of the oldest WQE when the QP gives up on it. */
static void rs_req_give_up(RSCore *c, uint32_t qpn, RSQp *qp, uint8_t status)
{
    trace_rdma_session_req_give_up(qpn, qp->comp.sq_comp, status);
    rs_sq_complete(c, qpn, status, 0);
    qp->req.sq_ci = qp->comp.sq_comp;
    qp->req.pkt = 0;
    rs_qp_to_err(c, qpn);
}

/*
 * Local ACK timeout: 4.096 us * 2^timeout (0: none), at least 10 ms, and
 * doubled for each retry without progress, up to x-ack-backoff times, as
 * TCP backs off its retransmission timeout.  The first retry comes after
 * one timeout, so a lost packet is recovered as fast as IBTA's fixed timer
 * would; the later ones give a peer that stalls (a VM descheduled on a
 * loaded host, soft-RoCE under emulation) seconds instead of retry_cnt
 * timeouts of 67 ms before the QP gives up.  Real adapters stretch the
 * timer too, by enforcing a minimum or adapting it.
 */
void rs_req_retry_tick(void *opaque)
{
    RSCore *c = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    bool pending = false;
    uint32_t qpn;

    if (!rs_guard_enter(c)) {
        rs_req_arm_retry(c);
        return;
    }

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];
        int64_t tmo;

        if (!qp->valid || !rs_qpt_rc_requester(qp->type) ||
            qp->state != RS_QPS_RTS ||
            rs_psn_diff(qp->sq_psn, qp->comp.una_psn) <= 0 || !qp->timeout) {
            continue;
        }
        pending = true;
        tmo = rs_req_ack_timeout_ns(c, qp);
        if (qp->req.last_progress == 0 || qp->req.rnr_wait || qp->odp.req.mr) {
            qp->req.last_progress = now;    /* e.g. after migration */
        }
        if (now - qp->req.last_progress < tmo) {
            /*
             * Tail loss probe: the last packets before a full window or
             * the end of the traffic were lost, or a retransmission was
             * (the responder NAKs a gap only once), so nothing will
             * provoke a NAK.  Send again from the first unacknowledged
             * PSN once, long before a timeout of seconds (perftest -u
             * 18: 1 s); retry_cnt counts only real timeouts.  A duplicate
             * that was not needed is only acknowledged again.
             * In a group with another live session the probe is a
             * failover: the session gets no ACKs, so the probe goes on
             * the next one, and may come again there.
             */
            if (!qp->req.probed && !qp->req.retries &&
                now - qp->req.last_progress >= RS_PROBE_NS) {
                if (!rs_path_failover(c, qpn, qp)) {
                    qp->req.probed = true;
                    rs_path_fallback(c, qpn, qp);
                }
                trace_rdma_session_req_probe(qpn, qp->comp.una_psn);
                rs_req_lost(c, qpn, false);
            }
            continue;
        }
        /* A failover to a live session spends no retry. */
        if (rs_path_failover(c, qpn, qp)) {
            rs_req_lost(c, qpn, true);
            continue;
        }
        if (qp->req.retries >= qp->retry_cnt) {
            rs_req_give_up(c, qpn, qp, RS_WC_RETRY_EXC_ERR);
            continue;
        }
        qp->req.retries++;
        rs_path_fallback(c, qpn, qp);
        rs_req_lost(c, qpn, true);
    }
    if (pending) {
        rs_req_arm_retry(c);
    }
    rs_guard_leave(c);
}

/* IBTA table 45, RNR NAK timer field: units of 10 us. */
static const uint32_t rs_rnr_10us[32] = {
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
    384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
    24576, 32768, 49152,
};

/* Stop QP qpn for RNR timer code @timer, then send from una_psn again. */
static void rs_req_rnr_start(RSCore *c, uint32_t qpn, RSQp *qp,
                             uint8_t timer)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    rs_req_rewind(c, qpn);
    qp->req.rnr_wait = true;
    qp->req.rnr_until = now + rs_rnr_10us[timer & 31] * 10 * SCALE_US;
    timer_mod_anticipate(c->rnr_timer, qp->req.rnr_until);
}

/* The RNR wait (or the page-fault pause) is over: send again. */
void rs_req_rnr_end(RSCore *c, RSQp *qp)
{
    qp->req.rnr_wait = false;
    qp->odp.paused = false;
    qp->req.last_progress = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    rs_req_kick(c);
}

/*
 * An RNR NAK for the first unacknowledged PSN: pause the QP for the
 * peer's timer, then send from there again; give up after rnr_retry.
 */
void rs_req_rnr_wait(RSCore *c, RSQp *qp, uint8_t timer)
{
    uint32_t qpn = qp - c->qps;

    if (qp->rnr_retry != 7 && qp->req.rnr_retries >= qp->rnr_retry) {
        rs_req_give_up(c, qpn, qp, RS_WC_RNR_RETRY_EXC_ERR);
        return;
    }
    if (qp->rnr_retry != 7) {
        qp->req.rnr_retries++;
    }
    trace_rdma_session_req_rnr_wait(qpn, qp->comp.una_psn, timer,
                                    qp->req.rnr_retries);
    rs_req_rnr_start(c, qpn, qp, timer);
}

/*
 * The peer's responder waits for a page fault at psn (PAUSE): wait for
 * its RESUME, or at most its timer, then send from psn again.  Neither
 * retry_cnt nor rnr_retry is spent for RS_ODP_PAUSE_MAX_NS from the first
 * PAUSE for psn (progress starts it again).  After that the peer is taken
 * for one that does not answer: each PAUSE for psn spends a retry_cnt as
 * an ACK timeout does, and with none left the QP gives up.  So a peer (or
 * one that spoofs it) cannot keep a QP paused for ever.
 */
void rs_req_pause(RSCore *c, RSQp *qp, uint32_t psn, uint8_t timer)
{
    uint32_t qpn = qp - c->qps;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (!qp->odp.pause_since || qp->odp.pause_psn != psn) {
        qp->odp.pause_since = MAX(now, 1);
    } else if (now - qp->odp.pause_since >= RS_ODP_PAUSE_MAX_NS) {
        trace_rdma_session_req_pause_long(qpn, psn, qp->req.retries,
                                          qp->retry_cnt);
        if (qp->req.retries >= qp->retry_cnt) {
            rs_req_give_up(c, qpn, qp, RS_WC_RETRY_EXC_ERR);
            return;
        }
        qp->req.retries++;
    }
    trace_rdma_session_req_rnr_wait(qpn, psn, timer, qp->req.rnr_retries);
    rs_req_rnr_start(c, qpn, qp, timer);
    qp->odp.paused = true;
    qp->odp.pause_psn = psn;
}

void rs_req_rnr_tick(void *opaque)
{
    RSCore *c = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    int64_t next = INT64_MAX;
    uint32_t qpn;

    if (!rs_guard_enter(c)) {
        timer_mod_anticipate(c->rnr_timer, now + RS_RETRY_TICK_NS);
        return;
    }

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];

        if (!qp->valid || !qp->req.rnr_wait) {
            continue;
        }
        if (qp->state != RS_QPS_RTS || now >= qp->req.rnr_until) {
            rs_req_rnr_end(c, qp);
        } else {
            next = MIN(next, qp->req.rnr_until);
        }
    }
    if (next != INT64_MAX) {
        timer_mod_anticipate(c->rnr_timer, next);
    }
    rs_guard_leave(c);
}
