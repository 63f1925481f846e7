/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * rdma-session adapter: uverbs driver data exchanged between the Linux
 * driver (guest-driver/kernel) and the rdma-core provider
 * (guest-driver/provider) through ib_udata.  Not seen by the device.
 *
 * Like rdma-core's kernel-headers/rdma/<driver>-abi.h it uses the kernel's
 * __u32/__aligned_u64 types.  Queues live in kernel memory
 * (dma_alloc_coherent) and are mapped into the process with
 * rdma_user_mmap_entry: every *_mmap_key below is an mmap() offset on the
 * verbs command fd.
 */
#ifndef HW_RDMA_SESSION_UVERBS_H
#define HW_RDMA_SESSION_UVERBS_H

#include <linux/types.h>

#define RS_UVERBS_ABI_VERSION   1

struct rs_uverbs_alloc_ucontext_resp {
	__aligned_u64 db_mmap_key;      /* this context's doorbell page */
	__u32 uar;                      /* its index in the doorbell BAR */
	__u32 db_page_size;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline;
	__u32 rsvd;
	/*
	 * Since ABI 1.5 (a provider that gets fewer bytes sees none of
	 * this): the device's RS_CAPS bits and the limits of DC and of
	 * indirect/pattern keys (0 where the device lacks the feature).
	 */
	__u32 caps;                     /* RS_CAP_* */
	__u32 max_dc_contexts;
	__u32 max_mkey_entries;
	__u32 max_mkey_nest;
	__u32 dc_idle_us;
	__u32 flags;                    /* RS_UVERBS_UCTX_F_* (was rsvd2) */
};

/*
 * Since ABI 1.11: the driver gives QPs doorbell records on request (the
 * device has RS_CAP_DB_RECORD and the driver knows them).  An older
 * driver leaves flags 0 and refuses RS_UVERBS_QP_F_DB_RECORD.
 */
#define RS_UVERBS_UCTX_F_DB_RECORD      (1u << 0)

/*
 * Since ABI 1.6 (optional input): the PD's network identity, as the
 * identity of one of the port's GIDs; without it identity 0.
 */
#define RS_UVERBS_PD_F_GID      (1u << 0)

struct rs_uverbs_alloc_pd {
	__u32 gid_index;                /* with RS_UVERBS_PD_F_GID */
	__u32 flags;                    /* RS_UVERBS_PD_F_* */
};

struct rs_uverbs_alloc_pd_resp {
	__u32 pdn;                      /* device PD handle */
	__u32 netid;                    /* its network identity (ABI 1.6) */
};

struct rs_uverbs_create_cq_resp {
	__aligned_u64 ring_mmap_key;
	__u32 ring_bytes;
	__u32 cq_index;                 /* RS_DB_CQ_* index */
	__u32 log_size;                 /* entries = 1 << log_size */
	__u32 rsvd;
};

/*
 * ibv_resize_cq: the provider gives the consumer index it has reached and
 * gets the new ring, which holds the unpolled entries from its index 0 on.
 */
struct rs_uverbs_resize_cq {
	__u32 consumer_index;           /* free-running, as in RS_DB_CQ_CI */
	__u32 rsvd;
};

struct rs_uverbs_resize_cq_resp {
	__aligned_u64 ring_mmap_key;
	__u32 ring_bytes;
	__u32 log_size;                 /* entries = 1 << log_size */
};

/*
 * ibv_create_qp_ex driver input (optional: a provider may send none).
 * DC QPs are created the mlx5 way: qp_type IBV_QPT_DRIVER (IB_QPT_DRIVER)
 * and dc_type saying which one.  Every other QP type sends dc_type
 * RS_UVERBS_DC_NONE.  The driver refuses (-EINVAL) an unknown dc_type,
 * any flag, a nonzero rsvd, a key on anything but a DCT, a DCT without
 * an SRQ or with a send queue, a DCI with an SRQ or a receive queue.
 */
enum rs_uverbs_dc_type {
	RS_UVERBS_DC_NONE = 0,
	RS_UVERBS_DC_DCI = 1,           /* DC initiator: send queue only */
	RS_UVERBS_DC_DCT = 2,           /* DC target: SRQ and receive CQ */
};

/*
 * RS_UVERBS_QP_F_DB_RECORD (only if the context has
 * RS_UVERBS_UCTX_F_DB_RECORD): a QP with a send queue gets a struct
 * rs_db_record in its SQ ring's mapping, after the WQEs, at the
 * response's db_record_offset, and the response says
 * RS_UVERBS_QP_RESP_F_DB_RECORD.  Without that flag in the response
 * (none asked, no send queue, or the driver could not set it) the QP
 * rings doorbells as before.
 */
#define RS_UVERBS_QP_F_DB_RECORD        (1u << 0)
#define RS_UVERBS_QP_RESP_F_DB_RECORD   (1u << 0)

