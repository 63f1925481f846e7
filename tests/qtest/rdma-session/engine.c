/*
 * rdma-session qtests: the transport engine over loopback (SEND, WRITE,
 * READ, atomics, UC, flush, SRQ, IPv6, session groups)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

static void loop_setup_type(Loop *l, void *obj, uint8_t type)
{
    loop_init(l, admin_setup(obj), type, 0);
    loop_connect(l, &l->a, l->b.qpn);
    loop_connect(l, &l->b, l->a.qpn);
}

static void test_engine_loopback(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Loop l;
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;

    loop_setup(&l, obj);

    /* RC SEND of 3000 bytes: three packets at MTU 1024. */
    loop_pattern(&l, l.src, 3000, 0x11);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb0, l.dst, LOOP_BUF, l.dst_key);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa0;
    w.opcode = RS_WR_SEND_IMM;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.imm_or_inv = 0x01020304;
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    loop_poll(&l, &cqe);                /* the receive completes first */
    g_assert_cmphex(cqe.wr_id, ==, 0xb0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.opcode, ==, RS_WR_RECV);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x01020304);
    g_assert_true(cqe.wc_flags & RS_WC_F_IMM);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.opcode, ==, RS_WR_SEND_IMM);
    g_assert_cmpuint(cqe.qpn, ==, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst, 3000);
    g_assert_true(is_filled(l.d, l.dst + 3000, 0xee, LOOP_BUF - 3000));

    /* RDMA WRITE of 5000 bytes at an unaligned offset. */
    loop_pattern(&l, l.src, 5000, 0x5c);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_op(&l, &l.a, 0xa1, RS_WR_RDMA_WRITE, 0, l.dst + 100,
                 l.dst_key, l.src, 5000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 100, 5000);
    g_assert_true(is_filled(l.d, l.dst, 0xee, 100));
    g_assert_true(is_filled(l.d, l.dst + 5100, 0xee, LOOP_BUF - 5100));

    /* RDMA READ back into the source buffer. */
    fill(l.d, l.src, 0, LOOP_BUF);
    loop_post_op(&l, &l.a, 0xa2, RS_WR_RDMA_READ, 0, l.dst + 100,
                 l.dst_key, l.src, 5000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa2);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    loop_assert_same(&l, l.src, l.dst + 100, 5000);

    /* A bad rkey: remote access NAK, error completion, memory intact. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_op(&l, &l.a, 0xa3, RS_WR_RDMA_WRITE, 0, l.dst,
                 l.dst_key ^ 0x40, l.src, 2000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);
    assert_alive(l.d);
}

/* A QP of @type on the loopback objects, in RESET. */
static void loop_new_qp(Loop *l, LoopQp *q, uint8_t type)
{
    memset(q, 0, sizeof(*q));
    qp_template(l->d, &q->c, type, l->pd, l->cq.h, l->cq.h);
    q->h = new_qp(l->d, &q->c);
    q->qpn = HINDEX(q->h);
}

/* @u and @v to RTS, connected to each other through IPv6 GID 2. */
static void ipv6_connect(Loop *l, LoopQp *u, LoopQp *v, uint32_t grp)
{
    struct rs_qp_attr qa;
    int i;

    for (i = 0; i < 2; i++) {
        LoopQp *q = i ? v : u;
        static const uint8_t path[] = {
            RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS,
        };
        int j;

        for (j = 1; j < ARRAY_SIZE(path); j++) {
            uint32_t mask = std_mask(RS_QPT_RC, path[j - 1], path[j]);

            std_attr(&qa, path[j - 1], path[j]);
            gid_v6(qa.ah.dgid, 0x70);
            qa.ah.gid_index = 2;
            qa.dest_qp_num = i ? u->qpn : v->qpn;
            qa.rq_psn = qa.sq_psn = LOOP_PSN;
            if (path[j] == RS_QPS_RTR) {
                qa.session_group = grp;
                mask |= RS_QP_ATTR_SESSION_GROUP;
            }
            RS_ASSERT_OK(qrs_modify_qp(l->d, q->h, &qa, mask));
        }
    }
}

/*
 * RoCEv2 over IPv6: two RC QPs over a link-local GID (loopback) and a UD
 * datagram whose receive GRH area is the IPv6 header itself.
 */
