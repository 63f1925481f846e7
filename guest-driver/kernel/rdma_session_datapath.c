// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: the data path of kernel QPs, SRQs and CQs (the
 * MAD stack's QP1 and in-kernel consumers such as the NVMe-oF host and
 * target): work requests are written into the rings in kernel memory and
 * the doorbells rung through doorbell page 0; completions are read from
 * the CQ rings; the completion interrupt calls the CQs' handlers.  User
 * QPs, SRQs and CQs are driven by the rdma-core provider, not from here.
 * The rings' locking rule is at struct rs_wq (rdma_session_ib.h).
 */
#include <linux/interrupt.h>
#include <linux/if_vlan.h>
#include <linux/io.h>
#include <linux/log2.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include <rdma/ib_verbs.h>

#include "rdma_session_ib.h"

static void rs_ib_ring_db(struct rs_ibdev *dev, u32 off, u32 val)
{
	/* writel() orders the ring's stores before the doorbell. */
	writel(val, dev->kdb + off);
}

/*
 * Tell the device that queue @index has WQEs up to producer @pi: through
 * the QP's doorbell record when it has one (@rec_prod, @rec_active) and
 * the device says it reads it, else through doorbell @db.  The order is
 * the ABI's (struct rs_db_record), as the provider's rs_wq_db().
 */
static void rs_ib_ring_wq_db(struct rs_ibdev *dev, u32 *rec_prod,
			     u32 *rec_active, u32 db, u32 index, u32 pi)
{
	if (rec_prod) {
		/* The WQEs before the producer that makes them valid. */
		dma_wmb();
		WRITE_ONCE(*rec_prod, pi & 0xffff);
		/*
		 * Store before load, paired with the device's store of 0 to
		 * active and its last look at the producer: one of the two
		 * sides sees the other's store, so no post is left behind.
		 * virt_mb(), not smp_mb(): the other side is the device,
		 * which a CONFIG_SMP=n kernel's smp_mb() would not order.
		 */
		virt_mb();
		if (READ_ONCE(*rec_active))
			return;
	}
	rs_ib_ring_db(dev, db, (index & RS_DB_INDEX_MASK) |
		      ((pi & 0xffff) << RS_DB_VALUE_SHIFT));
}

/* ------------------------------------------------------------------ */
/* Completion queues                                                  */
/* ------------------------------------------------------------------ */

static struct rs_cqe *rs_cq_next(struct rs_cq *cq)
{
	struct rs_cqe *e = (struct rs_cqe *)cq->ring.va + (cq->ci & ((1u << cq->log) - 1));
	u8 phase = ((cq->ci >> cq->log) & 1) ^ 1;

	if ((READ_ONCE(e->owner) & RS_CQE_OWNER) != phase)
		return NULL;
	/* Read the entry only after its owner bit. */
	dma_rmb();
	return e;
}

static const enum ib_wc_opcode rs_wc_opcode[] = {
	[RS_WR_SEND] = IB_WC_SEND,
	[RS_WR_SEND_IMM] = IB_WC_SEND,
	[RS_WR_SEND_INV] = IB_WC_SEND,
	[RS_WR_RDMA_WRITE] = IB_WC_RDMA_WRITE,
	[RS_WR_RDMA_WRITE_IMM] = IB_WC_RDMA_WRITE,
	[RS_WR_RDMA_READ] = IB_WC_RDMA_READ,
	[RS_WR_ATOMIC_CMP_SWP] = IB_WC_COMP_SWAP,
	[RS_WR_ATOMIC_FETCH_ADD] = IB_WC_FETCH_ADD,
	[RS_WR_LOCAL_INV] = IB_WC_LOCAL_INV,
	[RS_WR_REG_MR] = IB_WC_REG_MR,
	[RS_WR_BIND_MW] = IB_WC_BIND_MW,
	[RS_WR_FLUSH] = IB_WC_FLUSH,
	[RS_WR_ATOMIC_WRITE] = IB_WC_ATOMIC_WRITE,
};

static void rs_wq_consume_send(struct rs_qp *qp, u8 status)
{
	struct rs_wq *wq = &qp->sq;
	u32 mask = (1u << wq->log) - 1;

	/*
	 * Completions are in order: retire up to the next signaled WQE.  An
	 * error or flush completion is reported for every WQE, signaled or
	 * not: it retires one.
	 */
	spin_lock(&wq->lock);
	while (wq->ci != wq->pi) {
		bool sig = wq->signaled[wq->ci & mask];

		wq->ci++;
		if (sig || status != RS_WC_SUCCESS)
			break;
	}
	spin_unlock(&wq->lock);
}

