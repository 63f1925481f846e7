/*
 * rdma-session adapter: admin queue and command dispatch.
 *
 * Commands are read from the guest ring in a bottom half, dispatched
 * through a table indexed by a validated opcode, and completed with a
 * phase bit.  Handlers return an rs_status; a non-zero status is reported
 * to the guest in the completion and logged here, in one place.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "rdma-session-core.h"
#include "trace.h"

/* Bounded work per bottom-half run so a vCPU is never held for long. */
#define RS_ADMIN_BATCH 64

#define RS_DEVICE_ATTR_V14_SIZE \
    offsetof(struct rs_device_attr, max_dc_contexts)

static uint8_t rs_cmd_query_device(RSCore *c, const struct rs_admin_cmd *cmd,
                                   struct rs_admin_cqe *cqe)
{
    const RSParams *p = &c->p;
    struct rs_device_attr a = {
        .max_mr_size = cpu_to_le64((uint64_t)p->max_mr_pages <<
                                   RS_MR_MIN_PAGE_SHIFT),
        .page_size_cap = cpu_to_le64(MAKE_64BIT_MASK(RS_MR_MIN_PAGE_SHIFT,
                                     RS_MR_MAX_PAGE_SHIFT -
                                     RS_MR_MIN_PAGE_SHIFT + 1)),
        .abi_version = cpu_to_le32(rs_core_reg_read(c, A_RS_VERSION)),
        .caps = cpu_to_le32(rs_core_reg_read(c, A_RS_CAPS)),
        /* Index 0 is never handed out: a table of n holds n - 1. */
        .max_qp = cpu_to_le32(p->max_qps - 1),
        .max_qp_wr = cpu_to_le32(1u << RS_MAX_WQ_LOG),
        .max_sge = cpu_to_le32(RS_MAX_SGE),
        .max_cq = cpu_to_le32(p->max_cqs - 1),
        .max_cqe = cpu_to_le32(1u << RS_MAX_CQ_LOG),
        .max_mr = cpu_to_le32(p->max_mrs - 1),
        .max_pd = cpu_to_le32(p->max_pds - 1),
        .max_ah = cpu_to_le32(p->max_ahs - 1),
        .max_qp_rd_atom = cpu_to_le32(RS_MAX_RD_ATOMIC),
        .max_sessions = cpu_to_le32(p->max_sessions - 1),
        .max_session_groups = cpu_to_le32(p->max_groups - 1),
        .max_gids = cpu_to_le32(p->max_gids),
        .max_msg_size = cpu_to_le32(p->max_msg_size),
        .max_inline = cpu_to_le32(RS_MAX_INLINE),
        .num_comp_vectors = cpu_to_le32(p->num_comp_vectors),
        .num_db_pages = cpu_to_le32(p->db_pages),
        .max_srq = cpu_to_le32(p->max_srqs - 1),
        .max_srq_wr = cpu_to_le32(1u << RS_MAX_WQ_LOG),
        .max_srq_sge = cpu_to_le32(RS_MAX_SGE),
        /* Windows take slots of the MR key table. */
        .max_mw = cpu_to_le32(p->max_mrs - 1),
        .max_mcast_grp = cpu_to_le32(p->max_mcast_grps),
        .max_mcast_qp_attach = cpu_to_le32(p->max_mcast_qp_attach),
        .max_xrcds = cpu_to_le32(p->max_xrcds - 1),
        .max_odp_pages = cpu_to_le32(p->odp ? p->odp_pages : 0),
        .max_dc_contexts = cpu_to_le32(p->dc_contexts),
        .max_mkey_entries = cpu_to_le32(RS_MKEY_MAX_ENTRIES),
        .max_mkey_nest = cpu_to_le32(RS_MKEY_MAX_NEST),
        .dc_idle_us = cpu_to_le32(p->dc_idle_us),
    };

    memcpy(a.mac, c->mac.a, sizeof(a.mac));
    /* A driver of ABI 1.4 or older asks for the first 128 bytes. */
    return rs_write_resp(c, &cmd->query, &a,
                         MIN(sizeof(a), MAX(le32_to_cpu(cmd->query.resp_len),
                                            RS_DEVICE_ATTR_V14_SIZE)));
}

