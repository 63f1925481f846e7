/*
 * rdma-session qtests: the LAN path (TX and RX rings, filters,
 * backpressure, link, announcements, rate-limited logs)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

static uint8_t lan_err(LanRing *r, uint32_t index)
{
    return qrs_ring_phase(index, r->log) | RS_LAN_S_ERR;
}

/* Send one frame from @buf in fragments of the given sizes. */
static uint32_t lan_tx_frags(LanEnv *e, uint64_t buf, const uint16_t *frag,
                             int n)
{
    uint32_t first = e->tx.pi, off = 0;
    int i;

    for (i = 0; i < n; i++) {
        lan_post(e, &e->tx, buf + off, frag[i],
                 i < n - 1 ? RS_LAN_F_MORE : 0);
        off += frag[i];
    }
    lan_doorbell(e, &e->tx);
    return first;
}

static void test_lan_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    LanEnv e;
    QTestState *qts;
    uint64_t buf;
    g_autofree uint8_t *f = g_malloc(RS_LAN_MAX_FRAME);
    static const uint16_t three[] = { 14, 100, 1386 };
    uint16_t frags[RS_LAN_MAX_FRAGS];
    uint32_t first, i;
    size_t len;

    lan_setup(&e, obj, data, 4, 0);
    qts = qrs_qts(e.d);
    g_assert_cmphex(qrs_readl(e.d, A_RS_CAPS) & RS_CAP_LAN, ==, RS_CAP_LAN);
    buf = qrs_alloc_zeroed(e.d, RS_LAN_MAX_FRAME + PAGE);

    /* One descriptor, one frame; the TX vector fires. */
    lan_make_frame(f, 60, qos_mac, 1);
    qtest_memwrite(qts, buf, f, 60);
    first = lan_post(&e, &e.tx, buf, 60, 0);
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, f, 60);
    g_assert_cmphex(lan_status(&e, &e.tx, first), ==, lan_ok(&e.tx, first));
    wait_msg(e.d, e.msi + LAN_TX_VECTOR * 4, 0x1a40000 + LAN_TX_VECTOR);
    g_assert_cmphex(qtest_readl(qts, e.msi + LAN_RX_VECTOR * 4), ==, 0);

    /* Three fragments: one frame, byte exact; every descriptor done. */
    len = 14 + 100 + 1386;
    lan_make_frame(f, len, qos_mac, 2);
    qtest_memwrite(qts, buf, f, len);
    first = lan_tx_frags(&e, buf, three, 3);
    lan_expect_frame(&e, f, len);
    for (i = 0; i < 3; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, first + i), ==,
                        lan_ok(&e.tx, first + i));
    }

    /* RS_LAN_MAX_FRAGS fragments of different sizes, 65535 bytes. */
    lan_make_frame(f, RS_LAN_MAX_FRAME, qos_mac, 3);
    qtest_memwrite(qts, buf, f, RS_LAN_MAX_FRAME);
    len = 0;
    for (i = 0; i < RS_LAN_MAX_FRAGS - 1; i++) {
        frags[i] = 1000 + i * 37;
        len += frags[i];
    }
    frags[i] = RS_LAN_MAX_FRAME - len;
    /* the ring has 16 entries: use a bigger one from here on */
    RS_ASSERT_OK(qrs_destroy(e.d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ));
    lan_ring_init(&e, &e.tx, RS_LAN_TXQ, 7, LAN_TX_VECTOR);
    first = lan_tx_frags(&e, buf, frags, RS_LAN_MAX_FRAGS);
    lan_expect_frame(&e, f, RS_LAN_MAX_FRAME);
    for (i = 0; i < RS_LAN_MAX_FRAGS; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, first + i), ==,
                        lan_ok(&e.tx, first + i));
    }

    /*
     * 100 frames behind one doorbell, more than a bottom-half batch, and
     * across the end of the 128-entry ring: they leave in order, and the
     * phase bit is 0 on the second lap.
     */
    for (i = 0; i < 100; i++) {
        lan_make_frame(f, 60 + i, qos_mac, i);
        qtest_memwrite(qts, buf + i * 256, f, 60 + i);
        lan_post(&e, &e.tx, buf + i * 256, 60 + i, 0);
    }
    lan_doorbell(&e, &e.tx);
    for (i = 0; i < 100; i++) {
        lan_make_frame(f, 60 + i, qos_mac, i);
        lan_expect_frame(&e, f, 60 + i);
    }
    first += RS_LAN_MAX_FRAGS;
    g_assert_cmpuint(first + 99, >=, 128);
    for (i = 0; i < 100; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, first + i), ==,
                        lan_ok(&e.tx, first + i));
    }
    g_assert_cmphex(lan_ok(&e.tx, first + 99), ==, 0);
    lan_expect_quiet(&e);
    assert_alive(e.d);
}

/*
 * A backend that does not take frames stops the TX ring instead of making
 * QEMU buffer them: while the test does not read its socket only a few
 * frames complete; then every frame arrives, in order, none lost.
 */
static void test_lan_tx_backpressure(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    enum { FRAMES = 100, BODY = 30000, HDR = 14 };
    LanEnv e;
    QTestState *qts;
    g_autofree uint8_t *f = g_malloc(HDR + BODY);
    uint64_t hdrs, body;
    uint32_t done = 0, i;

    lan_setup(&e, obj, data, 8, 0);         /* 2 descriptors a frame */
    qts = qrs_qts(e.d);
    hdrs = qrs_alloc_zeroed(e.d, FRAMES * 64);
    body = qrs_alloc_zeroed(e.d, BODY);
    lan_make_frame(f, HDR + BODY, lan_bcast, 0);
    qtest_memwrite(qts, body, f + HDR, BODY);
    for (i = 0; i < FRAMES; i++) {
        /* each frame: its own header (source MAC low byte = i), one body */
        lan_make_frame(f, HDR, lan_bcast, 0);
        f[11] = i;
        qtest_memwrite(qts, hdrs + i * 64, f, HDR);
        lan_post(&e, &e.tx, hdrs + i * 64, HDR, RS_LAN_F_MORE);
        lan_post(&e, &e.tx, body, BODY, 0);
    }
    lan_doorbell(&e, &e.tx);
    g_usleep(2 * LAN_QUIET_US);
    while (done < FRAMES && lan_done(&e, &e.tx, 2 * done + 1)) {
        done++;
    }
    g_test_message("%u of %u frames of %u bytes completed while the "
                   "socket is not read", done, FRAMES, HDR + BODY);
    g_assert_cmpuint(done, >, 0);
    g_assert_cmpuint(done, <, FRAMES / 2);

    for (i = 0; i < FRAMES; i++) {
        lan_make_frame(f, HDR + BODY, lan_bcast, 0);
        f[11] = i;
        lan_expect_frame(&e, f, HDR + BODY);
    }
    for (i = 0; i < 2 * FRAMES; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, i), ==, lan_ok(&e.tx, i));
    }
    lan_expect_quiet(&e);
    assert_alive(e.d);
}

