/*
 * rdma-session adapter: dynamically connected transport (DC).
 *
 * A DC initiator (RS_QPT_DCI) is an RC requester whose peer changes: each
 * send WQE names a target (AH, DCT number, DC key).  Before the first WQE
 * for a target the DCI sends DC_CONNECT to the DCT; the target's device
 * answers DC_CONNECT_REPLY with the QPN of a responder context it set up
 * for this DCI, and from then on the DCI sends standard RC packets to
 * that context.  Another target (once every earlier WQE completed) or
 * dc-idle without work closes the connection with DC_DISCONNECT.
 *
 * A responder context is a QP table slot of the device-internal type
 * RS_QPT_DC_CTX, in RTS, served by RC's responder unchanged: its PD, SRQ,
 * CQ and access are its DCT's (borrowed, as an XRC target borrows its
 * SRQ's), its address vector is the CONNECT's source.  dc-contexts bounds
 * them; c->dc_ctx lists them, so a CONNECT's work is bounded by it.
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

/* Key violation events: at most one per DCT in this much virtual time. */
#define RS_DC_VIOL_NS       (100 * SCALE_MS)
/*
 * dc_last of a DCI migrated while connecting: it sends its CONNECT again
 * at the next tick (virtual time is never negative; 0 is a valid time).
 */
#define RS_DC_RESEND        (-1)
/* A context idle this long may be taken for another DCI's CONNECT. */
#define RS_DC_RECLAIM_MIN   (100 * SCALE_MS)
/*
 * A context no packet reached for this long (or 100 x dc-idle if that is
 * longer) is freed: its DCI vanished or its DISCONNECT was lost.  Much
 * longer than a live DCI is silent: while its VM migrates (downtime, a
 * held switchover) or its work waits for RNR timers.
 */
#define RS_DC_EXPIRE_MIN    (60 * NANOSECONDS_PER_SECOND)

static int64_t rs_dc_idle_ns(RSCore *c)
{
    return (int64_t)c->p.dc_idle_us * SCALE_US;
}

static void rs_dc_arm(RSCore *c, int64_t when)
{
    if (c->dc_timer) {
        timer_mod_anticipate(c->dc_timer, when);
    }
}

/*
 * The next tick: often enough for dc-idle (1 - 10 ms: each tick walks
 * the QP table) and CONNECT timeouts (at least 10 ms).
 */
static void rs_dc_arm_tick(RSCore *c)
{
    int64_t tick = MIN(MAX(rs_dc_idle_ns(c) / 2, SCALE_MS), 10 * SCALE_MS);

    rs_dc_arm(c, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + tick);
}

void rs_dc_activity(RSCore *c, RSQp *qp)
{
    if (qp->type == RS_QPT_DCI || qp->type == RS_QPT_DC_CTX) {
        qp->dc.last = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    }
}

/* DC_CONNECT or DC_DISCONNECT of DCI qpn for its current target. */
static bool rs_dc_send(RSCore *c, uint32_t qpn, RSQp *qp, uint8_t opcode)
{
    RSPkt pkt;
    size_t len;

    memset(&pkt, 0, sizeof(pkt));
    if (!rs_qp_tuple(c, qp, qpn, NULL, &pkt)) {
        return false;
    }
    pkt.opcode = opcode;
    pkt.pkey = 0xffff;
    pkt.dqpn = opcode == RS_OP_DC_CONNECT ? qp->dc.dct : qp->dest_qpn;
    pkt.psn = qp->sq_psn;
    pkt.ackreq = opcode == RS_OP_DC_CONNECT;
    pkt.dc_key = qp->dc.key;
    pkt.dc_qpn = qpn;
    pkt.dc_conn = qp->dc.conn;
    trace_rdma_session_dc_tx(qpn, rs_opcode[opcode].name, pkt.dqpn,
                             qp->dc.conn, pkt.psn);
    len = rs_wire_build(c->req_buf, &pkt, 0);
    rs_roce_xmit(c, c->req_buf, len, &pkt);
    return true;
}

static void rs_dc_disconnect(RSCore *c, uint32_t qpn, RSQp *qp)
{
    if (qp->dc.state == RS_DC_CONNECTED) {
        rs_dc_send(c, qpn, qp, RS_OP_DC_DISCONNECT);
    }
    qp->dc.state = RS_DC_IDLE;
    qp->dest_qpn = 0;
    rs_qp_set_av(c, qp, NULL);
}

