/*
 * rdma-session qtests: ECN and congestion notification packets (ABI
 * 1.10, RS_CAP_ECN).  Two adapters on the test's wire, which marks
 * frames CE as a congested switch would: the ECT(0) mark on what the
 * adapters send, the CNP a CE-marked packet earns its sender (its
 * headers byte by byte, one per QP per cnp-interval of virtual time),
 * and CNPs received, from strangers and in a storm.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

/* IPv4 TOS: the AVs' DSCP (std_ah's traffic class), the ECN bits. */
#define ECN_DSCP        0x28
#define ECN_ECT0        0x02
#define ECN_CE          0x03
#define ECN_TOS         (14 + 1)

/*
 * cnp-interval of both adapters in these tests: the wire's waits step
 * the virtual clock by 1 us at a time, far less than this in a test.
 */
#define ECN_INTERVAL_US 10000

#define OP_CNP          0x81
#define CNP_LEN         (ROCE_EXT + 16 + 4)

static void *ecn_before(GString *cmd_line, void *arg)
{
    g_autofree char *a = g_strdup_printf(",cnp-interval=%u",
                                         ECN_INTERVAL_US);
    g_autofree char *b = g_strdup_printf("%s%s", a, arg ? (char *)arg : "");

    return pair_before_props(cmd_line, a, b);
}

/* Mark frame @f CE (its DSCP kept), as a congested switch does. */
static void ecn_mark_ce(uint8_t *f, size_t len)
{
    f[ECN_TOS] |= ECN_CE;
    roce_reseal(f, len);
}

/*
 * A SEND of 100 bytes from A's RC QP to B's, its frame marked CE on the
 * way if @ce; every frame both send stays held.  Returns B's frames:
 * a CNP first if B sent one, then its ACK (the caller gives them to A).
 */
static unsigned ecn_send(Pair *pr, LoopQp q[2], uint64_t wr_id, bool ce,
                         GByteArray *out[2])
{
    struct rs_sge sge;
    GByteArray *f;
    unsigned n = 0;

    pr->hold[0] = pr->hold[1] = true;
    sge = peer_sge(&pr->p[1], 0x1000, 100);
    eng_post_recv(pr->p[1].d, &q[1], wr_id, &sge, 1);
    sge = peer_sge(&pr->p[0], 0, 100);
    pair_post(pr, 0, &q[0], RS_WR_SEND, wr_id, &sge, 1, 0, 0, 0);
    f = pair_take(pr, 0);
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_SEND_ONLY);
    /* Sent ECN-capable, the AV's DSCP kept. */
    g_assert_cmphex(f->data[ECN_TOS], ==, ECN_DSCP | ECN_ECT0);
    if (ce) {
        ecn_mark_ce(f->data, f->len);
    }
    pair_inject(pr, 1, f->data, f->len);
    g_byte_array_unref(f);
    do {
        out[n] = pair_take(pr, 1);
    } while (out[n++]->data[ROCE_BTH] != OP_ACK && n < 2);
    g_assert_cmphex(out[n - 1]->data[ROCE_BTH], ==, OP_ACK);
    img_move(&pr->p[1], 0x1000, &pr->p[0], 0, 100);
    return n;
}

/* Give B's frames to A; both completions of the SEND follow. */
static void ecn_deliver(Pair *pr, LoopQp q[2], uint64_t wr_id,
                        GByteArray *out[2], unsigned n)
{
    struct rs_cqe cqe;
    unsigned i;

    for (i = 0; i < n; i++) {
        pair_inject(pr, 0, out[i]->data, out[i]->len);
        g_byte_array_unref(out[i]);
    }
    pr->hold[0] = pr->hold[1] = false;
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, wr_id, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, wr_id, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
}

/*
 * A CNP from B to A's QP @dqpn, for a packet A sent as @sent (its
 * addresses reversed), with the UDP source port @sport.
 */
static void ecn_check_cnp(const GByteArray *cnp, const uint8_t *sent,
                          uint32_t dqpn, uint16_t sport)
{
    static const uint8_t zero[16];
    const uint8_t *f = cnp->data;

    g_assert_cmpuint(cnp->len, ==, CNP_LEN);
    g_assert_cmpmem(f, 6, pair_mac[0], 6);
    g_assert_cmpmem(f + 6, 6, pair_mac[1], 6);
    g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
    /* Not ECN-capable itself; the DSCP of B's path back. */
    g_assert_cmphex(f[ECN_TOS], ==, ECN_DSCP);
    g_assert_cmpmem(f + 14 + 12, 4, sent + 14 + 16, 4);
    g_assert_cmpmem(f + 14 + 16, 4, sent + 14 + 12, 4);
    g_assert_cmpuint(lduw_be_p(f + 14 + 20), ==, sport);
    g_assert_cmpuint(lduw_be_p(f + 14 + 20 + 2), ==, 4791);
    g_assert_cmphex(f[ROCE_BTH], ==, OP_CNP);
    g_assert_cmphex(f[ROCE_BTH + 1], ==, 0);       /* SE, M, pad, TVer */
    g_assert_cmphex(lduw_be_p(f + ROCE_BTH + 2), ==, 0xffff);
    g_assert_cmphex(ldl_be_p(f + ROCE_BTH + 4), ==, dqpn);
    g_assert_cmphex(ldl_be_p(f + ROCE_BTH + 8), ==, 0);
    g_assert_cmpmem(f + ROCE_EXT, 16, zero, 16);
    g_assert_cmphex((uint32_t)ldl_le_p(f + CNP_LEN - 4), ==,
                    roce_icrc(f, CNP_LEN - 4));
}

