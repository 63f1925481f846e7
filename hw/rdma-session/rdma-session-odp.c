/*
 * rdma-session adapter: on-demand paging (ODP).
 *
 * An ODP MR has a key, a PD, rights and a range but no page list.  The
 * translations of all ODP MRs share one table of odp-pages entries in
 * sets of RS_ODP_WAYS (a set-associative cache: a full set gives up an
 * entry, and an access to a page the device forgot faults again), so the
 * state the device holds for any number of ODP MRs, an implicit one
 * covering the whole address space included, is bounded and migrates as
 * one array.
 *
 * An access to a page without a translation (or a write to a read-only
 * one) moves no data: the QP side that made it records the fault in an
 * RSOdpWait, the driver gets RS_EV_ODP_PAGE_FAULT, and the side waits
 * until ODP_RESOLVE installs the page.  A responder meanwhile tells the
 * peer's requester to pause (rdma-session-resp.c), a requester stops its
 * send queue.  odp_timer raises the event again every 100 ms and fails
 * the wait after odp-fault-timeout.  ODP_INVALIDATE drops translations
 * and counts per MR, so that a resolve built before it is refused.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

#define RS_ODP_PAGE         (1ull << RS_ODP_PAGE_SHIFT)
#define RS_ODP_PAGE_FLAGS   (RS_ODP_PAGE_READ | RS_ODP_PAGE_WRITE)

static uint32_t rs_odp_set(RSCore *c, uint32_t mr, uint64_t vpn)
{
    uint32_t nsets = c->p.odp_pages / RS_ODP_WAYS;

    /* Consecutive pages of an MR fall into consecutive sets. */
    return (uint32_t)(vpn + (uint64_t)mr * 0x9e3779b1u) & (nsets - 1);
}

static RSOdpPage *rs_odp_find(RSCore *c, uint32_t mr, uint64_t vpn)
{
    RSOdpPage *set = &c->odp[rs_odp_set(c, mr, vpn) * RS_ODP_WAYS];
    unsigned i;

    for (i = 0; i < RS_ODP_WAYS; i++) {
        if (set[i].mr == mr && set[i].vpn == vpn) {
            return &set[i];
        }
    }
    return NULL;
}

static void rs_odp_install(RSCore *c, uint32_t mr, uint64_t vpn, uint64_t pa)
{
    RSOdpPage *set = &c->odp[rs_odp_set(c, mr, vpn) * RS_ODP_WAYS];
    RSOdpPage *e = rs_odp_find(c, mr, vpn);
    unsigned i;

    for (i = 0; !e && i < RS_ODP_WAYS; i++) {
        if (!set[i].mr) {
            e = &set[i];
            c->odp_used++;
        }
    }
    if (!e) {
        e = &set[c->odp_victim++ % RS_ODP_WAYS];
        trace_rdma_session_odp_evict(e->mr, e->vpn << RS_ODP_PAGE_SHIFT);
    }
    e->mr = mr;
    e->vpn = vpn;
    e->pa = pa;
}

static void rs_odp_drop(RSCore *c, RSOdpPage *e)
{
    memset(e, 0, sizeof(*e));
    c->odp_used--;
}

/* Drop MR mr's translations of the pages [first, last]. */
static void rs_odp_drop_range(RSCore *c, uint32_t mr, uint64_t first,
                              uint64_t last)
{
    uint64_t vpn;
    uint32_t i;

    /* Bounded by the table either way. */
    if (last - first >= c->p.odp_pages / RS_ODP_WAYS) {
        for (i = 0; i < c->p.odp_pages; i++) {
            if (c->odp[i].mr == mr && c->odp[i].vpn >= first &&
                c->odp[i].vpn <= last) {
                rs_odp_drop(c, &c->odp[i]);
            }
        }
        return;
    }
    for (vpn = first; ; vpn++) {
        RSOdpPage *e = rs_odp_find(c, mr, vpn);

        if (e) {
            rs_odp_drop(c, e);
        }
        if (vpn == last) {
            break;
        }
    }
}

