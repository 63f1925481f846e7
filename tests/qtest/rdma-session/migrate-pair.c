/*
 * rdma-session qtests: live migration of two adapters with RC state in
 * flight
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

/*
 * What the source had put on adapter @i's old wire when it was saved: the
 * bytes in the socket now.  Reading them makes room, and the stopped
 * source's net queue and bottom halves may then send more; that comes
 * after the state was saved and is left unread, lost with the old wire.
 */
static void pair_pump_old(Pair *pr, int i)
{
    int left;

    g_assert_cmpint(ioctl(pr->fd[i], FIONREAD, &left), ==, 0);
    while (left > 0) {
        ssize_t len = lan_sock_recv(pr->fd[i], pr->frame, RS_LAN_MAX_FRAME,
                                    RS_QOS_TIMEOUT_US);

        g_assert_cmpint(len, >, 0);
        left -= sizeof(uint32_t) + len;
        pair_handle(pr, i, len);
    }
}

/*
 * Once the source has saved: take in what it had put on the old wires,
 * and give the destination's adapters new ones.
 */
/* A frame on adapter i's new wire before its destination runs. */
static GByteArray *pair_early[2];

static void pair_mig_rewire(GString *cmd_line, void *opaque)
{
    Pair *pr = opaque;
    PairSockets *s = pr->sock;
    int i, sv[2];

    for (i = 0; i < 2; i++) {
        pair_pump_old(pr, i);
        g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
        qemu_set_cloexec(sv[0]);
        s->old[i] = s->test[i];
        s->test[i] = pr->fd[i] = sv[0];
        close(s->qemu[i]);
        s->qemu[i] = sv[1];
        if (pair_early[i]) {
            pair_inject(pr, i, pair_early[i]->data, pair_early[i]->len);
            g_byte_array_unref(pair_early[i]);
            pair_early[i] = NULL;
        }
    }
    pr->nops[0] = pr->nops[1] = 0;
    pr->drop[0] = pr->drop[1] = 0;
    pair_cmd_line(cmd_line, s);
}

/*
 * Live migration of the QEMU that runs both adapters: stop it, save its
 * state, load it into a new QEMU with the same devices and continue
 * there.  A and B move together, at one instant, as the adapters of two
 * VMs whose hosts switch over at once would; the relay is the switch
 * between them and stays.  The destination's command line gives the same
 * devices, its netdevs on new socketpairs.
 *
 * From here on the switch holds both directions.  On return held[] has
 * what the source had put on the wire (pair_pump_old), the log is empty,
 * and what the destination sent on resuming is still in the new sockets:
 * the caller delivers the old frames to the running destination
 * (pair_release: a switch's queue drains) or loses them (pair_lose_held).
 */
void pair_migrate_raw(Pair *pr)
{
    int i;

    g_assert_null(pr->to);
    pr->hold[0] = pr->hold[1] = true;
    pr->to = mig_move(qrs_qts(pr->p[0].d), pair_mig_rewire, pr);
    pr->to_bus = qpci_new_pc(pr->to, NULL);
    for (i = 0; i < 2; i++) {
        mig_attach(&pr->to_dev[i], pr->to_bus, pr->p[i].d);
        pr->p[i].d = &pr->to_dev[i];
    }
}

void pair_migrate(Pair *pr)
{
    int i;

    pair_migrate_raw(pr);
    for (i = 0; i < 2; i++) {
        /* The driver hears that it runs somewhere else now. */
        expect_event(pr->p[i].d, RS_EV_MIGRATION_NOTICE, 1);
    }
}

/* The switch loses what it holds from adapter @from, and holds on. */
static void pair_lose_held(Pair *pr, int from)
{
    GByteArray *f;

    while ((f = g_queue_pop_head(&pr->held[from]))) {
        g_byte_array_unref(f);
    }
}

