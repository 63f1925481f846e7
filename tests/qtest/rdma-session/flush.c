/*
 * rdma-session qtests: RDMA FLUSH and ATOMIC WRITE (IBTA 1.5) between two
 * adapters on a wire the test carries: A is the requester, B the
 * responder.  The requests and their empty READ responses on the wire,
 * the rights, bounds, alignment and placement types, duplicates and the
 * fence.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define OP_FLUSH        0x1c
#define OP_ATOMIC_WRITE 0x1d

#define FLUSH_ACCESS    (STD_ACCESS | RS_ACCESS_FLUSH_GLOBAL)
#define FETH_GLOBAL     RS_FLUSH_PLT_GLOBAL
#define FETH_GLOBAL_MR  (RS_FLUSH_PLT_GLOBAL |                            \
                         RS_FLUSH_SEL_MR << RS_FLUSH_SEL_SHIFT)

/* A READ RESPONSE Only: BTH, AETH, no payload, ICRC. */
#define EMPTY_RESP_LEN  (ROCE_BTH + 12 + 4 + 4)

/* B's MRs over its buffer the rows name. */
enum { KEY_FLUSH, KEY_STD, KEY_READ, KEY_BAD };

typedef struct FlushRow {
    const char *name;
    uint8_t op;                 /* RS_WR_FLUSH or RS_WR_ATOMIC_WRITE */
    uint32_t feth;              /* FLUSH: placement type, selectivity */
    uint64_t off;               /* in B's buffer */
    uint64_t len;               /* FLUSH: the range */
    uint8_t key;
    uint16_t qp_access;         /* B's QP; 0: FLUSH_ACCESS */
    uint8_t status;
    uint8_t nak;                /* B's NAK; 0 with an error: nothing sent */
} FlushRow;

static const FlushRow flush_rows[] = {
    { "atomic-write", RS_WR_ATOMIC_WRITE, 0, 0x100, 0, KEY_FLUSH, 0,
      RS_WC_SUCCESS },
    { "atomic-write-last-8-bytes", RS_WR_ATOMIC_WRITE, 0, PAIR_BUF - 8, 0,
      KEY_STD, 0, RS_WC_SUCCESS },
    { "flush-range", RS_WR_FLUSH, FETH_GLOBAL, 0x1000, 0x2000, KEY_FLUSH, 0,
      RS_WC_SUCCESS },
    { "flush-whole-mr", RS_WR_FLUSH, FETH_GLOBAL_MR, PAIR_BUF + 0x10000, 0,
      KEY_FLUSH, 0, RS_WC_SUCCESS },
    { "flush-empty-range", RS_WR_FLUSH, FETH_GLOBAL, 0, 0, KEY_FLUSH, 0,
      RS_WC_SUCCESS },
    { "flush-mr-without-right", RS_WR_FLUSH, FETH_GLOBAL, 0x1000, 8, KEY_STD,
      0, RS_WC_REM_ACCESS_ERR, AETH_NAK_REM_ACCESS },
    { "flush-past-mr-end", RS_WR_FLUSH, FETH_GLOBAL, PAIR_BUF - 0x100, 0x101,
      KEY_FLUSH, 0, RS_WC_REM_ACCESS_ERR, AETH_NAK_REM_ACCESS },
    { "flush-bad-rkey", RS_WR_FLUSH, FETH_GLOBAL, 0x1000, 8, KEY_BAD, 0,
      RS_WC_REM_ACCESS_ERR, AETH_NAK_REM_ACCESS },
    { "flush-qp-without-right", RS_WR_FLUSH, FETH_GLOBAL, 0x1000, 8,
      KEY_FLUSH, STD_ACCESS, RS_WC_REM_INV_REQ_ERR, AETH_NAK_INV_REQ },
    /* No MR can have the persistent right: see rs_mr_check_access(). */
    { "flush-persistent", RS_WR_FLUSH, RS_FLUSH_PLT_PERSISTENT, 0x1000, 8,
      KEY_FLUSH, FLUSH_ACCESS | RS_ACCESS_FLUSH_PERSISTENT,
      RS_WC_REM_ACCESS_ERR, AETH_NAK_REM_ACCESS },
    { "flush-unknown-placement-type", RS_WR_FLUSH, 1u << 2, 0x1000, 8,
      KEY_FLUSH, 0, RS_WC_LOC_QP_OP_ERR },
    { "flush-no-placement-type", RS_WR_FLUSH, 0, 0x1000, 8, KEY_FLUSH, 0,
      RS_WC_LOC_QP_OP_ERR },
    { "flush-reserved-selectivity", RS_WR_FLUSH,
      FETH_GLOBAL | 2u << RS_FLUSH_SEL_SHIFT, 0x1000, 8, KEY_FLUSH, 0,
      RS_WC_LOC_QP_OP_ERR },
    { "atomic-write-misaligned", RS_WR_ATOMIC_WRITE, 0, 0x104, 0, KEY_FLUSH,
      0, RS_WC_REM_INV_REQ_ERR, AETH_NAK_INV_REQ },
    { "atomic-write-mr-without-write", RS_WR_ATOMIC_WRITE, 0, 0x100, 0,
      KEY_READ, 0, RS_WC_REM_ACCESS_ERR, AETH_NAK_REM_ACCESS },
    { "atomic-write-past-mr-end", RS_WR_ATOMIC_WRITE, 0, PAIR_BUF, 0,
      KEY_FLUSH, 0, RS_WC_REM_ACCESS_ERR, AETH_NAK_REM_ACCESS },
    { "atomic-write-bad-rkey", RS_WR_ATOMIC_WRITE, 0, 0x100, 0, KEY_BAD, 0,
      RS_WC_REM_ACCESS_ERR, AETH_NAK_REM_ACCESS },
    { "atomic-write-qp-without-write", RS_WR_ATOMIC_WRITE, 0, 0x100, 0,
      KEY_FLUSH, RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_READ,
      RS_WC_REM_INV_REQ_ERR, AETH_NAK_INV_REQ },
};

