/*
 * rdma-session qtests: the local fabric (local-fabric=DIR): two adapters
 * whose RoCE traffic goes over the fabric's channel with payloads by
 * reference instead of the netdev (WRITE, SEND and READ data, an rkey
 * violation NAKed as on the wire), an adapter without the property that
 * exposes nothing, a test-side member that sends a descriptor outside
 * its RAM and then garbage, and one that sends batches whose lengths do
 * not tile the message.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include "qemu/memfd.h"
#include "qemu/bswap.h"
#include "rs-test.h"
#include "rs-peer.h"

/* The VM's RAM (-M pc's 128 MiB) in a shareable memfd backend. */
#define FAB_RAM " -object memory-backend-memfd,id=rsfabm,size=128M,share=on" \
                " -machine memory-backend=rsfabm"

#define FAB_MAGIC       0x42465352u
#define FAB_HDR         12

static char *fab_dir;
static char *fab_pcap;          /* B's fabric-pcap, beside fab_dir */

static void *fab_before_props(GString *cmd_line, bool a, bool b)
{
    g_autofree char *ap = NULL, *bp = NULL;

    g_free(fab_dir);
    fab_dir = g_dir_make_tmp("rs-fabric-XXXXXX", NULL);
    g_assert_nonnull(fab_dir);
    /*
     * The RAM options go behind A's properties, the end of its -device:
     * a migration's destination (pair_migrate) gets them too.
     */
    ap = g_strdup_printf(",id=rsa%s%s" FAB_RAM, a ? ",local-fabric=" : "",
                         a ? fab_dir : "");
    g_free(fab_pcap);
    fab_pcap = g_strdup_printf("%s.pcap", fab_dir);
    bp = g_strdup_printf(",id=rsb%s%s%s%s", b ? ",local-fabric=" : "",
                         b ? fab_dir : "", b ? ",fabric-pcap=" : "",
                         b ? fab_pcap : "");
    return pair_before_props(cmd_line, ap, bp);
}

/* Both adapters on the fabric. */
static void *fab_before(GString *cmd_line, void *arg)
{
    return fab_before_props(cmd_line, true, true);
}

/* Only A on it: B exposes nothing, the test is A's other member. */
static void *fab_a_before(GString *cmd_line, void *arg)
{
    return fab_before_props(cmd_line, true, false);
}

