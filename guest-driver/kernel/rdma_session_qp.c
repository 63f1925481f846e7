// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: QPs (RC, UC, UD, XRC, DC, QP1), their sessions
 * (the RoCEv2 UDP 5-tuple of a QP's primary path) and multicast
 * attachment.  Posting is in rdma_session_datapath.c.
 */

#include <linux/bitfield.h>
#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/interrupt.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/addrconf.h>
#include <net/ipv6.h>

#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/iter.h>
#include <rdma/uverbs_ioctl.h>

#include "rdma_session_ib.h"
#include "rdma_session_com_cmd.h"
#include "hw/rdma-session/rdma-session-uverbs.h"

#define RS_ROCE_V2_PORT		4791

/* ------------------------------------------------------------------ */
/* Sessions                                                           */
/* ------------------------------------------------------------------ */

static void rs_session_put(struct rs_ibdev *dev, struct rs_session *s)
{
	if (!s)
		return;
	if (s->nsess) {
		rs_path_put(dev, s);
		return;
	}
	mutex_lock(&dev->sess_lock);
	if (refcount_dec_and_test(&s->refs)) {
		list_del(&s->node);
		rs_com_destroy_session_group(dev, s->group);
		rs_com_destroy_session(dev, s->session);
		kfree(s);
	}
	mutex_unlock(&dev->sess_lock);
}

/* The group a QP sends over, its UDP source port and sessions (0: none). */
void rs_qp_session_info(struct rs_qp *qp, u32 *group, u16 *sport,
			u32 *nsessions)
{
	if (!qp->sess)
		return;
	/* Multipath: the group of the QP's path policy, its first port. */
	*group = qp->sess->policy == RS_UVERBS_PATH_ACTIVE_BACKUP ?
		 qp->sess->ab_group : qp->sess->group;
	*sport = qp->sess->src_port;
	*nsessions = qp->sess->nsess ? qp->sess->nsess : 1;
}

/*
 * The session (and its one-session group) for the RoCEv2 5-tuple of an
 * RC/UC QP's primary path: source IP = the SGID, destination IP = the
 * DGID, UDP source port from the flow label (rdma_get_udp_sport()),
 * destination port 4791.
 */
static struct rs_session *rs_session_get(struct rs_ibdev *dev,
					 const struct rdma_ah_attr *ah,
					 u32 lqpn, u32 rqpn)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(ah);
	struct rs_cmd_create_session_group gparams = {};
	struct rs_cmd_create_session sparams = {};
	struct rs_com_create_result result;
	struct rs_session *s;
	u16 sport;
	int err;

	/* paths > 1: sessions of the QP's own, on reserved ports. */
	if (rs_path_count() > 1)
		return rs_path_get(dev, ah);
	sport = rdma_get_udp_sport(grh->flow_label, lqpn, rqpn);

	mutex_lock(&dev->sess_lock);
	list_for_each_entry(s, &dev->sessions, node) {
		if (s->gid_index == grh->sgid_index && s->src_port == sport &&
		    !memcmp(s->dst_ip, grh->dgid.raw, sizeof(s->dst_ip))) {
			refcount_inc(&s->refs);
			goto out;
		}
	}

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s) {
		s = ERR_PTR(-ENOMEM);
		goto out;
	}
	memcpy(s->dst_ip, grh->dgid.raw, sizeof(s->dst_ip));
	s->src_port = sport;
	s->gid_index = grh->sgid_index;

	memcpy(sparams.dst_ip, grh->dgid.raw, 16);
	memcpy(sparams.dmac, ah->roce.dmac, ETH_ALEN);
	sparams.src_port = sport;
	sparams.dst_port = RS_ROCE_V2_PORT;
	sparams.gid_index = grh->sgid_index;
	err = rs_com_create_session(dev, &sparams, &result);
	if (err)
		goto err_free;
	s->session = result.handle;

	gparams.session[0] = s->session;
	gparams.nsessions = 1;
	gparams.policy = RS_GROUP_ROUND_ROBIN;
	err = rs_com_create_session_group(dev, &gparams, &result);
	if (err)
		goto err_session;
	s->group = result.handle;
	refcount_set(&s->refs, 1);
	list_add(&s->node, &dev->sessions);
	atomic64_inc(&dev->cnt[RS_CNT_SESSIONS]);
	goto out;