/* Deliver the first @n frames held from adapter @from; hold the rest. */
static void pair_pass(Pair *pr, int from, unsigned n)
{
    while (n--) {
        GByteArray *f = g_queue_pop_head(&pr->held[from]);

        g_assert_nonnull(f);
        lan_sock_send(pr->fd[!from], f->data, f->len);
        g_byte_array_unref(f);
    }
}

/* Until adapter @from has sent a frame @op for @psn since the reset. */
static void pair_wait_sent(Pair *pr, int from, uint8_t op, uint32_t psn)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    unsigned i = 0;

    for (;;) {
        pair_pump(pr);
        for (; i < pr->nops[from]; i++) {
            if (pr->op[from][i] == op &&
                pr->psn[from][i] == (psn & 0xffffff)) {
                return;
            }
        }
        if (g_get_monotonic_time() > end) {
            g_error("adapter %c sent no opcode 0x%x for PSN 0x%x",
                    'A' + from, op, psn & 0xffffff);
        }
        g_usleep(1000);
    }
}

/* Until @n completions wait on adapter @i's CQ, without polling them. */
static void pair_cq_wait(Pair *pr, int i, unsigned n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    EngCq ahead = pr->p[i].cq;
    struct rs_cqe cqe;

    ahead.ci += n - 1;
    for (pair_pump(pr); !eng_cq_peek(pr->p[i].d, &ahead, &cqe);
         pair_pump(pr)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* Until both adapters have told the switch where their GIDs are now. */
static void pair_wait_announced(Pair *pr)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    for (pair_pump(pr); !pr->announced[0] || !pr->announced[1];
         pair_pump(pr)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* Until peer @p's buffer is as expected (a message arrives in parts). */
static void peer_wait(Peer *p)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    g_autofree uint8_t *got = g_malloc(PAIR_BUF);

    for (;;) {
        qtest_memread(qrs_qts(p->d), p->buf, got, PAIR_BUF);
        if (!memcmp(got, p->img, PAIR_BUF)) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* The end of every migration test: nothing else completes, both RTS. */
static void pair_mig_done(Pair *pr, LoopQp q[2])
{
    int i;

    for (i = 0; i < 2; i++) {
        pair_cq_empty(pr, i);
        peer_check(&pr->p[i]);
        g_assert_cmpuint(qp_state(pr->p[i].d, q[i].h), ==, RS_QPS_RTS);
    }
    pair_teardown(pr);
}

/*
 * Unacknowledged WQEs: three WRITEs and a SEND (eight packets whose PSNs
 * cross 2^24) have reached B, their ACKs wait at the switch.  On the
 * destination each adapter prompts its peer with an RNR NAK (timer code
 * 1) at the PSN it expects, and A, whose congestion window starts anew,
 * sends all eight packets again at once from its first unacknowledged
 * PSN.  The switch then delivers the ACKs it held: every WQE completes
 * once, B executes none of the duplicates.  Both adapters announce their
 * GIDs from the destination.
 */
static void test_engine_pair_migrate_unacked(void *obj, void *data,
                                             QGuestAllocator *alloc)
{
    static const struct {
        uint32_t soff, doff, len;
    } w[] = {
        { 0x100, 0x1000, 1500 }, { 0x800, 0x2000, 3000 },
        { 0x2000, 0x4000, 100 },
    };
    const uint32_t psn = pair_psn[0], next = (psn + 8) & 0xffffff;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0x6000, 2000);
    eng_post_recv(b->d, &q[1], 0xb3, &sge, 1);
    pair_log_reset(&pr);
    pr.hold[1] = true;
    for (i = 0; i < ARRAY_SIZE(w); i++) {
        sge = peer_sge(a, w[i].soff, w[i].len);
        pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0 + i, &sge, 1,
                  b->buf + w[i].doff, b->key[0], 0);
        img_move(b, w[i].doff, a, w[i].soff, w[i].len);
    }
    sge = peer_sge(a, 0x3000, 1800);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa3, &sge, 1, 0, 0, 0);
    img_move(b, 0x6000, a, 0x3000, 1800);
    pair_wait_sent(&pr, 1, OP_ACK, next - 1);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_FIRST,
                    OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_ONLY,
                    OP_SEND_FIRST, OP_SEND_LAST);
    pair_cq_empty(&pr, 0);
    peer_check(b);

    pair_migrate(&pr);
    g_assert_true(g_queue_is_empty(&pr.held[0]));
    g_assert_false(g_queue_is_empty(&pr.held[1]));
    pair_wait_frames(&pr, 0, 9);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_WRITE_FIRST, OP_WRITE_LAST,
                    OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST,
                    OP_WRITE_ONLY, OP_SEND_FIRST, OP_SEND_LAST);
    g_assert_cmphex(pr.syn[0][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[0][0], ==, pair_psn[1]);
    for (i = 1; i < 9; i++) {
        g_assert_cmphex(pr.psn[0][i], ==, (psn + i - 1) & 0xffffff);
    }
    pair_wait_frames(&pr, 1, 1);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[1][0], ==, next);

    /* The ACKs the switch held, then A's packets again. */
    pair_release(&pr, 1);
    for (i = 0; i < ARRAY_SIZE(w); i++) {
        pair_expect_cqe(&pr, 0, 0xa0 + i, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                        q[0].qpn, 0);
    }
    pair_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    pair_release(&pr, 0);
    /* B acknowledges the duplicates and executes none of them. */
    pair_wait_sent(&pr, 1, OP_ACK, next - 1);
    pair_expect_cqe(&pr, 1, 0xb3, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 1800);
    pair_wait_announced(&pr);
    pair_mig_done(&pr, q);
}

