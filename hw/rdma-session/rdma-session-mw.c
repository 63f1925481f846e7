/*
 * rdma-session adapter: memory windows (IBTA 10.6.7), type 1 and type 2B.
 *
 * A window takes a slot of the memory key table, as mlx5 and rxe put MRs
 * and MWs in one key space: its rkey resolves through rs_mkey_lookup() in
 * the table of its network identity like an MR's, and the responder's
 * rkey check (rs_resp_rkey) then applies the window's own PD, QP, rights
 * and range and moves data through the MR the window is bound to.  A
 * bound window counts on its MR (mw_binds): DEREG_MR of an MR with bound
 * windows fails with RS_STATUS_BUSY (rxe refuses it too), so a window
 * never outlives the pages it reaches.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

#define RS_MW_ACCESS    (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ |  \
                         RS_ACCESS_REMOTE_ATOMIC | RS_ACCESS_FLUSH_GLOBAL)
/* Rights of a window that need local write on its MR (C10-74). */
#define RS_MW_WRITES    (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_ATOMIC)

/*
 * The window a key names in key table netid (RS_MAX_NETIDS: key is an
 * admin handle), whatever its tag; NULL if it names none.
 */
static RSMr *rs_mw_slot(RSCore *c, unsigned netid, uint32_t key)
{
    uint32_t idx = netid < RS_MAX_NETIDS ? rs_netid_slot(c, netid, key) :
                   key >> RS_MKEY_INDEX_SHIFT;

    if (idx == 0 || idx >= c->p.max_mrs || !c->mrs[idx].valid ||
        !c->mrs[idx].mw_type) {
        return NULL;
    }
    return &c->mrs[idx];
}

/* Whether key names a window for QP qp (gid_index: see rs_key_netid). */
bool rs_mw_key(RSCore *c, const RSQp *qp, int gid_index, uint32_t key)
{
    unsigned n = rs_key_netid(c, qp, gid_index);

    return n < RS_MAX_NETIDS && rs_mw_slot(c, n, key) != NULL;
}

static uint32_t rs_mw_qp_handle(RSCore *c, const RSQp *qp)
{
    return rs_handle(qp - c->qps, qp->gen);
}

/* Bound -> unbound (type 1: still allocated; type 2: Free). */
static void rs_mw_unbind(RSCore *c, RSMr *mw)
{
    if (mw->mw_mr) {
        c->mrs[mw->mw_mr].mw_binds--;
    }
    mw->mw_mr = 0;
    mw->mw_qp = 0;
    mw->iova = 0;
    mw->length = 0;
    mw->access = 0;
}

