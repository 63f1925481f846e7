/*
 * rdma-session qtests: two adapters on a wire the test carries (RC, UD,
 * loss, atomics, UC, asynchronous events)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define GRH_SIZE        40

/*
 * SEND with immediate from two SGEs into three, PSNs crossing 2^24, and
 * SENDs around the MTU.
 */
static void pair_rc_sends(Pair *pr, LoopQp q[2])
{
    static const uint32_t sizes[] = { 1, 1023, 1024, 1025, 2048, 4097 };
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge ss[4], rs[4];
    struct rs_cqe cqe;
    int i;

    /*
     * SEND with immediate, 3000 bytes from two SGEs into three: three
     * packets at MTU 1024, whose PSNs cross 2^24; one ACK.
     */
    pair_log_reset(pr);
    ss[0] = peer_sge(a, 0x10, 1000);
    ss[1] = peer_sge(a, 0x2000, 2000);
    rs[0] = peer_sge(b, 0x100, 512);
    rs[1] = peer_sge(b, 0x1000, 1500);
    rs[2] = peer_sge(b, 0x3000, 4000);
    eng_post_recv(b->d, &q[1], 0xb0, rs, 3);
    pair_post(pr, 0, &q[0], RS_WR_SEND_IMM, 0xa0, ss, 2, 0, 0,
              0x01020304);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x01020304);
    g_assert_cmphex(cqe.wc_flags, ==, RS_WC_F_IMM);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND_IMM, q[0].qpn);
    PAIR_EXPECT_OPS(pr, 0, OP_SEND_FIRST, OP_SEND_MIDDLE,
                    OP_SEND_LAST_IMM);
    g_assert_cmphex(pr->psn[0][0], ==, 0xfffffe);
    g_assert_cmphex(pr->psn[0][2], ==, 0);
    PAIR_EXPECT_OPS(pr, 1, OP_ACK);
    g_assert_cmphex(pr->syn[1][0], ==, AETH_ACK);
    g_assert_cmphex(pr->psn[1][0], ==, 0);
    img_move(b, 0x100, a, 0x10, 512);
    img_move(b, 0x1000, a, 0x10 + 512, 488);
    img_move(b, 0x1000 + 488, a, 0x2000, 1012);
    img_move(b, 0x3000, a, 0x2000 + 1012, 988);
    peer_check(a);
    peer_check(b);

    /* SENDs around the MTU, each into a buffer exactly its size. */
    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        uint32_t n = sizes[i], soff = 0x4000 + i, doff = 0x6000 - i;

        pair_log_reset(pr);
        peer_fill(a, soff, n, i);
        rs[0] = peer_sge(b, doff, n);
        eng_post_recv(b->d, &q[1], 0xb1 + i, rs, 1);
        ss[0] = peer_sge(a, soff, n);
        pair_post(pr, 0, &q[0], RS_WR_SEND, 0xa1 + i, ss, 1, 0, 0, 0);
        pair_poll(pr, 1, &cqe);
        assert_cqe(&cqe, 0xb1 + i, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
        g_assert_cmpuint(cqe.byte_len, ==, n);
        g_assert_cmphex(cqe.wc_flags, ==, 0);
        pair_poll(pr, 0, &cqe);
        assert_cqe(&cqe, 0xa1 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
        pair_pump(pr);
        g_assert_cmpuint(pr->nops[0], ==, DIV_ROUND_UP(n, 1024));
        g_assert_cmpuint(pr->nops[1], ==, 1);
        img_move(b, doff, a, soff, n);
        peer_check(b);
    }
}