/*
 * The device takes receive WQEs in ring order (an SRQ's from all its QPs)
 * and copies each one it takes: every receive completion frees one slot.
 */
static void rs_wq_consume_recv(struct rs_wq *wq)
{
	spin_lock(&wq->lock);
	wq->ci++;
	spin_unlock(&wq->lock);
}

int rs_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct rs_ibdev *dev = to_rsdev(ibcq->device);
	struct rs_cq *cq = to_rscq(ibcq);
	unsigned long flags;
	struct rs_srq *srq;
	struct rs_cqe *e;
	struct rs_qp *qp;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && (e = rs_cq_next(cq))) {
		struct ib_wc *w = &wc[n];

		memset(w, 0, sizeof(*w));
		w->wr_id = e->wr_id;
		w->status = (enum ib_wc_status)e->status;
		w->byte_len = e->byte_len;
		w->src_qp = e->src_qp;
		w->port_num = RS_PORT_NUM;
		w->pkey_index = 0;
		xa_lock(&dev->qps);
		qp = xa_load(&dev->qps, e->qpn);
		if (qp) {
			w->qp = &qp->ibqp;
			if (!(e->opcode & RS_WR_RECV))
				rs_wq_consume_send(qp, e->status);
			else if (!e->srqn || (e->wc_flags & RS_WC_F_VLAN))
				rs_wq_consume_recv(qp->srq ? &qp->srq->wq : &qp->rq);
		}
		xa_unlock(&dev->qps);
		/*
		 * A receive through an XRC target QP (qpn) took a WQE of the
		 * XRC SRQ srqn, which is this CQ's: the target has no queue.
		 */
		if (e->srqn && (e->opcode & RS_WR_RECV) &&
		    !(e->wc_flags & RS_WC_F_VLAN)) {
			xa_lock(&dev->srqs);
			srq = xa_load(&dev->srqs, e->srqn & RS_HANDLE_INDEX_MASK);
			if (srq && srq->ibsrq.srq_type == IB_SRQT_XRC)
				rs_wq_consume_recv(&srq->wq);
			xa_unlock(&dev->srqs);
		}
		if (e->opcode == RS_WR_RECV)
			w->opcode = IB_WC_RECV;
		else if (e->opcode == RS_WR_RECV_RDMA_IMM)
			w->opcode = IB_WC_RECV_RDMA_WITH_IMM;
		else if (e->opcode < ARRAY_SIZE(rs_wc_opcode))
			w->opcode = rs_wc_opcode[e->opcode];
		if (e->wc_flags & RS_WC_F_IMM) {
			w->wc_flags |= IB_WC_WITH_IMM;
			w->ex.imm_data = cpu_to_be32(e->imm_or_inv);
		} else if (e->wc_flags & RS_WC_F_INV) {
			w->wc_flags |= IB_WC_WITH_INVALIDATE;
			w->ex.invalidate_rkey = e->imm_or_inv;
		}
		if (e->wc_flags & RS_WC_F_GRH)
			w->wc_flags |= IB_WC_GRH;
		if (e->wc_flags & RS_WC_F_VLAN) {
			/* What ib_init_ah_attr_from_wc finds the GID by. */
			w->wc_flags |= IB_WC_WITH_VLAN;
			w->vlan_id = e->srqn & VLAN_VID_MASK;
			w->sl = (e->srqn >> VLAN_PRIO_SHIFT) & 7;
		}
		if (e->wc_flags & (RS_WC_F_IPV4 | RS_WC_F_IPV6)) {
			w->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			w->network_hdr_type = e->wc_flags & RS_WC_F_IPV4 ?
					      RDMA_NETWORK_IPV4 :
					      RDMA_NETWORK_IPV6;
		}
		if (!qp)
			ibdev_warn_ratelimited(&dev->ibdev, "CQE for unknown QP %u\n",
					       e->qpn);
		cq->ci++;
		n++;
	}
	if (n)
		rs_ib_ring_db(dev, RS_DB_CQ_CI, (cq->handle & RS_DB_INDEX_MASK) |
			      ((cq->ci & 0xffff) << RS_DB_VALUE_SHIFT));
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int rs_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct rs_ibdev *dev = to_rsdev(ibcq->device);
	struct rs_cq *cq = to_rscq(ibcq);
	unsigned long irqf;
	u32 val = cq->handle & RS_DB_INDEX_MASK;
	int ret = 0;

	val |= (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	       RS_DB_CQ_ARM_SOLICITED : RS_DB_CQ_ARM_NEXT;
	WRITE_ONCE(cq->armed, true);
	rs_ib_ring_db(dev, RS_DB_CQ_ARM, val);
	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		spin_lock_irqsave(&cq->lock, irqf);
		ret = rs_cq_next(cq) ? 1 : 0;
		spin_unlock_irqrestore(&cq->lock, irqf);
	}
	return ret;
}

