/*
 * rdma-session adapter: network identities (GIDs), UDP sessions and
 * session groups.
 *
 * Session-based RDMA: the guest kernel owns the session table.  It assigns
 * each session's UDP 5-tuple, and user space only picks among groups the
 * kernel bound to its QPs.  Source address and port come from the GID the
 * session is created on; the device enforces that a 5-tuple exists once.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "rdma-session-fabric.h"
#include "trace.h"

bool rs_gid_valid(RSCore *c, uint32_t gid_index)
{
    return gid_index < c->p.max_gids && c->gids[gid_index].valid;
}

uint8_t rs_cmd_add_gid(RSCore *c, const struct rs_admin_cmd *cmd,
                       struct rs_admin_cqe *cqe)
{
    static const uint8_t v4_prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
    };
    const struct rs_cmd_add_gid *g = &cmd->add_gid;
    uint32_t idx = le32_to_cpu(g->index);
    uint32_t vni = le32_to_cpu(g->vni);
    uint16_t vlan = le16_to_cpu(g->vlan);
    RSGid *gid;

    if (idx >= c->p.max_gids || g->type > RS_GID_ROCE_V2_IPV6 ||
        vni >= (1u << 24) ||
        (g->type == RS_GID_ROCE_V2_IPV4 &&
         memcmp(g->gid, v4_prefix, sizeof(v4_prefix)))) {
        return RS_STATUS_BAD_PARAM;
    }
    if (vlan && ((vlan & ~(RS_GID_VLAN_VALID | RS_GID_VLAN_VID_MASK)) ||
                 !(vlan & RS_GID_VLAN_VALID) ||
                 (vlan & RS_GID_VLAN_VID_MASK) > RS_VLAN_VID_MAX)) {
        RS_GUEST_ERR(rdma_session_err_gid_vlan, "ADD_GID %u: vlan 0x%x "
                     "is not 0 or VALID | VID 0-4094", idx, vlan);
        return RS_STATUS_BAD_PARAM;
    }
    gid = &c->gids[idx];
    if (gid->valid) {
        return RS_STATUS_EXISTS;
    }
    gid->valid = true;
    gid->type = g->type;
    gid->refs = 0;
    memcpy(gid->gid, g->gid, sizeof(gid->gid));
    gid->vlan = vlan ? RS_VLAN_TAGGED | (vlan & RS_GID_VLAN_VID_MASK) : 0;
    trace_rdma_session_gid_vlan(idx, vlan & RS_GID_VLAN_VID_MASK,
                                !!vlan);
    /* The host, not the guest's vni, says which identity it is in. */
    rs_netid_gid_added(c, idx);
    trace_rdma_session_gid(idx, true);
    rs_lan_gid_added(c);
    rs_fabric_addrs_changed(c);
    cqe->handle = cpu_to_le32(idx);
    cqe->result1 = cpu_to_le32(RS_NETID_RESULT(gid->netid, gid->vni));
    return RS_STATUS_OK;
}

uint8_t rs_cmd_del_gid(RSCore *c, const struct rs_admin_cmd *cmd,
                       struct rs_admin_cqe *cqe)
{
    uint32_t idx = le32_to_cpu(cmd->destroy.handle);

    if (!rs_gid_valid(c, idx)) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (c->gids[idx].refs) {
        return RS_STATUS_BUSY;
    }
    c->gids[idx].valid = false;
    trace_rdma_session_gid(idx, false);
    rs_fabric_addrs_changed(c);
    return RS_STATUS_OK;
}

