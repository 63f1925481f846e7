/*
 * rdma-session RoCEv2 packet fuzzer
 *
 * Brings the adapter up as a driver does (admin queue, GIDs, a PD, CQs,
 * MRs with every access right, RC QPs over loopback, RC/UC/UD QPs paired
 * with a remote GID that exists only in this fuzzer, an RC QP over IPv6,
 * a bound type 1 and type 2 memory window, an XRC initiator and an XRC
 * target with an XRC SRQ, a DC initiator connecting to the remote, two
 * DC targets (keys 0 and RSF_DC_KEY2) on a basic SRQ, an explicit and an
 * implicit on-demand-paging MR with half their pages resolved, an
 * indirect and a pattern key over those MRs, requests outstanding
 * towards the remote) and then feeds the input to the adapter as frames
 * from the network, handed to it by its netdev (a socket netdev whose
 * socket carries nothing: the fuzzer sends and sees frames on the
 * netdev's side in-process, see RSFWire): RoCEv2
 * frames built from the input with valid Ethernet/IP/UDP/BTH headers and
 * a correct ICRC, so that the input reaches the responder, the completer
 * and the READ/atomic resources, plus raw frames for the parser.  Work
 * requests, receives, CQ doorbells and virtual time come from the input
 * too.  Every input starts from a system reset and the same bring-up, so
 * a crash reproduces from its input alone.  Page faults are answered (or
 * not, or refused) by the input too, as a driver would, and the input
 * re-registers keys in place (REREG_MR) between its frames.
 *
 * The input also builds BUNDLE frames (opcode 0xc7) out of the frames of
 * its next operations (valid inner ICRCs, up to the 64 KiB a bundle
 * carries), sends frames from other (rotating) source addresses, HELLO
 * (0xc5) and HELLO_REPLY (0xc6) frames, and answers the HELLOs the
 * adapter sends with the right nonce, so the bundle negotiation reaches
 * its OK state and the adapter sends bundles.
 *
 * Amplification is a failure, not only crashes (the bounds are those of
 * docs/specs/rdma-session.rst; the input aborts with a message starting
 * "rdma-session fuzz: amplification", which libFuzzer records as a
 * crash):
 * - work per received frame, every input: the RoCE packets the adapter
 *   sends while it handles one frame from the wire (a bundle counts as
 *   one frame of n inner packets; each packet of a bundle the adapter
 *   sends counts) are at most 32 + 2 n + 1 (32 READ/atomic responses,
 *   one ACK/NAK/DC reply/HELLO_REPLY per inner packet, one HELLO).
 *   Frames are handed to the adapter directly (qemu_send_packet) and
 *   what it sends is seen as it sends it, so this counts the sends of
 *   the receive callback alone, before any bottom half or timer runs;
 * - keyless inputs (bit 7 of the input's first byte): the bring-up
 *   registers no MR or key with a remote access right and posts no work
 *   request, and the input's send work requests are ignored, so all the
 *   adapter sends is caused by peers.  Over the whole input: bytes of
 *   the frames it sends other than HELLOs <= bytes it received + 8 per
 *   received RoCE packet; HELLOs <= 8 + 10 per second of virtual time;
 *   a HELLO to an address that never answered an unpadded HELLO of the
 *   adapter with its nonce is at most 80 bytes.
 * Bit 6 of the first byte makes the wire take only 208 KiB per main-loop
 * round (a socket buffer: the adapter's sends then wait), else 16 MiB.
 *
 * Input: commands separated by "RSFZ"; a command's first byte selects
 * the operation (the first command's: its bits 0-5), the rest are its
 * operands (see rsf_ops[]).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "net/net.h"
#include <zlib.h>

#include "tests/qtest/libqtest.h"
#include "tests/qtest/libqos/pci-pc.h"
#include "tests/qtest/libqos/malloc-pc.h"
#include "tests/qtest/libqos/rdma-session.h"
#include "fuzz.h"

#define RSF_SEPARATOR       "RSFZ"
#define RSF_DEVFN           QPCI_DEVFN(4, 0)
#define RSF_PAGE            4096u
#define RSF_MAX_FRAME       9216u
/* BUNDLE, HELLO and REPLY frames: up to the IPv4 total length's limit. */
#define RSF_MAX_BUNDLE      65535u
#define RSF_MAX_BIG         (14 + 65535u)
#define RSF_RQ_PSN          0x100u
#define RSF_SQ_PSN          0x200u
#define RSF_QKEY            0x11111111u
#define RSF_REMOTE_QPN      0x12u
#define RSF_CQ_LOG          6
/*
 * The big MR: 2 GiB (the largest message) of 64 MiB pages that all map
 * the guest RAM from 64 MiB, which it shares with the rings and buffers
 * the allocator hands out (remote WRITEs may land on them, as they could
 * in a guest).  One READ or WRITE may ask for gigabytes.
 */
#define RSF_BIG_PA          (64 * 1024 * 1024ull)
#define RSF_BIG_SHIFT       26
#define RSF_BIG_PAGES       32
#define RSF_BIG_IOVA        0x7f0000000000ull
/* LAN receive ring: frames that are not RoCE to our GIDs land here. */
#define RSF_LAN_LOG         6
#define RSF_LAN_POSTED      32
#define RSF_LAN_BUF         2048
#define RSF_WQ_LOG          4
#define RSF_MAX_CLOCK_NS    (10 * 1000 * 1000 * 1000ull)
/* Main-loop rounds per command: enough for retransmissions to settle. */
#define RSF_FLUSH_ROUNDS    4
/* The DC targets' access keys. */
#define RSF_DC_KEY2         0x5eed0000c0ffee01ull
/*
 * The bounds (docs/specs/rdma-session.rst, "Hostile peers"): READ/atomic
 * response packets per received frame; HELLOs sent while one frame is
 * handled (the bound; the spec says at most 8 at once for the
 * whole adapter); HELLOs: a burst and a rate; the largest HELLO to a peer
 * that never answered; bytes per received packet.
 */
#define RSF_RESP_PER_FRAME  32
#define RSF_HELLO_PER_FRAME 1
#define RSF_HELLO_BURST     8
#define RSF_HELLO_PER_SEC   10
#define RSF_HELLO_UNPADDED  80
#define RSF_KEYLESS_SLACK   8
/* What the wire takes per main-loop round (bit 6 of the first byte). */
#define RSF_WIRE_BIG        (16u << 20)
#define RSF_WIRE_SMALL      (208u << 10)
#define RSF_NHELLO          64
#define RSF_NPEER           64
/* IPv4 RoCE offsets: IP, UDP, BTH, payload after the BTH. */
#define RSF_IP              14
#define RSF_BTH             42
#define RSF_PL              54

static const uint8_t rsf_mac[6] = RS_QOS_MAC;
static const uint8_t rsf_remote_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t rsf_ip_self[4] = { 10, 0, 0, 1 };
static const uint8_t rsf_ip_remote[4] = { 10, 0, 0, 2 };
static const uint8_t rsf_ip6_self[16] = { 0xfd, [15] = 1 };
static const uint8_t rsf_ip6_remote[16] = { 0xfd, [15] = 2 };

enum {
    RSF_QP_LOOP_A,      /* RC, loopback to RSF_QP_LOOP_B via a session */
    RSF_QP_LOOP_B,
    RSF_QP_RC,          /* RC to the remote 10.0.0.2 */
    RSF_QP_UC,          /* UC to the remote */
    RSF_QP_UD,
    RSF_QP_RC6,         /* RC to the remote fd00::2 over GID 1 */
    RSF_QP_XINI,        /* XRC initiator to the remote */
    RSF_QP_XTGT,        /* XRC target of the remote, on the XRC SRQ */
    RSF_QP_DCI,         /* DC initiator: a SEND to the remote's DCT */
    RSF_QP_DCT,         /* DC target, key 0, on the basic SRQ */
    RSF_QP_DCT2,        /* DC target, key RSF_DC_KEY2, on the basic SRQ */
    RSF_NQP,
};

enum {
    RSF_MR_ALL,         /* every access right, GID 0 */
    RSF_MR_READ_ONLY,   /* remote read only, GID 0 */
    RSF_MR_ALL6,        /* every access right, GID 1 */
    RSF_MR_BIG,         /* 2 GiB, every right, GID 0 */
    /* Memory windows: their rkey, range as last bound (they are rkeys). */
    RSF_MW_1,           /* type 1 on pages 1-2 of RSF_MR_ALL */
    RSF_MW_2,           /* type 2, bound on RSF_QP_RC, page 0 of it */
    RSF_MR_ODP,         /* on demand, 4 pages, the first 2 resolved */
    RSF_MR_ODPI,        /* implicit on demand: the same */
    /* Zero-based keys made of the MRs above (base 0, len their length). */
    RSF_MR_IND,         /* indirect: MR_ALL, READ_ONLY, MR_ALL, ODP */
    RSF_MR_PAT,         /* pattern: a column of MR_ALL and one of ODP */
    RSF_NMR,
};

typedef struct RSFQp {
    struct rs_cmd_create_qp c;
    uint32_t h, qpn, sq_pi, rq_pi, rx_frames;
    uint8_t type;
    bool v6, loop;
    uint64_t dc_key;            /* a DCT's */
} RSFQp;

typedef struct RSFMr {
    uint64_t base;
    uint32_t len, key;
    uint32_t seq;               /* ODP: invalidations issued */
} RSFMr;

typedef struct RSFState {
    QRdmaSession d;
    QPCIBus *bus;
    QGuestAllocator alloc;
    RSFQp qp[RSF_NQP];
    RSFMr mr[RSF_NMR];
    uint32_t pd, ah, cq[2];
    uint32_t pd2;               /* another PD of identity 0: REREG_MR's */
    uint32_t cq_ci[2];
    uint32_t xrcd, srq, srq_pi;     /* an XRC domain and its XRC SRQ */
    struct rs_cmd_create_srq srq_c;
    uint32_t dsrq, dsrq_pi;         /* the DC target's basic SRQ */
    struct rs_cmd_create_srq dsrq_c;
} RSFState;

static int rsf_sock[2] = { -1, -1 };
static RSFState rsf;

/* A HELLO the adapter sent. */
typedef struct RSFHello {
    uint8_t dmac[6], smac[6];
    uint32_t sip, dip, nonce, len;
    uint16_t sport;
} RSFHello;

