/*
 * rdma-session qtests: what a peer without a key can make the adapter
 * send.  Every packet kind such a peer can send (DC CONNECT and
 * DISCONNECT, bundle HELLO, REPLY and BUNDLE, the page-fault PAUSE and
 * RESUME, unknown opcodes, requests with a wrong key) arrives from
 * rotating spoofed sources; the adapter's answers are counted against
 * the spec's bound ("Hostile peers"): no more bytes out than in, plus an
 * ACK's extra 8 bytes per packet; HELLOs of 74 bytes, at most 8 at once
 * and 10 a second device-wide; the padded HELLO only to an address that
 * answered the small one with its (random) nonce.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define A_IP            0x0a000001u
#define B_IP            0x0a000002u
/* 10.9.0.0/16: nobody's address; kind k sends from 10.9.k.1-64. */
#define SPOOF_IP(k, n)  (0x0a090000u | (k) << 8 | ((n) + 1))
#define AMP_N           64
#define AMP_STEP_NS     (10 * 1000 * 1000)
#define HELLO_BURST     8
#define HELLO_PER_SEC   10
#define NO_DCT          0x99
#define BIG_HELLO       9000

typedef enum {
    AMP_CONNECT,
    AMP_DISCONNECT,
    AMP_HELLO,
    AMP_HELLO_SHORT,
    AMP_HELLO_BIG,
    AMP_REPLY,
    AMP_PAUSE,
    AMP_RESUME,
    AMP_UNKNOWN,
    AMP_READ,
    AMP_WRITE,
    AMP_BUNDLE,
    AMP_N_KINDS
} AmpKind;

static const char *const amp_name[AMP_N_KINDS] = {
    [AMP_CONNECT] = "DC CONNECT to no DCT",
    [AMP_DISCONNECT] = "DC DISCONNECT",
    [AMP_HELLO] = "HELLO",
    [AMP_HELLO_SHORT] = "HELLO shorter than a REPLY",
    [AMP_HELLO_BIG] = "HELLO of 9000 bytes",
    [AMP_REPLY] = "HELLO_REPLY",
    [AMP_PAUSE] = "PAUSE",
    [AMP_RESUME] = "RESUME",
    [AMP_UNKNOWN] = "unknown opcodes",
    [AMP_READ] = "READ, wrong rkey",
    [AMP_WRITE] = "WRITE, wrong rkey",
    [AMP_BUNDLE] = "BUNDLE of 8 CONNECTs",
};

/* A HELLO (0xc5) or REPLY payload: version 1, 60000 bytes, @nonce. */
static void hello_payload(uint8_t *pl, size_t len, uint32_t nonce,
                          uint32_t size)
{
    memset(pl, 0, len);
    stw_be_p(pl, 1);
    stl_be_p(pl + 4, 60000);
    stl_be_p(pl + 8, nonce);
    if (len >= 16) {
        stl_be_p(pl + 12, size);
    }
}

static size_t connect_frame(uint8_t *f, uint8_t op, uint32_t src,
                            uint32_t dct, uint32_t n)
{
    uint8_t dceth[16];

    stq_be_p(dceth, 0x1111222233334444ull);
    stl_be_p(dceth + 8, 0x42 + n);
    stl_be_p(dceth + 12, 1);
    return roce_frame(f, pair_mac[1], src, B_IP, op, dct, n, dceth,
                      sizeof(dceth));
}

/*
 * Frame @n of kind @k in @f; @pkts: the RoCE packets in it.  @qpn: B's
 * RC QP, connected to A.
 */
