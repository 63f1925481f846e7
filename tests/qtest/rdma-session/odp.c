/*
 * rdma-session qtests: on-demand paging (ABI 1.4): ODP regions and their
 * checks, QUERY_STATS, bad ODP_RESOLVE and ODP_INVALIDATE, invalidation,
 * the translation table's size, migration with a fault pending, regions and
 * QPs torn down while a fault waits.  The test is the driver (rs-odp.c).
 *
 * Written from docs/specs/rdma-session.rst, "On-demand paging".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-odp.h"

/* ------------------------------------------------------------------ */
/* Registration, deregistration, the limits and QUERY_STATS           */
/* ------------------------------------------------------------------ */

typedef struct RegRow {
    const char *name;
    uint8_t flags;
    uint64_t iova;
    uint64_t length;
    uint32_t npages;
    bool pbl;                   /* a page list at pbl_addr */
    uint8_t page_shift;
    uint16_t access;
    bool bad_pd;
    uint32_t gid_index;
    uint8_t status;
} RegRow;

#define F_ODP   RS_MR_F_ODP
#define F_IMPL  (RS_MR_F_ODP | RS_MR_F_ODP_IMPLICIT)
#define LEN16   (16 * PAGE)

/* The spec's check order: every REG_MR check, then ODP's. */
static const RegRow reg_rows[] = {
    { "bad-pd-before-odp-checks", F_ODP | RS_MR_F_FAST_REG, ODP_VA, 0, 0,
      false, 13, ODP_ACCESS, true, 0, RS_STATUS_BAD_HANDLE },
    { "bad-gid-before-odp-checks", F_ODP, ODP_VA, LEN16, 0, false, 13,
      ODP_ACCESS, false, 5, RS_STATUS_BAD_NETID },
    { "unknown-access-before-odp-checks", F_ODP | RS_MR_F_PBL_INDIRECT,
      ODP_VA, LEN16, 0, false, 12, RS_ACCESS_UNKNOWN, false, 0,
      RS_STATUS_BAD_ACCESS },
    { "remote-write-without-local-write", F_ODP, ODP_VA, LEN16, 1, false,
      12, RS_ACCESS_REMOTE_WRITE, false, 0, RS_STATUS_BAD_ACCESS },
    { "remote-atomic-without-local-write", F_IMPL, 0, 0, 0, false, 12,
      RS_ACCESS_REMOTE_ATOMIC | RS_ACCESS_REMOTE_READ, false, 0,
      RS_STATUS_BAD_ACCESS },
    { "odp-with-fast-reg", F_ODP | RS_MR_F_FAST_REG, ODP_VA, LEN16, 0,
      false, 12, ODP_ACCESS, false, 0, RS_STATUS_BAD_PARAM },
    { "odp-with-pbl-indirect", F_ODP | RS_MR_F_PBL_INDIRECT, ODP_VA, LEN16,
      0, false, 12, ODP_ACCESS, false, 0, RS_STATUS_BAD_PARAM },
    { "implicit-with-fast-reg", F_IMPL | RS_MR_F_FAST_REG, 0, 0, 0, false,
      12, ODP_ACCESS, false, 0, RS_STATUS_BAD_PARAM },
    { "odp-unknown-flag", F_ODP | 0x10, ODP_VA, LEN16, 0, false, 12,
      ODP_ACCESS, false, 0, RS_STATUS_BAD_PARAM },
    { "odp-unknown-flag-7", F_ODP | 0x80, ODP_VA, LEN16, 0, false, 12,
      ODP_ACCESS, false, 0, RS_STATUS_BAD_PARAM },
    { "page-shift-13", F_ODP, ODP_VA, LEN16, 0, false, 13, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_PARAM },
    { "page-shift-0", F_ODP, ODP_VA, LEN16, 0, false, 0, ODP_ACCESS, false,
      0, RS_STATUS_BAD_PARAM },
    { "implicit-page-shift-21", F_IMPL, 0, 0, 0, false, 21, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_PARAM },
    { "npages-not-0", F_ODP, ODP_VA, LEN16, 16, false, 12, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_PARAM },
    { "page-list", F_ODP, ODP_VA, LEN16, 0, true, 12, ODP_ACCESS, false, 0,
      RS_STATUS_BAD_PARAM },
    { "page-list-and-npages", F_ODP, ODP_VA, LEN16, 16, true, 12,
      ODP_ACCESS, false, 0, RS_STATUS_BAD_PARAM },
    { "implicit-without-odp", RS_MR_F_ODP_IMPLICIT, ODP_VA, LEN16, 16, true,
      12, ODP_ACCESS, false, 0, RS_STATUS_BAD_PARAM },
    { "implicit-without-odp-empty", RS_MR_F_ODP_IMPLICIT, 0, 0, 0, false,
      12, ODP_ACCESS, false, 0, RS_STATUS_BAD_PARAM },
    { "implicit-with-iova", F_IMPL, ODP_VA, 0, 0, false, 12, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_PARAM },
    { "implicit-with-length", F_IMPL, 0, LEN16, 0, false, 12, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_PARAM },
    { "implicit-size-max", F_IMPL, 0, UINT64_MAX, 0, false, 12, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_PARAM },
    { "explicit-length-0", F_ODP, ODP_VA, 0, 0, false, 12, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_SIZE },
    { "explicit-past-2^64", F_ODP, UINT64_MAX - PAGE + 1, 2 * PAGE, 0,
      false, 12, ODP_ACCESS, false, 0, RS_STATUS_BAD_SIZE },
    { "explicit-wraps-far", F_ODP, 1ull << 63, UINT64_MAX, 0, false, 12,
      ODP_ACCESS, false, 0, RS_STATUS_BAD_SIZE },
    { "param-before-size", F_ODP, ODP_VA, 0, 0, false, 13, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_PARAM },
    { "npages-before-size", F_ODP, ODP_VA, 0, 1, false, 12, ODP_ACCESS,
      false, 0, RS_STATUS_BAD_PARAM },
};

