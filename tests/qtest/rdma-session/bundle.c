/*
 * rdma-session qtests: bundles between two adapters (the HELLO
 * negotiation, bundles on the wire and what lands, a peer that never
 * answers, a lost bundle, malformed bundles, migration)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"
#include "libqos/virtio.h"
#include "libqos/virtio-pci.h"
#include "standard-headers/linux/virtio_config.h"

#define BUNDLE_MAX      60000   /* x-bundle-max's default */

/* Both adapters with bundles (ids rsa, rsb); @arg: more for B. */
static void *bundle_before(GString *cmd_line, void *arg)
{
    g_autofree char *b = g_strdup_printf(",bundle=on,id=rsb%s",
                                         arg ? (char *)arg : "");

    return pair_before_props(cmd_line, ",bundle=on,id=rsa", b);
}

/* QOM counter x-bundle-@name of adapter @i. */
static uint64_t bundle_counter(Pair *pr, int i, const char *name)
{
    g_autofree char *prop = g_strdup_printf("x-bundle-%s", name);
    QDict *rsp = qtest_qmp(qrs_qts(pr->p[i].d),
                           "{ 'execute': 'qom-get', 'arguments':"
                           " { 'path': %s, 'property': %s } }",
                           i ? "/machine/peripheral/rsb" :
                           "/machine/peripheral/rsa", prop);
    uint64_t n;

    g_assert_true(qdict_haskey(rsp, "return"));
    n = qnum_get_uint(qobject_to(QNum, qdict_get(rsp, "return")));
    qobject_unref(rsp);
    return n;
}

/* Until adapter @i's counter x-bundle-@name is @n (it never passes it). */
static void wait_counter(Pair *pr, int i, const char *name, uint64_t n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    uint64_t v;

    while ((v = bundle_counter(pr, i, name)) < n) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmpuint(v, ==, n);
}

/* Frames with BTH opcode @op adapter @i sent since the log's reset. */
static unsigned count_op(Pair *pr, int i, uint8_t op)
{
    unsigned n, c = 0;

    pair_pump(pr);
    for (n = 0; n < pr->nops[i]; n++) {
        c += pr->op[i][n] == op;
    }
    return c;
}

/* A WRITE of @len bytes at @off from A to B's same offset; completed. */
static void bundle_write(Pair *pr, LoopQp q[2], uint32_t off, uint32_t len,
                         uint8_t seed, uint64_t wr_id)
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;

    peer_fill(a, off, len, seed);
    sge = peer_sge(a, off, len);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, wr_id, &sge, 1,
              b->buf + off, b->key[0], 0);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, wr_id, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, off, a, off, len);
    peer_check(b);
}

/* A's packets since the reset: one WRITE of @n packets, PSNs in order. */
static void expect_write_psns(Pair *pr, unsigned first, unsigned n)
{
    unsigned k;

    pair_pump(pr);
    g_assert_cmpuint(pr->nops[0], >=, first + n);
    g_assert_cmphex(pr->op[0][first], ==, OP_WRITE_FIRST);
    for (k = 1; k < n; k++) {
        g_assert_cmphex(pr->op[0][first + k], ==,
                        k == n - 1 ? OP_WRITE_LAST : OP_WRITE_MIDDLE);
        g_assert_cmphex(pr->psn[0][first + k], ==,
                        (pr->psn[0][first] + k) & 0xffffff);
    }
}

/* Until both adapters answered both HELLOs of the other; no more. */
static void wait_negotiated(Pair *pr)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    while (count_op(pr, 0, OP_BUNDLE_HELLO_REPLY) < 2 ||
           count_op(pr, 1, OP_BUNDLE_HELLO_REPLY) < 2) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmpuint(count_op(pr, 0, OP_BUNDLE_HELLO_REPLY), ==, 2);
    g_assert_cmpuint(count_op(pr, 1, OP_BUNDLE_HELLO_REPLY), ==, 2);
    g_assert_cmpuint(count_op(pr, 0, OP_BUNDLE_HELLO), ==, 2);
    g_assert_cmpuint(count_op(pr, 1, OP_BUNDLE_HELLO), ==, 2);
    /* Of each pair of HELLOs, the second (after a REPLY) is padded. */
    g_assert_cmpuint(pr->hello_big[0], ==, 1);
    g_assert_cmpuint(pr->hello_big[1], ==, 1);
}

