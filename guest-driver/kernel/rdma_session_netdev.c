// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: the Ethernet net_device (the LAN path).
 *
 * One TX and one RX ring of struct rs_lan_desc, created with
 * RS_CMD_CREATE_LAN_QUEUE at open and destroyed at stop.  The driver posts
 * descriptors and writes the free-running producer index to RS_DB_LAN_TX /
 * RS_DB_LAN_RX of doorbell page 0; the device writes each descriptor back
 * with RS_LAN_S_PHASE set to the lap's phase (1 on the first lap of the
 * ring, 0 on the second, ...) and signals MSI-X vector RS_LAN_VECTOR.  One
 * NAPI context cleans the TX ring and receives from the RX ring.
 *
 * Descriptor i (free-running) is done when its phase bit equals
 * !((i >> log) & 1).  The driver posts it with the opposite value, which
 * is also what the device wrote back on the previous lap.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/interrupt.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>

#include "rdma_session.h"

#define RS_LAN_TX_LOG		8	/* 256 TX descriptors */
#define RS_LAN_RX_LOG		8	/* 256 RX buffers */
#define RS_LAN_MIN_MTU		ETH_MIN_MTU
#define RS_LAN_MAX_MTU		9000
#define RS_LAN_SPEED		SPEED_100000
/* Descriptors one frame may take: its head and every fragment. */
#define RS_LAN_TX_MAX_DESC	(MAX_SKB_FRAGS + 1)

struct rs_tx_buf {
	struct sk_buff *skb;		/* on the frame's last descriptor */
	dma_addr_t dma;
	u32 len;
	bool page;			/* skb_frag_dma_map, not dma_map_single */
};

struct rs_rx_buf {
	struct sk_buff *skb;
	dma_addr_t dma;
};

struct rs_lan_ring {
	struct rs_lan_desc *desc;
	dma_addr_t desc_dma;
	u32 log;
	u32 size;
	u32 pi;				/* free-running producer index */
	u32 ci;				/* free-running consumer index */
	bool created;			/* CREATE_LAN_QUEUE succeeded */
};

struct rs_ndev {
	struct rs_dev *rdev;
	struct net_device *netdev;
	struct napi_struct napi;
	int irq;
	bool irq_requested;

	struct rs_lan_ring tx;
	struct rs_tx_buf *tx_buf;
	struct rs_lan_ring rx;
	struct rs_rx_buf *rx_buf;
	u32 rx_buf_len;

	struct work_struct rx_mode_work;
	bool up;			/* rs_open() succeeded, rs_stop() not run */

	struct u64_stats_sync tx_syncp;
	u64 tx_packets;
	u64 tx_bytes;
	u64 tx_errors;
	u64 tx_dropped;
	struct u64_stats_sync rx_syncp;
	u64 rx_packets;
	u64 rx_bytes;
	u64 rx_errors;
	u64 rx_dropped;
};

static inline u8 rs_lan_posted_status(const struct rs_lan_ring *r, u32 idx)
{
	/* Lap 0: 0; lap 1: PHASE; ... (the "not done yet" value). */
	return ((idx >> r->log) & 1) ? RS_LAN_S_PHASE : 0;
}

static inline bool rs_lan_done(const struct rs_lan_ring *r, u32 idx, u8 *status)
{
	u8 st = READ_ONCE(r->desc[idx & (r->size - 1)].status);

	*status = st;
	return (st & RS_LAN_S_PHASE) != rs_lan_posted_status(r, idx);
}

static inline u32 rs_tx_free(const struct rs_ndev *nd)
{
	return nd->tx.size - (READ_ONCE(nd->tx.pi) - READ_ONCE(nd->tx.ci));
}

static void rs_ndev_ring_db(struct rs_ndev *nd, u32 off, u32 pi)
{
	/* writel() orders the descriptor stores before the doorbell. */
	writel(pi & RS_DB_INDEX_MASK, nd->rdev->db + off);
}

