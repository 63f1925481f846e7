/*
 * rdma-session adapter: queue pairs and the IBTA QP state machine.
 *
 * The transition table follows IBTA vol. 1 section 11.2.4.2 (and Linux's
 * qp_state_table in drivers/infiniband/core/verbs.c, which the kernel
 * driver checks against too): for each (current, next) state a transition
 * is either absent or lists, per QP type, the attributes it requires and
 * those it allows.
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
#include "trace.h"

#define RS_QPT_NUM      (RS_QPT_XRC_TGT + 1)
#define RS_QPS_NUM      (RS_QPS_ERR + 1)

enum {
    A_STATE = RS_QP_ATTR_STATE,
    A_CUR = RS_QP_ATTR_CUR_STATE,
    A_SQD_ASYNC = RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY,
    A_ACCESS = RS_QP_ATTR_ACCESS_FLAGS,
    A_PKEY = RS_QP_ATTR_PKEY_INDEX,
    A_PORT = RS_QP_ATTR_PORT,
    A_QKEY = RS_QP_ATTR_QKEY,
    A_AV = RS_QP_ATTR_AV,
    A_MTU = RS_QP_ATTR_PATH_MTU,
    A_TIMEOUT = RS_QP_ATTR_TIMEOUT,
    A_RETRY = RS_QP_ATTR_RETRY_CNT,
    A_RNR_RETRY = RS_QP_ATTR_RNR_RETRY,
    A_RQ_PSN = RS_QP_ATTR_RQ_PSN,
    A_RD_ATOMIC = RS_QP_ATTR_MAX_QP_RD_ATOMIC,
    A_ALT = RS_QP_ATTR_ALT_PATH,
    A_RNR_TIMER = RS_QP_ATTR_MIN_RNR_TIMER,
    A_SQ_PSN = RS_QP_ATTR_SQ_PSN,
    A_DEST_RD_ATOMIC = RS_QP_ATTR_MAX_DEST_RD_ATOMIC,
    A_MIG = RS_QP_ATTR_PATH_MIG_STATE,
    A_DQPN = RS_QP_ATTR_DEST_QPN,
    A_GROUP = RS_QP_ATTR_SESSION_GROUP,
};

#define RS_QP_ATTR_KNOWN (MAKE_64BIT_MASK(0, 21) | A_GROUP)

typedef struct RSQpTransition {
    bool valid;
    uint32_t req[RS_QPT_NUM];
    uint32_t opt[RS_QPT_NUM];
} RSQpTransition;

#define RC RS_QPT_RC
#define UC RS_QPT_UC
#define UD RS_QPT_UD
#define GSI RS_QPT_GSI
#define XI RS_QPT_XRC_INI
#define XT RS_QPT_XRC_TGT
#define DI RS_QPT_DCI
#define DT RS_QPT_DCT

static const RSQpTransition rs_qp_table[RS_QPS_NUM][RS_QPS_NUM] = {
    [RS_QPS_RESET] = {
        [RS_QPS_RESET] = { .valid = true },
        [RS_QPS_INIT] = {
            .valid = true,
            .req = {
                [UD] = A_PKEY | A_PORT | A_QKEY,
                [UC] = A_PKEY | A_PORT | A_ACCESS,
                [RC] = A_PKEY | A_PORT | A_ACCESS,
                [GSI] = A_PKEY | A_QKEY,
                [XI] = A_PKEY | A_PORT | A_ACCESS,
                [XT] = A_PKEY | A_PORT | A_ACCESS,
                [DI] = A_PORT,
                [DT] = A_PORT | A_ACCESS,
            },
            .opt = { [UD] = A_GROUP, [UC] = A_GROUP, [RC] = A_GROUP,
                     [XI] = A_GROUP, [XT] = A_GROUP, [DI] = A_PKEY,
                     [DT] = A_PKEY },
        },
    },
    [RS_QPS_INIT] = {
        [RS_QPS_RESET] = { .valid = true },
        [RS_QPS_ERR] = { .valid = true },
        [RS_QPS_INIT] = {
            .valid = true,
            .opt = {
                [UD] = A_PKEY | A_PORT | A_QKEY | A_GROUP,
                [UC] = A_PKEY | A_PORT | A_ACCESS | A_GROUP,
                [RC] = A_PKEY | A_PORT | A_ACCESS | A_GROUP,
                [GSI] = A_PKEY | A_QKEY,
                [XI] = A_PKEY | A_PORT | A_ACCESS | A_GROUP,
                [XT] = A_PKEY | A_PORT | A_ACCESS | A_GROUP,
                [DI] = A_PKEY | A_PORT,
                [DT] = A_PKEY | A_PORT | A_ACCESS,
            },
        },
        [RS_QPS_RTR] = {
            .valid = true,
            .req = {
                [UC] = A_AV | A_MTU | A_DQPN | A_RQ_PSN,
                [RC] = A_AV | A_MTU | A_DQPN | A_RQ_PSN | A_DEST_RD_ATOMIC |
                       A_RNR_TIMER,
                /* The initiator receives responses only. */
                [XI] = A_AV | A_MTU | A_DQPN | A_RQ_PSN,
                [XT] = A_AV | A_MTU | A_DQPN | A_RQ_PSN | A_DEST_RD_ATOMIC |
                       A_RNR_TIMER,
                /* DC: the connections bring address and PSNs. */
                [DI] = A_MTU,
                [DT] = A_MTU | A_RNR_TIMER,
            },
            .opt = {
                [UD] = A_PKEY | A_QKEY | A_GROUP,
                [UC] = A_ALT | A_ACCESS | A_PKEY | A_GROUP,
                [RC] = A_ALT | A_ACCESS | A_PKEY | A_GROUP,
                [GSI] = A_PKEY | A_QKEY,
                [XI] = A_ALT | A_ACCESS | A_PKEY | A_GROUP |
                       A_DEST_RD_ATOMIC | A_RNR_TIMER,
                [XT] = A_ALT | A_ACCESS | A_PKEY | A_GROUP,
                [DI] = A_PKEY,
                [DT] = A_ACCESS | A_PKEY,
            },
        },
    },
    [RS_QPS_RTR] = {
        [RS_QPS_RESET] = { .valid = true },
        [RS_QPS_ERR] = { .valid = true },
        [RS_QPS_RTS] = {
            .valid = true,
            .req = {
                [UD] = A_SQ_PSN,
                [UC] = A_SQ_PSN,
                [RC] = A_TIMEOUT | A_RETRY | A_RNR_RETRY | A_SQ_PSN |
                       A_RD_ATOMIC,
                [GSI] = A_SQ_PSN,
                [XI] = A_TIMEOUT | A_RETRY | A_RNR_RETRY | A_SQ_PSN |
                       A_RD_ATOMIC,
                /* The target sends responses only. */
                [XT] = A_TIMEOUT | A_SQ_PSN,
                [DI] = A_TIMEOUT | A_RETRY | A_RNR_RETRY | A_SQ_PSN |
                       A_RD_ATOMIC,
            },
            .opt = {
                [UD] = A_CUR | A_QKEY | A_GROUP,
                [UC] = A_CUR | A_ALT | A_ACCESS | A_MIG | A_GROUP,
                [RC] = A_CUR | A_ALT | A_ACCESS | A_RNR_TIMER | A_MIG |
                       A_GROUP,
                [GSI] = A_CUR | A_QKEY,
                [XI] = A_CUR | A_ALT | A_ACCESS | A_RNR_TIMER | A_MIG |
                       A_GROUP,
                [XT] = A_CUR | A_ALT | A_ACCESS | A_RNR_TIMER | A_MIG |
                       A_GROUP | A_RETRY | A_RNR_RETRY | A_RD_ATOMIC,
                [DI] = A_CUR,
            },
        },
    },
    [RS_QPS_RTS] = {
        [RS_QPS_RESET] = { .valid = true },
        [RS_QPS_ERR] = { .valid = true },
        [RS_QPS_RTS] = {
            .valid = true,
            .opt = {
                [UD] = A_CUR | A_QKEY | A_GROUP,
                [UC] = A_CUR | A_ACCESS | A_ALT | A_MIG | A_GROUP,
                [RC] = A_CUR | A_ACCESS | A_ALT | A_MIG | A_RNR_TIMER |
                       A_GROUP,
                [GSI] = A_CUR | A_QKEY,
                [XI] = A_CUR | A_ACCESS | A_ALT | A_MIG | A_RNR_TIMER |
                       A_GROUP,
                [XT] = A_CUR | A_ACCESS | A_ALT | A_MIG | A_RNR_TIMER |
                       A_GROUP,
                [DI] = A_CUR,
            },
        },
        [RS_QPS_SQD] = {
            .valid = true,
            .opt = {
                [UD] = A_SQD_ASYNC, [UC] = A_SQD_ASYNC,
                [RC] = A_SQD_ASYNC, [GSI] = A_SQD_ASYNC,
                [XI] = A_SQD_ASYNC, [DI] = A_SQD_ASYNC,
            },
        },
    },
    [RS_QPS_SQD] = {
        [RS_QPS_RESET] = { .valid = true },
        [RS_QPS_ERR] = { .valid = true },
        [RS_QPS_RTS] = {
            .valid = true,
            .opt = {
                [UD] = A_CUR | A_QKEY | A_GROUP,
                [UC] = A_CUR | A_ALT | A_ACCESS | A_MIG | A_GROUP,
                [RC] = A_CUR | A_ALT | A_ACCESS | A_RNR_TIMER | A_MIG |
                       A_GROUP,
                [GSI] = A_CUR | A_QKEY,
                [XI] = A_CUR | A_ALT | A_ACCESS | A_RNR_TIMER | A_MIG |
                       A_GROUP,
                [DI] = A_CUR,
            },
        },
        [RS_QPS_SQD] = {
            .valid = true,
            .opt = {
                [UD] = A_PKEY | A_QKEY | A_GROUP,
                [UC] = A_AV | A_ALT | A_ACCESS | A_PKEY | A_MIG | A_GROUP,
                [RC] = A_PORT | A_AV | A_TIMEOUT | A_RETRY | A_RNR_RETRY |
                       A_RD_ATOMIC | A_DEST_RD_ATOMIC | A_ALT | A_ACCESS |
                       A_PKEY | A_RNR_TIMER | A_MIG | A_GROUP,
                [GSI] = A_PKEY | A_QKEY,
                [XI] = A_PORT | A_AV | A_TIMEOUT | A_RETRY | A_RNR_RETRY |
                       A_RD_ATOMIC | A_ALT | A_ACCESS | A_PKEY | A_MIG |
                       A_GROUP,
                [DI] = A_TIMEOUT | A_RETRY | A_RNR_RETRY | A_RD_ATOMIC |
                       A_PKEY,
            },
        },
    },
    [RS_QPS_SQE] = {
        [RS_QPS_RESET] = { .valid = true },
        [RS_QPS_ERR] = { .valid = true },
        [RS_QPS_RTS] = {
            .valid = true,
            .opt = {
                [UD] = A_CUR | A_QKEY,
                [UC] = A_CUR | A_ACCESS,
                [GSI] = A_CUR | A_QKEY,
            },
        },
    },
    [RS_QPS_ERR] = {
        [RS_QPS_RESET] = { .valid = true },
        [RS_QPS_ERR] = { .valid = true },
    },
};

