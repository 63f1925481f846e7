// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: the typed admin commands of the ib_device
 * (rdma_session_com_cmd.h), on the admin queue of rdma_session_admin.c.
 */

#include "rdma_session_ib.h"
#include "rdma_session_com_cmd.h"

/* Run a command; counted in the ib_device's admin_cmds / admin_errs. */
static int rs_com_exec(struct rs_ibdev *dev, struct rs_admin_cmd *cmd,
		       struct rs_admin_cqe *cqe)
{
	int err;

	atomic64_inc(&dev->cnt[RS_CNT_ADMIN_CMDS]);
	err = rs_dev_admin_exec(dev->rdev, cmd, cqe);
	if (err) {
		atomic64_inc(&dev->cnt[RS_CNT_ADMIN_ERRS]);
		ibdev_dbg(&dev->ibdev, "admin command %#x: %d\n",
			  cmd->hdr.opcode, err);
	}
	return err;
}

/*
 * Destroy a device object.  A dead admin queue (-EIO: timeout, device
 * reset or removal) means the device no longer holds the object, so the
 * driver side is released anyway and the verb succeeds.
 */
/* A command whose answer is the new object's handle. */
static int rs_com_exec_handle(struct rs_ibdev *dev, struct rs_admin_cmd *cmd,
			      u32 *handle)
{
	struct rs_admin_cqe cqe;
	int err;

	err = rs_com_exec(dev, cmd, &cqe);
	if (err)
		return err;
	*handle = cqe.handle;
	return 0;
}

/* A command whose answer is a memory key's handle and key. */
static int rs_com_exec_key(struct rs_ibdev *dev, struct rs_admin_cmd *cmd,
			   struct rs_com_key_result *result)
{
	struct rs_admin_cqe cqe;
	int err;

	err = rs_com_exec(dev, cmd, &cqe);
	if (err)
		return err;
	result->handle = cqe.handle;
	result->key = cqe.result1;
	return 0;
}

static int rs_com_destroy(struct rs_ibdev *dev, u8 opcode, u32 handle)
{
	struct rs_admin_cmd cmd = {};
	int err;

	cmd.hdr.opcode = opcode;
	cmd.destroy.handle = handle;
	err = rs_com_exec(dev, &cmd, NULL);
	if (err == -EIO)
		return 0;
	/* -EBUSY (an MR with bound windows): the caller's to handle. */
	if (err && err != -EBUSY)
		ibdev_warn(&dev->ibdev, "destroy (opcode %#x) of %#x failed: %d\n",
			   opcode, handle, err);
	return err;
}

/* PDs and XRC domains */
int rs_com_create_pd(struct rs_ibdev *dev,
		     const struct rs_cmd_create_pd *params,
		     struct rs_com_create_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_CREATE_PD;
	cmd.create_pd = *params;
	return rs_com_exec_handle(dev, &cmd, &result->handle);
}

int rs_com_destroy_pd(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DESTROY_PD, handle);
}

int rs_com_create_xrcd(struct rs_ibdev *dev,
		       struct rs_com_create_result *result)
{
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	cmd.hdr.opcode = RS_CMD_CREATE_XRCD;
	err = rs_com_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	result->handle = cqe.handle;
	return 0;
}

int rs_com_destroy_xrcd(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DESTROY_XRCD, handle);
}

/* CQs */
int rs_com_create_cq(struct rs_ibdev *dev,
		     const struct rs_cmd_create_cq *params,
		     struct rs_com_create_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_CREATE_CQ;
	cmd.create_cq = *params;
	return rs_com_exec_handle(dev, &cmd, &result->handle);
}

int rs_com_resize_cq(struct rs_ibdev *dev,
		     const struct rs_cmd_resize_cq *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_RESIZE_CQ;
	cmd.resize_cq = *params;
	return rs_com_exec(dev, &cmd, NULL);
}

int rs_com_destroy_cq(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DESTROY_CQ, handle);
}

/* QPs */
int rs_com_create_qp(struct rs_ibdev *dev,
		     const struct rs_cmd_create_qp *params,
		     struct rs_com_create_qp_result *result)
{
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	cmd.hdr.opcode = RS_CMD_CREATE_QP;
	cmd.create_qp = *params;
	err = rs_com_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	result->handle = cqe.handle;
	result->qpn = cqe.result1;
	return 0;
}

int rs_com_modify_qp(struct rs_ibdev *dev,
		     const struct rs_cmd_modify_qp *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_MODIFY_QP;
	cmd.modify_qp = *params;
	return rs_com_exec(dev, &cmd, NULL);
}

int rs_com_query_qp(struct rs_ibdev *dev, const struct rs_cmd_query *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_QUERY_QP;
	cmd.query = *params;
	return rs_com_exec(dev, &cmd, NULL);
}

int rs_com_destroy_qp(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DESTROY_QP, handle);
}

int rs_com_set_qp_db_record(struct rs_ibdev *dev, u32 handle, u64 addr)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_SET_QP_DB_RECORD;
	cmd.set_db_record.addr = addr;
	cmd.set_db_record.handle = handle;
	return rs_com_exec(dev, &cmd, NULL);
}

int rs_com_attach_mcast(struct rs_ibdev *dev, const struct rs_cmd_mcast *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_ATTACH_MCAST;
	cmd.mcast = *params;
	return rs_com_exec(dev, &cmd, NULL);
}

int rs_com_detach_mcast(struct rs_ibdev *dev, const struct rs_cmd_mcast *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_DETACH_MCAST;
	cmd.mcast = *params;
	return rs_com_exec(dev, &cmd, NULL);
}

