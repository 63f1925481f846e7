/*
 * rdma-session RoCEv2 packet fuzzer (rdma_session_fuzz.c): the bring-up:
 * the adapter's objects as a driver makes them
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "standard-headers/linux/pci_regs.h"
#include "rdma_session_fuzz.h"

/* ------------------------------------------------------------------ */
/* Bring-up                                                            */
/* ------------------------------------------------------------------ */

/* Keyless inputs: no remote access right on any MR or key. */
uint16_t rsf_access(uint16_t access)
{
    return rsf_wire.keyless ? access & RS_ACCESS_LOCAL_WRITE : access;
}

static void rsf_ok(uint8_t status, const char *what)
{
    if (status != RS_STATUS_OK) {
        fprintf(stderr, "rdma-session fuzz: bring-up %s failed: %s\n", what,
                qrs_status_name(status));
        abort();
    }
}

static uint64_t rsf_buf(RSFState *f, uint32_t len)
{
    uint64_t a = guest_alloc(&f->alloc, len + RSF_PAGE);

    g_assert(a);
    a = ROUND_UP(a, RSF_PAGE);
    qtest_memset(qrs_qts(&f->d), a, 0, len);
    return a;
}

static void rsf_add_gid_vlan(RSFState *f, uint32_t index, uint8_t type,
                             const uint8_t *gid, uint16_t vlan)
{
    struct rs_cmd_add_gid c = {
        .index = index, .type = type, .vni = index, .vlan = vlan,
    };
    uint32_t got;

    memcpy(c.gid, gid, 16);
    rsf_ok(qrs_add_gid(&f->d, &c, &got), "ADD_GID");
}

static void rsf_add_gid(RSFState *f, uint32_t index, uint8_t type,
                 const uint8_t *gid)
{
    struct rs_cmd_add_gid c = { .index = index, .type = type, .vni = index };
    uint32_t got;

    memcpy(c.gid, gid, 16);
    rsf_ok(qrs_add_gid(&f->d, &c, &got), "ADD_GID");
}

static void rsf_gid_v4(uint8_t *gid, const uint8_t *ip)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    memcpy(gid + 12, ip, 4);
}

/* An MR of @pages pages from @base (0: new zeroed RAM). */
static void rsf_reg_mr_at(RSFState *f, RSFMr *m, uint64_t base,
                          uint32_t pages, uint16_t access,
                          uint32_t gid_index)
{
    struct rs_cmd_reg_mr c = {
        .length = pages * RSF_PAGE,
        .npages = pages,
        .pd = f->pd,
        .page_shift = 12,
        .access = rsf_access(access),
        .gid_index = gid_index,
    };
    uint32_t i, rkey;

    m->len = pages * RSF_PAGE;
    m->base = base ? base : rsf_buf(f, m->len);
    c.iova = m->base;
    c.pbl_addr = guest_alloc(&f->alloc, pages * 8);
    for (i = 0; i < pages; i++) {
        qtest_writeq(qrs_qts(&f->d), c.pbl_addr + i * 8,
                     m->base + i * RSF_PAGE);
    }
    rsf_ok(qrs_reg_mr(&f->d, &c, &m->key, &rkey), "REG_MR");
}

static void rsf_reg_mr(RSFState *f, RSFMr *m, uint32_t pages,
                       uint16_t access, uint32_t gid_index)
{
    rsf_reg_mr_at(f, m, 0, pages, access, gid_index);
}

/*
 * Peer-to-peer DMA: an MR on the registers of another device (e1000e's
 * BAR 0), the most hostile peer there is: what frames write there runs
 * its MMIO handlers, which may start its own DMA.
 */
static void rsf_reg_peer_mr(RSFState *f, RSFMr *m)
{
    QPCIDevice *peer = qpci_device_find(f->bus, RSF_PEER_DEVFN);
    uint64_t size;
    QPCIBar bar;

    g_assert(peer);
    qpci_device_enable(peer);
    bar = qpci_iomap(peer, 0, &size);
    g_assert(!bar.is_io && size >= 4 * RSF_PAGE);
    rsf_reg_mr_at(f, m, qpci_config_readl(peer, PCI_BASE_ADDRESS_0) &
                  PCI_BASE_ADDRESS_MEM_MASK, 4,
                  RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT, 0);
    g_free(peer);
}

