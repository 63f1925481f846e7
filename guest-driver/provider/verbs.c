// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma-core provider for the rdma-session adapter: verbs and data path.
 *
 * Control path: every object is created by the kernel driver (ibv_cmd_*);
 * the driver data in the responses (abi/rdma-session-uverbs.h) gives the
 * mmap keys and geometry of the rings it allocated.
 *
 * Data path (docs/specs/rdma-session.rst, "Work queues", "Completion
 * queues", "Doorbell pages"):
 *  - post_send/post_recv write WQEs at producer index & mask, then
 *    udma_to_device_barrier() and one 32-bit doorbell write of
 *    QP index | producer << 16 (RS_DB_SQ / RS_DB_RQ).
 *  - poll_cq reads 32-byte CQEs whose owner bit is set on even passes of
 *    the ring and clear on odd ones, then udma_from_device_barrier()
 *    before the other fields; the consumer index goes back to the device
 *    with RS_DB_CQ_CI, and req_notify_cq writes RS_DB_CQ_ARM.
 *  - Send queue slots are freed from the completions: the device completes
 *    send WQEs in order; a successful completion is written only for a
 *    signalled WQE and retires every WQE up to it, an error or flush
 *    completion is written for each WQE and retires one.  Every receive
 *    WQE gets a completion.
 *  - imm_or_inv in WQEs and CQEs is a little-endian number: the immediate
 *    as the 32-bit big-endian value of the wire, the rkey as is.
 */
#include <config.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <ccan/minmax.h>
#include <util/util.h>

#include "rsession.h"

/* ------------------------------------------------------------------ */
/* Device, port, PD, MR, AH                                           */
/* ------------------------------------------------------------------ */

int rs_query_device_ex(struct ibv_context *context,
		       const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int err;

	err = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (err)
		return err;

	/* The kernel reports the RS_VERSION register: major << 16 | minor. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u", (unsigned int)(fw >> 16) & 0xffff,
		 (unsigned int)fw & 0xffff);
	return 0;
}

int rs_query_port(struct ibv_context *context, uint8_t port,
		  struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

/*
 * RSESSION_NETID: a GID index, or an IPv4 / IPv6 address one of port 1's
 * GIDs holds.  The GID index, or -1 (and errno) if there is none.
 */
static int rs_netid_gid(struct rs_context *ctx)
{
	struct ibv_context *context = &ctx->ibvctx.context;
	const char *s = ctx->netid_env;
	struct ibv_port_attr pa;
	union ibv_gid want = {}, gid;
	char *end;
	long v;
	int i;

	if (ctx->netid_gid >= 0)
		return ctx->netid_gid;
	v = strtol(s, &end, 0);
	if (*s && !*end && v >= 0 && v < 0x10000) {
		ctx->netid_gid = v;
		return v;
	}
	if (inet_pton(AF_INET, s, want.raw + 12) == 1) {
		want.raw[10] = want.raw[11] = 0xff;
	} else if (inet_pton(AF_INET6, s, want.raw) != 1) {
		verbs_err(&ctx->ibvctx,
			  "rdma_session: RSESSION_NETID=%s: not a GID index or IP address\n",
			  s);
		errno = EINVAL;
		return -1;
	}
	if (ibv_query_port(context, 1, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		if (!ibv_query_gid(context, 1, i, &gid) &&
		    !memcmp(gid.raw, want.raw, sizeof(gid.raw))) {
			ctx->netid_gid = i;
			return i;
		}
	}
	verbs_err(&ctx->ibvctx, "rdma_session: RSESSION_NETID=%s: no such GID\n",
		  s);
	errno = ENOENT;
	return -1;
}

struct ibv_pd *rs_alloc_pd(struct ibv_context *context)
{
	struct rs_context *ctx = to_rs_ctx(context);
	struct rs_alloc_pd_resp resp = {};
	struct rs_alloc_pd cmd = {};
	struct rs_pd *pd;
	int err, gid;

	/* The identity of the GID RSESSION_NETID names (ABI 1.6). */
	if (ctx->netid_env) {
		gid = rs_netid_gid(ctx);
		if (gid < 0)
			return NULL;
		cmd.drv_payload.gid_index = gid;
		cmd.drv_payload.flags = RS_UVERBS_PD_F_GID;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	err = ibv_cmd_alloc_pd(context, &pd->ibvpd, &cmd.ibv_cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	pd->pdn = resp.drv_payload.pdn;
	return &pd->ibvpd;
}

int rs_dealloc_pd(struct ibv_pd *ibpd)
{
	int err;

	err = ibv_cmd_dealloc_pd(ibpd);
	if (err)
		return err;
	free(to_rs_pd(ibpd));
	return 0;
}

/*
 * XRC domains: the kernel shares one between the processes that open it
 * through the same file (attr->fd, O_CREAT); no driver data.
 */
struct ibv_xrcd *rs_open_xrcd(struct ibv_context *context,
			      struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp;
	struct ibv_open_xrcd cmd;
	struct verbs_xrcd *xrcd;
	int err;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;
	err = ibv_cmd_open_xrcd(context, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(xrcd);
		errno = err;
		return NULL;
	}
	return &xrcd->xrcd;
}

int rs_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int err;

	err = ibv_cmd_close_xrcd(xrcd);
	if (err)
		return err;
	free(xrcd);
	return 0;
}

/*
 * Every registration is the kernel's, IBV_ACCESS_ON_DEMAND included: an
 * explicit ODP MR, or with addr NULL and length SIZE_MAX the implicit one
 * covering the whole address space (libibverbs pins nothing for either).
 */
struct ibv_mr *rs_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			 uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct rs_mr *mr;
	int err;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;

	err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, &mr->vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(mr);
		errno = err;
		return NULL;
	}
	return &mr->vmr.ibv_mr;
}

/*
 * [offset, offset + length) of dma-buf fd: the kernel pins it and gives
 * the device its page list, as for rs_reg_mr (no ODP on a dma-buf).
 */
struct ibv_mr *rs_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				size_t length, uint64_t iova, int fd,
				int access)
{
	struct rs_mr *mr;
	int err;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;

	err = ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access,
				    &mr->vmr, NULL);
	if (err) {
		free(mr);
		errno = err;
		return NULL;
	}
	return &mr->vmr.ibv_mr;
}

struct ibv_mw *rs_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int err;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	err = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	return mw;
}

int rs_dealloc_mw(struct ibv_mw *mw)
{
	int err;

	err = ibv_cmd_dealloc_mw(mw);
	if (err)
		return err;
	free(mw);
	return 0;
}

/*
 * Type 1: a BIND_MW work request on the QP, as rxe's provider does; the
 * window's rkey is the new one from now on (an error completion leaves
 * the old one valid: the consumer takes it back).
 */