#undef RC
#undef UC
#undef UD
#undef GSI
#undef XI
#undef XT
#undef DI
#undef DT

/* SQE->RTS is the one transition some types lack: RC cannot recover. */
static bool rs_qp_transition_ok(uint8_t type, uint8_t cur, uint8_t next)
{
    const RSQpTransition *t = &rs_qp_table[cur][next];

    if (!t->valid) {
        return false;
    }
    if ((type == RS_QPT_XRC_TGT || type == RS_QPT_DCT) &&
        next == RS_QPS_SQD) {
        return false;               /* nothing to drain */
    }
    if (type == RS_QPT_DCT && next == RS_QPS_RTS) {
        return false;               /* a DCT serves in RTR */
    }
    return !(cur == RS_QPS_SQE && next == RS_QPS_RTS &&
             (rs_qpt_rc_requester(type) || rs_qpt_rc_responder(type)));
}

uint32_t rs_sq_stride(uint8_t max_sge, uint16_t max_inline)
{
    return pow2ceil(sizeof(struct rs_send_wqe_ctrl) +
                    MAX(max_sge * sizeof(struct rs_sge), max_inline));
}

uint32_t rs_rq_stride(uint8_t max_sge)
{
    return pow2ceil(sizeof(struct rs_recv_wqe_ctrl) +
                    max_sge * sizeof(struct rs_sge));
}

static uint8_t rs_check_wq(RSCore *c, uint64_t addr, uint8_t log,
                           uint32_t stride)
{
    if (log < 1 || log > RS_MAX_WQ_LOG) {
        return RS_STATUS_BAD_SIZE;
    }
    if (addr == 0) {
        return RS_STATUS_BAD_ADDR;
    }
    if (addr & (RS_RING_ALIGN - 1)) {
        return RS_STATUS_BAD_ALIGN;
    }
    return rs_dma_check(c, addr, (uint64_t)stride << log, true);
}

/* A QP's address vector, with the GID reference it holds. */
void rs_qp_set_av(RSCore *c, RSQp *qp, const RSAv *av)
{
    if (qp->has_av) {
        c->gids[qp->av.gid_index].refs--;
    }
    qp->has_av = av != NULL;
    if (av) {
        qp->av = *av;
        c->gids[av->gid_index].refs++;
    } else {
        memset(&qp->av, 0, sizeof(qp->av));
    }
}

/*
 * The state CREATE_QP leaves a QP in, also reached by MODIFY_QP to RESET:
 * only what CREATE_QP set survives, so attributes and engine state added
 * to RSQp start from zero without being listed here.
 */
static void rs_qp_to_reset(RSCore *c, RSQp *qp)
{
    rs_qp_set_av(c, qp, NULL);
    *qp = (RSQp) {
        .valid = qp->valid,
        .gen = qp->gen,
        .type = qp->type,
        .state = RS_QPS_RESET,
        .sq_log = qp->sq_log,
        .rq_log = qp->rq_log,
        .max_send_sge = qp->max_send_sge,
        .max_recv_sge = qp->max_recv_sge,
        .flags = qp->flags,
        .max_inline = qp->max_inline,
        .pd = qp->pd,
        .send_cq = qp->send_cq,
        .recv_cq = qp->recv_cq,
        .uar = qp->uar,
        .group = qp->group,
        .srq = qp->srq,
        .xrcd = qp->xrcd,
        /* A DCT keeps its key, a DCI counts its connections on. */
        .dc.key = qp->type == RS_QPT_DCT ? qp->dc.key : 0,
        .dc.conn = qp->dc.conn,
        .sq_addr = qp->sq_addr,
        .rq_addr = qp->rq_addr,
        .path_mtu = rs_max_mtu(c),
        .resp.op = RS_RESP_NONE,
    };
}

/*
 * An XRC target has no queues, PD or CQs of its own: every field that
 * names one is 0, its domain is valid.  *xrcd: the domain's index.
 */
static uint8_t rs_create_qp_xrc_tgt(RSCore *c,
                                    const struct rs_cmd_create_qp *cq,
                                    uint32_t *xrcd)
{
    if (cq->rsvd2 || cq->sq_addr || cq->rq_addr || cq->pd || cq->send_cq ||
        cq->recv_cq || cq->srq || cq->sq_log_size || cq->rq_log_size ||
        cq->max_send_sge || cq->max_recv_sge || cq->flags ||
        cq->max_inline || cq->uar) {
        return RS_STATUS_BAD_PARAM;
    }
    *xrcd = RS_LOOKUP(c->xrcds, c->p.max_xrcds, le32_to_cpu(cq->xrcd));
    return *xrcd ? RS_STATUS_OK : RS_STATUS_BAD_HANDLE;
}

