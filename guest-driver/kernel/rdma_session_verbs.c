// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: the ib_device (RoCEv2, one port on the LAN
 * net_device): its ib_device_ops table, registration, async events, user
 * contexts and mmap entries.  The control verbs, backed by admin commands
 * (docs/specs/rdma-session.rst, "Admin commands"), are split by object:
 * rdma_session_device.c (device, port, GIDs, counters), rdma_session_pd.c
 * (PDs, XRC domains, SRQs, AHs), rdma_session_cq.c, rdma_session_qp.c
 * (QPs and their sessions), rdma_session_mr.c (MRs, mkey lists, MWs).
 * The data path of kernel QPs, SRQs and CQs is in rdma_session_datapath.c,
 * the objects in rdma_session_ib.h.
 *
 * - The port is bound to rdev->netdev with ib_device_set_netdev(): the RDMA
 *   core builds the GID table from the interface's addresses and calls
 *   add_gid/del_gid, which mirror the RoCEv2 entries into the device's
 *   network identities (ADD_GID/DEL_GID, same index).
 * - Queues (CQ rings, SQ/RQ rings) live in kernel memory (page allocations,
 *   DMA-mapped) and are mapped into user space with rdma_user_mmap_entry
 *   and vm_insert_page, as efa does: the pages are reference counted, so a
 *   ring freed at destroy time stays valid memory for a process that still
 *   maps it.  Each user context gets its own doorbell page (BAR 2 page
 *   1 .. db_pages - 1); page 0 is the kernel's.
 * - Sessions: when an RC/UC QP gets a primary path (AV) the driver derives
 *   the RoCEv2 UDP 5-tuple (source port from the flow label, as
 *   rdma_get_udp_sport() does; destination port 4791), creates the session
 *   and a one-session group in the device and binds the group to the QP in
 *   the same MODIFY_QP.  QPs with the same 5-tuple share the session and
 *   group (refcounted).  User space never supplies a 5-tuple.
 * - Memory keys live in a network identity: every MR is registered in the
 *   "default identity", the lowest RoCEv2 GID index present in the device.
 * - Kernel QPs/CQs (the MAD stack's QP1 and in-kernel consumers) use
 *   doorbell page 0, and kernel PDs are created RS_PD_F_PRIVILEGED.
 * - Kernel consumers address memory by DMA address with local_dma_lkey,
 *   the device's reserved RS_LOCAL_DMA_LKEY: valid for local access on a
 *   privileged QP only and never an rkey.  get_dma_mr hands out the same
 *   key for local access and refuses remote rights (no all-memory rkey).
 * - Fast registration (IB_MR_TYPE_MEM_REG): alloc_mr reserves an MR with
 *   up to RS_MAX_FRMR_PAGES page slots in the device; map_mr_sg fills a
 *   DMA-coherent page list; the REG_MR work request makes the device copy
 *   it and bind key, IOVA, length and access; LOCAL_INV and SEND with
 *   invalidate unbind it.
 * - Kernel AHs keep a DMA-mapped copy of their address vector that kernel
 *   UD WQEs point to (RS_WQE_F_AV_ADDR): an AH created in atomic context
 *   is usable before its deferred CREATE_AH has run.
 * - XRC (RS_CAP_XRC only): XRC domains, XRC SRQs (domain and receive CQ;
 *   srq_num is the handle's index, the number the initiators' XRCETH and
 *   the CQEs carry), XRC initiator QPs (user space only: a send ring) and
 *   XRC target QPs (no rings, PD or CQs; ib_core creates them with udata
 *   NULL, for user space too).  Both XRC QP types get a session like RC.
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
#include "hw/rdma-session/rdma-session-uverbs.h"


struct rs_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	struct rs_ibdev *dev;
	u64 address;			/* physical (DB) or kernel VA (MEM) */
	u32 uar;			/* RS_MMAP_DB: page to release */
	u8 type;
};

/* A device session and its one-session group, shared by 5-tuple. */
static inline struct rs_mmap_entry *to_rsmmap(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct rs_mmap_entry, rdma);
}

