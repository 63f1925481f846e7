/*
 * rdma-session qtests: doorbell records (ABI 1.11, RS_CAP_DB_RECORD) over
 * loopback.  A QP in SQD keeps its posted WQEs, so the device is
 * deterministically "active" on a send queue: posts go through the
 * record alone and SQD -> RTS sends them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

#define REC_SQ_PROD     0
#define REC_SQ_ACTIVE   4
#define REC_RQ_PROD     8
#define REC_RQ_ACTIVE   12

static uint8_t dbrec_set(QRdmaSession *d, uint32_t qp, uint64_t addr)
{
    struct rs_cmd_set_qp_db_record c = { .addr = addr, .handle = qp };

    return qrs_admin_cmd(d, RS_CMD_SET_QP_DB_RECORD, &c, sizeof(c), NULL,
                         NULL);
}

static uint32_t dbrec_get(QRdmaSession *d, uint64_t rec, unsigned off)
{
    return qtest_readl(qrs_qts(d), rec + off);
}

static void dbrec_write_sq_wqe(QRdmaSession *d, LoopQp *q,
                               const struct rs_send_wqe_ctrl *w,
                               const struct rs_sge *sge)
{
    uint64_t slot = q->c.sq_addr +
        (uint64_t)(q->sq_pi & ((1u << q->c.sq_log_size) - 1)) *
        (qrs_qp_sq_bytes(&q->c) >> q->c.sq_log_size);

    qtest_memwrite(qrs_qts(d), slot, w, sizeof(*w));
    qtest_memwrite(qrs_qts(d), slot + sizeof(*w), sge, sizeof(*sge));
    q->sq_pi++;
}

/*
 * Post a SEND as the provider does with a record at rec (0: none): the WQE, the
 * producer into the record, then the doorbell only if sq_active is 0.
 * True if it rang the doorbell.
 */
static bool dbrec_post_send(Loop *l, LoopQp *q, uint64_t rec, uint64_t wr_id,
                     uint64_t addr, uint32_t len)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id, .opcode = RS_WR_SEND,
        .flags = RS_WQE_F_SIGNALED, .num_sge = 1,
    };
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = l->src_key };

    dbrec_write_sq_wqe(l->d, q, &w, &sge);
    if (rec) {
        qtest_writel(qrs_qts(l->d), rec + REC_SQ_PROD, q->sq_pi & 0xffff);
        if (dbrec_get(l->d, rec, REC_SQ_ACTIVE)) {
            return false;
        }
    }
    qrs_db_writel(l->d, 0, RS_DB_SQ, q->qpn | (q->sq_pi & 0xffff) << 16);
    return true;
}

/* The same for a receive of len bytes at addr (destination key). */
static bool dbrec_post_recv(Loop *l, LoopQp *q, uint64_t rec, uint64_t wr_id,
                     uint64_t addr, uint32_t len)
{
    struct rs_recv_wqe_ctrl w = { .wr_id = wr_id, .num_sge = 1 };
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = l->dst_key };
    uint64_t slot = q->c.rq_addr +
        (uint64_t)(q->rq_pi & ((1u << q->c.rq_log_size) - 1)) *
        (qrs_qp_rq_bytes(&q->c) >> q->c.rq_log_size);

    qtest_memwrite(qrs_qts(l->d), slot, &w, sizeof(w));
    qtest_memwrite(qrs_qts(l->d), slot + sizeof(w), &sge, sizeof(sge));
    q->rq_pi++;
    if (rec) {
        qtest_writel(qrs_qts(l->d), rec + REC_RQ_PROD, q->rq_pi & 0xffff);
        if (dbrec_get(l->d, rec, REC_RQ_ACTIVE)) {
            return false;
        }
    }
    qrs_db_writel(l->d, 0, RS_DB_RQ, q->qpn | (q->rq_pi & 0xffff) << 16);
    return true;
}

static void dbrec_stats(QRdmaSession *d, struct rs_device_stats *st)
{
    query_stats(d, st, sizeof(*st));
}

/*
 * n messages of one QP pair: the receive completions (wr_ids recv0 ...)
 * and the send completions (send0 ...) each in order, interleaved as
 * the ACKs come.
 */
static void dbrec_expect_pairs(Loop *l, int n, uint64_t recv0,
                               uint64_t send0)
{
    int r = 0, s = 0;

    while (r < n || s < n) {
        struct rs_cqe cqe;

        loop_poll(l, &cqe);
        g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
        if (cqe.opcode == RS_WR_RECV) {
            g_assert_cmphex(cqe.wr_id, ==, recv0 + r++);
        } else {
            g_assert_cmphex(cqe.wr_id, ==, send0 + s++);
        }
    }
}

