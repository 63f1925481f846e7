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
 * to an IPv4 address the adapter sends it a HELLO (0xc5) of 74 bytes, and
 * only once that is answered by a HELLO_REPLY (0xc6) carrying its random
 * nonce, a HELLO padded to x-bundle-max, whose REPLY also proves the path
 * carries such frames.  So a packet with a spoofed source, which may make
 * the device send something to that source, never makes it send a big
 * frame there (reflection).  A peer that does not answer (soft-RoCE, a
 * real NIC: a manufacturer-specific opcode to QP 1 is dropped) is asked
 * again after 100 ms, doubling up to a minute, and gets standard frames
 * only; that back-off outlives the peer's entry (a small table of
 * back-offs by address hash), and the device sends at most
 * RS_HELLO_BURST HELLOs at once, RS_HELLO_PER_SEC a second and one per
 * received frame.  A peer
 * we bundle to that has sent us nothing for RS_BUNDLE_SILENT_MS gets
 * standard frames again, and is asked again (a forged REPLY, or a peer
 * that restarted without bundles).  The peer table is bounded
 * (RS_BUNDLE_PEERS, least recently used goes) and runtime only: a reset
 * or a migration empties it.
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
#include "qemu/guest-random.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "rdma-session-fabric.h"
#include "trace.h"

#define RS_BUNDLE_PEERS     32
#define RS_BUNDLE_VERSION   1
/* Outer headers: Ethernet, IPv4, UDP, BTH, count and reserved. */
#define RS_BUNDLE_HDR       (RS_BTH_OFF + RS_BTH_LEN + 4)
/* The smallest inner frame: IPv4 RoCE with a BTH and an ICRC. */
#define RS_BUNDLE_MIN_INNER (RS_BTH_OFF + RS_BTH_LEN + RS_ICRC_LEN)
/* HELLO_REPLY payload: version, reserved, largest bundle, nonce, size. */
#define RS_REPLY_LEN        16
/*
 * The small HELLO's payload (version, reserved, largest bundle, nonce,
 * zeros): as long as a REPLY's, which is only sent to a HELLO at least
 * that long, so that a REPLY is never larger than the HELLO it answers.
 */
#define RS_HELLO_SMALL_LEN  RS_REPLY_LEN
#define RS_BUNDLE_RETRY_MS  100
#define RS_BUNDLE_BACKOFF_MS 60000
/* Device-wide HELLO rate: a token bucket. */
#define RS_HELLO_BURST      8
#define RS_HELLO_PER_SEC    10
/* Back-offs kept for addresses that lost their peer entry. */
#define RS_BUNDLE_BACKOFFS  256
/* Bundling to a peer that has sent nothing for this long stops. */
#define RS_BUNDLE_SILENT_MS 1000
/* Inner frames of one bundle at most (the smallest take 60 bytes). */
#define RS_BUNDLE_MAX_INNER (RS_BUNDLE_BUF / (2 + RS_BUNDLE_MIN_INNER) + 1)
/* Buffers: the largest bundle frame, rounded up. */
#define RS_BUNDLE_BUF       (RS_BUNDLE_MAX + 64)

enum {
    RS_BPEER_FREE,
    RS_BPEER_PROBING,           /* small HELLO sent, no REPLY yet */
    RS_BPEER_SIZING,            /* answered; padded HELLO sent */
    RS_BPEER_OK,                /* bundles up to limit bytes */
};

typedef struct RSBundlePeer {
    uint32_t ip;                /* the peer's IPv4 address */
    uint8_t state;
    uint8_t tries;              /* HELLOs sent without a REPLY */
    uint32_t limit;             /* bundle frame bytes, RS_BPEER_OK */
    uint32_t nonce;             /* the last HELLO's */
    int64_t next_ms;            /* probing, sizing: HELLO again then */
    int64_t unheard_ms;         /* OK: first bundle since we heard it; -1 */
    uint64_t used;              /* LRU stamp */
} RSBundlePeer;

