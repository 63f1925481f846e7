/*
 * rdma-session qtests: XRC between two adapters on a wire the test
 * carries.  A holds an XRC initiator QP, B an XRC domain with XRC SRQs of
 * two PDs and two CQs, one XRC target QP, and an SRQ of a second domain.
 * SENDs reach the SRQ each request's XRCETH names, R_Keys are checked
 * against that SRQ's PD, and a request naming an SRQ the target may not
 * use is an invalid request; the objects' own checks, and migration.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define XRCETH          ROCE_EXT        /* right after the BTH */

enum { SRQ_A, SRQ_B, SRQ_OTHER, NSRQ };   /* B: PD 1, PD 2, domain 2 */

typedef struct XrcEnv {
    Pair pr;
    uint32_t xrcd[2];           /* B's domains */
    uint32_t pd2, key2;         /* B: a second PD, an MR of it over buf */
    uint32_t key_atomic;        /* B: atomics allowed, first PD */
    EngCq cq2;                  /* B: SRQ_B's CQ (SRQ_A's is p[1].cq) */
    struct rs_cmd_create_srq sc[NSRQ];
    uint32_t srq[NSRQ], srq_pi[NSRQ];
    LoopQp ini, tgt;
} XrcEnv;

static uint32_t new_xrcd(QRdmaSession *d)
{
    struct rs_cmd_create_pd c = { 0 };
    uint32_t h = 0;

    RS_ASSERT_OK(qrs_admin_cmd(d, RS_CMD_CREATE_XRCD, &c, sizeof(c), &h,
                               NULL));
    return h;
}

static void xrc_srq_template(QRdmaSession *d, struct rs_cmd_create_srq *c,
                             uint32_t pd, uint32_t xrcd, uint32_t cq)
{
    srq_template(d, c, pd, 4, 1);
    c->xrcd = xrcd;
    c->cq = cq;
}

/* A's initiator: a send queue, no receive side. */
static void ini_template(Peer *a, LoopQp *q)
{
    memset(q, 0, sizeof(*q));
    q->c.qp_type = RS_QPT_XRC_INI;
    q->c.pd = a->pd;
    q->c.send_cq = a->cq.h;
    q->c.sq_log_size = 4;
    q->c.max_send_sge = 4;
    q->c.max_inline = 64;
    q->c.sq_addr = qrs_alloc_zeroed(a->d, qrs_qp_sq_bytes(&q->c));
}

static void tgt_template(LoopQp *q, uint32_t xrcd)
{
    memset(q, 0, sizeof(*q));
    q->c.qp_type = RS_QPT_XRC_TGT;
    q->c.xrcd = xrcd;
}

/* A new initiator on A and target on B, connected. */
static void xrc_connect(XrcEnv *e)
{
    LoopQp *q[2] = { &e->ini, &e->tgt };
    struct rs_qp_attr a;
    int i;

    ini_template(&e->pr.p[0], &e->ini);
    tgt_template(&e->tgt, e->xrcd[0]);
    for (i = 0; i < 2; i++) {
        q[i]->h = new_qp(e->pr.p[i].d, &q[i]->c);
        q[i]->qpn = HINDEX(q[i]->h);
    }
    for (i = 0; i < 2; i++) {
        std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
        gid_v4(a.ah.dgid, 10, 0, 0, !i + 1);
        memcpy(a.ah.dmac, pair_mac[!i], 6);
        a.dest_qp_num = q[!i]->qpn;
        a.sq_psn = pair_psn[i];
        a.rq_psn = pair_psn[!i];
        a.timeout = PAIR_TIMEOUT;
        a.access_flags = STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC;
        eng_connect(e->pr.p[i].d, q[i], RS_QPT_RC, &a, 0);
    }
}

