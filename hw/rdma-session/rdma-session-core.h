/*
 * rdma-session adapter: device core shared by all roles.
 *
 * The core never includes PCI headers: the PCI/QOM glue
 * (rdma-session-pci.c) hands it an address space for DMA and a callback
 * for interrupts, as e1000e's core/glue split does.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_SESSION_CORE_H
#define HW_RDMA_SESSION_CORE_H

#include "exec/memory.h"
#include "hw/registerfields.h"
#include "net/net.h"
#include "hw/rdma-session/rdma-session-abi.h"

/* User-sizable capabilities: kept apart from runtime state (nvme style). */
typedef struct RSParams {
    uint32_t max_qps;
    uint32_t max_cqs;
    uint32_t max_mrs;
    uint32_t max_pds;
    uint32_t max_ahs;
    uint32_t max_sessions;
    uint32_t max_groups;
    uint32_t max_gids;
    uint32_t max_msg_size;
    uint32_t mtu;
    uint32_t num_comp_vectors;
    uint32_t db_pages;
    uint32_t max_mr_pages;
    uint32_t max_srqs;
    uint32_t max_xrcds;
    uint32_t max_mcast_grps;
    uint32_t max_mcast_qp_attach;
    uint32_t window;            /* x-window: RC packets in flight per QP */
    uint32_t fabric_window;     /* x-fabric-window: same, to a member */
    uint32_t drop_tx;           /* x-drop-tx: test only, drop every Nth */
    uint32_t ack_backoff;       /* x-ack-backoff: timeout doublings */
    bool migration_hold;        /* x-migration-hold: RNR NAKs while out */
    bool rxe_flush_icrc;        /* x-rxe-flush-icrc: FLUSH as rxe's ICRC */
    bool odp;                   /* odp: RS_CAP_ODP */
    bool odp_pause;             /* odp-pause: PAUSE/RESUME to requesters */
    uint32_t odp_pages;         /* odp-pages: translation table entries */
    uint32_t odp_fault_timeout; /* odp-fault-timeout: ms until it fails */
    uint32_t dc_contexts;       /* dc-contexts: DCIs all DCTs serve */
    uint32_t dc_idle_us;        /* dc-idle: a DCI disconnects after it */
    uint32_t path_flowlet;      /* path-flowlet: bytes before a switch */
    uint32_t path_holddown_ms;  /* path-holddown: a failed session rests */
    bool bundle;                /* bundle: bundles to adapter peers */
    char *local_fabric;         /* local-fabric: its directory, or NULL */
    char *fabric_pcap;          /* fabric-pcap: its frames' capture file */
    bool peer_dma;              /* peer-dma: data in peer BARs */
    uint32_t bundle_max;        /* x-bundle-max: largest bundle frame */
    bool ecn;                   /* ecn: send ECT(0), answer CE with CNPs */
    bool db_record;             /* db-record: RS_CAP_DB_RECORD */
    uint32_t cnp_interval_us;   /* cnp-interval: per QP between CNPs */
    /* DCQCN (rdma-session-dcqcn.c): rates in Mbps, alpha and g /1024 */
    bool dcqcn;                 /* dcqcn: CNPs lower the QP's rate */
    uint32_t dcqcn_line_rate;
    uint32_t dcqcn_min_rate;
    uint32_t dcqcn_ai_rate;
    uint32_t dcqcn_hai_rate;
    uint32_t dcqcn_g;
    uint32_t dcqcn_initial_alpha;
    uint32_t dcqcn_alpha_period_us;
    uint32_t dcqcn_time_reset_us;
    uint32_t dcqcn_byte_reset;
    uint32_t dcqcn_threshold;   /* F: fast recovery stages */
} RSParams;

/*
 * A QP's DCQCN reaction point (rdma-session-dcqcn.c), active while the
 * QP is limited: current and target rate (Mbps), alpha (1/1024), the
 * increase stages by time and by bytes, bytes since the last byte stage,
 * the pacing tokens (bytes, refilled up to refill_ns) and the next alpha
 * and increase periods (virtual ns).
 */
#define RS_DCQCN_STAGE_MAX  1000

typedef struct RSDcqcn {
    bool active;
    uint32_t rc;
    uint32_t rt;
    uint32_t alpha;
    uint32_t t_stage;
    uint32_t b_stage;
    uint32_t bytes;
    int64_t tokens;
    int64_t refill_ns;
    int64_t alpha_next;
    int64_t incr_next;
} RSDcqcn;

typedef struct RSPd {
    bool valid;
    uint8_t gen;
    uint8_t flags;              /* RS_PD_F_* */
    uint8_t netid;              /* its identity: its keys' table */
    uint32_t refs;
} RSPd;

typedef struct RSCq {
    bool valid;
    uint8_t gen;
    uint8_t log_size;
    uint8_t arm;                /* RS_DB_CQ_ARM_* >> 16 */
    uint16_t vector;
    uint32_t uar;
    uint64_t ring;
    uint32_t pi;                /* device producer (free running) */
    uint32_t ci;                /* last consumer index from the driver */
    uint32_t refs;
    bool ev_pending;            /* fired, not yet read from RS_COMP_CAUSE */
} RSCq;

/*
 * An XRC domain: what XRC SRQs and XRC target QPs belong to.  refs: the
 * SRQs and target QPs in it.
 */
typedef struct RSXrcd {
    bool valid;
    uint8_t gen;
    uint32_t refs;
} RSXrcd;

/*
 * Shared receive queue: a ring of receive WQEs taken in order.  An XRC
 * SRQ (xrcd: its domain's index) posts its receive completions to its
 * own CQ (cq), for whichever XRC target QP of its domain took the WQE.
 */
typedef struct RSSrq {
    bool valid;
    uint8_t gen;
    uint8_t log_size;
    uint8_t max_sge;
    uint32_t pd;
    uint32_t uar;
    uint64_t ring;
    uint32_t pi;                /* producer: last doorbell value */
    uint32_t ci;                /* WQEs taken by QPs (free running) */
    uint32_t limit;             /* armed when non-zero */
    uint32_t refs;              /* QPs using it */
    uint32_t xrcd;              /* 0: a basic SRQ */
    uint32_t cq;                /* XRC: its receive CQ */
} RSSrq;

/*
 * Responder resource for an executed atomic: a duplicate request with the
 * same PSN is answered with the saved original value, not executed again.
 */
#define RS_ATOMIC_RES           RS_MAX_RD_ATOMIC

typedef struct RSAtomicRes {
    bool valid;
    bool owed;                  /* its ATOMIC ACKNOWLEDGE is still to go */
    uint32_t psn;
    uint64_t orig;
} RSAtomicRes;

typedef struct RSAv {
    uint8_t dgid[16];
    uint8_t dmac[6];
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint32_t flow_label;
    uint32_t gid_index;
} RSAv;

/*
 * A responder READ resource (IBTA o9-20: max_dest_rd_atomic of them): what
 * a duplicate READ request is answered from again.  Its responses are
 * produced a budget at a time (rdma-session-resp.c): packets [first, stop)
 * of it form the response sequence in progress, next is the next one.
 */
typedef struct RSRdRes {
    bool valid;
    uint32_t psn;               /* first response PSN */
    uint32_t npkts;
    uint64_t va;
    uint32_t rkey;
    uint32_t len;
    uint32_t gid;               /* the GID the request arrived on */
    uint32_t srq;               /* XRC target: the SRQ it named (its PD) */
    uint16_t sport;             /* runtime: the request's UDP source port */
    uint32_t first;
    uint32_t next;
    uint32_t stop;
    int64_t replay_ns;          /* runtime: the last replay, virtual ns */
} RSRdRes;

/*
 * What the requester decided for a send WQE when it started it: the
 * completer, the flush and retransmissions go by this, never by a second
 * read of the WQE, which the guest may have rewritten meanwhile.
 */
#define RS_SQ_INFLIGHT      64      /* started and not completed, per QP */
#define RS_RD_SGE_POOL      64      /* local SGEs of READs and atomics */

typedef struct RSSentWqe {
    uint64_t wr_id;
    uint32_t len;               /* <= max-msg-size */
    uint32_t npkts;             /* PSNs it spans, >= 1 */
    uint8_t opcode;             /* RS_WR_* */
    uint8_t flags;              /* RS_WQE_F_* */
    uint8_t nsge;               /* READ, atomic: its SGEs in rd_sge[] */
    uint8_t sge_at;             /* from rd_sge[sge_at] on, wrapping */
} RSSentWqe;

/*
 * On-demand paging (rdma-session-odp.c): a page fault one side of a QP
 * waits for.  mr is an MR index (0: no fault); va the faulting page.
 */
enum {
    RS_ODP_WAIT_REQ = 1,        /* requester: local SGEs of a send WQE */
    RS_ODP_WAIT_LANDING = 2,    /* requester: a READ/atomic response */
    RS_ODP_WAIT_RESP = 3,       /* responder: the request at psn */
    RS_ODP_WAIT_READ = 4,       /* responder: READ responses from psn */
};

