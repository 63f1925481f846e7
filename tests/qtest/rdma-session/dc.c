/*
 * rdma-session qtests: dynamically connected transport between two
 * adapters on a wire the test carries.  DC initiators on one adapter,
 * DC targets (on one SRQ) on the other: CONNECT, REPLY and DISCONNECT
 * on the wire, data as RC to the responder context, target switches,
 * idle closes, wrong keys, losses, a full context table, hostile frames,
 * bad work requests and migration.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define DCETH           ROCE_EXT        /* right after the BTH */
#define DCRETH          (ROCE_EXT + 4)  /* after the reply's AETH */
#define DC_KEY          0x0123456789abcdefull
#define DC_KEY2         0xfedcba9876543210ull

/* B's properties: its DCIs do not close on their own during a test. */
#define B_LONG_IDLE     ",dc-idle=10000000"

typedef struct DcEnv {
    Pair pr;
    int ini, tgt;               /* the adapters of the DCIs and DCTs */
    LoopQp dci[2];
    LoopQp dct[2];
    uint32_t ah;                /* ini's AH to tgt, in ini's PD */
    uint32_t key_atomic;        /* tgt: atomics allowed */
    struct rs_cmd_create_srq sc;
    uint32_t srq, srq_pi;       /* tgt: the DCTs' SRQ */
    uint8_t rnr_timer;          /* the DCTs' min_rnr_timer */
} DcEnv;

static uint32_t dc_ah(DcEnv *e, int from, uint32_t pd)
{
    struct rs_cmd_create_ah c;
    uint32_t h = 0;

    ah_template(&c, pd, 0);
    gid_v4(c.dgid, 10, 0, 0, !from + 1);
    memcpy(c.dmac, pair_mac[!from], 6);
    RS_ASSERT_OK(qrs_create_ah(e->pr.p[from].d, &c, &h));
    return h;
}

static void dci_template(Peer *p, LoopQp *q)
{
    memset(q, 0, sizeof(*q));
    q->c.qp_type = RS_QPT_DCI;
    q->c.pd = p->pd;
    q->c.send_cq = p->cq.h;
    q->c.sq_log_size = 4;
    q->c.max_send_sge = 4;
    q->c.max_inline = 64;
    q->c.sq_addr = qrs_alloc_zeroed(p->d, qrs_qp_sq_bytes(&q->c));
}

static void dci_create(DcEnv *e, LoopQp *q)
{
    Peer *p = &e->pr.p[e->ini];
    struct rs_qp_attr a;

    dci_template(p, q);
    q->h = new_qp(p->d, &q->c);
    q->qpn = HINDEX(q->h);
    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    RS_ASSERT_OK(qrs_modify_qp(p->d, q->h, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_PORT | RS_QP_ATTR_PKEY_INDEX));
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    RS_ASSERT_OK(qrs_modify_qp(p->d, q->h, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_PATH_MTU));
    std_attr(&a, RS_QPS_RTR, RS_QPS_RTS);
    a.sq_psn = pair_psn[e->ini];
    a.timeout = PAIR_TIMEOUT;
    a.retry_cnt = 3;
    RS_ASSERT_OK(qrs_modify_qp(p->d, q->h, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_TIMEOUT | RS_QP_ATTR_RETRY_CNT |
                               RS_QP_ATTR_RNR_RETRY | RS_QP_ATTR_SQ_PSN |
                               RS_QP_ATTR_MAX_QP_RD_ATOMIC));
}

static void dct_template(DcEnv *e, LoopQp *q, uint64_t key)
{
    Peer *p = &e->pr.p[e->tgt];

    memset(q, 0, sizeof(*q));
    q->c.qp_type = RS_QPT_DCT;
    q->c.pd = p->pd;
    q->c.recv_cq = p->cq.h;
    q->c.srq = e->srq;
    q->c.dc_key_lo = (uint32_t)key;
    q->c.dc_key_hi = key >> 32;
}

static void dct_create(DcEnv *e, LoopQp *q, uint64_t key)
{
    Peer *p = &e->pr.p[e->tgt];
    struct rs_qp_attr a;

    dct_template(e, q, key);
    q->h = new_qp(p->d, &q->c);
    q->qpn = HINDEX(q->h);
    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    a.access_flags = STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC;
    RS_ASSERT_OK(qrs_modify_qp(p->d, q->h, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_ACCESS_FLAGS | RS_QP_ATTR_PORT));
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.min_rnr_timer = e->rnr_timer;
    RS_ASSERT_OK(qrs_modify_qp(p->d, q->h, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_PATH_MTU |
                               RS_QP_ATTR_MIN_RNR_TIMER));
    g_assert_cmpuint(qp_state(p->d, q->h), ==, RS_QPS_RTR);
}

static void dc_setup_rnr(DcEnv *e, void *obj, void *data,
                         QGuestAllocator *alloc, int ini, uint8_t rnr_timer)
{
    Peer *t;

    memset(e, 0, sizeof(*e));
    e->rnr_timer = rnr_timer;
    pair_setup(&e->pr, obj, data, alloc);
    e->ini = ini;
    e->tgt = !ini;
    t = &e->pr.p[e->tgt];
    e->key_atomic = eng_mr(t->d, t->pd, 0, t->buf, PAIR_BUF,
                           STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC);
    srq_template(t->d, &e->sc, t->pd, 4, 1);
    RS_ASSERT_OK(qrs_create_srq(t->d, &e->sc, &e->srq));
    e->ah = dc_ah(e, ini, e->pr.p[ini].pd);
    dci_create(e, &e->dci[0]);
    dct_create(e, &e->dct[0], DC_KEY);
}

/* RNR timer 10 us: waits stay short. */
static void dc_setup(DcEnv *e, void *obj, void *data, QGuestAllocator *alloc,
                     int ini)
{
    dc_setup_rnr(e, obj, data, alloc, ini, 1);
}

/* The target posts a receive for @len bytes at @off of its buffer. */
static void dc_recv(DcEnv *e, uint64_t wr_id, uint32_t off, uint32_t len)
{
    Peer *t = &e->pr.p[e->tgt];

    srq_post(t->d, &e->sc, e->srq, &e->srq_pi, wr_id, t->buf + off, len,
             t->key[0]);
}

/* DCI @n posts a signaled work request to DCT @t with key @key. */
static void dc_post_ah(DcEnv *e, int n, uint32_t ah, uint8_t op,
                       uint64_t wr_id, uint32_t dct, uint64_t key,
                       uint32_t off, uint32_t len, uint64_t raddr,
                       uint32_t rkey)
{
    Peer *p = &e->pr.p[e->ini];
    struct rs_sge sge = peer_sge(p, off, len);
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = op,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .remote_addr = raddr,
        .rkey = rkey,
        .compare_add = 0x10,
        .ah = ah,
        .remote_qpn = dct,
        .dc_key_lo = (uint32_t)key,
        .dc_key_hi = key >> 32,
    };

    eng_post_send(p->d, &e->dci[n], &w, &sge, 1);
}

static void dc_post(DcEnv *e, int n, uint8_t op, uint64_t wr_id, int t,
                    uint32_t off, uint32_t len, uint64_t raddr,
                    uint32_t rkey)
{
    dc_post_ah(e, n, e->ah, op, wr_id, e->dct[t].qpn, DC_KEY, off, len,
               raddr, rkey);
}

