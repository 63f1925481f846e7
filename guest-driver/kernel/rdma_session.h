/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rdma-session adapter: Linux driver, shared definitions.
 */
#ifndef RDMA_SESSION_H
#define RDMA_SESSION_H

#include <linux/pci.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "hw/rdma-session/rdma-session-abi.h"

#define RS_DRV_NAME		"rdma_session"

#define RS_ADMQ_LOG		6	/* 64 admin commands */
#define RS_AEQ_LOG		6	/* 64 async events */
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

struct rs_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	u32 version;
	u32 caps;
	u32 num_msix;
	int nvecs;
	bool admin_irq;
	struct rs_admin admin;
};

static inline u32 rs_rd32(struct rs_dev *rdev, u32 off)
{
	return readl(rdev->regs + off);
}

static inline void rs_wr32(struct rs_dev *rdev, u32 off, u32 val)
{
	writel(val, rdev->regs + off);
}

/* rdma_session_admin.c */
int rs_admin_init(struct rs_dev *rdev);
void rs_admin_destroy(struct rs_dev *rdev);
int rs_admin_exec(struct rs_dev *rdev, struct rs_admin_cmd *cmd,
		  struct rs_admin_cqe *cqe);
int rs_status_to_errno(u8 status);
void rs_admin_aeq_poll(struct rs_dev *rdev);
int rs_cmd_query(struct rs_dev *rdev, u8 opcode, u32 handle,
		 dma_addr_t resp, u32 len);
int rs_cmd_create_pd(struct rs_dev *rdev, u32 *pd);
int rs_cmd_destroy(struct rs_dev *rdev, u8 opcode, u32 handle);

#endif /* RDMA_SESSION_H */
