/*
 * rdma-session qtests: the objects' success paths (PD, CQ, QP, MR, AH,
 * session, GID, SRQ)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

static uint8_t qp_types[] = { RS_QPT_RC, RS_QPT_UC, RS_QPT_UD, RS_QPT_GSI };

static void test_pd(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    uint32_t pd[3], h, h2;
    int i;

    for (i = 0; i < 3; i++) {
        pd[i] = new_pd(d);
        g_assert_cmphex(pd[i], ==, HANDLE(0, i + 1));
    }
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[1]));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[1]),
                     RS_STATUS_BAD_HANDLE);

    /* Lowest free index, next generation; the old handle stays dead. */
    h = new_pd(d);
    g_assert_cmphex(h, ==, HANDLE(1, 2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[1]),
                     RS_STATUS_BAD_HANDLE);
    h2 = new_pd(d);
    g_assert_cmphex(h2, ==, HANDLE(0, 4));

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[0]));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[2]));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, 0),
                     RS_STATUS_BAD_HANDLE);

    /* The generation of slot 1 counts frees modulo 256. */
    for (i = 1; i <= 256; i++) {
        h = new_pd(d);
        g_assert_cmphex(h, ==, HANDLE(i & 0xff, 1));
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h));
    }
    assert_alive(d);
}

static void test_cq(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    uint64_t r1 = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 1);
    uint64_t r2 = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << RS_MAX_CQ_LOG);
    uint64_t r3 = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 6);
    uint32_t h1, h2, h3;

    RS_ASSERT_OK(qrs_create_cq(d, r1, 1, 0, 0, &h1));
    g_assert_cmphex(h1, ==, HANDLE(0, 1));
    RS_ASSERT_OK(qrs_create_cq(d, r2, RS_MAX_CQ_LOG, DEF_COMP_VECTORS - 1,
                               DEF_DB_PAGES - 1, &h2));
    g_assert_cmphex(h2, ==, HANDLE(0, 2));

    /* Resize up, down and back, with nothing to carry over. */
    RS_ASSERT_OK(qrs_resize_cq(d, h1, r3, 6, 0));
    RS_ASSERT_OK(qrs_resize_cq(d, h1, r1, 1, 0));
    RS_ASSERT_OK(qrs_resize_cq(d, h2, r3, 6, 0));
    RS_ASSERT_OK(qrs_resize_cq(d, h2, r2, RS_MAX_CQ_LOG, 0));

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, h1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, h1),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_resize_cq(d, h1, r3, 6, 0), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_create_cq(d, r1, 1, 0, 0, &h3));
    g_assert_cmphex(h3, ==, HANDLE(1, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, h3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, h2));
    assert_alive(d);
}

static void assert_ah_equal(const struct rs_ah_attr *a,
                            const struct rs_ah_attr *b)
{
    g_assert_cmpmem(a->dgid, 16, b->dgid, 16);
    g_assert_cmpmem(a->dmac, 6, b->dmac, 6);
    g_assert_cmpuint(a->hop_limit, ==, b->hop_limit);
    g_assert_cmpuint(a->traffic_class, ==, b->traffic_class);
    g_assert_cmphex(a->flow_label, ==, b->flow_label);
    g_assert_cmpuint(a->gid_index, ==, b->gid_index);
}

/*
 * A new QP from RESET to RTR, through RESET -> RESET and INIT -> INIT, with
 * boundary values: each transition's attributes read back.
 */