/* A receive queue of its own: not on an SRQ, not an XRC QP. */
static bool rs_create_qp_has_rq(const struct rs_cmd_create_qp *cq)
{
    return !cq->srq && cq->qp_type != RS_QPT_XRC_INI &&
           cq->qp_type != RS_QPT_XRC_TGT && cq->qp_type != RS_QPT_DCI &&
           cq->qp_type != RS_QPT_DCT;
}

/*
 * Every other type: PD, send CQ and send queue; a receive CQ and a
 * receive queue or SRQ, except an XRC initiator, which has no receive
 * side (recv_cq, srq, rq_addr, rq_log_size and max_recv_sge 0).  The
 * rings' memory is checked last (rs_create_qp_rings).
 */
static uint8_t rs_create_qp_queues(RSCore *c,
                                   const struct rs_cmd_create_qp *cq,
                                   uint32_t *pd, uint32_t *scq,
                                   uint32_t *rcq, uint32_t *srq)
{
    /* A DCI has no receive side either. */
    bool ini = cq->qp_type == RS_QPT_XRC_INI || cq->qp_type == RS_QPT_DCI;
    bool rq = rs_create_qp_has_rq(cq);
    uint32_t uar = le32_to_cpu(cq->uar);
    uint64_t rq_addr = le64_to_cpu(cq->rq_addr);
    uint16_t max_inline = le16_to_cpu(cq->max_inline);

    if (cq->xrcd || cq->rsvd2 ||
        (ini && (cq->recv_cq || cq->srq || rq_addr ||
                 cq->rq_log_size || cq->max_recv_sge)) ||
        (cq->qp_type == RS_QPT_DCI && cq->session_group)) {
        return RS_STATUS_BAD_PARAM;
    }
    *pd = RS_LOOKUP(c->pds, c->p.max_pds, le32_to_cpu(cq->pd));
    *scq = RS_LOOKUP(c->cqs, c->p.max_cqs, le32_to_cpu(cq->send_cq));
    *rcq = ini ? 0 : RS_LOOKUP(c->cqs, c->p.max_cqs,
                               le32_to_cpu(cq->recv_cq));
    *srq = 0;
    if (!*pd || !*scq || (!ini && !*rcq)) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (cq->srq) {
        /*
         * Receive WQEs come from the SRQ: no receive queue of its own
         * (rq_addr 0; rq_log_size, max_recv_sge ignored), the SRQ's PD.
         */
        *srq = RS_LOOKUP(c->srqs, c->p.max_srqs, le32_to_cpu(cq->srq));
        if (!*srq) {
            return RS_STATUS_BAD_HANDLE;
        }
        if (cq->qp_type == RS_QPT_GSI || rq_addr || c->srqs[*srq].xrcd) {
            return RS_STATUS_BAD_PARAM;
        }
        if (c->srqs[*srq].pd != *pd) {
            return RS_STATUS_BAD_PD;
        }
    }
    /* A kernel PD's QP rings the kernel's doorbell page only. */
    if ((c->pds[*pd].flags & RS_PD_F_PRIVILEGED) && uar != 0) {
        return RS_STATUS_BAD_PD;
    }
    if (cq->sq_log_size < 1 || cq->sq_log_size > RS_MAX_WQ_LOG ||
        (rq && (cq->rq_log_size < 1 || cq->rq_log_size > RS_MAX_WQ_LOG))) {
        return RS_STATUS_BAD_SIZE;
    }
    if (cq->max_send_sge < 1 || cq->max_send_sge > RS_MAX_SGE ||
        (rq && (cq->max_recv_sge < 1 || cq->max_recv_sge > RS_MAX_SGE)) ||
        max_inline > RS_MAX_INLINE || uar >= c->p.db_pages ||
        (cq->flags & ~RS_QP_F_SIGNAL_ALL)) {
        return RS_STATUS_BAD_PARAM;
    }
    return RS_STATUS_OK;
}

/* The send queue's and (if it has its own) receive queue's memory. */
static uint8_t rs_create_qp_rings(RSCore *c,
                                  const struct rs_cmd_create_qp *cq)
{
    uint8_t st;

    st = rs_check_wq(c, le64_to_cpu(cq->sq_addr), cq->sq_log_size,
                     rs_sq_stride(cq->max_send_sge,
                                  le16_to_cpu(cq->max_inline)));
    if (!st && rs_create_qp_has_rq(cq)) {
        st = rs_check_wq(c, le64_to_cpu(cq->rq_addr), cq->rq_log_size,
                         rs_rq_stride(cq->max_recv_sge));
    }
    return st;
}

/*
 * CREATE_QP of a DCT: no queues of its own and no send CQ; PD, a basic
 * SRQ of that PD and a receive CQ are required.
 */
static uint8_t rs_create_qp_dct(RSCore *c, const struct rs_cmd_create_qp *cq,
                                uint32_t *pd, uint32_t *rcq, uint32_t *srq)
{
    if (cq->sq_addr || cq->rq_addr || cq->send_cq || cq->sq_log_size ||
        cq->rq_log_size || cq->max_send_sge || cq->max_recv_sge ||
        cq->flags || cq->max_inline || cq->session_group) {
        return RS_STATUS_BAD_PARAM;
    }
    if (le32_to_cpu(cq->uar) >= c->p.db_pages) {
        return RS_STATUS_BAD_PARAM;
    }
    *pd = RS_LOOKUP(c->pds, c->p.max_pds, le32_to_cpu(cq->pd));
    *rcq = RS_LOOKUP(c->cqs, c->p.max_cqs, le32_to_cpu(cq->recv_cq));
    *srq = RS_LOOKUP(c->srqs, c->p.max_srqs, le32_to_cpu(cq->srq));
    if (!*pd || !*rcq || !*srq) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (c->srqs[*srq].xrcd) {
        return RS_STATUS_BAD_PARAM;
    }
    /* A kernel PD's QP rings the kernel's doorbell page only. */
    if ((c->pds[*pd].flags & RS_PD_F_PRIVILEGED) && cq->uar) {
        return RS_STATUS_BAD_PD;
    }
    return c->srqs[*srq].pd == *pd ? RS_STATUS_OK : RS_STATUS_BAD_PD;
}

