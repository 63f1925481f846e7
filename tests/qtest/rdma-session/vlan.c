/*
 * rdma-session qtests: 802.1Q VLANs and priorities (ABI 1.9,
 * RS_CAP_VLAN).  Two adapters on the test's wire: GID 1 of each on
 * VLAN 100, GID 0 untagged; the frames' tags, VIDs and priorities
 * checked byte by byte, the receive filter, and hostile tags and
 * guest values.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-odp.h"

#define VLAN_VID        100
#define VLAN_OTHER      200
#define VLAN_PRIO_A     5           /* A's QPs' AV priority */
#define VLAN_PRIO_B     3           /* B's */

/*
 * The wire of these tests: every frame from one adapter goes to the
 * other unchanged, tagged or not; each is counted, and a tagged one's
 * TPID, VID and PCP recorded.  Untagged frames are checked as the pair
 * tests check them (pair_handle); tagged ones here, the tag taken out.
 */
typedef struct VlanWire {
    Pair *pr;
    bool relay_b;               /* relay B's frames to A */
    unsigned untagged[2];
    unsigned tagged[2];
    unsigned bad_tag[2];        /* tagged, not VID 100 or not its PCP */
    unsigned arp[2];            /* announcements (after a migration) */
    unsigned arp_tagged[2];     /* of them, on VLAN 100 */
    uint8_t pcp[2];             /* what a tagged frame of side i must have */
    uint8_t ops[2][PAIR_OPS];   /* BTH opcodes of the tagged frames */
} VlanWire;

static void vlan_pump(void *opaque)
{
    VlanWire *w = opaque;
    Pair *pr = w->pr;
    g_autofree uint8_t *f = g_malloc(RS_LAN_MAX_FRAME);
    int i;

    for (i = 0; i < 2; i++) {
        GPollFD pfd = { .fd = pr->fd[i], .events = G_IO_IN };
        ssize_t len;

        while (g_poll(&pfd, 1, 0) == 1) {
            len = lan_sock_recv(pr->fd[i], f, RS_LAN_MAX_FRAME,
                                RS_QOS_TIMEOUT_US);
            g_assert_cmpint(len, >, 14);
            if (lduw_be_p(f + 12) == 0x0806 ||
                (lduw_be_p(f + 12) == 0x8100 &&
                 lduw_be_p(f + 16) == 0x0806)) {
                /* A GID's gratuitous ARP: on its VLAN, with PCP 0. */
                w->arp[i]++;
                if (lduw_be_p(f + 12) == 0x8100) {
                    g_assert_cmphex(lduw_be_p(f + 14), ==, VLAN_VID);
                    g_assert_cmpuint(f[4 + 31], ==, i + 1);
                    g_assert_cmpuint(f[4 + 30], ==, 1);
                    w->arp_tagged[i]++;
                } else {
                    g_assert_cmpuint(f[30], ==, 0);
                }
                continue;
            }
            if (lduw_be_p(f + 12) != 0x8100) {
                w->untagged[i]++;
                g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
                if (i == 0 || w->relay_b) {
                    lan_sock_send(pr->fd[!i], f, len);
                }
                continue;
            }
            /* 802.1Q: TPID, PCP, DEI 0, VID; then the untagged frame. */
            g_assert_cmpint(len, >, ROCE_EXT + 4);
            g_assert_cmpmem(f, 6, pair_mac[!i], 6);
            g_assert_cmpmem(f + 6, 6, pair_mac[i], 6);
            g_assert_cmphex(lduw_be_p(f + 16), ==, 0x0800);
            g_assert_cmpuint(lduw_be_p(f + 4 + 14 + 20 + 2), ==, 4791);
            g_assert_cmpuint(lduw_be_p(f + 4 + 16), ==, len - 18);
            if ((lduw_be_p(f + 14) & 0xfff) != VLAN_VID ||
                lduw_be_p(f + 14) >> 13 != w->pcp[i] ||
                (lduw_be_p(f + 14) & 0x1000)) {
                w->bad_tag[i]++;
            }
            /* The ICRC does not cover the Ethernet header. */
            g_assert_cmphex((uint32_t)ldl_le_p(f + len - 4), ==,
                            roce_icrc(f + 4, len - 4 - 4));
            if (w->tagged[i] < PAIR_OPS) {
                w->ops[i][w->tagged[i]] = f[4 + ROCE_BTH];
            }
            w->tagged[i]++;
            if (i == 0 || w->relay_b) {
                lan_sock_send(pr->fd[!i], f, len);
            }
        }
    }
}

