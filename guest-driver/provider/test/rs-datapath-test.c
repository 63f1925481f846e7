// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host-side check of the provider's data path without a kernel or device:
 * rings and the doorbell page are plain memory; the test plays the device
 * by reading WQEs and doorbell values and writing CQEs with owner bits.
 * Built and run by scripts/build-rdma-core.sh against the rdma-core build
 * tree (it includes verbs.c to reach its static functions).
 */
#include "../verbs.c"

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__,      \
				__LINE__, #cond);                          \
			failures++;                                        \
		}                                                          \
	} while (0)

static uint32_t db_read(struct rs_context *ctx, unsigned int off)
{
	uint32_t v;

	memcpy(&v, (uint8_t *)ctx->db + off, sizeof(v));
	return le32toh(v);
}

static void *zalloc_aligned(size_t n)
{
	void *p = aligned_alloc(4096, align(n, 4096));

	if (!p)
		abort();
	memset(p, 0, align(n, 4096));
	return p;
}

static struct rs_context *make_ctx(void)
{
	struct rs_context *ctx = calloc(1, sizeof(*ctx));

	ctx->db = zalloc_aligned(RS_DB_PAGE_SIZE);
	ctx->max_send_sge = 4;
	ctx->max_recv_sge = 2;
	ctx->max_inline = 64;
	pthread_spin_init(&ctx->qp_table_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&ctx->srq_table_lock, PTHREAD_PROCESS_PRIVATE);
	return ctx;
}

static struct rs_cq *make_cq(struct rs_context *ctx, uint32_t index,
			     uint32_t log)
{
	struct ibv_cq_init_attr_ex attr = { .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct rs_cq *cq = calloc(1, sizeof(*cq));

	cq->vcq.cq.context = &ctx->ibvctx.context;
	cq->ring = zalloc_aligned(sizeof(struct rs_cqe) << log);
	cq->ring_len = sizeof(struct rs_cqe) << log;
	cq->log_size = log;
	cq->cq_index = index;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	rs_cq_fill_pfns(cq, &attr);
	return cq;
}

static struct rs_qp *make_qp(struct rs_context *ctx, struct rs_cq *cq,
			     enum ibv_qp_type type, uint32_t qpn)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = RS_SEND_OPS,
	};
	struct rs_qp *qp = calloc(1, sizeof(*qp));

	qp->vqp.qp.context = &ctx->ibvctx.context;
	qp->vqp.qp.qp_type = type;
	qp->vqp.qp.qp_num = qpn;
	qp->vqp.qp.send_cq = &cq->vcq.cq;
	qp->vqp.qp.recv_cq = &cq->vcq.cq;
	qp->qpn = qpn;
	qp->max_inline = 64;
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	qp->sq.wqe_cnt = 8;
	qp->sq.stride = 128;	/* pow2ceil(64 + max(16 * 4, 64)) */
	qp->sq.max_sge = 4;
	qp->sq.buf = zalloc_aligned(8 * 128);
	qp->rq.wqe_cnt = 8;
	qp->rq.stride = 64;	/* pow2ceil(16 + 16 * 2) */
	qp->rq.max_sge = 2;
	qp->rq.buf = zalloc_aligned(8 * 64);
	qp->sq_signaled = calloc(8, 1);
	qp->state = IBV_QPS_RTS;
	if (rs_qp_table_insert(ctx, qp))
		abort();
	rs_qp_fill_wr_pfns(qp, &attr);
	qp->vqp.comp_mask |= VERBS_QP_EX;
	return qp;
}

/* The device's side: complete the next CQE slot of a CQ. */
static uint32_t dev_cq_pi;

/* srqn: the XRC SRQ of a receive through an XRC target QP (qpn), or 0. */
static void dev_cqe_srq(struct rs_cq *cq, uint64_t wr_id, uint32_t qpn,
			uint32_t srqn, uint8_t opcode, uint8_t status,
			uint8_t flags, uint32_t byte_len, uint32_t imm)
{
	struct rs_cqe *e = &cq->ring[dev_cq_pi & ((1u << cq->log_size) - 1)];
	struct rs_cqe v = {
		.wr_id = htole64(wr_id),
		.byte_len = htole32(byte_len),
		.imm_or_inv = htole32(imm),
		.qpn = htole32(qpn),
		.opcode = opcode,
		.status = status,
		.wc_flags = flags,
	};

	memcpy(e, &v, offsetof(struct rs_cqe, owner));
	e->srqn = htole32(srqn);
	udma_to_device_barrier();
	e->owner = ((dev_cq_pi >> cq->log_size) & 1) ? 0 : RS_CQE_OWNER;
	dev_cq_pi++;
}

static void dev_cqe(struct rs_cq *cq, uint64_t wr_id, uint32_t qpn,
		    uint8_t opcode, uint8_t status, uint8_t flags,
		    uint32_t byte_len, uint32_t imm)
{
	dev_cqe_srq(cq, wr_id, qpn, 0, opcode, status, flags, byte_len, imm);
}

static struct rs_send_wqe_ctrl *sq_wqe(struct rs_qp *qp, uint32_t i)
{
	return rs_wqe(&qp->sq, i);
}