/*
 * The device names each CQ whose notification fired in the vector's
 * completion cause register, once per firing, until it reads
 * RS_COMP_CAUSE_NONE: only those get an event.  A CQ that fires again
 * while this runs raises the interrupt again, so reading at most max_cq
 * causes leaves none behind.
 */
static irqreturn_t rs_comp_irq_cause(struct rs_comp_vec *cv)
{
	struct rs_ibdev *dev = cv->dev;
	struct rs_cq *cq;
	bool any = false;
	u32 h, n;

	for (n = 0; n < dev->ibdev.attrs.max_cq; n++) {
		h = rs_rd32(dev->rdev, A_RS_COMP_CAUSE +
			    4 * (dev->vec_base + cv->vector));
		if (h == RS_COMP_CAUSE_NONE)
			break;
		xa_lock(&dev->cqs);
		cq = xa_load(&dev->cqs, h & RS_HANDLE_INDEX_MASK);
		if (cq && cq->handle == h) {
			WRITE_ONCE(cq->armed, false);
			any = true;
			if (cq->ibcq.comp_handler)
				cq->ibcq.comp_handler(&cq->ibcq,
						      cq->ibcq.cq_context);
		}
		xa_unlock(&dev->cqs);
	}
	return any ? IRQ_HANDLED : IRQ_NONE;
}

/*
 * A device without completion causes (ABI < 1.7): the handler calls the
 * completion handler of every armed kernel CQ of the vector that has a
 * new CQE, and of every user CQ of the vector (user space arms its CQs
 * itself, so this may be a spurious event for some of them, which breaks
 * programs that poll once per event and expect a completion).
 */
irqreturn_t rs_ib_comp_irq(int irq, void *data)
{
	struct rs_comp_vec *cv = data;
	struct rs_ibdev *dev = cv->dev;
	unsigned long idx;
	struct rs_cq *cq;
	bool any = false;

	if (dev->rdev->caps & RS_CAP_COMP_CAUSE)
		return rs_comp_irq_cause(cv);

	xa_lock(&dev->cqs);
	xa_for_each(&dev->cqs, idx, cq) {
		if (cq->vector != cv->vector)
			continue;
		if (!cq->user) {
			bool ready;

			if (!READ_ONCE(cq->armed))
				continue;
			spin_lock(&cq->lock);
			ready = rs_cq_next(cq);
			spin_unlock(&cq->lock);
			if (!ready)
				continue;
			WRITE_ONCE(cq->armed, false);
		}
		any = true;
		if (cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}
	xa_unlock(&dev->cqs);
	return any ? IRQ_HANDLED : IRQ_NONE;
}

/* ------------------------------------------------------------------ */
/* Work requests                                                      */
/* ------------------------------------------------------------------ */

/* Kernel QPs: WQEs into the rings, doorbells through page 0. */

static int rs_wr_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_SEND:
		return RS_WR_SEND;
	case IB_WR_SEND_WITH_IMM:
		return RS_WR_SEND_IMM;
	case IB_WR_SEND_WITH_INV:
		return RS_WR_SEND_INV;
	case IB_WR_RDMA_WRITE:
		return RS_WR_RDMA_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return RS_WR_RDMA_WRITE_IMM;
	case IB_WR_RDMA_READ:
		return RS_WR_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return RS_WR_ATOMIC_CMP_SWP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return RS_WR_ATOMIC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return RS_WR_LOCAL_INV;
	case IB_WR_REG_MR:
		return RS_WR_REG_MR;
	default:
		return -EOPNOTSUPP;
	}
}

static void rs_build_reg_mr(const struct ib_reg_wr *wr, struct rs_send_wqe_reg_mr *f)
{
	struct rs_mr *mr = to_rsmr(wr->mr);

	f->key = wr->key;
	f->iova = mr->ibmr.iova;
	f->length = mr->ibmr.length;
	f->pbl_addr = mr->pages_dma;
	f->npages = mr->npages;
	f->page_shift = ilog2(mr->ibmr.page_size);
	f->access = rs_access_from_ib(wr->access);
}