static void xrc_setup(XrcEnv *e, void *obj, void *data,
                      QGuestAllocator *alloc)
{
    Peer *b = &e->pr.p[1];
    int i;

    memset(e, 0, sizeof(*e));
    pair_setup(&e->pr, obj, data, alloc);
    e->xrcd[0] = new_xrcd(b->d);
    e->xrcd[1] = new_xrcd(b->d);
    e->pd2 = new_pd(b->d);
    e->key2 = eng_mr(b->d, e->pd2, 0, b->buf, PAIR_BUF, STD_ACCESS);
    e->key_atomic = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                           STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC);
    eng_cq_init(b->d, &e->cq2, PAIR_CQ_LOG);
    xrc_srq_template(b->d, &e->sc[SRQ_A], b->pd, e->xrcd[0], b->cq.h);
    xrc_srq_template(b->d, &e->sc[SRQ_B], e->pd2, e->xrcd[0], e->cq2.h);
    xrc_srq_template(b->d, &e->sc[SRQ_OTHER], b->pd, e->xrcd[1], b->cq.h);
    for (i = 0; i < NSRQ; i++) {
        RS_ASSERT_OK(qrs_create_srq(b->d, &e->sc[i], &e->srq[i]));
    }
    xrc_connect(e);
}

/* B posts a receive on SRQ @s for @len bytes at @off of its buffer. */
static void xrc_recv(XrcEnv *e, int s, uint64_t wr_id, uint32_t off,
                     uint32_t len)
{
    Peer *b = &e->pr.p[1];

    srq_post(b->d, &e->sc[s], e->srq[s], &e->srq_pi[s], wr_id,
             b->buf + off, len, s == SRQ_B ? e->key2 : b->key[0]);
}

/* A posts a signaled work request to XRC SRQ number @srqn at B. */
static void xrc_post(XrcEnv *e, uint8_t op, uint64_t wr_id, uint32_t srqn,
                     uint32_t off, uint32_t len, uint64_t raddr,
                     uint32_t rkey)
{
    struct rs_sge sge = peer_sge(&e->pr.p[0], off, len);
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = op,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .imm_or_inv = 0x5eed0000 + wr_id,
        .remote_addr = raddr,
        .rkey = rkey,
        .compare_add = 0x10,
        .xrc_srqn = srqn,
    };

    eng_post_send(e->pr.p[0].d, &e->ini, &w, &sge, 1);
}

static uint32_t srqn(XrcEnv *e, int s)
{
    return HINDEX(e->srq[s]);
}

/* Every frame B sent since the log reset was an XRC ACK with @syndrome. */
static void expect_tgt_acks(Pair *pr, uint8_t syndrome)
{
    unsigned i;

    pair_pump(pr);
    g_assert_cmpuint(pr->nops[1], >=, 1);
    for (i = 0; i < pr->nops[1]; i++) {
        g_assert_cmphex(pr->op[1][i], ==, OP_XRC | OP_ACK);
        g_assert_cmphex(pr->syn[1][i], ==, syndrome);
    }
}

static void xrc_teardown(XrcEnv *e)
{
    struct rs_cqe cqe;

    pair_cq_empty(&e->pr, 0);
    pair_cq_empty(&e->pr, 1);
    g_assert_false(eng_cq_peek(e->pr.p[1].d, &e->cq2, &cqe));
    peer_check(&e->pr.p[0]);
    peer_check(&e->pr.p[1]);
    pair_teardown(&e->pr);
}

/*
 * SENDs to two SRQs of B's domain through one target: each lands in the
 * SRQ its XRCETH names, completes on that SRQ's CQ with the target's QP
 * number and the SRQ's number; the packets are XRC's, B answers with XRC
 * ACKs.
 */