/*
 * A's first RoCE frame to B is a small HELLO; B's REPLY to it brings the
 * HELLO padded to x-bundle-max, and B's REPLY to that makes A bundle from
 * then on.  Returns with both negotiated.
 */
static void bundle_negotiate(Pair *pr, LoopQp q[2])
{
    GByteArray *h;
    const uint8_t *pl;

    pair_log_reset(pr);
    pr->hold[0] = true;
    peer_fill(&pr->p[0], 0, 8192, 0x11);
    {
        struct rs_sge sge = peer_sge(&pr->p[0], 0, 8192);

        pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, &sge, 1,
                  pr->p[1].buf, pr->p[1].key[0], 0);
    }
    h = pair_take(pr, 0);
    /* No bigger than the REPLY it asks for: nothing to reflect. */
    g_assert_cmpuint(h->len, ==, HELLO_SMALL);
    g_assert_cmphex(h->data[ROCE_BTH], ==, OP_BUNDLE_HELLO);
    g_assert_cmphex(ldl_be_p(h->data + ROCE_BTH + 4) & 0xffffff, ==, 1);
    pl = h->data + ROCE_EXT;
    g_assert_cmpuint(lduw_be_p(pl), ==, 1);                /* version */
    g_assert_cmpuint(ldl_be_p(pl + 4), ==, BUNDLE_MAX);
    /* The switch passes it on, and what was held behind it. */
    lan_sock_send(pr->fd[1], h->data, h->len);
    g_byte_array_unref(h);
    pair_release(pr, 0);
    {
        struct rs_cqe cqe;

        pair_poll(pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    }
    img_move(&pr->p[1], 0, &pr->p[0], 0, 8192);
    peer_check(&pr->p[1]);
    /* Before the REPLYs: the eight packets alone, no bundle. */
    g_assert_cmpuint(pr->bundles[0], ==, 0);
    expect_write_psns(pr, 1, 8);
    /* B's HELLO came with its first ACK; both sides answered both. */
    wait_negotiated(pr);
    wait_counter(pr, 1, "hello-rx", 2);
    wait_counter(pr, 0, "hello-rx", 2);
    g_assert_cmpuint(bundle_counter(pr, 0, "hello-tx"), ==, 2);
    g_assert_cmpuint(bundle_counter(pr, 1, "hello-tx"), ==, 2);
}

/*
 * Negotiation, then bundles: 16 packets of a WRITE leave in bundles,
 * each packet in it as it would have gone alone; the data lands.
 */
static void test_bundle_negotiate(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Pair pr;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    bundle_negotiate(&pr, q);

    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x1000, 16384, 0x22, 0xa1);
    pair_pump(&pr);
    g_assert_cmpuint(pr.nops[0], ==, 16);
    expect_write_psns(&pr, 0, 16);
    /* One run of the requester (the window is 64): one bundle. */
    g_assert_cmpuint(pr.bundles[0], ==, 1);
    g_assert_cmpuint(pr.bundled[0], ==, 16);
    g_assert_cmpuint(count_op(&pr, 0, OP_BUNDLE_HELLO), ==, 0);
    g_assert_cmpuint(bundle_counter(&pr, 0, "tx"), ==, pr.bundles[0]);
    g_assert_cmpuint(bundle_counter(&pr, 0, "tx-frames"), ==,
                     pr.bundled[0]);
    g_assert_cmpuint(bundle_counter(&pr, 1, "rx"), ==, pr.bundles[0]);
    g_assert_cmpuint(bundle_counter(&pr, 1, "rx-dropped"), ==, 0);

    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/*
 * B acts as a standard peer (bundle=off): it drops the HELLO and never
 * answers, so A sends it standard frames only and asks again after
 * 100 ms, then 200 ms; B itself sends no HELLO and no bundle.
 */
