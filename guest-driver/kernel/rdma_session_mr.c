// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: memory keys: user MRs (and their re-registration),
 * DMA and fast-registration MRs, indirect and pattern keys (mkey lists),
 * memory windows.  ODP MRs are in rdma_session_odp.c.
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
/* Memory regions                                                     */
/* ------------------------------------------------------------------ */

struct rs_pbl {
	u64 *top;			/* page addresses or chunk addresses */
	dma_addr_t top_dma;
	size_t top_size;
	u64 **chunk;			/* indirect: 4 KiB chunks */
	dma_addr_t *chunk_dma;
	u32 nchunks;
};

static void rs_pbl_free(struct rs_ibdev *dev, struct rs_pbl *pbl)
{
	struct device *d = rs_dma_dev(dev);
	u32 i;

	for (i = 0; i < pbl->nchunks; i++)
		if (pbl->chunk[i])
			dma_free_coherent(d, RS_DB_PAGE_SIZE, pbl->chunk[i],
					  pbl->chunk_dma[i]);
	kfree(pbl->chunk);
	kfree(pbl->chunk_dma);
	if (pbl->top)
		dma_free_coherent(d, pbl->top_size, pbl->top, pbl->top_dma);
}

static int rs_pbl_build(struct rs_ibdev *dev, struct rs_pbl *pbl,
			struct ib_umem *umem, unsigned long pgsz, u32 npages,
			bool *indirect)
{
	struct device *d = rs_dma_dev(dev);
	struct ib_block_iter it;
	u32 i = 0;

	memset(pbl, 0, sizeof(*pbl));
	*indirect = npages > RS_PBL_CHUNK_ENTRIES;
	if (!*indirect) {
		pbl->top_size = npages * sizeof(u64);
		pbl->top = dma_alloc_coherent(d, pbl->top_size, &pbl->top_dma, GFP_KERNEL);
		if (!pbl->top)
			return -ENOMEM;
		rdma_umem_for_each_dma_block(umem, &it, pgsz) {
			if (i >= npages)
				goto mismatch;
			pbl->top[i++] = rdma_block_iter_dma_address(&it);
		}
		if (i != npages)
			goto mismatch;
		return 0;
	}

	pbl->nchunks = DIV_ROUND_UP(npages, RS_PBL_CHUNK_ENTRIES);
	pbl->chunk = kcalloc(pbl->nchunks, sizeof(*pbl->chunk), GFP_KERNEL);
	pbl->chunk_dma = kcalloc(pbl->nchunks, sizeof(*pbl->chunk_dma), GFP_KERNEL);
	pbl->top_size = pbl->nchunks * sizeof(u64);
	pbl->top = dma_alloc_coherent(d, pbl->top_size, &pbl->top_dma, GFP_KERNEL);
	if (!pbl->chunk || !pbl->chunk_dma || !pbl->top)
		return -ENOMEM;
	for (i = 0; i < pbl->nchunks; i++) {
		pbl->chunk[i] = dma_alloc_coherent(d, RS_DB_PAGE_SIZE,
						   &pbl->chunk_dma[i], GFP_KERNEL);
		if (!pbl->chunk[i])
			return -ENOMEM;
		pbl->top[i] = pbl->chunk_dma[i];
	}
	i = 0;
	rdma_umem_for_each_dma_block(umem, &it, pgsz) {
		if (i >= npages)
			goto mismatch;
		pbl->chunk[i / RS_PBL_CHUNK_ENTRIES][i % RS_PBL_CHUNK_ENTRIES] =
			rdma_block_iter_dma_address(&it);
		i++;
	}
	if (i != npages)
		goto mismatch;
	return 0;

mismatch:
	/* ib_umem_num_dma_blocks() counted them: a driver bug. */
	ibdev_warn_ratelimited(&dev->ibdev,
			       "reg_mr: the umem does not have the %u blocks of %lu bytes counted\n",
			       npages, pgsz);
	return -EINVAL;
}