uint8_t rs_cmd_create_qp(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_create_qp *cq = &cmd->create_qp;
    uint32_t pd = 0, scq = 0, rcq = 0, srq = 0, xrcd = 0, group = 0, idx;
    uint32_t gh = le32_to_cpu(cq->session_group);
    bool tgt = cq->qp_type == RS_QPT_XRC_TGT;
    bool dct = cq->qp_type == RS_QPT_DCT;
    bool rq = rs_create_qp_has_rq(cq);
    uint8_t st;
    RSQp *qp;

    if (cq->qp_type > RS_QPT_XRC_TGT) {
        return RS_STATUS_BAD_PARAM;
    }
    st = tgt ? rs_create_qp_xrc_tgt(c, cq, &xrcd) :
         dct ? rs_create_qp_dct(c, cq, &pd, &rcq, &srq) :
               rs_create_qp_queues(c, cq, &pd, &scq, &rcq, &srq);
    if (st) {
        return st;
    }
    if (gh) {
        group = RS_LOOKUP(c->groups, c->p.max_groups, gh);
        if (!group) {
            return RS_STATUS_BAD_HANDLE;
        }
    }
    st = tgt || dct ? RS_STATUS_OK : rs_create_qp_rings(c, cq);
    if (st) {
        return st;
    }
    if (cq->qp_type == RS_QPT_GSI) {
        if (c->qps[RS_GSI_QPN].valid) {
            return RS_STATUS_EXISTS;
        }
        idx = RS_GSI_QPN;
    } else {
        idx = RS_ALLOC(c->qps, c->p.max_qps, RS_GSI_QPN + 1);
        if (!idx) {
            return RS_STATUS_NO_RESOURCES;
        }
    }

    qp = &c->qps[idx];
    *qp = (RSQp) { .gen = qp->gen };
    qp->valid = true;
    c->engine->qp_created(c, idx);
    qp->type = cq->qp_type;
    qp->state = RS_QPS_RESET;
    qp->sq_log = cq->sq_log_size;
    qp->rq_log = rq ? cq->rq_log_size : 0;
    qp->max_send_sge = cq->max_send_sge;
    qp->max_recv_sge = rq ? cq->max_recv_sge : 0;
    qp->srq = srq;
    qp->xrcd = xrcd;
    qp->flags = cq->flags;
    qp->max_inline = le16_to_cpu(cq->max_inline);
    qp->pd = pd;
    qp->send_cq = scq;
    qp->recv_cq = rcq;
    qp->uar = le32_to_cpu(cq->uar);
    qp->group = group;
    qp->sq_addr = le64_to_cpu(cq->sq_addr);
    qp->rq_addr = le64_to_cpu(cq->rq_addr);
    if (dct) {
        qp->dc.key = le32_to_cpu(cq->dc_key_lo) |
                     (uint64_t)le32_to_cpu(cq->dc_key_hi) << 32;
    }
    rs_qp_to_reset(c, qp);
    if (tgt) {
        c->xrcds[xrcd].refs++;
    } else {
        c->pds[pd].refs++;
    }
    if (scq) {
        c->cqs[scq].refs++;
    }
    if (rcq) {
        c->cqs[rcq].refs++;
    }
    if (group) {
        c->groups[group].refs++;
    }
    if (srq) {
        c->srqs[srq].refs++;
    }
    cqe->handle = cpu_to_le32(rs_handle(idx, qp->gen));
    cqe->result1 = cpu_to_le32(idx);
    return RS_STATUS_OK;
}

static uint8_t rs_qp_check_values(RSCore *c, const RSQp *qp,
                                  const struct rs_qp_attr *a, uint32_t mask,
                                  uint32_t *group)
{
    if (((mask & A_PORT) && a->port_num != 1) ||
        ((mask & A_PKEY) && le16_to_cpu(a->pkey_index) != 0) ||
        ((mask & A_MTU) && (a->path_mtu < RS_MTU_256 ||
                            a->path_mtu > rs_max_mtu(c))) ||
        ((mask & A_RQ_PSN) && le32_to_cpu(a->rq_psn) >= (1u << 24)) ||
        ((mask & A_SQ_PSN) && le32_to_cpu(a->sq_psn) >= (1u << 24)) ||
        ((mask & A_DQPN) && le32_to_cpu(a->dest_qp_num) >= (1u << 24)) ||
        ((mask & A_TIMEOUT) && a->timeout > 31) ||
        ((mask & A_RETRY) && a->retry_cnt > 7) ||
        ((mask & A_RNR_RETRY) && a->rnr_retry > 7) ||
        ((mask & A_RNR_TIMER) && a->min_rnr_timer > 31) ||
        ((mask & A_RD_ATOMIC) && a->max_rd_atomic > RS_MAX_RD_ATOMIC) ||
        ((mask & A_DEST_RD_ATOMIC) &&
         a->max_dest_rd_atomic > RS_MAX_RD_ATOMIC)) {
        return RS_STATUS_BAD_PARAM;
    }
    if ((mask & A_ACCESS) && (le16_to_cpu(a->access_flags) & ~RS_ACCESS_ALL)) {
        return RS_STATUS_BAD_ACCESS;
    }
    if (mask & A_AV) {
        RSAv av = {
            .flow_label = le32_to_cpu(a->ah.flow_label),
            .gid_index = le32_to_cpu(a->ah.gid_index),
        };
        uint8_t st = rs_check_av(c, &av);

        if (st) {
            return st;
        }
    }
    *group = 0;
    if ((mask & A_GROUP) && a->session_group) {
        *group = RS_LOOKUP(c->groups, c->p.max_groups,
                           le32_to_cpu(a->session_group));
        if (!*group) {
            return RS_STATUS_BAD_HANDLE;
        }
    }
    return RS_STATUS_OK;
}

static void rs_qp_set_group(RSCore *c, RSQp *qp, uint32_t group)
{
    if (qp->group) {
        c->groups[qp->group].refs--;
    }
    qp->group = group;
    if (group) {
        c->groups[group].refs++;
    }
    rs_path_group_set(qp);
}

static void rs_qp_apply(RSCore *c, RSQp *qp, const struct rs_qp_attr *a,
                        uint32_t mask, uint32_t group)
{
    if (mask & A_ACCESS) {
        qp->access = le16_to_cpu(a->access_flags);
    }
    if (mask & A_QKEY) {
        qp->qkey = le32_to_cpu(a->qkey);
    }
    if (mask & A_MTU) {
        qp->path_mtu = a->path_mtu;
    }
    if (mask & A_TIMEOUT) {
        qp->timeout = a->timeout;
    }
    if (mask & A_RETRY) {
        qp->retry_cnt = a->retry_cnt;
    }
    if (mask & A_RNR_RETRY) {
        qp->rnr_retry = a->rnr_retry;
    }
    if (mask & A_RQ_PSN) {
        qp->rq_psn = le32_to_cpu(a->rq_psn);
    }
    if (mask & A_SQ_PSN) {
        qp->sq_psn = le32_to_cpu(a->sq_psn);
        qp->comp.psn = qp->comp.una_psn = qp->req.max_psn = qp->sq_psn;
    }
    if (mask & A_RD_ATOMIC) {
        qp->max_rd_atomic = a->max_rd_atomic;
    }
    if (mask & A_DEST_RD_ATOMIC) {
        qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
    }
    if (mask & A_RNR_TIMER) {
        qp->min_rnr_timer = a->min_rnr_timer;
    }
    if (mask & A_DQPN) {
        qp->dest_qpn = le32_to_cpu(a->dest_qp_num);
    }
    if (mask & A_SQD_ASYNC) {
        qp->en_sqd_async = a->en_sqd_async_notify;
    }
    if (mask & A_AV) {
        RSAv av = {
            .hop_limit = a->ah.hop_limit,
            .traffic_class = a->ah.traffic_class,
            .flow_label = le32_to_cpu(a->ah.flow_label),
            .gid_index = le32_to_cpu(a->ah.gid_index),
        };

        memcpy(av.dgid, a->ah.dgid, sizeof(av.dgid));
        memcpy(av.dmac, a->ah.dmac, sizeof(av.dmac));
        rs_qp_set_av(c, qp, &av);
    }
    if (mask & A_GROUP) {
        rs_qp_set_group(c, qp, group);
    }
}

