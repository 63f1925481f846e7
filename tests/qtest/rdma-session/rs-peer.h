/*
 * The rdma-session qtests' RoCE peer: two adapters in one guest, each on
 * a socket the test carries frames on (checked, logged, held, dropped,
 * edited or injected), and the frame helpers (ICRC, checksums, opcodes)
 * of the wire tests
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RS_PEER_H
#define RS_PEER_H

#include "rs-test.h"

/*
 * Two adapters in one guest, each on "-netdev socket" on one end of a
 * socketpair.  The test holds the other ends and is the wire: it moves
 * every frame from one adapter to the other, checks its headers and ICRC
 * on the way, counts it, and may keep it instead (to inject it later, or
 * changed).  So every RoCE packet really leaves one adapter through its
 * netdev and enters the other through its own; nothing goes through the
 * loopback path of one adapter.
 *
 * Adapter A (index 0) is the qos graph's; B (index 1) sits in slot
 * PAIR_SLOT.  GID 0 of adapter i is 10.0.0.(i + 1) in VNI 0; tests that
 * need it add GID 1, 10.0.1.(i + 1) in VNI 1.
 */
#define PAIR_SLOT       0x1f

#define PAIR_NETDEV     "rsnet1"
#define PAIR_MAC_STR    "52:54:00:12:34:71"
/* b_hub: the virtio-net NIC on B's hub. */
#define PAIR_VNET_SLOT  0x1e
#define PAIR_VNET_MAC_STR "52:54:00:12:34:7e"
#define PAIR_BUF        (8 * PAGE)
#define PAIR_CQ_LOG     6
#define PAIR_OPS        256
#define PAIR_FRAME_MAX  4352

/* Local ACK timeout 4.096 us * 2^20 = 4.3 s of virtual time: no resends. */
#define PAIR_TIMEOUT    20

#define ROCE_BTH        (14 + 20 + 8)
#define ROCE_EXT        (ROCE_BTH + 12)
/* A bundle HELLO before its first REPLY: BTH, 16 bytes, ICRC. */
#define HELLO_SMALL     (ROCE_EXT + 16 + 4)

/* IBTA BTH opcodes (RC unless named) and AETH syndromes. */
enum {
    OP_SEND_FIRST = 0x00,
    OP_SEND_MIDDLE = 0x01,
    OP_SEND_LAST = 0x02,
    OP_SEND_LAST_IMM = 0x03,
    OP_SEND_ONLY = 0x04,
    OP_SEND_ONLY_IMM = 0x05,
    OP_WRITE_FIRST = 0x06,
    OP_WRITE_MIDDLE = 0x07,
    OP_WRITE_LAST = 0x08,
    OP_WRITE_LAST_IMM = 0x09,
    OP_WRITE_ONLY = 0x0a,
    OP_WRITE_ONLY_IMM = 0x0b,
    OP_READ_REQ = 0x0c,
    OP_READ_RESP_FIRST = 0x0d,
    OP_READ_RESP_MIDDLE = 0x0e,
    OP_READ_RESP_LAST = 0x0f,
    OP_READ_RESP_ONLY = 0x10,
    OP_ACK = 0x11,
    OP_ATOMIC_ACK = 0x12,
    OP_CMP_SWAP = 0x13,
    OP_FETCH_ADD = 0x14,
    OP_UC = 0x20,               /* | the RC opcode: its UC one */
    OP_XRC = 0xa0,              /* | the RC opcode: its XRC one */
    OP_UD_SEND_ONLY = 0x64,
    OP_UD_SEND_ONLY_IMM = 0x65,
    /* Manufacturer-specific: the page-fault pause (ABI 1.4), BTH + AETH. */
    OP_ODP_PAUSE = 0xc0,
    OP_ODP_RESUME = 0xc1,
    /* DC (ABI 1.5): BTH + DCETH; the reply BTH + AETH + DCRETH. */
    OP_DC_CONNECT = 0xc2,
    OP_DC_CONNECT_REPLY = 0xc3,
    OP_DC_DISCONNECT = 0xc4,
    /* Bundles (ABI 1.6): HELLO, its REPLY (BTH + payload), BUNDLE. */
    OP_BUNDLE_HELLO = 0xc5,
    OP_BUNDLE_HELLO_REPLY = 0xc6,
    OP_BUNDLE = 0xc7,

    AETH_ACK = 0x1f,
    AETH_RNR = 0x20,            /* | the RNR timer code */
    AETH_NAK_SEQ = 0x60,
    AETH_NAK_INV_REQ = 0x61,
    AETH_NAK_REM_ACCESS = 0x62,
    AETH_NAK_REM_OP = 0x63,
};

extern const uint8_t pair_mac[2][6];

/* First send PSN of each side: A's first message crosses 2^24. */
extern const uint32_t pair_psn[2];

typedef struct PairSockets {
    int test[2], qemu[2];
    int old[2];                 /* after pair_migrate(): the source's wire */
    char *b_props;              /* more properties of adapter B */
    char *a_props;              /* and of A (NULL: none) */
    bool b_hub;                 /* B shares a hub with a virtio-net NIC */
} PairSockets;

