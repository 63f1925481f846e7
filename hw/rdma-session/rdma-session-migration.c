/*
 * rdma-session adapter: migration state.
 *
 * Everything the device knows lives in the tables described here: the
 * registers and rings, every object table and each MR's translation table,
 * so memory keys (with their per-network tables), QP state and sessions
 * move with the VM.  The object table sizes are part of the device's
 * configuration and must match on both sides.  post_load checks every
 * cross-reference before the device follows it, so a corrupt stream fails
 * the migration instead of sending the device out of its tables.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/error-report.h"
#include "net/net.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

static const VMStateDescription vmstate_rs_pd = {
    .name = "rdma-session/pd",
    .version_id = 2,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSPd),
        VMSTATE_UINT8(gen, RSPd),
        VMSTATE_UINT32(refs, RSPd),
        VMSTATE_UINT8_V(flags, RSPd, 2),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_pd_netid,
        NULL
    },
};

static const VMStateDescription vmstate_rs_cq = {
    .name = "rdma-session/cq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSCq),
        VMSTATE_UINT8(gen, RSCq),
        VMSTATE_UINT8(log_size, RSCq),
        VMSTATE_UINT8(arm, RSCq),
        VMSTATE_UINT16(vector, RSCq),
        VMSTATE_UINT32(uar, RSCq),
        VMSTATE_UINT64(ring, RSCq),
        VMSTATE_UINT32(pi, RSCq),
        VMSTATE_UINT32(ci, RSCq),
        VMSTATE_UINT32(refs, RSCq),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_cq_event,
        NULL
    },
};

static const VMStateDescription vmstate_rs_av = {
    .name = "rdma-session/av",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8_ARRAY(dgid, RSAv, 16),
        VMSTATE_UINT8_ARRAY(dmac, RSAv, 6),
        VMSTATE_UINT8(hop_limit, RSAv),
        VMSTATE_UINT8(traffic_class, RSAv),
        VMSTATE_UINT32(flow_label, RSAv),
        VMSTATE_UINT32(gid_index, RSAv),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_atomic_res = {
    .name = "rdma-session/atomic-res",
    .version_id = 2,
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSAtomicRes),
        VMSTATE_BOOL(owed, RSAtomicRes),
        VMSTATE_UINT32(psn, RSAtomicRes),
        VMSTATE_UINT64(orig, RSAtomicRes),
        VMSTATE_END_OF_LIST()
    },
};

/* An XRC target's READ resource: the SRQ its request named (ABI 1.3). */
static bool rs_rd_res_xrc_needed(void *opaque)
{
    RSRdRes *r = opaque;

    return r->srq != 0;
}

static const VMStateDescription vmstate_rs_rd_res_xrc = {
    .name = "rdma-session/rd-res/xrc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_rd_res_xrc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(srq, RSRdRes),
        VMSTATE_END_OF_LIST()
    },
};

static int rs_rd_res_pre_load(void *opaque)
{
    RSRdRes *r = opaque;

    r->srq = 0;
    return 0;
}

static const VMStateDescription vmstate_rs_rd_res = {
    .name = "rdma-session/rd-res",
    .version_id = 2,
    .minimum_version_id = 2,
    .pre_load = rs_rd_res_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSRdRes),
        VMSTATE_UINT32(psn, RSRdRes),
        VMSTATE_UINT32(npkts, RSRdRes),
        VMSTATE_UINT64(va, RSRdRes),
        VMSTATE_UINT32(rkey, RSRdRes),
        VMSTATE_UINT32(len, RSRdRes),
        VMSTATE_UINT32(gid, RSRdRes),
        VMSTATE_UINT32(first, RSRdRes),
        VMSTATE_UINT32(next, RSRdRes),
        VMSTATE_UINT32(stop, RSRdRes),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_rd_res_xrc,
        NULL
    },
};

static const VMStateDescription vmstate_rs_sent_wqe = {
    .name = "rdma-session/sent-wqe",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(wr_id, RSSentWqe),
        VMSTATE_UINT32(len, RSSentWqe),
        VMSTATE_UINT32(npkts, RSSentWqe),
        VMSTATE_UINT8(opcode, RSSentWqe),
        VMSTATE_UINT8(flags, RSSentWqe),
        VMSTATE_UINT8(nsge, RSSentWqe),
        VMSTATE_UINT8(sge_at, RSSentWqe),
        VMSTATE_END_OF_LIST()
    },
};

/* A receive WQE's SGE as the guest wrote it (little-endian fields). */
static const VMStateDescription vmstate_rs_sge = {
    .name = "rdma-session/sge",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(addr, struct rs_sge),
        VMSTATE_UINT32(length, struct rs_sge),
        VMSTATE_UINT32(lkey, struct rs_sge),
        VMSTATE_END_OF_LIST()
    },
};
/*
 * A QP without the XRC subsection is not an XRC target, one without the
 * ODP subsection waits for no page fault.
 */
static int rs_qp_pre_load(void *opaque)
{
    RSQp *qp = opaque;

    qp->xrcd = 0;
    memset(&qp->odp_req, 0, sizeof(qp->odp_req));
    memset(&qp->odp_resp, 0, sizeof(qp->odp_resp));
    qp->odp_paused = false;
    qp->pause_psn = 0;
    qp->dc_state = 0;
    qp->dc_ah = qp->dc_dct = qp->dc_conn = 0;
    qp->dc_key = 0;
    qp->path_bytes = 0;
    qp->path_migrations = 0;
    qp->resp_sport = 0;
    return 0;
}

static int rs_qp_post_load(void *opaque, int version_id)
{
    RSQp *qp = opaque;

    if (version_id < 4) {
        /* Before the send window every sent WQE was sent whole. */
        qp->una_psn = qp->comp_psn;
    }
    return 0;
}

/* An XRC target's domain (ABI 1.3): sent only by XRC targets. */
static bool rs_qp_xrc_needed(void *opaque)
{
    RSQp *qp = opaque;

    return qp->xrcd != 0;
}

static const VMStateDescription vmstate_rs_qp_xrc = {
    .name = "rdma-session/qp/xrc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_qp_xrc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(xrcd, RSQp),
        VMSTATE_END_OF_LIST()
    },
};

/* A page fault a QP waits for (ABI 1.4); the timers restart at load. */
static const VMStateDescription vmstate_rs_odp_wait = {
    .name = "rdma-session/odp-wait",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(mr, RSOdpWait),
        VMSTATE_UINT32(npages, RSOdpWait),
        VMSTATE_UINT64(va, RSOdpWait),
        VMSTATE_UINT32(psn, RSOdpWait),
        VMSTATE_UINT8(kind, RSOdpWait),
        VMSTATE_BOOL(write, RSOdpWait),
        VMSTATE_BOOL(failed, RSOdpWait),
        VMSTATE_END_OF_LIST()
    },
};

static bool rs_qp_odp_needed(void *opaque)
{
    RSQp *qp = opaque;

    return qp->valid &&
           (qp->odp_req.mr || qp->odp_resp.mr || qp->odp_paused);
}

static const VMStateDescription vmstate_rs_qp_odp = {
    .name = "rdma-session/qp/odp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_qp_odp_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(odp_req, RSQp, 1, vmstate_rs_odp_wait, RSOdpWait),
        VMSTATE_STRUCT(odp_resp, RSQp, 1, vmstate_rs_odp_wait, RSOdpWait),
        VMSTATE_BOOL(odp_paused, RSQp),
        VMSTATE_UINT32(pause_psn, RSQp),
        VMSTATE_END_OF_LIST()
    },
};