int rs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mwb)
{
	struct ibv_send_wr wr = {}, *bad;
	int err;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.wr_id = mwb->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mwb->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mwb->bind_info;
	err = rs_post_send(qp, &wr, &bad);
	if (err)
		return err;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

int rs_dereg_mr(struct verbs_mr *vmr)
{
	int err;

	err = ibv_cmd_dereg_mr(vmr);
	if (err)
		return err;
	free(container_of(vmr, struct rs_mr, vmr));
	return 0;
}

/*
 * The kernel changes the MR in place where the device can (REREG_MR):
 * the keys stay for a new access, PD or translation, as with mlx5;
 * otherwise it registers anew and the keys change (docs/specs:
 * "Re-registration").  The response carries the keys either way.
 * libibverbs has checked the flags and the address and length already.
 */
int rs_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

struct ibv_ah *rs_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct rs_create_ah_resp resp = {};
	struct rs_ah *ah;
	int err;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	err = ibv_cmd_create_ah(pd, &ah->ibvah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	ah->handle = resp.drv_payload.ah_handle;
	return &ah->ibvah;
}

int rs_destroy_ah(struct ibv_ah *ibah)
{
	int err;

	err = ibv_cmd_destroy_ah(ibah);
	if (err)
		return err;
	free(to_rs_ah(ibah));
	return 0;
}

/* ------------------------------------------------------------------ */
/* QP table: qpn -> QP for the completion path                        */
/* ------------------------------------------------------------------ */

/*
 * The table tab of *size entries of elem bytes, grown (new entries
 * zeroed) so that index idx fits; NULL if that fails, tab unchanged.
 */
static void *rs_table_grow(void *tab, uint32_t *size, uint32_t idx,
			   size_t elem)
{
	uint32_t n = roundup_pow_of_two((uint64_t)idx + 1);
	char *t;

	if (idx < *size)
		return tab;
	if (n < 64)
		n = 64;
	t = realloc(tab, (size_t)n * elem);
	if (!t)
		return NULL;
	memset(t + (size_t)*size * elem, 0, (size_t)(n - *size) * elem);
	*size = n;
	return t;
}

static int rs_qp_table_insert(struct rs_context *ctx, struct rs_qp *qp)
{
	struct rs_qp **t;
	int err = 0;

	pthread_spin_lock(&ctx->qp_table_lock);
	t = rs_table_grow(ctx->qp_table, &ctx->qp_table_size, qp->qpn,
			  sizeof(*t));
	if (!t) {
		err = ENOMEM;
		goto out;
	}
	ctx->qp_table = t;
	if (ctx->qp_table[qp->qpn])
		err = EEXIST;
	else
		ctx->qp_table[qp->qpn] = qp;
out:
	pthread_spin_unlock(&ctx->qp_table_lock);
	return err;
}

static void rs_qp_table_remove(struct rs_context *ctx, struct rs_qp *qp)
{
	pthread_spin_lock(&ctx->qp_table_lock);
	if (qp->qpn < ctx->qp_table_size && ctx->qp_table[qp->qpn] == qp)
		ctx->qp_table[qp->qpn] = NULL;
	pthread_spin_unlock(&ctx->qp_table_lock);
}

static struct rs_qp *rs_qp_lookup(struct rs_context *ctx, struct rs_cq *cq,
				  uint32_t qpn)
{
	struct rs_qp *qp = NULL;

	if (cq->last_qp && cq->last_qp->qpn == qpn)
		return cq->last_qp;
	pthread_spin_lock(&ctx->qp_table_lock);
	if (qpn < ctx->qp_table_size)
		qp = ctx->qp_table[qpn];
	pthread_spin_unlock(&ctx->qp_table_lock);
	if (qp)
		cq->last_qp = qp;
	return qp;
}

/* ------------------------------------------------------------------ */
/* XRC SRQ table: SRQ number -> XRC SRQ for the completion path       */
/* ------------------------------------------------------------------ */

static int rs_srq_table_insert(struct rs_context *ctx, struct rs_srq *srq)
{
	uint32_t num = srq->vsrq.srq_num;
	struct rs_srq **t;
	int err = 0;

	pthread_spin_lock(&ctx->srq_table_lock);
	t = rs_table_grow(ctx->srq_table, &ctx->srq_table_size, num,
			  sizeof(*t));
	if (!t) {
		err = ENOMEM;
		goto out;
	}
	ctx->srq_table = t;
	if (ctx->srq_table[num])
		err = EEXIST;
	else
		ctx->srq_table[num] = srq;
out:
	pthread_spin_unlock(&ctx->srq_table_lock);
	return err;
}

static void rs_srq_table_remove(struct rs_context *ctx, struct rs_srq *srq)
{
	uint32_t num = srq->vsrq.srq_num;

	pthread_spin_lock(&ctx->srq_table_lock);
	if (num < ctx->srq_table_size && ctx->srq_table[num] == srq)
		ctx->srq_table[num] = NULL;
	pthread_spin_unlock(&ctx->srq_table_lock);
}

/*
 * A receive completion of the XRC SRQ numbered srqn: one more WQE of it
 * done.  Under the table lock, so that the SRQ is not freed meanwhile.
 * False if this context has no such SRQ (destroyed since).
 */
static bool rs_xrc_srq_done(struct rs_context *ctx, uint32_t srqn)
{
	struct rs_srq *srq = NULL;

	pthread_spin_lock(&ctx->srq_table_lock);
	if (srqn < ctx->srq_table_size)
		srq = ctx->srq_table[srqn];
	if (srq)
		__atomic_fetch_add(&srq->done, 1, __ATOMIC_RELEASE);
	pthread_spin_unlock(&ctx->srq_table_lock);
	return srq != NULL;
}

/* ------------------------------------------------------------------ */
/* Completion queues                                                  */
/* ------------------------------------------------------------------ */

static enum ibv_wc_opcode rs_wc_opcode(uint8_t op)
{
	switch (op) {
	case RS_WR_SEND:
	case RS_WR_SEND_IMM:
	case RS_WR_SEND_INV:
		return IBV_WC_SEND;
	case RS_WR_RDMA_WRITE:
	case RS_WR_RDMA_WRITE_IMM:
		return IBV_WC_RDMA_WRITE;
	case RS_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case RS_WR_ATOMIC_CMP_SWP:
		return IBV_WC_COMP_SWAP;
	case RS_WR_ATOMIC_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case RS_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case RS_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case RS_WR_FLUSH:
		return IBV_WC_FLUSH;
	case RS_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case RS_WR_RECV_RDMA_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	case RS_WR_RECV:
	default:
		return IBV_WC_RECV;
	}
}

static enum ibv_wc_status rs_wc_status(uint8_t st)
{
	switch (st) {
	case RS_WC_SUCCESS:
	case RS_WC_LOC_LEN_ERR:
	case RS_WC_LOC_QP_OP_ERR:
	case RS_WC_LOC_PROT_ERR:
	case RS_WC_WR_FLUSH_ERR:
	case RS_WC_MW_BIND_ERR:
	case RS_WC_BAD_RESP_ERR:
	case RS_WC_LOC_ACCESS_ERR:
	case RS_WC_REM_INV_REQ_ERR:
	case RS_WC_REM_ACCESS_ERR:
	case RS_WC_REM_OP_ERR:
	case RS_WC_RETRY_EXC_ERR:
	case RS_WC_RNR_RETRY_EXC_ERR:
		/* enum rs_wc_status uses the ib_wc_status values. */
		return (enum ibv_wc_status)st;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}

static unsigned int rs_wc_flags(const struct rs_cqe *cqe)
{
	unsigned int f = 0;

	if (cqe->wc_flags & RS_WC_F_IMM)
		f |= IBV_WC_WITH_IMM;
	if (cqe->wc_flags & RS_WC_F_INV)
		f |= IBV_WC_WITH_INV;
	if (cqe->wc_flags & RS_WC_F_GRH)
		f |= IBV_WC_GRH;
	return f;
}

static __be32 rs_wc_imm(const struct rs_cqe *cqe)
{
	uint32_t v = le32toh(cqe->imm_or_inv);

	/* IBV_WC_WITH_INV reports the rkey in host order in the same field. */
	if (cqe->wc_flags & RS_WC_F_INV)
		return (__force __be32)v;
	return htobe32(v);
}

/*
 * Take the next valid CQE into *out (copied, so the ring slot can be
 * reused as soon as the consumer index is reported) and retire the work
 * request it completes.  0 with the QP in *qpp (NULL for a receive on an
 * XRC SRQ: its qpn is the XRC target QP's, which is not polled here), or
 * ENOENT when the CQ is empty.  CQEs of QPs or XRC SRQs destroyed
 * meanwhile are dropped.  Called with cq->lock.
 */
static int rs_next_cqe(struct rs_cq *cq, struct rs_cqe *out,
		       struct rs_qp **qpp)
{
	struct rs_context *ctx = to_rs_ctx(cq->vcq.cq.context);
	uint32_t mask = (1u << cq->log_size) - 1;
	struct rs_cqe *cqe;
	struct rs_qp *qp;
	uint8_t phase;

	for (;;) {
		cqe = &cq->ring[cq->ci & mask];
		/* Owner bit is 1 on the first pass, 0 on the second, ... */
		phase = !((cq->ci >> cq->log_size) & 1);
		if ((__atomic_load_n(&cqe->owner, __ATOMIC_RELAXED) &
		     RS_CQE_OWNER) != phase)
			return ENOENT;
		udma_from_device_barrier();
		memcpy(out, cqe, sizeof(*out));
		cq->ci++;
		cq->ci_dirty = true;

		/* srqn is 0 in every CQE but an XRC SRQ's receive. */
		if (out->srqn) {
			if (!(out->opcode & RS_WR_RECV) ||
			    !rs_xrc_srq_done(ctx, le32toh(out->srqn)))
				continue;
			*qpp = NULL;
			return 0;
		}

		qp = rs_qp_lookup(ctx, cq, le32toh(out->qpn) & RS_HANDLE_INDEX_MASK);
		if (!qp)
			continue;

		if ((out->opcode & RS_WR_RECV) && qp->srq) {
			__atomic_fetch_add(&qp->srq->done, 1, __ATOMIC_RELEASE);
		} else if (out->opcode & RS_WR_RECV) {
			/* Receive completions: one per WQE, in order. */
			__atomic_store_n(&qp->rq.ci, qp->rq.ci + 1,
					 __ATOMIC_RELEASE);
		} else {
			struct rs_wq *sq = &qp->sq;
			uint32_t ci = sq->ci;
			uint32_t pi = __atomic_load_n(&sq->pi, __ATOMIC_ACQUIRE);

			if (out->status == RS_WC_SUCCESS) {
				/* Retire unsignalled WQEs up to the signalled one. */
				while (ci != pi &&
				       !qp->sq_signaled[ci & (sq->wqe_cnt - 1)])
					ci++;
			}
			if (ci != pi)
				ci++;
			__atomic_store_n(&sq->ci, ci, __ATOMIC_RELEASE);
		}
		*qpp = qp;
		return 0;
	}
}

static void rs_update_ci(struct rs_cq *cq)
{
	if (!cq->ci_dirty)
		return;
	cq->ci_dirty = false;
	rs_ring_db(to_rs_ctx(cq->vcq.cq.context), RS_DB_CQ_CI,
		   (cq->cq_index & RS_DB_INDEX_MASK) |
		   (cq->ci << RS_DB_VALUE_SHIFT));
}

/*
 * A UD receive's network header type where ConnectX reports it, in sl
 * (its CQE's RoCE packet type: bit 3 UDP, bits 0-2 1 for IPv6, 2 for
 * IPv4); UCX's UD transport reads it there to find the destination GID in
 * the GRH area.  0 from a device older than ABI 1.7.
 */
static uint8_t rs_wc_sl(const struct rs_cqe *cqe)
{
	if (cqe->wc_flags & RS_WC_F_IPV4)
		return 0x8 | 0x2;
	if (cqe->wc_flags & RS_WC_F_IPV6)
		return 0x8 | 0x1;
	return 0;
}

static void rs_cqe_to_wc(const struct rs_cqe *cqe, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64toh(cqe->wr_id);
	wc->status = rs_wc_status(cqe->status);
	wc->opcode = rs_wc_opcode(cqe->opcode);
	wc->vendor_err = wc->status == IBV_WC_GENERAL_ERR ? cqe->status : 0;
	wc->byte_len = le32toh(cqe->byte_len);
	wc->qp_num = le32toh(cqe->qpn);
	wc->src_qp = le32toh(cqe->src_qp);
	wc->wc_flags = rs_wc_flags(cqe);
	wc->sl = rs_wc_sl(cqe);
	if (wc->wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV))
		wc->imm_data = rs_wc_imm(cqe);
}

int rs_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct rs_cq *cq = to_rs_cq(ibcq);
	struct rs_cqe cqe;
	struct rs_qp *qp;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	while (n < ne && rs_next_cqe(cq, &cqe, &qp) == 0)
		rs_cqe_to_wc(&cqe, &wc[n++]);
	rs_update_ci(cq);
	pthread_spin_unlock(&cq->lock);
	return n;
}

static void rs_cq_ex_load(struct rs_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	cqx->wr_id = le64toh(cq->cur.wr_id);
	cqx->status = rs_wc_status(cq->cur.status);
}

static int rs_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct rs_cq *cq = to_rs_cq_ex(cqx);
	int err;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	err = rs_next_cqe(cq, &cq->cur, &cq->cur_qp);
	if (err) {
		pthread_spin_unlock(&cq->lock);
		return err;
	}
	rs_cq_ex_load(cq);
	return 0;
}

static int rs_next_poll(struct ibv_cq_ex *cqx)
{
	struct rs_cq *cq = to_rs_cq_ex(cqx);
	int err;

	err = rs_next_cqe(cq, &cq->cur, &cq->cur_qp);
	if (err)
		return err;
	rs_cq_ex_load(cq);
	return 0;
}