uint8_t rs_cmd_create_session(RSCore *c, const struct rs_admin_cmd *cmd,
                              struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_create_session *cs = &cmd->create_session;
    uint32_t gid = le32_to_cpu(cs->gid_index);
    uint16_t sport = le16_to_cpu(cs->src_port);
    uint16_t dport = le16_to_cpu(cs->dst_port);
    RSSession *s;
    uint32_t i, idx;

    if (!rs_gid_valid(c, gid)) {
        return RS_STATUS_BAD_NETID;
    }
    if (sport < 1024 || dport == 0 || (cs->dmac[0] & 1)) {
        return RS_STATUS_BAD_PARAM;
    }
    for (i = 1; i < c->p.max_sessions; i++) {
        s = &c->sessions[i];
        if (s->valid && s->gid_index == gid && s->src_port == sport &&
            s->dst_port == dport && !memcmp(s->dst_ip, cs->dst_ip, 16)) {
            return RS_STATUS_EXISTS;
        }
    }
    idx = RS_ALLOC(c->sessions, c->p.max_sessions, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    s = &c->sessions[idx];
    s->valid = true;
    s->gid_index = gid;
    s->src_port = sport;
    s->dst_port = dport;
    s->refs = 0;
    memcpy(s->dst_ip, cs->dst_ip, sizeof(s->dst_ip));
    memcpy(s->dmac, cs->dmac, sizeof(s->dmac));
    rs_path_session_reset(s);
    c->gids[gid].refs++;
    trace_rdma_session_session(idx, gid, sport, dport);
    cqe->handle = cpu_to_le32(rs_handle(idx, s->gen));
    return RS_STATUS_OK;
}

uint8_t rs_cmd_destroy_session(RSCore *c, const struct rs_admin_cmd *cmd,
                               struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_LOOKUP(c->sessions, c->p.max_sessions,
                             le32_to_cpu(cmd->destroy.handle));
    RSSession *s = &c->sessions[idx];

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (s->refs) {
        return RS_STATUS_BUSY;
    }
    c->gids[s->gid_index].refs--;
    rs_path_session_reset(s);
    s->valid = false;
    s->gen++;
    return RS_STATUS_OK;
}

uint8_t rs_cmd_create_group(RSCore *c, const struct rs_admin_cmd *cmd,
                            struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_create_session_group *cg = &cmd->create_group;
    uint32_t members[RS_MAX_GROUP_SESSIONS];
    RSSessionGroup *g;
    uint32_t i, idx;

    if (cg->nsessions < 1 || cg->nsessions > RS_MAX_GROUP_SESSIONS ||
        cg->policy > RS_GROUP_ACTIVE_BACKUP) {
        return RS_STATUS_BAD_PARAM;
    }
    for (i = 0; i < cg->nsessions; i++) {
        members[i] = RS_LOOKUP(c->sessions, c->p.max_sessions,
                               le32_to_cpu(cg->session[i]));
        if (!members[i]) {
            return RS_STATUS_BAD_HANDLE;
        }
    }
    for (i = 1; i < cg->nsessions; i++) {
        if (c->sessions[members[i]].gid_index !=
            c->sessions[members[0]].gid_index) {
            return RS_STATUS_BAD_PARAM;
        }
    }
    idx = RS_ALLOC(c->groups, c->p.max_groups, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    g = &c->groups[idx];
    g->valid = true;
    g->nsessions = cg->nsessions;
    g->policy = cg->policy;
    g->next = 0;
    g->refs = 0;
    memset(g->session, 0, sizeof(g->session));
    for (i = 0; i < cg->nsessions; i++) {
        g->session[i] = members[i];
        c->sessions[members[i]].refs++;
    }
    cqe->handle = cpu_to_le32(rs_handle(idx, g->gen));
    return RS_STATUS_OK;
}

uint8_t rs_cmd_destroy_group(RSCore *c, const struct rs_admin_cmd *cmd,
                             struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_LOOKUP(c->groups, c->p.max_groups,
                             le32_to_cpu(cmd->destroy.handle));
    RSSessionGroup *g = &c->groups[idx];
    uint32_t i;

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (g->refs) {
        return RS_STATUS_BUSY;
    }
    for (i = 0; i < g->nsessions; i++) {
        c->sessions[g->session[i]].refs--;
    }
    g->valid = false;
    g->gen++;
    return RS_STATUS_OK;
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/* A session without the path subsection is up and has counted nothing. */
static int rs_session_pre_load(void *opaque)
{
    rs_path_session_reset(opaque);
    return 0;
}

const VMStateDescription vmstate_rs_session = {
    .name = "rdma-session/session",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = rs_session_pre_load,
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_session_path,
        NULL
    },
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSSession),
        VMSTATE_UINT8(gen, RSSession),
        VMSTATE_UINT8_ARRAY(dmac, RSSession, 6),
        VMSTATE_UINT8_ARRAY(dst_ip, RSSession, 16),
        VMSTATE_UINT16(src_port, RSSession),
        VMSTATE_UINT16(dst_port, RSSession),
        VMSTATE_UINT32(gid_index, RSSession),
        VMSTATE_UINT32(refs, RSSession),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_rs_group = {
    .name = "rdma-session/session-group",
    .version_id = 2,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSSessionGroup),
        VMSTATE_UINT8(gen, RSSessionGroup),
        VMSTATE_UINT8(nsessions, RSSessionGroup),
        VMSTATE_UINT8(policy, RSSessionGroup),
        VMSTATE_UINT32_ARRAY(session, RSSessionGroup, RS_MAX_GROUP_SESSIONS),
        VMSTATE_UINT32(refs, RSSessionGroup),
        VMSTATE_UINT8_V(next, RSSessionGroup, 2),
        VMSTATE_END_OF_LIST()
    },
};

