/*
 * rdma-session qtests: what kernel consumers use (fast registration,
 * local invalidation, remote invalidation, UD address vectors by DMA
 * address)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

/* A spare RTS QP on @pd (doorbell page @uar) for one failing WQE. */
static void fr_spare_qp(Loop *l, LoopQp *q, uint32_t pd, uint32_t uar)
{
    memset(q, 0, sizeof(*q));
    qp_template(l->d, &q->c, RS_QPT_RC, pd, l->cq.h, l->cq.h);
    q->c.uar = uar;
    q->h = new_qp(l->d, &q->c);
    q->qpn = HINDEX(q->h);
    loop_connect(l, q, l->a.qpn);
}

/* Post one WQE on a fresh QP: it fails with @status, the QP goes to ERR. */
static void fr_fail_on_spare(Loop *l, uint32_t pd, uint32_t uar,
                             const struct rs_send_wqe_ctrl *w, uint8_t status)
{
    LoopQp q;

    fr_spare_qp(l, &q, pd, uar);
    if (uar) {
        /* A user QP rings its own doorbell page. */
        uint64_t slot = q.c.sq_addr;

        qtest_memwrite(qrs_qts(l->d), slot, w, sizeof(*w));
        q.sq_pi++;
        qrs_db_writel(l->d, uar, RS_DB_SQ, q.qpn | (q.sq_pi & 0xffff) << 16);
    } else {
        loop_post_send(l, &q, w, 0, 0, 0);
    }
    fr_expect(l, w->wr_id, w->opcode, status);
    g_assert_cmpuint(qp_state(l->d, q.h), ==, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DESTROY_QP, q.h));
}

/* QEMU logs the doorbell's trace event, to the file data names. */
static void *trace_doorbell_before(GString *cmd_line, void *arg)
{
    char *path = g_strdup_printf("%s/rs-doorbell-%d.log", g_get_tmp_dir(),
                                 getpid());

    unlink(path);
    g_string_append_printf(cmd_line, " -d trace:rdma_session_req_doorbell"
                           " -D %s ", path);
    g_test_queue_free(path);
    qos_invalidate_command_line();
    return path;
}

/*
 * One doorbell for 1000 fast registrations and invalidations: they count
 * against the doorbell's budget like packets, so the doorbell does a
 * budget of them and the requester's bottom half the rest, in order.
 */
static void test_engine_local_op_budget(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    g_autofree char *log = NULL;
    g_auto(GStrv) lines = NULL;
    unsigned rings = 0, used, more, qpn;
    char **line;
    const uint32_t n = 1000;
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    uint32_t key, i, stride;
    uint64_t pbl;
    LoopQp q;
    Loop l;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    memset(&q, 0, sizeof(q));
    qp_template(l.d, &q.c, RS_QPT_RC, l.pd, l.cq.h, l.cq.h);
    q.c.sq_log_size = 10;
    q.c.sq_addr = qrs_alloc_zeroed(l.d, qrs_qp_sq_bytes(&q.c));
    q.h = new_qp(l.d, &q.c);
    q.qpn = HINDEX(q.h);
    loop_connect(&l, &q, l.a.qpn);
    key = fr_alloc(&l, l.pd, 1);
    pbl = make_pbl(l.d, l.dst, PAGE, 1);
    stride = qrs_qp_sq_bytes(&q.c) >> q.c.sq_log_size;
    for (i = 0; i < n; i++) {
        struct rs_send_wqe_reg_mr f = {
            .wr_id = i, .opcode = RS_WR_REG_MR, .page_shift = 12,
            .key = key, .iova = FR_IOVA, .length = PAGE, .pbl_addr = pbl,
            .npages = 1, .access = RS_ACCESS_LOCAL_WRITE,
        };

        memcpy(&w, &f, sizeof(w));
        if (i & 1) {
            w = (struct rs_send_wqe_ctrl) {
                .wr_id = i, .opcode = RS_WR_LOCAL_INV, .imm_or_inv = key,
            };
        }
        if (i == n - 1) {
            w.flags |= RS_WQE_F_SIGNALED;
        }
        qtest_memwrite(qrs_qts(l.d), q.c.sq_addr + i * stride, &w, sizeof(w));
    }
    qrs_db_writel(l.d, 0, RS_DB_SQ, q.qpn | n << 16);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, n - 1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RS_WR_LOCAL_INV);
    g_assert_cmpuint(qp_state(l.d, q.h), ==, RS_QPS_RTS);
    g_assert_false(eng_cq_peek(l.d, &l.cq, &cqe));
    assert_alive(l.d);

    /* The doorbell itself did one budget's worth and left the rest. */
    g_assert_true(g_file_get_contents(data, &log, NULL, NULL));
    lines = g_strsplit(log, "\n", -1);
    for (line = lines; *line; line++) {
        const char *t = strstr(*line, "rdma_session_req_doorbell qpn ");

        if (t && sscanf(t, "rdma_session_req_doorbell qpn %u budget used "
                        "%u, more for the bottom half %u", &qpn, &used,
                        &more) == 3 && qpn == q.qpn) {
            g_test_message("doorbell: budget used %u, more %u", used, more);
            g_assert_cmpuint(used, <=, 64);
            g_assert_cmpuint(more, ==, 1);
            rings++;
        }
    }
    g_assert_cmpuint(rings, ==, 1);
    unlink(data);
}

