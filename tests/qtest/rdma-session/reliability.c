/*
 * rdma-session qtests: RC reliability over loopback (send window, loss,
 * RNR, retry limits and timers)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

#define REL_BUF         (24 * PAGE)     /* 96 messages' worth at MTU 1024 */
#define REL_TIMEOUT_US  (60 * G_USEC_PER_SEC)
#define REL_MS          1000000LL            /* virtual ns */
#define REL_S           (1000 * REL_MS)

typedef struct RelAttr {
    uint8_t rnr_retry;
    uint8_t retry_cnt;
    uint8_t min_rnr_timer;
    uint32_t a_dest;            /* 0: QP b */
} RelAttr;

static void rel_connect(Loop *l, LoopQp *q, uint32_t peer, const RelAttr *r)
{
    static const uint8_t path[] = {
        RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS,
    };
    struct rs_qp_attr a;
    int i;

    for (i = 1; i < ARRAY_SIZE(path); i++) {
        uint32_t mask = std_mask(RS_QPT_RC, path[i - 1], path[i]);

        std_attr(&a, path[i - 1], path[i]);
        gid_v4(a.ah.dgid, 10, 0, 0, 1);
        a.dest_qp_num = peer;
        a.rq_psn = a.sq_psn = LOOP_PSN;
        a.rnr_retry = r->rnr_retry;
        a.retry_cnt = r->retry_cnt;
        a.min_rnr_timer = r->min_rnr_timer;
        if (path[i] == RS_QPS_RTR) {
            a.session_group = l->group;
            mask |= RS_QP_ATTR_SESSION_GROUP;
        }
        RS_ASSERT_OK(qrs_modify_qp(l->d, q->h, &a, mask));
    }
}

