/*
 * rdma-session adapter: DCQCN, the reaction point of RoCEv2 congestion
 * control (Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015; ConnectX's rpg_* and dce_tcp_* parameters).
 *
 * A QP's requester is limited once a CNP arrived for it
 * (rdma-session-ecn.c): its current rate Rc starts at the line rate,
 * its target rate Rt and congestion estimate alpha (1/1024 units) at
 * their initial values.  On a CNP: Rt = Rc, Rc = Rc * (1 - alpha / 2)
 * (the cut rounded up), alpha = g * alpha + (1 - g), the increase stages
 * restart.  Every alpha period without a CNP: alpha = g * alpha.  Every
 * time-reset period, and every byte-reset bytes sent, one increase stage
 * (T, B): while both are below F, fast recovery; once one is at F,
 * additive increase, Rt += ai-rate; once both are above F, hyper
 * increase, Rt += hai-rate * (min(T, B) - F); each time Rc = (Rt + Rc) / 2
 * (rounded up).  Rates stay within [min-rate, line-rate]; a QP back at
 * the line rate is no longer limited.
 *
 * The requester paces a limited QP's data packets with a token bucket
 * on virtual time (rs_dcqcn_may_send, rs_dcqcn_sent); one device timer
 * runs the periods and wakes the requester when tokens are back.  Work
 * per CNP is constant, per timer run linear in the QPs.  With dcqcn=off
 * CNPs are only counted.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/timer.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

#define RS_DCQCN_ONE        1024u   /* alpha and g: 1/1024 units */
/*
 * Bytes a limited QP may send at once.  A packet leaves while the
 * tokens are above 0, so they never go below 1 - RS_WIRE_MAX_FRAME.
 */
#define RS_DCQCN_BURST      4096
#define RS_DCQCN_RATE_MAX   400000  /* Mbps */
#define RS_DCQCN_PERIOD_MAX 1000000 /* us */

static int64_t rs_dcqcn_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/* Run the timer at when, or before if it is due earlier already. */
static void rs_dcqcn_arm(RSCore *c, int64_t when)
{
    timer_mod_anticipate(c->dcqcn_timer, when);
}

/*
 * Tokens for the time since the last refill, whole bytes only (Mbps * ns
 * / 8000 = bytes); the time a partial byte took is kept for the next.
 */
static void rs_dcqcn_refill(RSDcqcn *d, int64_t now)
{
    int64_t dt = now - d->refill_ns, add;

    if (dt <= 0) {
        return;
    }
    if (dt >= (RS_DCQCN_BURST - d->tokens) * 8000 / d->rc) {
        d->tokens = RS_DCQCN_BURST;
        d->refill_ns = now;
        return;
    }
    add = dt * d->rc / 8000;
    d->tokens += add;
    d->refill_ns += add * 8000 / d->rc;
}

/* Rc = (Rt + Rc) / 2 after Rt grew by inc, both within the line rate. */
static void rs_dcqcn_increase(RSCore *c, uint32_t qpn, RSDcqcn *d,
                              uint32_t inc)
{
    uint32_t line = c->p.dcqcn_line_rate;

    d->rt = MIN((uint64_t)d->rt + inc, line);
    d->rc = (d->rt + d->rc + 1) / 2;
    trace_rdma_session_dcqcn_increase(qpn, d->t_stage, d->b_stage, d->rc,
                                      d->rt);
    if (d->rc >= line) {
        d->active = false;          /* back at the line rate */
        trace_rdma_session_dcqcn_unlimited(qpn);
    }
}

/* One increase stage (a period or byte-reset bytes passed). */
static void rs_dcqcn_stage(RSCore *c, uint32_t qpn, RSDcqcn *d)
{
    uint32_t f = c->p.dcqcn_threshold;
    uint32_t lo = MIN(d->t_stage, d->b_stage);

    if (MAX(d->t_stage, d->b_stage) < f) {
        rs_dcqcn_increase(c, qpn, d, 0);            /* fast recovery */
    } else if (lo > f) {
        rs_dcqcn_increase(c, qpn, d, MIN((uint64_t)c->p.dcqcn_hai_rate *
                                         (lo - f), UINT32_MAX));
    } else {
        rs_dcqcn_increase(c, qpn, d, c->p.dcqcn_ai_rate);
    }
}

