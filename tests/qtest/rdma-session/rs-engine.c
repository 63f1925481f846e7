/*
 * rdma-session qtests: helpers that post work requests and poll
 * completions as a driver does, and the loopback QP pair they run on
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

uint32_t eng_mr_at(QRdmaSession *d, uint32_t pd, uint32_t gid_index,
                   uint64_t iova, uint64_t base, uint32_t len,
                   uint16_t access)
{
    struct rs_cmd_reg_mr c = {
        .iova = iova,
        .length = len,
        .npages = DIV_ROUND_UP(len, PAGE),
        .pd = pd,
        .page_shift = 12,
        .access = access,
        .gid_index = gid_index,
    };

    c.pbl_addr = make_pbl(d, base, PAGE, c.npages);
    return reg_mr_ok(d, &c);
}

uint32_t eng_mr(QRdmaSession *d, uint32_t pd, uint32_t gid_index,
                uint64_t base, uint32_t len, uint16_t access)
{
    return eng_mr_at(d, pd, gid_index, base, base, len, access);
}

void eng_connect(QRdmaSession *d, LoopQp *q, uint8_t type,
                 const struct rs_qp_attr *base, uint32_t rtr_mask)
{
    static const uint8_t path[] = {
        RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS,
    };
    struct rs_qp_attr a;
    int i;

    for (i = 1; i < ARRAY_SIZE(path); i++) {
        uint32_t mask = std_mask(type, path[i - 1], path[i]);

        a = *base;
        a.cur_qp_state = path[i - 1];
        a.qp_state = path[i];
        if (path[i] == RS_QPS_RTR) {
            mask |= rtr_mask;
        }
        RS_ASSERT_OK(qrs_modify_qp(d, q->h, &a, mask));
    }
}

void eng_post_recv(QRdmaSession *d, LoopQp *q, uint64_t wr_id,
                   const struct rs_sge *sge, uint8_t nsge)
{
    struct rs_recv_wqe_ctrl w = { .wr_id = wr_id, .num_sge = nsge };
    uint64_t slot = q->c.rq_addr +
        (uint64_t)(q->rq_pi & ((1u << q->c.rq_log_size) - 1)) *
        (qrs_qp_rq_bytes(&q->c) >> q->c.rq_log_size);

    qtest_memwrite(qrs_qts(d), slot, &w, sizeof(w));
    if (nsge) {
        qtest_memwrite(qrs_qts(d), slot + sizeof(w), sge,
                       nsge * sizeof(*sge));
    }
    q->rq_pi++;
    qrs_db_writel(d, 0, RS_DB_RQ, q->qpn | (q->rq_pi & 0xffff) << 16);
}

void eng_post_send(QRdmaSession *d, LoopQp *q,
                   const struct rs_send_wqe_ctrl *w,
                   const struct rs_sge *sge, uint8_t nsge)
{
    uint64_t slot = q->c.sq_addr +
        (uint64_t)(q->sq_pi & ((1u << q->c.sq_log_size) - 1)) *
        (qrs_qp_sq_bytes(&q->c) >> q->c.sq_log_size);

    qtest_memwrite(qrs_qts(d), slot, w, sizeof(*w));
    if (nsge) {
        qtest_memwrite(qrs_qts(d), slot + sizeof(*w), sge,
                       nsge * sizeof(*sge));
    }
    q->sq_pi++;
    qrs_db_writel(d, 0, RS_DB_SQ, q->qpn | (q->sq_pi & 0xffff) << 16);
}

void eng_cq_init(QRdmaSession *d, EngCq *cq, uint8_t log)
{
    memset(cq, 0, sizeof(*cq));
    cq->log = log;
    cq->ring = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << log);
    RS_ASSERT_OK(qrs_create_cq(d, cq->ring, log, 0, 0, &cq->h));
}

bool eng_cq_peek(QRdmaSession *d, EngCq *cq, struct rs_cqe *cqe)
{
    uint64_t addr = cq->ring +
        (uint64_t)(cq->ci & ((1u << cq->log) - 1)) * sizeof(*cqe);

    qtest_memread(qrs_qts(d), addr, cqe, sizeof(*cqe));
    return (cqe->owner & RS_CQE_OWNER) == !((cq->ci >> cq->log) & 1);
}

void eng_poll(QRdmaSession *d, EngCq *cq, struct rs_cqe *cqe,
              EngIdleFn *idle, void *opaque)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    while (!eng_cq_peek(d, cq, cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (idle) {
            idle(opaque);
        }
        qtest_clock_step(qrs_qts(d), 1000);
    }
    cq->ci++;
    qrs_db_writel(d, 0, RS_DB_CQ_CI, HINDEX(cq->h) | (cq->ci & 0xffff) << 16);
}

uint64_t loop_buf(QRdmaSession *d, uint32_t len)
{
    uint64_t a = qrs_alloc_zeroed(d, len + PAGE);

    return (a + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

uint32_t loop_mr_access(Loop *l, uint64_t base, uint32_t len,
                        uint16_t access)
{
    struct rs_cmd_reg_mr c = {
        .iova = base,
        .length = len,
        .npages = len / PAGE,
        .pd = l->pd,
        .page_shift = 12,
        .access = access,
        .gid_index = 0,
    };

    c.pbl_addr = make_pbl(l->d, base, PAGE, len / PAGE);
    return reg_mr_ok(l->d, &c);
}

uint32_t loop_mr(Loop *l, uint64_t base, uint32_t len)
{
    return eng_mr(l->d, l->pd, 0, base, len, STD_ACCESS);
}

void loop_connect_to(Loop *l, LoopQp *q, uint32_t peer, uint8_t host)
{
    struct rs_qp_attr a;

    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    gid_v4(a.ah.dgid, 10, 0, 0, host);
    memcpy(a.ah.dmac, qos_mac, 6);
    a.dest_qp_num = peer;
    a.rq_psn = a.sq_psn = LOOP_PSN;
    a.access_flags = STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC;
    if (host == 1) {
        a.session_group = l->group;
    }
    eng_connect(l->d, q, l->type, &a,
                host == 1 ? RS_QP_ATTR_SESSION_GROUP : 0);
}

void loop_connect(Loop *l, LoopQp *q, uint32_t peer)
{
    loop_connect_to(l, q, peer, 1);
}

void loop_reconnect(Loop *l)
{
    struct rs_qp_attr a;

    std_attr(&a, 0, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(l->d, l->a.h, &a, RS_QP_ATTR_STATE));
    RS_ASSERT_OK(qrs_modify_qp(l->d, l->b.h, &a, RS_QP_ATTR_STATE));
    l->a.sq_pi = l->a.rq_pi = l->b.sq_pi = l->b.rq_pi = 0;
    loop_connect(l, &l->a, l->b.qpn);
    loop_connect(l, &l->b, l->a.qpn);
}

void loop_init(Loop *l, QRdmaSession *d, uint8_t type,
               uint32_t pd_flags)
{
    struct rs_cmd_create_session sc;
    uint32_t s = 0;

    memset(l, 0, sizeof(*l));
    l->d = d;
    l->type = type;
    add_gid_v4(l->d, 0, 1);                     /* 10.0.0.1 */
    RS_ASSERT_OK(qrs_create_pd_flags(l->d, pd_flags, &l->pd));
    eng_cq_init(l->d, &l->cq, LOOP_CQ_LOG);
    session_template(&sc, 0, 49152);
    gid_v4(sc.dst_ip, 10, 0, 0, 1);             /* ourselves: loopback */
    RS_ASSERT_OK(qrs_create_session(l->d, &sc, &s));
    l->group = new_group(l->d, RS_GROUP_ROUND_ROBIN, s, 0);
    qp_template(l->d, &l->a.c, type, l->pd, l->cq.h, l->cq.h);
    qp_template(l->d, &l->b.c, type, l->pd, l->cq.h, l->cq.h);
    l->a.h = new_qp(l->d, &l->a.c);
    l->b.h = new_qp(l->d, &l->b.c);
    l->a.qpn = HINDEX(l->a.h);
    l->b.qpn = HINDEX(l->b.h);
    l->src = loop_buf(l->d, LOOP_BUF);
    l->dst = loop_buf(l->d, LOOP_BUF);
    l->src_key = loop_mr(l, l->src, LOOP_BUF);
    l->dst_key = loop_mr(l, l->dst, LOOP_BUF);
}

