/*
 * rdma-session qtests: multipath session groups (ABI 1.6, RS_CAP_MULTIPATH):
 * per-QP flowlet spreading, responses on the request's source port,
 * failover before the retry budget ends and the path's return,
 * active-backup, UD over a group, QUERY_SESSION and the path state
 * across a live migration
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-peer.h"

#define PATH_PORT0      50001   /* A's session of slot i: PATH_PORT0 + i */
#define PATH_B_PORT     60001   /* B's one session */
#define PATH_MS         1000000LL
#define PATH_MSG        2048    /* bytes of the spreading tests' WRITEs */
#define PATH_NMSG       12

typedef struct PathEnv {
    Pair pr;
    LoopQp q[2];
    uint32_t sess[RS_MAX_GROUP_SESSIONS];   /* A's, in group order */
    unsigned n;
    uint32_t group, b_sess, b_group;
} PathEnv;

static uint32_t path_session(QRdmaSession *d, uint16_t sport,
                             uint8_t peer_host, const uint8_t *dmac)
{
    struct rs_cmd_create_session c;
    uint32_t h = 0;

    session_template(&c, 0, sport);
    gid_v4(c.dst_ip, 10, 0, 0, peer_host);
    memcpy(c.dmac, dmac, 6);
    RS_ASSERT_OK(qrs_create_session(d, &c, &h));
    return h;
}

static uint32_t path_group(QRdmaSession *d, uint8_t policy,
                           const uint32_t *s, unsigned n)
{
    struct rs_cmd_create_session_group c = { 0 };
    uint32_t h = 0;

    memcpy(c.session, s, n * sizeof(*s));
    c.nsessions = n;
    c.policy = policy;
    RS_ASSERT_OK(qrs_create_session_group(d, &c, &h));
    return h;
}

/*
 * A's RC QP on a group of @n sessions with @policy (source ports
 * PATH_PORT0...), B's on a group of its one session, local ACK timeout
 * @timeout and retry_cnt @retry.
 */
static void path_setup(PathEnv *e, void *obj, void *data,
                       QGuestAllocator *alloc, uint8_t policy, unsigned n,
                       uint8_t timeout, uint8_t retry)
{
    Pair *pr = &e->pr;
    struct rs_qp_attr a;
    unsigned i;

    pair_setup(pr, obj, data, alloc);
    e->n = n;
    for (i = 0; i < n; i++) {
        e->sess[i] = path_session(pr->p[0].d, PATH_PORT0 + i, 2,
                                  pair_mac[1]);
    }
    e->group = path_group(pr->p[0].d, policy, e->sess, n);
    e->b_sess = path_session(pr->p[1].d, PATH_B_PORT, 1, pair_mac[0]);
    e->b_group = path_group(pr->p[1].d, RS_GROUP_ROUND_ROBIN, &e->b_sess, 1);
    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &e->q[i], RS_QPT_RC, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        pair_attr(e->q, i, 0, &a);
        a.access_flags = STD_ACCESS;
        a.path_mtu = RS_MTU_1024;
        a.timeout = timeout;
        a.retry_cnt = retry;
        a.session_group = i ? e->b_group : e->group;
        eng_connect(pr->p[i].d, &e->q[i], RS_QPT_RC, &a,
                    RS_QP_ATTR_SESSION_GROUP);
    }
}

/*
 * The next completion of adapter @i, moving frames and stepping the
 * virtual clock 1 ms at a time (the probe and retry timers run); the
 * virtual ms it took go to *@ms.  False if none came within @max_ms.
 */
