/*
 * rdma-session adapter: RoCEv2 wire format (IBTA Annex A17).
 *
 * The opcode table, header encode/decode with all byte-order conversion,
 * the ICRC (computed as Linux rxe does, with zlib's crc32()) and the IPv4
 * header checksum.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "net/eth.h"
#include <zlib.h>
#include "host/cpuinfo.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
/* The host's carry-less multiply, for the ICRC (x86 hosts: PCLMULQDQ). */
#if defined(__x86_64__) || defined(__i386__)
#define RS_HAVE_CLMUL 1
#include <immintrin.h>
#endif

/*
 * RC requests also go to DC responder contexts, RC responses also to
 * DC initiators.
 */
#define Q_RC    ((1u << RS_QPT_RC) | (1u << RS_QPT_DC_CTX) |              \
                 (1u << RS_QPT_DCI))
#define Q_UC    (1u << RS_QPT_UC)
#define Q_UD    ((1u << RS_QPT_UD) | (1u << RS_QPT_GSI))
#define Q_XI    (1u << RS_QPT_XRC_INI)      /* XRC responses */
#define Q_XT    (1u << RS_QPT_XRC_TGT)      /* XRC requests */

#define HL(f) (RS_BTH_LEN +                                         \
               (((f) & RS_OPF_DETH) ? RS_DETH_LEN : 0) +            \
               (((f) & RS_OPF_XRCETH) ? RS_XRCETH_LEN : 0) +        \
               (((f) & RS_OPF_DCETH) ? RS_DCETH_LEN : 0) +          \
               (((f) & RS_OPF_FETH) ? RS_FETH_LEN : 0) +            \
               (((f) & RS_OPF_RETH) ? RS_RETH_LEN : 0) +            \
               (((f) & RS_OPF_ATMETH) ? RS_ATMETH_LEN : 0) +        \
               (((f) & RS_OPF_AETH) ? RS_AETH_LEN : 0) +            \
               (((f) & RS_OPF_ATMACK) ? RS_ATMACK_LEN : 0) +        \
               (((f) & RS_OPF_IMM) ? RS_IMM_LEN : 0) +              \
               (((f) & RS_OPF_IETH) ? RS_IETH_LEN : 0) +            \
               (((f) & RS_OPF_DCRETH) ? RS_DCRETH_LEN : 0))

#define OP(code, nm, f, q) \
    [code] = { .name = nm, .flags = (f), .qpt_mask = (q), .hdr_len = HL(f) }

#define SND (RS_OPF_SEND | RS_OPF_REQ | RS_OPF_PAYLOAD)
#define WRT (RS_OPF_WRITE | RS_OPF_REQ | RS_OPF_PAYLOAD)
#define RRS (RS_OPF_RESP | RS_OPF_PAYLOAD)
#define XSN (SND | RS_OPF_XRCETH)
#define XWR (WRT | RS_OPF_XRCETH)

