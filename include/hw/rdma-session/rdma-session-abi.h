/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * rdma-session adapter: the hardware ABI.
 *
 * The one description of every layout that the QEMU device model, the
 * qtests, the Linux driver and the rdma-core provider share.  It must stay
 * self-contained C11: no QEMU, kernel or libc headers beyond fixed-width
 * integer types.  docs/specs/rdma-session.rst explains it; the two change
 * together.
 *
 * Everything the device reads from or writes to guest memory is
 * little-endian.  Structures are naturally aligned and padded by hand; the
 * RS_ABI_SIZE() checks at the bottom pin their sizes.
 */
#ifndef HW_RDMA_SESSION_ABI_H
#define HW_RDMA_SESSION_ABI_H

#if defined(__KERNEL__)
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/*
 * Register field declarations use QEMU's registerfields.h names
 * (A_<reg> byte offset, R_<reg>_<field>_SHIFT/_LENGTH/_MASK).  Outside QEMU
 * the two macros are defined here with the same constants (one enum per
 * macro: checkpatch.pl wants a macro to be one statement).
 */
#ifndef REG32
#define REG32(reg, addr)                                          \
    enum { A_ ## reg = (addr), R_ ## reg = (addr) / 4 };
#endif
#ifndef FIELD
#define FIELD(reg, field, shift, length)                          \
    enum { R_ ## reg ## _ ## field ## _SHIFT = (shift),           \
           R_ ## reg ## _ ## field ## _LENGTH = (length),         \
           R_ ## reg ## _ ## field ## _MASK =                     \
           (int)((~0U >> (32 - (length))) << (shift)) };
#endif

/* ------------------------------------------------------------------ */
/* PCI identity and BARs                                              */
/* ------------------------------------------------------------------ */

#define RS_PCI_VENDOR_ID        0x1af4
#define RS_PCI_DEVICE_ID        0x10f0
#define RS_PCI_REVISION         0x01
#define RS_PCI_CLASS            0x0200  /* Ethernet: RoCE rides the LAN port */

/*
 * The major version changes when an existing layout or meaning changes; the
 * minor version when something is added that an older driver can ignore
 * (a reserved field, opcode or doorbell given a meaning, a new RS_CAP_ bit).
 * Minor 1: atomics, SRQs (RS_CAP_ATOMIC, RS_CAP_SRQ).
 * Minor 2: memory windows (RS_CAP_MW), RDMA FLUSH and ATOMIC WRITE
 * (RS_CAP_FLUSH, RS_CAP_ATOMIC_WRITE), UD multicast (RS_CAP_MCAST).
 * Minor 3: XRC domains, XRC SRQs and XRC QPs (RS_CAP_XRC).
 * Minor 4: on-demand paging (RS_CAP_ODP), QUERY_STATS.
 * Minor 5: dynamically connected transport (RS_CAP_DC), indirect and
 * pattern memory keys (RS_CAP_INDIRECT_MKEY, RS_CAP_PATTERN_MKEY).
 * Minor 6: multipath session groups (RS_CAP_MULTIPATH): per-QP flowlet
 * spreading, path failover, RS_EV_PATH_MIGRATED, QUERY_SESSION;
 * host-assigned network identities (RS_CAP_HOST_NETID): ADD_GID's
 * completion names the GID's identity and VNI, CREATE_PD's netid, keys
 * allocated per identity (REG_MR and friends return an admin handle apart
 * from the key), QUERY_NETID, RS_EV_NETID_CHANGED; the transport counters
 * of QUERY_STATS (RS_CAP_DEVICE_COUNTERS, struct rs_device_stats from
 * rnr_naks_sent on).
 * Minor 7: the completion cause registers (RS_CAP_COMP_CAUSE); a UD
 * receive's network header type (RS_WC_F_IPV4, RS_WC_F_IPV6); REREG_MR,
 * an MR changed in place under its keys (RS_CAP_REREG_MR).
 * Minor 8: data buffers in other PCI devices' memory BARs, peer-to-peer
 * (RS_CAP_PEER_DMA); QUERY_STATS counts data buffer bytes by where they
 * went (struct rs_device_stats from ram_dma_read_bytes on).
 * Minor 9: 802.1Q VLANs and priorities (RS_CAP_VLAN): ADD_GID's vlan, the
 * priority in bits 24-26 of an address vector's flow_label word
 * (RS_AV_PRIO), QUERY_STATS' vlan_rx_dropped, a kernel UD receive's tag
 * (RS_WC_F_VLAN).
 * Minor 10: ECN and congestion notification (RS_CAP_ECN): RoCE packets
 * sent ECN-capable, a CE-marked packet answered with a CNP to its sender
 * (rate-limited per QP), a CNP lowering its QP's sending rate (DCQCN),
 * QUERY_STATS from ecn_ce_received on.
 * Minor 11: doorbell records (RS_CAP_DB_RECORD): SET_QP_DB_RECORD gives a
 * QP a struct rs_db_record in guest memory through which posts reach the
 * device without an MMIO doorbell while the device says it is active;
 * QUERY_STATS from db_mmio_writes on.
 */
#define RS_ABI_VERSION_MAJOR    1
#define RS_ABI_VERSION_MINOR    11

#define RS_BAR_REGS             0       /* registers, RS_REGS_SIZE bytes */
#define RS_BAR_MSIX             1       /* MSI-X table and PBA */
#define RS_BAR_DOORBELL         2       /* doorbell pages, 64-bit BAR */

#define RS_REGS_SIZE            0x1000
#define RS_DB_PAGE_SHIFT        12
#define RS_DB_PAGE_SIZE         (1u << RS_DB_PAGE_SHIFT)

/*
 * By convention the driver points ACQ_CFG.VECTOR and AEQ_CFG.VECTOR at
 * vector 0; completion vector n of a CQ is MSI-X vector 1 + n.
 */
#define RS_MSIX_ADMIN_VECTOR    0
#define RS_MSIX_COMP_VECTOR0    1

#define RS_MAGIC                0x53444d52u     /* "RMDS" in memory */

/* ------------------------------------------------------------------ */
/* Register BAR (BAR 0).  32-bit accesses only.                        */
/* ------------------------------------------------------------------ */

REG32(RS_MAGIC, 0x000)
REG32(RS_VERSION, 0x004)
    FIELD(RS_VERSION, MINOR, 0, 16)
    FIELD(RS_VERSION, MAJOR, 16, 16)
REG32(RS_CAPS, 0x008)                   /* RS_CAP_* feature bits */
REG32(RS_DB_PAGES, 0x00c)               /* number of doorbell pages */
REG32(RS_CTRL, 0x010)
    FIELD(RS_CTRL, ENABLE, 0, 1)
    FIELD(RS_CTRL, RESET, 1, 1)         /* write 1: full function reset */
REG32(RS_STATUS, 0x014)
    FIELD(RS_STATUS, READY, 0, 1)
    FIELD(RS_STATUS, FATAL, 1, 1)
    FIELD(RS_STATUS, AEQ_OVERFLOW, 2, 1)
    FIELD(RS_STATUS, LINK_UP, 3, 1)
REG32(RS_FATAL_CODE, 0x018)             /* enum rs_fatal */
REG32(RS_NUM_MSIX, 0x01c)
REG32(RS_ADMQ_BASE_LO, 0x020)
REG32(RS_ADMQ_BASE_HI, 0x024)
REG32(RS_ADMQ_CFG, 0x028)
    FIELD(RS_ADMQ_CFG, LOG_SIZE, 0, 5)
REG32(RS_ADMQ_CI, 0x02c)                /* read-only: commands consumed */
REG32(RS_ACQ_BASE_LO, 0x030)
REG32(RS_ACQ_BASE_HI, 0x034)
REG32(RS_ACQ_CFG, 0x038)                /* ACQ has the ADMQ's size */
    FIELD(RS_ACQ_CFG, VECTOR, 0, 11)
REG32(RS_AEQ_BASE_LO, 0x040)
REG32(RS_AEQ_BASE_HI, 0x044)
REG32(RS_AEQ_CFG, 0x048)
    FIELD(RS_AEQ_CFG, LOG_SIZE, 0, 5)
    FIELD(RS_AEQ_CFG, VECTOR, 8, 11)
REG32(RS_AEQ_CI, 0x04c)                 /* driver: events consumed */
REG32(RS_MAC_LO, 0x050)                 /* MAC bytes 0-3 */
REG32(RS_MAC_HI, 0x054)                 /* MAC bytes 4-5 */
REG32(RS_ADMQ_DB, 0x100)                /* write: admin producer index */
/*
 * Completion causes (RS_CAP_COMP_CAUSE): a read of RS_COMP_CAUSE + 4 * n
 * returns the handle of a CQ of completion vector n whose armed
 * notification fired, and forgets it; RS_COMP_CAUSE_NONE once there is
 * none.  A CQ is named once however often it fired before the read.  The
 * interrupt handler reads until NONE and signals only those CQs: an
 * interrupt is not an event for every CQ of the vector.
 */
REG32(RS_COMP_CAUSE, 0x400)             /* 64 registers, one per vector */
#define RS_COMP_CAUSE_NONE      0xffffffffu

#define RS_CAP_RC               (1u << 0)
#define RS_CAP_UC               (1u << 1)
#define RS_CAP_UD               (1u << 2)
#define RS_CAP_SESSION_GROUPS   (1u << 3)
#define RS_CAP_NETID_MKEYS      (1u << 4)  /* per network identity tables */
#define RS_CAP_LAN              (1u << 5)  /* Ethernet TX/RX rings */
#define RS_CAP_ATOMIC           (1u << 6)  /* RC atomics, IB_ATOMIC_HCA */
#define RS_CAP_SRQ              (1u << 7)  /* shared receive queues */
#define RS_CAP_DC               (1u << 8)  /* DCI and DCT QPs (ABI 1.5) */
#define RS_CAP_INDIRECT_MKEY    (1u << 9)  /* indirect keys (ABI 1.5) */
#define RS_CAP_PATTERN_MKEY     (1u << 10) /* pattern keys (ABI 1.5) */
#define RS_CAP_ODP              (1u << 11) /* on-demand paging (ABI 1.4) */
#define RS_CAP_MW               (1u << 12) /* memory windows, type 1 and 2B */
#define RS_CAP_MCAST            (1u << 13) /* UD multicast (ABI 1.2) */
#define RS_CAP_FLUSH            (1u << 14) /* RDMA FLUSH, global visibility */
#define RS_CAP_ATOMIC_WRITE     (1u << 15) /* RDMA ATOMIC WRITE */
#define RS_CAP_XRC              (1u << 16) /* XRC (ABI 1.3) */
#define RS_CAP_MULTIPATH        (1u << 17) /* path failover (ABI 1.6) */
#define RS_CAP_HOST_NETID       (1u << 18) /* host-assigned identities (1.6) */
#define RS_CAP_DEVICE_COUNTERS  (1u << 19) /* QUERY_STATS: 152 bytes (1.6) */
#define RS_CAP_COMP_CAUSE       (1u << 20) /* RS_COMP_CAUSE registers (1.7) */
#define RS_CAP_REREG_MR         (1u << 21) /* REREG_MR (1.7) */
#define RS_CAP_PEER_DMA         (1u << 22) /* data in peer BARs (1.8) */
#define RS_CAP_VLAN             (1u << 23) /* 802.1Q tags, priorities (1.9) */
#define RS_CAP_ECN              (1u << 24) /* ECN marks, CNPs (1.10) */
#define RS_CAP_DB_RECORD        (1u << 25) /* doorbell records (1.11) */

enum rs_fatal {
    RS_FATAL_NONE = 0,
    RS_FATAL_BAD_RING_CONFIG = 1,   /* enable with an invalid ring layout */
    RS_FATAL_DMA = 2,               /* a ring became unreachable */
};

/*
 * Rings hold 2^1 .. 2^RS_MAX_*_LOG entries.  A CQ's consumer index comes
 * through a 16-bit doorbell value, so a CQ holds at most 2^15 entries:
 * then full and empty differ in that value and the device can see an
 * overflow.
 */
#define RS_MAX_ADMQ_LOG         12
#define RS_MAX_AEQ_LOG          12
#define RS_MAX_CQ_LOG           15
#define RS_MAX_WQ_LOG           15
#define RS_MAX_LAN_LOG          12
#define RS_RING_ALIGN           64

/* ------------------------------------------------------------------ */
/* Doorbell BAR (BAR 2): one RS_DB_PAGE_SIZE page per user context     */
/* ("UAR"); page 0 belongs to the kernel.  32-bit writes.               */
/* ------------------------------------------------------------------ */

#define RS_DB_SQ                0x00    /* QP index | SQ producer << 16 */
#define RS_DB_RQ                0x08    /* QP index | RQ producer << 16 */
#define RS_DB_CQ_CI             0x10    /* CQ index | consumer << 16 */
#define RS_DB_CQ_ARM            0x18    /* CQ index | RS_DB_CQ_ARM_* */
#define RS_DB_SRQ               0x20    /* SRQ index | producer << 16 */
#define RS_DB_LAN_TX            0x40    /* page 0 only: TX producer index */
#define RS_DB_LAN_RX            0x48    /* page 0 only: RX producer index */

#define RS_DB_INDEX_MASK        0xffffu
#define RS_DB_VALUE_SHIFT       16
#define RS_DB_CQ_ARM_NEXT       (1u << 16)
#define RS_DB_CQ_ARM_SOLICITED  (1u << 17)

/* ------------------------------------------------------------------ */
/* Handles and keys                                                   */
/* ------------------------------------------------------------------ */

/*
 * Object handles carry a generation in bits 24-31 so that a handle kept
 * after destroy is refused instead of reaching the slot's next owner.  For
 * QPs the index (bits 0-23) is the QP number on the wire.
 */
#define RS_HANDLE_INDEX_MASK    0x00ffffffu
#define RS_HANDLE_GEN_SHIFT     24

/* lkey/rkey: MR index in bits 8-31, a per-registration tag in bits 0-7. */
#define RS_MKEY_INDEX_SHIFT     8
#define RS_MKEY_TAG_MASK        0xffu

#define RS_GSI_QPN              1

/*
 * The reserved lkey of privileged (kernel) QPs: an SGE with this lkey
 * names a DMA address of the function itself, for local access only.  It
 * is never an rkey (MR index 0 is never registered) and a QP whose PD
 * lacks RS_PD_F_PRIVILEGED or whose doorbell page is not 0 cannot use it.
 */
#define RS_LOCAL_DMA_LKEY       0

/* ------------------------------------------------------------------ */
/* Admin queue                                                        */
/* ------------------------------------------------------------------ */

enum rs_admin_opcode {
    RS_CMD_QUERY_DEVICE = 0x01,
    RS_CMD_QUERY_PORT = 0x02,
    RS_CMD_CREATE_PD = 0x03,
    RS_CMD_DESTROY_PD = 0x04,
    RS_CMD_CREATE_CQ = 0x05,
    RS_CMD_DESTROY_CQ = 0x06,
    RS_CMD_RESIZE_CQ = 0x07,
    RS_CMD_CREATE_QP = 0x08,
    RS_CMD_MODIFY_QP = 0x09,
    RS_CMD_QUERY_QP = 0x0a,
    RS_CMD_DESTROY_QP = 0x0b,
    RS_CMD_REG_MR = 0x0c,
    RS_CMD_DEREG_MR = 0x0d,
    RS_CMD_CREATE_AH = 0x0e,
    RS_CMD_DESTROY_AH = 0x0f,
    RS_CMD_CREATE_SESSION = 0x10,
    RS_CMD_DESTROY_SESSION = 0x11,
    RS_CMD_CREATE_SESSION_GROUP = 0x12,
    RS_CMD_DESTROY_SESSION_GROUP = 0x13,
    RS_CMD_ADD_GID = 0x14,
    RS_CMD_DEL_GID = 0x15,
    RS_CMD_CREATE_LAN_QUEUE = 0x16,
    RS_CMD_DESTROY_LAN_QUEUE = 0x17,
    RS_CMD_SET_LAN_RX_MODE = 0x18,
    RS_CMD_CREATE_SRQ = 0x20,       /* ABI 1.1 (RS_CAP_SRQ) */
    RS_CMD_MODIFY_SRQ = 0x21,
    RS_CMD_DESTROY_SRQ = 0x22,
    /*
     * Reserved: answered with RS_STATUS_NOT_SUPPORTED.  A DC target is a
     * QP (CREATE_QP with RS_QPT_DCT, DESTROY_QP).
     */
    RS_CMD_CREATE_DCT = 0x23,
    RS_CMD_DESTROY_DCT = 0x24,
    RS_CMD_REG_INDIRECT_MKEY = 0x25, /* ABI 1.5 (RS_CAP_INDIRECT_MKEY) */
    RS_CMD_REG_PATTERN_MKEY = 0x26, /* ABI 1.5 (RS_CAP_PATTERN_MKEY) */
    RS_CMD_ODP_RESOLVE = 0x27,      /* ABI 1.4 (RS_CAP_ODP) */
    RS_CMD_ALLOC_MW = 0x28,         /* ABI 1.2 (RS_CAP_MW) */
    RS_CMD_DEALLOC_MW = 0x29,
    RS_CMD_ATTACH_MCAST = 0x2a,     /* ABI 1.2 (RS_CAP_MCAST) */
    RS_CMD_DETACH_MCAST = 0x2b,
    RS_CMD_CREATE_XRCD = 0x2c,      /* ABI 1.3 (RS_CAP_XRC) */
    RS_CMD_DESTROY_XRCD = 0x2d,
    RS_CMD_ODP_INVALIDATE = 0x2e,   /* ABI 1.4 (RS_CAP_ODP) */
    RS_CMD_QUERY_STATS = 0x2f,      /* ABI 1.4: struct rs_device_stats */
    RS_CMD_QUERY_NETID = 0x30,      /* ABI 1.6: struct rs_netid_attr */
    RS_CMD_REREG_MR = 0x31,         /* ABI 1.7 (RS_CAP_REREG_MR) */
    RS_CMD_QUERY_SESSION = 0x32,    /* ABI 1.6: struct rs_session_attr */
    RS_CMD_SET_QP_DB_RECORD = 0x33, /* ABI 1.11 (RS_CAP_DB_RECORD) */
    RS_CMD_MAX = 0x35,
};

enum rs_status {
    RS_STATUS_OK = 0x00,
    RS_STATUS_BAD_OPCODE = 0x01,    /* unknown admin opcode */
    RS_STATUS_BAD_HANDLE = 0x02,    /* out of range, free or stale handle */
    RS_STATUS_BAD_PARAM = 0x03,     /* a field out of its documented range */
    RS_STATUS_NO_RESOURCES = 0x04,  /* object table full */
    RS_STATUS_BUSY = 0x05,          /* object still referenced */
    RS_STATUS_BAD_STATE = 0x06,     /* illegal QP state transition */
    RS_STATUS_BAD_ATTR_MASK = 0x07, /* required attr missing / not allowed */
    RS_STATUS_BAD_ADDR = 0x08,      /* DMA range not in guest RAM or in BARs */
    RS_STATUS_BAD_ALIGN = 0x09,     /* misaligned DMA address */
    RS_STATUS_BAD_SIZE = 0x0a,      /* ring size, buffer or MR length */
    RS_STATUS_BAD_ACCESS = 0x0b,    /* unknown or inconsistent access flags */
    RS_STATUS_BAD_PD = 0x0c,        /* reserved: cross-PD checks */
    RS_STATUS_DMA_ERROR = 0x0d,     /* reserved */
    RS_STATUS_NOT_SUPPORTED = 0x0e, /* reserved opcode or feature */
    RS_STATUS_BAD_NETID = 0x0f,     /* GID index not populated */
    RS_STATUS_EXISTS = 0x10,        /* GID slot, GSI QP or 5-tuple taken */
    RS_STATUS_STALE = 0x11,         /* ODP_RESOLVE older than an invalidation */
};

/* Command: 64 bytes. */
struct rs_cmd_hdr {
    uint8_t opcode;
    uint8_t rsvd0;
    uint16_t cmd_id;                /* echoed in the completion */
    uint32_t rsvd1;
};

struct rs_cmd_query {               /* QUERY_DEVICE, QUERY_PORT, QUERY_QP */
    uint64_t resp_addr;             /* rs_device_attr / rs_port_attr / */
    uint32_t resp_len;              /* rs_qp_attr; 8-byte aligned */
    uint32_t handle;                /* QUERY_PORT: port (1); QP: handle */
};

struct rs_cmd_destroy {             /* every DESTROY_*, DEREG_MR, DEL_GID */
    uint32_t handle;                /* DEREG_MR: lkey; DEL_GID: index */
    uint32_t rsvd;
};

struct rs_cmd_create_pd {           /* CREATE_PD; CREATE_XRCD (no flags) */
    uint32_t flags;                 /* RS_PD_F_* */
    uint32_t netid;                 /* ABI 1.6: the PD's identity (0-7) */
};

/*
 * A PD of the guest kernel: its QPs (doorbell page 0 only) may use
 * RS_LOCAL_DMA_LKEY and the REG_MR / LOCAL_INV work requests, and only it
 * may hold fast-registration MRs.  The driver never sets it for a PD of a
 * user context.
 */
#define RS_PD_F_PRIVILEGED      (1u << 0)

struct rs_cmd_create_cq {
    uint64_t ring_addr;             /* RS_RING_ALIGN aligned */
    uint8_t log_size;               /* 1 .. RS_MAX_CQ_LOG */
    uint8_t rsvd0;
    uint16_t comp_vector;           /* < device's comp vectors */
    uint32_t uar;                   /* doorbell page that may ring it */
};

struct rs_cmd_resize_cq {
    uint64_t ring_addr;
    uint32_t handle;
    uint8_t log_size;
    uint8_t rsvd0;
    uint16_t rsvd1;
    uint32_t consumer_index;        /* entries the driver has polled */
    uint32_t rsvd2;
};

enum rs_qp_type {
    RS_QPT_RC = 0,
    RS_QPT_UC = 1,
    RS_QPT_UD = 2,
    RS_QPT_GSI = 3,
    RS_QPT_DCI = 4,                 /* DC initiator (ABI 1.5) */
    RS_QPT_DCT = 5,                 /* DC target (ABI 1.5) */
    RS_QPT_XRC_INI = 6,             /* XRC send QP (ABI 1.3) */
    RS_QPT_XRC_TGT = 7,             /* XRC receive QP (ABI 1.3) */
};

/*
 * XRC (RS_CAP_XRC).  An XRC initiator (RS_QPT_XRC_INI) is an RC send queue
 * without a receive side (rq_addr, rq_log_size, srq and recv_cq 0); each
 * of its send WQEs names the XRC SRQ at the target (xrc_srqn).  An XRC
 * target (RS_QPT_XRC_TGT) has no queues, PD or CQs of its own (sq_addr,
 * rq_addr, sizes, pd, send_cq, recv_cq and srq 0) and belongs to the XRC
 * domain xrcd: it takes each request to the XRC SRQ its XRCETH names,
 * which must be of the same domain, and checks R_Keys against that SRQ's
 * PD.  An XRC SRQ's number (in the XRCETH and in rs_cqe.srqn) is the
 * index of its handle.
 */

struct rs_cmd_create_qp {
    uint64_t sq_addr;               /* RS_RING_ALIGN aligned */
    uint64_t rq_addr;               /* 0 when the QP uses an SRQ */
    uint32_t pd;
    uint32_t send_cq;
    uint32_t recv_cq;
    uint32_t srq;                   /* 0, or an SRQ handle (then rq_addr 0) */
    uint8_t qp_type;                /* enum rs_qp_type */
    uint8_t sq_log_size;            /* 1 .. RS_MAX_WQ_LOG */
    uint8_t rq_log_size;
    uint8_t max_send_sge;           /* <= RS_MAX_SGE */
    uint8_t max_recv_sge;
    uint8_t flags;                  /* RS_QP_F_* */
    uint16_t max_inline;            /* <= RS_MAX_INLINE */
    uint32_t uar;
    uint32_t session_group;         /* 0: none (QP's own session) */
    union {
        uint32_t xrcd;              /* RS_QPT_XRC_TGT: its XRC domain */
        uint32_t dc_key_lo;         /* RS_QPT_DCT: its DC access key, */
    };
    union {
        uint32_t rsvd2;             /* 0 but for a DCT: */
        uint32_t dc_key_hi;         /* the key's bits 32-63 */
    };
};

/*
 * Dynamically connected transport (RS_CAP_DC, ABI 1.5).
 *
 * A DC initiator (RS_QPT_DCI) is a reliable send queue without a receive
 * side (rq_addr, rq_log_size, srq and recv_cq 0) whose every send WQE
 * names its target: rs_send_wqe_ctrl.ah (an AH of the DCI's PD),
 * remote_qpn (the DCT number) and dc_key_lo/_hi (the DCT's access key).  The
 * device connects the DCI to one target at a time, sends as RC does
 * (PSNs, ACKs, retransmission, RNR), and disconnects when a WQE names
 * another target (once everything before it is acknowledged) or after
 * the DCI has been idle.  MODIFY_QP: RESET->INIT needs PORT (PKEY_INDEX
 * allowed); INIT->RTR PATH_MTU; RTR->RTS TIMEOUT, RETRY_CNT, RNR_RETRY,
 * SQ_PSN, MAX_QP_RD_ATOMIC; no AV, DEST_QPN or RQ_PSN.
 *
 * A DC target (RS_QPT_DCT) has no queues of its own (sq_addr, rq_addr,
 * sizes and send_cq 0): its pd, srq (required) and recv_cq take what any
 * DCI presenting its key (dc_key_lo/_hi) sends.  It goes RESET->INIT (ACCESS_FLAGS, PORT)
 * ->RTR (PATH_MTU, MIN_RNR_TIMER) and serves in RTR; its QP number is
 * the DCT number.  A connect with another key is refused and raises
 * RS_EV_DCT_KEY_VIOLATION.  Receive completions carry the DCT's number
 * in qpn and the DCI's in src_qp.
 *
 * Send opcodes on a DCI: SEND, SEND_IMM, RDMA_WRITE, RDMA_WRITE_IMM,
 * RDMA_READ, the two atomics, and the local REG_INDIRECT, REG_PATTERN,
 * LOCAL_INV.
 */

#define RS_QP_F_SIGNAL_ALL      (1u << 0)

/*
 * Doorbell records (ABI 1.11, RS_CAP_DB_RECORD), after mlx5's doorbell
 * records and virtio's notification suppression.  SET_QP_DB_RECORD, sent
 * after CREATE_QP, gives a QP (one with a send queue) the guest-physical
 * address of a struct rs_db_record: 16-byte aligned, in guest RAM, owned
 * by the QP until DESTROY_QP or a SET_QP_DB_RECORD with addr 0.  The
 * command zeroes sq_active and, for a QP with a receive queue of its own
 * (no SRQ), sets rq_active to 1 while the QP is in Init, RTR, RTS, SQD or
 * SQE (0 in Reset and Error); it does not read the producers (the driver
 * sets them first, to the values it last wrote to the doorbells).  A QP
 * moved to Reset keeps its record; the driver resets its producers as it
 * resets the rings.
 *
 * The producers have the doorbells' form: a free-running 16-bit index in
 * bits 0-15, bits 16-31 zero.  Posting (driver):
 *   write the WQEs;
 *   write barrier (udma_to_device_barrier, dma_wmb);
 *   store sq_prod (rq_prod);
 *   full barrier, store before load (atomic_thread_fence(seq_cst), smp_mb);
 *   load sq_active (rq_active); if 0, write the doorbell as without a
 *   record (RS_DB_SQ / RS_DB_RQ, the same value).
 * Device: while it has work on the send queue that it will come back to
 * by itself (more than one run's budget, a window or rate limit, an RNR
 * wait, a page fault, an ACK to come) it keeps sq_active 1 and reads
 * sq_prod each time it resumes the queue.  When the queue runs empty it
 * stores sq_active 0, then (smp_mb) reads sq_prod once more and goes on
 * if it moved, so a post that saw sq_active 1 is never lost.  The receive
 * side reads rq_prod whenever it needs a receive WQE and the producer it
 * knows says the queue is empty: rq_active stays 1 and receive posts need
 * no doorbell, until the QP enters Error (rq_active 0: posts ring the
 * doorbell, which flushes them).  An MMIO doorbell is always accepted.
 * A producer more than the ring's size ahead of the device's consumer, or
 * with bits 16-31 set, makes the QP fatal (Error, RS_EV_QP_FATAL) and
 * drops the record (both active words 0).
 */
struct rs_db_record {
    uint32_t sq_prod;               /* driver: SQ producer index */
    uint32_t sq_active;             /* device: 1, sq_prod is read */
    uint32_t rq_prod;               /* driver: RQ producer index */
    uint32_t rq_active;             /* device: 1, rq_prod is read */
};

#define RS_DB_RECORD_ALIGN      16

/* SET_QP_DB_RECORD: completes with the QP's handle. */
struct rs_cmd_set_qp_db_record {
    uint64_t addr;                  /* struct rs_db_record; 0: none */
    uint32_t handle;                /* the QP */
    uint32_t rsvd;                  /* 0 */
};

/*
 * Shared receive queue: a ring of receive WQEs (struct rs_recv_wqe_ctrl and
 * max_sge rs_sge, stride rs_rq_stride) that QPs created with its handle in
 * rs_cmd_create_qp.srq take receive WQEs from, in ring order.  The driver
 * writes the producer index to RS_DB_SRQ.
 */
struct rs_cmd_create_srq {
    uint64_t ring_addr;             /* RS_RING_ALIGN aligned */
    uint32_t pd;                    /* the PD of the QPs that use it */
    uint32_t uar;                   /* doorbell page that may ring it */
    uint8_t log_size;               /* 1 .. RS_MAX_WQ_LOG */
    uint8_t max_sge;                /* 1 .. RS_MAX_SGE */
    uint16_t rsvd0;
    uint32_t srq_limit;             /* 0: not armed; < 2^log_size */
    uint32_t xrcd;                  /* ABI 1.3: 0, or the XRC domain of */
    uint32_t cq;                    /* an XRC SRQ and its receive CQ */
};

#define RS_SRQ_ATTR_MAX_WR      (1u << 0)  /* resize: ring_addr, log_size */
#define RS_SRQ_ATTR_LIMIT       (1u << 1)  /* arm the limit event */

struct rs_cmd_modify_srq {
    uint64_t ring_addr;             /* RS_SRQ_ATTR_MAX_WR: the new ring */
    uint32_t handle;
    uint32_t attr_mask;             /* RS_SRQ_ATTR_* */
    uint32_t srq_limit;             /* RS_SRQ_ATTR_LIMIT */
    uint8_t log_size;               /* RS_SRQ_ATTR_MAX_WR */
    uint8_t rsvd0[3];
};

struct rs_cmd_modify_qp {
    uint64_t attr_addr;             /* struct rs_qp_attr */
    uint32_t handle;
    uint32_t attr_mask;             /* RS_QP_ATTR_* */
};

enum rs_access {
    RS_ACCESS_LOCAL_WRITE = 1 << 0,
    RS_ACCESS_REMOTE_WRITE = 1 << 1,
    RS_ACCESS_REMOTE_READ = 1 << 2,
    RS_ACCESS_REMOTE_ATOMIC = 1 << 3,
    RS_ACCESS_MW_BIND = 1 << 4,
    /* ABI 1.2: the rights RDMA FLUSH needs, one per placement type. */
    RS_ACCESS_FLUSH_GLOBAL = 1 << 5,
    RS_ACCESS_FLUSH_PERSISTENT = 1 << 6,    /* never granted: see the spec */
    RS_ACCESS_ALL = 0x7f,
};

/* MR translation: page list levels. */
#define RS_MR_F_PBL_INDIRECT    (1u << 0)  /* list of 4 KiB pages of PAs */
#define RS_MR_F_ODP             (1u << 1)  /* on demand: no page list */
#define RS_MR_F_FAST_REG        (1u << 2)  /* allocate in the Free state */
#define RS_MR_F_ODP_IMPLICIT    (1u << 3)  /* with ODP: all of the space */
#define RS_MAX_FRMR_PAGES       512     /* fast-registration page list */
#define RS_MR_MIN_PAGE_SHIFT    12
#define RS_MR_MAX_PAGE_SHIFT    30
#define RS_PBL_CHUNK_ENTRIES    512     /* PAs per indirect chunk page */

struct rs_cmd_reg_mr {
    uint64_t iova;
    uint64_t length;
    uint64_t pbl_addr;              /* 8-byte aligned */
    uint32_t npages;                /* pages the range [iova, +length) spans */
    uint32_t pd;
    uint8_t page_shift;
    uint8_t flags;                  /* RS_MR_F_* */
    uint16_t access;                /* enum rs_access */
    uint32_t gid_index;             /* network identity the keys live in */
};

/*
 * REREG_MR (ABI 1.7, RS_CAP_REREG_MR): change a registered MR in place.
 * handle is the MR's admin handle (DEREG_MR's); flags say what changes,
 * the fields of the others are ignored.  The MR keeps its slot, keys and
 * admin handle; the change is atomic with respect to the data path (it
 * happens between two packets).  RS_REREG_PD: a PD of the MR's network
 * identity and privilege; RS_REREG_ACCESS: access as REG_MR checks it;
 * RS_REREG_TRANS: a new translation given as REG_MR gives one (iova,
 * length, pbl_addr, npages, page_shift, mr_flags RS_MR_F_PBL_INDIRECT or
 * 0).  Refused (nothing changes) with windows bound to the MR (BUSY), for
 * a fast-registration MR, an indirect or pattern key, and a translation
 * change of an ODP MR (NOT_SUPPORTED: register anew).
 */
#define RS_REREG_TRANS          (1u << 0)  /* = IB_MR_REREG_TRANS */
#define RS_REREG_PD             (1u << 1)  /* = IB_MR_REREG_PD */
#define RS_REREG_ACCESS         (1u << 2)  /* = IB_MR_REREG_ACCESS */
#define RS_REREG_ALL            0x7u

struct rs_cmd_rereg_mr {
    uint32_t handle;                /* the MR's admin handle */
    uint32_t flags;                 /* RS_REREG_*, at least one */
    uint64_t iova;                  /* RS_REREG_TRANS: as REG_MR's */
    uint64_t length;
    uint64_t pbl_addr;
    uint32_t npages;
    uint32_t pd;                    /* RS_REREG_PD */
    uint8_t page_shift;             /* RS_REREG_TRANS */
    uint8_t mr_flags;               /* RS_REREG_TRANS: RS_MR_F_PBL_INDIRECT */
    uint16_t access;                /* RS_REREG_ACCESS: enum rs_access */
    uint32_t rsvd;                  /* 0 */
};

/*
 * On-demand paging (ABI 1.4).  An ODP MR (REG_MR with RS_MR_F_ODP,
 * page_shift 12, no page list) starts with no translation; an access to a
 * page it does not have raises RS_EV_ODP_PAGE_FAULT and waits.
 * ODP_RESOLVE hands the device up to RS_ODP_RESOLVE_MAX_PAGES pages from
 * va on: each list entry is a 4 KiB-aligned guest physical address with
 * RS_ODP_PAGE_READ (and RS_ODP_PAGE_WRITE if the page may be written), or
 * 0 to leave the page as it is.  seq is the number of ODP_INVALIDATE
 * commands the driver issued for the key (mod 2^32); a resolve built
 * before the latest invalidation is refused with RS_STATUS_STALE.  With
 * RS_ODP_RESOLVE_F_FAIL (pbl_addr 0) the npages from va cannot be
 * mapped: the accesses waiting for them fail.
 */
#define RS_ODP_PAGE_READ        (1ull << 0)
#define RS_ODP_PAGE_WRITE       (1ull << 1)
#define RS_ODP_RESOLVE_MAX_PAGES 512
#define RS_ODP_RESOLVE_F_FAIL   (1u << 0)

struct rs_cmd_odp_resolve {
    uint32_t key;                   /* the ODP MR's lkey */
    uint32_t seq;
    uint64_t va;                    /* 4 KiB aligned */
    uint64_t pbl_addr;              /* npages 8-byte entries, 8-byte aligned */
    uint32_t npages;                /* 1 - RS_ODP_RESOLVE_MAX_PAGES */
    uint32_t flags;                 /* RS_ODP_RESOLVE_F_* */
};

/*
 * ODP_INVALIDATE: the device drops its translation of the pages of
 * [va, va + length) (whole pages) of the key and counts one invalidation
 * (result1: the new count).  When it completes, the device reads and
 * writes none of the old pages any more.
 */
struct rs_cmd_odp_invalidate {
    uint32_t key;
    uint32_t rsvd;
    uint64_t va;
    uint64_t length;
};

/*
 * QUERY_STATS: struct rs_cmd_query's addr receives these counters, as
 * many bytes of them as resp_len asks for (at least RS_DEVICE_STATS_V14,
 * at most the whole structure): a driver of ABI 1.4 or 1.5 gets its 64.
 */
struct rs_device_stats {
    uint64_t odp_faults;            /* page-fault events raised */
    uint64_t odp_resolved_pages;    /* pages ODP_RESOLVE installed */
    uint64_t odp_invalidations;     /* ODP_INVALIDATE commands */
    uint64_t odp_fault_fails;       /* faults failed or timed out */
    uint64_t odp_pauses_sent;       /* page-fault pauses sent to peers */
    uint64_t odp_pauses_rcvd;       /* pauses peers sent our requesters */
    uint64_t odp_resumes_rcvd;
    uint64_t rnr_naks_rcvd;
    /* ABI 1.6 (RS_CAP_DEVICE_COUNTERS) */
    uint64_t rnr_naks_sent;
    uint64_t seq_naks_sent;         /* PSN sequence error NAKs */
    uint64_t seq_naks_rcvd;
    uint64_t retransmits;           /* go-back-N resends after a loss */
    uint64_t ack_timeouts;          /* local ACK timeouts */
    uint64_t icrc_drops;            /* packets received with a bad ICRC */
    uint64_t tx_packets;            /* RoCE packets sent */
    uint64_t tx_bytes;              /* their Ethernet frames' bytes */
    uint64_t rx_packets;            /* RoCE packets received */
    uint64_t rx_bytes;
    uint64_t path_failovers;        /* QPs moved to another session */
    /* ABI 1.8: the bytes of data buffers (keys, local DMA addresses) */
    uint64_t ram_dma_read_bytes;    /* read from guest RAM */
    uint64_t ram_dma_write_bytes;   /* written to guest RAM */
    uint64_t peer_dma_read_bytes;   /* read from peer devices' BARs */
    uint64_t peer_dma_write_bytes;  /* written to peer devices' BARs */
    uint64_t data_dma_refused;      /* neither RAM nor an allowed peer */
    /* ABI 1.9 (RS_CAP_VLAN) */
    uint64_t vlan_rx_dropped;       /* RoCE frames on a VLAN without GID */
    /* ABI 1.10 (RS_CAP_ECN) */
    uint64_t ecn_ce_received;       /* packets for a QP marked CE */
    uint64_t cnp_sent;              /* CNPs sent for them */
    uint64_t cnp_received;          /* CNPs for one of our QPs */
    uint64_t cnp_ignored;           /* CNPs for no QP, or failing checks */
    uint64_t dcqcn_rate_reductions; /* CNPs that lowered a QP's rate */
    /* ABI 1.11 (RS_CAP_DB_RECORD) */
    uint64_t db_mmio_writes;        /* SQ, RQ and SRQ doorbell writes */
    uint64_t db_record_pickups;     /* WQEs taken from a doorbell record */
};

#define RS_DEVICE_STATS_V14     64  /* bytes of ABI 1.4 and 1.5 */
#define RS_DEVICE_STATS_V16     152 /* bytes of ABI 1.6 and 1.7 */
#define RS_DEVICE_STATS_V18     192 /* bytes of ABI 1.8 */
#define RS_DEVICE_STATS_V19     200 /* bytes of ABI 1.9 */
#define RS_DEVICE_STATS_V110    240 /* bytes of ABI 1.10 */
#define RS_DEVICE_STATS_V111    256 /* bytes of ABI 1.11 */

/*
 * A memory window of PD pd in the key table of gid_index's network
 * identity; it takes a key (an MR slot) from the table MRs use.  The
 * completion's handle and result1 are its rkey.  DEALLOC_MW takes the
 * window's rkey (struct rs_cmd_destroy); its tag is not checked, as binds
 * change it.
 */
#define RS_MW_TYPE_1            1
#define RS_MW_TYPE_2            2       /* type 2B: bound to a QP */

struct rs_cmd_alloc_mw {
    uint32_t pd;
    uint32_t gid_index;
    uint8_t type;                   /* RS_MW_TYPE_* */
    uint8_t rsvd0[3];
    uint32_t rsvd1;
};

struct rs_cmd_create_ah {
    uint8_t dgid[16];
    uint8_t dmac[6];
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint32_t pd;
    uint32_t flow_label;            /* RS_AV_FLOW_LABEL_MASK, RS_AV_PRIO */
    uint32_t gid_index;             /* source network identity */
    uint32_t rsvd;
};

struct rs_cmd_create_session {
    uint8_t dst_ip[16];             /* IPv4 as ::ffff:a.b.c.d */
    uint8_t dmac[6];
    uint16_t src_port;              /* UDP source port, >= 1024 */
    uint16_t dst_port;              /* 4791 for RoCEv2 */
    uint16_t rsvd0;
    uint32_t gid_index;             /* source IP = that GID */
    uint32_t rsvd1;
};

#define RS_MAX_GROUP_SESSIONS   8

struct rs_cmd_create_session_group {
    uint32_t session[RS_MAX_GROUP_SESSIONS];
    uint8_t nsessions;              /* 1 .. RS_MAX_GROUP_SESSIONS */
    uint8_t policy;                 /* enum rs_group_policy */
    uint16_t rsvd0;
    uint32_t rsvd1;
};

/*
 * ROUND_ROBIN spreads each QP's messages over the group's live sessions
 * by flowlets, ACTIVE_BACKUP uses the first live one; since ABI 1.6
 * (RS_CAP_MULTIPATH) a session that stops carrying ACKs is failed over
 * (docs/specs: "Multipath session groups").
 */
enum rs_group_policy {
    RS_GROUP_ROUND_ROBIN = 0,       /* spread messages over the sessions */
    RS_GROUP_ACTIVE_BACKUP = 1,
};

/*
 * QUERY_SESSION (ABI 1.6): a session's 5-tuple, path state and counters
 * (struct rs_cmd_query: handle is the session's).
 */
enum rs_session_state {
    RS_SESSION_UP = 0,
    RS_SESSION_DOWN = 1,            /* failed; tried again after holddown */
};

struct rs_session_attr {
    uint8_t dst_ip[16];
    uint8_t dmac[6];
    uint16_t src_port;
    uint16_t dst_port;
    uint8_t state;                  /* enum rs_session_state */
    uint8_t rsvd0;
    uint32_t gid_index;
    uint32_t groups;                /* session groups it is in */
    uint32_t rsvd1;
    uint64_t tx_packets;            /* request packets sent on it */
    uint64_t failovers;             /* times a QP found it failed */
    uint64_t recoveries;            /* times it carried ACKs again */
    uint64_t migrated;              /* QPs moved onto it by a failover */
    uint64_t ack_age_us;            /* since its last ACK; ~0: none yet */
    uint64_t down_age_us;           /* DOWN: since it failed; else 0 */
    uint64_t rsvd[2];
};

enum rs_gid_type {
    RS_GID_ROCE_V2_IPV4 = 0,
    RS_GID_ROCE_V2_IPV6 = 1,
};

/*
 * ADD_GID's vlan (ABI 1.9, RS_CAP_VLAN): 0, the GID is on the untagged
 * network, or RS_GID_VLAN_VALID | VID (0 - 4094): the GID is on that
 * 802.1Q VLAN (a Linux VLAN interface's address).  RoCE frames from the
 * GID leave tagged with its VID; received tagged RoCE frames are taken
 * only for a GID of their destination address on their VID (and
 * untagged ones only for an untagged GID); others are dropped and
 * counted (vlan_rx_dropped).  VID 4095, or bits 12-14 set, is refused
 * with RS_STATUS_BAD_PARAM.
 */
#define RS_GID_VLAN_VALID       0x8000
#define RS_GID_VLAN_VID_MASK    0x0fff
#define RS_VLAN_VID_MAX         4094

struct rs_cmd_add_gid {
    uint8_t gid[16];
    uint32_t index;                 /* < max GIDs */
    uint8_t type;                   /* enum rs_gid_type */
    uint8_t rsvd0[3];
    /*
     * Ignored since ABI 1.6 (the host assigns identities, see
     * RS_CAP_HOST_NETID); still refused above 24 bits.
     */
    uint32_t vni;
    uint16_t vlan;                  /* ABI 1.9: 0 or RS_GID_VLAN_VALID | VID */
    uint16_t rsvd1;
};

/*
 * Network identities (RS_CAP_HOST_NETID, ABI 1.6).  The host configures
 * up to RS_MAX_NETIDS identities (device properties vni and netids, or
 * qom-set at run time); identity 0 is the default.  ADD_GID puts a GID in
 * the identity whose subnet contains its address (else 0) and completes
 * with result1 = RS_NETID_RESULT(identity, VNI).  Each identity has its
 * own key table: a key allocated for a PD of identity n (CREATE_PD's
 * netid) resolves only in identity n, remote accesses in the identity of
 * the GID they arrive on.  QUERY_NETID (query.handle: the identity)
 * writes struct rs_netid_attr; RS_EV_NETID_CHANGED (handle: the identity,
 * data: its VNI) tells that the host changed an identity.
 */
#define RS_MAX_NETIDS           8
#define RS_NETID_RESULT(n, vni) (((uint32_t)(vni) << 8) | (n))
#define RS_NETID_F_VALID        (1u << 0)   /* the identity is configured */

struct rs_netid_attr {
    uint32_t vni;                   /* 24 bits */
    uint8_t flags;                  /* RS_NETID_F_* */
    uint8_t prefix_len;             /* of prefix (GID form: IPv4 is 96+) */
    uint16_t ngids;                 /* GIDs in the identity */
    uint8_t prefix[16];             /* subnet, IPv4 as ::ffff:a.b.c.d */
    uint32_t nkeys;                 /* keys in its table */
    uint32_t npds;                  /* PDs of the identity */
};

/*
 * LAN path: the adapter is also an Ethernet NIC.  One TX and one RX ring
 * of rs_lan_desc; the driver posts descriptors and writes the
 * producer index to RS_DB_LAN_TX / RS_DB_LAN_RX of doorbell page 0; the
 * device writes each descriptor back with the phase bit when done and
 * signals the ring's MSI-X vector.
 */
enum rs_lan_queue_type {
    RS_LAN_TXQ = 0,
    RS_LAN_RXQ = 1,
};

struct rs_cmd_create_lan_queue {
    uint64_t ring_addr;             /* RS_RING_ALIGN aligned */
    uint8_t type;                   /* enum rs_lan_queue_type */
    uint8_t log_size;               /* 1 .. RS_MAX_LAN_LOG */
    uint16_t vector;                /* MSI-X vector, < NUM_MSIX */
    uint32_t rsvd;
};

#define RS_LAN_RX_PROMISC       (1u << 0)
#define RS_LAN_RX_ALLMULTI      (1u << 1)
#define RS_LAN_RX_BROADCAST     (1u << 2)

struct rs_cmd_set_lan_rx_mode {
    uint32_t flags;                 /* RS_LAN_RX_* */
    uint32_t rsvd;
};

/*
 * UD multicast (RS_CAP_MCAST): attach a UD QP to a multicast group, or
 * detach it.  The GID is an IPv4-mapped 224.0.0.0/4 or an ff00::/8
 * address; RoCEv2 UD packets to it with DQPN RS_MCAST_QPN are delivered
 * to every QP attached to it.
 */
struct rs_cmd_mcast {               /* ATTACH_MCAST, DETACH_MCAST */
    uint8_t gid[16];
    uint32_t qp;                    /* UD QP handle */
    uint32_t rsvd;
};

#define RS_MCAST_QPN            0xffffffu

/*
 * Indirect and pattern memory keys (ABI 1.5).  Such a key is an entry of
 * the MR key table (lkey == rkey, DEREG_MR frees it) whose zero-based
 * address space [0, length) is made of other keys' memory:
 *
 * - indirect (RS_CAP_INDIRECT_MKEY): nentries struct rs_mkey_entry, in
 *   order; length is the sum of their lengths;
 * - pattern (RS_CAP_PATTERN_MKEY): repeat times the block of nentries
 *   struct rs_pattern_entry; each repetition takes bytes_count bytes of
 *   each entry in order, and entry i's n-th block starts at
 *   addr + n * (bytes_count + bytes_skip); length is repeat times the sum
 *   of the bytes_count.
 *
 * An entry's key is resolved at every access, in the key table of the
 * key's own network identity: it must be valid, of the key's PD, grant
 * the right the access needs, and cover the range.  An entry may name an
 * indirect or pattern key itself, to RS_MKEY_MAX_NEST levels below the
 * key an access names; deeper, the access fails as a protection error.
 */
#define RS_MKEY_MAX_ENTRIES     256
#define RS_MKEY_MAX_NEST        2

struct rs_mkey_entry {              /* 16 bytes, the layout of rs_sge */
    uint64_t addr;
    uint32_t length;                /* >= 1 */
    uint32_t key;
};

struct rs_pattern_entry {           /* 24 bytes */
    uint64_t addr;
    uint32_t key;
    uint32_t bytes_count;           /* >= 1 */
    uint32_t bytes_skip;
    uint32_t rsvd;
};

/*
 * REG_INDIRECT_MKEY, REG_PATTERN_MKEY: a key of PD pd in gid_index's key
 * table with the rights access, its entries read from list_addr
 * (nentries 1 - RS_MKEY_MAX_ENTRIES; pattern: repeat >= 1, indirect: 0).
 * With RS_MKEY_F_EMPTY (list_addr 0, repeat 0) the key is made in the
 * Free state with room for nentries entries: a RS_WR_REG_INDIRECT or
 * RS_WR_REG_PATTERN work request (as the command's opcode) fills it and
 * LOCAL_INV returns it to Free.  The completion's handle and result1 are
 * the key.
 */
#define RS_MKEY_F_EMPTY         (1u << 0)

struct rs_cmd_reg_mkey_list {
    uint64_t list_addr;             /* 8-byte aligned */
    uint32_t pd;
    uint32_t gid_index;
    uint16_t nentries;
    uint16_t access;                /* enum rs_access, no MW_BIND */
    uint32_t repeat;
    uint32_t flags;                 /* RS_MKEY_F_* */
    uint32_t rsvd;
};

struct rs_admin_cmd {
    struct rs_cmd_hdr hdr;
    union {
        struct rs_cmd_query query;
        struct rs_cmd_destroy destroy;
        struct rs_cmd_create_pd create_pd;
        struct rs_cmd_create_cq create_cq;
        struct rs_cmd_resize_cq resize_cq;
        struct rs_cmd_create_qp create_qp;
        struct rs_cmd_modify_qp modify_qp;
        struct rs_cmd_create_srq create_srq;
        struct rs_cmd_modify_srq modify_srq;
        struct rs_cmd_reg_mr reg_mr;
        struct rs_cmd_rereg_mr rereg_mr;
        struct rs_cmd_alloc_mw alloc_mw;
        struct rs_cmd_create_ah create_ah;
        struct rs_cmd_create_session create_session;
        struct rs_cmd_create_session_group create_group;
        struct rs_cmd_add_gid add_gid;
        struct rs_cmd_create_lan_queue create_lan_queue;
        struct rs_cmd_set_lan_rx_mode set_lan_rx_mode;
        struct rs_cmd_mcast mcast;
        struct rs_cmd_odp_resolve odp_resolve;
        struct rs_cmd_odp_invalidate odp_invalidate;
        struct rs_cmd_reg_mkey_list reg_mkey;
        struct rs_cmd_set_qp_db_record set_db_record;
        uint8_t raw[56];
    };
};

/* Admin completion: 16 bytes; the owner bit flips on every ring wrap. */
#define RS_ACQE_PHASE           (1u << 0)

struct rs_admin_cqe {
    uint16_t cmd_id;
    uint8_t status;                 /* enum rs_status */
    uint8_t flags;                  /* RS_ACQE_PHASE */
    uint32_t handle;                /* created object, or lkey for REG_MR */
    uint32_t result1;               /* REG_MR: rkey; CREATE_QP: QP number; */
                                    /* MODIFY_SRQ resize: WQEs moved; */
                                    /* ADD_GID: RS_NETID_RESULT (ABI 1.6) */
    /*
     * ABI 1.6: a key of identity 0 has handle == result1 (the lkey and
     * rkey) as before; a key of another identity is result1, and handle
     * is the admin handle DEREG_MR, DEALLOC_MW, ODP_RESOLVE and
     * ODP_INVALIDATE take and RS_EV_ODP_PAGE_FAULT reports.
     */
    uint32_t rsvd;
};

/* ------------------------------------------------------------------ */
/* Attributes returned by QUERY_* and passed to MODIFY_QP             */
/* ------------------------------------------------------------------ */

struct rs_device_attr {
    uint64_t max_mr_size;
    uint64_t page_size_cap;
    uint32_t abi_version;
    uint32_t caps;                  /* RS_CAP_* */
    uint32_t max_qp;
    uint32_t max_qp_wr;
    uint32_t max_sge;
    uint32_t max_cq;
    uint32_t max_cqe;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_ah;
    uint32_t max_qp_rd_atom;
    uint32_t max_sessions;
    uint32_t max_session_groups;
    uint32_t max_gids;
    uint32_t max_msg_size;
    uint32_t max_inline;
    uint32_t num_comp_vectors;
    uint32_t num_db_pages;
    uint8_t mac[6];
    uint16_t rsvd0;
    uint32_t max_srq;               /* ABI 1.1; 0 before */
    uint32_t max_srq_wr;
    uint32_t max_srq_sge;
    uint32_t max_mw;                /* ABI 1.2: windows and MRs share */
                                    /* max_mr keys; 0 without RS_CAP_MW */
    uint32_t max_mcast_grp;         /* ABI 1.2: multicast groups */
    uint32_t max_mcast_qp_attach;   /* ABI 1.2: QPs per group */
    uint32_t max_xrcds;             /* ABI 1.3: 0 without RS_CAP_XRC */
    uint32_t max_odp_pages;         /* ABI 1.4: ODP translation entries */
    /*
     * ABI 1.5: the device writes min(resp_len, sizeof) bytes of this
     * structure, at least the 128 bytes before this line.
     */
    uint32_t max_dc_contexts;       /* DCIs all DCTs serve at once */
    uint32_t max_mkey_entries;      /* entries of an indirect/pattern key */
    uint32_t max_mkey_nest;         /* RS_MKEY_MAX_NEST */
    uint32_t dc_idle_us;            /* a DCI disconnects after this idle */
    uint32_t rsvd1[4];
};

enum rs_port_state {
    RS_PORT_DOWN = 1,
    RS_PORT_INIT = 2,
    RS_PORT_ARMED = 3,
    RS_PORT_ACTIVE = 4,
};

enum rs_mtu {
    RS_MTU_256 = 1,
    RS_MTU_512 = 2,
    RS_MTU_1024 = 3,
    RS_MTU_2048 = 4,
    RS_MTU_4096 = 5,
};

struct rs_port_attr {
    uint8_t state;                  /* enum rs_port_state */
    uint8_t max_mtu;                /* enum rs_mtu */
    uint8_t active_mtu;
    uint8_t phys_state;             /* 5 = LinkUp, 3 = Disabled */
    uint32_t gid_tbl_len;
    uint32_t pkey_tbl_len;
    uint32_t active_speed_mbps;
    uint32_t rsvd[12];
};

enum rs_qp_state {
    RS_QPS_RESET = 0,
    RS_QPS_INIT = 1,
    RS_QPS_RTR = 2,
    RS_QPS_RTS = 3,
    RS_QPS_SQD = 4,
    RS_QPS_SQE = 5,
    RS_QPS_ERR = 6,
};

/* MODIFY_QP attribute mask: the IBTA/ib_verbs bits, plus our own. */
enum rs_qp_attr_mask {
    RS_QP_ATTR_STATE = 1 << 0,
    RS_QP_ATTR_CUR_STATE = 1 << 1,
    RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY = 1 << 2,
    RS_QP_ATTR_ACCESS_FLAGS = 1 << 3,
    RS_QP_ATTR_PKEY_INDEX = 1 << 4,
    RS_QP_ATTR_PORT = 1 << 5,
    RS_QP_ATTR_QKEY = 1 << 6,
    RS_QP_ATTR_AV = 1 << 7,
    RS_QP_ATTR_PATH_MTU = 1 << 8,
    RS_QP_ATTR_TIMEOUT = 1 << 9,
    RS_QP_ATTR_RETRY_CNT = 1 << 10,
    RS_QP_ATTR_RNR_RETRY = 1 << 11,
    RS_QP_ATTR_RQ_PSN = 1 << 12,
    RS_QP_ATTR_MAX_QP_RD_ATOMIC = 1 << 13,
    RS_QP_ATTR_ALT_PATH = 1 << 14,
    RS_QP_ATTR_MIN_RNR_TIMER = 1 << 15,
    RS_QP_ATTR_SQ_PSN = 1 << 16,
    RS_QP_ATTR_MAX_DEST_RD_ATOMIC = 1 << 17,
    RS_QP_ATTR_PATH_MIG_STATE = 1 << 18,
    RS_QP_ATTR_CAP = 1 << 19,
    RS_QP_ATTR_DEST_QPN = 1 << 20,
    RS_QP_ATTR_SESSION_GROUP = 1 << 28,
};

/*
 * An address vector's flow_label word (struct rs_ah_attr, struct
 * rs_cmd_create_ah): the IPv6 flow label in bits 0-19; since ABI 1.9
 * (RS_CAP_VLAN) the Ethernet priority (802.1Q PCP, 0 - 7) in bits 24-26,
 * which tagged frames (a source GID on a VLAN) carry.  Other bits are
 * refused with RS_STATUS_BAD_PARAM.
 */
#define RS_AV_FLOW_LABEL_MASK   0x000fffffu
#define RS_AV_PRIO_SHIFT        24
#define RS_AV_PRIO_MASK         (7u << RS_AV_PRIO_SHIFT)
#define RS_AV_PRIO(fl)          (((fl) & RS_AV_PRIO_MASK) >> RS_AV_PRIO_SHIFT)

struct rs_ah_attr {
    uint8_t dgid[16];
    uint8_t dmac[6];
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint32_t flow_label;            /* RS_AV_FLOW_LABEL_MASK, RS_AV_PRIO */
    uint32_t gid_index;
};

struct rs_qp_attr {
    uint8_t qp_state;               /* enum rs_qp_state */
    uint8_t cur_qp_state;
    uint8_t path_mtu;               /* enum rs_mtu */
    uint8_t port_num;               /* 1 */
    uint32_t qkey;
    uint32_t rq_psn;                /* 24 bits */
    uint32_t sq_psn;                /* 24 bits */
    uint32_t dest_qp_num;           /* 24 bits */
    uint16_t access_flags;          /* enum rs_access */
    uint16_t pkey_index;            /* 0 */
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t min_rnr_timer;          /* 0 .. 31 */
    uint8_t timeout;                /* 0 .. 31 */
    uint8_t retry_cnt;              /* 0 .. 7 */
    uint8_t rnr_retry;              /* 0 .. 7 */
    uint8_t sq_draining;            /* query only */
    uint8_t en_sqd_async_notify;
    uint32_t session_group;
    struct rs_ah_attr ah;
    uint32_t qp_type;               /* query only */
    uint32_t rsvd[6];
};

#define RS_MAX_RD_ATOMIC        16
#define RS_MAX_SGE              16
#define RS_MAX_INLINE           256

/* ------------------------------------------------------------------ */
/* Asynchronous event queue                                           */
/* ------------------------------------------------------------------ */

enum rs_event_type {
    RS_EV_QP_FATAL = 0x01,
    RS_EV_QP_REQ_ERR = 0x02,
    RS_EV_QP_ACCESS_ERR = 0x03,
    RS_EV_QP_COMM_EST = 0x04,
    RS_EV_QP_SQ_DRAINED = 0x05,
    RS_EV_QP_LAST_WQE_REACHED = 0x06,
    RS_EV_CQ_ERR = 0x07,            /* CQ overflow or unreachable ring */
    RS_EV_PORT_ACTIVE = 0x08,
    RS_EV_PORT_ERR = 0x09,
    RS_EV_DEVICE_FATAL = 0x0a,
    RS_EV_SRQ_LIMIT_REACHED = 0x0b, /* handle: SRQ; the limit is disarmed */
    /*
     * ABI 1.4: handle: the ODP MR's lkey; data: the first page (4 KiB
     * aligned) of the range; info: its pages (1 - 512); flags
     * RS_EQE_ODP_WRITE if the access writes.
     */
    RS_EV_ODP_PAGE_FAULT = 0x10,
    /* Raised by later features. */
    RS_EV_MIGRATION_NOTICE = 0x11,
    /* ABI 1.5: handle: the DCT; data: the DCI's QP number. */
    RS_EV_DCT_KEY_VIOLATION = 0x12,
    /*
     * ABI 1.6: a QP's traffic moved to another session of its group
     * because the one it used failed.  handle: the QP; data: bits 0-31
     * the session handle it moved to, bits 32-63 the one it left.
     */
    RS_EV_PATH_MIGRATED = 0x13,
    /* ABI 1.6: handle: the identity; data: its VNI (see QUERY_NETID). */
    RS_EV_NETID_CHANGED = 0x15,
};

#define RS_EQE_PHASE            (1u << 0)
#define RS_EQE_ODP_WRITE        (1u << 1)

struct rs_event {
    uint8_t type;                   /* enum rs_event_type */
    uint8_t flags;                  /* RS_EQE_PHASE, RS_EQE_ODP_WRITE */
    uint16_t info;                  /* ODP_PAGE_FAULT: pages; else 0 */
    uint32_t handle;                /* QP / CQ handle, port number */
    uint64_t data;
};

/* ------------------------------------------------------------------ */
/* Completion queue entries and work queue entries (data path)        */
/* ------------------------------------------------------------------ */

#define RS_CQE_OWNER            (1u << 0)

enum rs_wc_status {
    RS_WC_SUCCESS = 0,
    RS_WC_LOC_LEN_ERR = 1,
    RS_WC_LOC_QP_OP_ERR = 2,
    RS_WC_LOC_PROT_ERR = 4,
    RS_WC_WR_FLUSH_ERR = 5,
    RS_WC_MW_BIND_ERR = 6,
    RS_WC_BAD_RESP_ERR = 7,
    RS_WC_LOC_ACCESS_ERR = 8,
    RS_WC_REM_INV_REQ_ERR = 9,
    RS_WC_REM_ACCESS_ERR = 10,
    RS_WC_REM_OP_ERR = 11,
    RS_WC_RETRY_EXC_ERR = 12,
    RS_WC_RNR_RETRY_EXC_ERR = 13,
    RS_WC_GENERAL_ERR = 21,
};

struct rs_cqe {                     /* 32 bytes */
    uint64_t wr_id;
    uint32_t byte_len;
    uint32_t imm_or_inv;
    uint32_t qpn;
    uint32_t src_qp;                /* UD */
    uint8_t opcode;                 /* enum rs_wr_opcode, RECV for RQ */
    uint8_t status;                 /* enum rs_wc_status */
    uint8_t wc_flags;               /* RS_WC_F_* */
    uint8_t owner;                  /* RS_CQE_OWNER, flips per wrap */
    uint32_t srqn;                  /* receive on an XRC SRQ: its number */
};                                  /* (RS_WC_F_VLAN: the 802.1Q TCI) */

#define RS_WC_F_IMM             (1u << 0)
#define RS_WC_F_INV             (1u << 1)
#define RS_WC_F_GRH             (1u << 2)
/* With RS_WC_F_GRH (ABI 1.7): the datagram came over IPv4 or IPv6. */
#define RS_WC_F_IPV4            (1u << 3)
#define RS_WC_F_IPV6            (1u << 4)
/*
 * ABI 1.9: a UD or GSI receive of a privileged (kernel) QP that came
 * 802.1Q-tagged: srqn holds the tag's TCI (VID in bits 0-11, PCP in
 * 13-15), what the kernel needs to find the GID to answer from
 * (IB_WC_WITH_VLAN).  Never on other QPs' receives.
 */
#define RS_WC_F_VLAN            (1u << 5)

enum rs_wr_opcode {
    RS_WR_SEND = 0x00,
    RS_WR_SEND_IMM = 0x01,
    RS_WR_SEND_INV = 0x02,
    RS_WR_RDMA_WRITE = 0x03,
    RS_WR_RDMA_WRITE_IMM = 0x04,
    RS_WR_RDMA_READ = 0x05,
    RS_WR_ATOMIC_CMP_SWP = 0x06,
    RS_WR_ATOMIC_FETCH_ADD = 0x07,
    RS_WR_LOCAL_INV = 0x08,
    RS_WR_REG_MR = 0x09,
    RS_WR_BIND_MW = 0x0a,           /* ABI 1.2 (RS_CAP_MW) */
    RS_WR_FLUSH = 0x0b,             /* ABI 1.2 (RS_CAP_FLUSH) */
    RS_WR_ATOMIC_WRITE = 0x0c,      /* ABI 1.2 (RS_CAP_ATOMIC_WRITE) */
    RS_WR_REG_INDIRECT = 0x0d,      /* ABI 1.5 (RS_CAP_INDIRECT_MKEY) */
    RS_WR_REG_PATTERN = 0x0e,       /* ABI 1.5 (RS_CAP_PATTERN_MKEY) */
    RS_WR_RECV = 0x80,              /* completion opcode of a receive */
    RS_WR_RECV_RDMA_IMM = 0x81,
};

#define RS_WQE_F_SIGNALED       (1u << 0)
#define RS_WQE_F_SOLICITED      (1u << 1)
#define RS_WQE_F_FENCE          (1u << 2)
#define RS_WQE_F_INLINE         (1u << 3)
/*
 * UD/GSI on a privileged QP: the address vector is the struct rs_ah_attr
 * at DMA address swap (ah is ignored), so that a kernel AH created in
 * atomic context is usable before its CREATE_AH has run.
 */
#define RS_WQE_F_AV_ADDR        (1u << 4)

struct rs_sge {                     /* 16 bytes */
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/*
 * Send WQE: 64-byte control segment followed by max_send_sge rs_sge (or
 * inline data); the stride is a power of two chosen at CREATE_QP.
 */
struct rs_send_wqe_ctrl {
    uint64_t wr_id;
    uint8_t opcode;                 /* enum rs_wr_opcode */
    uint8_t flags;                  /* RS_WQE_F_* */
    uint8_t num_sge;
    uint8_t rsvd0;
    uint32_t imm_or_inv;
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t inline_len;
    uint64_t compare_add;           /* atomics */
    uint64_t swap;
    uint32_t ah;                    /* UD, DCI: AH handle */
    uint32_t remote_qpn;            /* UD; DCI: the DCT number */
    union {
        uint32_t remote_qkey;       /* UD */
        uint32_t dc_key_lo;         /* DCI: the DCT's access key, */
    };
    union {
        uint32_t xrc_srqn;          /* XRC_INI: the target's XRC SRQ */
        uint32_t dc_key_hi;         /* DCI: the key's bits 32-63 */
    };
};

/*
 * RS_WR_FLUSH (RC, no SGEs): remote_addr, rkey; compare_add the length of
 * the range (at most 2^32 - 1; ignored when the selectivity is the whole
 * MR); imm_or_inv the FETH value, placement type in bits 3-0, selectivity
 * in bits 5-4.  RS_WR_ATOMIC_WRITE (RC, no SGEs): remote_addr (8-byte
 * aligned), rkey; compare_add holds the 8 bytes to write, in memory order.
 */
#define RS_FLUSH_PLT_GLOBAL     (1u << 0)  /* global visibility */
#define RS_FLUSH_PLT_PERSISTENT (1u << 1)  /* persistence: not offered */
#define RS_FLUSH_PLT_MASK       0xfu
#define RS_FLUSH_SEL_SHIFT      4
#define RS_FLUSH_SEL_MASK       (3u << RS_FLUSH_SEL_SHIFT)
#define RS_FLUSH_SEL_RANGE      0       /* the range the RETH names */
#define RS_FLUSH_SEL_MR         1       /* the whole MR of the rkey */

/*
 * RS_WR_REG_MR: the control segment read with this layout (no SGEs).
 * Binds key (the MR's index, the consumer's tag), iova, length, access
 * and a page list of npages guest DMA addresses of 2^page_shift pages to
 * a fast-registration MR in the Free state.
 */
struct rs_send_wqe_reg_mr {
    uint64_t wr_id;
    uint8_t opcode;                 /* RS_WR_REG_MR */
    uint8_t flags;                  /* RS_WQE_F_*, never INLINE */
    uint8_t num_sge;                /* 0 */
    uint8_t page_shift;             /* RS_MR_MIN_PAGE_SHIFT .. MAX */
    uint32_t key;
    uint64_t iova;
    uint64_t length;
    uint64_t pbl_addr;              /* u64 page addresses, 8-byte aligned */
    uint32_t npages;                /* pages [iova, +length) spans */
    uint16_t access;                /* enum rs_access */
    uint16_t rsvd0;
    uint32_t rsvd1[4];
};

/*
 * RS_WR_BIND_MW: the control segment read with this layout (no SGEs).
 * Binds the window mw_rkey names to [addr, +length) of the MR mr_lkey
 * names, with the remote rights access, under new_rkey (the window's
 * index, a new tag).  length 0 unbinds a type 1 window.
 */
struct rs_send_wqe_bind_mw {
    uint64_t wr_id;
    uint8_t opcode;                 /* RS_WR_BIND_MW */
    uint8_t flags;                  /* RS_WQE_F_*, never INLINE */
    uint8_t num_sge;                /* 0 */
    uint8_t rsvd0;
    uint32_t mw_rkey;               /* the window's current rkey */
    uint64_t addr;
    uint64_t length;
    uint32_t mr_lkey;
    uint32_t new_rkey;
    uint16_t access;                /* remote rights, FLUSH_GLOBAL */
    uint16_t rsvd1;
    uint32_t rsvd2[5];
};

/*
 * RS_WR_REG_INDIRECT, RS_WR_REG_PATTERN: the control segment read with
 * this layout; nentries struct rs_mkey_entry / rs_pattern_entry follow it
 * in the WQE (at most (WQE stride - 64) / entry size of them, and at most
 * the room the key was made with).  Fills the key made with
 * RS_MKEY_F_EMPTY whose index key names, now in the Free state, of the
 * QP's PD and of the same kind, with the tag key gives.
 */
struct rs_send_wqe_reg_mkey {
    uint64_t wr_id;
    uint8_t opcode;                 /* RS_WR_REG_INDIRECT / _PATTERN */
    uint8_t flags;                  /* RS_WQE_F_*, never INLINE */
    uint8_t num_sge;                /* 0 */
    uint8_t rsvd0;
    uint32_t key;
    uint16_t nentries;              /* >= 1 */
    uint16_t access;                /* enum rs_access, no MW_BIND */
    uint32_t repeat;                /* pattern: >= 1; indirect: 0 */
    uint32_t rsvd1[10];
};

struct rs_recv_wqe_ctrl {
    uint64_t wr_id;
    uint8_t num_sge;
    uint8_t rsvd[7];
};

/* ------------------------------------------------------------------ */
/* LAN descriptors                                                    */
/* ------------------------------------------------------------------ */

#define RS_LAN_F_MORE           (1u << 0)  /* TX: frame continues */
#define RS_LAN_S_PHASE          (1u << 0)  /* written back: done, this lap */
#define RS_LAN_S_ERR            (1u << 1)  /* buffer unreachable / too big */
#define RS_LAN_MAX_FRAME        65535      /* TX frame across descriptors */
#define RS_LAN_MAX_FRAGS        32

struct rs_lan_desc {                /* 16 bytes */
    uint64_t addr;
    uint16_t len;                   /* TX: bytes; RX: buffer size, then frame */
    uint8_t flags;                  /* RS_LAN_F_* (TX) */
    uint8_t status;                 /* RS_LAN_S_*, written by the device */
    uint32_t rsvd;
};

#ifdef __cplusplus
#define RS_ABI_SIZE(type, size) static_assert(sizeof(type) == (size), #type)
#else
#define RS_ABI_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type)
#endif

RS_ABI_SIZE(struct rs_cmd_hdr, 8);
RS_ABI_SIZE(struct rs_admin_cmd, 64);
RS_ABI_SIZE(struct rs_admin_cqe, 16);
RS_ABI_SIZE(struct rs_event, 16);
RS_ABI_SIZE(struct rs_cqe, 32);
RS_ABI_SIZE(struct rs_sge, 16);
RS_ABI_SIZE(struct rs_mkey_entry, 16);
RS_ABI_SIZE(struct rs_pattern_entry, 24);
RS_ABI_SIZE(struct rs_send_wqe_reg_mkey, 64);
RS_ABI_SIZE(struct rs_cmd_reg_mkey_list, 32);
RS_ABI_SIZE(struct rs_send_wqe_ctrl, 64);
RS_ABI_SIZE(struct rs_send_wqe_reg_mr, 64);
RS_ABI_SIZE(struct rs_send_wqe_bind_mw, 64);
RS_ABI_SIZE(struct rs_cmd_alloc_mw, 16);
RS_ABI_SIZE(struct rs_cmd_rereg_mr, 48);
RS_ABI_SIZE(struct rs_recv_wqe_ctrl, 16);
RS_ABI_SIZE(struct rs_cmd_create_pd, 8);
RS_ABI_SIZE(struct rs_netid_attr, 32);
RS_ABI_SIZE(struct rs_lan_desc, 16);
RS_ABI_SIZE(struct rs_cmd_create_lan_queue, 16);
RS_ABI_SIZE(struct rs_device_attr, 160);
RS_ABI_SIZE(struct rs_port_attr, 64);
RS_ABI_SIZE(struct rs_ah_attr, 32);
RS_ABI_SIZE(struct rs_qp_attr, 96);
RS_ABI_SIZE(struct rs_cmd_create_srq, 32);
RS_ABI_SIZE(struct rs_cmd_create_qp, 56);
RS_ABI_SIZE(struct rs_cmd_modify_srq, 24);
RS_ABI_SIZE(struct rs_cmd_mcast, 24);
RS_ABI_SIZE(struct rs_cmd_odp_resolve, 32);
RS_ABI_SIZE(struct rs_cmd_odp_invalidate, 24);
RS_ABI_SIZE(struct rs_device_stats, 256);
RS_ABI_SIZE(struct rs_db_record, 16);
RS_ABI_SIZE(struct rs_cmd_set_qp_db_record, 16);
RS_ABI_SIZE(struct rs_session_attr, 104);

#endif /* HW_RDMA_SESSION_ABI_H */