static void vlan_poll(VlanWire *w, int i, struct rs_cqe *cqe)
{
    eng_poll(w->pr->p[i].d, &w->pr->p[i].cq, cqe, vlan_pump, w);
}

/* No completion waits on adapter @i's CQ (pair_cq_empty, our wire). */
static void vlan_cq_empty(VlanWire *w, int i)
{
    struct rs_cqe cqe;

    vlan_pump(w);
    g_assert_false(eng_cq_peek(w->pr->p[i].d, &w->pr->p[i].cq, &cqe));
}

/* The pair's teardown; late frames (tagged) are only counted. */
static void vlan_teardown(VlanWire *w)
{
    vlan_pump(w);
    w->pr->raw[0] = w->pr->raw[1] = true;
    pair_teardown(w->pr);
}

/* GID @index of adapter @i: 10.0.@index.(i + 1), on VLAN @vlan_field. */
static uint8_t vlan_add_gid(QRdmaSession *d, uint32_t index, int i,
                            uint16_t vlan_field)
{
    struct rs_cmd_add_gid c = {
        .index = cpu_to_le32(index),
        .type = RS_GID_ROCE_V2_IPV4,
        .vlan = cpu_to_le16(vlan_field),
    };
    uint32_t got;

    gid_v4(c.gid, 10, 0, index, i + 1);
    return qrs_add_gid(d, &c, &got);
}

static void vlan_setup(Pair *pr, VlanWire *w, void *obj, void *data,
                       QGuestAllocator *alloc)
{
    int i;

    pair_setup(pr, obj, data, alloc);
    memset(w, 0, sizeof(*w));
    w->pr = pr;
    w->relay_b = true;
    w->pcp[0] = VLAN_PRIO_A;
    w->pcp[1] = VLAN_PRIO_B;
    for (i = 0; i < 2; i++) {
        g_assert_true(qrs_readl(pr->p[i].d, A_RS_CAPS) & RS_CAP_VLAN);
        RS_ASSERT_OK(vlan_add_gid(pr->p[i].d, 1, i,
                                  RS_GID_VLAN_VALID | VLAN_VID));
    }
}

/* An RC pair through GID @gid, each side's AV with its priority. */
static void vlan_rc(Pair *pr, LoopQp q[2], uint32_t gid)
{
    static const uint32_t prio[2] = {
        VLAN_PRIO_A << RS_AV_PRIO_SHIFT, VLAN_PRIO_B << RS_AV_PRIO_SHIFT,
    };

    pair_rc_av(pr, q, gid, STD_ACCESS, RS_MTU_1024, prio);
}

/*
 * RC over VLAN 100 and untagged side by side: A's WRITE (3 packets),
 * READ and SEND over GID 1 leave tagged VID 100 with A's priority, B's
 * ACKs and READ responses tagged with B's; the same over GID 0 leave
 * untagged; the data arrives both ways.
 */
