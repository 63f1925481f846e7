/*
 * rdma-session adapter: bundles, several RoCE frames in one.
 *
 * Between two adapters the backend's cost is per frame, not per byte, so
 * the requester's packets to one peer leave as one frame of up to
 * x-bundle-max bytes (docs/specs: "Bundles on the wire"): outer IPv4/UDP
 * headers and a BTH with opcode BUNDLE (0xc7), a count, then each inner
 * frame whole (Ethernet header to ICRC) behind its 16-bit length.  The
 * receiver hands each inner frame to rs_roce_input() as the standalone
 * frame it is, so PSNs, ACK coalescing, go-back-N and the ICRC check are
 * those of single packets.
 *
 * Only peers that said they understand bundles get them: before bundling
 * to an IPv4 address the adapter sends it a HELLO (0xc5) padded to
 * x-bundle-max, so that its HELLO_REPLY (0xc6) also proves the path
 * carries such frames.  A peer that does not answer (soft-RoCE, a real
 * NIC: a manufacturer-specific opcode to QP 1 is dropped) is asked again
 * after 100 ms, doubling up to a minute, and gets standard frames only.
 * The peer table is bounded (RS_BUNDLE_PEERS, least recently used goes)
 * and runtime only: a reset or a migration empties it.
 *
 * A bundle is filled by one run of the engine and sent when full, when a
 * frame to another peer (or one that is not bundled) comes, and at the end
 * of the run (rs_bundle_flush from the requester's and responder's bottom
 * halves, at the end of every MMIO write, and bundle_bh after anything
 * else), so no packet waits for later work.  A bundle of one frame goes
 * out as that frame alone.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

#define RS_BUNDLE_PEERS     32
#define RS_BUNDLE_VERSION   1
/* Outer headers: Ethernet, IPv4, UDP, BTH, count and reserved. */
#define RS_BUNDLE_HDR       (RS_BTH_OFF + RS_BTH_LEN + 4)
/* The smallest inner frame: IPv4 RoCE with a BTH and an ICRC. */
#define RS_BUNDLE_MIN_INNER (RS_BTH_OFF + RS_BTH_LEN + RS_ICRC_LEN)
/* HELLO payload: version, reserved, largest bundle, nonce. */
#define RS_HELLO_LEN        12
/* HELLO_REPLY payload: version, reserved, largest bundle, nonce, size. */
#define RS_REPLY_LEN        16
#define RS_BUNDLE_RETRY_MS  100
#define RS_BUNDLE_BACKOFF_MS 60000
/* Buffers: the largest bundle frame, rounded up. */
#define RS_BUNDLE_BUF       (RS_BUNDLE_MAX + 64)

enum {
    RS_BPEER_FREE,
    RS_BPEER_PROBING,           /* HELLO sent, no REPLY yet */
    RS_BPEER_OK,                /* bundles up to limit bytes */
};

typedef struct RSBundlePeer {
    uint32_t ip;                /* the peer's IPv4 address */
    uint8_t state;
    uint8_t tries;              /* HELLOs sent without a REPLY */
    uint32_t limit;             /* bundle frame bytes, RS_BPEER_OK */
    uint32_t nonce;             /* the last HELLO's */
    int64_t next_ms;            /* RS_BPEER_PROBING: HELLO again then */
    uint64_t used;              /* LRU stamp */
} RSBundlePeer;

typedef struct RSBundle {
    QEMUBH *bh;                 /* flushes what no engine run flushed */
    uint8_t *tx;                /* the bundle being filled */
    uint32_t tx_len;            /* bytes in tx; 0: none */
    uint32_t tx_count;          /* inner frames in tx */
    uint32_t tx_limit;          /* its peer's limit */
    uint8_t *rx;                /* a received bundle, linearized */
    uint8_t ctl[RS_BTH_OFF + RS_BTH_LEN + RS_REPLY_LEN + 8];  /* a REPLY */
    RSBundlePeer peers[RS_BUNDLE_PEERS];
    uint32_t last;              /* index of the peer last used */
    unsigned mmio;              /* MMIO writes under way: they flush */
    uint64_t clock;
    uint32_t nonce;
    /* x-bundle-* QOM counters, since realize */
    uint64_t counters[RS_BUNDLE_COUNTERS];
} RSBundle;

static int64_t rs_bundle_now_ms(void)
{
    return qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL);
}

