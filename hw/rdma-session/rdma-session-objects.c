/*
 * rdma-session adapter: protection domains, completion queues, address
 * handles and shared receive queues, the objects QPs refer to.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"

uint8_t rs_cmd_create_pd(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe)
{
    uint32_t flags = le32_to_cpu(cmd->create_pd.flags);
    uint32_t netid = le32_to_cpu(cmd->create_pd.netid);
    uint32_t idx;

    if (flags & ~RS_PD_F_PRIVILEGED) {
        return RS_STATUS_BAD_PARAM;
    }
    if (netid >= RS_MAX_NETIDS || !c->netid[netid].valid) {
        return RS_STATUS_BAD_NETID;
    }
    idx = RS_ALLOC(c->pds, c->p.max_pds, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    c->pds[idx].valid = true;
    c->pds[idx].flags = flags;
    c->pds[idx].netid = netid;
    c->pds[idx].refs = 0;
    cqe->handle = cpu_to_le32(rs_handle(idx, c->pds[idx].gen));
    return RS_STATUS_OK;
}

uint8_t rs_cmd_destroy_pd(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_LOOKUP(c->pds, c->p.max_pds,
                             le32_to_cpu(cmd->destroy.handle));

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (c->pds[idx].refs) {
        return RS_STATUS_BUSY;
    }
    c->pds[idx].valid = false;
    c->pds[idx].gen++;
    return RS_STATUS_OK;
}

static uint8_t rs_cq_check_ring(RSCore *c, uint64_t addr, unsigned log)
{
    return rs_check_ring(c, addr, log, RS_MAX_CQ_LOG, sizeof(struct rs_cqe));
}

uint8_t rs_cmd_create_cq(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_create_cq *cc = &cmd->create_cq;
    uint64_t ring = le64_to_cpu(cc->ring_addr);
    uint16_t vector = le16_to_cpu(cc->comp_vector);
    uint32_t uar = le32_to_cpu(cc->uar);
    uint32_t idx;
    uint8_t st;
    RSCq *cq;

    st = rs_cq_check_ring(c, ring, cc->log_size);
    if (st) {
        return st;
    }
    if (vector >= c->p.num_comp_vectors || uar >= c->p.db_pages) {
        return RS_STATUS_BAD_PARAM;
    }
    idx = RS_ALLOC(c->cqs, c->p.max_cqs, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    cq = &c->cqs[idx];
    cq->valid = true;
    cq->log_size = cc->log_size;
    cq->vector = vector;
    cq->uar = uar;
    cq->ring = ring;
    cq->pi = cq->ci = 0;
    cq->arm = 0;
    cq->refs = 0;
    cqe->handle = cpu_to_le32(rs_handle(idx, cq->gen));
    return RS_STATUS_OK;
}

uint8_t rs_cmd_destroy_cq(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_LOOKUP(c->cqs, c->p.max_cqs,
                             le32_to_cpu(cmd->destroy.handle));

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (c->cqs[idx].refs) {
        return RS_STATUS_BUSY;
    }
    rs_comp_cause_clear(c, idx);
    c->cqs[idx].valid = false;
    c->cqs[idx].gen++;
    return RS_STATUS_OK;
}

/*
 * Move the entries the driver has not polled yet into the new ring, with
 * owner bits for their new positions, then switch rings.
 */
uint8_t rs_cmd_resize_cq(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_resize_cq *rc = &cmd->resize_cq;
    uint32_t idx = RS_LOOKUP(c->cqs, c->p.max_cqs, le32_to_cpu(rc->handle));
    uint64_t ring = le64_to_cpu(rc->ring_addr);
    uint32_t ci = le32_to_cpu(rc->consumer_index);
    uint32_t n, i;
    uint8_t st;
    RSCq *cq;

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    cq = &c->cqs[idx];
    st = rs_cq_check_ring(c, ring, rc->log_size);
    if (st) {
        return st;
    }
    n = cq->pi - ci;
    if (n > cq->pi - cq->ci || n > (1u << rc->log_size)) {
        return RS_STATUS_BAD_SIZE;
    }
    for (i = 0; i < n; i++) {
        uint32_t from = ci + i;
        struct rs_cqe e;

        st = rs_dma_read(c, cq->ring + (uint64_t)(from &
                         ((1u << cq->log_size) - 1)) * sizeof(e),
                         &e, sizeof(e));
        if (st) {
            return st;
        }
        e.owner = ((i >> rc->log_size) & 1) ? 0 : RS_CQE_OWNER;
        st = rs_dma_write(c, ring + (uint64_t)i * sizeof(e), &e, sizeof(e));
        if (st) {
            return st;
        }
    }
    cq->ring = ring;
    cq->log_size = rc->log_size;
    cq->pi = n;
    cq->ci = 0;
    cqe->handle = rc->handle;
    return RS_STATUS_OK;
}

