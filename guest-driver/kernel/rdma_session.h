/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rdma-session adapter: Linux driver, shared definitions.
 */
#ifndef RDMA_SESSION_H
#define RDMA_SESSION_H

#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "hw/rdma-session/rdma-session-abi.h"

struct rs_ibdev;

#define RS_DRV_NAME		"rdma_session"

#define RS_ADMQ_LOG		6	/* 64 admin commands */
/*
 * 256 async events: ODP page faults come one per waiting QP side and
 * again every 100 ms while unresolved; a full AEQ drops events.
 */
#define RS_AEQ_LOG		8
#define RS_ADMIN_TIMEOUT_MS	5000
#define RS_READY_TIMEOUT_MS	2000

struct rs_admin {
	struct rs_admin_cmd *sq;	/* 64-byte commands */
	dma_addr_t sq_dma;
	struct rs_admin_cqe *cq;	/* 16-byte completions */
	dma_addr_t cq_dma;
	u32 depth;			/* 1 << RS_ADMQ_LOG */
	u32 pi;				/* free-running producer index */
	u32 ci;				/* free-running consumer index */
	u16 seq;			/* cmd_id generation */
	struct mutex lock;		/* serialises commands */
	bool dead;			/* timed out: no more commands */

	struct rs_event *aeq;
	dma_addr_t aeq_dma;
	u32 aeq_depth;
	u32 aeq_ci;
	spinlock_t aeq_lock;		/* AEQ consumer */
};

/*
 * One per PCI function.  What the ib_device side (rdma_session_verbs.c
 * and the files of its objects) uses: pdev, netdev, attr/port_attr
 * (QUERY_DEVICE/QUERY_PORT at probe), db/db_phys/db_len (doorbell BAR),
 * nvecs, rs_dev_admin_exec().
 */
struct rs_dev {
	struct pci_dev *pdev;
	/* Everything below is zero before rs_dev_up() (probe, after a reset). */
	bool up;			/* brought up, not reset since */
	void __iomem *regs;		/* BAR 0 */
	u32 version;
	u32 caps;			/* RS_CAPS register */
	u32 num_msix;			/* NUM_MSIX register */
	int nvecs;			/* MSI-X vectors allocated */
	bool admin_irq;
	struct rs_admin admin;

	/*
	 * Doorbell BAR (BAR 2): db maps page 0 (the kernel's page: LAN
	 * doorbells and the doorbells of kernel QPs/CQs); db_phys/db_len
	 * describe the whole BAR, RS_DB_PAGE_SIZE per user context page.
	 */
	void __iomem *db;
	phys_addr_t db_phys;
	resource_size_t db_len;

	struct rs_device_attr attr;	/* QUERY_DEVICE at probe */
	struct rs_port_attr port_attr;	/* QUERY_PORT (port 1) at probe */

	struct work_struct notify_peers;	/* after a live migration */
	struct net_device *netdev;	/* the LAN function, eth%d */

	struct rs_ibdev *ib;		/* owned by rdma_session_verbs.c */
};

static inline u32 rs_rd32(struct rs_dev *rdev, u32 off)
{
	return readl(rdev->regs + off);
}

static inline void rs_wr32(struct rs_dev *rdev, u32 off, u32 val)
{
	writel(val, rdev->regs + off);
}

/* rdma_session_debugfs.c: the module's directory */
void rs_debugfs_init(void);
void rs_debugfs_exit(void);

/* rdma_session_admin.c */
int rs_dev_admin_init(struct rs_dev *rdev);
void rs_dev_admin_destroy(struct rs_dev *rdev);
int rs_dev_admin_exec(struct rs_dev *rdev, struct rs_admin_cmd *cmd,
		      struct rs_admin_cqe *cqe);
int rs_status_to_errno(u8 status);
void rs_dev_aeq_poll(struct rs_dev *rdev);
int rs_dev_cmd_query(struct rs_dev *rdev, u8 opcode, u32 handle,
		     dma_addr_t resp, u32 len);
int rs_dev_cmd_create_pd(struct rs_dev *rdev, u32 *pd);
int rs_dev_cmd_destroy(struct rs_dev *rdev, u8 opcode, u32 handle);

/*
 * The LAN queues' interrupts: MSI-X vector RS_LAN_VECTOR (= completion
 * vector 0 of the CQs, so the IRQ is requested with IRQF_SHARED; a CQ
 * handler on the same vector must be IRQF_SHARED too).
 */
#define RS_LAN_VECTOR		RS_MSIX_COMP_VECTOR0

/* rdma_session_netdev.c */
int rs_netdev_probe(struct rs_dev *rdev);
void rs_netdev_remove(struct rs_dev *rdev);
void rs_netdev_link_event(struct rs_dev *rdev, bool up);

/* rdma_session_main.c: an async event, in hard IRQ context. */
void rs_dispatch_event(struct rs_dev *rdev, const struct rs_event *ev);

/*
 * The ib_device (rdma_session_verbs.c).  probe calls rs_ib_register()
 * after the net_device is registered; remove calls rs_ib_unregister()
 * first.  rs_ib_event() gets every async event (QP, CQ, port, device)
 * in hard IRQ context, after the port events updated the carrier.
 */
int rs_ib_register(struct rs_dev *rdev);
void rs_ib_unregister(struct rs_dev *rdev);
void rs_ib_event(struct rs_dev *rdev, const struct rs_event *ev);

#endif /* RDMA_SESSION_H */
