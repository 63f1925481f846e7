/*
 * rdma-session RoCEv2 packet fuzzer (rdma_session_fuzz.c): the main loop
 * and the wire (the socket netdev the adapter sends on)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rdma_session_fuzz.h"

RSFWire rsf_wire;

/* ------------------------------------------------------------------ */
/* Main loop and the socket                                            */
/* ------------------------------------------------------------------ */

static void G_GNUC_NORETURN G_GNUC_PRINTF(1, 2) rsf_amplification(
    const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "rdma-session fuzz: amplification: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    abort();
}

/* An IPv4 RoCE frame (20-byte IP header, UDP port 4791), with a BTH. */
bool rsf_is_roce4(const uint8_t *f, size_t len)
{
    return len >= RSF_PL + 4 && lduw_be_p(f + 12) == 0x0800 &&
           f[RSF_IP] == 0x45 && f[RSF_IP + 9] == 17 &&
           lduw_be_p(f + RSF_IP + 22) == 4791;
}

bool rsf_is_roce6(const uint8_t *f, size_t len)
{
    return len >= 14 + 40 + 8 + 12 + 4 && lduw_be_p(f + 12) == 0x86dd &&
           f[RSF_IP + 6] == 17 && lduw_be_p(f + RSF_IP + 40 + 2) == 4791;
}

/* A congestion notification packet (BTH opcode 0x81), IPv4 or IPv6. */
static bool rsf_is_cnp(const uint8_t *f, size_t len)
{
    return (rsf_is_roce4(f, len) && f[RSF_BTH] == 0x81) ||
           (rsf_is_roce6(f, len) && f[14 + 40 + 8] == 0x81);
}

/* The bytes of the CNPs in a bundle (counted in *n), length fields too. */
static uint64_t rsf_bundle_cnps(const uint8_t *f, size_t len, uint64_t *n)
{
    uint32_t count = lduw_be_p(f + RSF_PL), i;
    size_t off = RSF_PL + 4;
    uint64_t bytes = 0;

    for (i = 0; i < count && off + 2 <= len &&
         off + 2 + lduw_be_p(f + off) <= len; i++) {
        size_t ilen = lduw_be_p(f + off);

        if (rsf_is_cnp(f + off + 2, ilen)) {
            bytes += 2 + ilen;
            (*n)++;
        }
        off += 2 + ilen;
    }
    return bytes;
}

/* The inner frames of a bundle whose lengths fit in it (at least 1). */
static uint32_t rsf_bundle_inner(const uint8_t *f, size_t len)
{
    uint32_t count = lduw_be_p(f + RSF_PL), n = 0;
    size_t off = RSF_PL + 4;

    while (n < count && off + 2 <= len &&
           off + 2 + lduw_be_p(f + off) <= len) {
        off += 2 + lduw_be_p(f + off);
        n++;
    }
    return MAX(n, 1);
}

static bool rsf_answered(RSFWire *w, uint32_t ip)
{
    uint32_t i;

    for (i = 0; i < w->nanswered; i++) {
        if (w->answered[i] == ip) {
            return true;
        }
    }
    return false;
}

/* What the adapter sends: counted, checked, dropped. */
static void rsf_tx_seen(RSFWire *w, const uint8_t *f, size_t len)
{
    uint64_t pkts = 1;

    if (rsf_is_roce4(f, len) && f[RSF_BTH] == 0xc5) {
        RSFHello *h = &w->hello[w->nhello++ % RSF_NHELLO];

        memcpy(h->dmac, f, 6);
        memcpy(h->smac, f + 6, 6);
        h->sip = ldl_be_p(f + RSF_IP + 12);
        h->dip = ldl_be_p(f + RSF_IP + 16);
        h->sport = lduw_be_p(f + RSF_IP + 20);
        h->nonce = len >= RSF_PL + 12 ? ldl_be_p(f + RSF_PL + 8) : 0;
        h->len = len;
        w->tx_hellos++;
        w->f_hellos++;
        if (w->keyless && len > RSF_HELLO_UNPADDED &&
            !rsf_answered(w, h->dip)) {
            rsf_amplification("a HELLO of %zu bytes (more than %u) to "
                              "0x%08x, which never answered an unpadded "
                              "HELLO", len, RSF_HELLO_UNPADDED, h->dip);
        }
    } else if (rsf_is_cnp(f, len)) {
        w->tx_cnps++;               /* ECN's answer: bounded apart */
    } else {
        w->tx_bytes += len;
        if (rsf_is_roce4(f, len) && f[RSF_BTH] == 0xc7) {
            pkts = rsf_bundle_inner(f, len);
            w->tx_bytes -= rsf_bundle_cnps(f, len, &w->tx_cnps);
            w->tx_bundles++;
        }
    }
    w->tx_frames++;
    if (w->in_frame) {
        w->f_pkts += pkts;
    }
}

