/*
 * rdma-session adapter: registers, doorbells, events, guest DMA.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "system/dma.h"
#include "rdma-session-fabric.h"
#include "rdma-session-core.h"
#include "trace.h"

bool rs_log_limit(RSLogLimit *l, uint32_t *missed)
{
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);

    *missed = 0;
    if (!l->start || now - l->start >= RS_LOG_INTERVAL_MS) {
        l->start = now;
        l->count = 0;
    }
    if (l->count >= RS_LOG_BURST) {
        l->missed++;
        return false;
    }
    l->count++;
    *missed = l->missed;
    l->missed = 0;
    return true;
}

/*
 * Where a DMA range lands: RS_DMA_RAM, RS_DMA_PEER (a data buffer in
 * another device's memory BAR, see rs_data_check) or RS_DMA_REFUSED.
 * Every piece of the range must be writable when write is set; a range
 * that mixes RAM and a peer BAR, or spans two BARs, is refused: a buffer
 * lives in one place, and the cost of one check stays one translation
 * per region it touches.
 */
enum { RS_DMA_REFUSED, RS_DMA_RAM, RS_DMA_PEER };

static int rs_dma_kind(RSCore *c, uint64_t addr, uint64_t len, bool write,
                       bool peer_ok)
{
    int kind = RS_DMA_RAM;
    MemoryRegion *first = NULL;

    if (addr + len < addr) {
        return RS_DMA_REFUSED;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr = address_space_translate(c->as, addr, &xlat, &l,
                                                   write,
                                                   MEMTXATTRS_UNSPECIFIED);
        int k;

        if (l == 0) {
            return RS_DMA_REFUSED;
        }
        if (memory_region_is_ram(mr) && !memory_region_is_ram_device(mr)) {
            k = (write && mr->readonly) ? RS_DMA_REFUSED : RS_DMA_RAM;
        } else if (peer_ok && c->p.peer_dma && c->peer_region &&
                   c->peer_region(c->owner, mr)) {
            k = RS_DMA_PEER;
        } else {
            k = RS_DMA_REFUSED;
        }
        if (k == RS_DMA_REFUSED || (first && k != kind) ||
            (k == RS_DMA_PEER && first && mr != first)) {
            return RS_DMA_REFUSED;
        }
        kind = k;
        first = mr;
        addr += l;
        len -= l;
    }
    return kind;
}

/*
 * Every DMA of the device's own structures (rings, commands, page lists)
 * goes through here.  The whole range must be guest RAM as seen through
 * the device's bus-master address space: that refuses wrap-around,
 * unassigned space, other devices' MMIO and our own BARs (which would
 * re-enter the device), and it fails when bus mastering is off.
 */
uint8_t rs_dma_check(RSCore *c, uint64_t addr, uint64_t len, bool write)
{
    if (len && rs_dma_kind(c, addr, len, write, false) != RS_DMA_RAM) {
        trace_rdma_session_dma_refused(addr, len, write);
        return RS_STATUS_BAD_ADDR;
    }
    return RS_STATUS_OK;
}

uint8_t rs_dma_read(RSCore *c, uint64_t addr, void *buf, uint64_t len)
{
    uint8_t st = rs_dma_check(c, addr, len, false);

    if (st == RS_STATUS_OK &&
        dma_memory_read(c->as, addr, buf, len, MEMTXATTRS_UNSPECIFIED)) {
        st = RS_STATUS_BAD_ADDR;
    }
    return st;
}

uint8_t rs_dma_write(RSCore *c, uint64_t addr, const void *buf,
                     uint64_t len)
{
    uint8_t st = rs_dma_check(c, addr, len, true);

    if (st == RS_STATUS_OK &&
        dma_memory_write(c->as, addr, buf, len, MEMTXATTRS_UNSPECIFIED)) {
        st = RS_STATUS_BAD_ADDR;
    }
    return st;
}

/*
 * Data buffers (what memory keys and local DMA addresses translate to)
 * may also be in another PCI device's memory BAR, peer-to-peer as a
 * p2pdma provider such as an NVMe controller memory buffer offers it,
 * unless peer-dma=off.  The glue's peer_region says which regions are
 * such BARs; never ours.  c->data_ram_only refuses peers for what needs
 * RAM (atomics: an MMIO BAR cannot do a read-modify-write as one).
 */
