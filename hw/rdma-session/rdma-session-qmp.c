/*
 * rdma-session adapter: QMP query-rdma-session and HMP info rdma-session.
 *
 * Both only read the device's tables, from the main loop with the BQL
 * held as every device callback runs, so what they see is consistent;
 * the work is bounded by the table sizes the properties set.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-rdma-session.h"
#include "qobject/qdict.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qom/object.h"
#include "hw/qdev-core.h"
#include "rdma-session-core.h"
#include "rdma-session-fabric.h"

static char *rs_qmp_gid_str(const uint8_t *gid)
{
    char buf[INET6_ADDRSTRLEN];

    if (!inet_ntop(AF_INET6, gid, buf, sizeof(buf))) {
        return g_strdup("?");
    }
    return g_strdup(buf);
}

static RdmaSessionQpType rs_qmp_qp_type(uint8_t type)
{
    switch (type) {
    case RS_QPT_RC:
        return RDMA_SESSION_QP_TYPE_RC;
    case RS_QPT_UC:
        return RDMA_SESSION_QP_TYPE_UC;
    case RS_QPT_UD:
        return RDMA_SESSION_QP_TYPE_UD;
    case RS_QPT_GSI:
        return RDMA_SESSION_QP_TYPE_GSI;
    case RS_QPT_DCI:
        return RDMA_SESSION_QP_TYPE_DCI;
    case RS_QPT_DCT:
        return RDMA_SESSION_QP_TYPE_DCT;
    case RS_QPT_XRC_INI:
        return RDMA_SESSION_QP_TYPE_XRC_INI;
    case RS_QPT_XRC_TGT:
        return RDMA_SESSION_QP_TYPE_XRC_TGT;
    default:
        return RDMA_SESSION_QP_TYPE_DC_CTX;
    }
}

static RdmaSessionKeyKind rs_qmp_key_kind(const RSMr *mr)
{
    if (mr->mkl_kind == RS_WR_REG_INDIRECT) {
        return RDMA_SESSION_KEY_KIND_INDIRECT;
    }
    if (mr->mkl_kind == RS_WR_REG_PATTERN) {
        return RDMA_SESSION_KEY_KIND_PATTERN;
    }
    if (mr->mw_type == RS_MW_TYPE_1) {
        return RDMA_SESSION_KEY_KIND_MW_TYPE1;
    }
    if (mr->mw_type) {
        return RDMA_SESSION_KEY_KIND_MW_TYPE2;
    }
    if (mr->flags & RS_MR_F_ODP) {
        return RDMA_SESSION_KEY_KIND_ODP;
    }
    return mr->fast ? RDMA_SESSION_KEY_KIND_FAST_REG :
                      RDMA_SESSION_KEY_KIND_MR;
}

static RdmaSessionKey *rs_qmp_key(RSCore *c, uint32_t idx)
{
    const RSMr *mr = &c->mrs[idx];
    RdmaSessionKey *k = g_new0(RdmaSessionKey, 1);

    k->key = rs_mkey_key(mr);
    k->handle = rs_mkey_handle(c, mr);
    k->kind = rs_qmp_key_kind(mr);
    k->pd = mr->pd;
    k->gid_index = mr->gid_index;
    k->iova = mr->iova;
    k->length = mr->length;
    k->access = mr->access;
    k->valid = !(mr->fast && !mr->fr_bound) && !(mr->mw_type && !mr->mw_mr);
    k->pages = mr->mkl_kind ? mr->mkl_cap : mr->npages;
    return k;
}

/*
 * The key tables: one per network identity the host configured
 * (rdma-session-netid.c), in identity order, with its GIDs and keys.
 */
