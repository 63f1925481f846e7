// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: on-demand paging (docs/specs/rdma-session.rst,
 * "On-demand paging"), modelled on mlx5's odp.c.
 *
 * Registration.  reg_user_mr with IB_ACCESS_ON_DEMAND registers the
 * region with RS_MR_F_ODP and no page list.  An explicit region gets an
 * ib_umem_odp over its range (ib_umem_odp_get(), with an interval
 * notifier).  An implicit one (start 0, length U64_MAX, as
 * ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND) sends) is
 * registered with RS_MR_F_ODP_IMPLICIT and gets a root umem
 * (ib_umem_odp_alloc_implicit()); the first fault in each aligned
 * RS_ODP_CHILD_SIZE block of the address space creates a child umem
 * (ib_umem_odp_alloc_child(), a notifier of its own), kept in
 * mr->odp->children while it maps pages (see "Implicit children").
 *
 * The child size, 64 MiB: a child costs two arrays of 8 bytes per page
 * (dma_list and pfn_list, 256 KiB for 64 MiB), allocated whole at its
 * first fault, and one node in the mm's interval tree that every
 * invalidation overlapping it visits.  mlx5's 1 GiB children would make
 * a first fault allocate 4 MiB in a guest of 512 MiB; 2 MiB children
 * would split a perftest buffer of a few MiB into several, each created
 * by a fault of its own.  64 MiB covers a typical buffer with one child.
 *
 * Implicit children.  The two arrays are ib_core's, allocated without
 * __GFP_ACCOUNT, so what bounds them is the driver: an implicit MR has at
 * most odp_children (module parameter, default 64: 16 MiB of arrays
 * covering 4 GiB of address space) children at a time.  A child is only
 * created for an address in a readable mapping of the process that is
 * not VM_IO or VM_PFNMAP (else the fault or prefetch fails with -EFAULT
 * and creates nothing); past the limit the fault fails (the access
 * completes with an error) and advise_mr returns -ENOSPC, after the
 * children with nothing mapped have been freed.  A child with nothing
 * mapped is freed as soon as no resolve uses it: when its fault or
 * prefetch mapped nothing (failed, or PREFETCH_NO_FAULT found no page),
 * and, from the workqueue (reap_work), when an invalidation (munmap,
 * MADV_DONTNEED, reclaim, migration) unmapped its last page.  The
 * driver's own allocations for it (struct rs_odp_child, the xarray's
 * nodes) are charged to the caller's memory cgroup (GFP_KERNEL_ACCOUNT).
 * The counters odp_implicit_children, odp_implicit_children_freed and
 * odp_implicit_children_refused (rdma statistic) count them.
 *
 * Page faults.  The device posts RS_EV_ODP_PAGE_FAULT (lkey, first page,
 * pages, write) in hard IRQ context: rs_odp_fault_event() takes a
 * reference on the MR and queues a work item (it never sleeps).  The work
 * faults the pages in and DMA-maps them (ib_umem_odp_map_dma_and_lock()),
 * and with the umem_mutex still held issues ODP_RESOLVE (at most
 * RS_ODP_RESOLVE_MAX_PAGES pages per command) under the MR's ODP lock,
 * seq being the number of ODP_INVALIDATE commands the driver issued for
 * the key.  A range that cannot be faulted in (-EFAULT: not mapped,
 * -EPERM: a write to read-only memory) is answered with
 * RS_ODP_RESOLVE_F_FAIL; a transient failure (-EAGAIN, -EBUSY, -ENOMEM)
 * is not answered: the device posts the fault again every 100 ms until
 * its own timeout.  The device may forget a translation at any time, so
 * a fault for pages the umem has mapped already is simply resolved again.
 *
 * Invalidation.  The notifier callback (blockable ranges only; false
 * otherwise, as mlx5) takes the umem_mutex, sets the notifier sequence,
 * issues ODP_INVALIDATE for the part of the range that has pages mapped
 * under the MR's ODP lock (counting it), then unmaps the DMA pages: when
 * the command completes the device touches none of them any more.  A
 * umem with nothing mapped needs no command: every page the device was
 * given is in its dma_list until an invalidation has removed it.
 *
 * Deregistration: the MR leaves dev->odp_mrs (no new fault or prefetch
 * work finds it), the work holding it is waited for, DEREG_MR runs, then
 * the umems (children first) are released.
 *
 * Prefetch.  advise_mr (PREFETCH, PREFETCH_WRITE, PREFETCH_NO_FAULT) goes
 * through the resolve path of faults: synchronously with
 * IB_UVERBS_ADVISE_MR_FLAG_FLUSH, else from the workqueue.  It names
 * the MR by its lkey, which is the admin handle only in network identity
 * 0: the MR is found in dev->odp_keys[the PD's identity].
 *
 * Addresses.  The device sees the region's addresses: the iova range of
 * an explicit region, the process's addresses for an implicit one.  Page
 * k of an explicit region is page k of its umem (ib_uverbs requires the
 * start and the iova to have the same offset within a page).
 */
#include <linux/dmapool.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include <rdma/ib_umem_odp.h>
#include <rdma/ib_verbs.h>

#include "rdma_session_ib.h"
#include "rdma_session_com_cmd.h"

#define RS_ODP_CHILD_SHIFT	26
#define RS_ODP_CHILD_SIZE	BIT_ULL(RS_ODP_CHILD_SHIFT)
#define RS_ODP_PBL_BYTES	(RS_ODP_RESOLVE_MAX_PAGES * sizeof(u64))
/* ODP_RESOLVE answered STALE: build the page list again this often. */
#define RS_ODP_STALE_TRIES	4

static unsigned int rs_odp_max_children = 64;
module_param_named(odp_children, rs_odp_max_children, uint, 0644);
MODULE_PARM_DESC(odp_children,
		 "Most 64 MiB children an implicit ODP MR has at a time, each about 256 KiB of kernel memory (default 64)");

/* A child umem of an implicit MR, in mr->odp->children. */
struct rs_odp_child {
	struct ib_umem_odp *odp;
	unsigned int users;		/* resolves using it; child_lock */
};

/* rs_odp_resolve_range() flags */
#define RS_ODP_F_WRITE		BIT(0)	/* the access writes */
#define RS_ODP_F_NO_FAULT	BIT(1)	/* only pages present already */

struct rs_odp_fault {
	struct work_struct work;
	struct rs_mr *mr;
	u64 va;
	u32 npages;
	bool write;
};

struct rs_odp_sge {
	struct rs_mr *mr;
	u64 addr;
	u32 length;
};

struct rs_odp_prefetch {
	struct work_struct work;
	unsigned int flags;
	u32 num_sge;
	struct rs_odp_sge sge[] __counted_by(num_sge);
};

bool rs_odp_supported(struct rs_ibdev *dev)
{
	/* The device translates 4 KiB pages: one entry per CPU page. */
	return PAGE_SHIFT == RS_MR_MIN_PAGE_SHIFT &&
	       (dev->rdev->caps & RS_CAP_ODP);
}

void rs_odp_query_device(struct rs_ibdev *dev, struct ib_device_attr *a)
{
	u32 rc = IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		 IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		 IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;

	if (!rs_odp_supported(dev))
		return;
	if (!(dev->rdev->caps & RS_CAP_ATOMIC))
		rc &= ~IB_ODP_SUPPORT_ATOMIC;
	a->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	a->odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	a->odp_caps.per_transport_caps.rc_odp_caps = rc;
	/*
	 * UD sends from ODP memory wait for their faults like RC's; a UD or
	 * UC receive that faults is dropped (the spec's "What waits"), so
	 * neither offers receives, and UC nothing (as mlx5).
	 */
	a->odp_caps.per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND;
}

int rs_odp_init(struct rs_ibdev *dev)
{
	if (!rs_odp_supported(dev))
		return 0;
	/* Faulting pages in may allocate: as mlx5, a rescuer guarantees progress. */
	dev->odp_wq = alloc_workqueue("rs_odp", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	dev->odp_pool = dma_pool_create("rs_odp_pbl", rs_dma_dev(dev),
					RS_ODP_PBL_BYTES, RS_ODP_PBL_BYTES, 0);
	if (!dev->odp_wq || !dev->odp_pool) {
		rs_odp_cleanup(dev);
		return -ENOMEM;
	}
	return 0;
}

/* After ib_unregister_device(): every MR, and so every work item, is gone. */
void rs_odp_cleanup(struct rs_ibdev *dev)
{
	unsigned int i;

	if (dev->odp_wq)
		destroy_workqueue(dev->odp_wq);
	dev->odp_wq = NULL;
	dma_pool_destroy(dev->odp_pool);
	dev->odp_pool = NULL;
	WARN_ON(!xa_empty(&dev->odp_mrs));
	xa_destroy(&dev->odp_mrs);
	for (i = 0; i < ARRAY_SIZE(dev->odp_keys); i++) {
		WARN_ON(!xa_empty(&dev->odp_keys[i]));
		xa_destroy(&dev->odp_keys[i]);
	}
}

/* ------------------------------------------------------------------ */
/* Commands                                                           */
/* ------------------------------------------------------------------ */

static int rs_odp_cmd_resolve(struct rs_mr *mr, u64 va, u32 npages,
			      dma_addr_t pbl, u32 flags)
{
	struct rs_cmd_odp_resolve params = {};

	lockdep_assert_held(&mr->odp->lock);
	params.key = mr->handle;
	params.seq = mr->odp->seq;
	params.va = va;
	params.pbl_addr = pbl;
	params.npages = npages;
	params.flags = flags;
	return rs_com_odp_resolve(mr->odp->dev, &params);
}

/*
 * ODP_INVALIDATE [va, va + len) of the key, and count it.  The device
 * returns its own count: a driver that lost track (a command that timed
 * out after the device executed it) takes the device's.
 */
static int rs_odp_cmd_invalidate(struct rs_mr *mr, u64 va, u64 len)
{
	struct rs_ibdev *dev = mr->odp->dev;
	struct rs_cmd_odp_invalidate params = {};
	struct rs_com_odp_invalidate_result result;
	int err;

	lockdep_assert_held(&mr->odp->lock);
	params.key = mr->handle;
	params.va = va;
	params.length = len;
	err = rs_com_odp_invalidate(dev, &params, &result);
	if (err)
		return err;
	atomic64_inc(&dev->cnt[RS_CNT_ODP_INVALIDATIONS]);
	mr->odp->seq++;
	if (result.seq != mr->odp->seq) {
		ibdev_warn_ratelimited(&dev->ibdev,
				       "ODP MR %#x: the device counts %u invalidations, the driver %u\n",
				       mr->ibmr.lkey, result.seq, mr->odp->seq);
		mr->odp->seq = result.seq;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Invalidation                                                       */
/* ------------------------------------------------------------------ */

/* The device address of user address @uva, a page of @mr. */
static u64 rs_odp_dev_va(struct rs_mr *mr, struct ib_umem_odp *odp, u64 uva)
{
	if (mr->odp->implicit)
		return uva;
	return uva - ib_umem_start(odp) + mr->odp->iova_page;
}

static bool rs_odp_invalidate(struct mmu_interval_notifier *mni,
			      const struct mmu_notifier_range *range,
			      unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp, notifier);
	struct rs_mr *mr = odp->private;
	u64 start, end, addr, first = 0, last = 0;
	bool mapped = false;
	int err;

	if (!mmu_notifier_range_blockable(range))
		return false;

	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	/*
	 * The device holds no translation the dma_list lacks: a umem with
	 * nothing mapped (not faulted yet, or registering) needs no command.
	 */
	if (!odp->npages || !mr)
		goto out;

	start = max_t(u64, ib_umem_start(odp), ALIGN_DOWN(range->start, PAGE_SIZE));
	end = min_t(u64, ib_umem_end(odp), range->end);
	for (addr = start; addr < end; addr += PAGE_SIZE) {
		if (!odp->dma_list[(addr - ib_umem_start(odp)) >> PAGE_SHIFT])
			continue;
		if (!mapped)
			first = addr;
		last = addr;
		mapped = true;
	}
	if (!mapped)
		goto out;

	mutex_lock(&mr->odp->lock);
	if (mr->odp->live) {
		err = rs_odp_cmd_invalidate(mr, rs_odp_dev_va(mr, odp, first),
					    last + PAGE_SIZE - first);
		if (err)
			ibdev_warn_ratelimited(&mr->odp->dev->ibdev,
					       "ODP MR %#x: ODP_INVALIDATE of %#llx+%#llx failed (%d): unmapping anyway\n",
					       mr->ibmr.lkey, first, last + PAGE_SIZE - first, err);
	}
	mutex_unlock(&mr->odp->lock);
	ib_umem_odp_unmap_dma_pages(odp, first, last + PAGE_SIZE);
	/* An implicit MR's child with nothing mapped any more: free it. */
	if (mr->odp->implicit && !odp->npages) {
		mutex_lock(&mr->odp->lock);
		if (mr->odp->live)
			queue_work(mr->odp->dev->odp_wq, &mr->odp->reap_work);
		mutex_unlock(&mr->odp->lock);
	}
out:
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops rs_odp_mni_ops = {
	.invalidate = rs_odp_invalidate,
};

/* ------------------------------------------------------------------ */
/* Resolving                                                          */
/* ------------------------------------------------------------------ */

/* The page list entry of page @idx of @odp: 0 if it is not mapped. */
static u64 rs_odp_pte(struct ib_umem_odp *odp, u64 idx)
{
	dma_addr_t d = odp->dma_list[idx];
	u64 e;

	if (!(d & ODP_READ_ALLOWED_BIT))
		return 0;
	e = (d & ODP_DMA_ADDR_MASK) | RS_ODP_PAGE_READ;
	if ((d & ODP_WRITE_ALLOWED_BIT) && odp->umem.writable)
		e |= RS_ODP_PAGE_WRITE;
	return e;
}

/*
 * Fault in (with RS_ODP_F_NO_FAULT: look up) @npages pages of @odp from
 * user address @uva, which are the region's pages from @va, and hand
 * those present to the device.  Returns how many it handed over, or an
 * errno.
 *
 * A read asks for read access only, as the page fault does (mlx5 asks for
 * write whenever the umem is writable, which breaks copy-on-write of
 * pages the device only reads); a page already mapped writable then
 * becomes read-only in the dma_list and in the device until a write
 * faults on it.
 */
static int rs_odp_resolve_umem(struct rs_mr *mr, struct ib_umem_odp *odp,
			       u64 va, u64 uva, u32 npages, unsigned int flags,
			       u64 *pbl, dma_addr_t pbl_dma)
{
	struct rs_ibdev *dev = mr->odp->dev;
	u64 access = ODP_READ_ALLOWED_BIT;
	unsigned int tries = 0;
	u64 idx;
	int np, err;
	u32 i, n;

	if (flags & RS_ODP_F_WRITE)
		access |= ODP_WRITE_ALLOWED_BIT;
again:
	np = ib_umem_odp_map_dma_and_lock(odp, uva, (u64)npages << PAGE_SHIFT,
					  access, !(flags & RS_ODP_F_NO_FAULT));
	if (np < 0)
		return np;

	/* umem_mutex held: no invalidation of these pages until it drops. */
	idx = (uva - ib_umem_start(odp)) >> PAGE_SHIFT;
	for (i = 0, n = 0; i < npages; i++) {
		pbl[i] = rs_odp_pte(odp, idx + i);
		n += !!pbl[i];
	}
	err = 0;
	if (n) {
		mutex_lock(&mr->odp->lock);
		err = mr->odp->live ?
		      rs_odp_cmd_resolve(mr, va, npages, pbl_dma, 0) : -ENOENT;
		if (err == -EAGAIN) {
			atomic64_inc(&dev->cnt[RS_CNT_ODP_STALE]);
			/*
			 * Under the lock the count is the device's unless
			 * the two lost step: invalidating the pages about to
			 * be resolved again brings the device's back.
			 */
			if (tries)
				rs_odp_cmd_invalidate(mr, va,
						      (u64)npages << PAGE_SHIFT);
		}
		mutex_unlock(&mr->odp->lock);
	}
	mutex_unlock(&odp->umem_mutex);
	if (err == -EAGAIN && ++tries < RS_ODP_STALE_TRIES)
		goto again;
	return err ? err : n;
}

/* ------------------------------------------------------------------ */
/* Implicit children                                                  */
/* ------------------------------------------------------------------ */

static unsigned long rs_odp_child_idx(struct rs_odp_child *c)
{
	return ib_umem_start(c->odp) >> RS_ODP_CHILD_SHIFT;
}

/* Take @c out of the MR's children and free it (its notifier too). */
static void rs_odp_child_free(struct rs_mr_odp *om, struct rs_odp_child *c)
{
	lockdep_assert_held(&om->child_lock);
	xa_erase(&om->children, rs_odp_child_idx(c));
	om->nchildren--;
	ib_umem_odp_release(c->odp);
	kfree(c);
	atomic64_inc(&om->dev->cnt[RS_CNT_ODP_CHILDREN_FREED]);
}

/*
 * Free @c if no resolve uses it and it maps nothing.  Only a resolve maps
 * pages, so with no user and child_lock held nothing maps any; the device
 * holds no translation the dma_list lacks, so it has none of the child's
 * either.
 */
static void rs_odp_child_reap(struct rs_mr_odp *om, struct rs_odp_child *c)
{
	lockdep_assert_held(&om->child_lock);
	if (!c->users && !READ_ONCE(c->odp->npages))
		rs_odp_child_free(om, c);
}

static void rs_odp_reap_children(struct rs_mr_odp *om)
{
	struct rs_odp_child *c;
	unsigned long idx;

	lockdep_assert_held(&om->child_lock);
	xa_for_each(&om->children, idx, c)
		rs_odp_child_reap(om, c);
}

/* Queued by the invalidation that unmapped a child's last page. */
static void rs_odp_reap_work(struct work_struct *work)
{
	struct rs_mr_odp *om = container_of(work, struct rs_mr_odp, reap_work);

	mutex_lock(&om->child_lock);
	rs_odp_reap_children(om);
	mutex_unlock(&om->child_lock);
}

/*
 * Whether user address @va of @mm is in a mapping whose pages the device
 * could be given: readable, and not VM_IO or VM_PFNMAP (hmm_range_fault()
 * refuses those).  The caller holds a reference on @mm's users.
 */
static int rs_odp_va_mapped(struct mm_struct *mm, u64 va)
{
	struct vm_area_struct *vma;
	int err = -EFAULT;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	vma = vma_lookup(mm, va);
	if (vma && (vma->vm_flags & VM_READ) &&
	    !(vma->vm_flags & (VM_IO | VM_PFNMAP)))
		err = 0;
	mmap_read_unlock(mm);
	return err;
}

/*
 * The child of an implicit MR that holds user address @va, with a use
 * taken (rs_odp_child_put()).  Created if the address is mapped and the
 * MR has fewer than odp_children children.
 */
static struct rs_odp_child *rs_odp_child_get(struct rs_mr *mr, u64 va)
{
	struct rs_mr_odp *om = mr->odp;
	unsigned long idx = va >> RS_ODP_CHILD_SHIFT;
	unsigned int max = READ_ONCE(rs_odp_max_children);
	struct rs_odp_child *c;
	struct ib_umem_odp *odp;
	int err;

	if (va >= om->mm->task_size) {
		ibdev_dbg(&om->dev->ibdev,
			  "ODP MR %#x: %#llx is not a user address\n",
			  mr->ibmr.lkey, va);
		return ERR_PTR(-EFAULT);
	}

	mutex_lock(&om->child_lock);
	c = xa_load(&om->children, idx);
	if (c) {
		c->users++;
		goto out;
	}
	if (om->nchildren >= max) {
		/* Emptied children the workqueue has not freed yet. */
		rs_odp_reap_children(om);
		if (om->nchildren >= max) {
			atomic64_inc(&om->dev->cnt[RS_CNT_ODP_CHILDREN_REFUSED]);
			ibdev_dbg(&om->dev->ibdev,
				  "ODP MR %#x: %#llx: the MR has %u children (odp_children): refused\n",
				  mr->ibmr.lkey, va, om->nchildren);
			c = ERR_PTR(-ENOSPC);
			goto out;
		}
	}

	/* A notifier is only registered on a live mm. */
	if (!mmget_not_zero(om->mm)) {
		c = ERR_PTR(-EFAULT);
		goto out;
	}
	err = rs_odp_va_mapped(om->mm, va);
	if (err) {
		mmput_async(om->mm);
		ibdev_dbg(&om->dev->ibdev,
			  "ODP MR %#x: %#llx is not in a readable mapping: no child\n",
			  mr->ibmr.lkey, va);
		c = ERR_PTR(err);
		goto out;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c) {
		mmput_async(om->mm);
		c = ERR_PTR(-ENOMEM);
		goto out;
	}
	odp = ib_umem_odp_alloc_child(to_ib_umem_odp(mr->umem),
				      idx << RS_ODP_CHILD_SHIFT,
				      RS_ODP_CHILD_SIZE, &rs_odp_mni_ops);
	mmput_async(om->mm);
	if (IS_ERR(odp)) {
		kfree(c);
		c = ERR_CAST(odp);
		goto out;
	}
	odp->private = mr;
	c->odp = odp;
	c->users = 1;
	err = xa_err(xa_store(&om->children, idx, c, GFP_KERNEL_ACCOUNT));
	if (err) {
		ib_umem_odp_release(odp);
		kfree(c);
		c = ERR_PTR(err);
		goto out;
	}
	om->nchildren++;
	atomic64_inc(&om->dev->cnt[RS_CNT_ODP_CHILDREN]);
out:
	mutex_unlock(&om->child_lock);
	return c;
}

/* Drop the use: a child left with nothing mapped goes. */
static void rs_odp_child_put(struct rs_mr_odp *om, struct rs_odp_child *c)
{
	mutex_lock(&om->child_lock);
	c->users--;
	rs_odp_child_reap(om, c);
	mutex_unlock(&om->child_lock);
}

/* The umem holding device address @va of explicit @mr, and its user address. */
static struct ib_umem_odp *rs_odp_umem_at(struct rs_mr *mr, u64 va, u64 *uva)
{
	struct ib_umem_odp *odp = to_ib_umem_odp(mr->umem);
	u64 off;

	off = va - mr->odp->iova_page;
	if (va < mr->odp->iova_page ||
	    off >= ib_umem_end(odp) - ib_umem_start(odp))
		return ERR_PTR(-EFAULT);
	*uva = ib_umem_start(odp) + off;
	return odp;
}

/*
 * Resolve the pages of [va, va + len) (device addresses) of @mr, umem by
 * umem and at most RS_ODP_RESOLVE_MAX_PAGES per command.  Adds the pages
 * handed over to *pages.  The caller holds a reference on @mr.
 */
static int rs_odp_resolve_range(struct rs_mr *mr, u64 va, u64 len,
				unsigned int flags, u64 *pages)
{
	struct rs_ibdev *dev = mr->odp->dev;
	struct rs_odp_child *child;
	struct ib_umem_odp *odp;
	u64 last, left, n, uva;
	dma_addr_t pbl_dma;
	u64 *pbl;
	int ret = 0;

	if (!len)
		return 0;
	if (check_add_overflow(va, len - 1, &last))
		return -EFAULT;
	pbl = dma_pool_alloc(dev->odp_pool, GFP_KERNEL, &pbl_dma);
	if (!pbl)
		return -ENOMEM;

	va = ALIGN_DOWN(va, PAGE_SIZE);
	for (;;) {
		child = NULL;
		if (mr->odp->implicit) {
			child = rs_odp_child_get(mr, va);
			odp = IS_ERR(child) ? ERR_CAST(child) : child->odp;
			uva = va;
		} else {
			odp = rs_odp_umem_at(mr, va, &uva);
		}
		if (IS_ERR(odp)) {
			ret = PTR_ERR(odp);
			break;
		}
		/* To the end of the range, of the umem, of one command. */
		left = ((last - va) >> PAGE_SHIFT) + 1;
		n = min3(left, (ib_umem_end(odp) - uva) >> PAGE_SHIFT,
			 (u64)RS_ODP_RESOLVE_MAX_PAGES);
		ret = rs_odp_resolve_umem(mr, odp, va, uva, n, flags, pbl,
					  pbl_dma);
		if (child)
			rs_odp_child_put(mr->odp, child);
		if (ret < 0)
			break;
		*pages += ret;
		ret = 0;
		if (n == left)
			break;
		va += n << PAGE_SHIFT;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
	}
	dma_pool_free(dev->odp_pool, pbl, pbl_dma);
	return ret;
}

/* ------------------------------------------------------------------ */
/* MR lookup and references                                           */
/* ------------------------------------------------------------------ */

static void rs_odp_mr_put(struct rs_mr *mr)
{
	if (refcount_dec_and_test(&mr->odp->users))
		complete(&mr->odp->idle);
}

/* The ODP MR of admin handle @handle with a reference, or NULL. */
static struct rs_mr *rs_odp_mr_get(struct rs_ibdev *dev, u32 handle)
{
	unsigned long flags;
	struct rs_mr *mr;

	xa_lock_irqsave(&dev->odp_mrs, flags);
	mr = xa_load(&dev->odp_mrs, handle);
	/* In the xarray, the MR's own reference keeps users above 0. */
	if (mr)
		refcount_inc(&mr->odp->users);
	xa_unlock_irqrestore(&dev->odp_mrs, flags);
	return mr;
}

/* The lkeys of the ODP MRs of @pd's network identity. */
static struct xarray *rs_odp_keys(struct rs_ibdev *dev, struct ib_pd *pd)
{
	u8 id = to_rspd(pd)->netid;

	return id < ARRAY_SIZE(dev->odp_keys) ? &dev->odp_keys[id] : NULL;
}

/*
 * The ODP MR of @pd's identity whose lkey is @lkey, with a reference, or
 * NULL.  Only in identity 0 is the lkey also the admin handle.
 */
static struct rs_mr *rs_odp_mr_get_key(struct rs_ibdev *dev,
				       struct ib_pd *pd, u32 lkey)
{
	struct xarray *keys = rs_odp_keys(dev, pd);
	struct rs_mr *mr;

	if (!keys)
		return NULL;
	xa_lock(keys);
	mr = xa_load(keys, lkey);
	if (mr)
		refcount_inc(&mr->odp->users);
	xa_unlock(keys);
	return mr;
}

/* ------------------------------------------------------------------ */
/* Page faults                                                        */
/* ------------------------------------------------------------------ */

static bool rs_odp_transient(int err)
{
	return err == -EAGAIN || err == -EBUSY || err == -ENOMEM ||
	       err == -EINTR;
}

static void rs_odp_fault_work(struct work_struct *work)
{
	struct rs_odp_fault *f = container_of(work, struct rs_odp_fault, work);
	struct rs_mr *mr = f->mr;
	struct rs_ibdev *dev = mr->odp->dev;
	u64 pages = 0;
	int err;

	err = rs_odp_resolve_range(mr, f->va, (u64)f->npages << PAGE_SHIFT,
				   f->write ? RS_ODP_F_WRITE : 0, &pages);
	if (!err) {
		atomic64_inc(&dev->cnt[RS_CNT_ODP_FAULTS_RESOLVED]);
		atomic64_add(pages, &dev->cnt[RS_CNT_ODP_FAULT_PAGES]);
	} else if (!rs_odp_transient(err) && err != -ENOENT) {
		ibdev_dbg(&dev->ibdev,
			  "ODP MR %#x: %s fault at %#llx, %u pages: %d: failing it\n",
			  mr->ibmr.lkey, f->write ? "write" : "read", f->va,
			  f->npages, err);
		mutex_lock(&mr->odp->lock);
		if (mr->odp->live &&
		    !rs_odp_cmd_resolve(mr, f->va, f->npages, 0,
					RS_ODP_RESOLVE_F_FAIL))
			atomic64_inc(&dev->cnt[RS_CNT_ODP_FAULTS_FAILED]);
		mutex_unlock(&mr->odp->lock);
	} else {
		ibdev_dbg(&dev->ibdev,
			  "ODP MR %#x: fault at %#llx, %u pages: %d: the device asks again\n",
			  mr->ibmr.lkey, f->va, f->npages, err);
	}
	rs_odp_mr_put(mr);
	kfree(f);
}

/* RS_EV_ODP_PAGE_FAULT, in hard IRQ context: queue its work. */
void rs_odp_fault_event(struct rs_ibdev *dev, const struct rs_event *ev)
{
	struct rs_odp_fault *f;
	struct rs_mr *mr;

	atomic64_inc(&dev->cnt[RS_CNT_ODP_FAULT_EVENTS]);
	if (!dev->odp_wq || !ev->info || ev->info > RS_ODP_RESOLVE_MAX_PAGES ||
	    !PAGE_ALIGNED(ev->data)) {
		ibdev_warn_ratelimited(&dev->ibdev,
				       "ODP page fault event with lkey %#x, address %#llx, %u pages: ignored\n",
				       ev->handle, ev->data, ev->info);
		goto drop;
	}
	/* A key deregistered or not ODP: the device times the access out. */
	mr = rs_odp_mr_get(dev, ev->handle);
	if (!mr)
		goto drop;
	f = kzalloc(sizeof(*f), GFP_ATOMIC);
	if (!f) {
		/* The device posts the fault again in 100 ms. */
		rs_odp_mr_put(mr);
		goto drop;
	}
	INIT_WORK(&f->work, rs_odp_fault_work);
	f->mr = mr;
	f->va = ev->data;
	f->npages = ev->info;
	f->write = ev->flags & RS_EQE_ODP_WRITE;
	queue_work(dev->odp_wq, &f->work);
	return;
drop:
	atomic64_inc(&dev->cnt[RS_CNT_ODP_FAULT_DROPPED]);
}

/* ------------------------------------------------------------------ */
/* Registration                                                       */
/* ------------------------------------------------------------------ */

static void rs_odp_mr_free(struct rs_mr *mr)
{
	struct rs_mr_odp *om = mr->odp;
	struct rs_odp_child *c;
	unsigned long idx;

	/* Not live: no invalidation queues the work again. */
	cancel_work_sync(&om->reap_work);
	mutex_lock(&om->child_lock);
	xa_for_each(&om->children, idx, c)
		rs_odp_child_free(om, c);
	mutex_unlock(&om->child_lock);
	xa_destroy(&om->children);
	if (mr->umem)
		ib_umem_odp_release(to_ib_umem_odp(mr->umem));
	mr->umem = NULL;
	if (mr->odp->mm)
		mmdrop(mr->odp->mm);
	kfree(mr->odp);
	mr->odp = NULL;
}

struct ib_mr *rs_odp_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				 u64 iova, int access, u32 netid)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	bool implicit = !start && length == U64_MAX;
	struct rs_cmd_reg_mr params = {};
	struct ib_umem_odp *odp;
	struct rs_com_key_result result;
	struct xarray *keys;
	struct rs_mr_odp *om;
	struct rs_mr *mr;
	u64 end;
	int err;

	if (!rs_odp_supported(dev)) {
		ibdev_dbg(&dev->ibdev, "reg_mr: the device has no on-demand paging\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (implicit && iova) {
		ibdev_dbg(&dev->ibdev,
			  "reg_mr: implicit ODP MR (start 0, length U64_MAX) with iova %#llx: must be 0\n",
			  iova);
		return ERR_PTR(-EINVAL);
	}
	if (!implicit) {
		if (!length || length > dev->rdev->attr.max_mr_size ||
		    check_add_overflow(iova, length, &end) ||
		    check_add_overflow(start, length, &end)) {
			ibdev_dbg(&dev->ibdev,
				  "reg_mr: ODP MR of %#llx bytes at %#llx (iova %#llx): the device supports 1..%#llx bytes, within the address space\n",
				  length, start, iova, dev->rdev->attr.max_mr_size);
			return ERR_PTR(-EINVAL);
		}
		if ((start ^ iova) & ~PAGE_MASK) {
			ibdev_dbg(&dev->ibdev,
				  "reg_mr: ODP MR at %#llx with iova %#llx: not the same offset in a page\n",
				  start, iova);
			return ERR_PTR(-EINVAL);
		}
	}

	keys = rs_odp_keys(dev, ibpd);
	if (!keys)
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	om = kzalloc(sizeof(*om), GFP_KERNEL_ACCOUNT);
	if (!mr || !om) {
		kfree(mr);
		kfree(om);
		return ERR_PTR(-ENOMEM);
	}
	mr->odp = om;
	mutex_init(&om->lock);
	refcount_set(&om->users, 1);
	init_completion(&om->idle);
	mutex_init(&om->child_lock);
	xa_init(&om->children);
	INIT_WORK(&om->reap_work, rs_odp_reap_work);
	om->implicit = implicit;
	om->dev = dev;
	om->iova_page = iova & PAGE_MASK;

	if (implicit) {
		odp = ib_umem_odp_alloc_implicit(&dev->ibdev, access);
		if (!IS_ERR(odp)) {
			/* Children are created from the workqueue, later. */
			om->mm = current->mm;
			mmgrab(om->mm);
		}
	} else {
		odp = ib_umem_odp_get(&dev->ibdev, start, length, access,
				      &rs_odp_mni_ops);
	}
	if (IS_ERR(odp)) {
		err = PTR_ERR(odp);
		ibdev_dbg(&dev->ibdev, "reg_mr: ODP umem at %#llx: %d\n", start, err);
		goto err_free;
	}
	odp->private = mr;
	mr->umem = &odp->umem;

	params.iova = implicit ? 0 : iova;
	params.length = implicit ? 0 : length;
	params.pd = to_rspd(ibpd)->handle;
	params.page_shift = RS_MR_MIN_PAGE_SHIFT;
	params.flags = RS_MR_F_ODP | (implicit ? RS_MR_F_ODP_IMPLICIT : 0);
	params.access = rs_access_from_ib(access);
	params.gid_index = netid;
	err = rs_com_reg_mr(dev, &params, &result);
	if (err)
		goto err_free;

	/* The key; the handle names it to the device (ABI 1.6). */
	mr->handle = result.handle;
	mr->ibmr.lkey = result.key;
	mr->ibmr.rkey = result.key;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mr->ibmr.page_size = PAGE_SIZE;
	mr->access = access;
	mr->kind = "odp";
	mr->netid = netid;
	/* Nothing is mapped before the first fault: no invalidation yet. */
	om->live = true;
	err = xa_insert_irq(&dev->odp_mrs, mr->handle, mr, GFP_KERNEL);
	if (!err) {
		err = xa_insert(keys, mr->ibmr.lkey, mr, GFP_KERNEL);
		if (err)
			xa_erase_irq(&dev->odp_mrs, mr->handle);
	}
	if (err) {
		ibdev_dbg(&dev->ibdev, "reg_mr: ODP key %#x: %d\n", mr->ibmr.lkey, err);
		rs_com_dereg_mr(dev, mr->handle);
		goto err_free;
	}
	atomic64_inc(&dev->cnt[RS_CNT_MR_REGISTERED]);
	return &mr->ibmr;

err_free:
	rs_odp_mr_free(mr);
	kfree(mr);
	return ERR_PTR(err);
}

int rs_odp_dereg_mr(struct rs_ibdev *dev, struct rs_mr *mr)
{
	struct xarray *keys = rs_odp_keys(dev, mr->ibmr.pd);
	int err;

	/* No new work finds the MR; wait for the work that holds it. */
	xa_erase_irq(&dev->odp_mrs, mr->handle);
	xa_erase(keys, mr->ibmr.lkey);
	rs_odp_mr_put(mr);
	wait_for_completion(&mr->odp->idle);

	mutex_lock(&mr->odp->lock);
	err = rs_com_dereg_mr(dev, mr->handle);
	if (!err)
		mr->odp->live = false;
	mutex_unlock(&mr->odp->lock);
	if (err) {
		/* Still registered (windows bound to it): take faults again. */
		refcount_set(&mr->odp->users, 1);
		reinit_completion(&mr->odp->idle);
		if (xa_insert_irq(&dev->odp_mrs, mr->handle, mr, GFP_KERNEL) ||
		    xa_insert(keys, mr->ibmr.lkey, mr, GFP_KERNEL))
			ibdev_warn(&dev->ibdev,
				   "ODP MR %#x: its faults can no longer be resolved\n",
				   mr->ibmr.lkey);
		return err;
	}
	/* The device reads and writes none of the pages any more. */
	rs_odp_mr_free(mr);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Prefetch (advise_mr)                                               */
/* ------------------------------------------------------------------ */

static void rs_odp_prefetch_work(struct work_struct *work)
{
	struct rs_odp_prefetch *p = container_of(work, struct rs_odp_prefetch,
						 work);
	u64 pages;
	u32 i;

	for (i = 0; i < p->num_sge; i++) {
		pages = 0;
		/* Advice: a failure is nobody's to report. */
		rs_odp_resolve_range(p->sge[i].mr, p->sge[i].addr,
				     p->sge[i].length, p->flags, &pages);
		rs_odp_mr_put(p->sge[i].mr);
	}
	kfree(p);
}

int rs_ib_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct rs_ibdev *dev = to_rsdev(pd->device);
	struct rs_odp_prefetch *p;
	unsigned int rflags;
	u64 pages = 0;
	int err = 0;
	u32 i;

	switch (advice) {
	case IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH:
		rflags = 0;
		break;
	case IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE:
		rflags = RS_ODP_F_WRITE;
		break;
	case IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT:
		rflags = RS_ODP_F_NO_FAULT;
		break;
	default:
		ibdev_dbg(&dev->ibdev, "advise_mr: advice %d is not supported\n",
			  advice);
		return -EOPNOTSUPP;
	}
	if (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH) {
		ibdev_dbg(&dev->ibdev, "advise_mr: unknown flags %#x\n", flags);
		return -EOPNOTSUPP;
	}
	if (!num_sge)
		return 0;

	p = kzalloc(struct_size(p, sge, num_sge), GFP_KERNEL_ACCOUNT);
	if (!p)
		return -ENOMEM;
	p->num_sge = num_sge;
	p->flags = rflags;
	for (i = 0; i < num_sge; i++) {
		struct rs_mr *mr = rs_odp_mr_get_key(dev, pd, sg_list[i].lkey);

		if (!mr || mr->ibmr.pd != pd) {
			ibdev_dbg(&dev->ibdev,
				  "advise_mr: SGE %u: lkey %#x is not an ODP MR of this PD\n",
				  i, sg_list[i].lkey);
			if (mr)
				rs_odp_mr_put(mr);
			err = -EINVAL;
			break;
		}
		p->sge[i].mr = mr;
		p->sge[i].addr = sg_list[i].addr;
		p->sge[i].length = sg_list[i].length;
	}
	if (err) {
		while (i--)
			rs_odp_mr_put(p->sge[i].mr);
		kfree(p);
		return err;
	}
	atomic64_add(num_sge, &dev->cnt[RS_CNT_ODP_PREFETCHES]);

	if (!(flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH)) {
		INIT_WORK(&p->work, rs_odp_prefetch_work);
		queue_work(dev->odp_wq, &p->work);
		return 0;
	}
	/* FLUSH: the pages are the device's when the call returns. */
	for (i = 0; i < num_sge; i++) {
		if (!err) {
			err = rs_odp_resolve_range(p->sge[i].mr, p->sge[i].addr,
						   p->sge[i].length, rflags,
						   &pages);
			if (err)
				ibdev_dbg(&dev->ibdev,
					  "advise_mr: SGE %u (lkey %#x, %#llx+%#x): %d\n",
					  i, p->sge[i].mr->ibmr.lkey,
					  p->sge[i].addr, p->sge[i].length, err);
		}
		rs_odp_mr_put(p->sge[i].mr);
	}
	kfree(p);
	return err;
}