/* ------------------------------------------------------------------ */
/* Admin commands                                                     */
/* ------------------------------------------------------------------ */

static int rs_ndev_cmd_create_lan_queue(struct rs_ndev *nd, struct rs_lan_ring *r, u8 type)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_CREATE_LAN_QUEUE;
	cmd.create_lan_queue.ring_addr = r->desc_dma;
	cmd.create_lan_queue.type = type;
	cmd.create_lan_queue.log_size = r->log;
	cmd.create_lan_queue.vector = RS_LAN_VECTOR;
	return rs_dev_admin_exec(nd->rdev, &cmd, NULL);
}

static int rs_ndev_cmd_destroy_lan_queue(struct rs_ndev *nd, u8 type)
{
	return rs_dev_cmd_destroy(nd->rdev, RS_CMD_DESTROY_LAN_QUEUE, type);
}

static void rs_apply_rx_mode(struct rs_ndev *nd)
{
	unsigned int flags = READ_ONCE(nd->netdev->flags);
	struct rs_admin_cmd cmd = {};
	int err;

	cmd.hdr.opcode = RS_CMD_SET_LAN_RX_MODE;
	cmd.set_lan_rx_mode.flags = RS_LAN_RX_BROADCAST;
	if (flags & IFF_PROMISC)
		cmd.set_lan_rx_mode.flags |= RS_LAN_RX_PROMISC;
	/* No multicast filter: every multicast frame is accepted. */
	if ((flags & IFF_ALLMULTI) || (flags & IFF_MULTICAST))
		cmd.set_lan_rx_mode.flags |= RS_LAN_RX_ALLMULTI;
	err = rs_dev_admin_exec(nd->rdev, &cmd, NULL);
	if (err)
		netdev_warn(nd->netdev, "SET_LAN_RX_MODE %#x failed: %d\n",
			    cmd.set_lan_rx_mode.flags, err);
}

static void rs_rx_mode_work(struct work_struct *work)
{
	struct rs_ndev *nd = container_of(work, struct rs_ndev, rx_mode_work);

	if (!netif_running(nd->netdev))
		return;		/* rs_open() sets it */
	rs_apply_rx_mode(nd);
}

/* Atomic context (netif_addr_lock held): the command runs in a work item. */
static void rs_set_rx_mode(struct net_device *netdev)
{
	struct rs_ndev *nd = netdev_priv(netdev);

	schedule_work(&nd->rx_mode_work);
}

/* ------------------------------------------------------------------ */
/* Rings and buffers                                                  */
/* ------------------------------------------------------------------ */

static int rs_ring_alloc(struct rs_ndev *nd, struct rs_lan_ring *r, u32 log)
{
	r->log = log;
	r->size = 1u << log;
	r->pi = 0;
	r->ci = 0;
	r->created = false;
	/* Page aligned (>= RS_RING_ALIGN) and zeroed: status 0 = lap 0 posted. */
	r->desc = dma_alloc_coherent(&nd->rdev->pdev->dev, r->size * sizeof(*r->desc),
				     &r->desc_dma, GFP_KERNEL);
	return r->desc ? 0 : -ENOMEM;
}

static void rs_ring_free(struct rs_ndev *nd, struct rs_lan_ring *r)
{
	if (r->desc)
		dma_free_coherent(&nd->rdev->pdev->dev, r->size * sizeof(*r->desc),
				  r->desc, r->desc_dma);
	r->desc = NULL;
}

static void rs_tx_unmap(struct rs_ndev *nd, struct rs_tx_buf *b)
{
	struct device *dev = &nd->rdev->pdev->dev;

	if (!b->len)
		return;
	if (b->page)
		dma_unmap_page(dev, b->dma, b->len, DMA_TO_DEVICE);
	else
		dma_unmap_single(dev, b->dma, b->len, DMA_TO_DEVICE);
	b->len = 0;
}