static bool path_poll(Pair *pr, int i, struct rs_cqe *cqe, int64_t max_ms,
                      int64_t *ms)
{
    QRdmaSession *d = pr->p[i].d;
    EngCq *cq = &pr->p[i].cq;
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    int64_t waited = 0;

    for (pair_pump(pr); !eng_cq_peek(d, cq, cqe); pair_pump(pr)) {
        if (waited >= max_ms) {
            return false;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(qrs_qts(d), PATH_MS);
        waited++;
    }
    cq->ci++;
    qrs_db_writel(d, 0, RS_DB_CQ_CI, HINDEX(cq->h) | (cq->ci & 0xffff) << 16);
    if (ms) {
        *ms = waited;
    }
    return true;
}

static void path_expect_write(Pair *pr, uint64_t wr_id, uint32_t qpn,
                              int64_t max_ms, int64_t *ms)
{
    struct rs_cqe cqe;

    g_assert_true(path_poll(pr, 0, &cqe, max_ms, ms));
    assert_cqe(&cqe, wr_id, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, qpn);
}

/* WRITE @len bytes from A's buffer at @off to B's at @off. */
static void path_write(PathEnv *e, uint64_t wr_id, uint32_t off,
                       uint32_t len)
{
    Pair *pr = &e->pr;
    struct rs_sge sge = peer_sge(&pr->p[0], off, len);

    pair_post(pr, 0, &e->q[0], RS_WR_RDMA_WRITE, wr_id, &sge, 1,
              pr->p[1].buf + off, pr->p[1].key[0], 0);
    img_move(&pr->p[1], off, &pr->p[0], off, len);
}

static void path_query(QRdmaSession *d, uint32_t sess,
                       struct rs_session_attr *a)
{
    uint64_t addr = qrs_alloc_zeroed(d, sizeof(*a));

    RS_ASSERT_OK(query_at(d, RS_CMD_QUERY_SESSION, sess, addr, sizeof(*a)));
    qtest_memread(qrs_qts(d), addr, a, sizeof(*a));
    a->src_port = le16_to_cpu(a->src_port);
    a->gid_index = le32_to_cpu(a->gid_index);
    a->groups = le32_to_cpu(a->groups);
    a->tx_packets = le64_to_cpu(a->tx_packets);
    a->failovers = le64_to_cpu(a->failovers);
    a->recoveries = le64_to_cpu(a->recoveries);
    a->migrated = le64_to_cpu(a->migrated);
    a->ack_age_us = le64_to_cpu(a->ack_age_us);
    a->down_age_us = le64_to_cpu(a->down_age_us);
}

static bool path_is_first(uint8_t op)
{
    return op == OP_WRITE_FIRST || op == OP_WRITE_ONLY ||
           op == OP_SEND_FIRST || op == OP_SEND_ONLY ||
           op == OP_READ_REQ;
}

/*
 * What the wire showed since the log reset: A's request frames per
 * source port into @per_port; where A's QP changed sessions the new one
 * starts a message and everything before it was acknowledged first (B's
 * ACK of the PSN before it went on the wire earlier); every ACK of B
 * leaves from the source port of the request it acknowledges.  Returns
 * the number of session changes.
 */
static unsigned path_check_wire(PathEnv *e, unsigned *per_port)
{
    Pair *pr = &e->pr;
    unsigned i, j, switches = 0;
    uint16_t cur = 0;

    pair_pump(pr);
    memset(per_port, 0, sizeof(*per_port) * e->n);
    for (i = 0; i < pr->nops[0]; i++) {
        uint16_t port = pr->sport[0][i];
        uint32_t before = (pr->psn[0][i] - 1) & 0xffffff;
        bool acked = false;

        g_assert_cmpuint(port, >=, PATH_PORT0);
        g_assert_cmpuint(port, <, PATH_PORT0 + e->n);
        per_port[port - PATH_PORT0]++;
        if (cur && port != cur) {
            switches++;
            g_assert_true(path_is_first(pr->op[0][i]));
            for (j = 0; j < pr->nops[1]; j++) {
                if (pr->seq[1][j] < pr->seq[0][i] &&
                    pr->op[1][j] == OP_ACK &&
                    pr->syn[1][j] == AETH_ACK && pr->psn[1][j] == before) {
                    acked = true;
                }
            }
            g_assert_true(acked);
        }
        cur = port;
    }
    for (j = 0; j < pr->nops[1]; j++) {
        int req = -1;

        g_assert_cmphex(pr->op[1][j], ==, OP_ACK);
        for (i = 0; i < pr->nops[0]; i++) {
            if (pr->seq[0][i] < pr->seq[1][j] &&
                pr->psn[0][i] == pr->psn[1][j]) {
                req = i;
            }
        }
        g_assert_cmpint(req, >=, 0);
        g_assert_cmpuint(pr->sport[1][j], ==, pr->sport[0][req]);
    }
    return switches;
}

static void *path_flowlet_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line, " -global rdma-session.path-flowlet=%u ",
                           GPOINTER_TO_UINT(arg));
    return pair_before(cmd_line, NULL);
}

/*
 * path-flowlet=0: A's QP moves to the next session at every message
 * boundary, and only with nothing outstanding: all four source ports
 * carry requests, each change waits for the ACK of what went before, and
 * B answers every request on its source port.
 */
static void test_path_spread(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_session_attr sa;
    unsigned per_port[4], i, switches;
    uint64_t tx = 0;
    PathEnv e;

    path_setup(&e, obj, data, alloc, RS_GROUP_ROUND_ROBIN, 4, PAIR_TIMEOUT,
               7);
    pair_log_reset(&e.pr);
    for (i = 0; i < PATH_NMSG; i++) {
        path_write(&e, 0x100 + i, i * PATH_MSG, PATH_MSG);
    }
    for (i = 0; i < PATH_NMSG; i++) {
        path_expect_write(&e.pr, 0x100 + i, e.q[0].qpn, 1000, NULL);
    }
    peer_check(&e.pr.p[1]);
    switches = path_check_wire(&e, per_port);
    g_assert_cmpuint(switches, ==, PATH_NMSG - 1);
    for (i = 0; i < 4; i++) {
        /* 2 packets per message, 3 messages per session */
        g_assert_cmpuint(per_port[i], ==, 2 * PATH_NMSG / 4);
        path_query(e.pr.p[0].d, e.sess[i], &sa);
        g_assert_cmpuint(sa.src_port, ==, PATH_PORT0 + i);
        g_assert_cmpuint(sa.state, ==, RS_SESSION_UP);
        g_assert_cmpuint(sa.groups, ==, 1);
        g_assert_cmpuint(sa.failovers, ==, 0);
        g_assert_cmpuint(sa.ack_age_us, <, 60 * G_USEC_PER_SEC);
        tx += sa.tx_packets;
    }
    g_assert_cmpuint(tx, ==, 2 * PATH_NMSG);
    expect_no_event(e.pr.p[0].d);
    pair_teardown(&e.pr);
}

/*
 * READs spread too (path-flowlet=0): every READ response packet leaves
 * B with the UDP source port of the READ request it answers, and the
 * data lands in A.
 */