static uint32_t rs_odp_key(RSCore *c, uint32_t idx)
{
    return (idx << RS_MKEY_INDEX_SHIFT) | c->mrs[idx].tag;
}

/* The ODP MR an lkey names, 0 if none. */
static uint32_t rs_odp_lookup_key(RSCore *c, uint32_t key)
{
    uint32_t idx = key >> RS_MKEY_INDEX_SHIFT;
    RSMr *mr;

    if (idx == 0 || idx >= c->p.max_mrs) {
        return 0;
    }
    mr = &c->mrs[idx];
    if (!mr->valid || mr->mw_type || !(mr->flags & RS_MR_F_ODP) ||
        mr->tag != (key & RS_MKEY_TAG_MASK)) {
        return 0;
    }
    return idx;
}

/*
 * REG_MR with RS_MR_F_ODP, after the checks every REG_MR makes: an MR
 * with no translation yet, over [iova, iova + length) or (implicit) all
 * of the space.
 */
uint8_t rs_odp_reg_mr(RSCore *c, const struct rs_cmd_reg_mr *r,
                      uint32_t pd, uint32_t gid, uint16_t access,
                      struct rs_admin_cqe *cqe)
{
    bool implicit = r->flags & RS_MR_F_ODP_IMPLICIT;
    uint64_t iova = le64_to_cpu(r->iova);
    uint64_t len = le64_to_cpu(r->length);
    uint32_t idx, key;

    if (!c->p.odp) {
        return RS_STATUS_NOT_SUPPORTED;
    }
    if (r->flags & ~(RS_MR_F_ODP | RS_MR_F_ODP_IMPLICIT) ||
        r->page_shift != RS_ODP_PAGE_SHIFT || r->npages || r->pbl_addr ||
        (implicit && (iova || len))) {
        return RS_STATUS_BAD_PARAM;
    }
    if (implicit) {
        len = UINT64_MAX;
    } else if (len == 0 || iova + len < iova) {
        return RS_STATUS_BAD_SIZE;
    }
    idx = RS_ALLOC(c->mrs, c->p.max_mrs, 1);
    if (!idx) {
        return RS_STATUS_NO_RESOURCES;
    }
    key = rs_mr_install(c, idx, (RSMr) {
        .page_shift = RS_ODP_PAGE_SHIFT,
        .flags = r->flags,
        .access = access,
        .pd = pd,
        .gid_index = gid,
        .iova = iova,
        .length = len,
    });
    trace_rdma_session_odp_reg(key, iova, len, implicit);
    cqe->handle = cpu_to_le32(rs_mkey_handle(c, &c->mrs[idx]));
    cqe->result1 = cpu_to_le32(key);
    return RS_STATUS_OK;
}

/* Note a fault at va for an access of len bytes from it. */
static void rs_odp_note(RSCore *c, uint32_t idx, uint64_t va, uint64_t len,
                        bool write)
{
    uint64_t in = va & (RS_ODP_PAGE - 1);

    c->odp_fault = (RSOdpWait) {
        .mr = idx,
        .va = va - in,
        .npages = MIN(DIV_ROUND_UP(in + MAX(len, 1), RS_ODP_PAGE),
                      RS_ODP_RESOLVE_MAX_PAGES),
        .write = write,
    };
}

/*
 * Data path: move len bytes between buf and ODP MR idx at va (the caller
 * checked the bounds).  RS_STATUS_ODP_FAULT at the first page without the
 * translation the access needs; the pages before it were moved.
 */