/*
 * The wire: the socket netdev's receive function is replaced, so every
 * frame the adapter sends is seen (and dropped) as it sends it, and the
 * fuzzer's frames go to the adapter with qemu_send_packet(): the
 * adapter's sends during one of its receive callbacks are those of that
 * frame alone.
 */
typedef struct RSFWire {
    NetClientState *nc;
    NetClientInfo info;
    bool keyless;
    size_t budget, used;        /* bytes taken this main-loop round */
    bool held;                  /* refused one: flush when the round ends */
    bool in_frame, held_in_frame;
    uint64_t f_pkts, f_hellos;  /* sent during the frame being received */
    /* Since the input's start */
    int64_t t0;
    uint64_t tx_bytes;          /* frames sent, HELLOs not counted */
    uint64_t tx_hellos, rx_bytes, rx_roce;
    RSFHello hello[RSF_NHELLO];
    uint32_t nhello;
    uint32_t answered[RSF_NPEER];   /* answered an unpadded HELLO */
    uint32_t nanswered;
    /* For RS_FUZZ_STATS */
    uint64_t tx_frames, tx_bundles, rx_frames, max_f_pkts, max_f_inner;
} RSFWire;

static RSFWire rsf_wire;

/* Source addresses of spoofed frames (rsf_op_spoof), IPv4. */
static struct {
    bool on;
    uint8_t ip[4], mac[6];
} rsf_spoof;

/* A BUNDLE being filled with the frames of the next operations. */
typedef struct RSFBundle {
    bool on;
    uint32_t want, n, len, cap, psn_step;
    uint8_t flags;
    int8_t count_adj;
    uint8_t buf[RSF_MAX_BIG];   /* inner frames, each behind its length */
} RSFBundle;

static RSFBundle rsf_bun;
/* Large frames being built; the bundle being sent. */
static uint8_t rsf_big[RSF_MAX_BIG], rsf_big_l4[RSF_MAX_BIG];
static uint8_t rsf_bun_out[RSF_MAX_BIG];

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
static bool rsf_is_roce4(const uint8_t *f, size_t len)
{
    return len >= RSF_PL + 4 && lduw_be_p(f + 12) == 0x0800 &&
           f[RSF_IP] == 0x45 && f[RSF_IP + 9] == 17 &&
           lduw_be_p(f + RSF_IP + 22) == 4791;
}

static bool rsf_is_roce6(const uint8_t *f, size_t len)
{
    return len >= 14 + 40 + 8 + 12 + 4 && lduw_be_p(f + 12) == 0x86dd &&
           f[RSF_IP + 6] == 17 && lduw_be_p(f + RSF_IP + 40 + 2) == 4791;
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
    } else {
        w->tx_bytes += len;
        if (rsf_is_roce4(f, len) && f[RSF_BTH] == 0xc7) {
            pkts = rsf_bundle_inner(f, len);
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

static void rsf_wire_init(void)
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
static void rsf_inject(const uint8_t *frame, size_t len)
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
static void rsf_wire_check_end(void)
{
    RSFWire *w = &rsf_wire;
    int64_t ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - w->t0;

    if (getenv("RS_FUZZ_STATS")) {
        fprintf(stderr, "rdma-session fuzz stats: %s, %" PRId64 " ns; "
                "received %" PRIu64 " frames, %" PRIu64 " bytes, %" PRIu64
                " RoCE packets; sent %" PRIu64 " frames (%" PRIu64
                " bundles), %" PRIu64 " bytes without HELLOs, %" PRIu64
                " HELLOs; most packets sent for one frame %" PRIu64
                " (of %" PRIu64 " inner); %u peers answered\n",
                w->keyless ? "keyless" : "keys", ns, w->rx_frames,
                w->rx_bytes, w->rx_roce, w->tx_frames, w->tx_bundles,
                w->tx_bytes, w->tx_hellos, w->max_f_pkts, w->max_f_inner,
                w->nanswered);
    }
    if (!w->keyless) {
        return;
    }
    if (w->tx_bytes > w->rx_bytes + RSF_KEYLESS_SLACK * w->rx_roce) {
        rsf_amplification("keyless: the adapter sent %" PRIu64 " bytes "
                          "(HELLOs aside) for %" PRIu64 " bytes in %" PRIu64
                          " RoCE packets received (bound: received + %u "
                          "per packet)", w->tx_bytes, w->rx_bytes,
                          w->rx_roce, RSF_KEYLESS_SLACK);
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
static void rsf_idle(QTestState *s)
{
    main_loop_wait(true);
    flush_events(s);
    rsf_wire_round();
}

static void rsf_settle(QTestState *s)
{
    int i;

    for (i = 0; i < RSF_FLUSH_ROUNDS; i++) {
        rsf_idle(s);
    }
}

/* Add a frame to the bundle being filled. */
static void rsf_bundle_add(const uint8_t *frame, size_t len);

/*
 * One frame from the network: to the bundle being filled, or to the
 * adapter.  Frames are cut at RSF_MAX_FRAME bytes, IPv4 BUNDLE, HELLO and
 * REPLY frames at the largest IPv4 frame.
 */
static void rsf_send_frame(const uint8_t *frame, size_t len)
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

/* ------------------------------------------------------------------ */
/* Bring-up                                                            */
/* ------------------------------------------------------------------ */

/* Keyless inputs: no remote access right on any MR or key. */
static uint16_t rsf_access(uint16_t access)
{
    return rsf_wire.keyless ? access & RS_ACCESS_LOCAL_WRITE : access;
}

static void rsf_ok(uint8_t status, const char *what)
{
    if (status != RS_STATUS_OK) {
        fprintf(stderr, "rdma-session fuzz: bring-up %s failed: %s\n", what,
                qrs_status_name(status));
        abort();
    }
}

static uint64_t rsf_buf(RSFState *f, uint32_t len)
{
    uint64_t a = guest_alloc(&f->alloc, len + RSF_PAGE);

    g_assert(a);
    a = ROUND_UP(a, RSF_PAGE);
    qtest_memset(qrs_qts(&f->d), a, 0, len);
    return a;
}

static void rsf_add_gid(RSFState *f, uint32_t index, uint8_t type,
                        const uint8_t *gid)
{
    struct rs_cmd_add_gid c = { .index = index, .type = type, .vni = index };
    uint32_t got;

    memcpy(c.gid, gid, 16);
    rsf_ok(qrs_add_gid(&f->d, &c, &got), "ADD_GID");
}

static void rsf_gid_v4(uint8_t *gid, const uint8_t *ip)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    memcpy(gid + 12, ip, 4);
}

static void rsf_reg_mr(RSFState *f, RSFMr *m, uint32_t pages,
                       uint16_t access, uint32_t gid_index)
{
    struct rs_cmd_reg_mr c = {
        .length = pages * RSF_PAGE,
        .npages = pages,
        .pd = f->pd,
        .page_shift = 12,
        .access = rsf_access(access),
        .gid_index = gid_index,
    };
    uint32_t i, rkey;

    m->len = pages * RSF_PAGE;
    m->base = rsf_buf(f, m->len);
    c.iova = m->base;
    c.pbl_addr = guest_alloc(&f->alloc, pages * 8);
    for (i = 0; i < pages; i++) {
        qtest_writeq(qrs_qts(&f->d), c.pbl_addr + i * 8,
                     m->base + i * RSF_PAGE);
    }
    rsf_ok(qrs_reg_mr(&f->d, &c, &m->key, &rkey), "REG_MR");
}

/* Large pages, so that one READ or WRITE may span gigabytes. */
static void rsf_reg_big_mr(RSFState *f, RSFMr *m)
{
    struct rs_cmd_reg_mr c = {
        .iova = RSF_BIG_IOVA,
        .length = (uint64_t)RSF_BIG_PAGES << RSF_BIG_SHIFT,
        .npages = RSF_BIG_PAGES,
        .pd = f->pd,
        .page_shift = RSF_BIG_SHIFT,
        .access = rsf_access(RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT),
    };
    uint32_t i, rkey;

    m->base = RSF_BIG_IOVA;
    m->len = c.length;
    c.pbl_addr = guest_alloc(&f->alloc, RSF_BIG_PAGES * 8);
    for (i = 0; i < RSF_BIG_PAGES; i++) {
        qtest_writeq(qrs_qts(&f->d), c.pbl_addr + i * 8, RSF_BIG_PA);
    }
    rsf_ok(qrs_reg_mr(&f->d, &c, &m->key, &rkey), "REG_MR");
}

/*
 * ODP_RESOLVE of n pages of ODP MR m from page first, page i mapped to
 * the buffer's page (first + i + shift) % 4 with flags.
 */
static uint8_t rsf_odp_resolve(RSFState *f, RSFMr *m, uint32_t first,
                               uint32_t n, uint32_t shift, uint64_t flags,
                               uint32_t seq, uint32_t rflags)
{
    struct rs_cmd_odp_resolve c = {
        .key = m->key, .seq = seq, .va = m->base + first * RSF_PAGE,
        .npages = n, .flags = rflags,
    };
    uint32_t i;

    if (!(rflags & RS_ODP_RESOLVE_F_FAIL)) {
        c.pbl_addr = guest_alloc(&f->alloc, MAX(n, 1) * 8);
        for (i = 0; i < n; i++) {
            qtest_writeq(qrs_qts(&f->d), c.pbl_addr + i * 8,
                         (m->base + ((first + i + shift) % 4) * RSF_PAGE) |
                         flags);
        }
    }
    return qrs_admin_cmd(&f->d, RS_CMD_ODP_RESOLVE, &c, sizeof(c), NULL,
                         NULL);
}

static void rsf_reg_odp_mr(RSFState *f, RSFMr *m, bool implicit)
{
    struct rs_cmd_reg_mr c = {
        .pd = f->pd,
        .page_shift = 12,
        .flags = RS_MR_F_ODP | (implicit ? RS_MR_F_ODP_IMPLICIT : 0),
        .access = rsf_access(RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT),
    };
    uint32_t rkey;

    m->len = 4 * RSF_PAGE;
    m->base = rsf_buf(f, m->len);
    if (!implicit) {
        c.iova = m->base;
        c.length = m->len;
    }
    rsf_ok(qrs_reg_mr(&f->d, &c, &m->key, &rkey), "REG_MR ODP");
    rsf_ok(rsf_odp_resolve(f, m, 0, 2, 0, RS_ODP_PAGE_READ |
                           RS_ODP_PAGE_WRITE, 0, 0), "ODP_RESOLVE");
}

/* An indirect or pattern key over the MRs registered before it. */
static void rsf_reg_mkey_list(RSFState *f, RSFMr *m, uint8_t op,
                              const void *ents, size_t size, uint16_t n,
                              uint32_t repeat, uint32_t len)
{
    struct rs_cmd_reg_mkey_list c = {
        .list_addr = guest_alloc(&f->alloc, size),
        .pd = f->pd,
        .nentries = n,
        .access = rsf_access(RS_ACCESS_ALL &
                             ~(RS_ACCESS_FLUSH_PERSISTENT |
                               RS_ACCESS_MW_BIND)),
        .repeat = repeat,
    };

    qtest_memwrite(qrs_qts(&f->d), c.list_addr, ents, size);
    m->base = 0;
    m->len = len;
    rsf_ok(qrs_admin_cmd(&f->d, op, &c, sizeof(c), &m->key, NULL),
           "REG_*_MKEY");
}

static void rsf_reg_mkeys(RSFState *f)
{
    const RSFMr *all = &f->mr[RSF_MR_ALL], *odp = &f->mr[RSF_MR_ODP];
    const RSFMr *ro = &f->mr[RSF_MR_READ_ONLY];
    struct rs_mkey_entry ie[4] = {
        { all->base + 3 * RSF_PAGE + 8, RSF_PAGE - 8, all->key },
        { ro->base + 16, 1000, ro->key },
        { all->base + 100, 2 * RSF_PAGE, all->key },
        { odp->base + RSF_PAGE, 2 * RSF_PAGE, odp->key },
    };
    struct rs_pattern_entry pe[2] = {
        { .addr = all->base + 24, .key = all->key, .bytes_count = 8,
          .bytes_skip = 56 },
        { .addr = odp->base, .key = odp->key, .bytes_count = 16,
          .bytes_skip = 48 },
    };

    rsf_reg_mkey_list(f, &f->mr[RSF_MR_IND], RS_CMD_REG_INDIRECT_MKEY, ie,
                      sizeof(ie), 4, 0, 5 * RSF_PAGE - 8 + 1000);
    rsf_reg_mkey_list(f, &f->mr[RSF_MR_PAT], RS_CMD_REG_PATTERN_MKEY, pe,
                      sizeof(pe), 2, 256, 256 * 24);
}

static void rsf_create_qp(RSFState *f, RSFQp *q, uint8_t type, uint32_t group)
{
    struct rs_cmd_create_qp *c = &q->c;

    memset(c, 0, sizeof(*c));
    c->qp_type = type;
    q->type = type;
    if (type == RS_QPT_XRC_TGT) {
        c->xrcd = f->xrcd;
        rsf_ok(qrs_create_qp(&f->d, c, &q->h, &q->qpn), "CREATE_QP");
        return;
    }
    if (type == RS_QPT_DCT) {
        c->pd = f->pd;
        c->recv_cq = f->cq[1];
        c->srq = f->dsrq;
        c->dc_key_lo = (uint32_t)q->dc_key;
        c->dc_key_hi = q->dc_key >> 32;
        rsf_ok(qrs_create_qp(&f->d, c, &q->h, &q->qpn), "CREATE_QP DCT");
        return;
    }
    c->pd = f->pd;
    c->send_cq = f->cq[0];
    c->sq_log_size = RSF_WQ_LOG;
    c->max_send_sge = 2;
    c->max_inline = 64;
    c->session_group = 0;
    c->sq_addr = rsf_buf(f, qrs_qp_sq_bytes(c));
    if (type != RS_QPT_XRC_INI && type != RS_QPT_DCI) {
        c->recv_cq = f->cq[1];
        c->rq_log_size = RSF_WQ_LOG;
        c->max_recv_sge = 2;
        c->rq_addr = rsf_buf(f, qrs_qp_rq_bytes(c));
    }
    rsf_ok(qrs_create_qp(&f->d, c, &q->h, &q->qpn), "CREATE_QP");
}

/* A DCI to RTS, a DCT to RTR: no address or PSNs of a peer. */
static void rsf_connect_dc(RSFState *f, RSFQp *q)
{
    bool dct = q->type == RS_QPT_DCT;
    struct rs_qp_attr a = {
        .path_mtu = RS_MTU_1024,
        .port_num = 1,
        .sq_psn = RSF_SQ_PSN,
        .access_flags = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE |
                        RS_ACCESS_REMOTE_READ | RS_ACCESS_REMOTE_ATOMIC,
        .max_rd_atomic = 4,
        .min_rnr_timer = 1,
        .timeout = 10,
        .retry_cnt = 3,
        .rnr_retry = 3,
    };

    a.cur_qp_state = RS_QPS_RESET;
    a.qp_state = RS_QPS_INIT;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, RS_QP_ATTR_STATE |
                         RS_QP_ATTR_PORT |
                         (dct ? RS_QP_ATTR_ACCESS_FLAGS : 0)),
           "MODIFY_QP INIT");
    a.cur_qp_state = RS_QPS_INIT;
    a.qp_state = RS_QPS_RTR;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, RS_QP_ATTR_STATE |
                         RS_QP_ATTR_PATH_MTU |
                         (dct ? RS_QP_ATTR_MIN_RNR_TIMER : 0)),
           "MODIFY_QP RTR");
    if (dct) {
        return;
    }
    a.cur_qp_state = RS_QPS_RTR;
    a.qp_state = RS_QPS_RTS;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, RS_QP_ATTR_STATE |
                         RS_QP_ATTR_SQ_PSN | RS_QP_ATTR_TIMEOUT |
                         RS_QP_ATTR_RETRY_CNT | RS_QP_ATTR_RNR_RETRY |
                         RS_QP_ATTR_MAX_QP_RD_ATOMIC), "MODIFY_QP RTS");
}

