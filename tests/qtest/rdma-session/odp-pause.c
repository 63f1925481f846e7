/*
 * rdma-session qtests: on-demand paging: the page-fault pause turned off,
 * hostile PAUSE and RESUME frames, a fault storm with the pause and with
 * RNR NAKs only, and the bounds on what a hostile peer makes the device
 * do (UD/UC fault events, the pause per PSN).  The test is the driver
 * (rs-odp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-odp.h"

/* ------------------------------------------------------------------ */
/* odp-pause=off, hostile PAUSE and RESUME, the table's size          */
/* ------------------------------------------------------------------ */

#define ODP_OFF_RNR     24      /* 40.96 ms */

/*
 * odp-pause=off on B: its fault sends RNR NAKs only, A waits out each
 * (rnr_retry 7) and sends again; after the resolve the next retry goes
 * through.  No PAUSE or RESUME on the wire.
 */
static void test_odp_pause_off(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_stats sa, sb;
    struct rs_event ev;
    uint32_t key, psn = pair_psn[0];
    unsigned i;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_connect(&pr, q, RS_QPT_RC, 1, 7, ODP_OFF_RNR);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);

    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf + 0x100, 100,
                  a->key[0], ODP_VA + 0x10, key);
    ev = expect_fault(&pr, 1, key, ODP_VA, 1, 1, true);
    pair_wait_frames(&pr, 1, 1);
    odp_step(&pr, 100 * ODP_MS);
    drain_faults(b->d, &ev);
    pair_pump(&pr);
    g_test_message("in 100 ms A sent %u frames, B %u", pr.nops[0],
                   pr.nops[1]);
    g_assert_cmpuint(pr.nops[0], >=, 3);
    for (i = 0; i < pr.nops[1]; i++) {
        g_assert_cmphex(pr.op[1][i], ==, OP_ACK);
        g_assert_cmphex(pr.syn[1][i], ==, AETH_RNR | ODP_OFF_RNR);
        g_assert_cmphex(pr.psn[1][i], ==, psn);
    }
    for (i = 0; i < pr.nops[0]; i++) {
        g_assert_cmphex(pr.op[0][i], ==, OP_WRITE_ONLY);
        g_assert_cmphex(pr.psn[0][i], ==, psn);
    }
    pair_cq_empty(&pr, 0);

    odp_map(b->d, key, 0, ODP_VA, b->buf + 0x3000, 1, ODP_RW);
    odp_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    drain_faults(b->d, &ev);
    expect_no_op(&pr, 1, OP_ODP_PAUSE);
    expect_no_op(&pr, 1, OP_ODP_RESUME);
    img_move(b, 0x3010, a, 0x100, 100);
    peer_check(b);

    odp_stats(a->d, &sa);
    odp_stats(b->d, &sb);
    g_assert_cmpuint(sb.odp_pauses_sent, ==, 0);
    g_assert_cmpuint(sa.odp_pauses_rcvd, ==, 0);
    g_assert_cmpuint(sa.odp_resumes_rcvd, ==, 0);
    g_assert_cmpuint(sa.rnr_naks_rcvd, >=, 3);
    g_assert_cmpuint(sb.odp_faults, >=, 1);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/* A control frame to A from B, built on B's frame @tmpl: BTH, AETH. */
static GByteArray *ctl_frame(const GByteArray *tmpl, uint8_t op,
                             uint32_t dqpn, uint32_t psn, uint8_t syn,
                             size_t extra, bool no_aeth)
{
    size_t len = ROCE_EXT + (no_aeth ? 0 : 4) + extra + 4;
    GByteArray *f = g_byte_array_sized_new(len);

    g_byte_array_set_size(f, len);
    memset(f->data, 0, len);
    memcpy(f->data, tmpl->data, ROCE_EXT);
    f->data[ROCE_BTH] = op;
    f->data[ROCE_BTH + 1] &= 0xcf;      /* no pad */
    stl_be_p(f->data + ROCE_BTH + 4, dqpn & 0xffffff);
    stl_be_p(f->data + ROCE_BTH + 8, psn & 0xffffff);
    if (!no_aeth) {
        stl_be_p(f->data + ROCE_EXT, (uint32_t)syn << 24);
    }
    roce_reseal(f->data, len);
    return f;
}

static void inject(Pair *pr, GByteArray *f)
{
    pair_inject(pr, 0, f->data, f->len);
    g_byte_array_unref(f);
}