void loop_setup_pd(Loop *l, void *obj, uint32_t pd_flags)
{
    loop_init(l, admin_setup(obj), RS_QPT_RC, pd_flags);
    loop_connect(l, &l->a, l->b.qpn);
    loop_connect(l, &l->b, l->a.qpn);
}

void loop_setup(Loop *l, void *obj)
{
    loop_setup_pd(l, obj, 0);
}

void loop_ud_qp(Loop *l, LoopQp *q, uint32_t pd)
{
    memset(q, 0, sizeof(*q));
    qp_template(l->d, &q->c, RS_QPT_UD, pd, l->cq.h, l->cq.h);
    q->h = new_qp(l->d, &q->c);
    q->qpn = HINDEX(q->h);
    qp_walk(l->d, q->h, RS_QPT_UD, RS_QPS_RTS);
}

void loop_post_recv(Loop *l, LoopQp *q, uint64_t wr_id,
                    uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = lkey };

    eng_post_recv(l->d, q, wr_id, &sge, 1);
}

void loop_post_send(Loop *l, LoopQp *q,
                    const struct rs_send_wqe_ctrl *w,
                    uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = lkey };

    eng_post_send(l->d, q, w, &sge, 1);
}

void loop_poll(Loop *l, struct rs_cqe *cqe)
{
    eng_poll(l->d, &l->cq, cqe, NULL, NULL);
}

