/*
 * rdma-session qtests: on-demand paging (ABI 1.4).  ODP regions and their
 * checks, ODP_RESOLVE and ODP_INVALIDATE, page faults of responders and
 * requesters between two adapters on a wire the test carries (A requests,
 * B responds, unless a test says otherwise), the page-fault pause on the
 * wire (PAUSE 0xc0 and RESUME 0xc1) and hostile copies of it, faults
 * that fail or time out, XRC targets, several faults at once, regions and
 * QPs torn down while a fault waits, QUERY_STATS, the translation table's
 * size and migration with a fault pending.  The test is the driver: it
 * takes ODP_PAGE_FAULT events from the event queue and answers them with
 * ODP_RESOLVE, or does not.
 *
 * Written from docs/specs/rdma-session.rst, "On-demand paging".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define ODP_MS          ((int64_t)1000000)  /* virtual ns */

/* B's explicit region: an I/O virtual range that is no guest address. */
#define ODP_VA          0x5a5a00000000ull
#define ODP_PAGES       16
/* A's explicit region (the requester's faults). */
#define ODP_LVA         0x3c3c00000000ull
/* Where the tests reach B's implicit region. */
#define ODP_IVA         0x7f1234560000ull

#define ODP_ACCESS      (STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC)
#define ODP_RW          (RS_ODP_PAGE_READ | RS_ODP_PAGE_WRITE)
#define ODP_RO          RS_ODP_PAGE_READ

/*
 * The responder's min_rnr_timer in the pause tests: code 26, 81.92 ms,
 * longer than the requester's tail loss probe (20 ms) and shorter than
 * the fault's re-post period (100 ms).
 */
#define ODP_MIN_RNR     26

/* How long a paused QP is watched at most, in virtual time. */
#define ODP_QUIET_NS    (60 * ODP_MS)

/* AETH of a NAK Remote Access Error. */
#define ODP_NAK_ACCESS  AETH_NAK_REM_ACCESS

/* ------------------------------------------------------------------ */
/* The driver's side of ODP                                           */
/* ------------------------------------------------------------------ */

/* IBTA's RNR timer codes (9.7.5.2.8), in ns. */
static int64_t rnr_timer_ns(uint8_t code)
{
    static const uint32_t ten_us[32] = {
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
        256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
        12288, 16384, 24576, 32768, 49152,
    };

    return ten_us[code & 31] * 10000LL;
}

static uint8_t odp_reg(QRdmaSession *d, uint32_t pd, uint8_t flags,
                       uint64_t iova, uint64_t len, uint32_t *key)
{
    struct rs_cmd_reg_mr c = {
        .iova = iova,
        .length = len,
        .pd = pd,
        .page_shift = 12,
        .flags = flags,
        .access = ODP_ACCESS,
    };
    uint32_t lkey = 0, rkey = 0;
    uint8_t st = qrs_reg_mr(d, &c, &lkey, &rkey);

    if (st == RS_STATUS_OK) {
        g_assert_cmphex(rkey, ==, lkey);
        g_assert_cmphex(lkey >> RS_MKEY_INDEX_SHIFT, !=, 0);
    }
    if (key) {
        *key = lkey;
    }
    return st;
}

/* An ODP region: explicit over [@iova, +@len), implicit if @len is 0. */
static uint32_t odp_mr(QRdmaSession *d, uint32_t pd, uint64_t iova,
                       uint64_t len)
{
    uint32_t key = 0;

    RS_ASSERT_OK(odp_reg(d, pd, RS_MR_F_ODP |
                         (len ? 0 : RS_MR_F_ODP_IMPLICIT), iova, len, &key));
    return key;
}

static uint8_t odp_resolve_at(QRdmaSession *d, uint32_t key, uint32_t seq,
                              uint64_t va, uint64_t pbl, uint32_t npages,
                              uint32_t flags)
{
    struct rs_cmd_odp_resolve c = {
        .key = key,
        .seq = seq,
        .va = va,
        .pbl_addr = pbl,
        .npages = npages,
        .flags = flags,
    };

    return qrs_admin_cmd(d, RS_CMD_ODP_RESOLVE, &c, sizeof(c), NULL, NULL);
}

/* A page list of the @n entries @e in guest memory. */
static uint64_t odp_list(QRdmaSession *d, const uint64_t *e, uint32_t n)
{
    uint64_t pbl = qrs_alloc_zeroed(d, MAX(n, 1) * 8);
    uint32_t i;

    for (i = 0; i < n; i++) {
        qtest_writeq(qrs_qts(d), pbl + i * 8, e[i]);
    }
    return pbl;
}

/* ODP_RESOLVE with the @n entries @e. */
static uint8_t odp_resolve(QRdmaSession *d, uint32_t key, uint32_t seq,
                           uint64_t va, const uint64_t *e, uint32_t n)
{
    uint64_t pbl = odp_list(d, e, n);
    uint8_t st = odp_resolve_at(d, key, seq, va, pbl, n, 0);

    guest_free(d->alloc, pbl);
    return st;
}

/* Map @n pages from @va to the guest pages from @pa on, with @rights. */
static void odp_map(QRdmaSession *d, uint32_t key, uint32_t seq,
                    uint64_t va, uint64_t pa, uint32_t n, uint64_t rights)
{
    g_autofree uint64_t *e = g_new(uint64_t, n);
    uint32_t i;

    for (i = 0; i < n; i++) {
        e[i] = (pa + (uint64_t)i * PAGE) | rights;
    }
    RS_ASSERT_OK(odp_resolve(d, key, seq, va, e, n));
}

static uint8_t odp_fail(QRdmaSession *d, uint32_t key, uint32_t seq,
                        uint64_t va, uint32_t npages)
{
    return odp_resolve_at(d, key, seq, va, 0, npages,
                          RS_ODP_RESOLVE_F_FAIL);
}

static uint8_t odp_inval(QRdmaSession *d, uint32_t key, uint64_t va,
                         uint64_t len, uint32_t rsvd, uint32_t *count)
{
    struct rs_cmd_odp_invalidate c = {
        .key = key,
        .rsvd = rsvd,
        .va = va,
        .length = len,
    };

    return qrs_admin_cmd(d, RS_CMD_ODP_INVALIDATE, &c, sizeof(c), NULL,
                         count);
}

/* ODP_INVALIDATE that must succeed with the key's count now @count. */
static void odp_inval_ok(QRdmaSession *d, uint32_t key, uint64_t va,
                         uint64_t len, uint32_t count)
{
    uint32_t got = ~0u;

    RS_ASSERT_OK(odp_inval(d, key, va, len, 0, &got));
    g_assert_cmpuint(got, ==, count);
}

static void odp_stats_get(QRdmaSession *d, struct rs_device_stats *s)
{
    uint64_t *v = (uint64_t *)s;
    size_t i;

    qtest_memset(qrs_qts(d), d->scratch, 0xee, sizeof(*s) + 8);
    RS_ASSERT_OK(query_at(d, RS_CMD_QUERY_STATS, 0, d->scratch,
                          sizeof(*s)));
    qtest_memread(qrs_qts(d), d->scratch, s, sizeof(*s));
    for (i = 0; i < sizeof(*s) / 8; i++) {
        v[i] = le64_to_cpu(v[i]);
    }
    /* 64 bytes, not one more. */
    g_assert_cmphex(qtest_readq(qrs_qts(d), d->scratch + sizeof(*s)), ==,
                    0xeeeeeeeeeeeeeeeeull);
}

static void odp_stats(QRdmaSession *d, struct rs_device_stats *s)
{
    odp_stats_get(d, s);
    g_test_message("stats: faults %" PRIu64 " resolved %" PRIu64
                   " invalidations %" PRIu64 " fails %" PRIu64
                   " pauses sent %" PRIu64 " rcvd %" PRIu64
                   " resumes rcvd %" PRIu64 " rnr naks rcvd %" PRIu64,
                   s->odp_faults, s->odp_resolved_pages,
                   s->odp_invalidations, s->odp_fault_fails,
                   s->odp_pauses_sent, s->odp_pauses_rcvd,
                   s->odp_resumes_rcvd, s->rnr_naks_rcvd);
}

/*
 * The next event of adapter @i, moving frames meanwhile and letting
 * @step_ns of virtual time pass per look; false if none came within the
 * usual timeout.
 */
static bool odp_event(Pair *pr, int i, struct rs_event *ev,
                      int64_t step_ns)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    do {
        pair_pump(pr);
        if (qrs_aeq_poll(pr->p[i].d, ev, 0)) {
            return true;
        }
        qtest_clock_step(qrs_qts(pr->p[i].d), step_ns);
    } while (g_get_monotonic_time() < end);
    return false;
}

static void assert_fault(const struct rs_event *ev, uint32_t key,
                         uint64_t page, unsigned min_pages,
                         unsigned max_pages, bool write)
{
    g_assert_cmphex(ev->type, ==, RS_EV_ODP_PAGE_FAULT);
    g_assert_cmphex(ev->handle, ==, key);
    g_assert_cmphex(ev->data, ==, page);
    g_assert_cmpuint(ev->info, >=, min_pages);
    g_assert_cmpuint(ev->info, <=, max_pages);
    g_assert_cmphex(ev->flags & RS_EQE_ODP_WRITE, ==,
                    write ? RS_EQE_ODP_WRITE : 0);
    g_assert_cmphex(ev->flags & ~(RS_EQE_PHASE | RS_EQE_ODP_WRITE), ==, 0);
}

/*
 * The next event of adapter @i is a page fault of @key at @page for
 * @min_pages to @max_pages pages (the pages to the end of the access: a
 * multi-packet request may be checked a packet at a time), writing or not;
 * @step_ns of virtual time pass per look.
 */
static struct rs_event expect_fault_step(Pair *pr, int i, int64_t step_ns,
                                         uint32_t key, uint64_t page,
                                         unsigned min_pages,
                                         unsigned max_pages, bool write)
{
    struct rs_event ev;

    if (!odp_event(pr, i, &ev, step_ns)) {
        g_error("adapter %c posted no page fault for 0x%" PRIx64,
                'A' + i, page);
    }
    assert_fault(&ev, key, page, min_pages, max_pages, write);
    return ev;
}

/* A fault that comes at once (1 us of virtual time per look). */
static struct rs_event expect_fault(Pair *pr, int i, uint32_t key,
                                    uint64_t page, unsigned min_pages,
                                    unsigned max_pages, bool write)
{
    return expect_fault_step(pr, i, 1000, key, page, min_pages, max_pages,
                             write);
}