static void test_path_read(void *obj, void *data, QGuestAllocator *alloc)
{
    PathEnv e;
    Pair *pr = &e.pr;
    Peer *a, *b;
    unsigned i, j, ports = 0;
    struct rs_cqe cqe;

    path_setup(&e, obj, data, alloc, RS_GROUP_ROUND_ROBIN, 4, PAIR_TIMEOUT,
               7);
    a = &pr->p[0];
    b = &pr->p[1];
    pair_log_reset(pr);
    for (i = 0; i < 8; i++) {
        struct rs_sge sge = peer_sge(a, i * PATH_MSG, PATH_MSG);

        pair_post(pr, 0, &e.q[0], RS_WR_RDMA_READ, 0x900 + i, &sge, 1,
                  b->buf + 0x4000 + i * PATH_MSG, b->key[0], 0);
        img_move(a, i * PATH_MSG, b, 0x4000 + i * PATH_MSG, PATH_MSG);
    }
    for (i = 0; i < 8; i++) {
        g_assert_true(path_poll(pr, 0, &cqe, 1000, NULL));
        assert_cqe(&cqe, 0x900 + i, RS_WC_SUCCESS, RS_WR_RDMA_READ,
                   e.q[0].qpn);
        g_assert_cmpuint(cqe.byte_len, ==, PATH_MSG);
    }
    peer_check(a);
    pair_pump(pr);
    g_assert_cmpuint(pr->nops[0], ==, 8);
    g_assert_cmpuint(pr->nops[1], ==, 16);
    for (i = 0; i < 8; i++) {
        g_assert_cmphex(pr->op[0][i], ==, OP_READ_REQ);
        ports |= 1u << (pr->sport[0][i] - PATH_PORT0);
    }
    g_assert_cmphex(ports, ==, 0xf);
    for (j = 0; j < pr->nops[1]; j++) {
        int req = -1;

        for (i = 0; i < pr->nops[0]; i++) {
            if (pr->seq[0][i] < pr->seq[1][j] &&
                ((pr->psn[1][j] - pr->psn[0][i]) & 0xffffff) < 2) {
                req = i;
            }
        }
        g_assert_cmpint(req, >=, 0);
        g_assert_cmpuint(pr->sport[1][j], ==, pr->sport[0][req]);
    }
    pair_teardown(pr);
}

/*
 * The default path-flowlet (256 KiB): a stream of small messages stays
 * on one session, with no waits.
 */
static void test_path_flowlet(void *obj, void *data, QGuestAllocator *alloc)
{
    unsigned per_port[4], i;
    PathEnv e;

    path_setup(&e, obj, data, alloc, RS_GROUP_ROUND_ROBIN, 4, PAIR_TIMEOUT,
               7);
    pair_log_reset(&e.pr);
    for (i = 0; i < PATH_NMSG; i++) {
        path_write(&e, 0x200 + i, i * PATH_MSG, PATH_MSG);
    }
    for (i = 0; i < PATH_NMSG; i++) {
        path_expect_write(&e.pr, 0x200 + i, e.q[0].qpn, 1000, NULL);
    }
    peer_check(&e.pr.p[1]);
    g_assert_cmpuint(path_check_wire(&e, per_port), ==, 0);
    g_assert_cmpuint(per_port[0], ==, 2 * PATH_NMSG);
    pair_teardown(&e.pr);
}

static void path_expect_migrated(QRdmaSession *d, uint32_t qp, uint32_t to,
                                 uint32_t from)
{
    struct rs_event ev;

    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_PATH_MIGRATED);
    g_assert_cmphex(ev.handle, ==, qp);
    g_assert_cmphex(ev.data, ==, to | (uint64_t)from << 32);
}

/* A's frames since the log reset from @port: from index @from on. */
static unsigned path_frames_from(Pair *pr, uint16_t port, unsigned from)
{
    unsigned i, n = 0;

    pair_pump(pr);
    for (i = from; i < pr->nops[0]; i++) {
        n += pr->sport[0][i] == port;
    }
    return n;
}

/*
 * What query-rdma-session says of A's sessions after the first failover
 * of path/failover: the first down with one failover, the second up with
 * the QP moved onto it, 8 packets on each; and the device's counter.
 */
static void path_qmp_check(QRdmaSession *a, const uint32_t *sess,
                           unsigned n)
{
    QDict *resp = qtest_qmp(qrs_qts(a), "{ 'execute': 'query-rdma-session' }");
    QDict *dev = NULL, *s;
    QListEntry *le;
    unsigned seen = 0;

    /* A: the adapter with n sessions (B has one) */
    QLIST_FOREACH_ENTRY(qdict_get_qlist(resp, "return"), le) {
        QDict *d = qobject_to(QDict, qlist_entry_obj(le));

        if (qlist_size(qdict_get_qlist(d, "sessions")) == n) {
            dev = d;
        }
    }
    g_assert_nonnull(dev);
    QLIST_FOREACH_ENTRY(qdict_get_qlist(dev, "sessions"), le) {
        uint32_t h;
        unsigned i;

        s = qobject_to(QDict, qlist_entry_obj(le));
        h = qdict_get_int(s, "handle");
        for (i = 0; i < n; i++) {
            if (sess[i] == h) {
                break;
            }
        }
        g_assert_cmpuint(i, <, n);
        g_assert_cmpuint(qdict_get_int(s, "src-port"), ==, PATH_PORT0 + i);
        g_assert_cmpint(qdict_get_bool(s, "path-up"), ==, i != 0);
        g_assert_cmpuint(qdict_get_int(s, "failovers"), ==, i == 0);
        g_assert_cmpuint(qdict_get_int(s, "migrated"), ==, i == 1);
        g_assert_cmpuint(qdict_get_int(s, "tx-packets"), ==, i < 2 ? 8 : 0);
        seen++;
    }
    g_assert_cmpuint(seen, ==, n);
    g_assert_cmpuint(qdict_get_int(qdict_get_qdict(dev, "counters"),
                                   "path-failovers"), ==, 1);
    qobject_unref(resp);
}