const RSOpcodeInfo rs_opcode[256] = {
    /* RC */
    OP(0x00, "RC_SEND_FIRST", SND | RS_OPF_FIRST, Q_RC),
    OP(0x01, "RC_SEND_MIDDLE", SND | RS_OPF_MIDDLE, Q_RC),
    OP(0x02, "RC_SEND_LAST", SND | RS_OPF_LAST, Q_RC),
    OP(0x03, "RC_SEND_LAST_IMM", SND | RS_OPF_LAST | RS_OPF_IMM, Q_RC),
    OP(0x04, "RC_SEND_ONLY", SND | RS_OPF_ONLY, Q_RC),
    OP(0x05, "RC_SEND_ONLY_IMM", SND | RS_OPF_ONLY | RS_OPF_IMM, Q_RC),
    OP(0x06, "RC_WRITE_FIRST", WRT | RS_OPF_FIRST | RS_OPF_RETH, Q_RC),
    OP(0x07, "RC_WRITE_MIDDLE", WRT | RS_OPF_MIDDLE, Q_RC),
    OP(0x08, "RC_WRITE_LAST", WRT | RS_OPF_LAST, Q_RC),
    OP(0x09, "RC_WRITE_LAST_IMM", WRT | RS_OPF_LAST | RS_OPF_IMM, Q_RC),
    OP(0x0a, "RC_WRITE_ONLY", WRT | RS_OPF_ONLY | RS_OPF_RETH, Q_RC),
    OP(0x0b, "RC_WRITE_ONLY_IMM",
       WRT | RS_OPF_ONLY | RS_OPF_RETH | RS_OPF_IMM, Q_RC),
    OP(0x0c, "RC_READ_REQUEST",
       RS_OPF_READ | RS_OPF_REQ | RS_OPF_ONLY | RS_OPF_RETH, Q_RC),
    OP(0x0d, "RC_READ_RESPONSE_FIRST", RRS | RS_OPF_FIRST | RS_OPF_AETH,
       Q_RC),
    OP(0x0e, "RC_READ_RESPONSE_MIDDLE", RRS | RS_OPF_MIDDLE, Q_RC),
    OP(0x0f, "RC_READ_RESPONSE_LAST", RRS | RS_OPF_LAST | RS_OPF_AETH,
       Q_RC),
    OP(0x10, "RC_READ_RESPONSE_ONLY", RRS | RS_OPF_ONLY | RS_OPF_AETH,
       Q_RC),
    OP(0x11, "RC_ACK", RS_OPF_RESP | RS_OPF_ONLY | RS_OPF_AETH, Q_RC),
    OP(0x12, "RC_ATOMIC_ACK",
       RS_OPF_RESP | RS_OPF_ONLY | RS_OPF_AETH | RS_OPF_ATMACK, Q_RC),
    OP(0x13, "RC_COMPARE_SWAP",
       RS_OPF_ATOMIC | RS_OPF_REQ | RS_OPF_ONLY | RS_OPF_ATMETH, Q_RC),
    OP(0x14, "RC_FETCH_ADD",
       RS_OPF_ATOMIC | RS_OPF_REQ | RS_OPF_ONLY | RS_OPF_ATMETH, Q_RC),
    OP(0x16, "RC_SEND_LAST_INV", SND | RS_OPF_LAST | RS_OPF_IETH, Q_RC),
    OP(0x17, "RC_SEND_ONLY_INV", SND | RS_OPF_ONLY | RS_OPF_IETH, Q_RC),
    /* IBTA 1.5: answered by a READ RESPONSE Only without payload. */
    OP(0x1c, "RC_FLUSH", RS_OPF_FLUSH | RS_OPF_REQ | RS_OPF_ONLY |
       RS_OPF_FETH | RS_OPF_RETH, Q_RC),
    OP(0x1d, "RC_ATOMIC_WRITE", RS_OPF_ATOMIC_WRITE | RS_OPF_REQ |
       RS_OPF_ONLY | RS_OPF_RETH | RS_OPF_PAYLOAD, Q_RC),
    /* UC */
    OP(0x20, "UC_SEND_FIRST", SND | RS_OPF_FIRST, Q_UC),
    OP(0x21, "UC_SEND_MIDDLE", SND | RS_OPF_MIDDLE, Q_UC),
    OP(0x22, "UC_SEND_LAST", SND | RS_OPF_LAST, Q_UC),
    OP(0x23, "UC_SEND_LAST_IMM", SND | RS_OPF_LAST | RS_OPF_IMM, Q_UC),
    OP(0x24, "UC_SEND_ONLY", SND | RS_OPF_ONLY, Q_UC),
    OP(0x25, "UC_SEND_ONLY_IMM", SND | RS_OPF_ONLY | RS_OPF_IMM, Q_UC),
    OP(0x26, "UC_WRITE_FIRST", WRT | RS_OPF_FIRST | RS_OPF_RETH, Q_UC),
    OP(0x27, "UC_WRITE_MIDDLE", WRT | RS_OPF_MIDDLE, Q_UC),
    OP(0x28, "UC_WRITE_LAST", WRT | RS_OPF_LAST, Q_UC),
    OP(0x29, "UC_WRITE_LAST_IMM", WRT | RS_OPF_LAST | RS_OPF_IMM, Q_UC),
    OP(0x2a, "UC_WRITE_ONLY", WRT | RS_OPF_ONLY | RS_OPF_RETH, Q_UC),
    OP(0x2b, "UC_WRITE_ONLY_IMM",
       WRT | RS_OPF_ONLY | RS_OPF_RETH | RS_OPF_IMM, Q_UC),
    /*
     * XRC: RC's operations in the XRC transport range; every request
     * carries the XRCETH naming the XRC SRQ at the target.
     */
    OP(0xa0, "XRC_SEND_FIRST", XSN | RS_OPF_FIRST, Q_XT),
    OP(0xa1, "XRC_SEND_MIDDLE", XSN | RS_OPF_MIDDLE, Q_XT),
    OP(0xa2, "XRC_SEND_LAST", XSN | RS_OPF_LAST, Q_XT),
    OP(0xa3, "XRC_SEND_LAST_IMM", XSN | RS_OPF_LAST | RS_OPF_IMM, Q_XT),
    OP(0xa4, "XRC_SEND_ONLY", XSN | RS_OPF_ONLY, Q_XT),
    OP(0xa5, "XRC_SEND_ONLY_IMM", XSN | RS_OPF_ONLY | RS_OPF_IMM, Q_XT),
    OP(0xa6, "XRC_WRITE_FIRST", XWR | RS_OPF_FIRST | RS_OPF_RETH, Q_XT),
    OP(0xa7, "XRC_WRITE_MIDDLE", XWR | RS_OPF_MIDDLE, Q_XT),
    OP(0xa8, "XRC_WRITE_LAST", XWR | RS_OPF_LAST, Q_XT),
    OP(0xa9, "XRC_WRITE_LAST_IMM", XWR | RS_OPF_LAST | RS_OPF_IMM, Q_XT),
    OP(0xaa, "XRC_WRITE_ONLY", XWR | RS_OPF_ONLY | RS_OPF_RETH, Q_XT),
    OP(0xab, "XRC_WRITE_ONLY_IMM",
       XWR | RS_OPF_ONLY | RS_OPF_RETH | RS_OPF_IMM, Q_XT),
    OP(0xac, "XRC_READ_REQUEST", RS_OPF_READ | RS_OPF_REQ | RS_OPF_ONLY |
       RS_OPF_RETH | RS_OPF_XRCETH, Q_XT),
    OP(0xad, "XRC_READ_RESPONSE_FIRST", RRS | RS_OPF_FIRST | RS_OPF_AETH,
       Q_XI),
    OP(0xae, "XRC_READ_RESPONSE_MIDDLE", RRS | RS_OPF_MIDDLE, Q_XI),
    OP(0xaf, "XRC_READ_RESPONSE_LAST", RRS | RS_OPF_LAST | RS_OPF_AETH,
       Q_XI),
    OP(0xb0, "XRC_READ_RESPONSE_ONLY", RRS | RS_OPF_ONLY | RS_OPF_AETH,
       Q_XI),
    OP(0xb1, "XRC_ACK", RS_OPF_RESP | RS_OPF_ONLY | RS_OPF_AETH, Q_XI),
    OP(0xb2, "XRC_ATOMIC_ACK",
       RS_OPF_RESP | RS_OPF_ONLY | RS_OPF_AETH | RS_OPF_ATMACK, Q_XI),
    OP(0xb3, "XRC_COMPARE_SWAP", RS_OPF_ATOMIC | RS_OPF_REQ | RS_OPF_ONLY |
       RS_OPF_ATMETH | RS_OPF_XRCETH, Q_XT),
    OP(0xb4, "XRC_FETCH_ADD", RS_OPF_ATOMIC | RS_OPF_REQ | RS_OPF_ONLY |
       RS_OPF_ATMETH | RS_OPF_XRCETH, Q_XT),
    OP(0xb6, "XRC_SEND_LAST_INV", XSN | RS_OPF_LAST | RS_OPF_IETH, Q_XT),
    OP(0xb7, "XRC_SEND_ONLY_INV", XSN | RS_OPF_ONLY | RS_OPF_IETH, Q_XT),
    /* UD */
    OP(0x64, "UD_SEND_ONLY", SND | RS_OPF_ONLY | RS_OPF_DETH, Q_UD),
    OP(0x65, "UD_SEND_ONLY_IMM",
       SND | RS_OPF_ONLY | RS_OPF_DETH | RS_OPF_IMM, Q_UD),
    /* Congestion notification: rdma-session-ecn.c checks it. */
    OP(0x81, "CNP", RS_OPF_CNP | RS_OPF_ONLY | RS_OPF_PAYLOAD, 0),
    /* The page-fault pause, to RC requesters (and XRC initiators) */
    OP(0xc0, "RS_ODP_PAUSE",
       RS_OPF_RESP | RS_OPF_ONLY | RS_OPF_AETH | RS_OPF_ODP, Q_RC | Q_XI),
    OP(0xc1, "RS_ODP_RESUME",
       RS_OPF_RESP | RS_OPF_ONLY | RS_OPF_AETH | RS_OPF_ODP, Q_RC | Q_XI),
    /* Dynamically connected transport: rdma-session-dc.c checks them. */
    OP(0xc2, "RS_DC_CONNECT", RS_OPF_DC | RS_OPF_ONLY | RS_OPF_DCETH, 0),
    OP(0xc3, "RS_DC_CONNECT_REPLY",
       RS_OPF_DC | RS_OPF_ONLY | RS_OPF_AETH | RS_OPF_DCRETH, 0),
    OP(0xc4, "RS_DC_DISCONNECT", RS_OPF_DC | RS_OPF_ONLY | RS_OPF_DCETH, 0),
    /* Bundles: rdma-session-bundle.c takes them before rs_roce_input. */
    OP(0xc5, "RS_BUNDLE_HELLO", RS_OPF_BUNDLE | RS_OPF_ONLY | RS_OPF_PAYLOAD,
       0),
    OP(0xc6, "RS_BUNDLE_HELLO_REPLY",
       RS_OPF_BUNDLE | RS_OPF_ONLY | RS_OPF_PAYLOAD, 0),
    OP(0xc7, "RS_BUNDLE", RS_OPF_BUNDLE | RS_OPF_ONLY | RS_OPF_PAYLOAD, 0),
};