/* Large pages, so that one READ or WRITE may span gigabytes. */
static void rsf_reg_big_mr(RSFState *f, RSFMr *m)
{
    struct rs_cmd_reg_mr c = {
        .iova = RSF_BIG_IOVA,
        .length = (uint64_t)RSF_BIG_PAGES << RSF_BIG_SHIFT,
        .npages = RSF_BIG_PAGES,
        .pd = f->pd,
        .page_shift = RSF_BIG_SHIFT,
        .access = rsf_access(RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT),
    };
    uint32_t i, rkey;

    m->base = RSF_BIG_IOVA;
    m->len = c.length;
    c.pbl_addr = guest_alloc(&f->alloc, RSF_BIG_PAGES * 8);
    for (i = 0; i < RSF_BIG_PAGES; i++) {
        qtest_writeq(qrs_qts(&f->d), c.pbl_addr + i * 8, RSF_BIG_PA);
    }
    rsf_ok(qrs_reg_mr(&f->d, &c, &m->key, &rkey), "REG_MR");
}

/*
 * ODP_RESOLVE of n pages of ODP MR m from page first, page i mapped to
 * the buffer's page (first + i + shift) % 4 with flags.
 */
uint8_t rsf_odp_resolve(RSFState *f, RSFMr *m, uint32_t first,
                        uint32_t n, uint32_t shift, uint64_t flags,
                        uint32_t seq, uint32_t rflags)
{
    struct rs_cmd_odp_resolve c = {
        .key = m->key, .seq = seq, .va = m->base + first * RSF_PAGE,
        .npages = n, .flags = rflags,
    };
    uint32_t i;

    if (!(rflags & RS_ODP_RESOLVE_F_FAIL)) {
        c.pbl_addr = guest_alloc(&f->alloc, MAX(n, 1) * 8);
        for (i = 0; i < n; i++) {
            qtest_writeq(qrs_qts(&f->d), c.pbl_addr + i * 8,
                         (m->base + ((first + i + shift) % 4) * RSF_PAGE) |
                         flags);
        }
    }
    return qrs_admin_cmd(&f->d, RS_CMD_ODP_RESOLVE, &c, sizeof(c), NULL,
                         NULL);
}

static void rsf_reg_odp_mr(RSFState *f, RSFMr *m, bool implicit)
{
    struct rs_cmd_reg_mr c = {
        .pd = f->pd,
        .page_shift = 12,
        .flags = RS_MR_F_ODP | (implicit ? RS_MR_F_ODP_IMPLICIT : 0),
        .access = rsf_access(RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT),
    };
    uint32_t rkey;

    m->len = 4 * RSF_PAGE;
    m->base = rsf_buf(f, m->len);
    if (!implicit) {
        c.iova = m->base;
        c.length = m->len;
    }
    rsf_ok(qrs_reg_mr(&f->d, &c, &m->key, &rkey), "REG_MR ODP");
    rsf_ok(rsf_odp_resolve(f, m, 0, 2, 0, RS_ODP_PAGE_READ |
                           RS_ODP_PAGE_WRITE, 0, 0), "ODP_RESOLVE");
}

/* An indirect or pattern key over the MRs registered before it. */
static void rsf_reg_mkey_list(RSFState *f, RSFMr *m, uint8_t op,
                       const void *ents, size_t size, uint16_t n,
                       uint32_t repeat, uint32_t len)
{
    struct rs_cmd_reg_mkey_list c = {
        .list_addr = guest_alloc(&f->alloc, size),
        .pd = f->pd,
        .nentries = n,
        .access = rsf_access(RS_ACCESS_ALL &
                             ~(RS_ACCESS_FLUSH_PERSISTENT |
                               RS_ACCESS_MW_BIND)),
        .repeat = repeat,
    };

    qtest_memwrite(qrs_qts(&f->d), c.list_addr, ents, size);
    m->base = 0;
    m->len = len;
    rsf_ok(qrs_admin_cmd(&f->d, op, &c, sizeof(c), &m->key, NULL),
           "REG_*_MKEY");
}

static void rsf_reg_mkeys(RSFState *f)
{
    const RSFMr *all = &f->mr[RSF_MR_ALL], *odp = &f->mr[RSF_MR_ODP];
    const RSFMr *ro = &f->mr[RSF_MR_READ_ONLY];
    struct rs_mkey_entry ie[4] = {
        { all->base + 3 * RSF_PAGE + 8, RSF_PAGE - 8, all->key },
        { ro->base + 16, 1000, ro->key },
        { all->base + 100, 2 * RSF_PAGE, all->key },
        { odp->base + RSF_PAGE, 2 * RSF_PAGE, odp->key },
    };
    struct rs_pattern_entry pe[2] = {
        { .addr = all->base + 24, .key = all->key, .bytes_count = 8,
          .bytes_skip = 56 },
        { .addr = odp->base, .key = odp->key, .bytes_count = 16,
          .bytes_skip = 48 },
    };

    rsf_reg_mkey_list(f, &f->mr[RSF_MR_IND], RS_CMD_REG_INDIRECT_MKEY, ie,
                      sizeof(ie), 4, 0, 5 * RSF_PAGE - 8 + 1000);
    rsf_reg_mkey_list(f, &f->mr[RSF_MR_PAT], RS_CMD_REG_PATTERN_MKEY, pe,
                      sizeof(pe), 2, 256, 256 * 24);
}