static uint8_t reg_row(QRdmaSession *d, uint32_t pd, const RegRow *r,
                       uint64_t pbl, uint32_t *key)
{
    struct rs_cmd_reg_mr c = {
        .iova = r->iova,
        .length = r->length,
        .pbl_addr = r->pbl ? pbl : 0,
        .npages = r->npages,
        .pd = r->bad_pd ? HANDLE(0, 0x7fff) : pd,
        .page_shift = r->page_shift,
        .flags = r->flags,
        .access = r->access,
        .gid_index = r->gid_index,
    };
    uint32_t rkey;

    return qrs_reg_mr(d, &c, key, &rkey);
}

static void odp_check_rows(QRdmaSession *d, uint32_t pd, bool odp)
{
    uint64_t pbl = make_pbl(d, loop_buf(d, 16 * PAGE), PAGE, 16);
    int i;

    for (i = 0; i < ARRAY_SIZE(reg_rows); i++) {
        const RegRow *r = &reg_rows[i];
        uint8_t want = r->status;
        uint32_t key;

        /* Without the capability: NOT_SUPPORTED after PD, GID, access. */
        if (!odp && (r->flags & RS_MR_F_ODP) && want != RS_STATUS_BAD_HANDLE &&
            want != RS_STATUS_BAD_NETID && want != RS_STATUS_BAD_ACCESS) {
            want = RS_STATUS_NOT_SUPPORTED;
        }
        g_test_message("REG_MR %s", r->name);
        RS_ASSERT_STATUS(reg_row(d, pd, r, pbl, &key), want);
    }
}

static void odp_query_device(QRdmaSession *d, struct rs_device_attr *attr)
{
    RS_ASSERT_OK(qrs_query_device(d, attr));
    attr->max_odp_pages = le32_to_cpu(attr->max_odp_pages);
}

/* QUERY_STATS after the enable: zeros; its response buffer checks. */
static void odp_stats_fresh(QRdmaSession *d)
{
    struct rs_device_stats st;

    /* Since the function was enabled: nothing yet. */
    odp_stats(d, &st);
    g_assert_cmpuint(st.odp_faults, ==, 0);
    g_assert_cmpuint(st.odp_resolved_pages, ==, 0);
    g_assert_cmpuint(st.odp_invalidations, ==, 0);
    g_assert_cmpuint(st.odp_fault_fails, ==, 0);
    g_assert_cmpuint(st.odp_pauses_sent, ==, 0);
    g_assert_cmpuint(st.odp_pauses_rcvd, ==, 0);
    g_assert_cmpuint(st.odp_resumes_rcvd, ==, 0);
    g_assert_cmpuint(st.rnr_naks_rcvd, ==, 0);

    /* QUERY_STATS: the response buffer checks of the query commands. */
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_STATS, 0, d->scratch, 63),
                     RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_STATS, 0, d->scratch + 4,
                              64), RS_STATUS_BAD_ALIGN);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_STATS, 0, FAR_ADDR, 64),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_STATS, 0, ram_end(d) - 32,
                              64), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_STATS, 0, d->scratch + 4, 8),
                     RS_STATUS_BAD_SIZE);
}

/*
 * The pages of a region are those its range touches: two for 5000 bytes
 * from @explicit's odd start, every page but the last (which holds 2^64 -
 * 1) for @implicit.  Invalidating all of the implicit region's space is
 * quick: the work is bounded by the table.
 */
static void odp_region_pages(QRdmaSession *d, uint32_t implicit,
                             uint32_t explicit)
{
    uint32_t count = 0;
    uint8_t st;

    RS_ASSERT_OK(odp_fail(d, explicit, 0, ODP_VA, 2));
    RS_ASSERT_OK(odp_fail(d, explicit, 0, ODP_VA + PAGE, 1));
    RS_ASSERT_STATUS(odp_fail(d, explicit, 0, ODP_VA + 2 * PAGE, 1),
                     RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(odp_fail(d, explicit, 0, ODP_VA - PAGE, 2),
                     RS_STATUS_BAD_SIZE);
    RS_ASSERT_OK(odp_fail(d, implicit, 0, 0, RS_ODP_RESOLVE_MAX_PAGES));
    RS_ASSERT_OK(odp_fail(d, implicit, 0, -(uint64_t)(2 * PAGE), 1));
    st = odp_fail(d, implicit, 0, -(uint64_t)PAGE, 1);
    g_test_message("the implicit region's last page -> %s",
                   qrs_status_name(st));
    RS_ASSERT_OK(odp_inval(d, implicit, 0, UINT64_MAX, 0, &count));
    g_assert_cmpuint(count, ==, 1);
    RS_ASSERT_OK(odp_inval(d, implicit, 1, UINT64_MAX - 1, 0, &count));
    g_assert_cmpuint(count, ==, 2);
}

/*
 * REG_MR with ODP, explicit and implicit, and every bad combination in
 * the spec's order; an ODP region takes no entry of max-mr-pages (16
 * here); DEREG_MR; a key after DEREG_MR; QUERY_STATS and its buffer
 * checks.  With odp-pages=64 and max-mr-pages=16 (odp_objects_before).
 */
static void test_odp_objects(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_device_attr attr;
    struct rs_device_stats st;
    uint32_t pd, k1, k2, k3, plain, old;
    uint64_t buf;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    odp_query_device(d, &attr);
    g_assert_cmphex(attr.caps & RS_CAP_ODP, ==, RS_CAP_ODP);
    g_assert_cmphex(qrs_readl(d, A_RS_CAPS), ==, attr.caps);
    g_assert_cmphex(attr.abi_version, ==, 0x0001000b);
    g_assert_cmphex(qrs_readl(d, A_RS_VERSION), ==, 0x0001000b);
    g_assert_cmpuint(attr.max_odp_pages, ==, 64);

    odp_stats_fresh(d);

    /* Explicit and implicit; rkey = lkey; each a key of its own. */
    k1 = odp_mr(d, pd, ODP_VA, ODP_PAGES * PAGE);
    k2 = odp_mr(d, pd, 0, 0);
    g_assert_cmphex(k1, !=, k2);
    /* An explicit region at an odd address, and one of 4 GiB. */
    k3 = odp_mr(d, pd, ODP_VA + 0x123, 5000);
    odp_region_pages(d, k2, k3);

    /*
     * No entry of max-mr-pages: a 16-page MR takes them all, a 4 GiB ODP
     * region still registers, a page more of an ordinary MR does not.
     */
    buf = loop_buf(d, 16 * PAGE);
    plain = eng_mr(d, pd, 0, buf, 16 * PAGE, STD_ACCESS);
    odp_mr(d, pd, 1ull << 40, 4ull << 30);
    odp_mr(d, pd, 0, 0);
    {
        struct rs_cmd_reg_mr c = {
            .iova = buf, .length = PAGE, .npages = 1, .pd = pd,
            .page_shift = 12, .access = STD_ACCESS,
        };
        uint32_t lk, rk;

        c.pbl_addr = make_pbl(d, buf, PAGE, 1);
        RS_ASSERT_STATUS(qrs_reg_mr(d, &c, &lk, &rk),
                         RS_STATUS_NO_RESOURCES);
    }

    odp_check_rows(d, pd, true);

    /* A region keeps its PD. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);

    /*
     * DEREG_MR: the key is gone for every command; the slot's next region
     * has another key, and the old one stays refused.
     */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, k1),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(odp_fail(d, k1, 0, ODP_VA, 1), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(odp_inval(d, k1, ODP_VA, PAGE, 0, NULL),
                     RS_STATUS_BAD_HANDLE);
    old = k1;
    k1 = odp_mr(d, pd, ODP_VA, ODP_PAGES * PAGE);
    g_assert_cmphex(k1, !=, old);
    RS_ASSERT_STATUS(odp_fail(d, old, 0, ODP_VA, 1), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, old),
                     RS_STATUS_BAD_HANDLE);
    /* A new region's count starts at 0. */
    odp_inval_ok(d, k1, ODP_VA, PAGE, 1);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));
    k1 = odp_mr(d, pd, ODP_VA, ODP_PAGES * PAGE);
    odp_inval_ok(d, k1, ODP_VA, PAGE, 1);

    /* Failed registrations took nothing: deregister everything. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, plain));
    odp_stats(d, &st);
    g_assert_cmpuint(st.odp_invalidations, ==, 4);
    assert_alive(d);

    /* Counted since the function was enabled: a reset starts again. */
    qrs_reset(d);
    admin_setup(d);
    odp_stats_fresh(d);
    assert_alive(d);
}