uint8_t rs_cmd_alloc_mw(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_alloc_mw *a = &cmd->alloc_mw;
    uint32_t pd = RS_LOOKUP(c->pds, c->p.max_pds, le32_to_cpu(a->pd));
    uint32_t gid = le32_to_cpu(a->gid_index);
    uint32_t idx, key;
    RSMr *mw;

    if (!pd) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (!rs_gid_valid(c, gid)) {
        return RS_STATUS_BAD_NETID;
    }
    if ((a->type != RS_MW_TYPE_1 && a->type != RS_MW_TYPE_2) ||
        a->rsvd0[0] || a->rsvd0[1] || a->rsvd0[2] || a->rsvd1) {
        return RS_STATUS_BAD_PARAM;
    }
    idx = RS_ALLOC(c->mrs, c->p.max_mrs, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    mw = &c->mrs[idx];
    mw->valid = true;
    mw->fast = false;
    mw->fr_bound = false;
    mw->page_shift = 0;
    mw->flags = 0;
    mw->pd = pd;
    mw->gid_index = gid;
    mw->npages = 0;
    mw->mw_type = a->type;
    mw->mw_mr = 0;
    mw->mw_binds = 0;
    rs_mw_unbind(c, mw);
    c->pds[pd].refs++;
    c->gids[gid].refs++;
    key = rs_mkey_assign(c, idx);
    trace_rdma_session_mw_alloc(key, a->type, pd, gid);
    cqe->handle = cpu_to_le32(rs_mkey_handle(c, mw));
    cqe->result1 = cpu_to_le32(key);
    return RS_STATUS_OK;
}

/* Deallocation unbinds a bound window (rxe does the same). */
uint8_t rs_cmd_dealloc_mw(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe)
{
    uint32_t key = le32_to_cpu(cmd->destroy.handle);
    RSMr *mw = rs_mw_slot(c, RS_MAX_NETIDS, key);

    if (!mw) {
        return RS_STATUS_BAD_HANDLE;
    }
    rs_mw_unbind(c, mw);
    c->pds[mw->pd].refs--;
    c->gids[mw->gid_index].refs--;
    mw->mw_type = 0;
    mw->valid = false;
    rs_mkey_release(c, mw - c->mrs);
    trace_rdma_session_mw_dealloc(key);
    return RS_STATUS_OK;
}

/*
 * Check a bind against IBTA 10.6.7.2 (rxe_check_bind_mw); the MR to bind
 * to through *mrp (NULL: unbind).  Nothing changes on failure.
 */
static const char *rs_mw_bind_check(RSCore *c, const RSQp *qp, int gid_index,
                                    const struct rs_send_wqe_bind_mw *b,
                                    RSMr *mw, RSMr **mrp)
{
    uint32_t mw_rkey = le32_to_cpu(b->mw_rkey);
    uint32_t new_rkey = le32_to_cpu(b->new_rkey);
    uint64_t addr = le64_to_cpu(b->addr);
    uint64_t len = le64_to_cpu(b->length);
    uint16_t access = le16_to_cpu(b->access);
    RSMr *mr;

    *mrp = NULL;
    if (!mw || mw->tag != (mw_rkey & RS_MKEY_TAG_MASK)) {
        return "not a window's current rkey";
    }
    if (b->num_sge || (b->flags & RS_WQE_F_INLINE) || b->rsvd0 ||
        b->rsvd1 || (new_rkey >> RS_MKEY_INDEX_SHIFT) !=
        (mw_rkey >> RS_MKEY_INDEX_SHIFT)) {
        return "malformed WQE";
    }
    /* C10-72 (and type 1 alike): the window is in the QP's PD. */
    if (mw->pd != qp->pd) {
        return "window of another PD";
    }
    /* Zero-based windows are not offered. */
    if (access & ~RS_MW_ACCESS) {
        return "access flags";
    }
    if (mw->mw_type == RS_MW_TYPE_2) {
        /* o10-37.2.30: only a Free type 2 window binds. */
        if (mw->mw_mr) {
            return "type 2 window not free";
        }
        /* o10-37.2.40: and never to nothing. */
        if (!len) {
            return "type 2 window with zero length";
        }
    }
    if (!len) {
        return NULL;
    }
    mr = rs_mkey_lookup_netid(c, mw->netid, le32_to_cpu(b->mr_lkey));
    if (!mr || mr->mw_type || mr->fast || mr->pd != qp->pd) {
        return "MR key";
    }
    /* C10-73 */
    if (!(mr->access & RS_ACCESS_MW_BIND)) {
        return "MR without MW_BIND";
    }
    /* C10-74 */
    if ((access & RS_MW_WRITES) && !(mr->access & RS_ACCESS_LOCAL_WRITE)) {
        return "writable window on an MR without local write";
    }
    /* A window never lets a FLUSH reach an MR that does not allow it. */
    if ((access & RS_ACCESS_FLUSH_GLOBAL) &&
        !(mr->access & RS_ACCESS_FLUSH_GLOBAL)) {
        return "FLUSH right on an MR without it";
    }
    /* C10-75 */
    if (addr < mr->iova || addr + len < addr ||
        addr + len > mr->iova + mr->length) {
        return "range beyond the MR";
    }
    *mrp = mr;
    return NULL;
}

/* RS_WR_BIND_MW: RS_WC_SUCCESS or RS_WC_MW_BIND_ERR. */
uint8_t rs_mw_bind(RSCore *c, const RSQp *qp, int gid_index,
                   const struct rs_send_wqe_ctrl *w)
{
    struct rs_send_wqe_bind_mw b;
    const char *why;
    RSMr *mw, *mr;

    QEMU_BUILD_BUG_ON(sizeof(b) != sizeof(*w));
    memcpy(&b, w, sizeof(b));
    mw = rs_mw_slot(c, c->pds[qp->pd].netid, le32_to_cpu(b.mw_rkey));
    why = rs_mw_bind_check(c, qp, gid_index, &b, mw, &mr);
    if (why) {
        RS_GUEST_ERR(rdma_session_err_mw_bind, "rkey 0x%x: %s",
                     le32_to_cpu(b.mw_rkey), why);
        return RS_WC_MW_BIND_ERR;
    }
    rs_mw_unbind(c, mw);
    mw->tag = le32_to_cpu(b.new_rkey) & RS_MKEY_TAG_MASK;
    if (mr) {
        mw->mw_mr = mr - c->mrs;
        mr->mw_binds++;
        mw->iova = le64_to_cpu(b.addr);
        mw->length = le64_to_cpu(b.length);
        mw->access = le16_to_cpu(b.access);
        if (mw->mw_type == RS_MW_TYPE_2) {
            mw->mw_qp = rs_mw_qp_handle(c, qp);
        }
    }
    trace_rdma_session_mw_bind(le32_to_cpu(b.new_rkey), mw->mw_mr, mw->iova,
                               mw->length, mw->access);
    return RS_WC_SUCCESS;
}

/*
 * LOCAL_INV or SEND with Invalidate of a window key: only a bound type 2
 * window of the QP's PD is invalidated (a type 1 window is unbound by a
 * zero-length bind only), and remotely only through the QP it is bound
 * to.  Valid -> Free; the next bind brings a new tag.
 */
bool rs_mw_invalidate(RSCore *c, const RSQp *qp, int gid_index, uint32_t key,
                      bool remote)
{
    unsigned n = rs_key_netid(c, qp, gid_index);
    RSMr *mw = n < RS_MAX_NETIDS ? rs_mw_slot(c, n, key) : NULL;

    if (!mw || mw->tag != (key & RS_MKEY_TAG_MASK) ||
        mw->mw_type != RS_MW_TYPE_2 || !mw->mw_mr || mw->pd != qp->pd ||
        (remote && mw->mw_qp != rs_mw_qp_handle(c, qp))) {
        return false;
    }
    rs_mw_unbind(c, mw);
    trace_rdma_session_mw_inval(key, remote);
    return true;
}

/*
 * Responder: remote access of len bytes at va with right (every bit of
 * it: a FLUSH may need two) through window mw (a valid key slot
 * rs_mkey_lookup() resolved) for QP qp, in PD pd (the QP's, or an XRC
 * target's SRQ's): the MR to move the data through, or NULL.  Checked on
 * every packet, so an invalidation, rebind or deallocation takes effect
 * at once.
 */
RSMr *rs_mw_remote(RSCore *c, const RSQp *qp, uint32_t pd, RSMr *mw,
                   uint64_t va, uint32_t len, uint16_t right)
{
    if (!mw->mw_mr || mw->pd != pd || !right ||
        (mw->access & right) != right ||
        (mw->mw_type == RS_MW_TYPE_2 &&
         mw->mw_qp != rs_mw_qp_handle(c, qp)) ||
        va < mw->iova || va + len < va || va + len > mw->iova + mw->length) {
        return NULL;
    }
    return &c->mrs[mw->mw_mr];
}

/*
 * Incoming migration: a window's binding against its MR, and every MR's
 * count of bound windows rebuilt (it is not in the stream).
 */
static bool rs_mw_post_load(RSCore *c)
{
    const RSParams *p = &c->p;
    uint32_t i;

    for (i = 0; i < p->max_mrs; i++) {
        c->mrs[i].mw_binds = 0;
    }
    for (i = 0; i < p->max_mrs; i++) {
        RSMr *mw = &c->mrs[i];
        RSMr *mr;

        if (!mw->valid || !mw->mw_type) {
            if (mw->mw_type || mw->mw_mr || mw->mw_qp) {
                return false;
            }
            continue;
        }
        if (mw->mw_type > RS_MW_TYPE_2 || mw->fast || mw->fr_bound ||
            mw->npages || mw->pd == 0 || mw->pd >= p->max_pds ||
            !c->pds[mw->pd].valid || !rs_gid_valid(c, mw->gid_index)) {
            return false;
        }
        if (!mw->mw_mr) {
            if (mw->mw_qp || mw->length || mw->access) {
                return false;
            }
            continue;
        }
        if (mw->mw_mr >= p->max_mrs) {
            return false;
        }
        mr = &c->mrs[mw->mw_mr];
        if (!mr->valid || mr->mw_type || mr->fast || mr->pd != mw->pd ||
            mr->netid != mw->netid ||
            !(mr->access & RS_ACCESS_MW_BIND) || (mw->access & ~RS_MW_ACCESS) ||
            ((mw->access & RS_MW_WRITES) &&
             !(mr->access & RS_ACCESS_LOCAL_WRITE)) ||
            ((mw->access & RS_ACCESS_FLUSH_GLOBAL) &&
             !(mr->access & RS_ACCESS_FLUSH_GLOBAL)) ||
            !mw->length || mw->iova < mr->iova ||
            mw->iova + mw->length < mw->iova ||
            mw->iova + mw->length > mr->iova + mr->length ||
            (mw->mw_type == RS_MW_TYPE_1 && mw->mw_qp)) {
            return false;
        }
        mr->mw_binds++;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/* A memory window's state: only a slot that holds a window sends it. */
static bool rs_mr_mw_needed(void *opaque)
{
    RSMr *mr = opaque;

    return mr->mw_type != 0;
}

const VMStateDescription vmstate_rs_mr_mw = {
    .name = "rdma-session/mr/mw",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mr_mw_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(mw_type, RSMr),
        VMSTATE_UINT32(mw_mr, RSMr),
        VMSTATE_UINT32(mw_qp, RSMr),
        VMSTATE_END_OF_LIST()
    },
};

/* A slot without the window subsection holds no window. */
static void rs_mw_pre_load(RSCore *c)
{
    for (uint32_t i = 0; i < c->p.max_mrs; i++) {
        c->mrs[i].mw_type = 0;
        c->mrs[i].mw_mr = 0;
        c->mrs[i].mw_qp = 0;
    }
}

/* Windows after the MRs they reach. */
const RSFeature rs_feature_mw = {
    .name = "mw",
    .pre_load = rs_mw_pre_load,
    .validate = rs_mw_post_load,
};
