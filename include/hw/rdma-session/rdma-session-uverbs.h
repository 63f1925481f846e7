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
};

struct rs_uverbs_alloc_pd_resp {
	__u32 pdn;                      /* device PD handle */
	__u32 rsvd;
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
};

/* A QP created with an SRQ has no receive queue: rq_bytes 0. */

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

#endif /* HW_RDMA_SESSION_UVERBS_H */