static void rsf_create_qp(RSFState *f, RSFQp *q, uint8_t type, uint32_t group)
{
    struct rs_cmd_create_qp *c = &q->c;

    memset(c, 0, sizeof(*c));
    c->qp_type = type;
    q->type = type;
    if (type == RS_QPT_XRC_TGT) {
        c->xrcd = f->xrcd;
        rsf_ok(qrs_create_qp(&f->d, c, &q->h, &q->qpn), "CREATE_QP");
        return;
    }
    if (type == RS_QPT_DCT) {
        c->pd = f->pd;
        c->recv_cq = f->cq[1];
        c->srq = f->dsrq;
        c->dc_key_lo = (uint32_t)q->dc_key;
        c->dc_key_hi = q->dc_key >> 32;
        rsf_ok(qrs_create_qp(&f->d, c, &q->h, &q->qpn), "CREATE_QP DCT");
        return;
    }
    c->pd = f->pd;
    c->send_cq = f->cq[0];
    c->sq_log_size = RSF_WQ_LOG;
    c->max_send_sge = 2;
    c->max_inline = 64;
    c->session_group = 0;
    c->sq_addr = rsf_buf(f, qrs_qp_sq_bytes(c));
    if (type != RS_QPT_XRC_INI && type != RS_QPT_DCI) {
        c->recv_cq = f->cq[1];
        c->rq_log_size = RSF_WQ_LOG;
        c->max_recv_sge = 2;
        c->rq_addr = rsf_buf(f, qrs_qp_rq_bytes(c));
    }
    rsf_ok(qrs_create_qp(&f->d, c, &q->h, &q->qpn), "CREATE_QP");
}

/* A DCI to RTS, a DCT to RTR: no address or PSNs of a peer. */
static void rsf_connect_dc(RSFState *f, RSFQp *q)
{
    bool dct = q->type == RS_QPT_DCT;
    struct rs_qp_attr a = {
        .path_mtu = RS_MTU_1024,
        .port_num = 1,
        .sq_psn = RSF_SQ_PSN,
        .access_flags = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE |
                        RS_ACCESS_REMOTE_READ | RS_ACCESS_REMOTE_ATOMIC,
        .max_rd_atomic = 4,
        .min_rnr_timer = 1,
        .timeout = 10,
        .retry_cnt = 3,
        .rnr_retry = 3,
    };

    a.cur_qp_state = RS_QPS_RESET;
    a.qp_state = RS_QPS_INIT;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, RS_QP_ATTR_STATE |
                         RS_QP_ATTR_PORT |
                         (dct ? RS_QP_ATTR_ACCESS_FLAGS : 0)),
           "MODIFY_QP INIT");
    a.cur_qp_state = RS_QPS_INIT;
    a.qp_state = RS_QPS_RTR;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, RS_QP_ATTR_STATE |
                         RS_QP_ATTR_PATH_MTU |
                         (dct ? RS_QP_ATTR_MIN_RNR_TIMER : 0)),
           "MODIFY_QP RTR");
    if (dct) {
        return;
    }
    a.cur_qp_state = RS_QPS_RTR;
    a.qp_state = RS_QPS_RTS;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, RS_QP_ATTR_STATE |
                         RS_QP_ATTR_SQ_PSN | RS_QP_ATTR_TIMEOUT |
                         RS_QP_ATTR_RETRY_CNT | RS_QP_ATTR_RNR_RETRY |
                         RS_QP_ATTR_MAX_QP_RD_ATOMIC), "MODIFY_QP RTS");
}