static void post_flush_aw(Pair *pr, LoopQp *q, uint8_t op, uint64_t wr_id,
                          uint8_t flags, uint64_t raddr, uint32_t rkey,
                          uint64_t len_or_value, uint32_t feth)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = op,
        .flags = RS_WQE_F_SIGNALED | flags,
        .imm_or_inv = feth,
        .remote_addr = raddr,
        .rkey = rkey,
        .compare_add = len_or_value,
    };

    eng_post_send(pr->p[0].d, q, &w, NULL, 0);
}

typedef struct FlushEnv {
    Pair pr;
    uint32_t key[4];
} FlushEnv;

static void flush_setup(FlushEnv *e, void *obj, void *data,
                        QGuestAllocator *alloc)
{
    Peer *b = &e->pr.p[1];

    pair_setup(&e->pr, obj, data, alloc);
    e->key[KEY_FLUSH] = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                               FLUSH_ACCESS);
    e->key[KEY_STD] = b->key[0];
    e->key[KEY_READ] = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                              RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_READ |
                              RS_ACCESS_FLUSH_GLOBAL);
    e->key[KEY_BAD] = e->key[KEY_FLUSH] ^ 1;     /* its tag differs */
}

/* A's request as it left: opcode, FETH, RETH, ATOMIC WRITE's payload. */
static void check_request(Pair *pr, const FlushRow *r, uint64_t raddr,
                          uint32_t rkey, uint64_t value)
{
    const uint8_t *f = pr->last[0];
    unsigned reth = ROCE_BTH + 12;

    if (r->op == RS_WR_FLUSH) {
        g_assert_cmpuint(pr->last_len[0], ==, ROCE_BTH + 12 + 4 + 16 + 4);
        g_assert_cmphex(ldl_be_p(f + reth), ==, r->feth);
        reth += 4;
        g_assert_cmpuint(ldl_be_p(f + reth + 12), ==, r->len);
    } else {
        g_assert_cmpuint(pr->last_len[0], ==, ROCE_BTH + 12 + 16 + 8 + 4);
        g_assert_cmpuint(ldl_be_p(f + reth + 12), ==, 8);
        g_assert_cmphex(ldq_le_p(f + reth + 16), ==, value);
    }
    g_assert_cmphex(ldq_be_p(f + reth), ==, raddr);
    g_assert_cmphex(ldl_be_p(f + reth + 8), ==, rkey);
    /* The IBTA's ICRC unless x-rxe-flush-icrc is on (flush/rxe-icrc). */
    g_assert_cmphex((uint32_t)ldl_le_p(f + pr->last_len[0] - 4), ==,
                    roce_icrc(f, pr->last_len[0] - 4));
}