static void rs_tx_free_all(struct rs_ndev *nd)
{
	u32 i;

	for (i = 0; i < nd->tx.size; i++) {
		struct rs_tx_buf *b = &nd->tx_buf[i];

		rs_tx_unmap(nd, b);
		if (b->skb) {
			dev_kfree_skb_any(b->skb);
			b->skb = NULL;
		}
	}
	netdev_reset_queue(nd->netdev);
}

/* Give slot idx & mask a fresh buffer; returns -ENOMEM and leaves it empty. */
static int rs_rx_alloc_buf(struct rs_ndev *nd, struct rs_rx_buf *b, gfp_t gfp)
{
	struct device *dev = &nd->rdev->pdev->dev;
	struct sk_buff *skb;
	dma_addr_t dma;

	skb = __netdev_alloc_skb_ip_align(nd->netdev, nd->rx_buf_len, gfp);
	if (!skb)
		return -ENOMEM;
	dma = dma_map_single(dev, skb->data, nd->rx_buf_len, DMA_FROM_DEVICE);
	if (dma_mapping_error(dev, dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}
	b->skb = skb;
	b->dma = dma;
	return 0;
}

static void rs_rx_free_all(struct rs_ndev *nd)
{
	struct device *dev = &nd->rdev->pdev->dev;
	u32 i;

	for (i = 0; i < nd->rx.size; i++) {
		struct rs_rx_buf *b = &nd->rx_buf[i];

		if (!b->skb)
			continue;
		dma_unmap_single(dev, b->dma, nd->rx_buf_len, DMA_FROM_DEVICE);
		dev_kfree_skb_any(b->skb);
		b->skb = NULL;
	}
}

/* Post the buffer of slot idx & mask as descriptor idx. */
static void rs_rx_post(struct rs_ndev *nd, u32 idx)
{
	struct rs_lan_ring *r = &nd->rx;
	struct rs_lan_desc *d = &r->desc[idx & (r->size - 1)];
	struct rs_rx_buf *b = &nd->rx_buf[idx & (r->size - 1)];

	d->addr = b->dma;
	d->len = nd->rx_buf_len;
	d->flags = 0;
	d->rsvd = 0;
	d->status = rs_lan_posted_status(r, idx);
}

static int rs_rx_fill(struct rs_ndev *nd)
{
	u32 i;
	int err;

	for (i = 0; i < nd->rx.size; i++) {
		err = rs_rx_alloc_buf(nd, &nd->rx_buf[i], GFP_KERNEL);
		if (err)
			return err;
		rs_rx_post(nd, i);
	}
	nd->rx.pi = nd->rx.size;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Data path                                                          */
/* ------------------------------------------------------------------ */

static void rs_tx_post(struct rs_ndev *nd, u32 idx, dma_addr_t dma, u32 len,
		       bool page, bool more)
{
	struct rs_lan_ring *r = &nd->tx;
	u32 slot = idx & (r->size - 1);
	struct rs_lan_desc *d = &r->desc[slot];
	struct rs_tx_buf *b = &nd->tx_buf[slot];

	b->dma = dma;
	b->len = len;
	b->page = page;
	b->skb = NULL;
	d->addr = dma;
	d->len = len;
	d->flags = more ? RS_LAN_F_MORE : 0;
	d->rsvd = 0;
	d->status = rs_lan_posted_status(r, idx);
}

static netdev_tx_t rs_start_xmit(struct sk_buff *skb, struct net_device *netdev)
{
	struct netdev_queue *txq = netdev_get_tx_queue(netdev, 0);
	struct rs_ndev *nd = netdev_priv(netdev);
	struct device *dev = &nd->rdev->pdev->dev;
	u32 headlen, nfrags, ndesc, idx, i, len;
	dma_addr_t dma;
	bool ring;

	if (skb_put_padto(skb, ETH_ZLEN)) {
		u64_stats_update_begin(&nd->tx_syncp);
		nd->tx_dropped++;
		u64_stats_update_end(&nd->tx_syncp);
		return NETDEV_TX_OK;
	}
	if (skb_shinfo(skb)->nr_frags + 1 > RS_LAN_MAX_FRAGS && skb_linearize(skb))
		goto drop;

	headlen = skb_headlen(skb);
	nfrags = skb_shinfo(skb)->nr_frags;
	ndesc = nfrags + (headlen ? 1 : 0);
	if (unlikely(!ndesc || skb->len > RS_LAN_MAX_FRAME))
		goto drop;

	if (unlikely(rs_tx_free(nd) < ndesc)) {
		/* Should not happen: the queue stops before the ring fills. */
		netif_stop_queue(netdev);
		return NETDEV_TX_BUSY;
	}

	idx = nd->tx.pi;
	if (headlen) {
		dma = dma_map_single(dev, skb->data, headlen, DMA_TO_DEVICE);
		if (dma_mapping_error(dev, dma))
			goto drop;
		rs_tx_post(nd, idx++, dma, headlen, false, nfrags != 0);
	}
	for (i = 0; i < nfrags; i++) {
		const skb_frag_t *frag = &skb_shinfo(skb)->frags[i];
		u32 len = skb_frag_size(frag);

		dma = skb_frag_dma_map(dev, frag, 0, len, DMA_TO_DEVICE);
		if (dma_mapping_error(dev, dma))
			goto unmap;
		rs_tx_post(nd, idx++, dma, len, true, i + 1 < nfrags);
	}
	nd->tx_buf[(idx - 1) & (nd->tx.size - 1)].skb = skb;
	skb_tx_timestamp(skb);
	/* BQL: account before the completion can be seen; skb may go after. */
	len = skb->len;
	ring = __netdev_tx_sent_queue(txq, len, netdev_xmit_more());

	/* The descriptors are complete before the index moves. */
	smp_store_release(&nd->tx.pi, idx);

	if (unlikely(rs_tx_free(nd) < RS_LAN_TX_MAX_DESC)) {
		netif_stop_queue(netdev);
		/* Pairs with the barrier in rs_tx_clean(). */
		smp_mb();
		if (rs_tx_free(nd) >= RS_LAN_TX_MAX_DESC)
			netif_start_queue(netdev);
	}
	if (ring || netif_queue_stopped(netdev))
		rs_ndev_ring_db(nd, RS_DB_LAN_TX, idx);
	return NETDEV_TX_OK;

unmap:
	while (idx != nd->tx.pi)
		rs_tx_unmap(nd, &nd->tx_buf[--idx & (nd->tx.size - 1)]);
drop:
	dev_kfree_skb_any(skb);
	u64_stats_update_begin(&nd->tx_syncp);
	nd->tx_dropped++;
	u64_stats_update_end(&nd->tx_syncp);
	return NETDEV_TX_OK;
}

static void rs_tx_clean(struct rs_ndev *nd, int budget)
{
	struct net_device *netdev = nd->netdev;
	struct rs_lan_ring *r = &nd->tx;
	u32 pkts = 0, bytes = 0, errs = 0;
	u32 ci = r->ci;
	u32 pi;
	u8 st;

	/* Pairs with the release in rs_start_xmit(): descriptors before pi. */
	pi = smp_load_acquire(&r->pi);

	while (ci != pi && rs_lan_done(r, ci, &st)) {
		struct rs_tx_buf *b = &nd->tx_buf[ci & (r->size - 1)];

		dma_rmb();
		if (st & RS_LAN_S_ERR)
			errs++;
		rs_tx_unmap(nd, b);
		if (b->skb) {
			pkts++;
			bytes += b->skb->len;
			napi_consume_skb(b->skb, budget);
			b->skb = NULL;
		}
		ci++;
	}
	if (ci == r->ci)
		return;

	netdev_completed_queue(netdev, pkts, bytes);
	u64_stats_update_begin(&nd->tx_syncp);
	nd->tx_packets += pkts;
	nd->tx_bytes += bytes;
	nd->tx_errors += errs;
	u64_stats_update_end(&nd->tx_syncp);

	/* Free the slots before looking at the queue state. */
	smp_store_release(&r->ci, ci);
	/* Pairs with the barrier after netif_stop_queue() in rs_start_xmit(). */
	smp_mb();
	if (unlikely(netif_queue_stopped(netdev)) &&
	    rs_tx_free(nd) >= RS_LAN_TX_MAX_DESC) {
		netif_tx_lock(netdev);
		if (netif_queue_stopped(netdev) && netif_running(netdev) &&
		    rs_tx_free(nd) >= RS_LAN_TX_MAX_DESC)
			netif_wake_queue(netdev);
		netif_tx_unlock(netdev);
	}
}

static int rs_rx_poll(struct rs_ndev *nd, int budget)
{
	struct device *dev = &nd->rdev->pdev->dev;
	struct net_device *netdev = nd->netdev;
	struct rs_lan_ring *r = &nd->rx;
	u32 pkts = 0, bytes = 0, errs = 0, drops = 0;
	int done = 0;
	u8 st;

	while (done < budget && rs_lan_done(r, r->ci, &st)) {
		u32 slot = r->ci & (r->size - 1);
		struct rs_rx_buf *b = &nd->rx_buf[slot];
		struct sk_buff *skb = b->skb;
		dma_addr_t dma = b->dma;
		u32 len;

		dma_rmb();
		len = READ_ONCE(r->desc[slot].len);
		done++;
		if (unlikely((st & RS_LAN_S_ERR) || len < ETH_HLEN || len > nd->rx_buf_len)) {
			/* Keep the buffer: it goes back to the device as it is. */
			errs++;
		} else if (rs_rx_alloc_buf(nd, b, GFP_ATOMIC)) {
			drops++;
		} else {
			dma_unmap_single(dev, dma, nd->rx_buf_len, DMA_FROM_DEVICE);
			skb_put(skb, len);
			skb->protocol = eth_type_trans(skb, netdev);
			pkts++;
			bytes += len;
			napi_gro_receive(&nd->napi, skb);
		}
		r->ci++;
		rs_rx_post(nd, r->pi++);
	}
	if (done)
		rs_ndev_ring_db(nd, RS_DB_LAN_RX, r->pi);

	if (pkts || errs || drops) {
		u64_stats_update_begin(&nd->rx_syncp);
		nd->rx_packets += pkts;
		nd->rx_bytes += bytes;
		nd->rx_errors += errs;
		nd->rx_dropped += drops;
		u64_stats_update_end(&nd->rx_syncp);
	}
	return done;
}

static int rs_napi_poll(struct napi_struct *napi, int budget)
{
	struct rs_ndev *nd = container_of(napi, struct rs_ndev, napi);
	int done;

	rs_tx_clean(nd, budget);
	done = rs_rx_poll(nd, budget);
	if (done < budget)
		napi_complete_done(napi, done);
	/*
	 * The device signals the vector after every write-back, so a
	 * descriptor completed after the last look raises a new interrupt.
	 */
	return done;
}

static irqreturn_t rs_lan_irq(int irq, void *data)
{
	struct rs_ndev *nd = data;

	napi_schedule(&nd->napi);
	return IRQ_HANDLED;
}

/* ------------------------------------------------------------------ */
/* net_device_ops                                                     */
/* ------------------------------------------------------------------ */

static u32 rs_rx_buf_len(u32 mtu)
{
	return mtu + ETH_HLEN + VLAN_HLEN;
}

static void rs_lan_teardown(struct rs_ndev *nd)
{
	if (nd->tx.created)
		rs_ndev_cmd_destroy_lan_queue(nd, RS_LAN_TXQ);
	if (nd->rx.created)
		rs_ndev_cmd_destroy_lan_queue(nd, RS_LAN_RXQ);
	nd->tx.created = false;
	nd->rx.created = false;
}

static void rs_lan_free(struct rs_ndev *nd)
{
	if (nd->tx_buf)
		rs_tx_free_all(nd);
	if (nd->rx_buf)
		rs_rx_free_all(nd);
	kvfree(nd->tx_buf);
	kvfree(nd->rx_buf);
	nd->tx_buf = NULL;
	nd->rx_buf = NULL;
	rs_ring_free(nd, &nd->tx);
	rs_ring_free(nd, &nd->rx);
}

static int rs_open(struct net_device *netdev)
{
	struct rs_ndev *nd = netdev_priv(netdev);
	struct rs_dev *rdev = nd->rdev;
	int err;

	nd->rx_buf_len = rs_rx_buf_len(netdev->mtu);
	err = rs_ring_alloc(nd, &nd->tx, RS_LAN_TX_LOG);
	if (!err)
		err = rs_ring_alloc(nd, &nd->rx, RS_LAN_RX_LOG);
	if (err)
		goto err_free;
	nd->tx_buf = kvcalloc(nd->tx.size, sizeof(*nd->tx_buf), GFP_KERNEL);
	nd->rx_buf = kvcalloc(nd->rx.size, sizeof(*nd->rx_buf), GFP_KERNEL);
	if (!nd->tx_buf || !nd->rx_buf) {
		err = -ENOMEM;
		goto err_free;
	}
	err = rs_rx_fill(nd);
	if (err)
		goto err_free;

	err = request_irq(nd->irq, rs_lan_irq, IRQF_SHARED, netdev->name, nd);
	if (err) {
		netdev_err(netdev, "cannot request IRQ %d: %d\n", nd->irq, err);
		goto err_free;
	}
	nd->irq_requested = true;
	napi_enable(&nd->napi);

	err = rs_ndev_cmd_create_lan_queue(nd, &nd->rx, RS_LAN_RXQ);
	if (err) {
		netdev_err(netdev, "CREATE_LAN_QUEUE (RX) failed: %d\n", err);
		goto err_napi;
	}
	nd->rx.created = true;
	err = rs_ndev_cmd_create_lan_queue(nd, &nd->tx, RS_LAN_TXQ);
	if (err) {
		netdev_err(netdev, "CREATE_LAN_QUEUE (TX) failed: %d\n", err);
		goto err_queues;
	}
	nd->tx.created = true;

	/*
	 * The receive filter before the first RX doorbell: the doorbell
	 * flushes what the device's network layer queued while the ring was
	 * empty, and with the reset filter (broadcast only) the multicast
	 * frames among them (IPv6 ND, MLD) would be dropped.
	 */
	rs_apply_rx_mode(nd);
	rs_ndev_ring_db(nd, RS_DB_LAN_RX, nd->rx.pi);

	netdev_reset_queue(netdev);
	if (rs_rd32(rdev, A_RS_STATUS) & R_RS_STATUS_LINK_UP_MASK)
		netif_carrier_on(netdev);
	else
		netif_carrier_off(netdev);
	nd->up = true;
	netif_start_queue(netdev);
	return 0;

err_queues:
	rs_lan_teardown(nd);
err_napi:
	napi_disable(&nd->napi);
	free_irq(nd->irq, nd);
	nd->irq_requested = false;
err_free:
	rs_lan_free(nd);
	return err;
}

static int rs_stop(struct net_device *netdev)
{
	struct rs_ndev *nd = netdev_priv(netdev);

	/* Also after a failed reopen in rs_change_mtu(): nothing to undo. */
	if (!nd->up)
		return 0;
	nd->up = false;
	netif_tx_disable(netdev);
	cancel_work_sync(&nd->rx_mode_work);
	/* The device stops using the rings before their buffers go. */
	rs_lan_teardown(nd);
	napi_disable(&nd->napi);
	if (nd->irq_requested)
		free_irq(nd->irq, nd);
	nd->irq_requested = false;
	rs_lan_free(nd);
	return 0;
}

static int rs_change_mtu(struct net_device *netdev, int new_mtu)
{
	bool running = netif_running(netdev);
	int err;

	/* The RX buffers follow the MTU: reopen with the new size. */
	if (running)
		rs_stop(netdev);
	WRITE_ONCE(netdev->mtu, new_mtu);
	if (!running)
		return 0;
	err = rs_open(netdev);
	if (err) {
		netdev_err(netdev, "reopen for MTU %d failed: %d\n", new_mtu, err);
		dev_close(netdev);
	}
	return err;
}

static void rs_get_stats64(struct net_device *netdev, struct rtnl_link_stats64 *s)
{
	struct rs_ndev *nd = netdev_priv(netdev);
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&nd->tx_syncp);
		s->tx_packets = nd->tx_packets;
		s->tx_bytes = nd->tx_bytes;
		s->tx_errors = nd->tx_errors;
		s->tx_dropped = nd->tx_dropped;
	} while (u64_stats_fetch_retry(&nd->tx_syncp, start));
	do {
		start = u64_stats_fetch_begin(&nd->rx_syncp);
		s->rx_packets = nd->rx_packets;
		s->rx_bytes = nd->rx_bytes;
		s->rx_errors = nd->rx_errors;
		s->rx_dropped = nd->rx_dropped;
	} while (u64_stats_fetch_retry(&nd->rx_syncp, start));
}