/* A SEND of DCI @n to DCT @t that lands at @toff of the target. */
static void dc_send_ok(DcEnv *e, int n, int t, uint64_t wr_id,
                       uint32_t off, uint32_t toff, uint32_t len)
{
    Pair *pr = &e->pr;
    struct rs_cqe cqe;

    dc_recv(e, wr_id + 0x100, toff, len);
    dc_post(e, n, RS_WR_SEND, wr_id, t, off, len, 0, 0);
    img_move(&pr->p[e->tgt], toff, &pr->p[e->ini], off, len);
    pair_expect_cqe(pr, e->ini, wr_id, RS_WC_SUCCESS, RS_WR_SEND,
                    e->dci[n].qpn, 0);
    pair_poll(pr, e->tgt, &cqe);
    assert_cqe(&cqe, wr_id + 0x100, RS_WC_SUCCESS, RS_WR_RECV,
               e->dct[t].qpn);
    g_assert_cmpuint(cqe.src_qp, ==, e->dci[n].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, len);
}

static void dc_teardown(DcEnv *e)
{
    pair_cq_empty(&e->pr, 0);
    pair_cq_empty(&e->pr, 1);
    peer_check(&e->pr.p[0]);
    peer_check(&e->pr.p[1]);
    pair_teardown(&e->pr);
}

/* A frame's BTH destination QP, PSN. */
static uint32_t f_dqpn(const uint8_t *f)
{
    return ldl_be_p(f + ROCE_BTH + 4) & 0xffffff;
}

static uint32_t f_psn(const uint8_t *f)
{
    return ldl_be_p(f + ROCE_BTH + 8) & 0xffffff;
}

/*
 * The first SEND connects: CONNECT (DCT number, the DCI's first PSN,
 * key, DCI QPN, connection 1), REPLY (ACK, the context's QPN), the SEND
 * as RC to the context; it lands in the DCT's SRQ with the DCT's number
 * and the DCI's.  WRITE, READ and an atomic go on the same connection.
 */