void rs_dcqcn_cnp(RSCore *c, uint32_t qpn)
{
    RSDcqcn *d = &c->dcqcn[qpn];
    uint32_t g = c->p.dcqcn_g, cut;
    int64_t now;

    if (!c->p.dcqcn) {
        return;
    }
    now = rs_dcqcn_now();
    if (!d->active) {
        *d = (RSDcqcn) {
            .active = true,
            .rc = c->p.dcqcn_line_rate,
            .rt = c->p.dcqcn_line_rate,
            .alpha = c->p.dcqcn_initial_alpha,
            .tokens = RS_DCQCN_BURST,
            .refill_ns = now,
        };
    } else {
        rs_dcqcn_refill(d, now);
    }
    /* The cut rounded up (at most Rc): a low rate still goes down. */
    cut = DIV_ROUND_UP((uint64_t)d->rc * d->alpha, 2 * RS_DCQCN_ONE);
    d->rt = d->rc;
    d->rc = MAX(d->rc - cut, c->p.dcqcn_min_rate);
    d->alpha = (g * d->alpha + (RS_DCQCN_ONE - g) * RS_DCQCN_ONE) /
               RS_DCQCN_ONE;
    d->t_stage = d->b_stage = 0;
    d->bytes = 0;
    d->alpha_next = now + (int64_t)c->p.dcqcn_alpha_period_us * SCALE_US;
    d->incr_next = now + (int64_t)c->p.dcqcn_time_reset_us * SCALE_US;
    c->stats.dcqcn_rate_reductions++;
    trace_rdma_session_dcqcn_reduce(qpn, d->rc, d->rt, d->alpha);
    rs_dcqcn_arm(c, MIN(d->alpha_next, d->incr_next));
}

bool rs_dcqcn_may_send(RSCore *c, uint32_t qpn)
{
    RSDcqcn *d = &c->dcqcn[qpn];
    int64_t now;

    if (!d->active) {
        return true;
    }
    now = rs_dcqcn_now();
    rs_dcqcn_refill(d, now);
    if (d->tokens > 0) {
        return true;
    }
    /* Wake when the debt is paid and a byte more is there. */
    rs_dcqcn_arm(c, now + (1 - d->tokens) * 8000 / d->rc + 1);
    return false;
}

void rs_dcqcn_sent(RSCore *c, uint32_t qpn, uint32_t bytes)
{
    RSDcqcn *d = &c->dcqcn[qpn];

    if (!d->active) {
        return;
    }
    d->tokens -= bytes;
    d->bytes += bytes;
    if (d->bytes >= c->p.dcqcn_byte_reset) {
        d->bytes = 0;
        d->b_stage = MIN(d->b_stage + 1, RS_DCQCN_STAGE_MAX);
        rs_dcqcn_stage(c, qpn, d);
    }
}

/*
 * The periods of every limited QP that are due, at most one of each per
 * QP per run (a run that comes late is followed by another at once);
 * then the requester, for the QPs whose tokens came back.
 */
static void rs_dcqcn_tick(void *opaque)
{
    RSCore *c = opaque;
    int64_t now = rs_dcqcn_now(), next = INT64_MAX;
    uint32_t g = c->p.dcqcn_g, qpn;

    if (!rs_guard_enter(c)) {
        rs_dcqcn_arm(c, now + SCALE_US);
        return;
    }
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSDcqcn *d = &c->dcqcn[qpn];

        if (!d->active) {
            continue;
        }
        if (!c->qps[qpn].valid) {
            d->active = false;      /* destroyed while limited */
            continue;
        }
        if (now >= d->alpha_next) {
            d->alpha = g * d->alpha / RS_DCQCN_ONE;
            d->alpha_next += (int64_t)c->p.dcqcn_alpha_period_us * SCALE_US;
        }
        if (now >= d->incr_next) {
            d->incr_next += (int64_t)c->p.dcqcn_time_reset_us * SCALE_US;
            d->t_stage = MIN(d->t_stage + 1, RS_DCQCN_STAGE_MAX);
            rs_dcqcn_stage(c, qpn, d);
        }
        if (d->active) {
            next = MIN(next, MIN(d->alpha_next, d->incr_next));
        }
    }
    if (next != INT64_MAX) {
        rs_dcqcn_arm(c, next);
    }
    rs_req_kick(c);
    rs_guard_leave(c);
}

