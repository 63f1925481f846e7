/*
 * rdma-session qtests: on-demand paging, the test-side driver: see rs-
 * odp.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-odp.h"

/* ------------------------------------------------------------------ */
/* The driver's side of ODP                                           */
/* ------------------------------------------------------------------ */

/* IBTA's RNR timer codes (9.7.5.2.8), in ns. */
int64_t rnr_timer_ns(uint8_t code)
{
    static const uint32_t ten_us[32] = {
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
        256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
        12288, 16384, 24576, 32768, 49152,
    };

    return ten_us[code & 31] * 10000LL;
}

uint8_t odp_reg(QRdmaSession *d, uint32_t pd, uint8_t flags,
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
uint32_t odp_mr(QRdmaSession *d, uint32_t pd, uint64_t iova,
                uint64_t len)
{
    uint32_t key = 0;

    RS_ASSERT_OK(odp_reg(d, pd, RS_MR_F_ODP |
                         (len ? 0 : RS_MR_F_ODP_IMPLICIT), iova, len, &key));
    return key;
}

uint8_t odp_resolve_at(QRdmaSession *d, uint32_t key, uint32_t seq,
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
uint64_t odp_list(QRdmaSession *d, const uint64_t *e, uint32_t n)
{
    uint64_t pbl = qrs_alloc_zeroed(d, MAX(n, 1) * 8);
    uint32_t i;

    for (i = 0; i < n; i++) {
        qtest_writeq(qrs_qts(d), pbl + i * 8, e[i]);
    }
    return pbl;
}

/* ODP_RESOLVE with the @n entries @e. */
uint8_t odp_resolve(QRdmaSession *d, uint32_t key, uint32_t seq,
                    uint64_t va, const uint64_t *e, uint32_t n)
{
    uint64_t pbl = odp_list(d, e, n);
    uint8_t st = odp_resolve_at(d, key, seq, va, pbl, n, 0);

    guest_free(d->alloc, pbl);
    return st;
}

/* Map @n pages from @va to the guest pages from @pa on, with @rights. */
void odp_map(QRdmaSession *d, uint32_t key, uint32_t seq,
             uint64_t va, uint64_t pa, uint32_t n, uint64_t rights)
{
    g_autofree uint64_t *e = g_new(uint64_t, n);
    uint32_t i;

    for (i = 0; i < n; i++) {
        e[i] = (pa + (uint64_t)i * PAGE) | rights;
    }
    RS_ASSERT_OK(odp_resolve(d, key, seq, va, e, n));
}

uint8_t odp_fail(QRdmaSession *d, uint32_t key, uint32_t seq,
                 uint64_t va, uint32_t npages)
{
    return odp_resolve_at(d, key, seq, va, 0, npages,
                          RS_ODP_RESOLVE_F_FAIL);
}

uint8_t odp_inval(QRdmaSession *d, uint32_t key, uint64_t va,
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
void odp_inval_ok(QRdmaSession *d, uint32_t key, uint64_t va,
                  uint64_t len, uint32_t count)
{
    uint32_t got = ~0u;

    RS_ASSERT_OK(odp_inval(d, key, va, len, 0, &got));
    g_assert_cmpuint(got, ==, count);
}

void odp_stats_get(QRdmaSession *d, struct rs_device_stats *s)
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

void odp_stats(QRdmaSession *d, struct rs_device_stats *s)
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
bool odp_event(Pair *pr, int i, struct rs_event *ev,
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

void assert_fault(const struct rs_event *ev, uint32_t key,
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
struct rs_event expect_fault_step(Pair *pr, int i, int64_t step_ns,
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
struct rs_event expect_fault(Pair *pr, int i, uint32_t key,
                             uint64_t page, unsigned min_pages,
                             unsigned max_pages, bool write)
{
    return expect_fault_step(pr, i, 1000, key, page, min_pages, max_pages,
                             write);
}

/* A fault that may come when it is posted again (1 ms per look). */
struct rs_event expect_refault(Pair *pr, int i, uint32_t key,
                               uint64_t page, unsigned min_pages,
                               unsigned max_pages, bool write)
{
    return expect_fault_step(pr, i, ODP_MS, key, page, min_pages,
                             max_pages, write);
}

/* Take the events of adapter @i: all page faults like @like; how many. */
unsigned drain_faults(QRdmaSession *d, const struct rs_event *like)
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
void odp_step(Pair *pr, int64_t ns)
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
bool odp_poll(Pair *pr, int i, struct rs_cqe *cqe, int64_t step_ns,
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
struct rs_cqe odp_next_cqe(Pair *pr, int i)
{
    struct rs_cqe cqe;

    if (!odp_poll(pr, i, &cqe, ODP_MS, 10000 * ODP_MS)) {
        g_error("adapter %c: no completion", 'A' + i);
    }
    return cqe;
}

void odp_expect_cqe(Pair *pr, int i, uint64_t wr_id, uint8_t status,
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
int64_t expect_pause(Pair *pr, int from, unsigned at, uint32_t psn,
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
void expect_resume(Pair *pr, int from, unsigned at, uint32_t psn)
{
    pair_wait_frames(pr, from, at + 1);
    g_assert_cmphex(pr->op[from][at], ==, OP_ODP_RESUME);
    g_assert_cmphex(pr->psn[from][at], ==, psn & 0xffffff);
    g_assert_cmphex(pr->syn[from][at], ==, AETH_ACK);
}

/* Until adapter @from has sent a frame @op: its index in the log. */
unsigned wait_op(Pair *pr, int from, uint8_t op)
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
void expect_no_op(Pair *pr, int from, uint8_t op)
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
void expect_paused(Pair *pr, int64_t pause_ns)
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
void odp_connect(Pair *pr, LoopQp q[2], uint8_t type,
                 uint8_t retry_cnt, uint8_t rnr_retry,
                 uint8_t min_rnr_timer)
{
    struct rs_qp_attr a;
    int i;

    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q[i], type, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        pair_attr(q, i, 0, &a);
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
void odp_rc(Pair *pr, LoopQp q[2])
{
    odp_connect(pr, q, RS_QPT_RC, 1, 0, ODP_MIN_RNR);
}

void pair_post_sge(Pair *pr, int i, LoopQp *q, uint8_t op,
                   uint64_t wr_id, uint64_t addr, uint32_t len,
                   uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = lkey };

    pair_post(pr, i, q, op, wr_id, &sge, 1, raddr, rkey, 0);
}

void pair_atomic(Pair *pr, LoopQp *q, uint8_t op, uint64_t wr_id,
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
void peer_wait_range(Pair *pr, int i, uint32_t off, uint32_t len)
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

void peer_set64(Peer *p, uint32_t off, uint64_t v)
{
    stq_le_p(p->img + off, v);
    qtest_writeq(qrs_qts(p->d), p->buf + off, v);
}

/* A UD datagram from A's UD QP @q to B's @qpn: @len bytes at @off. */
void pair_post_ud(Pair *pr, LoopQp *q, uint32_t ah, uint64_t wr_id,
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