static uint64_t dbrec_new(QRdmaSession *d, uint32_t qp)
{
    uint64_t rec = qrs_alloc_zeroed(d, 64);

    RS_ASSERT_OK(dbrec_set(d, qp, rec));
    return rec;
}

/*
 * Send side: while the device holds unsent WQEs (SQD) it says active and
 * posts need no doorbell; back in RTS it sends them all, goes idle
 * (sq_active 0), and the next post rings the doorbell as before.
 */
static void test_dbrec_sq_pickup(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    struct rs_device_stats s0, s1;
    uint64_t rec;
    Loop l;
    int i;

    loop_setup(&l, obj);
    g_assert_true(qrs_readl(l.d, A_RS_CAPS) & RS_CAP_DB_RECORD);
    rec = dbrec_new(l.d, l.a.h);
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_SQ_ACTIVE), ==, 0);
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_RQ_ACTIVE), ==, 1);
    for (i = 0; i < 4; i++) {
        loop_post_recv(&l, &l.b, 0x100 + i, l.dst + i * 256, 256,
                       l.dst_key);
    }
    loop_pattern(&l, l.src, 1024, 0x31);
    modify_state(l.d, &l.a, RS_QPS_RTS, RS_QPS_SQD, 0, false);
    dbrec_stats(l.d, &s0);

    /* Idle: the first post rings; the device keeps it and says active. */
    g_assert_true(dbrec_post_send(&l, &l.a, rec, 0xa0, l.src, 100));
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_SQ_ACTIVE), ==, 1);
    g_assert_false(dbrec_post_send(&l, &l.a, rec, 0xa1, l.src + 256, 200));
    g_assert_false(dbrec_post_send(&l, &l.a, rec, 0xa2, l.src + 512, 256));
    modify_state(l.d, &l.a, RS_QPS_SQD, RS_QPS_RTS, 0, false);
    dbrec_expect_pairs(&l, 3, 0x100, 0xa0);
    loop_assert_same(&l, l.src, l.dst, 100);
    loop_assert_same(&l, l.src + 256, l.dst + 256, 200);
    loop_assert_same(&l, l.src + 512, l.dst + 512, 256);
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_SQ_ACTIVE), ==, 0);
    dbrec_stats(l.d, &s1);
    g_assert_cmpuint(s1.db_record_pickups - s0.db_record_pickups, ==, 2);
    g_assert_cmpuint(s1.db_mmio_writes - s0.db_mmio_writes, ==, 1);

    /* Idle again: the next post sees 0 and rings; nothing is lost. */
    g_assert_true(dbrec_post_send(&l, &l.a, rec, 0xa3, l.src + 768, 64));
    loop_expect(&l, 0x103, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xa3, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    dbrec_stats(l.d, &s0);
    g_assert_cmpuint(s0.db_record_pickups, ==, s1.db_record_pickups);
    g_assert_cmpuint(s0.db_mmio_writes - s1.db_mmio_writes, ==, 1);
    assert_alive(l.d);
}

/*
 * The idle -> active race, from the device's side: posts stored in the
 * record while it still said active are taken when it goes idle, and a
 * post after it went idle comes with the doorbell.  Then the record is
 * dropped (addr 0): plain doorbells again.
 */
static void test_dbrec_idle_race(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    struct rs_device_stats s0, s1;
    uint64_t rec;
    Loop l;
    int i;

    loop_setup(&l, obj);
    rec = dbrec_new(l.d, l.a.h);
    for (i = 0; i < 3; i++) {
        loop_post_recv(&l, &l.b, 0x200 + i, l.dst + i * 256, 256,
                       l.dst_key);
    }
    modify_state(l.d, &l.a, RS_QPS_RTS, RS_QPS_SQD, 0, false);
    g_assert_true(dbrec_post_send(&l, &l.a, rec, 0xb0, l.src, 10));
    /*
     * A post whose producer store the device has not seen by the time it
     * runs out of WQEs: the record is written, no doorbell (active).
     */
    g_assert_false(dbrec_post_send(&l, &l.a, rec, 0xb1, l.src, 20));
    dbrec_stats(l.d, &s0);
    modify_state(l.d, &l.a, RS_QPS_SQD, RS_QPS_RTS, 0, false);
    dbrec_expect_pairs(&l, 2, 0x200, 0xb0);
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_SQ_ACTIVE), ==, 0);
    /* After idle: the doorbell. */
    g_assert_true(dbrec_post_send(&l, &l.a, rec, 0xb2, l.src, 30));
    loop_expect(&l, 0x202, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xb2, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    dbrec_stats(l.d, &s1);
    g_assert_cmpuint(s1.db_record_pickups - s0.db_record_pickups, ==, 1);

    /* Dropped: the device writes nothing there any more. */
    RS_ASSERT_OK(dbrec_set(l.d, l.a.h, 0));
    qtest_writel(qrs_qts(l.d), rec + REC_SQ_ACTIVE, 0x5a5a5a5a);
    loop_post_recv(&l, &l.b, 0x203, l.dst, 256, l.dst_key);
    modify_state(l.d, &l.a, RS_QPS_RTS, RS_QPS_SQD, 0, false);
    modify_state(l.d, &l.a, RS_QPS_SQD, RS_QPS_RTS, 0, false);
    g_assert_cmphex(dbrec_get(l.d, rec, REC_SQ_ACTIVE), ==, 0x5a5a5a5a);
    assert_alive(l.d);
}