uint8_t rs_cmd_modify_qp(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_modify_qp *m = &cmd->modify_qp;
    uint32_t idx = RS_QP_LOOKUP(c, le32_to_cpu(m->handle));
    uint32_t mask = le32_to_cpu(m->attr_mask);
    uint64_t addr = le64_to_cpu(m->attr_addr);
    const RSQpTransition *t;
    struct rs_qp_attr a;
    uint32_t group;
    uint8_t next, st;
    RSQp *qp;

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    qp = &c->qps[idx];
    if (addr & 7) {
        return RS_STATUS_BAD_ALIGN;
    }
    st = rs_dma_read(c, addr, &a, sizeof(a));
    if (st) {
        return st;
    }
    if (mask & ~RS_QP_ATTR_KNOWN) {
        return RS_STATUS_BAD_ATTR_MASK;
    }
    if ((mask & A_CUR) && a.cur_qp_state != qp->state) {
        return RS_STATUS_BAD_STATE;
    }
    next = (mask & A_STATE) ? a.qp_state : qp->state;
    if (next > RS_QPS_ERR) {
        return RS_STATUS_BAD_PARAM;
    }
    if (!rs_qp_transition_ok(qp->type, qp->state, next)) {
        return RS_STATUS_BAD_STATE;
    }
    t = &rs_qp_table[qp->state][next];
    mask &= ~A_STATE;
    if ((mask & t->req[qp->type]) != t->req[qp->type] ||
        (mask & ~(t->req[qp->type] | t->opt[qp->type]))) {
        return RS_STATUS_BAD_ATTR_MASK;
    }
    st = rs_qp_check_values(c, qp, &a, mask, &group);
    if (st) {
        return st;
    }

    trace_rdma_session_qp_state(idx, qp->state, next);
    if (qp->type == RS_QPT_DCT && next != RS_QPS_RTR) {
        c->engine->dc_dct_stop(c, idx);
    }
    if (next == RS_QPS_RESET || next == RS_QPS_ERR) {
        c->engine->dc_dci_reset(c, idx);
    }
    if (next == RS_QPS_RESET) {
        rs_qp_to_reset(c, qp);
    } else if (next != RS_QPS_ERR) {
        rs_qp_apply(c, qp, &a, mask, group);
    } else {
        rs_qp_to_err(c, idx);       /* flushes its work requests */
    }
    qp->state = next;
    rs_dbrec_qp_state(c, idx);
    if (next == RS_QPS_RTS) {
        c->engine->kick(c);
    }
    if (next == RS_QPS_SQD) {
        qp->sqd_notify = qp->en_sqd_async;
        rs_sq_drained_check(c, idx);
    }
    cqe->handle = m->handle;
    return RS_STATUS_OK;
}

uint8_t rs_cmd_query_qp(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_query *q = &cmd->query;
    uint32_t idx = RS_QP_LOOKUP(c, le32_to_cpu(q->handle));
    uint64_t addr = le64_to_cpu(q->resp_addr);
    struct rs_qp_attr a = { 0 };
    RSQp *qp;

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (le32_to_cpu(q->resp_len) < sizeof(a)) {
        return RS_STATUS_BAD_SIZE;
    }
    if (addr & 7) {
        return RS_STATUS_BAD_ALIGN;
    }
    qp = &c->qps[idx];
    a.qp_state = a.cur_qp_state = qp->state;
    a.path_mtu = qp->path_mtu;
    a.port_num = 1;
    a.qkey = cpu_to_le32(qp->qkey);
    a.rq_psn = cpu_to_le32(qp->rq_psn);
    a.sq_psn = cpu_to_le32(qp->sq_psn);
    a.dest_qp_num = cpu_to_le32(qp->dest_qpn);
    a.access_flags = cpu_to_le16(qp->access);
    a.max_rd_atomic = qp->max_rd_atomic;
    a.max_dest_rd_atomic = qp->max_dest_rd_atomic;
    a.min_rnr_timer = qp->min_rnr_timer;
    a.timeout = qp->timeout;
    a.retry_cnt = qp->retry_cnt;
    a.rnr_retry = qp->rnr_retry;
    a.sq_draining = 0;
    a.en_sqd_async_notify = qp->en_sqd_async;
    if (qp->group) {
        a.session_group = cpu_to_le32(rs_handle(qp->group,
                                                c->groups[qp->group].gen));
    }
    memcpy(a.ah.dgid, qp->av.dgid, sizeof(a.ah.dgid));
    memcpy(a.ah.dmac, qp->av.dmac, sizeof(a.ah.dmac));
    a.ah.hop_limit = qp->av.hop_limit;
    a.ah.traffic_class = qp->av.traffic_class;
    a.ah.flow_label = cpu_to_le32(qp->av.flow_label);
    a.ah.gid_index = cpu_to_le32(qp->av.gid_index);
    a.qp_type = cpu_to_le32(qp->type);
    cqe->handle = q->handle;
    return rs_dma_write(c, addr, &a, sizeof(a));
}

static void rs_qp_release(RSCore *c, uint32_t idx)
{
    RSQp *qp = &c->qps[idx];

    rs_qp_set_av(c, qp, NULL);
    rs_qp_set_group(c, qp, 0);
    if (qp->type == RS_QPT_XRC_TGT) {
        /* Its SRQ, PD and CQ are the last request's: no references. */
        c->xrcds[qp->xrcd].refs--;
    } else {
        c->pds[qp->pd].refs--;
        if (qp->send_cq) {
            c->cqs[qp->send_cq].refs--;
        }
        if (qp->recv_cq) {
            c->cqs[qp->recv_cq].refs--;
        }
        if (qp->srq) {
            c->srqs[qp->srq].refs--;
        }
    }
    rs_dbrec_qp_gone(c, idx);
    qp->valid = false;
    qp->gen++;
}

uint8_t rs_cmd_destroy_qp(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe)
{
    uint32_t idx = RS_QP_LOOKUP(c, le32_to_cpu(cmd->destroy.handle));

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (rs_mcast_qp_attached(c, idx)) {
        return RS_STATUS_BUSY;      /* IBTA o10-2.2.3 */
    }
    if (c->qps[idx].type == RS_QPT_DCT) {
        c->engine->dc_dct_stop(c, idx);
    }
    c->engine->dc_dci_reset(c, idx);
    rs_qp_release(c, idx);
    return RS_STATUS_OK;
}

/* ------------------------------------------------------------------ */
/* QP and send queue services of the engine                           */
/* ------------------------------------------------------------------ */

void rs_send_cqe(RSCore *c, uint32_t qpn, const struct rs_send_wqe_ctrl *w,
                 uint8_t status, uint32_t byte_len)
{
    RSQp *qp = &c->qps[qpn];
    struct rs_cqe cqe = {
        .wr_id = w->wr_id,
        .byte_len = cpu_to_le32(byte_len),
        .qpn = cpu_to_le32(qpn),
        .opcode = w->opcode,
        .status = status,
    };

    if (status == RS_WC_SUCCESS && !(w->flags & RS_WQE_F_SIGNALED) &&
        !(qp->flags & RS_QP_F_SIGNAL_ALL)) {
        return;
    }
    rs_cq_post(c, qp->send_cq, &cqe, false);
}

/* An affiliated asynchronous event of QP qpn (IBTA 11.6.3). */
void rs_qp_event(RSCore *c, uint32_t qpn, uint8_t type)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->type == RS_QPT_DC_CTX) {
        return;                 /* no guest handle: the NAK says it */
    }
    rs_core_raise_event(c, type, rs_handle(qpn, qp->gen), qp->sq_psn);
}

/*
 * Send Queue Drained: in SQD, once every work request sent before the
 * transition has completed (the requester sends nothing new in SQD).
 */
void rs_sq_drained_check(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->state == RS_QPS_SQD && qp->sqd_notify &&
        qp->comp.sq_comp == qp->req.sq_ci && !qp->req.pkt) {
        qp->sqd_notify = false;
        rs_qp_event(c, qpn, RS_EV_QP_SQ_DRAINED);
    }
}

/*
 * Outstanding work requests are flushed from req_bh (rs_qp_flush), after
 * the completion of the error that got the QP here.  A QP on an SRQ gets
 * the Last WQE Reached event instead of a receive queue flush (IBTA
 * 11.6.3.2).
 */
void rs_qp_to_err(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];

    if (qp->type == RS_QPT_DC_CTX) {
        c->engine->dc_ctx_error(c, qpn);    /* released, never its DCT */
        return;
    }
    if (qp->state != RS_QPS_ERR) {
        trace_rdma_session_qp_state(qpn, qp->state, RS_QPS_ERR);
        qp->state = RS_QPS_ERR;
        rs_odp_qp_clear(c, qp);
        if (qp->srq && qp->type != RS_QPT_XRC_TGT) {
            rs_core_raise_event(c, RS_EV_QP_LAST_WQE_REACHED,
                                rs_handle(qpn, qp->gen), 0);
        }
        rs_dbrec_qp_state(c, qpn);  /* posts ring the doorbells now */
    }
    c->engine->kick(c);
}

