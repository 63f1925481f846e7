// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: PDs, XRC domains, shared receive queues (XRC SRQs
 * included) and address handles.
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

/* ------------------------------------------------------------------ */
/* PDs, XRC domains                                                   */
/* ------------------------------------------------------------------ */

int rs_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct rs_pd *pd = to_rspd(ibpd);
	struct rs_uverbs_alloc_pd_resp resp = {};
	struct rs_uverbs_alloc_pd ucmd;
	struct rs_cmd_create_pd params = {};
	struct rs_com_create_result result;
	int err;

	/* A user PD may ask for the identity of one of the GIDs. */
	err = rs_udata_in(udata, &ucmd, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.flags & ~RS_UVERBS_PD_F_GID)
		return -EINVAL;
	if (!udata)
		params.flags = RS_PD_F_PRIVILEGED;
	if (ucmd.flags & RS_UVERBS_PD_F_GID) {
		mutex_lock(&dev->gid_lock);
		if (ucmd.gid_index < dev->max_gids &&
		    test_bit(ucmd.gid_index, dev->gid_map))
			pd->netid = dev->gid_netid[ucmd.gid_index];
		else
			err = -EINVAL;
		mutex_unlock(&dev->gid_lock);
		if (err)
			return err;
		if (pd->netid && !(dev->rdev->caps & RS_CAP_HOST_NETID))
			return -EOPNOTSUPP;
	}
	params.netid = pd->netid;
	err = rs_com_create_pd(dev, &params, &result);
	if (err)
		return err;
	pd->handle = result.handle;
	if (pd->netid)
		ibdev_dbg(&dev->ibdev, "PD %#x in network identity %u\n",
			  pd->handle, pd->netid);

	if (udata) {
		resp.pdn = pd->handle;
		resp.netid = pd->netid;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err) {
			rs_com_destroy_pd(dev, pd->handle);
			return err;
		}
	}
	return 0;
}

int rs_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return rs_com_destroy_pd(to_rsdev(ibpd->device), to_rspd(ibpd)->handle);
}

/*
 * XRC domains: a device object that XRC SRQs and target QPs name.
 * ib_core shares one between processes (the inode of the file given to
 * ibv_open_xrcd) and deallocates it once nothing uses it; the device
 * refuses to destroy a domain that an SRQ or target QP still belongs to.
 */
int rs_ib_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibxrcd->device);
	struct rs_com_create_result result;
	int err;

	if (!rs_has_xrc(dev))
		return -EOPNOTSUPP;
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		ibdev_dbg(&dev->ibdev, "alloc_xrcd: driver input is not supported\n");
		return -EINVAL;
	}
	err = rs_com_create_xrcd(dev, &result);
	if (err)
		return err;
	to_rsxrcd(ibxrcd)->handle = result.handle;
	return 0;
}

int rs_ib_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return rs_com_destroy_xrcd(to_rsdev(ibxrcd->device),
				   to_rsxrcd(ibxrcd)->handle);
}

/* ------------------------------------------------------------------ */
/* Shared receive queues                                              */
/* ------------------------------------------------------------------ */