/*
 * A multi-packet message half sent and half received: B has the WRITE
 * before it and the first two packets of a four-packet SEND (its receive
 * WQE taken, half of it written); the other two wait at the switch.  On
 * the destination A sends the SEND again from its first packet (no ACK
 * covers any of it), B prompts A at the third packet's PSN, and the
 * switch delivers the second half first: B completes the message from
 * the responder state it brought along, and takes the rest as
 * duplicates.
 */
static void test_engine_pair_migrate_half_message(void *obj, void *data,
                                                  QGuestAllocator *alloc)
{
    const uint32_t psn = pair_psn[0];
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0x4000, 4096);
    eng_post_recv(b->d, &q[1], 0xb1, &sge, 1);
    pair_log_reset(&pr);
    pr.hold[0] = true;
    sge = peer_sge(a, 0x100, 2500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    sge = peer_sge(a, 0x2000, 4000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa1, &sge, 1, 0, 0, 0);
    pair_wait_frames(&pr, 0, 7);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST,
                    OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_MIDDLE,
                    OP_SEND_LAST);
    pair_pass(&pr, 0, 5);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x1000, a, 0x100, 2500);
    img_move(b, 0x4000, a, 0x2000, 2048);
    peer_wait(b);
    pair_cq_empty(&pr, 1);
    g_assert_cmpuint(g_queue_get_length(&pr.held[0]), ==, 2);

    pair_migrate(&pr);
    g_assert_cmpuint(g_queue_get_length(&pr.held[0]), ==, 2);
    pair_wait_frames(&pr, 0, 5);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_SEND_FIRST, OP_SEND_MIDDLE,
                    OP_SEND_MIDDLE, OP_SEND_LAST);
    g_assert_cmphex(pr.syn[0][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[0][1], ==, (psn + 3) & 0xffffff);
    pair_wait_frames(&pr, 1, 1);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[1][0], ==, (psn + 5) & 0xffffff);

    pair_release(&pr, 0);
    pair_release(&pr, 1);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 4000);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    img_move(b, 0x4000, a, 0x2000, 4000);
    pair_mig_done(&pr, q);
}

/*
 * A gap waiting on the new wire: B has the first two packets of a
 * four-packet SEND; the last one reaches B's destination before it runs,
 * the third is lost.  B asks A to go back to the third packet's PSN once
 * (a sequence NAK for the gap, or the prompt if it comes first), not
 * twice: a requester told twice starts a second retry over the first,
 * which soft-RoCE's gets wrong.  A's SEND then completes once.
 */
