/*
 * rdma-session adapter: memory keys and their translation tables.
 *
 * REG_MR hands the device a page list; the device copies it into its own
 * table (IOVA page -> guest physical page) after checking every entry, so
 * nothing the guest changes later in the list can redirect a key.  Keys
 * live in one table per network identity (rdma-session-netid.c): a key is
 * allocated in its PD's identity and resolves only in that identity's
 * table.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

#define RS_MR_F_KNOWN   (RS_MR_F_PBL_INDIRECT | RS_MR_F_FAST_REG)

/* The key in identity netid's table, if it is valid and usable now. */
RSMr *rs_mkey_lookup_netid(RSCore *c, unsigned netid, uint32_t key)
{
    uint32_t idx = rs_netid_slot(c, netid, key);
    RSMr *mr;

    if (idx == 0) {
        return NULL;
    }
    mr = &c->mrs[idx];
    if (!mr->valid || (mr->fast && !mr->fr_bound) ||
        mr->tag != (key & RS_MKEY_TAG_MASK)) {
        return NULL;
    }
    return mr;
}

/* A key that arrived through GID gid_index: its identity's table. */
RSMr *rs_mkey_lookup(RSCore *c, uint32_t gid_index, uint32_t key)
{
    if (!rs_gid_valid(c, gid_index)) {
        return NULL;
    }
    return rs_mkey_lookup_netid(c, c->gids[gid_index].netid, key);
}

uint8_t rs_mr_check_access(uint16_t access)
{
    if (access & ~RS_ACCESS_ALL) {
        return RS_STATUS_BAD_ACCESS;
    }
    /*
     * Guest RAM is no persistence domain the device can flush to: an MR
     * that asks for persistent FLUSH is refused, never silently degraded.
     */
    if (access & RS_ACCESS_FLUSH_PERSISTENT) {
        return RS_STATUS_BAD_ACCESS;
    }
    /* IBTA 10.6.3.1: remote write or atomic needs local write. */
    if ((access & (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_ATOMIC)) &&
        !(access & RS_ACCESS_LOCAL_WRITE)) {
        return RS_STATUS_BAD_ACCESS;
    }
    return RS_STATUS_OK;
}

/* Read npages entries into pages[], each a data page (RAM or a peer BAR). */
static uint8_t rs_mr_read_pbl(RSCore *c, const struct rs_cmd_reg_mr *r,
                              uint32_t npages, uint64_t *pages)
{
    uint64_t pbl = le64_to_cpu(r->pbl_addr);
    uint64_t page_size = 1ull << r->page_shift;
    uint32_t i;
    uint8_t st;

    if (pbl & 7) {
        return RS_STATUS_BAD_ALIGN;
    }
    if (!(r->flags & RS_MR_F_PBL_INDIRECT)) {
        st = rs_dma_read(c, pbl, pages, (uint64_t)npages * sizeof(*pages));
    } else {
        uint32_t nchunks = DIV_ROUND_UP(npages, RS_PBL_CHUNK_ENTRIES);
        g_autofree uint64_t *chunks = g_new(uint64_t, nchunks);

        st = rs_dma_read(c, pbl, chunks, (uint64_t)nchunks * sizeof(*chunks));
        for (i = 0; !st && i < nchunks; i++) {
            uint64_t chunk = le64_to_cpu(chunks[i]);
            uint32_t n = MIN(npages - i * RS_PBL_CHUNK_ENTRIES,
                             RS_PBL_CHUNK_ENTRIES);

            if (chunk & (RS_DB_PAGE_SIZE - 1)) {
                return RS_STATUS_BAD_ALIGN;
            }
            st = rs_dma_read(c, chunk, pages + i * RS_PBL_CHUNK_ENTRIES,
                             n * sizeof(*pages));
        }
    }
    if (st) {
        return st;
    }
    for (i = 0; i < npages; i++) {
        pages[i] = le64_to_cpu(pages[i]);
        if (pages[i] & (page_size - 1)) {
            return RS_STATUS_BAD_ALIGN;
        }
        st = rs_data_check(c, pages[i], page_size, false);
        if (st) {
            return st;
        }
    }
    return RS_STATUS_OK;
}

/*
 * A free key slot for a key translating @pages pages of the max-mr-pages
 * budget; 0 when the budget or the table is exhausted.
 */
uint32_t rs_mr_slot(RSCore *c, uint32_t pages)
{
    if (pages > c->p.max_mr_pages - c->mr_pages_used) {
        return 0;
    }
    return RS_ALLOC(c->mrs, c->p.max_mrs, 1);
}

