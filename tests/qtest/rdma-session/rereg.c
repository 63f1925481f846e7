/*
 * rdma-session qtests: REREG_MR (ABI 1.7), a memory region changed in
 * place under its keys: a peer's rkey from before keeps working with the
 * new access, PD or translation; what REG_MR refuses REREG_MR refuses and
 * changes nothing; no windows may be bound; a receive posted in the range
 * a new translation left fails as IBTA says; the result migrates.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"
#include "rs-odp.h"

/* An IOVA the new translations start at: the page list decides. */
#define RR_IOVA     0x7100000000ull
#define RR_NOWRITE  (RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_READ)

static void rr_cmd(struct rs_cmd_rereg_mr *c, uint32_t handle,
                   uint32_t flags)
{
    memset(c, 0, sizeof(*c));
    c->handle = handle;
    c->flags = flags;
}

/* The new translation of @c: @len bytes at @iova on the pages at @base. */
static void rr_trans(QRdmaSession *d, struct rs_cmd_rereg_mr *c,
                     uint64_t iova, uint64_t base, uint32_t len)
{
    c->flags |= RS_REREG_TRANS;
    c->iova = iova;
    c->length = len;
    c->npages = DIV_ROUND_UP((iova & (PAGE - 1)) + len, PAGE);
    c->page_shift = 12;
    c->pbl_addr = make_pbl(d, base, PAGE, c->npages);
}

/* REREG_MR succeeds and names the same admin handle and key. */
static void rr_ok(QRdmaSession *d, const struct rs_cmd_rereg_mr *c,
                  uint32_t key)
{
    uint32_t h = 0, k = 0;

    RS_ASSERT_OK(qrs_rereg_mr(d, c, &h, &k));
    g_assert_cmphex(h, ==, c->handle);
    g_assert_cmphex(k, ==, key);
}

static uint8_t rr_st(QRdmaSession *d, const struct rs_cmd_rereg_mr *c)
{
    return qrs_rereg_mr(d, c, NULL, NULL);
}

/* REG_MR of one page at @base: its status (the budget's answer). */
static uint8_t reg_mr_st(QRdmaSession *d, uint32_t pd, uint64_t base,
                         uint32_t len)
{
    struct rs_cmd_reg_mr r = {
        .iova = base, .length = len, .npages = DIV_ROUND_UP(len, PAGE),
        .pd = pd, .page_shift = 12, .access = STD_ACCESS,
    };

    r.pbl_addr = make_pbl(d, base, PAGE, r.npages);
    return qrs_reg_mr(d, &r, NULL, NULL);
}

/*
 * Key @key of the adapter whose GID 0 is 10.0.0.@host, as
 * query-rdma-session shows it (identity 0's table): a new reference.
 */
static QDict *rr_key(QRdmaSession *d, uint8_t host, uint32_t key)
{
    g_autofree char *gid0 = g_strdup_printf("::ffff:10.0.0.%u", host);
    QDict *resp = qtest_qmp(qrs_qts(d), "{ 'execute': 'query-rdma-session' }");
    QListEntry *e, *t, *k;
    QDict *found = NULL;

    g_assert_false(qdict_haskey(resp, "error"));
    QLIST_FOREACH_ENTRY(qdict_get_qlist(resp, "return"), e) {
        QDict *dev = qobject_to(QDict, qlist_entry_obj(e));
        QList *ids = qdict_get_qlist(dev, "identities");
        QDict *g0 = qlist_empty(ids) ? NULL :
                    qobject_to(QDict, qlist_peek(ids));

        if (!g0 || strcmp(qdict_get_str(g0, "address"), gid0)) {
            continue;
        }
        QLIST_FOREACH_ENTRY(qdict_get_qlist(dev, "key-tables"), t) {
            QDict *tab = qobject_to(QDict, qlist_entry_obj(t));

            if (qdict_get_int(tab, "netid") != 0) {
                continue;
            }
            QLIST_FOREACH_ENTRY(qdict_get_qlist(tab, "keys"), k) {
                QDict *x = qobject_to(QDict, qlist_entry_obj(k));

                if (qdict_get_int(x, "key") == key) {
                    g_assert_null(found);
                    found = x;
                }
            }
        }
    }
    g_assert_nonnull(found);
    qobject_ref(found);
    qobject_unref(resp);
    return found;
}

