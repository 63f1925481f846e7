/*
 * rdma-session adapter: RoCEv2 wire format (IBTA vol. 1 ch. 9, Annex A17).
 *
 * Header layouts, the opcode table (which headers each opcode carries and
 * which QP types may use it, as rxe_opcode.c), and the one place where
 * header fields are converted between wire and host byte order; IPv4 and
 * IPv6 (RoCEv2 over either).
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_SESSION_WIRE_H
#define HW_RDMA_SESSION_WIRE_H

#define RS_ROCE_UDP_PORT    4791

#define RS_ETH_HLEN         14
#define RS_IP4_HLEN         20
#define RS_IP6_HLEN         40
#define RS_UDP_HLEN         8
#define RS_BTH_LEN          12
#define RS_DETH_LEN         8
#define RS_RETH_LEN         16
#define RS_AETH_LEN         4
#define RS_IMM_LEN          4
#define RS_IETH_LEN         4
#define RS_ATMETH_LEN       28
#define RS_ATMACK_LEN       8
#define RS_FETH_LEN         4
#define RS_XRCETH_LEN       4
#define RS_DCETH_LEN        16
#define RS_DCRETH_LEN       8
#define RS_ICRC_LEN         4
#define RS_L3_OFF           RS_ETH_HLEN
#define RS_BTH_OFF          (RS_ETH_HLEN + RS_IP4_HLEN + RS_UDP_HLEN)
#define RS_BTH_OFF6         (RS_ETH_HLEN + RS_IP6_HLEN + RS_UDP_HLEN)
#define RS_GRH_LEN          40

/*
 * 802.1Q: a tagged frame has the tag (TPID, TCI) between the source MAC
 * and the EtherType.  The engine builds and parses frames untagged; the
 * tag is put in on the way out (rs_roce_send) and taken out on the way in
 * (rs_resp_divert).  RSPkt.vlan, RSGid.vlan: 0 untagged, else
 * RS_VLAN_TAGGED | TCI (PCP in bits 13-15, VID in bits 0-11).
 */
#define RS_VLAN_HLEN        4
#define RS_VLAN_TPID        0x8100
#define RS_VLAN_TAGGED      (1u << 16)
#define RS_VLAN_VID(v)      ((v) & 0xfff)
#define RS_VLAN_PCP_SHIFT   13
#define RS_VLAN_PCP(v)      (((v) >> RS_VLAN_PCP_SHIFT) & 7)
#define RS_VLAN_TCI(v)      ((v) & 0xffff)

/*
 * ECN (RFC 3168), the low two bits of the IPv4 TOS / IPv6 traffic class;
 * the ICRC does not cover them, so a switch may mark CE on the way.
 */
#define RS_ECN_MASK         3
#define RS_ECN_NOT_ECT      0
#define RS_ECN_ECT0         2
#define RS_ECN_CE           3

/* A CNP (IBTA A17.9.3): BTH, 16 reserved bytes, ICRC. */
#define RS_CNP_PAYLOAD      16

/* Largest frame the engine builds: headers, 4096 bytes, pad, ICRC. */
#define RS_WIRE_MAX_FRAME   (RS_BTH_OFF6 + 64 + 4096 + 4 + RS_ICRC_LEN)

/* IBTA opcodes (BTH.OpCode): transport in bits 5-7, operation in 0-4. */
enum {
    RS_OP_RC = 0x00,
    RS_OP_UC = 0x20,
    RS_OP_UD = 0x60,
    RS_OP_XRC = 0xa0,
    RS_OP_TRANSPORT = 0xe0,     /* the transport bits */
    RS_OP_CNP = 0x81,           /* congestion notification, any QP type */