err_session:
	rs_com_destroy_session(dev, s->session);
err_free:
	kfree(s);
	s = ERR_PTR(err);
out:
	mutex_unlock(&dev->sess_lock);
	return s;
}

/* ------------------------------------------------------------------ */
/* QPs                                                                */
/* ------------------------------------------------------------------ */

static int rs_qp_type(enum ib_qp_type t)
{
	switch (t) {
	case IB_QPT_RC:
		return RS_QPT_RC;
	case IB_QPT_UC:
		return RS_QPT_UC;
	case IB_QPT_UD:
		return RS_QPT_UD;
	case IB_QPT_GSI:
		return RS_QPT_GSI;
	case IB_QPT_XRC_INI:
		return RS_QPT_XRC_INI;
	case IB_QPT_XRC_TGT:
		return RS_QPT_XRC_TGT;
	default:
		return -EOPNOTSUPP;
	}
}

void rs_wq_free(struct rs_ibdev *dev, struct rs_wq *wq)
{
	rs_mmap_remove(&wq->mentry);
	rs_buf_free(dev, &wq->ring);
	kfree(wq->signaled);
	wq->signaled = NULL;
}

/*
 * An XRC target QP: no rings, PD, CQs or doorbell page, only its domain.
 * ib_core calls with udata NULL and pd NULL for user space too
 * (ib_create_qp_user), and then makes the QP shareable through the
 * domain (ib_open_qp).  Queue sizes asked for are ignored, as mlx5 does:
 * the QP has no queues, and reports none.
 */
static int rs_ib_create_xrc_tgt(struct rs_ibdev *dev, struct rs_qp *qp,
				struct ib_qp_init_attr *init)
{
	struct rs_cmd_create_qp params = {};
	struct rs_com_create_qp_result result;
	int err;

	if (!init->xrcd) {
		ibdev_dbg(&dev->ibdev, "create_qp: XRC target QP without an XRC domain\n");
		return -EINVAL;
	}
	qp->rs_type = RS_QPT_XRC_TGT;
	qp->state = IB_QPS_RESET;
	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);

	params.qp_type = RS_QPT_XRC_TGT;
	params.xrcd = to_rsxrcd(init->xrcd)->handle;
	err = rs_com_create_qp(dev, &params, &result);
	if (err)
		return err;
	qp->handle = result.handle;
	qp->qpn = result.qpn;
	qp->ibqp.qp_num = qp->qpn;

	err = xa_err(xa_store_irq(&dev->qps, qp->qpn, qp, GFP_KERNEL));
	if (err) {
		rs_com_destroy_qp(dev, qp->handle);
		return err;
	}
	memset(&init->cap, 0, sizeof(init->cap));
	qp->cap = init->cap;
	atomic64_inc(&dev->cnt[RS_CNT_QP_CREATED]);
	return 0;
}

/*
 * A DC QP from user space, created the mlx5 way: IB_QPT_DRIVER with
 * struct rs_uverbs_create_qp saying DCI or DCT.  uverbs always passes a
 * send CQ (and, for a QP without receive queue, the send CQ as receive
 * CQ); the device is given only the CQs the QP uses.  Returns the
 * device's QP type or an error.
 */
static int rs_dc_type(struct rs_ibdev *dev, struct ib_qp_init_attr *init,
		      struct ib_udata *udata,
		      const struct rs_uverbs_create_qp *ucmd)
{
	struct ib_qp_cap *cap = &init->cap;

	if (!rs_has_dc(dev))
		return -EOPNOTSUPP;
	if (!udata) {
		ibdev_dbg(&dev->ibdev, "create_qp: DC QPs are for user space only\n");
		return -EOPNOTSUPP;
	}
	switch (ucmd->dc_type) {
	case RS_UVERBS_DC_DCI:
		if (init->srq || cap->max_recv_wr || cap->max_recv_sge) {
			ibdev_dbg(&dev->ibdev, "create_qp: a DCI has no receive side (SRQ %d, recv_wr %u, recv_sge %u)\n",
				  !!init->srq, cap->max_recv_wr, cap->max_recv_sge);
			return -EINVAL;
		}
		return RS_QPT_DCI;
	case RS_UVERBS_DC_DCT:
		if (!init->srq || !init->recv_cq) {
			ibdev_dbg(&dev->ibdev, "create_qp: a DCT needs an SRQ and a receive CQ\n");
			return -EINVAL;
		}
		if (cap->max_send_wr || cap->max_send_sge ||
		    cap->max_inline_data || cap->max_recv_wr ||
		    cap->max_recv_sge) {
			ibdev_dbg(&dev->ibdev, "create_qp: a DCT has no queues of its own\n");
			return -EINVAL;
		}
		return RS_QPT_DCT;
	default:
		ibdev_dbg(&dev->ibdev, "create_qp: IB_QPT_DRIVER with DC type %u\n",
			  ucmd->dc_type);
		return -EINVAL;
	}
}