static void test_dc_connect(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a, *b;
    GByteArray *f;
    struct rs_cqe cqe;
    struct rs_qp_attr qa;
    uint8_t mgid[16];
    uint32_t ctx;
    uint64_t old;

    dc_setup(&e, obj, data, alloc, 1);
    a = &pr->p[e.tgt];          /* A: the targets */
    b = &pr->p[e.ini];          /* B: the initiator */
    dc_recv(&e, 0xa1, 0x1000, 4096);
    pair_log_reset(pr);
    pr->hold[0] = pr->hold[1] = true;
    dc_post(&e, 0, RS_WR_SEND, 0xb1, 0, 0x200, 3000, 0, 0);
    img_move(a, 0x1000, b, 0x200, 3000);

    f = pair_take(pr, 1);
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_DC_CONNECT);
    g_assert_cmpuint(f->len, ==, ROCE_EXT + 16 + 4);
    g_assert_cmpuint(f_dqpn(f->data), ==, e.dct[0].qpn);
    g_assert_cmphex(f_psn(f->data), ==, pair_psn[1]);
    g_assert_true(f->data[ROCE_BTH + 8] & 0x80);        /* AckReq */
    g_assert_cmphex(ldq_be_p(f->data + DCETH), ==, DC_KEY);
    g_assert_cmpuint(ldl_be_p(f->data + DCETH + 8), ==, e.dci[0].qpn);
    g_assert_cmpuint(ldl_be_p(f->data + DCETH + 12), ==, 1);
    pair_inject(pr, 0, f->data, f->len);
    g_byte_array_unref(f);

    f = pair_take(pr, 0);
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_DC_CONNECT_REPLY);
    g_assert_cmpuint(f->len, ==, ROCE_EXT + 4 + 8 + 4);
    g_assert_cmpuint(f_dqpn(f->data), ==, e.dci[0].qpn);
    g_assert_cmphex(f_psn(f->data), ==, pair_psn[1]);
    g_assert_cmphex(f->data[ROCE_EXT], ==, AETH_ACK);
    ctx = ldl_be_p(f->data + DCRETH);
    g_assert_cmpuint(ctx, !=, 0);
    g_assert_cmpuint(ctx, !=, e.dct[0].qpn);
    g_assert_cmpuint(ldl_be_p(f->data + DCRETH + 4), ==, 1);
    pr->hold[0] = pr->hold[1] = false;
    pair_inject(pr, 1, f->data, f->len);
    g_byte_array_unref(f);

    pair_expect_cqe(pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_SEND, e.dci[0].qpn, 0);
    PAIR_EXPECT_OPS(pr, 1, OP_DC_CONNECT, OP_SEND_FIRST, OP_SEND_MIDDLE,
                    OP_SEND_LAST);
    g_assert_cmpuint(f_dqpn(pr->last[1]), ==, ctx);
    g_assert_cmphex(f_psn(pr->last[1]), ==, (pair_psn[1] + 2) & 0xffffff);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RECV, e.dct[0].qpn);
    g_assert_cmpuint(cqe.src_qp, ==, e.dci[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    /* The context is no guest's QP: its handle is refused. */
    RS_ASSERT_STATUS(qrs_query_qp(a->d, HANDLE(0, ctx), &qa),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(a->d, RS_CMD_DESTROY_QP, HANDLE(0, ctx)),
                     RS_STATUS_BAD_HANDLE);
    std_attr(&qa, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_STATUS(qrs_modify_qp(a->d, HANDLE(0, ctx), &qa,
                                   RS_QP_ATTR_STATE), RS_STATUS_BAD_HANDLE);
    gid_v4(mgid, 224, 0, 0, 9);
    RS_ASSERT_STATUS(qrs_mcast(a->d, RS_CMD_ATTACH_MCAST, mgid,
                               HANDLE(0, ctx)), RS_STATUS_BAD_HANDLE);

    /* WRITE, READ, atomic: no new CONNECT, RC opcodes to the context. */
    pair_log_reset(pr);
    dc_post(&e, 0, RS_WR_RDMA_WRITE, 0xb2, 0, 0x100, 2500,
            a->buf + 0x4000, a->key[0]);
    img_move(a, 0x4000, b, 0x100, 2500);
    pair_expect_cqe(pr, 1, 0xb2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    e.dci[0].qpn, 0);
    dc_post(&e, 0, RS_WR_RDMA_READ, 0xb3, 0, 0x5000, 2000,
            a->buf + 0x6000, a->key[0]);
    img_move(b, 0x5000, a, 0x6000, 2000);
    pair_expect_cqe(pr, 1, 0xb3, RS_WC_SUCCESS, RS_WR_RDMA_READ,
                    e.dci[0].qpn, 2000);
    old = ldq_le_p(a->img + 0x7000);
    dc_post(&e, 0, RS_WR_ATOMIC_FETCH_ADD, 0xb4, 0, 0x7800, 8,
            a->buf + 0x7000, e.key_atomic);
    stq_le_p(a->img + 0x7000, old + 0x10);
    stq_le_p(b->img + 0x7800, old);
    pair_expect_cqe(pr, 1, 0xb4, RS_WC_SUCCESS, RS_WR_ATOMIC_FETCH_ADD,
                    e.dci[0].qpn, 0);
    PAIR_EXPECT_OPS(pr, 1, OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST,
                    OP_READ_REQ, OP_FETCH_ADD);
    g_assert_cmpuint(f_dqpn(pr->last[1]), ==, ctx);
    g_assert_cmpuint(qp_state(b->d, e.dci[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(a->d, e.dct[0].h), ==, RS_QPS_RTR);
    dc_teardown(&e);
}

/*
 * One DCI alternating between two DCTs: the next target's CONNECT waits
 * for the ACK of the last WQE to the old one, then DISCONNECT and
 * CONNECT; each SEND lands through its own DCT.
 */
static void test_dc_switch(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a, *b;
    struct rs_cqe cqe;
    GByteArray *f;
    int i;

    dc_setup(&e, obj, data, alloc, 1);
    a = &pr->p[e.tgt];
    b = &pr->p[e.ini];
    dct_create(&e, &e.dct[1], DC_KEY);
    for (i = 0; i < 3; i++) {
        dc_recv(&e, 0xa0 + i, 0x1000 * (i + 1), 512);
    }
    pair_log_reset(pr);
    pr->hold[0] = true;         /* A's REPLY and ACKs */
    dc_post(&e, 0, RS_WR_SEND, 0xb0, 0, 0x100, 512, 0, 0);
    dc_post(&e, 0, RS_WR_SEND, 0xb1, 1, 0x300, 512, 0, 0);
    dc_post(&e, 0, RS_WR_SEND, 0xb2, 0, 0x500, 512, 0, 0);
    for (i = 0; i < 3; i++) {
        img_move(a, 0x1000 * (i + 1), b, 0x100 + 0x200 * i, 512);
    }
    f = pair_take(pr, 0);       /* the REPLY */
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_DC_CONNECT_REPLY);
    pair_inject(pr, 1, f->data, f->len);
    g_byte_array_unref(f);
    f = pair_take(pr, 0);       /* the first SEND's ACK: kept */
    g_assert_cmphex(f->data[ROCE_BTH], ==, OP_ACK);
    /* Nothing for the second target before the first one's ACK. */
    qtest_clock_step(qrs_qts(b->d), 1000 * 1000);
    pair_pump(pr);
    PAIR_EXPECT_OPS(pr, 1, OP_DC_CONNECT, OP_SEND_ONLY);
    pr->hold[0] = false;
    pair_inject(pr, 1, f->data, f->len);
    g_byte_array_unref(f);
    for (i = 0; i < 3; i++) {
        pair_expect_cqe(pr, 1, 0xb0 + i, RS_WC_SUCCESS, RS_WR_SEND,
                        e.dci[0].qpn, 0);
        pair_poll(pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, RS_WC_SUCCESS, RS_WR_RECV,
                   e.dct[i & 1].qpn);
        g_assert_cmpuint(cqe.src_qp, ==, e.dci[0].qpn);
    }
    PAIR_EXPECT_OPS(pr, 1, OP_DC_CONNECT, OP_SEND_ONLY, OP_DC_DISCONNECT,
                    OP_DC_CONNECT, OP_SEND_ONLY, OP_DC_DISCONNECT,
                    OP_DC_CONNECT, OP_SEND_ONLY);
    dc_teardown(&e);
}

/*
 * dc-idle (1 ms) without work: DISCONNECT; the next WQE connects again
 * (connection 2) and lands.
 */
static void test_dc_idle(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *b;

    dc_setup(&e, obj, data, alloc, 1);
    b = &pr->p[e.ini];
    pair_log_reset(pr);
    dc_send_ok(&e, 0, 0, 0xb1, 0x100, 0x1000, 200);
    PAIR_EXPECT_OPS(pr, 1, OP_DC_CONNECT, OP_SEND_ONLY);
    qtest_clock_step(qrs_qts(b->d), 3 * 1000 * 1000);
    pair_wait_frames(pr, 1, 3);
    PAIR_EXPECT_OPS(pr, 1, OP_DC_CONNECT, OP_SEND_ONLY, OP_DC_DISCONNECT);
    g_assert_cmpuint(ldl_be_p(pr->last[1] + DCETH + 12), ==, 1);

    pair_log_reset(pr);
    dc_send_ok(&e, 0, 0, 0xb2, 0x400, 0x2000, 300);
    PAIR_EXPECT_OPS(pr, 1, OP_DC_CONNECT, OP_SEND_ONLY);
    dc_teardown(&e);
}

/*
 * A wrong key: REPLY NAK remote access error, REM_ACCESS_ERR at the DCI
 * (to ERR), nothing lands, one key violation event at the DCT's side
 * however often it happens; the DCT serves a good DCI afterwards.
 */
static void test_dc_bad_key(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a, *b;
    struct rs_cqe cqe;
    struct rs_event ev;
    int i;

    dc_setup(&e, obj, data, alloc, 1);
    a = &pr->p[e.tgt];
    b = &pr->p[e.ini];
    dci_create(&e, &e.dci[1]);
    dc_recv(&e, 0xa1, 0x1000, 512);
    pair_log_reset(pr);
    /* Back to back: the second violation is within the rate limit. */
    for (i = 0; i < 2; i++) {
        dc_post_ah(&e, i, e.ah, RS_WR_RDMA_WRITE, 0xb1 + i, e.dct[0].qpn,
                   DC_KEY2, 0x100, 64, a->buf + 0x3000, a->key[0]);
    }
    for (i = 0; i < 2; i++) {
        pair_poll(pr, 1, &cqe);
        g_assert_cmpuint(cqe.wr_id - 0xb1, <, 2);
        assert_cqe(&cqe, cqe.wr_id, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE,
                   e.dci[cqe.wr_id - 0xb1].qpn);
    }
    PAIR_EXPECT_OPS(pr, 1, OP_DC_CONNECT, OP_DC_CONNECT);
    PAIR_EXPECT_OPS(pr, 0, OP_DC_CONNECT_REPLY, OP_DC_CONNECT_REPLY);
    for (i = 0; i < 2; i++) {
        g_assert_cmphex(pr->syn[0][i], ==, AETH_NAK_REM_ACCESS);
        g_assert_cmpuint(qp_state(b->d, e.dci[i].h), ==, RS_QPS_ERR);
    }
    g_assert_true(qrs_aeq_poll(a->d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_DCT_KEY_VIOLATION);
    g_assert_cmphex(ev.handle, ==, e.dct[0].h);
    g_assert_true(ev.data == e.dci[0].qpn || ev.data == e.dci[1].qpn);
    expect_no_event(a->d);
    g_assert_cmpuint(qp_state(a->d, e.dct[0].h), ==, RS_QPS_RTR);

    /* No SEND landed; a good DCI is served. */
    g_assert_false(eng_cq_peek(a->d, &a->cq, &cqe));
    dci_create(&e, &e.dci[0]);
    pair_log_reset(pr);
    dc_post(&e, 0, RS_WR_SEND, 0xb2, 0, 0x200, 512, 0, 0);
    img_move(a, 0x1000, b, 0x200, 512);
    pair_expect_cqe(pr, 1, 0xb2, RS_WC_SUCCESS, RS_WR_SEND, e.dci[0].qpn, 0);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RECV, e.dct[0].qpn,
                    512);
    dc_teardown(&e);
}

/*
 * Both adapters' virtual clocks @ms milliseconds on, 10 ms at a time,
 * the wire pumped after each step: timeouts of tens of milliseconds in
 * a few steps (eng_poll steps 1 us at a time).
 */
static void dc_advance(DcEnv *e, unsigned ms)
{
    Pair *pr = &e->pr;
    QTestState *qa = qrs_qts(pr->p[0].d), *qb = qrs_qts(pr->p[1].d);
    unsigned i;

    for (i = 0; i < ms / 10; i++) {
        qtest_clock_step(qa, 10 * 1000 * 1000);
        if (qb != qa) {
            qtest_clock_step(qb, 10 * 1000 * 1000);
        }
        pair_pump(pr);
    }
}

/*
 * The DCI's local ACK timeout made short (4.096 us * 2^10, so the
 * minimum of 10 ms) with 7 retries, through SQD.
 */
static void dci_short_timeout(DcEnv *e)
{
    Peer *b = &e->pr.p[e->ini];
    struct rs_qp_attr at;

    std_attr(&at, RS_QPS_RTS, RS_QPS_SQD);
    RS_ASSERT_OK(qrs_modify_qp(b->d, e->dci[0].h, &at, RS_QP_ATTR_STATE));
    std_attr(&at, RS_QPS_SQD, RS_QPS_SQD);
    at.timeout = 10;
    at.retry_cnt = 7;
    RS_ASSERT_OK(qrs_modify_qp(b->d, e->dci[0].h, &at, RS_QP_ATTR_TIMEOUT |
                               RS_QP_ATTR_RETRY_CNT));
    std_attr(&at, RS_QPS_SQD, RS_QPS_RTS);
    RS_ASSERT_OK(qrs_modify_qp(b->d, e->dci[0].h, &at, RS_QP_ATTR_STATE));
}

/*
 * Losses: the CONNECT, then the REPLY (the DCI sends CONNECT again on its
 * timeout; the target recognises the connection number and answers with
 * the same context), then a data packet (go-back-N as RC).
 */
static void test_dc_loss(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a, *b;

    dc_setup(&e, obj, data, alloc, 1);
    a = &pr->p[e.tgt];
    b = &pr->p[e.ini];
    dci_short_timeout(&e);

    dc_recv(&e, 0xa1, 0x1000, 4096);
    pair_log_reset(pr);
    pr->drop[1] = 1;            /* B's first frame: the CONNECT */
    pr->drop[0] = 1;            /* A's first frame: the first REPLY */
    pr->drop[1] |= 1 << 4;      /* B's 5th: the SEND's second packet */
    dc_post(&e, 0, RS_WR_SEND, 0xb1, 0, 0x200, 3000, 0, 0);
    dc_advance(&e, 40);         /* CONNECTs at 0, 10 and 30 ms */
    img_move(a, 0x1000, b, 0x200, 3000);
    pair_expect_cqe(pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_SEND, e.dci[0].qpn, 0);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RECV, e.dct[0].qpn,
                    3000);
    g_assert_cmphex(pr->op[1][0], ==, OP_DC_CONNECT);
    g_assert_cmphex(pr->op[1][1], ==, OP_DC_CONNECT);
    g_assert_cmphex(pr->op[1][2], ==, OP_DC_CONNECT);
    g_assert_cmpuint(pr->psn[1][2], ==, pr->psn[1][0]);
    g_assert_cmphex(pr->op[0][0], ==, OP_DC_CONNECT_REPLY);
    g_assert_cmphex(pr->op[0][1], ==, OP_DC_CONNECT_REPLY);
    g_assert_cmphex(pr->op[1][3], ==, OP_SEND_FIRST);
    g_assert_cmpuint(pr->nops[1], >, 6);        /* resent after the gap */
    dc_teardown(&e);
}

/*
 * A target that answers no CONNECT for a while (its VM stopped for a
 * migration): the DCI doubles its CONNECT timeout per retry, as the RC
 * timer does, so 7 retries of 10 ms outlast 200 ms; without the doubling
 * the DCI gave up after 80 ms.
 */
static void test_dc_connect_backoff(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a, *b;
    unsigned i;

    dc_setup(&e, obj, data, alloc, 1);
    a = &pr->p[e.tgt];
    b = &pr->p[e.ini];
    dci_short_timeout(&e);

    dc_recv(&e, 0xa1, 0x1000, 4096);
    pair_log_reset(pr);
    pr->drop[1] = ~0ull;        /* every CONNECT lost */
    dc_post(&e, 0, RS_WR_SEND, 0xb1, 0, 0x200, 3000, 0, 0);
    dc_advance(&e, 200);
    /* Sent at 0, 10, 30, 70 and 150 ms; the next one is due at 230. */
    g_assert_cmpuint(pr->nops[1], ==, 5);
    for (i = 0; i < pr->nops[1]; i++) {
        g_assert_cmphex(pr->op[1][i], ==, OP_DC_CONNECT);
    }
    pair_cq_empty(pr, 1);
    pr->drop[1] = 0;
    dc_advance(&e, 40);
    img_move(a, 0x1000, b, 0x200, 3000);
    pair_expect_cqe(pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_SEND, e.dci[0].qpn, 0);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RECV, e.dct[0].qpn,
                    3000);
    dc_teardown(&e);
}

/*
 * A protection error through a DCT (dc-contexts=1): the WRITE with a key
 * the DCT's PD does not own is NAKed (REM_ACCESS_ERR at the DCI),
 * nothing is written, no event names the hidden context, the DCT stays
 * in RTR, and the context is released at once: another DCI connects
 * without an RNR reply.
 */
static void test_dc_protection(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *t, *i;
    uint32_t pd2, key2, n;

    dc_setup(&e, obj, data, alloc, 0);
    t = &pr->p[e.tgt];
    i = &pr->p[e.ini];
    pd2 = new_pd(t->d);
    key2 = eng_mr(t->d, pd2, 0, t->buf, PAIR_BUF, STD_ACCESS);
    dci_create(&e, &e.dci[1]);
    dc_send_ok(&e, 0, 0, 0xb1, 0x100, 0x1000, 64);
    pair_log_reset(pr);
    dc_post(&e, 0, RS_WR_RDMA_WRITE, 0xb2, 0, 0x200, 64, t->buf + 0x3000,
            key2);
    pair_expect_cqe(pr, e.ini, 0xb2, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE,
                    e.dci[0].qpn, 0);
    g_assert_cmphex(pr->op[e.tgt][0], ==, OP_ACK);
    g_assert_cmphex(pr->syn[e.tgt][0], ==, AETH_NAK_REM_ACCESS);
    expect_no_event(t->d);
    g_assert_cmpuint(qp_state(t->d, e.dct[0].h), ==, RS_QPS_RTR);
    g_assert_cmpuint(qp_state(i->d, e.dci[0].h), ==, RS_QPS_ERR);

    pair_log_reset(pr);
    dc_send_ok(&e, 1, 0, 0xb3, 0x300, 0x2000, 64);
    for (n = 0; n < pr->nops[e.tgt]; n++) {
        g_assert_cmphex(pr->syn[e.tgt][n] & 0xe0, !=, AETH_RNR);
    }
    g_assert_cmphex(pr->op[e.tgt][0], ==, OP_DC_CONNECT_REPLY);
    dc_teardown(&e);
}

/*
 * dc-contexts=1 at the target: a second DCI's CONNECT gets an RNR reply
 * while the first one's connection is recent; once the first DCI closed
 * (idle), the second one's CONNECT again succeeds.
 */
static void test_dc_contexts(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a;
    struct rs_qp_attr at;
    unsigned i, rnr = 0;

    /* RNR timer 1.28 ms: a few RNR replies until dc-idle closes DCI 0. */
    dc_setup_rnr(&e, obj, data, alloc, 0, 14);
    a = &pr->p[e.ini];
    dci_create(&e, &e.dci[1]);
    std_attr(&at, RS_QPS_RTS, RS_QPS_SQD);
    RS_ASSERT_OK(qrs_modify_qp(a->d, e.dci[1].h, &at, RS_QP_ATTR_STATE));
    std_attr(&at, RS_QPS_SQD, RS_QPS_SQD);
    at.rnr_retry = 7;
    RS_ASSERT_OK(qrs_modify_qp(a->d, e.dci[1].h, &at,
                               RS_QP_ATTR_RNR_RETRY));
    std_attr(&at, RS_QPS_SQD, RS_QPS_RTS);
    RS_ASSERT_OK(qrs_modify_qp(a->d, e.dci[1].h, &at, RS_QP_ATTR_STATE));

    dc_send_ok(&e, 0, 0, 0xb1, 0x100, 0x1000, 100);
    pair_log_reset(pr);
    dc_send_ok(&e, 1, 0, 0xb2, 0x200, 0x2000, 100);
    for (i = 0; i < pr->nops[1]; i++) {
        if (pr->op[1][i] == OP_DC_CONNECT_REPLY &&
            (pr->syn[1][i] & 0xe0) == AETH_RNR) {
            rnr++;
        }
    }
    g_assert_cmpuint(rnr, >=, 1);
    g_assert_cmphex(pr->op[1][pr->nops[1] - 2], ==, OP_DC_CONNECT_REPLY);
    g_assert_cmphex(pr->syn[1][pr->nops[1] - 2], ==, AETH_ACK);
    dc_teardown(&e);
}

/* A frame from the initiator's side, resealed and put on @to's wire. */
static void inject_edit(Pair *pr, int to, uint8_t *f, size_t len)
{
    roce_reseal(f, len);
    pair_inject(pr, to, f, len);
}

/*
 * Hostile frames to the target: CONNECT truncated, with a reserved DCI
 * QPN bit, to a DCT that does not exist; DISCONNECT with a wrong key;
 * data to the context from another address, and to a freed context.
 * Nothing lands, the target keeps serving.
 */
static void test_dc_hostile(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a, *b;
    uint8_t conn[PAIR_FRAME_MAX], disc[PAIR_FRAME_MAX];
    uint8_t sendf[PAIR_FRAME_MAX], f[PAIR_FRAME_MAX];
    size_t conn_len, disc_len, send_len;
    struct rs_cqe cqe;
    GByteArray *g;

    dc_setup(&e, obj, data, alloc, 1);
    a = &pr->p[e.tgt];
    b = &pr->p[e.ini];
    dc_recv(&e, 0xa1, 0x1000, 512);
    pair_log_reset(pr);
    pr->hold[1] = true;
    dc_post(&e, 0, RS_WR_SEND, 0xb1, 0, 0x200, 100, 0, 0);
    g = pair_take(pr, 1);
    conn_len = g->len;
    memcpy(conn, g->data, g->len);
    g_byte_array_unref(g);

    /* Truncated: the DCETH cut short. */
    pr->hold[0] = true;
    memcpy(f, conn, conn_len);
    inject_edit(pr, 0, f, ROCE_EXT + 8 + 4);
    /* A reserved bit of the DCI QPN. */
    memcpy(f, conn, conn_len);
    f[DCETH + 8] = 0x80;
    inject_edit(pr, 0, f, conn_len);
    /* No such DCT: NAK invalid request. */
    memcpy(f, conn, conn_len);
    stl_be_p(f + ROCE_BTH + 4, 200);
    inject_edit(pr, 0, f, conn_len);
    g = pair_take(pr, 0);
    PAIR_EXPECT_OPS(pr, 0, OP_DC_CONNECT_REPLY);
    g_assert_cmphex(pr->syn[0][0], ==, AETH_NAK_INV_REQ);
    g_assert_cmpuint(f_dqpn(g->data), ==, e.dci[0].qpn);
    g_byte_array_unref(g);
    pr->hold[0] = false;

    /*
     * The real CONNECT, its REPLY kept.  Forged REPLYs first: truncated,
     * another connection number, another PSN, context QPN 0.  The DCI
     * ignores them and stays connecting.
     */
    pr->hold[0] = true;
    pair_log_reset(pr);
    pair_inject(pr, 0, conn, conn_len);
    g = pair_take(pr, 0);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_DC_CONNECT_REPLY);
    g_assert_cmphex(g->data[ROCE_EXT], ==, AETH_ACK);
    memcpy(f, g->data, g->len);
    inject_edit(pr, 1, f, ROCE_EXT + 4 + 4 + 4);
    memcpy(f, g->data, g->len);
    stl_be_p(f + DCRETH + 4, 7);
    inject_edit(pr, 1, f, g->len);
    memcpy(f, g->data, g->len);
    stl_be_p(f + ROCE_BTH + 8, f_psn(g->data) + 1);
    inject_edit(pr, 1, f, g->len);
    memcpy(f, g->data, g->len);
    stl_be_p(f + DCRETH, 0);
    inject_edit(pr, 1, f, g->len);
    /* A NAK with the wrong connection number: no error either. */
    memcpy(f, g->data, g->len);
    f[ROCE_EXT] = AETH_NAK_REM_ACCESS;
    stl_be_p(f + DCRETH + 4, 2);
    inject_edit(pr, 1, f, g->len);
    qtest_clock_step(qrs_qts(a->d), 1000 * 1000);
    pair_pump(pr);
    PAIR_EXPECT_NONE(pr, 1);
    g_assert_cmpuint(qp_state(b->d, e.dci[0].h), ==, RS_QPS_RTS);
    pr->hold[0] = false;
    pair_inject(pr, 1, g->data, g->len);
    g_byte_array_unref(g);
    g = pair_take(pr, 1);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_SEND_ONLY);
    send_len = g->len;
    memcpy(sendf, g->data, g->len);
    g_byte_array_unref(g);

    /* The SEND from another address, other data: dropped, no ACK. */
    memcpy(f, sendf, send_len);
    f[14 + 15] = 9;
    f[ROCE_EXT] ^= 0xff;
    inject_edit(pr, 0, f, send_len);
    pair_pump(pr);
    g_assert_false(eng_cq_peek(a->d, &a->cq, &cqe));

    /* A DISCONNECT with a wrong key: the context stays. */
    memcpy(disc, conn, conn_len);
    disc_len = conn_len;
    disc[ROCE_BTH] = OP_DC_DISCONNECT;
    disc[ROCE_BTH + 8] &= 0x7f;
    stl_be_p(disc + ROCE_BTH + 4, f_dqpn(sendf));
    stq_be_p(disc + DCETH, DC_KEY2);
    inject_edit(pr, 0, disc, disc_len);

    pair_inject(pr, 0, sendf, send_len);
    pr->hold[1] = false;
    img_move(a, 0x1000, b, 0x200, 100);
    pair_expect_cqe(pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_SEND, e.dci[0].qpn, 0);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RECV, e.dct[0].qpn,
                    100);

    /* The right DISCONNECT frees it: the SEND again lands nowhere. */
    stq_be_p(disc + DCETH, DC_KEY);
    inject_edit(pr, 0, disc, disc_len);
    dc_recv(&e, 0xa2, 0x2000, 512);
    pair_log_reset(pr);
    pair_inject(pr, 0, sendf, send_len);
    pair_pump(pr);
    qtest_clock_step(qrs_qts(a->d), 1000 * 1000);
    pair_pump(pr);
    PAIR_EXPECT_NONE(pr, 0);
    g_assert_false(eng_cq_peek(a->d, &a->cq, &cqe));
    g_assert_cmpuint(qp_state(a->d, e.dct[0].h), ==, RS_QPS_RTR);
    assert_alive(a->d);
    dc_teardown(&e);
}

