/*
 * rdma-session adapter: the requester (rxe_req.c's role).
 *
 * An SQ doorbell only records the producer index and kicks req_bh; the
 * bottom half reads WQEs at each QP's sq_ci, checks them and their local
 * keys, segments the message by the path MTU and puts the packets on the
 * wire with the UDP 5-tuple of a session of the QP's group.  UD work
 * requests complete once sent; RC ones when the completer sees the ACK.
 *
 * Lost RC packets are recovered go-back-N: a sequence NAK or the QP's
 * local ACK timeout rewinds sq_ci/sq_psn to the oldest unacknowledged WQE
 * and the requester sends it again (retry_cnt times, then
 * RS_WC_RETRY_EXC_ERR).  RNR NAKs are not retried yet.
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
#include "rdma-session-wire.h"
#include "trace.h"

#define RS_REQ_BUDGET   64      /* WQEs per QP per bottom-half run */

void rs_req_kick(RSCore *c)
{
    if (c->req_bh) {
        qemu_bh_schedule(c->req_bh);
    }
}

void rs_roce_xmit(RSCore *c, uint8_t *frame, size_t len, uint32_t dip)
{
    struct iovec iov = { .iov_base = frame, .iov_len = len };
    uint8_t dgid[16];
    bool roce = rs_wire_is_roce(frame, len, dgid);

    trace_rdma_session_roce_tx(frame[lduw_be_p(frame + 12) == ETH_P_IPV6 ?
                                     RS_BTH_OFF6 : RS_BTH_OFF], len, dip);
    if (roce && rs_gid_find(c, dgid) >= 0) {
        rs_roce_input(c, frame, len);       /* loopback */
        return;
    }
    if (!c->link_up) {
        return;
    }
    c->send(c->owner, &iov, 1);
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
    /* IPv4 (v4-mapped GIDs) or IPv6, the same on both ends. */
    sgid = c->gids[gid_index].gid;
    v4s = rs_gid_to_ip4(sgid, &pkt->sip);
    v4d = rs_gid_to_ip4(dgid, &pkt->dip);
    if (v4s != v4d) {
        return false;
    }
    pkt->v6 = !v4s;
    pkt->flow_label = pkt->v6 ? flow_label : 0;
    memcpy(pkt->sgid, sgid, 16);
    memcpy(pkt->dgid, dgid, 16);
    memcpy(pkt->smac, c->mac.a, 6);
    return true;
}

/* Responses (ACKs, READ responses) leave on the group's first session. */
bool rs_qp_tuple(RSCore *c, RSQp *qp, uint32_t qpn, const RSAv *ud_av,
                 RSPkt *pkt)
{
    return rs_qp_tuple_at(c, qp, qpn, ud_av, pkt, 0);
}

/*
 * A new request message: RS_GROUP_ROUND_ROBIN puts each message on the
 * group's next session; all packets of the message use that one, so PSN
 * order within a message is kept on one 5-tuple.  RS_GROUP_ACTIVE_BACKUP
 * uses the first session (no path failure detection yet).
 */
bool rs_qp_tuple_msg(RSCore *c, RSQp *qp, uint32_t qpn, const RSAv *ud_av,
                     RSPkt *pkt)
{
    unsigned slot = 0;

    if (!ud_av && qp->group) {
        RSSessionGroup *g = &c->groups[qp->group];

        if (g->valid && g->nsessions && g->policy == RS_GROUP_ROUND_ROBIN) {
            slot = g->next % g->nsessions;
            g->next = (slot + 1) % g->nsessions;
        }
    }
    return rs_qp_tuple_at(c, qp, qpn, ud_av, pkt, slot);
}

static bool rs_req_opcode_ok(uint8_t qpt, uint8_t op)
{
    switch (op) {
    case RS_WR_SEND:
    case RS_WR_SEND_IMM:
    case RS_WR_LOCAL_INV:
    case RS_WR_REG_MR:
        return true;
    case RS_WR_RDMA_WRITE:
    case RS_WR_RDMA_WRITE_IMM:
        return qpt == RS_QPT_RC || qpt == RS_QPT_UC;
    case RS_WR_SEND_INV:
    case RS_WR_RDMA_READ:
    case RS_WR_ATOMIC_CMP_SWP:
    case RS_WR_ATOMIC_FETCH_ADD:
        return qpt == RS_QPT_RC;
    default:
        return false;
    }
}

static uint8_t rs_req_rc_op(uint8_t wr_op, uint32_t i, uint32_t n);