typedef struct RSOdpWait {
    uint32_t mr;
    uint32_t npages;            /* the access's pages from va, <= 512 */
    uint64_t va;
    uint32_t psn;
    uint8_t kind;               /* RS_ODP_WAIT_* */
    bool write;
    bool failed;                /* timed out or resolved with F_FAIL */
    /* Runtime only (restarted after migration). */
    int64_t deadline;           /* QEMU_CLOCK_VIRTUAL ns */
    int64_t repost;             /* next time the event is raised again */
    int64_t start;              /* QEMU_CLOCK_REALTIME ns, for the trace */
} RSOdpWait;

/* The translation of one page of an ODP MR (rdma-session-odp.c). */
typedef struct RSOdpPage {
    uint32_t mr;                /* MR index; 0: free entry */
    uint32_t rsvd;
    uint64_t vpn;               /* IOVA >> 12 */
    uint64_t pa;                /* page | RS_ODP_PAGE_READ/WRITE */
} RSOdpPage;

/*
 * A QP is split as Linux rxe splits one (struct rxe_qp: req, comp, resp):
 * the fields all of the device reads (type, state, the PD, CQ and SRQ
 * indices, the queues' geometry, the IBTA attributes) at the top of RSQp,
 * then a part per transport engine and per optional feature, each owned
 * by the file named in its comment: the one that does its work and most
 * of its changes.  rdma-session-qp.c (create, modify, reset, flush,
 * migration) sets every part; the other changes from outside the owner
 * are listed with each part.
 *
 * Requester (rdma-session-req.c): sends the SQ's WQEs, records what it
 * decided for each in sent[], and runs the send window, the RNR wait and
 * the retries.  Also changed by the completer (progress clears the retry
 * counts, an answered READ ends in rd_out), the link's restart
 * (rdma-session-engine.c) and DC's reconnection (rdma-session-dc.c).
 * sq_ci and the PSNs are free running.
 */
typedef struct RSQpReq {
    uint32_t sq_ci;             /* WQE being (or next) sent */
    uint32_t pkt;               /* packets of it already sent */
    uint32_t sq_rec;            /* WQEs before it are in sent[] */
    uint32_t max_psn;           /* runtime: past the highest PSN sent */
    RSSentWqe sent[RS_SQ_INFLIGHT];
    uint32_t rd_sge_head;       /* rd_sge[] entries taken (free running) */
    uint32_t rd_sge_tail;       /* and given back */
    struct rs_sge rd_sge[RS_RD_SGE_POOL];
    /*
     * Congestion window: packets it lets be unacknowledged, at most
     * x-window; 0: not started yet.
     */
    uint32_t cwnd;
    uint32_t ssthresh;          /* slow start below, +1 per window above */
    uint32_t cwnd_acked;        /* acknowledged towards the next +1 */
    uint32_t recover_psn;       /* losses before it: the same episode */
    uint8_t rd_out;             /* READ requests awaiting their responses */
    uint8_t rnr_retries;        /* RNR NAKs since the last progress */
    bool rnr_wait;              /* paused by an RNR NAK */
    /* Runtime only (re-armed after migration). */
    uint8_t retries;            /* timeouts since the last progress */
    bool probed;                /* tail loss probe sent */
    bool fabric;                /* sending over the local fabric */
    int64_t last_progress;      /* QEMU_CLOCK_VIRTUAL ns */
    int64_t rnr_until;          /* end of the RNR wait, virtual ns */
} RSQpReq;

/*
 * Completer (rdma-session-comp.c): completes the WQEs the requester sent
 * as their ACKs and responses arrive.  The requester completes what
 * needs no acknowledgement (UD, UC, local operations) itself.
 */
typedef struct RSQpComp {
    uint32_t sq_comp;           /* oldest WQE not completed */
    uint32_t psn;               /* first PSN of the WQE at sq_comp */
    uint32_t una_psn;           /* first PSN not acknowledged yet */
    /* Runtime only. */
    bool gap_retried;           /* one retry per READ gap */
} RSQpComp;

/*
 * Responder (rdma-session-resp.c): takes the requests, in order, into
 * receive WQEs and memory, answers them and keeps what a duplicate
 * request is answered from again.  The RNR timer (rdma-session-engine.c)
 * sets seq_nak_sent; DC's responder contexts start with op.
 */
typedef struct RSQpResp {
    uint32_t rq_ci;             /* next receive WQE */
    uint32_t msn;               /* messages completed */
    uint8_t op;                 /* RS_RESP_* message in progress */
    uint32_t off;               /* bytes of it received so far */
    uint64_t va;                /* WRITE in progress: next address */
    uint32_t rkey;
    uint32_t left;              /* WRITE: bytes the RETH still allows */
    /* Atomic responder resources, used round robin. */
    RSAtomicRes atomic_res[RS_ATOMIC_RES];
    uint8_t atomic_next;
    /*
     * The receive WQE a message in progress took from the SRQ (RSQp.srq)
     * is kept here: the SRQ slot is the driver's again.
     */
    bool srq_claimed;
    uint8_t srq_nsge;
    bool ack_pending;           /* coalesced ACK to send (at ack_psn) */
    uint64_t srq_wr_id;
    struct rs_sge srq_sge[RS_MAX_SGE];
    uint32_t ack_psn;
    uint32_t rd_head;           /* next rd_res slot (free running) */
    RSRdRes rd_res[RS_MAX_RD_ATOMIC];
    /* Runtime only. */
    bool seq_nak_sent;          /* one NAK per PSN gap */
} RSQpResp;

/*
 * On-demand paging (rdma-session-odp.c): the faults the requester and the
 * responder wait for (rs_odp_wait() records one, rdma-session-odp.c
 * resolves or fails it), and a requester paused by its peer's page
 * fault (the RNR wait at pause_psn; RNR NAKs for that PSN are not
 * counted): the requester sets paused on a PAUSE, the completer's
 * progress ends pause_since.
 */
typedef struct RSQpOdp {
    RSOdpWait req;
    RSOdpWait resp;
    bool paused;
    uint32_t pause_psn;
    /*
     * Runtime only: the first PAUSE for pause_psn since the last progress
     * (virtual ns, 0: none); past RS_ODP_PAUSE_MAX_NS each PAUSE for it
     * spends a retry_cnt (rs_req_pause()).
     */
    int64_t pause_since;
} RSQpOdp;

/*
 * Dynamically connected transport (rdma-session-dc.c).  A DCI: its
 * connection's state (RS_DC_*), target (AH handle, DCT number, key),
 * connection counter and the context QPN (RSQp.dest_qpn).  A DCT: its
 * key.  A responder context (RS_QPT_DC_CTX): its DCT's index, the DCI's
 * connection number and key (RSQp.dest_qpn: the DCI's QPN).
 */
typedef struct RSQpDc {
    uint8_t state;
    uint32_t ah;
    uint32_t dct;
    uint64_t key;
    uint32_t conn;
    /*
     * Runtime only: last activity (virtual ns); a DCT: the next key
     * violation event not before viol.
     */
    int64_t last;
    int64_t viol;
} RSQpDc;

/*
 * Multipath (rdma-session-path.c; rdma-session-net.c records resp_sport
 * as a request arrives).  req_slot: the slot in the group of
 * the session the QP's requests use now, for every packet (resent ones
 * too); it changes only where nothing is outstanding, or on a failover.
 * bytes: sent on req_slot's session since the QP moved there (the
 * flowlet); migrations: failovers of this QP; resp_sport: the UDP source
 * port of the last request the responder took (its responses mirror it).
 */
typedef struct RSQpPath {
    uint8_t req_slot;
    uint32_t bytes;
    uint32_t migrations;
    uint16_t resp_sport;
} RSQpPath;

typedef struct RSQp {
    bool valid;
    bool has_av;
    uint8_t gen;
    uint8_t type;
    uint8_t state;
    uint8_t sq_log;
    uint8_t rq_log;
    uint8_t max_send_sge;
    uint8_t max_recv_sge;
    uint8_t flags;
    uint16_t max_inline;
    uint32_t pd;                /* indices, not handles */
    uint32_t send_cq;
    uint32_t recv_cq;
    uint32_t uar;
    uint32_t group;             /* 0: default session */
    uint64_t sq_addr;
    uint64_t rq_addr;
    uint32_t sq_pi;
    uint32_t rq_pi;
    /*
     * IBTA attributes.  sq_psn is the requester's next PSN and rq_psn the
     * responder's expected PSN once the QP runs.
     */
    uint32_t qkey;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint32_t dest_qpn;
    uint16_t access;
    uint8_t path_mtu;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t min_rnr_timer;
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t en_sqd_async;
    RSAv av;
    /*
     * SRQ (index, 0: none).  An XRC target QP (xrcd: its domain,
     * rdma-session-xrc.c) has no PD, CQ or SRQ of its own: srq, pd and
     * recv_cq are those of the XRC SRQ the last request named, and hold
     * no references.
     */
    uint32_t srq;
    uint32_t xrcd;
    bool comm_est;              /* a packet arrived in RTR: event sent */
    bool sqd_notify;            /* SQD asked for SQ Drained: not sent yet */
    RSQpReq req;
    RSQpComp comp;
    RSQpResp resp;
    RSQpOdp odp;
    RSQpDc dc;
    RSQpPath path;
} RSQp;