/* loop_setup() with RC attributes of the test's choice and big buffers. */
static void rel_setup(Loop *l, void *obj, const RelAttr *r)
{
    struct rs_cmd_create_session sc;
    uint32_t s = 0;

    memset(l, 0, sizeof(*l));
    l->d = admin_setup(obj);
    add_gid_v4(l->d, 0, 1);                     /* 10.0.0.1 */
    l->pd = new_pd(l->d);
    eng_cq_init(l->d, &l->cq, LOOP_CQ_LOG);
    session_template(&sc, 0, 49152);
    gid_v4(sc.dst_ip, 10, 0, 0, 1);             /* ourselves: loopback */
    RS_ASSERT_OK(qrs_create_session(l->d, &sc, &s));
    l->group = new_group(l->d, RS_GROUP_ROUND_ROBIN, s, 0);
    qp_template(l->d, &l->a.c, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    qp_template(l->d, &l->b.c, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    l->a.h = new_qp(l->d, &l->a.c);
    l->b.h = new_qp(l->d, &l->b.c);
    l->a.qpn = HINDEX(l->a.h);
    l->b.qpn = HINDEX(l->b.h);
    rel_connect(l, &l->a, r->a_dest ? r->a_dest : l->b.qpn, r);
    rel_connect(l, &l->b, l->a.qpn, r);
    l->src = loop_buf(l->d, REL_BUF);
    l->dst = loop_buf(l->d, REL_BUF);
    l->src_key = loop_mr(l, l->src, REL_BUF);
    l->dst_key = loop_mr(l, l->dst, REL_BUF);
}

/*
 * The next CQE, stepping the virtual clock step_ns at a time so that
 * retransmission and RNR timers run; false if none came within max_ns.
 */
static bool rel_poll(Loop *l, struct rs_cqe *cqe, int64_t step_ns,
                     int64_t max_ns)
{
    gint64 end = g_get_monotonic_time() + REL_TIMEOUT_US;
    int64_t waited = 0;

    while (!eng_cq_peek(l->d, &l->cq, cqe)) {
        if (waited >= max_ns) {
            return false;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(qrs_qts(l->d), step_ns);
        waited += step_ns;
    }
    l->cq.ci++;
    qrs_db_writel(l->d, 0, RS_DB_CQ_CI,
                  HINDEX(l->cq.h) | (l->cq.ci & 0xffff) << 16);
    return true;
}

static void rel_expect(Loop *l, uint64_t wr_id, uint8_t status,
                       uint32_t qpn)
{
    struct rs_cqe cqe;

    g_assert_true(rel_poll(l, &cqe, REL_MS, 100 * REL_S));
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    g_assert_cmpuint(cqe.qpn, ==, qpn);
}

static void rel_wqe(struct rs_send_wqe_ctrl *w, uint64_t wr_id, uint8_t op,
                    uint64_t remote, uint32_t rkey)
{
    memset(w, 0, sizeof(*w));
    w->wr_id = wr_id;
    w->opcode = op;
    w->flags = RS_WQE_F_SIGNALED;
    w->num_sge = 1;
    w->remote_addr = remote;
    w->rkey = rkey;
}

/*
 * WRITE, SEND and READ of messages two to three times the send window
 * (x-window=32 packets at MTU 1024, rel_window_before()), several in
 * flight, byte by byte.
 */
static void rel_big_messages(Loop *l)
{
    static const uint32_t wlen = 80000, slen = 70001, rlen = 77777;
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    int i;

    /* Two WRITEs back to back, the second at an odd offset. */
    loop_pattern(l, l->src, REL_BUF, 0x21);
    fill(l->d, l->dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xc0, RS_WR_RDMA_WRITE, l->dst + 8, l->dst_key);
    loop_post_send(l, &l->a, &w, l->src, wlen, l->src_key);
    rel_wqe(&w, 0xc1, RS_WR_RDMA_WRITE, l->dst + wlen + 8 + 3,
            l->dst_key);
    loop_post_send(l, &l->a, &w, l->src + 5, 9000, l->src_key);
    rel_expect(l, 0xc0, RS_WC_SUCCESS, l->a.qpn);
    rel_expect(l, 0xc1, RS_WC_SUCCESS, l->a.qpn);
    loop_assert_same(l, l->src, l->dst + 8, wlen);
    loop_assert_same(l, l->src + 5, l->dst + wlen + 11, 9000);
    g_assert_true(is_filled(l->d, l->dst, 0xee, 8));
    g_assert_true(is_filled(l->d, l->dst + wlen + 8, 0xee, 3));
    g_assert_true(is_filled(l->d, l->dst + wlen + 9011, 0xee,
                            REL_BUF - wlen - 9011));

    /* SEND of 70001 bytes into one receive WQE, then a small one. */
    loop_pattern(l, l->src, REL_BUF, 0x37);
    fill(l->d, l->dst, 0xee, REL_BUF);
    loop_post_recv(l, &l->b, 0xd0, l->dst, REL_BUF, l->dst_key);
    loop_post_recv(l, &l->b, 0xd1, l->dst + slen, 100, l->dst_key);
    rel_wqe(&w, 0xc2, RS_WR_SEND, 0, 0);
    loop_post_send(l, &l->a, &w, l->src, slen, l->src_key);
    rel_wqe(&w, 0xc3, RS_WR_SEND, 0, 0);
    loop_post_send(l, &l->a, &w, l->src + 1, 100, l->src_key);
    for (i = 0; i < 4; i++) {
        g_assert_true(rel_poll(l, &cqe, REL_MS,
                               100 * REL_S));
        g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
        switch (cqe.wr_id) {
        case 0xd0:
            g_assert_cmpuint(cqe.byte_len, ==, slen);
            g_assert_cmpuint(cqe.qpn, ==, l->b.qpn);
            break;
        case 0xd1:
            g_assert_cmpuint(cqe.byte_len, ==, 100);
            break;
        case 0xc2:
        case 0xc3:
            g_assert_cmpuint(cqe.qpn, ==, l->a.qpn);
            break;
        default:
            g_assert_not_reached();
        }
    }
    loop_assert_same(l, l->src, l->dst, slen);
    loop_assert_same(l, l->src + 1, l->dst + slen, 100);
    g_assert_true(is_filled(l->d, l->dst + slen + 100, 0xee,
                            REL_BUF - slen - 100));

    /* READ of 77777 bytes: several READ requests, one completion. */
    loop_pattern(l, l->dst, REL_BUF, 0x4d);
    fill(l->d, l->src, 0, REL_BUF);
    rel_wqe(&w, 0xc4, RS_WR_RDMA_READ, l->dst + 1000, l->dst_key);
    loop_post_send(l, &l->a, &w, l->src + 7, rlen, l->src_key);
    g_assert_true(rel_poll(l, &cqe, REL_MS, 100 * REL_S));
    g_assert_cmphex(cqe.wr_id, ==, 0xc4);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, rlen);
    loop_assert_same(l, l->src + 7, l->dst + 1000, rlen);
    g_assert_true(is_filled(l->d, l->src, 0, 7));
    g_assert_true(is_filled(l->d, l->src + 7 + rlen, 0,
                            REL_BUF - 7 - rlen));

    /* A WRITE after the READ: the QPs are still in order. */
    fill(l->d, l->dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xc5, RS_WR_RDMA_WRITE, l->dst, l->dst_key);
    loop_post_send(l, &l->a, &w, l->src, 40000, l->src_key);
    rel_expect(l, 0xc5, RS_WC_SUCCESS, l->a.qpn);
    loop_assert_same(l, l->src, l->dst, 40000);
    g_assert_cmpuint(qp_state(l->d, l->a.h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(l->d, l->b.h), ==, RS_QPS_RTS);
}

static void test_engine_rc_window(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 6, .retry_cnt = 7, .min_rnr_timer = 12 };
    Loop l;

    rel_setup(&l, obj, &r);
    rel_big_messages(&l);
    assert_alive(l.d);
}

static void *rel_drop_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line, " -global rdma-session.x-drop-tx=%u ",
                           GPOINTER_TO_UINT(arg));
    return arg;
}