/* DC (ABI 1.5): sent by DCIs, DCTs and their responder contexts. */
static bool rs_qp_dc_needed(void *opaque)
{
    RSQp *qp = opaque;

    return qp->valid && (qp->type == RS_QPT_DCI || qp->type == RS_QPT_DCT ||
                         qp->type == RS_QPT_DC_CTX);
}

static const VMStateDescription vmstate_rs_qp_dc = {
    .name = "rdma-session/qp/dc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_qp_dc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(dc_state, RSQp),
        VMSTATE_UINT32(dc_ah, RSQp),
        VMSTATE_UINT32(dc_dct, RSQp),
        VMSTATE_UINT64(dc_key, RSQp),
        VMSTATE_UINT32(dc_conn, RSQp),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * Multipath (ABI 1.6): a group QP's flowlet, failovers and the source
 * port its responses mirror (req_slot, the session it uses, is in the
 * main section).
 */
static bool rs_qp_path_needed(void *opaque)
{
    RSQp *qp = opaque;

    return qp->valid && qp->group &&
           (qp->path_bytes || qp->path_migrations || qp->resp_sport);
}

static const VMStateDescription vmstate_rs_qp_path = {
    .name = "rdma-session/qp/path",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_qp_path_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(path_bytes, RSQp),
        VMSTATE_UINT32(path_migrations, RSQp),
        VMSTATE_UINT16(resp_sport, RSQp),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_qp = {
    .name = "rdma-session/qp",
    .version_id = 5,
    .minimum_version_id = 1,
    .pre_load = rs_qp_pre_load,
    .post_load = rs_qp_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSQp),
        VMSTATE_BOOL(has_av, RSQp),
        VMSTATE_UINT8(gen, RSQp),
        VMSTATE_UINT8(type, RSQp),
        VMSTATE_UINT8(state, RSQp),
        VMSTATE_UINT8(sq_log, RSQp),
        VMSTATE_UINT8(rq_log, RSQp),
        VMSTATE_UINT8(max_send_sge, RSQp),
        VMSTATE_UINT8(max_recv_sge, RSQp),
        VMSTATE_UINT8(flags, RSQp),
        VMSTATE_UINT16(max_inline, RSQp),
        VMSTATE_UINT32(pd, RSQp),
        VMSTATE_UINT32(send_cq, RSQp),
        VMSTATE_UINT32(recv_cq, RSQp),
        VMSTATE_UINT32(uar, RSQp),
        VMSTATE_UINT32(group, RSQp),
        VMSTATE_UINT64(sq_addr, RSQp),
        VMSTATE_UINT64(rq_addr, RSQp),
        VMSTATE_UINT32(sq_pi, RSQp),
        VMSTATE_UINT32(rq_pi, RSQp),
        VMSTATE_UINT32(qkey, RSQp),
        VMSTATE_UINT32(rq_psn, RSQp),
        VMSTATE_UINT32(sq_psn, RSQp),
        VMSTATE_UINT32(dest_qpn, RSQp),
        VMSTATE_UINT16(access, RSQp),
        VMSTATE_UINT8(path_mtu, RSQp),
        VMSTATE_UINT8(max_rd_atomic, RSQp),
        VMSTATE_UINT8(max_dest_rd_atomic, RSQp),
        VMSTATE_UINT8(min_rnr_timer, RSQp),
        VMSTATE_UINT8(timeout, RSQp),
        VMSTATE_UINT8(retry_cnt, RSQp),
        VMSTATE_UINT8(rnr_retry, RSQp),
        VMSTATE_UINT8(en_sqd_async, RSQp),
        VMSTATE_STRUCT(av, RSQp, 1, vmstate_rs_av, RSAv),
        /* version 2: the transport engine */
        VMSTATE_UINT32_V(sq_ci, RSQp, 2),
        VMSTATE_UINT32_V(sq_comp, RSQp, 2),
        VMSTATE_UINT32_V(comp_psn, RSQp, 2),
        VMSTATE_UINT32_V(rq_ci, RSQp, 2),
        VMSTATE_UINT32_V(msn, RSQp, 2),
        VMSTATE_UINT8_V(resp_op, RSQp, 2),
        VMSTATE_UINT32_V(resp_off, RSQp, 2),
        VMSTATE_UINT64_V(resp_va, RSQp, 2),
        VMSTATE_UINT32_V(resp_rkey, RSQp, 2),
        VMSTATE_UINT32_V(resp_left, RSQp, 2),
        /* version 3: atomic responder resources, SRQ */
        VMSTATE_STRUCT_ARRAY(atomic_res, RSQp, RS_ATOMIC_RES, 3,
                               vmstate_rs_atomic_res, RSAtomicRes),
        VMSTATE_UINT8_V(atomic_next, RSQp, 3),
        VMSTATE_UINT32_V(srq, RSQp, 3),
        VMSTATE_BOOL_V(srq_claimed, RSQp, 3),
        VMSTATE_UINT8_V(srq_nsge, RSQp, 3),
        VMSTATE_UINT64_V(srq_wr_id, RSQp, 3),
        VMSTATE_STRUCT_ARRAY(srq_sge, RSQp, RS_MAX_SGE, 3, vmstate_rs_sge,
                               struct rs_sge),
        /* version 4: send window, RNR, ACK coalescing, READ resources */
        VMSTATE_UINT32_V(req_pkt, RSQp, 4),
        VMSTATE_UINT8_V(req_slot, RSQp, 4),
        VMSTATE_UINT32_V(una_psn, RSQp, 4),
        VMSTATE_UINT8_V(rd_out, RSQp, 4),
        VMSTATE_UINT8_V(rnr_retries, RSQp, 4),
        VMSTATE_BOOL_V(rnr_wait, RSQp, 4),
        VMSTATE_BOOL_V(ack_pending, RSQp, 4),
        VMSTATE_UINT32_V(ack_psn, RSQp, 4),
        VMSTATE_UINT32_V(rd_head, RSQp, 4),
        VMSTATE_STRUCT_ARRAY(rd_res, RSQp, RS_MAX_RD_ATOMIC, 4,
                             vmstate_rs_rd_res, RSRdRes),
        /* version 5: what the requester recorded of started WQEs */
        VMSTATE_UINT32_V(sq_rec, RSQp, 5),
        VMSTATE_BOOL_V(comm_est, RSQp, 5),
        VMSTATE_BOOL_V(sqd_notify, RSQp, 5),
        VMSTATE_STRUCT_ARRAY(sent, RSQp, RS_SQ_INFLIGHT, 5,
                             vmstate_rs_sent_wqe, RSSentWqe),
        VMSTATE_UINT32_V(rd_sge_head, RSQp, 5),
        VMSTATE_UINT32_V(rd_sge_tail, RSQp, 5),
        VMSTATE_STRUCT_ARRAY(rd_sge, RSQp, RS_RD_SGE_POOL, 5, vmstate_rs_sge,
                             struct rs_sge),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_qp_xrc,
        &vmstate_rs_qp_odp,
        &vmstate_rs_qp_dc,
        &vmstate_rs_qp_path,
        NULL
    },
};