/*
 * The network loses everything on the session A's QP uses (path-flowlet
 * 4096): the tail loss probe finds it silent, marks it down and sends the
 * message again on the next session, long before the local ACK timeout
 * (4.3 s) would have; the WRITE completes, the driver hears
 * RS_EV_PATH_MIGRATED, QUERY_SESSION counts it.  When the path carries
 * frames again, after path-holddown the QP's rotation takes it again and
 * its ACKs make it up.
 */
static void test_path_failover(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_session_attr sa;
    unsigned i, mark;
    int64_t ms;
    PathEnv e;
    Pair *pr = &e.pr;
    QRdmaSession *a;

    path_setup(&e, obj, data, alloc, RS_GROUP_ROUND_ROBIN, 4, PAIR_TIMEOUT,
               7);
    a = pr->p[0].d;
    pair_log_reset(pr);
    pr->blackhole[0][0] = PATH_PORT0;
    path_write(&e, 0x300, 0, 8192);
    path_expect_write(pr, 0x300, e.q[0].qpn, 1000, &ms);
    g_test_message("failover stall: %" PRId64 " ms (virtual)", ms);
    g_assert_cmpint(ms, <, 100);
    peer_check(&pr->p[1]);
    /* 8 packets lost on the first session, all 8 again on the second. */
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0, 0), ==, 8);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + 1, 0), ==, 8);
    g_assert_cmphex(pr->psn[0][8], ==, pr->psn[0][0]);
    path_expect_migrated(a, e.q[0].h, e.sess[1], e.sess[0]);
    expect_no_event(a);
    path_query(a, e.sess[0], &sa);
    g_assert_cmpuint(sa.state, ==, RS_SESSION_DOWN);
    g_assert_cmpuint(sa.failovers, ==, 1);
    g_assert_cmpuint(sa.tx_packets, ==, 8);
    g_assert_cmpuint(sa.ack_age_us, ==, UINT64_MAX);
    path_query(a, e.sess[1], &sa);
    g_assert_cmpuint(sa.state, ==, RS_SESSION_UP);
    g_assert_cmpuint(sa.migrated, ==, 1);
    g_assert_cmpuint(sa.tx_packets, ==, 8);
    g_assert_cmpuint(qp_state(a, e.q[0].h), ==, RS_QPS_RTS);
    path_qmp_check(a, e.sess, 4);

    /* Within the holddown the rotation leaves the failed session out. */
    mark = pr->nops[0];
    for (i = 0; i < 3; i++) {
        path_write(&e, 0x310 + i, 0x2000 + i * 4096, 4096);
        path_expect_write(pr, 0x310 + i, e.q[0].qpn, 1000, NULL);
    }
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0, mark), ==, 0);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + 2, mark), ==, 4);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + 3, mark), ==, 4);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + 1, mark), ==, 4);

    /* The path is back; after path-holddown it carries traffic again. */
    pr->blackhole[0][0] = 0;
    qtest_clock_step(qrs_qts(a), 600 * PATH_MS);
    mark = pr->nops[0];
    for (i = 0; i < 4; i++) {
        path_write(&e, 0x320 + i, 0x4000 + i * 4096, 4096);
        path_expect_write(pr, 0x320 + i, e.q[0].qpn, 1000, NULL);
    }
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0, mark), ==, 4);
    peer_check(&pr->p[1]);
    path_query(a, e.sess[0], &sa);
    g_assert_cmpuint(sa.state, ==, RS_SESSION_UP);
    g_assert_cmpuint(sa.recoveries, ==, 1);
    g_assert_cmpuint(sa.failovers, ==, 1);
    g_assert_cmpuint(sa.ack_age_us, <, 60 * G_USEC_PER_SEC);
    expect_no_event(a);
    pair_teardown(pr);
}

/*
 * Active-backup: everything on the first session while it answers; on
 * its failure the second one takes over (and keeps the traffic during
 * the holddown); the first one takes it back once it answers again.
 */
static void test_path_active_backup(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    struct rs_session_attr sa;
    unsigned per_port[3], i, mark;
    PathEnv e;
    Pair *pr = &e.pr;
    QRdmaSession *a;

    path_setup(&e, obj, data, alloc, RS_GROUP_ACTIVE_BACKUP, 3, PAIR_TIMEOUT,
               7);
    a = pr->p[0].d;
    pair_log_reset(pr);
    for (i = 0; i < 4; i++) {
        path_write(&e, 0x400 + i, i * PATH_MSG, PATH_MSG);
    }
    for (i = 0; i < 4; i++) {
        path_expect_write(pr, 0x400 + i, e.q[0].qpn, 1000, NULL);
    }
    g_assert_cmpuint(path_check_wire(&e, per_port), ==, 0);
    g_assert_cmpuint(per_port[0], ==, 8);

    pr->blackhole[0][0] = PATH_PORT0;
    mark = pr->nops[0];
    for (i = 4; i < 8; i++) {
        path_write(&e, 0x400 + i, i * PATH_MSG, PATH_MSG);
    }
    for (i = 4; i < 8; i++) {
        path_expect_write(pr, 0x400 + i, e.q[0].qpn, 1000, NULL);
    }
    path_expect_migrated(a, e.q[0].h, e.sess[1], e.sess[0]);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + 2, mark), ==, 0);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + 1, mark), >=, 8);
    path_query(a, e.sess[0], &sa);
    g_assert_cmpuint(sa.state, ==, RS_SESSION_DOWN);

    pr->blackhole[0][0] = 0;
    qtest_clock_step(qrs_qts(a), 600 * PATH_MS);
    mark = pr->nops[0];
    for (i = 8; i < 12; i++) {
        path_write(&e, 0x400 + i, i * PATH_MSG, PATH_MSG);
        path_expect_write(pr, 0x400 + i, e.q[0].qpn, 1000, NULL);
    }
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0, mark), ==, 8);
    peer_check(&pr->p[1]);
    path_query(a, e.sess[0], &sa);
    g_assert_cmpuint(sa.state, ==, RS_SESSION_UP);
    g_assert_cmpuint(sa.recoveries, ==, 1);
    expect_no_event(a);
    pair_teardown(pr);
}