/*
 * Make free MR slot idx the MR m (its pages owned by the slot from now
 * on) with a new tag, and take its references; its key.
 */
uint32_t rs_mr_install(RSCore *c, uint32_t idx, RSMr m)
{
    RSMr *mr = &c->mrs[idx];

    m.valid = true;
    m.tag = mr->tag;
    m.core = c;
    *mr = m;
    c->mr_pages_used += m.npages;
    c->pds[m.pd].refs++;
    c->gids[m.gid_index].refs++;
    return rs_mkey_assign(c, idx);
}

/*
 * REG_MR with RS_MR_F_FAST_REG (ib_alloc_mr): a kernel PD's MR with room
 * for npages pages and no translation yet.  Its key resolves only once a
 * REG_MR work request bound it.
 */
static uint8_t rs_mr_alloc_fast(RSCore *c, uint32_t pd, uint32_t gid,
                                const struct rs_cmd_reg_mr *r,
                                struct rs_admin_cqe *cqe)
{
    uint32_t npages = le32_to_cpu(r->npages);
    uint32_t idx, key;
    uint64_t *pages;

    if (!(c->pds[pd].flags & RS_PD_F_PRIVILEGED)) {
        return RS_STATUS_BAD_PD;
    }
    if (r->flags != RS_MR_F_FAST_REG || r->access || r->iova ||
        r->length || r->pbl_addr) {
        return RS_STATUS_BAD_PARAM;
    }
    if (npages == 0 || npages > RS_MAX_FRMR_PAGES) {
        return RS_STATUS_BAD_SIZE;
    }
    idx = rs_mr_slot(c, npages);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    pages = g_try_new0(uint64_t, npages);
    if (!pages) {
        return RS_STATUS_NO_RESOURCES;
    }
    key = rs_mr_install(c, idx, (RSMr) {
        .fast = true,
        .page_shift = RS_MR_MIN_PAGE_SHIFT,
        .flags = r->flags,
        .pd = pd,
        .gid_index = gid,
        .npages = npages,
        .pages = pages,
    });
    trace_rdma_session_mr_reg(key, 0, 0, npages, gid);
    cqe->handle = cpu_to_le32(rs_mkey_handle(c, &c->mrs[idx]));
    cqe->result1 = cpu_to_le32(key);
    return RS_STATUS_OK;
}

uint8_t rs_cmd_reg_mr(RSCore *c, const struct rs_admin_cmd *cmd,
                      struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_reg_mr *r = &cmd->reg_mr;
    uint32_t pd = RS_LOOKUP(c->pds, c->p.max_pds, le32_to_cpu(r->pd));
    uint32_t gid = le32_to_cpu(r->gid_index);
    uint16_t access = le16_to_cpu(r->access);
    uint64_t iova = le64_to_cpu(r->iova);
    uint64_t len = le64_to_cpu(r->length);
    uint32_t npages = le32_to_cpu(r->npages);
    g_autofree uint64_t *pages = NULL;
    uint32_t idx, key;
    uint8_t st;

    if (!pd) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (!rs_gid_valid(c, gid)) {
        return RS_STATUS_BAD_NETID;
    }
    st = rs_mr_check_access(access);
    if (st) {
        return st;
    }
    if (r->flags & RS_MR_F_ODP) {
        return rs_odp_reg_mr(c, r, pd, gid, access, cqe);
    }
    if ((r->flags & ~RS_MR_F_KNOWN) || r->page_shift < RS_MR_MIN_PAGE_SHIFT ||
        r->page_shift > RS_MR_MAX_PAGE_SHIFT) {
        return RS_STATUS_BAD_PARAM;
    }
    if (r->flags & RS_MR_F_FAST_REG) {
        return rs_mr_alloc_fast(c, pd, gid, r, cqe);
    }
    if (len == 0 || iova + len < iova ||
        npages != ((iova + len - 1) >> r->page_shift) -
                  (iova >> r->page_shift) + 1) {
        return RS_STATUS_BAD_SIZE;
    }
    idx = rs_mr_slot(c, npages);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    pages = g_try_new(uint64_t, npages);
    if (!pages) {
        return RS_STATUS_NO_RESOURCES;
    }
    st = rs_mr_read_pbl(c, r, npages, pages);
    if (st) {
        return st;
    }

    key = rs_mr_install(c, idx, (RSMr) {
        .page_shift = r->page_shift,
        .flags = r->flags,
        .access = access,
        .pd = pd,
        .gid_index = gid,
        .iova = iova,
        .length = len,
        .npages = npages,
        .pages = g_steal_pointer(&pages),
    });
    trace_rdma_session_mr_reg(key, iova, len, npages, gid);
    cqe->handle = cpu_to_le32(rs_mkey_handle(c, &c->mrs[idx]));
    cqe->result1 = cpu_to_le32(key);
    return RS_STATUS_OK;
}