static void test_engine_ipv6(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_cmd_add_gid g = {
        .index = 2, .type = RS_GID_ROCE_V2_IPV6, .vni = 0,
    };
    struct rs_cmd_create_session sc;
    struct rs_send_wqe_ctrl w;
    struct rs_ah_attr a;
    struct rs_cqe cqe;
    uint8_t grh[RS_GRH_BYTES];
    LoopQp u, v;
    uint32_t s = 0, got = ~0u, grp;
    uint64_t av, rbuf;
    Loop l;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    gid_v6(g.gid, 0x70);
    RS_ASSERT_OK(qrs_add_gid(l.d, &g, &got));

    /* A second RC pair whose session and AV use the IPv6 GID. */
    session_template(&sc, 2, 49200);
    gid_v6(sc.dst_ip, 0x70);
    RS_ASSERT_OK(qrs_create_session(l.d, &sc, &s));
    grp = new_group(l.d, RS_GROUP_ROUND_ROBIN, s, 0);
    loop_new_qp(&l, &u, RS_QPT_RC);
    loop_new_qp(&l, &v, RS_QPT_RC);
    ipv6_connect(&l, &u, &v, grp);

    /* SEND of 3000 bytes (3 packets) and RDMA READ back, over IPv6. */
    loop_pattern(&l, l.src, 3000, 0x61);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &v, 0xb1, l.dst, LOOP_BUF, RS_LOCAL_DMA_LKEY);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa1;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &u, &w, l.src, 3000, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xb1, RS_WR_RECV, RS_WC_SUCCESS);
    fr_expect(&l, 0xa1, RS_WR_SEND, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst, 3000);
    g_assert_true(is_filled(l.d, l.dst + 3000, 0xee, LOOP_BUF - 3000));
    fill(l.d, l.src, 0, LOOP_BUF);
    loop_post_op(&l, &u, 0xa2, RS_WR_RDMA_READ, 0, l.dst, l.dst_key, l.src,
               3000, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xa2, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst, 3000);

    /* UD from the IPv6 GID: the GRH area holds the IPv6 header. */
    loop_new_qp(&l, &u, RS_QPT_UD);
    loop_new_qp(&l, &v, RS_QPT_UD);
    qp_walk(l.d, u.h, RS_QPT_UD, RS_QPS_RTS);
    qp_walk(l.d, v.h, RS_QPT_UD, RS_QPS_RTS);
    memset(&a, 0, sizeof(a));
    gid_v6(a.dgid, 0x70);
    a.gid_index = 2;
    a.hop_limit = 1;
    a.traffic_class = 0x28;
    a.flow_label = 0x12345;
    av = qrs_alloc_zeroed(l.d, sizeof(a));
    qtest_memwrite(qrs_qts(l.d), av, &a, sizeof(a));
    rbuf = loop_buf(l.d, PAGE);
    fill(l.d, rbuf, 0xee, PAGE);
    loop_pattern(&l, l.src, 200, 0x17);
    loop_post_recv(&l, &v, 0xb3, rbuf, PAGE, RS_LOCAL_DMA_LKEY);
    av_addr_post(&l, &u, 0xa3, av, v.qpn, l.src, 200);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, RS_GRH_BYTES + 200);
    /* The network header type, which UCX's UD transport relies on. */
    g_assert_cmphex(cqe.wc_flags & (RS_WC_F_GRH | RS_WC_F_IPV4 | RS_WC_F_IPV6),
                    ==, RS_WC_F_GRH | RS_WC_F_IPV6);
    fr_expect(&l, 0xa3, RS_WR_SEND, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf + RS_GRH_BYTES, 200);
    qtest_memread(qrs_qts(l.d), rbuf, grh, sizeof(grh));
    /* version 6, traffic class 0x28 | ECT(0), flow label 0x12345 */
    g_assert_cmphex(grh[0], ==, 0x62);
    g_assert_cmphex(grh[1], ==, 0xa1);
    g_assert_cmphex(grh[2], ==, 0x23);
    g_assert_cmphex(grh[3], ==, 0x45);
    /* payload length: UDP 8 + BTH 12 + DETH 8 + 200 + ICRC 4 */
    g_assert_cmpuint(grh[4] << 8 | grh[5], ==, 8 + 12 + 8 + 200 + 4);
    g_assert_cmpuint(grh[6], ==, 17);           /* next header: UDP */
    g_assert_cmpuint(grh[7], ==, 1);            /* hop limit */
    g_assert_cmpmem(grh + 8, 16, g.gid, 16);
    g_assert_cmpmem(grh + 24, 16, g.gid, 16);
    assert_alive(l.d);
}

/*
 * Session groups on the wire: an RC QP bound to a group of three sessions
 * (UDP source ports 50001-50003) sends every packet of its messages on
 * one session.  Nobody acknowledges them, so even a round-robin group
 * never moves the QP to its next session: it moves only at a flowlet
 * boundary with nothing outstanding (the path area shows the moves); an
 * active-backup group keeps to its first session.
 */
#define GRP_L3      14                  /* IPv4 header */
#define GRP_BTH     (14 + 20 + 8)           /* BTH after IPv4 and UDP */

static void group_run(LanEnv *e, uint8_t policy, const uint16_t *want,
                      int nmsgs)
{
    QRdmaSession *d = e->d;
    struct rs_cmd_create_session sc;
    struct rs_cmd_create_session_group gc = { 0 };
    struct rs_cmd_create_qp qc;
    struct rs_send_wqe_ctrl w;
    struct rs_sge sge;
    uint8_t f[RS_LAN_MAX_FRAME];
    uint32_t pd, cq, qp, grp, key, psn = 0;
    uint64_t buf;
    int i, j;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    cq = new_cq(d, 5);
    for (i = 0; i < 3; i++) {
        session_template(&sc, 0, 50001 + i);
        RS_ASSERT_OK(qrs_create_session(d, &sc, &gc.session[i]));
    }
    gc.nsessions = 3;
    gc.policy = policy;
    RS_ASSERT_OK(qrs_create_session_group(d, &gc, &grp));
    qp_template(d, &qc, RS_QPT_RC, pd, cq, cq);
    qc.session_group = grp;
    qp = new_qp(d, &qc);
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_RTS);
    buf = loop_buf(d, PAGE);
    key = loop_mr(&(Loop) { .d = d, .pd = pd }, buf, PAGE);

    /* nmsgs SENDs of 1500 bytes: two packets each at MTU 1024. */
    for (i = 0; i < nmsgs; i++) {
        uint64_t slot = qc.sq_addr + (uint64_t)i *
                        (qrs_qp_sq_bytes(&qc) >> qc.sq_log_size);

        memset(&w, 0, sizeof(w));
        w.wr_id = i;
        w.opcode = RS_WR_SEND;
        w.num_sge = 1;
        sge = (struct rs_sge) { .addr = buf, .length = 1500, .lkey = key };
        qtest_memwrite(qrs_qts(d), slot, &w, sizeof(w));
        qtest_memwrite(qrs_qts(d), slot + sizeof(w), &sge, sizeof(sge));
    }
    qrs_db_writel(d, 0, RS_DB_SQ, HINDEX(qp) | nmsgs << 16);
    for (i = 0; i < nmsgs; i++) {
        for (j = 0; j < 2; j++) {
            ssize_t n = lan_sock_recv(e->fd, f, sizeof(f), RS_QOS_TIMEOUT_US);

            g_assert_cmpint(n, >, GRP_BTH + 12);
            g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
            g_assert_cmpuint(f[GRP_L3 + 9], ==, 17);
            /* UDP source port of the message's session, port 4791 */
            g_assert_cmpuint(lduw_be_p(f + GRP_L3 + 20), ==, want[i]);
            g_assert_cmpuint(lduw_be_p(f + GRP_L3 + 22), ==, 4791);
            /* BTH: SEND_FIRST then SEND_LAST, consecutive PSNs */
            g_assert_cmphex(f[GRP_BTH], ==, j ? 0x02 : 0x00);
            if (i || j) {
                g_assert_cmphex(ldl_be_p(f + GRP_BTH + 8) & 0xffffff, ==,
                                (psn + 1) & 0xffffff);
            }
            psn = ldl_be_p(f + GRP_BTH + 8) & 0xffffff;
        }
    }
    lan_expect_quiet(e);
}