static uint8_t rs_odp_rw(RSCore *c, uint32_t idx, uint64_t va,
                         void *buf, uint32_t len, bool write)
{
    uint8_t *p = buf;

    while (len) {
        uint64_t in = va & (RS_ODP_PAGE - 1);
        uint32_t n = MIN((uint64_t)len, RS_ODP_PAGE - in);
        RSOdpPage *e = rs_odp_find(c, idx, va >> RS_ODP_PAGE_SHIFT);
        uint64_t pa;
        uint8_t st;

        if (!e || (write && !(e->pa & RS_ODP_PAGE_WRITE))) {
            rs_odp_note(c, idx, va, len, write);
            return RS_STATUS_ODP_FAULT;
        }
        pa = (e->pa & ~(RS_ODP_PAGE - 1)) + in;
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
 * Whether every page of [va, va + len) of ODP MR idx (at most the first
 * RS_ODP_RESOLVE_MAX_PAGES) has the translation the access needs; if
 * not, c->odp_fault names the first one that lacks it.
 */
bool rs_odp_probe(RSCore *c, uint32_t idx, uint64_t va, uint64_t len,
                  bool write)
{
    uint64_t vpn = va >> RS_ODP_PAGE_SHIFT;
    uint64_t end, left;
    unsigned n;

    if (!len) {
        return true;
    }
    end = va + len - 1 < va ? UINT64_MAX : va + len - 1;
    left = (end >> RS_ODP_PAGE_SHIFT) - vpn + 1;
    for (n = 0; n < RS_ODP_RESOLVE_MAX_PAGES && n < left; n++, vpn++) {
        RSOdpPage *e = rs_odp_find(c, idx, vpn);

        if (!e || (write && !(e->pa & RS_ODP_PAGE_WRITE))) {
            uint64_t at = vpn << RS_ODP_PAGE_SHIFT;

            rs_odp_note(c, idx, MAX(at, va), end - MAX(at, va) + 1, write);
            return false;
        }
    }
    return true;
}

/*
 * The fault rs_odp_rw() noted asks for the pages up to end (exclusive:
 * the end of the SGE or of the WRITE), at most RS_ODP_RESOLVE_MAX_PAGES,
 * so that one resolve serves the whole access.
 */
void rs_odp_widen(RSCore *c, uint64_t end)
{
    uint64_t n;

    if (end <= c->odp_fault.va) {
        return;
    }
    n = ((end - 1) >> RS_ODP_PAGE_SHIFT) -
        (c->odp_fault.va >> RS_ODP_PAGE_SHIFT) + 1;
    if (n > c->odp_fault.npages) {
        c->odp_fault.npages = MIN(n, RS_ODP_RESOLVE_MAX_PAGES);
    }
}

static void rs_odp_raise(RSCore *c, const RSOdpWait *w)
{
    uint32_t key = rs_odp_key(c, w->mr);

    c->stats.odp_faults++;
    trace_rdma_session_odp_fault(key, w->va, w->npages, w->write);
    rs_core_raise_event_info(c, RS_EV_ODP_PAGE_FAULT,
                             w->write ? RS_EQE_ODP_WRITE : 0, w->npages,
                             key, w->va);
}

/*
 * Side w of QP qpn meets c->odp_fault (kind, at psn): it waits for it.
 * A new fault raises the event; the one the side already waits for does
 * not.  True if that wait failed: the caller fails the access.
 */
bool rs_odp_wait(RSCore *c, uint32_t qpn, RSOdpWait *w, uint8_t kind,
                 uint32_t psn)
{
    const RSOdpWait *f = &c->odp_fault;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (w->mr == f->mr && w->va == f->va && w->kind == kind &&
        (w->write || !f->write)) {
        w->psn = psn;
        return w->failed;
    }
    *w = *f;
    w->kind = kind;
    w->psn = psn;
    w->failed = false;
    w->deadline = now + (int64_t)c->p.odp_fault_timeout * SCALE_MS;
    w->repost = now + RS_ODP_REPOST_NS;
    w->start = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    trace_rdma_session_odp_wait(qpn, kind, psn);
    rs_odp_raise(c, w);
    timer_mod_anticipate(c->odp_timer, w->repost);
    return false;
}

/*
 * An unreliable receive (UD, UC) met c->odp_fault: the packet is dropped,
 * nothing waits.  What a peer can make the device raise this way is
 * bounded whatever pages its packets name: a page raised in the last
 * RS_ODP_REPOST_NS (one of the last RS_ODP_FF_PAGES raised) is not raised
 * again, and at most RS_ODP_FF_EVENTS events are raised per period of
 * RS_ODP_REPOST_NS (the next period starts with the first fault after
 * it).  A fault the limit skips comes again with the next packet.
 */
void rs_odp_drop_fault(RSCore *c)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint32_t mr = c->odp_fault.mr;
    uint64_t va = c->odp_fault.va;
    unsigned i;

    for (i = 0; i < RS_ODP_FF_PAGES; i++) {
        if (c->odp_ff[i].mr == mr && c->odp_ff[i].va == va &&
            now - c->odp_ff[i].time < RS_ODP_REPOST_NS) {
            return;
        }
    }
    if (now - c->odp_ff_period >= RS_ODP_REPOST_NS || !c->odp_ff_events) {
        c->odp_ff_period = now;
        c->odp_ff_events = 0;
    }
    if (c->odp_ff_events >= RS_ODP_FF_EVENTS) {
        trace_rdma_session_odp_fault_limited(rs_odp_key(c, mr), va);
        return;
    }
    c->odp_ff_events++;
    i = c->odp_ff_next++ % RS_ODP_FF_PAGES;
    c->odp_ff[i].mr = mr;
    c->odp_ff[i].va = va;
    c->odp_ff[i].time = now;
    rs_odp_raise(c, &c->odp_fault);
}

void rs_odp_qp_clear(RSCore *c, RSQp *qp)
{
    memset(&qp->odp.req, 0, sizeof(qp->odp.req));
    memset(&qp->odp.resp, 0, sizeof(qp->odp.resp));
    qp->odp.paused = false;
    qp->odp.pause_since = 0;
}

/* The wait w of QP qpn fails (timeout, or resolved with F_FAIL). */
static void rs_odp_fail(RSCore *c, uint32_t qpn, RSQp *qp, RSOdpWait *w)
{
    c->stats.odp_fault_fails++;
    trace_rdma_session_odp_fail(qpn, w->kind, rs_odp_key(c, w->mr), w->va);
    switch (w->kind) {
    case RS_ODP_WAIT_REQ:
        /* The requester meets the fault again and fails the WQE. */
        w->failed = true;
        c->engine->kick(c);
        break;
    case RS_ODP_WAIT_LANDING:
        if (rs_sq_started(qp, qp->comp.sq_comp)) {
            rs_sq_complete(c, qpn, RS_WC_LOC_PROT_ERR, 0);
        }
        rs_qp_to_err(c, qpn);
        break;
    default:
        c->engine->odp_fail(c, qpn, qp);
        break;
    }
}

/* Side w of QP qpn: its page is there now. */
static void rs_odp_wake(RSCore *c, uint32_t qpn, RSQp *qp, RSOdpWait *w)
{
    uint8_t kind = w->kind;
    uint32_t psn = w->psn;

    trace_rdma_session_odp_resume(qpn, kind, psn,
        (qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - w->start) / SCALE_US);
    memset(w, 0, sizeof(*w));
    switch (kind) {
    case RS_ODP_WAIT_REQ:
        c->engine->kick(c);
        break;
    case RS_ODP_WAIT_LANDING:
        /* Ask for the response again. */
        c->engine->rewind(c, qpn);
        break;
    case RS_ODP_WAIT_RESP:
        c->engine->odp_resume(c, qpn, qp, psn);
        break;
    default:
        qemu_bh_schedule(c->resp_bh);
        break;
    }
}

/* DEREG_MR: the sides that wait on MR mr try again and find it gone. */
static void rs_odp_qp_unwait(RSCore *c, uint32_t mr)
{
    uint32_t qpn;

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];

        if (qp->valid && qp->odp.req.mr == mr) {
            rs_odp_wake(c, qpn, qp, &qp->odp.req);
        }
        if (qp->valid && qp->odp.resp.mr == mr) {
            rs_odp_wake(c, qpn, qp, &qp->odp.resp);
        }
    }
}

