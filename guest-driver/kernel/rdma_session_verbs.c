// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: the ib_device (RoCEv2, one port on the LAN
 * net_device) and its control verbs, backed by admin commands
 * (docs/specs/rdma-session.rst, "Admin commands").  The data path of
 * kernel QPs, SRQs and CQs is in rdma_session_datapath.c, the objects in
 * rdma_session_ib.h.
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

#define RS_ROCE_V2_PORT		4791

static const struct rdma_stat_desc rs_ib_stat_descs[RS_CNT_NUM] = {
	[RS_CNT_ADMIN_CMDS].name = "admin_cmds",
	[RS_CNT_ADMIN_ERRS].name = "admin_errors",
	[RS_CNT_SESSIONS].name = "sessions_created",
	[RS_CNT_QP_CREATED].name = "qps_created",
	[RS_CNT_MR_REGISTERED].name = "mrs_registered",
	[RS_CNT_MR_REREG_IN_PLACE].name = "mrs_reregistered_in_place",
	[RS_CNT_TX_PACKETS].name = "lan_tx_packets",
	[RS_CNT_RX_PACKETS].name = "lan_rx_packets",
	[RS_CNT_TX_BYTES].name = "lan_tx_bytes",
	[RS_CNT_RX_BYTES].name = "lan_rx_bytes",
	[RS_CNT_ODP_FAULT_EVENTS].name = "odp_fault_events",
	[RS_CNT_ODP_FAULT_DROPPED].name = "odp_fault_events_dropped",
	[RS_CNT_ODP_FAULTS_RESOLVED].name = "odp_faults_handled",
	[RS_CNT_ODP_FAULT_PAGES].name = "odp_fault_pages_mapped",
	[RS_CNT_ODP_FAULTS_FAILED].name = "odp_faults_failed",
	[RS_CNT_ODP_STALE].name = "odp_resolves_stale",
	[RS_CNT_ODP_INVALIDATIONS].name = "odp_invalidations_issued",
	[RS_CNT_ODP_PREFETCHES].name = "odp_prefetches",
	[RS_CNT_ODP_CHILDREN].name = "odp_implicit_children",
	[RS_CNT_ODP_CHILDREN_FREED].name = "odp_implicit_children_freed",
	[RS_CNT_ODP_CHILDREN_REFUSED].name = "odp_implicit_children_refused",
	[RS_CNT_PATH_MIGRATIONS].name = "path_migrations",
	/* The device's (QUERY_STATS). */
	[RS_CNT_DEV_ODP_FAULTS].name = "odp_faults",
	[RS_CNT_DEV_ODP_RESOLVED_PAGES].name = "odp_resolved_pages",
	[RS_CNT_DEV_ODP_INVALIDATIONS].name = "odp_invalidations",
	[RS_CNT_DEV_ODP_FAULT_FAILS].name = "odp_fault_fails",
	[RS_CNT_DEV_ODP_PAUSES_SENT].name = "odp_pauses_sent",
	[RS_CNT_DEV_ODP_PAUSES_RCVD].name = "odp_pauses_rcvd",
	[RS_CNT_DEV_ODP_RESUMES_RCVD].name = "odp_resumes_rcvd",
	[RS_CNT_DEV_RNR_NAKS_RCVD].name = "rnr_naks_rcvd",
	[RS_CNT_DEV_RNR_NAKS_SENT].name = "rnr_naks_sent",
	[RS_CNT_DEV_SEQ_NAKS_SENT].name = "seq_naks_sent",
	[RS_CNT_DEV_SEQ_NAKS_RCVD].name = "seq_naks_rcvd",
	[RS_CNT_DEV_RETRANSMITS].name = "retransmits",
	[RS_CNT_DEV_ACK_TIMEOUTS].name = "ack_timeouts",
	[RS_CNT_DEV_ICRC_DROPS].name = "icrc_drops",
	[RS_CNT_DEV_TX_PACKETS].name = "roce_tx_packets",
	[RS_CNT_DEV_TX_BYTES].name = "roce_tx_bytes",
	[RS_CNT_DEV_RX_PACKETS].name = "roce_rx_packets",
	[RS_CNT_DEV_RX_BYTES].name = "roce_rx_bytes",
	[RS_CNT_DEV_PATH_FAILOVERS].name = "path_failovers",
};

static_assert(RS_CNT_NUM - RS_CNT_DRV_NUM ==
	      sizeof(struct rs_device_stats) / sizeof(u64));

enum rs_mmap_type {
	RS_MMAP_DB,
	RS_MMAP_MEM,
};

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

/* XRC domains, SRQs and QPs: only a device that reports them. */
static inline bool rs_has_xrc(struct rs_ibdev *dev)
{
	return dev->rdev->caps & RS_CAP_XRC;
}

/* DC initiators and targets (RS_CAP_DC, ABI 1.5). */
static inline bool rs_has_dc(struct rs_ibdev *dev)
{
	return dev->rdev->caps & RS_CAP_DC;
}

static inline bool rs_is_dc(const struct rs_qp *qp)
{
	return qp->rs_type == RS_QPT_DCI || qp->rs_type == RS_QPT_DCT;
}

/*
 * Optional driver input of a verb: at most sizeof(*out) bytes are read,
 * more must be zero (a newer provider's fields this driver does not know).
 */
static int rs_udata_in(struct ib_udata *udata, void *out, size_t size)
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
/* Admin command helpers                                              */
/* ------------------------------------------------------------------ */

int rs_ib_cmd_exec(struct rs_ibdev *dev, struct rs_admin_cmd *cmd,
		   struct rs_admin_cqe *cqe)
{
	int err;

	atomic64_inc(&dev->cnt[RS_CNT_ADMIN_CMDS]);
	err = rs_dev_admin_exec(dev->rdev, cmd, cqe);
	if (err) {
		atomic64_inc(&dev->cnt[RS_CNT_ADMIN_ERRS]);
		ibdev_dbg(&dev->ibdev, "admin command %#x: %d\n",
			  cmd->hdr.opcode, err);
	}
	return err;
}

/*
 * Destroy a device object.  A dead admin queue (-EIO: timeout, device
 * reset or removal) means the device no longer holds the object, so the
 * driver side is released anyway and the verb succeeds.
 */
int rs_ib_cmd_destroy(struct rs_ibdev *dev, u8 opcode, u32 handle)
{
	struct rs_admin_cmd cmd = {};
	int err;

	cmd.hdr.opcode = opcode;
	cmd.destroy.handle = handle;
	err = rs_ib_cmd_exec(dev, &cmd, NULL);
	if (err == -EIO)
		return 0;
	/* -EBUSY (an MR with bound windows): the caller's to handle. */
	if (err && err != -EBUSY)
		ibdev_warn(&dev->ibdev, "destroy (opcode %#x) of %#x failed: %d\n",
			   opcode, handle, err);
	return err;
}

/* ------------------------------------------------------------------ */
/* Queue memory and mmap entries                                      */
/* ------------------------------------------------------------------ */

static int rs_buf_alloc(struct rs_ibdev *dev, struct rs_buf *b, size_t size)
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