    RS_OP_SEND_FIRST = 0x00,
    RS_OP_SEND_MIDDLE = 0x01,
    RS_OP_SEND_LAST = 0x02,
    RS_OP_SEND_LAST_IMM = 0x03,
    RS_OP_SEND_ONLY = 0x04,
    RS_OP_SEND_ONLY_IMM = 0x05,
    RS_OP_WRITE_FIRST = 0x06,
    RS_OP_WRITE_MIDDLE = 0x07,
    RS_OP_WRITE_LAST = 0x08,
    RS_OP_WRITE_LAST_IMM = 0x09,
    RS_OP_WRITE_ONLY = 0x0a,
    RS_OP_WRITE_ONLY_IMM = 0x0b,
    RS_OP_READ_REQ = 0x0c,
    RS_OP_READ_RESP_FIRST = 0x0d,
    RS_OP_READ_RESP_MIDDLE = 0x0e,
    RS_OP_READ_RESP_LAST = 0x0f,
    RS_OP_READ_RESP_ONLY = 0x10,
    RS_OP_ACK = 0x11,
    RS_OP_ATOMIC_ACK = 0x12,
    RS_OP_CMP_SWAP = 0x13,
    RS_OP_FETCH_ADD = 0x14,
    RS_OP_SEND_LAST_INV = 0x16,
    RS_OP_SEND_ONLY_INV = 0x17,
    RS_OP_FLUSH = 0x1c,
    RS_OP_ATOMIC_WRITE = 0x1d,
    /*
     * The page-fault pause (docs/specs: "Page-fault pause on the wire"),
     * in IBTA's manufacturer-specific range: BTH and AETH, any transport.
     */
    RS_OP_ODP_PAUSE = 0xc0,
    RS_OP_ODP_RESUME = 0xc1,
    /*
     * Dynamically connected transport (docs/specs: "Dynamically
     * connected transport"): BTH and DCETH; the reply BTH, AETH, DCRETH.
     */
    RS_OP_DC_CONNECT = 0xc2,
    RS_OP_DC_CONNECT_REPLY = 0xc3,
    RS_OP_DC_DISCONNECT = 0xc4,
    /*
     * Bundles between two adapters (docs/specs: "Bundles on the wire"):
     * HELLO and its REPLY (BTH and payload), and BUNDLE, which carries a
     * run of whole RoCE frames (rdma-session-bundle.c).
     */
    RS_OP_BUNDLE_HELLO = 0xc5,
    RS_OP_BUNDLE_HELLO_REPLY = 0xc6,
    RS_OP_BUNDLE = 0xc7,
};

/* Opcode table flags. */
enum {
    RS_OPF_DETH = 1 << 0,
    RS_OPF_RETH = 1 << 1,
    RS_OPF_AETH = 1 << 2,
    RS_OPF_IMM = 1 << 3,
    RS_OPF_IETH = 1 << 4,
    RS_OPF_ATMETH = 1 << 5,
    RS_OPF_ATMACK = 1 << 6,
    RS_OPF_PAYLOAD = 1 << 7,
    RS_OPF_FIRST = 1 << 8,
    RS_OPF_MIDDLE = 1 << 9,
    RS_OPF_LAST = 1 << 10,
    RS_OPF_ONLY = RS_OPF_FIRST | RS_OPF_LAST,
    RS_OPF_SEND = 1 << 11,
    RS_OPF_WRITE = 1 << 12,
    RS_OPF_READ = 1 << 13,      /* READ request */
    RS_OPF_ATOMIC = 1 << 14,
    RS_OPF_RESP = 1 << 15,      /* ACK / READ response: to the completer */
    RS_OPF_REQ = 1 << 16,       /* to the responder */
    RS_OPF_FETH = 1 << 17,      /* FLUSH extended header, before the RETH */
    RS_OPF_FLUSH = 1 << 18,
    RS_OPF_ATOMIC_WRITE = 1 << 19,
    RS_OPF_XRCETH = 1 << 20,    /* XRC request: right after the BTH */
    RS_OPF_ODP = 1 << 21,       /* PAUSE, RESUME */
    RS_OPF_DCETH = 1 << 22,     /* DC: key, DCI QPN, connection number */
    RS_OPF_DCRETH = 1 << 23,    /* DC reply: context QPN, connection */
    RS_OPF_DC = 1 << 24,        /* CONNECT, REPLY, DISCONNECT */
    RS_OPF_BUNDLE = 1 << 25,    /* HELLO, HELLO_REPLY, BUNDLE */
    RS_OPF_CNP = 1 << 26,       /* congestion notification */
};

typedef struct RSOpcodeInfo {
    const char *name;
    uint32_t flags;
    uint16_t qpt_mask;          /* 1 << enum rs_qp_type, RS_QPT_DC_CTX */
    uint8_t hdr_len;            /* BTH and extension headers */
} RSOpcodeInfo;

extern const RSOpcodeInfo rs_opcode[256];

/* AETH syndromes. */
#define RS_AETH_ACK             0x1f    /* ACK, credits: unlimited */
#define RS_AETH_TYPE_MASK       0xe0
#define RS_AETH_TYPE_ACK        0x00
#define RS_AETH_TYPE_RNR        0x20
#define RS_AETH_TYPE_NAK        0x60
#define RS_AETH_NAK_PSN_SEQ     0x60
#define RS_AETH_NAK_INV_REQ     0x61
#define RS_AETH_NAK_REM_ACCESS  0x62
#define RS_AETH_NAK_REM_OP      0x63

#define RS_PSN_MASK             0xffffffu