int rs_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibsrq->device);
	const struct rs_device_attr *da = &dev->rdev->attr;
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	struct rs_srq *srq = to_rssrq(ibsrq);
	struct rs_uverbs_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	struct rs_cmd_create_srq params = {};
	struct rs_com_create_result result;
	bool xrc = init->srq_type == IB_SRQT_XRC;
	u32 n, sge;
	int err;

	/* No tag matching. */
	if (!(dev->rdev->caps & RS_CAP_SRQ) ||
	    (init->srq_type != IB_SRQT_BASIC && !(xrc && rs_has_xrc(dev))))
		return -EOPNOTSUPP;
	if (xrc && (!init->ext.xrc.xrcd || !init->ext.cq)) {
		ibdev_dbg(&dev->ibdev, "create_srq: XRC SRQ without %s\n",
			  init->ext.cq ? "an XRC domain" : "a CQ");
		return -EINVAL;
	}
	/* Its receive completions are polled where the SRQ is posted to. */
	if (xrc && to_rscq(init->ext.cq)->user != !!udata) {
		ibdev_dbg(&dev->ibdev, "create_srq: XRC SRQ of %s with a CQ of %s\n",
			  udata ? "user space" : "the kernel",
			  udata ? "the kernel" : "user space");
		return -EINVAL;
	}
	/* A limit at creation is not armed beyond the queue (as mlx5). */
	if (attr->srq_limit >= attr->max_wr)
		attr->srq_limit = 0;
	if (attr->max_wr < 1 || attr->max_wr > da->max_srq_wr ||
	    attr->max_sge > da->max_srq_sge) {
		ibdev_dbg(&dev->ibdev,
			  "create_srq: max_wr %u (1..%u), max_sge %u (max %u)\n",
			  attr->max_wr, da->max_srq_wr, attr->max_sge, da->max_srq_sge);
		return -EINVAL;
	}

	n = roundup_pow_of_two(max(attr->max_wr, 2u));
	sge = max(attr->max_sge, 1u);
	srq->user = !!udata;
	srq->limit = attr->srq_limit;
	srq->wq.log = ilog2(n);
	srq->wq.max_sge = sge;
	srq->wq.stride = roundup_pow_of_two(sizeof(struct rs_recv_wqe_ctrl) +
					    sge * (u32)sizeof(struct rs_sge));
	spin_lock_init(&srq->wq.lock);
	mutex_init(&srq->resize_lock);
	err = rs_buf_alloc(dev, &srq->wq.ring, (size_t)srq->wq.stride << srq->wq.log);
	if (err)
		return err;

	params.ring_addr = srq->wq.ring.dma;
	params.pd = to_rspd(ibsrq->pd)->handle;
	params.uar = uc ? uc->uar : 0;
	params.log_size = srq->wq.log;
	params.max_sge = sge;
	params.srq_limit = attr->srq_limit;
	if (xrc) {
		params.xrcd = to_rsxrcd(init->ext.xrc.xrcd)->handle;
		params.cq = to_rscq(init->ext.cq)->handle;
	}
	err = rs_com_create_srq(dev, &params, &result);
	if (err)
		goto err_free;
	srq->handle = result.handle;
	/* The XRCETH's and the CQEs' SRQ number (ABI: the handle's index). */
	if (xrc)
		ibsrq->ext.xrc.srq_num = srq->handle & RS_HANDLE_INDEX_MASK;

	err = xa_err(xa_store_irq(&dev->srqs, srq->handle & RS_HANDLE_INDEX_MASK,
				  srq, GFP_KERNEL));
	if (err)
		goto err_destroy;
	attr->max_wr = n;
	attr->max_sge = sge;

	if (udata) {
		srq->wq.mentry = rs_mmap_insert(dev, &uc->ibuc, RS_MMAP_MEM,
						(u64)(uintptr_t)srq->wq.ring.va,
						srq->wq.ring.size, 0,
						&resp.ring_mmap_key);
		if (IS_ERR(srq->wq.mentry)) {
			err = PTR_ERR(srq->wq.mentry);
			srq->wq.mentry = NULL;
			goto err_xa;
		}
		resp.ring_bytes = srq->wq.ring.size;
		resp.srq_index = srq->handle & RS_DB_INDEX_MASK;
		resp.log_size = srq->wq.log;
		resp.stride = srq->wq.stride;
		resp.max_sge = sge;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase_irq(&dev->srqs, srq->handle & RS_HANDLE_INDEX_MASK);
err_destroy:
	rs_com_destroy_srq(dev, srq->handle);
err_free:
	rs_wq_free(dev, &srq->wq);
	return err;
}

/*
 * IB_SRQ_MAX_WR, user SRQs only: the device moves the WQEs not yet taken
 * to slots 0, 1, ... of a new ring (RS_SRQ_ATTR_MAX_WR) and the process
 * maps that ring; it learns the ring and the number of WQEs moved through
 * the address it passed in struct rs_uverbs_modify_srq, as uverbs'
 * MODIFY_SRQ has no response.  The provider holds its SRQ lock across the
 * call, so no post races the move.  Kernel SRQs are posted to under
 * wq.lock, under which no admin command can wait, so they keep their
 * size.  Fewer entries than WQEs waiting: the device refuses
 * (RS_STATUS_BAD_SIZE, -EINVAL) and nothing changes.
 */