static RdmaSessionKeyTableList *rs_qmp_key_tables(RSCore *c)
{
    RdmaSessionKeyTableList *head = NULL, **tail = &head;
    uint32_t i, n;

    for (n = 0; n < RS_MAX_NETIDS; n++) {
        RdmaSessionKeyTable *t;
        uint32List **gtail;
        RdmaSessionKeyList **ktail;

        if (!c->netid[n].valid) {
            continue;
        }
        t = g_new0(RdmaSessionKeyTable, 1);
        gtail = &t->identities;
        ktail = &t->keys;
        t->netid = n;
        t->vni = c->netid[n].vni;
        if (n) {
            t->subnet = rs_netid_subnet_str(c, n);
        }
        for (i = 0; i < c->p.max_gids; i++) {
            if (c->gids[i].valid && c->gids[i].netid == n) {
                QAPI_LIST_APPEND(gtail, i);
            }
        }
        for (i = 0; i < c->p.max_mrs; i++) {
            if (c->mrs[i].valid && c->mrs[i].netid == n) {
                QAPI_LIST_APPEND(ktail, rs_qmp_key(c, i));
            }
        }
        QAPI_LIST_APPEND(tail, t);
    }
    return head;
}

static RdmaSessionQp *rs_qmp_qp(RSCore *c, uint32_t idx)
{
    const RSQp *qp = &c->qps[idx];
    RdmaSessionQp *q = g_new0(RdmaSessionQp, 1);

    q->qpn = idx;
    q->handle = rs_handle(idx, qp->gen);
    q->type = rs_qmp_qp_type(qp->type);
    q->state = qp->state <= RS_QPS_ERR ? (RdmaSessionQpState)qp->state :
                                         RDMA_SESSION_QP_STATE_ERR;
    q->pd = qp->pd;
    q->send_cq = qp->send_cq;
    q->recv_cq = qp->recv_cq;
    q->srq = qp->srq;
    q->group = qp->group;
    q->has_gid_index = qp->has_av;
    q->gid_index = qp->av.gid_index;
    q->dest_qpn = qp->dest_qpn;
    q->sq_psn = qp->sq_psn;
    q->una_psn = qp->comp.una_psn;
    q->rq_psn = qp->rq_psn;
    q->sq_pi = qp->sq_pi;
    q->sq_ci = qp->req.sq_ci;
    q->sq_comp = qp->comp.sq_comp;
    q->rq_pi = qp->rq_pi;
    q->rq_ci = qp->resp.rq_ci;
    q->retries = qp->req.retries;
    q->rnr_retries = qp->req.rnr_retries;
    q->retry_cnt = qp->retry_cnt;
    q->rnr_retry = qp->rnr_retry;
    q->cwnd = qp->req.cwnd;
    q->rate = rs_dcqcn_rate(c, idx, &q->target_rate, &q->alpha);
    return q;
}

/* The local fabric's members and counters; NULL without the property. */
static RdmaSessionFabric *rs_qmp_fabric(RSCore *c)
{
    RdmaSessionFabricMemberList **tail;
    RdmaSessionFabric *f;
    uint32_t addrs[RS_FAB_MAX_ADDRS], n, nreg = 0, k;
    uint64_t id;
    unsigned i;

    if (!c->fabric) {
        return NULL;
    }
    f = g_new0(RdmaSessionFabric, 1);
    f->directory = g_strdup(c->p.local_fabric);
    tail = &f->members;
    for (i = 0; rs_fabric_member(c, i, &id, addrs, &n, &nreg); i++) {
        RdmaSessionFabricMember *m;
        strList **at;

        if (!id) {
            continue;
        }
        m = g_new0(RdmaSessionFabricMember, 1);
        m->index = i;
        m->id = id;
        m->regions = nreg;
        at = &m->addresses;
        for (k = 0; k < n; k++) {
            QAPI_LIST_APPEND(at, g_strdup_printf("%u.%u.%u.%u",
                                                 addrs[k] >> 24,
                                                 (addrs[k] >> 16) & 255,
                                                 (addrs[k] >> 8) & 255,
                                                 addrs[k] & 255));
        }
        QAPI_LIST_APPEND(tail, m);
    }
    f->tx_inline = *rs_fabric_counter(c, RS_FAB_CNT_TX_INLINE);
    f->tx_inline_bytes = *rs_fabric_counter(c, RS_FAB_CNT_TX_INLINE_BYTES);
    f->tx_ref = *rs_fabric_counter(c, RS_FAB_CNT_TX_REF);
    f->tx_ref_bytes = *rs_fabric_counter(c, RS_FAB_CNT_TX_REF_BYTES);
    f->rx_inline = *rs_fabric_counter(c, RS_FAB_CNT_RX_INLINE);
    f->rx_inline_bytes = *rs_fabric_counter(c, RS_FAB_CNT_RX_INLINE_BYTES);
    f->rx_ref = *rs_fabric_counter(c, RS_FAB_CNT_RX_REF);
    f->rx_ref_bytes = *rs_fabric_counter(c, RS_FAB_CNT_RX_REF_BYTES);
    f->rx_dropped = *rs_fabric_counter(c, RS_FAB_CNT_RX_DROP);
    f->rx_bad_ref = *rs_fabric_counter(c, RS_FAB_CNT_RX_BAD_REF);
    f->tx_lost = *rs_fabric_counter(c, RS_FAB_CNT_TX_LOST);
    f->garbage = *rs_fabric_counter(c, RS_FAB_CNT_GARBAGE);
    f->joined = *rs_fabric_counter(c, RS_FAB_CNT_JOINED);
    f->left = *rs_fabric_counter(c, RS_FAB_CNT_LEFT);
    f->tx_msgs = *rs_fabric_counter(c, RS_FAB_CNT_TX_MSGS);
    f->rx_msgs = *rs_fabric_counter(c, RS_FAB_CNT_RX_MSGS);
    return f;
}

