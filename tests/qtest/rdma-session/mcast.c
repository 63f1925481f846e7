/*
 * rdma-session qtests: UD multicast (ATTACH_MCAST / DETACH_MCAST, the
 * delivery of a group's packets to each attached QP, the limits and the
 * table across a migration)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define GRH_SIZE        40
#define MC_DATA         300

/* ::ffff:239.1.2.@host */
static void mc_gid_v4(uint8_t gid[16], uint8_t host)
{
    gid_v4(gid, 239, 1, 2, host);
}

/* ff0e::@host */
static void mc_gid_v6(uint8_t gid[16], uint8_t host)
{
    memset(gid, 0, 16);
    gid[0] = 0xff;
    gid[1] = 0x0e;
    gid[15] = host;
}

static uint8_t attach(QRdmaSession *d, const uint8_t *gid, uint32_t qp)
{
    return qrs_mcast(d, RS_CMD_ATTACH_MCAST, gid, qp);
}

static uint8_t detach(QRdmaSession *d, const uint8_t *gid, uint32_t qp)
{
    return qrs_mcast(d, RS_CMD_DETACH_MCAST, gid, qp);
}

/* A UD QP in RTS on adapter @i of the pair. */
static void mc_ud_qp(Pair *pr, int i, LoopQp *q)
{
    pair_qp(pr, i, q, RS_QPT_UD, pr->p[i].pd);
    qp_walk(pr->p[i].d, q->h, RS_QPT_UD, RS_QPS_RTS);
}

/*
 * A's AH to group ::ffff:239.1.2.@host.  Its MAC is B's unicast one: the
 * device must put the group's Ethernet address on the frame instead
 * (pair_check_frame checks it).
 */
static uint32_t mc_ah(Pair *pr, uint8_t host)
{
    struct rs_cmd_create_ah ac;
    uint32_t ah;

    ah_template(&ac, pr->p[0].pd, 0);
    mc_gid_v4(ac.dgid, host);
    memcpy(ac.dmac, pair_mac[1], 6);
    RS_ASSERT_OK(qrs_create_ah(pr->p[0].d, &ac, &ah));
    return ah;
}

/* A SEND with immediate of MC_DATA bytes at @off of A's buffer. */
static void mc_send(Pair *pr, LoopQp *q, uint32_t ah, uint64_t wr_id,
                    uint32_t off)
{
    struct rs_sge sge = peer_sge(&pr->p[0], off, MC_DATA);
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = RS_WR_SEND_IMM,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .imm_or_inv = 0x5a5a0000 | off,
        .ah = ah,
        .remote_qpn = RS_MCAST_QPN,
        .remote_qkey = STD_QKEY,
    };
    struct rs_cqe cqe;

    pair_log_reset(pr);
    peer_fill(&pr->p[0], off, MC_DATA, off >> 4);
    eng_post_send(pr->p[0].d, q, &w, &sge, 1);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, wr_id, RS_WC_SUCCESS, RS_WR_SEND_IMM, q->qpn);
    PAIR_EXPECT_OPS(pr, 0, OP_UD_SEND_ONLY_IMM);
}

/* Post a receive for GRH + MC_DATA bytes at @off of B's buffer. */
static void mc_recv(Pair *pr, LoopQp *q, uint64_t wr_id, uint32_t off)
{
    struct rs_sge sge = peer_sge(&pr->p[1], off, GRH_SIZE + MC_DATA);

    eng_post_recv(pr->p[1].d, q, wr_id, &sge, 1);
}

/*
 * The datagram A sent from @soff landed at @doff of B's buffer: the GRH
 * area (the IPv4 header in its last 20 bytes), then the data.
 */
static void mc_expect_data(Pair *pr, uint32_t doff, uint32_t soff)
{
    Peer *b = &pr->p[1];

    memset(b->img + doff, 0, 20);
    memcpy(b->img + doff + 20, pr->last[0] + 14, 20);
    img_move(b, doff + GRH_SIZE, &pr->p[0], soff, MC_DATA);
}