/* Give A time to take what was injected; no virtual time passes. */
static void settle(Pair *pr)
{
    g_usleep(20 * 1000);
    qtest_readl(qrs_qts(pr->p[0].d), pr->p[0].buf);
    pair_pump(pr);
}

/*
 * Until A has taken @n pauses in all: the PAUSE injected last is in
 * (QEMU reads the wire in order: what was injected before it is too).
 */
static void wait_pauses_rcvd(Pair *pr, uint64_t n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    struct rs_device_stats st;

    for (;;) {
        odp_stats_get(pr->p[0].d, &st);
        if (st.odp_pauses_rcvd >= n) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/*
 * Inject @f (@what), which A must drop: it sends nothing and completes
 * nothing because of it.
 */
static void inject_dropped(Pair *pr, GByteArray *f, const char *what)
{
    unsigned n = pr->nops[0];

    g_test_message("injected: %s", what);
    inject(pr, f);
    settle(pr);
    g_assert_cmpuint(pr->nops[0], ==, n);
    pair_cq_empty(pr, 0);
}

/*
 * PAUSE and RESUME from a peer that has no fault: for a QP with nothing
 * outstanding, for PSNs outside what A has outstanding, a RESUME for a QP
 * that is not paused, to a UD and a UC QP, to no QP, with no AETH or with
 * bytes after it: all dropped, A goes on sending.  A well-formed PAUSE for
 * A's outstanding WRITE pauses A (nothing sent, not the WQE behind it nor
 * a tail loss probe, and the RNR NAK after it costs no RNR retry); bad
 * RESUMEs leave it paused; the right RESUME makes it send again at once.
 */
typedef struct Hostile {
    Pair pr;
    LoopQp q[2], u[2], x[2];    /* RC, UD, UC */
    GByteArray *tmpl;           /* B's ACK: what the frames are made of */
    uint32_t psn;               /* A's next PSN on q */
} Hostile;

/* Nothing outstanding: PAUSE at the next PSN, an old one; RESUME. */
static void hostile_idle(Hostile *h)
{
    Pair *pr = &h->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h->q;
    GByteArray *tmpl = h->tmpl;
    uint32_t psn = h->psn;

    inject(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn, AETH_RNR, 0,
                          false));
    inject(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn - 1, AETH_RNR, 0,
                          false));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn, AETH_ACK, 0,
                          false));
    settle(pr);
    pair_log_reset(pr);
    pr->hold[1] = false;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x200, 100,
                  a->key[0], b->buf + 0x200, b->key[0]);
    pair_wait_frames(pr, 0, 1);
    pair_expect_cqe(pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x200, a, 0x200, 100);
    psn++;
    h->psn = psn;
}

/*
 * A WRITE outstanding (its ACK held): PAUSEs outside the window, bad
 * lengths, a RESUME for a QP that is not paused, to other QPs; then the
 * next WRITE leaves at once.
 */
static void hostile_window(Hostile *h)
{
    Pair *pr = &h->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h->q, *u = h->u, *x = h->x;
    GByteArray *tmpl = h->tmpl;
    uint32_t psn = h->psn;

    pair_log_reset(pr);
    pr->hold[1] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, a->buf + 0x300, 100,
                  a->key[0], b->buf + 0x300, b->key[0]);
    pair_wait_frames(pr, 1, 1);
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn + 5,
                                 AETH_RNR, 0, false),
                   "PAUSE past the PSNs sent");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn - 10,
                                 AETH_RNR, 0, false),
                   "PAUSE before the PSNs outstanding");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn,
                                 psn + 0x800000, AETH_RNR, 0, false),
                   "PAUSE half the PSN space away");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn,
                                 AETH_RNR, 0, true),
                   "PAUSE without AETH");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn,
                                 AETH_RNR, 8, false),
                   "PAUSE with 8 bytes after the AETH");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn,
                                 AETH_RNR, 1, false),
                   "PAUSE with a byte after the AETH");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn,
                                 AETH_ACK, 0, false),
                   "RESUME for a QP that is not paused");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, x[0].qpn, pair_psn[0],
                                 AETH_RNR, 0, false),
                   "PAUSE to a UC QP");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, u[0].qpn, 0, AETH_RNR,
                                 0, false),
                   "PAUSE to a UD QP");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_PAUSE, 0xabcd, psn, AETH_RNR,
                                 0, false),
                   "PAUSE to no QP");
    inject_dropped(pr, ctl_frame(tmpl, OP_ODP_RESUME, u[0].qpn, 0, AETH_ACK,
                                 0, false),
                   "RESUME to a UD QP");
    /* Not paused either: the next WRITE leaves at once. */
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY);
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa3, a->buf + 0x400, 100,
                  a->key[0], b->buf + 0x400, b->key[0]);
    pair_wait_frames(pr, 0, 2);
    g_assert_cmphex(pr->psn[0][1], ==, (psn + 1) & 0xffffff);
    pair_release(pr, 1);
    pair_expect_cqe(pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    pair_expect_cqe(pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x300, a, 0x300, 100);
    img_move(b, 0x400, a, 0x400, 100);
    psn += 2;
    h->psn = psn;
}