static const struct net_device_ops rs_netdev_ops = {
	.ndo_open = rs_open,
	.ndo_stop = rs_stop,
	.ndo_start_xmit = rs_start_xmit,
	.ndo_set_rx_mode = rs_set_rx_mode,
	.ndo_change_mtu = rs_change_mtu,
	.ndo_get_stats64 = rs_get_stats64,
	.ndo_validate_addr = eth_validate_addr,
};

/* ------------------------------------------------------------------ */
/* ethtool                                                            */
/* ------------------------------------------------------------------ */

static void rs_get_drvinfo(struct net_device *netdev, struct ethtool_drvinfo *info)
{
	struct rs_ndev *nd = netdev_priv(netdev);

	strscpy(info->driver, RS_DRV_NAME, sizeof(info->driver));
	snprintf(info->fw_version, sizeof(info->fw_version), "abi %u.%u",
		 (nd->rdev->version >> R_RS_VERSION_MAJOR_SHIFT) & 0xffff,
		 (nd->rdev->version >> R_RS_VERSION_MINOR_SHIFT) & 0xffff);
	strscpy(info->bus_info, pci_name(nd->rdev->pdev), sizeof(info->bus_info));
}

static int rs_get_link_ksettings(struct net_device *netdev,
				 struct ethtool_link_ksettings *ks)
{
	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ethtool_link_ksettings_zero_link_mode(ks, advertising);
	ks->base.port = PORT_OTHER;
	ks->base.autoneg = AUTONEG_DISABLE;
	if (netif_carrier_ok(netdev)) {
		ks->base.speed = RS_LAN_SPEED;
		ks->base.duplex = DUPLEX_FULL;
	} else {
		ks->base.speed = SPEED_UNKNOWN;
		ks->base.duplex = DUPLEX_UNKNOWN;
	}
	return 0;
}