static int rs_data_kind(RSCore *c, uint64_t addr, uint64_t len, bool write)
{
    int kind = len ? rs_dma_kind(c, addr, len, write, !c->data_ram_only) :
                     RS_DMA_RAM;

    if (kind == RS_DMA_REFUSED) {
        c->stats.data_dma_refused++;
        trace_rdma_session_dma_refused(addr, len, write);
    }
    return kind;
}

uint8_t rs_data_check(RSCore *c, uint64_t addr, uint64_t len, bool write)
{
    return rs_data_kind(c, addr, len, write) == RS_DMA_REFUSED ?
           RS_STATUS_BAD_ADDR : RS_STATUS_OK;
}

static uint8_t rs_data_rw(RSCore *c, uint64_t addr, void *buf, uint64_t len,
                          bool write)
{
    int kind = rs_data_kind(c, addr, len, write);
    bool engaged = c->guard && c->guard->engaged_in_io;
    MemTxResult r;

    if (kind == RS_DMA_REFUSED) {
        return RS_STATUS_BAD_ADDR;
    }
    if (kind == RS_DMA_RAM && !write && c->fabric &&
        rs_fabric_record(c, addr, len)) {
        /* A frame by reference: the peer copies from our RAM. */
        c->stats.ram_dma_read_bytes += len;
        return RS_STATUS_OK;
    }
    if (kind == RS_DMA_PEER) {
        /*
         * The peer's MMIO handler runs now; whatever it does, it must not
         * reach back into this device, here or from the receive path.
         */
        if (c->guard) {
            c->guard->engaged_in_io = true;
        }
        trace_rdma_session_peer_dma(addr, len, write);
    }
    r = write ? dma_memory_write(c->as, addr, buf, len,
                                 MEMTXATTRS_UNSPECIFIED) :
                dma_memory_read(c->as, addr, buf, len,
                                MEMTXATTRS_UNSPECIFIED);
    if (c->guard) {
        c->guard->engaged_in_io = engaged;
    }
    if (r != MEMTX_OK) {
        c->stats.data_dma_refused++;
        return RS_STATUS_BAD_ADDR;
    }
    if (kind == RS_DMA_PEER) {
        *(write ? &c->stats.peer_dma_write_bytes :
                  &c->stats.peer_dma_read_bytes) += len;
    } else {
        *(write ? &c->stats.ram_dma_write_bytes :
                  &c->stats.ram_dma_read_bytes) += len;
    }
    return RS_STATUS_OK;
}

uint8_t rs_data_read(RSCore *c, uint64_t addr, void *buf, uint64_t len)
{
    return rs_data_rw(c, addr, buf, len, false);
}

uint8_t rs_data_write(RSCore *c, uint64_t addr, const void *buf,
                      uint64_t len)
{
    return rs_data_rw(c, addr, (void *)buf, len, true);
}

/* A query command's response, to the buffer the command names. */
uint8_t rs_write_resp(RSCore *c, const struct rs_cmd_query *q,
                      const void *resp, size_t len)
{
    uint64_t addr = le64_to_cpu(q->resp_addr);

    if (le32_to_cpu(q->resp_len) < len) {
        return RS_STATUS_BAD_SIZE;
    }
    if (addr & 7) {
        return RS_STATUS_BAD_ALIGN;
    }
    return rs_dma_write(c, addr, resp, len);
}

/* A ring of 2^log_size entries in guest memory, as every queue uses. */
uint8_t rs_check_ring(RSCore *c, uint64_t addr, unsigned log_size,
                      unsigned max_log, size_t entry_size)
{
    if (log_size < 1 || log_size > max_log) {
        return RS_STATUS_BAD_SIZE;
    }
    if (addr == 0) {
        return RS_STATUS_BAD_ADDR;
    }
    if (addr & (RS_RING_ALIGN - 1)) {
        return RS_STATUS_BAD_ALIGN;
    }
    return rs_dma_check(c, addr, (uint64_t)entry_size << log_size, true);
}

static void rs_free_tables(RSCore *c)
{
    for (uint32_t i = 0; i < c->p.max_mrs; i++) {
        g_free(c->mrs[i].pages);
        g_free(c->mrs[i].mkl);
    }
}