static void test_vlan_rc(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    VlanWire w;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    LoopQp tq[2], uq[2];
    struct rs_device_stats st;
    struct rs_qp_attr qa;
    struct rs_cqe cqe;
    struct rs_sge sge;
    unsigned n, seen = 0;

    vlan_setup(&pr, &w, obj, data, alloc);
    vlan_rc(&pr, tq, 1);
    vlan_rc(&pr, uq, 0);
    /* QUERY_QP gives the priority back in the flow_label word. */
    RS_ASSERT_OK(qrs_query_qp(a->d, tq[0].h, &qa));
    g_assert_cmpuint(RS_AV_PRIO(le32_to_cpu(qa.ah.flow_label)), ==,
                     VLAN_PRIO_A);

    /* Tagged: WRITE of 3000 bytes, READ of 2048, SEND of 512. */
    sge = peer_sge(a, 0, 3000);
    pair_post(&pr, 0, &tq[0], RS_WR_RDMA_WRITE, 1, &sge, 1,
              b->buf + 8192, b->key[0], 0);
    img_move(b, 8192, a, 0, 3000);
    vlan_poll(&w, 0, &cqe);
    assert_cqe(&cqe, 1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, tq[0].qpn);
    sge = peer_sge(a, 4096, 2048);
    pair_post(&pr, 0, &tq[0], RS_WR_RDMA_READ, 2, &sge, 1,
              b->buf + 16384, b->key[0], 0);
    img_move(a, 4096, b, 16384, 2048);
    vlan_poll(&w, 0, &cqe);
    assert_cqe(&cqe, 2, RS_WC_SUCCESS, RS_WR_RDMA_READ, tq[0].qpn);
    sge = peer_sge(b, 20480, 512);
    eng_post_recv(b->d, &tq[1], 3, &sge, 1);
    sge = peer_sge(a, 8192, 512);
    pair_post(&pr, 0, &tq[0], RS_WR_SEND, 4, &sge, 1, 0, 0, 0);
    img_move(b, 20480, a, 8192, 512);
    vlan_poll(&w, 1, &cqe);
    assert_cqe(&cqe, 3, RS_WC_SUCCESS, RS_WR_RECV, tq[1].qpn);
    vlan_poll(&w, 0, &cqe);
    assert_cqe(&cqe, 4, RS_WC_SUCCESS, RS_WR_SEND, tq[0].qpn);
    vlan_pump(&w);
    /* A: 3 WRITE packets, the READ request, the SEND. */
    g_assert_cmpuint(w.tagged[0], ==, 5);
    g_assert_cmphex(w.ops[0][0], ==, OP_WRITE_FIRST);
    g_assert_cmphex(w.ops[0][2], ==, OP_WRITE_LAST);
    g_assert_cmphex(w.ops[0][3], ==, OP_READ_REQ);
    g_assert_cmphex(w.ops[0][4], ==, OP_SEND_ONLY);
    /* B: ACKs and 2 READ responses, all tagged. */
    g_assert_cmpuint(w.tagged[1], >=, 4);
    for (n = 0; n < w.tagged[1]; n++) {
        g_assert_true(w.ops[1][n] == OP_ACK ||
                      w.ops[1][n] == OP_READ_RESP_FIRST ||
                      w.ops[1][n] == OP_READ_RESP_LAST);
    }
    g_assert_cmpuint(w.bad_tag[0] + w.bad_tag[1], ==, 0);
    g_assert_cmpuint(w.untagged[0] + w.untagged[1], ==, 0);

    /* Untagged on GID 0 meanwhile: the same QPs' kind, no tag. */
    sge = peer_sge(a, 12288, 1500);
    pair_post(&pr, 0, &uq[0], RS_WR_RDMA_WRITE, 5, &sge, 1,
              b->buf + 24576, b->key[0], 0);
    img_move(b, 24576, a, 12288, 1500);
    /* and tagged again, interleaved */
    sge = peer_sge(a, 14336, 100);
    pair_post(&pr, 0, &tq[0], RS_WR_RDMA_WRITE, 6, &sge, 1,
              b->buf + 28672, b->key[0], 0);
    img_move(b, 28672, a, 14336, 100);
    /* Two QPs: their completions in either order. */
    for (n = 0; n < 2; n++) {
        vlan_poll(&w, 0, &cqe);
        g_assert_false(seen & (1u << (cqe.wr_id & 1)));
        seen |= 1u << (cqe.wr_id & 1);
        if (cqe.wr_id == 5) {
            assert_cqe(&cqe, 5, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, uq[0].qpn);
        } else {
            assert_cqe(&cqe, 6, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, tq[0].qpn);
        }
    }
    vlan_pump(&w);
    g_assert_cmpuint(w.untagged[0], ==, 2);
    g_assert_cmpuint(w.untagged[1], >=, 1);
    g_assert_cmpuint(w.tagged[0], ==, 6);
    g_assert_cmpuint(w.bad_tag[0] + w.bad_tag[1], ==, 0);
    peer_check(a);
    peer_check(b);
    query_stats(b->d, &st, sizeof(st));
    g_assert_cmpuint(st.vlan_rx_dropped, ==, 0);
    vlan_teardown(&w);
}