/*
 * Repeated path failures (active-backup over four sessions): the session
 * in use fails, then the one that took over, then the next; each time the
 * QP fails over at the tail loss probe, within 40 ms of virtual time, with
 * one RS_EV_PATH_MIGRATED, and its WRITE completes.  When the paths come
 * back, after path-holddown the first session carries the traffic again.
 */
static void test_path_failover_repeat(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    struct rs_session_attr sa;
    PathEnv e;
    Pair *pr = &e.pr;
    QRdmaSession *a;
    int64_t ms, worst = 0;
    unsigned r, mark;

    path_setup(&e, obj, data, alloc, RS_GROUP_ACTIVE_BACKUP, 4, PAIR_TIMEOUT,
               7);
    a = pr->p[0].d;
    pair_log_reset(pr);
    for (r = 0; r < 3; r++) {
        pr->blackhole[0][r] = PATH_PORT0 + r;
        mark = pr->nops[0];
        path_write(&e, 0xb00 + r, r * 0x2000, 0x2000);
        path_expect_write(pr, 0xb00 + r, e.q[0].qpn, 1000, &ms);
        g_test_message("failure %u: stall %" PRId64 " ms (virtual)", r + 1,
                       ms);
        g_assert_cmpint(ms, <, 40);
        worst = MAX(worst, ms);
        path_expect_migrated(a, e.q[0].h, e.sess[r + 1], e.sess[r]);
        g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + r, mark), ==, 8);
        g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + r + 1, mark), ==,
                         8);
        pair_log_reset(pr);
    }
    g_test_message("worst stall of 3 failures: %" PRId64 " ms", worst);
    expect_no_event(a);
    peer_check(&pr->p[1]);
    memset(pr->blackhole, 0, sizeof(pr->blackhole));
    qtest_clock_step(qrs_qts(a), 600 * PATH_MS);
    path_write(&e, 0xb10, 0x6000, 0x2000);
    path_expect_write(pr, 0xb10, e.q[0].qpn, 1000, NULL);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0, 0), ==, 8);
    for (r = 0; r < 3; r++) {
        path_query(a, e.sess[r], &sa);
        g_assert_cmpuint(sa.failovers, ==, 1);
        g_assert_cmpuint(sa.state, ==, r ? RS_SESSION_DOWN : RS_SESSION_UP);
    }
    peer_check(&pr->p[1]);
    pair_teardown(pr);
}

/* The test peer delivers what it holds from both sides; it holds on. */
static void path_deliver(Pair *pr)
{
    GByteArray *f;
    int i;

    for (i = 0; i < 2; i++) {
        while ((f = g_queue_pop_head(&pr->held[i]))) {
            lan_sock_send(pr->fd[!i], f->data, f->len);
            g_byte_array_unref(f);
        }
    }
}

#define COST_MSGS   16
#define COST_LEN    0x4000      /* 16 packets at MTU 1024 */

/*
 * Virtual ms until QP @q's COST_MSGS WRITEs, posted at once, complete
 * on a network whose every frame takes one 1 ms step each way (the test
 * peer holds a frame until the next step): a round trip is 2 ms.
 */
static int64_t path_timed_writes(Pair *pr, LoopQp *q, uint64_t wr_id)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    struct rs_cqe cqe;
    unsigned i, done = 0;
    int64_t ms = 0;

    pair_pump(pr);
    pr->hold[0] = pr->hold[1] = true;
    for (i = 0; i < COST_MSGS; i++) {
        struct rs_sge sge = peer_sge(&pr->p[0], (i & 1) * COST_LEN, COST_LEN);

        pair_post(pr, 0, q, RS_WR_RDMA_WRITE, wr_id + i, &sge, 1,
                  pr->p[1].buf + (i & 1) * COST_LEN, pr->p[1].key[0], 0);
    }
    while (done < COST_MSGS) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        path_deliver(pr);
        qtest_clock_step(qrs_qts(pr->p[0].d), PATH_MS);
        ms++;
        pair_pump(pr);
        if (pr->nops[0] > PAIR_OPS / 2 || pr->nops[1] > PAIR_OPS / 2) {
            pair_log_reset(pr);     /* 256 packets: more than the log */
        }
        while (eng_cq_peek(pr->p[0].d, &pr->p[0].cq, &cqe)) {
            assert_cqe(&cqe, wr_id + done, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                       q->qpn);
            pr->p[0].cq.ci++;
            qrs_db_writel(pr->p[0].d, 0, RS_DB_CQ_CI, HINDEX(pr->p[0].cq.h) |
                          (pr->p[0].cq.ci & 0xffff) << 16);
            done++;
        }
    }
    pr->hold[0] = pr->hold[1] = false;
    path_deliver(pr);
    return ms;
}

