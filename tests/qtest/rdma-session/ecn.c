/*
 * rdma-session qtests: ECN and congestion notification packets (ABI
 * 1.10, RS_CAP_ECN).  Two adapters on the test's wire, which marks
 * frames CE as a congested switch would: the ECT(0) mark on what the
 * adapters send, the CNP a CE-marked packet earns its sender (its
 * headers byte by byte, one per QP per cnp-interval of virtual time),
 * and CNPs received, from strangers and in a storm; DCQCN's rate, target
 * and alpha after CNPs and as virtual time passes, against the
 * equations, and the requester paced to its rate.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"

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

/* The same, @arg: more properties of A. */
static void *ecn_a_before(GString *cmd_line, void *arg)
{
    g_autofree char *b = g_strdup_printf(",cnp-interval=%u",
                                         ECN_INTERVAL_US);
    g_autofree char *a = g_strdup_printf("%s%s", b, (char *)arg);

    return pair_before_props(cmd_line, a, b);
}

/*
 * DCQCN as the equations say it, with the properties' defaults (line
 * rate 100000 Mbps unless changed): rates in Mbps, alpha and g in 1/1024,
 * the periods' next times in virtual ns since the first CNP.
 */
typedef struct EcnModel {
    uint32_t line, min;
    uint32_t rc, rt, alpha, t, b;
    int64_t alpha_next, incr_next;
} EcnModel;

#define DCQCN_G             1019
#define DCQCN_ALPHA0        1023
#define DCQCN_K_NS          (55 * 1000)
#define DCQCN_T_NS          (300 * 1000)
#define DCQCN_F             5
#define DCQCN_AI            5
#define DCQCN_HAI           50

/*
 * A CNP at @now: Rt = Rc, Rc *= 1 - alpha / 2 (the cut rounded up),
 * alpha = g alpha + 1 - g.
 */
static void model_cnp(EcnModel *m, int64_t now)
{
    if (!m->alpha) {
        m->rc = m->rt = m->line;
        m->alpha = DCQCN_ALPHA0;
    }
    m->rt = m->rc;
    m->rc = MAX(m->rc - (uint32_t)DIV_ROUND_UP((uint64_t)m->rc * m->alpha,
                                                2048), m->min);
    m->alpha = (DCQCN_G * m->alpha + (1024 - DCQCN_G) * 1024) / 1024;
    m->t = m->b = 0;
    m->alpha_next = now + DCQCN_K_NS;
    m->incr_next = now + DCQCN_T_NS;
}

/*
 * One increase stage (after t or b moved on): below F stages fast
 * recovery, from F additive increase Rt += AI, with both above F hyper
 * increase Rt += HAI (min(t, b) - F); then Rc = (Rt + Rc) / 2 rounded up.
 */
static void model_stage(EcnModel *m)
{
    if (MAX(m->t, m->b) >= DCQCN_F) {
        m->rt = MIN(m->rt + (MIN(m->t, m->b) > DCQCN_F ?
                             DCQCN_HAI * (MIN(m->t, m->b) - DCQCN_F) :
                             DCQCN_AI), m->line);
    }
    m->rc = (m->rt + m->rc + 1) / 2;
}

/* Until @to: alpha = g alpha each period K, a stage each period T. */
static void model_advance(EcnModel *m, int64_t to)
{
    while (MIN(m->alpha_next, m->incr_next) <= to) {
        if (m->alpha_next <= m->incr_next) {
            m->alpha = DCQCN_G * m->alpha / 1024;
            m->alpha_next += DCQCN_K_NS;
            continue;
        }
        m->t++;
        model_stage(m);
        m->incr_next += DCQCN_T_NS;
    }
}

/* Adapter @i's QP @qpn in query-rdma-session: rate, target-rate, alpha. */
static void ecn_qp_rate(Pair *pr, int i, uint32_t qpn, uint32_t *rc,
                        uint32_t *rt, uint32_t *alpha)
{
    g_autofree char *gid0 = g_strdup_printf("::ffff:10.0.0.%d", i + 1);
    QDict *resp = qtest_qmp(qrs_qts(pr->p[i].d),
                            "{ 'execute': 'query-rdma-session' }");
    QListEntry *e, *f;
    bool found = false;

    g_assert_false(qdict_haskey(resp, "error"));
    QLIST_FOREACH_ENTRY(qdict_get_qlist(resp, "return"), e) {
        QDict *d = qobject_to(QDict, qlist_entry_obj(e));
        QList *ids = qdict_get_qlist(d, "identities");
        QDict *g0 = qlist_empty(ids) ? NULL :
                    qobject_to(QDict, qlist_peek(ids));

        if (!g0 || strcmp(qdict_get_str(g0, "address"), gid0)) {
            continue;
        }
        QLIST_FOREACH_ENTRY(qdict_get_qlist(d, "qps"), f) {
            QDict *x = qobject_to(QDict, qlist_entry_obj(f));

            if (qdict_get_int(x, "qpn") == qpn) {
                *rc = qdict_get_int(x, "rate");
                *rt = qdict_get_int(x, "target-rate");
                *alpha = qdict_get_int(x, "alpha");
                found = true;
            }
        }
    }
    g_assert_true(found);
    qobject_unref(resp);
}