/*
 * Optional driver input of a verb: at most sizeof(*out) bytes are read,
 * more must be zero (a newer provider's fields this driver does not know).
 */
int rs_udata_in(struct ib_udata *udata, void *out, size_t size)
{
	memset(out, 0, size);
	if (!udata || !udata->inlen)
		return 0;
	if (udata->inlen > size &&
	    !ib_is_udata_cleared(udata, size, udata->inlen - size))
		return -EINVAL;
	return ib_copy_from_udata(out, udata, min(udata->inlen, size));
}

/* ------------------------------------------------------------------ */
/* Queue memory and mmap entries                                      */
/* ------------------------------------------------------------------ */

int rs_buf_alloc(struct rs_ibdev *dev, struct rs_buf *b, size_t size)
{
	b->size = PAGE_ALIGN(size);
	b->va = alloc_pages_exact(b->size, GFP_KERNEL | __GFP_ZERO);
	if (!b->va)
		return -ENOMEM;
	b->dma = dma_map_single(rs_dma_dev(dev), b->va, b->size, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(rs_dma_dev(dev), b->dma)) {
		free_pages_exact(b->va, b->size);
		b->va = NULL;
		return -ENOMEM;
	}
	b->mapped = true;
	return 0;
}

void rs_buf_free(struct rs_ibdev *dev, struct rs_buf *b)
{
	if (!b->va)
		return;
	if (b->mapped)
		dma_unmap_single(rs_dma_dev(dev), b->dma, b->size, DMA_BIDIRECTIONAL);
	/* Pages still mapped by a process keep their own reference. */
	free_pages_exact(b->va, b->size);
	b->va = NULL;
}

struct rdma_user_mmap_entry *
rs_mmap_insert(struct rs_ibdev *dev, struct ib_ucontext *uc, u8 type,
	       u64 address, size_t length, u32 uar, u64 *key)
{
	struct rs_mmap_entry *e;
	int err;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->dev = dev;
	e->type = type;
	e->address = address;
	e->uar = uar;
	err = rdma_user_mmap_entry_insert(uc, &e->rdma, length);
	if (err) {
		kfree(e);
		return ERR_PTR(err);
	}
	*key = rdma_user_mmap_get_offset(&e->rdma);
	return &e->rdma;
}

void rs_mmap_remove(struct rdma_user_mmap_entry **e)
{
	if (*e) {
		rdma_user_mmap_entry_remove(*e);
		*e = NULL;
	}
}

static int rs_ib_mmap(struct ib_ucontext *uc, struct vm_area_struct *vma)
{
	struct rs_ibdev *dev = to_rsdev(uc->device);
	struct rdma_user_mmap_entry *re;
	struct rs_mmap_entry *e;
	unsigned long va, pfn;
	int err = 0;

	if (vma->vm_flags & VM_EXEC) {
		ibdev_dbg(&dev->ibdev, "mmap: executable mapping refused\n");
		return -EPERM;
	}
	if (!(vma->vm_flags & VM_SHARED)) {
		ibdev_dbg(&dev->ibdev, "mmap: not a shared mapping\n");
		return -EINVAL;
	}

	re = rdma_user_mmap_entry_get(uc, vma);
	if (!re) {
		ibdev_dbg(&dev->ibdev, "mmap: no queue or doorbell at offset %#lx, length %#lx\n",
			  vma->vm_pgoff << PAGE_SHIFT, vma->vm_end - vma->vm_start);
		return -EINVAL;
	}
	e = to_rsmmap(re);

	switch (e->type) {
	case RS_MMAP_DB:
		err = rdma_user_mmap_io(uc, vma, PHYS_PFN(e->address), PAGE_SIZE,
					pgprot_noncached(vma->vm_page_prot), re);
		break;
	case RS_MMAP_MEM:
		vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
		pfn = PHYS_PFN(virt_to_phys((void *)(uintptr_t)e->address));
		for (va = vma->vm_start; va < vma->vm_end; va += PAGE_SIZE, pfn++) {
			err = vm_insert_page(vma, va, pfn_to_page(pfn));
			if (err)
				break;
		}
		break;
	default:
		/* rs_mmap_insert() makes no other type: a driver bug. */
		ibdev_warn_ratelimited(&dev->ibdev, "mmap: unknown entry type %u\n",
				       e->type);
		err = -EINVAL;
	}
	if (err)
		ibdev_dbg(&dev->ibdev, "mmap type %u failed: %d\n", e->type, err);
	rdma_user_mmap_entry_put(re);
	return err;
}