/* RDMA WRITE, and WRITE with immediate. */
static void pair_rc_writes(Pair *pr, LoopQp q[2])
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge ss[4], rs[4];
    struct rs_cqe cqe;

    /* RDMA WRITE of 5000 bytes from two SGEs to an odd address. */
    pair_log_reset(pr);
    ss[0] = peer_sge(a, 0x123, 3000);
    ss[1] = peer_sge(a, 0x5000, 2000);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa8, ss, 2,
              b->buf + 0x777, b->key[0], 0);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa8, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_FIRST, OP_WRITE_MIDDLE,
                    OP_WRITE_MIDDLE, OP_WRITE_MIDDLE, OP_WRITE_LAST);
    PAIR_EXPECT_OPS(pr, 1, OP_ACK);
    pair_cq_empty(pr, 1);
    img_move(b, 0x777, a, 0x123, 3000);
    img_move(b, 0x777 + 3000, a, 0x5000, 2000);
    peer_check(b);

    /* RDMA WRITE with immediate: consumes a receive, not its buffer. */
    pair_log_reset(pr);
    rs[0] = peer_sge(b, 0x7000, 64);
    eng_post_recv(b->d, &q[1], 0xb8, rs, 1);
    ss[0] = peer_sge(a, 0x3333, 1500);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE_IMM, 0xa9, ss, 1,
              b->buf + 0x10, b->key[0], 0xdeadbeef);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb8, RS_WC_SUCCESS, RS_WR_RECV_RDMA_IMM, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1500);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0xdeadbeef);
    g_assert_cmphex(cqe.wc_flags, ==, RS_WC_F_IMM);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa9, RS_WC_SUCCESS, RS_WR_RDMA_WRITE_IMM, q[0].qpn);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST_IMM);
    PAIR_EXPECT_OPS(pr, 1, OP_ACK);
    img_move(b, 0x10, a, 0x3333, 1500);
    peer_check(b);
}

/* RDMA READ into three SGEs; zero-length SEND, WRITE and READ. */
static void pair_rc_reads(Pair *pr, LoopQp q[2])
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge ss[4];
    struct rs_cqe cqe;

    /* RDMA READ of 5000 bytes into three SGEs: five responses. */
    pair_log_reset(pr);
    peer_fill(b, 0x2100, 5000, 0x77);
    ss[0] = peer_sge(a, 0x0, 100);
    ss[1] = peer_sge(a, 0x1001, 4000);
    ss[2] = peer_sge(a, 0x7000, 900);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_READ, 0xaa, ss, 3,
              b->buf + 0x2100, b->key[0], 0);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xaa, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    PAIR_EXPECT_OPS(pr, 0, OP_READ_REQ);
    PAIR_EXPECT_OPS(pr, 1, OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE,
                    OP_READ_RESP_MIDDLE, OP_READ_RESP_MIDDLE,
                    OP_READ_RESP_LAST);
    pair_cq_empty(pr, 1);
    img_move(a, 0, b, 0x2100, 100);
    img_move(a, 0x1001, b, 0x2100 + 100, 4000);
    img_move(a, 0x7000, b, 0x2100 + 4100, 900);
    peer_check(a);
    peer_check(b);

    /* Zero-length SEND, WRITE and READ: one packet each, no data. */
    pair_log_reset(pr);
    eng_post_recv(b->d, &q[1], 0xb9, NULL, 0);
    pair_post(pr, 0, &q[0], RS_WR_SEND, 0xab, NULL, 0, 0, 0, 0);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xac, NULL, 0,
              b->buf, b->key[0], 0);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_READ, 0xad, NULL, 0,
              b->buf, b->key[0], 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb9, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 0);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xab, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xac, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xad, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 0);
    PAIR_EXPECT_OPS(pr, 0, OP_SEND_ONLY, OP_WRITE_ONLY,
                    OP_READ_REQ);
    peer_check(a);
    peer_check(b);
}

static void test_engine_pair_rc(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    LoopQp q[2];
    struct rs_sge ss[4], rs[4];
    struct rs_cqe cqe;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);

    pair_rc_sends(&pr, q);
    pair_rc_writes(&pr, q);
    pair_rc_reads(&pr, q);

    /* And back: B SENDs to A. */
    pair_log_reset(&pr);
    rs[0] = peer_sge(a, 0x6800, 2000);
    eng_post_recv(a->d, &q[0], 0xa0b0, rs, 1);
    ss[0] = peer_sge(b, 0x200, 1999);
    pair_post(&pr, 1, &q[1], RS_WR_SEND, 0xb0a0, ss, 1, 0, 0, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0b0, RS_WC_SUCCESS, RS_WR_RECV, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1999);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0a0, RS_WC_SUCCESS, RS_WR_SEND, q[1].qpn);
    PAIR_EXPECT_OPS(&pr, 1, OP_SEND_FIRST, OP_SEND_LAST);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK);
    img_move(a, 0x6800, b, 0x200, 1999);
    peer_check(a);
    peer_check(b);

    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/* A UD SEND of @len bytes at @off of A's buffer to B's QP @qpn. */