static void test_lan_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    LanEnv e;
    QTestState *qts;
    uint8_t f[LAN_BUF_SIZE + 100];
    uint64_t bufs[12];
    uint32_t idx, i;

    lan_setup(&e, obj, data, 0, 3);
    qts = qrs_qts(e.d);
    for (i = 0; i < ARRAY_SIZE(bufs); i++) {
        bufs[i] = lan_rx_buf(&e, LAN_BUF_SIZE);
    }

    /* A frame for our MAC lands byte exact; the RX vector fires. */
    idx = lan_post(&e, &e.rx, bufs[0], LAN_BUF_SIZE, 0);
    lan_post(&e, &e.rx, bufs[1], LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_make_frame(f, 60, qos_mac, 0x10);
    lan_sock_send(e.fd, f, 60);
    lan_expect_rx(&e, idx, bufs[0], LAN_BUF_SIZE, f, 60);
    wait_msg(e.d, e.msi + LAN_RX_VECTOR * 4, 0x1a40000 + LAN_RX_VECTOR);
    g_assert_cmphex(qtest_readl(qts, e.msi + LAN_TX_VECTOR * 4), ==, 0);
    /* The second descriptor is still the driver's. */
    g_usleep(LAN_QUIET_US);
    g_assert_false(lan_done(&e, &e.rx, idx + 1));

    /* A full-size frame, exactly the buffer's size. */
    lan_make_frame(f, LAN_BUF_SIZE, qos_mac, 0x11);
    lan_sock_send(e.fd, f, LAN_BUF_SIZE);
    lan_expect_rx(&e, idx + 1, bufs[1], LAN_BUF_SIZE, f, LAN_BUF_SIZE);

    /*
     * No descriptor posted: the frame waits in QEMU and arrives when the
     * doorbell announces a buffer.
     */
    lan_make_frame(f, 100, qos_mac, 0x12);
    lan_sock_send(e.fd, f, 100);
    lan_make_frame(f + 200, 101, qos_mac, 0x13);
    lan_sock_send(e.fd, f + 200, 101);
    g_usleep(LAN_QUIET_US);
    idx = lan_post(&e, &e.rx, bufs[2], LAN_BUF_SIZE, 0);
    g_assert_false(lan_done(&e, &e.rx, idx));
    lan_doorbell(&e, &e.rx);
    lan_expect_rx(&e, idx, bufs[2], LAN_BUF_SIZE, f, 100);
    g_usleep(LAN_QUIET_US);
    lan_post(&e, &e.rx, bufs[3], LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_expect_rx(&e, idx + 1, bufs[3], LAN_BUF_SIZE, f + 200, 101);

    /* Larger than its buffer: ERR, length 0, buffer untouched, next OK. */
    idx = lan_post(&e, &e.rx, bufs[4], 200, 0);
    lan_post(&e, &e.rx, bufs[5], LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_make_frame(f, 201, qos_mac, 0x14);
    lan_sock_send(e.fd, f, 201);
    lan_make_frame(f, 64, qos_mac, 0x15);
    lan_sock_send(e.fd, f, 64);
    lan_expect_rx(&e, idx + 1, bufs[5], LAN_BUF_SIZE, f, 64);
    g_assert_cmphex(lan_status(&e, &e.rx, idx), ==, lan_err(&e.rx, idx));
    g_assert_cmpuint(lan_wait(&e, &e.rx, idx).len, ==, 0);
    g_assert_true(is_filled(e.d, bufs[4], 0xee, LAN_BUF_SIZE));

    /* Around the 8-entry ring: the phase is 0 on the second lap. */
    for (i = 0; i < 6; i++) {
        fill(e.d, bufs[6 + i], 0xee, LAN_BUF_SIZE);
        idx = lan_post(&e, &e.rx, bufs[6 + i], LAN_BUF_SIZE, 0);
        lan_doorbell(&e, &e.rx);
        lan_make_frame(f, 70 + i, lan_bcast, 0x20 + i);
        lan_sock_send(e.fd, f, 70 + i);
        lan_expect_rx(&e, idx, bufs[6 + i], LAN_BUF_SIZE, f, 70 + i);
    }
    g_assert_cmpuint(idx, ==, 11);
    g_assert_cmphex(lan_ok(&e.rx, idx), ==, 0);
    assert_alive(e.d);
}

/*
 * A guest that posts no receive buffers does not make QEMU buffer frames
 * without bound: the network layer holds one frame, the socket backend
 * stops reading, and the sender sees its socket fill up.  Once buffers are
 * posted the held frames arrive, in order.
 */
static void test_lan_rx_backpressure(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    enum { FRAME = 1514, TRIES = 4000 };
    LanEnv e;
    uint8_t f[FRAME];
    uint64_t bufs[16];
    int sent, i;

    lan_setup(&e, obj, data, 0, 0);
    for (sent = 0; sent < TRIES; sent++) {
        uint32_t be = cpu_to_be32(FRAME);
        struct iovec iov[2] = {
            { .iov_base = &be, .iov_len = sizeof(be) },
            { .iov_base = f, .iov_len = FRAME },
        };
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
        ssize_t n;

        lan_make_frame(f, FRAME, qos_mac, sent);
        n = sendmsg(e.fd, &msg, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        g_assert_cmpint(n, >, 0);
        if (n < sizeof(be) + FRAME) {
            break;          /* the socket is full in the middle of it */
        }
        if (sent % 64 == 0) {
            g_usleep(10 * 1000);        /* give QEMU time to read */
        }
    }
    g_test_message("socket full after %d frames of %d bytes", sent, FRAME);
    /* 4000 frames would be 6 MB held in QEMU. */
    g_assert_cmpint(sent, <, TRIES);
    g_assert_cmpint(sent, >, ARRAY_SIZE(bufs));

    /* With an RX ring but no buffer posted, nothing lands either. */
    lan_ring_init(&e, &e.rx, RS_LAN_RXQ, 4, LAN_RX_VECTOR);
    for (i = 0; i < ARRAY_SIZE(bufs); i++) {
        bufs[i] = lan_rx_buf(&e, LAN_BUF_SIZE);
    }
    g_usleep(LAN_QUIET_US);
    lan_post(&e, &e.rx, bufs[0], LAN_BUF_SIZE, 0);
    g_assert_false(lan_done(&e, &e.rx, 0));
    for (i = 1; i < ARRAY_SIZE(bufs); i++) {
        lan_post(&e, &e.rx, bufs[i], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(&e, &e.rx);
    for (i = 0; i < ARRAY_SIZE(bufs); i++) {
        lan_make_frame(f, FRAME, qos_mac, i);
        lan_expect_rx(&e, i, bufs[i], LAN_BUF_SIZE, f, FRAME);
    }
    assert_alive(e.d);
}

/*
 * Send frames to the listed destinations with descriptors posted for all
 * of them, then a marker frame to our MAC: the accepted ones, and then
 * the marker, must land in order.
 */
static void lan_filter_check(LanEnv *e, uint64_t *bufs,
                             const uint8_t (*dst)[6], const bool *accept,
                             int n)
{
    uint8_t f[8][128];
    uint32_t first = e->rx.pi;
    int i, k = 0;

    g_assert_cmpint(n, <, 8);
    for (i = 0; i <= n; i++) {
        fill(e->d, bufs[i], 0xee, LAN_BUF_SIZE);
        lan_post(e, &e->rx, bufs[i], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(e, &e->rx);
    for (i = 0; i < n; i++) {
        lan_make_frame(f[i], 64 + i, dst[i], 0x40 + i);
        lan_sock_send(e->fd, f[i], 64 + i);
    }
    lan_make_frame(f[n], 90, qos_mac, 0x4f);
    lan_sock_send(e->fd, f[n], 90);
    for (i = 0; i < n; i++) {
        if (accept[i]) {
            lan_expect_rx(e, first + k, bufs[k], LAN_BUF_SIZE, f[i], 64 + i);
            k++;
        }
    }
    lan_expect_rx(e, first + k, bufs[k], LAN_BUF_SIZE, f[n], 90);
    /* Hand the unused descriptors back: destroy and recreate the ring. */
    RS_ASSERT_OK(qrs_destroy(e->d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ));
    lan_ring_init(e, &e->rx, RS_LAN_RXQ, 4, LAN_RX_VECTOR);
}

static void test_lan_rx_filter(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    static const uint8_t dst[5][6] = {
        { 0x52, 0x54, 0x00, 0x12, 0x34, 0x71 },     /* another station */
        { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },     /* broadcast */
        { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb },     /* IPv4 multicast */
        { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 },     /* IPv6 multicast */
        { 0x52, 0x54, 0x00, 0x12, 0x34, 0x70 },     /* ours */
    };
    static const struct {
        uint32_t mode;              /* ~0: the default after reset */
        bool accept[5];
    } rows[] = {
        { ~0u, { false, true, false, false, true } },
        { 0, { false, false, false, false, true } },
        { RS_LAN_RX_BROADCAST, { false, true, false, false, true } },
        { RS_LAN_RX_ALLMULTI, { false, false, true, true, true } },
        { RS_LAN_RX_ALLMULTI | RS_LAN_RX_BROADCAST,
          { false, true, true, true, true } },
        { RS_LAN_RX_PROMISC, { true, true, true, true, true } },
        { RS_LAN_RX_PROMISC | RS_LAN_RX_ALLMULTI | RS_LAN_RX_BROADCAST,
          { true, true, true, true, true } },
    };
    LanEnv e;
    uint64_t bufs[8];
    uint8_t runt[13];
    uint8_t f[64];
    uint32_t idx;
    int i;

    lan_setup(&e, obj, data, 0, 4);
    g_assert_cmpmem(dst[4], 6, qos_mac, 6);
    for (i = 0; i < ARRAY_SIZE(bufs); i++) {
        bufs[i] = lan_rx_buf(&e, LAN_BUF_SIZE);
    }
    for (i = 0; i < ARRAY_SIZE(rows); i++) {
        g_test_message("rx mode 0x%x", rows[i].mode);
        if (rows[i].mode != ~0u) {
            RS_ASSERT_OK(qrs_set_lan_rx_mode(e.d, rows[i].mode));
        }
        lan_filter_check(&e, bufs, dst, rows[i].accept, 5);
    }

    /* Runts (shorter than an Ethernet header) are dropped. */
    memcpy(runt, qos_mac, 6);
    memset(runt + 6, 0x77, sizeof(runt) - 6);
    idx = lan_post(&e, &e.rx, bufs[0], LAN_BUF_SIZE, 0);
    fill(e.d, bufs[0], 0xee, LAN_BUF_SIZE);
    lan_doorbell(&e, &e.rx);
    lan_sock_send(e.fd, runt, sizeof(runt));
    lan_make_frame(f, 64, qos_mac, 0x60);
    lan_sock_send(e.fd, f, 64);
    lan_expect_rx(&e, idx, bufs[0], LAN_BUF_SIZE, f, 64);

    /* A reset brings the default mode back. */
    qrs_reset(e.d);
    admin_setup(e.d);
    lan_ring_init(&e, &e.rx, RS_LAN_RXQ, 4, LAN_RX_VECTOR);
    lan_filter_check(&e, bufs, dst, rows[0].accept, 5);
    assert_alive(e.d);
}

/* Admin commands of the LAN path: each bad field with its status. */
static void lan_bad_commands(LanEnv *e)
{
    QRdmaSession *d = e->d;
    uint64_t ring = qrs_alloc_zeroed(d, PAGE);
    uint64_t end = ram_end(d);
    struct rs_admin_cmd cmd;
    uint32_t h;
    static const struct {
        const char *name;
        uint8_t type, log;
        int64_t ring_off;       /* from the good ring; INT64_MIN: 0 */
        uint16_t vector;
        uint8_t status;
    } rows[] = {
        { "type 2", 2, 4, 0, 0, RS_STATUS_BAD_PARAM },
        { "type 0xff", 0xff, 4, 0, 0, RS_STATUS_BAD_PARAM },
        { "log_size 0", RS_LAN_TXQ, 0, 0, 0, RS_STATUS_BAD_SIZE },
        { "log_size 13", RS_LAN_TXQ, RS_MAX_LAN_LOG + 1, 0, 0,
          RS_STATUS_BAD_SIZE },
        { "log_size 0xff", RS_LAN_RXQ, 0xff, 0, 0, RS_STATUS_BAD_SIZE },
        { "ring 0", RS_LAN_TXQ, 4, INT64_MIN, 0, RS_STATUS_BAD_ADDR },
        { "ring +16", RS_LAN_TXQ, 4, 16, 0, RS_STATUS_BAD_ALIGN },
        { "ring +32", RS_LAN_RXQ, 4, 32, 0, RS_STATUS_BAD_ALIGN },
        { "vector NUM_MSIX", RS_LAN_TXQ, 4, 0, DEF_NUM_MSIX,
          RS_STATUS_BAD_PARAM },
        { "vector 0xffff", RS_LAN_RXQ, 4, 0, 0xffff, RS_STATUS_BAD_PARAM },
        { "type before log_size", 2, 0, 0, 0, RS_STATUS_BAD_PARAM },
        { "log_size before ring", RS_LAN_TXQ, 0, 16, 0, RS_STATUS_BAD_SIZE },
        { "ring before vector", RS_LAN_TXQ, 4, 16, 0xffff,
          RS_STATUS_BAD_ALIGN },
    };
    int i;

    for (i = 0; i < ARRAY_SIZE(rows); i++) {
        uint64_t r = rows[i].ring_off == INT64_MIN ? 0 :
                     ring + rows[i].ring_off;

        g_test_message("CREATE_LAN_QUEUE %s", rows[i].name);
        RS_ASSERT_STATUS(qrs_create_lan_queue(d, rows[i].type, r,
                                              rows[i].log, rows[i].vector,
                                              NULL), rows[i].status);
    }
    /* Rings outside guest RAM, in the BARs, straddling the end of RAM. */
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_TXQ, FAR_ADDR, 4, 0,
                                          NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_TXQ, d->bar0.addr, 4, 0,
                                          NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_RXQ, d->bar2.addr, 4, 0,
                                          NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_RXQ, end - 128, 4, 0,
                                          NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_RXQ,
                                          0xffffffffffffffc0ull, 1, 0, NULL),
                     RS_STATUS_BAD_ADDR);

    /* Destroying what does not exist. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, 2),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, 0x01000000),
                     RS_STATUS_BAD_HANDLE);

    /* Good bounds: smallest and largest ring, last vector; then EXISTS. */
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_TXQ, ring, 1,
                                      DEF_NUM_MSIX - 1, &h));
    g_assert_cmpuint(h, ==, RS_LAN_TXQ);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_TXQ, ring, 4, 0, NULL),
                     RS_STATUS_EXISTS);
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_RXQ,
                                      qrs_alloc_zeroed(d, 16 << RS_MAX_LAN_LOG),
                                      RS_MAX_LAN_LOG, 0, &h));
    g_assert_cmpuint(h, ==, RS_LAN_RXQ);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_RXQ, ring, 4, 0, NULL),
                     RS_STATUS_EXISTS);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE,
                                 RS_LAN_RXQ | 0x100), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ),
                     RS_STATUS_BAD_HANDLE);

    /* Unknown rx-mode flags. */
    RS_ASSERT_STATUS(qrs_set_lan_rx_mode(d, 1u << 3), RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(qrs_set_lan_rx_mode(d, RS_LAN_RX_PROMISC | 1u << 31),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(qrs_set_lan_rx_mode(d, ~0u), RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_set_lan_rx_mode(d, RS_LAN_RX_BROADCAST));
    /* reserved fields are ignored */
    cmd_init(&cmd, RS_CMD_SET_LAN_RX_MODE);
    cmd.set_lan_rx_mode.flags = RS_LAN_RX_BROADCAST;
    cmd.set_lan_rx_mode.rsvd = 0xffffffff;
    RS_ASSERT_OK(qrs_admin_exec(d, &cmd, NULL));
}

/*
 * TX, bad descriptors: the frame is dropped, every descriptor of it is
 * completed with ERR, and the next frame still goes out.
 */
static void lan_tx_bad_descs(LanEnv *e, uint64_t buf, uint64_t big,
                             const uint8_t *g)
{
    static const struct {
        const char *name;
        int n;              /* descriptors */
        int bad;            /* which one is bad, -1: the length */
        uint64_t addr;      /* 0: good buffer; 1: BAR0; 2: RAM end */
        uint16_t len;
        uint8_t flags;
    } rows[] = {
        { "len 0", 1, 0, 0, 0, 0 },
        { "len 0 in a chain", 3, 1, 0, 0, 0 },
        { "address far", 1, 0, FAR_ADDR, 80, 0 },
        { "address in BAR0", 1, 0, 1, 80, 0 },
        { "straddles the end of RAM", 2, 1, 2, 80, 0 },
        { "address wraps", 1, 0, 0xfffffffffffffff0ull, 80, 0 },
        { "unknown flag", 1, 0, 0, 80, 0x2 },
        { "chain too long", RS_LAN_MAX_FRAGS + 1, -1, 0, 0, 0 },
        { "frame too long", 2, -2, 0, 0, 0 },
    };
    uint32_t idx;
    int r;

    for (r = 0; r < ARRAY_SIZE(rows); r++) {
        uint32_t first = e->tx.pi;
        int n = rows[r].n, k;

        g_test_message("TX %s", rows[r].name);
        for (k = 0; k < n; k++) {
            uint64_t addr = buf;
            uint16_t len = 10;
            uint8_t flags = k < n - 1 ? RS_LAN_F_MORE : 0;

            if (rows[r].bad == -2) {
                addr = big;
                len = 40000;        /* two of them: > 65535 */
            } else if (k == rows[r].bad) {
                addr = rows[r].addr == 0 ? buf :
                       rows[r].addr == 1 ? e->d->bar0.addr :
                       rows[r].addr == 2 ? ram_end(e->d) - 40 :
                       rows[r].addr;
                len = rows[r].len;
                flags |= rows[r].flags;
            }
            lan_post(e, &e->tx, addr, len, flags);
        }
        idx = lan_post(e, &e->tx, buf + 128, 90, 0);
        lan_doorbell(e, &e->tx);
        lan_expect_frame(e, g, 90);
        for (k = 0; k < n; k++) {
            g_assert_cmphex(lan_status(e, &e->tx, first + k), ==,
                            lan_err(&e->tx, first + k));
        }
        g_assert_cmphex(lan_status(e, &e->tx, idx), ==,
                        lan_ok(&e->tx, idx));
    }
}

/*
 * RX: a buffer outside guest RAM or too small completes with ERR and the
 * frame goes to the next; doorbells beyond the ring or from another page
 * are ignored.  @f: an 80-byte frame.
 */
static void lan_rx_bad_bufs(LanEnv *e, const uint8_t *f)
{
    uint64_t rxbuf;
    uint32_t idx, i;

    lan_ring_init(e, &e->rx, RS_LAN_RXQ, 3, LAN_RX_VECTOR);
    rxbuf = lan_rx_buf(e, LAN_BUF_SIZE);
    idx = lan_post(e, &e->rx, FAR_ADDR, LAN_BUF_SIZE, 0);
    lan_post(e, &e->rx, e->d->bar0.addr, LAN_BUF_SIZE, 0);
    lan_post(e, &e->rx, ram_end(e->d) - 64, LAN_BUF_SIZE, 0);
    lan_post(e, &e->rx, rxbuf, 79, 0);
    lan_post(e, &e->rx, rxbuf, LAN_BUF_SIZE, 0);
    lan_doorbell(e, &e->rx);
    for (i = 0; i < 5; i++) {
        lan_sock_send(e->fd, f, 80);
    }
    lan_expect_rx(e, idx + 4, rxbuf, LAN_BUF_SIZE, f, 80);
    for (i = 0; i < 4; i++) {
        struct rs_lan_desc desc = lan_wait(e, &e->rx, idx + i);

        g_assert_cmphex(desc.status, ==, lan_err(&e->rx, idx + i));
        g_assert_cmpuint(desc.len, ==, 0);
    }
    /* RX doorbell beyond the ring, or from another page: ignored. */
    qrs_db_writel(e->d, 0, RS_DB_LAN_RX, (e->rx.pi + 9) & 0xffff);
    qrs_db_writel(e->d, 2, RS_DB_LAN_RX, e->rx.pi + 1);
    lan_sock_send(e->fd, f, 80);
    g_usleep(LAN_QUIET_US);
    g_assert_false(lan_done(e, &e->rx, e->rx.pi));
    fill(e->d, rxbuf, 0xee, LAN_BUF_SIZE);
    idx = lan_post(e, &e->rx, rxbuf, LAN_BUF_SIZE, 0);
    lan_doorbell(e, &e->rx);
    lan_expect_rx(e, idx, rxbuf, LAN_BUF_SIZE, f, 80);
}

static void test_lan_bad_input(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    LanEnv e;
    QTestState *qts;
    uint64_t buf, big;
    uint8_t f[256], g[256];
    uint32_t idx, i;

    lan_setup(&e, obj, data, 0, 0);
    qts = qrs_qts(e.d);
    lan_bad_commands(&e);

    lan_ring_init(&e, &e.tx, RS_LAN_TXQ, 6, LAN_TX_VECTOR);
    buf = qrs_alloc_zeroed(e.d, PAGE);
    big = qrs_alloc_zeroed(e.d, 40000);
    lan_make_frame(f, 80, lan_bcast, 0x70);
    qtest_memwrite(qts, buf, f, 80);
    lan_make_frame(g, 90, lan_bcast, 0x71);
    qtest_memwrite(qts, buf + 128, g, 90);

    /* Doorbells the device ignores: nothing goes out. */
    idx = lan_post(&e, &e.tx, buf, 80, 0);
    qrs_db_writel(e.d, 1, RS_DB_LAN_TX, e.tx.pi);
    qrs_db_writel(e.d, DEF_DB_PAGES - 1, RS_DB_LAN_TX, e.tx.pi);
    qrs_db_writel(e.d, 0, RS_DB_LAN_TX, e.tx.pi | 1u << 16);
    qrs_db_writel(e.d, 0, RS_DB_LAN_TX, 65);     /* > ring size ahead */
    qrs_db_writel(e.d, 0, RS_DB_LAN_TX, 0xffff);
    qrs_db_writel(e.d, 0, RS_DB_LAN_RX, 1);      /* no RX queue */
    qrs_db_writel(e.d, 1, RS_DB_LAN_RX, 1);
    lan_expect_quiet(&e);
    g_assert_false(lan_done(&e, &e.tx, idx));
    /* ... and then the right one. */
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, f, 80);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));

    lan_tx_bad_descs(&e, buf, big, g);
    lan_expect_quiet(&e);

    /*
     * A frame whose end is not posted yet waits; a chain that fills the
     * whole ring can never end and is dropped.
     */
    idx = lan_post(&e, &e.tx, buf, 14, RS_LAN_F_MORE);
    lan_doorbell(&e, &e.tx);
    lan_expect_quiet(&e);
    g_assert_false(lan_done(&e, &e.tx, idx));
    lan_post(&e, &e.tx, buf + 14, 66, 0);
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, f, 80);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));
    idx = e.tx.pi;
    for (i = 0; i < 64; i++) {
        lan_post(&e, &e.tx, buf, 14, RS_LAN_F_MORE);
    }
    lan_doorbell(&e, &e.tx);
    for (i = 0; i < 64; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, idx + i), ==,
                        lan_err(&e.tx, idx + i));
    }
    idx = lan_post(&e, &e.tx, buf + 128, 90, 0);
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, g, 90);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));

    lan_rx_bad_bufs(&e, f);

    g_assert_cmphex(qrs_readl(e.d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    assert_alive(e.d);

    /* A reset forgets the queues. */
    qrs_reset(e.d);
    qrs_db_writel(e.d, 0, RS_DB_LAN_TX, 1);
    admin_setup(e.d);
    RS_ASSERT_STATUS(qrs_destroy(e.d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(e.d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ),
                     RS_STATUS_BAD_HANDLE);
    lan_expect_quiet(&e);
}

/*
 * Guest errors a peer's frames trigger are logged at a bounded rate: 256
 * frames into RX descriptors whose buffers are outside guest RAM, with
 * "-d guest_errors", log at most a burst per second, and the next line
 * after a quiet second says how many were left out.
 */
static char *lan_log_path;

static void *lan_log_before(GString *cmd_line, void *arg)
{
    void *sv = lan_before(cmd_line, arg);

    g_free(lan_log_path);
    lan_log_path = g_strdup_printf("%s/rdma-session-log-%d.txt",
                                   g_get_tmp_dir(), (int)getpid());
    unlink(lan_log_path);
    g_string_append_printf(cmd_line, " -d guest_errors -D %s ",
                           lan_log_path);
    return sv;
}

static int lan_log_count(const char *what)
{
    g_autofree char *text = NULL;
    const char *p;
    int n = 0;

    g_assert_true(g_file_get_contents(lan_log_path, &text, NULL, NULL));
    for (p = text; (p = strstr(p, what)); p++) {
        n++;
    }
    return n;
}

static void test_lan_log_rate(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { FRAMES = 256 };
    const char *line = "rdma_session_err_lan_rx_buf: RX descriptor";
    int64_t t0, secs;
    uint32_t idx = 0;
    uint8_t f[80];
    LanEnv e;
    int i, n;

    lan_setup(&e, obj, data, 0, 8);
    for (i = 0; i < FRAMES; i++) {
        idx = lan_post(&e, &e.rx, FAR_ADDR, LAN_BUF_SIZE, 0);
    }
    lan_doorbell(&e, &e.rx);
    lan_make_frame(f, sizeof(f), qos_mac, 0x70);
    t0 = g_get_monotonic_time();
    for (i = 0; i < FRAMES; i++) {
        lan_sock_send(e.fd, f, sizeof(f));
    }
    g_assert_cmphex(lan_status(&e, &e.rx, idx), ==, lan_err(&e.rx, idx));
    secs = (g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
    n = lan_log_count(line);
    g_test_message("%d frames in %" PRId64 " s: %d log lines", FRAMES,
                   secs, n);
    g_assert_cmpint(n, >=, 1);
    /* ten a second, and an interval that began before the first frame */
    g_assert_cmpint(n, <=, 10 * (secs + 2));
    g_assert_cmpint(lan_log_count("more not logged"), ==, 0);

    /* After a quiet second: logged again, with the count left out. */
    g_usleep(1100 * 1000);
    idx = lan_post(&e, &e.rx, FAR_ADDR, LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_sock_send(e.fd, f, sizeof(f));
    g_assert_cmphex(lan_status(&e, &e.rx, idx), ==, lan_err(&e.rx, idx));
    g_assert_cmpint(lan_log_count(line), ==, n + 1);
    g_assert_cmpint(lan_log_count("more not logged"), ==, 1);
    assert_alive(e.d);
    unlink(lan_log_path);
}

/* Link down: TX completes and is discarded, RX frames are dropped. */
static void test_lan_link(void *obj, void *data, QGuestAllocator *alloc)
{
    LanEnv e;
    uint64_t buf, rxbuf;
    uint8_t f[100], g[100];
    uint32_t idx, rx;

    lan_setup(&e, obj, data, 4, 3);
    buf = qrs_alloc_zeroed(e.d, PAGE);
    rxbuf = lan_rx_buf(&e, LAN_BUF_SIZE);
    lan_make_frame(f, 100, lan_bcast, 0xa0);
    qtest_memwrite(qrs_qts(e.d), buf, f, 100);
    rx = lan_post(&e, &e.rx, rxbuf, LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);

    set_link(e.d, false);
    idx = lan_post(&e, &e.tx, buf, 100, 0);
    lan_doorbell(&e, &e.tx);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));
    lan_expect_quiet(&e);
    lan_make_frame(g, 90, qos_mac, 0xa1);
    lan_sock_send(e.fd, g, 90);
    g_usleep(LAN_QUIET_US);
    g_assert_false(lan_done(&e, &e.rx, rx));

    set_link(e.d, true);
    lan_make_frame(g, 91, qos_mac, 0xa2);
    lan_sock_send(e.fd, g, 91);
    lan_expect_rx(&e, rx, rxbuf, LAN_BUF_SIZE, g, 91);
    idx = lan_post(&e, &e.tx, buf, 100, 0);
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, f, 100);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));
    assert_alive(e.d);
}