/* RESET -> INIT -> RTR -> RTS with the masks each QP type requires. */
static void rsf_connect(RSFState *f, RSFQp *q, uint32_t dest_qpn,
                 const uint8_t *dgid, uint32_t gid_index,
                 uint32_t group)
{
    bool rc = q->type == RS_QPT_RC || q->type == RS_QPT_XRC_INI ||
              q->type == RS_QPT_XRC_TGT;
    bool ud = q->type == RS_QPT_UD;
    struct rs_qp_attr a = {
        .path_mtu = RS_MTU_1024,
        .port_num = 1,
        .qkey = RSF_QKEY,
        .rq_psn = RSF_RQ_PSN,
        .sq_psn = RSF_SQ_PSN,
        .dest_qp_num = dest_qpn,
        .access_flags = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE |
                        RS_ACCESS_REMOTE_READ | RS_ACCESS_REMOTE_ATOMIC,
        .max_rd_atomic = 4,
        .max_dest_rd_atomic = 4,
        .min_rnr_timer = 1,
        .timeout = 10,
        .retry_cnt = 3,
        .rnr_retry = 3,
        .session_group = group,
    };
    uint32_t init = RS_QP_ATTR_STATE | RS_QP_ATTR_PKEY_INDEX |
                    RS_QP_ATTR_PORT |
                    (ud ? RS_QP_ATTR_QKEY : RS_QP_ATTR_ACCESS_FLAGS);
    uint32_t rtr = ud ? RS_QP_ATTR_STATE :
                   RS_QP_ATTR_STATE | RS_QP_ATTR_AV | RS_QP_ATTR_PATH_MTU |
                   RS_QP_ATTR_DEST_QPN | RS_QP_ATTR_RQ_PSN |
                   (rc ? RS_QP_ATTR_MAX_DEST_RD_ATOMIC |
                         RS_QP_ATTR_MIN_RNR_TIMER : 0) |
                   (group ? RS_QP_ATTR_SESSION_GROUP : 0);
    uint32_t rts = RS_QP_ATTR_STATE | RS_QP_ATTR_SQ_PSN |
                   (rc ? RS_QP_ATTR_TIMEOUT | RS_QP_ATTR_RETRY_CNT |
                         RS_QP_ATTR_RNR_RETRY | RS_QP_ATTR_MAX_QP_RD_ATOMIC :
                         0);

    memcpy(a.ah.dgid, dgid, 16);
    memcpy(a.ah.dmac, q->loop ? rsf_mac : rsf_remote_mac, 6);
    a.ah.hop_limit = 64;
    a.ah.gid_index = gid_index;

    a.cur_qp_state = RS_QPS_RESET;
    a.qp_state = RS_QPS_INIT;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, init), "MODIFY_QP INIT");
    a.cur_qp_state = RS_QPS_INIT;
    a.qp_state = RS_QPS_RTR;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, rtr), "MODIFY_QP RTR");
    a.cur_qp_state = RS_QPS_RTR;
    a.qp_state = RS_QPS_RTS;
    rsf_ok(qrs_modify_qp(&f->d, q->h, &a, rts), "MODIFY_QP RTS");
}

static uint64_t rsf_slot(uint64_t ring, uint64_t bytes, uint8_t log,
                  uint32_t index)
{
    return ring + (uint64_t)(index & ((1u << log) - 1)) * (bytes >> log);
}

static void rsf_post_send(RSFState *f, RSFQp *q, struct rs_send_wqe_ctrl *w,
                   const struct rs_sge *sge)
{
    QTestState *s = qrs_qts(&f->d);
    uint64_t slot = rsf_slot(q->c.sq_addr, qrs_qp_sq_bytes(&q->c),
                             q->c.sq_log_size, q->sq_pi);

    qtest_memwrite(s, slot, w, sizeof(*w));
    if (sge) {
        qtest_memwrite(s, slot + sizeof(*w), sge, sizeof(*sge));
    }
    q->sq_pi++;
    qrs_db_writel(&f->d, 0, RS_DB_SQ, q->qpn | (q->sq_pi & 0xffff) << 16);
}

/* A receive on the QP's queue; an XRC QP's goes to the XRC SRQ. */
void rsf_post_recv(RSFState *f, RSFQp *q, const struct rs_sge *sge)
{
    QTestState *s = qrs_qts(&f->d);
    bool xrc = q->type == RS_QPT_XRC_INI || q->type == RS_QPT_XRC_TGT;
    struct rs_recv_wqe_ctrl w = { .wr_id = 0x1000 + q->rq_pi, .num_sge = 1 };
    uint64_t slot;

    if (q->type == RS_QPT_DCI || q->type == RS_QPT_DCT) {
        /* A DCT's receives are its SRQ's; a DCI has none. */
        if (q->type == RS_QPT_DCT) {
            slot = rsf_slot(f->dsrq_c.ring_addr,
                            (uint64_t)qrs_recv_stride(1) <<
                            f->dsrq_c.log_size,
                            f->dsrq_c.log_size, f->dsrq_pi);
            qtest_memwrite(s, slot, &w, sizeof(w));
            qtest_memwrite(s, slot + sizeof(w), sge, sizeof(*sge));
            f->dsrq_pi++;
            qrs_db_writel(&f->d, 0, RS_DB_SRQ,
                          (f->dsrq & RS_HANDLE_INDEX_MASK) |
                          (f->dsrq_pi & 0xffff) << 16);
        }
        q->rq_pi++;
        qrs_db_writel(&f->d, 0, RS_DB_RQ, q->qpn | (q->rq_pi & 0xffff) << 16);
        return;
    }
    slot = xrc ?
        rsf_slot(f->srq_c.ring_addr,
                 (uint64_t)qrs_recv_stride(1) << f->srq_c.log_size,
                 f->srq_c.log_size, f->srq_pi) :
        rsf_slot(q->c.rq_addr, qrs_qp_rq_bytes(&q->c), q->c.rq_log_size,
                 q->rq_pi);

    qtest_memwrite(s, slot, &w, sizeof(w));
    qtest_memwrite(s, slot + sizeof(w), sge, sizeof(*sge));
    if (xrc) {
        f->srq_pi++;
        qrs_db_writel(&f->d, 0, RS_DB_SRQ,
                      (f->srq & RS_HANDLE_INDEX_MASK) |
                      (f->srq_pi & 0xffff) << 16);
        /* A doorbell for the receive queue XRC QPs do not have. */
    }
    q->rq_pi++;
    qrs_db_writel(&f->d, 0, RS_DB_RQ, q->qpn | (q->rq_pi & 0xffff) << 16);
}

