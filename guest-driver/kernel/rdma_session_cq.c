// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: completion queues (create, resize, destroy) and
 * the completion vector IRQs.  Polling is in rdma_session_datapath.c.
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
/* CQs                                                                */
/* ------------------------------------------------------------------ */

int rs_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct rs_ibdev *dev = to_rsdev(ibcq->device);
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	struct rs_cq *cq = to_rscq(ibcq);
	struct rs_uverbs_create_cq_resp resp = {};
	struct rs_cmd_create_cq params = {};
	struct rs_com_create_result result;
	u32 entries;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > dev->ibdev.attrs.max_cqe) {
		ibdev_dbg(&dev->ibdev, "create_cq: %u entries, the device supports 1..%d\n",
			  attr->cqe, dev->ibdev.attrs.max_cqe);
		return -EINVAL;
	}
	if (attr->comp_vector >= dev->ibdev.num_comp_vectors) {
		ibdev_dbg(&dev->ibdev, "create_cq: completion vector %u, the device has %d\n",
			  attr->comp_vector, dev->ibdev.num_comp_vectors);
		return -EINVAL;
	}

	entries = roundup_pow_of_two(attr->cqe + 1);
	cq->log = ilog2(entries);
	cq->user = !!udata;
	cq->vector = attr->comp_vector;
	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_lock);
	err = rs_buf_alloc(dev, &cq->ring, sizeof(struct rs_cqe) << cq->log);
	if (err)
		return err;

	params.ring_addr = cq->ring.dma;
	params.log_size = cq->log;
	params.comp_vector = dev->vec_base + attr->comp_vector;
	params.uar = uc ? uc->uar : 0;
	err = rs_com_create_cq(dev, &params, &result);
	if (err)
		goto err_free;
	cq->handle = result.handle;
	ibcq->cqe = entries - 1;

	err = xa_err(xa_store_irq(&dev->cqs, cq->handle & RS_HANDLE_INDEX_MASK,
				  cq, GFP_KERNEL));
	if (err)
		goto err_destroy;

	if (udata) {
		cq->mentry = rs_mmap_insert(dev, &uc->ibuc, RS_MMAP_MEM,
					    (u64)(uintptr_t)cq->ring.va,
					    cq->ring.size, 0, &resp.ring_mmap_key);
		if (IS_ERR(cq->mentry)) {
			err = PTR_ERR(cq->mentry);
			cq->mentry = NULL;
			goto err_xa;
		}
		resp.ring_bytes = cq->ring.size;
		resp.cq_index = cq->handle & RS_DB_INDEX_MASK;
		resp.log_size = cq->log;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_mmap;
	}
	return 0;

err_mmap:
	rs_mmap_remove(&cq->mentry);
err_xa:
	xa_erase_irq(&dev->cqs, cq->handle & RS_HANDLE_INDEX_MASK);
err_destroy:
	rs_com_destroy_cq(dev, cq->handle);
err_free:
	rs_buf_free(dev, &cq->ring);
	return err;
}

int rs_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibcq->device);
	struct rs_cq *cq = to_rscq(ibcq);
	int err;

	err = rs_com_destroy_cq(dev, cq->handle);
	if (err)
		return err;
	xa_erase_irq(&dev->cqs, cq->handle & RS_HANDLE_INDEX_MASK);
	rs_mmap_remove(&cq->mentry);
	rs_buf_free(dev, &cq->ring);
	return 0;
}

/* Valid entries from the consumer index on, as the owner bits show. */
static u32 rs_cq_unpolled(struct rs_cq *cq, u32 ci)
{
	u32 size = 1u << cq->log, n;
	struct rs_cqe *ring = cq->ring.va;

	for (n = 0; n < size; n++) {
		u32 i = ci + n;
		u8 phase = ((i >> cq->log) & 1) ? 0 : RS_CQE_OWNER;

		if ((READ_ONCE(ring[i & (size - 1)].owner) & RS_CQE_OWNER) != phase)
			break;
	}
	return n;
}

/*
 * User CQs only: the process gives the consumer index it reached, the
 * device moves the unpolled entries to the start of the new ring
 * (RS_CMD_RESIZE_CQ), and the process maps that ring.  Kernel CQs are
 * polled under cq->lock, under which no admin command can wait, so they
 * keep their size.
 */