#define RS_IB_ACCESS_SUPPORTED	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_MW_BIND | IB_ACCESS_FLUSH_GLOBAL | \
				 IB_ACCESS_OPTIONAL | IB_ACCESS_ON_DEMAND | \
				 IB_ACCESS_HUGETLB)

/* dma-buf MRs are pinned: no on-demand paging. */
#define RS_IB_DMABUF_ACCESS	(RS_IB_ACCESS_SUPPORTED & ~IB_ACCESS_ON_DEMAND)

/* Indirect and pattern keys (RS_CAP_INDIRECT_MKEY, RS_CAP_PATTERN_MKEY). */
#define RS_IB_MKEY_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

static int rs_mkey_check(struct rs_ibdev *dev, bool pattern, u32 nentries,
			 int access)
{
	u32 cap = pattern ? RS_CAP_PATTERN_MKEY : RS_CAP_INDIRECT_MKEY;
	u32 max = min_t(u32, dev->rdev->attr.max_mkey_entries,
			RS_MKEY_MAX_ENTRIES);

	if (!(dev->rdev->caps & cap))
		return -EOPNOTSUPP;
	if (!nentries || nentries > max || (access & ~RS_IB_MKEY_ACCESS)) {
		ibdev_dbg(&dev->ibdev, "mkey: %u entries (1..%u), access %#x (allowed %#x)\n",
			  nentries, max, access, RS_IB_MKEY_ACCESS);
		return -EINVAL;
	}
	return 0;
}

/* REG_INDIRECT_MKEY / REG_PATTERN_MKEY; list_dma 0 with RS_MKEY_F_EMPTY. */
static struct ib_mr *rs_mkey_reg(struct ib_pd *ibpd, bool pattern,
				 dma_addr_t list_dma, u16 nentries, u32 repeat,
				 u32 flags, int access)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct rs_cmd_reg_mkey_list params = {};
	struct rs_com_key_result result;
	struct rs_mr *mr;
	u32 netid;
	int err;

	err = rs_default_netid(dev, ibpd, &netid);
	if (err)
		return ERR_PTR(err);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	params.list_addr = list_dma;
	params.pd = to_rspd(ibpd)->handle;
	params.gid_index = netid;
	params.nentries = nentries;
	params.access = rs_access_from_ib(access);
	params.repeat = repeat;
	params.flags = flags;
	err = pattern ? rs_com_reg_pattern_mkey(dev, &params, &result) :
			rs_com_reg_indirect_mkey(dev, &params, &result);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	/* A key of the MR table: DEREG_MR frees it (rs_ib_dereg_mr). */
	mr->handle = result.handle;
	mr->ibmr.lkey = result.key;
	mr->ibmr.rkey = result.key;
	mr->access = access;
	mr->kind = pattern ? "pattern" : "indirect";
	mr->netid = netid;
	atomic64_inc(&dev->cnt[RS_CNT_MR_REGISTERED]);
	return &mr->ibmr;
}

/*
 * ibv_reg_mr with struct rs_uverbs_reg_mr asking for an empty key: no
 * memory behind it (addr, length, iova 0), nothing pinned.
 */
static struct ib_mr *rs_ib_reg_empty_mkey(struct ib_pd *ibpd, u64 start,
					  u64 length, u64 iova, int access,
					  const struct rs_uverbs_reg_mr *ucmd)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	bool pattern = ucmd->flags == RS_UVERBS_MR_F_EMPTY_PATTERN;
	int err;

	if ((ucmd->flags != RS_UVERBS_MR_F_EMPTY_INDIRECT && !pattern) ||
	    ucmd->rsvd[0] || ucmd->rsvd[1] || start || length || iova) {
		ibdev_dbg(&dev->ibdev, "reg_mr: empty key: flags %#x, reserved %#x %#x, addr %#llx length %llu iova %#llx\n",
			  ucmd->flags, ucmd->rsvd[0], ucmd->rsvd[1], start,
			  length, iova);
		return ERR_PTR(-EINVAL);
	}
	err = rs_mkey_check(dev, pattern, ucmd->max_entries, access);
	if (err)
		return ERR_PTR(err);
	return rs_mkey_reg(ibpd, pattern, 0, ucmd->max_entries, 0,
			   RS_MKEY_F_EMPTY, access);
}