/* A's QP @qpn has the model's rate, target and alpha. */
static void ecn_expect_rate(Pair *pr, uint32_t qpn, const EcnModel *m)
{
    uint32_t rc, rt, alpha;

    ecn_qp_rate(pr, 0, qpn, &rc, &rt, &alpha);
    g_test_message("rate %u target %u alpha %u, model %u %u %u", rc, rt,
                   alpha, m->rc, m->rt, m->alpha);
    g_assert_cmpuint(rc, ==, m->rc);
    g_assert_cmpuint(rt, ==, m->rt);
    g_assert_cmpuint(alpha, ==, m->alpha);
}

/* Mark frame @f CE (its DSCP kept), as a congested switch does. */
static void ecn_mark_ce(uint8_t *f, size_t len)
{
    f[ECN_TOS] |= ECN_CE;
    roce_reseal(f, len);
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
 * A SEND of 100 bytes from A's RC QP to B's, its frame marked CE on the
 * way if @ce.  B must answer with a CNP to A's QP (checked) ahead of its
 * ACK if @cnp, else with the ACK alone, whose TOS must be @ack_tos; A
 * gets both, and the SEND completes on both sides.
 */
static void ecn_exchange(Pair *pr, LoopQp q[2], uint64_t wr_id, bool ce,
                         bool cnp, uint8_t ack_tos)
{
    struct rs_sge sge;
    struct rs_cqe cqe;
    GByteArray *f, *out[2];
    unsigned i, n = 0;

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
    g_assert_cmpuint(n, ==, cnp ? 2 : 1);
    g_assert_cmphex(out[n - 1]->data[ROCE_BTH], ==, OP_ACK);
    g_assert_cmphex(out[n - 1]->data[ECN_TOS], ==, ack_tos);
    if (cnp) {
        ecn_check_cnp(out[0], pr->last[0], q[0].qpn,
                      lduw_be_p(out[1]->data + 14 + 20));
    }
    img_move(&pr->p[1], 0x1000, &pr->p[0], 0, 100);

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

/* What adapter @i counted: CE received, CNPs sent, received, ignored. */
static void ecn_expect_stats(Pair *pr, int i, uint64_t ce, uint64_t sent,
                             uint64_t received, uint64_t ignored)
{
    struct rs_device_stats st;

    query_stats(pr->p[i].d, &st, sizeof(st));
    g_assert_cmpuint(st.ecn_ce_received, ==, ce);
    g_assert_cmpuint(st.cnp_sent, ==, sent);
    g_assert_cmpuint(st.cnp_received, ==, received);
    g_assert_cmpuint(st.cnp_ignored, ==, ignored);
}

/*
 * The ECT(0) mark: A's SENDs and B's ACKs leave with the AV's DSCP and
 * ECN 10; a frame that arrives ECT(0) is no congestion.
 */
static void test_ecn_mark(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    LoopQp q[2];
    unsigned i;

    pair_setup(&pr, obj, data, alloc);
    g_assert_true(qrs_readl(pr.p[0].d, A_RS_CAPS) & RS_CAP_ECN);
    pair_rc(&pr, q, 0, STD_ACCESS);
    for (i = 0; i < 3; i++) {
        ecn_exchange(&pr, q, 0xa0 + i, false, false, ECN_DSCP | ECN_ECT0);
    }
    for (i = 0; i < 2; i++) {
        ecn_expect_stats(&pr, i, 0, 0, 0, 0);
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
    const uint8_t tos = ECN_DSCP | ECN_ECT0;
    uint32_t rate[3], moved[3];
    Pair pr;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);

    ecn_exchange(&pr, q, 0xa0, true, true, tos);
    ecn_expect_stats(&pr, 1, 1, 1, 0, 0);
    ecn_expect_stats(&pr, 0, 0, 0, 1, 0);
    /* Within the interval: counted, no CNP; not marked: nothing. */
    ecn_exchange(&pr, q, 0xa1, true, false, tos);
    ecn_exchange(&pr, q, 0xa2, false, false, tos);
    ecn_expect_stats(&pr, 1, 2, 1, 0, 0);
    /* After the interval: another. */
    qtest_clock_step(qrs_qts(pr.p[0].d), ECN_INTERVAL_US * 1000ll);
    ecn_exchange(&pr, q, 0xa3, true, true, tos);
    ecn_expect_stats(&pr, 1, 3, 2, 0, 0);
    ecn_expect_stats(&pr, 0, 0, 0, 2, 0);

    /* The counters and the QP's DCQCN state move with the VM. */
    ecn_qp_rate(&pr, 0, q[0].qpn, &rate[0], &rate[1], &rate[2]);
    g_assert_cmpuint(rate[0], <, 100000);
    pr.raw[0] = pr.raw[1] = true;
    pair_migrate(&pr);
    pr.hold[0] = pr.hold[1] = false;
    ecn_expect_stats(&pr, 1, 3, 2, 0, 0);
    ecn_expect_stats(&pr, 0, 0, 0, 2, 0);
    ecn_qp_rate(&pr, 0, q[0].qpn, &moved[0], &moved[1], &moved[2]);
    g_assert_cmpmem(moved, sizeof(moved), rate, sizeof(rate));
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
    struct rs_sge rs;
    GByteArray *cnp;
    LoopQp q[2];
    uint8_t f[256], deth[8];
    size_t len;

    pair_setup(&pr, obj, data, alloc);
    pair_ud(&pr, q);
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
    ecn_expect_stats(&pr, 1, 2, 2, 0, 0);
    pr.hold[1] = false;
    pair_teardown(&pr);
}

/* Wait until adapter @i has taken @n CNPs (received and ignored). */
static void ecn_wait_cnps(Pair *pr, int i, uint64_t n)
{
    gint64 end = g_get_monotonic_time() + 4 * RS_QOS_TIMEOUT_US;
    struct rs_device_stats st;

    for (;;) {
        pair_pump(pr);
        query_stats(pr->p[i].d, &st, sizeof(st));
        if (st.cnp_received + st.cnp_ignored >= n) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

#define ECN_STORM       10000

/* A CNP to A's QP @qpn from @sip, @paylen bytes of zeros. */
static size_t ecn_cnp(uint8_t *f, uint32_t sip, uint32_t qpn,
                      size_t paylen)
{
    static const uint8_t zero[32];

    g_assert_cmpuint(paylen, <=, sizeof(zero));
    return roce_frame(f, pair_mac[0], sip, 0x0a000001, OP_CNP, qpn, 0,
                      zero, paylen);
}

/*
 * CNPs into A: for no QP, QP 0, past the table, with another P_Key, from
 * another address, cut short and too long: ignored and counted; a storm
 * of ECN_STORM good ones: counted.  A sends nothing for any of them, and
 * its QP works after.
 */
static void test_ecn_hostile(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    struct rs_device_stats st;
    uint32_t rc, rt, alpha;
    uint8_t f[256];
    LoopQp q[2], other[2];
    size_t len;
    unsigned i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_rc(&pr, other, 0, STD_ACCESS);
    pair_log_reset(&pr);
    pr.raw[0] = true;

    pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000002, q[0].qpn + 7, 16));
    pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000002, 0, 16));
    pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000002, 0xffffff, 16));
    len = ecn_cnp(f, 0x0a000002, q[0].qpn, 16);
    stw_be_p(f + ROCE_BTH + 2, 0x1234);
    roce_reseal(f, len);
    pair_inject(&pr, 0, f, len);
    pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000009, q[0].qpn, 16));
    pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000002, q[0].qpn, 8));
    pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000002, q[0].qpn, 32));
    ecn_wait_cnps(&pr, 0, 7);
    ecn_expect_stats(&pr, 0, 0, 0, 0, 7);

    /* The storm, CE-marked itself: counted, never answered. */
    len = ecn_cnp(f, 0x0a000002, q[0].qpn, 16);
    ecn_mark_ce(f, len);
    for (i = 0; i < ECN_STORM; i++) {
        pair_inject(&pr, 0, f, len);
    }
    ecn_wait_cnps(&pr, 0, 7 + ECN_STORM);
    ecn_expect_stats(&pr, 0, 0, 0, ECN_STORM, 7);
    query_stats(pr.p[0].d, &st, sizeof(st));
    g_assert_cmpuint(st.dcqcn_rate_reductions, ==, ECN_STORM);
    /* The QP's rate at dcqcn-min-rate, the other QP's untouched. */
    ecn_qp_rate(&pr, 0, q[0].qpn, &rc, &rt, &alpha);
    g_assert_cmpuint(rc, ==, 1);
    g_assert_cmpuint(rt, ==, 1);
    ecn_qp_rate(&pr, 0, other[0].qpn, &rc, &rt, &alpha);
    g_assert_cmpuint(rc, ==, 100000);
    g_assert_cmpuint(rt, ==, 100000);
    g_assert_cmpuint(alpha, ==, 0);
    pair_pump(&pr);
    g_assert_cmpuint(pr.raw_frames[0], ==, 0);
    pr.raw[0] = false;

    ecn_exchange(&pr, q, 0xa0, false, false, ECN_DSCP | ECN_ECT0);
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
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    ecn_exchange(&pr, q, 0xa0, true, false, ECN_DSCP);
    ecn_expect_stats(&pr, 1, 1, 0, 0, 0);
    peer_check(&pr.p[1]);
    pair_teardown(&pr);
}