typedef struct Peer {
    QRdmaSession *d;
    EngCq cq;
    uint32_t pd;
    uint64_t buf;               /* PAIR_BUF bytes, page aligned */
    uint32_t key[2];            /* MR over buf, all rights, through GID i */
    uint8_t *img;               /* what buf must hold */
} Peer;

typedef struct Pair {
    int fd[2];                  /* the test's ends of A's and B's wire */
    bool hold[2];               /* keep frames from A / B, do not relay */
    uint64_t drop[2];           /* bit n: lose frame n since the reset */
    uint16_t blackhole[2][4];   /* lose A's / B's frames from these ports */
    /*
     * Bundles since the reset: the frames in them are logged one by one
     * (op[], psn[]) as if they had come alone; bit n of drop_bundle:
     * lose bundle n whole.
     */
    unsigned bundles[2];
    unsigned bundled[2];        /* frames in them */
    uint64_t drop_bundle[2];
    unsigned hello_big[2];      /* HELLOs longer than HELLO_SMALL */
    /*
     * raw[i]: frames from adapter @i are only counted here (since the
     * reset), not checked, logged or relayed: answers to spoofed sources.
     */
    bool raw[2];
    uint64_t raw_bytes[2];
    unsigned raw_frames[2];
    unsigned raw_op[2][256];    /* frames by BTH opcode */
    unsigned raw_aeth[2][256];  /* frames with an AETH, by syndrome */
    size_t raw_hello_max[2];    /* the longest HELLO */
    uint8_t raw_hello[2][HELLO_SMALL];  /* the last small HELLO */
    GQueue held[2];             /* of GByteArray */
    uint8_t op[2][PAIR_OPS];    /* BTH opcodes since pair_log_reset() */
    uint8_t syn[2][PAIR_OPS];   /* their AETH syndromes, if any */
    uint32_t psn[2][PAIR_OPS];
    uint16_t sport[2][PAIR_OPS];    /* their UDP source ports */
    unsigned seq[2][PAIR_OPS];      /* their order on the wire, both ways */
    unsigned nseq;
    unsigned nops[2];
    uint8_t *frame;             /* RS_LAN_MAX_FRAME bytes */
    uint8_t last[2][PAIR_FRAME_MAX];
    size_t last_len[2];
    Peer p[2];
    QRdmaSession b;
    PairSockets *sock;
    /* After pair_migrate(): the destination QEMU, where p[].d are now. */
    QTestState *to;
    QPCIBus *to_bus;
    QRdmaSession to_dev[2];
    unsigned announced[2];      /* gratuitous ARPs from A / B, not logged */
} Pair;

/*
 * A's and B's netdevs on the QEMU ends of the wires, and B itself; both
 * without bundles unless a_props / b_props turn them on.
 */
void pair_cmd_line(GString *cmd_line, const PairSockets *s);

void *pair_before(GString *cmd_line, void *arg);

/* The same with more properties for A (NULL: none) and for B. */
void *pair_before_props(GString *cmd_line, const char *a_props,
                        const char *b_props);

/*
 * The same, B's wire on a hub with B and a virtio-net NIC (slot
 * PAIR_VNET_SLOT): frames the guest puts in its TX ring reach B.
 */
void *pair_before_hub(GString *cmd_line, const char *a_props,
                      const char *b_props);

/*
 * The pair with a small send buffer on B's wire: a few frames fill it,
 * and B's responder then owes the rest of a READ's responses until the
 * test reads them.
 */
void *pair_small_sndbuf_before(GString *cmd_line, void *arg);

/*
 * Build in @f a RoCEv2 frame to @dmac/@dip from IPv4 address @sip (MAC
 * 02:00:<sip>): BTH @op to QP @dqpn at @psn, then @extlen bytes of @ext,
 * a correct ICRC.  Returns its length.
 */
size_t roce_frame(uint8_t *f, const uint8_t *dmac, uint32_t sip,
                  uint32_t dip, uint8_t op, uint32_t dqpn, uint32_t psn,
                  const void *ext, size_t extlen);

/*
 * Build in @out a BUNDLE of the @n frames @in (@len bytes each) with
 * the outer Ethernet, IPv4 and UDP headers of the first.  Its length.
 */
size_t roce_bundle(uint8_t *out, const uint8_t *const *in,
                   const size_t *len, unsigned n);

/* The ICRC of the frame whose ICRC is at @icrc_off (IBTA A17.8). */
uint32_t roce_icrc(const uint8_t *f, size_t icrc_off);

/* The ICRC Linux soft-RoCE puts on a FLUSH: the headers covered twice. */
uint32_t roce_icrc_rxe_flush(const uint8_t *f, size_t icrc_off);

/* After a change to a frame of @len bytes: lengths, checksum, ICRC. */
void roce_reseal(uint8_t *f, size_t len);

/* Log the frame of @len bytes in pr->frame from adapter @i; move it on. */
void pair_handle(Pair *pr, int i, size_t len);

/* Move (or keep) every frame the adapters have put on the wire. */
void pair_pump(void *opaque);