/* A fault that may come when it is posted again (1 ms per look). */
static struct rs_event expect_refault(Pair *pr, int i, uint32_t key,
                                      uint64_t page, unsigned min_pages,
                                      unsigned max_pages, bool write)
{
    return expect_fault_step(pr, i, ODP_MS, key, page, min_pages,
                             max_pages, write);
}

/* Take the events of adapter @i: all page faults like @like; how many. */
static unsigned drain_faults(QRdmaSession *d, const struct rs_event *like)
{
    struct rs_event ev;
    unsigned n = 0;

    while (qrs_aeq_poll(d, &ev, 0)) {
        assert_fault(&ev, like->handle, like->data, like->info, like->info,
                     like->flags & RS_EQE_ODP_WRITE);
        n++;
    }
    return n;
}

/* Let @ns of virtual time pass, 1 ms at a time, moving frames. */
static void odp_step(Pair *pr, int64_t ns)
{
    int64_t step;

    for (; ns > 0; ns -= step) {
        step = MIN(ns, ODP_MS);
        qtest_clock_step(qrs_qts(pr->p[0].d), step);
        pair_pump(pr);
    }
}

/*
 * The next completion on adapter @i, letting @step_ns of virtual time
 * pass per look (timers that must fire); false if none came in @max_ns.
 */
static bool odp_poll(Pair *pr, int i, struct rs_cqe *cqe, int64_t step_ns,
                     int64_t max_ns)
{
    Peer *p = &pr->p[i];
    gint64 end = g_get_monotonic_time() + 4 * RS_QOS_TIMEOUT_US;
    int64_t waited = 0;

    for (pair_pump(pr); !eng_cq_peek(p->d, &p->cq, cqe); pair_pump(pr)) {
        if (waited >= max_ns) {
            return false;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(qrs_qts(p->d), step_ns);
        waited += step_ns;
    }
    p->cq.ci++;
    qrs_db_writel(p->d, 0, RS_DB_CQ_CI,
                  HINDEX(p->cq.h) | (p->cq.ci & 0xffff) << 16);
    return true;
}

/* The next completion on adapter @i, 1 ms of virtual time per look. */
static struct rs_cqe odp_next_cqe(Pair *pr, int i)
{
    struct rs_cqe cqe;

    if (!odp_poll(pr, i, &cqe, ODP_MS, 10000 * ODP_MS)) {
        g_error("adapter %c: no completion", 'A' + i);
    }
    return cqe;
}

static void odp_expect_cqe(Pair *pr, int i, uint64_t wr_id, uint8_t status,
                           uint8_t opcode, uint32_t qpn)
{
    struct rs_cqe cqe;

    if (!odp_poll(pr, i, &cqe, ODP_MS, 5000 * ODP_MS)) {
        g_error("no completion of WR 0x%" PRIx64 " on adapter %c", wr_id,
                'A' + i);
    }
    assert_cqe(&cqe, wr_id, status, opcode, qpn);
}

/*
 * Frames @at and @at + 1 from adapter @from since the log reset: a PAUSE
 * and an RNR NAK with the QP's min_rnr_timer @rnr, both at @psn.  Returns
 * the PAUSE's timer.
 */
static int64_t expect_pause(Pair *pr, int from, unsigned at, uint32_t psn,
                            uint8_t rnr)
{
    pair_wait_frames(pr, from, at + 2);
    g_assert_cmphex(pr->op[from][at], ==, OP_ODP_PAUSE);
    g_assert_cmphex(pr->psn[from][at], ==, psn & 0xffffff);
    g_assert_cmphex(pr->syn[from][at] & 0xe0, ==, AETH_RNR);
    g_assert_cmphex(pr->op[from][at + 1], ==, OP_ACK);
    g_assert_cmphex(pr->syn[from][at + 1], ==, AETH_RNR | rnr);
    g_assert_cmphex(pr->psn[from][at + 1], ==, psn & 0xffffff);
    g_test_message("PAUSE timer code %u", pr->syn[from][at] & 0x1f);
    return rnr_timer_ns(pr->syn[from][at] & 0x1f);
}

/* Frame @at from adapter @from: a RESUME for @psn. */
static void expect_resume(Pair *pr, int from, unsigned at, uint32_t psn)
{
    pair_wait_frames(pr, from, at + 1);
    g_assert_cmphex(pr->op[from][at], ==, OP_ODP_RESUME);
    g_assert_cmphex(pr->psn[from][at], ==, psn & 0xffffff);
    g_assert_cmphex(pr->syn[from][at], ==, AETH_ACK);
}

/* Until adapter @from has sent a frame @op: its index in the log. */
static unsigned wait_op(Pair *pr, int from, uint8_t op)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    unsigned i = 0;

    for (;;) {
        pair_pump(pr);
        for (; i < pr->nops[from]; i++) {
            if (pr->op[from][i] == op) {
                return i;
            }
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* No frame in the log of adapter @from has opcode @op. */
static void expect_no_op(Pair *pr, int from, uint8_t op)
{
    unsigned i;

    pair_pump(pr);
    for (i = 0; i < pr->nops[from]; i++) {
        g_assert_cmphex(pr->op[from][i], !=, op);
    }
}

/*
 * While a fault is pending, nothing moves: no frame in either direction
 * (no retransmission, no tail loss probe, no RNR retry) and no completion
 * while virtual time passes, up to half the PAUSE's timer @pause_ns.
 */
static void expect_paused(Pair *pr, int64_t pause_ns)
{
    int64_t ns = MIN(ODP_QUIET_NS, pause_ns / 2);
    unsigned n0, n1;

    if (ns < 30 * ODP_MS) {
        g_test_message("the PAUSE's timer is %" PRId64 " ns: the pause is "
                       "watched for %" PRId64 " ns only", pause_ns, ns);
    }
    pair_pump(pr);
    n0 = pr->nops[0];
    n1 = pr->nops[1];
    odp_step(pr, ns);
    g_usleep(10 * 1000);
    pair_pump(pr);
    g_assert_cmpuint(pr->nops[0], ==, n0);
    g_assert_cmpuint(pr->nops[1], ==, n1);
    pair_cq_empty(pr, 0);
    pair_cq_empty(pr, 1);
}

/* A connected pair of @type with the retry attributes the test needs. */
static void odp_connect(Pair *pr, LoopQp q[2], uint8_t type,
                        uint8_t retry_cnt, uint8_t rnr_retry,
                        uint8_t min_rnr_timer)
{
    struct rs_qp_attr a;
    int i;

    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q[i], type, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
        gid_v4(a.ah.dgid, 10, 0, 0, !i + 1);
        memcpy(a.ah.dmac, pair_mac[!i], 6);
        a.dest_qp_num = q[!i].qpn;
        a.sq_psn = pair_psn[i];
        a.rq_psn = pair_psn[!i];
        a.timeout = PAIR_TIMEOUT;
        a.retry_cnt = retry_cnt;
        a.rnr_retry = rnr_retry;
        a.min_rnr_timer = min_rnr_timer;
        a.access_flags = ODP_ACCESS;
        eng_connect(pr->p[i].d, &q[i], type, &a, 0);
    }
}

/*
 * The pause tests' RC pair: A spends no RNR retry (rnr_retry 0) and one
 * retry, so that a pause it counts as either ends its WQE; B answers
 * with ODP_MIN_RNR.
 */
static void odp_rc(Pair *pr, LoopQp q[2])
{
    odp_connect(pr, q, RS_QPT_RC, 1, 0, ODP_MIN_RNR);
}

static void pair_post_sge(Pair *pr, int i, LoopQp *q, uint8_t op,
                          uint64_t wr_id, uint64_t addr, uint32_t len,
                          uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = lkey };

    pair_post(pr, i, q, op, wr_id, &sge, 1, raddr, rkey, 0);
}

static void pair_atomic(Pair *pr, LoopQp *q, uint8_t op, uint64_t wr_id,
                        uint64_t addr, uint32_t lkey, uint64_t raddr,
                        uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
    struct rs_sge sge = { .addr = addr, .length = 8, .lkey = lkey };
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = op,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .remote_addr = raddr,
        .rkey = rkey,
        .compare_add = compare_add,
        .swap = swap,
    };

    eng_post_send(pr->p[0].d, q, &w, &sge, 1);
}