/*
 * Bad local operations, each on a fresh QP of its own: REG_MR of a bound
 * MR, of another PD's, past the slots or guest RAM; LOCAL_INV of a stale
 * tag or an ordinary MR; privileged operations on a user QP.  Returns the
 * key of the MR of @ppd2 the failures left Free and a good WQE then bound.
 */
static uint32_t fr_bad_local_ops(Loop *l, uint32_t upd, uint32_t ppd2,
                                 uint32_t k3, uint32_t mr2, uint64_t pbl)
{
    struct rs_send_wqe_reg_mr f;
    struct rs_send_wqe_ctrl w;

    memset(&f, 0, sizeof(f));
    f.wr_id = 0xe1;
    f.opcode = RS_WR_REG_MR;
    f.flags = RS_WQE_F_SIGNALED;
    f.page_shift = 12;
    f.key = k3;
    f.iova = FR_IOVA;
    f.length = PAGE;
    f.pbl_addr = pbl;
    f.npages = 1;
    memcpy(&w, &f, sizeof(w));
    /* REG_MR on a bound (Valid) MR. */
    fr_fail_on_spare(l, l->pd, 0, &w, RS_WC_LOC_PROT_ERR);
    /* REG_MR of an MR of another PD. */
    f.key = mr2;
    memcpy(&w, &f, sizeof(w));
    fr_fail_on_spare(l, l->pd, 0, &w, RS_WC_LOC_PROT_ERR);
    /* More pages than the MR has slots, a page outside guest RAM. */
    f.key = (mr2 & ~RS_MKEY_TAG_MASK) | 0x77;
    g_assert_cmphex(mr2 & RS_MKEY_TAG_MASK, !=, 0x77);
    f.length = 5 * PAGE;
    f.npages = 5;
    memcpy(&w, &f, sizeof(w));
    fr_fail_on_spare(l, ppd2, 0, &w, RS_WC_LOC_PROT_ERR);
    f.length = PAGE;
    f.npages = 1;
    f.pbl_addr = qrs_alloc_zeroed(l->d, 8);
    qtest_writeq(qrs_qts(l->d), f.pbl_addr, 1ull << 40);
    memcpy(&w, &f, sizeof(w));
    fr_fail_on_spare(l, ppd2, 0, &w, RS_WC_LOC_PROT_ERR);
    /* ... which left it Free: the same WQE with a good page binds it. */
    qtest_writeq(qrs_qts(l->d), f.pbl_addr, l->dst);
    f.wr_id = 0xe2;
    memcpy(&w, &f, sizeof(w));
    {
        LoopQp q;

        fr_spare_qp(l, &q, ppd2, 0);
        loop_post_send(l, &q, &w, 0, 0, 0);
        fr_expect(l, 0xe2, RS_WR_REG_MR, RS_WC_SUCCESS);
        /* LOCAL_INV with a stale tag, then of an ordinary MR. */
        loop_post_op(l, &q, 0xe3, RS_WR_LOCAL_INV, mr2, 0, 0, 0, 0, 0);
        fr_expect(l, 0xe3, 0, RS_WC_LOC_PROT_ERR);
        g_assert_cmpuint(qp_state(l->d, q.h), ==, RS_QPS_ERR);
        RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DESTROY_QP, q.h));
    }
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xe4;
    w.opcode = RS_WR_LOCAL_INV;
    w.flags = RS_WQE_F_SIGNALED;
    w.imm_or_inv = l->src_key;
    fr_fail_on_spare(l, l->pd, 0, &w, RS_WC_LOC_PROT_ERR);
    /* Privileged operations on a user QP (doorbell page 1, user PD). */
    w.wr_id = 0xe5;
    w.imm_or_inv = k3;
    fr_fail_on_spare(l, upd, 1, &w, RS_WC_LOC_QP_OP_ERR);
    memcpy(&w, &f, sizeof(w));
    w.wr_id = 0xe6;
    fr_fail_on_spare(l, upd, 1, &w, RS_WC_LOC_QP_OP_ERR);
    /* The reserved lkey on a QP of a user PD, even on doorbell page 0. */
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xe7;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    {
        LoopQp q;
        struct rs_sge sge = { .addr = l->src, .length = 64,
                              .lkey = RS_LOCAL_DMA_LKEY };

        fr_spare_qp(l, &q, upd, 0);
        qtest_memwrite(qrs_qts(l->d), q.c.sq_addr, &w, sizeof(w));
        qtest_memwrite(qrs_qts(l->d), q.c.sq_addr + sizeof(w), &sge,
                       sizeof(sge));
        q.sq_pi++;
        qrs_db_writel(l->d, 0, RS_DB_SQ, q.qpn | (q.sq_pi & 0xffff) << 16);
        fr_expect(l, 0xe7, 0, RS_WC_LOC_PROT_ERR);
        g_assert_cmpuint(qp_state(l->d, q.h), ==, RS_QPS_ERR);
        RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DESTROY_QP, q.h));
    }
    return f.key;
}