static uint16_t rs_ip4_checksum(const uint8_t *hdr, unsigned len)
{
    uint32_t sum = 0;
    unsigned i;

    for (i = 0; i + 1 < len; i += 2) {
        sum += lduw_be_p(hdr + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

bool rs_gid_to_ip4(const uint8_t *gid, uint32_t *ip)
{
    static const uint8_t prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
    };

    if (memcmp(gid, prefix, sizeof(prefix))) {
        return false;
    }
    *ip = ldl_be_p(gid + 12);
    return true;
}

/* The v4-mapped GID of an IPv4 address. */
static void rs_ip4_to_gid(uint32_t ip, uint8_t *gid)
{
    memset(gid, 0, 10);
    gid[10] = gid[11] = 0xff;
    stl_be_p(gid + 12, ip);
}

/* One's complement sum of len bytes (RFC 1071), an odd tail zero-padded. */
static uint32_t rs_csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    size_t i;

    for (i = 0; i + 1 < len; i += 2) {
        sum += lduw_be_p(p + i);
    }
    if (len & 1) {
        sum += p[len - 1] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum;
}

#ifdef RS_HAVE_CLMUL
/*
 * CRC-32 (IEEE 802.3, bit-reflected) of len bytes, len >= 64 and a
 * multiple of 16, by folding with carry-less multiplication (Intel, "Fast
 * CRC Computation for Generic Polynomials Using PCLMULQDQ"; Linux's
 * crc32-pclmul_asm.S has the same constants).  crc is not inverted, in
 * or out.  About three times zlib's speed, and the ICRC of every packet
 * sent and received is the engine's largest cost per byte.
 */
/* x times x^k (the two halves of k) plus y: 128 bits of input folded on. */
__attribute__((target("pclmul,sse2")))
static inline __m128i rs_clmul_fold(__m128i x, __m128i k, __m128i y)
{
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       hi), y);
}