/* @out: @in (@len bytes) with the tag @tci after the MACs; its length. */
static size_t vlan_tag(uint8_t *out, const uint8_t *in, size_t len,
                       uint16_t tci)
{
    memcpy(out, in, 12);
    stw_be_p(out + 12, 0x8100);
    stw_be_p(out + 14, tci);
    memcpy(out + 16, in + 12, len - 12);
    return len + 4;
}

/*
 * The receive filter: a SEND to B's QP on GID 1 (VLAN 100) that would be
 * taken is dropped and counted on VLAN 200, untagged, and on VLAN 100
 * to B's untagged GID 0 address; on VLAN 100 it is taken.
 */
static void test_vlan_filter(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    VlanWire w;
    Peer *b = &pr.p[1];
    LoopQp q[2];
    struct rs_device_stats st0, st;
    struct rs_cqe cqe;
    struct rs_sge sge;
    uint8_t pay[16], f[256], t[256];
    size_t len;

    vlan_setup(&pr, &w, obj, data, alloc);
    w.relay_b = false;              /* B's ACKs are not for A's QP */
    vlan_rc(&pr, q, 1);
    sge = peer_sge(b, 0, 64);
    eng_post_recv(b->d, &q[1], 7, &sge, 1);
    memset(pay, 0x5a, sizeof(pay));
    len = roce_frame(f, pair_mac[1], 0x0a000101, 0x0a000102, OP_SEND_ONLY,
                     q[1].qpn, pair_psn[0], pay, sizeof(pay));
    f[ROCE_BTH + 8] |= 0x80;                    /* AckReq */
    roce_reseal(f, len);
    query_stats(b->d, &st0, sizeof(st0));

    pair_inject(&pr, 1, t, vlan_tag(t, f, len, VLAN_OTHER));
    pair_inject(&pr, 1, f, len);                /* untagged */
    pair_inject(&pr, 1, t, vlan_tag(t, f, len, 0x2000 | VLAN_OTHER));
    vlan_pump(&w);
    vlan_cq_empty(&w, 1);
    query_stats(b->d, &st, sizeof(st));
    g_assert_cmpuint(st.vlan_rx_dropped - st0.vlan_rx_dropped, ==, 3);

    /* VLAN 100 to 10.0.0.2 (GID 0, untagged): not on that VLAN either. */
    stl_be_p(f + 14 + 16, 0x0a000002);
    roce_reseal(f, len);
    pair_inject(&pr, 1, t, vlan_tag(t, f, len, VLAN_VID));
    vlan_cq_empty(&w, 1);
    query_stats(b->d, &st, sizeof(st));
    g_assert_cmpuint(st.vlan_rx_dropped - st0.vlan_rx_dropped, ==, 4);

    /* To 10.0.1.2 on VLAN 100, any priority: taken. */
    stl_be_p(f + 14 + 16, 0x0a000102);
    roce_reseal(f, len);
    pair_inject(&pr, 1, t, vlan_tag(t, f, len, 0xe000 | VLAN_VID));
    vlan_poll(&w, 1, &cqe);
    assert_cqe(&cqe, 7, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, sizeof(pay));
    query_stats(b->d, &st, sizeof(st));
    g_assert_cmpuint(st.vlan_rx_dropped - st0.vlan_rx_dropped, ==, 4);
    /* Its ACK went back on VLAN 100 with B's priority. */
    vlan_pump(&w);
    g_assert_cmpuint(w.tagged[1], ==, 1);
    g_assert_cmphex(w.ops[1][0], ==, OP_ACK);
    g_assert_cmpuint(w.bad_tag[1], ==, 0);
    peer_dont_care(b, 0, 64);
    vlan_teardown(&w);
}

