/*
 * rdma-session qtests: the LAN test environment (a socket backend the
 * test reads and writes frames on, TX and RX descriptor rings)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

static void lan_sockets_free(void *p)
{
    int *sv = p;

    close(sv[0]);
    close(sv[1]);
    g_free(sv);
}

void *lan_before(GString *cmd_line, void *arg)
{
    int *sv = g_new(int, 2);

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    qrs_qos_socket_netdev(cmd_line, sv[1]);
    g_test_queue_destroy(lan_sockets_free, sv);
    /*
     * The fd number may be the previous test's: make sure QEMU restarts
     * with this socket instead of keeping the old one.
     */
    qos_invalidate_command_line();
    return sv;
}

void lan_sock_send(int fd, const void *frame, uint32_t len)
{
    uint32_t be = cpu_to_be32(len);
    struct iovec iov[2] = {
        { .iov_base = &be, .iov_len = sizeof(be) },
        { .iov_base = (void *)frame, .iov_len = len },
    };

    g_assert_cmpint(iov_send(fd, iov, 2, 0, sizeof(be) + len), ==,
                    sizeof(be) + len);
}

ssize_t lan_sock_recv(int fd, uint8_t *buf, size_t max,
                      int64_t timeout_us)
{
    int64_t end = g_get_monotonic_time() + timeout_us;
    GPollFD pfd = { .fd = fd, .events = G_IO_IN };
    uint32_t be;
    size_t len;

    do {
        int64_t left = end - g_get_monotonic_time();

        if (left < 0 || g_poll(&pfd, 1, left / 1000) != 1) {
            return -1;
        }
        g_assert_cmpint(recv(fd, &be, sizeof(be), MSG_WAITALL), ==,
                        sizeof(be));
        len = be32_to_cpu(be);
        g_assert_cmpuint(len, <=, max);
        g_assert_cmpint(recv(fd, buf, len, MSG_WAITALL), ==, len);
    } while (len >= 14 && buf[12] == 0x80 && buf[13] == 0x35);
    return len;
}

void lan_expect_frame(LanEnv *e, const uint8_t *expect, size_t len)
{
    g_autofree uint8_t *buf = g_malloc(RS_LAN_MAX_FRAME);
    ssize_t got = lan_sock_recv(e->fd, buf, RS_LAN_MAX_FRAME,
                                RS_QOS_TIMEOUT_US);

    g_assert_cmpint(got, ==, len);
    g_assert_cmpmem(buf, got, expect, len);
}

void lan_expect_quiet(LanEnv *e)
{
    uint8_t buf[RS_LAN_MAX_FRAME];

    g_assert_cmpint(lan_sock_recv(e->fd, buf, sizeof(buf), LAN_QUIET_US),
                    ==, -1);
}

void lan_make_frame(uint8_t *f, size_t len, const uint8_t *dst,
                    uint8_t seed)
{
    size_t i;

    g_assert_cmpuint(len, >=, 14);
    memcpy(f, dst, 6);
    memcpy(f + 6, qos_mac, 6);
    f[12] = 0x88;
    f[13] = 0xb5;               /* local experimental ethertype */
    for (i = 14; i < len; i++) {
        f[i] = seed + i * 7 + (i >> 8);
    }
}

void lan_ring_init(LanEnv *e, LanRing *r, uint8_t type, uint8_t log,
                   uint16_t vector)
{
    uint32_t h = ~0u;

    r->ring = qrs_alloc_zeroed(e->d, sizeof(struct rs_lan_desc) << log);
    r->type = type;
    r->log = log;
    r->pi = 0;
    RS_ASSERT_OK(qrs_create_lan_queue(e->d, type, r->ring, log, vector, &h));
    g_assert_cmpuint(h, ==, type);
}

static uint64_t lan_desc_addr(const LanRing *r, uint32_t index)
{
    return r->ring + (uint64_t)(index & ((1u << r->log) - 1)) *
                     sizeof(struct rs_lan_desc);
}