static void rs_buf_free(struct rs_ibdev *dev, struct rs_buf *b)
{
	if (!b->va)
		return;
	if (b->mapped)
		dma_unmap_single(rs_dma_dev(dev), b->dma, b->size, DMA_BIDIRECTIONAL);
	/* Pages still mapped by a process keep their own reference. */
	free_pages_exact(b->va, b->size);
	b->va = NULL;
}

static struct rdma_user_mmap_entry *
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

static void rs_mmap_remove(struct rdma_user_mmap_entry **e)
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
/* Device and port                                                    */
/* ------------------------------------------------------------------ */

static int rs_ib_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
			      struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibdev);
	const struct rs_device_attr *da = &dev->rdev->attr;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		ibdev_dbg(ibdev, "query_device: driver input is not supported\n");
		return -EINVAL;
	}

	memset(a, 0, sizeof(*a));
	a->fw_ver = da->abi_version;
	a->sys_image_guid = ibdev->node_guid;
	a->max_mr_size = da->max_mr_size;
	a->page_size_cap = da->page_size_cap;
	a->vendor_id = RS_PCI_VENDOR_ID;
	a->vendor_part_id = RS_PCI_DEVICE_ID;
	a->hw_ver = dev->rdev->pdev->revision;
	a->max_qp = da->max_qp;
	a->max_qp_wr = da->max_qp_wr;
	a->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
			      IB_DEVICE_RC_RNR_NAK_GEN |
			      IB_DEVICE_MEM_MGT_EXTENSIONS;
	/*
	 * FLUSH to global visibility and ATOMIC WRITE; never to persistence:
	 * guest RAM is no persistence domain the device reaches.
	 */
	if (dev->rdev->caps & RS_CAP_FLUSH)
		a->device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL;
	if (dev->rdev->caps & RS_CAP_ATOMIC_WRITE)
		a->device_cap_flags |= IB_DEVICE_ATOMIC_WRITE;
	/* User SRQs only: rs_ib_modify_srq(). */
	if (dev->rdev->caps & RS_CAP_SRQ)
		a->device_cap_flags |= IB_DEVICE_SRQ_RESIZE;
	/*
	 * ib_device_attr has no XRC domain limit (nor has ibv_device_attr):
	 * the device's max_xrcds is enforced by the device, CREATE_XRCD
	 * failing with RS_STATUS_NO_RESOURCES.
	 */
	if (rs_has_xrc(dev))
		a->device_cap_flags |= IB_DEVICE_XRC;
	a->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	a->max_send_sge = da->max_sge;
	a->max_recv_sge = da->max_sge;
	a->max_sge_rd = da->max_sge;
	a->max_cq = da->max_cq;
	/* A CQ of n entries holds n - 1 completions (power-of-two ring). */
	a->max_cqe = da->max_cqe - 1;
	a->max_mr = da->max_mr;
	a->max_pd = da->max_pd;
	a->max_qp_rd_atom = da->max_qp_rd_atom;
	a->max_qp_init_rd_atom = da->max_qp_rd_atom;
	a->max_res_rd_atom = da->max_qp_rd_atom * da->max_qp;
	/* Atomic with respect to the device's own operations only. */
	a->atomic_cap = (dev->rdev->caps & RS_CAP_ATOMIC) ? IB_ATOMIC_HCA :
							     IB_ATOMIC_NONE;
	a->max_ah = da->max_ah;
	if (dev->rdev->caps & RS_CAP_SRQ) {
		a->max_srq = da->max_srq;
		a->max_srq_wr = da->max_srq_wr;
		a->max_srq_sge = da->max_srq_sge;
	}
	if (dev->rdev->caps & RS_CAP_MCAST) {
		a->max_mcast_grp = da->max_mcast_grp;
		a->max_mcast_qp_attach = da->max_mcast_qp_attach;
		a->max_total_mcast_qp_attach = da->max_mcast_grp *
					       da->max_mcast_qp_attach;
	}
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 16;
	a->max_fast_reg_page_list_len = RS_MAX_FRMR_PAGES;
	if (dev->rdev->caps & RS_CAP_MW) {
		a->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
				       IB_DEVICE_MEM_WINDOW_TYPE_2B;
		a->max_mw = da->max_mw;
	}
	rs_odp_query_device(dev, a);
	return 0;
}

static bool rs_port_up(struct rs_ibdev *dev)
{
	struct net_device *nd = dev->rdev->netdev;

	if (nd)
		return netif_running(nd) && netif_carrier_ok(nd);
	return dev->rdev->port_attr.state == RS_PORT_ACTIVE;
}

static int rs_ib_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *pa)
{
	struct rs_ibdev *dev = to_rsdev(ibdev);
	const struct rs_port_attr *p = &dev->rdev->port_attr;
	struct net_device *nd = dev->rdev->netdev;
	enum ib_mtu max_mtu = p->max_mtu ? (enum ib_mtu)p->max_mtu : IB_MTU_4096;
	bool up = rs_port_up(dev);

	/* The core zeroes *pa before calling. */
	pa->max_mtu = max_mtu;
	pa->active_mtu = nd ? min(iboe_get_mtu(nd->mtu), max_mtu) : max_mtu;
	pa->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	pa->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
			      IB_PORT_PHYS_STATE_DISABLED;
	pa->gid_tbl_len = dev->max_gids;
	pa->pkey_tbl_len = 1;
	pa->port_cap_flags = IB_PORT_CM_SUP;
	pa->max_msg_sz = dev->rdev->attr.max_msg_size;
	pa->ip_gids = true;
	/* 100 Gb/s as 4x EDR. */
	pa->active_speed = IB_SPEED_EDR;
	pa->active_width = IB_WIDTH_4X;
	pa->max_vl_num = 1;
	return 0;
}

static int rs_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *im)
{
	struct ib_port_attr pa = {};
	int err;

	err = ib_query_port(ibdev, port, &pa);
	if (err)
		return err;
	im->pkey_tbl_len = pa.pkey_tbl_len;
	im->gid_tbl_len = pa.gid_tbl_len;
	im->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer rs_ib_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int rs_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index > 0) {
		ibdev_dbg(ibdev, "query_pkey: index %u, the P_Key table has one entry\n",
			  index);
		return -EINVAL;
	}
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static void rs_ib_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u32 v = to_rsdev(ibdev)->rdev->version;

	snprintf(str, IB_FW_VERSION_NAME_MAX, "ABI %u.%u",
		 FIELD_GET(R_RS_VERSION_MAJOR_MASK, v),
		 FIELD_GET(R_RS_VERSION_MINOR_MASK, v));
}

/* ------------------------------------------------------------------ */
/* GIDs: the device's network identities                              */
/* ------------------------------------------------------------------ */