static int rs_create_qp_udata(struct rs_ibdev *dev, struct ib_udata *udata,
			      struct rs_uverbs_create_qp *ucmd)
{
	int err = rs_udata_in(udata, ucmd, sizeof(*ucmd));

	if (err)
		return err;
	if ((ucmd->flags & ~RS_UVERBS_QP_F_DB_RECORD) ||
	    ((ucmd->flags & RS_UVERBS_QP_F_DB_RECORD) &&
	     !(dev->rdev->caps & RS_CAP_DB_RECORD)) ||
	    ucmd->rsvd[0] || ucmd->rsvd[1] ||
	    ucmd->dc_type > RS_UVERBS_DC_DCT ||
	    (ucmd->dc_type != RS_UVERBS_DC_DCT && ucmd->dct_access_key)) {
		ibdev_dbg(&dev->ibdev, "create_qp: driver data: DC type %u, flags %#x, key on a non-DCT %d, reserved %#x %#x\n",
			  ucmd->dc_type, ucmd->flags,
			  ucmd->dc_type != RS_UVERBS_DC_DCT && ucmd->dct_access_key,
			  ucmd->rsvd[0], ucmd->rsvd[1]);
		return -EINVAL;
	}
	return 0;
}

/*
 * create_qp's checks of the QP type's needs (SRQ, CQs, user or kernel)
 * and of the capacities against the device's; an initiator's or an SRQ
 * user's receive capacities become 0.
 */
static int rs_create_qp_check(struct rs_ibdev *dev,
			      struct ib_qp_init_attr *init,
			      struct ib_udata *udata, int type, bool ini)
{
	const struct rs_device_attr *da = &dev->rdev->attr;
	struct ib_qp_cap *cap = &init->cap;