static RSBundlePeer *rs_bundle_peer_find(RSBundle *b, uint32_t ip)
{
    uint32_t i;

    if (b->peers[b->last].state != RS_BPEER_FREE &&
        b->peers[b->last].ip == ip) {
        return &b->peers[b->last];
    }
    for (i = 0; i < RS_BUNDLE_PEERS; i++) {
        if (b->peers[i].state != RS_BPEER_FREE && b->peers[i].ip == ip) {
            b->last = i;
            return &b->peers[i];
        }
    }
    return NULL;
}

/* A new entry for ip: a free one or the least recently used. */
static RSBundlePeer *rs_bundle_peer_new(RSBundle *b, uint32_t ip)
{
    uint32_t i, victim = 0;

    for (i = 0; i < RS_BUNDLE_PEERS; i++) {
        if (b->peers[i].state == RS_BPEER_FREE) {
            victim = i;
            break;
        }
        if (b->peers[i].used < b->peers[victim].used) {
            victim = i;
        }
    }
    memset(&b->peers[victim], 0, sizeof(b->peers[victim]));
    b->peers[victim].ip = ip;
    b->peers[victim].state = RS_BPEER_PROBING;
    b->last = victim;
    return &b->peers[victim];
}

/*
 * Send a HELLO to the peer of frame (its addresses and UDP source port),
 * padded to x-bundle-max; the bundle buffer is empty (flushed) here.
 */
static void rs_bundle_hello(RSCore *c, RSBundlePeer *bp, const uint8_t *frame)
{
    RSBundle *b = c->bundle;
    const uint8_t *ip = frame + RS_L3_OFF;
    uint32_t paylen = (c->p.bundle_max - RS_BTH_OFF - RS_BTH_LEN -
                       RS_ICRC_LEN) & ~3u;
    uint8_t *pl = b->tx + RS_BTH_OFF + RS_BTH_LEN;
    RSPkt pkt;
    size_t len;

    memset(&pkt, 0, sizeof(pkt));
    memcpy(pkt.dmac, frame, 6);
    memcpy(pkt.smac, frame + 6, 6);
    pkt.tos = ip[1];
    pkt.ttl = ip[8];
    pkt.sip = ldl_be_p(ip + 12);
    pkt.dip = ldl_be_p(ip + 16);
    pkt.sport = lduw_be_p(ip + RS_IP4_HLEN);
    pkt.dport = RS_ROCE_UDP_PORT;
    pkt.opcode = RS_OP_BUNDLE_HELLO;
    pkt.dqpn = 1;
    memset(pl, 0, paylen);
    stw_be_p(pl, RS_BUNDLE_VERSION);
    stl_be_p(pl + 4, c->p.bundle_max);
    bp->nonce = ++b->nonce;
    stl_be_p(pl + 8, bp->nonce);
    len = rs_wire_build(b->tx, &pkt, paylen);
    trace_rdma_session_bundle_hello_tx(bp->ip, bp->tries, len);
    bp->tries = MIN(bp->tries + 1, 30);
    bp->next_ms = rs_bundle_now_ms() +
        MIN((int64_t)RS_BUNDLE_RETRY_MS << (bp->tries - 1),
            RS_BUNDLE_BACKOFF_MS);
    b->counters[RS_BUNDLE_CNT_HELLO_TX]++;
    rs_roce_send(c, b->tx, len, RS_OP_BUNDLE_HELLO);
}

void rs_bundle_flush(RSCore *c)
{
    RSBundle *b = c->bundle;
    uint8_t *f = b->tx;
    uint32_t len = b->tx_len;

    if (!len) {
        return;
    }
    b->tx_len = 0;
    /* Flushed in the run: the main loop need not come round for it. */
    qemu_bh_cancel(b->bh);
    if (b->tx_count == 1) {
        /* One frame alone goes out as itself. */
        rs_roce_send(c, f + RS_BUNDLE_HDR + 2, len - RS_BUNDLE_HDR - 2,
                     f[RS_BUNDLE_HDR + 2 + RS_BTH_OFF]);
        return;
    }
    stw_be_p(f + RS_L3_OFF + 2, len - RS_ETH_HLEN);
    stw_be_p(f + RS_L3_OFF + 10, 0);
    stw_be_p(f + RS_L3_OFF + 10, net_raw_checksum(f + RS_L3_OFF,
                                                  RS_IP4_HLEN));
    stw_be_p(f + RS_L3_OFF + RS_IP4_HLEN + 4,
             len - RS_ETH_HLEN - RS_IP4_HLEN);
    stw_be_p(f + RS_L3_OFF + RS_IP4_HLEN + 6, 0);
    stw_be_p(f + RS_BTH_OFF + RS_BTH_LEN, b->tx_count);
    trace_rdma_session_bundle_tx(ldl_be_p(f + RS_L3_OFF + 16), b->tx_count,
                                 len);
    b->counters[RS_BUNDLE_CNT_TX]++;
    b->counters[RS_BUNDLE_CNT_TX_FRAMES] += b->tx_count;
    rs_roce_send(c, f, len, RS_OP_BUNDLE);
}