/*
 * The MR (or ODP MR) @key is (still) this: PD, IOVA, length, access,
 * pages.
 */
static void rr_assert_mr(QRdmaSession *d, uint8_t host, uint32_t key,
                         uint32_t pd, uint64_t iova, uint64_t len,
                         uint16_t access, uint32_t pages)
{
    QDict *k = rr_key(d, host, key);

    g_assert_cmpstr(qdict_get_str(k, "kind"), ==, pages ? "mr" : "odp");
    g_assert_cmpuint(qdict_get_int(k, "pd"), ==, HINDEX(pd));
    g_assert_cmphex(qdict_get_int(k, "iova"), ==, iova);
    g_assert_cmpuint(qdict_get_int(k, "length"), ==, len);
    g_assert_cmphex(qdict_get_int(k, "access"), ==, access);
    g_assert_cmpuint(qdict_get_int(k, "pages"), ==, pages);
    qobject_unref(k);
}

/*
 * A new connected RC pair: A's QP in A's PD, B's in @bpd.  Each probe
 * that may fail gets its own: a refused access ends both QPs.
 */
static void rr_connect_srq(Pair *pr, LoopQp q[2], uint32_t bpd, uint32_t srq)
{
    Peer *b = &pr->p[1];
    struct rs_qp_attr a;
    int i;

    pair_qp(pr, 0, &q[0], RS_QPT_RC, pr->p[0].pd);
    if (srq) {
        memset(&q[1], 0, sizeof(q[1]));
        qp_template(b->d, &q[1].c, RS_QPT_RC, bpd, b->cq.h, b->cq.h);
        q[1].c.max_send_sge = 4;
        q[1].c.sq_addr = qrs_alloc_zeroed(b->d, qrs_qp_sq_bytes(&q[1].c));
        q[1].c.srq = srq;
        q[1].c.rq_addr = 0;
        q[1].h = new_qp(b->d, &q[1].c);
        q[1].qpn = HINDEX(q[1].h);
    } else {
        pair_qp(pr, 1, &q[1], RS_QPT_RC, bpd);
    }
    for (i = 0; i < 2; i++) {
        pair_attr(q, i, 0, &a);
        a.access_flags = STD_ACCESS;
        eng_connect(pr->p[i].d, &q[i], RS_QPT_RC, &a, 0);
    }
}

static void rr_connect(Pair *pr, LoopQp q[2], uint32_t bpd)
{
    rr_connect_srq(pr, q, bpd, 0);
}

/*
 * A WRITEs @len bytes of its buffer at @aoff (filled with @seed) to @va
 * of B through @rkey, over a new QP pair whose B side is in @bpd; its
 * completion has @status.  On success B's expected image at @boff
 * changes; on failure B's memory must not have.
 */
static void rr_write(Pair *pr, uint32_t bpd, uint64_t va, uint32_t rkey,
                     uint32_t aoff, uint32_t boff, uint32_t len,
                     uint8_t seed, uint8_t status)
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge ss;
    LoopQp q[2];

    rr_connect(pr, q, bpd);
    peer_fill(a, aoff, len, seed);
    ss = peer_sge(a, aoff, len);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, seed, &ss, 1, va, rkey, 0);
    pair_expect_cqe(pr, 0, seed, status, RS_WR_RDMA_WRITE, q[0].qpn, 0);
    if (status == RS_WC_SUCCESS) {
        img_move(b, boff, a, aoff, len);
    } else {
        /* B's responder's own error (IBTA 11.6.3.1). */
        expect_event(b->d, RS_EV_QP_ACCESS_ERR, q[1].h);
    }
    peer_check(b);
    RS_ASSERT_OK(qrs_destroy(a->d, RS_CMD_DESTROY_QP, q[0].h));
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_QP, q[1].h));
}