static void test_group_round_robin(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    static const uint16_t want[] = {
        50001, 50001, 50001, 50001, 50001,
    };
    LanEnv e;

    lan_setup(&e, obj, data, 0, 0);
    group_run(&e, RS_GROUP_ROUND_ROBIN, want, ARRAY_SIZE(want));
    assert_alive(e.d);
}

static void test_group_active_backup(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    static const uint16_t want[] = { 50001, 50001, 50001 };
    LanEnv e;

    lan_setup(&e, obj, data, 0, 0);
    group_run(&e, RS_GROUP_ACTIVE_BACKUP, want, ARRAY_SIZE(want));
    assert_alive(e.d);
}

/* No completion arrives while the engine's timers run for a while. */
static void loop_poll_none(Loop *l)
{
    struct rs_cqe cqe;
    int i;

    for (i = 0; i < 20; i++) {
        qtest_clock_step(qrs_qts(l->d), 1000000);
        g_assert_false(eng_cq_peek(l->d, &l->cq, &cqe));
    }
}

#define ATOMIC_INIT     0x1122334455667788ull

static void test_engine_atomic(void *obj, void *data, QGuestAllocator *alloc)
{
    QTestState *qts;
    struct rs_cqe cqe;
    uint32_t akey;
    Loop l;

    loop_setup(&l, obj);
    qts = qrs_qts(l.d);
    akey = loop_mr_access(&l, l.dst, LOOP_BUF, RS_ACCESS_LOCAL_WRITE |
                          RS_ACCESS_REMOTE_ATOMIC);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    fill(l.d, l.src, 0xee, LOOP_BUF);
    qtest_writeq(qts, l.dst + 8, ATOMIC_INIT);

    /* FETCH_ADD: memory += add; the original lands in the local SGE. */
    loop_atomic(&l, 0xc0, RS_WR_ATOMIC_FETCH_ADD, l.dst + 8, akey,
                0x0100000000000001ull, 0, l.src, 8);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xc0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.opcode, ==, RS_WR_ATOMIC_FETCH_ADD);
    g_assert_cmpuint(cqe.byte_len, ==, 8);
    g_assert_cmphex(qtest_readq(qts, l.src), ==, ATOMIC_INIT);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0x1222334455667789ull);
    g_assert_true(is_filled(l.d, l.dst, 0xee, 8));
    g_assert_true(is_filled(l.d, l.dst + 16, 0xee, LOOP_BUF - 16));
    g_assert_true(is_filled(l.d, l.src + 8, 0xee, 64));

    /* CMP_SWP that matches: swapped. */
    loop_atomic(&l, 0xc1, RS_WR_ATOMIC_CMP_SWP, l.dst + 8, akey,
                0x1222334455667789ull, 0xdeadbeefcafef00dull, l.src + 8, 8);
    loop_expect(&l, 0xc1, RS_WC_SUCCESS, RS_WR_ATOMIC_CMP_SWP, l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.src + 8), ==, 0x1222334455667789ull);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);

    /* CMP_SWP that does not match: memory unchanged, original returned. */
    loop_atomic(&l, 0xc2, RS_WR_ATOMIC_CMP_SWP, l.dst + 8, akey, 0, 1,
                l.src + 16, 8);
    loop_expect(&l, 0xc2, RS_WC_SUCCESS, RS_WR_ATOMIC_CMP_SWP, l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.src + 16), ==, 0xdeadbeefcafef00dull);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);

    /* A local SGE that is not 8 bytes: local length error, nothing sent. */
    loop_atomic(&l, 0xc3, RS_WR_ATOMIC_FETCH_ADD, l.dst + 8, akey, 1, 0,
                l.src + 24, 4);
    loop_expect(&l, 0xc3, RS_WC_LOC_LEN_ERR, RS_WR_ATOMIC_FETCH_ADD,
                l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);
    g_assert_true(is_filled(l.d, l.src + 24, 0xee, 8));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);

    /* Misaligned remote address: invalid request NAK, memory intact. */
    loop_reconnect(&l);
    loop_atomic(&l, 0xc4, RS_WR_ATOMIC_FETCH_ADD, l.dst + 12, akey, 1, 0,
                l.src + 24, 8);
    loop_expect(&l, 0xc4, RS_WC_REM_INV_REQ_ERR, RS_WR_ATOMIC_FETCH_ADD,
                l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);
    g_assert_true(is_filled(l.d, l.dst + 16, 0xee, LOOP_BUF - 16));
    g_assert_true(is_filled(l.d, l.src + 24, 0xee, 8));
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);

    /* An MR without the remote atomic right: remote access error. */
    loop_reconnect(&l);
    loop_atomic(&l, 0xc5, RS_WR_ATOMIC_FETCH_ADD, l.dst + 8, l.dst_key, 1,
                0, l.src + 24, 8);
    loop_expect(&l, 0xc5, RS_WC_REM_ACCESS_ERR, RS_WR_ATOMIC_FETCH_ADD,
                l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);

    /* Out of the MR's bounds: remote access error. */
    loop_reconnect(&l);
    loop_atomic(&l, 0xc6, RS_WR_ATOMIC_CMP_SWP, l.dst + LOOP_BUF, akey, 0,
                0, l.src + 24, 8);
    loop_expect(&l, 0xc6, RS_WC_REM_ACCESS_ERR, RS_WR_ATOMIC_CMP_SWP,
                l.a.qpn);
    g_assert_true(is_filled(l.d, l.src + 24, 0xee, 8));

    /* Atomics are RC only: a UD or UC QP refuses them (see engine/uc). */
}