/* DEREG_MR of ODP MR idx: its translations and waits go. */
static void rs_odp_mr_free(RSCore *c, uint32_t idx)
{
    uint32_t i;

    for (i = 0; c->odp_used && i < c->p.odp_pages; i++) {
        if (c->odp[i].mr == idx) {
            rs_odp_drop(c, &c->odp[i]);
        }
    }
    rs_odp_qp_unwait(c, idx);
}

static bool rs_odp_waits_on(const RSOdpWait *w, uint32_t mr, uint64_t first,
                            uint64_t last)
{
    uint64_t vpn = w->va >> RS_ODP_PAGE_SHIFT;

    return w->mr == mr && !w->failed && vpn >= first && vpn <= last;
}

/* After a resolve of MR mr's pages [first, last]. */
static void rs_odp_resolved(RSCore *c, uint32_t mr, uint64_t first,
                            uint64_t last, bool fail)
{
    uint32_t qpn;

    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];
        RSOdpWait *side[2] = { &qp->odp.req, &qp->odp.resp };
        unsigned i;

        for (i = 0; qp->valid && i < ARRAY_SIZE(side); i++) {
            RSOdpWait *w = side[i];

            if (!rs_odp_waits_on(w, mr, first, last)) {
                continue;
            }
            if (fail) {
                rs_odp_fail(c, qpn, qp, w);
            } else if (rs_odp_probe(c, mr, w->va, RS_ODP_PAGE, w->write)) {
                rs_odp_wake(c, qpn, qp, w);
            }
        }
    }
}