/*
 * The ECT(0) mark: A's SENDs and B's ACKs leave with the AV's DSCP and
 * ECN 10; a frame that arrives ECT(0) is no congestion.
 */
static void test_ecn_mark(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    GByteArray *out[2];
    struct rs_device_stats st;
    LoopQp q[2];
    unsigned i, n;

    pair_setup(&pr, obj, data, alloc);
    g_assert_true(qrs_readl(pr.p[0].d, A_RS_CAPS) & RS_CAP_ECN);
    pair_rc(&pr, q, 0, STD_ACCESS);
    for (i = 0; i < 3; i++) {
        n = ecn_send(&pr, q, 0xa0 + i, false, out);
        g_assert_cmpuint(n, ==, 1);
        g_assert_cmphex(out[0]->data[ECN_TOS], ==, ECN_DSCP | ECN_ECT0);
        ecn_deliver(&pr, q, 0xa0 + i, out, n);
    }
    for (i = 0; i < 2; i++) {
        query_stats(pr.p[i].d, &st, sizeof(st));
        g_assert_cmpuint(st.ecn_ce_received, ==, 0);
        g_assert_cmpuint(st.cnp_sent, ==, 0);
        g_assert_cmpuint(st.cnp_received, ==, 0);
    }
    peer_check(&pr.p[1]);
    pair_teardown(&pr);
}

/*
 * CE on an RC SEND: B counts it and sends A's QP one CNP (before its
 * ACK), on the ACK's path; a second CE within cnp-interval earns none,
 * one after it another.  A counts each CNP and answers none.
 */
static void test_ecn_cnp(void *obj, void *data, QGuestAllocator *alloc)
{
    QTestState *qts;
    Pair pr;
    GByteArray *out[2];
    struct rs_device_stats st;
    LoopQp q[2];
    unsigned n;

    pair_setup(&pr, obj, data, alloc);
    qts = qrs_qts(pr.p[0].d);
    pair_rc(&pr, q, 0, STD_ACCESS);

    n = ecn_send(&pr, q, 0xa0, true, out);
    g_assert_cmpuint(n, ==, 2);
    ecn_check_cnp(out[0], pr.last[0], q[0].qpn,
                  lduw_be_p(out[1]->data + 34));
    ecn_deliver(&pr, q, 0xa0, out, n);
    query_stats(pr.p[1].d, &st, sizeof(st));
    g_assert_cmpuint(st.ecn_ce_received, ==, 1);
    g_assert_cmpuint(st.cnp_sent, ==, 1);
    g_assert_cmpuint(st.cnp_received, ==, 0);
    query_stats(pr.p[0].d, &st, sizeof(st));
    g_assert_cmpuint(st.cnp_received, ==, 1);
    g_assert_cmpuint(st.cnp_ignored, ==, 0);
    g_assert_cmpuint(st.cnp_sent, ==, 0);

    /* Within the interval: counted, no CNP. */
    n = ecn_send(&pr, q, 0xa1, true, out);
    g_assert_cmpuint(n, ==, 1);
    ecn_deliver(&pr, q, 0xa1, out, n);
    query_stats(pr.p[1].d, &st, sizeof(st));
    g_assert_cmpuint(st.ecn_ce_received, ==, 2);
    g_assert_cmpuint(st.cnp_sent, ==, 1);

    /* Not marked: nothing. */
    n = ecn_send(&pr, q, 0xa2, false, out);
    g_assert_cmpuint(n, ==, 1);
    ecn_deliver(&pr, q, 0xa2, out, n);

    /* After the interval: another. */
    qtest_clock_step(qts, ECN_INTERVAL_US * 1000ll);
    n = ecn_send(&pr, q, 0xa3, true, out);
    g_assert_cmpuint(n, ==, 2);
    ecn_check_cnp(out[0], pr.last[0], q[0].qpn,
                  lduw_be_p(out[1]->data + 34));
    ecn_deliver(&pr, q, 0xa3, out, n);
    query_stats(pr.p[1].d, &st, sizeof(st));
    g_assert_cmpuint(st.ecn_ce_received, ==, 3);
    g_assert_cmpuint(st.cnp_sent, ==, 2);
    query_stats(pr.p[0].d, &st, sizeof(st));
    g_assert_cmpuint(st.cnp_received, ==, 2);
    g_assert_cmpuint(st.ecn_ce_received, ==, 0);

    /* The counters move with the VM. */
    pr.raw[0] = pr.raw[1] = true;
    pair_migrate(&pr);
    pr.hold[0] = pr.hold[1] = false;
    query_stats(pr.p[1].d, &st, sizeof(st));
    g_assert_cmpuint(st.ecn_ce_received, ==, 3);
    g_assert_cmpuint(st.cnp_sent, ==, 2);
    query_stats(pr.p[0].d, &st, sizeof(st));
    g_assert_cmpuint(st.cnp_received, ==, 2);
    peer_check(&pr.p[1]);
    pair_teardown(&pr);
}