/*
 * The next @n completions on B are receives of the datagram A's QP @src
 * sent last, one for each QP of @q[] (in any order: one CQ), with the
 * wr_id of the same index in @wr_id[]; then no more.
 */
static void mc_expect_recvs(Pair *pr, LoopQp **q, const uint64_t *wr_id,
                            unsigned n, LoopQp *src, uint32_t imm)
{
    bool seen[8] = { false };
    struct rs_cqe cqe;
    unsigned i, j;

    g_assert_cmpuint(n, <=, ARRAY_SIZE(seen));
    for (i = 0; i < n; i++) {
        pair_poll(pr, 1, &cqe);
        for (j = 0; j < n && cqe.qpn != q[j]->qpn; j++) {
            continue;
        }
        g_assert_cmpuint(j, <, n);
        g_assert_false(seen[j]);
        seen[j] = true;
        assert_cqe(&cqe, wr_id[j], RS_WC_SUCCESS, RS_WR_RECV, q[j]->qpn);
        g_assert_cmpuint(cqe.byte_len, ==, GRH_SIZE + MC_DATA);
        g_assert_cmpuint(cqe.src_qp, ==, src->qpn);
        g_assert_cmphex(cqe.wc_flags, ==,
                        RS_WC_F_GRH | RS_WC_F_IPV4 | RS_WC_F_IMM);
        g_assert_cmphex(cqe.imm_or_inv, ==, imm);
    }
    pair_cq_empty(pr, 1);
}

/*
 * A sends to group 239.1.2.3: both QPs attached on B get a copy, each in
 * its own receive WQE, the unattached one nothing; after a detach only
 * the other one; after the last detach none.
 */
static void test_mcast_deliver(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint64_t ids[2] = { 0xb0, 0xb1 }, id2[1] = { 0xb2 };
    Pair pr;
    LoopQp s, r[3];
    LoopQp *both[2] = { &r[0], &r[1] }, *one[1] = { &r[1] };
    LoopQp *third[1] = { &r[2] };
    uint8_t gid[16];
    uint32_t ah;
    int i;

    pair_setup(&pr, obj, data, alloc);
    mc_ud_qp(&pr, 0, &s);
    for (i = 0; i < 3; i++) {
        mc_ud_qp(&pr, 1, &r[i]);
    }
    ah = mc_ah(&pr, 3);
    mc_gid_v4(gid, 3);
    RS_ASSERT_OK(attach(pr.p[1].d, gid, r[0].h));
    RS_ASSERT_OK(attach(pr.p[1].d, gid, r[1].h));

    /* Two copies; the third QP's receive stays posted. */
    mc_recv(&pr, &r[0], 0xb0, 0x0000);
    mc_recv(&pr, &r[1], 0xb1, 0x1000);
    mc_recv(&pr, &r[2], 0xb2, 0x2000);
    mc_send(&pr, &s, ah, 0xa0, 0x100);
    g_assert_cmphex((uint32_t)ldl_be_p(pr.last[0] + 14 + 16), ==, 0xef010203);
    g_assert_cmphex(ldl_be_p(pr.last[0] + ROCE_BTH + 4) & 0xffffff, ==,
                    RS_MCAST_QPN);
    mc_expect_recvs(&pr, both, ids, 2, &s, 0x5a5a0100);
    mc_expect_data(&pr, 0x0000, 0x100);
    mc_expect_data(&pr, 0x1000, 0x100);
    peer_check(&pr.p[1]);

    /* After r[0] leaves, r[1] alone; r[0]'s new receive stays posted. */
    RS_ASSERT_OK(detach(pr.p[1].d, gid, r[0].h));
    mc_recv(&pr, &r[0], 0xc0, 0x3000);
    mc_recv(&pr, &r[1], 0xb1, 0x4000);
    mc_send(&pr, &s, ah, 0xa1, 0x200);
    mc_expect_recvs(&pr, one, &ids[1], 1, &s, 0x5a5a0200);
    mc_expect_data(&pr, 0x4000, 0x200);
    peer_check(&pr.p[1]);

    /* The last QP leaves: the group is gone, nothing is delivered. */
    RS_ASSERT_OK(detach(pr.p[1].d, gid, r[1].h));
    mc_recv(&pr, &r[1], 0xc1, 0x5000);
    mc_send(&pr, &s, ah, 0xa2, 0x300);
    pair_cq_empty(&pr, 1);
    peer_check(&pr.p[1]);

    /* Attached again: the receive r[2] posted first takes the next one. */
    RS_ASSERT_OK(attach(pr.p[1].d, gid, r[2].h));
    mc_send(&pr, &s, ah, 0xa3, 0x400);
    mc_expect_recvs(&pr, third, id2, 1, &s, 0x5a5a0400);
    mc_expect_data(&pr, 0x2000, 0x400);
    peer_check(&pr.p[1]);
    RS_ASSERT_OK(detach(pr.p[1].d, gid, r[2].h));
    pair_teardown(&pr);
}