/*
 * Receive side: rq_active is 1 while the QP may receive; receives posted
 * through the record alone are found when a SEND needs one.  In Error
 * rq_active is 0 and posts ring the doorbell, which flushes them.
 */
static void test_dbrec_rq_pickup(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    struct rs_device_stats s0, s1;
    struct rs_qp_attr a;
    struct rs_cqe cqe;
    uint64_t rec;
    Loop l;
    int i;

    loop_setup(&l, obj);
    rec = dbrec_new(l.d, l.b.h);
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_RQ_ACTIVE), ==, 1);
    dbrec_stats(l.d, &s0);
    for (i = 0; i < 3; i++) {
        g_assert_false(dbrec_post_recv(&l, &l.b, rec, 0x300 + i,
                                       l.dst + i * 512, 512));
    }
    loop_pattern(&l, l.src, 1536, 0x47);
    for (i = 0; i < 3; i++) {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xc0 + i, .opcode = RS_WR_SEND,
            .flags = RS_WQE_F_SIGNALED, .num_sge = 1,
        };

        loop_post_send(&l, &l.a, &w, l.src + i * 512, 300 + i, l.src_key);
        loop_expect(&l, 0x300 + i, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
        loop_expect(&l, 0xc0 + i, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
        loop_assert_same(&l, l.src + i * 512, l.dst + i * 512, 300 + i);
    }
    dbrec_stats(l.d, &s1);
    g_assert_cmpuint(s1.db_record_pickups - s0.db_record_pickups, ==, 3);
    /* The three SEND doorbells only. */
    g_assert_cmpuint(s1.db_mmio_writes - s0.db_mmio_writes, ==, 3);

    /* Error: rq_active 0, a receive posted now rings and is flushed. */
    std_attr(&a, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.b.h, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_RQ_ACTIVE), ==, 0);
    g_assert_true(dbrec_post_recv(&l, &l.b, rec, 0x3f0, l.dst, 64));
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x3f0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_WR_FLUSH_ERR);
    assert_alive(l.d);
}

/*
 * Hostile records: a producer more than a ring ahead, or with bits 16-31
 * set, makes that QP fatal (Error, RS_EV_QP_FATAL) and drops its record;
 * the device goes on.  SET_QP_DB_RECORD checks its arguments.
 */
static void test_dbrec_hostile_sq(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    struct rs_cmd_set_qp_db_record c = {
        .addr = 0x1000, .handle = 0, .rsvd = 1,
    };
    struct rs_device_stats s0, s1;
    struct rs_qp_attr a;
    uint32_t ring;
    uint64_t rec;
    Loop l;

    loop_setup(&l, obj);
    ring = 1u << l.a.c.sq_log_size;
    c.handle = l.a.h;
    RS_ASSERT_STATUS(dbrec_set(l.d, l.a.h, 0x1008), RS_STATUS_BAD_ALIGN);
    RS_ASSERT_STATUS(dbrec_set(l.d, l.a.h, FAR_ADDR), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(dbrec_set(l.d, HANDLE(7, l.a.qpn), 0x1000),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_admin_cmd(l.d, RS_CMD_SET_QP_DB_RECORD, &c,
                                   sizeof(c), NULL, NULL),
                     RS_STATUS_BAD_PARAM);

    /* A producer a ring and one ahead, found while active. */
    rec = dbrec_new(l.d, l.a.h);
    loop_post_recv(&l, &l.b, 0x400, l.dst, 256, l.dst_key);
    modify_state(l.d, &l.a, RS_QPS_RTS, RS_QPS_SQD, 0, false);
    g_assert_true(dbrec_post_send(&l, &l.a, rec, 0xd0, l.src, 10));
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_SQ_ACTIVE), ==, 1);
    qtest_writel(qrs_qts(l.d), rec + REC_SQ_PROD, (ring + 2) & 0xffff);
    dbrec_stats(l.d, &s0);
    std_attr(&a, RS_QPS_SQD, RS_QPS_RTS);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.a.h, &a, RS_QP_ATTR_STATE));
    expect_event(l.d, RS_EV_QP_FATAL, l.a.h);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_SQ_ACTIVE), ==, 0);
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_RQ_ACTIVE), ==, 0);
    dbrec_stats(l.d, &s1);
    g_assert_cmpuint(s1.db_record_pickups, ==, s0.db_record_pickups);
    /* The record is gone: SET_QP_DB_RECORD again works, in Error. */
    RS_ASSERT_OK(dbrec_set(l.d, l.a.h, rec));
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_RQ_ACTIVE), ==, 0);
    assert_alive(l.d);
}