static void *odp_objects_before(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rdma-session.max-mr-pages=16"
                    " -global rdma-session.odp-pages=64 ");
    return arg;
}

static void *odp_off_before(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rdma-session.odp=off ");
    return arg;
}

/*
 * odp=off: no RS_CAP_ODP, and REG_MR with RS_MR_F_ODP completes with
 * NOT_SUPPORTED after the checks of every REG_MR (PD, GID, access).
 */
static void test_odp_off(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_device_attr attr;
    struct rs_device_stats st;
    uint32_t pd, key = 0;
    uint8_t s;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    odp_query_device(d, &attr);
    g_assert_cmphex(attr.caps & RS_CAP_ODP, ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_CAPS) & RS_CAP_ODP, ==, 0);
    g_test_message("odp=off: max_odp_pages %u", attr.max_odp_pages);
    RS_ASSERT_STATUS(odp_reg(d, pd, RS_MR_F_ODP, ODP_VA, PAGE, &key),
                     RS_STATUS_NOT_SUPPORTED);
    RS_ASSERT_STATUS(odp_reg(d, pd, F_IMPL, 0, 0, &key),
                     RS_STATUS_NOT_SUPPORTED);
    odp_check_rows(d, pd, false);
    /* Without regions no key is an ODP region's (the spec says no more). */
    s = odp_fail(d, 1u << RS_MKEY_INDEX_SHIFT, 0, ODP_VA, 1);
    g_test_message("odp=off: ODP_RESOLVE -> %s", qrs_status_name(s));
    g_assert_true(s == RS_STATUS_BAD_HANDLE ||
                  s == RS_STATUS_NOT_SUPPORTED);
    /* The statistics are not ODP's alone. */
    odp_stats(d, &st);
    assert_alive(d);
}

/* ------------------------------------------------------------------ */
/* ODP_RESOLVE and ODP_INVALIDATE: bad input                          */
/* ------------------------------------------------------------------ */

enum { K_ODP, K_ZERO, K_PLAIN, K_STALE, K_TAG, K_RANGE, K_COUNT };
enum {
    L_GOOD, L_MISALIGNED, L_FAR, L_RAM_END, L_BAR, L_BIT2, L_BIT11,
    L_WRITE_ONLY, L_PAGE_FAR, L_PAGE_RAM_END, L_PAGE_BAR, L_GOOD_BAD,
    L_BAD_GOOD, L_NONE, L_COUNT
};

typedef struct ResolveRow {
    const char *name;
    uint8_t key;
    uint32_t seq;
    int64_t va;                 /* from ODP_VA */
    uint8_t pbl;
    uint32_t npages;
    uint32_t flags;
    uint8_t status;
} ResolveRow;

/* The fault waits for page 2 of B's region. */
#define P2      (2 * (int64_t)PAGE)