/**
 * rs_ib_reg_mkey_list - register an indirect or pattern key from entries
 * @ibpd: the key's PD, also that of every key the entries name
 * @pattern: false: @entries are struct rs_mkey_entry; true: struct
 *	rs_pattern_entry repeated @repeat times
 * @entries: the entries (little-endian, the device's layout)
 * @nentries: how many, 1 - the device's max_mkey_entries
 * @repeat: pattern: >= 1; indirect: 0
 * @access: IB_ACCESS_* rights of the key (no MW_BIND)
 *
 * For kernel consumers.  The key (lkey == rkey) addresses [0, length)
 * zero-based; ib_dereg_mr() frees it.  Returns the MR or an ERR_PTR.
 */
struct ib_mr *rs_ib_reg_mkey_list(struct ib_pd *ibpd, bool pattern,
				  const void *entries, u16 nentries, u32 repeat,
				  int access)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	size_t esz = pattern ? sizeof(struct rs_pattern_entry) :
			       sizeof(struct rs_mkey_entry);
	struct ib_mr *mr;
	dma_addr_t dma;
	void *list;
	int err;

	err = rs_mkey_check(dev, pattern, nentries, access);
	if (err)
		return ERR_PTR(err);
	if (pattern != !!repeat)
		return ERR_PTR(-EINVAL);
	list = dma_alloc_coherent(rs_dma_dev(dev), esz * nentries, &dma,
				  GFP_KERNEL);
	if (!list)
		return ERR_PTR(-ENOMEM);
	memcpy(list, entries, esz * nentries);
	mr = rs_mkey_reg(ibpd, pattern, dma, nentries, repeat, 0, access);
	/* The device copied the entries. */
	dma_free_coherent(rs_dma_dev(dev), esz * nentries, list, dma);
	if (!IS_ERR(mr)) {
		mr->device = ibpd->device;
		mr->pd = ibpd;
		mr->type = IB_MR_TYPE_MEM_REG;
		atomic_inc(&ibpd->usecnt);
	}
	return mr;
}
EXPORT_SYMBOL_GPL(rs_ib_reg_mkey_list);

/*
 * REG_MR of @mr's pinned umem (from ib_umem_get or a dma-buf): the device
 * gets the page list of the umem's DMA blocks and copies it.  On success
 * @mr holds its keys; on failure the caller still owns @mr and its umem.
 */
static int rs_reg_umem_mr(struct ib_pd *ibpd, struct rs_mr *mr, u64 length,
			  u64 iova, int access, u32 netid)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct rs_cmd_reg_mr params = {};
	struct rs_com_key_result result;
	unsigned long pgsz;
	struct rs_pbl pbl;
	bool indirect;
	u32 npages;
	int err;

	pgsz = ib_umem_find_best_pgsz(mr->umem, dev->rdev->attr.page_size_cap, iova);
	if (!pgsz) {
		ibdev_dbg(&dev->ibdev,
			  "reg_mr: no page size of the device (%#llx) maps iova %#llx to the buffer\n",
			  dev->rdev->attr.page_size_cap, iova);
		return -EINVAL;
	}
	npages = ib_umem_num_dma_blocks(mr->umem, pgsz);

	err = rs_pbl_build(dev, &pbl, mr->umem, pgsz, npages, &indirect);
	if (err) {
		rs_pbl_free(dev, &pbl);
		return err;
	}

	params.iova = iova;
	params.length = length;
	params.pbl_addr = pbl.top_dma;
	params.npages = npages;
	params.pd = to_rspd(ibpd)->handle;
	params.page_shift = order_base_2(pgsz);
	params.flags = indirect ? RS_MR_F_PBL_INDIRECT : 0;
	params.access = rs_access_from_ib(access);
	params.gid_index = netid;
	err = rs_com_reg_mr(dev, &params, &result);
	/* The device copied the translation: the page list can go. */
	rs_pbl_free(dev, &pbl);
	if (err)
		return err;

	mr->handle = result.handle;
	mr->ibmr.lkey = result.key;
	mr->ibmr.rkey = result.key;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mr->ibmr.page_size = pgsz;
	mr->access = access;
	mr->netid = netid;
	atomic64_inc(&dev->cnt[RS_CNT_MR_REGISTERED]);
	return 0;
}

