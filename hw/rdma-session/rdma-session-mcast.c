/*
 * rdma-session adapter: UD multicast (rxe_mcast.c's role).
 *
 * The multicast table holds up to max-mcast-grps groups, each a multicast
 * GID (IPv4-mapped 224.0.0.0/4 or IPv6 ff00::/8) with the indices of up to
 * max-mcast-qp-attach UD QPs.  A RoCEv2 UD packet to a group's address
 * with DQPN 0xffffff is delivered to every QP attached to the group, each
 * copy into a receive WQE of that QP (rs_mcast_input in
 * rdma-session-net.c), so one packet costs at most max-mcast-qp-attach
 * deliveries.  The receive path hands such a packet to the engine only
 * while its group has a QP attached; otherwise it is an ordinary multicast
 * frame for the Ethernet filter.
 *
 * A QP that is attached cannot be destroyed (IBTA o10-2.2.3; ib_core and
 * rdma_cm detach first), so the table never names a free QP.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

bool rs_gid_is_mcast(const uint8_t *gid)
{
    uint32_t ip;

    if (rs_gid_to_ip4(gid, &ip)) {
        return (ip >> 28) == 0xe;       /* 224.0.0.0/4 */
    }
    return gid[0] == 0xff;
}

/* The Ethernet group address of a multicast GID (RFC 1112, RFC 2464). */
void rs_mcast_mac(const uint8_t *gid, uint8_t *mac)
{
    uint32_t ip;

    if (rs_gid_to_ip4(gid, &ip)) {
        mac[0] = 0x01;
        mac[1] = 0x00;
        mac[2] = 0x5e;
        mac[3] = (ip >> 16) & 0x7f;
        mac[4] = ip >> 8;
        mac[5] = ip;
    } else {
        mac[0] = 0x33;
        mac[1] = 0x33;
        memcpy(mac + 2, gid + 12, 4);
    }
}

/* The table index of the group with this GID, -1 if none. */
int rs_mcast_find(RSCore *c, const uint8_t *gid)
{
    uint32_t i;

    for (i = 0; i < c->p.max_mcast_grps; i++) {
        if (c->mcast[i].valid && !memcmp(c->mcast[i].gid, gid, 16)) {
            return i;
        }
    }
    return -1;
}

/* The position of QP qpn in group g's list, -1 if it is not attached. */
static int rs_mcast_qp_pos(const RSMcastGrp *g, uint32_t qpn)
{
    uint32_t i;

    for (i = 0; i < g->nqp; i++) {
        if (g->qp[i] == qpn) {
            return i;
        }
    }
    return -1;
}

bool rs_mcast_qp_attached(RSCore *c, uint32_t qpn)
{
    uint32_t i;

    for (i = 0; i < c->p.max_mcast_grps; i++) {
        if (c->mcast[i].valid && rs_mcast_qp_pos(&c->mcast[i], qpn) >= 0) {
            return true;
        }
    }
    return false;
}

/* The GID and UD QP of an ATTACH/DETACH_MCAST command, validated. */
static uint8_t rs_mcast_args(RSCore *c, const struct rs_admin_cmd *cmd,
                             uint32_t *qpn)
{
    const struct rs_cmd_mcast *m = &cmd->mcast;

    *qpn = RS_QP_LOOKUP(c, le32_to_cpu(m->qp));
    if (!*qpn) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (c->qps[*qpn].type != RS_QPT_UD) {
        return RS_STATUS_NOT_SUPPORTED;
    }
    if (!rs_gid_is_mcast(m->gid)) {
        return RS_STATUS_BAD_PARAM;
    }
    return RS_STATUS_OK;
}

uint8_t rs_cmd_attach_mcast(RSCore *c, const struct rs_admin_cmd *cmd,
                            struct rs_admin_cqe *cqe)
{
    const uint8_t *gid = cmd->mcast.gid;
    RSMcastGrp *g;
    uint32_t qpn;
    int idx;
    uint8_t st = rs_mcast_args(c, cmd, &qpn);

    if (st) {
        return st;
    }
    idx = rs_mcast_find(c, gid);
    if (idx < 0) {
        for (idx = 0; idx < c->p.max_mcast_grps; idx++) {
            if (!c->mcast[idx].valid) {
                break;
            }
        }
        if (idx == c->p.max_mcast_grps) {
            return RS_STATUS_NO_RESOURCES;
        }
        g = &c->mcast[idx];
        memset(g, 0, sizeof(*g));
        memcpy(g->gid, gid, sizeof(g->gid));
    } else {
        g = &c->mcast[idx];
        if (rs_mcast_qp_pos(g, qpn) >= 0) {
            return RS_STATUS_EXISTS;
        }
        if (g->nqp >= c->p.max_mcast_qp_attach) {
            return RS_STATUS_NO_RESOURCES;
        }
    }
    g->qp[g->nqp++] = qpn;
    g->valid = true;
    trace_rdma_session_mcast("attach", idx, qpn, g->nqp);
    return RS_STATUS_OK;
}