/*
 * A QP in ERR completes every outstanding work request with
 * RS_WC_WR_FLUSH_ERR, in order: send WQEs from the oldest not completed
 * (sent or not), receive WQEs from rq_ci (on an SRQ: the one a message in
 * progress took), and those posted while the QP stays in ERR, as rxe and
 * mlx5 do (ib_drain_qp() relies on it).  Flushed WQEs complete whether
 * signaled or not.  True when budget ran out before the queues were empty.
 */
/* The record of WQE index if the requester has started it, else NULL. */
RSSentWqe *rs_sq_started(RSQp *qp, uint32_t index)
{
    if (index - qp->comp.sq_comp >= qp->req.sq_rec - qp->comp.sq_comp) {
        return NULL;
    }
    return &qp->req.sent[index % RS_SQ_INFLIGHT];
}

/*
 * Complete the WQE at sq_comp: as recorded when it was started, or, one
 * the requester never started (flushed), as the ring holds it now.
 */
void rs_sq_complete(RSCore *c, uint32_t qpn, uint8_t status,
                    uint32_t byte_len)
{
    RSQp *qp = &c->qps[qpn];
    RSSentWqe *rec = rs_sq_started(qp, qp->comp.sq_comp);
    uint32_t stride = rs_sq_stride(qp->max_send_sge, qp->max_inline);
    struct rs_send_wqe_ctrl w;

    memset(&w, 0, sizeof(w));
    if (rec) {
        w.wr_id = rec->wr_id;
        w.opcode = rec->opcode;
        w.flags = rec->flags;
        qp->req.rd_sge_tail += rec->nsge;
    } else {
        if (rs_dma_read(c, qp->sq_addr + (uint64_t)(qp->comp.sq_comp &
                        ((1u << qp->sq_log) - 1)) * stride, &w, sizeof(w))) {
            memset(&w, 0, sizeof(w));
        }
        qp->req.sq_rec = qp->comp.sq_comp + 1;
    }
    rs_send_cqe(c, qpn, &w, status, byte_len);
    qp->comp.sq_comp++;
}

/* The send queue jumped (a producer overrun): no WQE is started. */
static void rs_sq_forget(RSQp *qp)
{
    qp->req.sq_ci = qp->req.sq_rec = qp->comp.sq_comp;
    qp->req.rd_sge_tail = qp->req.rd_sge_head;
    qp->req.pkt = 0;
}

/*
 * A send WQE failed locally while older ones still wait for their ACK:
 * those complete first, flushed, so the send queue completes in order.
 */
void rs_sq_flush_before(RSCore *c, uint32_t qpn, uint32_t end)
{
    RSQp *qp = &c->qps[qpn];

    while (qp->comp.sq_comp != end &&
           end - qp->comp.sq_comp <= (1u << qp->sq_log)) {
        rs_sq_complete(c, qpn, RS_WC_WR_FLUSH_ERR, 0);
    }
}

/*
 * The receive WQE QP qpn took from its SRQ for a message in progress
 * completes flushed (an XRC target's names the XRC SRQ it came from).
 */
void rs_srq_flush_claimed(RSCore *c, uint32_t qpn)
{
    RSQp *qp = &c->qps[qpn];
    struct rs_cqe cqe = {
        .wr_id = qp->resp.srq_wr_id,
        .qpn = cpu_to_le32(qpn),
        .opcode = RS_WR_RECV,
        .status = RS_WC_WR_FLUSH_ERR,
    };

    if (qp->type == RS_QPT_XRC_TGT) {
        cqe.srqn = cpu_to_le32(qp->srq);
    }
    if (qp->type == RS_QPT_DC_CTX) {
        cqe.qpn = cpu_to_le32(qp->dc.dct);
        cqe.src_qp = cpu_to_le32(qp->dest_qpn);
    }
    qp->resp.srq_claimed = false;
    rs_cq_post(c, qp->recv_cq, &cqe, false);
}

bool rs_qp_flush(RSCore *c, uint32_t qpn, unsigned budget)
{
    RSQp *qp = &c->qps[qpn];
    uint32_t sq = 0, rq = 0;

    if ((uint16_t)(qp->sq_pi - qp->comp.sq_comp) > (1u << qp->sq_log)) {
        RS_GUEST_ERR(rdma_session_err_flush_overrun, "QP %u: %s producer %u "
                     "is more than a ring ahead of %u", qpn, "SQ", qp->sq_pi,
                     qp->comp.sq_comp & 0xffff);
        qp->comp.sq_comp += (uint16_t)(qp->sq_pi - qp->comp.sq_comp);
        rs_sq_forget(qp);
    }
    while ((uint16_t)(qp->sq_pi - qp->comp.sq_comp) && sq < budget) {
        rs_sq_complete(c, qpn, RS_WC_WR_FLUSH_ERR, 0);
        sq++;
    }
    qp->req.sq_ci = qp->comp.sq_comp;

    if (qp->srq) {
        if (qp->resp.srq_claimed) {
            rs_srq_flush_claimed(c, qpn);
            rq++;
        }
    } else {
        if ((uint16_t)(qp->rq_pi - qp->resp.rq_ci) > (1u << qp->rq_log)) {
            RS_GUEST_ERR(rdma_session_err_flush_overrun, "QP %u: %s producer "
                         "%u is more than a ring ahead of %u", qpn, "RQ",
                         qp->rq_pi, qp->resp.rq_ci & 0xffff);
            qp->resp.rq_ci += (uint16_t)(qp->rq_pi - qp->resp.rq_ci);
        }
        while ((uint16_t)(qp->rq_pi - qp->resp.rq_ci) && rq < budget) {
            uint32_t stride = rs_rq_stride(qp->max_recv_sge);
            struct rs_recv_wqe_ctrl w;
            struct rs_cqe cqe = {
                .qpn = cpu_to_le32(qpn),
                .opcode = RS_WR_RECV,
                .status = RS_WC_WR_FLUSH_ERR,
            };

            if (!rs_dma_read(c, qp->rq_addr + (uint64_t)(qp->resp.rq_ci &
                             ((1u << qp->rq_log) - 1)) * stride, &w,
                             sizeof(w))) {
                cqe.wr_id = w.wr_id;
            }
            rs_cq_post(c, qp->recv_cq, &cqe, false);
            qp->resp.rq_ci++;
            rq++;
        }
    }
    qp->resp.op = RS_RESP_NONE;
    if (sq || rq) {
        trace_rdma_session_qp_flush(qpn, sq, rq);
    }
    return sq == budget || rq == budget;
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

static const VMStateDescription vmstate_rs_atomic_res = {
    .name = "rdma-session/atomic-res",
    .version_id = 2,
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSAtomicRes),
        VMSTATE_BOOL(owed, RSAtomicRes),
        VMSTATE_UINT32(psn, RSAtomicRes),
        VMSTATE_UINT64(orig, RSAtomicRes),
        VMSTATE_END_OF_LIST()
    },
};

static int rs_rd_res_pre_load(void *opaque)
{
    RSRdRes *r = opaque;

    r->srq = 0;
    return 0;
}

static const VMStateDescription vmstate_rs_rd_res = {
    .name = "rdma-session/rd-res",
    .version_id = 2,
    .minimum_version_id = 2,
    .pre_load = rs_rd_res_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSRdRes),
        VMSTATE_UINT32(psn, RSRdRes),
        VMSTATE_UINT32(npkts, RSRdRes),
        VMSTATE_UINT64(va, RSRdRes),
        VMSTATE_UINT32(rkey, RSRdRes),
        VMSTATE_UINT32(len, RSRdRes),
        VMSTATE_UINT32(gid, RSRdRes),
        VMSTATE_UINT32(first, RSRdRes),
        VMSTATE_UINT32(next, RSRdRes),
        VMSTATE_UINT32(stop, RSRdRes),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_rd_res_xrc,
        NULL
    },
};