static void fab_cleanup(void)
{
    g_autoptr(GDir) d = g_dir_open(fab_dir, 0, NULL);
    const char *n;

    while (d && (n = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(fab_dir, n, NULL);

        unlink(p);
    }
    rmdir(fab_dir);
    unlink(fab_pcap);
}

/*
 * B's fabric-pcap: a pcap file of Ethernet frames, each a RoCEv2 frame
 * (UDP port 4791); returns how many.
 */
/*
 * The records of B's fabric-pcap; *ref, *ref_bytes: how many are
 * truncated (the frames by reference: their headers as on the wire,
 * orig_len the whole frame's length, the IP length's) and their
 * payload bytes (orig_len less the headers, the BTH's pad and the ICRC).
 */
static unsigned fab_pcap_frames(unsigned *ref, uint64_t *ref_bytes)
{
    g_autofree char *buf = NULL;
    size_t len, off;
    unsigned n = 0;

    *ref = 0;
    *ref_bytes = 0;
    g_assert_true(g_file_get_contents(fab_pcap, &buf, &len, NULL));
    g_assert_cmpuint(len, >=, 24);
    g_assert_cmphex((uint32_t)ldl_le_p(buf), ==, 0xa1b2c3d4);
    g_assert_cmpuint(ldl_le_p(buf + 20), ==, 1);            /* Ethernet */
    for (off = 24; off < len; n++) {
        uint32_t incl, orig;
        const uint8_t *f = (const uint8_t *)buf + off + 16;

        g_assert_cmpuint(len - off, >=, 16);
        incl = ldl_le_p(buf + off + 8);
        orig = ldl_le_p(buf + off + 12);
        g_assert_cmpuint(len - off - 16, >=, incl);
        g_assert_cmpuint(incl, >=, 14 + 20 + 8 + 12);
        g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
        g_assert_cmpuint(lduw_be_p(f + 36), ==, 4791);
        /* the IP and UDP lengths: the whole frame's */
        g_assert_cmpuint(14 + lduw_be_p(f + 16), ==, orig);
        g_assert_cmpuint(14 + 20 + lduw_be_p(f + 38), ==, orig);
        g_assert_cmpuint(incl, <=, orig);
        if (incl < orig) {
            unsigned pad = (f[14 + 20 + 8 + 1] >> 4) & 3;

            /* headers only: a payload of 512 bytes or more went inline */
            g_assert_cmpuint(orig - incl, >=, 512 + 4);
            (*ref)++;
            *ref_bytes += orig - incl - pad - 4;
        }
        off += 16 + incl;
    }
    return n;
}

/* QOM counter x-fabric-@name of adapter @i. */
static uint64_t fab_counter(Pair *pr, int i, const char *name)
{
    g_autofree char *prop = g_strdup_printf("x-fabric-%s", name);
    QDict *rsp = qtest_qmp(qrs_qts(pr->p[0].d),
                           "{ 'execute': 'qom-get', 'arguments':"
                           " { 'path': %s, 'property': %s } }",
                           i ? "/machine/peripheral/rsb" :
                           "/machine/peripheral/rsa", prop);
    uint64_t n;

    g_assert_true(qdict_haskey(rsp, "return"));
    n = qnum_get_uint(qobject_to(QNum, qdict_get(rsp, "return")));
    qobject_unref(rsp);
    return n;
}

/* Until adapter @i's counter x-fabric-@name is at least @n. */
static void fab_wait(Pair *pr, int i, const char *name, uint64_t n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    while (fab_counter(pr, i, name) < n) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        pair_pump(pr);
        g_usleep(1000);
    }
}

static bool fab_has_counter(Pair *pr, int i)
{
    QDict *rsp = qtest_qmp(qrs_qts(pr->p[0].d),
                           "{ 'execute': 'qom-get', 'arguments':"
                           " { 'path': %s, 'property': 'x-fabric-joined' } }",
                           i ? "/machine/peripheral/rsb" :
                           "/machine/peripheral/rsa");
    bool has = qdict_haskey(rsp, "return");

    qobject_unref(rsp);
    return has;
}

static unsigned fab_sockets(void)
{
    g_autoptr(GDir) d = g_dir_open(fab_dir, 0, NULL);
    unsigned n = 0;

    while (d && g_dir_read_name(d)) {
        n++;
    }
    return n;
}

/* Adapter @i's QP @qpn's send window (query-rdma-session's cwnd). */
static uint32_t fab_cwnd(Pair *pr, int i, uint32_t qpn)
{
    QDict *rsp = qtest_qmp(qrs_qts(pr->p[0].d),
                           "{ 'execute': 'query-rdma-session', 'arguments':"
                           " { 'device': %s } }", i ? "rsb" : "rsa");
    QList *l = qdict_get_qlist(rsp, "return");
    QListEntry *e;
    int64_t cwnd = -1;

    g_assert_nonnull(l);
    QLIST_FOREACH_ENTRY(qdict_get_qlist(qobject_to(QDict, qlist_peek(l)),
                                        "qps"), e) {
        QDict *x = qobject_to(QDict, qlist_entry_obj(e));

        if (qdict_get_int(x, "qpn") == qpn) {
            cwnd = qdict_get_int(x, "cwnd");
        }
    }
    qobject_unref(rsp);
    g_assert_cmpint(cwnd, >=, 0);
    return cwnd;
}

/*
 * WRITE, SEND and READ between A and B: the data lands, the payloads
 * went by reference, and nothing RoCE crossed either netdev.
 */