/*
 * CE on a UD datagram: the CNP goes to the source QP of its DETH, at its
 * source address; one with another Q_Key fails the QP's checks: neither
 * counted nor answered.
 */
static void test_ecn_ud(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *b = &pr.p[1];
    struct rs_device_stats st;
    struct rs_sge rs;
    GByteArray *cnp;
    LoopQp q[2];
    uint8_t f[256], deth[8];
    size_t len;
    int i;

    pair_setup(&pr, obj, data, alloc);
    for (i = 0; i < 2; i++) {
        pair_qp(&pr, i, &q[i], RS_QPT_UD, pr.p[i].pd);
        qp_walk(pr.p[i].d, q[i].h, RS_QPT_UD, RS_QPS_RTS);
    }
    rs = peer_sge(b, 0x1000, 40 + 512);
    eng_post_recv(b->d, &q[1], 0xb0, &rs, 1);
    stl_be_p(deth, STD_QKEY);
    stl_be_p(deth + 4, q[0].qpn);
    len = roce_frame(f, pair_mac[1], 0x0a000001, 0x0a000002,
                     OP_UD_SEND_ONLY, q[1].qpn, 0, deth, sizeof(deth));
    memcpy(f + 6, pair_mac[0], 6);
    f[ECN_TOS] = ECN_DSCP;
    ecn_mark_ce(f, len);
    pr.hold[1] = true;
    pair_inject(&pr, 1, f, len);
    cnp = pair_take(&pr, 1);
    ecn_check_cnp(cnp, f, q[0].qpn, 0xc000 | q[1].qpn);
    g_byte_array_unref(cnp);
    peer_dont_care(b, 0x1000, 40 + 512);

    /* Another Q_Key, after the interval: dropped before ECN looks. */
    qtest_clock_step(qrs_qts(b->d), ECN_INTERVAL_US * 1000ll);
    stl_be_p(f + ROCE_EXT, STD_QKEY + 1);
    roce_reseal(f, len);
    pair_inject(&pr, 1, f, len);
    /* and the right one: the next CNP; nothing came between */
    stl_be_p(f + ROCE_EXT, STD_QKEY);
    roce_reseal(f, len);
    pair_inject(&pr, 1, f, len);
    cnp = pair_take(&pr, 1);
    ecn_check_cnp(cnp, f, q[0].qpn, 0xc000 | q[1].qpn);
    g_byte_array_unref(cnp);
    pair_pump(&pr);
    g_assert_true(g_queue_is_empty(&pr.held[1]));
    query_stats(b->d, &st, sizeof(st));
    g_assert_cmpuint(st.ecn_ce_received, ==, 2);
    g_assert_cmpuint(st.cnp_sent, ==, 2);
    pr.hold[1] = false;
    pair_teardown(&pr);
}

/* Wait until adapter @i has taken @n CNPs (received and ignored). */
static void ecn_wait_cnps(Pair *pr, int i, uint64_t n,
                          struct rs_device_stats *st)
{
    gint64 end = g_get_monotonic_time() + 4 * RS_QOS_TIMEOUT_US;

