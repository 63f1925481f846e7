// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter (PCI 1af4:10f0): PCI probe and remove.
 *
 * Probe brings the function up (admin queue, async event queue), runs
 * QUERY_DEVICE and QUERY_PORT, checks the admin command path with
 * CREATE_PD/DESTROY_PD, then registers the net_device
 * (rdma_session_netdev.c) and the ib_device (rs_ib_register()).  Remove
 * undoes it in the opposite order.
 */
#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/rtnetlink.h>

#include "rdma_session.h"

static const char *const rs_port_state_names[] = {
	[RS_PORT_DOWN] = "DOWN",
	[RS_PORT_INIT] = "INIT",
	[RS_PORT_ARMED] = "ARMED",
	[RS_PORT_ACTIVE] = "ACTIVE",
};

static const char *rs_port_state_str(u8 state)
{
	if (state < ARRAY_SIZE(rs_port_state_names) && rs_port_state_names[state])
		return rs_port_state_names[state];
	return "UNKNOWN";
}

/* Async events (hard IRQ context): port events drive the carrier. */
void rs_dispatch_event(struct rs_dev *rdev, const struct rs_event *ev)
{
	switch (ev->type) {
	case RS_EV_PORT_ACTIVE:
		rs_netdev_link_event(rdev, true);
		break;
	case RS_EV_PORT_ERR:
		rs_netdev_link_event(rdev, false);
		break;
	case RS_EV_MIGRATION_NOTICE:
		/* Hard IRQ context: the announcement takes the RTNL. */
		schedule_work(&rdev->notify_peers);
		break;
	case RS_EV_DEVICE_FATAL:
		dev_err(&rdev->pdev->dev, "device fatal error (code %u)\n",
			rs_rd32(rdev, A_RS_FATAL_CODE));
		rs_netdev_link_event(rdev, false);
		break;
	default:
		break;
	}
	rs_ib_event(rdev, ev);
}

/*
 * The VM was live-migrated: the device has announced its GIDs; let the
 * stack announce the interface's addresses too (unsolicited neighbour
 * advertisements, gratuitous ARP where arp_notify is set), as
 * virtio-net does on its announce request.
 */
static void rs_notify_peers_work(struct work_struct *work)
{
	struct rs_dev *rdev = container_of(work, struct rs_dev, notify_peers);

	struct net_device *netdev;

	dev_info(&rdev->pdev->dev, "live migration: announcing the interface\n");
	rtnl_lock();
	/* rs_netdev_remove() cancels this work before it frees the netdev. */
	netdev = rdev->netdev;
	if (netdev && netdev->reg_state == NETREG_REGISTERED)
		__netdev_notify_peers(netdev);
	rtnl_unlock();
}

static irqreturn_t rs_admin_irq(int irq, void *data)
{
	struct rs_dev *rdev = data;

	/* Admin completions are polled; drain the async events here. */
	rs_dev_aeq_poll(rdev);
	return IRQ_HANDLED;
}

struct rs_probe_buf {
	struct rs_device_attr dev;
	struct rs_port_attr port;
};