struct ib_mr *rs_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct rs_uverbs_reg_mr ucmd;
	struct rs_mr *mr;
	u32 netid;
	int err;

	err = rs_udata_in(udata, &ucmd, sizeof(ucmd));
	if (err)
		return ERR_PTR(err);
	if (ucmd.flags)
		return rs_ib_reg_empty_mkey(ibpd, start, length, iova, access,
					    &ucmd);
	if (ucmd.max_entries || ucmd.rsvd[0] || ucmd.rsvd[1])
		return ERR_PTR(-EINVAL);

	if (access & ~RS_IB_ACCESS_SUPPORTED) {
		ibdev_dbg(&dev->ibdev, "reg_mr: access flags %#x not supported\n",
			  access & ~RS_IB_ACCESS_SUPPORTED);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!(access & IB_ACCESS_ON_DEMAND) &&
	    (!length || length > dev->rdev->attr.max_mr_size)) {
		ibdev_dbg(&dev->ibdev, "reg_mr: length %llu, the device supports 1..%llu\n",
			  length, dev->rdev->attr.max_mr_size);
		return ERR_PTR(-EINVAL);
	}
	err = rs_default_netid(dev, ibpd, &netid);
	if (err) {
		ibdev_dbg(&dev->ibdev, "reg_mr: no network identity (GID) yet\n");
		return ERR_PTR(err);
	}
	/* On-demand paging: no pinning, no page list (rdma_session_odp.c). */
	if (access & IB_ACCESS_ON_DEMAND)
		return rs_odp_reg_user_mr(ibpd, start, length, iova, access, netid);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_mr;
	}
	err = rs_reg_umem_mr(ibpd, mr, length, iova, access, netid);
	if (err)
		goto err_umem;
	mr->kind = "user";
	return &mr->ibmr;

err_umem:
	ib_umem_release(mr->umem);
err_mr:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * ibv_reg_dmabuf_mr: [offset, offset + length) of dma-buf @fd, pinned as
 * efa and mlx5 (without ODP) do, so the device sees an ordinary page list.
 * The exporter's pages stay put while pinned: no move_notify to serve, so
 * no on-demand paging here (ib_core's uverbs method already takes only
 * local write, remote read/write/atomic and relaxed ordering; the check
 * below holds for any other caller).  ib_umem_release() in dereg unpins.
 */