static void rs_end_poll(struct ibv_cq_ex *cqx)
{
	struct rs_cq *cq = to_rs_cq_ex(cqx);

	rs_update_ci(cq);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode rs_read_opcode(struct ibv_cq_ex *cqx)
{
	return rs_wc_opcode(to_rs_cq_ex(cqx)->cur.opcode);
}

static uint32_t rs_read_vendor_err(struct ibv_cq_ex *cqx)
{
	struct rs_cq *cq = to_rs_cq_ex(cqx);

	return rs_wc_status(cq->cur.status) == IBV_WC_GENERAL_ERR ?
		cq->cur.status : 0;
}

static uint32_t rs_read_byte_len(struct ibv_cq_ex *cqx)
{
	return le32toh(to_rs_cq_ex(cqx)->cur.byte_len);
}

static __be32 rs_read_imm_data(struct ibv_cq_ex *cqx)
{
	return rs_wc_imm(&to_rs_cq_ex(cqx)->cur);
}

static uint32_t rs_read_qp_num(struct ibv_cq_ex *cqx)
{
	return le32toh(to_rs_cq_ex(cqx)->cur.qpn);
}

static uint32_t rs_read_src_qp(struct ibv_cq_ex *cqx)
{
	return le32toh(to_rs_cq_ex(cqx)->cur.src_qp);
}

static unsigned int rs_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return rs_wc_flags(&to_rs_cq_ex(cqx)->cur);
}

static uint32_t rs_read_slid(struct ibv_cq_ex *cqx)
{
	return 0;	/* RoCE: no LIDs */
}

static uint8_t rs_read_sl(struct ibv_cq_ex *cqx)
{
	return rs_wc_sl(&to_rs_cq_ex(cqx)->cur);
}

static uint8_t rs_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return 0;
}

static void rs_cq_fill_pfns(struct rs_cq *cq,
			    const struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	cqx->start_poll = rs_start_poll;
	cqx->next_poll = rs_next_poll;
	cqx->end_poll = rs_end_poll;
	cqx->read_opcode = rs_read_opcode;
	cqx->read_vendor_err = rs_read_vendor_err;
	cqx->read_wc_flags = rs_read_wc_flags;
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cqx->read_byte_len = rs_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		cqx->read_imm_data = rs_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cqx->read_qp_num = rs_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cqx->read_src_qp = rs_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		cqx->read_slid = rs_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		cqx->read_sl = rs_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cqx->read_dlid_path_bits = rs_read_dlid_path_bits;
}

static struct ibv_cq_ex *rs_create_cq_common(struct ibv_context *context,
					     struct ibv_cq_init_attr_ex *attr)
{
	struct rs_create_cq_resp resp = {};
	struct rs_uverbs_create_cq_resp *drv = &resp.drv_payload;
	struct rs_create_cq cmd = {};
	struct ibv_cq_init_attr_ex kattr;
	struct rs_cq *cq;
	int err;

	/*
	 * A parent domain (MASK_PD) would change the CQ's allocation and
	 * locking: only a NULL one is the default.  SINGLE_THREADED is a
	 * hint that changes nothing here; IGNORE_OVERRUN is not offered.
	 */
	if (!check_comp_mask(attr->comp_mask, IBV_CQ_INIT_ATTR_MASK_FLAGS |
					      IBV_CQ_INIT_ATTR_MASK_PD) ||
	    !check_comp_mask(attr->wc_flags, IBV_WC_STANDARD_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     !check_comp_mask(attr->flags,
			      IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->cqe || attr->cqe > (1u << RS_MAX_CQ_LOG) - 1) {
		errno = EINVAL;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	/* The kernel's CQ takes no flags: the hint stays here. */
	kattr = *attr;
	kattr.comp_mask = 0;
	kattr.flags = 0;
	err = ibv_cmd_create_cq_ex(context, &kattr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp), 0);
	if (err) {
		errno = err;
		goto err_free;
	}

	cq->cq_index = drv->cq_index;
	cq->log_size = drv->log_size;
	cq->ring_len = drv->ring_bytes;
	if (cq->log_size < 1 || cq->log_size > RS_MAX_CQ_LOG ||
	    cq->ring_len < (sizeof(struct rs_cqe) << cq->log_size)) {
		verbs_err(verbs_get_ctx(context),
			  "rdma_session: bad CQ geometry from the kernel (log %u, %zu bytes)\n",
			  cq->log_size, cq->ring_len);
		errno = EINVAL;
		goto err_destroy;
	}
	cq->ring = mmap(NULL, cq->ring_len, PROT_READ, MAP_SHARED,
			context->cmd_fd, drv->ring_mmap_key);
	if (cq->ring == MAP_FAILED)
		goto err_destroy;

	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	rs_cq_fill_pfns(cq, attr);
	return &cq->vcq.cq_ex;

err_destroy:
	err = errno;
	ibv_cmd_destroy_cq(&cq->vcq.cq);
	errno = err;
err_free:
	free(cq);
	return NULL;
}

struct ibv_cq *rs_create_cq(struct ibv_context *context, int cqe,
			    struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe,
		.channel = channel,
		.comp_vector = comp_vector,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_cq_ex *cqx;

	if (cqe <= 0) {
		errno = EINVAL;
		return NULL;
	}
	cqx = rs_create_cq_common(context, &attr);
	return cqx ? ibv_cq_ex_to_cq(cqx) : NULL;
}

struct ibv_cq_ex *rs_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr)
{
	return rs_create_cq_common(context, attr);
}

int rs_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct rs_cq *cq = to_rs_cq(ibcq);

	rs_ring_db(to_rs_ctx(ibcq->context), RS_DB_CQ_ARM,
		   (cq->cq_index & RS_DB_INDEX_MASK) |
		   (solicited_only ? RS_DB_CQ_ARM_SOLICITED : RS_DB_CQ_ARM_NEXT));
	return 0;
}

/*
 * The device copies the entries not yet polled to the start of the new
 * ring (RS_CMD_RESIZE_CQ), so the consumer index starts over at 0; the CQ
 * lock keeps pollers out meanwhile.  The kernel refuses a size below the
 * number of unpolled entries with EINVAL.
 */
int rs_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct rs_cq *cq = to_rs_cq(ibcq);
	struct rs_resize_cq_resp resp = {};
	struct rs_uverbs_resize_cq_resp *drv = &resp.drv_payload;
	struct rs_resize_cq cmd = {};
	struct rs_cqe *ring;
	int err;

	if (cqe <= 0 || (unsigned int)cqe > (1u << RS_MAX_CQ_LOG) - 1)
		return EINVAL;

	pthread_spin_lock(&cq->lock);
	cmd.drv_payload.consumer_index = cq->ci;
	err = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err)
		goto out;
	if (drv->log_size < 1 || drv->log_size > RS_MAX_CQ_LOG ||
	    drv->ring_bytes < (sizeof(struct rs_cqe) << drv->log_size)) {
		/* The device uses the new ring already: nothing to go back to. */
		verbs_err(verbs_get_ctx(ibcq->context),
			  "rdma_session: bad CQ geometry from the kernel (log %u, %u bytes)\n",
			  drv->log_size, drv->ring_bytes);
		err = EIO;
		goto out;
	}
	ring = mmap(NULL, drv->ring_bytes, PROT_READ, MAP_SHARED,
		    ibcq->context->cmd_fd, drv->ring_mmap_key);
	if (ring == MAP_FAILED) {
		/* As above: the CQ is unusable, only destroying it is left. */
		err = errno;
		goto out;
	}
	munmap(cq->ring, cq->ring_len);
	cq->ring = ring;
	cq->ring_len = drv->ring_bytes;
	cq->log_size = drv->log_size;
	cq->ci = 0;
	cq->ci_dirty = false;
out:
	pthread_spin_unlock(&cq->lock);
	return err;
}

int rs_destroy_cq(struct ibv_cq *ibcq)
{
	struct rs_cq *cq = to_rs_cq(ibcq);
	int err;

	err = ibv_cmd_destroy_cq(ibcq);
	if (err)
		return err;
	munmap(cq->ring, cq->ring_len);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Queue pairs                                                        */
/* ------------------------------------------------------------------ */

#define RS_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		     IBV_QP_EX_WITH_SEND_WITH_INV |                          \
		     IBV_QP_EX_WITH_RDMA_WRITE |                             \
		     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                    \
		     IBV_QP_EX_WITH_RDMA_READ |                              \
		     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                     \
		     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |                   \
		     IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |       \
		     IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE)

static void rs_qp_fill_wr_pfns(struct rs_qp *qp,
			       const struct ibv_qp_init_attr_ex *attr);

static int rs_map_wq(struct ibv_context *context, struct rs_wq *wq,
		     uint64_t key, uint32_t bytes, uint32_t log_size,
		     uint32_t stride, uint32_t hdr, uint32_t max_sge)
{
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	/* A queue the kernel did not allocate: always full. */
	if (!bytes && !log_size)
		return 0;
	if (log_size < 1 || log_size > RS_MAX_WQ_LOG || stride < hdr ||
	    (stride & (stride - 1)) || (uint64_t)stride << log_size > bytes)
		return EINVAL;
	wq->wqe_cnt = 1u << log_size;
	wq->stride = stride;
	wq->max_sge = min_t(uint32_t, max_sge,
			    (stride - hdr) / sizeof(struct rs_sge));
	wq->buf_len = bytes;
	wq->buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       context->cmd_fd, key);
	if (wq->buf == MAP_FAILED) {
		wq->buf = NULL;
		return errno;
	}
	return 0;
}

static void rs_unmap_wq(struct rs_wq *wq)
{
	if (wq->buf)
		munmap(wq->buf, wq->buf_len);
	wq->buf = NULL;
}

static bool rs_qp_type_ok(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC || t == IBV_QPT_UC || t == IBV_QPT_UD ||
	       t == IBV_QPT_XRC_SEND || t == IBV_QPT_XRC_RECV ||
	       t == IBV_QPT_DRIVER;
}

static void rs_qp_fill_dv_pfns(struct rs_qp *qp, uint64_t dv_ops);

/*
 * The rsdv_create_qp() attributes: DC (IBV_QPT_DRIVER only) and the
 * memory key work requests (RC, UC and DCIs).  Returns the DC type or -1.
 */
static int rs_dv_qp_check(const struct ibv_qp_init_attr_ex *attr,
			  const struct rsdv_qp_init_attr *dv)
{
	uint8_t dc_type = 0;

	if (!dv)
		return attr->qp_type == IBV_QPT_DRIVER ? -1 : 0;
	if (!check_comp_mask(dv->comp_mask, RSDV_QP_INIT_ATTR_MASK_DC |
					    RSDV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) ||
	    dv->create_flags)
		return -1;
	if (dv->comp_mask & RSDV_QP_INIT_ATTR_MASK_DC) {
		if (attr->qp_type != IBV_QPT_DRIVER ||
		    (dv->dc_init_attr.dc_type != RSDV_DCTYPE_DCI &&
		     dv->dc_init_attr.dc_type != RSDV_DCTYPE_DCT) ||
		    (dv->dc_init_attr.dc_type == RSDV_DCTYPE_DCI &&
		     dv->dc_init_attr.dct_access_key))
			return -1;
		dc_type = dv->dc_init_attr.dc_type;
	} else if (attr->qp_type == IBV_QPT_DRIVER) {
		return -1;
	}
	if ((dv->comp_mask & RSDV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) &&
	    (!check_comp_mask(dv->send_ops_flags,
			      RSDV_QP_EX_WITH_MR_INTERLEAVED |
			      RSDV_QP_EX_WITH_MR_LIST) ||
	     (dv->send_ops_flags &&
	      ((attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
		dc_type != RSDV_DCTYPE_DCI) ||
	       !(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)))))
		return -1;
	return dc_type;
}