/*
 * The migration stream names the fields of RSQp's parts as it did when
 * RSQp was one flat struct ("sq_ci", not "req.sq_ci"): QEMU's VMSTATE_*
 * macros name a field by the expression that reaches it, so the parts'
 * fields are described by these, which take the name apart (_name) from
 * the field (_f, e.g. req.sq_ci), with QEMU's own type checks.
 * sizeof(RSQp) is in the stream's description too (the qps array's
 * element size): a part's padding counts.
 */
#define RS_VMSTATE_QP_SINGLE(_name, _f, _v, _info, _type) {            \
    .name         = (_name),                                           \
    .version_id   = (_v),                                              \
    .size         = sizeof(_type),                                     \
    .info         = &(_info),                                          \
    .flags        = VMS_SINGLE,                                        \
    .offset       = vmstate_offset_value(RSQp, _f, _type),             \
}

#define RS_VMSTATE_QP_BOOL_V(_name, _f, _v)                             \
    RS_VMSTATE_QP_SINGLE(_name, _f, _v, vmstate_info_bool, bool)
#define RS_VMSTATE_QP_UINT8_V(_name, _f, _v)                            \
    RS_VMSTATE_QP_SINGLE(_name, _f, _v, vmstate_info_uint8, uint8_t)
#define RS_VMSTATE_QP_UINT16_V(_name, _f, _v)                           \
    RS_VMSTATE_QP_SINGLE(_name, _f, _v, vmstate_info_uint16, uint16_t)
#define RS_VMSTATE_QP_UINT32_V(_name, _f, _v)                           \
    RS_VMSTATE_QP_SINGLE(_name, _f, _v, vmstate_info_uint32, uint32_t)
#define RS_VMSTATE_QP_UINT64_V(_name, _f, _v)                           \
    RS_VMSTATE_QP_SINGLE(_name, _f, _v, vmstate_info_uint64, uint64_t)

#define RS_VMSTATE_QP_STRUCT_V(_name, _f, _v, _vmsd, _type) {           \
    .name         = (_name),                                           \
    .version_id   = (_v),                                              \
    .vmsd         = &(_vmsd),                                          \
    .size         = sizeof(_type),                                     \
    .flags        = VMS_STRUCT,                                        \
    .offset       = vmstate_offset_value(RSQp, _f, _type),             \
}

#define RS_VMSTATE_QP_STRUCT_ARRAY_V(_name, _f, _num, _v, _vmsd, _type) { \
    .name         = (_name),                                           \
    .num          = (_num),                                            \
    .version_id   = (_v),                                              \
    .vmsd         = &(_vmsd),                                          \
    .size         = sizeof(_type),                                     \
    .flags        = VMS_STRUCT | VMS_ARRAY,                            \
    .offset       = vmstate_offset_array(RSQp, _f, _type, _num),       \
}

/*
 * A DC responder context: a QP table slot of this device-internal type
 * (never a guest's handle) that RC's responder serves for one DCI.
 */
#define RS_QPT_DC_CTX   8
enum { RS_DC_IDLE = 0, RS_DC_CONNECTING = 1, RS_DC_CONNECTED = 2 };

/* RS_RESP_DROP: UC, the rest of a message after a PSN gap or an error. */
/* Marks in RSQp.resp.srq_nsge of an SRQ WQE that cannot be used. */
#define RS_SRQ_WQE_BAD_DMA  0xfe
#define RS_SRQ_WQE_BAD_SGE  0xff

enum { RS_RESP_NONE = 0, RS_RESP_SEND = 1, RS_RESP_WRITE = 2,
       RS_RESP_DROP = 3 };

/*
 * A memory region and its translation table.  It lives in the key table
 * of its PD's network identity (netid) at key index kidx (the slot's own
 * index in identity 0, see rdma-session-netid.c); gid_index is the GID
 * REG_MR named, which it holds a reference on.
 */
typedef struct RSMr {
    bool valid;
    /*
     * A fast-registration MR (RS_MR_F_FAST_REG) holds npages page slots
     * and resolves only between a REG_MR work request and its
     * invalidation (fr_bound); iova, length and access are the bound ones.
     */
    bool fast;
    bool fr_bound;
    uint8_t tag;
    uint8_t page_shift;
    uint8_t flags;
    uint16_t access;
    uint32_t pd;
    uint32_t gid_index;
    uint8_t netid;
    uint32_t kidx;
    /*
     * While the slot holds a key of identity 1.. (its tag that identity's
     * at kidx): the last tag identity 0 gave the slot, which its next
     * identity 0 key continues from (RS_TAG0_UNSET: not loaded yet).
     */
    uint16_t tag0;
    uint64_t iova;
    uint64_t length;
    uint32_t npages;
    uint64_t *pages;            /* guest physical address of each page */
    struct RSCore *core;        /* the page budget, for incoming migration */
    /*
     * A memory window in this key slot (rdma-session-mw.c): mw_type
     * RS_MW_TYPE_*, 0 for an MR.  While bound (mw_mr: the MR's index),
     * iova, length and access are the window's and mw_qp is a type 2B
     * window's QP handle.  mw_binds: an MR's bound windows (not migrated,
     * rebuilt at load).
     */
    uint8_t mw_type;
    uint32_t mw_mr;
    uint32_t mw_qp;
    uint32_t mw_binds;
    /*
     * An ODP MR (RS_MR_F_ODP) has no pages[]: its translations are in
     * RSCore.odp.  odp_seq counts its ODP_INVALIDATE commands.
     */
    uint32_t odp_seq;
    /*
     * An indirect or pattern key (rdma-session-mkey-list.c): mkl_kind
     * RS_WR_REG_INDIRECT / RS_WR_REG_PATTERN, 0 for an MR or a window.
     * Its address space is [0, length) (iova 0); mkl holds mkl_cap
     * entries (counted in mr_pages_used), the first mkl_n in use.  One
     * made with RS_MKEY_F_EMPTY is fast (Free until a work request).
     */
    uint8_t mkl_kind;
    uint16_t mkl_cap;
    uint16_t mkl_n;
    uint32_t mkl_repeat;
    uint64_t mkl_block;         /* pattern: bytes of one repetition */
    struct RSMklEnt *mkl;
} RSMr;

/* A multicast group: its GID and the UD QPs (indices) attached to it. */
#define RS_MCAST_QP_MAX     64      /* max-mcast-qp-attach's limit */

typedef struct RSMcastGrp {
    bool valid;
    uint8_t gid[16];
    uint32_t nqp;
    uint32_t qp[RS_MCAST_QP_MAX];   /* the first nqp are attached */
} RSMcastGrp;

typedef struct RSAh {
    bool valid;
    uint8_t gen;
    uint32_t pd;
    RSAv av;
} RSAh;

/*
 * A UDP session: one path to a peer.  Its path state is the group-wide
 * view of every QP that uses it (rdma-session-path.c): down since down_ns
 * (QEMU_CLOCK_VIRTUAL) after a QP's requests on it went unanswered, up
 * again once it carries ACKs; the counters are for QUERY_SESSION and the
 * host's introspection.
 */
typedef struct RSSession {
    bool valid;
    uint8_t gen;
    uint8_t dmac[6];
    uint8_t dst_ip[16];
    uint16_t src_port;
    uint16_t dst_port;
    uint32_t gid_index;
    uint32_t refs;
    bool down;
    int64_t down_ns;
    int64_t last_ack_ns;        /* 0: none yet */
    uint64_t tx_packets;
    uint64_t failovers;
    uint64_t recoveries;
    uint64_t migrated;
} RSSession;

typedef struct RSSessionGroup {
    bool valid;
    uint8_t gen;
    uint8_t nsessions;
    uint8_t policy;
    uint8_t next;               /* UD: the next datagram's session */
    uint32_t session[RS_MAX_GROUP_SESSIONS];
    uint32_t refs;
} RSSessionGroup;

typedef struct RSGid {
    bool valid;
    uint8_t type;
    uint8_t gid[16];
    uint32_t vni;               /* its identity's, for the stream */
    uint8_t netid;              /* the identity its address is in */
    uint32_t refs;
    uint32_t vlan;              /* 0, or RS_VLAN_TAGGED | VID (PCP 0) */
} RSGid;

