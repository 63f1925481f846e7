/*
 * rdma-session adapter: migration state.
 *
 * Everything the device knows lives in the tables named here: the
 * registers and rings, every object table and each MR's translation table,
 * so memory keys (with their per-network tables), QP state and sessions
 * move with the VM.  Each table's description is in the file of its
 * feature (RSFeature, rdma-session-core.h), as are its pre_load defaults
 * and its checks; this file holds the core's section and runs the
 * features' hooks in order.  The object table sizes are part of the
 * device's configuration and must match on both sides.  post_load checks
 * every cross-reference before the device follows it, so a corrupt stream
 * fails the migration instead of sending the device out of its tables.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

/*
 * Loading over a live device (loadvm): each feature forgets what the
 * stream may not carry.
 */
static int rs_core_pre_load(void *opaque)
{
    RSCore *c = opaque;

    memset(&c->stats, 0, sizeof(c->stats));
    RS_FOR_EACH_FEATURE(f) {
        if ((*f)->pre_load) {
            (*f)->pre_load(c);
        }
    }
    return 0;
}

static int rs_core_pre_save(void *opaque)
{
    RSCore *c = opaque;

    RS_FOR_EACH_FEATURE(f) {
        if ((*f)->pre_save) {
            (*f)->pre_save(c);
        }
    }
    return 0;
}

static bool rs_mr_pages_used_valid(void *opaque, int version_id)
{
    RSCore *c = opaque;

    return c->mr_pages_used <= c->p.max_mr_pages;
}

/*
 * Every reference count is the number of live objects that hold one:
 * QPs hold their PD, CQs, SRQ, session group and (with an address
 * vector) GID, XRC targets their domain instead of PD, CQs and SRQ; MRs
 * and AHs their PD and GID; SRQs their PD, XRC SRQs also their domain
 * and CQ; sessions
 * their GID; groups each member session.  The indices were checked
 * before.  A wrong count would let DESTROY free an object still in use.
 */
static bool rs_core_refs_valid(RSCore *c)
{
    const RSParams *p = &c->p;
    g_autofree uint32_t *pd = g_new0(uint32_t, p->max_pds);
    g_autofree uint32_t *cq = g_new0(uint32_t, p->max_cqs);
    g_autofree uint32_t *srq = g_new0(uint32_t, p->max_srqs);
    g_autofree uint32_t *xrcd = g_new0(uint32_t, p->max_xrcds);
    g_autofree uint32_t *gid = g_new0(uint32_t, p->max_gids);
    g_autofree uint32_t *ses = g_new0(uint32_t, p->max_sessions);
    g_autofree uint32_t *grp = g_new0(uint32_t, p->max_groups);
    uint32_t i, j;

    for (i = 0; i < p->max_qps; i++) {
        const RSQp *qp = &c->qps[i];

        if (!qp->valid) {
            continue;
        }
        if (qp->type == RS_QPT_XRC_TGT) {
            /* Its SRQ, PD and CQ are borrowed from the last request's. */
            xrcd[qp->xrcd]++;
        } else if (qp->type != RS_QPT_DC_CTX) {
            /* A DC context borrows its DCT's. */
            pd[qp->pd]++;
            cq[qp->send_cq]++;
            cq[qp->recv_cq]++;
            if (qp->srq) {
                srq[qp->srq]++;
            }
        }
        if (qp->group) {
            grp[qp->group]++;
        }
        if (qp->has_av) {
            gid[qp->av.gid_index]++;
        }
    }
    for (i = 0; i < p->max_mrs; i++) {
        if (c->mrs[i].valid) {
            pd[c->mrs[i].pd]++;
            gid[c->mrs[i].gid_index]++;
        }
    }
    for (i = 0; i < p->max_ahs; i++) {
        if (c->ahs[i].valid) {
            pd[c->ahs[i].pd]++;
            gid[c->ahs[i].av.gid_index]++;
        }
    }
    for (i = 0; i < p->max_srqs; i++) {
        if (c->srqs[i].valid) {
            pd[c->srqs[i].pd]++;
        }
        if (c->srqs[i].valid && c->srqs[i].xrcd) {
            xrcd[c->srqs[i].xrcd]++;
            cq[c->srqs[i].cq]++;
        }
    }
    for (i = 0; i < p->max_sessions; i++) {
        if (c->sessions[i].valid) {
            gid[c->sessions[i].gid_index]++;
        }
    }
    for (i = 0; i < p->max_groups; i++) {
        for (j = 0; c->groups[i].valid && j < c->groups[i].nsessions; j++) {
            ses[c->groups[i].session[j]]++;
        }
    }

#define RS_REFS_MATCH(table, max, count) ({                                \
    bool ok_ = true;                                                       \
    for (uint32_t k_ = 0; k_ < (max); k_++) {                              \
        if (c->table[k_].valid && c->table[k_].refs != (count)[k_]) {      \
            ok_ = false;                                                   \
        }                                                                  \
    }                                                                      \
    ok_; })

    return RS_REFS_MATCH(pds, p->max_pds, pd) &&
           RS_REFS_MATCH(cqs, p->max_cqs, cq) &&
           RS_REFS_MATCH(srqs, p->max_srqs, srq) &&
           RS_REFS_MATCH(xrcds, p->max_xrcds, xrcd) &&
           RS_REFS_MATCH(gids, p->max_gids, gid) &&
           RS_REFS_MATCH(sessions, p->max_sessions, ses) &&
           RS_REFS_MATCH(groups, p->max_groups, grp);