void rs_bundle_mmio_begin(RSCore *c)
{
    c->bundle->mmio++;
}

void rs_bundle_mmio_end(RSCore *c)
{
    if (!--c->bundle->mmio) {
        rs_bundle_flush(c);     /* what the write sent goes now */
    }
}

static void rs_bundle_bh(void *opaque)
{
    rs_bundle_flush(opaque);
}

/*
 * Offer frame (RoCE, from rs_roce_xmit) to the bundle: true if it went
 * in; false if it must go out alone (anything pending went first).
 */
bool rs_bundle_add(RSCore *c, const uint8_t *frame, size_t len)
{
    RSBundle *b = c->bundle;
    RSBundlePeer *bp;
    uint32_t ip;
    uint8_t op;

    if (!c->p.bundle || !c->link_up || c->holding ||
        lduw_be_p(frame + 12) != ETH_P_IP || len > RS_WIRE_MAX_FRAME ||
        len < RS_BUNDLE_MIN_INNER) {
        rs_bundle_flush(c);
        return false;
    }
    ip = ldl_be_p(frame + RS_L3_OFF + 16);
    op = frame[RS_BTH_OFF];
    if ((ip >> 28) == 0xe || (rs_opcode[op].flags & RS_OPF_BUNDLE)) {
        rs_bundle_flush(c);     /* multicast: any peer may be standard */
        return false;
    }
    bp = rs_bundle_peer_find(b, ip);
    if (!bp || bp->state != RS_BPEER_OK) {
        rs_bundle_flush(c);
        if (!bp) {
            bp = rs_bundle_peer_new(b, ip);
        }
        bp->used = ++b->clock;
        if (rs_bundle_now_ms() >= bp->next_ms &&
            c->roce_tx_held < 2) {
            rs_bundle_hello(c, bp, frame);
        }
        return false;
    }
    bp->used = ++b->clock;
    /*
     * Same outer headers (L2 and IP addresses, UDP source port: a path
     * an ECMP network picks by the 5-tuple) and room left.
     */
    if (b->tx_len &&
        (b->tx_len + 2 + len > b->tx_limit ||
         memcmp(b->tx, frame, 12) ||
         memcmp(b->tx + RS_L3_OFF + 12, frame + RS_L3_OFF + 12, 10))) {
        rs_bundle_flush(c);
    }
    if (!b->tx_len) {
        if (RS_BUNDLE_HDR + 2 + len > bp->limit) {
            return false;
        }
        memcpy(b->tx, frame, RS_BTH_OFF);
        memset(b->tx + RS_BTH_OFF, 0, RS_BTH_LEN + 4);
        b->tx[RS_BTH_OFF] = RS_OP_BUNDLE;
        stw_be_p(b->tx + RS_BTH_OFF + 2, 0xffff);
        stl_be_p(b->tx + RS_BTH_OFF + 4, 1);
        b->tx_len = RS_BUNDLE_HDR;
        b->tx_count = 0;
        b->tx_limit = bp->limit;
        /*
         * An MMIO write flushes when it ends; a BH scheduled from its vCPU
         * thread would wake the main loop for every message (that halved
         * ib_send_bw with 4 KiB SENDs).
         */
        if (!b->mmio) {
            qemu_bh_schedule(b->bh);
        }
    }
    stw_be_p(b->tx + b->tx_len, len);
    memcpy(b->tx + b->tx_len + 2, frame, len);
    b->tx_len += 2 + len;
    b->tx_count++;
    return true;
}