static void pair_post_ud(Pair *pr, LoopQp *q, uint32_t ah, uint64_t wr_id,
                         uint32_t off, uint32_t len, uint32_t qpn,
                         uint32_t qkey, bool imm)
{
    struct rs_sge sge = peer_sge(&pr->p[0], off, len);
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = imm ? RS_WR_SEND_IMM : RS_WR_SEND,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .imm_or_inv = 0x11223344,
        .ah = ah,
        .remote_qpn = qpn,
        .remote_qkey = qkey,
    };

    eng_post_send(pr->p[0].d, q, &w, &sge, 1);
}

/*
 * A UD receive's GRH area at @off of peer @p's buffer: for RoCEv2 zeros,
 * then the IPv4 header of the datagram's @frame in its last 20 bytes.
 */
static void ud_expect_grh(Peer *p, uint32_t off, const uint8_t *frame)
{
    memset(p->img + off, 0, 20);
    memcpy(p->img + off + 20, frame + 14, 20);
}

static void pair_ud_drops(Pair *pr, LoopQp q[2], uint32_t ah)
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge rs[1];
    struct rs_cqe cqe;
    int i;

    /*
     * A wrong Q_Key and an unknown QP drop the datagram (the sender does
     * not know); a Q_Key with bit 31 set means the sender QP's own.
     */
    pair_log_reset(pr);
    rs[0] = peer_sge(b, 0x2000, GRH_SIZE + 1024);
    eng_post_recv(b->d, &q[1], 0xb1, rs, 1);
    peer_fill(a, 0x600, 1024, 0x31);
    pair_post_ud(pr, &q[0], ah, 0xa1, 0x600, 1000, q[1].qpn,
                 STD_QKEY ^ 1, false);
    pair_post_ud(pr, &q[0], ah, 0xa2, 0x600, 1001, 0xabc, STD_QKEY, false);
    pair_post_ud(pr, &q[0], ah, 0xa3, 0x601, 1002, q[1].qpn, 0x80000000u,
                 false);
    for (i = 1; i <= 3; i++) {
        pair_poll(pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    }
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, GRH_SIZE + 1002);
    g_assert_cmphex(cqe.wc_flags, ==, RS_WC_F_GRH | RS_WC_F_IPV4);
    PAIR_EXPECT_OPS(pr, 0, OP_UD_SEND_ONLY, OP_UD_SEND_ONLY,
                    OP_UD_SEND_ONLY);
    ud_expect_grh(b, 0x2000, pr->last[0]);
    img_move(b, 0x2000 + GRH_SIZE, a, 0x601, 1002);
    peer_check(b);
    pair_cq_empty(pr, 1);
}

static void test_engine_pair_ud(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_cmd_create_ah ac;
    struct rs_sge rs[2];
    struct rs_cqe cqe;
    LoopQp q[2];
    uint32_t ah;
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_ud(&pr, q);
    ah_template(&ac, a->pd, 0);
    memcpy(ac.dmac, pair_mac[1], 6);
    RS_ASSERT_OK(qrs_create_ah(a->d, &ac, &ah));

    /*
     * SEND with immediate: the receive buffer starts with the 40-byte GRH
     * area, the IPv4 header in its last 20 bytes (RoCEv2), then the data.
     */
    pair_log_reset(&pr);
    rs[0] = peer_sge(b, 0x100, GRH_SIZE);
    rs[1] = peer_sge(b, 0x1000, 512);
    eng_post_recv(b->d, &q[1], 0xb0, rs, 2);
    pair_post_ud(&pr, &q[0], ah, 0xa0, 0x500, 300, q[1].qpn, STD_QKEY, true);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND_IMM, q[0].qpn);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, GRH_SIZE + 300);
    g_assert_cmpuint(cqe.src_qp, ==, q[0].qpn);
    g_assert_cmphex(cqe.wc_flags, ==,
                    RS_WC_F_GRH | RS_WC_F_IPV4 | RS_WC_F_IMM);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x11223344);
    PAIR_EXPECT_OPS(&pr, 0, OP_UD_SEND_ONLY_IMM);
    PAIR_EXPECT_NONE(&pr, 1);
    g_assert_cmphex((uint32_t)ldl_be_p(pr.last[0] + ROCE_EXT), ==, STD_QKEY);
    g_assert_cmphex(ldl_be_p(pr.last[0] + ROCE_EXT + 4), ==, q[0].qpn);
    ud_expect_grh(b, 0x100, pr.last[0]);
    img_move(b, 0x1000, a, 0x500, 300);
    peer_check(b);

    pair_ud_drops(&pr, q, ah);

    /*
     * Longer than the receive buffer: that receive completes with a local
     * length error and nothing written; the QP goes on receiving.
     */
    rs[0] = peer_sge(b, 0x3000, GRH_SIZE + 100);
    eng_post_recv(b->d, &q[1], 0xb2, rs, 1);
    rs[0] = peer_sge(b, 0x3800, GRH_SIZE + 200);
    eng_post_recv(b->d, &q[1], 0xb3, rs, 1);
    pair_post_ud(&pr, &q[0], ah, 0xa4, 0x700, 101, q[1].qpn, STD_QKEY,
                 false);
    pair_post_ud(&pr, &q[0], ah, 0xa5, 0x700, 200, q[1].qpn, STD_QKEY,
                 false);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb2, RS_WC_LOC_LEN_ERR, RS_WR_RECV, q[1].qpn);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb3, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, GRH_SIZE + 200);
    for (i = 4; i <= 5; i++) {
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    }
    ud_expect_grh(b, 0x3800, pr.last[0]);
    img_move(b, 0x3800 + GRH_SIZE, a, 0x700, 200);
    peer_check(b);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);

    /*
     * A datagram larger than the path MTU cannot be sent: a local length
     * error, nothing on the wire, and the QP goes to the error state.
     */
    pair_log_reset(&pr);
    pair_post_ud(&pr, &q[0], ah, 0xa6, 0, 4097, q[1].qpn, STD_QKEY, false);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa6, RS_WC_LOC_LEN_ERR, RS_WR_SEND, q[0].qpn);
    PAIR_EXPECT_NONE(&pr, 0);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    peer_check(a);
    peer_check(b);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/*
 * Lost packets: the test drops chosen frames and the adapters recover
 * (sequence NAK or local ACK timeout, go-back-N, duplicates answered
 * again) with every byte in place.
 */