static int rs_ib_cmd_add_gid(struct rs_ibdev *dev, const struct ib_gid_attr *attr)
{
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	cmd.hdr.opcode = RS_CMD_ADD_GID;
	memcpy(cmd.add_gid.gid, attr->gid.raw, sizeof(cmd.add_gid.gid));
	cmd.add_gid.index = attr->index;
	cmd.add_gid.type = ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) ?
			   RS_GID_ROCE_V2_IPV4 : RS_GID_ROCE_V2_IPV6;
	/* The host assigns the identity (ABI 1.6); the device ignores it. */
	cmd.add_gid.vni = 0;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err || !(dev->rdev->caps & RS_CAP_HOST_NETID))
		return err;
	dev->gid_netid[attr->index] = cqe.result1 & 0xff;
	ibdev_info(&dev->ibdev, "GID %u (%pI6c) in network identity %u, VNI %u\n",
		   attr->index, attr->gid.raw, cqe.result1 & 0xff,
		   cqe.result1 >> 8);
	return 0;
}

static int rs_ib_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct rs_ibdev *dev = to_rsdev(attr->device);
	int err;

	/* Only RoCEv2 entries are network identities of the device. */
	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return 0;
	/* The core's table has gid_tbl_len = max_gids entries. */
	if (attr->index >= dev->max_gids) {
		ibdev_warn_ratelimited(&dev->ibdev, "add_gid: index %u beyond the %u GIDs\n",
				       attr->index, dev->max_gids);
		return -EINVAL;
	}

	mutex_lock(&dev->gid_lock);
	err = rs_ib_cmd_add_gid(dev, attr);
	if (err == -EEXIST) {
		/* A slot left behind by a refused DEL_GID: replace it. */
		if (!rs_ib_cmd_destroy(dev, RS_CMD_DEL_GID, attr->index))
			err = rs_ib_cmd_add_gid(dev, attr);
	}
	if (!err)
		set_bit(attr->index, dev->gid_map);
	mutex_unlock(&dev->gid_lock);
	/* Keys live in a network identity's table: now there is one. */
	if (!err && (dev->rdev->caps & RS_CAP_INDIRECT_MKEY) &&
	    (dev->rdev->caps & RS_CAP_PATTERN_MKEY) &&
	    !test_and_set_bit(0, &dev->mkey_tested))
		queue_work(dev->wq, &dev->mkey_test);
	if (err)
		ibdev_warn(&dev->ibdev, "ADD_GID %u (%pI6) failed: %d\n",
			   attr->index, attr->gid.raw, err);
	return err;
}

static int rs_ib_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct rs_ibdev *dev = to_rsdev(attr->device);
	int err;

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return 0;
	if (attr->index >= dev->max_gids) {
		ibdev_warn_ratelimited(&dev->ibdev, "del_gid: index %u beyond the %u GIDs\n",
				       attr->index, dev->max_gids);
		return -EINVAL;
	}

	mutex_lock(&dev->gid_lock);
	err = rs_ib_cmd_destroy(dev, RS_CMD_DEL_GID, attr->index);
	if (!err || err == -EINVAL)
		clear_bit(attr->index, dev->gid_map);
	mutex_unlock(&dev->gid_lock);
	return err == -EINVAL ? 0 : err;
}

/* Whether the first @len bits of @a and @b are equal. */
static bool rs_prefix_eq(const u8 *a, const u8 *b, unsigned int len)
{
	unsigned int bytes = len / 8, bits = len % 8;

	if (memcmp(a, b, bytes))
		return false;
	return !bits || !((a[bytes] ^ b[bytes]) & (0xff00 >> bits));
}

/*
 * RS_EV_NETID_CHANGED: the host changed the network identities.  Put each
 * GID in the identity whose subnet now holds it, by the device's rule
 * (the first of identities 1-7 whose subnet contains the address, else
 * 0), from every identity's QUERY_NETID.
 */
static void rs_netid_refresh(struct work_struct *w)
{
	struct rs_ibdev *dev = container_of(w, struct rs_ibdev, netid_work);
	struct rs_netid_attr *a, id[RS_MAX_NETIDS] = {};
	struct rs_admin_cmd cmd;
	union ib_gid *gids;
	dma_addr_t dma;
	unsigned long i;
	u8 n, netid;

	a = dma_alloc_coherent(rs_dma_dev(dev), sizeof(*a), &dma, GFP_KERNEL);
	gids = kcalloc(dev->max_gids, sizeof(*gids), GFP_KERNEL);
	if (!a || !gids)
		goto out;
	for (n = 1; n < RS_MAX_NETIDS; n++) {
		memset(&cmd, 0, sizeof(cmd));
		cmd.hdr.opcode = RS_CMD_QUERY_NETID;
		cmd.query.resp_addr = dma;
		cmd.query.resp_len = sizeof(*a);
		cmd.query.handle = n;
		if (!rs_ib_cmd_exec(dev, &cmd, NULL))
			id[n] = *a;
	}
	/* The core's GID cache, outside gid_lock (add_gid takes it inside). */
	for (i = 0; i < dev->max_gids; i++)
		if (rdma_query_gid(&dev->ibdev, RS_PORT_NUM, i, &gids[i]))
			memset(&gids[i], 0, sizeof(gids[i]));
	mutex_lock(&dev->gid_lock);
	for_each_set_bit(i, dev->gid_map, dev->max_gids) {
		for (netid = 0, n = 1; n < RS_MAX_NETIDS && !netid; n++)
			if ((id[n].flags & RS_NETID_F_VALID) &&
			    rs_prefix_eq(gids[i].raw, id[n].prefix,
					 min_t(u8, id[n].prefix_len, 128)))
				netid = n;
		if (netid == dev->gid_netid[i])
			continue;
		dev->gid_netid[i] = netid;
		ibdev_info(&dev->ibdev, "GID %lu (%pI6c) now in network identity %u, VNI %u\n",
			   i, gids[i].raw, netid, netid ? id[netid].vni : 0);
	}
	mutex_unlock(&dev->gid_lock);
out:
	kfree(gids);
	if (a)
		dma_free_coherent(rs_dma_dev(dev), sizeof(*a), a, dma);
}

/*
 * The GID a key of @ibpd names in REG_MR & co.: the lowest RoCEv2 GID of
 * the PD's network identity, else the lowest.  The device keeps the key
 * in the PD's identity's table either way (ABI 1.6); the GID only holds
 * a reference.
 */
static int rs_default_netid(struct rs_ibdev *dev, struct ib_pd *ibpd,
			    u32 *index)
{
	u8 netid = ibpd ? to_rspd(ibpd)->netid : 0;
	unsigned long i, first;

	mutex_lock(&dev->gid_lock);
	first = find_first_bit(dev->gid_map, dev->max_gids);
	for_each_set_bit(i, dev->gid_map, dev->max_gids)
		if (dev->gid_netid[i] == netid)
			break;
	mutex_unlock(&dev->gid_lock);
	if (first >= dev->max_gids)
		return -EAGAIN;
	*index = i < dev->max_gids ? i : first;
	return 0;
}

/* ------------------------------------------------------------------ */
/* User contexts, PDs                                                 */
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