/*
 * The target of the send WQE w at sq_ci of DCI qpn, read once by the
 * requester.  A WQE not started yet has its AH checked (a valid AH of
 * the DCI's PD) and, for a new target, waits until every earlier WQE
 * completed, then the DCI disconnects and connects.  *go: connected to
 * w's target, the requester may send.  Returns a completion status for
 * a WQE that cannot be executed (RS_WC_SUCCESS otherwise).
 */
uint8_t rs_dc_req_target(RSCore *c, uint32_t qpn, RSQp *qp,
                         const struct rs_send_wqe_ctrl *w, bool started,
                         bool *go)
{
    uint32_t dct = le32_to_cpu(w->remote_qpn);
    uint64_t key = le32_to_cpu(w->dc_key_lo) |
                   (uint64_t)le32_to_cpu(w->dc_key_hi) << 32;
    uint32_t ah_h = le32_to_cpu(w->ah);
    uint32_t ah = RS_LOOKUP(c->ahs, c->p.max_ahs, ah_h);
    /* The handle, not the index: an AH created in a freed slot differs. */
    bool same = qp->dc.state != RS_DC_IDLE && ah_h == qp->dc.ah &&
                dct == qp->dc.dct && key == qp->dc.key;

    *go = false;
    if (started) {
        /* Sent before to the connection's target: the guest rewrote it. */
        if (!same || qp->dc.state != RS_DC_CONNECTED) {
            return RS_WC_LOC_QP_OP_ERR;
        }
        *go = true;
        return RS_WC_SUCCESS;
    }
    if (!ah || dct > RS_PSN_MASK) {
        RS_GUEST_ERR(rdma_session_err_dc_target, "DCI %u WQE %u: AH 0x%x, "
                     "DCT 0x%x invalid", qpn, qp->req.sq_ci,
                     le32_to_cpu(w->ah), dct);
        return RS_WC_LOC_QP_OP_ERR;
    }
    if (c->ahs[ah].pd != qp->pd) {
        RS_GUEST_ERR(rdma_session_err_dc_target, "DCI %u WQE %u: AH 0x%x, "
                     "DCT 0x%x of another PD", qpn, qp->req.sq_ci,
                     le32_to_cpu(w->ah), dct);
        return RS_WC_LOC_PROT_ERR;
    }
    if (same) {
        *go = qp->dc.state == RS_DC_CONNECTED;
        if (*go) {
            rs_dc_activity(c, qp);
        }
        return RS_WC_SUCCESS;
    }
    /* One connection at a time: the old target's WQEs complete first. */
    if (qp->comp.sq_comp != qp->req.sq_ci || qp->req.pkt) {
        return RS_WC_SUCCESS;
    }
    if (qp->dc.state != RS_DC_IDLE) {
        trace_rdma_session_dc_switch(qpn, qp->dc.dct, dct);
    }
    rs_dc_disconnect(c, qpn, qp);
    qp->dc.ah = ah_h;
    qp->dc.dct = dct;
    qp->dc.key = key;
    qp->dc.conn++;
    rs_qp_set_av(c, qp, &c->ahs[ah].av);
    qp->dc.state = RS_DC_CONNECTING;
    qp->req.retries = 0;
    rs_dc_activity(c, qp);
    if (!rs_dc_send(c, qpn, qp, RS_OP_DC_CONNECT)) {
        qp->dc.state = RS_DC_IDLE;
        rs_qp_set_av(c, qp, NULL);
        return RS_WC_LOC_QP_OP_ERR;
    }
    rs_dc_arm_tick(c);
    return RS_WC_SUCCESS;
}

/* DCI qpn stops connecting: its WQE at sq_comp completes with @status. */
static void rs_dc_fail(RSCore *c, uint32_t qpn, RSQp *qp, uint8_t status)
{
    trace_rdma_session_dc_fail(qpn, qp->dc.dct, status);
    qp->dc.state = RS_DC_IDLE;
    rs_qp_set_av(c, qp, NULL);
    rs_sq_complete(c, qpn, status, 0);
    qp->req.sq_ci = qp->comp.sq_comp;
    qp->req.pkt = 0;
    rs_qp_to_err(c, qpn);
}