static void test_engine_pair_migrate_gap_at_resume(void *obj, void *data,
                                                   QGuestAllocator *alloc)
{
    const uint32_t psn = pair_psn[0];
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    GByteArray *third;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0x4000, 4096);
    eng_post_recv(b->d, &q[1], 0xb1, &sge, 1);
    pair_log_reset(&pr);
    pr.hold[0] = true;
    sge = peer_sge(a, 0x2000, 4000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa1, &sge, 1, 0, 0, 0);
    pair_wait_frames(&pr, 0, 4);
    pair_pass(&pr, 0, 2);
    img_move(b, 0x4000, a, 0x2000, 2048);
    peer_wait(b);
    third = g_queue_pop_head(&pr.held[0]);
    pair_early[1] = g_queue_pop_head(&pr.held[0]);
    g_byte_array_unref(third);
    g_assert_cmphex(pair_early[1]->data[ROCE_BTH], ==, OP_SEND_LAST);

    pair_migrate(&pr);
    /* A: its prompt and the SEND again; then B has had time for a NAK. */
    pair_wait_frames(&pr, 0, 5);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_SEND_FIRST, OP_SEND_MIDDLE,
                    OP_SEND_MIDDLE, OP_SEND_LAST);
    g_usleep(100 * 1000);
    qtest_readl(pr.to, b->buf);
    pair_pump(&pr);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_true(pr.syn[1][0] == AETH_NAK_SEQ ||
                  pr.syn[1][0] == (AETH_RNR | 1));
    g_assert_cmphex(pr.psn[1][0], ==, (psn + 2) & 0xffffff);

    pair_release(&pr, 0);
    pair_release(&pr, 1);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 4000);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    img_move(b, 0x4000, a, 0x2000, 4000);
    pair_mig_done(&pr, q);
}

/*
 * READ responses still owed.  X: B answered a READ, its four responses
 * wait at the switch and are lost there.  Y: B took a READ of 16 packets
 * but its wire filled up, so it still owes most responses when the state
 * is saved (the READ resource migrates with next < stop).  On the
 * destination B sends what it owes on its own, before any request asks
 * again (A's requests wait at the switch meanwhile), from where the
 * source stopped; then both READs complete with every byte.
 */