/* Sessions and session groups */
int rs_com_create_session(struct rs_ibdev *dev,
			  const struct rs_cmd_create_session *params,
			  struct rs_com_create_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_CREATE_SESSION;
	cmd.create_session = *params;
	return rs_com_exec_handle(dev, &cmd, &result->handle);
}

int rs_com_destroy_session(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DESTROY_SESSION, handle);
}

int rs_com_create_session_group(struct rs_ibdev *dev,
				const struct rs_cmd_create_session_group *params,
				struct rs_com_create_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_CREATE_SESSION_GROUP;
	cmd.create_group = *params;
	return rs_com_exec_handle(dev, &cmd, &result->handle);
}

int rs_com_destroy_session_group(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DESTROY_SESSION_GROUP, handle);
}

/* SRQs */
int rs_com_create_srq(struct rs_ibdev *dev,
		      const struct rs_cmd_create_srq *params,
		      struct rs_com_create_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_CREATE_SRQ;
	cmd.create_srq = *params;
	return rs_com_exec_handle(dev, &cmd, &result->handle);
}

int rs_com_modify_srq(struct rs_ibdev *dev,
		      const struct rs_cmd_modify_srq *params,
		      struct rs_com_modify_srq_result *result)
{
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	cmd.hdr.opcode = RS_CMD_MODIFY_SRQ;
	cmd.modify_srq = *params;
	err = rs_com_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	result->wqes_moved = cqe.result1;
	return 0;
}

int rs_com_destroy_srq(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DESTROY_SRQ, handle);
}

/* Address handles */
int rs_com_create_ah(struct rs_ibdev *dev,
		     const struct rs_cmd_create_ah *params,
		     struct rs_com_create_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_CREATE_AH;
	cmd.create_ah = *params;
	return rs_com_exec_handle(dev, &cmd, &result->handle);
}

int rs_com_destroy_ah(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DESTROY_AH, handle);
}

/* Memory keys */
int rs_com_reg_mr(struct rs_ibdev *dev, const struct rs_cmd_reg_mr *params,
		  struct rs_com_key_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_REG_MR;
	cmd.reg_mr = *params;
	return rs_com_exec_key(dev, &cmd, result);
}

int rs_com_rereg_mr(struct rs_ibdev *dev, const struct rs_cmd_rereg_mr *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_REREG_MR;
	cmd.rereg_mr = *params;
	return rs_com_exec(dev, &cmd, NULL);
}

int rs_com_reg_indirect_mkey(struct rs_ibdev *dev,
			     const struct rs_cmd_reg_mkey_list *params,
			     struct rs_com_key_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_REG_INDIRECT_MKEY;
	cmd.reg_mkey = *params;
	return rs_com_exec_key(dev, &cmd, result);
}

int rs_com_reg_pattern_mkey(struct rs_ibdev *dev,
			    const struct rs_cmd_reg_mkey_list *params,
			    struct rs_com_key_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_REG_PATTERN_MKEY;
	cmd.reg_mkey = *params;
	return rs_com_exec_key(dev, &cmd, result);
}

int rs_com_dereg_mr(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DEREG_MR, handle);
}

int rs_com_alloc_mw(struct rs_ibdev *dev, const struct rs_cmd_alloc_mw *params,
		    struct rs_com_key_result *result)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_ALLOC_MW;
	cmd.alloc_mw = *params;
	return rs_com_exec_key(dev, &cmd, result);
}

int rs_com_dealloc_mw(struct rs_ibdev *dev, u32 handle)
{
	return rs_com_destroy(dev, RS_CMD_DEALLOC_MW, handle);
}

/* On-demand paging */
int rs_com_odp_resolve(struct rs_ibdev *dev,
		       const struct rs_cmd_odp_resolve *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_ODP_RESOLVE;
	cmd.odp_resolve = *params;
	return rs_com_exec(dev, &cmd, NULL);
}

int rs_com_odp_invalidate(struct rs_ibdev *dev,
			  const struct rs_cmd_odp_invalidate *params,
			  struct rs_com_odp_invalidate_result *result)
{
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	cmd.hdr.opcode = RS_CMD_ODP_INVALIDATE;
	cmd.odp_invalidate = *params;
	err = rs_com_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	result->seq = cqe.result1;
	return 0;
}

/* GIDs, network identities, counters */
int rs_com_add_gid(struct rs_ibdev *dev, const struct rs_cmd_add_gid *params,
		   struct rs_com_add_gid_result *result)
{
	struct rs_admin_cmd cmd = {};
	struct rs_admin_cqe cqe;
	int err;

	cmd.hdr.opcode = RS_CMD_ADD_GID;
	cmd.add_gid = *params;
	err = rs_com_exec(dev, &cmd, &cqe);
	if (err)
		return err;
	result->netid = cqe.result1 & 0xff;
	result->vni = cqe.result1 >> 8;
	return 0;
}

int rs_com_del_gid(struct rs_ibdev *dev, u32 index)
{
	return rs_com_destroy(dev, RS_CMD_DEL_GID, index);
}

int rs_com_query_netid(struct rs_ibdev *dev, const struct rs_cmd_query *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_QUERY_NETID;
	cmd.query = *params;
	return rs_com_exec(dev, &cmd, NULL);
}

int rs_com_query_stats(struct rs_ibdev *dev, const struct rs_cmd_query *params)
{
	struct rs_admin_cmd cmd = {};

	cmd.hdr.opcode = RS_CMD_QUERY_STATS;
	cmd.query = *params;
	return rs_com_exec(dev, &cmd, NULL);
}