struct ib_mr *rs_ib_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd,
				       int access,
				       struct uverbs_attr_bundle *attrs)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct ib_umem_dmabuf *umem_dmabuf;
	struct rs_mr *mr;
	u32 netid;
	int err;

	/* The provider sends no driver data: refuse what a newer one might. */
	if (attrs->driver_udata.inlen &&
	    !ib_is_udata_cleared(&attrs->driver_udata, 0,
				 attrs->driver_udata.inlen)) {
		ibdev_dbg(&dev->ibdev, "reg_dmabuf_mr: %zu bytes of driver data\n",
			  attrs->driver_udata.inlen);
		return ERR_PTR(-EINVAL);
	}
	if (access & ~RS_IB_DMABUF_ACCESS) {
		ibdev_dbg(&dev->ibdev, "reg_dmabuf_mr: access flags %#x not supported\n",
			  access & ~RS_IB_DMABUF_ACCESS);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!length || length > dev->rdev->attr.max_mr_size) {
		ibdev_dbg(&dev->ibdev, "reg_dmabuf_mr: length %llu, the device supports 1..%llu\n",
			  length, dev->rdev->attr.max_mr_size);
		return ERR_PTR(-EINVAL);
	}
	err = rs_default_netid(dev, ibpd, &netid);
	if (err) {
		ibdev_dbg(&dev->ibdev, "reg_dmabuf_mr: no network identity (GID) yet\n");
		return ERR_PTR(err);
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	umem_dmabuf = ib_umem_dmabuf_get_pinned(ibpd->device, offset, length,
						fd, access);
	if (IS_ERR(umem_dmabuf)) {
		err = PTR_ERR(umem_dmabuf);
		ibdev_dbg(&dev->ibdev, "reg_dmabuf_mr: fd %d [%#llx, +%llu): %d\n",
			  fd, offset, length, err);
		goto err_mr;
	}
	mr->umem = &umem_dmabuf->umem;
	err = rs_reg_umem_mr(ibpd, mr, length, iova, access, netid);
	if (err)
		goto err_umem;
	mr->kind = "dmabuf";
	return &mr->ibmr;

err_umem:
	ib_umem_release(mr->umem);
err_mr:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * Whether REREG_MR (RS_CAP_REREG_MR) can make the change in place, so the
 * MR keeps its keys: a user MR with pages of its own (not ODP, and not
 * becoming ODP), a new PD of the same network identity (the keys stay in
 * their identity's table).  Otherwise the MR is registered anew.
 */
static bool rs_rereg_in_place(struct rs_ibdev *dev, struct rs_mr *mr,
			      int access, struct ib_pd *pd)
{
	return (dev->rdev->caps & RS_CAP_REREG_MR) && !mr->odp &&
	       !(access & IB_ACCESS_ON_DEMAND) &&
	       to_rspd(pd)->netid == to_rspd(mr->ibmr.pd)->netid;
}

/*
 * REREG_MR of @mr with the new PD, access and translation ib_core asked
 * for (@flags).  A new translation's pages are pinned before the command
 * and the old ones released after it: once it completed the device no
 * longer reaches them (it swaps the translation between two packets).
 * ib_core updates the MR's PD, IOVA and length itself when the MR stays.
 */
static int rs_rereg_exec(struct rs_ibdev *dev, struct rs_mr *mr, int flags,
			 u64 start, u64 length, u64 iova, int access,
			 struct ib_pd *pd)
{
	struct rs_cmd_rereg_mr params = {};
	struct ib_umem *umem = NULL;
	unsigned long pgsz = 0;
	struct rs_pbl pbl;
	bool indirect;
	u32 npages;
	int err;

	params.handle = mr->handle;
	if (flags & IB_MR_REREG_PD) {
		params.flags |= RS_REREG_PD;
		params.pd = to_rspd(pd)->handle;
	}
	if (flags & IB_MR_REREG_ACCESS) {
		params.flags |= RS_REREG_ACCESS;
		params.access = rs_access_from_ib(access);
	}
	if (flags & IB_MR_REREG_TRANS) {
		if (!length || length > dev->rdev->attr.max_mr_size)
			return -EINVAL;
		umem = ib_umem_get(&dev->ibdev, start, length, access);
		if (IS_ERR(umem))
			return PTR_ERR(umem);
		pgsz = ib_umem_find_best_pgsz(umem,
					      dev->rdev->attr.page_size_cap,
					      iova);
		if (!pgsz) {
			err = -EINVAL;
			goto err_umem;
		}
		npages = ib_umem_num_dma_blocks(umem, pgsz);
		err = rs_pbl_build(dev, &pbl, umem, pgsz, npages, &indirect);
		if (err) {
			rs_pbl_free(dev, &pbl);
			goto err_umem;
		}
		params.flags |= RS_REREG_TRANS;
		params.iova = iova;
		params.length = length;
		params.pbl_addr = pbl.top_dma;
		params.npages = npages;
		params.page_shift = order_base_2(pgsz);
		params.mr_flags = indirect ? RS_MR_F_PBL_INDIRECT : 0;
	}
	err = rs_com_rereg_mr(dev, &params);
	if (umem)
		rs_pbl_free(dev, &pbl);
	if (err == -EBUSY) {
		/*
		 * Windows are bound to the MR (IBTA 10.6.7.2.6): soft-RoCE's
		 * errno for an MR that has them (rxe_dereg_mr).
		 */
		ibdev_dbg(&dev->ibdev, "rereg_mr: MR %#x has windows bound\n",
			  mr->ibmr.lkey);
		err = -EINVAL;
	}
	if (err)
		goto err_umem;
	if (umem) {
		ib_umem_release(mr->umem);
		mr->umem = umem;
		mr->ibmr.page_size = pgsz;
	}
	if (flags & IB_MR_REREG_ACCESS)
		mr->access = access;
	atomic64_inc(&dev->cnt[RS_CNT_MR_REREG_IN_PLACE]);
	return 0;

err_umem:
	if (umem)
		ib_umem_release(umem);
	return err;
}

/*
 * ibv_rereg_mr.  As mlx5 and soft-RoCE: a change of access or PD keeps
 * the keys, and so does a new translation, which mlx5 makes in place when
 * its mkey has room for it and this device always can (soft-RoCE does
 * not offer it: EOPNOTSUPP); the MR stays as it was on failure.  The
 * keys change when the MR is registered anew: an ODP MR (as mlx5 with a
 * new translation), an MR becoming ODP, a PD of another network identity,
 * a device without REREG_MR; ib_core then deregisters the old MR.  Write
 * access for pages pinned read-only needs a new translation: EACCES
 * (ib_umem_check_rereg, as mlx5 and rxe).  Windows bound: EINVAL.
 */
struct ib_mr *rs_ib_rereg_user_mr(struct ib_mr *ibmr, int flags,
				  u64 start, u64 length, u64 iova,
				  int access, struct ib_pd *ibpd,
				  struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibmr->device);
	struct rs_mr *mr = to_rsmr(ibmr);
	int err;

	if (flags & ~IB_MR_REREG_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	if (!mr->umem) {
		ibdev_dbg(ibmr->device, "rereg_mr: MR %#x is not a user MR\n",
			  ibmr->lkey);
		return ERR_PTR(-EINVAL);
	}
	/*
	 * The MR keeps no reference to the dma-buf's fd to register it anew,
	 * and umem->address is an offset into the dma-buf, not a user
	 * address: the user deregisters and registers again.
	 */
	if (mr->umem->is_dmabuf) {
		ibdev_dbg(ibmr->device, "rereg_mr: MR %#x is a dma-buf MR\n",
			  ibmr->lkey);
		return ERR_PTR(-EOPNOTSUPP);
	}
	err = ib_umem_check_rereg(mr->umem, flags, access);
	if (err)
		return ERR_PTR(err);
	if (!(flags & IB_MR_REREG_PD))
		ibpd = ibmr->pd;
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if (access & ~RS_IB_ACCESS_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	if (rs_rereg_in_place(dev, mr, access, ibpd)) {
		err = rs_rereg_exec(dev, mr, flags, start, length, iova, access,
				    ibpd);
		return err ? ERR_PTR(err) : NULL;
	}
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->umem->length;
		iova = ibmr->iova;
		/* An implicit ODP MR's root umem has no range. */
		if (mr->odp && mr->odp->implicit) {
			start = 0;
			length = U64_MAX;
			iova = 0;
		}
	}
	return rs_ib_reg_user_mr(ibpd, start, length, iova, access, udata);
}

int rs_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibmr->device);
	struct rs_mr *mr = to_rsmr(ibmr);
	int err;

	if (mr->odp) {
		err = rs_odp_dereg_mr(dev, mr);
		if (err)
			return err;
		kfree(mr);
		return 0;
	}
	if (!mr->dma) {
		/*
		 * The handle names the slot; its tag is the key's, which a
		 * fast registration changes (ib_update_fast_reg_key).
		 */
		u32 handle = (mr->handle & ~RS_MKEY_TAG_MASK) |
			     (ibmr->lkey & RS_MKEY_TAG_MASK);

		err = rs_com_dereg_mr(dev, handle);
		if (err)
			return err;
	}
	if (mr->pages)
		dma_free_coherent(rs_dma_dev(dev), mr->max_pages * sizeof(u64),
				  mr->pages, mr->pages_dma);
	ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}