/*
 * Hostile values: ADD_GID with VID 4095, without the VALID bit, with
 * bits 12-14; an AV's flow_label with bits beyond the label and the
 * priority (MODIFY_QP, CREATE_AH).  Hostile frames: tags cut short, a
 * second tag (802.1ad and 802.1Q), a tagged frame cut inside its IP
 * header.  Nothing is taken; the adapters still carry tagged traffic.
 */
static void test_vlan_hostile(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint16_t bad_vlan[] = {
        RS_GID_VLAN_VALID | 4095, VLAN_VID, RS_GID_VLAN_VALID | 0x1000 | 1,
        RS_GID_VLAN_VALID | 0x4000 | 1, 0xffff,
    };
    Pair pr;
    VlanWire w;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    LoopQp q[2];
    struct rs_cmd_create_ah ah = { 0 };
    struct rs_device_stats st0, st;
    struct rs_qp_attr attr;
    struct rs_cqe cqe;
    struct rs_sge sge;
    uint8_t f[256], t[256], d[256];
    uint32_t h;
    size_t len, n;
    unsigned i;

    vlan_setup(&pr, &w, obj, data, alloc);
    for (i = 0; i < ARRAY_SIZE(bad_vlan); i++) {
        RS_ASSERT_STATUS(vlan_add_gid(a->d, 2, 0, bad_vlan[i]),
                         RS_STATUS_BAD_PARAM);
    }
    /* VID 0 (priority tagged) and 4094 are VIDs. */
    RS_ASSERT_OK(vlan_add_gid(a->d, 2, 0, RS_GID_VLAN_VALID | 4094));
    RS_ASSERT_OK(vlan_add_gid(a->d, 3, 0, RS_GID_VLAN_VALID));

    ah.pd = cpu_to_le32(a->pd);
    ah.gid_index = cpu_to_le32(1);
    gid_v4(ah.dgid, 10, 0, 1, 2);
    ah.flow_label = cpu_to_le32(1u << 20);
    RS_ASSERT_STATUS(qrs_create_ah(a->d, &ah, &h), RS_STATUS_BAD_PARAM);
    ah.flow_label = cpu_to_le32(1u << 27);
    RS_ASSERT_STATUS(qrs_create_ah(a->d, &ah, &h), RS_STATUS_BAD_PARAM);
    ah.flow_label = cpu_to_le32(7u << RS_AV_PRIO_SHIFT | 0xfffff);
    RS_ASSERT_OK(qrs_create_ah(a->d, &ah, &h));

    pair_qp(&pr, 0, &q[0], RS_QPT_RC, a->pd);
    pair_attr(q, 0, 1, &attr);
    attr.access_flags = STD_ACCESS;
    attr.path_mtu = RS_MTU_1024;
    attr.qp_state = RS_QPS_INIT;
    RS_ASSERT_OK(qrs_modify_qp(a->d, q[0].h, &attr,
                               std_mask(RS_QPT_RC, RS_QPS_RESET,
                                        RS_QPS_INIT)));
    attr.cur_qp_state = RS_QPS_INIT;
    attr.qp_state = RS_QPS_RTR;
    attr.ah.flow_label = cpu_to_le32(0x80000000u);
    RS_ASSERT_STATUS(qrs_modify_qp(a->d, q[0].h, &attr,
                                   std_mask(RS_QPT_RC, RS_QPS_INIT,
                                            RS_QPS_RTR)),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_destroy(a->d, RS_CMD_DESTROY_QP, q[0].h));

    /* Frames: B's address on VLAN 100, a SEND to QP 1. */
    len = roce_frame(f, pair_mac[1], 0x0a000101, 0x0a000102, OP_SEND_ONLY,
                     1, 0, NULL, 0);
    n = vlan_tag(t, f, len, VLAN_VID);
    query_stats(b->d, &st0, sizeof(st0));
    pair_inject(&pr, 1, t, 14);                 /* TPID, no TCI */
    pair_inject(&pr, 1, t, 16);                 /* TCI, no EtherType */
    pair_inject(&pr, 1, t, 18);
    pair_inject(&pr, 1, t, 18 + 19);            /* inside the IP header */
    pair_inject(&pr, 1, t, 18 + 20 + 4);        /* inside UDP */
    pair_inject(&pr, 1, t, n - 1);              /* the ICRC cut */
    /* Two tags: 802.1ad outside, 802.1Q inside; two 802.1Q. */
    memcpy(d, t, 12);
    stw_be_p(d + 12, 0x88a8);
    stw_be_p(d + 14, VLAN_VID);
    memcpy(d + 16, t + 12, n - 12);
    pair_inject(&pr, 1, d, n + 4);
    stw_be_p(d + 12, 0x8100);
    pair_inject(&pr, 1, d, n + 4);
    vlan_pump(&w);
    vlan_cq_empty(&w, 1);
    query_stats(b->d, &st, sizeof(st));
    /* Cut short or double tagged: never the engine's, none counted. */
    g_assert_cmpuint(st.rx_packets - st0.rx_packets, <=, 3);
    g_assert_cmpuint(st.vlan_rx_dropped, ==, st0.vlan_rx_dropped);

    /* Still working: a tagged WRITE. */
    vlan_rc(&pr, q, 1);
    sge = peer_sge(a, 0, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 9, &sge, 1,
              b->buf + 4096, b->key[0], 0);
    img_move(b, 4096, a, 0, 2000);
    vlan_poll(&w, 0, &cqe);
    assert_cqe(&cqe, 9, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    vlan_pump(&w);
    g_assert_cmpuint(w.tagged[0], ==, 2);
    g_assert_cmpuint(w.bad_tag[0] + w.bad_tag[1], ==, 0);
    peer_check(b);
    vlan_teardown(&w);
}

/*
 * A migration keeps the GIDs' VLANs (a subsection of the GID) and the
 * counter: after it, the destination's frames are tagged as before, it
 * announces GID 1 on VLAN 100 (GID 0 untagged), and vlan_rx_dropped
 * kept its count.
 */
static void test_vlan_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    VlanWire w;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    LoopQp q[2];
    struct rs_device_stats st;
    struct rs_cqe cqe;
    struct rs_sge sge;
    uint8_t f[256], t[256];
    size_t len;
    gint64 end;

    vlan_setup(&pr, &w, obj, data, alloc);
    vlan_rc(&pr, q, 1);
    len = roce_frame(f, pair_mac[1], 0x0a000101, 0x0a000102, OP_SEND_ONLY,
                     q[1].qpn, pair_psn[0], NULL, 0);
    pair_inject(&pr, 1, t, vlan_tag(t, f, len, VLAN_OTHER));
    sge = peer_sge(a, 0, 1000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 1, &sge, 1,
              b->buf + 4096, b->key[0], 0);
    img_move(b, 4096, a, 0, 1000);
    vlan_poll(&w, 0, &cqe);
    assert_cqe(&cqe, 1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    vlan_pump(&w);
    g_assert_cmpuint(w.tagged[0], ==, 1);

    /* The old wires' last frames are only counted by the pair's relay. */
    pr.raw[0] = pr.raw[1] = true;
    pair_migrate(&pr);
    pr.hold[0] = pr.hold[1] = false;

    sge = peer_sge(a, 8192, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 2, &sge, 1,
              b->buf + 12288, b->key[0], 0);
    img_move(b, 12288, a, 8192, 3000);
    vlan_poll(&w, 0, &cqe);
    assert_cqe(&cqe, 2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    for (vlan_pump(&w); !w.arp_tagged[0] || !w.arp_tagged[1];
         vlan_pump(&w)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmpuint(w.tagged[0], >=, 1 + 3);
    g_assert_cmpuint(w.untagged[0] + w.untagged[1], ==, 0);
    g_assert_cmpuint(w.bad_tag[0] + w.bad_tag[1], ==, 0);
    peer_check(b);
    query_stats(b->d, &st, sizeof(st));
    g_assert_cmpuint(st.vlan_rx_dropped, ==, 1);
    vlan_teardown(&w);
}

/*
 * A kernel (privileged) UD QP's receive that came tagged completes with
 * RS_WC_F_VLAN and the TCI in srqn (what the kernel finds the GID to
 * answer a MAD from by); a user QP's never does.  One adapter, by
 * loopback from its GID 1 on VLAN 100 with priority 6 to itself.
 */
static void test_vlan_kernel_ud(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Loop l;
    LoopQp u, v, x;
    struct rs_ah_attr av;
    struct rs_cqe cqe;
    uint64_t avp, rbuf[2];
    uint32_t upd;
    int i;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    RS_ASSERT_OK(vlan_add_gid(l.d, 1, 0, RS_GID_VLAN_VALID | VLAN_VID));
    RS_ASSERT_OK(qrs_create_pd(l.d, &upd));
    loop_ud_qp(&l, &u, l.pd);
    loop_ud_qp(&l, &v, l.pd);
    loop_ud_qp(&l, &x, upd);

    memset(&av, 0, sizeof(av));
    gid_v4(av.dgid, 10, 0, 1, 1);               /* GID 1: loopback */
    av.hop_limit = 64;
    av.gid_index = cpu_to_le32(1);
    av.flow_label = cpu_to_le32(6u << RS_AV_PRIO_SHIFT);
    avp = qrs_alloc_zeroed(l.d, sizeof(av));
    qtest_memwrite(qrs_qts(l.d), avp, &av, sizeof(av));
    for (i = 0; i < 2; i++) {
        rbuf[i] = loop_buf(l.d, PAGE);
    }
    loop_pattern(&l, l.src, 64, 0x5c);
    loop_post_recv(&l, &v, 0xb1, rbuf[0], PAGE, RS_LOCAL_DMA_LKEY);
    av_addr_post(&l, &u, 0xa1, avp, v.qpn, l.src, 64);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.src_qp, ==, u.qpn);
    g_assert_cmphex(cqe.wc_flags & (RS_WC_F_GRH | RS_WC_F_VLAN), ==,
                    RS_WC_F_GRH | RS_WC_F_VLAN);
    g_assert_cmphex(cqe.srqn, ==, 6u << 13 | VLAN_VID);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf[0] + RS_GRH_BYTES, 64);

    /* A user QP (its PD not privileged) gets no tag in its CQE. */
    loop_post_recv(&l, &x, 0xb2, rbuf[1], PAGE,
                   eng_mr(l.d, upd, 0, rbuf[1], PAGE, STD_ACCESS));
    av_addr_post(&l, &u, 0xa2, avp, x.qpn, l.src, 64);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb2);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.wc_flags & RS_WC_F_VLAN, ==, 0);
    g_assert_cmphex(cqe.srqn, ==, 0);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa2);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
}