static void flush_run(FlushEnv *e, const FlushRow *r, unsigned i)
{
    Pair *pr = &e->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    bool ok = r->status == RS_WC_SUCCESS;
    bool aw = r->op == RS_WR_ATOMIC_WRITE;
    uint64_t value = 0x0123456789abcdefull + i;
    uint64_t raddr = b->buf + r->off;
    uint32_t rkey = e->key[r->key];
    struct rs_cqe cqe;
    LoopQp q[2];
    uint8_t wop = aw ? OP_ATOMIC_WRITE : OP_FLUSH;

    g_test_message("flush: %s", r->name);
    pair_rc(pr, q, 0, r->qp_access ? r->qp_access : FLUSH_ACCESS);
    pair_log_reset(pr);
    post_flush_aw(pr, &q[0], r->op, 0xf0 + i, 0, raddr, rkey,
                  aw ? value : r->len, r->feth);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xf0 + i, r->status, r->op, q[0].qpn);
    if (ok || r->nak) {
        pair_expect_ops(pr, 0, &wop, 1);
        check_request(pr, r, raddr, rkey, value);
        if (ok) {
            PAIR_EXPECT_OPS(pr, 1, OP_READ_RESP_ONLY);
            g_assert_cmpuint(pr->last_len[1], ==, EMPTY_RESP_LEN);
            g_assert_cmphex(pr->syn[1][0], ==, AETH_ACK);
            g_assert_cmpuint(cqe.byte_len, ==, 0);
        } else {
            PAIR_EXPECT_OPS(pr, 1, OP_ACK);
            g_assert_cmphex(pr->syn[1][0], ==, r->nak);
        }
    } else {
        PAIR_EXPECT_NONE(pr, 0);
        PAIR_EXPECT_NONE(pr, 1);
    }
    if (ok && aw) {
        stq_le_p(b->img + r->off, value);
    }
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==,
                     ok ? RS_QPS_RTS : RS_QPS_ERR);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==,
                     r->nak ? RS_QPS_ERR : RS_QPS_RTS);
    pair_cq_empty(pr, 0);
    pair_cq_empty(pr, 1);
    peer_check(a);
    peer_check(b);
}

/* Each row on a new connection: the errors leave the QPs in ERR. */
static void test_flush_ops(void *obj, void *data, QGuestAllocator *alloc)
{
    FlushEnv e;
    unsigned i;

    flush_setup(&e, obj, data, alloc);
    for (i = 0; i < ARRAY_SIZE(flush_rows); i++) {
        flush_run(&e, &flush_rows[i], i);
    }
    pair_teardown(&e.pr);
}

/*
 * Requests no adapter sends, put on B's wire in place of A's FLUSH and
 * ATOMIC WRITE: each gets an invalid request NAK.
 */
typedef struct BadFrame {
    const char *name;
    uint8_t op;
    unsigned off;               /* from the BTH */
    uint32_t val;               /* stored big-endian there */
} BadFrame;

static const BadFrame bad_frames[] = {
    { "FETH placement type 4", RS_WR_FLUSH, 12, 1u << 2 },
    { "FETH without placement type", RS_WR_FLUSH, 12, 0 },
    { "FETH selectivity 3", RS_WR_FLUSH, 12, 0x31 },
    { "FETH reserved bit", RS_WR_FLUSH, 12, 0x101 },
    { "ATOMIC WRITE RETH length 16", RS_WR_ATOMIC_WRITE, 12 + 12, 16 },
    { "ATOMIC WRITE RETH length 0", RS_WR_ATOMIC_WRITE, 12 + 12, 0 },
};