/* A HELLO from pkt's sender: reply, with what we take, if bundles are on. */
static void rs_bundle_hello_rx(RSCore *c, const RSPkt *pkt, size_t len)
{
    RSBundle *b = c->bundle;
    RSPkt r;
    size_t rlen;
    uint8_t *pl = b->ctl + RS_BTH_OFF + RS_BTH_LEN;

    if (pkt->paylen < RS_HELLO_LEN ||
        lduw_be_p(pkt->payload) != RS_BUNDLE_VERSION) {
        trace_rdma_session_bundle_drop(len, "HELLO: short or other version");
        return;
    }
    trace_rdma_session_bundle_hello_rx(pkt->sip, len,
                                       ldl_be_p(pkt->payload + 4));
    b->counters[RS_BUNDLE_CNT_HELLO_RX]++;
    if (!c->p.bundle) {
        return;                 /* as a standard peer: no REPLY */
    }
    memset(&r, 0, sizeof(r));
    memcpy(r.dmac, pkt->smac, 6);
    memcpy(r.smac, pkt->dmac, 6);
    r.tos = pkt->tos;
    r.sip = pkt->dip;
    r.dip = pkt->sip;
    r.sport = pkt->sport;
    r.dport = RS_ROCE_UDP_PORT;
    r.opcode = RS_OP_BUNDLE_HELLO_REPLY;
    r.dqpn = 1;
    memset(pl, 0, RS_REPLY_LEN);
    stw_be_p(pl, RS_BUNDLE_VERSION);
    stl_be_p(pl + 4, c->p.bundle_max);
    memcpy(pl + 8, pkt->payload + 8, 4);            /* the nonce */
    stl_be_p(pl + 12, len);
    rlen = rs_wire_build(b->ctl, &r, RS_REPLY_LEN);
    rs_roce_send(c, b->ctl, rlen, RS_OP_BUNDLE_HELLO_REPLY);
}

/* A REPLY to our HELLO: bundles to its sender from now on. */
static void rs_bundle_reply_rx(RSCore *c, const RSPkt *pkt, size_t len)
{
    RSBundle *b = c->bundle;
    RSBundlePeer *bp = rs_bundle_peer_find(b, pkt->sip);
    uint32_t limit;

    if (pkt->paylen < RS_REPLY_LEN ||
        lduw_be_p(pkt->payload) != RS_BUNDLE_VERSION) {
        trace_rdma_session_bundle_drop(len, "REPLY: short or other version");
        return;
    }
    if (!c->p.bundle || !bp || bp->state != RS_BPEER_PROBING ||
        ldl_be_p(pkt->payload + 8) != bp->nonce) {
        trace_rdma_session_bundle_drop(len, "REPLY to no HELLO of ours");
        return;
    }
    /* What it takes, what reached it, what we send at most. */
    limit = MIN(ldl_be_p(pkt->payload + 4), ldl_be_p(pkt->payload + 12));
    limit = MIN(limit, c->p.bundle_max);
    if (limit < RS_BUNDLE_MIN) {
        trace_rdma_session_bundle_drop(len, "REPLY: path or peer too small");
        return;                 /* still probing: asked again later */
    }
    bp->state = RS_BPEER_OK;
    bp->limit = limit;
    bp->tries = 0;
    trace_rdma_session_bundle_peer_ok(bp->ip, limit);
}

/*
 * A received bundle: every length and inner frame is checked before any
 * is processed, so a malformed bundle is dropped whole.
 */