static void test_engine_pair_migrate_read_owed(void *obj, void *data,
                                               QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    GPollFD pfd = { .events = G_IO_IN };
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp x[2], y[2];
    GByteArray *req;
    uint32_t ypsn, k, i;
    bool x_first;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, x, 0, STD_ACCESS);
    pair_rc(&pr, y, 0, STD_ACCESS);
    peer_fill(b, 0, 4000, 0x31);
    peer_fill(b, 0x2000, 16384, 0x57);

    pair_log_reset(&pr);
    pr.hold[1] = true;
    sge = peer_sge(a, 0x1000, 4000);
    pair_post(&pr, 0, &x[0], RS_WR_RDMA_READ, 0xa1, &sge, 1, b->buf,
              b->key[0], 0);
    pair_wait_frames(&pr, 1, 4);
    PAIR_EXPECT_OPS(&pr, 1, OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE,
                    OP_READ_RESP_MIDDLE, OP_READ_RESP_LAST);

    /* Y's request reaches B; from now on nobody reads B's wire. */
    pr.hold[0] = true;
    sge = peer_sge(a, 0x3000, 16384);
    pair_post(&pr, 0, &y[0], RS_WR_RDMA_READ, 0xa2, &sge, 1,
              b->buf + 0x2000, b->key[0], 0);
    req = pair_take(&pr, 0);
    g_assert_cmphex(req->data[ROCE_BTH], ==, OP_READ_REQ);
    ypsn = ldl_be_p(req->data + ROCE_BTH + 8) & 0xffffff;
    pair_inject(&pr, 1, req->data, req->len);
    g_byte_array_unref(req);
    pfd.fd = pr.fd[1];
    g_assert_cmpint(g_poll(&pfd, 1, RS_QOS_TIMEOUT_US / 1000), ==, 1);
    /* B's responder ran to the full wire before QEMU answers this. */
    qtest_readl(qrs_qts(b->d), b->buf);

    pair_migrate(&pr);
    k = g_queue_get_length(&pr.held[1]) - 4;
    g_test_message("Y's responses on the wire when saved: %u of 16", k);
    g_assert_cmpuint(k, <, 16);
    pair_lose_held(&pr, 1);
    pair_wait_sent(&pr, 1, OP_READ_RESP_LAST, ypsn + 15);
    for (i = 0; i < pr.nops[1]; i++) {
        if (pr.op[1][i] != OP_ACK) {
            g_assert_cmpuint((pr.psn[1][i] - ypsn) & 0xffffff, >=, k);
        }
    }

    pair_log_reset(&pr);
    pair_release(&pr, 1);
    pair_release(&pr, 0);
    /* X and Y complete on different QPs, in either order. */
    pair_poll(&pr, 0, &cqe);
    x_first = cqe.wr_id == 0xa1;
    assert_cqe(&cqe, x_first ? 0xa1 : 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ,
               x_first ? x[0].qpn : y[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, x_first ? 4000 : 16384);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, x_first ? 0xa2 : 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ,
               x_first ? y[0].qpn : x[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, x_first ? 16384 : 4000);
    img_move(a, 0x1000, b, 0, 4000);
    img_move(a, 0x3000, b, 0x2000, 16384);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, x[1].h), ==, RS_QPS_RTS);
    pair_mig_done(&pr, y);
}

/*
 * An RNR wait in progress: B had no receive WQE for A's SEND and sent an
 * RNR NAK with its min_rnr_timer (code 12, 0.64 ms of virtual time); A
 * waits, with a WRITE queued behind the SEND.  The receive is posted on
 * the destination.  The deadline was the source's virtual time and does
 * not migrate, so A's wait ends as the destination runs: A sends the
 * SEND again from its first packet and then the WRITE, without virtual
 * time passing.
 */
static void test_engine_pair_migrate_rnr(void *obj, void *data,
                                         QGuestAllocator *alloc)
{
    const uint32_t psn = pair_psn[0];
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_log_reset(&pr);
    sge = peer_sge(a, 0x100, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa1, &sge, 1, 0, 0, 0);
    pair_wait_sent(&pr, 1, OP_ACK, psn);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 12);
    sge = peer_sge(a, 0x2000, 500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    g_usleep(20 * 1000);
    PAIR_EXPECT_OPS(&pr, 0, OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    pair_cq_empty(&pr, 0);

    pair_migrate(&pr);
    g_assert_true(g_queue_is_empty(&pr.held[0]));
    g_assert_true(g_queue_is_empty(&pr.held[1]));
    sge = peer_sge(b, 0x5000, 3000);
    eng_post_recv(b->d, &q[1], 0xb1, &sge, 1);
    pair_wait_frames(&pr, 0, 5);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_SEND_FIRST, OP_SEND_MIDDLE,
                    OP_SEND_LAST, OP_WRITE_ONLY);
    g_assert_cmphex(pr.syn[0][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[0][1], ==, psn);
    pair_wait_frames(&pr, 1, 1);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[1][0], ==, psn);

    pair_release(&pr, 0);
    pair_release(&pr, 1);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 3000);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x5000, a, 0x100, 3000);
    img_move(b, 0x3000, a, 0x2000, 500);
    pair_mig_done(&pr, q);
}

/*
 * A retransmission timer running: both packets of a WRITE were lost
 * before the switch and no virtual time passed, so A's local ACK timer
 * (4.3 s) and its tail loss probe (20 ms) are pending.  Their deadlines
 * are runtime state and start anew on the destination: A's resume
 * rewind sends the WRITE again at once; the switch loses that too, and
 * the tail loss probe 20 ms later; the retransmission on the local ACK
 * timeout, 4.3 s after the probe, gets through.
 */