/* RESET -> INIT -> RTR -> RTS with the masks each QP type requires. */
static void rsf_connect(RSFState *f, RSFQp *q, uint32_t dest_qpn,
                        const uint8_t *dgid, uint32_t gid_index,
                        uint32_t group)
{
    bool rc = q->type == RS_QPT_RC || q->type == RS_QPT_XRC_INI ||
              q->type == RS_QPT_XRC_TGT;
    bool ud = q->type == RS_QPT_UD;
    struct rs_qp_attr a = {
        .path_mtu = RS_MTU_1024,
        .port_num = 1,
        .qkey = RSF_QKEY,
        .rq_psn = RSF_RQ_PSN,
        .sq_psn = RSF_SQ_PSN,
        .dest_qp_num = dest_qpn,
        .access_flags = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE |
                        RS_ACCESS_REMOTE_READ | RS_ACCESS_REMOTE_ATOMIC,
        .max_rd_atomic = 4,
        .max_dest_rd_atomic = 4,
        .min_rnr_timer = 1,
        .timeout = 10,
        .retry_cnt = 3,
        .rnr_retry = 3,
        .session_group = group,
    };
    uint32_t init = RS_QP_ATTR_STATE | RS_QP_ATTR_PKEY_INDEX |
                    RS_QP_ATTR_PORT |
                    (ud ? RS_QP_ATTR_QKEY : RS_QP_ATTR_ACCESS_FLAGS);
    uint32_t rtr = ud ? RS_QP_ATTR_STATE :
                   RS_QP_ATTR_STATE | RS_QP_ATTR_AV | RS_QP_ATTR_PATH_MTU |
                   RS_QP_ATTR_DEST_QPN | RS_QP_ATTR_RQ_PSN |
                   (rc ? RS_QP_ATTR_MAX_DEST_RD_ATOMIC |
                         RS_QP_ATTR_MIN_RNR_TIMER : 0) |
                   (group ? RS_QP_ATTR_SESSION_GROUP : 0);
    uint32_t rts = RS_QP_ATTR_STATE | RS_QP_ATTR_SQ_PSN |
                   (rc ? RS_QP_ATTR_TIMEOUT | RS_QP_ATTR_RETRY_CNT |
                         RS_QP_ATTR_RNR_RETRY | RS_QP_ATTR_MAX_QP_RD_ATOMIC :
                         0);

    memcpy(a.ah.dgid, dgid, 16);
    memcpy(a.ah.dmac, q->loop ? rsf_mac : rsf_remote_mac, 6);
    a.ah.hop_limit = 64;
    a.ah.gid_index = gid_index;

    a.cur_qp_state = RS_QPS_RESET;
    a.qp_state = RS_QPS_INIT;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, init), "MODIFY_QP INIT");
    a.cur_qp_state = RS_QPS_INIT;
    a.qp_state = RS_QPS_RTR;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, rtr), "MODIFY_QP RTR");
    a.cur_qp_state = RS_QPS_RTR;
    a.qp_state = RS_QPS_RTS;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, rts), "MODIFY_QP RTS");
}

static uint64_t rsf_slot(uint64_t ring, uint64_t bytes, uint8_t log,
                         uint32_t index)
{
    return ring + (uint64_t)(index & ((1u << log) - 1)) * (bytes >> log);
}

static void rsf_post_send(RSFState *f, RSFQp *q, struct rs_send_wqe_ctrl *w,
                          const struct rs_sge *sge)
{
    QTestState *s = qrs_qts(&f->d);
    uint64_t slot = rsf_slot(q->c.sq_addr, qrs_qp_sq_bytes(&q->c),
                             q->c.sq_log_size, q->sq_pi);

    qtest_memwrite(s, slot, w, sizeof(*w));
    if (sge) {
        qtest_memwrite(s, slot + sizeof(*w), sge, sizeof(*sge));
    }
    q->sq_pi++;
    qrs_db_writel(&f->d, 0, RS_DB_SQ, q->qpn | (q->sq_pi & 0xffff) << 16);
}