static void rs_get_ringparam(struct net_device *netdev, struct ethtool_ringparam *ring,
			     struct kernel_ethtool_ringparam *kring,
			     struct netlink_ext_ack *extack)
{
	ring->rx_max_pending = 1u << RS_MAX_LAN_LOG;
	ring->tx_max_pending = 1u << RS_MAX_LAN_LOG;
	ring->rx_pending = 1u << RS_LAN_RX_LOG;
	ring->tx_pending = 1u << RS_LAN_TX_LOG;
}

static const struct ethtool_ops rs_ethtool_ops = {
	.get_drvinfo = rs_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = rs_get_link_ksettings,
	.get_ringparam = rs_get_ringparam,
};

/* ------------------------------------------------------------------ */
/* Probe and remove                                                   */
/* ------------------------------------------------------------------ */

/* Port events (hard IRQ context, called under the AEQ lock). */
void rs_netdev_link_event(struct rs_dev *rdev, bool up)
{
	struct net_device *netdev = rdev->netdev;

	if (!netdev)
		return;
	if (up)
		netif_carrier_on(netdev);
	else
		netif_carrier_off(netdev);
}

static void rs_netdev_set(struct rs_dev *rdev, struct net_device *netdev)
{
	unsigned long flags;

	/* The AEQ handler reads rdev->netdev under the AEQ lock. */
	spin_lock_irqsave(&rdev->admin.aeq_lock, flags);
	rdev->netdev = netdev;
	spin_unlock_irqrestore(&rdev->admin.aeq_lock, flags);
}