/*
 * REREG_MR's new translation: checked and read as REG_MR checks and
 * reads one (its checks 7 - 14, the page budget counting the MR's own
 * pages as free), into *pages.
 */
static uint8_t rs_mr_rereg_trans(RSCore *c, const RSMr *mr,
                                 const struct rs_cmd_rereg_mr *r,
                                 uint64_t **pages)
{
    struct rs_cmd_reg_mr t = {
        .iova = r->iova,
        .length = r->length,
        .pbl_addr = r->pbl_addr,
        .npages = r->npages,
        .page_shift = r->page_shift,
        .flags = r->mr_flags,
    };
    uint64_t iova = le64_to_cpu(r->iova);
    uint64_t len = le64_to_cpu(r->length);
    uint32_t npages = le32_to_cpu(r->npages);
    g_autofree uint64_t *p = NULL;
    uint8_t st;

    if ((r->mr_flags & ~RS_MR_F_PBL_INDIRECT) ||
        r->page_shift < RS_MR_MIN_PAGE_SHIFT ||
        r->page_shift > RS_MR_MAX_PAGE_SHIFT) {
        return RS_STATUS_BAD_PARAM;
    }
    if (len == 0 || iova + len < iova ||
        npages != ((iova + len - 1) >> r->page_shift) -
                  (iova >> r->page_shift) + 1) {
        return RS_STATUS_BAD_SIZE;
    }
    if (npages > c->p.max_mr_pages - (c->mr_pages_used - mr->npages)) {
        return RS_STATUS_NO_RESOURCES;
    }
    p = g_try_new(uint64_t, npages);
    if (!p) {
        return RS_STATUS_NO_RESOURCES;
    }
    st = rs_mr_read_pbl(c, &t, npages, p);
    if (st) {
        return st;
    }
    *pages = g_steal_pointer(&p);
    return RS_STATUS_OK;
}

/*
 * REREG_MR: the MR of the admin handle gets a new PD, access or
 * translation under the same slot, keys and handle (what ConnectX's UMR
 * and soft-RoCE's rereg_user_mr do), every check passed before anything
 * changes.  The device runs under the BQL, so the data path sees the MR
 * as it was or as it is, never half changed; a message already under way
 * goes on through the new state from its next packet.
 */
uint8_t rs_cmd_rereg_mr(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_rereg_mr *r = &cmd->rereg_mr;
    uint32_t handle = le32_to_cpu(r->handle);
    uint32_t idx = handle >> RS_MKEY_INDEX_SHIFT;
    uint32_t flags = le32_to_cpu(r->flags);
    uint16_t access = le16_to_cpu(r->access);
    g_autofree uint64_t *pages = NULL;
    uint32_t pd = 0;
    RSMr *mr;
    uint8_t st;

    if (idx == 0 || idx >= c->p.max_mrs || !c->mrs[idx].valid ||
        c->mrs[idx].mw_type ||
        c->mrs[idx].tag != (handle & RS_MKEY_TAG_MASK)) {
        return RS_STATUS_BAD_HANDLE;
    }
    mr = &c->mrs[idx];
    if (!flags || (flags & ~RS_REREG_ALL) || r->rsvd) {
        return RS_STATUS_BAD_PARAM;
    }
    /* Only a region with a translation of its own (an ODP one: no TRANS). */
    if (mr->fast || mr->mkl_kind ||
        ((flags & RS_REREG_TRANS) && (mr->flags & RS_MR_F_ODP))) {
        return RS_STATUS_NOT_SUPPORTED;
    }
    /* IBTA 10.6.7.2.6, as for DEREG_MR: no windows may be bound to it. */
    if (mr->mw_binds) {
        return RS_STATUS_BUSY;
    }
    if (flags & RS_REREG_PD) {
        pd = RS_LOOKUP(c->pds, c->p.max_pds, le32_to_cpu(r->pd));
        if (!pd) {
            return RS_STATUS_BAD_HANDLE;
        }
        /* The key stays in its table: the PD must be of that identity. */
        if (c->pds[pd].netid != mr->netid ||
            c->pds[pd].flags != c->pds[mr->pd].flags) {
            return RS_STATUS_BAD_PD;
        }
    }
    if (flags & RS_REREG_ACCESS) {
        st = rs_mr_check_access(access);
        if (st) {
            return st;
        }
    }
    if (flags & RS_REREG_TRANS) {
        st = rs_mr_rereg_trans(c, mr, r, &pages);
        if (st) {
            return st;
        }
    }

    if (flags & RS_REREG_PD) {
        c->pds[mr->pd].refs--;
        c->pds[pd].refs++;
        mr->pd = pd;
    }
    if (flags & RS_REREG_ACCESS) {
        mr->access = access;
    }
    if (flags & RS_REREG_TRANS) {
        c->mr_pages_used += le32_to_cpu(r->npages) - mr->npages;
        g_free(mr->pages);
        mr->pages = g_steal_pointer(&pages);
        mr->npages = le32_to_cpu(r->npages);
        mr->page_shift = r->page_shift;
        mr->flags = r->mr_flags;
        mr->iova = le64_to_cpu(r->iova);
        mr->length = le64_to_cpu(r->length);
    }
    trace_rdma_session_mr_rereg(rs_mkey_key(mr), flags, mr->pd, mr->access,
                                mr->iova, mr->length, mr->npages);
    cqe->handle = cpu_to_le32(handle);
    cqe->result1 = cpu_to_le32(rs_mkey_key(mr));
    return RS_STATUS_OK;
}