/*
 * The QP states that take work requests: sends from RTS on (SQD queues,
 * SQE and ERR flush), receives in all but RESET.  A refused post writes
 * no WQE and rings no doorbell.
 */
static void test_state_rules(struct rs_context *ctx, struct rs_cq *cq)
{
	static const struct {
		enum ibv_qp_state state;
		bool send, recv;
	} rules[] = {
		{ IBV_QPS_RESET, false, false },
		{ IBV_QPS_INIT, false, true },
		{ IBV_QPS_RTR, false, true },
		{ IBV_QPS_RTS, true, true },
		{ IBV_QPS_SQD, true, true },
		{ IBV_QPS_SQE, true, true },
		{ IBV_QPS_ERR, true, true },
	};
	struct ibv_sge sg = { .addr = 0x1000, .length = 8, .lkey = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 1, .opcode = IBV_WR_SEND, .sg_list = &sg, .num_sge = 1,
	};
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &sg, .num_sge = 1 };
	struct ibv_send_wr *bad = NULL;
	struct ibv_recv_wr *rbad = NULL;
	size_t i;

	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		struct rs_qp *qp = make_qp(ctx, cq, IBV_QPT_RC, 0x300 + i);
		uint32_t sq_db = db_read(ctx, RS_DB_SQ);
		uint32_t rq_db = db_read(ctx, RS_DB_RQ);

		qp->state = rules[i].state;
		bad = NULL;
		CHECK(rs_post_send(&qp->vqp.qp, &swr, &bad) ==
		      (rules[i].send ? 0 : EINVAL));
		CHECK(rules[i].send ? !bad : bad == &swr);
		CHECK(qp->sq.pi == rules[i].send);
		if (!rules[i].send)
			CHECK(db_read(ctx, RS_DB_SQ) == sq_db);
		rbad = NULL;
		CHECK(rs_post_recv(&qp->vqp.qp, &rwr, &rbad) ==
		      (rules[i].recv ? 0 : EINVAL));
		CHECK(rules[i].recv ? !rbad : rbad == &rwr);
		CHECK(qp->rq.pi == rules[i].recv);
		if (!rules[i].recv)
			CHECK(db_read(ctx, RS_DB_RQ) == rq_db);

		ibv_wr_start(&qp->vqp.qp_ex);
		ibv_wr_send(&qp->vqp.qp_ex);
		ibv_wr_set_sge(&qp->vqp.qp_ex, 1, 0x1000, 8);
		CHECK(ibv_wr_complete(&qp->vqp.qp_ex) ==
		      (rules[i].send ? 0 : EINVAL));
		CHECK(qp->sq.pi == 2u * rules[i].send);
	}
}

/*
 * XRC: an XRC_SEND QP's WQEs carry the remote SRQ number (24 bits) from
 * both APIs and take RC's requests but windows; it has no receive queue.
 * A receive completion naming an XRC SRQ (srqn) frees a slot of that
 * SRQ, whatever its qpn (the target QP's, no QP of this context), and
 * reports that qpn; one naming an SRQ this context does not have is
 * dropped.
 */