uint8_t rs_cmd_odp_resolve(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_odp_resolve *r = &cmd->odp_resolve;
    uint32_t idx = rs_odp_lookup_key(c, le32_to_cpu(r->key));
    uint32_t flags = le32_to_cpu(r->flags);
    uint32_t npages = le32_to_cpu(r->npages);
    uint64_t va = le64_to_cpu(r->va);
    uint64_t pbl = le64_to_cpu(r->pbl_addr);
    g_autofree uint64_t *pages = NULL;
    uint64_t first, last, vpn;
    RSMr *mr;
    uint32_t i, n = 0;

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    mr = &c->mrs[idx];
    if (flags & ~RS_ODP_RESOLVE_F_FAIL) {
        return RS_STATUS_BAD_PARAM;
    }
    if (va & (RS_ODP_PAGE - 1)) {
        return RS_STATUS_BAD_ALIGN;
    }
    vpn = va >> RS_ODP_PAGE_SHIFT;
    first = mr->iova >> RS_ODP_PAGE_SHIFT;
    last = (mr->iova + mr->length - 1) >> RS_ODP_PAGE_SHIFT;
    if (npages == 0 || npages > RS_ODP_RESOLVE_MAX_PAGES ||
        vpn < first || vpn > last || npages - 1 > last - vpn) {
        return RS_STATUS_BAD_SIZE;
    }
    if (le32_to_cpu(r->seq) != mr->odp_seq) {
        trace_rdma_session_odp_stale(le32_to_cpu(r->key), le32_to_cpu(r->seq),
                                     mr->odp_seq);
        return RS_STATUS_STALE;
    }
    if (flags & RS_ODP_RESOLVE_F_FAIL) {
        if (pbl) {
            return RS_STATUS_BAD_PARAM;
        }
        rs_odp_resolved(c, idx, vpn, vpn + npages - 1, true);
        return RS_STATUS_OK;
    }
    if (pbl & 7) {
        return RS_STATUS_BAD_ALIGN;
    }
    if (!pbl) {
        return RS_STATUS_BAD_ADDR;
    }
    pages = g_new(uint64_t, npages);
    if (rs_dma_read(c, pbl, pages, (uint64_t)npages * sizeof(*pages))) {
        return RS_STATUS_BAD_ADDR;
    }
    /* Every entry is checked before any is installed. */
    for (i = 0; i < npages; i++) {
        uint64_t e = pages[i] = le64_to_cpu(pages[i]);

        if (!e) {
            continue;
        }
        if ((e & (RS_ODP_PAGE - 1) & ~RS_ODP_PAGE_FLAGS) ||
            !(e & RS_ODP_PAGE_READ) ||
            rs_dma_check(c, e & ~(RS_ODP_PAGE - 1), RS_ODP_PAGE,
                         e & RS_ODP_PAGE_WRITE)) {
            return RS_STATUS_BAD_ADDR;
        }
    }
    for (i = 0; i < npages; i++) {
        if (pages[i]) {
            rs_odp_install(c, idx, vpn + i, pages[i]);
            n++;
        }
    }
    c->stats.odp_resolved_pages += n;
    trace_rdma_session_odp_resolve(le32_to_cpu(r->key), va, npages, n);
    rs_odp_resolved(c, idx, vpn, vpn + npages - 1, false);
    return RS_STATUS_OK;
}