/*
 * DCQCN on A's QP: two CNPs cut its rate and raise alpha as the
 * equations say; as virtual time passes, alpha decays every period
 * without a CNP, the rate recovers halfway to the target every period
 * (fast recovery), then the target grows by the additive step.
 */
static void test_ecn_dcqcn(void *obj, void *data, QGuestAllocator *alloc)
{
    static const int64_t steps_us[] = {
        55, 245, 300, 300, 300, 300, 300, 1000, 3300,
    };
    EcnModel m = { .line = 100000, .min = 1 };
    struct rs_device_stats st;
    Pair pr;
    uint8_t f[256];
    LoopQp q[2];
    int64_t now = 0;
    unsigned i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    m.rc = m.rt = m.line;
    ecn_expect_rate(&pr, q[0].qpn, &m);

    for (i = 0; i < 2; i++) {
        pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000002, q[0].qpn, 16));
        model_cnp(&m, now);
    }
    ecn_wait_cnps(&pr, 0, 2);
    query_stats(pr.p[0].d, &st, sizeof(st));
    g_assert_cmpuint(st.dcqcn_rate_reductions, ==, 2);
    ecn_expect_rate(&pr, q[0].qpn, &m);
    for (i = 0; i < ARRAY_SIZE(steps_us); i++) {
        qtest_clock_step(qrs_qts(pr.p[0].d), steps_us[i] * 1000);
        now += steps_us[i] * 1000;
        model_advance(&m, now);
        ecn_expect_rate(&pr, q[0].qpn, &m);
    }
    g_assert_cmpuint(m.t, >, DCQCN_F);      /* additive increase reached */
    pair_teardown(&pr);
}