/* The back-off of an address whose entry went (hashed, lossy). */
typedef struct RSBundleBackoff {
    int64_t next_ms;
    uint8_t tries;
} RSBundleBackoff;

typedef struct RSBundle {
    QEMUBH *bh;                 /* flushes what no engine run flushed */
    uint8_t *tx;                /* the bundle being filled */
    uint32_t tx_len;            /* bytes in tx; 0: none */
    uint32_t tx_count;          /* inner frames in tx */
    uint32_t tx_limit;          /* its peer's limit */
    uint8_t *rx;                /* a received bundle, linearized */
    uint8_t ctl[RS_BTH_OFF + RS_BTH_LEN + RS_REPLY_LEN + 8];  /* a REPLY */
    /* A received bundle's inner frames, as its validation found them. */
    uint16_t in_off[RS_BUNDLE_MAX_INNER];
    uint16_t in_len[RS_BUNDLE_MAX_INNER];
    RSBundlePeer peers[RS_BUNDLE_PEERS];
    RSBundleBackoff backoff[RS_BUNDLE_BACKOFFS];
    uint32_t last;              /* index of the peer last used */
    unsigned mmio;              /* MMIO writes under way: they flush */
    uint64_t clock;
    uint32_t hello_tokens;      /* HELLOs the device may send now */
    uint64_t hello_frame;       /* rx_frame_seq of the last HELLO's frame */
    int64_t hello_refill_ms;    /* when the next token comes */
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

static RSBundleBackoff *rs_bundle_backoff(RSBundle *b, uint32_t ip)
{
    return &b->backoff[(ip * 2654435761u) >> 24];
}

/*
 * A new entry for ip: a free one or the least recently used.  A probing
 * entry that goes leaves its back-off behind, and a new one takes the
 * back-off left for its address, so that rotating addresses through the
 * table does not reset it.
 */
static RSBundlePeer *rs_bundle_peer_new(RSBundle *b, uint32_t ip)
{
    RSBundleBackoff *bo;
    RSBundlePeer *bp;
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
    bp = &b->peers[victim];
    if (bp->state != RS_BPEER_FREE && bp->state != RS_BPEER_OK &&
        bp->tries) {
        bo = rs_bundle_backoff(b, bp->ip);
        if (bp->next_ms > bo->next_ms) {
            bo->next_ms = bp->next_ms;
            bo->tries = bp->tries;
        }
    }
    memset(bp, 0, sizeof(*bp));
    bp->ip = ip;
    bp->state = RS_BPEER_PROBING;
    bo = rs_bundle_backoff(b, ip);
    if (rs_bundle_now_ms() < bo->next_ms) {
        bp->next_ms = bo->next_ms;
        bp->tries = bo->tries;
    }
    b->last = victim;
    return bp;
}

/* One HELLO token from the device-wide bucket; false if none is left. */
static bool rs_bundle_hello_token(RSBundle *b, int64_t now)
{
    const int64_t every = 1000 / RS_HELLO_PER_SEC;
    int64_t n = (now - b->hello_refill_ms) / every;

    if (b->hello_tokens >= RS_HELLO_BURST || n >= RS_HELLO_BURST) {
        b->hello_tokens = RS_HELLO_BURST;
        b->hello_refill_ms = now;
    } else if (n > 0) {
        b->hello_tokens += n;
        b->hello_refill_ms += n * every;
    }
    if (!b->hello_tokens) {
        return false;
    }
    b->hello_tokens--;
    return true;
}

/*
 * Send HELLO header hello (see rs_bundle_to/rs_bundle_back) to peer bp:
 * 74 bytes while probing, padded to x-bundle-max while sizing.  Not
 * while the bundle buffer holds frames: the HELLO is built in it.
 */
static void rs_bundle_hello(RSCore *c, RSBundlePeer *bp, RSPkt *hello)
{
    RSBundle *b = c->bundle;
    int64_t now = rs_bundle_now_ms();
    uint32_t paylen = RS_HELLO_SMALL_LEN;
    uint8_t *pl = b->tx + RS_BTH_OFF + RS_BTH_LEN;
    size_t len;

    if (b->tx_len || now < bp->next_ms || c->roce_tx_held >= 2 ||
        (c->rx_frame && b->hello_frame == c->rx_frame_seq)) {
        return;                 /* one HELLO per received frame at most */
    }
    if (!rs_bundle_hello_token(b, now)) {
        return;
    }
    if (c->rx_frame) {
        b->hello_frame = c->rx_frame_seq;
    }
    if (bp->state == RS_BPEER_SIZING) {
        paylen = (c->p.bundle_max - RS_BTH_OFF - RS_BTH_LEN -
                  RS_ICRC_LEN) & ~3u;
    }
    memset(pl, 0, paylen);
    stw_be_p(pl, RS_BUNDLE_VERSION);
    stl_be_p(pl + 4, c->p.bundle_max);
    /* Unguessable: a REPLY proves the peer saw this HELLO. */
    qemu_guest_getrandom_nofail(&bp->nonce, sizeof(bp->nonce));
    stl_be_p(pl + 8, bp->nonce);
    len = rs_wire_build(b->tx, hello, paylen);
    trace_rdma_session_bundle_hello_tx(bp->ip, bp->tries, len);
    bp->tries = MIN(bp->tries + 1, 30);
    bp->next_ms = now + MIN((int64_t)RS_BUNDLE_RETRY_MS << (bp->tries - 1),
                            RS_BUNDLE_BACKOFF_MS);
    b->counters[RS_BUNDLE_CNT_HELLO_TX]++;
    rs_roce_send(c, b->tx, len, RS_OP_BUNDLE_HELLO, 0);
}

/* Header of packet op to QP 1 of the peer an IPv4 RoCE frame goes to. */
static void rs_bundle_to(RSPkt *p, const uint8_t *frame, uint8_t op)
{
    const uint8_t *ip = frame + RS_L3_OFF;

    memset(p, 0, sizeof(*p));
    memcpy(p->dmac, frame, 6);
    memcpy(p->smac, frame + 6, 6);
    p->tos = ip[1];
    p->ttl = ip[8];
    p->sip = ldl_be_p(ip + 12);
    p->dip = ldl_be_p(ip + 16);
    p->sport = lduw_be_p(ip + RS_IP4_HLEN);
    p->dport = RS_ROCE_UDP_PORT;
    p->opcode = op;
    p->dqpn = 1;
}

/* Header of packet op to QP 1 of the sender of received packet in. */
static void rs_bundle_back(RSPkt *p, const RSPkt *in, uint8_t op)
{
    memset(p, 0, sizeof(*p));
    memcpy(p->dmac, in->smac, 6);
    memcpy(p->smac, in->dmac, 6);
    p->tos = in->tos;
    p->sip = in->dip;
    p->dip = in->sip;
    p->sport = in->sport;
    p->dport = RS_ROCE_UDP_PORT;
    p->opcode = op;
    p->dqpn = 1;
}

/* A RoCE frame came from IPv4 address ip: the peer is alive. */
void rs_bundle_heard(RSCore *c, uint32_t ip)
{
    RSBundle *b = c->bundle;
    RSBundlePeer *bp;

    if (!c->p.bundle || !ip) {
        return;
    }
    bp = rs_bundle_peer_find(b, ip);
    if (bp) {
        bp->unheard_ms = -1;
    }
}

void rs_bundle_flush(RSCore *c)
{
    RSBundle *b = c->bundle;
    uint8_t *f = b->tx;
    uint32_t len = b->tx_len;

    /* The local fabric's batch ends where a bundle does. */
    rs_fabric_flush(c);
    if (!len) {
        return;
    }
    b->tx_len = 0;
    /* Flushed in the run: the main loop need not come round for it. */
    qemu_bh_cancel(b->bh);
    if (b->tx_count == 1) {
        /* One frame alone goes out as itself. */
        rs_roce_send(c, f + RS_BUNDLE_HDR + 2, len - RS_BUNDLE_HDR - 2,
                     f[RS_BUNDLE_HDR + 2 + RS_BTH_OFF], 0);
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
    rs_roce_send(c, f, len, RS_OP_BUNDLE, 0);
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

bool rs_bundle_in_mmio(RSCore *c)
{
    return c->bundle->mmio;
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
    if (bp && bp->state == RS_BPEER_OK && bp->unheard_ms >= 0 &&
        rs_bundle_now_ms() - bp->unheard_ms > RS_BUNDLE_SILENT_MS) {
        /* Bundles into silence: standard frames, and ask again. */
        trace_rdma_session_bundle_silent(ip);
        bp->state = RS_BPEER_PROBING;
        bp->tries = 0;
        bp->next_ms = 0;
    }
    if (!bp || bp->state != RS_BPEER_OK) {
        RSPkt hello;

        rs_bundle_flush(c);
        if (!bp) {
            bp = rs_bundle_peer_new(b, ip);
        }
        bp->used = ++b->clock;
        rs_bundle_to(&hello, frame, RS_OP_BUNDLE_HELLO);
        rs_bundle_hello(c, bp, &hello);
        return false;
    }
    bp->used = ++b->clock;
    if (bp->unheard_ms < 0) {
        bp->unheard_ms = rs_bundle_now_ms();
    }
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

    if (pkt->paylen < RS_HELLO_SMALL_LEN ||
        lduw_be_p(pkt->payload) != RS_BUNDLE_VERSION) {
        /* Shorter than the REPLY: answering would amplify. */
        trace_rdma_session_bundle_drop(len, "HELLO: short or other version");
        return;
    }
    trace_rdma_session_bundle_hello_rx(pkt->sip, len,
                                       ldl_be_p(pkt->payload + 4));
    b->counters[RS_BUNDLE_CNT_HELLO_RX]++;
    if (!c->p.bundle) {
        return;                 /* as a standard peer: no REPLY */
    }
    rs_bundle_back(&r, pkt, RS_OP_BUNDLE_HELLO_REPLY);
    memset(pl, 0, RS_REPLY_LEN);
    stw_be_p(pl, RS_BUNDLE_VERSION);
    stl_be_p(pl + 4, c->p.bundle_max);
    memcpy(pl + 8, pkt->payload + 8, 4);            /* the nonce */
    stl_be_p(pl + 12, len);
    rlen = rs_wire_build(b->ctl, &r, RS_REPLY_LEN);
    rs_roce_send(c, b->ctl, rlen, RS_OP_BUNDLE_HELLO_REPLY, 0);
}

/*
 * A REPLY to our HELLO: to the small one, the padded HELLO goes at once;
 * to the padded one, bundles to its sender from now on.
 */
static void rs_bundle_reply_rx(RSCore *c, const RSPkt *pkt, size_t len)
{
    RSBundle *b = c->bundle;
    RSBundlePeer *bp = rs_bundle_peer_find(b, pkt->sip);
    uint32_t limit;
    RSPkt hello;

    if (pkt->paylen < RS_REPLY_LEN ||
        lduw_be_p(pkt->payload) != RS_BUNDLE_VERSION) {
        trace_rdma_session_bundle_drop(len, "REPLY: short or other version");
        return;
    }
    if (!c->p.bundle || !bp ||
        (bp->state != RS_BPEER_PROBING && bp->state != RS_BPEER_SIZING) ||
        !bp->tries || ldl_be_p(pkt->payload + 8) != bp->nonce) {
        trace_rdma_session_bundle_drop(len, "REPLY to no HELLO of ours");
        return;
    }
    bp->tries = 0;              /* answered: the same REPLY again is not */
    bp->next_ms = 0;
    if (bp->state == RS_BPEER_PROBING) {
        bp->state = RS_BPEER_SIZING;
        rs_bundle_back(&hello, pkt, RS_OP_BUNDLE_HELLO);
        rs_bundle_hello(c, bp, &hello);
        return;
    }
    /* What it takes, what reached it, what we send at most. */
    limit = MIN(ldl_be_p(pkt->payload + 4), ldl_be_p(pkt->payload + 12));
    limit = MIN(limit, c->p.bundle_max);
    if (limit < RS_BUNDLE_MIN) {
        trace_rdma_session_bundle_drop(len, "REPLY: path or peer too small");
        bp->state = RS_BPEER_PROBING;   /* asked again later */
        bp->tries = 1;
        bp->next_ms = rs_bundle_now_ms() + RS_BUNDLE_RETRY_MS;
        return;
    }
    bp->state = RS_BPEER_OK;
    bp->limit = limit;
    bp->unheard_ms = -1;
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
    /*
     * f may be guest RAM another vCPU writes (a virtio-net NIC on the
     * same hub): each length is read once, and the packets are taken
     * from the (offset, length) pairs checked here, each then parsed by
     * rs_roce_input as a frame that arrived alone.
     */
    for (n = 0, off = RS_BUNDLE_HDR; !why && n < count; n++) {
        const uint8_t *in = f + off + 2;
        size_t ilen;
        uint16_t proto;
        uint8_t dgid[16];

        if (off + 2 > end) {
            why = "lengths past the end";
            break;
        }
        ilen = lduw_be_p(f + off);
        if (ilen < RS_BUNDLE_MIN_INNER || ilen > RS_WIRE_MAX_FRAME) {
            why = "inner length out of range";
            break;
        }
        if (off + 2 + ilen > end) {
            why = "lengths past the end";
            break;
        }
        proto = lduw_be_p(in + 12);
        if (!rs_wire_is_roce(in, ilen, dgid) ||
            (proto != ETH_P_IP && proto != ETH_P_IPV6) ||
            (proto == ETH_P_IPV6 &&
             ilen < RS_BTH_OFF6 + RS_BTH_LEN + RS_ICRC_LEN)) {
            why = "inner frame not RoCE";
        } else if (rs_opcode[in[proto == ETH_P_IPV6 ?
                                RS_BTH_OFF6 : RS_BTH_OFF]].flags &
                   RS_OPF_BUNDLE) {
            why = "nested bundle";
        }
        b->in_off[n] = off + 2;
        b->in_len[n] = ilen;
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
    for (n = 0; n < count; n++) {
        const uint8_t *in = f + b->in_off[n];
        size_t ilen = b->in_len[n];
        uint8_t dgid[16];

        /* As rs_resp_divert would have taken the frame alone. */
        if (!rs_wire_is_roce(in, ilen, dgid) ||
            (rs_gid_find(c, dgid) < 0 &&
             (!rs_gid_is_mcast(dgid) || rs_mcast_find(c, dgid) < 0))) {
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
        rs_bundle_hello_rx(c, &pkt, size);
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
    memset(b->backoff, 0, sizeof(b->backoff));
    b->last = 0;
    b->hello_tokens = RS_HELLO_BURST;
    b->hello_refill_ms = 0;
}

static bool rs_bundle_realize(RSCore *c, Error **errp)
{
    RSBundle *b = g_new0(RSBundle, 1);

    b->bh = qemu_bh_new_guarded(rs_bundle_bh, c, c->guard);
    b->tx = g_malloc0(RS_BUNDLE_BUF);
    b->rx = g_malloc0(RS_BUNDLE_BUF);
    b->hello_tokens = RS_HELLO_BURST;
    c->bundle = b;
    return true;
}

static void rs_bundle_unrealize(RSCore *c)
{
    RSBundle *b = c->bundle;

    qemu_bh_delete(b->bh);
    g_free(b->tx);
    g_free(b->rx);
    g_free(b);
    c->bundle = NULL;
}

const RSFeature rs_feature_bundle = {
    .name = "bundle",
    .realize = rs_bundle_realize,
    .unrealize = rs_bundle_unrealize,
    .quiesce = rs_bundle_reset,
};
