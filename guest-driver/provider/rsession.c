// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma-core provider for the rdma-session adapter: device matching and
 * user contexts.
 *
 * The kernel driver (rdma_session.ko) has no RDMA_DRIVER_* id of its own
 * upstream: it registers with driver_id RDMA_DRIVER_UNKNOWN, so libibverbs
 * matches this provider through the PCI modalias of the ib_device's parent
 * (1af4:10f0), and uverbs ABI version RS_UVERBS_ABI_VERSION.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "rsession.h"

static void rs_free_context(struct ibv_context *ibctx);

static const struct verbs_match_ent rs_match_table[] = {
	VERBS_PCI_MATCH(RS_PCI_VENDOR_ID, RS_PCI_DEVICE_ID, NULL),
	{}
};

static const struct verbs_context_ops rs_ctx_ops = {
	.free_context = rs_free_context,
	.query_device_ex = rs_query_device_ex,
	.query_port = rs_query_port,
	.alloc_pd = rs_alloc_pd,
	.dealloc_pd = rs_dealloc_pd,
	.reg_mr = rs_reg_mr,
	.reg_dmabuf_mr = rs_reg_dmabuf_mr,
	.dereg_mr = rs_dereg_mr,
	.alloc_mw = rs_alloc_mw,
	.dealloc_mw = rs_dealloc_mw,
	.bind_mw = rs_bind_mw,
	.rereg_mr = rs_rereg_mr,
	.create_cq = rs_create_cq,
	.create_cq_ex = rs_create_cq_ex,
	.poll_cq = rs_poll_cq,
	.req_notify_cq = rs_req_notify_cq,
	.resize_cq = rs_resize_cq,
	.destroy_cq = rs_destroy_cq,
	.create_qp = rs_create_qp,
	.create_qp_ex = rs_create_qp_ex,
	.query_qp = rs_query_qp,
	.modify_qp = rs_modify_qp,
	.destroy_qp = rs_destroy_qp,
	.post_send = rs_post_send,
	.post_recv = rs_post_recv,
	.create_ah = rs_create_ah,
	.destroy_ah = rs_destroy_ah,
	.create_srq = rs_create_srq,
	.create_srq_ex = rs_create_srq_ex,
	.modify_srq = rs_modify_srq,
	.query_srq = rs_query_srq,
	.destroy_srq = rs_destroy_srq,
	.post_srq_recv = rs_post_srq_recv,
	.attach_mcast = ibv_cmd_attach_mcast,
	.detach_mcast = ibv_cmd_detach_mcast,
	/*
	 * On-demand paging: ibv_reg_mr with IBV_ACCESS_ON_DEMAND (implicit:
	 * NULL, SIZE_MAX) goes to the kernel like any registration, and the
	 * kernel checks and performs the prefetch; where the device has no
	 * ODP both fail there (EOPNOTSUPP), and query_device_ex reports no
	 * ODP caps.
	 */
	.advise_mr = ibv_cmd_advise_mr,
	/*
	 * XRC: the kernel offers XRC domains only on a device that reports
	 * them (RS_CAP_XRC, IBV_DEVICE_XRC); elsewhere open_xrcd fails there
	 * and nothing XRC can be created.
	 */
	.open_xrcd = rs_open_xrcd,
	.close_xrcd = rs_close_xrcd,
	.get_srq_num = rs_get_srq_num,
	.open_qp = rs_open_qp,
};

static const struct verbs_device_ops rs_dev_ops;

static struct verbs_context *rs_alloc_context(struct ibv_device *ibdev,
					      int cmd_fd, void *private_data)
{
	struct rs_device *dev = to_rs_dev(ibdev);
	struct rs_alloc_ucontext_resp resp = {};
	struct rs_alloc_ucontext cmd = {};
	struct rs_uverbs_alloc_ucontext_resp *drv = &resp.drv_payload;
	struct rs_context *ctx;
	size_t db_size;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibvctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	if (ibv_cmd_get_context(&ctx->ibvctx, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp))) {
		verbs_err(&ctx->ibvctx, "rdma_session: get_context failed\n");
		goto err_free;
	}

	ctx->uar = drv->uar;
	ctx->max_send_sge = drv->max_send_sge;
	ctx->max_recv_sge = drv->max_recv_sge;
	ctx->max_inline = drv->max_inline;
	ctx->caps = drv->caps;
	ctx->uflags = drv->flags;
	ctx->max_dc_contexts = drv->max_dc_contexts;
	ctx->dc_idle_us = drv->dc_idle_us;
	ctx->max_mkey_entries = drv->max_mkey_entries;
	ctx->max_mkey_nest = drv->max_mkey_nest;
	ctx->netid_env = getenv("RSESSION_NETID");
	ctx->netid_gid = -1;
	db_size = drv->db_page_size ? drv->db_page_size : RS_DB_PAGE_SIZE;
	if (db_size < RS_DB_CQ_ARM + sizeof(uint32_t)) {
		verbs_err(&ctx->ibvctx, "rdma_session: doorbell page of %zu bytes\n",
			  db_size);
		errno = EINVAL;
		goto err_free;
	}
	ctx->db_map_len = align(db_size, dev->page_size);
	ctx->db = mmap(NULL, ctx->db_map_len, PROT_WRITE, MAP_SHARED, cmd_fd,
		       drv->db_mmap_key);
	if (ctx->db == MAP_FAILED) {
		verbs_err(&ctx->ibvctx,
			  "rdma_session: cannot map the doorbell page: %s\n",
			  strerror(errno));
		goto err_free;
	}

	pthread_spin_init(&ctx->qp_table_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&ctx->srq_table_lock, PTHREAD_PROCESS_PRIVATE);
	verbs_set_ops(&ctx->ibvctx, &rs_ctx_ops);
	return &ctx->ibvctx;

err_free:
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
	return NULL;
}

static void rs_free_context(struct ibv_context *ibctx)
{
	struct rs_context *ctx = to_rs_ctx(ibctx);

	munmap(ctx->db, ctx->db_map_len);
	free(ctx->qp_table);
	pthread_spin_destroy(&ctx->qp_table_lock);
	free(ctx->srq_table);
	pthread_spin_destroy(&ctx->srq_table_lock);
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
}

static struct verbs_device *rs_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct rs_device *dev;
	long pg = sysconf(_SC_PAGESIZE);

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->page_size = pg > 0 ? (size_t)pg : 4096;
	return &dev->vdev;
}

static void rs_uninit_device(struct verbs_device *vdev)
{
	free(to_rs_dev(&vdev->device));
}

static const struct verbs_device_ops rs_dev_ops = {
	.name = "rdma_session",
	.match_min_abi_version = RS_UVERBS_ABI_VERSION,
	.match_max_abi_version = RS_UVERBS_ABI_VERSION,
	.match_table = rs_match_table,
	.alloc_device = rs_device_alloc,
	.uninit_device = rs_uninit_device,
	.alloc_context = rs_alloc_context,
};
PROVIDER_DRIVER(rsession, rs_dev_ops);

bool rs_is_rs_dev(struct ibv_device *device)
{
	return verbs_get_device(device)->ops == &rs_dev_ops;
}