/*
 * Fast-registration MRs for kernel PDs only, of 1 .. RS_MAX_FRMR_PAGES
 * slots and no pages; a kernel PD's QP rings doorbell page 0 only.
 */
static void fr_bad_alloc(Loop *l, uint32_t upd)
{
    struct rs_cmd_reg_mr bad = {
        .npages = 4, .page_shift = 12, .flags = RS_MR_F_FAST_REG,
    };
    struct rs_cmd_create_qp qc;
    uint32_t h;

    /* Allocation: kernel PDs only, 1 .. RS_MAX_FRMR_PAGES slots, no pages. */
    bad.pd = upd;
    RS_ASSERT_STATUS(qrs_reg_mr(l->d, &bad, NULL, NULL), RS_STATUS_BAD_PD);
    bad.pd = l->pd;
    bad.npages = 0;
    RS_ASSERT_STATUS(qrs_reg_mr(l->d, &bad, NULL, NULL), RS_STATUS_BAD_SIZE);
    bad.npages = RS_MAX_FRMR_PAGES + 1;
    RS_ASSERT_STATUS(qrs_reg_mr(l->d, &bad, NULL, NULL), RS_STATUS_BAD_SIZE);
    bad.npages = 4;
    bad.access = RS_ACCESS_LOCAL_WRITE;
    RS_ASSERT_STATUS(qrs_reg_mr(l->d, &bad, NULL, NULL), RS_STATUS_BAD_PARAM);
    bad.access = 0;
    bad.pbl_addr = 0x1000;
    RS_ASSERT_STATUS(qrs_reg_mr(l->d, &bad, NULL, NULL), RS_STATUS_BAD_PARAM);

    /* A kernel PD's QP rings doorbell page 0 only. */
    qp_template(l->d, &qc, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    qc.uar = 1;
    RS_ASSERT_STATUS(qrs_create_qp(l->d, &qc, &h, NULL), RS_STATUS_BAD_PD);
}

static void test_engine_fast_reg(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Loop l;
    struct rs_cqe cqe;
    uint32_t key, k1, k2, k3, upd, ppd2, mr2;
    uint64_t pbl, rbuf;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    RS_ASSERT_OK(qrs_create_pd(l.d, &upd));
    RS_ASSERT_OK(qrs_create_pd_flags(l.d, RS_PD_F_PRIVILEGED, &ppd2));
    RS_ASSERT_STATUS(qrs_create_pd_flags(l.d, 2, NULL), RS_STATUS_BAD_PARAM);

    fr_bad_alloc(&l, upd);

    key = fr_alloc(&l, l.pd, 4);
    mr2 = fr_alloc(&l, ppd2, 4);
    g_assert_cmphex(key & RS_MKEY_TAG_MASK, !=, 0x5a);

    /* Page list out of order: IOVA page i is dst page perm[i]. */
    pbl = qrs_alloc_zeroed(l.d, 4 * 8);
    qtest_writeq(qrs_qts(l.d), pbl + 0, l.dst + 2 * PAGE);
    qtest_writeq(qrs_qts(l.d), pbl + 8, l.dst + 0 * PAGE);
    qtest_writeq(qrs_qts(l.d), pbl + 16, l.dst + 3 * PAGE);

    /* 1: B binds key k1 (tag 0x5a) to 3 pages at FR_IOVA + 0x80. */
    k1 = (key & ~RS_MKEY_TAG_MASK) | 0x5a;
    fr_post_reg(&l, &l.b, 0xf1, k1, FR_IOVA + 0x80, 3 * PAGE - 0x80, pbl, 3,
                RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE |
                RS_ACCESS_REMOTE_READ);
    fr_expect(&l, 0xf1, RS_WR_REG_MR, RS_WC_SUCCESS);

    /* 2: A writes 5000 bytes at FR_IOVA + 0xe4 through k1. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_pattern(&l, l.src, 5000, 0x21);
    loop_post_op(&l, &l.a, 0xf2, RS_WR_RDMA_WRITE, 0, FR_IOVA + 0xe4, k1,
               l.src, 5000, l.src_key);
    fr_expect(&l, 0xf2, RS_WR_RDMA_WRITE, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 2 * PAGE + 0xe4, PAGE - 0xe4);
    loop_assert_same(&l, l.src + PAGE - 0xe4, l.dst, 5000 - (PAGE - 0xe4));
    g_assert_true(is_filled(l.d, l.dst + 2 * PAGE, 0xee, 0xe4));
    g_assert_true(is_filled(l.d, l.dst + 5000 - (PAGE - 0xe4), 0xee,
                            2 * PAGE - (5000 - (PAGE - 0xe4))));
    g_assert_true(is_filled(l.d, l.dst + 3 * PAGE, 0xee, PAGE));

    /* 3: A reads it back into a DMA address: the reserved lkey. */
    rbuf = loop_buf(l.d, 2 * PAGE);
    loop_post_op(&l, &l.a, 0xf3, RS_WR_RDMA_READ, 0, FR_IOVA + 0xe4, k1,
               rbuf, 5000, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xf3, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf, 5000);

    /* 4: SEND with invalidate of k1; B receives into a DMA address. */
    fill(l.d, rbuf, 0, 2 * PAGE);
    loop_post_recv(&l, &l.b, 0xb4, rbuf, 100, RS_LOCAL_DMA_LKEY);
    loop_post_op(&l, &l.a, 0xf4, RS_WR_SEND_INV, k1, 0, 0, l.src, 64,
               l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb4);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 64);
    g_assert_true(cqe.wc_flags & RS_WC_F_INV);
    g_assert_cmphex(cqe.imm_or_inv, ==, k1);
    fr_expect(&l, 0xf4, RS_WR_SEND_INV, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf, 64);

    /* 5-7: the MR is Free again: rebind (ib_inc_rkey), LOCAL_INV, rebind. */
    k2 = (k1 & ~RS_MKEY_TAG_MASK) | 0x5b;
    fr_post_reg(&l, &l.b, 0xf5, k2, FR_IOVA, 2 * PAGE, pbl, 2,
                RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    fr_expect(&l, 0xf5, RS_WR_REG_MR, RS_WC_SUCCESS);
    loop_post_op(&l, &l.b, 0xf6, RS_WR_LOCAL_INV, k2, 0, 0, 0, 0, 0);
    fr_expect(&l, 0xf6, RS_WR_LOCAL_INV, RS_WC_SUCCESS);
    k3 = (k1 & ~RS_MKEY_TAG_MASK) | 0x5c;
    fr_post_reg(&l, &l.b, 0xf7, k3, FR_IOVA, 2 * PAGE, pbl, 2,
                RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    fr_expect(&l, 0xf7, RS_WR_REG_MR, RS_WC_SUCCESS);

    mr2 = fr_bad_local_ops(&l, upd, ppd2, k3, mr2, pbl);

    /* The reserved lkey is never an rkey. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_op(&l, &l.a, 0xf8, RS_WR_RDMA_WRITE, 0, l.dst,
               RS_LOCAL_DMA_LKEY, l.src, 64, l.src_key);
    fr_expect(&l, 0xf8, 0, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);

    /* A bound MR keeps its PD referenced; DEREG_MR releases it. */
    RS_ASSERT_STATUS(qrs_destroy(l.d, RS_CMD_DESTROY_PD, ppd2),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, mr2));
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_PD, ppd2));
    assert_alive(l.d);
}