static void test_xrc(struct rs_context *ctx, struct rs_cq *cq)
{
	struct rs_qp *xs = make_qp(ctx, cq, IBV_QPT_XRC_SEND, 0x30001);
	struct ibv_qp_ex *qpx = &xs->vqp.qp_ex;
	struct ibv_sge sg = { .addr = 0x1000, .length = 10, .lkey = 0x11 };
	struct ibv_send_wr w = {
		.wr_id = 1, .opcode = IBV_WR_SEND, .sg_list = &sg,
		.num_sge = 1,
	}, *bad;
	struct ibv_recv_wr rw = { .wr_id = 7, .sg_list = &sg, .num_sge = 1 },
		*rbad;
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;
	struct ibv_poll_cq_attr pattr = {};
	struct rs_srq *srq = calloc(1, sizeof(*srq));
	struct ibv_wc wc[2];
	int i;

	xs->rq.wqe_cnt = 0;	/* as the kernel makes it */
	w.qp_type.xrc.remote_srqn = 0xabcdef;
	CHECK(rs_post_send(&xs->vqp.qp, &w, &bad) == 0);
	CHECK(le32toh(sq_wqe(xs, 0)->xrc_srqn) == 0xabcdef);
	CHECK(db_read(ctx, RS_DB_SQ) == (0x0001 | 1u << 16));
	w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	CHECK(rs_post_send(&xs->vqp.qp, &w, &bad) == 0);
	w.qp_type.xrc.remote_srqn = 1u << 24;
	CHECK(rs_post_send(&xs->vqp.qp, &w, &bad) == EINVAL && bad == &w);
	w.qp_type.xrc.remote_srqn = 5;
	w.opcode = IBV_WR_LOCAL_INV;
	CHECK(rs_post_send(&xs->vqp.qp, &w, &bad) == EINVAL);
	CHECK(xs->sq.pi == 2);
	CHECK(rs_post_recv(&xs->vqp.qp, &rw, &rbad) == EINVAL && rbad == &rw);

	ibv_wr_start(qpx);
	qpx->wr_id = 2;
	ibv_wr_rdma_write(qpx, 0x99, 0x5000);
	ibv_wr_set_xrc_srqn(qpx, 0x123456);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	CHECK(ibv_wr_complete(qpx) == 0);
	CHECK(sq_wqe(xs, 2)->opcode == RS_WR_RDMA_WRITE &&
	      le32toh(sq_wqe(xs, 2)->xrc_srqn) == 0x123456);
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, 1u << 24);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	CHECK(xs->sq.pi == 3);

	/* An XRC SRQ of 2 WQEs, number 5. */
	srq->vsrq.srq.context = &ctx->ibvctx.context;
	srq->vsrq.srq_type = IBV_SRQT_XRC;
	srq->vsrq.srq_num = 5;
	srq->srq_index = 5;
	srq->wq.wqe_cnt = 2;
	srq->wq.stride = 64;
	srq->wq.max_sge = 2;
	srq->wq.buf = zalloc_aligned(2 * 64);
	pthread_spin_init(&srq->wq.lock, PTHREAD_PROCESS_PRIVATE);
	CHECK(rs_srq_table_insert(ctx, srq) == 0);
	CHECK(rs_post_srq_recv(&srq->vsrq.srq, &rw, &rbad) == 0);
	CHECK(rs_post_srq_recv(&srq->vsrq.srq, &rw, &rbad) == 0);
	CHECK(rs_post_srq_recv(&srq->vsrq.srq, &rw, &rbad) == ENOMEM);

	/* Target QP 0x40001 (not in the table), SRQ 5; then an unknown SRQ. */
	dev_cqe_srq(cq, 7, 0x40001, 5, RS_WR_RECV, RS_WC_SUCCESS, RS_WC_F_IMM,
		    10, 0x1234);
	dev_cqe_srq(cq, 8, 0x40001, 6, RS_WR_RECV, RS_WC_SUCCESS, 0, 10, 0);
	CHECK(rs_poll_cq(&cq->vcq.cq, 2, wc) == 1);
	CHECK(wc[0].wr_id == 7 && wc[0].opcode == IBV_WC_RECV &&
	      wc[0].qp_num == 0x40001 && wc[0].byte_len == 10 &&
	      (wc[0].wc_flags & IBV_WC_WITH_IMM) &&
	      wc[0].imm_data == htobe32(0x1234));
	CHECK(srq->done == 1);
	CHECK(rs_post_srq_recv(&srq->vsrq.srq, &rw, &rbad) == 0);
	CHECK(rs_post_srq_recv(&srq->vsrq.srq, &rw, &rbad) == ENOMEM);

	/* The extended API, and a send completion of the XRC_SEND QP. */
	dev_cqe_srq(cq, 9, 0x40001, 5, RS_WR_RECV, RS_WC_SUCCESS, 0, 3, 0);
	dev_cqe(cq, 1, 0x30001, RS_WR_SEND, RS_WC_SUCCESS, 0, 0, 0);
	xs->sq_signaled[0] = 1;
	CHECK(ibv_start_poll(cqx, &pattr) == 0);
	CHECK(cqx->wr_id == 9 && ibv_wc_read_opcode(cqx) == IBV_WC_RECV &&
	      ibv_wc_read_qp_num(cqx) == 0x40001);
	CHECK(ibv_next_poll(cqx) == 0 && cqx->wr_id == 1 &&
	      ibv_wc_read_qp_num(cqx) == 0x30001);
	CHECK(ibv_next_poll(cqx) == ENOENT);
	ibv_end_poll(cqx);
	CHECK(srq->done == 2 && xs->sq.ci == 1);

	/* Gone from the table: its completions are dropped. */
	rs_srq_table_remove(ctx, srq);
	dev_cqe_srq(cq, 10, 0x40001, 5, RS_WR_RECV, RS_WC_SUCCESS, 0, 3, 0);
	CHECK(rs_poll_cq(&cq->vcq.cq, 2, wc) == 0);
	CHECK(srq->done == 2);
	for (i = 0; i < 2; i++)
		CHECK(!rs_opcode_ok(IBV_QPT_XRC_RECV, i ? RS_WR_SEND :
				    RS_WR_RDMA_WRITE));
}

/*
 * DC and memory keys (rsessiondv.h): a DCI's WQEs carry the target (AH,
 * DCT number, 64-bit key) where the device reads them; the key work
 * requests put the 64-byte struct rs_send_wqe_reg_mkey and their entries
 * inline in the WQE; what does not fit or does not match is refused.
 */