/*
 * QP a (10.0.0.1) sends to QP b at 10.0.0.2, which is not ours yet, so its
 * packets go to the wire where the test keeps them; then 10.0.0.2 becomes
 * ours and QP b's address (wire_peer()), and the test feeds them back to
 * QP b (wire_feed()), as often as it likes, as from b's peer 10.0.0.3.
 * QP b answers to 10.0.0.3: the wire again.
 */
static void wire_setup(Loop *l, LanEnv *e, void *obj, void *data,
                       uint8_t type)
{
    uint64_t bufs[4];
    int i;

    lan_setup(e, obj, data, 0, 2);
    for (i = 0; i < 4; i++) {
        bufs[i] = qrs_alloc_zeroed(e->d, LAN_BUF_SIZE);
        lan_post(e, &e->rx, bufs[i], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(e, &e->rx);
    loop_init(l, e->d, type, 0);
    loop_connect_to(l, &l->a, l->b.qpn, 2);
}

static void test_engine_atomic_dup(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    g_autofree uint8_t *req = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *rsp = g_malloc(RS_LAN_MAX_FRAME);
    struct rs_send_wqe_ctrl w;
    QTestState *qts;
    uint32_t akey;
    ssize_t n;
    LanEnv e;
    Loop l;
    int i;

    wire_setup(&l, &e, obj, data, RS_QPT_RC);
    qts = qrs_qts(l.d);
    akey = loop_mr_access(&l, l.dst, LOOP_BUF, RS_ACCESS_LOCAL_WRITE |
                          RS_ACCESS_REMOTE_ATOMIC);
    qtest_writeq(qts, l.dst + 64, ATOMIC_INIT);

    memset(&w, 0, sizeof(w));
    w.wr_id = 0xd0;
    w.opcode = RS_WR_ATOMIC_CMP_SWP;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst + 64;
    w.rkey = akey;
    w.compare_add = ATOMIC_INIT;
    w.swap = 0x0102030405060708ull;
    loop_post_send(&l, &l.a, &w, l.src, 8, l.src_key);
    n = roce_recv(&e, req, OP_CMP_SWAP);

    /* AtomicETH after the BTH, big-endian: VA, rkey, swap, compare. */
    g_assert_cmphex(ldq_be_p(req + 54), ==, l.dst + 64);
    g_assert_cmphex(ldl_be_p(req + 62), ==, akey);
    g_assert_cmphex(ldq_be_p(req + 66), ==, 0x0102030405060708ull);
    g_assert_cmphex(ldq_be_p(req + 74), ==, ATOMIC_INIT);
    g_assert_cmphex(ldl_be_p(req + 50) & 0xffffff, ==, LOOP_PSN);

    /*
     * Executed once; the same request again (its response was "lost") is
     * answered from the responder resource with the same original value.
     */
    wire_peer(&l);
    for (i = 0; i < 3; i++) {
        wire_feed(&e, req, n);
        roce_recv(&e, rsp, OP_ATOMIC_ACK);
        g_assert_cmphex(ldl_be_p(rsp + 50) & 0xffffff, ==, LOOP_PSN);
        g_assert_cmphex(rsp[54], ==, AETH_ACK);      /* AETH: ACK */
        g_assert_cmphex(ldq_be_p(rsp + 58), ==, ATOMIC_INIT);
        g_assert_cmphex(qtest_readq(qts, l.dst + 64), ==,
                        0x0102030405060708ull);
    }
    /* Someone else changes the value: a duplicate still does not. */
    qtest_writeq(qts, l.dst + 64, ATOMIC_INIT);
    wire_feed(&e, req, n);
    roce_recv(&e, rsp, OP_ATOMIC_ACK);
    g_assert_cmphex(ldq_be_p(rsp + 58), ==, ATOMIC_INIT);
    g_assert_cmphex(qtest_readq(qts, l.dst + 64), ==, ATOMIC_INIT);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);
}

static void test_engine_uc(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    loop_setup_type(&l, obj, RS_QPT_UC);

    /* UC SEND of 3000 bytes: three packets, no ACK, both complete. */
    loop_pattern(&l, l.src, 3000, 0x21);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb0, l.dst, LOOP_BUF, l.dst_key);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa0;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    loop_expect(&l, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst, 3000);
    g_assert_true(is_filled(l.d, l.dst + 3000, 0xee, LOOP_BUF - 3000));

    /* UC RDMA WRITE with immediate: data placed, receive WQE consumed. */
    loop_pattern(&l, l.src, 5000, 0x37);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb1, l.dst, 0, l.dst_key);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa1;
    w.opcode = RS_WR_RDMA_WRITE_IMM;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.imm_or_inv = 0x0a0b0c0d;
    w.remote_addr = l.dst + 100;
    w.rkey = l.dst_key;
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.opcode, ==, RS_WR_RECV_RDMA_IMM);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x0a0b0c0d);
    loop_expect(&l, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE_IMM, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst + 100, 5000);
    g_assert_true(is_filled(l.d, l.dst, 0xee, 100));
    g_assert_true(is_filled(l.d, l.dst + 5100, 0xee, LOOP_BUF - 5100));

    /*
     * A bad rkey: UC drops the message silently.  The sender completes
     * (no ACKs), the receiver's memory is untouched, both QPs stay up.
     */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_op(&l, &l.a, 0xa2, RS_WR_RDMA_WRITE, 0, l.dst,
                 l.dst_key ^ 0x40, l.src, 2000, l.src_key);
    loop_expect(&l, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, l.a.qpn);
    loop_poll_none(&l);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);

    /* No receive WQE: dropped, no RNR NAK, no completion. */
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa3;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0xa3, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    loop_poll_none(&l);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));

    /* READ and atomics are not UC operations. */
    loop_post_op(&l, &l.a, 0xa4, RS_WR_RDMA_READ, 0, l.dst,
                 l.dst_key, l.src, 100, l.src_key);
    loop_expect(&l, 0xa4, RS_WC_LOC_QP_OP_ERR, RS_WR_RDMA_READ, l.a.qpn);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
}