static void test_engine_pair_loss(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];
    uint32_t p;
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);

    /* A SEND's middle packet is lost: sequence NAK, all three again. */
    pair_log_reset(&pr);
    pr.drop[0] = 1 << 1;
    sge = peer_sge(b, 0x1000, 4000);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    sge = peer_sge(a, 0x10, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    /* B answered the gap with a sequence NAK for the lost PSN. */
    p = pr.psn[0][0];
    pair_pump(&pr);
    g_assert_cmpuint(pr.nops[0], >=, 5);
    g_assert_cmphex(pr.op[1][0], ==, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_NAK_SEQ);
    g_assert_cmphex(pr.psn[1][0], ==, (p + 1) & 0xffffff);
    img_move(b, 0x1000, a, 0x10, 3000);
    peer_check(b);

    /* A WRITE's ACK is lost: after the local ACK timeout A asks again. */
    pair_log_reset(&pr);
    pr.drop[1] = 1 << 0;
    sge = peer_sge(a, 0x2000, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    pair_wait_frames(&pr, 1, 1);
    img_move(b, 0x3000, a, 0x2000, 2000);
    peer_check(b);
    pair_cq_empty(&pr, 0);
    qtest_clock_step(qrs_qts(a->d), 5000000000ll);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    g_assert_cmpuint(pr.nops[0], >=, 3);
    g_assert_cmpuint(pr.nops[1], >=, 2);
    peer_check(b);

    /* The last READ response is lost: the READ is issued again. */
    pair_log_reset(&pr);
    pr.drop[1] = 1 << 2;
    peer_fill(b, 0x4000, 3000, 0x21);
    sge = peer_sge(a, 0x5000, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa2, &sge, 1,
              b->buf + 0x4000, b->key[0], 0);
    pair_wait_frames(&pr, 1, 3);
    pair_cq_empty(&pr, 0);
    qtest_clock_step(qrs_qts(a->d), 5000000000ll);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmpuint(pr.nops[0], >=, 2);
    img_move(a, 0x5000, b, 0x4000, 3000);
    peer_check(a);

    /*
     * The middle, then the first READ response is lost: the requester
     * must not complete the READ without those bytes.
     */
    for (i = 1; i >= 0; i--) {
        pair_log_reset(&pr);
        pr.drop[1] = 1 << i;
        peer_fill(b, 0x4000, 3000, 0x43 + i);
        sge = peer_sge(a, 0x5000, 3000);
        pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa3 + i, &sge, 1,
                  b->buf + 0x4000, b->key[0], 0);
        pair_wait_frames(&pr, 1, 3);
        qtest_clock_step(qrs_qts(a->d), 5000000000ll);
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa3 + i, RS_WC_SUCCESS, RS_WR_RDMA_READ,
                   q[0].qpn);
        g_assert_cmpuint(cqe.byte_len, ==, 3000);
        g_assert_cmpuint(pr.nops[0], >=, 2);
        img_move(a, 0x5000, b, 0x4000, 3000);
        peer_check(a);
    }

    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

