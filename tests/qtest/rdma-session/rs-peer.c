/*
 * rdma-session qtests: the test-side RoCE peer (two adapters on wires
 * the test carries) and frame helpers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

const uint8_t pair_mac[2][6] = {
    RS_QOS_MAC, { 0x52, 0x54, 0x00, 0x12, 0x34, 0x71 },
};

const uint32_t pair_psn[2] = { 0xfffffe, 0x000100 };

static void pair_sockets_free(void *opaque)
{
    PairSockets *s = opaque;
    int i;

    for (i = 0; i < 2; i++) {
        close(s->test[i]);
        close(s->qemu[i]);
        if (s->old[i] >= 0) {
            close(s->old[i]);
        }
    }
    g_free(s->b_props);
    g_free(s->a_props);
    g_free(s);
}

void pair_cmd_line(GString *cmd_line, const PairSockets *s)
{
    const char *a = strstr(cmd_line->str, RS_QOS_DEVICE_OPTS);

    g_assert_nonnull(a);
    if (s->a_props) {
        g_string_insert(cmd_line, a - cmd_line->str +
                        strlen(RS_QOS_DEVICE_OPTS), s->a_props);
    }
    qrs_qos_socket_netdev(cmd_line, s->qemu[0]);
    if (s->b_hub) {
        /* B's wire, B and a virtio-net NIC on one hub. */
        g_string_append_printf(cmd_line,
                               " -netdev socket,fd=%d,id=rswire1"
                               " -netdev hubport,id=rshub1,hubid=7,"
                               "netdev=rswire1"
                               " -netdev hubport,id=" PAIR_NETDEV ",hubid=7"
                               " -netdev hubport,id=rsvnet,hubid=7"
                               " -device virtio-net-pci,netdev=rsvnet,"
                               "mac=" PAIR_VNET_MAC_STR ",addr=0x%x.0",
                               s->qemu[1], PAIR_VNET_SLOT);
    } else {
        g_string_append_printf(cmd_line, " -netdev socket,fd=%d,id="
                               PAIR_NETDEV, s->qemu[1]);
    }
    g_string_append_printf(cmd_line, " -device rdma-session,netdev="
                           PAIR_NETDEV ",mac=" PAIR_MAC_STR
                           ",addr=0x%x.0,bundle=off%s ",
                           PAIR_SLOT, s->b_props);
}

static void *pair_before_wires(GString *cmd_line, const char *a_props,
                               const char *b_props, bool b_hub)
{
    PairSockets *s = g_new0(PairSockets, 1);
    int i, sv[2];

    for (i = 0; i < 2; i++) {
        g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
        qemu_set_cloexec(sv[0]);
        s->test[i] = sv[0];
        s->qemu[i] = sv[1];
        s->old[i] = -1;
    }
    s->a_props = g_strdup(a_props);
    s->b_props = g_strdup(b_props ? b_props : "");
    s->b_hub = b_hub;
    pair_cmd_line(cmd_line, s);
    g_test_queue_destroy(pair_sockets_free, s);
    qos_invalidate_command_line();
    return s;
}

void *pair_before_props(GString *cmd_line, const char *a_props,
                        const char *b_props)
{
    return pair_before_wires(cmd_line, a_props, b_props, false);
}

void *pair_before_hub(GString *cmd_line, const char *a_props,
                      const char *b_props)
{
    return pair_before_wires(cmd_line, a_props, b_props, true);
}

void *pair_before(GString *cmd_line, void *arg)
{
    /* @arg: more properties for adapter B, or NULL. */
    return pair_before_props(cmd_line, NULL, arg);
}

/* CRC-32 (IEEE 802.3, reflected), as the ICRC uses it. */
static uint32_t crc32_ieee(uint32_t crc, const uint8_t *p, size_t n)
{
    int k;

    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
    }
    return ~crc;
}

/*
 * ICRC of a RoCEv2/IPv4 frame (IBTA A17.8): over 8 bytes of ones, the
 * IPv4 header with TOS, TTL and checksum as ones, the UDP header with its
 * checksum as ones, the BTH with byte 4 as ones, and the rest up to the
 * ICRC; stored little endian.
 */