static void test_bundle_standard_peer(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    Pair pr;
    LoopQp q[2];
    QTestState *qts;

    pair_setup(&pr, obj, data, alloc);
    qts = qrs_qts(pr.p[0].d);
    pair_rc(&pr, q, 0, STD_ACCESS);

    pair_log_reset(&pr);
    bundle_write(&pr, q, 0, 8192, 0x31, 0xa0);
    g_assert_cmpuint(count_op(&pr, 0, OP_BUNDLE_HELLO), ==, 1);
    g_assert_cmphex(pr.op[0][0], ==, OP_BUNDLE_HELLO);
    expect_write_psns(&pr, 1, 8);
    g_assert_cmpuint(bundle_counter(&pr, 1, "hello-rx"), ==, 1);

    /* Within 100 ms: no HELLO again, still no bundle. */
    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x2000, 8192, 0x32, 0xa1);
    g_assert_cmpuint(pr.nops[0], ==, 8);
    expect_write_psns(&pr, 0, 8);

    /* After 100 ms the second HELLO, then none for 200 ms. */
    qtest_clock_step(qts, 110 * 1000 * 1000);
    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x4000, 8192, 0x33, 0xa2);
    g_assert_cmpuint(count_op(&pr, 0, OP_BUNDLE_HELLO), ==, 1);
    qtest_clock_step(qts, 150 * 1000 * 1000);
    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x6000, 8192, 0x34, 0xa3);
    g_assert_cmpuint(count_op(&pr, 0, OP_BUNDLE_HELLO), ==, 0);
    qtest_clock_step(qts, 60 * 1000 * 1000);
    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x0, 8192, 0x35, 0xa4);
    g_assert_cmpuint(count_op(&pr, 0, OP_BUNDLE_HELLO), ==, 1);

    g_assert_cmpuint(pr.hello_big[0], ==, 0);
    g_assert_cmpuint(bundle_counter(&pr, 0, "tx"), ==, 0);
    g_assert_cmpuint(bundle_counter(&pr, 0, "hello-tx"), ==, 3);
    g_assert_cmpuint(bundle_counter(&pr, 1, "hello-rx"), ==, 3);
    g_assert_cmpuint(bundle_counter(&pr, 1, "hello-tx"), ==, 0);
    g_assert_cmpuint(bundle_counter(&pr, 1, "tx"), ==, 0);
    g_assert_cmpuint(pr.bundles[0] + pr.bundles[1], ==, 0);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/* SENDs, WRITEs and READs both ways through bundles, every byte checked. */
static void test_bundle_data(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];
    int k;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    bundle_negotiate(&pr, q);

    pair_log_reset(&pr);
    /* Three SENDs of 5000 bytes, posted together. */
    for (k = 0; k < 3; k++) {
        sge = peer_sge(b, 0x100 + k * 0x2000, 6000);
        eng_post_recv(b->d, &q[1], 0xb0 + k, &sge, 1);
    }
    for (k = 0; k < 3; k++) {
        peer_fill(a, 0x200 + k * 0x2000, 5000, 0x50 + k);
        sge = peer_sge(a, 0x200 + k * 0x2000, 5000);
        pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0 + k, &sge, 1, 0, 0, 0);
    }
    for (k = 0; k < 3; k++) {
        pair_poll(&pr, 1, &cqe);
        assert_cqe(&cqe, 0xb0 + k, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
        g_assert_cmpuint(cqe.byte_len, ==, 5000);
        img_move(b, 0x100 + k * 0x2000, a, 0x200 + k * 0x2000, 5000);
    }
    for (k = 0; k < 3; k++) {
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + k, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    }
    peer_check(b);
    g_assert_cmpuint(pr.bundles[0], >=, 1);

    /* Two READs of 12 KiB: B's responses come in bundles. */
    pair_log_reset(&pr);
    for (k = 0; k < 2; k++) {
        peer_fill(b, k * 0x4000, 12288, 0x60 + k);
        sge = peer_sge(a, k * 0x4000, 12288);
        pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa8 + k, &sge, 1,
                  b->buf + k * 0x4000, b->key[0], 0);
    }
    for (k = 0; k < 2; k++) {
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa8 + k, RS_WC_SUCCESS, RS_WR_RDMA_READ,
                   q[0].qpn);
        g_assert_cmpuint(cqe.byte_len, ==, 12288);
        img_move(a, k * 0x4000, b, k * 0x4000, 12288);
    }
    peer_check(a);
    pair_pump(&pr);
    g_assert_cmpuint(pr.bundles[1], >=, 1);
    g_assert_cmpuint(count_op(&pr, 1, OP_READ_RESP_FIRST), ==, 2);
    g_assert_cmpuint(count_op(&pr, 1, OP_READ_RESP_MIDDLE), ==, 20);
    g_assert_cmpuint(count_op(&pr, 1, OP_READ_RESP_LAST), ==, 2);

    /* And WRITEs back to back, B's buffer checked whole. */
    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x0, 20000, 0x70, 0xaa);
    bundle_write(&pr, q, 0x5000, 12000, 0x71, 0xab);
    peer_check(a);
    g_assert_cmpuint(bundle_counter(&pr, 0, "rx-dropped") +
                     bundle_counter(&pr, 1, "rx-dropped"), ==, 0);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/* A bundle is lost whole: go-back-N sends its packets again. */