/* x-window=32 for rel_big_messages(), and x-drop-tx=arg if not 0. */
static void *rel_window_before(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rdma-session.x-window=32 ");
    return arg ? rel_drop_before(cmd_line, arg) : arg;
}

/*
 * The same with a send window of 512 packets, wider than the test's
 * messages: the congestion window, not x-window, keeps the bursts small.
 */
static void *rel_drop_wide_before(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rdma-session.x-window=512 ");
    return rel_drop_before(cmd_line, arg);
}

/* Every Nth RoCE frame lost (requests, ACKs, READ responses alike). */
static void test_engine_rc_loss(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 6, .retry_cnt = 7, .min_rnr_timer = 12 };
    Loop l;

    rel_setup(&l, obj, &r);
    rel_big_messages(&l);
    rel_big_messages(&l);
    assert_alive(l.d);
}

/* A SEND before its RECV: RNR NAKs, then it completes once posted. */
static void test_engine_rc_rnr(void *obj, void *data, QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 7, .min_rnr_timer = 14 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    loop_pattern(&l, l.src, 5000, 0x66);
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe0, RS_WR_SEND, 0, 0);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    /* 200 ms, about 150 RNR timers (1.28 ms): nothing completes. */
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 200 * REL_MS));
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_RTS);
    loop_post_recv(&l, &l.b, 0xe1, l.dst, REL_BUF, l.dst_key);
    g_assert_true(rel_poll(&l, &cqe, REL_MS, 10 * REL_MS * 100));
    g_assert_cmphex(cqe.wr_id, ==, 0xe1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    rel_expect(&l, 0xe0, RS_WC_SUCCESS, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst, 5000);
    g_assert_true(is_filled(l.d, l.dst + 5000, 0xee, REL_BUF - 5000));

    /* WRITE with immediate needs a receive WQE too. */
    rel_wqe(&w, 0xe2, RS_WR_RDMA_WRITE_IMM, l.dst + 6000, l.dst_key);
    w.imm_or_inv = 0x0badcafe;
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 50 * REL_MS));
    loop_post_recv(&l, &l.b, 0xe3, 0, 0, l.dst_key);
    g_assert_true(rel_poll(&l, &cqe, REL_MS, 10 * REL_MS * 100));
    g_assert_cmphex(cqe.wr_id, ==, 0xe3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x0badcafe);
    rel_expect(&l, 0xe2, RS_WC_SUCCESS, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst + 6000, 3000);
    assert_alive(l.d);
}

/* rnr_retry 2: the third RNR NAK ends the SEND and the QP. */
static void test_engine_rc_rnr_exceeded(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 2, .retry_cnt = 7, .min_rnr_timer = 14 };
    struct rs_send_wqe_ctrl w;
    Loop l;

    rel_setup(&l, obj, &r);
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe4, RS_WR_SEND, 0, 0);
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    rel_expect(&l, 0xe4, RS_WC_RNR_RETRY_EXC_ERR, l.a.qpn);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    assert_alive(l.d);
}

/* No responder (a QPN nobody has): retry_cnt 2 timeouts, then the error. */
static void test_engine_rc_retry_exceeded(void *obj, void *data,
                                          QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 2, .min_rnr_timer = 12,
                  .a_dest = 200 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe5, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 50000, l.src_key);
    /* Three local ACK timeouts of 67 ms (timeout 14) at least. */
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 150 * REL_MS));
    rel_expect(&l, 0xe5, RS_WC_RETRY_EXC_ERR, l.a.qpn);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    assert_alive(l.d);
}

/*
 * The give-up's completion interrupts through an MSI-X vector the guest
 * pointed at the device's own CTRL register, with a message that would
 * disable it.  The engine timer that gives up holds the device's
 * re-entrancy guard, so that write is refused as any DMA into the
 * device is, and the device carries on with the completion posted.
 */