static void qp_check_to_rtr(QRdmaSession *d, uint32_t qp, uint8_t type)
{
    bool rc = type == RS_QPT_RC, uc = type == RS_QPT_UC;
    bool gsi = type == RS_QPT_GSI, connected = rc || uc;
    struct rs_qp_attr a, q;
    uint32_t mask;

    /* RESET -> RESET */
    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_RESET);

    /* RESET -> INIT */
    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    a.access_flags = rc ? RS_ACCESS_ALL :
                     RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE;
    a.qkey = 0x80010000;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a,
                               std_mask(type, RS_QPS_RESET, RS_QPS_INIT)));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_INIT);
    g_assert_cmpuint(q.cur_qp_state, ==, RS_QPS_INIT);
    g_assert_cmpuint(q.qp_type, ==, type);
    if (connected) {
        g_assert_cmpuint(q.port_num, ==, 1);
        g_assert_cmpuint(q.pkey_index, ==, 0);
        g_assert_cmphex(q.access_flags, ==, a.access_flags);
    } else {
        g_assert_cmphex(q.qkey, ==, 0x80010000);
        g_assert_cmpuint(q.pkey_index, ==, 0);
        if (!gsi) {
            g_assert_cmpuint(q.port_num, ==, 1);
        }
    }

    /* INIT -> INIT: optional attributes only, STATE left out. */
    if (connected) {
        a.access_flags = RS_ACCESS_LOCAL_WRITE;
        mask = RS_QP_ATTR_ACCESS_FLAGS;
    } else {
        a.qkey = 0x22222222;
        mask = RS_QP_ATTR_QKEY;
    }
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, mask));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_INIT);
    if (connected) {
        g_assert_cmphex(q.access_flags, ==, RS_ACCESS_LOCAL_WRITE);
    } else {
        g_assert_cmphex(q.qkey, ==, 0x22222222);
    }

    /* INIT -> RTR, boundary values */
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.path_mtu = RS_MTU_4096;
    a.dest_qp_num = 0xffffff;
    a.rq_psn = 0xffffff;
    a.max_dest_rd_atomic = RS_MAX_RD_ATOMIC;
    a.min_rnr_timer = 31;
    a.ah.flow_label = 0xfffff;
    a.ah.hop_limit = 255;
    a.ah.traffic_class = 0xb8;
    a.qkey = 0x33333333;
    mask = std_mask(type, RS_QPS_INIT, RS_QPS_RTR);
    if (!connected) {
        mask |= RS_QP_ATTR_QKEY;
    }
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, mask));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RTR);
    g_assert_cmpuint(q.cur_qp_state, ==, RS_QPS_RTR);
    if (connected) {
        g_assert_cmpuint(q.path_mtu, ==, RS_MTU_4096);
        g_assert_cmphex(q.dest_qp_num, ==, 0xffffff);
        g_assert_cmphex(q.rq_psn, ==, 0xffffff);
        assert_ah_equal(&q.ah, &a.ah);
    } else {
        g_assert_cmphex(q.qkey, ==, 0x33333333);
    }
    if (rc) {
        g_assert_cmpuint(q.max_dest_rd_atomic, ==, RS_MAX_RD_ATOMIC);
        g_assert_cmpuint(q.min_rnr_timer, ==, 31);
    }
}

/*
 * RTR -> RTS -> RTS -> SQD -> SQD -> RTS with optional attributes; the
 * earlier transitions' attributes are kept.
 */
static void qp_check_rts_sqd(QRdmaSession *d, uint32_t qp, uint8_t type)
{
    bool rc = type == RS_QPT_RC, uc = type == RS_QPT_UC;
    bool connected = rc || uc;
    struct rs_qp_attr a, q;
    uint32_t mask;

    /* RTR -> RTS, with the optional CUR_STATE */
    std_attr(&a, RS_QPS_RTR, RS_QPS_RTS);
    a.sq_psn = 0xfffffe;
    a.timeout = 31;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = RS_MAX_RD_ATOMIC;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a,
                               std_mask(type, RS_QPS_RTR, RS_QPS_RTS) |
                               RS_QP_ATTR_CUR_STATE));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RTS);
    g_assert_cmpuint(q.cur_qp_state, ==, RS_QPS_RTS);
    g_assert_cmphex(q.sq_psn, ==, 0xfffffe);
    if (rc) {
        g_assert_cmpuint(q.timeout, ==, 31);
        g_assert_cmpuint(q.retry_cnt, ==, 7);
        g_assert_cmpuint(q.rnr_retry, ==, 7);
        g_assert_cmpuint(q.max_rd_atomic, ==, RS_MAX_RD_ATOMIC);
        g_assert_cmpuint(q.min_rnr_timer, ==, 31);
    }
    if (connected) {
        /* Attributes of earlier transitions are kept. */
        g_assert_cmphex(q.rq_psn, ==, 0xffffff);
        g_assert_cmphex(q.dest_qp_num, ==, 0xffffff);
        g_assert_cmphex(q.access_flags, ==, RS_ACCESS_LOCAL_WRITE);
        g_assert_cmpuint(q.path_mtu, ==, RS_MTU_4096);
    }

    /* RTS -> RTS */
    std_attr(&a, RS_QPS_RTS, RS_QPS_RTS);
    if (rc) {
        a.min_rnr_timer = 5;
        mask = RS_QP_ATTR_MIN_RNR_TIMER;
    } else if (uc) {
        a.access_flags = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE;
        mask = RS_QP_ATTR_ACCESS_FLAGS;
    } else {
        a.qkey = 0x44444444;
        mask = RS_QP_ATTR_QKEY;
    }
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE | mask));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RTS);
    if (rc) {
        g_assert_cmpuint(q.min_rnr_timer, ==, 5);
    } else if (uc) {
        g_assert_cmphex(q.access_flags, ==,
                        RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    } else {
        g_assert_cmphex(q.qkey, ==, 0x44444444);
    }

    /* RTS -> SQD with async notification, SQD -> SQD, SQD -> RTS */
    std_attr(&a, RS_QPS_RTS, RS_QPS_SQD);
    a.en_sqd_async_notify = 1;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_SQD);
    g_assert_cmpuint(q.en_sqd_async_notify, ==, 1);

    std_attr(&a, RS_QPS_SQD, RS_QPS_SQD);
    if (rc) {
        a.timeout = 20;
        mask = RS_QP_ATTR_TIMEOUT;
    } else if (uc) {
        mask = 0;
    } else {
        a.qkey = 0x55555555;
        mask = RS_QP_ATTR_QKEY;
    }
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE | mask));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_SQD);
    if (rc) {
        g_assert_cmpuint(q.timeout, ==, 20);
    } else if (!uc) {
        g_assert_cmphex(q.qkey, ==, 0x55555555);
    }

    std_attr(&a, RS_QPS_SQD, RS_QPS_RTS);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_RTS);
}