static void test_xrc_send(void *obj, void *data, QGuestAllocator *alloc)
{
    XrcEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_cqe cqe;

    xrc_setup(&e, obj, data, alloc);
    xrc_recv(&e, SRQ_A, 0xb1, 0x1000, 4096);
    xrc_recv(&e, SRQ_B, 0xb2, 0x3000, 512);
    pair_log_reset(pr);

    /* Three packets to SRQ_A (MTU 1024). */
    xrc_post(&e, RS_WR_SEND, 0xa1, srqn(&e, SRQ_A), 0x200, 3000, 0, 0);
    img_move(b, 0x1000, a, 0x200, 3000);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, e.ini.qpn, 0);
    PAIR_EXPECT_OPS(pr, 0, OP_XRC | OP_SEND_FIRST, OP_XRC | OP_SEND_MIDDLE,
                    OP_XRC | OP_SEND_LAST);
    g_assert_cmphex(ldl_be_p(pr->last[0] + XRCETH), ==, srqn(&e, SRQ_A));
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, e.tgt.qpn);
    g_assert_cmpuint(cqe.srqn, ==, srqn(&e, SRQ_A));
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    expect_tgt_acks(pr, AETH_ACK);

    /* With immediate data to SRQ_B, a receive in B's second PD. */
    pair_log_reset(pr);
    xrc_post(&e, RS_WR_SEND_IMM, 0xa2, srqn(&e, SRQ_B), 0x800, 300, 0, 0);
    img_move(b, 0x3000, a, 0x800, 300);
    pair_expect_cqe(pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_SEND_IMM, e.ini.qpn,
                    0);
    PAIR_EXPECT_OPS(pr, 0, OP_XRC | OP_SEND_ONLY_IMM);
    g_assert_cmphex(ldl_be_p(pr->last[0] + XRCETH), ==, srqn(&e, SRQ_B));
    eng_poll(b->d, &e.cq2, &cqe, pair_pump, pr);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, e.tgt.qpn);
    g_assert_cmpuint(cqe.srqn, ==, srqn(&e, SRQ_B));
    g_assert_cmpuint(cqe.byte_len, ==, 300);
    g_assert_true(cqe.wc_flags & RS_WC_F_IMM);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x5eed00a2);
    expect_tgt_acks(pr, AETH_ACK);

    g_assert_cmpuint(qp_state(b->d, e.tgt.h), ==, RS_QPS_RTS);
    xrc_teardown(&e);
}

/*
 * WRITE, READ and an atomic through the target: the R_Key must be of
 * the PD of the SRQ the request names.  B's second PD's key works
 * naming SRQ_B and is refused naming SRQ_A, touching nothing.
 */
static void test_xrc_rdma(void *obj, void *data, QGuestAllocator *alloc)
{
    XrcEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    uint64_t old;

    xrc_setup(&e, obj, data, alloc);
    pair_log_reset(pr);
    xrc_post(&e, RS_WR_RDMA_WRITE, 0xa1, srqn(&e, SRQ_A), 0x100, 2500,
             b->buf + 0x1000, b->key[0]);
    img_move(b, 0x1000, a, 0x100, 2500);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    e.ini.qpn, 0);
    PAIR_EXPECT_OPS(pr, 0, OP_XRC | OP_WRITE_FIRST, OP_XRC | OP_WRITE_MIDDLE,
                    OP_XRC | OP_WRITE_LAST);
    /* XRCETH, then the RETH of a WRITE FIRST: checked on the last. */
    g_assert_cmphex(ldl_be_p(pr->last[0] + XRCETH), ==, srqn(&e, SRQ_A));

    pair_log_reset(pr);
    xrc_post(&e, RS_WR_RDMA_READ, 0xa2, srqn(&e, SRQ_A), 0x4000, 3000,
             b->buf + 0x5000, b->key[0]);
    img_move(a, 0x4000, b, 0x5000, 3000);
    pair_expect_cqe(pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ, e.ini.qpn,
                    3000);
    PAIR_EXPECT_OPS(pr, 0, OP_XRC | OP_READ_REQ);
    PAIR_EXPECT_OPS(pr, 1, OP_XRC | OP_READ_RESP_FIRST,
                    OP_XRC | OP_READ_RESP_MIDDLE, OP_XRC | OP_READ_RESP_LAST);

    pair_log_reset(pr);
    old = ldq_le_p(b->img + 0x7000);
    xrc_post(&e, RS_WR_ATOMIC_FETCH_ADD, 0xa3, srqn(&e, SRQ_A), 0x7800, 8,
             b->buf + 0x7000, e.key_atomic);
    stq_le_p(b->img + 0x7000, old + 0x10);
    stq_le_p(a->img + 0x7800, old);
    pair_expect_cqe(pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_ATOMIC_FETCH_ADD,
                    e.ini.qpn, 0);
    PAIR_EXPECT_OPS(pr, 1, OP_XRC | OP_ATOMIC_ACK);

    /* The second PD's key through the SRQ of that PD. */
    xrc_post(&e, RS_WR_RDMA_WRITE, 0xa4, srqn(&e, SRQ_B), 0x2000, 100,
             b->buf + 0x6000, e.key2);
    img_move(b, 0x6000, a, 0x2000, 100);
    pair_expect_cqe(pr, 0, 0xa4, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    e.ini.qpn, 0);
    peer_check(b);

    /* ... and through SRQ_A, of B's first PD: refused. */
    pair_log_reset(pr);
    xrc_post(&e, RS_WR_RDMA_WRITE, 0xa5, srqn(&e, SRQ_A), 0x2000, 100,
             b->buf + 0x6800, e.key2);
    pair_expect_cqe(pr, 0, 0xa5, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE,
                    e.ini.qpn, 0);
    expect_tgt_acks(pr, AETH_NAK_REM_ACCESS);
    g_assert_cmpuint(qp_state(b->d, e.tgt.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(a->d, e.ini.h), ==, RS_QPS_ERR);
    xrc_teardown(&e);
}

