/*
 * rdma-session RoCEv2 packet fuzzer (rdma_session_fuzz.c tells what it
 * does): what its files share
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RDMA_SESSION_FUZZ_H
#define RDMA_SESSION_FUZZ_H

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
#define RSF_PEER_DEVFN      QPCI_DEVFN(5, 0)   /* e1000e: a peer BAR */
#define RSF_PAGE            4096u
#define RSF_MAX_FRAME       9216u
/* The VLAN of GID 3, 10.0.0.1 as GID 0 (rsf_op_roce: BTH flags bit 0). */
#define RSF_VLAN            100
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

extern const uint8_t rsf_mac[6];
extern const uint8_t rsf_remote_mac[6];
extern const uint8_t rsf_ip_self[4];
extern const uint8_t rsf_ip_remote[4];
extern const uint8_t rsf_ip6_self[16];
extern const uint8_t rsf_ip6_remote[16];

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
    RSF_MR_PEER,        /* 4 pages of a peer's MMIO BAR (e1000e's) */
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
    uint64_t dbrec;                 /* doorbell records: a page, or 0 */
} RSFState;

extern RSFState rsf;

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
    uint64_t tx_bytes;          /* frames sent, HELLOs, CNPs not counted */
    uint64_t tx_hellos, tx_cnps, rx_bytes, rx_roce;
    RSFHello hello[RSF_NHELLO];
    uint32_t nhello;
    uint32_t answered[RSF_NPEER];   /* answered an unpadded HELLO */
    uint32_t nanswered;
    /* For RS_FUZZ_STATS */
    uint64_t tx_frames, tx_bundles, rx_frames, max_f_pkts, max_f_inner;
} RSFWire;

extern RSFWire rsf_wire;

/* Source addresses of spoofed frames (rsf_op_spoof), IPv4. */
typedef struct RSFSpoof {
    bool on;
    uint8_t ip[4], mac[6];
} RSFSpoof;

extern RSFSpoof rsf_spoof;


/* A BUNDLE being filled with the frames of the next operations. */
typedef struct RSFBundle {
    bool on;
    uint32_t want, n, len, cap, psn_step;
    uint8_t flags;
    int8_t count_adj;
    uint8_t buf[RSF_MAX_BIG];   /* inner frames, each behind its length */
} RSFBundle;

extern RSFBundle rsf_bun;
/* Large frames being built; the bundle being sent. */
extern uint8_t rsf_big[RSF_MAX_BIG], rsf_big_l4[RSF_MAX_BIG];
extern uint8_t rsf_bun_out[RSF_MAX_BIG];

/* An operation of the input: its operands @d, @len bytes. */
typedef void RSFOp(RSFState *f, QTestState *s, const uint8_t *d, size_t len);

/* rdma_session_fuzz_wire.c */
bool rsf_is_roce4(const uint8_t *f, size_t len);
bool rsf_is_roce6(const uint8_t *f, size_t len);
void rsf_wire_init(void);
void rsf_inject(const uint8_t *frame, size_t len);
void rsf_wire_check_end(void);
void rsf_idle(QTestState *s);
void rsf_settle(QTestState *s);
void rsf_send_frame(const uint8_t *frame, size_t len);

/* rdma_session_fuzz_setup.c */
uint16_t rsf_access(uint16_t access);
uint8_t rsf_odp_resolve(RSFState *f, RSFMr *m, uint32_t first,
                        uint32_t n, uint32_t shift, uint64_t flags,
                        uint32_t seq, uint32_t rflags);
void rsf_post_recv(RSFState *f, RSFQp *q, const struct rs_sge *sge);
void rsf_post_bind(RSFState *f, RSFQp *q, uint32_t sel,
                   const RSFMr *mr, uint32_t off, uint32_t len,
                   uint8_t flags);
void rsf_post_op(RSFState *f, RSFQp *q, uint8_t op, uint32_t len,
                 const RSFMr *rmr, uint32_t roff, uint8_t flags);
void rsf_bring_up(RSFState *f, QTestState *s);
void rsf_tear_down(RSFState *f, QTestState *s);

/* rdma_session_fuzz_frames.c */
uint32_t rsf_icrc(const uint8_t *f, size_t icrc_off, bool v6);
uint16_t rsf_ip_csum(const uint8_t *h);
size_t rsf_build_at(uint8_t *f, bool v6, const uint8_t *smac,
                    const uint8_t *dmac, const uint8_t *sip,
                    const uint8_t *dip, uint16_t sport,
                    const uint8_t *l4, size_t l4len, bool bad_icrc);
size_t rsf_build(uint8_t *f, const RSFQp *q, uint16_t sport,
                 const uint8_t *l4, size_t l4len, bool bad_icrc);
void rsf_op_roce(RSFState *f, QTestState *s, const uint8_t *d,
                 size_t len);
void rsf_op_raw(RSFState *f, QTestState *s, const uint8_t *d,
                size_t len);
void rsf_op_bth(RSFState *f, QTestState *s, const uint8_t *d,
                size_t len);
void rsf_op_clock(RSFState *f, QTestState *s, const uint8_t *d,
                  size_t len);
void rsf_op_post_send(RSFState *f, QTestState *s, const uint8_t *d,
                      size_t len);
void rsf_op_post_recv(RSFState *f, QTestState *s, const uint8_t *d,
                      size_t len);
void rsf_op_cq(RSFState *f, QTestState *s, const uint8_t *d,
               size_t len);
void rsf_op_odp(RSFState *f, QTestState *s, const uint8_t *d,
                size_t len);
void rsf_op_rereg(RSFState *f, QTestState *s, const uint8_t *d,
                  size_t len);
void rsf_op_dbrec(RSFState *f, QTestState *s, const uint8_t *d,
                  size_t len);

/* rdma_session_fuzz_bundle.c */
/* Add a frame to the bundle being filled. */
void rsf_bundle_add(const uint8_t *frame, size_t len);
void rsf_bundle_emit(void);
void rsf_op_bundle(RSFState *f, QTestState *s, const uint8_t *d,
                   size_t len);
void rsf_op_spoof(RSFState *f, QTestState *s, const uint8_t *d,
                  size_t len);
void rsf_op_hello(RSFState *f, QTestState *s, const uint8_t *d,
                  size_t len);
void rsf_op_reply(RSFState *f, QTestState *s, const uint8_t *d,
                  size_t len);

/* rdma_session_fuzz.c */
/* The operation of selector byte @sel. */
RSFOp *rsf_op_get(uint8_t sel);

#endif