static RdmaSessionCounters *rs_qmp_counters(RSCore *c)
{
    const struct rs_device_stats *s = &c->stats;
    RdmaSessionCounters *r = g_new0(RdmaSessionCounters, 1);

    r->odp_faults = s->odp_faults;
    r->odp_resolved_pages = s->odp_resolved_pages;
    r->odp_invalidations = s->odp_invalidations;
    r->odp_fault_fails = s->odp_fault_fails;
    r->odp_pauses_sent = s->odp_pauses_sent;
    r->odp_pauses_rcvd = s->odp_pauses_rcvd;
    r->odp_resumes_rcvd = s->odp_resumes_rcvd;
    r->rnr_naks_rcvd = s->rnr_naks_rcvd;
    r->rnr_naks_sent = s->rnr_naks_sent;
    r->seq_naks_sent = s->seq_naks_sent;
    r->seq_naks_rcvd = s->seq_naks_rcvd;
    r->retransmits = s->retransmits;
    r->ack_timeouts = s->ack_timeouts;
    r->icrc_drops = s->icrc_drops;
    r->tx_packets = s->tx_packets;
    r->tx_bytes = s->tx_bytes;
    r->rx_packets = s->rx_packets;
    r->rx_bytes = s->rx_bytes;
    r->path_failovers = s->path_failovers;
    r->ram_dma_read_bytes = s->ram_dma_read_bytes;
    r->ram_dma_write_bytes = s->ram_dma_write_bytes;
    r->peer_dma_read_bytes = s->peer_dma_read_bytes;
    r->peer_dma_write_bytes = s->peer_dma_write_bytes;
    r->data_dma_refused = s->data_dma_refused;
    r->vlan_rx_dropped = s->vlan_rx_dropped;
    r->ecn_ce_received = s->ecn_ce_received;
    r->cnp_sent = s->cnp_sent;
    r->cnp_received = s->cnp_received;
    r->cnp_ignored = s->cnp_ignored;
    r->dcqcn_rate_reductions = s->dcqcn_rate_reductions;
    r->db_mmio_writes = s->db_mmio_writes;
    r->db_record_pickups = s->db_record_pickups;
    return r;
}