typedef struct BadSrq {
    const char *name;
    int srq;                    /* one of B's, or -1: srqn below */
    uint32_t srqn;
} BadSrq;

/*
 * A SEND naming an SRQ the target may not use: another domain's, one
 * that does not exist, number 0, a basic SRQ.  B NAKs it as an invalid
 * request, completes nothing, writes nothing; both QPs end in ERR.
 */
static void test_xrc_bad_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    XrcEnv e;
    Pair *pr = &e.pr;
    Peer *b = &pr->p[1];
    struct rs_cmd_create_srq basic;
    uint32_t basic_h, basic_pi = 0;
    BadSrq rows[] = {
        { "another domain's", SRQ_OTHER },
        { "no such SRQ", -1, 200 },
        { "SRQ number 0", -1, 0 },
        { "a basic SRQ", -1, 0 },
        { "beyond the table", -1, 0xfffffe },
    };
    unsigned i;

    xrc_setup(&e, obj, data, alloc);
    srq_template(b->d, &basic, b->pd, 4, 1);
    RS_ASSERT_OK(qrs_create_srq(b->d, &basic, &basic_h));
    srq_post(b->d, &basic, basic_h, &basic_pi, 0xbb, b->buf + 0x2000, 512,
             b->key[0]);
    rows[3].srqn = HINDEX(basic_h);
    xrc_recv(&e, SRQ_OTHER, 0xb0, 0x1000, 4096);
    for (i = 0; i < ARRAY_SIZE(rows); i++) {
        uint32_t n = rows[i].srq >= 0 ? srqn(&e, rows[i].srq) : rows[i].srqn;

        g_test_message("XRC SEND naming %s (%u)", rows[i].name, n);
        if (i) {
            xrc_connect(&e);
        }
        pair_log_reset(pr);
        xrc_post(&e, RS_WR_SEND, 0xa0 + i, n, 0x100, 64, 0, 0);
        pair_expect_cqe(pr, 0, 0xa0 + i, RS_WC_REM_INV_REQ_ERR, RS_WR_SEND,
                        e.ini.qpn, 0);
        PAIR_EXPECT_OPS(pr, 0, OP_XRC | OP_SEND_ONLY);
        expect_tgt_acks(pr, AETH_NAK_INV_REQ);
        g_assert_cmpuint(qp_state(b->d, e.tgt.h), ==, RS_QPS_ERR);
        g_assert_cmpuint(qp_state(pr->p[0].d, e.ini.h), ==, RS_QPS_ERR);
        pair_cq_empty(pr, 1);
    }
    xrc_teardown(&e);
}