/*
 * A CONNECT with the DCI's address and QPN but another DCT's number and
 * key (one the sender may well have: its own DCT's) must not free the
 * DCI's context on the first DCT: the DCI's next SEND still lands there.
 */
static void test_dc_connect_other_key(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    uint8_t f[PAIR_FRAME_MAX];
    size_t len;
    GByteArray *g;

    dc_setup(&e, obj, data, alloc, 0);
    dct_create(&e, &e.dct[1], DC_KEY2);
    pair_log_reset(pr);
    pr->hold[0] = true;
    dc_recv(&e, 0xa1, 0x1000, 64);
    dc_post(&e, 0, RS_WR_SEND, 0xb1, 0, 0x100, 64, 0, 0);
    g = pair_take(pr, 0);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_DC_CONNECT);
    len = g->len;
    memcpy(f, g->data, len);
    pair_inject(pr, 1, g->data, g->len);
    g_byte_array_unref(g);
    pair_release(pr, 0);
    {
        struct rs_cqe cqe;

        img_move(&pr->p[1], 0x1000, &pr->p[0], 0x100, 64);
        pair_expect_cqe(pr, 0, 0xb1, RS_WC_SUCCESS, RS_WR_SEND,
                        e.dci[0].qpn, 0);
        pair_poll(pr, 1, &cqe);
        assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RECV, e.dct[0].qpn);
    }

    /* The forged CONNECT to DCT 1, its key right: a context there. */
    pair_log_reset(pr);
    pr->hold[1] = true;
    stl_be_p(f + ROCE_BTH + 4, e.dct[1].qpn);
    stq_be_p(f + DCETH, DC_KEY2);
    inject_edit(pr, 1, f, len);
    g = pair_take(pr, 1);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_DC_CONNECT_REPLY);
    g_assert_cmphex(g->data[ROCE_EXT], ==, AETH_ACK);
    g_byte_array_unref(g);
    pair_forget(pr, 1);

    /* DCI 0 is still connected to DCT 0: no CONNECT, its SEND lands. */
    pair_log_reset(pr);
    dc_send_ok(&e, 0, 0, 0xb2, 0x200, 0x2000, 64);
    g_assert_cmpuint(pr->nops[0], >=, 1);
    g_assert_cmphex(pr->op[0][0], ==, OP_SEND_ONLY);
    dc_teardown(&e);
}