static void rs_bundle_rx(RSCore *c, const uint8_t *f, size_t size)
{
    RSBundle *b = c->bundle;
    size_t end = RS_ETH_HLEN + lduw_be_p(f + RS_L3_OFF + 2), off;
    uint32_t count, n;
    const char *why = NULL;

    if (!c->p.bundle) {
        why = "bundles off";
    } else if (end > size || end < RS_BUNDLE_HDR ||
               lduw_be_p(f + RS_L3_OFF + RS_IP4_HLEN + 4) !=
               end - RS_ETH_HLEN - RS_IP4_HLEN ||
               (lduw_be_p(f + RS_L3_OFF + 6) & 0x3fff)) {
        why = "bad IP/UDP length";
    } else if ((f[RS_BTH_OFF + 1] & 0xf) != 0) {
        why = "bad TVer";
    }
    count = why ? 0 : lduw_be_p(f + RS_BTH_OFF + RS_BTH_LEN);
    if (!why && (count < 2 || count > (end - RS_BUNDLE_HDR) /
                 (2 + RS_BUNDLE_MIN_INNER))) {
        why = "bad count";
    }
    for (n = 0, off = RS_BUNDLE_HDR; !why && n < count; n++) {
        const uint8_t *in = f + off + 2;
        size_t ilen;
        uint8_t dgid[16];

        if (off + 2 > end) {
            why = "lengths past the end";
            break;
        }
        ilen = lduw_be_p(f + off);
        if (ilen < RS_BUNDLE_MIN_INNER || ilen > RS_WIRE_MAX_FRAME) {
            why = "inner length out of range";
        } else if (off + 2 + ilen > end) {
            why = "lengths past the end";
        } else if (!rs_wire_is_roce(in, ilen, dgid) ||
                   (lduw_be_p(in + 12) == ETH_P_IPV6 &&
                    ilen < RS_BTH_OFF6 + RS_BTH_LEN + RS_ICRC_LEN)) {
            why = "inner frame not RoCE";
        } else if (rs_opcode[in[lduw_be_p(in + 12) == ETH_P_IPV6 ?
                                 RS_BTH_OFF6 : RS_BTH_OFF]].flags &
                   RS_OPF_BUNDLE) {
            why = "nested bundle";
        }
        off += 2 + ilen;
    }
    if (!why && off != end) {
        why = "lengths do not fill the bundle";
    }
    if (why) {
        b->counters[RS_BUNDLE_CNT_RX_DROP]++;
        trace_rdma_session_bundle_drop(size, why);
        return;
    }
    trace_rdma_session_bundle_rx(count, size);
    b->counters[RS_BUNDLE_CNT_RX]++;
    for (n = 0, off = RS_BUNDLE_HDR; n < count; n++) {
        const uint8_t *in = f + off + 2;
        size_t ilen = lduw_be_p(f + off);
        uint8_t dgid[16];

        off += 2 + ilen;
        /* As rs_resp_divert would have taken the frame alone. */
        rs_wire_is_roce(in, ilen, dgid);
        if (rs_gid_find(c, dgid) < 0 &&
            (!rs_gid_is_mcast(dgid) || rs_mcast_find(c, dgid) < 0)) {
            trace_rdma_session_roce_drop(ilen, "bundled: not to our GIDs");
            continue;
        }
        rs_roce_input(c, in, ilen);
    }
    rs_bundle_flush(c);         /* what the packets made us send */
}

/*
 * From rs_resp_divert, before its size check: take a HELLO, REPLY or
 * BUNDLE (IPv4 RoCE to one of our GIDs; hdr: the frame's first hdrlen
 * bytes).  False: not one of ours, the normal path takes the frame.
 */
bool rs_bundle_divert(RSCore *c, const struct iovec *iov, int iovcnt,
                      const uint8_t *hdr, size_t hdrlen, size_t size)
{
    RSBundle *b = c->bundle;
    const uint8_t *f;
    const char *why;
    RSPkt pkt;
    uint8_t op;

    if (hdrlen <= RS_BTH_OFF || lduw_be_p(hdr + 12) != ETH_P_IP) {
        return false;
    }
    op = hdr[RS_BTH_OFF];
    if (!(rs_opcode[op].flags & RS_OPF_BUNDLE)) {
        return false;
    }
    if (size > RS_BUNDLE_BUF) {
        trace_rdma_session_bundle_drop(size, "larger than any bundle");
        return true;
    }
    if (iovcnt == 1) {
        f = iov[0].iov_base;
    } else {
        iov_to_buf(iov, iovcnt, 0, b->rx, size);
        f = b->rx;
    }
    if (op == RS_OP_BUNDLE) {
        rs_bundle_rx(c, f, size);
        return true;
    }
    if (!rs_wire_parse(f, size, &pkt, &why)) {
        trace_rdma_session_bundle_drop(size, why);
        return true;
    }
    if (op == RS_OP_BUNDLE_HELLO) {
        rs_bundle_hello_rx(c, &pkt, RS_ETH_HLEN + lduw_be_p(f + RS_L3_OFF +
                                                            2));
    } else {
        rs_bundle_reply_rx(c, &pkt, size);
    }
    return true;
}

uint64_t *rs_bundle_counter(RSCore *c, unsigned which)
{
    return &c->bundle->counters[which];
}

void rs_bundle_reset(RSCore *c)
{
    RSBundle *b = c->bundle;

    qemu_bh_cancel(b->bh);
    b->tx_len = 0;
    b->tx_count = 0;
    memset(b->peers, 0, sizeof(b->peers));
    b->last = 0;
}

void rs_bundle_realize(RSCore *c)
{
    RSBundle *b = g_new0(RSBundle, 1);

    b->bh = qemu_bh_new_guarded(rs_bundle_bh, c, c->guard);
    b->tx = g_malloc0(RS_BUNDLE_BUF);
    b->rx = g_malloc0(RS_BUNDLE_BUF);
    c->bundle = b;
}

void rs_bundle_unrealize(RSCore *c)
{
    RSBundle *b = c->bundle;

    qemu_bh_delete(b->bh);
    g_free(b->tx);
    g_free(b->rx);
    g_free(b);
    c->bundle = NULL;
}
