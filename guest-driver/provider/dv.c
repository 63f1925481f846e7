// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma-session provider: the direct verbs of rsessiondv.h (librsession),
 * exported through librsession.map.  The work request functions live with
 * the other ibv_wr_* ones in verbs.c.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rsession.h"

bool rsdv_is_supported(struct ibv_device *device)
{
	return device && rs_is_rs_dev(device);
}

int rsdv_query_device(struct ibv_context *context, struct rsdv_context *attrs)
{
	struct rs_context *ctx;

	if (!context || !attrs || !rs_is_rs_dev(context->device))
		return EOPNOTSUPP;
	if (attrs->comp_mask)
		return EINVAL;
	ctx = to_rs_ctx(context);
	memset(attrs, 0, sizeof(*attrs));
	if (ctx->caps & RS_CAP_DC) {
		attrs->flags |= RSDV_CONTEXT_FLAGS_DC;
		attrs->max_dc_contexts = ctx->max_dc_contexts;
		attrs->dc_idle_us = ctx->dc_idle_us;
	}
	if (ctx->caps & RS_CAP_INDIRECT_MKEY)
		attrs->flags |= RSDV_CONTEXT_FLAGS_INDIRECT_MKEY;
	if (ctx->caps & RS_CAP_PATTERN_MKEY)
		attrs->flags |= RSDV_CONTEXT_FLAGS_PATTERN_MKEY;
	if (ctx->caps & (RS_CAP_INDIRECT_MKEY | RS_CAP_PATTERN_MKEY)) {
		attrs->max_mkey_entries = ctx->max_mkey_entries;
		attrs->max_mkey_nest = ctx->max_mkey_nest;
	}
	return 0;
}

struct ibv_qp *rsdv_create_qp(struct ibv_context *context,
			      struct ibv_qp_init_attr_ex *qp_attr,
			      struct rsdv_qp_init_attr *rs_qp_attr)
{
	if (!context || !qp_attr || !rs_is_rs_dev(context->device)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return rs_create_qp_dv(context, qp_attr, rs_qp_attr);
}

struct rsdv_qp_ex *rsdv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qpx)
{
	if (!qpx || !rs_is_rs_dev(qpx->qp_base.context->device))
		return NULL;
	return &to_rs_qp_ex(qpx)->dv_qp;
}

/*
 * An empty key is a kernel MR: ibv_cmd_reg_mr with no memory (addr,
 * length, iova 0) and struct rs_uverbs_reg_mr asking for the key, so
 * ib_core owns it like any MR (it dies with the PD's context).  Its
 * rights at creation are all a key may have; each filling work request
 * gives the ones it then has.
 */
struct rsdv_mkey *rsdv_create_mkey(struct rsdv_mkey_init_attr *mkey_init_attr)
{
	struct rsdv_mkey_init_attr *a = mkey_init_attr;
	struct ib_uverbs_reg_mr_resp resp;
	struct rs_reg_mkey cmd = {};
	struct rs_context *ctx;
	struct rs_mkey *mkey;
	bool pattern;
	int err;

	if (!a || !a->pd || !rs_is_rs_dev(a->pd->context->device)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	ctx = to_rs_ctx(a->pd->context);
	pattern = a->create_flags == RSDV_MKEY_INIT_ATTR_FLAGS_PATTERN;
	if ((a->create_flags != RSDV_MKEY_INIT_ATTR_FLAGS_INDIRECT && !pattern) ||
	    !a->max_entries) {
		errno = EINVAL;
		return NULL;
	}
	if (!(ctx->caps & (pattern ? RS_CAP_PATTERN_MKEY :
				     RS_CAP_INDIRECT_MKEY))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	mkey = calloc(1, sizeof(*mkey));
	if (!mkey) {
		errno = ENOMEM;
		return NULL;
	}
	cmd.drv_payload.flags = pattern ? RS_UVERBS_MR_F_EMPTY_PATTERN :
					  RS_UVERBS_MR_F_EMPTY_INDIRECT;
	cmd.drv_payload.max_entries = a->max_entries;
	err = ibv_cmd_reg_mr(a->pd, NULL, 0, 0,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
			     &mkey->vmr, &cmd.ibv_cmd, sizeof(cmd), &resp,
			     sizeof(resp));
	if (err) {
		free(mkey);
		errno = err;
		return NULL;
	}
	mkey->pattern = pattern;
	mkey->max_entries = a->max_entries;
	mkey->dv.lkey = mkey->vmr.ibv_mr.lkey;
	mkey->dv.rkey = mkey->vmr.ibv_mr.rkey;
	return &mkey->dv;
}

int rsdv_destroy_mkey(struct rsdv_mkey *dvkey)
{
	struct rs_mkey *mkey = container_of(dvkey, struct rs_mkey, dv);
	int err;

	err = ibv_cmd_dereg_mr(&mkey->vmr);
	if (err)
		return err;
	free(mkey);
	return 0;
}

/*
 * The path policy goes to the driver as modify_qp input without
 * attributes; the driver binds the QP to the session group of its
 * connection with that policy.
 */
int rsdv_modify_qp_path_policy(struct ibv_qp *qp, uint32_t policy)
{
	struct rs_modify_qp_path_resp resp = {};
	struct rs_modify_qp_path cmd = {};
	struct ibv_qp_attr attr = {};

	if (!qp || !rs_is_rs_dev(qp->context->device))
		return EOPNOTSUPP;
	if (policy != RSDV_PATH_SPREAD && policy != RSDV_PATH_ACTIVE_BACKUP)
		return EINVAL;
	cmd.drv_payload.flags = RS_UVERBS_MODIFY_QP_PATH_POLICY;
	cmd.drv_payload.path_policy = policy == RSDV_PATH_ACTIVE_BACKUP ?
				      RS_UVERBS_PATH_ACTIVE_BACKUP :
				      RS_UVERBS_PATH_SPREAD;
	return ibv_cmd_modify_qp_ex(qp, &attr, 0, &cmd.ibv_cmd, sizeof(cmd),
				    &resp.ibv_resp, sizeof(resp));
}