static void test_qp(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t type = *(uint8_t *)data;
    bool gsi = type == RS_QPT_GSI;
    uint32_t first = gsi ? RS_GSI_QPN : 2;
    QRdmaSession *d = admin_setup(obj);
    struct rs_cmd_create_qp c;
    struct rs_qp_attr a, q;
    uint32_t pd, scq, rcq, qp, qpn, h, h2;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    scq = new_cq(d, 4);
    rcq = new_cq(d, 5);

    /* Largest SGE and inline sizes, last doorbell page. */
    qp_template(d, &c, type, pd, scq, rcq);
    c.max_send_sge = RS_MAX_SGE;
    c.max_recv_sge = RS_MAX_SGE;
    c.max_inline = RS_MAX_INLINE;
    c.sq_log_size = 1;
    c.rq_log_size = 3;
    c.uar = DEF_DB_PAGES - 1;
    c.flags = RS_QP_F_SIGNAL_ALL;
    g_assert_cmpuint(qrs_qp_sq_bytes(&c), ==, 512 << 1);
    g_assert_cmpuint(qrs_qp_rq_bytes(&c), ==, 512 << 3);
    c.sq_addr = qrs_alloc_zeroed(d, qrs_qp_sq_bytes(&c));
    c.rq_addr = qrs_alloc_zeroed(d, qrs_qp_rq_bytes(&c));
    RS_ASSERT_OK(qrs_create_qp(d, &c, &qp, &qpn));
    g_assert_cmphex(qp, ==, HANDLE(0, first));
    g_assert_cmpuint(qpn, ==, first);

    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RESET);
    g_assert_cmpuint(q.cur_qp_state, ==, RS_QPS_RESET);
    g_assert_cmpuint(q.qp_type, ==, type);

    qp_check_to_rtr(d, qp, type);
    qp_check_rts_sqd(d, qp, type);

    /* RTS -> ERR -> RESET -> INIT */
    std_attr(&a, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_ERR);
    std_attr(&a, RS_QPS_ERR, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_ERR);
    std_attr(&a, RS_QPS_ERR, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_RESET);
    qp_walk(d, qp, type, RS_QPS_INIT);
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_INIT);

    /* The QP holds its PD and CQs. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, scq), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, rcq), RS_STATUS_BUSY);

    /* Destroy; the handle dies, the slot returns with the next gen. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp));
    RS_ASSERT_STATUS(qrs_query_qp(d, qp, &q), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_QP, qp),
                     RS_STATUS_BAD_HANDLE);
    h = new_qp(d, &c);
    g_assert_cmphex(h, ==, HANDLE(1, first));
    if (gsi) {
        RS_ASSERT_STATUS(qrs_create_qp(d, &c, &h2, NULL), RS_STATUS_EXISTS);
        qp_template(d, &c, RS_QPT_RC, pd, scq, rcq);
        h2 = new_qp(d, &c);
        g_assert_cmphex(h2, ==, HANDLE(0, 2));
    } else {
        h2 = new_qp(d, &c);
        g_assert_cmphex(h2, ==, HANDLE(0, 3));
    }
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, h));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, h2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, scq));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, rcq));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

static void test_mr(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    uint64_t buf = qrs_alloc_zeroed(d, 3 * PAGE);
    uint64_t big = guest_alloc(alloc, 4 * MiB);
    uint64_t big_aligned = ROUND_UP(big, 2 * MiB);
    uint64_t many = guest_alloc(alloc, 600 * PAGE);
    struct rs_cmd_reg_mr c = { 0 }, c2, c3, c4, c5;
    uint32_t pd, k1, k2, k3, k4, k5, k1b;
    int i;

    g_assert(big && many);
    add_gid_v4(d, 0, 1);
    add_gid_v4(d, 1, 2);
    pd = new_pd(d);

    /* Direct page list, three 4 KiB pages. */
    c.iova = 0x7f0000000000ull;
    c.length = 3 * PAGE;
    c.pbl_addr = make_pbl(d, buf, PAGE, 3);
    c.npages = 3;
    c.pd = pd;
    c.page_shift = 12;
    c.access = STD_ACCESS;
    c.gid_index = 0;
    k1 = reg_mr_ok(d, &c);
    g_assert_cmphex(k1 >> RS_MKEY_INDEX_SHIFT, ==, 1);

    /* IOVA in the middle of a page: two pages spanned. */
    c2 = c;
    c2.iova = 0x1800;
    c2.length = PAGE;
    c2.npages = 2;
    c2.access = RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT;
    c2.gid_index = 1;
    k2 = reg_mr_ok(d, &c2);
    g_assert_cmphex(k2 >> RS_MKEY_INDEX_SHIFT, ==, 2);

    /* Local read only, one byte. */
    c3 = c;
    c3.length = 1;
    c3.npages = 1;
    c3.access = 0;
    k3 = reg_mr_ok(d, &c3);
    g_assert_cmphex(k3 >> RS_MKEY_INDEX_SHIFT, ==, 3);

    /* 2 MiB pages. */
    c4 = c;
    c4.iova = 0x40000000;
    c4.length = 2 * MiB;
    c4.npages = 1;
    c4.page_shift = 21;
    c4.pbl_addr = make_pbl(d, big_aligned, 2 * MiB, 1);
    k4 = reg_mr_ok(d, &c4);
    g_assert_cmphex(k4 >> RS_MKEY_INDEX_SHIFT, ==, 4);

    /* Indirect page list: 600 pages in two chunks. */
    c5 = c;
    c5.iova = 0;
    c5.length = 600 * PAGE;
    c5.npages = 600;
    c5.flags = RS_MR_F_PBL_INDIRECT;
    c5.pbl_addr = make_indirect_pbl(d, many, 600);
    k5 = reg_mr_ok(d, &c5);
    g_assert_cmphex(k5 >> RS_MKEY_INDEX_SHIFT, ==, 5);

    /* The MRs hold their PD and GIDs. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 1), RS_STATUS_BUSY);

    /* Re-registering a slot gives a new tag; the old key is dead. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, k1),
                     RS_STATUS_BAD_HANDLE);
    k1b = reg_mr_ok(d, &c);
    g_assert_cmphex(k1b >> RS_MKEY_INDEX_SHIFT, ==, 1);
    g_assert_cmphex(k1b & RS_MKEY_TAG_MASK, ==,
                    (k1 + 1) & RS_MKEY_TAG_MASK);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, k1),
                     RS_STATUS_BAD_HANDLE);

    /* The tag counts registrations of the slot modulo 256. */
    for (i = 1; i <= 256; i++) {
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1b));
        k1b = reg_mr_ok(d, &c3);
        g_assert_cmphex(k1b, ==, (1 << RS_MKEY_INDEX_SHIFT) |
                        ((k1 + 1 + i) & RS_MKEY_TAG_MASK));
    }

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1b));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k4));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k5));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