/* Free responder context qpn (its claimed SRQ WQE completes flushed). */
static void rs_dc_ctx_free(RSCore *c, uint32_t qpn, const char *why)
{
    RSQp *qp = &c->qps[qpn];
    uint32_t i;

    trace_rdma_session_dc_ctx_free(qpn, qp->dc.dct, qp->dest_qpn, why);
    if (qp->resp.srq_claimed) {
        rs_srq_flush_claimed(c, qpn);
    }
    rs_odp_qp_clear(c, qp);
    rs_qp_set_av(c, qp, NULL);
    for (i = 0; i < c->p.dc_contexts; i++) {
        if (c->dc_ctx[i] == qpn) {
            c->dc_ctx[i] = 0;
        }
    }
    qp->valid = false;
    qp->gen++;
}

/* A context went to error (the NAK is out): release it at the next tick. */
void rs_dc_ctx_error(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->state != RS_QPS_ERR) {
        trace_rdma_session_qp_state(qpn, qp->state, RS_QPS_ERR);
        qp->state = RS_QPS_ERR;
    }
    rs_dc_arm(c, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
}

/* DCT dct left RTR or is destroyed: its contexts go. */
void rs_dc_dct_stop(RSCore *c, uint32_t dct)
{
    uint32_t i;

    for (i = 0; i < c->p.dc_contexts; i++) {
        if (c->dc_ctx[i] && c->qps[c->dc_ctx[i]].dc.dct == dct) {
            rs_dc_ctx_free(c, c->dc_ctx[i], "DCT left RTR");
        }
    }
}

/* DCI qpn is reset or destroyed: close its connection. */
void rs_dc_dci_reset(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->type == RS_QPT_DCI) {
        rs_dc_disconnect(c, qpn, qp);
    }
}

/* Answer a CONNECT (pkt from GID gid) as DCT dct: syndrome and context. */
/* The address vector back to the sender of @pkt, which arrived on @gid. */
static RSAv rs_dc_peer_av(int gid, const RSPkt *pkt)
{
    RSAv av = {
        .gid_index = gid,
        .hop_limit = 64,
        /* its priority back, on the VLAN of the GID it arrived on */
        .flow_label = RS_VLAN_PCP(pkt->vlan) << RS_AV_PRIO_SHIFT,
    };

    memcpy(av.dgid, pkt->sgid, sizeof(av.dgid));
    memcpy(av.dmac, pkt->smac, sizeof(av.dmac));
    return av;
}

static void rs_dc_reply(RSCore *c, int gid, const RSPkt *in, uint32_t dct,
                        uint8_t syndrome, uint32_t ctx)
{
    RSAv av = rs_dc_peer_av(gid, in);
    RSPkt pkt;
    size_t len;

    memset(&pkt, 0, sizeof(pkt));
    if (!rs_qp_tuple(c, &c->qps[0], dct, &av, &pkt)) {
        trace_rdma_session_dc_drop(in->dqpn, "no path back");
        return;
    }
    pkt.opcode = RS_OP_DC_CONNECT_REPLY;
    pkt.pkey = 0xffff;
    pkt.dqpn = in->dc_qpn;
    pkt.psn = in->psn;
    pkt.syndrome = syndrome;
    pkt.dc_qpn = ctx;
    pkt.dc_conn = in->dc_conn;
    trace_rdma_session_dc_reply(dct, in->dc_qpn, syndrome, ctx);
    len = rs_wire_build(c->resp_buf, &pkt, 0);
    rs_roce_xmit(c, c->resp_buf, len, &pkt);
}

/*
 * Shares of the context pool: one source address may hold at most half
 * of it, one DCT three quarters, so that neither a host with many DCIs
 * (or a forger of its address) nor the holder of one DCT's key takes
 * every context of the device.  A CONNECT over a share may reclaim the
 * context of that share idle longest, as a full pool's would; false if
 * it may not have a context now.
 */