static void rs_clear_tables(RSCore *c)
{
    rs_free_tables(c);
    memset(c->pds, 0, sizeof(*c->pds) * c->p.max_pds);
    memset(c->cqs, 0, sizeof(*c->cqs) * c->p.max_cqs);
    memset(c->comp_pending, 0, sizeof(*c->comp_pending) *
           c->p.num_comp_vectors * BITS_TO_LONGS(c->p.max_cqs));
    memset(c->qps, 0, sizeof(*c->qps) * c->p.max_qps);
    memset(c->mrs, 0, sizeof(*c->mrs) * c->p.max_mrs);
    for (uint32_t i = 0; i < c->p.max_mrs; i++) {
        c->mrs[i].core = c;
    }
    memset(c->ahs, 0, sizeof(*c->ahs) * c->p.max_ahs);
    memset(c->sessions, 0, sizeof(*c->sessions) * c->p.max_sessions);
    memset(c->groups, 0, sizeof(*c->groups) * c->p.max_groups);
    memset(c->gids, 0, sizeof(*c->gids) * c->p.max_gids);
    memset(c->srqs, 0, sizeof(*c->srqs) * c->p.max_srqs);
    memset(c->xrcds, 0, sizeof(*c->xrcds) * c->p.max_xrcds);
    c->mr_pages_used = 0;
}

/*
 * The features, in the order their hooks run: an object kind after those
 * whose indices it holds (validate relies on them), and the order in
 * which realize and reset have always run them (the engine stops before
 * DC does, LAN exists before the engine).  A new feature: its RSFeature
 * rs_feature_<name> in its file and one line here.
 */
const RSFeature *const rs_features[] = {
    &rs_feature_admin,      /* rdma-session-admin.c: the admin queue */
    &rs_feature_mcast,      /* rdma-session-mcast.c */
    &rs_feature_objects,    /* rdma-session-objects.c: PD, CQ, AH, SRQ */
    &rs_feature_xrc,        /* rdma-session-xrc.c */
    &rs_feature_qp,         /* rdma-session-qp.c */
    &rs_feature_mkey,       /* rdma-session-mkey.c: MRs and their keys */
    &rs_feature_mkey_list,  /* rdma-session-mkey-list.c */
    &rs_feature_mw,         /* rdma-session-mw.c */
    &rs_feature_session,    /* rdma-session-session.c: sessions, groups */
    &rs_feature_path,       /* rdma-session-path.c */
    &rs_feature_refs,       /* rdma-session-migration.c: reference counts */
    &rs_feature_lan,        /* rdma-session-lan.c */
    &rs_feature_engine,     /* rdma-session-engine.c */
    &rs_feature_bundle,     /* rdma-session-bundle.c */
    &rs_feature_hold,       /* rdma-session-engine.c: the migration hold */
    &rs_feature_odp,        /* rdma-session-odp.c */
    &rs_feature_dc,         /* rdma-session-dc.c */
    &rs_feature_netid,      /* rdma-session-netid.c */
    &rs_feature_ecn,        /* rdma-session-ecn.c */
    &rs_feature_dcqcn,      /* rdma-session-dcqcn.c */
    &rs_feature_fabric,     /* rdma-session-fabric.c: the local fabric */
    &rs_feature_dbrec,      /* rdma-session-dbrec.c */
    NULL
};

/*
 * Reset: every feature stops what runs, the core clears the object
 * tables and its registers, then every feature resets its own state.
 */
void rs_core_reset(RSCore *c)
{
    trace_rdma_session_reset();
    RS_FOR_EACH_FEATURE(f) {
        if ((*f)->quiesce) {
            (*f)->quiesce(c);
        }
    }
    rs_clear_tables(c);
    c->ctrl = 0;
    c->status = c->link_up ? R_RS_STATUS_LINK_UP_MASK : 0;
    c->fatal_code = RS_FATAL_NONE;
    c->admq_base = c->acq_base = c->aeq_base = 0;
    c->admq_cfg = c->acq_cfg = c->aeq_cfg = 0;
    c->admq_pi = c->admq_ci = 0;
    c->aeq_pi = c->aeq_ci = 0;
    RS_FOR_EACH_FEATURE(f) {
        if ((*f)->reset) {
            (*f)->reset(c);
        }
    }
}