/* UD QP, or another type, on the single adapter @d. */
static uint32_t mc_qp(QRdmaSession *d, uint8_t type, uint32_t pd,
                      uint32_t cq)
{
    struct rs_cmd_create_qp c;

    qp_template(d, &c, type, pd, cq, cq);
    return new_qp(d, &c);
}

/*
 * Each bad command is refused with its status and changes nothing: the
 * good attach after it still works, and the device stays alive.
 */
static void test_mcast_bad_input(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    uint32_t pd = new_pd(d), cq = new_cq(d, 4);
    uint32_t ud = mc_qp(d, RS_QPT_UD, pd, cq);
    uint32_t ud2 = mc_qp(d, RS_QPT_UD, pd, cq);
    uint32_t rc = mc_qp(d, RS_QPT_RC, pd, cq);
    uint32_t uc = mc_qp(d, RS_QPT_UC, pd, cq);
    uint32_t gsi = mc_qp(d, RS_QPT_GSI, pd, cq);
    uint8_t gid[16], v6[16], bad[16];
    struct rs_admin_cmd cmd;
    uint32_t stale;

    mc_gid_v4(gid, 1);
    mc_gid_v6(v6, 1);

    /* Not a QP, a stale handle, a QP of another type. */
    RS_ASSERT_STATUS(attach(d, gid, 0), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(attach(d, gid, ud ^ (1u << RS_HANDLE_GEN_SHIFT)),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(attach(d, gid, HANDLE(0, DEF_MAX_QPS)),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(attach(d, gid, rc), RS_STATUS_NOT_SUPPORTED);
    RS_ASSERT_STATUS(attach(d, gid, uc), RS_STATUS_NOT_SUPPORTED);
    RS_ASSERT_STATUS(attach(d, gid, gsi), RS_STATUS_NOT_SUPPORTED);

    /* Not multicast GIDs. */
    memset(bad, 0, sizeof(bad));
    RS_ASSERT_STATUS(attach(d, bad, ud), RS_STATUS_BAD_PARAM);
    gid_v4(bad, 10, 0, 0, 1);
    RS_ASSERT_STATUS(attach(d, bad, ud), RS_STATUS_BAD_PARAM);
    gid_v4(bad, 240, 0, 0, 1);              /* class E */
    RS_ASSERT_STATUS(attach(d, bad, ud), RS_STATUS_BAD_PARAM);
    gid_v4(bad, 223, 255, 255, 255);
    RS_ASSERT_STATUS(attach(d, bad, ud), RS_STATUS_BAD_PARAM);
    gid_v6(bad, 1);                         /* fe80::... */
    RS_ASSERT_STATUS(attach(d, bad, ud), RS_STATUS_BAD_PARAM);
    bad[0] = 0xfe;                          /* fe80:: with 0xff later */
    bad[15] = 0xff;
    RS_ASSERT_STATUS(attach(d, bad, ud), RS_STATUS_BAD_PARAM);

    /* Good ones, IPv4 and IPv6; double attach; reserved field ignored. */
    RS_ASSERT_OK(attach(d, gid, ud));
    RS_ASSERT_STATUS(attach(d, gid, ud), RS_STATUS_EXISTS);
    cmd_init(&cmd, RS_CMD_ATTACH_MCAST);
    memcpy(cmd.mcast.gid, v6, 16);
    cmd.mcast.qp = cpu_to_le32(ud);
    cmd.mcast.rsvd = 0xffffffff;
    RS_ASSERT_OK(qrs_admin_exec(d, &cmd, NULL));
    RS_ASSERT_OK(attach(d, v6, ud2));

    /* Detach of what is not attached. */
    RS_ASSERT_STATUS(detach(d, gid, ud2), RS_STATUS_BAD_PARAM);
    mc_gid_v4(bad, 9);
    RS_ASSERT_STATUS(detach(d, bad, ud), RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(detach(d, gid, rc), RS_STATUS_NOT_SUPPORTED);
    RS_ASSERT_STATUS(detach(d, gid, 0), RS_STATUS_BAD_HANDLE);
    gid_v4(bad, 10, 0, 0, 1);
    RS_ASSERT_STATUS(detach(d, bad, ud), RS_STATUS_BAD_PARAM);

    /*
     * A QP still attached cannot be destroyed (IBTA o10-2.2.3): the
     * table would name a free QP.  Detached, it can.
     */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_QP, ud),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(detach(d, gid, ud));
    RS_ASSERT_STATUS(detach(d, gid, ud), RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_QP, ud),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(detach(d, v6, ud));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, ud));
    stale = ud;
    RS_ASSERT_STATUS(attach(d, gid, stale), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(detach(d, v6, stale), RS_STATUS_BAD_HANDLE);

    /* A new QP in the freed slot is not attached to anything. */
    ud = mc_qp(d, RS_QPT_UD, pd, cq);
    g_assert_cmpuint(HINDEX(ud), ==, HINDEX(stale));
    RS_ASSERT_STATUS(detach(d, v6, ud), RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, ud));
    RS_ASSERT_OK(detach(d, v6, ud2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, ud2));
    assert_alive(d);
}

/*
 * The limits QUERY_DEVICE reports: max_mcast_grp groups, and
 * max_mcast_qp_attach QPs in one group; one more is refused, and a
 * detach makes room again.
 */
static void test_mcast_limits(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    uint32_t pd = new_pd(d), cq = new_cq(d, 4);
    uint32_t qp[DEF_MAX_MCAST_QP_ATTACH + 1];
    struct rs_device_attr a;
    uint8_t gid[16];
    unsigned i;

    RS_ASSERT_OK(qrs_query_device(d, &a));
    g_assert_cmpuint(a.max_mcast_grp, ==, DEF_MAX_MCAST_GRP);
    g_assert_cmpuint(a.max_mcast_qp_attach, ==, DEF_MAX_MCAST_QP_ATTACH);
    g_assert_cmphex(a.caps & RS_CAP_MCAST, ==, RS_CAP_MCAST);
    for (i = 0; i < ARRAY_SIZE(qp); i++) {
        qp[i] = mc_qp(d, RS_QPT_UD, pd, cq);
    }

    /* Groups: one QP in each of max_mcast_grp, then one group too many. */
    for (i = 0; i < DEF_MAX_MCAST_GRP; i++) {
        mc_gid_v6(gid, i);
        RS_ASSERT_OK(attach(d, gid, qp[0]));
    }
    mc_gid_v6(gid, DEF_MAX_MCAST_GRP);
    RS_ASSERT_STATUS(attach(d, gid, qp[0]), RS_STATUS_NO_RESOURCES);
    RS_ASSERT_STATUS(attach(d, gid, qp[1]), RS_STATUS_NO_RESOURCES);
    /* Existing groups still take QPs. */
    mc_gid_v6(gid, 7);
    RS_ASSERT_OK(attach(d, gid, qp[1]));
    RS_ASSERT_OK(detach(d, gid, qp[1]));
    mc_gid_v6(gid, 5);
    RS_ASSERT_OK(detach(d, gid, qp[0]));
    mc_gid_v6(gid, DEF_MAX_MCAST_GRP);
    RS_ASSERT_OK(attach(d, gid, qp[1]));
    RS_ASSERT_OK(detach(d, gid, qp[1]));
    for (i = 0; i < DEF_MAX_MCAST_GRP; i++) {
        mc_gid_v6(gid, i);
        RS_ASSERT_STATUS(detach(d, gid, qp[0]),
                         i == 5 ? RS_STATUS_BAD_PARAM : RS_STATUS_OK);
    }

    /* QPs per group. */
    mc_gid_v4(gid, 1);
    for (i = 0; i < DEF_MAX_MCAST_QP_ATTACH; i++) {
        RS_ASSERT_OK(attach(d, gid, qp[i]));
    }
    RS_ASSERT_STATUS(attach(d, gid, qp[i]), RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(detach(d, gid, qp[3]));
    RS_ASSERT_OK(attach(d, gid, qp[i]));
    RS_ASSERT_STATUS(attach(d, gid, qp[3]), RS_STATUS_NO_RESOURCES);
    for (i = 0; i <= DEF_MAX_MCAST_QP_ATTACH; i++) {
        RS_ASSERT_STATUS(detach(d, gid, qp[i]),
                         i == 3 ? RS_STATUS_BAD_PARAM : RS_STATUS_OK);
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp[i]));
    }
    assert_alive(d);
}