static void test_flush_bad_frames(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    FlushEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    unsigned i;

    flush_setup(&e, obj, data, alloc);
    for (i = 0; i < ARRAY_SIZE(bad_frames); i++) {
        const BadFrame *bf = &bad_frames[i];
        GByteArray *g, *r;
        struct rs_cqe cqe;
        uint32_t psn;
        LoopQp q[2];

        g_test_message("bad frame: %s", bf->name);
        pair_rc(pr, q, 0, FLUSH_ACCESS);
        pr->hold[0] = pr->hold[1] = true;
        post_flush_aw(pr, &q[0], bf->op, 0xb0 + i, 0, b->buf + 0x100,
                      e.key[KEY_FLUSH], bf->op == RS_WR_FLUSH ? 8 : 0x77,
                      FETH_GLOBAL);
        g = pair_take(pr, 0);
        psn = ldl_be_p(g->data + ROCE_BTH + 8) & 0xffffff;
        stl_be_p(g->data + ROCE_BTH + bf->off, bf->val);
        roce_reseal(g->data, g->len);
        pair_inject(pr, 1, g->data, g->len);
        g_byte_array_unref(g);
        r = pair_take(pr, 1);
        g_assert_cmphex(r->data[ROCE_BTH], ==, OP_ACK);
        g_assert_cmphex(r->data[ROCE_EXT], ==, AETH_NAK_INV_REQ);
        g_assert_cmphex(ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff, ==, psn);
        g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
        pr->hold[0] = pr->hold[1] = false;
        pair_inject(pr, 0, r->data, r->len);
        g_byte_array_unref(r);
        pair_poll(pr, 0, &cqe);
        assert_cqe(&cqe, 0xb0 + i, RS_WC_REM_INV_REQ_ERR, bf->op, q[0].qpn);
        pair_cq_empty(pr, 0);
        pair_cq_empty(pr, 1);
        /* Nothing was written. */
        peer_check(a);
        peer_check(b);
    }
    pair_teardown(pr);
}

/* Past the 10 ms in which a resource answers a duplicate only once. */
static void clock_step_replay(QTestState *qts)
{
    qtest_clock_step(qts, 11 * 1000 * 1000);
}

/*
 * Duplicates: B answers a repeated ATOMIC WRITE or FLUSH again with the
 * empty READ response, from the resource it took, without writing again
 * (the test changed the 8 bytes in between); A completes each once and
 * drops the second response.
 */
static void test_flush_duplicate(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    static const uint8_t ops[] = { RS_WR_ATOMIC_WRITE, RS_WR_FLUSH };
    FlushEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    QTestState *qts;
    LoopQp q[2];
    unsigned i;

    flush_setup(&e, obj, data, alloc);
    qts = qrs_qts(b->d);
    pair_rc(pr, q, 0, FLUSH_ACCESS);
    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        bool aw = ops[i] == RS_WR_ATOMIC_WRITE;
        GByteArray *g, *r, *r2;
        uint32_t psn;

        pr->hold[0] = pr->hold[1] = true;
        post_flush_aw(pr, &q[0], ops[i], 0xd0 + i, 0, b->buf + 0x200,
                      e.key[KEY_FLUSH], aw ? 0x1111222233334444ull : 8,
                      FETH_GLOBAL);
        g = pair_take(pr, 0);
        g_assert_cmphex(g->data[ROCE_BTH], ==,
                        aw ? OP_ATOMIC_WRITE : OP_FLUSH);
        psn = ldl_be_p(g->data + ROCE_BTH + 8) & 0xffffff;
        pair_inject(pr, 1, g->data, g->len);
        r = pair_take(pr, 1);
        g_assert_cmphex(r->data[ROCE_BTH], ==, OP_READ_RESP_ONLY);
        g_assert_cmphex(ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff, ==, psn);
        if (aw) {
            g_assert_cmphex(qtest_readq(qts, b->buf + 0x200), ==,
                            0x1111222233334444ull);
        }
        /* Something else stores there; the duplicate must not undo it. */
        qtest_writeq(qts, b->buf + 0x200, 0x5555666677778888ull);
        stq_le_p(b->img + 0x200, 0x5555666677778888ull);
        pair_inject(pr, 1, g->data, g->len);
        r2 = pair_take(pr, 1);
        g_assert_cmpuint(r2->len, ==, r->len);
        g_assert_cmpmem(r2->data + ROCE_BTH, EMPTY_RESP_LEN - ROCE_BTH - 4,
                        r->data + ROCE_BTH, EMPTY_RESP_LEN - ROCE_BTH - 4);
        g_assert_cmphex(qtest_readq(qts, b->buf + 0x200), ==,
                        0x5555666677778888ull);
        g_byte_array_unref(r2);
        /* Again as soft-RoCE resends it, its RETH address 0: the same. */
        stq_be_p(g->data + ROCE_BTH + 12 + (aw ? 0 : 4), 0);
        roce_reseal(g->data, g->len);
        clock_step_replay(qts);
        pair_inject(pr, 1, g->data, g->len);
        r2 = pair_take(pr, 1);
        g_assert_cmpmem(r2->data + ROCE_BTH, EMPTY_RESP_LEN - ROCE_BTH - 4,
                        r->data + ROCE_BTH, EMPTY_RESP_LEN - ROCE_BTH - 4);
        g_assert_cmphex(qtest_readq(qts, b->buf + 0x200), ==,
                        0x5555666677778888ull);
        pr->hold[0] = pr->hold[1] = false;
        pair_inject(pr, 0, r->data, r->len);
        pair_expect_cqe(pr, 0, 0xd0 + i, RS_WC_SUCCESS, ops[i], q[0].qpn, 0);
        pair_inject(pr, 0, r2->data, r2->len);
        pair_cq_empty(pr, 0);
        g_byte_array_unref(g);
        g_byte_array_unref(r);
        g_byte_array_unref(r2);
    }
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(pr, 1);
    peer_check(a);
    peer_check(b);
    pair_teardown(pr);
}