/* ABI 1.9: a GID's VLAN, sent only for a GID on one. */
static bool rs_gid_vlan_needed(void *opaque)
{
    const RSGid *g = opaque;

    return g->vlan != 0;
}

static int rs_gid_vlan_post_load(void *opaque, int version_id)
{
    const RSGid *g = opaque;

    if (g->vlan && (g->vlan & ~(RS_VLAN_TAGGED | 0xfff) ||
                    !(g->vlan & RS_VLAN_TAGGED) ||
                    RS_VLAN_VID(g->vlan) > RS_VLAN_VID_MAX)) {
        trace_rdma_session_migration_invalid();
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription vmstate_rs_gid_vlan = {
    .name = "rdma-session/gid/vlan",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_gid_vlan_needed,
    .post_load = rs_gid_vlan_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(vlan, RSGid),
        VMSTATE_END_OF_LIST()
    },
};

static int rs_gid_pre_load(void *opaque)
{
    RSGid *g = opaque;

    g->vlan = 0;                /* a stream without the subsection */
    return 0;
}

const VMStateDescription vmstate_rs_gid = {
    .name = "rdma-session/gid",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = rs_gid_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSGid),
        VMSTATE_UINT8(type, RSGid),
        VMSTATE_UINT8_ARRAY(gid, RSGid, 16),
        VMSTATE_UINT32(vni, RSGid),
        VMSTATE_UINT32(refs, RSGid),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_gid_vlan,
        NULL
    },
};

/* A valid session group: its size, policy, position and sessions. */
static bool rs_group_state_valid(RSCore *c, const RSSessionGroup *g)
{
    uint32_t j;

    if (g->nsessions < 1 || g->nsessions > RS_MAX_GROUP_SESSIONS ||
        g->policy > RS_GROUP_ACTIVE_BACKUP || g->next >= g->nsessions) {
        return false;
    }
    for (j = 0; j < g->nsessions; j++) {
        if (!RS_REF_OK(c, sessions, c->p.max_sessions, g->session[j])) {
            return false;
        }
    }
    return true;
}

static bool rs_session_state_valid(RSCore *c)
{
    uint32_t i;

    for (i = 0; i < c->p.max_sessions; i++) {
        if (c->sessions[i].valid &&
            !rs_gid_valid(c, c->sessions[i].gid_index)) {
            return false;
        }
    }
    for (i = 0; i < c->p.max_groups; i++) {
        if (c->groups[i].valid && !rs_group_state_valid(c, &c->groups[i])) {
            return false;
        }
    }
    return true;
}

const RSFeature rs_feature_session = {
    .name = "session",
    .validate = rs_session_state_valid,
};