static void test_ah(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_cmd_create_ah c;
    uint32_t pd, h1, h2, h3;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    ah_template(&c, pd, 0);
    RS_ASSERT_OK(qrs_create_ah(d, &c, &h1));
    g_assert_cmphex(h1, ==, HANDLE(0, 1));
    c.flow_label = 0xfffff;
    c.traffic_class = 0xff;
    c.hop_limit = 255;
    RS_ASSERT_OK(qrs_create_ah(d, &c, &h2));
    g_assert_cmphex(h2, ==, HANDLE(0, 2));

    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 0), RS_STATUS_BUSY);

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, h1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_AH, h1),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_create_ah(d, &c, &h3));
    g_assert_cmphex(h3, ==, HANDLE(1, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, h2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, h3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 0));
    assert_alive(d);
}

/*
 * An RC QP created in group @g1, rebound to @g2 at RESET -> INIT, to a new
 * group *@g3 of s[0] and s[1] (in g1's slot, which the rebinding freed)
 * at RTR -> RTS and back to @g2 at RTS -> RTS; returns the QP.
 */
static uint32_t session_rebind_qp(QRdmaSession *d, uint32_t pd, uint32_t cq,
                                  uint32_t g1, uint32_t g2, const uint32_t *s,
                                  uint32_t *g3)
{
    struct rs_cmd_create_qp c;
    struct rs_qp_attr a, q;
    uint32_t qp;

    /* A QP created in a group; rebinding with MODIFY_QP. */
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    c.session_group = g1;
    qp = new_qp(d, &c);
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmphex(q.session_group, ==, g1);

    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    a.session_group = g2;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RC_INIT_MASK |
                               RS_QP_ATTR_SESSION_GROUP));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_INIT);
    g_assert_cmphex(q.session_group, ==, g2);
    /* g1 is no longer bound. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g1),
                     RS_STATUS_BAD_HANDLE);
    *g3 = new_group(d, RS_GROUP_ROUND_ROBIN, s[0], s[1]);
    g_assert_cmphex(*g3, ==, HANDLE(1, 1));

    /* INIT -> RTR -> RTS, rebinding to g3 on the way to RTS. */
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RC_RTR_MASK));
    std_attr(&a, RS_QPS_RTR, RS_QPS_RTS);
    a.session_group = *g3;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RC_RTS_MASK |
                               RS_QP_ATTR_SESSION_GROUP));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RTS);
    g_assert_cmphex(q.session_group, ==, *g3);
    /* RTS -> RTS back to g2. */
    std_attr(&a, RS_QPS_RTS, RS_QPS_RTS);
    a.session_group = g2;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_SESSION_GROUP));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmphex(q.session_group, ==, g2);
    return qp;
}