static int rs_build_send(struct rs_qp *qp, const struct ib_send_wr *wr, void *slot)
{
	struct rs_send_wqe_ctrl *c = slot;
	struct rs_sge *sg = (struct rs_sge *)(c + 1);
	int op = rs_wr_opcode(wr->opcode);
	int i;

	if (op < 0)
		return op;
	if (wr->num_sge > qp->sq.max_sge) {
		ibdev_dbg_ratelimited(qp->ibqp.device,
				      "QP %u: send WR with %d SGEs, the QP has %u\n",
				      qp->qpn, wr->num_sge, qp->sq.max_sge);
		return -EINVAL;
	}

	memset(slot, 0, qp->sq.stride);
	c->wr_id = wr->wr_id;
	c->opcode = op;
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		c->flags |= RS_WQE_F_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		c->flags |= RS_WQE_F_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		c->flags |= RS_WQE_F_FENCE;
	if (wr->opcode == IB_WR_REG_MR) {
		rs_build_reg_mr(reg_wr(wr), slot);
		return 0;
	}

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		c->imm_or_inv = be32_to_cpu(wr->ex.imm_data);
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		c->imm_or_inv = wr->ex.invalidate_rkey;
		break;
	default:
		break;
	}
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		c->remote_addr = rdma_wr(wr)->remote_addr;
		c->rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		c->remote_addr = atomic_wr(wr)->remote_addr;
		c->rkey = atomic_wr(wr)->rkey;
		c->compare_add = atomic_wr(wr)->compare_add;
		c->swap = atomic_wr(wr)->swap;
		break;
	default:
		break;
	}
	if (qp->rs_type == RS_QPT_UD || qp->rs_type == RS_QPT_GSI) {
		struct rs_ah *ah = to_rsah(ud_wr(wr)->ah);

		c->ah = rs_ah_handle(ah);
		c->remote_qpn = ud_wr(wr)->remote_qpn;
		c->remote_qkey = ud_wr(wr)->remote_qkey;
		/* The device handle of an AH made in atomic context may not exist yet. */
		if (ah->av) {
			c->flags |= RS_WQE_F_AV_ADDR;
			c->swap = ah->av_dma;
		}
	}

	/* As the provider: a READ or an atomic ignores IB_SEND_INLINE. */
	if ((wr->send_flags & IB_SEND_INLINE) && op != RS_WR_RDMA_READ &&
	    op != RS_WR_ATOMIC_CMP_SWP && op != RS_WR_ATOMIC_FETCH_ADD) {
		u8 *p = (u8 *)(c + 1);
		u32 len = 0;

		for (i = 0; i < wr->num_sge; i++) {
			if (len + wr->sg_list[i].length > qp->max_inline) {
				ibdev_dbg_ratelimited(qp->ibqp.device,
						      "QP %u: more than %u bytes inline\n",
						      qp->qpn, qp->max_inline);
				return -EINVAL;
			}
			memcpy(p + len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		c->flags |= RS_WQE_F_INLINE;
		c->inline_len = len;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			sg[i].addr = wr->sg_list[i].addr;
			sg[i].length = wr->sg_list[i].length;
			sg[i].lkey = wr->sg_list[i].lkey;
		}
		c->num_sge = wr->num_sge;
	}
	return 0;
}

int rs_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_qp *qp = to_rsqp(ibqp);
	struct rs_wq *wq = &qp->sq;
	u32 mask = (1u << wq->log) - 1;
	unsigned long flags;
	int err = 0, n = 0;

	/* The provider posts to user QPs itself, in user space. */
	if (qp->user) {
		ibdev_dbg_ratelimited(&dev->ibdev, "QP %u: post_send by the kernel on a user QP\n",
				      qp->qpn);
		return -EINVAL;
	}
	/* Not a user QP for ib_core, but without a send queue. */
	if (qp->rs_type == RS_QPT_XRC_TGT) {
		ibdev_dbg_ratelimited(&dev->ibdev, "QP %u: post_send on an XRC target QP\n",
				      qp->qpn);
		*bad = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&wq->lock, flags);
	/* In ERR the device completes them flushed (ib_drain_sq). */
	if (qp->state < IB_QPS_RTS) {
		ibdev_dbg_ratelimited(&dev->ibdev, "QP %u: post_send in state %d, before RTS\n",
				      qp->qpn, qp->state);
		err = -EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		void *slot;

		if (wq->pi - wq->ci >= (1u << wq->log)) {
			err = -ENOMEM;
			break;
		}
		slot = wq->ring.va + (size_t)(wq->pi & mask) * wq->stride;
		err = rs_build_send(qp, wr, slot);
		if (err)
			break;
		wq->signaled[wq->pi & mask] =
			!!(((struct rs_send_wqe_ctrl *)slot)->flags & RS_WQE_F_SIGNALED);
		wq->pi++;
		n++;
	}
	if (err)
		*bad = wr;
	if (n)
		rs_ib_ring_wq_db(dev, qp->dbrec ? &qp->dbrec->sq_prod : NULL,
				 qp->dbrec ? &qp->dbrec->sq_active : NULL,
				 RS_DB_SQ, qp->qpn, wq->pi);