static const ResolveRow resolve_rows[] = {
    { "key-0", K_ZERO, 0, P2, L_GOOD, 1, 0, RS_STATUS_BAD_HANDLE },
    { "key-not-odp", K_PLAIN, 0, P2, L_GOOD, 1, 0, RS_STATUS_BAD_HANDLE },
    { "key-deregistered", K_STALE, 0, P2, L_GOOD, 1, 0,
      RS_STATUS_BAD_HANDLE },
    { "key-other-tag", K_TAG, 0, P2, L_GOOD, 1, 0, RS_STATUS_BAD_HANDLE },
    { "key-out-of-range", K_RANGE, 0, P2, L_GOOD, 1, 0,
      RS_STATUS_BAD_HANDLE },
    { "key-before-flags", K_PLAIN, 7, P2 + 1, L_MISALIGNED, 0, 2,
      RS_STATUS_BAD_HANDLE },
    { "flags-bit-1", K_ODP, 0, P2, L_GOOD, 1, 1u << 1,
      RS_STATUS_BAD_PARAM },
    { "flags-bit-31", K_ODP, 0, P2, L_GOOD, 1, 1u << 31,
      RS_STATUS_BAD_PARAM },
    { "flags-before-align", K_ODP, 7, P2 + 8, L_GOOD, 0, 3,
      RS_STATUS_BAD_PARAM },
    { "va-misaligned-8", K_ODP, 0, P2 + 8, L_GOOD, 1, 0,
      RS_STATUS_BAD_ALIGN },
    { "va-misaligned-2048", K_ODP, 0, P2 + 2048, L_GOOD, 1, 0,
      RS_STATUS_BAD_ALIGN },
    { "align-before-size", K_ODP, 7, P2 + 1, L_GOOD, 0, 0,
      RS_STATUS_BAD_ALIGN },
    { "npages-0", K_ODP, 0, P2, L_GOOD, 0, 0, RS_STATUS_BAD_SIZE },
    { "npages-513", K_ODP, 0, P2, L_GOOD, 513, 0, RS_STATUS_BAD_SIZE },
    { "before-region", K_ODP, 0, -(int64_t)PAGE, L_GOOD, 1, 0,
      RS_STATUS_BAD_SIZE },
    { "va-0", K_ODP, 0, -(int64_t)ODP_VA, L_GOOD, 1, 0,
      RS_STATUS_BAD_SIZE },
    { "past-region", K_ODP, 0, ODP_PAGES * (int64_t)PAGE, L_GOOD, 1, 0,
      RS_STATUS_BAD_SIZE },
    { "straddles-end", K_ODP, 0, (ODP_PAGES - 1) * (int64_t)PAGE, L_GOOD,
      2, 0, RS_STATUS_BAD_SIZE },
    { "fail-straddles-end", K_ODP, 0, (ODP_PAGES - 1) * (int64_t)PAGE,
      L_NONE, 2, RS_ODP_RESOLVE_F_FAIL, RS_STATUS_BAD_SIZE },
    { "fail-npages-0", K_ODP, 0, P2, L_NONE, 0, RS_ODP_RESOLVE_F_FAIL,
      RS_STATUS_BAD_SIZE },
    { "size-before-seq", K_ODP, 7, ODP_PAGES * (int64_t)PAGE, L_GOOD, 1,
      0, RS_STATUS_BAD_SIZE },
    { "seq-ahead", K_ODP, 1, P2, L_GOOD, 1, 0, RS_STATUS_STALE },
    { "seq-behind", K_ODP, UINT32_MAX, P2, L_GOOD, 1, 0, RS_STATUS_STALE },
    { "seq-before-list", K_ODP, 1, P2, L_MISALIGNED, 1, 0,
      RS_STATUS_STALE },
    { "seq-before-fail-checks", K_ODP, 1, P2, L_GOOD, 1,
      RS_ODP_RESOLVE_F_FAIL, RS_STATUS_STALE },
    { "fail-with-list", K_ODP, 0, P2, L_GOOD, 1, RS_ODP_RESOLVE_F_FAIL,
      RS_STATUS_BAD_PARAM },
    { "fail-with-misaligned-list", K_ODP, 0, P2, L_MISALIGNED, 1,
      RS_ODP_RESOLVE_F_FAIL, RS_STATUS_BAD_PARAM },
    { "list-misaligned", K_ODP, 0, P2, L_MISALIGNED, 1, 0,
      RS_STATUS_BAD_ALIGN },
    { "list-at-0", K_ODP, 0, P2, L_NONE, 1, 0, RS_STATUS_BAD_ADDR },
    { "list-not-ram", K_ODP, 0, P2, L_FAR, 1, 0, RS_STATUS_BAD_ADDR },
    { "list-past-ram-end", K_ODP, 0, P2, L_RAM_END, 2, 0,
      RS_STATUS_BAD_ADDR },
    { "list-in-bar", K_ODP, 0, P2, L_BAR, 1, 0, RS_STATUS_BAD_ADDR },
    { "entry-bit-2", K_ODP, 0, P2, L_BIT2, 1, 0, RS_STATUS_BAD_ADDR },
    { "entry-bit-11", K_ODP, 0, P2, L_BIT11, 1, 0, RS_STATUS_BAD_ADDR },
    { "entry-write-without-read", K_ODP, 0, P2, L_WRITE_ONLY, 1, 0,
      RS_STATUS_BAD_ADDR },
    { "entry-not-ram", K_ODP, 0, P2, L_PAGE_FAR, 1, 0, RS_STATUS_BAD_ADDR },
    { "entry-past-ram-end", K_ODP, 0, P2, L_PAGE_RAM_END, 1, 0,
      RS_STATUS_BAD_ADDR },
    { "entry-in-bar", K_ODP, 0, P2, L_PAGE_BAR, 1, 0, RS_STATUS_BAD_ADDR },
    { "good-then-bad", K_ODP, 0, P2, L_GOOD_BAD, 2, 0, RS_STATUS_BAD_ADDR },
    { "bad-then-good", K_ODP, 0, P2 - PAGE, L_BAD_GOOD, 2, 0,
      RS_STATUS_BAD_ADDR },
};

typedef struct InvalRow {
    const char *name;
    uint8_t key;
    uint32_t rsvd;
    int64_t va;                 /* from ODP_VA, or absolute if abs */
    bool abs;
    uint64_t length;
    uint8_t status;
} InvalRow;

static const InvalRow inval_rows[] = {
    { "key-0", K_ZERO, 0, 0, false, PAGE, RS_STATUS_BAD_HANDLE },
    { "key-not-odp", K_PLAIN, 0, 0, false, PAGE, RS_STATUS_BAD_HANDLE },
    { "key-deregistered", K_STALE, 0, 0, false, PAGE,
      RS_STATUS_BAD_HANDLE },
    { "key-other-tag", K_TAG, 0, 0, false, PAGE, RS_STATUS_BAD_HANDLE },
    { "key-before-rsvd", K_TAG, 1, 0, false, 0, RS_STATUS_BAD_HANDLE },
    { "rsvd", K_ODP, 1, 0, false, PAGE, RS_STATUS_BAD_PARAM },
    { "rsvd-before-size", K_ODP, 0x80000000u, 0, false, 0,
      RS_STATUS_BAD_PARAM },
    { "length-0", K_ODP, 0, 0, false, 0, RS_STATUS_BAD_SIZE },
    { "past-2^64", K_ODP, 0, (int64_t)(UINT64_MAX - PAGE + 1), true,
      2 * PAGE, RS_STATUS_BAD_SIZE },
    { "length-max", K_ODP, 0, 0, false, UINT64_MAX, RS_STATUS_BAD_SIZE },
};