static void test_fabric_data(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];
    uint64_t tx, msgs, ref_bytes;
    unsigned ref;

    pair_setup(&pr, obj, data, alloc);
    g_assert_cmpuint(fab_sockets(), ==, 2);
    fab_wait(&pr, 0, "joined", 1);
    fab_wait(&pr, 1, "joined", 1);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_log_reset(&pr);

    /* WRITE of 3 pages and a bit. */
    peer_fill(a, 0x100, 3 * 4096 + 300, 0x21);
    sge = peer_sge(a, 0x100, 3 * 4096 + 300);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x200, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0x200, a, 0x100, 3 * 4096 + 300);
    peer_check(b);
    /*
     * Its 13 packets (MTU 1024) went in batches: several frames per
     * channel message, and all of them arrived.
     */
    tx = fab_counter(&pr, 0, "tx-ref") + fab_counter(&pr, 0, "tx-inline");
    msgs = fab_counter(&pr, 0, "tx-msgs");
    g_test_message("WRITE: %" PRIu64 " frames in %" PRIu64
                   " channel messages", tx, msgs);
    g_assert_cmpuint(tx, >=, 13);
    g_assert_cmpuint(msgs, >, 0);
    g_assert_cmpuint(tx, >, msgs);
    g_assert_cmpuint(fab_counter(&pr, 1, "rx-msgs"), ==, msgs);
    g_assert_cmpuint(fab_counter(&pr, 1, "rx-ref") +
                     fab_counter(&pr, 1, "rx-inline"), ==, tx);
    g_assert_cmpuint(fab_counter(&pr, 0, "tx-lost"), ==, 0);
    /* Its window there: x-fabric-window's 512 packets, not x-window's. */
    g_assert_cmpuint(fab_cwnd(&pr, 0, q[0].qpn), ==, 512);

    /* SEND of 5000 bytes in two SGEs. */
    sge = peer_sge(b, 0x4000, 6000);
    eng_post_recv(b->d, &q[1], 0xb1, &sge, 1);
    peer_fill(a, 0x5000, 5000, 0x33);
    sge = peer_sge(a, 0x5000, 5000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa2, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    img_move(b, 0x4000, a, 0x5000, 5000);
    peer_check(b);

    /* READ of 9000 bytes from B back into A. */
    peer_fill(b, 0x1000, 9000, 0x45);
    sge = peer_sge(a, 0x5800, 9000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa3, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn);
    img_move(a, 0x5800, b, 0x1000, 9000);
    peer_check(a);
    peer_check(b);

    /* Nothing on either wire; payloads by reference, ACKs inline. */
    PAIR_EXPECT_NONE(&pr, 0);
    PAIR_EXPECT_NONE(&pr, 1);
    /* (a packet's payload below 512 bytes goes inline) */
    g_assert_cmpuint(fab_counter(&pr, 0, "tx-ref-bytes"), >=, 3 * 4096);
    g_assert_cmpuint(fab_counter(&pr, 0, "tx-ref-bytes"), ==,
                     fab_counter(&pr, 1, "rx-ref-bytes"));
    g_assert_cmpuint(fab_counter(&pr, 1, "tx-ref-bytes"), >=, 8192);
    g_assert_cmpuint(fab_counter(&pr, 1, "tx-ref-bytes"), ==,
                     fab_counter(&pr, 0, "rx-ref-bytes"));
    g_assert_cmpuint(fab_counter(&pr, 1, "tx-inline"), >, 0);
    g_assert_cmpuint(fab_counter(&pr, 0, "rx-dropped"), ==, 0);
    g_assert_cmpuint(fab_counter(&pr, 1, "rx-dropped"), ==, 0);
    /*
     * B's capture holds every frame it sent and received over it, those
     * by reference as truncated records of their whole length.
     */
    g_assert_cmpuint(fab_pcap_frames(&ref, &ref_bytes), ==,
                     fab_counter(&pr, 1, "tx-ref") +
                     fab_counter(&pr, 1, "tx-inline") +
                     fab_counter(&pr, 1, "rx-ref") +
                     fab_counter(&pr, 1, "rx-inline"));
    g_assert_cmpuint(ref, ==, fab_counter(&pr, 1, "tx-ref") +
                     fab_counter(&pr, 1, "rx-ref"));
    g_assert_cmpuint(ref_bytes, ==, fab_counter(&pr, 1, "tx-ref-bytes") +
                     fab_counter(&pr, 1, "rx-ref-bytes"));

    /* A WRITE through a key B does not have: NAKed as on the wire. */
    sge = peer_sge(a, 0x2000, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa4, &sge, 1,
              b->buf, b->key[0] ^ 0x100, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa4, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE,
               q[0].qpn);
    peer_check(b);
    PAIR_EXPECT_NONE(&pr, 0);
    PAIR_EXPECT_NONE(&pr, 1);
    pair_teardown(&pr);
    fab_cleanup();
}