uint32_t lan_post(LanEnv *e, LanRing *r, uint64_t addr, uint16_t len,
                  uint8_t flags)
{
    struct rs_lan_desc desc = {
        .addr = cpu_to_le64(addr),
        .len = cpu_to_le16(len),
        .flags = flags,
        .status = qrs_ring_phase(r->pi, r->log) ^ RS_LAN_S_PHASE,
    };

    qtest_memwrite(qrs_qts(e->d), lan_desc_addr(r, r->pi), &desc,
                   sizeof(desc));
    return r->pi++;
}

void lan_doorbell(LanEnv *e, LanRing *r)
{
    qrs_db_writel(e->d, 0, r->type == RS_LAN_TXQ ? RS_DB_LAN_TX :
                  RS_DB_LAN_RX, r->pi & RS_DB_INDEX_MASK);
}

static void lan_read_desc(LanEnv *e, LanRing *r, uint32_t index,
                          struct rs_lan_desc *desc)
{
    qtest_memread(qrs_qts(e->d), lan_desc_addr(r, index), desc,
                  sizeof(*desc));
    desc->addr = le64_to_cpu(desc->addr);
    desc->len = le16_to_cpu(desc->len);
}

bool lan_done(LanEnv *e, LanRing *r, uint32_t index)
{
    struct rs_lan_desc desc;

    lan_read_desc(e, r, index, &desc);
    return (desc.status & RS_LAN_S_PHASE) == qrs_ring_phase(index, r->log);
}

struct rs_lan_desc lan_wait(LanEnv *e, LanRing *r, uint32_t index)
{
    int64_t end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    struct rs_lan_desc desc;

    while (!lan_done(e, r, index)) {
        if (g_get_monotonic_time() > end) {
            g_error("%s descriptor %u not written back",
                    r->type == RS_LAN_TXQ ? "TX" : "RX", index);
        }
        g_usleep(1000);
    }
    lan_read_desc(e, r, index, &desc);
    return desc;
}

uint8_t lan_status(LanEnv *e, LanRing *r, uint32_t index)
{
    return lan_wait(e, r, index).status;
}

uint8_t lan_ok(LanRing *r, uint32_t index)
{
    return qrs_ring_phase(index, r->log);
}

void lan_setup(LanEnv *e, void *obj, void *data, uint8_t tx_log,
               uint8_t rx_log)
{
    QRdmaSession *d = admin_setup(obj);
    int v;

    memset(e, 0, sizeof(*e));
    e->d = d;
    e->fd = ((int *)data)[0];
    e->msi = qrs_alloc_zeroed(d, PAGE);
    for (v = 0; v < DEF_NUM_MSIX; v++) {
        qrs_msix_set_vector(d, v, e->msi + v * 4, 0x1a40000 + v, false);
    }
    if (tx_log) {
        lan_ring_init(e, &e->tx, RS_LAN_TXQ, tx_log, LAN_TX_VECTOR);
    }
    if (rx_log) {
        lan_ring_init(e, &e->rx, RS_LAN_RXQ, rx_log, LAN_RX_VECTOR);
    }
}

const uint8_t lan_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

void lan_expect_rx(LanEnv *e, uint32_t index, uint64_t buf,
                   size_t bufsize, const uint8_t *f, size_t len)
{
    struct rs_lan_desc desc = lan_wait(e, &e->rx, index);
    g_autofree uint8_t *got = g_malloc(bufsize);

    g_assert_cmphex(desc.status, ==, lan_ok(&e->rx, index));
    g_assert_cmpuint(desc.len, ==, len);
    g_assert_cmphex(desc.addr, ==, buf);
    g_assert_cmphex(desc.flags, ==, 0);
    qtest_memread(qrs_qts(e->d), buf, got, bufsize);
    g_assert_cmpmem(got, len, f, len);
    /* the rest of the buffer is untouched */
    g_assert_true(is_filled(e->d, buf + len, 0xee, bufsize - len));
}

uint64_t lan_rx_buf(LanEnv *e, size_t size)
{
    uint64_t buf = qrs_alloc_zeroed(e->d, size);

    fill(e->d, buf, 0xee, size);
    return buf;
}