/*
 * An MR's page count is checked before its page array is allocated: it
 * must fit in what the stream says all MRs hold (mr_pages_used, checked
 * against max-mr-pages before the MRs) less the pages of the MRs loaded
 * before it.  A stream cannot make the destination allocate more than
 * max-mr-pages page addresses in all.  Only a load counts pages.
 */
static bool rs_mr_npages_valid(void *opaque, int version_id)
{
    RSMr *mr = opaque;
    RSCore *c = mr->core;

    if (mr->npages > c->mr_pages_used - c->mr_pages_loaded) {
        return false;
    }
    c->mr_pages_loaded += mr->npages;
    return true;
}

/* A memory window's state: only a slot that holds a window sends it. */
static bool rs_mr_mw_needed(void *opaque)
{
    RSMr *mr = opaque;

    return mr->mw_type != 0;
}

static const VMStateDescription vmstate_rs_mr_mw = {
    .name = "rdma-session/mr/mw",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mr_mw_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(mw_type, RSMr),
        VMSTATE_UINT32(mw_mr, RSMr),
        VMSTATE_UINT32(mw_qp, RSMr),
        VMSTATE_END_OF_LIST()
    },
};

/* An ODP MR's invalidation count (ABI 1.4). */
static bool rs_mr_odp_needed(void *opaque)
{
    RSMr *mr = opaque;

    return mr->valid && (mr->flags & RS_MR_F_ODP) && !mr->mw_type;
}

static const VMStateDescription vmstate_rs_mr_odp = {
    .name = "rdma-session/mr/odp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mr_odp_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(odp_seq, RSMr),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * An indirect or pattern key (ABI 1.5): kind, room, entries in use and
 * repeat, then all mkl_cap entries; the room is checked (and counted
 * against the page budget) before the entries are allocated, the rest
 * in post_load (rs_mkl_state_valid).
 */
static bool rs_mr_mkl_needed(void *opaque)
{
    RSMr *mr = opaque;

    return mr->valid && mr->mkl_kind;
}

static bool rs_mr_mkl_room_valid(void *opaque, int version_id)
{
    RSMr *mr = opaque;
    RSCore *c = mr->core;

    if (!mr->valid || (mr->mkl_kind != RS_WR_REG_INDIRECT &&
                       mr->mkl_kind != RS_WR_REG_PATTERN) ||
        mr->mkl_cap < 1 || mr->mkl_cap > RS_MKEY_MAX_ENTRIES ||
        mr->mkl_n > mr->mkl_cap ||
        mr->mkl_cap > c->mr_pages_used - c->mr_pages_loaded) {
        return false;
    }
    c->mr_pages_loaded += mr->mkl_cap;
    return true;
}

static const VMStateDescription vmstate_rs_mkl_ent = {
    .name = "rdma-session/mr/mkey-entry",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(addr, RSMklEnt),
        VMSTATE_UINT32(key, RSMklEnt),
        VMSTATE_UINT32(len, RSMklEnt),
        VMSTATE_UINT32(skip, RSMklEnt),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_mr_mkl = {
    .name = "rdma-session/mr/mkey-list",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mr_mkl_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(mkl_kind, RSMr),
        VMSTATE_UINT16(mkl_cap, RSMr),
        VMSTATE_UINT16(mkl_n, RSMr),
        VMSTATE_UINT32(mkl_repeat, RSMr),
        VMSTATE_VALIDATE("room within the page budget", rs_mr_mkl_room_valid),
        {
            /* VMSTATE_STRUCT_VARRAY_ALLOC with a uint16_t count */
            .name = "mkl",
            .version_id = 1,
            .vmsd = &vmstate_rs_mkl_ent,
            .num_offset = vmstate_offset_value(RSMr, mkl_cap, uint16_t),
            .size = sizeof(RSMklEnt),
            .flags = VMS_STRUCT | VMS_VARRAY_UINT16 | VMS_ALLOC | VMS_POINTER,
            .offset = vmstate_offset_pointer(RSMr, mkl, RSMklEnt),
        },
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_mr = {
    .name = "rdma-session/mr",
    .version_id = 2,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSMr),
        VMSTATE_UINT8(tag, RSMr),
        VMSTATE_UINT8(page_shift, RSMr),
        VMSTATE_UINT8(flags, RSMr),
        VMSTATE_UINT16(access, RSMr),
        VMSTATE_UINT32(pd, RSMr),
        VMSTATE_UINT32(gid_index, RSMr),
        VMSTATE_UINT64(iova, RSMr),
        VMSTATE_UINT64(length, RSMr),
        VMSTATE_UINT32(npages, RSMr),
        VMSTATE_VALIDATE("npages within the page budget",
                         rs_mr_npages_valid),
        VMSTATE_VARRAY_UINT32_ALLOC(pages, RSMr, npages, 0,
                                    vmstate_info_uint64, uint64_t),
        VMSTATE_BOOL_V(fast, RSMr, 2),
        VMSTATE_BOOL_V(fr_bound, RSMr, 2),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_mr_mw,
        &vmstate_rs_mr_odp,
        &vmstate_rs_mr_mkl,
        &vmstate_rs_mr_netid,
        NULL
    },
};

static const VMStateDescription vmstate_rs_ah = {
    .name = "rdma-session/ah",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSAh),
        VMSTATE_UINT8(gen, RSAh),
        VMSTATE_UINT32(pd, RSAh),
        VMSTATE_STRUCT(av, RSAh, 1, vmstate_rs_av, RSAv),
        VMSTATE_END_OF_LIST()
    },
};

/* A session without the path subsection is up and has counted nothing. */
static int rs_session_pre_load(void *opaque)
{
    rs_path_session_reset(opaque);
    return 0;
}

/*
 * Multipath (ABI 1.6): a session's path state and counters.  The times
 * are QEMU_CLOCK_VIRTUAL's, which migrates with the VM.
 */
static bool rs_session_path_needed(void *opaque)
{
    RSSession *s = opaque;

    return s->valid && (s->down || s->last_ack_ns || s->tx_packets ||
                        s->failovers || s->recoveries || s->migrated);
}

static const VMStateDescription vmstate_rs_session_path = {
    .name = "rdma-session/session/path",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_session_path_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(down, RSSession),
        VMSTATE_INT64(down_ns, RSSession),
        VMSTATE_INT64(last_ack_ns, RSSession),
        VMSTATE_UINT64(tx_packets, RSSession),
        VMSTATE_UINT64(failovers, RSSession),
        VMSTATE_UINT64(recoveries, RSSession),
        VMSTATE_UINT64(migrated, RSSession),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_session = {
    .name = "rdma-session/session",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = rs_session_pre_load,
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_session_path,
        NULL
    },
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSSession),
        VMSTATE_UINT8(gen, RSSession),
        VMSTATE_UINT8_ARRAY(dmac, RSSession, 6),
        VMSTATE_UINT8_ARRAY(dst_ip, RSSession, 16),
        VMSTATE_UINT16(src_port, RSSession),
        VMSTATE_UINT16(dst_port, RSSession),
        VMSTATE_UINT32(gid_index, RSSession),
        VMSTATE_UINT32(refs, RSSession),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_group = {
    .name = "rdma-session/session-group",
    .version_id = 2,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSSessionGroup),
        VMSTATE_UINT8(gen, RSSessionGroup),
        VMSTATE_UINT8(nsessions, RSSessionGroup),
        VMSTATE_UINT8(policy, RSSessionGroup),
        VMSTATE_UINT32_ARRAY(session, RSSessionGroup, RS_MAX_GROUP_SESSIONS),
        VMSTATE_UINT32(refs, RSSessionGroup),
        VMSTATE_UINT8_V(next, RSSessionGroup, 2),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_gid = {
    .name = "rdma-session/gid",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSGid),
        VMSTATE_UINT8(type, RSGid),
        VMSTATE_UINT8_ARRAY(gid, RSGid, 16),
        VMSTATE_UINT32(vni, RSGid),
        VMSTATE_UINT32(refs, RSGid),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_lan_queue = {
    .name = "rdma-session/lan-queue",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSLanQueue),
        VMSTATE_UINT8(log_size, RSLanQueue),
        VMSTATE_UINT16(vector, RSLanQueue),
        VMSTATE_UINT64(ring, RSLanQueue),
        VMSTATE_UINT32(pi, RSLanQueue),
        VMSTATE_UINT32(ci, RSLanQueue),
        VMSTATE_END_OF_LIST()
    },
};

