/*
 * rdma-session adapter: indirect and pattern memory keys.
 *
 * Such a key is a slot of the MR key table whose zero-based address
 * space is made of ranges of other keys.  The entries are copied into
 * device memory once (REG_INDIRECT_MKEY / REG_PATTERN_MKEY, or the
 * REG_INDIRECT / REG_PATTERN work request on a key made empty) and
 * checked for their form only: the keys they name are resolved at every
 * access, so that deregistering or invalidating one makes the accesses
 * through it fail.  An access walks only the entries it touches (the
 * first one found by binary search), down at most RS_MKEY_MAX_NEST
 * levels of nested keys, and moves no byte before every entry it
 * touches passed its checks.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/host-utils.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

#define RS_MKL_RAW_MAX  (RS_MKEY_MAX_ENTRIES * sizeof(struct rs_pattern_entry))

static size_t rs_mkl_esize(uint8_t kind)
{
    return kind == RS_WR_REG_PATTERN ? sizeof(struct rs_pattern_entry) :
                                       sizeof(struct rs_mkey_entry);
}

/* The rights a key made of other keys may have: an MR's, no MW_BIND. */
static bool rs_mkl_access_ok(uint16_t access)
{
    return !(access & RS_ACCESS_MW_BIND) && !rs_mr_check_access(access);
}

/*
 * Lay out n entries (addr, key, len, skip filled in): each entry's
 * offset in a repetition, the bytes of one repetition (*block) and the
 * key's length (*length).  False if an entry is malformed: length 0,
 * the reserved lkey or a key of slot 0, a range past 2^64, or a key
 * longer than 2^64 - 1 bytes.
 */
static bool rs_mkl_layout(uint8_t kind, RSMklEnt *e, uint16_t n,
                          uint32_t repeat, uint64_t *block, uint64_t *length)
{
    uint64_t off = 0;
    uint16_t i;

    if (n == 0 || n > RS_MKEY_MAX_ENTRIES ||
        (kind == RS_WR_REG_PATTERN) != (repeat != 0)) {
        return false;
    }
    for (i = 0; i < n; i++) {
        uint64_t last = e[i].len - 1ull;

        if (!e[i].len || !(e[i].key >> RS_MKEY_INDEX_SHIFT) ||
            (kind != RS_WR_REG_PATTERN && e[i].skip)) {
            return false;
        }
        if (kind == RS_WR_REG_PATTERN) {
            uint64_t lo, hi;

            /* The last byte of its last repetition. */
            mulu64(&lo, &hi, repeat - 1, (uint64_t)e[i].len + e[i].skip);
            if (hi || lo + last < lo) {
                return false;
            }
            last += lo;
        }
        if (e[i].addr + last < e[i].addr) {
            return false;
        }
        e[i].off = off;
        off += e[i].len;
    }
    *block = off;
    if (kind == RS_WR_REG_PATTERN) {
        if (off > UINT64_MAX / repeat) {
            return false;
        }
        off *= repeat;
    }
    *length = off;
    return true;
}

/* Decode n guest entries of kind from raw into e[] and lay them out. */
static bool rs_mkl_parse(uint8_t kind, const uint8_t *raw, uint16_t n,
                         uint32_t repeat, RSMklEnt *e, uint64_t *block,
                         uint64_t *length)
{
    uint16_t i;

    for (i = 0; i < n && n <= RS_MKEY_MAX_ENTRIES; i++) {
        if (kind == RS_WR_REG_PATTERN) {
            struct rs_pattern_entry p;

            memcpy(&p, raw + i * sizeof(p), sizeof(p));
            if (p.rsvd) {
                return false;
            }
            e[i] = (RSMklEnt) {
                .addr = le64_to_cpu(p.addr),
                .key = le32_to_cpu(p.key),
                .len = le32_to_cpu(p.bytes_count),
                .skip = le32_to_cpu(p.bytes_skip),
            };
        } else {
            struct rs_mkey_entry m;

            memcpy(&m, raw + i * sizeof(m), sizeof(m));
            e[i] = (RSMklEnt) {
                .addr = le64_to_cpu(m.addr),
                .key = le32_to_cpu(m.key),
                .len = le32_to_cpu(m.length),
            };
        }
    }
    return rs_mkl_layout(kind, e, n, repeat, block, length);
}

/*
 * REG_INDIRECT_MKEY, REG_PATTERN_MKEY: a key of PD pd in the PD's key
 * table; with RS_MKEY_F_EMPTY a Free one with room for nentries entries
 * that a work request fills.  The entries count against max-mr-pages.
 */