uint32_t roce_icrc(const uint8_t *f, size_t icrc_off)
{
    uint8_t ph[8 + ROCE_EXT - 14];
    uint32_t crc;

    memset(ph, 0xff, 8);
    memcpy(ph + 8, f + 14, ROCE_EXT - 14);
    ph[8 + 1] = ph[8 + 8] = ph[8 + 10] = ph[8 + 11] = 0xff;
    ph[8 + 20 + 6] = ph[8 + 20 + 7] = 0xff;
    ph[8 + 28 + 4] = 0xff;
    crc = crc32_ieee(0, ph, sizeof(ph));
    return crc32_ieee(crc, f + ROCE_EXT, icrc_off - ROCE_EXT);
}

uint32_t roce_icrc_rxe_flush(const uint8_t *f, size_t icrc_off)
{
    return crc32_ieee(roce_icrc(f, icrc_off), f + ROCE_BTH,
                      icrc_off - ROCE_BTH);
}

static uint16_t ip4_csum(const uint8_t *h)
{
    uint32_t sum = 0;
    int i;

    for (i = 0; i < 20; i += 2) {
        sum += lduw_be_p(h + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

void roce_reseal(uint8_t *f, size_t len)
{
    stw_be_p(f + 16, len - 14);
    stw_be_p(f + 14 + 20 + 4, len - 14 - 20);
    stw_be_p(f + 24, 0);
    stw_be_p(f + 24, ip4_csum(f + 14));
    stl_le_p(f + len - 4, roce_icrc(f, len - 4));
}

size_t roce_frame(uint8_t *f, const uint8_t *dmac, uint32_t sip,
                  uint32_t dip, uint8_t op, uint32_t dqpn, uint32_t psn,
                  const void *ext, size_t extlen)
{
    size_t len = ROCE_EXT + extlen + 4;

    memset(f, 0, len);
    memcpy(f, dmac, 6);
    f[6] = 0x02;
    stl_be_p(f + 8, sip);               /* 02:00:<its address> */
    stw_be_p(f + 12, 0x0800);
    f[14] = 0x45;
    f[14 + 8] = 64;
    f[14 + 9] = 17;
    stl_be_p(f + 14 + 12, sip);
    stl_be_p(f + 14 + 16, dip);
    stw_be_p(f + 14 + 20, 0xc000 | (sip & 0x3fff));
    stw_be_p(f + 14 + 20 + 2, 4791);
    f[ROCE_BTH] = op;
    stw_be_p(f + ROCE_BTH + 2, 0xffff);
    stl_be_p(f + ROCE_BTH + 4, dqpn & 0xffffff);
    stl_be_p(f + ROCE_BTH + 8, psn & 0xffffff);
    if (extlen) {
        memcpy(f + ROCE_EXT, ext, extlen);
    }
    roce_reseal(f, len);
    return len;
}

size_t roce_bundle(uint8_t *out, const uint8_t *const *in,
                   const size_t *len, unsigned n)
{
    size_t off = ROCE_EXT + 4;
    unsigned k;

    memcpy(out, in[0], ROCE_BTH);       /* its Ethernet, IPv4, UDP */
    memset(out + ROCE_BTH, 0, off - ROCE_BTH);
    out[ROCE_BTH] = OP_BUNDLE;
    stw_be_p(out + ROCE_BTH + 2, 0xffff);
    stl_be_p(out + ROCE_BTH + 4, 1);
    stw_be_p(out + ROCE_EXT, n);
    for (k = 0; k < n; k++) {
        stw_be_p(out + off, len[k]);
        memcpy(out + off + 2, in[k], len[k]);
        off += 2 + len[k];
    }
    stw_be_p(out + 16, off - 14);
    stw_be_p(out + 14 + 6, 0);
    stw_be_p(out + 24, 0);
    stw_be_p(out + 24, ip4_csum(out + 14));
    stw_be_p(out + 14 + 20 + 4, off - 14 - 20);
    stw_be_p(out + 14 + 20 + 6, 0);
    return off;
}

/*
 * Does AETH follow the BTH of this opcode (ACK, READ response, the
 * page-fault PAUSE and RESUME)?
 */
static bool roce_has_aeth(uint8_t op)
{
    if (op == OP_ODP_PAUSE || op == OP_ODP_RESUME ||
        op == OP_DC_CONNECT_REPLY) {
        return true;
    }
    if ((op & 0xe0) == OP_XRC) {
        op &= 0x1f;             /* XRC's responses are RC's */
    }
    return op == OP_READ_RESP_FIRST || op == OP_READ_RESP_LAST ||
           op == OP_READ_RESP_ONLY || op == OP_ACK || op == OP_ACK + 1;
}

/* A frame adapter @from put on the wire: well formed RoCEv2 from it. */
static void pair_check_frame(int from, const uint8_t *f, size_t len)
{
    static const uint8_t mc_mac[3] = { 0x01, 0x00, 0x5e };
    bool mcast = f[14 + 16] >> 4 == 0xe;   /* 224.0.0.0/4 */

    g_assert_cmpuint(len, >=, ROCE_EXT + 4);
    if (mcast) {
        /* UD multicast: the group's Ethernet address (RFC 1112). */
        g_assert_cmpmem(f, 3, mc_mac, 3);
        g_assert_cmpuint(f[3], ==, f[14 + 17] & 0x7f);
        g_assert_cmpmem(f + 4, 2, f + 14 + 18, 2);
        g_assert_cmphex(ldl_be_p(f + ROCE_BTH + 4) & 0xffffff, ==, 0xffffff);
    } else {
        g_assert_cmpmem(f, 6, pair_mac[!from], 6);
    }
    g_assert_cmpmem(f + 6, 6, pair_mac[from], 6);
    g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
    g_assert_cmphex(f[14], ==, 0x45);
    g_assert_cmpuint(lduw_be_p(f + 16), ==, len - 14);
    g_assert_cmphex(f[14 + 9], ==, 17);
    g_assert_cmphex(ip4_csum(f + 14), ==, 0);
    g_assert_cmpuint(f[14 + 12], ==, 10);
    g_assert_cmpuint(f[14 + 15], ==, from + 1);
    if (!mcast) {
        g_assert_cmpuint(f[14 + 19], ==, !from + 1);
    }
    g_assert_cmpuint(lduw_be_p(f + 14 + 20 + 2), ==, 4791);
    g_assert_cmpuint(lduw_be_p(f + 14 + 20 + 4), ==, len - 14 - 20);
    g_assert_cmphex(f[ROCE_BTH + 1] & 0xf, ==, 0);     /* TVer */
    if (f[ROCE_BTH] == 0x1c &&
        ldl_le_p(f + len - 4) == roce_icrc_rxe_flush(f, len - 4)) {
        return;         /* a FLUSH as x-rxe-flush-icrc sends it */
    }
    g_assert_cmphex((uint32_t)ldl_le_p(f + len - 4), ==,
                    roce_icrc(f, len - 4));
}

/*
 * After a migration the destination's adapters tell the network where
 * their GIDs are now (QEMU's announce-self, on a real-time timer): a
 * gratuitous ARP per IPv4 GID.  Is this one of them?
 */
static bool pair_is_announce(int from, const uint8_t *f, size_t len)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    if (len < 42 || lduw_be_p(f + 12) != 0x0806) {
        return false;
    }
    g_assert_cmpmem(f, 6, bcast, 6);
    g_assert_cmpmem(f + 6, 6, pair_mac[from], 6);
    g_assert_cmpuint(lduw_be_p(f + 20), ==, 1);
    g_assert_cmpmem(f + 22, 6, pair_mac[from], 6);
    g_assert_cmphex(ldl_be_p(f + 28), ==, ldl_be_p(f + 38));
    g_assert_cmpuint(f[28], ==, 10);
    g_assert_cmpuint(f[31], ==, from + 1);
    return true;
}

/* Log frame @f of @len bytes from adapter @i (checked); 1 if dropped. */
static bool pair_log(Pair *pr, int i, const uint8_t *f, size_t len)
{
    pair_check_frame(i, f, len);
    g_assert_cmpuint(pr->nops[i], <, PAIR_OPS);
    pr->op[i][pr->nops[i]] = f[ROCE_BTH];
    pr->syn[i][pr->nops[i]] = roce_has_aeth(f[ROCE_BTH]) ?
                              f[ROCE_EXT] : 0;
    pr->psn[i][pr->nops[i]] = ldl_be_p(f + ROCE_BTH + 8) & 0xffffff;
    pr->sport[i][pr->nops[i]] = lduw_be_p(f + ROCE_BTH - 8);
    pr->seq[i][pr->nops[i]] = pr->nseq++;
    pr->nops[i]++;
    if (f[ROCE_BTH] == OP_BUNDLE_HELLO && len > HELLO_SMALL) {
        pr->hello_big[i]++;
    }
    if (len <= sizeof(pr->last[i])) {
        memcpy(pr->last[i], f, len);    /* a HELLO is larger */
        pr->last_len[i] = len;
    }
    return pr->nops[i] <= 64 && pr->drop[i] >> (pr->nops[i] - 1) & 1;
}

/*
 * A bundle from adapter @i (docs/specs: "Bundles on the wire"): its
 * outer headers, then every frame in it, logged as if it came alone.
 */
static void pair_unbundle(Pair *pr, int i, const uint8_t *f, size_t len)
{
    size_t off = ROCE_EXT + 4;
    unsigned n, count;

    g_assert_cmpmem(f, 6, pair_mac[!i], 6);
    g_assert_cmpmem(f + 6, 6, pair_mac[i], 6);
    g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
    g_assert_cmpuint(lduw_be_p(f + 16), ==, len - 14);
    g_assert_cmphex(ip4_csum(f + 14), ==, 0);
    g_assert_cmpuint(lduw_be_p(f + 14 + 20 + 4), ==, len - 14 - 20);
    g_assert_cmpuint(len, <=, 60000);
    count = lduw_be_p(f + ROCE_EXT);
    g_assert_cmpuint(count, >=, 2);
    for (n = 0; n < count; n++) {
        size_t ilen = lduw_be_p(f + off);

        g_assert_cmpuint(off + 2 + ilen, <=, len);
        g_assert_false(pair_log(pr, i, f + off + 2, ilen));
        /* Every frame in it has the outer addresses and source port. */
        g_assert_cmpmem(f + off + 2, 12, f, 12);
        g_assert_cmpmem(f + off + 2 + 26, 10, f + 26, 10);
        off += 2 + ilen;
    }
    g_assert_cmpuint(off, ==, len);
    pr->bundles[i]++;
    pr->bundled[i] += count;
}

void pair_handle(Pair *pr, int i, size_t len)
{
    unsigned k;

    if (pr->to && pair_is_announce(i, pr->frame, len)) {
        pr->announced[i]++;
        return;
    }
    if (pr->raw[i]) {
        uint8_t op = len > ROCE_BTH ? pr->frame[ROCE_BTH] : 0;

        pr->raw_bytes[i] += len;
        pr->raw_frames[i]++;
        pr->raw_op[i][op]++;
        if (len > ROCE_EXT && roce_has_aeth(op)) {
            pr->raw_aeth[i][pr->frame[ROCE_EXT]]++;
        }
        if (op == OP_BUNDLE_HELLO) {
            pr->raw_hello_max[i] = MAX(pr->raw_hello_max[i], len);
            if (len == HELLO_SMALL) {
                memcpy(pr->raw_hello[i], pr->frame, len);
            }
        }
        return;
    }
    if (len > ROCE_BTH && pr->frame[ROCE_BTH] == OP_BUNDLE) {
        pair_unbundle(pr, i, pr->frame, len);
        if (pr->drop_bundle[i] >> (pr->bundles[i] - 1) & 1) {
            return;
        }
    } else if (pair_log(pr, i, pr->frame, len)) {
        return;
    }
    for (k = 0; k < ARRAY_SIZE(pr->blackhole[i]); k++) {
        if (pr->blackhole[i][k] &&
            pr->blackhole[i][k] == pr->sport[i][pr->nops[i] - 1]) {
            return;
        }
    }
    if (pr->hold[i]) {
        g_queue_push_tail(&pr->held[i],
                          g_byte_array_new_take(g_memdup2(pr->frame, len),
                                                len));
    } else {
        lan_sock_send(pr->fd[!i], pr->frame, len);
    }
}

void pair_pump(void *opaque)
{
    Pair *pr = opaque;
    int i;

    for (i = 0; i < 2; i++) {
        GPollFD pfd = { .fd = pr->fd[i], .events = G_IO_IN };
        ssize_t len;

        while (g_poll(&pfd, 1, 0) == 1) {
            len = lan_sock_recv(pr->fd[i], pr->frame, RS_LAN_MAX_FRAME,
                                RS_QOS_TIMEOUT_US);
            g_assert_cmpint(len, >, 0);
            pair_handle(pr, i, len);
        }
    }
}

void pair_log_reset(Pair *pr)
{
    pair_pump(pr);
    pr->nops[0] = pr->nops[1] = 0;
    pr->nseq = 0;
    pr->drop[0] = pr->drop[1] = 0;
    pr->bundles[0] = pr->bundles[1] = 0;
    pr->bundled[0] = pr->bundled[1] = 0;
    pr->drop_bundle[0] = pr->drop_bundle[1] = 0;
    pr->hello_big[0] = pr->hello_big[1] = 0;
    pr->raw_bytes[0] = pr->raw_bytes[1] = 0;
    pr->raw_frames[0] = pr->raw_frames[1] = 0;
    memset(pr->raw_op, 0, sizeof(pr->raw_op));
    memset(pr->raw_aeth, 0, sizeof(pr->raw_aeth));
    pr->raw_hello_max[0] = pr->raw_hello_max[1] = 0;
}

void pair_expect_ops(Pair *pr, int from, const uint8_t *ops,
                     unsigned n)
{
    unsigned i;

    pair_pump(pr);
    g_assert_cmpuint(pr->nops[from], ==, n);
    for (i = 0; i < n; i++) {
        g_assert_cmphex(pr->op[from][i], ==, ops[i]);
    }
}

void pair_wait_frames(Pair *pr, int from, unsigned n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    for (pair_pump(pr); pr->nops[from] < n; pair_pump(pr)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

void pair_wait_raw(Pair *pr, int from, uint8_t op, unsigned n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    g_assert_true(pr->raw[from]);
    for (;;) {
        pair_pump(pr);
        if (pr->raw_op[from][op] >= n) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmpuint(pr->raw_op[from][op], ==, n);
}

GByteArray *pair_take(Pair *pr, int from)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    g_assert_true(pr->hold[from]);
    for (;;) {
        pair_pump(pr);
        if (!g_queue_is_empty(&pr->held[from])) {
            return g_queue_pop_head(&pr->held[from]);
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(qrs_qts(pr->p[0].d), 1000);
    }
}

void pair_inject(Pair *pr, int to, const uint8_t *f, size_t len)
{
    lan_sock_send(pr->fd[to], f, len);
}

void pair_poll(Pair *pr, int i, struct rs_cqe *cqe)
{
    eng_poll(pr->p[i].d, &pr->p[i].cq, cqe, pair_pump, pr);
}

void pair_cq_empty(Pair *pr, int i)
{
    struct rs_cqe cqe;

    pair_pump(pr);
    g_assert_false(eng_cq_peek(pr->p[i].d, &pr->p[i].cq, &cqe));
}

void assert_cqe(const struct rs_cqe *cqe, uint64_t wr_id,
                uint8_t status, uint8_t opcode, uint32_t qpn)
{
    g_assert_cmphex(cqe->wr_id, ==, wr_id);
    g_assert_cmpuint(cqe->status, ==, status);
    g_assert_cmphex(cqe->opcode, ==, opcode);
    g_assert_cmpuint(cqe->qpn, ==, qpn);
}

void peer_fill(Peer *p, uint32_t off, uint32_t len, uint8_t seed)
{
    uint32_t i;

    g_assert_cmpuint(off + len, <=, PAIR_BUF);
    for (i = 0; i < len; i++) {
        p->img[off + i] = seed + i * 13 + (i >> 8) * 7;
    }
    qtest_memwrite(qrs_qts(p->d), p->buf + off, p->img + off, len);
}

void peer_check(Peer *p)
{
    g_autofree uint8_t *got = g_malloc(PAIR_BUF);
    uint32_t i;

    qtest_memread(qrs_qts(p->d), p->buf, got, PAIR_BUF);
    for (i = 0; i < PAIR_BUF && got[i] == p->img[i]; i++) {
        continue;
    }
    if (i < PAIR_BUF) {
        g_test_message("buffer byte 0x%x is 0x%x, expected 0x%x", i, got[i],
                       p->img[i]);
    }
    g_assert_cmpuint(i, ==, PAIR_BUF);
}

void peer_dont_care(Peer *p, uint32_t off, uint32_t len)
{
    qtest_memread(qrs_qts(p->d), p->buf + off, p->img + off, len);
}

struct rs_sge peer_sge(Peer *p, uint32_t off, uint32_t len)
{
    return (struct rs_sge) {
        .addr = p->buf + off, .length = len, .lkey = p->key[0],
    };
}

void pair_setup(Pair *pr, void *obj, void *data,
                QGuestAllocator *alloc)
{
    QRdmaSession *a = obj;
    int i;

    memset(pr, 0, sizeof(*pr));
    pr->sock = data;
    qrs_attach_new(&pr->b, a->dev.bus, QPCI_DEVFN(PAIR_SLOT, 0), alloc);
    pr->p[0].d = a;
    pr->p[1].d = &pr->b;
    pr->frame = g_malloc(RS_LAN_MAX_FRAME);
    for (i = 0; i < 2; i++) {
        Peer *p = &pr->p[i];

        pr->fd[i] = ((PairSockets *)data)->test[i];
        g_queue_init(&pr->held[i]);
        admin_setup(p->d);
        add_gid_v4(p->d, 0, i + 1);
        p->pd = new_pd(p->d);
        eng_cq_init(p->d, &p->cq, PAIR_CQ_LOG);
        p->buf = loop_buf(p->d, PAIR_BUF);
        p->key[0] = eng_mr(p->d, p->pd, 0, p->buf, PAIR_BUF, STD_ACCESS);
        p->img = g_malloc(PAIR_BUF);
        peer_fill(p, 0, PAIR_BUF, 0x40 * (i + 1));
    }
}

void *pair_small_sndbuf_before(GString *cmd_line, void *arg)
{
    PairSockets *s = pair_before(cmd_line, arg);
    int v = 4096;

    g_assert_cmpint(setsockopt(s->qemu[1], SOL_SOCKET, SO_SNDBUF, &v,
                               sizeof(v)), ==, 0);
    return s;
}

void pair_teardown(Pair *pr)
{
    int i;

    pair_pump(pr);
    for (i = 0; i < 2; i++) {
        g_assert_true(g_queue_is_empty(&pr->held[i]));
        assert_alive(pr->p[i].d);
        g_free(pr->p[i].img);
    }
    qrs_detach(&pr->b);
    if (pr->to) {
        qpci_free_pc(pr->to_bus);
        qtest_quit(pr->to);
    }
    g_free(pr->frame);
}

void pair_qp(Pair *pr, int i, LoopQp *q, uint8_t type, uint32_t pd)
{
    Peer *p = &pr->p[i];

    memset(q, 0, sizeof(*q));
    qp_template(p->d, &q->c, type, pd, p->cq.h, p->cq.h);
    q->c.max_send_sge = q->c.max_recv_sge = 4;
    q->c.sq_addr = qrs_alloc_zeroed(p->d, qrs_qp_sq_bytes(&q->c));
    q->c.rq_addr = qrs_alloc_zeroed(p->d, qrs_qp_rq_bytes(&q->c));
    q->h = new_qp(p->d, &q->c);
    q->qpn = HINDEX(q->h);
}

void pair_ud(Pair *pr, LoopQp q[2])
{
    int i;

    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q[i], RS_QPT_UD, pr->p[i].pd);
        qp_walk(pr->p[i].d, q[i].h, RS_QPT_UD, RS_QPS_RTS);
    }
}

void pair_attr(const LoopQp q[2], int i, uint32_t gid, struct rs_qp_attr *a)
{
    std_attr(a, RS_QPS_RESET, RS_QPS_RESET);
    gid_v4(a->ah.dgid, 10, 0, gid, !i + 1);
    memcpy(a->ah.dmac, pair_mac[!i], 6);
    a->ah.gid_index = gid;
    a->dest_qp_num = q[!i].qpn;
    a->sq_psn = pair_psn[i];
    a->rq_psn = pair_psn[!i];
    a->timeout = PAIR_TIMEOUT;
}

void pair_rc_av(Pair *pr, LoopQp q[2], uint32_t gid, uint16_t resp_access,
                uint8_t path_mtu, const uint32_t flow_label[2])
{
    struct rs_qp_attr a;
    int i;

    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q[i], RS_QPT_RC, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        pair_attr(q, i, gid, &a);
        a.access_flags = i ? resp_access : STD_ACCESS;
        a.path_mtu = path_mtu;
        if (flow_label) {
            a.ah.flow_label = cpu_to_le32(flow_label[i]);
        }
        eng_connect(pr->p[i].d, &q[i], RS_QPT_RC, &a, 0);
    }
}

void pair_rc_mtu(Pair *pr, LoopQp q[2], uint32_t gid,
                 uint16_t resp_access, uint8_t path_mtu)
{
    pair_rc_av(pr, q, gid, resp_access, path_mtu, NULL);
}

void pair_rc(Pair *pr, LoopQp q[2], uint32_t gid,
             uint16_t resp_access)
{
    pair_rc_mtu(pr, q, gid, resp_access, RS_MTU_1024);
}

void pair_post(Pair *pr, int i, LoopQp *q, uint8_t opcode,
               uint64_t wr_id, const struct rs_sge *sge, uint8_t n,
               uint64_t raddr, uint32_t rkey, uint32_t imm)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = opcode,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = n,
        .imm_or_inv = imm,
        .remote_addr = raddr,
        .rkey = rkey,
    };

    eng_post_send(pr->p[i].d, q, &w, sge, n);
}