int rs_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibsrq->device);
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	const struct rs_device_attr *da = &dev->rdev->attr;
	struct rs_uverbs_modify_srq_resp resp = {};
	struct rs_uverbs_modify_srq req = {};
	struct rs_com_modify_srq_result result;
	struct rdma_user_mmap_entry *mentry = NULL;
	struct rs_srq *srq = to_rssrq(ibsrq);
	struct rs_cmd_modify_srq params = {};
	struct rs_buf ring = {}, old;
	void __user *uresp;
	u32 entries, log;
	int err;

	if (mask & ~(IB_SRQ_LIMIT | IB_SRQ_MAX_WR))
		return -EOPNOTSUPP;
	if (!mask)
		return 0;
	if (mask & IB_SRQ_MAX_WR) {
		if (!udata || !srq->user)
			return -EOPNOTSUPP;
		if (attr->max_wr < 1 || attr->max_wr > da->max_srq_wr) {
			ibdev_dbg(&dev->ibdev, "modify_srq: max_wr %u (1..%u)\n",
				  attr->max_wr, da->max_srq_wr);
			return -EINVAL;
		}
		if (udata->inlen < sizeof(req))
			return -EINVAL;
		err = ib_copy_from_udata(&req, udata, sizeof(req));
		if (err)
			return err;
		uresp = u64_to_user_ptr(req.resp_addr);
		/* A bad address fails here, before the device switches rings. */
		if (copy_to_user(uresp, &resp, sizeof(resp)))
			return -EFAULT;
	}

	mutex_lock(&srq->resize_lock);
	entries = mask & IB_SRQ_MAX_WR ?
		  roundup_pow_of_two(max(attr->max_wr, 2u)) : 1u << srq->wq.log;
	if ((mask & IB_SRQ_LIMIT) && attr->srq_limit >= entries) {
		ibdev_dbg(&dev->ibdev, "modify_srq: limit %u, the SRQ has %u entries\n",
			  attr->srq_limit, entries);
		err = -EINVAL;
		goto out;
	}
	params.handle = srq->handle;
	if (mask & IB_SRQ_LIMIT) {
		params.attr_mask |= RS_SRQ_ATTR_LIMIT;
		params.srq_limit = attr->srq_limit;
	}
	if (mask & IB_SRQ_MAX_WR) {
		log = ilog2(entries);
		err = rs_buf_alloc(dev, &ring, (size_t)srq->wq.stride << log);
		if (err)
			goto out;
		mentry = rs_mmap_insert(dev, &uc->ibuc, RS_MMAP_MEM,
					(u64)(uintptr_t)ring.va, ring.size, 0,
					&resp.ring_mmap_key);
		if (IS_ERR(mentry)) {
			err = PTR_ERR(mentry);
			goto err_free;
		}
		params.attr_mask |= RS_SRQ_ATTR_MAX_WR;
		params.ring_addr = ring.dma;
		params.log_size = log;
	}
	err = rs_com_modify_srq(dev, &params, &result);
	if (err) {
		ibdev_dbg(&dev->ibdev, "modify_srq: mask %#x, max_wr %u: %d\n",
			  mask, attr->max_wr, err);
		goto err_mmap;
	}
	if (mask & IB_SRQ_LIMIT)
		WRITE_ONCE(srq->limit, attr->srq_limit);
	if (!(mask & IB_SRQ_MAX_WR))
		goto out;

	old = srq->wq.ring;
	srq->wq.ring = ring;
	WRITE_ONCE(srq->wq.log, log);
	rs_mmap_remove(&srq->wq.mentry);
	srq->wq.mentry = mentry;
	rs_buf_free(dev, &old);

	resp.ring_bytes = ring.size;
	resp.log_size = log;
	resp.wqes_moved = result.wqes_moved;
	/* The device uses the new ring now: there is no going back. */
	if (copy_to_user(uresp, &resp, sizeof(resp)))
		err = -EFAULT;
	goto out;

err_mmap:
	if (mentry)
		rdma_user_mmap_entry_remove(mentry);
err_free:
	rs_buf_free(dev, &ring);
out:
	mutex_unlock(&srq->resize_lock);
	return err;
}

int rs_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct rs_srq *srq = to_rssrq(ibsrq);

	attr->max_wr = 1u << READ_ONCE(srq->wq.log);
	attr->max_sge = srq->wq.max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int rs_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibsrq->device);
	struct rs_srq *srq = to_rssrq(ibsrq);
	int err;

	err = rs_com_destroy_srq(dev, srq->handle);
	if (err)
		return err;
	xa_erase_irq(&dev->srqs, srq->handle & RS_HANDLE_INDEX_MASK);
	rs_wq_free(dev, &srq->wq);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Address handles                                                    */
/* ------------------------------------------------------------------ */

static void rs_ah_pend_put(struct rs_ah_pend *p)
{
	if (refcount_dec_and_test(&p->refs))
		kfree(p);
}

static void rs_ah_create_fn(struct work_struct *w)
{
	struct rs_ah_pend *p = container_of(w, struct rs_ah_pend, create_work);
	struct rs_com_create_result result;

	if (!rs_com_create_ah(p->dev, &p->params, &result))
		WRITE_ONCE(p->handle, result.handle);
	rs_ah_pend_put(p);
}

static void rs_ah_destroy_fn(struct work_struct *w)
{
	struct rs_ah_pend *p = container_of(w, struct rs_ah_pend, destroy_work);

	if (p->handle)
		rs_com_destroy_ah(p->dev, p->handle);
	rs_ah_pend_put(p);
}

struct rs_ah_destroy_work {
	struct work_struct work;
	struct rs_ibdev *dev;
	u32 handle;
};