/*
 * A BIND_MW WQE: window RSF_MW_1 or RSF_MW_2 (bit 0 of @sel) to @len bytes
 * of @mr (an MR or, refused, a window) at @off, with the remote rights in
 * bits 1-3 of @sel and the next tag.  The window's entry takes the new
 * binding whether or not the device refuses it: a wrong guess only makes
 * later requests through it fail, which the fuzzer wants too.
 */
void rsf_post_bind(RSFState *f, RSFQp *q, uint32_t sel,
                   const RSFMr *mr, uint32_t off, uint32_t len,
                   uint8_t flags)
{
    RSFMr *mw = &f->mr[sel & 1 ? RSF_MW_2 : RSF_MW_1];
    uint32_t key = (mw->key & ~RS_MKEY_TAG_MASK) |
                   ((mw->key + 1) & RS_MKEY_TAG_MASK);
    struct rs_send_wqe_bind_mw b = {
        .wr_id = 0x2000 + q->sq_pi,
        .opcode = RS_WR_BIND_MW,
        .flags = flags | RS_WQE_F_SIGNALED,
        .mw_rkey = mw->key,
        .addr = mr->base + off,
        .length = len,
        .mr_lkey = mr->key,
        .new_rkey = key,
        .access = sel & (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ |
                         RS_ACCESS_REMOTE_ATOMIC),
    };
    struct rs_send_wqe_ctrl w;

    memcpy(&w, &b, sizeof(w));
    rsf_post_send(f, q, &w, NULL);
    mw->key = key;
    mw->base = b.addr;
    mw->len = MAX(len, 1);
}

/* A send WQE of @op from MR_ALL; remote address in @rmr at @roff. */
void rsf_post_op(RSFState *f, RSFQp *q, uint8_t op, uint32_t len,
                 const RSFMr *rmr, uint32_t roff, uint8_t flags)
{
    const RSFMr *l = &f->mr[q->v6 ? RSF_MR_ALL6 : RSF_MR_ALL];
    struct rs_send_wqe_ctrl w = {
        .wr_id = 0x2000 + q->sq_pi,
        .opcode = op,
        .flags = flags | RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .remote_addr = rmr->base + roff,
        .rkey = rmr->key,
        .compare_add = 1,
        .swap = 2,
        .ah = f->ah,
        .remote_qpn = RSF_REMOTE_QPN,
        .remote_qkey = RSF_QKEY,
        /* SEND_INV, LOCAL_INV: the remote key, an MR's or a window's. */
        .imm_or_inv = rmr->key,
        .xrc_srqn = f->srq & RS_HANDLE_INDEX_MASK,
    };
    struct rs_sge sge = {
        .addr = l->base,
        .length = MIN(len, l->len),
        .lkey = l->key,
    };

    if (op == RS_WR_ATOMIC_CMP_SWP || op == RS_WR_ATOMIC_FETCH_ADD) {
        sge.length = 8;
        w.remote_addr &= ~7ull;
    }
    if (!q->c.sq_log_size) {
        /* An XRC target has no send queue: the doorbell alone. */
        q->sq_pi++;
        qrs_db_writel(&f->d, 0, RS_DB_SQ,
                      q->qpn | (q->sq_pi & 0xffff) << 16);
        return;
    }
    rsf_post_send(f, q, &w, &sge);
}

/*
 * A LAN receive ring with RSF_LAN_POSTED buffers (all on one page) and
 * every frame accepted, so raw and non-RoCE frames take the LAN path.
 */