	/*
	 * The send queue of an initiator is written by the provider; the
	 * kernel's data path builds no XRCETH.
	 */
	if (ini && !udata) {
		ibdev_dbg(&dev->ibdev, "create_qp: XRC initiator QPs are for user space only\n");
		return -EOPNOTSUPP;
	}
	if (init->srq && (type == RS_QPT_GSI || ini)) {
		ibdev_dbg(&dev->ibdev, "create_qp: a %s QP cannot use an SRQ\n",
			  ini ? "XRC initiator" : "GSI");
		return -EINVAL;
	}
	if (init->srq && init->srq->srq_type != IB_SRQT_BASIC) {
		ibdev_dbg(&dev->ibdev, "create_qp: SRQ of type %d, only XRC target QPs take requests to an XRC SRQ\n",
			  init->srq->srq_type);
		return -EINVAL;
	}
	if (!init->send_cq || (!ini && !init->recv_cq)) {
		ibdev_dbg(&dev->ibdev, "create_qp: no %s CQ\n",
			  init->send_cq ? "receive" : "send");
		return -EINVAL;
	}
	if (type == RS_QPT_GSI && udata) {
		ibdev_dbg(&dev->ibdev, "create_qp: the GSI QP is the kernel's\n");
		return -EINVAL;
	}
	/*
	 * An initiator has no receive side: uverbs' write path zeroes these
	 * too.  With an SRQ they are ignored (ibv_create_qp(3), rxe, mlx5).
	 */
	if (ini || init->srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (cap->max_send_wr > da->max_qp_wr || cap->max_recv_wr > da->max_qp_wr ||
	    cap->max_send_sge > da->max_sge || cap->max_recv_sge > da->max_sge ||
	    cap->max_inline_data > da->max_inline) {
		ibdev_dbg(&dev->ibdev,
			  "create_qp: send_wr %u, recv_wr %u (max %u), send_sge %u, recv_sge %u (max %u), inline %u (max %u)\n",
			  cap->max_send_wr, cap->max_recv_wr, da->max_qp_wr,
			  cap->max_send_sge, cap->max_recv_sge, da->max_sge,
			  cap->max_inline_data, da->max_inline);
		return -EINVAL;
	}
	return 0;
}

/* create_qp's answer to user space: the rings' mmap keys and shapes. */
static int rs_create_qp_uresp(struct rs_ibdev *dev, struct rs_qp *qp,
			      struct rs_ucontext *uc, struct ib_udata *udata,
			      bool has_sq, bool has_rq, u32 inl)
{
	struct rs_uverbs_create_qp_resp resp = {};
	int err;

	if (has_sq) {
		qp->sq.mentry = rs_mmap_insert(dev, &uc->ibuc, RS_MMAP_MEM,
					       (u64)(uintptr_t)qp->sq.ring.va,
					       qp->sq.ring.size, 0,
					       &resp.sq_mmap_key);
		if (IS_ERR(qp->sq.mentry)) {
			err = PTR_ERR(qp->sq.mentry);
			qp->sq.mentry = NULL;
			return err;
		}
		resp.sq_bytes = qp->sq.ring.size;
		resp.sq_stride = qp->sq.stride;
	}
	if (has_rq) {
		qp->rq.mentry = rs_mmap_insert(dev, &uc->ibuc, RS_MMAP_MEM,
					       (u64)(uintptr_t)qp->rq.ring.va,
					       qp->rq.ring.size, 0,
					       &resp.rq_mmap_key);
		if (IS_ERR(qp->rq.mentry)) {
			err = PTR_ERR(qp->rq.mentry);
			qp->rq.mentry = NULL;
			return err;
		}
		resp.rq_bytes = qp->rq.ring.size;
	}
	resp.qpn = qp->qpn;
	resp.sq_log_size = qp->sq.log;
	resp.rq_log_size = qp->rq.log;
	resp.rq_stride = has_rq ? qp->rq.stride : 0;
	resp.max_inline = has_sq ? inl : 0;
	if (qp->db_record) {
		resp.flags |= RS_UVERBS_QP_RESP_F_DB_RECORD;
		resp.db_record_offset = qp->db_record_offset;
	}
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}

int rs_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	const struct rs_device_attr *da = &dev->rdev->attr;
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	struct rs_qp *qp = to_rsqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	struct rs_uverbs_create_qp ucmd;
	struct rs_cmd_create_qp params = {};
	struct rs_com_create_qp_result result;
	u32 sq_n, rq_n, ssge, rsge, inl;
	bool ini, has_rq, has_sq, dci, dct, want_dbr;
	int type, err;

	err = rs_create_qp_udata(dev, udata, &ucmd);
	if (err)
		return err;
	if (init->qp_type == IB_QPT_DRIVER) {
		type = rs_dc_type(dev, init, udata, &ucmd);
	} else if (ucmd.dc_type != RS_UVERBS_DC_NONE) {
		ibdev_dbg(&dev->ibdev, "create_qp: DC type %u for QP type %d, not IB_QPT_DRIVER\n",
			  ucmd.dc_type, init->qp_type);
		return -EINVAL;
	} else {
		type = rs_qp_type(init->qp_type);
	}
	if (type < 0)
		return type;
	if (init->create_flags)
		return -EOPNOTSUPP;
	dci = type == RS_QPT_DCI;
	dct = type == RS_QPT_DCT;
	/* An XRC initiator and a DCI have a send queue only. */
	ini = type == RS_QPT_XRC_INI || dci;
	if ((type == RS_QPT_XRC_INI || type == RS_QPT_XRC_TGT) && !rs_has_xrc(dev))
		return -EOPNOTSUPP;
	if (type == RS_QPT_XRC_TGT)
		return rs_ib_create_xrc_tgt(dev, qp, init);
	err = rs_create_qp_check(dev, init, udata, type, ini);
	if (err)
		return err;

	has_rq = !init->srq && !ini;
	has_sq = !dct;
	sq_n = roundup_pow_of_two(max(cap->max_send_wr, 2u));
	rq_n = roundup_pow_of_two(max(cap->max_recv_wr, 2u));
	ssge = max(cap->max_send_sge, 1u);
	rsge = max(cap->max_recv_sge, 1u);
	inl = cap->max_inline_data;