static void test_engine_rc_retry_msix_reentry(void *obj, void *data,
                                              QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 0, .min_rnr_timer = 12,
                  .a_dest = 200 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    qrs_msix_set_vector(l.d, RS_MSIX_COMP_VECTOR0, l.d->bar0.addr + A_RS_CTRL,
                        0, false);
    qrs_db_writel(l.d, 0, RS_DB_CQ_ARM, HINDEX(l.cq.h) | RS_DB_CQ_ARM_NEXT);
    rel_wqe(&w, 0xe6, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    g_assert_true(rel_poll(&l, &cqe, REL_MS, 10 * REL_S));
    g_assert_cmphex(cqe.wr_id, ==, 0xe6);
    g_assert_cmpuint(cqe.status, ==, RS_WC_RETRY_EXC_ERR);
    g_assert_cmphex(qrs_readl(l.d, A_RS_CTRL), !=, 0);
    assert_alive(l.d);
}

/*
 * The retry timeout doubles for each retry without progress (x-ack-backoff,
 * 3 by default): with timeout 14 (67 ms) and retry_cnt 2 the QP gives up
 * after 67 + 134 + 268 ms, not after 3 x 67 ms.
 */
static void test_engine_rc_retry_backoff(void *obj, void *data,
                                         QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 2, .min_rnr_timer = 12,
                  .a_dest = 200 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe6, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 440 * REL_MS));
    g_assert_true(rel_poll(&l, &cqe, REL_MS, 100 * REL_MS));
    g_assert_cmphex(cqe.wr_id, ==, 0xe6);
    g_assert_cmpuint(cqe.status, ==, RS_WC_RETRY_EXC_ERR);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    assert_alive(l.d);
}

/*
 * The local ACK timer starts when a request leaves with nothing
 * outstanding: after a second of idleness a request whose responder went
 * away still waits one whole timeout (retry_cnt 0: then fails) instead
 * of timing out at the first tick.
 */
static void test_engine_rc_timer_after_idle(void *obj, void *data,
                                            QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 0, .min_rnr_timer = 12 };
    struct rs_send_wqe_ctrl w;
    struct rs_qp_attr a;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    /* (the engine reads a zero progress time as "not set yet") */
    qtest_clock_step(qrs_qts(l.d), 5 * REL_MS);
    rel_wqe(&w, 0xe7, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    rel_expect(&l, 0xe7, RS_WC_SUCCESS, l.a.qpn);
    /* idle for a second of virtual time, then the responder stops */
    g_assert_false(rel_poll(&l, &cqe, 10 * REL_MS, REL_S));
    std_attr(&a, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.b.h, &a, RS_QP_ATTR_STATE));
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe8, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 60 * REL_MS));
    rel_expect(&l, 0xe8, RS_WC_RETRY_EXC_ERR, l.a.qpn);
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    assert_alive(l.d);
}

static void register_reliability_tests(void)
{
    QOSGraphTestOptions rel_window = { .before = rel_window_before };
    QOSGraphTestOptions rel_drop = { .before = rel_window_before,
                                     .arg = GUINT_TO_POINTER(7) };
    QOSGraphTestOptions rel_drop_wide = { .before = rel_drop_wide_before,
                                          .arg = GUINT_TO_POINTER(7) };

    qos_add_test("reliability/window", "rdma-session",
                 test_engine_rc_window, &rel_window);
    qos_add_test("reliability/loss", "rdma-session",
                 test_engine_rc_loss, &rel_drop);
    qos_add_test("reliability/loss-wide", "rdma-session",
                 test_engine_rc_loss, &rel_drop_wide);
    qos_add_test("reliability/rnr", "rdma-session", test_engine_rc_rnr, NULL);
    qos_add_test("reliability/rnr-exceeded", "rdma-session",
                 test_engine_rc_rnr_exceeded, NULL);
    qos_add_test("reliability/retry-exceeded", "rdma-session",
                 test_engine_rc_retry_exceeded, NULL);
    qos_add_test("reliability/retry-backoff", "rdma-session",
                 test_engine_rc_retry_backoff, NULL);
    qos_add_test("reliability/retry-msix-reentry", "rdma-session",
                 test_engine_rc_retry_msix_reentry, NULL);
    qos_add_test("reliability/timer-after-idle", "rdma-session",
                 test_engine_rc_timer_after_idle, NULL);
}

libqos_init(register_reliability_tests);