/* The features before end (NULL: all) unrealize, then the core. */
static void rs_core_teardown(RSCore *c, const RSFeature *const *end)
{
    RS_FOR_EACH_FEATURE(f) {
        if (f == end) {
            break;
        }
        if ((*f)->unrealize) {
            (*f)->unrealize(c);
        }
    }
    rs_free_tables(c);
    g_free(c->pds);
    g_free(c->cqs);
    g_free(c->comp_pending);
    g_free(c->qps);
    g_free(c->mrs);
    g_free(c->ahs);
    g_free(c->sessions);
    g_free(c->groups);
    g_free(c->gids);
    g_free(c->srqs);
    g_free(c->xrcds);
}

bool rs_core_realize(RSCore *c, Error **errp)
{
    const RSParams *p = &c->p;

    if (p->max_qps < 2 || p->max_qps > 65536 || p->max_cqs < 2 ||
        p->max_cqs > 65536 || p->max_pds < 2 || p->max_pds > 65536 ||
        p->max_ahs < 2 || p->max_ahs > 65536 || p->max_mrs < 2 ||
        p->max_mrs > (1u << 20) || p->max_sessions < 2 ||
        p->max_sessions > 65536 || p->max_groups < 2 ||
        p->max_groups > 65536 || p->max_srqs < 2 || p->max_srqs > 65536 ||
        p->max_xrcds < 2 || p->max_xrcds > 65536) {
        error_setg(errp, "rdma-session: object counts must be 2..65536 "
                   "(max-mrs up to 1048576)");
        return false;
    }
    if (p->max_gids < 1 || p->max_gids > 256) {
        error_setg(errp, "rdma-session: max-gids must be 1..256");
        return false;
    }
    if (p->mtu != 256 && p->mtu != 512 && p->mtu != 1024 && p->mtu != 2048 &&
        p->mtu != 4096) {
        error_setg(errp, "rdma-session: mtu must be 256, 512, 1024, 2048 "
                   "or 4096");
        return false;
    }
    if (p->num_comp_vectors < 1 || p->num_comp_vectors > 64) {
        error_setg(errp, "rdma-session: num-comp-vectors must be 1..64");
        return false;
    }
    if (p->db_pages < 1 || p->db_pages > 1024 || !is_power_of_2(p->db_pages)) {
        error_setg(errp, "rdma-session: db-pages must be a power of two "
                   "in 1..1024");
        return false;
    }
    if (p->max_mr_pages < 1 || p->max_mr_pages > (1u << 24)) {
        error_setg(errp, "rdma-session: max-mr-pages must be 1..16777216");
        return false;
    }
    if (p->fabric_window > 4096) {
        error_setg(errp, "rdma-session: x-fabric-window must be at most "
                   "4096 packets");
        return false;
    }
    if (p->window < 1 || p->window > 4096) {
        error_setg(errp, "rdma-session: x-window must be 1..4096 packets");
        return false;
    }
    if (p->ack_backoff > 6) {
        error_setg(errp, "rdma-session: x-ack-backoff must be 0..6");
        return false;
    }
    if (p->max_msg_size < 1 || p->max_msg_size > 0x80000000u) {
        error_setg(errp, "rdma-session: max-msg-size must be 1..2147483648");
        return false;
    }
    if (p->odp_pages < 64 || p->odp_pages > (1u << 20) ||
        !is_power_of_2(p->odp_pages)) {
        error_setg(errp, "rdma-session: odp-pages must be a power of two "
                   "in 64..1048576");
        return false;
    }
    if (p->odp_fault_timeout < 1 || p->odp_fault_timeout > 60000) {
        error_setg(errp, "rdma-session: odp-fault-timeout must be "
                   "1..60000 ms");
        return false;
    }
    if (p->dc_contexts > 4096) {
        error_setg(errp, "rdma-session: dc-contexts must be 0..4096");
        return false;
    }
    if (p->dc_idle_us < 10 || p->dc_idle_us > 10000000) {
        error_setg(errp, "rdma-session: dc-idle must be 10..10000000 us");
        return false;
    }
    if (p->path_holddown_ms < 1 || p->path_holddown_ms > 60000) {
        error_setg(errp, "rdma-session: path-holddown must be 1..60000 ms");
        return false;
    }
    if (p->bundle_max < RS_BUNDLE_MIN || p->bundle_max > RS_BUNDLE_MAX) {
        error_setg(errp, "rdma-session: x-bundle-max must be %u..%u bytes",
                   RS_BUNDLE_MIN, RS_BUNDLE_MAX);
        return false;
    }
    RS_FOR_EACH_FEATURE(f) {
        if ((*f)->check && !(*f)->check(c, errp)) {
            return false;
        }
    }

    c->pds = g_new0(RSPd, p->max_pds);
    c->cqs = g_new0(RSCq, p->max_cqs);
    c->comp_pending = g_new0(unsigned long, p->num_comp_vectors *
                             BITS_TO_LONGS(p->max_cqs));
    c->qps = g_new0(RSQp, p->max_qps);
    c->mrs = g_new0(RSMr, p->max_mrs);
    c->ahs = g_new0(RSAh, p->max_ahs);
    c->sessions = g_new0(RSSession, p->max_sessions);
    c->groups = g_new0(RSSessionGroup, p->max_groups);
    c->gids = g_new0(RSGid, p->max_gids);
    c->srqs = g_new0(RSSrq, p->max_srqs);
    c->xrcds = g_new0(RSXrcd, p->max_xrcds);
    RS_FOR_EACH_FEATURE(f) {
        if ((*f)->realize && !(*f)->realize(c, errp)) {
            rs_core_teardown(c, f);
            return false;
        }
    }
    return true;
}