/*
 * The kind of a key whose memory is not its page list: an indirect or
 * pattern key, an ODP MR (never both: an indirect key has no flags).
 * NULL: an MR with pages[].
 */
static const RSMkeyOps *rs_mkey_ops(const RSMr *mr)
{
    if (mr->mkl_kind) {
        return &rs_mkey_list_ops;
    }
    if (mr->flags & RS_MR_F_ODP) {
        return &rs_odp_mkey_ops;
    }
    return NULL;
}

static void rs_mr_free(RSCore *c, uint32_t idx)
{
    RSMr *mr = &c->mrs[idx];
    const RSMkeyOps *ops = rs_mkey_ops(mr);

    c->pds[mr->pd].refs--;
    c->gids[mr->gid_index].refs--;
    c->mr_pages_used -= mr->npages;
    if (ops) {
        ops->release(c, mr);
    }
    g_free(mr->pages);
    mr->pages = NULL;
    mr->npages = 0;
    mr->valid = false;
    mr->fast = false;
    mr->fr_bound = false;
    rs_mkey_release(c, idx);
}

/*
 * A QP of the guest kernel: its PD is privileged and it rings doorbell
 * page 0, which no user context maps.
 */
bool rs_qp_privileged(RSCore *c, const RSQp *qp)
{
    return qp->uar == 0 && (c->pds[qp->pd].flags & RS_PD_F_PRIVILEGED);
}

/*
 * The fast-registration MR a LOCAL_INV, REG_MR or IETH key names, if it
 * is one, in the QP's PD: in the PD's key table (gid_index < 0), or for
 * an IETH in the table of the GID it arrived on.
 */
static RSMr *rs_mr_fast_slot(RSCore *c, const RSQp *qp, int gid_index,
                             uint32_t key)
{
    uint32_t idx = rs_netid_slot(c, rs_key_netid(c, qp, gid_index), key);
    RSMr *mr;

    if (idx == 0) {
        return NULL;
    }
    mr = &c->mrs[idx];
    if (!mr->valid || !mr->fast || mr->pd != qp->pd) {
        return NULL;
    }
    return mr;
}

/* Invalidate (LOCAL_INV, SEND with invalidate): Valid -> Free. */
static bool rs_mr_invalidate(RSCore *c, const RSQp *qp, int gid_index,
                             uint32_t key)
{
    RSMr *mr = rs_mr_fast_slot(c, qp, gid_index, key);

    if (!mr || !mr->fr_bound || mr->tag != (key & RS_MKEY_TAG_MASK)) {
        return false;
    }
    mr->fr_bound = false;
    trace_rdma_session_mr_inval(key);
    return true;
}