/* The adapter's x-lan-rx-missed counter, through QMP. */
static uint64_t lan_rx_missed(QRdmaSession *d)
{
    QTestState *qts = qrs_qts(d);
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'qom-list', 'arguments':"
                           " { 'path': '/machine/peripheral-anon' } }");
    g_autofree char *path = NULL;
    QListEntry *entry;
    uint64_t n;

    g_assert_true(qdict_haskey(rsp, "return"));
    QLIST_FOREACH_ENTRY(qdict_get_qlist(rsp, "return"), entry) {
        QDict *prop = qobject_to(QDict, qlist_entry_obj(entry));

        if (!strcmp(qdict_get_str(prop, "type"), "child<rdma-session>")) {
            g_assert_null(path);
            path = g_strdup_printf("/machine/peripheral-anon/%s",
                                   qdict_get_str(prop, "name"));
        }
    }
    qobject_unref(rsp);
    g_assert_nonnull(path);
    rsp = qtest_qmp(qts, "{ 'execute': 'qom-get', 'arguments':"
                    " { 'path': %s, 'property': 'x-lan-rx-missed' } }",
                    path);
    g_assert_true(qdict_haskey(rsp, "return"));
    n = qnum_get_uint(qobject_to(QNum, qdict_get(rsp, "return")));
    qobject_unref(rsp);
    return n;
}