static void test_dc(struct rs_context *ctx, struct rs_cq *cq)
{
	struct rs_qp *dci = make_qp(ctx, cq, IBV_QPT_DRIVER, 0x30003);
	struct rs_qp *dct = make_qp(ctx, cq, IBV_QPT_DRIVER, 0x30004);
	struct ibv_qp_ex *qpx = &dci->vqp.qp_ex;
	struct rsdv_qp_ex *mqp = &dci->dv_qp;
	struct rs_ah ah = { .handle = 0x0300002b };
	struct rs_mkey ind = { .dv = { 0x701, 0x701 }, .max_entries = 4 };
	struct rs_mkey pat = { .dv = { 0x802, 0x802 }, .pattern = true,
			       .max_entries = 2 };
	struct ibv_sge sg[5] = {
		{ 0x1000, 100, 0x101 }, { 0x2000, 200, 0x202 },
		{ 0x3000, 300, 0x303 }, { 0x4000, 400, 0x404 },
		{ 0x5000, 500, 0x505 },
	};
	struct rsdv_mr_interleaved il[3] = {
		{ 0x9008, 8, 248, 0x909 }, { 0xa000, 16, 0, 0xa0a },
		{ 0xb000, 1, 1, 0xb0b },
	};
	struct ibv_send_wr w = { .opcode = IBV_WR_SEND, .sg_list = sg,
				 .num_sge = 1 }, *bad;
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	struct rs_send_wqe_reg_mkey *r;
	struct rs_pattern_entry *pe;
	struct rs_mkey_entry *e;
	struct rs_send_wqe_ctrl *c;

	dci->dc_type = RSDV_DCTYPE_DCI;
	dct->dc_type = RSDV_DCTYPE_DCT;
	rs_qp_fill_dv_pfns(dci, RSDV_QP_EX_WITH_MR_LIST |
			   RSDV_QP_EX_WITH_MR_INTERLEAVED);
	CHECK(dci->dv_qp.wr_set_dc_addr && dci->dv_qp.wr_mr_list &&
	      dci->dv_qp.wr_mr_interleaved);

	/* The target in the WQE. */
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, 0x4242, 0xabc000);
	rsdv_wr_set_dc_addr(mqp, &ah.ibvah, 0x123, 0x1122334455667788ull);
	ibv_wr_set_sge(qpx, 0x606, 0x6000, 64);
	CHECK(ibv_wr_complete(qpx) == 0);
	c = sq_wqe(dci, 0);
	CHECK(c->opcode == RS_WR_RDMA_WRITE && le32toh(c->rkey) == 0x4242 &&
	      le64toh(c->remote_addr) == 0xabc000 && c->num_sge == 1);
	CHECK(le32toh(c->ah) == 0x0300002b && le32toh(c->remote_qpn) == 0x123 &&
	      le32toh(c->dc_key_lo) == 0x55667788 &&
	      le32toh(c->dc_key_hi) == 0x11223344);
	CHECK(db_read(ctx, RS_DB_SQ) == (0x0003 | 1u << 16));

	/* A DCT number beyond 24 bits, SEND with invalidate, post_send. */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	rsdv_wr_set_dc_addr(mqp, &ah.ibvah, 0x1000000, 1);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	ibv_wr_start(qpx);
	ibv_wr_send_inv(qpx, 5);
	rsdv_wr_set_dc_addr(mqp, &ah.ibvah, 1, 1);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	CHECK(rs_post_send(&dci->vqp.qp, &w, &bad) == EINVAL && bad == &w);
	CHECK(dci->sq.pi == 1);
	/* A DCT has no send queue. */
	ibv_wr_start(&dct->vqp.qp_ex);
	ibv_wr_send(&dct->vqp.qp_ex);
	CHECK(ibv_wr_complete(&dct->vqp.qp_ex) == EINVAL);
	CHECK(dct->sq.pi == 0);

	/* An indirect key: 4 entries fill the 128-byte WQE. */
	ibv_wr_start(qpx);
	qpx->wr_id = 2;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	rsdv_wr_mr_list(mqp, &ind.dv, acc, 4, sg);
	CHECK(ibv_wr_complete(qpx) == 0);
	r = (struct rs_send_wqe_reg_mkey *)sq_wqe(dci, 1);
	e = (struct rs_mkey_entry *)(r + 1);
	CHECK(r->wr_id == htole64(2) && r->opcode == RS_WR_REG_INDIRECT &&
	      r->flags == RS_WQE_F_SIGNALED && r->num_sge == 0 &&
	      r->key == htole32(0x701) && r->nentries == htole16(4) &&
	      r->repeat == 0 &&
	      r->access == htole16(RS_ACCESS_LOCAL_WRITE |
				   RS_ACCESS_REMOTE_READ));
	CHECK(le64toh(e[0].addr) == 0x1000 && le32toh(e[0].length) == 100 &&
	      le32toh(e[0].key) == 0x101 && le64toh(e[3].addr) == 0x4000 &&
	      le32toh(e[3].length) == 400 && le32toh(e[3].key) == 0x404);

	/* More than the key holds or the WQE fits, a pattern key, MW_BIND. */
	ibv_wr_start(qpx);
	rsdv_wr_mr_list(mqp, &ind.dv, acc, 5, sg);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	ibv_wr_start(qpx);
	rsdv_wr_mr_list(mqp, &pat.dv, acc, 1, sg);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	ibv_wr_start(qpx);
	rsdv_wr_mr_list(mqp, &ind.dv, IBV_ACCESS_MW_BIND, 1, sg);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	CHECK(dci->sq.pi == 2);

	/* A pattern key: one entry repeated 32 times. */
	ibv_wr_start(qpx);
	qpx->wr_id = 3;
	qpx->wr_flags = 0;
	rsdv_wr_mr_interleaved(mqp, &pat.dv, acc, 32, 2, il);
	CHECK(ibv_wr_complete(qpx) == 0);
	r = (struct rs_send_wqe_reg_mkey *)sq_wqe(dci, 2);
	pe = (struct rs_pattern_entry *)(r + 1);
	CHECK(r->opcode == RS_WR_REG_PATTERN && r->flags == 0 &&
	      r->key == htole32(0x802) && r->nentries == htole16(2) &&
	      r->repeat == htole32(32));
	CHECK(le64toh(pe[0].addr) == 0x9008 && le32toh(pe[0].key) == 0x909 &&
	      le32toh(pe[0].bytes_count) == 8 &&
	      le32toh(pe[0].bytes_skip) == 248 && pe[0].rsvd == 0 &&
	      le32toh(pe[1].bytes_count) == 16);
	/* No repeat, 3 entries (136 bytes > 128, and > max_entries). */
	ibv_wr_start(qpx);
	rsdv_wr_mr_interleaved(mqp, &pat.dv, acc, 0, 1, il);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	pat.max_entries = 3;
	ibv_wr_start(qpx);
	rsdv_wr_mr_interleaved(mqp, &pat.dv, acc, 1, 3, il);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	CHECK(dci->sq.pi == 3);
	CHECK(db_read(ctx, RS_DB_SQ) == (0x0003 | 3u << 16));
}