static void test_engine_pair_migrate_retry_timer(void *obj, void *data,
                                                 QGuestAllocator *alloc)
{
    const uint32_t psn = pair_psn[0];
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_log_reset(&pr);
    pr.drop[0] = 3;
    sge = peer_sge(a, 0x100, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    pair_wait_frames(&pr, 0, 2);
    g_usleep(20 * 1000);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST);
    PAIR_EXPECT_NONE(&pr, 1);

    pair_migrate(&pr);
    pair_wait_frames(&pr, 0, 3);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_WRITE_FIRST, OP_WRITE_LAST);
    g_assert_cmphex(pr.psn[0][1], ==, psn);
    pair_wait_frames(&pr, 1, 1);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[1][0], ==, psn);
    pair_forget(&pr, 0);
    pair_forget(&pr, 1);

    /* The tail loss probe, lost. */
    pair_log_reset(&pr);
    pr.drop[0] = 3;
    qtest_clock_step(qrs_qts(a->d), 30 * 1000 * 1000);
    pair_wait_frames(&pr, 0, 2);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST);
    g_assert_cmphex(pr.psn[0][0], ==, psn);
    qtest_clock_step(qrs_qts(a->d), 4000 * 1000 * 1000ll);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST);

    /* The local ACK timeout. */
    qtest_clock_step(qrs_qts(a->d), 500 * 1000 * 1000);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_FIRST,
                    OP_WRITE_LAST);
    /* After a timeout the window is 2: one ACK, or one per packet. */
    pair_wait_sent(&pr, 1, OP_ACK, psn + 1);
    img_move(b, 0x1000, a, 0x100, 2000);
    pair_mig_done(&pr, q);
}

/*
 * A QP in SQD and one in ERR.  q: A's WRITE was sent and its ACK waits at
 * the switch when A's QP goes to SQD with notification; a second WRITE is
 * posted in SQD.  x: B's QP went to ERR with two receive WQEs, whose
 * flush completions were written before the switch.  On the destination
 * both keep their state; the held ACK completes the WRITE and raises SQ
 * Drained there, the second WRITE waits until SQD->RTS and then goes;
 * the ERR QP's old completions are polled and what is posted to it now
 * is flushed as before.
 */
static void test_engine_pair_migrate_sqd_err(void *obj, void *data,
                                             QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2], x[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_rc(&pr, x, 0, STD_ACCESS);
    pair_log_reset(&pr);
    pr.hold[1] = true;
    sge = peer_sge(a, 0x100, 1000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    pair_wait_sent(&pr, 1, OP_ACK, pair_psn[0]);
    modify_state(a->d, &q[0], RS_QPS_RTS, RS_QPS_SQD,
                 RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, true);
    sge = peer_sge(a, 0x2000, 1500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    sge = peer_sge(b, 0x5000, 100);
    eng_post_recv(b->d, &x[1], 0xc1, &sge, 1);
    eng_post_recv(b->d, &x[1], 0xc2, &sge, 1);
    modify_state(b->d, &x[1], RS_QPS_RTS, RS_QPS_ERR, 0, false);
    pair_cq_wait(&pr, 1, 2);
    expect_no_event(a->d);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_ONLY);

    pair_migrate(&pr);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_SQD);
    g_assert_cmpuint(qp_state(b->d, x[1].h), ==, RS_QPS_ERR);
    pair_expect_cqe(&pr, 1, 0xc1, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, x[1].qpn,
                    0);
    pair_expect_cqe(&pr, 1, 0xc2, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, x[1].qpn,
                    0);
    eng_post_recv(b->d, &x[1], 0xc3, &sge, 1);
    pair_expect_cqe(&pr, 1, 0xc3, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, x[1].qpn,
                    0);
    pair_post(&pr, 1, &x[1], RS_WR_SEND, 0xc4, &sge, 1, 0, 0, 0);
    pair_expect_cqe(&pr, 1, 0xc4, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, x[1].qpn,
                    0);

    pair_release(&pr, 1);
    pair_release(&pr, 0);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    expect_event(a->d, RS_EV_QP_SQ_DRAINED, q[0].h);
    img_move(b, 0x1000, a, 0x100, 1000);
    peer_check(b);
    pair_log_reset(&pr);
    pair_cq_empty(&pr, 0);
    PAIR_EXPECT_NONE(&pr, 0);
    modify_state(a->d, &q[0], RS_QPS_SQD, RS_QPS_RTS, 0, false);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST);
    img_move(b, 0x3000, a, 0x2000, 1500);
    expect_no_event(a->d);
    expect_no_event(b->d);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, x[1].h), ==, RS_QPS_ERR);
    pair_mig_done(&pr, q);
}