/* REG_MR work request: Free -> Valid with the WQE's key and pages. */
static uint8_t rs_mr_fast_reg(RSCore *c, const RSQp *qp, int gid_index,
                              const struct rs_send_wqe_reg_mr *f)
{
    uint32_t key = le32_to_cpu(f->key);
    uint64_t iova = le64_to_cpu(f->iova);
    uint64_t len = le64_to_cpu(f->length);
    uint64_t pbl = le64_to_cpu(f->pbl_addr);
    uint32_t npages = le32_to_cpu(f->npages);
    uint16_t access = le16_to_cpu(f->access);
    RSMr *mr = rs_mr_fast_slot(c, qp, gid_index, key);
    uint64_t psize;
    uint32_t i;

    if (!mr || mr->fr_bound || mr->mkl_kind || f->num_sge ||
        rs_mr_check_access(access) ||
        f->page_shift < RS_MR_MIN_PAGE_SHIFT ||
        f->page_shift > RS_MR_MAX_PAGE_SHIFT) {
        return RS_WC_LOC_PROT_ERR;
    }
    if (len == 0 || iova + len < iova || npages > mr->npages ||
        npages != ((iova + len - 1) >> f->page_shift) -
                  (iova >> f->page_shift) + 1) {
        return RS_WC_LOC_PROT_ERR;
    }
    /* The slots are not reachable while Free: fill them in place. */
    if ((pbl & 7) ||
        rs_dma_read(c, pbl, mr->pages, (uint64_t)npages * sizeof(uint64_t))) {
        return RS_WC_LOC_PROT_ERR;
    }
    psize = 1ull << f->page_shift;
    for (i = 0; i < npages; i++) {
        mr->pages[i] = le64_to_cpu(mr->pages[i]);
        if ((mr->pages[i] & (psize - 1)) ||
            rs_data_check(c, mr->pages[i], psize, false)) {
            return RS_WC_LOC_PROT_ERR;
        }
    }
    mr->tag = key & RS_MKEY_TAG_MASK;
    mr->page_shift = f->page_shift;
    mr->access = access;
    mr->iova = iova;
    mr->length = len;
    mr->fr_bound = true;
    trace_rdma_session_mr_fast_reg(key, iova, len, npages);
    return RS_WC_SUCCESS;
}

/* Whether key names an indirect or pattern key's slot in qp's table. */
static bool rs_mr_list_key(RSCore *c, const RSQp *qp, uint32_t key)
{
    uint32_t idx = rs_netid_slot(c, rs_key_netid(c, qp, -1), key);

    return idx && c->mrs[idx].valid && c->mrs[idx].mkl_kind;
}

/*
 * Execute a LOCAL_INV or REG_MR work request; RS_WC_* status.  Both are
 * privileged operations (IBTA 10.6.3.6: kernel consumers only), but for
 * indirect and pattern keys.
 */
uint8_t rs_mr_local_op(RSCore *c, const RSQp *qp,
                       const struct rs_send_wqe_ctrl *w)
{
    int gid_index = -1;         /* local: the PD's key table */
    struct rs_send_wqe_reg_mr f;

    /* Windows are for every consumer, not only the kernel. */
    if (w->opcode == RS_WR_BIND_MW) {
        return rs_mw_bind(c, qp, gid_index, w);
    }
    if (w->opcode == RS_WR_LOCAL_INV &&
        rs_mw_key(c, qp, gid_index, le32_to_cpu(w->imm_or_inv))) {
        return rs_mw_invalidate(c, qp, gid_index, le32_to_cpu(w->imm_or_inv),
                                false) ? RS_WC_SUCCESS : RS_WC_LOC_PROT_ERR;
    }
    /* Indirect and pattern keys are every consumer's too (as mlx5's). */
    if (w->opcode == RS_WR_REG_INDIRECT || w->opcode == RS_WR_REG_PATTERN) {
        return rs_mkl_wr(c, qp, gid_index, w);
    }
    if (!rs_qp_privileged(c, qp) &&
        !(w->opcode == RS_WR_LOCAL_INV &&
          rs_mr_list_key(c, qp, le32_to_cpu(w->imm_or_inv)))) {
        return RS_WC_LOC_QP_OP_ERR;
    }
    if (w->opcode == RS_WR_LOCAL_INV) {
        return rs_mr_invalidate(c, qp, gid_index,
                                le32_to_cpu(w->imm_or_inv)) ?
               RS_WC_SUCCESS : RS_WC_LOC_PROT_ERR;
    }
    QEMU_BUILD_BUG_ON(sizeof(f) != sizeof(*w));
    memcpy(&f, w, sizeof(f));
    return rs_mr_fast_reg(c, qp, gid_index, &f);
}

/* Responder: the IETH of a SEND with invalidate, through the GID it hit. */
bool rs_mr_remote_inv(RSCore *c, const RSQp *qp, uint32_t gid_index,
                      uint32_t rkey)
{
    if (rs_mw_key(c, qp, gid_index, rkey)) {
        return rs_mw_invalidate(c, qp, gid_index, rkey, true);
    }
    return rs_mr_invalidate(c, qp, gid_index, rkey);
}

