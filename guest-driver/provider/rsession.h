/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rdma-core provider for the rdma-session adapter (PCI 1af4:10f0).
 *
 * Work queues, completion queues and the context's doorbell page ("UAR")
 * are allocated by the kernel driver and mapped into the process; the data
 * path below touches them without system calls.  Layouts come from
 * abi/rdma-session-abi.h (include/hw/rdma-session/ in the project).
 */
#ifndef RSESSION_H
#define RSESSION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <pthread.h>

#include <infiniband/driver.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include "abi/rdma-session-abi.h"
#include "rsession-abi.h"
#include "rsessiondv.h"

struct rs_device {
	struct verbs_device vdev;
	size_t page_size;
};

struct rs_context {
	struct verbs_context ibvctx;
	void *db;			/* doorbell page, write-only */
	size_t db_map_len;
	uint32_t uar;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	/* ABI 1.5, from the ucontext response (0 from an older driver). */
	uint32_t caps;			/* RS_CAP_* */
	uint32_t uflags;		/* RS_UVERBS_UCTX_F_* (ABI 1.11) */
	uint32_t max_dc_contexts;
	uint32_t dc_idle_us;
	uint32_t max_mkey_entries;
	uint32_t max_mkey_nest;
	/*
	 * RSESSION_NETID (a GID index or one of the port's IP addresses):
	 * the network identity of this context's PDs, as the identity of
	 * that GID; netid_gid -1 without it (identity 0).
	 */
	const char *netid_env;
	int netid_gid;

	/* qpn -> QP, for completions; grown on demand. */
	pthread_spinlock_t qp_table_lock;
	struct rs_qp **qp_table;
	uint32_t qp_table_size;

	/*
	 * XRC SRQ number -> XRC SRQ of this context, for the receive
	 * completions that name it (rs_cqe.srqn): they come through an XRC
	 * target QP, which has no queue of its own.  Grown on demand.
	 */
	pthread_spinlock_t srq_table_lock;
	struct rs_srq **srq_table;
	uint32_t srq_table_size;
};

struct rs_pd {
	struct ibv_pd ibvpd;
	uint32_t pdn;
};

struct rs_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	struct rs_cqe *ring;		/* mapped read-only */
	size_t ring_len;
	uint32_t cq_index;		/* RS_DB_CQ_* index */
	uint32_t log_size;
	uint32_t ci;			/* free-running consumer index */
	bool ci_dirty;			/* ci not yet reported to the device */
	struct rs_qp *last_qp;		/* lookup cache, under lock */
	/* Extended polling: the completion being read. */
	struct rs_cqe cur;
	struct rs_qp *cur_qp;
};

struct rs_wq {
	uint8_t *buf;			/* mapped ring */
	size_t buf_len;
	uint32_t wqe_cnt;		/* power of two */
	uint32_t stride;
	uint32_t max_sge;
	uint32_t pi;			/* free-running producer index */
	uint32_t ci;			/* free-running consumer index */
	pthread_spinlock_t lock;
};

/*
 * Shared receive queue.  The device takes WQEs in ring order and copies
 * each one it takes, so a slot is free once as many receive completions
 * of its QPs as WQEs before it were polled: "done" counts them.  An XRC
 * SRQ (vsrq.srq_type IBV_SRQT_XRC, number vsrq.srq_num) counts the
 * completions of its CQ that carry its number.
 */
struct rs_srq {
	struct verbs_srq vsrq;
	struct rs_wq wq;		/* ci unused: see done */
	uint32_t srq_index;		/* RS_DB_SRQ index */
	uint32_t done;			/* receive completions polled */
};

/*
 * A QP.  XRC_SEND: a send queue only (rq empty).  XRC_RECV (created or
 * opened with ibv_open_qp): no queues at all; its receives complete on
 * the XRC SRQs the requests name, so it is not in the QP table.
 */
struct rs_qp {
	struct verbs_qp vqp;
	struct rs_srq *srq;
	struct rs_wq sq;
	struct rs_wq rq;
	uint8_t *sq_signaled;		/* per SQ slot: WQE asked for a CQE */
	/*
	 * ABI 1.11: the QP's doorbell record in the SQ mapping, or NULL.
	 * Posts store the producer there and ring the doorbell only when
	 * the device's active word for the queue is 0.
	 */
	struct rs_db_record *dbrec;
	uint32_t qpn;
	uint32_t max_inline;
	bool sq_sig_all;
	uint8_t dc_type;		/* 0, RSDV_DCTYPE_DCI, RSDV_DCTYPE_DCT */
	uint64_t dv_ops;		/* RSDV_QP_EX_WITH_* allowed */
	struct rsdv_qp_ex dv_qp;
	/*
	 * enum ibv_qp_state as of the last successful modify_qp, written
	 * with sq.lock and rq.lock held: the post verbs check it under
	 * their queue's lock.  A move to ERR or SQE by the device is not
	 * tracked: posting is allowed in RTS, SQE and ERR alike.
	 */
	uint8_t state;