/*
 * What a move between sessions costs (path-flowlet=0: one at every
 * message boundary): the QP waits for the ACKs of what it sent, a round
 * trip per move.  16 WRITEs of 16 KiB on a network with a 2 ms round
 * trip: a QP of a one-session group never moves and keeps its window
 * full; one of a four-session group moves 15 times and needs at least a
 * round trip per message.
 */
static void test_path_switch_cost(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    PathEnv e;
    Pair *pr = &e.pr;
    LoopQp q1[2];
    struct rs_qp_attr a;
    uint32_t g1, b1;
    int64_t t1, t4;
    int i;

    path_setup(&e, obj, data, alloc, RS_GROUP_ROUND_ROBIN, 4, PAIR_TIMEOUT,
               7);
    g1 = path_group(pr->p[0].d, RS_GROUP_ROUND_ROBIN, e.sess, 1);
    b1 = path_group(pr->p[1].d, RS_GROUP_ROUND_ROBIN, &e.b_sess, 1);
    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q1[i], RS_QPT_RC, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        pair_attr(q1, i, 0, &a);
        a.access_flags = STD_ACCESS;
        a.path_mtu = RS_MTU_1024;
        a.session_group = i ? b1 : g1;
        eng_connect(pr->p[i].d, &q1[i], RS_QPT_RC, &a,
                    RS_QP_ATTR_SESSION_GROUP);
    }
    t1 = path_timed_writes(pr, &q1[0], 0xc00);
    t4 = path_timed_writes(pr, &e.q[0], 0xc40);
    g_test_message("16 x 16 KiB, 2 ms round trip: one session %" PRId64
                   " ms, four sessions (15 moves) %" PRId64 " ms: %.1f ms "
                   "per move", t1, t4, (double)(t4 - t1) / (COST_MSGS - 1));
    g_assert_cmpint(t4, >=, 2 * COST_MSGS);
    g_assert_cmpint(t1, <, t4);
    pair_teardown(pr);
}

/*
 * Every session of the group fails: the QP moves on to the next one, and
 * once all are down its retry budget applies as without a group
 * (timeout 14, retry_cnt 1: RS_WC_RETRY_EXC_ERR).
 */
static void test_path_all_down(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_session_attr sa;
    struct rs_cqe cqe;
    PathEnv e;
    Pair *pr = &e.pr;
    unsigned i;

    path_setup(&e, obj, data, alloc, RS_GROUP_ROUND_ROBIN, 2, 14, 1);
    pair_log_reset(pr);
    pr->drop[0] = ~0ull;
    path_write(&e, 0x500, 0, 4096);
    g_assert_true(path_poll(pr, 0, &cqe, 5000, NULL));
    assert_cqe(&cqe, 0x500, RS_WC_RETRY_EXC_ERR, RS_WR_RDMA_WRITE,
               e.q[0].qpn);
    path_expect_migrated(pr->p[0].d, e.q[0].h, e.sess[1], e.sess[0]);
    for (i = 0; i < 2; i++) {
        path_query(pr->p[0].d, e.sess[i], &sa);
        g_assert_cmpuint(sa.state, ==, RS_SESSION_DOWN);
        g_assert_cmpuint(sa.failovers, >=, 1);
    }
    g_assert_cmpuint(qp_state(pr->p[0].d, e.q[0].h), ==, RS_QPS_ERR);
    pair_forget(pr, 0);
    pair_teardown(pr);
}

/*
 * A go-back-N rewind into the middle of a message (its third packet
 * lost, path-flowlet=0): the resent packets leave on the session the
 * message went on, not on the one a later message would take; the next
 * message moves only after the first one's ACK.  (The round-robin cursor
 * this replaced resent them on the later message's session.)
 */
static void test_path_rewind(void *obj, void *data, QGuestAllocator *alloc)
{
    PathEnv e;
    Pair *pr = &e.pr;
    unsigned i, per_port[2];
    uint16_t port_a = 0, port_b = 0;
    uint32_t psn0;

    path_setup(&e, obj, data, alloc, RS_GROUP_ROUND_ROBIN, 2, PAIR_TIMEOUT,
               7);
    pair_log_reset(pr);
    pr->drop[0] = 1 << 2;
    path_write(&e, 0x800, 0, 4096);
    path_write(&e, 0x801, 0x1000, 4096);
    path_expect_write(pr, 0x800, e.q[0].qpn, 1000, NULL);
    path_expect_write(pr, 0x801, e.q[0].qpn, 1000, NULL);
    peer_check(&pr->p[1]);
    pair_pump(pr);
    psn0 = pr->psn[0][0];
    for (i = 0; i < pr->nops[0]; i++) {
        uint32_t d = (pr->psn[0][i] - psn0) & 0xffffff;

        if (d < 4) {
            port_a = port_a ? port_a : pr->sport[0][i];
            g_assert_cmpuint(pr->sport[0][i], ==, port_a);
        } else {
            port_b = port_b ? port_b : pr->sport[0][i];
            g_assert_cmpuint(pr->sport[0][i], ==, port_b);
        }
    }
    /* the lost packet was sent again, and the second WRITE moved on */
    g_assert_cmpuint(pr->nops[0], >, 8);
    g_assert_cmpuint(port_a, !=, port_b);
    path_check_wire(&e, per_port);
    pair_teardown(pr);
}