static void rs_ah_destroy_handle_fn(struct work_struct *w)
{
	struct rs_ah_destroy_work *dw = container_of(w, struct rs_ah_destroy_work, work);

	rs_com_destroy_ah(dw->dev, dw->handle);
	kfree(dw);
}

static void rs_ah_free_av(struct rs_ibdev *dev, struct rs_ah *ah)
{
	if (!ah->av)
		return;
	dma_unmap_single(rs_dma_dev(dev), ah->av_dma, sizeof(*ah->av), DMA_TO_DEVICE);
	kfree(ah->av);
	ah->av = NULL;
}

int rs_ib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibah->device);
	struct rdma_ah_attr *ah_attr = init->ah_attr;
	const struct ib_global_route *grh = rdma_ah_read_grh(ah_attr);
	struct rs_uverbs_create_ah_resp resp = {};
	struct rs_ah *ah = to_rsah(ibah);
	struct rs_cmd_create_ah params = {};
	struct rs_com_create_result result;
	int err;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE) {
		ibdev_dbg(&dev->ibdev, "create_ah: address vector of type %d, not RoCE\n",
			  ah_attr->type);
		return -EINVAL;
	}

	memcpy(params.dgid, grh->dgid.raw, sizeof(params.dgid));
	memcpy(params.dmac, ah_attr->roce.dmac, ETH_ALEN);
	params.hop_limit = grh->hop_limit;
	params.traffic_class = grh->traffic_class;
	params.pd = to_rspd(ibah->pd)->handle;
	params.flow_label = rs_av_flow_label(dev, ah_attr);
	params.gid_index = grh->sgid_index;

	if (!udata) {
		ah->av = kzalloc(sizeof(*ah->av), (init->flags & RDMA_CREATE_AH_SLEEPABLE) ?
				 GFP_KERNEL : GFP_ATOMIC);
		if (!ah->av)
			return -ENOMEM;
		memcpy(ah->av->dgid, params.dgid, sizeof(ah->av->dgid));
		memcpy(ah->av->dmac, params.dmac, sizeof(ah->av->dmac));
		ah->av->hop_limit = params.hop_limit;
		ah->av->traffic_class = params.traffic_class;
		ah->av->flow_label = params.flow_label;
		ah->av->gid_index = params.gid_index;
		ah->av_dma = dma_map_single(rs_dma_dev(dev), ah->av, sizeof(*ah->av),
					    DMA_TO_DEVICE);
		if (dma_mapping_error(rs_dma_dev(dev), ah->av_dma)) {
			kfree(ah->av);
			ah->av = NULL;
			return -ENOMEM;
		}
	}

	/*
	 * Admin commands sleep.  Kernel callers in atomic context (ib_cm
	 * allocates its MADs' AHs under a spinlock) get an AH whose device
	 * handle is created from the workqueue.
	 */
	if (!(init->flags & RDMA_CREATE_AH_SLEEPABLE)) {
		struct rs_ah_pend *p = kzalloc(sizeof(*p), GFP_ATOMIC);

		if (!p) {
			rs_ah_free_av(dev, ah);
			return -ENOMEM;
		}
		INIT_WORK(&p->create_work, rs_ah_create_fn);
		INIT_WORK(&p->destroy_work, rs_ah_destroy_fn);
		p->dev = dev;
		p->params = params;
		refcount_set(&p->refs, 2);	/* the AH and the create work */
		ah->pend = p;
		queue_work(dev->wq, &p->create_work);
		return 0;
	}
	err = rs_com_create_ah(dev, &params, &result);
	if (err) {
		rs_ah_free_av(dev, ah);
		return err;
	}
	ah->handle = result.handle;

	if (udata) {
		resp.ah_handle = ah->handle;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err) {
			rs_com_destroy_ah(dev, ah->handle);
			return err;
		}
	}
	return 0;
}

int rs_ib_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct rs_ibdev *dev = to_rsdev(ibah->device);
	struct rs_ah *ah = to_rsah(ibah);
	struct rs_ah_destroy_work *dw;

	rs_ah_free_av(dev, ah);
	if (ah->pend) {
		/* Ordered workqueue: runs after the CREATE_AH work. */
		queue_work(dev->wq, &ah->pend->destroy_work);
		ah->pend = NULL;
		return 0;
	}
	if (flags & RDMA_DESTROY_AH_SLEEPABLE)
		return rs_com_destroy_ah(dev, ah->handle);
	/* Atomic context: DESTROY_AH (by handle) from the workqueue. */
	dw = kzalloc(sizeof(*dw), GFP_ATOMIC);
	if (!dw)
		return -ENOMEM;
	INIT_WORK(&dw->work, rs_ah_destroy_handle_fn);
	dw->dev = dev;
	dw->handle = ah->handle;
	queue_work(dev->wq, &dw->work);
	return 0;
}
