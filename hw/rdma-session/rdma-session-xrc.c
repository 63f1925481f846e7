/*
 * rdma-session adapter: XRC domains, XRC SRQs and the target's choice of
 * SRQ (IBTA vol. 1 sections 9.8 and 11.2.10).
 *
 * An XRC initiator QP is an RC requester whose requests carry an XRCETH
 * naming an XRC SRQ at the target.  The XRC target QP answering them has
 * no receive queue, PD or CQ of its own: each request is taken by the XRC
 * SRQ its XRCETH names, which must belong to the target's XRC domain; the
 * SRQ's PD checks the request's R_Key and the SRQ's CQ gets the receive
 * completion.  So processes sharing a domain share one target QP per
 * peer, each with its own SRQ.
 *
 * The target keeps the SRQ of the last request in its srq, pd and
 * recv_cq without references; an SRQ that is destroyed is first taken
 * away from every target that names it (rs_xrc_srq_destroyed), so a
 * target never follows a stale index.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

uint8_t rs_cmd_create_xrcd(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe)
{
    uint32_t idx;

    if (cmd->create_pd.flags || cmd->create_pd.netid) {
        return RS_STATUS_BAD_PARAM;
    }
    idx = RS_ALLOC(c->xrcds, c->p.max_xrcds, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    c->xrcds[idx].valid = true;
    c->xrcds[idx].refs = 0;
    cqe->handle = cpu_to_le32(rs_handle(idx, c->xrcds[idx].gen));
    return RS_STATUS_OK;
}

uint8_t rs_cmd_destroy_xrcd(RSCore *c, const struct rs_admin_cmd *cmd,
                            struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_LOOKUP(c->xrcds, c->p.max_xrcds,
                             le32_to_cpu(cmd->destroy.handle));

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (c->xrcds[idx].refs) {
        return RS_STATUS_BUSY;      /* its SRQs and target QPs first */
    }
    c->xrcds[idx].valid = false;
    c->xrcds[idx].gen++;
    return RS_STATUS_OK;
}

/*
 * CREATE_SRQ of an XRC SRQ: a valid domain and receive CQ (the PD was
 * checked by the caller).  *xrcd, *cq: their indices; both 0 for a basic
 * SRQ, which names neither.
 */
uint8_t rs_xrc_srq_check(RSCore *c, const struct rs_cmd_create_srq *cs,
                         uint32_t pd, uint32_t *xrcd, uint32_t *cq)
{
    *xrcd = *cq = 0;
    if (!cs->xrcd) {
        return cs->cq ? RS_STATUS_BAD_PARAM : RS_STATUS_OK;
    }
    *xrcd = RS_LOOKUP(c->xrcds, c->p.max_xrcds, le32_to_cpu(cs->xrcd));
    *cq = RS_LOOKUP(c->cqs, c->p.max_cqs, le32_to_cpu(cs->cq));
    if (!*xrcd || !*cq) {
        return RS_STATUS_BAD_HANDLE;
    }
    /* A kernel SRQ's CQ is the kernel's: its doorbell page is 0. */
    if ((c->pds[pd].flags & RS_PD_F_PRIVILEGED) && c->cqs[*cq].uar) {
        return RS_STATUS_BAD_PD;
    }
    return RS_STATUS_OK;
}

/*
 * XRC SRQ srq is being destroyed: targets that took a receive WQE of it
 * for a message in progress complete it flushed (its CQ still exists),
 * and no target names it any more.  The message's next packet names an
 * SRQ that is gone and is refused.  Bounded by the QP table's size.
 */
void rs_xrc_srq_destroyed(RSCore *c, uint32_t srq)
{
    for (uint32_t i = 1; i < c->p.max_qps; i++) {
        RSQp *qp = &c->qps[i];

        if (!qp->valid || qp->type != RS_QPT_XRC_TGT || qp->srq != srq) {
            continue;
        }
        if (qp->resp.srq_claimed) {
            rs_srq_flush_claimed(c, i);
        }
        trace_rdma_session_xrc_srq_detach(i, srq);
        qp->srq = qp->pd = qp->recv_cq = 0;
    }
}

/*
 * The XRC SRQ a request to target qp names (XRCETH): one of the target's
 * domain, and for every packet of a SEND the one its first packet named.
 * It becomes the target's SRQ, PD and receive CQ.  False: refused.
 */
bool rs_xrc_tgt_select(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t srqn)
{
    const RSSrq *s;

    if (!srqn || srqn >= c->p.max_srqs) {
        trace_rdma_session_xrc_refused(qpn, srqn, "no such SRQ");
        return false;
    }
    s = &c->srqs[srqn];
    if (!s->valid || s->xrcd != qp->xrcd) {
        trace_rdma_session_xrc_refused(qpn, srqn, "not an SRQ of the "
                                       "target's XRC domain");
        return false;
    }
    if (qp->resp.srq_claimed && qp->srq != srqn) {
        trace_rdma_session_xrc_refused(qpn, srqn, "another SRQ than the "
                                       "message's");
        return false;
    }
    qp->srq = srqn;
    qp->pd = s->pd;
    qp->recv_cq = s->cq;
    return true;
}