/*
 * The peer keeps the rkey it got at set-up: remote write added, PD
 * there and back, a new translation (other pages, other IOVA, another
 * page count, then a two-level page list), and after a migration.
 */
static void test_rereg_in_place(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *b = &pr.p[1];
    struct rs_cmd_rereg_mr c;
    uint32_t pd2, key, pd1;

    pair_setup(&pr, obj, data, alloc);
    pd1 = b->pd;
    pd2 = new_pd(b->d);
    key = eng_mr(b->d, pd1, 0, b->buf, 2 * PAGE, RR_NOWRITE);

    /* Without remote write the peer's write is refused. */
    rr_write(&pr, pd1, b->buf + 0x10, key, 0x100, 0x10, 0x80, 0x11,
             RS_WC_REM_ACCESS_ERR);

    /* Access: remote write added; the same key now writes. */
    rr_cmd(&c, key, RS_REREG_ACCESS);
    c.access = STD_ACCESS;
    rr_ok(b->d, &c, key);
    rr_assert_mr(b->d, 2, key, pd1, b->buf, 2 * PAGE, STD_ACCESS, 2);
    rr_write(&pr, pd1, b->buf + 0x10, key, 0x100, 0x10, 0x80, 0x12,
             RS_WC_SUCCESS);

    /* PD: to pd2 (its QPs only), and back. */
    rr_cmd(&c, key, RS_REREG_PD);
    c.pd = pd2;
    rr_ok(b->d, &c, key);
    RS_ASSERT_STATUS(qrs_destroy(b->d, RS_CMD_DESTROY_PD, pd2),
                     RS_STATUS_BUSY);
    rr_assert_mr(b->d, 2, key, pd2, b->buf, 2 * PAGE, STD_ACCESS, 2);
    rr_write(&pr, pd2, b->buf + 0x200, key, 0x100, 0x200, 0x80, 0x13,
             RS_WC_SUCCESS);
    rr_write(&pr, pd1, b->buf + 0x200, key, 0x100, 0x200, 0x80, 0x14,
             RS_WC_REM_ACCESS_ERR);
    c.pd = pd1;
    rr_ok(b->d, &c, key);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_PD, pd2));
    rr_write(&pr, pd1, b->buf + 0x300, key, 0x100, 0x300, 0x80, 0x15,
             RS_WC_SUCCESS);

    /* Translation: pages 4 - 6 of the buffer at RR_IOVA + 0x800. */
    rr_cmd(&c, key, 0);
    rr_trans(b->d, &c, RR_IOVA + 0x800, b->buf + 4 * PAGE, 2 * PAGE);
    rr_ok(b->d, &c, key);
    rr_assert_mr(b->d, 2, key, pd1, RR_IOVA + 0x800, 2 * PAGE, STD_ACCESS,
                 3);
    rr_write(&pr, pd1, RR_IOVA + 0x800 + 0x1000, key, 0x100,
             4 * PAGE + 0x1800, 0x100, 0x16, RS_WC_SUCCESS);
    /* The old range is no longer the key's. */
    rr_write(&pr, pd1, b->buf + 0x10, key, 0x100, 0x10, 0x80, 0x17,
             RS_WC_REM_ACCESS_ERR);

    /* All three at once, the pages from a two-level list. */
    rr_cmd(&c, key, RS_REREG_PD | RS_REREG_ACCESS);
    pd2 = new_pd(b->d);
    c.pd = pd2;
    c.access = RR_NOWRITE | RS_ACCESS_REMOTE_WRITE | RS_ACCESS_MW_BIND;
    rr_trans(b->d, &c, b->buf + PAGE, b->buf + PAGE, PAGE);
    c.mr_flags = RS_MR_F_PBL_INDIRECT;
    c.pbl_addr = make_indirect_pbl(b->d, b->buf + PAGE, 1);
    rr_ok(b->d, &c, key);
    rr_assert_mr(b->d, 2, key, pd2, b->buf + PAGE, PAGE, c.access, 1);
    rr_write(&pr, pd2, b->buf + PAGE + 0x40, key, 0x100, PAGE + 0x40,
             0x100, 0x18, RS_WC_SUCCESS);

    /* What REREG_MR made migrates as REG_MR's would. */
    pair_migrate(&pr);
    pair_release(&pr, 0);
    pair_release(&pr, 1);
    rr_assert_mr(b->d, 2, key, pd2, b->buf + PAGE, PAGE, c.access, 1);
    rr_write(&pr, pd2, b->buf + PAGE + 0x400, key, 0x100, PAGE + 0x400,
             0x100, 0x19, RS_WC_SUCCESS);
    rr_cmd(&c, key, RS_REREG_PD);
    c.pd = pd1;
    rr_ok(b->d, &c, key);

    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, key));
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_PD, pd2));
    pair_teardown(&pr);
}