static void rsf_lan_rx(RSFState *f)
{
    uint64_t ring = rsf_buf(f, sizeof(struct rs_lan_desc) << RSF_LAN_LOG);
    uint64_t buf = rsf_buf(f, RSF_LAN_BUF);
    uint32_t h, i;

    rsf_ok(qrs_create_lan_queue(&f->d, RS_LAN_RXQ, ring, RSF_LAN_LOG, 0, &h),
           "CREATE_LAN_QUEUE");
    rsf_ok(qrs_set_lan_rx_mode(&f->d, RS_LAN_RX_PROMISC |
                               RS_LAN_RX_ALLMULTI | RS_LAN_RX_BROADCAST),
           "SET_LAN_RX_MODE");
    for (i = 0; i < RSF_LAN_POSTED; i++) {
        struct rs_lan_desc desc = {
            .addr = cpu_to_le64(buf),
            .len = cpu_to_le16(RSF_LAN_BUF),
            .status = qrs_ring_phase(i, RSF_LAN_LOG) ^ RS_LAN_S_PHASE,
        };

        qtest_memwrite(qrs_qts(&f->d), ring + i * sizeof(desc), &desc,
                       sizeof(desc));
    }
    qrs_db_writel(&f->d, 0, RS_DB_LAN_RX, RSF_LAN_POSTED);
}