/* The transport bits of a connected QP type's opcodes. */
static inline uint8_t rs_qpt_transport(uint8_t type)
{
    return type == RS_QPT_UC ? RS_OP_UC :
           type == RS_QPT_XRC_INI || type == RS_QPT_XRC_TGT ? RS_OP_XRC :
           RS_OP_RC;
}

/* The operation of an opcode, whatever its transport (RC's value). */
static inline uint8_t rs_op_code(uint8_t opcode)
{
    return opcode & ~RS_OP_TRANSPORT;
}

/* Signed distance a - b between two 24-bit PSNs. */
static inline int32_t rs_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

/* One RoCEv2 packet, decoded to host order (or to be encoded). */
typedef struct RSPkt {
    /* L2-L4 */
    uint8_t dmac[6];
    uint8_t smac[6];
    bool v6;                    /* IPv6 (RoCEv2 over IPv6 GIDs) */
    uint8_t sgid[16];           /* addresses as GIDs (IPv4: ::ffff:a.b.c.d) */
    uint8_t dgid[16];
    uint32_t sip;               /* IPv4, host order; 0 for IPv6 */
    uint32_t dip;
    uint8_t tos;                /* IPv6: traffic class */
    uint8_t ttl;                /* IPv6: hop limit */
    uint32_t flow_label;        /* IPv6 only */
    uint16_t sport;
    uint16_t dport;
    uint32_t vlan;              /* 802.1Q: 0, or RS_VLAN_TAGGED | TCI */
    /* BTH */
    uint8_t opcode;
    bool se;
    bool ackreq;
    uint8_t pad;
    uint16_t pkey;
    uint32_t dqpn;
    uint32_t psn;
    /* extension headers, valid per rs_opcode[opcode].flags */
    uint32_t qkey;              /* DETH */
    uint32_t sqpn;
    uint64_t va;                /* RETH */
    uint32_t rkey;
    uint32_t dmalen;
    uint8_t syndrome;           /* AETH */
    uint32_t msn;
    uint32_t imm;               /* ImmDt: the wire's big-endian value */
    uint32_t ieth;              /* IETH rkey */
    uint32_t feth;              /* FETH: placement type, selectivity */
    uint32_t xrcsrq;            /* XRCETH: the XRC SRQ number, 24 bits */
    uint64_t dc_key;            /* DCETH: the DC access key */
    uint32_t dc_qpn;            /* DCETH: DCI QPN; DCRETH: context QPN */
    uint32_t dc_conn;           /* DCETH, DCRETH: connection number */
    /*
     * A FLUSH with the ICRC Linux soft-RoCE computes (rs_wire_build: send
     * it so; rs_wire_parse: it came so).
     */
    bool icrc_rxe_flush;
    uint64_t swap_add;          /* AtomicETH (va, rkey in the RETH fields) */
    uint64_t compare;
    uint64_t orig;              /* AtomicAckETH: the original value */
    /* payload */
    const uint8_t *payload;
    uint32_t paylen;
    /*
     * Or, with payiovcnt != 0 (a frame by reference from a local
     * fabric peer): paylen bytes in these pieces, payload NULL.
     */
    const struct iovec *payiov;
    unsigned payiovcnt;
    /* the IP header as received (UD: copied into the GRH area) */
    const uint8_t *l3;
} RSPkt;

/* Offset of the payload of pkt (its opcode and IP version). */
static inline unsigned rs_wire_payload_off(const RSPkt *pkt)
{
    return (pkt->v6 ? RS_BTH_OFF6 : RS_BTH_OFF) +
           rs_opcode[pkt->opcode].hdr_len;
}

/*
 * Fill in every header of pkt around the paylen bytes the caller already
 * put at rs_wire_payload_off(); adds pad and ICRC.  Returns the frame length.
 */
size_t rs_wire_build(uint8_t *frame, RSPkt *pkt, uint32_t paylen);

/*
 * Decode and check a received RoCEv2 frame (IPv4/UDP 4791, BTH, opcode,
 * lengths, ICRC).  False with *why set when it must be dropped.
 */
bool rs_wire_parse(const uint8_t *frame, size_t len, RSPkt *pkt,
                   const char **why);
/* rs_wire_parse()'s *why for a bad ICRC (the device counts those). */
extern const char rs_wire_bad_icrc[];

/*
 * Quick look at a frame's first RS_BTH_OFF6 (or len) bytes: IPv4 or IPv6,
 * UDP, destination port 4791; *dgid: the destination address as a GID.
 */
bool rs_wire_is_roce(const uint8_t *hdr, size_t len, uint8_t *dgid);

/* IPv4 address of a v4-mapped GID (::ffff:a.b.c.d); false otherwise. */
bool rs_gid_to_ip4(const uint8_t *gid, uint32_t *ip);

#endif