/* The same transfer without the fabric on B: it goes on the wire. */
static void test_fabric_off(void *obj, void *data, QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    /* B has no socket in the directory and no fabric counters. */
    g_assert_cmpuint(fab_sockets(), ==, 1);
    g_assert_false(fab_has_counter(&pr, 1));
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_log_reset(&pr);
    peer_fill(a, 0x100, 3 * 4096 + 300, 0x21);
    sge = peer_sge(a, 0x100, 3 * 4096 + 300);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x200, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0x200, a, 0x100, 3 * 4096 + 300);
    peer_check(b);
    pair_pump(&pr);
    g_assert_cmpuint(pr.nops[0], >=, 4);
    g_assert_cmpuint(fab_counter(&pr, 0, "joined"), ==, 0);
    g_assert_cmpuint(fab_counter(&pr, 0, "tx-ref"), ==, 0);
    g_assert_cmpuint(fab_counter(&pr, 0, "tx-inline"), ==, 0);
    g_assert_cmpuint(fab_cwnd(&pr, 0, q[0].qpn), ==, 64);
    pair_teardown(&pr);
    fab_cleanup();
}

/* 64 KiB of sealed memfd: a test-side member's RAM. */
static int fab_memfd(void)
{
    int mfd = memfd_create("rs-fab-test", MFD_ALLOW_SEALING);

    g_assert_cmpint(mfd, >=, 0);
    g_assert_cmpint(ftruncate(mfd, 65536), ==, 0);
    g_assert_cmpint(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW),
                    ==, 0);
    return mfd;
}

static void fab_hdr(uint8_t *b, uint16_t type, uint32_t len)
{
    stl_le_p(b, FAB_MAGIC);
    stw_le_p(b + 4, type);
    stw_le_p(b + 6, 0);
    stl_le_p(b + 8, len);
}

static void fab_send(int fd, const uint8_t *b, size_t len, int pass_fd)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    struct iovec iov = { .iov_base = (void *)b, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

    if (pass_fd >= 0) {
        struct cmsghdr *cm;

        memset(&u, 0, sizeof(u));
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof(u.buf);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
    }
    g_assert_cmpint(sendmsg(fd, &msg, 0), ==, len);
}

/*
 * The test joins A's fabric as a member with 64 KiB of RAM: a frame
 * whose descriptor names memory outside it is dropped (counted), then a
 * message with a bad magic gets it disconnected.
 */