/*
 * A PSN gap in a UC message: the rest of it is dropped without a NAK or a
 * completion and the receive WQE serves the next message.
 */
static void test_engine_uc_gap(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree uint8_t *p0 = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *p1 = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *p2 = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *p3 = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *junk = g_malloc(RS_LAN_MAX_FRAME);
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    ssize_t n0, n1, n2, n3;
    LanEnv e;
    Loop l;

    wire_setup(&l, &e, obj, data, RS_QPT_UC);
    loop_pattern(&l, l.src, 3000, 0x44);
    loop_pattern(&l, l.src + 3000, 500, 0x55);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xe0;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    n0 = roce_recv(&e, p0, OP_UC | OP_SEND_FIRST);
    n1 = roce_recv(&e, p1, OP_UC | OP_SEND_MIDDLE);
    n2 = roce_recv(&e, p2, OP_UC | OP_SEND_LAST);
    g_assert_false(p2[50] & 0x80);          /* UC: no AckReq */
    loop_expect(&l, 0xe0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    w.wr_id = 0xe1;
    loop_post_send(&l, &l.a, &w, l.src + 3000, 500, l.src_key);
    n3 = roce_recv(&e, p3, OP_UC | OP_SEND_ONLY);
    loop_expect(&l, 0xe1, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);

    wire_peer(&l);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb0, l.dst, LOOP_BUF, l.dst_key);

    /* FIRST, then LAST: the MIDDLE was lost.  Nothing completes. */
    wire_feed(&e, p0, n0);
    wire_feed(&e, p2, n2);
    /* The late MIDDLE is part of the dropped message too. */
    wire_feed(&e, p1, n1);
    loop_poll_none(&l);
    /* No NAK on the wire: UC never answers. */
    g_assert_cmpint(lan_sock_recv(e.fd, junk, RS_LAN_MAX_FRAME, LAN_QUIET_US),
                    ==, -1);

    /* The next message lands in the same receive WQE, from its start. */
    wire_feed(&e, p3, n3);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 500);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    loop_assert_same(&l, l.src + 3000, l.dst, 500);
    /* Bytes 500.. are the dropped message's FIRST packet, not more. */
    loop_assert_same(&l, l.src + 500, l.dst + 500, 1024 - 500);
    g_assert_true(is_filled(l.d, l.dst + 1024, 0xee, LOOP_BUF - 1024));

    /* The whole 3-packet message again, in order: it is received. */
    loop_post_recv(&l, &l.b, 0xb1, l.dst + 4096, 4096, l.dst_key);
    wire_feed(&e, p0, n0);
    wire_feed(&e, p1, n1);
    wire_feed(&e, p2, n2);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    loop_assert_same(&l, l.src, l.dst + 4096, 3000);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);
}

static void test_engine_flush(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_send_wqe_ctrl w;
    struct rs_qp_attr a;
    Loop l;

    loop_setup(&l, obj);

    /* MODIFY_QP to ERR: posted receive WQEs complete flushed, in order. */
    loop_post_recv(&l, &l.b, 0xb0, l.dst, 100, l.dst_key);
    loop_post_recv(&l, &l.b, 0xb1, l.dst + 100, 100, l.dst_key);
    loop_post_recv(&l, &l.b, 0xb2, l.dst + 200, 100, l.dst_key);
    std_attr(&a, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.b.h, &a, RS_QP_ATTR_STATE));
    loop_expect(&l, 0xb0, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xb1, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xb2, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    loop_poll_none(&l);

    /* Posted in ERR: flushed too, send WQEs signaled or not. */
    loop_post_recv(&l, &l.b, 0xb3, l.dst, 100, l.dst_key);
    loop_expect(&l, 0xb3, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xb4;
    w.opcode = RS_WR_SEND;
    w.num_sge = 1;
    loop_post_send(&l, &l.b, &w, l.src, 100, l.src_key);
    w.wr_id = 0xb5;
    w.opcode = RS_WR_RDMA_WRITE;
    w.flags = RS_WQE_F_SIGNALED;
    loop_post_send(&l, &l.b, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0xb4, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, l.b.qpn);
    loop_expect(&l, 0xb5, RS_WC_WR_FLUSH_ERR, RS_WR_RDMA_WRITE, l.b.qpn);
    loop_poll_none(&l);

    /*
     * An error completion first, then the WQEs behind it flushed: a WRITE
     * with a bad rkey and two more, one unsignaled.  QP b is in RESET and
     * then RTS again, with a receive WQE that the error leaves flushed.
     */
    loop_reconnect(&l);
    loop_post_recv(&l, &l.b, 0xb6, l.dst, 100, l.dst_key);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa0;
    w.opcode = RS_WR_RDMA_WRITE;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst;
    w.rkey = l.dst_key ^ 0x40;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    w.wr_id = 0xa1;
    w.opcode = RS_WR_SEND;
    w.flags = 0;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    w.wr_id = 0xa2;
    w.flags = RS_WQE_F_SIGNALED;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0xa0, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE, l.a.qpn);
    loop_expect(&l, 0xb6, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xa1, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, l.a.qpn);
    loop_expect(&l, 0xa2, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, l.a.qpn);
    loop_poll_none(&l);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);

    /* RESET drops what is left without completions. */
    std_attr(&a, RS_QPS_ERR, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.a.h, &a, RS_QP_ATTR_STATE));
    loop_poll_none(&l);
}