/*
 * A peer that names another SRQ of the domain in the middle of a SEND:
 * the packets of a message go to the SRQ its first packet named.  The
 * second packet, edited to name SRQ_B, is an invalid request; SRQ_A's
 * WQE the message took completes flushed when the target goes to ERR.
 */
static void test_xrc_switch_mid_message(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    XrcEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    GByteArray *f;
    struct rs_cqe cqe;

    xrc_setup(&e, obj, data, alloc);
    xrc_recv(&e, SRQ_A, 0xb1, 0x1000, 4096);
    xrc_recv(&e, SRQ_B, 0xb2, 0x3000, 4096);
    pair_log_reset(pr);
    pr->hold[0] = true;
    xrc_post(&e, RS_WR_SEND, 0xa1, srqn(&e, SRQ_A), 0x200, 3000, 0, 0);
    f = pair_take(pr, 0);
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_XRC | OP_SEND_FIRST);
    pair_inject(pr, 1, f->data, f->len);
    g_byte_array_unref(f);
    img_move(b, 0x1000, a, 0x200, 1024);
    f = pair_take(pr, 0);
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_XRC | OP_SEND_MIDDLE);
    stl_be_p(f->data + XRCETH, srqn(&e, SRQ_B));
    roce_reseal(f->data, f->len);
    pair_inject(pr, 1, f->data, f->len);
    g_byte_array_unref(f);
    pair_forget(pr, 0);
    pr->hold[0] = false;

    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, e.tgt.qpn);
    g_assert_cmpuint(cqe.srqn, ==, srqn(&e, SRQ_A));
    g_assert_cmpuint(qp_state(b->d, e.tgt.h), ==, RS_QPS_ERR);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_REM_INV_REQ_ERR, RS_WR_SEND,
                    e.ini.qpn, 0);
    g_assert_false(eng_cq_peek(b->d, &e.cq2, &cqe));
    /* IBTA leaves a failed message's receive buffer undefined. */
    peer_dont_care(b, 0x1000, 4096);
    xrc_teardown(&e);
}

/*
 * A duplicate of a message to SRQ_A (as after a lost ACK) arrives while a
 * SEND to SRQ_B is half received: B acknowledges it as a duplicate, does
 * not execute it again, and completes the SEND in SRQ_B.
 */
static void test_xrc_duplicate_mid_message(void *obj, void *data,
                                           QGuestAllocator *alloc)
{
    XrcEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    GByteArray *f[4];
    struct rs_cqe cqe;
    unsigned i;

    xrc_setup(&e, obj, data, alloc);
    xrc_recv(&e, SRQ_A, 0xb1, 0x1000, 512);
    xrc_recv(&e, SRQ_B, 0xb2, 0x3000, 4096);
    pair_log_reset(pr);
    pr->hold[0] = true;
    xrc_post(&e, RS_WR_SEND, 0xa1, srqn(&e, SRQ_A), 0x100, 100, 0, 0);
    xrc_post(&e, RS_WR_SEND, 0xa2, srqn(&e, SRQ_B), 0x800, 3000, 0, 0);
    img_move(b, 0x1000, a, 0x100, 100);
    img_move(b, 0x3000, a, 0x800, 3000);
    for (i = 0; i < 4; i++) {
        f[i] = pair_take(pr, 0);
    }
    g_assert_cmphex(f[0]->data[ROCE_BTH], ==, OP_XRC | OP_SEND_ONLY);
    g_assert_cmphex(f[1]->data[ROCE_BTH], ==, OP_XRC | OP_SEND_FIRST);
    pair_inject(pr, 1, f[0]->data, f[0]->len);
    pair_inject(pr, 1, f[1]->data, f[1]->len);
    qtest_readl(qrs_qts(b->d), b->buf);
    pair_inject(pr, 1, f[0]->data, f[0]->len);      /* the duplicate */
    qtest_readl(qrs_qts(b->d), b->buf);
    pair_inject(pr, 1, f[2]->data, f[2]->len);
    pair_inject(pr, 1, f[3]->data, f[3]->len);
    for (i = 0; i < 4; i++) {
        g_byte_array_unref(f[i]);
    }
    pr->hold[0] = false;

    pair_expect_cqe(pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, e.tgt.qpn, 100);
    eng_poll(b->d, &e.cq2, &cqe, pair_pump, pr);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, e.tgt.qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, e.ini.qpn, 0);
    pair_expect_cqe(pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, e.ini.qpn, 0);
    expect_tgt_acks(pr, AETH_ACK);
    g_assert_cmpuint(qp_state(b->d, e.tgt.h), ==, RS_QPS_RTS);
    xrc_teardown(&e);
}