static void test_fabric_hostile(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    uint8_t b[256], rx[4096];
    g_autoptr(GDir) d = NULL;
    const char *n;
    Pair pr;
    int fd, mfd;
    ssize_t r;

    pair_setup(&pr, obj, data, alloc);
    d = g_dir_open(fab_dir, 0, NULL);
    n = g_dir_read_name(d);
    g_assert_nonnull(n);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", fab_dir, n);
    fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    mfd = fab_memfd();

    /* HELLO: version 1, one region at 0x100000, id 0x1234. */
    memset(b, 0, sizeof(b));
    fab_hdr(b, 1, FAB_HDR + 16 + 24);
    stl_le_p(b + 12, 1);
    stl_le_p(b + 16, 1);
    stq_le_p(b + 20, 0x1234);
    stq_le_p(b + 28, 0x100000);
    stq_le_p(b + 36, 65536);
    stq_le_p(b + 44, 0);
    fab_send(fd, b, FAB_HDR + 16 + 24, mfd);
    fab_wait(&pr, 0, "joined", 1);
    /* A's own HELLO back (its fds closed with the socket). */
    r = recv(fd, rx, sizeof(rx), 0);
    g_assert_cmpint(r, >=, FAB_HDR + 16);
    g_assert_cmphex(ldl_le_p(rx), ==, FAB_MAGIC);
    g_assert_cmpuint(lduw_le_p(rx + 4), ==, 1);
    /* Version 1 to a member that said version 1: no flags. */
    g_assert_cmpuint(ldl_le_p(rx + 12), ==, 1);
    g_assert_cmpint(r, ==, FAB_HDR + 16 + ldl_le_p(rx + 16) * 24);

    /* ADDRS: 10.0.0.9. */
    fab_hdr(b, 2, FAB_HDR + 8);
    stl_le_p(b + 12, 1);
    stl_le_p(b + 16, 0x0a000009);
    fab_send(fd, b, FAB_HDR + 8, -1);

    /* FRAME_REF: 64 bytes of headers, one piece outside the region. */
    memset(b, 0, sizeof(b));
    fab_hdr(b, 4, FAB_HDR + 8 + 64 + 16);
    stw_le_p(b + 12, 64);
    stw_le_p(b + 14, 1);
    stq_le_p(b + 20 + 64, 0x100000 + 65536 - 100);
    stl_le_p(b + 20 + 64 + 8, 4096);
    fab_send(fd, b, FAB_HDR + 8 + 64 + 16, -1);
    fab_wait(&pr, 0, "rx-bad-ref", 1);
    g_assert_cmpuint(fab_counter(&pr, 0, "rx-dropped"), ==, 1);

    /* Inside it, but the headers are no RoCE frame: dropped too. */
    stq_le_p(b + 20 + 64, 0x100000);
    fab_send(fd, b, FAB_HDR + 8 + 64 + 16, -1);
    fab_wait(&pr, 0, "rx-dropped", 2);
    g_assert_cmpuint(fab_counter(&pr, 0, "rx-bad-ref"), ==, 1);
    g_assert_cmpuint(fab_counter(&pr, 0, "garbage"), ==, 0);

    /* A bad magic: disconnected. */
    stl_le_p(b, 0xdeadbeef);
    fab_send(fd, b, FAB_HDR + 8 + 64 + 16, -1);
    fab_wait(&pr, 0, "garbage", 1);
    do {
        r = recv(fd, rx, sizeof(rx), 0);
    } while (r > 0);
    g_assert_cmpint(r, ==, 0);
    close(fd);
    close(mfd);
    pair_teardown(&pr);
    fab_cleanup();
}

/*
 * The test joins A's fabric as member 0x1234 with the 64 KiB of memfd
 * @mfd at 0x100000, HELLO version @ver (2: announcing batches), and its
 * address 10.0.0.9; A's own HELLO back must be of the same version.
 * Returns the socket; A's id in *@a_id if not NULL.
 */