typedef struct AtomicRow {
    const char *name;
    uint8_t op;                 /* RS_WR_ATOMIC_CMP_SWP / _FETCH_ADD */
    uint32_t off;               /* in B's buffer */
    uint64_t value;             /* B holds this before */
    uint64_t compare_add;
    uint64_t swap;
    uint8_t status;
    uint8_t nak;
    bool mr_plain;              /* B's MR without REMOTE_ATOMIC */
    bool qp_plain;              /* B's QP without REMOTE_ATOMIC */
    bool bad_lkey;              /* A's result SGE has a bad lkey */
} AtomicRow;

#define ATOMIC_ACCESS   (STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC)

static const AtomicRow atomic_rows[] = {
    { .name = "fetch-add", .op = RS_WR_ATOMIC_FETCH_ADD, .off = 0x100,
      .value = 0x1000000000000001ull, .compare_add = 0x0123456789abcdefull,
      .status = RS_WC_SUCCESS },
    { .name = "fetch-add-wraps", .op = RS_WR_ATOMIC_FETCH_ADD, .off = 0x108,
      .value = 0xffffffffffffff00ull, .compare_add = 0x200,
      .status = RS_WC_SUCCESS },
    { .name = "cmp-swap-equal", .op = RS_WR_ATOMIC_CMP_SWP, .off = 0x1ff8,
      .value = 0x5555aaaa5555aaaaull, .compare_add = 0x5555aaaa5555aaaaull,
      .swap = 0x0102030405060708ull, .status = RS_WC_SUCCESS },
    { .name = "cmp-swap-differs", .op = RS_WR_ATOMIC_CMP_SWP, .off = 0x200,
      .value = 0x5555aaaa5555aaaaull, .compare_add = 0x5555aaaa5555aaabull,
      .swap = 0x0102030405060708ull, .status = RS_WC_SUCCESS },
    { .name = "misaligned", .op = RS_WR_ATOMIC_FETCH_ADD, .off = 0x204,
      .value = 7, .compare_add = 1, .status = RS_WC_REM_INV_REQ_ERR,
      .nak = AETH_NAK_INV_REQ },
    { .name = "past-mr-end", .op = RS_WR_ATOMIC_FETCH_ADD, .off = PAIR_BUF,
      .compare_add = 1, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "mr-no-remote-atomic", .op = RS_WR_ATOMIC_CMP_SWP,
      .off = 0x300, .value = 1, .compare_add = 1, .swap = 2,
      .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS,
      .mr_plain = true },
    { .name = "qp-no-remote-atomic", .op = RS_WR_ATOMIC_FETCH_ADD,
      .off = 0x300, .value = 1, .compare_add = 1,
      .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS,
      .qp_plain = true },
    { .name = "local-bad-lkey", .op = RS_WR_ATOMIC_FETCH_ADD, .off = 0x300,
      .value = 1, .compare_add = 1, .status = RS_WC_LOC_PROT_ERR,
      .bad_lkey = true },
};

/* A connected pair of @type (RC or UC), like pair_rc(). */
static void pair_connected(Pair *pr, LoopQp q[2], uint8_t type,
                           uint16_t resp_access)
{
    struct rs_qp_attr a;
    int i;

    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q[i], type, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        pair_attr(q, i, 0, &a);
        a.access_flags = i ? resp_access : STD_ACCESS;
        eng_connect(pr->p[i].d, &q[i], type, &a, 0);
    }
}