static struct ibv_qp *rs_create_qp_common(struct ibv_context *context,
					  struct ibv_qp_init_attr_ex *attr,
					  const struct rsdv_qp_init_attr *dv)
{
	struct rs_context *ctx = to_rs_ctx(context);
	struct rs_create_qp_resp resp = {};
	struct rs_uverbs_create_qp_resp *drv = &resp.drv_payload;
	struct rs_create_qp cmd = {};
	struct rs_create_dc_qp dc_cmd = {};
	struct ibv_qp_init_attr_ex kattr;
	bool xsend = attr->qp_type == IBV_QPT_XRC_SEND;
	bool xrecv = attr->qp_type == IBV_QPT_XRC_RECV;
	bool dci = false, dct = false, want_dbr;
	struct rs_qp *qp;
	int dc_type;
	int err;

	if (!rs_qp_type_ok(attr->qp_type)) {
		err = EOPNOTSUPP;
		goto err_out;
	}
	dc_type = rs_dv_qp_check(attr, dv);
	if (dc_type < 0) {
		err = EINVAL;
		goto err_out;
	}
	dci = dc_type == RSDV_DCTYPE_DCI;
	dct = dc_type == RSDV_DCTYPE_DCT;
	/*
	 * Every field behind a comp_mask bit may hold its default (no
	 * create flags, no TSO header, no RSS; no XRC domain but for
	 * XRC_RECV): such a bit is accepted and dropped before the command,
	 * which knows only PD, XRCD and SEND_OPS_FLAGS.  Anything else is
	 * not offered.
	 */
	if (!check_comp_mask(attr->comp_mask, IBV_QP_INIT_ATTR_PD |
					      IBV_QP_INIT_ATTR_XRCD |
					      IBV_QP_INIT_ATTR_CREATE_FLAGS |
					      IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
					      IBV_QP_INIT_ATTR_IND_TABLE |
					      IBV_QP_INIT_ATTR_RX_HASH |
					      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ||
	    (!xrecv && (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) &&
	     attr->xrcd) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) &&
	     attr->max_tso_header) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) &&
	     attr->rwq_ind_tbl) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) &&
	     (attr->rx_hash_conf.rx_hash_function ||
	      attr->rx_hash_conf.rx_hash_key_len ||
	      attr->rx_hash_conf.rx_hash_fields_mask)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     !check_comp_mask(attr->send_ops_flags, RS_SEND_OPS))) {
		err = EOPNOTSUPP;
		goto err_out;
	}

	kattr = *attr;
	if (xrecv) {
		/*
		 * An XRC target: its domain only; no PD, CQs, SRQ or queues
		 * (the sizes asked for are ignored, as the kernel does), and
		 * no send operations.
		 */
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) ||
		    !attr->xrcd || attr->srq ||
		    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
		     attr->send_ops_flags)) {
			err = EINVAL;
			goto err_out;
		}
		kattr.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		kattr.pd = NULL;
		kattr.send_cq = NULL;
		kattr.recv_cq = NULL;
		memset(&kattr.cap, 0, sizeof(kattr.cap));
	} else {
		/*
		 * An XRC initiator and a DCI have no receive side; uverbs
		 * wants a receive CQ all the same for a DCI (the send CQ, as
		 * it takes for a QP without one).  A DCT has no queues: uverbs
		 * wants a send CQ, it gets the receive CQ.
		 */
		if (xsend || dci) {
			kattr.recv_cq = dci ? attr->send_cq : NULL;
			kattr.cap.max_recv_wr = 0;
			kattr.cap.max_recv_sge = 0;
		}
		/* With an SRQ they are ignored (ibv_create_qp(3), rxe). */
		if (attr->srq) {
			kattr.cap.max_recv_wr = 0;
			kattr.cap.max_recv_sge = 0;
		}
		if (dct) {
			if (!kattr.send_cq)
				kattr.send_cq = attr->recv_cq;
			memset(&kattr.cap, 0, sizeof(kattr.cap));
		}
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
		    !kattr.send_cq || (!xsend && !kattr.recv_cq) ||
		    ((xsend || dci) && attr->srq) || (dct && !attr->srq) ||
		    kattr.cap.max_send_sge > ctx->max_send_sge ||
		    kattr.cap.max_recv_sge > ctx->max_recv_sge ||
		    kattr.cap.max_inline_data > ctx->max_inline ||
		    kattr.cap.max_send_wr > (1u << RS_MAX_WQ_LOG) ||
		    kattr.cap.max_recv_wr > (1u << RS_MAX_WQ_LOG)) {
			err = EINVAL;
			goto err_out;
		}
		kattr.comp_mask &= IBV_QP_INIT_ATTR_PD |
				   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		err = ENOMEM;
		goto err_out;
	}

	/* ABI 1.11: a doorbell record, if the driver gives them. */
	want_dbr = !xrecv && !dct &&
		   (ctx->uflags & RS_UVERBS_UCTX_F_DB_RECORD);
	if (dc_type || want_dbr) {
		dc_cmd.drv_payload.dc_type = !dc_type ? RS_UVERBS_DC_NONE :
					     dci ? RS_UVERBS_DC_DCI :
						   RS_UVERBS_DC_DCT;
		dc_cmd.drv_payload.dct_access_key =
			dct ? dv->dc_init_attr.dct_access_key : 0;
		dc_cmd.drv_payload.flags = want_dbr ?
					   RS_UVERBS_QP_F_DB_RECORD : 0;
		err = ibv_cmd_create_qp_ex(context, &qp->vqp, &kattr,
					   &dc_cmd.ibv_cmd, sizeof(dc_cmd),
					   &resp.ibv_resp, sizeof(resp));
	} else {
		err = ibv_cmd_create_qp_ex(context, &qp->vqp, &kattr,
					   &cmd.ibv_cmd, sizeof(cmd),
					   &resp.ibv_resp, sizeof(resp));
	}
	if (err)
		goto err_free;
	qp->dc_type = dc_type;
	qp->state = IBV_QPS_RESET;
	qp->sq_sig_all = attr->sq_sig_all;

	if (xrecv) {
		/* The kernel creates it without driver data: no rings. */
		qp->qpn = qp->vqp.qp.qp_num & RS_HANDLE_INDEX_MASK;
		rs_map_wq(context, &qp->sq, 0, 0, 0, 0, 0, 0);
		rs_map_wq(context, &qp->rq, 0, 0, 0, 0, 0, 0);
		qp->sq_signaled = calloc(1, 1);
		if (!qp->sq_signaled) {
			err = ENOMEM;
			goto err_unmap;
		}
		attr->cap = kattr.cap;
		return &qp->vqp.qp;
	}

	qp->qpn = drv->qpn & RS_HANDLE_INDEX_MASK;
	qp->srq = attr->srq ?
		  container_of(attr->srq, struct rs_srq, vsrq.srq) : NULL;
	qp->max_inline = drv->max_inline;
	if (qp->max_inline > drv->sq_stride - sizeof(struct rs_send_wqe_ctrl))
		qp->max_inline = drv->sq_stride - sizeof(struct rs_send_wqe_ctrl);

	err = rs_map_wq(context, &qp->sq, drv->sq_mmap_key, drv->sq_bytes,
			drv->sq_log_size, drv->sq_stride,
			sizeof(struct rs_send_wqe_ctrl),
			kattr.cap.max_send_sge);
	if (err)
		goto err_destroy;
	if (want_dbr && (drv->flags & RS_UVERBS_QP_RESP_F_DB_RECORD) &&
	    !(drv->db_record_offset % RS_DB_RECORD_ALIGN) &&
	    (size_t)drv->db_record_offset + sizeof(struct rs_db_record) <=
	    qp->sq.buf_len)
		qp->dbrec = (struct rs_db_record *)(qp->sq.buf +
						    drv->db_record_offset);
	err = rs_map_wq(context, &qp->rq, drv->rq_mmap_key, drv->rq_bytes,
			drv->rq_log_size, drv->rq_stride,
			sizeof(struct rs_recv_wqe_ctrl),
			kattr.cap.max_recv_sge);
	if (err)
		goto err_unmap;
	qp->sq_signaled = calloc(qp->sq.wqe_cnt ? qp->sq.wqe_cnt : 1, 1);
	if (!qp->sq_signaled) {
		err = ENOMEM;
		goto err_unmap;
	}

	err = rs_qp_table_insert(ctx, qp);
	if (err)
		goto err_unmap;

	/* What the rings really hold. */
	attr->cap.max_send_wr = qp->sq.wqe_cnt;
	attr->cap.max_recv_wr = qp->rq.wqe_cnt;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		rs_qp_fill_wr_pfns(qp, attr);
		rs_qp_fill_dv_pfns(qp, dv && (dv->comp_mask &
					      RSDV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) ?
				   dv->send_ops_flags : 0);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_unmap:
	free(qp->sq_signaled);
	rs_unmap_wq(&qp->rq);
	rs_unmap_wq(&qp->sq);
err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
err_out:
	verbs_err(verbs_get_ctx(context), "rdma_session: create QP failed: %s\n",
		  strerror(err));
	errno = err;
	return NULL;
}

struct ibv_qp *rs_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *qp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;
	qp = rs_create_qp_common(pd->context, &attr_ex, NULL);
	if (qp)
		memcpy(attr, &attr_ex, sizeof(*attr));
	return qp;
}

struct ibv_qp *rs_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *attr)
{
	return rs_create_qp_common(context, attr, NULL);
}

struct ibv_qp *rs_create_qp_dv(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *attr,
			       const struct rsdv_qp_init_attr *dv)
{
	return rs_create_qp_common(context, attr, dv);
}

int rs_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		struct ibv_qp_init_attr *init_attr)
{
	struct rs_qp *qp = to_rs_qp(ibqp);
	struct ibv_query_qp cmd;
	int err;

	err = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (err)
		return err;
	attr->cap.max_send_wr = qp->sq.wqe_cnt;
	attr->cap.max_recv_wr = qp->rq.wqe_cnt;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;
	init_attr->cap = attr->cap;
	return 0;
}

