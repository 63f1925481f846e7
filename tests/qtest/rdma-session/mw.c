/*
 * rdma-session qtests: memory windows (type 1 and type 2B): allocation,
 * binds, remote access through a window between two adapters, local and
 * remote invalidation, the IBTA protection rules, migration
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define MW_RW   (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ)

static uint8_t mw_alloc_st(QRdmaSession *d, uint32_t pd, uint32_t gid,
                           uint8_t type, uint32_t *key)
{
    struct rs_cmd_alloc_mw c = { .pd = pd, .gid_index = gid, .type = type };

    return qrs_admin_cmd(d, RS_CMD_ALLOC_MW, &c, sizeof(c), key, NULL);
}

static uint32_t mw_alloc(QRdmaSession *d, uint32_t pd, uint8_t type)
{
    uint32_t key;

    RS_ASSERT_OK(mw_alloc_st(d, pd, 0, type, &key));
    g_assert_cmphex(key >> RS_MKEY_INDEX_SHIFT, !=, 0);
    return key;
}

/* The key with the next tag, as ibv_inc_rkey() makes it. */
static uint32_t mw_next(uint32_t key)
{
    return (key & ~RS_MKEY_TAG_MASK) | ((key + 1) & RS_MKEY_TAG_MASK);
}

static void mw_post_bind(QRdmaSession *d, LoopQp *q, uint64_t wr_id,
                         uint32_t mw, uint32_t new_rkey, uint32_t mr,
                         uint64_t addr, uint64_t len, uint16_t access)
{
    struct rs_send_wqe_bind_mw b = {
        .wr_id = wr_id, .opcode = RS_WR_BIND_MW,
        .flags = RS_WQE_F_SIGNALED, .mw_rkey = mw, .addr = addr,
        .length = len, .mr_lkey = mr, .new_rkey = new_rkey,
        .access = access,
    };
    struct rs_send_wqe_ctrl w;

    QEMU_BUILD_BUG_ON(sizeof(w) != sizeof(b));
    memcpy(&w, &b, sizeof(w));
    eng_post_send(d, q, &w, NULL, 0);
}

/* The next completion on adapter @i: @wr_id failed with @status. */
static void pair_expect_err(Pair *pr, int i, uint64_t wr_id, uint8_t status)
{
    struct rs_cqe cqe;

    pair_poll(pr, i, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
}

/*
 * A WRITE of 64 bytes from A through @rkey at @va of B is refused: A's
 * request fails with a remote access error, B's memory stays as it was.
 */
static void pair_write_refused(Pair *pr, LoopQp q[2], uint64_t wr_id,
                               uint64_t va, uint32_t rkey)
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge ss = peer_sge(a, 0x6000, 64);

    peer_fill(a, 0x6000, 64, wr_id);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, wr_id, &ss, 1, va, rkey, 0);
    pair_expect_err(pr, 0, wr_id, RS_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    peer_check(b);
}