	qp->rs_type = type;
	qp->srq = init->srq ? to_rssrq(init->srq) : NULL;
	qp->user = !!udata;
	qp->state = IB_QPS_RESET;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->max_inline = inl;
	qp->dc_key = ucmd.dct_access_key;
	qp->sq.log = has_sq ? ilog2(sq_n) : 0;
	qp->rq.log = has_rq ? ilog2(rq_n) : 0;
	qp->sq.max_sge = has_sq ? ssge : 0;
	qp->rq.max_sge = has_rq ? rsge : 0;
	/* The device's strides (spec, "Work queues"). */
	qp->sq.stride = roundup_pow_of_two(sizeof(struct rs_send_wqe_ctrl) +
					   max(ssge * (u32)sizeof(struct rs_sge), inl));
	qp->rq.stride = roundup_pow_of_two(sizeof(struct rs_recv_wqe_ctrl) +
					   rsge * (u32)sizeof(struct rs_sge));
	/* Inline data may fill the WQE's room, as rxe and mlx5 grant it. */
	if (has_sq) {
		inl = min_t(u32, da->max_inline,
			    qp->sq.stride - sizeof(struct rs_send_wqe_ctrl));
		qp->max_inline = inl;
	}
	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);

	/*
	 * A doorbell record (ABI 1.11) lives after the send WQEs, in the SQ
	 * ring's pages: the process maps it with the ring.  stride << log is
	 * a multiple of 64, so the record is aligned.  Kernel QPs (GSI
	 * included: the device runs it as any UD QP) take one whenever the
	 * device offers it: it saves the MMIO exits of busy queues.
	 */
	if (udata)
		want_dbr = has_sq && (ucmd.flags & RS_UVERBS_QP_F_DB_RECORD);
	else
		want_dbr = has_sq && (dev->rdev->caps & RS_CAP_DB_RECORD);
	if (has_sq) {
		err = rs_buf_alloc(dev, &qp->sq.ring,
				   ((size_t)qp->sq.stride << qp->sq.log) +
				   (want_dbr ? sizeof(struct rs_db_record) : 0));
		if (err)
			return err;
	}
	if (has_rq) {
		err = rs_buf_alloc(dev, &qp->rq.ring,
				   (size_t)qp->rq.stride << qp->rq.log);
		if (err)
			goto err_free;
	}
	if (!udata) {
		qp->sq.signaled = kcalloc(sq_n, sizeof(u8), GFP_KERNEL);
		if (!qp->sq.signaled) {
			err = -ENOMEM;
			goto err_free;
		}
	}

	params.sq_addr = has_sq ? qp->sq.ring.dma : 0;
	params.rq_addr = has_rq ? qp->rq.ring.dma : 0;
	params.srq = qp->srq ? qp->srq->handle : 0;
	params.pd = to_rspd(ibqp->pd)->handle;
	params.send_cq = has_sq ? to_rscq(init->send_cq)->handle : 0;
	params.recv_cq = ini ? 0 : to_rscq(init->recv_cq)->handle;
	params.qp_type = type;
	params.sq_log_size = qp->sq.log;
	params.rq_log_size = qp->rq.log;
	params.max_send_sge = qp->sq.max_sge;
	params.max_recv_sge = qp->rq.max_sge;
	params.flags = qp->sig_all && has_sq ? RS_QP_F_SIGNAL_ALL : 0;
	params.max_inline = has_sq ? inl : 0;
	params.uar = uc ? uc->uar : 0;
	if (dct) {
		params.dc_key_lo = lower_32_bits(qp->dc_key);
		params.dc_key_hi = upper_32_bits(qp->dc_key);
	}
	err = rs_com_create_qp(dev, &params, &result);
	if (err)
		goto err_free;
	qp->handle = result.handle;
	qp->qpn = result.qpn;
	ibqp->qp_num = qp->qpn;

	err = xa_err(xa_store_irq(&dev->qps, qp->qpn, qp, GFP_KERNEL));
	if (err)
		goto err_destroy;
	if (want_dbr) {
		u32 off = qp->sq.stride << qp->sq.log;

		/* Refused (an old device): the QP rings doorbells only. */
		if (!rs_com_set_qp_db_record(dev, qp->handle,
					     qp->sq.ring.dma + off)) {
			qp->db_record = true;
			qp->db_record_offset = off;
			if (!udata)
				qp->dbrec = qp->sq.ring.va + off;
		}
	}

	cap->max_send_wr = has_sq ? sq_n : 0;
	cap->max_recv_wr = has_rq ? rq_n : 0;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_recv_sge = qp->rq.max_sge;
	cap->max_inline_data = has_sq ? inl : 0;
	qp->cap = *cap;

	if (udata) {
		err = rs_create_qp_uresp(dev, qp, uc, udata, has_sq, has_rq, inl);
		if (err)
			goto err_xa;
	}
	atomic64_inc(&dev->cnt[RS_CNT_QP_CREATED]);
	return 0;