/* An XRC SRQ's domain and CQ (ABI 1.3): sent only by XRC SRQs. */
static bool rs_srq_xrc_needed(void *opaque)
{
    RSSrq *s = opaque;

    return s->xrcd != 0;
}

static const VMStateDescription vmstate_rs_srq_xrc = {
    .name = "rdma-session/srq/xrc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_srq_xrc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(xrcd, RSSrq),
        VMSTATE_UINT32(cq, RSSrq),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_srq = {
    .name = "rdma-session/srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSSrq),
        VMSTATE_UINT8(gen, RSSrq),
        VMSTATE_UINT8(log_size, RSSrq),
        VMSTATE_UINT8(max_sge, RSSrq),
        VMSTATE_UINT32(pd, RSSrq),
        VMSTATE_UINT32(uar, RSSrq),
        VMSTATE_UINT64(ring, RSSrq),
        VMSTATE_UINT32(pi, RSSrq),
        VMSTATE_UINT32(ci, RSSrq),
        VMSTATE_UINT32(limit, RSSrq),
        VMSTATE_UINT32(refs, RSSrq),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_srq_xrc,
        NULL
    },
};

/* SRQs came with ABI 1.1: a subsection, sent only when one exists. */
static bool rs_srqs_needed(void *opaque)
{
    RSCore *c = opaque;

    for (uint32_t i = 0; i < c->p.max_srqs; i++) {
        if (c->srqs[i].valid || c->srqs[i].gen) {
            return true;
        }
    }
    return false;
}

static const VMStateDescription vmstate_rs_srqs = {
    .name = "rdma-session/core/srqs",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_srqs_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.max_srqs, RSCore, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(srqs, RSCore, p.max_srqs,
                                             vmstate_rs_srq, RSSrq),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_xrcd = {
    .name = "rdma-session/xrcd",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSXrcd),
        VMSTATE_UINT8(gen, RSXrcd),
        VMSTATE_UINT32(refs, RSXrcd),
        VMSTATE_END_OF_LIST()
    },
};

/* XRC came with ABI 1.3: sent only once a domain was created. */
static bool rs_xrcds_needed(void *opaque)
{
    RSCore *c = opaque;

    for (uint32_t i = 0; i < c->p.max_xrcds; i++) {
        if (c->xrcds[i].valid || c->xrcds[i].gen) {
            return true;
        }
    }
    return false;
}

static const VMStateDescription vmstate_rs_xrcds = {
    .name = "rdma-session/core/xrcds",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_xrcds_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.max_xrcds, RSCore, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(xrcds, RSCore, p.max_xrcds,
                                             vmstate_rs_xrcd, RSXrcd),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_mcast_grp = {
    .name = "rdma-session/mcast-grp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSMcastGrp),
        VMSTATE_UINT8_ARRAY(gid, RSMcastGrp, 16),
        VMSTATE_UINT32(nqp, RSMcastGrp),
        VMSTATE_UINT32_ARRAY(qp, RSMcastGrp, RS_MCAST_QP_MAX),
        VMSTATE_END_OF_LIST()
    },
};

/* Multicast came with ABI 1.2: sent only while a QP is attached. */
static bool rs_mcast_needed(void *opaque)
{
    RSCore *c = opaque;

    for (uint32_t i = 0; i < c->p.max_mcast_grps; i++) {
        if (c->mcast[i].valid) {
            return true;
        }
    }
    return false;
}