/* Until the @len bytes at @off of peer @i are as expected. */
static void peer_wait_range(Pair *pr, int i, uint32_t off, uint32_t len)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    g_autofree uint8_t *got = g_malloc(len);
    Peer *p = &pr->p[i];

    for (;;) {
        pair_pump(pr);
        qtest_memread(qrs_qts(p->d), p->buf + off, got, len);
        if (!memcmp(got, p->img + off, len)) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

static void peer_set64(Peer *p, uint32_t off, uint64_t v)
{
    stq_le_p(p->img + off, v);
    qtest_writeq(qrs_qts(p->d), p->buf + off, v);
}

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
    g_assert_cmphex(attr.abi_version, ==, 0x00010004);
    g_assert_cmphex(qrs_readl(d, A_RS_VERSION), ==, 0x00010004);
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
/* The responder faults: the page-fault pause                         */
/* ------------------------------------------------------------------ */

/* The counters of a pause and its resume, on both adapters. */
static void expect_pause_stats(Pair *pr, uint64_t faults, uint64_t pages,
                               uint64_t pauses)
{
    struct rs_device_stats sa, sb;

    odp_stats(pr->p[0].d, &sa);
    odp_stats(pr->p[1].d, &sb);
    g_assert_cmpuint(sb.odp_faults, ==, faults);
    g_assert_cmpuint(sb.odp_resolved_pages, ==, pages);
    g_assert_cmpuint(sb.odp_invalidations, ==, 0);
    g_assert_cmpuint(sb.odp_fault_fails, ==, 0);
    g_assert_cmpuint(sb.odp_pauses_sent, ==, pauses);
    g_assert_cmpuint(sb.odp_pauses_rcvd, ==, 0);
    g_assert_cmpuint(sb.odp_resumes_rcvd, ==, 0);
    g_assert_cmpuint(sa.odp_faults, ==, 0);
    g_assert_cmpuint(sa.odp_pauses_sent, ==, 0);
    g_assert_cmpuint(sa.odp_pauses_rcvd, ==, pauses);
    g_assert_cmpuint(sa.odp_resumes_rcvd, ==, pauses);
    /* (whether the RNR NAK of a pause counts here, the spec leaves open) */
    g_assert_cmpuint(sa.rnr_naks_rcvd, <=, pauses);
}

/*
 * A WRITE of five packets into two pages B has no translation for: B
 * posts the fault (its first page, writing), sends PAUSE and an RNR NAK at
 * the WRITE's PSN and drops the rest; A sends nothing while it waits (no
 * retransmission, no tail loss probe); the driver maps the pages (apart,
 * out of order), B sends RESUME and A sends the WRITE again at once, which
 * lands in the mapped pages.  A second WRITE finds them mapped.
 */
static void test_odp_remote_write(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t key, psn = pair_psn[0];
    int64_t pause_ns;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf + 0x100, 5000,
                  a->key[0], ODP_VA + 0x800, key);
    expect_fault(&pr, 1, key, ODP_VA, 1, 2, true);
    pause_ns = expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);
    pair_wait_frames(&pr, 0, 5);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_MIDDLE,
                    OP_WRITE_MIDDLE, OP_WRITE_LAST);
    PAIR_EXPECT_OPS(&pr, 1, OP_ODP_PAUSE, OP_ACK);
    expect_paused(&pr, pause_ns);
    expect_no_event(b->d);
    peer_check(b);

    RS_ASSERT_OK(odp_resolve(b->d, key, 0, ODP_VA, (uint64_t[]) {
        (b->buf + 0x5000) | ODP_RW, (b->buf + 0x1000) | ODP_RW }, 2));
    expect_resume(&pr, 1, 2, psn);
    /* At once: no virtual time passes here. */
    pair_wait_frames(&pr, 0, 10);
    g_assert_cmphex(pr.op[0][5], ==, OP_WRITE_FIRST);
    g_assert_cmphex(pr.psn[0][5], ==, psn);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x5800, a, 0x100, 0x800);
    img_move(b, 0x1000, a, 0x100 + 0x800, 5000 - 0x800);
    peer_check(b);
    expect_no_op(&pr, 0, OP_ODP_PAUSE);

    /* Mapped now: no fault, no pause. */
    pair_log_reset(&pr);
    peer_fill(a, 0x2000, 3000, 0x17);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x2000,
                  3000, a->key[0], ODP_VA + 0x10, key);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    expect_no_event(b->d);
    expect_no_op(&pr, 1, OP_ODP_PAUSE);
    img_move(b, 0x5010, a, 0x2000, 3000);
    peer_check(b);

    expect_pause_stats(&pr, 1, 2, 1);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/*
 * READs through B's implicit region.  A READ of two pages B has no
 * translation for faults when it arrives (reading, not writing): PAUSE,
 * RNR NAK, nothing while paused; read-only pages suffice; after RESUME A
 * asks again at once.  Then a READ whose first page is mapped and second
 * is not: however B goes about it (a pause at once, or responses that stop
 * at the second page and a requester that asks again), the only fault is
 * the second page's and the READ completes with every byte.
 */
static void test_odp_remote_read(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t key, psn = pair_psn[0];
    struct rs_event ev;
    struct rs_cqe cqe;
    unsigned faults = 0, ms;
    int64_t pause_ns;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_connect(&pr, q, RS_QPT_RC, 7, 0, ODP_MIN_RNR);
    key = odp_mr(b->d, b->pd, 0, 0);

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa0, a->buf + 0x1000, 6000,
                  a->key[0], ODP_IVA + 0x300, key);
    expect_fault(&pr, 1, key, ODP_IVA, 1, 2, false);
    pause_ns = expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);
    PAIR_EXPECT_OPS(&pr, 0, OP_READ_REQ);
    expect_paused(&pr, pause_ns);
    peer_check(a);

    RS_ASSERT_OK(odp_resolve(b->d, key, 0, ODP_IVA, (uint64_t[]) {
        (b->buf + 0x6000) | ODP_RO, (b->buf + 0x4000) | ODP_RO }, 2));
    expect_resume(&pr, 1, 2, psn);
    pair_wait_frames(&pr, 0, 2);
    g_assert_cmphex(pr.op[0][1], ==, OP_READ_REQ);
    g_assert_cmphex(pr.psn[0][1], ==, psn);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn,
                    6000);
    img_move(a, 0x1000, b, 0x6300, 0xd00);
    img_move(a, 0x1d00, b, 0x4000, 6000 - 0xd00);
    peer_check(a);
    expect_pause_stats(&pr, 1, 2, 1);

    /* The first page mapped, the second not (after an invalidation). */
    odp_inval_ok(b->d, key, ODP_IVA, 2 * PAGE, 1);
    odp_map(b->d, key, 1, ODP_IVA, b->buf + 0x2000, 1, ODP_RO);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa1, a->buf + 0x3000, 8000,
                  a->key[0], ODP_IVA, key);
    for (ms = 0; !odp_poll(&pr, 0, &cqe, ODP_MS, ODP_MS); ms++) {
        g_assert_cmpuint(ms, <, 6000);
        while (qrs_aeq_poll(b->d, &ev, 0)) {
            assert_fault(&ev, key, ODP_IVA + PAGE, 1, 1, false);
            if (!faults++) {
                odp_map(b->d, key, 1, ODP_IVA + PAGE, b->buf + 0x7000, 1,
                        ODP_RO);
            }
        }
        if (pr.nops[0] > PAIR_OPS / 2 || pr.nops[1] > PAIR_OPS / 2) {
            pair_log_reset(&pr);
        }
    }
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 8000);
    g_assert_cmpuint(faults, >=, 1);
    img_move(a, 0x3000, b, 0x2000, PAGE);
    img_move(a, 0x4000, b, 0x7000, 8000 - PAGE);
    peer_check(a);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/*
 * An atomic on a page B has no translation for faults as a write; mapped
 * read-only it faults again as a write; mapped writable it executes once
 * and A gets the value before.  A compare-and-swap on the mapped page then
 * needs no fault.
 */
static void test_odp_remote_atomic(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    const uint64_t v = 0x1000000000000001ull, add = 0x0123456789abcdefull;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t key, psn = pair_psn[0];
    struct rs_event ev;
    struct rs_cqe cqe;
    int64_t pause_ns;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    peer_set64(b, 0x7008, v);

    pair_log_reset(&pr);
    pair_atomic(&pr, &q[0], RS_WR_ATOMIC_FETCH_ADD, 0xa0, a->buf + 0x40,
                a->key[0], ODP_VA + PAGE + 8, key, add, 0);
    expect_fault(&pr, 1, key, ODP_VA + PAGE, 1, 1, true);
    pause_ns = expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);
    PAIR_EXPECT_OPS(&pr, 0, OP_FETCH_ADD);
    expect_paused(&pr, pause_ns);
    peer_check(a);
    peer_check(b);

    /* Read-only is not enough for an atomic: it faults again, writing. */
    odp_map(b->d, key, 0, ODP_VA + PAGE, b->buf + 0x7000, 1, ODP_RO);
    if (!odp_event(&pr, 1, &ev, ODP_MS)) {
        g_error("no second fault after a read-only mapping");
    }
    assert_fault(&ev, key, ODP_VA + PAGE, 1, 1, true);
    pair_cq_empty(&pr, 0);
    peer_check(b);
    odp_map(b->d, key, 0, ODP_VA + PAGE, b->buf + 0x7000, 1, ODP_RW);
    if (!odp_poll(&pr, 0, &cqe, ODP_MS, 2000 * ODP_MS)) {
        g_error("the atomic did not complete");
    }
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_ATOMIC_FETCH_ADD, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 8);
    stq_le_p(a->img + 0x40, v);
    stq_le_p(b->img + 0x7008, v + add);
    drain_faults(b->d, &ev);
    peer_check(a);
    peer_check(b);

    /* Mapped writable now. */
    pair_log_reset(&pr);
    pair_atomic(&pr, &q[0], RS_WR_ATOMIC_CMP_SWP, 0xa1, a->buf + 0x48,
                a->key[0], ODP_VA + PAGE + 8, key, v + add, 7);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_ATOMIC_CMP_SWP,
                    q[0].qpn, 8);
    expect_no_event(b->d);
    PAIR_EXPECT_OPS(&pr, 1, OP_ATOMIC_ACK);
    stq_le_p(a->img + 0x48, v + add);
    stq_le_p(b->img + 0x7008, 7);
    peer_check(a);
    peer_check(b);

    /* ATOMIC WRITE into page 3, not mapped: a write fault, a pause. */
    pair_log_reset(&pr);
    {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xa2,
            .opcode = RS_WR_ATOMIC_WRITE,
            .flags = RS_WQE_F_SIGNALED,
            .remote_addr = ODP_VA + 3 * PAGE + 0x18,
            .rkey = key,
            .compare_add = 0x8877665544332211ull,
        };

        eng_post_send(a->d, &q[0], &w, NULL, 0);
    }
    expect_fault(&pr, 1, key, ODP_VA + 3 * PAGE, 1, 1, true);
    pause_ns = expect_pause(&pr, 1, 0, psn + 2, ODP_MIN_RNR);
    expect_paused(&pr, pause_ns);
    peer_check(b);
    odp_map(b->d, key, 0, ODP_VA + 3 * PAGE, b->buf + 0x2000, 1, ODP_RW);
    expect_resume(&pr, 1, 2, psn + 2);
    odp_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_ATOMIC_WRITE,
                   q[0].qpn);
    stq_le_p(b->img + 0x2018, 0x8877665544332211ull);
    peer_check(b);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/* A UD datagram from A's UD QP @q to B's @qpn: @len bytes at @off. */
static void pair_post_ud(Pair *pr, LoopQp *q, uint32_t ah, uint64_t wr_id,
                         uint32_t off, uint32_t len, uint32_t qpn)
{
    struct rs_sge sge = peer_sge(&pr->p[0], off, len);
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = RS_WR_SEND,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .ah = ah,
        .remote_qpn = qpn,
        .remote_qkey = STD_QKEY,
    };

    eng_post_send(pr->p[0].d, q, &w, &sge, 1);
}

/*
 * A SEND into an RC receive buffer in B's region: B faults (writing) and
 * pauses A without consuming the receive WQE; after the resolve the SEND
 * lands.  A UD datagram into such a buffer is dropped (and the fault
 * posted); once mapped, the next datagram is received into the same WQE.
 */