/* A CONNECT from @src (10.9.x.y) to DCT @dct with @key, for DCI @dci. */
static void connect_as(Pair *pr, uint32_t src, uint32_t dct, uint64_t key,
                       uint32_t dci)
{
    uint8_t f[128], dceth[16];

    stq_be_p(dceth, key);
    stl_be_p(dceth + 8, dci);
    stl_be_p(dceth + 12, 1);
    pair_inject(pr, 1, f, roce_frame(f, pair_mac[1], src, 0x0a000002,
                                     OP_DC_CONNECT, dct, 0x100, dceth,
                                     sizeof(dceth)));
}

/*
 * dc-contexts=4: one source address gets at most 2 contexts, one DCT at
 * most 3, whatever keys they hold; the others get RNR replies.
 */
static void test_dc_quota(void *obj, void *data, QGuestAllocator *alloc)
{
    const uint32_t s1 = 0x0a090101, s2 = 0x0a090102;
    DcEnv e;
    Pair *pr = &e.pr;
    uint32_t k;

    dc_setup(&e, obj, data, alloc, 0);
    dct_create(&e, &e.dct[1], DC_KEY2);
    pr->raw[1] = true;
    pair_log_reset(pr);
    for (k = 0; k < 4; k++) {
        connect_as(pr, s1, e.dct[0].qpn, DC_KEY, 0x100 + k);
    }
    pair_wait_raw(pr, 1, OP_DC_CONNECT_REPLY, 4);
    g_assert_cmpuint(pr->raw_aeth[1][AETH_ACK], ==, 2);
    g_assert_cmpuint(pr->raw_aeth[1][AETH_RNR | 1], ==, 2);
    /* Another source: DCT 0 has room for one more, DCT 1 for more. */
    connect_as(pr, s2, e.dct[0].qpn, DC_KEY, 0x200);
    connect_as(pr, s2, e.dct[0].qpn, DC_KEY, 0x201);
    connect_as(pr, s2, e.dct[1].qpn, DC_KEY2, 0x202);
    pair_wait_raw(pr, 1, OP_DC_CONNECT_REPLY, 7);
    g_assert_cmpuint(pr->raw_aeth[1][AETH_ACK], ==, 4);
    g_assert_cmpuint(pr->raw_aeth[1][AETH_RNR | 1], ==, 3);
    pr->raw[1] = false;
    assert_alive(pr->p[1].d);
    pair_teardown(pr);
}