err_xa:
	xa_erase_irq(&dev->qps, qp->qpn);
err_destroy:
	rs_com_destroy_qp(dev, qp->handle);
err_free:
	rs_wq_free(dev, &qp->rq);
	rs_wq_free(dev, &qp->sq);
	return err;
}

int rs_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_qp *qp = to_rsqp(ibqp);
	int err;

	err = rs_com_destroy_qp(dev, qp->handle);
	if (err)
		return err;
	xa_erase_irq(&dev->qps, qp->qpn);
	/* The QP no longer holds its group: release the session. */
	rs_session_put(dev, qp->sess);
	qp->sess = NULL;
	rs_wq_free(dev, &qp->rq);
	rs_wq_free(dev, &qp->sq);
	return 0;
}

/*
 * UD multicast: the device delivers the group's packets to the QP.  ib_core
 * has checked that the QP is UD and the GID multicast; it detaches before
 * the QP is destroyed (the device refuses to destroy an attached QP).
 */
static int rs_ib_mcast(struct ib_qp *ibqp, union ib_gid *gid, bool attach)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_cmd_mcast params = {};

	if (!(dev->rdev->caps & RS_CAP_MCAST))
		return -EOPNOTSUPP;
	memcpy(params.gid, gid->raw, sizeof(params.gid));
	params.qp = to_rsqp(ibqp)->handle;
	return attach ? rs_com_attach_mcast(dev, &params) :
			rs_com_detach_mcast(dev, &params);
}

int rs_ib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return rs_ib_mcast(ibqp, gid, true);
}

int rs_ib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return rs_ib_mcast(ibqp, gid, false);
}

/*
 * Back to RESET: the device forgot the queue, so does the driver.  The
 * QP keeps its doorbell record: only the WQEs are cleared (the device
 * owns the active words) and the queue's producer in it, @rec_prod,
 * restarts at 0 as the ABI asks.
 */
static void rs_wq_reset(struct rs_wq *wq, u32 *rec_prod)
{
	unsigned long flags;

	/* No such queue (an SRQ's QP, an XRC QP). */
	if (!wq->ring.va)
		return;
	spin_lock_irqsave(&wq->lock, flags);
	wq->pi = 0;
	wq->ci = 0;
	memset(wq->ring.va, 0, (size_t)wq->stride << wq->log);
	if (rec_prod)
		WRITE_ONCE(*rec_prod, 0);
	spin_unlock_irqrestore(&wq->lock, flags);
}

/* Bits 0-20 of enum ib_qp_attr_mask are the device's bits. */
#define RS_IB_QP_ATTR_MASK	(IB_QP_DEST_QPN * 2 - 1)

/*
 * The transitions of a DC QP and the attributes each takes (the device's
 * contract, rdma-session-abi.h): ib_modify_qp_is_ok() knows no
 * IB_QPT_DRIVER.  A DCI never takes an address vector or destination QP
 * (every WQE names its target); a DCT serves from RTR.  A DCT's AV, which
 * mlx5 code passes at RTR, is accepted and not used: the DCT answers on
 * the path each connect arrived on.
 */
static bool rs_dc_modify_ok(const struct rs_qp *qp, enum ib_qp_state cur,
			    enum ib_qp_state next, int mask)
{
	bool dct = qp->rs_type == RS_QPT_DCT;
	int req = 0, opt = 0;