static void test_odp_remote_send(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_cmd_create_ah ac;
    struct rs_sge rs[2];
    struct rs_cqe cqe;
    uint32_t key, ah, psn = pair_psn[0];
    uint8_t grh[40];
    bool grh_written;
    int64_t pause_ns;
    LoopQp q[2], u[2], c[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);

    pair_log_reset(&pr);
    rs[0] = (struct rs_sge) {
        .addr = ODP_VA + 2 * PAGE + 0xc00, .length = 3000, .lkey = key,
    };
    eng_post_recv(b->d, &q[1], 0xb0, rs, 1);
    pair_post_sge(&pr, 0, &q[0], RS_WR_SEND, 0xa0, a->buf + 0x200, 3000,
                  a->key[0], 0, 0);
    expect_fault(&pr, 1, key, ODP_VA + 2 * PAGE, 1, 2, true);
    pause_ns = expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);
    pair_wait_frames(&pr, 0, 3);
    expect_paused(&pr, pause_ns);
    peer_check(b);

    RS_ASSERT_OK(odp_resolve(b->d, key, 0, ODP_VA + 2 * PAGE, (uint64_t[]) {
        (b->buf + 0x3000) | ODP_RW, (b->buf + 0x6000) | ODP_RW }, 2));
    expect_resume(&pr, 1, 2, psn);
    pair_expect_cqe(&pr, 1, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 3000);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    img_move(b, 0x3c00, a, 0x200, 0x400);
    img_move(b, 0x6000, a, 0x200 + 0x400, 3000 - 0x400);
    peer_check(b);
    expect_pause_stats(&pr, 1, 2, 1);

    /* UD: the datagram is dropped while its buffer faults. */
    for (i = 0; i < 2; i++) {
        pair_qp(&pr, i, &u[i], RS_QPT_UD, pr.p[i].pd);
        qp_walk(pr.p[i].d, u[i].h, RS_QPT_UD, RS_QPS_RTS);
    }
    ah_template(&ac, a->pd, 0);
    memcpy(ac.dmac, pair_mac[1], 6);
    RS_ASSERT_OK(qrs_create_ah(a->d, &ac, &ah));
    rs[0] = peer_sge(b, 0x100, 40);
    rs[1] = (struct rs_sge) {
        .addr = ODP_VA + 5 * PAGE + 0x80, .length = 512, .lkey = key,
    };
    eng_post_recv(b->d, &u[1], 0xb1, rs, 2);
    pair_log_reset(&pr);
    pair_post_ud(&pr, &u[0], ah, 0xa1, 0x500, 300, u[1].qpn);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, u[0].qpn, 0);
    expect_fault(&pr, 1, key, ODP_VA + 5 * PAGE, 1, 1, true);
    PAIR_EXPECT_NONE(&pr, 1);
    pair_cq_empty(&pr, 1);
    /*
     * Dropped: not even the GRH area (the first SGE) is written.  (Checked
     * at the end, so that the rest runs either way.)
     */
    qtest_memread(qrs_qts(b->d), b->buf + 0x100, grh, sizeof(grh));
    grh_written = memcmp(grh, b->img + 0x100, sizeof(grh)) != 0;
    if (grh_written) {
        g_test_message("the dropped datagram wrote the GRH area");
        peer_dont_care(b, 0x100, 40);
    }
    peer_check(b);
    odp_map(b->d, key, 0, ODP_VA + 5 * PAGE, b->buf + 0x7000, 1, ODP_RW);
    pair_post_ud(&pr, &u[0], ah, 0xa2, 0x600, 300, u[1].qpn);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, u[0].qpn, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, u[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 40 + 300);
    peer_dont_care(b, 0x100, 40);
    img_move(b, 0x7080, a, 0x600, 300);
    peer_check(b);
    PAIR_EXPECT_NONE(&pr, 1);
    g_assert_cmpuint(qp_state(b->d, u[1].h), ==, RS_QPS_RTS);

    /* UC: a WRITE into page 6, not mapped, is dropped; the next lands. */
    odp_connect(&pr, c, RS_QPT_UC, 1, 0, 12);
    pair_post_sge(&pr, 0, &c[0], RS_WR_RDMA_WRITE, 0xa3, a->buf + 0x800, 1500,
                  a->key[0], ODP_VA + 6 * PAGE + 0x40, key);
    pair_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, c[0].qpn,
                    0);
    expect_fault(&pr, 1, key, ODP_VA + 6 * PAGE, 1, 1, true);
    PAIR_EXPECT_NONE(&pr, 1);
    peer_check(b);
    odp_map(b->d, key, 0, ODP_VA + 6 * PAGE, b->buf + 0x5000, 1, ODP_RW);
    pair_post_sge(&pr, 0, &c[0], RS_WR_RDMA_WRITE, 0xa4, a->buf + 0x900, 1500,
                  a->key[0], ODP_VA + 6 * PAGE + 0x40, key);
    pair_expect_cqe(&pr, 0, 0xa4, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, c[0].qpn,
                    0);
    img_move(b, 0x5040, a, 0x900, 1500);
    peer_wait_range(&pr, 1, 0x5040, 1500);
    peer_check(b);
    PAIR_EXPECT_NONE(&pr, 1);
    g_assert_cmpuint(qp_state(b->d, c[1].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    g_assert_false(grh_written);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* The requester faults                                               */
/* ------------------------------------------------------------------ */

/*
 * A's own region.  A SEND whose SGE A has no translation for faults (a
 * read) before its first packet: nothing leaves A, not even the WRITE
 * posted behind it, until the page is mapped (read-only suffices).  A READ
 * whose destination's second page is not mapped: the response for it is
 * dropped and the fault posted (a write); once mapped, A asks again from
 * the first byte not placed.  An atomic whose result lands in an unmapped
 * page: the response is dropped, and after the resolve the responder
 * answers the repeated request from its atomic resource: the add is done
 * once.
 */
static void test_odp_local(void *obj, void *data, QGuestAllocator *alloc)
{
    const uint64_t v = 0x4000000000000004ull, add = 0x10;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t lkey, akey, psn = pair_psn[0], placed, rpsn;
    struct rs_sge rs;
    const uint8_t *req;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    lkey = odp_mr(a->d, a->pd, ODP_LVA, ODP_PAGES * PAGE);
    akey = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF, ODP_ACCESS);

    /* SEND from A's region, a WRITE behind it. */
    pair_log_reset(&pr);
    rs = peer_sge(b, 0x1000, 2000);
    eng_post_recv(b->d, &q[1], 0xb0, &rs, 1);
    pair_post_sge(&pr, 0, &q[0], RS_WR_SEND, 0xa0, ODP_LVA + 0x100, 2000,
                  lkey, 0, 0);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x7000, 500,
                  a->key[0], b->buf + 0x5000, b->key[0]);
    expect_fault(&pr, 0, lkey, ODP_LVA, 1, 1, false);
    odp_step(&pr, ODP_QUIET_NS);
    PAIR_EXPECT_NONE(&pr, 0);
    PAIR_EXPECT_NONE(&pr, 1);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    odp_map(a->d, lkey, 0, ODP_LVA, a->buf + 0x3000, 1, ODP_RO);
    pair_expect_cqe(&pr, 1, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 2000);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    PAIR_EXPECT_OPS(&pr, 0, OP_SEND_FIRST, OP_SEND_LAST, OP_WRITE_ONLY);
    g_assert_cmphex(pr.psn[0][0], ==, psn);
    img_move(b, 0x1000, a, 0x3100, 2000);
    img_move(b, 0x5000, a, 0x7000, 500);
    peer_check(b);

    /* READ into pages 4 (mapped) and 5 (not) of A's region. */
    psn = (psn + 3) & 0xffffff;
    odp_map(a->d, lkey, 0, ODP_LVA + 4 * PAGE, a->buf + 0x5000, 1, ODP_RW);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa2, ODP_LVA + 4 * PAGE,
                  8000, lkey, b->buf + 0x100, b->key[0]);
    expect_fault(&pr, 0, lkey, ODP_LVA + 5 * PAGE, 1, 1, true);
    pair_wait_frames(&pr, 1, 8);
    odp_step(&pr, ODP_QUIET_NS);
    PAIR_EXPECT_OPS(&pr, 0, OP_READ_REQ);
    pair_cq_empty(&pr, 0);
    odp_map(a->d, lkey, 0, ODP_LVA + 5 * PAGE, a->buf + 0x6000, 1, ODP_RW);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn,
                    8000);
    g_assert_cmpuint(pr.nops[0], ==, 2);
    g_assert_cmphex(pr.op[0][1], ==, OP_READ_REQ);
    req = pr.last[0];
    placed = ldq_be_p(req + ROCE_EXT) - (b->buf + 0x100);
    g_test_message("the READ is asked again from byte %u", placed);
    g_assert_true(placed == 0 || placed == PAGE);
    rpsn = (psn + placed / 1024) & 0xffffff;
    g_assert_cmphex(pr.psn[0][1], ==, rpsn);
    g_assert_cmphex(ldl_be_p(req + ROCE_EXT + 8), ==, b->key[0]);
    g_assert_cmpuint(ldl_be_p(req + ROCE_EXT + 12), ==, 8000 - placed);
    img_move(a, 0x5000, b, 0x100, PAGE);
    img_move(a, 0x6000, b, 0x100 + PAGE, 8000 - PAGE);
    peer_check(a);

    /* An atomic's result into page 7, not mapped. */
    psn = (psn + 8) & 0xffffff;
    peer_set64(b, 0x208, v);
    pair_log_reset(&pr);
    pair_atomic(&pr, &q[0], RS_WR_ATOMIC_FETCH_ADD, 0xa3,
                ODP_LVA + 7 * PAGE + 0x10, lkey, b->buf + 0x208, akey, add, 0);
    expect_fault(&pr, 0, lkey, ODP_LVA + 7 * PAGE, 1, 1, true);
    pair_wait_frames(&pr, 1, 1);
    odp_step(&pr, ODP_QUIET_NS);
    PAIR_EXPECT_OPS(&pr, 0, OP_FETCH_ADD);
    pair_cq_empty(&pr, 0);
    odp_map(a->d, lkey, 0, ODP_LVA + 7 * PAGE, a->buf + 0x7000, 1, ODP_RW);
    pair_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_ATOMIC_FETCH_ADD,
                    q[0].qpn, 8);
    PAIR_EXPECT_OPS(&pr, 0, OP_FETCH_ADD, OP_FETCH_ADD);
    g_assert_cmphex(pr.psn[0][1], ==, psn);
    stq_le_p(a->img + 0x7010, v);
    stq_le_p(b->img + 0x208, v + add);
    peer_check(a);
    peer_check(b);

    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* Faults that fail: timeout, F_FAIL                                  */
/* ------------------------------------------------------------------ */

#define ODP_TIMEOUT_MS  350

static void *odp_timeout_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line, " -global rdma-session."
                           "odp-fault-timeout=%d ", ODP_TIMEOUT_MS);
    return pair_before(cmd_line, arg);
}

/*
 * Let virtual time pass 10 ms at a time until adapter @i completes a WQE
 * (@cqe), counting the page faults adapter @f posts, each like the first;
 * other events are left for the caller.  Returns the virtual ns waited.
 */