/*
 * The table moves with the VM: after a migration the groups deliver to
 * the same QPs, detach finds them, and an attached QP is still busy.
 */
static void test_mcast_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint64_t ids[2] = { 0xb0, 0xb1 };
    Pair pr;
    LoopQp s, r[2];
    LoopQp *both[2] = { &r[0], &r[1] };
    uint8_t gid[16], v6[16];
    uint32_t ah;
    int i;

    pair_setup(&pr, obj, data, alloc);
    mc_ud_qp(&pr, 0, &s);
    for (i = 0; i < 2; i++) {
        mc_ud_qp(&pr, 1, &r[i]);
    }
    ah = mc_ah(&pr, 4);
    mc_gid_v4(gid, 4);
    mc_gid_v6(v6, 4);
    RS_ASSERT_OK(attach(pr.p[1].d, gid, r[0].h));
    RS_ASSERT_OK(attach(pr.p[1].d, gid, r[1].h));
    RS_ASSERT_OK(attach(pr.p[1].d, v6, r[1].h));
    mc_recv(&pr, &r[0], 0xb0, 0x0000);
    mc_recv(&pr, &r[1], 0xb1, 0x1000);

    pair_migrate(&pr);
    pair_release(&pr, 0);
    pair_release(&pr, 1);

    mc_send(&pr, &s, ah, 0xa0, 0x100);
    mc_expect_recvs(&pr, both, ids, 2, &s, 0x5a5a0100);
    mc_expect_data(&pr, 0x0000, 0x100);
    mc_expect_data(&pr, 0x1000, 0x100);
    peer_check(&pr.p[1]);

    RS_ASSERT_STATUS(attach(pr.p[1].d, v6, r[1].h), RS_STATUS_EXISTS);
    RS_ASSERT_STATUS(qrs_destroy(pr.p[1].d, RS_CMD_DESTROY_QP, r[0].h),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(detach(pr.p[1].d, gid, r[0].h));
    RS_ASSERT_OK(detach(pr.p[1].d, gid, r[1].h));
    RS_ASSERT_OK(detach(pr.p[1].d, v6, r[1].h));
    RS_ASSERT_STATUS(detach(pr.p[1].d, v6, r[1].h), RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_destroy(pr.p[1].d, RS_CMD_DESTROY_QP, r[0].h));
    pair_teardown(&pr);
}

static void register_mcast_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };

    rs_add_standalone_test("mcast/deliver", test_mcast_deliver, &pair);
    qos_add_test("mcast/bad-input", "rdma-session", test_mcast_bad_input,
                 NULL);
    qos_add_test("mcast/limits", "rdma-session", test_mcast_limits, NULL);
    rs_add_standalone_test("mcast/migrate", test_mcast_migrate, &pair);
}

libqos_init(register_mcast_tests);