static int fab_join(Pair *pr, int mfd, uint32_t ver, uint64_t *a_id)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    uint32_t ext = ver == 2 ? 8 : 0;
    uint64_t joined = fab_counter(pr, 0, "joined");
    g_autoptr(GDir) d = g_dir_open(fab_dir, 0, NULL);
    uint8_t b[256], rx[4096];
    const char *n;
    ssize_t r;
    int fd;

    n = g_dir_read_name(d);
    g_assert_nonnull(n);
    /* The name tells a connecting member that A takes version 2. */
    g_assert_true(g_str_has_suffix(n, ".v2.sock"));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", fab_dir, n);
    fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    memset(b, 0, sizeof(b));
    fab_hdr(b, 1, FAB_HDR + 16 + 24 + ext);
    stl_le_p(b + 12, ver);
    stl_le_p(b + 16, 1);
    stq_le_p(b + 20, 0x1234);
    stq_le_p(b + 28, 0x100000);
    stq_le_p(b + 36, 65536);
    stq_le_p(b + 44, 0);
    stl_le_p(b + 52, ext ? 1 : 0);      /* version 2: batches */
    fab_send(fd, b, FAB_HDR + 16 + 24 + ext, mfd);
    fab_wait(pr, 0, "joined", joined + 1);
    r = recv(fd, rx, sizeof(rx), 0);
    g_assert_cmpint(r, >=, FAB_HDR + 16);
    g_assert_cmpuint(lduw_le_p(rx + 4), ==, 1);
    g_assert_cmpuint(ldl_le_p(rx + 12), ==, ver);
    g_assert_cmpint(r, ==, FAB_HDR + 16 + ldl_le_p(rx + 16) * 24 + ext);
    if (ext) {
        g_assert_cmphex(ldl_le_p(rx + r - 8) & 1, ==, 1);
    }
    if (a_id) {
        *a_id = ldq_le_p(rx + 20);
    }
    fab_hdr(b, 2, FAB_HDR + 8);
    stl_le_p(b + 12, 1);
    stl_le_p(b + 16, 0x0a000009);
    fab_send(fd, b, FAB_HDR + 8, -1);
    return fd;
}

/* Until A has disconnected the member on @fd for garbage number @n. */
static void fab_wait_garbage(Pair *pr, int fd, uint64_t n)
{
    uint8_t rx[4096];
    ssize_t r;

    fab_wait(pr, 0, "garbage", n);
    do {
        r = recv(fd, rx, sizeof(rx), 0);
    } while (r > 0);
    g_assert_cmpint(r, ==, 0);
    close(fd);
}

/*
 * A FRAME_REF at @b whose 64 bytes of headers are no RoCE frame (A drops
 * it) and whose one piece is inside the member's RAM; its length.
 */
static size_t fab_bad_ref(uint8_t *b)
{
    memset(b, 0, FAB_HDR + 8 + 64 + 16);
    fab_hdr(b, 4, FAB_HDR + 8 + 64 + 16);
    stw_le_p(b + 12, 64);
    stw_le_p(b + 14, 1);
    stq_le_p(b + 20 + 64, 0x100000);
    stl_le_p(b + 20 + 64 + 8, 4096);
    return FAB_HDR + 8 + 64 + 16;
}

/*
 * Batches from a member: a good one of two messages is taken message by
 * message; batches whose lengths overrun, underrun or are zero, a batch
 * with an ADDRS in it and a batch from a member that did not announce
 * batches are garbage: the member is disconnected, nothing taken.
 */