static void test_mw_alloc(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_device_attr a;
    struct rs_cmd_alloc_mw c;
    uint32_t pd, pd2, k1, k2, mr;

    RS_ASSERT_OK(qrs_query_device(d, &a));
    g_assert_true(a.caps & RS_CAP_MW);
    g_assert_cmpuint(a.max_mw, ==, a.max_mr);
    g_assert_cmphex(qrs_readl(d, A_RS_CAPS) & RS_CAP_MW, ==, RS_CAP_MW);
    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    pd2 = new_pd(d);

    /* Bad PD, type, network identity, reserved fields. */
    RS_ASSERT_STATUS(mw_alloc_st(d, pd + 7, 0, RS_MW_TYPE_1, NULL),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(mw_alloc_st(d, 0, 0, RS_MW_TYPE_1, NULL),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(mw_alloc_st(d, pd, 0, 0, NULL), RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(mw_alloc_st(d, pd, 0, 3, NULL), RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(mw_alloc_st(d, pd, 9, RS_MW_TYPE_2, NULL),
                     RS_STATUS_BAD_NETID);
    memset(&c, 0, sizeof(c));
    c.pd = pd;
    c.type = RS_MW_TYPE_2;
    c.rsvd1 = 1;
    RS_ASSERT_STATUS(qrs_admin_cmd(d, RS_CMD_ALLOC_MW, &c, sizeof(c), NULL,
                                   NULL), RS_STATUS_BAD_PARAM);

    /* Windows and MRs share the key space: never the same index. */
    k1 = mw_alloc(d, pd, RS_MW_TYPE_1);
    k2 = mw_alloc(d, pd2, RS_MW_TYPE_2);
    mr = eng_mr(d, pd, 0, loop_buf(d, PAGE), PAGE,
                STD_ACCESS | RS_ACCESS_MW_BIND);
    g_assert_cmphex(k1 >> RS_MKEY_INDEX_SHIFT, !=, k2 >> RS_MKEY_INDEX_SHIFT);
    g_assert_cmphex(mr >> RS_MKEY_INDEX_SHIFT, !=, k1 >> RS_MKEY_INDEX_SHIFT);
    g_assert_cmphex(mr >> RS_MKEY_INDEX_SHIFT, !=, k2 >> RS_MKEY_INDEX_SHIFT);

    /* A window is no MR and an MR no window. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, k1),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEALLOC_MW, mr),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEALLOC_MW, 0),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEALLOC_MW, 0xffffff00),
                     RS_STATUS_BAD_HANDLE);

    /* A window keeps its PD. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd2), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEALLOC_MW, k2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEALLOC_MW, k2),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEALLOC_MW, k1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, mr));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

/*
 * Type 2B between two adapters: B binds a window to part of its MR on
 * its QP, A writes and reads through it (data checked both ways), then
 * invalidates it with a SEND with Invalidate: the next WRITE is refused
 * and B's memory is unchanged.
 */
static void test_mw_type2(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge ss, rs;
    struct rs_cqe cqe;
    LoopQp q[2], r[2];
    uint32_t mr, mw, k, k2;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    mr = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                STD_ACCESS | RS_ACCESS_MW_BIND);
    mw = mw_alloc(b->d, b->pd, RS_MW_TYPE_2);
    k = mw_next(mw);
    mw_post_bind(b->d, &q[1], 0xb1, mw, k, mr, b->buf + 0x1000, 0x2000,
                 MW_RW);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_BIND_MW, q[1].qpn, 0);

    /* WRITE 3000 bytes through the window, READ them back. */
    peer_fill(a, 0x100, 3000, 0x11);
    ss = peer_sge(a, 0x100, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &ss, 1,
              b->buf + 0x1100, k, 0);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 0);
    img_move(b, 0x1100, a, 0x100, 3000);
    peer_check(b);
    peer_fill(b, 0x2f00, 0x100, 0x33);
    ss = peer_sge(a, 0x5000, 0x1f00);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa2, &ss, 1,
              b->buf + 0x1100, k, 0);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ,
                    q[0].qpn, 0x1f00);
    img_move(a, 0x5000, b, 0x1100, 0x1f00);
    peer_check(a);

    /* The MR cannot go while the window is bound to it. */
    RS_ASSERT_STATUS(qrs_destroy(b->d, RS_CMD_DEREG_MR, mr), RS_STATUS_BUSY);

    /* Remote invalidation through the QP it is bound to. */
    rs = peer_sge(b, 0x7000, 64);
    eng_post_recv(b->d, &q[1], 0xb2, &rs, 1);
    ss = peer_sge(a, 0x100, 16);
    pair_post(&pr, 0, &q[0], RS_WR_SEND_INV, 0xa3, &ss, 1, 0, 0, k);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_true(cqe.wc_flags & RS_WC_F_INV);
    g_assert_cmphex(cqe.imm_or_inv, ==, k);
    pair_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_SEND_INV, q[0].qpn, 0);
    img_move(b, 0x7000, a, 0x100, 16);
    peer_check(b);

    /* Invalidated: refused, memory untouched; the MR can go now. */
    pair_write_refused(&pr, q, 0xa4, b->buf + 0x1100, k);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, mr));

    /*
     * A type 2B window is reached through its QP only: bound on r[1], a
     * WRITE arriving on another QP of the same PD is refused.
     */
    mr = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                STD_ACCESS | RS_ACCESS_MW_BIND);
    pair_rc(&pr, r, 0, STD_ACCESS);
    pair_rc(&pr, q, 0, STD_ACCESS);
    /* Free again: it binds, under a new tag, on r[1]. */
    k2 = mw_next(k);
    mw_post_bind(b->d, &r[1], 0xb4, k, k2, mr, b->buf, 0x1000, MW_RW);
    pair_expect_cqe(&pr, 1, 0xb4, RS_WC_SUCCESS, RS_WR_BIND_MW, r[1].qpn, 0);
    pair_write_refused(&pr, q, 0xa5, b->buf + 0x10, k2);
    /* Through r: fine. */
    k = k2;
    peer_fill(a, 0x200, 100, 0x44);
    ss = peer_sge(a, 0x200, 100);
    pair_post(&pr, 0, &r[0], RS_WR_RDMA_WRITE, 0xa6, &ss, 1, b->buf + 0x10,
              k, 0);
    pair_expect_cqe(&pr, 0, 0xa6, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    r[0].qpn, 0);
    img_move(b, 0x10, a, 0x200, 100);
    peer_check(b);

    /* Deallocation while bound unbinds: the MR can go. */
    RS_ASSERT_STATUS(qrs_destroy(b->d, RS_CMD_DEREG_MR, mr), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEALLOC_MW, k));
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, mr));
    pair_write_refused(&pr, r, 0xa7, b->buf + 0x10, k);
    pair_teardown(&pr);
}