void pair_log_reset(Pair *pr);

/* The frames from adapter @from since pair_log_reset(): these opcodes. */
void pair_expect_ops(Pair *pr, int from, const uint8_t *ops,
                     unsigned n);

#define PAIR_EXPECT_OPS(pr, from, ...)                                    \
    do {                                                                  \
        static const uint8_t ops_[] = { __VA_ARGS__ };                    \
        pair_expect_ops(pr, from, ops_, ARRAY_SIZE(ops_));                \
    } while (0)
#define PAIR_EXPECT_NONE(pr, from) pair_expect_ops(pr, from, NULL, 0)

/* Until adapter @from has put @n frames on the wire since the reset. */
void pair_wait_frames(Pair *pr, int from, unsigned n);

/* The next frame adapter @from sent while held; g_byte_array_unref it. */
GByteArray *pair_take(Pair *pr, int from);

/* raw[@from]: until it has sent @n frames of opcode @op (never more). */
void pair_wait_raw(Pair *pr, int from, uint8_t op, unsigned n);

/* Put a frame on adapter @to's wire as if its peer had sent it. */
void pair_inject(Pair *pr, int to, const uint8_t *f, size_t len);

void pair_poll(Pair *pr, int i, struct rs_cqe *cqe);

/* No completion is waiting on adapter @i's CQ. */
void pair_cq_empty(Pair *pr, int i);

void assert_cqe(const struct rs_cqe *cqe, uint64_t wr_id,
                uint8_t status, uint8_t opcode, uint32_t qpn);

/* Write a pattern to @len bytes at @off of peer @p's buffer. */
void peer_fill(Peer *p, uint32_t off, uint32_t len, uint8_t seed);

/* The whole buffer must be as expected, byte by byte. */
void peer_check(Peer *p);

/* Accept whatever the adapter left in a range IBTA leaves undefined. */
void peer_dont_care(Peer *p, uint32_t off, uint32_t len);

struct rs_sge peer_sge(Peer *p, uint32_t off, uint32_t len);

void pair_setup(Pair *pr, void *obj, void *data,
                QGuestAllocator *alloc);

void pair_teardown(Pair *pr);

/* Create QP @q of @type on adapter @i in @pd, 4 SGEs each way. */
void pair_qp(Pair *pr, int i, LoopQp *q, uint8_t type, uint32_t pd);

/* A UD QP on each adapter (q[0] on A, q[1] on B) in RTS, in its PD. */
void pair_ud(Pair *pr, LoopQp q[2]);

/*
 * The attributes that take side @i's QP of q[] to RTS, connected to the
 * other side's through GID @gid: the tests' defaults, to adjust.
 */
void pair_attr(const LoopQp q[2], int i, uint32_t gid, struct rs_qp_attr *a);

/*
 * A connected RC pair: q[0] on A, q[1] on B, through GID @gid of both,
 * in the adapters' PDs; B's QP allows @resp_access.
 */
void pair_rc_mtu(Pair *pr, LoopQp q[2], uint32_t gid,
                 uint16_t resp_access, uint8_t path_mtu);

/* The same, side i's address vector with @flow_label[i] (if not NULL). */
void pair_rc_av(Pair *pr, LoopQp q[2], uint32_t gid, uint16_t resp_access,
                uint8_t path_mtu, const uint32_t flow_label[2]);

void pair_rc(Pair *pr, LoopQp q[2], uint32_t gid,
             uint16_t resp_access);

/* Post a signaled work request on adapter @i's QP @q. */
void pair_post(Pair *pr, int i, LoopQp *q, uint8_t opcode,
               uint64_t wr_id, const struct rs_sge *sge, uint8_t n,
               uint64_t raddr, uint32_t rkey, uint32_t imm);

/* Copy what a transfer moves into the expected image of the target. */
void img_move(Peer *dst, uint32_t doff, Peer *src, uint32_t soff,
              uint32_t len);

/* Frames the device put on the wire: the RoCE ones, by BTH opcode. */
ssize_t roce_recv(LanEnv *e, uint8_t *buf, uint8_t opcode);

void wire_peer(Loop *l);

/* Frame @f, kept from QP a, to QP b as its peer 10.0.0.3 sends it. */
void wire_feed(LanEnv *e, const uint8_t *f, size_t len);

/* Send the frames held from adapter @from on, and stop holding them. */
void pair_release(Pair *pr, int from);

/* Forget the frames held from adapter @from. */
void pair_forget(Pair *pr, int from);

/* The next completion on adapter @i must be this one. */
void pair_expect_cqe(Pair *pr, int i, uint64_t wr_id, uint8_t status,
                     uint8_t opcode, uint32_t qpn, uint32_t byte_len);

/*
 * Live migration of the QEMU that runs both adapters to a new one with
 * the same devices on new wires (migrate-pair.c, where it lives, tells
 * the story); from then on the switch holds both directions.
 */
void pair_migrate(Pair *pr);

/*
 * The same, but the events the destination posts (MIGRATION_NOTICE and
 * whatever else) are left in the event queues for the caller.
 */
void pair_migrate_raw(Pair *pr);

#endif