/* UD with a group: the datagrams take the group's source ports in turn. */
static void test_path_ud(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    LoopQp q[2];
    uint32_t sess[2], group, ah = 0;
    struct rs_cmd_create_ah c;
    struct rs_send_wqe_ctrl w;
    struct rs_qp_attr a;
    struct rs_sge sge;
    unsigned i;

    pair_setup(&pr, obj, data, alloc);
    for (i = 0; i < 2; i++) {
        sess[i] = path_session(pr.p[0].d, PATH_PORT0 + i, 2, pair_mac[1]);
    }
    group = path_group(pr.p[0].d, RS_GROUP_ROUND_ROBIN, sess, 2);
    for (i = 0; i < 2; i++) {
        pair_qp(&pr, i, &q[i], RS_QPT_UD, pr.p[i].pd);
        std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
        a.session_group = group;
        eng_connect(pr.p[i].d, &q[i], RS_QPT_UD, &a,
                    i ? 0 : RS_QP_ATTR_SESSION_GROUP);
    }
    ah_template(&c, pr.p[0].pd, 0);
    gid_v4(c.dgid, 10, 0, 0, 2);
    memcpy(c.dmac, pair_mac[1], 6);
    RS_ASSERT_OK(qrs_create_ah(pr.p[0].d, &c, &ah));
    pair_log_reset(&pr);
    for (i = 0; i < 4; i++) {
        sge = peer_sge(&pr.p[1], 0x1000 * i, 0x1000);
        eng_post_recv(pr.p[1].d, &q[1], 0x610 + i, &sge, 1);
    }
    for (i = 0; i < 4; i++) {
        memset(&w, 0, sizeof(w));
        w.wr_id = 0x600 + i;
        w.opcode = RS_WR_SEND;
        w.flags = RS_WQE_F_SIGNALED;
        w.num_sge = 1;
        w.ah = ah;
        w.remote_qpn = q[1].qpn;
        w.remote_qkey = STD_QKEY;
        sge = peer_sge(&pr.p[0], 0x100 * i, 100);
        eng_post_send(pr.p[0].d, &q[0], &w, &sge, 1);
        pair_expect_cqe(&pr, 0, 0x600 + i, RS_WC_SUCCESS, RS_WR_SEND,
                        q[0].qpn, 0);
        pair_expect_cqe(&pr, 1, 0x610 + i, RS_WC_SUCCESS, RS_WR_RECV,
                        q[1].qpn, 100 + 40);
    }
    pair_pump(&pr);
    g_assert_cmpuint(pr.nops[0], ==, 4);
    for (i = 0; i < 4; i++) {
        g_assert_cmphex(pr.op[0][i], ==, OP_UD_SEND_ONLY);
        g_assert_cmpuint(pr.sport[0][i], ==, PATH_PORT0 + i % 2);
    }
    pair_teardown(&pr);
}

/*
 * QUERY_SESSION refuses a free or stale session, a short or misaligned
 * response buffer; the device goes on.
 */
static void test_path_query_bad(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    uint64_t buf = qrs_alloc_zeroed(d, 2 * sizeof(struct rs_session_attr));
    uint32_t s;

    add_gid_v4(d, 0, 1);
    s = new_session(d, 0, 50001);
    RS_ASSERT_OK(query_at(d, RS_CMD_QUERY_SESSION, s, buf,
                          sizeof(struct rs_session_attr)));
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_SESSION, s, buf,
                              sizeof(struct rs_session_attr) - 8),
                     RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_SESSION, s, buf + 4,
                              sizeof(struct rs_session_attr)),
                     RS_STATUS_BAD_ALIGN);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_SESSION, HINDEX(s) + 1, buf,
                              sizeof(struct rs_session_attr)),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s));
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_SESSION, s, buf,
                              sizeof(struct rs_session_attr)),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_SESSION, 0, buf,
                              sizeof(struct rs_session_attr)),
                     RS_STATUS_BAD_HANDLE);
    g_assert_cmphex(qrs_readl(d, A_RS_CAPS) & RS_CAP_MULTIPATH, ==,
                    RS_CAP_MULTIPATH);
    assert_alive(d);
}

/*
 * A failover's state moves with the VM: the failed session is still down
 * and counted on the destination, the QP keeps to its live session.
 */
static void test_path_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_session_attr sa;
    PathEnv e;
    Pair *pr = &e.pr;
    unsigned mark;

    path_setup(&e, obj, data, alloc, RS_GROUP_ROUND_ROBIN, 2, PAIR_TIMEOUT,
               7);
    pair_log_reset(pr);
    pr->blackhole[0][0] = PATH_PORT0;
    path_write(&e, 0x700, 0, 4096);
    path_expect_write(pr, 0x700, e.q[0].qpn, 1000, NULL);
    path_expect_migrated(pr->p[0].d, e.q[0].h, e.sess[1], e.sess[0]);
    pr->blackhole[0][0] = 0;

    pair_migrate(pr);
    pair_release(pr, 0);
    pair_release(pr, 1);
    path_query(pr->p[0].d, e.sess[0], &sa);
    g_assert_cmpuint(sa.state, ==, RS_SESSION_DOWN);
    g_assert_cmpuint(sa.failovers, ==, 1);
    g_assert_cmpuint(sa.tx_packets, ==, 4);
    path_query(pr->p[0].d, e.sess[1], &sa);
    g_assert_cmpuint(sa.state, ==, RS_SESSION_UP);
    g_assert_cmpuint(sa.migrated, ==, 1);
    g_assert_cmpuint(sa.tx_packets, ==, 4);

    /* Still within the holddown: the next WRITE stays on session 1. */
    pair_log_reset(pr);
    mark = 0;
    path_write(&e, 0x701, 0x1000, 4096);
    path_expect_write(pr, 0x701, e.q[0].qpn, 100, NULL);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0 + 1, mark), ==, 4);
    g_assert_cmpuint(path_frames_from(pr, PATH_PORT0, mark), ==, 0);
    peer_check(&pr->p[1]);
    pair_teardown(pr);
}