void loop_pattern(Loop *l, uint64_t addr, uint32_t len, uint8_t seed)
{
    g_autofree uint8_t *buf = g_malloc(len);
    uint32_t i;

    for (i = 0; i < len; i++) {
        buf[i] = seed + i * 7 + (i >> 8);
    }
    qtest_memwrite(qrs_qts(l->d), addr, buf, len);
}

void loop_assert_same(Loop *l, uint64_t a, uint64_t b, uint32_t len)
{
    g_autofree uint8_t *x = g_malloc(len);
    g_autofree uint8_t *y = g_malloc(len);
    uint32_t i;

    qtest_memread(qrs_qts(l->d), a, x, len);
    qtest_memread(qrs_qts(l->d), b, y, len);
    for (i = 0; i < len; i++) {
        g_assert_cmphex(x[i], ==, y[i]);
    }
}

uint32_t fr_alloc(Loop *l, uint32_t pd, uint32_t npages)
{
    struct rs_cmd_reg_mr c = {
        .npages = npages, .pd = pd, .page_shift = 12,
        .flags = RS_MR_F_FAST_REG,
    };

    return reg_mr_ok(l->d, &c);
}

void fr_post_reg(Loop *l, LoopQp *q, uint64_t wr_id, uint32_t key,
                 uint64_t iova, uint64_t len, uint64_t pbl,
                 uint32_t npages, uint16_t access)
{
    struct rs_send_wqe_reg_mr f = {
        .wr_id = wr_id, .opcode = RS_WR_REG_MR, .flags = RS_WQE_F_SIGNALED,
        .page_shift = 12, .key = key, .iova = iova, .length = len,
        .pbl_addr = pbl, .npages = npages, .access = access,
    };
    struct rs_send_wqe_ctrl w;

    memcpy(&w, &f, sizeof(w));
    loop_post_send(l, q, &w, 0, 0, 0);
}