static void test_bundle_loss(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];
    unsigned sent;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    bundle_negotiate(&pr, q);

    pair_log_reset(&pr);
    pr.drop_bundle[0] = 1;
    peer_fill(a, 0, 24576, 0x81);
    sge = peer_sge(a, 0, 24576);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf, b->key[0], 0);
    pair_wait_frames(&pr, 0, 2);
    g_assert_cmpuint(pr.bundles[0], >=, 1);
    qtest_clock_step(qrs_qts(a->d), 5000000000ll);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0, a, 0, 24576);
    peer_check(b);
    /* More than the 24 packets went out: the lost ones again. */
    pair_pump(&pr);
    sent = pr.nops[0];
    g_assert_cmpuint(sent, >, 24);
    g_assert_cmpuint(count_op(&pr, 0, OP_WRITE_FIRST), >=, 2);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

typedef enum {
    BAD_COUNT_0,
    BAD_COUNT_1,
    BAD_COUNT_MORE,
    BAD_COUNT_LESS,
    BAD_LEN_ZERO,
    BAD_LEN_SHORT,
    BAD_LEN_PAST_END,
    BAD_TRUNCATED,
    BAD_NESTED,
    BAD_INNER_NOT_ROCE,
    BAD_TVER,
    BAD_N
} BadBundle;

/* Bundle @f (a copy of a good one, @len bytes) broken as @how. */
static size_t bundle_break(uint8_t *f, size_t len, BadBundle how)
{
    size_t first = ROCE_EXT + 4;
    unsigned count = lduw_be_p(f + ROCE_EXT);

    switch (how) {
    case BAD_COUNT_0:
        stw_be_p(f + ROCE_EXT, 0);
        break;
    case BAD_COUNT_1:
        stw_be_p(f + ROCE_EXT, 1);
        break;
    case BAD_COUNT_MORE:
        stw_be_p(f + ROCE_EXT, count + 1);
        break;
    case BAD_COUNT_LESS:
        stw_be_p(f + ROCE_EXT, count - 1);
        break;
    case BAD_LEN_ZERO:
        stw_be_p(f + first, 0);
        break;
    case BAD_LEN_SHORT:
        stw_be_p(f + first, 40);
        break;
    case BAD_LEN_PAST_END:
        stw_be_p(f + first, lduw_be_p(f + first) + 1);
        break;
    case BAD_TRUNCATED:
        /* The last frame cut short, the outer lengths consistent. */
        len -= 100;
        stw_be_p(f + 16, len - 14);
        stw_be_p(f + 14 + 10, 0);
        stw_be_p(f + 14 + 20 + 4, len - 14 - 20);
        break;
    case BAD_NESTED:
        f[first + 2 + ROCE_BTH] = OP_BUNDLE;
        break;
    case BAD_INNER_NOT_ROCE:
        stw_be_p(f + first + 2 + 14 + 20 + 2, 4792);
        break;
    case BAD_TVER:
        f[ROCE_BTH + 1] |= 1;
        break;
    default:
        g_assert_not_reached();
    }
    return len;
}