/*
 * Ordering: a fenced WRITE waits until the ATOMIC WRITE before it has its
 * response, as behind a READ; an unfenced one does not.
 */
static void test_flush_fence(void *obj, void *data, QGuestAllocator *alloc)
{
    FlushEnv e;
    Pair *pr = &e.pr;
    Peer *b = &pr->p[1];
    struct rs_send_wqe_ctrl w = {
        .opcode = RS_WR_RDMA_WRITE,
        .num_sge = 1,
    };
    struct rs_sge sge;
    GByteArray *g, *g1, *g2;
    unsigned k;
    LoopQp q[2];

    flush_setup(&e, obj, data, alloc);
    pair_rc(pr, q, 0, FLUSH_ACCESS);
    peer_fill(&pr->p[0], 0x3000, 64, 0x21);
    sge = peer_sge(&pr->p[0], 0x3000, 64);
    pr->hold[0] = true;
    post_flush_aw(pr, &q[0], RS_WR_ATOMIC_WRITE, 0xe0, 0, b->buf + 0x300,
                  e.key[KEY_FLUSH], 0x0102030405060708ull, 0);
    w.wr_id = 0xe1;
    w.flags = RS_WQE_F_SIGNALED;
    w.remote_addr = b->buf + 0x3000;
    w.rkey = e.key[KEY_FLUSH];
    eng_post_send(pr->p[0].d, &q[0], &w, &sge, 1);
    w.wr_id = 0xe2;
    w.flags = RS_WQE_F_SIGNALED | RS_WQE_F_FENCE;
    w.remote_addr = b->buf + 0x3040;
    eng_post_send(pr->p[0].d, &q[0], &w, &sge, 1);
    g1 = pair_take(pr, 0);
    g_assert_cmphex(g1->data[ROCE_BTH], ==, OP_ATOMIC_WRITE);
    /* The unfenced WRITE goes out behind it at once. */
    g2 = pair_take(pr, 0);
    g_assert_cmphex(g2->data[ROCE_BTH], ==, OP_WRITE_ONLY);
    /* 2 ms of virtual time: the fenced WRITE stays in the queue. */
    for (k = 0; k < 20; k++) {
        pair_pump(pr);
        qtest_clock_step(qrs_qts(b->d), 100000);
    }
    g_assert_true(g_queue_is_empty(&pr->held[0]));
    /* B's answers reach A: then the fenced WRITE leaves. */
    pr->hold[1] = false;
    pair_inject(pr, 1, g1->data, g1->len);
    pair_inject(pr, 1, g2->data, g2->len);
    g = pair_take(pr, 0);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_WRITE_ONLY);
    g_assert_cmphex(ldq_be_p(g->data + ROCE_EXT), ==, b->buf + 0x3040);
    pr->hold[0] = false;
    pair_inject(pr, 1, g->data, g->len);
    pair_expect_cqe(pr, 0, 0xe0, RS_WC_SUCCESS, RS_WR_ATOMIC_WRITE,
                    q[0].qpn, 0);
    pair_expect_cqe(pr, 0, 0xe1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 64);
    pair_expect_cqe(pr, 0, 0xe2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 64);
    stq_le_p(b->img + 0x300, 0x0102030405060708ull);
    img_move(b, 0x3000, &pr->p[0], 0x3000, 64);
    img_move(b, 0x3040, &pr->p[0], 0x3000, 64);
    g_byte_array_unref(g);
    g_byte_array_unref(g1);
    g_byte_array_unref(g2);
    pair_cq_empty(pr, 0);
    pair_cq_empty(pr, 1);
    peer_check(&pr->p[0]);
    peer_check(b);
    pair_teardown(pr);
}