#define RS_LOAD128(p) _mm_loadu_si128((const __m128i *)(p))

__attribute__((target("pclmul,sse2")))
static uint32_t rs_crc32_clmul(uint32_t crc, const uint8_t *p, size_t len)
{
    const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
    const __m128i poly = _mm_set_epi64x(0x1f7011641, 0x1db710641);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x[4], t;
    int i;

    for (i = 0; i < 4; i++) {
        x[i] = RS_LOAD128(p + 16 * i);
    }
    x[0] = _mm_xor_si128(x[0], _mm_cvtsi32_si128(crc));
    for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
        for (i = 0; i < 4; i++) {
            x[i] = rs_clmul_fold(x[i], k1k2, RS_LOAD128(p + 16 * i));
        }
    }
    /* Four lanes into one, then the rest 16 bytes at a time. */
    for (i = 1; i < 4; i++) {
        x[0] = rs_clmul_fold(x[0], k3k4, x[i]);
    }
    for (; len >= 16; p += 16, len -= 16) {
        x[0] = rs_clmul_fold(x[0], k3k4, RS_LOAD128(p));
    }
    /* 128 bits to 64 (with 32 zero bits appended), to 32, then Barrett. */
    t = _mm_clmulepi64_si128(x[0], k3k4, 0x10);
    x[0] = _mm_xor_si128(_mm_srli_si128(x[0], 8), t);
    t = _mm_srli_si128(x[0], 4);
    x[0] = _mm_clmulepi64_si128(_mm_and_si128(x[0], mask32), k5, 0x00);
    x[0] = _mm_xor_si128(x[0], t);
    t = x[0];
    x[0] = _mm_clmulepi64_si128(_mm_and_si128(x[0], mask32), poly, 0x10);
    x[0] = _mm_clmulepi64_si128(_mm_and_si128(x[0], mask32), poly, 0x00);
    x[0] = _mm_xor_si128(x[0], t);
    return _mm_cvtsi128_si32(_mm_srli_si128(x[0], 4));
}
#endif