static void test_engine_ud_av_addr(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Loop l;
    LoopQp u, v, x;
    struct rs_ah_attr a;
    struct rs_cqe cqe;
    uint64_t av, bad_av, rbuf;
    uint32_t upd;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    RS_ASSERT_OK(qrs_create_pd(l.d, &upd));
    loop_ud_qp(&l, &u, l.pd);
    loop_ud_qp(&l, &v, l.pd);
    loop_ud_qp(&l, &x, upd);

    memset(&a, 0, sizeof(a));
    gid_v4(a.dgid, 10, 0, 0, 1);                /* ourselves: loopback */
    a.hop_limit = 64;
    av = qrs_alloc_zeroed(l.d, sizeof(a));
    qtest_memwrite(qrs_qts(l.d), av, &a, sizeof(a));
    a.gid_index = 5;                            /* not populated */
    bad_av = qrs_alloc_zeroed(l.d, sizeof(a));
    qtest_memwrite(qrs_qts(l.d), bad_av, &a, sizeof(a));

    /* The AH handle is ignored: the vector in memory addresses v. */
    rbuf = loop_buf(l.d, PAGE);
    fill(l.d, rbuf, 0xee, PAGE);
    loop_pattern(&l, l.src, 300, 0x3c);
    loop_post_recv(&l, &v, 0xb1, rbuf, PAGE, RS_LOCAL_DMA_LKEY);
    av_addr_post(&l, &u, 0xa1, av, v.qpn, l.src, 300);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, RS_GRH_BYTES + 300);
    g_assert_cmpuint(cqe.src_qp, ==, u.qpn);
    g_assert_cmphex(cqe.wc_flags & (RS_WC_F_GRH | RS_WC_F_IPV4 | RS_WC_F_IPV6),
                    ==, RS_WC_F_GRH | RS_WC_F_IPV4);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf + RS_GRH_BYTES, 300);
    g_assert_true(is_filled(l.d, rbuf + RS_GRH_BYTES + 300, 0xee,
                            PAGE - RS_GRH_BYTES - 300));

    /* A vector naming an unpopulated GID, or not in guest RAM. */
    av_addr_post(&l, &u, 0xa2, bad_av, v.qpn, l.src, 16);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa2);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qp_state(l.d, u.h), ==, RS_QPS_ERR);
    av_addr_post(&l, &v, 0xa3, 1ull << 40, u.qpn, l.src, 16);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qp_state(l.d, v.h), ==, RS_QPS_ERR);

    /* Only privileged QPs may address by vector. */
    {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xa4, .opcode = RS_WR_SEND,
            .flags = RS_WQE_F_SIGNALED | RS_WQE_F_AV_ADDR, .num_sge = 1,
            .swap = av, .remote_qpn = v.qpn, .remote_qkey = STD_QKEY,
        };

        loop_post_send(&l, &x, &w, l.src, 16, l.src_key);
    }
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa4);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qp_state(l.d, x.h), ==, RS_QPS_ERR);
    assert_alive(l.d);
}