uint8_t rs_cmd_dereg_mr(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe)
{
    uint32_t key = le32_to_cpu(cmd->destroy.handle);
    uint32_t idx = key >> RS_MKEY_INDEX_SHIFT;

    if (idx == 0 || idx >= c->p.max_mrs || !c->mrs[idx].valid ||
        c->mrs[idx].mw_type || c->mrs[idx].tag != (key & RS_MKEY_TAG_MASK)) {
        return RS_STATUS_BAD_HANDLE;
    }
    /* IBTA 10.6.7.2.6 lets it fail or invalidate the windows: it fails. */
    if (c->mrs[idx].mw_binds) {
        return RS_STATUS_BUSY;
    }
    rs_mr_free(c, idx);
    return RS_STATUS_OK;
}

/*
 * Data path: move len bytes between buf and the MR's range at va, page by
 * page through its translation table.  The caller checked the bounds.
 */
uint8_t rs_mr_rw(RSCore *c, const RSMr *mr, uint64_t va, void *buf,
                 uint32_t len, bool write)
{
    const RSMkeyOps *ops = rs_mkey_ops(mr);
    uint64_t psize = 1ull << mr->page_shift;
    uint8_t *p = buf;

    if (ops) {
        return ops->rw(c, mr, va, buf, len, write);
    }
    while (len) {
        uint64_t idx = (va >> mr->page_shift) - (mr->iova >> mr->page_shift);
        uint64_t in = va & (psize - 1);
        uint32_t n = MIN((uint64_t)len, psize - in);
        uint64_t pa;
        uint8_t st;

        if (idx >= mr->npages) {
            return RS_STATUS_BAD_ADDR;
        }
        pa = (mr->pages[idx] & ~(psize - 1)) + in;
        st = write ? rs_data_write(c, pa, p, n) : rs_data_read(c, pa, p, n);
        if (st) {
            return st;
        }
        va += n;
        p += n;
        len -= n;
    }
    return RS_STATUS_OK;
}

/*
 * Resolve one local SGE: NULL *mr with RS_WC_SUCCESS means "a DMA address"
 * (RS_LOCAL_DMA_LKEY on a privileged QP, the driver's local_dma_lkey); it
 * still reaches guest RAM only.  The PD must be the QP's, the range inside
 * the MR and the access allowed.
 */
static uint8_t rs_sge_map(RSCore *c, const RSQp *qp, uint32_t gid_index,
                          const struct rs_sge *sge, uint16_t access,
                          RSMr **mrp)
{
    uint64_t addr = le64_to_cpu(sge->addr);
    uint32_t len = le32_to_cpu(sge->length);
    uint32_t lkey = le32_to_cpu(sge->lkey);
    RSMr *mr;

    *mrp = NULL;
    if (lkey == RS_LOCAL_DMA_LKEY && rs_qp_privileged(c, qp)) {
        return rs_data_check(c, addr, len, access & RS_ACCESS_LOCAL_WRITE) ?
               RS_WC_LOC_PROT_ERR : RS_WC_SUCCESS;
    }
    /* Local: the QP's PD's key table. */
    mr = rs_mkey_lookup_netid(c, c->pds[qp->pd].netid, lkey);
    /* A window's key is an rkey only. */
    if (!mr || mr->mw_type || mr->pd != qp->pd) {
        return RS_WC_LOC_PROT_ERR;
    }
    if ((access & RS_ACCESS_LOCAL_WRITE) &&
        !(mr->access & RS_ACCESS_LOCAL_WRITE)) {
        return RS_WC_LOC_PROT_ERR;
    }
    if (addr < mr->iova || addr + len < addr ||
        addr + len > mr->iova + mr->length) {
        return RS_WC_LOC_PROT_ERR;
    }
    *mrp = mr;
    return RS_WC_SUCCESS;
}

/* Check a whole SGE list before any byte moves; *total: its length. */
uint8_t rs_sge_check(RSCore *c, const RSQp *qp, uint32_t gid_index,
                     const struct rs_sge *sge, unsigned n, uint16_t access,
                     uint64_t *total)
{
    unsigned i;
    RSMr *mr;
    uint8_t st;

    *total = 0;
    for (i = 0; i < n; i++) {
        if (!le32_to_cpu(sge[i].length)) {
            continue;
        }
        st = rs_sge_map(c, qp, gid_index, &sge[i], access, &mr);
        if (st) {
            return st;
        }
        *total += le32_to_cpu(sge[i].length);
    }
    return RS_WC_SUCCESS;
}

/*
 * Resolve the SGEs that bytes [off, off + len) of the list cover into
 * mrs[] (NULL: a DMA address) and check that ODP MRs have every page
 * those bytes need, before any byte moves: a packet that faults moves
 * nothing (RS_WC_ODP_FAULT, c->odp_fault: the first page missing, up to
 * the end of its SGE).
 */