static RdmaSessionInfo *rs_qmp_info(Object *obj, RSCore *c)
{
    RdmaSessionInfo *info = g_new0(RdmaSessionInfo, 1);
    RdmaSessionIdentityList **itail = &info->identities;
    RdmaSessionSessionList **stail = &info->sessions;
    RdmaSessionGroupList **gtail = &info->groups;
    RdmaSessionQpList **qtail = &info->qps;
    DeviceState *dev = DEVICE(obj);
    uint32_t i, j;

    info->qom_path = object_get_canonical_path(obj);
    info->id = g_strdup(dev->id);
    info->enabled = !!(c->status & R_RS_STATUS_READY_MASK);
    info->link_up = c->link_up;

    for (i = 0; i < c->p.max_gids; i++) {
        const RSGid *g = &c->gids[i];
        RdmaSessionIdentity *e;

        if (!g->valid) {
            continue;
        }
        e = g_new0(RdmaSessionIdentity, 1);
        e->index = i;
        e->address = rs_qmp_gid_str(g->gid);
        e->type = g->type == RS_GID_ROCE_V2_IPV6 ?
                  RDMA_SESSION_GID_TYPE_ROCE_V2_IPV6 :
                  RDMA_SESSION_GID_TYPE_ROCE_V2_IPV4;
        e->netid = g->netid;
        e->vni = g->vni;
        e->refs = g->refs;
        QAPI_LIST_APPEND(itail, e);
    }

    for (i = 0; i < c->p.max_sessions; i++) {
        const RSSession *s = &c->sessions[i];
        RdmaSessionSession *e;

        if (!s->valid) {
            continue;
        }
        e = g_new0(RdmaSessionSession, 1);
        e->index = i;
        e->handle = rs_handle(i, s->gen);
        e->gid_index = s->gid_index;
        e->src_ip = s->gid_index < c->p.max_gids ?
                    rs_qmp_gid_str(c->gids[s->gid_index].gid) :
                    g_strdup("?");
        e->src_port = s->src_port;
        e->dst_ip = rs_qmp_gid_str(s->dst_ip);
        e->dst_port = s->dst_port;
        e->dst_mac = g_strdup_printf("%02x:%02x:%02x:%02x:%02x:%02x",
                                     s->dmac[0], s->dmac[1], s->dmac[2],
                                     s->dmac[3], s->dmac[4], s->dmac[5]);
        e->refs = s->refs;
        e->path_up = !s->down;
        e->tx_packets = s->tx_packets;
        e->failovers = s->failovers;
        e->recoveries = s->recoveries;
        e->migrated = s->migrated;
        QAPI_LIST_APPEND(stail, e);
    }

    for (i = 0; i < c->p.max_groups; i++) {
        const RSSessionGroup *g = &c->groups[i];
        RdmaSessionGroup *e;
        uint32List **mtail;

        if (!g->valid) {
            continue;
        }
        e = g_new0(RdmaSessionGroup, 1);
        e->index = i;
        e->handle = rs_handle(i, g->gen);
        e->policy = g->policy == RS_GROUP_ACTIVE_BACKUP ?
                    RDMA_SESSION_GROUP_POLICY_ACTIVE_BACKUP :
                    RDMA_SESSION_GROUP_POLICY_ROUND_ROBIN;
        mtail = &e->sessions;
        for (j = 0; j < MIN(g->nsessions, RS_MAX_GROUP_SESSIONS); j++) {
            QAPI_LIST_APPEND(mtail, g->session[j]);
        }
        e->refs = g->refs;
        QAPI_LIST_APPEND(gtail, e);
    }

    for (i = 0; i < c->p.max_qps; i++) {
        if (c->qps[i].valid) {
            QAPI_LIST_APPEND(qtail, rs_qmp_qp(c, i));
        }
    }
    info->key_tables = rs_qmp_key_tables(c);
    info->counters = rs_qmp_counters(c);
    info->fabric = rs_qmp_fabric(c);
    return info;
}

/*
 * An adapter that is not realized (qom-set realized=false, device_del
 * under way) has no tables: it is not listed.
 */
static int rs_qmp_collect(Object *obj, void *opaque)
{
    RdmaSessionInfoList ***tail = opaque;
    RSCore *c = rs_core_of(obj);

    if (c && c->realized) {
        QAPI_LIST_APPEND(*tail, rs_qmp_info(obj, c));
    }
    return 0;
}

RdmaSessionInfoList *qmp_query_rdma_session(const char *device, Error **errp)
{
    RdmaSessionInfoList *head = NULL, **tail = &head;
    bool ambiguous = false;
    Object *obj;

    if (!device) {
        object_child_foreach_recursive(object_get_root(), rs_qmp_collect,
                                       &tail);
        return head;
    }
    /* A full QOM path, or a partial one such as the device's id. */
    obj = object_resolve_path_type(device, TYPE_RDMA_SESSION, &ambiguous);
    if (!obj || !rs_core_of(obj)) {
        error_setg(errp, ambiguous ? "'%s' names more than one rdma-session "
                   "adapter" : "'%s' is not an rdma-session adapter", device);
        return NULL;
    }
    if (!rs_core_of(obj)->realized) {
        error_setg(errp, "rdma-session adapter '%s' is not realized", device);
        return NULL;
    }
    rs_qmp_collect(obj, &tail);
    return head;
}