/*
 * A real pause of A's outstanding WRITE (its ACK lost), timer code 0
 * (655 ms), and the RNR NAK after it (A has no RNR retry to spend);
 * RESUMEs that are not it; the one that is.
 */
static void hostile_pause(Hostile *h)
{
    Pair *pr = &h->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h->q, *u = h->u;
    GByteArray *tmpl = h->tmpl;
    uint32_t psn = h->psn;
    struct rs_device_stats st;

    pair_log_reset(pr);
    pr->hold[1] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa4, a->buf + 0x500, 100,
                  a->key[0], b->buf + 0x500, b->key[0]);
    pair_wait_frames(pr, 1, 1);
    pair_forget(pr, 1);
    odp_stats_get(a->d, &st);
    inject(pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn, AETH_RNR, 0,
                          false));
    inject(pr, ctl_frame(tmpl, OP_ACK, q[0].qpn, psn, AETH_RNR | 0, 0,
                          false));
    wait_pauses_rcvd(pr, st.odp_pauses_rcvd + 1);
    settle(pr);
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa5, a->buf + 0x600, 100,
                  a->key[0], b->buf + 0x600, b->key[0]);
    settle(pr);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY);
    /* RESUMEs that are not it: no AETH, too long, another PSN, UD. */
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn, AETH_ACK, 0,
                          true));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn, AETH_ACK, 8,
                          false));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn + 7, AETH_ACK,
                          0, false));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn - 3, AETH_ACK,
                          0, false));
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, u[0].qpn, psn, AETH_ACK, 0,
                          false));
    settle(pr);
    /* 100 ms: past the tail loss probe, short of the PAUSE's timer. */
    odp_step(pr, 100 * ODP_MS);
    settle(pr);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY);
    pair_cq_empty(pr, 0);
    inject(pr, ctl_frame(tmpl, OP_ODP_RESUME, q[0].qpn, psn, AETH_ACK, 0,
                          false));
    pair_wait_frames(pr, 0, 3);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY, OP_WRITE_ONLY, OP_WRITE_ONLY);
    g_assert_cmphex(pr->psn[0][1], ==, psn & 0xffffff);
    g_assert_cmphex(pr->psn[0][2], ==, (psn + 1) & 0xffffff);
    pair_expect_cqe(pr, 0, 0xa4, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    pair_expect_cqe(pr, 0, 0xa5, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x500, a, 0x500, 100);
    img_move(b, 0x600, a, 0x600, 100);
    h->psn = psn + 2;
}

/*
 * Like an RNR NAK, a PAUSE acknowledges the PSNs before its own: of two
 * outstanding WRITEs whose ACKs are lost, a PAUSE at the second completes
 * the first; the RESUME sends only the second again.
 */
static void hostile_ack(Hostile *h)
{
    Pair *pr = &h->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h->q;
    uint32_t psn = h->psn;

    pair_log_reset(pr);
    pr->hold[1] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa8, a->buf + 0x900, 100,
                  a->key[0], b->buf + 0x900, b->key[0]);
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa9, a->buf + 0xa00, 100,
                  a->key[0], b->buf + 0xa00, b->key[0]);
    pair_wait_frames(pr, 0, 2);
    pair_wait_frames(pr, 1, 1);
    settle(pr);
    pair_forget(pr, 1);
    inject(pr, ctl_frame(h->tmpl, OP_ODP_PAUSE, q[0].qpn, psn + 1, AETH_RNR,
                         0, false));
    pair_expect_cqe(pr, 0, 0xa8, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    settle(pr);
    pair_cq_empty(pr, 0);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY, OP_WRITE_ONLY);
    inject(pr, ctl_frame(h->tmpl, OP_ODP_RESUME, q[0].qpn, psn + 1, AETH_ACK,
                         0, false));
    pair_expect_cqe(pr, 0, 0xa9, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    PAIR_EXPECT_OPS(pr, 0, OP_WRITE_ONLY, OP_WRITE_ONLY, OP_WRITE_ONLY);
    g_assert_cmphex(pr->psn[0][2], ==, (psn + 1) & 0xffffff);
    img_move(b, 0x900, a, 0x900, 100);
    img_move(b, 0xa00, a, 0xa00, 100);
    h->psn = psn + 2;
}