/*
 * Unpolled completions and an armed CQ: both sides' CQEs of two SENDs are
 * written before the switch and polled after it, in order.  B's CQ was
 * armed (next completion) with MSI-X vector 1 pointed at guest memory:
 * the arm migrates and does not fire by itself; the next CQE on the
 * destination interrupts, once.
 */
static void test_engine_pair_migrate_cq(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    const uint32_t msi_data = 0xc0ffee01;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];
    uint64_t msi;
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    msi = qrs_alloc_zeroed(b->d, 64);
    qrs_msix_set_vector(b->d, RS_MSIX_COMP_VECTOR0 + 0, msi, msi_data, false);
    for (i = 0; i < 4; i++) {
        sge = peer_sge(b, 0x1000 * (i + 1), 1000);
        eng_post_recv(b->d, &q[1], 0xb0 + i, &sge, 1);
    }
    for (i = 0; i < 2; i++) {
        sge = peer_sge(a, 0x100 * i, 1000 - i);
        pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0 + i, &sge, 1, 0, 0, 0);
        img_move(b, 0x1000 * (i + 1), a, 0x100 * i, 1000 - i);
    }
    pair_cq_wait(&pr, 1, 2);
    pair_cq_wait(&pr, 0, 2);
    qrs_db_writel(b->d, 0, RS_DB_CQ_ARM, HINDEX(b->cq.h) | RS_DB_CQ_ARM_NEXT);

    pair_migrate(&pr);
    pair_release(&pr, 0);
    pair_release(&pr, 1);
    for (i = 0; i < 2; i++) {
        pair_expect_cqe(&pr, 1, 0xb0 + i, RS_WC_SUCCESS, RS_WR_RECV,
                        q[1].qpn, 1000 - i);
    }
    for (i = 0; i < 2; i++) {
        pair_expect_cqe(&pr, 0, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND,
                        q[0].qpn, 0);
    }
    g_assert_cmphex(qtest_readl(pr.to, msi), ==, 0);

    for (i = 2; i < 4; i++) {
        sge = peer_sge(a, 0x100 * i, 1000 - i);
        pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0 + i, &sge, 1, 0, 0, 0);
        pair_expect_cqe(&pr, 1, 0xb0 + i, RS_WC_SUCCESS, RS_WR_RECV,
                        q[1].qpn, 1000 - i);
        pair_expect_cqe(&pr, 0, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND,
                        q[0].qpn, 0);
        g_assert_cmphex(qtest_readl(pr.to, msi), ==, i == 2 ? msi_data : 0);
        qtest_writel(pr.to, msi, 0);
        img_move(b, 0x1000 * (i + 1), a, 0x100 * i, 1000 - i);
    }
    pair_mig_done(&pr, q);
}

/*
 * An ATOMIC WRITE that B executed, its empty READ response lost with the
 * source's wire: on the destination the request comes again and B
 * answers it from the READ resource that migrated, without writing
 * again (the 8 bytes were changed meanwhile); A completes it once.
 */