/*
 * Work requests the DCI cannot execute: an AH handle that does not
 * exist (LOC_QP_OP_ERR), an AH of another PD (LOC_PROT_ERR); nothing on
 * the wire.
 */
static void test_dc_bad_wqe(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *b;
    uint32_t pd2, ah2;

    dc_setup(&e, obj, data, alloc, 1);
    b = &pr->p[e.ini];
    pd2 = new_pd(b->d);
    ah2 = dc_ah(&e, e.ini, pd2);
    pair_log_reset(pr);
    dc_post_ah(&e, 0, e.ah + 77, RS_WR_SEND, 0xb1, e.dct[0].qpn, DC_KEY,
               0x100, 64, 0, 0);
    pair_expect_cqe(pr, 1, 0xb1, RS_WC_LOC_QP_OP_ERR, RS_WR_SEND,
                    e.dci[0].qpn, 0);
    g_assert_cmpuint(qp_state(b->d, e.dci[0].h), ==, RS_QPS_ERR);
    dci_create(&e, &e.dci[1]);
    dc_post_ah(&e, 1, ah2, RS_WR_SEND, 0xb2, e.dct[0].qpn, DC_KEY,
               0x100, 64, 0, 0);
    pair_expect_cqe(pr, 1, 0xb2, RS_WC_LOC_PROT_ERR, RS_WR_SEND,
                    e.dci[1].qpn, 0);
    pair_pump(pr);
    PAIR_EXPECT_NONE(pr, 1);
    dc_teardown(&e);
}

/*
 * The connection's AH destroyed and another created in its slot (traffic
 * class 0x20): a WQE naming the new AH is another target, though the DCT
 * and key are the same; the DCI connects again with the new AH's vector.
 */
static void test_dc_ah_reuse(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *b;
    struct rs_cmd_create_ah c;
    uint32_t old_ah;

    dc_setup(&e, obj, data, alloc, 1);
    b = &pr->p[e.ini];
    dc_send_ok(&e, 0, 0, 0xb1, 0x100, 0x1000, 64);
    old_ah = e.ah;
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DESTROY_AH, e.ah));
    ah_template(&c, b->pd, 0);
    gid_v4(c.dgid, 10, 0, 0, e.tgt + 1);
    memcpy(c.dmac, pair_mac[e.tgt], 6);
    c.traffic_class = 0x20;
    RS_ASSERT_OK(qrs_create_ah(b->d, &c, &e.ah));
    g_assert_cmphex(HINDEX(e.ah), ==, HINDEX(old_ah));
    g_assert_cmphex(e.ah, !=, old_ah);
    pair_log_reset(pr);
    dc_send_ok(&e, 0, 0, 0xb2, 0x200, 0x2000, 64);
    PAIR_EXPECT_OPS(pr, 1, OP_DC_DISCONNECT, OP_DC_CONNECT, OP_SEND_ONLY);
    /* The AH's DSCP, ECN-capable (ECT(0)). */
    g_assert_cmphex(pr->last[1][14 + 1], ==, 0x22);
    dc_teardown(&e);
}

/*
 * CREATE_QP and MODIFY_QP of DC QPs: DCT fields that must be 0, a
 * missing or another PD's SRQ; AV, DEST_QPN and RQ_PSN refused, a DCT
 * cannot go to RTS.
 */