/* Address vector checks shared by AHs and connected QPs. */
uint8_t rs_check_av(RSCore *c, const RSAv *av)
{
    if (!rs_gid_valid(c, av->gid_index)) {
        return RS_STATUS_BAD_NETID;
    }
    if (av->flow_label & ~(RS_AV_FLOW_LABEL_MASK | RS_AV_PRIO_MASK)) {
        return RS_STATUS_BAD_PARAM;
    }
    return RS_STATUS_OK;
}

uint8_t rs_cmd_create_ah(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_create_ah *ca = &cmd->create_ah;
    uint32_t pd = RS_LOOKUP(c->pds, c->p.max_pds, le32_to_cpu(ca->pd));
    RSAv av = {
        .hop_limit = ca->hop_limit,
        .traffic_class = ca->traffic_class,
        .flow_label = le32_to_cpu(ca->flow_label),
        .gid_index = le32_to_cpu(ca->gid_index),
    };
    uint32_t idx;
    uint8_t st;
    RSAh *ah;

    if (!pd) {
        return RS_STATUS_BAD_HANDLE;
    }
    memcpy(av.dgid, ca->dgid, sizeof(av.dgid));
    memcpy(av.dmac, ca->dmac, sizeof(av.dmac));
    st = rs_check_av(c, &av);
    if (st) {
        return st;
    }
    idx = RS_ALLOC(c->ahs, c->p.max_ahs, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    ah = &c->ahs[idx];
    ah->valid = true;
    ah->pd = pd;
    ah->av = av;
    c->pds[pd].refs++;
    c->gids[av.gid_index].refs++;
    cqe->handle = cpu_to_le32(rs_handle(idx, ah->gen));
    return RS_STATUS_OK;
}

uint8_t rs_cmd_destroy_ah(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_LOOKUP(c->ahs, c->p.max_ahs,
                             le32_to_cpu(cmd->destroy.handle));
    RSAh *ah = &c->ahs[idx];

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    c->pds[ah->pd].refs--;
    c->gids[ah->av.gid_index].refs--;
    ah->valid = false;
    ah->gen++;
    return RS_STATUS_OK;
}

/*
 * Shared receive queues.  QPs created with an SRQ take their receive WQEs
 * from its ring in order (rdma-session-resp.c); the limit event fires once
 * when fewer than srq_limit WQEs are left, then it must be armed again.
 */
uint8_t rs_cmd_create_srq(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_create_srq *cs = &cmd->create_srq;
    uint32_t pd = RS_LOOKUP(c->pds, c->p.max_pds, le32_to_cpu(cs->pd));
    uint64_t ring = le64_to_cpu(cs->ring_addr);
    uint32_t uar = le32_to_cpu(cs->uar);
    uint32_t limit = le32_to_cpu(cs->srq_limit);
    uint32_t idx, xrcd, cq;
    uint8_t st;
    RSSrq *s;

    if (!pd) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (cs->max_sge < 1 || cs->max_sge > RS_MAX_SGE ||
        uar >= c->p.db_pages || cs->rsvd0) {
        return RS_STATUS_BAD_PARAM;
    }
    st = rs_xrc_srq_check(c, cs, pd, &xrcd, &cq);
    if (st) {
        return st;
    }
    st = rs_check_ring(c, ring, cs->log_size, RS_MAX_WQ_LOG,
                       rs_rq_stride(cs->max_sge));
    if (st) {
        return st;
    }
    if (limit >= (1u << cs->log_size)) {
        return RS_STATUS_BAD_PARAM;
    }
    idx = RS_ALLOC(c->srqs, c->p.max_srqs, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    s = &c->srqs[idx];
    *s = (RSSrq) {
        .valid = true,
        .gen = s->gen,
        .log_size = cs->log_size,
        .max_sge = cs->max_sge,
        .pd = pd,
        .uar = uar,
        .ring = ring,
        .limit = limit,
        .xrcd = xrcd,
        .cq = cq,
    };
    c->pds[pd].refs++;
    if (xrcd) {
        c->xrcds[xrcd].refs++;
        c->cqs[cq].refs++;
    }
    cqe->handle = cpu_to_le32(rs_handle(idx, s->gen));
    return RS_STATUS_OK;
}

/*
 * RS_SRQ_ATTR_MAX_WR moves the WQEs not yet taken to the start of a new
 * ring (of the same max_sge) and reports their number in result1: the
 * driver continues posting from there.
 */
uint8_t rs_cmd_modify_srq(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_modify_srq *m = &cmd->modify_srq;
    uint32_t idx = RS_LOOKUP(c->srqs, c->p.max_srqs, le32_to_cpu(m->handle));
    uint32_t mask = le32_to_cpu(m->attr_mask);
    uint32_t limit = le32_to_cpu(m->srq_limit);
    uint64_t ring = le64_to_cpu(m->ring_addr);
    uint8_t log, st;
    uint16_t n, i;
    RSSrq *s;

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    s = &c->srqs[idx];
    if (!mask || (mask & ~(RS_SRQ_ATTR_MAX_WR | RS_SRQ_ATTR_LIMIT))) {
        return RS_STATUS_BAD_ATTR_MASK;
    }
    log = (mask & RS_SRQ_ATTR_MAX_WR) ? m->log_size : s->log_size;
    n = s->pi - s->ci;
    if (mask & RS_SRQ_ATTR_MAX_WR) {
        uint32_t stride = rs_rq_stride(s->max_sge);
        uint8_t buf[sizeof(struct rs_recv_wqe_ctrl) +
                    RS_MAX_SGE * sizeof(struct rs_sge)];

        st = rs_check_ring(c, ring, log, RS_MAX_WQ_LOG, stride);
        if (st) {
            return st;
        }
        if (n > (1u << s->log_size)) {
            return RS_STATUS_BAD_STATE;     /* producer beyond the ring */
        }
        if (n > (1u << log) || (ring < s->ring + (stride << s->log_size) &&
                                s->ring < ring + (stride << log))) {
            return RS_STATUS_BAD_SIZE;      /* too small, or overlapping */
        }
        if ((mask & RS_SRQ_ATTR_LIMIT) && limit >= (1u << log)) {
            return RS_STATUS_BAD_PARAM;
        }
        for (i = 0; i < n; i++) {
            uint64_t from = s->ring + (uint64_t)((s->ci + i) &
                            ((1u << s->log_size) - 1)) * stride;

            st = rs_dma_read(c, from, buf, MIN(stride, sizeof(buf)));
            if (!st) {
                st = rs_dma_write(c, ring + (uint64_t)i * stride, buf,
                                  MIN(stride, sizeof(buf)));
            }
            if (st) {
                return st;
            }
        }
        s->ring = ring;
        s->log_size = log;
        s->ci = 0;
        s->pi = n;
        cqe->result1 = cpu_to_le32(n);
    }
    if (mask & RS_SRQ_ATTR_LIMIT) {
        if (limit >= (1u << log)) {
            return RS_STATUS_BAD_PARAM;
        }
        s->limit = limit;
    }
    cqe->handle = m->handle;
    return RS_STATUS_OK;
}

uint8_t rs_cmd_destroy_srq(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_LOOKUP(c->srqs, c->p.max_srqs,
                             le32_to_cpu(cmd->destroy.handle));

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (c->srqs[idx].refs) {
        return RS_STATUS_BUSY;
    }
    if (c->srqs[idx].xrcd) {
        rs_xrc_srq_destroyed(c, idx);
        c->xrcds[c->srqs[idx].xrcd].refs--;
        c->cqs[c->srqs[idx].cq].refs--;
    }
    c->pds[c->srqs[idx].pd].refs--;
    c->srqs[idx].valid = false;
    c->srqs[idx].gen++;
    return RS_STATUS_OK;
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

const VMStateDescription vmstate_rs_pd = {
    .name = "rdma-session/pd",
    .version_id = 2,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSPd),
        VMSTATE_UINT8(gen, RSPd),
        VMSTATE_UINT32(refs, RSPd),
        VMSTATE_UINT8_V(flags, RSPd, 2),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_pd_netid,
        NULL
    },
};

const VMStateDescription vmstate_rs_cq = {
    .name = "rdma-session/cq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSCq),
        VMSTATE_UINT8(gen, RSCq),
        VMSTATE_UINT8(log_size, RSCq),
        VMSTATE_UINT8(arm, RSCq),
        VMSTATE_UINT16(vector, RSCq),
        VMSTATE_UINT32(uar, RSCq),
        VMSTATE_UINT64(ring, RSCq),
        VMSTATE_UINT32(pi, RSCq),
        VMSTATE_UINT32(ci, RSCq),
        VMSTATE_UINT32(refs, RSCq),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_cq_event,
        NULL
    },
};