static int64_t odp_wait_fail(Pair *pr, int i, int f, struct rs_cqe *cqe,
                             const struct rs_event *like, unsigned *nfaults,
                             struct rs_event *other, bool *has_other)
{
    gint64 end = g_get_monotonic_time() + 2 * RS_QOS_TIMEOUT_US;
    int64_t waited = 0;
    struct rs_event ev;

    *has_other = false;
    for (;;) {
        while (qrs_aeq_poll(pr->p[f].d, &ev, 0)) {
            if (ev.type == RS_EV_ODP_PAGE_FAULT) {
                assert_fault(&ev, like->handle, like->data, like->info,
                             like->info, like->flags & RS_EQE_ODP_WRITE);
                ++*nfaults;
            } else {
                g_assert_false(*has_other);
                *other = ev;
                *has_other = true;
            }
        }
        if (eng_cq_peek(pr->p[i].d, &pr->p[i].cq, cqe)) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_assert_cmpint(waited, <, 3000 * ODP_MS);
        odp_step(pr, 10 * ODP_MS);
        waited += 10 * ODP_MS;
    }
    pr->p[i].cq.ci++;
    qrs_db_writel(pr->p[i].d, 0, RS_DB_CQ_CI, HINDEX(pr->p[i].cq.h) |
                  (pr->p[i].cq.ci & 0xffff) << 16);
    return waited;
}

/* B NAKed @psn with Remote Access Error once, and sent no RESUME. */
static void expect_access_nak(Pair *pr, uint32_t psn)
{
    unsigned i, naks = 0;

    pair_pump(pr);
    for (i = 0; i < pr->nops[1]; i++) {
        g_assert_cmphex(pr->op[1][i], !=, OP_ODP_RESUME);
        if (pr->op[1][i] == OP_ACK && pr->syn[1][i] == ODP_NAK_ACCESS) {
            g_assert_cmphex(pr->psn[1][i], ==, psn);
            naks++;
        }
    }
    g_assert_cmpuint(naks, ==, 1);
}

/*
 * Nobody answers the fault.  B's (a WRITE into its region): posted again
 * every 100 ms, four times in 350 ms (odp-fault-timeout=350); then B NAKs
 * with Remote Access Error, A's WRITE completes with REM_ACCESS_ERR (not
 * with an RNR or retry error: the pauses meanwhile cost A nothing) and
 * both QPs are in ERR.  A's own (a SEND from its region): the WQE
 * completes with LOC_PROT_ERR, the one behind it is flushed, nothing was
 * sent.
 */
static void test_odp_never_resolved(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_stats st;
    struct rs_event ev, other;
    struct rs_cqe cqe;
    uint32_t key, lkey, psn = pair_psn[0];
    unsigned nfaults = 1;
    int64_t waited;
    bool has_other;
    LoopQp q[2], x[2];
    struct rs_sge rs;

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    lkey = odp_mr(a->d, a->pd, ODP_LVA, ODP_PAGES * PAGE);

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf, 100,
                  a->key[0], ODP_VA + 0x10, key);
    ev = expect_fault(&pr, 1, key, ODP_VA, 1, 1, true);
    expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);
    waited = odp_wait_fail(&pr, 0, 1, &cqe, &ev, &nfaults, &other,
                           &has_other);
    g_test_message("remote: failed after %" PRId64 " ms, %u faults posted",
                   waited / ODP_MS, nfaults);
    assert_cqe(&cqe, 0xa0, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE, q[0].qpn);
    g_assert_cmpint(waited, >=, (ODP_TIMEOUT_MS - 10) * ODP_MS);
    g_assert_cmpuint(nfaults, ==, 4);
    expect_access_nak(&pr, psn);
    if (!has_other) {
        expect_event(b->d, RS_EV_QP_ACCESS_ERR, q[1].h);
    } else {
        g_assert_cmpuint(other.type, ==, RS_EV_QP_ACCESS_ERR);
        g_assert_cmphex(other.handle, ==, q[1].h);
    }
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
    drain_faults(b->d, &ev);
    peer_check(b);
    odp_stats(b->d, &st);
    g_assert_cmpuint(st.odp_fault_fails, ==, 1);
    g_assert_cmpuint(st.odp_faults, >=, 1);
    g_assert_cmpuint(st.odp_faults, <=, 4);
    g_assert_cmpuint(st.odp_resolved_pages, ==, 0);

    /* A's own. */
    odp_rc(&pr, x);
    pair_log_reset(&pr);
    rs = peer_sge(b, 0x1000, 2000);
    eng_post_recv(b->d, &x[1], 0xb1, &rs, 1);
    pair_post_sge(&pr, 0, &x[0], RS_WR_SEND, 0xa1, ODP_LVA + 3 * PAGE, 2000,
                  lkey, 0, 0);
    pair_post_sge(&pr, 0, &x[0], RS_WR_SEND, 0xa2, a->buf, 10, a->key[0], 0,
                  0);
    ev = expect_fault(&pr, 0, lkey, ODP_LVA + 3 * PAGE, 1, 1, false);
    nfaults = 1;
    waited = odp_wait_fail(&pr, 0, 0, &cqe, &ev, &nfaults, &other,
                           &has_other);
    g_test_message("local: failed after %" PRId64 " ms, %u faults posted",
                   waited / ODP_MS, nfaults);
    assert_cqe(&cqe, 0xa1, RS_WC_LOC_PROT_ERR, RS_WR_SEND, x[0].qpn);
    g_assert_cmpint(waited, >=, (ODP_TIMEOUT_MS - 10) * ODP_MS);
    g_assert_cmpuint(nfaults, ==, 4);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, x[0].qpn, 0);
    PAIR_EXPECT_NONE(&pr, 0);
    PAIR_EXPECT_NONE(&pr, 1);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(b->d, x[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 1);
    odp_stats(a->d, &st);
    g_assert_cmpuint(st.odp_fault_fails, ==, 1);
    if (has_other) {
        g_test_message("A posted event 0x%x for 0x%x with LOC_PROT_ERR",
                       other.type, other.handle);
    }
    peer_check(b);
    pair_teardown(&pr);
}

/*
 * ODP_RESOLVE with F_FAIL.  For a range the waiting access does not need:
 * nothing happens.  For its page: B NAKs with Remote Access Error, A's
 * WRITE completes with REM_ACCESS_ERR.  A SEND from A's region, and a READ
 * into it: LOC_PROT_ERR.
 */
static void test_odp_resolve_fail(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_stats st;
    uint32_t key, lkey, psn = pair_psn[0];
    struct rs_event ev;
    int64_t pause_ns;
    LoopQp q[2], x[2], y[2], z[2], v[2];

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    lkey = odp_mr(a->d, a->pd, ODP_LVA, ODP_PAGES * PAGE);

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf, 3000,
                  a->key[0], ODP_VA + 3 * PAGE + 0x10, key);
    expect_fault(&pr, 1, key, ODP_VA + 3 * PAGE, 1, 1, true);
    pause_ns = expect_pause(&pr, 1, 0, psn, ODP_MIN_RNR);
    RS_ASSERT_OK(odp_fail(b->d, key, 0, ODP_VA + 5 * PAGE, 2));
    expect_paused(&pr, pause_ns);
    RS_ASSERT_OK(odp_fail(b->d, key, 0, ODP_VA + 3 * PAGE, 1));
    odp_expect_cqe(&pr, 0, 0xa0, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE,
                   q[0].qpn);
    expect_access_nak(&pr, psn);
    expect_event(b->d, RS_EV_QP_ACCESS_ERR, q[1].h);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
    peer_check(b);
    odp_stats(b->d, &st);
    g_assert_cmpuint(st.odp_fault_fails, ==, 1);
    g_assert_cmpuint(st.odp_resolved_pages, ==, 0);

    /*
     * A READ of B's pages 7 (mapped) and 8 (not): whichever way B meets
     * the fault, failing it ends the READ with REM_ACCESS_ERR.
     */
    odp_rc(&pr, z);
    odp_map(b->d, key, 0, ODP_VA + 7 * PAGE, b->buf + 0x7000, 1, ODP_RO);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &z[0], RS_WR_RDMA_READ, 0xa3, a->buf, 6000,
                  a->key[0], ODP_VA + 7 * PAGE, key);
    expect_refault(&pr, 1, key, ODP_VA + 8 * PAGE, 1, 1, false);
    RS_ASSERT_OK(odp_fail(b->d, key, 0, ODP_VA + 8 * PAGE, 1));
    odp_expect_cqe(&pr, 0, 0xa3, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_READ,
                   z[0].qpn);
    expect_event(b->d, RS_EV_QP_ACCESS_ERR, z[1].h);
    g_assert_cmpuint(qp_state(b->d, z[1].h), ==, RS_QPS_ERR);
    peer_dont_care(a, 0, 6000);

    /* A SEND from A's region. */
    odp_rc(&pr, x);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &x[0], RS_WR_SEND, 0xa1, ODP_LVA + 0x20, 100,
                  lkey, 0, 0);
    expect_fault(&pr, 0, lkey, ODP_LVA, 1, 1, false);
    RS_ASSERT_OK(odp_fail(a->d, lkey, 0, ODP_LVA, 1));
    odp_expect_cqe(&pr, 0, 0xa1, RS_WC_LOC_PROT_ERR, RS_WR_SEND, x[0].qpn);
    PAIR_EXPECT_NONE(&pr, 0);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_ERR);

    /* A READ into A's region. */
    odp_rc(&pr, y);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &y[0], RS_WR_RDMA_READ, 0xa2, ODP_LVA + 6 * PAGE,
                  500, lkey, b->buf, b->key[0]);
    expect_fault(&pr, 0, lkey, ODP_LVA + 6 * PAGE, 1, 1, true);
    RS_ASSERT_OK(odp_fail(a->d, lkey, 0, ODP_LVA + 6 * PAGE, 1));
    odp_expect_cqe(&pr, 0, 0xa2, RS_WC_LOC_PROT_ERR, RS_WR_RDMA_READ,
                   y[0].qpn);
    g_assert_cmpuint(qp_state(a->d, y[0].h), ==, RS_QPS_ERR);
    odp_stats(a->d, &st);
    g_assert_cmpuint(st.odp_fault_fails, ==, 2);

    /*
     * A READ of 3 MiB from B's implicit region: the fault names at most
     * 512 pages; failing those ends the READ.
     */
    odp_rc(&pr, v);
    key = odp_mr(b->d, b->pd, 0, 0);
    lkey = alias_mr(a->d, a->pd, 0x40000000, a->buf + 0x7000, 3 * MiB);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &v[0], RS_WR_RDMA_READ, 0xa4, 0x40000000,
                  3 * MiB, lkey, ODP_IVA, key);
    ev = expect_fault(&pr, 1, key, ODP_IVA, 1, RS_ODP_RESOLVE_MAX_PAGES,
                      false);
    g_test_message("a READ of 768 pages faults for %u", ev.info);
    RS_ASSERT_OK(odp_fail(b->d, key, 0, ODP_IVA, ev.info));
    odp_expect_cqe(&pr, 0, 0xa4, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_READ,
                   v[0].qpn);
    expect_event(b->d, RS_EV_QP_ACCESS_ERR, v[1].h);
    odp_stats(b->d, &st);
    g_assert_cmpuint(st.odp_fault_fails, ==, 3);
    peer_dont_care(a, 0x7000, PAGE);
    peer_check(a);
    peer_check(b);
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