void loop_post_op(Loop *l, LoopQp *q, uint64_t wr_id, uint8_t op,
                uint32_t inv, uint64_t raddr, uint32_t rkey,
                uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id, .opcode = op, .flags = RS_WQE_F_SIGNALED,
        .num_sge = len ? 1 : 0, .imm_or_inv = inv, .remote_addr = raddr,
        .rkey = rkey,
    };

    loop_post_send(l, q, &w, addr, len, lkey);
}

void fr_expect(Loop *l, uint64_t wr_id, uint8_t opcode, uint8_t status)
{
    struct rs_cqe cqe;

    loop_poll(l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    if (status == RS_WC_SUCCESS) {
        g_assert_cmphex(cqe.opcode, ==, opcode);
    }
}

void av_addr_post(Loop *l, LoopQp *q, uint64_t wr_id, uint64_t av,
                  uint32_t dqpn, uint64_t addr, uint32_t len)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id, .opcode = RS_WR_SEND,
        .flags = RS_WQE_F_SIGNALED | RS_WQE_F_AV_ADDR, .num_sge = 1,
        .swap = av, .ah = 0xdead, .remote_qpn = dqpn,
        .remote_qkey = STD_QKEY,
    };

    loop_post_send(l, q, &w, addr, len, RS_LOCAL_DMA_LKEY);
}

void gid_v6(uint8_t gid[16], uint8_t host)
{
    static const uint8_t ll[16] = {
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34,
    };

    memcpy(gid, ll, 16);
    gid[15] = host;
}

void loop_expect(Loop *l, uint64_t wr_id, uint8_t status,
                 uint8_t opcode, uint32_t qpn)
{
    struct rs_cqe cqe;

    loop_poll(l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    g_assert_cmphex(cqe.opcode, ==, opcode);
    g_assert_cmpuint(cqe.qpn, ==, qpn);
}

void loop_atomic(Loop *l, uint64_t wr_id, uint8_t op, uint64_t va,
                 uint32_t rkey, uint64_t compare_add, uint64_t swap,
                 uint64_t result, uint32_t result_len)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = op,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .remote_addr = va,
        .rkey = rkey,
        .compare_add = compare_add,
        .swap = swap,
    };

    loop_post_send(l, &l->a, &w, result, result_len, l->src_key);
}

void srq_template(QRdmaSession *d, struct rs_cmd_create_srq *c,
                  uint32_t pd, uint8_t log, uint8_t max_sge)
{
    memset(c, 0, sizeof(*c));
    c->pd = pd;
    c->log_size = log;
    c->max_sge = max_sge;
    c->ring_addr = qrs_alloc_zeroed(d, (size_t)qrs_recv_stride(max_sge)
                                    << log);
}

void srq_post(QRdmaSession *d, const struct rs_cmd_create_srq *c,
              uint32_t h, uint32_t *pi, uint64_t wr_id, uint64_t addr,
              uint32_t len, uint32_t lkey)
{
    struct rs_recv_wqe_ctrl w = { .wr_id = wr_id, .num_sge = 1 };
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = lkey };
    uint64_t slot = c->ring_addr +
        (uint64_t)(*pi & ((1u << c->log_size) - 1)) *
        qrs_recv_stride(c->max_sge);

    qtest_memwrite(qrs_qts(d), slot, &w, sizeof(w));
    qtest_memwrite(qrs_qts(d), slot + sizeof(w), &sge, sizeof(sge));
    (*pi)++;
    qrs_db_writel(d, c->uar, RS_DB_SRQ, HINDEX(h) | (*pi & 0xffff) << 16);
}

void modify_state(QRdmaSession *d, LoopQp *q, uint8_t from,
                  uint8_t to, uint32_t mask, bool sqd_notify)
{
    struct rs_qp_attr a;

    std_attr(&a, from, to);
    a.en_sqd_async_notify = sqd_notify;
    RS_ASSERT_OK(qrs_modify_qp(d, q->h, &a, RS_QP_ATTR_STATE | mask));
    g_assert_cmpuint(qp_state(d, q->h), ==, to);
}