/* The QP table is loaded before any subsection: check what it names. */
static int rs_mcast_post_load(void *opaque, int version_id)
{
    if (!rs_mcast_state_valid(opaque)) {
        trace_rdma_session_migration_invalid();
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription vmstate_rs_mcast = {
    .name = "rdma-session/core/mcast",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mcast_needed,
    .post_load = rs_mcast_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.max_mcast_grps, RSCore, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(mcast, RSCore, p.max_mcast_grps,
                                             vmstate_rs_mcast_grp,
                                             RSMcastGrp),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * The guest read the MAC when it probed the device, and its GIDs' peers
 * know it: a destination configured with another MAC fails the migration.
 */
static int rs_mac_pre_save(void *opaque)
{
    RSCore *c = opaque;

    memcpy(c->mig_mac, c->mac.a, sizeof(c->mig_mac));
    return 0;
}

static int rs_mac_post_load(void *opaque, int version_id)
{
    RSCore *c = opaque;

    if (memcmp(c->mig_mac, c->mac.a, sizeof(c->mig_mac))) {
        error_report("rdma-session: mac " MAC_FMT " on the destination, "
                     MAC_FMT " on the source: the properties must match",
                     MAC_ARG(c->mac.a), MAC_ARG(c->mig_mac));
        return -EINVAL;
    }
    return 0;
}

static bool rs_mac_needed(void *opaque)
{
    return true;
}

static const VMStateDescription vmstate_rs_mac = {
    .name = "rdma-session/core/mac",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mac_needed,
    .pre_save = rs_mac_pre_save,
    .post_load = rs_mac_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8_ARRAY(mig_mac, RSCore, 6),
        VMSTATE_END_OF_LIST()
    },
};

static int rs_core_pre_load(void *opaque)
{
    RSCore *c = opaque;

    /* Loading over a live device (loadvm): drop its translation tables. */
    for (uint32_t i = 0; i < c->p.max_mrs; i++) {
        g_free(c->mrs[i].pages);
        c->mrs[i].pages = NULL;
        c->mrs[i].npages = 0;
        /* A slot without the window subsection holds no window. */
        c->mrs[i].mw_type = 0;
        c->mrs[i].mw_mr = 0;
        c->mrs[i].mw_qp = 0;
        c->mrs[i].odp_seq = 0;
        /* Nor an indirect or pattern key without its subsection. */
        g_free(c->mrs[i].mkl);
        c->mrs[i].mkl = NULL;
        c->mrs[i].mkl_kind = 0;
        c->mrs[i].mkl_cap = 0;
        c->mrs[i].mkl_n = 0;
        c->mrs[i].mkl_repeat = 0;
        c->mrs[i].mkl_block = 0;
    }
    c->mr_pages_loaded = 0;
    /* A stream without the ODP subsection has no translations. */
    memset(c->odp, 0, sizeof(*c->odp) * c->p.odp_pages);
    c->odp_used = 0;
    memset(&c->stats, 0, sizeof(c->stats));
    /*
     * A stream without SRQs or XRC domains (no subsections) leaves the
     * tables empty; an SRQ without its XRC subsection is a basic one.
     */
    memset(c->srqs, 0, sizeof(*c->srqs) * c->p.max_srqs);
    memset(c->xrcds, 0, sizeof(*c->xrcds) * c->p.max_xrcds);
    rs_mcast_reset(c);
    rs_netid_pre_load(c);
    return 0;
}

/*
 * The MRs' page check (rs_mr_npages_valid) also runs as the state is
 * saved, counting the pages again: start it at 0 for each save, or the
 * second outgoing migration of a QEMU fails its own check and aborts.
 */
static int rs_core_pre_save(void *opaque)
{
    RSCore *c = opaque;

    c->mr_pages_loaded = 0;
    rs_migration_hold_stop(c);  /* the destination answers from here on */
    return 0;
}

static bool rs_mr_pages_used_valid(void *opaque, int version_id)
{
    RSCore *c = opaque;

    return c->mr_pages_used <= c->p.max_mr_pages;
}

/*
 * Every reference count is the number of live objects that hold one:
 * QPs hold their PD, CQs, SRQ, session group and (with an address
 * vector) GID, XRC targets their domain instead of PD, CQs and SRQ; MRs
 * and AHs their PD and GID; SRQs their PD, XRC SRQs also their domain
 * and CQ; sessions
 * their GID; groups each member session.  The indices were checked
 * before.  A wrong count would let DESTROY free an object still in use.
 */
static bool rs_core_refs_valid(RSCore *c)
{
    const RSParams *p = &c->p;
    g_autofree uint32_t *pd = g_new0(uint32_t, p->max_pds);
    g_autofree uint32_t *cq = g_new0(uint32_t, p->max_cqs);
    g_autofree uint32_t *srq = g_new0(uint32_t, p->max_srqs);
    g_autofree uint32_t *xrcd = g_new0(uint32_t, p->max_xrcds);
    g_autofree uint32_t *gid = g_new0(uint32_t, p->max_gids);
    g_autofree uint32_t *ses = g_new0(uint32_t, p->max_sessions);
    g_autofree uint32_t *grp = g_new0(uint32_t, p->max_groups);
    uint32_t i, j;

    for (i = 0; i < p->max_qps; i++) {
        const RSQp *qp = &c->qps[i];

        if (!qp->valid) {
            continue;
        }
        if (qp->type == RS_QPT_XRC_TGT) {
            /* Its SRQ, PD and CQ are borrowed from the last request's. */
            xrcd[qp->xrcd]++;
        } else if (qp->type != RS_QPT_DC_CTX) {
            /* A DC context borrows its DCT's. */
            pd[qp->pd]++;
            cq[qp->send_cq]++;
            cq[qp->recv_cq]++;
            if (qp->srq) {
                srq[qp->srq]++;
            }
        }
        if (qp->group) {
            grp[qp->group]++;
        }
        if (qp->has_av) {
            gid[qp->av.gid_index]++;
        }
    }
    for (i = 0; i < p->max_mrs; i++) {
        if (c->mrs[i].valid) {
            pd[c->mrs[i].pd]++;
            gid[c->mrs[i].gid_index]++;
        }
    }
    for (i = 0; i < p->max_ahs; i++) {
        if (c->ahs[i].valid) {
            pd[c->ahs[i].pd]++;
            gid[c->ahs[i].av.gid_index]++;
        }
    }
    for (i = 0; i < p->max_srqs; i++) {
        if (c->srqs[i].valid) {
            pd[c->srqs[i].pd]++;
        }
        if (c->srqs[i].valid && c->srqs[i].xrcd) {
            xrcd[c->srqs[i].xrcd]++;
            cq[c->srqs[i].cq]++;
        }
    }
    for (i = 0; i < p->max_sessions; i++) {
        if (c->sessions[i].valid) {
            gid[c->sessions[i].gid_index]++;
        }
    }
    for (i = 0; i < p->max_groups; i++) {
        for (j = 0; c->groups[i].valid && j < c->groups[i].nsessions; j++) {
            ses[c->groups[i].session[j]]++;
        }
    }

#define RS_REFS_MATCH(table, max, count) ({                                \
    bool ok_ = true;                                                       \
    for (uint32_t k_ = 0; k_ < (max); k_++) {                              \
        if (c->table[k_].valid && c->table[k_].refs != (count)[k_]) {      \
            ok_ = false;                                                   \
        }                                                                  \
    }                                                                      \
    ok_; })

    return RS_REFS_MATCH(pds, p->max_pds, pd) &&
           RS_REFS_MATCH(cqs, p->max_cqs, cq) &&
           RS_REFS_MATCH(srqs, p->max_srqs, srq) &&
           RS_REFS_MATCH(xrcds, p->max_xrcds, xrcd) &&
           RS_REFS_MATCH(gids, p->max_gids, gid) &&
           RS_REFS_MATCH(sessions, p->max_sessions, ses) &&
           RS_REFS_MATCH(groups, p->max_groups, grp);
#undef RS_REFS_MATCH
}

#define RS_REF_OK(c, table, max, idx) ((idx) < (max) && (c)->table[idx].valid)

/*
 * The requester's records of started WQEs: sq_comp <= sq_ci <= sq_rec,
 * at most RS_SQ_INFLIGHT of them, each spanning at least one PSN (the
 * completer's progress depends on it) and no more than its length needs,
 * and the READ/atomic SGEs they hold are those the pool has given out.
 */
static bool rs_qp_sent_valid(RSCore *c, const RSQp *qp)
{
    uint32_t n = qp->sq_rec - qp->sq_comp, sges = 0, i;

    if (n > RS_SQ_INFLIGHT || qp->sq_ci - qp->sq_comp > n ||
        qp->rd_sge_head - qp->rd_sge_tail > RS_RD_SGE_POOL) {
        return false;
    }
    for (i = 0; i < n; i++) {
        const RSSentWqe *w = &qp->sent[(qp->sq_comp + i) % RS_SQ_INFLIGHT];

        if (w->len > c->p.max_msg_size ||
            !w->npkts || w->npkts > MAX(DIV_ROUND_UP(w->len, 256), 1) ||
            w->nsge > qp->max_send_sge ||
            (w->nsge && w->opcode != RS_WR_RDMA_READ &&
             w->opcode != RS_WR_ATOMIC_CMP_SWP &&
             w->opcode != RS_WR_ATOMIC_FETCH_ADD) ||
            w->sge_at >= RS_RD_SGE_POOL ||
            (w->nsge && w->sge_at != (qp->rd_sge_tail + sges) %
                                     RS_RD_SGE_POOL)) {
            return false;
        }
        sges += w->nsge;
    }
    return sges == qp->rd_sge_head - qp->rd_sge_tail;
}

/*
 * A QP's references, attributes and engine state: the receive side, the
 * send window, the requester's records and the READ resources.
 */