static uint8_t rs_cmd_query_port(RSCore *c, const struct rs_admin_cmd *cmd,
                                 struct rs_admin_cqe *cqe)
{
    bool active = rs_port_active(c);
    uint8_t mtu = rs_max_mtu(c);
    struct rs_port_attr a = {
        .state = active ? RS_PORT_ACTIVE : RS_PORT_DOWN,
        .max_mtu = mtu,
        .active_mtu = mtu,
        .phys_state = c->link_up ? 5 : 3,
        .gid_tbl_len = cpu_to_le32(c->p.max_gids),
        .pkey_tbl_len = cpu_to_le32(1),
        .active_speed_mbps = cpu_to_le32(100000),
    };

    if (le32_to_cpu(cmd->query.handle) != 1) {
        return RS_STATUS_BAD_PARAM;
    }
    return rs_write_resp(c, &cmd->query, &a, sizeof(a));
}

static uint8_t rs_cmd_query_stats(RSCore *c, const struct rs_admin_cmd *cmd,
                                  struct rs_admin_cqe *cqe)
{
    const struct rs_device_stats *s = &c->stats;
    struct rs_device_stats a = {
        .odp_faults = cpu_to_le64(s->odp_faults),
        .odp_resolved_pages = cpu_to_le64(s->odp_resolved_pages),
        .odp_invalidations = cpu_to_le64(s->odp_invalidations),
        .odp_fault_fails = cpu_to_le64(s->odp_fault_fails),
        .odp_pauses_sent = cpu_to_le64(s->odp_pauses_sent),
        .odp_pauses_rcvd = cpu_to_le64(s->odp_pauses_rcvd),
        .odp_resumes_rcvd = cpu_to_le64(s->odp_resumes_rcvd),
        .rnr_naks_rcvd = cpu_to_le64(s->rnr_naks_rcvd),
        .rnr_naks_sent = cpu_to_le64(s->rnr_naks_sent),
        .seq_naks_sent = cpu_to_le64(s->seq_naks_sent),
        .seq_naks_rcvd = cpu_to_le64(s->seq_naks_rcvd),
        .retransmits = cpu_to_le64(s->retransmits),
        .ack_timeouts = cpu_to_le64(s->ack_timeouts),
        .icrc_drops = cpu_to_le64(s->icrc_drops),
        .tx_packets = cpu_to_le64(s->tx_packets),
        .tx_bytes = cpu_to_le64(s->tx_bytes),
        .rx_packets = cpu_to_le64(s->rx_packets),
        .rx_bytes = cpu_to_le64(s->rx_bytes),
        .path_failovers = cpu_to_le64(s->path_failovers),
        .ram_dma_read_bytes = cpu_to_le64(s->ram_dma_read_bytes),
        .ram_dma_write_bytes = cpu_to_le64(s->ram_dma_write_bytes),
        .peer_dma_read_bytes = cpu_to_le64(s->peer_dma_read_bytes),
        .peer_dma_write_bytes = cpu_to_le64(s->peer_dma_write_bytes),
        .data_dma_refused = cpu_to_le64(s->data_dma_refused),
        .vlan_rx_dropped = cpu_to_le64(s->vlan_rx_dropped),
        .ecn_ce_received = cpu_to_le64(s->ecn_ce_received),
        .cnp_sent = cpu_to_le64(s->cnp_sent),
        .cnp_received = cpu_to_le64(s->cnp_received),
        .cnp_ignored = cpu_to_le64(s->cnp_ignored),
        .dcqcn_rate_reductions = cpu_to_le64(s->dcqcn_rate_reductions),
        .db_mmio_writes = cpu_to_le64(s->db_mmio_writes),
        .db_record_pickups = cpu_to_le64(s->db_record_pickups),
    };

    /* A driver of ABI 1.4 or 1.5 asks for (and gets) the first 64 bytes. */
    return rs_write_resp(c, &cmd->query, &a,
                         MIN(sizeof(a), MAX(le32_to_cpu(cmd->query.resp_len),
                                            RS_DEVICE_STATS_V14)));
}

static uint8_t rs_cmd_reserved(RSCore *c, const struct rs_admin_cmd *cmd,
                               struct rs_admin_cqe *cqe)
{
    return RS_STATUS_NOT_SUPPORTED;
}