uint8_t rs_cmd_odp_invalidate(RSCore *c, const struct rs_admin_cmd *cmd,
                              struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_odp_invalidate *r = &cmd->odp_invalidate;
    uint32_t idx = rs_odp_lookup_key(c, le32_to_cpu(r->key));
    uint64_t va = le64_to_cpu(r->va);
    uint64_t len = le64_to_cpu(r->length);
    RSMr *mr;

    if (!idx) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (r->rsvd) {
        return RS_STATUS_BAD_PARAM;
    }
    if (len == 0 || va + len < va) {
        return RS_STATUS_BAD_SIZE;
    }
    mr = &c->mrs[idx];
    rs_odp_drop_range(c, idx, va >> RS_ODP_PAGE_SHIFT,
                      (va + len - 1) >> RS_ODP_PAGE_SHIFT);
    mr->odp_seq++;
    c->stats.odp_invalidations++;
    trace_rdma_session_odp_invalidate(le32_to_cpu(r->key), va, len,
                                      mr->odp_seq);
    cqe->result1 = cpu_to_le32(mr->odp_seq);
    return RS_STATUS_OK;
}

/*
 * Every 100 ms while a QP waits: raise its event again (the driver may
 * have lost it: a full event queue, a resolve refused as stale), and
 * fail the waits that passed their deadline.
 */
static void rs_odp_tick(void *opaque)
{
    RSCore *c = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    int64_t next = INT64_MAX;
    uint32_t qpn;

    if (!rs_guard_enter(c)) {
        timer_mod_anticipate(c->odp_timer, now + RS_ODP_REPOST_NS);
        return;
    }
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];
        RSOdpWait *side[2] = { &qp->odp.req, &qp->odp.resp };
        unsigned i;

        for (i = 0; qp->valid && i < ARRAY_SIZE(side); i++) {
            RSOdpWait *w = side[i];

            if (!w->mr || w->failed) {
                continue;
            }
            if (now >= w->deadline) {
                rs_odp_fail(c, qpn, qp, w);
                continue;
            }
            if (now >= w->repost) {
                w->repost = now + RS_ODP_REPOST_NS;
                rs_odp_raise(c, w);
            }
            next = MIN(next, MIN(w->repost, w->deadline));
        }
    }
    if (next != INT64_MAX) {
        timer_mod_anticipate(c->odp_timer, next);
    }
    rs_guard_leave(c);
}

static bool rs_odp_realize(RSCore *c, Error **errp)
{
    c->odp = g_new0(RSOdpPage, c->p.odp_pages);
    c->odp_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rs_odp_tick, c);
    return true;
}

static void rs_odp_unrealize(RSCore *c)
{
    timer_free(c->odp_timer);
    c->odp_timer = NULL;
    g_free(c->odp);
    c->odp = NULL;
}