/* A few translation entries: the budget REREG_MR counts against. */
#define RR_MR_PAGES 16

static void *rr_budget_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line,
                           " -global rdma-session.max-mr-pages=%d ",
                           RR_MR_PAGES);
    return arg;
}

/*
 * Every refusal leaves the MR as it was; a new translation counts the
 * MR's own pages as free and gives back what it does not use.
 */
static void test_rereg_refused(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_cmd_rereg_mr c;
    struct rs_cmd_reg_mkey_list kl = { 0 };
    struct rs_cmd_reg_mr fr = { 0 };
    uint32_t pd, ppd, pd_id1, key, key2, stale, fast, ind, odp, mw, k;
    uint64_t buf;

    add_gid_v4(d, 0, 1);
    rs_qom_set_all(qrs_qts(d), "netids", "10.0.1.0/24=1");
    add_gid_v4(d, 1, 1);
    pd = new_pd(d);
    pd_id1 = new_pd_netid(d, 1);
    RS_ASSERT_OK(qrs_create_pd_flags(d, RS_PD_F_PRIVILEGED, &ppd));
    buf = loop_buf(d, RR_MR_PAGES * PAGE);
    key = eng_mr(d, pd, 0, buf, 6 * PAGE, STD_ACCESS);
    key2 = eng_mr(d, pd, 0, buf, PAGE, STD_ACCESS);

    /* The handle: none, out of range, free, stale, a window's. */
    stale = eng_mr(d, pd, 0, buf, PAGE, STD_ACCESS);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, stale));
    mw = 0;
    {
        struct rs_cmd_alloc_mw a = { .pd = pd, .type = RS_MW_TYPE_2 };

        RS_ASSERT_OK(qrs_admin_cmd(d, RS_CMD_ALLOC_MW, &a, sizeof(a), &mw,
                                   NULL));
    }
    for (k = 0; k < 5; k++) {
        static const uint32_t bad[] = { 0, 0xffffff00 };
        uint32_t h = k < 2 ? bad[k] : k == 2 ? stale :
                     k == 3 ? key ^ 1 : mw;

        rr_cmd(&c, h, RS_REREG_ACCESS);
        c.access = STD_ACCESS;
        RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_HANDLE);
    }

    /* Flags: none, unknown; the reserved word. */
    rr_cmd(&c, key, 0);
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_PARAM);
    rr_cmd(&c, key, RS_REREG_ACCESS | 8);
    c.access = STD_ACCESS;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_PARAM);
    rr_cmd(&c, key, RS_REREG_ACCESS);
    c.access = STD_ACCESS;
    c.rsvd = 1;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_PARAM);

    /*
     * Not a region with its own translation: a fast-registration MR, an
     * indirect key; an ODP MR takes a new PD or access, not a translation.
     */
    fr.npages = 4;
    fr.pd = ppd;
    fr.page_shift = 12;
    fr.flags = RS_MR_F_FAST_REG;
    fast = reg_mr_ok(d, &fr);
    rr_cmd(&c, fast, RS_REREG_PD);
    c.pd = ppd;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_NOT_SUPPORTED);
    kl.pd = pd;
    kl.nentries = 2;
    kl.flags = RS_MKEY_F_EMPTY;
    RS_ASSERT_OK(qrs_admin_cmd(d, RS_CMD_REG_INDIRECT_MKEY, &kl, sizeof(kl),
                               NULL, &ind));
    rr_cmd(&c, ind, RS_REREG_ACCESS);
    c.access = STD_ACCESS;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_NOT_SUPPORTED);
    odp = odp_mr(d, pd, 0x10000000, 4 * PAGE);
    rr_cmd(&c, odp, 0);
    rr_trans(d, &c, buf, buf, PAGE);
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_NOT_SUPPORTED);
    rr_cmd(&c, odp, RS_REREG_ACCESS | RS_REREG_PD);
    c.access = RS_ACCESS_LOCAL_WRITE;
    c.pd = pd;
    rr_ok(d, &c, odp);
    rr_assert_mr(d, 1, odp, pd, 0x10000000, 4 * PAGE, RS_ACCESS_LOCAL_WRITE,
                 0);

    /* PD: none, stale, of another identity, privileged. */
    rr_cmd(&c, key, RS_REREG_PD);
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_HANDLE);
    c.pd = pd + (1u << RS_HANDLE_GEN_SHIFT);
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_HANDLE);
    c.pd = pd_id1;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_PD);
    c.pd = ppd;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_PD);

    /* Access as REG_MR checks it. */
    rr_cmd(&c, key, RS_REREG_ACCESS);
    c.access = RS_ACCESS_ALL + 1;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ACCESS);
    c.access = RS_ACCESS_REMOTE_WRITE;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ACCESS);
    c.access = RS_ACCESS_REMOTE_ATOMIC | RS_ACCESS_REMOTE_READ;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ACCESS);
    c.access = STD_ACCESS | RS_ACCESS_FLUSH_PERSISTENT;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ACCESS);

    /* Translation as REG_MR checks it. */
    rr_cmd(&c, key, 0);
    rr_trans(d, &c, buf, buf, 2 * PAGE);
    c.page_shift = 11;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_PARAM);
    c.page_shift = 31;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_PARAM);
    c.page_shift = 12;
    c.mr_flags = RS_MR_F_ODP;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_PARAM);
    c.mr_flags = 0;
    c.length = 0;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_SIZE);
    c.length = 2 * PAGE;
    c.npages = 3;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_SIZE);
    c.npages = 2;
    c.iova = ~0ull - PAGE;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_SIZE);
    c.iova = buf;
    c.pbl_addr += 4;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ALIGN);
    c.pbl_addr = FAR_ADDR;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ADDR);
    c.pbl_addr = make_pbl(d, buf + 0x800, PAGE, 2);
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ALIGN);
    c.pbl_addr = make_pbl(d, FAR_ADDR, PAGE, 2);
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ADDR);
    /* A bad translation with a good access and PD: none of them. */
    rr_cmd(&c, key, RS_REREG_ACCESS | RS_REREG_PD);
    rr_trans(d, &c, buf, FAR_ADDR, PAGE);
    c.access = RR_NOWRITE;
    c.pd = pd;
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_BAD_ADDR);
    rr_assert_mr(d, 1, key, pd, buf, 6 * PAGE, STD_ACCESS, 6);

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, odp));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, ind));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, fast));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEALLOC_MW, mw));

    /*
     * The budget: key (6 pages) and key2 (1) hold 7 of 16.  key may grow
     * to 15 (its own 6 count as free), not to 16.
     */
    rr_cmd(&c, key, 0);
    rr_trans(d, &c, buf, buf, RR_MR_PAGES * PAGE);
    RS_ASSERT_STATUS(rr_st(d, &c), RS_STATUS_NO_RESOURCES);
    rr_assert_mr(d, 1, key, pd, buf, 6 * PAGE, STD_ACCESS, 6);
    rr_cmd(&c, key, 0);
    rr_trans(d, &c, buf, buf, (RR_MR_PAGES - 1) * PAGE);
    rr_ok(d, &c, key);
    rr_assert_mr(d, 1, key, pd, buf, (RR_MR_PAGES - 1) * PAGE, STD_ACCESS,
                 RR_MR_PAGES - 1);
    g_assert_cmpuint(reg_mr_st(d, pd, buf, PAGE), ==, RS_STATUS_NO_RESOURCES);
    /* Shrunk to one page: the 14 others come back. */
    rr_cmd(&c, key, 0);
    rr_trans(d, &c, buf, buf, PAGE);
    rr_ok(d, &c, key);
    for (k = 0; k < RR_MR_PAGES - 2; k++) {
        g_assert_cmpuint(reg_mr_st(d, pd, buf, PAGE), ==, RS_STATUS_OK);
    }
    g_assert_cmpuint(reg_mr_st(d, pd, buf, PAGE), ==, RS_STATUS_NO_RESOURCES);

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, key));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, key2));
    assert_alive(d);
}