/* A FLUSH request from adapter @from on QP @q, signaled. */
static void post_flush_on(Pair *pr, int from, LoopQp *q, uint64_t wr_id,
                          uint64_t raddr, uint32_t rkey)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = RS_WR_FLUSH,
        .flags = RS_WQE_F_SIGNALED,
        .imm_or_inv = FETH_GLOBAL,
        .remote_addr = raddr,
        .rkey = rkey,
        .compare_add = 64,
    };

    eng_post_send(pr->p[from].d, q, &w, NULL, 0);
}

/* An RC pair whose QPs both allow FLUSH_ACCESS. */
static void flush_pair_rc(Pair *pr, LoopQp q[2])
{
    struct rs_qp_attr a;
    int i;

    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q[i], RS_QPT_RC, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        pair_attr(q, i, 0, &a);
        a.access_flags = FLUSH_ACCESS;
        eng_connect(pr->p[i].d, &q[i], RS_QPT_RC, &a, 0);
    }
}

/*
 * x-rxe-flush-icrc=on on B: its FLUSHes carry the ICRC Linux soft-RoCE
 * computes (headers twice), which A, without the property, drops; the
 * same frame with the IBTA's ICRC is answered.  B takes a FLUSH with
 * either ICRC.
 */
static void test_flush_rxe_icrc(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t akey, bkey;
    GByteArray *g, *r;
    unsigned k;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    akey = eng_mr(a->d, a->pd, 0, a->buf, PAIR_BUF, FLUSH_ACCESS);
    bkey = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF, FLUSH_ACCESS);
    flush_pair_rc(&pr, q);

    /* B to A: soft-RoCE's ICRC, dropped by A. */
    pr.hold[0] = pr.hold[1] = true;
    post_flush_on(&pr, 1, &q[1], 0xc1, a->buf + 0x100, akey);
    g = pair_take(&pr, 1);
    g_assert_cmphex(g->data[ROCE_BTH], ==, 0x1c);
    g_assert_cmphex((uint32_t)ldl_le_p(g->data + g->len - 4), ==,
                    roce_icrc_rxe_flush(g->data, g->len - 4));
    g_assert_cmphex((uint32_t)ldl_le_p(g->data + g->len - 4), !=,
                    roce_icrc(g->data, g->len - 4));
    pair_inject(&pr, 0, g->data, g->len);
    for (k = 0; k < 10; k++) {
        pair_pump(&pr);
        qtest_clock_step(qrs_qts(a->d), 100000);
    }
    g_assert_true(g_queue_is_empty(&pr.held[0]));
    /* The IBTA's ICRC: answered, and B completes. */
    roce_reseal(g->data, g->len);
    pair_inject(&pr, 0, g->data, g->len);
    g_byte_array_unref(g);
    r = pair_take(&pr, 0);
    g_assert_cmphex(r->data[ROCE_BTH], ==, OP_READ_RESP_ONLY);
    pair_inject(&pr, 1, r->data, r->len);
    g_byte_array_unref(r);
    pair_expect_cqe(&pr, 1, 0xc1, RS_WC_SUCCESS, RS_WR_FLUSH, q[1].qpn, 0);

    /* A to B with soft-RoCE's ICRC, then with the IBTA's: both taken. */
    post_flush_on(&pr, 0, &q[0], 0xc2, b->buf + 0x100, bkey);
    g = pair_take(&pr, 0);
    g_assert_cmphex((uint32_t)ldl_le_p(g->data + g->len - 4), ==,
                    roce_icrc(g->data, g->len - 4));
    stl_le_p(g->data + g->len - 4, roce_icrc_rxe_flush(g->data, g->len - 4));
    pair_inject(&pr, 1, g->data, g->len);
    g_byte_array_unref(g);
    r = pair_take(&pr, 1);
    g_assert_cmphex(r->data[ROCE_BTH], ==, OP_READ_RESP_ONLY);
    pair_inject(&pr, 0, r->data, r->len);
    g_byte_array_unref(r);
    pair_expect_cqe(&pr, 0, 0xc2, RS_WC_SUCCESS, RS_WR_FLUSH, q[0].qpn, 0);
    pr.hold[0] = pr.hold[1] = false;
    post_flush_on(&pr, 0, &q[0], 0xc3, b->buf + 0x200, bkey);
    pair_expect_cqe(&pr, 0, 0xc3, RS_WC_SUCCESS, RS_WR_FLUSH, q[0].qpn, 0);

    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/*
 * FLUSH and ATOMIC WRITE through memory windows (issue 26, finding 7):
 * the window's range, rights and (type 2) QP decide, as for WRITE and
 * READ, and the data reaches the MR the window is bound to.  B's MR
 * covers its buffer with every right; each window [0x1000, 0x3000).
 */