static bool rs_qp_state_valid(RSCore *c, const RSQp *qp)
{
    const RSParams *p = &c->p;
    /*
     * XRC: the target has no queues (rs_xrc_state_valid checked what it
     * borrows), the initiator no receive side.
     */
    bool tgt = qp->type == RS_QPT_XRC_TGT;
    bool ini = qp->type == RS_QPT_XRC_INI || qp->type == RS_QPT_DCI;
    /*
     * DC (rs_dc_state_valid checks the rest): a DCT and its contexts
     * have no send queue or send CQ, a DCT's SRQ is required.
     */
    bool dc_rx = qp->type == RS_QPT_DCT || qp->type == RS_QPT_DC_CTX;
    uint32_t j;

    if (dc_rx && !qp->srq) {
        return false;
    }

    /* Receive side: its own queue, or an SRQ and the WQE it took. */
    if (qp->srq ? (!RS_REF_OK(c, srqs, p->max_srqs, qp->srq) || ini ||
                   qp->rq_log || qp->max_recv_sge ||
                   (qp->srq_nsge > RS_MAX_SGE &&
                    qp->srq_nsge < RS_SRQ_WQE_BAD_DMA)) :
                  tgt || ini ?
                  (qp->srq_claimed || qp->rq_log || qp->max_recv_sge ||
                   qp->rq_pi || qp->rq_ci || (ini && qp->recv_cq)) :
                  (qp->srq_claimed ||
                   qp->rq_log < 1 || qp->rq_log > RS_MAX_WQ_LOG)) {
        return false;
    }
    if (qp->atomic_next >= RS_ATOMIC_RES) {
        return false;
    }
    if ((qp->type > RS_QPT_GSI && !tgt && !ini && !dc_rx) ||
        qp->type > RS_QPT_DC_CTX || qp->state > RS_QPS_ERR ||
        (!tgt && (!RS_REF_OK(c, pds, p->max_pds, qp->pd) ||
                  ((c->pds[qp->pd].flags & RS_PD_F_PRIVILEGED) && qp->uar) ||
                  (dc_rx ? qp->send_cq != 0 :
                   !RS_REF_OK(c, cqs, p->max_cqs, qp->send_cq)))) ||
        (!tgt && !ini && !RS_REF_OK(c, cqs, p->max_cqs, qp->recv_cq)) ||
        (qp->group && !RS_REF_OK(c, groups, p->max_groups, qp->group)) ||
        (qp->has_av && !rs_gid_valid(c, qp->av.gid_index))) {
        return false;
    }
    /* Engine state: in-flight WQEs fit the ring, PSNs are 24 bits. */
    if ((tgt || dc_rx ? qp->sq_log != 0 || qp->sq_pi || qp->sq_ci ||
                        qp->sq_rec :
               qp->sq_log < 1 || qp->sq_log > RS_MAX_WQ_LOG) ||
        qp->sq_ci - qp->sq_comp > (1u << qp->sq_log) ||
        qp->resp_op > RS_RESP_DROP ||
        qp->max_send_sge > RS_MAX_SGE || qp->max_recv_sge > RS_MAX_SGE ||
        qp->max_inline > RS_MAX_INLINE ||
        qp->path_mtu < RS_MTU_256 || qp->path_mtu > RS_MTU_4096 ||
        (qp->sq_psn | qp->rq_psn | qp->comp_psn) >> 24) {
        return false;
    }
    /*
     * Send window: comp_psn <= una_psn <= sq_psn, the packet index of
     * a message in progress within the largest message, READ
     * resources within the largest READ.
     */
    if ((qp->una_psn | qp->ack_psn) >> 24 ||
        rs_psn_diff(qp->una_psn, qp->comp_psn) < 0 ||
        rs_psn_diff(qp->sq_psn, qp->una_psn) < 0 ||
        qp->req_pkt > p->max_msg_size / 256 ||
        qp->req_slot >= RS_MAX_GROUP_SESSIONS ||
        qp->rnr_retries > 7 || qp->rd_out > RS_MAX_RD_ATOMIC) {
        return false;
    }
    if (!rs_qp_sent_valid(c, qp)) {
        return false;
    }
    for (j = 0; j < RS_MAX_RD_ATOMIC; j++) {
        const RSRdRes *r = &qp->rd_res[j];

        if (r->valid && (r->psn >> 24 || r->len > p->max_msg_size ||
                         !r->npkts ||
                         r->npkts > p->max_msg_size / 256 + 1 ||
                         r->first > r->next || r->next > r->stop ||
                         r->stop > r->npkts || r->gid >= p->max_gids ||
                         r->srq >= p->max_srqs || (r->srq && !tgt))) {
            return false;
        }
    }
    return true;
}

/* A valid MR: its PD, GID and page size; a fast-registration MR's binding. */
static bool rs_mr_state_valid(RSCore *c, RSMr *mr)
{
    const RSParams *p = &c->p;

    if (mr->mkl_kind) {
        return RS_REF_OK(c, pds, p->max_pds, mr->pd) &&
               rs_gid_valid(c, mr->gid_index) && rs_mkl_state_valid(c, mr);
    }

    /* A fast-registration MR: a kernel PD's, bound within its slots. */
    if (mr->fast &&
        (mr->npages > RS_MAX_FRMR_PAGES ||
         !RS_REF_OK(c, pds, p->max_pds, mr->pd) ||
         !(c->pds[mr->pd].flags & RS_PD_F_PRIVILEGED) ||
         (mr->fr_bound &&
          (mr->length == 0 || mr->iova + mr->length < mr->iova ||
           mr->page_shift > RS_MR_MAX_PAGE_SHIFT ||
           ((mr->iova + mr->length - 1) >> mr->page_shift) -
           (mr->iova >> mr->page_shift) >= mr->npages)))) {
        return false;
    }
    if (!mr->fast && mr->fr_bound) {
        return false;
    }
    if (mr->flags & RS_MR_F_ODP) {
        return !mr->fast && !mr->npages &&
               !(mr->flags & ~(RS_MR_F_ODP | RS_MR_F_ODP_IMPLICIT)) &&
               mr->page_shift == RS_ODP_PAGE_SHIFT &&
               ((mr->flags & RS_MR_F_ODP_IMPLICIT) ?
                !mr->iova && mr->length == UINT64_MAX :
                mr->length && mr->iova + mr->length >= mr->iova) &&
               RS_REF_OK(c, pds, p->max_pds, mr->pd) &&
               rs_gid_valid(c, mr->gid_index);
    }
    if (mr->flags & RS_MR_F_ODP_IMPLICIT) {
        return false;
    }
    return RS_REF_OK(c, pds, p->max_pds, mr->pd) &&
           rs_gid_valid(c, mr->gid_index) && mr->npages &&
           mr->page_shift >= RS_MR_MIN_PAGE_SHIFT &&
           mr->page_shift <= RS_MR_MAX_PAGE_SHIFT;
}

/* A valid session group: its size, policy, position and sessions. */
static bool rs_group_state_valid(RSCore *c, const RSSessionGroup *g)
{
    uint32_t j;

    if (g->nsessions < 1 || g->nsessions > RS_MAX_GROUP_SESSIONS ||
        g->policy > RS_GROUP_ACTIVE_BACKUP || g->next >= g->nsessions) {
        return false;
    }
    for (j = 0; j < g->nsessions; j++) {
        if (!RS_REF_OK(c, sessions, c->p.max_sessions, g->session[j])) {
            return false;
        }
    }
    return true;
}