void rs_core_unrealize(RSCore *c)
{
    rs_core_teardown(c, NULL);
}

void rs_core_raise_event(RSCore *c, uint8_t type, uint32_t handle,
                         uint64_t data)
{
    rs_core_raise_event_info(c, type, 0, 0, handle, data);
}

/* An event with type-specific flags and info (ODP_PAGE_FAULT). */
void rs_core_raise_event_info(RSCore *c, uint8_t type, uint8_t flags,
                              uint16_t info, uint32_t handle, uint64_t data)
{
    unsigned log = FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG, LOG_SIZE);
    struct rs_event ev = {
        .type = type,
        .info = cpu_to_le16(info),
        .handle = cpu_to_le32(handle),
        .data = cpu_to_le64(data),
    };

    if (!(c->status & R_RS_STATUS_READY_MASK) || !c->aeq_base) {
        return;
    }
    if (c->aeq_pi - c->aeq_ci >= (1u << log)) {
        trace_rdma_session_event_overflow(type, handle);
        c->status |= R_RS_STATUS_AEQ_OVERFLOW_MASK;
        return;
    }
    ev.flags = flags | (((c->aeq_pi >> log) & 1) ? 0 : RS_EQE_PHASE);
    if (rs_dma_write(c, c->aeq_base +
                     (uint64_t)(c->aeq_pi & ((1u << log) - 1)) * sizeof(ev),
                     &ev, sizeof(ev)) != RS_STATUS_OK) {
        c->status |= R_RS_STATUS_FATAL_MASK;
        c->status &= ~R_RS_STATUS_READY_MASK;
        c->fatal_code = RS_FATAL_DMA;
        return;
    }
    trace_rdma_session_event(type, handle, data, c->aeq_pi);
    c->aeq_pi++;
    c->notify(c->owner, FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG, VECTOR));
}

void rs_core_set_link(RSCore *c, bool up)
{
    if (c->link_up == up) {
        return;
    }
    c->link_up = up;
    c->status = FIELD_DP32(c->status, RS_STATUS, LINK_UP, up);
    trace_rdma_session_link(up);
    rs_core_raise_event(c, up ? RS_EV_PORT_ACTIVE : RS_EV_PORT_ERR, 1, 0);
}

static bool rs_rings_valid(RSCore *c)
{
    unsigned log = FIELD_EX32(c->admq_cfg, RS_ADMQ_CFG, LOG_SIZE);
    uint32_t nvec = c->p.num_comp_vectors + 1;

    if (rs_check_ring(c, c->admq_base, log, RS_MAX_ADMQ_LOG,
                      sizeof(struct rs_admin_cmd)) ||
        rs_check_ring(c, c->acq_base, log, RS_MAX_ADMQ_LOG,
                      sizeof(struct rs_admin_cqe)) ||
        FIELD_EX32(c->acq_cfg, RS_ACQ_CFG, VECTOR) >= nvec) {
        return false;
    }
    if (c->aeq_base == 0) {
        return true;
    }
    return !rs_check_ring(c, c->aeq_base,
                          FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG, LOG_SIZE),
                          RS_MAX_AEQ_LOG, sizeof(struct rs_event)) &&
           FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG, VECTOR) < nvec;
}