    for (;;) {
        pair_pump(pr);
        query_stats(pr->p[i].d, st, sizeof(*st));
        if (st->cnp_received + st->cnp_ignored >= n) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmpuint(st->cnp_received + st->cnp_ignored, ==, n);
}

#define ECN_STORM       10000

/*
 * CNPs into A: for no QP, with another P_Key, from another address,
 * cut short: ignored and counted; a storm of ECN_STORM good ones:
 * counted.  A sends nothing for any of them, and its QP works after.
 */
static void test_ecn_hostile(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t zero[16];
    Pair pr;
    GByteArray *out[2];
    struct rs_device_stats st;
    uint8_t f[256];
    LoopQp q[2];
    size_t len;
    unsigned i, n;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_log_reset(&pr);
    pr.raw[0] = true;

    /* No such QP, QP 0, past the table. */
    len = roce_frame(f, pair_mac[0], 0x0a000002, 0x0a000001, OP_CNP,
                     q[0].qpn + 7, 0, zero, sizeof(zero));
    pair_inject(&pr, 0, f, len);
    len = roce_frame(f, pair_mac[0], 0x0a000002, 0x0a000001, OP_CNP,
                     0, 0, zero, sizeof(zero));
    pair_inject(&pr, 0, f, len);
    len = roce_frame(f, pair_mac[0], 0x0a000002, 0x0a000001, OP_CNP,
                     0xffffff, 0, zero, sizeof(zero));
    pair_inject(&pr, 0, f, len);
    /* Another partition. */
    len = roce_frame(f, pair_mac[0], 0x0a000002, 0x0a000001, OP_CNP,
                     q[0].qpn, 0, zero, sizeof(zero));
    stw_be_p(f + ROCE_BTH + 2, 0x1234);
    roce_reseal(f, len);
    pair_inject(&pr, 0, f, len);
    /* Not the QP's peer. */
    len = roce_frame(f, pair_mac[0], 0x0a000009, 0x0a000001, OP_CNP,
                     q[0].qpn, 0, zero, sizeof(zero));
    pair_inject(&pr, 0, f, len);
    /* Cut short, and too long. */
    len = roce_frame(f, pair_mac[0], 0x0a000002, 0x0a000001, OP_CNP,
                     q[0].qpn, 0, zero, 8);
    pair_inject(&pr, 0, f, len);
    len = roce_frame(f, pair_mac[0], 0x0a000002, 0x0a000001, OP_CNP,
                     q[0].qpn, 0, f + 100, 32);
    pair_inject(&pr, 0, f, len);
    ecn_wait_cnps(&pr, 0, 7, &st);
    g_assert_cmpuint(st.cnp_ignored, ==, 7);
    g_assert_cmpuint(st.cnp_received, ==, 0);

    /* The storm, CE-marked itself: counted, never answered. */
    len = roce_frame(f, pair_mac[0], 0x0a000002, 0x0a000001, OP_CNP,
                     q[0].qpn, 0, zero, sizeof(zero));
    ecn_mark_ce(f, len);
    for (i = 0; i < ECN_STORM; i++) {
        pair_inject(&pr, 0, f, len);
    }
    ecn_wait_cnps(&pr, 0, 7 + ECN_STORM, &st);
    g_assert_cmpuint(st.cnp_received, ==, ECN_STORM);
    g_assert_cmpuint(st.ecn_ce_received, ==, 0);
    g_assert_cmpuint(st.cnp_sent, ==, 0);
    pair_pump(&pr);
    g_assert_cmpuint(pr.raw_frames[0], ==, 0);
    pr.raw[0] = false;

    n = ecn_send(&pr, q, 0xa0, false, out);
    g_assert_cmpuint(n, ==, 1);
    ecn_deliver(&pr, q, 0xa0, out, n);
    peer_check(&pr.p[1]);
    pair_teardown(&pr);
}

/*
 * ecn=off on B: its ACKs carry the AV's traffic class as it is, and a
 * CE-marked packet is counted but not answered.
 */
static void test_ecn_off(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    GByteArray *out[2];
    struct rs_device_stats st;
    LoopQp q[2];
    unsigned n;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    n = ecn_send(&pr, q, 0xa0, true, out);
    g_assert_cmpuint(n, ==, 1);
    g_assert_cmphex(out[0]->data[ECN_TOS], ==, ECN_DSCP);
    ecn_deliver(&pr, q, 0xa0, out, n);
    query_stats(pr.p[1].d, &st, sizeof(st));
    g_assert_cmpuint(st.ecn_ce_received, ==, 1);
    g_assert_cmpuint(st.cnp_sent, ==, 0);
    peer_check(&pr.p[1]);
    pair_teardown(&pr);
}

static void register_ecn_tests(void)
{
    QOSGraphTestOptions pair = { .before = ecn_before };
    QOSGraphTestOptions b_off = {
        .before = ecn_before, .arg = (void *)",ecn=off",
    };

    rs_add_standalone_test("ecn/mark", test_ecn_mark, &pair);
    rs_add_standalone_test("ecn/cnp", test_ecn_cnp, &pair);
    rs_add_standalone_test("ecn/ud", test_ecn_ud, &pair);
    rs_add_standalone_test("ecn/hostile", test_ecn_hostile, &pair);
    rs_add_standalone_test("ecn/off", test_ecn_off, &b_off);
}

libqos_init(register_ecn_tests);