static void rs_ib_mmap_free(struct rdma_user_mmap_entry *re)
{
	struct rs_mmap_entry *e = to_rsmmap(re);
	struct rs_ibdev *dev = e->dev;

	/* The doorbell page is reused only once no process maps it. */
	if (e->type == RS_MMAP_DB) {
		spin_lock(&dev->uar_lock);
		clear_bit(e->uar, dev->uar_map);
		spin_unlock(&dev->uar_lock);
	}
	kfree(e);
}

/* ------------------------------------------------------------------ */
/* User contexts                                                      */
/* ------------------------------------------------------------------ */

static int rs_ib_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibuc->device);
	struct rs_ucontext *uc = to_rsuc(ibuc);
	struct rs_uverbs_alloc_ucontext_resp resp = {};
	unsigned long uar;
	int err;

	spin_lock(&dev->uar_lock);
	uar = find_next_zero_bit(dev->uar_map, dev->db_pages, 1);
	if (uar < dev->db_pages)
		set_bit(uar, dev->uar_map);
	spin_unlock(&dev->uar_lock);
	if (uar >= dev->db_pages)
		return -ENOMEM;
	uc->uar = uar;

	/* From here on the page is released by rs_ib_mmap_free(). */
	uc->db_entry = rs_mmap_insert(dev, ibuc, RS_MMAP_DB,
				      dev->rdev->db_phys + (u64)uar * RS_DB_PAGE_SIZE,
				      PAGE_SIZE, uar, &resp.db_mmap_key);
	if (IS_ERR(uc->db_entry)) {
		err = PTR_ERR(uc->db_entry);
		uc->db_entry = NULL;
		spin_lock(&dev->uar_lock);
		clear_bit(uar, dev->uar_map);
		spin_unlock(&dev->uar_lock);
		return err;
	}

	resp.uar = uar;
	resp.db_page_size = RS_DB_PAGE_SIZE;
	resp.max_send_sge = dev->rdev->attr.max_sge;
	resp.max_recv_sge = dev->rdev->attr.max_sge;
	resp.max_inline = dev->rdev->attr.max_inline;
	/* ABI 1.5: what rsdv_query_device() reports. */
	resp.caps = dev->rdev->caps;
	if (dev->rdev->caps & RS_CAP_DB_RECORD)
		resp.flags |= RS_UVERBS_UCTX_F_DB_RECORD;
	if (rs_has_dc(dev)) {
		resp.max_dc_contexts = dev->rdev->attr.max_dc_contexts;
		resp.dc_idle_us = dev->rdev->attr.dc_idle_us;
	}
	if (dev->rdev->caps & (RS_CAP_INDIRECT_MKEY | RS_CAP_PATTERN_MKEY)) {
		resp.max_mkey_entries = dev->rdev->attr.max_mkey_entries;
		resp.max_mkey_nest = dev->rdev->attr.max_mkey_nest;
	}
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err) {
		rs_mmap_remove(&uc->db_entry);
		return err;
	}
	return 0;
}

static void rs_ib_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	rs_mmap_remove(&to_rsuc(ibuc)->db_entry);
}

static void rs_ib_disassociate_ucontext(struct ib_ucontext *ibuc)
{
	/*
	 * The core zaps the doorbell mappings (rdma_user_mmap_io); ring pages
	 * are ordinary reference-counted pages and may stay mapped.
	 */
}

/* ------------------------------------------------------------------ */
/* Registration                                                       */
/* ------------------------------------------------------------------ */