static int rs_query_and_selftest(struct rs_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct rs_probe_buf *buf;
	dma_addr_t dma;
	u32 pd;
	int err;

	buf = dma_alloc_coherent(dev, sizeof(*buf), &dma, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	err = rs_dev_cmd_query(rdev, RS_CMD_QUERY_DEVICE, 0,
			       dma + offsetof(struct rs_probe_buf, dev), sizeof(buf->dev));
	if (err) {
		dev_err(dev, "QUERY_DEVICE failed: %d\n", err);
		goto out;
	}
	err = rs_dev_cmd_query(rdev, RS_CMD_QUERY_PORT, 1,
			       dma + offsetof(struct rs_probe_buf, port), sizeof(buf->port));
	if (err) {
		dev_err(dev, "QUERY_PORT failed: %d\n", err);
		goto out;
	}

	err = rs_dev_cmd_create_pd(rdev, &pd);
	if (err) {
		dev_err(dev, "self-test: CREATE_PD failed: %d\n", err);
		goto out;
	}
	err = rs_dev_cmd_destroy(rdev, RS_CMD_DESTROY_PD, pd);
	if (err) {
		dev_err(dev, "self-test: DESTROY_PD %#x failed: %d\n", pd, err);
		goto out;
	}

	rdev->attr = buf->dev;
	rdev->port_attr = buf->port;
	dev_info(dev, "rdma-session: ABI %u.%u, max_qp %u, max_cq %u, max_mr %u, max_gids %u, MAC %pM, port %s, %d MSI-X vectors\n",
		 FIELD_GET(R_RS_VERSION_MAJOR_MASK, rdev->version),
		 FIELD_GET(R_RS_VERSION_MINOR_MASK, rdev->version),
		 buf->dev.max_qp, buf->dev.max_cq, buf->dev.max_mr,
		 buf->dev.max_gids, buf->dev.mac,
		 rs_port_state_str(buf->port.state), rdev->nvecs);
out:
	dma_free_coherent(dev, sizeof(*buf), buf, dma);
	return err;
}

/*
 * Bring the function up: BARs, MSI-X, admin queue, net_device, ib_device.
 * Used by probe and again after a function level reset.
 */
static int rs_dev_up(struct rs_dev *rdev)
{
	struct pci_dev *pdev = rdev->pdev;
	struct device *dev = &pdev->dev;
	u32 magic;
	int err;

	INIT_WORK(&rdev->notify_peers, rs_notify_peers_work);
	err = pci_enable_device_mem(pdev);
	if (err) {
		dev_err(dev, "pci_enable_device_mem failed: %d\n", err);
		return err;
	}
	pci_set_master(pdev);

	err = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (err) {
		dev_err(dev, "no usable 64-bit DMA: %d\n", err);
		goto err_disable;
	}

	err = pci_request_mem_regions(pdev, RS_DRV_NAME);
	if (err) {
		dev_err(dev, "cannot claim the BARs: %d\n", err);
		goto err_disable;
	}

	rdev->regs = pci_iomap(pdev, RS_BAR_REGS, RS_REGS_SIZE);
	if (!rdev->regs) {
		dev_err(dev, "cannot map BAR %d\n", RS_BAR_REGS);
		err = -ENOMEM;
		goto err_release;
	}

	rdev->db_phys = pci_resource_start(pdev, RS_BAR_DOORBELL);
	rdev->db_len = pci_resource_len(pdev, RS_BAR_DOORBELL);
	if (rdev->db_len < RS_DB_PAGE_SIZE) {
		dev_err(dev, "doorbell BAR %d too small (%pa bytes)\n", RS_BAR_DOORBELL,
			&rdev->db_len);
		err = -ENODEV;
		goto err_unmap;
	}
	rdev->db = pci_iomap(pdev, RS_BAR_DOORBELL, RS_DB_PAGE_SIZE);
	if (!rdev->db) {
		dev_err(dev, "cannot map BAR %d\n", RS_BAR_DOORBELL);
		err = -ENOMEM;
		goto err_unmap;
	}

	magic = rs_rd32(rdev, A_RS_MAGIC);
	rdev->version = rs_rd32(rdev, A_RS_VERSION);
	if (magic != RS_MAGIC) {
		dev_err(dev, "bad magic %#x (expected %#x)\n", magic, RS_MAGIC);
		err = -ENODEV;
		goto err_unmap;
	}
	if (FIELD_GET(R_RS_VERSION_MAJOR_MASK, rdev->version) != RS_ABI_VERSION_MAJOR) {
		dev_err(dev, "unsupported ABI version %u.%u (driver: %u.x)\n",
			FIELD_GET(R_RS_VERSION_MAJOR_MASK, rdev->version),
			FIELD_GET(R_RS_VERSION_MINOR_MASK, rdev->version),
			RS_ABI_VERSION_MAJOR);
		err = -ENODEV;
		goto err_unmap;
	}
	rdev->caps = rs_rd32(rdev, A_RS_CAPS);
	rdev->num_msix = rs_rd32(rdev, A_RS_NUM_MSIX);
	if (!rdev->num_msix) {
		dev_err(dev, "device reports no MSI-X vectors\n");
		err = -ENODEV;
		goto err_unmap;
	}

	rdev->nvecs = pci_alloc_irq_vectors(pdev, 1, rdev->num_msix, PCI_IRQ_MSIX);
	if (rdev->nvecs < 0) {
		err = rdev->nvecs;
		dev_err(dev, "cannot allocate MSI-X vectors: %d\n", err);
		goto err_unmap;
	}

	err = request_irq(pci_irq_vector(pdev, RS_MSIX_ADMIN_VECTOR), rs_admin_irq, 0,
			  RS_DRV_NAME "-admin", rdev);
	if (err) {
		dev_err(dev, "cannot request the admin IRQ: %d\n", err);
		goto err_vectors;
	}
	rdev->admin_irq = true;

	err = rs_dev_admin_init(rdev);
	if (err) {
		dev_err(dev, "admin queue bring-up failed: %d\n", err);
		goto err_irq;
	}

	err = rs_query_and_selftest(rdev);
	if (err)
		goto err_admin;

	err = rs_netdev_probe(rdev);
	if (err) {
		dev_err(dev, "net_device registration failed: %d\n", err);
		goto err_admin;
	}

	err = rs_ib_register(rdev);
	if (err) {
		dev_err(dev, "ib_device registration failed: %d\n", err);
		goto err_netdev;
	}
	rdev->up = true;
	return 0;

err_netdev:
	rs_netdev_remove(rdev);
err_admin:
	rs_wr32(rdev, A_RS_CTRL, 0);
	free_irq(pci_irq_vector(pdev, RS_MSIX_ADMIN_VECTOR), rdev);
	rdev->admin_irq = false;
	rs_dev_admin_destroy(rdev);
err_irq:
	if (rdev->admin_irq)
		free_irq(pci_irq_vector(pdev, RS_MSIX_ADMIN_VECTOR), rdev);
err_vectors:
	pci_free_irq_vectors(pdev);
err_unmap:
	if (rdev->db)
		pci_iounmap(pdev, rdev->db);
	pci_iounmap(pdev, rdev->regs);
err_release:
	pci_release_mem_regions(pdev);
err_disable:
	pci_clear_master(pdev);
	pci_disable_device(pdev);
	return err;
}

static int rs_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct rs_dev *rdev;

	rdev = devm_kzalloc(&pdev->dev, sizeof(*rdev), GFP_KERNEL);
	if (!rdev)
		return -ENOMEM;
	rdev->pdev = pdev;
	pci_set_drvdata(pdev, rdev);
	return rs_dev_up(rdev);
}