/* ------------------------------------------------------------------ */
/* odp-pause=off, hostile PAUSE and RESUME, the table's size          */
/* ------------------------------------------------------------------ */

#define ODP_OFF_RNR     24      /* 40.96 ms */

/*
 * odp-pause=off on B: its fault sends RNR NAKs only, A waits out each
 * (rnr_retry 7) and sends again; after the resolve the next retry goes
 * through.  No PAUSE or RESUME on the wire.
 */
static void test_odp_pause_off(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_stats sa, sb;
    struct rs_event ev;
    uint32_t key, psn = pair_psn[0];
    unsigned i;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_connect(&pr, q, RS_QPT_RC, 1, 7, ODP_OFF_RNR);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf + 0x100, 100,
                  a->key[0], ODP_VA + 0x10, key);
    ev = expect_fault(&pr, 1, key, ODP_VA, 1, 1, true);
    pair_wait_frames(&pr, 1, 1);
    odp_step(&pr, 100 * ODP_MS);
    drain_faults(b->d, &ev);
    pair_pump(&pr);
    g_test_message("in 100 ms A sent %u frames, B %u", pr.nops[0],
                   pr.nops[1]);
    g_assert_cmpuint(pr.nops[0], >=, 3);
    for (i = 0; i < pr.nops[1]; i++) {
        g_assert_cmphex(pr.op[1][i], ==, OP_ACK);
        g_assert_cmphex(pr.syn[1][i], ==, AETH_RNR | ODP_OFF_RNR);
        g_assert_cmphex(pr.psn[1][i], ==, psn);
    }
    for (i = 0; i < pr.nops[0]; i++) {
        g_assert_cmphex(pr.op[0][i], ==, OP_WRITE_ONLY);
        g_assert_cmphex(pr.psn[0][i], ==, psn);
    }
    pair_cq_empty(&pr, 0);

    odp_map(b->d, key, 0, ODP_VA, b->buf + 0x3000, 1, ODP_RW);
    odp_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    drain_faults(b->d, &ev);
    expect_no_op(&pr, 1, OP_ODP_PAUSE);
    expect_no_op(&pr, 1, OP_ODP_RESUME);
    img_move(b, 0x3010, a, 0x100, 100);
    peer_check(b);

    odp_stats(a->d, &sa);
    odp_stats(b->d, &sb);
    g_assert_cmpuint(sb.odp_pauses_sent, ==, 0);
    g_assert_cmpuint(sa.odp_pauses_rcvd, ==, 0);
    g_assert_cmpuint(sa.odp_resumes_rcvd, ==, 0);
    g_assert_cmpuint(sa.rnr_naks_rcvd, >=, 3);
    g_assert_cmpuint(sb.odp_faults, >=, 1);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/* A control frame to A from B, built on B's frame @tmpl: BTH, AETH. */
static GByteArray *ctl_frame(const GByteArray *tmpl, uint8_t op,
                             uint32_t dqpn, uint32_t psn, uint8_t syn,
                             size_t extra, bool no_aeth)
{
    size_t len = ROCE_EXT + (no_aeth ? 0 : 4) + extra + 4;
    GByteArray *f = g_byte_array_sized_new(len);

    g_byte_array_set_size(f, len);
    memset(f->data, 0, len);
    memcpy(f->data, tmpl->data, ROCE_EXT);
    f->data[ROCE_BTH] = op;
    f->data[ROCE_BTH + 1] &= 0xcf;      /* no pad */
    stl_be_p(f->data + ROCE_BTH + 4, dqpn & 0xffffff);
    stl_be_p(f->data + ROCE_BTH + 8, psn & 0xffffff);
    if (!no_aeth) {
        stl_be_p(f->data + ROCE_EXT, (uint32_t)syn << 24);
    }
    roce_reseal(f->data, len);
    return f;
}

static void inject(Pair *pr, GByteArray *f)
{
    pair_inject(pr, 0, f->data, f->len);
    g_byte_array_unref(f);
}

/* Give A time to take what was injected; no virtual time passes. */
static void settle(Pair *pr)
{
    g_usleep(20 * 1000);
    qtest_readl(qrs_qts(pr->p[0].d), pr->p[0].buf);
    pair_pump(pr);
}

/*
 * Until A has taken @n pauses in all: the PAUSE injected last is in
 * (QEMU reads the wire in order: what was injected before it is too).
 */
static void wait_pauses_rcvd(Pair *pr, uint64_t n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    struct rs_device_stats st;

    for (;;) {
        odp_stats_get(pr->p[0].d, &st);
        if (st.odp_pauses_rcvd >= n) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/*
 * Inject @f (@what), which A must drop: it sends nothing and completes
 * nothing because of it.
 */
static void inject_dropped(Pair *pr, GByteArray *f, const char *what)
{
    unsigned n = pr->nops[0];

    g_test_message("injected: %s", what);
    inject(pr, f);
    settle(pr);
    g_assert_cmpuint(pr->nops[0], ==, n);
    pair_cq_empty(pr, 0);
}

/*
 * PAUSE and RESUME from a peer that has no fault: for a QP with nothing
 * outstanding, for PSNs outside what A has outstanding, a RESUME for a QP
 * that is not paused, to a UD and a UC QP, to no QP, with no AETH or with
 * bytes after it: all dropped, A goes on sending.  A well-formed PAUSE for
 * A's outstanding WRITE pauses A (nothing sent, not the WQE behind it nor
 * a tail loss probe, and the RNR NAK after it costs no RNR retry); bad
 * RESUMEs leave it paused; the right RESUME makes it send again at once.
 */
typedef struct Hostile {
    Pair pr;
    LoopQp q[2], u[2], x[2];    /* RC, UD, UC */
    GByteArray *tmpl;           /* B's ACK: what the frames are made of */
    uint32_t psn;               /* A's next PSN on q */
} Hostile;

/* Nothing outstanding: PAUSE at the next PSN, an old one; RESUME. */
static void hostile_idle(Hostile *h)
{
    Pair *pr = &h->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h->q;
    GByteArray *tmpl = h->tmpl;
    uint32_t psn = h->psn;

    inject(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn, AETH_RNR, 0,
                          false));
    inject(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn - 1, AETH_RNR, 0,
                          false));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn, AETH_ACK, 0,
                          false));
    settle(pr);
    pair_log_reset(pr);
    pr->hold[1] = false;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x200, 100,
                  a->key[0], b->buf + 0x200, b->key[0]);
    pair_wait_frames(pr, 0, 1);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x200, a, 0x200, 100);
    psn++;
    h->psn = psn;
}

/*
 * A WRITE outstanding (its ACK held): PAUSEs outside the window, bad
 * lengths, a RESUME for a QP that is not paused, to other QPs; then the
 * next WRITE leaves at once.
 */
static void hostile_window(Hostile *h)
{
    Pair *pr = &h->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h->q, *u = h->u, *x = h->x;
    GByteArray *tmpl = h->tmpl;
    uint32_t psn = h->psn;

    pair_log_reset(pr);
    pr->hold[1] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, a->buf + 0x300, 100,
                  a->key[0], b->buf + 0x300, b->key[0]);
    pair_wait_frames(pr, 1, 1);
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn + 5,
                                 AETH_RNR, 0, false),
                   "PAUSE past the PSNs sent");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn - 10,
                                 AETH_RNR, 0, false),
                   "PAUSE before the PSNs outstanding");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn,
                                 psn + 0x800000, AETH_RNR, 0, false),
                   "PAUSE half the PSN space away");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn,
                                 AETH_RNR, 0, true),
                   "PAUSE without AETH");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn,
                                 AETH_RNR, 8, false),
                   "PAUSE with 8 bytes after the AETH");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn,
                                 AETH_RNR, 1, false),
                   "PAUSE with a byte after the AETH");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn,
                                 AETH_ACK, 0, false),
                   "RESUME for a QP that is not paused");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, x[0].qpn, pair_psn[0],
                                 AETH_RNR, 0, false),
                   "PAUSE to a UC QP");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, u[0].qpn, 0, AETH_RNR,
                                 0, false),
                   "PAUSE to a UD QP");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, 0xabcd, psn, AETH_RNR,
                                 0, false),
                   "PAUSE to no QP");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_RESUME, u[0].qpn, 0, AETH_ACK,
                                 0, false),
                   "RESUME to a UD QP");
    /* Not paused either: the next WRITE leaves at once. */
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY);
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa3, a->buf + 0x400, 100,
                  a->key[0], b->buf + 0x400, b->key[0]);
    pair_wait_frames(pr, 0, 2);
    g_assert_cmphex(pr->psn[0][1], ==, (psn + 1) & 0xffffff);
    pair_release(pr, 1);
    pair_expect_cqe(pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    pair_expect_cqe(pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x300, a, 0x300, 100);
    img_move(b, 0x400, a, 0x400, 100);
    psn += 2;
    h->psn = psn;
}

/*
 * A real pause of A's outstanding WRITE (its ACK lost), timer code 0
 * (655 ms), and the RNR NAK after it (A has no RNR retry to spend);
 * RESUMEs that are not it; the one that is.
 */