static const struct ib_device_ops rs_ib_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = RS_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = rs_ib_alloc_hw_port_stats,
	.alloc_mr = rs_ib_alloc_mr,
	.alloc_mw = rs_ib_alloc_mw,
	.alloc_pd = rs_ib_alloc_pd,
	.alloc_ucontext = rs_ib_alloc_ucontext,
	.add_gid = rs_ib_add_gid,
	.attach_mcast = rs_ib_attach_mcast,
	.create_ah = rs_ib_create_ah,
	.create_user_ah = rs_ib_create_ah,
	.create_cq = rs_ib_create_cq,
	.create_qp = rs_ib_create_qp,
	.create_srq = rs_ib_create_srq,
	.modify_srq = rs_ib_modify_srq,
	.query_srq = rs_ib_query_srq,
	.dealloc_mw = rs_ib_dealloc_mw,
	.dealloc_pd = rs_ib_dealloc_pd,
	.dealloc_ucontext = rs_ib_dealloc_ucontext,
	.del_gid = rs_ib_del_gid,
	.dereg_mr = rs_ib_dereg_mr,
	.destroy_ah = rs_ib_destroy_ah,
	.destroy_cq = rs_ib_destroy_cq,
	.destroy_qp = rs_ib_destroy_qp,
	.destroy_srq = rs_ib_destroy_srq,
	.detach_mcast = rs_ib_detach_mcast,
	.disassociate_ucontext = rs_ib_disassociate_ucontext,
	.get_dev_fw_str = rs_ib_get_dev_fw_str,
	.get_dma_mr = rs_ib_get_dma_mr,
	.get_hw_stats = rs_ib_get_hw_stats,
	.get_link_layer = rs_ib_get_link_layer,
	.get_port_immutable = rs_ib_get_port_immutable,
	.map_mr_sg = rs_ib_map_mr_sg,
	.mmap = rs_ib_mmap,
	.mmap_free = rs_ib_mmap_free,
	.modify_qp = rs_ib_modify_qp,
	.poll_cq = rs_ib_poll_cq,
	.post_recv = rs_ib_post_recv,
	.post_srq_recv = rs_ib_post_srq_recv,
	.post_send = rs_ib_post_send,
	.query_device = rs_ib_query_device,
	.query_pkey = rs_ib_query_pkey,
	.query_port = rs_ib_query_port,
	.query_qp = rs_ib_query_qp,
	.reg_user_mr = rs_ib_reg_user_mr,
	.reg_user_mr_dmabuf = rs_ib_reg_user_mr_dmabuf,
	.rereg_user_mr = rs_ib_rereg_user_mr,
	.req_notify_cq = rs_ib_req_notify_cq,
	.resize_cq = rs_ib_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, rs_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, rs_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, rs_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, rs_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, rs_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, rs_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, rs_ucontext, ibuc),
};

/* Added to rs_ib_ops when the device reports RS_CAP_XRC. */
static const struct ib_device_ops rs_ib_xrc_ops = {
	.alloc_xrcd = rs_ib_alloc_xrcd,
	.dealloc_xrcd = rs_ib_dealloc_xrcd,

	INIT_RDMA_OBJ_SIZE(ib_xrcd, rs_xrcd, ibxrcd),
};

/* Added when the device reports RS_CAP_ODP (rdma_session_odp.c). */
static const struct ib_device_ops rs_ib_odp_ops = {
	.advise_mr = rs_ib_advise_mr,
};