/*
 * A network identity (rdma-session-netid.c): its subnet (GID form,
 * prefix_len bits) and VNI, set by the host.  Identity 0 is always valid
 * and has no subnet.  map: identities 1.. only, key index -> key slot in
 * bits 0-23 (0: free) and the last tag used at that index in bits 24-31.
 */
typedef struct RSNetid {
    bool valid;
    uint8_t prefix_len;
    uint8_t prefix[16];
    uint32_t vni;
    uint32_t *map;
} RSNetid;

/* One LAN ring (TX or RX); indices are free running 16-bit counters. */
typedef struct RSLanQueue {
    bool valid;
    uint8_t log_size;
    uint16_t vector;            /* MSI-X vector */
    uint64_t ring;
    uint32_t pi;                /* producer: last doorbell value */
    uint32_t ci;                /* consumer: descriptors done */
} RSLanQueue;

/*
 * ODP faults of UD and UC receives (nothing waits, rs_odp_drop_fault()):
 * at most RS_ODP_FF_EVENTS events per RS_ODP_REPOST_NS period, and none
 * for one of the last RS_ODP_FF_PAGES pages raised within that period.
 */
#define RS_ODP_FF_PAGES     8
#define RS_ODP_FF_EVENTS    32

typedef struct RSCore RSCore;
typedef void (*RSNotifyFn)(void *owner, unsigned vector);
/*
 * Transmit one frame on the NIC's queue.  False: the backend is busy and
 * holds the frame; the glue calls rs_lan_tx_resume() (a LAN frame) or
 * rs_engine_tx_resume() (a RoCE frame) once that frame is sent, so that
 * each path waits for its own frame only.
 */
typedef bool (*RSSendFn)(void *owner, const struct iovec *iov, int iovcnt,
                         bool roce);
/* Deliver frames the network layer held while the device could not. */
typedef void (*RSFlushFn)(void *owner);
/*
 * Transmit one frame while the VM is stopped (the migration hold), past
 * the network layer's queue; false if it was not sent (no such path to
 * this backend, or the backend is busy: the frame is dropped).
 */
typedef bool (*RSSendStoppedFn)(void *owner, const struct iovec *iov,
                                int iovcnt);
/* Whether mr is a memory BAR of a device other than this one. */
typedef bool (*RSPeerRegionFn)(void *owner, MemoryRegion *mr);

/*
 * The transport engine's services to the layers below it: the core's
 * doorbells, the verbs objects' state changes.  rdma-session-engine.c's
 * realize points RSCore.engine at its table; none of them runs per
 * packet.
 */
typedef struct RSEngineOps {
    /* Run the requester's bottom half: send queues, flushes. */
    void (*kick)(RSCore *c);
    /* An SQ doorbell: QP qpn's new sq_pi. */
    void (*doorbell)(RSCore *c, uint32_t qpn);
    /* Send again from QP qpn's first unacknowledged PSN. */
    void (*rewind)(RSCore *c, uint32_t qpn);
    /* The responder's page fault was resolved (at psn) or failed. */
    void (*odp_resume)(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t psn);
    void (*odp_fail)(RSCore *c, uint32_t qpn, RSQp *qp);
    /* DC (rdma-session-dc.c): a DCT stops, a DCI resets, a context errs. */
    void (*dc_dct_stop)(RSCore *c, uint32_t dct);
    void (*dc_dci_reset)(RSCore *c, uint32_t qpn);
    void (*dc_ctx_error)(RSCore *c, uint32_t qpn);
    /* A QP was created in slot qpn: its congestion state starts afresh. */
    void (*qp_created)(RSCore *c, uint32_t qpn);
} RSEngineOps;

struct RSCore {
    RSParams p;

    /* Set by the glue at realize. */
    void *owner;
    AddressSpace *as;
    RSNotifyFn notify;
    RSSendFn send;
    RSFlushFn flush;
    RSSendStoppedFn send_stopped;   /* NULL: the backend has no such path */
    RSPeerRegionFn peer_region;     /* NULL: no peer-to-peer DMA */
    MemReentrancyGuard *guard;
    MACAddr mac;
    /*
     * Set by the glue once realize succeeded, cleared when it unrealizes:
     * the tables exist (they are freed, not cleared, at unrealize), so
     * QOM properties and QMP may look at them.
     */
    bool realized;

    /*
     * Set by the layers above at realize: the engine's services, the LAN
     * rings' doorbells (rdma-session-lan.c).
     */
    const RSEngineOps *engine;
    void (*lan_db_write)(RSCore *c, uint32_t page, uint32_t reg,
                         uint32_t val);

    QEMUBH *admin_bh;           /* rdma-session-admin.c's, from realize */
    QEMUBH *lan_bh;
    uint8_t *lan_tx_buf;        /* RS_LAN_MAX_FRAME bytes, from realize */
    QEMUBH *req_bh;             /* requester: runs the send queues */
    QEMUTimer *retry_timer;     /* RC local ACK timeout */
    QEMUTimer *rnr_timer;       /* end of RNR waits */
    QEMUTimer *dc_timer;        /* DC: CONNECT retries, idle closes */
    uint32_t *dc_ctx;           /* DC: dc_contexts context QPNs, 0: free */
    QEMUBH *resp_bh;            /* responder: coalesced ACKs */
    uint64_t tx_count;          /* x-drop-tx: RoCE frames sent */
    uint32_t tx_rng;            /* x-drop-tx: pseudo-random state */
    uint8_t *req_buf;           /* frame the requester builds */
    uint8_t *resp_buf;          /* frame the responder builds (ACK, READ) */
    uint8_t *rx_buf;            /* received RoCE frame, linearized */

    /* Registers */
    uint32_t ctrl;
    uint32_t status;
    uint32_t fatal_code;
    uint32_t admq_cfg;
    uint64_t admq_base;
    uint64_t acq_base;
    uint32_t acq_cfg;
    uint64_t aeq_base;
    uint32_t aeq_cfg;
    uint32_t admq_pi;
    uint32_t admq_ci;
    uint32_t aeq_pi;
    uint32_t aeq_ci;
    bool link_up;

    /* Object tables, sized from RSParams at realize. */
    RSPd *pds;
    RSCq *cqs;
    /* Per completion vector, the CQs with ev_pending set (RS_COMP_CAUSE). */
    unsigned long *comp_pending;
    RSQp *qps;
    RSMr *mrs;
    RSAh *ahs;
    RSSession *sessions;
    RSSessionGroup *groups;
    RSGid *gids;
    RSSrq *srqs;
    RSXrcd *xrcds;
    RSMcastGrp *mcast;          /* max_mcast_grps groups */
    RSNetid netid[RS_MAX_NETIDS];
    uint32_t mr_pages_used;
    uint32_t mr_pages_loaded;   /* incoming migration: MRs' pages so far */
    /*
     * On-demand paging: the translations of every ODP MR, odp_pages
     * entries in sets of RS_ODP_WAYS; odp_used of them hold a page.
     */
    RSOdpPage *odp;
    uint32_t odp_used;
    uint32_t odp_victim;        /* round robin replacement in a full set */
    QEMUTimer *odp_timer;       /* fault events again, fault timeouts */
    /* The fault rs_mr_rw() last met (RS_STATUS_ODP_FAULT). */
    RSOdpWait odp_fault;
    /*
     * UD/UC drops (runtime only): the last RS_ODP_FF_PAGES faults raised
     * without a waiting QP, and the events raised in the period that
     * started at odp_ff_period (rs_odp_drop_fault()).
     */
    struct {
        uint32_t mr;
        uint64_t va;
        int64_t time;
    } odp_ff[RS_ODP_FF_PAGES];
    uint32_t odp_ff_next;
    uint32_t odp_ff_events;
    int64_t odp_ff_period;
    /* QUERY_STATS counters, since the function was enabled. */
    struct rs_device_stats stats;
    /*
     * ECN (rdma-session-ecn.c), runtime only: per QP index, the virtual
     * time (ns) from which it may send its next CNP.
     */
    int64_t *cnp_next;
    /* DCQCN (rdma-session-dcqcn.c): per QP index; the periods' timer. */
    RSDcqcn *dcqcn;
    /* Doorbell records (rdma-session-dbrec.c): per QP index. */
    struct RSDbRec *dbrec;
    QEMUTimer *dcqcn_timer;
    bool data_ram_only;         /* rs_data_*: no peer BARs, for now */

