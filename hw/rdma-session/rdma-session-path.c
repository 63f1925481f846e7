/*
 * rdma-session adapter: multipath session groups.
 *
 * A connected QP's requests use one session of its group at a time
 * (RSQp.path.req_slot), every packet of them, resent ones included.  The
 * QP moves to another session only where the responder cannot see its
 * packets out of order:
 *
 * - at a message boundary, once the flowlet on the current session
 *   carried path-flowlet bytes (RS_GROUP_ROUND_ROBIN: the next usable
 *   session; RS_GROUP_ACTIVE_BACKUP: the first usable one) and nothing
 *   of the QP is outstanding: it waits for its ACKs first, about one
 *   round trip per switch;
 * - on a failover: the tail loss probe or the local ACK timeout found the
 *   current session silent.  It is marked down for the whole group, the
 *   QP goes back to its first unacknowledged PSN on the next live session
 *   and the driver hears RS_EV_PATH_MIGRATED.  The probe comes after
 *   RS_PROBE_NS without progress, long before retry_cnt timeouts.
 *
 * A down session is usable again path-holddown after it failed (at a
 * flowlet boundary); once it carries ACKs it is up.  When every session
 * is down the QP keeps to the least recently failed one and its retry
 * budget decides.  The responder answers a group QP's requests with the
 * UDP source port of the request (rs_path_resp_tuple), so that ACKs and
 * READ responses take the reverse of the request's path through an
 * ECMP network.  UD QPs with a group take the group's source ports in
 * turn.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

static RSSessionGroup *rs_path_group(RSCore *c, const RSQp *qp)
{
    RSSessionGroup *g;

    if (!qp->group || qp->group >= c->p.max_groups) {
        return NULL;
    }
    g = &c->groups[qp->group];
    if (!g->valid || !g->nsessions || g->nsessions > RS_MAX_GROUP_SESSIONS) {
        return NULL;
    }
    return g;
}

static uint32_t rs_path_index(RSCore *c, const RSSessionGroup *g,
                              unsigned slot)
{
    uint32_t idx = slot < g->nsessions ? g->session[slot] : 0;

    return idx && idx < c->p.max_sessions && c->sessions[idx].valid ? idx : 0;
}

static RSSession *rs_path_session(RSCore *c, const RSSessionGroup *g,
                                  unsigned slot)
{
    uint32_t idx = rs_path_index(c, g, slot);

    return idx ? &c->sessions[idx] : NULL;
}

/* A session a QP may move to at a flowlet boundary. */
static bool rs_path_usable(RSCore *c, const RSSession *s, int64_t now)
{
    return s && (!s->down ||
                 now - s->down_ns >= (int64_t)c->p.path_holddown_ms *
                                     SCALE_MS);
}

static bool rs_path_ud(const RSQp *qp)
{
    return qp->type == RS_QPT_UD || qp->type == RS_QPT_GSI;
}

/*
 * The n-th candidate after slot cur: the next ones in turn when
 * spreading, the group's order (first one first) for active-backup.
 */
static unsigned rs_path_candidate(const RSSessionGroup *g, unsigned cur,
                                  unsigned n)
{
    return g->policy == RS_GROUP_ACTIVE_BACKUP ? n % g->nsessions :
           (cur + 1 + n) % g->nsessions;
}

static void rs_path_move(RSCore *c, uint32_t qpn, RSQp *qp,
                         const RSSessionGroup *g, unsigned to, bool failover)
{
    uint32_t from_idx = rs_path_index(c, g, qp->path.req_slot);
    uint32_t to_idx = rs_path_index(c, g, to);

    trace_rdma_session_path_switch(qpn, from_idx, to_idx, failover);
    qp->path.req_slot = to;
    qp->path.bytes = 0;
    if (!failover) {
        return;
    }
    qp->path.migrations++;
    c->stats.path_failovers++;
    if (to_idx) {
        c->sessions[to_idx].migrated++;
    }
    rs_core_raise_event(c, RS_EV_PATH_MIGRATED, rs_handle(qpn, qp->gen),
                        (to_idx ? rs_handle(to_idx,
                                            c->sessions[to_idx].gen) : 0) |
                        (uint64_t)(from_idx ?
                                   rs_handle(from_idx,
                                             c->sessions[from_idx].gen) :
                                   0) << 32);
}