static void rs_write_ctrl(RSCore *c, uint32_t val)
{
    bool was = c->ctrl & R_RS_CTRL_ENABLE_MASK;
    bool en = val & R_RS_CTRL_ENABLE_MASK;

    if ((val & R_RS_CTRL_RESET_MASK) || (was && !en)) {
        rs_core_reset(c);
        return;
    }
    if (was || !en) {
        return;
    }
    c->ctrl = R_RS_CTRL_ENABLE_MASK;
    if (!rs_rings_valid(c)) {
        RS_GUEST_ERR(rdma_session_err_ring_config,
                     "enable with invalid ring configuration "
                     "admq 0x%" PRIx64 " acq 0x%" PRIx64 " aeq 0x%" PRIx64,
                     c->admq_base, c->acq_base, c->aeq_base);
        c->status |= R_RS_STATUS_FATAL_MASK;
        c->fatal_code = RS_FATAL_BAD_RING_CONFIG;
        return;
    }
    c->status |= R_RS_STATUS_READY_MASK;
    c->admq_ci = c->admq_pi = 0;
    c->aeq_pi = c->aeq_ci = 0;
    trace_rdma_session_enable();
    if (c->link_up) {
        rs_core_raise_event(c, RS_EV_PORT_ACTIVE, 1, 0);
    }
}

static void rs_write_admq_db(RSCore *c, uint32_t val)
{
    uint32_t size = 1u << FIELD_EX32(c->admq_cfg, RS_ADMQ_CFG, LOG_SIZE);

    if (!(c->status & R_RS_STATUS_READY_MASK)) {
        RS_GUEST_ERR(rdma_session_err_admin_db_not_ready,
                     "admin doorbell 0x%x while the device is not ready", val);
        return;
    }
    if (val - c->admq_ci > size) {
        RS_GUEST_ERR(rdma_session_err_admin_db_range, "admin producer index "
                     "0x%x more than the ring ahead of the consumer", val);
        return;
    }
    c->admq_pi = val;
    qemu_bh_schedule(c->admin_bh);
}

/*
 * RS_COMP_CAUSE of a vector: the next CQ of the vector whose notification
 * fired, forgotten now (rdma-session-cq.c sets them).
 */
uint32_t rs_comp_cause_read(RSCore *c, uint32_t vector)
{
    unsigned long *map;
    uint32_t idx;

    if (vector >= c->p.num_comp_vectors) {
        RS_GUEST_ERR(rdma_session_err_comp_cause, "read of the completion "
                     "cause of vector %u of %u", vector,
                     c->p.num_comp_vectors);
        return RS_COMP_CAUSE_NONE;
    }
    map = rs_comp_map(c, vector);
    idx = find_first_bit(map, c->p.max_cqs);
    if (idx >= c->p.max_cqs) {
        return RS_COMP_CAUSE_NONE;
    }
    clear_bit(idx, map);
    c->cqs[idx].ev_pending = false;
    trace_rdma_session_comp_cause(vector, idx);
    return rs_handle(idx, c->cqs[idx].gen);
}