/*
 * While the port is active, a LAN frame that finds no RX descriptor is
 * dropped and counted, never held in front of the RoCE frames behind it:
 * a broadcast ARP with no RX ring (the interface is down), then with a
 * ring and nothing posted, and each time a RoCE SEND after it that must
 * be received.
 */
static void test_lan_rx_missed(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x71 };
    g_autofree uint8_t *p = g_malloc(RS_LAN_MAX_FRAME);
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    uint8_t arp[60], f[64];
    uint64_t buf;
    uint32_t idx;
    ssize_t n;
    LanEnv e;
    Loop l;
    int i;

    lan_setup(&e, obj, data, 0, 0);
    loop_init(&l, e.d, RS_QPT_UC, 0);
    loop_connect_to(&l, &l.a, l.b.qpn, 2);
    loop_pattern(&l, l.src, 500, 0x3c);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xe0;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 500, l.src_key);
    n = roce_recv(&e, p, OP_UC | OP_SEND_ONLY);
    loop_expect(&l, 0xe0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    wire_peer(&l);

    /* who-has 10.0.0.9 tell 10.0.0.3, to everyone */
    memset(arp, 0, sizeof(arp));
    memcpy(arp, lan_bcast, 6);
    memcpy(arp + 6, other, 6);
    stw_be_p(arp + 12, 0x0806);
    stw_be_p(arp + 14, 1);
    stw_be_p(arp + 16, 0x0800);
    arp[18] = 6;
    arp[19] = 4;
    stw_be_p(arp + 20, 1);
    memcpy(arp + 22, other, 6);
    stl_be_p(arp + 28, 0x0a000003);
    stl_be_p(arp + 38, 0x0a000009);

    for (i = 0; i < 2; i++) {
        if (i == 1) {
            lan_ring_init(&e, &e.rx, RS_LAN_RXQ, 2, LAN_RX_VECTOR);
        }
        fill(l.d, l.dst, 0xee, LOOP_BUF);
        loop_post_recv(&l, &l.b, 0xb0 + i, l.dst, LOOP_BUF, l.dst_key);
        lan_sock_send(e.fd, arp, sizeof(arp));
        wire_feed(&e, p, n);
        loop_poll(&l, &cqe);
        g_assert_cmphex(cqe.wr_id, ==, 0xb0 + i);
        g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
        g_assert_cmpuint(cqe.byte_len, ==, 500);
        loop_assert_same(&l, l.src, l.dst, 500);
        g_assert_cmpuint(lan_rx_missed(e.d), ==, i + 1);
    }

    /* A frame the filter refuses is not a missed one. */
    lan_make_frame(f, sizeof(f), other, 0x62);
    lan_sock_send(e.fd, f, sizeof(f));
    loop_post_recv(&l, &l.b, 0xb2, l.dst, LOOP_BUF, l.dst_key);
    wire_feed(&e, p, n);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb2);
    g_assert_cmpuint(lan_rx_missed(e.d), ==, 2);

    /* The ARPs were dropped, not held: a new buffer gets the next frame. */
    buf = lan_rx_buf(&e, LAN_BUF_SIZE);
    idx = lan_post(&e, &e.rx, buf, LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    g_usleep(LAN_QUIET_US);
    g_assert_false(lan_done(&e, &e.rx, idx));
    lan_make_frame(f, sizeof(f), qos_mac, 0x61);
    lan_sock_send(e.fd, f, sizeof(f));
    lan_expect_rx(&e, idx, buf, LAN_BUF_SIZE, f, sizeof(f));
    g_assert_cmpuint(lan_rx_missed(e.d), ==, 2);
    assert_alive(e.d);
}