static int rs_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct rs_pd *pd = to_rspd(ibpd);
	struct rs_uverbs_alloc_pd_resp resp = {};
	struct rs_uverbs_alloc_pd ucmd;
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	/* A user PD may ask for the identity of one of the GIDs. */
	err = rs_udata_in(udata, &ucmd, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.flags & ~RS_UVERBS_PD_F_GID)
		return -EINVAL;
	cmd.hdr.opcode = RS_CMD_CREATE_PD;
	if (!udata)
		cmd.create_pd.flags = RS_PD_F_PRIVILEGED;
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
	cmd.create_pd.netid = pd->netid;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	pd->handle = cqe.handle;
	if (pd->netid)
		ibdev_dbg(&dev->ibdev, "PD %#x in network identity %u\n",
			  pd->handle, pd->netid);

	if (udata) {
		resp.pdn = pd->handle;
		resp.netid = pd->netid;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err) {
			rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_PD, pd->handle);
			return err;
		}
	}
	return 0;
}

static int rs_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return rs_ib_cmd_destroy(to_rsdev(ibpd->device), RS_CMD_DESTROY_PD,
				 to_rspd(ibpd)->handle);
}

/*
 * XRC domains: a device object that XRC SRQs and target QPs name.
 * ib_core shares one between processes (the inode of the file given to
 * ibv_open_xrcd) and deallocates it once nothing uses it; the device
 * refuses to destroy a domain that an SRQ or target QP still belongs to.
 */
static int rs_ib_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibxrcd->device);
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	if (!rs_has_xrc(dev))
		return -EOPNOTSUPP;
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		ibdev_dbg(&dev->ibdev, "alloc_xrcd: driver input is not supported\n");
		return -EINVAL;
	}
	cmd.hdr.opcode = RS_CMD_CREATE_XRCD;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	to_rsxrcd(ibxrcd)->handle = cqe.handle;
	return 0;
}

static int rs_ib_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return rs_ib_cmd_destroy(to_rsdev(ibxrcd->device), RS_CMD_DESTROY_XRCD,
				 to_rsxrcd(ibxrcd)->handle);
}

/* ------------------------------------------------------------------ */
/* CQs                                                                */
/* ------------------------------------------------------------------ */

static int rs_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			   struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct rs_ibdev *dev = to_rsdev(ibcq->device);
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	struct rs_cq *cq = to_rscq(ibcq);
	struct rs_uverbs_create_cq_resp resp = {};
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
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

	cmd.hdr.opcode = RS_CMD_CREATE_CQ;
	cmd.create_cq.ring_addr = cq->ring.dma;
	cmd.create_cq.log_size = cq->log;
	cmd.create_cq.comp_vector = dev->vec_base + attr->comp_vector;
	cmd.create_cq.uar = uc ? uc->uar : 0;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		goto err_free;
	cq->handle = cqe.handle;
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
	rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_CQ, cq->handle);
err_free:
	rs_buf_free(dev, &cq->ring);
	return err;
}

static int rs_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibcq->device);
	struct rs_cq *cq = to_rscq(ibcq);
	int err;

	err = rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_CQ, cq->handle);
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
static int rs_ib_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibcq->device);
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	struct rs_uverbs_resize_cq_resp resp = {};
	struct rs_uverbs_resize_cq req = {};
	struct rdma_user_mmap_entry *mentry;
	struct rs_cq *cq = to_rscq(ibcq);
	struct rs_admin_cmd cmd = {};
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

	cmd.hdr.opcode = RS_CMD_RESIZE_CQ;
	cmd.resize_cq.ring_addr = ring.dma;
	cmd.resize_cq.handle = cq->handle;
	cmd.resize_cq.log_size = log;
	cmd.resize_cq.consumer_index = req.consumer_index;
	err = rs_ib_cmd_exec(dev, &cmd, NULL);
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

static void rs_comp_irqs_free(struct rs_ibdev *dev)
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

static int rs_comp_irqs_request(struct rs_ibdev *dev)
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
		rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_SESSION_GROUP, s->group);
		rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_SESSION, s->session);
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
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
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

	cmd.hdr.opcode = RS_CMD_CREATE_SESSION;
	memcpy(cmd.create_session.dst_ip, grh->dgid.raw, 16);
	memcpy(cmd.create_session.dmac, ah->roce.dmac, ETH_ALEN);
	cmd.create_session.src_port = sport;
	cmd.create_session.dst_port = RS_ROCE_V2_PORT;
	cmd.create_session.gid_index = grh->sgid_index;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		goto err_free;
	s->session = cqe.handle;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = RS_CMD_CREATE_SESSION_GROUP;
	cmd.create_group.session[0] = s->session;
	cmd.create_group.nsessions = 1;
	cmd.create_group.policy = RS_GROUP_ROUND_ROBIN;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		goto err_session;
	s->group = cqe.handle;
	refcount_set(&s->refs, 1);
	list_add(&s->node, &dev->sessions);
	atomic64_inc(&dev->cnt[RS_CNT_SESSIONS]);
	goto out;

err_session:
	rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_SESSION, s->session);
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