typedef struct BadFix {
    uint32_t key[K_COUNT];
    uint64_t list[L_COUNT];
} BadFix;

static void bad_fix(Pair *pr, BadFix *f, uint32_t key)
{
    Peer *b = &pr->p[1];
    QRdmaSession *d = b->d;
    uint64_t bad[2] = { FAR_ADDR | ODP_RO, (b->buf + 0x2000) | ODP_RW };
    uint64_t e[1024] = { 0 };
    uint32_t stale;
    int i;

    f->key[K_ODP] = key;
    f->key[K_ZERO] = 0;
    f->key[K_PLAIN] = b->key[0];
    stale = odp_mr(d, b->pd, ODP_VA, PAGE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, stale));
    f->key[K_STALE] = stale;
    f->key[K_TAG] = key ^ 0x5a;
    f->key[K_RANGE] = 0xffffff00u | (key & RS_MKEY_TAG_MASK);

    /*
     * A good list maps page 2 to guest page 0x2000 of B's buffer (page 3
     * to 0x3000); its tail leaves pages alone, long enough for 513.
     */
    e[0] = (b->buf + 0x2000) | ODP_RW;
    e[1] = (b->buf + 0x3000) | ODP_RW;
    f->list[L_GOOD] = odp_list(d, e, 1024);
    f->list[L_MISALIGNED] = f->list[L_GOOD] + 4;
    f->list[L_FAR] = FAR_ADDR;
    f->list[L_RAM_END] = ram_end(d) - 8;
    f->list[L_BAR] = d->bar0.addr;
    f->list[L_NONE] = 0;
    for (i = L_BIT2; i <= L_PAGE_BAR; i++) {
        static const uint64_t bits[] = {
            [L_BIT2] = ODP_RW | (1u << 2),
            [L_BIT11] = ODP_RO | (1u << 11),
            [L_WRITE_ONLY] = RS_ODP_PAGE_WRITE,
            [L_PAGE_FAR] = ODP_RW,
            [L_PAGE_RAM_END] = ODP_RW,
            [L_PAGE_BAR] = ODP_RO,
        };
        uint64_t page = b->buf + 0x4000;

        if (i == L_PAGE_FAR) {
            page = FAR_ADDR;
        } else if (i == L_PAGE_RAM_END) {
            page = ram_end(d);
        } else if (i == L_PAGE_BAR) {
            page = d->bar0.addr;
        }
        e[0] = page | bits[i];
        f->list[i] = odp_list(d, e, 1);
    }
    f->list[L_GOOD_BAD] = odp_list(d, (uint64_t[]) { bad[1], bad[0] }, 2);
    f->list[L_BAD_GOOD] = odp_list(d, bad, 2);
}

/*
 * The bad rows while the WRITE waits for page 2 (B has sent PAUSE and the
 * RNR NAK): each is refused and B sends nothing; the page faults of @ev's
 * kind that a STALE one brings are taken.
 */
static void resolve_bad_rows(Pair *pr, const BadFix *f, uint32_t key,
                             const struct rs_event *ev)
{
    Peer *b = &pr->p[1];
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(resolve_rows); i++) {
        const ResolveRow *r = &resolve_rows[i];

        g_test_message("ODP_RESOLVE %s", r->name);
        RS_ASSERT_STATUS(odp_resolve_at(b->d, f->key[r->key], r->seq,
                                        ODP_VA + r->va, f->list[r->pbl],
                                        r->npages, r->flags), r->status);
        /* Installed nothing, failed nothing: B says nothing to A. */
        g_usleep(2 * 1000);
        pair_pump(pr);
        g_assert_cmpuint(pr->nops[1], ==, 2);
        /* (a STALE one may make the access fault again) */
        drain_faults(b->d, ev);
    }
    for (i = 0; i < ARRAY_SIZE(inval_rows); i++) {
        const InvalRow *r = &inval_rows[i];

        g_test_message("ODP_INVALIDATE %s", r->name);
        RS_ASSERT_STATUS(odp_inval(b->d, f->key[r->key],
                                   r->abs ? r->va : ODP_VA + r->va,
                                   r->length, r->rsvd, NULL), r->status);
    }
    /* A page without READ (nor WRITE) is no entry the list may hold. */
    {
        uint64_t e = b->buf + 0x4000;

        RS_ASSERT_STATUS(odp_resolve(b->d, key, 0, ODP_VA + 9 * PAGE, &e, 1),
                         RS_STATUS_BAD_ADDR);
    }
}

/*
 * Every bad ODP_RESOLVE and ODP_INVALIDATE while a WRITE waits for page 2
 * of B's region: each is refused with the status of the first check it
 * fails, in the spec's order, and installs nothing (the WRITE goes on
 * waiting: no RESUME, nothing written); resolving with a page list of
 * zeros leaves the page unmapped; after an invalidation an old count is
 * STALE and the access faults again; the right count maps the page.
 */