/*
 * Type 1: bound by a bind on any QP of its PD, rebound while bound,
 * unbound by a zero-length bind; never invalidated, locally or remotely.
 */
static void test_mw_type1(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge ss, rs;
    struct rs_cqe cqe;
    LoopQp q[2];
    uint32_t mr, mw, k1, k2, k3;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    mr = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                STD_ACCESS | RS_ACCESS_MW_BIND);
    mw = mw_alloc(b->d, b->pd, RS_MW_TYPE_1);
    k1 = mw_next(mw);
    mw_post_bind(b->d, &q[1], 0xb1, mw, k1, mr, b->buf + 0x2000, 0x1000,
                 RS_ACCESS_REMOTE_WRITE);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_BIND_MW, q[1].qpn, 0);
    peer_fill(a, 0x100, 0x1000, 0x55);
    ss = peer_sge(a, 0x100, 0x1000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &ss, 1,
              b->buf + 0x2000, k1, 0);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 0);
    img_move(b, 0x2000, a, 0x100, 0x1000);
    peer_check(b);

    /* Rebind while bound: a new range and rights under a new tag. */
    k2 = mw_next(k1);
    mw_post_bind(b->d, &q[1], 0xb2, k1, k2, mr, b->buf + 0x3000, 0x800,
                 MW_RW);
    pair_expect_cqe(&pr, 1, 0xb2, RS_WC_SUCCESS, RS_WR_BIND_MW, q[1].qpn, 0);
    peer_fill(b, 0x3000, 0x800, 0x66);
    ss = peer_sge(a, 0x4000, 0x800);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa2, &ss, 1,
              b->buf + 0x3000, k2, 0);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ,
                    q[0].qpn, 0x800);
    img_move(a, 0x4000, b, 0x3000, 0x800);
    peer_check(a);

    /* SEND with Invalidate of a type 1 window: refused, still bound. */
    rs = peer_sge(b, 0x7000, 64);
    eng_post_recv(b->d, &q[1], 0xb3, &rs, 1);
    ss = peer_sge(a, 0x100, 16);
    pair_post(&pr, 0, &q[0], RS_WR_SEND_INV, 0xa3, &ss, 1, 0, 0, k2);
    pair_poll(&pr, 1, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_ACCESS_ERR);
    pair_expect_err(&pr, 0, 0xa3, RS_WC_REM_INV_REQ_ERR);
    peer_dont_care(b, 0x7000, 64);

    /* The old tag is gone; beyond the window and without the right. */
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_write_refused(&pr, q, 0xa4, b->buf + 0x3000, k1);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_write_refused(&pr, q, 0xa5, b->buf + 0x3800 - 0x20, k2);

    /* Still bound after all: a WRITE through k2 lands. */
    pair_rc(&pr, q, 0, STD_ACCESS);
    peer_fill(a, 0x100, 0x40, 0x77);
    ss = peer_sge(a, 0x100, 0x40);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa6, &ss, 1,
              b->buf + 0x3010, k2, 0);
    pair_expect_cqe(&pr, 0, 0xa6, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 0);
    img_move(b, 0x3010, a, 0x100, 0x40);
    peer_check(b);

    /* LOCAL_INV of a type 1 window: refused, the QP fails. */
    {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xb4, .opcode = RS_WR_LOCAL_INV,
            .flags = RS_WQE_F_SIGNALED, .imm_or_inv = k2,
        };

        eng_post_send(b->d, &q[1], &w, NULL, 0);
        pair_expect_err(&pr, 1, 0xb4, RS_WC_LOC_PROT_ERR);
    }

    /* A zero-length bind unbinds. */
    pair_rc(&pr, q, 0, STD_ACCESS);
    k3 = mw_next(k2);
    mw_post_bind(b->d, &q[1], 0xb5, k2, k3, 0, 0, 0, 0);
    pair_expect_cqe(&pr, 1, 0xb5, RS_WC_SUCCESS, RS_WR_BIND_MW, q[1].qpn, 0);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, mr));
    pair_write_refused(&pr, q, 0xa7, b->buf + 0x3010, k3);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEALLOC_MW, k3));
    pair_teardown(&pr);
}