static void rr_bind(Loop *l, uint64_t wr_id, uint32_t mw, uint32_t new_rkey,
                    uint32_t mr, uint64_t addr, uint64_t len)
{
    struct rs_send_wqe_bind_mw b = {
        .wr_id = wr_id, .opcode = RS_WR_BIND_MW,
        .flags = RS_WQE_F_SIGNALED, .mw_rkey = mw, .addr = addr,
        .length = len, .mr_lkey = mr, .new_rkey = new_rkey,
        .access = RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ,
    };
    struct rs_send_wqe_ctrl w;

    QEMU_BUILD_BUG_ON(sizeof(w) != sizeof(b));
    memcpy(&w, &b, sizeof(w));
    eng_post_send(l->d, &l->b, &w, NULL, 0);
    fr_expect(l, wr_id, RS_WR_BIND_MW, RS_WC_SUCCESS);
}

/* Each kind of change of @key is refused with windows bound: BUSY. */
static void rr_busy(Loop *l, uint32_t key, uint32_t pd2)
{
    struct rs_cmd_rereg_mr c;

    rr_cmd(&c, key, RS_REREG_ACCESS);
    c.access = STD_ACCESS;
    RS_ASSERT_STATUS(rr_st(l->d, &c), RS_STATUS_BUSY);
    rr_cmd(&c, key, RS_REREG_PD);
    c.pd = pd2;
    RS_ASSERT_STATUS(rr_st(l->d, &c), RS_STATUS_BUSY);
    rr_cmd(&c, key, 0);
    rr_trans(l->d, &c, l->dst, l->dst, PAGE);
    RS_ASSERT_STATUS(rr_st(l->d, &c), RS_STATUS_BUSY);
    rr_assert_mr(l->d, 1, key, l->pd, l->dst, LOOP_BUF,
                 STD_ACCESS | RS_ACCESS_MW_BIND, LOOP_BUF / PAGE);
}

