/*
 * rdma-session adapter: memory keys and their translation tables.
 *
 * REG_MR hands the device a page list; the device copies it into its own
 * table (IOVA page -> guest physical page) after checking every entry, so
 * nothing the guest changes later in the list can redirect a key.  Keys
 * live in one table per network identifier (VNI, seed 002): a region is
 * registered through a GID into that GID's VNI, and a key used through a
 * GID of another VNI does not resolve.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rdma-session-core.h"
#include "trace.h"

#define RS_MR_F_KNOWN   (RS_MR_F_PBL_INDIRECT | RS_MR_F_ODP)

RSMr *rs_mkey_lookup(RSCore *c, uint32_t gid_index, uint32_t key)
{
    uint32_t idx = key >> RS_MKEY_INDEX_SHIFT;
    RSMr *mr;

    if (idx == 0 || idx >= c->p.max_mrs) {
        return NULL;
    }
    mr = &c->mrs[idx];
    if (!mr->valid || mr->tag != (key & RS_MKEY_TAG_MASK) ||
        !rs_gid_valid(c, gid_index) ||
        c->gids[mr->gid_index].vni != c->gids[gid_index].vni) {
        return NULL;
    }
    return mr;
}

static uint8_t rs_mr_check_access(uint16_t access)
{
    if (access & ~RS_ACCESS_ALL) {
        return RS_STATUS_BAD_ACCESS;
    }
    /* IBTA 10.6.3.1: remote write or atomic needs local write. */
    if ((access & (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_ATOMIC)) &&
        !(access & RS_ACCESS_LOCAL_WRITE)) {
        return RS_STATUS_BAD_ACCESS;
    }
    return RS_STATUS_OK;
}

/* Read npages entries into pages[], validating each page as guest RAM. */
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
        st = rs_dma_check(c, pages[i], page_size, false);
        if (st) {
            return st;
        }
    }
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
    RSMr *mr;

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
        return RS_STATUS_NOT_SUPPORTED;
    }
    if ((r->flags & ~RS_MR_F_KNOWN) || r->page_shift < RS_MR_MIN_PAGE_SHIFT ||
        r->page_shift > RS_MR_MAX_PAGE_SHIFT) {
        return RS_STATUS_BAD_PARAM;
    }
    if (len == 0 || iova + len < iova ||
        npages != ((iova + len - 1) >> r->page_shift) -
                  (iova >> r->page_shift) + 1) {
        return RS_STATUS_BAD_SIZE;
    }
    if (npages > c->p.max_mr_pages - c->mr_pages_used) {
        return RS_STATUS_NO_RESOURCES;
    }
    idx = RS_ALLOC(c->mrs, c->p.max_mrs, 1);
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

    mr = &c->mrs[idx];
    mr->valid = true;
    mr->tag++;
    mr->page_shift = r->page_shift;
    mr->flags = r->flags;
    mr->access = access;
    mr->pd = pd;
    mr->gid_index = gid;
    mr->iova = iova;
    mr->length = len;
    mr->npages = npages;
    mr->pages = g_steal_pointer(&pages);
    c->mr_pages_used += npages;
    c->pds[pd].refs++;
    c->gids[gid].refs++;
    key = (idx << RS_MKEY_INDEX_SHIFT) | mr->tag;
    trace_rdma_session_mr_reg(key, iova, len, npages, gid);
    cqe->handle = cpu_to_le32(key);
    cqe->result1 = cpu_to_le32(key);
    return RS_STATUS_OK;
}

void rs_mr_free(RSCore *c, uint32_t idx)
{
    RSMr *mr = &c->mrs[idx];

    c->pds[mr->pd].refs--;
    c->gids[mr->gid_index].refs--;
    c->mr_pages_used -= mr->npages;
    g_free(mr->pages);
    mr->pages = NULL;
    mr->npages = 0;
    mr->valid = false;
}

uint8_t rs_cmd_dereg_mr(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe)
{
    uint32_t key = le32_to_cpu(cmd->destroy.handle);
    uint32_t idx = key >> RS_MKEY_INDEX_SHIFT;

    if (idx == 0 || idx >= c->p.max_mrs || !c->mrs[idx].valid ||
        c->mrs[idx].tag != (key & RS_MKEY_TAG_MASK)) {
        return RS_STATUS_BAD_HANDLE;
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
    uint64_t psize = 1ull << mr->page_shift;
    uint8_t *p = buf;

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
        st = write ? rs_dma_write(c, pa, p, n) : rs_dma_read(c, pa, p, n);
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
 * (lkey 0 on a kernel QP, the driver's local_dma_lkey).  The PD must be
 * the QP's, the range inside the MR and the access allowed.
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
    if (lkey == 0 && qp->uar == 0) {
        return rs_dma_check(c, addr, len, access & RS_ACCESS_LOCAL_WRITE) ?
               RS_WC_LOC_PROT_ERR : RS_WC_SUCCESS;
    }
    mr = rs_mkey_lookup(c, gid_index, lkey);
    if (!mr || mr->pd != qp->pd) {
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

/* Copy len bytes at byte offset off of the SGE list to or from buf. */
uint8_t rs_sge_copy(RSCore *c, const RSQp *qp, uint32_t gid_index,
                    const struct rs_sge *sge, unsigned n, uint64_t off,
                    void *buf, uint32_t len, bool to_mem)
{
    uint8_t *p = buf;
    unsigned i;

    for (i = 0; i < n && len; i++) {
        uint32_t slen = le32_to_cpu(sge[i].length);
        uint64_t addr = le64_to_cpu(sge[i].addr);
        uint32_t chunk;
        RSMr *mr;
        uint8_t st;

        if (off >= slen) {
            off -= slen;
            continue;
        }
        chunk = MIN(slen - off, len);
        st = rs_sge_map(c, qp, gid_index, &sge[i],
                        to_mem ? RS_ACCESS_LOCAL_WRITE : 0, &mr);
        if (st) {
            return st;
        }
        if (mr) {
            st = rs_mr_rw(c, mr, addr + off, p, chunk, to_mem);
        } else {
            st = to_mem ? rs_dma_write(c, addr + off, p, chunk) :
                          rs_dma_read(c, addr + off, p, chunk);
        }
        if (st) {
            return RS_WC_LOC_PROT_ERR;
        }
        p += chunk;
        len -= chunk;
        off = 0;
    }
    return len ? RS_WC_LOC_LEN_ERR : RS_WC_SUCCESS;
}