static void rs_wq_free(struct rs_ibdev *dev, struct rs_wq *wq)
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
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	if (!init->xrcd) {
		ibdev_dbg(&dev->ibdev, "create_qp: XRC target QP without an XRC domain\n");
		return -EINVAL;
	}
	qp->rs_type = RS_QPT_XRC_TGT;
	qp->state = IB_QPS_RESET;
	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);

	cmd.hdr.opcode = RS_CMD_CREATE_QP;
	cmd.create_qp.qp_type = RS_QPT_XRC_TGT;
	cmd.create_qp.xrcd = to_rsxrcd(init->xrcd)->handle;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	qp->handle = cqe.handle;
	qp->qpn = cqe.result1;
	qp->ibqp.qp_num = qp->qpn;

	err = xa_err(xa_store_irq(&dev->qps, qp->qpn, qp, GFP_KERNEL));
	if (err) {
		rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_QP, qp->handle);
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
	if (ucmd->flags || ucmd->rsvd[0] || ucmd->rsvd[1] ||
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

static int rs_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			   struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	const struct rs_device_attr *da = &dev->rdev->attr;
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	struct rs_qp *qp = to_rsqp(ibqp);
	struct rs_uverbs_create_qp_resp resp = {};
	struct ib_qp_cap *cap = &init->cap;
	struct rs_uverbs_create_qp ucmd;
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	u32 sq_n, rq_n, ssge, rsge, inl;
	bool ini, has_rq, has_sq, dci, dct;
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

	if (has_sq) {
		err = rs_buf_alloc(dev, &qp->sq.ring,
				   (size_t)qp->sq.stride << qp->sq.log);
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

	cmd.hdr.opcode = RS_CMD_CREATE_QP;
	cmd.create_qp.sq_addr = has_sq ? qp->sq.ring.dma : 0;
	cmd.create_qp.rq_addr = has_rq ? qp->rq.ring.dma : 0;
	cmd.create_qp.srq = qp->srq ? qp->srq->handle : 0;
	cmd.create_qp.pd = to_rspd(ibqp->pd)->handle;
	cmd.create_qp.send_cq = has_sq ? to_rscq(init->send_cq)->handle : 0;
	cmd.create_qp.recv_cq = ini ? 0 : to_rscq(init->recv_cq)->handle;
	cmd.create_qp.qp_type = type;
	cmd.create_qp.sq_log_size = qp->sq.log;
	cmd.create_qp.rq_log_size = qp->rq.log;
	cmd.create_qp.max_send_sge = qp->sq.max_sge;
	cmd.create_qp.max_recv_sge = qp->rq.max_sge;
	cmd.create_qp.flags = qp->sig_all && has_sq ? RS_QP_F_SIGNAL_ALL : 0;
	cmd.create_qp.max_inline = has_sq ? inl : 0;
	cmd.create_qp.uar = uc ? uc->uar : 0;
	if (dct) {
		cmd.create_qp.dc_key_lo = lower_32_bits(qp->dc_key);
		cmd.create_qp.dc_key_hi = upper_32_bits(qp->dc_key);
	}
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		goto err_free;
	qp->handle = cqe.handle;
	qp->qpn = cqe.result1;
	ibqp->qp_num = qp->qpn;

	err = xa_err(xa_store_irq(&dev->qps, qp->qpn, qp, GFP_KERNEL));
	if (err)
		goto err_destroy;

	cap->max_send_wr = has_sq ? sq_n : 0;
	cap->max_recv_wr = has_rq ? rq_n : 0;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_recv_sge = qp->rq.max_sge;
	cap->max_inline_data = has_sq ? inl : 0;
	qp->cap = *cap;

	if (udata) {
		if (has_sq) {
			qp->sq.mentry = rs_mmap_insert(dev, &uc->ibuc, RS_MMAP_MEM,
						       (u64)(uintptr_t)qp->sq.ring.va,
						       qp->sq.ring.size, 0,
						       &resp.sq_mmap_key);
			if (IS_ERR(qp->sq.mentry)) {
				err = PTR_ERR(qp->sq.mentry);
				qp->sq.mentry = NULL;
				goto err_xa;
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
				goto err_xa;
			}
			resp.rq_bytes = qp->rq.ring.size;
		}
		resp.qpn = qp->qpn;
		resp.sq_log_size = qp->sq.log;
		resp.rq_log_size = qp->rq.log;
		resp.rq_stride = has_rq ? qp->rq.stride : 0;
		resp.max_inline = has_sq ? inl : 0;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_xa;
	}
	atomic64_inc(&dev->cnt[RS_CNT_QP_CREATED]);
	return 0;

err_xa:
	xa_erase_irq(&dev->qps, qp->qpn);
err_destroy:
	rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_QP, qp->handle);
err_free:
	rs_wq_free(dev, &qp->rq);
	rs_wq_free(dev, &qp->sq);
	return err;
}

static int rs_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_qp *qp = to_rsqp(ibqp);
	int err;

	err = rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_QP, qp->handle);
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
static int rs_ib_mcast(struct ib_qp *ibqp, union ib_gid *gid, u8 opcode)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_admin_cmd cmd = {};

	if (!(dev->rdev->caps & RS_CAP_MCAST))
		return -EOPNOTSUPP;
	cmd.hdr.opcode = opcode;
	memcpy(cmd.mcast.gid, gid->raw, sizeof(cmd.mcast.gid));
	cmd.mcast.qp = to_rsqp(ibqp)->handle;
	return rs_ib_cmd_exec(dev, &cmd, NULL);
}

static int rs_ib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return rs_ib_mcast(ibqp, gid, RS_CMD_ATTACH_MCAST);
}

static int rs_ib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return rs_ib_mcast(ibqp, gid, RS_CMD_DETACH_MCAST);
}

/* Back to RESET: the device forgot the queue, so does the driver. */
static void rs_wq_reset(struct rs_wq *wq)
{
	unsigned long flags;

	/* No such queue (an SRQ's QP, an XRC QP). */
	if (!wq->ring.va)
		return;
	spin_lock_irqsave(&wq->lock, flags);
	wq->pi = 0;
	wq->ci = 0;
	memset(wq->ring.va, 0, wq->ring.size);
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

static int rs_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			   struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibqp->device);
	struct rs_qp *qp = to_rsqp(ibqp);
	struct rs_session *sess = NULL;
	enum ib_qp_state cur, next;
	struct rs_admin_cmd cmd = {};
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
		/* Only 20 bits go on the wire; UCX sets all 32, as mlx5 and rxe mask. */
		a->ah.flow_label = grh->flow_label & IB_GRH_FLOWLABEL_MASK;
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

	cmd.hdr.opcode = RS_CMD_MODIFY_QP;
	cmd.modify_qp.attr_addr = dma;
	cmd.modify_qp.handle = qp->handle;
	cmd.modify_qp.attr_mask = dmask;
	err = rs_ib_cmd_exec(dev, &cmd, NULL);
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
			rs_wq_reset(&qp->sq);
			rs_wq_reset(&qp->rq);
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
	struct rs_admin_cmd cmd = {};
	struct rs_qp_attr *a;
	dma_addr_t dma;
	int err;

	a = dma_alloc_coherent(rs_dma_dev(dev), sizeof(*a), &dma, GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	cmd.hdr.opcode = RS_CMD_QUERY_QP;
	cmd.query.resp_addr = dma;
	cmd.query.resp_len = sizeof(*a);
	cmd.query.handle = qp->handle;
	err = rs_ib_cmd_exec(dev, &cmd, NULL);
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

/* ------------------------------------------------------------------ */
/* Shared receive queues                                              */
/* ------------------------------------------------------------------ */

static int rs_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			    struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibsrq->device);
	const struct rs_device_attr *da = &dev->rdev->attr;
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	struct rs_srq *srq = to_rssrq(ibsrq);
	struct rs_uverbs_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
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

	cmd.hdr.opcode = RS_CMD_CREATE_SRQ;
	cmd.create_srq.ring_addr = srq->wq.ring.dma;
	cmd.create_srq.pd = to_rspd(ibsrq->pd)->handle;
	cmd.create_srq.uar = uc ? uc->uar : 0;
	cmd.create_srq.log_size = srq->wq.log;
	cmd.create_srq.max_sge = sge;
	cmd.create_srq.srq_limit = attr->srq_limit;
	if (xrc) {
		cmd.create_srq.xrcd = to_rsxrcd(init->ext.xrc.xrcd)->handle;
		cmd.create_srq.cq = to_rscq(init->ext.cq)->handle;
	}
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		goto err_free;
	srq->handle = cqe.handle;
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
	rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_SRQ, srq->handle);
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
static int rs_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibsrq->device);
	struct rs_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rs_ucontext, ibuc);
	const struct rs_device_attr *da = &dev->rdev->attr;
	struct rs_uverbs_modify_srq_resp resp = {};
	struct rs_uverbs_modify_srq req = {};
	struct rdma_user_mmap_entry *mentry = NULL;
	struct rs_srq *srq = to_rssrq(ibsrq);
	struct rs_admin_cmd cmd = {};
	struct rs_buf ring = {}, old;
	struct rs_admin_cqe cqe;
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
	cmd.hdr.opcode = RS_CMD_MODIFY_SRQ;
	cmd.modify_srq.handle = srq->handle;
	if (mask & IB_SRQ_LIMIT) {
		cmd.modify_srq.attr_mask |= RS_SRQ_ATTR_LIMIT;
		cmd.modify_srq.srq_limit = attr->srq_limit;
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
		cmd.modify_srq.attr_mask |= RS_SRQ_ATTR_MAX_WR;
		cmd.modify_srq.ring_addr = ring.dma;
		cmd.modify_srq.log_size = log;
	}
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
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
	resp.wqes_moved = cqe.result1;
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