/* A spare RTS QP of @pd on the loopback, its bind fails. */
static void bind_fails(Loop *l, uint32_t pd, uint64_t wr_id, uint32_t mw,
                       uint32_t new_rkey, uint32_t mr, uint64_t addr,
                       uint64_t len, uint16_t access, uint8_t flags)
{
    LoopQp q;
    struct rs_send_wqe_bind_mw b = {
        .wr_id = wr_id, .opcode = RS_WR_BIND_MW,
        .flags = RS_WQE_F_SIGNALED | flags, .mw_rkey = mw, .addr = addr,
        .length = len, .mr_lkey = mr, .new_rkey = new_rkey,
        .access = access,
    };
    struct rs_send_wqe_ctrl w;

    memset(&q, 0, sizeof(q));
    qp_template(l->d, &q.c, RS_QPT_RC, pd, l->cq.h, l->cq.h);
    q.h = new_qp(l->d, &q.c);
    q.qpn = HINDEX(q.h);
    loop_connect(l, &q, l->a.qpn);
    memcpy(&w, &b, sizeof(w));
    eng_post_send(l->d, &q, &w, NULL, 0);
    fr_expect(l, wr_id, RS_WR_BIND_MW, RS_WC_MW_BIND_ERR);
    g_assert_cmpuint(qp_state(l->d, q.h), ==, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DESTROY_QP, q.h));
}

/*
 * A window's rights are its own: a type 1 window with atomic rights only
 * takes a FETCH_ADD (memory and result checked) and refuses a WRITE.  A
 * type 2B window belongs to its QP, not to the QP number: once the QP is
 * destroyed, a new QP in the same slot (the same QP number, another
 * generation) does not inherit it, and the MR stays held until the
 * window is deallocated.
 */
static void test_mw_rights_and_qp_slot(Loop *l, uint32_t mr, uint64_t base)
{
    QTestState *qts = qrs_qts(l->d);
    uint32_t mw, k, qpn;
    LoopQp p1, p2, p3;

    loop_reconnect(l);
    mw = mw_alloc(l->d, l->pd, RS_MW_TYPE_1);
    k = mw_next(mw);
    mw_post_bind(l->d, &l->b, 0xe1, mw, k, mr, base + 2 * PAGE, 64,
                 RS_ACCESS_REMOTE_ATOMIC);
    fr_expect(l, 0xe1, RS_WR_BIND_MW, RS_WC_SUCCESS);
    qtest_writeq(qts, base + 2 * PAGE + 8, 1000);
    fill(l->d, l->src, 0xee, 64);
    loop_atomic(l, 0xe2, RS_WR_ATOMIC_FETCH_ADD, base + 2 * PAGE + 8, k, 5,
                0, l->src, 8);
    fr_expect(l, 0xe2, RS_WR_ATOMIC_FETCH_ADD, RS_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(qts, base + 2 * PAGE + 8), ==, 1005);
    g_assert_cmpuint(qtest_readq(qts, l->src), ==, 1000);
    fill(l->d, base + 2 * PAGE, 0xee, 8);
    loop_post_op(l, &l->a, 0xe3, RS_WR_RDMA_WRITE, 0, base + 2 * PAGE, k,
                 l->src, 8, l->src_key);
    fr_expect(l, 0xe3, 0, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l->d, base + 2 * PAGE, 0xee, 8));
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DEALLOC_MW, k));

    /* p1 -> p2; the window bound on p2; p2 replaced by p3. */
    memset(&p1, 0, sizeof(p1));
    memset(&p2, 0, sizeof(p2));
    memset(&p3, 0, sizeof(p3));
    qp_template(l->d, &p1.c, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    qp_template(l->d, &p2.c, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    p1.h = new_qp(l->d, &p1.c);
    p2.h = new_qp(l->d, &p2.c);
    p1.qpn = HINDEX(p1.h);
    p2.qpn = HINDEX(p2.h);
    loop_connect(l, &p1, p2.qpn);
    loop_connect(l, &p2, p1.qpn);
    mw = mw_alloc(l->d, l->pd, RS_MW_TYPE_2);
    k = mw_next(mw);
    mw_post_bind(l->d, &p2, 0xe4, mw, k, mr, base, PAGE, MW_RW);
    fr_expect(l, 0xe4, RS_WR_BIND_MW, RS_WC_SUCCESS);
    qpn = p2.qpn;
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DESTROY_QP, p2.h));
    qp_template(l->d, &p3.c, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    p3.h = new_qp(l->d, &p3.c);
    p3.qpn = HINDEX(p3.h);
    g_assert_cmpuint(p3.qpn, ==, qpn);
    g_assert_cmphex(p3.h, !=, p2.h);
    loop_connect(l, &p3, p1.qpn);
    fill(l->d, base, 0xee, PAGE);
    loop_post_op(l, &p1, 0xe5, RS_WR_RDMA_WRITE, 0, base + 8, k, l->src, 8,
                 l->src_key);
    fr_expect(l, 0xe5, 0, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l->d, base, 0xee, PAGE));
    RS_ASSERT_STATUS(qrs_destroy(l->d, RS_CMD_DEREG_MR, mr), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DEALLOC_MW, k));
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DEREG_MR, mr));
}