static void test_odp_resolve_bad(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_attr attr;
    struct rs_device_stats st;
    struct rs_event ev;
    int64_t pause_ns;
    uint32_t key, psn = pair_psn[0];
    unsigned nb;
    BadFix f;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_query_device(b->d, &attr);
    g_assert_cmphex(attr.caps & RS_CAP_ODP, ==, RS_CAP_ODP);
    g_assert_cmpuint(attr.max_odp_pages, ==, 16384);
    odp_rc(&pr, q);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    bad_fix(&pr, &f, key);

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf + 0x300, 100,
                  a->key[0], ODP_VA + P2 + 0x10, key);
    ev = expect_fault(&pr, 1, key, ODP_VA + P2, 1, 1, true);
    pause_ns = expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);

    resolve_bad_rows(&pr, &f, key, &ev);
    expect_paused(&pr, pause_ns);
    drain_faults(b->d, &ev);
    peer_check(b);

    /* Zeros leave page 2 as it is, unmapped: the WRITE still waits. */
    {
        uint64_t zero[2] = { 0, 0 };

        RS_ASSERT_OK(odp_resolve(b->d, key, 0, ODP_VA + P2, zero, 2));
    }
    odp_step(&pr, 5 * ODP_MS);
    pair_cq_empty(&pr, 0);
    drain_faults(b->d, &ev);
    peer_check(b);

    /*
     * An invalidation elsewhere: a list the driver built before it is
     * STALE, installs nothing, and the WRITE faults again.
     */
    odp_inval_ok(b->d, key, ODP_VA + 9 * PAGE, PAGE, 1);
    RS_ASSERT_STATUS(odp_resolve_at(b->d, key, 0, ODP_VA + P2,
                                    f.list[L_GOOD], 1, 0), RS_STATUS_STALE);
    ev = expect_refault(&pr, 1, key, ODP_VA + P2, 1, 1, true);
    drain_faults(b->d, &ev);
    pair_cq_empty(&pr, 0);
    peer_check(b);

    /* The right count: page 2 is B's 0x2000, and the WRITE lands. */
    nb = pr.nops[1];
    RS_ASSERT_OK(odp_resolve_at(b->d, key, 1, ODP_VA + P2, f.list[L_GOOD],
                                1, 0));
    odp_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    g_assert_cmpuint(pr.nops[1], >, nb);
    img_move(b, 0x2010, a, 0x300, 100);
    peer_check(b);
    drain_faults(b->d, &ev);

    odp_stats(b->d, &st);
    g_assert_cmpuint(st.odp_invalidations, ==, 1);
    g_assert_cmpuint(st.odp_resolved_pages, >=, 1);
    g_assert_cmpuint(st.odp_fault_fails, ==, 0);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* ODP_INVALIDATE                                                     */
/* ------------------------------------------------------------------ */

/*
 * An invalidation in the middle of a WRITE of three pages (twelve
 * packets, the first at @psn): the first five packets have landed in the
 * old pages; the sixth faults on page 1; resolved to new pages, the rest
 * lands there and nothing more in the old ones.  The count is 3 before.
 */
static void invalidate_mid_write(Pair *pr, LoopQp *q, uint32_t key,
                                 uint32_t psn)
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    int64_t pause_ns;
    GByteArray *f;
    unsigned i, k;

    /* The whole region, then pages 0 - 2 again to B's 0x0000 - 0x2fff. */
    odp_inval_ok(b->d, key, ODP_VA, ODP_PAGES * PAGE, 4);
    odp_map(b->d, key, 4, ODP_VA, b->buf, 3, ODP_RW);
    peer_fill(a, 0x1000, 3 * PAGE, 0x33);

    /* Twelve packets held at the switch; the first five go through. */
    pair_log_reset(pr);
    pr->hold[0] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa5, a->buf + 0x1000,
                  3 * PAGE, a->key[0], ODP_VA, key);
    pair_wait_frames(pr, 0, 12);
    for (i = 0; i < 5; i++) {
        f = g_queue_pop_head(&pr->held[0]);
        pair_inject(pr, 1, f->data, f->len);
        g_byte_array_unref(f);
    }
    img_move(b, 0, a, 0x1000, PAGE + 1024);
    peer_wait_range(pr, 1, 0, PAGE + 1024);

    /* Pages 1 and 2 go; then the rest of the WRITE reaches B. */
    odp_inval_ok(b->d, key, ODP_VA + PAGE, 2 * PAGE, 5);
    pair_release(pr, 0);
    expect_fault(pr, 1, key, ODP_VA + PAGE, 1, 2, true);
    i = wait_op(pr, 1, OP_ODP_PAUSE);
    for (k = 0; k < i; k++) {
        g_assert_cmphex(pr->op[1][k], ==, OP_ACK);
        g_assert_cmphex(pr->syn[1][k], ==, AETH_ACK);
    }
    pause_ns = expect_pause(pr, 1, i, psn + 5, ODP_MIN_RNR);
    expect_paused(pr, pause_ns);
    peer_check(b);

    /* New pages: B's 0x4000 and 0x5000. */
    odp_map(b->d, key, 5, ODP_VA + PAGE, b->buf + 0x4000, 2, ODP_RW);
    expect_resume(pr, 1, i + 2, psn + 5);
    odp_expect_cqe(pr, 0, 0xa5, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0x4000 + 1024, a, 0x2000 + 1024, PAGE - 1024);
    img_move(b, 0x5000, a, 0x3000, PAGE);
    peer_check(b);
}

/*
 * After ODP_INVALIDATE of a page, a WRITE to it faults again and one to
 * the pages around it does not; a range outside the region is counted
 * and drops nothing.  An invalidation in the middle of a WRITE of three
 * pages (twelve packets): the first five packets have landed in the old
 * pages; the sixth faults on page 1; resolved to new pages, the rest lands
 * there and nothing more in the old ones.
 */