void img_move(Peer *dst, uint32_t doff, Peer *src, uint32_t soff,
              uint32_t len)
{
    memmove(dst->img + doff, src->img + soff, len);
}

ssize_t roce_recv(LanEnv *e, uint8_t *buf, uint8_t opcode)
{
    ssize_t n = lan_sock_recv(e->fd, buf, RS_LAN_MAX_FRAME,
                              RS_QOS_TIMEOUT_US);

    g_assert_cmpint(n, >, 42 + 12);
    g_assert_cmphex(buf[42], ==, opcode);
    return n;
}

/* 10.0.0.2 becomes ours (VNI 0, the MRs' table): frames to it come back. */
static void add_gid_peer(QRdmaSession *d)
{
    struct rs_cmd_add_gid c = {
        .index = 1,
        .type = RS_GID_ROCE_V2_IPV4,
        .vni = 0,
    };
    uint32_t got = ~0u;

    gid_v4(c.gid, 10, 0, 0, 2);
    RS_ASSERT_OK(qrs_add_gid(d, &c, &got));
}

void wire_peer(Loop *l)
{
    struct rs_qp_attr a;

    add_gid_peer(l->d);
    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    gid_v4(a.ah.dgid, 10, 0, 0, 3);
    memcpy(a.ah.dmac, qos_mac, 6);
    a.ah.gid_index = 1;
    a.dest_qp_num = l->a.qpn;
    a.rq_psn = a.sq_psn = LOOP_PSN;
    a.access_flags = STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC;
    eng_connect(l->d, &l->b, l->type, &a, 0);
}