static void test_session(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_cmd_create_session_group gc = { 0 };
    struct rs_cmd_create_session sc;
    struct rs_cmd_create_qp c;
    struct rs_qp_attr a, q;
    uint32_t s[RS_MAX_GROUP_SESSIONS], g1, g2, g3, pd, cq, qp, ud, h;
    int i;

    add_gid_v4(d, 0, 1);
    add_gid_v4(d, 1, 2);
    for (i = 0; i < RS_MAX_GROUP_SESSIONS; i++) {
        s[i] = new_session(d, 0, 49152 + i);
        g_assert_cmphex(s[i], ==, HANDLE(0, i + 1));
    }

    /* Group of the largest size, and two small ones. */
    memcpy(gc.session, s, sizeof(s));
    gc.nsessions = RS_MAX_GROUP_SESSIONS;
    gc.policy = RS_GROUP_ROUND_ROBIN;
    RS_ASSERT_OK(qrs_create_session_group(d, &gc, &g1));
    g_assert_cmphex(g1, ==, HANDLE(0, 1));
    h = new_session(d, 1, 1024);
    g_assert_cmphex(h, ==, HANDLE(0, 9));
    g2 = new_group(d, RS_GROUP_ACTIVE_BACKUP, h, 0);
    g_assert_cmphex(g2, ==, HANDLE(0, 2));

    pd = new_pd(d);
    cq = new_cq(d, 4);
    qp = session_rebind_qp(d, pd, cq, g1, g2, s, &g3);

    /* A UD QP bound at RESET -> INIT. */
    qp_template(d, &c, RS_QPT_UD, pd, cq, cq);
    ud = new_qp(d, &c);
    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    a.session_group = g3;
    RS_ASSERT_OK(qrs_modify_qp(d, ud, &a, UD_INIT_MASK |
                               RS_QP_ATTR_SESSION_GROUP));
    RS_ASSERT_OK(qrs_query_qp(d, ud, &q));
    g_assert_cmphex(q.session_group, ==, g3);

    /* References: group bound to a QP, session member of a group. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g2),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g3),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, h),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s[0]),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 1), RS_STATUS_BUSY);
    /* s[2] was only in g1, which is gone. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s[2]));

    /* The same tuple can be created again once destroyed. */
    session_template(&sc, 0, 49152 + 2);
    RS_ASSERT_OK(qrs_create_session(d, &sc, &s[2]));
    g_assert_cmphex(s[2], ==, HANDLE(1, 3));

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g3),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, ud));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, h));
    for (i = 0; i < RS_MAX_GROUP_SESSIONS; i++) {
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s[i]));
    }
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s[0]),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 0));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, cq));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