int main(void)
{
	struct rs_context *ctx = make_ctx();
	struct rs_cq *cq = make_cq(ctx, 7, 3);
	struct rs_qp *qp = make_qp(ctx, cq, IBV_QPT_RC, 0x12345);
	struct ibv_qp *ibqp = &qp->vqp.qp;
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;
	struct ibv_poll_cq_attr pattr = {};
	struct ibv_send_wr swr[8], *bad;
	struct ibv_recv_wr rwr[2], *rbad;
	struct ibv_sge sg[3] = {
		{ .addr = 0x1000, .length = 100, .lkey = 0x101 },
		{ .addr = 0x2000, .length = 200, .lkey = 0x202 },
		{ .addr = 0x3000, .length = 300, .lkey = 0x303 },
	};
	char inl[10] = "inlinedat";
	struct ibv_wc wc[4];
	struct rs_send_wqe_ctrl *c;
	struct rs_recv_wqe_ctrl *r;
	struct rs_sge *s;
	int i, n;

	/* post_recv: two WQEs, one doorbell. */
	memset(rwr, 0, sizeof(rwr));
	rwr[0].wr_id = 11;
	rwr[0].sg_list = sg;
	rwr[0].num_sge = 2;
	rwr[0].next = &rwr[1];
	rwr[1].wr_id = 12;
	rwr[1].sg_list = &sg[2];
	rwr[1].num_sge = 1;
	CHECK(rs_post_recv(ibqp, rwr, &rbad) == 0);
	r = rs_wqe(&qp->rq, 0);
	s = (struct rs_sge *)(r + 1);
	CHECK(le64toh(r->wr_id) == 11 && r->num_sge == 2);
	CHECK(le64toh(s[1].addr) == 0x2000 && le32toh(s[1].lkey) == 0x202);
	CHECK(db_read(ctx, RS_DB_RQ) == (0x2345 | 2u << 16));
	rwr[1].num_sge = 3;	/* more than max_recv_sge */
	rwr[1].next = NULL;
	CHECK(rs_post_recv(ibqp, &rwr[1], &rbad) == EINVAL && rbad == &rwr[1]);
	CHECK(qp->rq.pi == 2);

	/* post_send: four WQEs of different kinds. */
	memset(swr, 0, sizeof(swr));
	swr[0].wr_id = 100;
	swr[0].opcode = IBV_WR_SEND;
	swr[0].send_flags = IBV_SEND_SIGNALED;
	swr[0].sg_list = sg;
	swr[0].num_sge = 2;
	swr[0].next = &swr[1];
	swr[1].wr_id = 101;
	swr[1].opcode = IBV_WR_RDMA_WRITE;
	swr[1].sg_list = sg;
	swr[1].num_sge = 1;
	swr[1].wr.rdma.remote_addr = 0xabc000;
	swr[1].wr.rdma.rkey = 0x4242;
	swr[1].next = &swr[2];
	swr[2].wr_id = 102;
	swr[2].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	swr[2].send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	swr[2].imm_data = htobe32(0xdeadbeef);
	swr[2].wr.rdma.remote_addr = 0xabd000;
	swr[2].wr.rdma.rkey = 0x4343;
	swr[2].next = &swr[3];
	sg[2].addr = (uintptr_t)inl;
	sg[2].length = sizeof(inl);
	swr[3].wr_id = 103;
	swr[3].opcode = IBV_WR_SEND;
	swr[3].send_flags = IBV_SEND_INLINE | IBV_SEND_FENCE;
	swr[3].sg_list = &sg[2];
	swr[3].num_sge = 1;
	CHECK(rs_post_send(ibqp, swr, &bad) == 0);
	CHECK(db_read(ctx, RS_DB_SQ) == (0x2345 | 4u << 16));
	c = sq_wqe(qp, 0);
	s = (struct rs_sge *)(c + 1);
	CHECK(le64toh(c->wr_id) == 100 && c->opcode == RS_WR_SEND &&
	      c->flags == RS_WQE_F_SIGNALED && c->num_sge == 2);
	CHECK(le64toh(s[0].addr) == 0x1000 && le32toh(s[0].length) == 100 &&
	      le32toh(s[1].lkey) == 0x202);
	c = sq_wqe(qp, 1);
	CHECK(c->opcode == RS_WR_RDMA_WRITE && c->flags == 0 &&
	      le64toh(c->remote_addr) == 0xabc000 && le32toh(c->rkey) == 0x4242);
	c = sq_wqe(qp, 2);
	CHECK(c->opcode == RS_WR_RDMA_WRITE_IMM &&
	      c->flags == (RS_WQE_F_SIGNALED | RS_WQE_F_SOLICITED) &&
	      le32toh(c->imm_or_inv) == 0xdeadbeef && c->num_sge == 0);
	c = sq_wqe(qp, 3);
	CHECK(c->flags == (RS_WQE_F_INLINE | RS_WQE_F_FENCE) &&
	      le32toh(c->inline_len) == sizeof(inl) && c->num_sge == 0 &&
	      !memcmp(c + 1, inl, sizeof(inl)));

	/* Bad requests: RDMA read is fine on RC, too many SGEs is not. */
	swr[4] = swr[0];
	swr[4].num_sge = 5;
	swr[4].next = NULL;
	CHECK(rs_post_send(ibqp, &swr[4], &bad) == EINVAL && bad == &swr[4]);
	CHECK(qp->sq.pi == 4);

	/* Ring full: 4 free slots of 8. */
	for (i = 0; i < 5; i++) {
		swr[i] = swr[1];
		swr[i].next = i < 4 ? &swr[i + 1] : NULL;
	}
	CHECK(rs_post_send(ibqp, swr, &bad) == ENOMEM && bad == &swr[4]);
	CHECK(qp->sq.pi == 8);
	CHECK(db_read(ctx, RS_DB_SQ) == (0x2345 | 8u << 16));

	/* Nothing completed yet. */
	CHECK(rs_poll_cq(&cq->vcq.cq, 4, wc) == 0);

	/* Send #0 completes: retires one; #2 completes: retires #1 too. */
	dev_cqe(cq, 100, 0x12345, RS_WR_SEND, RS_WC_SUCCESS, 0, 300, 0);
	dev_cqe(cq, 102, 0x12345, RS_WR_RDMA_WRITE_IMM, RS_WC_SUCCESS, 0, 0, 0);
	dev_cqe(cq, 11, 0x12345, RS_WR_RECV_RDMA_IMM, RS_WC_SUCCESS,
		RS_WC_F_IMM, 64, 0xdeadbeef);
	n = rs_poll_cq(&cq->vcq.cq, 4, wc);
	CHECK(n == 3);
	CHECK(wc[0].wr_id == 100 && wc[0].opcode == IBV_WC_SEND &&
	      wc[0].status == IBV_WC_SUCCESS && wc[0].qp_num == 0x12345 &&
	      wc[0].byte_len == 300);
	CHECK(wc[1].wr_id == 102 && wc[1].opcode == IBV_WC_RDMA_WRITE);
	CHECK(wc[2].wr_id == 11 && wc[2].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      (wc[2].wc_flags & IBV_WC_WITH_IMM) &&
	      wc[2].imm_data == htobe32(0xdeadbeef));
	CHECK(qp->sq.ci == 3 && qp->rq.ci == 1);
	CHECK(db_read(ctx, RS_DB_CQ_CI) == (7 | 3u << 16));

	/* Error completions retire one WQE each (#3 flushed, unsignalled). */
	dev_cqe(cq, 103, 0x12345, RS_WR_SEND, RS_WC_WR_FLUSH_ERR, 0, 0, 0);
	dev_cqe(cq, 12, 0x12345, RS_WR_RECV, RS_WC_WR_FLUSH_ERR, 0, 0, 0);
	/* A CQE of an unknown QP is dropped. */
	dev_cqe(cq, 999, 0x777, RS_WR_SEND, RS_WC_SUCCESS, 0, 0, 0);
	dev_cqe(cq, 101, 0x12345, RS_WR_RDMA_WRITE, RS_WC_REM_ACCESS_ERR, 0, 0, 0);
	n = rs_poll_cq(&cq->vcq.cq, 4, wc);
	CHECK(n == 3);
	CHECK(wc[0].wr_id == 103 && wc[0].status == IBV_WC_WR_FLUSH_ERR);
	CHECK(wc[1].wr_id == 12 && wc[1].opcode == IBV_WC_RECV);
	CHECK(wc[2].wr_id == 101 && wc[2].status == IBV_WC_REM_ACCESS_ERR);
	CHECK(qp->sq.ci == 5 && qp->rq.ci == 2);
	/* The ring wrapped (7 CQEs in 8 slots, then more on the 2nd pass). */
	CHECK(cq->ci == 7);

	/* Extended polling across the wrap; owner bit now clear. */
	dev_cqe(cq, 104, 0x12345, RS_WR_RDMA_WRITE, RS_WC_SUCCESS, 0, 0, 0);
	dev_cqe(cq, 105, 0x12345, RS_WR_RDMA_WRITE, RS_WC_SUCCESS, 0, 0, 0);
	qp->sq_signaled[5] = qp->sq_signaled[6] = 1;
	CHECK(cq->ring[0].owner == 0 && cq->ring[7].owner == RS_CQE_OWNER);
	CHECK(ibv_start_poll(cqx, &pattr) == 0);
	CHECK(cqx->wr_id == 104 && cqx->status == IBV_WC_SUCCESS &&
	      ibv_wc_read_opcode(cqx) == IBV_WC_RDMA_WRITE &&
	      ibv_wc_read_qp_num(cqx) == 0x12345);
	CHECK(ibv_next_poll(cqx) == 0 && cqx->wr_id == 105);
	CHECK(ibv_next_poll(cqx) == ENOENT);
	ibv_end_poll(cqx);
	CHECK(ibv_start_poll(cqx, &pattr) == ENOENT);
	CHECK(db_read(ctx, RS_DB_CQ_CI) == (7 | 9u << 16));
	CHECK(qp->sq.ci == 7);

	/* Arming. */
	CHECK(rs_req_notify_cq(&cq->vcq.cq, 0) == 0);
	CHECK(db_read(ctx, RS_DB_CQ_ARM) == (7 | RS_DB_CQ_ARM_NEXT));
	CHECK(rs_req_notify_cq(&cq->vcq.cq, 1) == 0);
	CHECK(db_read(ctx, RS_DB_CQ_ARM) == (7 | RS_DB_CQ_ARM_SOLICITED));

	/* ibv_wr_*: read + atomic in one batch. */
	ibv_wr_start(qpx);
	qpx->wr_id = 200;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(qpx, 0x5555, 0xfeed000);
	ibv_wr_set_sge(qpx, 0x606, 0x6000, 64);
	qpx->wr_id = 201;
	qpx->wr_flags = 0;
	ibv_wr_atomic_fetch_add(qpx, 0x7777, 0xbeef00, 5);
	ibv_wr_set_sge(qpx, 0x707, 0x7000, 8);
	CHECK(ibv_wr_complete(qpx) == 0);
	CHECK(qp->sq.pi == 10);
	CHECK(db_read(ctx, RS_DB_SQ) == (0x2345 | 10u << 16));
	c = sq_wqe(qp, 8);
	s = (struct rs_sge *)(c + 1);
	CHECK(le64toh(c->wr_id) == 200 && c->opcode == RS_WR_RDMA_READ &&
	      c->flags == RS_WQE_F_SIGNALED && le32toh(c->rkey) == 0x5555 &&
	      le64toh(c->remote_addr) == 0xfeed000 && c->num_sge == 1 &&
	      le32toh(s[0].lkey) == 0x606);
	c = sq_wqe(qp, 9);
	CHECK(c->opcode == RS_WR_ATOMIC_FETCH_ADD &&
	      le64toh(c->compare_add) == 5 && c->flags == 0);

	/* ibv_wr_*: an error anywhere drops the whole batch. */
	ibv_wr_start(qpx);
	qpx->wr_id = 300;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(qpx, htobe32(1));
	ibv_wr_set_inline_data(qpx, inl, sizeof(inl));
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, zalloc_aligned(100), 100);	/* > 64 */
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	CHECK(qp->sq.pi == 10);
	CHECK(db_read(ctx, RS_DB_SQ) == (0x2345 | 10u << 16));
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_abort(qpx);
	CHECK(qp->sq.pi == 10);

	/*
	 * Memory windows: LOCAL_INV (of a type 2 window) and BIND_MW WQEs as
	 * the device reads them; rights a window cannot have here (zero-based)
	 * are refused with nothing posted.
	 */
	{
		struct ibv_mr mr = { .lkey = 0x1201 };
		struct ibv_mw mw = { .rkey = 0x3402, .type = IBV_MW_TYPE_2 };
		struct ibv_mw mw1 = { .rkey = 0x56ff, .type = IBV_MW_TYPE_1 };
		struct ibv_send_wr w = {
			.wr_id = 400, .opcode = IBV_WR_LOCAL_INV,
			.send_flags = IBV_SEND_SIGNALED,
			.invalidate_rkey = 0x4444,
		};
		struct ibv_mw_bind mb = { .wr_id = 403 };
		struct rs_send_wqe_bind_mw *b;

		qp->sq.ci = qp->sq.pi;	/* the device took them all */
		CHECK(RS_SEND_OPS & IBV_QP_EX_WITH_LOCAL_INV);
		CHECK(RS_SEND_OPS & IBV_QP_EX_WITH_BIND_MW);
		bad = NULL;
		CHECK(rs_post_send(ibqp, &w, &bad) == 0);
		CHECK(qp->sq.pi == 11);
		CHECK(sq_wqe(qp, 10)->opcode == RS_WR_LOCAL_INV);
		CHECK(sq_wqe(qp, 10)->imm_or_inv == htole32(0x4444));
		CHECK(sq_wqe(qp, 10)->num_sge == 0);

		w.wr_id = 401;
		w.opcode = IBV_WR_BIND_MW;
		w.bind_mw.mw = &mw;
		w.bind_mw.rkey = 0x3403;
		w.bind_mw.bind_info.mr = &mr;
		w.bind_mw.bind_info.addr = 0x10000;
		w.bind_mw.bind_info.length = 0x2000;
		w.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
						      IBV_ACCESS_REMOTE_READ;
		CHECK(rs_post_send(ibqp, &w, &bad) == 0);
		CHECK(qp->sq.pi == 12);
		b = (struct rs_send_wqe_bind_mw *)sq_wqe(qp, 11);
		CHECK(b->opcode == RS_WR_BIND_MW && b->num_sge == 0);
		CHECK(b->flags == RS_WQE_F_SIGNALED && b->wr_id == htole64(401));
		CHECK(b->mw_rkey == htole32(0x3402) && b->new_rkey == htole32(0x3403));
		CHECK(b->mr_lkey == htole32(0x1201) && b->addr == htole64(0x10000) &&
		      b->length == htole64(0x2000));
		CHECK(b->access == htole16(RS_ACCESS_REMOTE_WRITE |
					   RS_ACCESS_REMOTE_READ));
		CHECK(db_read(ctx, RS_DB_SQ) == (0x2345 | 12u << 16));

		w.bind_mw.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
		CHECK(rs_post_send(ibqp, &w, &bad) == EINVAL && bad == &w);
		CHECK(qp->sq.pi == 12);

		ibv_wr_start(qpx);
		qpx->wr_id = 402;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		w.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
		ibv_wr_bind_mw(qpx, &mw, 0x3404, &w.bind_mw.bind_info);
		ibv_wr_local_inv(qpx, 0x3404);
		CHECK(ibv_wr_complete(qpx) == 0);
		CHECK(qp->sq.pi == 14);
		b = (struct rs_send_wqe_bind_mw *)sq_wqe(qp, 12);
		CHECK(b->opcode == RS_WR_BIND_MW && b->wr_id == htole64(402));
		CHECK(b->new_rkey == htole32(0x3404) &&
		      b->access == htole16(RS_ACCESS_REMOTE_READ));
		CHECK(sq_wqe(qp, 13)->opcode == RS_WR_LOCAL_INV);
		CHECK(sq_wqe(qp, 13)->imm_or_inv == htole32(0x3404));
		CHECK(db_read(ctx, RS_DB_SQ) == (0x2345 | 14u << 16));

		/* Type 1 through ibv_bind_mw: the next tag, the rkey moves on. */
		mb.bind_info = w.bind_mw.bind_info;
		CHECK(rs_bind_mw(ibqp, &mw1, &mb) == 0);
		CHECK(mw1.rkey == 0x5600);
		b = (struct rs_send_wqe_bind_mw *)sq_wqe(qp, 14);
		CHECK(b->opcode == RS_WR_BIND_MW && b->wr_id == htole64(403));
		CHECK(b->mw_rkey == htole32(0x56ff) && b->new_rkey == htole32(0x5600));
		CHECK(rs_bind_mw(ibqp, &mw, &mb) == EINVAL);
		CHECK(qp->sq.pi == 15);
	}

	/* UD: address in the WQE, no RDMA. */
	{
		struct rs_qp *ud = make_qp(ctx, cq, IBV_QPT_UD, 0x20001);
		struct rs_ah ah = { .handle = 0x0300002a };
		struct ibv_send_wr w = {
			.wr_id = 1, .opcode = IBV_WR_SEND, .sg_list = sg,
			.num_sge = 1,
		};

		w.wr.ud.ah = &ah.ibvah;
		w.wr.ud.remote_qpn = 0x99;
		w.wr.ud.remote_qkey = 0x11111111;
		CHECK(rs_post_send(&ud->vqp.qp, &w, &bad) == 0);
		c = sq_wqe(ud, 0);
		CHECK(le32toh(c->ah) == 0x0300002a &&
		      le32toh(c->remote_qpn) == 0x99 &&
		      le32toh(c->remote_qkey) == 0x11111111);
		CHECK(db_read(ctx, RS_DB_SQ) == (0x0001 | 1u << 16));
		w.opcode = IBV_WR_RDMA_WRITE;
		CHECK(rs_post_send(&ud->vqp.qp, &w, &bad) == EINVAL);
		ibv_wr_start(&ud->vqp.qp_ex);
		ibv_wr_send(&ud->vqp.qp_ex);
		ibv_wr_set_ud_addr(&ud->vqp.qp_ex, &ah.ibvah, 0x98, 0x22);
		ibv_wr_set_sge(&ud->vqp.qp_ex, 1, 2, 3);
		CHECK(ibv_wr_complete(&ud->vqp.qp_ex) == 0);
		c = sq_wqe(ud, 1);
		CHECK(le32toh(c->remote_qpn) == 0x98 &&
		      le32toh(c->remote_qkey) == 0x22);
		ibv_wr_start(&ud->vqp.qp_ex);
		ibv_wr_rdma_write(&ud->vqp.qp_ex, 1, 2);
		CHECK(ibv_wr_complete(&ud->vqp.qp_ex) == EINVAL);
	}

	test_state_rules(ctx, cq);
	test_xrc(ctx, cq);
	test_dc(ctx, cq);

	if (failures) {
		fprintf(stderr, "rs-datapath-test: %d check(s) failed\n",
			failures);
		return 1;
	}
	printf("rs-datapath-test: all checks passed\n");
	return 0;
}