/* A receive on the QP's queue; an XRC QP's goes to the XRC SRQ. */
static void rsf_post_recv(RSFState *f, RSFQp *q, const struct rs_sge *sge)
{
    QTestState *s = qrs_qts(&f->d);
    bool xrc = q->type == RS_QPT_XRC_INI || q->type == RS_QPT_XRC_TGT;
    struct rs_recv_wqe_ctrl w = { .wr_id = 0x1000 + q->rq_pi, .num_sge = 1 };
    uint64_t slot;

    if (q->type == RS_QPT_DCI || q->type == RS_QPT_DCT) {
        /* A DCT's receives are its SRQ's; a DCI has none. */
        if (q->type == RS_QPT_DCT) {
            slot = rsf_slot(f->dsrq_c.ring_addr,
                            (uint64_t)qrs_recv_stride(1) <<
                            f->dsrq_c.log_size,
                            f->dsrq_c.log_size, f->dsrq_pi);
            qtest_memwrite(s, slot, &w, sizeof(w));
            qtest_memwrite(s, slot + sizeof(w), sge, sizeof(*sge));
            f->dsrq_pi++;
            qrs_db_writel(&f->d, 0, RS_DB_SRQ,
                          (f->dsrq & RS_HANDLE_INDEX_MASK) |
                          (f->dsrq_pi & 0xffff) << 16);
        }
        q->rq_pi++;
        qrs_db_writel(&f->d, 0, RS_DB_RQ, q->qpn | (q->rq_pi & 0xffff) << 16);
        return;
    }
    slot = xrc ?
        rsf_slot(f->srq_c.ring_addr,
                 (uint64_t)qrs_recv_stride(1) << f->srq_c.log_size,
                 f->srq_c.log_size, f->srq_pi) :
        rsf_slot(q->c.rq_addr, qrs_qp_rq_bytes(&q->c), q->c.rq_log_size,
                 q->rq_pi);

    qtest_memwrite(s, slot, &w, sizeof(w));
    qtest_memwrite(s, slot + sizeof(w), sge, sizeof(*sge));
    if (xrc) {
        f->srq_pi++;
        qrs_db_writel(&f->d, 0, RS_DB_SRQ,
                      (f->srq & RS_HANDLE_INDEX_MASK) |
                      (f->srq_pi & 0xffff) << 16);
        /* A doorbell for the receive queue XRC QPs do not have. */
    }
    q->rq_pi++;
    qrs_db_writel(&f->d, 0, RS_DB_RQ, q->qpn | (q->rq_pi & 0xffff) << 16);
}

/*
 * A BIND_MW WQE: window RSF_MW_1 or RSF_MW_2 (bit 0 of @sel) to @len bytes
 * of @mr (an MR or, refused, a window) at @off, with the remote rights in
 * bits 1-3 of @sel and the next tag.  The window's entry takes the new
 * binding whether or not the device refuses it: a wrong guess only makes
 * later requests through it fail, which the fuzzer wants too.
 */
static void rsf_post_bind(RSFState *f, RSFQp *q, uint32_t sel,
                          const RSFMr *mr, uint32_t off, uint32_t len,
                          uint8_t flags)
{
    RSFMr *mw = &f->mr[sel & 1 ? RSF_MW_2 : RSF_MW_1];
    uint32_t key = (mw->key & ~RS_MKEY_TAG_MASK) |
                   ((mw->key + 1) & RS_MKEY_TAG_MASK);
    struct rs_send_wqe_bind_mw b = {
        .wr_id = 0x2000 + q->sq_pi,
        .opcode = RS_WR_BIND_MW,
        .flags = flags | RS_WQE_F_SIGNALED,
        .mw_rkey = mw->key,
        .addr = mr->base + off,
        .length = len,
        .mr_lkey = mr->key,
        .new_rkey = key,
        .access = sel & (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ |
                         RS_ACCESS_REMOTE_ATOMIC),
    };
    struct rs_send_wqe_ctrl w;

    memcpy(&w, &b, sizeof(w));
    rsf_post_send(f, q, &w, NULL);
    mw->key = key;
    mw->base = b.addr;
    mw->len = MAX(len, 1);
}

/* A send WQE of @op from MR_ALL; remote address in @rmr at @roff. */
static void rsf_post_op(RSFState *f, RSFQp *q, uint8_t op, uint32_t len,
                        const RSFMr *rmr, uint32_t roff, uint8_t flags)
{
    const RSFMr *l = &f->mr[q->v6 ? RSF_MR_ALL6 : RSF_MR_ALL];
    struct rs_send_wqe_ctrl w = {
        .wr_id = 0x2000 + q->sq_pi,
        .opcode = op,
        .flags = flags | RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .remote_addr = rmr->base + roff,
        .rkey = rmr->key,
        .compare_add = 1,
        .swap = 2,
        .ah = f->ah,
        .remote_qpn = RSF_REMOTE_QPN,
        .remote_qkey = RSF_QKEY,
        /* SEND_INV, LOCAL_INV: the remote key, an MR's or a window's. */
        .imm_or_inv = rmr->key,
        .xrc_srqn = f->srq & RS_HANDLE_INDEX_MASK,
    };
    struct rs_sge sge = {
        .addr = l->base,
        .length = MIN(len, l->len),
        .lkey = l->key,
    };

    if (op == RS_WR_ATOMIC_CMP_SWP || op == RS_WR_ATOMIC_FETCH_ADD) {
        sge.length = 8;
        w.remote_addr &= ~7ull;
    }
    if (!q->c.sq_log_size) {
        /* An XRC target has no send queue: the doorbell alone. */
        q->sq_pi++;
        qrs_db_writel(&f->d, 0, RS_DB_SQ,
                      q->qpn | (q->sq_pi & 0xffff) << 16);
        return;
    }
    rsf_post_send(f, q, &w, &sge);
}

/*
 * A LAN receive ring with RSF_LAN_POSTED buffers (all on one page) and
 * every frame accepted, so raw and non-RoCE frames take the LAN path.
 */
static void rsf_lan_rx(RSFState *f)
{
    uint64_t ring = rsf_buf(f, sizeof(struct rs_lan_desc) << RSF_LAN_LOG);
    uint64_t buf = rsf_buf(f, RSF_LAN_BUF);
    uint32_t h, i;

    rsf_ok(qrs_create_lan_queue(&f->d, RS_LAN_RXQ, ring, RSF_LAN_LOG, 0, &h),
           "CREATE_LAN_QUEUE");
    rsf_ok(qrs_set_lan_rx_mode(&f->d, RS_LAN_RX_PROMISC |
                               RS_LAN_RX_ALLMULTI | RS_LAN_RX_BROADCAST),
           "SET_LAN_RX_MODE");
    for (i = 0; i < RSF_LAN_POSTED; i++) {
        struct rs_lan_desc desc = {
            .addr = cpu_to_le64(buf),
            .len = cpu_to_le16(RSF_LAN_BUF),
            .status = qrs_ring_phase(i, RSF_LAN_LOG) ^ RS_LAN_S_PHASE,
        };

        qtest_memwrite(qrs_qts(&f->d), ring + i * sizeof(desc), &desc,
                       sizeof(desc));
    }
    qrs_db_writel(&f->d, 0, RS_DB_LAN_RX, RSF_LAN_POSTED);
}