/*
 * UD through AHs (CREATE_AH): one from GID 1 with priority 2 sends
 * tagged VID 100 PCP 2, one from GID 0 untagged, to B's user UD QP,
 * which takes both (its CQEs without RS_WC_F_VLAN); a datagram on VLAN
 * 200 is dropped and counted.
 */
static void test_vlan_ud(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    VlanWire w;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_cmd_create_ah ac;
    struct rs_device_stats st0, st;
    struct rs_sge rs;
    struct rs_cqe cqe;
    LoopQp q[2];
    uint32_t ah[2];
    uint8_t f[256], t[256], deth[8];
    size_t len;
    int i;

    vlan_setup(&pr, &w, obj, data, alloc);
    w.pcp[0] = 2;
    pair_ud(&pr, q);
    for (i = 0; i < 2; i++) {
        ah_template(&ac, a->pd, 1 - i);
        gid_v4(ac.dgid, 10, 0, 1 - i, 2);
        memcpy(ac.dmac, pair_mac[1], 6);
        ac.flow_label = cpu_to_le32(i ? 0 : 2u << RS_AV_PRIO_SHIFT);
        RS_ASSERT_OK(qrs_create_ah(a->d, &ac, &ah[i]));
    }
    for (i = 0; i < 2; i++) {
        rs = peer_sge(b, 0x1000 * (i + 1), 40 + 512);
        eng_post_recv(b->d, &q[1], 0xb0 + i, &rs, 1);
        pair_post_ud(&pr, &q[0], ah[i], 0xa0 + i, 0x100 * i, 200 + i,
                     q[1].qpn);
        vlan_poll(&w, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
        vlan_poll(&w, 1, &cqe);
        assert_cqe(&cqe, 0xb0 + i, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
        g_assert_cmpuint(cqe.byte_len, ==, 40 + 200 + i);
        g_assert_cmphex(cqe.wc_flags, ==, RS_WC_F_GRH | RS_WC_F_IPV4);
        g_assert_cmphex(cqe.srqn, ==, 0);
        peer_dont_care(b, 0x1000 * (i + 1), 40);
        img_move(b, 0x1000 * (i + 1) + 40, a, 0x100 * i, 200 + i);
    }
    vlan_pump(&w);
    g_assert_cmpuint(w.tagged[0], ==, 1);
    g_assert_cmphex(w.ops[0][0], ==, OP_UD_SEND_ONLY);
    g_assert_cmpuint(w.untagged[0], ==, 1);
    g_assert_cmpuint(w.bad_tag[0], ==, 0);
    peer_check(b);

    /* The same datagram on VLAN 200: dropped, counted. */
    stl_be_p(deth, STD_QKEY);
    stl_be_p(deth + 4, q[0].qpn);
    len = roce_frame(f, pair_mac[1], 0x0a000101, 0x0a000102,
                     OP_UD_SEND_ONLY, q[1].qpn, 0, deth, sizeof(deth));
    query_stats(b->d, &st0, sizeof(st0));
    rs = peer_sge(b, 0x3000, 40 + 512);
    eng_post_recv(b->d, &q[1], 0xb2, &rs, 1);
    pair_inject(&pr, 1, t, vlan_tag(t, f, len, VLAN_OTHER));
    vlan_cq_empty(&w, 1);
    query_stats(b->d, &st, sizeof(st));
    g_assert_cmpuint(st.vlan_rx_dropped - st0.vlan_rx_dropped, ==, 1);
    /* and on VLAN 100: taken */
    pair_inject(&pr, 1, t, vlan_tag(t, f, len, VLAN_VID));
    vlan_poll(&w, 1, &cqe);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 40);
    peer_dont_care(b, 0x3000, 40);
    vlan_teardown(&w);
}

static void register_vlan_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };

    rs_add_standalone_test("vlan/rc", test_vlan_rc, &pair);
    rs_add_standalone_test("vlan/filter", test_vlan_filter, &pair);
    rs_add_standalone_test("vlan/hostile", test_vlan_hostile, &pair);
    rs_add_standalone_test("vlan/migrate", test_vlan_migrate, &pair);
    rs_add_standalone_test("vlan/kernel-ud", test_vlan_kernel_ud, &pair);
    rs_add_standalone_test("vlan/ud", test_vlan_ud, &pair);
}

libqos_init(register_vlan_tests);