static bool rs_dc_share(RSCore *c, uint32_t dct, const RSPkt *pkt,
                        int64_t now)
{
    int64_t reclaim = MAX(10 * rs_dc_idle_ns(c), RS_DC_RECLAIM_MIN);
    uint32_t pass, i;

    for (pass = 0; pass < 2; pass++) {
        uint32_t src = 0, on_dct = 0;
        int old_src = -1, old_dct = -1, victim;

        for (i = 0; i < c->p.dc_contexts; i++) {
            const RSQp *qp = &c->qps[c->dc_ctx[i]];

            if (!c->dc_ctx[i]) {
                continue;
            }
            if (!memcmp(qp->av.dgid, pkt->sgid, sizeof(pkt->sgid))) {
                src++;
                if (old_src < 0 ||
                    qp->dc.last < c->qps[c->dc_ctx[old_src]].dc.last) {
                    old_src = i;
                }
            }
            if (qp->dc.dct == dct) {
                on_dct++;
                if (old_dct < 0 ||
                    qp->dc.last < c->qps[c->dc_ctx[old_dct]].dc.last) {
                    old_dct = i;
                }
            }
        }
        if (src >= MAX(c->p.dc_contexts / 2, 1)) {
            victim = old_src;
        } else if (on_dct >= MAX(c->p.dc_contexts - c->p.dc_contexts / 4,
                                 1)) {
            victim = old_dct;
        } else {
            return true;
        }
        if (now - c->qps[c->dc_ctx[victim]].dc.last <= reclaim) {
            trace_rdma_session_dc_drop(dct, "CONNECT over its share");
            return false;
        }
        rs_dc_ctx_free(c, c->dc_ctx[victim], "reclaimed for its share");
    }
    return true;
}

/* A free slot of c->dc_ctx (reclaiming the context idle longest); -1. */
static int rs_dc_ctx_slot(RSCore *c, int64_t now)
{
    int64_t reclaim = MAX(10 * rs_dc_idle_ns(c), RS_DC_RECLAIM_MIN);
    int oldest = -1;
    uint32_t i;

    for (i = 0; i < c->p.dc_contexts; i++) {
        if (!c->dc_ctx[i]) {
            return i;
        }
        if (oldest < 0 || c->qps[c->dc_ctx[i]].dc.last <
                          c->qps[c->dc_ctx[oldest]].dc.last) {
            oldest = i;
        }
    }
    if (oldest >= 0 && now - c->qps[c->dc_ctx[oldest]].dc.last > reclaim) {
        rs_dc_ctx_free(c, c->dc_ctx[oldest], "reclaimed");
        return oldest;
    }
    return -1;
}