/*
 * The SRQ of @c (limit 2) feeding QP b of the loopback pair, recreated
 * on it, and a second pair c2 -> b2 whose b2 is on it too; returns it.
 */
static uint32_t srq_loop_setup(Loop *l, struct rs_cmd_create_srq *c,
                               LoopQp *c2, LoopQp *b2)
{
    struct rs_cmd_create_qp q;
    struct rs_qp_attr a;
    uint32_t srq;

    /* QP b and a second QP b2 take receive WQEs from one SRQ. */
    srq_template(l->d, c, l->pd, 2, 1);
    c->srq_limit = 2;
    RS_ASSERT_OK(qrs_create_srq(l->d, c, &srq));
    memset(b2, 0, sizeof(*b2));
    qp_template(l->d, &b2->c, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    b2->c.srq = srq;
    b2->c.rq_addr = 0;
    b2->h = new_qp(l->d, &b2->c);
    b2->qpn = HINDEX(b2->h);
    loop_new_qp(l, c2, RS_QPT_RC);
    loop_connect(l, c2, b2->qpn);
    loop_connect(l, b2, c2->qpn);
    /* QP b again, now on the SRQ: a new QP in its place. */
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DESTROY_QP, l->b.h));
    q = l->b.c;
    q.srq = srq;
    q.rq_addr = 0;
    l->b.c = q;
    l->b.h = new_qp(l->d, &q);
    l->b.qpn = HINDEX(l->b.h);
    l->b.sq_pi = l->b.rq_pi = 0;
    std_attr(&a, 0, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(l->d, l->a.h, &a, RS_QP_ATTR_STATE));
    l->a.sq_pi = 0;
    loop_connect(l, &l->a, l->b.qpn);
    loop_connect(l, &l->b, l->a.qpn);
    /* Its RQ doorbell names no receive queue: ignored. */
    qrs_db_writel(l->d, 0, RS_DB_RQ, l->b.qpn | 1 << 16);
    return srq;
}

