/*
 * rdma-session adapter: the transport engine's life cycle.
 *
 * The engine's bottom halves (requester, responder) and timers (local ACK
 * timeout, RNR waits), its frame buffers, what restarts them after an
 * incoming migration, and the migration hold of the outgoing side.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "rdma-session-core.h"
#include "rdma-session-engine.h"
#include "rdma-session-wire.h"
#include "trace.h"

/* After migration: timers and bottom halves are the destination's. */
static void rs_engine_post_load(RSCore *c)
{
    uint32_t qpn;

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];

        if (!qp->valid) {
            continue;
        }
        qp->req.last_progress = 0;
        qp->req.rnr_until = 0;
        qp->req.cwnd = 0;           /* the path may differ: start anew */
        qp->req.max_psn = qp->sq_psn;
        if (qp->req.rnr_wait) {
            timer_mod_anticipate(c->rnr_timer, 0);
        }
        if (qp->resp.ack_pending) {
            qemu_bh_schedule(c->resp_bh);
        }
        if (rs_qpt_rc_requester(qp->type) &&
            rs_psn_diff(qp->sq_psn, qp->comp.una_psn) > 0) {
            rs_req_arm_retry(c);
        }
    }
    rs_bundle_reset(c);         /* negotiate again: the path may differ */
    rs_req_kick(c);
}

/* ECN's CNP interval and DCQCN's rate start afresh for a new QP. */
static void rs_engine_qp_created(RSCore *c, uint32_t qpn)
{
    rs_ecn_qp_created(c, qpn);
    rs_dcqcn_qp_created(c, qpn);
}

/* What the core and the verbs objects call (RSEngineOps). */
static const RSEngineOps rs_engine_ops = {
    .kick = rs_req_kick,
    .doorbell = rs_req_doorbell,
    .rewind = rs_req_rewind,
    .odp_resume = rs_resp_odp_resume,
    .odp_fail = rs_resp_odp_fail,
    .dc_dct_stop = rs_dc_dct_stop,
    .dc_dci_reset = rs_dc_dci_reset,
    .dc_ctx_error = rs_dc_ctx_error,
    .qp_created = rs_engine_qp_created,
};

static bool rs_engine_realize(RSCore *c, Error **errp)
{
    c->engine = &rs_engine_ops;
    c->retry_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rs_req_retry_tick, c);
    c->rnr_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rs_req_rnr_tick, c);
    c->req_bh = qemu_bh_new_guarded(rs_req_process, c, c->guard);
    c->resp_bh = qemu_bh_new_guarded(rs_resp_process, c, c->guard);
    c->req_buf = g_malloc0(RS_WIRE_MAX_FRAME);
    c->resp_buf = g_malloc0(RS_WIRE_MAX_FRAME);
    c->rx_buf = g_malloc0(RS_WIRE_MAX_FRAME);
    return true;
}

/*
 * Device reset: no QP is left, so nothing may run for the old ones (a
 * timer or bottom half that ran later would find the tables of the next
 * driver instance).
 */
static void rs_engine_reset(RSCore *c)
{
    qemu_bh_cancel(c->req_bh);
    qemu_bh_cancel(c->resp_bh);
    timer_del(c->retry_timer);
    timer_del(c->rnr_timer);
}

static void rs_engine_unrealize(RSCore *c)
{
    qemu_bh_delete(c->req_bh);
    c->req_bh = NULL;
    qemu_bh_delete(c->resp_bh);
    c->resp_bh = NULL;
    timer_free(c->retry_timer);
    c->retry_timer = NULL;
    timer_free(c->rnr_timer);
    c->rnr_timer = NULL;
    g_free(c->req_buf);
    g_free(c->resp_buf);
    g_free(c->rx_buf);
}

const RSFeature rs_feature_engine = {
    .name = "engine",
    .realize = rs_engine_realize,
    .unrealize = rs_engine_unrealize,
    .quiesce = rs_engine_reset,
    .post_load = rs_engine_post_load,
};

/* ------------------------------------------------------------------ */
/* Migration hold                                                     */
/* ------------------------------------------------------------------ */