static void rs_dc_connect_in(RSCore *c, int gid, const RSPkt *pkt)
{
    uint32_t dct = pkt->dqpn, qpn, i;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    RSQp *d, *qp;
    RSAv av = rs_dc_peer_av(gid, pkt);
    int slot;

    if (!pkt->dc_qpn || pkt->dc_qpn > RS_PSN_MASK) {
        trace_rdma_session_dc_drop(dct, "CONNECT with a bad DCI QPN");
        return;
    }
    d = dct < c->p.max_qps ? &c->qps[dct] : NULL;
    if (!c->p.dc_contexts || !d || !d->valid || d->type != RS_QPT_DCT ||
        d->state != RS_QPS_RTR) {
        rs_dc_reply(c, gid, pkt, dct, RS_AETH_NAK_INV_REQ, 0);
        return;
    }
    if (pkt->dc_key != d->dc.key) {
        if (now >= d->dc.viol) {
            d->dc.viol = now + RS_DC_VIOL_NS;
            rs_core_raise_event(c, RS_EV_DCT_KEY_VIOLATION,
                                rs_handle(dct, d->gen), pkt->dc_qpn);
        }
        rs_dc_reply(c, gid, pkt, dct, RS_AETH_NAK_REM_ACCESS, 0);
        return;
    }
    /*
     * The same DCI: a CONNECT sent again, or a new connection.  Only
     * contexts this CONNECT's key opens: a DCI's source address and QPN
     * prove nothing, so a key of one DCT frees nothing on another.
     */
    for (i = 0; i < c->p.dc_contexts; i++) {
        qp = &c->qps[c->dc_ctx[i]];
        if (!c->dc_ctx[i] || qp->dest_qpn != pkt->dc_qpn ||
            memcmp(qp->av.dgid, pkt->sgid, sizeof(pkt->sgid)) ||
            (qp->dc.dct != dct && qp->dc.key != pkt->dc_key)) {
            continue;
        }
        if (qp->dc.conn == pkt->dc_conn && qp->dc.dct == dct &&
            qp->state == RS_QPS_RTS) {
            rs_dc_reply(c, gid, pkt, dct, RS_AETH_ACK, c->dc_ctx[i]);
            return;
        }
        rs_dc_ctx_free(c, c->dc_ctx[i], "the DCI connects again");
    }
    slot = rs_dc_share(c, dct, pkt, now) ? rs_dc_ctx_slot(c, now) : -1;
    qpn = slot < 0 ? 0 : RS_ALLOC(c->qps, c->p.max_qps, RS_GSI_QPN + 1);
    if (!qpn) {
        rs_dc_reply(c, gid, pkt, dct,
                    RS_AETH_TYPE_RNR | (d->min_rnr_timer & 0x1f), 0);
        return;
    }
    qp = &c->qps[qpn];
    *qp = (RSQp) {
        .valid = true,
        .gen = qp->gen,
        .type = RS_QPT_DC_CTX,
        .state = RS_QPS_RTS,
        .pd = d->pd,
        .recv_cq = d->recv_cq,
        .srq = d->srq,
        .uar = d->uar,
        .access = d->access,
        .path_mtu = d->path_mtu,
        .min_rnr_timer = d->min_rnr_timer,
        .max_dest_rd_atomic = RS_MAX_RD_ATOMIC,
        .dest_qpn = pkt->dc_qpn,
        .rq_psn = pkt->psn,
        .resp.op = RS_RESP_NONE,
        .dc.dct = dct,
        .dc.key = d->dc.key,
        .dc.conn = pkt->dc_conn,
        .dc.last = now,
    };
    rs_qp_set_av(c, qp, &av);
    c->dc_ctx[slot] = qpn;
    trace_rdma_session_dc_ctx_new(qpn, dct, pkt->dc_qpn, pkt->dc_conn);
    rs_dc_reply(c, gid, pkt, dct, RS_AETH_ACK, qpn);
    rs_dc_arm_tick(c);
}

static void rs_dc_reply_in(RSCore *c, int gid, const RSPkt *pkt)
{
    uint32_t qpn = pkt->dqpn;
    uint8_t type = pkt->syndrome & RS_AETH_TYPE_MASK;
    RSQp *qp = qpn < c->p.max_qps ? &c->qps[qpn] : NULL;

    if (!qp || !qp->valid || qp->type != RS_QPT_DCI ||
        qp->state != RS_QPS_RTS || qp->dc.state != RS_DC_CONNECTING ||
        pkt->psn != qp->sq_psn || pkt->dc_conn != qp->dc.conn ||
        !qp->has_av || qp->av.gid_index != gid ||
        memcmp(qp->av.dgid, pkt->sgid, sizeof(pkt->sgid))) {
        trace_rdma_session_dc_drop(qpn, "REPLY for no CONNECT");
        return;
    }
    if (type == RS_AETH_TYPE_ACK) {
        if (!pkt->dc_qpn || pkt->dc_qpn > RS_PSN_MASK) {
            trace_rdma_session_dc_drop(qpn, "REPLY with a bad context");
            return;
        }
        qp->dest_qpn = pkt->dc_qpn;
        qp->dc.state = RS_DC_CONNECTED;
        qp->req.retries = 0;
        qp->req.rnr_retries = 0;
        rs_dc_activity(c, qp);
        trace_rdma_session_dc_connected(qpn, qp->dc.dct, pkt->dc_qpn);
        rs_req_kick(c);
        return;
    }
    if (type == RS_AETH_TYPE_RNR) {
        /* Connect again after the target's timer (rnr_retry counts). */
        qp->dc.state = RS_DC_IDLE;
        rs_qp_set_av(c, qp, NULL);
        rs_req_rnr_wait(c, qp, pkt->syndrome & ~RS_AETH_TYPE_MASK);
        return;
    }
    rs_dc_fail(c, qpn, qp, pkt->syndrome == RS_AETH_NAK_REM_ACCESS ?
               RS_WC_REM_ACCESS_ERR : pkt->syndrome == RS_AETH_NAK_INV_REQ ?
               RS_WC_REM_INV_REQ_ERR : RS_WC_BAD_RESP_ERR);
}