static const struct {
    const char *name;
    RSCmdFn fn;
} rs_cmd_table[RS_CMD_MAX] = {
    [RS_CMD_QUERY_DEVICE] = { "QUERY_DEVICE", rs_cmd_query_device },
    [RS_CMD_QUERY_PORT] = { "QUERY_PORT", rs_cmd_query_port },
    [RS_CMD_CREATE_PD] = { "CREATE_PD", rs_cmd_create_pd },
    [RS_CMD_DESTROY_PD] = { "DESTROY_PD", rs_cmd_destroy_pd },
    [RS_CMD_CREATE_CQ] = { "CREATE_CQ", rs_cmd_create_cq },
    [RS_CMD_DESTROY_CQ] = { "DESTROY_CQ", rs_cmd_destroy_cq },
    [RS_CMD_RESIZE_CQ] = { "RESIZE_CQ", rs_cmd_resize_cq },
    [RS_CMD_CREATE_QP] = { "CREATE_QP", rs_cmd_create_qp },
    [RS_CMD_MODIFY_QP] = { "MODIFY_QP", rs_cmd_modify_qp },
    [RS_CMD_QUERY_QP] = { "QUERY_QP", rs_cmd_query_qp },
    [RS_CMD_DESTROY_QP] = { "DESTROY_QP", rs_cmd_destroy_qp },
    [RS_CMD_REG_MR] = { "REG_MR", rs_cmd_reg_mr },
    [RS_CMD_DEREG_MR] = { "DEREG_MR", rs_cmd_dereg_mr },
    [RS_CMD_CREATE_AH] = { "CREATE_AH", rs_cmd_create_ah },
    [RS_CMD_DESTROY_AH] = { "DESTROY_AH", rs_cmd_destroy_ah },
    [RS_CMD_CREATE_SESSION] = { "CREATE_SESSION", rs_cmd_create_session },
    [RS_CMD_DESTROY_SESSION] = { "DESTROY_SESSION", rs_cmd_destroy_session },
    [RS_CMD_CREATE_SESSION_GROUP] = { "CREATE_SESSION_GROUP",
                                      rs_cmd_create_group },
    [RS_CMD_DESTROY_SESSION_GROUP] = { "DESTROY_SESSION_GROUP",
                                       rs_cmd_destroy_group },
    [RS_CMD_ADD_GID] = { "ADD_GID", rs_cmd_add_gid },
    [RS_CMD_DEL_GID] = { "DEL_GID", rs_cmd_del_gid },
    [RS_CMD_CREATE_LAN_QUEUE] = { "CREATE_LAN_QUEUE",
                                  rs_cmd_create_lan_queue },
    [RS_CMD_DESTROY_LAN_QUEUE] = { "DESTROY_LAN_QUEUE",
                                   rs_cmd_destroy_lan_queue },
    [RS_CMD_SET_LAN_RX_MODE] = { "SET_LAN_RX_MODE", rs_cmd_set_lan_rx_mode },
    [RS_CMD_CREATE_SRQ] = { "CREATE_SRQ", rs_cmd_create_srq },
    [RS_CMD_MODIFY_SRQ] = { "MODIFY_SRQ", rs_cmd_modify_srq },
    [RS_CMD_DESTROY_SRQ] = { "DESTROY_SRQ", rs_cmd_destroy_srq },
    [RS_CMD_CREATE_DCT] = { "CREATE_DCT", rs_cmd_reserved },
    [RS_CMD_DESTROY_DCT] = { "DESTROY_DCT", rs_cmd_reserved },
    [RS_CMD_REG_INDIRECT_MKEY] = { "REG_INDIRECT_MKEY",
                                   rs_cmd_reg_mkey_list },
    [RS_CMD_REG_PATTERN_MKEY] = { "REG_PATTERN_MKEY", rs_cmd_reg_mkey_list },
    [RS_CMD_ODP_RESOLVE] = { "ODP_RESOLVE", rs_cmd_odp_resolve },
    [RS_CMD_ALLOC_MW] = { "ALLOC_MW", rs_cmd_alloc_mw },
    [RS_CMD_DEALLOC_MW] = { "DEALLOC_MW", rs_cmd_dealloc_mw },
    [RS_CMD_ATTACH_MCAST] = { "ATTACH_MCAST", rs_cmd_attach_mcast },
    [RS_CMD_DETACH_MCAST] = { "DETACH_MCAST", rs_cmd_detach_mcast },
    [RS_CMD_CREATE_XRCD] = { "CREATE_XRCD", rs_cmd_create_xrcd },
    [RS_CMD_DESTROY_XRCD] = { "DESTROY_XRCD", rs_cmd_destroy_xrcd },
    [RS_CMD_ODP_INVALIDATE] = { "ODP_INVALIDATE", rs_cmd_odp_invalidate },
    [RS_CMD_QUERY_STATS] = { "QUERY_STATS", rs_cmd_query_stats },
    [RS_CMD_QUERY_NETID] = { "QUERY_NETID", rs_cmd_query_netid },
    [RS_CMD_REREG_MR] = { "REREG_MR", rs_cmd_rereg_mr },
    [RS_CMD_QUERY_SESSION] = { "QUERY_SESSION", rs_cmd_query_session },
    [RS_CMD_SET_QP_DB_RECORD] = { "SET_QP_DB_RECORD",
                                  rs_cmd_set_qp_db_record },
};