    /* LAN path: indexed by enum rs_lan_queue_type. */
    RSLanQueue lanq[2];
    uint32_t lan_rx_mode;       /* RS_LAN_RX_* */
    bool lan_flush_pending;     /* lan_bh: flush held RX frames */
    bool lan_tx_waiting;        /* the backend holds our last frame */
    /*
     * RoCE frames the backend holds (each one's send callback comes once
     * it is sent).  The requester and the READ responder produce nothing
     * while it holds one, and ACKs beyond RS_TX_HELD_MAX are dropped as a
     * full link drops them, so the network layer's queue stays bounded.
     */
    uint32_t roce_tx_held;
    bool migrated_in;           /* loaded by migration, not running yet */
    uint8_t mig_mac[6];         /* the source's MAC, in the stream */
    /*
     * Outgoing migration (the hold, rdma-session-engine.c): from the moment
     * VM stops until the migration ends, RNR NAKs keep the peers' RC
     * requesters waiting.  Runtime only: the source's.
     */
    bool holding;
    QEMUTimer *hold_timer;      /* QEMU_CLOCK_REALTIME */
    /*
     * LAN frames dropped for want of an RX descriptor (QOM property
     * x-lan-rx-missed); counted since realize, not migrated.
     */
    uint64_t lan_rx_missed;
    /*
     * Bundles (rdma-session-bundle.c): the peer table, the bundle being
     * filled, counters.  Runtime only, not migrated: the table starts
     * anew after a migration (the destination's path may differ).
     */
    struct RSBundle *bundle;
    /*
     * The local fabric (rdma-session-fabric.c), NULL without
     * local-fabric.  Runtime only, not migrated.
     */
    struct RSFabric *fabric;
    /*
     * The received frame being processed (rs_resp_divert): READ and
     * atomic response packets it may still produce there.  Runtime only.
     */
    bool rx_frame;
    unsigned rx_resp_budget;
    uint64_t rx_frame_seq;      /* received frames counted, for the above */
};

#define TYPE_RDMA_SESSION "rdma-session"

/* rdma-session-pci.c: the core of an rdma-session device, or NULL. */
RSCore *rs_core_of(Object *obj);

/* rdma-session-core.c */
bool rs_core_realize(RSCore *c, Error **errp);
void rs_core_unrealize(RSCore *c);
void rs_core_reset(RSCore *c);
uint64_t rs_core_reg_read(RSCore *c, hwaddr addr);
void rs_core_reg_write(RSCore *c, hwaddr addr, uint32_t val);
void rs_core_db_write(RSCore *c, hwaddr addr, uint32_t val);
void rs_core_set_link(RSCore *c, bool up);
void rs_core_raise_event(RSCore *c, uint8_t type, uint32_t handle,
                         uint64_t data);
void rs_core_raise_event_info(RSCore *c, uint8_t type, uint8_t flags,
                              uint16_t info, uint32_t handle, uint64_t data);
uint8_t rs_dma_check(RSCore *c, uint64_t addr, uint64_t len, bool write);
uint8_t rs_dma_read(RSCore *c, uint64_t addr, void *buf, uint64_t len);
uint8_t rs_dma_write(RSCore *c, uint64_t addr, const void *buf,
                     uint64_t len);
uint8_t rs_data_check(RSCore *c, uint64_t addr, uint64_t len, bool write);
uint8_t rs_data_read(RSCore *c, uint64_t addr, void *buf, uint64_t len);
uint8_t rs_data_write(RSCore *c, uint64_t addr, const void *buf,
                      uint64_t len);
uint8_t rs_check_ring(RSCore *c, uint64_t addr, unsigned log_size,
                      unsigned max_log, size_t entry_size);
uint8_t rs_write_resp(RSCore *c, const struct rs_cmd_query *q,
                      const void *resp, size_t len);
uint32_t rs_comp_cause_read(RSCore *c, uint32_t vector);

/* The CQs of a completion vector whose notification fired (RSCore). */
static inline unsigned long *rs_comp_map(RSCore *c, uint32_t vector)
{
    return c->comp_pending + vector * BITS_TO_LONGS(c->p.max_cqs);
}

/*
 * A feature of the device (an object kind, a transport part, a table of
 * its own): its part of the device's life cycle and of its migration,
 * defined in its own file.  The core runs each hook of every feature in
 * the order of rs_features[] (rdma-session-core.c, -migration.c); a NULL
 * hook is skipped.  A feature's state is in RSCore; its VMState
 * descriptions are in its file too, named by vmstate_rs_core's fields and
 * subsections (or a parent object's).
 */
typedef struct RSFeature {
    const char *name;
    /* Realize: its properties, before anything is allocated. */
    bool (*check)(RSCore *c, Error **errp);
    /* Realize: its own state, once the object tables exist. */
    bool (*realize)(RSCore *c, Error **errp);
    /* Free what realize made (also after a later feature's failure). */
    void (*unrealize)(RSCore *c);
    /*
     * Reset, first: nothing of it may run for the old objects afterwards
     * (bottom halves, timers, frames in progress).
     */
    void (*quiesce)(RSCore *c);
    /* Reset, once the core cleared the object tables and registers. */
    void (*reset)(RSCore *c);
    /* Outgoing migration: before the state is saved. */
    void (*pre_save)(RSCore *c);
    /*
     * Incoming migration: the state a stream without its fields or
     * subsections means, before the stream is loaded.
     */
    void (*pre_load)(RSCore *c);
    /*
     * Incoming migration, after the whole stream: the loaded state is
     * consistent (indices in range, cross-references live), or the
     * migration fails.  It may rely on the features before it, and may
     * rebuild what the stream does not carry (counts, maps).
     */
    bool (*validate)(RSCore *c);
    /* Once every feature's state is valid: restart what runs. */
    void (*post_load)(RSCore *c);
} RSFeature;

/* Each feature's hooks (its file), in rs_features[] (rdma-session-core.c). */
extern const RSFeature rs_feature_admin;
extern const RSFeature rs_feature_mcast;
extern const RSFeature rs_feature_objects;
extern const RSFeature rs_feature_xrc;
extern const RSFeature rs_feature_qp;
extern const RSFeature rs_feature_mkey;
extern const RSFeature rs_feature_mkey_list;
extern const RSFeature rs_feature_mw;
extern const RSFeature rs_feature_session;
extern const RSFeature rs_feature_path;
extern const RSFeature rs_feature_refs;
extern const RSFeature rs_feature_lan;
extern const RSFeature rs_feature_engine;
extern const RSFeature rs_feature_bundle;
extern const RSFeature rs_feature_hold;
extern const RSFeature rs_feature_odp;
extern const RSFeature rs_feature_dc;
extern const RSFeature rs_feature_netid;
extern const RSFeature rs_feature_ecn;
extern const RSFeature rs_feature_dcqcn;
extern const RSFeature rs_feature_fabric;
extern const RSFeature rs_feature_dbrec;

/*
 * The features in the order their hooks run, NULL-terminated
 * (rdma-session-core.c).
 */
extern const RSFeature *const rs_features[];

#define RS_FOR_EACH_FEATURE(f)                                             \
    for (const RSFeature *const *f = rs_features; *f; f++)

static inline bool rs_port_active(RSCore *c)
{
    return c->link_up && (c->status & R_RS_STATUS_READY_MASK);
}

/* The mtu property as enum rs_mtu: 256 -> RS_MTU_256 (1) ... 4096 -> 5. */
static inline uint8_t rs_max_mtu(RSCore *c)
{
    return ctz32(c->p.mtu) - 7;
}

static inline uint32_t rs_handle(uint32_t index, uint8_t gen)
{
    return ((uint32_t)gen << RS_HANDLE_GEN_SHIFT) | index;
}

/*
 * A guest's QP handle: 0 when RS_LOOKUP refuses it or it names a DC
 * responder context, which no guest handle may reach.
 */
#define RS_QP_LOOKUP(c, handle) ({                                         \
    uint32_t q_ = RS_LOOKUP((c)->qps, (c)->p.max_qps, handle);             \
    q_ && (c)->qps[q_].type != RS_QPT_DC_CTX ? q_ : 0; })

/*
 * Resolve a guest handle to a table index: 0 when it is out of range, free
 * or stale.  Every object table starts with bool valid, uint8_t gen.
 */
#define RS_LOOKUP(table, max, handle) ({                                   \
    uint32_t idx_ = (handle) & RS_HANDLE_INDEX_MASK;                       \
    (idx_ != 0 && idx_ < (max) && (table)[idx_].valid &&                   \
     (table)[idx_].gen == (handle) >> RS_HANDLE_GEN_SHIFT) ? idx_ : 0; })

/* A loaded index names a live entry (the checks of incoming migration). */
#define RS_REF_OK(c, table, max, idx) ((idx) < (max) && (c)->table[idx].valid)

/* Lowest free slot at or above first, 0 when the table is full. */
#define RS_ALLOC(table, max, first) ({                                     \
    uint32_t i_, r_ = 0;                                                   \
    for (i_ = (first); i_ < (max); i_++) {                                 \
        if (!(table)[i_].valid) {                                          \
            r_ = i_;                                                       \
            break;                                                         \
        }                                                                  \
    }                                                                      \
    r_; })

/* Admin command handlers, one per opcode, grouped by role. */
typedef uint8_t (*RSCmdFn)(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe);