static void rsf_bring_up(RSFState *f, QTestState *s)
{
    struct rs_cmd_create_session sc = { .src_port = 49152, .dst_port = 4791,
                                        .gid_index = 0 };
    struct rs_cmd_create_session_group gc = { .nsessions = 1,
                                              .policy = RS_GROUP_ROUND_ROBIN };
    struct rs_cmd_create_ah ac = { .hop_limit = 64, .gid_index = 0 };
    uint8_t gid[16], rgid[16], lgid[16];
    uint32_t sess, group, i, j;

    memset(f, 0, sizeof(*f));
    f->bus = qpci_new_pc(s, NULL);
    pc_alloc_init(&f->alloc, s, 0);
    qrs_attach_new(&f->d, f->bus, RSF_DEVFN, &f->alloc);
    f->d.idle = rsf_idle;
    qrs_admin_init(&f->d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG);

    rsf_gid_v4(gid, rsf_ip_self);
    rsf_add_gid(f, 0, RS_GID_ROCE_V2_IPV4, gid);
    rsf_add_gid(f, 1, RS_GID_ROCE_V2_IPV6, rsf_ip6_self);
    rsf_ok(qrs_create_pd(&f->d, &f->pd), "CREATE_PD");
    rsf_ok(qrs_create_pd(&f->d, &f->pd2), "CREATE_PD");
    for (i = 0; i < 2; i++) {
        uint64_t ring = rsf_buf(f, sizeof(struct rs_cqe) << RSF_CQ_LOG);

        rsf_ok(qrs_create_cq(&f->d, ring, RSF_CQ_LOG, 0, 0, &f->cq[i]),
               "CREATE_CQ");
    }
    rsf_reg_mr(f, &f->mr[RSF_MR_ALL], 4,
               RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT, 0);
    rsf_reg_mr(f, &f->mr[RSF_MR_READ_ONLY], 1,
               RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_READ, 0);
    rsf_reg_mr(f, &f->mr[RSF_MR_ALL6], 2,
               RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT, 1);
    rsf_reg_big_mr(f, &f->mr[RSF_MR_BIG]);
    rsf_reg_odp_mr(f, &f->mr[RSF_MR_ODP], false);
    rsf_reg_odp_mr(f, &f->mr[RSF_MR_ODPI], true);
    rsf_reg_mkeys(f);

    /* Loopback: a session to our own address, as the qtests do. */
    memcpy(sc.dst_ip, gid, 16);
    memcpy(sc.dmac, rsf_mac, 6);
    rsf_ok(qrs_create_session(&f->d, &sc, &sess), "CREATE_SESSION");
    gc.session[0] = sess;
    rsf_ok(qrs_create_session_group(&f->d, &gc, &group),
           "CREATE_SESSION_GROUP");
    rsf_gid_v4(rgid, rsf_ip_remote);
    memcpy(ac.dgid, rgid, 16);
    memcpy(ac.dmac, rsf_remote_mac, 6);
    ac.pd = f->pd;
    rsf_ok(qrs_create_ah(&f->d, &ac, &f->ah), "CREATE_AH");

    f->qp[RSF_QP_LOOP_A].loop = f->qp[RSF_QP_LOOP_B].loop = true;
    f->qp[RSF_QP_RC6].v6 = true;
    rsf_create_qp(f, &f->qp[RSF_QP_LOOP_A], RS_QPT_RC, group);
    rsf_create_qp(f, &f->qp[RSF_QP_LOOP_B], RS_QPT_RC, group);
    rsf_create_qp(f, &f->qp[RSF_QP_RC], RS_QPT_RC, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_UC], RS_QPT_UC, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_UD], RS_QPT_UD, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_RC6], RS_QPT_RC, 0);
    {
        struct rs_cmd_create_pd xc = { 0 };

        rsf_ok(qrs_admin_cmd(&f->d, RS_CMD_CREATE_XRCD, &xc, sizeof(xc),
                             &f->xrcd, NULL), "CREATE_XRCD");
        f->srq_c = (struct rs_cmd_create_srq) {
            .pd = f->pd, .log_size = RSF_WQ_LOG, .max_sge = 1,
            .xrcd = f->xrcd, .cq = f->cq[1],
        };
        f->srq_c.ring_addr = rsf_buf(f, (uint64_t)qrs_recv_stride(1) <<
                                        RSF_WQ_LOG);
        rsf_ok(qrs_create_srq(&f->d, &f->srq_c, &f->srq), "CREATE_SRQ");
    }
    rsf_create_qp(f, &f->qp[RSF_QP_XINI], RS_QPT_XRC_INI, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_XTGT], RS_QPT_XRC_TGT, 0);
    f->dsrq_c = (struct rs_cmd_create_srq) {
        .pd = f->pd, .log_size = RSF_WQ_LOG, .max_sge = 1,
    };
    f->dsrq_c.ring_addr = rsf_buf(f, (uint64_t)qrs_recv_stride(1) <<
                                     RSF_WQ_LOG);
    rsf_ok(qrs_create_srq(&f->d, &f->dsrq_c, &f->dsrq), "CREATE_SRQ");
    rsf_create_qp(f, &f->qp[RSF_QP_DCI], RS_QPT_DCI, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_DCT], RS_QPT_DCT, 0);
    f->qp[RSF_QP_DCT2].dc_key = RSF_DC_KEY2;
    rsf_create_qp(f, &f->qp[RSF_QP_DCT2], RS_QPT_DCT, 0);
    memcpy(lgid, gid, 16);
    rsf_connect(f, &f->qp[RSF_QP_LOOP_A], f->qp[RSF_QP_LOOP_B].qpn, lgid, 0,
                group);
    rsf_connect(f, &f->qp[RSF_QP_LOOP_B], f->qp[RSF_QP_LOOP_A].qpn, lgid, 0,
                group);
    rsf_connect(f, &f->qp[RSF_QP_RC], RSF_REMOTE_QPN, rgid, 0, 0);
    rsf_connect(f, &f->qp[RSF_QP_UC], RSF_REMOTE_QPN, rgid, 0, 0);
    rsf_connect(f, &f->qp[RSF_QP_UD], 0, rgid, 0, 0);
    rsf_connect(f, &f->qp[RSF_QP_RC6], RSF_REMOTE_QPN, rsf_ip6_remote, 1, 0);
    rsf_connect(f, &f->qp[RSF_QP_XINI], RSF_REMOTE_QPN, rgid, 0, 0);
    rsf_connect(f, &f->qp[RSF_QP_XTGT], RSF_REMOTE_QPN, rgid, 0, 0);
    rsf_connect_dc(f, &f->qp[RSF_QP_DCI]);
    rsf_connect_dc(f, &f->qp[RSF_QP_DCT]);
    rsf_connect_dc(f, &f->qp[RSF_QP_DCT2]);

    /*
     * Memory windows, bound before the requests below leave the send
     * queues waiting (a bind runs once every earlier WQE completed).
     */
    for (i = RSF_MW_1; i <= RSF_MW_2; i++) {
        struct rs_cmd_alloc_mw ac = {
            .pd = f->pd,
            .type = i == RSF_MW_1 ? RS_MW_TYPE_1 : RS_MW_TYPE_2,
        };

        rsf_ok(qrs_admin_cmd(&f->d, RS_CMD_ALLOC_MW, &ac, sizeof(ac),
                             &f->mr[i].key, NULL), "ALLOC_MW");
    }
    if (!rsf_wire.keyless) {
        rsf_post_bind(f, &f->qp[RSF_QP_LOOP_A], 0x0e, &f->mr[RSF_MR_ALL],
                      RSF_PAGE, 2 * RSF_PAGE, 0);
        rsf_post_bind(f, &f->qp[RSF_QP_RC], 0x0f, &f->mr[RSF_MR_ALL], 0,
                      RSF_PAGE, 0);
    } else {
        /* Unbound: their keys name the ranges they would have had. */
        f->mr[RSF_MW_1].base = f->mr[RSF_MR_ALL].base + RSF_PAGE;
        f->mr[RSF_MW_1].len = 2 * RSF_PAGE;
        f->mr[RSF_MW_2].base = f->mr[RSF_MR_ALL].base;
        f->mr[RSF_MW_2].len = RSF_PAGE;
    }

    /* Receives everywhere, so SENDs from the wire find a buffer. */
    for (i = 0; i < RSF_NQP; i++) {
        const RSFMr *m = &f->mr[f->qp[i].v6 ? RSF_MR_ALL6 : RSF_MR_ALL];

        for (j = 0; j < 4; j++) {
            struct rs_sge sge = {
                .addr = m->base + (j % (m->len / RSF_PAGE)) * RSF_PAGE,
                .length = RSF_PAGE,
                .lkey = m->key,
            };

            rsf_post_recv(f, &f->qp[i], &sge);
        }
    }

    /*
     * Requests outstanding towards the remote peers, so that ACKs, READ
     * responses and atomic ACKs from the input find something to
     * complete: PSNs RSF_SQ_PSN (WRITE), +1..+2 (READ of 2 KiB), +3
     * (atomic), +4 (SEND).  Keyless inputs post none.
     */
    if (rsf_wire.keyless) {
        rsf_lan_rx(f);
        rsf_settle(s);
        return;
    }
    for (i = RSF_QP_RC; i <= RSF_QP_RC6; i += RSF_QP_RC6 - RSF_QP_RC) {
        RSFQp *q = &f->qp[i];
        const RSFMr *m = &f->mr[q->v6 ? RSF_MR_ALL6 : RSF_MR_ALL];

        rsf_post_op(f, q, RS_WR_RDMA_WRITE, 64, m, 0, 0);
        rsf_post_op(f, q, RS_WR_RDMA_READ, 2048, m, RSF_PAGE, 0);
        rsf_post_op(f, q, RS_WR_ATOMIC_FETCH_ADD, 8, m, 64, 0);
        rsf_post_op(f, q, RS_WR_SEND, 100, m, 0, 0);
    }
    /* ... and from the XRC initiator: XRC responses complete them. */
    rsf_post_op(f, &f->qp[RSF_QP_XINI], RS_WR_RDMA_WRITE, 64,
                &f->mr[RSF_MR_ALL], 0, 0);
    rsf_post_op(f, &f->qp[RSF_QP_XINI], RS_WR_RDMA_READ, 2048,
                &f->mr[RSF_MR_ALL], RSF_PAGE, 0);
    rsf_post_op(f, &f->qp[RSF_QP_XINI], RS_WR_ATOMIC_FETCH_ADD, 8,
                &f->mr[RSF_MR_ALL], 64, 0);
    rsf_post_op(f, &f->qp[RSF_QP_XINI], RS_WR_SEND, 100,
                &f->mr[RSF_MR_ALL], 0, 0);
    /*
     * The DCI's CONNECT to the remote's DCT RSF_REMOTE_QPN (key: the
     * WQE's qkey and XRC SRQ fields): a REPLY from the input (opcode
     * 0xc3, PSN RSF_SQ_PSN) connects it, then ACKs complete the WQEs.
     */
    rsf_post_op(f, &f->qp[RSF_QP_DCI], RS_WR_RDMA_WRITE, 64,
                &f->mr[RSF_MR_ALL], 0, 0);
    rsf_post_op(f, &f->qp[RSF_QP_DCI], RS_WR_RDMA_READ, 2048,
                &f->mr[RSF_MR_ALL], RSF_PAGE, 0);
    rsf_lan_rx(f);
    rsf_settle(s);
}

/*
 * Frames of the input the adapter left in its queue (its receive returned
 * 0: no room) are dropped with the reset: every input starts from the
 * same state.
 */
static void rsf_tear_down(RSFState *f, QTestState *s)
{
    rsf_settle(s);
    qrs_detach(&f->d);
    qpci_free_pc(f->bus);
    alloc_destroy(&f->alloc);
    fuzz_reset(s);
    qemu_purge_queued_packets(qemu_find_netdev("n0"));
    rsf_settle(s);
}

/* ------------------------------------------------------------------ */
/* Frames                                                              */
/* ------------------------------------------------------------------ */

/*
 * The ICRC of IBTA Annex A17: CRC-32 over 8 bytes of ones standing for
 * the LRH, the IP header with its variant fields as ones, the UDP header
 * with the checksum as ones, the BTH with byte 4 as ones, then the rest
 * of the packet.  Written independently of the device's code.
 */
static uint32_t rsf_icrc(const uint8_t *f, size_t icrc_off, bool v6)
{
    uint8_t h[8 + 40 + 8 + 12];
    unsigned l3 = v6 ? 40 : 20, n = 8 + l3 + 8 + 12;
    uint32_t crc;

    memset(h, 0xff, 8);
    memcpy(h + 8, f + 14, l3 + 8 + 12);
    if (v6) {
        h[8] |= 0x0f;
        h[9] = h[10] = h[11] = 0xff;
        h[8 + 7] = 0xff;
    } else {
        h[8 + 1] = 0xff;
        h[8 + 8] = 0xff;
        h[8 + 10] = h[8 + 11] = 0xff;
    }
    h[8 + l3 + 6] = h[8 + l3 + 7] = 0xff;
    h[8 + l3 + 8 + 4] = 0xff;
    crc = crc32(0, h, n);
    return crc32(crc, f + 14 + l3 + 8 + 12, icrc_off - (14 + l3 + 8 + 12));
}

static uint16_t rsf_ip_csum(const uint8_t *h)
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

/*
 * Ethernet, IP and UDP headers from @smac/@sip to @dmac/@dip, then @l4
 * (BTH onwards, without ICRC), then the ICRC (inverted when @bad_icrc).
 * Returns the frame length.
 */