static int rs_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct rs_srq *srq = to_rssrq(ibsrq);

	attr->max_wr = 1u << READ_ONCE(srq->wq.log);
	attr->max_sge = srq->wq.max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

static int rs_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibsrq->device);
	struct rs_srq *srq = to_rssrq(ibsrq);
	int err;

	err = rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_SRQ, srq->handle);
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
	struct rs_admin_cqe cqe;

	if (!rs_ib_cmd_exec(p->dev, &p->cmd, &cqe))
		WRITE_ONCE(p->handle, cqe.handle);
	rs_ah_pend_put(p);
}

static void rs_ah_destroy_fn(struct work_struct *w)
{
	struct rs_ah_pend *p = container_of(w, struct rs_ah_pend, destroy_work);

	if (p->handle)
		rs_ib_cmd_destroy(p->dev, RS_CMD_DESTROY_AH, p->handle);
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

	rs_ib_cmd_destroy(dw->dev, RS_CMD_DESTROY_AH, dw->handle);
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

static int rs_ib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			   struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibah->device);
	struct rdma_ah_attr *ah_attr = init->ah_attr;
	const struct ib_global_route *grh = rdma_ah_read_grh(ah_attr);
	struct rs_uverbs_create_ah_resp resp = {};
	struct rs_ah *ah = to_rsah(ibah);
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE) {
		ibdev_dbg(&dev->ibdev, "create_ah: address vector of type %d, not RoCE\n",
			  ah_attr->type);
		return -EINVAL;
	}

	cmd.hdr.opcode = RS_CMD_CREATE_AH;
	memcpy(cmd.create_ah.dgid, grh->dgid.raw, sizeof(cmd.create_ah.dgid));
	memcpy(cmd.create_ah.dmac, ah_attr->roce.dmac, ETH_ALEN);
	cmd.create_ah.hop_limit = grh->hop_limit;
	cmd.create_ah.traffic_class = grh->traffic_class;
	cmd.create_ah.pd = to_rspd(ibah->pd)->handle;
	cmd.create_ah.flow_label = grh->flow_label & IB_GRH_FLOWLABEL_MASK;
	cmd.create_ah.gid_index = grh->sgid_index;

	if (!udata) {
		ah->av = kzalloc(sizeof(*ah->av), (init->flags & RDMA_CREATE_AH_SLEEPABLE) ?
				 GFP_KERNEL : GFP_ATOMIC);
		if (!ah->av)
			return -ENOMEM;
		memcpy(ah->av->dgid, cmd.create_ah.dgid, sizeof(ah->av->dgid));
		memcpy(ah->av->dmac, cmd.create_ah.dmac, sizeof(ah->av->dmac));
		ah->av->hop_limit = cmd.create_ah.hop_limit;
		ah->av->traffic_class = cmd.create_ah.traffic_class;
		ah->av->flow_label = cmd.create_ah.flow_label;
		ah->av->gid_index = cmd.create_ah.gid_index;
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
		p->cmd = cmd;
		refcount_set(&p->refs, 2);	/* the AH and the create work */
		ah->pend = p;
		queue_work(dev->wq, &p->create_work);
		return 0;
	}
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err) {
		rs_ah_free_av(dev, ah);
		return err;
	}
	ah->handle = cqe.handle;

	if (udata) {
		resp.ah_handle = ah->handle;
		err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (err) {
			rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_AH, ah->handle);
			return err;
		}
	}
	return 0;
}

static int rs_ib_destroy_ah(struct ib_ah *ibah, u32 flags)
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
		return rs_ib_cmd_destroy(dev, RS_CMD_DESTROY_AH, ah->handle);
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
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	struct rs_mr *mr;
	u32 netid;
	int err;

	err = rs_default_netid(dev, ibpd, &netid);
	if (err)
		return ERR_PTR(err);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	cmd.hdr.opcode = pattern ? RS_CMD_REG_PATTERN_MKEY :
				   RS_CMD_REG_INDIRECT_MKEY;
	cmd.reg_mkey.list_addr = list_dma;
	cmd.reg_mkey.pd = to_rspd(ibpd)->handle;
	cmd.reg_mkey.gid_index = netid;
	cmd.reg_mkey.nentries = nentries;
	cmd.reg_mkey.access = rs_access_from_ib(access);
	cmd.reg_mkey.repeat = repeat;
	cmd.reg_mkey.flags = flags;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	/* A key of the MR table: DEREG_MR frees it (rs_ib_dereg_mr). */
	mr->handle = cqe.handle;
	mr->ibmr.lkey = cqe.result1;
	mr->ibmr.rkey = cqe.result1;
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
 * The self-test of rs_ib_reg_mkey_list(), once the device has a network
 * identity: an indirect key over three single-page kernel MRs and a
 * pattern key over one of them, made as a kernel consumer makes them,
 * then freed; bad entry lists refused.  The outcome is logged.
 */