static void test_gid(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_cmd_add_gid g = { 0 };
    struct rs_cmd_create_qp c;
    struct rs_qp_attr a;
    uint32_t index, pd, cq, qp;

    gid_v4(g.gid, 192, 168, 1, 1);
    g.index = 0;
    g.type = RS_GID_ROCE_V2_IPV4;
    RS_ASSERT_OK(qrs_add_gid(d, &g, &index));
    g_assert_cmpuint(index, ==, 0);

    /* IPv6 GID in the last slot with the largest VNI. */
    memset(g.gid, 0, sizeof(g.gid));
    g.gid[0] = 0xfd;
    g.gid[15] = 1;
    g.index = DEF_MAX_GIDS - 1;
    g.type = RS_GID_ROCE_V2_IPV6;
    g.vni = 0xffffff;
    RS_ASSERT_OK(qrs_add_gid(d, &g, &index));
    g_assert_cmpuint(index, ==, DEF_MAX_GIDS - 1);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, DEF_MAX_GIDS - 1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, DEF_MAX_GIDS - 1),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_add_gid(d, &g, &index));
    g_assert_cmpuint(index, ==, DEF_MAX_GIDS - 1);

    /* A QP's address vector holds its source GID. */
    pd = new_pd(d);
    cq = new_cq(d, 4);
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    qp = new_qp(d, &c);
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_INIT);
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.ah.gid_index = DEF_MAX_GIDS - 1;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RC_RTR_MASK));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, DEF_MAX_GIDS - 1),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, DEF_MAX_GIDS - 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 0));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 0), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, cq));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

/*
 * A CQ of the largest size, filled past capacity without polling: the
 * CQE that finds it full raises RS_EV_CQ_ERR and overwrites nothing.
 * Flushing QPs in ERR makes the CQEs: each QP's receive queue, then its
 * send queue, WQE i of the whole sequence completing with wr_id i.
 */
static void cq_full_post(QRdmaSession *d, uint64_t ring, uint32_t reg,
                         uint32_t qpn, uint32_t stride, uint32_t n,
                         uint32_t first)
{
    g_autofree uint8_t *buf = g_malloc0((size_t)stride * n);
    uint32_t i;

    for (i = 0; i < n; i++) {
        uint8_t *wqe = buf + (size_t)i * stride;

        stq_le_p(wqe, first + i);      /* wr_id leads both WQE kinds */
        if (reg == RS_DB_SQ) {
            wqe[offsetof(struct rs_send_wqe_ctrl, opcode)] = RS_WR_SEND;
        }
    }
    qtest_bufwrite(qrs_qts(d), ring, buf, (size_t)stride * n);
    qrs_db_writel(d, 0, reg, qpn | (n & 0xffff) << 16);
}