static size_t amp_frame(AmpKind k, unsigned n, uint8_t *f, uint32_t qpn,
                        unsigned *pkts)
{
    g_autofree uint8_t *pl = g_malloc0(BIG_HELLO);
    uint32_t src = SPOOF_IP(k, n);

    *pkts = 1;
    switch (k) {
    case AMP_CONNECT:
        return connect_frame(f, OP_DC_CONNECT, src, NO_DCT, n);
    case AMP_DISCONNECT:
        return connect_frame(f, OP_DC_DISCONNECT, src, NO_DCT, n);
    case AMP_HELLO:
        hello_payload(pl, 16, n, 0);
        return roce_frame(f, pair_mac[1], src, B_IP, OP_BUNDLE_HELLO, 1, 0,
                          pl, 16);
    case AMP_HELLO_SHORT:
        hello_payload(pl, 12, n, 0);
        return roce_frame(f, pair_mac[1], src, B_IP, OP_BUNDLE_HELLO, 1, 0,
                          pl, 12);
    case AMP_HELLO_BIG:
        hello_payload(pl, BIG_HELLO - ROCE_EXT - 4, n, 0);
        return roce_frame(f, pair_mac[1], src, B_IP, OP_BUNDLE_HELLO, 1, 0,
                          pl, BIG_HELLO - ROCE_EXT - 4);
    case AMP_REPLY:
        hello_payload(pl, 16, n, 60000);
        return roce_frame(f, pair_mac[1], src, B_IP, OP_BUNDLE_HELLO_REPLY,
                          1, 0, pl, 16);
    case AMP_PAUSE:
    case AMP_RESUME:
        stl_be_p(pl, 0x1f000000 | n);
        return roce_frame(f, pair_mac[1], src, B_IP,
                          k == AMP_PAUSE ? OP_ODP_PAUSE : OP_ODP_RESUME,
                          qpn, n, pl, 4);
    case AMP_UNKNOWN:
        /* Manufacturer-specific ones nobody defined, reserved RC ones. */
        return roce_frame(f, pair_mac[1], src, B_IP,
                          n & 1 ? 0xc8 + (n / 2) % 56 : 0x18 + (n / 2) % 4,
                          qpn, n, pl, 16);
    case AMP_READ:
    case AMP_WRITE:
        /*
         * Half from A's own address (the QP's peer, the PSN it expects:
         * a NAK), half from spoofed ones (dropped).
         */
        stq_be_p(pl, 0x1000);
        stl_be_p(pl + 8, 0xdead00);
        stl_be_p(pl + 12, k == AMP_READ ? 65536 : 64);
        return roce_frame(f, pair_mac[1], n & 1 ? src : A_IP, B_IP,
                          k == AMP_READ ? OP_READ_REQ : OP_WRITE_ONLY, qpn,
                          pair_psn[0], pl, k == AMP_READ ? 16 : 16 + 64);
    case AMP_BUNDLE: {
        uint8_t in[8][128];
        const uint8_t *inp[8];
        size_t len[8];
        unsigned j;

        for (j = 0; j < 8; j++) {
            len[j] = connect_frame(in[j], OP_DC_CONNECT, src, NO_DCT,
                                   n * 8 + j);
            inp[j] = in[j];
        }
        *pkts = 8;
        return roce_bundle(f, inp, len, 8);
    }
    default:
        g_assert_not_reached();
    }
}

/*
 * Put HELLO (a marker, from A's address) on B's wire and wait for B's
 * answers until the REPLYs B sent since the reset are @replies: all that
 * came before it has been answered.
 */
static void amp_sync(Pair *pr, unsigned replies, uint64_t *in_bytes,
                     unsigned *in_pkts)
{
    uint8_t f[128], pl[16];
    size_t len;

    hello_payload(pl, sizeof(pl), 0x5a5a5a5a, 0);
    len = roce_frame(f, pair_mac[1], A_IP, B_IP, OP_BUNDLE_HELLO, 1, 0, pl,
                     sizeof(pl));
    pair_inject(pr, 1, f, len);
    *in_bytes += len;
    *in_pkts += 1;
    pair_wait_raw(pr, 1, OP_BUNDLE_HELLO_REPLY, replies);
}

/*
 * Each kind, AMP_N frames from AMP_N spoofed sources 10 ms apart: what
 * B sends back stays within the bound.
 */
static void test_amplify_kinds(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree uint8_t *f = g_malloc(65536);
    QTestState *qts;
    LoopQp q[2];
    Pair pr;
    int k;

    pair_setup(&pr, obj, data, alloc);
    qts = qrs_qts(pr.p[0].d);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pr.raw[1] = true;
    for (k = 0; k < AMP_N_KINDS; k++) {
        uint64_t in_bytes = 0, out;
        unsigned in_pkts = 0, n, pkts, hellos, max_hellos;
        unsigned replies = k == AMP_HELLO || k == AMP_HELLO_BIG ? AMP_N : 0;

        pair_log_reset(&pr);
        /* A second of quiet: the HELLO bucket is full again. */
        qtest_clock_step(qts, 1000000000ll);
        for (n = 0; n < AMP_N; n++) {
            size_t len = amp_frame(k, n, f, q[1].qpn, &pkts);

            pair_inject(&pr, 1, f, len);
            in_bytes += len;
            in_pkts += pkts;
            qtest_clock_step(qts, AMP_STEP_NS);
            pair_pump(&pr);     /* as a wire would take them */
        }
        amp_sync(&pr, replies + 1, &in_bytes, &in_pkts);
        hellos = pr.raw_op[1][OP_BUNDLE_HELLO];
        max_hellos = HELLO_BURST +
                     HELLO_PER_SEC * AMP_N * (AMP_STEP_NS / 1000000) / 1000;
        g_test_message("%s: %u packets, %" PRIu64 " bytes in; %u frames, "
                       "%" PRIu64 " bytes out (%u HELLOs of at most %zu "
                       "bytes, %u REPLYs): %.3f bytes out per byte in",
                       amp_name[k], in_pkts, in_bytes, pr.raw_frames[1],
                       pr.raw_bytes[1], hellos, pr.raw_hello_max[1],
                       pr.raw_op[1][OP_BUNDLE_HELLO_REPLY],
                       (double)pr.raw_bytes[1] / in_bytes);
        /* No big HELLO to an address that never answered a small one. */
        if (hellos) {
            g_assert_cmpuint(pr.raw_hello_max[1], ==, HELLO_SMALL);
        }
        g_assert_cmpuint(hellos, <=, max_hellos);
        out = pr.raw_bytes[1] - (uint64_t)hellos * HELLO_SMALL;
        g_assert_cmpuint(out, <=, in_bytes + 8 * in_pkts);
    }
    assert_alive(pr.p[1].d);
    pair_teardown(&pr);
}