uint8_t rs_cmd_detach_mcast(RSCore *c, const struct rs_admin_cmd *cmd,
                            struct rs_admin_cqe *cqe)
{
    RSMcastGrp *g;
    uint32_t qpn;
    int idx, pos;
    uint8_t st = rs_mcast_args(c, cmd, &qpn);

    if (st) {
        return st;
    }
    idx = rs_mcast_find(c, cmd->mcast.gid);
    if (idx < 0) {
        return RS_STATUS_BAD_PARAM;
    }
    g = &c->mcast[idx];
    pos = rs_mcast_qp_pos(g, qpn);
    if (pos < 0) {
        return RS_STATUS_BAD_PARAM;
    }
    g->qp[pos] = g->qp[--g->nqp];
    g->qp[g->nqp] = 0;
    if (!g->nqp) {
        memset(g, 0, sizeof(*g));     /* the group's last QP left */
    }
    trace_rdma_session_mcast("detach", idx, qpn, g->nqp);
    return RS_STATUS_OK;
}

static bool rs_mcast_state_valid(RSCore *c)
{
    uint32_t i, j;

    for (i = 0; i < c->p.max_mcast_grps; i++) {
        const RSMcastGrp *g = &c->mcast[i];

        if (!g->valid) {
            if (g->nqp) {
                return false;
            }
            continue;
        }
        if (!rs_gid_is_mcast(g->gid) || !g->nqp ||
            g->nqp > c->p.max_mcast_qp_attach) {
            return false;
        }
        for (j = 0; j < g->nqp; j++) {
            uint32_t q = g->qp[j];

            if (q == 0 || q >= c->p.max_qps || !c->qps[q].valid ||
                c->qps[q].type != RS_QPT_UD || rs_mcast_qp_pos(g, q) != j) {
                return false;
            }
        }
        for (j = 0; j < i; j++) {
            if (c->mcast[j].valid &&
                !memcmp(c->mcast[j].gid, g->gid, sizeof(g->gid))) {
                return false;
            }
        }
    }
    return true;
}

static void rs_mcast_reset(RSCore *c)
{
    memset(c->mcast, 0, sizeof(*c->mcast) * c->p.max_mcast_grps);
}

static bool rs_mcast_check(RSCore *c, Error **errp)
{
    if (c->p.max_mcast_grps < 1 || c->p.max_mcast_grps > 1024) {
        error_setg(errp, "rdma-session: max-mcast-grps must be 1..1024");
        return false;
    }
    if (c->p.max_mcast_qp_attach < 1 ||
        c->p.max_mcast_qp_attach > RS_MCAST_QP_MAX) {
        error_setg(errp, "rdma-session: max-mcast-qp-attach must be 1..%d",
                   RS_MCAST_QP_MAX);
        return false;
    }
    return true;
}

static bool rs_mcast_realize(RSCore *c, Error **errp)
{
    c->mcast = g_new0(RSMcastGrp, c->p.max_mcast_grps);
    return true;
}

static void rs_mcast_unrealize(RSCore *c)
{
    g_free(c->mcast);
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

static const VMStateDescription vmstate_rs_mcast_grp = {
    .name = "rdma-session/mcast-grp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSMcastGrp),
        VMSTATE_UINT8_ARRAY(gid, RSMcastGrp, 16),
        VMSTATE_UINT32(nqp, RSMcastGrp),
        VMSTATE_UINT32_ARRAY(qp, RSMcastGrp, RS_MCAST_QP_MAX),
        VMSTATE_END_OF_LIST()
    },
};

/* Multicast came with ABI 1.2: sent only while a QP is attached. */
static bool rs_mcast_needed(void *opaque)
{
    RSCore *c = opaque;

    for (uint32_t i = 0; i < c->p.max_mcast_grps; i++) {
        if (c->mcast[i].valid) {
            return true;
        }
    }
    return false;
}

/* The QP table is loaded before any subsection: check what it names. */
static int rs_mcast_post_load(void *opaque, int version_id)
{
    if (!rs_mcast_state_valid(opaque)) {
        trace_rdma_session_migration_invalid();
        return -EINVAL;
    }
    return 0;
}

const VMStateDescription vmstate_rs_mcast = {
    .name = "rdma-session/core/mcast",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mcast_needed,
    .post_load = rs_mcast_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.max_mcast_grps, RSCore, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(mcast, RSCore, p.max_mcast_grps,
                                             vmstate_rs_mcast_grp,
                                             RSMcastGrp),
        VMSTATE_END_OF_LIST()
    },
};

const RSFeature rs_feature_mcast = {
    .name = "mcast",
    .check = rs_mcast_check,
    .realize = rs_mcast_realize,
    .unrealize = rs_mcast_unrealize,
    .reset = rs_mcast_reset,
    .pre_load = rs_mcast_reset,
};