static void test_engine_pair_atomic(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t atomic_key;
    int i;

    pair_setup(&pr, obj, data, alloc);
    atomic_key = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF, ATOMIC_ACCESS);
    for (i = 0; i < ARRAY_SIZE(atomic_rows); i++) {
        const AtomicRow *r = &atomic_rows[i];
        bool ok = r->status == RS_WC_SUCCESS;
        struct rs_sge sge = peer_sge(a, 0x40, 8);
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xa0 + i,
            .opcode = r->op,
            .flags = RS_WQE_F_SIGNALED,
            .num_sge = 1,
            .remote_addr = b->buf + r->off,
            .rkey = r->mr_plain ? b->key[0] : atomic_key,
            .compare_add = r->compare_add,
            .swap = r->swap,
        };
        struct rs_cqe cqe;
        LoopQp q[2];
        uint64_t now;
        uint8_t wop;

        g_test_message("atomic: %s", r->name);
        pair_connected(&pr, q, RS_QPT_RC,
                       r->qp_plain ? STD_ACCESS : ATOMIC_ACCESS);
        if (r->off + 8 <= PAIR_BUF) {
            stq_le_p(b->img + r->off, r->value);
            qtest_memwrite(qrs_qts(b->d), b->buf + r->off, b->img + r->off,
                           8);
        }
        if (r->bad_lkey) {
            sge.lkey ^= 1;
        }
        pair_log_reset(&pr);
        eng_post_send(a->d, &q[0], &w, &sge, 1);
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, r->status, r->op, q[0].qpn);
        if (ok) {
            g_assert_cmpuint(cqe.byte_len, ==, 8);
            stq_le_p(a->img + 0x40, r->value);
            now = r->op == RS_WR_ATOMIC_FETCH_ADD ?
                  r->value + r->compare_add :
                  r->value == r->compare_add ? r->swap : r->value;
            stq_le_p(b->img + r->off, now);
            wop = r->op == RS_WR_ATOMIC_FETCH_ADD ? OP_FETCH_ADD :
                  OP_CMP_SWAP;
            pair_expect_ops(&pr, 0, &wop, 1);
            PAIR_EXPECT_OPS(&pr, 1, OP_ATOMIC_ACK);
            g_assert_cmphex(pr.syn[1][0], ==, AETH_ACK);
        } else if (r->nak) {
            PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
            g_assert_cmphex(pr.syn[1][0], ==, r->nak);
        } else {
            PAIR_EXPECT_NONE(&pr, 0);
            PAIR_EXPECT_NONE(&pr, 1);
        }
        g_assert_cmpuint(qp_state(a->d, q[0].h), ==,
                         ok ? RS_QPS_RTS : RS_QPS_ERR);
        g_assert_cmpuint(qp_state(b->d, q[1].h), ==,
                         r->nak ? RS_QPS_ERR : RS_QPS_RTS);
        pair_cq_empty(&pr, 0);
        pair_cq_empty(&pr, 1);
        peer_check(a);
        peer_check(b);
    }
    pair_teardown(&pr);
}

/* UC SEND and WRITE with immediate: no ACKs, complete at A once sent. */
static void pair_uc_good(Pair *pr, LoopQp q[2])
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge sge, rsge[1];
    struct rs_cqe cqe;

    /* SEND of three packets: completes at A once sent. */
    pair_log_reset(pr);
    rsge[0] = peer_sge(b, 0x1000, 4000);
    eng_post_recv(b->d, &q[1], 0xb0, rsge, 1);
    sge = peer_sge(a, 0x10, 3000);
    pair_post(pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    PAIR_EXPECT_OPS(pr, 0, OP_UC | OP_SEND_FIRST, OP_UC | OP_SEND_MIDDLE,
                    OP_UC | OP_SEND_LAST);
    PAIR_EXPECT_NONE(pr, 1);
    img_move(b, 0x1000, a, 0x10, 3000);
    peer_check(b);

    /* RDMA WRITE with immediate. */
    pair_log_reset(pr);
    rsge[0] = peer_sge(b, 0x7000, 16);
    eng_post_recv(b->d, &q[1], 0xb1, rsge, 1);
    sge = peer_sge(a, 0x2000, 1500);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE_IMM, 0xa1, &sge, 1,
              b->buf + 0x3000, b->key[0], 0xcafe);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV_RDMA_IMM, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1500);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0xcafe);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE_IMM, q[0].qpn);
    PAIR_EXPECT_OPS(pr, 0, OP_UC | OP_WRITE_FIRST,
                    OP_UC | OP_WRITE_LAST_IMM);
    PAIR_EXPECT_NONE(pr, 1);
    img_move(b, 0x3000, a, 0x2000, 1500);
    peer_check(b);
}

/*
 * UC: no ACKs and no NAKs.  A bad rkey or a lost packet drops the rest
 * of that message at the responder, never the QP.
 */