/*
 * Hyper increase: with dcqcn-byte-reset=1024 each 1 KiB packet of an
 * 8 KiB WRITE is a byte stage (B = 8, the last four additive), then
 * seven time stages: additive up to F, hyper increase once both T and
 * B are above F.  Rc and Rt equal the model's; alpha decays as the
 * requester's completion takes a few us, so it is not compared.
 */
static void test_ecn_dcqcn_hyper(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    EcnModel m = { .line = 100000, .min = 1 };
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    uint32_t rc, rt, alpha;
    uint8_t f[256];
    LoopQp q[2];
    unsigned i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    for (i = 0; i < 2; i++) {
        pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000002, q[0].qpn, 16));
        model_cnp(&m, 0);
    }
    ecn_wait_cnps(&pr, 0, 2);

    pair_log_reset(&pr);
    sge = peer_sge(a, 0, 8192);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, &sge, 1,
              b->buf + 8192, b->key[0], 0);
    img_move(b, 8192, a, 0, 8192);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    g_assert_cmpuint(pr.nops[0], ==, 8);
    for (i = 0; i < 8; i++) {
        m.b++;
        model_stage(&m);
    }
    ecn_qp_rate(&pr, 0, q[0].qpn, &rc, &rt, &alpha);
    g_assert_cmpuint(rc, ==, m.rc);
    g_assert_cmpuint(rt, ==, m.rt);

    /* The WRITE took less than a period: seven more make T 7. */
    qtest_clock_step(qrs_qts(a->d), 7 * DCQCN_T_NS);
    for (i = 0; i < 7; i++) {
        m.t++;
        model_stage(&m);
    }
    ecn_qp_rate(&pr, 0, q[0].qpn, &rc, &rt, &alpha);
    g_test_message("rate %u target %u, model %u %u", rc, rt, m.rc, m.rt);
    g_assert_cmpuint(rc, ==, m.rc);
    g_assert_cmpuint(rt, ==, m.rt);
    /* 8 + 7 stages additive would be 75 Mbps; two of them were hyper */
    g_assert_cmpuint(m.rt - 50048, ==, 4 * DCQCN_AI + 5 * DCQCN_AI +
                     DCQCN_HAI * 1 + DCQCN_HAI * 2);
    peer_check(b);
    pair_teardown(&pr);
}

