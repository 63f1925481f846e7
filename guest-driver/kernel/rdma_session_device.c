// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: the device and its port (query_device,
 * query_port, ...), the GID table mirrored into the device's network
 * identities (ADD_GID/DEL_GID) and the counters (rdma statistic).
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
	[RS_CNT_DEV_RAM_DMA_READ].name = "ram_dma_read_bytes",
	[RS_CNT_DEV_RAM_DMA_WRITE].name = "ram_dma_write_bytes",
	[RS_CNT_DEV_PEER_DMA_READ].name = "peer_dma_read_bytes",
	[RS_CNT_DEV_PEER_DMA_WRITE].name = "peer_dma_write_bytes",
	[RS_CNT_DEV_DATA_DMA_REFUSED].name = "data_dma_refused",
	[RS_CNT_DEV_VLAN_RX_DROPPED].name = "vlan_rx_dropped",
	[RS_CNT_DEV_ECN_CE_RECEIVED].name = "ecn_ce_received",
	[RS_CNT_DEV_CNP_SENT].name = "cnp_sent",
	[RS_CNT_DEV_CNP_RECEIVED].name = "cnp_received",
	[RS_CNT_DEV_CNP_IGNORED].name = "cnp_ignored",
	[RS_CNT_DEV_DCQCN_RATE_REDUCTIONS].name = "dcqcn_rate_reductions",
	[RS_CNT_DEV_DB_MMIO_WRITES].name = "db_mmio_writes",
	[RS_CNT_DEV_DB_RECORD_PICKUPS].name = "db_record_pickups",
};

static_assert(RS_CNT_NUM - RS_CNT_DRV_NUM ==
	      sizeof(struct rs_device_stats) / sizeof(u64));

/* ------------------------------------------------------------------ */
/* Device and port                                                    */
/* ------------------------------------------------------------------ */

int rs_ib_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
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

int rs_ib_query_port(struct ib_device *ibdev, u32 port,
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

int rs_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
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

enum rdma_link_layer rs_ib_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

int rs_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index > 0) {
		ibdev_dbg(ibdev, "query_pkey: index %u, the P_Key table has one entry\n",
			  index);
		return -EINVAL;
	}
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

void rs_ib_get_dev_fw_str(struct ib_device *ibdev, char *str)
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
	struct rs_cmd_add_gid params = {};
	struct rs_com_add_gid_result result;
	u16 vlan_id = 0xffff;
	int err;

	memcpy(params.gid, attr->gid.raw, sizeof(params.gid));
	params.index = attr->index;
	params.type = ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) ?
		      RS_GID_ROCE_V2_IPV4 : RS_GID_ROCE_V2_IPV6;
	/* The host assigns the identity (ABI 1.6); the device ignores it. */
	params.vni = 0;
	/*
	 * A VLAN interface's GID (ABI 1.9): its RoCE frames are tagged with
	 * the VID by the device.  Without RS_CAP_VLAN they go untagged, as
	 * before.
	 */
	err = rdma_read_gid_l2_fields(attr, &vlan_id, NULL);
	if (err)
		return err;
	if (vlan_id <= RS_VLAN_VID_MAX) {
		if (dev->rdev->caps & RS_CAP_VLAN)
			params.vlan = cpu_to_le16(RS_GID_VLAN_VALID | vlan_id);
		else
			ibdev_warn(&dev->ibdev, "GID %u is on VLAN %u: the device (no RS_CAP_VLAN) sends it untagged\n",
				   attr->index, vlan_id);
	}
	err = rs_com_add_gid(dev, &params, &result);
	if (err || !(dev->rdev->caps & RS_CAP_HOST_NETID))
		return err;
	dev->gid_netid[attr->index] = result.netid;
	ibdev_info(&dev->ibdev, "GID %u (%pI6c) in network identity %u, VNI %u\n",
		   attr->index, attr->gid.raw, result.netid, result.vni);
	if (params.vlan)
		ibdev_info(&dev->ibdev, "GID %u on VLAN %u\n", attr->index, vlan_id);
	return 0;
}

int rs_ib_add_gid(const struct ib_gid_attr *attr, void **context)
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
		if (!rs_com_del_gid(dev, attr->index))
			err = rs_ib_cmd_add_gid(dev, attr);
	}
	if (!err)
		set_bit(attr->index, dev->gid_map);
	mutex_unlock(&dev->gid_lock);
	if (err)
		ibdev_warn(&dev->ibdev, "ADD_GID %u (%pI6) failed: %d\n",
			   attr->index, attr->gid.raw, err);
	return err;
}