/*
 * The IBTA protection rules of a bind, each refused with
 * RS_WC_MW_BIND_ERR (the QP fails); then local invalidation, a window's
 * key as an lkey, and access after a local invalidation (memory
 * untouched).
 */
static void test_mw_bad_bind(void *obj, void *data, QGuestAllocator *alloc)
{
    Loop l;
    uint32_t pd2, mr, mr2, mr_nobind, mr_ro, mw1, mw2, mwx, k;
    uint64_t base;

    loop_setup(&l, obj);
    pd2 = new_pd(l.d);
    base = l.dst;
    mr = loop_mr_access(&l, base, LOOP_BUF, STD_ACCESS | RS_ACCESS_MW_BIND);
    mr2 = eng_mr(l.d, pd2, 0, base, LOOP_BUF,
                 STD_ACCESS | RS_ACCESS_MW_BIND);
    mr_nobind = loop_mr_access(&l, base, LOOP_BUF, STD_ACCESS);
    mr_ro = loop_mr_access(&l, base, LOOP_BUF,
                           RS_ACCESS_REMOTE_READ | RS_ACCESS_MW_BIND);
    mw1 = mw_alloc(l.d, l.pd, RS_MW_TYPE_1);
    mw2 = mw_alloc(l.d, l.pd, RS_MW_TYPE_2);
    mwx = mw_alloc(l.d, pd2, RS_MW_TYPE_2);

    /* C10-72: a window of another PD; an MR of another PD. */
    bind_fails(&l, l.pd, 0xc1, mwx, mw_next(mwx), mr, base, PAGE, MW_RW, 0);
    bind_fails(&l, l.pd, 0xc2, mw2, mw_next(mw2), mr2, base, PAGE, MW_RW, 0);
    bind_fails(&l, l.pd, 0xc3, mw1, mw_next(mw1), mr2, base, PAGE, MW_RW, 0);
    /* C10-75: beyond the MR, before it, wrapping. */
    bind_fails(&l, l.pd, 0xc4, mw2, mw_next(mw2), mr, base + LOOP_BUF - 16,
               32, MW_RW, 0);
    bind_fails(&l, l.pd, 0xc5, mw1, mw_next(mw1), mr, base - 16, 32,
               MW_RW, 0);
    bind_fails(&l, l.pd, 0xc6, mw2, mw_next(mw2), mr, base + 16,
               ~0ull - 8, MW_RW, 0);
    /* C10-73: the MR lacks MW_BIND. */
    bind_fails(&l, l.pd, 0xc7, mw2, mw_next(mw2), mr_nobind, base, PAGE,
               RS_ACCESS_REMOTE_READ, 0);
    /* C10-74: remote write or atomic on an MR without local write. */
    bind_fails(&l, l.pd, 0xc8, mw2, mw_next(mw2), mr_ro, base, PAGE,
               RS_ACCESS_REMOTE_WRITE, 0);
    bind_fails(&l, l.pd, 0xc9, mw1, mw_next(mw1), mr_ro, base, PAGE,
               RS_ACCESS_REMOTE_ATOMIC, 0);
    /* Rights a window cannot have (zero-based is not offered). */
    bind_fails(&l, l.pd, 0xca, mw2, mw_next(mw2), mr, base, PAGE,
               RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_READ, 0);
    bind_fails(&l, l.pd, 0xcb, mw2, mw_next(mw2), mr, base, PAGE,
               RS_ACCESS_MW_BIND, 0);
    bind_fails(&l, l.pd, 0xcc, mw2, mw_next(mw2), mr, base, PAGE, 0x80, 0);
    /* o10-37.2.40: a type 2 window is never bound to nothing. */
    bind_fails(&l, l.pd, 0xcd, mw2, mw_next(mw2), mr, base, 0, MW_RW, 0);
    /* Keys: stale tag, another index, an MR, a window as the MR. */
    bind_fails(&l, l.pd, 0xce, mw_next(mw2), mw_next(mw2), mr, base, PAGE,
               MW_RW, 0);
    bind_fails(&l, l.pd, 0xcf, mw2, mw_next(mw1), mr, base, PAGE, MW_RW, 0);
    bind_fails(&l, l.pd, 0xd0, mr, mw_next(mr), mr, base, PAGE, MW_RW, 0);
    bind_fails(&l, l.pd, 0xd1, mw2, mw_next(mw2), mw1, base, PAGE, MW_RW, 0);
    bind_fails(&l, l.pd, 0xd2, mw2, mw_next(mw2), mr, base, PAGE, MW_RW,
               RS_WQE_F_INLINE);

    /* o10-37.2.30: a bound type 2 window does not bind again. */
    k = mw_next(mw2);
    mw_post_bind(l.d, &l.b, 0xd3, mw2, k, mr, base + PAGE, PAGE, MW_RW);
    fr_expect(&l, 0xd3, RS_WR_BIND_MW, RS_WC_SUCCESS);
    bind_fails(&l, l.pd, 0xd4, k, mw_next(k), mr, base, PAGE, MW_RW, 0);

    /* A window's key is no lkey. */
    loop_post_op(&l, &l.a, 0xd5, RS_WR_RDMA_WRITE, 0, base + PAGE, k,
                 base + PAGE, 16, k);
    fr_expect(&l, 0xd5, 0, RS_WC_LOC_PROT_ERR);
    loop_reconnect(&l);

    /* Through the window from A to B's QP: fine. */
    loop_pattern(&l, l.src, 256, 0x12);
    loop_post_op(&l, &l.a, 0xd6, RS_WR_RDMA_WRITE, 0, base + PAGE + 8, k,
                 l.src, 256, l.src_key);
    fr_expect(&l, 0xd6, RS_WR_RDMA_WRITE, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, base + PAGE + 8, 256);
    /*
     * LOCAL_INV of the window on its QP; the window is Free and a WRITE
     * through it leaves memory alone.
     */
    loop_post_op(&l, &l.b, 0xd7, RS_WR_LOCAL_INV, k, 0, 0, 0, 0, 0);
    fr_expect(&l, 0xd7, RS_WR_LOCAL_INV, RS_WC_SUCCESS);
    fill(l.d, base, 0xee, LOOP_BUF);
    loop_post_op(&l, &l.a, 0xd8, RS_WR_RDMA_WRITE, 0, base + PAGE + 8, k,
                 l.src, 256, l.src_key);
    fr_expect(&l, 0xd8, 0, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, base, 0xee, LOOP_BUF));
    /* Invalidating it again fails. */
    loop_reconnect(&l);
    loop_post_op(&l, &l.b, 0xd9, RS_WR_LOCAL_INV, k, 0, 0, 0, 0, 0);
    fr_expect(&l, 0xd9, 0, RS_WC_LOC_PROT_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);

    /* BIND_MW on a UD QP is no operation of it. */
    {
        LoopQp u;
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xda, .opcode = RS_WR_BIND_MW,
            .flags = RS_WQE_F_SIGNALED, .imm_or_inv = mw1,
        };

        memset(&u, 0, sizeof(u));
        qp_template(l.d, &u.c, RS_QPT_UD, l.pd, l.cq.h, l.cq.h);
        u.h = new_qp(l.d, &u.c);
        u.qpn = HINDEX(u.h);
        qp_walk(l.d, u.h, RS_QPT_UD, RS_QPS_RTS);
        eng_post_send(l.d, &u, &w, NULL, 0);
        fr_expect(&l, 0xda, 0, RS_WC_LOC_QP_OP_ERR);
    }
    /*
     * A type 1 window of another PD, bound there, reaches nothing through
     * a QP of this PD: refused, memory untouched.
     */
    {
        LoopQp x;
        uint32_t mwx1 = mw_alloc(l.d, pd2, RS_MW_TYPE_1);
        uint32_t kx = mw_next(mwx1);

        memset(&x, 0, sizeof(x));
        qp_template(l.d, &x.c, RS_QPT_RC, pd2, l.cq.h, l.cq.h);
        x.h = new_qp(l.d, &x.c);
        x.qpn = HINDEX(x.h);
        loop_connect(&l, &x, l.a.qpn);
        mw_post_bind(l.d, &x, 0xdb, mwx1, kx, mr2, base, PAGE, MW_RW);
        fr_expect(&l, 0xdb, RS_WR_BIND_MW, RS_WC_SUCCESS);
        loop_reconnect(&l);
        fill(l.d, base, 0xee, LOOP_BUF);
        loop_post_op(&l, &l.a, 0xdc, RS_WR_RDMA_WRITE, 0, base + 8, kx,
                     l.src, 64, l.src_key);
        fr_expect(&l, 0xdc, 0, RS_WC_REM_ACCESS_ERR);
        g_assert_true(is_filled(l.d, base, 0xee, LOOP_BUF));
        RS_ASSERT_STATUS(qrs_destroy(l.d, RS_CMD_DEREG_MR, mr2),
                         RS_STATUS_BUSY);
        RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEALLOC_MW, mwx1));
        RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_QP, x.h));
    }
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEALLOC_MW, mwx));
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, mr2));
    test_mw_rights_and_qp_slot(&l, mr, base);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_PD, pd2));
    assert_alive(l.d);
}