uint64_t rs_core_reg_read(RSCore *c, hwaddr addr)
{
    uint64_t val = 0;

    switch (addr) {
    case A_RS_MAGIC:
        val = RS_MAGIC;
        break;
    case A_RS_VERSION:
        val = (RS_ABI_VERSION_MAJOR << R_RS_VERSION_MAJOR_SHIFT) |
              RS_ABI_VERSION_MINOR;
        break;
    case A_RS_CAPS:
        val = RS_CAP_RC | RS_CAP_UC | RS_CAP_UD | RS_CAP_SESSION_GROUPS |
              RS_CAP_NETID_MKEYS | RS_CAP_LAN | RS_CAP_ATOMIC | RS_CAP_SRQ |
              RS_CAP_MW | RS_CAP_MCAST | RS_CAP_FLUSH |
              RS_CAP_ATOMIC_WRITE | RS_CAP_XRC | RS_CAP_DC |
              RS_CAP_INDIRECT_MKEY | RS_CAP_PATTERN_MKEY | RS_CAP_MULTIPATH |
              RS_CAP_HOST_NETID |
              RS_CAP_DEVICE_COUNTERS | RS_CAP_COMP_CAUSE | RS_CAP_REREG_MR |
              RS_CAP_VLAN | RS_CAP_ECN |
              (c->p.odp ? RS_CAP_ODP : 0) |
              (c->p.peer_dma ? RS_CAP_PEER_DMA : 0) |
              (c->p.db_record ? RS_CAP_DB_RECORD : 0);
        break;
    case A_RS_DB_PAGES:
        val = c->p.db_pages;
        break;
    case A_RS_CTRL:
        val = c->ctrl;
        break;
    case A_RS_STATUS:
        val = c->status;
        break;
    case A_RS_FATAL_CODE:
        val = c->fatal_code;
        break;
    case A_RS_NUM_MSIX:
        val = c->p.num_comp_vectors + 1;
        break;
    case A_RS_ADMQ_BASE_LO:
        val = (uint32_t)c->admq_base;
        break;
    case A_RS_ADMQ_BASE_HI:
        val = c->admq_base >> 32;
        break;
    case A_RS_ADMQ_CFG:
        val = c->admq_cfg;
        break;
    case A_RS_ADMQ_CI:
        val = c->admq_ci;
        break;
    case A_RS_ACQ_BASE_LO:
        val = (uint32_t)c->acq_base;
        break;
    case A_RS_ACQ_BASE_HI:
        val = c->acq_base >> 32;
        break;
    case A_RS_ACQ_CFG:
        val = c->acq_cfg;
        break;
    case A_RS_AEQ_BASE_LO:
        val = (uint32_t)c->aeq_base;
        break;
    case A_RS_AEQ_BASE_HI:
        val = c->aeq_base >> 32;
        break;
    case A_RS_AEQ_CFG:
        val = c->aeq_cfg;
        break;
    case A_RS_AEQ_CI:
        val = c->aeq_ci;
        break;
    case A_RS_MAC_LO:
        val = ldl_le_p(c->mac.a);
        break;
    case A_RS_MAC_HI:
        val = lduw_le_p(c->mac.a + 4);
        break;
    case A_RS_COMP_CAUSE ... A_RS_COMP_CAUSE + 4 * 63:
        val = rs_comp_cause_read(c, (addr - A_RS_COMP_CAUSE) / 4);
        break;
    default:
        RS_GUEST_ERR(rdma_session_err_reg_read, "read of unknown register 0x%"
                     HWADDR_PRIx, addr);
        break;
    }
    trace_rdma_session_reg_read(addr, val);
    return val;
}

/* Ring layout registers can only change while the function is disabled. */
static bool rs_ring_reg_writable(RSCore *c, hwaddr addr)
{
    if (c->ctrl & R_RS_CTRL_ENABLE_MASK) {
        RS_GUEST_ERR(rdma_session_err_ring_reg_enabled, "write to ring "
                     "register 0x%" HWADDR_PRIx " while enabled", addr);
        return false;
    }
    return true;
}

void rs_core_reg_write(RSCore *c, hwaddr addr, uint32_t val)
{
    trace_rdma_session_reg_write(addr, val);

    switch (addr) {
    case A_RS_CTRL:
        rs_write_ctrl(c, val);
        return;
    case A_RS_ADMQ_DB:
        rs_write_admq_db(c, val);
        return;
    case A_RS_AEQ_CI:
        if (c->aeq_pi - val > (1u << FIELD_EX32(c->aeq_cfg, RS_AEQ_CFG,
                                                 LOG_SIZE))) {
            RS_GUEST_ERR(rdma_session_err_aeq_ci, "event consumer index 0x%x "
                         "outside the ring", val);
            return;
        }
        c->aeq_ci = val;
        return;
    case A_RS_ADMQ_BASE_LO:
    case A_RS_ADMQ_BASE_HI:
    case A_RS_ADMQ_CFG:
    case A_RS_ACQ_BASE_LO:
    case A_RS_ACQ_BASE_HI:
    case A_RS_ACQ_CFG:
    case A_RS_AEQ_BASE_LO:
    case A_RS_AEQ_BASE_HI:
    case A_RS_AEQ_CFG:
        if (!rs_ring_reg_writable(c, addr)) {
            return;
        }
        break;
    default:
        RS_GUEST_ERR(rdma_session_err_reg_write, "write 0x%x to read-only or "
                     "unknown register 0x%" HWADDR_PRIx, val, addr);
        return;
    }

    switch (addr) {
    case A_RS_ADMQ_BASE_LO:
        c->admq_base = deposit64(c->admq_base, 0, 32, val);
        break;
    case A_RS_ADMQ_BASE_HI:
        c->admq_base = deposit64(c->admq_base, 32, 32, val);
        break;
    case A_RS_ADMQ_CFG:
        c->admq_cfg = val & R_RS_ADMQ_CFG_LOG_SIZE_MASK;
        break;
    case A_RS_ACQ_BASE_LO:
        c->acq_base = deposit64(c->acq_base, 0, 32, val);
        break;
    case A_RS_ACQ_BASE_HI:
        c->acq_base = deposit64(c->acq_base, 32, 32, val);
        break;
    case A_RS_ACQ_CFG:
        c->acq_cfg = val & R_RS_ACQ_CFG_VECTOR_MASK;
        break;
    case A_RS_AEQ_BASE_LO:
        c->aeq_base = deposit64(c->aeq_base, 0, 32, val);
        break;
    case A_RS_AEQ_BASE_HI:
        c->aeq_base = deposit64(c->aeq_base, 32, 32, val);
        break;
    case A_RS_AEQ_CFG:
        c->aeq_cfg = val & (R_RS_AEQ_CFG_LOG_SIZE_MASK |
                            R_RS_AEQ_CFG_VECTOR_MASK);
        break;
    }
}