int rs_ib_del_gid(const struct ib_gid_attr *attr, void **context)
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
	err = rs_com_del_gid(dev, attr->index);
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
void rs_netid_refresh(struct work_struct *w)
{
	struct rs_ibdev *dev = container_of(w, struct rs_ibdev, netid_work);
	struct rs_netid_attr *a, id[RS_MAX_NETIDS] = {};
	struct rs_cmd_query params;
	union ib_gid *gids;
	dma_addr_t dma;
	unsigned long i;
	u8 n, netid;

	a = dma_alloc_coherent(rs_dma_dev(dev), sizeof(*a), &dma, GFP_KERNEL);
	gids = kcalloc(dev->max_gids, sizeof(*gids), GFP_KERNEL);
	if (!a || !gids)
		goto out;
	for (n = 1; n < RS_MAX_NETIDS; n++) {
		memset(&params, 0, sizeof(params));
		params.resp_addr = dma;
		params.resp_len = sizeof(*a);
		params.handle = n;
		if (!rs_com_query_netid(dev, &params))
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
int rs_default_netid(struct rs_ibdev *dev, struct ib_pd *ibpd,
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
/* Counters                                                           */
/* ------------------------------------------------------------------ */

/*
 * The counters there are: the device's (QUERY_STATS) came with ABI 1.4,
 * its transport counters with RS_CAP_DEVICE_COUNTERS (ABI 1.6), its data
 * buffer counters with ABI 1.8, the VLAN one with RS_CAP_VLAN (ABI 1.9),
 * the ECN ones with RS_CAP_ECN (ABI 1.10), the doorbell ones with ABI
 * 1.11 (with or without RS_CAP_DB_RECORD: db-record=off counts too).
 */
static int rs_stats_num(struct rs_ibdev *dev)
{
	if ((dev->rdev->caps & RS_CAP_DEVICE_COUNTERS) &&
	    (dev->rdev->caps & RS_CAP_VLAN) && (dev->rdev->caps & RS_CAP_ECN) &&
	    FIELD_GET(R_RS_VERSION_MINOR_MASK, dev->rdev->version) >= 11)
		return RS_CNT_NUM;
	if ((dev->rdev->caps & RS_CAP_DEVICE_COUNTERS) &&
	    (dev->rdev->caps & RS_CAP_VLAN) && (dev->rdev->caps & RS_CAP_ECN))
		return RS_CNT_DEV_V110_END;
	if ((dev->rdev->caps & RS_CAP_DEVICE_COUNTERS) &&
	    (dev->rdev->caps & RS_CAP_VLAN))
		return RS_CNT_DEV_V19_END;
	if ((dev->rdev->caps & RS_CAP_DEVICE_COUNTERS) &&
	    FIELD_GET(R_RS_VERSION_MINOR_MASK, dev->rdev->version) >= 8)
		return RS_CNT_DEV_V18_END;
	if (dev->rdev->caps & RS_CAP_DEVICE_COUNTERS)
		return RS_CNT_DEV_V16_END;
	if (FIELD_GET(R_RS_VERSION_MINOR_MASK, dev->rdev->version) >= 4)
		return RS_CNT_DEV_V14_END;
	return RS_CNT_DRV_NUM;
}

struct rdma_hw_stats *rs_ib_alloc_hw_port_stats(struct ib_device *ibdev,
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
	struct rs_cmd_query params = {};
	dma_addr_t dma;
	int err;

	st = dma_alloc_coherent(d, sizeof(*st), &dma, GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	params.resp_addr = dma;
	params.resp_len = sizeof(*st);
	err = rs_com_query_stats(dev, &params);
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
	if (!err && rs_stats_num(dev) >= RS_CNT_DEV_V16_END) {
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
	if (!err && rs_stats_num(dev) >= RS_CNT_DEV_V18_END) {
		value[RS_CNT_DEV_RAM_DMA_READ] = st->ram_dma_read_bytes;
		value[RS_CNT_DEV_RAM_DMA_WRITE] = st->ram_dma_write_bytes;
		value[RS_CNT_DEV_PEER_DMA_READ] = st->peer_dma_read_bytes;
		value[RS_CNT_DEV_PEER_DMA_WRITE] = st->peer_dma_write_bytes;
		value[RS_CNT_DEV_DATA_DMA_REFUSED] = st->data_dma_refused;
	}
	if (!err && rs_stats_num(dev) >= RS_CNT_DEV_V19_END)
		value[RS_CNT_DEV_VLAN_RX_DROPPED] = st->vlan_rx_dropped;
	if (!err && rs_stats_num(dev) >= RS_CNT_DEV_V110_END) {
		value[RS_CNT_DEV_ECN_CE_RECEIVED] = st->ecn_ce_received;
		value[RS_CNT_DEV_CNP_SENT] = st->cnp_sent;
		value[RS_CNT_DEV_CNP_RECEIVED] = st->cnp_received;
		value[RS_CNT_DEV_CNP_IGNORED] = st->cnp_ignored;
		value[RS_CNT_DEV_DCQCN_RATE_REDUCTIONS] =
			st->dcqcn_rate_reductions;
	}
	if (!err && rs_stats_num(dev) == RS_CNT_NUM) {
		value[RS_CNT_DEV_DB_MMIO_WRITES] = st->db_mmio_writes;
		value[RS_CNT_DEV_DB_RECORD_PICKUPS] = st->db_record_pickups;
	}
	dma_free_coherent(d, sizeof(*st), st, dma);
	return err;
}

int rs_ib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
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