static void test_fabric_batch_hostile(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    uint8_t b[1024];
    size_t l;
    Pair pr;
    int fd, mfd;

    pair_setup(&pr, obj, data, alloc);
    mfd = fab_memfd();

    /* Two messages in one: both taken (and dropped as no RoCE). */
    fd = fab_join(&pr, mfd, 2, NULL);
    l = fab_bad_ref(b);
    fab_bad_ref(b + l);
    fab_send(fd, b, 2 * l, -1);
    fab_wait(&pr, 0, "rx-dropped", 2);
    g_assert_cmpuint(fab_counter(&pr, 0, "rx-msgs"), ==, 1);
    g_assert_cmpuint(fab_counter(&pr, 0, "garbage"), ==, 0);

    /* The second's length runs past the end. */
    stl_le_p(b + l + 8, l + 50);
    fab_send(fd, b, 2 * l, -1);
    fab_wait_garbage(&pr, fd, 1);

    /* 8 bytes left over after the second. */
    fd = fab_join(&pr, mfd, 2, NULL);
    fab_bad_ref(b + l);
    memset(b + 2 * l, 0, 8);
    fab_send(fd, b, 2 * l + 8, -1);
    fab_wait_garbage(&pr, fd, 2);

    /* The first's length short of its end: the next header is junk. */
    fd = fab_join(&pr, mfd, 2, NULL);
    stl_le_p(b + 8, l - 16);
    fab_send(fd, b, 2 * l, -1);
    fab_wait_garbage(&pr, fd, 3);

    /* A length 0. */
    fd = fab_join(&pr, mfd, 2, NULL);
    fab_bad_ref(b);
    stl_le_p(b + l + 8, 0);
    fab_send(fd, b, 2 * l, -1);
    fab_wait_garbage(&pr, fd, 4);

    /* An ADDRS among the frames. */
    fd = fab_join(&pr, mfd, 2, NULL);
    fab_hdr(b + l, 2, FAB_HDR + 8);
    stl_le_p(b + l + 12, 1);
    stl_le_p(b + l + 16, 0x0a000009);
    fab_send(fd, b, l + FAB_HDR + 8, -1);
    fab_wait_garbage(&pr, fd, 5);

    /* A good batch from a member that said version 1. */
    fd = fab_join(&pr, mfd, 1, NULL);
    fab_bad_ref(b + l);
    fab_send(fd, b, 2 * l, -1);
    fab_wait_garbage(&pr, fd, 6);

    /* None of the bad ones was taken, even in part. */
    g_assert_cmpuint(fab_counter(&pr, 0, "rx-dropped"), ==, 2);
    g_assert_cmpuint(fab_counter(&pr, 0, "rx-msgs"), ==, 1);
    g_assert_cmpuint(fab_counter(&pr, 0, "joined"), ==, 6);
    close(mfd);
    pair_teardown(&pr);
    fab_cleanup();
}

/* The one socket in the directory once it is there (5 s at most). */
static char *fab_socket_name(const char *not)
{
    int i;

    for (i = 0; i < 500; i++) {
        g_autoptr(GDir) d = g_dir_open(fab_dir, 0, NULL);
        const char *n = d ? g_dir_read_name(d) : NULL;

        if (n && g_str_has_suffix(n, ".sock") && g_strcmp0(n, not) &&
            !g_dir_read_name(d)) {
            return g_strdup(n);
        }
        g_usleep(10000);
    }
    g_assert_not_reached();
}

/*
 * A reset adapter joins again as a new member, under a new id and socket
 * name: a member that still holds its old connection (the EOF queued
 * behind frames not yet read) must not take the new one for a duplicate
 * connection and drop it.
 */
static void test_fabric_rejoin(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *before = NULL, *after = NULL;
    uint64_t id1, id2;
    uint8_t rx[4096];
    Pair pr;
    int fd, mfd;
    ssize_t r;

    pair_setup(&pr, obj, data, alloc);
    mfd = fab_memfd();
    before = fab_socket_name(NULL);
    fd = fab_join(&pr, mfd, 2, &id1);
    qrs_writel(pr.p[0].d, A_RS_CTRL, R_RS_CTRL_RESET_MASK);
    do {
        r = recv(fd, rx, sizeof(rx), 0);
    } while (r > 0);
    g_assert_cmpint(r, ==, 0);          /* A left */
    close(fd);
    admin_setup(pr.p[0].d);
    after = fab_socket_name(before);
    fd = fab_join(&pr, mfd, 2, &id2);
    g_assert_cmphex(id2, !=, id1);
    g_assert_cmpuint(fab_counter(&pr, 0, "joined"), ==, 2);
    g_assert_cmpuint(fab_counter(&pr, 0, "left"), ==, 1);
    close(fd);
    close(mfd);
    pair_teardown(&pr);
    fab_cleanup();
}