static bool rs_core_state_valid(RSCore *c)
{
    const RSParams *p = &c->p;
    uint64_t pages = 0;
    uint32_t i;

    if (FIELD_EX32(c->admq_cfg, RS_ADMQ_CFG, LOG_SIZE) > RS_MAX_ADMQ_LOG ||
        FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG, LOG_SIZE) > RS_MAX_AEQ_LOG) {
        return false;
    }
    /* Commands and events outstanding fit their rings. */
    if (c->admq_pi - c->admq_ci >
        1u << FIELD_EX32(c->admq_cfg, RS_ADMQ_CFG, LOG_SIZE) ||
        c->aeq_pi - c->aeq_ci >
        1u << FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG, LOG_SIZE)) {
        return false;
    }
    for (i = 0; i < p->max_cqs; i++) {
        if (c->cqs[i].valid && (c->cqs[i].log_size > RS_MAX_CQ_LOG ||
                                c->cqs[i].uar >= p->db_pages ||
                                c->cqs[i].vector >= p->num_comp_vectors)) {
            return false;
        }
    }
    if (!rs_comp_cause_load(c)) {
        return false;
    }
    for (i = 0; i < p->max_srqs; i++) {
        RSSrq *s = &c->srqs[i];

        if (s->valid &&
            (!RS_REF_OK(c, pds, p->max_pds, s->pd) || s->uar >= p->db_pages ||
             s->log_size < 1 || s->log_size > RS_MAX_WQ_LOG ||
             s->max_sge < 1 || s->max_sge > RS_MAX_SGE ||
             s->limit >= (1u << s->log_size))) {
            return false;
        }
    }
    /* XRC first: a target's queues are checked by what it borrows. */
    if (!rs_xrc_state_valid(c) || !rs_dc_state_valid(c)) {
        return false;
    }
    for (i = 0; i < p->max_qps; i++) {
        if (c->qps[i].valid && !rs_qp_state_valid(c, &c->qps[i])) {
            return false;
        }
    }
    for (i = 0; i < p->max_pds; i++) {
        if (c->pds[i].valid && (c->pds[i].flags & ~RS_PD_F_PRIVILEGED)) {
            return false;
        }
    }
    for (i = 0; i < p->max_mrs; i++) {
        RSMr *mr = &c->mrs[i];

        if (!mr->valid) {
            if (mr->npages || mr->fast || mr->fr_bound || mr->mkl_kind) {
                return false;
            }
            continue;
        }
        if (mr->mw_type ? mr->mkl_kind != 0 : !rs_mr_state_valid(c, mr)) {
            return false;
        }
        pages += mr->npages + mr->mkl_cap;
    }
    if (pages != c->mr_pages_used || pages > p->max_mr_pages) {
        return false;
    }
    /* Windows (checked by rs_mw_post_load) after the MRs they reach. */
    if (!rs_mw_post_load(c)) {
        return false;
    }
    for (i = 0; i < p->max_ahs; i++) {
        if (c->ahs[i].valid &&
            (!RS_REF_OK(c, pds, p->max_pds, c->ahs[i].pd) ||
             !rs_gid_valid(c, c->ahs[i].av.gid_index))) {
            return false;
        }
    }
    for (i = 0; i < p->max_sessions; i++) {
        if (c->sessions[i].valid &&
            !rs_gid_valid(c, c->sessions[i].gid_index)) {
            return false;
        }
    }
    for (i = 0; i < p->max_groups; i++) {
        if (c->groups[i].valid && !rs_group_state_valid(c, &c->groups[i])) {
            return false;
        }
    }
    if (!rs_path_post_load(c)) {
        return false;
    }
    return rs_core_refs_valid(c) && rs_lan_state_valid(c) &&
           rs_odp_post_load(c) && rs_netid_post_load(c);
}

static int rs_core_post_load(void *opaque, int version_id)
{
    RSCore *c = opaque;

    if (!rs_core_state_valid(c)) {
        trace_rdma_session_migration_invalid();
        return -EINVAL;
    }
    /* The link is the destination backend's, not the source's. */
    c->status = FIELD_DP32(c->status, RS_STATUS, LINK_UP, c->link_up);
    if (c->admq_ci != c->admq_pi) {
        qemu_bh_schedule(c->admin_bh);
    }
    rs_lan_post_load(c);
    rs_engine_post_load(c);
    rs_dc_post_load(c);
    c->migrated_in = true;
    return 0;
}

/* ODP translations (ABI 1.4): sent while any is installed. */
static bool rs_odp_needed(void *opaque)
{
    RSCore *c = opaque;

    return c->odp_used != 0;
}

static bool rs_odp_used_valid(void *opaque, int version_id)
{
    RSCore *c = opaque;

    return c->odp_used <= c->p.odp_pages;
}

static const VMStateDescription vmstate_rs_odp_page = {
    .name = "rdma-session/odp-page",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(mr, RSOdpPage),
        VMSTATE_UINT32(rsvd, RSOdpPage),
        VMSTATE_UINT64(vpn, RSOdpPage),
        VMSTATE_UINT64(pa, RSOdpPage),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rs_odp = {
    .name = "rdma-session/core/odp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_odp_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.odp_pages, RSCore, NULL),
        VMSTATE_UINT32(odp_used, RSCore),
        VMSTATE_VALIDATE("odp_used within odp-pages", rs_odp_used_valid),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(odp, RSCore, p.odp_pages,
                                             vmstate_rs_odp_page, RSOdpPage),
        VMSTATE_END_OF_LIST()
    },
};

/* Device statistics (ABI 1.4): sent once any counted. */
static bool rs_stats_needed(void *opaque)
{
    RSCore *c = opaque;
    static const struct rs_device_stats zero;

    return memcmp(&c->stats, &zero, RS_DEVICE_STATS_V14) != 0;
}

static const VMStateDescription vmstate_rs_stats = {
    .name = "rdma-session/core/stats",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_stats_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.odp_faults, RSCore),
        VMSTATE_UINT64(stats.odp_resolved_pages, RSCore),
        VMSTATE_UINT64(stats.odp_invalidations, RSCore),
        VMSTATE_UINT64(stats.odp_fault_fails, RSCore),
        VMSTATE_UINT64(stats.odp_pauses_sent, RSCore),
        VMSTATE_UINT64(stats.odp_pauses_rcvd, RSCore),
        VMSTATE_UINT64(stats.odp_resumes_rcvd, RSCore),
        VMSTATE_UINT64(stats.rnr_naks_rcvd, RSCore),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * The transport counters (ABI 1.6): sent once any counted.  Any value is
 * valid: they are only reported, never followed.
 */
static bool rs_counters_needed(void *opaque)
{
    RSCore *c = opaque;
    static const struct rs_device_stats zero;

    return memcmp((uint8_t *)&c->stats + RS_DEVICE_STATS_V14,
                  (const uint8_t *)&zero + RS_DEVICE_STATS_V14,
                  sizeof(zero) - RS_DEVICE_STATS_V14) != 0;
}