static uint8_t rs_sge_resolve(RSCore *c, const RSQp *qp, uint32_t gid_index,
                              const struct rs_sge *sge, unsigned n,
                              uint64_t off, uint32_t len, bool to_mem,
                              RSMr **mrs)
{
    unsigned i;

    for (i = 0; i < n && i < RS_MAX_SGE && len; i++) {
        uint32_t slen = le32_to_cpu(sge[i].length);
        uint64_t addr = le64_to_cpu(sge[i].addr);
        uint32_t chunk;
        uint8_t st;

        mrs[i] = NULL;
        if (off >= slen) {
            off -= slen;
            continue;
        }
        chunk = MIN(slen - off, len);
        st = rs_sge_map(c, qp, gid_index, &sge[i],
                        to_mem ? RS_ACCESS_LOCAL_WRITE : 0, &mrs[i]);
        if (st) {
            return st;
        }
        if (mrs[i] && (mrs[i]->flags & RS_MR_F_ODP) &&
            !rs_odp_probe(c, mrs[i] - c->mrs, addr + off, chunk, to_mem)) {
            rs_odp_widen(c, addr + slen);
            return RS_WC_ODP_FAULT;
        }
        len -= chunk;
        off = 0;
    }
    return len ? RS_WC_LOC_LEN_ERR : RS_WC_SUCCESS;
}

/* Whether bytes [off, off + len) of the SGE list can move now. */
uint8_t rs_sge_ready(RSCore *c, const RSQp *qp, uint32_t gid_index,
                     const struct rs_sge *sge, unsigned n, uint64_t off,
                     uint32_t len, bool to_mem)
{
    RSMr *mrs[RS_MAX_SGE];

    return rs_sge_resolve(c, qp, gid_index, sge, n, off, len, to_mem, mrs);
}

/* Copy len bytes at byte offset off of the SGE list to or from buf. */
uint8_t rs_sge_copy(RSCore *c, const RSQp *qp, uint32_t gid_index,
                    const struct rs_sge *sge, unsigned n, uint64_t off,
                    void *buf, uint32_t len, bool to_mem)
{
    RSMr *mrs[RS_MAX_SGE];
    uint8_t *p = buf;
    unsigned i;
    uint8_t st;

    st = rs_sge_resolve(c, qp, gid_index, sge, n, off, len, to_mem, mrs);
    if (st) {
        return st;
    }
    for (i = 0; i < n && i < RS_MAX_SGE && len; i++) {
        uint32_t slen = le32_to_cpu(sge[i].length);
        uint64_t addr = le64_to_cpu(sge[i].addr);
        uint32_t chunk;

        if (off >= slen) {
            off -= slen;
            continue;
        }
        chunk = MIN(slen - off, len);
        if (mrs[i]) {
            st = rs_mr_rw(c, mrs[i], addr + off, p, chunk, to_mem);
        } else {
            st = to_mem ? rs_data_write(c, addr + off, p, chunk) :
                          rs_data_read(c, addr + off, p, chunk);
        }
        if (st) {
            return RS_WC_LOC_PROT_ERR;
        }
        p += chunk;
        len -= chunk;
        off = 0;
    }
    return RS_WC_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/*
 * An MR's page count is checked before its page array is allocated: it
 * must fit in what the stream says all MRs hold (mr_pages_used, checked
 * against max-mr-pages before the MRs) less the pages of the MRs loaded
 * before it.  A stream cannot make the destination allocate more than
 * max-mr-pages page addresses in all.  Only a load counts pages.
 */
static bool rs_mr_npages_valid(void *opaque, int version_id)
{
    RSMr *mr = opaque;
    RSCore *c = mr->core;

    if (mr->npages > c->mr_pages_used - c->mr_pages_loaded) {
        return false;
    }
    c->mr_pages_loaded += mr->npages;
    return true;
}

const VMStateDescription vmstate_rs_mr = {
    .name = "rdma-session/mr",
    .version_id = 2,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSMr),
        VMSTATE_UINT8(tag, RSMr),
        VMSTATE_UINT8(page_shift, RSMr),
        VMSTATE_UINT8(flags, RSMr),
        VMSTATE_UINT16(access, RSMr),
        VMSTATE_UINT32(pd, RSMr),
        VMSTATE_UINT32(gid_index, RSMr),
        VMSTATE_UINT64(iova, RSMr),
        VMSTATE_UINT64(length, RSMr),
        VMSTATE_UINT32(npages, RSMr),
        VMSTATE_VALIDATE("npages within the page budget",
                         rs_mr_npages_valid),
        VMSTATE_VARRAY_UINT32_ALLOC(pages, RSMr, npages, 0,
                                    vmstate_info_uint64, uint64_t),
        VMSTATE_BOOL_V(fast, RSMr, 2),
        VMSTATE_BOOL_V(fr_bound, RSMr, 2),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_mr_mw,
        &vmstate_rs_mr_odp,
        &vmstate_rs_mr_mkl,
        &vmstate_rs_mr_netid,
        NULL
    },
};