uint8_t rs_cmd_reg_mkey_list(RSCore *c, const struct rs_admin_cmd *cmd,
                             struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_reg_mkey_list *r = &cmd->reg_mkey;
    uint8_t kind = cmd->hdr.opcode == RS_CMD_REG_PATTERN_MKEY ?
                   RS_WR_REG_PATTERN : RS_WR_REG_INDIRECT;
    uint32_t pd = RS_LOOKUP(c->pds, c->p.max_pds, le32_to_cpu(r->pd));
    uint32_t gid = le32_to_cpu(r->gid_index);
    uint16_t n = le16_to_cpu(r->nentries);
    uint16_t access = le16_to_cpu(r->access);
    uint32_t repeat = le32_to_cpu(r->repeat);
    uint32_t flags = le32_to_cpu(r->flags);
    uint64_t list = le64_to_cpu(r->list_addr);
    bool empty = flags & RS_MKEY_F_EMPTY;
    g_autofree RSMklEnt *ents = NULL;
    g_autofree uint8_t *raw = NULL;
    uint64_t block = 0, len = 0;
    uint32_t idx, key;
    uint8_t st;

    if (!pd) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (!rs_gid_valid(c, gid)) {
        return RS_STATUS_BAD_NETID;
    }
    if (!rs_mkl_access_ok(access)) {
        return RS_STATUS_BAD_ACCESS;
    }
    if ((flags & ~RS_MKEY_F_EMPTY) || r->rsvd) {
        return RS_STATUS_BAD_PARAM;
    }
    if (n == 0 || n > RS_MKEY_MAX_ENTRIES) {
        return RS_STATUS_BAD_SIZE;
    }
    if (empty ? list || repeat :
                (kind == RS_WR_REG_PATTERN) != (repeat != 0)) {
        return RS_STATUS_BAD_PARAM;
    }
    if (!empty && (list & 7)) {
        return RS_STATUS_BAD_ALIGN;
    }
    idx = rs_mr_slot(c, n);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    ents = g_try_new0(RSMklEnt, n);
    if (!ents) {
        return RS_STATUS_NO_RESOURCES;
    }
    if (!empty) {
        raw = g_malloc(n * rs_mkl_esize(kind));
        st = rs_dma_read(c, list, raw, n * rs_mkl_esize(kind));
        if (st) {
            return st;
        }
        if (!rs_mkl_parse(kind, raw, n, repeat, ents, &block, &len)) {
            return RS_STATUS_BAD_PARAM;
        }
    }
    key = rs_mr_install(c, idx, (RSMr) {
        .fast = empty,
        .access = empty ? 0 : access,
        .pd = pd,
        .gid_index = gid,
        .length = len,
        .mkl_kind = kind,
        .mkl_cap = n,
        .mkl_n = empty ? 0 : n,
        .mkl_repeat = repeat,
        .mkl_block = block,
        .mkl = g_steal_pointer(&ents),
    });
    c->mr_pages_used += n;
    trace_rdma_session_mkl_reg(key, kind, n, repeat, len, gid, empty);
    cqe->handle = cpu_to_le32(rs_mkey_handle(c, &c->mrs[idx]));
    cqe->result1 = cpu_to_le32(key);
    return RS_STATUS_OK;
}

/* DEREG_MR of such a key: its entries and their budget. */
static void rs_mkl_free(RSCore *c, RSMr *mr)
{
    c->mr_pages_used -= mr->mkl_cap;
    g_free(mr->mkl);
    mr->mkl = NULL;
    mr->mkl_kind = 0;
    mr->mkl_cap = 0;
    mr->mkl_n = 0;
    mr->mkl_repeat = 0;
    mr->mkl_block = 0;
}

/*
 * The malformed part of a REG_INDIRECT / REG_PATTERN work request, or
 * NULL: it completes with RS_WC_LOC_QP_OP_ERR.
 */
static const char *rs_mkl_wr_form(const struct rs_send_wqe_reg_mkey *f,
                                  uint32_t stride)
{
    uint16_t n = le16_to_cpu(f->nentries);
    uint32_t repeat = le32_to_cpu(f->repeat);
    unsigned i;

    if ((f->flags & RS_WQE_F_INLINE) || f->num_sge || f->rsvd0) {
        return "inline, SGEs or reserved bits";
    }
    for (i = 0; i < ARRAY_SIZE(f->rsvd1); i++) {
        if (f->rsvd1[i]) {
            return "reserved bits";
        }
    }
    if (n == 0 || n > RS_MKEY_MAX_ENTRIES ||
        n > (stride - sizeof(*f)) / rs_mkl_esize(f->opcode)) {
        return "entries beyond the WQE";
    }
    if ((f->opcode == RS_WR_REG_PATTERN) != (repeat != 0)) {
        return "repeat";
    }
    if (!rs_mkl_access_ok(le16_to_cpu(f->access))) {
        return "access";
    }
    return NULL;
}