static const char *rs_hmp_yes(bool b)
{
    return b ? "yes" : "no";
}

static void rs_hmp_one(Monitor *mon, const RdmaSessionInfo *d)
{
    const RdmaSessionCounters *n = d->counters;
    RdmaSessionIdentityList *il;
    RdmaSessionSessionList *sl;
    RdmaSessionGroupList *gl;
    RdmaSessionQpList *ql;
    RdmaSessionKeyTableList *tl;

    monitor_printf(mon, "rdma-session %s%s%s%s: enabled %s, link %s\n",
                   d->qom_path, d->id ? " (id " : "", d->id ? d->id : "",
                   d->id ? ")" : "", rs_hmp_yes(d->enabled),
                   d->link_up ? "up" : "down");

    monitor_printf(mon, "  identities:\n"
                   "    %-5s %-40s %-12s %-5s %-8s %s\n",
                   "index", "address", "type", "netid", "vni", "refs");
    for (il = d->identities; il; il = il->next) {
        RdmaSessionIdentity *e = il->value;

        monitor_printf(mon, "    %-5u %-40s %-12s %-5u %-8u %u\n", e->index,
                       e->address, RdmaSessionGidType_str(e->type), e->netid,
                       e->vni, e->refs);
    }

    monitor_printf(mon, "  sessions:\n"
                   "    %-5s %-10s %-3s %-22s %-5s %-22s %-5s %-17s %s\n",
                   "index", "handle", "gid", "src-ip", "sport", "dst-ip",
                   "dport", "dst-mac", "refs");
    for (sl = d->sessions; sl; sl = sl->next) {
        RdmaSessionSession *e = sl->value;

        monitor_printf(mon, "    %-5u 0x%08x %-3u %-22s %-5u %-22s %-5u "
                       "%-17s %u\n", e->index, e->handle, e->gid_index,
                       e->src_ip, e->src_port, e->dst_ip, e->dst_port,
                       e->dst_mac, e->refs);
    }

    monitor_printf(mon, "  groups:\n    %-5s %-10s %-13s %-4s %s\n",
                   "index", "handle", "policy", "refs", "sessions");
    for (gl = d->groups; gl; gl = gl->next) {
        RdmaSessionGroup *e = gl->value;
        uint32List *m;

        monitor_printf(mon, "    %-5u 0x%08x %-13s %-4u", e->index,
                       e->handle, RdmaSessionGroupPolicy_str(e->policy),
                       e->refs);
        for (m = e->sessions; m; m = m->next) {
            monitor_printf(mon, " %u", m->value);
        }
        monitor_printf(mon, "\n");
    }

    monitor_printf(mon, "  qps:\n    %-6s %-7s %-5s %-3s %-3s %-3s %-5s "
                   "%-4s %-8s %-8s %-8s %-8s %-7s %-7s %s\n",
                   "qpn", "type", "state", "pd", "scq", "rcq", "group",
                   "gid", "dest-qpn", "sq-psn", "una-psn", "rq-psn",
                   "retries", "rnr", "cwnd rate");
    for (ql = d->qps; ql; ql = ql->next) {
        RdmaSessionQp *e = ql->value;
        char gid[12] = "-";

        if (e->has_gid_index) {
            snprintf(gid, sizeof(gid), "%u", e->gid_index);
        }
        monitor_printf(mon, "    %-6u %-7s %-5s %-3u %-3u %-3u %-5u %-4s "
                       "0x%06x 0x%06x 0x%06x 0x%06x %u/%-5u %u/%-5u %u "
                       "%u\n",
                       e->qpn, RdmaSessionQpType_str(e->type),
                       RdmaSessionQpState_str(e->state), e->pd, e->send_cq,
                       e->recv_cq, e->group, gid, e->dest_qpn, e->sq_psn,
                       e->una_psn, e->rq_psn, e->retries, e->retry_cnt,
                       e->rnr_retries, e->rnr_retry, e->cwnd, e->rate);
    }

    for (tl = d->key_tables; tl; tl = tl->next) {
        RdmaSessionKeyTable *t = tl->value;
        RdmaSessionKeyList *kl;
        uint32List *g;

        monitor_printf(mon, "  key table vni %u (identity %u%s%s, gids",
                       t->vni, t->netid, t->subnet ? " " : "",
                       t->subnet ? t->subnet : "");
        for (g = t->identities; g; g = g->next) {
            monitor_printf(mon, " %u", g->value);
        }
        monitor_printf(mon, "):\n    %-10s %-9s %-3s %-3s %-18s %-12s "
                       "%-6s %-5s %s\n", "key", "kind", "pd", "gid", "iova",
                       "length", "access", "valid", "pages");
        for (kl = t->keys; kl; kl = kl->next) {
            RdmaSessionKey *k = kl->value;

            monitor_printf(mon, "    0x%08x %-9s %-3u %-3u 0x%016" PRIx64
                           " %-12" PRIu64 " 0x%04x %-5s %u\n", k->key,
                           RdmaSessionKeyKind_str(k->kind), k->pd,
                           k->gid_index, k->iova, k->length, k->access,
                           rs_hmp_yes(k->valid), k->pages);
        }
    }

    monitor_printf(mon, "  counters:\n"
                   "    tx-packets %" PRIu64 " tx-bytes %" PRIu64
                   " rx-packets %" PRIu64 " rx-bytes %" PRIu64 "\n"
                   "    retransmits %" PRIu64 " ack-timeouts %" PRIu64
                   " seq-naks-sent %" PRIu64 " seq-naks-rcvd %" PRIu64 "\n"
                   "    rnr-naks-sent %" PRIu64 " rnr-naks-rcvd %" PRIu64
                   " icrc-drops %" PRIu64 " path-failovers %" PRIu64 "\n"
                   "    odp-faults %" PRIu64 " odp-resolved-pages %" PRIu64
                   " odp-invalidations %" PRIu64 " odp-fault-fails %" PRIu64
                   "\n    odp-pauses-sent %" PRIu64 " odp-pauses-rcvd %"
                   PRIu64 " odp-resumes-rcvd %" PRIu64 "\n"
                   "    ram-dma-read-bytes %" PRIu64 " ram-dma-write-bytes %"
                   PRIu64 "\n    peer-dma-read-bytes %" PRIu64
                   " peer-dma-write-bytes %" PRIu64 " data-dma-refused %"
                   PRIu64 "\n    vlan-rx-dropped %" PRIu64
                   " ecn-ce-received %" PRIu64 " cnp-sent %" PRIu64
                   " cnp-received %" PRIu64 " cnp-ignored %" PRIu64
                   "\n    dcqcn-rate-reductions %" PRIu64
                   " db-mmio-writes %" PRIu64 " db-record-pickups %" PRIu64
                   "\n",
                   n->tx_packets, n->tx_bytes, n->rx_packets, n->rx_bytes,
                   n->retransmits, n->ack_timeouts, n->seq_naks_sent,
                   n->seq_naks_rcvd, n->rnr_naks_sent, n->rnr_naks_rcvd,
                   n->icrc_drops, n->path_failovers, n->odp_faults,
                   n->odp_resolved_pages, n->odp_invalidations,
                   n->odp_fault_fails, n->odp_pauses_sent, n->odp_pauses_rcvd,
                   n->odp_resumes_rcvd, n->ram_dma_read_bytes,
                   n->ram_dma_write_bytes, n->peer_dma_read_bytes,
                   n->peer_dma_write_bytes, n->data_dma_refused,
                   n->vlan_rx_dropped, n->ecn_ce_received, n->cnp_sent,
                   n->cnp_received, n->cnp_ignored,
                   n->dcqcn_rate_reductions, n->db_mmio_writes,
                   n->db_record_pickups);
}

void hmp_info_rdma_session(Monitor *mon, const QDict *qdict)
{
    const char *id = qdict_get_try_str(qdict, "id");
    g_autoptr(RdmaSessionInfoList) list = NULL;
    RdmaSessionInfoList *l;
    Error *err = NULL;

    list = qmp_query_rdma_session(id, &err);
    if (hmp_handle_error(mon, err)) {
        return;
    }
    if (!list) {
        monitor_printf(mon, "no rdma-session adapter\n");
    }
    for (l = list; l; l = l->next) {
        rs_hmp_one(mon, l->value);
    }
}