	if (!(mask & IB_QP_STATE) || cur > IB_QPS_ERR || next > IB_QPS_ERR)
		return false;
	if (next == IB_QPS_RESET || next == IB_QPS_ERR) {
		/* Always allowed, no attributes. */
	} else if (cur == IB_QPS_RESET && next == IB_QPS_INIT) {
		req = IB_QP_PORT | (dct ? IB_QP_ACCESS_FLAGS : 0);
		opt = IB_QP_PKEY_INDEX;
	} else if (cur == IB_QPS_INIT && next == IB_QPS_INIT) {
		opt = IB_QP_PORT | IB_QP_PKEY_INDEX |
		      (dct ? IB_QP_ACCESS_FLAGS : 0);
	} else if (cur == IB_QPS_INIT && next == IB_QPS_RTR) {
		req = IB_QP_PATH_MTU | (dct ? IB_QP_MIN_RNR_TIMER : 0);
		opt = IB_QP_PKEY_INDEX | (dct ? IB_QP_AV : 0);
	} else if (!dct && cur == IB_QPS_RTR && next == IB_QPS_RTS) {
		req = IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
		      IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC;
	} else {
		return false;
	}
	return (mask & req) == req &&
	       !(mask & ~(req | opt | IB_QP_STATE | IB_QP_CUR_STATE));
}

int rs_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_qp *qp = to_rsqp(ibqp);
	struct rs_session *sess = NULL;
	enum ib_qp_state cur, next;
	struct rs_cmd_modify_qp params = {};
	struct rs_qp_attr *a;
	dma_addr_t dma;
	u32 dmask;
	int err;

	if (mask & ~RS_IB_QP_ATTR_MASK)
		return -EOPNOTSUPP;
	if (udata && udata->inlen) {
		/* rsdv_modify_qp_path_policy(): nothing else with it. */
		struct rs_uverbs_modify_qp req = {};

		err = ib_copy_from_udata(&req, udata,
					 min(sizeof(req), udata->inlen));
		if (err)
			return err;
		if (udata->inlen > sizeof(req) &&
		    !ib_is_udata_cleared(udata, sizeof(req),
					 udata->inlen - sizeof(req)))
			return -EINVAL;
		if (req.flags != RS_UVERBS_MODIFY_QP_PATH_POLICY ||
		    req.rsvd[0] || req.rsvd[1] || mask)
			return -EINVAL;
		return rs_path_set_policy(dev, qp, req.path_policy);
	}

	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (rs_is_dc(qp) ? !rs_dc_modify_ok(qp, cur, next, mask) :
			   !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		ibdev_dbg(&dev->ibdev, "QP %u: bad modify %d -> %d mask %#x\n",
			  qp->qpn, cur, next, mask);
		return -EINVAL;
	}
	if ((mask & IB_QP_PORT) && attr->port_num != RS_PORT_NUM) {
		ibdev_dbg(&dev->ibdev, "QP %u: port %u, the device has port %u only\n",
			  qp->qpn, attr->port_num, RS_PORT_NUM);
		return -EINVAL;
	}
	if ((mask & IB_QP_AV) &&
	    attr->ah_attr.type != RDMA_AH_ATTR_TYPE_ROCE) {
		ibdev_dbg(&dev->ibdev, "QP %u: address vector of type %d, not RoCE\n",
			  qp->qpn, attr->ah_attr.type);
		return -EINVAL;
	}

	a = dma_alloc_coherent(rs_dma_dev(dev), sizeof(*a), &dma, GFP_KERNEL);
	if (!a)
		return -ENOMEM;

	dmask = mask & RS_IB_QP_ATTR_MASK;
	if (rs_is_dc(qp))
		dmask &= ~IB_QP_AV;
	a->qp_state = next;
	a->cur_qp_state = cur;
	a->path_mtu = attr->path_mtu;
	a->port_num = RS_PORT_NUM;
	a->qkey = attr->qkey;
	a->rq_psn = attr->rq_psn;
	a->sq_psn = attr->sq_psn;
	/* 24 bits on the wire; rxe and mlx5 take the rest and drop it. */
	a->dest_qp_num = attr->dest_qp_num & 0xffffff;
	a->access_flags = rs_access_from_ib(attr->qp_access_flags);
	a->pkey_index = attr->pkey_index;
	/*
	 * Fewer reads in flight than asked for is always safe: perftest sets
	 * the peer's max_qp_rd_atom (soft-RoCE: 128), rxe takes up to its own.
	 */
	a->max_rd_atomic = min_t(u32, attr->max_rd_atomic,
				 dev->ibdev.attrs.max_qp_init_rd_atom);
	a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a->min_rnr_timer = attr->min_rnr_timer;
	a->timeout = attr->timeout;
	a->retry_cnt = attr->retry_cnt;
	a->rnr_retry = attr->rnr_retry;
	a->en_sqd_async_notify = attr->en_sqd_async_notify;

	if ((mask & IB_QP_AV) && !rs_is_dc(qp)) {
		const struct ib_global_route *grh = rdma_ah_read_grh(&attr->ah_attr);

		memcpy(a->ah.dgid, grh->dgid.raw, sizeof(a->ah.dgid));
		memcpy(a->ah.dmac, attr->ah_attr.roce.dmac, ETH_ALEN);
		a->ah.hop_limit = grh->hop_limit;
		a->ah.traffic_class = grh->traffic_class;
		a->ah.flow_label = rs_av_flow_label(dev, &attr->ah_attr);
		a->ah.gid_index = grh->sgid_index;

		/*
		 * A new primary path of a connected QP: its session.  An
		 * XRC target sends its responses on one as RC does.
		 */
		if (qp->rs_type == RS_QPT_RC || qp->rs_type == RS_QPT_UC ||
		    qp->rs_type == RS_QPT_XRC_INI ||
		    qp->rs_type == RS_QPT_XRC_TGT) {
			u32 rqpn = (mask & IB_QP_DEST_QPN) ? attr->dest_qp_num :
							     qp->dest_qpn;

			sess = rs_session_get(dev, &attr->ah_attr, qp->qpn, rqpn);
			if (IS_ERR(sess)) {
				err = PTR_ERR(sess);
				sess = NULL;
				goto out;
			}
			a->session_group = sess->group;
			dmask |= RS_QP_ATTR_SESSION_GROUP;
		}
	}

	params.attr_addr = dma;
	params.handle = qp->handle;
	params.attr_mask = dmask;
	err = rs_com_modify_qp(dev, &params);
	if (err) {
		rs_session_put(dev, sess);
		goto out;
	}

	qp->state = next;
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	if (sess) {
		/* The old group is no longer bound to this QP. */
		rs_session_put(dev, qp->sess);
		qp->sess = sess;
	}
	if ((mask & IB_QP_AV) && !rs_is_dc(qp)) {
		qp->av = attr->ah_attr;
		qp->av.grh.sgid_attr = NULL;
		qp->has_av = true;
	}
	if (next == IB_QPS_RESET) {
		qp->has_av = false;
		if (!qp->user) {
			rs_wq_reset(&qp->sq,
				    qp->dbrec ? &qp->dbrec->sq_prod : NULL);
			rs_wq_reset(&qp->rq,
				    qp->dbrec ? &qp->dbrec->rq_prod : NULL);
		}
	}