#undef RS_REFS_MATCH
}

/* The reference counts, once the objects that hold them were checked. */
const RSFeature rs_feature_refs = {
    .name = "refs",
    .validate = rs_core_refs_valid,
};

/*
 * The core's own registers, then every feature's state in RS_FEATURES'
 * order (each relies on the indices the features before it checked).
 */
static bool rs_core_state_valid(RSCore *c)
{
    if (FIELD_EX32(c->admq_cfg, RS_ADMQ_CFG, LOG_SIZE) > RS_MAX_ADMQ_LOG ||
        FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG, LOG_SIZE) > RS_MAX_AEQ_LOG) {
        return false;
    }
    /* Commands and events outstanding fit their rings. */
    if (c->admq_pi - c->admq_ci >
        1u << FIELD_EX32(c->admq_cfg, RS_ADMQ_CFG, LOG_SIZE) ||
        c->aeq_pi - c->aeq_ci >
        1u << FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG, LOG_SIZE)) {
        return false;
    }
    RS_FOR_EACH_FEATURE(f) {
        if ((*f)->validate && !(*f)->validate(c)) {
            return false;
        }
    }
    return true;
}

static int rs_core_post_load(void *opaque, int version_id)
{
    RSCore *c = opaque;

    if (!rs_core_state_valid(c)) {
        trace_rdma_session_migration_invalid();
        return -EINVAL;
    }
    /* The link is the destination backend's, not the source's. */
    c->status = FIELD_DP32(c->status, RS_STATUS, LINK_UP, c->link_up);
    if (c->admq_ci != c->admq_pi) {
        qemu_bh_schedule(c->admin_bh);
    }
    RS_FOR_EACH_FEATURE(f) {
        if ((*f)->post_load) {
            (*f)->post_load(c);
        }
    }
    c->migrated_in = true;
    return 0;
}

/* Whether any counter in bytes [from, to) of c->stats is not zero. */
static bool rs_stats_counted(const RSCore *c, size_t from, size_t to)
{
    static const struct rs_device_stats zero;

    return memcmp((const uint8_t *)&c->stats + from,
                  (const uint8_t *)&zero + from, to - from) != 0;
}

/* Device statistics (ABI 1.4): sent once any counted. */
static bool rs_stats_needed(void *opaque)
{
    return rs_stats_counted(opaque, 0, RS_DEVICE_STATS_V14);
}

static const VMStateDescription vmstate_rs_stats = {
    .name = "rdma-session/core/stats",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_stats_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.odp_faults, RSCore),
        VMSTATE_UINT64(stats.odp_resolved_pages, RSCore),
        VMSTATE_UINT64(stats.odp_invalidations, RSCore),
        VMSTATE_UINT64(stats.odp_fault_fails, RSCore),
        VMSTATE_UINT64(stats.odp_pauses_sent, RSCore),
        VMSTATE_UINT64(stats.odp_pauses_rcvd, RSCore),
        VMSTATE_UINT64(stats.odp_resumes_rcvd, RSCore),
        VMSTATE_UINT64(stats.rnr_naks_rcvd, RSCore),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * The transport counters (ABI 1.6): sent once any counted.  Any value is
 * valid: they are only reported, never followed.
 */
static bool rs_counters_needed(void *opaque)
{
    return rs_stats_counted(opaque, RS_DEVICE_STATS_V14, RS_DEVICE_STATS_V16);
}

/* The data buffer counters (ABI 1.8): sent once any counted. */
static bool rs_data_counters_needed(void *opaque)
{
    return rs_stats_counted(opaque, RS_DEVICE_STATS_V16, RS_DEVICE_STATS_V18);
}