	/* ibv_wr_* session state, under sq.lock */
	struct rs_send_wqe_ctrl *cur_wqe;
	uint32_t wr_start_pi;
	int wr_err;
};

struct rs_ah {
	struct ibv_ah ibvah;
	uint32_t handle;
};

struct rs_mr {
	struct verbs_mr vmr;
};

/* rsdv_create_mkey: an empty indirect or pattern key (a kernel MR). */
struct rs_mkey {
	struct rsdv_mkey dv;
	struct verbs_mr vmr;
	bool pattern;
	uint16_t max_entries;
};

static inline struct rs_device *to_rs_dev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct rs_device, vdev.device);
}

static inline struct rs_context *to_rs_ctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct rs_context, ibvctx.context);
}

static inline struct rs_pd *to_rs_pd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct rs_pd, ibvpd);
}

static inline struct rs_cq *to_rs_cq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct rs_cq, vcq.cq);
}

static inline struct rs_cq *to_rs_cq_ex(struct ibv_cq_ex *ibcqx)
{
	return container_of(ibcqx, struct rs_cq, vcq.cq_ex);
}

static inline struct rs_qp *to_rs_qp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct rs_qp, vqp.qp);
}

static inline struct rs_qp *to_rs_qp_ex(struct ibv_qp_ex *ibqpx)
{
	return container_of(ibqpx, struct rs_qp, vqp.qp_ex);
}

static inline struct rs_ah *to_rs_ah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct rs_ah, ibvah);
}

/* A 32-bit doorbell write on the context's page (uncached mapping). */
static inline void rs_ring_db(struct rs_context *ctx, unsigned int offset,
			      uint32_t value)
{
	mmio_write32_le((uint8_t *)ctx->db + offset, htole32(value));
}

/*
 * The doorbell of a QP's send or receive queue after its WQEs (the spec's
 * "Doorbell records"): WQEs before the producer, the producer before the
 * load of the device's active word (a full fence: store before load), and
 * the MMIO doorbell only if the device is not reading the record.
 */
static inline void rs_wq_db(struct rs_context *ctx, uint32_t *rec_prod,
			    uint32_t *rec_active, unsigned int offset,
			    uint32_t qpn, uint32_t pi)
{
	udma_to_device_barrier();
	if (rec_prod) {
		atomic_store_explicit((_Atomic(uint32_t) *)rec_prod,
				      htole32(pi & 0xffff),
				      memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		if (le32toh(atomic_load_explicit(
			    (_Atomic(uint32_t) *)rec_active,
			    memory_order_relaxed)))
			return;
	}
	rs_ring_db(ctx, offset, (qpn & RS_DB_INDEX_MASK) |
		   (pi << RS_DB_VALUE_SHIFT));
}

int rs_query_device_ex(struct ibv_context *context,
		       const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
int rs_query_port(struct ibv_context *context, uint8_t port,
		  struct ibv_port_attr *attr);

struct ibv_pd *rs_alloc_pd(struct ibv_context *context);
int rs_dealloc_pd(struct ibv_pd *pd);
struct ibv_xrcd *rs_open_xrcd(struct ibv_context *context,
			      struct ibv_xrcd_init_attr *attr);
int rs_close_xrcd(struct ibv_xrcd *xrcd);

struct ibv_mr *rs_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			 uint64_t hca_va, int access);
struct ibv_mr *rs_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				size_t length, uint64_t iova, int fd,
				int access);
int rs_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *rs_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int rs_dealloc_mw(struct ibv_mw *mw);
int rs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mwb);
int rs_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		void *addr, size_t length, int access);

struct ibv_cq *rs_create_cq(struct ibv_context *context, int cqe,
			    struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *rs_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr);
int rs_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int rs_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int rs_resize_cq(struct ibv_cq *cq, int cqe);
int rs_destroy_cq(struct ibv_cq *cq);

struct ibv_qp *rs_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *rs_create_qp_dv(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *attr,
			       const struct rsdv_qp_init_attr *dv);
bool rs_is_rs_dev(struct ibv_device *device);
struct ibv_qp *rs_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *attr);
int rs_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		struct ibv_qp_init_attr *init_attr);
int rs_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int rs_destroy_qp(struct ibv_qp *qp);
struct ibv_qp *rs_open_qp(struct ibv_context *context,
			  struct ibv_qp_open_attr *attr);
struct ibv_srq *rs_create_srq(struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr);
struct ibv_srq *rs_create_srq_ex(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *attr);
int rs_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		  int attr_mask);
int rs_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int rs_destroy_srq(struct ibv_srq *srq);
int rs_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
int rs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
int rs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr);
int rs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr);

struct ibv_ah *rs_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int rs_destroy_ah(struct ibv_ah *ah);

#endif /* RSESSION_H */