/*
 * The device has no all-memory rkey: a DMA MR is the reserved local key,
 * for kernel PDs and local access only (IB_PD_UNSAFE_GLOBAL_RKEY fails).
 */
struct ib_mr *rs_ib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct rs_mr *mr;

	if (ibpd->uobject || (access & ~IB_ACCESS_LOCAL_WRITE))
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->dma = true;
	mr->ibmr.lkey = RS_LOCAL_DMA_LKEY;
	mr->ibmr.rkey = RS_LOCAL_DMA_LKEY;
	return &mr->ibmr;
}

struct ib_mr *rs_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct rs_cmd_reg_mr params = {};
	struct rs_com_key_result result;
	struct rs_mr *mr;
	u32 netid;
	int err;

	if (type != IB_MR_TYPE_MEM_REG || ibpd->uobject)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > RS_MAX_FRMR_PAGES) {
		ibdev_dbg(&dev->ibdev, "alloc_mr: %u pages, the device supports 1..%u\n",
			  max_num_sg, RS_MAX_FRMR_PAGES);
		return ERR_PTR(-EINVAL);
	}
	err = rs_default_netid(dev, ibpd, &netid);
	if (err)
		return ERR_PTR(err);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->max_pages = max_num_sg;
	mr->pages = dma_alloc_coherent(rs_dma_dev(dev), max_num_sg * sizeof(u64),
				       &mr->pages_dma, GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_mr;
	}

	params.npages = max_num_sg;
	params.pd = to_rspd(ibpd)->handle;
	params.page_shift = RS_MR_MIN_PAGE_SHIFT;
	params.flags = RS_MR_F_FAST_REG;
	params.gid_index = netid;
	err = rs_com_reg_mr(dev, &params, &result);
	if (err)
		goto err_pages;
	mr->handle = result.handle;
	mr->ibmr.lkey = result.key;
	mr->kind = "fast_reg";
	mr->netid = netid;
	mr->ibmr.rkey = result.key;
	atomic64_inc(&dev->cnt[RS_CNT_MR_REGISTERED]);
	return &mr->ibmr;