/* Wait until the CQ holds @n entries from its consumer index on. */
static void cq_wait_unpolled(Loop *l, uint32_t n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    EngCq peek = l->cq;
    struct rs_cqe cqe;

    peek.ci += n - 1;
    while (!eng_cq_peek(l->d, &peek, &cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(qrs_qts(l->d), 1000);
    }
}

/*
 * RESIZE_CQ with completions not yet polled: a ring too small for them
 * is refused and the CQ keeps working on the old one; a larger ring gets
 * them in the same order (owner bits of their new places), and traffic
 * goes on into it.  Then resizes up and down with sends in flight: every
 * completion arrives once, in order per queue.
 */
static void test_engine_cq_resize(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    struct rs_cqe before[12], after, cqe;
    struct rs_send_wqe_ctrl w;
    uint32_t next_send = 0, next_recv = 0, posted = 0;
    uint64_t small, big;
    uint8_t log;
    Loop l;
    int i, round;

    loop_setup(&l, obj);
    memset(&w, 0, sizeof(w));
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_pattern(&l, l.src, LOOP_BUF, 0x31);
    for (i = 0; i < 6; i++) {
        loop_post_recv(&l, &l.b, 0xb000 + i, l.dst + i * 64, 64, l.dst_key);
        w.wr_id = 0xa000 + i;
        loop_post_send(&l, &l.a, &w, l.src + i * 64, 64, l.src_key);
    }
    cq_wait_unpolled(&l, 12);
    for (i = 0; i < 12; i++) {
        qtest_memread(qrs_qts(l.d), l.cq.ring + i * sizeof(cqe), &before[i],
                      sizeof(cqe));
    }

    small = qrs_alloc_zeroed(l.d, sizeof(cqe) << 3);
    RS_ASSERT_STATUS(qrs_resize_cq(l.d, l.cq.h, small, 3, l.cq.ci),
                     RS_STATUS_BAD_SIZE);
    big = qrs_alloc_zeroed(l.d, sizeof(cqe) << 4);
    RS_ASSERT_OK(qrs_resize_cq(l.d, l.cq.h, big, 4, l.cq.ci));
    l.cq.ring = big;
    l.cq.log = 4;
    l.cq.ci = 0;
    for (i = 0; i < 12; i++) {
        loop_poll(&l, &after);
        g_assert_cmphex(after.owner & RS_CQE_OWNER, ==, RS_CQE_OWNER);
        after.owner = before[i].owner;
        g_assert_cmpmem(&after, sizeof(after), &before[i], sizeof(after));
    }
    loop_assert_same(&l, l.src, l.dst, 6 * 64);
    g_assert_false(eng_cq_peek(l.d, &l.cq, &cqe));

    /* Up and down with two sends in flight at each resize. */
    next_send = next_recv = posted = 6;
    for (round = 0; round < 8; round++) {
        for (i = 0; i < 2; i++, posted++) {
            loop_post_recv(&l, &l.b, 0xb000 + posted,
                           l.dst + (posted % 64) * 64, 64, l.dst_key);
            w.wr_id = 0xa000 + posted;
            loop_post_send(&l, &l.a, &w, l.src + (posted % 64) * 64, 64,
                           l.src_key);
        }
        log = round & 1 ? 2 : 5;
        big = qrs_alloc_zeroed(l.d, sizeof(cqe) << log);
        RS_ASSERT_OK(qrs_resize_cq(l.d, l.cq.h, big, log, l.cq.ci));
        l.cq.ring = big;
        l.cq.log = log;
        l.cq.ci = 0;
        while (next_send < posted || next_recv < posted) {
            loop_poll(&l, &cqe);
            g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
            if (cqe.opcode == RS_WR_RECV) {
                g_assert_cmphex(cqe.wr_id, ==, 0xb000 + next_recv++);
            } else {
                g_assert_cmphex(cqe.wr_id, ==, 0xa000 + next_send++);
            }
        }
        g_assert_false(eng_cq_peek(l.d, &l.cq, &cqe));
    }
    loop_assert_same(&l, l.src, l.dst, posted * 64);
    assert_alive(l.d);
}

/*
 * MODIFY_SRQ with RS_SRQ_ATTR_MAX_WR between messages: the WQEs not taken
 * yet move to the new ring and are taken next, in order, and posting goes
 * on there from the number moved; a ring too small for them is refused
 * and the SRQ keeps working on the old one.
 */
static void test_engine_srq_resize(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    struct rs_cmd_create_srq c;
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    uint32_t srq, pi = 0, posted = 0, sent = 0, moved;
    uint64_t ring;
    uint8_t log;
    LoopQp c2, b2;
    Loop l;
    int round, i;
    bool got_recv, got_send;

    loop_setup(&l, obj);
    srq = srq_loop_setup(&l, &c, &c2, &b2);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_pattern(&l, l.src, LOOP_BUF, 0x42);
    memset(&w, 0, sizeof(w));
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;

    for (round = 0; round < 6; round++) {
        /* Two WQEs in, one message out: one more waits each round. */
        for (i = 0; i < 2; i++, posted++) {
            srq_post(l.d, &c, srq, &pi, 0x7000 + posted,
                     l.dst + posted * 256, 256, l.dst_key);
        }
        w.wr_id = 0xa000 + sent;
        loop_post_send(&l, &l.a, &w, l.src + sent * 256, 256, l.src_key);
        got_recv = got_send = false;
        for (i = 0; i < 2; i++) {
            loop_poll(&l, &cqe);
            g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
            if (cqe.opcode == RS_WR_RECV) {
                g_assert_cmphex(cqe.wr_id, ==, 0x7000 + sent);
                g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
                got_recv = true;
            } else {
                g_assert_cmphex(cqe.wr_id, ==, 0xa000 + sent);
                got_send = true;
            }
        }
        g_assert_true(got_recv && got_send);
        loop_assert_same(&l, l.src + sent * 256, l.dst + sent * 256, 256);
        sent++;

        /* posted - sent WQEs wait: 1, 2, ... 6. */
        if (posted - sent > 2) {
            ring = qrs_alloc_zeroed(l.d, (size_t)qrs_recv_stride(1) << 1);
            RS_ASSERT_STATUS(qrs_modify_srq(l.d, srq, RS_SRQ_ATTR_MAX_WR, 0,
                                            ring, 1, NULL),
                             RS_STATUS_BAD_SIZE);
        }
        /* Room for the waiting WQEs and the next round's two. */
        log = posted - sent + 2 <= 4 && (round & 1) ? 2 : 3;
        ring = qrs_alloc_zeroed(l.d, (size_t)qrs_recv_stride(1) << log);
        RS_ASSERT_OK(qrs_modify_srq(l.d, srq, RS_SRQ_ATTR_MAX_WR, 0, ring,
                                    log, &moved));
        g_assert_cmpuint(moved, ==, posted - sent);
        c.ring_addr = ring;
        c.log_size = log;
        pi = moved;
    }
    /* The WQEs still waiting are taken in order from the last ring. */
    while (sent < posted) {
        w.wr_id = 0xa000 + sent;
        loop_post_send(&l, &l.a, &w, l.src + sent * 256, 256, l.src_key);
        for (i = 0; i < 2; i++) {
            loop_poll(&l, &cqe);
            g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
            g_assert_cmphex(cqe.wr_id, ==, (cqe.opcode == RS_WR_RECV ?
                                            0x7000 : 0xa000) + sent);
        }
        loop_assert_same(&l, l.src + sent * 256, l.dst + sent * 256, 256);
        sent++;
    }
    g_assert_false(eng_cq_peek(l.d, &l.cq, &cqe));
    assert_alive(l.d);
}

static void test_engine_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_cmd_create_srq c;
    struct rs_send_wqe_ctrl w;
    struct rs_event ev;
    struct rs_cqe cqe;
    LoopQp c2, b2;
    uint32_t srq, pi = 0;
    Loop l;
    int i;

    loop_setup(&l, obj);

    srq = srq_loop_setup(&l, &c, &c2, &b2);

    fill(l.d, l.dst, 0xee, LOOP_BUF);
    for (i = 0; i < 4; i++) {
        srq_post(l.d, &c, srq, &pi, 0x70 + i, l.dst + i * 1024, 1024,
                 l.dst_key);
    }
    loop_pattern(&l, l.src, 4096, 0x66);
    memset(&w, 0, sizeof(w));
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;

    /* In SRQ order, whichever QP receives. */
    w.wr_id = 0xa0;
    loop_post_send(&l, &l.a, &w, l.src, 1000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x70);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1000);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    loop_expect(&l, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    g_assert_false(qrs_aeq_poll(l.d, &ev, 0));

    w.wr_id = 0xa1;
    loop_post_send(&l, &c2, &w, l.src + 1000, 1024, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x71);
    g_assert_cmpuint(cqe.qpn, ==, b2.qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1024);
    loop_expect(&l, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, c2.qpn);
    g_assert_false(qrs_aeq_poll(l.d, &ev, 0));

    /* Fewer than srq_limit (2) left: the limit event, once. */
    w.wr_id = 0xa2;
    loop_post_send(&l, &l.a, &w, l.src + 2024, 7, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x72);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    loop_expect(&l, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    g_assert_true(qrs_aeq_poll(l.d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_SRQ_LIMIT_REACHED);
    g_assert_cmphex(ev.handle, ==, srq);
    g_assert_cmpuint(ev.data, ==, 1);
    loop_assert_same(&l, l.src, l.dst, 1000);
    loop_assert_same(&l, l.src + 1000, l.dst + 1024, 1024);
    loop_assert_same(&l, l.src + 2024, l.dst + 2048, 7);
    g_assert_true(is_filled(l.d, l.dst + 1000, 0xee, 24));
    g_assert_true(is_filled(l.d, l.dst + 2055, 0xee, LOOP_BUF - 2055));

    /* Too long for the WQE: local length error, NAK, both QPs in ERR. */
    w.wr_id = 0xa3;
    loop_post_send(&l, &l.a, &w, l.src, 2000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x73);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_LEN_ERR);
    loop_expect(&l, 0xa3, RS_WC_REM_INV_REQ_ERR, RS_WR_SEND, l.a.qpn);
    /*
     * QP b's invalid request error, then, on the SRQ in ERR: Last WQE
     * Reached, no receive flush.
     */
    expect_event(l.d, RS_EV_QP_REQ_ERR, l.b.h);
    expect_event(l.d, RS_EV_QP_LAST_WQE_REACHED, l.b.h);
    srq_post(l.d, &c, srq, &pi, 0x74, l.dst, 1024, l.dst_key);
    loop_poll_none(&l);

    /* The SRQ still serves b2. */
    w.wr_id = 0xa4;
    loop_post_send(&l, &c2, &w, l.src, 10, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x74);
    g_assert_cmpuint(cqe.qpn, ==, b2.qpn);
    loop_expect(&l, 0xa4, RS_WC_SUCCESS, RS_WR_SEND, c2.qpn);
    RS_ASSERT_STATUS(qrs_destroy(l.d, RS_CMD_DESTROY_SRQ, srq),
                     RS_STATUS_BUSY);
    assert_alive(l.d);
}

static uint32_t comp_cause(QRdmaSession *d, uint32_t vector)
{
    return qrs_readl(d, A_RS_COMP_CAUSE + 4 * vector);
}

/*
 * The completion cause register of a vector names the CQs whose armed
 * notification fired, each once, and no other CQ of the vector: the
 * interrupt alone does not say which CQ it is for.
 */
static void test_engine_comp_cause(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    struct rs_send_wqe_ctrl w = {
        .opcode = RS_WR_RDMA_WRITE, .flags = RS_WQE_F_SIGNALED, .num_sge = 1,
    };
    struct rs_cqe cqe;
    EngCq other;
    Loop l;

    loop_setup(&l, obj);
    g_assert_true(qrs_readl(l.d, A_RS_CAPS) & RS_CAP_COMP_CAUSE);
    eng_cq_init(l.d, &other, 4);
    g_assert_cmphex(comp_cause(l.d, 0), ==, RS_COMP_CAUSE_NONE);

    /* Both armed, a completion on one: only that one is named. */
    qrs_db_writel(l.d, 0, RS_DB_CQ_ARM, HINDEX(l.cq.h) | RS_DB_CQ_ARM_NEXT);
    qrs_db_writel(l.d, 0, RS_DB_CQ_ARM, HINDEX(other.h) | RS_DB_CQ_ARM_NEXT);
    w.wr_id = 0xc1;
    w.remote_addr = l.dst;
    w.rkey = l.dst_key;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xc1);
    g_assert_cmphex(comp_cause(l.d, 0), ==, l.cq.h);
    g_assert_cmphex(comp_cause(l.d, 0), ==, RS_COMP_CAUSE_NONE);

    /* Not armed: a completion names nothing. */
    w.wr_id = 0xc2;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(comp_cause(l.d, 0), ==, RS_COMP_CAUSE_NONE);

    /* Fired twice before the read: named once. */
    for (int i = 0; i < 2; i++) {
        qrs_db_writel(l.d, 0, RS_DB_CQ_ARM,
                      HINDEX(l.cq.h) | RS_DB_CQ_ARM_NEXT);
        w.wr_id = 0xc3 + i;
        loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
        loop_poll(&l, &cqe);
    }
    g_assert_cmphex(comp_cause(l.d, 0), ==, l.cq.h);
    g_assert_cmphex(comp_cause(l.d, 0), ==, RS_COMP_CAUSE_NONE);

    /* A vector the device does not have, the last register: none. */
    g_assert_cmphex(comp_cause(l.d, 63), ==, RS_COMP_CAUSE_NONE);

    /* A destroyed CQ's notification is not named. */
    qrs_db_writel(l.d, 0, RS_DB_CQ_ARM, HINDEX(other.h) | RS_DB_CQ_ARM_NEXT);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_CQ, other.h));
    g_assert_cmphex(comp_cause(l.d, 0), ==, RS_COMP_CAUSE_NONE);
    assert_alive(l.d);
}