/*
 * A new message of connected QP qpn is about to start.  False: it waits
 * for the ACKs of what is outstanding before it moves to another session.
 */
bool rs_path_msg_start(RSCore *c, uint32_t qpn, RSQp *qp)
{
    RSSessionGroup *g = rs_path_group(c, qp);
    int64_t now;
    unsigned cur, to, n;

    if (!g || rs_path_ud(qp)) {
        return true;
    }
    if (qp->path.req_slot >= g->nsessions) {
        qp->path.req_slot = 0;
    }
    if (g->nsessions < 2 || rs_psn_diff(qp->sq_psn, qp->req.max_psn) < 0) {
        return true;            /* resending: it stays where it is */
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    cur = qp->path.req_slot;
    if (rs_path_usable(c, rs_path_session(c, g, cur), now) &&
        qp->path.bytes < c->p.path_flowlet) {
        return true;            /* the flowlet goes on */
    }
    to = cur;
    for (n = 0; n < g->nsessions; n++) {
        unsigned slot = rs_path_candidate(g, cur, n);

        if (rs_path_usable(c, rs_path_session(c, g, slot), now)) {
            to = slot;
            break;
        }
    }
    if (to == cur) {
        qp->path.bytes = 0;     /* a new flowlet on the same session */
        return true;
    }
    if (qp->comp.una_psn != qp->sq_psn) {
        return false;
    }
    rs_path_move(c, qpn, qp, g, to, false);
    return true;
}

/*
 * UD with a group: the datagram leaves with the UDP source port of the
 * group's next session (its addresses are the AH's).
 */
bool rs_path_tuple(RSCore *c, RSQp *qp, bool ud, RSPkt *pkt)
{
    RSSessionGroup *g = rs_path_group(c, qp);
    RSSession *s;

    if (!g || !ud) {
        return true;
    }
    s = rs_path_session(c, g, g->next % g->nsessions);
    if (s) {
        pkt->sport = s->src_port;
    }
    return true;
}

/* A request packet of bytes payload left on the QP's session. */
void rs_path_sent(RSCore *c, RSQp *qp, bool ud, uint32_t bytes)
{
    RSSessionGroup *g = rs_path_group(c, qp);
    RSSession *s;

    if (!g) {
        return;
    }
    if (ud) {
        s = rs_path_session(c, g, g->next % g->nsessions);
        g->next = (g->next + 1) % g->nsessions;
    } else {
        s = rs_path_session(c, g, qp->path.req_slot);
        qp->path.bytes = MIN((uint64_t)qp->path.bytes + bytes, UINT32_MAX);
    }
    if (s) {
        s->tx_packets++;
    }
}

/* The QP's requests were acknowledged: its session carries ACKs. */
void rs_path_acked(RSCore *c, RSQp *qp)
{
    RSSessionGroup *g = rs_path_group(c, qp);
    uint32_t idx;
    RSSession *s;

    if (!g) {
        return;
    }
    idx = rs_path_index(c, g, qp->path.req_slot);
    if (!idx) {
        return;
    }
    s = &c->sessions[idx];
    s->last_ack_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    if (s->down) {
        s->down = false;
        s->recoveries++;
        trace_rdma_session_path_up(idx, qp - c->qps);
    }
}

/*
 * The tail loss probe or the local ACK timeout of QP qpn: its session
 * carried no ACK for that long.  Mark it down and move the QP to the next
 * live session; true if there was one (the retry budget is not spent).
 */
bool rs_path_failover(RSCore *c, uint32_t qpn, RSQp *qp)
{
    RSSessionGroup *g = rs_path_group(c, qp);
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    unsigned cur, n;
    uint32_t idx;
    RSSession *s;

    if (!g || rs_path_ud(qp) || g->nsessions < 2 ||
        qp->path.req_slot >= g->nsessions) {
        return false;
    }
    cur = qp->path.req_slot;
    idx = rs_path_index(c, g, cur);
    if (idx) {
        s = &c->sessions[idx];
        if (!s->down) {
            trace_rdma_session_path_down(idx, qpn);
        }
        s->down = true;
        s->down_ns = now;
        s->failovers++;
    }
    for (n = 0; n < g->nsessions; n++) {
        unsigned slot = rs_path_candidate(g, cur, n);

        s = rs_path_session(c, g, slot);
        if (slot != cur && s && !s->down) {
            rs_path_move(c, qpn, qp, g, slot, true);
            return true;
        }
    }
    return false;
}

/*
 * Every session of QP qpn's group is down: it sends again on the least
 * recently failed one, as far as its retry budget goes.
 */
void rs_path_fallback(RSCore *c, uint32_t qpn, RSQp *qp)
{
    RSSessionGroup *g = rs_path_group(c, qp);
    unsigned n, oldest;
    RSSession *s;

    if (!g || rs_path_ud(qp) || qp->path.req_slot >= g->nsessions) {
        return;
    }
    oldest = qp->path.req_slot;
    for (n = 0; n < g->nsessions; n++) {
        RSSession *o = rs_path_session(c, g, oldest);

        s = rs_path_session(c, g, n);
        if (s && (!o || s->down_ns < o->down_ns)) {
            oldest = n;
        }
    }
    if (oldest != qp->path.req_slot) {
        rs_path_move(c, qpn, qp, g, oldest, true);
    }
}

/*
 * The requester goes back to una_psn: resend on a live session if the
 * QP's own was failed (by another QP of the group) meanwhile.
 */
void rs_path_rewind(RSCore *c, uint32_t qpn, RSQp *qp)
{
    RSSessionGroup *g = rs_path_group(c, qp);
    RSSession *s;
    unsigned n;

    if (!g || rs_path_ud(qp) || qp->path.req_slot >= g->nsessions) {
        return;
    }
    s = rs_path_session(c, g, qp->path.req_slot);
    if (s && !s->down) {
        return;
    }
    for (n = 0; n < g->nsessions; n++) {
        unsigned slot = rs_path_candidate(g, qp->path.req_slot, n);

        s = rs_path_session(c, g, slot);
        if (slot != qp->path.req_slot && s && !s->down) {
            rs_path_move(c, qpn, qp, g, slot, true);
            return;
        }
    }
}

/* The QP's group changed: it starts on the new group's first session. */
void rs_path_group_set(RSQp *qp)
{
    qp->path.req_slot = 0;
    qp->path.bytes = 0;
}

/*
 * A response (ACK, NAK, READ or atomic response) of a QP with a group
 * mirrors the UDP source port of the request it answers (0: none seen).
 */
void rs_path_resp_tuple(const RSQp *qp, uint16_t sport, RSPkt *pkt)
{
    if (qp->group && sport) {
        pkt->sport = sport;
    }
}

void rs_path_session_reset(RSSession *s)
{
    s->down = false;
    s->down_ns = 0;
    s->last_ack_ns = 0;
    s->tx_packets = 0;
    s->failovers = 0;
    s->recoveries = 0;
    s->migrated = 0;
}

/*
 * Incoming migration: path state within the group each QP uses.  The
 * times of a source whose clock was ahead are brought to now.
 */
static bool rs_path_post_load(RSCore *c)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint32_t i;

    for (i = 0; i < c->p.max_qps; i++) {
        const RSQp *qp = &c->qps[i];

        if (qp->valid && qp->group &&
            (qp->group >= c->p.max_groups || !c->groups[qp->group].valid ||
             qp->path.req_slot >= c->groups[qp->group].nsessions)) {
            return false;
        }
    }
    for (i = 0; i < c->p.max_sessions; i++) {
        const RSSession *s = &c->sessions[i];

        if (!s->valid && (s->down || s->tx_packets || s->failovers)) {
            return false;
        }
    }
    for (i = 0; i < c->p.max_sessions; i++) {
        RSSession *s = &c->sessions[i];

        s->down_ns = MIN(s->down_ns, now);
        s->last_ack_ns = MIN(s->last_ack_ns, now);
    }
    return true;
}