static void rs_admin_exec(RSCore *c, const struct rs_admin_cmd *cmd,
                          struct rs_admin_cqe *cqe)
{
    uint8_t op = cmd->hdr.opcode;
    const char *name = op < RS_CMD_MAX ? rs_cmd_table[op].name : NULL;
    uint8_t st;

    if (!name) {
        RS_GUEST_ERR(rdma_session_err_opcode, "unknown admin opcode 0x%x",
                     op);
        cqe->status = RS_STATUS_BAD_OPCODE;
        return;
    }
    st = rs_cmd_table[op].fn(c, cmd, cqe);
    if (st != RS_STATUS_OK) {
        RS_GUEST_ERR(rdma_session_err_cmd, "%s failed with status 0x%x",
                     name, st);
        cqe->handle = 0;
        cqe->result1 = 0;
    }
    trace_rdma_session_cmd(name, le16_to_cpu(cmd->hdr.cmd_id), st,
                           le32_to_cpu(cqe->handle));
    cqe->status = st;
}

static void rs_admin_fatal(RSCore *c)
{
    RS_GUEST_ERR(rdma_session_err_admin_dma, "admin ring at 0x%" PRIx64
                 " unreachable", c->admq_base);
    c->status |= R_RS_STATUS_FATAL_MASK;
    c->status &= ~R_RS_STATUS_READY_MASK;
    c->fatal_code = RS_FATAL_DMA;
}

static void rs_admin_process(void *opaque)
{
    RSCore *c = opaque;
    unsigned log = FIELD_EX32(c->admq_cfg, RS_ADMQ_CFG, LOG_SIZE);
    uint32_t mask = (1u << log) - 1;
    unsigned done = 0;

    while ((c->status & R_RS_STATUS_READY_MASK) && c->admq_ci != c->admq_pi) {
        struct rs_admin_cmd cmd;
        struct rs_admin_cqe cqe = { 0 };
        uint32_t slot = c->admq_ci & mask;

        if (done == RS_ADMIN_BATCH) {
            qemu_bh_schedule(c->admin_bh);
            break;
        }
        if (rs_dma_read(c, c->admq_base + (uint64_t)slot * sizeof(cmd),
                        &cmd, sizeof(cmd))) {
            rs_admin_fatal(c);
            break;
        }
        cqe.cmd_id = cmd.hdr.cmd_id;
        rs_admin_exec(c, &cmd, &cqe);
        cqe.flags = ((c->admq_ci >> log) & 1) ? 0 : RS_ACQE_PHASE;
        if (rs_dma_write(c, c->acq_base + (uint64_t)slot * sizeof(cqe),
                         &cqe, sizeof(cqe))) {
            rs_admin_fatal(c);
            break;
        }
        c->admq_ci++;
        done++;
    }
    if (done) {
        c->notify(c->owner, FIELD_EX32(c->acq_cfg, RS_ACQ_CFG, VECTOR));
    }
}

/*
 * The admin queue's bottom half.  First in rs_features[]: it is made
 * before, stopped before and freed before every other feature's state.
 */
static bool rs_admin_realize(RSCore *c, Error **errp)
{
    c->admin_bh = qemu_bh_new_guarded(rs_admin_process, c, c->guard);
    return true;
}

static void rs_admin_unrealize(RSCore *c)
{
    qemu_bh_delete(c->admin_bh);
}

static void rs_admin_quiesce(RSCore *c)
{
    qemu_bh_cancel(c->admin_bh);
}

const RSFeature rs_feature_admin = {
    .name = "admin",
    .realize = rs_admin_realize,
    .unrealize = rs_admin_unrealize,
    .quiesce = rs_admin_quiesce,
};