void rsf_bring_up(RSFState *f, QTestState *s)
{
    struct rs_cmd_create_session sc = { .src_port = 49152, .dst_port = 4791,
                                        .gid_index = 0 };
    struct rs_cmd_create_session_group gc = { .nsessions = 1,
                                              .policy = RS_GROUP_ROUND_ROBIN };
    struct rs_cmd_create_ah ac = { .hop_limit = 64, .gid_index = 0 };
    uint8_t gid[16], rgid[16], lgid[16];
    uint32_t sess, group, i, j;

    memset(f, 0, sizeof(*f));
    f->bus = qpci_new_pc(s, NULL);
    pc_alloc_init(&f->alloc, s, 0);
    qrs_attach_new(&f->d, f->bus, RSF_DEVFN, &f->alloc);
    f->d.idle = rsf_idle;
    qrs_admin_init(&f->d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG);

    rsf_gid_v4(gid, rsf_ip_self);
    rsf_add_gid(f, 0, RS_GID_ROCE_V2_IPV4, gid);
    rsf_add_gid(f, 1, RS_GID_ROCE_V2_IPV6, rsf_ip6_self);
    /* The same IPv4 address on VLAN RSF_VLAN too (ABI 1.9). */
    rsf_add_gid_vlan(f, 3, RS_GID_ROCE_V2_IPV4, gid,
                     RS_GID_VLAN_VALID | RSF_VLAN);
    rsf_ok(qrs_create_pd(&f->d, &f->pd), "CREATE_PD");
    rsf_ok(qrs_create_pd(&f->d, &f->pd2), "CREATE_PD");
    for (i = 0; i < 2; i++) {
        uint64_t ring = rsf_buf(f, sizeof(struct rs_cqe) << RSF_CQ_LOG);

        rsf_ok(qrs_create_cq(&f->d, ring, RSF_CQ_LOG, 0, 0, &f->cq[i]),
               "CREATE_CQ");
    }
    rsf_reg_mr(f, &f->mr[RSF_MR_ALL], 4,
               RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT, 0);
    rsf_reg_mr(f, &f->mr[RSF_MR_READ_ONLY], 1,
               RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_READ, 0);
    rsf_reg_mr(f, &f->mr[RSF_MR_ALL6], 2,
               RS_ACCESS_ALL & ~RS_ACCESS_FLUSH_PERSISTENT, 1);
    rsf_reg_big_mr(f, &f->mr[RSF_MR_BIG]);
    rsf_reg_odp_mr(f, &f->mr[RSF_MR_ODP], false);
    rsf_reg_odp_mr(f, &f->mr[RSF_MR_ODPI], true);
    rsf_reg_mkeys(f);
    rsf_reg_peer_mr(f, &f->mr[RSF_MR_PEER]);

    /* Loopback: a session to our own address, as the qtests do. */
    memcpy(sc.dst_ip, gid, 16);
    memcpy(sc.dmac, rsf_mac, 6);
    rsf_ok(qrs_create_session(&f->d, &sc, &sess), "CREATE_SESSION");
    gc.session[0] = sess;
    rsf_ok(qrs_create_session_group(&f->d, &gc, &group),
           "CREATE_SESSION_GROUP");
    rsf_gid_v4(rgid, rsf_ip_remote);
    memcpy(ac.dgid, rgid, 16);
    memcpy(ac.dmac, rsf_remote_mac, 6);
    ac.pd = f->pd;
    rsf_ok(qrs_create_ah(&f->d, &ac, &f->ah), "CREATE_AH");

    f->qp[RSF_QP_LOOP_A].loop = f->qp[RSF_QP_LOOP_B].loop = true;
    f->qp[RSF_QP_RC6].v6 = true;
    rsf_create_qp(f, &f->qp[RSF_QP_LOOP_A], RS_QPT_RC, group);
    rsf_create_qp(f, &f->qp[RSF_QP_LOOP_B], RS_QPT_RC, group);
    rsf_create_qp(f, &f->qp[RSF_QP_RC], RS_QPT_RC, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_UC], RS_QPT_UC, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_UD], RS_QPT_UD, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_RC6], RS_QPT_RC, 0);
    {
        struct rs_cmd_create_pd xc = { 0 };

        rsf_ok(qrs_admin_cmd(&f->d, RS_CMD_CREATE_XRCD, &xc, sizeof(xc),
                             &f->xrcd, NULL), "CREATE_XRCD");
        f->srq_c = (struct rs_cmd_create_srq) {
            .pd = f->pd, .log_size = RSF_WQ_LOG, .max_sge = 1,
            .xrcd = f->xrcd, .cq = f->cq[1],
        };
        f->srq_c.ring_addr = rsf_buf(f, (uint64_t)qrs_recv_stride(1) <<
                                        RSF_WQ_LOG);
        rsf_ok(qrs_create_srq(&f->d, &f->srq_c, &f->srq), "CREATE_SRQ");
    }
    rsf_create_qp(f, &f->qp[RSF_QP_XINI], RS_QPT_XRC_INI, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_XTGT], RS_QPT_XRC_TGT, 0);
    f->dsrq_c = (struct rs_cmd_create_srq) {
        .pd = f->pd, .log_size = RSF_WQ_LOG, .max_sge = 1,
    };
    f->dsrq_c.ring_addr = rsf_buf(f, (uint64_t)qrs_recv_stride(1) <<
                                     RSF_WQ_LOG);
    rsf_ok(qrs_create_srq(&f->d, &f->dsrq_c, &f->dsrq), "CREATE_SRQ");
    rsf_create_qp(f, &f->qp[RSF_QP_DCI], RS_QPT_DCI, 0);
    rsf_create_qp(f, &f->qp[RSF_QP_DCT], RS_QPT_DCT, 0);
    f->qp[RSF_QP_DCT2].dc_key = RSF_DC_KEY2;
    rsf_create_qp(f, &f->qp[RSF_QP_DCT2], RS_QPT_DCT, 0);
    memcpy(lgid, gid, 16);
    rsf_connect(f, &f->qp[RSF_QP_LOOP_A], f->qp[RSF_QP_LOOP_B].qpn, lgid, 0,
                group);
    rsf_connect(f, &f->qp[RSF_QP_LOOP_B], f->qp[RSF_QP_LOOP_A].qpn, lgid, 0,
                group);
    rsf_connect(f, &f->qp[RSF_QP_RC], RSF_REMOTE_QPN, rgid, 0, 0);
    rsf_connect(f, &f->qp[RSF_QP_UC], RSF_REMOTE_QPN, rgid, 0, 0);
    rsf_connect(f, &f->qp[RSF_QP_UD], 0, rgid, 0, 0);
    rsf_connect(f, &f->qp[RSF_QP_RC6], RSF_REMOTE_QPN, rsf_ip6_remote, 1, 0);
    rsf_connect(f, &f->qp[RSF_QP_XINI], RSF_REMOTE_QPN, rgid, 0, 0);
    rsf_connect(f, &f->qp[RSF_QP_XTGT], RSF_REMOTE_QPN, rgid, 0, 0);
    rsf_connect_dc(f, &f->qp[RSF_QP_DCI]);
    rsf_connect_dc(f, &f->qp[RSF_QP_DCT]);
    rsf_connect_dc(f, &f->qp[RSF_QP_DCT2]);

    /*
     * Memory windows, bound before the requests below leave the send
     * queues waiting (a bind runs once every earlier WQE completed).
     */
    for (i = RSF_MW_1; i <= RSF_MW_2; i++) {
        struct rs_cmd_alloc_mw ac = {
            .pd = f->pd,
            .type = i == RSF_MW_1 ? RS_MW_TYPE_1 : RS_MW_TYPE_2,
        };

        rsf_ok(qrs_admin_cmd(&f->d, RS_CMD_ALLOC_MW, &ac, sizeof(ac),
                             &f->mr[i].key, NULL), "ALLOC_MW");
    }
    if (!rsf_wire.keyless) {
        rsf_post_bind(f, &f->qp[RSF_QP_LOOP_A], 0x0e, &f->mr[RSF_MR_ALL],
                      RSF_PAGE, 2 * RSF_PAGE, 0);
        rsf_post_bind(f, &f->qp[RSF_QP_RC], 0x0f, &f->mr[RSF_MR_ALL], 0,
                      RSF_PAGE, 0);
    } else {
        /* Unbound: their keys name the ranges they would have had. */
        f->mr[RSF_MW_1].base = f->mr[RSF_MR_ALL].base + RSF_PAGE;
        f->mr[RSF_MW_1].len = 2 * RSF_PAGE;
        f->mr[RSF_MW_2].base = f->mr[RSF_MR_ALL].base;
        f->mr[RSF_MW_2].len = RSF_PAGE;
    }

    /* Receives everywhere, so SENDs from the wire find a buffer. */
    for (i = 0; i < RSF_NQP; i++) {
        const RSFMr *m = &f->mr[f->qp[i].v6 ? RSF_MR_ALL6 : RSF_MR_ALL];

        for (j = 0; j < 4; j++) {
            struct rs_sge sge = {
                .addr = m->base + (j % (m->len / RSF_PAGE)) * RSF_PAGE,
                .length = RSF_PAGE,
                .lkey = m->key,
            };

            rsf_post_recv(f, &f->qp[i], &sge);
        }
    }

    /*
     * Requests outstanding towards the remote peers, so that ACKs, READ
     * responses and atomic ACKs from the input find something to
     * complete: PSNs RSF_SQ_PSN (WRITE), +1..+2 (READ of 2 KiB), +3
     * (atomic), +4 (SEND).  Keyless inputs post none.
     */
    if (rsf_wire.keyless) {
        rsf_lan_rx(f);
        rsf_settle(s);
        return;
    }
    for (i = RSF_QP_RC; i <= RSF_QP_RC6; i += RSF_QP_RC6 - RSF_QP_RC) {
        RSFQp *q = &f->qp[i];
        const RSFMr *m = &f->mr[q->v6 ? RSF_MR_ALL6 : RSF_MR_ALL];

        rsf_post_op(f, q, RS_WR_RDMA_WRITE, 64, m, 0, 0);
        rsf_post_op(f, q, RS_WR_RDMA_READ, 2048, m, RSF_PAGE, 0);
        rsf_post_op(f, q, RS_WR_ATOMIC_FETCH_ADD, 8, m, 64, 0);
        rsf_post_op(f, q, RS_WR_SEND, 100, m, 0, 0);
    }
    /* ... and from the XRC initiator: XRC responses complete them. */
    rsf_post_op(f, &f->qp[RSF_QP_XINI], RS_WR_RDMA_WRITE, 64,
                &f->mr[RSF_MR_ALL], 0, 0);
    rsf_post_op(f, &f->qp[RSF_QP_XINI], RS_WR_RDMA_READ, 2048,
                &f->mr[RSF_MR_ALL], RSF_PAGE, 0);
    rsf_post_op(f, &f->qp[RSF_QP_XINI], RS_WR_ATOMIC_FETCH_ADD, 8,
                &f->mr[RSF_MR_ALL], 64, 0);
    rsf_post_op(f, &f->qp[RSF_QP_XINI], RS_WR_SEND, 100,
                &f->mr[RSF_MR_ALL], 0, 0);
    /*
     * The DCI's CONNECT to the remote's DCT RSF_REMOTE_QPN (key: the
     * WQE's qkey and XRC SRQ fields): a REPLY from the input (opcode
     * 0xc3, PSN RSF_SQ_PSN) connects it, then ACKs complete the WQEs.
     */
    rsf_post_op(f, &f->qp[RSF_QP_DCI], RS_WR_RDMA_WRITE, 64,
                &f->mr[RSF_MR_ALL], 0, 0);
    rsf_post_op(f, &f->qp[RSF_QP_DCI], RS_WR_RDMA_READ, 2048,
                &f->mr[RSF_MR_ALL], RSF_PAGE, 0);
    rsf_lan_rx(f);
    rsf_settle(s);
}

/*
 * Frames of the input the adapter left in its queue (its receive returned
 * 0: no room) are dropped with the reset: every input starts from the
 * same state.
 */
void rsf_tear_down(RSFState *f, QTestState *s)
{
    rsf_settle(s);
    qrs_detach(&f->d);
    qpci_free_pc(f->bus);
    alloc_destroy(&f->alloc);
    fuzz_reset(s);
    qemu_purge_queued_packets(qemu_find_netdev("n0"));
    rsf_settle(s);
}