static void test_odp_hostile(void *obj, void *data, QGuestAllocator *alloc)
{
    Hostile h;
    Pair *pr = &h.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    LoopQp *q = h.q, *u = h.u, *x = h.x;
    struct rs_cmd_create_ah ac;
    struct rs_device_stats sa;
    struct rs_sge rs[2];
    struct rs_cqe cqe;
    uint32_t ah;
    int i;

    pair_setup(pr, obj, data, alloc);
    odp_rc(pr, q);
    odp_connect(pr, x, RS_QPT_UC, 1, 0, 12);
    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &u[i], RS_QPT_UD, pr->p[i].pd);
        qp_walk(pr->p[i].d, u[i].h, RS_QPT_UD, RS_QPS_RTS);
    }
    ah_template(&ac, a->pd, 0);
    memcpy(ac.dmac, pair_mac[1], 6);
    RS_ASSERT_OK(qrs_create_ah(a->d, &ac, &ah));

    /* B's ACK of a WRITE: the template. */
    pr->hold[1] = true;
    pair_post_sge(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf, 100,
                  a->key[0], b->buf + 0x100, b->key[0]);
    h.tmpl = pair_take(pr, 1);
    g_assert_cmphex(h.tmpl->data[ROCE_BTH], ==, OP_ACK);
    pair_inject(pr, 0, h.tmpl->data, h.tmpl->len);
    pair_expect_cqe(pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x100, a, 0, 100);
    h.psn = pair_psn[0] + 1;

    hostile_idle(&h);
    hostile_window(&h);
    hostile_pause(&h);
    hostile_ack(&h);

    /* UC and UD still carry data. */
    rs[0] = peer_sge(b, 0x1000, 40);
    rs[1] = peer_sge(b, 0x1100, 300);
    eng_post_recv(b->d, &u[1], 0xb0, rs, 2);
    pair_post_ud(pr, &u[0], ah, 0xa6, 0x700, 300, u[1].qpn);
    pair_expect_cqe(pr, 0, 0xa6, RS_WC_SUCCESS, RS_WR_SEND, u[0].qpn, 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, u[1].qpn);
    peer_dont_care(b, 0x1000, 40);
    img_move(b, 0x1100, a, 0x700, 300);
    rs[0] = peer_sge(b, 0x2000, 500);
    eng_post_recv(b->d, &x[1], 0xb1, rs, 1);
    pair_post_sge(pr, 0, &x[0], RS_WR_SEND, 0xa7, a->buf + 0x800, 500,
                  a->key[0], 0, 0);
    pair_expect_cqe(pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, x[1].qpn, 500);
    pair_expect_cqe(pr, 0, 0xa7, RS_WC_SUCCESS, RS_WR_SEND, x[0].qpn, 0);
    img_move(b, 0x2000, a, 0x800, 500);
    peer_check(b);

    odp_stats(a->d, &sa);
    g_assert_cmpuint(sa.odp_pauses_rcvd, >=, 1);
    g_assert_cmpuint(sa.odp_resumes_rcvd, >=, 1);
    expect_no_event(a->d);
    expect_no_event(b->d);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(a->d, u[0].h), ==, RS_QPS_RTS);
    g_byte_array_unref(h.tmpl);
    pair_teardown(pr);
}

/* ------------------------------------------------------------------ */
/* A fault storm: what the pause saves                                */
/* ------------------------------------------------------------------ */

#define STORM_FAULTS    ODP_PAGES
#define STORM_WAIT_US   10000   /* each fault resolved after 10 ms */
#define STORM_MIN_RNR   12      /* 0.64 ms: rdma_cm's min_rnr_timer */