void wire_feed(LanEnv *e, const uint8_t *f, size_t len)
{
    g_autofree uint8_t *g = g_memdup2(f, len);

    g[14 + 15] = 3;
    roce_reseal(g, len);
    lan_sock_send(e->fd, g, len);
}

void pair_release(Pair *pr, int from)
{
    GByteArray *f;

    pair_pump(pr);
    pr->hold[from] = false;
    while ((f = g_queue_pop_head(&pr->held[from]))) {
        lan_sock_send(pr->fd[!from], f->data, f->len);
        g_byte_array_unref(f);
    }
}

void pair_forget(Pair *pr, int from)
{
    GByteArray *f;

    pair_pump(pr);
    pr->hold[from] = false;
    while ((f = g_queue_pop_head(&pr->held[from]))) {
        g_byte_array_unref(f);
    }
}

void pair_expect_cqe(Pair *pr, int i, uint64_t wr_id, uint8_t status,
                     uint8_t opcode, uint32_t qpn, uint32_t byte_len)
{
    struct rs_cqe cqe;

    pair_poll(pr, i, &cqe);
    assert_cqe(&cqe, wr_id, status, opcode, qpn);
    if (status == RS_WC_SUCCESS && (opcode == RS_WR_RECV ||
                                    opcode == RS_WR_RDMA_READ)) {
        g_assert_cmpuint(cqe.byte_len, ==, byte_len);
    }
}
