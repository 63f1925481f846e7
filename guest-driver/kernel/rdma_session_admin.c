// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: admin queue, admin completion queue and async
 * event queue (docs/specs/rdma-session.rst, "Admin queue").
 *
 * Commands are serialised under admin.lock and completed by polling the
 * phase bit of the ACQ entry with the command's slot number.  A command
 * that does not complete in RS_ADMIN_TIMEOUT_MS marks the admin queue
 * dead: every later command fails with -EIO at once.
 */
#include <linux/bitfield.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/jiffies.h>
#include <linux/string.h>

#include "rdma_session.h"

#ifdef __BIG_ENDIAN
#error "rdma_session: the ABI structures are used as little-endian"
#endif

int rs_status_to_errno(u8 status)
{
	switch (status) {
	case RS_STATUS_OK:
		return 0;
	case RS_STATUS_NO_RESOURCES:
		return -ENOMEM;
	case RS_STATUS_BUSY:
		return -EBUSY;
	case RS_STATUS_NOT_SUPPORTED:
	case RS_STATUS_BAD_OPCODE:
		return -EOPNOTSUPP;
	case RS_STATUS_EXISTS:
		return -EEXIST;
	case RS_STATUS_BAD_ADDR:
	case RS_STATUS_BAD_ALIGN:
		return -EFAULT;
	case RS_STATUS_BAD_ACCESS:
		return -EACCES;
	case RS_STATUS_DMA_ERROR:
		return -EIO;
	case RS_STATUS_STALE:
		/* ODP_RESOLVE built before an invalidation: try again. */
		return -EAGAIN;
	case RS_STATUS_BAD_HANDLE:
	case RS_STATUS_BAD_PARAM:
	case RS_STATUS_BAD_STATE:
	case RS_STATUS_BAD_ATTR_MASK:
	case RS_STATUS_BAD_SIZE:
	case RS_STATUS_BAD_PD:
	case RS_STATUS_BAD_NETID:
	default:
		return -EINVAL;
	}
}

static int rs_wait_ready(struct rs_dev *rdev)
{
	unsigned long end = jiffies + msecs_to_jiffies(RS_READY_TIMEOUT_MS);
	u32 st;

	for (;;) {
		st = rs_rd32(rdev, A_RS_STATUS);
		if (st & R_RS_STATUS_FATAL_MASK) {
			dev_err(&rdev->pdev->dev, "device fatal at enable (code %u)\n",
				rs_rd32(rdev, A_RS_FATAL_CODE));
			return -EIO;
		}
		if (st & R_RS_STATUS_READY_MASK)
			return 0;
		if (time_after(jiffies, end)) {
			dev_err(&rdev->pdev->dev, "device not ready (status %#x)\n", st);
			return -ETIMEDOUT;
		}
		usleep_range(100, 1000);
	}
}

static void rs_dev_admin_free(struct rs_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct rs_admin *a = &rdev->admin;

	if (a->aeq)
		dma_free_coherent(dev, a->aeq_depth * sizeof(*a->aeq), a->aeq, a->aeq_dma);
	if (a->cq)
		dma_free_coherent(dev, a->depth * sizeof(*a->cq), a->cq, a->cq_dma);
	if (a->sq)
		dma_free_coherent(dev, a->depth * sizeof(*a->sq), a->sq, a->sq_dma);
	a->aeq = NULL;
	a->cq = NULL;
	a->sq = NULL;
}