/*
 * 16 WRITEs, each into a page B does not have, each resolved 10 ms of
 * virtual time after its fault (time moves 100 us at a time).  Counted:
 * the WRITEs A sends again, B's RNR NAKs and PAUSEs.  With the pause A
 * sends each WRITE once more, after RESUME; with RNR NAKs only
 * (odp-pause=off on B) it sends it again at every RNR timer.
 */
static void odp_storm(void *obj, void *data, QGuestAllocator *alloc,
                      bool pause)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    unsigned i, j, resent = 0, rnr = 0, pauses = 0;
    uint32_t key;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    odp_connect(&pr, q, RS_QPT_RC, 1, 7, STORM_MIN_RNR);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    for (i = 0; i < STORM_FAULTS; i++) {
        uint64_t va = ODP_VA + (uint64_t)i * PAGE;
        struct rs_event ev;

        pair_log_reset(&pr);
        pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0x100 + i,
                      a->buf + 0x100, 64, a->key[0], va, key);
        ev = expect_fault(&pr, 1, key, va, 1, 1, true);
        for (j = 0; j < STORM_WAIT_US / 100; j++) {
            qtest_clock_step(qrs_qts(a->d), 100 * 1000);
            pair_pump(&pr);
        }
        drain_faults(b->d, &ev);
        odp_map(b->d, key, 0, va, b->buf + (i % 4) * PAGE, 1, ODP_RW);
        odp_expect_cqe(&pr, 0, 0x100 + i, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                       q[0].qpn);
        for (j = 0; j < pr.nops[0]; j++) {
            resent += j > 0 && pr.op[0][j] == OP_WRITE_ONLY;
        }
        for (j = 0; j < pr.nops[1]; j++) {
            rnr += pr.op[1][j] == OP_ACK &&
                   (pr.syn[1][j] & 0xe0) == AETH_RNR;
            pauses += pr.op[1][j] == OP_ODP_PAUSE;
        }
    }
    g_test_message("fault storm, %s: %u faults resolved after %u ms each: "
                   "A sent %u WRITEs again; B sent %u RNR NAKs, %u PAUSEs",
                   pause ? "page-fault pause" : "RNR NAKs only",
                   STORM_FAULTS, STORM_WAIT_US / 1000, resent, rnr, pauses);
    if (pause) {
        g_assert_cmpuint(resent, ==, STORM_FAULTS);
        g_assert_cmpuint(pauses, ==, STORM_FAULTS);
    } else {
        g_assert_cmpuint(resent, >=, 10 * STORM_FAULTS);
        g_assert_cmpuint(pauses, ==, 0);
    }
    pair_teardown(&pr);
}

static void test_odp_storm_pause(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    odp_storm(obj, data, alloc, true);
}

static void test_odp_storm_rnr(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    odp_storm(obj, data, alloc, false);
}

/* ------------------------------------------------------------------ */
/* Hostile peers: the bounds of what they make the device do          */
/* ------------------------------------------------------------------ */

/* The device's bound: UD/UC fault events per 100 ms (the spec). */
#define FF_EVENTS       32
#define FF_BATCH        8       /* WRITEs between looks at B's events */

/* Virtual time now (after a step of 1 ns: qtest takes no step of 0). */
static int64_t vclock(Pair *pr)
{
    return qtest_clock_step(qrs_qts(pr->p[0].d), 1);
}

/*
 * A UC WRITE of 64 bytes from A into B's ODP region at @va, which has no
 * page: B drops it (and may raise the fault).
 */
static void ff_write(Pair *pr, LoopQp *c, uint64_t wr_id, uint64_t va,
                     uint32_t key)
{
    Peer *a = &pr->p[0];

    pair_log_reset(pr);
    pair_post_sge(pr, 0, c, RS_WR_RDMA_WRITE, wr_id, a->buf + 0x100, 64,
                  a->key[0], va, key);
    pair_expect_cqe(pr, 0, wr_id, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, c->qpn,
                    0);
}

/*
 * B has taken every WRITE before: one more into its ordinary MR has
 * landed (B reads the wire in order).  Then B's events: each a fault of
 * @key in the region, written; how many.
 */