err_pages:
	dma_free_coherent(rs_dma_dev(dev), max_num_sg * sizeof(u64), mr->pages,
			  mr->pages_dma);
err_mr:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * Memory windows (type 1 and 2B): the device keeps their binding; user
 * space binds them with BIND_MW work requests on its own QPs.
 */
int rs_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibmw->device);
	struct rs_cmd_alloc_mw params = {};
	struct rs_com_key_result result;
	u32 netid;
	int err;

	if (!(dev->rdev->caps & RS_CAP_MW))
		return -EOPNOTSUPP;
	err = rs_default_netid(dev, ibmw->pd, &netid);
	if (err)
		return err;
	params.pd = to_rspd(ibmw->pd)->handle;
	params.gid_index = netid;
	params.type = ibmw->type == IB_MW_TYPE_1 ? RS_MW_TYPE_1 :
							 RS_MW_TYPE_2;
	err = rs_com_alloc_mw(dev, &params, &result);
	if (err)
		return err;
	ibmw->rkey = result.key;
	container_of(ibmw, struct rs_mw, ibmw)->handle = result.handle;
	return 0;
}

int rs_ib_dealloc_mw(struct ib_mw *ibmw)
{
	return rs_com_dealloc_mw(to_rsdev(ibmw->device),
				 container_of(ibmw, struct rs_mw, ibmw)->handle);
}

static int rs_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct rs_mr *mr = to_rsmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = addr;
	return 0;
}

int rs_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct rs_mr *mr = to_rsmr(ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, rs_set_page);
}