static const VMStateDescription vmstate_rs_sent_wqe = {
    .name = "rdma-session/sent-wqe",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(wr_id, RSSentWqe),
        VMSTATE_UINT32(len, RSSentWqe),
        VMSTATE_UINT32(npkts, RSSentWqe),
        VMSTATE_UINT8(opcode, RSSentWqe),
        VMSTATE_UINT8(flags, RSSentWqe),
        VMSTATE_UINT8(nsge, RSSentWqe),
        VMSTATE_UINT8(sge_at, RSSentWqe),
        VMSTATE_END_OF_LIST()
    },
};

/* A receive WQE's SGE as the guest wrote it (little-endian fields). */
static const VMStateDescription vmstate_rs_sge = {
    .name = "rdma-session/sge",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(addr, struct rs_sge),
        VMSTATE_UINT32(length, struct rs_sge),
        VMSTATE_UINT32(lkey, struct rs_sge),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * A QP without the XRC subsection is not an XRC target, one without the
 * ODP subsection waits for no page fault.
 */
static int rs_qp_pre_load(void *opaque)
{
    RSQp *qp = opaque;

    qp->xrcd = 0;
    memset(&qp->odp.req, 0, sizeof(qp->odp.req));
    memset(&qp->odp.resp, 0, sizeof(qp->odp.resp));
    qp->odp.paused = false;
    qp->odp.pause_psn = 0;
    qp->dc.state = 0;
    qp->dc.ah = qp->dc.dct = qp->dc.conn = 0;
    qp->dc.key = 0;
    qp->path.bytes = 0;
    qp->path.migrations = 0;
    qp->path.resp_sport = 0;
    return 0;
}

static int rs_qp_post_load(void *opaque, int version_id)
{
    RSQp *qp = opaque;

    if (version_id < 4) {
        /* Before the send window every sent WQE was sent whole. */
        qp->comp.una_psn = qp->comp.psn;
    }
    return 0;
}

const VMStateDescription vmstate_rs_qp = {
    .name = "rdma-session/qp",
    .version_id = 5,
    .minimum_version_id = 1,
    .pre_load = rs_qp_pre_load,
    .post_load = rs_qp_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSQp),
        VMSTATE_BOOL(has_av, RSQp),
        VMSTATE_UINT8(gen, RSQp),
        VMSTATE_UINT8(type, RSQp),
        VMSTATE_UINT8(state, RSQp),
        VMSTATE_UINT8(sq_log, RSQp),
        VMSTATE_UINT8(rq_log, RSQp),
        VMSTATE_UINT8(max_send_sge, RSQp),
        VMSTATE_UINT8(max_recv_sge, RSQp),
        VMSTATE_UINT8(flags, RSQp),
        VMSTATE_UINT16(max_inline, RSQp),
        VMSTATE_UINT32(pd, RSQp),
        VMSTATE_UINT32(send_cq, RSQp),
        VMSTATE_UINT32(recv_cq, RSQp),
        VMSTATE_UINT32(uar, RSQp),
        VMSTATE_UINT32(group, RSQp),
        VMSTATE_UINT64(sq_addr, RSQp),
        VMSTATE_UINT64(rq_addr, RSQp),
        VMSTATE_UINT32(sq_pi, RSQp),
        VMSTATE_UINT32(rq_pi, RSQp),
        VMSTATE_UINT32(qkey, RSQp),
        VMSTATE_UINT32(rq_psn, RSQp),
        VMSTATE_UINT32(sq_psn, RSQp),
        VMSTATE_UINT32(dest_qpn, RSQp),
        VMSTATE_UINT16(access, RSQp),
        VMSTATE_UINT8(path_mtu, RSQp),
        VMSTATE_UINT8(max_rd_atomic, RSQp),
        VMSTATE_UINT8(max_dest_rd_atomic, RSQp),
        VMSTATE_UINT8(min_rnr_timer, RSQp),
        VMSTATE_UINT8(timeout, RSQp),
        VMSTATE_UINT8(retry_cnt, RSQp),
        VMSTATE_UINT8(rnr_retry, RSQp),
        VMSTATE_UINT8(en_sqd_async, RSQp),
        VMSTATE_STRUCT(av, RSQp, 1, vmstate_rs_av, RSAv),
        /* version 2: the transport engine */
        RS_VMSTATE_QP_UINT32_V("sq_ci", req.sq_ci, 2),
        RS_VMSTATE_QP_UINT32_V("sq_comp", comp.sq_comp, 2),
        RS_VMSTATE_QP_UINT32_V("comp_psn", comp.psn, 2),
        RS_VMSTATE_QP_UINT32_V("rq_ci", resp.rq_ci, 2),
        RS_VMSTATE_QP_UINT32_V("msn", resp.msn, 2),
        RS_VMSTATE_QP_UINT8_V("resp_op", resp.op, 2),
        RS_VMSTATE_QP_UINT32_V("resp_off", resp.off, 2),
        RS_VMSTATE_QP_UINT64_V("resp_va", resp.va, 2),
        RS_VMSTATE_QP_UINT32_V("resp_rkey", resp.rkey, 2),
        RS_VMSTATE_QP_UINT32_V("resp_left", resp.left, 2),
        /* version 3: atomic responder resources, SRQ */
        RS_VMSTATE_QP_STRUCT_ARRAY_V("atomic_res", resp.atomic_res,
                                     RS_ATOMIC_RES, 3,
                                     vmstate_rs_atomic_res, RSAtomicRes),
        RS_VMSTATE_QP_UINT8_V("atomic_next", resp.atomic_next, 3),
        VMSTATE_UINT32_V(srq, RSQp, 3),
        RS_VMSTATE_QP_BOOL_V("srq_claimed", resp.srq_claimed, 3),
        RS_VMSTATE_QP_UINT8_V("srq_nsge", resp.srq_nsge, 3),
        RS_VMSTATE_QP_UINT64_V("srq_wr_id", resp.srq_wr_id, 3),
        RS_VMSTATE_QP_STRUCT_ARRAY_V("srq_sge", resp.srq_sge, RS_MAX_SGE, 3,
                                     vmstate_rs_sge, struct rs_sge),
        /* version 4: send window, RNR, ACK coalescing, READ resources */
        RS_VMSTATE_QP_UINT32_V("req_pkt", req.pkt, 4),
        RS_VMSTATE_QP_UINT8_V("req_slot", path.req_slot, 4),
        RS_VMSTATE_QP_UINT32_V("una_psn", comp.una_psn, 4),
        RS_VMSTATE_QP_UINT8_V("rd_out", req.rd_out, 4),
        RS_VMSTATE_QP_UINT8_V("rnr_retries", req.rnr_retries, 4),
        RS_VMSTATE_QP_BOOL_V("rnr_wait", req.rnr_wait, 4),
        RS_VMSTATE_QP_BOOL_V("ack_pending", resp.ack_pending, 4),
        RS_VMSTATE_QP_UINT32_V("ack_psn", resp.ack_psn, 4),
        RS_VMSTATE_QP_UINT32_V("rd_head", resp.rd_head, 4),
        RS_VMSTATE_QP_STRUCT_ARRAY_V("rd_res", resp.rd_res, RS_MAX_RD_ATOMIC,
                                     4, vmstate_rs_rd_res, RSRdRes),
        /* version 5: what the requester recorded of started WQEs */
        RS_VMSTATE_QP_UINT32_V("sq_rec", req.sq_rec, 5),
        VMSTATE_BOOL_V(comm_est, RSQp, 5),
        VMSTATE_BOOL_V(sqd_notify, RSQp, 5),
        RS_VMSTATE_QP_STRUCT_ARRAY_V("sent", req.sent, RS_SQ_INFLIGHT, 5,
                                     vmstate_rs_sent_wqe, RSSentWqe),
        RS_VMSTATE_QP_UINT32_V("rd_sge_head", req.rd_sge_head, 5),
        RS_VMSTATE_QP_UINT32_V("rd_sge_tail", req.rd_sge_tail, 5),
        RS_VMSTATE_QP_STRUCT_ARRAY_V("rd_sge", req.rd_sge, RS_RD_SGE_POOL, 5,
                                     vmstate_rs_sge, struct rs_sge),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_qp_xrc,
        &vmstate_rs_qp_odp,
        &vmstate_rs_qp_dc,
        &vmstate_rs_qp_path,
        NULL
    },
};