/* Stale tags and remote invalidation of keys it may not invalidate. */
static void test_engine_remote_inv(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Loop l;
    struct rs_cqe cqe;
    uint32_t key, k1;
    uint64_t pbl;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    key = fr_alloc(&l, l.pd, 2);
    pbl = make_pbl(l.d, l.dst, PAGE, 2);
    k1 = (key & ~RS_MKEY_TAG_MASK) | ((key + 1) & RS_MKEY_TAG_MASK);
    fr_post_reg(&l, &l.b, 0xf1, k1, FR_IOVA, 2 * PAGE, pbl, 2,
                RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    fr_expect(&l, 0xf1, RS_WR_REG_MR, RS_WC_SUCCESS);

    /* The allocation's key (the old tag) does not reach the bound MR. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb1, l.dst + 3 * PAGE, 100, l.dst_key);
    loop_post_op(&l, &l.a, 0xf2, RS_WR_SEND_INV, key, 0, 0, l.src, 16,
               l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_ACCESS_ERR);
    fr_expect(&l, 0xf2, 0, RS_WC_REM_INV_REQ_ERR);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);
    assert_alive(l.d);
}

static void register_engine_kernel_tests(void)
{
    QOSGraphTestOptions trace_doorbell = { .before = trace_doorbell_before };

    qos_add_test("engine/fast-reg", "rdma-session", test_engine_fast_reg, NULL);
    qos_add_test("engine/local-op-budget", "rdma-session",
                 test_engine_local_op_budget, &trace_doorbell);
    qos_add_test("engine/remote-inv", "rdma-session",
                 test_engine_remote_inv, NULL);
    qos_add_test("engine/ud-av-addr", "rdma-session",
                 test_engine_ud_av_addr, NULL);
}

libqos_init(register_engine_kernel_tests);