int rs_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct rs_qp *qp = to_rs_qp(ibqp);
	struct ibv_modify_qp cmd;
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (!(attr_mask & IBV_QP_STATE))
		return 0;

	pthread_spin_lock(&qp->sq.lock);
	pthread_spin_lock(&qp->rq.lock);
	qp->state = attr->qp_state;
	/* A QP back in RESET starts its rings over, as the device does. */
	if (attr->qp_state == IBV_QPS_RESET) {
		qp->sq.pi = qp->sq.ci = 0;
		memset(qp->sq_signaled, 0, qp->sq.wqe_cnt);
		qp->rq.pi = qp->rq.ci = 0;
		if (qp->dbrec) {
			qp->dbrec->sq_prod = 0;
			qp->dbrec->rq_prod = 0;
		}
	}
	pthread_spin_unlock(&qp->rq.lock);
	pthread_spin_unlock(&qp->sq.lock);
	return 0;
}

static void rs_cq_forget_qp(struct ibv_cq *ibcq, struct rs_qp *qp)
{
	struct rs_cq *cq;

	if (!ibcq)
		return;
	cq = to_rs_cq(ibcq);
	pthread_spin_lock(&cq->lock);
	if (cq->last_qp == qp)
		cq->last_qp = NULL;
	if (cq->cur_qp == qp)
		cq->cur_qp = NULL;
	pthread_spin_unlock(&cq->lock);
}

int rs_destroy_qp(struct ibv_qp *ibqp)
{
	struct rs_context *ctx = to_rs_ctx(ibqp->context);
	struct rs_qp *qp = to_rs_qp(ibqp);
	int err;

	err = ibv_cmd_destroy_qp(ibqp);
	if (err)
		return err;

	rs_qp_table_remove(ctx, qp);
	rs_cq_forget_qp(ibqp->send_cq, qp);
	if (ibqp->recv_cq != ibqp->send_cq)
		rs_cq_forget_qp(ibqp->recv_cq, qp);
	rs_unmap_wq(&qp->sq);
	rs_unmap_wq(&qp->rq);
	pthread_spin_destroy(&qp->sq.lock);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp->sq_signaled);
	free(qp);
	return 0;
}

/*
 * Another process's XRC target QP, by number, in an XRC domain this
 * process opened too: a handle for modify, query and destroy only.
 */
struct ibv_qp *rs_open_qp(struct ibv_context *context,
			  struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_open_qp cmd;
	struct rs_qp *qp;
	int err;

	if ((attr->comp_mask & IBV_QP_OPEN_ATTR_TYPE) &&
	    attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	qp->sq_signaled = calloc(1, 1);
	if (!qp->sq_signaled) {
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_open_qp(context, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(qp->sq_signaled);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->qpn = attr->qp_num & RS_HANDLE_INDEX_MASK;
	qp->state = IBV_QPS_UNKNOWN;
	rs_map_wq(context, &qp->sq, 0, 0, 0, 0, 0, 0);
	rs_map_wq(context, &qp->rq, 0, 0, 0, 0, 0, 0);
	return &qp->vqp.qp;
}

/* ------------------------------------------------------------------ */
/* Posting work requests                                              */
/* ------------------------------------------------------------------ */

static inline bool rs_wq_full(const struct rs_wq *wq)
{
	return wq->pi - __atomic_load_n(&wq->ci, __ATOMIC_ACQUIRE) >=
	       wq->wqe_cnt;
}

static inline void *rs_wqe(const struct rs_wq *wq, uint32_t idx)
{
	return wq->buf + (size_t)(idx & (wq->wqe_cnt - 1)) * wq->stride;
}

static uint8_t rs_wqe_flags(const struct rs_qp *qp, unsigned int send_flags)
{
	uint8_t f = 0;

	if ((send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		f |= RS_WQE_F_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		f |= RS_WQE_F_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		f |= RS_WQE_F_FENCE;
	return f;
}

/*
 * Which opcodes a QP type accepts (IBTA: UD sends only, UC no reads; an
 * XRC initiator RC's requests, which the device carries in XRC packets,
 * but no windows, FLUSH or ATOMIC WRITE; an XRC target sends nothing).
 */
static bool rs_opcode_ok(enum ibv_qp_type type, uint8_t op)
{
	/* IBV_QPT_DRIVER: a DCI (a DCT has no send queue: never here). */
	bool dci = type == IBV_QPT_DRIVER;

	if (type == IBV_QPT_XRC_RECV)
		return false;
	switch (op) {
	case RS_WR_SEND:
	case RS_WR_SEND_IMM:
	case RS_WR_RDMA_WRITE:
	case RS_WR_RDMA_WRITE_IMM:
		return type != IBV_QPT_UD || op == RS_WR_SEND ||
		       op == RS_WR_SEND_IMM;
	case RS_WR_SEND_INV:
		return type != IBV_QPT_UD && !dci;
	/*
	 * Memory windows: RC and UC (IBTA 10.6.7.2); LOCAL_INV also
	 * empties an indirect/pattern key, which DCIs fill too.
	 */
	case RS_WR_LOCAL_INV:
		return type == IBV_QPT_RC || type == IBV_QPT_UC || dci;
	case RS_WR_BIND_MW:
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	case RS_WR_REG_INDIRECT:
	case RS_WR_REG_PATTERN:
		return type == IBV_QPT_RC || type == IBV_QPT_UC || dci;
	case RS_WR_RDMA_READ:
	case RS_WR_ATOMIC_CMP_SWP:
	case RS_WR_ATOMIC_FETCH_ADD:
		return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND || dci;
	case RS_WR_FLUSH:
	case RS_WR_ATOMIC_WRITE:
		return type == IBV_QPT_RC;
	default:
		return false;
	}
}

/* The XRCETH's SRQ number is 24 bits. */
#define RS_XRC_SRQN_MAX 0xffffffu

static int rs_ibv_opcode(enum ibv_wr_opcode op, uint8_t *out)
{
	switch (op) {
	case IBV_WR_SEND:
		*out = RS_WR_SEND;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		*out = RS_WR_SEND_IMM;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		*out = RS_WR_SEND_INV;
		return 0;
	case IBV_WR_RDMA_WRITE:
		*out = RS_WR_RDMA_WRITE;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = RS_WR_RDMA_WRITE_IMM;
		return 0;
	case IBV_WR_RDMA_READ:
		*out = RS_WR_RDMA_READ;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*out = RS_WR_ATOMIC_CMP_SWP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*out = RS_WR_ATOMIC_FETCH_ADD;
		return 0;
	case IBV_WR_LOCAL_INV:
		/* Of a type 2 window: a user MR's key fails the WQE. */
		*out = RS_WR_LOCAL_INV;
		return 0;
	case IBV_WR_BIND_MW:
		*out = RS_WR_BIND_MW;
		return 0;
	default:
		return EINVAL;
	}
}

static void rs_set_sges(struct rs_send_wqe_ctrl *ctrl, const struct ibv_sge *sg,
			size_t n)
{
	struct rs_sge *dst = (struct rs_sge *)(ctrl + 1);
	size_t i;

	for (i = 0; i < n; i++) {
		dst[i].addr = htole64(sg[i].addr);
		dst[i].length = htole32(sg[i].length);
		dst[i].lkey = htole32(sg[i].lkey);
	}
	ctrl->num_sge = n;
}

/* Copy inline data behind the control segment; EINVAL if too long. */
static int rs_set_inline(struct rs_qp *qp, struct rs_send_wqe_ctrl *ctrl,
			 const struct ibv_data_buf *bufs, size_t n)
{
	uint8_t *dst = (uint8_t *)(ctrl + 1);
	size_t len = 0, i;

	for (i = 0; i < n; i++) {
		if (bufs[i].length > qp->max_inline - len)
			return EINVAL;
		memcpy(dst + len, bufs[i].addr, bufs[i].length);
		len += bufs[i].length;
	}
	ctrl->flags |= RS_WQE_F_INLINE;
	ctrl->num_sge = 0;
	ctrl->inline_len = htole32(len);
	return 0;
}

/* The same bits in enum rs_access; FLUSH_GLOBAL is translated. */
#define RS_MW_REMOTE (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		      IBV_ACCESS_REMOTE_ATOMIC)

/*
 * A BIND_MW WQE in the control segment.  The window gets the remote
 * rights of mw_access_flags; other flags (IBV_ACCESS_LOCAL_WRITE, which
 * programs for ConnectX and soft-RoCE pass) are accepted and ignored as
 * both do.  EINVAL for a zero-based window, which is not offered (rxe
 * refuses it too).
 */
static int rs_set_bind(struct rs_send_wqe_ctrl *ctrl, struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct rs_send_wqe_bind_mw *b = (struct rs_send_wqe_bind_mw *)ctrl;

	if (!mw || (bi->mw_access_flags & IBV_ACCESS_ZERO_BASED) ||
	    (bi->length && !bi->mr))
		return EINVAL;
	b->mw_rkey = htole32(mw->rkey);
	b->new_rkey = htole32(rkey);
	b->addr = htole64(bi->addr);
	b->length = htole64(bi->length);
	b->mr_lkey = htole32(bi->length ? bi->mr->lkey : 0);
	b->access = htole16((bi->mw_access_flags & RS_MW_REMOTE) |
			    (bi->mw_access_flags & IBV_ACCESS_FLUSH_GLOBAL ?
			     RS_ACCESS_FLUSH_GLOBAL : 0));
	return 0;
}

static inline void rs_sq_doorbell(struct rs_qp *qp)
{
	rs_wq_db(to_rs_ctx(qp->vqp.qp.context),
		 qp->dbrec ? &qp->dbrec->sq_prod : NULL,
		 qp->dbrec ? &qp->dbrec->sq_active : NULL, RS_DB_SQ,
		 qp->qpn, qp->sq.pi);
}

/*
 * Which states take work requests (IBTA 10.8.2, C10-40/C10-42; Linux
 * rxe and the kernel driver alike): the send queue from RTS on, where
 * SQD queues them, and SQE and ERR complete them with flush errors; the
 * receive queue in every state but RESET.
 */
static inline bool rs_sq_state_ok(const struct rs_qp *qp)
{
	return qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD ||
	       qp->state == IBV_QPS_SQE || qp->state == IBV_QPS_ERR;
}

static inline bool rs_rq_state_ok(const struct rs_qp *qp)
{
	return qp->state != IBV_QPS_RESET && qp->state != IBV_QPS_UNKNOWN;
}

/* Start a send WQE in the next slot (sq.lock held, room checked). */
static struct rs_send_wqe_ctrl *rs_sq_begin(struct rs_qp *qp, uint64_t wr_id,
					    uint8_t opcode, uint8_t flags)
{
	struct rs_send_wqe_ctrl *ctrl = rs_wqe(&qp->sq, qp->sq.pi);

	memset(ctrl, 0, sizeof(*ctrl));
	ctrl->wr_id = htole64(wr_id);
	ctrl->opcode = opcode;
	ctrl->flags = flags;
	qp->sq_signaled[qp->sq.pi & (qp->sq.wqe_cnt - 1)] =
		!!(flags & RS_WQE_F_SIGNALED);
	return ctrl;
}

int rs_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr)
{
	struct rs_qp *qp = to_rs_qp(ibqp);
	struct rs_send_wqe_ctrl *ctrl;
	uint32_t start;
	uint8_t opcode;
	int err = 0;
	int i;

	/*
	 * An XRC target and a DCT have no send queue; a DCI's WQEs need
	 * their target, which only rsdv_wr_set_dc_addr() gives.
	 */
	if (ibqp->qp_type == IBV_QPT_XRC_RECV ||
	    ibqp->qp_type == IBV_QPT_DRIVER) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq.lock);
	start = qp->sq.pi;
	if (!rs_sq_state_ok(qp))
		err = EINVAL;
	for (; wr && !err; wr = wr->next) {
		if (rs_wq_full(&qp->sq)) {
			err = ENOMEM;
			break;
		}
		if (rs_ibv_opcode(wr->opcode, &opcode) ||
		    !rs_opcode_ok(ibqp->qp_type, opcode) || wr->num_sge < 0 ||
		    (!(wr->send_flags & IBV_SEND_INLINE) &&
		     (uint32_t)wr->num_sge > qp->sq.max_sge)) {
			err = EINVAL;
			break;
		}

		ctrl = rs_sq_begin(qp, wr->wr_id, opcode,
				   rs_wqe_flags(qp, wr->send_flags));
		switch (opcode) {
		case RS_WR_SEND_IMM:
		case RS_WR_RDMA_WRITE_IMM:
			ctrl->imm_or_inv = htole32(be32toh(wr->imm_data));
			break;
		case RS_WR_SEND_INV:
		case RS_WR_LOCAL_INV:
			ctrl->imm_or_inv = htole32(wr->invalidate_rkey);
			break;
		default:
			break;
		}
		if (opcode == RS_WR_BIND_MW) {
			err = rs_set_bind(ctrl, wr->bind_mw.mw, wr->bind_mw.rkey,
					  &wr->bind_mw.bind_info);
			if (err)
				break;
			__atomic_store_n(&qp->sq.pi, qp->sq.pi + 1,
					 __ATOMIC_RELEASE);
			continue;
		}
		if (opcode == RS_WR_LOCAL_INV) {
			__atomic_store_n(&qp->sq.pi, qp->sq.pi + 1,
					 __ATOMIC_RELEASE);
			continue;
		}
		switch (opcode) {
		case RS_WR_RDMA_WRITE:
		case RS_WR_RDMA_WRITE_IMM:
		case RS_WR_RDMA_READ:
			ctrl->remote_addr = htole64(wr->wr.rdma.remote_addr);
			ctrl->rkey = htole32(wr->wr.rdma.rkey);
			break;
		case RS_WR_ATOMIC_CMP_SWP:
		case RS_WR_ATOMIC_FETCH_ADD:
			ctrl->remote_addr = htole64(wr->wr.atomic.remote_addr);
			ctrl->rkey = htole32(wr->wr.atomic.rkey);
			ctrl->compare_add = htole64(wr->wr.atomic.compare_add);
			ctrl->swap = htole64(wr->wr.atomic.swap);
			break;
		default:
			break;
		}
		if (ibqp->qp_type == IBV_QPT_UD) {
			if (!wr->wr.ud.ah) {
				err = EINVAL;
				break;
			}
			ctrl->ah = htole32(to_rs_ah(wr->wr.ud.ah)->handle);
			ctrl->remote_qpn = htole32(wr->wr.ud.remote_qpn);
			ctrl->remote_qkey = htole32(wr->wr.ud.remote_qkey);
		}
		if (ibqp->qp_type == IBV_QPT_XRC_SEND) {
			if (wr->qp_type.xrc.remote_srqn > RS_XRC_SRQN_MAX) {
				err = EINVAL;
				break;
			}
			ctrl->xrc_srqn = htole32(wr->qp_type.xrc.remote_srqn);
		}

		if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge &&
		    opcode != RS_WR_RDMA_READ && opcode != RS_WR_ATOMIC_CMP_SWP &&
		    opcode != RS_WR_ATOMIC_FETCH_ADD) {
			struct ibv_data_buf bufs[RS_MAX_SGE];

			if (wr->num_sge > RS_MAX_SGE) {
				err = EINVAL;
				break;
			}
			for (i = 0; i < wr->num_sge; i++) {
				bufs[i].addr = (void *)(uintptr_t)wr->sg_list[i].addr;
				bufs[i].length = wr->sg_list[i].length;
			}
			err = rs_set_inline(qp, ctrl, bufs, wr->num_sge);
			if (err)
				break;
		} else {
			if ((uint32_t)wr->num_sge > qp->sq.max_sge) {
				err = EINVAL;
				break;
			}
			rs_set_sges(ctrl, wr->sg_list, wr->num_sge);
		}
		/* Publish the slot's signalled flag before the index. */
		__atomic_store_n(&qp->sq.pi, qp->sq.pi + 1, __ATOMIC_RELEASE);
	}
	if (err)
		*bad_wr = wr;
	if (qp->sq.pi != start)
		rs_sq_doorbell(qp);
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

int rs_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	struct rs_qp *qp = to_rs_qp(ibqp);
	struct rs_recv_wqe_ctrl *ctrl;
	struct rs_sge *sge;
	uint32_t start;
	int err = 0;
	int i;

	/* No receive queue: an SRQ's QP, or XRC (requests go to XRC SRQs). */
	if (qp->srq || ibqp->qp_type == IBV_QPT_XRC_SEND ||
	    ibqp->qp_type == IBV_QPT_XRC_RECV) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq.lock);
	start = qp->rq.pi;
	if (!rs_rq_state_ok(qp))
		err = EINVAL;
	for (; wr && !err; wr = wr->next) {
		if (rs_wq_full(&qp->rq)) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->rq.max_sge) {
			err = EINVAL;
			break;
		}
		ctrl = rs_wqe(&qp->rq, qp->rq.pi);
		memset(ctrl, 0, sizeof(*ctrl));
		ctrl->wr_id = htole64(wr->wr_id);
		ctrl->num_sge = wr->num_sge;
		sge = (struct rs_sge *)(ctrl + 1);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = htole64(wr->sg_list[i].addr);
			sge[i].length = htole32(wr->sg_list[i].length);
			sge[i].lkey = htole32(wr->sg_list[i].lkey);
		}
		qp->rq.pi++;
	}
	if (err)
		*bad_wr = wr;
	if (qp->rq.pi != start)
		rs_wq_db(to_rs_ctx(ibqp->context),
			 qp->dbrec ? &qp->dbrec->rq_prod : NULL,
			 qp->dbrec ? &qp->dbrec->rq_active : NULL, RS_DB_RQ,
			 qp->qpn, qp->rq.pi);
	pthread_spin_unlock(&qp->rq.lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* Shared receive queues                                              */
/* ------------------------------------------------------------------ */

static inline struct rs_srq *to_rs_srq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct rs_srq, vsrq.srq);
}