/* zlib's crc32(), faster where the host has PCLMULQDQ. */
static uint32_t rs_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
#ifdef RS_HAVE_CLMUL
    if (len >= 64 && (cpuinfo & CPUINFO_PCLMUL)) {
        size_t n = len & ~(size_t)15;

        crc = ~rs_crc32_clmul(~crc, p, n);
        p += n;
        len -= n;
    }
#endif
    return crc32(crc, p, len);
}

/*
 * ICRC as IBTA A17.8 and Linux rxe_icrc.c: CRC-32 over 8 bytes of 1s
 * (the masked LRH), the IP header with its variant fields set to 1s (IPv4:
 * TOS, TTL and checksum; IPv6: traffic class, flow label and hop limit),
 * the UDP header with its checksum set to 1s, the BTH with resv8a set to
 * 1s, the rest of the packet up to the ICRC.  zlib's crc32() includes the
 * initial and final inversion, so its result is the ICRC rxe stores (as a
 * little-endian word).
 */
static uint32_t rs_icrc(const uint8_t *frame, size_t icrc_off, bool v6)
{
    /* The masked headers, then payload up to a multiple of 16 bytes. */
    uint8_t ph[QEMU_ALIGN_UP(8 + RS_IP6_HLEN + RS_UDP_HLEN + RS_BTH_LEN,
                             16)];
    unsigned l3 = v6 ? RS_IP6_HLEN : RS_IP4_HLEN;
    unsigned n = 8 + l3 + RS_UDP_HLEN + RS_BTH_LEN;
    unsigned bth = RS_L3_OFF + l3 + RS_UDP_HLEN;
    size_t rest = icrc_off - bth - RS_BTH_LEN;
    unsigned more = MAX(QEMU_ALIGN_UP(n, 16), 64) - n;
    uLong crc;

    QEMU_BUILD_BUG_ON(sizeof(ph) < 64);

    memset(ph, 0xff, 8);
    memcpy(ph + 8, frame + RS_L3_OFF, n - 8);
    if (v6) {
        ph[8] |= 0x0f;                          /* traffic class, */
        ph[8 + 1] = ph[8 + 2] = ph[8 + 3] = 0xff;   /* flow label */
        ph[8 + 7] = 0xff;                       /* hop limit */
    } else {
        ph[8 + 1] = 0xff;                       /* TOS */
        ph[8 + 8] = 0xff;                       /* TTL */
        ph[8 + 10] = ph[8 + 11] = 0xff;         /* IP checksum */
    }
    ph[8 + l3 + 6] = ph[8 + l3 + 7] = 0xff;     /* UDP checksum */
    ph[8 + l3 + RS_UDP_HLEN + 4] = 0xff;        /* BTH resv8a */
    if (rest < more) {
        crc = crc32(0, ph, n);
        return rs_crc32(crc, frame + bth + RS_BTH_LEN, rest);
    }
    /*
     * A data packet: the headers and the payload's first bytes in one
     * 64- or 80-byte block, so that the carry-less multiplication takes
     * them too, and zlib no part of a 4096-byte payload.
     */
    memcpy(ph + n, frame + bth + RS_BTH_LEN, more);
    crc = rs_crc32(0, ph, n + more);
    return rs_crc32(crc, frame + bth + RS_BTH_LEN + more, rest - more);
}

/*
 * The ICRC Linux soft-RoCE (6.2 to at least 6.12) puts on, and expects
 * of, a FLUSH: its opcode table gives RC_FLUSH no payload offset, so the
 * CRC goes on over the transport headers (all a FLUSH has before its
 * ICRC) a second time, as they are on the wire.
 */
static uint32_t rs_icrc_rxe_flush(const uint8_t *frame, size_t icrc_off,
                                  bool v6)
{
    unsigned bth = v6 ? RS_BTH_OFF6 : RS_BTH_OFF;

    return rs_crc32(rs_icrc(frame, icrc_off, v6), frame + bth,
                    icrc_off - bth);
}