static void hostile_pause(Hostile *h)
{
    Pair *pr = &h->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h->q, *u = h->u;
    GByteArray *tmpl = h->tmpl;
    uint32_t psn = h->psn;
    struct rs_device_stats st;

    pair_log_reset(pr);
    pr->hold[1] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa4, a->buf + 0x500, 100,
                  a->key[0], b->buf + 0x500, b->key[0]);
    pair_wait_frames(pr, 1, 1);
    pair_forget(pr, 1);
    odp_stats_get(a->d, &st);
    inject(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn, AETH_RNR, 0,
                          false));
    inject(pr, ctl_frame(tmpl, OP_ACK, q[0].qpn, psn, AETH_RNR | 0, 0,
                          false));
    wait_pauses_rcvd(pr, st.odp_pauses_rcvd + 1);
    settle(pr);
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa5, a->buf + 0x600, 100,
                  a->key[0], b->buf + 0x600, b->key[0]);
    settle(pr);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY);
    /* RESUMEs that are not it: no AETH, too long, another PSN, UD. */
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn, AETH_ACK, 0,
                          true));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn, AETH_ACK, 8,
                          false));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn + 7, AETH_ACK,
                          0, false));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn - 3, AETH_ACK,
                          0, false));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, u[0].qpn, psn, AETH_ACK, 0,
                          false));
    settle(pr);
    /* 100 ms: past the tail loss probe, short of the PAUSE's timer. */
    odp_step(pr, 100 * ODP_MS);
    settle(pr);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY);
    pair_cq_empty(pr, 0);
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn, AETH_ACK, 0,
                          false));
    pair_wait_frames(pr, 0, 3);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY, OP_WRITE_ONLY, OP_WRITE_ONLY);
    g_assert_cmphex(pr->psn[0][1], ==, psn & 0xffffff);
    g_assert_cmphex(pr->psn[0][2], ==, (psn + 1) & 0xffffff);
    pair_expect_cqe(pr, 0, 0xa4, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    pair_expect_cqe(pr, 0, 0xa5, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x500, a, 0x500, 100);
    img_move(b, 0x600, a, 0x600, 100);
    h->psn = psn + 2;
}

/*
 * Like an RNR NAK, a PAUSE acknowledges the PSNs before its own: of two
 * outstanding WRITEs whose ACKs are lost, a PAUSE at the second completes
 * the first; the RESUME sends only the second again.
 */
static void hostile_ack(Hostile *h)
{
    Pair *pr = &h->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h->q;
    uint32_t psn = h->psn;

    pair_log_reset(pr);
    pr->hold[1] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa8, a->buf + 0x900, 100,
                  a->key[0], b->buf + 0x900, b->key[0]);
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa9, a->buf + 0xa00, 100,
                  a->key[0], b->buf + 0xa00, b->key[0]);
    pair_wait_frames(pr, 0, 2);
    pair_wait_frames(pr, 1, 1);
    settle(pr);
    pair_forget(pr, 1);
    inject(pr, ctl_frame(h->tmpl, OP_ODP_PAUSE, q[0].qpn, psn + 1, AETH_RNR,
                         0, false));
    pair_expect_cqe(pr, 0, 0xa8, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    settle(pr);
    pair_cq_empty(pr, 0);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY, OP_WRITE_ONLY);
    inject(pr, ctl_frame(h->tmpl, OP_ODP_RESUME, q[0].qpn, psn + 1, AETH_ACK,
                         0, false));
    pair_expect_cqe(pr, 0, 0xa9, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY, OP_WRITE_ONLY, OP_WRITE_ONLY);
    g_assert_cmphex(pr->psn[0][2], ==, (psn + 1) & 0xffffff);
    img_move(b, 0x900, a, 0x900, 100);
    img_move(b, 0xa00, a, 0xa00, 100);
    h->psn = psn + 2;
}

static void test_odp_hostile(void *obj, void *data, QGuestAllocator *alloc)
{
    Hostile h;
    Pair *pr = &h.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h.q, *u = h.u, *x = h.x;
    struct rs_cmd_create_ah ac;
    struct rs_device_stats sa;
    struct rs_sge rs[2];
    struct rs_cqe cqe;
    uint32_t ah;
    int i;

    pair_setup(pr, obj, data, alloc);
    odp_rc(pr, q);
    odp_connect(pr, x, RS_QPT_UC, 1, 0, 12);
    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &u[i], RS_QPT_UD, pr->p[i].pd);
        qp_walk(pr->p[i].d, u[i].h, RS_QPT_UD, RS_QPS_RTS);
    }
    ah_template(&ac, a->pd, 0);
    memcpy(ac.dmac, pair_mac[1], 6);
    RS_ASSERT_OK(qrs_create_ah(a->d, &ac, &ah));

    /* B's ACK of a WRITE: the template. */
    pr->hold[1] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf, 100,
                  a->key[0], b->buf + 0x100, b->key[0]);
    h.tmpl = pair_take(pr, 1);
    g_assert_cmphex(h.tmpl->data[ROCE_BTH], ==, OP_ACK);
    pair_inject(pr, 0, h.tmpl->data, h.tmpl->len);
    pair_expect_cqe(pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x100, a, 0, 100);
    h.psn = pair_psn[0] + 1;

    hostile_idle(&h);
    hostile_window(&h);
    hostile_pause(&h);
    hostile_ack(&h);

    /* UC and UD still carry data. */
    rs[0] = peer_sge(b, 0x1000, 40);
    rs[1] = peer_sge(b, 0x1100, 300);
    eng_post_recv(b->d, &u[1], 0xb0, rs, 2);
    pair_post_ud(pr, &u[0], ah, 0xa6, 0x700, 300, u[1].qpn);
    pair_expect_cqe(pr, 0, 0xa6, RS_WC_SUCCESS, RS_WR_SEND, u[0].qpn, 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, u[1].qpn);
    peer_dont_care(b, 0x1000, 40);
    img_move(b, 0x1100, a, 0x700, 300);
    rs[0] = peer_sge(b, 0x2000, 500);
    eng_post_recv(b->d, &x[1], 0xb1, rs, 1);
    pair_post_sge(pr, 0, &x[0], RS_WR_SEND, 0xa7, a->buf + 0x800, 500,
                  a->key[0], 0, 0);
    pair_expect_cqe(pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, x[1].qpn, 500);
    pair_expect_cqe(pr, 0, 0xa7, RS_WC_SUCCESS, RS_WR_SEND, x[0].qpn, 0);
    img_move(b, 0x2000, a, 0x800, 500);
    peer_check(b);

    odp_stats(a->d, &sa);
    g_assert_cmpuint(sa.odp_pauses_rcvd, >=, 1);
    g_assert_cmpuint(sa.odp_resumes_rcvd, >=, 1);
    expect_no_event(a->d);
    expect_no_event(b->d);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(a->d, u[0].h), ==, RS_QPS_RTS);
    g_byte_array_unref(h.tmpl);
    pair_teardown(pr);
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
/* XRC                                                                */
/* ------------------------------------------------------------------ */

/*
 * B's frames @at, @at + 1: PAUSE and the XRC RNR NAK at @psn.  Returns
 * the PAUSE's timer.
 */
static int64_t expect_xrc_pause(Pair *pr, unsigned at, uint32_t psn)
{
    pair_wait_frames(pr, 1, at + 2);
    g_assert_cmphex(pr->op[1][at], ==, OP_ODP_PAUSE);
    g_assert_cmphex(pr->psn[1][at], ==, psn & 0xffffff);
    g_assert_cmphex(pr->syn[1][at] & 0xe0, ==, AETH_RNR);
    g_assert_cmphex(pr->op[1][at + 1], ==, OP_XRC | OP_ACK);
    g_assert_cmphex(pr->syn[1][at + 1], ==, AETH_RNR | ODP_MIN_RNR);
    g_assert_cmphex(pr->psn[1][at + 1], ==, psn & 0xffffff);
    return rnr_timer_ns(pr->syn[1][at] & 0x1f);
}

/* A's XRC initiator q[0] and B's XRC target q[1] of domain @xrcd. */
static void odp_xrc_connect(Pair *pr, LoopQp q[2], uint32_t xrcd)
{
    Peer *a = &pr->p[0];
    struct rs_qp_attr at;
    int i;

    memset(q, 0, 2 * sizeof(*q));
    q[0].c.qp_type = RS_QPT_XRC_INI;
    q[0].c.pd = a->pd;
    q[0].c.send_cq = a->cq.h;
    q[0].c.sq_log_size = 4;
    q[0].c.max_send_sge = 4;
    q[0].c.max_inline = 64;
    q[0].c.sq_addr = qrs_alloc_zeroed(a->d, qrs_qp_sq_bytes(&q[0].c));
    q[1].c.qp_type = RS_QPT_XRC_TGT;
    q[1].c.xrcd = xrcd;
    for (i = 0; i < 2; i++) {
        q[i].h = new_qp(pr->p[i].d, &q[i].c);
        q[i].qpn = HINDEX(q[i].h);
    }
    for (i = 0; i < 2; i++) {
        std_attr(&at, RS_QPS_RESET, RS_QPS_RESET);
        gid_v4(at.ah.dgid, 10, 0, 0, !i + 1);
        memcpy(at.ah.dmac, pair_mac[!i], 6);
        at.dest_qp_num = q[!i].qpn;
        at.sq_psn = pair_psn[i];
        at.rq_psn = pair_psn[!i];
        at.timeout = PAIR_TIMEOUT;
        at.retry_cnt = 1;
        at.rnr_retry = 0;
        at.min_rnr_timer = ODP_MIN_RNR;
        at.access_flags = ODP_ACCESS;
        eng_connect(pr->p[i].d, &q[i], RS_QPT_RC, &at, 0);
    }
}

/*
 * An XRC target faults like an RC responder: a WRITE into B's region (an
 * R_Key of the XRC SRQ's PD) and a SEND into an XRC SRQ's receive buffer
 * in it each pause A's initiator (PAUSE, then the XRC RNR NAK) until the
 * resolve, then complete.
 */