static void rs_dc_disconnect_in(RSCore *c, int gid, const RSPkt *pkt)
{
    uint32_t qpn = pkt->dqpn;
    RSQp *qp = qpn < c->p.max_qps ? &c->qps[qpn] : NULL;

    if (!qp || !qp->valid || qp->type != RS_QPT_DC_CTX ||
        qp->dest_qpn != pkt->dc_qpn || qp->dc.conn != pkt->dc_conn ||
        qp->dc.key != pkt->dc_key || qp->av.gid_index != gid ||
        memcmp(qp->av.dgid, pkt->sgid, sizeof(pkt->sgid))) {
        trace_rdma_session_dc_drop(qpn, "DISCONNECT for no context");
        return;
    }
    rs_dc_ctx_free(c, qpn, "DISCONNECT");
}

/* A DC_CONNECT, _REPLY or _DISCONNECT that arrived on GID gid. */
void rs_dc_input(RSCore *c, int gid, const RSPkt *pkt)
{
    switch (pkt->opcode) {
    case RS_OP_DC_CONNECT:
        rs_dc_connect_in(c, gid, pkt);
        break;
    case RS_OP_DC_CONNECT_REPLY:
        rs_dc_reply_in(c, gid, pkt);
        break;
    default:
        rs_dc_disconnect_in(c, gid, pkt);
        break;
    }
}

/*
 * CONNECT retries (the local ACK timeout, retry_cnt), idle DCIs
 * (dc-idle), contexts in error or expired: one walk of
 * the QP table per tick.
 */
static void rs_dc_tick(void *opaque)
{
    RSCore *c = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    int64_t idle = rs_dc_idle_ns(c);
    bool pending = false;
    uint32_t qpn;

    if (!rs_guard_enter(c)) {
        rs_dc_arm_tick(c);
        return;
    }
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];

        if (!qp->valid) {
            continue;
        }
        if (qp->type == RS_QPT_DC_CTX) {
            if (qp->state == RS_QPS_ERR) {
                rs_dc_ctx_free(c, qpn, "error");
            } else if (now - qp->dc.last > MAX(100 * idle,
                                               RS_DC_EXPIRE_MIN)) {
                rs_dc_ctx_free(c, qpn, "idle");
            } else {
                pending = true;
            }
            continue;
        }
        if (qp->type != RS_QPT_DCI || qp->state != RS_QPS_RTS ||
            qp->dc.state == RS_DC_IDLE) {
            continue;
        }
        pending = true;
        if (qp->dc.state == RS_DC_CONNECTING) {
            int64_t tmo = rs_req_ack_timeout_ns(c, qp);

            if (qp->dc.last == RS_DC_RESEND) {
                /* Migrated while connecting: ask again, not counted. */
                rs_dc_activity(c, qp);
                rs_dc_send(c, qpn, qp, RS_OP_DC_CONNECT);
            } else if (qp->timeout && now - qp->dc.last >= tmo) {
                if (qp->req.retries >= qp->retry_cnt) {
                    rs_dc_fail(c, qpn, qp, RS_WC_RETRY_EXC_ERR);
                    continue;
                }
                qp->req.retries++;
                rs_dc_activity(c, qp);
                rs_dc_send(c, qpn, qp, RS_OP_DC_CONNECT);
            }
        } else if (qp->comp.sq_comp == qp->req.sq_ci && !qp->req.pkt &&
                   !(uint16_t)(qp->sq_pi - qp->req.sq_ci) &&
                   now - qp->dc.last >= idle) {
            trace_rdma_session_dc_idle(qpn, qp->dc.dct);
            rs_dc_disconnect(c, qpn, qp);
        }
    }
    if (pending) {
        rs_dc_arm_tick(c);
    }
    rs_guard_leave(c);
}

/*
 * After the QP table was loaded: DC fields of every QP, contexts
 * belonging to a DCT in RTR, at most dc-contexts of them.
 */