out:
	dma_free_coherent(rs_dma_dev(dev), sizeof(*a), a, dma);
	return err;
}

int rs_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_qp *qp = to_rsqp(ibqp);
	struct rs_cmd_query params = {};
	struct rs_qp_attr *a;
	dma_addr_t dma;
	int err;

	a = dma_alloc_coherent(rs_dma_dev(dev), sizeof(*a), &dma, GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	params.resp_addr = dma;
	params.resp_len = sizeof(*a);
	params.handle = qp->handle;
	err = rs_com_query_qp(dev, &params);
	if (err)
		goto out;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = a->qp_state;
	attr->cur_qp_state = a->cur_qp_state;
	attr->path_mtu = a->path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = a->qkey;
	attr->rq_psn = a->rq_psn;
	attr->sq_psn = a->sq_psn;
	attr->dest_qp_num = a->dest_qp_num;
	attr->qp_access_flags = rs_access_to_ib(a->access_flags);
	attr->pkey_index = a->pkey_index;
	attr->port_num = RS_PORT_NUM;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	attr->sq_draining = a->sq_draining;
	attr->en_sqd_async_notify = a->en_sqd_async_notify;
	attr->cap = qp->cap;
	if (qp->has_av)
		attr->ah_attr = qp->av;

	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->xrcd = ibqp->xrcd;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->port_num = RS_PORT_NUM;
out:
	dma_free_coherent(rs_dma_dev(dev), sizeof(*a), a, dma);
	return err;
}