/* The wire opcode of packet i (of n) of a message. */
static uint8_t rs_req_wire_op(uint8_t qpt, uint8_t wr_op, uint32_t i,
                              uint32_t n)
{
    if (qpt == RS_QPT_UD || qpt == RS_QPT_GSI) {
        return wr_op == RS_WR_SEND_IMM ? 0x65 : 0x64;
    }
    /* UC's SEND and WRITE opcodes are RC's in the UC transport range. */
    return rs_req_rc_op(wr_op, i, n) | (qpt == RS_QPT_UC ? RS_OP_UC : 0);
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
                 "status %u", qpn, qp->sq_ci, status);
    rs_sq_flush_before(c, qpn, qp->sq_ci);
    rs_send_cqe(c, qpn, w, status, 0);
    qp->sq_ci++;
    qp->sq_comp = qp->sq_ci;
    rs_qp_to_err(c, qpn);
}

/* Execute the WQE at sq_ci.  False: stop working on this QP for now. */
static bool rs_req_wqe(RSCore *c, uint32_t qpn, RSQp *qp)
{
    uint32_t stride = rs_sq_stride(qp->max_send_sge, qp->max_inline);
    uint64_t addr = qp->sq_addr +
        (uint64_t)(qp->sq_ci & ((1u << qp->sq_log) - 1)) * stride;
    bool ud = qp->type == RS_QPT_UD || qp->type == RS_QPT_GSI;
    bool uc = qp->type == RS_QPT_UC;
    bool atomic;
    uint32_t mtu = 128u << qp->path_mtu;
    struct rs_send_wqe_ctrl w;
    struct rs_sge sge[RS_MAX_SGE];
    RSAv *ud_av = NULL, wqe_av;
    uint32_t gid_index, npkts, first_psn, expect_ci, i;
    uint64_t total = 0;
    bool is_inline;
    RSPkt pkt;
    uint8_t st;

    if (rs_dma_read(c, addr, &w, sizeof(w))) {
        memset(&w, 0, sizeof(w));
        rs_req_fail(c, qpn, qp, &w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }
    trace_rdma_session_req_wqe(qpn, qp->sq_ci, w.opcode, w.flags,
                               w.num_sge);
    if (!rs_req_opcode_ok(qp->type, w.opcode)) {
        rs_req_fail(c, qpn, qp, &w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }
    if (w.opcode == RS_WR_LOCAL_INV || w.opcode == RS_WR_REG_MR) {
        /*
         * Local operations wait until every earlier WQE completed: they
         * are then fenced as IBTA wants for LOCAL_INV, complete in order,
         * and a go-back-N rewind never executes one twice.
         */
        if (qp->sq_comp != qp->sq_ci) {
            return false;
        }
        st = rs_mr_local_op(c, qp, &w);
        if (st) {
            rs_req_fail(c, qpn, qp, &w, st);
            return false;
        }
        rs_send_cqe(c, qpn, &w, RS_WC_SUCCESS, 0);
        qp->sq_ci++;
        qp->sq_comp = qp->sq_ci;
        return true;
    }
    atomic = w.opcode == RS_WR_ATOMIC_CMP_SWP ||
             w.opcode == RS_WR_ATOMIC_FETCH_ADD;
    memset(&pkt, 0, sizeof(pkt));
    if (ud && (w.flags & RS_WQE_F_AV_ADDR)) {
        if (!rs_req_av_addr(c, qp, le64_to_cpu(w.swap), &wqe_av)) {
            rs_req_fail(c, qpn, qp, &w, RS_WC_LOC_QP_OP_ERR);
            return false;
        }
        ud_av = &wqe_av;
        gid_index = ud_av->gid_index;
    } else if (ud) {
        uint32_t ah = RS_LOOKUP(c->ahs, c->p.max_ahs, le32_to_cpu(w.ah));

        if (!ah || c->ahs[ah].pd != qp->pd) {
            rs_req_fail(c, qpn, qp, &w, RS_WC_LOC_QP_OP_ERR);
            return false;
        }
        ud_av = &c->ahs[ah].av;
        gid_index = ud_av->gid_index;
    } else {
        gid_index = qp->av.gid_index;
    }
    if (!rs_qp_tuple_msg(c, qp, qpn, ud_av, &pkt)) {
        rs_req_fail(c, qpn, qp, &w, RS_WC_LOC_QP_OP_ERR);
        return false;
    }

    is_inline = (w.flags & RS_WQE_F_INLINE) && w.opcode != RS_WR_RDMA_READ &&
                !atomic;
    if (is_inline) {
        total = le32_to_cpu(w.inline_len);
        if (total > qp->max_inline) {
            rs_req_fail(c, qpn, qp, &w, RS_WC_LOC_LEN_ERR);
            return false;
        }
    } else {
        if (w.num_sge > qp->max_send_sge ||
            rs_dma_read(c, addr + sizeof(w), sge,
                        w.num_sge * sizeof(struct rs_sge))) {
            rs_req_fail(c, qpn, qp, &w, RS_WC_LOC_QP_OP_ERR);
            return false;
        }
        st = rs_sge_check(c, qp, gid_index, sge, w.num_sge,
                          w.opcode == RS_WR_RDMA_READ || atomic ?
                          RS_ACCESS_LOCAL_WRITE : 0, &total);
        if (st) {
            rs_req_fail(c, qpn, qp, &w, st);
            return false;
        }
    }
    if (total > c->p.max_msg_size || (ud && total > mtu) ||
        (atomic && total != 8)) {
        rs_req_fail(c, qpn, qp, &w, RS_WC_LOC_LEN_ERR);
        return false;
    }

    npkts = total ? DIV_ROUND_UP(total, mtu) : 1;
    pkt.dqpn = ud ? le32_to_cpu(w.remote_qpn) : qp->dest_qpn;
    pkt.pkey = 0xffff;
    if (ud) {
        uint32_t qkey = le32_to_cpu(w.remote_qkey);

        pkt.qkey = (qkey & 0x80000000u) ? qp->qkey : qkey;
        pkt.sqpn = qpn;
    }
    pkt.imm = le32_to_cpu(w.imm_or_inv);
    pkt.ieth = le32_to_cpu(w.imm_or_inv);
    pkt.va = le64_to_cpu(w.remote_addr);
    pkt.rkey = le32_to_cpu(w.rkey);
    pkt.dmalen = total;

    if (w.opcode == RS_WR_RDMA_READ || atomic) {
        size_t len;

        pkt.opcode = rs_req_rc_op(w.opcode, 0, 1);
        if (w.opcode == RS_WR_ATOMIC_CMP_SWP) {
            pkt.swap_add = le64_to_cpu(w.swap);
            pkt.compare = le64_to_cpu(w.compare_add);
        } else {
            pkt.swap_add = le64_to_cpu(w.compare_add);
        }
        pkt.psn = qp->sq_psn;
        pkt.ackreq = true;
        len = rs_wire_build(c->req_buf, &pkt, 0);
        qp->sq_psn = (qp->sq_psn + npkts) & RS_PSN_MASK;
        qp->sq_ci++;
        rs_req_arm_retry(c);
        rs_roce_xmit(c, c->req_buf, len, pkt.dip);
        return true;
    }

    /*
     * Account for the whole message before the first packet leaves: over
     * loopback its ACK or NAK reaches the completer while we still send.
     */
    first_psn = qp->sq_psn;
    qp->sq_psn = (qp->sq_psn + (ud ? 1 : npkts)) & RS_PSN_MASK;
    qp->sq_ci++;
    expect_ci = qp->sq_ci;
    if (!ud && !uc) {
        rs_req_arm_retry(c);
    }
    for (i = 0; i < npkts; i++) {
        uint32_t off = i * mtu;
        uint32_t n = MIN((uint64_t)mtu, total - off);
        uint8_t *payload;
        size_t len;

        if (qp->state != RS_QPS_RTS || qp->sq_ci != expect_ci) {
            return false;       /* a NAK ended or rewound it meanwhile */
        }
        pkt.opcode = rs_req_wire_op(qp->type, w.opcode, i, npkts);
        payload = c->req_buf + rs_wire_payload_off(&pkt);
        if (is_inline) {
            st = rs_dma_read(c, addr + sizeof(w) + off, payload, n) ?
                 RS_WC_LOC_PROT_ERR : RS_WC_SUCCESS;
        } else {
            st = rs_sge_copy(c, qp, gid_index, sge, w.num_sge, off,
                             payload, n, false);
        }
        if (st) {
            /* Packets already sent: the peer sees a truncated message. */
            RS_GUEST_ERR(rdma_session_err_wqe, "QP %u send WQE %u: "
                         "completion status %u", qpn, qp->sq_ci - 1, st);
            rs_sq_flush_before(c, qpn, qp->sq_ci - 1);
            rs_send_cqe(c, qpn, &w, st, 0);
            qp->sq_comp = qp->sq_ci;
            rs_qp_to_err(c, qpn);
            return false;
        }
        pkt.psn = ud ? first_psn : (first_psn + i) & RS_PSN_MASK;
        pkt.ackreq = !ud && !uc && i == npkts - 1;
        pkt.se = i == npkts - 1 && (w.flags & RS_WQE_F_SOLICITED);
        len = rs_wire_build(c->req_buf, &pkt, n);
        rs_roce_xmit(c, c->req_buf, len, pkt.dip);
    }
    if (ud || uc) {
        /* No acknowledgements: done once on the wire. */
        rs_send_cqe(c, qpn, &w, RS_WC_SUCCESS, total);
        qp->sq_comp++;
        qp->comp_psn = qp->sq_psn;
    }
    return true;
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
        RSQp *qp = &c->qps[qpn];
        unsigned budget = RS_REQ_BUDGET;

        if (qp->valid && qp->state == RS_QPS_ERR) {
            /* Flushing needs no link. */
            more |= rs_qp_flush(c, qpn, budget);
            continue;
        }
        if (!active || !qp->valid || qp->state != RS_QPS_RTS) {
            continue;
        }
        if ((uint16_t)(qp->sq_pi - qp->sq_ci) > (1u << qp->sq_log)) {
            RS_GUEST_ERR(rdma_session_err_sq_overrun, "QP %u: SQ producer "
                         "%u is more than a ring ahead of %u", qpn,
                         qp->sq_pi, qp->sq_ci & 0xffff);
            rs_qp_to_err(c, qpn);
            continue;
        }
        while ((uint16_t)(qp->sq_pi - qp->sq_ci) && qp->valid &&
               qp->state == RS_QPS_RTS) {
            if (!budget--) {
                more = true;
                break;
            }
            if (!rs_req_wqe(c, qpn, qp)) {
                break;
            }
        }
    }
    if (more) {
        rs_req_kick(c);
    }
}

/* Go back to the oldest unacknowledged WQE and send from there again. */
void rs_req_rewind(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    trace_rdma_session_req_rewind(qpn, qp->sq_comp, qp->sq_ci, qp->comp_psn);
    qp->sq_ci = qp->sq_comp;
    qp->sq_psn = qp->comp_psn;
    qp->last_progress = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    rs_req_kick(c);
}

#define RS_RETRY_TICK_NS    (10 * SCALE_MS)

void rs_req_arm_retry(RSCore *c)
{
    if (c->retry_timer && !timer_pending(c->retry_timer)) {
        timer_mod(c->retry_timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  RS_RETRY_TICK_NS);
    }
}

/* Local ACK timeout: 4.096 us * 2^timeout (0: none), at least 10 ms. */
static void rs_req_retry_tick(void *opaque)
{
    RSCore *c = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    bool pending = false;
    uint32_t qpn;

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];
        int64_t tmo;

        if (!qp->valid || qp->type != RS_QPT_RC ||
            qp->state != RS_QPS_RTS || qp->sq_comp == qp->sq_ci ||
            !qp->timeout) {
            continue;
        }
        pending = true;
        tmo = MAX(4096LL << MIN(qp->timeout, 31), RS_RETRY_TICK_NS);
        if (qp->last_progress == 0) {
            qp->last_progress = now;    /* e.g. after migration */
        }
        if (now - qp->last_progress < tmo) {
            continue;
        }
        if (qp->retries >= qp->retry_cnt) {
            struct rs_send_wqe_ctrl w;
            uint32_t stride = rs_sq_stride(qp->max_send_sge, qp->max_inline);

            memset(&w, 0, sizeof(w));
            rs_dma_read(c, qp->sq_addr + (uint64_t)(qp->sq_comp &
                        ((1u << qp->sq_log) - 1)) * stride, &w, sizeof(w));
            rs_send_cqe(c, qpn, &w, RS_WC_RETRY_EXC_ERR, 0);
            qp->sq_comp++;
            qp->sq_ci = qp->sq_comp;
            rs_qp_to_err(c, qpn);
            continue;
        }
        qp->retries++;
        rs_req_rewind(c, qpn);
    }
    if (pending) {
        rs_req_arm_retry(c);
    }
}

void rs_engine_realize(RSCore *c)
{
    c->retry_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rs_req_retry_tick, c);
    c->req_bh = qemu_bh_new_guarded(rs_req_process, c, c->guard);
    c->req_buf = g_malloc0(RS_WIRE_MAX_FRAME);
    c->resp_buf = g_malloc0(RS_WIRE_MAX_FRAME);
    c->rx_buf = g_malloc0(RS_WIRE_MAX_FRAME);
}

void rs_engine_unrealize(RSCore *c)
{
    qemu_bh_delete(c->req_bh);
    c->req_bh = NULL;
    timer_free(c->retry_timer);
    c->retry_timer = NULL;
    g_free(c->req_buf);
    g_free(c->resp_buf);
    g_free(c->rx_buf);
}