int rs_ib_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibcq->device);
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	struct rs_uverbs_resize_cq_resp resp = {};
	struct rs_uverbs_resize_cq req = {};
	struct rdma_user_mmap_entry *mentry;
	struct rs_cq *cq = to_rscq(ibcq);
	struct rs_cmd_resize_cq params = {};
	struct rs_buf ring = {}, old;
	u32 entries, log, n;
	int err;

	if (!udata || !cq->user)
		return -EOPNOTSUPP;
	if (cqe < 1 || cqe > dev->ibdev.attrs.max_cqe) {
		ibdev_dbg(&dev->ibdev, "resize_cq: %d entries, the device supports 1..%d\n",
			  cqe, dev->ibdev.attrs.max_cqe);
		return -EINVAL;
	}
	if (udata->inlen < sizeof(req))
		return -EINVAL;
	err = ib_copy_from_udata(&req, udata, sizeof(req));
	if (err)
		return err;
	if (req.rsvd)
		return -EINVAL;

	/* uverbs lets resizes of one CQ run concurrently. */
	mutex_lock(&cq->resize_lock);
	/* IBTA 11.2.6: not below the completions the CQ holds. */
	n = rs_cq_unpolled(cq, req.consumer_index);
	if (n > cqe) {
		ibdev_dbg(&dev->ibdev, "resize_cq: %d entries, %u not polled yet\n",
			  cqe, n);
		err = -EINVAL;
		goto out;
	}

	entries = roundup_pow_of_two(cqe + 1);
	log = ilog2(entries);
	err = rs_buf_alloc(dev, &ring, sizeof(struct rs_cqe) << log);
	if (err)
		goto out;
	mentry = rs_mmap_insert(dev, &uc->ibuc, RS_MMAP_MEM,
				(u64)(uintptr_t)ring.va, ring.size, 0,
				&resp.ring_mmap_key);
	if (IS_ERR(mentry)) {
		err = PTR_ERR(mentry);
		goto err_free;
	}

	params.ring_addr = ring.dma;
	params.handle = cq->handle;
	params.log_size = log;
	params.consumer_index = req.consumer_index;
	err = rs_com_resize_cq(dev, &params);
	if (err)
		goto err_mmap;

	old = cq->ring;
	cq->ring = ring;
	cq->log = log;
	rs_mmap_remove(&cq->mentry);
	cq->mentry = mentry;
	rs_buf_free(dev, &old);
	ibcq->cqe = entries - 1;

	resp.ring_bytes = ring.size;
	resp.log_size = log;
	/* The device uses the new ring now: there is no going back. */
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	goto out;

err_mmap:
	rdma_user_mmap_entry_remove(mentry);
err_free:
	rs_buf_free(dev, &ring);
out:
	mutex_unlock(&cq->resize_lock);
	return err;
}

void rs_comp_irqs_free(struct rs_ibdev *dev)
{
	u32 i;

	if (!dev->vecs)
		return;
	for (i = 0; i < dev->nvecs; i++)
		if (dev->vecs[i].requested)
			free_irq(pci_irq_vector(dev->rdev->pdev, RS_MSIX_COMP_VECTOR0 +
						dev->vec_base + i), &dev->vecs[i]);
	kfree(dev->vecs);
	dev->vecs = NULL;
}

int rs_comp_irqs_request(struct rs_ibdev *dev)
{
	struct pci_dev *pdev = dev->rdev->pdev;
	u32 i;
	int err;

	dev->vecs = kcalloc(dev->nvecs, sizeof(*dev->vecs), GFP_KERNEL);
	if (!dev->vecs)
		return -ENOMEM;
	for (i = 0; i < dev->nvecs; i++) {
		struct rs_comp_vec *cv = &dev->vecs[i];

		cv->dev = dev;
		cv->vector = i;
		snprintf(cv->name, sizeof(cv->name), "%s-comp%u", RS_DRV_NAME, i);
		err = request_irq(pci_irq_vector(pdev, RS_MSIX_COMP_VECTOR0 +
						 dev->vec_base + i),
				  rs_ib_comp_irq, IRQF_SHARED, cv->name, cv);
		if (err) {
			rs_comp_irqs_free(dev);
			return err;
		}
		cv->requested = true;
	}
	return 0;
}