static const VMStateDescription vmstate_rs_counters = {
    .name = "rdma-session/core/counters",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_counters_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.rnr_naks_sent, RSCore),
        VMSTATE_UINT64(stats.seq_naks_sent, RSCore),
        VMSTATE_UINT64(stats.seq_naks_rcvd, RSCore),
        VMSTATE_UINT64(stats.retransmits, RSCore),
        VMSTATE_UINT64(stats.ack_timeouts, RSCore),
        VMSTATE_UINT64(stats.icrc_drops, RSCore),
        VMSTATE_UINT64(stats.tx_packets, RSCore),
        VMSTATE_UINT64(stats.tx_bytes, RSCore),
        VMSTATE_UINT64(stats.rx_packets, RSCore),
        VMSTATE_UINT64(stats.rx_bytes, RSCore),
        VMSTATE_UINT64(stats.path_failovers, RSCore),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_rs_core = {
    .name = "rdma-session/core",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = rs_core_pre_load,
    .pre_save = rs_core_pre_save,
    .post_load = rs_core_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(p.max_qps, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_cqs, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_mrs, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_pds, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_ahs, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_sessions, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_groups, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_gids, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.max_mr_pages, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.db_pages, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.num_comp_vectors, RSCore, NULL),
        VMSTATE_UINT32_EQUAL(p.mtu, RSCore, NULL),
        VMSTATE_UINT32(ctrl, RSCore),
        VMSTATE_UINT32(status, RSCore),
        VMSTATE_UINT32(fatal_code, RSCore),
        VMSTATE_UINT64(admq_base, RSCore),
        VMSTATE_UINT32(admq_cfg, RSCore),
        VMSTATE_UINT64(acq_base, RSCore),
        VMSTATE_UINT32(acq_cfg, RSCore),
        VMSTATE_UINT64(aeq_base, RSCore),
        VMSTATE_UINT32(aeq_cfg, RSCore),
        VMSTATE_UINT32(admq_pi, RSCore),
        VMSTATE_UINT32(admq_ci, RSCore),
        VMSTATE_UINT32(aeq_pi, RSCore),
        VMSTATE_UINT32(aeq_ci, RSCore),
        VMSTATE_UINT32(mr_pages_used, RSCore),
        VMSTATE_VALIDATE("mr_pages_used within max-mr-pages",
                         rs_mr_pages_used_valid),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(pds, RSCore, p.max_pds,
                                             vmstate_rs_pd, RSPd),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(cqs, RSCore, p.max_cqs,
                                             vmstate_rs_cq, RSCq),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(gids, RSCore, p.max_gids,
                                             vmstate_rs_gid, RSGid),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(sessions, RSCore,
                                             p.max_sessions,
                                             vmstate_rs_session, RSSession),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(groups, RSCore, p.max_groups,
                                             vmstate_rs_group,
                                             RSSessionGroup),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(qps, RSCore, p.max_qps,
                                             vmstate_rs_qp, RSQp),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(mrs, RSCore, p.max_mrs,
                                             vmstate_rs_mr, RSMr),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(ahs, RSCore, p.max_ahs,
                                             vmstate_rs_ah, RSAh),
        VMSTATE_STRUCT_ARRAY(lanq, RSCore, 2, 1, vmstate_rs_lan_queue,
                             RSLanQueue),
        VMSTATE_UINT32(lan_rx_mode, RSCore),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_srqs,
        &vmstate_rs_mac,
        &vmstate_rs_mcast,
        &vmstate_rs_xrcds,
        &vmstate_rs_odp,
        &vmstate_rs_stats,
        &vmstate_rs_counters,
        &vmstate_rs_netids,
        NULL
    },
};

/*
 * Migration hold.  While the VM is stopped for migration nobody answers
 * the peers: the device receives nothing until the destination runs, and
 * a peer's requester that hears nothing for its retry budget (about 3 s
 * at timeout 14, retry_cnt 7 on this adapter) moves its QP to the error
 * state, however long the switchover takes (pause-before-switchover, a
 * big VM, a slow link).  So from RS_HOLD_GRACE_MS after the stop, every
 * RS_HOLD_PERIOD_MS, the source sends each RC QP's peer an RNR NAK at the
 * PSN its responder expects, with the longest RNR timer (code 0, 655.36
 * ms): the peer waits without counting retries (rnr_retry 7 is without
 * limit; a lower rnr_retry is used up by RNR NAKs instead of timeouts)
 * and sends again from that PSN, which the destination then answers.
 * Short downtimes never get there, so peers with a small rnr_retry see
 * nothing.  The hold ends when the device's state is saved (from there
 * on the destination answers), when the VM runs again (a failed or
 * cancelled migration) or at a reset.  Its frames go to the backend
 * directly (RSCore.send_stopped): datagram backends (tap, dgram, socket
 * mcast/udp) only, a stream backend gets no hold.  It reads the QP tables
 * and sends frames, nothing else: the state was or will be saved as it is.
 */
#define RS_HOLD_GRACE_MS    300
#define RS_HOLD_PERIOD_MS   300
#define RS_RNR_TIMER_MAX    0       /* IBTA RNR timer code 0: 655.36 ms */
#define RS_RNR_TIMER_MIN    1       /* 0.01 ms */

static void rs_migration_hold_tick(void *opaque)
{
    RSCore *c = opaque;
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
    uint32_t qpn, sent = 0;

    if (!c->holding) {
        return;
    }
    if (!rs_guard_enter(c)) {
        timer_mod(c->hold_timer, now + 1);
        return;
    }
    /* at most one frame per QP, each straight to the backend */
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        if (rs_resp_rnr_prompt(c, qpn, RS_RNR_TIMER_MAX)) {
            sent++;
        }
    }
    trace_rdma_session_migration_hold(sent);
    timer_mod(c->hold_timer, now + RS_HOLD_PERIOD_MS);
    rs_guard_leave(c);
}

void rs_migration_hold_start(RSCore *c)
{
    if (!c->p.migration_hold || c->holding || !rs_port_active(c)) {
        return;
    }
    if (!c->send_stopped) {
        trace_rdma_session_migration_no_hold();
        return;
    }
    c->holding = true;
    timer_mod(c->hold_timer,
              qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + RS_HOLD_GRACE_MS);
}

void rs_migration_hold_stop(RSCore *c)
{
    c->holding = false;
    timer_del(c->hold_timer);
}

/*
 * The destination runs: what waited for the switch goes now, not after a
 * backed-off timeout.  The peers' requesters get an RNR NAK with the
 * shortest timer at the PSN expected here (they send again at once, also
 * those that waited in the hold), unless a sequence NAK already asked
 * for that PSN; this side's requesters send again from the first
 * unacknowledged PSN.
 */
void rs_migration_resume(RSCore *c)
{
    uint32_t qpn, prompted = 0;

    if (!rs_port_active(c)) {
        return;
    }
    for (qpn = 1; qpn < c->p.max_qps; qpn++) {
        RSQp *qp = &c->qps[qpn];

        /*
         * One request to go back per PSN: a peer told twice (a sequence
         * NAK for a frame queued during the switch, then the prompt)
         * starts a second retry over the first, which soft-RoCE's
         * requester gets wrong (it resent the tail of a SEND as a new
         * message).  Until the expected PSN comes, gaps get no NAK either.
         */
        if (!qp->seq_nak_sent &&
            rs_resp_rnr_prompt(c, qpn, RS_RNR_TIMER_MIN)) {
            qp->seq_nak_sent = true;
            prompted++;
        }
        if (qp->valid && rs_qpt_rc_requester(qp->type) &&
            qp->state == RS_QPS_RTS && !qp->rnr_wait &&
            rs_psn_diff(qp->sq_psn, qp->una_psn) > 0) {
            rs_req_rewind(c, qpn);
        }
    }
    /*
     * READ responses and atomic ACKs the source still owed (a QP that
     * owes gets no prompt) go on from their resources: nothing else would
     * restart them before the peer's ACK timeout asks again.
     */
    qemu_bh_schedule(c->resp_bh);
    trace_rdma_session_migration_resume(prompted);
}

void rs_migration_realize(RSCore *c)
{
    c->hold_timer = timer_new_ms(QEMU_CLOCK_REALTIME,
                                 rs_migration_hold_tick, c);
}

void rs_migration_unrealize(RSCore *c)
{
    timer_free(c->hold_timer);
    c->hold_timer = NULL;
}