/*
 * The socket netdev's receive function: what the adapter sends.  The
 * wire takes w->budget bytes per main-loop round, then refuses (the
 * network layer queues the frame and the adapter waits for its sent
 * callback), as a full socket buffer would.
 */
static ssize_t rsf_wire_receive(NetClientState *nc, const uint8_t *buf,
                         size_t size)
{
    RSFWire *w = &rsf_wire;

    if (w->used && w->used + size > w->budget) {
        w->held = true;
        w->held_in_frame |= w->in_frame;
        return 0;
    }
    w->used += size;
    rsf_tx_seen(w, buf, size);
    return size;
}

void rsf_wire_init(void)
{
    RSFWire *w = &rsf_wire;

    if (w->nc) {
        return;
    }
    w->nc = qemu_find_netdev("n0");
    g_assert(w->nc);
    w->info = *w->nc->info;
    w->info.receive = rsf_wire_receive;
    w->info.receive_iov = NULL;
    w->nc->info = &w->info;
}

/* A new round of the wire: what it refused goes now. */
static void rsf_wire_round(void)
{
    RSFWire *w = &rsf_wire;

    w->used = 0;
    if (w->held) {
        w->held = false;
        qemu_flush_queued_packets(w->nc);
    }
}

/* A REPLY from the input: its sender answers the HELLO of that nonce. */
static void rsf_reply_seen(RSFWire *w, const uint8_t *f, size_t len)
{
    uint32_t sip = ldl_be_p(f + RSF_IP + 12), nonce, i;

    if (len < RSF_PL + 16 || rsf_answered(w, sip) ||
        w->nanswered == RSF_NPEER) {
        return;
    }
    nonce = ldl_be_p(f + RSF_PL + 8);
    for (i = 0; i < MIN(w->nhello, RSF_NHELLO); i++) {
        if (w->hello[i].dip == sip && w->hello[i].nonce == nonce &&
            w->hello[i].len <= RSF_HELLO_UNPADDED) {
            w->answered[w->nanswered++] = sip;
            return;
        }
    }
}

/*
 * One frame to the adapter, as the socket netdev would hand it over
 * (when the adapter takes nothing, the frame is lost as on a wire), and
 * the work-per-frame bound on what the adapter sent meanwhile.
 */
void rsf_inject(const uint8_t *frame, size_t len)
{
    RSFWire *w = &rsf_wire;
    uint64_t inner = 1, bound;

    if (!len || !qemu_can_send_packet(w->nc)) {
        return;
    }
    if (rsf_is_roce4(frame, len)) {
        if (frame[RSF_BTH] == 0xc7) {
            inner = rsf_bundle_inner(frame, len);
        } else if (frame[RSF_BTH] == 0xc6) {
            rsf_reply_seen(w, frame, len);
        }
        w->rx_roce += inner;
    } else if (rsf_is_roce6(frame, len)) {
        w->rx_roce++;
    }
    w->rx_bytes += len;
    w->in_frame = true;
    w->held_in_frame = false;
    w->f_pkts = w->f_hellos = 0;
    qemu_send_packet(w->nc, frame, len);
    w->in_frame = false;
    w->rx_frames++;
    if (w->f_pkts > w->max_f_pkts) {
        w->max_f_pkts = w->f_pkts;
        w->max_f_inner = inner;
    }
    bound = RSF_RESP_PER_FRAME + 2 * inner + RSF_HELLO_PER_FRAME;
    if (!w->held_in_frame &&
        (w->f_pkts > bound || w->f_hellos > RSF_HELLO_PER_FRAME)) {
        rsf_amplification("one received frame of %zu bytes (%" PRIu64
                          " inner packets, opcode 0x%02x) made the adapter "
                          "send %" PRIu64 " packets (%" PRIu64 " HELLOs), "
                          "more than %" PRIu64 " (and %u HELLO)", len,
                          inner, len > RSF_BTH ? frame[RSF_BTH] : 0,
                          w->f_pkts, w->f_hellos, bound,
                          RSF_HELLO_PER_FRAME);
    }
}