/*
 * Malformed bundles, each made from a good one A sent, are dropped whole
 * by B: nothing of them lands.  The good one then does.
 */
static void test_bundle_malformed(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];
    GByteArray *good;
    g_autofree uint8_t *f = g_malloc(65536);
    int how;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    bundle_negotiate(&pr, q);

    pair_log_reset(&pr);
    pr.hold[0] = true;
    peer_fill(a, 0, 16384, 0x91);
    sge = peer_sge(a, 0, 16384);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf, b->key[0], 0);
    good = pair_take(&pr, 0);
    g_assert_cmphex(good->data[ROCE_BTH], ==, OP_BUNDLE);
    g_assert_cmpuint(lduw_be_p(good->data + ROCE_EXT), >=, 2);
    for (how = 0; how < BAD_N; how++) {
        size_t len;

        memcpy(f, good->data, good->len);
        len = bundle_break(f, good->len, how);
        pair_inject(&pr, 1, f, len);
        wait_counter(&pr, 1, "rx-dropped", how + 1);
        g_assert_cmpuint(bundle_counter(&pr, 1, "rx"), ==, 0);
        peer_check(b);          /* nothing landed */
    }
    pair_inject(&pr, 1, good->data, good->len);
    wait_counter(&pr, 1, "rx", 1);
    g_byte_array_unref(good);
    pair_release(&pr, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0, a, 0, 16384);
    peer_check(b);
    g_assert_cmpuint(bundle_counter(&pr, 1, "rx-dropped"), ==, BAD_N);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/*
 * A migration empties the peer table (the path may differ): the first
 * packets after it go alone behind a new HELLO, then bundles again.
 */
static void test_bundle_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    bundle_negotiate(&pr, q);
    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x1000, 16384, 0x22, 0xa1);
    g_assert_cmpuint(pr.bundles[0], >=, 1);

    pair_migrate(&pr);
    /*
     * The destination's first frames to B (the resume's RNR NAK) go
     * alone behind a new HELLO; B asks again too.
     */
    pair_wait_frames(&pr, 0, 2);
    pair_wait_frames(&pr, 1, 2);
    g_assert_cmphex(pr.op[0][0], ==, OP_BUNDLE_HELLO);
    g_assert_cmphex(pr.op[1][0], ==, OP_BUNDLE_HELLO);
    g_assert_cmpuint(count_op(&pr, 0, OP_BUNDLE), ==, 0);
    g_assert_cmpuint(bundle_counter(&pr, 0, "hello-tx"), ==, 1);
    pair_release(&pr, 0);
    pair_release(&pr, 1);
    wait_negotiated(&pr);

    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x2000, 16384, 0x24, 0xa3);
    g_assert_cmpuint(pr.bundles[0], >=, 1);
    expect_write_psns(&pr, 0, 16);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/*
 * WRITEs from A until one leaves in a bundle: negotiated, whatever the
 * handshake took.
 */
static void negotiate_by_traffic(Pair *pr, LoopQp q[2])
{
    int k;

    for (k = 0; k < 8; k++) {
        pair_log_reset(pr);
        bundle_write(pr, q, 0x2000, 16384, 0x40 + k, 0xc0 + k);
        pair_pump(pr);
        if (pr->bundles[0]) {
            return;
        }
        g_usleep(10000);
    }
    g_assert_not_reached();
}

/* A frame's BTH PSN. */
static uint32_t f_psn(const uint8_t *f)
{
    return ldl_be_p(f + ROCE_BTH + 8) & 0xffffff;
}