static void register_engine_tests(void)
{
    QOSGraphTestOptions lan = { .before = lan_before };

    qos_add_test("engine/loopback", "rdma-session", test_engine_loopback, NULL);
    qos_add_test("engine/ipv6", "rdma-session", test_engine_ipv6, NULL);
    qos_add_test("engine/group-round-robin", "rdma-session",
                 test_group_round_robin, &lan);
    qos_add_test("engine/group-active-backup", "rdma-session",
                 test_group_active_backup, &lan);
    qos_add_test("engine/atomic", "rdma-session", test_engine_atomic, NULL);
    qos_add_test("engine/atomic-dup", "rdma-session",
                 test_engine_atomic_dup, &lan);
    qos_add_test("engine/uc", "rdma-session", test_engine_uc, NULL);
    qos_add_test("engine/uc-gap", "rdma-session", test_engine_uc_gap, &lan);
    qos_add_test("engine/flush", "rdma-session", test_engine_flush, NULL);
    qos_add_test("engine/srq", "rdma-session", test_engine_srq, NULL);
    qos_add_test("engine/cq-resize", "rdma-session", test_engine_cq_resize,
                 NULL);
    qos_add_test("engine/srq-resize", "rdma-session", test_engine_srq_resize,
                 NULL);
    qos_add_test("engine/comp-cause", "rdma-session", test_engine_comp_cause,
                 NULL);
}

libqos_init(register_engine_tests);