size_t rs_wire_build(uint8_t *f, RSPkt *pkt, uint32_t paylen)
{
    const RSOpcodeInfo *oi = &rs_opcode[pkt->opcode];
    unsigned pad = (-paylen) & 3;
    unsigned off = rs_wire_payload_off(pkt);
    unsigned l3 = pkt->v6 ? RS_IP6_HLEN : RS_IP4_HLEN;
    size_t len = off + paylen + pad + RS_ICRC_LEN;
    uint8_t *ip = f + RS_L3_OFF, *udp = ip + l3, *h;
    size_t udplen = len - RS_ETH_HLEN - l3;

    /* Ethernet */
    memcpy(f, pkt->dmac, 6);
    memcpy(f + 6, pkt->smac, 6);
    stw_be_p(f + 12, pkt->v6 ? ETH_P_IPV6 : ETH_P_IP);
    if (pkt->v6) {
        stl_be_p(ip, 6u << 28 | (uint32_t)pkt->tos << 20 |
                 (pkt->flow_label & 0xfffff));
        stw_be_p(ip + 4, udplen);
        ip[6] = IPPROTO_UDP;
        ip[7] = pkt->ttl ? pkt->ttl : 64;
        memcpy(ip + 8, pkt->sgid, 16);
        memcpy(ip + 24, pkt->dgid, 16);
    } else {
        /* IPv4, DF, no options */
        ip[0] = 0x45;
        ip[1] = pkt->tos;
        stw_be_p(ip + 2, len - RS_ETH_HLEN);
        stw_be_p(ip + 4, 0);
        stw_be_p(ip + 6, 0x4000);
        ip[8] = pkt->ttl ? pkt->ttl : 64;
        ip[9] = IPPROTO_UDP;
        stw_be_p(ip + 10, 0);
        stl_be_p(ip + 12, pkt->sip);
        stl_be_p(ip + 16, pkt->dip);
        stw_be_p(ip + 10, rs_ip4_checksum(ip, RS_IP4_HLEN));
    }
    /* UDP; IPv4 goes without checksum, the ICRC covers the payload */
    stw_be_p(udp, pkt->sport);
    stw_be_p(udp + 2, pkt->dport);
    stw_be_p(udp + 4, udplen);
    stw_be_p(udp + 6, 0);
    /* BTH */
    h = udp + RS_UDP_HLEN;
    h[0] = pkt->opcode;
    h[1] = (pkt->se ? 0x80 : 0) | (pad << 4);   /* M = 0, TVer = 0 */
    stw_be_p(h + 2, pkt->pkey ? pkt->pkey : 0xffff);
    stl_be_p(h + 4, pkt->dqpn & RS_PSN_MASK);
    stl_be_p(h + 8, (pkt->ackreq ? 0x80000000u : 0) | (pkt->psn & RS_PSN_MASK));
    h += RS_BTH_LEN;
    if (oi->flags & RS_OPF_DETH) {
        stl_be_p(h, pkt->qkey);
        stl_be_p(h + 4, pkt->sqpn & RS_PSN_MASK);
        h += RS_DETH_LEN;
    }
    if (oi->flags & RS_OPF_XRCETH) {
        stl_be_p(h, pkt->xrcsrq & RS_PSN_MASK);
        h += RS_XRCETH_LEN;
    }
    if (oi->flags & RS_OPF_DCETH) {
        stq_be_p(h, pkt->dc_key);
        stl_be_p(h + 8, pkt->dc_qpn & RS_PSN_MASK);
        stl_be_p(h + 12, pkt->dc_conn);
        h += RS_DCETH_LEN;
    }
    if (oi->flags & RS_OPF_FETH) {
        stl_be_p(h, pkt->feth);
        h += RS_FETH_LEN;
    }
    if (oi->flags & RS_OPF_RETH) {
        stq_be_p(h, pkt->va);
        stl_be_p(h + 8, pkt->rkey);
        stl_be_p(h + 12, pkt->dmalen);
        h += RS_RETH_LEN;
    }
    if (oi->flags & RS_OPF_ATMETH) {
        stq_be_p(h, pkt->va);
        stl_be_p(h + 8, pkt->rkey);
        stq_be_p(h + 12, pkt->swap_add);
        stq_be_p(h + 20, pkt->compare);
        h += RS_ATMETH_LEN;
    }
    if (oi->flags & RS_OPF_AETH) {
        stl_be_p(h, ((uint32_t)pkt->syndrome << 24) | (pkt->msn & RS_PSN_MASK));
        h += RS_AETH_LEN;
    }
    if (oi->flags & RS_OPF_ATMACK) {
        stq_be_p(h, pkt->orig);
        h += RS_ATMACK_LEN;
    }
    if (oi->flags & RS_OPF_IMM) {
        stl_be_p(h, pkt->imm);
        h += RS_IMM_LEN;
    }
    if (oi->flags & RS_OPF_IETH) {
        stl_be_p(h, pkt->ieth);
        h += RS_IETH_LEN;
    }
    if (oi->flags & RS_OPF_DCRETH) {
        stl_be_p(h, pkt->dc_qpn & RS_PSN_MASK);
        stl_be_p(h + 4, pkt->dc_conn);
        h += RS_DCRETH_LEN;
    }
    memset(f + off + paylen, 0, pad);
    stl_le_p(f + len - RS_ICRC_LEN,
             pkt->icrc_rxe_flush && pkt->opcode == RS_OP_FLUSH ?
             rs_icrc_rxe_flush(f, len - RS_ICRC_LEN, pkt->v6) :
             rs_icrc(f, len - RS_ICRC_LEN, pkt->v6));
    if (pkt->v6) {
        /* IPv6 requires the UDP checksum (RFC 8200 8.1); the ICRC masks it. */
        uint32_t sum = rs_csum_add(0, ip + 8, 32);
        uint16_t ck;

        sum = rs_csum_add(sum + udplen + IPPROTO_UDP, udp, udplen);
        ck = ~sum & 0xffff;
        stw_be_p(udp + 6, ck ? ck : 0xffff);
    }
    pkt->pad = pad;
    pkt->paylen = paylen;
    return len;
}