/*
 * IBTA 10.6.7.2.6 asks for no bound windows when an MR is deregistered,
 * and ConnectX for none when it is re-registered: a bound window of
 * either type makes REREG_MR BUSY, as DEREG_MR; unbound, it goes.
 */
static void test_rereg_bound_window(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    struct rs_cmd_alloc_mw a = { .type = RS_MW_TYPE_1 };
    struct rs_cmd_rereg_mr c;
    uint32_t key, mw1, mw2, pd2;
    Loop l;

    loop_setup(&l, obj);
    pd2 = new_pd(l.d);
    key = loop_mr_access(&l, l.dst, LOOP_BUF, STD_ACCESS | RS_ACCESS_MW_BIND);
    a.pd = l.pd;
    RS_ASSERT_OK(qrs_admin_cmd(l.d, RS_CMD_ALLOC_MW, &a, sizeof(a), NULL,
                               &mw1));
    a.type = RS_MW_TYPE_2;
    RS_ASSERT_OK(qrs_admin_cmd(l.d, RS_CMD_ALLOC_MW, &a, sizeof(a), NULL,
                               &mw2));

    /* A window allocated but not bound is no obstacle. */
    rr_cmd(&c, key, RS_REREG_ACCESS);
    c.access = STD_ACCESS | RS_ACCESS_MW_BIND;
    rr_ok(l.d, &c, key);

    /* Type 2 bound: BUSY; deallocated (unbound): it goes. */
    rr_bind(&l, 0xb2, mw2, (mw2 & ~RS_MKEY_TAG_MASK) | ((mw2 + 1) & 0xff),
            key, l.dst + PAGE, PAGE);
    rr_busy(&l, key, pd2);
    RS_ASSERT_STATUS(qrs_destroy(l.d, RS_CMD_DEREG_MR, key), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEALLOC_MW, mw2));

    /* Type 1 bound: the same. */
    rr_bind(&l, 0xb1, mw1, (mw1 & ~RS_MKEY_TAG_MASK) | ((mw1 + 1) & 0xff),
            key, l.dst, PAGE);
    rr_busy(&l, key, pd2);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEALLOC_MW, mw1));

    rr_cmd(&c, key, RS_REREG_ACCESS | RS_REREG_PD);
    c.access = STD_ACCESS;
    c.pd = pd2;
    rr_ok(l.d, &c, key);
    rr_assert_mr(l.d, 1, key, pd2, l.dst, LOOP_BUF, STD_ACCESS,
                 LOOP_BUF / PAGE);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, key));
    assert_alive(l.d);
}