/* rdma-session-objects.c: PD, CQ, AH, SRQ */
uint8_t rs_cmd_create_pd(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_pd(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe);
uint8_t rs_cmd_create_cq(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_cq(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe);
uint8_t rs_cmd_resize_cq(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe);
uint8_t rs_cmd_create_ah(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_ah(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe);
uint8_t rs_check_av(RSCore *c, const RSAv *av);
uint8_t rs_cmd_create_srq(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe);
uint8_t rs_cmd_modify_srq(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_srq(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe);
extern const VMStateDescription vmstate_rs_pd;
extern const VMStateDescription vmstate_rs_cq;
extern const VMStateDescription vmstate_rs_av;
extern const VMStateDescription vmstate_rs_ah;
extern const VMStateDescription vmstate_rs_srqs;

/* rdma-session-qp.c: QPs and their state machine */
uint8_t rs_cmd_create_qp(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe);
uint8_t rs_cmd_modify_qp(RSCore *c, const struct rs_admin_cmd *cmd,
                         struct rs_admin_cqe *cqe);
uint8_t rs_cmd_query_qp(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_qp(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe);
void rs_qp_set_av(RSCore *c, RSQp *qp, const RSAv *av);
uint32_t rs_sq_stride(uint8_t max_sge, uint16_t max_inline);
uint32_t rs_rq_stride(uint8_t max_sge);
extern const VMStateDescription vmstate_rs_qp;
/* The engine's QP and send queue services */
void rs_send_cqe(RSCore *c, uint32_t qpn, const struct rs_send_wqe_ctrl *w,
                 uint8_t status, uint32_t byte_len);
void rs_qp_to_err(RSCore *c, uint32_t qpn);
void rs_qp_event(RSCore *c, uint32_t qpn, uint8_t type);
void rs_sq_drained_check(RSCore *c, uint32_t qpn);
bool rs_qp_flush(RSCore *c, uint32_t qpn, unsigned budget);
void rs_srq_flush_claimed(RSCore *c, uint32_t qpn);
void rs_sq_flush_before(RSCore *c, uint32_t qpn, uint32_t end);
RSSentWqe *rs_sq_started(RSQp *qp, uint32_t index);
void rs_sq_complete(RSCore *c, uint32_t qpn, uint8_t status,
                    uint32_t byte_len);

/* rdma-session-cq.c: CQE writes, completion causes */
void rs_cq_post(RSCore *c, uint32_t cq, struct rs_cqe *cqe, bool solicited);
void rs_comp_cause_clear(RSCore *c, uint32_t cq);
bool rs_comp_cause_load(RSCore *c);
extern const VMStateDescription vmstate_rs_cq_event;

/* rdma-session-xrc.c: XRC domains, XRC SRQs of target QPs */
uint8_t rs_cmd_create_xrcd(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_xrcd(RSCore *c, const struct rs_admin_cmd *cmd,
                            struct rs_admin_cqe *cqe);
uint8_t rs_xrc_srq_check(RSCore *c, const struct rs_cmd_create_srq *cs,
                         uint32_t pd, uint32_t *xrcd, uint32_t *cq);
void rs_xrc_srq_destroyed(RSCore *c, uint32_t srq);
bool rs_xrc_tgt_select(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t srqn);
uint32_t rs_xrc_srq_pd(RSCore *c, const RSQp *qp, uint32_t srq);
extern const VMStateDescription vmstate_rs_rd_res_xrc;
extern const VMStateDescription vmstate_rs_qp_xrc;
extern const VMStateDescription vmstate_rs_srq_xrc;
extern const VMStateDescription vmstate_rs_xrcds;

/*
 * The reliable (acknowledged, PSN-ordered) send and receive sides: RC
 * has both, an XRC initiator only RC's requester, an XRC target only
 * RC's responder.
 */
static inline bool rs_qpt_rc_requester(uint8_t type)
{
    return type == RS_QPT_RC || type == RS_QPT_XRC_INI || type == RS_QPT_DCI;
}

static inline bool rs_qpt_rc_responder(uint8_t type)
{
    return type == RS_QPT_RC || type == RS_QPT_XRC_TGT ||
           type == RS_QPT_DC_CTX;
}

/* rdma-session-dc.c: dynamically connected transport (the engine's) */
struct RSPkt;
uint8_t rs_dc_req_target(RSCore *c, uint32_t qpn, RSQp *qp,
                         const struct rs_send_wqe_ctrl *w, bool started,
                         bool *go);
void rs_dc_input(RSCore *c, int gid, const struct RSPkt *pkt);
void rs_dc_ctx_error(RSCore *c, uint32_t qpn);
void rs_dc_dct_stop(RSCore *c, uint32_t dct);
void rs_dc_dci_reset(RSCore *c, uint32_t qpn);
void rs_dc_activity(RSCore *c, RSQp *qp);
extern const VMStateDescription vmstate_rs_qp_dc;

/* rdma-session-mkey.c: memory keys and translation tables */
uint8_t rs_cmd_reg_mr(RSCore *c, const struct rs_admin_cmd *cmd,
                      struct rs_admin_cqe *cqe);
uint8_t rs_cmd_dereg_mr(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe);
uint8_t rs_cmd_rereg_mr(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe);
uint32_t rs_mr_slot(RSCore *c, uint32_t pages);
uint32_t rs_mr_install(RSCore *c, uint32_t idx, RSMr m);
uint8_t rs_mr_check_access(uint16_t access);
RSMr *rs_mkey_lookup(RSCore *c, uint32_t gid_index, uint32_t key);
RSMr *rs_mkey_lookup_netid(RSCore *c, unsigned netid, uint32_t key);

/*
 * A kind of memory key whose memory is not an MR's page list: how the
 * data path reaches it (rs_mr_rw) and what freeing the key releases
 * (rs_mr_free).  rdma-session-mkey.c picks one by the key's kind and
 * calls no kind by name.
 */
typedef struct RSMkeyOps {
    const char *name;
    uint8_t (*rw)(RSCore *c, const RSMr *mr, uint64_t va, void *buf,
                  uint32_t len, bool write);
    void (*release)(RSCore *c, RSMr *mr);
} RSMkeyOps;

extern const RSMkeyOps rs_mkey_list_ops;    /* rdma-session-mkey-list.c */
extern const RSMkeyOps rs_odp_mkey_ops;     /* rdma-session-odp.c */
extern const VMStateDescription vmstate_rs_mr;

/* rdma-session-netid.c */
uint8_t rs_netid_of_gid(RSCore *c, const uint8_t *gid);
uint32_t rs_netid_slot(RSCore *c, unsigned n, uint32_t key);
unsigned rs_key_netid(RSCore *c, const RSQp *qp, int gid_index);
uint32_t rs_mkey_key(const RSMr *mr);
uint32_t rs_mkey_handle(RSCore *c, const RSMr *mr);
uint32_t rs_mkey_assign(RSCore *c, uint32_t idx);
void rs_mkey_release(RSCore *c, uint32_t idx);
void rs_netid_gid_added(RSCore *c, uint32_t idx);
bool rs_netid_set_list(RSCore *c, const char *str, Error **errp);
bool rs_netid_set_vni(RSCore *c, uint64_t vni, Error **errp);
char *rs_netid_get_list(RSCore *c);
char *rs_netid_subnet_str(RSCore *c, unsigned n);
uint8_t rs_cmd_query_netid(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe);
extern const VMStateDescription vmstate_rs_netids;
extern const VMStateDescription vmstate_rs_pd_netid;
extern const VMStateDescription vmstate_rs_mr_netid;
bool rs_qp_privileged(RSCore *c, const RSQp *qp);
uint8_t rs_mr_local_op(RSCore *c, const RSQp *qp,
                       const struct rs_send_wqe_ctrl *w);
bool rs_mr_remote_inv(RSCore *c, const RSQp *qp, uint32_t gid_index,
                      uint32_t rkey);
uint8_t rs_sge_check(RSCore *c, const RSQp *qp, uint32_t gid_index,
                     const struct rs_sge *sge, unsigned n, uint16_t access,
                     uint64_t *total);
uint8_t rs_sge_copy(RSCore *c, const RSQp *qp, uint32_t gid_index,
                    const struct rs_sge *sge, unsigned n, uint64_t off,
                    void *buf, uint32_t len, bool to_mem);
uint8_t rs_sge_ready(RSCore *c, const RSQp *qp, uint32_t gid_index,
                     const struct rs_sge *sge, unsigned n, uint64_t off,
                     uint32_t len, bool to_mem);
uint8_t rs_mr_rw(RSCore *c, const RSMr *mr, uint64_t va, void *buf,
                 uint32_t len, bool write);

/*
 * Internal results (never reported to the guest): rs_mr_rw() met a page
 * an ODP MR has no translation for (RS_STATUS_*), and so did
 * rs_sge_copy() (RS_WC_*).  c->odp_fault says which.
 */
#define RS_STATUS_ODP_FAULT 0xf0
#define RS_WC_ODP_FAULT     0xf0

/* rdma-session-odp.c: on-demand paging */
#define RS_ODP_WAYS         8
#define RS_ODP_PAGE_SHIFT   12
#define RS_ODP_REPOST_NS    (100 * SCALE_MS)
/*
 * A requester's pause for one PSN costs no retry for at most this long:
 * longer than the longest fault of this adapter's responder (the maximum
 * odp-fault-timeout, 60 s) and a PAUSE timer.
 */
#define RS_ODP_PAUSE_MAX_NS (64 * NANOSECONDS_PER_SECOND)
uint8_t rs_odp_reg_mr(RSCore *c, const struct rs_cmd_reg_mr *r,
                      uint32_t pd, uint32_t gid, uint16_t access,
                      struct rs_admin_cqe *cqe);
bool rs_odp_probe(RSCore *c, uint32_t idx, uint64_t va, uint64_t len,
                  bool write);
uint8_t rs_cmd_odp_resolve(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe);
uint8_t rs_cmd_odp_invalidate(RSCore *c, const struct rs_admin_cmd *cmd,
                              struct rs_admin_cqe *cqe);
bool rs_odp_wait(RSCore *c, uint32_t qpn, RSOdpWait *w, uint8_t kind,
                 uint32_t psn);
void rs_odp_drop_fault(RSCore *c);
void rs_odp_widen(RSCore *c, uint64_t end);
void rs_odp_qp_clear(RSCore *c, RSQp *qp);
extern const VMStateDescription vmstate_rs_qp_odp;
extern const VMStateDescription vmstate_rs_mr_odp;
extern const VMStateDescription vmstate_rs_odp;

/* rdma-session-mkey-list.c: indirect and pattern keys */
typedef struct RSMklEnt {
    uint64_t addr;
    uint64_t off;               /* where it starts in the key (repetition) */
    uint32_t key;
    uint32_t len;               /* pattern: bytes_count */
    uint32_t skip;              /* pattern: bytes_skip */
    uint32_t rsvd;
} RSMklEnt;

/*
 * Internal result of rs_mr_rw() (never reported to the guest): an entry
 * of an indirect or pattern key refused the access.
 */
#define RS_STATUS_MKEY_PROT 0xf1

uint8_t rs_cmd_reg_mkey_list(RSCore *c, const struct rs_admin_cmd *cmd,
                             struct rs_admin_cqe *cqe);
uint8_t rs_mkl_wr(RSCore *c, const RSQp *qp, int gid_index,
                  const struct rs_send_wqe_ctrl *w);
bool rs_mkl_single(RSCore *c, const RSMr *mr, uint64_t va, uint32_t len);
bool rs_mkl_state_valid(RSCore *c, RSMr *mr);
extern const VMStateDescription vmstate_rs_mr_mkl;

/* rdma-session-mw.c: memory windows */
uint8_t rs_cmd_alloc_mw(RSCore *c, const struct rs_admin_cmd *cmd,
                        struct rs_admin_cqe *cqe);
uint8_t rs_cmd_dealloc_mw(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe);
bool rs_mw_key(RSCore *c, const RSQp *qp, int gid_index, uint32_t key);
uint8_t rs_mw_bind(RSCore *c, const RSQp *qp, int gid_index,
                   const struct rs_send_wqe_ctrl *w);
bool rs_mw_invalidate(RSCore *c, const RSQp *qp, int gid_index, uint32_t key,
                      bool remote);
RSMr *rs_mw_remote(RSCore *c, const RSQp *qp, uint32_t pd, RSMr *mw,
                   uint64_t va, uint32_t len, uint16_t right);
extern const VMStateDescription vmstate_rs_mr_mw;

/* rdma-session-session.c: UDP sessions, session groups, GIDs */
uint8_t rs_cmd_create_session(RSCore *c, const struct rs_admin_cmd *cmd,
                              struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_session(RSCore *c, const struct rs_admin_cmd *cmd,
                               struct rs_admin_cqe *cqe);
uint8_t rs_cmd_create_group(RSCore *c, const struct rs_admin_cmd *cmd,
                            struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_group(RSCore *c, const struct rs_admin_cmd *cmd,
                             struct rs_admin_cqe *cqe);
uint8_t rs_cmd_add_gid(RSCore *c, const struct rs_admin_cmd *cmd,
                       struct rs_admin_cqe *cqe);
uint8_t rs_cmd_del_gid(RSCore *c, const struct rs_admin_cmd *cmd,
                       struct rs_admin_cqe *cqe);
bool rs_gid_valid(RSCore *c, uint32_t gid_index);
extern const VMStateDescription vmstate_rs_session;
extern const VMStateDescription vmstate_rs_group;
extern const VMStateDescription vmstate_rs_gid;

/* rdma-session-path.c: multipath session groups */
struct RSPkt;
uint8_t rs_cmd_query_session(RSCore *c, const struct rs_admin_cmd *cmd,
                             struct rs_admin_cqe *cqe);
bool rs_path_msg_start(RSCore *c, uint32_t qpn, RSQp *qp);
bool rs_path_tuple(RSCore *c, RSQp *qp, bool ud, struct RSPkt *pkt);
void rs_path_sent(RSCore *c, RSQp *qp, bool ud, uint32_t bytes);
void rs_path_acked(RSCore *c, RSQp *qp);
bool rs_path_failover(RSCore *c, uint32_t qpn, RSQp *qp);
void rs_path_fallback(RSCore *c, uint32_t qpn, RSQp *qp);
void rs_path_rewind(RSCore *c, uint32_t qpn, RSQp *qp);
void rs_path_group_set(RSQp *qp);
void rs_path_resp_tuple(const RSQp *qp, uint16_t sport, struct RSPkt *pkt);
void rs_path_session_reset(RSSession *s);
extern const VMStateDescription vmstate_rs_qp_path;
extern const VMStateDescription vmstate_rs_session_path;

/* rdma-session-mcast.c: UD multicast groups */
struct RSPkt;
uint8_t rs_cmd_attach_mcast(RSCore *c, const struct rs_admin_cmd *cmd,
                            struct rs_admin_cqe *cqe);
uint8_t rs_cmd_detach_mcast(RSCore *c, const struct rs_admin_cmd *cmd,
                            struct rs_admin_cqe *cqe);
bool rs_gid_is_mcast(const uint8_t *gid);
void rs_mcast_mac(const uint8_t *gid, uint8_t *mac);
int rs_mcast_find(RSCore *c, const uint8_t *gid);
bool rs_mcast_qp_attached(RSCore *c, uint32_t qpn);
extern const VMStateDescription vmstate_rs_mcast;

/* rdma-session-lan.c: the Ethernet path */
uint8_t rs_cmd_create_lan_queue(RSCore *c, const struct rs_admin_cmd *cmd,
                                struct rs_admin_cqe *cqe);
uint8_t rs_cmd_destroy_lan_queue(RSCore *c, const struct rs_admin_cmd *cmd,
                                 struct rs_admin_cqe *cqe);
uint8_t rs_cmd_set_lan_rx_mode(RSCore *c, const struct rs_admin_cmd *cmd,
                               struct rs_admin_cqe *cqe);
void rs_lan_tx_resume(RSCore *c);
bool rs_lan_can_receive(RSCore *c);
void rs_lan_gid_added(RSCore *c);
ssize_t rs_lan_receive_iov(RSCore *c, const struct iovec *iov, int iovcnt);
#define RS_ANNOUNCE_MAX 96
size_t rs_lan_announce_frame(RSCore *c, unsigned gid, uint8_t *buf);
extern const VMStateDescription vmstate_rs_lan_queue;
extern const VMStateDescription vmstate_rs_mac;

#define RS_LAN_RX_ALL   (RS_LAN_RX_PROMISC | RS_LAN_RX_ALLMULTI |          \
                         RS_LAN_RX_BROADCAST)

/*
 * Transport engine: rdma-session-{req,resp,comp}.c, its life cycle in
 * -engine.c, the network layer in -net.c, wire format in -wire.c
 */
void rs_req_kick(RSCore *c);
void rs_req_doorbell(RSCore *c, uint32_t qpn);
void rs_req_rewind(RSCore *c, uint32_t qpn);
void rs_req_lost(RSCore *c, uint32_t qpn, bool timeout);
int64_t rs_req_ack_timeout_ns(RSCore *c, const RSQp *qp);
void rs_req_acked(RSCore *c, RSQp *qp, uint32_t n);
void rs_req_rnr_wait(RSCore *c, RSQp *qp, uint8_t timer);
void rs_req_pause(RSCore *c, RSQp *qp, uint32_t psn, uint8_t timer);
void rs_req_rnr_end(RSCore *c, RSQp *qp);
void rs_resp_process(void *opaque);
void rs_resp_odp_resume(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t psn);
void rs_resp_odp_fail(RSCore *c, uint32_t qpn, RSQp *qp);
bool rs_resp_rnr_prompt(RSCore *c, uint32_t qpn, uint8_t timer);
struct RSPkt;
bool rs_qp_tuple(RSCore *c, RSQp *qp, uint32_t qpn, const RSAv *ud_av,
                 struct RSPkt *pkt);
void rs_comp_receive(RSCore *c, uint32_t qpn, const struct RSPkt *pkt);
void rs_resp_ud(RSCore *c, uint32_t qpn, RSQp *qp, uint32_t gid,
                const struct RSPkt *pkt);
void rs_resp_receive(RSCore *c, uint32_t qpn, RSQp *qp, int gid,
                     const struct RSPkt *pkt);

/*
 * Timers have no re-entrancy guard of their own (bottom halves and the
 * NIC's receive path do): an engine timer that posts a completion sends
 * an MSI-X message to an address the guest chose, possibly one of our
 * own registers, which must then be refused as a DMA into the device is.
 */
static inline bool rs_guard_enter(RSCore *c)
{
    if (c->guard->engaged_in_io) {
        return false;
    }
    c->guard->engaged_in_io = true;
    return true;
}

static inline void rs_guard_leave(RSCore *c)
{
    c->guard->engaged_in_io = false;
}

/*
 * READ and atomic response packets one received frame (or a bundle, all
 * its packets) may produce in the receive path; resp_bh sends the rest,
 * as many per QP per run.
 */
#define RS_RESP_BUDGET      32

/* rdma-session-bundle.c: x-bundle-max's range (whole frames, bytes). */
#define RS_BUNDLE_MIN       9000
#define RS_BUNDLE_MAX       65535
/* Counters, QOM properties x-bundle-* (rdma-session-pci.c). */
enum {
    RS_BUNDLE_CNT_TX,           /* bundles sent */
    RS_BUNDLE_CNT_TX_FRAMES,    /* frames in them */
    RS_BUNDLE_CNT_RX,           /* bundles received and unpacked */
    RS_BUNDLE_CNT_RX_DROP,      /* bundles dropped whole */
    RS_BUNDLE_CNT_HELLO_TX,
    RS_BUNDLE_CNT_HELLO_RX,
    RS_BUNDLE_COUNTERS
};
void rs_bundle_reset(RSCore *c);
bool rs_bundle_add(RSCore *c, const uint8_t *frame, size_t len);
void rs_bundle_flush(RSCore *c);
/* Around an MMIO write: what it bundles is sent when it ends. */
void rs_bundle_mmio_begin(RSCore *c);
void rs_bundle_mmio_end(RSCore *c);
/* An MMIO write is under way: it flushes (bundles, fabric) when it ends. */
bool rs_bundle_in_mmio(RSCore *c);
bool rs_bundle_divert(RSCore *c, const struct iovec *iov, int iovcnt,
                      const uint8_t *hdr, size_t hdrlen, size_t size);
uint64_t *rs_bundle_counter(RSCore *c, unsigned which);
/* A RoCE frame came from this IPv4 address: bundling to it goes on. */
void rs_bundle_heard(RSCore *c, uint32_t ip);

/* rdma-session-net.c: the RoCE network layer */
void rs_roce_xmit(RSCore *c, uint8_t *frame, size_t len,
                  const struct RSPkt *pkt);
void rs_roce_send(RSCore *c, uint8_t *frame, size_t len, uint8_t op,
                  uint32_t vlan);
bool rs_roce_tx_busy(RSCore *c);
void rs_engine_tx_resume(RSCore *c);
bool rs_resp_divert(RSCore *c, const struct iovec *iov, int iovcnt);
void rs_roce_input(RSCore *c, const uint8_t *frame, size_t len);
/* A parsed packet to its QP (len: the frame's, for traces). */
void rs_roce_dispatch(RSCore *c, struct RSPkt *pkt, size_t len,
                      uint32_t vlan);
/*
 * A packet's payload (flat, or pieces of a fabric peer's RAM) into
 * memory key mr at va, or into SGEs from offset off.
 */
uint8_t rs_pkt_to_mr(RSCore *c, const RSMr *mr, uint64_t va,
                     const struct RSPkt *pkt);
uint8_t rs_pkt_to_sges(RSCore *c, const RSQp *qp, uint32_t gid_index,
                       const struct rs_sge *sge, unsigned n, uint64_t off,
                       const struct RSPkt *pkt);
void rs_roce_input_vlan(RSCore *c, const uint8_t *frame, size_t len,
                        uint32_t vlan);
int rs_gid_find(RSCore *c, const uint8_t *gid);
bool rs_qp_from_peer(RSCore *c, const RSQp *qp, int gid,
                     const struct RSPkt *pkt);

/* rdma-session-ecn.c: ECN marks and congestion notification packets */
void rs_ecn_received(RSCore *c, uint32_t qpn, RSQp *qp, int gid,
                     const struct RSPkt *pkt);
void rs_ecn_cnp_input(RSCore *c, int gid, const struct RSPkt *pkt);
void rs_ecn_qp_created(RSCore *c, uint32_t qpn);
uint8_t rs_ecn_tos(const RSCore *c, uint8_t traffic_class);
extern const VMStateDescription vmstate_rs_ecn_counters;

/* rdma-session-dcqcn.c: the reaction point's rate and pacing per QP */
void rs_dcqcn_cnp(RSCore *c, uint32_t qpn);
bool rs_dcqcn_may_send(RSCore *c, uint32_t qpn);
void rs_dcqcn_sent(RSCore *c, uint32_t qpn, uint32_t bytes);
void rs_dcqcn_qp_created(RSCore *c, uint32_t qpn);
uint32_t rs_dcqcn_rate(RSCore *c, uint32_t qpn, uint32_t *target,
                       uint32_t *alpha);
extern const VMStateDescription vmstate_rs_dcqcn;

/*
 * rdma-session-dbrec.c: doorbell records (ABI 1.11).  addr 0: none;
 * sq_active/rq_active: what the device last stored in the record.
 */
typedef struct RSDbRec {
    uint64_t addr;
    bool sq_active;
    bool rq_active;
} RSDbRec;

uint8_t rs_cmd_set_qp_db_record(RSCore *c, const struct rs_admin_cmd *cmd,
                                struct rs_admin_cqe *cqe);
bool rs_dbrec_sq_fetch(RSCore *c, uint32_t qpn);
void rs_dbrec_sq_arm(RSCore *c, uint32_t qpn);
bool rs_dbrec_sq_idle(RSCore *c, uint32_t qpn);
void rs_dbrec_rq_fetch(RSCore *c, uint32_t qpn);
void rs_dbrec_qp_state(RSCore *c, uint32_t qpn);
void rs_dbrec_qp_gone(RSCore *c, uint32_t qpn);
extern const VMStateDescription vmstate_rs_dbrec;

/* rdma-session-engine.c: the migration hold (the switchover) */
void rs_migration_hold_start(RSCore *c);
void rs_migration_hold_stop(RSCore *c);
void rs_migration_resume(RSCore *c);

/* rdma-session-migration.c: the core's tables, the features' hooks */
extern const VMStateDescription vmstate_rs_core;

/*
 * Rate limit of the guest-error log, per call site: at most RS_LOG_BURST
 * lines in each RS_LOG_INTERVAL_MS of QEMU_CLOCK_REALTIME.  Many guest
 * errors can repeat at packet or doorbell rate (a peer's frames, a guest
 * ringing in a loop), and "-d guest_errors" must stay readable and the
 * log file bounded; the first line of a new interval says how many were
 * left out.  The trace event always fires.
 */
#define RS_LOG_BURST        10
#define RS_LOG_INTERVAL_MS  1000

typedef struct RSLogLimit {
    int64_t start;              /* this interval's start, realtime ms */
    uint32_t count;             /* lines logged in it */
    uint32_t missed;            /* lines left out since the last one */
} RSLogLimit;

/* True if the call site may log now; *missed: lines left out before. */
bool rs_log_limit(RSLogLimit *l, uint32_t *missed);

/*
 * A guest mistake: trace event plus LOG_GUEST_ERROR (nvme's
 * NVME_GUEST_ERR), so a guest cannot flood stderr by default; the log
 * line is rate limited per call site (RSLogLimit above).
 */
#define RS_GUEST_ERR(trace, fmt, ...)                                      \
    do {                                                                   \
        static RSLogLimit rs_log_limit_;                                   \
        uint32_t rs_log_missed_;                                           \
                                                                           \
        (trace_##trace)(__VA_ARGS__);                                      \
        if (qemu_loglevel_mask(LOG_GUEST_ERROR) &&                         \
            rs_log_limit(&rs_log_limit_, &rs_log_missed_)) {               \
            if (rs_log_missed_) {                                          \
                qemu_log(#trace ": %u more not logged\n", rs_log_missed_); \
            }                                                              \
            qemu_log(#trace ": " fmt "\n", ## __VA_ARGS__);                \
        }                                                                  \
    } while (0)

#endif