/*
 * READ responses owed while a later request names another SRQ: B owes
 * most of a 16-packet READ through SRQ_A (its wire is full) when a SEND
 * to SRQ_B, of another PD, arrives.  The READ's remaining responses are
 * still checked against SRQ_A's PD, the READ's, and both complete.
 */
static void test_xrc_read_owed(void *obj, void *data, QGuestAllocator *alloc)
{
    XrcEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    GPollFD pfd = { .events = G_IO_IN };
    GByteArray *f;
    struct rs_cqe cqe;
    unsigned i;

    xrc_setup(&e, obj, data, alloc);
    peer_fill(b, 0x2000, 16384, 0x57);
    xrc_recv(&e, SRQ_B, 0xb2, 0x7000, 512);
    pair_log_reset(pr);
    pr->hold[0] = pr->hold[1] = true;
    xrc_post(&e, RS_WR_RDMA_READ, 0xa1, srqn(&e, SRQ_A), 0x3000, 16384,
             b->buf + 0x2000, b->key[0]);
    xrc_post(&e, RS_WR_SEND, 0xa2, srqn(&e, SRQ_B), 0x800, 300, 0, 0);
    img_move(a, 0x3000, b, 0x2000, 16384);
    img_move(b, 0x7000, a, 0x800, 300);
    f = pair_take(pr, 0);
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_XRC | OP_READ_REQ);
    pair_inject(pr, 1, f->data, f->len);
    g_byte_array_unref(f);
    /* B's responder ran to the full wire before QEMU answers this. */
    pfd.fd = pr->fd[1];
    g_assert_cmpint(g_poll(&pfd, 1, RS_QOS_TIMEOUT_US / 1000), ==, 1);
    qtest_readl(qrs_qts(b->d), b->buf);
    f = pair_take(pr, 0);
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_XRC | OP_SEND_ONLY);
    pair_inject(pr, 1, f->data, f->len);
    g_byte_array_unref(f);
    qtest_readl(qrs_qts(b->d), b->buf);
    /*
     * The SEND is received while nobody read B's wire, which holds fewer
     * than the READ's 16 responses (xrc.c's small send buffer, as
     * migrate/pair-read-owed measures): most are still owed.
     */
    g_assert_true(eng_cq_peek(b->d, &e.cq2, &cqe));

    pair_release(pr, 1);
    pair_release(pr, 0);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ, e.ini.qpn,
                    16384);
    pair_expect_cqe(pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, e.ini.qpn, 0);
    eng_poll(b->d, &e.cq2, &cqe, pair_pump, pr);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, e.tgt.qpn);
    for (i = 0; i < pr->nops[1]; i++) {
        g_assert_cmphex(pr->syn[1][i] & 0xe0, ==, 0);   /* no NAK */
    }
    g_assert_cmpuint(qp_state(b->d, e.tgt.h), ==, RS_QPS_RTS);
    xrc_teardown(&e);
}

/*
 * The admin commands' checks: domains, XRC SRQs, initiator and target
 * QPs; what holds a domain or a CQ; an XRC SRQ destroyed after a target
 * used it; doorbells for queues an XRC QP does not have.
 */