/* The LAN environment with a 1024-packet send window. */
static void *lan_wide_before(GString *cmd_line, void *arg)
{
    void *sv = lan_before(cmd_line, arg);

    g_string_append(cmd_line, " -global rdma-session.x-window=1024 ");
    return sv;
}

/*
 * LAN and RoCE frames share the backend, and each waits for its own: a
 * LAN frame held behind RoCE frames is not "sent" because one of those
 * was.  An RC WRITE of 1024 packets to a peer that never answers fills
 * the socket, then four LAN frames are posted, and the test reads the
 * wire a frame at a time.  Once the device has taken the second LAN
 * frame, the first must already be in the socket: at most a socket
 * buffer's worth of RoCE frames can come before it.  (When the RoCE
 * requester did not stop for the backend and every RoCE completion
 * resumed the LAN ring, hundreds of RoCE frames stood between them.)
 */
static void test_lan_roce_backpressure(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    const uint64_t iova = 0x100000000000ull;
    const uint32_t nlan = 4;
    uint32_t pd, key, i, lan_seen = 0, roce_between = 0;
    g_autofree uint8_t *f = g_malloc(RS_LAN_MAX_FRAME);
    bool second_taken = false;
    struct rs_send_wqe_ctrl w;
    struct rs_qp_attr a;
    struct rs_sge sge;
    uint64_t lanbuf;
    EngCq cq;
    LanEnv e;
    LoopQp q;
    ssize_t len;

    lan_setup(&e, obj, data, 4, 0);
    add_gid_v4(e.d, 0, 1);
    pd = new_pd(e.d);
    eng_cq_init(e.d, &cq, 6);
    key = alias_mr(e.d, pd, iova, qrs_alloc_zeroed(e.d, PAGE), 4 * MiB);
    memset(&q, 0, sizeof(q));
    qp_template(e.d, &q.c, RS_QPT_RC, pd, cq.h, cq.h);
    q.h = new_qp(e.d, &q.c);
    q.qpn = HINDEX(q.h);
    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    gid_v4(a.ah.dgid, 10, 0, 0, 2);
    memcpy(a.ah.dmac, pair_mac[1], 6);
    a.path_mtu = RS_MTU_4096;
    a.timeout = PAIR_TIMEOUT;
    eng_connect(e.d, &q, RS_QPT_RC, &a, 0);
    w = (struct rs_send_wqe_ctrl) {
        .wr_id = 1, .opcode = RS_WR_RDMA_WRITE, .num_sge = 1,
        .remote_addr = 0x1000, .rkey = 0x1234,
    };
    sge = (struct rs_sge) { .addr = iova, .length = 4 * MiB, .lkey = key };
    eng_post_send(e.d, &q, &w, &sge, 1);
    for (i = 0; i < 20; i++) {
        g_usleep(5000);
        assert_alive(e.d);
    }

    lanbuf = qrs_alloc_zeroed(e.d, nlan * 1024);
    for (i = 0; i < nlan; i++) {
        lan_make_frame(f, 1000, lan_bcast, i);
        qtest_memwrite(qrs_qts(e.d), lanbuf + i * 1024, f, 1000);
        lan_post(&e, &e.tx, lanbuf + i * 1024, 1000, 0);
    }
    lan_doorbell(&e, &e.tx);

    while (lan_seen < nlan) {
        len = lan_sock_recv(e.fd, f, RS_LAN_MAX_FRAME, RS_QOS_TIMEOUT_US);
        g_assert_cmpint(len, >, 14);
        if (lduw_be_p(f + 12) == 0x88b5) {
            lan_seen++;
        } else if (second_taken && !lan_seen) {
            roce_between++;
        }
        second_taken |= lan_done(&e, &e.tx, 1);
    }
    g_test_message("RoCE frames between the second LAN frame's hand-over "
                   "and the first LAN frame: %u", roce_between);
    g_assert_cmpuint(roce_between, <, 200);
    for (i = 0; i < nlan; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, i), ==, lan_ok(&e.tx, i));
    }
    assert_alive(e.d);
}

