// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: debugfs, /sys/kernel/debug/rdma_session/<ibdev>/.
 *
 * mkey_selftest: the self-test of rs_ib_reg_mkey_list() (the indirect and
 * pattern keys of kernel consumers), run on demand, never at probe.
 * Writing anything runs it (with RS_CAP_INDIRECT_MKEY and
 * RS_CAP_PATTERN_MKEY, once the device has a network identity): the write
 * fails with EIO if the test fails, EOPNOTSUPP without the capabilities.
 * Reading shows the outcome of the last run, "not run" before the first;
 * the kernel log has it too ("mkey self-test: ...: ok").
 */

#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include <rdma/ib_verbs.h>

#include "rdma_session_ib.h"
#include "rdma_session_com_cmd.h"

static struct dentry *rs_debugfs_root;

/*
 * An indirect key over three single-page kernel MRs and a pattern key over
 * one of them, made as a kernel consumer makes them, then freed; bad entry
 * lists refused.  The outcome is logged and kept for reading.
 */
static int rs_mkey_selftest(struct rs_ibdev *dev)
{
	const int acc = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			IB_ACCESS_REMOTE_READ;
	struct ib_mr *ind = ERR_PTR(-ENODEV), *pat = ERR_PTR(-ENODEV);
	char *res = dev->mkey_test_result;
	size_t rlen = sizeof(dev->mkey_test_result);
	struct ib_mr *bad0, *bad1;
	struct rs_mkey_entry ent[3];
	struct rs_pattern_entry pe = {};
	struct rs_cmd_reg_mr params;
	struct rs_com_key_result result;
	void *page[3] = {};
	dma_addr_t pbl_dma, pdma[3];
	u32 key[3] = {}, netid;
	struct ib_pd *pd;
	u64 *pbl;
	int i, err = 0;

	pd = ib_alloc_pd(&dev->ibdev, 0);
	if (IS_ERR(pd)) {
		ibdev_warn(&dev->ibdev, "mkey self-test: no PD: %ld\n", PTR_ERR(pd));
		snprintf(res, rlen, "failed: no PD: %ld\n", PTR_ERR(pd));
		return -EIO;
	}
	pbl = dma_alloc_coherent(rs_dma_dev(dev), 3 * sizeof(u64), &pbl_dma,
				 GFP_KERNEL);
	if (!pbl) {
		err = -ENOMEM;
		goto out;
	}
	err = rs_default_netid(dev, pd, &netid);
	if (err)
		goto out;
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
		memset(&params, 0, sizeof(params));
		params.iova = pdma[i];
		params.length = PAGE_SIZE;
		params.pbl_addr = pbl_dma + i * sizeof(u64);
		params.npages = 1;
		params.pd = to_rspd(pd)->handle;
		params.page_shift = PAGE_SHIFT;
		params.access = rs_access_from_ib(acc);
		params.gid_index = netid;
		err = rs_com_reg_mr(dev, &params, &result);
		if (!err)
			key[i] = result.handle;
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
	if (IS_ERR(ind) || IS_ERR(pat) || !IS_ERR(bad0) || !IS_ERR(bad1)) {
		ibdev_warn(&dev->ibdev, "mkey self-test failed: indirect %d, pattern %d, no entries %d, no repeat %d\n",
			   PTR_ERR_OR_ZERO(ind), PTR_ERR_OR_ZERO(pat),
			   PTR_ERR_OR_ZERO(bad0), PTR_ERR_OR_ZERO(bad1));
		snprintf(res, rlen, "failed: indirect %d, pattern %d, no entries %d, no repeat %d\n",
			 PTR_ERR_OR_ZERO(ind), PTR_ERR_OR_ZERO(pat),
			 PTR_ERR_OR_ZERO(bad0), PTR_ERR_OR_ZERO(bad1));
		err = -EIO;
	} else {
		ibdev_info(&dev->ibdev, "mkey self-test: indirect key %#x over MRs %#x %#x %#x, pattern key %#x, bad lists refused: ok\n",
			   ind->lkey, key[0], key[1], key[2], pat->lkey);
		snprintf(res, rlen, "indirect key %#x over MRs %#x %#x %#x, pattern key %#x, bad lists refused: ok\n",
			 ind->lkey, key[0], key[1], key[2], pat->lkey);
	}
	if (!IS_ERR(bad0))
		ib_dereg_mr(bad0);
	if (!IS_ERR(bad1))
		ib_dereg_mr(bad1);
out:
	if (err && err != -EIO) {
		ibdev_warn(&dev->ibdev, "mkey self-test failed: %d\n", err);
		snprintf(res, rlen, "failed: %d\n", err);
		err = -EIO;
	}
	if (!IS_ERR(ind))
		ib_dereg_mr(ind);
	if (!IS_ERR(pat))
		ib_dereg_mr(pat);
	for (i = 0; i < 3; i++) {
		if (key[i])
			rs_com_dereg_mr(dev, key[i]);
		if (page[i]) {
			dma_unmap_single(rs_dma_dev(dev), pdma[i], PAGE_SIZE,
					 DMA_BIDIRECTIONAL);
			free_page((unsigned long)page[i]);
		}
	}
	if (pbl)
		dma_free_coherent(rs_dma_dev(dev), 3 * sizeof(u64), pbl, pbl_dma);
	ib_dealloc_pd(pd);
	return err;
}

static ssize_t rs_mkey_selftest_write(struct file *f, const char __user *buf,
				      size_t count, loff_t *ppos)
{
	struct rs_ibdev *dev = f->private_data;
	u32 caps = RS_CAP_INDIRECT_MKEY | RS_CAP_PATTERN_MKEY;
	int err;

	if ((dev->rdev->caps & caps) != caps)
		return -EOPNOTSUPP;
	mutex_lock(&dev->mkey_test_lock);
	err = rs_mkey_selftest(dev);
	mutex_unlock(&dev->mkey_test_lock);
	return err ? err : count;
}

static ssize_t rs_mkey_selftest_read(struct file *f, char __user *buf,
				     size_t count, loff_t *ppos)
{
	struct rs_ibdev *dev = f->private_data;
	ssize_t n;

	mutex_lock(&dev->mkey_test_lock);
	n = simple_read_from_buffer(buf, count, ppos, dev->mkey_test_result,
				    strlen(dev->mkey_test_result));
	mutex_unlock(&dev->mkey_test_lock);
	return n;
}

static const struct file_operations rs_mkey_selftest_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = rs_mkey_selftest_read,
	.write = rs_mkey_selftest_write,
	.llseek = default_llseek,
};

/* The ib_device's directory, once it is registered (its name is known). */
void rs_ib_debugfs_add(struct rs_ibdev *dev)
{
	mutex_init(&dev->mkey_test_lock);
	strscpy(dev->mkey_test_result, "not run\n",
		sizeof(dev->mkey_test_result));
	dev->debugfs = debugfs_create_dir(dev_name(&dev->ibdev.dev),
					  rs_debugfs_root);
	debugfs_create_file("mkey_selftest", 0600, dev->debugfs, dev,
			    &rs_mkey_selftest_fops);
}

/* Before the ib_device goes: waits for a run in progress. */
void rs_ib_debugfs_remove(struct rs_ibdev *dev)
{
	debugfs_remove_recursive(dev->debugfs);
	dev->debugfs = NULL;
}

void rs_debugfs_init(void)
{
	rs_debugfs_root = debugfs_create_dir(RS_DRV_NAME, NULL);
}

void rs_debugfs_exit(void)
{
	debugfs_remove_recursive(rs_debugfs_root);
	rs_debugfs_root = NULL;
}