static void test_xrc_objects(void *obj, void *data, QGuestAllocator *alloc)
{
    XrcEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_cmd_create_srq s;
    struct rs_cmd_create_pd pdc = { .flags = 1 };
    struct rs_cmd_create_qp c;
    LoopQp bad;
    uint32_t h;

    xrc_setup(&e, obj, data, alloc);
    RS_ASSERT_STATUS(qrs_admin_cmd(b->d, RS_CMD_CREATE_XRCD, &pdc,
                                   sizeof(pdc), &h, NULL),
                     RS_STATUS_BAD_PARAM);
    /* XRC SRQs: a domain and a CQ, valid, together. */
    xrc_srq_template(b->d, &s, b->pd, e.xrcd[0] ^ (1u << 24), b->cq.h);
    RS_ASSERT_STATUS(qrs_create_srq(b->d, &s, &h), RS_STATUS_BAD_HANDLE);
    xrc_srq_template(b->d, &s, b->pd, e.xrcd[0], 0);
    RS_ASSERT_STATUS(qrs_create_srq(b->d, &s, &h), RS_STATUS_BAD_HANDLE);
    xrc_srq_template(b->d, &s, b->pd, 0, b->cq.h);
    RS_ASSERT_STATUS(qrs_create_srq(b->d, &s, &h), RS_STATUS_BAD_PARAM);
    /* A target: a domain and nothing else. */
    tgt_template(&bad, 0);
    RS_ASSERT_STATUS(qrs_create_qp(b->d, &bad.c, &h, NULL),
                     RS_STATUS_BAD_HANDLE);
    tgt_template(&bad, e.xrcd[0]);
    bad.c.pd = b->pd;
    RS_ASSERT_STATUS(qrs_create_qp(b->d, &bad.c, &h, NULL),
                     RS_STATUS_BAD_PARAM);
    tgt_template(&bad, e.xrcd[0]);
    bad.c.sq_log_size = 4;
    RS_ASSERT_STATUS(qrs_create_qp(b->d, &bad.c, &h, NULL),
                     RS_STATUS_BAD_PARAM);
    /* An initiator: no receive side, no domain. */
    ini_template(a, &bad);
    bad.c.recv_cq = a->cq.h;
    RS_ASSERT_STATUS(qrs_create_qp(a->d, &bad.c, &h, NULL),
                     RS_STATUS_BAD_PARAM);
    ini_template(a, &bad);
    bad.c.xrcd = 1;
    RS_ASSERT_STATUS(qrs_create_qp(a->d, &bad.c, &h, NULL),
                     RS_STATUS_BAD_PARAM);
    /* A basic QP cannot take an XRC SRQ. */
    qp_template(b->d, &c, RS_QPT_RC, b->pd, b->cq.h, b->cq.h);
    c.rq_addr = 0;
    c.srq = e.srq[SRQ_A];
    RS_ASSERT_STATUS(qrs_create_qp(b->d, &c, &h, NULL), RS_STATUS_BAD_PARAM);

    /* Doorbells for queues XRC QPs lack change nothing. */
    qrs_db_writel(a->d, 0, RS_DB_RQ, e.ini.qpn | 5u << 16);
    qrs_db_writel(b->d, 0, RS_DB_SQ, e.tgt.qpn | 5u << 16);
    qrs_db_writel(b->d, 0, RS_DB_RQ, e.tgt.qpn | 5u << 16);

    /* A SEND to SRQ_B, which is then destroyed, then named again. */
    xrc_recv(&e, SRQ_B, 0xb2, 0x3000, 512);
    xrc_post(&e, RS_WR_SEND, 0xa1, srqn(&e, SRQ_B), 0x800, 300, 0, 0);
    img_move(b, 0x3000, a, 0x800, 300);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, e.ini.qpn, 0);
    {
        struct rs_cqe cqe;

        eng_poll(b->d, &e.cq2, &cqe, pair_pump, pr);
        assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, e.tgt.qpn);
    }
    /* The SRQ holds its CQ and domain, the target its domain. */
    RS_ASSERT_STATUS(qrs_destroy(b->d, RS_CMD_DESTROY_CQ, e.cq2.h),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(b->d, RS_CMD_DESTROY_XRCD, e.xrcd[0]),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_SRQ, e.srq[SRQ_B]));
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_CQ, e.cq2.h));
    pair_log_reset(pr);
    xrc_post(&e, RS_WR_SEND, 0xa2, srqn(&e, SRQ_B), 0x800, 300, 0, 0);
    pair_expect_cqe(pr, 0, 0xa2, RS_WC_REM_INV_REQ_ERR, RS_WR_SEND,
                    e.ini.qpn, 0);
    expect_tgt_acks(pr, AETH_NAK_INV_REQ);

    /* The domain is free once its SRQs and target are gone. */
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_QP, e.tgt.h));
    RS_ASSERT_STATUS(qrs_destroy(b->d, RS_CMD_DESTROY_XRCD, e.xrcd[0]),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_SRQ, e.srq[SRQ_A]));
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_XRCD, e.xrcd[0]));
    RS_ASSERT_STATUS(qrs_destroy(b->d, RS_CMD_DESTROY_XRCD, e.xrcd[0]),
                     RS_STATUS_BAD_HANDLE);
    pair_cq_empty(pr, 0);
    pair_cq_empty(pr, 1);
    peer_check(a);
    peer_check(b);
    pair_teardown(pr);
}