int rs_dev_admin_init(struct rs_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct rs_admin *a = &rdev->admin;
	int err;

	mutex_init(&a->lock);
	spin_lock_init(&a->aeq_lock);
	a->depth = 1u << RS_ADMQ_LOG;
	a->aeq_depth = 1u << RS_AEQ_LOG;
	a->pi = 0;
	a->ci = 0;
	a->aeq_ci = 0;
	a->dead = false;

	/* dma_alloc_coherent memory is page aligned and zeroed. */
	a->sq = dma_alloc_coherent(dev, a->depth * sizeof(*a->sq), &a->sq_dma, GFP_KERNEL);
	a->cq = dma_alloc_coherent(dev, a->depth * sizeof(*a->cq), &a->cq_dma, GFP_KERNEL);
	a->aeq = dma_alloc_coherent(dev, a->aeq_depth * sizeof(*a->aeq), &a->aeq_dma,
				    GFP_KERNEL);
	if (!a->sq || !a->cq || !a->aeq) {
		err = -ENOMEM;
		goto err_free;
	}

	/* Start from the power-on state. */
	rs_wr32(rdev, A_RS_CTRL, R_RS_CTRL_RESET_MASK);

	rs_wr32(rdev, A_RS_ADMQ_BASE_LO, lower_32_bits(a->sq_dma));
	rs_wr32(rdev, A_RS_ADMQ_BASE_HI, upper_32_bits(a->sq_dma));
	rs_wr32(rdev, A_RS_ADMQ_CFG, RS_ADMQ_LOG << R_RS_ADMQ_CFG_LOG_SIZE_SHIFT);
	rs_wr32(rdev, A_RS_ACQ_BASE_LO, lower_32_bits(a->cq_dma));
	rs_wr32(rdev, A_RS_ACQ_BASE_HI, upper_32_bits(a->cq_dma));
	rs_wr32(rdev, A_RS_ACQ_CFG, RS_MSIX_ADMIN_VECTOR << R_RS_ACQ_CFG_VECTOR_SHIFT);
	rs_wr32(rdev, A_RS_AEQ_BASE_LO, lower_32_bits(a->aeq_dma));
	rs_wr32(rdev, A_RS_AEQ_BASE_HI, upper_32_bits(a->aeq_dma));
	rs_wr32(rdev, A_RS_AEQ_CFG, (RS_AEQ_LOG << R_RS_AEQ_CFG_LOG_SIZE_SHIFT) |
		(RS_MSIX_ADMIN_VECTOR << R_RS_AEQ_CFG_VECTOR_SHIFT));
	rs_wr32(rdev, A_RS_AEQ_CI, 0);

	rs_wr32(rdev, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
	err = rs_wait_ready(rdev);
	if (err)
		goto err_disable;
	return 0;

err_disable:
	rs_wr32(rdev, A_RS_CTRL, 0);
err_free:
	rs_dev_admin_free(rdev);
	return err;
}

void rs_dev_admin_destroy(struct rs_dev *rdev)
{
	/* Disabling resets the function: the rings are no longer used. */
	rs_wr32(rdev, A_RS_CTRL, 0);
	rs_rd32(rdev, A_RS_STATUS);	/* flush the posted write */
	rdev->admin.dead = true;
	rs_dev_admin_free(rdev);
}

/*
 * Execute one admin command and wait for its completion.  cmd->hdr.cmd_id
 * is set here: the low RS_ADMQ_LOG bits are the ring slot, the rest a
 * sequence number.  Returns 0, a negative errno from the device status, or
 * -EIO if the admin queue is (or just became) dead.  The completion is
 * copied to *cqe when cqe is not NULL, whatever its status.
 */
int rs_dev_admin_exec(struct rs_dev *rdev, struct rs_admin_cmd *cmd,
		      struct rs_admin_cqe *cqe)
{
	struct device *dev = &rdev->pdev->dev;
	struct rs_admin *a = &rdev->admin;
	u32 mask = a->depth - 1;
	struct rs_admin_cqe *e, c;
	unsigned long end;
	u16 cmd_id;
	u8 phase;
	u32 slot;
	int err;

	mutex_lock(&a->lock);
	if (a->dead) {
		err = -EIO;
		goto out;
	}

	slot = a->pi & mask;
	cmd_id = (u16)((a->seq++ << RS_ADMQ_LOG) | slot);
	cmd->hdr.cmd_id = cmd_id;
	memcpy(&a->sq[slot], cmd, sizeof(*cmd));
	a->pi++;
	/* writel() orders the command's stores before the doorbell. */
	rs_wr32(rdev, A_RS_ADMQ_DB, a->pi);

	e = &a->cq[a->ci & mask];
	phase = ((a->ci >> RS_ADMQ_LOG) & 1) ^ 1;
	end = jiffies + msecs_to_jiffies(RS_ADMIN_TIMEOUT_MS);
	while ((READ_ONCE(e->flags) & RS_ACQE_PHASE) != phase) {
		if (time_after(jiffies, end)) {
			a->dead = true;
			dev_err(dev, "admin command %#x (cmd_id %#x) timed out, status %#x; admin queue disabled\n",
				cmd->hdr.opcode, cmd_id, rs_rd32(rdev, A_RS_STATUS));
			err = -EIO;
			goto out;
		}
		usleep_range(20, 200);
	}
	/* Read the rest of the entry only after its phase bit. */
	dma_rmb();
	c = *e;
	a->ci++;

	if (c.cmd_id != cmd_id) {
		a->dead = true;
		dev_err(dev, "admin completion for cmd_id %#x, expected %#x; admin queue disabled\n",
			c.cmd_id, cmd_id);
		err = -EIO;
		goto out;
	}
	if (cqe)
		*cqe = c;
	err = rs_status_to_errno(c.status);
	if (err)
		dev_dbg(dev, "admin command %#x failed: status %#x\n",
			cmd->hdr.opcode, c.status);
out:
	mutex_unlock(&a->lock);
	return err;
}

/*
 * Drain the async event queue; called from the admin IRQ handler.  Each
 * event goes to rs_dispatch_event() (hard IRQ context, aeq_lock held).
 */
void rs_dev_aeq_poll(struct rs_dev *rdev)
{
	struct rs_admin *a = &rdev->admin;
	u32 mask = a->aeq_depth - 1;
	unsigned long flags;
	struct rs_event *e, ev;
	bool any = false;
	u8 phase;

	spin_lock_irqsave(&a->aeq_lock, flags);
	if (!a->aeq)
		goto out;
	for (;;) {
		e = &a->aeq[a->aeq_ci & mask];
		phase = ((a->aeq_ci >> RS_AEQ_LOG) & 1) ^ 1;
		if ((READ_ONCE(e->flags) & RS_EQE_PHASE) != phase)
			break;
		dma_rmb();
		ev = *e;
		a->aeq_ci++;
		any = true;
		dev_dbg(&rdev->pdev->dev, "async event %#x handle %#x data %#llx\n",
			ev.type, ev.handle, (unsigned long long)ev.data);
		rs_dispatch_event(rdev, &ev);
	}
	if (any)
		rs_wr32(rdev, A_RS_AEQ_CI, a->aeq_ci);
out:
	spin_unlock_irqrestore(&a->aeq_lock, flags);
}

int rs_dev_cmd_query(struct rs_dev *rdev, u8 opcode, u32 handle,
		     dma_addr_t resp, u32 len)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = opcode;
	cmd.query.resp_addr = resp;
	cmd.query.resp_len = len;
	cmd.query.handle = handle;
	return rs_dev_admin_exec(rdev, &cmd, NULL);
}

int rs_dev_cmd_create_pd(struct rs_dev *rdev, u32 *pd)
{
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	cmd.hdr.opcode = RS_CMD_CREATE_PD;
	err = rs_dev_admin_exec(rdev, &cmd, &cqe);
	if (!err)
		*pd = cqe.handle;
	return err;
}

int rs_dev_cmd_destroy(struct rs_dev *rdev, u8 opcode, u32 handle)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = opcode;
	cmd.destroy.handle = handle;
	return rs_dev_admin_exec(rdev, &cmd, NULL);
}
