/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * rdma-session ABI guard.
 *
 * The QEMU device, the Linux driver and the rdma-core provider all compile
 * include/hw/rdma-session/rdma-session-abi.h.  This program pins what they
 * must agree on, with values written down by hand (not copied from the
 * compiler): the byte offset of every field of every structure that
 * crosses guest memory or the admin queue, that no structure has implicit
 * padding (so a 32-bit or differently aligned compiler lays it out the
 * same), and the register offsets.  The header's own _Static_asserts pin
 * the sizes; a layout change must update this file, the header and
 * docs/specs/rdma-session.rst together.
 *
 * Output is TAP.  The header is included first to prove it is
 * self-contained.
 */
#include "hw/rdma-session/rdma-session-abi.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

struct field {
    const char *name;
    size_t off;     /* offsetof() as compiled */
    size_t size;    /* sizeof the member */
    size_t want;    /* offset from the specification */
};

#define F(type, member, want) \
    { #member, offsetof(struct type, member), \
      sizeof(((struct type *)0)->member), (want) }

static int tests;
static int failures;

/* One TAP line; "got" and "want" are shown when the check fails. */
static void result(int ok, unsigned long got, unsigned long want,
                   const char *fmt, ...)
{
    va_list ap;

    tests++;
    if (!ok) {
        failures++;
    }
    printf("%s %d - ", ok ? "ok" : "not ok", tests);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (!ok) {
        printf(" (got %lu, expected %lu)", got, want);
    }
    printf("\n");
}

/*
 * Check each field's offset, then that the fields, in declaration order,
 * tile the structure with no gap: each starts where the previous ended and
 * the last ends at sizeof.
 */
static void check_struct(const char *type, size_t size, size_t want_size,
                         const struct field *f, size_t n)
{
    size_t i, end = 0, gap_at = 0, gap_want = 0;
    const char *hole = NULL;

    result(size == want_size, (unsigned long)size, (unsigned long)want_size,
           "sizeof(struct %s)", type);
    for (i = 0; i < n; i++) {
        result(f[i].off == f[i].want, (unsigned long)f[i].off,
               (unsigned long)f[i].want, "offsetof(struct %s, %s)", type,
               f[i].name);
        if (f[i].off != end && !hole) {
            hole = f[i].name;
            gap_at = f[i].off;
            gap_want = end;
        }
        end = f[i].off + f[i].size;
    }
    if (!hole && end != size) {
        hole = "the end";
        gap_at = size;
        gap_want = end;
    }
    if (hole) {
        result(0, (unsigned long)gap_at, (unsigned long)gap_want,
               "struct %s has no implicit padding: gap before %s", type, hole);
    } else {
        result(1, 0, 0, "struct %s has no implicit padding", type);
    }
}

#define CHECK_STRUCT(type, want_size, ...) do {                          \
        static const struct field f_[] = { __VA_ARGS__ };                \
        check_struct(#type, sizeof(struct type), (want_size), f_,        \
                     sizeof(f_) / sizeof(f_[0]));                        \
    } while (0)

static void check_value(const char *name, unsigned long got, unsigned long want)
{
    result(got == want, got, want, "%s", name);
}

#define CHECK_VALUE(name, want) check_value(#name, (unsigned long)(name), (want))

/* A command body lives at byte 8 of the 64-byte admin command. */
#define CHECK_CMD_BODY(member, type) do {                                 \
        check_value("offsetof(struct rs_admin_cmd, " #member ")",         \
                    (unsigned long)offsetof(struct rs_admin_cmd, member), 8); \
        result(sizeof(struct type) <= 56, (unsigned long)sizeof(struct type), \
               56, "struct %s fits the 56-byte command body", #type);     \
    } while (0)