/*
 * The key a REG_INDIRECT / REG_PATTERN work request fills: made with
 * RS_MKEY_F_EMPTY, of its kind, Free, of the QP's PD, found in the PD's
 * key table.  Else NULL: RS_WC_LOC_PROT_ERR.
 */
static RSMr *rs_mkl_wr_slot(RSCore *c, const RSQp *qp, int gid_index,
                            const struct rs_send_wqe_reg_mkey *f,
                            const char **why)
{
    uint32_t idx = rs_netid_slot(c, rs_key_netid(c, qp, -1),
                                 le32_to_cpu(f->key));
    RSMr *mr;

    *why = "no such key";
    if (idx == 0 || !c->mrs[idx].valid) {
        return NULL;
    }
    mr = &c->mrs[idx];
    *why = "not an empty key of this kind";
    if (mr->mkl_kind != f->opcode || !mr->fast) {
        return NULL;
    }
    *why = "key not free";
    if (mr->fr_bound) {
        return NULL;
    }
    *why = "key of another PD";
    if (mr->pd != qp->pd) {
        return NULL;
    }
    *why = "more entries than the key has room for";
    if (le16_to_cpu(f->nentries) > mr->mkl_cap) {
        return NULL;
    }
    return mr;
}

/*
 * RS_WR_REG_INDIRECT / RS_WR_REG_PATTERN: fill the Free key with the
 * entries that follow the control segment in the WQE slot at sq_ci (read
 * once, here), the access, repeat and the tag of key: Free -> Valid.
 */
uint8_t rs_mkl_wr(RSCore *c, const RSQp *qp, int gid_index,
                  const struct rs_send_wqe_ctrl *w)
{
    uint32_t stride = rs_sq_stride(qp->max_send_sge, qp->max_inline);
    uint64_t addr = qp->sq_addr +
        (uint64_t)(qp->req.sq_ci & ((1u << qp->sq_log) - 1)) * stride;
    struct rs_send_wqe_reg_mkey f;
    uint8_t raw[RS_MKL_RAW_MAX];
    const char *why;
    uint8_t st = RS_WC_LOC_QP_OP_ERR;
    uint64_t block, len;
    uint16_t n;
    RSMr *mr;

    QEMU_BUILD_BUG_ON(sizeof(f) != sizeof(*w));
    memcpy(&f, w, sizeof(f));
    n = le16_to_cpu(f.nentries);
    why = rs_mkl_wr_form(&f, stride);
    if (why) {
        goto fail;
    }
    mr = rs_mkl_wr_slot(c, qp, gid_index, &f, &why);
    if (!mr) {
        st = RS_WC_LOC_PROT_ERR;
        goto fail;
    }
    why = "entries unreadable";
    if (rs_dma_read(c, addr + sizeof(f), raw, n * rs_mkl_esize(f.opcode))) {
        goto fail;
    }
    /* Free: no access reaches the entries while they are rewritten. */
    mr->mkl_n = 0;
    why = "malformed entry";
    if (!rs_mkl_parse(f.opcode, raw, n, le32_to_cpu(f.repeat), mr->mkl,
                      &block, &len)) {
        goto fail;
    }
    mr->mkl_n = n;
    mr->mkl_repeat = le32_to_cpu(f.repeat);
    mr->mkl_block = block;
    mr->length = len;
    mr->access = le16_to_cpu(f.access);
    mr->tag = le32_to_cpu(f.key) & RS_MKEY_TAG_MASK;
    mr->fr_bound = true;
    trace_rdma_session_mkl_fill(le32_to_cpu(f.key), f.opcode, n,
                                mr->mkl_repeat, len);
    return RS_WC_SUCCESS;

fail:
    RS_GUEST_ERR(rdma_session_err_mkl_wr, "opcode 0x%x key 0x%x: %s",
                 f.opcode, le32_to_cpu(f.key), why);
    return st;
}