/* A new QP in slot qpn sends at the line rate. */
void rs_dcqcn_qp_created(RSCore *c, uint32_t qpn)
{
    c->dcqcn[qpn] = (RSDcqcn) { 0 };
}

/* The rate QMP reports for QP qpn: its current one, or the line rate. */
uint32_t rs_dcqcn_rate(RSCore *c, uint32_t qpn, uint32_t *target,
                       uint32_t *alpha)
{
    const RSDcqcn *d = &c->dcqcn[qpn];

    *target = d->active ? d->rt : c->p.dcqcn_line_rate;
    *alpha = d->active ? d->alpha : 0;
    return d->active ? d->rc : c->p.dcqcn_line_rate;
}

static bool rs_dcqcn_check(RSCore *c, Error **errp)
{
    const RSParams *p = &c->p;

    if (p->dcqcn_line_rate < 1 || p->dcqcn_line_rate > RS_DCQCN_RATE_MAX ||
        p->dcqcn_min_rate < 1 || p->dcqcn_min_rate > p->dcqcn_line_rate) {
        error_setg(errp, "rdma-session: dcqcn-min-rate and "
                   "dcqcn-line-rate must be 1 <= min <= line <= %u Mbps",
                   RS_DCQCN_RATE_MAX);
        return false;
    }
    if (p->dcqcn_ai_rate > RS_DCQCN_RATE_MAX ||
        p->dcqcn_hai_rate > RS_DCQCN_RATE_MAX) {
        error_setg(errp, "rdma-session: dcqcn-ai-rate and dcqcn-hai-rate "
                   "must be 0..%u Mbps", RS_DCQCN_RATE_MAX);
        return false;
    }
    if (p->dcqcn_g > RS_DCQCN_ONE || p->dcqcn_initial_alpha > RS_DCQCN_ONE) {
        error_setg(errp, "rdma-session: dcqcn-g and dcqcn-initial-alpha "
                   "must be 0..%u (1/%u units)", RS_DCQCN_ONE, RS_DCQCN_ONE);
        return false;
    }
    if (p->dcqcn_alpha_period_us < 1 ||
        p->dcqcn_alpha_period_us > RS_DCQCN_PERIOD_MAX ||
        p->dcqcn_time_reset_us < 1 ||
        p->dcqcn_time_reset_us > RS_DCQCN_PERIOD_MAX) {
        error_setg(errp, "rdma-session: dcqcn-alpha-period and "
                   "dcqcn-time-reset must be 1..%u us", RS_DCQCN_PERIOD_MAX);
        return false;
    }
    if (p->dcqcn_byte_reset < 1 || p->dcqcn_threshold < 1 ||
        p->dcqcn_threshold > RS_DCQCN_STAGE_MAX / 2) {
        error_setg(errp, "rdma-session: dcqcn-byte-reset must be at least "
                   "1, dcqcn-threshold 1..%u", RS_DCQCN_STAGE_MAX / 2);
        return false;
    }
    return true;
}

static bool rs_dcqcn_realize(RSCore *c, Error **errp)
{
    c->dcqcn = g_new0(RSDcqcn, c->p.max_qps);
    c->dcqcn_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rs_dcqcn_tick, c);
    return true;
}

static void rs_dcqcn_unrealize(RSCore *c)
{
    timer_free(c->dcqcn_timer);
    c->dcqcn_timer = NULL;
    g_free(c->dcqcn);
    c->dcqcn = NULL;
}

static void rs_dcqcn_quiesce(RSCore *c)
{
    timer_del(c->dcqcn_timer);
}