/*
 * The PD of target qp's SRQ srq, as a READ resource of it recorded it: 0
 * (no MR's) if the SRQ is gone or no longer of the target's domain.
 */
uint32_t rs_xrc_srq_pd(RSCore *c, const RSQp *qp, uint32_t srq)
{
    const RSSrq *s = &c->srqs[srq];

    return srq && srq < c->p.max_srqs && s->valid && s->xrcd == qp->xrcd ?
           s->pd : 0;
}

/*
 * Incoming migration: domains' references, XRC SRQs' domains and CQs,
 * targets' domains and their borrowed SRQ, PD and CQ.  The other tables
 * were checked; the reference counts are checked with the rest.
 */
static bool rs_xrc_state_valid(RSCore *c)
{
    uint32_t i;

    for (i = 0; i < c->p.max_srqs; i++) {
        const RSSrq *s = &c->srqs[i];

        if (!s->valid) {
            continue;
        }
        if (!s->xrcd ? s->cq != 0 :
            (s->xrcd >= c->p.max_xrcds || !c->xrcds[s->xrcd].valid ||
             !s->cq || s->cq >= c->p.max_cqs || !c->cqs[s->cq].valid)) {
            return false;
        }
    }
    for (i = 0; i < c->p.max_qps; i++) {
        const RSQp *qp = &c->qps[i];
        const RSSrq *s;

        if (!qp->valid || qp->type != RS_QPT_XRC_TGT) {
            if (qp->valid && qp->xrcd) {
                return false;
            }
            continue;
        }
        if (!qp->xrcd || qp->xrcd >= c->p.max_xrcds ||
            !c->xrcds[qp->xrcd].valid || qp->send_cq || qp->uar ||
            qp->sq_log || qp->rq_log || qp->srq >= c->p.max_srqs) {
            return false;
        }
        s = &c->srqs[qp->srq];
        if (qp->srq ? (!s->valid || s->xrcd != qp->xrcd ||
                       qp->pd != s->pd || qp->recv_cq != s->cq) :
                      (qp->pd || qp->recv_cq || qp->resp.srq_claimed)) {
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/* An XRC target's READ resource: the SRQ its request named (ABI 1.3). */
static bool rs_rd_res_xrc_needed(void *opaque)
{
    RSRdRes *r = opaque;

    return r->srq != 0;
}

const VMStateDescription vmstate_rs_rd_res_xrc = {
    .name = "rdma-session/rd-res/xrc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_rd_res_xrc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(srq, RSRdRes),
        VMSTATE_END_OF_LIST()
    },
};

/* An XRC target's domain (ABI 1.3): sent only by XRC targets. */
static bool rs_qp_xrc_needed(void *opaque)
{
    RSQp *qp = opaque;

    return qp->xrcd != 0;
}

const VMStateDescription vmstate_rs_qp_xrc = {
    .name = "rdma-session/qp/xrc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_qp_xrc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(xrcd, RSQp),
        VMSTATE_END_OF_LIST()
    },
};

/* An XRC SRQ's domain and CQ (ABI 1.3): sent only by XRC SRQs. */
static bool rs_srq_xrc_needed(void *opaque)
{
    RSSrq *s = opaque;

    return s->xrcd != 0;
}

const VMStateDescription vmstate_rs_srq_xrc = {
    .name = "rdma-session/srq/xrc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_srq_xrc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(xrcd, RSSrq),
        VMSTATE_UINT32(cq, RSSrq),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_xrcd = {
    .name = "rdma-session/xrcd",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSXrcd),
        VMSTATE_UINT8(gen, RSXrcd),
        VMSTATE_UINT32(refs, RSXrcd),
        VMSTATE_END_OF_LIST()
    },
};

/* XRC came with ABI 1.3: sent only once a domain was created. */
static bool rs_xrcds_needed(void *opaque)
{
    RSCore *c = opaque;

    for (uint32_t i = 0; i < c->p.max_xrcds; i++) {
        if (c->xrcds[i].valid || c->xrcds[i].gen) {
            return true;
        }
    }
    return false;
}

const VMStateDescription vmstate_rs_xrcds = {
    .name = "rdma-session/core/xrcds",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_xrcds_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.max_xrcds, RSCore, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(xrcds, RSCore, p.max_xrcds,
                                             vmstate_rs_xrcd, RSXrcd),
        VMSTATE_END_OF_LIST()
    },
};

/* A stream without XRC domains (no subsection) leaves the table empty. */
static void rs_xrc_pre_load(RSCore *c)
{
    memset(c->xrcds, 0, sizeof(*c->xrcds) * c->p.max_xrcds);
}

const RSFeature rs_feature_xrc = {
    .name = "xrc",
    .pre_load = rs_xrc_pre_load,
    .validate = rs_xrc_state_valid,
};