static void test_dbrec_hostile_rq(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = 0xd1, .opcode = RS_WR_SEND,
        .flags = RS_WQE_F_SIGNALED, .num_sge = 1,
    };
    uint64_t rec;
    Loop l;

    loop_setup(&l, obj);
    rec = dbrec_new(l.d, l.b.h);
    /* Bits 16-31 in the receive producer, read when a SEND needs one. */
    qtest_writel(qrs_qts(l.d), rec + REC_RQ_PROD, 0x10001);
    loop_post_send(&l, &l.a, &w, l.src, 10, l.src_key);
    expect_event(l.d, RS_EV_QP_FATAL, l.b.h);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(dbrec_get(l.d, rec, REC_RQ_ACTIVE), ==, 0);
    assert_alive(l.d);
}

/*
 * The record moves with the VM: a send queue held active in SQD with a
 * WQE posted through the record alone, and receives posted the same way.
 * On the destination SQD -> RTS sends it and the receive is found.
 */
static void test_dbrec_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_device_stats st;
    QRdmaSession *src, *d;
    uint64_t reca, recb;
    QTestState *to;
    QPCIBus *bus;
    Loop l;

    loop_setup(&l, obj);
    src = l.d;
    reca = dbrec_new(l.d, l.a.h);
    recb = dbrec_new(l.d, l.b.h);
    loop_pattern(&l, l.src, 1024, 0x5c);
    g_assert_false(dbrec_post_recv(&l, &l.b, recb, 0x600, l.dst, 512));
    g_assert_false(dbrec_post_recv(&l, &l.b, recb, 0x601, l.dst + 512, 512));
    modify_state(l.d, &l.a, RS_QPS_RTS, RS_QPS_SQD, 0, false);
    g_assert_true(dbrec_post_send(&l, &l.a, reca, 0xf0, l.src, 100));
    g_assert_false(dbrec_post_send(&l, &l.a, reca, 0xf1, l.src + 512, 200));

    to = mig_move(qrs_qts(src), NULL, NULL);
    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    mig_attach(d, bus, src);
    l.d = d;

    g_assert_cmpuint(dbrec_get(l.d, reca, REC_SQ_ACTIVE), ==, 1);
    g_assert_cmpuint(dbrec_get(l.d, recb, REC_RQ_ACTIVE), ==, 1);
    modify_state(l.d, &l.a, RS_QPS_SQD, RS_QPS_RTS, 0, false);
    dbrec_expect_pairs(&l, 2, 0x600, 0xf0);
    loop_assert_same(&l, l.src, l.dst, 100);
    loop_assert_same(&l, l.src + 512, l.dst + 512, 200);
    g_assert_cmpuint(dbrec_get(l.d, reca, REC_SQ_ACTIVE), ==, 0);
    query_stats(l.d, &st, sizeof(st));
    /* One send and two receives came through the records. */
    g_assert_cmpuint(st.db_record_pickups, ==, 3);
    assert_alive(d);

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
}

/*
 * A stream of n SENDs of len bytes from l->a to l->b with up to 8 of
 * each queue outstanding, posted as the provider does (records at reca
 * and recb, or 0 for none); the doorbell writes and record pickups it
 * cost, per message.
 */