static void rs_odp_reset(RSCore *c)
{
    timer_del(c->odp_timer);
    memset(c->odp, 0, sizeof(*c->odp) * c->p.odp_pages);
    c->odp_used = 0;
    memset(c->odp_ff, 0, sizeof(c->odp_ff));
    c->odp_ff_next = 0;
    c->odp_ff_events = 0;
    c->odp_ff_period = 0;
    memset(&c->stats, 0, sizeof(c->stats));
}

/*
 * Incoming migration, after the MRs and QPs: every entry must be a page
 * of a live ODP MR in its own set, once, and guest RAM; every wait must
 * name a live ODP MR.  The waits start again here: their events are
 * raised again at once (the source driver's answers are lost with it).
 */
static bool rs_odp_post_load(RSCore *c)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    bool waiting = false;
    uint32_t i, j, used = 0;

    for (i = 0; i < c->p.odp_pages; i++) {
        RSOdpPage *e = &c->odp[i];
        RSMr *mr;

        if (!e->mr) {
            if (e->vpn || e->pa || e->rsvd) {
                return false;
            }
            continue;
        }
        if (e->mr >= c->p.max_mrs || rs_odp_set(c, e->mr, e->vpn) !=
            i / RS_ODP_WAYS) {
            return false;
        }
        mr = &c->mrs[e->mr];
        if (!mr->valid || mr->mw_type || !(mr->flags & RS_MR_F_ODP) ||
            e->vpn < mr->iova >> RS_ODP_PAGE_SHIFT ||
            e->vpn > (mr->iova + mr->length - 1) >> RS_ODP_PAGE_SHIFT ||
            e->rsvd || !(e->pa & RS_ODP_PAGE_READ) ||
            (e->pa & (RS_ODP_PAGE - 1) & ~RS_ODP_PAGE_FLAGS) ||
            rs_dma_check(c, e->pa & ~(RS_ODP_PAGE - 1), RS_ODP_PAGE,
                         e->pa & RS_ODP_PAGE_WRITE)) {
            return false;
        }
        for (j = i - i % RS_ODP_WAYS; j < i; j++) {
            if (c->odp[j].mr == e->mr && c->odp[j].vpn == e->vpn) {
                return false;
            }
        }
        used++;
    }
    if (used != c->odp_used) {
        return false;
    }
    for (i = 1; i < c->p.max_qps; i++) {
        RSQp *qp = &c->qps[i];
        RSOdpWait *side[2] = { &qp->odp.req, &qp->odp.resp };

        for (j = 0; j < ARRAY_SIZE(side); j++) {
            RSOdpWait *w = side[j];
            RSMr *mr;

            if (!w->mr) {
                continue;
            }
            if (!qp->valid || w->mr >= c->p.max_mrs ||
                w->kind < RS_ODP_WAIT_REQ || w->kind > RS_ODP_WAIT_READ ||
                w->npages == 0 || w->npages > RS_ODP_RESOLVE_MAX_PAGES ||
                (w->va & (RS_ODP_PAGE - 1))) {
                return false;
            }
            mr = &c->mrs[w->mr];
            if (!mr->valid || mr->mw_type || !(mr->flags & RS_MR_F_ODP)) {
                return false;
            }
            w->deadline = now + (int64_t)c->p.odp_fault_timeout * SCALE_MS;
            w->repost = now;
            w->start = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
            waiting = true;
        }
    }
    if (waiting) {
        timer_mod_anticipate(c->odp_timer, now);
    }
    return true;
}

static uint8_t rs_odp_key_rw(RSCore *c, const RSMr *mr, uint64_t va,
                             void *buf, uint32_t len, bool write)
{
    return rs_odp_rw(c, mr - c->mrs, va, buf, len, write);
}

static void rs_odp_key_release(RSCore *c, RSMr *mr)
{
    rs_odp_mr_free(c, mr - c->mrs);
}