static void test_engine_pair_migrate_atomic_write(void *obj, void *data,
                                                  QGuestAllocator *alloc)
{
    Pair pr;
    Peer *b = &pr.p[1];
    struct rs_send_wqe_ctrl w = {
        .wr_id = 0xa7,
        .opcode = RS_WR_ATOMIC_WRITE,
        .flags = RS_WQE_F_SIGNALED,
        .compare_add = 0x1020304050607080ull,
    };
    uint32_t key, psn;
    GByteArray *req, *r;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    key = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF, STD_ACCESS);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pr.hold[0] = pr.hold[1] = true;
    w.remote_addr = b->buf + 0x400;
    w.rkey = key;
    eng_post_send(pr.p[0].d, &q[0], &w, NULL, 0);
    req = pair_take(&pr, 0);
    g_assert_cmphex(req->data[ROCE_BTH], ==, 0x1d);
    psn = ldl_be_p(req->data + ROCE_BTH + 8) & 0xffffff;
    pair_inject(&pr, 1, req->data, req->len);
    r = pair_take(&pr, 1);
    g_assert_cmphex(r->data[ROCE_BTH], ==, OP_READ_RESP_ONLY);
    g_byte_array_unref(r);
    g_assert_cmphex(qtest_readq(qrs_qts(b->d), b->buf + 0x400), ==,
                    0x1020304050607080ull);

    pair_migrate(&pr);
    pair_lose_held(&pr, 0);
    pair_lose_held(&pr, 1);
    qtest_writeq(pr.to, b->buf + 0x400, 0x99);
    stq_le_p(b->img + 0x400, 0x99);
    pair_inject(&pr, 1, req->data, req->len);
    g_byte_array_unref(req);
    r = pair_take(&pr, 1);
    while (r->data[ROCE_BTH] != OP_READ_RESP_ONLY) {
        /* The destination's RNR prompt at the PSN B expects. */
        g_assert_cmphex(r->data[ROCE_BTH], ==, OP_ACK);
        g_byte_array_unref(r);
        r = pair_take(&pr, 1);
    }
    g_assert_cmphex(ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff, ==, psn);
    g_assert_cmphex(qtest_readq(pr.to, b->buf + 0x400), ==, 0x99);
    pair_lose_held(&pr, 0);
    pr.hold[0] = pr.hold[1] = false;
    pair_inject(&pr, 0, r->data, r->len);
    g_byte_array_unref(r);
    pair_expect_cqe(&pr, 0, 0xa7, RS_WC_SUCCESS, RS_WR_ATOMIC_WRITE,
                    q[0].qpn, 0);
    pair_mig_done(&pr, q);
}

static void register_migrate_pair_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions pair_small_sndbuf = {
        .before = pair_small_sndbuf_before,
    };

    rs_add_standalone_test("migrate/pair-unacked",
                           test_engine_pair_migrate_unacked, &pair);
    rs_add_standalone_test("migrate/pair-half-message",
                           test_engine_pair_migrate_half_message, &pair);
    rs_add_standalone_test("migrate/pair-gap-at-resume",
                           test_engine_pair_migrate_gap_at_resume, &pair);
    rs_add_standalone_test("migrate/pair-read-owed",
                           test_engine_pair_migrate_read_owed,
                           &pair_small_sndbuf);
    rs_add_standalone_test("migrate/pair-rnr",
                           test_engine_pair_migrate_rnr, &pair);
    rs_add_standalone_test("migrate/pair-retry-timer",
                           test_engine_pair_migrate_retry_timer, &pair);
    rs_add_standalone_test("migrate/pair-sqd-err",
                           test_engine_pair_migrate_sqd_err, &pair);
    rs_add_standalone_test("migrate/pair-cq",
                           test_engine_pair_migrate_cq, &pair);
    rs_add_standalone_test("migrate/pair-atomic-write",
                           test_engine_pair_migrate_atomic_write, &pair);
}

libqos_init(register_migrate_pair_tests);