static unsigned ff_sync(Pair *pr, LoopQp *c, unsigned n, uint32_t key)
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    uint32_t off = 0x4000 + (n % 64) * 64;
    struct rs_event ev;
    unsigned events = 0;

    pair_log_reset(pr);
    pair_post_sge(pr, 0, c, RS_WR_RDMA_WRITE, 0xf000 + n,
                  a->buf + 0x1000 + (n % 64) * 64, 64, a->key[0],
                  b->buf + off, b->key[0]);
    pair_expect_cqe(pr, 0, 0xf000 + n, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    c->qpn, 0);
    img_move(b, off, a, 0x1000 + (n % 64) * 64, 64);
    peer_wait_range(pr, 1, off, 64);
    while (qrs_aeq_poll(b->d, &ev, 0)) {
        g_assert_cmphex(ev.type, ==, RS_EV_ODP_PAGE_FAULT);
        g_assert_cmphex(ev.handle, ==, key);
        g_assert_cmphex(ev.data & (PAGE - 1), ==, 0);
        g_assert_cmphex(ev.data, >=, ODP_VA);
        g_assert_cmphex(ev.data, <, ODP_VA + ODP_PAGES * PAGE);
        g_assert_cmphex(ev.flags & RS_EQE_ODP_WRITE, ==, RS_EQE_ODP_WRITE);
        events++;
    }
    return events;
}

/*
 * A peer that sends UC WRITEs into pages of B's ODP region that have no
 * translation, a new page with every packet (two in turn, then all 16):
 * B drops each, and raises a bounded number of page-fault events however
 * the pages alternate: one per page in 100 ms, at most FF_EVENTS per
 * 100 ms in all, its event queue never overflows.  After 100 ms a fault
 * is raised again; once mapped, the WRITE lands.
 */
static void test_odp_fault_flood(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_stats s0, s1;
    unsigned i, events, sync = 0;
    uint64_t periods;
    int64_t t0;
    uint32_t key;
    LoopQp c[2];

    pair_setup(&pr, obj, data, alloc);
    odp_connect(&pr, c, RS_QPT_UC, 1, 0, 12);
    key = odp_mr(b->d, b->pd, ODP_VA, ODP_PAGES * PAGE);
    odp_stats_get(b->d, &s0);
    t0 = vclock(&pr);

    /* Two pages in turn: one event each. */
    events = 0;
    for (i = 0; i < 4 * FF_BATCH; i++) {
        ff_write(&pr, &c[0], 0x100 + i, ODP_VA + (i % 2) * PAGE + 0x40, key);
        if (i % FF_BATCH == FF_BATCH - 1) {
            events += ff_sync(&pr, &c[0], sync++, key);
        }
    }
    g_test_message("2 pages in turn: %u WRITEs, %u events in %" PRId64
                   " us", 4 * FF_BATCH, events, (vclock(&pr) - t0) / 1000);
    g_assert_cmpint(vclock(&pr) - t0, <, 100 * ODP_MS);
    g_assert_cmpuint(events, ==, 2);

    /* All 16 pages in turn, 12 times each: at most FF_EVENTS in all. */
    for (i = 0; i < 12 * ODP_PAGES; i++) {
        ff_write(&pr, &c[0], 0x200 + i,
                 ODP_VA + (i % ODP_PAGES) * PAGE + 0x80, key);
        if (i % FF_BATCH == FF_BATCH - 1) {
            events += ff_sync(&pr, &c[0], sync++, key);
        }
    }
    periods = (vclock(&pr) - t0) / (100 * ODP_MS) + 1;
    odp_stats_get(b->d, &s1);
    g_test_message("then 16 pages in turn: %u WRITEs; %u events in all in "
                   "%" PRId64 " us (odp_faults %" PRIu64 ")",
                   12 * ODP_PAGES, events, (vclock(&pr) - t0) / 1000,
                   s1.odp_faults - s0.odp_faults);
    g_assert_cmpuint(s1.odp_faults - s0.odp_faults, ==, events);
    g_assert_cmpuint(events, >=, ODP_PAGES);
    g_assert_cmpuint(events, <=, FF_EVENTS * periods);
    g_assert_cmphex(qrs_readl(b->d, A_RS_STATUS) &
                    R_RS_STATUS_AEQ_OVERFLOW_MASK, ==, 0);

    /* 100 ms later a fault is raised again; mapped, the WRITE lands. */
    odp_step(&pr, 100 * ODP_MS);
    ff_write(&pr, &c[0], 0x300, ODP_VA + 0x40, key);
    g_assert_cmpuint(ff_sync(&pr, &c[0], sync++, key), ==, 1);
    odp_map(b->d, key, 0, ODP_VA, b->buf + 0x3000, 1, ODP_RW);
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &c[0], RS_WR_RDMA_WRITE, 0x301, a->buf + 0x900,
                  100, a->key[0], ODP_VA + 0x40, key);
    pair_expect_cqe(&pr, 0, 0x301, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    c[0].qpn, 0);
    img_move(b, 0x3040, a, 0x900, 100);
    peer_wait_range(&pr, 1, 0x3040, 100);
    peer_check(b);
    expect_no_event(b->d);
    g_assert_cmpuint(qp_state(b->d, c[1].h), ==, RS_QPS_RTS);
    pair_teardown(&pr);
}