int rs_ib_register(struct rs_dev *rdev)
{
	struct device *pdev = &rdev->pdev->dev;
	const struct rs_device_attr *da = &rdev->attr;
	unsigned long flags;
	struct rs_ibdev *dev;
	unsigned int i;
	int err;

	if (!rdev->db || !rdev->netdev) {
		dev_err(pdev, "no doorbell page or net_device: no RDMA device\n");
		return -ENODEV;
	}

	dev = ib_alloc_device(rs_ibdev, ibdev);
	if (!dev)
		return -ENOMEM;
	dev->rdev = rdev;
	dev->kdb = rdev->db;
	dev->db_pages = min_t(u64, da->num_db_pages, rdev->db_len / RS_DB_PAGE_SIZE);
	dev->max_gids = da->max_gids ? da->max_gids : rdev->port_attr.gid_tbl_len;
	spin_lock_init(&dev->uar_lock);
	xa_init_flags(&dev->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->cqs, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srqs, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->odp_mrs, XA_FLAGS_LOCK_IRQ);
	for (i = 0; i < ARRAY_SIZE(dev->odp_keys); i++)
		xa_init(&dev->odp_keys[i]);
	mutex_init(&dev->gid_lock);
	mutex_init(&dev->sess_lock);
	INIT_LIST_HEAD(&dev->sessions);
	ratelimit_state_init(&dev->path_mig_rs, HZ, 10);
	INIT_WORK(&dev->netid_work, rs_netid_refresh);

	err = -ENOMEM;
	dev->uar_map = bitmap_zalloc(max(dev->db_pages, 1u), GFP_KERNEL);
	dev->gid_map = bitmap_zalloc(max(dev->max_gids, 1u), GFP_KERNEL);
	dev->gid_netid = kcalloc(max(dev->max_gids, 1u), 1, GFP_KERNEL);
	dev->wq = alloc_ordered_workqueue("rs_ib", 0);
	if (!dev->uar_map || !dev->gid_map || !dev->gid_netid || !dev->wq)
		goto err_free;
	set_bit(0, dev->uar_map);	/* page 0: the kernel's */
	err = rs_odp_init(dev);
	if (err)
		goto err_free;

	addrconf_addr_eui48((u8 *)&dev->ibdev.node_guid, rdev->netdev->dev_addr);
	dev->ibdev.node_type = RDMA_NODE_IB_CA;
	dev->ibdev.phys_port_cnt = 1;
	/* Device completion vector n is MSI-X vector 1 + n, if allocated. */
	dev->nvecs = min_t(u32, da->num_comp_vectors,
			   rdev->nvecs > 1 ? rdev->nvecs - 1 : 0);
	if (dev->nvecs > 1 && RS_LAN_VECTOR == RS_MSIX_COMP_VECTOR0) {
		dev->vec_base = 1;
		dev->nvecs--;
	}
	dev->ibdev.num_comp_vectors = max(1u, dev->nvecs);
	dev->ibdev.local_dma_lkey = RS_LOCAL_DMA_LKEY;
	dev->ibdev.dev.parent = pdev;
	strscpy(dev->ibdev.node_desc, "rdma-session RoCEv2 adapter",
		sizeof(dev->ibdev.node_desc));
	ib_set_device_ops(&dev->ibdev, &rs_ib_ops);
	ib_set_device_ops(&dev->ibdev, &rs_ib_restrack_ops);
	if (rs_has_xrc(dev)) {
		ib_set_device_ops(&dev->ibdev, &rs_ib_xrc_ops);
		dev_info(pdev, "XRC: up to %u XRC domains\n", da->max_xrcds);
	}
	if (rs_odp_supported(dev)) {
		ib_set_device_ops(&dev->ibdev, &rs_ib_odp_ops);
		dev_info(pdev, "on-demand paging: %u translation entries (%u MiB)\n",
			 da->max_odp_pages, da->max_odp_pages >> (20 - RS_MR_MIN_PAGE_SHIFT));
	}

	err = rs_comp_irqs_request(dev);
	if (err) {
		dev_err(pdev, "cannot request the completion IRQs: %d\n", err);
		goto err_free;
	}

	err = ib_device_set_netdev(&dev->ibdev, rdev->netdev, RS_PORT_NUM);
	if (err) {
		dev_err(pdev, "ib_device_set_netdev failed: %d\n", err);
		goto err_free;
	}

	err = ib_register_device(&dev->ibdev, "rsess%d", pdev);
	if (err) {
		dev_err(pdev, "ib_register_device failed: %d\n", err);
		goto err_free;
	}
	spin_lock_irqsave(&rdev->admin.aeq_lock, flags);
	rdev->ib = dev;
	spin_unlock_irqrestore(&rdev->admin.aeq_lock, flags);
	rs_ib_debugfs_add(dev);
	dev_info(pdev, "RDMA device %s on %s\n", dev_name(&dev->ibdev.dev),
		 netdev_name(rdev->netdev));
	return 0;

err_free:
	rs_comp_irqs_free(dev);
	rs_odp_cleanup(dev);
	if (dev->wq)
		destroy_workqueue(dev->wq);
	bitmap_free(dev->gid_map);
	kfree(dev->gid_netid);
	bitmap_free(dev->uar_map);
	ib_dealloc_device(&dev->ibdev);
	return err;
}