/* CONNECT from @src: B answers it, and HELLOs @src if it may. */
static void connect_from(Pair *pr, uint32_t src, unsigned hellos)
{
    uint8_t f[128];

    pair_inject(pr, 1, f, connect_frame(f, OP_DC_CONNECT, src, NO_DCT, 0));
    pair_wait_raw(pr, 1, OP_BUNDLE_HELLO, hellos);
}

static void reply_from(Pair *pr, uint32_t src, uint32_t nonce)
{
    uint8_t f[128], pl[16];

    hello_payload(pl, sizeof(pl), nonce, HELLO_SMALL);
    pair_inject(pr, 1, f, roce_frame(f, pair_mac[1], src, B_IP,
                                     OP_BUNDLE_HELLO_REPLY, 1, 0, pl,
                                     sizeof(pl)));
}

/*
 * HELLO nonces cannot be guessed from earlier ones, a REPLY with another
 * nonce is ignored, and only the right one brings the padded HELLO.
 */
static void test_amplify_nonce(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t s1 = SPOOF_IP(0x40, 1), s2 = SPOOF_IP(0x40, 2), n1, n2;
    uint64_t in_bytes = 0;
    unsigned in_pkts = 0;
    LoopQp q[2];
    Pair pr;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pr.raw[1] = true;
    pair_log_reset(&pr);
    connect_from(&pr, s1, 1);
    n1 = ldl_be_p(pr.raw_hello[1] + ROCE_EXT + 8);
    g_assert_cmphex(ldl_be_p(pr.raw_hello[1] + 30), ==, s1);
    connect_from(&pr, s2, 2);
    n2 = ldl_be_p(pr.raw_hello[1] + ROCE_EXT + 8);
    g_assert_cmphex(ldl_be_p(pr.raw_hello[1] + 30), ==, s2);
    g_test_message("nonces 0x%08x 0x%08x", n1, n2);
    g_assert_cmphex(n2, !=, n1 + 1);
    g_assert_cmphex(n2, !=, n1);

    /* Guesses: the next counter value, the other address's nonce. */
    reply_from(&pr, s2, n2 + 1);
    reply_from(&pr, s2, n1);
    reply_from(&pr, s2, 2);
    amp_sync(&pr, 1, &in_bytes, &in_pkts);
    g_assert_cmpuint(pr.raw_op[1][OP_BUNDLE_HELLO], ==, 2);
    g_assert_cmpuint(pr.raw_hello_max[1], ==, HELLO_SMALL);

    /* The right one: the padded HELLO, to s2 alone. */
    reply_from(&pr, s2, n2);
    amp_sync(&pr, 2, &in_bytes, &in_pkts);
    g_assert_cmpuint(pr.raw_op[1][OP_BUNDLE_HELLO], ==, 3);
    g_assert_cmpuint(pr.raw_hello_max[1], >, 59990);
    /* Answered once: the same REPLY again does nothing. */
    reply_from(&pr, s2, n2);
    amp_sync(&pr, 3, &in_bytes, &in_pkts);
    g_assert_cmpuint(pr.raw_op[1][OP_BUNDLE_HELLO], ==, 3);
    assert_alive(pr.p[1].d);
    pair_teardown(&pr);
}

static void *amplify_before(GString *cmd_line, void *arg)
{
    return pair_before_props(cmd_line, ",bundle=on", ",bundle=on");
}

static void register_amplify_tests(void)
{
    QOSGraphTestOptions opts = { .before = amplify_before };

    rs_add_standalone_test("amplify/kinds", test_amplify_kinds, &opts);
    rs_add_standalone_test("amplify/nonce", test_amplify_nonce, &opts);
}

libqos_init(register_amplify_tests);