out:
	spin_unlock_irqrestore(&wq->lock, flags);
	return err;
}

/*
 * Post receive WQEs to @wq (a kernel QP's RQ or a kernel SRQ) and ring
 * doorbell @db for queue @index, or store the producer in @dbrec's rq_prod
 * (a QP's RQ with a doorbell record; the ABI has none for SRQs).  Called
 * with wq->lock held: see struct rs_wq for the rule.
 */
static int rs_wq_post_recv(struct rs_ibdev *dev, struct rs_wq *wq, u32 db,
			   u32 index, struct rs_db_record *dbrec,
			   const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad)
{
	u32 mask = (1u << wq->log) - 1;
	int err = 0, n = 0, i;

	lockdep_assert_held(&wq->lock);
	for (; wr; wr = wr->next) {
		struct rs_recv_wqe_ctrl *c;
		struct rs_sge *sg;

		if (wq->pi - wq->ci >= (1u << wq->log)) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge > wq->max_sge) {
			ibdev_dbg_ratelimited(&dev->ibdev,
					      "%s %u: receive WR with %d SGEs, the queue has %u\n",
					      db == RS_DB_SRQ ? "SRQ" : "QP", index,
					      wr->num_sge, wq->max_sge);
			err = -EINVAL;
			break;
		}
		c = wq->ring.va + (size_t)(wq->pi & mask) * wq->stride;
		sg = (struct rs_sge *)(c + 1);
		memset(c, 0, wq->stride);
		c->wr_id = wr->wr_id;
		c->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			sg[i].addr = wr->sg_list[i].addr;
			sg[i].length = wr->sg_list[i].length;
			sg[i].lkey = wr->sg_list[i].lkey;
		}
		wq->pi++;
		n++;
	}
	if (err)
		*bad = wr;
	if (n)
		rs_ib_ring_wq_db(dev, dbrec ? &dbrec->rq_prod : NULL,
				 dbrec ? &dbrec->rq_active : NULL,
				 db, index, wq->pi);
	return err;
}

int rs_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_qp *qp = to_rsqp(ibqp);
	unsigned long flags;
	int err;

	if (qp->user) {
		ibdev_dbg_ratelimited(&dev->ibdev, "QP %u: post_recv by the kernel on a user QP\n",
				      qp->qpn);
		return -EINVAL;
	}
	if (qp->srq) {
		ibdev_dbg_ratelimited(&dev->ibdev, "QP %u: post_recv on a QP with an SRQ\n",
				      qp->qpn);
		return -EINVAL;
	}
	/* Its requests take the WQEs of the XRC SRQs they name. */
	if (qp->rs_type == RS_QPT_XRC_TGT) {
		ibdev_dbg_ratelimited(&dev->ibdev, "QP %u: post_recv on an XRC target QP\n",
				      qp->qpn);
		*bad = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->rq.lock, flags);
	if (qp->state == IB_QPS_RESET) {
		ibdev_dbg_ratelimited(&dev->ibdev, "QP %u: post_recv in state RESET\n",
				      qp->qpn);
		err = -EINVAL;
		*bad = wr;
	} else {
		err = rs_wq_post_recv(dev, &qp->rq, RS_DB_RQ, qp->qpn,
				      qp->dbrec, wr, bad);
	}
	spin_unlock_irqrestore(&qp->rq.lock, flags);
	return err;
}

/* Kernel SRQs: the same ring as a kernel RQ (rs_wq_post_recv). */
int rs_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad)
{
	struct rs_ibdev *dev = to_rsdev(ibsrq->device);
	struct rs_srq *srq = to_rssrq(ibsrq);
	unsigned long flags;
	int err;

	if (srq->user) {
		ibdev_dbg_ratelimited(&dev->ibdev,
				      "SRQ %u: post_srq_recv by the kernel on a user SRQ\n",
				      srq->handle);
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->wq.lock, flags);
	err = rs_wq_post_recv(dev, &srq->wq, RS_DB_SRQ, srq->handle, NULL,
			      wr, bad);
	spin_unlock_irqrestore(&srq->wq.lock, flags);
	return err;
}