/* Wait until the CQE in slot @index has the first lap's owner bit. */
static void cq_full_wait(QRdmaSession *d, uint64_t ring, uint32_t index)
{
    int64_t end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    uint64_t owner = ring + (uint64_t)index * sizeof(struct rs_cqe) +
                     offsetof(struct rs_cqe, owner);

    while (!(qtest_readb(qrs_qts(d), owner) & RS_CQE_OWNER)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

static void test_cq_full_max(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    const uint32_t cap = 1u << RS_MAX_CQ_LOG, wq = 1u << RS_MAX_WQ_LOG;
    const uint32_t total = cap + 1;
    const size_t ring_len = (size_t)sizeof(struct rs_cqe) << RS_MAX_CQ_LOG;
    uint64_t ring = qrs_alloc_zeroed(d, ring_len);
    g_autofree struct rs_cqe *cqes = g_malloc(ring_len);
    uint32_t pd = new_pd(d), cq = 0, done = 0, i;
    int64_t end;
    struct rs_event ev;
    bool got = false;

    RS_ASSERT_OK(qrs_create_cq(d, ring, RS_MAX_CQ_LOG, 0, 0, &cq));
    while (done < total) {
        struct rs_cmd_create_qp c = {
            .qp_type = RS_QPT_RC,
            .pd = pd,
            .send_cq = cq,
            .recv_cq = cq,
            .sq_log_size = RS_MAX_WQ_LOG,
            .rq_log_size = RS_MAX_WQ_LOG,
            .max_send_sge = 1,
            .max_recv_sge = 1,
        };
        uint32_t qp, n;

        c.sq_addr = qrs_alloc_zeroed(d, qrs_qp_sq_bytes(&c));
        c.rq_addr = qrs_alloc_zeroed(d, qrs_qp_rq_bytes(&c));
        qp = new_qp(d, &c);
        qp_walk(d, qp, RS_QPT_RC, RS_QPS_ERR);
        n = MIN(total - done, wq);
        cq_full_post(d, c.rq_addr, RS_DB_RQ, HINDEX(qp),
                     qrs_qp_rq_bytes(&c) >> RS_MAX_WQ_LOG, n, done);
        done += n;
        if (done <= cap) {
            cq_full_wait(d, ring, done - 1);
        }
        if (done < total) {
            n = MIN(total - done, wq);
            cq_full_post(d, c.sq_addr, RS_DB_SQ, HINDEX(qp),
                         qrs_qp_sq_bytes(&c) >> RS_MAX_WQ_LOG, n, done);
            done += n;
            if (done <= cap) {
                cq_full_wait(d, ring, done - 1);
            }
        }
    }

    /* The last CQE: an event, or (wrongly) slot 0 of the second lap. */
    end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    while (!got && g_get_monotonic_time() < end &&
           (qtest_readb(qrs_qts(d), ring + offsetof(struct rs_cqe, owner)) &
            RS_CQE_OWNER)) {
        got = qrs_aeq_poll(d, &ev, 10 * 1000);
    }
    qtest_bufread(qrs_qts(d), ring, cqes, ring_len);
    for (i = 0; i < cap; i++) {
        if (le64_to_cpu(cqes[i].wr_id) != i ||
            !(cqes[i].owner & RS_CQE_OWNER)) {
            g_error("CQE %u overwritten: wr_id %" PRIu64 " owner 0x%x", i,
                    (uint64_t)le64_to_cpu(cqes[i].wr_id), cqes[i].owner);
        }
    }
    g_assert_true(got);
    g_assert_cmpuint(ev.type, ==, RS_EV_CQ_ERR);
    g_assert_cmphex(ev.handle, ==, cq);
    g_assert_false(qrs_aeq_poll(d, &ev, 100 * 1000));
    assert_alive(d);
}

/* CREATE_SRQ with each bad field of the good command @c. */
static void srq_bad_create(QRdmaSession *d, const struct rs_cmd_create_srq *c,
                           uint32_t pd)
{
    struct rs_cmd_create_srq b;
    uint32_t h;

    b = *c;
    b.pd = HINDEX(pd) | 0x7f000000;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_HANDLE);
    b = *c;
    b.log_size = 0;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_SIZE);
    b.log_size = RS_MAX_WQ_LOG + 1;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_SIZE);
    b = *c;
    b.max_sge = 0;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
    b.max_sge = RS_MAX_SGE + 1;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
    b = *c;
    b.uar = DEF_DB_PAGES;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
    b = *c;
    b.rsvd0 = 1;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
    b = *c;
    b.ring_addr = 0;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_ADDR);
    b.ring_addr = c->ring_addr + 8;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_ALIGN);
    b.ring_addr = ram_end(d) - 64;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_ADDR);
    b = *c;
    b.srq_limit = 8;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
}

/*
 * MODIFY_SRQ of SRQ @srq (created from @c): bad handles, masks and
 * limits, then a resize that moves the posted WQEs.
 */
static void srq_modify_resize(QRdmaSession *d,
                              const struct rs_cmd_create_srq *c, uint32_t srq)
{
    uint64_t ring2;
    uint8_t wqe[64], wqe2[64];
    uint32_t moved, pi = 0;
    int i;

    /* MODIFY_SRQ: handles, mask, limit. */
    RS_ASSERT_STATUS(qrs_modify_srq(d, 0, RS_SRQ_ATTR_LIMIT, 1, 0, 0, NULL),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq + (1u << RS_HANDLE_GEN_SHIFT),
                                    RS_SRQ_ATTR_LIMIT, 1, 0, 0, NULL),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, 0, 1, 0, 0, NULL),
                     RS_STATUS_BAD_ATTR_MASK);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, 4, 1, 0, 0, NULL),
                     RS_STATUS_BAD_ATTR_MASK);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 8, 0, 0, NULL),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 7, 0, 0, NULL));
    RS_ASSERT_OK(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 0, 0, 0, NULL));

    /* Resize: the three posted WQEs move to the start of the new ring. */
    for (i = 0; i < 3; i++) {
        srq_post(d, c, srq, &pi, 0x50 + i, 0x1000 * i, 64, 0x100 + i);
    }
    ring2 = qrs_alloc_zeroed(d, (size_t)qrs_recv_stride(2) << 4);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR, 0, ring2, 1,
                                    NULL), RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR, 0,
                                    c->ring_addr + 64, 4, NULL),
                     RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR, 0, ring2 + 8, 4,
                                    NULL), RS_STATUS_BAD_ALIGN);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR |
                                    RS_SRQ_ATTR_LIMIT, 16, ring2, 4, NULL),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR | RS_SRQ_ATTR_LIMIT,
                                15, ring2, 4, &moved));
    g_assert_cmpuint(moved, ==, 3);
    for (i = 0; i < 3; i++) {
        qtest_memread(qrs_qts(d), c->ring_addr + i * qrs_recv_stride(2), wqe,
                      sizeof(wqe));
        qtest_memread(qrs_qts(d), ring2 + i * qrs_recv_stride(2), wqe2,
                      sizeof(wqe2));
        g_assert_cmpmem(wqe, sizeof(wqe), wqe2, sizeof(wqe2));
    }
    g_assert_true(is_filled(d, ring2 + 3 * qrs_recv_stride(2), 0,
                            13 * qrs_recv_stride(2)));
}