/*
 * The ring of a new SRQ (basic or XRC alike), from the kernel's driver
 * data; on failure the SRQ is destroyed again.
 */
static int rs_srq_map(struct ibv_context *context, struct rs_srq *srq,
		      const struct rs_uverbs_create_srq_resp *drv)
{
	int err;

	srq->srq_index = drv->srq_index;
	err = rs_map_wq(context, &srq->wq, drv->ring_mmap_key,
			drv->ring_bytes, drv->log_size, drv->stride,
			sizeof(struct rs_recv_wqe_ctrl), drv->max_sge);
	if (err || !srq->wq.wqe_cnt) {
		rs_unmap_wq(&srq->wq);
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		return err ? err : EINVAL;
	}
	return 0;
}

struct ibv_srq *rs_create_srq(struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct rs_context *ctx = to_rs_ctx(pd->context);
	struct rs_create_srq_resp resp = {};
	struct rs_create_srq cmd = {};
	struct rs_srq *srq;
	int err;

	if (attr->attr.max_sge > ctx->max_recv_sge ||
	    attr->attr.max_wr > (1u << RS_MAX_WQ_LOG)) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (!err)
		err = rs_srq_map(pd->context, srq, &resp.drv_payload);
	if (err) {
		free(srq);
		errno = err;
		return NULL;
	}
	attr->attr.max_wr = srq->wq.wqe_cnt;
	attr->attr.max_sge = srq->wq.max_sge;
	return &srq->vsrq.srq;
}

/*
 * An XRC SRQ: a basic SRQ's ring, plus its domain and the CQ of its
 * receive completions; its number (ibv_get_srq_num) goes into the
 * context's table for the poll path.
 */
static struct ibv_srq *rs_create_xrc_srq(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr)
{
	struct rs_context *ctx = to_rs_ctx(context);
	struct rs_create_xsrq_resp resp = {};
	struct rs_create_xsrq cmd = {};
	struct ibv_srq_init_attr_ex kattr = *attr;
	struct rs_srq *srq;
	int err;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
	    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq ||
	    attr->attr.max_sge > ctx->max_recv_sge ||
	    attr->attr.max_wr > (1u << RS_MAX_WQ_LOG)) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	kattr.comp_mask &= IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			   IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	err = ibv_cmd_create_srq_ex(context, &srq->vsrq, &kattr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err_free;
	err = rs_srq_map(context, srq, &resp.drv_payload);
	if (err)
		goto err_free;
	if (!srq->vsrq.srq_num || srq->vsrq.srq_num > RS_XRC_SRQN_MAX) {
		err = EINVAL;
		goto err_destroy;
	}
	err = rs_srq_table_insert(ctx, srq);
	if (err)
		goto err_destroy;
	/* What libibverbs' ibv_create_srq() fills in for the basic path. */
	srq->vsrq.srq.srq_context = attr->srq_context;
	srq->vsrq.srq.pd = attr->pd;
	srq->vsrq.srq.events_completed = 0;
	attr->attr.max_wr = srq->wq.wqe_cnt;
	attr->attr.max_sge = srq->wq.max_sge;
	return &srq->vsrq.srq;

err_destroy:
	rs_unmap_wq(&srq->wq);
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_free:
	free(srq);
	errno = err;
	return NULL;
}