static size_t rsf_build_at(uint8_t *f, bool v6, const uint8_t *smac,
                           const uint8_t *dmac, const uint8_t *sip,
                           const uint8_t *dip, uint16_t sport,
                           const uint8_t *l4, size_t l4len, bool bad_icrc)
{
    unsigned l3 = v6 ? 40 : 20;
    size_t udplen = 8 + l4len + 4, len = 14 + l3 + udplen;
    uint8_t *ip = f + 14, *udp = ip + l3;

    g_assert(l4len >= 12);
    memcpy(f, dmac, 6);
    memcpy(f + 6, smac, 6);
    if (v6) {
        stw_be_p(f + 12, 0x86dd);
        memset(ip, 0, 40);
        stl_be_p(ip, 0x60000000);
        stw_be_p(ip + 4, udplen);
        ip[6] = 17;
        ip[7] = 64;
        memcpy(ip + 8, sip, 16);
        memcpy(ip + 24, dip, 16);
    } else {
        stw_be_p(f + 12, 0x0800);
        memset(ip, 0, 20);
        ip[0] = 0x45;
        stw_be_p(ip + 2, 20 + udplen);
        stw_be_p(ip + 6, 0x4000);           /* DF */
        ip[8] = 64;
        ip[9] = 17;
        memcpy(ip + 12, sip, 4);
        memcpy(ip + 16, dip, 4);
        stw_be_p(ip + 10, rsf_ip_csum(ip));
    }
    stw_be_p(udp, sport);
    stw_be_p(udp + 2, 4791);
    stw_be_p(udp + 4, udplen);
    stw_be_p(udp + 6, 0);
    memcpy(udp + 8, l4, l4len);
    stl_le_p(f + len - 4, rsf_icrc(f, len - 4, v6) ^ (bad_icrc ? 1 : 0));
    return len;
}

/*
 * A frame from @q's peer to the adapter's GID of @q; over IPv4 from the
 * spoofed source while rsf_op_spoof runs.
 */
static size_t rsf_build(uint8_t *f, const RSFQp *q, uint16_t sport,
                        const uint8_t *l4, size_t l4len, bool bad_icrc)
{
    const uint8_t *smac = q->loop ? rsf_mac : rsf_remote_mac;

    if (q->v6) {
        return rsf_build_at(f, true, smac, rsf_mac, rsf_ip6_remote,
                            rsf_ip6_self, sport, l4, l4len, bad_icrc);
    }
    if (rsf_spoof.on) {
        return rsf_build_at(f, false, rsf_spoof.mac, rsf_mac, rsf_spoof.ip,
                            rsf_ip_self, sport, l4, l4len, bad_icrc);
    }
    return rsf_build_at(f, false, smac, rsf_mac,
                        q->loop ? rsf_ip_self : rsf_ip_remote, rsf_ip_self,
                        sport, l4, l4len, bad_icrc);
}

/* Opcodes (low 5 bits) whose first extension header is a RETH/ATMETH. */
static bool rsf_op_has_va(uint8_t op)
{
    switch (op & 0x1f) {
    case 0x06: case 0x0a: case 0x0b: case 0x0c: case 0x13: case 0x14:
        return true;
    }
    return false;
}

/*
 * Opcodes the completer takes: ACK, READ responses, atomic ACK, the
 * page-fault pause; and the DC_CONNECT_REPLY a DCI takes.
 */
static bool rsf_op_is_resp(uint8_t op)
{
    return ((op & 0x1f) >= 0x0d && (op & 0x1f) <= 0x12) ||
           op == 0xc0 || op == 0xc1 || op == 0xc3;
}

static RSFQp *rsf_qp_sel(RSFState *f, uint8_t sel)
{
    return &f->qp[sel % RSF_NQP];
}

/*
 * A RoCE frame to one of our QPs.  Operands: qp, opcode, BTH flags,
 * control (bit 0: raw opcode, 1: raw dest QPN in the next 3 bytes,
 * 2: valid key and address from MR control>>4 & 3, 3: bad ICRC,
 * 6: an XRC request's XRCETH from the input, not the XRC SRQ's number),
 * PSN delta (signed), UDP source port low byte, ack request, then the
 * extension headers and payload.  An XRC request to the target gets
 * the XRCETH after the BTH (the input's headers follow it).  To a DCT,
 * control bit 2 puts a DC key in a CONNECT's or DISCONNECT's DCETH: the
 * DCT's own, or with bit 4 the other DCT's.
 */
static void rsf_op_roce(RSFState *f, QTestState *s, const uint8_t *d,
                        size_t len)
{
    static const uint8_t tbits[] = {
        [RS_QPT_RC] = 0x00, [RS_QPT_UC] = 0x20, [RS_QPT_UD] = 0x60,
        [RS_QPT_XRC_INI] = 0xa0, [RS_QPT_XRC_TGT] = 0xa0,
    };
    uint8_t l4[12 + RSF_MAX_FRAME], frame[RSF_MAX_FRAME + 128];
    uint8_t op, ctl, bth_flags, sport, ackreq;
    uint32_t qpn, psn;
    size_t ext, n, h = 12;       /* where the input's headers go */
    RSFQp *q;

    if (len < 7) {
        return;
    }
    q = rsf_qp_sel(f, d[0]);
    ctl = d[3];
    op = ctl & 1 ? d[1] : tbits[q->type] | (d[1] & 0x1f);
    if (q->type == RS_QPT_DCT && !(ctl & 1)) {
        op = 0xc2 + d[1] % 3;   /* DC_CONNECT, _REPLY, _DISCONNECT */
    }
    bth_flags = d[2] & 0xf0;                /* SE, M, pad; TVer 0 */
    sport = d[5];
    ackreq = d[6] & 0x80;
    qpn = q->qpn;
    if (rsf_op_is_resp(op)) {
        psn = RSF_SQ_PSN + (int8_t)d[4];
    } else {
        psn = RSF_RQ_PSN + q->rx_frames + (int8_t)d[4];
    }
    d += 7;
    len -= 7;
    if (ctl & 2 && len >= 3) {
        qpn = d[0] << 16 | d[1] << 8 | d[2];
        d += 3;
        len -= 3;
    }
    if (q->type == RS_QPT_XRC_TGT && !rsf_op_is_resp(op) &&
        (op & 0xe0) == 0xa0) {
        stl_be_p(l4 + 12, ctl & 0x40 && len >= 4 ? ldl_be_p(d) :
                 f->srq & RS_HANDLE_INDEX_MASK);
        if (ctl & 0x40 && len >= 4) {
            d += 4;
            len -= 4;
        }
        h = 16;
    }
    ext = MIN(len, sizeof(l4) - h - 28);

    l4[0] = op;
    l4[1] = bth_flags;
    stw_be_p(l4 + 2, 0xffff);
    stl_be_p(l4 + 4, qpn);
    stl_be_p(l4 + 8, (psn & 0xffffff) | (uint32_t)ackreq << 24);
    memcpy(l4 + h, d, ext);
    n = h + ext;
    if (q->type == RS_QPT_UD && (op & 0xe0) == 0x60 && n >= 20 &&
        (ctl & 4)) {
        stl_be_p(l4 + 12, RSF_QKEY);
    } else if (q->type == RS_QPT_DCT && (ctl & 4) &&
               (op == 0xc2 || op == 0xc4)) {
        bool other = ctl & 0x10;
        const RSFQp *k = (q == &f->qp[RSF_QP_DCT]) != other ?
                         &f->qp[RSF_QP_DCT] : &f->qp[RSF_QP_DCT2];

        if (n < h + 16) {
            memset(l4 + n, 0, h + 16 - n);
            n = h + 16;
        }
        stq_be_p(l4 + h, k->dc_key);
    } else if ((ctl & 4) && rsf_op_has_va(op)) {
        const RSFMr *m = &f->mr[(ctl >> 4) % RSF_NMR];
        size_t need = h + ((op & 0x1f) >= 0x13 ? 28 : 16);  /* ATMETH, RETH */
        uint64_t va;

        if (n < need) {
            memset(l4 + n, 0, need - n);
            n = need;
        }
        va = m->base + ldl_be_p(l4 + h + 4) % m->len;
        if ((op & 0x1f) >= 0x13) {
            va &= ~7ull;
        }
        stq_be_p(l4 + h, va);
        stl_be_p(l4 + h + 8, m->key);
        if ((op & 0x1f) < 0x13) {
            stl_be_p(l4 + h + 12, ldl_be_p(l4 + h + 12) % (m->len + 1));
        }
    }
    if (!rsf_op_is_resp(op)) {
        q->rx_frames++;
    }
    n = rsf_build(frame, q, 0xc000 | sport, l4, n, ctl & 8);
    rsf_send_frame(frame, n);
}

/* A raw Ethernet frame, exactly the input. */
static void rsf_op_raw(RSFState *f, QTestState *s, const uint8_t *d,
                       size_t len)
{
    rsf_send_frame(d, len);
}

/* Valid headers to QP operand's GID; BTH onwards from the input. */
static void rsf_op_bth(RSFState *f, QTestState *s, const uint8_t *d,
                       size_t len)
{
    uint8_t frame[RSF_MAX_FRAME + 128];
    size_t n;

    uint8_t l4[RSF_MAX_FRAME] = { 0 };

    if (len < 2) {
        return;
    }
    len = MIN(len - 2, RSF_MAX_FRAME - 128);
    memcpy(l4, d + 2, len);
    n = rsf_build(frame, rsf_qp_sel(f, d[0]), 0xc000 | d[1], l4,
                  MAX(len, 12), false);
    rsf_send_frame(frame, n);
}

/* Virtual time: retransmission, RNR and ACK timers. */
static void rsf_op_clock(RSFState *f, QTestState *s, const uint8_t *d,
                         size_t len)
{
    uint64_t ns = 0;

    memcpy(&ns, d, MIN(len, sizeof(ns)));
    qtest_clock_step(s, le64_to_cpu(ns) % RSF_MAX_CLOCK_NS + 1);
}

/*
 * A work request: qp, opcode, flags, MR for the remote side, length
 * (2 bytes), remote offset (2 bytes).
 */
static void rsf_op_post_send(RSFState *f, QTestState *s, const uint8_t *d,
                             size_t len)
{
    const RSFMr *m;

    if (len < 8 || rsf_wire.keyless) {
        return;
    }
    m = &f->mr[d[3] % RSF_NMR];
    if (d[1] % (RS_WR_BIND_MW + 1) == RS_WR_BIND_MW) {
        rsf_post_bind(f, rsf_qp_sel(f, d[0]), d[2] >> 4, m,
                      lduw_le_p(d + 6) % m->len, lduw_le_p(d + 4),
                      d[2] & (RS_WQE_F_SOLICITED | RS_WQE_F_FENCE));
        return;
    }
    rsf_post_op(f, rsf_qp_sel(f, d[0]), d[1] % (RS_WR_BIND_MW + 1),
                lduw_le_p(d + 4), m, lduw_le_p(d + 6) % m->len,
                d[2] & (RS_WQE_F_SOLICITED | RS_WQE_F_FENCE));
}