/* The entry (*i), repetition (*rep) and offset in it (*in) of off. */
static void rs_mkl_find(const RSMr *mr, uint64_t off, uint64_t *rep,
                        uint32_t *i, uint64_t *in)
{
    uint32_t lo = 0, hi = mr->mkl_n - 1;

    *rep = 0;
    if (mr->mkl_kind == RS_WR_REG_PATTERN) {
        *rep = off / mr->mkl_block;
        off %= mr->mkl_block;
    }
    while (lo < hi) {
        uint32_t mid = (lo + hi + 1) / 2;

        if (mr->mkl[mid].off <= off) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    *i = lo;
    *in = off - mr->mkl[lo].off;
}

static uint8_t rs_mkl_refuse(RSCore *c, const RSMr *mr, uint64_t va,
                             uint32_t len, const char *why)
{
    trace_rdma_session_mkl_refused(rs_mkey_key(mr), va, len, why);
    return RS_STATUS_MKEY_PROT;
}

/*
 * Bytes [va, va + len) of key mr, which is depth levels below the key
 * the access named: check every entry they touch (p NULL) or move them
 * (p the buffer).  Each entry's key must resolve in mr's key table, be
 * of mr's PD, not be a window or an ODP MR, grant local write if the
 * access writes, and cover the range; single: the range must lie in one
 * entry at every level (atomics).  The work is the entries touched.
 */
static uint8_t rs_mkl_walk(RSCore *c, const RSMr *mr, uint64_t va,
                           uint8_t *p, uint32_t len, bool write,
                           unsigned depth, bool single)
{
    uint64_t rep, in;
    uint32_t i;

    if (depth > RS_MKEY_MAX_NEST) {
        return rs_mkl_refuse(c, mr, va, len, "nested too deep");
    }
    if (!mr->mkl_n || va >= mr->length || len > mr->length - va) {
        return rs_mkl_refuse(c, mr, va, len, "beyond the key");
    }
    rs_mkl_find(mr, va, &rep, &i, &in);
    while (len) {
        const RSMklEnt *e = &mr->mkl[i];
        uint32_t n = MIN(len, e->len - in);
        uint64_t ea = e->addr + rep * ((uint64_t)e->len + e->skip) + in;
        const RSMr *em;
        uint8_t st = RS_STATUS_OK;

        if (single && n < len) {
            return rs_mkl_refuse(c, mr, va, len, "atomic across entries");
        }
        em = rs_mkey_lookup_netid(c, mr->netid, e->key);
        if (!em || em->mw_type || em->pd != mr->pd) {
            return rs_mkl_refuse(c, mr, va, len, "entry key");
        }
        if (em->flags & RS_MR_F_ODP) {
            return rs_mkl_refuse(c, mr, va, len, "entry key is ODP");
        }
        if (write && !(em->access & RS_ACCESS_LOCAL_WRITE)) {
            return rs_mkl_refuse(c, mr, va, len, "entry without local write");
        }
        if (ea < em->iova || ea + n < ea || ea + n > em->iova + em->length) {
            return rs_mkl_refuse(c, mr, va, len, "range beyond the entry key");
        }
        if (em->mkl_kind) {
            st = rs_mkl_walk(c, em, ea, p, n, write, depth + 1, single);
        } else if (p) {
            st = rs_mr_rw(c, em, ea, p, n, write);
        }
        if (st) {
            return st;
        }
        if (p) {
            p += n;
        }
        len -= n;
        va += n;
        in = 0;
        if (++i == mr->mkl_n) {
            i = 0;
            rep++;
        }
    }
    return RS_STATUS_OK;
}

/*
 * rs_mr_rw() of an indirect or pattern key: every entry checked before
 * any byte moves, so a refused access (RS_STATUS_MKEY_PROT) leaves
 * memory as it was.
 */
static uint8_t rs_mkl_rw(RSCore *c, const RSMr *mr, uint64_t va,
                         void *buf, uint32_t len, bool write)
{
    uint8_t st = rs_mkl_walk(c, mr, va, NULL, len, write, 0, false);

    return st ? st : rs_mkl_walk(c, mr, va, buf, len, write, 0, false);
}

/* An atomic's bytes: within one entry if mr is such a key. */
bool rs_mkl_single(RSCore *c, const RSMr *mr, uint64_t va, uint32_t len)
{
    return !mr->mkl_kind ||
           rs_mkl_walk(c, mr, va, NULL, len, true, 0, true) == RS_STATUS_OK;
}

/*
 * Incoming migration: a key's kind, room, rights and entries (the first
 * mkl_n, laid out again here); a Valid one's length as its entries give.
 * The caller checked its PD and GID.
 */
bool rs_mkl_state_valid(RSCore *c, RSMr *mr)
{
    uint64_t block = 0, len = 0;

    if ((mr->mkl_kind != RS_WR_REG_INDIRECT &&
         mr->mkl_kind != RS_WR_REG_PATTERN) ||
        !mr->mkl || mr->mkl_cap < 1 || mr->mkl_cap > RS_MKEY_MAX_ENTRIES ||
        mr->mkl_n > mr->mkl_cap || mr->npages || mr->flags || mr->iova ||
        !rs_mkl_access_ok(mr->access)) {
        return false;
    }
    if (mr->mkl_n &&
        !rs_mkl_layout(mr->mkl_kind, mr->mkl, mr->mkl_n, mr->mkl_repeat,
                       &block, &len)) {
        return false;
    }
    mr->mkl_block = block;
    /* Valid (made with a list, or filled): entries and length agree. */
    if (!mr->fast || mr->fr_bound) {
        return mr->mkl_n && len == mr->length;
    }
    return true;
}

const RSMkeyOps rs_mkey_list_ops = {
    .name = "mkey-list",
    .rw = rs_mkl_rw,
    .release = rs_mkl_free,
};

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/*
 * An indirect or pattern key (ABI 1.5): kind, room, entries in use and
 * repeat, then all mkl_cap entries; the room is checked (and counted
 * against the page budget) before the entries are allocated, the rest
 * in post_load (rs_mkl_state_valid).
 */
static bool rs_mr_mkl_needed(void *opaque)
{
    RSMr *mr = opaque;

    return mr->valid && mr->mkl_kind;
}

static bool rs_mr_mkl_room_valid(void *opaque, int version_id)
{
    RSMr *mr = opaque;
    RSCore *c = mr->core;

    if (!mr->valid || (mr->mkl_kind != RS_WR_REG_INDIRECT &&
                       mr->mkl_kind != RS_WR_REG_PATTERN) ||
        mr->mkl_cap < 1 || mr->mkl_cap > RS_MKEY_MAX_ENTRIES ||
        mr->mkl_n > mr->mkl_cap ||
        mr->mkl_cap > c->mr_pages_used - c->mr_pages_loaded) {
        return false;
    }
    c->mr_pages_loaded += mr->mkl_cap;
    return true;
}

static const VMStateDescription vmstate_rs_mkl_ent = {
    .name = "rdma-session/mr/mkey-entry",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(addr, RSMklEnt),
        VMSTATE_UINT32(key, RSMklEnt),
        VMSTATE_UINT32(len, RSMklEnt),
        VMSTATE_UINT32(skip, RSMklEnt),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_rs_mr_mkl = {
    .name = "rdma-session/mr/mkey-list",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mr_mkl_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(mkl_kind, RSMr),
        VMSTATE_UINT16(mkl_cap, RSMr),
        VMSTATE_UINT16(mkl_n, RSMr),
        VMSTATE_UINT32(mkl_repeat, RSMr),
        VMSTATE_VALIDATE("room within the page budget", rs_mr_mkl_room_valid),
        {
            /* VMSTATE_STRUCT_VARRAY_ALLOC with a uint16_t count */
            .name = "mkl",
            .version_id = 1,
            .vmsd = &vmstate_rs_mkl_ent,
            .num_offset = vmstate_offset_value(RSMr, mkl_cap, uint16_t),
            .size = sizeof(RSMklEnt),
            .flags = VMS_STRUCT | VMS_VARRAY_UINT16 | VMS_ALLOC | VMS_POINTER,
            .offset = vmstate_offset_pointer(RSMr, mkl, RSMklEnt),
        },
        VMSTATE_END_OF_LIST()
    },
};

/* A slot without its subsection holds no indirect or pattern key. */
static void rs_mkl_pre_load(RSCore *c)
{
    for (uint32_t i = 0; i < c->p.max_mrs; i++) {
        g_free(c->mrs[i].mkl);
        c->mrs[i].mkl = NULL;
        c->mrs[i].mkl_kind = 0;
        c->mrs[i].mkl_cap = 0;
        c->mrs[i].mkl_n = 0;
        c->mrs[i].mkl_repeat = 0;
        c->mrs[i].mkl_block = 0;
    }
}

/* Its keys are checked with the MRs (rs_mkl_state_valid). */
const RSFeature rs_feature_mkey_list = {
    .name = "mkey-list",
    .pre_load = rs_mkl_pre_load,
};