int main(void)
{
    /* Admin queue: commands. */
    CHECK_STRUCT(rs_cmd_hdr, 8,
        F(rs_cmd_hdr, opcode, 0),
        F(rs_cmd_hdr, rsvd0, 1),
        F(rs_cmd_hdr, cmd_id, 2),
        F(rs_cmd_hdr, rsvd1, 4));
    CHECK_STRUCT(rs_cmd_query, 16,
        F(rs_cmd_query, resp_addr, 0),
        F(rs_cmd_query, resp_len, 8),
        F(rs_cmd_query, handle, 12));
    CHECK_STRUCT(rs_cmd_create_pd, 8,
        F(rs_cmd_create_pd, flags, 0),
        F(rs_cmd_create_pd, netid, 4));
    CHECK_STRUCT(rs_netid_attr, 32,
        F(rs_netid_attr, vni, 0),
        F(rs_netid_attr, flags, 4),
        F(rs_netid_attr, prefix_len, 5),
        F(rs_netid_attr, ngids, 6),
        F(rs_netid_attr, prefix, 8),
        F(rs_netid_attr, nkeys, 24),
        F(rs_netid_attr, npds, 28));
    CHECK_STRUCT(rs_cmd_destroy, 8,
        F(rs_cmd_destroy, handle, 0),
        F(rs_cmd_destroy, rsvd, 4));
    CHECK_STRUCT(rs_cmd_create_cq, 16,
        F(rs_cmd_create_cq, ring_addr, 0),
        F(rs_cmd_create_cq, log_size, 8),
        F(rs_cmd_create_cq, rsvd0, 9),
        F(rs_cmd_create_cq, comp_vector, 10),
        F(rs_cmd_create_cq, uar, 12));
    CHECK_STRUCT(rs_cmd_resize_cq, 24,
        F(rs_cmd_resize_cq, ring_addr, 0),
        F(rs_cmd_resize_cq, handle, 8),
        F(rs_cmd_resize_cq, log_size, 12),
        F(rs_cmd_resize_cq, rsvd0, 13),
        F(rs_cmd_resize_cq, rsvd1, 14),
        F(rs_cmd_resize_cq, consumer_index, 16),
        F(rs_cmd_resize_cq, rsvd2, 20));
    CHECK_STRUCT(rs_cmd_create_qp, 56,
        F(rs_cmd_create_qp, sq_addr, 0),
        F(rs_cmd_create_qp, rq_addr, 8),
        F(rs_cmd_create_qp, pd, 16),
        F(rs_cmd_create_qp, send_cq, 20),
        F(rs_cmd_create_qp, recv_cq, 24),
        F(rs_cmd_create_qp, srq, 28),
        F(rs_cmd_create_qp, qp_type, 32),
        F(rs_cmd_create_qp, sq_log_size, 33),
        F(rs_cmd_create_qp, rq_log_size, 34),
        F(rs_cmd_create_qp, max_send_sge, 35),
        F(rs_cmd_create_qp, max_recv_sge, 36),
        F(rs_cmd_create_qp, flags, 37),
        F(rs_cmd_create_qp, max_inline, 38),
        F(rs_cmd_create_qp, uar, 40),
        F(rs_cmd_create_qp, session_group, 44),
        F(rs_cmd_create_qp, xrcd, 48),
        F(rs_cmd_create_qp, rsvd2, 52));
    /* Members of an anonymous union with the one above. */
    CHECK_VALUE(offsetof(struct rs_cmd_create_qp, dc_key_lo), 48);
    CHECK_VALUE(offsetof(struct rs_cmd_create_qp, dc_key_hi), 52);
    CHECK_STRUCT(rs_cmd_create_srq, 32,
        F(rs_cmd_create_srq, ring_addr, 0),
        F(rs_cmd_create_srq, pd, 8),
        F(rs_cmd_create_srq, uar, 12),
        F(rs_cmd_create_srq, log_size, 16),
        F(rs_cmd_create_srq, max_sge, 17),
        F(rs_cmd_create_srq, rsvd0, 18),
        F(rs_cmd_create_srq, srq_limit, 20),
        F(rs_cmd_create_srq, xrcd, 24),
        F(rs_cmd_create_srq, cq, 28));
    CHECK_STRUCT(rs_cmd_mcast, 24,
        F(rs_cmd_mcast, gid, 0),
        F(rs_cmd_mcast, qp, 16),
        F(rs_cmd_mcast, rsvd, 20));
    CHECK_STRUCT(rs_cmd_odp_resolve, 32,
        F(rs_cmd_odp_resolve, key, 0),
        F(rs_cmd_odp_resolve, seq, 4),
        F(rs_cmd_odp_resolve, va, 8),
        F(rs_cmd_odp_resolve, pbl_addr, 16),
        F(rs_cmd_odp_resolve, npages, 24),
        F(rs_cmd_odp_resolve, flags, 28));
    CHECK_STRUCT(rs_cmd_odp_invalidate, 24,
        F(rs_cmd_odp_invalidate, key, 0),
        F(rs_cmd_odp_invalidate, rsvd, 4),
        F(rs_cmd_odp_invalidate, va, 8),
        F(rs_cmd_odp_invalidate, length, 16));
    CHECK_STRUCT(rs_device_stats, 256,
        F(rs_device_stats, odp_faults, 0),
        F(rs_device_stats, odp_resolved_pages, 8),
        F(rs_device_stats, odp_invalidations, 16),
        F(rs_device_stats, odp_fault_fails, 24),
        F(rs_device_stats, odp_pauses_sent, 32),
        F(rs_device_stats, odp_pauses_rcvd, 40),
        F(rs_device_stats, odp_resumes_rcvd, 48),
        F(rs_device_stats, rnr_naks_rcvd, 56),
        F(rs_device_stats, rnr_naks_sent, 64),
        F(rs_device_stats, seq_naks_sent, 72),
        F(rs_device_stats, seq_naks_rcvd, 80),
        F(rs_device_stats, retransmits, 88),
        F(rs_device_stats, ack_timeouts, 96),
        F(rs_device_stats, icrc_drops, 104),
        F(rs_device_stats, tx_packets, 112),
        F(rs_device_stats, tx_bytes, 120),
        F(rs_device_stats, rx_packets, 128),
        F(rs_device_stats, rx_bytes, 136),
        F(rs_device_stats, path_failovers, 144),
        F(rs_device_stats, ram_dma_read_bytes, 152),
        F(rs_device_stats, ram_dma_write_bytes, 160),
        F(rs_device_stats, peer_dma_read_bytes, 168),
        F(rs_device_stats, peer_dma_write_bytes, 176),
        F(rs_device_stats, data_dma_refused, 184),
        F(rs_device_stats, vlan_rx_dropped, 192),
        F(rs_device_stats, ecn_ce_received, 200),
        F(rs_device_stats, cnp_sent, 208),
        F(rs_device_stats, cnp_received, 216),
        F(rs_device_stats, cnp_ignored, 224),
        F(rs_device_stats, dcqcn_rate_reductions, 232),
        F(rs_device_stats, db_mmio_writes, 240),
        F(rs_device_stats, db_record_pickups, 248));
    CHECK_STRUCT(rs_db_record, 16,
        F(rs_db_record, sq_prod, 0),
        F(rs_db_record, sq_active, 4),
        F(rs_db_record, rq_prod, 8),
        F(rs_db_record, rq_active, 12));
    CHECK_STRUCT(rs_cmd_set_qp_db_record, 16,
        F(rs_cmd_set_qp_db_record, addr, 0),
        F(rs_cmd_set_qp_db_record, handle, 8),
        F(rs_cmd_set_qp_db_record, rsvd, 12));
    CHECK_STRUCT(rs_session_attr, 104,
        F(rs_session_attr, dst_ip, 0),
        F(rs_session_attr, dmac, 16),
        F(rs_session_attr, src_port, 22),
        F(rs_session_attr, dst_port, 24),
        F(rs_session_attr, state, 26),
        F(rs_session_attr, rsvd0, 27),
        F(rs_session_attr, gid_index, 28),
        F(rs_session_attr, groups, 32),
        F(rs_session_attr, rsvd1, 36),
        F(rs_session_attr, tx_packets, 40),
        F(rs_session_attr, failovers, 48),
        F(rs_session_attr, recoveries, 56),
        F(rs_session_attr, migrated, 64),
        F(rs_session_attr, ack_age_us, 72),
        F(rs_session_attr, down_age_us, 80),
        F(rs_session_attr, rsvd, 88));
    CHECK_STRUCT(rs_cmd_modify_srq, 24,
        F(rs_cmd_modify_srq, ring_addr, 0),
        F(rs_cmd_modify_srq, handle, 8),
        F(rs_cmd_modify_srq, attr_mask, 12),
        F(rs_cmd_modify_srq, srq_limit, 16),
        F(rs_cmd_modify_srq, log_size, 20),
        F(rs_cmd_modify_srq, rsvd0, 21));
    CHECK_STRUCT(rs_cmd_modify_qp, 16,
        F(rs_cmd_modify_qp, attr_addr, 0),
        F(rs_cmd_modify_qp, handle, 8),
        F(rs_cmd_modify_qp, attr_mask, 12));
    CHECK_STRUCT(rs_cmd_reg_mr, 40,
        F(rs_cmd_reg_mr, iova, 0),
        F(rs_cmd_reg_mr, length, 8),
        F(rs_cmd_reg_mr, pbl_addr, 16),
        F(rs_cmd_reg_mr, npages, 24),
        F(rs_cmd_reg_mr, pd, 28),
        F(rs_cmd_reg_mr, page_shift, 32),
        F(rs_cmd_reg_mr, flags, 33),
        F(rs_cmd_reg_mr, access, 34),
        F(rs_cmd_reg_mr, gid_index, 36));
    CHECK_STRUCT(rs_cmd_rereg_mr, 48,
        F(rs_cmd_rereg_mr, handle, 0),
        F(rs_cmd_rereg_mr, flags, 4),
        F(rs_cmd_rereg_mr, iova, 8),
        F(rs_cmd_rereg_mr, length, 16),
        F(rs_cmd_rereg_mr, pbl_addr, 24),
        F(rs_cmd_rereg_mr, npages, 32),
        F(rs_cmd_rereg_mr, pd, 36),
        F(rs_cmd_rereg_mr, page_shift, 40),
        F(rs_cmd_rereg_mr, mr_flags, 41),
        F(rs_cmd_rereg_mr, access, 42),
        F(rs_cmd_rereg_mr, rsvd, 44));
    CHECK_STRUCT(rs_cmd_create_ah, 40,
        F(rs_cmd_create_ah, dgid, 0),
        F(rs_cmd_create_ah, dmac, 16),
        F(rs_cmd_create_ah, hop_limit, 22),
        F(rs_cmd_create_ah, traffic_class, 23),
        F(rs_cmd_create_ah, pd, 24),
        F(rs_cmd_create_ah, flow_label, 28),
        F(rs_cmd_create_ah, gid_index, 32),
        F(rs_cmd_create_ah, rsvd, 36));
    CHECK_STRUCT(rs_cmd_create_session, 36,
        F(rs_cmd_create_session, dst_ip, 0),
        F(rs_cmd_create_session, dmac, 16),
        F(rs_cmd_create_session, src_port, 22),
        F(rs_cmd_create_session, dst_port, 24),
        F(rs_cmd_create_session, rsvd0, 26),
        F(rs_cmd_create_session, gid_index, 28),
        F(rs_cmd_create_session, rsvd1, 32));
    CHECK_STRUCT(rs_cmd_create_session_group, 40,
        F(rs_cmd_create_session_group, session, 0),
        F(rs_cmd_create_session_group, nsessions, 32),
        F(rs_cmd_create_session_group, policy, 33),
        F(rs_cmd_create_session_group, rsvd0, 34),
        F(rs_cmd_create_session_group, rsvd1, 36));
    CHECK_STRUCT(rs_cmd_add_gid, 32,
        F(rs_cmd_add_gid, gid, 0),
        F(rs_cmd_add_gid, index, 16),
        F(rs_cmd_add_gid, type, 20),
        F(rs_cmd_add_gid, rsvd0, 21),
        F(rs_cmd_add_gid, vni, 24),
        F(rs_cmd_add_gid, vlan, 28),
        F(rs_cmd_add_gid, rsvd1, 30));
    CHECK_STRUCT(rs_admin_cmd, 64,
        F(rs_admin_cmd, hdr, 0),
        F(rs_admin_cmd, raw, 8));
    CHECK_CMD_BODY(query, rs_cmd_query);
    CHECK_CMD_BODY(destroy, rs_cmd_destroy);
    CHECK_CMD_BODY(create_pd, rs_cmd_create_pd);
    CHECK_CMD_BODY(create_cq, rs_cmd_create_cq);
    CHECK_CMD_BODY(resize_cq, rs_cmd_resize_cq);
    CHECK_CMD_BODY(create_qp, rs_cmd_create_qp);
    CHECK_CMD_BODY(modify_qp, rs_cmd_modify_qp);
    CHECK_CMD_BODY(create_srq, rs_cmd_create_srq);
    CHECK_CMD_BODY(modify_srq, rs_cmd_modify_srq);
    CHECK_CMD_BODY(mcast, rs_cmd_mcast);
    CHECK_CMD_BODY(reg_mr, rs_cmd_reg_mr);
    CHECK_CMD_BODY(rereg_mr, rs_cmd_rereg_mr);
    CHECK_CMD_BODY(odp_resolve, rs_cmd_odp_resolve);
    CHECK_CMD_BODY(odp_invalidate, rs_cmd_odp_invalidate);
    CHECK_CMD_BODY(reg_mkey, rs_cmd_reg_mkey_list);
    CHECK_CMD_BODY(create_ah, rs_cmd_create_ah);
    CHECK_CMD_BODY(create_session, rs_cmd_create_session);
    CHECK_CMD_BODY(create_group, rs_cmd_create_session_group);
    CHECK_CMD_BODY(add_gid, rs_cmd_add_gid);

    /* Admin queue: completions; async events. */
    CHECK_STRUCT(rs_admin_cqe, 16,
        F(rs_admin_cqe, cmd_id, 0),
        F(rs_admin_cqe, status, 2),
        F(rs_admin_cqe, flags, 3),
        F(rs_admin_cqe, handle, 4),
        F(rs_admin_cqe, result1, 8),
        F(rs_admin_cqe, rsvd, 12));
    CHECK_STRUCT(rs_event, 16,
        F(rs_event, type, 0),
        F(rs_event, flags, 1),
        F(rs_event, info, 2),
        F(rs_event, handle, 4),
        F(rs_event, data, 8));

    /* Attributes (QUERY_* responses, MODIFY_QP input). */
    CHECK_STRUCT(rs_device_attr, 160,
        F(rs_device_attr, max_mr_size, 0),
        F(rs_device_attr, page_size_cap, 8),
        F(rs_device_attr, abi_version, 16),
        F(rs_device_attr, caps, 20),
        F(rs_device_attr, max_qp, 24),
        F(rs_device_attr, max_qp_wr, 28),
        F(rs_device_attr, max_sge, 32),
        F(rs_device_attr, max_cq, 36),
        F(rs_device_attr, max_cqe, 40),
        F(rs_device_attr, max_mr, 44),
        F(rs_device_attr, max_pd, 48),
        F(rs_device_attr, max_ah, 52),
        F(rs_device_attr, max_qp_rd_atom, 56),
        F(rs_device_attr, max_sessions, 60),
        F(rs_device_attr, max_session_groups, 64),
        F(rs_device_attr, max_gids, 68),
        F(rs_device_attr, max_msg_size, 72),
        F(rs_device_attr, max_inline, 76),
        F(rs_device_attr, num_comp_vectors, 80),
        F(rs_device_attr, num_db_pages, 84),
        F(rs_device_attr, mac, 88),
        F(rs_device_attr, rsvd0, 94),
        F(rs_device_attr, max_srq, 96),
        F(rs_device_attr, max_srq_wr, 100),
        F(rs_device_attr, max_srq_sge, 104),
        F(rs_device_attr, max_mw, 108),
        F(rs_device_attr, max_mcast_grp, 112),
        F(rs_device_attr, max_mcast_qp_attach, 116),
        F(rs_device_attr, max_xrcds, 120),
        F(rs_device_attr, max_odp_pages, 124),
        F(rs_device_attr, max_dc_contexts, 128),
        F(rs_device_attr, max_mkey_entries, 132),
        F(rs_device_attr, max_mkey_nest, 136),
        F(rs_device_attr, dc_idle_us, 140),
        F(rs_device_attr, rsvd1, 144));
    CHECK_STRUCT(rs_port_attr, 64,
        F(rs_port_attr, state, 0),
        F(rs_port_attr, max_mtu, 1),
        F(rs_port_attr, active_mtu, 2),
        F(rs_port_attr, phys_state, 3),
        F(rs_port_attr, gid_tbl_len, 4),
        F(rs_port_attr, pkey_tbl_len, 8),
        F(rs_port_attr, active_speed_mbps, 12),
        F(rs_port_attr, rsvd, 16));
    CHECK_STRUCT(rs_ah_attr, 32,
        F(rs_ah_attr, dgid, 0),
        F(rs_ah_attr, dmac, 16),
        F(rs_ah_attr, hop_limit, 22),
        F(rs_ah_attr, traffic_class, 23),
        F(rs_ah_attr, flow_label, 24),
        F(rs_ah_attr, gid_index, 28));
    CHECK_STRUCT(rs_qp_attr, 96,
        F(rs_qp_attr, qp_state, 0),
        F(rs_qp_attr, cur_qp_state, 1),
        F(rs_qp_attr, path_mtu, 2),
        F(rs_qp_attr, port_num, 3),
        F(rs_qp_attr, qkey, 4),
        F(rs_qp_attr, rq_psn, 8),
        F(rs_qp_attr, sq_psn, 12),
        F(rs_qp_attr, dest_qp_num, 16),
        F(rs_qp_attr, access_flags, 20),
        F(rs_qp_attr, pkey_index, 22),
        F(rs_qp_attr, max_rd_atomic, 24),
        F(rs_qp_attr, max_dest_rd_atomic, 25),
        F(rs_qp_attr, min_rnr_timer, 26),
        F(rs_qp_attr, timeout, 27),
        F(rs_qp_attr, retry_cnt, 28),
        F(rs_qp_attr, rnr_retry, 29),
        F(rs_qp_attr, sq_draining, 30),
        F(rs_qp_attr, en_sqd_async_notify, 31),
        F(rs_qp_attr, session_group, 32),
        F(rs_qp_attr, ah, 36),
        F(rs_qp_attr, qp_type, 68),
        F(rs_qp_attr, rsvd, 72));

    /* Data path: completions, scatter/gather entries, work requests. */
    CHECK_STRUCT(rs_cqe, 32,
        F(rs_cqe, wr_id, 0),
        F(rs_cqe, byte_len, 8),
        F(rs_cqe, imm_or_inv, 12),
        F(rs_cqe, qpn, 16),
        F(rs_cqe, src_qp, 20),
        F(rs_cqe, opcode, 24),
        F(rs_cqe, status, 25),
        F(rs_cqe, wc_flags, 26),
        F(rs_cqe, owner, 27),
        F(rs_cqe, srqn, 28));
    CHECK_STRUCT(rs_sge, 16,
        F(rs_sge, addr, 0),
        F(rs_sge, length, 8),
        F(rs_sge, lkey, 12));
    CHECK_STRUCT(rs_mkey_entry, 16,
        F(rs_mkey_entry, addr, 0),
        F(rs_mkey_entry, length, 8),
        F(rs_mkey_entry, key, 12));
    CHECK_STRUCT(rs_pattern_entry, 24,
        F(rs_pattern_entry, addr, 0),
        F(rs_pattern_entry, key, 8),
        F(rs_pattern_entry, bytes_count, 12),
        F(rs_pattern_entry, bytes_skip, 16),
        F(rs_pattern_entry, rsvd, 20));
    CHECK_STRUCT(rs_cmd_reg_mkey_list, 32,
        F(rs_cmd_reg_mkey_list, list_addr, 0),
        F(rs_cmd_reg_mkey_list, pd, 8),
        F(rs_cmd_reg_mkey_list, gid_index, 12),
        F(rs_cmd_reg_mkey_list, nentries, 16),
        F(rs_cmd_reg_mkey_list, access, 18),
        F(rs_cmd_reg_mkey_list, repeat, 20),
        F(rs_cmd_reg_mkey_list, flags, 24),
        F(rs_cmd_reg_mkey_list, rsvd, 28));
    CHECK_STRUCT(rs_send_wqe_reg_mkey, 64,
        F(rs_send_wqe_reg_mkey, wr_id, 0),
        F(rs_send_wqe_reg_mkey, opcode, 8),
        F(rs_send_wqe_reg_mkey, flags, 9),
        F(rs_send_wqe_reg_mkey, num_sge, 10),
        F(rs_send_wqe_reg_mkey, rsvd0, 11),
        F(rs_send_wqe_reg_mkey, key, 12),
        F(rs_send_wqe_reg_mkey, nentries, 16),
        F(rs_send_wqe_reg_mkey, access, 18),
        F(rs_send_wqe_reg_mkey, repeat, 20),
        F(rs_send_wqe_reg_mkey, rsvd1, 24));
    CHECK_STRUCT(rs_send_wqe_ctrl, 64,
        F(rs_send_wqe_ctrl, wr_id, 0),
        F(rs_send_wqe_ctrl, opcode, 8),
        F(rs_send_wqe_ctrl, flags, 9),
        F(rs_send_wqe_ctrl, num_sge, 10),
        F(rs_send_wqe_ctrl, rsvd0, 11),
        F(rs_send_wqe_ctrl, imm_or_inv, 12),
        F(rs_send_wqe_ctrl, remote_addr, 16),
        F(rs_send_wqe_ctrl, rkey, 24),
        F(rs_send_wqe_ctrl, inline_len, 28),
        F(rs_send_wqe_ctrl, compare_add, 32),
        F(rs_send_wqe_ctrl, swap, 40),
        F(rs_send_wqe_ctrl, ah, 48),
        F(rs_send_wqe_ctrl, remote_qpn, 52),
        F(rs_send_wqe_ctrl, remote_qkey, 56),
        F(rs_send_wqe_ctrl, xrc_srqn, 60));
    CHECK_VALUE(offsetof(struct rs_send_wqe_ctrl, dc_key_lo), 56);
    CHECK_VALUE(offsetof(struct rs_send_wqe_ctrl, dc_key_hi), 60);
    CHECK_STRUCT(rs_send_wqe_reg_mr, 64,
        F(rs_send_wqe_reg_mr, wr_id, 0),
        F(rs_send_wqe_reg_mr, opcode, 8),
        F(rs_send_wqe_reg_mr, flags, 9),
        F(rs_send_wqe_reg_mr, num_sge, 10),
        F(rs_send_wqe_reg_mr, page_shift, 11),
        F(rs_send_wqe_reg_mr, key, 12),
        F(rs_send_wqe_reg_mr, iova, 16),
        F(rs_send_wqe_reg_mr, length, 24),
        F(rs_send_wqe_reg_mr, pbl_addr, 32),
        F(rs_send_wqe_reg_mr, npages, 40),
        F(rs_send_wqe_reg_mr, access, 44),
        F(rs_send_wqe_reg_mr, rsvd0, 46),
        F(rs_send_wqe_reg_mr, rsvd1, 48));
    CHECK_STRUCT(rs_send_wqe_bind_mw, 64,
        F(rs_send_wqe_bind_mw, wr_id, 0),
        F(rs_send_wqe_bind_mw, opcode, 8),
        F(rs_send_wqe_bind_mw, flags, 9),
        F(rs_send_wqe_bind_mw, num_sge, 10),
        F(rs_send_wqe_bind_mw, rsvd0, 11),
        F(rs_send_wqe_bind_mw, mw_rkey, 12),
        F(rs_send_wqe_bind_mw, addr, 16),
        F(rs_send_wqe_bind_mw, length, 24),
        F(rs_send_wqe_bind_mw, mr_lkey, 32),
        F(rs_send_wqe_bind_mw, new_rkey, 36),
        F(rs_send_wqe_bind_mw, access, 40),
        F(rs_send_wqe_bind_mw, rsvd1, 42),
        F(rs_send_wqe_bind_mw, rsvd2, 44));
    CHECK_STRUCT(rs_cmd_alloc_mw, 16,
        F(rs_cmd_alloc_mw, pd, 0),
        F(rs_cmd_alloc_mw, gid_index, 4),
        F(rs_cmd_alloc_mw, type, 8),
        F(rs_cmd_alloc_mw, rsvd0, 9),
        F(rs_cmd_alloc_mw, rsvd1, 12));
    CHECK_CMD_BODY(alloc_mw, rs_cmd_alloc_mw);
    CHECK_STRUCT(rs_recv_wqe_ctrl, 16,
        F(rs_recv_wqe_ctrl, wr_id, 0),
        F(rs_recv_wqe_ctrl, num_sge, 8),
        F(rs_recv_wqe_ctrl, rsvd, 9));

    /* PCI identity and register map (BAR 0) and doorbells (BAR 2). */
    CHECK_VALUE(RS_PCI_VENDOR_ID, 0x1af4);
    CHECK_VALUE(RS_PCI_DEVICE_ID, 0x10f0);
    CHECK_VALUE(RS_REGS_SIZE, 0x1000);
    CHECK_VALUE(RS_DB_PAGE_SIZE, 0x1000);
    CHECK_VALUE(A_RS_MAGIC, 0x000);
    CHECK_VALUE(A_RS_VERSION, 0x004);
    CHECK_VALUE(A_RS_CAPS, 0x008);
    CHECK_VALUE(A_RS_DB_PAGES, 0x00c);
    CHECK_VALUE(A_RS_CTRL, 0x010);
    CHECK_VALUE(A_RS_STATUS, 0x014);
    CHECK_VALUE(A_RS_FATAL_CODE, 0x018);
    CHECK_VALUE(A_RS_NUM_MSIX, 0x01c);
    CHECK_VALUE(A_RS_ADMQ_BASE_LO, 0x020);
    CHECK_VALUE(A_RS_ADMQ_BASE_HI, 0x024);
    CHECK_VALUE(A_RS_ADMQ_CFG, 0x028);
    CHECK_VALUE(A_RS_ADMQ_CI, 0x02c);
    CHECK_VALUE(A_RS_ACQ_BASE_LO, 0x030);
    CHECK_VALUE(A_RS_ACQ_BASE_HI, 0x034);
    CHECK_VALUE(A_RS_ACQ_CFG, 0x038);
    CHECK_VALUE(A_RS_AEQ_BASE_LO, 0x040);
    CHECK_VALUE(A_RS_AEQ_BASE_HI, 0x044);
    CHECK_VALUE(A_RS_AEQ_CFG, 0x048);
    CHECK_VALUE(A_RS_AEQ_CI, 0x04c);
    CHECK_VALUE(A_RS_MAC_LO, 0x050);
    CHECK_VALUE(A_RS_MAC_HI, 0x054);
    CHECK_VALUE(A_RS_ADMQ_DB, 0x100);
    CHECK_VALUE(A_RS_COMP_CAUSE, 0x400);
    CHECK_VALUE(RS_COMP_CAUSE_NONE, 0xffffffffu);
    CHECK_VALUE(RS_LOCAL_DMA_LKEY, 0);
    CHECK_VALUE(RS_PD_F_PRIVILEGED, 1);
    CHECK_VALUE(RS_MR_F_FAST_REG, 4);
    CHECK_VALUE(RS_MAX_FRMR_PAGES, 512);
    /* A CQ's consumer index is a 16-bit doorbell value: 2^15 entries. */
    CHECK_VALUE(RS_MAX_CQ_LOG, 15);
    CHECK_VALUE(RS_WR_LOCAL_INV, 0x08);
    CHECK_VALUE(RS_WQE_F_AV_ADDR, 0x10);
    CHECK_VALUE(RS_WR_REG_MR, 0x09);
    CHECK_VALUE(RS_DB_SQ, 0x00);
    CHECK_VALUE(RS_DB_RQ, 0x08);
    CHECK_VALUE(RS_DB_CQ_CI, 0x10);
    CHECK_VALUE(RS_DB_CQ_ARM, 0x18);
    CHECK_VALUE(RS_DB_SRQ, 0x20);
    CHECK_VALUE(RS_ABI_VERSION_MAJOR, 1);
    CHECK_VALUE(RS_ABI_VERSION_MINOR, 11);
    CHECK_VALUE(RS_CMD_CREATE_SRQ, 0x20);
    CHECK_VALUE(RS_CMD_MODIFY_SRQ, 0x21);
    CHECK_VALUE(RS_CMD_DESTROY_SRQ, 0x22);
    CHECK_VALUE(RS_CAP_ATOMIC, 0x40);
    CHECK_VALUE(RS_CAP_SRQ, 0x80);
    CHECK_VALUE(RS_CAP_MW, 0x1000);
    CHECK_VALUE(RS_CMD_ALLOC_MW, 0x28);
    CHECK_VALUE(RS_CMD_DEALLOC_MW, 0x29);
    CHECK_VALUE(RS_CMD_MAX, 0x35);
    CHECK_VALUE(RS_WR_BIND_MW, 0x0a);
    CHECK_VALUE(RS_WC_MW_BIND_ERR, 6);
    CHECK_VALUE(RS_MW_TYPE_1, 1);
    CHECK_VALUE(RS_MW_TYPE_2, 2);
    CHECK_VALUE(RS_CAP_MCAST, 0x2000);
    CHECK_VALUE(RS_CMD_ATTACH_MCAST, 0x2a);
    CHECK_VALUE(RS_CMD_DETACH_MCAST, 0x2b);
    CHECK_VALUE(RS_MCAST_QPN, 0xffffff);
    CHECK_VALUE(RS_EV_SRQ_LIMIT_REACHED, 0x0b);
    CHECK_VALUE(RS_CAP_FLUSH, 0x4000);
    CHECK_VALUE(RS_CAP_ATOMIC_WRITE, 0x8000);
    CHECK_VALUE(RS_WR_FLUSH, 0x0b);
    CHECK_VALUE(RS_WR_ATOMIC_WRITE, 0x0c);
    CHECK_VALUE(RS_ACCESS_FLUSH_GLOBAL, 0x20);
    CHECK_VALUE(RS_ACCESS_FLUSH_PERSISTENT, 0x40);
    CHECK_VALUE(RS_FLUSH_PLT_GLOBAL, 1);
    CHECK_VALUE(RS_FLUSH_PLT_PERSISTENT, 2);
    CHECK_VALUE(RS_FLUSH_SEL_SHIFT, 4);
    CHECK_VALUE(RS_FLUSH_SEL_MR, 1);
    CHECK_VALUE(RS_CAP_XRC, 0x10000);
    CHECK_VALUE(RS_CMD_CREATE_XRCD, 0x2c);
    CHECK_VALUE(RS_CMD_DESTROY_XRCD, 0x2d);
    CHECK_VALUE(RS_QPT_XRC_INI, 6);
    CHECK_VALUE(RS_QPT_XRC_TGT, 7);
    CHECK_VALUE(RS_CAP_ODP, 0x800);
    CHECK_VALUE(RS_MR_F_ODP, 2);
    CHECK_VALUE(RS_MR_F_ODP_IMPLICIT, 8);
    CHECK_VALUE(RS_CMD_ODP_RESOLVE, 0x27);
    CHECK_VALUE(RS_CMD_ODP_INVALIDATE, 0x2e);
    CHECK_VALUE(RS_CMD_QUERY_STATS, 0x2f);
    CHECK_VALUE(RS_STATUS_STALE, 0x11);
    /* ABI 1.5: DC, indirect and pattern keys. */
    CHECK_VALUE(RS_CAP_DC, 0x100);
    CHECK_VALUE(RS_CAP_INDIRECT_MKEY, 0x200);
    CHECK_VALUE(RS_CAP_PATTERN_MKEY, 0x400);
    /* ABI 1.6: the transport counters. */
    CHECK_VALUE(RS_CAP_DEVICE_COUNTERS, 0x80000);
    CHECK_VALUE(RS_CAP_COMP_CAUSE, 0x100000);
    CHECK_VALUE(RS_DEVICE_STATS_V14, 64);
    CHECK_VALUE(RS_QPT_DCI, 4);
    CHECK_VALUE(RS_QPT_DCT, 5);
    CHECK_VALUE(RS_WR_REG_INDIRECT, 0x0d);
    CHECK_VALUE(RS_WR_REG_PATTERN, 0x0e);
    CHECK_VALUE(RS_CMD_REG_INDIRECT_MKEY, 0x25);
    CHECK_VALUE(RS_CMD_REG_PATTERN_MKEY, 0x26);
    CHECK_VALUE(RS_EV_DCT_KEY_VIOLATION, 0x12);
    CHECK_VALUE(RS_CAP_HOST_NETID, 0x40000);
    CHECK_VALUE(RS_CMD_QUERY_NETID, 0x30);
    CHECK_VALUE(RS_EV_NETID_CHANGED, 0x15);
    CHECK_VALUE(RS_MAX_NETIDS, 8);
    CHECK_VALUE(RS_MKEY_MAX_ENTRIES, 256);
    CHECK_VALUE(RS_MKEY_MAX_NEST, 2);
    CHECK_VALUE(RS_MKEY_F_EMPTY, 1);
    CHECK_VALUE(RS_EV_ODP_PAGE_FAULT, 0x10);
    CHECK_VALUE(RS_EQE_ODP_WRITE, 2);
    CHECK_VALUE(RS_ODP_PAGE_READ, 1);
    CHECK_VALUE(RS_ODP_PAGE_WRITE, 2);
    CHECK_VALUE(RS_ODP_RESOLVE_MAX_PAGES, 512);
    CHECK_VALUE(RS_ODP_RESOLVE_F_FAIL, 1);
    /* ABI 1.6: multipath session groups. */
    CHECK_VALUE(RS_CAP_MULTIPATH, 0x20000);
    CHECK_VALUE(RS_CMD_QUERY_SESSION, 0x32);
    CHECK_VALUE(RS_EV_PATH_MIGRATED, 0x13);
    CHECK_VALUE(RS_SESSION_UP, 0);
    CHECK_VALUE(RS_SESSION_DOWN, 1);
    /* ABI 1.7: re-registration in place. */
    CHECK_VALUE(RS_CAP_REREG_MR, 0x200000);
    CHECK_VALUE(RS_CMD_REREG_MR, 0x31);
    CHECK_VALUE(RS_REREG_TRANS, 1);
    CHECK_VALUE(RS_REREG_PD, 2);
    CHECK_VALUE(RS_REREG_ACCESS, 4);
    /* ABI 1.8: data buffers in peer devices' BARs. */
    CHECK_VALUE(RS_CAP_PEER_DMA, 0x400000);
    CHECK_VALUE(RS_DEVICE_STATS_V16, 152);
    CHECK_VALUE(RS_CAP_VLAN, 0x800000);
    CHECK_VALUE(RS_DEVICE_STATS_V18, 192);
    CHECK_VALUE(RS_CAP_ECN, 0x1000000);
    CHECK_VALUE(RS_DEVICE_STATS_V19, 200);
    CHECK_VALUE(RS_GID_VLAN_VALID, 0x8000);
    CHECK_VALUE(RS_GID_VLAN_VID_MASK, 0xfff);
    CHECK_VALUE(RS_VLAN_VID_MAX, 4094);
    CHECK_VALUE(RS_AV_FLOW_LABEL_MASK, 0xfffff);
    CHECK_VALUE(RS_AV_PRIO_SHIFT, 24);
    CHECK_VALUE(RS_AV_PRIO_MASK, 0x7000000);
    CHECK_VALUE(RS_WC_F_VLAN, 0x20);
    /* ABI 1.11: doorbell records. */
    CHECK_VALUE(RS_CAP_DB_RECORD, 0x2000000);
    CHECK_VALUE(RS_CMD_SET_QP_DB_RECORD, 0x33);
    CHECK_VALUE(RS_DB_RECORD_ALIGN, 16);
    CHECK_VALUE(RS_DEVICE_STATS_V110, 240);
    CHECK_VALUE(RS_DEVICE_STATS_V111, 256);

    printf("1..%d\n", tests);
    if (failures) {
        printf("# %d of %d ABI checks failed: the header, the device, the "
               "driver and the provider no longer agree\n", failures, tests);
    }
    return failures ? 1 : 0;
}
