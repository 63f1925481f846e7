/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rdma-session adapter: the typed admin commands of the ib_device, one
 * function per command (docs/specs/rdma-session.rst, "Admin commands"),
 * as efa_com_cmd.h does for efa.  Each takes the command's body from the
 * shared ABI header (include/hw/rdma-session/rdma-session-abi.h) as its
 * parameters, fills in the opcode, runs it on the admin queue
 * (rdma_session_admin.c) and hands back what the completion carries in a
 * typed result.  Returns 0 or a negative errno (rs_status_to_errno()).
 *
 * The destroy commands (DESTROY_*, DEREG_MR, DEALLOC_MW, DEL_GID) return
 * 0 when the admin queue is dead (-EIO: timeout, reset or removal): the
 * device no longer holds the object, so the driver side is released
 * anyway.  Other failures except -EBUSY are logged.
 */
#ifndef RDMA_SESSION_COM_CMD_H
#define RDMA_SESSION_COM_CMD_H

#include <linux/types.h>

#include "hw/rdma-session/rdma-session-abi.h"

struct rs_ibdev;

/* CREATE_PD, CREATE_XRCD, CREATE_CQ, CREATE_SRQ, CREATE_AH, CREATE_SESSION,
 * CREATE_SESSION_GROUP: the new object's handle.
 */
struct rs_com_create_result {
	u32 handle;
};

/* CREATE_QP: the handle and the QP number. */
struct rs_com_create_qp_result {
	u32 handle;
	u32 qpn;
};

/*
 * REG_MR, REG_INDIRECT_MKEY, REG_PATTERN_MKEY, ALLOC_MW: the admin handle
 * (DEREG_MR's, DEALLOC_MW's, ODP's) and the key (lkey == rkey).
 */
struct rs_com_key_result {
	u32 handle;
	u32 key;
};

/* MODIFY_SRQ: receive WQEs the device moved to a resized ring. */
struct rs_com_modify_srq_result {
	u32 wqes_moved;
};

/* ADD_GID (RS_NETID_RESULT, ABI 1.6): the GID's identity and its VNI. */
struct rs_com_add_gid_result {
	u8 netid;
	u32 vni;
};

/* ODP_INVALIDATE: the key's invalidation count after this one. */
struct rs_com_odp_invalidate_result {
	u32 seq;
};

/* PDs and XRC domains */
int rs_com_create_pd(struct rs_ibdev *dev,
		     const struct rs_cmd_create_pd *params,
		     struct rs_com_create_result *result);
int rs_com_destroy_pd(struct rs_ibdev *dev, u32 handle);
int rs_com_create_xrcd(struct rs_ibdev *dev,
		       struct rs_com_create_result *result);
int rs_com_destroy_xrcd(struct rs_ibdev *dev, u32 handle);

/* CQs */
int rs_com_create_cq(struct rs_ibdev *dev,
		     const struct rs_cmd_create_cq *params,
		     struct rs_com_create_result *result);
int rs_com_resize_cq(struct rs_ibdev *dev,
		     const struct rs_cmd_resize_cq *params);
int rs_com_destroy_cq(struct rs_ibdev *dev, u32 handle);

/* QPs */
int rs_com_create_qp(struct rs_ibdev *dev,
		     const struct rs_cmd_create_qp *params,
		     struct rs_com_create_qp_result *result);
int rs_com_modify_qp(struct rs_ibdev *dev,
		     const struct rs_cmd_modify_qp *params);
int rs_com_query_qp(struct rs_ibdev *dev, const struct rs_cmd_query *params);
int rs_com_destroy_qp(struct rs_ibdev *dev, u32 handle);
int rs_com_set_qp_db_record(struct rs_ibdev *dev, u32 handle, u64 addr);
int rs_com_attach_mcast(struct rs_ibdev *dev,
			const struct rs_cmd_mcast *params);
int rs_com_detach_mcast(struct rs_ibdev *dev,
			const struct rs_cmd_mcast *params);

/* Sessions and session groups */
int rs_com_create_session(struct rs_ibdev *dev,
			  const struct rs_cmd_create_session *params,
			  struct rs_com_create_result *result);
int rs_com_destroy_session(struct rs_ibdev *dev, u32 handle);
int rs_com_create_session_group(struct rs_ibdev *dev,
				const struct rs_cmd_create_session_group *params,
				struct rs_com_create_result *result);
int rs_com_destroy_session_group(struct rs_ibdev *dev, u32 handle);

/* SRQs */
int rs_com_create_srq(struct rs_ibdev *dev,
		      const struct rs_cmd_create_srq *params,
		      struct rs_com_create_result *result);
int rs_com_modify_srq(struct rs_ibdev *dev,
		      const struct rs_cmd_modify_srq *params,
		      struct rs_com_modify_srq_result *result);
int rs_com_destroy_srq(struct rs_ibdev *dev, u32 handle);

/* Address handles */
int rs_com_create_ah(struct rs_ibdev *dev,
		     const struct rs_cmd_create_ah *params,
		     struct rs_com_create_result *result);
int rs_com_destroy_ah(struct rs_ibdev *dev, u32 handle);

/* Memory keys */
int rs_com_reg_mr(struct rs_ibdev *dev, const struct rs_cmd_reg_mr *params,
		  struct rs_com_key_result *result);
int rs_com_rereg_mr(struct rs_ibdev *dev,
		    const struct rs_cmd_rereg_mr *params);
int rs_com_reg_indirect_mkey(struct rs_ibdev *dev,
			     const struct rs_cmd_reg_mkey_list *params,
			     struct rs_com_key_result *result);
int rs_com_reg_pattern_mkey(struct rs_ibdev *dev,
			    const struct rs_cmd_reg_mkey_list *params,
			    struct rs_com_key_result *result);
int rs_com_dereg_mr(struct rs_ibdev *dev, u32 handle);
int rs_com_alloc_mw(struct rs_ibdev *dev, const struct rs_cmd_alloc_mw *params,
		    struct rs_com_key_result *result);
int rs_com_dealloc_mw(struct rs_ibdev *dev, u32 handle);

/* On-demand paging */
int rs_com_odp_resolve(struct rs_ibdev *dev,
		       const struct rs_cmd_odp_resolve *params);
int rs_com_odp_invalidate(struct rs_ibdev *dev,
			  const struct rs_cmd_odp_invalidate *params,
			  struct rs_com_odp_invalidate_result *result);

/* GIDs, network identities, counters */
int rs_com_add_gid(struct rs_ibdev *dev, const struct rs_cmd_add_gid *params,
		   struct rs_com_add_gid_result *result);
int rs_com_del_gid(struct rs_ibdev *dev, u32 index);
int rs_com_query_netid(struct rs_ibdev *dev,
		       const struct rs_cmd_query *params);
int rs_com_query_stats(struct rs_ibdev *dev,
		       const struct rs_cmd_query *params);

#endif /* RDMA_SESSION_COM_CMD_H */