static uint64_t rs_path_age_us(int64_t now, int64_t then)
{
    return now > then ? (now - then) / SCALE_US : 0;
}

uint8_t rs_cmd_query_session(RSCore *c, const struct rs_admin_cmd *cmd,
                             struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_LOOKUP(c->sessions, c->p.max_sessions,
                             le32_to_cpu(cmd->query.handle));
    uint64_t addr = le64_to_cpu(cmd->query.resp_addr);
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    struct rs_session_attr a = {};
    const RSSession *s;

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (le32_to_cpu(cmd->query.resp_len) < sizeof(a)) {
        return RS_STATUS_BAD_SIZE;
    }
    if (addr & 7) {
        return RS_STATUS_BAD_ALIGN;
    }
    s = &c->sessions[idx];
    memcpy(a.dst_ip, s->dst_ip, sizeof(a.dst_ip));
    memcpy(a.dmac, s->dmac, sizeof(a.dmac));
    a.src_port = cpu_to_le16(s->src_port);
    a.dst_port = cpu_to_le16(s->dst_port);
    a.state = s->down ? RS_SESSION_DOWN : RS_SESSION_UP;
    a.gid_index = cpu_to_le32(s->gid_index);
    a.groups = cpu_to_le32(s->refs);
    a.tx_packets = cpu_to_le64(s->tx_packets);
    a.failovers = cpu_to_le64(s->failovers);
    a.recoveries = cpu_to_le64(s->recoveries);
    a.migrated = cpu_to_le64(s->migrated);
    a.ack_age_us = cpu_to_le64(s->last_ack_ns ?
                               rs_path_age_us(now, s->last_ack_ns) :
                               UINT64_MAX);
    a.down_age_us = cpu_to_le64(s->down ? rs_path_age_us(now, s->down_ns) :
                                0);
    return rs_dma_write(c, addr, &a, sizeof(a));
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/*
 * Multipath (ABI 1.6): a group QP's flowlet, failovers and the source
 * port its responses mirror (req_slot, the session it uses, is in the
 * main section).
 */
static bool rs_qp_path_needed(void *opaque)
{
    RSQp *qp = opaque;

    return qp->valid && qp->group &&
           (qp->path.bytes || qp->path.migrations || qp->path.resp_sport);
}

const VMStateDescription vmstate_rs_qp_path = {
    .name = "rdma-session/qp/path",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_qp_path_needed,
    .fields = (const VMStateField[]) {
        RS_VMSTATE_QP_UINT32_V("path_bytes", path.bytes, 0),
        RS_VMSTATE_QP_UINT32_V("path_migrations", path.migrations, 0),
        RS_VMSTATE_QP_UINT16_V("resp_sport", path.resp_sport, 0),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * Multipath (ABI 1.6): a session's path state and counters.  The times
 * are QEMU_CLOCK_VIRTUAL's, which migrates with the VM.
 */
static bool rs_session_path_needed(void *opaque)
{
    RSSession *s = opaque;

    return s->valid && (s->down || s->last_ack_ns || s->tx_packets ||
                        s->failovers || s->recoveries || s->migrated);
}

const VMStateDescription vmstate_rs_session_path = {
    .name = "rdma-session/session/path",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_session_path_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(down, RSSession),
        VMSTATE_INT64(down_ns, RSSession),
        VMSTATE_INT64(last_ack_ns, RSSession),
        VMSTATE_UINT64(tx_packets, RSSession),
        VMSTATE_UINT64(failovers, RSSession),
        VMSTATE_UINT64(recoveries, RSSession),
        VMSTATE_UINT64(migrated, RSSession),
        VMSTATE_END_OF_LIST()
    },
};

const RSFeature rs_feature_path = {
    .name = "path",
    .validate = rs_path_post_load,
};