static void test_engine_pair_uc(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge, rsge[2];
    struct rs_cqe cqe;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_connected(&pr, q, RS_QPT_UC, STD_ACCESS);

    pair_uc_good(&pr, q);

    /*
     * A WRITE with a bad rkey completes at A (nobody tells it) and
     * writes nothing; a WRITE whose middle packet is lost writes only
     * what IBTA leaves undefined; the next messages arrive whole.
     */
    pair_log_reset(&pr);
    sge = peer_sge(a, 0x4000, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x5000, b->key[0] ^ 1, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    rsge[0] = peer_sge(b, 0x6800, 16);
    eng_post_recv(b->d, &q[1], 0xb3, rsge, 1);
    sge = peer_sge(a, 0x200, 16);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa6, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb3, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa6, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    img_move(b, 0x6800, a, 0x200, 16);
    peer_check(b);
    pair_log_reset(&pr);
    pr.drop[0] = 1 << 1;
    sge = peer_sge(a, 0x4000, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa3, &sge, 1,
              b->buf + 0x5000, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    pair_wait_frames(&pr, 0, 3);
    rsge[0] = peer_sge(b, 0x6000, 2000);
    eng_post_recv(b->d, &q[1], 0xb2, rsge, 1);
    sge = peer_sge(a, 0x100, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa4, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 2000);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa4, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    peer_dont_care(b, 0x5000, 3000);
    img_move(b, 0x6000, a, 0x100, 2000);
    peer_check(b);

    /* No RDMA READ on UC: a local error, nothing on the wire. */
    pair_log_reset(&pr);
    sge = peer_sge(a, 0x100, 64);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa5, &sge, 1,
              b->buf, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa5, RS_WC_LOC_QP_OP_ERR, RS_WR_RDMA_READ, q[0].qpn);
    PAIR_EXPECT_NONE(&pr, 0);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 1);
    peer_check(a);
    peer_check(b);
    pair_teardown(&pr);
}

/*
 * The QP-affiliated asynchronous events the device raises itself, each
 * provoked: Communication Established (a packet for a QP in RTR), SQ
 * Drained (SQD with notification, at once and after the outstanding
 * WRITE's ACK), access and invalid request errors of a responder, and a
 * catastrophic error (a send queue producer more than a ring ahead).
 */
static void test_engine_pair_events(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_qp_attr attr;
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2], x[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    for (i = 0; i < 2; i++) {
        pair_qp(&pr, i, &q[i], RS_QPT_RC, pr.p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        pair_attr(q, i, 0, &attr);
        if (i == 0) {
            eng_connect(a->d, &q[0], RS_QPT_RC, &attr, 0);
        } else {
            /* B stays in RTR. */
            attr.qp_state = RS_QPS_INIT;
            RS_ASSERT_OK(qrs_modify_qp(b->d, q[1].h, &attr,
                         std_mask(RS_QPT_RC, RS_QPS_RESET, RS_QPS_INIT)));
            attr.cur_qp_state = RS_QPS_INIT;
            attr.qp_state = RS_QPS_RTR;
            RS_ASSERT_OK(qrs_modify_qp(b->d, q[1].h, &attr,
                         std_mask(RS_QPT_RC, RS_QPS_INIT, RS_QPS_RTR)));
        }
    }

    /* Communication Established on B, once. */
    for (i = 0; i < 2; i++) {
        sge = peer_sge(b, 0x1000 * i, 100);
        eng_post_recv(b->d, &q[1], 0xb0 + i, &sge, 1);
        sge = peer_sge(a, 0x10, 100);
        pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0 + i, &sge, 1, 0, 0, 0);
        pair_poll(&pr, 1, &cqe);
        assert_cqe(&cqe, 0xb0 + i, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
        img_move(b, 0x1000 * i, a, 0x10, 100);
    }
    expect_event(b->d, RS_EV_QP_COMM_EST, q[1].h);
    expect_no_event(b->d);
    modify_state(b->d, &q[1], RS_QPS_RTR, RS_QPS_RTS,
                 std_mask(RS_QPT_RC, RS_QPS_RTR, RS_QPS_RTS) &
                 ~RS_QP_ATTR_STATE, false);

    /* SQ Drained: nothing outstanding, at once. */
    modify_state(a->d, &q[0], RS_QPS_RTS, RS_QPS_SQD,
                 RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, true);
    expect_event(a->d, RS_EV_QP_SQ_DRAINED, q[0].h);
    modify_state(a->d, &q[0], RS_QPS_SQD, RS_QPS_RTS, 0, false);

    /* ... and with a WRITE in flight, only once its ACK is in. */
    pr.hold[1] = true;
    sge = peer_sge(a, 0x2000, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    pair_wait_frames(&pr, 1, 1);
    modify_state(a->d, &q[0], RS_QPS_RTS, RS_QPS_SQD,
                 RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, true);
    expect_no_event(a->d);
    pair_release(&pr, 1);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    expect_event(a->d, RS_EV_QP_SQ_DRAINED, q[0].h);
    img_move(b, 0x3000, a, 0x2000, 3000);
    modify_state(a->d, &q[0], RS_QPS_SQD, RS_QPS_RTS, 0, false);

    /* A WRITE through a key B does not have: B's access error. */
    sge = peer_sge(a, 0x2000, 100);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa3, &sge, 1,
              b->buf, b->key[0] ^ 0x100, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa3, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE, q[0].qpn);
    expect_event(b->d, RS_EV_QP_ACCESS_ERR, q[1].h);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);

    /* A send queue producer more than a ring ahead: catastrophic. */
    pair_rc(&pr, x, 0, STD_ACCESS);
    qrs_db_writel(a->d, 0, RS_DB_SQ,
                  x[0].qpn | ((1u << x[0].c.sq_log_size) + 5) << 16);
    expect_event(a->d, RS_EV_QP_FATAL, x[0].h);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_ERR);
    peer_check(b);
    pair_teardown(&pr);
}