/*
 * Windows across a migration: a bound type 2 and a bound type 1 window
 * move with the VM; on the destination A writes through both (data
 * checked), the MR is still held by them, and a remote invalidation of
 * the type 2 one refuses the next access.
 */
static void test_mw_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge ss, rs;
    struct rs_cqe cqe;
    LoopQp q[2];
    uint32_t mr, mw1, mw2, k1, k2;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    mr = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF,
                STD_ACCESS | RS_ACCESS_MW_BIND);
    mw1 = mw_alloc(b->d, b->pd, RS_MW_TYPE_1);
    mw2 = mw_alloc(b->d, b->pd, RS_MW_TYPE_2);
    k1 = mw_next(mw1);
    k2 = mw_next(mw2);
    mw_post_bind(b->d, &q[1], 0xb1, mw1, k1, mr, b->buf, 0x1000,
                 RS_ACCESS_REMOTE_WRITE);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_BIND_MW, q[1].qpn, 0);
    mw_post_bind(b->d, &q[1], 0xb2, mw2, k2, mr, b->buf + 0x4000, 0x1000,
                 MW_RW);
    pair_expect_cqe(&pr, 1, 0xb2, RS_WC_SUCCESS, RS_WR_BIND_MW, q[1].qpn, 0);

    pair_migrate(&pr);
    pair_release(&pr, 0);
    pair_release(&pr, 1);

    RS_ASSERT_STATUS(qrs_destroy(b->d, RS_CMD_DEREG_MR, mr), RS_STATUS_BUSY);
    peer_fill(a, 0x100, 0x200, 0x21);
    ss = peer_sge(a, 0x100, 0x200);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &ss, 1, b->buf + 0x10,
              k1, 0);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 0);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &ss, 1,
              b->buf + 0x4e00, k2, 0);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 0);
    img_move(b, 0x10, a, 0x100, 0x200);
    img_move(b, 0x4e00, a, 0x100, 0x200);
    peer_check(b);

    rs = peer_sge(b, 0x7000, 64);
    eng_post_recv(b->d, &q[1], 0xb3, &rs, 1);
    ss = peer_sge(a, 0x100, 16);
    pair_post(&pr, 0, &q[0], RS_WR_SEND_INV, 0xa3, &ss, 1, 0, 0, k2);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb3, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmphex(cqe.imm_or_inv, ==, k2);
    pair_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_SEND_INV, q[0].qpn, 0);
    img_move(b, 0x7000, a, 0x100, 16);
    pair_write_refused(&pr, q, 0xa4, b->buf + 0x4e00, k2);
    pair_teardown(&pr);
}