/*
 * Live migration with a domain, XRC SRQs (one with a WQE posted) and a
 * connected initiator and target: on the destination the target still
 * takes SENDs to both SRQs of its domain, with their PDs' keys.
 */
static void test_xrc_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    XrcEnv e;
    Pair *pr = &e.pr;
    Peer *a, *b;
    struct rs_cqe cqe;

    xrc_setup(&e, obj, data, alloc);
    a = &pr->p[0];
    b = &pr->p[1];
    xrc_recv(&e, SRQ_A, 0xb1, 0x1000, 4096);
    xrc_recv(&e, SRQ_B, 0xb2, 0x3000, 512);
    xrc_post(&e, RS_WR_SEND, 0xa1, srqn(&e, SRQ_A), 0x200, 2000, 0, 0);
    img_move(b, 0x1000, a, 0x200, 2000);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, e.ini.qpn, 0);
    pair_expect_cqe(pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, e.tgt.qpn, 2000);

    pair_migrate(pr);
    pair_release(pr, 0);
    pair_release(pr, 1);
    a = &pr->p[0];
    b = &pr->p[1];

    xrc_post(&e, RS_WR_SEND, 0xa2, srqn(&e, SRQ_B), 0x800, 300, 0, 0);
    img_move(b, 0x3000, a, 0x800, 300);
    pair_expect_cqe(pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, e.ini.qpn, 0);
    eng_poll(b->d, &e.cq2, &cqe, pair_pump, pr);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, e.tgt.qpn);
    g_assert_cmpuint(cqe.srqn, ==, srqn(&e, SRQ_B));
    xrc_post(&e, RS_WR_RDMA_WRITE, 0xa3, srqn(&e, SRQ_B), 0x2000, 100,
             b->buf + 0x6000, e.key2);
    img_move(b, 0x6000, a, 0x2000, 100);
    pair_expect_cqe(pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    e.ini.qpn, 0);
    g_assert_cmpuint(qp_state(b->d, e.tgt.h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(a->d, e.ini.h), ==, RS_QPS_RTS);
    xrc_teardown(&e);
}

static void register_xrc_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions pair_small_sndbuf = {
        .before = pair_small_sndbuf_before,
    };

    rs_add_standalone_test("xrc/send", test_xrc_send, &pair);
    rs_add_standalone_test("xrc/rdma", test_xrc_rdma, &pair);
    rs_add_standalone_test("xrc/bad-srq", test_xrc_bad_srq, &pair);
    rs_add_standalone_test("xrc/switch-mid-message",
                           test_xrc_switch_mid_message, &pair);
    rs_add_standalone_test("xrc/duplicate-mid-message",
                           test_xrc_duplicate_mid_message, &pair);
    rs_add_standalone_test("xrc/read-owed",
                           test_xrc_read_owed, &pair_small_sndbuf);
    rs_add_standalone_test("xrc/objects", test_xrc_objects, &pair);
    rs_add_standalone_test("xrc/migrate", test_xrc_migrate, &pair);
}

libqos_init(register_xrc_tests);