struct rs_uverbs_create_qp {
	__u32 dc_type;                  /* enum rs_uverbs_dc_type */
	__u32 flags;                    /* RS_UVERBS_QP_F_* */
	__aligned_u64 dct_access_key;   /* DCT: the key DCIs must present */
	__u32 rsvd[2];
};

struct rs_uverbs_create_qp_resp {
	__aligned_u64 sq_mmap_key;
	__aligned_u64 rq_mmap_key;
	__u32 sq_bytes;
	__u32 rq_bytes;
	__u32 qpn;                      /* also the RS_DB_SQ/RQ index */
	__u32 sq_log_size;
	__u32 rq_log_size;
	__u32 sq_stride;                /* bytes per send WQE */
	__u32 rq_stride;                /* bytes per receive WQE */
	__u32 max_inline;
	/* Since ABI 1.11 (a provider that gets fewer bytes sees none). */
	__u32 flags;                    /* RS_UVERBS_QP_RESP_F_* */
	__u32 db_record_offset;         /* in the SQ mapping */
};

/*
 * A QP created with an SRQ has no receive queue: rq_bytes 0.  A DCI has
 * no receive queue, a DCT no queue at all (sq_bytes and rq_bytes 0).
 */

/*
 * ibv_reg_mr driver input: with a RS_UVERBS_MR_F_EMPTY_* flag the
 * registration makes an empty indirect or pattern key (REG_INDIRECT_MKEY
 * / REG_PATTERN_MKEY with RS_MKEY_F_EMPTY) with room for max_entries
 * entries instead of registering memory: addr, length and iova must be 0
 * and nothing is pinned.  The key (lkey == rkey) is filled by
 * RS_WR_REG_INDIRECT / RS_WR_REG_PATTERN work requests, returned to Free
 * by LOCAL_INV and destroyed by ibv_dereg_mr.  Without input, or with
 * flags 0, an ordinary registration.
 */
#define RS_UVERBS_MR_F_EMPTY_INDIRECT   (1u << 0)
#define RS_UVERBS_MR_F_EMPTY_PATTERN    (1u << 1)

struct rs_uverbs_reg_mr {
	__u32 flags;                    /* RS_UVERBS_MR_F_*, at most one */
	__u32 max_entries;              /* 1 - max_mkey_entries */
	__u32 rsvd[2];
};

struct rs_uverbs_create_srq_resp {
	__aligned_u64 ring_mmap_key;
	__u32 ring_bytes;
	__u32 srq_index;                /* RS_DB_SRQ index */
	__u32 log_size;                 /* entries = 1 << log_size */
	__u32 stride;                   /* bytes per receive WQE */
	__u32 max_sge;
	__u32 rsvd;
};

struct rs_uverbs_create_ah_resp {
	__u32 ah_handle;                /* goes in rs_send_wqe_ctrl.ah */
	__u32 rsvd;
};

/*
 * ibv_modify_srq with IBV_SRQ_MAX_WR (user SRQs): uverbs' MODIFY_SRQ has
 * driver input but no response, so the provider passes the address of a
 * struct rs_uverbs_modify_srq_resp and the driver writes the new ring
 * there (as soft-RoCE does).  The ring holds the wqes_moved WQEs that
 * were waiting, in order, in its slots 0, 1, ...; the provider posts on
 * from index wqes_moved.  Without IBV_SRQ_MAX_WR the input may be absent.
 */
struct rs_uverbs_modify_srq {
	__aligned_u64 resp_addr;        /* struct rs_uverbs_modify_srq_resp */
};

struct rs_uverbs_modify_srq_resp {
	__aligned_u64 ring_mmap_key;
	__u32 ring_bytes;
	__u32 log_size;                 /* entries = 1 << log_size */
	__u32 wqes_moved;
	__u32 rsvd;
};

/*
 * ibv_modify_qp driver input, rsdv_modify_qp_path_policy() (ABI 1.6,
 * RS_CAP_MULTIPATH): with flags RS_UVERBS_MODIFY_QP_PATH_POLICY and no
 * attribute the QP's traffic uses its connection's sessions with
 * path_policy; the driver picks or makes the session group, user space
 * never names a session or a port.  The driver refuses (-EINVAL) other
 * flags, a nonzero rsvd, attributes with it, a QP without a primary
 * path.  With the module parameter paths 1 a QP has one session and
 * either policy is accepted and changes nothing.
 */
#define RS_UVERBS_MODIFY_QP_PATH_POLICY (1u << 0)

enum rs_uverbs_path_policy {
	RS_UVERBS_PATH_SPREAD = 1,      /* flowlets over the live sessions */
	RS_UVERBS_PATH_ACTIVE_BACKUP = 2, /* the first live session */
};

struct rs_uverbs_modify_qp {
	__u32 flags;                    /* RS_UVERBS_MODIFY_QP_* */
	__u32 path_policy;              /* enum rs_uverbs_path_policy */
	__u32 rsvd[2];
};

#endif /* HW_RDMA_SESSION_UVERBS_H */