/*
 * ibv_create_srq_ex: a basic SRQ, whatever bits with default values come
 * along (no XRC domain or CQ: those are XRC's; no tag matching), or an
 * XRC SRQ.  libibverbs calls create_srq itself for PD and TYPE BASIC
 * alone.
 */
struct ibv_srq *rs_create_srq_ex(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr init = {
		.srq_context = attr->srq_context,
		.attr = attr->attr,
	};
	bool xrc = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
		   attr->srq_type == IBV_SRQT_XRC;
	struct ibv_srq *srq;

	if (!check_comp_mask(attr->comp_mask, IBV_SRQ_INIT_ATTR_TYPE |
					      IBV_SRQ_INIT_ATTR_PD |
					      IBV_SRQ_INIT_ATTR_XRCD |
					      IBV_SRQ_INIT_ATTR_CQ |
					      IBV_SRQ_INIT_ATTR_TM) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC && !xrc) ||
	    (!xrc && (attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) &&
	     attr->xrcd) ||
	    (!xrc && (attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) && attr->cq) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) &&
	     (attr->tm_cap.max_num_tags || attr->tm_cap.max_ops))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if (xrc)
		return rs_create_xrc_srq(context, attr);
	srq = rs_create_srq(attr->pd, &init);
	if (!srq)
		return NULL;
	/* What libibverbs' ibv_create_srq() fills in for the other path. */
	srq->context = context;
	srq->srq_context = attr->srq_context;
	srq->pd = attr->pd;
	srq->events_completed = 0;
	pthread_mutex_init(&srq->mutex, NULL);
	pthread_cond_init(&srq->cond, NULL);
	attr->attr = init.attr;
	return srq;
}

/*
 * IBV_SRQ_MAX_WR: the kernel writes the new ring and the number of WQEs
 * the device moved to its slots 0, 1, ... into resp (struct
 * rs_uverbs_modify_srq).  The SRQ lock is held throughout, so no post
 * races the move; the poll path only counts completions in "done".  The
 * WQEs taken before the resize whose completions are not polled yet
 * (pi - done - moved of them) stay counted as outstanding: "done" is
 * moved back by the old pi - moved, so pi - done is unchanged and a slot
 * of the new ring is reused only after as many completions as before.
 */
int rs_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		  int attr_mask)
{
	struct rs_srq *srq = to_rs_srq(ibsrq);
	struct rs_wq *wq = &srq->wq;
	struct rs_uverbs_modify_srq_resp resp = {};
	struct rs_modify_srq cmd = {};
	uint8_t *buf;
	int err;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
					  sizeof(cmd.ibv_cmd));
	if (attr->max_wr > (1u << RS_MAX_WQ_LOG))
		return EINVAL;

	cmd.drv_payload.resp_addr = (uintptr_t)&resp;
	pthread_spin_lock(&wq->lock);
	err = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (err)
		goto out;
	if (resp.log_size < 1 || resp.log_size > RS_MAX_WQ_LOG ||
	    (uint64_t)wq->stride << resp.log_size > resp.ring_bytes ||
	    resp.wqes_moved > (1u << resp.log_size)) {
		buf = MAP_FAILED;
		errno = EINVAL;
	} else {
		buf = mmap(NULL, resp.ring_bytes, PROT_READ | PROT_WRITE,
			   MAP_SHARED, ibsrq->context->cmd_fd,
			   resp.ring_mmap_key);
	}
	if (buf == MAP_FAILED) {
		/*
		 * The device uses the new ring already: posting to the old
		 * one would lose the WQEs, so the SRQ stays full.
		 */
		err = errno;
		rs_unmap_wq(wq);
		wq->wqe_cnt = 0;
		goto out;
	}
	__atomic_fetch_sub(&srq->done, wq->pi - resp.wqes_moved,
			   __ATOMIC_RELEASE);
	wq->pi = resp.wqes_moved;
	rs_unmap_wq(wq);
	wq->buf = buf;
	wq->buf_len = resp.ring_bytes;
	wq->wqe_cnt = 1u << resp.log_size;
	attr->max_wr = wq->wqe_cnt;
out:
	pthread_spin_unlock(&wq->lock);
	return err;
}

int rs_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int rs_destroy_srq(struct ibv_srq *ibsrq)
{
	struct rs_srq *srq = to_rs_srq(ibsrq);
	int err;

	err = ibv_cmd_destroy_srq(ibsrq);
	if (err)
		return err;
	if (srq->vsrq.srq_type == IBV_SRQT_XRC)
		rs_srq_table_remove(to_rs_ctx(ibsrq->context), srq);
	rs_unmap_wq(&srq->wq);
	pthread_spin_destroy(&srq->wq.lock);
	free(srq);
	return 0;
}

int rs_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct rs_srq *srq = to_rs_srq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EOPNOTSUPP;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

int rs_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	struct rs_srq *srq = to_rs_srq(ibsrq);
	struct rs_wq *wq = &srq->wq;
	struct rs_recv_wqe_ctrl *ctrl;
	struct rs_sge *sge;
	uint32_t start;
	int err = 0;
	int i;

	pthread_spin_lock(&wq->lock);
	start = wq->pi;
	for (; wr; wr = wr->next) {
		if (wq->pi - __atomic_load_n(&srq->done, __ATOMIC_ACQUIRE) >=
		    wq->wqe_cnt) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			err = EINVAL;
			break;
		}
		ctrl = rs_wqe(wq, wq->pi);
		memset(ctrl, 0, sizeof(*ctrl));
		ctrl->wr_id = htole64(wr->wr_id);
		ctrl->num_sge = wr->num_sge;
		sge = (struct rs_sge *)(ctrl + 1);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = htole64(wr->sg_list[i].addr);
			sge[i].length = htole32(wr->sg_list[i].length);
			sge[i].lkey = htole32(wr->sg_list[i].lkey);
		}
		wq->pi++;
	}
	if (err)
		*bad_wr = wr;
	if (wq->pi != start) {
		udma_to_device_barrier();
		rs_ring_db(to_rs_ctx(ibsrq->context), RS_DB_SRQ,
			   (srq->srq_index & RS_DB_INDEX_MASK) |
			   (wq->pi << RS_DB_VALUE_SHIFT));
	}
	pthread_spin_unlock(&wq->lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* Extended send API (ibv_wr_*)                                        */
/* ------------------------------------------------------------------ */

static void rs_wr_start(struct ibv_qp_ex *qpx)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_start_pi = qp->sq.pi;
	/* wr_complete() then fails the whole batch, as post_send would. */
	qp->wr_err = rs_sq_state_ok(qp) ? 0 : EINVAL;
	qp->cur_wqe = NULL;
}

static int rs_wr_complete(struct ibv_qp_ex *qpx)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);
	int err = qp->wr_err;

	if (err)
		qp->sq.pi = qp->wr_start_pi;
	else if (qp->sq.pi != qp->wr_start_pi)
		rs_sq_doorbell(qp);
	qp->cur_wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void rs_wr_abort(struct ibv_qp_ex *qpx)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);

	qp->sq.pi = qp->wr_start_pi;
	qp->cur_wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/* Open the next WQE for an ibv_wr_<op>() call; NULL after an error. */
static struct rs_send_wqe_ctrl *rs_wr_new(struct ibv_qp_ex *qpx, uint8_t opcode)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);
	struct rs_send_wqe_ctrl *ctrl;

	qp->cur_wqe = NULL;
	if (qp->wr_err)
		return NULL;
	if (qp->dc_type == RSDV_DCTYPE_DCT) {
		qp->wr_err = EINVAL;
		return NULL;
	}
	if (rs_wq_full(&qp->sq)) {
		qp->wr_err = ENOMEM;
		return NULL;
	}
	if (!rs_opcode_ok(qpx->qp_base.qp_type, opcode)) {
		qp->wr_err = EINVAL;
		return NULL;
	}
	ctrl = rs_sq_begin(qp, qpx->wr_id, opcode, rs_wqe_flags(qp, qpx->wr_flags));
	__atomic_store_n(&qp->sq.pi, qp->sq.pi + 1, __ATOMIC_RELEASE);
	qp->cur_wqe = ctrl;
	return ctrl;
}

static void rs_wr_send(struct ibv_qp_ex *qpx)
{
	rs_wr_new(qpx, RS_WR_SEND);
}

static void rs_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct rs_send_wqe_ctrl *c = rs_wr_new(qpx, RS_WR_SEND_IMM);

	if (c)
		c->imm_or_inv = htole32(be32toh(imm_data));
}

static void rs_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct rs_send_wqe_ctrl *c = rs_wr_new(qpx, RS_WR_SEND_INV);

	if (c)
		c->imm_or_inv = htole32(invalidate_rkey);
}

static void rs_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct rs_send_wqe_ctrl *c = rs_wr_new(qpx, RS_WR_LOCAL_INV);

	if (c)
		c->imm_or_inv = htole32(invalidate_rkey);
	to_rs_qp_ex(qpx)->cur_wqe = NULL;	/* no SGEs or inline data */
}

static void rs_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			  uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct rs_send_wqe_ctrl *c = rs_wr_new(qpx, RS_WR_BIND_MW);
	struct rs_qp *qp = to_rs_qp_ex(qpx);

	if (!c)
		return;
	qp->cur_wqe = NULL;
	qp->wr_err = rs_set_bind(c, mw, rkey, bi);
}

static struct rs_send_wqe_ctrl *rs_wr_rdma(struct ibv_qp_ex *qpx, uint8_t op,
					   uint32_t rkey, uint64_t remote_addr)
{
	struct rs_send_wqe_ctrl *c = rs_wr_new(qpx, op);

	if (c) {
		c->rkey = htole32(rkey);
		c->remote_addr = htole64(remote_addr);
	}
	return c;
}

static void rs_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	rs_wr_rdma(qpx, RS_WR_RDMA_WRITE, rkey, remote_addr);
}

static void rs_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr, __be32 imm_data)
{
	struct rs_send_wqe_ctrl *c =
		rs_wr_rdma(qpx, RS_WR_RDMA_WRITE_IMM, rkey, remote_addr);

	if (c)
		c->imm_or_inv = htole32(be32toh(imm_data));
}

static void rs_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			    uint64_t remote_addr)
{
	rs_wr_rdma(qpx, RS_WR_RDMA_READ, rkey, remote_addr);
}