/* A slow line and a long increase period: pacing without recovery. */
#define ECN_PACE_PROPS  ",dcqcn-line-rate=800,dcqcn-min-rate=8," \
                        "dcqcn-time-reset=1000000"

/* Frames adapter A has sent since the log's reset, waited for a while. */
static unsigned ecn_frames_settled(Pair *pr)
{
    unsigned i;

    for (i = 0; i < 20; i++) {
        pair_pump(pr);
        g_usleep(5000);
    }
    return pr->nops[0];
}

/*
 * The requester paced to its rate: A's QP limited to dcqcn-min-rate, 8
 * Mbps (one byte per us), sends what its 4096 bytes of tokens allow at
 * once (four 1 KiB packets of an 8 KiB WRITE), then one packet per 1100
 * us of virtual time; no time, no packet.  With dcqcn=off the CNPs are
 * only counted and the WRITE leaves at once.
 */
static void test_ecn_dcqcn_pace(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    PairSockets *s = data;
    bool on = !strstr(s->a_props, "dcqcn=off");
    struct rs_device_stats st;
    struct rs_sge sge;
    struct rs_cqe cqe;
    uint32_t rc, rt, alpha;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint8_t f[256];
    LoopQp q[2];
    unsigned i, n;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    for (i = 0; i < 20; i++) {
        pair_inject(&pr, 0, f, ecn_cnp(f, 0x0a000002, q[0].qpn, 16));
    }
    ecn_wait_cnps(&pr, 0, 20);
    query_stats(a->d, &st, sizeof(st));
    g_assert_cmpuint(st.cnp_received, ==, 20);
    g_assert_cmpuint(st.dcqcn_rate_reductions, ==, on ? 20 : 0);
    ecn_qp_rate(&pr, 0, q[0].qpn, &rc, &rt, &alpha);
    g_assert_cmpuint(rc, ==, on ? 8 : 800);

    pair_log_reset(&pr);
    sge = peer_sge(a, 0, 8192);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, &sge, 1,
              b->buf + 8192, b->key[0], 0);
    img_move(b, 8192, a, 0, 8192);
    n = ecn_frames_settled(&pr);
    g_assert_cmpuint(n, ==, on ? 4 : 8);
    for (i = 1; n < 8; i++) {
        g_assert_cmpuint(i, <=, 8);
        qtest_clock_step(qrs_qts(a->d), 1100 * 1000);
        n = ecn_frames_settled(&pr);
        /* At most the bytes of the time since, a packet more at most. */
        g_assert_cmpuint(n, <=, 4 + i);
        g_assert_cmpuint(n, >=, 4 + i - 1);
    }
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    peer_check(b);
    pair_teardown(&pr);
}

static void register_ecn_tests(void)
{
    QOSGraphTestOptions pair = { .before = ecn_before };
    QOSGraphTestOptions b_off = {
        .before = ecn_before, .arg = (void *)",ecn=off",
    };
    QOSGraphTestOptions hyper = {
        .before = ecn_a_before, .arg = (void *)",dcqcn-byte-reset=1024",
    };
    QOSGraphTestOptions pace = {
        .before = ecn_a_before,
        .arg = (void *)ECN_PACE_PROPS,
    };
    QOSGraphTestOptions pace_off = {
        .before = ecn_a_before,
        .arg = (void *)ECN_PACE_PROPS ",dcqcn=off",
    };

    rs_add_standalone_test("ecn/mark", test_ecn_mark, &pair);
    rs_add_standalone_test("ecn/cnp", test_ecn_cnp, &pair);
    rs_add_standalone_test("ecn/ud", test_ecn_ud, &pair);
    rs_add_standalone_test("ecn/hostile", test_ecn_hostile, &pair);
    rs_add_standalone_test("ecn/off", test_ecn_off, &b_off);
    rs_add_standalone_test("ecn/dcqcn", test_ecn_dcqcn, &pair);
    rs_add_standalone_test("ecn/dcqcn-hyper", test_ecn_dcqcn_hyper, &hyper);
    rs_add_standalone_test("ecn/dcqcn-pace", test_ecn_dcqcn_pace, &pace);
    rs_add_standalone_test("ecn/dcqcn-off", test_ecn_dcqcn_pace, &pace_off);
}

libqos_init(register_ecn_tests);