static void test_odp_invalidate(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_stats st;
    uint32_t key, psn = pair_psn[0];
    int64_t pause_ns;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    odp_map(b->d, key, 0, ODP_VA, b->buf, 4, ODP_RW);

    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf + 0x100, 100,
                  a->key[0], ODP_VA + PAGE + 0x20, key);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x1020, a, 0x100, 100);
    peer_check(b);
    psn++;

    /* Drop page 1 (the range touches it only). */
    odp_inval_ok(b->d, key, ODP_VA + PAGE + 0x10, 16, 1);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x200, 200,
                  a->key[0], ODP_VA + 0xf00, key);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, a->buf + 0x300, 200,
                  a->key[0], ODP_VA + 2 * PAGE + 0x100, key);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    expect_no_event(b->d);
    expect_no_op(&pr, 1, OP_ODP_PAUSE);
    img_move(b, 0xf00, a, 0x200, 200);
    img_move(b, 0x2100, a, 0x300, 200);
    peer_check(b);
    psn += 2;

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa3, a->buf + 0x400, 100,
                  a->key[0], ODP_VA + PAGE + 0x40, key);
    expect_fault(&pr, 1, key, ODP_VA + PAGE, 1, 1, true);
    pause_ns = expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);
    expect_paused(&pr, pause_ns);
    /* The old count is stale now. */
    RS_ASSERT_STATUS(odp_resolve(b->d, key, 0, ODP_VA + PAGE,
                                 (uint64_t[]) { (b->buf + 0x5000) | ODP_RW },
                                 1), RS_STATUS_STALE);
    expect_refault(&pr, 1, key, ODP_VA + PAGE, 1, 1, true);
    odp_map(b->d, key, 1, ODP_VA + PAGE, b->buf + 0x5000, 1, ODP_RW);
    odp_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0x5040, a, 0x400, 100);
    peer_check(b);
    psn++;
    {
        struct rs_event ev;

        while (qrs_aeq_poll(b->d, &ev, 0)) {
            assert_fault(&ev, key, ODP_VA + PAGE, 1, 1, true);
        }
    }

    /* Outside the region: counted, drops nothing. */
    odp_inval_ok(b->d, key, ODP_VA + 100 * PAGE, PAGE, 2);
    odp_inval_ok(b->d, key, ODP_VA - 4 * PAGE, 2 * PAGE, 3);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa4, a->buf + 0x500, 100,
                  a->key[0], ODP_VA + PAGE + 0x80, key);
    pair_expect_cqe(&pr, 0, 0xa4, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    expect_no_event(b->d);
    img_move(b, 0x5080, a, 0x500, 100);
    peer_check(b);
    psn++;

    invalidate_mid_write(&pr, q, key, psn);

    odp_stats(b->d, &st);
    g_assert_cmpuint(st.odp_invalidations, ==, 5);
    g_assert_cmpuint(st.odp_fault_fails, ==, 0);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

static void *odp_small_table_before(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rdma-session.odp-pages=64 ");
    return pair_before(cmd_line, arg);
}

/*
 * A table of 64 entries (odp-pages=64): 512 pages installed at once
 * leave at most 64; a WRITE of eight of the first pages faults on those
 * the device forgot, and the driver answers each fault as any other.
 */
static void test_odp_evict(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_attr attr;
    struct rs_device_stats st;
    g_autofree uint64_t *e = g_new(uint64_t, 512);
    struct rs_event ev;
    struct rs_cqe cqe;
    uint32_t key, k, faults = 0;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_query_device(b->d, &attr);
    g_assert_cmpuint(attr.max_odp_pages, ==, 64);
    odp_connect(&pr, q, RS_QPT_RC, 7, 7, ODP_MIN_RNR);
    key = odp_mr(b->d, b->pd, 0, 0);
    for (k = 0; k < 512; k++) {
        e[k] = (b->buf + (k % 8) * PAGE) | ODP_RW;
    }
    RS_ASSERT_OK(odp_resolve(b->d, key, 0, ODP_IVA, e, 512));

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf, PAIR_BUF,
                  a->key[0], ODP_IVA, key);
    while (!odp_poll(&pr, 0, &cqe, ODP_MS, ODP_MS)) {
        while (qrs_aeq_poll(b->d, &ev, 0)) {
            g_assert_cmphex(ev.type, ==, RS_EV_ODP_PAGE_FAULT);
            g_assert_cmphex(ev.handle, ==, key);
            g_assert_cmphex(ev.data, >=, ODP_IVA);
            g_assert_cmphex(ev.data + ev.info * PAGE, <=, ODP_IVA + PAIR_BUF);
            g_assert_cmphex(ev.data % PAGE, ==, 0);
            for (k = 0; k < ev.info; k++) {
                e[k] = (b->buf + ((ev.data - ODP_IVA) / PAGE + k) % 8 * PAGE) |
                       ODP_RW;
            }
            RS_ASSERT_OK(odp_resolve(b->d, key, 0, ev.data, e, ev.info));
            faults++;
        }
        g_assert_cmpuint(faults, <, 100);
        pair_log_reset(&pr);
    }
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    g_test_message("%u faults for pages the table forgot", faults);
    g_assert_cmpuint(faults, >=, 1);
    img_move(b, 0, a, 0, PAIR_BUF);
    peer_check(b);
    odp_stats(b->d, &st);
    g_assert_cmpuint(st.odp_resolved_pages, >=, 512 + faults);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

/*
 * B's region has page 0 mapped, its count is 1 and a WRITE waits for page
 * 1 when both adapters migrate.  The destination posts the fault again;
 * the count came along (0 is STALE, 1 maps), the WRITE completes, and
 * page 0 is still mapped.
 */
static void test_odp_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_event ev;
    uint32_t key, psn = pair_psn[0];
    bool notice = false, fault = false;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_connect(&pr, q, RS_QPT_RC, 7, 7, ODP_MIN_RNR);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    odp_inval_ok(b->d, key, ODP_VA, ODP_PAGES * PAGE, 1);
    odp_map(b->d, key, 1, ODP_VA, b->buf + 0x2000, 1, ODP_RW);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf + 0x100, 200,
                  a->key[0], ODP_VA + 0x40, key);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x2040, a, 0x100, 200);
    psn++;

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x1000,
                  3000, a->key[0], ODP_VA + PAGE + 0x100, key);
    expect_fault(&pr, 1, key, ODP_VA + PAGE, 1, 1, true);
    expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);

    pair_migrate_raw(&pr);
    expect_event(a->d, RS_EV_MIGRATION_NOTICE, 1);
    while (!notice || !fault) {
        g_assert_true(qrs_aeq_poll(b->d, &ev, RS_QOS_TIMEOUT_US));
        if (ev.type == RS_EV_MIGRATION_NOTICE) {
            g_assert_false(notice);
            g_assert_cmphex(ev.handle, ==, 1);
            notice = true;
        } else {
            g_assert_false(fault);
            assert_fault(&ev, key, ODP_VA + PAGE, 1, 1, true);
            fault = true;
        }
    }
    pair_release(&pr, 0);
    pair_release(&pr, 1);
    pair_cq_empty(&pr, 0);

    RS_ASSERT_STATUS(odp_resolve(b->d, key, 0, ODP_VA + PAGE, (uint64_t[]) {
        (b->buf + 0x5000) | ODP_RW }, 1), RS_STATUS_STALE);
    odp_map(b->d, key, 1, ODP_VA + PAGE, b->buf + 0x5000, 1, ODP_RW);
    odp_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0x5100, a, 0x1000, 3000);
    peer_check(b);
    while (qrs_aeq_poll(b->d, &ev, 0)) {
        assert_fault(&ev, key, ODP_VA + PAGE, 1, 1, true);
    }

    /* Page 0 is still mapped. */
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, a->buf + 0x300, 100,
                  a->key[0], ODP_VA + 0x800, key);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    expect_no_event(b->d);
    expect_no_op(&pr, 1, OP_ODP_PAUSE);
    img_move(b, 0x2800, a, 0x300, 100);
    peer_check(b);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* Tearing down what a fault waits for                                */