static void rs_dcqcn_reset(RSCore *c)
{
    memset(c->dcqcn, 0, sizeof(*c->dcqcn) * c->p.max_qps);
}

/* A QP destroyed while limited is not sent (nor checked for). */
static void rs_dcqcn_pre_save(RSCore *c)
{
    uint32_t qpn;

    for (qpn = 0; qpn < c->p.max_qps; qpn++) {
        if (!qpn || !c->qps[qpn].valid) {
            c->dcqcn[qpn].active = false;
        }
    }
}

static void rs_dcqcn_pre_load(RSCore *c)
{
    rs_dcqcn_reset(c);
}

/* Loaded state within this device's limits before anything uses it. */
static bool rs_dcqcn_valid(RSCore *c)
{
    const RSParams *p = &c->p;
    uint32_t qpn;

    for (qpn = 0; qpn < p->max_qps; qpn++) {
        const RSDcqcn *d = &c->dcqcn[qpn];

        if (!d->active) {
            continue;
        }
        if (!qpn || !c->qps[qpn].valid ||
            d->rc < p->dcqcn_min_rate || d->rc > p->dcqcn_line_rate ||
            d->rt < p->dcqcn_min_rate || d->rt > p->dcqcn_line_rate ||
            d->alpha > RS_DCQCN_ONE || d->t_stage > RS_DCQCN_STAGE_MAX ||
            d->b_stage > RS_DCQCN_STAGE_MAX ||
            d->tokens > RS_DCQCN_BURST ||
            d->tokens <= -(int64_t)RS_WIRE_MAX_FRAME) {
            trace_rdma_session_dcqcn_bad_state(qpn, d->rc, d->rt, d->alpha);
            return false;
        }
    }
    return true;
}

/* The periods go on from the loaded times (the virtual clock came too). */
static void rs_dcqcn_post_load(RSCore *c)
{
    uint32_t qpn;

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        if (c->dcqcn[qpn].active) {
            rs_dcqcn_arm(c, rs_dcqcn_now());
            return;
        }
    }
}

static const VMStateDescription vmstate_rs_dcqcn_qp = {
    .name = "rdma-session/dcqcn-qp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(active, RSDcqcn),
        VMSTATE_UINT32(rc, RSDcqcn),
        VMSTATE_UINT32(rt, RSDcqcn),
        VMSTATE_UINT32(alpha, RSDcqcn),
        VMSTATE_UINT32(t_stage, RSDcqcn),
        VMSTATE_UINT32(b_stage, RSDcqcn),
        VMSTATE_UINT32(bytes, RSDcqcn),
        VMSTATE_INT64(tokens, RSDcqcn),
        VMSTATE_INT64(refill_ns, RSDcqcn),
        VMSTATE_INT64(alpha_next, RSDcqcn),
        VMSTATE_INT64(incr_next, RSDcqcn),
        VMSTATE_END_OF_LIST()
    },
};

/* Sent only while a QP is limited: streams of older builds lack it. */
static bool rs_dcqcn_needed(void *opaque)
{
    RSCore *c = opaque;
    uint32_t qpn;

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        if (c->dcqcn[qpn].active) {
            return true;
        }
    }
    return false;
}

const VMStateDescription vmstate_rs_dcqcn = {
    .name = "rdma-session/core/dcqcn",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_dcqcn_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(dcqcn, RSCore, p.max_qps,
                                             vmstate_rs_dcqcn_qp, RSDcqcn),
        VMSTATE_END_OF_LIST()
    },
};

const RSFeature rs_feature_dcqcn = {
    .name = "dcqcn",
    .check = rs_dcqcn_check,
    .realize = rs_dcqcn_realize,
    .unrealize = rs_dcqcn_unrealize,
    .quiesce = rs_dcqcn_quiesce,
    .reset = rs_dcqcn_reset,
    .pre_save = rs_dcqcn_pre_save,
    .pre_load = rs_dcqcn_pre_load,
    .validate = rs_dcqcn_valid,
    .post_load = rs_dcqcn_post_load,
};