static void test_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_cmd_create_srq c;
    struct rs_cmd_create_qp q;
    uint32_t pd, pd2, cq, srq, h, qp;
    int i;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    pd2 = new_pd(d);
    cq = new_cq(d, 4);
    srq_template(d, &c, pd, 3, 2);
    c.srq_limit = 2;
    RS_ASSERT_OK(qrs_create_srq(d, &c, &srq));
    g_assert_cmpuint(HINDEX(srq), ==, 1);

    srq_bad_create(d, &c, pd);

    srq_modify_resize(d, &c, srq);

    /* QPs on the SRQ. */
    qp_template(d, &q, RS_QPT_RC, pd, cq, cq);
    q.srq = srq;
    q.rq_addr = 0;
    q.rq_log_size = 0;
    q.max_recv_sge = 0;
    qp = new_qp(d, &q);
    q.srq = srq + (1u << RS_HANDLE_GEN_SHIFT);
    RS_ASSERT_STATUS(qrs_create_qp(d, &q, &h, NULL), RS_STATUS_BAD_HANDLE);
    q.srq = srq;
    q.rq_addr = c.ring_addr;
    RS_ASSERT_STATUS(qrs_create_qp(d, &q, &h, NULL), RS_STATUS_BAD_PARAM);
    q.rq_addr = 0;
    q.qp_type = RS_QPT_GSI;
    RS_ASSERT_STATUS(qrs_create_qp(d, &q, &h, NULL), RS_STATUS_BAD_PARAM);
    q.qp_type = RS_QPT_UD;
    q.pd = pd2;
    RS_ASSERT_STATUS(qrs_create_qp(d, &q, &h, NULL), RS_STATUS_BAD_PD);
    q.pd = pd;
    h = new_qp(d, &q);                          /* UD on an SRQ is fine */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, h));

    /* BUSY while a QP uses it; its PD is busy too. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SRQ, srq), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SRQ, srq));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SRQ, srq),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SRQ, 0),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 1, 0, 0, NULL),
                     RS_STATUS_BAD_HANDLE);
    /* The slot comes back with a new generation. */
    RS_ASSERT_OK(qrs_create_srq(d, &c, &h));
    g_assert_cmphex(h, ==, srq + (1u << RS_HANDLE_GEN_SHIFT));

    /* The table holds max-srqs - 1. */
    for (i = 2; i < DEF_MAX_SRQS; i++) {
        RS_ASSERT_OK(qrs_create_srq(d, &c, &h));
    }
    RS_ASSERT_STATUS(qrs_create_srq(d, &c, &h), RS_STATUS_NO_RESOURCES);
    assert_alive(d);
}

static void register_objects_tests(void)
{
    QOSGraphTestOptions qp[ARRAY_SIZE(qp_types)];
    static const char *const qp_names[] = {
        "objects/qp-rc", "objects/qp-uc", "objects/qp-ud", "objects/qp-gsi",
    };
    int i;

    qos_add_test("objects/pd", "rdma-session", test_pd, NULL);
    qos_add_test("objects/cq", "rdma-session", test_cq, NULL);
    for (i = 0; i < ARRAY_SIZE(qp_types); i++) {
        qp[i] = (QOSGraphTestOptions) { .arg = &qp_types[i] };
        qos_add_test(qp_names[i], "rdma-session", test_qp, &qp[i]);
    }
    qos_add_test("objects/mr", "rdma-session", test_mr, NULL);
    qos_add_test("objects/ah", "rdma-session", test_ah, NULL);
    qos_add_test("objects/session", "rdma-session", test_session, NULL);
    qos_add_test("objects/gid", "rdma-session", test_gid, NULL);
    qos_add_test("objects/srq", "rdma-session", test_srq, NULL);
    qos_add_test("objects/cq-full-max", "rdma-session", test_cq_full_max, NULL);
}

libqos_init(register_objects_tests);