/*
 * The keyless bounds over the whole input (see the top of the file);
 * with RS_FUZZ_STATS set, a line of what went each way.
 */
void rsf_wire_check_end(void)
{
    RSFWire *w = &rsf_wire;
    int64_t ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - w->t0;

    if (getenv("RS_FUZZ_STATS")) {
        fprintf(stderr, "rdma-session fuzz stats: %s, %" PRId64 " ns; "
                "received %" PRIu64 " frames, %" PRIu64 " bytes, %" PRIu64
                " RoCE packets; sent %" PRIu64 " frames (%" PRIu64
                " bundles), %" PRIu64 " bytes without HELLOs and CNPs, %"
                PRIu64 " HELLOs, %" PRIu64 " CNPs; most packets sent for "
                "one frame %" PRIu64 " (of %" PRIu64 " inner); %u peers "
                "answered\n", w->keyless ? "keyless" : "keys", ns,
                w->rx_frames, w->rx_bytes, w->rx_roce, w->tx_frames,
                w->tx_bundles, w->tx_bytes, w->tx_hellos, w->tx_cnps,
                w->max_f_pkts, w->max_f_inner, w->nanswered);
    }
    if (!w->keyless) {
        return;
    }
    if (w->tx_bytes > w->rx_bytes + RSF_KEYLESS_SLACK * w->rx_roce) {
        rsf_amplification("keyless: the adapter sent %" PRIu64 " bytes "
                          "(HELLOs, CNPs aside) for %" PRIu64 " bytes in %"
                          PRIu64
                          " RoCE packets received (bound: received + %u "
                          "per packet)", w->tx_bytes, w->rx_bytes,
                          w->rx_roce, RSF_KEYLESS_SLACK);
    }
    if (w->tx_cnps > w->rx_roce) {
        rsf_amplification("keyless: %" PRIu64 " CNPs for %" PRIu64
                          " RoCE packets received", w->tx_cnps, w->rx_roce);
    }
    /* HELLOs <= burst + rate x seconds, the seconds not rounded */
    if (w->tx_hellos > RSF_HELLO_BURST &&
        (w->tx_hellos - RSF_HELLO_BURST) * 1000000000ull >
        RSF_HELLO_PER_SEC * (uint64_t)ns) {
        rsf_amplification("keyless: %" PRIu64 " HELLOs in %" PRId64
                          " ns of virtual time (bound: %u + %u per second)",
                          w->tx_hellos, ns, RSF_HELLO_BURST,
                          RSF_HELLO_PER_SEC);
    }
}

/*
 * Run QEMU's main loop: a non-blocking round runs the bottom halves and
 * timers due, then a new round of the wire.
 */
void rsf_idle(QTestState *s)
{
    main_loop_wait(true);
    flush_events(s);
    rsf_wire_round();
}

void rsf_settle(QTestState *s)
{
    int i;

    for (i = 0; i < RSF_FLUSH_ROUNDS; i++) {
        rsf_idle(s);
    }
}

/*
 * One frame from the network: to the bundle being filled, or to the
 * adapter.  Frames are cut at RSF_MAX_FRAME bytes, IPv4 BUNDLE, HELLO and
 * REPLY frames at the largest IPv4 frame.
 */
void rsf_send_frame(const uint8_t *frame, size_t len)
{
    bool big = rsf_is_roce4(frame, len) && frame[RSF_BTH] >= 0xc5 &&
               frame[RSF_BTH] <= 0xc7;

    len = MIN(len, big ? RSF_MAX_BIG : RSF_MAX_FRAME);
    if (rsf_bun.on) {
        rsf_bundle_add(frame, len);
        return;
    }
    rsf_inject(frame, len);
}
