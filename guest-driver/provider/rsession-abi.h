/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rdma-session provider: the uverbs commands with their driver data.
 *
 * rdma-core's providers get these from kernel-headers/rdma/<driver>-abi.h
 * through a generated kernel-abi/<driver>-abi.h.  Our driver data lives in
 * the project's own header (abi/rdma-session-uverbs.h, copied from
 * include/hw/rdma-session/ at build time), so the generated _STRUCT_
 * helpers are empty and the driver data is reached as drv_payload.
 */
#ifndef RSESSION_ABI_H
#define RSESSION_ABI_H

#include <infiniband/kern-abi.h>
#include "abi/rdma-session-uverbs.h"

#define _STRUCT_rs_uverbs_alloc_ucontext_resp struct {}
#define _STRUCT_rs_uverbs_alloc_pd struct {}
#define _STRUCT_rs_uverbs_alloc_pd_resp struct {}
#define _STRUCT_rs_uverbs_create_cq_resp struct {}
#define _STRUCT_rs_uverbs_create_qp_resp struct {}
#define _STRUCT_rs_uverbs_create_ah_resp struct {}
#define _STRUCT_rs_uverbs_create_srq_resp struct {}
#define _STRUCT_rs_uverbs_resize_cq struct {}
#define _STRUCT_rs_uverbs_resize_cq_resp struct {}
#define _STRUCT_rs_uverbs_modify_srq struct {}
#define _STRUCT_rs_uverbs_create_qp struct {}
#define _STRUCT_rs_uverbs_reg_mr struct {}
#define _STRUCT_rs_uverbs_modify_qp struct {}

DECLARE_DRV_CMD(rs_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT, empty,
		rs_uverbs_alloc_ucontext_resp);
DECLARE_DRV_CMD(rs_alloc_pd, IB_USER_VERBS_CMD_ALLOC_PD, rs_uverbs_alloc_pd,
		rs_uverbs_alloc_pd_resp);
DECLARE_DRV_CMD(rs_create_cq, IB_USER_VERBS_EX_CMD_CREATE_CQ, empty,
		rs_uverbs_create_cq_resp);
DECLARE_DRV_CMD(rs_create_qp, IB_USER_VERBS_CMD_CREATE_QP, empty,
		rs_uverbs_create_qp_resp);
/* DC QPs: the same command with driver input (struct rs_uverbs_create_qp). */
DECLARE_DRV_CMD(rs_create_dc_qp, IB_USER_VERBS_CMD_CREATE_QP,
		rs_uverbs_create_qp, rs_uverbs_create_qp_resp);
/* rsdv_create_mkey: REG_MR with struct rs_uverbs_reg_mr. */
DECLARE_DRV_CMD(rs_reg_mkey, IB_USER_VERBS_CMD_REG_MR, rs_uverbs_reg_mr,
		empty);
DECLARE_DRV_CMD(rs_create_ah, IB_USER_VERBS_CMD_CREATE_AH, empty,
		rs_uverbs_create_ah_resp);
DECLARE_DRV_CMD(rs_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ, empty,
		rs_uverbs_create_srq_resp);
DECLARE_DRV_CMD(rs_create_xsrq, IB_USER_VERBS_CMD_CREATE_XSRQ, empty,
		rs_uverbs_create_srq_resp);
DECLARE_DRV_CMD(rs_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ, rs_uverbs_resize_cq,
		rs_uverbs_resize_cq_resp);
DECLARE_DRV_CMD(rs_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		rs_uverbs_modify_srq, empty);
/*
 * rsdv_modify_qp_path_policy: extended MODIFY_QP (the legacy one carries
 * no driver input) with struct rs_uverbs_modify_qp.
 */
DECLARE_DRV_CMD(rs_modify_qp_path, IB_USER_VERBS_EX_CMD_MODIFY_QP,
		rs_uverbs_modify_qp, empty);

#endif /* RSESSION_ABI_H */