bool rs_wire_is_roce(const uint8_t *f, size_t len, uint8_t *dgid)
{
    if (len >= RS_BTH_OFF && lduw_be_p(f + 12) == ETH_P_IP &&
        (f[RS_L3_OFF] >> 4) == 4 && f[RS_L3_OFF + 9] == IPPROTO_UDP &&
        (f[RS_L3_OFF] & 0xf) == 5 &&
        lduw_be_p(f + RS_L3_OFF + RS_IP4_HLEN + 2) == RS_ROCE_UDP_PORT) {
        rs_ip4_to_gid(ldl_be_p(f + RS_L3_OFF + 16), dgid);
        return true;
    }
    /* IPv6 without extension headers: UDP is the next header. */
    if (len >= RS_BTH_OFF6 && lduw_be_p(f + 12) == ETH_P_IPV6 &&
        (f[RS_L3_OFF] >> 4) == 6 && f[RS_L3_OFF + 6] == IPPROTO_UDP &&
        lduw_be_p(f + RS_L3_OFF + RS_IP6_HLEN + 2) == RS_ROCE_UDP_PORT) {
        memcpy(dgid, f + RS_L3_OFF + 24, 16);
        return true;
    }
    return false;
}

const char rs_wire_bad_icrc[] = "bad ICRC";