/* A receive: qp, MR, length (2 bytes), offset (2 bytes). */
static void rsf_op_post_recv(RSFState *f, QTestState *s, const uint8_t *d,
                             size_t len)
{
    const RSFMr *m;
    struct rs_sge sge;

    if (len < 6) {
        return;
    }
    m = &f->mr[d[1] % RSF_NMR];
    sge.addr = m->base + lduw_le_p(d + 4) % m->len;
    sge.length = lduw_le_p(d + 2);
    sge.lkey = m->key;
    rsf_post_recv(f, rsf_qp_sel(f, d[0]), &sge);
}

/* CQ doorbells: cq, consumer index advance, arm flags. */
static void rsf_op_cq(RSFState *f, QTestState *s, const uint8_t *d,
                      size_t len)
{
    unsigned i;

    if (len < 3) {
        return;
    }
    i = d[0] & 1;
    f->cq_ci[i] += d[1];
    qrs_db_writel(&f->d, 0, RS_DB_CQ_CI,
                  (f->cq[i] & RS_HANDLE_INDEX_MASK) |
                  (f->cq_ci[i] & 0xffff) << 16);
    if (d[2] & 3) {
        qrs_db_writel(&f->d, 0, RS_DB_CQ_ARM,
                      (f->cq[i] & RS_HANDLE_INDEX_MASK) | (d[2] & 3) << 16);
    }
}

/*
 * The driver's side of on-demand paging: MR (ODP, implicit ODP or any
 * other key), action (0 resolve, 1 invalidate, 2 resolve with F_FAIL,
 * 3 resolve with the input's seq), first page, pages, page shift, entry
 * flags, then for action 3 the seq (4 bytes).
 */
static void rsf_op_odp(RSFState *f, QTestState *s, const uint8_t *d,
                       size_t len)
{
    RSFMr *m;
    uint32_t seq;

    if (len < 6) {
        return;
    }
    m = &f->mr[d[0] % RSF_NMR];
    seq = d[1] % 4 == 3 && len >= 10 ? ldl_le_p(d + 6) : m->seq;
    switch (d[1] % 4) {
    case 1: {
        struct rs_cmd_odp_invalidate c = {
            .key = m->key, .va = m->base + (d[2] % 8) * RSF_PAGE,
            .length = (uint64_t)d[3] * RSF_PAGE / 2 + (d[4] & 1),
        };

        if (qrs_admin_cmd(&f->d, RS_CMD_ODP_INVALIDATE, &c, sizeof(c),
                          NULL, NULL) == RS_STATUS_OK) {
            m->seq++;
        }
        break;
    }
    case 2:
        rsf_odp_resolve(f, m, d[2] % 8, d[3] % 10, 0, 0, seq,
                        RS_ODP_RESOLVE_F_FAIL);
        break;
    default:
        rsf_odp_resolve(f, m, d[2] % 8, d[3] % 10, d[4], d[5] & 0xfff, seq,
                        0);
        break;
    }
}

/*
 * REREG_MR (ABI 1.7) between the frames: key (any of the table: windows,
 * ODP, indirect and pattern keys are refused), flags (bits 0-2 RS_REREG_*,
 * bit 3 the reserved word set), access (16 bits; a keyless input's keeps
 * local write at most), PD (0 the bring-up's, 1 the second one, else that
 * raw handle), pages (bits 0-2 mod 5: a translation of the key's IOVA
 * onto pages of RSF_MR_ALL's buffer, 0 an empty one; bit 7: npages one
 * off), first of those pages, mr_flags.  The key's IOVA and length as the
 * other operations know them stay, so their frames now miss or hit the
 * new translation, the new PD (no QP has it) or the new rights.
 */