/* A's next request to B, kept from the wire: a template. */
static GByteArray *a_request(Pair *pr, LoopQp q[2], uint8_t wr, uint8_t op,
                             uint32_t len)
{
    struct rs_sge sge = peer_sge(&pr->p[0], 0x7000, len);
    GByteArray *g;

    pr->hold[0] = true;
    pair_post(pr, 0, &q[0], wr, 0xe0, &sge, 1, pr->p[1].buf + 0x7000,
              pr->p[1].key[0], 0);
    while ((g = pair_take(pr, 0))->data[ROCE_BTH] == OP_BUNDLE_HELLO) {
        g_byte_array_unref(g);
    }
    g_assert_cmphex(g->data[ROCE_BTH], ==, op);
    pair_forget(pr, 0);
    return g;
}

/*
 * A bundle of 36 READ requests (max_dest_rd_atomic is 8) and, in the
 * same socket write, a HELLO: the READ responses B sends before its REPLY
 * to the HELLO are those the bundle made in its receive callback.  A
 * received frame, a bundle of any size, gets RS_RESP_BUDGET (32) there;
 * the rest come from the bottom half.
 */
static void test_bundle_frame_work(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    enum { NREAD = 36 };
    g_autofree uint8_t *bundle = g_malloc(65536);
    uint8_t req[NREAD][128], hello[128], pl[16];
    const uint8_t *in[NREAD];
    size_t len[NREAD], blen, hlen;
    uint32_t be[2], psn0;
    struct iovec iov[4];
    GByteArray *g;
    unsigned k, before = 0;
    LoopQp q[2];
    Pair pr;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    g = a_request(&pr, q, RS_WR_RDMA_READ, OP_READ_REQ, 64);
    psn0 = f_psn(g->data);
    for (k = 0; k < NREAD; k++) {
        memcpy(req[k], g->data, g->len);
        stl_be_p(req[k] + ROCE_BTH + 8, (psn0 + k) & 0xffffff);
        stq_be_p(req[k] + ROCE_EXT, pr.p[1].buf + k * 64);
        roce_reseal(req[k], g->len);
        in[k] = req[k];
        len[k] = g->len;
    }
    blen = roce_bundle(bundle, in, len, NREAD);
    memset(pl, 0, sizeof(pl));
    stw_be_p(pl, 1);
    stl_be_p(pl + 4, 60000);
    hlen = roce_frame(hello, pair_mac[1], 0x0a000001, 0x0a000002,
                      OP_BUNDLE_HELLO, 1, 0, pl, sizeof(pl));
    memcpy(hello + 6, pair_mac[0], 6);      /* from A: REPLY to A */
    g_byte_array_unref(g);

    pair_log_reset(&pr);
    pr.hold[1] = true;
    be[0] = cpu_to_be32(blen);
    be[1] = cpu_to_be32(hlen);
    iov[0] = (struct iovec) { .iov_base = &be[0], .iov_len = 4 };
    iov[1] = (struct iovec) { .iov_base = bundle, .iov_len = blen };
    iov[2] = (struct iovec) { .iov_base = &be[1], .iov_len = 4 };
    iov[3] = (struct iovec) { .iov_base = hello, .iov_len = hlen };
    g_assert_cmpint(iov_send(pr.fd[1], iov, 4, 0, blen + hlen + 8), ==,
                    blen + hlen + 8);
    while (count_op(&pr, 1, OP_READ_RESP_ONLY) < NREAD ||
           !count_op(&pr, 1, OP_BUNDLE_HELLO_REPLY)) {
        g_usleep(1000);
    }
    for (k = 0; pr.op[1][k] != OP_BUNDLE_HELLO_REPLY; k++) {
        before += pr.op[1][k] == OP_READ_RESP_ONLY;
    }
    g_test_message("%u of %u READ responses in the bundle's callback",
                   before, NREAD);
    g_assert_cmpuint(before, ==, 32);
    g_assert_cmpuint(count_op(&pr, 1, OP_READ_RESP_ONLY), ==, NREAD);
    g_assert_cmpuint(count_op(&pr, 1, OP_ACK), ==, 0);     /* no NAK */
    pair_forget(&pr, 1);
    peer_dont_care(&pr.p[0], 0x7000, 64);
    g_assert_cmpuint(qp_state(pr.p[1].d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/*
 * A peer A bundles to that falls silent (its frames lost, a forged
 * REPLY's victim): after RS_BUNDLE_SILENT_MS A's frames go alone again,
 * behind a new small HELLO; once B is heard, bundles again.
 */
static void test_bundle_silent_peer(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a, *b;
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    a = &pr.p[0];
    b = &pr.p[1];
    pair_rc(&pr, q, 0, STD_ACCESS);
    negotiate_by_traffic(&pr, q);

    pair_log_reset(&pr);
    pr.hold[1] = true;
    peer_fill(a, 0, 16384, 0x61);
    sge = peer_sge(a, 0, 16384);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1, b->buf,
              b->key[0], 0);
    pair_wait_frames(&pr, 0, 16);
    g_assert_cmpuint(pr.bundles[0], ==, 1);
    /* B's ACKs never reach A: its retransmission goes unbundled. */
    qtest_clock_step(qrs_qts(a->d), 5000000000ll);
    pair_wait_frames(&pr, 0, 18);
    g_assert_cmpuint(pr.bundles[0], ==, 1);
    g_assert_cmphex(pr.op[0][16], ==, OP_BUNDLE_HELLO);
    g_assert_cmpuint(pr.hello_big[0], ==, 0);
    pair_release(&pr, 1);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0, a, 0, 16384);
    peer_check(b);

    /* Heard again: negotiated again, bundles again. */
    pair_log_reset(&pr);
    bundle_write(&pr, q, 0x4000, 16384, 0x62, 0xa2);
    bundle_write(&pr, q, 0x1000, 16384, 0x63, 0xa3);
    g_assert_cmpuint(pr.bundles[0], >=, 1);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/*
 * A bundle B receives from a virtio-net NIC on its hub is in guest RAM
 * (the NIC's TX buffer), which the guest may rewrite while B reads it.
 * Here B itself rewrites it: the bundle's first packet, a WRITE into the
 * page that holds the bundle, changes the second packet's length.  B
 * must take the packets where its validation found them: the second and
 * third land, nothing is read past the bundle.
 */
static void test_bundle_guest_ram(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    enum { TX = 0x4000, HDR = 12 };
    g_autofree uint8_t *bundle = g_malloc(65536);
    uint8_t w[3][256], got[64];
    const uint8_t *in[3];
    size_t len[3], blen;
    QVirtioPCIDevice *vn;
    QPCIAddress addr = { .devfn = QPCI_DEVFN(PAIR_VNET_SLOT, 0) };
    QVirtQueue *txq;
    QTestState *qts;
    GByteArray *g;
    uint64_t tx, len2_at;
    uint32_t psn0, head;
    LoopQp q[2];
    Peer *b;
    Pair pr;
    int k;

    pair_setup(&pr, obj, data, alloc);
    b = &pr.p[1];
    qts = qrs_qts(b->d);
    pair_rc(&pr, q, 0, STD_ACCESS);

    vn = g_new0(QVirtioPCIDevice, 1);
    virtio_pci_init(vn, b->d->dev.bus, &addr);
    qvirtio_pci_device_enable(vn);
    qvirtio_start_device(&vn->vdev);
    g_assert_true(qvirtio_get_features(&vn->vdev) &
                  (1ull << VIRTIO_F_VERSION_1));
    qvirtio_set_features(&vn->vdev, 1ull << VIRTIO_F_VERSION_1);
    txq = qvirtqueue_setup(&vn->vdev, alloc, 1);
    qvirtio_set_driver_ok(&vn->vdev);

    /* Three WRITEs as A would send them, PSNs in order. */
    g = a_request(&pr, q, RS_WR_RDMA_WRITE, OP_WRITE_ONLY, 64);
    psn0 = f_psn(g->data);
    g_assert_cmpuint(g->len, ==, ROCE_EXT + 16 + 64 + 4);
    tx = b->buf + TX;
    for (k = 0; k < 3; k++) {
        memcpy(w[k], g->data, ROCE_EXT + 16);
        stl_be_p(w[k] + ROCE_BTH + 8, (psn0 + k) & 0xffffff);
        memset(w[k] + ROCE_EXT + 16, 0x5a + k, 64);
        len[k] = g->len;
        in[k] = w[k];
    }
    g_byte_array_unref(g);
    /*
     * The first writes 4 bytes: the last two of its own ICRC, already
     * checked, and the second packet's length, 142, as 100.
     */
    len[0] = ROCE_EXT + 16 + 4 + 4;
    len2_at = tx + HDR + ROCE_EXT + 4 + 2 + len[0];
    stq_be_p(w[0] + ROCE_EXT, len2_at - 2);
    stl_be_p(w[0] + ROCE_EXT + 12, 4);
    stl_be_p(w[0] + ROCE_EXT + 16, 0x00000064);
    stq_be_p(w[1] + ROCE_EXT, b->buf + 0x100);
    stq_be_p(w[2] + ROCE_EXT, b->buf + 0x200);
    for (k = 0; k < 3; k++) {
        roce_reseal(w[k], len[k]);
    }
    blen = roce_bundle(bundle, in, len, 3);
    g_assert_cmpuint(lduw_be_p(bundle + len2_at - tx - HDR), ==, len[1]);

    /* The guest sends it through the virtio-net NIC. */
    pr.raw[1] = true;
    pr.hold[0] = true;
    qtest_memset(qts, tx, 0, HDR);
    qtest_memwrite(qts, tx + HDR, bundle, blen);
    head = qvirtqueue_add(qts, txq, tx, HDR + blen, false, false);
    qvirtqueue_kick(qts, &vn->vdev, txq, head);
    qvirtio_wait_used_elem(qts, &vn->vdev, txq, head, NULL,
                           RS_QOS_TIMEOUT_US);
    g_assert_cmpuint(bundle_counter(&pr, 1, "rx"), ==, 1);
    g_assert_cmpuint(qtest_readw(qts, len2_at), ==, 0x6400);
    qtest_memread(qts, b->buf + 0x100, got, 64);
    for (k = 0; k < 64; k++) {
        g_assert_cmphex(got[k], ==, 0x5b);
    }
    qtest_memread(qts, b->buf + 0x200, got, 64);
    for (k = 0; k < 64; k++) {
        g_assert_cmphex(got[k], ==, 0x5c);
    }
    peer_dont_care(b, 0x100, 0x200);
    peer_dont_care(b, TX, PAGE);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_forget(&pr, 0);
    pr.raw[1] = false;
    qvirtqueue_cleanup(vn->vdev.bus, txq, alloc);
    qvirtio_pci_device_disable(vn);
    g_free(vn);
    pair_teardown(&pr);
}

static void *bundle_hub_before(GString *cmd_line, void *arg)
{
    return pair_before_hub(cmd_line, ",bundle=on,id=rsa",
                           ",bundle=on,id=rsb");
}

static void register_bundle_tests(void)
{
    QOSGraphTestOptions both = { .before = bundle_before };
    QOSGraphTestOptions hub = { .before = bundle_hub_before };
    QOSGraphTestOptions standard = {
        .before = bundle_before, .arg = (void *)",bundle=off",
    };

    rs_add_standalone_test("bundle/negotiate", test_bundle_negotiate, &both);
    rs_add_standalone_test("bundle/standard-peer",
                           test_bundle_standard_peer, &standard);
    rs_add_standalone_test("bundle/data", test_bundle_data, &both);
    rs_add_standalone_test("bundle/loss", test_bundle_loss, &both);
    rs_add_standalone_test("bundle/malformed", test_bundle_malformed, &both);
    rs_add_standalone_test("bundle/migrate", test_bundle_migrate, &both);
    rs_add_standalone_test("bundle/frame-work", test_bundle_frame_work, &both);
    rs_add_standalone_test("bundle/silent-peer",
                           test_bundle_silent_peer, &both);
    rs_add_standalone_test("bundle/guest-ram", test_bundle_guest_ram, &hub);
}

libqos_init(register_bundle_tests);