static void test_odp_xrc(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_cmd_create_pd xc = { 0 };
    struct rs_cmd_create_srq sc;
    struct rs_send_wqe_ctrl w;
    struct rs_sge sge;
    struct rs_cqe cqe;
    uint32_t xrcd = 0, srq = 0, srq_pi = 0, key, psn = pair_psn[0];
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    RS_ASSERT_OK(qrs_admin_cmd(b->d, RS_CMD_CREATE_XRCD, &xc, sizeof(xc),
                               &xrcd, NULL));
    srq_template(b->d, &sc, b->pd, 4, 1);
    sc.xrcd = xrcd;
    sc.cq = b->cq.h;
    RS_ASSERT_OK(qrs_create_srq(b->d, &sc, &srq));
    odp_xrc_connect(&pr, q, xrcd);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);

    pair_log_reset(&pr);
    w = (struct rs_send_wqe_ctrl) {
        .wr_id = 0xa0,
        .opcode = RS_WR_RDMA_WRITE,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .remote_addr = ODP_VA + 0x20,
        .rkey = key,
        .xrc_srqn = HINDEX(srq),
    };
    sge = peer_sge(a, 0x100, 2000);
    eng_post_send(a->d, &q[0], &w, &sge, 1);
    expect_fault(&pr, 1, key, ODP_VA, 1, 1, true);
    expect_paused(&pr, expect_xrc_pause(&pr, 0, psn));
    odp_map(b->d, key, 0, ODP_VA, b->buf + 0x3000, 1, ODP_RW);
    expect_resume(&pr, 1, 2, psn);
    odp_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0x3020, a, 0x100, 2000);
    peer_check(b);

    /* A SEND into an XRC SRQ's receive buffer on page 2. */
    srq_post(b->d, &sc, srq, &srq_pi, 0xb0, ODP_VA + 2 * PAGE + 0x10, 1000,
             key);
    pair_log_reset(&pr);
    w.wr_id = 0xa1;
    w.opcode = RS_WR_SEND;
    w.remote_addr = 0;
    w.rkey = 0;
    sge = peer_sge(a, 0x1000, 1000);
    eng_post_send(a->d, &q[0], &w, &sge, 1);
    expect_fault(&pr, 1, key, ODP_VA + 2 * PAGE, 1, 1, true);
    expect_paused(&pr, expect_xrc_pause(&pr, 0, psn + 2));
    odp_map(b->d, key, 0, ODP_VA + 2 * PAGE, b->buf + 0x5000, 1, ODP_RW);
    expect_resume(&pr, 1, 2, psn + 2);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.srqn, ==, HINDEX(srq));
    g_assert_cmpuint(cqe.byte_len, ==, 1000);
    odp_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    img_move(b, 0x5010, a, 0x1000, 1000);
    peer_check(b);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* Several accesses waiting at once                                   */
/* ------------------------------------------------------------------ */

/*
 * Two QPs' responders wait for the same page of B's region: each posts
 * its fault and pauses its requester; one resolve lets both go on.  Then
 * one QP of A waits twice at once, as a requester (a SEND from A's region)
 * and as a responder (B's WRITE into another page of it): two faults, each
 * resolved on its own, and both transfers complete.
 */
static void test_odp_concurrent(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_event ev[2];
    uint32_t key, lkey;
    struct rs_sge rs;
    LoopQp q[2], x[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);
    odp_rc(&pr, x);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    lkey = odp_mr(a->d, a->pd, ODP_LVA, ODP_PAGES * PAGE);

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf, 100,
                  a->key[0], ODP_VA + 0x100, key);
    pair_post_sge(&pr, 0, &x[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x200, 100,
                  a->key[0], ODP_VA + 0x300, key);
    for (i = 0; i < 2; i++) {
        ev[i] = expect_fault(&pr, 1, key, ODP_VA, 1, 1, true);
    }
    pair_wait_frames(&pr, 1, 4);
    for (i = 0; i < 4; i++) {
        g_assert_cmphex(pr.op[1][i], ==, i % 2 ? OP_ACK : OP_ODP_PAUSE);
    }
    pair_cq_empty(&pr, 0);
    odp_map(b->d, key, 0, ODP_VA, b->buf + 0x4000, 1, ODP_RW);
    for (i = 0; i < 2; i++) {
        struct rs_cqe cqe = odp_next_cqe(&pr, 0);

        g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
        g_assert_true(cqe.wr_id == 0xa0 || cqe.wr_id == 0xa1);
    }
    img_move(b, 0x4100, a, 0, 100);
    img_move(b, 0x4300, a, 0x200, 100);
    peer_check(b);
    drain_faults(b->d, &ev[0]);

    /* A's q[0]: a requester fault and a responder fault at once. */
    pair_log_reset(&pr);
    rs = peer_sge(b, 0x1000, 500);
    eng_post_recv(b->d, &q[1], 0xb0, &rs, 1);
    pair_post_sge(&pr, 0, &q[0], RS_WR_SEND, 0xa2, ODP_LVA + 0x40, 500, lkey,
                  0, 0);
    ev[0] = expect_fault(&pr, 0, lkey, ODP_LVA, 1, 1, false);
    pair_post_sge(&pr, 1, &q[1], RS_WR_RDMA_WRITE, 0xb1, b->buf + 0x2000,
                  300, b->key[0], ODP_LVA + 3 * PAGE + 0x80, lkey);
    ev[1] = expect_fault(&pr, 0, lkey, ODP_LVA + 3 * PAGE, 1, 1, true);
    odp_map(a->d, lkey, 0, ODP_LVA + 3 * PAGE, a->buf + 0x6000, 1, ODP_RW);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[1].qpn,
                    0);
    pair_cq_empty(&pr, 0);
    odp_map(a->d, lkey, 0, ODP_LVA, a->buf + 0x5000, 1, ODP_RO);
    pair_expect_cqe(&pr, 1, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 500);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    img_move(a, 0x6080, b, 0x2000, 300);
    img_move(b, 0x1000, a, 0x5040, 500);
    peer_check(a);
    peer_check(b);
    drain_faults(a->d, &ev[1]);
    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(qp_state(pr.p[i].d, q[i].h), ==, RS_QPS_RTS);
        g_assert_cmpuint(qp_state(pr.p[i].d, x[i].h), ==, RS_QPS_RTS);
    }
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

/* ------------------------------------------------------------------ */
/* A fault storm: what the pause saves                                */
/* ------------------------------------------------------------------ */

#define STORM_FAULTS    ODP_PAGES
#define STORM_WAIT_US   10000   /* each fault resolved after 10 ms */
#define STORM_MIN_RNR   12      /* 0.64 ms: rdma_cm's min_rnr_timer */

/*
 * 16 WRITEs, each into a page B does not have, each resolved 10 ms of
 * virtual time after its fault (time moves 100 us at a time).  Counted:
 * the WRITEs A sends again, B's RNR NAKs and PAUSEs.  With the pause A
 * sends each WRITE once more, after RESUME; with RNR NAKs only
 * (odp-pause=off on B) it sends it again at every RNR timer.
 */
static void odp_storm(void *obj, void *data, QGuestAllocator *alloc,
                      bool pause)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    unsigned i, j, resent = 0, rnr = 0, pauses = 0;
    uint32_t key;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_connect(&pr, q, RS_QPT_RC, 1, 7, STORM_MIN_RNR);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    for (i = 0; i < STORM_FAULTS; i++) {
        uint64_t va = ODP_VA + (uint64_t)i * PAGE;
        struct rs_event ev;

        pair_log_reset(&pr);
        pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0x100 + i,
                      a->buf + 0x100, 64, a->key[0], va, key);
        ev = expect_fault(&pr, 1, key, va, 1, 1, true);
        for (j = 0; j < STORM_WAIT_US / 100; j++) {
            qtest_clock_step(qrs_qts(a->d), 100 * 1000);
            pair_pump(&pr);
        }
        drain_faults(b->d, &ev);
        odp_map(b->d, key, 0, va, b->buf + (i % 4) * PAGE, 1, ODP_RW);
        odp_expect_cqe(&pr, 0, 0x100 + i, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                       q[0].qpn);
        for (j = 0; j < pr.nops[0]; j++) {
            resent += j > 0 && pr.op[0][j] == OP_WRITE_ONLY;
        }
        for (j = 0; j < pr.nops[1]; j++) {
            rnr += pr.op[1][j] == OP_ACK &&
                   (pr.syn[1][j] & 0xe0) == AETH_RNR;
            pauses += pr.op[1][j] == OP_ODP_PAUSE;
        }
    }
    g_test_message("fault storm, %s: %u faults resolved after %u ms each: "
                   "A sent %u WRITEs again; B sent %u RNR NAKs, %u PAUSEs",
                   pause ? "page-fault pause" : "RNR NAKs only",
                   STORM_FAULTS, STORM_WAIT_US / 1000, resent, rnr, pauses);
    if (pause) {
        g_assert_cmpuint(resent, ==, STORM_FAULTS);
        g_assert_cmpuint(pauses, ==, STORM_FAULTS);
    } else {
        g_assert_cmpuint(resent, >=, 10 * STORM_FAULTS);
        g_assert_cmpuint(pauses, ==, 0);
    }
    pair_teardown(&pr);
}

static void test_odp_storm_pause(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    odp_storm(obj, data, alloc, true);
}

static void test_odp_storm_rnr(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    odp_storm(obj, data, alloc, false);
}

static void register_odp_tests(void)
{
    QOSGraphTestOptions objects = { .before = odp_objects_before };
    QOSGraphTestOptions off = { .before = odp_off_before };
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions timeout = { .before = odp_timeout_before };
    QOSGraphTestOptions pause_off = {
        .before = pair_before, .arg = (void *)",odp-pause=off",
    };
    QOSGraphTestOptions small = { .before = odp_small_table_before };

    qos_add_test("odp/objects", "rdma-session", test_odp_objects, &objects);
    qos_add_test("odp/off", "rdma-session", test_odp_off, &off);
    qos_add_test("odp/resolve-bad", "rdma-session", test_odp_resolve_bad,
                 &pair);
    qos_add_test("odp/remote-write", "rdma-session", test_odp_remote_write,
                 &pair);
    qos_add_test("odp/remote-read", "rdma-session", test_odp_remote_read,
                 &pair);
    qos_add_test("odp/remote-atomic", "rdma-session", test_odp_remote_atomic,
                 &pair);
    qos_add_test("odp/remote-send", "rdma-session", test_odp_remote_send,
                 &pair);
    qos_add_test("odp/local", "rdma-session", test_odp_local, &pair);
    qos_add_test("odp/never-resolved", "rdma-session",
                 test_odp_never_resolved, &timeout);
    qos_add_test("odp/resolve-fail", "rdma-session", test_odp_resolve_fail,
                 &pair);
    qos_add_test("odp/invalidate", "rdma-session", test_odp_invalidate,
                 &pair);
    qos_add_test("odp/pause-off", "rdma-session", test_odp_pause_off,
                 &pause_off);
    qos_add_test("odp/hostile", "rdma-session", test_odp_hostile, &pair);
    qos_add_test("odp/evict", "rdma-session", test_odp_evict, &small);
    qos_add_test("odp/xrc", "rdma-session", test_odp_xrc, &pair);
    qos_add_test("odp/concurrent", "rdma-session", test_odp_concurrent,
                 &pair);
    qos_add_test("odp/teardown", "rdma-session", test_odp_teardown, &pair);
    qos_add_test("odp/migrate", "rdma-session", test_odp_migrate, &pair);
    qos_add_test("odp/storm-pause", "rdma-session", test_odp_storm_pause,
                 &pair);
    qos_add_test("odp/storm-rnr", "rdma-session", test_odp_storm_rnr,
                 &pause_off);
}

libqos_init(register_odp_tests);