static void rs_mkey_selftest(struct work_struct *w)
{
	struct rs_ibdev *dev = container_of(w, struct rs_ibdev, mkey_test);
	const int acc = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			IB_ACCESS_REMOTE_READ;
	struct ib_mr *ind = ERR_PTR(-ENODEV), *pat = ERR_PTR(-ENODEV);
	struct ib_mr *bad0, *bad1;
	struct rs_mkey_entry ent[3];
	struct rs_pattern_entry pe = {};
	struct rs_admin_cmd cmd;
	struct rs_admin_cqe cqe;
	void *page[3] = {};
	dma_addr_t pbl_dma, pdma[3];
	u32 key[3] = {}, netid;
	struct ib_pd *pd;
	u64 *pbl;
	int i, err = 0;

	pd = ib_alloc_pd(&dev->ibdev, 0);
	if (IS_ERR(pd)) {
		ibdev_warn(&dev->ibdev, "mkey self-test: no PD: %ld\n", PTR_ERR(pd));
		return;
	}
	pbl = dma_alloc_coherent(rs_dma_dev(dev), 3 * sizeof(u64), &pbl_dma,
				 GFP_KERNEL);
	if (!pbl || rs_default_netid(dev, pd, &netid)) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < 3 && !err; i++) {
		page[i] = (void *)get_zeroed_page(GFP_KERNEL);
		if (!page[i]) {
			err = -ENOMEM;
			break;
		}
		pdma[i] = dma_map_single(rs_dma_dev(dev), page[i], PAGE_SIZE,
					 DMA_BIDIRECTIONAL);
		if (dma_mapping_error(rs_dma_dev(dev), pdma[i])) {
			free_page((unsigned long)page[i]);
			page[i] = NULL;
			err = -ENOMEM;
			break;
		}
		pbl[i] = cpu_to_le64(pdma[i]);
		memset(&cmd, 0, sizeof(cmd));
		cmd.hdr.opcode = RS_CMD_REG_MR;
		cmd.reg_mr.iova = pdma[i];
		cmd.reg_mr.length = PAGE_SIZE;
		cmd.reg_mr.pbl_addr = pbl_dma + i * sizeof(u64);
		cmd.reg_mr.npages = 1;
		cmd.reg_mr.pd = to_rspd(pd)->handle;
		cmd.reg_mr.page_shift = PAGE_SHIFT;
		cmd.reg_mr.access = rs_access_from_ib(acc);
		cmd.reg_mr.gid_index = netid;
		err = rs_ib_cmd_exec(dev, &cmd, &cqe);
		if (!err)
			key[i] = cqe.handle;
		ent[i].addr = cpu_to_le64(pdma[i] + 64 * i);
		ent[i].length = cpu_to_le32(1000 + 500 * i);
		ent[i].key = cpu_to_le32(key[i]);
	}
	if (err)
		goto out;
	ind = rs_ib_reg_mkey_list(pd, false, ent, 3, 0, acc);
	/* Column 1 of a 16 x 64-byte matrix in the first page. */
	pe.addr = cpu_to_le64(pdma[0] + 8);
	pe.key = cpu_to_le32(key[0]);
	pe.bytes_count = cpu_to_le32(8);
	pe.bytes_skip = cpu_to_le32(56);
	pat = rs_ib_reg_mkey_list(pd, true, &pe, 1, 16, acc);
	bad0 = rs_ib_reg_mkey_list(pd, false, ent, 0, 0, acc);
	bad1 = rs_ib_reg_mkey_list(pd, true, &pe, 1, 0, acc);
	if (IS_ERR(ind) || IS_ERR(pat) || !IS_ERR(bad0) || !IS_ERR(bad1))
		ibdev_warn(&dev->ibdev, "mkey self-test failed: indirect %d, pattern %d, no entries %d, no repeat %d\n",
			   PTR_ERR_OR_ZERO(ind), PTR_ERR_OR_ZERO(pat),
			   PTR_ERR_OR_ZERO(bad0), PTR_ERR_OR_ZERO(bad1));
	else
		ibdev_info(&dev->ibdev, "mkey self-test: indirect key %#x over MRs %#x %#x %#x, pattern key %#x, bad lists refused: ok\n",
			   ind->lkey, key[0], key[1], key[2], pat->lkey);
	if (!IS_ERR(bad0))
		ib_dereg_mr(bad0);
	if (!IS_ERR(bad1))
		ib_dereg_mr(bad1);
out:
	if (err)
		ibdev_warn(&dev->ibdev, "mkey self-test failed: %d\n", err);
	if (!IS_ERR(ind))
		ib_dereg_mr(ind);
	if (!IS_ERR(pat))
		ib_dereg_mr(pat);
	for (i = 0; i < 3; i++) {
		if (key[i])
			rs_ib_cmd_destroy(dev, RS_CMD_DEREG_MR, key[i]);
		if (page[i]) {
			dma_unmap_single(rs_dma_dev(dev), pdma[i], PAGE_SIZE,
					 DMA_BIDIRECTIONAL);
			free_page((unsigned long)page[i]);
		}
	}
	if (pbl)
		dma_free_coherent(rs_dma_dev(dev), 3 * sizeof(u64), pbl, pbl_dma);
	ib_dealloc_pd(pd);
}

static struct ib_mr *rs_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				       u64 iova, int access, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	unsigned long pgsz;
	struct rs_uverbs_reg_mr ucmd;
	struct rs_pbl pbl;
	bool indirect;
	struct rs_mr *mr;
	u32 npages, netid;
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
	pgsz = ib_umem_find_best_pgsz(mr->umem, dev->rdev->attr.page_size_cap, iova);
	if (!pgsz) {
		ibdev_dbg(&dev->ibdev,
			  "reg_mr: no page size of the device (%#llx) maps iova %#llx to the buffer\n",
			  dev->rdev->attr.page_size_cap, iova);
		err = -EINVAL;
		goto err_umem;
	}
	npages = ib_umem_num_dma_blocks(mr->umem, pgsz);

	err = rs_pbl_build(dev, &pbl, mr->umem, pgsz, npages, &indirect);
	if (err)
		goto err_pbl;

	cmd.hdr.opcode = RS_CMD_REG_MR;
	cmd.reg_mr.iova = iova;
	cmd.reg_mr.length = length;
	cmd.reg_mr.pbl_addr = pbl.top_dma;
	cmd.reg_mr.npages = npages;
	cmd.reg_mr.pd = to_rspd(ibpd)->handle;
	cmd.reg_mr.page_shift = order_base_2(pgsz);
	cmd.reg_mr.flags = indirect ? RS_MR_F_PBL_INDIRECT : 0;
	cmd.reg_mr.access = rs_access_from_ib(access);
	cmd.reg_mr.gid_index = netid;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	/* The device copied the translation: the page list can go. */
	rs_pbl_free(dev, &pbl);
	if (err)
		goto err_umem;

	mr->handle = cqe.handle;
	mr->ibmr.lkey = cqe.result1;
	mr->ibmr.rkey = cqe.result1;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mr->ibmr.page_size = pgsz;
	mr->access = access;
	mr->kind = "user";
	mr->netid = netid;
	atomic64_inc(&dev->cnt[RS_CNT_MR_REGISTERED]);
	return &mr->ibmr;