/* Take the function down: the reverse of rs_dev_up(). */
static void rs_dev_down(struct rs_dev *rdev)
{
	struct pci_dev *pdev = rdev->pdev;

	rs_ib_unregister(rdev);
	/* Closes the interface: the LAN queues are destroyed. */
	rs_netdev_remove(rdev);

	/* CTRL = 0: the function resets and stops using the rings. */
	rs_wr32(rdev, A_RS_CTRL, 0);
	free_irq(pci_irq_vector(pdev, RS_MSIX_ADMIN_VECTOR), rdev);
	rs_dev_admin_destroy(rdev);
	pci_free_irq_vectors(pdev);
	pci_iounmap(pdev, rdev->db);
	pci_iounmap(pdev, rdev->regs);
	pci_release_mem_regions(pdev);
	pci_clear_master(pdev);
	pci_disable_device(pdev);
}

static void rs_remove(struct pci_dev *pdev)
{
	struct rs_dev *rdev = pci_get_drvdata(pdev);

	if (rdev->up)
		rs_dev_down(rdev);
}

/*
 * A function level reset (sysfs "reset", VFIO, error recovery) wipes
 * every queue and object of the device: unregister as for an unbind
 * before it (user contexts are disassociated, as on rmmod) and register
 * again after it.
 */
static void rs_reset_prepare(struct pci_dev *pdev)
{
	struct rs_dev *rdev = pci_get_drvdata(pdev);

	if (rdev->up) {
		dev_info(&pdev->dev, "function reset: device going down\n");
		rs_dev_down(rdev);
		rdev->up = false;
	}
}

static void rs_reset_done(struct pci_dev *pdev)
{
	struct rs_dev *rdev = pci_get_drvdata(pdev);
	int err;

	memset_after(rdev, 0, pdev);
	err = rs_dev_up(rdev);
	if (err)
		dev_err(&pdev->dev, "function reset: bring-up failed: %d\n", err);
}

static const struct pci_error_handlers rs_err_handlers = {
	.reset_prepare = rs_reset_prepare,
	.reset_done = rs_reset_done,
};

static const struct pci_device_id rs_pci_ids[] = {
	{ PCI_DEVICE(RS_PCI_VENDOR_ID, RS_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, rs_pci_ids);

static struct pci_driver rs_pci_driver = {
	.name = RS_DRV_NAME,
	.id_table = rs_pci_ids,
	.probe = rs_probe,
	.remove = rs_remove,
	.err_handler = &rs_err_handlers,
};

static int __init rs_init(void)
{
	int err;

	rs_debugfs_init();
	err = pci_register_driver(&rs_pci_driver);
	if (err)
		rs_debugfs_exit();
	return err;
}
module_init(rs_init);

static void __exit rs_exit(void)
{
	pci_unregister_driver(&rs_pci_driver);
	rs_debugfs_exit();
}
module_exit(rs_exit);

MODULE_DESCRIPTION("rdma-session RDMA adapter");
MODULE_LICENSE("GPL");