/*
 * Doorbell page p may only ring objects created with uar == p, so one user
 * context cannot drive another's queues; the LAN rings belong to page 0.
 * An SQ doorbell runs the requester on its QP (a budget of work, the rest
 * in its bottom half); the others record an index or arm a CQ.
 */
void rs_core_db_write(RSCore *c, hwaddr addr, uint32_t val)
{
    uint32_t page = addr >> RS_DB_PAGE_SHIFT;
    uint32_t reg = addr & (RS_DB_PAGE_SIZE - 1);
    uint32_t idx = val & RS_DB_INDEX_MASK;
    uint16_t value = val >> RS_DB_VALUE_SHIFT;

    trace_rdma_session_doorbell(page, reg, val);
    if (!(c->status & R_RS_STATUS_READY_MASK)) {
        RS_GUEST_ERR(rdma_session_err_db_not_ready, "doorbell 0x%x while the "
                     "device is not ready", val);
        return;
    }
    if (reg == RS_DB_SQ || reg == RS_DB_RQ || reg == RS_DB_SRQ) {
        c->stats.db_mmio_writes++;
    }
    switch (reg) {
    case RS_DB_SQ:
    case RS_DB_RQ:
        if (idx >= c->p.max_qps || !c->qps[idx].valid ||
            c->qps[idx].uar != page) {
            break;
        }
        if (reg == RS_DB_SQ) {
            if (!c->qps[idx].sq_log) {
                break;          /* an XRC target has no send queue */
            }
            c->qps[idx].sq_pi = value;
            c->engine->doorbell(c, idx);
        } else if (c->qps[idx].srq || !c->qps[idx].rq_log) {
            break;              /* it has no receive queue of its own */
        } else {
            c->qps[idx].rq_pi = value;
            if (c->qps[idx].state == RS_QPS_ERR) {
                c->engine->kick(c); /* flush it */
            }
        }
        return;
    case RS_DB_SRQ:
        if (idx >= c->p.max_srqs || !c->srqs[idx].valid ||
            c->srqs[idx].uar != page) {
            break;
        }
        c->srqs[idx].pi = value;
        return;
    case RS_DB_CQ_CI:
    case RS_DB_CQ_ARM:
        if (idx >= c->p.max_cqs || !c->cqs[idx].valid ||
            c->cqs[idx].uar != page) {
            break;
        }
        if (reg == RS_DB_CQ_CI) {
            c->cqs[idx].ci = value;
        } else {
            c->cqs[idx].arm = value & 3;
        }
        return;
    case RS_DB_LAN_TX:
    case RS_DB_LAN_RX:
        c->lan_db_write(c, page, reg, val);
        return;
    default:
        RS_GUEST_ERR(rdma_session_err_db_offset, "write 0x%x to unknown "
                     "doorbell offset 0x%x of page %u", val, reg, page);
        return;
    }
    RS_GUEST_ERR(rdma_session_err_db_owner, "doorbell 0x%x at offset 0x%x "
                 "names an object that page %u does not own", val, reg, page);
}