static void test_dc_objects(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *t, *i;
    LoopQp q;
    struct rs_qp_attr a;
    uint32_t h, qpn, pd2;

    dc_setup(&e, obj, data, alloc, 1);
    t = &pr->p[e.tgt];
    i = &pr->p[e.ini];
    dct_template(&e, &q, DC_KEY);
    q.c.send_cq = t->cq.h;
    RS_ASSERT_STATUS(qrs_create_qp(t->d, &q.c, &h, &qpn), RS_STATUS_BAD_PARAM);
    dct_template(&e, &q, DC_KEY);
    q.c.sq_log_size = 4;
    RS_ASSERT_STATUS(qrs_create_qp(t->d, &q.c, &h, &qpn), RS_STATUS_BAD_PARAM);
    dct_template(&e, &q, DC_KEY);
    q.c.srq = 0;
    RS_ASSERT_STATUS(qrs_create_qp(t->d, &q.c, &h, &qpn),
                     RS_STATUS_BAD_HANDLE);
    pd2 = new_pd(t->d);
    dct_template(&e, &q, DC_KEY);
    q.c.pd = pd2;
    RS_ASSERT_STATUS(qrs_create_qp(t->d, &q.c, &h, &qpn), RS_STATUS_BAD_PD);
    dci_template(i, &q);
    q.c.recv_cq = i->cq.h;
    RS_ASSERT_STATUS(qrs_create_qp(i->d, &q.c, &h, &qpn),
                     RS_STATUS_BAD_PARAM);

    /* MODIFY: a DCT to RTS, a DCI with AV / DEST_QPN / RQ_PSN. */
    std_attr(&a, RS_QPS_RTR, RS_QPS_RTS);
    RS_ASSERT_STATUS(qrs_modify_qp(t->d, e.dct[0].h, &a, RS_QP_ATTR_STATE),
                     RS_STATUS_BAD_STATE);
    dci_template(i, &q);
    q.h = new_qp(i->d, &q.c);
    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    RS_ASSERT_STATUS(qrs_modify_qp(i->d, q.h, &a, RS_QP_ATTR_STATE),
                     RS_STATUS_BAD_ATTR_MASK);
    RS_ASSERT_OK(qrs_modify_qp(i->d, q.h, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_PORT));
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    RS_ASSERT_STATUS(qrs_modify_qp(i->d, q.h, &a, RS_QP_ATTR_STATE |
                                   RS_QP_ATTR_PATH_MTU | RS_QP_ATTR_AV),
                     RS_STATUS_BAD_ATTR_MASK);
    RS_ASSERT_STATUS(qrs_modify_qp(i->d, q.h, &a, RS_QP_ATTR_STATE |
                                   RS_QP_ATTR_PATH_MTU |
                                   RS_QP_ATTR_DEST_QPN),
                     RS_STATUS_BAD_ATTR_MASK);
    RS_ASSERT_STATUS(qrs_modify_qp(i->d, q.h, &a, RS_QP_ATTR_STATE |
                                   RS_QP_ATTR_PATH_MTU | RS_QP_ATTR_RQ_PSN),
                     RS_STATUS_BAD_ATTR_MASK);
    RS_ASSERT_OK(qrs_modify_qp(i->d, q.h, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_PATH_MTU));
    g_assert_cmpuint(qp_state(i->d, q.h), ==, RS_QPS_RTR);

    /* A DCT leaving RTR drops its contexts; destroy works. */
    std_attr(&a, RS_QPS_RTR, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(t->d, e.dct[0].h, &a, RS_QP_ATTR_STATE));
    RS_ASSERT_OK(qrs_destroy(t->d, RS_CMD_DESTROY_QP, e.dct[0].h));
    RS_ASSERT_OK(qrs_destroy(i->d, RS_CMD_DESTROY_QP, q.h));
    RS_ASSERT_OK(qrs_destroy(i->d, RS_CMD_DESTROY_QP, e.dci[0].h));
    dc_teardown(&e);
}

/*
 * Migration with two DCIs connected and one of them switching to the
 * other DCT, its DISCONNECT and CONNECT lost as the VM leaves: the
 * destination connects again by itself; traffic goes on, on the old
 * connection and after a switch back.
 */
static void test_dc_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    GByteArray *g;
    struct rs_cqe cqe;

    dc_setup(&e, obj, data, alloc, 1);
    dct_create(&e, &e.dct[1], DC_KEY);
    dci_create(&e, &e.dci[1]);
    dc_send_ok(&e, 0, 0, 0xb1, 0x100, 0x1000, 300);
    dc_send_ok(&e, 1, 1, 0xb2, 0x400, 0x2000, 300);

    /* DCI 0 to DCT 1: mid-switch when the VM stops. */
    dc_recv(&e, 0xa5, 0x5000, 300);
    pr->hold[1] = true;
    dc_post(&e, 0, RS_WR_SEND, 0xb5, 1, 0xb00, 300, 0, 0);
    img_move(&pr->p[e.tgt], 0x5000, &pr->p[e.ini], 0xb00, 300);
    g = pair_take(pr, 1);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_DC_DISCONNECT);
    g_byte_array_unref(g);
    g = pair_take(pr, 1);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_DC_CONNECT);
    g_byte_array_unref(g);
    pair_forget(pr, 1);
    pair_log_reset(pr);

    pair_migrate(pr);
    pair_release(pr, 0);
    pair_release(pr, 1);
    pair_expect_cqe(pr, e.ini, 0xb5, RS_WC_SUCCESS, RS_WR_SEND,
                    e.dci[0].qpn, 0);
    pair_poll(pr, e.tgt, &cqe);
    assert_cqe(&cqe, 0xa5, RS_WC_SUCCESS, RS_WR_RECV, e.dct[1].qpn);
    g_assert_cmpuint(cqe.src_qp, ==, e.dci[0].qpn);
    g_assert_cmphex(pr->op[1][0], ==, OP_DC_CONNECT);

    pair_log_reset(pr);
    dc_send_ok(&e, 1, 1, 0xb4, 0x900, 0x4000, 300);
    PAIR_EXPECT_OPS(pr, 1, OP_SEND_ONLY);
    dc_send_ok(&e, 0, 0, 0xb3, 0x700, 0x3000, 300);
    g_assert_cmpuint(qp_state(pr->p[1].d, e.dci[0].h), ==, RS_QPS_RTS);
    dc_teardown(&e);
}

/*
 * dc-contexts=1 and the first DCI's DISCONNECT lost: its context is not
 * kept for ever; the second DCI connects once it was reclaimed (idle
 * 100 ms).
 */
static void test_dc_lost_disconnect(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a;
    struct rs_qp_attr at;
    struct rs_cqe cqe;
    unsigned i;

    /* RNR timer 10.24 ms: about ten RNR replies in 100 ms. */
    dc_setup_rnr(&e, obj, data, alloc, 0, 20);
    a = &pr->p[e.ini];
    dci_create(&e, &e.dci[1]);
    std_attr(&at, RS_QPS_RTS, RS_QPS_SQD);
    RS_ASSERT_OK(qrs_modify_qp(a->d, e.dci[1].h, &at, RS_QP_ATTR_STATE));
    std_attr(&at, RS_QPS_SQD, RS_QPS_SQD);
    at.rnr_retry = 7;
    RS_ASSERT_OK(qrs_modify_qp(a->d, e.dci[1].h, &at,
                               RS_QP_ATTR_RNR_RETRY));
    std_attr(&at, RS_QPS_SQD, RS_QPS_RTS);
    RS_ASSERT_OK(qrs_modify_qp(a->d, e.dci[1].h, &at, RS_QP_ATTR_STATE));

    dc_send_ok(&e, 0, 0, 0xb1, 0x100, 0x1000, 100);
    pair_log_reset(pr);
    pr->drop[0] = 1;            /* DCI 0's idle DISCONNECT */
    qtest_clock_step(qrs_qts(a->d), 3 * 1000 * 1000);
    pair_wait_frames(pr, 0, 1);
    PAIR_EXPECT_OPS(pr, 0, OP_DC_DISCONNECT);
    pair_log_reset(pr);
    dc_recv(&e, 0x1b2, 0x2000, 100);
    dc_post(&e, 1, RS_WR_SEND, 0xb2, 0, 0x200, 100, 0, 0);
    img_move(&pr->p[e.tgt], 0x2000, a, 0x200, 100);
    /* Virtual time in steps of 5 ms, the frames moved meanwhile. */
    for (i = 0; i < 60 && !eng_cq_peek(a->d, &a->cq, &cqe); i++) {
        qtest_clock_step(qrs_qts(a->d), 5 * 1000 * 1000);
        pair_pump(pr);
        g_usleep(2000);
        pair_pump(pr);
    }
    pair_expect_cqe(pr, e.ini, 0xb2, RS_WC_SUCCESS, RS_WR_SEND,
                    e.dci[1].qpn, 0);
    pair_expect_cqe(pr, e.tgt, 0x1b2, RS_WC_SUCCESS, RS_WR_RECV,
                    e.dct[0].qpn, 100);
    g_assert_cmpuint(pr->nops[0], >=, 3);
    g_assert_cmphex(pr->syn[1][0], ==, AETH_RNR | 20);
    g_assert_cmphex(pr->syn[1][pr->nops[1] - 2], ==, AETH_ACK);
    dc_teardown(&e);
}