/* The VLAN counter (ABI 1.9): sent once counted. */
static bool rs_vlan_counters_needed(void *opaque)
{
    return rs_stats_counted(opaque, RS_DEVICE_STATS_V18,
                            RS_DEVICE_STATS_V19);
}

static const VMStateDescription vmstate_rs_vlan_counters = {
    .name = "rdma-session/core/vlan-counters",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_vlan_counters_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.vlan_rx_dropped, RSCore),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_data_counters = {
    .name = "rdma-session/core/data-counters",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_data_counters_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.ram_dma_read_bytes, RSCore),
        VMSTATE_UINT64(stats.ram_dma_write_bytes, RSCore),
        VMSTATE_UINT64(stats.peer_dma_read_bytes, RSCore),
        VMSTATE_UINT64(stats.peer_dma_write_bytes, RSCore),
        VMSTATE_UINT64(stats.data_dma_refused, RSCore),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_counters = {
    .name = "rdma-session/core/counters",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_counters_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.rnr_naks_sent, RSCore),
        VMSTATE_UINT64(stats.seq_naks_sent, RSCore),
        VMSTATE_UINT64(stats.seq_naks_rcvd, RSCore),
        VMSTATE_UINT64(stats.retransmits, RSCore),
        VMSTATE_UINT64(stats.ack_timeouts, RSCore),
        VMSTATE_UINT64(stats.icrc_drops, RSCore),
        VMSTATE_UINT64(stats.tx_packets, RSCore),
        VMSTATE_UINT64(stats.tx_bytes, RSCore),
        VMSTATE_UINT64(stats.rx_packets, RSCore),
        VMSTATE_UINT64(stats.rx_bytes, RSCore),
        VMSTATE_UINT64(stats.path_failovers, RSCore),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_rs_core = {
    .name = "rdma-session/core",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = rs_core_pre_load,
    .pre_save = rs_core_pre_save,
    .post_load = rs_core_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.max_qps, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_cqs, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_mrs, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_pds, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_ahs, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_sessions, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_groups, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_gids, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_mr_pages, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.db_pages, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.num_comp_vectors, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.mtu, RSCore, NULL),
        VMSTATE_UINT32(ctrl, RSCore),
        VMSTATE_UINT32(status, RSCore),
        VMSTATE_UINT32(fatal_code, RSCore),
        VMSTATE_UINT64(admq_base, RSCore),
        VMSTATE_UINT32(admq_cfg, RSCore),
        VMSTATE_UINT64(acq_base, RSCore),
        VMSTATE_UINT32(acq_cfg, RSCore),
        VMSTATE_UINT64(aeq_base, RSCore),
        VMSTATE_UINT32(aeq_cfg, RSCore),
        VMSTATE_UINT32(admq_pi, RSCore),
        VMSTATE_UINT32(admq_ci, RSCore),
        VMSTATE_UINT32(aeq_pi, RSCore),
        VMSTATE_UINT32(aeq_ci, RSCore),
        VMSTATE_UINT32(mr_pages_used, RSCore),
        VMSTATE_VALIDATE("mr_pages_used within max-mr-pages",
                         rs_mr_pages_used_valid),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(pds, RSCore, p.max_pds,
                                             vmstate_rs_pd, RSPd),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(cqs, RSCore, p.max_cqs,
                                             vmstate_rs_cq, RSCq),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(gids, RSCore, p.max_gids,
                                             vmstate_rs_gid, RSGid),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(sessions, RSCore,
                                             p.max_sessions,
                                             vmstate_rs_session, RSSession),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(groups, RSCore, p.max_groups,
                                             vmstate_rs_group,
                                             RSSessionGroup),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(qps, RSCore, p.max_qps,
                                             vmstate_rs_qp, RSQp),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(mrs, RSCore, p.max_mrs,
                                             vmstate_rs_mr, RSMr),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(ahs, RSCore, p.max_ahs,
                                             vmstate_rs_ah, RSAh),
        VMSTATE_STRUCT_ARRAY(lanq, RSCore, 2, 1, vmstate_rs_lan_queue,
                             RSLanQueue),
        VMSTATE_UINT32(lan_rx_mode, RSCore),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_srqs,
        &vmstate_rs_mac,
        &vmstate_rs_mcast,
        &vmstate_rs_xrcds,
        &vmstate_rs_odp,
        &vmstate_rs_stats,
        &vmstate_rs_counters,
        &vmstate_rs_data_counters,
        &vmstate_rs_vlan_counters,
        &vmstate_rs_ecn_counters,
        &vmstate_rs_dcqcn,
        &vmstate_rs_netids,
        &vmstate_rs_dbrec,
        NULL
    },
};