/*
 * announce-self (as after a migration): besides QEMU's RARP, a gratuitous
 * ARP for the IPv4 GID and an unsolicited neighbour advertisement with
 * the override flag for the IPv6 GID, each with the adapter's MAC.
 */
static void test_lan_announce(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_cmd_add_gid g6 = { .index = 2, .type = RS_GID_ROCE_V2_IPV6 };
    uint8_t f[RS_LAN_MAX_FRAME];
    bool arp = false, na = false;
    uint32_t got, sum, i;
    ssize_t len;
    LanEnv e;

    lan_setup(&e, obj, data, 0, 0);
    add_gid_v4(e.d, 0, 1);
    gid_v6(g6.gid, 0x70);
    RS_ASSERT_OK(qrs_add_gid(e.d, &g6, &got));
    qtest_qmp_assert_success(qrs_qts(e.d), "{ 'execute': 'announce-self',"
                             "  'arguments': { 'initial': 50, 'max': 550,"
                             "    'rounds': 1, 'step': 100 } }");
    while ((!arp || !na) &&
           (len = lan_sock_recv(e.fd, f, sizeof(f), RS_QOS_TIMEOUT_US)) > 0) {
        g_assert_cmpmem(f + 6, 6, qos_mac, 6);
        if (lduw_be_p(f + 12) == 0x0806) {
            g_assert_cmpint(len, ==, 60);
            g_assert_cmpmem(f, 6, lan_bcast, 6);
            g_assert_cmphex(lduw_be_p(f + 20), ==, 1);
            g_assert_cmpmem(f + 22, 6, qos_mac, 6);
            g_assert_cmphex(ldl_be_p(f + 28), ==, 0x0a000001);
            g_assert_cmphex(ldl_be_p(f + 38), ==, 0x0a000001);
            arp = true;
        } else if (lduw_be_p(f + 12) == 0x86dd) {
            g_assert_cmpint(len, ==, 86);
            g_assert_cmphex(f[20], ==, 58);
            g_assert_cmpuint(f[21], ==, 255);
            g_assert_cmpmem(f + 22, 16, g6.gid, 16);
            g_assert_cmphex(f[54], ==, 136);
            g_assert_cmphex(ldl_be_p(f + 58), ==, 0x20000000);
            g_assert_cmpmem(f + 62, 16, g6.gid, 16);
            g_assert_cmphex(f[78], ==, 2);
            g_assert_cmpmem(f + 80, 6, qos_mac, 6);
            /* ICMPv6 checksum: pseudo-header and message sum to 0xffff. */
            sum = 32 + 58;
            for (i = 22; i < 54; i += 2) {
                sum += lduw_be_p(f + i);
            }
            for (i = 54; i < 86; i += 2) {
                sum += lduw_be_p(f + i);
            }
            while (sum >> 16) {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            g_assert_cmphex(sum, ==, 0xffff);
            na = true;
        }
    }
    g_assert_true(arp);
    g_assert_true(na);
    assert_alive(e.d);
}

static void register_lan_tests(void)
{
    QOSGraphTestOptions lan = { .before = lan_before };
    QOSGraphTestOptions lan_wide = { .before = lan_wide_before };
    QOSGraphTestOptions lan_log = { .before = lan_log_before };

    qos_add_test("lan/tx", "rdma-session", test_lan_tx, &lan);
    qos_add_test("lan/tx-backpressure", "rdma-session",
                 test_lan_tx_backpressure, &lan);
    qos_add_test("lan/rx", "rdma-session", test_lan_rx, &lan);
    qos_add_test("lan/rx-filter", "rdma-session", test_lan_rx_filter, &lan);
    qos_add_test("lan/rx-backpressure", "rdma-session",
                 test_lan_rx_backpressure, &lan);
    qos_add_test("lan/bad-input", "rdma-session", test_lan_bad_input, &lan);
    qos_add_test("lan/link", "rdma-session", test_lan_link, &lan);
    qos_add_test("lan/announce", "rdma-session", test_lan_announce, &lan);
    qos_add_test("lan/roce-backpressure", "rdma-session",
                 test_lan_roce_backpressure, &lan_wide);
    qos_add_test("lan/rx-missed", "rdma-session", test_lan_rx_missed, &lan);
    qos_add_test("lan/log-rate", "rdma-session", test_lan_log_rate, &lan_log);
}

libqos_init(register_lan_tests);