static bool rs_dc_state_valid(RSCore *c)
{
    uint32_t qpn, n = 0;

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        const RSQp *qp = &c->qps[qpn];
        const RSQp *d;

        if (!qp->valid) {
            continue;
        }
        switch (qp->type) {
        case RS_QPT_DCI:
            if (qp->dc.state > RS_DC_CONNECTED ||
                (qp->dc.state != RS_DC_IDLE &&
                 (!qp->has_av ||
                  (qp->dc.ah & RS_HANDLE_INDEX_MASK) >= c->p.max_ahs ||
                  qp->dc.dct > RS_PSN_MASK ||
                  (qp->dc.state == RS_DC_CONNECTED &&
                   (!qp->dest_qpn || qp->dest_qpn > RS_PSN_MASK))))) {
                return false;
            }
            break;
        case RS_QPT_DC_CTX:
            d = qp->dc.dct < c->p.max_qps ? &c->qps[qp->dc.dct] : NULL;
            if (++n > c->p.dc_contexts || !d || !d->valid ||
                d->type != RS_QPT_DCT || d->state != RS_QPS_RTR ||
                !qp->has_av || qp->dc.state ||
                (qp->state != RS_QPS_RTS && qp->state != RS_QPS_ERR) ||
                qp->srq != d->srq || qp->pd != d->pd ||
                qp->recv_cq != d->recv_cq || !qp->dest_qpn ||
                qp->dest_qpn > RS_PSN_MASK || qp->group) {
                return false;
            }
            break;
        default:
            if (qp->dc.state || qp->dc.ah || qp->dc.dct || qp->dc.conn ||
                (qp->dc.key && qp->type != RS_QPT_DCT)) {
                return false;
            }
            break;
        }
    }
    return true;
}

/* After migration: the context list, activity times, CONNECTs again. */
static void rs_dc_post_load(RSCore *c)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint32_t qpn, n = 0;
    bool any = false;

    memset(c->dc_ctx, 0, c->p.dc_contexts * sizeof(*c->dc_ctx));
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];

        qp->dc.viol = 0;
        if (!qp->valid) {
            continue;
        }
        if (qp->type == RS_QPT_DC_CTX && n < c->p.dc_contexts) {
            c->dc_ctx[n++] = qpn;
        }
        if (qp->type == RS_QPT_DCI || qp->type == RS_QPT_DC_CTX) {
            qp->dc.last = qp->dc.state == RS_DC_CONNECTING ? RS_DC_RESEND :
                          now;
            any = true;
        }
    }
    if (any) {
        rs_dc_arm(c, now);
    }
}

static bool rs_dc_realize(RSCore *c, Error **errp)
{
    c->dc_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rs_dc_tick, c);
    c->dc_ctx = g_new0(uint32_t, MAX(c->p.dc_contexts, 1));
    return true;
}

static void rs_dc_reset(RSCore *c)
{
    timer_del(c->dc_timer);
    memset(c->dc_ctx, 0, c->p.dc_contexts * sizeof(*c->dc_ctx));
}

static void rs_dc_unrealize(RSCore *c)
{
    timer_free(c->dc_timer);
    c->dc_timer = NULL;
    g_free(c->dc_ctx);
    c->dc_ctx = NULL;
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/* DC (ABI 1.5): sent by DCIs, DCTs and their responder contexts. */
static bool rs_qp_dc_needed(void *opaque)
{
    RSQp *qp = opaque;

    return qp->valid && (qp->type == RS_QPT_DCI || qp->type == RS_QPT_DCT ||
                         qp->type == RS_QPT_DC_CTX);
}

const VMStateDescription vmstate_rs_qp_dc = {
    .name = "rdma-session/qp/dc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_qp_dc_needed,
    .fields = (const VMStateField[]) {
        RS_VMSTATE_QP_UINT8_V("dc_state", dc.state, 0),
        RS_VMSTATE_QP_UINT32_V("dc_ah", dc.ah, 0),
        RS_VMSTATE_QP_UINT32_V("dc_dct", dc.dct, 0),
        RS_VMSTATE_QP_UINT64_V("dc_key", dc.key, 0),
        RS_VMSTATE_QP_UINT32_V("dc_conn", dc.conn, 0),
        VMSTATE_END_OF_LIST()
    },
};

const RSFeature rs_feature_dc = {
    .name = "dc",
    .realize = rs_dc_realize,
    .unrealize = rs_dc_unrealize,
    .quiesce = rs_dc_reset,
    .validate = rs_dc_state_valid,
    .post_load = rs_dc_post_load,
};