const VMStateDescription vmstate_rs_av = {
    .name = "rdma-session/av",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8_ARRAY(dgid, RSAv, 16),
        VMSTATE_UINT8_ARRAY(dmac, RSAv, 6),
        VMSTATE_UINT8(hop_limit, RSAv),
        VMSTATE_UINT8(traffic_class, RSAv),
        VMSTATE_UINT32(flow_label, RSAv),
        VMSTATE_UINT32(gid_index, RSAv),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_rs_ah = {
    .name = "rdma-session/ah",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSAh),
        VMSTATE_UINT8(gen, RSAh),
        VMSTATE_UINT32(pd, RSAh),
        VMSTATE_STRUCT(av, RSAh, 1, vmstate_rs_av, RSAv),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_srq = {
    .name = "rdma-session/srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSSrq),
        VMSTATE_UINT8(gen, RSSrq),
        VMSTATE_UINT8(log_size, RSSrq),
        VMSTATE_UINT8(max_sge, RSSrq),
        VMSTATE_UINT32(pd, RSSrq),
        VMSTATE_UINT32(uar, RSSrq),
        VMSTATE_UINT64(ring, RSSrq),
        VMSTATE_UINT32(pi, RSSrq),
        VMSTATE_UINT32(ci, RSSrq),
        VMSTATE_UINT32(limit, RSSrq),
        VMSTATE_UINT32(refs, RSSrq),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_srq_xrc,
        NULL
    },
};