/* ------------------------------------------------------------------ */

/*
 * What the spec leaves open, watched for hangs and crashes: the region
 * deregistered while a responder and a requester wait for its faults, and
 * a responder QP destroyed while it waits.  Each waiting WQE ends (its
 * status is logged; it cannot succeed), the key is gone for ODP_RESOLVE,
 * and a region registered after DEREG_MR has none of the old region's
 * translations (DEREG_MR drops them).
 */
static void test_odp_teardown(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_event ev;
    struct rs_cqe cqe;
    uint32_t key, lkey, psn = pair_psn[0];
    unsigned late = 0;
    LoopQp q[2], x[2], y[2];

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    odp_map(b->d, key, 0, ODP_VA + PAGE, b->buf + 0x1000, 1, ODP_RW);

    /* B's responder waits for page 0; the region goes. */
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf, 100,
                  a->key[0], ODP_VA + 0x10, key);
    expect_fault(&pr, 1, key, ODP_VA, 1, 1, true);
    expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, key));
    RS_ASSERT_STATUS(odp_fail(b->d, key, 0, ODP_VA, 1), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(odp_resolve(b->d, key, 0, ODP_VA, (uint64_t[]) {
        (b->buf + 0x2000) | ODP_RW }, 1), RS_STATUS_BAD_HANDLE);
    cqe = odp_next_cqe(&pr, 0);
    g_test_message("responder's region deregistered: A's WRITE -> status %u",
                   cqe.status);
    g_assert_cmphex(cqe.wr_id, ==, 0xa0);
    g_assert_cmpuint(cqe.status, !=, RS_WC_SUCCESS);
    while (qrs_aeq_poll(b->d, &ev, 0)) {
        g_test_message("B: event 0x%x for 0x%x", ev.type, ev.handle);
    }
    peer_check(b);

    /* A new region: the old one's page 1 is not translated any more. */
    odp_rc(&pr, x);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &x[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x200, 100,
                  a->key[0], ODP_VA + PAGE + 0x10, key);
    expect_fault(&pr, 1, key, ODP_VA + PAGE, 1, 1, true);
    odp_map(b->d, key, 0, ODP_VA + PAGE, b->buf + 0x3000, 1, ODP_RW);
    odp_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, x[0].qpn);
    img_move(b, 0x3010, a, 0x200, 100);
    peer_check(b);

    /* A's requester waits for its own region, which goes. */
    lkey = odp_mr(a->d, a->pd, ODP_LVA, ODP_PAGES * PAGE);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &x[0], RS_WR_RDMA_WRITE, 0xa2, ODP_LVA, 100, lkey,
                  b->buf + 0x10, b->key[0]);
    expect_fault(&pr, 0, lkey, ODP_LVA, 1, 1, false);
    RS_ASSERT_OK(qrs_destroy(a->d, RS_CMD_DEREG_MR, lkey));
    cqe = odp_next_cqe(&pr, 0);
    g_test_message("requester's region deregistered: the WRITE -> status %u",
                   cqe.status);
    g_assert_cmphex(cqe.wr_id, ==, 0xa2);
    g_assert_cmpuint(cqe.status, !=, RS_WC_SUCCESS);
    PAIR_EXPECT_NONE(&pr, 0);
    while (qrs_aeq_poll(a->d, &ev, 0)) {
        g_test_message("A: event 0x%x for 0x%x", ev.type, ev.handle);
    }

    /* B's QP goes while it waits; then nobody waits for the page. */
    odp_rc(&pr, y);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &y[0], RS_WR_RDMA_WRITE, 0xa3, a->buf + 0x300, 100,
                  a->key[0], ODP_VA + 4 * PAGE, key);
    expect_fault(&pr, 1, key, ODP_VA + 4 * PAGE, 1, 1, true);
    pair_wait_frames(&pr, 1, 2);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_QP, y[1].h));
    odp_step(&pr, 250 * ODP_MS);
    while (qrs_aeq_poll(b->d, &ev, 0)) {
        g_test_message("B: event 0x%x for 0x%x after DESTROY_QP", ev.type,
                       ev.handle);
        late++;
    }
    odp_map(b->d, key, 0, ODP_VA + 4 * PAGE, b->buf + 0x4000, 1, ODP_RW);
    odp_step(&pr, 10 * ODP_MS);
    g_test_message("%u events after DESTROY_QP", late);
    peer_check(b);
    {
        struct rs_qp_attr at;

        std_attr(&at, RS_QPS_RTS, RS_QPS_ERR);
        RS_ASSERT_OK(qrs_modify_qp(a->d, y[0].h, &at, RS_QP_ATTR_STATE));
    }
    cqe = odp_next_cqe(&pr, 0);
    g_assert_cmphex(cqe.wr_id, ==, 0xa3);
    g_assert_cmpuint(cqe.status, !=, RS_WC_SUCCESS);
    pair_teardown(&pr);
}

static void register_odp_tests(void)
{
    QOSGraphTestOptions objects = { .before = odp_objects_before };
    QOSGraphTestOptions off = { .before = odp_off_before };
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions small = { .before = odp_small_table_before };

    qos_add_test("odp/objects", "rdma-session", test_odp_objects, &objects);
    qos_add_test("odp/off", "rdma-session", test_odp_off, &off);
    rs_add_standalone_test("odp/resolve-bad", test_odp_resolve_bad, &pair);
    rs_add_standalone_test("odp/invalidate", test_odp_invalidate, &pair);
    rs_add_standalone_test("odp/evict", test_odp_evict, &small);
    rs_add_standalone_test("odp/migrate", test_odp_migrate, &pair);
    rs_add_standalone_test("odp/teardown", test_odp_teardown, &pair);
}

libqos_init(register_odp_tests);