void rs_ib_unregister(struct rs_dev *rdev)
{
	struct rs_ibdev *dev = rdev->ib;
	unsigned long flags;

	if (!dev)
		return;
	spin_lock_irqsave(&rdev->admin.aeq_lock, flags);
	rdev->ib = NULL;
	spin_unlock_irqrestore(&rdev->admin.aeq_lock, flags);
	rs_ib_debugfs_remove(dev);
	cancel_work_sync(&dev->netid_work);
	/* Destroys every object, user contexts included (disassociate). */
	ib_unregister_device(&dev->ibdev);
	rs_comp_irqs_free(dev);
	rs_odp_cleanup(dev);
	destroy_workqueue(dev->wq);
	if (!xa_empty(&dev->qps) || !xa_empty(&dev->cqs) ||
	    !list_empty(&dev->sessions))
		dev_warn(&rdev->pdev->dev, "RDMA objects left at unregister\n");
	xa_destroy(&dev->qps);
	xa_destroy(&dev->cqs);
	xa_destroy(&dev->srqs);
	bitmap_free(dev->gid_map);
	kfree(dev->gid_netid);
	bitmap_free(dev->uar_map);
	ib_dealloc_device(&dev->ibdev);
}

static const enum ib_event_type rs_qp_ev[] = {
	[RS_EV_QP_FATAL] = IB_EVENT_QP_FATAL,
	[RS_EV_QP_REQ_ERR] = IB_EVENT_QP_REQ_ERR,
	[RS_EV_QP_ACCESS_ERR] = IB_EVENT_QP_ACCESS_ERR,
	[RS_EV_QP_COMM_EST] = IB_EVENT_COMM_EST,
	[RS_EV_QP_SQ_DRAINED] = IB_EVENT_SQ_DRAINED,
	[RS_EV_QP_LAST_WQE_REACHED] = IB_EVENT_QP_LAST_WQE_REACHED,
};

/*
 * An async event from the AEQ, in hard IRQ context with admin.aeq_lock
 * held (which also orders it against rs_ib_unregister()).
 */
