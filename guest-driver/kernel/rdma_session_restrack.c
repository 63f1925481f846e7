// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: driver details of QPs, MRs and CQs for the
 * rdma tool (rdma resource show qp|mr|cq -dd), as mlx5's restrack.c.
 *
 * Copyright (c) 2026 rdma-session developers
 */

#include <rdma/ib_verbs.h>
#include <rdma/restrack.h>

#include "rdma_session.h"
#include "rdma_session_ib.h"

static const char *const rs_qpt_name[] = {
	[RS_QPT_RC] = "rc", [RS_QPT_UC] = "uc", [RS_QPT_UD] = "ud",
	[RS_QPT_GSI] = "gsi", [RS_QPT_DCI] = "dci", [RS_QPT_DCT] = "dct",
	[RS_QPT_XRC_INI] = "xrc_ini", [RS_QPT_XRC_TGT] = "xrc_tgt",
};

/*
 * A QP: the device's QP number and handle, its type, the session group
 * it sends over (handle, UDP source port, sessions) and the PSNs the
 * device has now (QUERY_QP).
 */
static int rs_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct rs_qp *qp = to_rsqp(ibqp);
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	struct nlattr *table;
	u32 group = 0, nsess = 0;
	u16 sport = 0;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	rs_qp_session_info(qp, &group, &sport, &nsess);
	if (rdma_nl_put_driver_u32(msg, "dev_qpn", qp->qpn) ||
	    rdma_nl_put_driver_u32_hex(msg, "handle", qp->handle) ||
	    rdma_nl_put_driver_string(msg, "dev_type",
				      qp->rs_type < ARRAY_SIZE(rs_qpt_name) ?
				      rs_qpt_name[qp->rs_type] : "?") ||
	    rdma_nl_put_driver_u32_hex(msg, "group", group) ||
	    rdma_nl_put_driver_u32(msg, "sessions", nsess) ||
	    rdma_nl_put_driver_u32(msg, "src_port", sport))
		goto err;
	/* The PSNs the device has now; a dead admin queue leaves them out. */
	if (!rs_ib_query_qp(ibqp, &attr, 0, &init) &&
	    (rdma_nl_put_driver_u32_hex(msg, "dev_sq_psn", attr.sq_psn) ||
	     rdma_nl_put_driver_u32_hex(msg, "dev_rq_psn", attr.rq_psn) ||
	     rdma_nl_put_driver_u32(msg, "dev_state", attr.qp_state)))
		goto err;
	nla_nest_end(msg, table);
	return 0;
err:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}

static u32 rs_mr_pages(const struct rs_mr *mr)
{
	if (mr->max_pages)
		return mr->max_pages;
	if (mr->umem && !mr->odp && mr->ibmr.page_size)
		return ib_umem_num_dma_blocks(mr->umem, mr->ibmr.page_size);
	return 0;
}

/*
 * An MR: its key, kind (user, odp, fast_reg, indirect, pattern, dma),
 * the GID whose network identity's key table holds it, and its pages.
 */
static int rs_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct rs_mr *mr = to_rsmr(ibmr);
	struct nlattr *table;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32_hex(msg, "dev_key", ibmr->lkey) ||
	    rdma_nl_put_driver_string(msg, "kind",
				      mr->dma ? "dma" :
				      mr->kind ? mr->kind : "?") ||
	    (!mr->dma &&
	     rdma_nl_put_driver_u32(msg, "netid_gid", mr->netid)) ||
	    rdma_nl_put_driver_u32(msg, "pages", rs_mr_pages(mr)) ||
	    (ibmr->page_size &&
	     rdma_nl_put_driver_u32(msg, "page_size", ibmr->page_size)))
		goto err;
	nla_nest_end(msg, table);
	return 0;
err:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}

/* A CQ: its device handle, ring size, consumer index and vector. */
static int rs_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct rs_cq *cq = to_rscq(ibcq);
	struct nlattr *table;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32_hex(msg, "handle", cq->handle) ||
	    rdma_nl_put_driver_u32(msg, "entries", 1u << cq->log) ||
	    rdma_nl_put_driver_u32(msg, "vector", cq->vector) ||
	    (!cq->user && rdma_nl_put_driver_u32(msg, "ci", cq->ci)))
		goto err;
	nla_nest_end(msg, table);
	return 0;
err:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}

const struct ib_device_ops rs_ib_restrack_ops = {
	.fill_res_cq_entry = rs_fill_res_cq_entry,
	.fill_res_mr_entry = rs_fill_res_mr_entry,
	.fill_res_qp_entry = rs_fill_res_qp_entry,
};