/* SRQs came with ABI 1.1: a subsection, sent only when one exists. */
static bool rs_srqs_needed(void *opaque)
{
    RSCore *c = opaque;

    for (uint32_t i = 0; i < c->p.max_srqs; i++) {
        if (c->srqs[i].valid || c->srqs[i].gen) {
            return true;
        }
    }
    return false;
}

const VMStateDescription vmstate_rs_srqs = {
    .name = "rdma-session/core/srqs",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_srqs_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.max_srqs, RSCore, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(srqs, RSCore, p.max_srqs,
                                             vmstate_rs_srq, RSSrq),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * A stream without SRQs (no subsection) leaves the table empty; an SRQ
 * without its XRC subsection is a basic one.
 */
static void rs_objects_pre_load(RSCore *c)
{
    memset(c->srqs, 0, sizeof(*c->srqs) * c->p.max_srqs);
}

/* CQs (and the completion events they have pending), SRQs, PDs, AHs. */
static bool rs_objects_state_valid(RSCore *c)
{
    const RSParams *p = &c->p;
    uint32_t i;

    for (i = 0; i < p->max_cqs; i++) {
        if (c->cqs[i].valid && (c->cqs[i].log_size > RS_MAX_CQ_LOG ||
                                c->cqs[i].uar >= p->db_pages ||
                                c->cqs[i].vector >= p->num_comp_vectors)) {
            return false;
        }
    }
    if (!rs_comp_cause_load(c)) {
        return false;
    }
    for (i = 0; i < p->max_srqs; i++) {
        RSSrq *s = &c->srqs[i];

        if (s->valid &&
            (!RS_REF_OK(c, pds, p->max_pds, s->pd) || s->uar >= p->db_pages ||
             s->log_size < 1 || s->log_size > RS_MAX_WQ_LOG ||
             s->max_sge < 1 || s->max_sge > RS_MAX_SGE ||
             s->limit >= (1u << s->log_size))) {
            return false;
        }
    }
    for (i = 0; i < p->max_pds; i++) {
        if (c->pds[i].valid && (c->pds[i].flags & ~RS_PD_F_PRIVILEGED)) {
            return false;
        }
    }
    for (i = 0; i < p->max_ahs; i++) {
        if (c->ahs[i].valid &&
            (!RS_REF_OK(c, pds, p->max_pds, c->ahs[i].pd) ||
             !rs_gid_valid(c, c->ahs[i].av.gid_index))) {
            return false;
        }
    }
    return true;
}

const RSFeature rs_feature_objects = {
    .name = "objects",
    .pre_load = rs_objects_pre_load,
    .validate = rs_objects_state_valid,
};