/*
 * The requester's records of started WQEs: sq_comp <= sq_ci <= sq_rec,
 * at most RS_SQ_INFLIGHT of them, each spanning at least one PSN (the
 * completer's progress depends on it) and no more than its length needs,
 * and the READ/atomic SGEs they hold are those the pool has given out.
 */
static bool rs_qp_sent_valid(RSCore *c, const RSQp *qp)
{
    uint32_t n = qp->req.sq_rec - qp->comp.sq_comp, sges = 0, i;

    if (n > RS_SQ_INFLIGHT || qp->req.sq_ci - qp->comp.sq_comp > n ||
        qp->req.rd_sge_head - qp->req.rd_sge_tail > RS_RD_SGE_POOL) {
        return false;
    }
    for (i = 0; i < n; i++) {
        const RSSentWqe *w =
            &qp->req.sent[(qp->comp.sq_comp + i) % RS_SQ_INFLIGHT];

        if (w->len > c->p.max_msg_size ||
            !w->npkts || w->npkts > MAX(DIV_ROUND_UP(w->len, 256), 1) ||
            w->nsge > qp->max_send_sge ||
            (w->nsge && w->opcode != RS_WR_RDMA_READ &&
             w->opcode != RS_WR_ATOMIC_CMP_SWP &&
             w->opcode != RS_WR_ATOMIC_FETCH_ADD) ||
            w->sge_at >= RS_RD_SGE_POOL ||
            (w->nsge && w->sge_at != (qp->req.rd_sge_tail + sges) %
                                     RS_RD_SGE_POOL)) {
            return false;
        }
        sges += w->nsge;
    }
    return sges == qp->req.rd_sge_head - qp->req.rd_sge_tail;
}

/*
 * A QP's references, attributes and engine state: the receive side, the
 * send window, the requester's records and the READ resources.
 */
static bool rs_qp_state_valid(RSCore *c, const RSQp *qp)
{
    const RSParams *p = &c->p;
    /*
     * XRC: the target has no queues (rs_xrc_state_valid checked what it
     * borrows), the initiator no receive side.
     */
    bool tgt = qp->type == RS_QPT_XRC_TGT;
    bool ini = qp->type == RS_QPT_XRC_INI || qp->type == RS_QPT_DCI;
    /*
     * DC (rs_dc_state_valid checks the rest): a DCT and its contexts
     * have no send queue or send CQ, a DCT's SRQ is required.
     */
    bool dc_rx = qp->type == RS_QPT_DCT || qp->type == RS_QPT_DC_CTX;
    uint32_t j;

    if (dc_rx && !qp->srq) {
        return false;
    }

    /* Receive side: its own queue, or an SRQ and the WQE it took. */
    if (qp->srq ? (!RS_REF_OK(c, srqs, p->max_srqs, qp->srq) || ini ||
                   qp->rq_log || qp->max_recv_sge ||
                   (qp->resp.srq_nsge > RS_MAX_SGE &&
                    qp->resp.srq_nsge < RS_SRQ_WQE_BAD_DMA)) :
                  tgt || ini ?
                  (qp->resp.srq_claimed || qp->rq_log || qp->max_recv_sge ||
                   qp->rq_pi || qp->resp.rq_ci || (ini && qp->recv_cq)) :
                  (qp->resp.srq_claimed ||
                   qp->rq_log < 1 || qp->rq_log > RS_MAX_WQ_LOG)) {
        return false;
    }
    if (qp->resp.atomic_next >= RS_ATOMIC_RES) {
        return false;
    }
    if ((qp->type > RS_QPT_GSI && !tgt && !ini && !dc_rx) ||
        qp->type > RS_QPT_DC_CTX || qp->state > RS_QPS_ERR ||
        (!tgt && (!RS_REF_OK(c, pds, p->max_pds, qp->pd) ||
                  ((c->pds[qp->pd].flags & RS_PD_F_PRIVILEGED) && qp->uar) ||
                  (dc_rx ? qp->send_cq != 0 :
                   !RS_REF_OK(c, cqs, p->max_cqs, qp->send_cq)))) ||
        (!tgt && !ini && !RS_REF_OK(c, cqs, p->max_cqs, qp->recv_cq)) ||
        (qp->group && !RS_REF_OK(c, groups, p->max_groups, qp->group)) ||
        (qp->has_av && !rs_gid_valid(c, qp->av.gid_index))) {
        return false;
    }
    /* Engine state: in-flight WQEs fit the ring, PSNs are 24 bits. */
    if ((tgt || dc_rx ? qp->sq_log != 0 || qp->sq_pi || qp->req.sq_ci ||
                        qp->req.sq_rec :
               qp->sq_log < 1 || qp->sq_log > RS_MAX_WQ_LOG) ||
        qp->req.sq_ci - qp->comp.sq_comp > (1u << qp->sq_log) ||
        qp->resp.op > RS_RESP_DROP ||
        qp->max_send_sge > RS_MAX_SGE || qp->max_recv_sge > RS_MAX_SGE ||
        qp->max_inline > RS_MAX_INLINE ||
        qp->path_mtu < RS_MTU_256 || qp->path_mtu > RS_MTU_4096 ||
        (qp->sq_psn | qp->rq_psn | qp->comp.psn) >> 24) {
        return false;
    }
    /*
     * Send window: comp_psn <= una_psn <= sq_psn, the packet index of
     * a message in progress within the largest message, READ
     * resources within the largest READ.
     */
    if ((qp->comp.una_psn | qp->resp.ack_psn) >> 24 ||
        rs_psn_diff(qp->comp.una_psn, qp->comp.psn) < 0 ||
        rs_psn_diff(qp->sq_psn, qp->comp.una_psn) < 0 ||
        qp->req.pkt > p->max_msg_size / 256 ||
        qp->path.req_slot >= RS_MAX_GROUP_SESSIONS ||
        qp->req.rnr_retries > 7 || qp->req.rd_out > RS_MAX_RD_ATOMIC) {
        return false;
    }
    if (!rs_qp_sent_valid(c, qp)) {
        return false;
    }
    for (j = 0; j < RS_MAX_RD_ATOMIC; j++) {
        const RSRdRes *r = &qp->resp.rd_res[j];

        if (r->valid && (r->psn >> 24 || r->len > p->max_msg_size ||
                         !r->npkts ||
                         r->npkts > p->max_msg_size / 256 + 1 ||
                         r->first > r->next || r->next > r->stop ||
                         r->stop > r->npkts || r->gid >= p->max_gids ||
                         r->srq >= p->max_srqs || (r->srq && !tgt))) {
            return false;
        }
    }
    return true;
}

static bool rs_qps_state_valid(RSCore *c)
{
    for (uint32_t i = 0; i < c->p.max_qps; i++) {
        if (c->qps[i].valid && !rs_qp_state_valid(c, &c->qps[i])) {
            return false;
        }
    }
    return true;
}

/* After XRC: a target's queues are checked by what it borrows. */
const RSFeature rs_feature_qp = {
    .name = "qp",
    .validate = rs_qps_state_valid,
};