#define MW_BASE         0x1000
#define MW_LEN          0x2000
#define MW_AW           RS_ACCESS_REMOTE_WRITE
#define MW_FLUSH        (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_FLUSH_GLOBAL)

typedef struct MwRow {
    const char *name;
    uint8_t type;               /* RS_MW_TYPE_1 or RS_MW_TYPE_2 */
    uint16_t access;            /* the window's */
    bool other_qp;              /* type 2: bound on another QP */
    uint8_t op;
    uint32_t feth;
    uint64_t off;               /* in B's buffer */
    uint64_t len;               /* FLUSH: the range */
    uint8_t status;
} MwRow;

static const MwRow mw_rows[] = {
    { "atomic-write-type2", RS_MW_TYPE_2, MW_AW, false, RS_WR_ATOMIC_WRITE,
      0, 0x1100, 0, RS_WC_SUCCESS },
    { "atomic-write-type1-last-8-bytes", RS_MW_TYPE_1, MW_AW, false,
      RS_WR_ATOMIC_WRITE, 0, MW_BASE + MW_LEN - 8, 0, RS_WC_SUCCESS },
    { "flush-range-type2", RS_MW_TYPE_2, MW_FLUSH, false, RS_WR_FLUSH,
      FETH_GLOBAL, 0x1800, 0x800, RS_WC_SUCCESS },
    { "flush-whole-window-type1", RS_MW_TYPE_1, MW_FLUSH, false, RS_WR_FLUSH,
      FETH_GLOBAL_MR, 0x10, 0, RS_WC_SUCCESS },
    { "atomic-write-before-window", RS_MW_TYPE_2, MW_AW, false,
      RS_WR_ATOMIC_WRITE, 0, MW_BASE - 8, 0, RS_WC_REM_ACCESS_ERR },
    { "atomic-write-past-window", RS_MW_TYPE_1, MW_AW, false,
      RS_WR_ATOMIC_WRITE, 0, MW_BASE + MW_LEN, 0, RS_WC_REM_ACCESS_ERR },
    { "atomic-write-read-only-window", RS_MW_TYPE_2, RS_ACCESS_REMOTE_READ,
      false, RS_WR_ATOMIC_WRITE, 0, 0x1100, 0, RS_WC_REM_ACCESS_ERR },
    { "atomic-write-other-qp", RS_MW_TYPE_2, MW_AW, true,
      RS_WR_ATOMIC_WRITE, 0, 0x1100, 0, RS_WC_REM_ACCESS_ERR },
    { "flush-range-past-window", RS_MW_TYPE_2, MW_FLUSH, false, RS_WR_FLUSH,
      FETH_GLOBAL, 0x2f00, 0x200, RS_WC_REM_ACCESS_ERR },
    { "flush-window-without-right", RS_MW_TYPE_1, MW_AW, false, RS_WR_FLUSH,
      FETH_GLOBAL, 0x1800, 0x10, RS_WC_REM_ACCESS_ERR },
    { "flush-whole-window-without-right", RS_MW_TYPE_2,
      RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ, false, RS_WR_FLUSH,
      FETH_GLOBAL_MR, 0x1800, 0, RS_WC_REM_ACCESS_ERR },
    { "flush-other-qp", RS_MW_TYPE_2, MW_FLUSH, true, RS_WR_FLUSH,
      FETH_GLOBAL, 0x1800, 0x10, RS_WC_REM_ACCESS_ERR },
};

static void post_bind(Peer *b, LoopQp *q, uint64_t wr_id, uint32_t mw,
                      uint32_t new_rkey, uint32_t mr, uint64_t addr,
                      uint64_t len, uint16_t access)
{
    struct rs_send_wqe_bind_mw bw = {
        .wr_id = wr_id, .opcode = RS_WR_BIND_MW,
        .flags = RS_WQE_F_SIGNALED, .mw_rkey = mw, .addr = addr,
        .length = len, .mr_lkey = mr, .new_rkey = new_rkey,
        .access = access,
    };
    struct rs_send_wqe_ctrl w;

    QEMU_BUILD_BUG_ON(sizeof(w) != sizeof(bw));
    memcpy(&w, &bw, sizeof(w));
    eng_post_send(b->d, q, &w, NULL, 0);
}