static void rs_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr, uint64_t compare,
				 uint64_t swap)
{
	struct rs_send_wqe_ctrl *c =
		rs_wr_rdma(qpx, RS_WR_ATOMIC_CMP_SWP, rkey, remote_addr);

	if (c) {
		c->compare_add = htole64(compare);
		c->swap = htole64(swap);
	}
}

static void rs_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr, uint64_t add)
{
	struct rs_send_wqe_ctrl *c =
		rs_wr_rdma(qpx, RS_WR_ATOMIC_FETCH_ADD, rkey, remote_addr);

	if (c)
		c->compare_add = htole64(add);
}

/*
 * FLUSH and ATOMIC WRITE exist only in the extended API, as in rxe: struct
 * ibv_send_wr has no fields for them.  Neither takes SGEs.
 */
static void rs_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			uint64_t remote_addr, size_t len, uint8_t type,
			uint8_t level)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);
	struct rs_send_wqe_ctrl *c;

	if (len > UINT32_MAX || !type ||
	    (type & ~(IBV_FLUSH_GLOBAL | IBV_FLUSH_PERSISTENT)) ||
	    level > IBV_FLUSH_MR) {
		qp->cur_wqe = NULL;
		if (!qp->wr_err)
			qp->wr_err = EINVAL;
		return;
	}
	c = rs_wr_rdma(qpx, RS_WR_FLUSH, rkey, remote_addr);
	if (c) {
		c->compare_add = htole64(len);
		c->imm_or_inv = htole32(type | level << RS_FLUSH_SEL_SHIFT);
	}
}

static void rs_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr, const void *atomic_wr)
{
	struct rs_send_wqe_ctrl *c =
		rs_wr_rdma(qpx, RS_WR_ATOMIC_WRITE, rkey, remote_addr);

	/* The 8 bytes as they are in memory. */
	if (c)
		memcpy(&c->compare_add, atomic_wr, sizeof(c->compare_add));
}

static void rs_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
			  uint32_t length)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	if (!qp->cur_wqe)
		return;
	if (qp->sq.max_sge < 1) {
		qp->wr_err = EINVAL;
		return;
	}
	rs_set_sges(qp->cur_wqe, &sge, 1);
}

static void rs_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			       const struct ibv_sge *sg_list)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);

	if (!qp->cur_wqe)
		return;
	if (num_sge > qp->sq.max_sge) {
		qp->wr_err = EINVAL;
		return;
	}
	rs_set_sges(qp->cur_wqe, sg_list, num_sge);
}

static void rs_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				       const struct ibv_data_buf *buf_list)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);
	int err;

	if (!qp->cur_wqe)
		return;
	err = rs_set_inline(qp, qp->cur_wqe, buf_list, num_buf);
	if (err)
		qp->wr_err = err;
}

static void rs_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				  size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	rs_wr_set_inline_data_list(qpx, 1, &buf);
}

static void rs_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			      uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);
	struct rs_send_wqe_ctrl *c = qp->cur_wqe;

	if (!c)
		return;
	if (!ah) {
		qp->wr_err = EINVAL;
		return;
	}
	c->ah = htole32(to_rs_ah(ah)->handle);
	c->remote_qpn = htole32(remote_qpn);
	c->remote_qkey = htole32(remote_qkey);
}

static void rs_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct rs_qp *qp = to_rs_qp_ex(qpx);

	if (!qp->cur_wqe)
		return;
	if (remote_srqn > RS_XRC_SRQN_MAX) {
		qp->wr_err = EINVAL;
		return;
	}
	qp->cur_wqe->xrc_srqn = htole32(remote_srqn);
}

static void rs_qp_fill_wr_pfns(struct rs_qp *qp,
			       const struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	uint64_t ops = attr->send_ops_flags;

	qpx->wr_start = rs_wr_start;
	qpx->wr_complete = rs_wr_complete;
	qpx->wr_abort = rs_wr_abort;
	if (ops & IBV_QP_EX_WITH_SEND)
		qpx->wr_send = rs_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		qpx->wr_send_imm = rs_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		qpx->wr_send_inv = rs_wr_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		qpx->wr_rdma_write = rs_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		qpx->wr_rdma_write_imm = rs_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		qpx->wr_rdma_read = rs_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		qpx->wr_atomic_cmp_swp = rs_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		qpx->wr_atomic_fetch_add = rs_wr_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		qpx->wr_local_inv = rs_wr_local_inv;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		qpx->wr_bind_mw = rs_wr_bind_mw;
	if (ops & IBV_QP_EX_WITH_FLUSH)
		qpx->wr_flush = rs_wr_flush;
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		qpx->wr_atomic_write = rs_wr_atomic_write;
	qpx->wr_set_sge = rs_wr_set_sge;
	qpx->wr_set_sge_list = rs_wr_set_sge_list;
	qpx->wr_set_inline_data = rs_wr_set_inline_data;
	qpx->wr_set_inline_data_list = rs_wr_set_inline_data_list;
	qpx->wr_set_ud_addr = rs_wr_set_ud_addr;
	if (attr->qp_type == IBV_QPT_XRC_SEND)
		qpx->wr_set_xrc_srqn = rs_wr_set_xrc_srqn;
}

/* ------------------------------------------------------------------ */
/* Direct verbs work requests (rsessiondv.h)                          */
/* ------------------------------------------------------------------ */

static inline struct rs_qp *to_rs_qp_dv(struct rsdv_qp_ex *mqp)
{
	return container_of(mqp, struct rs_qp, dv_qp);
}

/* The DCT number is 24 bits, as any QP number on the wire. */
#define RS_DCTN_MAX 0xffffffu

static void rs_wr_set_dc_addr(struct rsdv_qp_ex *mqp, struct ibv_ah *ah,
			      uint32_t remote_dctn, uint64_t remote_dc_key)
{
	struct rs_qp *qp = to_rs_qp_dv(mqp);
	struct rs_send_wqe_ctrl *c = qp->cur_wqe;

	if (!c)
		return;
	if (!ah || remote_dctn > RS_DCTN_MAX) {
		qp->wr_err = EINVAL;
		return;
	}
	c->ah = htole32(to_rs_ah(ah)->handle);
	c->remote_qpn = htole32(remote_dctn);
	c->dc_key_lo = htole32((uint32_t)remote_dc_key);
	c->dc_key_hi = htole32((uint32_t)(remote_dc_key >> 32));
}

#define RS_MKEY_IBV_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/*
 * Open a REG_INDIRECT / REG_PATTERN WQE: the 64-byte struct
 * rs_send_wqe_reg_mkey, its entries inline behind it.  NULL after an
 * error (recorded for wr_complete).
 */
static void *rs_wr_reg_mkey(struct rsdv_qp_ex *mqp, struct rsdv_mkey *dvkey,
			    bool pattern, uint32_t access, uint32_t repeat,
			    uint16_t n)
{
	struct rs_qp *qp = to_rs_qp_dv(mqp);
	struct rs_mkey *mkey = container_of(dvkey, struct rs_mkey, dv);
	uint8_t op = pattern ? RS_WR_REG_PATTERN : RS_WR_REG_INDIRECT;
	size_t esz = pattern ? sizeof(struct rs_pattern_entry) :
			       sizeof(struct rs_mkey_entry);
	struct rs_send_wqe_reg_mkey *w;
	uint64_t need = pattern ? RSDV_QP_EX_WITH_MR_INTERLEAVED :
				  RSDV_QP_EX_WITH_MR_LIST;

	qp->cur_wqe = NULL;
	if (qp->wr_err)
		return NULL;
	if (!(qp->dv_ops & need) || !mkey || mkey->pattern != pattern ||
	    !n || n > mkey->max_entries ||
	    sizeof(*w) + n * esz > qp->sq.stride ||
	    (access & ~RS_MKEY_IBV_ACCESS) || (pattern != !!repeat)) {
		qp->wr_err = EINVAL;
		return NULL;
	}
	w = (struct rs_send_wqe_reg_mkey *)rs_wr_new(&qp->vqp.qp_ex, op);
	if (!w)
		return NULL;
	qp->cur_wqe = NULL;		/* no SGEs */
	/* rs_sq_begin() set wr_id, opcode and flags; the rest is ours. */
	w->key = htole32(dvkey->lkey);
	w->nentries = htole16(n);
	w->access = htole16(access);	/* same bits as enum rs_access */
	w->repeat = htole32(repeat);
	return w + 1;
}

static void rs_wr_mr_list(struct rsdv_qp_ex *mqp, struct rsdv_mkey *mkey,
			  uint32_t access_flags, uint16_t num_sges,
			  struct ibv_sge *sge)
{
	struct rs_mkey_entry *e;
	uint16_t i;

	e = rs_wr_reg_mkey(mqp, mkey, false, access_flags, 0, num_sges);
	if (!e)
		return;
	for (i = 0; i < num_sges; i++) {
		if (!sge[i].length) {
			to_rs_qp_dv(mqp)->wr_err = EINVAL;
			return;
		}
		e[i].addr = htole64(sge[i].addr);
		e[i].length = htole32(sge[i].length);
		e[i].key = htole32(sge[i].lkey);
	}
}

static void rs_wr_mr_interleaved(struct rsdv_qp_ex *mqp,
				 struct rsdv_mkey *mkey,
				 uint32_t access_flags, uint32_t repeat_count,
				 uint16_t num_interleaved,
				 struct rsdv_mr_interleaved *data)
{
	struct rs_pattern_entry *e;
	uint16_t i;

	e = rs_wr_reg_mkey(mqp, mkey, true, access_flags, repeat_count,
			   num_interleaved);
	if (!e)
		return;
	for (i = 0; i < num_interleaved; i++) {
		if (!data[i].bytes_count) {
			to_rs_qp_dv(mqp)->wr_err = EINVAL;
			return;
		}
		e[i].addr = htole64(data[i].addr);
		e[i].key = htole32(data[i].lkey);
		e[i].bytes_count = htole32(data[i].bytes_count);
		e[i].bytes_skip = htole32(data[i].bytes_skip);
		e[i].rsvd = 0;
	}
}

static void rs_qp_fill_dv_pfns(struct rs_qp *qp, uint64_t dv_ops)
{
	qp->dv_ops = dv_ops;
	if (qp->dc_type == RSDV_DCTYPE_DCI)
		qp->dv_qp.wr_set_dc_addr = rs_wr_set_dc_addr;
	if (dv_ops & RSDV_QP_EX_WITH_MR_LIST)
		qp->dv_qp.wr_mr_list = rs_wr_mr_list;
	if (dv_ops & RSDV_QP_EX_WITH_MR_INTERLEAVED)
		qp->dv_qp.wr_mr_interleaved = rs_wr_mr_interleaved;
}