void rs_ib_event(struct rs_dev *rdev, const struct rs_event *ev)
{
	struct rs_ibdev *dev = rdev->ib;
	struct ib_event ie = {};
	unsigned long flags;
	struct rs_srq *srq;
	struct rs_qp *qp;
	struct rs_cq *cq;
	u32 idx;

	if (!dev)
		return;
	ie.device = &dev->ibdev;
	idx = ev->handle & RS_HANDLE_INDEX_MASK;

	switch (ev->type) {
	case RS_EV_QP_FATAL:
	case RS_EV_QP_REQ_ERR:
	case RS_EV_QP_ACCESS_ERR:
	case RS_EV_QP_COMM_EST:
	case RS_EV_QP_SQ_DRAINED:
	case RS_EV_QP_LAST_WQE_REACHED:
		xa_lock_irqsave(&dev->qps, flags);
		qp = xa_load(&dev->qps, idx);
		if (qp && qp->handle == ev->handle && qp->ibqp.event_handler) {
			ie.event = rs_qp_ev[ev->type];
			ie.element.qp = &qp->ibqp;
			if (ev->type == RS_EV_QP_FATAL)
				qp->state = IB_QPS_ERR;
			qp->ibqp.event_handler(&ie, qp->ibqp.qp_context);
		}
		xa_unlock_irqrestore(&dev->qps, flags);
		break;
	case RS_EV_DCT_KEY_VIOLATION:
		/* As mlx5 maps MLX5_EVENT_TYPE_DCT_KEY_VIOLATION. */
		xa_lock_irqsave(&dev->qps, flags);
		qp = xa_load(&dev->qps, idx);
		if (qp && qp->handle == ev->handle &&
		    qp->rs_type == RS_QPT_DCT) {
			pr_info_ratelimited("%s: DCT %u: connect with a wrong DC key from DCI %llu\n",
					    dev_name(&dev->ibdev.dev), qp->qpn,
					    ev->data & 0xffffff);
			if (qp->ibqp.event_handler) {
				ie.event = IB_EVENT_QP_ACCESS_ERR;
				ie.element.qp = &qp->ibqp;
				qp->ibqp.event_handler(&ie,
						       qp->ibqp.qp_context);
			}
		}
		xa_unlock_irqrestore(&dev->qps, flags);
		break;
	case RS_EV_SRQ_LIMIT_REACHED:
		xa_lock_irqsave(&dev->srqs, flags);
		srq = xa_load(&dev->srqs, idx);
		if (srq && srq->handle == ev->handle) {
			WRITE_ONCE(srq->limit, 0);
			if (srq->ibsrq.event_handler) {
				ie.event = IB_EVENT_SRQ_LIMIT_REACHED;
				ie.element.srq = &srq->ibsrq;
				srq->ibsrq.event_handler(&ie,
							 srq->ibsrq.srq_context);
			}
		}
		xa_unlock_irqrestore(&dev->srqs, flags);
		break;
	case RS_EV_CQ_ERR:
		xa_lock_irqsave(&dev->cqs, flags);
		cq = xa_load(&dev->cqs, idx);
		if (cq && cq->handle == ev->handle && cq->ibcq.event_handler) {
			ie.event = IB_EVENT_CQ_ERR;
			ie.element.cq = &cq->ibcq;
			cq->ibcq.event_handler(&ie, cq->ibcq.cq_context);
		}
		xa_unlock_irqrestore(&dev->cqs, flags);
		break;
	case RS_EV_PORT_ACTIVE:
	case RS_EV_PORT_ERR:
		ie.event = ev->type == RS_EV_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
							   IB_EVENT_PORT_ERR;
		ie.element.port_num = RS_PORT_NUM;
		ib_dispatch_event(&ie);	/* deferred to a work item */
		break;
	case RS_EV_DEVICE_FATAL:
		ie.event = IB_EVENT_DEVICE_FATAL;
		ie.element.port_num = RS_PORT_NUM;
		ib_dispatch_event(&ie);
		break;
	case RS_EV_ODP_PAGE_FAULT:
		rs_odp_fault_event(dev, ev);
		break;
	case RS_EV_NETID_CHANGED:
		/*
		 * The host changed an identity: its keys stay; a GID whose
		 * subnet moved is in its new identity from now on, which
		 * rs_netid_refresh() learns.
		 */
		pr_info_ratelimited("%s: network identity %u changed by the host: VNI %llu\n",
				    dev_name(&dev->ibdev.dev), ev->handle,
				    ev->data);
		queue_work(dev->wq, &dev->netid_work);
		break;
	case RS_EV_PATH_MIGRATED:
		/* IBTA's path migration: the device moved the QP's traffic. */
		atomic64_inc(&dev->cnt[RS_CNT_PATH_MIGRATIONS]);
		if (!__ratelimit(&dev->path_mig_rs))
			break;
		ibdev_info(&dev->ibdev, "QP %u: path migrated, session %#llx -> %#llx\n",
			   idx, ev->data >> 32, ev->data & 0xffffffff);
		xa_lock_irqsave(&dev->qps, flags);
		qp = xa_load(&dev->qps, idx);
		if (qp && qp->handle == ev->handle && qp->ibqp.event_handler) {
			ie.event = IB_EVENT_PATH_MIG;
			ie.element.qp = &qp->ibqp;
			qp->ibqp.event_handler(&ie, qp->ibqp.qp_context);
		}
		xa_unlock_irqrestore(&dev->qps, flags);
		break;
	default:
		break;
	}
}