/* A PAUSE's timer code 0: 655.36 ms; the test pauses again before it. */
#define PB_STEP_NS      (500 * ODP_MS)
#define PB_MAX_NS       (64 * 1000 * ODP_MS)    /* the spec's bound */

/*
 * A peer (or a host that spoofs it) that answers A's WRITE with PAUSEs
 * for ever, one every 500 ms, never a RESUME: A stays paused, sends
 * nothing and spends no retry for the spec's 64 s; after that each PAUSE
 * spends a retry (A's retry_cnt is 1), and the PAUSE that finds none
 * left ends the WRITE with RS_WC_RETRY_EXC_ERR (the QP in ERR), before
 * two more PAUSE steps.
 */
static void test_odp_pause_bound(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_device_stats st;
    struct rs_cqe cqe;
    GByteArray *tmpl;
    int64_t paused = 0;
    uint32_t psn;
    LoopQp q[2];
    bool done = false;

    pair_setup(&pr, obj, data, alloc);
    odp_rc(&pr, q);

    /* B's ACK of a WRITE: the template of the PAUSEs. */
    pr.hold[1] = true;
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, a->buf, 100,
                  a->key[0], b->buf + 0x100, b->key[0]);
    tmpl = pair_take(&pr, 1);
    g_assert_cmphex(tmpl->data[ROCE_BTH], ==, OP_ACK);
    pair_inject(&pr, 0, tmpl->data, tmpl->len);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x100, a, 0, 100);
    psn = pair_psn[0] + 1;

    /* The next WRITE: its ACK lost, PAUSEs instead. */
    pair_log_reset(&pr);
    pair_post_sge(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, a->buf + 0x200, 100,
                  a->key[0], b->buf + 0x200, b->key[0]);
    pair_wait_frames(&pr, 1, 1);
    pair_forget(&pr, 1);
    img_move(b, 0x200, a, 0x200, 100);
    odp_stats_get(a->d, &st);
    while (!done) {
        inject(&pr, ctl_frame(tmpl, OP_ODP_PAUSE, q[0].qpn, psn, AETH_RNR,
                              0, false));
        wait_pauses_rcvd(&pr, ++st.odp_pauses_rcvd);
        settle(&pr);
        done = eng_cq_peek(a->d, &a->cq, &cqe);
        if (paused < PB_MAX_NS) {
            /* Within the bound: paused, nothing sent again. */
            g_assert_false(done);
            g_assert_cmpuint(pr.nops[0], ==, 1);
            g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
        }
        if (!done) {
            g_assert_cmpint(paused, <, PB_MAX_NS + 2 * PB_STEP_NS);
            qtest_clock_step(qrs_qts(a->d), PB_STEP_NS);
            paused += PB_STEP_NS;
        }
    }
    g_test_message("A gave up after %" PRId64 " ms of PAUSEs",
                   paused / ODP_MS);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_RETRY_EXC_ERR, RS_WR_RDMA_WRITE, q[0].qpn);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    g_assert_cmpuint(pr.nops[0], ==, 1);
    pr.hold[1] = false;
    g_byte_array_unref(tmpl);
    pair_teardown(&pr);
}

static void register_odp_pause_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions pause_off = {
        .before = pair_before, .arg = (void *)",odp-pause=off",
    };

    rs_add_standalone_test("odp/pause-off", test_odp_pause_off, &pause_off);
    rs_add_standalone_test("odp/hostile", test_odp_hostile, &pair);
    rs_add_standalone_test("odp/storm-pause", test_odp_storm_pause, &pair);
    rs_add_standalone_test("odp/storm-rnr", test_odp_storm_rnr, &pause_off);
    rs_add_standalone_test("odp/fault-flood", test_odp_fault_flood, &pair);
    rs_add_standalone_test("odp/pause-bound", test_odp_pause_bound, &pair);
}

libqos_init(register_odp_pause_tests);
