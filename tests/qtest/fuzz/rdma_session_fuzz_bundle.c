/*
 * rdma-session RoCEv2 packet fuzzer (rdma_session_fuzz.c): bundles,
 * spoofed sources and the bundle negotiation (HELLO, HELLO_REPLY)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rdma_session_fuzz.h"

RSFSpoof rsf_spoof;
RSFBundle rsf_bun;
uint8_t rsf_big[RSF_MAX_BIG], rsf_big_l4[RSF_MAX_BIG];
uint8_t rsf_bun_out[RSF_MAX_BIG];

/* ------------------------------------------------------------------ */
/* Bundles, spoofed sources, the bundle negotiation                    */
/* ------------------------------------------------------------------ */

void rsf_bundle_add(const uint8_t *frame, size_t len)
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
void rsf_bundle_emit(void)
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
void rsf_op_bundle(RSFState *f, QTestState *s, const uint8_t *d,
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

/*
 * The next operation (selector, then its operands) from @n rotating
 * sources: sources (1 + d[0] % 64), first index, kind (bits 0-1: 10.1.x.y
 * by index; the remote 10.0.0.2; 10.0.0.<index>, which includes the
 * adapter's own address; 0.0.0.0, 255.255.255.255, 127.0.0.1, our own,
 * a multicast one and the remote by index; bit 2: a MAC per source
 * rather than the remote's).  Over IPv4 only; raw frames are the input's.
 */
void rsf_op_spoof(RSFState *f, QTestState *s, const uint8_t *d,
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
void rsf_op_hello(RSFState *f, QTestState *s, const uint8_t *d,
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
void rsf_op_reply(RSFState *f, QTestState *s, const uint8_t *d,
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