static uint32_t alloc_mw(Peer *b, uint8_t type)
{
    struct rs_cmd_alloc_mw c = { .pd = b->pd, .type = type };
    uint32_t key;

    RS_ASSERT_OK(qrs_admin_cmd(b->d, RS_CMD_ALLOC_MW, &c, sizeof(c), &key,
                               NULL));
    return key;
}

/* The key with the next tag, as ibv_inc_rkey() makes it. */
static uint32_t next_tag(uint32_t key)
{
    return (key & ~RS_MKEY_TAG_MASK) | ((key + 1) & RS_MKEY_TAG_MASK);
}

static void test_flush_window(void *obj, void *data, QGuestAllocator *alloc)
{
    FlushEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    uint32_t mr, mr_std, mw;
    struct rs_cqe cqe;
    LoopQp q[2], o[2];
    unsigned i;

    flush_setup(&e, obj, data, alloc);
    mr = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                FLUSH_ACCESS | RS_ACCESS_MW_BIND);
    for (i = 0; i < ARRAY_SIZE(mw_rows); i++) {
        const MwRow *r = &mw_rows[i];
        bool aw = r->op == RS_WR_ATOMIC_WRITE;
        uint64_t value = 0x1122334455667788ull + i;
        LoopQp *bq = r->other_qp ? &o[1] : &q[1];

        g_test_message("flush/window: %s", r->name);
        pair_rc(pr, q, 0, FLUSH_ACCESS);
        if (r->other_qp) {
            pair_rc(pr, o, 0, FLUSH_ACCESS);
        }
        mw = alloc_mw(b, r->type);
        post_bind(b, bq, 0xb0 + i, mw, next_tag(mw), mr,
                  b->buf + MW_BASE, MW_LEN, r->access);
        pair_poll(pr, 1, &cqe);
        assert_cqe(&cqe, 0xb0 + i, RS_WC_SUCCESS, RS_WR_BIND_MW, bq->qpn);
        post_flush_aw(pr, &q[0], r->op, 0xf0 + i, 0, b->buf + r->off,
                      next_tag(mw), aw ? value : r->len, r->feth);
        pair_poll(pr, 0, &cqe);
        assert_cqe(&cqe, 0xf0 + i, r->status, r->op, q[0].qpn);
        if (r->status == RS_WC_SUCCESS && aw) {
            stq_le_p(b->img + r->off, value);
        }
        g_assert_cmpuint(qp_state(b->d, q[1].h), ==,
                         r->status == RS_WC_SUCCESS ? RS_QPS_RTS :
                                                      RS_QPS_ERR);
        pair_cq_empty(pr, 0);
        pair_cq_empty(pr, 1);
        peer_check(a);
        peer_check(b);
        RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEALLOC_MW, mw));
    }

    /* A window never carries a FLUSH right its MR lacks. */
    mr_std = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                    STD_ACCESS | RS_ACCESS_MW_BIND);
    pair_rc(pr, q, 0, FLUSH_ACCESS);
    mw = alloc_mw(b, RS_MW_TYPE_2);
    post_bind(b, &q[1], 0xbf, mw, next_tag(mw), mr_std,
              b->buf + MW_BASE, MW_LEN, MW_FLUSH);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xbf, RS_WC_MW_BIND_ERR, RS_WR_BIND_MW, q[1].qpn);
    pair_teardown(pr);
}

static void register_flush_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions rxe_icrc = {
        .before = pair_before, .arg = (void *)",x-rxe-flush-icrc=on",
    };

    rs_add_standalone_test("flush/ops", test_flush_ops, &pair);
    rs_add_standalone_test("flush/bad-frames", test_flush_bad_frames, &pair);
    rs_add_standalone_test("flush/duplicate", test_flush_duplicate, &pair);
    rs_add_standalone_test("flush/fence", test_flush_fence, &pair);
    rs_add_standalone_test("flush/window", test_flush_window, &pair);
    rs_add_standalone_test("flush/rxe-icrc", test_flush_rxe_icrc, &rxe_icrc);
}

libqos_init(register_flush_tests);