/*
 * A directory whose path leaves no room for the socket names in a
 * sockaddr_un: realize fails and says so (the fabric used to stay off
 * without a word).
 */
static void test_fabric_long_path(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    g_autofree char *name = g_strnfill(70, 'l');
    g_autofree char *dir = g_strdup_printf("%s/%s", fab_dir, name);
    g_autofree char *cmd = NULL;
    char out[4096];
    size_t n;
    FILE *p;

    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_assert_cmpuint(strlen(dir), >, 82);
    cmd = g_strdup_printf("echo quit | timeout 60 %s -M pc -display none"
                          " -nodefaults -S -monitor stdio" FAB_RAM
                          " -device rdma-session,local-fabric=%s 2>&1",
                          getenv("QTEST_QEMU_BINARY"), dir);
    p = popen(cmd, "r");
    g_assert_nonnull(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = 0;
    g_assert_cmpint(pclose(p), !=, 0);
    g_assert_nonnull(strstr(out, "the path is too long for the sockets"));
    g_assert_cmpint(g_rmdir(dir), ==, 0);
    fab_cleanup();
}

/* A WRITE of @len bytes from A at @off to B's @off; completed, checked. */
static void fab_write(Pair *pr, LoopQp q[2], uint32_t off, uint32_t len,
                      uint8_t seed, uint64_t wr_id)
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;

    peer_fill(a, off, len, seed);
    sge = peer_sge(a, off, len);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, wr_id, &sge, 1,
              b->buf + off, b->key[0], 0);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, wr_id, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, off, a, off, len);
    peer_check(b);
}

/*
 * Migration of the QEMU with both adapters: the source leaves the fabric
 * when it stops for the switch, the destination's adapters join it when
 * they run; data goes by reference again afterwards, nothing on the wire.
 */
static void test_fabric_migrate(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    fab_wait(&pr, 0, "joined", 1);
    fab_wait(&pr, 1, "joined", 1);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_log_reset(&pr);
    fab_write(&pr, q, 0x1000, 8192, 0x61, 0xa1);
    PAIR_EXPECT_NONE(&pr, 0);
    g_assert_cmpuint(fab_counter(&pr, 0, "tx-ref"), >=, 2);

    pair_migrate(&pr);
    pair_release(&pr, 0);
    pair_release(&pr, 1);
    /* The destination's adapters (counters from 0) meet again. */
    fab_wait(&pr, 0, "joined", 1);
    fab_wait(&pr, 1, "joined", 1);
    g_assert_cmpuint(fab_sockets(), ==, 2);
    pair_pump(&pr);
    pair_log_reset(&pr);
    fab_write(&pr, q, 0x3000, 8192, 0x62, 0xa2);
    PAIR_EXPECT_NONE(&pr, 0);
    PAIR_EXPECT_NONE(&pr, 1);
    g_assert_cmpuint(fab_counter(&pr, 0, "tx-ref"), >=, 2);
    g_assert_cmpuint(fab_counter(&pr, 1, "rx-ref"), >=, 2);
    pair_teardown(&pr);
    fab_cleanup();
}

static void register_fabric_tests(void)
{
    QOSGraphTestOptions both = { .before = fab_before };
    QOSGraphTestOptions a_only = { .before = fab_a_before };

    rs_add_standalone_test("fabric/data", test_fabric_data, &both);
    rs_add_standalone_test("fabric/off", test_fabric_off, &a_only);
    rs_add_standalone_test("fabric/hostile", test_fabric_hostile, &a_only);
    rs_add_standalone_test("fabric/batch-hostile", test_fabric_batch_hostile,
                           &a_only);
    rs_add_standalone_test("fabric/rejoin", test_fabric_rejoin, &a_only);
    rs_add_standalone_test("fabric/long-path", test_fabric_long_path,
                           &a_only);
    rs_add_standalone_test("fabric/migrate", test_fabric_migrate, &both);
}

libqos_init(register_fabric_tests);