/*
 * A receive posted through the key in the range a new translation left:
 * the SEND finds no memory it may write.  IBTA 9.9.3 (responder, class
 * C): the receive completes with a local protection error, the SEND is
 * NAKed with Remote Operational Error, the requester's completion for it
 * says so and the rest of its queue is flushed after it.  A receive in
 * the range the new translation keeps lands in the new pages.
 */
static void test_rereg_posted_recv(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_cmd_rereg_mr c;
    struct rs_cmd_create_srq sc;
    struct rs_sge ss, rs;
    struct rs_cqe cqe;
    LoopQp q[2];
    uint32_t key, key2, srq, srq_pi = 0;

    pair_setup(&pr, obj, data, alloc);
    key = eng_mr(b->d, b->pd, 0, b->buf, 2 * PAGE, STD_ACCESS);

    /* Away from the receive's range. */
    rr_connect(&pr, q, b->pd);
    rs = (struct rs_sge){ .addr = b->buf + 0x100, .length = 256,
                          .lkey = key };
    eng_post_recv(b->d, &q[1], 0xb1, &rs, 1);
    rr_cmd(&c, key, 0);
    rr_trans(b->d, &c, RR_IOVA, b->buf + 4 * PAGE, 2 * PAGE);
    rr_ok(b->d, &c, key);
    pair_log_reset(&pr);
    peer_fill(a, 0x200, 64, 0x21);
    ss = peer_sge(a, 0x200, 64);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa1, &ss, 1, 0, 0, 0);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa2, &ss, 1, 0, 0, 0);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_REM_OP_ERR, RS_WR_SEND, q[0].qpn, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, q[0].qpn);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_LOC_PROT_ERR, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(pr.nops[1], >=, 1);
    g_assert_cmphex(pr.op[1][0], ==, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_NAK_REM_OP);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
    peer_check(b);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);

    /* Back to the first IOVA, on other pages: the receive lands there. */
    rr_connect(&pr, q, b->pd);
    rs.addr = b->buf + 0x300;
    eng_post_recv(b->d, &q[1], 0xb2, &rs, 1);
    rr_cmd(&c, key, 0);
    rr_trans(b->d, &c, b->buf, b->buf + 6 * PAGE, 2 * PAGE);
    rr_ok(b->d, &c, key);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa3, &ss, 1, 0, 0, 0);
    pair_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 64);
    img_move(b, 6 * PAGE + 0x300, a, 0x200, 64);
    peer_check(b);

    /*
     * The same through an SRQ, the SEND three packets long: its first
     * packet finds the receive unusable.
     */
    srq_template(b->d, &sc, b->pd, 2, 1);
    RS_ASSERT_OK(qrs_create_srq(b->d, &sc, &srq));
    rr_connect_srq(&pr, q, b->pd, srq);
    srq_post(b->d, &sc, srq, &srq_pi, 0xb3, b->buf + 0x400, 4096, key);
    rr_cmd(&c, key, 0);
    rr_trans(b->d, &c, RR_IOVA, b->buf + 4 * PAGE, 2 * PAGE);
    rr_ok(b->d, &c, key);
    pair_log_reset(&pr);
    peer_fill(a, 0x1000, 3000, 0x22);
    ss = peer_sge(a, 0x1000, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa4, &ss, 1, 0, 0, 0);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa5, &ss, 1, 0, 0, 0);
    pair_expect_cqe(&pr, 0, 0xa4, RS_WC_REM_OP_ERR, RS_WR_SEND, q[0].qpn, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa5, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, q[0].qpn);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb3, RS_WC_LOC_PROT_ERR, RS_WR_RECV, q[1].qpn);
    g_assert_cmphex(pr.op[1][0], ==, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_NAK_REM_OP);
    g_assert_cmphex(pr.psn[1][0], ==, pair_psn[0]);
    peer_check(b);

    /*
     * Where the driver registers anew (an ODP MR, a device without
     * REREG_MR) the receive names a key deregistered since: the same.
     */
    key2 = eng_mr(b->d, b->pd, 0, b->buf, 2 * PAGE, STD_ACCESS);
    rr_connect(&pr, q, b->pd);
    rs = (struct rs_sge){ .addr = b->buf + 0x100, .length = 256,
                          .lkey = key2 };
    eng_post_recv(b->d, &q[1], 0xb4, &rs, 1);
    eng_mr(b->d, b->pd, 0, b->buf + 4 * PAGE, 2 * PAGE, STD_ACCESS);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, key2));
    pair_log_reset(&pr);
    ss = peer_sge(a, 0x200, 64);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa6, &ss, 1, 0, 0, 0);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa7, &ss, 1, 0, 0, 0);
    pair_expect_cqe(&pr, 0, 0xa6, RS_WC_REM_OP_ERR, RS_WR_SEND, q[0].qpn, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa7, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, q[0].qpn);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb4, RS_WC_LOC_PROT_ERR, RS_WR_RECV, q[1].qpn);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_NAK_REM_OP);
    peer_check(b);

    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, key));
    pair_teardown(&pr);
}

static void register_rereg_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions budget = { .before = rr_budget_before };

    /* In the memory window area: REREG_MR is a key's life, as windows. */
    rs_add_standalone_test("mw/rereg-in-place", test_rereg_in_place, &pair);
    qos_add_test("mw/rereg-refused", "rdma-session", test_rereg_refused,
                 &budget);
    qos_add_test("mw/rereg-bound-window", "rdma-session",
                 test_rereg_bound_window, NULL);
    rs_add_standalone_test("mw/rereg-posted-recv",
                           test_rereg_posted_recv, &pair);
}

libqos_init(register_rereg_tests);