const RSMkeyOps rs_odp_mkey_ops = {
    .name = "odp",
    .rw = rs_odp_key_rw,
    .release = rs_odp_key_release,
};

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/* A page fault a QP waits for (ABI 1.4); the timers restart at load. */
static const VMStateDescription vmstate_rs_odp_wait = {
    .name = "rdma-session/odp-wait",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(mr, RSOdpWait),
        VMSTATE_UINT32(npages, RSOdpWait),
        VMSTATE_UINT64(va, RSOdpWait),
        VMSTATE_UINT32(psn, RSOdpWait),
        VMSTATE_UINT8(kind, RSOdpWait),
        VMSTATE_BOOL(write, RSOdpWait),
        VMSTATE_BOOL(failed, RSOdpWait),
        VMSTATE_END_OF_LIST()
    },
};

static bool rs_qp_odp_needed(void *opaque)
{
    RSQp *qp = opaque;

    return qp->valid &&
           (qp->odp.req.mr || qp->odp.resp.mr || qp->odp.paused);
}

const VMStateDescription vmstate_rs_qp_odp = {
    .name = "rdma-session/qp/odp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_qp_odp_needed,
    .fields = (const VMStateField[]) {
        RS_VMSTATE_QP_STRUCT_V("odp_req", odp.req, 1, vmstate_rs_odp_wait,
                               RSOdpWait),
        RS_VMSTATE_QP_STRUCT_V("odp_resp", odp.resp, 1, vmstate_rs_odp_wait,
                               RSOdpWait),
        RS_VMSTATE_QP_BOOL_V("odp_paused", odp.paused, 0),
        RS_VMSTATE_QP_UINT32_V("pause_psn", odp.pause_psn, 0),
        VMSTATE_END_OF_LIST()
    },
};

/* An ODP MR's invalidation count (ABI 1.4). */
static bool rs_mr_odp_needed(void *opaque)
{
    RSMr *mr = opaque;

    return mr->valid && (mr->flags & RS_MR_F_ODP) && !mr->mw_type;
}

const VMStateDescription vmstate_rs_mr_odp = {
    .name = "rdma-session/mr/odp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mr_odp_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(odp_seq, RSMr),
        VMSTATE_END_OF_LIST()
    },
};

/* ODP translations (ABI 1.4): sent while any is installed. */
static bool rs_odp_needed(void *opaque)
{
    RSCore *c = opaque;

    return c->odp_used != 0;
}

static bool rs_odp_used_valid(void *opaque, int version_id)
{
    RSCore *c = opaque;

    return c->odp_used <= c->p.odp_pages;
}

static const VMStateDescription vmstate_rs_odp_page = {
    .name = "rdma-session/odp-page",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(mr, RSOdpPage),
        VMSTATE_UINT32(rsvd, RSOdpPage),
        VMSTATE_UINT64(vpn, RSOdpPage),
        VMSTATE_UINT64(pa, RSOdpPage),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_rs_odp = {
    .name = "rdma-session/core/odp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_odp_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.odp_pages, RSCore, NULL),
        VMSTATE_UINT32(odp_used, RSCore),
        VMSTATE_VALIDATE("odp_used within odp-pages", rs_odp_used_valid),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(odp, RSCore, p.odp_pages,
                                             vmstate_rs_odp_page, RSOdpPage),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * An MR without the ODP subsection was never invalidated; a stream
 * without the ODP subsection has no translations.
 */
static void rs_odp_pre_load(RSCore *c)
{
    for (uint32_t i = 0; i < c->p.max_mrs; i++) {
        c->mrs[i].odp_seq = 0;
    }
    memset(c->odp, 0, sizeof(*c->odp) * c->p.odp_pages);
    c->odp_used = 0;
}

const RSFeature rs_feature_odp = {
    .name = "odp",
    .realize = rs_odp_realize,
    .unrealize = rs_odp_unrealize,
    .reset = rs_odp_reset,
    .pre_load = rs_odp_pre_load,
    .validate = rs_odp_post_load,
};