/* A valid MR: its PD, GID and page size; a fast-registration MR's binding. */
static bool rs_mr_state_valid(RSCore *c, RSMr *mr)
{
    const RSParams *p = &c->p;

    if (mr->mkl_kind) {
        return RS_REF_OK(c, pds, p->max_pds, mr->pd) &&
               rs_gid_valid(c, mr->gid_index) && rs_mkl_state_valid(c, mr);
    }

    /* A fast-registration MR: a kernel PD's, bound within its slots. */
    if (mr->fast &&
        (mr->npages > RS_MAX_FRMR_PAGES ||
         !RS_REF_OK(c, pds, p->max_pds, mr->pd) ||
         !(c->pds[mr->pd].flags & RS_PD_F_PRIVILEGED) ||
         (mr->fr_bound &&
          (mr->length == 0 || mr->iova + mr->length < mr->iova ||
           mr->page_shift > RS_MR_MAX_PAGE_SHIFT ||
           ((mr->iova + mr->length - 1) >> mr->page_shift) -
           (mr->iova >> mr->page_shift) >= mr->npages)))) {
        return false;
    }
    if (!mr->fast && mr->fr_bound) {
        return false;
    }
    if (mr->flags & RS_MR_F_ODP) {
        return !mr->fast && !mr->npages &&
               !(mr->flags & ~(RS_MR_F_ODP | RS_MR_F_ODP_IMPLICIT)) &&
               mr->page_shift == RS_ODP_PAGE_SHIFT &&
               ((mr->flags & RS_MR_F_ODP_IMPLICIT) ?
                !mr->iova && mr->length == UINT64_MAX :
                mr->length && mr->iova + mr->length >= mr->iova) &&
               RS_REF_OK(c, pds, p->max_pds, mr->pd) &&
               rs_gid_valid(c, mr->gid_index);
    }
    if (mr->flags & RS_MR_F_ODP_IMPLICIT) {
        return false;
    }
    return RS_REF_OK(c, pds, p->max_pds, mr->pd) &&
           rs_gid_valid(c, mr->gid_index) && mr->npages &&
           mr->page_shift >= RS_MR_MIN_PAGE_SHIFT &&
           mr->page_shift <= RS_MR_MAX_PAGE_SHIFT;
}

/* Loading over a live device (loadvm): drop its translation tables. */
static void rs_mkey_pre_load(RSCore *c)
{
    for (uint32_t i = 0; i < c->p.max_mrs; i++) {
        g_free(c->mrs[i].pages);
        c->mrs[i].pages = NULL;
        c->mrs[i].npages = 0;
    }
    c->mr_pages_loaded = 0;
}

/*
 * The MRs' page check (rs_mr_npages_valid) also runs as the state is
 * saved, counting the pages again: start it at 0 for each save, or the
 * second outgoing migration of a QEMU fails its own check and aborts.
 */
static void rs_mkey_pre_save(RSCore *c)
{
    c->mr_pages_loaded = 0;
}

/* Every key slot, and the pages they hold against max-mr-pages. */
static bool rs_mkey_state_valid(RSCore *c)
{
    const RSParams *p = &c->p;
    uint64_t pages = 0;
    uint32_t i;

    for (i = 0; i < p->max_mrs; i++) {
        RSMr *mr = &c->mrs[i];

        if (!mr->valid) {
            if (mr->npages || mr->fast || mr->fr_bound || mr->mkl_kind) {
                return false;
            }
            continue;
        }
        if (mr->mw_type ? mr->mkl_kind != 0 : !rs_mr_state_valid(c, mr)) {
            return false;
        }
        pages += mr->npages + mr->mkl_cap;
    }
    return pages == c->mr_pages_used && pages <= p->max_mr_pages;
}

const RSFeature rs_feature_mkey = {
    .name = "mkey",
    .pre_save = rs_mkey_pre_save,
    .pre_load = rs_mkey_pre_load,
    .validate = rs_mkey_state_valid,
};