static void rsf_op_rereg(RSFState *f, QTestState *s, const uint8_t *d,
                         size_t len)
{
    const RSFMr *m, *all = &f->mr[RSF_MR_ALL];
    struct rs_cmd_rereg_mr c = { 0 };
    uint32_t i, n, first;

    if (len < 8) {
        return;
    }
    m = &f->mr[d[0] % RSF_NMR];
    c.handle = m->key;
    c.flags = d[1] & RS_REREG_ALL;
    c.rsvd = d[1] >> 3 & 1;
    c.access = rsf_access(lduw_le_p(d + 2));
    c.pd = d[4] == 0 ? f->pd : d[4] == 1 ? f->pd2 : d[4];
    n = (d[5] & 7) % 5;
    first = d[6] % 4;
    c.iova = m->base;
    c.length = (uint64_t)n * RSF_PAGE;
    c.npages = n + (d[5] >> 7);
    c.page_shift = 12;
    c.mr_flags = d[7];
    c.pbl_addr = guest_alloc(&f->alloc, 8 * (n + 1));
    for (i = 0; i < n; i++) {
        qtest_writeq(s, c.pbl_addr + i * 8,
                     all->base + ((first + i) % 4) * RSF_PAGE);
    }
    qrs_admin_cmd(&f->d, RS_CMD_REREG_MR, &c, sizeof(c), NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* Bundles, spoofed sources, the bundle negotiation                    */
/* ------------------------------------------------------------------ */

typedef void RSFOp(RSFState *f, QTestState *s, const uint8_t *d, size_t len);

static void rsf_bundle_emit(void);

static void rsf_bundle_add(const uint8_t *frame, size_t len)
{
    RSFBundle *b = &rsf_bun;

    if (b->len + 2 + len > sizeof(b->buf)) {
        rsf_bundle_emit();
        rsf_inject(frame, len);
        return;
    }
    stw_be_p(b->buf + b->len, len);
    memcpy(b->buf + b->len + 2, frame, len);
    b->len += 2 + len;
    if (++b->n >= b->want) {
        rsf_bundle_emit();
    }
}

/* Add @add to a RoCE frame's PSN; its ICRC stays valid (or invalid). */
static void rsf_bump_psn(uint8_t *f, size_t len, uint32_t add)
{
    bool v6 = rsf_is_roce6(f, len);
    size_t bth = v6 ? 14 + 40 + 8 : RSF_BTH;
    bool ok;
    uint32_t psn;

    if ((!v6 && !rsf_is_roce4(f, len)) || len < bth + 12 + 4) {
        return;
    }
    ok = ldl_le_p(f + len - 4) == rsf_icrc(f, len - 4, v6);
    psn = ldl_be_p(f + bth + 8);
    stl_be_p(f + bth + 8, (psn & 0xff000000) | ((psn + add) & 0xffffff));
    stl_le_p(f + len - 4, rsf_icrc(f, len - 4, v6) ^ (ok ? 0 : 1));
}

/*
 * The bundle of the frames collected: outer Ethernet/IPv4/UDP headers of
 * the first frame (of the RC QP's peer if it has none), a BTH with
 * opcode 0xc7 to QP 1, count and reserved, then every frame behind its
 * length; with the fill flag the frames again and again (their PSNs
 * moved on by psn_step per round with the PSN flag) while they fit.
 */
static void rsf_bundle_emit(void)
{
    RSFBundle *b = &rsf_bun;
    uint8_t *f = rsf_bun_out;
    size_t cap = b->flags & 4 ? RSF_MAX_BIG : RSF_MAX_BUNDLE;
    size_t off = RSF_PL + 4, src, ilen;
    uint32_t count = 0, round;

    b->on = false;
    if (!b->n) {
        return;
    }
    if (b->cap >= RSF_PL + 4) {
        cap = MIN(cap, b->cap);
    }
    if (rsf_is_roce4(b->buf + 2, lduw_be_p(b->buf))) {
        memcpy(f, b->buf + 2, RSF_BTH);
    } else {
        uint8_t l4[12] = { 0 };

        rsf_build(f, &rsf.qp[RSF_QP_RC], 0xc000, l4, sizeof(l4), false);
    }
    memset(f + RSF_BTH, 0, 16);
    f[RSF_BTH] = 0xc7;
    stw_be_p(f + RSF_BTH + 2, 0xffff);
    stl_be_p(f + RSF_BTH + 4, 1);
    for (round = 0; count < 0xffff; round++) {
        for (src = 0; src < b->len && count < 0xffff; src += 2 + ilen) {
            ilen = lduw_be_p(b->buf + src);
            if (off + 2 + ilen > cap) {
                goto full;
            }
            stw_be_p(f + off, ilen);
            memcpy(f + off + 2, b->buf + src + 2, ilen);
            if (round && (b->flags & 2)) {
                rsf_bump_psn(f + off + 2, ilen, round * b->psn_step);
            }
            off += 2 + ilen;
            count++;
        }
        if (!(b->flags & 1)) {
            break;
        }
    }
full:
    stw_be_p(f + RSF_PL, b->flags & 8 ? count + b->count_adj : count);
    stw_be_p(f + RSF_IP + 2, off - RSF_IP);
    stw_be_p(f + RSF_IP + 10, 0);
    stw_be_p(f + RSF_IP + 10, rsf_ip_csum(f + RSF_IP));
    stw_be_p(f + RSF_IP + 24, off - RSF_IP - 20);
    stw_be_p(f + RSF_IP + 26, 0);
    b->n = b->len = 0;
    rsf_inject(f, off);
}

/*
 * A BUNDLE of the frames of the next operations: frames (1 + d[0] % 64),
 * flags (bit 0: fill up to the cap with the frames again, bit 1: moving
 * their PSNs on by the PSN step each round, bit 2: cap at the IPv4
 * limit (65549 bytes) rather than 64 KiB, bit 3: count off by the
 * signed adjustment), cap (2 bytes, LE; below 58: none), PSN step
 * (default: the frames' number), count adjustment.  The bundle goes
 * when it has its frames, at the next bundle operation or at the
 * input's end.
 */
static void rsf_op_bundle(RSFState *f, QTestState *s, const uint8_t *d,
                          size_t len)
{
    RSFBundle *b = &rsf_bun;

    rsf_bundle_emit();
    b->on = true;
    b->want = 1 + (len ? d[0] % 64 : 1);
    b->flags = len > 1 ? d[1] : 0;
    b->cap = len > 3 ? lduw_le_p(d + 2) : 0;
    b->psn_step = len > 4 && d[4] ? d[4] : b->want;
    b->count_adj = len > 5 ? (int8_t)d[5] : 0;
    b->n = b->len = 0;
}

/* The operation of selector byte @sel. */
static RSFOp *rsf_op_get(uint8_t sel);

/*
 * The next operation (selector, then its operands) from @n rotating
 * sources: sources (1 + d[0] % 64), first index, kind (bits 0-1: 10.1.x.y
 * by index; the remote 10.0.0.2; 10.0.0.<index>, which includes the
 * adapter's own address; 0.0.0.0, 255.255.255.255, 127.0.0.1, our own,
 * a multicast one and the remote by index; bit 2: a MAC per source
 * rather than the remote's).  Over IPv4 only; raw frames are the input's.
 */
static void rsf_op_spoof(RSFState *f, QTestState *s, const uint8_t *d,
                         size_t len)
{
    static const uint8_t odd[6][4] = {
        { 0, 0, 0, 0 }, { 255, 255, 255, 255 }, { 127, 0, 0, 1 },
        { 10, 0, 0, 1 }, { 224, 0, 0, 1 }, { 10, 0, 0, 2 },
    };
    RSFOp *op;
    uint32_t n, i;

    if (len < 4 || rsf_spoof.on) {
        return;
    }
    op = rsf_op_get(d[3]);
    if (op == rsf_op_spoof || op == rsf_op_bundle) {
        return;
    }
    n = 1 + d[0] % 64;
    for (i = 0; i < n; i++) {
        uint32_t x = d[1] + i;

        switch (d[2] & 3) {
        case 0:
            memcpy(rsf_spoof.ip, (uint8_t[4]){ 10, 1, x >> 8, x }, 4);
            break;
        case 1:
            memcpy(rsf_spoof.ip, rsf_ip_remote, 4);
            break;
        case 2:
            memcpy(rsf_spoof.ip, (uint8_t[4]){ 10, 0, x >> 8, x }, 4);
            break;
        default:
            memcpy(rsf_spoof.ip, odd[x % 6], 4);
            break;
        }
        if (d[2] & 4) {
            memcpy(rsf_spoof.mac, (uint8_t[6]){ 2, 0, 0, 1, x >> 8, x }, 6);
        } else {
            memcpy(rsf_spoof.mac, rsf_remote_mac, 6);
        }
        rsf_spoof.on = true;
        op(f, s, d + 4, len - 4);
        rsf_spoof.on = false;
        if (i + 1 < n) {
            rsf_idle(s);
        }
    }
}

/*
 * A BUNDLE_HELLO (0xc5) to QP 1 at the adapter's IPv4 GID: flags (bit 0:
 * version 2, bit 1: an 8-byte payload), frame length (2 bytes, LE: the
 * zero padding, up to the IPv4 limit), the largest bundle it accepts
 * (4), nonce (4), UDP source port low byte.
 */
static void rsf_op_hello(RSFState *f, QTestState *s, const uint8_t *d,
                         size_t len)
{
    uint8_t *l4 = rsf_big_l4, *pl = l4 + 12;
    size_t want, paylen, n;

    if (len < 11) {
        return;
    }
    want = lduw_le_p(d + 1);
    paylen = want > RSF_PL + 4 + 12 ? (want - RSF_PL - 4) & ~3 : 12;
    paylen = MIN(paylen, RSF_MAX_BIG - RSF_PL - 4);
    if (d[0] & 2) {
        paylen = 8;
    }
    memset(l4, 0, 12 + paylen);
    l4[0] = 0xc5;
    stw_be_p(l4 + 2, 0xffff);
    stl_be_p(l4 + 4, 1);
    stw_be_p(pl, d[0] & 1 ? 2 : 1);
    if (paylen >= 12) {
        memcpy(pl + 4, d + 3, 8);
    }
    n = rsf_build(rsf_big, &f->qp[RSF_QP_RC],
                  0xc000 | (len > 11 ? d[11] : 0), l4, 12 + paylen, false);
    rsf_send_frame(rsf_big, n);
}

/*
 * A BUNDLE_HELLO_REPLY (0xc6): flags (bit 0: answer a HELLO the adapter
 * sent, from the address it went to: the last one, or the one bits 1-3
 * go back; bit 4: the size field from the input rather than the HELLO's
 * length; bit 5: version 2), the largest bundle we accept (4, BE; 0:
 * 65535), the size or, not answering, the nonce (4, BE), then for a
 * REPLY that answers nothing the size (4, BE; default 60000).
 */
static void rsf_op_reply(RSFState *f, QTestState *s, const uint8_t *d,
                         size_t len)
{
    RSFWire *w = &rsf_wire;
    uint8_t l4[12 + 16] = { 0xc6, 0, 0xff, 0xff, 0, 0, 0, 1 };
    uint8_t frame[128];
    uint32_t limit, val, size = 60000;
    size_t n;

    if (len < 1) {
        return;
    }
    limit = len >= 5 ? ldl_be_p(d + 1) : 0;
    val = len >= 9 ? ldl_be_p(d + 5) : 0;
    stw_be_p(l4 + 12, d[0] & 0x20 ? 2 : 1);
    stl_be_p(l4 + 16, limit ? limit : RSF_MAX_BUNDLE);
    if (d[0] & 1) {
        uint32_t back = (d[0] >> 1) & 7;
        const RSFHello *h;
        uint8_t sip[4], dip[4];

        if (!w->nhello) {
            return;
        }
        if (back >= MIN(w->nhello, RSF_NHELLO)) {
            back = 0;
        }
        h = &w->hello[(w->nhello - 1 - back) % RSF_NHELLO];
        stl_be_p(l4 + 20, h->nonce);
        stl_be_p(l4 + 24, d[0] & 0x10 ? val : h->len);
        stl_be_p(sip, h->dip);
        stl_be_p(dip, h->sip);
        n = rsf_build_at(frame, false,
                         rsf_spoof.on ? rsf_spoof.mac : h->dmac, h->smac,
                         rsf_spoof.on ? rsf_spoof.ip : sip, dip,
                         h->sport, l4, sizeof(l4), false);
    } else {
        if (len >= 13) {
            size = ldl_be_p(d + 9);
        }
        stl_be_p(l4 + 20, val);
        stl_be_p(l4 + 24, size);
        n = rsf_build(frame, &f->qp[RSF_QP_RC], 0xc000, l4, sizeof(l4),
                      false);
    }
    rsf_send_frame(frame, n);
}

static RSFOp *const rsf_ops[] = {
    rsf_op_roce, rsf_op_roce, rsf_op_roce, rsf_op_bth, rsf_op_raw,
    rsf_op_clock, rsf_op_post_send, rsf_op_post_recv, rsf_op_cq,
    rsf_op_odp, rsf_op_bundle, rsf_op_spoof, rsf_op_hello, rsf_op_reply,
    rsf_op_rereg,
};

static RSFOp *rsf_op_get(uint8_t sel)
{
    return rsf_ops[sel % ARRAY_SIZE(rsf_ops)];
}

static void rsf_fuzz(QTestState *s, const unsigned char *data, size_t size)
{
    const unsigned char *cmd = data, *next;
    size_t sep = strlen(RSF_SEPARATOR);
    RSFWire *w = &rsf_wire;

    rsf_wire_init();
    w->keyless = size && (data[0] & 0x80);
    w->budget = size && (data[0] & 0x40) ? RSF_WIRE_SMALL : RSF_WIRE_BIG;
    w->used = 0;
    w->t0 = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    w->tx_bytes = w->tx_hellos = w->rx_bytes = w->rx_roce = 0;
    w->nhello = w->nanswered = 0;
    w->tx_frames = w->tx_bundles = w->rx_frames = 0;
    w->max_f_pkts = w->max_f_inner = 0;
    rsf_bun.on = false;
    rsf_bun.n = rsf_bun.len = 0;
    rsf_bring_up(&rsf, s);
    while (cmd && size) {
        size_t n;

        next = memmem(cmd, size, RSF_SEPARATOR, sep);
        n = next ? next - cmd : size;
        if (n) {
            uint8_t sel = cmd == data ? cmd[0] & 0x3f : cmd[0];

            rsf_op_get(sel)(&rsf, s, cmd + 1, n - 1);
            rsf_idle(s);
        }
        if (!next) {
            break;
        }
        size -= n + sep;
        cmd = next + sep;
    }
    rsf_bundle_emit();
    /* Everything the wire refused goes before the keyless totals. */
    w->budget = SIZE_MAX;
    rsf_settle(s);
    rsf_wire_check_end();
    rsf_tear_down(&rsf, s);
}

static GString *rsf_cmdline(FuzzTarget *t)
{
    GString *cmd_line = g_string_new(NULL);
    int ret = socketpair(PF_UNIX, SOCK_DGRAM, 0, rsf_sock);

    g_assert_cmpint(ret, ==, 0);
    g_unix_set_fd_nonblocking(rsf_sock[0], true, NULL);
    g_string_printf(cmd_line,
        TARGET_NAME " -display none -machine q35,accel=qtest -nodefaults "
        "-m 128M -device rdma-session,addr=04.0,netdev=n0,mac=" RS_QOS_MAC_STR
        ",max-qps=20,max-cqs=4,max-mrs=12,max-pds=3,max-ahs=2,max-sessions=2,"
        "max-session-groups=2,max-gids=4,max-srqs=3,max-xrcds=2,db-pages=2,"
        "dc-contexts=3,dc-idle=100,"
        "max-mr-pages=64,num-comp-vectors=1,mtu=1024,odp-pages=64,"
        "odp-fault-timeout=50 "
        "-netdev socket,fd=%d,id=n0", rsf_sock[1]);
    /* RS_FUZZ_ARGS: more QEMU options, e.g. "-d trace:rdma_session_odp*". */
    if (getenv("RS_FUZZ_ARGS")) {
        g_string_append_printf(cmd_line, " %s", getenv("RS_FUZZ_ARGS"));
    }
    return cmd_line;
}

static void register_rdma_session_fuzz_targets(void)
{
    fuzz_add_target(&(FuzzTarget){
        .name = "rdma-session-packet",
        .description = "Fuzz the rdma-session adapter's RoCEv2 receive path "
        "(parser, responder, completer) with frames from the network, on "
        "an adapter brought up with loopback and remote QPs",
        .get_init_cmdline = rsf_cmdline,
        .fuzz = rsf_fuzz,
    });
}

fuzz_target_init(register_rdma_session_fuzz_targets);