/*
 * READ responses that arrive while the requester waits out an RNR timer
 * (a responder that said "not ready" and then answered the READ anyway,
 * as a migration source does when its hold and a cancelled migration
 * meet): they complete the READ, and when the wait is over the requester
 * goes on after it.  It must not start again from behind the completed
 * WQE: that sends the READ again and, with a full send queue, trips the
 * SQ overrun check and ends the QP without an error completion.
 */
static void test_engine_pair_read_during_rnr(void *obj, void *data,
                                             QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    GByteArray *r1, *r2, *nak;
    uint32_t psn;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    peer_fill(b, 0x1000, 2000, 0x31);
    pair_log_reset(&pr);
    pr.hold[1] = true;
    sge = peer_sge(a, 0x4000, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa1, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    r1 = pair_take(&pr, 1);
    r2 = pair_take(&pr, 1);
    g_assert_cmphex(r1->data[ROCE_BTH], ==, OP_READ_RESP_FIRST);
    g_assert_cmphex(r2->data[ROCE_BTH], ==, OP_READ_RESP_LAST);
    psn = pr.psn[0][0];

    /* "Not ready" at the READ's PSN, the longest timer (655.36 ms). */
    nak = g_byte_array_new();
    g_byte_array_append(nak, r1->data, ROCE_EXT + 4 + 4);
    nak->data[ROCE_BTH] = OP_ACK;
    nak->data[ROCE_EXT] = AETH_RNR | 0;
    roce_reseal(nak->data, nak->len);
    pair_inject(&pr, 0, nak->data, nak->len);
    pair_pump(&pr);
    g_usleep(20 * 1000);

    /* The responses, during the wait: the READ completes. */
    pair_inject(&pr, 0, r1->data, r1->len);
    pair_inject(&pr, 0, r2->data, r2->len);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn,
                    2000);
    img_move(a, 0x4000, b, 0x1000, 2000);

    /* A WRITE posted during the wait leaves after it, at the next PSN. */
    pair_log_reset(&pr);
    pr.hold[1] = false;
    sge = peer_sge(a, 0x100, 500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    g_usleep(20 * 1000);
    PAIR_EXPECT_NONE(&pr, 0);
    qtest_clock_step(qrs_qts(a->d), 700 * 1000 * 1000);
    pair_wait_frames(&pr, 0, 1);
    g_usleep(20 * 1000);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_ONLY);
    g_assert_cmphex(pr.psn[0][0], ==, (psn + 2) & 0xffffff);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x3000, a, 0x100, 500);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 0);
    peer_check(a);
    peer_check(b);
    g_byte_array_unref(r1);
    g_byte_array_unref(r2);
    g_byte_array_unref(nak);
    pair_teardown(&pr);
}

static void register_pair_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };

    rs_add_standalone_test("pair/rc", test_engine_pair_rc, &pair);
    rs_add_standalone_test("pair/ud", test_engine_pair_ud, &pair);
    rs_add_standalone_test("pair/loss", test_engine_pair_loss, &pair);
    rs_add_standalone_test("pair/atomic", test_engine_pair_atomic, &pair);
    rs_add_standalone_test("pair/uc", test_engine_pair_uc, &pair);
    rs_add_standalone_test("pair/events", test_engine_pair_events, &pair);
    rs_add_standalone_test("pair/read-during-rnr",
                           test_engine_pair_read_during_rnr, &pair);
}

libqos_init(register_pair_tests);