err_pbl:
	rs_pbl_free(dev, &pbl);
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
	struct rs_admin_cmd cmd = {};
	struct ib_umem *umem = NULL;
	struct rs_admin_cqe cqe;
	unsigned long pgsz = 0;
	struct rs_pbl pbl;
	bool indirect;
	u32 npages;
	int err;

	cmd.hdr.opcode = RS_CMD_REREG_MR;
	cmd.rereg_mr.handle = mr->handle;
	if (flags & IB_MR_REREG_PD) {
		cmd.rereg_mr.flags |= RS_REREG_PD;
		cmd.rereg_mr.pd = to_rspd(pd)->handle;
	}
	if (flags & IB_MR_REREG_ACCESS) {
		cmd.rereg_mr.flags |= RS_REREG_ACCESS;
		cmd.rereg_mr.access = rs_access_from_ib(access);
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
		cmd.rereg_mr.flags |= RS_REREG_TRANS;
		cmd.rereg_mr.iova = iova;
		cmd.rereg_mr.length = length;
		cmd.rereg_mr.pbl_addr = pbl.top_dma;
		cmd.rereg_mr.npages = npages;
		cmd.rereg_mr.page_shift = order_base_2(pgsz);
		cmd.rereg_mr.mr_flags = indirect ? RS_MR_F_PBL_INDIRECT : 0;
	}
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
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
static struct ib_mr *rs_ib_rereg_user_mr(struct ib_mr *ibmr, int flags,
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

static int rs_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
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

		err = rs_ib_cmd_destroy(dev, RS_CMD_DEREG_MR, handle);
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
static struct ib_mr *rs_ib_get_dma_mr(struct ib_pd *ibpd, int access)
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

static struct ib_mr *rs_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
				    u32 max_num_sg)
{
	struct rs_ibdev *dev = to_rsdev(ibpd->device);
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
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

	cmd.hdr.opcode = RS_CMD_REG_MR;
	cmd.reg_mr.npages = max_num_sg;
	cmd.reg_mr.pd = to_rspd(ibpd)->handle;
	cmd.reg_mr.page_shift = RS_MR_MIN_PAGE_SHIFT;
	cmd.reg_mr.flags = RS_MR_F_FAST_REG;
	cmd.reg_mr.gid_index = netid;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		goto err_pages;
	mr->handle = cqe.handle;
	mr->ibmr.lkey = cqe.result1;
	mr->kind = "fast_reg";
	mr->netid = netid;
	mr->ibmr.rkey = cqe.result1;
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
static int rs_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct rs_ibdev *dev = to_rsdev(ibmw->device);
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	u32 netid;
	int err;

	if (!(dev->rdev->caps & RS_CAP_MW))
		return -EOPNOTSUPP;
	err = rs_default_netid(dev, ibmw->pd, &netid);
	if (err)
		return err;
	cmd.hdr.opcode = RS_CMD_ALLOC_MW;
	cmd.alloc_mw.pd = to_rspd(ibmw->pd)->handle;
	cmd.alloc_mw.gid_index = netid;
	cmd.alloc_mw.type = ibmw->type == IB_MW_TYPE_1 ? RS_MW_TYPE_1 :
							 RS_MW_TYPE_2;
	err = rs_ib_cmd_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	ibmw->rkey = cqe.result1;
	container_of(ibmw, struct rs_mw, ibmw)->handle = cqe.handle;
	return 0;
}

static int rs_ib_dealloc_mw(struct ib_mw *ibmw)
{
	return rs_ib_cmd_destroy(to_rsdev(ibmw->device), RS_CMD_DEALLOC_MW,
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

static int rs_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
			   unsigned int *sg_offset)
{
	struct rs_mr *mr = to_rsmr(ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, rs_set_page);
}

/* ------------------------------------------------------------------ */
/* Counters                                                           */
/* ------------------------------------------------------------------ */

/*
 * The counters there are: the device's (QUERY_STATS) came with ABI 1.4,
 * its transport counters with RS_CAP_DEVICE_COUNTERS (ABI 1.6).
 */
static int rs_stats_num(struct rs_ibdev *dev)
{
	if (dev->rdev->caps & RS_CAP_DEVICE_COUNTERS)
		return RS_CNT_NUM;
	if (FIELD_GET(R_RS_VERSION_MINOR_MASK, dev->rdev->version) >= 4)
		return RS_CNT_DEV_V14_END;
	return RS_CNT_DRV_NUM;
}

static struct rdma_hw_stats *rs_ib_alloc_hw_port_stats(struct ib_device *ibdev,
						       u32 port)
{
	struct rs_ibdev *dev = to_rsdev(ibdev);

	return rdma_alloc_hw_stats_struct(rs_ib_stat_descs, rs_stats_num(dev),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* QUERY_STATS into stats->value[RS_CNT_DRV_NUM ...]. */
static int rs_ib_query_dev_stats(struct rs_ibdev *dev, u64 *value)
{
	struct device *d = rs_dma_dev(dev);
	struct rs_device_stats *st;
	struct rs_admin_cmd cmd = {};
	dma_addr_t dma;
	int err;

	st = dma_alloc_coherent(d, sizeof(*st), &dma, GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	cmd.hdr.opcode = RS_CMD_QUERY_STATS;
	cmd.query.resp_addr = dma;
	cmd.query.resp_len = sizeof(*st);
	err = rs_ib_cmd_exec(dev, &cmd, NULL);
	if (!err) {
		value[RS_CNT_DEV_ODP_FAULTS] = st->odp_faults;
		value[RS_CNT_DEV_ODP_RESOLVED_PAGES] = st->odp_resolved_pages;
		value[RS_CNT_DEV_ODP_INVALIDATIONS] = st->odp_invalidations;
		value[RS_CNT_DEV_ODP_FAULT_FAILS] = st->odp_fault_fails;
		value[RS_CNT_DEV_ODP_PAUSES_SENT] = st->odp_pauses_sent;
		value[RS_CNT_DEV_ODP_PAUSES_RCVD] = st->odp_pauses_rcvd;
		value[RS_CNT_DEV_ODP_RESUMES_RCVD] = st->odp_resumes_rcvd;
		value[RS_CNT_DEV_RNR_NAKS_RCVD] = st->rnr_naks_rcvd;
	}
	/* A device of ABI 1.4 or 1.5 wrote the first 64 bytes only. */
	if (!err && rs_stats_num(dev) == RS_CNT_NUM) {
		value[RS_CNT_DEV_RNR_NAKS_SENT] = st->rnr_naks_sent;
		value[RS_CNT_DEV_SEQ_NAKS_SENT] = st->seq_naks_sent;
		value[RS_CNT_DEV_SEQ_NAKS_RCVD] = st->seq_naks_rcvd;
		value[RS_CNT_DEV_RETRANSMITS] = st->retransmits;
		value[RS_CNT_DEV_ACK_TIMEOUTS] = st->ack_timeouts;
		value[RS_CNT_DEV_ICRC_DROPS] = st->icrc_drops;
		value[RS_CNT_DEV_TX_PACKETS] = st->tx_packets;
		value[RS_CNT_DEV_TX_BYTES] = st->tx_bytes;
		value[RS_CNT_DEV_RX_PACKETS] = st->rx_packets;
		value[RS_CNT_DEV_RX_BYTES] = st->rx_bytes;
		value[RS_CNT_DEV_PATH_FAILOVERS] = st->path_failovers;
	}
	dma_free_coherent(d, sizeof(*st), st, dma);
	return err;
}

static int rs_ib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			      u32 port, int index)
{
	struct rs_ibdev *dev = to_rsdev(ibdev);
	struct net_device *nd = dev->rdev->netdev;
	struct rtnl_link_stats64 ns = {};
	int i;

	for (i = 0; i < RS_CNT_DRV_NUM; i++)
		stats->value[i] = atomic64_read(&dev->cnt[i]);
	if (nd)
		dev_get_stats(nd, &ns);
	stats->value[RS_CNT_TX_PACKETS] = ns.tx_packets;
	stats->value[RS_CNT_RX_PACKETS] = ns.rx_packets;
	stats->value[RS_CNT_TX_BYTES] = ns.tx_bytes;
	stats->value[RS_CNT_RX_BYTES] = ns.rx_bytes;
	if (rs_stats_num(dev) == RS_CNT_DRV_NUM)
		return RS_CNT_DRV_NUM;
	/* A failed query (a dead admin queue) leaves the last values. */
	rs_ib_query_dev_stats(dev, stats->value);
	return rs_stats_num(dev);
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
	INIT_WORK(&dev->mkey_test, rs_mkey_selftest);
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
	cancel_work_sync(&dev->mkey_test);
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
