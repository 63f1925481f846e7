/*
 * rdma-session qtests: on-demand paging: page faults of responders (the
 * page-fault pause: PAUSE 0xc0, RESUME 0xc1) and requesters between two
 * adapters, faults that fail or time out, XRC targets, several faults at
 * once. The test is the driver (rs-odp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-odp.h"

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
 * A PAUSE that finds READ responses missing before its PSN (the last of
 * READ 1's three responses lost) still pauses A: nothing goes to the
 * faulting PSN until the RESUME; then A asks for READ 1 again and both
 * READs complete with every byte.
 */
static void test_odp_pause_read_gap(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t key, psn = pair_psn[0], psn2 = (pair_psn[0] + 3) & 0xffffff;
    unsigned i, sent = 0, at;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_connect(&pr, q, RS_QPT_RC, 7, 0, ODP_MIN_RNR);
    key = odp_mr(b->d, b->pd, 0, 0);

    pair_log_reset(&pr);
    pr.drop[1] = 1 << 2;        /* READ 1's last response */
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa0, a->buf + 0x1000, 3000,
                  a->key[0], b->buf + 0x2000, b->key[0]);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa1, a->buf + 0x3000, 100,
                  a->key[0], ODP_IVA + 0x40, key);
    expect_fault(&pr, 1, key, ODP_IVA, 1, 1, false);
    at = wait_op(&pr, 1, OP_ODP_PAUSE);
    g_assert_cmphex(pr.psn[1][at], ==, psn2);
    odp_step(&pr, 20 * ODP_MS);
    pair_pump(&pr);
    for (i = 0; i < pr.nops[0]; i++) {
        sent += pr.op[0][i] == OP_READ_REQ && pr.psn[0][i] == psn2;
    }
    g_assert_cmpuint(sent, ==, 1);
    pair_cq_empty(&pr, 0);

    odp_map(b->d, key, 0, ODP_IVA, b->buf + 0x6000, 1, ODP_RO);
    wait_op(&pr, 1, OP_ODP_RESUME);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn,
                    3000);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn,
                    100);
    img_move(a, 0x1000, b, 0x2000, 3000);
    img_move(a, 0x3000, b, 0x6040, 100);
    peer_check(a);
    g_assert_cmphex(pr.psn[0][0], ==, psn);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
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
        pair_attr(q, i, 0, &at);
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

static void register_odp_fault_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions timeout = { .before = odp_timeout_before };

    rs_add_standalone_test("odp/remote-write", test_odp_remote_write, &pair);
    rs_add_standalone_test("odp/remote-read", test_odp_remote_read, &pair);
    rs_add_standalone_test("odp/pause-read-gap",
                           test_odp_pause_read_gap, &pair);
    rs_add_standalone_test("odp/remote-atomic", test_odp_remote_atomic, &pair);
    rs_add_standalone_test("odp/remote-send", test_odp_remote_send, &pair);
    rs_add_standalone_test("odp/local", test_odp_local, &pair);
    rs_add_standalone_test("odp/never-resolved",
                           test_odp_never_resolved, &timeout);
    rs_add_standalone_test("odp/resolve-fail", test_odp_resolve_fail, &pair);
    rs_add_standalone_test("odp/xrc", test_odp_xrc, &pair);
    rs_add_standalone_test("odp/concurrent", test_odp_concurrent, &pair);
}

libqos_init(register_odp_fault_tests);