bool rs_wire_parse(const uint8_t *f, size_t len, RSPkt *pkt,
                   const char **why)
{
    const uint8_t *ip = f + RS_L3_OFF, *udp, *h;
    const RSOpcodeInfo *oi;
    size_t iplen, udplen, end, off;
    unsigned l3;

    memset(pkt, 0, sizeof(*pkt));
    if (!rs_wire_is_roce(f, len, pkt->dgid)) {
        *why = "not IPv4/IPv6 UDP 4791";
        return false;
    }
    pkt->v6 = lduw_be_p(f + 12) == ETH_P_IPV6;
    l3 = pkt->v6 ? RS_IP6_HLEN : RS_IP4_HLEN;
    udp = ip + l3;
    udplen = lduw_be_p(udp + 4);
    if (pkt->v6) {
        iplen = RS_IP6_HLEN + lduw_be_p(ip + 4);
    } else {
        iplen = lduw_be_p(ip + 2);
        if ((lduw_be_p(ip + 6) & 0x3fff) != 0) {
            *why = "IPv4 fragment";
            return false;
        }
    }
    if (iplen + RS_ETH_HLEN > len || iplen != udplen + l3) {
        *why = "bad IP/UDP length";
        return false;
    }
    end = RS_ETH_HLEN + iplen;              /* ignore Ethernet padding */
    if (end < RS_ETH_HLEN + l3 + RS_UDP_HLEN + RS_BTH_LEN + RS_ICRC_LEN) {
        *why = "runt";
        return false;
    }
    h = udp + RS_UDP_HLEN;
    pkt->opcode = h[0];
    oi = &rs_opcode[pkt->opcode];
    if (!oi->name) {
        *why = "unknown opcode";
        return false;
    }
    if ((h[1] & 0xf) != 0) {
        *why = "bad TVer";
        return false;
    }
    off = rs_wire_payload_off(pkt);
    pkt->pad = (h[1] >> 4) & 3;
    if (off + pkt->pad + RS_ICRC_LEN > end) {
        *why = "headers longer than the packet";
        return false;
    }
    pkt->icrc_rxe_flush = false;
    if (ldl_le_p(f + end - RS_ICRC_LEN) !=
        rs_icrc(f, end - RS_ICRC_LEN, pkt->v6)) {
        if (pkt->opcode != RS_OP_FLUSH ||
            ldl_le_p(f + end - RS_ICRC_LEN) !=
            rs_icrc_rxe_flush(f, end - RS_ICRC_LEN, pkt->v6)) {
            *why = rs_wire_bad_icrc;
            return false;
        }
        pkt->icrc_rxe_flush = true;     /* the caller decides */
    }
    memcpy(pkt->dmac, f, 6);
    memcpy(pkt->smac, f + 6, 6);
    if (pkt->v6) {
        uint32_t w = ldl_be_p(ip);

        pkt->tos = w >> 20;
        pkt->flow_label = w & 0xfffff;
        pkt->ttl = ip[7];
        memcpy(pkt->sgid, ip + 8, 16);
    } else {
        pkt->tos = ip[1];
        pkt->ttl = ip[8];
        pkt->sip = ldl_be_p(ip + 12);
        pkt->dip = ldl_be_p(ip + 16);
        rs_ip4_to_gid(pkt->sip, pkt->sgid);
    }
    pkt->sport = lduw_be_p(udp);
    pkt->dport = lduw_be_p(udp + 2);
    pkt->se = h[1] & 0x80;
    pkt->pkey = lduw_be_p(h + 2);
    pkt->dqpn = ldl_be_p(h + 4) & RS_PSN_MASK;
    pkt->ackreq = h[8] & 0x80;
    pkt->psn = ldl_be_p(h + 8) & RS_PSN_MASK;
    h += RS_BTH_LEN;
    if (oi->flags & RS_OPF_DETH) {
        pkt->qkey = ldl_be_p(h);
        pkt->sqpn = ldl_be_p(h + 4) & RS_PSN_MASK;
        h += RS_DETH_LEN;
    }
    if (oi->flags & RS_OPF_XRCETH) {
        pkt->xrcsrq = ldl_be_p(h) & RS_PSN_MASK;
        h += RS_XRCETH_LEN;
    }
    if (oi->flags & RS_OPF_DCETH) {
        /* The QPN's top 8 bits are reserved: rdma-session-dc.c checks. */
        pkt->dc_key = ldq_be_p(h);
        pkt->dc_qpn = ldl_be_p(h + 8);
        pkt->dc_conn = ldl_be_p(h + 12);
        h += RS_DCETH_LEN;
    }
    if (oi->flags & RS_OPF_FETH) {
        pkt->feth = ldl_be_p(h);
        h += RS_FETH_LEN;
    }
    if (oi->flags & RS_OPF_RETH) {
        pkt->va = ldq_be_p(h);
        pkt->rkey = ldl_be_p(h + 8);
        pkt->dmalen = ldl_be_p(h + 12);
        h += RS_RETH_LEN;
    }
    if (oi->flags & RS_OPF_ATMETH) {
        pkt->va = ldq_be_p(h);
        pkt->rkey = ldl_be_p(h + 8);
        pkt->swap_add = ldq_be_p(h + 12);
        pkt->compare = ldq_be_p(h + 20);
        h += RS_ATMETH_LEN;
    }
    if (oi->flags & RS_OPF_AETH) {
        uint32_t a = ldl_be_p(h);

        pkt->syndrome = a >> 24;
        pkt->msn = a & RS_PSN_MASK;
        h += RS_AETH_LEN;
    }
    if (oi->flags & RS_OPF_ATMACK) {
        pkt->orig = ldq_be_p(h);
        h += RS_ATMACK_LEN;
    }
    if (oi->flags & RS_OPF_IMM) {
        pkt->imm = ldl_be_p(h);
        h += RS_IMM_LEN;
    }
    if (oi->flags & RS_OPF_IETH) {
        pkt->ieth = ldl_be_p(h);
        h += RS_IETH_LEN;
    }
    if (oi->flags & RS_OPF_DCRETH) {
        pkt->dc_qpn = ldl_be_p(h);
        pkt->dc_conn = ldl_be_p(h + 4);
        h += RS_DCRETH_LEN;
    }
    pkt->payload = f + off;
    pkt->payiov = NULL;
    pkt->payiovcnt = 0;
    pkt->paylen = end - off - pkt->pad - RS_ICRC_LEN;
    pkt->l3 = ip;
    if (pkt->paylen && !(oi->flags & RS_OPF_PAYLOAD)) {
        *why = "payload on an opcode without one";
        return false;
    }
    return true;
}