/*
 * Migration hold.  While the VM is stopped for migration nobody answers
 * the peers: the device receives nothing until the destination runs, and
 * a peer's requester that hears nothing for its retry budget (about 3 s
 * at timeout 14, retry_cnt 7 on this adapter) moves its QP to the error
 * state, however long the switchover takes (pause-before-switchover, a
 * big VM, a slow link).  So from RS_HOLD_GRACE_MS after the stop, every
 * RS_HOLD_PERIOD_MS, the source sends each RC QP's peer an RNR NAK at the
 * PSN its responder expects, with the longest RNR timer (code 0, 655.36
 * ms): the peer waits without counting retries (rnr_retry 7 is without
 * limit; a lower rnr_retry is used up by RNR NAKs instead of timeouts)
 * and sends again from that PSN, which the destination then answers.
 * Short downtimes never get there, so peers with a small rnr_retry see
 * nothing.  The hold ends when the device's state is saved (from there
 * on the destination answers), when the VM runs again (a failed or
 * cancelled migration) or at a reset.  Its frames go to the backend
 * directly (RSCore.send_stopped): datagram backends (tap, dgram, socket
 * mcast/udp) only, a stream backend gets no hold.  It reads the QP tables
 * and sends frames, nothing else: the state was or will be saved as it is.
 */
#define RS_HOLD_GRACE_MS    300
#define RS_HOLD_PERIOD_MS   300
#define RS_RNR_TIMER_MAX    0       /* IBTA RNR timer code 0: 655.36 ms */
#define RS_RNR_TIMER_MIN    1       /* 0.01 ms */

static void rs_migration_hold_tick(void *opaque)
{
    RSCore *c = opaque;
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
    uint32_t qpn, sent = 0;

    if (!c->holding) {
        return;
    }
    if (!rs_guard_enter(c)) {
        timer_mod(c->hold_timer, now + 1);
        return;
    }
    /* at most one frame per QP, each straight to the backend */
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        if (rs_resp_rnr_prompt(c, qpn, RS_RNR_TIMER_MAX)) {
            sent++;
        }
    }
    trace_rdma_session_migration_hold(sent);
    timer_mod(c->hold_timer, now + RS_HOLD_PERIOD_MS);
    rs_guard_leave(c);
}

void rs_migration_hold_start(RSCore *c)
{
    if (!c->p.migration_hold || c->holding || !rs_port_active(c)) {
        return;
    }
    if (!c->send_stopped) {
        trace_rdma_session_migration_no_hold();
        return;
    }
    c->holding = true;
    timer_mod(c->hold_timer,
              qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + RS_HOLD_GRACE_MS);
}

void rs_migration_hold_stop(RSCore *c)
{
    c->holding = false;
    timer_del(c->hold_timer);
}

/*
 * The destination runs: what waited for the switch goes now, not after a
 * backed-off timeout.  The peers' requesters get an RNR NAK with the
 * shortest timer at the PSN expected here (they send again at once, also
 * those that waited in the hold), unless a sequence NAK already asked
 * for that PSN; this side's requesters send again from the first
 * unacknowledged PSN.
 */
void rs_migration_resume(RSCore *c)
{
    uint32_t qpn, prompted = 0;

    if (!rs_port_active(c)) {
        return;
    }
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];

        /*
         * One request to go back per PSN: a peer told twice (a sequence
         * NAK for a frame queued during the switch, then the prompt)
         * starts a second retry over the first, which soft-RoCE's
         * requester gets wrong (it resent the tail of a SEND as a new
         * message).  Until the expected PSN comes, gaps get no NAK either.
         */
        if (!qp->resp.seq_nak_sent &&
            rs_resp_rnr_prompt(c, qpn, RS_RNR_TIMER_MIN)) {
            qp->resp.seq_nak_sent = true;
            prompted++;
        }
        if (qp->valid && rs_qpt_rc_requester(qp->type) &&
            qp->state == RS_QPS_RTS && !qp->req.rnr_wait &&
            rs_psn_diff(qp->sq_psn, qp->comp.una_psn) > 0) {
            rs_req_rewind(c, qpn);
        }
    }
    /*
     * READ responses and atomic ACKs the source still owed (a QP that
     * owes gets no prompt) go on from their resources: nothing else would
     * restart them before the peer's ACK timeout asks again.
     */
    qemu_bh_schedule(c->resp_bh);
    trace_rdma_session_migration_resume(prompted);
}

static bool rs_migration_realize(RSCore *c, Error **errp)
{
    c->hold_timer = timer_new_ms(QEMU_CLOCK_REALTIME,
                                 rs_migration_hold_tick, c);
    return true;
}

static void rs_migration_unrealize(RSCore *c)
{
    timer_free(c->hold_timer);
    c->hold_timer = NULL;
}

/*
 * The hold ends when the state is saved (the destination answers from
 * there on) and at a reset.
 */
const RSFeature rs_feature_hold = {
    .name = "hold",
    .realize = rs_migration_realize,
    .unrealize = rs_migration_unrealize,
    .quiesce = rs_migration_hold_stop,
    .pre_save = rs_migration_hold_stop,
};