/*
 * The destination refuses a QP whose current session is outside its
 * group: a loopback RC QP on a group of two sessions moved to the second
 * one (path-flowlet=0), the stream's req_slot set to 2; the stream as
 * saved loads.
 */
#define PATH_PSN_A  0x3c5a10
#define PATH_PSN_B  0x2b2b2b

/* Loopback QP @q to @peer in l->group, sending from @sq, expecting @rq. */
static void path_loop_connect(Loop *l, LoopQp *q, uint32_t peer,
                              uint32_t sq, uint32_t rq)
{
    static const uint8_t walk[] = {
        RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS,
    };
    struct rs_qp_attr a;
    int i;

    for (i = 1; i < ARRAY_SIZE(walk); i++) {
        uint32_t mask = std_mask(RS_QPT_RC, walk[i - 1], walk[i]);

        std_attr(&a, walk[i - 1], walk[i]);
        gid_v4(a.ah.dgid, 10, 0, 0, 1);
        a.dest_qp_num = peer;
        a.sq_psn = sq;
        a.rq_psn = rq;
        if (walk[i] == RS_QPS_RTR) {
            a.session_group = l->group;
            mask |= RS_QP_ATTR_SESSION_GROUP;
        }
        RS_ASSERT_OK(qrs_modify_qp(l->d, q->h, &a, mask));
    }
}

static void test_path_migrate_corrupt(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *bad = g_strdup_printf("%s/bad", tmpdir);
    g_autofree uint8_t *stream = NULL, *copy = NULL;
    struct rs_send_wqe_ctrl w = { .wr_id = 0xa00, .opcode = RS_WR_RDMA_WRITE,
                                  .flags = RS_WQE_F_SIGNALED, .num_sge = 1 };
    uint32_t s[2];
    /* req_pkt 0, req_slot 1, una_psn: one packet after LOOP_PSN */
    uint8_t needle[9] = { 0, 0, 0, 0, 1 };
    char *err = NULL;
    gsize len;
    size_t off;
    Loop l;
    int i;

    loop_init(&l, admin_setup(obj), RS_QPT_RC, 0);
    for (i = 0; i < 2; i++) {
        struct rs_cmd_create_session sc;

        session_template(&sc, 0, 49160 + i);
        gid_v4(sc.dst_ip, 10, 0, 0, 1);
        RS_ASSERT_OK(qrs_create_session(l.d, &sc, &s[i]));
    }
    l.group = path_group(l.d, RS_GROUP_ROUND_ROBIN, s, 2);
    path_loop_connect(&l, &l.a, l.b.qpn, PATH_PSN_A, PATH_PSN_B);
    path_loop_connect(&l, &l.b, l.a.qpn, PATH_PSN_B, PATH_PSN_A);
    w.remote_addr = l.dst;
    w.rkey = l.dst_key;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0xa00, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, l.a.qpn);

    mig_save(qrs_qts(l.d), path);
    g_assert_true(g_file_get_contents(path, (gchar **)&stream, &len, NULL));
    stl_be_p(needle + 5, PATH_PSN_A + 1);
    off = mig_find(stream, len, needle, sizeof(needle)) + 4;
    copy = g_memdup2(stream, len);
    copy[off] = 2;
    g_assert_true(g_file_set_contents(bad, (gchar *)copy, len, NULL));
    g_assert_false(mig_load(bad, &err));
    g_test_message("destination: %s", err);
    g_free(err);
    g_assert_true(mig_load(path, &err));
    g_free(err);
    unlink(bad);
    unlink(path);
    rmdir(tmpdir);
    qos_invalidate_command_line();
}

static void *path_flowlet0_single(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rdma-session.path-flowlet=0 ");
    return arg;
}

static void register_path_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions flowlet0 = { .before = path_flowlet_before,
                                     .arg = GUINT_TO_POINTER(0) };
    QOSGraphTestOptions flowlet4k = { .before = path_flowlet_before,
                                      .arg = GUINT_TO_POINTER(4096) };
    QOSGraphTestOptions single0 = { .before = path_flowlet0_single };

    rs_add_standalone_test("path/spread", test_path_spread, &flowlet0);
    rs_add_standalone_test("path/flowlet", test_path_flowlet, &pair);
    rs_add_standalone_test("path/read", test_path_read, &flowlet0);
    rs_add_standalone_test("path/failover", test_path_failover, &flowlet4k);
    rs_add_standalone_test("path/active-backup",
                           test_path_active_backup, &flowlet0);
    rs_add_standalone_test("path/failover-repeat",
                           test_path_failover_repeat, &flowlet4k);
    rs_add_standalone_test("path/all-down", test_path_all_down, &flowlet4k);
    rs_add_standalone_test("path/rewind", test_path_rewind, &flowlet0);
    rs_add_standalone_test("path/switch-cost",
                           test_path_switch_cost, &flowlet0);
    rs_add_standalone_test("path/ud", test_path_ud, &pair);
    qos_add_test("path/query-bad", "rdma-session", test_path_query_bad,
                 NULL);
    rs_add_standalone_test("path/migrate", test_path_migrate, &flowlet4k);
    rs_add_standalone_test("path/migrate-corrupt",
                           test_path_migrate_corrupt, &single0);
}

libqos_init(register_path_tests);