/*
 * A connected DCI silent for far longer than 100 x dc-idle (its VM
 * stopped for a migration; here drained to SQD, where it does not
 * disconnect) keeps its context at the target: its next SEND goes on
 * the same connection, without a CONNECT.
 */
static void test_dc_silent(void *obj, void *data, QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    Peer *a;
    struct rs_qp_attr at;
    unsigned i;

    dc_setup(&e, obj, data, alloc, 0);
    a = &pr->p[e.ini];
    dc_send_ok(&e, 0, 0, 0xc1, 0x100, 0x1000, 100);
    std_attr(&at, RS_QPS_RTS, RS_QPS_SQD);
    RS_ASSERT_OK(qrs_modify_qp(a->d, e.dci[0].h, &at, RS_QP_ATTR_STATE));
    /* 2 s of virtual time, the DC tick running meanwhile. */
    for (i = 0; i < 20; i++) {
        qtest_clock_step(qrs_qts(a->d), 100 * 1000 * 1000);
        if (qrs_qts(pr->p[e.tgt].d) != qrs_qts(a->d)) {
            qtest_clock_step(qrs_qts(pr->p[e.tgt].d), 100 * 1000 * 1000);
        }
        pair_pump(pr);
    }
    std_attr(&at, RS_QPS_SQD, RS_QPS_RTS);
    RS_ASSERT_OK(qrs_modify_qp(a->d, e.dci[0].h, &at, RS_QP_ATTR_STATE));
    pair_log_reset(pr);
    dc_send_ok(&e, 0, 0, 0xc2, 0x200, 0x2000, 100);
    PAIR_EXPECT_OPS(pr, 0, OP_SEND_ONLY);
    dc_teardown(&e);
}

/*
 * Load @path into a new QEMU with both adapters on wires of their own
 * (nobody listens); true if the migration completed.
 */
static bool dc_load(Pair *pr, const char *path, char **err)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autoptr(GString) cmd = g_string_new(qos_get_current_command_line());
    PairSockets s = { .b_props = pr->sock->b_props };
    QTestState *to;
    int i, sv[2];
    bool ok;

    for (i = 0; i < 2; i++) {
        g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
        s.test[i] = sv[0];
        s.qemu[i] = sv[1];
    }
    pair_cmd_line(cmd, &s);
    to = qtest_initf("%s -incoming defer", cmd->str);
    qtest_qmp_assert_success(to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s,"
                             "                 'exit-on-error': false } }",
                             uri);
    ok = mig_wait(to, err);
    qtest_qmp_assert_success(to, "{ 'execute': 'query-status' }");
    qtest_quit(to);
    for (i = 0; i < 2; i++) {
        close(s.test[i]);
        close(s.qemu[i]);
    }
    return ok;
}

/*
 * A migration stream with DC state the destination must refuse: a
 * context whose DCT is not a DCT, a DCI connection state out of range,
 * a DCI's AH index beyond the table.  The stream as saved loads.
 */
static void test_dc_migrate_corrupt(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    DcEnv e;
    Pair *pr = &e.pr;
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *bad = g_strdup_printf("%s/bad", tmpdir);
    g_autofree uint8_t *stream = NULL;
    uint8_t ctx_needle[20], dci_needle[21];
    char *err = NULL;
    size_t ctx_off, dci_off;
    gsize len;
    int i;

    dc_setup(&e, obj, data, alloc, 1);
    dc_send_ok(&e, 0, 0, 0xb1, 0x100, 0x1000, 64);
    mig_save(qrs_qts(pr->p[0].d), path);
    g_assert_true(g_file_get_contents(path, (gchar **)&stream, &len, NULL));

    /* The DC subsection: dc_state, dc_ah, dc_dct, dc_key, dc_conn. */
    stl_be_p(ctx_needle, 0);
    stl_be_p(ctx_needle + 4, e.dct[0].qpn);
    stq_be_p(ctx_needle + 8, DC_KEY);
    stl_be_p(ctx_needle + 16, 1);
    ctx_off = mig_find(stream, len, ctx_needle, sizeof(ctx_needle));
    dci_needle[0] = 2;          /* connected */
    stl_be_p(dci_needle + 1, e.ah);
    stl_be_p(dci_needle + 5, e.dct[0].qpn);
    stq_be_p(dci_needle + 9, DC_KEY);
    stl_be_p(dci_needle + 17, 1);
    dci_off = mig_find(stream, len, dci_needle, sizeof(dci_needle));

    for (i = 0; i < 3; i++) {
        g_autofree uint8_t *copy = g_memdup2(stream, len);

        if (i == 0) {
            stl_be_p(copy + ctx_off + 4, e.dci[0].qpn == 1 ? 2 : 1);
        } else if (i == 1) {
            copy[dci_off] = 3;
        } else {
            stl_be_p(copy + dci_off + 1, 0xfffff);
        }
        g_assert_true(g_file_set_contents(bad, (gchar *)copy, len, NULL));
        g_assert_false(dc_load(pr, bad, &err));
        g_test_message("destination: %s", err);
        g_free(err);
    }
    g_assert_true(dc_load(pr, path, &err));
    g_free(err);
    unlink(bad);
    unlink(path);
    rmdir(tmpdir);
    /* The source goes on. */
    qtest_qmp_assert_success(qrs_qts(pr->p[0].d), "{ 'execute': 'cont' }");
    dc_send_ok(&e, 0, 0, 0xb2, 0x200, 0x2000, 64);
    dc_teardown(&e);
}

static void register_dc_tests(void)
{
    QOSGraphTestOptions pair = {
        .before = pair_before,
        .arg = (void *)B_LONG_IDLE,
    };
    QOSGraphTestOptions idle = {
        .before = pair_before,
        .arg = (void *)",dc-idle=1000",
    };
    QOSGraphTestOptions b_one_ctx = {
        .before = pair_before,
        .arg = (void *)",dc-contexts=1",
    };
    QOSGraphTestOptions four_ctx = {
        .before = pair_before,
        .arg = (void *)",dc-contexts=4" B_LONG_IDLE,
    };
    QOSGraphTestOptions one_ctx = {
        .before = pair_before,
        .arg = (void *)",dc-contexts=1,dc-idle=1000",
    };

    rs_add_standalone_test("dc/connect", test_dc_connect, &pair);
    rs_add_standalone_test("dc/switch", test_dc_switch, &pair);
    rs_add_standalone_test("dc/idle", test_dc_idle, &idle);
    rs_add_standalone_test("dc/bad-key", test_dc_bad_key, &pair);
    rs_add_standalone_test("dc/loss", test_dc_loss, &pair);
    rs_add_standalone_test("dc/protection", test_dc_protection, &b_one_ctx);
    rs_add_standalone_test("dc/contexts", test_dc_contexts, &one_ctx);
    rs_add_standalone_test("dc/connect-backoff",
                           test_dc_connect_backoff, &pair);
    rs_add_standalone_test("dc/lost-disconnect",
                           test_dc_lost_disconnect, &one_ctx);
    rs_add_standalone_test("dc/silent-dci", test_dc_silent, &idle);
    rs_add_standalone_test("dc/hostile", test_dc_hostile, &pair);
    rs_add_standalone_test("dc/connect-other-key",
                           test_dc_connect_other_key, &pair);
    rs_add_standalone_test("dc/quota", test_dc_quota, &four_ctx);
    rs_add_standalone_test("dc/bad-wqe", test_dc_bad_wqe, &pair);
    rs_add_standalone_test("dc/ah-reuse", test_dc_ah_reuse, &pair);
    rs_add_standalone_test("dc/objects", test_dc_objects, &pair);
    rs_add_standalone_test("dc/migrate", test_dc_migrate, &pair);
    rs_add_standalone_test("dc/migrate-corrupt",
                           test_dc_migrate_corrupt, &pair);
}

libqos_init(register_dc_tests);