/*
 * A stream whose window state is wrong fails the incoming migration
 * cleanly: the window's subsection (type, MR, QP) or its range patched
 * into something its MR does not allow.  The stream as saved loads.
 */
static void test_mw_corrupt_stream(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    static const char sub_name[] = "\x05\x12rdma-session/mr/mw";
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mw-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *bad = g_strdup_printf("%s/bad", tmpdir);
    g_autofree uint8_t *stream = NULL;
    uint32_t mr, mw, k;
    uint8_t needle[16];
    size_t sub, len_off;
    char *err = NULL;
    gsize len;
    Loop l;
    int i;

    loop_setup(&l, obj);
    mr = loop_mr_access(&l, l.dst, LOOP_BUF, STD_ACCESS | RS_ACCESS_MW_BIND);
    mw = mw_alloc(l.d, l.pd, RS_MW_TYPE_1);
    k = mw_next(mw);
    mw_post_bind(l.d, &l.b, 0xf1, mw, k, mr, l.dst + 0x123, 0x345, MW_RW);
    fr_expect(&l, 0xf1, RS_WR_BIND_MW, RS_WC_SUCCESS);
    mig_save(qrs_qts(l.d), path);
    g_assert_true(g_file_get_contents(path, (gchar **)&stream, &len, NULL));

    /*
     * The window's iova and length (big endian), and its subsection:
     * marker, name length, name, version (4), type, MR index, QP handle.
     */
    stq_be_p(needle, l.dst + 0x123);
    stq_be_p(needle + 8, 0x345);
    len_off = mig_find(stream, len, needle, 16) + 8;
    sub = mig_find(stream, len, (const uint8_t *)sub_name,
                   sizeof(sub_name) - 1) + sizeof(sub_name) - 1 + 4;
    g_assert_cmpuint(stream[sub], ==, RS_MW_TYPE_1);
    g_assert_cmpuint(ldl_be_p(stream + sub + 1), ==,
                     mr >> RS_MKEY_INDEX_SHIFT);
    g_assert_cmpuint(ldl_be_p(stream + sub + 5), ==, 0);

    for (i = 0; i < 5; i++) {
        static const char *const what[] = {
            "window type 3", "window bound to no MR",
            "window bound to a window", "type 1 window with a QP",
            "window beyond its MR",
        };
        g_autofree uint8_t *copy = g_memdup2(stream, len);

        g_test_message("corrupt stream: %s", what[i]);
        switch (i) {
        case 0:
            copy[sub] = 3;
            break;
        case 1:
            stl_be_p(copy + sub + 1, 0xffffff);
            break;
        case 2:
            stl_be_p(copy + sub + 1, k >> RS_MKEY_INDEX_SHIFT);
            break;
        case 3:
            stl_be_p(copy + sub + 5, 1);
            break;
        default:
            stl_be_p(copy + len_off + 4, LOOP_BUF);
            break;
        }
        g_assert_true(g_file_set_contents(bad, (gchar *)copy, len, NULL));
        g_assert_false(mig_load(bad, &err));
        g_test_message("destination: %s", err);
        g_free(err);
    }
    g_assert_true(mig_load(path, &err));
    g_free(err);
    unlink(bad);
    unlink(path);
    rmdir(tmpdir);
}

static void register_mw_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };

    qos_add_test("mw/alloc", "rdma-session", test_mw_alloc, NULL);
    qos_add_test("mw/bad-bind", "rdma-session", test_mw_bad_bind, NULL);
    rs_add_standalone_test("mw/type2", test_mw_type2, &pair);
    rs_add_standalone_test("mw/type1", test_mw_type1, &pair);
    rs_add_standalone_test("mw/migrate", test_mw_migrate, &pair);
    rs_add_standalone_test("mw/corrupt-stream", test_mw_corrupt_stream, NULL);
}

libqos_init(register_mw_tests);