int rs_netdev_probe(struct rs_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct net_device *netdev;
	struct rs_ndev *nd;
	u8 mac[ETH_ALEN];
	u32 lo, hi;
	int err;

	if (!(rdev->caps & RS_CAP_LAN))
		dev_warn(dev, "device does not report RS_CAP_LAN; trying the LAN path anyway\n");
	if (rdev->nvecs <= RS_LAN_VECTOR) {
		dev_err(dev, "%d MSI-X vectors: the LAN queues need vector %d\n",
			rdev->nvecs, RS_LAN_VECTOR);
		return -ENOSPC;
	}

	netdev = alloc_etherdev(sizeof(*nd));
	if (!netdev)
		return -ENOMEM;
	SET_NETDEV_DEV(netdev, dev);
	nd = netdev_priv(netdev);
	nd->rdev = rdev;
	nd->netdev = netdev;
	nd->irq = pci_irq_vector(rdev->pdev, RS_LAN_VECTOR);
	INIT_WORK(&nd->rx_mode_work, rs_rx_mode_work);
	u64_stats_init(&nd->tx_syncp);
	u64_stats_init(&nd->rx_syncp);

	/* The MAC: QUERY_DEVICE, else the MAC registers. */
	ether_addr_copy(mac, rdev->attr.mac);
	if (!is_valid_ether_addr(mac)) {
		lo = rs_rd32(rdev, A_RS_MAC_LO);
		hi = rs_rd32(rdev, A_RS_MAC_HI);
		mac[0] = lo;
		mac[1] = lo >> 8;
		mac[2] = lo >> 16;
		mac[3] = lo >> 24;
		mac[4] = hi;
		mac[5] = hi >> 8;
	}
	if (is_valid_ether_addr(mac)) {
		eth_hw_addr_set(netdev, mac);
	} else {
		dev_warn(dev, "device MAC %pM is not valid: using a random one\n", mac);
		eth_hw_addr_random(netdev);
	}

	netdev->netdev_ops = &rs_netdev_ops;
	netdev->ethtool_ops = &rs_ethtool_ops;
	netdev->min_mtu = RS_LAN_MIN_MTU;
	netdev->max_mtu = RS_LAN_MAX_MTU;
	netdev->hw_features = NETIF_F_SG;
	netdev->features = NETIF_F_SG;
	netdev->watchdog_timeo = 5 * HZ;
	netif_napi_add(netdev, &nd->napi, rs_napi_poll);
	netif_carrier_off(netdev);

	rs_netdev_set(rdev, netdev);
	err = register_netdev(netdev);
	if (err) {
		rs_netdev_set(rdev, NULL);
		netif_napi_del(&nd->napi);
		free_netdev(netdev);
		return err;
	}
	netdev_info(netdev, "rdma-session LAN port, MAC %pM, link %s\n", netdev->dev_addr,
		    (rs_rd32(rdev, A_RS_STATUS) & R_RS_STATUS_LINK_UP_MASK) ? "up" : "down");
	return 0;
}

void rs_netdev_remove(struct rs_dev *rdev)
{
	struct net_device *netdev = rdev->netdev;
	struct rs_ndev *nd;

	if (!netdev)
		return;
	nd = netdev_priv(netdev);
	unregister_netdev(netdev);	/* closes it: rs_stop() */
	cancel_work_sync(&nd->rx_mode_work);
	rs_netdev_set(rdev, NULL);
	cancel_work_sync(&rdev->notify_peers);
	netif_napi_del(&nd->napi);
	free_netdev(netdev);
}
