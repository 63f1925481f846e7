/*
 * rdma-session RoCEv2 packet fuzzer (rdma_session_fuzz.c): RoCEv2 frames
 * from the input, and the operations that send them or post work
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rdma_session_fuzz.h"

const uint8_t rsf_mac[6] = RS_QOS_MAC;
const uint8_t rsf_remote_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
const uint8_t rsf_ip_self[4] = { 10, 0, 0, 1 };
const uint8_t rsf_ip_remote[4] = { 10, 0, 0, 2 };
const uint8_t rsf_ip6_self[16] = { 0xfd, [15] = 1 };
const uint8_t rsf_ip6_remote[16] = { 0xfd, [15] = 2 };

/* ------------------------------------------------------------------ */
/* Frames                                                              */
/* ------------------------------------------------------------------ */

/*
 * The ICRC of IBTA Annex A17: CRC-32 over 8 bytes of ones standing for
 * the LRH, the IP header with its variant fields as ones, the UDP header
 * with the checksum as ones, the BTH with byte 4 as ones, then the rest
 * of the packet.  Written independently of the device's code.
 */
uint32_t rsf_icrc(const uint8_t *f, size_t icrc_off, bool v6)
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

uint16_t rsf_ip_csum(const uint8_t *h)
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
size_t rsf_build_at(uint8_t *f, bool v6, const uint8_t *smac,
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
size_t rsf_build(uint8_t *f, const RSFQp *q, uint16_t sport,
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
 * A RoCE frame to one of our QPs.  Operands: qp, opcode, BTH flags (low
 * bits, no BTH's: bit 0 tags the frame with VLAN RSF_VLAN, bits 1-3 its
 * priority),
 * control (bit 0: raw opcode, 1: raw dest QPN in the next 3 bytes,
 * 2: valid key and address from MR control>>4 & 3, 3: bad ICRC,
 * 6: an XRC request's XRCETH from the input, not the XRC SRQ's number,
 * 7: marked ECN CE, as a congested switch does),
 * PSN delta (signed), UDP source port low byte, ack request, then the
 * extension headers and payload.  An XRC request to the target gets
 * the XRCETH after the BTH (the input's headers follow it).  To a DCT,
 * control bit 2 puts a DC key in a CONNECT's or DISCONNECT's DCETH: the
 * DCT's own, or with bit 4 the other DCT's.
 */
void rsf_op_roce(RSFState *f, QTestState *s, const uint8_t *d,
                 size_t len)
{
    static const uint8_t tbits[] = {
        [RS_QPT_RC] = 0x00, [RS_QPT_UC] = 0x20, [RS_QPT_UD] = 0x60,
        [RS_QPT_XRC_INI] = 0xa0, [RS_QPT_XRC_TGT] = 0xa0,
    };
    uint8_t l4[12 + RSF_MAX_FRAME], frame[RSF_MAX_FRAME + 128];
    uint8_t op, ctl, bth_flags, tag, sport, ackreq;
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
    tag = d[2] & 0x0f;                      /* bit 0: 802.1Q, 1-3 PCP */
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
    if (ctl & 0x80) {
        /* CE: the ICRC does not cover the ECN bits, the IPv4 checksum does */
        if (q->v6) {
            frame[15] |= 0x30;
        } else {
            frame[15] |= 0x03;
            stw_be_p(frame + 24, 0);
            stw_be_p(frame + 24, rsf_ip_csum(frame + 14));
        }
    }
    if ((tag & 1) && !rsf_bun.on) {
        /*
         * BTH flags bit 0 (not a BTH bit: TVer is 0): 802.1Q-tagged,
         * VLAN RSF_VLAN, bits 1-3 the priority.
         */
        memmove(frame + 16, frame + 12, n - 12);
        stw_be_p(frame + 12, 0x8100);
        stw_be_p(frame + 14, (tag & 0x0e) << 12 | RSF_VLAN);
        n += 4;
    }
    rsf_send_frame(frame, n);
}

/* A raw Ethernet frame, exactly the input. */
void rsf_op_raw(RSFState *f, QTestState *s, const uint8_t *d,
                size_t len)
{
    rsf_send_frame(d, len);
}

/* Valid headers to QP operand's GID; BTH onwards from the input. */
void rsf_op_bth(RSFState *f, QTestState *s, const uint8_t *d,
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
void rsf_op_clock(RSFState *f, QTestState *s, const uint8_t *d,
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
void rsf_op_post_send(RSFState *f, QTestState *s, const uint8_t *d,
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
void rsf_op_post_recv(RSFState *f, QTestState *s, const uint8_t *d,
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
void rsf_op_cq(RSFState *f, QTestState *s, const uint8_t *d,
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
void rsf_op_odp(RSFState *f, QTestState *s, const uint8_t *d,
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
void rsf_op_rereg(RSFState *f, QTestState *s, const uint8_t *d,
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

/*
 * Doorbell records (ABI 1.11): qp, mode, value (4 bytes).  Mode bits 0-1:
 * SET_QP_DB_RECORD with the QP's record (a 16-byte slot of a page of the
 * input's own), none (0), a misaligned one or the value as an address;
 * bit 2: value into sq_prod, bit 3: into rq_prod, bit 4: into both
 * active words (the device's); bit 5: then kick the QP's SQ with its
 * doorbell.  Hostile producers make their QP fatal, nothing else.
 */
void rsf_op_dbrec(RSFState *f, QTestState *s, const uint8_t *d,
                  size_t len)
{
    struct rs_cmd_set_qp_db_record c = { 0 };
    RSFQp *q;
    uint64_t rec;
    uint32_t v;

    if (len < 6) {
        return;
    }
    q = rsf_qp_sel(f, d[0]);
    v = ldl_le_p(d + 2);
    if (!f->dbrec) {
        f->dbrec = guest_alloc(&f->alloc, 2 * RSF_PAGE);
        f->dbrec = ROUND_UP(f->dbrec, RSF_PAGE);
        qtest_memset(s, f->dbrec, 0, RSF_PAGE);
    }
    rec = f->dbrec + (q - f->qp) * sizeof(struct rs_db_record);
    switch (d[1] & 3) {
    case 0:
        c.addr = rec;
        break;
    case 1:
        c.addr = 0;
        break;
    case 2:
        c.addr = rec + 8;
        break;
    default:
        c.addr = (uint64_t)v << 4;
        break;
    }
    c.handle = q->h;
    qrs_admin_cmd(&f->d, RS_CMD_SET_QP_DB_RECORD, &c, sizeof(c), NULL, NULL);
    if (d[1] & 4) {
        qtest_writel(s, rec + offsetof(struct rs_db_record, sq_prod), v);
    }
    if (d[1] & 8) {
        qtest_writel(s, rec + offsetof(struct rs_db_record, rq_prod), v);
    }
    if (d[1] & 0x10) {
        qtest_writel(s, rec + offsetof(struct rs_db_record, sq_active), v);
        qtest_writel(s, rec + offsetof(struct rs_db_record, rq_active), v);
    }
    if (d[1] & 0x20) {
        qrs_db_writel(&f->d, 0, RS_DB_SQ,
                      q->qpn | (q->sq_pi & 0xffff) << 16);
    }
}