static void dbrec_stream(Loop *l, uint64_t reca, uint64_t recb, int n,
                         uint32_t len, double *mmio, double *pickups)
{
    int sent = 0, recvd = 0, sdone = 0, rdone = 0;
    struct rs_device_stats s0, s1;

    dbrec_stats(l->d, &s0);
    while (sdone < n || rdone < n) {
        struct rs_cqe cqe;

        while (recvd < n && recvd - rdone < 8) {
            dbrec_post_recv(l, &l->b, recb, recvd++, l->dst, len);
        }
        while (sent < n && sent - sdone < 8 && sent < recvd) {
            dbrec_post_send(l, &l->a, reca, 0x10000 + sent++, l->src, len);
        }
        loop_poll(l, &cqe);
        g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
        if (cqe.opcode == RS_WR_RECV) {
            g_assert_cmphex(cqe.wr_id, ==, rdone++);
        } else {
            g_assert_cmphex(cqe.wr_id, ==, 0x10000 + sdone++);
        }
    }
    dbrec_stats(l->d, &s1);
    *mmio = (double)(s1.db_mmio_writes - s0.db_mmio_writes) / n;
    *pickups = (double)(s1.db_record_pickups - s0.db_record_pickups) / n;
}

/*
 * Doorbells per message of a stream, without and with records: every
 * receive post and some of the send posts need none with records.
 */
static void test_dbrec_stream(void *obj, void *data, QGuestAllocator *alloc)
{
    double off_mmio, off_pick, on_mmio, on_pick;
    uint64_t reca, recb;
    Loop l;

    loop_setup(&l, obj);
    dbrec_stream(&l, 0, 0, 256, 4096, &off_mmio, &off_pick);
    reca = dbrec_new(l.d, l.a.h);
    recb = dbrec_new(l.d, l.b.h);
    dbrec_stream(&l, reca, recb, 256, 4096, &on_mmio, &on_pick);
    g_test_message("doorbells per message: %.3f without records, %.3f "
                   "with (%.3f posts per message from records)",
                   off_mmio, on_mmio, on_pick);
    g_assert_cmpfloat(off_mmio, ==, 2.0);
    g_assert_cmpfloat(off_pick, ==, 0.0);
    g_assert_cmpfloat(on_mmio, <=, 1.0);
    g_assert_cmpfloat(on_mmio + on_pick, ==, 2.0);
    assert_alive(l.d);
}

static void *dbrec_off_before(GString *cmd_line, void *arg)
{
    const char *at = strstr(cmd_line->str, ",bundle=off");

    g_assert_nonnull(at);
    g_string_insert(cmd_line, at - cmd_line->str + strlen(",bundle=off"),
                    ",db-record=off");
    qos_invalidate_command_line();
    return arg;
}

/*
 * db-record=off, an adapter of ABI 1.10 as far as the guest sees: no
 * RS_CAP_DB_RECORD, SET_QP_DB_RECORD refused, doorbells as ever, and
 * still counted.
 */
static void test_dbrec_off(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_device_stats s0, s1;
    struct rs_send_wqe_ctrl w = {
        .wr_id = 0xe0, .opcode = RS_WR_SEND,
        .flags = RS_WQE_F_SIGNALED, .num_sge = 1,
    };
    Loop l;

    loop_setup(&l, obj);
    g_assert_false(qrs_readl(l.d, A_RS_CAPS) & RS_CAP_DB_RECORD);
    RS_ASSERT_STATUS(dbrec_set(l.d, l.a.h, qrs_alloc_zeroed(l.d, 64)),
                     RS_STATUS_NOT_SUPPORTED);
    dbrec_stats(l.d, &s0);
    loop_post_recv(&l, &l.b, 0x500, l.dst, 256, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 99, l.src_key);
    loop_expect(&l, 0x500, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xe0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    dbrec_stats(l.d, &s1);
    g_assert_cmpuint(s1.db_mmio_writes - s0.db_mmio_writes, ==, 2);
    g_assert_cmpuint(s1.db_record_pickups, ==, 0);
    assert_alive(l.d);
}

static void register_dbrec_tests(void)
{
    QOSGraphTestOptions off = { .before = dbrec_off_before };

    qos_add_test("dbrec/sq-pickup", "rdma-session", test_dbrec_sq_pickup,
                 NULL);
    qos_add_test("dbrec/idle-race", "rdma-session", test_dbrec_idle_race,
                 NULL);
    qos_add_test("dbrec/rq-pickup", "rdma-session", test_dbrec_rq_pickup,
                 NULL);
    qos_add_test("dbrec/stream", "rdma-session", test_dbrec_stream, NULL);
    qos_add_test("dbrec/hostile-sq", "rdma-session", test_dbrec_hostile_sq,
                 NULL);
    qos_add_test("dbrec/hostile-rq", "rdma-session", test_dbrec_hostile_rq,
                 NULL);
    rs_add_standalone_test("dbrec/migrate", test_dbrec_migrate, NULL);
    qos_add_test("dbrec/off", "rdma-session", test_dbrec_off, &off);
}

libqos_init(register_dbrec_tests);
